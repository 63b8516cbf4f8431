// SPDX-License-Identifier: Apache-2.0
// tests/kernel_forms_test.cpp - kernel source written the ways CUDA code (and a port of Mojo's
// GPU puzzles) writes it, compiled from the same source for every backend (by nvcc in a CUDA
// build) and run on each: DEVCTX_DEVICE helpers (plain, templates, taking pointers and shared
// memory), functors passed as kernel arguments, lambdas inside kernels (capturing, generic, passed
// to helpers), and template kernels instantiated at the launch (`enqueue_function<k<256>>`,
// Mojo's `kernel[TPB]`). Fresh random inputs, poisoned outputs, every element checked.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::upload;

// ---- DEVCTX_DEVICE helpers -----------------------------------------------------------------------

template <class T>
DEVCTX_DEVICE T clamp_to(T v, T lo, T hi) {
  return v < lo ? lo : hi < v ? hi : v;
}

DEVCTX_DEVICE inline int triangle(int x) { return x * (x + 1) / 2; }

/// Sum of p[from..to], clamped to [0, n): a helper reading global memory through a pointer.
template <class T>
DEVCTX_DEVICE T window_sum(const T* p, std::ptrdiff_t from, std::ptrdiff_t to, std::ptrdiff_t n) {
  T sum{};
  for (std::ptrdiff_t k = from; k <= to; ++k)
    if (k >= 0 && k < n) sum += p[k];
  return sum;
}

/// The block's sum of v (block_dim().x threads, a power of two up to 1024), through `partials`
/// (block-shared, block_dim().x elements): the kind of helper CUB and course code write. Every
/// thread of the block must call it.
template <class T>
DEVCTX_DEVICE T tree_sum(T v, T* partials) {
  const unsigned t = devctx::thread_idx().x;
  partials[t] = v;
  devctx::barrier();
  for (unsigned half = devctx::block_dim().x / 2; half > 0; half /= 2) {
    if (t < half) partials[t] += partials[t + half];
    devctx::barrier();
  }
  const T total = partials[0];
  devctx::barrier();  // partials may be reused after the return
  return total;
}

DEVCTX_KERNEL void helpers(devctx::span<const int> in, devctx::span<int> out, devctx::span<int> block_totals) {
  DEVCTX_SHARED(int, partials, 128);
  const std::size_t i = devctx::global_idx().x;
  const auto n = std::ptrdiff_t(in.size());
  const int v = i < in.size() ? in[i] : 0;
  const int total = tree_sum<int>(v, partials);
  if (devctx::thread_idx().x == 0) block_totals[devctx::block_idx().x] = total;
  if (i >= in.size()) return;
  const int w = window_sum(in.data(), std::ptrdiff_t(i) - 2, std::ptrdiff_t(i) + 2, n);
  out[i] = clamp_to(w, -100, 100) + triangle(v % 8);
}

// ---- functors and lambdas ------------------------------------------------------------------------

/// A trivially copyable functor passed as a kernel argument and called on the device.
struct Affine {
  float a;
  float b;
  DEVCTX_DEVICE float operator()(float x) const { return a * x + b; }
};

template <class F>
DEVCTX_DEVICE int apply_twice(F f, int v) {
  return f(f(v));
}

DEVCTX_KERNEL void functor(Affine f, devctx::span<const float> in, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = f(in[i]);
}

DEVCTX_KERNEL void lambdas(devctx::span<const int> in, devctx::span<int> out, int offset) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= out.size()) return;
  const auto n = std::ptrdiff_t(in.size());
  // Capturing by reference, by value, a generic lambda, a mutable one, one passed to a helper.
  auto at = [&](std::ptrdiff_t k) { return k < 0 || k >= n ? 0 : in[std::size_t(k)]; };
  auto shifted = [offset](int v) { return v + offset; };
  auto twice = [](auto v) { return v + v; };
  int acc = 0;
  auto add = [&acc](int v) { acc += v; };
  for (int d = -1; d <= 1; ++d) add(at(std::ptrdiff_t(i) + d));
  out[i] = twice(acc) + apply_twice(shifted, in[i]) + apply_twice([](int v) { return v * 3; }, 1);
}

// ---- template kernels ----------------------------------------------------------------------------

/// Mojo's `fn block_sums[TPB: Int](out, a, size)`: a shared array of TPB elements per block, the
/// block's sum to out[block].
template <unsigned TPB>
DEVCTX_KERNEL void block_sums(float* out, const float* a, unsigned n) {
  DEVCTX_SHARED(float, cache, TPB);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = std::size_t(devctx::block_idx().x) * TPB + t;
  cache[t] = i < n ? a[i] : 0.0f;
  devctx::barrier();
  for (unsigned half = TPB / 2; half > 0; half /= 2) {
    if (t < half) cache[t] += cache[t + half];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = cache[0];
}

template <class T, int Scale>
DEVCTX_KERNEL void scale_by(devctx::span<const T> in, devctx::span<T> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] * T(Scale);
}

