// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber_abi.hpp - every layout that the barrier and park assembly in
// fiber_x86_64.cpp reads: the block's BarrierState, the per-thread Fiber records, the wait tokens
// and the thread-local ThreadState (defined in devctx/detail/base/cpu_state.hpp, because kernels read
// it). Builds without that assembly (DEVCTX_FIBER_FAST_BARRIER unset) use the same layouts from C++.
//
// Each invariant lives here, checked by a static_assert, and in the assembly that hard-codes it.
// Change one, change the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <devctx/detail/base/cpu_state.hpp>
#include <devctx/launch.hpp>

#include "backends/cpu/fiber.hpp"

namespace devctx::detail::cpu {

/// How many fibers ahead a switch prefetches (measured: 1 leaves most TLB misses exposed). The
/// assembly's prefetch reads fibers[next + kPrefetchAhead].sp as `12*32+16(%rdx)`.
inline constexpr std::uint32_t kPrefetchAhead = 12;

// Fiber::wait: the kind of wait in the top two bits, the barrier or warp generation below.
inline constexpr std::uint64_t kKindMask = std::uint64_t{3} << 62;
inline constexpr std::uint64_t kRunning = 0;
inline constexpr std::uint64_t kAtBarrier = std::uint64_t{1} << 62;
inline constexpr std::uint64_t kAtWarp = std::uint64_t{2} << 62;
inline constexpr std::uint64_t kExited = ~std::uint64_t{0};
/// BarrierState::released while the fast paths are off: no fiber ever waits with this value.
inline constexpr std::uint64_t kNever = std::uint64_t{3} << 62;

/// One GPU thread of a cooperative block (32 bytes: two share a cache line). idx comes first
/// so that a switch copies idx and next (16 bytes) into tls.thread_idx and its padding at once.
struct Fiber {
  Dim3 idx;
  std::uint32_t next = 0;  // successor in the ring (exited fibers are unlinked lazily)
  FiberSp sp = nullptr;    // saved stack pointer while suspended
  std::uint64_t wait = 0;  // kRunning, kExited, or kAtBarrier / kAtWarp | generation waited in
};

/// What a barrier reads and writes, in one standard-layout block. The fields up to stack_base
/// are read by the assembly at the offsets in the comments.
struct BarrierState {
  /// 0: what a thread released by the previous barrier has in Fiber::wait (kAtBarrier | gen - 1)
  /// while the block runs cooperatively and is not aborting; kNever otherwise. The assembly
  /// adds 1 to it to mark a thread waiting at the current barrier (kAtBarrier | gen).
  std::uint64_t released = kNever;
  std::uint64_t last = 0;         // 8: n - 1, the highest thread index
  std::uint32_t remaining = 0;    // 16: live threads yet to reach the current barrier
  std::uint32_t shift = 0;        // 20: log2 of a stack slot
  void* fibers = nullptr;         // 24: Fiber[kMaxBlockThreads + kPrefetchAhead]
  std::uintptr_t stack_base = 0;  // 32
  // C++ only:
  /// Barrier generation. It only grows, across blocks too, so that a fiber's `wait` left over
  /// from an earlier block can never look like a waiter released by this block's last barrier.
  std::uint64_t gen = 2;
  std::uint32_t n = 0;  // threads in the block
  // Fibers run in ring order first, first + 1, ..., n - 1, first, ...; those from `started`
  // on have not run yet (threads before `first` finished in the plain loop before any barrier).
  std::uint32_t first = 0;
  std::uint32_t live = 0;  // threads of the ring that have not exited
  std::uint32_t started = 0;
  bool fast = false;  // cooperative and not aborting
};

static_assert(std::is_standard_layout_v<BarrierState>);
static_assert(offsetof(BarrierState, released) == 0 && offsetof(BarrierState, last) == 8 &&
                  offsetof(BarrierState, remaining) == 16 && offsetof(BarrierState, shift) == 20 &&
                  offsetof(BarrierState, fibers) == 24 && offsetof(BarrierState, stack_base) == 32,
              "update devctx::detail::cpu::barrier() in fiber_x86_64.cpp");
// Fibers are indexed by shifting left by 5 (`shlq $5`), and the fields are read at -16, -8
// (fibers[me], one record below fibers[next]), 0, 16 and 24.
static_assert(sizeof(Fiber) == 32 && offsetof(Fiber, idx) == 0 && offsetof(Fiber, next) == 12 &&
                  offsetof(Fiber, sp) == 16 && offsetof(Fiber, wait) == 24 && kPrefetchAhead == 12,
              "update devctx::detail::cpu::barrier() in fiber_x86_64.cpp");
// ThreadState: the thread index is written as 16 bytes at %fs:(tls) (idx and next of a Fiber),
// and the BarrierState pointer is read at %fs:0x48(tls).
static_assert(std::is_standard_layout_v<ThreadState> && offsetof(ThreadState, thread_idx) == 0 &&
                  offsetof(ThreadState, thread_idx_pad) == 12 && sizeof(Dim3) == 12 &&
                  offsetof(ThreadState, barrier_state) == 0x48,
              "update devctx::detail::cpu::barrier() in fiber_x86_64.cpp");

}  // namespace devctx::detail::cpu
