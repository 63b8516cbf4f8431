// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/model.cpp - the host model: orderings (vector clocks), pending failures, and what
// every buffer must hold after each operation.
#include "fuzz/model.hpp"

#include <algorithm>
#include <utility>

#include "fuzz/choices.hpp"

namespace devctx_fuzz {
namespace {

std::uint64_t at(const std::vector<std::uint64_t>& v, int i) {
  return std::size_t(i) < v.size() ? v[std::size_t(i)] : 0;
}

void raise(std::vector<std::uint64_t>& v, int i, std::uint64_t x) {
  if (v.size() <= std::size_t(i)) v.resize(std::size_t(i) + 1, 0);
  v[std::size_t(i)] = std::max(v[std::size_t(i)], x);
}

void merge(std::vector<std::uint64_t>& into, const std::vector<std::uint64_t>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

std::uint32_t mask(std::uint32_t v, Elem e) { return e == Elem::u8 ? (v & 0xFFu) : v; }

}  // namespace

Model::Model(const Limits& limits) : limits_(limits), slots_(kSlots), events_(kEvents) {
  for (int s = 0; s < kStreams; ++s) {
    stream_queue_.push_back(int(queues_.size()));
    queues_.emplace_back();
    if (s == kSecondContext) queues_.back().context = contexts_++;
  }
}

int Model::stream_of(int queue) const {
  for (int s = 0; s < kStreams; ++s)
    if (stream_queue_[std::size_t(s)] == queue) return s;
  return -1;
}

bool Model::resolve(const SlotModel& s, const View& v, Range& out) {
  if (v.whole) {
    out = {0, s.size()};
    return true;
  }
  if (v.offset > s.size() || v.count > s.size() - v.offset) return false;
  out = {v.offset, v.offset + v.count};
  return true;
}

// ---- ordering -------------------------------------------------------------------------------

std::vector<int> Model::racing_queues(int stream, const std::vector<Use>& uses) const {
  const int q = queue_of(stream);
  std::vector<std::uint64_t> known = queues_[std::size_t(q)].knows;
  merge(known, host_);
  std::vector<int> out;
  for (const Use& u : uses)
    for (const Access& a : slots_[std::size_t(u.slot)].accesses)
      if (a.queue != q && (u.write || a.write) && a.range.overlaps(u.range) && at(known, a.queue) < a.seq &&
          std::find(out.begin(), out.end(), a.queue) == out.end())
        out.push_back(a.queue);
  return out;
}

std::vector<int> Model::host_racing_queues(const std::vector<Use>& uses) const {
  std::vector<int> out;
  for (const Use& u : uses)
    for (const Access& a : slots_[std::size_t(u.slot)].accesses)
      if ((u.write || a.write) && a.range.overlaps(u.range) && at(host_, a.queue) < a.seq &&
          std::find(out.begin(), out.end(), a.queue) == out.end())
        out.push_back(a.queue);
  return out;
}

std::uint64_t Model::enqueue(int stream) {
  QueueModel& q = queues_[std::size_t(queue_of(stream))];
  merge(q.knows, host_);
  return ++q.count;
}

void Model::add_access(int slot, int stream, std::uint64_t seq, Range range, bool write) {
  if (range.size() == 0) return;
  const int q = queue_of(stream);
  auto& list = slots_[std::size_t(slot)].accesses;
  // A later access of the same queue that covers an earlier one and is at least as strong
  // (a write, or both reads) races with everything the earlier one races with.
  std::erase_if(list, [&](const Access& a) {
    return a.queue == q && a.range.lo >= range.lo && a.range.hi <= range.hi && (write || !a.write);
  });
  list.push_back({q, seq, range, write});
}

void Model::stream_done_on_host(int stream) {
  const int q = queue_of(stream);
  std::vector<std::uint64_t> v = queues_[std::size_t(q)].knows;
  raise(v, q, queues_[std::size_t(q)].count);
  host_learns(v);
}

void Model::record_event(int stream, int event) {
  const int q = queue_of(stream);
  const std::uint64_t seq = enqueue(stream);
  EventModel& e = events_[std::size_t(event)];
  e.recorded = true;
  e.queue = q;
  e.seq = seq;
  e.covers = queues_[std::size_t(q)].knows;
  raise(e.covers, q, seq);
}

void Model::wait_event(int stream, int event) {
  enqueue(stream);
  merge(queues_[std::size_t(queue_of(stream))].knows, events_[std::size_t(event)].covers);
}

void Model::new_stream(int stream) {
  queues_[std::size_t(queue_of(stream))].alive = false;
  stream_queue_[std::size_t(stream)] = int(queues_.size());
  queues_.emplace_back();
  if (stream == kSecondContext) queues_.back().context = contexts_++;
}

void Model::event_done_on_host(int event) { host_learns(events_[std::size_t(event)].covers); }

void Model::context_done_on_host() {
  for (std::size_t q = 0; q < queues_.size(); ++q)
    if (queues_[q].context == 0) raise(host_, int(q), queues_[q].count);
  prune();
}

bool Model::host_knows_event_done(int event) const {
  const EventModel& e = events_[std::size_t(event)];
  return e.recorded && at(host_, e.queue) >= e.seq;
}

void Model::host_learns(const std::vector<std::uint64_t>& v) {
  merge(host_, v);
  prune();
}

void Model::prune() {
  for (SlotModel& s : slots_) std::erase_if(s.accesses, [&](const Access& a) { return at(host_, a.queue) >= a.seq; });
}

// ---- failures -------------------------------------------------------------------------------

void Model::add_failure(int stream, std::uint64_t seq, devctx::Errc code) {
  queues_[std::size_t(queue_of(stream))].failures.push_back({seq, code});
}

ExpectedFailures Model::take_failures_context() {
  ExpectedFailures out;
  for (QueueModel& q : queues_) {
    if (q.context != 0) continue;
    for (const auto& f : q.failures) (q.alive ? out.definite : out.possible).push_back(f.code);
    q.failures.clear();
  }
  return out;
}

ExpectedFailures Model::take_failures_stream(int stream) {
  ExpectedFailures out;
  QueueModel& q = queues_[std::size_t(queue_of(stream))];
  for (const auto& f : q.failures) out.definite.push_back(f.code);
  q.failures.clear();
  return out;
}

ExpectedFailures Model::take_failures_event(int event) {
  ExpectedFailures out;
  const EventModel& e = events_[std::size_t(event)];
  QueueModel& q = queues_[std::size_t(e.queue)];
  for (const auto& f : q.failures)
    if (f.seq <= e.seq) (q.alive ? out.definite : out.possible).push_back(f.code);
  std::erase_if(q.failures, [&](const QueueModel::Failure& f) { return f.seq <= e.seq; });
  return out;
}

// ---- contents -------------------------------------------------------------------------------

std::uint32_t Model::fill_value(std::uint64_t seed, std::size_t i, Elem elem) {
  return mask(std::uint32_t(mix64(seed * 0x100000001B3ull + i)), elem);
}

void Model::create(int slot, BufKind kind, Elem elem, std::uint64_t count) {
  SlotModel& s = slots_[std::size_t(slot)];
  s = SlotModel{};
  s.state = SlotModel::State::live;
  s.kind = kind;
  s.elem = elem;
  s.value.assign(count, 0);
  s.known.assign(count, 0);
}

void Model::drop(int slot) { slots_[std::size_t(slot)] = SlotModel{}; }

void Model::move(int from, int to) {
  if (from == to) return;
  SlotModel& f = slots_[std::size_t(from)];
  const BufKind kind = f.kind;
  const Elem elem = f.elem;
  slots_[std::size_t(to)] = std::move(f);
  f = SlotModel{};
  // A moved-from DeviceBuffer/HostBuffer is an empty handle of its type (using it must throw);
  // a moved-from std::vector is just forgotten.
  if (kind != BufKind::vec) {
    f.state = SlotModel::State::moved;
    f.kind = kind;
    f.elem = elem;
  }
}

void Model::host_fill(int slot, std::uint64_t seed) {
  SlotModel& s = slots_[std::size_t(slot)];
  for (std::size_t i = 0; i < s.size(); ++i) {
    s.value[i] = fill_value(seed, i, s.elem);
    s.known[i] = 1;
  }
}

void Model::copy(int dst_slot, Range dst, int src_slot, Range src) {
  SlotModel& d = slots_[std::size_t(dst_slot)];
  const SlotModel& s = slots_[std::size_t(src_slot)];
  // Through temporaries: a copy within one buffer behaves as memmove.
  const std::vector<std::uint32_t> v(s.value.begin() + std::ptrdiff_t(src.lo), s.value.begin() + std::ptrdiff_t(src.hi));
  const std::vector<std::uint8_t> k(s.known.begin() + std::ptrdiff_t(src.lo), s.known.begin() + std::ptrdiff_t(src.hi));
  std::copy(v.begin(), v.end(), d.value.begin() + std::ptrdiff_t(dst.lo));
  std::copy(k.begin(), k.end(), d.known.begin() + std::ptrdiff_t(dst.lo));
}

void Model::fill(int slot, Range r, std::uint32_t value) {
  SlotModel& s = slots_[std::size_t(slot)];
  std::fill(s.value.begin() + std::ptrdiff_t(r.lo), s.value.begin() + std::ptrdiff_t(r.hi), mask(value, s.elem));
  std::fill(s.known.begin() + std::ptrdiff_t(r.lo), s.known.begin() + std::ptrdiff_t(r.hi), std::uint8_t{1});
}

void Model::tensor(int slot, Range r, const std::vector<std::uint64_t>& offsets, std::uint32_t base) {
  SlotModel& s = slots_[std::size_t(slot)];
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    s.value[r.lo + offsets[i]] = base + std::uint32_t(i);
    s.known[r.lo + offsets[i]] = 1;
  }
}

void Model::kernel(KernelId k, const Shape& grid, const Shape& block, int in_slot, Range in, int out_slot, Range out,
                   std::uint32_t value) {
  const SlotModel& is = slots_[std::size_t(in_slot)];
  const std::vector<std::uint32_t> x(is.value.begin() + std::ptrdiff_t(in.lo), is.value.begin() + std::ptrdiff_t(in.hi));
  const std::vector<std::uint8_t> xk(is.known.begin() + std::ptrdiff_t(in.lo), is.known.begin() + std::ptrdiff_t(in.hi));
  SlotModel& os = slots_[std::size_t(out_slot)];
  std::uint32_t* y = os.value.data() + out.lo;
  std::uint8_t* yk = os.known.data() + out.lo;
  const std::uint64_t n_out = out.size(), n_in = x.size();
  const std::uint64_t blocks = grid.volume(), per_block = block.volume(), threads = blocks * per_block;
  switch (k) {
    case KernelId::scale_add:
      for (std::uint64_t i = 0; i < std::min(n_in, n_out); ++i) {
        y[i] = value * x[i] + y[i];
        yk[i] = std::uint8_t(yk[i] & xk[i]);
      }
      break;
    case KernelId::block_reduce: {
      std::vector<std::uint32_t> sum(std::min(blocks, n_out), 0);
      std::vector<std::uint8_t> ok(sum.size(), 1);
      for (std::uint64_t i = 0; i < n_in; ++i) {
        const std::uint64_t b = (i % threads) / per_block;
        if (b < sum.size()) {
          sum[b] += x[i];
          ok[b] = std::uint8_t(ok[b] & xk[i]);
        }
      }
      for (std::size_t b = 0; b < sum.size(); ++b) {
        y[b] = sum[b];
        yk[b] = ok[b];
      }
      break;
    }
    case KernelId::block_reverse:
      for (std::uint64_t b = 0; b < blocks; ++b) {
        const std::uint64_t base = b * per_block;
        if (base >= n_in) break;
        const std::uint64_t m = std::min(per_block, n_in - base);
        for (std::uint64_t t = 0; t < m && base + t < n_out; ++t) {
          y[base + t] = x[base + m - 1 - t];
          yk[base + t] = xk[base + m - 1 - t];
        }
      }
      break;
    case KernelId::warp_sum:
      for (std::uint64_t w = 0; w < threads / 32 && w < n_out; ++w) {
        std::uint32_t sum = 0;
        std::uint8_t ok = 1;
        for (std::uint64_t i = w * 32; i < w * 32 + 32 && i < n_in; ++i) {
          sum += x[i];
          ok = std::uint8_t(ok & xk[i]);
        }
        y[w] = sum;
        yk[w] = ok;
      }
      break;
    case KernelId::fail: break;
  }
}

}  // namespace devctx_fuzz
