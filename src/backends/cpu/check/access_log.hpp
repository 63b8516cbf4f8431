// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/access_log.hpp - checking mode's race and uninitialised-read detector.
//
// span[i] returns T&, so an access cannot tell a read from a write. What the checker can see is
// memory before and after: it records each element a thread touches, with the element's value at
// the thread's first touch since the last barrier. The threads of a checked block run one at a
// time and switch only at barriers (and warp operations), so when another thread touches the
// element, or the barrier interval ends, a changed value means that the previous thread wrote it
// and an unchanged one that it read it. From that:
//  * a race: two threads of one block touched an element between the same two barriers and one of
//    them wrote it, or two blocks of one launch touched it and one wrote it (atomics excluded);
//  * an uninitialised read: a thread read device memory that nothing wrote since its allocation.
// Limits, documented in docs/checking.md: a write of the value already there is invisible, so is
// a read-modify-write of an unwritten element, and accesses through pointers or references kept
// from span[i] are attributed to the thread that took them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "backends/cpu/check/regions.hpp"

namespace devctx::detail::cpu::check {

/// A thread of the launch: its block (linear, x fastest) and its rank within the block.
struct ThreadRef {
  std::uint64_t block = 0;
  std::uint32_t rank = 0;
  friend bool operator==(const ThreadRef&, const ThreadRef&) = default;
};

/// What the log found; the Checker turns it into a message.
struct Finding {
  enum class Kind : std::uint8_t { race, uninitialised_read };
  Kind kind = Kind::race;
  const Region* region = nullptr;
  const void* address = nullptr;
  std::size_t bytes = 0;
  /// race: a thread that wrote the element (or, across blocks, the earlier block's thread);
  /// uninitialised_read: the reader.
  ThreadRef first;
  bool first_wrote = false;
  /// race: the other thread.
  ThreadRef second;
  bool second_wrote = false;
  /// Barriers the block had completed when the accesses happened (same-block races, reads).
  std::uint32_t interval = 0;
};

/// A hash map from element address to V whose clear() is O(1): each slot carries the generation
/// it was written in.
template <class V>
class AddressMap {
 public:
  /// The entry for `key` and whether it was just created (value-initialised).
  std::pair<V*, bool> try_emplace(std::uintptr_t key);
  void clear() noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    std::uintptr_t key = 0;
    std::uint32_t gen = 0;
    V value{};
  };
  void grow();
  [[nodiscard]] std::size_t home(std::uintptr_t key) const noexcept {
    return std::size_t((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = 64;
  std::uint32_t gen_ = 1;
};

class AccessLog {
 public:
  /// Forgets everything: a new launch.
  void begin_launch();
  /// The next block of the launch starts (blocks of a checked launch run one after another).
  void begin_block(std::uint64_t block);
  /// Thread `rank` of the current block touches the `bytes`-byte element at `address` in
  /// `region`; `read_only` when it came through span<const T>, which can only read.
  [[nodiscard]] std::optional<Finding> touch(std::uint32_t rank, Region& region, const void* address, std::size_t bytes,
                                             bool read_only);
  /// Thread `rank` is about to access the element atomically: atomics never race with each other,
  /// and an atomic on memory that nothing wrote reads garbage.
  [[nodiscard]] std::optional<Finding> atomic(std::uint32_t rank, Region& region, const void* address, std::size_t bytes);
  /// The block passed a barrier, or ended: settles what each thread did to each element it touched
  /// since the previous barrier, and adds global memory to the launch's record for races between
  /// blocks.
  [[nodiscard]] std::optional<Finding> end_interval();
  /// Barriers the current block has passed.
  [[nodiscard]] std::uint32_t interval() const noexcept { return interval_; }

 private:
  /// One element touched in the current barrier interval.
  struct Touch {
    const std::byte* address = nullptr;
    Region* region = nullptr;
    std::uint32_t bytes = 0;
    std::uint32_t last = 0;       ///< the thread whose first touch took the snapshot
    std::uint32_t other = 0;      ///< an earlier thread of this interval that accessed it (when multi)
    std::uint32_t writer = 0;     ///< a thread seen to write it (when wrote)
    bool multi = false;           ///< touched by two or more threads
    bool wrote = false;           ///< some thread's write was seen
    bool atomic = false;          ///< accessed atomically
    bool read_checked = false;    ///< `last` read it through span<const T> and it was initialised
    std::uint64_t snapshot = 0;   ///< the value at `last`'s first touch (up to 8 bytes)
    std::size_t snapshot_at = 0;  ///< 1 + its place in snapshots_ (larger elements; 0: none)
  };
  /// One element of global memory touched so far in the launch.
  struct Global {
    std::uint64_t block = 0;       ///< the latest block that touched it
    std::uint64_t prev_block = 0;  ///< an earlier block that touched it (a writer if any wrote)
    std::uint32_t thread = 0;
    std::uint32_t prev_thread = 0;
    bool wrote = false;          ///< `block` wrote it
    bool prev_accessed = false;  ///< an earlier block touched it
    bool prev_wrote = false;     ///< an earlier block wrote it
    bool atomic = false;
  };

  /// The index of `address`'s touch in this interval, and whether it was added now (by `rank`,
  /// with its snapshot taken).
  std::pair<std::uint32_t, bool> find_or_add(std::uint32_t rank, Region& region, const void* address, std::size_t bytes);
  void take_snapshot(Touch& t);
  [[nodiscard]] bool changed(const Touch& t) const noexcept;
  [[nodiscard]] static bool initialised(const Touch& t) noexcept;
  /// A finding of `kind` on `t`, its first thread `thread` of this block and interval.
  [[nodiscard]] Finding finding(Finding::Kind kind, const Touch& t, std::uint32_t thread) const;
  [[nodiscard]] Finding uninitialised_read(const Touch& t, std::uint32_t reader) const;
  [[nodiscard]] Finding same_block_race(const Touch& t, std::uint32_t writer, std::uint32_t other, bool other_wrote) const;
  [[nodiscard]] std::optional<Finding> merge_global(const Touch& t);

  AddressMap<std::uint32_t> index_;  // address -> position in touches_ (current interval)
  std::vector<Touch> touches_;
  std::vector<std::byte> snapshots_;
  AddressMap<Global> globals_;  // address -> record (current launch)
  std::uint64_t block_ = 0;
  std::uint32_t interval_ = 0;
};

}  // namespace devctx::detail::cpu::check
