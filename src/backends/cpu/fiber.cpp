// src/backends/cpu/fiber.cpp - switching between fibers: the x86-64 assembly of the switch, of
// barrier()'s fast path and of the park at a thread's end, and the stacks the fibers run on.
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
//   sp + 0   r15, r14, r13, r12, rbx, rbp
//   sp + 48  where to continue
// (sp is 8 modulo 16, as inside any function after its call). Resuming pops the registers and
// *jumps* to the continuation instead of returning to it. A `ret` would be predicted from the
// return-address stack, which holds the call site of the fiber that is suspending; in a kernel
// with two barriers that is the other barrier's site, so every switch would be mispredicted. An
// indirect jump is predicted from its own history: one target per round of a block's threads.
asm(R"(
# The frame layout above, written and read in one place each. The _cfi form describes the pushes
# for the unwinder, for entries whose C++ half may throw.
  .macro devctx_save_frame
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  .endm
  .macro devctx_save_frame_cfi
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
  .endm
  .macro devctx_resume_frame
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
  .globl devctx_fiber_switch
  .type devctx_fiber_switch, @function
devctx_fiber_switch:
  devctx_save_frame
  movq %rsp, (%rdi)
  movq %rsi, %rdi
  jmp devctx_fiber_jump
  .size devctx_fiber_switch, .-devctx_fiber_switch

  .globl devctx_fiber_launch
  .type devctx_fiber_launch, @function
devctx_fiber_launch:
  devctx_save_frame
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
  devctx_resume_frame
  .size devctx_fiber_jump, .-devctx_fiber_jump

  .globl devctx_fiber_start
  .type devctx_fiber_start, @function
devctx_fiber_start:
  movq %r13, %rdi
  callq *%r12
  ud2
  .size devctx_fiber_start, .-devctx_fiber_start

# devctx::detail::cpu::barrier(std::source_location site), called by kernels. `site` (one pointer,
# in %rdi) is kept in %rsi for devctx_barrier_decide, which checking mode gives it to; the fast
# path never reads it. Saves the caller's registers, then either
# takes the common case itself - the caller runs on the stack of thread me = slot - 1 (not on
# stack 0 or the last thread's), thread me + 1 was released by the previous barrier, and the
# caller is not the last to arrive - or asks devctx_barrier_decide (C++, may throw: hence the
# CFI), which handles everything. BarrierState::released is kNever whenever the common case must
# not be taken, and outside cooperative blocks the state's `last` is 0, so no other check is
# needed (checking mode sets `last` to 0 to see every arrival). Offsets: BarrierState, Fiber and
# ThreadState, all checked by static_asserts in fiber_abi.hpp. The fast path changes nothing
# before it has decided (the arrival count it takes back).
  .globl _ZN6devctx6detail3cpu7barrierESt15source_location
  .type _ZN6devctx6detail3cpu7barrierESt15source_location, @function
_ZN6devctx6detail3cpu7barrierESt15source_location:
  .cfi_startproc
  devctx_save_frame_cfi
  movq %rdi, %rsi                  # site, the second argument of devctx_barrier_decide
  # tls's offset from %fs through a TLS descriptor, not initial-exec (@gottpoff): a shared
  # libdevctx must stay loadable by dlopen after other libraries used up the static TLS surplus.
  # Linked into a program, ld relaxes the pair to the initial-exec load; the call wants the stack
  # aligned as at any call.
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  leaq _ZN6devctx6detail3cpu3tlsE@tlsdesc(%rip), %rax
  call *_ZN6devctx6detail3cpu3tlsE@tlscall(%rax)
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  movq %rax, %r11
  movq %fs:0x48(%r11), %rdi        # BarrierState* (ThreadState::barrier_state)
  movq %rsp, %rdx
  subq 32(%rdi), %rdx              # stack_base
  movl 20(%rdi), %ecx              # shift
  shrq %cl, %rdx                   # this fiber's stack slot = me + 1 = the next thread
  leaq -1(%rdx), %rax
  cmpq 8(%rdi), %rax               # last: next in 1..n - 1, else (stack 0, the ring wraps) slow
  jae .Lbarrier_slow
  shlq $5, %rdx
  addq 24(%rdi), %rdx              # &fibers[next]
  movq (%rdi), %rax                # released
  cmpq %rax, 24(%rdx)              # fibers[next].wait
  jne .Lbarrier_slow
  decl 16(%rdi)                    # remaining
  jz .Lbarrier_last
  movq %rsp, -16(%rdx)             # fibers[me].sp
  incq %rax
  movq %rax, -8(%rdx)              # fibers[me].wait = kAtBarrier | gen
  movups (%rdx), %xmm0             # tls.thread_idx = fibers[next].idx (with next, into the padding)
  movups %xmm0, %fs:(%r11)
  movq 12*32+16(%rdx), %rcx        # prefetch the frame of fibers[next + 12] (kPrefetchAhead)
  prefetcht0 (%rcx)
  prefetcht0 64(%rcx)
  movq 16(%rdx), %rsp              # fibers[next].sp
.Lbarrier_resume:
  # Expanded here rather than jumping to devctx_fiber_jump: the extra jump shows in the cost of
  # every barrier (docs/cpu-backend.md, "Where time went while tuning").
  devctx_resume_frame
.Lbarrier_last:
  incl 16(%rdi)                    # the last to arrive: the C++ side counts it
.Lbarrier_slow:
  movq %rsp, %rdi
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call devctx_barrier_decide
  movq %rax, %rsp
  jmp .Lbarrier_resume
  .cfi_endproc
  .size _ZN6devctx6detail3cpu7barrierESt15source_location, .-_ZN6devctx6detail3cpu7barrierESt15source_location

# devctx_fiber_park(executor): the frame saved and resumed like barrier()'s, so a parked fiber
# resumes right after its park call; devctx_park_decide (C++) chooses whom to resume.
  .globl devctx_fiber_park
  .type devctx_fiber_park, @function
devctx_fiber_park:
  .cfi_startproc
  devctx_save_frame_cfi
  movq %rsp, %rsi
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call devctx_park_decide
  movq %rax, %rsp
  devctx_resume_frame
  .cfi_endproc
  .size devctx_fiber_park, .-devctx_fiber_park

# Where a suspended fiber continues once its block is aborting (see fiber_arm_abort): it makes
# the stack look as if the interrupted call had called devctx_throw_block_abort, which throws,
# and the kernel's frames unwind normally from the original call site.
  .globl devctx_abort_landing
  .type devctx_abort_landing, @function
devctx_abort_landing:
  movq -64(%rsp), %rcx
  pushq %rcx
  jmp devctx_throw_block_abort
  .size devctx_abort_landing, .-devctx_abort_landing
)");

