// SPDX-License-Identifier: Apache-2.0
// src/core/trace/chrome_json.cpp - writes recorded operations as Chrome trace-event JSON (the
// format ui.perfetto.dev and chrome://tracing open): the host's enqueue calls on one track per
// host thread, the devices' execution on one track per stream, device memory in use as a
// counter, and an arrow (flow event) from each enqueue to its execution. The layout is the
// contract docs/observability.md describes and `devctx trace summarize` reads back.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <devctx/trace.hpp>
#include <devctx/version.hpp>

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

namespace {

class Writer {
 public:
  void string(std::string_view text) {
    out_ += '"';
    for (const char c : text) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (u < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", u);
        out_ += buffer;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }
  void number(double value) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.3f", std::isfinite(value) ? value : 0.0);
    out_ += buffer;
  }
  void number(std::uint64_t value) { out_ += std::to_string(value); }
  void raw(std::string_view text) { out_ += text; }
  void key(std::string_view name) {
    string(name);
    out_ += ':';
  }
  // One event object per line, separated by commas.
  void begin_event() {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    out_ += '{';
  }
  void end_event() { out_ += '}'; }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  std::string out_;
  bool first_ = true;
};

void dim(Writer& w, const char* name, const Dim3& d) {
  w.raw(",");
  w.key(name);
  w.raw("[");
  w.number(std::uint64_t(d.x));
  w.raw(",");
  w.number(std::uint64_t(d.y));
  w.raw(",");
  w.number(std::uint64_t(d.z));
  w.raw("]");
}

/// The operation's fields, as every event of it carries them.
void args(Writer& w, const Operation& op) {
  w.key("args");
  w.raw("{");
  w.key("op");
  w.number(op.id);
  w.raw(",");
  w.key("kind");
  w.string(to_string(op.kind));
  w.raw(",");
  w.key("device");
  w.string(op.device);
  w.raw(",");
  w.key("stream");
  w.number(std::uint64_t(op.stream));
  if (op.kind == Kind::copy || op.kind == Kind::fill || op.kind == Kind::allocate || op.kind == Kind::free) {
    w.raw(",");
    w.key("bytes");
    w.number(op.bytes);
  }
  if (op.kind == Kind::copy) {
    w.raw(",");
    w.key("direction");
    w.string(to_string(op.direction));
    w.raw(",");
    w.key("host_memory");
    w.string(op.direction == Direction::device_to_device ? "none" : op.pageable ? "pageable" : "pinned");
    w.raw(",");
    w.key("path");
    w.string(op.staged ? "staged" : "direct");
  }
  if (op.kind == Kind::allocate || op.kind == Kind::free) {
    w.raw(",");
    w.key("memory");
    w.string(op.host_memory ? "host" : "device");
  }
  if (op.kind == Kind::kernel) {
    dim(w, "grid_dim", op.grid_dim);
    dim(w, "block_dim", op.block_dim);
    w.raw(",");
    w.key("shared_bytes");
    w.number(op.shared_bytes);
  }
  w.raw("}");
}

void common(Writer& w, const char* ph, std::string_view name, const char* cat, std::uint64_t pid, std::uint64_t tid,
            double ts) {
  w.key("ph");
  w.string(ph);
  w.raw(",");
  w.key("name");
  w.string(name);
  w.raw(",");
  w.key("cat");
  w.string(cat);
  w.raw(",");
  w.key("pid");
  w.number(pid);
  w.raw(",");
  w.key("tid");
  w.number(tid);
  w.raw(",");
  w.key("ts");
  w.number(ts);
}

void metadata(Writer& w, const char* what, std::uint64_t pid, std::uint64_t tid, std::string_view name) {
  w.begin_event();
  common(w, "M", what, "__metadata", pid, tid, 0.0);
  w.raw(",");
  w.key("args");
  w.raw("{");
  w.key("name");
  w.string(name);
  w.raw("}");
  w.end_event();
}

}  // namespace

std::string to_json(std::span<const Operation> ops) {
  // Devices as process ids from 1 in order of first appearance; the host is process 0.
  std::map<std::string, std::uint64_t> devices;
  std::set<std::pair<std::uint64_t, int>> streams;
  std::set<int> threads;
  for (const Operation& op : ops) {
    const auto [it, added] = devices.try_emplace(op.device, devices.size() + 1);
    streams.insert({it->second, op.stream});
    threads.insert(op.host_thread);
  }
  Writer w;
  w.raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"devctx ");
  w.raw(DEVCTX_VERSION_STRING);
  w.raw("\"},\"traceEvents\":[");
  metadata(w, "process_name", 0, 0, "host");
  for (const int t : threads) metadata(w, "thread_name", 0, std::uint64_t(t), "host thread " + std::to_string(t));
  for (const auto& [label, pid] : devices) metadata(w, "process_name", pid, 0, label);
  for (const auto& [pid, stream] : streams)
    metadata(w, "thread_name", pid, std::uint64_t(stream), "stream " + std::to_string(stream));

  std::map<std::uint64_t, std::uint64_t> in_use;  // device memory per device, for the counter
  for (const Operation& op : ops) {
    const std::uint64_t pid = devices.at(op.device);
    const auto tid = std::uint64_t(op.host_thread);
    const char* cat = to_string(op.kind);
    w.begin_event();
    if (op.kind == Kind::record_event) {
      common(w, "i", op.name, cat, 0, tid, op.host_begin_us);
      w.raw(",\"s\":\"t\",");
    } else {
      common(w, "X", op.name, cat, 0, tid, op.host_begin_us);
      w.raw(",");
      w.key("dur");
      w.number(op.host_end_us - op.host_begin_us);
      w.raw(",");
    }
    args(w, op);
    w.end_event();
    if ((op.kind == Kind::allocate || op.kind == Kind::free) && !op.host_memory) {
      auto& bytes = in_use[pid];
      bytes = op.kind == Kind::allocate ? bytes + op.bytes : (bytes >= op.bytes ? bytes - op.bytes : 0);
      w.begin_event();
      common(w, "C", "device memory in use", "memory", pid, 0, op.host_end_us);
      w.raw(",\"args\":{\"bytes\":");
      w.number(bytes);
      w.raw("}");
      w.end_event();
    }
    if (!op.device_begin_us || !op.device_end_us) continue;
    const auto stream = std::uint64_t(op.stream);
    w.begin_event();
    common(w, "X", op.name, cat, pid, stream, *op.device_begin_us);
    w.raw(",");
    w.key("dur");
    w.number(*op.device_end_us - *op.device_begin_us);
    w.raw(",");
    args(w, op);
    w.end_event();
    // The arrow from the enqueue call to the execution.
    w.begin_event();
    common(w, "s", "enqueue", "flow", 0, tid, op.host_begin_us);
    w.raw(",\"id\":");
    w.number(op.id);
    w.end_event();
    w.begin_event();
    common(w, "f", "enqueue", "flow", pid, stream, *op.device_begin_us);
    w.raw(",\"bp\":\"e\",\"id\":");
    w.number(op.id);
    w.end_event();
  }
  w.raw("\n]}\n");
  return w.take();
}

}  // namespace devctx::trace
