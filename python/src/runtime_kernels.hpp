// SPDX-License-Identifier: Apache-2.0
// python/src/runtime_kernels.hpp - the one entry point of the runtime-kernel bindings
// (runtime_kernels.cpp) and what they need from the module's own types (module.cpp), given as hooks
// so that the two files share no type definitions.
#pragma once

#include <nanobind/nanobind.h>

#include <devctx/devctx.hpp>

/// A devctx.DeviceArray's memory, as runtime_kernels.cpp needs it for a launch argument: valid
/// while the Python array lives (no reference count is touched).
struct RuntimeArray {
  devctx::Buffer* buffer = nullptr;  ///< the array's untyped owner; typed slices are made from it
  int dtype = 0;  ///< module.cpp's DType: bool, int8..int64, uint8..uint64, float32, float64 (in that order)
  bool readonly = false;
};

struct RuntimeKernelHooks {
  /// The DeviceContext of a devctx.Context (valid while that object lives), or null when `obj`
  /// is not one.
  devctx::DeviceContext* (*context_ptr)(nanobind::handle obj);
  /// Fills `out` from a devctx.DeviceArray; false when `obj` is not one.
  bool (*device_array_of)(nanobind::handle obj, RuntimeArray& out);
};

/// Binds devctx.Module, devctx.Function, devctx.Launch, devctx.CompileError and the methods
/// Context.compile_function / Context.enqueue_function / Context.bind_function onto `m` (whose
/// Context class is bound), and the translator of BindingArgumentError (binding_errors.hpp).
void bind_runtime_kernels(nanobind::module_& m, const RuntimeKernelHooks& hooks);
