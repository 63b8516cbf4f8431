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

/// One recorded operation, replayed through the same checked entry points as when it was recorded.
struct RecordedOp {
  enum class Kind : unsigned char { copy, fill, launch };
  Kind kind = Kind::copy;
  MemRef dst;
  MemRef src;                    ///< copies
  std::size_t element_bytes = 0;
  std::vector<std::byte> value;  ///< fills: one element
  std::unique_ptr<RecordedLaunch> launch;
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

/// What a recording queue records; the checked entry points (enqueue.cpp) hand it their work
/// once it has passed their checks, instead of running it.
class GraphRecorder {
 public:
  virtual ~GraphRecorder() = default;
  virtual void record_copy(const MemRef& dst, const MemRef& src, std::size_t element_bytes) = 0;
  virtual void record_fill(const MemRef& dst, const void* value, std::size_t element_bytes) = 0;
  virtual void record_launch(const KernelLaunch& launch) = 0;
};

/// Throws Error(invalid_argument) when this thread is inside Graph::record's function recording
/// from `queue`: work enqueued on the recorded-from stream instead of the recording one would run
/// at once and be missing from the graph. `kernel` names the launch, if one.
void refuse_if_recorded_from(const QueueImpl& queue, const char* operation, std::string_view kernel = {});

}  // namespace devctx::detail
