// SPDX-License-Identifier: Apache-2.0
// bench/cpu/handoff_floor.cpp - the least that handing work to another thread and hearing back
// costs on this machine, with no devctx code (devctx_bench_cpu_pool's floor rows): two threads
// pass a token back and forth through one cache line (both spinning), or through a condition
// variable (both sleeping). A launch that a worker runs while the host waits for it is at least
// one such round trip; an empty OpenMP region with two threads is another yardstick.
#include "pool_baselines.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "support/clock.hpp"
#include "support/stats.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pool_bench {
namespace {

using devctx_bench::Clock;
using devctx_bench::median;

inline void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

double spin_round_trip_us(int batches, int per_batch) {
  alignas(64) std::atomic<std::uint64_t> token{0};
  const std::uint64_t last = 2 * std::uint64_t(batches + 1) * std::uint64_t(per_batch);
  std::thread other([&] {
    for (std::uint64_t seen = 1; seen < last; seen += 2) {
      while (token.load(std::memory_order_acquire) != seen) relax();
      token.store(seen + 1, std::memory_order_release);
    }
  });
  std::vector<double> us;
  std::uint64_t next = 1;
  for (int b = 0; b <= batches; ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < per_batch; ++i, next += 2) {
      token.store(next, std::memory_order_release);
      while (token.load(std::memory_order_acquire) != next + 1) relax();
    }
    if (b > 0) us.push_back(devctx_bench::us_since(start) / per_batch);
  }
  other.join();
  return median(us);
}

double sleep_round_trip_us(int batches, int per_batch) {
  std::mutex m;
  std::condition_variable to_other, to_me;
  std::uint64_t token = 0;
  const std::uint64_t last = 2 * std::uint64_t(batches + 1) * std::uint64_t(per_batch);
  std::thread other([&] {
    std::unique_lock lock(m);
    for (std::uint64_t seen = 1; seen < last; seen += 2) {
      to_other.wait(lock, [&] { return token == seen; });
      token = seen + 1;
      to_me.notify_one();
    }
  });
  std::vector<double> us;
  std::uint64_t next = 1;
  for (int b = 0; b <= batches; ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < per_batch; ++i, next += 2) {
      std::unique_lock lock(m);
      token = next;
      to_other.notify_one();
      to_me.wait(lock, [&] { return token == next + 1; });
    }
    if (b > 0) us.push_back(devctx_bench::us_since(start) / per_batch);
  }
  other.join();
  return median(us);
}

}  // namespace pool_bench
