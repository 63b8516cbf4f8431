// SPDX-License-Identifier: Apache-2.0
// src/core/trace/chrome_json.cpp - writes recorded operations as Chrome trace-event JSON (the
// format ui.perfetto.dev and chrome://tracing open): the host's enqueue calls on one track per
// host thread, the devices' execution on one track per stream, device memory in use as a
// counter, and an arrow (flow event) from each enqueue to its execution. The layout is the
// contract docs/observability.md describes and `devctx trace summarize` reads back. Numbers are
// written with std::to_chars (core/text.hpp), never printf: the file is JSON whatever locale the
// program runs under.
#include "core/trace/chrome_json.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include <devctx/trace.hpp>
#include <devctx/version.hpp>

#include "core/text.hpp"

namespace devctx::trace {

const char* to_string(Kind kind) noexcept {
  switch (kind) {
    case Kind::allocate: return "allocate";
    case Kind::free: return "free";
    case Kind::copy: return "copy";
    case Kind::fill: return "fill";
    case Kind::kernel: return "kernel";
    case Kind::wait: return "wait";
    case Kind::record_event: return "record_event";
    case Kind::synchronize: return "synchronize";
  }
  return "unknown";
}

const char* to_string(Direction direction) noexcept {
  switch (direction) {
    case Direction::none: return "none";
    case Direction::host_to_device: return "host_to_device";
    case Direction::device_to_host: return "device_to_host";
    case Direction::device_to_device: return "device_to_device";
    case Direction::host_to_host: return "host_to_host";
  }
  return "unknown";
}

}  // namespace devctx::trace

namespace devctx::detail::trace {
namespace {

using devctx::trace::Direction;
using devctx::trace::Kind;
using devctx::trace::Operation;

void string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  // Runs of characters that need no escape (all of them, in the names devctx writes) in one go.
  std::size_t from = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (c != '"' && c != '\\' && u >= 0x20) continue;
    out.append(text.data() + from, i - from);
    from = i + 1;
    if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += '\\';
      out += c;
    }
  }
  out.append(text.data() + from, text.size() - from);
  out += '"';
}
/// A time in microseconds to the nanosecond ("%.3f" in the "C" locale), through integers: a
/// quarter of the cost of formatting the double with three decimals (std::to_chars), which
/// itself costs a fifth of snprintf's. Values beyond 10^12 us (11 days) take the general path.
void number(std::string& out, double value) {
  if (!(std::fabs(value) < 1e12)) {
    detail::append_fixed(out, value, 3);
    return;
  }
  const long long ns = std::llround(value * 1000.0);
  const unsigned long long magnitude = ns < 0 ? 0ull - (unsigned long long)ns : (unsigned long long)ns;
  if (ns < 0) out += '-';
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, magnitude / 1000).ptr);
  const auto fraction = unsigned(magnitude % 1000);
  const char three[3] = {char('0' + fraction / 100), char('0' + fraction / 10 % 10), char('0' + fraction % 10)};
  out += '.';
  out.append(three, 3);
}
void number(std::string& out, std::uint64_t value) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}
/// A key, a literal that needs no escaping: "name":
void key(std::string& out, std::string_view name) {
  out += '"';
  out += name;
  out += "\":";
}

void dim(std::string& out, const char* name, const Dim3& d) {
  out += ',';
  key(out, name);
  out += '[';
  number(out, std::uint64_t(d.x));
  out += ',';
  number(out, std::uint64_t(d.y));
  out += ',';
  number(out, std::uint64_t(d.z));
  out += ']';
}

/// The operation's fields, as every event of it carries them.
void args(std::string& out, const Operation& op) {
  key(out, "args");
  out += '{';
  key(out, "op");
  number(out, op.id);
  out += ',';
  key(out, "kind");
  string(out, devctx::trace::to_string(op.kind));
  out += ',';
  key(out, "device");
  string(out, op.device);
  out += ',';
  key(out, "stream");
  number(out, std::uint64_t(op.stream));
  if (op.kind == Kind::copy || op.kind == Kind::fill || op.kind == Kind::allocate || op.kind == Kind::free) {
    out += ',';
    key(out, "bytes");
    number(out, op.bytes);
  }
  if (op.kind == Kind::copy) {
    out += ',';
    key(out, "direction");
    string(out, devctx::trace::to_string(op.direction));
    out += ',';
    key(out, "host_memory");
    string(out, op.direction == Direction::device_to_device ? "none" : op.pageable ? "pageable" : "pinned");
    out += ',';
    key(out, "path");
    string(out, op.staged ? "staged" : "direct");
  }
  if (op.kind == Kind::allocate || op.kind == Kind::free) {
    out += ',';
    key(out, "memory");
    string(out, op.host_memory ? "host" : "device");
  }
  if (op.kind == Kind::kernel) {
    dim(out, "grid_dim", op.grid_dim);
    dim(out, "block_dim", op.block_dim);
    out += ',';
    key(out, "shared_bytes");
    number(out, op.shared_bytes);
    if (!op.execution.empty()) {
      out += ',';
      key(out, "execution");
      string(out, op.execution);
    }
  }
  out += '}';
}

