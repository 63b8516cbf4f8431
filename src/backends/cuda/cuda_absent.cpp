// SPDX-License-Identifier: Apache-2.0
// The CUDA backend's entry points when devctx is built without CUDA (DEVCTX_ENABLE_CUDA=OFF):
// no CUDA devices, and the reason messages give for it. Built instead of the rest of this folder.
#include <memory>
#include <string>

#include "backends/cuda/cuda_backend.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

int cuda_device_count() noexcept { return 0; }

std::string cuda_absent_reason() {
  return "devctx was built without CUDA (configure with -DDEVCTX_ENABLE_CUDA=ON and nvcc on the PATH)";
}

std::shared_ptr<DeviceImpl> open_cuda_device(int) { fail(Errc::not_available, cuda_absent_reason()); }
void start_cuda_tools() {}

}  // namespace devctx::detail
