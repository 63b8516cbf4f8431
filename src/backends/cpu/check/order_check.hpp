// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/order_check.hpp - checking mode's shared-memory race detector, which
// needs no hook on the accesses: a DEVCTX_SHARED array is a plain T[n] (docs/checking.md).
//
// It compares memory instead of watching accesses, in two ways:
//  * write sets: a checked block's threads run one at a time, so the bytes of shared memory that
//    changed while one thread ran (from its resumption to its next barrier, warp operation or
//    return: a segment) are exactly the ones it wrote. Two threads changing one element between
//    the same two barriers is a write-write race, named with both threads.
//  * two orders: a thread that reads an element another thread writes between the same two
//    barriers reads a value that depends on which of them runs first. Each block whose launch has
//    DEVCTX_SHARED arrays runs twice: its threads in index order, then (with the launch's writable
//    span arguments and its shared memory restored) in reverse order. A kernel free of races
//    computes the same either way, so shared memory at every barrier and the writable arguments at
//    the block's end must come out the same; the first difference names the element, the barrier
//    and the threads that wrote it last in each run.
// Atomics may rightly make a result depend on the order (a slot claimed by atomic_add): a block
// that used one is not run twice, and bytes of shared memory that atomics update are left out of
// the write sets. Limits: a write of the value already there is invisible to the write sets; a
// race whose result does not depend on the order is not reported; blocks whose launch has more
// than 64 MiB of writable span arguments, or that used warp operations, are not run twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/check/regions.hpp"

namespace devctx::detail::cpu::check {

/// What the order check found; the Checker turns it into a message.
struct OrderFinding {
  enum class Kind : std::uint8_t {
    write_write,     ///< two threads changed the element between the same two barriers
    shared_differs,  ///< shared memory at barrier `interval` differs between the two orders
    global_differs,  ///< device memory at the block's end differs between the two orders
  };
  Kind kind = Kind::write_write;
  const Region* region = nullptr;  ///< for shared memory (device memory: the Checker looks it up)
  const std::byte* address = nullptr;
  std::size_t bytes = 0;
  /// Ranks + 1 (0: not known): write_write: the earlier writer and the running thread; the
  /// differences: the last writer in index order and in reverse order.
  std::uint32_t first = 0;
  std::uint32_t second = 0;
  std::uint32_t interval = 0;  ///< barriers completed (write_write, shared_differs)
};

class OrderCheck {
 public:
  /// The byte every shared array holds when a checked block starts (both runs start alike). Not
  /// device memory's 0xCD: a kernel storing it there would look like a reader of unwritten memory.
  static constexpr unsigned char kFill = 0x5A;

  /// Forgets every region (a new launch).
  void begin_launch();
  /// A writable span argument of the launch: restored for, and compared after, a second run.
  void add_writable(const void* data, std::size_t bytes);
  /// Shared memory `region` (an array, or dynamic shared memory) takes part; `now` when the
  /// block is running (an array declared for the first time), which fills it at once.
  void add_region(const Region& region, bool now);
  /// Whether blocks run a second time, in reverse order: the launch has DEVCTX_SHARED arrays.
  [[nodiscard]] bool wants_second_run() const noexcept {
    return has_arrays_ && !atomic_seen_ && writable_bytes_ <= kWritableBudget;
  }
  [[nodiscard]] bool second_run() const noexcept { return run_ == 1; }

  /// A block starts (its regions' addresses are current): fills shared memory.
  void begin_block();
  /// The running thread `rank` switches away (barrier, warp operation, return).
  [[nodiscard]] std::optional<OrderFinding> segment_end(std::uint32_t rank);
  /// An atomic on `bytes` bytes at `address`, `shared` when in shared memory.
  void note_atomic(const void* address, std::size_t bytes, bool shared);
  /// A barrier completed (or a block-level phase ended).
  [[nodiscard]] std::optional<OrderFinding> barrier();
  /// The first run ended: restores what it changed, for the second.
  void begin_second_run();
  /// The second run ended: compares the writable span arguments with the first run's.
  [[nodiscard]] std::optional<OrderFinding> end_second_run();

 private:
  struct Watched {
    const Region* region;
    std::size_t at;  ///< offset in the concatenated buffers
  };
  struct Writable {
    std::byte* data;
    std::size_t bytes;
    std::size_t at;  ///< offset in before_ and first_
  };
  static constexpr std::size_t kWritableBudget = std::size_t{64} << 20;
  void fill_all();
  [[nodiscard]] const Watched* watched_at(std::size_t at) const;
  [[nodiscard]] OrderFinding shared_finding(OrderFinding::Kind kind, std::size_t at) const;

  std::vector<Watched> watched_;
  std::size_t total_ = 0;
  bool has_arrays_ = false;
  bool atomic_seen_ = false;  ///< an atomic ran in this block
  bool first_block_ = true;   ///< the launch's first block (its arrays are not known before it)
  int run_ = 0;
  std::uint32_t barriers_ = 0;
  std::vector<std::byte> shadow_;              ///< shared memory as of the last segment's end
  std::vector<std::uint32_t> owner_;           ///< rank + 1 that changed each byte in this interval
  std::vector<std::uint32_t> writer_[2];       ///< rank + 1 that last changed each byte, per run
  std::vector<unsigned char> atomic_;          ///< bytes an atomic updated in this block
  std::vector<std::vector<std::byte>> snaps_;  ///< shared memory at each barrier of the first run
  std::size_t snap_bytes_ = 0;
  std::vector<Writable> writable_;
  std::size_t writable_bytes_ = 0;
  std::vector<std::byte> before_;  ///< the writable arguments before the block
  std::vector<std::byte> first_;   ///< ... after its first run
};

}  // namespace devctx::detail::cpu::check
