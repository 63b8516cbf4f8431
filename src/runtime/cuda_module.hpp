// SPDX-License-Identifier: Apache-2.0
// src/runtime/cuda_module.hpp - loading a runtime-compiled kernel's cubin on a CUDA device.
#pragma once

#include <string>

#include "core/backend.hpp"
#include "runtime/runtime_function.hpp"

namespace devctx::detail {

/// Loads `cubin` on `device` (a CUDA device), sets f.cuda_kernel to its entry (a cudaKernel_t,
/// which cudaLaunchKernel takes as the function) and returns the signature text stored in it.
/// The library stays loaded until the process ends. Throws Error(backend_error) when CUDA
/// refuses the cubin, Error(not_available) in a build without CUDA.
[[nodiscard]] std::string load_cuda_module(RuntimeFunction& f, DeviceImpl& device, const std::string& cubin);

}  // namespace devctx::detail
