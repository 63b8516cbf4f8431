// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cpu_collectives.cpp - collectives among CPU devices of one process: each
// rank's call becomes three operations on its own queue, which meet the other ranks' at gates.
//
//   arrive   (no parts)  counts the rank in once the work before it on its stream is done;
//   compute  (one part)  held at the "arrived" gate until every rank is in, then computes this
//                        rank's result from the other ranks' memory (all CPU device memory is
//                        host memory);
//   finish   (0/1 part)  held at the "done" gate until every rank has read what it needs, so
//                        that no rank's later work overwrites memory another still reads; it
//                        copies an in-place result out of its scratch buffer.
//
// No worker ever blocks: a queue at a closed gate is simply not pumped (as for an event wait),
// so any number of ranks run on any number of workers. Every CPU device shares one lock
// (cpu_device.hpp), which guards the gates as it guards event waits.
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_device.hpp"
#include "backends/cpu/cpu_queue.hpp"
#include "backends/cpu/operations.hpp"
#include "backends/cpu/settings.hpp"
#include "comm/comm_impl.hpp"
#include "comm/engines.hpp"
#include "comm/host_reduce.hpp"
#include "core/errors.hpp"

namespace devctx::detail {
namespace cpu {
namespace {

struct Rendezvous;

struct RendezvousGate final : Gate {
  RendezvousGate(std::size_t parties, Rendezvous& r) : Gate(parties), owner(r) {}
  void expire() noexcept override;
  Rendezvous& owner;
};

/// One party's buffers, set once by its call (under the group's mutex) and read by the other
/// parties' compute ops only after the "arrived" gate opened (ordered by the shared lock).
struct Side {
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
  std::vector<std::byte> scratch;            // the result of an in-place call, until the "done" gate
  check::ShadowRegistry* written = nullptr;  // the party's device's record of written memory
  std::atomic<bool> joined{false};
};

/// One collective call (or one send/recv pair) as all its parties meet it.
struct Rendezvous {
  Rendezvous(const CollectiveCall& first, std::size_t parties_, std::string what_, std::size_t element_bytes_,
             Clock::time_point deadline)
      : kind(first.kind == CollectiveKind::recv ? CollectiveKind::send : first.kind),
        type(first.type),
        op(first.op),
        root(first.root),
        count(first.kind == CollectiveKind::reduce_scatter || first.kind == CollectiveKind::recv ? first.recv.count
                                                                                                 : first.send.count),
        parties(parties_),
        element_bytes(element_bytes_),
        what(std::move(what_)),
        sides(parties_),
        arrived_gate(parties_, *this),
        done_gate(parties_, *this) {
    arrived_gate.deadline = deadline;
  }

  /// Records why the call failed and opens both gates, so that every party that reached them
  /// reports the failure instead of waiting. Shared lock held.
  void fail_and_open(const std::string& why) noexcept {
    if (failure.empty()) {
      try {
        failure = why;
      } catch (...) {
        failure_without_text = true;
      }
    }
    if (!arrived_gate.open) arrived_gate.open_now();
    if (!done_gate.open) done_gate.open_now();
  }
  [[nodiscard]] bool failed() const noexcept { return !failure.empty() || failure_without_text; }

  /// Computes party `p`'s result. Runs on a worker after every party arrived.
  void compute(std::size_t p) noexcept {
    Side& me = sides[p];
    std::byte* out = me.scratch.empty() ? me.recv : me.scratch.data();
    const std::size_t bytes = count * element_bytes;
    std::vector<const void*> inputs;  // one per party; no memory for it fails the collective
    auto all_sends = [&](std::size_t offset) {
      inputs.clear();
      for (const Side& s : sides) inputs.push_back(s.send + offset);
    };
    try {
      switch (kind) {
        case CollectiveKind::all_reduce:
          all_sends(0);
          host_reduce(type, op, out, inputs.data(), parties, count);
          break;
        case CollectiveKind::reduce:
          if (int(p) != root) break;
          all_sends(0);
          host_reduce(type, op, out, inputs.data(), parties, count);
          break;
        case CollectiveKind::broadcast:
          if (int(p) != root && bytes > 0) std::memcpy(out, sides[std::size_t(root)].send, bytes);
          break;
        case CollectiveKind::all_gather:
          for (std::size_t q = 0; q < parties; ++q)
            if (bytes > 0) std::memcpy(out + q * bytes, sides[q].send, bytes);
          break;
        case CollectiveKind::reduce_scatter:
          all_sends(p * bytes);
          host_reduce(type, op, out, inputs.data(), parties, count);
          break;
        case CollectiveKind::send:
        case CollectiveKind::recv:
          if (p == 1 && bytes > 0) std::memcpy(out, sides[0].send, bytes);
          break;
      }
    } catch (...) {
      compute_failed = true;  // no memory for the input list
    }
    if (out == me.recv) mark_written(p);
  }

