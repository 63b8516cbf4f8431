// SPDX-License-Identifier: Apache-2.0
// The CUDA backend's error policy: which errors are sticky, what a failed call's message says
// and which Errc it carries, and how a fault that poisons a device's context is recorded, so
// that every later call says plainly that the context is lost (see cuda_error.hpp).
#include "backends/cuda/cuda_error.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "backends/cuda/cuda_device.hpp"
#include "core/errors.hpp"

namespace devctx::detail::cuda {
namespace {

/// "cudaMemcpyAsync at cuda_queue.cpp:88"
std::string call_text(const CudaCall& call) {
  std::string_view text = call.text;
  text = text.substr(0, text.find('('));
  std::string_view file = call.file;
  if (const auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return concat(text, " at ", file, ':', call.line);
}

}  // namespace

bool is_sticky(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorExternalDevice:
    case cudaErrorContextIsDestroyed: return true;
    default: return false;
  }
}

std::string describe(cudaError_t status) {
  return concat(cudaGetErrorString(status), " (", cudaGetErrorName(status), ')');
}

ContextHealth& context_health(int id) {
  static std::array<ContextHealth, 64> health;
  return health[std::size_t(id) % health.size()];
}

void throw_lost(const CudaDevice& device, std::string_view operation) {
  ContextHealth& health = device.health();
  std::string cause;
  {
    const std::lock_guard lock(health.mutex);
    cause = health.cause;
  }
  fail(Errc::context_lost, "the CUDA context of cuda:", device.id(), " (", device.info().name, ") is lost after ",
       cause, ": ", operation, " cannot run; the process must restart to use this GPU again");
}

void raise(const CudaDevice& device, const CudaCall& call, std::string_view operation, const std::string& kernels) {
  const cudaError_t status = call.status;
  const DeviceInfo& info = device.info();
  ContextHealth& health = device.health();
  if (is_sticky(status)) {
    bool first = false;
    {
      const std::lock_guard lock(health.mutex);
      if (!health.lost.load(std::memory_order_relaxed)) {
        first = true;
        health.cause = concat(describe(status),
                              kernels.empty() ? std::string(" in a kernel enqueued earlier") : " in " + kernels);
        health.lost.store(true, std::memory_order_release);
      }
    }
    if (!first) throw_lost(device, operation);
    fail(Errc::kernel_failed, operation, " on ", device.label(), ": ",
         kernels.empty() ? std::string("a kernel enqueued earlier") : kernels, " failed: ", describe(status),
         "; the CUDA context of cuda:", info.id, " is now lost: the process must restart to use this GPU again");
  }
  (void)cudaGetLastError();  // a non-sticky error: clear it so that later calls do not see it
  if (device.lost()) throw_lost(device, operation);
  Errc code = Errc::backend_error;
  std::string hint;
  switch (status) {
    case cudaErrorMemoryAllocation:
      code = Errc::out_of_memory;
      hint = concat("; ", device.memory_text());
      break;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorCooperativeLaunchTooLarge: code = Errc::invalid_launch; break;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorInvalidKernelImage:
    case cudaErrorUnsupportedPtxVersion:
      code = Errc::not_available;
      hint = concat("; the kernel has no code for this GPU (compute capability ", info.compute_capability_major, '.',
                    info.compute_capability_minor,
                    "): build with -DCMAKE_CUDA_ARCHITECTURES=", info.compute_capability_major,
                    info.compute_capability_minor, " (or \"native\")");
      break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInvalidDevice: code = Errc::not_available; break;
    default: break;
  }
  fail(code, operation, " on ", device.label(), ": ", call_text(call), " failed: ", describe(status), hint);
}

}  // namespace devctx::detail::cuda
