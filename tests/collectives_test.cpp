// SPDX-License-Identifier: Apache-2.0
// tests/collectives_test.cpp - warp and block collectives (devctx/collectives.hpp), run on every
// backend: every collective against a host reference that combines values in the documented
// order, for every block shape class (full warps, a partial last warp, 1 thread, 1024 threads,
// 2-D and 3-D blocks), with fresh random inputs, poisoned outputs and every element checked
// bit for bit (floating point included: both backends must give identical results).
#include "support/test_support.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using devctx::Dim3;
using devctx::Scan;
using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;

namespace {

template <class T>
struct WarpOut {
  T sum, max, min, incl, excl, bcast, idx, up, down, xr;
  std::uint32_t ballot;
  std::uint32_t lane;
};

template <class T>
struct BlockOut {
  T sum, max, min, incl, excl, bcast0, bcast_last, bcast_none, sum_again;
};

/// The source lane each lane reads with shuffle_idx: lanes read all over the warp.
DEVCTX_DEVICE inline unsigned idx_source(unsigned lane) { return (lane * 7u + 3u) % 32u; }

DEVCTX_DEVICE inline std::uint64_t linear_thread() {
  const Dim3 t = devctx::thread_idx(), bd = devctx::block_dim(), b = devctx::block_idx(), gd = devctx::grid_dim();
  const std::uint64_t block = b.x + std::uint64_t(gd.x) * (b.y + std::uint64_t(gd.y) * b.z);
  return block * bd.volume() + (t.x + bd.x * (t.y + bd.y * t.z));
}

}  // namespace

/// Each lane reads what the next lane of its warp wrote to shared memory before syncwarp().
DEVCTX_KERNEL void warp_syncwarp(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, written, 1024);
  const std::uint64_t g = linear_thread();
  const Dim3 t = devctx::thread_idx(), bd = devctx::block_dim();
  const unsigned rank = t.x + bd.x * (t.y + bd.y * t.z);
  const unsigned threads = bd.x * bd.y * bd.z;
  const unsigned base = rank / 32u * 32u, width = threads - base < 32u ? threads - base : 32u;
  written[rank] = in[g];
  devctx::syncwarp();
  out[g] = written[base + (devctx::lane_id() + 1) % width];
}

template <class T>
DEVCTX_KERNEL void warp_collectives(devctx::span<const T> in, devctx::span<WarpOut<T>> out) {
  const std::uint64_t g = linear_thread();
  const T v = in[g];
  const unsigned lane = devctx::lane_id();
  WarpOut<T> r;
  r.lane = lane;
  r.sum = devctx::warp_sum(v);
  r.max = devctx::warp_max(v);
  r.min = devctx::warp_min(v);
  r.incl = devctx::warp_prefix_sum(v);
  r.excl = devctx::warp_prefix_sum<Scan::exclusive>(v);
  r.bcast = devctx::warp_broadcast(v);
  r.idx = devctx::shuffle_idx(v, idx_source(lane));
  r.up = devctx::shuffle_up(v, 3);
  r.down = devctx::shuffle_down(v, 5);
  r.xr = devctx::shuffle_xor(v, 6);
  r.ballot = devctx::ballot(v > T(0));
  out[g] = r;
}

template <class T>
DEVCTX_KERNEL void block_collectives(devctx::span<const T> in, devctx::span<BlockOut<T>> out) {
  const std::uint64_t g = linear_thread();
  const Dim3 bd = devctx::block_dim();
  const T v = in[g];
  BlockOut<T> r;
  r.sum = devctx::block_sum(v);
  r.max = devctx::block_max(v);
  r.min = devctx::block_min(v);
  r.incl = devctx::block_prefix_sum(v);
  r.excl = devctx::block_prefix_sum<Scan::exclusive>(v);
  r.bcast0 = devctx::block_broadcast(v);
  r.bcast_last = devctx::block_broadcast(v, bd.volume() - 1);
  r.bcast_none = devctx::block_broadcast(v, bd.volume());
  r.sum_again = devctx::block_sum(r.incl);  // back to back with the same shared slots, other values
  out[g] = r;
}

/// The softmax of docs/guide.md, verbatim: one block per row, one element per thread.
DEVCTX_KERNEL void softmax_row(devctx::span<const float> x, devctx::span<float> y) {
  const unsigned t = devctx::thread_idx().x;  // one block per row, one element per thread
  const std::size_t i = std::size_t(devctx::block_idx().x) * devctx::block_dim().x + t;
  const float v = x[i];
  const float m = devctx::block_max(v);  // every thread gets the row's maximum
  const float e = std::exp(v - m);
  y[i] = e / devctx::block_sum(e);
}

