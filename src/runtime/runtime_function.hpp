// SPDX-License-Identifier: Apache-2.0
// src/runtime/runtime_function.hpp - what a DeviceFunction holds: one kernel compiled at run time
// for one device, its signature as read back from the compiled code, and the wire layout the
// host packs its arguments in.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <devctx/module.hpp>

#include "core/backend.hpp"

namespace devctx::detail {

namespace rt {
struct CpuEntry;  // devctx/detail/runtime/entry.hpp
}

struct RuntimeFunction {
  std::string name;              ///< as requested: "saxpy<float>"
  std::string_view launch_name;  ///< static storage (the kernel's code stays loaded): for KernelLaunch::name
  std::vector<KernelParam> params;
  std::vector<std::size_t> wire_offsets;  ///< one per parameter (signature.hpp's rule)
  std::size_t wire_size = 0;
  std::size_t wire_align = 1;
  bool block_level = false;
  LoadKind load_kind = LoadKind::compiled;
  double load_ms = 0;
  std::shared_ptr<DeviceImpl> device;  ///< the device it was compiled for
  const rt::CpuEntry* cpu = nullptr;   ///< CPU: the shared object's entry table
  /// CPU: why the kernel has no translated twin (static, in its shared object), else null.
  const char* fission_off = nullptr;
  const void* cuda_kernel = nullptr;  ///< CUDA: the cudaKernel_t
};

/// Parses a signature text (signature.hpp) into `f`'s params and wire layout. Throws
/// Error(backend_error) naming `what` when the text is malformed (a damaged or foreign binary).
void parse_signature(const std::string& text, RuntimeFunction& f, const std::string& what);

}  // namespace devctx::detail
