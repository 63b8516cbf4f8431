// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/regions.hpp - the memory a checked launch can reach, named as the user
// wrote it: "argument 2 (devctx::span<float>)", "shared array 'tile'", "dynamic shared memory".
// Every checking-mode message names memory through this table, and the table is where an
// address learns whether it is shared memory and which record of written bytes covers it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/check/init_shadow.hpp"

namespace devctx::detail::cpu::check {

enum class RegionKind : std::uint8_t {
  argument,        ///< a devctx::span kernel argument
  shared_array,    ///< a DEVCTX_SHARED array
  dynamic_shared,  ///< the launch's dynamic shared memory (devctx::dynamic_shared)
  device_memory,   ///< device memory reached otherwise (e.g. an atomic through a raw pointer)
};

struct Region {
  const std::byte* begin = nullptr;
  std::size_t bytes = 0;
  RegionKind kind = RegionKind::device_memory;
  unsigned argument = 0;          ///< 1-based, for arguments
  std::string_view type;          ///< the parameter's type, for arguments ("devctx::span<float>")
  std::string_view name;          ///< the array's name, for shared arrays
  std::size_t element_bytes = 1;  ///< element numbering in messages
  /// For a two-dimensional shared array (DEVCTX_SHARED of an array type): the bytes of one row,
  /// learned from its first row access; messages then write elements as [row][column].
  std::size_t row_bytes = 0;
  std::size_t shared_offset = 0;  ///< for shared memory: the offset in the block's shared memory
  /// Which bytes have been written, for device memory of a checked allocation (else null).
  std::shared_ptr<InitShadow> init;
  std::size_t init_offset = 0;  ///< begin's offset in that allocation

  [[nodiscard]] bool shared() const noexcept {
    return kind == RegionKind::shared_array || kind == RegionKind::dynamic_shared;
  }
  [[nodiscard]] bool contains(const void* address) const noexcept {
    const auto* p = static_cast<const std::byte*>(address);
    return p >= begin && p < begin + bytes;
  }
};

/// The regions of one launch. Lookups are by address; the last hit is cached, as a kernel's
/// accesses come in runs on the same array.
class RegionTable {
 public:
  /// Forgets every region (a new launch).
  void clear();
  /// Adds a region and returns it (stable until clear()).
  Region& add(Region region);
  /// Moves every shared-memory region to the block's shared memory starting at `base` (the
  /// executor alternates between two copies from one block to the next).
  void set_shared_base(const std::byte* base);
  [[nodiscard]] const std::byte* shared_base() const noexcept { return shared_base_; }
  /// The region holding `address`, or null. Arguments come first, so a buffer passed twice is
  /// named by its first argument.
  [[nodiscard]] Region* find(const void* address);
  /// Every shared-memory region (arrays and dynamic shared memory).
  [[nodiscard]] std::vector<const Region*> shared_regions() const;
  /// The shared array declared at `site`, if it was registered.
  [[nodiscard]] Region* find_shared(std::string_view name, std::size_t offset);

 private:
  std::vector<std::unique_ptr<Region>> regions_;
  Region* last_ = nullptr;
  const std::byte* shared_base_ = nullptr;
};

/// "argument 2 (devctx::span<float>)", "shared array 'tile'", "dynamic shared memory", ...
[[nodiscard]] std::string describe(const Region& region);
/// "element 17 of shared array 'tile'", "element [1][1] of shared array 'tile'", "byte 6 of ...":
/// the element of `region` that starts at `address`, for an access of `bytes` bytes.
[[nodiscard]] std::string element_of(const Region& region, const void* address, std::size_t bytes);

}  // namespace devctx::detail::cpu::check
