// SPDX-License-Identifier: Apache-2.0
// tests/fission_test.cpp - the CPU backend's offer protocol for translated kernels
// (docs/cpu-backend.md, "Translated kernels"): the CUDA-style K2 (block reduction) and K3 (tiled
// matmul) of bench/cpu/devctx_rows.cpp with block-level twins written by hand as the fission
// translator writes them, checked bitwise against the same kernels on fibers; unchecked launches
// run the twin, checked launches and DEVCTX_CPU_FISSION=0 never do.
#include <gtest/gtest.h>

#include <devctx/devctx.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr unsigned kReduceBlock = 256;
constexpr unsigned kTile = 16;

/// Blocks run by a twin (instrumentation of this test's hand-written twins only).
std::atomic<unsigned> twin_blocks{0};

// ---- K2, as on fibers: the kernel as a user writes it ----------------------------------------
DEVCTX_KERNEL void block_reduce_fibers(devctx::span<const float> in, devctx::span<float> sums) {
  DEVCTX_SHARED(float, s, kReduceBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) sums[devctx::block_idx().x] = s[0];
}

// ---- K2 with its twin, as the translator writes them -----------------------------------------
#if !defined(__CUDA_ARCH__)
inline void block_reduce__devctx_twin(devctx::span<const float> in, devctx::span<float> sums) {
  namespace fission = ::devctx::detail::cpu::fission;
  twin_blocks.fetch_add(1, std::memory_order_relaxed);
  const std::size_t devctx_bx = ::devctx::detail::cpu::tls.block_dim.x;
  DEVCTX_SHARED(float, s, kReduceBlock);
  fission::threads(0, devctx_bx, [&](std::size_t) {
    const unsigned t = devctx::thread_idx().x;
    const std::size_t i = devctx::global_idx().x;
    s[t] = i < in.size() ? in[i] : 0.0f;
  });
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    fission::threads(0, fission::lt_end<unsigned>(stride, devctx_bx), [&](std::size_t) {
      const unsigned t = devctx::thread_idx().x;
      s[t] += s[t + stride];
    });
  }
  const std::size_t devctx_x0 = fission::eq_begin<unsigned>(0, devctx_bx);
  fission::threads(devctx_x0, devctx_x0 + 1, [&](std::size_t) { sums[devctx::block_idx().x] = s[0]; });
}
#endif

DEVCTX_KERNEL void block_reduce(devctx::span<const float> in, devctx::span<float> sums) {
#if !defined(__CUDA_ARCH__)
  if (::devctx::detail::cpu::take_fission_offer(&block_reduce)) [[unlikely]] {
    block_reduce__devctx_twin(in, sums);
    return;
  }
#endif
  DEVCTX_SHARED(float, s, kReduceBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) sums[devctx::block_idx().x] = s[0];
}

// ---- K3, as on fibers ------------------------------------------------------------------------
DEVCTX_KERNEL void matmul_fibers(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                 unsigned n) {
  DEVCTX_SHARED(float, as, kTile* kTile);
  DEVCTX_SHARED(float, bs, kTile* kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
    bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    devctx::barrier();
    for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
    devctx::barrier();
  }
  if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
}

// ---- K3 with its twin: `acc` lives across barriers in a per-thread array ----------------------
#if !defined(__CUDA_ARCH__)
inline void matmul__devctx_twin(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                unsigned n) {
  namespace fission = ::devctx::detail::cpu::fission;
  twin_blocks.fetch_add(1, std::memory_order_relaxed);
  const std::size_t devctx_bx = ::devctx::detail::cpu::tls.block_dim.x;
  DEVCTX_SHARED(float, as, kTile* kTile);
  DEVCTX_SHARED(float, bs, kTile* kTile);
  float* const devctx_pt_acc = fission::per_thread<float>();
  fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
    float acc = 0.0f;
    devctx_pt_acc[devctx_rank] = acc;
  });
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    fission::threads(0, devctx_bx, [&](std::size_t) {
      [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
      [[maybe_unused]] const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
      as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
      bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    });
    fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
      [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
      float acc = devctx_pt_acc[devctx_rank];
      for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
      devctx_pt_acc[devctx_rank] = acc;
    });
  }
  fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
    [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
    [[maybe_unused]] const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
    float acc = devctx_pt_acc[devctx_rank];
    if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
  });
}
#endif

DEVCTX_KERNEL void matmul(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c, unsigned n) {
#if !defined(__CUDA_ARCH__)
  if (::devctx::detail::cpu::take_fission_offer(&matmul)) [[unlikely]] {
    matmul__devctx_twin(a, b, c, n);
    return;
  }
#endif
  DEVCTX_SHARED(float, as, kTile* kTile);
  DEVCTX_SHARED(float, bs, kTile* kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
    bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    devctx::barrier();
    for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
    devctx::barrier();
  }
  if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
}

// ---- a declined kernel: its prologue only says why -------------------------------------------
DEVCTX_KERNEL void declined(devctx::span<unsigned> out) {
#if !defined(__CUDA_ARCH__)
  ::devctx::detail::cpu::decline_fission_offer(&declined, "a test's reason");
#endif
  DEVCTX_SHARED(unsigned, s, 64);
  const unsigned t = devctx::thread_idx().x;
  s[t] = t * 7u;
  devctx::barrier();
  out[std::size_t(devctx::block_idx().x) * 64 + t] = s[63 - t];
}

// ---- patterns the translator handles, written as a user writes them (no hand-written twins) ----
// Each runs with twins on and off (DEVCTX_CPU_FISSION=0) and the results are compared bitwise;
// the trace must say "translated" wherever the translator ran on this file.

DEVCTX_DEVICE inline unsigned pow2_ceil(unsigned v) {
  unsigned p = 1;
  while (p < v) p *= 2;
  return p;
}