class KernelForms : public BackendTest {
 protected:
  /// block_sums<TPB> over `a` (on the device as `da`), each block's sum checked.
  template <unsigned TPB>
  void check_block_sums(const devctx::DeviceBuffer<float>& da, const std::vector<float>& a) {
    const auto n = unsigned(a.size());
    const unsigned blocks = (n + TPB - 1) / TPB;
    auto out = devctx_test::poisoned_buffer<float>(ctx(), blocks);
    ctx().enqueue_function<block_sums<TPB>>(devctx::LaunchConfig{.grid_dim = blocks, .block_dim = TPB}, out, da, n);
    std::vector<float> expect(blocks, 0.0f);
    for (unsigned i = 0; i < n; ++i) expect[i / TPB] += a[i];
    EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out))) << "TPB " << TPB;
  }
};
DEVCTX_INSTANTIATE_BACKEND_TESTS(KernelForms);

TEST_P(KernelForms, DeviceHelpersTemplatesPointersAndSharedMemory) {
  const unsigned blocks = 9, n = blocks * 128 - 37;  // a partial last block
  const auto values = devctx_test::random_vector<int>(rng, n, -60, 60);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<int>(ctx(), n);
  auto totals = devctx_test::poisoned_buffer<int>(ctx(), blocks);
  ctx().enqueue_function<helpers>(devctx::LaunchConfig{.grid_dim = blocks, .block_dim = 128}, in, out, totals);
  std::vector<int> expect(n), expect_totals(blocks, 0);
  for (unsigned i = 0; i < n; ++i) {
    int w = 0;
    for (int k = int(i) - 2; k <= int(i) + 2; ++k)
      if (k >= 0 && k < int(n)) w += values[std::size_t(k)];
    const int c = w < -100 ? -100 : w > 100 ? 100 : w;
    const int r = values[i] % 8;
    expect[i] = c + r * (r + 1) / 2;
    expect_totals[i / 128] += values[i];
  }
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out)));
  EXPECT_TRUE(devctx_test::all_equal(expect_totals, download(ctx(), totals)));
}

TEST_P(KernelForms, FunctorsAndLambdas) {
  const unsigned n = 2000;
  const auto xs = devctx_test::random_small_ints<float>(rng, n, -1000, 1000);
  auto in = upload(ctx(), xs);
  auto out = devctx_test::poisoned_buffer<float>(ctx(), n);
  const Affine f{float(rng() % 7) - 3.0f, float(rng() % 100)};
  ctx().enqueue_function<functor>(cover(n), f, in, out);
  std::vector<float> expect(n);
  for (unsigned i = 0; i < n; ++i) expect[i] = f.a * xs[i] + f.b;  // small integers: exact
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out)));

  const auto values = devctx_test::random_vector<int>(rng, n, -100000, 100000);
  const int offset = int(rng() % 1000) - 500;
  auto vin = upload(ctx(), values);
  auto vout = devctx_test::poisoned_buffer<int>(ctx(), n);
  ctx().enqueue_function<lambdas>(cover(n, 64), vin, vout, offset);
  std::vector<int> want(n);
  for (unsigned i = 0; i < n; ++i) {
    int acc = values[i];
    if (i > 0) acc += values[i - 1];
    if (i + 1 < n) acc += values[i + 1];
    want[i] = 2 * acc + values[i] + 2 * offset + 9;
  }
  EXPECT_TRUE(devctx_test::all_equal(want, download(ctx(), vout)));
}

TEST_P(KernelForms, TemplateKernelsInstantiatedAtTheLaunch) {
  const unsigned n = 5000;
  const auto a = devctx_test::random_small_ints<float>(rng, n, -50, 50);  // sums exact in any order
  auto da = upload(ctx(), a);
  check_block_sums<256>(da, a);
  check_block_sums<64>(da, a);
  check_block_sums<32>(da, a);

  const auto d = devctx_test::random_vector<double>(rng, n, -1e6, 1e6);
  auto dd = upload(ctx(), d);
  auto dout = devctx_test::poisoned_buffer<double>(ctx(), n);
  ctx().enqueue_function<scale_by<double, -3>>(cover(n), dd, dout);
  std::vector<double> dexpect(n);
  for (unsigned i = 0; i < n; ++i) dexpect[i] = d[i] * -3.0;
  EXPECT_TRUE(devctx_test::all_equal(dexpect, download(ctx(), dout)));
  const auto ints = devctx_test::random_vector<std::int64_t>(rng, n, -1000000, 1000000);
  auto di = upload(ctx(), ints);
  auto iout = devctx_test::poisoned_buffer<std::int64_t>(ctx(), n);
  ctx().enqueue_function<scale_by<std::int64_t, 7>>(cover(n), di, iout);
  std::vector<std::int64_t> iexpect(n);
  for (unsigned i = 0; i < n; ++i) iexpect[i] = ints[i] * 7;
  EXPECT_TRUE(devctx_test::all_equal(iexpect, download(ctx(), iout)));
}

}  // namespace