extern "C" void devctx_fiber_start();

namespace devctx::detail::cpu {

FiberSp fiber_prepare(void* top, void (*entry)(void*), void* arg) noexcept {
  // devctx_fiber_start then runs with a 16-byte aligned stack (top - 16), as a call requires.
  auto* frame = reinterpret_cast<void**>(reinterpret_cast<char*>(top) - 16 - 7 * sizeof(void*));
  frame[0] = nullptr;                                       // r15
  frame[1] = nullptr;                                       // r14
  frame[2] = arg;                                           // r13
  frame[3] = reinterpret_cast<void*>(entry);                // r12
  frame[4] = nullptr;                                       // rbx
  frame[5] = nullptr;                                       // rbp
  frame[6] = reinterpret_cast<void*>(&devctx_fiber_start);  // where to continue
  return frame;
}

extern "C" void devctx_abort_landing();

void fiber_arm_abort(FiberSp sp) noexcept {
  // The continuation moves just below the frame, where devctx_abort_landing finds it: nothing
  // writes below a suspended fiber's stack pointer.
  auto* frame = static_cast<void**>(sp);
  // A fiber that has not started has no call to throw from; its entry checks for the abort.
  if (frame[6] == reinterpret_cast<void*>(&devctx_fiber_start)) return;
  frame[-1] = frame[6];
  frame[6] = reinterpret_cast<void*>(&devctx_abort_landing);
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
