// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/runtime_module.cpp - loading a runtime-compiled kernel's cubin on a CUDA device
// (cuda_module.hpp) through the runtime's library API: cudaLibraryLoadData, the __global__
// entry "devctx_rt_kernel" and the __device__ constant "devctx_rt_signature" that
// devctx/detail/runtime/entry.hpp defines.
#include <cuda_runtime.h>

#include <vector>

#include "core/errors.hpp"
#include "runtime/cuda_module.hpp"

namespace devctx::detail {

std::string load_cuda_module(RuntimeFunction& f, DeviceImpl& device, const std::string& cubin) {
  auto check = [&](cudaError_t e, const char* call) {
    if (e != cudaSuccess)
      fail(Errc::backend_error, "compile_function(\"", f.name, "\") on ", device.label(), ": ", call,
           " failed: ", cudaGetErrorString(e));
  };
  // The device current on the calling thread is the caller's: restored on the way out.
  int previous = 0;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  struct Restore {
    int device;
    ~Restore() { (void)cudaSetDevice(device); }
  } restore{previous};
  check(cudaSetDevice(device.info().id), "cudaSetDevice");
  cudaLibrary_t library = nullptr;
  check(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData");
  cudaKernel_t kernel = nullptr;
  check(cudaLibraryGetKernel(&kernel, library, "devctx_rt_kernel"), "cudaLibraryGetKernel(devctx_rt_kernel)");
  void* text = nullptr;
  std::size_t bytes = 0;
  check(cudaLibraryGetGlobal(&text, &bytes, library, "devctx_rt_signature"), "cudaLibraryGetGlobal(devctx_rt_signature)");
  if (bytes == 0 || bytes > (1u << 20))
    fail(Errc::backend_error, "compile_function(\"", f.name, "\"): the cubin's signature has ", bytes, " bytes");
  std::vector<char> host(bytes + 1, '\0');
  check(cudaMemcpy(host.data(), text, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(signature)");
  f.cuda_kernel = reinterpret_cast<const void*>(kernel);
  return std::string(host.data());
}

}  // namespace devctx::detail
