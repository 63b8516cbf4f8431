// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber.cpp - the stacks fibers run on (StackPool): reserving, guarding and
// releasing them. The switch between fibers is in fiber_x86_64.cpp, fiber_aarch64.cpp or
// fiber_boost.cpp (fiber_switch.hpp).
#include "backends/cpu/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <new>

#include "core/errors.hpp"

namespace devctx::detail::cpu {
namespace {

/// The least guard below each stack: a frame up to this size that overflows faults in it.
constexpr std::size_t kMinGuardBytes = 32 * 1024;
/// Stack tops are staggered by up to 63 cache lines (StackPool::top).
constexpr std::size_t kMaxStagger = 63 * 64;

}  // namespace

StackPool::StackPool(std::size_t stack_bytes) : page_(std::size_t(sysconf(_SC_PAGESIZE))), stack_bytes_(stack_bytes) {
  // The slot's room beyond the stack and its stagger is all guard: it costs address space only.
  const std::size_t slot = std::bit_ceil(stack_bytes + kMinGuardBytes + kMaxStagger);
  shift_ = unsigned(std::countr_zero(slot));
  guard_bytes_ = (slot - stack_bytes - kMaxStagger) / page_ * page_;
}

StackPool::~StackPool() { release(); }

void StackPool::release() noexcept {
  for (std::size_t i = 0; i < tops_.size(); ++i) fiber_stack_released(stack(i));
  if (region_ != nullptr) munmap(region_, region_bytes_);
  region_ = nullptr;
  region_bytes_ = 0;
  base_ = 0;
  count_ = 0;
  tops_.clear();
}

void StackPool::reserve(std::size_t count) {
  if (count <= count_) return;
  release();
  const std::size_t slot = slot_bytes();
  // At most kMaxBlockThreads + 1 slots of at most 128 MiB: the product cannot wrap.
  const std::size_t bytes = (count + 1) * slot;  // one slot more to align the base to a slot
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED)
    fail(Errc::out_of_memory, "cannot reserve ", bytes_text(bytes), " of address space for ", count,
         " fiber stacks of ", bytes_text(stack_bytes_), ", each in a slot of ", bytes_text(slot), " with its guard");
  try {
    tops_.reserve(count);
  } catch (const std::bad_alloc&) {
    munmap(region, bytes);
    fail(Errc::out_of_memory, "cannot allocate the table of ", count, " fiber stacks");
  }
  region_ = region;
  region_bytes_ = bytes;
  base_ = (reinterpret_cast<std::uintptr_t>(region_) + slot - 1) & ~std::uintptr_t(slot - 1);
  count_ = count;
}

void* StackPool::grow(std::size_t i) {
  if (i >= count_)
    fail(Errc::invalid_launch, "CPU backend: fiber stack ", i, " requested, but only ", count_, " are reserved");
  const std::size_t slot = slot_bytes();
  while (tops_.size() <= i) {
    const std::size_t n = tops_.size();
    auto* bottom = reinterpret_cast<char*>(base_ + n * slot);
    if (mprotect(bottom, guard_bytes_, PROT_NONE) != 0)
      fail(Errc::out_of_memory, "cannot set up the guard region of fiber stack ", n,
           " (the system's limit on memory mappings, vm.max_map_count, may be reached)");
    const std::size_t stagger = (n % 64) * 64;
    tops_.push_back(bottom + slot - stagger);  // within the capacity reserve() made
  }
  return tops_[i];
}

}  // namespace devctx::detail::cpu
