// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nvtx_ranges.hpp - profiler names: while DEVCTX_NVTX is on, the CUDA backend
// registers an NVTX tool with the operation pipeline (core/subscribers.hpp) when the first
// context is created, and each queue operation then runs inside an NVTX range of the "devctx"
// domain named in devctx's words (text_of: "copy HtoD 4.0 MiB (4194304 bytes)", a kernel's
// source name, "synchronize", "free 4.0 MiB ..."), on every device's queues, so that Nsight
// Systems shows them over the runtime calls and kernels. Off (the default), no tool is registered
// and the pipeline never builds a name. NVTX3 is header-only (the CUDA toolkit's nvtx3/); with
// no profiler attached, its calls return at once. Private to src/backends/cuda/
// (tests/nvtx/nvtx_ranges_test.cpp drives it through a test injection library).
#pragma once

#include <string>
#include <utility>

namespace devctx::detail::cuda {

/// DEVCTX_NVTX, read once (a flag, default off). Throws Error(invalid_argument) for a bad value,
/// at every call: start_cuda_tools() calls it when a context is created, so that the error is
/// that creation's.
[[nodiscard]] bool nvtx_enabled();

/// Pushes a range named `text` on the "devctx" domain; returns whether it was pushed.
bool nvtx_push(const std::string& text) noexcept;
/// Pops the innermost range nvtx_push pushed on this thread.
void nvtx_pop() noexcept;

/// A range around a scope, named by `name()` (called only while NVTX is on); for devctx's own
/// code outside the pipeline (the cost benchmark, bench/internal/nvtx_cost.cpp).
class NvtxRange {
 public:
  template <class Name>
  explicit NvtxRange(Name&& name) noexcept {
    if (nvtx_on()) [[unlikely]]
      active_ = push(std::forward<Name>(name));
  }
  ~NvtxRange() {
    if (active_) nvtx_pop();
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  [[nodiscard]] static bool nvtx_on() noexcept;
  template <class Name>
  static bool push(Name&& name) noexcept {
    try {
      return nvtx_push(name());
    } catch (...) {
      return false;  // no memory for the name: no range
    }
  }
  bool active_ = false;
};

}  // namespace devctx::detail::cuda
