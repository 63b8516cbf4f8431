// SPDX-License-Identifier: Apache-2.0
// tests/kernel_test.cpp - the device side, run on every backend: indexing in 3-D, kernel
// arguments, grid-stride loops, barrier-heavy kernels (reductions, scans, tiled matmul, sorting)
// over awkward block sizes, dynamic shared memory, atomics, warp operations, and the
// block-level form (devctx::Block). Inputs are random each run, outputs are poisoned before
// the kernel, and every element is checked against a host reference.
#include "support/test_support.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

using devctx::Dim3;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::poisoned_buffer;
using devctx_test::upload;

namespace {
/// The block sizes every barrier-heavy kernel runs with: 1, one short of a warp, one over,
/// a non-power-of-two multiple of 32, a non-multiple of 32 near the limit, and the limit.
constexpr unsigned kBlockSizes[] = {1, 31, 33, 96, 1000, 1024};
}  // namespace

DEVCTX_DEVICE inline unsigned pow2_ceil(unsigned v) {
  unsigned p = 1;
  while (p < v) p *= 2;
  return p;
}

// ---- indexing ------------------------------------------------------------------------------------

struct IndexRecord {
  Dim3 thread, block, block_dim, grid_dim;
  devctx::Idx3 global;
  unsigned lane;
  unsigned written;
};

DEVCTX_KERNEL void record_indices(devctx::span<IndexRecord> out) {
  const Dim3 t = devctx::thread_idx(), b = devctx::block_idx(), bd = devctx::block_dim(), gd = devctx::grid_dim();
  const devctx::Idx3 g = devctx::global_idx();
  const std::uint64_t width = std::uint64_t(gd.x) * bd.x, height = std::uint64_t(gd.y) * bd.y;
  const std::uint64_t linear = (g.z * height + g.y) * width + g.x;
  IndexRecord r;
  r.thread = t;
  r.block = b;
  r.block_dim = bd;
  r.grid_dim = gd;
  r.global = g;
  r.lane = devctx::lane_id();
  r.written = 1;
  out[linear] = r;
}

// ---- arguments -------------------------------------------------------------------------------------

enum class Mode : std::uint8_t { add = 3, multiply = 7 };

struct Params {
  double scale;
  std::int64_t offset;
  std::uint8_t flag;
  float weights[5];
  Dim3 shape;
  Mode mode;
};

DEVCTX_KERNEL void take_arguments(devctx::span<double> out, Params p, int i32, unsigned u32, std::int64_t i64, float f32,
                                  double f64, char c, bool yes, std::uint16_t u16, devctx::span<const int> view) {
  if (devctx::global_idx().x != 0) return;
  double* o = out.data();
  o[0] = p.scale;
  o[1] = double(p.offset);
  o[2] = p.flag;
  for (int k = 0; k < 5; ++k) o[3 + k] = p.weights[k];
  o[8] = p.shape.x;
  o[9] = p.shape.y;
  o[10] = p.shape.z;
  o[11] = double(static_cast<unsigned>(p.mode));
  o[12] = i32;
  o[13] = u32;
  o[14] = double(i64);
  o[15] = f32;
  o[16] = f64;
  o[17] = c;
  o[18] = yes ? 1.0 : 0.0;
  o[19] = u16;
  o[20] = double(view.size());
  o[21] = view.size() > 0 ? view[view.size() - 1] : -1;
}

/// Reads a const buffer (span<const T>) and writes another; `scale` comes by value.
DEVCTX_KERNEL void scale_copy(devctx::span<const int> in, devctx::span<int> out, int scale) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] * scale;
}

DEVCTX_KERNEL void saxpy_grid_stride(std::uint32_t a, devctx::span<const std::uint32_t> x, devctx::span<std::uint32_t> y) {
  const std::uint64_t stride = std::uint64_t(devctx::grid_dim().x) * devctx::block_dim().x;
  for (std::uint64_t i = devctx::global_idx().x; i < y.size(); i += stride) y[i] = a * x[i] + y[i];
}

DEVCTX_KERNEL void saxpy_float(float a, devctx::span<const float> x, devctx::span<float> y) {
  const std::uint64_t stride = std::uint64_t(devctx::grid_dim().x) * devctx::block_dim().x;
  for (std::uint64_t i = devctx::global_idx().x; i < y.size(); i += stride) y[i] = a * x[i] + y[i];
}

// ---- barrier-heavy kernels ---------------------------------------------------------------------------

/// Block sums of `in`. Threads past the end leave before the first barrier (tail blocks): the
/// others still meet at every barrier. Any block size up to 1024.
// Threads leave at different rounds (exit_after[g] in 1..rounds; rounds means never); the rest go
// on exchanging values through shared memory with two barriers per round. Exited threads no
// longer count at barriers, and their last shared-memory values stay visible.
DEVCTX_KERNEL void staggered_exits(devctx::span<const unsigned> exit_after, devctx::span<unsigned> out, unsigned rounds) {
  DEVCTX_SHARED(unsigned, s, 1024);
  const unsigned n = devctx::block_dim().x * devctx::block_dim().y;
  const unsigned t = devctx::thread_idx().x + devctx::block_dim().x * devctx::thread_idx().y;
  const std::size_t g = std::size_t(devctx::block_idx().x) * n + t;
  unsigned value = t + 1;
  s[t] = value;
  if (exit_after[g] == 0) {  // leaves before the first barrier
    out[g] = value;
    return;
  }
  devctx::barrier();
  for (unsigned r = 1; r < rounds; ++r) {
    if (r == exit_after[g]) {
      out[g] = value;
      return;
    }
    value = value * 3u + s[(t + r) % n];
    devctx::barrier();
    s[t] = value;
    devctx::barrier();
  }
  out[g] = value;
}

