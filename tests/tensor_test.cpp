// SPDX-License-Identifier: Apache-2.0
// LayoutTensor (devctx/tensor.hpp) and devctx::tensor(memory, layout) (devctx/device_tensor.hpp):
// layout arithmetic on the host, and kernels that index, tile, reshape and transpose tensors over
// device buffers, shared memory and host memory, each checked element by element against a host
// reference, on every backend.
#include <cstdint>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx::ColMajor;
using devctx::dyn;
using devctx::LayoutTensor;
using devctx::RowMajor;
using devctx::Strided;
using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;

using Mat = RowMajor<dyn, dyn>;
using MatC = ColMajor<dyn, dyn>;
constexpr unsigned kTile = 8;

// ---- layouts, on the host ------------------------------------------------------------------------

TEST(Layout, ContiguousStridesFollowTheOrder) {
  const Mat r(3, 5);
  EXPECT_EQ(r.stride(0), 5u);
  EXPECT_EQ(r.stride(1), 1u);
  EXPECT_EQ(r.size(), 15u);
  EXPECT_EQ(r.span_size(), 15u);
  EXPECT_TRUE(r.is_contiguous());
  const MatC c(3, 5);
  EXPECT_EQ(c.stride(0), 1u);
  EXPECT_EQ(c.stride(1), 3u);
  const RowMajor<2, dyn, 4> r3(3);
  EXPECT_EQ(r3.extent(0), 2u);
  EXPECT_EQ(r3.extent(1), 3u);
  EXPECT_EQ(r3.extent(2), 4u);
  EXPECT_EQ(r3.stride(0), 12u);
  EXPECT_EQ(r3.stride(1), 4u);
  EXPECT_EQ(r3.offset({1, 2, 3}), 12u + 8u + 3u);
  const ColMajor<2, 3, 4> c3;
  EXPECT_EQ(c3.offset({1, 2, 3}), 1u + 2u * 2u + 3u * 6u);
  static_assert(RowMajor<4, 4>{}.span_size() == 16);
  static_assert(RowMajor<4, 4>::dynamic_count == 0 && Mat::dynamic_count == 2);
  EXPECT_EQ(Mat(0, 7).span_size(), 0u);
}

TEST(Layout, TilesKeepTheParentStridesAndTransposesSwapThem) {
  std::vector<int> v(6 * 10);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = int(i);
  const LayoutTensor<int, Mat> t(v.data(), 6, 10);
  const auto tile = t.tile<2, 5>(2, 1);  // rows 4-5, columns 5-9
  static_assert(std::is_same_v<decltype(tile), const LayoutTensor<int, RowMajor<2, 5>>>);
  EXPECT_EQ(tile.stride(0), 10u);
  EXPECT_FALSE(tile.layout().is_contiguous());
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(tile(i, j), t(4 + i, 5 + j));
  const auto tt = t.transpose();
  static_assert(std::is_same_v<decltype(tt), const LayoutTensor<int, MatC>>);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 10; ++j) EXPECT_EQ(tt(j, i), t(i, j));
  const auto flat = t.reshape(RowMajor<dyn>(60));
  const auto cube = t.reshape<RowMajor<3, 4, 5>>();
  for (int i = 0; i < 60; ++i) EXPECT_EQ(flat(i), i);
  EXPECT_EQ(cube(2, 3, 4), 59);
  EXPECT_EQ(cube(1, 0, 2), 22);
  // A strided layout: every other row of t.
  const LayoutTensor<int, Strided<dyn, dyn>> even(v.data(), Strided<dyn, dyn>::from_parts({3, 10}, {20, 1}));
  EXPECT_EQ(even(2, 3), 43);
  const LayoutTensor<const int, Mat> ro = t;  // converts to a read-only view
  EXPECT_EQ(ro(5, 9), 59);
}

TEST(Layout, HostMemoryTensorsAreCheckedAgainstTheirMemory) {
  std::vector<float> v(20);
  auto t = devctx::tensor(std::span<float>(v), RowMajor<4, 5>{});
  t(3, 4) = 7.0f;
  EXPECT_EQ(v[19], 7.0f);
  try {
    (void)devctx::tensor(std::span<float>(v), Mat(5, 5));
    FAIL() << "a layout larger than its memory was accepted";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::size_mismatch);
    EXPECT_NE(std::string(e.what()).find("reaches 25 elements but the memory holds 20"), std::string::npos) << e.what();
  }
}

// ---- kernels ------------------------------------------------------------------------------------------

