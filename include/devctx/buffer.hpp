// SPDX-License-Identifier: Apache-2.0
// devctx/buffer.hpp - device and host buffers, and their slices.
//
// Ownership: DeviceBuffer and HostBuffer own their memory and are move-only. Their destructor
// never blocks and never throws: it frees in stream order, after all work already enqueued on
// every stream that used the buffer, so dropping a buffer right after enqueueing work that uses
// it is safe. A moved-from buffer is empty; using it throws devctx::Error (invalid_handle).
// Both hold a devctx::Buffer (devctx/untyped_buffer.hpp), the untyped owner of the bytes, and
// convert to and from it (DeviceBuffer<T>(std::move(bytes)), take_buffer()).
// Slices (DeviceSlice, HostSlice) are non-owning views, valid while their buffer lives; they are
// made only from buffers (slice(), as_slice(), or DeviceSlice<T>(bytes) over a Buffer).
// Each buffer and slice also has Mojo's verbs on its own stream (enqueue_copy_to,
// enqueue_copy_from, enqueue_fill, map_to_host; see detail::BufferVerbs, defined in
// devctx/detail/host/buffer_verbs.hpp, which devctx/stream.hpp includes) and typed views
// (view_as<U>).
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include <devctx/detail/base/checked_size.hpp>
#include <devctx/detail/base/seam.hpp>
#include <devctx/span.hpp>
#include <devctx/untyped_buffer.hpp>

namespace devctx {

template <class T>
class DeviceBuffer;
template <class T>
class HostBuffer;
namespace detail {
/// What enqueue_copy reads of a HostBuffer or HostSlice: its address without the host-access
/// check (enqueueing more work on a buffer is not touching it).
struct HostRaw {
  template <class S>
  [[nodiscard]] static auto* data(const S& s) noexcept {
    return s.data_;
  }
};

/// A typed buffer's release(): its Buffer's, counted in elements of T.
template <class T>
ReleasedBuffer<T> release_buffer(Buffer& bytes, T*& data, std::size_t& size, const char* what) {
  if (!bytes) throw_invalid_handle(what);
  const ReleasedBuffer<std::byte> raw = bytes.release();
  ReleasedBuffer<T> out{data, size, raw.owner, raw.free};
  data = nullptr;
  size = 0;
  return out;
}

inline void check_slice(const char* what, std::size_t offset, std::size_t count, std::size_t size) {
  const auto end = checked_add(offset, count);
  if (!end || *end > size) throw_slice_out_of_range(what, offset, count, size);
}

/// `data` and `count` elements of `From` seen as elements of `To`: checks that the bytes are a
/// whole number of `To`s and that `data` is aligned for `To` (Error size_mismatch otherwise).
template <class To, class From>
To* view_data(const char* what, From* data, std::size_t count) {
  static_assert(std::is_trivially_copyable_v<To>, "view_as<U>: U must be trivially copyable");
  static_assert(std::is_const_v<To> || !std::is_const_v<From>, "view_as<U>: a read-only slice gives read-only views");
  const std::size_t bytes = count * sizeof(From);  // no overflow: the memory exists
  if (bytes % sizeof(To) != 0 || reinterpret_cast<std::uintptr_t>(data) % alignof(To) != 0)
    throw_bad_view(what, data, bytes, sizeof(From), sizeof(To), alignof(To));
  return reinterpret_cast<To*>(data);
}

/// `bytes` seen as elements of T for `what` (a typed buffer or slice made from a Buffer): checks
/// that its memory is of the kind wanted (device or host; Error(invalid_argument)), that it is a
/// whole number of Ts and aligned for T (Error(size_mismatch)); throws Error(invalid_handle) for
/// an empty Buffer. Returns the element count.
template <class T>
std::size_t typed_count(const char* what, const Buffer& bytes, bool device) {
  if ((bytes.kind() == MemoryKind::device) != device) throw_wrong_memory_kind(what, device);
  (void)view_data<T>(what, static_cast<std::byte*>(bytes.data()), bytes.size_bytes());
  return bytes.size_bytes() / sizeof(T);
}

/// Whether map_to_host(f) gives `f` a read-only view: when `f` takes std::span<const T>. A
/// generic lambda's parameter type cannot be seen without instantiating its body (which may
/// write), so it gets the mutable view.
template <class F, class T>
constexpr bool maps_read_only() {
  using C = std::remove_cvref_t<F>;
  if constexpr (std::is_class_v<C>) {
    if constexpr (requires { &C::operator(); })
      return std::is_invocable_v<F&, std::span<const T>>;
    else
      return false;
  } else {
    return std::is_invocable_v<F&, std::span<const T>>;
  }
}

/// The verbs a buffer or slice enqueues on its own stream: the stream that created the buffer
/// (Mojo's DeviceBuffer / HostBuffer methods). Declared here, defined in
/// devctx/detail/host/buffer_verbs.hpp, which devctx/stream.hpp includes once StreamRef is
/// complete (so this header needs nothing of stream.hpp).
template <class Self>
class BufferVerbs {
 public:
  /// Copies this buffer or slice into `dst` on its own stream: `stream.enqueue_copy(dst, *this)`,
  /// with the same rules and errors. Returns at once unless `dst` is ordinary host memory.
  template <class Dst>
  void enqueue_copy_to(Dst&& dst) const;
  /// Copies `src` into this buffer or slice on its own stream: `stream.enqueue_copy(*this, src)`.
  template <class Src>
  void enqueue_copy_from(Src&& src);
  template <class Src>
  void enqueue_copy_from(Src&& src) const;
  /// Sets every element to `value` on its own stream: `stream.enqueue_memset(*this, value)`.
  template <class V>
  void enqueue_fill(const V& value);
  template <class V>
  void enqueue_fill(const V& value) const;

