// SPDX-License-Identifier: Apache-2.0
// tests/atomics_test.cpp - the kernel atomics (add, sub, min, max, and, or, xor, exchange,
// compare-exchange, inc, dec) on 32/64-bit integers, float and double, run on every backend with
// 16384 threads contending for the same few cells; results against a host reference, with
// values chosen so that every order of the updates gives the same exact result.
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
    if constexpr (std::is_floating_point_v<T>) values = devctx_test::random_small_ints<T>(rng, kThreads, 0, int(hi));
    else values = devctx_test::random_vector<T>(rng, kThreads, T(0), T(hi));
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