/// Early return before a later barrier (the exited mask), a uniform local computed by a helper.
DEVCTX_KERNEL void early_exit_reduce(devctx::span<const int> in, devctx::span<long long> out) {
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

/// Threads leave at different rounds of a loop with barriers (2-D blocks).
DEVCTX_KERNEL void staggered_exits(devctx::span<const unsigned> exit_after, devctx::span<unsigned> out, unsigned rounds) {
  DEVCTX_SHARED(unsigned, s, 1024);
  const unsigned n = devctx::block_dim().x * devctx::block_dim().y;
  const unsigned t = devctx::thread_idx().x + devctx::block_dim().x * devctx::thread_idx().y;
  const std::size_t g = std::size_t(devctx::block_idx().x) * n + t;
  unsigned value = t + 1;
  s[t] = value;
  if (exit_after[g] == 0) {
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

/// Barriers inside an if whose condition is the same for the whole block (a parameter, the block
/// index), with an else branch.
DEVCTX_KERNEL void uniform_if(devctx::span<const float> in, devctx::span<float> out, unsigned reverse) {
  DEVCTX_SHARED(float, s, 256);
  const unsigned t = devctx::thread_idx().x;
  const unsigned n = devctx::block_dim().x;
  const std::size_t base = std::size_t(devctx::block_idx().x) * n;
  s[t] = in[base + t];
  devctx::barrier();
  if (reverse != 0 && devctx::block_idx().x % 2 == 0) {
    const float v = s[n - 1 - t];
    devctx::barrier();
    s[t] = v * 2.0f;
    devctx::barrier();
  } else {
    const float v = s[(t + 1) % n];
    devctx::barrier();
    s[t] = v + 1.0f;
    devctx::barrier();
  }
  out[base + t] = s[t] - s[(t + 3) % n];
}

/// Inclusive scan of each block (Hillis-Steele): two barriers per step.
DEVCTX_KERNEL void hillis_steele(devctx::span<const int> in, devctx::span<int> out) {
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

/// Exclusive scan of each block of 256 (Blelloch): up-sweep, clear, down-sweep.
DEVCTX_KERNEL void blelloch(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, s, 512);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t base = std::size_t(devctx::block_idx().x) * 512;
  s[2 * t] = base + 2 * t < in.size() ? in[base + 2 * t] : 0;
  s[2 * t + 1] = base + 2 * t + 1 < in.size() ? in[base + 2 * t + 1] : 0;
  unsigned offset = 1;
  for (unsigned d = 256; d > 0; d /= 2) {
    devctx::barrier();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      s[bi] += s[ai];
    }
    offset *= 2;
  }
  if (t == 0) s[511] = 0;
  for (unsigned d = 1; d < 512; d *= 2) {
    offset /= 2;
    devctx::barrier();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      const int x = s[ai];
      s[ai] = s[bi];
      s[bi] += x;
    }
  }
  devctx::barrier();
  if (base + 2 * t < out.size()) out[base + 2 * t] = s[2 * t];
  if (base + 2 * t + 1 < out.size()) out[base + 2 * t + 1] = s[2 * t + 1];
}

constexpr unsigned kT = 32;

/// Tiled transpose through shared memory (2-D blocks of 32 x 8, padded tile).
DEVCTX_KERNEL void transpose(devctx::span<const float> in, devctx::span<float> out, unsigned w, unsigned h) {
  DEVCTX_SHARED(float, tile, kT*(kT + 1));
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned x = devctx::block_idx().x * kT + tx;
  const unsigned y0 = devctx::block_idx().y * kT + ty;
  for (unsigned j = 0; j < kT; j += 8)
    if (x < w && y0 + j < h) tile[(ty + j) * (kT + 1) + tx] = in[std::size_t(y0 + j) * w + x];
  devctx::barrier();
  const unsigned ox = devctx::block_idx().y * kT + tx;
  const unsigned oy0 = devctx::block_idx().x * kT + ty;
  for (unsigned j = 0; j < kT; j += 8)
    if (ox < h && oy0 + j < w) out[std::size_t(oy0 + j) * h + ox] = tile[tx * (kT + 1) + ty + j];
}

/// A histogram of 64 bins in shared memory with atomics, merged into the global one.
DEVCTX_KERNEL void histogram(devctx::span<const unsigned> in, devctx::span<unsigned> hist) {
  DEVCTX_SHARED(unsigned, bins, 64);
  const unsigned t = devctx::thread_idx().x;
  for (unsigned j = t; j < 64; j += devctx::block_dim().x) bins[j] = 0;
  devctx::barrier();
  const std::size_t stride = std::size_t(devctx::grid_dim().x) * devctx::block_dim().x;
  for (std::size_t i = devctx::global_idx().x; i < in.size(); i += stride) devctx::atomic_add(&bins[in[i] % 64], 1u);
  devctx::barrier();
  for (unsigned j = t; j < 64; j += devctx::block_dim().x) devctx::atomic_add(&hist[j], bins[j]);
}

/// A template kernel: each specialization gets its own twin.
template <unsigned TPB, class T>
DEVCTX_KERNEL void template_reduce(devctx::span<const T> in, devctx::span<T> out) {
  DEVCTX_SHARED(T, cache, TPB);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = std::size_t(devctx::block_idx().x) * TPB + t;
  cache[t] = i < in.size() ? in[i] : T(0);
  devctx::barrier();
  for (unsigned half = TPB / 2; half > 0; half /= 2) {
    if (t < half) cache[t] += cache[t + half];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = cache[0];
}

// ---- warp operations and block collectives (translated since issue 26's second step) -----------

/// The linear index of the thread in its block and the block's thread count.
DEVCTX_DEVICE unsigned linear_thread() {
  const devctx::Dim3 t = devctx::thread_idx(), d = devctx::block_dim();
  return t.x + d.x * (t.y + d.y * t.z);
}

constexpr unsigned kBlockOuts = 9;

/// Every block collective at block-uniform points, one after another.
DEVCTX_KERNEL void block_collectives(devctx::span<const float> in, devctx::span<float> out, devctx::span<int> iout,
                                     unsigned src) {
  const unsigned n = devctx::block_dim().x * devctx::block_dim().y * devctx::block_dim().z;
  const unsigned r = linear_thread();
  const std::size_t g = std::size_t(devctx::block_idx().x) * n + r;
  const float x = in[g];
  const int k = int(x * 1000.0f);
  const float sum = devctx::block_sum(x);
  const float mx = devctx::block_max(x);
  float mn = devctx::block_min(x * 2.0f);
  const float incl = devctx::block_prefix_sum(x);
  const float excl = devctx::block_prefix_sum<devctx::Scan::exclusive>(x);
  const float from = devctx::block_broadcast(x, src);
  const float first = devctx::block_broadcast(x + 1.0f);
  mn += devctx::block_sum(x * x);
  const int isum = devctx::block_sum(k);
  const int iscan = devctx::block_prefix_sum<devctx::Scan::exclusive>(k);
  const float values[kBlockOuts] = {sum, mx, mn, incl, excl, from, first, float(isum), float(iscan)};
  for (unsigned j = 0; j < kBlockOuts; ++j) out[g * kBlockOuts + j] = values[j];
  iout[2 * g] = isum;
  iout[2 * g + 1] = iscan;
}

constexpr unsigned kWarpOuts = 14;

/// Every warp operation at block-uniform points (shuffles with per-thread sources, partial warps).
DEVCTX_KERNEL void warp_collectives(devctx::span<const int> in, devctx::span<int> out, unsigned delta) {
  DEVCTX_SHARED(int, s, 1024);
  const unsigned n = devctx::block_dim().x * devctx::block_dim().y * devctx::block_dim().z;
  const unsigned r = linear_thread();
  const unsigned lane = devctx::lane_id();
  const std::size_t g = std::size_t(devctx::block_idx().x) * n + r;
  int v = in[g];
  const int a = devctx::shuffle(v, lane * 7 + 3);
  const int b = devctx::shuffle_down(v, delta);
  const int c = devctx::shuffle_up(v, lane % 5);
  const int d = devctx::shuffle_xor(v, lane % 3 == 0 ? 33u : 5u);
  const int e = devctx::warp_sum(v);
  const int f = devctx::warp_max(v);
  const int h = devctx::warp_min(v);
  const int p = devctx::warp_prefix_sum(v);
  const int q = devctx::warp_prefix_sum<devctx::Scan::exclusive>(v);
  const unsigned bits = devctx::ballot(v > 0);
  const int w = devctx::warp_broadcast(v - 1);
  s[r] = v;
  devctx::syncwarp();
  const int neighbour = s[(r ^ 1u) < n ? r ^ 1u : r];
  const float fs = devctx::warp_sum(float(v) * 0.37f);
  for (unsigned m = 16; m > 0; m /= 2) v += devctx::shuffle_xor(v, m);
  const int values[kWarpOuts] = {a, b, c, d, e, f, h, p, q, int(bits), w, neighbour, v, std::bit_cast<int>(fs)};
  for (unsigned j = 0; j < kWarpOuts; ++j) out[g * kWarpOuts + j] = values[j];
}

/// The two-level warp-shuffle reduction (1-D blocks): lane 0 of each warp writes its warp's sum,
/// then warp 0 reduces those under `if (warp == 0)`.
DEVCTX_KERNEL void two_level_reduce(devctx::span<const float> in, devctx::span<float> out) {
  DEVCTX_SHARED(float, partial, 32);
  const unsigned t = devctx::thread_idx().x;
  const unsigned lane = t % 32, warp = t / 32;
  const unsigned warps = (devctx::block_dim().x + 31) / 32;
  const std::size_t i = std::size_t(devctx::block_idx().x) * devctx::block_dim().x + t;
  float v = i < in.size() ? in[i] : 0.0f;
  for (unsigned offset = 16; offset > 0; offset /= 2) v += devctx::shuffle_down(v, offset);
  if (lane == 0) partial[warp] = v;
  devctx::barrier();
  if (warp == 0) {
    v = lane < warps ? partial[lane] : 0.0f;
    for (unsigned offset = 16; offset > 0; offset /= 2) v += devctx::shuffle_down(v, offset);
    if (lane == 0) out[devctx::block_idx().x] = v;
  }
}

/// A warp operation under a condition on x / 32: warp-uniform in 1-D blocks and in blocks whose
/// x is a multiple of 32, which the twin checks when the block is offered (else fibers).
DEVCTX_KERNEL void warp_if_rows(devctx::span<const int> in, devctx::span<int> out) {
  const unsigned n = devctx::block_dim().x * devctx::block_dim().y * devctx::block_dim().z;
  const std::size_t g = std::size_t(devctx::block_idx().x) * n + linear_thread();
  int v = in[g];
  if (devctx::thread_idx().x / 32 == 1) {
    v = devctx::warp_sum(v) + devctx::lane_id();
  }
  out[g] = v;
}

/// A row softmax with the block collectives (examples/05_softmax's kernel with devctx's
/// block_max / block_sum in place of its own helpers).
DEVCTX_KERNEL void softmax_collectives(devctx::span<const float> logits, devctx::span<float> probs, unsigned cols) {
  const std::size_t row = std::size_t(devctx::block_idx().x) * cols;
  const unsigned t = devctx::thread_idx().x;
  float m = -INFINITY;
  for (unsigned c = t; c < cols; c += devctx::block_dim().x) m = std::fmax(m, logits[row + c]);
  m = devctx::block_max(m);
  float sum = 0.0f;
  for (unsigned c = t; c < cols; c += devctx::block_dim().x) {
    const float e = std::exp(logits[row + c] - m);
    probs[row + c] = e;
    sum += e;
  }
  sum = devctx::block_sum(sum);
  const float inv = 1.0f / sum;
  for (unsigned c = t; c < cols; c += devctx::block_dim().x) probs[row + c] *= inv;
}

/// examples/05_softmax's kernel verbatim, with its own helpers (barriers and warp operations in
/// helpers: the translator inlines them into the twin).
constexpr unsigned kSoftmaxThreads = 256;
constexpr unsigned kSoftmaxWarps = kSoftmaxThreads / devctx::warp_size;

DEVCTX_DEVICE float softmax_warp_max(float v) {
  for (unsigned mask = devctx::warp_size / 2; mask > 0; mask /= 2) v = std::fmax(v, devctx::shuffle_xor(v, mask));
  return v;
}

DEVCTX_DEVICE float softmax_block_max(float v, float* partial) {
  const unsigned lane = devctx::lane_id(), warp = devctx::thread_idx().x / devctx::warp_size;
  v = softmax_warp_max(v);
  if (lane == 0) partial[warp] = v;
  devctx::barrier();
  v = softmax_warp_max(lane < kSoftmaxWarps ? partial[lane] : -INFINITY);
  devctx::barrier();
  return v;
}

DEVCTX_DEVICE float softmax_block_sum(float v, float* partial) {
  const unsigned lane = devctx::lane_id(), warp = devctx::thread_idx().x / devctx::warp_size;
  v = devctx::warp_sum(v);
  if (lane == 0) partial[warp] = v;
  devctx::barrier();
  v = devctx::warp_sum(lane < kSoftmaxWarps ? partial[lane] : 0.0f);
  devctx::barrier();
  return v;
}

DEVCTX_KERNEL void softmax_helpers(devctx::span<const float> logits, devctx::span<float> probs, unsigned cols) {
  DEVCTX_SHARED(float, partial, kSoftmaxWarps);
  const std::size_t row_start = std::size_t(devctx::block_idx().x) * cols;
  const auto x = logits.subspan(row_start, cols);
  const auto y = probs.subspan(row_start, cols);
  const unsigned t = devctx::thread_idx().x;

  float m = -INFINITY;
  for (unsigned c = t; c < cols; c += kSoftmaxThreads) m = std::fmax(m, x[c]);
  m = softmax_block_max(m, partial);

  float sum = 0.0f;
  for (unsigned c = t; c < cols; c += kSoftmaxThreads) {
    const float e = std::exp(x[c] - m);
    y[c] = e;
    sum += e;
  }
  sum = softmax_block_sum(sum, partial);

  const float inv = 1.0f / sum;
  for (unsigned c = t; c < cols; c += kSoftmaxThreads) y[c] *= inv;
}

std::vector<float> random_floats(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

template <class T>
std::vector<T> download(devctx::DeviceContext& ctx, const devctx::DeviceBuffer<T>& buffer) {
  std::vector<T> host(buffer.size());
  ctx.enqueue_copy(std::span(host), buffer);
  ctx.synchronize();
  return host;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

/// Whether the environment variable `name` is set to a true value ("1", "on", ...).
bool env_on(const char* name, bool otherwise) {
  const char* v = std::getenv(name);
  if (v == nullptr) return otherwise;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return !(s == "0" || s == "false" || s == "no" || s == "off");
}

/// Whether the environment leaves twins on (the whole suite also runs with DEVCTX_CPU_FISSION=0;
/// under DEVCTX_CHECK=1 every launch is checked, and checked launches never run twins).
bool twins_on() { return env_on("DEVCTX_CPU_FISSION", true) && !env_on("DEVCTX_CHECK", false); }

/// K2 over `n` random floats: the twin's sums, the fibers' sums, and how many blocks the twin ran.
struct K2Run {
  std::vector<float> twin, fibers;
  unsigned twin_blocks = 0;
};
K2Run run_k2(devctx::DeviceContext& ctx, std::mt19937_64& rng, std::size_t n) {
  const unsigned blocks = unsigned((n + kReduceBlock - 1) / kReduceBlock);
  auto in = ctx.enqueue_create_buffer<float>(n);
  {
    const auto values = random_floats(rng, n);
    ctx.enqueue_copy(in, std::span(values));
  }
  auto twin = ctx.enqueue_create_buffer<float>(blocks);
  auto fibers = ctx.enqueue_create_buffer<float>(blocks);
  ctx.enqueue_memset(twin, -7.0f);
  ctx.enqueue_memset(fibers, -9.0f);
  ctx.synchronize();
  twin_blocks = 0;
  ctx.enqueue_function<block_reduce>({.grid_dim = blocks, .block_dim = kReduceBlock}, in, twin);
  ctx.synchronize();
  K2Run run;
  run.twin_blocks = twin_blocks.load();
  {
    // The reference on fibers (the fission translator, when it ran on this file, gave
    // block_reduce_fibers a twin too).
    const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
    ctx.enqueue_function<block_reduce_fibers>({.grid_dim = blocks, .block_dim = kReduceBlock}, in, fibers);
  }
  run.twin = download(ctx, twin);
  run.fibers = download(ctx, fibers);
  return run;
}

}  // namespace

TEST(Fission, HandWrittenReductionTwinIsBitwiseEqualToFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{256 * 37 + 19}, std::size_t{1} << 18}) {
    SCOPED_TRACE(n);
    const K2Run run = run_k2(ctx, rng, n);
    EXPECT_EQ(run.twin_blocks, twins_on() ? run.twin.size() : 0);  // every block ran the twin
    EXPECT_TRUE(bitwise_equal(run.twin, run.fibers));
  }
}

TEST(Fission, HandWrittenMatmulTwinIsBitwiseEqualToFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const unsigned n : {1u, 15u, 16u, 70u, 128u}) {
    SCOPED_TRACE(n);
    const std::size_t count = std::size_t(n) * n;
    auto a = ctx.enqueue_create_buffer<float>(count);
    auto b = ctx.enqueue_create_buffer<float>(count);
    {
      const auto values = random_floats(rng, count);
      ctx.enqueue_copy(a, std::span(values));
    }
    {
      const auto values = random_floats(rng, count);
      ctx.enqueue_copy(b, std::span(values));
    }
    auto twin = ctx.enqueue_create_buffer<float>(count);
    auto fibers = ctx.enqueue_create_buffer<float>(count);
    ctx.enqueue_memset(twin, -7.0f);
    ctx.enqueue_memset(fibers, -9.0f);
    const unsigned tiles = (n + kTile - 1) / kTile;
    const devctx::LaunchConfig cfg{.grid_dim = {tiles, tiles}, .block_dim = {kTile, kTile}};
    ctx.synchronize();
    twin_blocks = 0;
    ctx.enqueue_function<matmul>(cfg, a, b, twin, n);
    ctx.synchronize();
    EXPECT_EQ(twin_blocks.load(), twins_on() ? tiles * tiles : 0);
    {
      const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
      ctx.enqueue_function<matmul_fibers>(cfg, a, b, fibers, n);
    }
    const auto t = download(ctx, twin), f = download(ctx, fibers);
    EXPECT_TRUE(bitwise_equal(t, f));
    // And against the host, in the same order of additions. Within rounding, not bitwise: where
    // the compiler contracts a * b + c into one fused multiply-add (GCC does by default on
    // AArch64), the kernels and this loop may round differently; twin and fibers above agree bitwise.
    const auto ha = download(ctx, a), hb = download(ctx, b);
    for (unsigned r = 0; r < n; ++r)
      for (unsigned col = 0; col < n; ++col) {
        double acc = 0.0, magnitude = 0.0;
        for (unsigned k = 0; k < n; ++k) {
          const double p = double(ha[std::size_t(r) * n + k]) * double(hb[std::size_t(k) * n + col]);
          acc += p;
          magnitude += p < 0 ? -p : p;
        }
        ASSERT_NEAR(t[std::size_t(r) * n + col], acc, 1e-6 * (magnitude + 1.0) * n) << r << ", " << col;
      }
  }
}

