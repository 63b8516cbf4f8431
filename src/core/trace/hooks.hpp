// SPDX-License-Identifier: Apache-2.0
// src/core/trace/hooks.hpp - the trace recorder as a subscriber of the operation pipeline:
// `submit` (core/submit.hpp) opens an OpScope around an operation while recording is on (host
// enqueue time, and for device work two events of the queue around it). Host waits that are no
// queue operation (a context's synchronize, Event::synchronize) use `traced(queue, describe,
// run)`, where `describe` returns the operation (op::Synchronize) and is called only while
// recording or while a tool is registered (core/subscribers.hpp), which see it too. While
// neither is, either costs one relaxed load and one predictable branch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <devctx/detail/base/seam.hpp>
#include <devctx/trace.hpp>

#include "core/operation.hpp"
#include "core/subscribers.hpp"

namespace devctx::detail {
class QueueImpl;
}

namespace devctx::detail::trace {

using devctx::trace::Kind;

/// On while devctx::trace records (a bit of the pipeline's flag word, core/subscribers.hpp;
/// recorder.cpp sets and clears it).
[[nodiscard]] inline bool on() noexcept {
  return (pipeline_observers.load(std::memory_order_relaxed) & kTraceRecords) != 0;
}

/// One operation being recorded: the host's begin time and, for device work, an event of the
/// queue before it; done() takes the end time and event and keeps the record. Never throws:
/// a record that cannot be kept (out of memory, a failed event) is dropped or kept without
/// device time.
class OpScope {
 public:
  OpScope(QueueImpl& queue, const detail::Operation& op) noexcept;
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
  void done() noexcept;

 private:
  struct Pending;
  Pending* pending_ = nullptr;
};

template <class Describe, class Enqueue>
decltype(auto) traced(QueueImpl& queue, Describe&& describe, Enqueue&& enqueue) {
  if (!pipeline_observed()) [[likely]]
    return enqueue();
  const detail::Operation what(describe());
  std::optional<OpScope> scope;
  if (on()) scope.emplace(queue, what);
  std::optional<ToolScope> tools;  // the process's tools see host waits too (an NVTX range)
  if ((pipeline_observers.load(std::memory_order_relaxed) & kToolsRegistered) != 0) tools.emplace(queue, what);
  if constexpr (std::is_void_v<decltype(enqueue())>) {
    enqueue();
    tools.reset();
    if (scope) scope->done();
  } else {
    auto result = enqueue();
    tools.reset();
    if (scope) scope->done();
    return result;
  }
}

/// How a backend ran a kernel (Operation::execution), written by the backend once the kernel has
/// finished and read by the recorder once its device times are read.
struct ExecutionNote {
  std::mutex mutex;
  std::string text;
};
/// Called by a backend inside a kernel's enqueue: the note of the launch being recorded, or null
/// while recording is off (or the record could not be kept).
[[nodiscard]] std::shared_ptr<ExecutionNote> kernel_note() noexcept;

/// Called by a backend inside a copy's enqueue when the copy goes through a staging engine
/// (pinned chunks) rather than one direct transfer; the copy's record says so.
void note_staged_copy() noexcept;

/// Called once per context, after its device is open: reads DEVCTX_TRACE_FILE and DEVCTX_REPORT
/// the first time, starts recording when either is set (records are then streamed to the file
/// and counted in a running report as their device times are read, and dropped), and arranges
/// the file's end and the report at exit. Throws Error(invalid_argument) for a bad
/// DEVCTX_REPORT value and for a DEVCTX_TRACE_FILE that cannot be opened for writing (naming
/// it and why); the next context tries again.
void start_from_environment();

/// The report of every operation recorded on the device labelled `*device` (every device when
/// null): those consumed already (DEVCTX_TRACE_FILE, DEVCTX_REPORT) and those still held.
/// Empty when nothing at all is recorded.
[[nodiscard]] std::optional<devctx::trace::Report> report_of(const std::string* device);

}  // namespace devctx::detail::trace
