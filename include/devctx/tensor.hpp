// SPDX-License-Identifier: Apache-2.0
// devctx/tensor.hpp - LayoutTensor<T, L>: a multi-dimensional view (rank 1-3) of memory laid out
// by a Layout (row-major, column-major or strided; each extent static or dynamic), usable in
// kernels and on the host. Mojo's LayoutTensor, in C++.
//
//   using Tile = devctx::RowMajor<16, 16>;                         // static extents
//   using Mat = devctx::RowMajor<devctx::dyn, devctx::dyn>;       // dynamic extents
//   DEVCTX_KERNEL void k(devctx::LayoutTensor<const float, Mat> a, ...) {
//     float x = a(row, col);                                      // a.data()[row * a.stride(0) + col]
//     auto t = a.tile<16, 16>(bi, bj);                            // LayoutTensor<const float, Tile>
//   }
//   ctx.enqueue_function<k>(cfg, devctx::tensor(d_a, Mat(m, n)), ...);  // <devctx/device_tensor.hpp>
//
// A view never owns memory; it is trivially copyable and costs what the index arithmetic
// written by hand costs: the contiguous dimension's stride is the constant 1 and static extents
// are constants (bench/tensor/tensor_bench.cpp measures it against flat indexing).
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/base/checked_size.hpp>
#include <devctx/detail/base/config.hpp>
#if defined(__CUDACC_RTC__)  // device code alone, printf built in (detail/base/std.hpp)
#elif defined(__CUDA_ARCH__)
#include <devctx/detail/base/seam.hpp>
#include <cstdio>
#else
#include <devctx/detail/base/seam.hpp>
#include <devctx/detail/base/cpu_state.hpp>
#endif

namespace devctx {

/// An extent known only at run time (Layout<..., dyn, ...>).
inline constexpr std::size_t dyn = ~std::size_t(0);

/// How a layout maps a multi-index to an element offset.
enum class Order : unsigned char {
  row_major,  ///< the last index is contiguous (stride 1, a compile-time constant)
  col_major,  ///< the first index is contiguous (stride 1, a compile-time constant)
  strided,    ///< every stride is a run-time value (transposes, every-other-row views, ...)
};

template <class T, class L>
class LayoutTensor;

namespace detail {

/// The layout's name in messages ("RowMajor", "ColMajor", "Strided").
constexpr const char* layout_name(Order o) noexcept {
  return o == Order::row_major ? "RowMajor" : o == Order::col_major ? "ColMajor" : "Strided";
}

/// The strides of a contiguous layout of `rank` extents in order `o` (a strided layout made
/// from its extents alone is laid out row-major), each the product of the extents of the
/// dimensions inside it, and the product of all of them. Nothing when one of them does not fit
/// in std::size_t (checked_mul, devctx/detail/base/checked_size.hpp); `bad_dim` is then the
/// dimension whose stride does not fit, or `rank` when only the size does not.
struct ContiguousShape {
  std::size_t strides[3] = {};
  std::size_t size = 0;
  std::size_t bad_dim = 0;
  bool fits = false;
};
constexpr ContiguousShape contiguous_shape(Order o, const std::size_t* extents, std::size_t rank) noexcept {
  ContiguousShape c;
  std::size_t s = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    const std::size_t d = o == Order::col_major ? k : rank - 1 - k;
    c.strides[d] = s;
    const auto next = checked_mul(s, extents[d]);
    if (!next) {
      // The stride of the next dimension outwards, or the size when d is the outermost one.
      c.bad_dim = k + 1 < rank ? (o == Order::col_major ? d + 1 : d - 1) : rank;
      return c;
    }
    s = *next;
  }
  c.size = s;
  c.fits = true;
  return c;
}

/// The number of elements a layout with these extents and strides reaches, from its first
/// element to one past its last (0 when an extent is 0), or nothing when it does not fit in
/// std::size_t.
constexpr std::optional<std::size_t> span_of(const std::size_t* extents, const std::size_t* strides,
                                             std::size_t rank) noexcept {
  std::size_t last = 0;
  for (std::size_t d = 0; d < rank; ++d)
    if (extents[d] == 0) return std::size_t(0);
  for (std::size_t d = 0; d < rank; ++d) {
    const auto reach = checked_mul(extents[d] - 1, strides[d]);
    const auto sum = reach ? checked_add(last, *reach) : std::nullopt;
    if (!sum) return std::nullopt;
    last = *sum;
  }
  return checked_add(last, 1);
}

/// The product of the extents (0 when one of them is 0, however large the others), or nothing
/// when it does not fit in std::size_t.
constexpr std::optional<std::size_t> size_of(const std::size_t* extents, std::size_t rank) noexcept {
  for (std::size_t d = 0; d < rank; ++d)
    if (extents[d] == 0) return std::size_t(0);
  std::optional<std::size_t> n = 1;
  for (std::size_t d = 0; d < rank && n; ++d) n = checked_mul(*n, extents[d]);
  return n;
}

/// True while the calling thread runs kernel code (CPU backend): a layout that does not fit is
/// then the kernel's failure (kernel_failed), on the host a refused argument (size_mismatch).
inline bool in_cpu_kernel() noexcept {
#if defined(__CUDA_ARCH__)
  return true;
#else
  return cpu::tls.mode != cpu::Mode::none;
#endif
}

}  // namespace detail

