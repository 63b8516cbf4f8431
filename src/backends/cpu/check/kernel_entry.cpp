// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/kernel_entry.cpp - the kernel-side entry points of checking mode
// (declared in devctx/detail/base/cpu_state.hpp): what span[i], atomics, a block-level phase's
// threads and its end call in a checked launch, handed to the running
// executor's checker with the running thread's rank.
#include <cstddef>
#include <cstdint>
#include <utility>

#include <devctx/detail/base/cpu_state.hpp>
#include <devctx/launch.hpp>

#include "backends/cpu/check/checker.hpp"

namespace devctx::detail::cpu {
namespace {

std::uint32_t running_rank() noexcept {
  const Dim3 t = tls.thread_idx, d = tls.block_dim;
  return t.x + d.x * (t.y + d.y * t.z);
}

}  // namespace

bool in_checked_launch() noexcept { return tls.checker != nullptr; }

// The accessors call these only in a checked launch: tls.checker is set.

void* checked_span_element(const void* data, std::size_t index, std::size_t count, std::size_t element_bytes,
                           bool read_only) {
  return tls.checker->span_element(running_rank(), data, index, count, element_bytes, read_only);
}

void checked_atomic(const void* address, std::size_t bytes) { tls.checker->atomic(running_rank(), address, bytes); }

void checked_phase_end() { tls.checker->barrier_complete(); }

void checked_thread_step() { tls.checker->thread_switch(); }

bool checked_threads_reversed() noexcept { return tls.checker != nullptr && tls.checker->second_run(); }

void checked_thread_end() {
  // Throwing here, after the kernel returned, fails the block as a report from the kernel would.
  if (auto divergence = tls.checker->thread_exit(running_rank())) throw check::Report(std::move(*divergence), false);
}

}  // namespace devctx::detail::cpu
