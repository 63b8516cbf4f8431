// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/arenas.hpp - the memory a worker's blocks see besides their arguments: the
// shared-memory arena (dynamic shared memory and DEVCTX_SHARED arrays) and the arena behind a
// block-level kernel's Block::per_thread values. Both are reused by every block the worker runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include <devctx/detail/base/cpu_state.hpp>

namespace devctx::detail::cpu {

/// Releases what cache_line_bytes allocated with the aligned operator delete[] that matches its
/// aligned new (std::default_delete<std::byte[]> would call the unaligned one: undefined
/// behaviour, which AddressSanitizer reports as new-delete-type-mismatch).
struct CacheLineDelete {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
};
using CacheLineBytes = std::unique_ptr<std::byte[], CacheLineDelete>;

/// `bytes` bytes aligned to a cache line (64 bytes): per-worker memory that blocks write often.
[[nodiscard]] inline CacheLineBytes cache_line_bytes(std::size_t bytes) {
  return CacheLineBytes(new (std::align_val_t{64}) std::byte[bytes]);
}

/// One worker's shared memory: the launch's dynamic shared memory first, then the DEVCTX_SHARED
/// arrays in the order the launch's blocks first declare them (keyed by declaration site). The
/// kernel reaches it through tls (dynamic_shared and the cache of declared arrays), which this
/// type keeps up to date.
class SharedArena {
 public:
  /// `limit` bytes per block (the device's max_shared_bytes_per_block).
  explicit SharedArena(std::size_t limit);

  /// Starts a range of blocks of launch `launch_id`. Blocks of one launch share their layout; a
  /// new launch starts an empty one. Refills tls's cache of declared arrays, which belongs to
  /// whichever launch this worker ran last. A `checked` launch (docs/checking.md) uses the
  /// guarded layout: each DEVCTX_SHARED array on pages of its own, ending where a page ends,
  /// followed by an inaccessible guard page, so that an index past its end faults (the SIGSEGV
  /// handler of stack_overflow.cpp reports it). Throws Error(out_of_memory) when the guarded
  /// layout's address space cannot be reserved.
  void enter_launch(std::uint64_t launch_id, std::size_t dynamic_bytes, bool checked);

  /// Switches to the other copy for the next block. Consecutive blocks use alternate copies:
  /// block b + 1's first phase then has no memory dependence on block b's last ones (the same
  /// addresses would make the core wait for them), so the two overlap (docs/cpu-backend.md).
  /// Shared memory is undefined at block start on a GPU too.
  [[gnu::always_inline]] void next_block() noexcept {
    half_ ^= 1;
    std::byte* const base = this->base();
    tls.dynamic_shared = base;
    for (unsigned i = 0; i < tls.shared_count; ++i) tls.shared_addresses[i] = base + cached_offsets_[i];
  }

  /// The current block's shared memory.
  [[nodiscard]] std::byte* base() const noexcept {
    return checked_ ? guarded_ : memory_.get() + half_ * stride(limit_);
  }

  /// The DEVCTX_SHARED array whose guard page holds `address` in a checked launch: its name,
  /// element size, size and the index `address` falls at. Async-signal-safe (the SIGSEGV handler).
  struct GuardHit {
    const char* name = nullptr;
    std::size_t index = 0;
    std::size_t count = 0;
  };
  [[nodiscard]] bool guard_hit(std::uintptr_t address, GuardHit& hit) const noexcept;

  /// The address of the DEVCTX_SHARED array declared at `site` in the running block, laid out
  /// on its first declaration in the launch. Throws Error(invalid_launch) past the limit.
  [[nodiscard]] void* array(const void* site, std::size_t bytes, std::size_t align, std::size_t element_bytes = 1);

  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;
  ~SharedArena();

 private:
  struct Site {
    const void* site;
    std::size_t offset;
    std::size_t bytes;
    std::size_t element_bytes;
  };

  [[nodiscard]] static constexpr std::size_t stride(std::size_t limit) { return (limit + 127) / 64 * 64; }
  void cache(const Site& site) noexcept;

  std::size_t limit_;
  CacheLineBytes memory_;  // two copies of `limit_` bytes (alternate blocks)
  unsigned half_ = 0;
  std::size_t cached_offsets_[4] = {};  // offsets of the arrays cached in tls.shared_addresses
  std::size_t dynamic_bytes_ = 0;
  std::size_t top_ = 0;      // end of the arrays laid out so far
  std::vector<Site> sites_;  // the current launch's DEVCTX_SHARED layout
  std::uint64_t launch_ = 0;
  // The guarded layout of checked launches (reserved at the first one).
  bool checked_ = false;
  std::byte* guarded_ = nullptr;
  std::size_t guarded_bytes_ = 0;
  std::size_t guarded_top_ = 0;  // bytes of the reservation laid out so far (whole pages)
};

/// Storage for a block-level kernel's Block::per_thread<T>() values, emptied at every block.
class PerThreadArena {
 public:
  PerThreadArena();

  void next_block() noexcept { top_ = 0; }
  /// `bytes` at `align` (at least 64) for the running block. Throws Error(invalid_launch) when
  /// the block's values outgrow the arena.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t align);

 private:
  CacheLineBytes memory_;
  std::size_t top_ = 0;
};

}  // namespace devctx::detail::cpu