/// The shape of a tensor: `sizeof...(E)` extents (1 to 3), each a constant or `dyn`, and a stride
/// per dimension. A row- or column-major layout made from its extents is contiguous; the tiles
/// of a tensor keep its strides. Trivially copyable.
///
/// Every layout that exists is representable: its size (the product of the extents), its span
/// (span_size()) and each of its strides fit in std::size_t, so no index arithmetic on a tensor
/// inside its extents wraps around. Static extents that cannot satisfy this (taking each `dyn`
/// extent as 1) do not compile; a constructor or from_parts() given extents (or strides) that
/// do not satisfy it throws devctx::Error(size_mismatch) naming the extents, on the host (in a
/// kernel on the CPU backend the kernel fails with kernel_failed). In CUDA device code the
/// layout is not checked: make layouts on the host, where devctx::tensor() needs them.
template <Order O, std::size_t... E>
class Layout {
  static_assert(sizeof...(E) >= 1 && sizeof...(E) <= 3, "devctx::Layout: a tensor has rank 1, 2 or 3");
  static constexpr bool static_extents_fit() {
    std::size_t e[] = {(E == dyn ? 1 : E)...};
    return detail::contiguous_shape(O, e, sizeof...(E)).fits;
  }
  static_assert(static_extents_fit(),
                "devctx::Layout: the static extents multiply past 2^64 - 1 (the layout's size or a stride would "
                "wrap around): no memory holds such a tensor");

 public:
  static constexpr std::size_t rank = sizeof...(E);
  static constexpr Order order = O;
  static constexpr std::size_t dynamic_count = ((E == dyn ? 1u : 0u) + ...);
  /// The dimension whose stride is the constant 1 (rank when there is none: Order::strided).
  static constexpr std::size_t unit_dim = O == Order::row_major ? rank - 1 : O == Order::col_major ? 0 : rank;

  /// Each dimension's extent if it is static, else dyn.
  static constexpr std::size_t static_extents[rank] = {E...};

