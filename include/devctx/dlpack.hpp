// SPDX-License-Identifier: Apache-2.0
// devctx/dlpack.hpp - DLPack: handing devctx memory to other frameworks as DLPack tensors, and
// using theirs in devctx without a copy. Include it only where needed: it includes
// <dlpack/dlpack.h> (Debian: libdlpack-dev), which <devctx/devctx.hpp> does not need.
//
// Two forms of the managed tensor exist. DLManagedTensor is the unversioned one every DLPack
// header declares (Debian 12 ships DLPack 0.6). DLManagedTensorVersioned came with DLPack 1.0
// and adds a version and flags (read-only, is-copied); with a DLPack 1.x header devctx uses the
// header's type, with an older one it declares the same layout itself, from the DLPack 1.0
// specification (dlpack::ManagedTensorVersioned). Both are supported in both directions.
//
// Export (to_dlpack, to_dlpack_versioned): a new tensor over a DeviceBuffer, HostBuffer, a slice
// of either or a DeviceView, one-dimensional unless a row-major shape is given, with explicit
// compact strides, and the device type of the memory: kDLCUDA (device_id = the CUDA ordinal) for
// device memory on a CUDA device, kDLCUDAHost for a HostBuffer there, kDLCPU for everything on
// the CPU backend. The tensor owns `owner` (the buffer itself, moved in, or anything that keeps
// the memory alive) until its consumer calls the deleter. Nothing is synchronized: the consumer
// must order its work after devctx's (an event, or synchronize()).
//
// Import (from_dlpack): a DeviceView over the tensor's memory, which must be on the stream's
// device (kDLCUDA with the same ordinal, kDLCUDAManaged, or on the CPU backend kDLCPU,
// kDLCUDAHost or kDLCUDAManaged), contiguous in row-major order, of T's data type. The view
// takes the tensor over only when it is made: if from_dlpack throws, the caller still owns it.
// When the view is dropped, the tensor's deleter runs once devctx's work on the memory has
// finished (wrap_device_memory's rule), so the producer stays alive until then.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <devctx/backend.hpp>
#include <devctx/buffer.hpp>
#include <devctx/device_view.hpp>
#include <devctx/error.hpp>
#include <devctx/interop.hpp>
#include <devctx/stream.hpp>

namespace devctx {

namespace dlpack {

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
using Version = ::DLPackVersion;
using ManagedTensorVersioned = ::DLManagedTensorVersioned;
#else
/// DLPackVersion of DLPack 1.0.
struct Version {
  std::uint32_t major;
  std::uint32_t minor;
};
/// DLManagedTensorVersioned of DLPack 1.0, field for field.
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};
#endif

/// The versioned tensor's flags (DLPack 1.0): the consumer must not write the memory; the
/// producer made a copy for this export.
inline constexpr std::uint64_t flag_read_only = std::uint64_t{1} << 0;
inline constexpr std::uint64_t flag_is_copied = std::uint64_t{1} << 1;
/// The version devctx writes into the tensors it exports, and the newest major it reads.
inline constexpr std::uint32_t major_version = 1;
inline constexpr std::uint32_t minor_version = 0;
/// kDLBool's type code (DLPack 0.8 and later; older headers lack the name).
inline constexpr std::uint8_t code_bool = 6;

/// The DLPack data type of T: bool, signed and unsigned integers, float, double.
template <class T>
constexpr DLDataType data_type() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_same_v<U, bool> || std::is_integral_v<U> || std::is_same_v<U, float> || std::is_same_v<U, double>,
                "DLPack: devctx exchanges bool, integer, float and double elements");
  DLDataType t{};
  t.bits = std::uint8_t(8 * sizeof(U));
  t.lanes = 1;
  if constexpr (std::is_same_v<U, bool>)
    t.code = code_bool;
  else if constexpr (std::is_floating_point_v<U>)
    t.code = std::uint8_t(kDLFloat);
  else if constexpr (std::is_signed_v<U>)
    t.code = std::uint8_t(kDLInt);
  else
    t.code = std::uint8_t(kDLUInt);
  return t;
}

/// "float32", "int64", "uint8", "bool", for messages.
inline std::string type_name(const DLDataType& t) {
  std::string name;
  switch (t.code) {
    case kDLInt: name = "int"; break;
    case kDLUInt: name = "uint"; break;
    case kDLFloat: name = "float"; break;
    case kDLBfloat: name = "bfloat"; break;
    case kDLComplex: name = "complex"; break;
    case code_bool: return t.lanes == 1 && t.bits == 8 ? "bool" : "bool" + std::to_string(t.bits);
    default: name = "type code " + std::to_string(t.code) + " of ";
  }
  name += std::to_string(t.bits);
  if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
  return name;
}