/// out = in^T (out is n x m, column-major), through a row-major and a column-major view.
DEVCTX_KERNEL void transpose_k(LayoutTensor<const float, Mat> in, LayoutTensor<float, MatC> out) {
  const auto g = devctx::global_idx();
  if (g.y < in.extent(0) && g.x < in.extent(1)) out(g.x, g.y) = in(g.y, g.x) * 2.0f;
}

/// A fully static 3-D tensor, given as a plain buffer.
using Cube = RowMajor<4, 6, 8>;
DEVCTX_KERNEL void cube_k(LayoutTensor<const std::int32_t, Cube> in, LayoutTensor<std::int32_t, ColMajor<8, 6, 4>> out) {
  const auto t = devctx::thread_idx();
  out(t.x, t.y, t.z) = in(t.z, t.y, t.x) + std::int32_t(t.x * 100 + t.y * 10 + t.z);
}

/// C = A * B with tiles of A and B staged in shared memory through tensors (n a multiple of kTile).
DEVCTX_KERNEL void matmul_k(LayoutTensor<const float, Mat> a, LayoutTensor<const float, Mat> b, LayoutTensor<float, Mat> c) {
  DEVCTX_SHARED(float, as_mem, kTile* kTile);
  DEVCTX_SHARED(float, bs_mem, kTile* kTile);
  const LayoutTensor<float, RowMajor<kTile, kTile>> as(as_mem), bs(bs_mem);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned bi = devctx::block_idx().y, bj = devctx::block_idx().x;
  float acc = 0.0f;
  for (unsigned kt = 0; kt < a.extent(1) / kTile; ++kt) {
    as(ty, tx) = a.tile<kTile, kTile>(bi, kt)(ty, tx);
    bs(ty, tx) = b.tile<kTile, kTile>(kt, bj)(ty, tx);
    devctx::barrier();
    for (unsigned k = 0; k < kTile; ++k) acc += as(ty, k) * bs(k, tx);
    devctx::barrier();
  }
  c.tile<kTile, kTile>(bi, bj)(ty, tx) = acc;
}

/// The same, block-level form.
DEVCTX_KERNEL void matmul_block_k(devctx::Block blk, LayoutTensor<const float, Mat> a, LayoutTensor<const float, Mat> b,
                                  LayoutTensor<float, Mat> c) {
  DEVCTX_SHARED(float, as_mem, kTile* kTile);
  DEVCTX_SHARED(float, bs_mem, kTile* kTile);
  const LayoutTensor<float, RowMajor<kTile, kTile>> as(as_mem), bs(bs_mem);
  auto acc = blk.per_thread<float>(0.0f);
  const unsigned bi = blk.idx().y, bj = blk.idx().x;
  for (unsigned kt = 0; kt < a.extent(1) / kTile; ++kt) {
    const auto at = a.tile<kTile, kTile>(bi, kt), bt = b.tile<kTile, kTile>(kt, bj);
    blk.for_each_thread([&](devctx::Thread t) {
      as(t.y, t.x) = at(t.y, t.x);
      bs(t.y, t.x) = bt(t.y, t.x);
    });
    blk.for_each_thread([&](devctx::Thread t) {
      float sum = acc[t];
      for (unsigned k = 0; k < kTile; ++k) sum += as(t.y, k) * bs(k, t.x);
      acc[t] = sum;
    });
  }
  const auto ct = c.tile<kTile, kTile>(bi, bj);
  blk.for_each_thread([&](devctx::Thread t) { ct(t.y, t.x) = acc[t]; });
}

/// Reads a reshaped view: out[i] = in viewed as rows x cols, element (i / cols, i % cols).
DEVCTX_KERNEL void reshape_k(LayoutTensor<const std::int32_t, RowMajor<dyn>> in,
                             LayoutTensor<std::int32_t, RowMajor<dyn>> out, unsigned cols) {
  const std::size_t i = devctx::global_idx().x;
  const auto m = in.reshape(Mat(in.extent(0) / cols, cols));
  if (i < out.extent(0)) out(i) = m(i / cols, i % cols) * 3;
}

/// Tile `bi` of 2 x 5 elements, one thread per element.
DEVCTX_KERNEL void read_tile(LayoutTensor<const float, Mat> in, devctx::span<float> out, unsigned bi) {
  const unsigned i = devctx::thread_idx().x;
  out[i] = in.tile<2, 5>(bi, 0u)(i / 5, i % 5);
}

/// Tile (bi, 0) of 2 x 5 elements, bi a 64-bit value (near 2^63, bi * 2 wraps around).
DEVCTX_KERNEL void read_tile_at(LayoutTensor<const float, Mat> in, devctx::span<float> out, std::uint64_t bi) {
  const unsigned i = devctx::thread_idx().x;
  out[i] = in.tile<2, 5>(bi, 0u)(i / 5, i % 5);
}