TEST(Fission, OffTurnsTwinsOffAtRunTime) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
  const K2Run run = run_k2(ctx, rng, 256 * 9 + 3);
  EXPECT_EQ(run.twin_blocks, 0u);
  EXPECT_TRUE(bitwise_equal(run.twin, run.fibers));
}

TEST(Fission, MalformedSettingThrowsAndQueuesNothing) {
  if (env_on("DEVCTX_CHECK", false)) GTEST_SKIP() << "DEVCTX_CHECK=1: checked launches do not read DEVCTX_CPU_FISSION";
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto in = ctx.enqueue_create_buffer<float>(256);
  auto out = ctx.enqueue_create_buffer<float>(1);
  const ScopedEnv bad("DEVCTX_CPU_FISSION", "maybe");
  try {
    ctx.enqueue_function<block_reduce>({.grid_dim = 1, .block_dim = kReduceBlock}, in, out);
    FAIL() << "no error";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("DEVCTX_CPU_FISSION"), std::string::npos) << e.what();
  }
  ctx.synchronize();
}

TEST(Fission, CheckedLaunchesNeverRunTwins) {
  devctx::DeviceContext ctx{devctx::Api::cpu, 0, {.check = true}};
  std::mt19937_64 rng(std::random_device{}());
  const K2Run run = run_k2(ctx, rng, 256 * 5);
  EXPECT_EQ(run.twin_blocks, 0u);
  EXPECT_TRUE(bitwise_equal(run.twin, run.fibers));
}

TEST(Fission, DeclinedKernelRunsOnFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto out = ctx.enqueue_create_buffer<unsigned>(64 * 5);
  ctx.enqueue_memset(out, 0xdeadbeefu);
  ctx.enqueue_function<declined>({.grid_dim = 5, .block_dim = 64}, out);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], (63 - i % 64) * 7u) << i;
}

namespace {
/// The execution path devctx::trace recorded for each kernel launched while recording.
std::vector<std::pair<std::string, std::string>> recorded_paths() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const devctx::trace::Operation& op : devctx::trace::operations())
    if (op.kind == devctx::trace::Kind::kernel) out.emplace_back(op.name, op.execution);
  return out;
}
}  // namespace

