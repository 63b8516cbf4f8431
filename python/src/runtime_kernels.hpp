// SPDX-License-Identifier: Apache-2.0
// python/src/runtime_kernels.hpp - the one entry point of the runtime-kernel bindings
// (runtime_kernels.cpp) and what they need from the module's own types (module.cpp), given as hooks
// so that the two files share no type definitions.
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <memory>

#include <devctx/devctx.hpp>

/// A devctx.DeviceArray's memory, as runtime_kernels.cpp needs it for a launch argument.
struct RuntimeArray {
  std::shared_ptr<devctx::DeviceContext> ctx;
  std::shared_ptr<devctx::Buffer> buffer;  ///< the array's untyped owner; typed slices are made from it
  std::size_t count = 0;
  int dtype = 0;  ///< module.cpp's DType: bool, int8..int64, uint8..uint64, float32, float64 (in that order)
  bool readonly = false;
};

struct RuntimeKernelHooks {
  /// The DeviceContext of a devctx.Context, or null when `obj` is not one.
  std::shared_ptr<devctx::DeviceContext> (*context_of)(nanobind::handle obj);
  /// Fills `out` from a devctx.DeviceArray; false when `obj` is not one.
  bool (*device_array_of)(nanobind::handle obj, RuntimeArray& out);
};

/// Binds devctx.Module, devctx.Function, devctx.Launch, devctx.CompileError and the methods
/// Context.compile_function / Context.enqueue_function onto `m` (whose Context class is bound).
void bind_runtime_kernels(nanobind::module_& m, const RuntimeKernelHooks& hooks);
