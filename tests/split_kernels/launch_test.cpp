// SPDX-License-Identifier: Apache-2.0
// tests/split_kernels/launch_test.cpp - launches the kernels that kernels.hpp declares and
// kernels.cpp defines, on every backend (with CUDA both files go through devctx_add_kernels and
// the target has CUDA_SEPARABLE_COMPILATION: tests/CMakeLists.txt). Fresh random inputs,
// poisoned outputs, every element checked.
#include <vector>

#include "split_kernels/kernels.hpp"
#include "support/test_support.hpp"

namespace {

using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;

class SplitKernels : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(SplitKernels);

TEST_P(SplitKernels, KernelsDefinedInAnotherFileRunOnEveryBackend) {
  const unsigned n = 3001;
  const auto x = devctx_test::random_small_ints<float>(rng, n, -1000, 1000);
  const auto y = devctx_test::random_small_ints<float>(rng, n, -1000, 1000);
  const float a = float(rng() % 9) - 4.0f;
  auto dx = upload(ctx(), x);
  auto dy = upload(ctx(), y);
  ctx().enqueue_function<split::saxpy>(devctx_test::cover(n, 128), a, dx, dy, n);
  std::vector<float> expect(n);
  for (unsigned i = 0; i < n; ++i) expect[i] = a * x[i] + y[i];  // small integers: exact
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), dy)));

  const unsigned blocks = 17, m = blocks * split::kTile;
  const auto values = devctx_test::random_vector<int>(rng, m, -1000000, 1000000);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<int>(ctx(), m);
  ctx().enqueue_function<split::reverse_tiles>(devctx::LaunchConfig{.grid_dim = blocks, .block_dim = split::kTile}, in,
                                               out);
  std::vector<int> want(m);
  for (unsigned i = 0; i < m; ++i)
    want[i] = values[i / split::kTile * split::kTile + split::kTile - 1 - i % split::kTile];
  EXPECT_TRUE(devctx_test::all_equal(want, download(ctx(), out)));
}

}  // namespace