TEST(Fission, TraceRecordsTranslatedOrWhyFibers) {
  if (env_on("DEVCTX_CHECK", false)) GTEST_SKIP() << "DEVCTX_CHECK=1: every launch is checked, none runs a twin";
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto in = ctx.enqueue_create_buffer<float>(256 * 3);
  auto sums = ctx.enqueue_create_buffer<float>(3);
  auto out = ctx.enqueue_create_buffer<unsigned>(64 * 2);
  ctx.enqueue_memset(in, 1.0f);
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  ctx.enqueue_function<block_reduce>({.grid_dim = 3, .block_dim = kReduceBlock}, in, sums);
  ctx.enqueue_function<declined>({.grid_dim = 2, .block_dim = 64}, out);
  ctx.enqueue_function<block_reduce_fibers>({.grid_dim = 3, .block_dim = kReduceBlock}, in, sums);
  {
    const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
    ctx.enqueue_function<block_reduce>({.grid_dim = 3, .block_dim = kReduceBlock}, in, sums);
  }
  ctx.synchronize();
  const auto paths = recorded_paths();
  devctx::trace::stop();
  devctx::trace::clear();
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_NE(paths[0].first.find("block_reduce"), std::string::npos) << paths[0].first;
  if (twins_on()) {
    EXPECT_EQ(paths[0].second.rfind("translated: the kernel's block-level twin ran every block", 0), 0u) << paths[0].second;
  } else {
    EXPECT_NE(paths[0].second.find("fibers: DEVCTX_CPU_FISSION=0 turned translated twins off"), std::string::npos)
        << paths[0].second;
  }
  EXPECT_NE(paths[1].second.find("cooperative fibers for 2 of 2 blocks"), std::string::npos) << paths[1].second;
  if (twins_on()) {
    EXPECT_NE(paths[1].second.find("fibers: not translated: a test's reason"), std::string::npos) << paths[1].second;
  }
  // block_reduce_fibers has no hand-written prologue: the translator's twin when it ran on this
  // file, else the build's reason (devctx_add_kernels defines it when the translator is off).
#if defined(DEVCTX_FISSION_OFF_REASON)
  if (twins_on()) {
    EXPECT_NE(paths[2].second.find("fibers: not translated: the fission translator did not run on this program's "
                                   "kernel files (the translator was off in this build: "),
              std::string::npos)
        << paths[2].second;
  }
#else
  if (twins_on()) {
    EXPECT_EQ(paths[2].second.rfind("translated: ", 0), 0u) << paths[2].second;
  }
#endif
  EXPECT_NE(paths[3].second.find("fibers: DEVCTX_CPU_FISSION=0 turned translated twins off"), std::string::npos)
      << paths[3].second;
  const auto got = download(ctx, sums);
  for (std::size_t b = 0; b < got.size(); ++b) EXPECT_EQ(got[b], 256.0f) << b;
}

namespace {

/// `n` elements of 0xA5 bytes: what a kernel did not write stays recognisable.
template <class T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n);
  std::memset(v.data(), 0xA5, n * sizeof(T));
  return v;
}

/// Runs `launch(out)` with twins on and off (DEVCTX_CPU_FISSION) into buffers holding `init`, and
/// returns both results; the trace of the first launch says how it ran.
template <class T, class Launch>
std::pair<std::vector<T>, std::vector<T>> on_and_off(devctx::DeviceContext& ctx, const std::vector<T>& init,
                                                     Launch launch, std::string* path) {
  auto a = ctx.enqueue_create_buffer<T>(init.size());
  auto b = ctx.enqueue_create_buffer<T>(init.size());
  ctx.enqueue_copy(a, std::span(init));
  ctx.enqueue_copy(b, std::span(init));
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  launch(a);
  ctx.synchronize();
  const auto paths = recorded_paths();
  devctx::trace::stop();
  devctx::trace::clear();
  if (path != nullptr) *path = paths.empty() ? std::string("(no kernel recorded)") : paths.front().second;
  {
    const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
    launch(b);
    ctx.synchronize();
  }
  return {download(ctx, a), download(ctx, b)};
}

/// The same into poisoned buffers of `n` elements.
template <class T, class Launch>
std::pair<std::vector<T>, std::vector<T>> on_and_off(devctx::DeviceContext& ctx, std::size_t n, Launch launch,
                                                     std::string* path) {
  return on_and_off<T>(ctx, poisoned<T>(n), launch, path);
}

/// Whether the translator ran on this file in this build (it did unless the build says why not).
constexpr bool kTranslatorRan =
#if defined(DEVCTX_FISSION_OFF_REASON)
    false;
#else
    true;
#endif

void expect_translated(const std::string& path) {
  if (kTranslatorRan && twins_on()) {
    EXPECT_EQ(path.rfind("translated: ", 0), 0u) << path;
  } else {
    EXPECT_NE(path.rfind("translated: ", 0), 0u) << path;
  }
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

std::vector<int> random_ints(std::mt19937_64& rng, std::size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(n);
  for (int& x : v) x = dist(rng);
  return v;
}

}  // namespace

TEST(FissionPatterns, EarlyReturnBeforeALaterBarrier) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const std::size_t n : {std::size_t{1}, std::size_t{100}, std::size_t{256 * 7 + 45}}) {
    SCOPED_TRACE(n);
    const auto values = random_ints(rng, n, -1000, 1000);
    auto in = ctx.enqueue_create_buffer<int>(n);
    ctx.enqueue_copy(in, std::span(values));
    const unsigned blocks = unsigned((n + 255) / 256);
    std::string path;
    const auto [on, off] = on_and_off<long long>(
        ctx, blocks,
        [&](auto& out) { ctx.enqueue_function<early_exit_reduce>({.grid_dim = blocks, .block_dim = 256}, in, out); },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (unsigned b = 0; b < blocks; ++b) {
      long long want = 0;
      for (std::size_t i = std::size_t(b) * 256; i < std::min(n, std::size_t(b + 1) * 256); ++i) want += values[i];
      ASSERT_EQ(on[b], want) << b;
    }
  }
}

TEST(FissionPatterns, ThreadsLeavingAtDifferentRoundsOfABarrierLoop) {
  // Checking mode reports a thread that returns after a barrier that others still wait at; the
  // unchecked fibers skip it at later barriers (the exited mask), and so does the twin.
  if (env_on("DEVCTX_CHECK", false)) GTEST_SKIP() << "DEVCTX_CHECK=1 reports this kernel's exits as divergence";
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned rounds = 9, blocks = 5;
  const devctx::Dim3 block{16, 4};
  const std::size_t n = std::size_t(blocks) * 64;
  std::vector<unsigned> exits(n);
  std::uniform_int_distribution<unsigned> dist(0, rounds + 2);  // some never leave early
  for (unsigned& e : exits) e = dist(rng);
  auto exit_after = ctx.enqueue_create_buffer<unsigned>(n);
  ctx.enqueue_copy(exit_after, std::span(exits));
  std::string path;
  const auto [on, off] = on_and_off<unsigned>(
      ctx, n,
      [&](auto& out) {
        ctx.enqueue_function<staggered_exits>({.grid_dim = blocks, .block_dim = block}, exit_after, out, rounds);
      },
      &path);
  expect_translated(path);
  EXPECT_TRUE(same_bytes(on, off));
  // The host's model: a thread reads neighbours' values as of the last round they stored.
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<unsigned> s(64), value(64), want(64);
    std::vector<bool> live(64, true);
    for (unsigned t = 0; t < 64; ++t) value[t] = s[t] = t + 1;
    for (unsigned t = 0; t < 64; ++t)
      if (exits[b * 64 + t] == 0) live[t] = false, want[t] = value[t];
    for (unsigned r = 1; r < rounds; ++r) {
      for (unsigned t = 0; t < 64; ++t) {
        if (!live[t]) continue;
        if (r == exits[b * 64 + t]) {
          live[t] = false;
          want[t] = value[t];
          continue;
        }
        value[t] = value[t] * 3u + s[(t + r) % 64];
      }
      for (unsigned t = 0; t < 64; ++t)
        if (live[t]) s[t] = value[t];
    }
    for (unsigned t = 0; t < 64; ++t)
      if (live[t]) want[t] = value[t];
    for (unsigned t = 0; t < 64; ++t) ASSERT_EQ(on[b * 64 + t], want[t]) << b << ", " << t;
  }
}

