// SPDX-License-Identifier: Apache-2.0
#include "backends/cpu/check/access_log.hpp"

#include <bit>
#include <cstring>

namespace devctx::detail::cpu::check {

namespace {
/// A write through a writable span is seen as a change of value. An element of 1 or 2 bytes
/// written with whatever value it held (1 in 256, 1 in 65536 for the poison) would look like a
/// read, so unchanged small elements are not taken for reads of unwritten memory; reads through
/// span<const T> are checked at every size.
constexpr std::size_t kMinInferredReadBytes = 4;
}  // namespace

// ---- AddressMap -------------------------------------------------------------------------------

template <class V>
std::pair<V*, bool> AddressMap<V>::try_emplace(std::uintptr_t key) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.gen != gen_) {
      s = Slot{key, gen_, V{}};
      ++size_;
      return {&s.value, true};
    }
    if (s.key == key) return {&s.value, false};
  }
}

template <class V>
void AddressMap<V>::clear() noexcept {
  size_ = 0;
  if (++gen_ == 0) {  // generations wrapped: old slots could look current again
    for (Slot& s : slots_) s.gen = 0;
    gen_ = 1;
  }
}

template <class V>
void AddressMap<V>::grow() {
  std::vector<Slot> old = std::move(slots_);
  const std::size_t capacity = old.empty() ? 1024 : 2 * old.size();
  slots_.assign(capacity, Slot{});
  shift_ = unsigned(64 - std::countr_zero(capacity));
  const std::uint32_t live = gen_;
  gen_ = 1;
  size_ = 0;
  const std::size_t mask = capacity - 1;
  for (Slot& s : old) {
    if (s.gen != live) continue;
    std::size_t i = home(s.key);
    while (slots_[i].gen == gen_) i = (i + 1) & mask;
    slots_[i] = Slot{s.key, gen_, s.value};
    ++size_;
  }
}

template class AddressMap<std::uint32_t>;

// ---- AccessLog --------------------------------------------------------------------------------

void AccessLog::begin_launch() {
  index_.clear();
  touches_.clear();
  snapshots_.clear();
  globals_.clear();
  block_ = 0;
  interval_ = 0;
}

void AccessLog::begin_block(std::uint64_t block) {
  index_.clear();
  touches_.clear();
  snapshots_.clear();
  block_ = block;
  interval_ = 0;
}

void AccessLog::take_snapshot(Touch& t) {
  if (t.bytes <= sizeof t.snapshot) {
    t.snapshot = 0;
    std::memcpy(&t.snapshot, t.address, t.bytes);
    return;
  }
  if (t.snapshot_at == 0) {  // the element's first snapshot; later ones reuse its place
    t.snapshot_at = snapshots_.size() + 1;
    snapshots_.resize(snapshots_.size() + t.bytes);
  }
  std::memcpy(snapshots_.data() + t.snapshot_at - 1, t.address, t.bytes);
}

bool AccessLog::changed(const Touch& t) const noexcept {
  if (t.bytes <= sizeof t.snapshot) {
    std::uint64_t now = 0;
    std::memcpy(&now, t.address, t.bytes);
    return now != t.snapshot;
  }
  return std::memcmp(snapshots_.data() + t.snapshot_at - 1, t.address, t.bytes) != 0;
}

bool AccessLog::initialised(const Touch& t) noexcept {
  const Region& r = *t.region;
  if (!r.init) return true;  // shared memory, or memory of an allocation that is not tracked
  return r.init->written(r.init_offset + std::size_t(t.address - r.begin), t.bytes);
}

Finding AccessLog::finding(Finding::Kind kind, const Touch& t, std::uint32_t thread) const {
  Finding f;
  f.kind = kind;
  f.region = t.region;
  f.address = t.address;
  f.bytes = t.bytes;
  f.first = {block_, thread};
  f.interval = interval_;
  return f;
}

Finding AccessLog::uninitialised_read(const Touch& t, std::uint32_t reader) const {
  return finding(Finding::Kind::uninitialised_read, t, reader);
}

Finding AccessLog::same_block_race(const Touch& t, std::uint32_t writer, std::uint32_t other, bool other_wrote) const {
  Finding f = finding(Finding::Kind::race, t, writer);
  f.first_wrote = true;
  f.second = {block_, other};
  f.second_wrote = other_wrote;
  return f;
}

std::pair<std::uint32_t, bool> AccessLog::find_or_add(std::uint32_t rank, Region& region, const void* address,
                                                      std::size_t bytes) {
  const auto [slot, inserted] = index_.try_emplace(reinterpret_cast<std::uintptr_t>(address));
  if (!inserted) return {*slot, false};
  *slot = std::uint32_t(touches_.size());
  Touch& t = touches_.emplace_back();
  t.address = static_cast<const std::byte*>(address);
  t.region = &region;
  t.bytes = std::uint32_t(bytes);
  t.last = rank;
  take_snapshot(t);
  return {*slot, true};
}

