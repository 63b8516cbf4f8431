#include "backends/cpu/block_run.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <exception>
#include <typeinfo>

#include <devctx/detail/cpu_state.hpp>

#include "core/errors.hpp"

namespace devctx::detail::cpu {

constinit thread_local ThreadState tls{};

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

void barrier() { current_block("devctx::barrier").barrier(); }
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

BlockRun::BlockRun(std::size_t stack_bytes, std::size_t shared_limit)
    : stacks_(stack_bytes),
      shared_limit_(shared_limit),
      shared_(new (std::align_val_t{64}) std::byte[shared_limit + 64]),
      per_thread_(new (std::align_val_t{64}) std::byte[kPerThreadBytes]),
      slots_(1024),
      next_(1024),
      prev_(1024),
      warp_slots_(new (std::align_val_t{64}) std::byte[32 * 32 * kWarpSlotBytes]) {}

bool BlockRun::run(const BlockTask& task, unsigned bx, unsigned by, unsigned bz, BlockPath& path,
                   BlockFailure& failure, std::string* why) {
  task_ = &task;
  block_idx_.x = bx;
  block_idx_.y = by;
  block_idx_.z = bz;
  n_ = std::uint32_t(task.block_dim.volume());
  cooperative_ = false;
  aborting_ = false;
  failed_ = false;
  why_ = why;
  if (sites_launch_ != task.launch_id) {
    sites_launch_ = task.launch_id;
    sites_.clear();
    tls.shared_count = 0;
    static_top_ = align_up(task.shared_bytes, 64);
  }
  per_thread_top_ = 0;

  tls.block_idx.x = bx;
  tls.block_idx.y = by;
  tls.block_idx.z = bz;
  tls.block_dim = task.block_dim;
  tls.grid_dim = task.grid_dim;
  tls.thread_idx = {0, 0, 0};
  tls.dynamic_shared = shared_.get();
  tls.dynamic_shared_bytes = task.shared_bytes;
  tls.block = this;
  tls.x_end = task.block_dim.x;

  if (task.block_level) {
    tls.mode = Mode::block_level;
    try {
      task.run_block(task.args);
    } catch (...) {
      record_current_exception();
    }
    path = BlockPath::block_level;
  } else {
    tls.mode = Mode::plain;
    const FiberSp plain = fiber_prepare(stacks_.top(0), &plain_entry, this);
    devctx_fiber_switch(&scheduler_sp_, plain);
    path = cooperative_ ? BlockPath::cooperative : BlockPath::plain;
  }
  tls.mode = Mode::none;
  tls.block = nullptr;
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
  if (!b->cooperative_) devctx_fiber_switch(&b->slots_[0].sp, b->scheduler_sp_);  // whole block done
  b->exit_current();
}

void BlockRun::thread_entry(void* self) {
  auto* b = static_cast<BlockRun*>(self);
  if (!b->aborting_) {
    try {
      b->task_->run_thread(b->task_->args);
    } catch (const BlockAbort&) {
    } catch (...) {
      b->record_current_exception();
    }
  }
  b->exit_current();
}

void BlockRun::record_current_exception() {
  aborting_ = true;
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
  // Threads before `first` have finished. The ring holds first..n-1; `first` keeps the plain fiber.
  for (std::uint32_t j = first; j < n_; ++j) {
    slots_[j].state = State::not_started;
    next_[j] = j + 1 < n_ ? j + 1 : first;
    prev_[j] = j > first ? j - 1 : n_ - 1;
  }
  slots_[first].state = State::running;
  slots_[first].idx = t;
  cur_ = first;
  live_ = n_ - first;
  arrived_ = 0;
  gen_ = 0;
  const std::uint32_t warps = (n_ + 31) / 32;
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t begin = std::max(w * 32, first), end = std::min(w * 32 + 32, n_);
    warp_live_[w] = end > begin ? end - begin : 0;
    warp_arrived_[w] = 0;
    warp_gen_[w] = 0;
  }
}

[[gnu::always_inline]] inline bool BlockRun::runnable(std::uint32_t j) const {
  const Slot& s = slots_[j];
  switch (s.state) {
    case State::not_started: return true;
    case State::at_barrier: return aborting_ || s.wait_gen != gen_;
    case State::at_warp: return aborting_ || s.wait_gen != warp_gen_[j / 32];
    default: return false;
  }
}

std::uint32_t BlockRun::find_runnable(std::uint32_t j) {
  for (std::uint32_t seen = 0; !runnable(j); j = next_[j]) {
    if (++seen > n_) {
      // Every live thread waits and none can go on: the threads are split between block
      // barriers and warp operations (or a warp is split between different warp operations).
      if (!failed_) {
        failed_ = true;
        failure_ = {Errc::kernel_failed,
                    concat("kernel '", task_->kernel, "' deadlocked in block ", to_string(block_idx_),
                           ": barrier divergence - ", live_,
                           " live thread(s) wait at different barriers or warp operations (thread ",
                           to_string(slots_[cur_].idx),
                           " among them). Every thread of a block must reach the same barrier() and "
                           "every lane of a warp the same warp operation.")};
      }
      aborting_ = true;
      seen = 0;
    }
  }
  return j;
}

