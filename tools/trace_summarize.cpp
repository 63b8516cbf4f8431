// SPDX-License-Identifier: Apache-2.0
// tools/trace_summarize.cpp - `devctx trace summarize FILE`: reads a trace written by
// DEVCTX_TRACE_FILE (or devctx::trace::write) back into operations and prints the library's
// report of them (devctx::trace::summarize, the one home of the report's rules); read_trace is
// also what `devctx trace timeline` draws from.
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tool.hpp"

namespace devctx_tool {
namespace {

using devctx::trace::Direction;
using devctx::trace::Kind;
using nlohmann::json;

Kind kind_of(const std::string& text) {
  if (const auto k = devctx::trace::kind_from_string(text)) return *k;
  throw std::invalid_argument("an event's args.kind is '" + text + "', which devctx does not write");
}

Direction direction_of(const std::string& text) {
  for (const Direction d :
       {Direction::host_to_device, Direction::device_to_host, Direction::device_to_device, Direction::host_to_host})
    if (text == devctx::trace::to_string(d)) return d;
  return Direction::none;
}

}  // namespace

std::vector<devctx::trace::Operation> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open the trace file '" + path + "'");
  std::map<std::uint64_t, devctx::trace::Operation> ops;
  // One event at a time: each event object of traceEvents is taken as it is parsed and dropped
  // (the parser callback returns false), so that a file of gigabytes (a minute of a busy
  // program) is read in the memory of its operations, not of its whole document.
  auto take = [&](const json& e) {
    if (!e.is_object() || !e.contains("args") || !e["args"].is_object() || !e["args"].contains("op")) return;
    const std::string ph = e.value("ph", "");
    if (ph != "X" && ph != "i") return;
    const json& a = e["args"];
    devctx::trace::Operation& op = ops[a.at("op").get<std::uint64_t>()];
    const double ts = e.at("ts").get<double>(), dur = e.value("dur", 0.0);
    if (e.at("pid").get<int>() != 0) {  // the device's execution
      op.device_begin_us = ts;
      op.device_end_us = ts + dur;
      return;
    }
    op.id = a.at("op").get<std::uint64_t>();
    op.kind = kind_of(a.at("kind").get<std::string>());
    op.name = e.at("name").get<std::string>();
    op.device = a.at("device").get<std::string>();
    op.stream = a.at("stream").get<int>();
    op.host_thread = e.at("tid").get<int>();
    op.bytes = a.value("bytes", std::uint64_t{0});
    op.direction = direction_of(a.value("direction", ""));
    op.pageable = a.value("host_memory", "") == "pageable";
    op.staged = a.value("path", "") == "staged";
    op.host_memory = a.value("memory", "") == "host";  // allocations and frees
    op.host_begin_us = ts;
    op.host_end_us = ts + dur;
  };
  std::string bad_event;  // the first event that is not devctx's, with why
  const json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth != 2 || event != json::parse_event_t::object_end) return true;
    if (bad_event.empty()) {
      try {
        take(parsed);
      } catch (const std::exception& e) {
        bad_event = e.what();
      }
    }
    return false;
  };
  json doc;
  try {
    doc = json::parse(in, callback);
  } catch (const json::exception& e) {
    throw std::runtime_error("'" + path + "' is not JSON (" + e.what() +
                             "); a trace is written by DEVCTX_TRACE_FILE=FILE, and ends when its program exits normally");
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    throw std::runtime_error("'" + path + "' is JSON but not a trace-event file (no traceEvents array)");
  if (!bad_event.empty()) throw std::runtime_error("'" + path + "' is not a devctx trace: " + bad_event);
  if (ops.empty())
    throw std::runtime_error("'" + path + "' holds no devctx operations (a trace is written by DEVCTX_TRACE_FILE=FILE)");
  // devctx closes its files with the count of operations written: a file that holds fewer was
  // cut short, and its report would undercount.
  if (const auto other = doc.find("otherData"); other != doc.end() && other->is_object() && other->contains("operations")) {
    const json& count = (*other)["operations"];
    if (!count.is_number_unsigned() || count.get<std::uint64_t>() != ops.size())
      throw std::runtime_error("'" + path + "' is incomplete: it says it holds " + count.dump() + " operations, and " +
                               std::to_string(ops.size()) + " are in it");
  }
  std::vector<devctx::trace::Operation> list;
  for (auto& [id, op] : ops) list.push_back(std::move(op));
  return list;
}

int run_trace_summarize(const std::string& path) {
  std::vector<devctx::trace::Operation> list;
  try {
    list = read_trace(path);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "devctx: error: %s\n", e.what());
    return Exit::error;
  }
  std::map<std::string, std::size_t> per_device;
  for (const auto& op : list) ++per_device[op.device];
  std::printf("%s: %zu operations", path.c_str(), list.size());
  for (const auto& [device, count] : per_device) std::printf(", %zu on %s", count, device.c_str());
  std::printf("\n%s", devctx::trace::to_string(devctx::trace::summarize(list)).c_str());
  return Exit::ok;
}

}  // namespace devctx_tool
