// SPDX-License-Identifier: Apache-2.0
// tests/atomics_test.cpp - the kernel atomics (add, sub, min, max, and, or, xor, exchange,
// compare-exchange, inc, dec) on 32/64-bit integers, float and double, run on every backend with
// 16384 threads contending for the same few cells; results against a host reference, with
// values chosen so that every order of the updates gives the same exact result; values of another
// type than the pointee (converted, as CUDA does) and every atomic on DEVCTX_SHARED elements.
#include "support/test_support.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::upload;

namespace {
enum Cell : unsigned { kAdd, kSub, kMax, kMin, kExchange, kCas, kAnd, kOr, kXor, kInc, kDec, kCells };
constexpr std::size_t kThreads = 64 * 256;
}  // namespace

template <class T>
DEVCTX_KERNEL void contend(devctx::span<T> cells, devctx::span<const T> values, devctx::span<T> exchanged,
                           devctx::span<T> added, T limit) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= values.size()) return;
  const T v = values[i];
  added[i] = devctx::atomic_add(&cells[kAdd], v);
  devctx::atomic_sub(&cells[kSub], v);
  devctx::atomic_max(&cells[kMax], v);
  devctx::atomic_min(&cells[kMin], v);
  exchanged[i] = devctx::atomic_exchange(&cells[kExchange], v);
  // A counter by compare-exchange: retry until this thread's increment lands.
  T seen{};  // a guess: a plain read of the cell would race with the other threads' CAS (TSan)
  while (true) {
    const T before = devctx::atomic_cas(&cells[kCas], seen, T(seen + T(1)));
    if (before == seen) break;  // exact small integers: == is bit equality here
    seen = before;
  }
  if constexpr (std::is_integral_v<T>) {
    devctx::atomic_and(&cells[kAnd], T(~T(std::uint64_t(1) << (i % (8 * sizeof(T)))) | v));
    devctx::atomic_or(&cells[kOr], T(v & T(~T(7))));
    devctx::atomic_xor(&cells[kXor], v);
    if constexpr (std::is_unsigned_v<T>) {
      devctx::atomic_inc(&cells[kInc], limit);
      devctx::atomic_dec(&cells[kDec], limit);
    }
  }
}

class AtomicFamily : public BackendTest {
 protected:
  template <class T>
  void check() {
    // Values whose sums are exact in any order: integers, small enough for float's 24 bits.
    // float: every running sum below 2^24; 32-bit integers: below 2^31.
    const long long hi = std::is_same_v<T, float> ? 1000 : sizeof(T) == 4 ? 30000 : 1000000;
    std::vector<T> values;
    if constexpr (std::is_floating_point_v<T>)
      values = devctx_test::random_small_ints<T>(rng, kThreads, 0, int(hi));
    else
      values = devctx_test::random_vector<T>(rng, kThreads, T(0), T(hi));
    std::vector<T> init(kCells);
    init[kAdd] = T(5);
    init[kSub] = T(kThreads * hi);
    init[kMax] = T(0);
    init[kMin] = T(hi + 1);
    init[kExchange] = T(424242);
    init[kCas] = T(17);
    init[kAnd] = std::is_integral_v<T> ? T(-1) : T(0);  // all bits set for integers
    init[kOr] = T(0);
    init[kXor] = T(0);
    const T limit = T(1000);
    init[kInc] = T(7);
    init[kDec] = T(3);
    auto cells = upload(ctx(), init);
    auto in = upload(ctx(), values);
    auto exchanged = devctx_test::poisoned_buffer<T>(ctx(), kThreads);
    auto added = devctx_test::poisoned_buffer<T>(ctx(), kThreads);
    ctx().enqueue_function<contend<T>>(cover(kThreads, 256), cells, in, exchanged, added, limit);
    const auto c = download(ctx(), cells);

    T sum = T(0), max = init[kMax], min = init[kMin];
    std::uint64_t and_ = std::uint64_t(init[kAnd]), or_ = 0, xor_ = 0;  // integers only
    for (std::size_t i = 0; i < kThreads; ++i) {
      const T v = values[i];
      sum = T(sum + v);
      max = std::max(max, v);
      min = std::min(min, v);
      if constexpr (std::is_integral_v<T>) {
        and_ &= std::uint64_t(T(~T(std::uint64_t(1) << (i % (8 * sizeof(T)))) | v));
        or_ |= std::uint64_t(T(v & T(~T(7))));
        xor_ ^= std::uint64_t(v);
      }
    }
    EXPECT_EQ(c[kAdd], T(init[kAdd] + sum)) << "atomic_add";
    EXPECT_EQ(c[kSub], T(init[kSub] - sum)) << "atomic_sub";
    EXPECT_EQ(c[kMax], max) << "atomic_max";
    EXPECT_EQ(c[kMin], min) << "atomic_min";
    EXPECT_EQ(c[kCas], T(init[kCas] + T(kThreads))) << "atomic_cas";
    if constexpr (std::is_integral_v<T>) {
      EXPECT_EQ(c[kAnd], T(and_)) << "atomic_and";
      EXPECT_EQ(c[kOr], T(or_)) << "atomic_or";
      EXPECT_EQ(c[kXor], T(xor_)) << "atomic_xor";
    }
    if constexpr (std::is_unsigned_v<T>) {
      // inc wraps to 0 after `limit`; dec wraps from 0 to `limit`.
      EXPECT_EQ(c[kInc], T((init[kInc] + kThreads) % (std::uint64_t(limit) + 1))) << "atomic_inc";
      const std::uint64_t period = std::uint64_t(limit) + 1;
      EXPECT_EQ(c[kDec], T((init[kDec] + period - kThreads % period) % period)) << "atomic_dec";
    }
    // exchange: the old values and the final one are the initial value and every thread's, once each.
    auto seen = download(ctx(), exchanged);
    seen.push_back(c[kExchange]);
    auto expect = values;
    expect.push_back(init[kExchange]);
    std::sort(seen.begin(), seen.end());
    std::sort(expect.begin(), expect.end());
    EXPECT_TRUE(devctx_test::all_equal(expect, seen)) << "atomic_exchange";
    // add returns distinct running sums: sorted, each is the previous plus one thread's value.
    auto olds = download(ctx(), added);
    std::sort(olds.begin(), olds.end());
    ASSERT_EQ(olds.front(), init[kAdd]);
    std::vector<T> steps(kThreads);
    for (std::size_t i = 0; i + 1 < kThreads; ++i) steps[i] = T(olds[i + 1] - olds[i]);
    steps.back() = T(c[kAdd] - olds.back());
    auto sorted_values = values;
    std::sort(sorted_values.begin(), sorted_values.end());
    std::sort(steps.begin(), steps.end());
    EXPECT_TRUE(devctx_test::all_equal(sorted_values, steps)) << "atomic_add's old values";
  }
};
DEVCTX_INSTANTIATE_BACKEND_TESTS(AtomicFamily);