class Tensor : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Tensor);

TEST_P(Tensor, RowAndColumnMajorViewsIndexTheSameElements) {
  const std::size_t m = 37, n = 53;  // partial blocks on both axes
  const auto values = devctx_test::random_vector<float>(rng, m * n, -100.0f, 100.0f);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<float>(ctx(), m * n);
  const auto& in_ro = in;
  ctx().enqueue_function<transpose_k>({.grid_dim = {4, 3}, .block_dim = {16, 16}}, devctx::tensor(in_ro, Mat(m, n)),
                                      devctx::tensor(out, MatC(n, m)));
  const auto got = download(ctx(), out);
  // out is n x m column-major: element (j, i) at j + i * n.
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) ASSERT_EQ(got[j + i * n], values[i * n + j] * 2.0f) << i << ", " << j;
}

TEST_P(Tensor, StaticLayoutsTakeThePlainBuffer) {
  const auto values = devctx_test::random_vector<std::int32_t>(rng, 4 * 6 * 8, -1000, 1000);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<std::int32_t>(ctx(), 4 * 6 * 8);
  ctx().enqueue_function<cube_k>({.grid_dim = 1, .block_dim = {8, 6, 4}}, in, out);
  const auto got = download(ctx(), out);
  for (std::size_t z = 0; z < 4; ++z)
    for (std::size_t y = 0; y < 6; ++y)
      for (std::size_t x = 0; x < 8; ++x)
        ASSERT_EQ(got[x + 8 * (y + 6 * z)], values[(z * 6 + y) * 8 + x] + std::int32_t(x * 100 + y * 10 + z))
            << x << ", " << y << ", " << z;
}

TEST_P(Tensor, TiledMatmulInBothKernelForms) {
  const std::size_t n = 5 * kTile;
  const auto a = devctx_test::random_small_ints<float>(rng, n * n, -8, 8);
  const auto b = devctx_test::random_small_ints<float>(rng, n * n, -8, 8);
  std::vector<float> expected(n * n, 0.0f);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t j = 0; j < n; ++j) expected[i * n + j] += a[i * n + k] * b[k * n + j];
  const auto da = upload(ctx(), a);
  const auto db = upload(ctx(), b);
  const devctx::LaunchConfig cfg{.grid_dim = {unsigned(n / kTile), unsigned(n / kTile)}, .block_dim = {kTile, kTile}};
  for (const bool block_level : {false, true}) {
    auto dc = devctx_test::poisoned_buffer<float>(ctx(), n * n);
    if (block_level)
      ctx().enqueue_function<matmul_block_k>(cfg, devctx::tensor(da, Mat(n, n)), devctx::tensor(db, Mat(n, n)),
                                             devctx::tensor(dc, Mat(n, n)));
    else
      ctx().enqueue_function<matmul_k>(cfg, devctx::tensor(da, Mat(n, n)), devctx::tensor(db, Mat(n, n)),
                                       devctx::tensor(dc, Mat(n, n)));
    EXPECT_TRUE(devctx_test::all_equal(expected, download(ctx(), dc))) << (block_level ? "block-level" : "threads");
  }
}

TEST_P(Tensor, ReshapeAndSlices) {
  const std::size_t n = 6 * 7;
  const auto values = devctx_test::random_vector<std::int32_t>(rng, n + 5, -1000, 1000);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<std::int32_t>(ctx(), n);
  // A slice starting at element 5, passed as a 1-D tensor, reshaped in the kernel to 6 x 7.
  ctx().enqueue_function<reshape_k>(devctx_test::cover(n, 32), devctx::tensor(in.slice(5, n), RowMajor<dyn>(n)),
                                    devctx::tensor(out, RowMajor<dyn>(n)), 7u);
  const auto got = download(ctx(), out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], values[5 + i] * 3) << i;
}

TEST_P(Tensor, LayoutsLargerThanTheirBufferThrowAndEnqueueNothing) {
  auto small = ctx().enqueue_create_buffer<std::int32_t>(4 * 6 * 8 - 1);
  auto out = devctx_test::poisoned_buffer<std::int32_t>(ctx(), 4 * 6 * 8);
  try {
    ctx().enqueue_function<cube_k>({.grid_dim = 1, .block_dim = {8, 6, 4}}, small, out);
    FAIL() << "a buffer smaller than the static layout was accepted";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::size_mismatch);
    EXPECT_NE(std::string(e.what()).find("reaches 192 elements but the memory holds 191"), std::string::npos) << e.what();
  }
  try {
    (void)devctx::tensor(out, Mat(10, 20));
    FAIL() << "a layout larger than its buffer was accepted";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::size_mismatch);
  }
  // Nothing ran: out still holds the poison, and the context works.
  const auto got = download(ctx(), out);
  for (const auto v : got) ASSERT_EQ(v, devctx_test::poison_value<std::int32_t>());
}

