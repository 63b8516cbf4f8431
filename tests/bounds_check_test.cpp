// SPDX-License-Identifier: Apache-2.0
// DEVCTX_CHECK_BOUNDS (defined for this program only, see CMakeLists.txt): span indexing past the
// end fails the kernel with a message naming the index, the size, the kernel, block and thread,
// and the context stays usable. Checked on the CPU backend; on a GPU the check traps, which
// loses the CUDA context, so the cuda runs only check that in-range kernels still work.
#include <cstdint>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;

DEVCTX_KERNEL void copy_shifted(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out, unsigned shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i + shift];
}

class BoundsCheck : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(BoundsCheck);

TEST_P(BoundsCheck, InRangeAccessesWork) {
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, 1000, 0, 1u << 30);
  auto in = upload(ctx(), values);
  auto out = ctx().enqueue_create_buffer<std::uint32_t>(990);
  ctx().enqueue_memset(out, 0xDEADBEEFu);
  ctx().enqueue_function<copy_shifted>({.grid_dim = 4, .block_dim = 256}, in, out, 10u);
  const auto got = download(ctx(), out);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], values[i + 10]) << "element " << i;
}

TEST_P(BoundsCheck, IndexPastTheEndFailsTheKernelWithItsCoordinates) {
  if (!on_cpu()) GTEST_SKIP() << "on a GPU the bounds check traps and loses the CUDA context";
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, 1000, 0, 1u << 30);
  auto in = upload(ctx(), values);
  auto out = ctx().enqueue_create_buffer<std::uint32_t>(1000);
  // Thread 999 (block 3, thread 231) reads in[1000]: one past the end.
  ctx().enqueue_function<copy_shifted>({.grid_dim = 4, .block_dim = 256}, in, out, 1u);
  try {
    ctx().synchronize();
    FAIL() << "an out-of-range index was not reported";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::kernel_failed);
    const std::string m = e.what();
    EXPECT_NE(m.find("copy_shifted"), std::string::npos) << m;
    EXPECT_NE(m.find("span index 1000 is out of range for a span of 1000 elements"), std::string::npos) << m;
    EXPECT_NE(m.find("block (3, 0, 0)"), std::string::npos) << m;
    EXPECT_NE(m.find("thread (231, 0, 0)"), std::string::npos) << m;
  }
  // The context stays usable.
  auto again = ctx().enqueue_create_buffer<std::uint32_t>(999);
  ctx().enqueue_function<copy_shifted>({.grid_dim = 4, .block_dim = 256}, in, again, 1u);
  const auto got = download(ctx(), again);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], values[i + 1]) << "element " << i;
}

}  // namespace