void common(std::string& out, const char* ph, std::string_view name, const char* cat, std::uint64_t pid,
            std::uint64_t tid, double ts) {
  key(out, "ph");
  string(out, ph);
  out += ',';
  key(out, "name");
  string(out, name);
  out += ',';
  key(out, "cat");
  string(out, cat);
  out += ',';
  key(out, "pid");
  number(out, pid);
  out += ',';
  key(out, "tid");
  number(out, tid);
  out += ',';
  key(out, "ts");
  number(out, ts);
}

}  // namespace

// One event object per line, separated by commas.
void ChromeJson::begin_event(std::string& out) {
  out += first_ ? "\n{" : ",\n{";
  first_ = false;
}

void ChromeJson::begin(std::string& out) {
  out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  begin_event(out);
  common(out, "M", "process_name", "__metadata", 0, 0, 0.0);
  out += ",\"args\":{\"name\":\"host\"}}";
}

void ChromeJson::add(const Operation& op, std::string& out) {
  auto metadata = [&](const char* what, std::uint64_t pid, std::uint64_t tid, std::string_view name) {
    begin_event(out);
    common(out, "M", what, "__metadata", pid, tid, 0.0);
    out += ',';
    key(out, "args");
    out += '{';
    key(out, "name");
    string(out, name);
    out += "}}";
  };
  // Devices as process ids from 1 in order of first appearance; the host is process 0.
  const auto [device, new_device] = devices_.try_emplace(op.device, devices_.size() + 1);
  const std::uint64_t pid = device->second;
  if (new_device) metadata("process_name", pid, 0, op.device);
  if (threads_.insert(op.host_thread).second)
    metadata("thread_name", 0, std::uint64_t(op.host_thread), detail::concat("host thread ", op.host_thread));
  if (streams_.insert({pid, op.stream}).second)
    metadata("thread_name", pid, std::uint64_t(op.stream), detail::concat("stream ", op.stream));
  ++operations_;

  const auto tid = std::uint64_t(op.host_thread);
  const char* cat = devctx::trace::to_string(op.kind);
  begin_event(out);
  if (op.kind == Kind::record_event) {
    common(out, "i", op.name, cat, 0, tid, op.host_begin_us);
    out += ",\"s\":\"t\",";
  } else {
    common(out, "X", op.name, cat, 0, tid, op.host_begin_us);
    out += ',';
    key(out, "dur");
    number(out, op.host_end_us - op.host_begin_us);
    out += ',';
  }
  args(out, op);
  out += '}';
  if ((op.kind == Kind::allocate || op.kind == Kind::free) && !op.host_memory) {
    auto& bytes = in_use_[pid];
    bytes = op.kind == Kind::allocate ? bytes + op.bytes : (bytes >= op.bytes ? bytes - op.bytes : 0);
    begin_event(out);
    common(out, "C", "device memory in use", "memory", pid, 0, op.host_end_us);
    out += ",\"args\":{\"bytes\":";
    number(out, bytes);
    out += "}}";
  }
  if (!op.device_begin_us || !op.device_end_us) return;
  const auto stream = std::uint64_t(op.stream);
  begin_event(out);
  common(out, "X", op.name, cat, pid, stream, *op.device_begin_us);
  out += ',';
  key(out, "dur");
  number(out, *op.device_end_us - *op.device_begin_us);
  out += ',';
  args(out, op);
  out += '}';
  // The arrow from the enqueue call to the execution.
  begin_event(out);
  common(out, "s", "enqueue", "flow", 0, tid, op.host_begin_us);
  out += ",\"id\":";
  number(out, op.id);
  out += '}';
  begin_event(out);
  common(out, "f", "enqueue", "flow", pid, stream, *op.device_begin_us);
  out += ",\"bp\":\"e\",\"id\":";
  number(out, op.id);
  out += '}';
}

void ChromeJson::end(std::string& out, std::uint64_t without_device_time) {
  out += "\n],\"otherData\":{\"producer\":\"devctx " DEVCTX_VERSION_STRING "\",\"operations\":";
  number(out, operations_);
  out += ",\"operations_without_device_time\":";
  number(out, without_device_time);
  out += "}}\n";
}

}  // namespace devctx::detail::trace

namespace devctx::trace {

std::string to_json(std::span<const Operation> ops) {
  detail::trace::ChromeJson json;
  std::string out;
  json.begin(out);
  for (const Operation& op : ops) json.add(op, out);
  json.end(out);
  return out;
}

}  // namespace devctx::trace
