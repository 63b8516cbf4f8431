// SPDX-License-Identifier: Apache-2.0
// DEVCTX_CHECK_BOUNDS (this program only) and LayoutTensor: an index outside a tensor's extents,
// a tile outside the tensor and a reshape that changes the size fail the kernel with the
// multi-index (or sizes) in the message, and the context stays usable. Checked on the CPU
// backend; on a GPU the check traps and loses the CUDA context, so the cuda runs only check that
// in-range kernels still work.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx::dyn;
using devctx::LayoutTensor;
using devctx::RowMajor;
using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;
using Mat = RowMajor<dyn, dyn>;

/// out(r, c) = in(r, c + shift) for a 2-D grid of one thread per element of out.
DEVCTX_KERNEL void shift_columns(LayoutTensor<const float, Mat> in, LayoutTensor<float, Mat> out, unsigned shift) {
  const auto g = devctx::global_idx();
  if (g.y < out.extent(0) && g.x < out.extent(1)) out(g.y, g.x) = in(g.y, g.x + shift);
}

/// Copies tile (bi, 0) of 4 x 4 elements.
DEVCTX_KERNEL void copy_tile(LayoutTensor<const float, Mat> in, LayoutTensor<float, RowMajor<4, 4>> out, unsigned bi) {
  const auto t = devctx::thread_idx();
  out(t.y, t.x) = in.tile<4, 4>(bi, 0u)(t.y, t.x);
}

/// Copies tile (bi, bj) of 4 x 4 elements, the coordinates as 64-bit values.
DEVCTX_KERNEL void copy_tile_at(LayoutTensor<const float, Mat> in, LayoutTensor<float, RowMajor<4, 4>> out,
                                std::uint64_t bi, std::uint64_t bj) {
  const auto t = devctx::thread_idx();
  out(t.y, t.x) = in.tile<4, 4>(bi, bj)(t.y, t.x);
}

/// Reshapes t to rows x 2 (rows = 2^63 + 8: the size 2^64 + 16 would wrap around to 16).
DEVCTX_KERNEL void reshape_pairs(LayoutTensor<float, RowMajor<dyn>> t, std::uint64_t rows) {
  const auto m = t.reshape(Mat(rows, 2));
  if (devctx::thread_idx().x == 0) m(rows - 1, 1) = 1.0f;
}

DEVCTX_KERNEL void reshape_rows(LayoutTensor<float, RowMajor<dyn>> t, unsigned rows) {
  const auto m = t.reshape(Mat(rows, 5));
  if (devctx::thread_idx().x == 0) m(0, 0) = 1.0f;
}

class TensorBounds : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(TensorBounds);

std::string failure_of(devctx::DeviceContext& ctx) {
  try {
    ctx.synchronize();
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::kernel_failed);
    return e.what();
  }
  ADD_FAILURE() << "the kernel did not fail";
  return "";
}

TEST_P(TensorBounds, InRangeAccessesWork) {
  const auto values = devctx_test::random_vector<float>(rng, 20 * 30, -1.0f, 1.0f);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<float>(ctx(), 20 * 27);
  ctx().enqueue_function<shift_columns>({.grid_dim = {2, 2}, .block_dim = {16, 16}}, devctx::tensor(in, Mat(20, 30)),
                                        devctx::tensor(out, Mat(20, 27)), 3u);
  const auto got = download(ctx(), out);
  for (std::size_t r = 0; r < 20; ++r)
    for (std::size_t c = 0; c < 27; ++c) ASSERT_EQ(got[r * 27 + c], values[r * 30 + c + 3]) << r << ", " << c;
}

TEST_P(TensorBounds, AnIndexOutsideTheExtentsNamesTheMultiIndex) {
  if (!on_cpu()) GTEST_SKIP() << "on a GPU the bounds check traps and loses the CUDA context";
  auto in = upload(ctx(), devctx_test::random_vector<float>(rng, 20 * 30, -1.0f, 1.0f));
  auto out = ctx().enqueue_create_buffer<float>(20 * 30);
  // Column 29 + 1 of row r: inside the buffer (the next row) but outside the extents.
  ctx().enqueue_function<shift_columns>({.grid_dim = {2, 2}, .block_dim = {16, 16}}, devctx::tensor(in, Mat(20, 30)),
                                        devctx::tensor(out, Mat(20, 30)), 1u);
  const std::string m = failure_of(ctx());
  EXPECT_NE(m.find("tensor index ("), std::string::npos) << m;
  EXPECT_NE(m.find(", 30) is out of range for extents (20, 30)"), std::string::npos) << m;
  EXPECT_NE(m.find("shift_columns"), std::string::npos) << m;
  EXPECT_NE(m.find("thread ("), std::string::npos) << m;
}

TEST_P(TensorBounds, ATileOutsideTheTensorAndABadReshapeFail) {
  if (!on_cpu()) GTEST_SKIP() << "on a GPU the bounds check traps and loses the CUDA context";
  auto in = upload(ctx(), devctx_test::random_vector<float>(rng, 10 * 4, -1.0f, 1.0f));
  auto out = ctx().enqueue_create_buffer<float>(16);
  ctx().enqueue_function<copy_tile>({.grid_dim = 1, .block_dim = {4, 4}}, devctx::tensor(in, Mat(10, 4)), out, 2u);
  std::string m = failure_of(ctx());
  EXPECT_NE(m.find("tensor tile (2, 0) is out of range: the tensor holds (2, 1) whole tiles"), std::string::npos) << m;
  ctx().enqueue_function<reshape_rows>({.grid_dim = 1, .block_dim = 1}, devctx::tensor(out, RowMajor<dyn>(16)), 3u);
  m = failure_of(ctx());
  EXPECT_NE(m.find("tensor reshape from 16 elements to 15 elements"), std::string::npos) << m;
  // The context stays usable: tile 1 is inside.
  ctx().enqueue_function<copy_tile>({.grid_dim = 1, .block_dim = {4, 4}}, devctx::tensor(in, Mat(10, 4)), out, 1u);
  ctx().synchronize();
}

