// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/cuda_backend.cpp - the CUDA backend's descriptor (core/backend_descriptor.hpp),
// in every build: with CUDA its entry points are cuda_device.cpp's, without it cuda_absent.cpp's
// (no devices, and why). Its device memory is the GPU's; collectives go through NCCL.
#include <string_view>

#include "backends/cuda/cuda_backend.hpp"
#include "comm/engines.hpp"
#include "core/backend_descriptor.hpp"

#ifndef DEVCTX_CUDA_BUILT
#error "DEVCTX_CUDA_BUILT (0 or 1) is set by CMakeLists.txt"
#endif

namespace devctx::detail {
namespace {
constexpr std::string_view kAliases[] = {"gpu"};
}  // namespace

constinit const BackendDescriptor cuda_backend_descriptor{
    .backend =
        {
            .api = Api::cuda,
            .name = "cuda",
            .aliases = kAliases,
            .built = DEVCTX_CUDA_BUILT != 0,
            .default_preference = 10,  // a GPU before the CPU
            .has_device_memory = true,
            .dlpack_device_type = 2,           // kDLCUDA
            .dlpack_host_device_type = 3,      // kDLCUDAHost: HostBuffers are page-locked
            .dlpack_managed_device_type = 13,  // kDLCUDAManaged
            .device_count = &cuda_device_count,
            .absent_reason = &cuda_absent_reason,
        },
    .open_device = &open_cuda_device,
    .create_comm_group = &create_nccl_group,
    .start_tools = &start_cuda_tools,
};

}  // namespace devctx::detail
