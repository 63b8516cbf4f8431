// SPDX-License-Identifier: Apache-2.0
// src/comm/host_reduce.cpp - element-wise reductions of host memory (host_reduce.hpp).
#include "comm/host_reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace devctx::detail {
namespace {

/// a + b and a * b that wrap for signed integers (computed unsigned: no undefined overflow).
template <class T>
T add(T a, T b) noexcept {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else
    return a + b;
}
template <class T>
T mul(T a, T b) noexcept {
  if constexpr (std::is_integral_v<T>) {
    // Promoted to at least unsigned int so that uint8 products cannot overflow an int.
    using W = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
    return T(W(std::make_unsigned_t<T>(a)) * W(std::make_unsigned_t<T>(b)));
  } else {
    return a * b;
  }
}

template <class T>
void reduce_typed(ReduceOp op, T* out, const void* const* in, std::size_t inputs, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    T acc = static_cast<const T*>(in[0])[i];
    for (std::size_t k = 1; k < inputs; ++k) {
      const T v = static_cast<const T*>(in[k])[i];
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg: acc = add(acc, v); break;
        case ReduceOp::prod: acc = mul(acc, v); break;
        case ReduceOp::min: acc = std::min(acc, v); break;
        case ReduceOp::max: acc = std::max(acc, v); break;
      }
    }
    if (op == ReduceOp::avg) acc = T(acc / T(inputs));
    out[i] = acc;
  }
}

}  // namespace

void host_reduce(DataType type, ReduceOp op, void* out, const void* const* in, std::size_t inputs,
                 std::size_t count) noexcept {
  switch (type) {
    case DataType::int8: return reduce_typed(op, static_cast<std::int8_t*>(out), in, inputs, count);
    case DataType::uint8: return reduce_typed(op, static_cast<std::uint8_t*>(out), in, inputs, count);
    case DataType::int32: return reduce_typed(op, static_cast<std::int32_t*>(out), in, inputs, count);
    case DataType::uint32: return reduce_typed(op, static_cast<std::uint32_t*>(out), in, inputs, count);
    case DataType::int64: return reduce_typed(op, static_cast<std::int64_t*>(out), in, inputs, count);
    case DataType::uint64: return reduce_typed(op, static_cast<std::uint64_t*>(out), in, inputs, count);
    case DataType::float32: return reduce_typed(op, static_cast<float*>(out), in, inputs, count);
    case DataType::float64: return reduce_typed(op, static_cast<double*>(out), in, inputs, count);
  }
}

}  // namespace devctx::detail
