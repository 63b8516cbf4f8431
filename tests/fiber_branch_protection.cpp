// SPDX-License-Identifier: Apache-2.0
// tests/fiber_branch_protection.cpp - the AArch64 fiber switch with branch protection enforced
// (BTI landing pads and pac-ret pointer authentication, as qemu-aarch64 -cpu max enforces them).
//
// Debian's C runtime start files carry no BTI marking, so no whole program links BTI-marked and
// nothing would be enforced. This file is built twice instead (scripts/cross-aarch64.sh): as a
// shared library holding the switch and the fibers, every object of it built with
// -mbranch-protection=standard so that the loader maps its code BTI-guarded, and as the program
// that calls it. `--expect-fault bti|pac` runs a planted violation first, which must kill the
// process: that shows the checks are really enforced where the switch is tested.
#if defined(DEVCTX_BRANCH_PROTECTION_PROGRAM)

#include <cstdio>
#include <cstring>

extern "C" int devctx_branch_protection_check();
extern "C" void devctx_branch_protection_violate(int which);

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--expect-fault") == 0) {
    devctx_branch_protection_violate(std::strcmp(argv[2], "bti") == 0 ? 0 : 1);
    std::puts("branch protection is not enforced: the planted violation ran");
    return 1;
  }
  const int errors = devctx_branch_protection_check();
  std::printf("fiber switch with BTI and PAC enforced: %d error(s)\n", errors);
  return errors == 0 ? 0 : 1;
}

#else

#include "backends/cpu/fiber_switch.hpp"

namespace cpu = devctx::detail::cpu;

// Planted violations: an indirect call to code without a landing pad, and a return address
// changed between signing and authenticating it.
asm(R"(
  .text
  .type devctx_no_landing_pad, %function
devctx_no_landing_pad:
  ret
  .size devctx_no_landing_pad, .-devctx_no_landing_pad
  .type devctx_forged_return, %function
devctx_forged_return:
  hint #34
  hint #25
  eor x30, x30, #(1 << 52)
  hint #29
  ret
  .size devctx_forged_return, .-devctx_forged_return
)");
extern "C" void devctx_no_landing_pad();
extern "C" void devctx_forged_return();

extern "C" [[gnu::visibility("default")]] void devctx_branch_protection_violate(int which) {
  void (*volatile target)() = which == 0 ? &devctx_no_landing_pad : &devctx_forged_return;
  target();
}

namespace {

constexpr int kFibers = 4;
constexpr int kRounds = 1000;
alignas(64) char stacks[kFibers][64 * 1024];
cpu::FiberSp main_sp, sps[kFibers];
int steps, errors;

void member(void* p) {
  const int id = static_cast<int>(reinterpret_cast<long>(p));
  for (int r = 0; r < kRounds; ++r) {
    if (steps != r * kFibers + id) ++errors;
    ++steps;
    if (r + 1 == kRounds && id == kFibers - 1) cpu::fiber_jump(main_sp);
    cpu::fiber_switch(&sps[id], sps[(id + 1) % kFibers]);
  }
}

void launched(void* p) {
  ++*static_cast<int*>(p);
  cpu::fiber_jump(main_sp);
}

cpu::FiberStack stack(int i) { return {stacks[i], stacks[i] + sizeof stacks[i]}; }

}  // namespace

extern "C" [[gnu::visibility("default")]] int devctx_branch_protection_check() {
  int launches = 0;
  for (int i = 0; i < 100; ++i) cpu::fiber_launch(&main_sp, stack(0), &launched, &launches);
  if (launches != 100) ++errors;
  for (int i = 0; i < kFibers; ++i) sps[i] = cpu::fiber_prepare(stack(i), &member, reinterpret_cast<void*>(long{i}));
  cpu::fiber_switch(&main_sp, sps[0]);
  if (steps != kRounds * kFibers) ++errors;
  return errors;
}

#endif
