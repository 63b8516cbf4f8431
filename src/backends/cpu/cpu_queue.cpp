// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cpu_queue.cpp - a CPU stream's ordering, failures, waiters and events.
#include "backends/cpu/cpu_queue.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/check/guarded_memory.hpp"
#include "backends/cpu/cpu_device.hpp"
#include "core/errors.hpp"
#include "core/memory.hpp"

namespace devctx::detail::cpu {

CpuQueue::CpuQueue(std::shared_ptr<CpuDevice> device) : QueueImpl(*device), device_(std::move(device)) {}

void check_not_in_kernel(const DeviceImpl& device, const char* operation) {
  if (tls.mode != Mode::none)
    fail(Errc::invalid_argument, operation, " was called from inside a kernel on ", device.label(),
         "; kernels cannot wait for device work: wait on the host");
}

std::uint64_t CpuQueue::push(std::unique_ptr<Op> op) {
  Pool& pool = cpu().pool();
  std::unique_lock lock(pool.mutex, std::defer_lock);
  lock_soon(lock);
  const std::uint64_t seq = next_seq_;
  op->seq = seq;
  op->queue = this;
  // The one step that can fail (std::bad_alloc); then nothing is queued. From here on the op
  // runs and completes whatever happens.
  ops_.push_back(std::move(op));
  ++next_seq_;
  ops_.back()->enqueued();
  if (!self_while_busy_) self_while_busy_ = std::static_pointer_cast<CpuQueue>(shared_from_this());
  pump();
  release_idle(pool, lock);
  return seq;
}

void CpuQueue::pump() noexcept {
  while (!ops_.empty() && !head_dispatched_) {
    Op* op = ops_.front().get();
    if (const CpuEvent* event = op->awaited(); event != nullptr && !event->queue->reached(event->seq)) {
      if (waiting_for_ == 0) {  // not linked yet (pump runs again whenever work is added)
        CpuQueue& target = *event->queue;
        waiting_for_ = event->seq;
        next_waiter_ = target.first_waiter_;
        target.first_waiter_ = this;
      }
      return;
    }
    if (Gate* gate = op->gate(); gate != nullptr && !gate->open) {
      if (!gate_linked_) {  // room was reserved: no allocation
        gate_linked_ = true;
        gate->waiters.push_back(this);
      }
      return;
    }
    head_dispatched_ = true;
    if (op->parts == 0) {
      complete(op);
      continue;
    }
    cpu().dispatch(op);
  }
}

void CpuQueue::complete(Op* op) noexcept {
  op->finish(failures_);
  completed_.store(op->seq, std::memory_order_release);
  // Destroying the op may drop the last reference to another queue (a WaitOp's event). One of
  // this device takes no lock; one of another CPU device may take the device's (shared) lock,
  // so such an op is destroyed later with the lock released (release_idle).
  std::unique_ptr<Op> finished = std::move(ops_.front());
  ops_.pop_front();
  if (finished->retire_unlocked()) {
    SharedState& shared = *cpu().pool().shared;
    finished->next_retired = shared.first_retired;
    shared.first_retired = finished.release();
  }
  finished.reset();
  head_dispatched_ = false;
  done.notify_all();
  // Unlink the waiters this completion releases before pumping any of them: pumping may link
  // queues anew. The released ones are chained through next_waiter_ meanwhile.
  CpuQueue* ready = nullptr;
  CpuQueue** ready_end = &ready;
  for (CpuQueue** link = &first_waiter_; *link != nullptr;) {
    CpuQueue* q = *link;
    if (q->waiting_for_ > completed_.load(std::memory_order_relaxed)) {
      link = &q->next_waiter_;
      continue;
    }
    *link = q->next_waiter_;
    q->waiting_for_ = 0;
    q->next_waiter_ = nullptr;
    *ready_end = q;
    ready_end = &q->next_waiter_;
  }
  while (ready != nullptr) {
    CpuQueue* q = ready;
    ready = q->next_waiter_;
    q->next_waiter_ = nullptr;
    q->pump();
  }
  pump();
  if (ops_.empty()) note_idle();
}

void CpuQueue::note_idle() noexcept {
  if (!self_while_busy_ || idle_listed_) return;
  SharedState& shared = *cpu().pool().shared;
  idle_listed_ = true;
  next_idle_ = shared.first_idle;
  shared.first_idle = this;
}

void CpuQueue::release_idle(Pool& pool, std::unique_lock<std::mutex>& lock) noexcept {
  SharedState& shared = *pool.shared;
  while (Op* op = shared.first_retired) {
    shared.first_retired = op->next_retired;
    lock.unlock();
    delete op;
    lock.lock();
  }
  while (CpuQueue* q = shared.first_idle) {
    shared.first_idle = q->next_idle_;
    q->next_idle_ = nullptr;
    q->idle_listed_ = false;
    if (!q->ops_.empty()) continue;  // given work again meanwhile: it keeps itself
    std::shared_ptr<CpuQueue> last = std::move(q->self_while_busy_);
    lock.unlock();
    last.reset();
    lock.lock();
  }
}

void CpuQueue::spin_until_reached(std::unique_lock<std::mutex>& lock, std::uint64_t seq) noexcept {
  const std::int64_t spin_ns = cpu().pool().spin_ns;
  if (spin_ns <= 0) return;
  lock.unlock();
  const auto until = Clock::now() + std::chrono::nanoseconds(spin_ns);
  for (unsigned i = 1; !reached(seq); ++i) {
    cpu_relax();
    if (i % 64 == 0 && Clock::now() >= until) break;
  }
  lock_soon(lock);
}

void CpuQueue::wait_until(std::unique_lock<std::mutex>& lock, std::uint64_t seq, bool report) {
  check_not_in_kernel(device(), "synchronize (or an event or pageable-copy wait)");
  bool spun = false;
  while (!reached(seq)) {
    if (cpu().help(lock, this)) continue;
    Gate* gate = ops_.empty() || head_dispatched_ ? nullptr : ops_.front()->gate();
    if (gate == nullptr || gate->open || gate->deadline == Clock::time_point::max()) {
      if (!spun && head_dispatched_) {
        // Workers are finishing this queue's head: watch for it a moment before sleeping (a
        // wake-up costs microseconds; DEVCTX_CPU_SPIN_US bounds the spin).
        spun = true;
        spin_until_reached(lock, seq);
        continue;
      }
      done.wait(lock);
      continue;
    }
    // Held at a collective's gate: past its deadline the other ranks are not coming (a
    // mismatched or missing call), and the collective fails rather than hang.
    // The deadline is copied: the lock is released while waiting, and the op that owns the
    // gate may complete and be freed meanwhile (ASan saw wait_until read it after that).
    const Clock::time_point deadline = gate->deadline;
    if (done.wait_until(lock, deadline) == std::cv_status::timeout) {
      Gate* const now_waiting = ops_.empty() || head_dispatched_ ? nullptr : ops_.front()->gate();
      if (now_waiting != nullptr && !now_waiting->open && Clock::now() >= now_waiting->deadline) {
        now_waiting->expire();
        release_idle(cpu().pool(), lock);
      }
    }
  }
  if (!report) return;
  auto covered = [&](const QueuedFailure& f) { return f.seq <= seq; };
  const auto first = std::find_if(failures_.begin(), failures_.end(), covered);
  if (first == failures_.end()) return;
  // Taken out before the message is built: forgotten even if building it fails.
  std::list<QueuedFailure> reported;
  reported.splice(reported.end(), failures_, first);
  const auto more = std::count_if(failures_.begin(), failures_.end(), covered);
  failures_.remove_if(covered);
  const BlockFailure& failure = reported.front().failure;
  std::string message = failure.message.empty() ? concat("a kernel failed on ", device().label(),
                                                         ", and there was no memory left to describe the failure")
                                                : failure.message;
  if (more > 0) message += concat(" (and ", more, " later failure(s) on this stream)");
  throw Error(failure.code, message);
}

// ---- the QueueImpl interface --------------------------------------------------------------------

void* CpuQueue::allocate(std::size_t bytes, MemKind kind) {
  const std::size_t align = bytes >= (std::size_t{1} << 20) ? 4096 : 64;
  const std::size_t rounded = std::max<std::size_t>((bytes + align - 1) / align * align, align);
  // With overcommit (vm.overcommit_memory=1, common on GPU hosts) malloc promises any size the
  // address space holds; a buffer larger than memory and swap together would fault when touched.
  const std::size_t backable = host_backable_bytes();
  if (backable != 0 && bytes > backable)
    fail(Errc::out_of_memory, allocation_operation(kind), " on ", device().label(), ": cannot allocate ",
         bytes_text(bytes), ": more than the machine's memory and swap together (", bytes_text(backable),
         "), so no single buffer of this size can ever be backed");
  // Checking mode places device memory between guard pages (check/guarded_memory.hpp).
  const bool guarded = checking() && kind == MemKind::device;
  void* p = guarded ? check::guarded_allocate(bytes) : std::aligned_alloc(align, rounded);
  if (p == nullptr)
    fail(Errc::out_of_memory, allocation_operation(kind), " on ", device().label(), ": cannot allocate ",
         bytes_text(bytes), "; ", host_memory_text(bytes), guarded ? check::guarded_failure_note(bytes) : std::string());
  if (guarded) {
    // Checking mode tells a written element from one only read by its change of value, and
    // reports reads of bytes nothing wrote (docs/checking.md).
    std::memset(p, check::kPoisonByte, bytes);
    try {
      cpu().written().add(p, bytes);
    } catch (...) {
      check::guarded_free(p);
      throw;
    }
  }
  return p;
}

void CpuQueue::free(void* data, std::size_t, MemKind kind) noexcept {
  try {
    push(std::make_unique<FreeOp>(data, cpu().written(), checking() && kind == MemKind::device));
  } catch (...) {
    // Out of memory while queueing the free: leaking is the only safe choice.
  }
}

void CpuQueue::copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) {
  const bool waits = dst_kind == MemKind::host_pageable || src_kind == MemKind::host_pageable;
  // Everything that can refuse the copy comes before it is queued: once queued, it runs, and
  // the wait below (which helps, or sleeps) throws nothing.
  if (waits) check_not_in_kernel(device(), "enqueue_copy with ordinary host memory");
  const std::uint64_t seq = push(std::make_unique<CopyOp>(dst, src, bytes, cpu().workers(), cpu().written()));
  if (waits) {
    std::unique_lock lock(cpu().pool().mutex);
    wait_until(lock, seq, false);
  }
}

