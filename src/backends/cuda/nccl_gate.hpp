// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nccl_gate.hpp - keeps a rank's collective in its stream's order when the
// collective is launched later than it was called (a group of several GPUs driven by one thread,
// nccl_comm.cpp). At the call: an event marks the work before it on the rank's stream, and the
// stream waits (cuStreamWaitValue64) for a ticket number in a flag word of device memory. At the
// launch: the rank's side stream waits for the event, NCCL's part runs there, and the side stream
// writes the ticket (cuStreamWriteValue64), which lets the rank's stream go on. Work the user
// enqueues on the stream between the call and the launch thus stays behind the collective.
// Private to src/backends/cuda/.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace devctx::detail::cuda {

class CudaDevice;

class RankGate {
 public:
  /// The side stream, the flag word and the driver's stream-memory functions, on `gpu`.
  explicit RankGate(CudaDevice& gpu);
  ~RankGate();
  RankGate(const RankGate&) = delete;
  RankGate& operator=(const RankGate&) = delete;

  /// One call's place in its stream: `ready` completes when the work before the call has.
  struct Ticket {
    cudaEvent_t ready = nullptr;
    std::uint64_t value = 0;
  };
  /// Marks the work enqueued on `user` so far (the event of a new ticket).
  [[nodiscard]] Ticket mark(cudaStream_t user);
  /// Makes `user` wait until `ticket` is released (enqueued after the call's other checks).
  void hold(cudaStream_t user, const Ticket& ticket);
  /// The side stream, made to wait for `ticket`'s event first: NCCL's part goes on it next.
  [[nodiscard]] cudaStream_t start(const Ticket& ticket);
  /// Lets the stream held at `ticket` (and every earlier one) go on once the side stream's work
  /// so far has completed. Best effort: reports nothing (a failure surfaces at synchronize).
  void release(const Ticket& ticket) noexcept;
  /// Gives back the event of a ticket that was never held (a refused call).
  void drop(const Ticket& ticket) noexcept;
  /// Waits for the side stream (communicator teardown).
  void drain() noexcept;

 private:
  CudaDevice& gpu_;
  cudaStream_t side_ = nullptr;
  void* flag_ = nullptr;  ///< 8 bytes of device memory: the last ticket released
  std::uint64_t next_ = 0;
  std::vector<cudaEvent_t> events_;  ///< free events for tickets
};

}  // namespace devctx::detail::cuda