  /// A contiguous layout with the static extents and 0 for every dynamic one (for a fully
  /// static layout: the layout).
  DEVCTX_HD constexpr Layout() noexcept {
    // A local copy: device code may not read a static member array at a run-time index.
    constexpr std::size_t e[] = {E...};
    for (std::size_t d = 0; d < rank; ++d) extent_[d] = e[d] == dyn ? 0 : e[d];
    make_contiguous();
  }
  /// A contiguous layout given its dynamic extents, in dimension order: RowMajor<dyn, 16>(rows).
  /// Throws Error(size_mismatch) when the size or a stride does not fit in std::size_t (see
  /// the class comment): RowMajor<dyn, dyn>(1ull << 62, 4) is refused, not wrapped to 0.
  template <class... I>
    requires(sizeof...(I) == dynamic_count && dynamic_count > 0 && (std::is_integral_v<I> && ...))
  DEVCTX_HD constexpr explicit Layout(I... dynamic_extents) {
    const std::size_t given[] = {std::size_t(dynamic_extents)...};
    constexpr std::size_t e[] = {E...};
    std::size_t next = 0;
    for (std::size_t d = 0; d < rank; ++d) extent_[d] = e[d] == dyn ? given[next++] : e[d];
#if !defined(__CUDA_ARCH__)
    const auto c = detail::contiguous_shape(O, extent_, rank);
    if (!c.fits) [[unlikely]]
      detail::throw_tensor_layout_overflow(detail::layout_name(O), extent_, nullptr, rank, c.bad_dim,
                                           detail::in_cpu_kernel());
#endif
    make_contiguous();
  }
  /// Every extent and stride given (`extents[d]` must equal a static extent, and the stride of
  /// unit_dim must be 1: its stride is the constant 1 whatever is given). For tiles, transposes
  /// and strided views; tensor.hpp's own operations are the usual way to make one. Throws
  /// Error(size_mismatch) when the size or the span does not fit in std::size_t, and
  /// Error(invalid_argument) when an extent differs from the static one.
  DEVCTX_HD static constexpr Layout from_parts(const std::size_t (&extents)[rank], const std::size_t (&strides)[rank]) {
#if !defined(__CUDA_ARCH__)
    constexpr std::size_t e[] = {E...};
    std::size_t used[rank] = {};
    for (std::size_t d = 0; d < rank; ++d) {
      if (e[d] != dyn && extents[d] != e[d]) [[unlikely]]
        detail::throw_tensor_static_extent(detail::layout_name(O), d, extents[d], e[d], detail::in_cpu_kernel());
      used[d] = d == unit_dim ? 1 : strides[d];
    }
    if (!detail::size_of(extents, rank)) [[unlikely]]
      detail::throw_tensor_layout_overflow(detail::layout_name(O), extents, used, rank, rank, detail::in_cpu_kernel());
    if (!detail::span_of(extents, used, rank)) [[unlikely]]
      detail::throw_tensor_layout_overflow(detail::layout_name(O), extents, used, rank, rank + 1, detail::in_cpu_kernel());
#endif
    return unchecked_parts(extents, strides);
  }

  /// Extent of dimension d (a constant when static).
  [[nodiscard]] DEVCTX_HD_INLINE constexpr std::size_t extent(std::size_t d) const noexcept {
    constexpr std::size_t e[] = {E...};
    return e[d] != dyn ? e[d] : extent_[d];
  }
  /// Elements between consecutive indices of dimension d (the constant 1 for unit_dim).
  [[nodiscard]] DEVCTX_HD_INLINE constexpr std::size_t stride(std::size_t d) const noexcept {
    return d == unit_dim ? 1 : stride_[d];
  }
  /// Number of elements (the product of the extents).
  [[nodiscard]] DEVCTX_HD constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (std::size_t d = 0; d < rank; ++d) n *= extent(d);
    return n;
  }
  /// Elements from the first to one past the last that the layout reaches (0 when empty): the
  /// memory a tensor with this layout needs.
  [[nodiscard]] DEVCTX_HD constexpr std::size_t span_size() const noexcept {
    std::size_t last = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if (extent(d) == 0) return 0;
      last += (extent(d) - 1) * stride(d);
    }
    return last + 1;
  }
  /// True when the elements fill [0, size()) without gaps in the layout's own order.
  [[nodiscard]] DEVCTX_HD constexpr bool is_contiguous() const noexcept {
    if constexpr (O == Order::strided)
      return false;
    else
      return span_size() == size() && *this == Layout::contiguous_like(*this);
  }
  /// The offset of element (i0, i1, ...) from the first element.
  [[nodiscard]] DEVCTX_HD_INLINE constexpr std::size_t offset(const std::size_t (&index)[rank]) const noexcept {
    std::size_t off = 0;
    for (std::size_t d = 0; d < rank; ++d) off += index[d] * stride(d);
    return off;
  }
  /// True when every index[d] < extent(d).
  [[nodiscard]] DEVCTX_HD_INLINE constexpr bool contains(const std::size_t (&index)[rank]) const noexcept {
    bool in = true;
    for (std::size_t d = 0; d < rank; ++d) in &= index[d] < extent(d);
    return in;
  }

  [[nodiscard]] DEVCTX_HD friend constexpr bool operator==(const Layout& a, const Layout& b) noexcept {
    for (std::size_t d = 0; d < rank; ++d)
      if (a.extent(d) != b.extent(d) || a.stride(d) != b.stride(d)) return false;
    return true;
  }

 private:
  template <class, class>
  friend class LayoutTensor;

  struct Parts {};
  DEVCTX_HD constexpr explicit Layout(Parts) noexcept {}
  /// from_parts() without the checks, for the views LayoutTensor makes of a representable
  /// layout (a tile inside it, its transpose), which are representable too.
  DEVCTX_HD static constexpr Layout unchecked_parts(const std::size_t (&extents)[rank],
                                                    const std::size_t (&strides)[rank]) noexcept {
    Layout l(Parts{});
    for (std::size_t d = 0; d < rank; ++d) {
      l.extent_[d] = extents[d];
      l.stride_[d] = strides[d];
    }
    return l;
  }
  DEVCTX_HD static constexpr Layout contiguous_like(const Layout& l) noexcept {
    Layout c(Parts{});
    for (std::size_t d = 0; d < rank; ++d) c.extent_[d] = l.extent(d);
    c.make_contiguous();
    return c;
  }
  DEVCTX_HD constexpr void make_contiguous() noexcept {
    std::size_t s = 1;
    if constexpr (O == Order::col_major) {
      for (std::size_t d = 0; d < rank; ++d) {
        stride_[d] = s;
        s *= extent_[d];
      }
    } else {  // row-major; a strided layout made from extents alone is laid out row-major
      for (std::size_t d = rank; d-- > 0;) {
        stride_[d] = s;
        s *= extent_[d];
      }
    }
  }

  std::size_t extent_[rank] = {};
  std::size_t stride_[rank] = {};
};

