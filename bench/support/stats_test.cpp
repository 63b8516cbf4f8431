// SPDX-License-Identifier: Apache-2.0
// bench/support/stats_test.cpp - the benchmarks' one median against its definition (stats.hpp):
// fresh random samples of every length from 1 to 64, odd and even, checked against the middle of
// a sorted copy (the mean of the two middle values at even lengths); spread's ends; an empty
// sample refused. Exit status 0 when every check holds (ctest bench.support.median).
#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "support/stats.hpp"

int main() {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> value(-1e6, 1e6);
  int failures = 0;
  for (int round = 0; round < 200; ++round) {
    for (std::size_t n = 1; n <= 64; ++n) {
      std::vector<double> v(n);
      for (double& x : v) x = round % 2 == 0 ? value(rng) : double(std::uniform_int_distribution<int>(0, 3)(rng));
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      const double want = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
      const double got = devctx_bench::median(v);
      const devctx_bench::Spread s = devctx_bench::spread(v);
      if (got != want || s.median != want || s.min != sorted.front() || s.max != sorted.back()) {
        std::printf("FAILED: n = %zu: median %.17g, expected %.17g (spread %g..%g)\n", n, got, want, s.min, s.max);
        ++failures;
      }
    }
  }
  if (devctx_bench::median({1.0, 2.0, 3.0, 10.0}) != 2.5) ++failures;
  try {
    (void)devctx_bench::median({});
    std::printf("FAILED: the median of no values did not throw\n");
    ++failures;
  } catch (const std::invalid_argument&) {
  }
  std::printf("%s\n", failures == 0 ? "median: every check held" : "median: FAILED");
  return failures == 0 ? 0 : 1;
}
