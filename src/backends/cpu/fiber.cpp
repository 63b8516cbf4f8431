#include "backends/cpu/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <new>

#include "core/errors.hpp"

#if !defined(__x86_64__)
#error "devctx's CPU backend switches fibers with x86-64 assembly; add a switch for this architecture in src/backends/cpu/fiber.cpp"
#endif

// System V x86-64: rbx, rbp, r12-r15 are callee-saved. A suspended fiber's stack holds one frame
// layout, whoever suspended it:
//   sp + 0   padding (keeps sp 16-byte aligned)
//   sp + 8   r15, r14, r13, r12, rbx, rbp
//   sp + 56  where to continue
// Resuming pops the registers and *jumps* to the continuation instead of returning to it. A
// `ret` would be predicted from the return-address stack, which holds the call site of the fiber
// that is suspending; in a kernel with two barriers that is the other barrier's site, so every
// switch would be mispredicted. An indirect jump is predicted from its own history: one target
// per round of a block's threads.
asm(R"(
  .text
  .globl devctx_fiber_switch
  .type devctx_fiber_switch, @function
devctx_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  movq %rsp, (%rdi)
  movq %rsi, %rdi
  jmp devctx_fiber_jump
  .size devctx_fiber_switch, .-devctx_fiber_switch

  .globl devctx_fiber_launch
  .type devctx_fiber_launch, @function
devctx_fiber_launch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  movq %rcx, %rdi
  callq *%rdx
  ud2
  .size devctx_fiber_launch, .-devctx_fiber_launch

  .globl devctx_fiber_jump
  .type devctx_fiber_jump, @function
devctx_fiber_jump:
  movq %rdi, %rsp
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  popq %rcx
  jmpq *%rcx
  .size devctx_fiber_jump, .-devctx_fiber_jump

  .globl devctx_fiber_start
  .type devctx_fiber_start, @function
devctx_fiber_start:
  movq %r13, %rdi
  callq *%r12
  ud2
  .size devctx_fiber_start, .-devctx_fiber_start

# devctx::detail::cpu::barrier(), called by kernels. Saves the caller's registers, then either
# takes the common case itself - the block runs cooperatively, this thread is not the last to
# arrive, it is not on stack 0 or the last of the ring, and the next thread was released by the
# previous barrier - or asks devctx_barrier_decide (C++, may throw: hence the CFI), which handles
# everything. Offsets: BlockRun::BarrierState, BlockRun::Fiber and ThreadState, all checked by
# static_asserts in block_run.cpp. The fast path changes nothing before it has decided.
  .globl _ZN6devctx6detail3cpu7barrierEv
  .type _ZN6devctx6detail3cpu7barrierEv, @function
_ZN6devctx6detail3cpu7barrierEv:
  .cfi_startproc
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbp, 0
  pushq %rbx
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbx, 0
  pushq %r12
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r12, 0
  pushq %r13
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r13, 0
  pushq %r14
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r14, 0
  pushq %r15
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r15, 0
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  movq _ZN6devctx6detail3cpu3tlsE@gottpoff(%rip), %r11
  movq %fs:0x40(%r11), %rdi        # BarrierState* (ThreadState::barrier_state)
  testq %rdi, %rdi
  jz .Lbarrier_slow
  cmpb $0, (%rdi)                  # fast
  je .Lbarrier_slow
  cmpl $1, 12(%rdi)                # remaining: the last to arrive goes the slow way
  jbe .Lbarrier_slow
  movq %rsp, %rdx                  # stack slot of this fiber = thread + 1
  subq 40(%rdi), %rdx              # stack_base
  movl 20(%rdi), %ecx              # shift
  shrq %cl, %rdx
  testl %edx, %edx                 # stack 0: the thread that kept the plain fiber
  jz .Lbarrier_slow
  cmpl 4(%rdi), %edx               # next thread = slot number; == n: the ring wraps
  jae .Lbarrier_slow
  movq 32(%rdi), %r9               # fibers
  movl %edx, %r8d
  shlq $5, %r8
  addq %r9, %r8                    # &fibers[next]
  movq 24(%rdi), %r10              # gen
  leaq -1(%r10), %rax
  btsq $62, %rax                   # kAtBarrier | (gen - 1): released by the previous barrier
  cmpq %rax, 8(%r8)
  jne .Lbarrier_slow
  decl 12(%rdi)                    # remaining
  leaq -32(%r8), %rax              # &fibers[me]
  movq %rsp, (%rax)
  btsq $62, %r10
  movq %r10, 8(%rax)               # wait = kAtBarrier | gen
  movq 20(%r8), %rcx               # tls.thread_idx = fibers[next].idx
  movq %rcx, %fs:(%r11)
  movl 28(%r8), %ecx
  movl %ecx, %fs:8(%r11)
  leal 12(%rdx), %ecx              # prefetch the stack of the fiber 12 places on (kPrefetchAhead)
  cmpl 4(%rdi), %ecx
  jb 1f
  subl 4(%rdi), %ecx
  addl 8(%rdi), %ecx
1:
  shlq $5, %rcx
  movq (%r9,%rcx), %rcx
  prefetcht0 (%rcx)
  prefetcht0 64(%rcx)
  movq (%r8), %rsp
  jmp .Lbarrier_resume
.Lbarrier_slow:
  movq %rsp, %rdi
  call devctx_barrier_decide
  movq %rax, %rsp
.Lbarrier_resume:
  # The same pops as devctx_fiber_jump, repeated rather than jumped to: sharing that code cost
  # 0.3 ns per barrier (6.4 -> 6.7 ns, devctx_bench_cpu_costs).
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  popq %rcx
  jmpq *%rcx
  .cfi_endproc
  .size _ZN6devctx6detail3cpu7barrierEv, .-_ZN6devctx6detail3cpu7barrierEv

# Where a suspended fiber continues once its block is aborting (see fiber_arm_abort): it makes
# the stack look as if the interrupted call had called devctx_throw_block_abort, which throws,
# and the kernel's frames unwind normally from the original call site.
  .globl devctx_abort_landing
  .type devctx_abort_landing, @function
devctx_abort_landing:
  movq -72(%rsp), %rcx
  pushq %rcx
  jmp devctx_throw_block_abort
  .size devctx_abort_landing, .-devctx_abort_landing
)");