TEST_P(Tensor, HostBufferTensors) {
  auto host = ctx().enqueue_create_host_buffer<float>(3 * 4);
  ctx().synchronize();
  auto t = devctx::tensor(host, ColMajor<3, 4>{});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) t(i, j) = float(i * 10 + j);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(host[std::size_t(i + 3 * j)], float(i * 10 + j));
}

// ---- checking mode (CPU backend) ----------------------------------------------------------------------

DEVCTX_KERNEL void read_past_row(LayoutTensor<const float, Mat> in, devctx::span<float> out) {
  const unsigned i = devctx::thread_idx().x;
  out[i] = in(1, i);  // i reaches the row's end + 1 in thread extent(1)
}

TEST_P(Tensor, CheckingModeNamesTheMultiIndex) {
  if (!on_cpu()) GTEST_SKIP() << "checking mode is a CPU backend feature";
  devctx::DeviceContext checked{devctx::Api::cpu, 0, {.check = true}};
  auto in = upload(checked, devctx_test::random_vector<float>(rng, 4 * 5, 0.0f, 1.0f));
  auto out = checked.enqueue_create_buffer<float>(6);
  checked.enqueue_function<read_past_row>({.grid_dim = 1, .block_dim = 6}, devctx::tensor(in, Mat(4, 5)), out);
  try {
    checked.synchronize();
    FAIL() << "an index outside the extents was not reported";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::kernel_failed);
    const std::string m = e.what();
    EXPECT_NE(m.find("tensor index (1, 5) is out of range for extents (4, 5)"), std::string::npos) << m;
    EXPECT_NE(m.find("read_past_row"), std::string::npos) << m;
  }
  // A tile outside the tensor (rows 4-5 of 4), then one inside: the context stays usable.
  checked.enqueue_function<read_tile>({.grid_dim = 1, .block_dim = 10}, devctx::tensor(in, Mat(4, 5)), out.slice(0, 6), 2u);
  try {
    checked.synchronize();
    FAIL() << "a tile outside the tensor was not reported";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::kernel_failed);
    const std::string m = e.what();
    EXPECT_NE(m.find("tensor tile (2, 0) is out of range: the tensor holds (2, 1) whole tiles"), std::string::npos) << m;
  }
  auto out10 = checked.enqueue_create_buffer<float>(10);
  checked.enqueue_function<read_tile>({.grid_dim = 1, .block_dim = 10}, devctx::tensor(in, Mat(4, 5)), out10, 1u);
  const auto got = download(checked, out10);
  const auto want = download(checked, in);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(got[i], want[10 + i]) << i;
}

TEST_P(Tensor, CheckingModeRefusesTileCoordinatesThatWrap) {
  if (!on_cpu()) GTEST_SKIP() << "checking mode is a CPU backend feature";
  devctx::DeviceContext checked{devctx::Api::cpu, 0, {.check = true}};
  const auto values = devctx_test::random_vector<float>(rng, 4 * 5, 0.0f, 1.0f);
  auto in = upload(checked, values);
  auto out = devctx_test::poisoned_buffer<float>(checked, 10);
  // 2^63 * 2 = 2^64 wraps to row 0, inside the tensor: the coordinate itself is out of range.
  checked.enqueue_function<read_tile_at>({.grid_dim = 1, .block_dim = 10}, devctx::tensor(in, Mat(4, 5)), out,
                                         std::uint64_t{1} << 63);
  try {
    checked.synchronize();
    FAIL() << "a tile coordinate that wraps around was not reported";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::kernel_failed);
    const std::string m = e.what();
    EXPECT_NE(m.find("tensor tile (9223372036854775808, 0) is out of range: the tensor holds (2, 1) whole tiles"),
              std::string::npos)
        << m;
  }
  for (const float x : download(checked, out))
    ASSERT_TRUE(devctx_test::same_bits(x, devctx_test::poison_value<float>()));
  checked.enqueue_function<read_tile_at>({.grid_dim = 1, .block_dim = 10}, devctx::tensor(in, Mat(4, 5)), out,
                                         std::uint64_t{1});
  const auto got = download(checked, out);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(got[i], values[10 + i]) << i;
}

}  // namespace
