// SPDX-License-Identifier: Apache-2.0
// tools/svg_plot.cpp - `devctx bench --plot FILE.svg`: a line chart of the bench's rows, written
// as SVG text by the tool itself: x the size on a log2 scale, y GB/s (transfers) or
// microseconds per operation (the other suites), one <polyline> per series, a legend.
// It also holds the SVG text helpers (xml_escape, svg_number) that `devctx trace timeline` shares.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tool.hpp"

namespace devctx_tool {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Every number in an SVG goes through std::to_chars (core/text.hpp): a '.' under every locale.
std::string svg_number(double v) { return devctx::detail::fixed_text(v, 1); }

namespace {

std::string size_label(std::uint64_t size, const std::string& unit) {
  if (unit != "bytes") return std::to_string(size);
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = double(size);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return devctx::detail::fixed_text(v, v == std::floor(v) ? 0 : 1) + " " + units[u];
}

// Distinct colours for up to 10 series (then they repeat).
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

std::string bench_svg(const std::vector<BenchRow>& all_rows, const std::string& title) {
  // Transfers when there are any (bandwidth), else every row (time per operation).
  std::vector<BenchRow> rows;
  for (const BenchRow& r : all_rows)
    if (r.suite == "transfers") rows.push_back(r);
  const bool bandwidth = !rows.empty();
  if (!bandwidth) rows = all_rows;
  std::map<std::string, std::vector<const BenchRow*>> series;
  std::vector<std::string> order;
  for (const BenchRow& r : rows) {
    const std::string name = bandwidth ? r.series : r.suite + ": " + r.series;
    if (!series.contains(name)) order.push_back(name);
    series[name].push_back(&r);
  }
  auto y_of = [&](const BenchRow& r) { return bandwidth ? r.gb_per_s : r.time_us; };
  double x_min = 1e300, x_max = 0, y_max = 0;
  for (const BenchRow& r : rows) {
    const double x = std::log2(double(std::max<std::uint64_t>(r.size, 1)));
    x_min = std::min(x_min, x);
    x_max = std::max(x_max, x);
    y_max = std::max(y_max, y_of(r));
  }
  if (rows.empty()) x_min = x_max = 0;
  if (x_max <= x_min) x_max = x_min + 1;
  if (y_max <= 0) y_max = 1;
  y_max *= 1.1;
  const double width = 880, height = 520, left = 70, right = 260, top = 40, bottom = 60;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  auto px = [&](double x) { return left + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return top + plot_h - y / y_max * plot_h; };
  const std::string unit = rows.empty() ? "bytes" : rows.front().unit;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) + "\" height=\"" +
         svg_number(height) + "\" viewBox=\"0 0 " + svg_number(width) + " " + svg_number(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + svg_number(left) + "\" y=\"24\" font-size=\"15\">" + xml_escape(title) + "</text>\n";
  // Axes, grid and tick labels.
  svg += "<g stroke=\"#ccc\">\n";
  for (int i = 0; i <= 5; ++i) {
    const double y = y_max * i / 5;
    svg += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + plot_w) + "\" y1=\"" + svg_number(py(y)) +
           "\" y2=\"" + svg_number(py(y)) + "\"/>\n";
  }
  svg += "</g>\n<g>\n";
  for (int i = 0; i <= 5; ++i) {
    const double y = y_max * i / 5;
    const std::string label = devctx::detail::fixed_text(y, y_max >= 10 ? 0 : 2);
    svg += "<text x=\"" + svg_number(left - 6) + "\" y=\"" + svg_number(py(y) + 4) + "\" text-anchor=\"end\">" + label +
           "</text>\n";
  }
  for (int e = int(std::ceil(x_min)); e <= int(std::floor(x_max)); e += (x_max - x_min > 12 ? 2 : 1)) {
    svg += "<text x=\"" + svg_number(px(e)) + "\" y=\"" + svg_number(top + plot_h + 18) + "\" text-anchor=\"middle\">" +
           xml_escape(size_label(std::uint64_t(1) << e, unit)) + "</text>\n";
  }
  svg += "</g>\n";
  svg += "<line x1=\"" + svg_number(left) + "\" y1=\"" + svg_number(top + plot_h) + "\" x2=\"" +
         svg_number(left + plot_w) + "\" y2=\"" + svg_number(top + plot_h) + "\" stroke=\"black\"/>\n";
  svg += "<line x1=\"" + svg_number(left) + "\" y1=\"" + svg_number(top) + "\" x2=\"" + svg_number(left) + "\" y2=\"" +
         svg_number(top + plot_h) + "\" stroke=\"black\"/>\n";
  svg += "<text x=\"" + svg_number(left + plot_w / 2) + "\" y=\"" + svg_number(height - 16) +
         "\" text-anchor=\"middle\">" + (unit == "bytes" ? "size (log scale)" : "blocks (log scale)") + "</text>\n";
  svg += "<text transform=\"translate(18 " + svg_number(top + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         (bandwidth ? "GB/s" : "microseconds per operation") + "</text>\n";
  // One polyline per series, and its legend entry.
  for (std::size_t s = 0; s < order.size(); ++s) {
    const char* colour = kColours[s % std::size(kColours)];
    std::string points;
    for (const BenchRow* r : series[order[s]]) {
      if (!points.empty()) points += ' ';
      points += svg_number(px(std::log2(double(std::max<std::uint64_t>(r->size, 1))))) + "," + svg_number(py(y_of(*r)));
    }
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"2\" points=\"" + points +
           "\"><title>" + xml_escape(order[s]) + "</title></polyline>\n";
    const double ly = top + 10 + 20 * double(s);
    svg += "<rect x=\"" + svg_number(left + plot_w + 16) + "\" y=\"" + svg_number(ly - 9) +
           "\" width=\"14\" height=\"4\" fill=\"" + colour + "\"/>\n";
    svg += "<text x=\"" + svg_number(left + plot_w + 36) + "\" y=\"" + svg_number(ly) + "\">" + xml_escape(order[s]) +
           "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace devctx_tool