TEST_P(AtomicFamily, Int32) { check<std::int32_t>(); }
TEST_P(AtomicFamily, Uint32) { check<std::uint32_t>(); }
TEST_P(AtomicFamily, Int64) { check<std::int64_t>(); }
TEST_P(AtomicFamily, Uint64) { check<std::uint64_t>(); }
TEST_P(AtomicFamily, Float) { check<float>(); }
TEST_P(AtomicFamily, Double) { check<double>(); }

// ---- values of another type, and atomics on shared memory ------------------------------------------
// The element type comes from the pointer alone and the value converts to it, as with CUDA's
// atomic* functions: `atomic_add(&bins[b], 1)` on unsigned bins (an int literal) compiles on
// every backend and adds 1u.

namespace {
constexpr unsigned kBins = 16;
}  // namespace

DEVCTX_KERNEL void histogram_literals(devctx::span<const unsigned> keys, devctx::span<unsigned> bins32,
                                      devctx::span<std::uint64_t> bins64, devctx::span<float> binsf,
                                      devctx::span<double> binsd) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= keys.size()) return;
  const unsigned b = keys[i] % kBins;
  devctx::atomic_add(&bins32[b], 1);          // int -> unsigned
  devctx::atomic_add(&bins64[b], 2);          // int -> uint64
  devctx::atomic_add(&binsf[b], 1);           // int -> float
  devctx::atomic_add(&binsd[b], 0.5f);        // float -> double
  devctx::atomic_sub(&bins32[kBins + b], 1);  // the second half counts down from 1000
}

class AtomicConversions : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(AtomicConversions);

TEST_P(AtomicConversions, LiteralsOfOtherTypesConvertToThePointee) {
  constexpr std::size_t n = 5000;
  const auto keys = devctx_test::random_vector<unsigned>(rng, n, 0u, 1000000u);
  std::vector<unsigned> init32(2 * kBins, 0);
  for (unsigned b = 0; b < kBins; ++b) init32[kBins + b] = 1000;
  auto k = upload(ctx(), keys);
  auto b32 = upload(ctx(), init32);
  auto b64 = upload(ctx(), std::vector<std::uint64_t>(kBins, 0));
  auto bf = upload(ctx(), std::vector<float>(kBins, 0.0f));
  auto bd = upload(ctx(), std::vector<double>(kBins, 0.0));
  ctx().enqueue_function<histogram_literals>(cover(n, 128), k, b32, b64, bf, bd);
  std::vector<unsigned> e32(2 * kBins, 0);
  std::vector<std::uint64_t> e64(kBins, 0);
  std::vector<float> ef(kBins, 0.0f);
  std::vector<double> ed(kBins, 0.0);
  for (unsigned b = 0; b < kBins; ++b) e32[kBins + b] = 1000;
  for (unsigned key : keys) {
    const unsigned b = key % kBins;
    ++e32[b];
    --e32[kBins + b];
    e64[b] += 2;
    ef[b] += 1.0f;
    ed[b] += 0.5;
  }
  EXPECT_TRUE(devctx_test::all_equal(e32, download(ctx(), b32)));
  EXPECT_TRUE(devctx_test::all_equal(e64, download(ctx(), b64)));
  EXPECT_TRUE(devctx_test::all_equal(ef, download(ctx(), bf)));  // small integers: exact in any order
  EXPECT_TRUE(devctx_test::all_equal(ed, download(ctx(), bd)));
}

