// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/block_executor.cpp - runs a range of blocks: per-launch and per-block state,
// the plain and block-level paths, failures, and the kernel-side entry points that reach the
// calling thread's executor. The cooperative path is in cooperative.cpp.
#include "backends/cpu/block_executor.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#include <typeinfo>
#include <utility>

#include <devctx/detail/device/fission.hpp>

#include "core/errors.hpp"

namespace devctx::detail::cpu {

namespace {
/// What barrier()'s assembly reads outside cooperative blocks: no thread index passes its check.
constinit BarrierState no_block{};
}  // namespace

constinit thread_local ThreadState tls{.barrier_state = &no_block};
constinit thread_local FissionSlot fission_slot{};

namespace {
constinit std::atomic<const char*> fission_off{nullptr};
}

bool note_fission_off(const char* why) noexcept {
  const char* none = nullptr;
  fission_off.compare_exchange_strong(none, why, std::memory_order_relaxed);
  return true;
}

const char* fission_off_reason() noexcept { return fission_off.load(std::memory_order_relaxed); }

namespace {

/// The calling thread's executor (see prepare_for_this_thread), and the pointer that finds it
/// without the checks of a thread_local with a destructor.
thread_local std::unique_ptr<BlockExecutor> this_thread_executor;
constinit thread_local BlockExecutor* this_thread_executor_ptr = nullptr;

BlockExecutor& current_executor(const char* function) {
  if (tls.executor == nullptr) not_in_kernel(function);
  return *tls.executor;
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
  return current_executor("a devctx warp operation").warp_publish(value, bytes);
}
void warp_release() { current_executor("a devctx warp operation").warp_release(); }
unsigned warp_width() { return current_executor("a devctx warp operation").warp_width(); }
void* static_shared(const void* site, std::size_t bytes, std::size_t align, std::size_t element_bytes) {
  return current_executor("DEVCTX_SHARED").static_shared(site, bytes, align, element_bytes);
}
void* BlockExecutor::static_shared(const void* site, std::size_t bytes, std::size_t align, std::size_t element_bytes) {
  void* address = shared_.array(site, bytes, align, element_bytes);
  if (checking_ != nullptr) {
    // The site is the declaration's name (DEVCTX_SHARED): checking mode names the array by it.
    const auto offset = std::size_t(static_cast<std::byte*>(address) - shared_.base());
    checking_->add_shared_array(static_cast<const char*>(site), offset, bytes, element_bytes);
  }
  return address;
}

void* per_thread_storage(std::size_t bytes, std::size_t align) {
  return current_executor("devctx::Block::per_thread").per_thread_storage(bytes, align);
}
void not_in_kernel(const char* function) {
  fail(Errc::invalid_argument, function,
       " was called outside a running kernel; it may only be used inside DEVCTX_KERNEL functions "
       "launched with enqueue_function");
}

// ---- BlockExecutor ------------------------------------------------------------------------------

void BlockExecutor::prepare_for_this_thread(std::size_t stack_bytes, std::size_t shared_limit) {
  if (this_thread_executor_ptr != nullptr) return;
  this_thread_executor = std::make_unique<BlockExecutor>(stack_bytes, shared_limit);
  this_thread_executor_ptr = this_thread_executor.get();
}

BlockExecutor& BlockExecutor::of_this_thread() noexcept { return *this_thread_executor_ptr; }

BlockExecutor::BlockExecutor(std::size_t stack_bytes, std::size_t shared_limit)
    : stacks_(stack_bytes), shared_(shared_limit), warp_slots_(cache_line_bytes(32 * 32 * kWarpSlotBytes)) {
  // kPrefetchAhead spare fibers: prefetch_ahead() may look past the last thread of a small ring.
  fiber_storage_.reset(new Fiber[kMaxBlockThreads + kPrefetchAhead]);
  bs_.fibers = fiber_storage_.get();
  bs_.shift = stacks_.shift();
}

void BlockExecutor::enter_launch(const BlockTask& task) {
  task_ = &task;
  const LaunchConfig& config = task.launch.config;
  bs_.n = std::uint32_t(config.block_dim.volume());
  bs_.last = bs_.n - 1;
  shared_.enter_launch(task.launch_id, config.shared_bytes, task.checked != nullptr);
  if (task.checked != nullptr) [[unlikely]]
    enter_checked_launch(task);
  tls.block_dim = config.block_dim;
  tls.grid_dim = config.grid_dim;
  tls.executor = this;
  tls.barrier_state = &bs_;
  fission_slot = FissionSlot{.enabled = task.fission && task.checked == nullptr};
}

// Out of line: an unchecked launch's set-up stays as it was without checking mode.
[[gnu::noinline, gnu::cold]] void BlockExecutor::enter_checked_launch(const BlockTask& task) {
  const LaunchConfig& config = task.launch.config;
  // Every arrival at a barrier goes to barrier_decide, which tells the checker: no thread index
  // passes the assembly fast path's test against `last`.
  bs_.last = 0;
  if (!checker_) checker_ = std::make_unique<check::Checker>();
  checker_->begin_launch(task.launch.name, config.grid_dim, config.block_dim, task.checked->spans, config.shared_bytes,
                         task.checked->registry);
  checking_ = checker_.get();
  tls.checker = checking_;
}

// The coordinates come as three integers so that they travel in registers (a Dim3 in memory,
// updated one field at a time by the caller, stalls store forwarding on every block).
[[gnu::always_inline]] inline void BlockExecutor::set_block(unsigned bx, unsigned by, unsigned bz) {
  block_idx_.x = bx;
  block_idx_.y = by;
  block_idx_.z = bz;
  tls.block_idx.x = bx;
  tls.block_idx.y = by;
  tls.block_idx.z = bz;
  tls.thread_idx = {0, 0, 0};
  per_thread_.next_block();
  shared_.next_block();
  if (checking_ != nullptr) [[unlikely]]
    checking_->begin_block(block_idx_, shared_.base());
}

RangeResult BlockExecutor::run_range(const BlockTask& task, std::uint64_t begin, std::uint64_t end,
                                     const std::atomic<bool>& stop, bool want_why) {
  RangeResult result;
  const KernelLaunch& launch = task.launch;
  // A checked block-level kernel runs on a fiber stack too: a fault at a shared array's guard page
  // then abandons that stack, not the worker's (leave_after_guard_fault).
  if ((!launch.block_level || task.checked != nullptr) && !reserve_stacks(task, result)) return result;
  enter_launch(task);
  const Dim3 g = launch.config.grid_dim;
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
  why_ = want_why ? &result.why : nullptr;
  if (launch.block_level) {
    tls.mode = Mode::block_level;
    std::uint64_t b = begin;
    for (; b < end && !failed_ && !stop.load(std::memory_order_relaxed); ++b, step()) {
      set_block(x, y, z);
      if (checking_ != nullptr) [[unlikely]] {
        fiber_launch(&scheduler_sp_, stacks_.stack(0), &checked_block_level_entry, this);
        if (!failed_) (void)check_block_twice();
        continue;
      }
      try {
        task.run_block(launch.args);
      } catch (...) {
        record_current_exception();
      }
    }
    result.block_level += b - begin;
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
        tls.x_end = launch.config.block_dim.x;
        tls.mode = Mode::plain;
        cooperative_ = false;
        set_fast(false);
        // A map twin may run this block and the next ones of the row in one call (fission::map_blocks).
        fission_slot.range = std::uint32_t(std::min<std::uint64_t>({end - b, g.x - x, std::uint64_t{1} << 20}));
        fission_slot.ran = 1;
        fiber_launch(&scheduler_sp_, stacks_.stack(0), &plain_entry, this);
      }
      bool again = false;
      if (checking_ != nullptr && !failed_) again = check_block_twice();
      if (fission_slot.taken) {
        fission_slot.taken = false;
        // The blocks after this one that a map twin ran too: skipped (they lie in this row).
        const std::uint32_t ran = fission_slot.ran;
        fission_slot.ran = 1;
        result.translated += ran;
        b += ran - 1;
        x += ran - 1;
      } else {
        (cooperative_ ? result.cooperative : result.plain) += 1;
      }
      if (fission_slot.declined != nullptr && result.declined == nullptr) result.declined = fission_slot.declined;
      if (why_ != nullptr && !why_->empty()) why_ = nullptr;  // the first reason is enough
      // After a second run the parked fibers hold reversed thread indices: start afresh.
      parked = cooperative_ && synced && !failed_ && !again;
    }
  }
  tls.mode = Mode::none;
  tls.executor = nullptr;
  tls.checker = nullptr;
  checking_ = nullptr;
  tls.barrier_state = &no_block;
  fission_slot = FissionSlot{};
  if (failed_) result.failure = std::move(failure_);
  return result;
}

