// SPDX-License-Identifier: Apache-2.0
// The devctx rows of the CPU kernel benchmark: the same three kernels written against devctx's
// public API, run on a DeviceContext (the CPU backend unless DEVCTX_DEVICE says otherwise).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace bench {

/// Which form the barrier kernels (K2, K3) are written in. K1 is the contract's vector add in
/// both rows.
enum class DevctxForm {
  cuda_style,   ///< thread-level kernels with DEVCTX_SHARED and devctx::barrier()
  block_level,  ///< devctx::Block kernels with for_each_thread phases
  hand_twin,    ///< the cuda_style kernels with block-level twins written by hand (hand_twins.hpp)
};

class DevctxRunner {
 public:
  /// `checked`: the context runs in checking mode (docs/checking.md; devctx_bench_checking).
  static std::unique_ptr<DevctxRunner> create(DevctxForm form, bool checked = false);
  virtual ~DevctxRunner() = default;
  [[nodiscard]] virtual std::string device_name() const = 0;
  virtual void upload_k1(const float* a, const float* b, std::size_t n) = 0;
  virtual void run_k1() = 0;
  virtual void download_k1(float* out) = 0;
  virtual void upload_k2(const float* in, std::size_t n) = 0;
  virtual void run_k2() = 0;
  virtual void download_k2(float* block_sums) = 0;
  virtual void upload_k3(const float* a, const float* b, unsigned n) = 0;
  virtual void run_k3() = 0;
  virtual void download_k3(float* c) = 0;
};

}  // namespace bench