namespace {

// ---- host references: the documented combining orders ----------------------------------------------

template <class T>
T op_sum(T a, T b) {
  return devctx::detail::SumOp{}(a, b);
}  // signed integers wrap, as on the GPU
template <class T>
T op_max(T a, T b) {
  return a < b ? b : a;
}
template <class T>
T op_min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
T id_max() {
  if constexpr (std::numeric_limits<T>::has_infinity)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}
template <class T>
T id_min() {
  if constexpr (std::numeric_limits<T>::has_infinity)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}

/// Lane 0's xor butterfly over `width` values, missing lanes holding `identity`.
template <class T, class Op>
T tree(const T* values, unsigned width, T identity, Op op) {
  T v[32];
  for (unsigned i = 0; i < 32; ++i) v[i] = i < width ? values[i] : identity;
  for (unsigned m = 16; m >= 1; m /= 2)
    for (unsigned i = 0; i < m; ++i) v[i] = op(v[i], v[i + m]);
  return v[0];
}

/// The shuffle-up ladder's inclusive prefix sums of `width` values (missing lanes are 0).
template <class T>
std::vector<T> ladder(const T* values, unsigned width) {
  std::vector<T> v(32, T{});
  for (unsigned i = 0; i < width; ++i) v[i] = values[i];
  for (unsigned d = 1; d < 32; d *= 2) {
    std::vector<T> next = v;
    for (unsigned i = d; i < 32; ++i) next[i] = v[i - d] + v[i];
    v = next;
  }
  return v;
}

template <class T>
testing::AssertionResult same(const T& expected, const T& actual, const char* what, std::size_t thread) {
  if (devctx_test::same_bits(expected, actual)) return testing::AssertionSuccess();
  return testing::AssertionFailure() << what << " of thread " << thread << ": " << +actual << ", expected " << +expected;
}

struct Shape {
  Dim3 grid, block;
};

/// Every block shape class: full warps, partial last warps, 1 thread, 1024 threads, 2-D, 3-D.
const Shape kShapes[] = {
    {{3}, {64}},       {{2}, {256}},  {{4}, {33}},         {{3}, {100}},     {{2}, {1000}},
    {{5}, {1}},        {{2}, {1024}}, {{2, 2}, {8, 4, 2}}, {{3}, {7, 5, 3}}, {{2}, {10, 10}},
    {{1, 3}, {16, 6}}, {{2}, {31}},   {{2}, {32, 32}},
};

template <class T>
std::vector<T> random_inputs(std::mt19937_64& rng, std::size_t n) {
  if constexpr (std::is_floating_point_v<T>)
    return devctx_test::random_vector<T>(rng, n, T(-1000), T(1000));
  else
    return devctx_test::random_vector<T>(rng, n, T(-1000000), T(1000000));
}

}  // namespace

