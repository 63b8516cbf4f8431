// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nvtx_ranges.hpp - profiler names on the GPU: while DEVCTX_NVTX is on, each
// CUDA queue operation runs inside an NVTX range of the "devctx" domain named in devctx's words
// ("copy HtoD 4.0 MiB", a kernel's source name, "synchronize", "free 4.0 MiB"), so that Nsight
// Systems shows them over the runtime calls and kernels. Off (the default), a range costs one branch and
// builds no name. NVTX3 is header-only (the CUDA toolkit's nvtx3/); with no profiler attached,
// its calls return at once. Private to src/backends/cuda/ (tests/nvtx/nvtx_ranges_test.cpp drives
// it directly through a test injection library).
#pragma once

#include <string>
#include <utility>

namespace devctx::detail::cuda {

/// DEVCTX_NVTX, read once (a flag, default off). Throws Error(invalid_argument) for a bad value;
/// called when a queue is created, so that the error comes from the context's creation.
[[nodiscard]] bool nvtx_enabled();

class NvtxRange {
 public:
  /// `name()` gives the range's name; called only while NVTX is on.
  template <class Name>
  explicit NvtxRange(Name&& name) noexcept {
    if (nvtx_on()) [[unlikely]] active_ = push(std::forward<Name>(name));
  }
  ~NvtxRange() {
    if (active_) pop();
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  [[nodiscard]] static bool nvtx_on() noexcept;
  template <class Name>
  static bool push(Name&& name) noexcept {
    try {
      return push_text(name());
    } catch (...) {
      return false;  // no memory for the name: no range
    }
  }
  static bool push_text(const std::string& text) noexcept;
  static void pop() noexcept;
  bool active_ = false;
};

}  // namespace devctx::detail::cuda