TEST(FissionPatterns, BarriersInsideABlockUniformIf) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned blocks = 6, threads = 128;
  const auto values = random_floats(rng, blocks * threads);
  auto in = ctx.enqueue_create_buffer<float>(values.size());
  ctx.enqueue_copy(in, std::span(values));
  for (const unsigned reverse : {0u, 1u}) {
    SCOPED_TRACE(reverse);
    std::string path;
    const auto [on, off] = on_and_off<float>(
        ctx, values.size(),
        [&](auto& out) {
          ctx.enqueue_function<uniform_if>({.grid_dim = blocks, .block_dim = threads}, in, out, reverse);
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (unsigned b = 0; b < blocks; ++b) {
      std::vector<float> s(threads);
      for (unsigned t = 0; t < threads; ++t) {
        const float* x = &values[std::size_t(b) * threads];
        s[t] = reverse != 0 && b % 2 == 0 ? x[threads - 1 - t] * 2.0f : x[(t + 1) % threads] + 1.0f;
      }
      for (unsigned t = 0; t < threads; ++t)
        ASSERT_EQ(on[std::size_t(b) * threads + t], s[t] - s[(t + 3) % threads]) << b << ", " << t;
    }
  }
}

TEST(FissionPatterns, HillisSteeleAndBlellochScans) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const std::size_t n = 512 * 5 + 77;
  const auto values = random_ints(rng, n, -50, 50);
  auto in = ctx.enqueue_create_buffer<int>(n);
  ctx.enqueue_copy(in, std::span(values));
  {
    std::string path;
    const auto [on, off] = on_and_off<int>(
        ctx, n,
        [&](auto& out) {
          ctx.enqueue_function<hillis_steele>({.grid_dim = unsigned((n + 255) / 256), .block_dim = 256}, in, out);
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    int acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      acc = i % 256 == 0 ? values[i] : acc + values[i];
      ASSERT_EQ(on[i], acc) << i;
    }
  }
  {
    std::string path;
    const auto [on, off] = on_and_off<int>(
        ctx, n,
        [&](auto& out) {
          ctx.enqueue_function<blelloch>({.grid_dim = unsigned((n + 511) / 512), .block_dim = 256}, in, out);
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    int acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 512 == 0) acc = 0;
      ASSERT_EQ(on[i], acc) << i;
      acc += values[i];
    }
  }
}

TEST(FissionPatterns, TiledTranspose) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned w = 70, h = 45;
  const auto values = random_floats(rng, std::size_t(w) * h);
  auto in = ctx.enqueue_create_buffer<float>(values.size());
  ctx.enqueue_copy(in, std::span(values));
  std::string path;
  const auto [on, off] = on_and_off<float>(
      ctx, values.size(),
      [&](auto& out) {
        ctx.enqueue_function<transpose>({.grid_dim = {(w + kT - 1) / kT, (h + kT - 1) / kT}, .block_dim = {kT, 8}}, in,
                                        out, w, h);
      },
      &path);
  expect_translated(path);
  EXPECT_TRUE(same_bytes(on, off));
  for (unsigned y = 0; y < h; ++y)
    for (unsigned x = 0; x < w; ++x)
      ASSERT_EQ(on[std::size_t(x) * h + y], values[std::size_t(y) * w + x]) << x << ", " << y;
}

TEST(FissionPatterns, SharedHistogramWithAtomics) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const std::size_t n = 100003;
  std::vector<unsigned> values(n);
  for (unsigned& v : values) v = unsigned(rng());
  auto in = ctx.enqueue_create_buffer<unsigned>(n);
  ctx.enqueue_copy(in, std::span(values));
  std::string path;
  const auto [on, off] = on_and_off<unsigned>(
      ctx, 64,
      [&](auto& out) {
        ctx.enqueue_memset(out, 0u);
        ctx.enqueue_function<histogram>({.grid_dim = 7, .block_dim = 96}, in, out);
      },
      &path);
  expect_translated(path);
  EXPECT_TRUE(same_bytes(on, off));
  std::vector<unsigned> want(64, 0);
  for (unsigned v : values) ++want[v % 64];
  for (unsigned j = 0; j < 64; ++j) ASSERT_EQ(on[j], want[j]) << j;
}