void CpuQueue::copy_peer(void* dst, DeviceImpl& dst_device, const void* src, DeviceImpl&, std::size_t bytes) {
  // Both sides are host memory: an ordinary copy, run by this device's workers in its order.
  // What it writes counts as written on the destination's device (checking mode).
  auto& written = static_cast<CpuDevice&>(dst_device).written();
  push(std::make_unique<CopyOp>(dst, src, bytes, cpu().workers(), written));
}

void CpuQueue::fill(void* dst, MemKind, std::size_t count, const void* value, std::size_t element_bytes) {
  push(std::make_unique<FillOp>(dst, count, value, element_bytes, cpu().workers(), cpu().written()));
}

void CpuQueue::launch(const KernelLaunch& launch) {
  push(std::make_unique<KernelOp>(launch, cpu().workers(), device().label(), cpu().pool().stack_bytes,
                                  device().info().max_shared_bytes_per_block, cpu().written(), checking()));
}

void CpuQueue::enqueue_host_task(std::function<void()> task) { push(std::make_unique<HostTaskOp>(std::move(task))); }

void CpuQueue::synchronize() {
  std::unique_lock lock(cpu().pool().mutex, std::defer_lock);
  lock_soon(lock);
  wait_until(lock, next_seq_ - 1, true);
}