DEVCTX_KERNEL void block_reduce(devctx::span<const int> in, devctx::span<long long> out) {
  DEVCTX_SHARED(long long, partial, 1024);
  const unsigned t = devctx::thread_idx().x;
  const auto i = devctx::global_idx().x;
  if (i >= in.size()) return;
  partial[t] = in[i];
  devctx::barrier();
  const std::uint64_t start = std::uint64_t(devctx::block_idx().x) * devctx::block_dim().x;
  const std::uint64_t left = in.size() - start;
  const unsigned active = left < devctx::block_dim().x ? unsigned(left) : devctx::block_dim().x;
  for (unsigned stride = pow2_ceil(active) / 2; stride > 0; stride /= 2) {
    if (t < stride && t + stride < active) partial[t] += partial[t + stride];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = partial[0];
}

/// Inclusive scan of each block's part (Hillis-Steele): two barriers per step.
DEVCTX_KERNEL void block_scan(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, s, 1024);
  const unsigned t = devctx::thread_idx().x;
  const auto i = devctx::global_idx().x;
  const bool valid = i < in.size();
  s[t] = valid ? in[i] : 0;
  devctx::barrier();
  for (unsigned offset = 1; offset < devctx::block_dim().x; offset *= 2) {
    const int add = t >= offset ? s[t - offset] : 0;
    devctx::barrier();
    s[t] += add;
    devctx::barrier();
  }
  if (valid) out[i] = s[t];
}

/// Odd-even transposition sort of each block's part: block_dim barriers inside a loop.
DEVCTX_KERNEL void block_sort(devctx::span<int> data) {
  DEVCTX_SHARED(int, s, 1024);
  const unsigned t = devctx::thread_idx().x, n = devctx::block_dim().x;
  const auto i = devctx::global_idx().x;
  s[t] = i < data.size() ? data[i] : INT_MAX;
  devctx::barrier();
  for (unsigned phase = 0; phase < n; ++phase) {
    const unsigned first = 2 * t + (phase & 1u);
    if (first + 1 < n && s[first] > s[first + 1]) {
      const int tmp = s[first];
      s[first] = s[first + 1];
      s[first + 1] = tmp;
    }
    devctx::barrier();
  }
  if (i < data.size()) data[i] = s[t];
}

constexpr unsigned kTile = 16;

/// C = A (MxK) * B (KxN), tiles in DEVCTX_SHARED arrays, two barriers per tile.
DEVCTX_KERNEL void matmul_tiled(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                unsigned m, unsigned n, unsigned k) {
  DEVCTX_SHARED(float, tile_a, kTile* kTile);
  DEVCTX_SHARED(float, tile_b, kTile* kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < k; k0 += kTile) {
    tile_a[ty * kTile + tx] = (row < m && k0 + tx < k) ? a[std::size_t(row) * k + k0 + tx] : 0.0f;
    tile_b[ty * kTile + tx] = (col < n && k0 + ty < k) ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    devctx::barrier();
    for (unsigned kk = 0; kk < kTile; ++kk) acc += tile_a[ty * kTile + kk] * tile_b[kk * kTile + tx];
    devctx::barrier();
  }
  if (row < m && col < n) c[std::size_t(row) * n + col] = acc;
}

/// Block sums through dynamic shared memory, with a static DEVCTX_SHARED array alongside it
/// (the two must not overlap). Reports the dynamic span's size and whether the static array
/// survived.
DEVCTX_KERNEL void dynamic_reduce(devctx::span<const unsigned> in, devctx::span<unsigned> sums,
                                  devctx::span<unsigned> dyn_sizes, devctx::span<unsigned> marker_ok) {
  const devctx::span<unsigned> s = devctx::dynamic_shared<unsigned>();
  DEVCTX_SHARED(unsigned, marker, 32);
  const unsigned t = devctx::thread_idx().x, n = devctx::block_dim().x;
  const auto i = devctx::global_idx().x;
  if (t < 32) marker[t] = 0xC0FFEE00u + t;
  for (unsigned j = t; j < s.size(); j += n) s[j] = 0xFFFFFFFFu;  // all of it is writable
  devctx::barrier();
  s[t] = i < in.size() ? in[i] : 0u;
  devctx::barrier();
  for (unsigned stride = pow2_ceil(n) / 2; stride > 0; stride /= 2) {
    if (t < stride && t + stride < n) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) {
    const unsigned b = devctx::block_idx().x;
    sums[b] = s[0];
    dyn_sizes[b] = unsigned(s.size());
    unsigned ok = 1;
    for (unsigned j = 0; j < 32 && j < n; ++j) ok &= marker[j] == 0xC0FFEE00u + j ? 1u : 0u;
    marker_ok[b] = ok;
  }
}

// ---- atomics ---------------------------------------------------------------------------------------

DEVCTX_KERNEL void histogram(devctx::span<const unsigned> values, devctx::span<const int> weights,
                             devctx::span<unsigned> counts, devctx::span<int> weighted) {
  const std::uint64_t stride = std::uint64_t(devctx::grid_dim().x) * devctx::block_dim().x;
  for (std::uint64_t i = devctx::global_idx().x; i < values.size(); i += stride) {
    const unsigned bin = values[i] % counts.size();
    devctx::atomic_add(&counts[bin], 1u);
    devctx::atomic_add(&weighted[bin], weights[i]);
  }
}

DEVCTX_KERNEL void atomic_sums(devctx::span<const float> f, devctx::span<const double> d, devctx::span<float> fsum,
                               devctx::span<double> dsum) {
  const auto i = devctx::global_idx().x;
  if (i < f.size()) devctx::atomic_add(&fsum[0], f[i]);
  if (i < d.size()) devctx::atomic_add(&dsum[0], d[i]);
}

/// atomic_add returns the old value: every thread draws a distinct ticket.
DEVCTX_KERNEL void take_tickets(devctx::span<unsigned> counter, devctx::span<unsigned> tickets,
                                devctx::span<int> extremes, devctx::span<const int> values) {
  const auto i = devctx::global_idx().x;
  if (i >= tickets.size()) return;
  tickets[i] = devctx::atomic_add(&counter[0], 1u);
  devctx::atomic_max(&extremes[0], values[i]);
  devctx::atomic_min(&extremes[1], values[i]);
  // A CAS-based increment of one more counter.
  unsigned* c = &counter[1];
  unsigned old = devctx::atomic_add(c, 0u);
  for (;;) {
    const unsigned seen = devctx::atomic_cas(c, old, old + 2u);
    if (seen == old) break;
    old = seen;
  }
}

// ---- warp operations ---------------------------------------------------------------------------------

struct WarpResults {
  int sum;
  int down;       // shuffle_down reduction (the full sum in lane 0)
  int butterfly;  // shuffle_xor reduction (the full sum in every lane)
  int scan;       // shuffle_up inclusive scan
  int reversed;   // shuffle(v, 31 - lane)
  int from7;      // shuffle(v, 7)
  unsigned lane;
  float fsum;
};