namespace {
enum SharedCell : unsigned { sAdd, sSub, sMax, sMin, sExchange, sCas, sAnd, sOr, sXor, sInc, sDec, sCells };
constexpr unsigned kSharedBlock = 128;
}  // namespace

// Every atomic on elements of DEVCTX_SHARED arrays, each given a value of another type (int for
// the unsigned cells, int and double for the float ones); thread 0 writes the block's cells out.
DEVCTX_KERNEL void shared_atomics(devctx::span<const int> values, devctx::span<unsigned> out, devctx::span<float> outf) {
  DEVCTX_SHARED(unsigned, cells, sCells);
  DEVCTX_SHARED(float, fcells, 3);
  const unsigned t = devctx::thread_idx().x;
  if (t == 0) {
    cells[sAdd] = 5;
    cells[sSub] = 1000000;
    cells[sMax] = 0;
    cells[sMin] = 0xFFFFFFFFu;
    cells[sExchange] = 424242;
    cells[sCas] = 17;
    cells[sAnd] = 0xFFFFFFFFu;
    cells[sOr] = 0;
    cells[sXor] = 0;
    cells[sInc] = 7;
    cells[sDec] = 3;
    fcells[0] = 0.0f;
    fcells[1] = 0.0f;
    fcells[2] = 1e9f;
  }
  devctx::barrier();
  const std::size_t i = devctx::global_idx().x;
  const int v = values[i];
  devctx::atomic_add(&cells[sAdd], v);
  devctx::atomic_sub(&cells[sSub], v);
  devctx::atomic_max(&cells[sMax], v);
  devctx::atomic_min(&cells[sMin], v);
  devctx::atomic_exchange(&cells[sExchange], 9);
  unsigned seen = 0;
  while (true) {
    const unsigned before = devctx::atomic_cas(&cells[sCas], seen, seen + 1);  // unsigned + int
    if (before == seen) break;
    seen = before;
  }
  devctx::atomic_and(&cells[sAnd], ~(1 << (v % 31)));
  devctx::atomic_or(&cells[sOr], 1 << (v % 29));
  devctx::atomic_xor(&cells[sXor], v);
  devctx::atomic_inc(&cells[sInc], 50);
  devctx::atomic_dec(&cells[sDec], 50);
  devctx::atomic_add(&fcells[0], 1);          // int -> float
  devctx::atomic_max(&fcells[1], v);          // int -> float
  devctx::atomic_min(&fcells[2], double(v));  // double -> float
  devctx::barrier();
  if (t < sCells) out[devctx::block_idx().x * sCells + t] = cells[t];
  if (t < 3) outf[devctx::block_idx().x * 3 + t] = fcells[t];
}

TEST_P(AtomicConversions, EveryAtomicOnSharedMemory) {
  constexpr unsigned blocks = 6;
  constexpr std::size_t n = blocks * kSharedBlock;
  const auto values = devctx_test::random_vector<int>(rng, n, 0, 4000);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<unsigned>(ctx(), blocks * sCells);
  auto outf = devctx_test::poisoned_buffer<float>(ctx(), blocks * 3);
  ctx().enqueue_function<shared_atomics>(devctx::LaunchConfig{.grid_dim = blocks, .block_dim = kSharedBlock}, in, out,
                                         outf);
  std::vector<unsigned> expect(blocks * sCells);
  std::vector<float> expectf(blocks * 3);
  for (unsigned b = 0; b < blocks; ++b) {
    unsigned* c = &expect[b * sCells];
    c[sAdd] = 5, c[sSub] = 1000000, c[sMax] = 0, c[sMin] = 0xFFFFFFFFu, c[sExchange] = 9, c[sCas] = 17 + kSharedBlock,
    c[sAnd] = 0xFFFFFFFFu, c[sOr] = 0, c[sXor] = 0;
    c[sInc] = unsigned((7 + kSharedBlock) % 51);
    c[sDec] = unsigned((3 + 51 - kSharedBlock % 51) % 51);
    float* f = &expectf[b * 3];
    f[0] = float(kSharedBlock), f[1] = 0.0f, f[2] = 1e9f;
    for (unsigned t = 0; t < kSharedBlock; ++t) {
      const int v = values[b * kSharedBlock + t];
      c[sAdd] += unsigned(v);
      c[sSub] -= unsigned(v);
      c[sMax] = std::max(c[sMax], unsigned(v));
      c[sMin] = std::min(c[sMin], unsigned(v));
      c[sAnd] &= unsigned(~(1 << (v % 31)));
      c[sOr] |= unsigned(1 << (v % 29));
      c[sXor] ^= unsigned(v);
      f[1] = std::max(f[1], float(v));
      f[2] = std::min(f[2], float(v));
    }
  }
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out)));
  EXPECT_TRUE(devctx_test::all_equal(expectf, download(ctx(), outf)));
}
