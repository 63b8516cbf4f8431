// SPDX-License-Identifier: Apache-2.0
// devctx/span.hpp - devctx::span<T>, the view of device memory that kernels receive.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/base/config.hpp>
#if !defined(__CUDACC_RTC__)  // host code: NVRTC compiles device code alone (detail/base/std.hpp)
#include <devctx/detail/base/seam.hpp>
#endif
#if !defined(__CUDA_ARCH__)
#include <devctx/detail/base/cpu_state.hpp>
#endif

namespace devctx {

/// A non-owning view of `size()` contiguous elements in device memory, as a kernel sees a
/// DeviceBuffer<T> (or one of its slices). Cheap to copy; valid while the buffer lives.
///
/// In a checked launch (docs/checking.md) span[i] goes through checking mode on the CPU backend;
/// otherwise it costs a test that the compiler moves out of the kernel's loops. On a GPU there
/// is no test at all.
template <class T>
class span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = std::size_t;
  using pointer = T*;
  using reference = T&;
  using iterator = T*;

  constexpr span() noexcept = default;
  DEVCTX_HD constexpr span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  /// span<T> converts to span<const T>.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  DEVCTX_HD constexpr span(const span<U>& other) noexcept : data_(other.data()), size_(other.size()) {}

  [[nodiscard]] DEVCTX_HD constexpr std::size_t size() const noexcept { return size_; }
  [[nodiscard]] DEVCTX_HD constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] DEVCTX_HD constexpr bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] DEVCTX_HD constexpr T* data() const noexcept { return data_; }
  /// Element i. Unchecked, as in CUDA, unless the program is compiled with DEVCTX_CHECK_BOUNDS
  /// defined (for every translation unit, e.g. target_compile_definitions(app PRIVATE
  /// DEVCTX_CHECK_BOUNDS)): then an index past the end fails the kernel. On the CPU backend the
  /// failure is reported at synchronize() naming the index, the size, the kernel, the block and
  /// the thread; on a GPU the thread prints the same facts and traps. Checking mode
  /// (DEVCTX_CHECK=1) checks every index without recompiling, on the CPU backend.
  DEVCTX_HD constexpr T& operator[](std::size_t i) const {
#if defined(DEVCTX_CHECK_BOUNDS)
    if (i >= size_) [[unlikely]] {
#if defined(__CUDA_ARCH__)
      printf("devctx: span index %llu out of range for a span of %llu elements in block (%u, %u, %u), thread (%u, %u, %u)\n",
             (unsigned long long)i, (unsigned long long)size_, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
             threadIdx.y, threadIdx.z);
      __trap();
#else
      detail::throw_span_out_of_range(i, size_);
#endif
    }
#endif
#if !defined(__CUDA_ARCH__)
    if (!std::is_constant_evaluated() && detail::cpu::in_checked_launch()) [[unlikely]]
      return *static_cast<T*>(detail::cpu::checked_span_element(data_, i, size_, sizeof(T), std::is_const_v<T>));
#endif
    return data_[i];
  }
  [[nodiscard]] DEVCTX_HD constexpr T* begin() const noexcept { return data_; }
  [[nodiscard]] DEVCTX_HD constexpr T* end() const noexcept { return data_ + size_; }
  /// The `count` elements starting at `offset` (no checking: this runs inside kernels; in a
  /// checked launch, indexing the subspan is checked against `count`).
  [[nodiscard]] DEVCTX_HD constexpr span subspan(std::size_t offset, std::size_t count) const noexcept {
    return span(data_ + offset, count);
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace devctx