DEVCTX_KERNEL void warp_ops(devctx::span<const int> in, devctx::span<WarpResults> out) {
  const Dim3 t = devctx::thread_idx(), bd = devctx::block_dim(), b = devctx::block_idx(), gd = devctx::grid_dim();
  const unsigned rank = t.x + bd.x * (t.y + bd.y * t.z);
  const std::uint64_t block = b.x + std::uint64_t(gd.x) * (b.y + std::uint64_t(gd.y) * b.z);
  const std::uint64_t g = block * bd.volume() + rank;
  const int v = in[g];
  const unsigned lane = devctx::lane_id();
  WarpResults r;
  r.lane = lane;
  r.sum = devctx::warp_sum(v);
  int down = v;
  for (unsigned d = 16; d > 0; d /= 2) down += devctx::shuffle_down(down, d);
  r.down = down;
  int fly = v;
  for (unsigned m = 1; m < 32; m *= 2) fly += devctx::shuffle_xor(fly, m);
  r.butterfly = fly;
  int scan = v;
  for (unsigned d = 1; d < 32; d *= 2) {
    const int up = devctx::shuffle_up(scan, d);
    if (lane >= d) scan += up;
  }
  r.scan = scan;
  r.reversed = devctx::shuffle(v, 31u - lane);
  r.from7 = devctx::shuffle(v, 7u);
  r.fsum = devctx::warp_sum(float(v));
  out[g] = r;
}

/// Block sums by warp shuffles, then a barrier and one warp over the partial sums.
DEVCTX_KERNEL void warp_block_reduce(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, warp_totals, 32);
  const unsigned t = devctx::thread_idx().x;
  const auto i = devctx::global_idx().x;
  int v = i < in.size() ? in[i] : 0;
  for (unsigned d = 16; d > 0; d /= 2) v += devctx::shuffle_down(v, d);
  if (devctx::lane_id() == 0) warp_totals[t / 32] = v;
  devctx::barrier();
  const unsigned warps = devctx::block_dim().x / 32;
  if (t < 32) {
    int w = t < warps ? warp_totals[t] : 0;
    w = devctx::warp_sum(w);
    if (t == 0) out[devctx::block_idx().x] = w;
  }
}

// ---- the block-level form --------------------------------------------------------------------------

DEVCTX_KERNEL void blk_reduce(devctx::Block blk, devctx::span<const int> in, devctx::span<long long> out) {
  DEVCTX_SHARED(long long, s, 1024);
  const unsigned n = blk.size();
  blk.for_each_thread([&](devctx::Thread t) {
    const auto i = blk.global_idx(t).x;
    s[t.rank] = i < in.size() ? in[i] : 0;
  });
  for (unsigned stride = pow2_ceil(n) / 2; stride > 0; stride /= 2)
    blk.for_each_thread([&](devctx::Thread t) {
      if (t.rank < stride && t.rank + stride < n) s[t.rank] += s[t.rank + stride];
    });
  blk.for_each_thread([&](devctx::Thread t) {
    if (t.rank == 0) out[blk.idx().x] = s[0];
  });
}

DEVCTX_KERNEL void blk_scan(devctx::Block blk, devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, s, 1024);
  auto carry = blk.per_thread<int>(0);
  blk.for_each_thread([&](devctx::Thread t) {
    const auto i = blk.global_idx(t).x;
    s[t.rank] = i < in.size() ? in[i] : 0;
  });
  for (unsigned offset = 1; offset < blk.size(); offset *= 2) {
    blk.for_each_thread([&](devctx::Thread t) { carry[t] = t.rank >= offset ? s[t.rank - offset] : 0; });
    blk.for_each_thread([&](devctx::Thread t) { s[t.rank] += carry[t]; });
  }
  blk.for_each_thread([&](devctx::Thread t) {
    const auto i = blk.global_idx(t).x;
    if (i < in.size()) out[i] = s[t.rank];
  });
}

DEVCTX_KERNEL void blk_matmul(devctx::Block blk, devctx::span<const float> a, devctx::span<const float> b,
                              devctx::span<float> c, unsigned m, unsigned n, unsigned k) {
  DEVCTX_SHARED(float, tile_a, kTile* kTile);
  DEVCTX_SHARED(float, tile_b, kTile* kTile);
  auto acc = blk.per_thread<float>(0.0f);
  const unsigned row0 = blk.idx().y * kTile, col0 = blk.idx().x * kTile;
  for (unsigned k0 = 0; k0 < k; k0 += kTile) {
    blk.for_each_thread([&](devctx::Thread t) {
      const unsigned row = row0 + t.y, col = col0 + t.x;
      tile_a[t.y * kTile + t.x] = (row < m && k0 + t.x < k) ? a[std::size_t(row) * k + k0 + t.x] : 0.0f;
      tile_b[t.y * kTile + t.x] = (col < n && k0 + t.y < k) ? b[std::size_t(k0 + t.y) * n + col] : 0.0f;
    });
    blk.for_each_thread([&](devctx::Thread t) {
      float sum = acc[t];
      for (unsigned kk = 0; kk < kTile; ++kk) sum += tile_a[t.y * kTile + kk] * tile_b[kk * kTile + t.x];
      acc[t] = sum;
    });
  }
  blk.for_each_thread([&](devctx::Thread t) {
    const unsigned row = row0 + t.y, col = col0 + t.x;
    if (row < m && col < n) c[std::size_t(row) * n + col] = acc[t];
  });
}

/// The same reduction with the phases that say what they mean: the tree steps visit only the
/// first `stride` threads, and one thread writes the result.
DEVCTX_KERNEL void blk_reduce_first(devctx::Block blk, devctx::span<const int> in, devctx::span<long long> out) {
  DEVCTX_SHARED(long long, s, 1024);
  const std::size_t n = blk.size();
  blk.for_each_thread([&](devctx::Thread t) {
    const auto i = blk.idx().x * n + t.rank;
    s[t.rank] = i < in.size() ? in[i] : 0;
  });
  for (std::size_t stride = pow2_ceil(unsigned(n)) / 2; stride > 0; stride /= 2)
    blk.for_first_threads(stride, [&](devctx::Thread t) {
      if (t.rank + stride < n) s[t.rank] += s[t.rank + stride];
    });
  blk.single([&] { out[blk.idx().x] = s[0]; });
}

