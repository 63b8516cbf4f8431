// SPDX-License-Identifier: Apache-2.0
// src/core/graph.hpp - recorded work (devctx::Graph): the operations a recording queue keeps,
// and the interface a backend implements to replay them natively (a CUDA graph).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <devctx/detail/base/seam.hpp>

#include "core/operation.hpp"

namespace devctx::detail {

/// A kernel launch with everything it points at owned: the arguments, the name, the buffers and
/// span lists. `launch`'s pointers point into this object, which therefore never moves.
struct RecordedLaunch {
  explicit RecordedLaunch(const KernelLaunch& from);
  RecordedLaunch(const RecordedLaunch&) = delete;
  RecordedLaunch& operator=(const RecordedLaunch&) = delete;
  ~RecordedLaunch();

  KernelLaunch launch;
  std::string name;
  std::byte* args = nullptr;  ///< aligned to launch.args_align
  std::vector<void*> cuda_args;
  std::vector<Allocation*> buffers;
  std::vector<const void*> spans;
  std::vector<std::size_t> span_bytes;
};

/// One recorded operation: an op::Copy, op::Fill, op::Launch or op::HostTask, replayed by
/// submitting it again (core/submit.hpp). What its pointers point at is owned here: a fill's
/// element, a launch's arguments.
struct RecordedOp {
  Operation op;
  std::vector<std::byte> value;            ///< fills: one element (op's value points here)
  std::unique_ptr<RecordedLaunch> launch;  ///< launches (op's launch points at launch->launch)
};

/// A backend's own form of a graph (a CUDA graph).
class NativeGraph {
 public:
  virtual ~NativeGraph() = default;
  /// One replay on `queue` (of the graph's device).
  virtual void launch(QueueImpl& queue) = 0;
  /// Operation `op` (a launch) now launches `launch`, for later replays.
  virtual void update_kernel(std::size_t op, const KernelLaunch& launch) = 0;
};

/// What a recording queue records: `submit` (core/submit.hpp) hands it every operation that
/// passed validation, instead of running it.
class GraphRecorder {
 public:
  virtual ~GraphRecorder() = default;
  /// Keeps `op`; throws Error(invalid_argument) for what a graph cannot hold (allocations,
  /// events, waits, synchronize, memory read at the call), naming it.
  virtual void record(const Operation& op) = 0;
};

/// Throws Error(invalid_argument) when this thread is inside Graph::record's function recording
/// from `queue`: work enqueued on the recorded-from stream instead of the recording one would run
/// at once and be missing from the graph. `kernel` names the launch, if one.
void refuse_if_recorded_from(const QueueImpl& queue, const char* operation, std::string_view kernel = {});

}  // namespace devctx::detail
