// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/guarded_memory.hpp - checking mode's device allocations: each on pages of
// its own between two inaccessible guard pages, its last byte the last byte of its last page, and
// the process-wide table of them that the SIGSEGV handler reads (async-signal-safe) to tell an
// access past the end (or before the start) of a checked buffer from any other fault.
//
// Layout of one allocation of `bytes` (P = the page size, D = max(P, bytes rounded up to P)):
//
//   [ guard page (P) | slack (D - bytes) | the buffer (bytes) | guard page (P) ]
//                                        ^ the pointer devctx hands out
//
// The buffer ends where a page ends: the first byte past its end is in the guard page (exact to
// the byte). Before its start lies the slack, accessible, then the front guard page: an access
// before the start is caught once it passes the slack (exact only when `bytes` is a multiple of P).
// The buffer's start is aligned to the largest power of two that divides `bytes` (at most P),
// which is at least the alignment of its element type (an element's size is a multiple of its
// alignment), but may be less than the 64 bytes of an unchecked CPU buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace devctx::detail::cpu::check {

/// Where a fault in a guard page of a checked allocation lies.
struct GuardedHit {
  const std::byte* data = nullptr;  ///< the buffer's first byte
  std::size_t bytes = 0;            ///< its size
  bool before = false;              ///< in the guard page before its start (else after its end)
};

/// What a faulting access did, as far as the fault tells (x86-64's page-fault error code does;
/// elsewhere it is unknown).
enum class Access : unsigned char { unknown, read, write };

/// Maps a checked allocation of `bytes` as above and enters it in the table. Returns null, with
/// errno set, when the mapping fails (no memory, address space or mappings left: each
/// allocation takes three, see vm.max_map_count) or the table cannot grow.
[[nodiscard]] void* guarded_allocate(std::size_t bytes) noexcept;
/// Removes the allocation that guarded_allocate returned as `data` from the table and unmaps it.
void guarded_free(void* data) noexcept;
/// Whether `address` lies in a guard page of a live checked allocation, and which one.
/// Async-signal-safe: no locks, no allocation (the SIGSEGV handler calls it).
[[nodiscard]] bool guarded_hit(std::uintptr_t address, GuardedHit& hit) noexcept;
/// What a failed guarded_allocate adds to the out_of_memory message (after the host's memory
/// state): what the layout takes, and the mapping limit when errno says the mappings ran out.
[[nodiscard]] std::string guarded_failure_note(std::size_t bytes);
/// The address space a checked allocation of `bytes` takes: its pages and both guard pages.
[[nodiscard]] std::size_t guarded_footprint(std::size_t bytes) noexcept;

}  // namespace devctx::detail::cpu::check