class Collectives : public BackendTest {
 protected:
  template <class T>
  void check_warps() {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(testing::Message() << "block (" << s.block.x << "," << s.block.y << "," << s.block.z << ")");
      const unsigned threads = unsigned(s.block.volume());
      const std::size_t total = s.grid.volume() * threads;
      const auto values = random_inputs<T>(rng, total);
      auto in = upload(ctx(), values);
      auto out = ctx().enqueue_create_buffer<WarpOut<T>>(total);
      WarpOut<T> poison;
      std::memset(&poison, 0xA5, sizeof(poison));
      ctx().enqueue_memset(out, poison);
      ctx().enqueue_function<warp_collectives<T>>({.grid_dim = s.grid, .block_dim = s.block}, in, out);
      const auto r = download(ctx(), out);
      for (std::size_t b = 0; b < s.grid.volume(); ++b) {
        for (unsigned base = 0; base < threads; base += 32) {
          const unsigned width = std::min(32u, threads - base);
          const std::size_t first = b * threads + base;
          const T* v = values.data() + first;
          const T sum = tree(v, width, T{}, op_sum<T>);
          const T max = tree(v, width, id_max<T>(), op_max<T>);
          const T min = tree(v, width, id_min<T>(), op_min<T>);
          const auto incl = ladder(v, width);
          std::uint32_t ballot = 0;
          for (unsigned l = 0; l < width; ++l) ballot |= std::uint32_t(v[l] > T(0)) << l;
          for (unsigned l = 0; l < width; ++l) {
            const std::size_t g = first + l;
            const WarpOut<T>& x = r[g];
            ASSERT_EQ(x.lane, l) << "thread " << g;
            ASSERT_TRUE(same(sum, x.sum, "warp_sum", g));
            ASSERT_TRUE(same(max, x.max, "warp_max", g));
            ASSERT_TRUE(same(min, x.min, "warp_min", g));
            ASSERT_TRUE(same(incl[l], x.incl, "warp_prefix_sum", g));
            ASSERT_TRUE(same(l == 0 ? T{} : incl[l - 1], x.excl, "warp_prefix_sum<exclusive>", g));
            ASSERT_TRUE(same(v[0], x.bcast, "warp_broadcast", g));
            const unsigned src = idx_source(l);
            ASSERT_TRUE(same(src < width ? v[src] : v[l], x.idx, "shuffle_idx", g));
            ASSERT_TRUE(same(l >= 3 ? v[l - 3] : v[l], x.up, "shuffle_up", g));
            ASSERT_TRUE(same(l + 5 < width ? v[l + 5] : v[l], x.down, "shuffle_down", g));
            ASSERT_TRUE(same((l ^ 6u) < width ? v[l ^ 6u] : v[l], x.xr, "shuffle_xor", g));
            ASSERT_EQ(x.ballot, ballot) << "ballot, thread " << g;
          }
        }
      }
    }
  }

  template <class T>
  void check_blocks() {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(testing::Message() << "block (" << s.block.x << "," << s.block.y << "," << s.block.z << ")");
      const unsigned threads = unsigned(s.block.volume());
      const unsigned warps = (threads + 31) / 32;
      const std::size_t total = s.grid.volume() * threads;
      const auto values = random_inputs<T>(rng, total);
      auto in = upload(ctx(), values);
      auto out = ctx().enqueue_create_buffer<BlockOut<T>>(total);
      BlockOut<T> poison;
      std::memset(&poison, 0xA5, sizeof(poison));
      ctx().enqueue_memset(out, poison);
      ctx().enqueue_function<block_collectives<T>>({.grid_dim = s.grid, .block_dim = s.block}, in, out);
      const auto r = download(ctx(), out);
      for (std::size_t b = 0; b < s.grid.volume(); ++b) {
        const T* v = values.data() + b * threads;
        // Reductions: per warp, then warp 0 over the warp results.
        auto block_reduce = [&](const T* x, T identity, auto op) {
          T partial[32];
          for (unsigned w = 0; w < warps; ++w)
            partial[w] = tree(x + w * 32, std::min(32u, threads - w * 32), identity, op);
          return tree(partial, warps, identity, op);
        };
        const T sum = block_reduce(v, T{}, op_sum<T>);
        const T max = block_reduce(v, id_max<T>(), op_max<T>);
        const T min = block_reduce(v, id_min<T>(), op_min<T>);
        // Scans: warp ladders, offsets by the exclusive ladder of the warp totals.
        std::vector<T> incl(threads), excl(threads), totals(32, T{});
        std::vector<std::vector<T>> warp_incl(warps);
        for (unsigned w = 0; w < warps; ++w) {
          const unsigned width = std::min(32u, threads - w * 32);
          warp_incl[w] = ladder(v + w * 32, width);
          totals[w] = warp_incl[w][width - 1];
        }
        const auto offsets = ladder(totals.data(), warps);
        for (unsigned i = 0; i < threads; ++i) {
          const unsigned w = i / 32, l = i % 32;
          const T offset = w == 0 ? T{} : offsets[w - 1];
          incl[i] = offset + warp_incl[w][l];
          excl[i] = offset + (l == 0 ? T{} : warp_incl[w][l - 1]);
        }
        const T sum_again = block_reduce(incl.data(), T{}, op_sum<T>);
        for (unsigned i = 0; i < threads; ++i) {
          const std::size_t g = b * threads + i;
          const BlockOut<T>& x = r[g];
          ASSERT_TRUE(same(sum, x.sum, "block_sum", g));
          ASSERT_TRUE(same(max, x.max, "block_max", g));
          ASSERT_TRUE(same(min, x.min, "block_min", g));
          ASSERT_TRUE(same(incl[i], x.incl, "block_prefix_sum", g));
          ASSERT_TRUE(same(excl[i], x.excl, "block_prefix_sum<exclusive>", g));
          ASSERT_TRUE(same(v[0], x.bcast0, "block_broadcast", g));
          ASSERT_TRUE(same(v[threads - 1], x.bcast_last, "block_broadcast(v, last)", g));
          ASSERT_TRUE(same(v[i], x.bcast_none, "block_broadcast(v, out of range)", g));
          ASSERT_TRUE(same(sum_again, x.sum_again, "block_sum after block_sum", g));
        }
      }
    }
  }
};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Collectives);