  /// Device buffers and slices only. Calls `f` with a host copy of the contents and returns what
  /// `f` returns. Blocks: on the buffer's own stream it copies the contents down and
  /// synchronizes (so `f` sees all work enqueued there before the call; work of other streams
  /// must be ordered before it with an event, as for any verb), then calls `f`. When `f` takes
  /// `std::span<T>` (a mutable view; also when `f` is a generic lambda, whose parameter type
  /// cannot be seen), the host copy is then copied back and the stream synchronized again; when
  /// `f` takes `std::span<const T>`, nothing is copied back. Errors of the stream's earlier
  /// work and of the copies are thrown as devctx::Error; an exception from `f` propagates and
  /// nothing is copied back. The view is valid only during the call. A const buffer or a slice
  /// of const elements needs an `f` that takes std::span<const T>.
  template <class F>
  auto map_to_host(F&& f);
  template <class F>
  auto map_to_host(F&& f) const;

 private:
  [[nodiscard]] Self& self() noexcept { return static_cast<Self&>(*this); }
  [[nodiscard]] const Self& self() const noexcept { return static_cast<const Self&>(*this); }
  template <class S, class F>
  static auto map(S& buffer, F&& f);
};
}  // namespace detail

/// A non-owning view of part of a DeviceBuffer. Usable wherever the buffer is: copies, memset,
/// kernel arguments (where it becomes span<T>). `T` may be const (slices of const buffers).
template <class T>
class DeviceSlice : public detail::BufferVerbs<DeviceSlice<T>> {
 public:
  /// The whole of `bytes` (device memory) as elements of T. Throws devctx::Error
  /// (invalid_argument) for host memory, (size_mismatch) when the bytes are not a whole number of
  /// Ts or not aligned for T, (invalid_handle) for an empty Buffer. Valid while the memory lives.
  explicit DeviceSlice(Buffer& bytes)
      : DeviceSlice(detail::Access::record(bytes), static_cast<T*>(bytes.data()),
                    detail::typed_count<T>("DeviceSlice<T>(Buffer&)", bytes, true)) {}
  /// The same, read-only, from a const Buffer (DeviceSlice<const T> only).
  explicit DeviceSlice(const Buffer& bytes)
    requires std::is_const_v<T>
      : DeviceSlice(detail::Access::record(bytes), static_cast<T*>(bytes.data()),
                    detail::typed_count<T>("DeviceSlice<T>(const Buffer&)", bytes, true)) {}
  /// DeviceSlice<T> converts to DeviceSlice<const T>.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  DeviceSlice(const DeviceSlice<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : allocation_(other.allocation()), data_(other.data()), size_(other.size()) {}

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// Device address of the first element (not dereferenceable on the host with CUDA).
  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] DeviceSlice slice(std::size_t offset, std::size_t count) const {
    detail::check_slice("DeviceSlice::slice", offset, count, size_);
    return DeviceSlice(allocation_, data_ + offset, count);
  }
  /// The kernel's view of this slice.
  [[nodiscard]] devctx::span<T> span() const noexcept { return {data_, size_}; }
  [[nodiscard]] detail::Allocation* allocation() const noexcept { return allocation_; }
  [[nodiscard]] DeviceSlice as_slice() const noexcept { return *this; }
  /// The same bytes as elements of `U` (trivially copyable; const when this slice is). Throws
  /// devctx::Error (size_mismatch) naming the sizes when the bytes are not a whole number of
  /// `U`s or the first element is not aligned for `U`.
  template <class U>
  [[nodiscard]] DeviceSlice<std::conditional_t<std::is_const_v<T>, const U, U>> view_as() const {
    using V = std::conditional_t<std::is_const_v<T>, const U, U>;
    V* data = detail::view_data<V>("DeviceSlice::view_as", data_, size_);
    return DeviceSlice<V>(allocation_, data, size_bytes() / sizeof(U));
  }

