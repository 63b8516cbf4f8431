// SPDX-License-Identifier: Apache-2.0
// tools/trace_timeline.cpp - `devctx trace timeline FILE --svg OUT.svg`: a trace's device work
// drawn as a timeline, written as SVG by the tool itself: one row per stream of each device, one
// bar per operation from its device begin to end, coloured by kind (uploads, downloads, copies
// on the device, kernels, fills, waits), with a time axis and a legend. The picture of
// docs/observability.md; for zooming, open the trace itself in ui.perfetto.dev.
#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tool.hpp"

namespace devctx_tool {
namespace {

using devctx::trace::Direction;
using devctx::trace::Kind;

struct Style {
  const char* label;
  const char* colour;
};

Style style_of(const devctx::trace::Operation& op) {
  switch (op.kind) {
    case Kind::kernel: return {"kernel", "#2ca02c"};
    case Kind::fill: return {"memset", "#9467bd"};
    case Kind::wait: return {"wait for an event", "#c7c7c7"};
    case Kind::copy:
      if (op.direction == Direction::host_to_device) return {"copy host -> device", "#1f77b4"};
      if (op.direction == Direction::device_to_host) return {"copy device -> host", "#d62728"};
      return {"copy on one side", "#ff7f0e"};
    default: return {"other", "#7f7f7f"};
  }
}

}  // namespace

int run_trace_timeline(const std::string& path, const std::string& svg_path) {
  std::vector<devctx::trace::Operation> ops;
  try {
    ops = read_trace(path);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "devctx: error: %s\n", e.what());
    return Exit::error;
  }
  std::erase_if(ops, [](const auto& op) { return !op.device_begin_us || !op.device_end_us; });
  if (ops.empty()) {
    std::fprintf(stderr,
                 "devctx: error: '%s' holds no device times (was the work synchronized before the program ended?)\n",
                 path.c_str());
    return Exit::error;
  }
  std::map<std::pair<std::string, int>, int> rows;  // (device, stream) -> row
  double t0 = *ops.front().device_begin_us, t1 = t0;
  for (const auto& op : ops) {
    rows.try_emplace({op.device, op.stream}, 0);
    t0 = std::min(t0, *op.device_begin_us);
    t1 = std::max(t1, *op.device_end_us);
  }
  int index = 0;
  for (auto& [key, row] : rows) row = index++;
  if (t1 <= t0) t1 = t0 + 1;
  const double left = 190, right = 20, top = 50, row_h = 34, width = 1000;
  const double plot_w = width - left - right;
  const double height = top + row_h * double(rows.size()) + 90;
  auto x_of = [&](double us) { return left + (us - t0) / (t1 - t0) * plot_w; };

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) + "\" height=\"" +
         svg_number(height) + "\" viewBox=\"0 0 " + svg_number(width) + " " + svg_number(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // Numbers in the SVG with std::to_chars (svg_number, fixed_text): a '.' under every locale.
  using devctx::detail::fixed_text;
  const std::string title = "device timeline: " + std::to_string(ops.size()) + " operations over " +
                            fixed_text((t1 - t0) / 1000.0, 3) + " ms";
  svg += "<text x=\"" + svg_number(left) + "\" y=\"24\" font-size=\"15\">" + xml_escape(title) + "</text>\n";
  for (const auto& [key, row] : rows) {
    const double y = top + row_h * row;
    svg += "<text x=\"8\" y=\"" + svg_number(y + row_h / 2 + 4) + "\">" +
           xml_escape(key.first.substr(0, key.first.find(' ')) + " stream " + std::to_string(key.second)) + "</text>\n";
    svg += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + plot_w) + "\" y1=\"" +
           svg_number(y + row_h) + "\" y2=\"" + svg_number(y + row_h) + "\" stroke=\"#eee\"/>\n";
  }
  std::map<std::string, const char*> legend;
  for (const auto& op : ops) {
    const Style s = style_of(op);
    legend.emplace(s.label, s.colour);
    const double y = top + row_h * rows.at({op.device, op.stream}) + 5;
    const double x = x_of(*op.device_begin_us);
    const double w = std::max(0.5, x_of(*op.device_end_us) - x);
    const std::string tip = ": " + fixed_text((*op.device_end_us - *op.device_begin_us) / 1000.0, 3) + " ms";
    // Appended, not `" " + bytes_text(...)`: GCC 12 warns (-Wrestrict) on inserting at the front
    // of a temporary string.
    std::string size;
    if (op.bytes > 0) size.append(" ").append(bytes_text(op.bytes));
    svg += "<rect x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\" width=\"" + svg_number(w) + "\" height=\"" +
           svg_number(row_h - 10) + "\" fill=\"" + s.colour + "\"><title>" + xml_escape(op.name) + size + tip +
           "</title></rect>\n";
  }
  const double axis_y = top + row_h * double(rows.size()) + 4;
  svg += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + plot_w) + "\" y1=\"" + svg_number(axis_y) +
         "\" y2=\"" + svg_number(axis_y) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double us = t0 + (t1 - t0) * i / 5;
    const std::string label = fixed_text((us - t0) / 1000.0, 2) + " ms";
    svg += "<text x=\"" + svg_number(x_of(us)) + "\" y=\"" + svg_number(axis_y + 16) + "\" text-anchor=\"middle\">" +
           label + "</text>\n";
  }
  double lx = left;
  for (const auto& [label, colour] : legend) {
    svg += "<rect x=\"" + svg_number(lx) + "\" y=\"" + svg_number(axis_y + 34) +
           "\" width=\"12\" height=\"12\" fill=\"" + colour + "\"/>\n<text x=\"" + svg_number(lx + 16) + "\" y=\"" +
           svg_number(axis_y + 44) + "\">" + xml_escape(label) + "</text>\n";
    lx += 30 + 7.0 * double(label.size());
  }
  svg += "</svg>\n";
  std::FILE* f = std::fopen(svg_path.c_str(), "wb");
  bool written = f != nullptr && std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  if (f != nullptr && std::fclose(f) != 0) written = false;
  if (!written) {
    std::fprintf(stderr, "devctx: error: cannot write the timeline to '%s'\n", svg_path.c_str());
    return Exit::error;
  }
  std::printf("%s: %zu device operations on %zu streams over %.3f ms drawn in %s\n", path.c_str(), ops.size(),
              rows.size(), (t1 - t0) / 1000.0, svg_path.c_str());
  return Exit::ok;
}

}  // namespace devctx_tool