// A stack for each thread of a block plus the plain loop's, reserved for the largest block size
// this executor has run so far: a launch needs no more address space than its blocks use, and
// a failure is this launch's error at synchronize, not a dead worker. Fibers parked by an
// earlier range are never resumed (a range starts on the plain path), so the region may move.
bool BlockExecutor::reserve_stacks(const BlockTask& task, RangeResult& result) {
  const std::size_t threads = task.launch.config.block_dim.volume();
  try {
    stacks_.reserve(threads + 1);
    bs_.stack_base = stacks_.base();
    return true;
  } catch (const Error& e) {
    bs_.stack_base = 0;
    try {
      result.failure = BlockFailure{
          Errc::out_of_memory,
          concat("kernel '", task.launch.name, "' could not start: its blocks of ", threads, " threads need ",
                 threads + 1, " fiber stacks on each thread that runs them, and there was no room: ", e.what(),
                 ". Free memory, raise the address-space limit (ulimit -v), or use smaller blocks or a smaller "
                 "DEVCTX_CPU_STACK_BYTES (now ",
                 stacks_.stack_bytes(), ")")};
    } catch (...) {
      result.failure = BlockFailure{Errc::out_of_memory, {}};
    }
    return false;
  }
}

DEVCTX_FIBER_FIRST_FRAME void BlockExecutor::plain_entry(void* self) {
  auto* e = static_cast<BlockExecutor*>(self);
  try {
    e->task_->run_block(e->task_->launch.args);
  } catch (const BlockAbort&) {
  } catch (...) {
    e->record_current_exception();
  }
  if (!e->cooperative_) fiber_finish(e->stacks_.stack(0), e->scheduler_sp_);  // the whole block ran as a loop
  e->exit_current();
}

