// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/tensor_plan.cpp - the model's prediction for a tensor op (see tensor_plan.hpp): the
// rule of docs/guide.md ("Tensors"), restated with the compiler's overflow builtins.
#include "fuzz/tensor_plan.hpp"

#include <algorithm>

namespace devctx_fuzz {

void effective_extents(const Op& op, std::uint64_t (&out)[3]) {
  const std::size_t rank = layout_rank(op.layout);
  for (std::size_t d = 0; d < 3; ++d) out[d] = d < rank ? op.ext[d] : 1;
  if (op.layout == LayoutId::row_x4) out[1] = 4;
  if (op.layout == LayoutId::col_3x) out[0] = 3;
}

TensorPlan plan_tensor(const Op& op, std::uint64_t memory_elements) {
  TensorPlan p;
  const std::size_t rank = layout_rank(op.layout);
  effective_extents(op, p.extents);
  const std::uint64_t* e = p.extents;
  const bool any_zero = std::any_of(e, e + rank, [](std::uint64_t x) { return x == 0; });
  if (op.layout == LayoutId::strided2) {
    // from_parts: the size and the span must fit.
    p.strides[0] = op.strides[0];
    p.strides[1] = op.strides[1];
    if (!any_zero && __builtin_mul_overflow(e[0], e[1], &p.size)) return p;
    if (any_zero) p.size = 0;
    std::uint64_t last = 0;
    if (!any_zero) {
      for (std::size_t d = 0; d < rank; ++d) {
        std::uint64_t reach = 0;
        if (__builtin_mul_overflow(e[d] - 1, p.strides[d], &reach) || __builtin_add_overflow(last, reach, &last))
          return p;
      }
      if (__builtin_add_overflow(last, std::uint64_t{1}, &p.span)) return p;
    }
  } else {
    // Made from its extents: every stride (the product of the extents inside it) and the size
    // must fit; the span is the size.
    const bool col = op.layout == LayoutId::col2 || op.layout == LayoutId::col3 || op.layout == LayoutId::col_3x;
    std::uint64_t s = 1;
    for (std::size_t k = 0; k < rank; ++k) {
      const std::size_t d = col ? k : rank - 1 - k;
      p.strides[d] = s;
      if (__builtin_mul_overflow(s, e[d], &s)) return p;
    }
    p.size = s;
    p.span = s;
  }
  p.verdict = p.span <= memory_elements ? TensorPlan::Verdict::fits : TensorPlan::Verdict::too_large;
  if (p.verdict != TensorPlan::Verdict::fits || p.size > kMaxTensorWrite) return p;
  p.offsets.reserve(p.size);
  for (std::uint64_t i = 0; i < p.size; ++i) {
    std::uint64_t rest = i, off = 0;
    for (std::size_t d = rank; d-- > 0;) {
      off += (rest % e[d]) * p.strides[d];
      rest /= e[d];
    }
    p.offsets.push_back(off);
  }
  std::vector<std::uint64_t> sorted = p.offsets;
  std::sort(sorted.begin(), sorted.end());
  p.writes = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  if (!p.writes) p.offsets.clear();
  return p;
}

}  // namespace devctx_fuzz
