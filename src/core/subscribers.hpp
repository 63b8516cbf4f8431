// SPDX-License-Identifier: Apache-2.0
// src/core/subscribers.hpp - who sees the operations of the pipeline (core/submit.hpp) besides
// the backend: the trace recorder (core/trace/) while devctx::trace records, checking mode's
// host watch (core/host_access.hpp) on a checked queue, and the tools backends register for
// the whole process (the CUDA backend's NVTX ranges under DEVCTX_NVTX). One word of flags says
// whether a process-wide subscriber is on, so that `submit` tests it and the queue's own
// checking flag, and nothing else, while none is (the trace-off hot path).
#pragma once

#include <atomic>

#include "core/operation.hpp"

namespace devctx::detail {

class QueueImpl;

/// The process-wide subscribers on now: bits of kTraceRecords and kToolsRegistered.
extern std::atomic<unsigned> pipeline_observers;
inline constexpr unsigned kTraceRecords = 1;     // devctx::trace records (trace::on())
inline constexpr unsigned kToolsRegistered = 2;  // a tool was registered (add_tool)

[[nodiscard]] inline bool pipeline_observed() noexcept {
  return pipeline_observers.load(std::memory_order_relaxed) != 0;
}

/// A tool of the process: sees each operation of every queue just before its backend call and
/// just after it (also when the call throws), on the enqueueing thread. Neither call may throw.
class OperationTool {
 public:
  /// Returns whether end() is to be called for this operation.
  virtual bool begin(const QueueImpl& queue, const Operation& op) noexcept = 0;
  virtual void end(const QueueImpl& queue, const Operation& op) noexcept = 0;

 protected:
  ~OperationTool() = default;
};

/// Registers `tool` for the rest of the process (tools live as long as the process; registering
/// one twice does nothing). Thread-safe. At most 8 tools; a ninth is refused with
/// Error(backend_error).
void add_tool(OperationTool& tool);

/// Each registered tool's begin() at construction, and end() at destruction for those whose
/// begin() said so. Built by submit only while pipeline_observed() says tools are registered.
class ToolScope {
 public:
  ToolScope(const QueueImpl& queue, const Operation& op) noexcept;
  ~ToolScope();
  ToolScope(const ToolScope&) = delete;
  ToolScope& operator=(const ToolScope&) = delete;

 private:
  const QueueImpl& queue_;
  const Operation& op_;
  unsigned began_ = 0;  // bit i: tool i's end() is due
};

}  // namespace devctx::detail
