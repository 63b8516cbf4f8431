// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cooperative.cpp - the cooperative path of the block executor: a fiber per GPU
// thread from the first barrier or warp operation on, the scheduler that switches between them
// at barriers and warp operations, parking at thread ends, divergence and aborts.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu/block_executor.hpp"

#include <devctx/detail/device/fission.hpp>
#include "core/errors.hpp"

namespace devctx::detail::cpu {

// A cooperative thread's fiber runs this loop: one GPU thread per iteration, the same thread
// index in each block of the range. Between two iterations the fiber is parked
// (devctx_fiber_park); run_parked() resumes it for the next block exactly as a
// barrier resumes a waiting thread, so starting and ending a thread costs about as much as one
// barrier.
//
// The kernel and the park go through one call instruction on purpose. A thread resumed after
// its last barrier ends with the kernel's return, predicted from the return-address stack,
// whose top is the call that the previous thread parked with: with one call site, that is
// exactly where the kernel returns to. (Two call sites cost two mispredicted returns per
// thread; docs/cpu-backend.md has the measured cost.) After a BlockAbort the next step is
// always the other one: a fiber unwound out of its kernel parks next, and a parked fiber
// unwound out of its park (its block failed before it started) skips the kernel and parks for
// that block.
DEVCTX_FIBER_FIRST_FRAME void BlockExecutor::thread_loop(void* self) {
  auto* e = static_cast<BlockExecutor*>(self);
  bool park = false;
  for (;;) {
    void (*step)(const void*) = park ? &devctx_fiber_park : e->task_->run_thread;
    const void* arg = park ? static_cast<const void*>(e) : e->task_->launch.args;
    asm("" : "+r"(step), "+r"(arg));  // keep one call below, whichever step it is
    if (park || !e->aborting_) {
      try {
        step(arg);
      } catch (const BlockAbort&) {
        // A thread unwound after its block failed, or a parked fiber resumed to unwind: its
        // block failed before this thread started (the next iteration sees aborting_).
      } catch (...) {
        e->record_current_exception();
      }
    }
    park = !park;
  }
}

Dim3 BlockExecutor::thread_coords(std::uint32_t j) const {
  const Dim3 d = task_->launch.config.block_dim;
  if (d.y == 1 && d.z == 1) return {j, 0, 0};
  return {j % d.x, (j / d.x) % d.y, j / (d.x * d.y)};
}

// Resuming a fiber whose stack is not in the TLB or cache costs more than the switch itself, and
// one switch ahead is too short to hide that: fetch the stack of the fiber kPrefetchAhead places
// on (in index order, the ring's order until threads exit). For a fiber not started yet this is
// where its stack was in an earlier block, which is where it will be again.
[[gnu::always_inline]] inline void BlockExecutor::prefetch_ahead(std::uint32_t j) const {
  std::uint32_t k = j + kPrefetchAhead;
  if (k >= bs_.n) k -= bs_.n - bs_.first;
  // As an integer: a fiber that has never run has a null sp, and null + 64 is undefined.
  const auto sp = reinterpret_cast<std::uintptr_t>(fibers()[k].sp);
  __builtin_prefetch(reinterpret_cast<const void*>(sp));
  __builtin_prefetch(reinterpret_cast<const void*>(sp + 64));
}

// Runs the current block in the fibers parked by the previous one (thread j in fiber j). Every
// fiber looks like a thread released by the previous barrier, so the block's first barrier
// switches into the next thread's fiber on the assembly fast path.
void BlockExecutor::run_parked() {
  const std::uint32_t n = bs_.n;
  cooperative_ = true;
  tls.mode = Mode::cooperative;
  fission_slot.offer = nullptr;  // no other thread may take the block's offer (fission.hpp)
  bs_.first = 0;
  bs_.started = n;
  bs_.live = n;
  bs_.remaining = n;
  bs_.fast = !aborting_;
  advance_gen(2);
  Fiber* const f = fibers();
  for (std::uint32_t j = 0; j < parked_from_; ++j) {  // not run yet in this range: start afresh
    f[j].sp = fiber_prepare(stacks_.stack(j + 1), &thread_loop, this);
    f[j].idx = thread_coords(reversed_ ? n - 1 - j : j);
  }
  parked_from_ = 0;
  const std::uint64_t released = kAtBarrier | (bs_.gen - 1);
  for (std::uint32_t j = 0; j < n; ++j) {
    f[j].wait = released;
    f[j].next = j + 1;
  }
  f[n - 1].next = 0;
  f[0].wait = kRunning;
  const std::uint32_t warps = (n + 31) / 32;
  for (std::uint32_t w = 0; w < warps; ++w) {
    warp_live_[w] = std::min(w * 32 + 32, n) - w * 32;
    warp_arrived_[w] = 0;
    warp_gen_[w] = 0;
  }
  prefetch_ahead(0);
  tls.thread_idx = f[0].idx;
  fiber_switch(&scheduler_sp_, f[0].sp);
}

void BlockExecutor::go_cooperative(const char* cause) {
  const Dim3 d = task_->launch.config.block_dim;
  const Dim3 t = tls.thread_idx;
  const std::uint32_t first = t.x + d.x * (t.y + d.y * t.z);
  if (why_ != nullptr && why_->empty())
    *why_ = concat("thread ", to_string(t), " of block ", to_string(block_idx_), " reached ", cause);
  cooperative_ = true;
  tls.mode = Mode::cooperative;
  tls.x_end = t.x + 1;  // the plain loop ends after this thread
  // Threads before `first` have finished. `first` keeps the plain fiber; the others start when
  // the ring first reaches them, so nothing here is per thread.
  bs_.first = first;
  bs_.started = first + 1;
  parked_from_ = first + 1;  // fibers after `first` park at their ends; the ones up to it never ran
  Fiber& f = fibers()[first];
  f.next = first + 1 < bs_.n ? first + 1 : first;
  f.wait = kRunning;
  f.idx = t;
  bs_.live = bs_.n - first;
  bs_.remaining = bs_.live;
  bs_.fast = !aborting_;
  advance_gen(2);  // bs_.gen - 1 was never waited at: no leftover `wait` matches a released waiter
  const std::uint32_t warps = (bs_.n + 31) / 32;
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t begin = std::max(w * 32, first), end = std::min(w * 32 + 32, bs_.n);
    warp_live_[w] = end > begin ? end - begin : 0;
    warp_arrived_[w] = 0;
    warp_gen_[w] = 0;
  }
}