TEST(FissionPatterns, TemplateKernelsPerSpecialization) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const std::size_t n = 128 * 9 + 5;
  const auto ints = random_ints(rng, n, -100000, 100000);
  const auto floats = random_floats(rng, n);
  auto in_i = ctx.enqueue_create_buffer<int>(n);
  auto in_f = ctx.enqueue_create_buffer<float>(n);
  ctx.enqueue_copy(in_i, std::span(ints));
  ctx.enqueue_copy(in_f, std::span(floats));
  {
    const unsigned blocks = unsigned((n + 127) / 128);
    std::string path;
    const auto [on, off] = on_and_off<int>(
        ctx, blocks,
        [&](auto& out) {
          ctx.enqueue_function<template_reduce<128, int>>({.grid_dim = blocks, .block_dim = 128}, in_i, out);
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (unsigned b = 0; b < blocks; ++b) {
      int want = 0;
      for (std::size_t i = std::size_t(b) * 128; i < std::min(n, std::size_t(b + 1) * 128); ++i) want += ints[i];
      ASSERT_EQ(on[b], want) << b;
    }
  }
  {
    const unsigned blocks = unsigned((n + 64) / 64);
    std::string path;
    const auto [on, off] = on_and_off<float>(
        ctx, blocks,
        [&](auto& out) {
          ctx.enqueue_function<template_reduce<64, float>>({.grid_dim = blocks, .block_dim = 64}, in_f, out);
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));  // the same tree of additions either way
  }
}

namespace {

/// The fiber path's rules for a warp (collectives.hpp), on the host: lane i of a warp of
/// `width` lanes reading lane `src` gets its value when src < width, else its own.
int lane_value(const int* warp, unsigned width, unsigned lane, unsigned src) {
  return src < width ? warp[src] : warp[lane];
}

}  // namespace

TEST(FissionCollectives, BlockCollectivesAreBitwiseEqualToFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned blocks = 5;
  for (const devctx::Dim3 block : {devctx::Dim3{256}, devctx::Dim3{100}, devctx::Dim3{1}, devctx::Dim3{33},
                                   devctx::Dim3{10, 7}, devctx::Dim3{8, 4, 3}, devctx::Dim3{1024}}) {
    const unsigned n = block.x * block.y * block.z;
    SCOPED_TRACE(n);
    const std::size_t count = std::size_t(blocks) * n;
    const auto values = random_floats(rng, count);
    auto in = ctx.enqueue_create_buffer<float>(count);
    ctx.enqueue_copy(in, std::span(values));
    const unsigned src = unsigned(rng() % (n + 2));  // sometimes not a thread of the block
    auto ints_on = ctx.enqueue_create_buffer<int>(count * 2);
    auto ints_off = ctx.enqueue_create_buffer<int>(count * 2);
    ctx.enqueue_memset(ints_on, int(0xA5A5A5A5u));
    ctx.enqueue_memset(ints_off, int(0xA5A5A5A5u));
    bool first = true;
    std::string path;
    const auto [on, off] = on_and_off<float>(
        ctx, count * kBlockOuts,
        [&](auto& out) {
          ctx.enqueue_function<block_collectives>({.grid_dim = blocks, .block_dim = block}, in, out,
                                                  first ? ints_on : ints_off, src);
          first = false;
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    EXPECT_TRUE(same_bytes(download(ctx, ints_on), download(ctx, ints_off)));
    // Every element against the host: exact where the order cannot matter, else within rounding.
    const auto ints = download(ctx, ints_on);
    for (unsigned b = 0; b < blocks; ++b) {
      const float* x = &values[std::size_t(b) * n];
      double sum = 0.0, squares = 0.0;
      float mx = -INFINITY, mn = INFINITY;
      int isum = 0;
      for (unsigned r = 0; r < n; ++r) {
        sum += x[r];
        squares += double(x[r]) * x[r];
        mx = std::max(mx, x[r]);
        mn = std::min(mn, x[r] * 2.0f);
        isum += int(x[r] * 1000.0f);
      }
      double prefix = 0.0;
      int iprefix = 0;
      for (unsigned r = 0; r < n; ++r) {
        const float* o = &on[(std::size_t(b) * n + r) * kBlockOuts];
        const double tol = 1e-5 * (n + 1);
        ASSERT_NEAR(o[0], sum, tol) << b << ", " << r;
        ASSERT_EQ(o[1], mx) << b << ", " << r;
        ASSERT_NEAR(o[2], double(mn) + squares, tol) << b << ", " << r;
        ASSERT_NEAR(o[4], prefix, tol) << b << ", " << r;
        prefix += x[r];
        ASSERT_NEAR(o[3], prefix, tol) << b << ", " << r;
        ASSERT_EQ(o[5], src < n ? x[src] : x[r]) << b << ", " << r;
        ASSERT_EQ(o[6], x[0] + 1.0f) << b << ", " << r;
        ASSERT_EQ(ints[2 * (std::size_t(b) * n + r)], isum) << b << ", " << r;
        ASSERT_EQ(ints[2 * (std::size_t(b) * n + r) + 1], iprefix) << b << ", " << r;
        iprefix += int(x[r] * 1000.0f);
      }
    }
  }
}

TEST(FissionCollectives, WarpOperationsAreBitwiseEqualToFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned blocks = 4;
  for (const devctx::Dim3 block :
       {devctx::Dim3{256}, devctx::Dim3{100}, devctx::Dim3{7}, devctx::Dim3{10, 7}, devctx::Dim3{16, 3, 3}}) {
    const unsigned n = block.x * block.y * block.z;
    SCOPED_TRACE(n);
    const std::size_t count = std::size_t(blocks) * n;
    const auto values = random_ints(rng, count, -1000, 1000);
    auto in = ctx.enqueue_create_buffer<int>(count);
    ctx.enqueue_copy(in, std::span(values));
    const unsigned delta = unsigned(rng() % 40);
    std::string path;
    const auto [on, off] = on_and_off<int>(
        ctx, count * kWarpOuts,
        [&](auto& out) {
          ctx.enqueue_function<warp_collectives>({.grid_dim = blocks, .block_dim = block}, in, out, delta);
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (unsigned b = 0; b < blocks; ++b)
      for (unsigned w0 = 0; w0 < n; w0 += 32) {
        const unsigned width = std::min(32u, n - w0);
        const int* v = &values[std::size_t(b) * n + w0];
        int sum = 0, mx = v[0], mn = v[0], prefix = 0;
        unsigned bits = 0;
        int xored[32];
        for (unsigned i = 0; i < width; ++i) {
          sum += v[i], mx = std::max(mx, v[i]), mn = std::min(mn, v[i]);
          bits |= unsigned(v[i] > 0) << i;
        }
        // The xor butterfly: every lane adds the lanes that exist, each step from the last.
        int cur[32];
        for (unsigned i = 0; i < width; ++i) cur[i] = v[i];
        for (unsigned m = 16; m > 0; m /= 2) {
          for (unsigned i = 0; i < width; ++i) xored[i] = cur[i] + lane_value(cur, width, i, i ^ m);
          for (unsigned i = 0; i < width; ++i) cur[i] = xored[i];
        }
        for (unsigned i = 0; i < width; ++i) {
          const int* o = &on[(std::size_t(b) * n + w0 + i) * kWarpOuts];
          const unsigned r = w0 + i;
          ASSERT_EQ(o[0], lane_value(v, width, i, (i * 7 + 3) % 32)) << b << ", " << r;
          ASSERT_EQ(o[1], lane_value(v, width, i, i + delta)) << b << ", " << r;
          ASSERT_EQ(o[2], lane_value(v, width, i, i % 5 <= i ? i - i % 5 : i)) << b << ", " << r;
          const unsigned x = i ^ (i % 3 == 0 ? 33u : 5u);
          ASSERT_EQ(o[3], lane_value(v, width, i, x < 32 ? x : i)) << b << ", " << r;
          ASSERT_EQ(o[4], sum) << b << ", " << r;
          ASSERT_EQ(o[5], mx) << b << ", " << r;
          ASSERT_EQ(o[6], mn) << b << ", " << r;
          ASSERT_EQ(o[8], prefix) << b << ", " << r;
          prefix += v[i];
          ASSERT_EQ(o[7], prefix) << b << ", " << r;
          ASSERT_EQ(unsigned(o[9]), bits) << b << ", " << r;
          ASSERT_EQ(o[10], v[0] - 1) << b << ", " << r;
          ASSERT_EQ(o[11], (r ^ 1u) < n ? v[i ^ 1u] : v[i]) << b << ", " << r;
          ASSERT_EQ(o[12], cur[i]) << b << ", " << r;
          float fs;
          std::memcpy(&fs, &o[13], sizeof fs);
          double want = 0.0;
          for (unsigned j = 0; j < width; ++j) want += double(float(v[j]) * 0.37f);
          ASSERT_NEAR(fs, want, 1e-3) << b << ", " << r;
        }
      }
  }
}

TEST(FissionCollectives, TwoLevelWarpShuffleReduction) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const unsigned threads : {256u, 96u, 200u, 32u, 1024u, 5u}) {
    SCOPED_TRACE(threads);
    const std::size_t n = std::size_t(threads) * 6 + threads / 3;
    const unsigned blocks = unsigned((n + threads - 1) / threads);
    const auto values = random_floats(rng, n);
    auto in = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(in, std::span(values));
    std::string path;
    const auto [on, off] = on_and_off<float>(
        ctx, blocks,
        [&](auto& out) { ctx.enqueue_function<two_level_reduce>({.grid_dim = blocks, .block_dim = threads}, in, out); },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    // With a partial last warp the shuffle-down ladder adds lanes that keep their own value (as
    // on the GPU, where those lanes' values are undefined): bitwise against the fibers only.
    if (threads % 32 != 0) continue;
    for (unsigned b = 0; b < blocks; ++b) {
      double want = 0.0;
      for (std::size_t i = std::size_t(b) * threads; i < std::min(n, std::size_t(b + 1) * threads); ++i)
        want += values[i];
      ASSERT_NEAR(on[b], want, 1e-4 * threads) << b;
    }
  }
}

TEST(FissionCollectives, WarpUniformIfChecksTheBlockShapeWhenOffered) {
  if (env_on("DEVCTX_CHECK", false)) GTEST_SKIP() << "DEVCTX_CHECK=1: every launch is checked, none runs a twin";
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned blocks = 3;
  for (const devctx::Dim3 block : {devctx::Dim3{100}, devctx::Dim3{64, 3}, devctx::Dim3{16, 4}}) {
    const unsigned n = block.x * block.y * block.z;
    SCOPED_TRACE(n);
    const std::size_t count = std::size_t(blocks) * n;
    const auto values = random_ints(rng, count, -1000, 1000);
    auto in = ctx.enqueue_create_buffer<int>(count);
    ctx.enqueue_copy(in, std::span(values));
    std::string path;
    const auto [on, off] = on_and_off<int>(
        ctx, count,
        [&](auto& out) { ctx.enqueue_function<warp_if_rows>({.grid_dim = blocks, .block_dim = block}, in, out); }, &path);
    EXPECT_TRUE(same_bytes(on, off));
    if (block.x == 16) {
      // x / 32 is not the same in every lane of a warp of 16 x 4 blocks: the twin declines (and
      // the block runs as a plain loop, as no thread reaches the warp operation).
      EXPECT_NE(path.rfind("translated: ", 0), 0u) << path;
    } else {
      expect_translated(path);
    }
    for (std::size_t g = 0; g < count; ++g) {
      const unsigned r = unsigned(g % n), x = r % block.x;
      int want = values[g];
      if (x / 32 == 1) {
        const std::size_t w0 = g - r % 32;
        want = 0;
        for (unsigned j = 0; j < std::min(32u, n - r / 32 * 32); ++j) want += values[w0 + j];
        want = int(unsigned(want) + r % 32);
      }
      ASSERT_EQ(on[g], want) << g;
    }
  }
}

TEST(FissionCollectives, SoftmaxWithBlockCollectivesAndWithHelpers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned rows = 9, cols = 1000;
  std::vector<float> logits(std::size_t(rows) * cols);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  for (float& v : logits) v = dist(rng);
  auto in = ctx.enqueue_create_buffer<float>(logits.size());
  ctx.enqueue_copy(in, std::span(logits));
  for (const unsigned threads : {256u, 80u, 0u}) {
    SCOPED_TRACE(threads);
    std::string path;
    const auto [on, off] = on_and_off<float>(
        ctx, logits.size(),
        [&](auto& out) {
          // 0: examples/05_softmax's kernel, whose helpers the translator inlines (256 threads).
          if (threads == 0)
            ctx.enqueue_function<softmax_helpers>({.grid_dim = rows, .block_dim = 256}, in, out, cols);
          else
            ctx.enqueue_function<softmax_collectives>({.grid_dim = rows, .block_dim = threads}, in, out, cols);
        },
        &path);
    expect_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (unsigned r = 0; r < rows; ++r) {
      const float* x = &logits[std::size_t(r) * cols];
      double m = -INFINITY, sum = 0.0;
      for (unsigned c = 0; c < cols; ++c) m = std::max(m, double(x[c]));
      for (unsigned c = 0; c < cols; ++c) sum += std::exp(double(x[c]) - m);
      for (unsigned c = 0; c < cols; ++c) {
        const double want = std::exp(double(x[c]) - m) / sum;
        ASSERT_NEAR(on[std::size_t(r) * cols + c], want, 1e-6 + 1e-4 * want) << r << ", " << c;
      }
    }
  }
}

// ---- map kernels (docs/cpu-backend.md, "Map kernels") ------------------------------------------
// Barrier-free kernels over devctx::global_idx().x with a bounds guard get a twin that loops over
// exactly the threads the guard admits (a loop the compiler can vectorise). Each runs with twins
// on and off into poisoned buffers: results bitwise equal, equal to the host's, elements the
// guard leaves out keep their poison, and the trace says "translated" when the translator ran.
namespace {

// `if (i < n) S`, n a size: the contract's vector add.
DEVCTX_KERNEL void map_add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a[i] + b[i];
}

// `if (i >= n) return;` then several statements, n a signed parameter, a pure local first.
DEVCTX_KERNEL void map_axpy_early(devctx::span<const float> x, devctx::span<float> y, float alpha, int n) {
  const long long i = static_cast<long long>(devctx::global_idx().x);
  const float scale = alpha * 2.0f;
  if (i >= n) return;
  const float xi = x[i];
  y[i] = scale * xi + y[i];
  y[i] += 1.0f;
}

// `if (last >= i)`: the flipped comparison with <=, bound in an unsigned of another width.
DEVCTX_KERNEL void map_up_to(devctx::span<std::int32_t> out, unsigned last) {
  const auto i = devctx::global_idx().x;
  if (last >= i) {
    out[i] = std::int32_t(i) * 3 - 7;
  }
}

// A body that reads the block's index: its twin runs one block per call (no run of blocks).
DEVCTX_KERNEL void map_block_ids(devctx::span<std::uint32_t> out, std::uint32_t n) {
  const std::uint64_t i = devctx::global_idx().x;
  if (i < n) out[i] = devctx::block_idx().x * 1000u + devctx::block_idx().y * 100u + devctx::block_dim().x;
}

// A body that reads the thread index itself: the twin sets it per thread.
DEVCTX_KERNEL void map_thread_ids(devctx::span<std::uint32_t> out, std::size_t n) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[devctx::thread_idx().y * n + i] = devctx::thread_idx().x * 1000u + devctx::thread_idx().y;
}

// The rows of a 2-D or 3-D grid of 1-D blocks: a twin's run of blocks stays in one grid row, so
// each element is added to once, by its own row's blocks.
DEVCTX_KERNEL void map_grid_rows(devctx::span<std::uint32_t> out, std::uint64_t width, std::uint64_t grid_rows) {
  const std::uint64_t x = devctx::global_idx().x;
  const std::uint64_t row = devctx::global_idx().z * grid_rows + devctx::global_idx().y;
  if (x < width) out[row * width + x] += std::uint32_t(row) * 3u + 1u;
}

/// A map kernel's trace: translated, every block by its twin (when the build and the environment
/// let twins run).
void expect_map_translated(const std::string& path) {
  expect_translated(path);
  if (path.rfind("translated: ", 0) == 0) {
    EXPECT_EQ(path.rfind("translated: the kernel's block-level twin ran every block", 0), 0u) << path;
  }
}

}  // namespace

TEST(FissionMaps, GuardedVectorAddCoversExactlyTheGuardedElements) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{1000}, std::size_t{256 * 9 + 17}}) {
    SCOPED_TRACE(n);
    const auto va = random_floats(rng, n), vb = random_floats(rng, n);
    auto a = ctx.enqueue_create_buffer<float>(n);
    auto b = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(a, std::span(va));
    ctx.enqueue_copy(b, std::span(vb));
    // Two blocks more than needed (wholly outside the guard), 1-D and 2-D blocks. (In 2-D blocks
    // every row writes the same elements: a race that checking mode rightly reports.)
    const bool checked = env_on("DEVCTX_CHECK", false);
    for (const devctx::Dim3 block : {devctx::Dim3{256, 1, 1}, devctx::Dim3{64, 2, 1}}) {
      if (checked && block.y > 1) continue;
      const unsigned grid = unsigned((n + block.x - 1) / block.x) + 2;
      std::string path;
      const auto [on, off] = on_and_off<float>(
          ctx, poisoned<float>(n),
          [&](devctx::DeviceBuffer<float>& out) {
            ctx.enqueue_function<map_add>({.grid_dim = grid, .block_dim = block}, a, b, out);
          },
          &path);
      expect_map_translated(path);
      EXPECT_TRUE(same_bytes(on, off));
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(on[i], va[i] + vb[i]) << "element " << i;
    }
  }
}

