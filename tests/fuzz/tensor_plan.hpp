// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/tensor_plan.hpp - the model's side of a tensor op: what devctx must do with a
// layout of the op's extents over memory of a given size (refuse the layout, refuse it as too
// large for the memory, or accept it) and, when it accepts one that can be written, the offset
// of every element. Computed here on its own terms (compiler overflow builtins), not with
// devctx's arithmetic, so that the fuzzers compare two independent answers.
#pragma once

#include <cstdint>
#include <vector>

#include "fuzz/op.hpp"

namespace devctx_fuzz {

/// Tensors with more elements than this are made but not written (the model writes each one).
inline constexpr std::uint64_t kMaxTensorWrite = 4096;

struct TensorPlan {
  enum class Verdict : std::uint8_t {
    unrepresentable,  ///< a stride, the size or the span does not fit in 64 bits: size_mismatch at the layout
    too_large,        ///< representable, but the span exceeds the memory: size_mismatch at devctx::tensor()
    fits,             ///< accepted
  };
  Verdict verdict = Verdict::unrepresentable;
  std::uint64_t extents[3] = {};
  std::uint64_t strides[3] = {};
  std::uint64_t size = 0;
  std::uint64_t span = 0;
  /// When accepted, at most kMaxTensorWrite elements, and no two indices share an element: the
  /// offset of element i, counting multi-indices in row-major order (the last index fastest).
  std::vector<std::uint64_t> offsets;
  bool writes = false;
};

/// The extents the op's layout actually has (row_x4 and col_3x fix one of them).
void effective_extents(const Op& op, std::uint64_t (&out)[3]);
[[nodiscard]] TensorPlan plan_tensor(const Op& op, std::uint64_t memory_elements);

}  // namespace devctx_fuzz
