// src/backends/cpu/fiber.cpp - the stacks fibers run on (StackPool). The switch between fibers is
// in fiber_x86_64.cpp, fiber_aarch64.cpp or fiber_boost.cpp (fiber_switch.hpp).
#include "backends/cpu/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <new>

#include "core/errors.hpp"

namespace devctx::detail::cpu {

StackPool::StackPool(std::size_t stack_bytes, std::size_t count)
    : page_(std::size_t(sysconf(_SC_PAGESIZE))), count_(count) {
  const std::size_t slot = std::bit_ceil(std::max(stack_bytes + page_, 4 * page_));
  shift_ = unsigned(std::countr_zero(slot));
  region_bytes_ = (count + 1) * slot;  // one slot more to align the base to a slot
  region_ = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region_ == MAP_FAILED)
    fail(Errc::out_of_memory, "CPU backend: cannot reserve ", bytes_text(region_bytes_), " of address space for ",
         count, " fiber stacks of ", bytes_text(slot), " (DEVCTX_CPU_STACK_BYTES sets the stack size)");
  base_ = (reinterpret_cast<std::uintptr_t>(region_) + slot - 1) & ~std::uintptr_t(slot - 1);
}

StackPool::~StackPool() {
  for (std::size_t i = 0; i < tops_.size(); ++i) fiber_stack_released(stack(i));
  munmap(region_, region_bytes_);
}

void* StackPool::grow(std::size_t i) {
  if (i >= count_)
    fail(Errc::invalid_launch, "CPU backend: fiber stack ", i, " requested, but only ", count_, " exist");
  const std::size_t slot = slot_bytes();
  while (tops_.size() <= i) {
    const std::size_t n = tops_.size();
    auto* bottom = reinterpret_cast<char*>(base_ + n * slot);
    // Overflowing a fiber's stack faults on this page instead of corrupting the stack below.
    if (mprotect(bottom, page_, PROT_NONE) != 0)
      fail(Errc::out_of_memory, "CPU backend: cannot set up the guard page of fiber stack ", n);
    const std::size_t stagger = (n % 64) * 64;
    tops_.push_back(bottom + slot - stagger);
  }
  return tops_[i];
}

}  // namespace devctx::detail::cpu
