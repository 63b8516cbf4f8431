// SPDX-License-Identifier: Apache-2.0
// bench/support/trials.hpp - how a benchmark repeats a measurement: warm-ups first, then
// trials, and the median (stats.hpp) of them; several measurements in alternation (A, B, C,
// A, B, C, ...) so that a drift of clocks or of the machine's state favours none of them.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "support/clock.hpp"
#include "support/stats.hpp"

namespace devctx_bench {

/// The values of `trials` calls of `measure`, after `warmups` untimed calls.
[[nodiscard]] inline std::vector<double> trials_of(int trials, int warmups, const std::function<double()>& measure) {
  for (int i = 0; i < warmups; ++i) (void)measure();
  std::vector<double> v;
  v.reserve(std::size_t(trials > 0 ? trials : 0));
  for (int i = 0; i < trials; ++i) v.push_back(measure());
  return v;
}

/// The median of `trials` calls of `measure`, after `warmups` untimed calls.
[[nodiscard]] inline double median_of(int trials, int warmups, const std::function<double()>& measure) {
  return median(trials_of(trials, warmups, measure));
}

/// The median over `trials` of the seconds one call of `work` takes, after `warmups` untimed calls.
[[nodiscard]] inline double median_seconds(int trials, int warmups, const std::function<void()>& work) {
  return median_of(trials, warmups, [&] { return seconds_of(work); });
}

/// The values of several measurements taken in turn, trial after trial, after `warmups`
/// rounds: one vector of `trials` values per measurement.
[[nodiscard]] inline std::vector<std::vector<double>> alternating_trials(int trials, int warmups,
                                                                         const std::vector<std::function<double()>>& fs) {
  for (int w = 0; w < warmups; ++w)
    for (const auto& f : fs) (void)f();
  std::vector<std::vector<double>> runs(fs.size());
  for (int t = 0; t < trials; ++t)
    for (std::size_t i = 0; i < fs.size(); ++i) runs[i].push_back(fs[i]());
  return runs;
}

/// The medians of several measurements taken in alternation (alternating_trials), in order.
[[nodiscard]] inline std::vector<double> alternating_medians(int trials, int warmups,
                                                             const std::vector<std::function<double()>>& fs) {
  std::vector<double> out;
  for (auto& r : alternating_trials(trials, warmups, fs)) out.push_back(median(std::move(r)));
  return out;
}

}  // namespace devctx_bench
