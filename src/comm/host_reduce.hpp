// SPDX-License-Identifier: Apache-2.0
// src/comm/host_reduce.hpp - element-wise reductions of host memory, for every DataType and
// ReduceOp: what a collective of CPU devices computes. Integer sums and products wrap, as on GPUs.
#pragma once

#include <cstddef>

#include <devctx/comm.hpp>

namespace devctx::detail {

/// out[i] = op over k < inputs of in[k][i], for i < count. `inputs` >= 1; `out` may be in[0].
void host_reduce(DataType type, ReduceOp op, void* out, const void* const* in, std::size_t inputs,
                 std::size_t count) noexcept;

}  // namespace devctx::detail
