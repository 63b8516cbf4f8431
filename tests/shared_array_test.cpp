// SPDX-License-Identifier: Apache-2.0
// tests/shared_array_test.cpp - one kernel source for every backend (issue 24): DEVCTX_SHARED is a
// real T[n] (it decays to T*, deduces as T[n] and T* in generic helpers, works with sizeof,
// std::size, std::begin/std::end, range-for and pointer arithmetic, in one and two dimensions,
// spelt with an array type or an alias), dynamic_shared is a span over the launch's shared
// memory, and atomics work on DEVCTX_SHARED elements. The static_asserts run in every pass that
// compiles the kernels (the CPU build, and nvcc's host and device passes in a CUDA build); the
// tests check every element of the results on every backend.
#include "support/test_support.hpp"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;

namespace {
constexpr unsigned kThreads = 64;
constexpr unsigned kTile = 8;
using TileRow = float[kTile];
}  // namespace

// ---- generic helpers, as CUDA courses and CUB-like code write them ---------------------------------

/// Deduces T from a pointer: the shared array decays.
template <class T>
DEVCTX_DEVICE T sum_through_pointer(const T* p, std::size_t n) {
  T s{};
  for (std::size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

/// Deduces T and N from a reference to an array.
template <class T, std::size_t N>
DEVCTX_DEVICE T sum_of_array(T (&a)[N]) {
  T s{};
  for (T v : a) s += v;
  return s;
}

/// std::begin / std::end / std::size on the array.
template <class A>
DEVCTX_DEVICE auto sum_by_iterators(A& a) {
  auto s = *std::begin(a) - *std::begin(a);
  for (auto it = std::begin(a); it != std::end(a); ++it) s += *it;
  return s + decltype(s)(std::size(a) - std::size(a));
}

/// A block sum over a partials array, the helper from issue 24 (T* partials).
template <class T>
DEVCTX_DEVICE T block_sum(T v, T* partials) {
  const unsigned t = devctx::thread_idx().x;
  partials[t] = v;
  devctx::barrier();
  for (unsigned stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) partials[t] += partials[t + stride];
    devctx::barrier();
  }
  return partials[0];
}

// ---- kernels -----------------------------------------------------------------------------------------

/// out[8 * block + k] for k = 0..7: one figure per way of using the array.
DEVCTX_KERNEL void shared_forms(devctx::span<const int> in, devctx::span<long long> out) {
  DEVCTX_SHARED(int, a, kThreads);
  DEVCTX_SHARED(long long, partials, kThreads);
  static_assert(std::is_same_v<std::remove_reference_t<decltype(a)>, int[kThreads]>);
  static_assert(std::is_same_v<decltype((a)), int(&)[kThreads]>);
  static_assert(std::extent_v<std::remove_reference_t<decltype(a)>> == kThreads);
  static_assert(sizeof(a) == sizeof(int) * kThreads);
  // std::size(a) is kThreads, but not a constant expression on the CPU backend (a reference: C++23's P2280).
  static_assert(std::is_same_v<decltype(a + 1), int*>);
  static_assert(std::is_same_v<decltype(std::begin(a)), int*>);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  a[t] = in[i];
  const long long total = block_sum<long long>(in[i], partials);  // T* from a shared array
  devctx::barrier();
  if (t == 0) {
    const std::size_t o = std::size_t(devctx::block_idx().x) * 8;
    int* p = a;  // decay
    out[o + 0] = sum_through_pointer(a, kThreads);
    out[o + 1] = sum_of_array(a);
    out[o + 2] = sum_by_iterators(a);
    long long s = 0;
    for (int v : a) s += v;  // range-for
    out[o + 3] = s;
    out[o + 4] = *(p + 5) + *(a + 6) + *(&a[7]);  // pointer arithmetic
    out[o + 5] = total;
    out[o + 6] = (long long)(sizeof(a) / sizeof(a[0]));
    out[o + 7] = (long long)std::size(partials);
  }
}

/// Transposes 8x8 tiles through two-dimensional shared arrays in both spellings.
DEVCTX_KERNEL void shared_tiles(devctx::span<const float> in, devctx::span<float> out) {
  DEVCTX_SHARED(TileRow, tile, kTile);         // an alias of the row type
  DEVCTX_SHARED(float[kTile], staged, kTile);  // the row type written out
  static_assert(std::is_same_v<std::remove_reference_t<decltype(tile)>, float[kTile][kTile]>);
  static_assert(std::is_same_v<std::remove_reference_t<decltype(staged)>, float[kTile][kTile]>);
  static_assert(sizeof(staged) == sizeof(float) * kTile * kTile && sizeof(staged[0]) == sizeof(TileRow));
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const std::size_t base = std::size_t(devctx::block_idx().x) * kTile * kTile;
  tile[ty][tx] = in[base + ty * kTile + tx];
  devctx::barrier();
  staged[tx][ty] = tile[ty][tx];
  devctx::barrier();
  out[base + ty * kTile + tx] = sum_of_array(staged[ty]) - sum_of_array(staged[ty]) + staged[ty][tx];
}

/// A histogram of each block's values in a shared array, updated by atomics, then added up.
DEVCTX_KERNEL void shared_histogram(devctx::span<const unsigned> values, devctx::span<unsigned> bins) {
  DEVCTX_SHARED(unsigned, local, 16);
  const unsigned t = devctx::thread_idx().x;
  if (t < 16) local[t] = 0;
  devctx::barrier();
  const std::size_t i = devctx::global_idx().x;
  if (i < values.size()) devctx::atomic_add(&local[values[i] % 16], 1u);
  devctx::barrier();
  if (t < 16) devctx::atomic_add(&bins[t], local[t]);
}

/// Rotates each block's part through dynamic shared memory, seen as a span and as a pointer.
DEVCTX_KERNEL void dynamic_rotate(devctx::span<const int> in, devctx::span<int> out) {
  const devctx::span<int> s = devctx::dynamic_shared<int>();
  int* p = devctx::dynamic_shared<int>().data();
  const unsigned t = devctx::thread_idx().x, n = devctx::block_dim().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = in[i];
  devctx::barrier();
  out[i] = p[(t + 1) % n] + int(s.size()) - int(n);
}

// ---- tests --------------------------------------------------------------------------------------------

class SharedArrays : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(SharedArrays);

TEST_P(SharedArrays, AreArraysToGenericCode) {
  const unsigned blocks = 3;
  const auto values = devctx_test::random_vector<int>(rng, blocks * kThreads, -1000, 1000);
  auto in = upload(ctx(), values);
  auto out = ctx().enqueue_create_buffer<long long>(blocks * 8);
  ctx().enqueue_memset(out, -1LL);
  ctx().enqueue_function<shared_forms>({.grid_dim = blocks, .block_dim = kThreads}, in, out);
  const auto got = download(ctx(), out);
  for (unsigned b = 0; b < blocks; ++b) {
    long long sum = 0;
    for (unsigned t = 0; t < kThreads; ++t) sum += values[b * kThreads + t];
    const int* v = values.data() + b * kThreads;
    const long long expected[8] = {sum, sum, sum, sum, v[5] + v[6] + v[7], sum, kThreads, kThreads};
    for (unsigned k = 0; k < 8; ++k) ASSERT_EQ(got[b * 8 + k], expected[k]) << "block " << b << " figure " << k;
  }
}

TEST_P(SharedArrays, TwoDimensionalFormsInBothSpellings) {
  const unsigned blocks = 4;
  const auto values = devctx_test::random_vector<float>(rng, blocks * 64, -1.0f, 1.0f);
  auto in = upload(ctx(), values);
  auto out = ctx().enqueue_create_buffer<float>(values.size());
  ctx().enqueue_function<shared_tiles>({.grid_dim = blocks, .block_dim = {kTile, kTile}}, in, out);
  const auto got = download(ctx(), out);
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t y = 0; y < kTile; ++y)
      for (std::size_t x = 0; x < kTile; ++x)
        ASSERT_EQ(got[b * 64 + y * kTile + x], values[b * 64 + x * kTile + y]) << b << ' ' << y << ' ' << x;
}

