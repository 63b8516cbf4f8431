// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber_x86_64.cpp - the fiber switch on x86-64 (System V, ELF): switch, jump,
// launch and the first resumption of a prepared fiber in assembly, and - outside sanitizer
// builds - barrier()'s fast path, the park at a thread's end and the abort landing, which read
// the executor's state at fixed offsets (fiber_abi.hpp).
//
// CET (-fcf-protection): this code keeps no shadow stack per fiber and its indirect jumps land
// on return addresses, so cmake/devctxFiber.cmake builds this file with -fcf-protection=none:
// the object is not marked CET-compatible, and a program linking it runs without CET.
#include <cstddef>

#include "backends/cpu/fiber_switch.hpp"

#if !defined(__x86_64__)
#error "fiber_x86_64.cpp is the x86-64 fiber switch; CMake selects the file for the target (DEVCTX_FIBER)"
#endif
#if !defined(__linux__) || !defined(__ELF__)
#error "devctx's x86-64 fiber switch is written for Linux (ELF directives, initial-exec TLS); configure with -DDEVCTX_FIBER=boost"
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
)");

#if DEVCTX_FIBER_FAST_BARRIER
asm(R"(
# devctx::detail::cpu::barrier(const SourceSite& site), called by kernels. `site` (its address,
# in %rdi) is kept in %rsi for devctx_barrier_decide, which checking mode gives it to; the fast
# path never reads it. Saves the caller's registers, then either
# takes the common case itself - the caller runs on the stack of thread me = slot - 1 (not on
# stack 0 or the last thread's), thread me + 1 was released by the previous barrier, and the
# caller is not the last to arrive - or asks devctx_barrier_decide (C++, may throw: hence the
# CFI), which handles everything. BarrierState::released is kNever whenever the common case must
# not be taken, and outside cooperative blocks (and in checked launches, whose every arrival the
# checker must see) the state's `last` is 0, so no other check is needed. Offsets: BarrierState, Fiber and ThreadState, all checked by static_asserts in
# fiber_abi.hpp. The fast path changes nothing before it has decided (the arrival count it takes
# back).
  .globl _ZN6devctx6detail3cpu7barrierERKNS0_10SourceSiteE
  .type _ZN6devctx6detail3cpu7barrierERKNS0_10SourceSiteE, @function
_ZN6devctx6detail3cpu7barrierERKNS0_10SourceSiteE:
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
  .size _ZN6devctx6detail3cpu7barrierERKNS0_10SourceSiteE, .-_ZN6devctx6detail3cpu7barrierERKNS0_10SourceSiteE

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
#endif

extern "C" void devctx_fiber_start();

namespace devctx::detail::cpu {

FiberSp raw_fiber_prepare(FiberStack stack, void (*entry)(void*), void* arg) noexcept {
  // devctx_fiber_start then runs with a 16-byte aligned stack (top - 16), as a call requires.
  auto* frame = reinterpret_cast<void**>(static_cast<char*>(stack.top) - 16 - 7 * sizeof(void*));
  frame[0] = nullptr;                                       // r15
  frame[1] = nullptr;                                       // r14
  frame[2] = arg;                                           // r13
  frame[3] = reinterpret_cast<void*>(entry);                // r12
  frame[4] = nullptr;                                       // rbx
  frame[5] = nullptr;                                       // rbp
  frame[6] = reinterpret_cast<void*>(&devctx_fiber_start);  // where to continue
  return frame;
}

#if DEVCTX_FIBER_FAST_BARRIER
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
#endif

}  // namespace devctx::detail::cpu