extern "C" void devctx_fiber_start();

namespace devctx::detail::cpu {

FiberSp fiber_prepare(void* top, void (*entry)(void*), void* arg) noexcept {
  // devctx_fiber_start then runs with a 16-byte aligned stack, as a call requires.
  auto* frame = reinterpret_cast<void**>(reinterpret_cast<char*>(top) - 16 - 8 * sizeof(void*));
  frame[0] = nullptr;                                       // padding
  frame[1] = nullptr;                                       // r15
  frame[2] = nullptr;                                       // r14
  frame[3] = arg;                                           // r13
  frame[4] = reinterpret_cast<void*>(entry);                // r12
  frame[5] = nullptr;                                       // rbx
  frame[6] = nullptr;                                       // rbp
  frame[7] = reinterpret_cast<void*>(&devctx_fiber_start);  // where to continue
  return frame;
}

extern "C" void devctx_abort_landing();

void fiber_arm_abort(FiberSp sp) noexcept {
  // The continuation moves just below the frame, where devctx_abort_landing finds it: nothing
  // writes below a suspended fiber's stack pointer.
  auto* frame = static_cast<void**>(sp);
  // A fiber that has not started has no call to throw from; its entry checks for the abort.
  if (frame[7] == reinterpret_cast<void*>(&devctx_fiber_start)) return;
  frame[-1] = frame[7];
  frame[7] = reinterpret_cast<void*>(&devctx_abort_landing);
}

StackPool::StackPool(std::size_t stack_bytes, std::size_t count)
    : page_(std::size_t(sysconf(_SC_PAGESIZE))), count_(count) {
  const std::size_t slot = std::bit_ceil(std::max(stack_bytes + page_, 4 * page_));
  shift_ = unsigned(std::countr_zero(slot));
  region_bytes_ = (count + 1) * slot;  // one slot more to align the base to a slot
  region_ = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region_ == MAP_FAILED)
    fail(Errc::out_of_memory, "CPU backend: cannot reserve ", bytes_text(region_bytes_), " of address space for ",
         count, " fiber stacks of ", bytes_text(slot), " (DEVCTX_CPU_STACK_BYTES sets the stack size)");
  base_ = (reinterpret_cast<std::uintptr_t>(region_) + slot - 1) & ~std::uintptr_t(slot - 1);
}

StackPool::~StackPool() { munmap(region_, region_bytes_); }

void* StackPool::grow(std::size_t i) {
  if (i >= count_)
    fail(Errc::invalid_launch, "CPU backend: fiber stack ", i, " requested, but only ", count_, " exist");
  const std::size_t slot = slot_bytes();
  while (tops_.size() <= i) {
    const std::size_t n = tops_.size();
    auto* bottom = reinterpret_cast<char*>(base_ + n * slot);
    // Overflowing a fiber's stack faults on this page instead of corrupting the stack below.
    if (mprotect(bottom, page_, PROT_NONE) != 0)
      fail(Errc::out_of_memory, "CPU backend: cannot set up the guard page of fiber stack ", n);
    const std::size_t stagger = (n % 64) * 64;
    tops_.push_back(bottom + slot - stagger);
  }
  return tops_[i];
}

}  // namespace devctx::detail::cpu