TEST_P(Collectives, WarpInt) { check_warps<int>(); }
TEST_P(Collectives, SyncwarpOrdersSharedMemoryWithinAWarp) {
  if (ctx().checking())
    GTEST_SKIP() << "checking mode does not yet count syncwarp() as ordering a warp's shared-memory accesses "
                    "(it reports a race)";
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message() << "block (" << s.block.x << "," << s.block.y << "," << s.block.z << ")");
    const unsigned threads = unsigned(s.block.volume());
    const std::size_t total = s.grid.volume() * threads;
    const auto values = random_inputs<int>(rng, total);
    auto in = upload(ctx(), values);
    auto out = devctx_test::poisoned_buffer<int>(ctx(), total);
    ctx().enqueue_function<warp_syncwarp>({.grid_dim = s.grid, .block_dim = s.block}, in, out);
    const auto r = download(ctx(), out);
    for (std::size_t b = 0; b < s.grid.volume(); ++b)
      for (unsigned i = 0; i < threads; ++i) {
        const unsigned base = i / 32 * 32, width = std::min(32u, threads - base);
        ASSERT_EQ(r[b * threads + i], values[b * threads + base + (i % 32 + 1) % width]) << "thread " << b * threads + i;
      }
  }
}
TEST_P(Collectives, WarpFloat) { check_warps<float>(); }
TEST_P(Collectives, WarpDouble) { check_warps<double>(); }
TEST_P(Collectives, WarpInt64) { check_warps<std::int64_t>(); }
TEST_P(Collectives, BlockInt) { check_blocks<int>(); }
TEST_P(Collectives, BlockFloat) { check_blocks<float>(); }
TEST_P(Collectives, BlockDouble) { check_blocks<double>(); }
TEST_P(Collectives, BlockUnsigned64) { check_blocks<std::uint64_t>(); }

/// The results that identical-order combining promises: a float sum over a full warp equals the
/// butterfly's, not the sequential sum (which differs for these values), on every backend.
TEST_P(Collectives, FloatSumFollowsTheButterflyNotTheLoop) {
  std::vector<float> values(32);
  for (unsigned i = 0; i < 32; ++i) values[i] = i % 2 == 0 ? 1e8f : 100.0f;  // the two orders round differently
  auto in = upload(ctx(), values);
  auto out = ctx().enqueue_create_buffer<WarpOut<float>>(32);
  ctx().enqueue_function<warp_collectives<float>>({.grid_dim = 1, .block_dim = 32}, in, out);
  const auto r = download(ctx(), out);
  const float expect = tree(values.data(), 32, 0.0f, op_sum<float>);
  float loop = 0;
  for (float x : values) loop += x;
  EXPECT_NE(expect, loop);  // the test would prove nothing otherwise
  for (unsigned l = 0; l < 32; ++l) EXPECT_EQ(r[l].sum, expect) << l;
}

TEST_P(Collectives, SoftmaxOfTheGuide) {
  for (const unsigned cols : {1u, 45u, 256u, 1000u}) {
    const unsigned rows = 5;
    const auto x = devctx_test::random_vector<float>(rng, std::size_t(rows) * cols, -20.0f, 20.0f);
    auto dx = upload(ctx(), x);
    auto dy = devctx_test::poisoned_buffer<float>(ctx(), x.size());
    ctx().enqueue_function<softmax_row>({.grid_dim = rows, .block_dim = cols}, dx, dy);
    const auto y = download(ctx(), dy);
    std::vector<float> expect(x.size());
    for (unsigned r = 0; r < rows; ++r) {
      double m = -1e300, s = 0;
      for (unsigned c = 0; c < cols; ++c) m = std::max(m, double(x[r * cols + c]));
      for (unsigned c = 0; c < cols; ++c) s += std::exp(double(x[r * cols + c]) - m);
      for (unsigned c = 0; c < cols; ++c) expect[r * cols + c] = float(std::exp(double(x[r * cols + c]) - m) / s);
    }
    EXPECT_TRUE(devctx_test::all_near(expect, y, 1e-5)) << cols << " columns";
  }
}
