// SPDX-License-Identifier: Apache-2.0
// tools/bench_output.cpp - the forms `devctx bench` prints its rows in: a table, JSON (the schema
// is tests/tools/bench_schema.json) and CSV with the same columns. Host code only (no kernels),
// so that nvcc never compiles the JSON library.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tool.hpp"

namespace devctx_tool {

std::string bench_json(const std::vector<BenchRow>& rows, const std::string& device, const std::string& device_name,
                       const std::string& suite) {
  nlohmann::json doc;
  doc["tool"] = "devctx bench";
  doc["version"] = DEVCTX_VERSION_STRING;
  doc["device"] = device;
  doc["device_name"] = device_name;
  doc["suite"] = suite;
  doc["results"] = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    nlohmann::json row = {{"suite", r.suite}, {"series", r.series},         {"size", r.size},
                          {"unit", r.unit},   {"iterations", r.iterations}, {"time_us", r.time_us}};
    if (r.gb_per_s >= 0) row["gb_per_s"] = r.gb_per_s;
    doc["results"].push_back(row);
  }
  return doc.dump(2) + "\n";
}

std::string bench_csv(const std::vector<BenchRow>& rows) {
  std::string out = "suite,series,size,unit,iterations,time_us,gb_per_s\n";
  for (const BenchRow& r : rows) {
    // Numbers with std::to_chars (core/text.hpp): a '.' under every locale.
    out += r.suite + ",\"" + r.series + "\"," + std::to_string(r.size) + "," + r.unit + "," +
           std::to_string(r.iterations) + "," + devctx::detail::fixed_text(r.time_us, 4) + ",";
    if (r.gb_per_s >= 0) out += devctx::detail::fixed_text(r.gb_per_s, 4);
    out += "\n";
  }
  return out;
}

void bench_table(const std::vector<BenchRow>& rows) {
  std::string suite;
  for (const BenchRow& r : rows) {
    if (r.suite != suite) {
      suite = r.suite;
      std::printf("\n%-9s %-44s %24s %10s %12s %10s\n", "suite", "series", "size", "iters", "us per op", "GB/s");
    }
    const std::string size = r.unit == "bytes" ? bytes_text(r.size) : std::to_string(r.size) + " blocks";
    std::printf("%-9s %-44s %24s %10llu %12.2f ", r.suite.c_str(), r.series.c_str(), size.c_str(),
                static_cast<unsigned long long>(r.iterations), r.time_us);
    if (r.gb_per_s >= 0)
      std::printf("%10.2f\n", r.gb_per_s);
    else
      std::printf("%10s\n", "-");
  }
}

}  // namespace devctx_tool
