// SPDX-License-Identifier: Apache-2.0
// devctx/detail/host/kernel_args.hpp - the one place where launch arguments become kernel
// parameters: buffers become spans, raw pointers (T*, const T*) or, with a layout, tensors;
// scalars pass by value, host memory is rejected at compile time, and argument count and types
// are checked against the kernel's parameters.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/host/kernel_args.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/stream.hpp>) instead"
#endif

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <devctx/buffer.hpp>
#include <devctx/device_tensor.hpp>
#include <devctx/device_view.hpp>
#include <devctx/span.hpp>
#include <devctx/tensor.hpp>

namespace devctx {
class Block;
}

namespace devctx::detail {

// ---- the kernel's signature ------------------------------------------------------------
template <class F>
struct KernelSignature {
  static_assert(sizeof(F) == 0, "enqueue_function<K>: K must be a kernel function (DEVCTX_KERNEL void f(...))");
};
template <class R, class... P>
struct KernelSignature<R (*)(P...)> {
  static_assert(std::is_void_v<R>, "a kernel must return void");
  static constexpr bool block_level = false;
  template <template <class...> class L>
  using params = L<P...>;
};
template <class R, class... P>
struct KernelSignature<R (*)(Block, P...)> {
  static_assert(std::is_void_v<R>, "a kernel must return void");
  static constexpr bool block_level = true;
  template <template <class...> class L>
  using params = L<P...>;
};

// ---- the packed arguments ----------------------------------------------------------------
template <std::size_t I, class T>
struct PackLeaf {
  T value;
};
/// A pointer parameter also keeps how many elements its argument (a buffer, slice, tensor or
/// span) holds from the pointer on, which checking mode treats as a span argument's range.
template <std::size_t I, class T>
  requires std::is_object_v<T>
struct PackLeaf<I, T*> {
  T* value;
  std::size_t reach;
};
template <class Seq, class... P>
struct PackImpl;
template <std::size_t... I, class... P>
struct PackImpl<std::index_sequence<I...>, P...> : PackLeaf<I, P>... {};
/// The kernel's parameters, by value, in one trivially copyable aggregate.
template <class... P>
using ArgPack = PackImpl<std::index_sequence_for<P...>, P...>;

template <std::size_t I, class T>
inline const T& pack_get(const PackLeaf<I, T>& leaf) {
  return leaf.value;
}
template <std::size_t I, class T>
inline T& pack_get(PackLeaf<I, T>& leaf) {
  return leaf.value;
}

// ---- classifying a launch argument ---------------------------------------------------------
template <class T>
struct is_device_buffer : std::false_type {};
template <class T>
struct is_device_buffer<DeviceBuffer<T>> : std::true_type {};
template <class T>
struct is_device_slice : std::false_type {};
template <class T>
struct is_device_slice<DeviceSlice<T>> : std::true_type {};
// A DeviceView passes as a slice does.
template <class T>
struct is_device_slice<DeviceView<T>> : std::true_type {};
template <class T>
struct is_device_view : std::false_type {};
template <class T>
struct is_device_view<DeviceView<T>> : std::true_type {};
template <class T>
struct is_devctx_span : std::false_type {};
template <class T>
struct is_devctx_span<span<T>> : std::true_type {};

template <class T>
struct is_layout_tensor : std::false_type {};
template <class T, class L>
struct is_layout_tensor<LayoutTensor<T, L>> : std::true_type {};
template <class T>
struct is_device_tensor : std::false_type {};
template <class T, class L>
struct is_device_tensor<DeviceTensor<T, L>> : std::true_type {};

template <class T>
struct is_host_memory : std::false_type {};
template <class T>
struct is_host_memory<HostBuffer<T>> : std::true_type {};
template <class T>
struct is_host_memory<HostSlice<T>> : std::true_type {};
template <class T, class A>
struct is_host_memory<std::vector<T, A>> : std::true_type {};
template <class T, std::size_t N>
struct is_host_memory<std::span<T, N>> : std::true_type {};
template <class T, std::size_t N>
struct is_host_memory<std::array<T, N>> : std::true_type {};
template <class T>
struct is_host_memory<T*> : std::true_type {};

/// A kernel parameter that is a pointer to an object type (float*, const Particle*).
template <class P>
inline constexpr bool is_object_pointer_v = std::is_pointer_v<P> && std::is_object_v<std::remove_pointer_t<P>>;

template <class A>
constexpr bool refers_to_buffer = is_device_buffer<std::remove_cvref_t<A>>::value ||
                                  is_device_slice<std::remove_cvref_t<A>>::value;

/// Maps a launch argument (DeviceTensor, or a buffer or slice for a fully static layout, or a
/// LayoutTensor itself) to the kernel's LayoutTensor parameter P.
template <class P, class A>
inline P map_tensor_arg(A&& arg) {
  using D = std::remove_cvref_t<A>;
  using Elem = typename P::element_type;
  using L = typename P::layout_type;
  if constexpr (is_device_tensor<D>::value) {
    using T = typename D::element_type;
    static_assert(std::is_same_v<typename D::layout_type, L>,
                  "the devctx::tensor(buffer, layout) argument's layout type differs from the kernel's "
                  "LayoutTensor<T, L> parameter");
    static_assert(std::is_same_v<std::remove_const_t<Elem>, std::remove_const_t<T>>,
                  "the tensor's element type differs from the kernel's LayoutTensor<T, L> parameter");
    static_assert(std::is_const_v<Elem> || !std::is_const_v<T>,
                  "a read-only tensor (of a const buffer) was passed where the kernel writes "
                  "(LayoutTensor<T, L>): take LayoutTensor<const T, L> in the kernel");
    return P(arg.view());
  } else if constexpr (is_device_buffer<D>::value || is_device_slice<D>::value) {
    static_assert(L::dynamic_count == 0,
                  "a DeviceBuffer or slice was passed where the kernel takes a LayoutTensor whose "
                  "layout has dynamic extents: pass devctx::tensor(buffer, layout) to give them");
    using T = std::remove_reference_t<decltype(*arg.data())>;
    static_assert(std::is_same_v<std::remove_const_t<Elem>, std::remove_const_t<T>>,
                  "the buffer's element type differs from the kernel's LayoutTensor<T, L> parameter");
    if constexpr (is_device_buffer<D>::value)
      static_assert(std::is_const_v<Elem> || !std::is_const_v<std::remove_reference_t<A>>,
                    "a const DeviceBuffer was passed where the kernel writes (LayoutTensor<T, L>): take "
                    "LayoutTensor<const T, L> in the kernel or pass a non-const buffer");
    else
      static_assert(std::is_const_v<Elem> || !std::is_const_v<T>,
                    "a read-only slice was passed where the kernel writes (LayoutTensor<T, L>)");
    const L layout{};
    check_tensor_fits(is_device_buffer<D>::value ? "a device buffer" : "a slice", layout, arg.size());
    return P(arg.data(), layout);
  } else {
    static_assert(is_layout_tensor<D>::value,
                  "the kernel's parameter is a devctx::LayoutTensor<T, L>: pass devctx::tensor(buffer, "
                  "layout) (or, for a fully static layout, the buffer itself)");
    static_assert(std::is_constructible_v<P, A&&>,
                  "a LayoutTensor argument's element or layout type differs from the kernel's parameter");
    return P(std::forward<A>(arg));
  }
}

/// Maps a launch argument (a DeviceBuffer, slice, DeviceView, DeviceTensor or devctx::span) to
/// the kernel's pointer parameter P (T* or const T*): the address of its first element, with
/// the const rules of span<T> parameters.
template <class P, class A>
inline P map_pointer_arg(A&& arg) {
  using D = std::remove_cvref_t<A>;
  using Elem = std::remove_pointer_t<P>;
  if constexpr (is_device_buffer<D>::value) {
    using T = std::remove_reference_t<decltype(*arg.data())>;
    static_assert(std::is_same_v<std::remove_cv_t<Elem>, std::remove_cv_t<T>>,
                  "the buffer's element type differs from the kernel's T* parameter");
    static_assert(std::is_const_v<Elem> || !std::is_const_v<std::remove_reference_t<A>>,
                  "a const DeviceBuffer was passed where the kernel writes (T*): take const T* in the "
                  "kernel or pass a non-const buffer");
    return arg.data();
  } else if constexpr (is_device_slice<D>::value || is_devctx_span<D>::value || is_device_tensor<D>::value) {
    auto* data = [&] {
      if constexpr (is_device_tensor<D>::value)
        return arg.slice().data();
      else
        return arg.data();
    }();
    using T = std::remove_pointer_t<decltype(data)>;
    static_assert(std::is_same_v<std::remove_cv_t<Elem>, std::remove_cv_t<T>>,
                  "the argument's element type differs from the kernel's T* parameter");
    static_assert(std::is_const_v<Elem> || !std::is_const_v<T>,
                  "a read-only slice, view, span or tensor (of const elements) was passed where the "
                  "kernel writes (T*): take const T* in the kernel");
    return data;
  } else {
    static_assert(sizeof(D) == 0,
                  "the kernel's parameter is a pointer (T*): pass a DeviceBuffer<T>, one of its slices, "
                  "a DeviceView, devctx::tensor(...) or a devctx::span<T> (or nullptr)");
    return nullptr;
  }
}

/// How many elements a pointer argument reaches from its first (checking mode's range for it).
template <class A>
inline std::size_t pointer_reach(const A& arg) {
  using D = std::remove_cvref_t<A>;
  if constexpr (is_device_tensor<D>::value)
    return arg.layout().span_size();
  else if constexpr (is_device_buffer<D>::value || is_device_slice<D>::value || is_devctx_span<D>::value)
    return arg.size();
  else
    return 0;
}

/// Maps launch argument number I (type A) to kernel parameter type P.
template <std::size_t I, class P, class A>
inline P map_arg(A&& arg) {
  using D = std::remove_cvref_t<A>;
  static_assert(!std::is_reference_v<P>,
                "kernel parameters must be taken by value (devctx::span<T>, scalars, trivially "
                "copyable structs); references to host objects cannot reach the device");
  static_assert(std::is_trivially_copyable_v<P>,
                "kernel parameters must be trivially copyable: they are copied to the device");
  static_assert(!is_host_memory<D>::value,
                "a kernel argument is host memory (HostBuffer, std::vector, std::span, std::array "
                "or a raw pointer, which carries no buffer devctx can check): kernels cannot read host "
                "memory. Copy the data to a DeviceBuffer with enqueue_copy first and pass the "
                "DeviceBuffer (or a slice of it), also where the kernel takes a T* parameter.");
  if constexpr (is_layout_tensor<P>::value) {
    return map_tensor_arg<P>(std::forward<A>(arg));
  } else if constexpr (is_object_pointer_v<P> && !std::is_null_pointer_v<D>) {
    return map_pointer_arg<P>(std::forward<A>(arg));
  } else if constexpr (is_device_buffer<D>::value || is_device_slice<D>::value) {
    static_assert(is_devctx_span<P>::value,
                  "a DeviceBuffer or slice was passed where the kernel's parameter is not a "
                  "devctx::span<T> or a pointer (T*)");
    using Elem = typename P::element_type;
    if constexpr (is_device_buffer<D>::value) {
      using T = std::remove_const_t<decltype(*arg.data())>;
      constexpr bool const_arg = std::is_const_v<std::remove_reference_t<A>>;
      static_assert(std::is_same_v<std::remove_const_t<Elem>, std::remove_cvref_t<T>>,
                    "the buffer's element type differs from the kernel's span<T> parameter");
      static_assert(std::is_const_v<Elem> || !const_arg,
                    "a const DeviceBuffer was passed where the kernel writes (span<T>): take "
                    "span<const T> in the kernel or pass a non-const buffer");
      return P(arg.data(), arg.size());
    } else {
      using T = std::remove_pointer_t<decltype(arg.data())>;
      static_assert(std::is_same_v<std::remove_const_t<Elem>, std::remove_const_t<T>>,
                    "the slice's element type differs from the kernel's span<T> parameter");
      static_assert(std::is_const_v<Elem> || !std::is_const_v<T>,
                    "a read-only slice was passed where the kernel writes (span<T>)");
      return P(arg.data(), arg.size());
    }
  } else {
    static_assert(!is_device_tensor<D>::value,
                  "a devctx::tensor(buffer, layout) was passed where the kernel's parameter is not a "
                  "devctx::LayoutTensor<T, L>");
    static_assert(!is_devctx_span<P>::value || is_devctx_span<D>::value,
                  "the kernel's parameter is a devctx::span<T>: pass a DeviceBuffer<T> or one of "
                  "its slices");
    static_assert(std::is_constructible_v<P, A&&>, "a kernel argument cannot be converted to the kernel's parameter type");
    return P(std::forward<A>(arg));
  }
}

/// Kernel parameter number I (type P) made from launch argument `arg`, as stored in the ArgPack.
template <std::size_t I, class P, class A>
inline PackLeaf<I, P> make_leaf(A&& arg) {
  if constexpr (is_object_pointer_v<P>) {
    const std::size_t reach = pointer_reach(arg);
    return {map_arg<I, P>(std::forward<A>(arg)), reach};
  } else {
    return {map_arg<I, P>(std::forward<A>(arg))};
  }
}

template <class... A>
inline constexpr bool any_span_v =
    ((is_devctx_span<std::remove_cvref_t<A>>::value || is_layout_tensor<std::remove_cvref_t<A>>::value) || ...);

/// A span (or LayoutTensor) argument's data and the bytes it reaches (null / 0 for every other
/// argument).
template <class A>
const void* span_data_of(const A& arg) {
  if constexpr (is_devctx_span<std::remove_cvref_t<A>>::value || is_layout_tensor<std::remove_cvref_t<A>>::value)
    return arg.data();
  else
    return nullptr;
}
template <class A>
std::size_t span_bytes_of(const A& arg) {
  if constexpr (is_devctx_span<std::remove_cvref_t<A>>::value)
    return arg.size_bytes();
  else if constexpr (is_layout_tensor<std::remove_cvref_t<A>>::value)
    return arg.span_size() * sizeof(typename std::remove_cvref_t<A>::element_type);
  else
    return 0;
}

template <class A>
Allocation* buffer_of(const A& arg) {
  using D = std::remove_cvref_t<A>;
  if constexpr (is_device_buffer<D>::value)
    return arg.as_slice().allocation();
  else if constexpr (is_device_view<D>::value)
    return arg.as_slice().allocation();  // throws when moved-from
  else if constexpr (is_device_slice<D>::value)
    return arg.allocation();
  else if constexpr (is_device_tensor<D>::value)
    return arg.slice().allocation();
  else
    return nullptr;
}

}  // namespace devctx::detail
