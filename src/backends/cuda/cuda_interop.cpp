// SPDX-License-Identifier: Apache-2.0
// The CUDA backend's side of interop (include/devctx/interop.hpp): queues on CUDA streams made
// elsewhere, checked to belong to the device, and the check that a pointer given to devctx as
// device memory is memory of this device, whole, and not host memory.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_queue.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail::cuda {
namespace {

/// The driver's cuPointerGetAttribute, found through the runtime (devctx links only the
/// runtime, so that programs start on machines without a driver); null when unavailable.
PFN_cuPointerGetAttribute_v4000 pointer_attribute_function() noexcept {
  static const PFN_cuPointerGetAttribute_v4000 function = [] {
    void* found = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (!succeeded(cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &found, 4000, cudaEnableDefault, &status)) ||
        status != cudaDriverEntryPointSuccess)
      return PFN_cuPointerGetAttribute_v4000{nullptr};
    return reinterpret_cast<PFN_cuPointerGetAttribute_v4000>(found);
  }();
  return function;
}

}  // namespace

std::shared_ptr<QueueImpl> CudaDevice::wrap_native_queue(void* native) {
  auto* stream = static_cast<cudaStream_t>(native);
  if (stream == nullptr)
    fail(Errc::invalid_argument, "wrap_cuda_stream on ", label(),
         ": the stream is null (0); which stream that means depends on how the caller was compiled "
         "(--default-stream), so pass cudaStreamLegacy or cudaStreamPerThread explicitly");
  check_alive("wrap_cuda_stream");
  make_current();
  // The special handles name the current device's default streams; made current above.
  if (stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
    int device = -1;
    check(DEVCTX_CUDA(cudaStreamGetDevice(stream, &device)), *this, "wrap_cuda_stream");
    if (device != id())
      fail(Errc::wrong_device, "wrap_cuda_stream on ", label(), ": the stream belongs to CUDA device ", device,
           "; wrap it with a context on that device (DeviceContext{devctx::Api::cuda, ", device, "})");
  }
  return make_borrowed_queue(std::static_pointer_cast<CudaDevice>(shared_from_this()), stream);
}

void CudaDevice::check_device_memory(const void* data, std::size_t bytes, std::string_view operation) const {
  auto where = [&] { return concat(operation, " on ", label(), ": the pointer ", data, ' '); };
  check_alive(operation);
  cudaPointerAttributes a{};
  if (!succeeded(cudaPointerGetAttributes(&a, data)))
    fail(Errc::invalid_argument, where(), "is not memory CUDA knows (cudaPointerGetAttributes refused it)");
  switch (a.type) {
    case cudaMemoryTypeUnregistered:
      fail(Errc::invalid_argument, where(),
           "is ordinary host memory (or no allocation at all), not device memory: kernels cannot read it; "
           "copy the data to a DeviceBuffer with enqueue_copy from a std::span over it");
    case cudaMemoryTypeHost:
      fail(Errc::invalid_argument, where(),
           "is page-locked host memory (cudaMallocHost, cudaHostAlloc or cudaHostRegister), not device memory; "
           "copy the data to a DeviceBuffer with enqueue_copy");
    case cudaMemoryTypeDevice:
      if (a.device != id())
        fail(Errc::wrong_device, where(), "is memory of CUDA device ", a.device,
             "; use it with a context on that device, or copy it through host memory");
      break;
    case cudaMemoryTypeManaged: break;  // reachable from every device
  }
  // The whole range must lie in the one allocation the pointer falls in.
  if (const auto get = pointer_attribute_function()) {
    CUdeviceptr start = 0;
    std::size_t size = 0;
    const auto address = CUdeviceptr(reinterpret_cast<std::uintptr_t>(data));
    if (get(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address) == CUDA_SUCCESS &&
        get(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, address) == CUDA_SUCCESS && address - start <= size &&
        bytes > size - (address - start))
      fail(Errc::invalid_argument, where(), "starts ", address - start, " bytes into an allocation of ",
           bytes_text(size), ", so ", bytes_text(bytes), " from there run past its end: the count is too large");
  }
}

}  // namespace devctx::detail::cuda
