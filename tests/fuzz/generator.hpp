// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/generator.hpp - turns decisions (a seed or libFuzzer bytes) into a program of ops
// that is free of races: before an op that would race with unfinished work of another stream it
// emits the ordering that makes it safe (an event and a wait, or a synchronize), the way a
// correct program would. Mistakes the API must refuse (mismatched sizes, out-of-range slices,
// bad launch shapes, moved-from handles, absurd sizes) are generated on purpose.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "fuzz/choices.hpp"
#include "fuzz/model.hpp"
#include "fuzz/op.hpp"

namespace devctx_fuzz {

/// Switches that keep known defects (issue 10) out of a run; each one named after what it avoids.
struct GenOptions {
  /// Copies between overlapping ranges of one buffer. Off with --no-overlap-copies: issue 10
  /// item 4 (wrong above 1 MiB on the CPU; semantics undecided, undefined on CUDA).
  bool overlap_copies = true;
  /// Allocation sizes whose byte count rounds up past 2^64. Off with --no-huge-sizes: issue 10
  /// item 1 (they "succeeded" with a tiny block behind them; fixed since, the switch stays for
  /// older trees). Sizes that overflow the byte count itself, and absurd but representable ones,
  /// are generated either way.
  bool huge_sizes = true;
  /// Kernels that throw (CPU backend). Off with --no-throwing-kernels.
  bool throwing_kernels = true;
  /// ... and kernels that throw between two barrier()s, on a fiber. Off with
  /// --no-throws-in-fibers: under ASan and UBSan that path reports issue 10 item 7 (fiber
  /// switches not annotated: "ASan is ignoring requested __asan_handle_no_return") and a null
  /// pointer offset in BlockRun::prefetch_ahead (docs/fuzzing.md, "Findings").
  bool throws_in_fibers = true;
  /// Buffers of 1-2 MiB (where copies are split among workers).
  bool large_buffers = true;
  /// The largest ordinary buffer, in elements.
  std::uint64_t max_elements = 4096;
};

class Generator {
 public:
  Generator(Choices& choices, const GenOptions& options) : c_(choices), opt_(options) {}

  /// The next op for the program's current state (`model` after every op so far).
  [[nodiscard]] Op next(const Model& model);

 private:
  [[nodiscard]] std::optional<Op> intent(const Model& m);
  [[nodiscard]] std::optional<Op> make_create(const Model& m);
  [[nodiscard]] std::optional<Op> make_copy(const Model& m);
  [[nodiscard]] std::optional<Op> make_memset(const Model& m);
  [[nodiscard]] std::optional<Op> make_kernel(const Model& m);
  [[nodiscard]] std::optional<Op> make_tensor(const Model& m);
  /// One extent for a tensor op: small most of the time, else near 2^32, 2^62, 2^63 or 2^64.
  [[nodiscard]] std::uint64_t tensor_extent();
  [[nodiscard]] View make_view(const SlotModel& s, int slot, std::uint64_t count, bool out_of_range);
  [[nodiscard]] Shape block_shape(const Limits& l, bool warps);
  [[nodiscard]] Shape grid_shape(const Limits& l, std::uint64_t blocks_wanted, std::uint64_t max_blocks);
  void invalid_shape(const Limits& l, Op& op);
  /// A slot for which `ok(slot)` holds, or -1.
  template <class Pred>
  [[nodiscard]] int pick_slot(const Model& m, Pred ok);
  /// The ordering that lets `op` run without a race, or nothing when it already can (or never
  /// can: then abandon_ is set).
  [[nodiscard]] std::optional<Op> ordering_for(const Model& m, Op& op);

  Choices& c_;
  GenOptions opt_;
  std::optional<Op> intent_;
  std::deque<Op> queued_;
  int orderings_ = 0;
  bool abandon_ = false;
};

}  // namespace devctx_fuzz