// ---- tile coordinates and reshapes near 2^64 (issue 25) ------------------------------------------

TEST(TensorBoundsHost, TileCoordinatesThatWrapAreOutOfRange) {
  std::vector<float> v(8 * 4, 0.0f);
  const LayoutTensor<float, Mat> t(v.data(), 8, 4);
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  // 2^62 * 4 = 2^64 and (2^64 - 1) * 4 + 4 = 2^64 both wrap to 0, which lies inside.
  for (const auto& [bi, bj] : {std::pair<std::uint64_t, std::uint64_t>{std::uint64_t{1} << 62, 0},
                               {0, std::uint64_t{1} << 62},
                               {max, 0},
                               {0, max},
                               {2, 0}}) {
    try {
      (void)t.tile<4, 4>(bi, bj);
      ADD_FAILURE() << "tile (" << bi << ", " << bj << ") of an 8 x 4 tensor was accepted";
    } catch (const devctx::Error& e) {
      EXPECT_EQ(e.code(), devctx::Errc::kernel_failed);
      const std::string want = "tensor tile (" + std::to_string(bi) + ", " + std::to_string(bj) +
                               ") is out of range: the tensor holds (2, 1) whole tiles";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  t.tile<4, 4>(1, 0)(3, 3) = 5.0f;
  EXPECT_EQ(v[31], 5.0f);
  // A 1 x 1 tile at the last index of a dimension of 2^64 - 1 elements (never dereferenced).
  const LayoutTensor<float, RowMajor<dyn>> huge(nullptr, max);
  EXPECT_THROW((void)huge.tile<1>(max), devctx::Error);
}

TEST_P(TensorBounds, TileCoordinatesThatWrapFailTheKernel) {
  if (!on_cpu()) GTEST_SKIP() << "on a GPU the bounds check traps and loses the CUDA context";
  const auto values = devctx_test::random_vector<float>(rng, 8 * 4, -1.0f, 1.0f);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<float>(ctx(), 16);
  ctx().enqueue_function<copy_tile_at>({.grid_dim = 1, .block_dim = {4, 4}}, devctx::tensor(in, Mat(8, 4)), out,
                                       std::uint64_t{1} << 62, std::uint64_t{0});
  std::string m = failure_of(ctx());
  EXPECT_NE(m.find("tensor tile (4611686018427387904, 0) is out of range: the tensor holds (2, 1) whole tiles"), std::string::npos)
      << m;
  ctx().enqueue_function<copy_tile_at>({.grid_dim = 1, .block_dim = {4, 4}}, devctx::tensor(in, Mat(8, 4)), out,
                                       std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max());
  m = failure_of(ctx());
  EXPECT_NE(m.find("tensor tile (0, 18446744073709551615) is out of range"), std::string::npos) << m;
  // Nothing was written; tile (1, 0) then copies rows 4-7, every element checked.
  for (const float x : download(ctx(), out)) ASSERT_TRUE(devctx_test::same_bits(x, devctx_test::poison_value<float>()));
  ctx().enqueue_function<copy_tile_at>({.grid_dim = 1, .block_dim = {4, 4}}, devctx::tensor(in, Mat(8, 4)), out,
                                       std::uint64_t{1}, std::uint64_t{0});
  const auto got = download(ctx(), out);
  for (std::size_t i = 0; i < 16; ++i) ASSERT_EQ(got[i], values[16 + i]) << i;
}

TEST_P(TensorBounds, AReshapeToALayoutThatWrapsFailsTheKernel) {
  if (!on_cpu()) GTEST_SKIP() << "layouts made in CUDA device code are not checked (docs/guide.md, Tensors)";
  auto buf = devctx_test::poisoned_buffer<float>(ctx(), 16);
  // (2^63 + 8) x 2 elements would be 16 after wrapping around: the reshape's size check alone
  // would pass and m(rows - 1, 1) would write 2^64 + 15 elements away.
  ctx().enqueue_function<reshape_pairs>({.grid_dim = 1, .block_dim = 1}, devctx::tensor(buf, RowMajor<dyn>(16)),
                                        (std::uint64_t{1} << 63) + 8);
  const std::string m = failure_of(ctx());
  EXPECT_NE(m.find("reshape_pairs"), std::string::npos) << m;
  EXPECT_NE(m.find("devctx::RowMajor layout with extents (9223372036854775816, 2)"), std::string::npos) << m;
  EXPECT_NE(m.find("is more than a 64-bit size can count"), std::string::npos) << m;
  for (const float x : download(ctx(), buf)) ASSERT_TRUE(devctx_test::same_bits(x, devctx_test::poison_value<float>()));
  ctx().enqueue_function<reshape_pairs>({.grid_dim = 1, .block_dim = 1}, devctx::tensor(buf, RowMajor<dyn>(16)),
                                        std::uint64_t{8});
  const auto got = download(ctx(), buf);
  for (std::size_t i = 0; i < 15; ++i)
    ASSERT_TRUE(devctx_test::same_bits(got[i], devctx_test::poison_value<float>())) << i;
  EXPECT_EQ(got[15], 1.0f);
}

}  // namespace
