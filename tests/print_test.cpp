// SPDX-License-Identifier: Apache-2.0
// devctx::printf (devctx/print.hpp): every thread's line reaches stdout whole, once, with its
// arguments formatted, on every backend; on the CPU backend a block without barriers prints in
// thread order.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx_test::BackendTest;
using devctx_test::upload;

DEVCTX_KERNEL void print_values(devctx::span<const int> v) {
  const unsigned b = devctx::block_idx().x, t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  if (i < v.size()) devctx::printf("devctx-print b%u t%u v=%d x=%.2f\n", b, t, v[i], double(v[i]) / 4.0);
}

class Print : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Print);

TEST_P(Print, EveryThreadsLineArrivesWholeAndOnce) {
  const auto values = devctx_test::random_vector<int>(rng, 45, -1000, 1000);
  auto v = upload(ctx(), values);
  ctx().synchronize();
  std::fflush(stdout);
  testing::internal::CaptureStdout();
  ctx().enqueue_function<print_values>({.grid_dim = 3, .block_dim = 16}, v);
  ctx().synchronize();
  std::fflush(stdout);
  const std::string out = testing::internal::GetCapturedStdout();
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("devctx-print")) lines.push_back(line);
  ASSERT_EQ(lines.size(), values.size()) << out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    char expected[96];
    std::snprintf(expected, sizeof expected, "devctx-print b%zu t%zu v=%d x=%.2f", i / 16, i % 16, values[i],
                  double(values[i]) / 4.0);
    EXPECT_EQ(std::count(lines.begin(), lines.end(), std::string(expected)), 1) << expected << "\n" << out;
  }
  if (on_cpu()) {
    // Within a block (no barriers) the threads print in thread order.
    std::vector<std::size_t> last(3, 0);
    for (const auto& line : lines) {
      unsigned b = 0, t = 0;
      ASSERT_EQ(std::sscanf(line.c_str(), "devctx-print b%u t%u", &b, &t), 2) << line;
      EXPECT_GE(t + 1, last[b]) << out;
      last[b] = t + 1;
    }
  }
}

}  // namespace
