// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/tensors.hpp - the tensor op's devctx calls (tensors.cpp, compiled by nvcc in CUDA
// builds): the op's layout made from its extents, devctx::tensor() over device or host memory,
// and, when asked, every element written through the tensor (by a kernel, or by the host).
// Element i, counting multi-indices in row-major order, gets base + i; tensor_plan.hpp predicts
// where each lands.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include <devctx/devctx.hpp>

#include "fuzz/op.hpp"

namespace devctx_fuzz {

/// A tensor op's device memory: a whole buffer or a slice.
using TensorDeviceArg = std::variant<devctx::DeviceBuffer<std::uint32_t>*, devctx::DeviceSlice<std::uint32_t>>;
/// A tensor op's host memory: a whole HostBuffer (its own tensor() form) or a std::span.
using TensorHostArg = std::variant<devctx::HostBuffer<std::uint32_t>*, std::span<std::uint32_t>>;

/// devctx::tensor(memory, layout of op), then, when `launch`, a kernel on `stream` writing every
/// element; throws what devctx throws (the layout, tensor() or the launch).
void tensor_on_device(devctx::StreamRef& stream, const Op& op, const TensorDeviceArg& memory, bool launch);
/// devctx::tensor(memory, layout of op), then, when `write`, the host writes every element.
void tensor_on_host(const Op& op, const TensorHostArg& memory, bool write);

/// The C++ expression of the op's layout (the reproduction's text).
[[nodiscard]] std::string layout_expr(const Op& op);

}  // namespace devctx_fuzz
