// src/backends/cpu/cpu_queue.cpp - a CPU stream's ordering, failures, waiters and events.
#include "backends/cpu/cpu_queue.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/cpu_device.hpp"
#include "core/errors.hpp"

namespace devctx::detail::cpu {

CpuQueue::CpuQueue(std::shared_ptr<CpuDevice> device) : QueueImpl(*device), device_(std::move(device)) {}

std::uint64_t CpuQueue::push(std::unique_ptr<Op> op) {
  std::vector<std::shared_ptr<CpuQueue>> keep;
  std::uint64_t seq;
  {
    const std::lock_guard lock(cpu().pool().mutex);
    op->seq = seq = next_seq_++;
    op->queue = this;
    op->enqueued();
    if (ops_.empty()) self_while_busy_ = std::static_pointer_cast<CpuQueue>(shared_from_this());
    ops_.push_back(std::move(op));
    pump(keep);
  }
  return seq;
}

void CpuQueue::pump(std::vector<std::shared_ptr<CpuQueue>>& keep) {
  while (!ops_.empty() && !head_dispatched_) {
    Op* op = ops_.front().get();
    if (const CpuEvent* event = op->awaited(); event != nullptr && !event->queue->reached(event->seq)) {
      event->queue->waiters_.emplace_back(event->seq, std::static_pointer_cast<CpuQueue>(shared_from_this()));
      return;
    }
    head_dispatched_ = true;
    if (op->parts == 0) {
      complete(op, keep);
      continue;
    }
    cpu().dispatch(op);
  }
}

void CpuQueue::complete(Op* op, std::vector<std::shared_ptr<CpuQueue>>& keep) {
  if (std::optional<BlockFailure> failure = op->finish()) failures_.push_back({op->seq, std::move(*failure)});
  completed_ = op->seq;
  ops_.pop_front();
  head_dispatched_ = false;
  done.notify_all();
  std::vector<std::shared_ptr<CpuQueue>> ready;
  std::erase_if(waiters_, [&](auto& w) {
    if (w.first > completed_) return false;
    if (auto q = w.second.lock()) ready.push_back(std::move(q));
    return true;
  });
  for (auto& q : ready) {
    q->pump(keep);
    keep.push_back(std::move(q));
  }
  pump(keep);
  if (ops_.empty() && self_while_busy_) keep.push_back(std::move(self_while_busy_));
}

void CpuQueue::wait_until(std::unique_lock<std::mutex>& lock, std::uint64_t seq, bool report) {
  // Kernel code waiting for device work would wait for its own launch forever (and on a GPU it
  // could not call the host API at all).
  if (tls.mode != Mode::none)
    fail(Errc::invalid_argument, "synchronize (or an event or pageable-copy wait) was called from inside a kernel "
                                 "on ", device().label(), "; kernels cannot wait for device work: wait on the host");
  while (completed_ < seq) {
    if (!cpu().help(lock, this)) done.wait(lock);
  }
  if (!report) return;
  auto first = std::find_if(failures_.begin(), failures_.end(), [&](const QueuedFailure& f) { return f.seq <= seq; });
  if (first == failures_.end()) return;
  const BlockFailure failure = first->failure;
  const auto more = std::count_if(failures_.begin(), failures_.end(), [&](const QueuedFailure& f) { return f.seq <= seq; }) - 1;
  std::erase_if(failures_, [&](const QueuedFailure& f) { return f.seq <= seq; });
  throw Error(failure.code, more > 0 ? concat(failure.message, " (and ", more, " later failure(s) on this stream)") : failure.message);
}

// ---- the QueueImpl interface --------------------------------------------------------------------

void* CpuQueue::allocate(std::size_t bytes, MemKind kind) {
  const std::size_t align = bytes >= (std::size_t{1} << 20) ? 4096 : 64;
  const std::size_t rounded = std::max<std::size_t>((bytes + align - 1) / align * align, align);
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr)
    fail(Errc::out_of_memory, kind == MemKind::device ? "enqueue_create_buffer" : "enqueue_create_host_buffer", " on ",
         device().label(), ": cannot allocate ", bytes_text(bytes), "; the machine has ",
         bytes_text(device().info().total_memory_bytes), " of memory");
  if (checking() && kind == MemKind::device) {
    // Checking mode tells a written element from one only read by its change of value, and
    // reports reads of bytes nothing wrote (docs/checking.md).
    std::memset(p, check::kPoisonByte, bytes);
    try {
      cpu().written().add(p, bytes);
    } catch (...) {
      std::free(p);
      throw;
    }
  }
  return p;
}

void CpuQueue::free(void* data, std::size_t, MemKind) noexcept {
  try {
    push(std::make_unique<FreeOp>(data, cpu().written()));
  } catch (...) {
    // Out of memory while queueing the free: leaking is the only safe choice.
  }
}

void CpuQueue::copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) {
  const std::uint64_t seq = push(std::make_unique<CopyOp>(dst, src, bytes, cpu().workers(), cpu().written()));
  if (dst_kind == MemKind::host_pageable || src_kind == MemKind::host_pageable) {
    std::unique_lock lock(cpu().pool().mutex);
    wait_until(lock, seq, false);
  }
}

void CpuQueue::fill(void* dst, MemKind, std::size_t count, const void* value, std::size_t element_bytes) {
  push(std::make_unique<FillOp>(dst, count, value, element_bytes, cpu().workers(), cpu().written()));
}

void CpuQueue::launch(const KernelLaunch& launch) {
  push(std::make_unique<KernelOp>(launch, cpu().workers(), device().label(), cpu().written(), checking()));
}

void CpuQueue::synchronize() {
  std::unique_lock lock(cpu().pool().mutex);
  wait_until(lock, next_seq_ - 1, true);
}

std::shared_ptr<EventImpl> CpuQueue::record_event() {
  auto event = std::make_shared<CpuEvent>(std::static_pointer_cast<CpuQueue>(shared_from_this()), cpu().pool_ptr());
  push(std::make_unique<MarkerOp>(event));
  return event;
}

void CpuQueue::wait_for(const std::shared_ptr<EventImpl>& event) {
  push(std::make_unique<WaitOp>(std::static_pointer_cast<CpuEvent>(event)));
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