std::optional<Finding> AccessLog::touch(std::uint32_t rank, Region& region, const void* address, std::size_t bytes,
                                        bool read_only) {
  const auto [index, inserted] = find_or_add(rank, region, address, bytes);
  if (inserted) {
    Touch& t = touches_[index];
    if (read_only) {
      if (!initialised(t)) return uninitialised_read(t, rank);
      t.read_checked = true;
    }
    return std::nullopt;
  }
  Touch& t = touches_[index];
  if (t.last == rank) {
    // Reading what this thread wrote itself is fine; reading what nobody wrote is not.
    if (read_only && !t.read_checked && !t.wrote && !changed(t)) {
      if (!initialised(t)) return uninitialised_read(t, rank);
      t.read_checked = true;
    }
    return std::nullopt;
  }
  // Another thread's turn: settle what the previous one did.
  const std::uint32_t previous = t.last;
  if (changed(t)) {
    if (!t.atomic) return same_block_race(t, previous, rank, false);
    t.wrote = true;
    t.writer = previous;
  } else if (!t.wrote && !t.atomic && !t.read_checked && t.bytes >= kMinInferredReadBytes && !initialised(t)) {
    return uninitialised_read(t, previous);
  }
  t.other = previous;
  t.multi = true;
  t.last = rank;
  t.read_checked = false;
  take_snapshot(t);
  if (read_only) {
    if (!t.wrote && !initialised(t)) return uninitialised_read(t, rank);
    t.read_checked = true;
  }
  return std::nullopt;
}

std::optional<Finding> AccessLog::atomic(std::uint32_t rank, Region& region, const void* address, std::size_t bytes) {
  Touch& t = touches_[find_or_add(rank, region, address, bytes).first];
  // Written earlier in this interval (by this thread, or atomically by another): initialised.
  const bool written_here = t.wrote || t.atomic || changed(t);
  t.atomic = true;
  if (!written_here && !initialised(t)) return uninitialised_read(t, rank);
  return std::nullopt;
}

std::optional<Finding> AccessLog::end_interval() {
  std::optional<Finding> found;
  for (Touch& t : touches_) {
    if (changed(t)) {
      if (t.multi && !t.atomic) {
        found = same_block_race(t, t.last, t.other, t.wrote);
        break;
      }
      t.wrote = true;
      t.writer = t.last;
    } else if (!t.wrote && !t.atomic && !t.read_checked && t.bytes >= kMinInferredReadBytes && !initialised(t)) {
      found = uninitialised_read(t, t.last);
      break;
    }
    const Region& r = *t.region;
    if ((t.wrote || t.atomic) && r.init) r.init->mark(r.init_offset + std::size_t(t.address - r.begin), t.bytes);
    if (!r.shared()) {
      found = merge_global(t);
      if (found) break;
    }
  }
  index_.clear();
  touches_.clear();
  snapshots_.clear();
  ++interval_;
  return found;
}

std::optional<Finding> AccessLog::merge_global(const Touch& t) {
  const auto [g, inserted] = globals_.try_emplace(reinterpret_cast<std::uintptr_t>(t.address));
  const std::uint32_t thread = t.wrote ? t.writer : t.last;
  if (inserted) {
    *g = Global{block_, 0, thread, 0, t.wrote, false, false, t.atomic};
    return std::nullopt;
  }
  if (g->block != block_) {
    // Keep a writer as the earlier block to name, if one wrote.
    if (g->wrote || !g->prev_wrote) {
      g->prev_block = g->block;
      g->prev_thread = g->thread;
    }
    g->prev_wrote = g->prev_wrote || g->wrote;
    g->prev_accessed = true;
    g->block = block_;
    g->thread = thread;
    g->wrote = false;
  }
  g->atomic = g->atomic || t.atomic;
  if (!g->atomic && g->prev_accessed && (g->prev_wrote || t.wrote)) {
    Finding f;
    f.kind = Finding::Kind::race;
    f.region = t.region;
    f.address = t.address;
    f.bytes = t.bytes;
    f.first = {g->prev_block, g->prev_thread};
    f.first_wrote = g->prev_wrote;
    f.second = {block_, thread};
    f.second_wrote = t.wrote;
    f.interval = interval_;
    return f;
  }
  if (t.wrote) {
    g->wrote = true;
    g->thread = t.writer;
  }
  return std::nullopt;
}

}  // namespace devctx::detail::cpu::check
