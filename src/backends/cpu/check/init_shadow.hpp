// src/backends/cpu/check/init_shadow.hpp - checking mode's record of which bytes of device memory
// have been written since they were allocated: one bit per byte of every allocation made by a
// checked context, set by the copies, fills and kernel writes that reach it, read by checked
// kernels to report reads of memory that nothing wrote.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>

namespace devctx::detail::cpu::check {

/// The byte a checked context fills new device memory with. A kernel that only reads an element
/// leaves it unchanged, one that writes it (almost surely) does not, and the value is easy to
/// recognise in a debugger: 0xCDCDCDCD is -842150451 as an int and -4.3e8 as a float.
inline constexpr unsigned char kPoisonByte = 0xCD;

/// The written bytes of one allocation. Copies and fills running on several workers mark
/// disjoint ranges that may share a word, hence the atomic words.
class InitShadow {
 public:
  explicit InitShadow(std::size_t bytes);
  InitShadow(const InitShadow&) = delete;
  InitShadow& operator=(const InitShadow&) = delete;

  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// Marks [offset, offset + count) written (clipped to the allocation).
  void mark(std::size_t offset, std::size_t count) noexcept;
  /// True when every byte of [offset, offset + count) has been written.
  [[nodiscard]] bool written(std::size_t offset, std::size_t count) const noexcept;

 private:
  std::size_t bytes_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> words_;
};

/// The checked allocations of one device, by address, so that an operation that only has a
/// pointer (a copy, a fill, a span built inside a kernel) finds the shadow of its memory.
class ShadowRegistry {
 public:
  /// One allocation's shadow and where a looked-up address lies in it.
  struct Hit {
    std::shared_ptr<InitShadow> shadow;  ///< null when the address is in no checked allocation
    const std::byte* base = nullptr;     ///< the allocation's first byte
    std::size_t offset = 0;              ///< the address's offset from base
  };

  /// Starts tracking [base, base + bytes); nothing of it is written yet.
  void add(const void* base, std::size_t bytes);
  /// Stops tracking the allocation that starts at `base` (before its memory is reused).
  void remove(const void* base) noexcept;
  // noexcept: copies, fills and completing launches call these where nothing may throw; taking
  // a shared_mutex fails only on misuse of the mutex itself (std::terminate is right then).
  [[nodiscard]] Hit find(const void* address) const noexcept;
  /// Marks [address, address + bytes) written where it lies in a checked allocation.
  void mark_written(const void* address, std::size_t bytes) noexcept;
  /// True while no allocation is tracked: copies and fills then skip the lookup.
  [[nodiscard]] bool empty() const noexcept { return count_.load(std::memory_order_relaxed) == 0; }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::uintptr_t, std::shared_ptr<InitShadow>> by_base_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace devctx::detail::cpu::check
