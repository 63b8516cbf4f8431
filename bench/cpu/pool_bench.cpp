// SPDX-License-Identifier: Apache-2.0
// bench/cpu/pool_bench.cpp - the CPU backend's worker pool against OpenMP in one run (issue 13):
// a float vector add of 64 Mi elements, launch + synchronize of an empty kernel (with every
// worker, and with one and two workers in a child process), and a 256 MiB copy and memset
// against OpenMP's parallel memcpy/memset. The two sides alternate; each figure is the median of
// the repetitions, and each row prints devctx / OpenMP. Last, the CPU time an idle device uses.
// Usage: devctx_bench_cpu_pool [--reps N] [--mib M]   (--launch-only: the launch row alone)
#include <devctx/devctx.hpp>

#include "pool_baselines.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/stats.hpp"

namespace {

using devctx_bench::median;
using devctx_bench::seconds_of;

DEVCTX_KERNEL void pool_empty_kernel() {}

DEVCTX_KERNEL void pool_vector_add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c) {
  const std::size_t i = devctx::global_idx().x;
  if (i < c.size()) c[i] = a[i] + b[i];
}

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
template <class T>
using Array = std::unique_ptr<T[], FreeDeleter>;

template <class T>
Array<T> make_array(std::size_t n) {
  void* p = std::aligned_alloc(4096, (n * sizeof(T) + 4095) / 4096 * 4096);
  if (p == nullptr) {
    std::fprintf(stderr, "devctx_bench_cpu_pool: out of memory\n");
    std::exit(1);
  }
  return Array<T>(static_cast<T*>(p));
}

/// Runs `a` and `b` alternately `reps` times after one untimed run each; medians in seconds.
/// Between runs the other side's threads get time to stop spinning and fall asleep (OpenMP's
/// idle threads spin for a while by default), so neither side runs against the other's spin.
std::pair<double, double> alternate(int reps, const auto& a, const auto& b) {
  a();
  b();
  std::vector<double> ta, tb;
  for (int r = 0; r < reps; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ta.push_back(seconds_of(a));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    tb.push_back(seconds_of(b));
  }
  return {median(ta), median(tb)};
}

/// Median microseconds of launch + synchronize of an empty one-block kernel (batches of 200).
double launch_us(devctx::DeviceContext& ctx, int reps) {
  std::vector<double> batches;
  for (int r = 0; r < reps * 4; ++r) {
    batches.push_back(seconds_of([&] {
                        for (int i = 0; i < 200; ++i) {
                          ctx.enqueue_function<pool_empty_kernel>({.grid_dim = 1, .block_dim = 1});
                          ctx.synchronize();
                        }
                      }) /
                      200 * 1e6);
  }
  return median(batches);
}

/// The launch row of a child process with `workers` workers and the environment words `env`
/// (NAME=VALUE ...), or a negative number.
double launch_us_with(const char* self, int workers, int reps, const std::string& env = "") {
  const std::string command = env + " DEVCTX_CPU_THREADS=" + std::to_string(workers) + " '" + self +
                              "' --launch-only --reps " + std::to_string(reps);
  FILE* child = popen(command.c_str(), "r");
  if (child == nullptr) return -1;
  double us = -1;
  if (std::fscanf(child, "%lf", &us) != 1) us = -1;
  pclose(child);
  return us;
}

/// CPU time of the whole process (all its threads) so far.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return sec(usage.ru_utime) + sec(usage.ru_stime);
}

void row(const char* what, double devctx_value, double omp_value, const char* unit, double target) {
  const double ratio = devctx_value / omp_value;
  std::printf("  %-34s devctx %8.2f %s   OpenMP %8.2f %s   ratio %5.2fx  (target >= %.2fx)%s\n", what, devctx_value,
              unit, omp_value, unit, ratio, target, ratio >= target ? "" : "  BELOW TARGET");
}

/// Part 1: a float vector add of 64 Mi elements, devctx against OpenMP. False when a result is wrong.
bool vector_add_part(devctx::DeviceContext& ctx, int reps) {
  const std::size_t n = std::size_t{64} << 20;
  auto a = ctx.enqueue_create_buffer<float>(n), b = ctx.enqueue_create_buffer<float>(n);
  auto c = ctx.enqueue_create_buffer<float>(n);
  ctx.enqueue_memset(a, 1.5f);
  ctx.enqueue_memset(b, 2.25f);
  ctx.enqueue_memset(c, 0.0f);
  ctx.synchronize();
  auto oa = make_array<float>(n), ob = make_array<float>(n), oc = make_array<float>(n);
  float *pa = oa.get(), *pb = ob.get(), *pc = oc.get();
  pool_bench::omp_fill3(pa, pb, pc, n, 1.5f, 2.25f, 0.0f);
  const auto [td, to] = alternate(
      reps,
      [&] {
        ctx.enqueue_function<pool_vector_add>({.grid_dim = unsigned(n / 256), .block_dim = 256}, a, b, c);
        ctx.synchronize();
      },
      [&] { pool_bench::omp_vector_add(pa, pb, pc, n); });
  std::vector<float> back(n);
  ctx.enqueue_copy(back, c);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += back[i] == 3.75f && pc[i] == 3.75f ? 0 : 1;
  if (wrong != 0) {
    std::printf("  vector add: %zu wrong elements\n", wrong);
    return false;
  }
  const double bytes = 3.0 * double(n) * sizeof(float);
  row("vector add 64 Mi floats (GB/s)", bytes / td / 1e9, bytes / to / 1e9, "GB/s", 0.9);
  return true;
}