/// "kDLCUDA:1", for messages.
inline std::string device_name(const DLDevice& d) {
  const char* type = "device type ";
  switch (d.device_type) {
    case kDLCPU: type = "kDLCPU"; break;
    case kDLCUDA: type = "kDLCUDA"; break;
    case kDLCUDAHost: type = "kDLCUDAHost"; break;
    case kDLCUDAManaged: type = "kDLCUDAManaged"; break;
    case kDLROCM: type = "kDLROCM"; break;
    default: return type + std::to_string(int(d.device_type)) + ":" + std::to_string(d.device_id);
  }
  return std::string(type) + ":" + std::to_string(d.device_id);
}

}  // namespace dlpack

namespace detail {

template <class X>
struct is_device_side : std::false_type {};
template <class T>
struct is_device_side<DeviceBuffer<T>> : std::true_type {};
template <class T>
struct is_device_side<DeviceSlice<T>> : std::true_type {};
template <class T>
struct is_device_side<DeviceView<T>> : std::true_type {};
template <class X>
struct is_host_side : std::false_type {};
template <class T>
struct is_host_side<HostBuffer<T>> : std::true_type {};
template <class T>
struct is_host_side<HostSlice<T>> : std::true_type {};

/// The memory an exported tensor describes: its first element, count, element type, place.
struct ExportedMemory {
  void* data;
  std::size_t count;
  DLDataType type;
  DLDevice device;
  bool read_only;
};

template <class T>
DeviceSlice<T> whole(const DeviceSlice<T>& s) {
  return s;
}
template <class T>
HostSlice<T> whole(const HostSlice<T>& s) {
  return s;
}
template <class View>
auto whole(const View& v) {
  return v.as_slice();
}  // throws invalid_handle when moved-from

/// What may be passed as a tensor's owner: anything movable but a shape.
template <class Owner>
concept TensorOwner = !std::is_convertible_v<Owner, std::span<const std::int64_t>>;

template <class View>
ExportedMemory exported_memory(const View& view) {
  const auto slice = whole(view);
  using T = std::remove_pointer_t<decltype(slice.data())>;
  const DeviceInfo& info = allocation_device_info(*slice.allocation());
  const Backend& backend = devctx::backend(info.api);
  DLDevice device{DLDeviceType(backend.dlpack_host_device_type), 0};
  if constexpr (is_device_side<View>::value)
    device = DLDevice{DLDeviceType(backend.dlpack_device_type), backend.has_device_memory ? info.id : 0};
  return {const_cast<std::remove_const_t<T>*>(slice.data()), slice.size(), dlpack::data_type<T>(), device,
          std::is_const_v<T>};
}

/// An exported tensor and everything it owns, freed by its deleter.
template <class Managed, class Owner>
struct Export {
  Managed managed{};
  Owner owner;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;