template <std::size_t... E>
using RowMajor = Layout<Order::row_major, E...>;
template <std::size_t... E>
using ColMajor = Layout<Order::col_major, E...>;
template <std::size_t... E>
using Strided = Layout<Order::strided, E...>;

namespace detail {
#if defined(__CUDA_ARCH__)
__device__ inline void tensor_trap(const char* what, const std::size_t* index, const std::size_t* extents,
                                   std::size_t rank) {
  unsigned long long i[3] = {}, e[3] = {};
  for (std::size_t d = 0; d < rank; ++d) {
    i[d] = index[d];
    e[d] = extents[d];
  }
  if (rank == 1)
    printf("devctx: tensor %s (%llu) out of range for extents (%llu) in block (%u, %u, %u), thread (%u, %u, %u)\n",
           what, i[0], e[0], blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  else if (rank == 2)
    printf("devctx: tensor %s (%llu, %llu) out of range for extents (%llu, %llu) in block (%u, %u, %u), thread (%u, %u, %u)\n",
           what, i[0], i[1], e[0], e[1], blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  else
    printf(
        "devctx: tensor %s (%llu, %llu, %llu) out of range for extents (%llu, %llu, %llu) in block (%u, %u, %u), "
        "thread (%u, %u, %u)\n",
        what, i[0], i[1], i[2], e[0], e[1], e[2], blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
        threadIdx.z);
  __trap();
}
#endif

/// Fails the kernel (or, on the host, throws) for `what` at `index` outside `extents`: "index"
/// (extents of the tensor) or "tile" (extents counted in whole tiles).
[[noreturn]] DEVCTX_HD inline void tensor_out_of_range(const char* what, const std::size_t* index,
                                                       const std::size_t* extents, std::size_t rank) {
#if defined(__CUDA_ARCH__)
  tensor_trap(what, index, extents, rank);
  __builtin_unreachable();
#else
  throw_tensor_out_of_range(what, index, extents, rank);
#endif
}

/// Fails the kernel (or throws) for a reshape from `from` elements to `to` elements, or of or
/// to a layout that is not contiguous.
[[noreturn]] DEVCTX_HD inline void tensor_bad_reshape(std::size_t from, std::size_t to, bool from_contiguous,
                                                      bool to_contiguous) {
#if defined(__CUDA_ARCH__)
  printf("devctx: tensor reshape of %s%llu elements to %s%llu elements in block (%u, %u, %u), thread (%u, %u, %u)\n",
         from_contiguous ? "" : "a non-contiguous view of ", (unsigned long long)from,
         to_contiguous ? "" : "a non-contiguous layout of ", (unsigned long long)to, blockIdx.x, blockIdx.y, blockIdx.z,
         threadIdx.x, threadIdx.y, threadIdx.z);
  __trap();
  __builtin_unreachable();
#else
  throw_tensor_bad_reshape(from, to, from_contiguous, to_contiguous);
#endif
}
}  // namespace detail

/// A view of memory at `data()` as a rank-1-to-3 tensor with layout L. Cheap to copy; valid while
/// the memory lives. `T` may be const (a read-only view). Kernels take it by value; launch
/// arguments become one as devctx/device_tensor.hpp describes.
///
/// t(i, j) is unchecked, as flat indexing is, unless the program is compiled with
/// DEVCTX_CHECK_BOUNDS: then an index outside the extents fails the kernel with the multi-index
/// and the extents in the message (on the host it throws Error(kernel_failed)). In a checked
/// launch (DEVCTX_CHECK=1, CPU backend) every element access is checked the same way and then
/// goes through checking mode like span[i].
template <class T, class L>
class LayoutTensor {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using layout_type = L;
  static constexpr std::size_t rank = L::rank;

  constexpr LayoutTensor() noexcept = default;
  DEVCTX_HD constexpr LayoutTensor(T* data, const L& layout) noexcept : data_(data), layout_(layout) {}
  /// A tensor over `data` with a fully static layout.
  DEVCTX_HD constexpr explicit LayoutTensor(T* data) noexcept
    requires(L::dynamic_count == 0)
      : data_(data) {}
  /// A contiguous tensor over `data` given the layout's dynamic extents, in dimension order
  /// (throws as L's constructor does when they do not fit in std::size_t).
  template <class... I>
    requires(sizeof...(I) == L::dynamic_count && L::dynamic_count > 0 && (std::is_integral_v<I> && ...))
  DEVCTX_HD constexpr LayoutTensor(T* data, I... dynamic_extents) : data_(data), layout_(dynamic_extents...) {}
  /// LayoutTensor<T, L> converts to LayoutTensor<const T, L>.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  DEVCTX_HD constexpr LayoutTensor(const LayoutTensor<U, L>& other) noexcept
      : data_(other.data()), layout_(other.layout()) {}

  [[nodiscard]] DEVCTX_HD constexpr T* data() const noexcept { return data_; }
  [[nodiscard]] DEVCTX_HD constexpr const L& layout() const noexcept { return layout_; }
  [[nodiscard]] DEVCTX_HD_INLINE constexpr std::size_t extent(std::size_t d) const noexcept {
    return layout_.extent(d);
  }
  [[nodiscard]] DEVCTX_HD_INLINE constexpr std::size_t stride(std::size_t d) const noexcept {
    return layout_.stride(d);
  }
  /// Number of elements.
  [[nodiscard]] DEVCTX_HD constexpr std::size_t size() const noexcept { return layout_.size(); }
  /// Elements of memory the view reaches (see Layout::span_size).
  [[nodiscard]] DEVCTX_HD constexpr std::size_t span_size() const noexcept { return layout_.span_size(); }

  /// Element (i0[, i1[, i2]]); any integral index types.
  template <class... I>
    requires(sizeof...(I) == rank && (std::is_integral_v<I> && ...))
  DEVCTX_HD_INLINE constexpr T& operator()(I... indices) const {
    const std::size_t index[rank] = {std::size_t(indices)...};
#if defined(DEVCTX_CHECK_BOUNDS)
    if (!layout_.contains(index)) [[unlikely]]
      fail("index", index);
#endif
    const std::size_t off = layout_.offset(index);
#if !defined(__CUDA_ARCH__)
    if (!std::is_constant_evaluated() && detail::cpu::in_checked_launch()) [[unlikely]]
      return checked(index, off);
#endif
    return data_[off];
  }

  /// The tile of static extents (TM[, TN[, TK]]) at tile coordinates (bi[, bj[, bk]]): elements
  /// (bi * TM + i, bj * TN + j, ...) of this tensor, with this tensor's strides. The tile must lie
  /// inside the tensor (checked under DEVCTX_CHECK_BOUNDS and in a checked launch, by tile
  /// coordinate: coordinates near 2^64 cannot wrap around into range). Each tile extent is at
  /// least 1 (compile-time check).
  template <std::size_t... TE, class... I>
    requires(sizeof...(TE) == rank && sizeof...(I) == rank && (std::is_integral_v<I> && ...))
  [[nodiscard]] DEVCTX_HD_INLINE constexpr LayoutTensor<T, Layout<L::order, TE...>> tile(I... tile_coords) const {
    static_assert(((TE != 0 && TE != dyn) && ...), "LayoutTensor::tile: each tile extent is a constant of at least 1");
    constexpr std::size_t te[] = {TE...};
    const std::size_t coords[rank] = {std::size_t(tile_coords)...};
    std::size_t origin[rank] = {}, extents[rank] = {}, strides[rank] = {};
    for (std::size_t d = 0; d < rank; ++d) {
      origin[d] = coords[d] * te[d];
      extents[d] = te[d];
      strides[d] = stride(d);
    }
    check_tile(coords, te);
    return {data_ + layout_.offset(origin), Layout<L::order, TE...>::unchecked_parts(extents, strides)};
  }

  /// The same elements under another contiguous layout of equal size (a contiguous tensor only:
  /// not a tile or a strided view). Checked under DEVCTX_CHECK_BOUNDS and in a checked launch.
  template <class L2>
  [[nodiscard]] DEVCTX_HD constexpr LayoutTensor<T, L2> reshape(const L2& layout) const {
    if (checks_on()) [[unlikely]]
      if (!layout_.is_contiguous() || !layout.is_contiguous() || layout.size() != layout_.size())
        detail::tensor_bad_reshape(layout_.size(), layout.size(), layout_.is_contiguous(), layout.is_contiguous());
    return {data_, layout};
  }
  /// reshape() to a fully static layout.
  template <class L2>
    requires(L2::dynamic_count == 0)
  [[nodiscard]] DEVCTX_HD constexpr LayoutTensor<T, L2> reshape() const {
    return reshape(L2{});
  }

  /// A rank-2 tensor with its indices swapped: t.transpose()(j, i) is t(i, j). Row-major becomes
  /// column-major and back (the contiguous dimension stays contiguous).
  [[nodiscard]] DEVCTX_HD constexpr auto transpose() const
    requires(rank == 2)
  {
    constexpr Order o = L::order == Order::row_major   ? Order::col_major
                        : L::order == Order::col_major ? Order::row_major
                                                       : Order::strided;
    using T2 = Layout<o, L::static_extents[1], L::static_extents[0]>;
    const std::size_t extents[2] = {extent(1), extent(0)}, strides[2] = {stride(1), stride(0)};
    return LayoutTensor<T, T2>(data_, T2::unchecked_parts(extents, strides));
  }

 private:
  [[nodiscard]] DEVCTX_HD_INLINE static constexpr bool checks_on() noexcept {
#if defined(DEVCTX_CHECK_BOUNDS)
    return true;
#elif defined(__CUDA_ARCH__)
    return false;
#else
    return !std::is_constant_evaluated() && detail::cpu::in_checked_launch();
#endif
  }
  DEVCTX_HD constexpr void check_tile(const std::size_t (&coords)[rank], const std::size_t (&te)[rank]) const {
    if (checks_on()) [[unlikely]] {
      std::size_t tiles[rank] = {};
      bool in = true;
      for (std::size_t d = 0; d < rank; ++d) {
        // Tile coords[d] lies inside when (coords[d] + 1) * te[d] <= extent(d), that is when
        // coords[d] < extent(d) / te[d]: compared so, no product can wrap around.
        tiles[d] = extent(d) / te[d];
        in &= coords[d] < tiles[d];
      }
      if (!in) fail("tile", coords, tiles);
    }
  }
  [[noreturn]] DEVCTX_HD void fail(const char* what, const std::size_t (&index)[rank]) const {
    std::size_t extents[rank] = {};
    for (std::size_t d = 0; d < rank; ++d) extents[d] = extent(d);
    detail::tensor_out_of_range(what, index, extents, rank);
  }
  [[noreturn]] DEVCTX_HD void fail(const char* what, const std::size_t (&index)[rank],
                                   const std::size_t (&bound)[rank]) const {
    detail::tensor_out_of_range(what, index, bound, rank);
  }
#if !defined(__CUDA_ARCH__)
  T& checked(const std::size_t (&index)[rank], std::size_t off) const {
    if (!layout_.contains(index)) fail("index", index);
    return *static_cast<T*>(
        detail::cpu::checked_span_element(data_, off, layout_.span_size(), sizeof(T), std::is_const_v<T>));
  }
#endif

  T* data_ = nullptr;
  L layout_{};
};

}  // namespace devctx