/// Marks which threads each phase form visits: for_first_threads(count) must visit exactly the
/// ranks below `count`, single() exactly once per block.
DEVCTX_KERNEL void blk_visits(devctx::Block blk, devctx::span<unsigned> marks, unsigned count) {
  const std::size_t base = std::size_t(blk.idx().x) * (blk.size() + 1);
  blk.for_each_thread([&](devctx::Thread t) { marks[base + t.rank] = 0; });
  blk.single([&] { marks[base + blk.size()] = 0; });
  blk.for_first_threads(count, [&](devctx::Thread t) {
    const devctx::Dim3 d = blk.dim();
    marks[base + t.rank] += 1 + (t.rank == t.x + d.x * (t.y + std::size_t(d.y) * t.z) ? 0 : 100);
  });
  blk.single([&] { marks[base + blk.size()] += 1; });
}

/// The Thread a phase receives agrees with thread_idx(), and Block's accessors with the launch.
DEVCTX_KERNEL void blk_indices(devctx::Block blk, devctx::span<unsigned> out) {
  blk.for_each_thread([&](devctx::Thread t) {
    const devctx::Idx3 g = blk.global_idx(t);
    const Dim3 gd = blk.grid(), bd = blk.dim();
    const std::uint64_t width = std::uint64_t(gd.x) * bd.x, height = std::uint64_t(gd.y) * bd.y;
    const std::uint64_t linear = (g.z * height + g.y) * width + g.x;
    const Dim3 ti = devctx::thread_idx(), bi = devctx::block_idx();
    const bool agree = ti.x == t.x && ti.y == t.y && ti.z == t.z && bi.x == blk.idx().x && bi.y == blk.idx().y &&
                       bi.z == blk.idx().z && devctx::block_dim().x == bd.x && devctx::grid_dim().z == gd.z &&
                       devctx::global_idx().x == g.x && devctx::global_idx().z == g.z;
    unsigned* o = out.data() + linear * 4;
    o[0] = t.rank;
    o[1] = t.x + 1000u * t.y + 1000000u * t.z;
    o[2] = blk.size();
    o[3] = agree ? 1u : 0u;
  });
}

// =====================================================================================================

class Indexing : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Indexing);

TEST_P(Indexing, ThreeDimensionalGridsAndBlocks) {
  const std::pair<Dim3, Dim3> shapes[] = {
      {{3, 2, 2}, {4, 3, 5}},  // 60 threads a block: a partial last warp
      {{2, 3, 4}, {8, 4, 2}}, {{5}, {33}},   {{1, 1, 7}, {1, 1, 64}}, {{70'000}, {1}},  // grid x above 65535
      {{2, 300}, {3}},        {{1}, {1024}}, {{2, 2}, {32, 32}},
  };
  for (const auto& [grid, block] : shapes) {
    SCOPED_TRACE(testing::Message() << "grid (" << grid.x << "," << grid.y << "," << grid.z << ") block (" << block.x
                                    << "," << block.y << "," << block.z << ")");
    const std::size_t total = grid.volume() * block.volume();
    auto out = ctx().enqueue_create_buffer<IndexRecord>(total);
    ctx().enqueue_memset(out, IndexRecord{{0xDEAD, 0xBEEF, 1}, {7, 7, 7}, {0, 0, 0}, {0, 0, 0}, {1, 2, 3}, 99, 0});
    ctx().enqueue_function<record_indices>({.grid_dim = grid, .block_dim = block}, out);
    const auto v = download(ctx(), out);
    const std::uint64_t width = std::uint64_t(grid.x) * block.x, height = std::uint64_t(grid.y) * block.y;
    std::size_t checked = 0;
    for (unsigned bz = 0; bz < grid.z; ++bz)
      for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx)
          for (unsigned tz = 0; tz < block.z; ++tz)
            for (unsigned ty = 0; ty < block.y; ++ty)
              for (unsigned tx = 0; tx < block.x; ++tx) {
                const devctx::Idx3 g{std::uint64_t(bx) * block.x + tx, std::uint64_t(by) * block.y + ty,
                                     std::uint64_t(bz) * block.z + tz};
                const IndexRecord& r = v[(g.z * height + g.y) * width + g.x];
                ASSERT_EQ(r.written, 1u) << "thread " << tx << "," << ty << "," << tz << " of block " << bx << "," << by
                                         << "," << bz << " never ran";
                ASSERT_EQ(r.thread, (Dim3{tx, ty, tz}));
                ASSERT_EQ(r.block, (Dim3{bx, by, bz}));
                ASSERT_EQ(r.block_dim, block);
                ASSERT_EQ(r.grid_dim, grid);
                ASSERT_EQ(r.global, g);
                ASSERT_EQ(r.lane, (tx + block.x * (ty + block.y * tz)) % 32u);
                ++checked;
              }
    EXPECT_EQ(checked, total);
  }
  static_assert(sizeof(devctx::global_idx().x) == 8, "global_idx() is 64-bit");
}

class Arguments : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Arguments);

TEST_P(Arguments, ScalarsStructsAndSpansByValue) {
  std::uniform_int_distribution<int> small(-1000, 1000);
  Params p{};
  p.scale = small(rng) / 8.0;
  p.offset = -(std::int64_t{1} << 40) + small(rng);
  p.flag = std::uint8_t(small(rng) & 0xFF);
  for (float& w : p.weights) w = float(small(rng)) / 4.0f;
  p.shape = {unsigned(small(rng) + 1000), 2, 3};
  p.mode = Mode::multiply;
  const int i32 = small(rng) * 100000;
  const unsigned u32 = 4'000'000'000u;
  const std::int64_t i64 = (std::int64_t{1} << 50) + 3;
  const float f32 = float(small(rng)) / 16.0f;
  const double f64 = double(small(rng)) / 1024.0;
  const auto ints = devctx_test::random_vector<int>(rng, 17, -50, 50);
  auto view_buf = upload(ctx(), ints);
  auto out = poisoned_buffer<double>(ctx(), 22);
  ctx().enqueue_function<take_arguments>({.grid_dim = 2, .block_dim = 3}, out, p, i32, u32, i64, f32, f64, 'x', true,
                                         std::uint16_t(65535), view_buf.span());
  const auto v = download(ctx(), out);
  const std::vector<double> expect = {p.scale,
                                      double(p.offset),
                                      double(p.flag),
                                      p.weights[0],
                                      p.weights[1],
                                      p.weights[2],
                                      p.weights[3],
                                      p.weights[4],
                                      double(p.shape.x),
                                      2.0,
                                      3.0,
                                      7.0,
                                      double(i32),
                                      double(u32),
                                      double(i64),
                                      f32,
                                      f64,
                                      double('x'),
                                      1.0,
                                      65535.0,
                                      17.0,
                                      double(ints[16])};
  EXPECT_TRUE(devctx_test::all_equal(expect, v));
}