TEST_P(SharedArrays, AtomicsOnSharedElements) {
  const std::size_t n = 5000;
  const auto values = devctx_test::random_vector<unsigned>(rng, n, 0, 1u << 20);
  auto in = upload(ctx(), values);
  auto bins = ctx().enqueue_create_buffer<unsigned>(16);
  ctx().enqueue_memset(bins, 0u);
  ctx().enqueue_function<shared_histogram>(devctx_test::cover(n, 128), in, bins);
  const auto got = download(ctx(), bins);
  std::vector<unsigned> expected(16, 0);
  for (unsigned v : values) ++expected[v % 16];
  for (unsigned k = 0; k < 16; ++k) ASSERT_EQ(got[k], expected[k]) << k;
}

TEST_P(SharedArrays, DynamicSharedMemoryIsASpan) {
  const unsigned blocks = 5, threads = 96;
  const auto values = devctx_test::random_vector<int>(rng, blocks * threads, -1000, 1000);
  auto in = upload(ctx(), values);
  auto out = ctx().enqueue_create_buffer<int>(values.size());
  ctx().enqueue_function<dynamic_rotate>({.grid_dim = blocks, .block_dim = threads, .shared_bytes = threads * sizeof(int)},
                                         in, out);
  const auto got = download(ctx(), out);
  for (std::size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(got[i], values[i / threads * threads + (i + 1) % threads]) << i;
}
