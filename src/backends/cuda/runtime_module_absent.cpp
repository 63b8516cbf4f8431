// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/runtime_module_absent.cpp - load_cuda_module in a build without the CUDA backend
// (where no CUDA device exists to compile for).
#include "core/errors.hpp"
#include "runtime/cuda_module.hpp"

namespace devctx::detail {

std::string load_cuda_module(RuntimeFunction& f, DeviceImpl& /*device*/, const std::string& /*cubin*/) {
  fail(Errc::not_available, "compile_function(\"", f.name, "\"): this devctx was built without CUDA");
}

}  // namespace devctx::detail