TEST_P(Arguments, ConstBuffersAndSlicesBecomeReadOnlySpans) {
  const std::size_t n = 10'007;
  const auto values = devctx_test::random_vector<int>(rng, n, -100000, 100000);
  const devctx::DeviceBuffer<int> in = upload(ctx(), values);
  auto out = poisoned_buffer<int>(ctx(), n);
  ctx().enqueue_function<scale_copy>(cover(n), in, out, -3);  // const buffer -> span<const int>
  auto v = download(ctx(), out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], values[i] * -3) << i;
  auto out2 = poisoned_buffer<int>(ctx(), 100);
  ctx().enqueue_function<scale_copy>(cover(100), in.slice(500, 100), out2, 2);  // DeviceSlice<const int>
  v = download(ctx(), out2);
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(v[i], values[500 + i] * 2) << i;
  auto mutable_in = upload(ctx(), values);
  ctx().enqueue_function<scale_copy>(cover(n), mutable_in, mutable_in, 5);  // non-const to const: fine
  v = download(ctx(), mutable_in);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], values[i] * 5) << i;
}

TEST_P(Arguments, GridStrideLoops) {
  for (const auto& [grid, block, n] :
       {std::tuple{7u, 33u, std::size_t{100'003}}, std::tuple{1u, 1u, std::size_t{5000}},
        std::tuple{3u, 1024u, std::size_t{1'000'000}}, std::tuple{500u, 96u, std::size_t{10}}}) {
    SCOPED_TRACE(testing::Message() << "grid " << grid << " block " << block << " n " << n);
    const auto x = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 0xFFFFFFFFu);
    const auto y = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 0xFFFFFFFFu);
    const std::uint32_t a = std::uint32_t(rng());
    auto dx = upload(ctx(), x);
    auto dy = upload(ctx(), y);
    ctx().enqueue_function<saxpy_grid_stride>({.grid_dim = grid, .block_dim = block}, a, dx, dy);
    const auto v = download(ctx(), dy);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], a * x[i] + y[i]) << i;
  }
  const std::size_t n = 77'777;
  const auto x = devctx_test::random_vector<float>(rng, n, -1.0f, 1.0f);
  const auto y = devctx_test::random_vector<float>(rng, n, -1.0f, 1.0f);
  auto dx = upload(ctx(), x);
  auto dy = upload(ctx(), y);
  ctx().enqueue_function<saxpy_float>({.grid_dim = 13, .block_dim = 128}, 2.5f, dx, dy);
  std::vector<float> expect(n);
  for (std::size_t i = 0; i < n; ++i) expect[i] = 2.5f * x[i] + y[i];
  EXPECT_TRUE(devctx_test::all_near(expect, download(ctx(), dy), 1e-6));
}

class Barriers : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Barriers);

namespace {
/// Runs `Kernel`, a sum of each block's ints (in, out) into a long long per block, over random
/// values for every block size in kBlockSizes with a partial last block (its tail threads exit
/// early), and checks every sum.
template <auto Kernel>
void check_block_sums(devctx::DeviceContext& ctx, std::mt19937_64& rng) {
  for (const unsigned bd : kBlockSizes) {
    const std::size_t n = std::size_t(bd) * 5 + bd / 2 + 1;  // the last block is partial
    SCOPED_TRACE(testing::Message() << "block " << bd << ", n " << n);
    const auto values = devctx_test::random_vector<int>(rng, n, -1'000'000, 1'000'000);
    auto in = upload(ctx, values);
    const unsigned blocks = unsigned((n + bd - 1) / bd);
    auto out = poisoned_buffer<long long>(ctx, blocks);
    ctx.enqueue_function<Kernel>({.grid_dim = blocks, .block_dim = bd}, in, out);
    std::vector<long long> expect(blocks, 0);
    for (std::size_t i = 0; i < n; ++i) expect[i / bd] += values[i];
    ASSERT_TRUE(devctx_test::all_equal(expect, download(ctx, out)));
  }
}
}  // namespace

TEST_P(Barriers, BlockReductionWithEarlyExitingTailThreads) { check_block_sums<block_reduce>(ctx(), rng); }