 private:
  template <class>
  friend class DeviceSlice;
  friend struct detail::Access;
  DeviceSlice(detail::Allocation* allocation, T* data, std::size_t size) noexcept
      : allocation_(allocation), data_(data), size_(size) {}

  detail::Allocation* allocation_;
  T* data_;
  std::size_t size_;
};

/// `size()` elements of T in a device's memory. Created by enqueue_create_buffer<T>(n);
/// becomes devctx::span<T> when passed to a kernel (span<const T> when the buffer is const).
/// Contents are uninitialised until written (copy, memset or kernel).
template <class T>
class DeviceBuffer : public detail::BufferVerbs<DeviceBuffer<T>> {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "DeviceBuffer<T> holds trivially copyable, non-const element types");

 public:
  /// An empty buffer (size 0, no device). Assign a real one to use it.
  DeviceBuffer() noexcept = default;
  /// Takes over `bytes` (device memory) as elements of T. Throws devctx::Error
  /// (invalid_argument) for host memory, (size_mismatch) when the bytes are not a whole number of
  /// Ts or not aligned for T, (invalid_handle) for an empty Buffer; `bytes` is unchanged then.
  explicit DeviceBuffer(Buffer&& bytes)
      : DeviceBuffer(detail::typed_count<T>("DeviceBuffer<T>(Buffer&&)", bytes, true), std::move(bytes)) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : bytes_(std::move(other.bytes_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    bytes_ = std::move(other.bytes_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() = default;

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// False for a default-constructed or moved-from buffer.
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(bytes_); }
  /// Device address of the first element (not dereferenceable on the host with CUDA).
  [[nodiscard]] T* data() const noexcept { return data_; }

  /// A view of elements [offset, offset + count). Throws devctx::Error (size_mismatch) when
  /// the range does not fit, and (invalid_handle) on a moved-from buffer.
  [[nodiscard]] DeviceSlice<T> slice(std::size_t offset, std::size_t count) { return as_slice().slice(offset, count); }
  [[nodiscard]] DeviceSlice<const T> slice(std::size_t offset, std::size_t count) const {
    return as_slice().slice(offset, count);
  }
  /// The whole buffer as a slice.
  [[nodiscard]] DeviceSlice<T> as_slice() { return detail::Access::make<DeviceSlice<T>>(record(), data_, size_); }
  [[nodiscard]] DeviceSlice<const T> as_slice() const {
    return detail::Access::make<DeviceSlice<const T>>(record(), static_cast<const T*>(data_), size_);
  }
  /// The kernel's view of the buffer.
  [[nodiscard]] devctx::span<T> span() noexcept { return {data_, size_}; }
  [[nodiscard]] devctx::span<const T> span() const noexcept { return {data_, size_}; }
  /// The whole buffer as elements of `U`: as_slice().view_as<U>().
  template <class U>
  [[nodiscard]] DeviceSlice<U> view_as() {
    return as_slice().template view_as<U>();
  }
  template <class U>
  [[nodiscard]] DeviceSlice<const U> view_as() const {
    return as_slice().template view_as<U>();
  }

  /// Hands the memory to another owner, who frees it with the result's `free` (see
  /// ReleasedBuffer); this buffer becomes empty. Throws devctx::Error (invalid_handle) on a
  /// moved-from buffer. Slices of the buffer stay valid until `free` is called.
  [[nodiscard]] ReleasedBuffer<T> release() { return detail::release_buffer(bytes_, data_, size_, kEmpty); }

  /// The untyped owner of the memory (empty for an empty buffer).
  [[nodiscard]] const Buffer& buffer() const noexcept { return bytes_; }
  /// Hands the memory over as an untyped Buffer; this buffer becomes empty. Slices stay valid
  /// while the returned Buffer (or whoever takes it over) owns the memory.
  [[nodiscard]] Buffer take_buffer() noexcept {
    data_ = nullptr;
    size_ = 0;
    return std::move(bytes_);
  }

 private:
  friend struct detail::Access;
  static constexpr const char* kEmpty = "a moved-from or default-constructed DeviceBuffer: it owns no memory";
  /// `bytes` already checked to hold `size` elements of T.
  DeviceBuffer(std::size_t size, Buffer&& bytes) noexcept
      : bytes_(std::move(bytes)), data_(static_cast<T*>(bytes_.data())), size_(size) {}
  [[nodiscard]] detail::Allocation* record() const {
    detail::Allocation* r = detail::Access::record(bytes_);
    if (r == nullptr) detail::throw_invalid_handle(kEmpty);
    return r;
  }

  Buffer bytes_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A non-owning view of part of a HostBuffer; usable wherever a HostBuffer is. In checking mode
/// its accessors refuse, as the buffer's do, while a copy or fill on the buffer may be pending.
template <class T>
class HostSlice : public detail::BufferVerbs<HostSlice<T>> {
 public:
  /// The whole of `bytes` (host memory) as elements of T; throws as DeviceSlice(Buffer&) does
  /// (invalid_argument for device memory).
  explicit HostSlice(Buffer& bytes)
      : HostSlice(detail::Access::record(bytes), static_cast<T*>(bytes.data()),
                  detail::typed_count<T>("HostSlice<T>(Buffer&)", bytes, false)) {}
  /// The same, read-only, from a const Buffer (HostSlice<const T> only).
  explicit HostSlice(const Buffer& bytes)
    requires std::is_const_v<T>
      : HostSlice(detail::Access::record(bytes), static_cast<T*>(bytes.data()),
                  detail::typed_count<T>("HostSlice<T>(const Buffer&)", bytes, false)) {}
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  HostSlice(const HostSlice<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : allocation_(other.allocation_), gate_(other.gate_), data_(other.data_), size_(other.size_) {}

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] T* data() const { return touched("HostSlice::data()"); }
  T& operator[](std::size_t i) const { return touched("HostSlice::operator[]")[i]; }
  [[nodiscard]] T* begin() const { return touched("HostSlice::begin()"); }
  [[nodiscard]] T* end() const { return touched("HostSlice::end()") + size_; }
  [[nodiscard]] HostSlice slice(std::size_t offset, std::size_t count) const {
    detail::check_slice("HostSlice::slice", offset, count, size_);
    return HostSlice(allocation_, data_ + offset, count);
  }
  operator std::span<T>() const { return {touched("HostSlice's conversion to std::span"), size_}; }  // NOLINT
  [[nodiscard]] detail::Allocation* allocation() const noexcept { return allocation_; }
  [[nodiscard]] HostSlice as_slice() const noexcept { return *this; }
  /// As DeviceSlice::view_as.
  template <class U>
  [[nodiscard]] HostSlice<std::conditional_t<std::is_const_v<T>, const U, U>> view_as() const {
    using V = std::conditional_t<std::is_const_v<T>, const U, U>;
    V* data = detail::view_data<V>("HostSlice::view_as", data_, size_);
    return HostSlice<V>(allocation_, data, size_bytes() / sizeof(U));
  }

 private:
  template <class>
  friend class HostSlice;
  friend struct detail::HostRaw;
  friend struct detail::Access;
  HostSlice(detail::Allocation* allocation, T* data, std::size_t size) noexcept
      : allocation_(allocation),
        gate_(allocation != nullptr ? detail::allocation_host_gate(*allocation) : nullptr),
        data_(data),
        size_(size) {}

  /// data_, once checking mode (if on) has seen that no copy or fill on the buffer is pending.
  [[nodiscard]] T* touched(const char* access) const {
    if (gate_ != nullptr && gate_->pending.load(std::memory_order_acquire) != 0) [[unlikely]]
      detail::host_access_check(*gate_, access);
    return data_;
  }

  detail::Allocation* allocation_;
  detail::HostAccessGate* gate_;
  T* data_;
  std::size_t size_;
};

/// `size()` elements of T in host memory fit for fast transfers (page-locked on CUDA).
/// Created by enqueue_create_host_buffer<T>(n); fill it only after the context has been
/// synchronized once since its creation. Never pass it to a kernel: copy it to a DeviceBuffer.
/// A copy into or out of it, or a fill, is finished only once the host has waited for it
/// (synchronize, or an event recorded after it); in checking mode (docs/checking.md)
/// operator[], data(), begin(), end() and the conversion to std::span throw
/// Error(check_failed) until then.
template <class T>
class HostBuffer : public detail::BufferVerbs<HostBuffer<T>> {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "HostBuffer<T> holds trivially copyable, non-const element types");

 public:
  HostBuffer() noexcept = default;
  /// Takes over `bytes` (host memory) as elements of T; throws as DeviceBuffer(Buffer&&) does
  /// (invalid_argument for device memory).
  explicit HostBuffer(Buffer&& bytes)
      : HostBuffer(detail::typed_count<T>("HostBuffer<T>(Buffer&&)", bytes, false), std::move(bytes)) {}
  HostBuffer(HostBuffer&& other) noexcept
      : bytes_(std::move(other.bytes_)),
        gate_(std::exchange(other.gate_, nullptr)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    bytes_ = std::move(other.bytes_);
    gate_ = std::exchange(other.gate_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() = default;

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(bytes_); }
  [[nodiscard]] T* data() { return touched("HostBuffer::data()"); }
  [[nodiscard]] const T* data() const { return touched("HostBuffer::data()"); }
  T& operator[](std::size_t i) { return touched("HostBuffer::operator[]")[i]; }
  const T& operator[](std::size_t i) const { return touched("HostBuffer::operator[]")[i]; }
  [[nodiscard]] T* begin() { return touched("HostBuffer::begin()"); }
  [[nodiscard]] T* end() { return touched("HostBuffer::end()") + size_; }
  [[nodiscard]] const T* begin() const { return touched("HostBuffer::begin()"); }
  [[nodiscard]] const T* end() const { return touched("HostBuffer::end()") + size_; }
  operator std::span<T>() { return {touched("HostBuffer's conversion to std::span"), size_}; }              // NOLINT
  operator std::span<const T>() const { return {touched("HostBuffer's conversion to std::span"), size_}; }  // NOLINT

  [[nodiscard]] HostSlice<T> slice(std::size_t offset, std::size_t count) { return as_slice().slice(offset, count); }
  [[nodiscard]] HostSlice<const T> slice(std::size_t offset, std::size_t count) const {
    return as_slice().slice(offset, count);
  }
  [[nodiscard]] HostSlice<T> as_slice() { return detail::Access::make<HostSlice<T>>(record(), data_, size_); }
  [[nodiscard]] HostSlice<const T> as_slice() const {
    return detail::Access::make<HostSlice<const T>>(record(), static_cast<const T*>(data_), size_);
  }
  /// The whole buffer as elements of `U`: as_slice().view_as<U>().
  template <class U>
  [[nodiscard]] HostSlice<U> view_as() {
    return as_slice().template view_as<U>();
  }
  template <class U>
  [[nodiscard]] HostSlice<const U> view_as() const {
    return as_slice().template view_as<U>();
  }

  /// As DeviceBuffer::release(): the memory goes to another owner, who frees it with `free`.
  [[nodiscard]] ReleasedBuffer<T> release() {
    gate_ = nullptr;  // the memory's new owner is not checked
    return detail::release_buffer(bytes_, data_, size_, kEmpty);
  }

  /// The untyped owner of the memory (empty for an empty buffer).
  [[nodiscard]] const Buffer& buffer() const noexcept { return bytes_; }
  /// Hands the memory over as an untyped Buffer (checking mode still watches it through
  /// HostSlices); this buffer becomes empty.
  [[nodiscard]] Buffer take_buffer() noexcept {
    gate_ = nullptr;
    data_ = nullptr;
    size_ = 0;
    return std::move(bytes_);
  }

 private:
  friend struct detail::Access;
  static constexpr const char* kEmpty = "a moved-from or default-constructed HostBuffer: it owns no memory";
  /// `bytes` already checked to hold `size` elements of T.
  HostBuffer(std::size_t size, Buffer&& bytes) noexcept
      : bytes_(std::move(bytes)),
        gate_(bytes_ ? detail::allocation_host_gate(*detail::Access::record(bytes_)) : nullptr),
        data_(static_cast<T*>(bytes_.data())),
        size_(size) {}
  [[nodiscard]] detail::Allocation* record() const {
    detail::Allocation* r = detail::Access::record(bytes_);
    if (r == nullptr) detail::throw_invalid_handle(kEmpty);
    return r;
  }

  /// data_, once checking mode (if on) has seen that no copy or fill on the buffer is pending.
  [[nodiscard]] T* touched(const char* access) const {
    if (gate_ != nullptr && gate_->pending.load(std::memory_order_acquire) != 0) [[unlikely]]
      detail::host_access_check(*gate_, access);
    return data_;
  }

  Buffer bytes_;
  detail::HostAccessGate* gate_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace devctx