  /// Checking mode: party `p`'s result counts as written device memory.
  void mark_written(std::size_t p) noexcept {
    const Side& me = sides[p];
    if (me.recv != nullptr && !me.written->empty()) me.written->mark_written(me.recv, result_bytes(p));
  }

  [[nodiscard]] std::size_t result_bytes(std::size_t p) const noexcept {
    if (kind == CollectiveKind::all_gather) return count * element_bytes * parties;
    if (kind == CollectiveKind::send) return p == 1 ? count * element_bytes : 0;
    return count * element_bytes;
  }

  const CollectiveKind kind;  // send for both halves of a send/recv pair
  const DataType type;
  const ReduceOp op;
  const int root;
  const std::size_t count;  // elements each party contributes (recv's for reduce_scatter)
  const std::size_t parties;
  const std::size_t element_bytes;
  const std::string what;  // "all_reduce #3 of the communicator of cpu:0, cpu:1"
  std::vector<Side> sides;
  // Guarded by the shared lock.
  std::size_t arrived = 0;
  std::size_t finished = 0;
  std::string failure;
  bool failure_without_text = false;
  std::atomic<bool> compute_failed{false};
  RendezvousGate arrived_gate;
  RendezvousGate done_gate;
};

void RendezvousGate::expire() noexcept {
  try {
    std::string missing, busy;
    for (std::size_t q = 0; q < owner.sides.size(); ++q) {
      std::string& list = owner.sides[q].joined ? busy : missing;
      list += concat(list.empty() ? "" : ", ", q);
    }
    std::string why = concat(owner.what, ": timed out after ", comm_timeout_seconds(), " s (DEVCTX_COMM_TIMEOUT_S)");
    if (!missing.empty()) why += concat("; party(ies) ", missing, " never made the call");
    if (!busy.empty()) why += concat("; party(ies) ", busy, " made it");
    why += "; every rank must make the same collective calls in the same order";
    owner.fail_and_open(why);
  } catch (...) {
    owner.fail_and_open("");
  }
}

struct ArriveOp final : Op {
  explicit ArriveOp(std::shared_ptr<Rendezvous> r) : rdv(std::move(r)) {}
  void finish(std::list<QueuedFailure>&) noexcept override {
    if (++rdv->arrived == rdv->parties && !rdv->arrived_gate.open) {
      rdv->done_gate.deadline = Clock::time_point::max();  // all are in: computing always finishes
      rdv->arrived_gate.open_now();
    }
  }
  std::shared_ptr<Rendezvous> rdv;
};

struct ComputeOp final : Op {
  ComputeOp(std::shared_ptr<Rendezvous> r, std::size_t p) : rdv(std::move(r)), party(p) {
    parts = 1;
    failure_slot.emplace_back();  // the node a failure is queued in, allocated now
  }
  [[nodiscard]] Gate* gate() const noexcept override { return &rdv->arrived_gate; }
  void run_part(std::size_t) noexcept override {
    if (!rdv->failed()) rdv->compute(party);
  }
  void finish(std::list<QueuedFailure>& failures) noexcept override {
    if (rdv->failed() || rdv->compute_failed) {
      QueuedFailure& f = failure_slot.front();
      f.seq = seq;
      f.failure.code = Errc::backend_error;
      try {
        f.failure.message = rdv->compute_failed ? concat(rdv->what, ": no memory to run it") : rdv->failure;
      } catch (...) {
      }
      failures.splice(failures.end(), failure_slot);
    }
    if (++rdv->finished == rdv->parties && !rdv->done_gate.open) rdv->done_gate.open_now();
  }
  std::shared_ptr<Rendezvous> rdv;
  std::size_t party;
  std::list<QueuedFailure> failure_slot;
};

struct FinishOp final : Op {
  FinishOp(std::shared_ptr<Rendezvous> r, std::size_t p) : rdv(std::move(r)), party(p) {
    parts = rdv->sides[party].scratch.empty() ? 0 : 1;
  }
  [[nodiscard]] Gate* gate() const noexcept override { return &rdv->done_gate; }
  void run_part(std::size_t) noexcept override {
    Side& me = rdv->sides[party];
    if (rdv->failed() || rdv->compute_failed) return;
    std::memcpy(me.recv, me.scratch.data(), me.scratch.size());
    rdv->mark_written(party);
  }
  std::shared_ptr<Rendezvous> rdv;
  std::size_t party;
};

/// What the ranks of one group share: the calls made so far, and the calls some rank has made
/// and others not yet.
struct Group {
  std::mutex mutex;
  std::string label;  // "the communicator of cpu:0, cpu:1"
  Clock::duration timeout;
  std::vector<std::uint64_t> collectives;                 // per rank: collective calls made
  std::map<std::pair<int, int>, std::uint64_t> sends;     // (from, to): sends made
  std::map<std::pair<int, int>, std::uint64_t> receives;  // (from, to): recvs made
  // Key: (0, 0, 0, n) for the n-th collective; (1, from, to, n) for the n-th message from -> to.
  std::map<std::tuple<int, int, int, std::uint64_t>, std::pair<std::shared_ptr<Rendezvous>, std::size_t>> open;
};

std::string describe(const CollectiveCall& c, std::size_t count) {
  std::string s = concat(to_string(c.kind), " of ", count, ' ', to_string(c.type));
  if (c.kind == CollectiveKind::all_reduce || c.kind == CollectiveKind::reduce || c.kind == CollectiveKind::reduce_scatter)
    s += concat(" with ", to_string(c.op));
  if (c.kind == CollectiveKind::broadcast || c.kind == CollectiveKind::reduce) s += concat(", root ", c.root);
  return s;
}

bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) noexcept {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

class CpuRank final : public CommImpl {
 public:
  CpuRank(DeviceImpl& device, int rank, int size, std::shared_ptr<Group> group)
      : CommImpl(device, rank, size), group_(std::move(group)) {}

  void enqueue(QueueImpl& queue, const CollectiveCall& call, std::size_t element_bytes) override {
    auto& cq = static_cast<CpuQueue&>(queue);  // core checked: a queue of this rank's CPU device
    Group& g = *group_;
    const std::lock_guard group_lock(g.mutex);
    const bool p2p = call.kind == CollectiveKind::send || call.kind == CollectiveKind::recv;
    const int from = call.kind == CollectiveKind::recv ? call.root : rank();
    const int to = call.kind == CollectiveKind::recv ? rank() : call.root;
    std::uint64_t& counter = !p2p                                ? g.collectives[std::size_t(rank())]
                             : call.kind == CollectiveKind::send ? g.sends[{from, to}]
                                                                 : g.receives[{from, to}];
    const auto key = p2p ? std::make_tuple(1, from, to, counter) : std::make_tuple(0, 0, 0, counter);
    const std::size_t party = p2p ? (call.kind == CollectiveKind::send ? 0 : 1) : std::size_t(rank());
    const std::size_t parties = p2p ? 2 : std::size_t(size());
    const std::size_t count = call.kind == CollectiveKind::reduce_scatter || call.kind == CollectiveKind::recv
                                  ? call.recv.count
                                  : call.send.count;
    auto found = g.open.find(key);
    std::shared_ptr<Rendezvous> rdv;
    if (found == g.open.end()) {
      const std::string what = p2p ? concat("Communicator send #", counter, " from rank ", from, " to rank ", to,
                                            " of ", g.label)
                                   : concat("Communicator::", to_string(call.kind), " #", counter, " of ", g.label);
      rdv = std::make_shared<Rendezvous>(call, parties, what, element_bytes, Clock::now() + g.timeout);
      found = g.open.emplace(key, std::make_pair(rdv, std::size_t{0})).first;
    } else {
      rdv = found->second.first;
    }
    // Whatever happens below, this call takes its place in the sequence: the next call of this
    // rank is the next collective, as on the other ranks.
    struct Account {
      Group& g;
      std::uint64_t& counter;
      decltype(found) entry;
      std::size_t parties;
      ~Account() {
        ++counter;
        if (++entry->second.second == parties) g.open.erase(entry);
      }
    } account{g, counter, found, parties};
    if (rdv->failed())
      fail(Errc::invalid_argument, rdv->failure.empty() ? concat(rdv->what, " failed") : rdv->failure,
           " (this rank's call enqueued nothing)");
    const CollectiveKind kind = call.kind == CollectiveKind::recv ? CollectiveKind::send : call.kind;
    const bool reducing = kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce ||
                          kind == CollectiveKind::reduce_scatter;
    const bool rooted = kind == CollectiveKind::broadcast || kind == CollectiveKind::reduce;
    if (kind != rdv->kind || call.type != rdv->type || count != rdv->count || (reducing && call.op != rdv->op) ||
        (rooted && call.root != rdv->root)) {
      const std::string why =
          concat(rdv->what, ": rank ", rank(), " called ", describe(call, count), " where another party called ",
                 to_string(rdv->kind), " of ", rdv->count, ' ', to_string(rdv->type),
                 reducing || rdv->kind == CollectiveKind::all_reduce ? concat(" with ", to_string(rdv->op)) : "",
                 rooted ? concat(", root ", rdv->root) : "",
                 "; every rank must make the same collective calls, with the same types, operations, roots and sizes, "
                 "in the same order");
      {
        Pool& pool = cq.cpu_device().pool();
        std::unique_lock lock(pool.mutex);
        rdv->fail_and_open(why);
        CpuQueue::release_idle(pool, lock);  // queues the opening left without work
      }
      fail(Errc::invalid_argument, why, " (this rank's call enqueued nothing; the others fail at their synchronize)");
    }
    // Everything that can fail comes first; then the side is published and the ops queued.
    Side& side = rdv->sides[party];
    auto* send = static_cast<std::byte*>(call.send.data);
    auto* recv = static_cast<std::byte*>(call.recv.data);
    const std::size_t out_bytes = rdv->result_bytes(party);
    const bool writes = out_bytes > 0 && !(kind == CollectiveKind::broadcast && rank() == rdv->root) &&
                        !(kind == CollectiveKind::reduce && rank() != rdv->root);
    std::vector<std::byte> scratch;
    const bool others_read_mine = kind == CollectiveKind::all_reduce || kind == CollectiveKind::all_gather ||
                                  kind == CollectiveKind::reduce_scatter;
    if (writes && others_read_mine && overlaps(recv, out_bytes, send, call.send.count * element_bytes))
      scratch.resize(out_bytes);
    auto arrive = std::make_unique<ArriveOp>(rdv);
    auto compute = std::make_unique<ComputeOp>(rdv, party);
    side.scratch = std::move(scratch);
    auto finish = std::make_unique<FinishOp>(rdv, party);
    side.written = &cq.cpu_device().written();
    side.send = send;
    side.recv = writes ? recv : nullptr;
    side.joined = true;
    cq.enqueue(std::move(arrive));
    cq.enqueue(std::move(compute));
    cq.enqueue(std::move(finish));
  }

 private:
  std::shared_ptr<Group> group_;
};

}  // namespace
}  // namespace cpu

std::vector<std::shared_ptr<CommImpl>> create_cpu_group(QueueImpl* const* queues, std::size_t count) {
  auto group = std::make_shared<cpu::Group>();
  group->timeout = std::chrono::duration_cast<cpu::Clock::duration>(std::chrono::duration<double>(comm_timeout_seconds()));
  group->collectives.assign(count, 0);
  group->label = "the communicator of ";
  for (std::size_t i = 0; i < count; ++i)
    group->label += concat(i == 0 ? "" : ", ", to_string(queues[i]->device().info().api), ':',
                           queues[i]->device().info().id);
  std::vector<std::shared_ptr<CommImpl>> ranks;
  ranks.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    ranks.push_back(std::make_shared<cpu::CpuRank>(queues[i]->device(), int(i), int(count), group));
  return ranks;
}

}  // namespace devctx::detail