std::shared_ptr<EventImpl> CpuQueue::record_event() {
  auto event = std::make_shared<CpuEvent>(std::static_pointer_cast<CpuQueue>(shared_from_this()), cpu().pool_ptr());
  push(std::make_unique<MarkerOp>(event));
  return event;
}

void CpuQueue::wait_for(const std::shared_ptr<EventImpl>& event) {
  if (event->device().info().api != Api::cpu) {
    // An event of another backend (a GPU's): one worker waits for it on the host, holding this
    // stream back, and lets go of the event as soon as it has completed (so that this queue's ops
    // never hold a GPU event once done). A failure the GPU reports at that wait fails this op.
    return enqueue_host_task([awaited = event]() mutable {
      const std::shared_ptr<EventImpl> held = std::move(awaited);
      held->synchronize();
    });
  }
  push(std::make_unique<WaitOp>(std::static_pointer_cast<CpuEvent>(event)));
}

void HostTaskOp::run_part(std::size_t) noexcept {
  QueuedFailure& f = failure_slot.front();
  try {
    task();
  } catch (const Error& e) {
    failed = true;
    f.failure.code = e.code();
    try {
      f.failure.message = e.what();
    } catch (...) {
    }
  } catch (const std::exception& e) {
    failed = true;
    f.failure.code = Errc::backend_error;
    try {
      f.failure.message = e.what();
    } catch (...) {
    }
  } catch (...) {
    failed = true;
    f.failure.code = Errc::backend_error;
  }
}

void HostTaskOp::finish(std::list<QueuedFailure>& failures) noexcept {
  if (!failed) return;
  failure_slot.front().seq = seq;
  failures.splice(failures.end(), failure_slot);
}

bool WaitOp::retire_unlocked() const noexcept { return &event->device() != &queue->device(); }

void Gate::open_now() noexcept {
  open = true;
  for (CpuQueue* q : waiters) q->gate_opened();
  waiters.clear();
}

// ---- CpuEvent -----------------------------------------------------------------------------------

void CpuEvent::synchronize() {
  std::unique_lock lock(pool->mutex);
  queue->wait_until(lock, seq, true);
}

bool CpuEvent::query() {
  const std::lock_guard lock(pool->mutex);
  return queue->reached(seq);
}

QueueImpl& CpuEvent::recorded_on() const { return *queue; }

double CpuEvent::elapsed_ms_since(EventImpl& start) {
  auto& s = static_cast<CpuEvent&>(start);
  s.synchronize_quietly();
  synchronize_quietly();
  return std::chrono::duration<double, std::milli>(when - s.when).count();
}

void CpuEvent::synchronize_quietly() {
  std::unique_lock lock(pool->mutex);
  queue->wait_until(lock, seq, false);
}

}  // namespace devctx::detail::cpu