  static void deleter(Managed* self) noexcept { delete static_cast<Export*>(self->manager_ctx); }
};

template <class Managed, class View, class Owner>
Managed* make_export(const View& view, Owner&& owner, std::span<const std::int64_t> shape) {
  static_assert(is_device_side<View>::value || is_host_side<View>::value,
                "to_dlpack: export a DeviceBuffer, HostBuffer, a slice of either, or a DeviceView");
  const ExportedMemory m = exported_memory(view);
  std::vector<std::int64_t> dims(shape.begin(), shape.end());
  if (dims.empty()) {
    if (m.count > std::size_t(std::numeric_limits<std::int64_t>::max()))
      throw Error(Errc::invalid_argument,
                  "to_dlpack: " + std::to_string(m.count) + " elements do not fit DLPack's int64 shape");
    dims.push_back(std::int64_t(m.count));
  }
  // Row-major: the product of the shape must be the element count.
  std::size_t product = 1;
  bool fits = true;
  for (const std::int64_t d : dims) {
    if (d < 0 || (d != 0 && product > std::numeric_limits<std::size_t>::max() / std::size_t(d)))
      fits = false;
    else
      product *= std::size_t(d);
  }
  if (!fits || product != m.count) {
    std::string text;
    for (const std::int64_t d : dims) text += (text.empty() ? "" : ", ") + std::to_string(d);
    throw Error(Errc::size_mismatch, "to_dlpack: the shape (" + text + ") does not hold the " + std::to_string(m.count) +
                                         " elements exported; its dimensions (non-negative) must multiply to that count");
  }
  auto* e = new Export<Managed, std::decay_t<Owner>>{{}, std::forward<Owner>(owner), std::move(dims), {}};
  e->strides.assign(e->shape.size(), 1);
  for (std::size_t i = e->shape.size(); i-- > 1;)
    e->strides[i - 1] = e->strides[i] * std::max<std::int64_t>(e->shape[i], 1);
  DLTensor& t = e->managed.dl_tensor;
  t.data = m.data;
  t.device = m.device;
  t.ndim = int(e->shape.size());
  t.dtype = m.type;
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = &Export<Managed, std::decay_t<Owner>>::deleter;
  if constexpr (std::is_same_v<Managed, dlpack::ManagedTensorVersioned>) {
    e->managed.version = {dlpack::major_version, dlpack::minor_version};
    e->managed.flags = m.read_only ? dlpack::flag_read_only : 0;
  }
  return &e->managed;
}

/// Checks an imported tensor against T and `stream`'s device; returns its first element and
/// element count. Throws devctx::Error naming what does not fit; takes nothing over.
template <class T>
std::pair<T*, std::size_t> import_range(const StreamRef& stream, const DLTensor& t, bool read_only) {
  const DeviceInfo& info = device_info(stream);
  const std::string where = "from_dlpack on " + std::string(to_string(info.api)) + ":" + std::to_string(info.id) +
                            ": the tensor (" + dlpack::device_name(t.device) + ", " + dlpack::type_name(t.dtype) + ") ";
  const Backend& backend = devctx::backend(info.api);
  const std::int32_t type = t.device.device_type;
  // Memory the host reads: its own, or any backend's host memory or memory shared with the host.
  const auto host_readable = [](std::int32_t device_type) {
    if (device_type == kDLCPU) return true;
    for (const Backend* b : backends())
      if (device_type == b->dlpack_host_device_type || device_type == b->dlpack_managed_device_type) return true;
    return false;
  };
  if (backend.has_device_memory) {
    const std::string device = std::string(backend.name) + " device";
    const bool own = type == backend.dlpack_device_type;
    if (own && t.device.device_id != info.id)
      throw Error(Errc::wrong_device, where + "is on another " + device + "; import it with a context on " + device +
                                          " " + std::to_string(t.device.device_id));
    if (!own && type != backend.dlpack_managed_device_type) {
      if (host_readable(type))
        throw Error(Errc::invalid_argument, where +
                                                "is in host memory, which kernels cannot read; copy it to a "
                                                "DeviceBuffer with enqueue_copy from a std::span over it");
      throw Error(Errc::wrong_device, where + "is not memory of a " + device);
    }
  } else if (!host_readable(type)) {
    throw Error(Errc::wrong_device, where + "is not in host memory, the " + std::string(backend.name) +
                                        " backend's device memory; import it with a context on its device");
  }
  const DLDataType want = dlpack::data_type<T>();
  if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes)
    throw Error(Errc::invalid_argument,
                where + "does not hold " + dlpack::type_name(want) + " elements, the view's element type");
  if (read_only && !std::is_const_v<T>)
    throw Error(Errc::invalid_argument,
                where + "is read-only (DLPack's read-only flag): import it as a DeviceView<const T>");
  if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr))
    throw Error(Errc::invalid_argument, where + "has a malformed shape (ndim " + std::to_string(t.ndim) + ")");
  std::size_t count = 1;
  for (int d = 0; d < t.ndim; ++d) {
    const std::int64_t n = t.shape[d];
    if (n < 0 || (n != 0 && count > std::numeric_limits<std::size_t>::max() / sizeof(T) / std::size_t(n)))
      throw Error(Errc::invalid_argument,
                  where + "has a malformed shape (dimension " + std::to_string(d) + " is " + std::to_string(n) + ")");
    count *= std::size_t(n);
  }
  // Contiguous in row-major order; the stride of a dimension of extent 1 does not matter.
  if (t.strides != nullptr && count > 0) {
    std::int64_t expected = 1;
    for (int d = t.ndim; d-- > 0;) {
      if (t.shape[d] != 1 && t.strides[d] != expected)
        throw Error(Errc::invalid_argument, where + "is not contiguous in row-major order (dimension " +
                                                std::to_string(d) + " has stride " + std::to_string(t.strides[d]) +
                                                ", " + std::to_string(expected) +
                                                " expected); make a contiguous copy first (e.g. .contiguous())");
      expected *= t.shape[d];
    }
  }
  auto* data = reinterpret_cast<T*>(static_cast<std::byte*>(t.data) + t.byte_offset);
  return {count == 0 ? nullptr : data, count};
}

}  // namespace detail

