// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/host_pinning.cpp - the CUDA side of registered host memory
// (DeviceContext::register_host_memory; core checked the range and reserved it): page-locking
// it with cudaHostRegister, with a message that says what the memory was when CUDA refuses, and
// unlocking it with cudaHostUnregister; and telling ordinary host memory, which the staging
// engine moves, from memory that only looks like it to devctx (a std::span over page-locked,
// device or managed memory).
#include <cuda_runtime.h>

#include <unistd.h>

#include <cstddef>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "core/errors.hpp"
#include "core/memory.hpp"

namespace devctx::detail::cuda {

void CudaDevice::pin_host_memory(const void* data, std::size_t bytes) {
  const char* operation = "register_host_memory";
  const auto where = [&] {
    return concat(operation, " on ", label(), ": the range at ", data, " (", bytes_text(bytes), ") ");
  };
  check_alive(operation);
  make_current();
  // What the memory already is, for a clear refusal; ordinary memory is "unregistered".
  cudaPointerAttributes a{};
  if (succeeded(cudaPointerGetAttributes(&a, data))) {
    if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged)
      fail(Errc::invalid_argument, where(), "is ", a.type == cudaMemoryTypeDevice ? "device" : "managed",
           " memory, not ordinary host memory: only host memory is registered (device memory needs no staging)");
    if (a.type == cudaMemoryTypeHost)
      fail(Errc::invalid_argument, where(),
           "is already page-locked (a HostBuffer, cudaMallocHost memory, or memory registered by other code or on "
           "another device): copies of it are direct already, there is nothing to register");
  }
  const CudaCall call = DEVCTX_CUDA(cudaHostRegister(const_cast<void*>(data), bytes, cudaHostRegisterPortable));
  switch (call.status) {
    case cudaSuccess: return;
    case cudaErrorHostMemoryAlreadyRegistered:
      ignore(call.status);
      fail(Errc::invalid_argument, where(),
           "shares memory pages with host memory that is already page-locked (registered by other code, on another "
           "device, or next to it on this one: page-locking works on whole pages of ",
           sysconf(_SC_PAGESIZE), " bytes, so two registrations must not share a page)");
    case cudaErrorMemoryAllocation:
      ignore(call.status);
      fail(Errc::out_of_memory, where(), "could not be page-locked: ", host_memory_text(),
           " (page-locked memory may also be limited by `ulimit -l`)");
    case cudaErrorInvalidValue:
      ignore(call.status);
      fail(Errc::invalid_argument, where(), "was refused by cudaHostRegister (", describe(call.status),
           "): it must be ordinary host memory that this process has mapped, readable and writable");
    case cudaErrorNotSupported:
      ignore(call.status);
      fail(Errc::not_available, where(), "cannot be page-locked on this system (", describe(call.status), ')');
    default: check(call, *this, operation);
  }
}

bool CudaDevice::stage_host_memory(const void* data, std::size_t bytes) noexcept {
  const auto stageable = [&](const void* p) {
    cudaPointerAttributes a{};
    if (!succeeded(cudaPointerGetAttributes(&a, p))) return true;  // as before the query: staged
    // Memory page-locked in another device's context without cudaHostAllocPortable is
    // page-locked only there: the driver would copy it as pageable, slower than staging.
    return a.type == cudaMemoryTypeUnregistered || (a.type == cudaMemoryTypeHost && a.device != id());
  };
  return bytes == 0 || (stageable(data) && stageable(static_cast<const std::byte*>(data) + (bytes - 1)));
}

void CudaDevice::unpin_host_memory(const void* data) noexcept {
  if (lost()) return;  // no context to unregister it from
  int current = -1;
  if (!succeeded(cudaGetDevice(&current)) || current != id()) ignore(cudaSetDevice(id()));
  ignore(cudaHostUnregister(const_cast<void*>(data)));
}

}  // namespace devctx::detail::cuda
