// Built instead of src/backends/cuda when DEVCTX_ENABLE_CUDA is OFF.
#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

int cuda_device_count() noexcept { return 0; }

std::shared_ptr<DeviceImpl> open_cuda_device(int) {
  fail(Errc::not_available, "devctx was built without CUDA (configure with -DDEVCTX_ENABLE_CUDA=ON)");
}

}  // namespace devctx::detail
