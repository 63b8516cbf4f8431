// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/tensors.cpp - the tensor op (tensors.hpp): layouts of every order and rank made from
// the op's extents, and a kernel that writes each element of a tensor directly, through a 1x1
// tile or through the transpose, guarded by the tensor's own extents as a user's kernel is.
#include "fuzz/tensors.hpp"

#include <string>
#include <type_traits>

namespace devctx_fuzz {
namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
using devctx::dyn;

/// Element i (multi-indices in row-major order) of t gets base + i, accessed as `access` says.
template <class T, class L>
DEVCTX_HD_INLINE void write_element(const devctx::LayoutTensor<T, L>& t, u64 i, u32 base, u32 access) {
  const u32 v = base + u32(i);
  if constexpr (L::rank == 1) {
    if (access == u32(TensorAccess::tile))
      t.template tile<1>(i)(0) = v;
    else
      t(i) = v;
  } else if constexpr (L::rank == 2) {
    const u64 r = i / t.extent(1), c = i % t.extent(1);
    if (access == u32(TensorAccess::tile))
      t.template tile<1, 1>(r, c)(0, 0) = v;
    else if (access == u32(TensorAccess::transpose))
      t.transpose()(c, r) = v;
    else
      t(r, c) = v;
  } else {
    const u64 k = i % t.extent(2), j = (i / t.extent(2)) % t.extent(1), r = i / t.extent(2) / t.extent(1);
    if (access == u32(TensorAccess::tile))
      t.template tile<1, 1, 1>(r, j, k)(0, 0, 0) = v;
    else
      t(r, j, k) = v;
  }
}

template <class L>
DEVCTX_KERNEL void fuzz_tensor_write(devctx::LayoutTensor<u32, L> t, u32 base, u32 access) {
  const u64 threads = devctx::grid_dim().volume() * devctx::block_dim().volume();
  const devctx::Dim3 b = devctx::block_idx(), g = devctx::grid_dim(), th = devctx::thread_idx(), d = devctx::block_dim();
  const u64 first = (b.x + u64(g.x) * (b.y + u64(g.y) * b.z)) * d.volume() + th.x + u64(d.x) * (th.y + u64(d.y) * th.z);
  for (u64 i = first; i < t.size(); i += threads) write_element(t, i, base, access);
}

/// Calls f(layout) with the op's layout (constructing it may throw).
template <class F>
void with_layout(const Op& op, F&& f) {
  const u64* e = op.ext;
  switch (op.layout) {
    case LayoutId::row1: f(devctx::RowMajor<dyn>(e[0])); break;
    case LayoutId::row2: f(devctx::RowMajor<dyn, dyn>(e[0], e[1])); break;
    case LayoutId::row3: f(devctx::RowMajor<dyn, dyn, dyn>(e[0], e[1], e[2])); break;
    case LayoutId::col2: f(devctx::ColMajor<dyn, dyn>(e[0], e[1])); break;
    case LayoutId::col3: f(devctx::ColMajor<dyn, dyn, dyn>(e[0], e[1], e[2])); break;
    case LayoutId::row_x4: f(devctx::RowMajor<dyn, 4>(e[0])); break;
    case LayoutId::col_3x: f(devctx::ColMajor<3, dyn>(e[1])); break;
    case LayoutId::strided2:
      f(devctx::Strided<dyn, dyn>::from_parts({e[0], e[1]}, {op.strides[0], op.strides[1]}));
      break;
  }
}

}  // namespace

void tensor_on_device(devctx::StreamRef& stream, const Op& op, const TensorDeviceArg& memory, bool launch) {
  const devctx::LaunchConfig config{.grid_dim = {op.grid.x, op.grid.y, op.grid.z},
                                    .block_dim = {op.block.x, op.block.y, op.block.z}};
  const u32 base = u32(op.value), access = u32((op.value >> 32) & 3);
  with_layout(op, [&](const auto& layout) {
    using L = std::decay_t<decltype(layout)>;
    std::visit(
        [&](const auto& m) {
          auto t = [&] {
            if constexpr (std::is_pointer_v<std::decay_t<decltype(m)>>)
              return devctx::tensor(*m, layout);
            else
              return devctx::tensor(m, layout);
          }();
          if (launch) stream.enqueue_function<fuzz_tensor_write<L>>(config, t, base, access);
        },
        memory);
  });
}

void tensor_on_host(const Op& op, const TensorHostArg& memory, bool write) {
  const u32 base = u32(op.value), access = u32((op.value >> 32) & 3);
  with_layout(op, [&](const auto& layout) {
    std::visit(
        [&](const auto& m) {
          auto t = [&] {
            if constexpr (std::is_pointer_v<std::decay_t<decltype(m)>>)
              return devctx::tensor(*m, layout);
            else
              return devctx::tensor(m, layout);
          }();
          if (write)
            for (u64 i = 0; i < t.size(); ++i) write_element(t, i, base, access);
        },
        memory);
  });
}

std::string layout_expr(const Op& op) {
  const auto n = [&](int d) { return std::to_string(op.ext[d]) + "ull"; };
  switch (op.layout) {
    case LayoutId::row1: return "devctx::RowMajor<dyn>(" + n(0) + ")";
    case LayoutId::row2: return "devctx::RowMajor<dyn, dyn>(" + n(0) + ", " + n(1) + ")";
    case LayoutId::row3: return "devctx::RowMajor<dyn, dyn, dyn>(" + n(0) + ", " + n(1) + ", " + n(2) + ")";
    case LayoutId::col2: return "devctx::ColMajor<dyn, dyn>(" + n(0) + ", " + n(1) + ")";
    case LayoutId::col3: return "devctx::ColMajor<dyn, dyn, dyn>(" + n(0) + ", " + n(1) + ", " + n(2) + ")";
    case LayoutId::row_x4: return "devctx::RowMajor<dyn, 4>(" + n(0) + ")";
    case LayoutId::col_3x: return "devctx::ColMajor<3, dyn>(" + n(1) + ")";
    case LayoutId::strided2:
      return "devctx::Strided<dyn, dyn>::from_parts({" + n(0) + ", " + n(1) + "}, {" + std::to_string(op.strides[0]) +
             "ull, " + std::to_string(op.strides[1]) + "ull})";
  }
  return "?";
}

}  // namespace devctx_fuzz
