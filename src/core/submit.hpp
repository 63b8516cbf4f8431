// SPDX-License-Identifier: Apache-2.0
// src/core/submit.hpp - the one pipeline every validated operation (core/operation.hpp) takes:
// `submit(queue, op)` hands it to a recording queue (a graph keeps it), or notes the buffers it
// uses (so that their frees wait for it), lets the subscribers see it before and after (the
// trace recorder, checking mode's host watch) and calls the backend's typed virtual.
//
// The subscribers (core/subscribers.hpp) sit behind one test: while no trace records, no tool
// is registered and the queue is not checked, an operation costs what the backend's virtual
// costs plus one relaxed load and two predictable branches (the trace-off hot path;
// bench/results/hot-paths.md measures it).
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/allocation.hpp"
#include "core/backend.hpp"
#include "core/host_access.hpp"
#include "core/operation.hpp"
#include "core/subscribers.hpp"
#include "core/trace/hooks.hpp"

namespace devctx::detail {

// ---- the backend's typed virtual of each operation ------------------------------------------
inline void* execute(QueueImpl& q, const op::Allocate& o) { return q.allocate(o.bytes, o.kind); }
inline void execute(QueueImpl& q, const op::Free& o) noexcept { q.free(o.data, o.bytes, o.kind); }
inline void execute(QueueImpl& q, const op::Copy& o) {
  q.copy(o.dst.data, o.dst_kind, o.src.data, o.src_kind, o.bytes);
}
inline void execute(QueueImpl& q, const op::PeerCopy& o) {
  q.copy_peer(o.dst.data, *o.dst_device, o.src.data, *o.src_device, o.bytes);
}
inline void execute(QueueImpl& q, const op::Fill& o) {
  q.fill(o.dst.data, o.kind, o.dst.count, o.value, o.element_bytes);
}
inline void execute(QueueImpl& q, const op::Launch& o) { q.launch(*o.launch); }
inline std::shared_ptr<EventImpl> execute(QueueImpl& q, const op::RecordEvent&) { return q.record_event(); }
inline void execute(QueueImpl& q, const op::Wait& o) { q.wait_for(*o.event); }
inline void execute(QueueImpl& q, const op::HostTask& o) { q.enqueue_host_task(o.task); }
/// A checked queue's synchronize also tells its watch what the host has now waited for.
inline void execute(QueueImpl& q, const op::Synchronize&) {
  if (q.checking()) [[unlikely]]
    synchronize_observed(q);
  else
    q.synchronize();
}

// ---- the buffers an operation uses (their frees are ordered after it) -------------------------
inline void note_use(QueueImpl& q, Allocation* a) {
  if (a != nullptr) a->note_use(q);  // a no-op where the free cannot be ordered after it
}
inline void note_uses(QueueImpl& q, const op::Copy& o) {
  note_use(q, o.dst.allocation);
  note_use(q, o.src.allocation);
}
inline void note_uses(QueueImpl& q, const op::PeerCopy& o) {
  note_use(q, o.dst.allocation);
  note_use(q, o.src.allocation);
}
inline void note_uses(QueueImpl& q, const op::Fill& o) { note_use(q, o.dst.allocation); }
inline void note_uses(QueueImpl& q, const op::Launch& o) {
  for (std::size_t i = 0; i < o.launch->buffer_count; ++i) note_use(q, o.launch->buffers[i]);
}
/// Every other operation uses no buffer.
template <class Op>
void note_uses(QueueImpl&, const Op&) noexcept {}

/// Copies and fills of no bytes are kept by a graph and order frees, but reach no backend.
template <class Op>
[[nodiscard]] bool moves_nothing(const Op& o) noexcept {
  if constexpr (std::is_same_v<Op, op::Copy> || std::is_same_v<Op, op::PeerCopy> || std::is_same_v<Op, op::Fill>)
    return o.bytes == 0;
  (void)o;
  return false;
}

/// The subscribers' path (trace recording, tools, or a checked queue): each sees the operation
/// before the backend queues it and after. Checking mode takes its room first, so that nothing
/// can fail once the operation is queued; the tools' scope is the innermost, around the
/// backend's call alone.
template <class Op>
auto submit_observed(QueueImpl& queue, const Op& o) -> decltype(execute(queue, o)) {
  const Operation what(o);
  CheckingScope checking(queue, what);
  std::optional<trace::OpScope> scope;
  std::optional<ToolScope> tools;
  if (trace::on()) scope.emplace(queue, what);
  if ((pipeline_observers.load(std::memory_order_relaxed) & kToolsRegistered) != 0) tools.emplace(queue, what);
  if constexpr (std::is_void_v<decltype(execute(queue, o))>) {
    execute(queue, o);
    tools.reset();
    if (scope) scope->done();
    checking.done(nullptr);
  } else {
    auto result = execute(queue, o);
    tools.reset();
    if (scope) scope->done();
    if constexpr (std::is_same_v<decltype(result), std::shared_ptr<EventImpl>>)
      checking.done(&result);
    else
      checking.done(nullptr);
    return result;
  }
}

/// Submits a validated operation on `queue`; returns what the backend's virtual returns (the
/// memory of an op::Allocate, the event of an op::RecordEvent). Throws what the backend throws,
/// or, on a recording queue, Error(invalid_argument) for what a graph cannot hold.
template <class Op>
auto submit(QueueImpl& queue, const Op& o) -> decltype(execute(queue, o)) {
  if (GraphRecorder* recorder = queue.recorder()) [[unlikely]] {
    recorder->record(Operation(o));
    // record() refuses every operation that gives a value (allocations, events).
    if constexpr (!std::is_void_v<decltype(execute(queue, o))>)
      std::terminate();
    else
      return;
  }
  note_uses(queue, o);
  if (moves_nothing(o)) {
    if constexpr (std::is_void_v<decltype(execute(queue, o))>) return;
  }
  if (!pipeline_observed() && !queue.checking()) [[likely]]
    return execute(queue, o);
  return submit_observed(queue, o);
}

/// Submits a stored operation (a graph's replay).
inline void submit(QueueImpl& queue, const Operation& op) {
  std::visit([&queue](const auto& o) { (void)submit(queue, o); }, op);
}

}  // namespace devctx::detail
