// SPDX-License-Identifier: Apache-2.0
// The floor under a cooperative barrier: how long the least a fiber-per-GPU-thread executor can do
// at a barrier takes on this machine, for blocks of 32 to 1024 threads. No devctx code runs here.
//
// Each "thread" is a fiber on a stack of its own, laid out as devctx lays them out (power-of-two
// slots of 128 KiB, tops staggered by a cache line). Its barrier is the minimum: save the six
// callee-saved registers, find the running fiber from the stack pointer, store its stack pointer,
// prefetch the frame of the fiber 12 ahead, load the next fiber's stack pointer, restore its
// registers and jump to where it stopped. No arrival count, no wait token, no thread index, no
// checks - so a real barrier cannot be cheaper. Compare with "cooperative: one barrier, per thread"
// in devctx_bench_cpu_costs (docs/cpu-backend.md, "Measured costs").
//
// Usage: devctx_bench_switch_floor [--switches N]   (per block size; default 50 million)
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/stats.hpp"

#if !defined(__x86_64__)
#error "the switch floor is measured with x86-64 assembly"
#endif

namespace {
constexpr std::size_t kMaxFibers = 1024;
constexpr std::size_t kAhead = 12;
constexpr unsigned kShift = 17;  // 128 KiB slots, as devctx's default 64 KiB stacks get
}  // namespace

extern "C" {
// Read by the assembly below.
void* floor_sps[kMaxFibers + kAhead];
std::uintptr_t floor_base = 0;
std::uint64_t floor_n = 0;
void* floor_main_sp = nullptr;
// The fibers' entry, called by floor_start with the fiber's index.
void floor_body(std::uint64_t index);
void floor_start();
void floor_switch();
void floor_enter(void* sp);
[[noreturn]] void floor_leave();
}

asm(R"(
  .macro floor_save
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  .endm
  .macro floor_resume
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  popq %rcx
  jmpq *%rcx
  .endm

  .text
  .globl floor_switch
  .type floor_switch, @function
floor_switch:
  floor_save
  movq %rsp, %rax
  subq floor_base(%rip), %rax
  shrq $17, %rax                   # this fiber's index
  leaq 1(%rax), %rdx
  cmpq floor_n(%rip), %rdx
  jb 1f
  xorl %edx, %edx                  # the ring wraps
1:
  leaq floor_sps(%rip), %r8
  movq %rsp, (%r8,%rax,8)
  movq 96(%r8,%rdx,8), %rcx        # the fiber 12 ahead
  prefetcht0 (%rcx)
  prefetcht0 64(%rcx)
  movq (%r8,%rdx,8), %rsp
  floor_resume
  .size floor_switch, .-floor_switch

  .globl floor_start
  .type floor_start, @function
floor_start:
  movq %r12, %rdi
  callq floor_body
  ud2
  .size floor_start, .-floor_start

  .globl floor_enter
  .type floor_enter, @function
floor_enter:
  floor_save
  movq %rsp, floor_main_sp(%rip)
  movq %rdi, %rsp
  floor_resume
  .size floor_enter, .-floor_enter

  .globl floor_leave
  .type floor_leave, @function
floor_leave:
  movq floor_main_sp(%rip), %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size floor_leave, .-floor_leave
)");

namespace {
std::uint64_t g_rounds = 0, g_target = 0;
}

extern "C" void floor_body(std::uint64_t index) {
  for (;;) {
    floor_switch();
    if (index == 0 && ++g_rounds == g_target) floor_leave();
  }
}

namespace {

// A fresh frame on stack `i` that floor_switch's pops turn into a call of floor_body(i).
void* prepare(std::uintptr_t base, std::size_t i) {
  const std::uintptr_t top = base + ((i + 1) << kShift) - (i % 64) * 64;
  auto* frame = reinterpret_cast<void**>(top - 16 - 7 * sizeof(void*));
  std::memset(frame, 0, 7 * sizeof(void*));
  frame[3] = reinterpret_cast<void*>(i);  // r12
  frame[6] = reinterpret_cast<void*>(&floor_start);
  return frame;
}

}  // namespace

int main(int argc, char** argv) {
  double switches = 50e6;
  devctx_bench::Args args("devctx_bench_switch_floor",
                          "The floor under a cooperative barrier: the least a fiber switch can cost");
  args.option("--switches", switches, "Switches per run", 1e5, 1e12);
  args.parse(argc, argv);
  const std::size_t slot = std::size_t{1} << kShift;
  const std::size_t bytes = (kMaxFibers + 1) * slot;
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  floor_base = (reinterpret_cast<std::uintptr_t>(region) + slot - 1) & ~std::uintptr_t(slot - 1);
  std::printf("fiber switch floor: the least a barrier can do per thread (median of 5 runs)\n");
  for (const std::size_t n : {32, 64, 128, 256, 512, 1024}) {
    std::vector<double> ns;
    for (int rep = 0; rep < 5; ++rep) {
      floor_n = n;
      for (std::size_t i = 0; i < n; ++i) floor_sps[i] = prepare(floor_base, i);
      for (std::size_t i = n; i < n + kAhead; ++i) floor_sps[i] = floor_sps[i - n];
      g_rounds = 0;
      g_target = std::uint64_t(switches / double(n)) + 1;
      const double s = devctx_bench::seconds_of([] { floor_enter(floor_sps[0]); });
      ns.push_back(s * 1e9 / (double(g_target) * double(n)));
    }
    std::printf("  %4zu fibers: %5.2f ns per switch\n", n, devctx_bench::median(ns));
  }
  munmap(region, bytes);
  return 0;
}