// A checked block-level block, on fiber stack 0 (see run_range).
DEVCTX_FIBER_FIRST_FRAME void BlockExecutor::checked_block_level_entry(void* self) {
  auto* e = static_cast<BlockExecutor*>(self);
  try {
    e->task_->run_block(e->task_->launch.args);
  } catch (...) {
    e->record_current_exception();
  }
  fiber_finish(e->stacks_.stack(0), e->scheduler_sp_);
}

void BlockExecutor::leave_after_guard_fault() noexcept {
#if defined(__SANITIZE_ADDRESS__)
  __asan_handle_no_return();  // the abandoned frames' redzones
#endif
  const bool was_failed = failed_;
  start_aborting();
  if (!was_failed) {
    failed_ = true;
    try {
      const auto* address = reinterpret_cast<const void*>(guard_fault_);
      std::string what = allocation_fault_.data != nullptr
                             ? checking_->allocation_fault_text(address, allocation_fault_, fault_access_)
                             : checking_->guard_fault_text(address).value_or(
                                   "out-of-bounds access past a shared array (devctx checking mode)");
      failure_ = {Errc::check_failed, concat("kernel '", task_->launch.name, "' failed in block ", to_string(block_idx_),
                                             ", thread ", to_string(tls.thread_idx), ": ", std::move(what))};
    } catch (...) {
      failure_ = {Errc::out_of_memory, {}};
    }
  }
  // Leave the faulting thread's stack for good, as its thread's end would.
  if (tls.mode == Mode::block_level || !cooperative_) fiber_jump(scheduler_sp_);
  const std::uint32_t me = running_thread_index();
  fiber_jump(leave_block(me));
}

