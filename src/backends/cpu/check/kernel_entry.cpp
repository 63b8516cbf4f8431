// src/backends/cpu/check/kernel_entry.cpp - the kernel-side entry points of checking mode
// (declared in devctx/detail/cpu_state.hpp): what span[i], name[i] of a DEVCTX_SHARED array,
// atomics and a block-level phase's end call in a checked launch, handed to the running
// executor's checker with the running thread's rank.
#include <cstddef>
#include <cstdint>

#include <devctx/launch.hpp>
#include <devctx/detail/cpu_state.hpp>

#include "backends/cpu/check/checker.hpp"

namespace devctx::detail::cpu {
namespace {

std::uint32_t running_rank() noexcept {
  const Dim3 t = tls.thread_idx, d = tls.block_dim;
  return t.x + d.x * (t.y + d.y * t.z);
}

std::byte* element(const void* base, std::size_t index, std::size_t bytes) noexcept {
  return const_cast<std::byte*>(static_cast<const std::byte*>(base)) + index * bytes;
}

}  // namespace

// A marked span or array reached outside its launch (a kernel that kept one in device memory
// for a later launch) is used as it is: there is no checker to tell.

void* checked_span_element(const void* data, std::size_t index, std::size_t count, std::size_t element_bytes,
                           bool read_only) {
  check::Checker* checker = tls.checker;
  if (checker == nullptr) return element(data, index, element_bytes);
  return checker->span_element(running_rank(), data, index, count, element_bytes, read_only);
}

void* checked_shared_element(std::uintptr_t array, std::size_t index, std::size_t count, std::size_t element_bytes) {
  const auto* base = reinterpret_cast<const void*>(array & ~kCheckedSharedBit);
  check::Checker* checker = tls.checker;
  if (checker == nullptr) return element(base, index, element_bytes);
  return checker->shared_element(running_rank(), base, index, count, element_bytes);
}

void* checked_shared_row(std::uintptr_t array, std::size_t index, std::size_t count, std::size_t row_bytes) {
  const auto* base = reinterpret_cast<const void*>(array & ~kCheckedSharedBit);
  check::Checker* checker = tls.checker;
  void* row = checker != nullptr ? checker->shared_row(base, index, count, row_bytes) : element(base, index, row_bytes);
  // Marked again: the row's own elements are checked when they are indexed.
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(row) | kCheckedSharedBit);
}

void checked_atomic(const void* address, std::size_t bytes) {
  if (check::Checker* checker = tls.checker; checker != nullptr) checker->atomic(running_rank(), address, bytes);
}

void checked_phase_end() {
  if (check::Checker* checker = tls.checker; checker != nullptr) checker->barrier_complete();
}

}  // namespace devctx::detail::cpu