// ---- the scheduler ------------------------------------------------------------------------------
// A barrier costs every thread one switch, so the common case - the next thread in index order
// was released by the previous barrier - takes one comparison and one switch; everything else
// (threads not started yet, exited threads, warp operations, divergence) goes through
// next_target().

// Thread j runs on stack j + 1; the thread that kept the plain fiber runs on stack 0. Reading the
// running thread off the stack pointer, rather than from a variable the previous switch wrote,
// keeps a store-to-load round trip off the critical path of every barrier.
[[gnu::always_inline]] inline std::uint32_t BlockExecutor::running_thread() const {
#if defined(__x86_64__)
  std::uintptr_t sp;
  asm("movq %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
  std::uintptr_t sp;
  asm("mov %0, sp" : "=r"(sp));
#else
  const auto sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
#endif
  const auto stack = std::uint32_t((sp - bs_.stack_base) >> bs_.shift);
  return stack != 0 ? stack - 1 : bs_.first;
}

std::uint32_t BlockExecutor::running_thread_index() const { return running_thread(); }

[[gnu::always_inline]] inline bool BlockExecutor::runnable(const Fiber& f, std::uint32_t j) const {
  switch (f.wait & kKindMask) {
    case kAtBarrier: return aborting_ || f.wait != (kAtBarrier | bs_.gen);
    case kAtWarp: return aborting_ || f.wait != (kAtWarp | warp_gen_[j / 32]);
    default: return false;  // running (only the current fiber) or exited
  }
}

// Counts the calling thread in at the current barrier, called from `site`, and chooses where to
// go on: returns the fiber to resume, with `me` set to the caller's thread, which now waits at the
// barrier; or nullptr if the caller goes on (it was the last to arrive and released the others).
[[gnu::always_inline]] inline FiberSp BlockExecutor::barrier_arrive(std::uint32_t& me, const SourceSite& site) {
  if (!bs_.fast) [[unlikely]] {
    if (tls.mode == Mode::block_level)
      fail(Errc::kernel_failed,
           "devctx::barrier() inside a block-level kernel: each for_each_thread phase "
           "already ends with a barrier, so call no barrier() of your own");
    if (aborting_) throw BlockAbort{};
    go_cooperative("barrier()");
  }
  // Checking mode sees every arrival (enter_launch turns the assembly's fast path off); its
  // reports unwind the arriving thread like any exception from kernel code.
  if (checking_ != nullptr) [[unlikely]]
    checking_->barrier_arrive(running_thread(), check::site_of(site));
  if (--bs_.remaining == 0) [[unlikely]] {  // the last thread to arrive releases the others and goes on
    if (checking_ != nullptr) [[unlikely]]
      checking_->barrier_complete();
    bs_.remaining = bs_.live;
    advance_gen(1);
    return nullptr;
  }
  me = running_thread();
  Fiber* const fibers = this->fibers();
  const std::uint64_t gen = bs_.gen;
  fibers[me].wait = kAtBarrier | gen;
  std::uint32_t j = me + 1;
  if (j == bs_.n) j = bs_.first;
  const Fiber& to = fibers[j];
  // A thread released by the previous barrier waited at gen - 1. Not started, exited and warp-
  // waiting threads never match (hence bs_.gen += 2 per block), so one comparison decides.
  if (to.wait == (kAtBarrier | (gen - 1))) [[likely]] {
    prefetch_ahead(j);
    tls.thread_idx = to.idx;
    return to.sp;
  }
  if (const FiberSp target = next_target(me); target != nullptr) return target;
  if (aborting_) throw BlockAbort{};  // found no other thread to run: unwind this one
  return nullptr;
}

#if DEVCTX_FIBER_FAST_BARRIER
// The C++ half of the assembly barrier() (fiber_x86_64.cpp), for everything but its common case:
// `sp` is the caller's suspended frame. Returns the frame to resume - `sp` itself if the caller
// goes on.
[[gnu::always_inline]] inline void* BlockExecutor::barrier_decide(void* sp, const SourceSite& site) {
  std::uint32_t me = 0;
  const FiberSp target = barrier_arrive(me, site);
  if (target == nullptr) return sp;
  fibers()[me].sp = sp;
  return target;
}

extern "C" void* devctx_barrier_decide(void* sp, const SourceSite* site) {
  BlockExecutor* e = tls.executor;
  if (e == nullptr) not_in_kernel("devctx::barrier");
  return e->barrier_decide(sp, *site);
}

extern "C" [[noreturn]] void devctx_throw_block_abort() { throw BlockAbort{}; }
#else
// barrier() everywhere else: the same decision, then one switch. A fiber resumed while its block
// aborts unwinds from here (on x86-64, fiber_arm_abort makes its frame throw instead).
void BlockExecutor::arrive_at_barrier(const SourceSite& site) {
  std::uint32_t me = 0;
  const FiberSp target = barrier_arrive(me, site);
  if (target == nullptr) return;
  fiber_switch(&fibers()[me].sp, target);
  if (aborting_) [[unlikely]]
    throw BlockAbort{};
}

void barrier(const SourceSite& site) {
  BlockExecutor* const e = tls.executor;
  if (e == nullptr) not_in_kernel("devctx::barrier");
  e->arrive_at_barrier(site);
}
#endif

// The stack pointer to switch to from `me`, which has just started waiting or exited: the next
// runnable fiber in the ring, started on the spot if it has not run yet. nullptr if `me` itself
// may go on (possible only once the block is aborting).
FiberSp BlockExecutor::next_target(std::uint32_t me) {
  std::uint32_t prev = me, j = fibers()[me].next;
  for (std::uint32_t steps = 0;; ++steps) {
    if (j >= bs_.started) return start_fiber(j);  // only the last started fiber links to one not started yet
    const Fiber& f = fibers()[j];
    if (f.wait == kExited && j != me) {
      j = f.next;
      fibers()[prev].next = j;
      continue;
    }
    if (runnable(f, j)) break;
    if (steps > 2 * bs_.n) report_divergence(me);  // every live thread waits and none can go on
    prev = j;
    j = f.next;
  }
  prefetch_ahead(j);
  tls.thread_idx = fibers()[j].idx;
  if (j == me) return nullptr;
#if DEVCTX_FIBER_FAST_BARRIER
  if (aborting_) fiber_arm_abort(fibers()[j].sp);  // it unwinds instead of going on
#endif
  return fibers()[j].sp;
}

FiberSp BlockExecutor::start_fiber(std::uint32_t j) {
  bs_.started = j + 1;
  Fiber& f = fibers()[j];
  f.next = j + 1 < bs_.n ? j + 1 : bs_.first;
  f.wait = kRunning;
  f.idx = thread_coords(j);
  tls.thread_idx = f.idx;
  prefetch_ahead(j);
  return fiber_prepare(stacks_.stack(j + 1), &thread_loop, this);
}

void BlockExecutor::report_divergence(std::uint32_t me) {
  // The threads are split between block barriers and warp operations (or a warp is split
  // between different warp operations). Fail the block and let every fiber unwind.
  if (!failed_) {
    failed_ = true;
    failure_ = {Errc::kernel_failed, concat("kernel '", task_->launch.name, "' deadlocked in block ",
                                            to_string(block_idx_), ": barrier divergence - ", bs_.live,
                                            " live thread(s) wait at different barriers or warp operations (thread ",
                                            to_string(fibers()[me].idx),
                                            " among them). Every thread of a block must reach the same barrier() and "
                                            "every lane of a warp the same warp operation.")};
  }
  start_aborting();
  // With aborting_ set every waiting fiber is runnable; resume one and unwind when resumed.
  if (const FiberSp target = next_target(me); target != nullptr) fiber_switch(&fibers()[me].sp, target);
  throw BlockAbort{};
}

// The thread that kept the plain fiber has finished; nothing resumes that fiber.
DEVCTX_FIBER_FIRST_FRAME void BlockExecutor::exit_current() {
  fiber_finish(stacks_.stack(0), leave_block(running_thread()));
}

// Where the fiber of finished thread `me` goes once parked.
[[gnu::always_inline]] inline FiberSp BlockExecutor::park_target(std::uint32_t me) {
  Fiber* const f = fibers();
  const std::uint32_t next = me + 1, w = me / 32;
  // The common case, as in barrier(): the next thread in the ring was released by the last
  // barrier, and this thread's end neither completes a barrier nor a warp operation.
  if (next < bs_.n && f[next].wait == bs_.released && bs_.remaining > 1 && warp_arrived_[w] == 0) [[likely]] {
    f[me].wait = kExited;
    --bs_.live;
    --bs_.remaining;
    --warp_live_[w];
    prefetch_ahead(next);
    tls.thread_idx = f[next].idx;
    return f[next].sp;
  }
  return leave_block(me);
}

#if DEVCTX_FIBER_FAST_BARRIER
// The C++ half of the assembly devctx_fiber_park (fiber_x86_64.cpp): the running fiber's thread
// has finished and its frame is saved at `sp`. Returns the frame to resume.
FiberSp BlockExecutor::park(void* sp) {
  const std::uint32_t me = running_thread();
  fibers()[me].sp = sp;
  return park_target(me);
}

extern "C" void* devctx_park_decide(void* self, void* sp) { return static_cast<BlockExecutor*>(self)->park(sp); }
#else
// In sanitizer builds a parked fiber rests: every frame below the switch (thread_loop, the park)
// is a DEVCTX_FIBER_FIRST_FRAME, and a fiber prepared on its stack reuses its TSan fiber.
DEVCTX_FIBER_FIRST_FRAME void BlockExecutor::park_thread() {
  const std::uint32_t me = running_thread();
  const FiberStack own = stacks_.stack(me + 1);
  fiber_resting(own, true);
  fiber_switch(&fibers()[me].sp, park_target(me));
  fiber_resting(own, false);
  if (aborting_) [[unlikely]]
    throw BlockAbort{};  // resumed to unwind: its block failed
}

extern "C" DEVCTX_FIBER_FIRST_FRAME void devctx_fiber_park(const void* executor) {
  static_cast<BlockExecutor*>(const_cast<void*>(executor))->park_thread();
}
#endif

// Takes finished thread `me` out of the block and returns where to continue: the next runnable
// thread, or the scheduler once every thread has finished.
FiberSp BlockExecutor::leave_block(std::uint32_t me) {
  fibers()[me].wait = kExited;
  --bs_.live;
  const std::uint32_t w = me / 32;
  --warp_live_[w];
  // Exited threads no longer count at barriers (as on CUDA): if every other live thread has
  // arrived, the barrier is complete.
  if (--bs_.remaining == 0 && bs_.live > 0) {
    if (checking_ != nullptr && !aborting_) [[unlikely]]
      check_interval_end_quietly();
    bs_.remaining = bs_.live;
    advance_gen(1);
  }
  if (warp_arrived_[w] > 0 && warp_arrived_[w] == warp_live_[w]) {
    warp_arrived_[w] = 0;
    ++warp_gen_[w];
  }
  return bs_.live == 0 ? scheduler_sp_ : next_target(me);
}

// ---- warp operations ----------------------------------------------------------------------------

void BlockExecutor::warp_sync() {
  if (checking_ != nullptr) [[unlikely]]
    checking_->thread_switch();  // the running thread switches away
  const std::uint32_t me = running_thread();
  const std::uint32_t w = me / 32;
  warp_synced_ = true;
  if (++warp_arrived_[w] == warp_live_[w]) {
    warp_arrived_[w] = 0;
    ++warp_gen_[w];
    return;
  }
  fibers()[me].wait = kAtWarp | warp_gen_[w];
  if (const FiberSp target = next_target(me); target != nullptr) fiber_switch(&fibers()[me].sp, target);
  if (aborting_) throw BlockAbort{};
}

const std::byte* BlockExecutor::warp_publish(const void* value, std::size_t bytes) {
  if (tls.mode == Mode::block_level)
    fail(Errc::kernel_failed,
         "a warp operation inside a block-level kernel's phase: the CPU runs a phase "
         "as a loop, so lanes cannot exchange values there; use a thread-level kernel");
  if (!cooperative_) go_cooperative("a warp operation");
  if (aborting_) throw BlockAbort{};
  const std::uint32_t me = running_thread();
  std::byte* warp = warp_slots_.get() + (me / 32) * 32 * kWarpSlotBytes;
  std::memcpy(warp + (me % 32) * kWarpSlotBytes, value, bytes);
  warp_sync();
  return warp;
}

void BlockExecutor::warp_release() { warp_sync(); }

unsigned BlockExecutor::warp_width() const {
  const Dim3 t = tls.thread_idx;
  const Dim3 d = task_->launch.config.block_dim;
  const std::uint32_t rank = t.x + d.x * (t.y + d.y * t.z);
  return std::min<std::uint32_t>(32, bs_.n - rank / 32 * 32);
}

}  // namespace devctx::detail::cpu
