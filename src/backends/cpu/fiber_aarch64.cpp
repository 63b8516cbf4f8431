// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber_aarch64.cpp - the fiber switch on AArch64 (AAPCS64, ELF): switch, jump,
// launch and the first resumption of a prepared fiber, in assembly.
//
// AAPCS64 makes x19-x28, the frame pointer x29, the link register x30, sp and the low halves of
// v8-v15 (d8-d15) callee-saved. A suspended fiber's stack holds one frame layout, whoever
// suspended it (160 bytes, so sp stays 16-byte aligned as AArch64 requires):
//   sp + 0    x29, x30 (where to continue)
//   sp + 16   d8 d9 d10 d11 d12 d13 d14 d15
//   sp + 80   x19 x20 x21 x22 x23 x24 x25 x26 x27 x28
// Like the x86-64 switch it leaves the floating-point control register (FPCR: rounding mode,
// flush-to-zero) alone: the fibers of a block share the kernel's FP environment.
//
// Resuming ends with `ret`, not `br x30`: a return is exempt from BTI's landing-pad check (a
// continuation is a call's return address, never a landing pad), and the return-address stack
// predicts it correctly whenever the suspending and the resumed fiber called the switch from the
// same site, which is what the portable barrier does (every barrier switches from one call).
//
// Branch protection (-mbranch-protection=standard / bti / pac-ret): the compiler marks this
// object as BTI- and PAC-compatible, so the code below keeps both promises. Every global entry
// starts with `bti c`; the saved x30 is signed with the stack pointer above the frame (paciasp,
// or pacibsp for the B key) and authenticated before the `ret`, exactly as a compiled function
// with pac-ret signs its own return address. These are hint-space instructions, which cores
// without BTI or PAC execute as no-ops. fiber_prepare signs the continuation it writes (pacia1716).
#include <cstddef>
#include <cstdint>

#include "backends/cpu/fiber_switch.hpp"

#if !defined(__aarch64__)
#error "fiber_aarch64.cpp is the AArch64 fiber switch; CMake selects the file for the target (DEVCTX_FIBER)"
#endif
#if !defined(__ELF__)
#error "devctx's AArch64 fiber switch is written for ELF targets (Linux); configure with -DDEVCTX_FIBER=boost"
#endif

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define DEVCTX_BTI_C "hint #34\n"  // bti c
#else
#define DEVCTX_BTI_C ""
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && (__ARM_FEATURE_PAC_DEFAULT & 2)
#define DEVCTX_PAC_SIGN "hint #27\n"  // pacibsp
#define DEVCTX_PAC_AUTH "hint #31\n"  // autibsp
#define DEVCTX_PAC_1716 "hint #10\n"  // pacib1716
#elif defined(__ARM_FEATURE_PAC_DEFAULT) && (__ARM_FEATURE_PAC_DEFAULT & 1)
#define DEVCTX_PAC_SIGN "hint #25\n"  // paciasp
#define DEVCTX_PAC_AUTH "hint #29\n"  // autiasp
#define DEVCTX_PAC_1716 "hint #8\n"   // pacia1716
#else
#define DEVCTX_PAC_SIGN ""
#define DEVCTX_PAC_AUTH ""
#define DEVCTX_PAC_1716 ""
#endif

// clang-format off
asm(R"(
  .macro devctx_save_frame
  )" DEVCTX_PAC_SIGN R"(
  stp x29, x30, [sp, #-160]!
  stp x19, x20, [sp, #80]
  stp x21, x22, [sp, #96]
  stp x23, x24, [sp, #112]
  stp x25, x26, [sp, #128]
  stp x27, x28, [sp, #144]
  stp d8, d9, [sp, #16]
  stp d10, d11, [sp, #32]
  stp d12, d13, [sp, #48]
  stp d14, d15, [sp, #64]
  .endm
  .macro devctx_resume_frame
  ldp x19, x20, [sp, #80]
  ldp x21, x22, [sp, #96]
  ldp x23, x24, [sp, #112]
  ldp x25, x26, [sp, #128]
  ldp x27, x28, [sp, #144]
  ldp d8, d9, [sp, #16]
  ldp d10, d11, [sp, #32]
  ldp d12, d13, [sp, #48]
  ldp d14, d15, [sp, #64]
  ldp x29, x30, [sp], #160
  )" DEVCTX_PAC_AUTH R"(
  ret
  .endm

  .text
  .p2align 4
  .globl devctx_fiber_switch
  .type devctx_fiber_switch, %function
devctx_fiber_switch:
  )" DEVCTX_BTI_C R"(
  devctx_save_frame
  mov x2, sp
  str x2, [x0]
  mov sp, x1
  devctx_resume_frame
  .size devctx_fiber_switch, .-devctx_fiber_switch

  .p2align 4
  .globl devctx_fiber_jump
  .type devctx_fiber_jump, %function
devctx_fiber_jump:
  )" DEVCTX_BTI_C R"(
  mov sp, x0
  devctx_resume_frame
  .size devctx_fiber_jump, .-devctx_fiber_jump

  .p2align 4
  .globl devctx_fiber_launch
  .type devctx_fiber_launch, %function
devctx_fiber_launch:
  )" DEVCTX_BTI_C R"(
  devctx_save_frame
  mov x4, sp
  str x4, [x0]
  mov sp, x1
  mov x0, x3
  mov x29, #0                      // the frame-pointer chain ends here
  blr x2
  brk #0x3e8                       // entry never returns
  .size devctx_fiber_launch, .-devctx_fiber_launch

  .p2align 4
  .globl devctx_fiber_start
  .type devctx_fiber_start, %function
devctx_fiber_start:
  mov x0, x20
  blr x19
  brk #0x3e8
  .size devctx_fiber_start, .-devctx_fiber_start
)");
// clang-format on

extern "C" void devctx_fiber_start();

namespace devctx::detail::cpu {

FiberSp raw_fiber_prepare(FiberStack stack, void (*entry)(void*), void* arg) noexcept {
  // The frame sits right below the top, so entry(arg) starts with sp == top (16-byte aligned).
  constexpr std::size_t kFrameWords = 20;
  void* const top = stack.top;
  auto* frame = reinterpret_cast<void**>(static_cast<char*>(top) - kFrameWords * sizeof(void*));
  for (std::size_t i = 0; i < kFrameWords; ++i) frame[i] = nullptr;  // x29 = 0 ends the frame chain
  frame[10] = reinterpret_cast<void*>(entry);                        // x19
  frame[11] = arg;                                                   // x20
  // x30, signed as devctx_save_frame would have signed it: with the stack pointer above the frame.
  register void* lr asm("x17") = reinterpret_cast<void*>(&devctx_fiber_start);
  register void* modifier asm("x16") = top;
  asm(DEVCTX_PAC_1716 : "+r"(lr) : "r"(modifier));
  frame[1] = lr;
  return frame;
}

}  // namespace devctx::detail::cpu