TEST_P(Barriers, ThreadsExitingAtDifferentRoundsLeaveTheRestRunning) {
  // Exercises the CPU scheduler's ring: exited fibers skipped, fibers started late, one thread
  // left alone, 2-D blocks, and many launches in a row (barrier generations carry over). With
  // 100 blocks every CPU worker runs several blocks in a row, so fibers parked at the end of one
  // block start the next, including after blocks in which no thread reached a barrier. Threads
  // that leave after taking part in a barrier while the rest go on are barrier divergence to
  // checking mode (docs/checking.md), so this test of the CUDA semantics runs unchecked.
  // Under TSan 12 blocks: each of CI's 2 workers still runs several blocks in a row.
  devctx::DeviceContext unchecked{api(), 0, {.check = false}};
  const unsigned rounds = 9;
  struct Shape {
    unsigned x, y;
  };
  const unsigned blocks = devctx_test::kUnderTsan ? 12 : 100;
  for (const Shape shape : {Shape{1, 1}, Shape{33, 1}, Shape{256, 1}, Shape{16, 8}, Shape{1024, 1}}) {
    const unsigned n = shape.x * shape.y;
    for (const int pattern : {4, 5, 0, 1, 2, 3}) {  // 4 first: fibers that never ran with this shape
      SCOPED_TRACE(testing::Message() << "block " << shape.x << "x" << shape.y << ", pattern " << pattern);
      std::vector<unsigned> exit_after(std::size_t(n) * blocks);
      std::uniform_int_distribution<unsigned> round(1, rounds);
      for (std::size_t g = 0; g < exit_after.size(); ++g) {
        const unsigned t = unsigned(g % n), b = unsigned(g / n);
        switch (pattern) {
          case 0: exit_after[g] = round(rng); break;                         // random
          case 1: exit_after[g] = t == n / 2 ? rounds : 1; break;            // all but one leave at once
          case 2: exit_after[g] = t % 2 == 0 ? 2 + t % 5 : rounds; break;    // every other thread, staggered
          case 3: exit_after[g] = rounds - (t % rounds); break;              // thread 0 never leaves
          case 4: exit_after[g] = t < (b * 37) % n ? 0 : round(rng); break;  // a block-dependent head leaves at once
          default: exit_after[g] = b % 3 == 1 ? 0 : round(rng); break;       // every third block reaches no barrier
        }
      }
      // Host model of the kernel.
      std::vector<unsigned> expect(exit_after.size());
      for (unsigned b = 0; b < blocks; ++b) {
        std::vector<unsigned> value(n), s(n);
        std::vector<bool> live(n);
        for (unsigned t = 0; t < n; ++t) {
          s[t] = value[t] = t + 1;
          live[t] = exit_after[std::size_t(b) * n + t] != 0;
        }
        for (unsigned r = 1; r < rounds; ++r) {
          for (unsigned t = 0; t < n; ++t)
            if (live[t] && exit_after[std::size_t(b) * n + t] == r) live[t] = false;
          for (unsigned t = 0; t < n; ++t)
            if (live[t]) value[t] = value[t] * 3u + s[(t + r) % n];
          for (unsigned t = 0; t < n; ++t)
            if (live[t]) s[t] = value[t];
        }
        for (unsigned t = 0; t < n; ++t) expect[std::size_t(b) * n + t] = value[t];
      }
      auto d_exit = upload(unchecked, exit_after);
      auto out = poisoned_buffer<unsigned>(unchecked, exit_after.size());
      unchecked.enqueue_function<staggered_exits>({.grid_dim = blocks, .block_dim = {shape.x, shape.y}}, d_exit, out,
                                                  rounds);
      ASSERT_TRUE(devctx_test::all_equal(expect, download(unchecked, out)));
    }
  }
}

namespace {
/// Runs `Kernel`, an inclusive scan of each block's elements (in, out), over random ints for
/// every block size in kBlockSizes with a partial last block, and checks every element.
template <auto Kernel>
void check_block_scans(devctx::DeviceContext& ctx, std::mt19937_64& rng) {
  for (const unsigned bd : kBlockSizes) {
    const std::size_t n = std::size_t(bd) * 3 + bd / 3 + 1;
    SCOPED_TRACE(testing::Message() << "block " << bd << ", n " << n);
    const auto values = devctx_test::random_vector<int>(rng, n, -1000, 1000);
    auto in = upload(ctx, values);
    auto out = poisoned_buffer<int>(ctx, n);
    ctx.enqueue_function<Kernel>(cover(n, bd), in, out);
    std::vector<int> expect(n);
    for (std::size_t i = 0; i < n; ++i) expect[i] = values[i] + (i % bd == 0 ? 0 : expect[i - 1]);
    ASSERT_TRUE(devctx_test::all_equal(expect, download(ctx, out)));
  }
}
}  // namespace

TEST_P(Barriers, InclusiveScanInSharedMemory) { check_block_scans<block_scan>(ctx(), rng); }

TEST_P(Barriers, OddEvenSortWithABarrierPerPhase) {
  // A block of bd threads sorts in bd phases: bd * bd fiber switches. Under TSan the largest
  // block is left out (kUnderTsan).
  for (const unsigned bd : {33u, 256u, 1000u}) {
    if (devctx_test::kUnderTsan && bd > 256) continue;
    const std::size_t n = std::size_t(bd) * 2 + 17;
    SCOPED_TRACE(testing::Message() << "block " << bd << ", n " << n);
    auto values = devctx_test::random_vector<int>(rng, n, -50, 50);  // many duplicates
    auto data = upload(ctx(), values);
    ctx().enqueue_function<block_sort>(cover(n, bd), data);
    for (std::size_t b = 0; b < n; b += bd)
      std::sort(values.begin() + std::ptrdiff_t(b), values.begin() + std::ptrdiff_t(std::min(n, b + bd)));
    ASSERT_TRUE(devctx_test::all_equal(values, download(ctx(), data)));
  }
}

namespace {
std::vector<float> matmul_reference(const std::vector<float>& a, const std::vector<float>& b, unsigned m, unsigned n,
                                    unsigned k) {
  std::vector<float> c(std::size_t(m) * n, 0.0f);
  for (unsigned i = 0; i < m; ++i)
    for (unsigned j = 0; j < n; ++j) {
      double s = 0;
      for (unsigned kk = 0; kk < k; ++kk) s += double(a[std::size_t(i) * k + kk]) * b[std::size_t(kk) * n + j];
      c[std::size_t(i) * n + j] = float(s);
    }
  return c;
}
using MatmulShape = std::tuple<unsigned, unsigned, unsigned>;  // m, n, k

/// Multiplies random small-integer matrices of each shape (every sum is exact, whatever the
/// order of additions) with `Kernel`, a tiled matmul taking (a, b, c, m, n, k) launched over
/// kTile x kTile blocks, and checks every element against the host reference.
template <auto Kernel>
void check_tiled_matmul(devctx::DeviceContext& ctx, std::mt19937_64& rng, std::initializer_list<MatmulShape> shapes) {
  for (const auto& [m, n, k] : shapes) {
    SCOPED_TRACE(testing::Message() << m << "x" << k << " * " << k << "x" << n);
    const auto a = devctx_test::random_small_ints<float>(rng, std::size_t(m) * k, -8, 8);
    const auto b = devctx_test::random_small_ints<float>(rng, std::size_t(k) * n, -8, 8);
    auto da = upload(ctx, a);
    auto db = upload(ctx, b);
    auto dc = poisoned_buffer<float>(ctx, std::size_t(m) * n);
    const Dim3 grid{(n + kTile - 1) / kTile, (m + kTile - 1) / kTile};
    ctx.enqueue_function<Kernel>({.grid_dim = grid, .block_dim = {kTile, kTile}}, da, db, dc, m, n, k);
    ASSERT_TRUE(devctx_test::all_equal(matmul_reference(a, b, m, n, k), download(ctx, dc)));
  }
}
}  // namespace