/// A DLManagedTensor over `view` (a DeviceBuffer, HostBuffer, a slice of either, or a
/// DeviceView) that owns `owner` until the consumer calls its deleter: pass what keeps the
/// memory alive (a std::shared_ptr to the buffer, say). `shape`: row-major dimensions whose
/// product is view.size(); empty gives one dimension. Throws devctx::Error (size_mismatch)
/// for a shape that does not fit, (invalid_handle) for a moved-from buffer or view.
template <class View, detail::TensorOwner Owner>
[[nodiscard]] DLManagedTensor* to_dlpack(const View& view, Owner&& owner, std::span<const std::int64_t> shape = {}) {
  return detail::make_export<DLManagedTensor>(view, std::forward<Owner>(owner), shape);
}

/// The same as a DLPack 1.0 versioned tensor (read-only flag set for a view of const elements).
template <class View, detail::TensorOwner Owner>
[[nodiscard]] dlpack::ManagedTensorVersioned* to_dlpack_versioned(const View& view, Owner&& owner,
                                                                  std::span<const std::int64_t> shape = {}) {
  return detail::make_export<dlpack::ManagedTensorVersioned>(view, std::forward<Owner>(owner), shape);
}

/// A tensor that owns `buffer` (moved in): the consumer's deleter frees it in stream order.
template <class T>
[[nodiscard]] DLManagedTensor* to_dlpack(DeviceBuffer<T>&& buffer, std::span<const std::int64_t> shape = {}) {
  const DeviceSlice<T> all = buffer.as_slice();
  return to_dlpack(all, std::move(buffer), shape);
}
template <class T>
[[nodiscard]] DLManagedTensor* to_dlpack(HostBuffer<T>&& buffer, std::span<const std::int64_t> shape = {}) {
  const HostSlice<T> all = buffer.as_slice();
  return to_dlpack(all, std::move(buffer), shape);
}
template <class T>
[[nodiscard]] dlpack::ManagedTensorVersioned* to_dlpack_versioned(DeviceBuffer<T>&& buffer,
                                                                  std::span<const std::int64_t> shape = {}) {
  const DeviceSlice<T> all = buffer.as_slice();
  return to_dlpack_versioned(all, std::move(buffer), shape);
}
template <class T>
[[nodiscard]] dlpack::ManagedTensorVersioned* to_dlpack_versioned(HostBuffer<T>&& buffer,
                                                                  std::span<const std::int64_t> shape = {}) {
  const HostSlice<T> all = buffer.as_slice();
  return to_dlpack_versioned(all, std::move(buffer), shape);
}

/// A DeviceView of the tensor's elements on `stream`'s device (see the top of this file for
/// what is accepted). Takes `tensor` over on success: its deleter runs, in stream order, when
/// the view is dropped. On failure throws devctx::Error naming what does not fit and the
/// caller still owns the tensor.
template <class T>
[[nodiscard]] DeviceView<T> from_dlpack(const StreamRef& stream, DLManagedTensor* tensor) {
  if (tensor == nullptr) throw Error(Errc::invalid_argument, "from_dlpack: the tensor is null");
  const auto [data, count] = detail::import_range<T>(stream, tensor->dl_tensor, false);
  std::function<void()> release;
  if (tensor->deleter != nullptr) release = [tensor] { tensor->deleter(tensor); };
  return wrap_device_memory(stream, data, count, std::move(release));
}

template <class T>
[[nodiscard]] DeviceView<T> from_dlpack(const StreamRef& stream, dlpack::ManagedTensorVersioned* tensor) {
  if (tensor == nullptr) throw Error(Errc::invalid_argument, "from_dlpack: the tensor is null");
  if (tensor->version.major > dlpack::major_version)
    throw Error(Errc::invalid_argument, "from_dlpack: the tensor is of DLPack " + std::to_string(tensor->version.major) +
                                            "." + std::to_string(tensor->version.minor) + "; devctx reads major version " +
                                            std::to_string(dlpack::major_version) + " at most");
  const auto [data, count] = detail::import_range<T>(stream, tensor->dl_tensor,
                                                     (tensor->flags & dlpack::flag_read_only) != 0);
  std::function<void()> release;
  if (tensor->deleter != nullptr) release = [tensor] { tensor->deleter(tensor); };
  return wrap_device_memory(stream, data, count, std::move(release));
}

}  // namespace devctx
