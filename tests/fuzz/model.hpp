// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/model.hpp - the host model the fuzzers check devctx against: what every buffer
// must contain, which orderings the API guarantees, and which failures are still to be reported.
//
// Ordering is tracked with vector clocks. Each queue (the context's stream, each created
// stream, and each stream that replaced a dropped one) numbers the work enqueued on it; a
// queue's `knows` vector says how far every queue's work is guaranteed finished before the
// next op on it starts (raised by enqueue_wait_for), and `host_` says what the host knows to be
// finished (raised by the synchronizes, by copies to or from ordinary host memory, which return
// once done, and by elapsed_ms, which waits for its events). Work enqueued after the host
// learned something is ordered after it. Each buffer keeps the accesses (queue, number, range,
// read or write) not yet known finished; two accesses of different queues to overlapping
// elements, one a write, with neither ordered before the other, are a race whose result the API
// leaves undefined: the generator never makes one, and the runner skips an op that would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <devctx/error.hpp>

#include "fuzz/op.hpp"

namespace devctx_fuzz {

/// What the model must know of the device and backend.
struct Limits {
  Shape max_grid;
  Shape max_block;
  std::uint64_t max_threads = 0;
  std::uint64_t max_shared = 0;
  /// True where the launch itself refuses DEVCTX_SHARED + shared_bytes over the limit (CUDA);
  /// false where that is a failure reported at the next synchronize (CPU).
  bool static_shared_at_call = false;
  /// Device code can throw (CPU backend) and then fails only its kernel.
  bool kernels_can_throw = false;
};

/// Static shared memory of the kernels that declare DEVCTX_SHARED (kernels.cpp).
inline constexpr std::uint64_t kKernelStaticShared = 1024 * 4;

struct Range {
  std::uint64_t lo = 0, hi = 0;  ///< [lo, hi)
  [[nodiscard]] std::uint64_t size() const { return hi - lo; }
  [[nodiscard]] bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi && lo < hi && o.lo < o.hi; }
};

struct Access {
  int queue = 0;
  std::uint64_t seq = 0;
  Range range;
  bool write = false;
};

/// One access an op is about to make.
struct Use {
  int slot = 0;
  Range range;
  bool write = false;
};

struct SlotModel {
  enum class State : std::uint8_t { empty, live, moved };
  State state = State::empty;
  BufKind kind = BufKind::device;
  Elem elem = Elem::u32;
  std::vector<std::uint32_t> value;  ///< one per element (u8 buffers keep the low byte)
  std::vector<std::uint8_t> known;   ///< 0 where the contents are undefined (never written)
  std::vector<Access> accesses;      ///< not yet known finished by the host
  [[nodiscard]] std::size_t size() const { return value.size(); }
  [[nodiscard]] bool live() const { return state == State::live; }
};

struct QueueModel {
  bool alive = true;  ///< false once its Stream (or second context) was dropped
  int context = 0;    ///< 0: the first context; each second context gets a new number
  std::uint64_t count = 0;
  std::vector<std::uint64_t> knows;
  struct Failure {
    std::uint64_t seq;
    devctx::Errc code;
  };
  std::vector<Failure> failures;  ///< failed work not yet reported
};

struct EventModel {
  bool recorded = false;
  int queue = -1;
  std::uint64_t seq = 0;
  std::vector<std::uint64_t> covers;  ///< what is finished once the event is
};

/// The failures a wait must report: it must throw one of `definite` when that is not empty, may
/// throw one of `possible` (failures of dropped streams, which may have been discarded).
struct ExpectedFailures {
  std::vector<devctx::Errc> definite;
  std::vector<devctx::Errc> possible;
};

class Model {
 public:
  explicit Model(const Limits& limits);

  [[nodiscard]] const Limits& limits() const { return limits_; }
  [[nodiscard]] const SlotModel& slot(int i) const { return slots_[std::size_t(i)]; }
  [[nodiscard]] SlotModel& slot(int i) { return slots_[std::size_t(i)]; }
  [[nodiscard]] const EventModel& event(int i) const { return events_[std::size_t(i)]; }
  [[nodiscard]] int queue_of(int stream) const { return stream_queue_[std::size_t(stream)]; }
  [[nodiscard]] bool queue_alive(int queue) const { return queues_[std::size_t(queue)].alive; }
  /// 0 for the first context's queues (ctx.synchronize() covers them), else a second context's.
  [[nodiscard]] int queue_context(int queue) const { return queues_[std::size_t(queue)].context; }
  /// The stream whose queue this is, or -1 for a dropped one.
  [[nodiscard]] int stream_of(int queue) const;

  /// The range a view covers in its slot, or nothing when it does not fit (out of range).
  [[nodiscard]] static bool resolve(const SlotModel& s, const View& v, Range& out);

  // ---- ordering ----
  /// Queues whose unfinished accesses race with `uses` if made by the next op on `stream`.
  [[nodiscard]] std::vector<int> racing_queues(int stream, const std::vector<Use>& uses) const;
  /// Queues whose unfinished accesses race with the host touching `uses` now.
  [[nodiscard]] std::vector<int> host_racing_queues(const std::vector<Use>& uses) const;
  /// Numbers the next op of `stream` (ordering it after what the host knows finished).
  std::uint64_t enqueue(int stream);
  void add_access(int slot, int stream, std::uint64_t seq, Range range, bool write);
  /// The host knows `stream`'s work up to now is finished (a copy to or from host memory returned).
  void stream_done_on_host(int stream);
  void record_event(int stream, int event);
  void wait_event(int stream, int event);
  /// A stream (or the second context) was replaced by a new one: the old queue lives on
  /// without a handle.
  void new_stream(int stream);
  /// The host waited for an event (event.synchronize(), elapsed_ms).
  void event_done_on_host(int event);
  /// The host knows everything enqueued on the first context (ctx.synchronize()) is finished.
  void context_done_on_host();
  [[nodiscard]] bool host_knows_event_done(int event) const;

  // ---- failures ----
  void add_failure(int stream, std::uint64_t seq, devctx::Errc code);
  /// The failures ctx.synchronize() reports: those of the first context's streams.
  ExpectedFailures take_failures_context();
  ExpectedFailures take_failures_stream(int stream);
  ExpectedFailures take_failures_event(int event);

  // ---- contents ----
  void create(int slot, BufKind kind, Elem elem, std::uint64_t count);
  void drop(int slot);
  void move(int from, int to);
  void host_fill(int slot, std::uint64_t seed);
  void copy(int dst_slot, Range dst, int src_slot, Range src);
  void fill(int slot, Range r, std::uint32_t value);
  /// A tensor op's writes: element r.lo + offsets[i] gets base + i (tensor_plan.hpp).
  void tensor(int slot, Range r, const std::vector<std::uint64_t>& offsets, std::uint32_t base);
  /// The effect of a kernel that ran to completion (kernels.cpp defines them; this mirrors it).
  void kernel(KernelId k, const Shape& grid, const Shape& block, int in_slot, Range in, int out_slot, Range out,
              std::uint32_t value);

  /// The value a host fill with `seed` writes to element i of a buffer of `elem`.
  [[nodiscard]] static std::uint32_t fill_value(std::uint64_t seed, std::size_t i, Elem elem);

 private:
  void host_learns(const std::vector<std::uint64_t>& v);
  void prune();

  Limits limits_;
  std::vector<SlotModel> slots_;
  std::vector<QueueModel> queues_;
  std::vector<int> stream_queue_;
  std::vector<EventModel> events_;
  std::vector<std::uint64_t> host_;
  int contexts_ = 1;
};

}  // namespace devctx_fuzz