TEST(FissionMaps, EarlyReturnGuardWithASignedBound) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const std::size_t size = 256 * 5 + 3;
  const auto vx = random_floats(rng, size), vy = random_floats(rng, size);
  auto x = ctx.enqueue_create_buffer<float>(size);
  ctx.enqueue_copy(x, std::span(vx));
  const float alpha = 0.75f;
  // n inside the buffer, at its end, zero and negative (a signed bound: no thread passes).
  for (const int n : {int(size) - 300, int(size), 1, 0, -5}) {
    SCOPED_TRACE(n);
    std::string path;
    const auto [on, off] = on_and_off<float>(
        ctx, vy,
        [&](devctx::DeviceBuffer<float>& y) {
          ctx.enqueue_function<map_axpy_early>({.grid_dim = 6, .block_dim = 256}, x, y, alpha, n);
        },
        &path);
    expect_map_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (std::size_t i = 0; i < size; ++i) {
      float want = vy[i];
      if (n > 0 && i < std::size_t(n)) {
        want = (alpha * 2.0f) * vx[i] + vy[i];
        want += 1.0f;
      }
      ASSERT_EQ(on[i], want) << "element " << i;
    }
  }
}

TEST(FissionMaps, FlippedLessOrEqualGuard) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  const std::size_t size = 700;
  for (const unsigned last : {0u, 1u, 255u, 256u, 699u}) {
    SCOPED_TRACE(last);
    std::string path;
    const auto init = poisoned<std::int32_t>(size);
    const auto [on, off] = on_and_off<std::int32_t>(
        ctx, init,
        [&](devctx::DeviceBuffer<std::int32_t>& out) {
          ctx.enqueue_function<map_up_to>({.grid_dim = 3, .block_dim = 256}, out, last);
        },
        &path);
    expect_map_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (std::size_t i = 0; i < size; ++i)
      ASSERT_EQ(on[i], i <= last ? std::int32_t(i) * 3 - 7 : init[i]) << "element " << i;
  }
}

// A twin that tells blocks apart by the index alone runs a worker's blocks of one row in one call
// (fission::map_blocks); the executor skips those it ran. y[i] += ... shows a block run twice,
// poison a block skipped, with ragged ends and more blocks than workers' parts. (Not over 2-D
// grids: the rows of a map kernel's grid write the same elements, a race between workers.)
TEST(FissionMaps, RunsOfBlocksCoverEachBlockOnce) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const unsigned gx : {1u, 2u, 7u, 64u, 301u, 4099u}) {
    {
      constexpr unsigned gy = 1;
      SCOPED_TRACE(testing::Message() << gx << " blocks");
      const std::size_t size = std::size_t(gx) * 128 + 5;
      const int n = int(std::uniform_int_distribution<std::size_t>(0, size)(rng));
      const auto vx = random_floats(rng, size), vy = random_floats(rng, size);
      auto x = ctx.enqueue_create_buffer<float>(size);
      ctx.enqueue_copy(x, std::span(vx));
      std::string path;
      const auto [on, off] = on_and_off<float>(
          ctx, vy,
          [&](devctx::DeviceBuffer<float>& y) {
            ctx.enqueue_function<map_axpy_early>({.grid_dim = {gx, gy, 1}, .block_dim = 128}, x, y, 0.5f, n);
          },
          &path);
      expect_map_translated(path);
      EXPECT_TRUE(same_bytes(on, off));
      for (std::size_t i = 0; i < size; ++i) {
        float want = vy[i];
        if (i < std::size_t(n) && i < std::size_t(gx) * 128) {  // the grid covers gx * 128 elements
          want = (0.5f * 2.0f) * vx[i] + want;
          want += 1.0f;
        }
        ASSERT_EQ(on[i], want) << "element " << i;
      }
      // And a body that reads block_idx: one block per call, each writing its own index.
      const std::uint32_t m = std::uint32_t(std::uniform_int_distribution<std::size_t>(0, size)(rng));
      const auto init = poisoned<std::uint32_t>(size);
      const auto [ids, ids_off] = on_and_off<std::uint32_t>(
          ctx, init,
          [&](devctx::DeviceBuffer<std::uint32_t>& out) {
            ctx.enqueue_function<map_block_ids>({.grid_dim = {gx, 1, 1}, .block_dim = 128}, out, m);
          },
          &path);
      expect_map_translated(path);
      EXPECT_TRUE(same_bytes(ids, ids_off));
      for (std::size_t i = 0; i < size; ++i)
        ASSERT_EQ(ids[i], i < m && i < std::size_t(gx) * 128 ? std::uint32_t(i / 128) * 1000u + 128u : init[i])
            << "element " << i;
    }
  }
}

TEST(FissionMaps, RunsOfBlocksStayInTheirGridRow) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const devctx::Dim3 grid : {devctx::Dim3{1, 5, 1}, devctx::Dim3{3, 2, 1}, devctx::Dim3{37, 3, 1},
                                  devctx::Dim3{301, 2, 3}, devctx::Dim3{1031, 7, 1}}) {
    SCOPED_TRACE(testing::Message() << "grid " << grid.x << "x" << grid.y << "x" << grid.z << " of 64 threads");
    // Rows of fewer elements than the grid's threads along x, so blocks past the bound run too.
    const std::uint64_t width = std::uniform_int_distribution<std::uint64_t>(1, std::uint64_t(grid.x) * 64)(rng);
    const std::uint64_t rows = std::uint64_t(grid.y) * grid.z;
    const auto init = poisoned<std::uint32_t>(width * rows + 3);
    std::string path;
    const auto [on, off] = on_and_off<std::uint32_t>(
        ctx, init,
        [&](devctx::DeviceBuffer<std::uint32_t>& out) {
          ctx.enqueue_function<map_grid_rows>({.grid_dim = grid, .block_dim = 64}, out, width, std::uint64_t(grid.y));
        },
        &path);
    expect_map_translated(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (std::size_t i = 0; i < init.size(); ++i) {
      const std::uint32_t want = i < width * rows ? init[i] + std::uint32_t(i / width) * 3u + 1u : init[i];
      ASSERT_EQ(on[i], want) << "element " << i << " (row " << i / width << ", x " << i % width << ")";
    }
  }
}