void BlockExecutor::start_aborting() {
  aborting_ = true;
  set_fast(false);
}

void BlockExecutor::record_current_exception() {
  start_aborting();
  if (failed_) return;
  failed_ = true;
  try {
    const std::string where = concat("kernel '", task_->launch.name, "' failed in block ", to_string(block_idx_),
                                     ", thread ", to_string(tls.thread_idx), ": ");
    try {
      throw;
    } catch (const check::Report& r) {
      // A report about several threads names them itself.
      failure_ = {r.code(), r.about_current_thread() ? where + r.what()
                                                     : concat("kernel '", task_->launch.name, "' failed in block ",
                                                              to_string(block_idx_), ": ", r.what())};
    } catch (const Error& e) {
      failure_ = {e.code(), where + e.what()};
    } catch (const std::exception& e) {
      failure_ = {Errc::kernel_failed, concat(where, demangled(typeid(e).name()), ": ", e.what())};
    } catch (...) {
      failure_ = {Errc::kernel_failed, where + "an exception of unknown type was thrown"};
    }
  } catch (...) {
    // No memory left to describe the failure (this runs inside a fiber, where nothing may
    // escape): the code alone, which the queue's report spells out.
    failure_ = {Errc::out_of_memory, {}};
  }
}

// ---- checking mode's hooks ----------------------------------------------------------------------
// Reports found where no kernel code can throw them (a block's end, a barrier completed by a
// thread's exit) become the block's failure directly; the block then aborts as after any failure.
// These run on the scheduler's stack or in a fiber between kernel frames, where nothing may
// escape: the checker's own allocations failing is an out_of_memory failure of the block.

void BlockExecutor::record_check_exception() noexcept {
  start_aborting();
  if (failed_) return;
  failed_ = true;
  try {
    try {
      throw;
    } catch (const Error& e) {  // a check::Report, or the checker's own failure
      failure_ = {e.code(),
                  concat("kernel '", task_->launch.name, "' failed in block ", to_string(block_idx_), ": ", e.what())};
    }
  } catch (...) {
    failure_ = {Errc::out_of_memory, {}};  // std::bad_alloc, or no memory for the message
  }
}

void BlockExecutor::check_block_end() noexcept {
  try {
    checking_->block_end();
  } catch (...) {
    record_check_exception();
  }
}

// A checked block ran without a report: when its launch has DEVCTX_SHARED arrays, it runs again
// with its threads in reverse order, its memory restored, and the checker compares the two runs
// (check/order_check.hpp). Returns whether it ran again.
bool BlockExecutor::check_block_twice() {
  check_block_end();
  if (failed_ || !checking_->wants_second_run() || warp_synced_) return false;
  try {
    checking_->begin_second_run();
  } catch (...) {
    record_check_exception();
    return false;
  }
  per_thread_.next_block();
  const KernelLaunch& launch = task_->launch;
  if (launch.block_level) {
    fiber_launch(&scheduler_sp_, stacks_.stack(0), &checked_block_level_entry,
                 this);  // its phases ask checked_threads_reversed()
  } else {
    reversed_ = true;
    parked_from_ = bs_.n;  // every fiber starts afresh, thread n - 1 - j in fiber j
    run_parked();
    reversed_ = false;
  }
  if (!failed_) check_block_end();
  return true;
}

void BlockExecutor::check_interval_end_quietly() noexcept {
  try {
    checking_->barrier_complete();
  } catch (...) {
    record_check_exception();
  }
}

}  // namespace devctx::detail::cpu
