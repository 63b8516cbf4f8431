// SPDX-License-Identifier: Apache-2.0
// bench/support/stats.hpp - the one median every benchmark table reports, and the spread
// (min, median, max) some tables print next to it.
//
// Definition: the median of n values is the middle value when n is odd and the MEAN OF THE TWO
// MIDDLE VALUES when n is even. That is the textbook definition, the one Python's
// statistics.median and NumPy use (so bench/python's tables and these agree), and it is
// symmetric: it favours neither the faster nor the slower half of the trials, where the upper
// middle (v[n/2]) leans towards the slower one for times and the faster one for rates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace devctx_bench {

/// The median of `v` (see the definition above). Throws std::invalid_argument when `v` is empty.
[[nodiscard]] inline double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("devctx_bench::median of no values");
  const std::size_t n = v.size();
  const auto mid = v.begin() + std::ptrdiff_t(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2 == 1) return *mid;
  const double below = *std::max_element(v.begin(), mid);  // the largest of the lower half
  return 0.5 * (below + *mid);
}

/// The smallest, median and largest of some trials.
struct Spread {
  double min = 0, median = 0, max = 0;
};

/// The spread of `v`. Throws std::invalid_argument when `v` is empty.
[[nodiscard]] inline Spread spread(const std::vector<double>& v) {
  if (v.empty()) throw std::invalid_argument("devctx_bench::spread of no values");
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {*lo, median(v), *hi};
}

}  // namespace devctx_bench