TEST_P(Barriers, TiledMatmulWithSharedTiles) {
  check_tiled_matmul<matmul_tiled>(ctx(), rng, {{37u, 45u, 29u}, {64u, 64u, 64u}, {1u, 17u, 100u}, {90u, 3u, 1u}});
}

TEST_P(Barriers, DynamicSharedMemoryBesideStaticShared) {
  for (const unsigned bd : {1u, 33u, 128u, 1000u}) {
    const std::size_t extra = 12;  // not a multiple of the block: the span covers all bytes given
    const std::size_t shared_bytes = bd * sizeof(unsigned) + extra;
    const std::size_t n = std::size_t(bd) * 4 - 3;
    SCOPED_TRACE(testing::Message() << "block " << bd << ", shared_bytes " << shared_bytes);
    const auto values = devctx_test::random_vector<unsigned>(rng, n, 0, 1u << 20);
    auto in = upload(ctx(), values);
    const unsigned blocks = unsigned((n + bd - 1) / bd);
    auto sums = poisoned_buffer<unsigned>(ctx(), blocks);
    auto sizes = poisoned_buffer<unsigned>(ctx(), blocks);
    auto ok = poisoned_buffer<unsigned>(ctx(), blocks);
    ctx().enqueue_function<dynamic_reduce>(cover(n, bd, shared_bytes), in, sums, sizes, ok);
    std::vector<unsigned> expect(blocks, 0);
    for (std::size_t i = 0; i < n; ++i) expect[i / bd] += values[i];
    ASSERT_TRUE(devctx_test::all_equal(expect, download(ctx(), sums)));
    ASSERT_TRUE(devctx_test::all_equal(std::vector<unsigned>(blocks, unsigned(shared_bytes / sizeof(unsigned))),
                                       download(ctx(), sizes)));
    ASSERT_TRUE(devctx_test::all_equal(std::vector<unsigned>(blocks, 1u), download(ctx(), ok)))
        << "the dynamic shared memory overlapped a DEVCTX_SHARED array";
  }
}

class Atomics : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Atomics);

TEST_P(Atomics, HistogramUnsignedAndInt) {
  const std::size_t n = 300'007;
  const unsigned bins = 61;
  const auto values = devctx_test::random_vector<unsigned>(rng, n, 0, 0xFFFFFFFFu);
  const auto weights = devctx_test::random_vector<int>(rng, n, -100, 100);
  auto dv = upload(ctx(), values);
  auto dw = upload(ctx(), weights);
  auto counts = ctx().enqueue_create_buffer<unsigned>(bins);
  auto weighted = ctx().enqueue_create_buffer<int>(bins);
  ctx().enqueue_memset(counts, 0u);
  ctx().enqueue_memset(weighted, 0);
  ctx().enqueue_function<histogram>({.grid_dim = 40, .block_dim = 256}, dv, dw, counts, weighted);
  std::vector<unsigned> expect_counts(bins, 0);
  std::vector<int> expect_weighted(bins, 0);
  for (std::size_t i = 0; i < n; ++i) {
    ++expect_counts[values[i] % bins];
    expect_weighted[values[i] % bins] += weights[i];
  }
  EXPECT_TRUE(devctx_test::all_equal(expect_counts, download(ctx(), counts)));
  EXPECT_TRUE(devctx_test::all_equal(expect_weighted, download(ctx(), weighted)));
}

TEST_P(Atomics, FloatAndDoubleSums) {
  const std::size_t n = 200'003;
  // Integers (floats) and halves (doubles): exact sums in any order of additions.
  const auto f = devctx_test::random_small_ints<float>(rng, n, -4, 4);
  auto d = devctx_test::random_small_ints<double>(rng, n, -1000, 1000);
  for (auto& x : d) x /= 2;
  auto df = upload(ctx(), f);
  auto dd = upload(ctx(), d);
  auto fsum = ctx().enqueue_create_buffer<float>(1);
  auto dsum = ctx().enqueue_create_buffer<double>(1);
  ctx().enqueue_memset(fsum, 0.0f);
  ctx().enqueue_memset(dsum, 0.0);
  ctx().enqueue_function<atomic_sums>(cover(n, 128), df, dd, fsum, dsum);
  EXPECT_EQ(download(ctx(), fsum)[0], std::accumulate(f.begin(), f.end(), 0.0f));
  EXPECT_EQ(download(ctx(), dsum)[0], std::accumulate(d.begin(), d.end(), 0.0));
}

TEST_P(Atomics, OldValuesMinMaxAndCas) {
  const std::size_t n = 50'001;
  const auto values = devctx_test::random_vector<int>(rng, n, -1'000'000'000, 1'000'000'000);
  auto dv = upload(ctx(), values);
  auto counter = ctx().enqueue_create_buffer<unsigned>(2);
  ctx().enqueue_memset(counter, 0u);
  auto tickets = poisoned_buffer<unsigned>(ctx(), n);
  auto extremes = upload<int>(ctx(), {INT_MIN, INT_MAX});
  ctx().enqueue_function<take_tickets>(cover(n, 64), counter, tickets, extremes, dv);
  auto t = download(ctx(), tickets);
  std::sort(t.begin(), t.end());
  std::vector<unsigned> expect(n);
  std::iota(expect.begin(), expect.end(), 0u);
  EXPECT_TRUE(devctx_test::all_equal(expect, t)) << "atomic_add's old values are not a permutation";
  EXPECT_TRUE(devctx_test::all_equal({unsigned(n), unsigned(2 * n)}, download(ctx(), counter)));
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  EXPECT_TRUE(devctx_test::all_equal({*hi, *lo}, download(ctx(), extremes)));
}

class Warps : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Warps);

