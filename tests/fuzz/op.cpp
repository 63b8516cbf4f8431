// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/op.cpp - the op language's text form: writing ops and reading them back.
#include "fuzz/op.hpp"

#include <array>
#include <charconv>
#include <cstring>

namespace devctx_fuzz {
namespace {

constexpr std::array kOpNames = {"create",         "drop",       "move",         "host_fill",  "copy",
                                 "memset",         "kernel",     "record_event", "wait_event", "sync_context",
                                 "sync_stream",    "sync_event", "query_event",  "elapsed",    "new_stream",
                                 "moved_from_use", "tensor"};
constexpr std::array kBufNames = {"device", "host", "vec"};
constexpr std::array kElemNames = {"u32", "u8"};
constexpr std::array kKernelNames = {"scale_add", "block_reduce", "block_reverse", "warp_sum", "fail"};
constexpr std::array kLayoutNames = {"row1", "row2", "row3", "col2", "col3", "row_x4", "col_3x", "strided2"};
static_assert(kLayoutNames.size() == kLayoutIds);

std::string view_text(const View& v) {
  std::string s = std::to_string(v.slot);
  if (!v.whole) s += "[" + std::to_string(v.offset) + "+" + std::to_string(v.count) + "]";
  return s;
}

std::string shape_text(const Shape& s) {
  return std::to_string(s.x) + "," + std::to_string(s.y) + "," + std::to_string(s.z);
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

template <std::size_t N, class E>
bool parse_name(std::string_view text, const std::array<const char*, N>& names, E& out) {
  for (std::size_t i = 0; i < N; ++i)
    if (text == names[i]) {
      out = E(i);
      return true;
    }
  return false;
}

bool parse_view(std::string_view text, View& v) {
  const auto bracket = text.find('[');
  std::uint32_t slot = 0;
  if (bracket == std::string_view::npos) {
    v.whole = true;
    return parse_number(text, slot) && slot < kSlots && (v.slot = std::uint8_t(slot), true);
  }
  const auto plus = text.find('+', bracket);
  if (plus == std::string_view::npos || text.back() != ']') return false;
  v.whole = false;
  if (!parse_number(text.substr(0, bracket), slot) || slot >= kSlots) return false;
  v.slot = std::uint8_t(slot);
  return parse_number(text.substr(bracket + 1, plus - bracket - 1), v.offset) &&
         parse_number(text.substr(plus + 1, text.size() - plus - 2), v.count);
}

/// "a,b[,c]": exactly N comma-separated numbers.
template <std::size_t N>
bool parse_list(std::string_view text, std::uint64_t (&out)[N]) {
  for (std::size_t i = 0; i < N; ++i) {
    const auto comma = text.find(',');
    if ((comma == std::string_view::npos) != (i + 1 == N)) return false;
    if (!parse_number(text.substr(0, comma), out[i])) return false;
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
  }
  return true;
}

template <std::size_t N>
std::string list_text(const std::uint64_t (&v)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) s += (i == 0 ? "" : ",") + std::to_string(v[i]);
  return s;
}

bool parse_shape(std::string_view text, Shape& s) {
  const auto c1 = text.find(','), c2 = text.rfind(',');
  if (c1 == std::string_view::npos || c1 == c2) return false;
  return parse_number(text.substr(0, c1), s.x) && parse_number(text.substr(c1 + 1, c2 - c1 - 1), s.y) &&
         parse_number(text.substr(c2 + 1), s.z);
}

}  // namespace

const char* to_string(OpKind k) { return kOpNames[std::size_t(k)]; }
const char* to_string(BufKind k) { return kBufNames[std::size_t(k)]; }
const char* to_string(Elem e) { return kElemNames[std::size_t(e)]; }
const char* to_string(KernelId k) { return kKernelNames[std::size_t(k)]; }
const char* to_string(LayoutId l) { return kLayoutNames[std::size_t(l)]; }
std::size_t layout_rank(LayoutId l) {
  switch (l) {
    case LayoutId::row1: return 1;
    case LayoutId::row3:
    case LayoutId::col3: return 3;
    default: return 2;
  }
}
std::size_t elem_bytes(Elem e) { return e == Elem::u32 ? 4 : 1; }

std::string to_text(const Op& op) {
  std::string s = to_string(op.kind);
  auto add = [&](const char* key, const std::string& value) { s += std::string(" ") + key + "=" + value; };
  switch (op.kind) {
    case OpKind::create:
      add("slot", std::to_string(op.slot));
      add("kind", to_string(op.buf_kind));
      add("elem", to_string(op.elem));
      add("count", std::to_string(op.count));
      add("s", std::to_string(op.stream));
      add("value", std::to_string(op.value));
      break;
    case OpKind::drop: add("slot", std::to_string(op.slot)); break;
    case OpKind::move:
      add("slot", std::to_string(op.slot));
      add("slot2", std::to_string(op.slot2));
      break;
    case OpKind::host_fill:
      add("slot", std::to_string(op.slot));
      add("value", std::to_string(op.value));
      break;
    case OpKind::copy:
      add("s", std::to_string(op.stream));
      add("dst", view_text(op.dst));
      add("src", view_text(op.src));
      break;
    case OpKind::memset:
      add("s", std::to_string(op.stream));
      add("dst", view_text(op.dst));
      add("value", std::to_string(op.value));
      break;
    case OpKind::kernel:
      add("s", std::to_string(op.stream));
      add("k", to_string(op.kernel));
      add("grid", shape_text(op.grid));
      add("block", shape_text(op.block));
      add("shared", std::to_string(op.shared_bytes));
      add("in", view_text(op.src));
      add("out", view_text(op.dst));
      add("value", std::to_string(op.value));
      break;
    case OpKind::record_event:
    case OpKind::wait_event:
      add("s", std::to_string(op.stream));
      add("slot", std::to_string(op.slot));
      break;
    case OpKind::sync_context: break;
    case OpKind::sync_stream:
    case OpKind::new_stream: add("s", std::to_string(op.stream)); break;
    case OpKind::sync_event:
    case OpKind::query_event: add("slot", std::to_string(op.slot)); break;
    case OpKind::elapsed:
      add("slot", std::to_string(op.slot));
      add("slot2", std::to_string(op.slot2));
      break;
    case OpKind::moved_from_use: add("value", std::to_string(op.value)); break;
    case OpKind::tensor:
      add("s", std::to_string(op.stream));
      add("layout", to_string(op.layout));
      add("ext", list_text(op.ext));
      add("strides", list_text(op.strides));
      add("grid", shape_text(op.grid));
      add("block", shape_text(op.block));
      add("out", view_text(op.dst));
      add("value", std::to_string(op.value));
      break;
  }
  return s;
}

std::optional<Op> parse_op(std::string_view line, std::string& error) {
  Op op;
  auto word_end = line.find(' ');
  if (!parse_name(line.substr(0, word_end), kOpNames, op.kind)) {
    error = "unknown op '" + std::string(line.substr(0, word_end)) + "'";
    return std::nullopt;
  }
  while (word_end != std::string_view::npos) {
    line.remove_prefix(word_end + 1);
    word_end = line.find(' ');
    const std::string_view field = line.substr(0, word_end);
    if (field.empty()) continue;
    const auto eq = field.find('=');
    if (eq == std::string_view::npos) {
      error = "expected key=value, got '" + std::string(field) + "'";
      return std::nullopt;
    }
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    unsigned small = 0;
    bool ok = false;
    if (key == "slot")
      ok = parse_number(value, small) && small < 256 && (op.slot = std::uint8_t(small), true);
    else if (key == "slot2")
      ok = parse_number(value, small) && small < 256 && (op.slot2 = std::uint8_t(small), true);
    else if (key == "s")
      ok = parse_number(value, small) && small < kStreams && (op.stream = std::uint8_t(small), true);
    else if (key == "kind")
      ok = parse_name(value, kBufNames, op.buf_kind);
    else if (key == "elem")
      ok = parse_name(value, kElemNames, op.elem);
    else if (key == "count")
      ok = parse_number(value, op.count);
    else if (key == "value")
      ok = parse_number(value, op.value);
    else if (key == "k")
      ok = parse_name(value, kKernelNames, op.kernel);
    else if (key == "layout")
      ok = parse_name(value, kLayoutNames, op.layout);
    else if (key == "ext")
      ok = parse_list(value, op.ext);
    else if (key == "strides")
      ok = parse_list(value, op.strides);
    else if (key == "grid")
      ok = parse_shape(value, op.grid);
    else if (key == "block")
      ok = parse_shape(value, op.block);
    else if (key == "shared")
      ok = parse_number(value, op.shared_bytes);
    else if (key == "dst" || key == "out")
      ok = parse_view(value, op.dst);
    else if (key == "src" || key == "in")
      ok = parse_view(value, op.src);
    if (!ok) {
      error = "bad field '" + std::string(field) + "'";
      return std::nullopt;
    }
  }
  return op;
}

std::optional<std::vector<Op>> parse_ops(std::string_view text, std::string& error) {
  std::vector<Op> ops;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    auto op = parse_op(line, error);
    if (!op) {
      error = "line " + std::to_string(line_no) + ": " + error;
      return std::nullopt;
    }
    ops.push_back(*op);
  }
  return ops;
}

}  // namespace devctx_fuzz