TEST(FissionMaps, ABodyThatReadsTheThreadIndexSeesEachThreadsOwn) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  const std::size_t n = 64 * 4 - 10;
  std::string path;
  // 2-D blocks: row y of each block writes its own stretch of the output.
  const auto init = poisoned<std::uint32_t>(3 * n + 20);
  const auto [on, off] = on_and_off<std::uint32_t>(
      ctx, init,
      [&](devctx::DeviceBuffer<std::uint32_t>& out) {
        ctx.enqueue_function<map_thread_ids>({.grid_dim = 5, .block_dim = {64, 3, 1}}, out, n);
      },
      &path);
  expect_map_translated(path);
  EXPECT_TRUE(same_bytes(on, off));
  for (std::size_t j = 0; j < init.size(); ++j) {
    const std::size_t y = j / n, i = j % n;
    ASSERT_EQ(on[j], y < 3 ? std::uint32_t(i % 64) * 1000u + std::uint32_t(y) : init[j]) << "element " << j;
  }
}

TEST(FissionMaps, CheckedLaunchesRunThePlainLoop) {
  const ScopedEnv checked("DEVCTX_CHECK", "1");  // read when the context is made
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto a = ctx.enqueue_create_buffer<float>(300);
  auto b = ctx.enqueue_create_buffer<float>(300);
  auto out = ctx.enqueue_create_buffer<float>(300);
  ctx.enqueue_memset(a, 1.5f);
  ctx.enqueue_memset(b, 2.0f);
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  ctx.enqueue_function<map_add>({.grid_dim = 2, .block_dim = 256}, a, b, out);
  ctx.synchronize();
  const auto paths = recorded_paths();
  devctx::trace::stop();
  devctx::trace::clear();
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].second.rfind("plain loop", 0), 0u) << paths[0].second;
  for (const float v : download(ctx, out)) ASSERT_EQ(v, 3.5f);
}

// ---- bounds on a global index inside the stretches of a barrier kernel ----------------------------
// The twin runs a block whose every thread lies on one side of such a bound with the comparison
// folded to a constant (no masked loads), and the blocks at the data's edge as written.

// `i < in.size()` (a select), `m > i` (flipped, a narrower bound) and `i >= m / 2` (false for
// whole blocks), in a 1-D or 2-D block (every row of a 2-D block has the same global x).
DEVCTX_KERNEL void bounded_sums(devctx::span<const float> in, devctx::span<float> sums, unsigned m) {
  DEVCTX_SHARED(float, s, 256);
  const std::size_t i = devctx::global_idx().x;
  const unsigned t = devctx::thread_idx().y * devctx::block_dim().x + devctx::thread_idx().x;
  s[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  if (m > i) s[t] += 1.0f;
  if (i >= m / 2) s[t] *= 2.0f;
  devctx::barrier();
  if (t == 0) {
    float acc = 0.0f;
    for (unsigned k = 0; k < devctx::block_dim().x * devctx::block_dim().y; ++k) acc += s[k];
    sums[devctx::block_idx().x] = acc;
  }
}

TEST(FissionPatterns, GlobalIndexBoundsInsideStretches) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const std::size_t size : {std::size_t{1}, std::size_t{256}, std::size_t{1000}, std::size_t{256 * 7 + 13}}) {
    const auto values = random_floats(rng, size);
    auto in = ctx.enqueue_create_buffer<float>(size);
    ctx.enqueue_copy(in, std::span(values));
    for (const devctx::Dim3 block : {devctx::Dim3{256, 1, 1}, devctx::Dim3{64, 4, 1}}) {
      const unsigned grid = unsigned((size + block.x - 1) / block.x) + 2;  // two blocks past the data
      for (const unsigned m : {0u, 100u, unsigned(size), unsigned(size) + 300, 0xFFFFFFFFu}) {
        SCOPED_TRACE(testing::Message() << "size " << size << " block " << block.x << "x" << block.y << " m " << m);
        std::string path;
        const auto [on, off] = on_and_off<float>(
            ctx, grid,
            [&](devctx::DeviceBuffer<float>& out) {
              ctx.enqueue_function<bounded_sums>({.grid_dim = grid, .block_dim = block}, in, out, m);
            },
            &path);
        expect_translated(path);
        EXPECT_TRUE(same_bytes(on, off));
        // The host model, summing in the kernel's order.
        for (unsigned b = 0; b < grid; ++b) {
          float acc = 0.0f;
          for (unsigned y = 0; y < block.y; ++y)
            for (unsigned x = 0; x < block.x; ++x) {
              const std::size_t i = std::size_t(b) * block.x + x;
              float v = i < size ? values[i] : 0.0f;
              if (m > i) v += 1.0f;
              if (i >= m / 2) v *= 2.0f;
              acc += v;
            }
          ASSERT_EQ(on[b], acc) << "block " << b;
        }
      }
    }
  }
}

// Bounds on sums of thread index components and block-uniform values (`row < limit`,
// `limit > offset + ty`, and `offset + tx < limit`, an unsigned sum that wraps inside the block
// when offset is near 2^32): the twin folds them for a block only where every thread agrees.
DEVCTX_KERNEL void affine_bounds(devctx::span<unsigned> out, unsigned offset, unsigned limit) {
  DEVCTX_SHARED(unsigned, s, 256);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * devctx::block_dim().y + ty;
  const unsigned t = ty * devctx::block_dim().x + tx;
  const unsigned v = offset + tx;
  s[t] = (v < limit ? 1u : 0u) + (row < limit ? 2u : 0u) + (limit > offset + ty ? 4u : 0u);
  devctx::barrier();
  const unsigned threads = devctx::block_dim().x * devctx::block_dim().y;
  const std::size_t b = std::size_t(devctx::block_idx().y) * devctx::grid_dim().x + devctx::block_idx().x;
  out[b * threads + t] = s[(t + 1) % threads];
}

TEST(FissionPatterns, ThreadAffineBoundsInsideStretches) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  for (const devctx::Dim3 block : {devctx::Dim3{16, 16, 1}, devctx::Dim3{32, 8, 1}}) {
    const devctx::Dim3 grid{3, 3, 1};
    const std::size_t threads = std::size_t(block.x) * block.y, n = threads * 9;
    for (const unsigned offset : {0u, 100u, 0xFFFFFFF0u, 0xFFFFFFFFu})
      for (const unsigned limit : {0u, 20u, 40u, 1000u, 0xFFFFFFFFu}) {
        SCOPED_TRACE(testing::Message() << "block " << block.x << "x" << block.y << " offset " << offset << " limit "
                                        << limit);
        std::string path;
        const auto [on, off] = on_and_off<unsigned>(
            ctx, n,
            [&](devctx::DeviceBuffer<unsigned>& out) {
              ctx.enqueue_function<affine_bounds>({.grid_dim = grid, .block_dim = block}, out, offset, limit);
            },
            &path);
        expect_translated(path);
        EXPECT_TRUE(same_bytes(on, off));
        for (unsigned by = 0; by < grid.y; ++by)
          for (unsigned bx = 0; bx < grid.x; ++bx)
            for (unsigned t = 0; t < threads; ++t) {
              const unsigned u = unsigned((t + 1) % threads), tx = u % block.x, ty = u / block.x;
              const unsigned row = by * block.y + ty, v = offset + tx;
              const unsigned want = (v < limit ? 1u : 0u) + (row < limit ? 2u : 0u) + (limit > offset + ty ? 4u : 0u);
              const std::size_t at = (std::size_t(by) * grid.x + bx) * threads + t;
              ASSERT_EQ(on[at], want) << "block (" << bx << ", " << by << ") thread " << t;
            }
      }
  }
}

// Values declared together in one statement, living across a barrier: each kept per thread.
// `helper_rank()` is not a devctx function, so t and w are stored, not recomputed.
DEVCTX_DEVICE unsigned helper_rank() { return devctx::thread_idx().x; }

DEVCTX_KERNEL void declared_together(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, s, 256);
  const unsigned t = helper_rank(), w = t * 3u + 1u;
  int a = in[devctx::global_idx().x], c = a * 2;
  s[t] = a;
  devctx::barrier();
  a += s[(t + 1) % devctx::block_dim().x];
  c -= int(w);
  devctx::barrier();
  out[devctx::global_idx().x] = a * 5 + c;
}

TEST(FissionPatterns, ValuesDeclaredTogetherLiveAcrossABarrier) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const unsigned block = 256, blocks = 5;
  const std::vector<int> values = random_ints(rng, block * blocks, -1000, 1000);
  auto in = ctx.enqueue_create_buffer<int>(values.size());
  ctx.enqueue_copy(in, std::span(values));
  std::string path;
  const auto [on, off] = on_and_off<int>(
      ctx, values.size(),
      [&](devctx::DeviceBuffer<int>& out) {
        ctx.enqueue_function<declared_together>({.grid_dim = blocks, .block_dim = block}, in, out);
      },
      &path);
  expect_translated(path);
  EXPECT_TRUE(same_bytes(on, off));
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < block; ++t) {
      const int a = values[b * block + t], next = values[b * block + (t + 1) % block];
      ASSERT_EQ(on[b * block + t], (a + next) * 5 + (a * 2 - int(t * 3u + 1u))) << b << ' ' << t;
    }
}
