// SPDX-License-Identifier: Apache-2.0
// tests/fiber_test.cpp - the CPU backend's fiber switch on its own (src/backends/cpu/
// fiber_switch.hpp), whichever implementation was configured (x86-64 or AArch64 assembly, or
// Boost.Context) and annotated for the sanitizers in sanitizer builds: launch, prepare, switch
// and jump keep every fiber's stack and callee-saved registers, across rings of fibers, deep
// stacks, exceptions and stacks reused many times.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/fiber_switch.hpp"

namespace cpu = devctx::detail::cpu;
using cpu::FiberSp;
using cpu::FiberStack;

// Switches through the interface; the register check below calls it from assembly.
extern "C" void devctx_test_switch(FiberSp* save, FiberSp load) { cpu::fiber_switch(save, load); }

#if defined(DEVCTX_FIBER_X86_64) || (defined(__x86_64__) && defined(__ELF__))
#define DEVCTX_TEST_REGISTERS 1
// Loads seed + 0..5 into every callee-saved register (rbx, rbp, r12-r15), switches with
// devctx_test_switch(save, load) and, once resumed, returns how many of them changed.
extern "C" unsigned devctx_test_keep_registers(FiberSp* save, FiberSp load, std::uint64_t seed);
asm(R"(
  .text
  .globl devctx_test_keep_registers
  .type devctx_test_keep_registers, @function
devctx_test_keep_registers:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  pushq %rdx
  movq %rdx, %rbx
  leaq 1(%rdx), %rbp
  leaq 2(%rdx), %r12
  leaq 3(%rdx), %r13
  leaq 4(%rdx), %r14
  leaq 5(%rdx), %r15
  call devctx_test_switch
  popq %rdx
  xorl %eax, %eax
  .irp reg, %rbx, %rbp, %r12, %r13, %r14, %r15
  cmpq %rdx, \reg
  setne %cl
  movzbl %cl, %ecx
  addl %ecx, %eax
  incq %rdx
  .endr
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size devctx_test_keep_registers, .-devctx_test_keep_registers
)");
#elif defined(__aarch64__) && defined(__ELF__)
#define DEVCTX_TEST_REGISTERS 1
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define DEVCTX_TEST_BTI "hint #34\n"
#else
#define DEVCTX_TEST_BTI ""
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && (__ARM_FEATURE_PAC_DEFAULT & 2)
#define DEVCTX_TEST_SIGN "hint #27\n"
#define DEVCTX_TEST_AUTH "hint #31\n"
#elif defined(__ARM_FEATURE_PAC_DEFAULT)
#define DEVCTX_TEST_SIGN "hint #25\n"
#define DEVCTX_TEST_AUTH "hint #29\n"
#else
#define DEVCTX_TEST_SIGN ""
#define DEVCTX_TEST_AUTH ""
#endif
// Loads seed + 0..9 into x19-x28, seed + 10 into x29 and seed + 11..18 into d8-d15 (all
// callee-saved in AAPCS64), switches with devctx_test_switch(save, load) and, once resumed,
// returns how many of them changed.
extern "C" unsigned devctx_test_keep_registers(FiberSp* save, FiberSp load, std::uint64_t seed);
asm(R"(
  .text
  .globl devctx_test_keep_registers
  .type devctx_test_keep_registers, %function
devctx_test_keep_registers:
  )" DEVCTX_TEST_BTI DEVCTX_TEST_SIGN R"(
  stp x29, x30, [sp, #-176]!
  stp x19, x20, [sp, #16]
  stp x21, x22, [sp, #32]
  stp x23, x24, [sp, #48]
  stp x25, x26, [sp, #64]
  stp x27, x28, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  str x2, [sp, #160]
  mov x3, x2
  .irp reg, x19, x20, x21, x22, x23, x24, x25, x26, x27, x28, x29
  mov \reg, x3
  add x3, x3, #1
  .endr
  .irp reg, d8, d9, d10, d11, d12, d13, d14, d15
  fmov \reg, x3
  add x3, x3, #1
  .endr
  bl devctx_test_switch
  ldr x3, [sp, #160]
  mov w0, #0
  .irp reg, x19, x20, x21, x22, x23, x24, x25, x26, x27, x28, x29
  cmp \reg, x3
  cinc w0, w0, ne
  add x3, x3, #1
  .endr
  .irp reg, d8, d9, d10, d11, d12, d13, d14, d15
  fmov x4, \reg
  cmp x4, x3
  cinc w0, w0, ne
  add x3, x3, #1
  .endr
  ldp x19, x20, [sp, #16]
  ldp x21, x22, [sp, #32]
  ldp x23, x24, [sp, #48]
  ldp x25, x26, [sp, #64]
  ldp x27, x28, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  ldp x29, x30, [sp], #176
  )" DEVCTX_TEST_AUTH R"(
  ret
  .size devctx_test_keep_registers, .-devctx_test_keep_registers
)");
#endif

namespace {

/// Fiber stacks as the CPU backend lays them out: mapped on demand, a guard page below each.
class Stacks {
 public:
  Stacks(std::size_t count, std::size_t bytes) : page_(std::size_t(sysconf(_SC_PAGESIZE))), bytes_(bytes) {
    slot_ = (bytes_ + page_ - 1) / page_ * page_ + page_;
    region_ = static_cast<char*>(
        mmap(nullptr, count * slot_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (region_ == MAP_FAILED) throw std::runtime_error("cannot map fiber stacks");
    count_ = count;
    for (std::size_t i = 0; i < count; ++i) mprotect(region_ + i * slot_, page_, PROT_NONE);
  }
  ~Stacks() {
    for (std::size_t i = 0; i < count_; ++i) cpu::fiber_stack_released((*this)[i]);
    munmap(region_, count_ * slot_);
  }
  Stacks(const Stacks&) = delete;
  Stacks& operator=(const Stacks&) = delete;
  FiberStack operator[](std::size_t i) const {
    char* const bottom = region_ + i * slot_ + page_;
    // Tops staggered by a cache line, as the CPU backend staggers them; 16-byte aligned.
    return {bottom, bottom + (slot_ - page_) - (i % 16) * 64};
  }
  /// The whole mapping: its start and size.
  [[nodiscard]] std::pair<char*, std::size_t> mapping() const { return {region_, count_ * slot_}; }
  [[nodiscard]] bool contains(std::size_t i, const void* p) const {
    const FiberStack s = (*this)[i];
    return p >= s.bottom && p < s.top;
  }

 private:
  std::size_t page_, bytes_, slot_ = 0, count_ = 0;
  char* region_ = nullptr;
};

constexpr std::size_t kStackBytes = 64 * 1024;

// ---- launch and jump --------------------------------------------------------------------------

struct LaunchState {
  FiberSp main = nullptr;
  const Stacks* stacks = nullptr;
  int arg_seen = 0;
  bool on_its_stack = false;
};

void launched(void* p) {
  auto* s = static_cast<LaunchState*>(p);
  s->on_its_stack = s->stacks->contains(0, __builtin_frame_address(0));
  ++s->arg_seen;
  cpu::fiber_jump(s->main);
}

TEST(Fiber, LaunchRunsTheEntryOnItsStackAndJumpReturns) {
  Stacks stacks(1, kStackBytes);
  LaunchState s;
  s.stacks = &stacks;
  // The same stack again and again, as the CPU backend launches every plain block on stack 0.
  for (int i = 1; i <= 2000; ++i) {
    s.on_its_stack = false;
    cpu::fiber_launch(&s.main, stacks[0], &launched, &s);
    ASSERT_EQ(s.arg_seen, i);
    ASSERT_TRUE(s.on_its_stack);
  }
}

// ---- ping-pong --------------------------------------------------------------------------------

struct PingPong {
  FiberSp main = nullptr, fiber = nullptr;
  std::uint64_t turn = 0;
  std::uint64_t rounds = 0;
  bool fiber_ok = true;
};

void pong(void* p) {
  auto* s = static_cast<PingPong*>(p);
  std::uint64_t mine = 0;  // a value the fiber keeps across switches
  for (std::uint64_t r = 0; r < s->rounds; ++r) {
    if (s->turn != 2 * r + 1 || mine != r * 7) s->fiber_ok = false;
    ++s->turn;
    mine += 7;
    cpu::fiber_switch(&s->fiber, s->main);
  }
  cpu::fiber_jump(s->main);
}

TEST(Fiber, PingPongAlternates) {
  Stacks stacks(1, kStackBytes);
  PingPong s;
  s.rounds = 100000;
  s.fiber = cpu::fiber_prepare(stacks[0], &pong, &s);
  std::uint64_t mine = 0;
  for (std::uint64_t r = 0; r < s.rounds; ++r) {
    ASSERT_EQ(s.turn, 2 * r);
    ASSERT_EQ(mine, r * 3);
    ++s.turn;
    mine += 3;
    cpu::fiber_switch(&s.main, s.fiber);
  }
  cpu::fiber_switch(&s.main, s.fiber);  // the fiber's loop ends and it jumps back
  EXPECT_EQ(s.turn, 2 * s.rounds);
  EXPECT_TRUE(s.fiber_ok);
}

// ---- a ring of fibers, as a barrier runs a block's threads ------------------------------------

struct Ring {
  std::vector<FiberSp> sps;
  FiberSp main = nullptr;
  const Stacks* stacks = nullptr;
  std::uint64_t rounds = 0;
  std::uint64_t step = 0;  // total switches so far
  std::vector<std::uint64_t> errors;
};

struct RingFiber {
  Ring* ring;
  std::size_t id;
};

void ring_member(void* p) {
  const RingFiber self = *static_cast<RingFiber*>(p);
  Ring& ring = *self.ring;
  const std::size_t n = ring.sps.size();
  // Locals that must survive every switch, on this fiber's own stack.
  std::uint64_t values[32];
  for (std::size_t k = 0; k < 32; ++k) values[k] = self.id * 1000 + k;
  if (!ring.stacks->contains(self.id, __builtin_frame_address(0))) ring.errors.push_back(self.id);
  for (std::uint64_t r = 0; r < ring.rounds; ++r) {
    if (ring.step != r * n + self.id) ring.errors.push_back(ring.step);
    for (std::size_t k = 0; k < 32; ++k)
      if (values[k] != self.id * 1000 + k + r) ring.errors.push_back(values[k]);
    for (auto& v : values) ++v;
    ++ring.step;
    const std::size_t next = self.id + 1 == n ? 0 : self.id + 1;
    if (r + 1 == ring.rounds && next == 0) cpu::fiber_jump(ring.main);  // the last thread's last round
    if (next != self.id) cpu::fiber_switch(&ring.sps[self.id], ring.sps[next]);
  }
  cpu::fiber_jump(ring.main);  // not reached: the last member ends the ring
}

TEST(Fiber, RingOfPreparedFibersRunsInOrderAndKeepsEachStack) {
  for (const std::size_t n : {1u, 2u, 33u, 256u}) {
    Stacks stacks(n, kStackBytes);
    Ring ring;
    ring.sps.resize(n);
    ring.stacks = &stacks;
    ring.rounds = 200;
    std::vector<RingFiber> members(n);
    for (std::size_t i = 0; i < n; ++i) {
      members[i] = {&ring, i};
      ring.sps[i] = cpu::fiber_prepare(stacks[i], &ring_member, &members[i]);
    }
    cpu::fiber_switch(&ring.main, ring.sps[0]);
    EXPECT_EQ(ring.step, ring.rounds * n) << n << " fibers";
    EXPECT_TRUE(ring.errors.empty()) << n << " fibers, first error " << ring.errors.front();
  }
}

TEST(Fiber, StacksPreparedAgainAfterTheirFibersWereAbandoned) {
  // The CPU backend abandons parked fibers at the end of a range and prepares fresh ones on the
  // same stacks for the next.
  constexpr std::size_t n = 8;
  Stacks stacks(n, kStackBytes);
  for (int range = 0; range < 300; ++range) {
    Ring ring;
    ring.sps.resize(n);
    ring.stacks = &stacks;
    ring.rounds = 3;
    std::vector<RingFiber> members(n);
    for (std::size_t i = 0; i < n; ++i) {
      members[i] = {&ring, i};
      ring.sps[i] = cpu::fiber_prepare(stacks[i], &ring_member, &members[i]);
    }
    cpu::fiber_switch(&ring.main, ring.sps[0]);
    ASSERT_EQ(ring.step, ring.rounds * n);
    ASSERT_TRUE(ring.errors.empty());
    // Abandon the fibers suspended mid-ring half the time: prepare over them without finishing.
    if (range % 2 == 0) {
      for (std::size_t i = 0; i < n; ++i) ring.sps[i] = cpu::fiber_prepare(stacks[i], &ring_member, &members[i]);
      ring.rounds = 1;
      ring.step = 0;
      cpu::fiber_switch(&ring.main, ring.sps[0]);
      ASSERT_EQ(ring.step, n);
    }
  }
}

struct Abandoned {
  FiberSp main = nullptr;
  int touched = 0;
};

void leave_a_frame_with_an_array(void* p) {
  auto* s = static_cast<Abandoned*>(p);
  volatile char local[64];  // under ASan: redzones around it, poisoned while this frame lives
  for (auto& c : local) c = char(++s->touched);
  cpu::fiber_jump(s->main);  // never resumed: the frame and its redzones are abandoned
}

TEST(Fiber, ReleasedStacksLeaveNoPoisonForMemoryMappedThereLater) {
  // Under ASan, the redzones of frames abandoned on a fiber stack stay poisoned in ASan's shadow
  // after the stack is unmapped; memory mapped at those addresses later (a large allocation, a
  // checked device buffer) was then reported as a stack overflow when first touched. Elsewhere
  // this checks that the addresses can be mapped and used again.
  constexpr std::size_t n = 4;
  std::pair<char*, std::size_t> was;
  {
    Stacks stacks(n, kStackBytes);
    was = stacks.mapping();
    for (std::size_t i = 0; i < n; ++i) {
      Abandoned state;
      FiberSp sp = cpu::fiber_prepare(stacks[i], &leave_a_frame_with_an_array, &state);
      cpu::fiber_switch(&state.main, sp);
      ASSERT_EQ(state.touched, 64);
    }
  }
  void* again = mmap(was.first, was.second, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                     -1, 0);
  if (again == MAP_FAILED) GTEST_SKIP() << "the addresses were taken again before the test could map them";
  ASSERT_EQ(again, static_cast<void*>(was.first));
  std::memset(again, 0x5a, was.second);  // ASan checks the whole range against its shadow
  std::size_t seen = 0;
  for (std::size_t i = 0; i < was.second; i += 4096) seen += static_cast<unsigned char*>(again)[i] == 0x5a;
  EXPECT_EQ(seen, (was.second + 4095) / 4096);
  munmap(again, was.second);
}

// ---- deep stacks ------------------------------------------------------------------------------

struct Deep {
  std::vector<FiberSp> sps;
  FiberSp main = nullptr;
  std::size_t finished = 0;
  std::uint64_t bad = 0;
};

struct DeepFiber {
  Deep* deep;
  std::size_t id;
};

std::uint64_t descend(const DeepFiber& self, unsigned depth) {
  // 256 bytes of locals per level, filled from the fiber and the depth, checked after the levels
  // below have switched away and back.
  volatile std::uint64_t frame[32];
  for (unsigned k = 0; k < 32; ++k) frame[k] = self.id * 0x1000003 + depth * 31 + k;
  const std::size_t n = self.deep->sps.size();
  cpu::fiber_switch(&self.deep->sps[self.id], self.deep->sps[(self.id + 1) % n]);
  std::uint64_t sum = depth == 0 ? 0 : descend(self, depth - 1);
  for (unsigned k = 0; k < 32; ++k) {
    if (frame[k] != self.id * 0x1000003 + depth * 31 + k) ++self.deep->bad;
    sum += frame[k];
  }
  return sum;
}

void deep_member(void* p) {
  const DeepFiber self = *static_cast<DeepFiber*>(p);
  Deep& deep = *self.deep;
  constexpr unsigned kDepth = 150;  // about 40 KiB of stack, twice that with ASan's redzones
  const std::uint64_t sum = descend(self, kDepth);
  std::uint64_t expect = 0;
  for (unsigned d = 0; d <= kDepth; ++d)
    for (unsigned k = 0; k < 32; ++k) expect += self.id * 0x1000003 + d * 31 + k;
  if (sum != expect) ++deep.bad;
  // Every member has switched at each level; whoever finishes last returns to main.
  if (++deep.finished == deep.sps.size()) cpu::fiber_jump(deep.main);
  cpu::fiber_jump(deep.sps[(self.id + 1) % deep.sps.size()]);
}

TEST(Fiber, DeepStacksSurviveSwitchesAtEveryLevel) {
  constexpr std::size_t n = 6;
  Stacks stacks(n, 4 * kStackBytes);
  Deep deep;
  deep.sps.resize(n);
  std::vector<DeepFiber> members(n);
  for (std::size_t i = 0; i < n; ++i) {
    members[i] = {&deep, i};
    deep.sps[i] = cpu::fiber_prepare(stacks[i], &deep_member, &members[i]);
  }
  cpu::fiber_switch(&deep.main, deep.sps[0]);
  EXPECT_EQ(deep.finished, n);
  EXPECT_EQ(deep.bad, 0u);
}

// ---- exceptions -------------------------------------------------------------------------------

struct Throwing {
  FiberSp main = nullptr, a = nullptr, b = nullptr;
  std::string a_caught, b_caught;
};

[[gnu::noinline]] void throw_through_frames(int depth, const std::string& what) {
  if (depth == 0) throw std::runtime_error(what);
  throw_through_frames(depth - 1, what);
}

void thrower_a(void* p) {
  auto* s = static_cast<Throwing*>(p);
  try {
    cpu::fiber_switch(&s->a, s->b);  // b runs, then resumes a here
    throw_through_frames(20, "from a");
  } catch (const std::runtime_error& e) {
    // Inside the handler, b throws and catches an exception of its own before a goes on.
    cpu::fiber_switch(&s->a, s->b);
    s->a_caught = e.what();
  }
  cpu::fiber_jump(s->main);
}

void thrower_b(void* p) {
  auto* s = static_cast<Throwing*>(p);
  cpu::fiber_switch(&s->b, s->a);
  try {
    throw_through_frames(30, "from b");
  } catch (const std::runtime_error& e) {
    s->b_caught = e.what();
  }
  cpu::fiber_jump(s->a);
}

TEST(Fiber, ExceptionsUnwindWithinTheirFiber) {
  Stacks stacks(2, kStackBytes);
  for (int i = 0; i < 50; ++i) {
    Throwing s;
    s.a = cpu::fiber_prepare(stacks[0], &thrower_a, &s);
    s.b = cpu::fiber_prepare(stacks[1], &thrower_b, &s);
    cpu::fiber_switch(&s.main, s.a);
    ASSERT_EQ(s.a_caught, "from a");
    ASSERT_EQ(s.b_caught, "from b");
  }
}

// ---- callee-saved registers -------------------------------------------------------------------

struct Registers {
  FiberSp main = nullptr, a = nullptr, b = nullptr;
  unsigned changed = 0;
  int rounds = 0;
};

void registers_a(void* p) {
  auto* s = static_cast<Registers*>(p);
#if defined(DEVCTX_TEST_REGISTERS)
  for (int r = 0; r < s->rounds; ++r) s->changed += devctx_test_keep_registers(&s->a, s->b, 0x1111000000000000u + r);
#endif
  cpu::fiber_jump(s->main);
}

void registers_b(void* p) {
  auto* s = static_cast<Registers*>(p);
#if defined(DEVCTX_TEST_REGISTERS)
  for (;;) s->changed += devctx_test_keep_registers(&s->b, s->a, 0x2222000000000000u);
#endif
  cpu::fiber_jump(s->main);
}

TEST(Fiber, CalleeSavedRegistersSurviveEverySwitch) {
#if !defined(DEVCTX_TEST_REGISTERS)
  GTEST_SKIP() << "no register check for this architecture";
#else
  Stacks stacks(2, kStackBytes);
  Registers s;
  s.rounds = 1000;
  s.a = cpu::fiber_prepare(stacks[0], &registers_a, &s);
  s.b = cpu::fiber_prepare(stacks[1], &registers_b, &s);
  cpu::fiber_switch(&s.main, s.a);
  EXPECT_EQ(s.changed, 0u);
#endif
}

// ---- many random switches ---------------------------------------------------------------------

struct Random {
  std::vector<FiberSp> sps;
  FiberSp main = nullptr;
  std::mt19937_64 rng;
  std::vector<std::uint64_t> counts;
  std::uint64_t left = 0;
  std::uint64_t bad = 0;
};

struct RandomFiber {
  Random* random;
  std::size_t id;
};

void random_member(void* p) {
  const RandomFiber self = *static_cast<RandomFiber*>(p);
  Random& s = *self.random;
  std::uint64_t mine = 0;
  for (;;) {
    if (mine != s.counts[self.id]) ++s.bad;
    ++mine;
    ++s.counts[self.id];
    if (s.left-- == 0) cpu::fiber_jump(s.main);
    const std::size_t next = std::size_t(s.rng() % s.sps.size());
    if (next != self.id) cpu::fiber_switch(&s.sps[self.id], s.sps[next]);
  }
}

TEST(Fiber, RandomSwitchOrderKeepsEveryFibersState) {
  constexpr std::size_t n = 40;
  Stacks stacks(n, kStackBytes);
  Random s;
  s.rng.seed(std::random_device{}());
  s.sps.resize(n);
  s.counts.assign(n, 0);
  s.left = 200000;
  std::vector<RandomFiber> members(n);
  for (std::size_t i = 0; i < n; ++i) {
    members[i] = {&s, i};
    s.sps[i] = cpu::fiber_prepare(stacks[i], &random_member, &members[i]);
  }
  cpu::fiber_switch(&s.main, s.sps[0]);
  std::uint64_t total = 0;
  for (auto c : s.counts) total += c;
  EXPECT_EQ(total, 200001u);
  EXPECT_EQ(s.bad, 0u);
}

}  // namespace
