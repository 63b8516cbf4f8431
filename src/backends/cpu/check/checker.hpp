// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/checker.hpp - checking mode for one executor: what a checked launch's
// kernel code and the block executor tell it, and the messages of what it finds.
//
// A checked launch runs its blocks one after another on one executor, and the executor runs a
// block's threads one at a time, switching only at barriers and warp operations. The checker
// sees every element access through a checked span (span[i]), every atomic, every barrier
// arrival, every switch between threads and every thread's return; its parts decide:
//   regions.hpp        which argument, shared array or allocation an address belongs to
//   access_log.hpp     races and reads of unwritten memory through spans
//   order_check.hpp    shared-memory races, by write sets and by running blocks in two orders
//   barrier_check.hpp  barrier divergence
// Out-of-bounds span indices are found here, before the element is touched; out-of-bounds
// indices into DEVCTX_SHARED arrays by the guard pages of the checked shared-memory layout
// (arenas.hpp, stack_overflow.cpp), and accesses through raw pointers past the end (or before the
// start) of checked device memory by the guard pages around it (guarded_memory.hpp); the
// *_fault_text functions turn such faults into reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <devctx/detail/base/seam.hpp>
#include <devctx/error.hpp>
#include <devctx/launch.hpp>

#include "backends/cpu/check/access_log.hpp"
#include "backends/cpu/check/barrier_check.hpp"
#include "backends/cpu/check/guarded_memory.hpp"
#include "backends/cpu/check/init_shadow.hpp"
#include "backends/cpu/check/order_check.hpp"
#include "backends/cpu/check/regions.hpp"

namespace devctx::detail {
struct SourceSite;  // <devctx/detail/base/source_site.hpp>
}  // namespace devctx::detail

namespace devctx::detail::cpu::check {

/// What checking mode found, thrown inside a checked block. The executor reports it as the
/// block's failure: "kernel 'k' failed in block B[, thread T]: <what()>", naming the running
/// thread only when the finding is about it alone.
class Report : public Error {
 public:
  /// The code of every checking-mode report.
  static constexpr Errc kCode = Errc::check_failed;

  Report(std::string message, bool about_current_thread);
  [[nodiscard]] bool about_current_thread() const noexcept { return about_current_thread_; }

 private:
  bool about_current_thread_;
};

/// One devctx::span argument of a checked launch.
using SpanArgument = LaunchSpan;

/// Where `site` is, as messages write it: the file's name without its directories.
[[nodiscard]] BarrierSite site_of(const SourceSite& site) noexcept;

class Checker {
 public:
  // ---- set up by the executor --------------------------------------------------------------
  /// A launch starts. `registry` holds the written-bytes records of the device's checked
  /// allocations (null: no read is reported as uninitialised). `arguments` stays valid for the
  /// launch (messages about device memory name the arguments that point into it).
  void begin_launch(std::string_view kernel, Dim3 grid, Dim3 block, std::span<const SpanArgument> arguments,
                    std::size_t dynamic_shared_bytes, const ShadowRegistry* registry);
  /// A DEVCTX_SHARED array of `element_bytes`-byte elements laid out at `offset` in the block's
  /// shared memory (again: ignored). Declared while the block runs: fills it (order_check.hpp).
  void add_shared_array(std::string_view name, std::size_t offset, std::size_t bytes, std::size_t element_bytes);
  /// Block `index` starts; its shared memory begins at `shared_base`.
  void begin_block(Dim3 index, const std::byte* shared_base);

  // ---- kernel code (rank: the running thread's rank in its block) ------------------------
  /// &data[index] for a checked span of `count` elements; throws a Report when out of bounds.
  void* span_element(std::uint32_t rank, const void* data, std::size_t index, std::size_t count,
                     std::size_t element_bytes, bool read_only);
  /// The running thread (tls.thread_idx) switches away at a warp operation, or a block-level
  /// phase finished its part; throws a Report for a write-write race on shared memory.
  void thread_switch();
  /// The running thread is about to update `bytes` bytes at `address` atomically.
  void atomic(std::uint32_t rank, const void* address, std::size_t bytes);

  // ---- the executor -----------------------------------------------------------------------
  /// Thread `rank` arrives at the barrier() at `site`; throws a Report on divergence.
  void barrier_arrive(std::uint32_t rank, const BarrierSite& site);
  /// The barrier is passed (or a block-level phase ended); throws a Report for what the
  /// interval that ends here did wrong.
  void barrier_complete();
  /// Thread `rank` returned; the divergence message when that strands threads at a barrier.
  [[nodiscard]] std::optional<std::string> thread_exit(std::uint32_t rank);
  /// Every thread of the block returned; throws a Report for the last interval (and, after the
  /// second run, for device memory that differs between the two orders).
  void block_end();
  /// Whether the block just run (without a report) runs again, its threads in reverse order.
  [[nodiscard]] bool wants_second_run() const noexcept { return order_.wants_second_run(); }
  /// The second run of the block starts: restores its memory (order_check.hpp).
  void begin_second_run() { order_.begin_second_run(); }
  /// True during the second run: accesses are only bounds-checked, barriers only compared.
  [[nodiscard]] bool second_run() const noexcept { return order_.second_run(); }
  /// The message for an access at `address` in the guard page after a DEVCTX_SHARED array
  /// (or dynamic shared memory), or nullopt when no array ends just before it.
  [[nodiscard]] std::optional<std::string> guard_fault_text(const void* address) const;
  /// The message for an access of kind `access` at `address`, in a guard page of the checked
  /// device allocation `hit` (guarded_memory.hpp): the argument whose pointer points into that
  /// allocation, the index through it, and whether it was past the end or before the start.
  [[nodiscard]] std::string allocation_fault_text(const void* address, const GuardedHit& hit, Access access) const;

  [[nodiscard]] Dim3 block_dim() const noexcept { return block_; }

 private:
  [[nodiscard]] Region* region_of(const void* address);
  [[noreturn]] void report(const Finding& finding) const;
  [[noreturn]] void report(const OrderFinding& finding);
  void segment_end();
  [[nodiscard]] std::string divergence_text(const Divergence& d) const;
  [[nodiscard]] std::string thread_text(std::uint32_t rank) const;
  [[nodiscard]] std::string thread_text(const ThreadRef& t) const;
  [[nodiscard]] std::string interval_text(std::uint32_t interval) const;

  const ShadowRegistry* registry_ = nullptr;
  std::span<const SpanArgument> arguments_;
  std::string_view kernel_;
  Dim3 grid_;
  Dim3 block_;
  Dim3 block_idx_;
  std::uint64_t block_linear_ = 0;
  RegionTable regions_;
  AccessLog log_;
  OrderCheck order_;
  BarrierCheck barriers_;
};

}  // namespace devctx::detail::cpu::check
