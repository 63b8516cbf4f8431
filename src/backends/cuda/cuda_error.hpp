// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/cuda_error.hpp - the CUDA backend's error handling: which CUDA errors poison
// the context (sticky), how a failed call is named in messages, the one checked-call helper,
// and each device's context health. Private to src/backends/cuda/.
//
// Every CUDA call in the backend takes one of three forms:
//   check(DEVCTX_CUDA(cudaX(...)), reporter, operation);   a failure throws devctx::Error
//   const CudaCall call = DEVCTX_CUDA(cudaX(...));          a status with a meaning of its own
//   ... call.status ...; check(call, reporter, operation);  (not ready, out of memory) first
//   ignore(cudaX(...)) or succeeded(cudaX(...))             best effort: the failure cannot be
//                                                           reported, or it is an answer
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>

namespace devctx::detail::cuda {

class CudaDevice;

/// Errors after which the CUDA context is unusable: every later call in the process returns
/// them again (CUDA's "sticky" errors).
[[nodiscard]] bool is_sticky(cudaError_t status) noexcept;

/// "an illegal memory access was encountered (cudaErrorIllegalAddress)"
[[nodiscard]] std::string describe(cudaError_t status);

/// One CUDA call's status and where it was made; messages name it as
/// "cudaMemcpyAsync at cuda_queue.cpp:88".
struct CudaCall {
  cudaError_t status = cudaSuccess;
  const char* text = "";  ///< the call as written; messages keep its function's name
  const char* file = "";
  int line = 0;

  [[nodiscard]] bool ok() const noexcept { return status == cudaSuccess; }
};

/// Makes one CUDA call and records where it was made. The backend's one macro: only a macro
/// sees a call's text, file and line.
#define DEVCTX_CUDA(call) (::devctx::detail::cuda::CudaCall{(call), #call, __FILE__, __LINE__})

/// Best effort, for a call whose failure cannot be reported (destructors, frees): clears a
/// non-sticky error so that it does not surface later at an unrelated call. A sticky error
/// cannot be cleared; the next checked call reports it.
inline void ignore(cudaError_t status) noexcept {
  if (status != cudaSuccess && !is_sticky(status)) (void)cudaGetLastError();
}

/// For a call whose failure is an answer rather than an error (a query, an optional feature):
/// whether it succeeded. A failure is cleared as by ignore().
[[nodiscard]] inline bool succeeded(cudaError_t status) noexcept {
  if (status == cudaSuccess) [[likely]]
    return true;
  ignore(status);
  return false;
}

/// The state of one device's CUDA context, for the whole process: a context poisoned by a
/// device fault stays poisoned until the process ends, whichever DeviceContext saw it.
struct ContextHealth {
  std::atomic<bool> lost{false};
  std::mutex mutex;
  std::string cause;  ///< "an illegal memory access ... (cudaErrorIllegalAddress) in kernel 'k'"
};

/// The health of device `id`'s context.
[[nodiscard]] ContextHealth& context_health(int id);

/// Throws for a failed call on `device`: the message names the operation, the device and the
/// call; a sticky error marks the device's context lost (the first report is kernel_failed,
/// naming `kernels`, the kernels that may have failed; later ones are context_lost).
[[noreturn]] void raise(const CudaDevice& device, const CudaCall& call, std::string_view operation,
                        const std::string& kernels = {});

/// Throws Error(context_lost): an earlier fault poisoned `device`'s context.
[[noreturn]] void throw_lost(const CudaDevice& device, std::string_view operation);

/// The one checked-call helper: throws devctx::Error for a failed call, through raise().
/// `reporter` is the device (the call itself failed) or a queue (the failure surfaced while
/// waiting for the queue's work, so the message names the kernels enqueued since its last
/// successful synchronize). `operation` names the devctx operation: a string, or a callable that returns one,
/// called only on failure so that building a detailed text costs nothing on the fast path.
template <class Reporter, class Operation>
void check(const CudaCall& call, Reporter& reporter, const Operation& operation) {
  if (call.ok()) [[likely]]
    return;
  if constexpr (std::is_invocable_v<const Operation&>)
    raise(reporter, call, operation());
  else
    raise(reporter, call, std::string_view(operation));
}

}  // namespace devctx::detail::cuda
