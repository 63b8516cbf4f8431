#include "backends/cpu/block_run.hpp"

#include <cxxabi.h>

#include <cstddef>
#include <cstdlib>
#include <type_traits>
#include <cstring>
#include <iterator>
#include <exception>
#include <typeinfo>

#include <devctx/detail/cpu_state.hpp>

#include "core/errors.hpp"

namespace devctx::detail::cpu {

namespace {
/// What barrier()'s assembly reads outside cooperative blocks: no thread index passes its check.
constinit BlockRun::BarrierState no_block{};
}  // namespace

constinit thread_local ThreadState tls{.barrier_state = &no_block};

namespace {

constexpr std::size_t kPerThreadBytes = std::size_t{1} << 20;

std::size_t align_up(std::size_t value, std::size_t align) { return (value + align - 1) / align * align; }

BlockRun& current_block(const char* function) {
  if (tls.block == nullptr) not_in_kernel(function);
  return *tls.block;
}

std::string demangled(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && text != nullptr ? text : name;
  std::free(text);
  return result;
}

}  // namespace

// ---- kernel-side entry points -------------------------------------------------------------------

const std::byte* warp_publish(const void* value, std::size_t bytes) {
  return current_block("a devctx warp operation").warp_publish(value, bytes);
}
void warp_release() { current_block("a devctx warp operation").warp_release(); }
unsigned warp_width() { return current_block("a devctx warp operation").warp_width(); }
void* static_shared(const void* site, std::size_t bytes, std::size_t align) {
  return current_block("DEVCTX_SHARED").static_shared(site, bytes, align);
}
void* per_thread_storage(std::size_t bytes, std::size_t align) {
  return current_block("devctx::Block::per_thread").per_thread_storage(bytes, align);
}
void not_in_kernel(const char* function) {
  fail(Errc::invalid_argument, function,
       " was called outside a running kernel; it may only be used inside DEVCTX_KERNEL functions "
       "launched with enqueue_function");
}

// ---- BlockRun -------------------------------------------------------------------------------

// The assembly fast path of barrier() (fiber.cpp) reads these at fixed offsets.
static_assert(std::is_standard_layout_v<BlockRun::BarrierState>);
static_assert(offsetof(BlockRun::BarrierState, released) == 0 && offsetof(BlockRun::BarrierState, last) == 8 &&
                  offsetof(BlockRun::BarrierState, remaining) == 16 && offsetof(BlockRun::BarrierState, shift) == 20 &&
                  offsetof(BlockRun::BarrierState, fibers) == 24 && offsetof(BlockRun::BarrierState, stack_base) == 32,
              "update devctx::detail::cpu::barrier() in fiber.cpp");
static_assert(std::is_standard_layout_v<ThreadState> && offsetof(ThreadState, thread_idx) == 0 &&
                  offsetof(ThreadState, thread_idx_pad) == 12 && sizeof(Dim3) == 12 &&
                  offsetof(ThreadState, barrier_state) == kBarrierStateOffset,
              "update devctx::detail::cpu::barrier() in fiber.cpp");

BlockRun::BlockRun(std::size_t stack_bytes, std::size_t shared_limit)
    : stacks_(stack_bytes, kMaxBlockThreads + 1),
      shared_limit_(shared_limit),
      shared_(new (std::align_val_t{64}) std::byte[2 * shared_stride(shared_limit)]),
      per_thread_(new (std::align_val_t{64}) std::byte[kPerThreadBytes]),
      warp_slots_(new (std::align_val_t{64}) std::byte[32 * 32 * kWarpSlotBytes]) {
  // kPrefetchAhead spare fibers: prefetch_ahead() may look past the last thread of a small ring.
  fiber_storage_.reset(new Fiber[kMaxBlockThreads + kPrefetchAhead]);
  bs_.fibers = fiber_storage_.get();
  static_assert(sizeof(Fiber) == 32 && offsetof(Fiber, idx) == 0 && offsetof(Fiber, next) == 12 &&
                    offsetof(Fiber, sp) == 16 && offsetof(Fiber, wait) == 24 && kPrefetchAhead == 12,
                "update devctx::detail::cpu::barrier() in fiber.cpp");
  bs_.stack_base = stacks_.base();
  bs_.shift = stacks_.shift();
}

void BlockRun::enter_launch(const BlockTask& task) {
  task_ = &task;
  bs_.n = std::uint32_t(task.block_dim.volume());
  bs_.last = bs_.n - 1;
  if (sites_launch_ != task.launch_id) {
    sites_launch_ = task.launch_id;
    sites_.clear();
    static_top_ = align_up(task.shared_bytes, 64);
  }
  // The DEVCTX_SHARED cache in tls belongs to whichever launch this worker ran last.
  tls.shared_count = 0;
  for (const SharedSite& site : sites_) {
    if (tls.shared_count == std::size(tls.shared_sites)) break;
    tls.shared_sites[tls.shared_count] = site.site;
    tls.shared_addresses[tls.shared_count] = shared_base() + site.offset;
    shared_offsets_[tls.shared_count] = site.offset;
    ++tls.shared_count;
  }
  tls.block_dim = task.block_dim;
  tls.grid_dim = task.grid_dim;
  tls.dynamic_shared = shared_base();
  tls.dynamic_shared_bytes = task.shared_bytes;
  tls.block = this;
  tls.barrier_state = &bs_;
}

// The coordinates come as three integers so that they travel in registers (a Dim3 in memory,
// updated one field at a time by the caller, stalls store forwarding on every block).
[[gnu::always_inline]] inline void BlockRun::set_block(unsigned bx, unsigned by, unsigned bz) {
  block_idx_.x = bx;
  block_idx_.y = by;
  block_idx_.z = bz;
  tls.block_idx.x = bx;
  tls.block_idx.y = by;
  tls.block_idx.z = bz;
  tls.thread_idx = {0, 0, 0};
  per_thread_top_ = 0;
  // Consecutive blocks use alternate copies of shared memory: block b + 1's first phase then has
  // no memory dependence on block b's last ones (the same addresses would make the core wait for
  // them), so the two overlap - about 5-10% on a short reduction. Shared memory is undefined at
  // block start on a GPU too.
  shared_half_ ^= 1;
  std::byte* const base = shared_base();
  tls.dynamic_shared = base;
  for (unsigned i = 0; i < tls.shared_count; ++i) tls.shared_addresses[i] = base + shared_offsets_[i];
}

bool BlockRun::run_range(const BlockTask& task, std::uint64_t begin, std::uint64_t end, const std::atomic<bool>& stop,
                         RangeStats& stats, BlockFailure& failure, std::string* why) {
  enter_launch(task);
  const Dim3 g = task.grid_dim;
  // The first block's index takes divisions; the rest step through x, then y, then z.
  unsigned x = unsigned(begin % g.x), y = unsigned((begin / g.x) % g.y), z = unsigned(begin / (std::uint64_t(g.x) * g.y));
  auto step = [&] {
    if (++x == g.x) {
      x = 0;
      if (++y == g.y) {
        y = 0;
        ++z;
      }
    }
  };
  failed_ = false;
  aborting_ = false;
  cooperative_ = false;
  set_fast(false);
  why_ = why;
  if (task.block_level) {
    tls.mode = Mode::block_level;
    std::uint64_t b = begin;
    for (; b < end && !failed_ && !stop.load(std::memory_order_relaxed); ++b, step()) {
      set_block(x, y, z);
      try {
        task.run_block(task.args);
      } catch (...) {
        record_current_exception();
      }
    }
    stats.block_level += b - begin;
  } else {
    // After a block that synchronised, its fibers are parked at their threads' ends and the next
    // block starts in them (run_parked). After a block that did not, the next starts as a loop.
    bool parked = false;
    for (std::uint64_t b = begin; b < end && !failed_ && !stop.load(std::memory_order_relaxed); ++b, step()) {
      set_block(x, y, z);
      warp_synced_ = false;
      bool synced = true;
      if (parked) {
        const std::uint64_t gen = bs_.gen;
        run_parked();
        synced = bs_.gen != gen + 2 || warp_synced_;  // run_parked adds 2; each completed barrier 1 more
      } else {
        tls.x_end = task.block_dim.x;
        tls.mode = Mode::plain;
        cooperative_ = false;
        set_fast(false);
        devctx_fiber_launch(&scheduler_sp_, stacks_.top(0), &plain_entry, this);
      }
      (cooperative_ ? stats.cooperative : stats.plain) += 1;
      if (why_ != nullptr && !why_->empty()) why_ = nullptr;  // the first reason is enough
      parked = cooperative_ && synced && !failed_;
    }
  }
  tls.mode = Mode::none;
  tls.block = nullptr;
  tls.barrier_state = &no_block;
  if (failed_) failure = std::move(failure_);
  return !failed_;
}

void BlockRun::plain_entry(void* self) {
  auto* b = static_cast<BlockRun*>(self);
  try {
    b->task_->run_block(b->task_->args);
  } catch (const BlockAbort&) {
  } catch (...) {
    b->record_current_exception();
  }
  if (!b->cooperative_) devctx_fiber_jump(b->scheduler_sp_);  // the whole block ran as a loop
  b->exit_current();
}

// A cooperative thread's fiber runs this loop: one GPU thread per iteration, the same thread
// index in each block of the range. Between two iterations the fiber is parked
// (devctx_fiber_park, fiber.cpp); run_parked() resumes it for the next block exactly as a
// barrier resumes a waiting thread, so starting and ending a thread costs about as much as one
// barrier.
//
// The kernel and the park go through one call instruction on purpose. A thread resumed after
// its last barrier ends with the kernel's return, predicted from the return-address stack,
// whose top is the call that the previous thread parked with: with one call site, that is
// exactly where the kernel returns to. (Two call sites cost two mispredicted returns per
// thread, about 5 ns.) After a BlockAbort the next step is always the other one: a fiber
// unwound out of its kernel parks next, and a parked fiber unwound out of its park (its block
// failed before it started) skips the kernel and parks for that block.
void BlockRun::thread_loop(void* self) {
  auto* b = static_cast<BlockRun*>(self);
  bool park = false;
  for (;;) {
    void (*step)(const void*) = park ? &devctx_fiber_park : b->task_->run_thread;
    const void* arg = park ? static_cast<const void*>(b) : b->task_->args;
    asm("" : "+r"(step), "+r"(arg));  // keep one call below, whichever step it is
    if (park || !b->aborting_) {
      try {
        step(arg);
      } catch (const BlockAbort&) {
        // A thread unwound after its block failed, or a parked fiber resumed to unwind: its
        // block failed before this thread started (the next iteration sees aborting_).
      } catch (...) {
        b->record_current_exception();
      }
    }
    park = !park;
  }
}

Dim3 BlockRun::thread_coords(std::uint32_t j) const {
  const Dim3 d = task_->block_dim;
  if (d.y == 1 && d.z == 1) return {j, 0, 0};
  return {j % d.x, (j / d.x) % d.y, j / (d.x * d.y)};
}

// Runs the current block in the fibers parked by the previous one (thread j in fiber j). Every
// fiber looks like a thread released by the previous barrier, so the block's first barrier
// switches into the next thread's fiber on the assembly fast path.
void BlockRun::run_parked() {
  const std::uint32_t n = bs_.n;
  cooperative_ = true;
  tls.mode = Mode::cooperative;
  bs_.first = 0;
  bs_.started = n;
  bs_.live = n;
  bs_.remaining = n;
  bs_.fast = !aborting_;
  advance_gen(2);
  Fiber* const f = fibers();
  for (std::uint32_t j = 0; j < parked_from_; ++j) {  // not run yet in this range: start afresh
    f[j].sp = fiber_prepare(stacks_.top(j + 1), &thread_loop, this);
    f[j].idx = thread_coords(j);
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
  devctx_fiber_switch(&scheduler_sp_, f[0].sp);
}

void BlockRun::start_aborting() {
  aborting_ = true;
  set_fast(false);
}

void BlockRun::record_current_exception() {
  start_aborting();
  if (failed_) return;
  failed_ = true;
  const std::string where = concat("kernel '", task_->kernel, "' failed in block ", to_string(block_idx_),
                                   ", thread ", to_string(tls.thread_idx), ": ");
  try {
    throw;
  } catch (const Error& e) {
    failure_ = {e.code(), where + e.what()};
  } catch (const std::exception& e) {
    failure_ = {Errc::kernel_failed, concat(where, demangled(typeid(e).name()), ": ", e.what())};
  } catch (...) {
    failure_ = {Errc::kernel_failed, where + "an exception of unknown type was thrown"};
  }
}

void BlockRun::go_cooperative(const char* cause) {
  const Dim3 d = task_->block_dim;
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

// ---- the cooperative scheduler ---------------------------------------------------------------
// A barrier costs every thread one switch, so the common case - the next thread in index order
// was released by the previous barrier - takes one comparison and one switch; everything else
// (threads not started yet, exited threads, warp operations, divergence) goes through
// resume_next().

// Thread j runs on stack j + 1; the thread that kept the plain fiber runs on stack 0. Reading the
// running thread off the stack pointer, rather than from a variable the previous switch wrote,
// keeps a store-to-load round trip off the critical path of every barrier.
[[gnu::always_inline]] inline std::uint32_t BlockRun::running_thread() const {
  std::uintptr_t sp;
  asm("movq %%rsp, %0" : "=r"(sp));
  const auto stack = std::uint32_t((sp - bs_.stack_base) >> bs_.shift);
  return stack != 0 ? stack - 1 : bs_.first;
}

[[gnu::always_inline]] inline bool BlockRun::runnable(const Fiber& f, std::uint32_t j) const {
  switch (f.wait & kKindMask) {
    case kAtBarrier: return aborting_ || f.wait != (kAtBarrier | bs_.gen);
    case kAtWarp: return aborting_ || f.wait != (kAtWarp | warp_gen_[j / 32]);
    default: return false;  // running (only the current fiber) or exited
  }
}

// Resuming a fiber whose stack is not in the TLB or cache costs more than the switch itself, and
// one switch ahead is too short to hide that: fetch the stack of the fiber kPrefetchAhead places
// on (in index order, the ring's order until threads exit). For a fiber not started yet this is
// where its stack was in an earlier block, which is where it will be again.
[[gnu::always_inline]] inline void BlockRun::prefetch_ahead(std::uint32_t j) const {
  std::uint32_t k = j + kPrefetchAhead;
  if (k >= bs_.n) k -= bs_.n - bs_.first;
  const auto* sp = static_cast<const char*>(fibers()[k].sp);
  __builtin_prefetch(sp);
  __builtin_prefetch(sp + 64);
}

// The C++ half of devctx::detail::cpu::barrier() (fiber.cpp): `sp` is the caller's suspended
// frame. Returns the frame to resume - `sp` itself if the caller goes on.
[[gnu::always_inline]] inline void* BlockRun::barrier_decide(void* sp) {
  if (!bs_.fast) [[unlikely]] {
    if (tls.mode == Mode::block_level)
      fail(Errc::kernel_failed, "devctx::barrier() inside a block-level kernel: each for_each_thread phase "
                                "already ends with a barrier, so call no barrier() of your own");
    if (aborting_) throw BlockAbort{};
    go_cooperative("barrier()");
  }
  if (--bs_.remaining == 0) [[unlikely]] {  // the last thread to arrive releases the others and goes on
    bs_.remaining = bs_.live;
    advance_gen(1);
    return sp;
  }
  const std::uint32_t me = running_thread();
  Fiber* const fibers = this->fibers();
  const std::uint64_t gen = bs_.gen;
  fibers[me].sp = sp;
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
  return sp;
}

extern "C" void* devctx_barrier_decide(void* sp) {
  BlockRun* b = tls.block;
  if (b == nullptr) not_in_kernel("devctx::barrier");
  return b->barrier_decide(sp);
}

extern "C" [[noreturn]] void devctx_throw_block_abort() { throw BlockAbort{}; }

// The stack pointer to switch to from `me`, which has just started waiting or exited: the next
// runnable fiber in the ring, started on the spot if it has not run yet. nullptr if `me` itself
// may go on (possible only once the block is aborting).
FiberSp BlockRun::next_target(std::uint32_t me) {
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
  if (aborting_) fiber_arm_abort(fibers()[j].sp);  // it unwinds instead of going on
  return fibers()[j].sp;
}

FiberSp BlockRun::start_fiber(std::uint32_t j) {
  bs_.started = j + 1;
  Fiber& f = fibers()[j];
  f.next = j + 1 < bs_.n ? j + 1 : bs_.first;
  f.wait = kRunning;
  f.idx = thread_coords(j);
  tls.thread_idx = f.idx;
  prefetch_ahead(j);
  return fiber_prepare(stacks_.top(j + 1), &thread_loop, this);
}

void BlockRun::report_divergence(std::uint32_t me) {
  // The threads are split between block barriers and warp operations (or a warp is split
  // between different warp operations). Fail the block and let every fiber unwind.
  if (!failed_) {
    failed_ = true;
    failure_ = {Errc::kernel_failed,
                concat("kernel '", task_->kernel, "' deadlocked in block ", to_string(block_idx_),
                       ": barrier divergence - ", bs_.live,
                       " live thread(s) wait at different barriers or warp operations (thread ",
                       to_string(fibers()[me].idx),
                       " among them). Every thread of a block must reach the same barrier() and "
                       "every lane of a warp the same warp operation.")};
  }
  start_aborting();
  // With aborting_ set every waiting fiber is runnable; resume one and unwind when resumed.
  if (const FiberSp target = next_target(me); target != nullptr) devctx_fiber_switch(&fibers()[me].sp, target);
  throw BlockAbort{};
}

// The thread that kept the plain fiber has finished; nothing resumes that fiber.
void BlockRun::exit_current() { devctx_fiber_jump(leave_block(running_thread())); }

// The C++ half of devctx_fiber_park (fiber.cpp): the running fiber's thread has finished and
// its frame is saved at `sp`. Returns the frame to resume.
FiberSp BlockRun::park(void* sp) {
  const std::uint32_t me = running_thread();
  Fiber* const f = fibers();
  f[me].sp = sp;
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

extern "C" void* devctx_park_decide(void* self, void* sp) { return static_cast<BlockRun*>(self)->park(sp); }

// Takes finished thread `me` out of the block and returns where to continue: the next runnable
// thread, or the scheduler once every thread has finished.
FiberSp BlockRun::leave_block(std::uint32_t me) {
  fibers()[me].wait = kExited;
  --bs_.live;
  const std::uint32_t w = me / 32;
  --warp_live_[w];
  // Exited threads no longer count at barriers (as on CUDA): if every other live thread has
  // arrived, the barrier is complete.
  if (--bs_.remaining == 0 && bs_.live > 0) {
    bs_.remaining = bs_.live;
    advance_gen(1);
  }
  if (warp_arrived_[w] > 0 && warp_arrived_[w] == warp_live_[w]) {
    warp_arrived_[w] = 0;
    ++warp_gen_[w];
  }
  return bs_.live == 0 ? scheduler_sp_ : next_target(me);
}

void BlockRun::warp_sync() {
  const std::uint32_t me = running_thread();
  const std::uint32_t w = me / 32;
  warp_synced_ = true;
  if (++warp_arrived_[w] == warp_live_[w]) {
    warp_arrived_[w] = 0;
    ++warp_gen_[w];
    return;
  }
  fibers()[me].wait = kAtWarp | warp_gen_[w];
  if (const FiberSp target = next_target(me); target != nullptr) devctx_fiber_switch(&fibers()[me].sp, target);
  if (aborting_) throw BlockAbort{};
}

const std::byte* BlockRun::warp_publish(const void* value, std::size_t bytes) {
  if (tls.mode == Mode::block_level)
    fail(Errc::kernel_failed, "a warp operation inside a block-level kernel's phase: the CPU runs a phase "
                              "as a loop, so lanes cannot exchange values there; use a thread-level kernel");
  if (!cooperative_) go_cooperative("a warp operation");
  if (aborting_) throw BlockAbort{};
  const std::uint32_t me = running_thread();
  std::byte* warp = warp_slots_.get() + (me / 32) * 32 * kWarpSlotBytes;
  std::memcpy(warp + (me % 32) * kWarpSlotBytes, value, bytes);
  warp_sync();
  return warp;
}

void BlockRun::warp_release() { warp_sync(); }

unsigned BlockRun::warp_width() const {
  const Dim3 t = tls.thread_idx;
  const Dim3 d = task_->block_dim;
  const std::uint32_t rank = t.x + d.x * (t.y + d.y * t.z);
  return std::min<std::uint32_t>(32, bs_.n - rank / 32 * 32);
}

void* BlockRun::static_shared(const void* site, std::size_t bytes, std::size_t align) {
  for (const SharedSite& s : sites_)
    if (s.site == site) return shared_base() + s.offset;
  const std::size_t offset = align_up(static_top_, std::max<std::size_t>(align, 16));
  if (offset + bytes > shared_limit_)
    fail(Errc::invalid_launch, "DEVCTX_SHARED arrays (", bytes_text(offset + bytes - align_up(task_->shared_bytes, 64)),
         ") plus dynamic shared_bytes (", bytes_text(task_->shared_bytes),
         ") exceed the CPU device's shared memory per block (", bytes_text(shared_limit_), ')');
  sites_.push_back({site, offset});
  static_top_ = offset + bytes;
  if (tls.shared_count < std::size(tls.shared_sites)) {
    tls.shared_sites[tls.shared_count] = site;
    tls.shared_addresses[tls.shared_count] = shared_base() + offset;
    shared_offsets_[tls.shared_count] = offset;
    ++tls.shared_count;
  }
  return shared_base() + offset;
}

void* BlockRun::per_thread_storage(std::size_t bytes, std::size_t align) {
  const std::size_t offset = align_up(per_thread_top_, std::max<std::size_t>(align, 64));
  if (offset + bytes > kPerThreadBytes)
    fail(Errc::invalid_launch, "Block::per_thread values of one block need more than ",
         bytes_text(kPerThreadBytes), " on the CPU backend");
  per_thread_top_ = offset + bytes;
  return per_thread_.get() + offset;
}

}  // namespace devctx::detail::cpu
