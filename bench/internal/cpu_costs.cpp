// SPDX-License-Identifier: Apache-2.0
// Measures the CPU backend's cost model (docs/cpu-backend.md): launch + synchronize latency,
// the cost of a block on each execution path, and the cost of one barrier per thread.
// Usage: devctx_bench_cpu_costs [--reps N]
#include <devctx/devctx.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "support/args.hpp"
#include "support/trials.hpp"

namespace {

constexpr unsigned kBarriers = 16;

DEVCTX_KERNEL void empty_kernel() {}

DEVCTX_KERNEL void touch(devctx::span<unsigned> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = unsigned(i);
}

DEVCTX_KERNEL void barriers(devctx::span<unsigned> out, unsigned count) {
  DEVCTX_SHARED(unsigned, s, 1024);
  const unsigned t = devctx::thread_idx().x;
  s[t] = t;
  for (unsigned k = 0; k < count; ++k) devctx::barrier();
  out[devctx::global_idx().x] = s[(t + 1) % devctx::block_dim().x];
}

DEVCTX_KERNEL void phases(devctx::Block blk, devctx::span<unsigned> out, unsigned count) {
  DEVCTX_SHARED(unsigned, s, 1024);
  blk.for_each_thread([&](devctx::Thread t) { s[t.x] = unsigned(t.x); });
  for (unsigned k = 1; k < count; ++k) blk.for_each_thread([&](devctx::Thread t) { s[t.x] += 1; });
  blk.for_each_thread([&](devctx::Thread t) { out[blk.global_idx(t).x] = s[t.x]; });
}

/// The median seconds of `reps` runs of `f` (no warm-up: the first launch is one of the runs).
double median_seconds(int reps, const std::function<void()>& f) { return devctx_bench::median_seconds(reps, 0, f); }

}  // namespace

int main(int argc, char** argv) {
  int reps = 21;
  devctx_bench::Args args("devctx_bench_cpu_costs",
                          "The CPU backend's cost model: launch, plain loop, barrier, block-level phase");
  args.option("--reps", reps, "Timed runs of each measurement (median reported; the launch 10 times as many)", 3, 100000);
  args.parse(argc, argv);
  devctx::DeviceContext ctx{devctx::Api::cpu};
  const unsigned workers = ctx.info().multiprocessors;
  std::printf("devctx CPU backend cost model on %s (median of %d runs)\n", ctx.name().c_str(), reps);
  // The model of the untranslated paths: the plain loop and fibers. With the fission translator on
  // in this build, `touch` and `barriers` have twins (DEVCTX_CPU_FISSION is read at each launch):
  // off here, on again for the translated rows at the end.
  ::setenv("DEVCTX_CPU_FISSION", "0", 1);

  const double launch = median_seconds(reps * 10, [&] {
    ctx.enqueue_function<empty_kernel>({.grid_dim = 1, .block_dim = 1});
    ctx.synchronize();
  });
  std::printf("  empty kernel, 1 block: launch + synchronize        %8.2f us\n", launch * 1e6);

  const unsigned blocks = 8192, threads = 256;
  auto out = ctx.enqueue_create_buffer<unsigned>(std::size_t(blocks) * threads);
  const double plain = median_seconds(reps, [&] {
    ctx.enqueue_function<touch>({.grid_dim = blocks, .block_dim = threads}, out);
    ctx.synchronize();
  });
  std::printf("  plain loop: per block of %u threads (core time)      %8.2f ns (%.2f ns per thread)\n", threads,
              plain * 1e9 * workers / blocks, plain * 1e9 * workers / (double(blocks) * threads));

  auto coop = [&](unsigned count) {
    return median_seconds(reps, [&] {
      ctx.enqueue_function<barriers>({.grid_dim = blocks, .block_dim = threads}, out, count);
      ctx.synchronize();
    });
  };
  const double c1 = coop(1), cn = coop(1 + kBarriers);
  const double per_barrier = (cn - c1) * workers / (double(blocks) * threads * kBarriers);
  std::printf("  cooperative: one barrier, per thread (core time)     %8.2f ns\n", per_barrier * 1e9);
  std::printf("  cooperative: block with 1 barrier, per block         %8.2f us\n", c1 * 1e6 * workers / blocks);
  // The same per block size (the fiber switch's cost depends on how many fibers a block has:
  // compare builds with -DDEVCTX_FIBER=asm and =boost). As many threads in all at every size.
  for (const unsigned size : {32u, 256u, 1024u}) {
    const unsigned b = blocks * threads / size;
    auto at = [&](unsigned count) {
      return median_seconds(reps, [&] {
        ctx.enqueue_function<barriers>({.grid_dim = b, .block_dim = size}, out, count);
        ctx.synchronize();
      });
    };
    const double a1 = at(1), an = at(1 + kBarriers);
    std::printf("  cooperative: one barrier, per thread, blocks of %4u  %8.2f ns\n", size,
                (an - a1) * 1e9 * workers / (double(b) * size * kBarriers));
  }

  ::setenv("DEVCTX_CPU_FISSION", "1", 1);
  const double plain_twin = median_seconds(reps, [&] {
    ctx.enqueue_function<touch>({.grid_dim = blocks, .block_dim = threads}, out);
    ctx.synchronize();
  });
  const double t1 = coop(1), tn = coop(1 + kBarriers);
  std::printf("  translated (if this build's translator ran; else as above):\n");
  std::printf("    map kernel: per block of %u threads (core time)    %8.2f ns\n", threads,
              plain_twin * 1e9 * workers / blocks);
  std::printf("    one barrier, per thread (core time)                %8.2f ns\n",
              (tn - t1) * 1e9 * workers / (double(blocks) * threads * kBarriers));

  auto phased = [&](unsigned count) {
    return median_seconds(reps, [&] {
      ctx.enqueue_function<phases>({.grid_dim = blocks, .block_dim = threads}, out, count);
      ctx.synchronize();
    });
  };
  const double p1 = phased(2), pn = phased(2 + kBarriers);
  std::printf("  block-level: one phase, per thread (core time)       %8.2f ns\n",
              (pn - p1) * 1e9 * workers / (double(blocks) * threads * kBarriers));
  std::printf("  ratio cooperative barrier / block-level phase        %8.1fx\n",
              per_barrier / ((pn - p1) * workers / (double(blocks) * threads * kBarriers)));
  return 0;
}