[[gnu::always_inline]] inline void BlockRun::switch_away() {
  const std::uint32_t from = cur_;
  std::uint32_t j = next_[from];
  if (!runnable(j)) [[unlikely]] j = find_runnable(j);
  Slot& to = slots_[j];
  cur_ = j;
  // The fiber after `j` runs next: fetch the top of its stack (its saved registers and the
  // frames above them) while `j` runs, so that resuming it does not wait for memory.
  if (const auto* after = static_cast<const char*>(slots_[next_[j]].sp); after != nullptr) {
    __builtin_prefetch(after);
    __builtin_prefetch(after + 64);
  }
  if (to.state == State::not_started) [[unlikely]] {
    // Coordinates computed in registers and written to both places from them: reading back a
    // Dim3 just written field by field would stall store forwarding on every fiber start.
    const Dim3 d = task_->block_dim;
    const unsigned x = d.y == 1 && d.z == 1 ? j : j % d.x;
    const unsigned y = d.y == 1 && d.z == 1 ? 0 : (j / d.x) % d.y;
    const unsigned z = d.y == 1 && d.z == 1 ? 0 : j / (d.x * d.y);
    to.idx.x = x;
    to.idx.y = y;
    to.idx.z = z;
    tls.thread_idx.x = x;
    tls.thread_idx.y = y;
    tls.thread_idx.z = z;
    to.sp = fiber_prepare(stacks_.top(j + 1), &thread_entry, this);
  } else {
    tls.thread_idx = to.idx;
  }
  to.state = State::running;
  if (j != from) devctx_fiber_switch(&slots_[from].sp, to.sp);
}

void BlockRun::exit_current() {
  const std::uint32_t me = cur_;
  slots_[me].state = State::exited;
  --live_;
  next_[prev_[me]] = next_[me];
  prev_[next_[me]] = prev_[me];
  const std::uint32_t w = me / 32;
  --warp_live_[w];
  // Exited threads no longer count at barriers (as on CUDA).
  if (arrived_ > 0 && arrived_ == live_) {
    arrived_ = 0;
    ++gen_;
  }
  if (warp_arrived_[w] > 0 && warp_arrived_[w] == warp_live_[w]) {
    warp_arrived_[w] = 0;
    ++warp_gen_[w];
  }
  if (live_ == 0) devctx_fiber_switch(&slots_[me].sp, scheduler_sp_);
  switch_away();
  __builtin_unreachable();
}

void BlockRun::barrier() {
  if (!cooperative_) [[unlikely]] {
    if (tls.mode == Mode::block_level)
      fail(Errc::kernel_failed, "devctx::barrier() inside a block-level kernel: each for_each_thread phase "
                                "already ends with a barrier, so call no barrier() of your own");
    go_cooperative("barrier()");
  }
  if (aborting_) [[unlikely]] throw BlockAbort{};
  if (++arrived_ == live_) {
    arrived_ = 0;
    ++gen_;
    return;
  }
  Slot& me = slots_[cur_];
  me.state = State::at_barrier;
  me.wait_gen = gen_;
  switch_away();
  if (aborting_) [[unlikely]] throw BlockAbort{};
}

void BlockRun::warp_sync() {
  const std::uint32_t w = cur_ / 32;
  if (++warp_arrived_[w] == warp_live_[w]) {
    warp_arrived_[w] = 0;
    ++warp_gen_[w];
    return;
  }
  Slot& me = slots_[cur_];
  me.state = State::at_warp;
  me.wait_gen = warp_gen_[w];
  switch_away();
  if (aborting_) throw BlockAbort{};
}

const std::byte* BlockRun::warp_publish(const void* value, std::size_t bytes) {
  if (tls.mode == Mode::block_level)
    fail(Errc::kernel_failed, "a warp operation inside a block-level kernel's phase: the CPU runs a phase "
                              "as a loop, so lanes cannot exchange values there; use a thread-level kernel");
  if (!cooperative_) go_cooperative("a warp operation");
  if (aborting_) throw BlockAbort{};
  std::byte* warp = warp_slots_.get() + (cur_ / 32) * 32 * kWarpSlotBytes;
  std::memcpy(warp + (cur_ % 32) * kWarpSlotBytes, value, bytes);
  warp_sync();
  return warp;
}

void BlockRun::warp_release() { warp_sync(); }

unsigned BlockRun::warp_width() const {
  const Dim3 t = tls.thread_idx;
  const Dim3 d = task_->block_dim;
  const std::uint32_t rank = t.x + d.x * (t.y + d.y * t.z);
  return std::min<std::uint32_t>(32, n_ - rank / 32 * 32);
}

void* BlockRun::static_shared(const void* site, std::size_t bytes, std::size_t align) {
  for (const SharedSite& s : sites_)
    if (s.site == site) return shared_.get() + s.offset;
  const std::size_t offset = align_up(static_top_, std::max<std::size_t>(align, 16));
  if (offset + bytes > shared_limit_)
    fail(Errc::invalid_launch, "DEVCTX_SHARED arrays (", bytes_text(offset + bytes - align_up(task_->shared_bytes, 64)),
         ") plus dynamic shared_bytes (", bytes_text(task_->shared_bytes),
         ") exceed the CPU device's shared memory per block (", bytes_text(shared_limit_), ')');
  sites_.push_back({site, offset});
  static_top_ = offset + bytes;
  if (tls.shared_count < std::size(tls.shared_sites)) {
    tls.shared_sites[tls.shared_count] = site;
    tls.shared_addresses[tls.shared_count] = shared_.get() + offset;
    ++tls.shared_count;
  }
  return shared_.get() + offset;
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