/// Part 2: launch + synchronize of an empty kernel with every worker, one and two (child processes
/// of `self`), with and without spinning workers, and the yardsticks under them.
void launch_part(devctx::DeviceContext& ctx, int reps, const char* self) {
  const unsigned workers = ctx.info().multiprocessors;
  const double all = launch_us(ctx, reps);
  const auto omp_region_us = [&](int threads) {
    std::vector<double> t;
    for (int r = 0; r < reps * 4; ++r) {
      t.push_back(seconds_of([&] {
                    for (int i = 0; i < 200; ++i)
                      threads > 0 ? pool_bench::omp_empty_region(threads) : pool_bench::omp_empty_region();
                  }) /
                  200 * 1e6);
    }
    return median(t);
  };
  const double omp_all = omp_region_us(0), omp_two = omp_region_us(2);
  const double one = launch_us_with(self, 1, reps), two = launch_us_with(self, 2, reps);
  const std::string no_spin = "DEVCTX_CPU_SPIN_US=0";
  const double all_ns = launch_us_with(self, int(workers), reps, no_spin);
  const double one_ns = launch_us_with(self, 1, reps, no_spin), two_ns = launch_us_with(self, 2, reps, no_spin);
  std::printf(
      "  empty launch + synchronize         devctx %8.2f us with %u workers (target <= 2 us)%s; "
      "1 worker %.2f us, 2 workers %.2f us\n",
      all, workers, all <= 2.0 ? "" : "  ABOVE TARGET", one, two);
  std::printf("    with DEVCTX_CPU_SPIN_US=0 (no worker spins)       %.2f us with %u workers; 1 worker %.2f us, 2 workers %.2f us\n",
              all_ns, workers, one_ns, two_ns);
  std::printf(
      "    yardsticks: an empty OpenMP parallel region %.2f us (%d threads), %.2f us (2 threads); a round trip\n"
      "    between two threads through one cache line (both spinning) %.3f us, through condition variables %.2f us\n",
      omp_all, pool_bench::omp_threads(), omp_two, pool_bench::spin_round_trip_us(reps * 4, 2000),
      pool_bench::sleep_round_trip_us(reps * 4, 200));
}

/// Part 3: a copy and a memset of `mib` MiB against OpenMP's parallel memcpy and memset.
void copy_memset_part(devctx::DeviceContext& ctx, int reps, std::size_t mib) {
  const std::size_t bytes = mib << 20;
  auto src = ctx.enqueue_create_buffer<std::uint8_t>(bytes), dst = ctx.enqueue_create_buffer<std::uint8_t>(bytes);
  ctx.enqueue_memset(src, std::uint8_t{7});
  ctx.enqueue_memset(dst, std::uint8_t{0});
  ctx.synchronize();
  auto osrc = make_array<std::uint8_t>(bytes), odst = make_array<std::uint8_t>(bytes);
  std::uint8_t *ps = osrc.get(), *pd = odst.get();
  pool_bench::omp_memset(ps, 7, bytes);
  pool_bench::omp_memset(pd, 0, bytes);
  const auto [tc, toc] = alternate(
      reps,
      [&] {
        ctx.enqueue_copy(dst, src);
        ctx.synchronize();
      },
      [&] { pool_bench::omp_memcpy(pd, ps, bytes); });
  const std::string copy_label = std::to_string(mib) + " MiB copy (GB/s, read+write)";
  row(copy_label.c_str(), 2.0 * double(bytes) / tc / 1e9, 2.0 * double(bytes) / toc / 1e9, "GB/s", 0.9);
  const auto [tm, tom] = alternate(
      reps,
      [&] {
        ctx.enqueue_memset(dst, std::uint8_t{9});
        ctx.synchronize();
      },
      [&] { pool_bench::omp_memset(pd, 9, bytes); });
  const std::string set_label = std::to_string(mib) + " MiB memset (GB/s)";
  row(set_label.c_str(), double(bytes) / tm / 1e9, double(bytes) / tom / 1e9, "GB/s", 0.9);
}

/// Part 4: the CPU time of the process over a second of idling after 100 launches.
void idle_part(devctx::DeviceContext& ctx) {
  for (int i = 0; i < 100; ++i) ctx.enqueue_function<pool_empty_kernel>({.grid_dim = 1, .block_dim = 1});
  ctx.synchronize();
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::printf("  idle device: %.3f ms of CPU time in the second after 100 launches (target < 1 ms)\n",
              (cpu_seconds() - before) * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 11;
  std::size_t mib = 256;
  bool launch_only = false;
  devctx_bench::Args args("devctx_bench_cpu_pool", "The CPU backend's worker pool against OpenMP, in one run");
  args.option("--reps", reps, "Alternating runs of each row (median reported)", 3, 100000);
  args.option("--mib", mib, "Size of the copy and memset rows, MiB", 1, std::size_t{1} << 20);
  args.flag("--launch-only", launch_only, "Print the launch row's microseconds alone (the child runs)");
  args.parse(argc, argv);
  devctx::DeviceContext ctx{devctx::Api::cpu};
  if (launch_only) {
    std::printf("%.3f\n", launch_us(ctx, reps));
    return 0;
  }
  std::printf("devctx CPU pool vs OpenMP on %s; OpenMP threads %d; median of %d alternating runs\n", ctx.name().c_str(),
              pool_bench::omp_threads(), reps);
  if (!vector_add_part(ctx, reps)) return 1;
  launch_part(ctx, reps, argv[0]);
  copy_memset_part(ctx, reps, mib);
  idle_part(ctx);
  return 0;
}