TEST_P(Warps, SumsShufflesAndScans) {
  const std::pair<Dim3, Dim3> shapes[] = {{{3}, {32}},         {{2}, {64}},          {{2}, {1024}},
                                          {{2, 2}, {8, 4, 2}}, {{1, 1, 3}, {16, 6}}, {{5}, {96}},
                                          {{100}, {96}},       {{33, 2}, {8, 4, 2}}};  // many blocks per CPU worker
  for (const auto& [grid, block] : shapes) {
    SCOPED_TRACE(testing::Message() << "block (" << block.x << "," << block.y << "," << block.z << ")");
    const std::size_t total = grid.volume() * block.volume();
    ASSERT_EQ(total % 32, 0u);
    const auto values = devctx_test::random_vector<int>(rng, total, -10000, 10000);
    auto in = upload(ctx(), values);
    auto out = ctx().enqueue_create_buffer<WarpResults>(total);
    ctx().enqueue_memset(out, WarpResults{INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, 99u,
                                          std::numeric_limits<float>::quiet_NaN()});
    ctx().enqueue_function<warp_ops>({.grid_dim = grid, .block_dim = block}, in, out);
    const auto r = download(ctx(), out);
    for (std::size_t w = 0; w < total / 32; ++w) {
      const int* v = values.data() + w * 32;
      int sum = 0;
      for (int l = 0; l < 32; ++l) sum += v[l];
      // shuffle_down as the hardware does it: a lane reading past the warp keeps its own value.
      int down[32];
      std::copy(v, v + 32, down);
      for (unsigned d = 16; d > 0; d /= 2) {
        int next[32];
        for (unsigned l = 0; l < 32; ++l) next[l] = down[l] + (l + d < 32 ? down[l + d] : down[l]);
        std::copy(next, next + 32, down);
      }
      int scan = 0;
      for (unsigned l = 0; l < 32; ++l) {
        const WarpResults& x = r[w * 32 + l];
        scan += v[l];
        ASSERT_EQ(x.lane, l) << "warp " << w;
        ASSERT_EQ(x.sum, sum) << "warp_sum, warp " << w << " lane " << l;
        ASSERT_EQ(x.fsum, float(sum)) << "warp_sum(float), warp " << w << " lane " << l;
        ASSERT_EQ(x.down, down[l]) << "shuffle_down, warp " << w << " lane " << l;
        ASSERT_EQ(x.butterfly, sum) << "shuffle_xor, warp " << w << " lane " << l;
        ASSERT_EQ(x.scan, scan) << "shuffle_up scan, warp " << w << " lane " << l;
        ASSERT_EQ(x.reversed, v[31 - l]) << "shuffle, warp " << w << " lane " << l;
        ASSERT_EQ(x.from7, v[7]) << "shuffle(v, 7), warp " << w << " lane " << l;
      }
    }
  }
}

TEST_P(Warps, BlockReductionFromWarpShufflesAndBarriers) {
  for (const unsigned bd : {32u, 96u, 256u, 1024u}) {
    const std::size_t n = std::size_t(bd) * 7 - 5;
    SCOPED_TRACE(testing::Message() << "block " << bd);
    const auto values = devctx_test::random_vector<int>(rng, n, -10000, 10000);
    auto in = upload(ctx(), values);
    const unsigned blocks = unsigned((n + bd - 1) / bd);
    auto out = poisoned_buffer<int>(ctx(), blocks);
    ctx().enqueue_function<warp_block_reduce>({.grid_dim = blocks, .block_dim = bd}, in, out);
    std::vector<int> expect(blocks, 0);
    for (std::size_t i = 0; i < n; ++i) expect[i / bd] += values[i];
    ASSERT_TRUE(devctx_test::all_equal(expect, download(ctx(), out)));
  }
}

class BlockLevel : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(BlockLevel);

TEST_P(BlockLevel, Reduction) { check_block_sums<blk_reduce>(ctx(), rng); }

TEST_P(BlockLevel, ReductionWithFirstThreadsAndSingle) { check_block_sums<blk_reduce_first>(ctx(), rng); }

TEST_P(BlockLevel, FirstThreadsVisitExactlyTheLowRanks) {
  for (const Dim3 block : {Dim3{256}, Dim3{33}, Dim3{5, 4, 3}, Dim3{16, 16}}) {
    const unsigned size = unsigned(block.volume());
    for (const unsigned count : {0u, 1u, 7u, size / 2, size - 1, size, size + 10}) {
      SCOPED_TRACE(testing::Message() << "block " << block.x << "x" << block.y << "x" << block.z << ", count " << count);
      const unsigned blocks = 3;
      auto marks = poisoned_buffer<unsigned>(ctx(), std::size_t(blocks) * (size + 1));
      ctx().enqueue_function<blk_visits>({.grid_dim = blocks, .block_dim = block}, marks, count);
      std::vector<unsigned> expect;
      for (unsigned b = 0; b < blocks; ++b) {
        for (unsigned r = 0; r < size; ++r) expect.push_back(r < count ? 1u : 0u);
        expect.push_back(1u);
      }
      ASSERT_TRUE(devctx_test::all_equal(expect, download(ctx(), marks)));
    }
  }
}

TEST_P(BlockLevel, InclusiveScanWithPerThreadValues) { check_block_scans<blk_scan>(ctx(), rng); }

TEST_P(BlockLevel, TiledMatmul) {
  check_tiled_matmul<blk_matmul>(ctx(), rng, {{37u, 45u, 29u}, {64u, 64u, 64u}, {5u, 70u, 33u}});
}

TEST_P(BlockLevel, ThreadsAndIndicesIn3D) {
  const Dim3 grid{2, 3, 2}, block{5, 4, 3};
  const std::size_t total = grid.volume() * block.volume();
  auto out = poisoned_buffer<unsigned>(ctx(), total * 4);
  ctx().enqueue_function<blk_indices>({.grid_dim = grid, .block_dim = block}, out);
  const auto v = download(ctx(), out);
  const std::uint64_t width = std::uint64_t(grid.x) * block.x, height = std::uint64_t(grid.y) * block.y;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) {
              const std::uint64_t gx = std::uint64_t(bx) * block.x + tx, gy = std::uint64_t(by) * block.y + ty,
                                  gz = std::uint64_t(bz) * block.z + tz;
              const unsigned* o = v.data() + ((gz * height + gy) * width + gx) * 4;
              ASSERT_EQ(o[0], tx + block.x * (ty + block.y * tz)) << "rank";
              ASSERT_EQ(o[1], tx + 1000u * ty + 1000000u * tz) << "x, y, z";
              ASSERT_EQ(o[2], unsigned(block.volume())) << "size()";
              ASSERT_EQ(o[3], 1u) << "thread_idx()/block_idx()/global_idx() disagree with the phase's Thread";
            }
}
