// SPDX-License-Identifier: Apache-2.0
// The cost of one fiber switch with devctx's assembly and with the portable Boost.Context
// fallback (fcontext), in the same run: a ring of N fibers on stacks laid out as the CPU backend
// lays them out (a slot of 128 KiB each, tops staggered by a cache line), each switching to the
// next, as a barrier that finds every thread released does. The two alternate rep by rep; the
// medians and their ratio are printed. Only the switch is compared: the executor's own work at
// a barrier is in devctx_bench_cpu_costs ("one barrier, per thread"), whose numbers for a build
// with -DDEVCTX_FIBER=boost are in bench/results/fiber-switch.md.
//
// Usage: devctx_bench_fiber_switch [--reps N] [--switches N]   (default 9 reps, 20 million switches)
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "backends/cpu/fiber_boost.hpp"
#include "backends/cpu/fiber_switch.hpp"
#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/stats.hpp"

namespace cpu = devctx::detail::cpu;

namespace {

constexpr std::size_t kMaxFibers = 1024;
constexpr std::size_t kSlot = std::size_t{128} << 10;

struct Assembly {
  static constexpr const char* name = "assembly";
  static void switch_to(cpu::FiberSp* save, cpu::FiberSp load) { cpu::devctx_fiber_switch(save, load); }
  [[noreturn]] static void jump_to(cpu::FiberSp load) { cpu::devctx_fiber_jump(load); }
  static cpu::FiberSp prepare(cpu::FiberStack s, void (*entry)(void*), void* arg) {
    return cpu::raw_fiber_prepare(s, entry, arg);
  }
};

struct Boost {
  static constexpr const char* name = "Boost.Context";
  static void switch_to(cpu::FiberSp* save, cpu::FiberSp load) { cpu::boost_fiber::switch_to(save, load); }
  [[noreturn]] static void jump_to(cpu::FiberSp load) { cpu::boost_fiber::jump_to(load); }
  static cpu::FiberSp prepare(cpu::FiberStack s, void (*entry)(void*), void* arg) {
    return cpu::boost_fiber::prepare(s, entry, arg);
  }
};

struct Ring {
  cpu::FiberSp sps[kMaxFibers];
  cpu::FiberSp main = nullptr;
  std::size_t n = 0;
  std::uint64_t rounds = 0, target = 0;
};
Ring ring;

template <class Impl>
void member(void* p) {
  const auto me = reinterpret_cast<std::uintptr_t>(p);
  const std::size_t next = me + 1 == ring.n ? 0 : me + 1;
  for (;;) {
    if (me == 0 && ring.rounds++ == ring.target) Impl::jump_to(ring.main);
    Impl::switch_to(&ring.sps[me], ring.sps[next]);
  }
}

// Nanoseconds per switch for one ring of n fibers.
template <class Impl>
double run(char* base, std::size_t n, double switches) {
  ring.n = n;
  for (std::size_t i = 0; i < n; ++i) {
    char* const bottom = base + i * kSlot;
    ring.sps[i] = Impl::prepare({bottom, bottom + kSlot - (i % 64) * 64}, &member<Impl>, reinterpret_cast<void*>(i));
  }
  ring.rounds = 0;
  ring.target = std::uint64_t(switches / double(n)) + 1;
  const double s = devctx_bench::seconds_of([] { Impl::switch_to(&ring.main, ring.sps[0]); });
  return s * 1e9 / (double(ring.target) * double(n));
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 9;
  double switches = 20e6;
  devctx_bench::Args args("devctx_bench_fiber_switch", "The fiber switch: devctx's assembly against Boost.Context");
  args.option("--reps", reps, "Alternating runs per ring size (median reported)", 1, 1000);
  args.option("--switches", switches, "Switches per run", 1e4, 1e12);
  args.parse(argc, argv);
  const std::size_t bytes = kMaxFibers * kSlot;
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  auto* base = static_cast<char*>(region);
  std::printf("fiber switch: ns per switch in a ring of N fibers (median of %d runs, alternating)\n", reps);
  std::printf("  %6s  %10s  %14s  %s\n", "N", Assembly::name, Boost::name, "Boost / assembly");
  for (const std::size_t n : {2, 32, 256, 1024}) {
    std::vector<double> a, b;
    for (int rep = 0; rep < reps; ++rep) {
      a.push_back(run<Assembly>(base, n, switches));
      b.push_back(run<Boost>(base, n, switches));
    }
    const double ma = devctx_bench::median(a), mb = devctx_bench::median(b);
    std::printf("  %6zu  %10.2f  %14.2f  %6.2fx\n", n, ma, mb, mb / ma);
  }
  munmap(region, bytes);
  return 0;
}
