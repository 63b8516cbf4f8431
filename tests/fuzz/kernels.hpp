// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/kernels.hpp - launching the fuzzers' kernels (kernels.cpp, the one file nvcc
// compiles) with buffers or slices as arguments. The model's Model::kernel mirrors each kernel.
#pragma once

#include <cstdint>
#include <variant>

#include <devctx/devctx.hpp>

#include "fuzz/op.hpp"

namespace devctx_fuzz {

/// A kernel's input: a whole buffer (passed as const DeviceBuffer&) or a read-only slice.
using InArg = std::variant<const devctx::DeviceBuffer<std::uint32_t>*, devctx::DeviceSlice<const std::uint32_t>>;
/// A kernel's output: a whole buffer or a slice.
using OutArg = std::variant<devctx::DeviceBuffer<std::uint32_t>*, devctx::DeviceSlice<std::uint32_t>>;

/// stream.enqueue_function<kernel k>(config, in, out[, value]) for the kernels with buffers;
/// throws what enqueue_function throws.
void launch(devctx::StreamRef& stream, KernelId k, const devctx::LaunchConfig& config, const InArg& in,
            const OutArg& out, std::uint64_t value);
/// stream.enqueue_function<fuzz_fail>(config, value).
void launch_fail(devctx::StreamRef& stream, const devctx::LaunchConfig& config, std::uint64_t value);

/// The kernel's name as a devctx error message names it.
[[nodiscard]] const char* kernel_function_name(KernelId k);

}  // namespace devctx_fuzz
