// SPDX-License-Identifier: Apache-2.0
// src/core/operation.hpp - the one record of an operation on a queue. Validation (enqueue.cpp,
// allocation.cpp) builds one of these structs; `submit` (submit.hpp) hands that same value to a
// recording queue (a graph keeps a list of them and replays it by submitting each again), to
// the subscribers (core/subscribers.hpp: the trace recorder, checking mode's host watch, the
// NVTX tool) and to the backend's typed virtual; `name_of` names it for traces, NVTX, messages
// and the tools.
//
// Adding an operation kind: one struct here, added to `Operation`, then the cases the compiler
// asks for (docs/internals.md, "A new operation", lists them).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <variant>

#include <devctx/detail/base/seam.hpp>
#include <devctx/trace.hpp>

namespace devctx::detail {

class DeviceImpl;
class EventImpl;

namespace op {

/// Stream-ordered allocation of `bytes` (checked and bounded by core) of memory `kind`.
struct Allocate {
  std::size_t bytes = 0;
  MemKind kind = MemKind::device;
};
/// Stream-ordered release of memory Allocate gave.
struct Free {
  void* data = nullptr;
  std::size_t bytes = 0;
  MemKind kind = MemKind::device;
};
/// `bytes` from src to dst on the queue's device; `dst_kind` / `src_kind` are the kinds as this
/// device sees them (a HostBuffer of another device is pageable memory here).
struct Copy {
  MemRef dst;
  MemRef src;
  std::size_t bytes = 0;
  MemKind dst_kind = MemKind::device;
  MemKind src_kind = MemKind::device;
};
/// `bytes` between device memory of two devices of one backend (one of them the queue's).
struct PeerCopy {
  MemRef dst;
  MemRef src;
  std::size_t bytes = 0;
  DeviceImpl* dst_device = nullptr;
  DeviceImpl* src_device = nullptr;
};
/// dst.count elements of `element_bytes` each set to the pattern at `value`.
struct Fill {
  MemRef dst;
  MemKind kind = MemKind::device;
  const void* value = nullptr;
  std::size_t element_bytes = 0;
  std::size_t bytes = 0;
};
/// A kernel launch, checked against the device's limits.
struct Launch {
  const KernelLaunch* launch = nullptr;
};
/// An event at the current end of the queue's work.
struct RecordEvent {};
/// The queue's later work waits for `event` (of a device the queue's device can wait for).
struct Wait {
  const std::shared_ptr<EventImpl>* event = nullptr;
};
/// A host function in stream order; an Error it throws is the operation's failure, reported by
/// the queue's synchronize as a kernel's is.
struct HostTask {
  std::function<void()> task;
};
/// The host waits for the queue's work. `name` says what waited when not the queue's own
/// synchronize ("Event::synchronize", "elapsed_ms", "synchronize_device"): a literal, for traces.
struct Synchronize {
  const char* name = nullptr;
};

}  // namespace op

using Operation = std::variant<op::Allocate, op::Free, op::Copy, op::PeerCopy, op::Fill, op::Launch, op::RecordEvent,
                               op::Wait, op::HostTask, op::Synchronize>;

/// The operation's name as traces (the event's name), NVTX ranges and messages give it:
/// "create_buffer", "copy HtoD", "memset", the kernel's source name, "wait_for", "host_task", ...
[[nodiscard]] std::string name_of(const Operation& op);
/// name_of(op) with the operation's size, as an NVTX range names it: "copy HtoD pageable 4.0 MiB
/// (4194304 bytes)", "create_buffer 16.0 KiB (16384 bytes)", "free ...", "memset ..."; the name
/// alone for operations that move no bytes.
[[nodiscard]] std::string text_of(const Operation& op);
/// The kind a trace records it as (devctx::trace::Kind; its spelling is trace::to_string's).
[[nodiscard]] devctx::trace::Kind kind_of(const Operation& op) noexcept;
/// Which way a copy moves its bytes (Direction::none for every other operation).
[[nodiscard]] devctx::trace::Direction direction_of(const Operation& op) noexcept;

}  // namespace devctx::detail
