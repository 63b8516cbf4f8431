// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/order_check.cpp - write sets and the two-order comparison of shared
// memory (see order_check.hpp).
#include "backends/cpu/check/order_check.hpp"

#include <algorithm>
#include <cstring>

namespace devctx::detail::cpu::check {
namespace {
/// Snapshots kept per block beyond this are not compared (a kernel with very many barriers).
constexpr std::size_t kSnapshotBudget = std::size_t{256} << 20;
}  // namespace

void OrderCheck::begin_launch() {
  watched_.clear();
  total_ = 0;
  has_arrays_ = false;
  run_ = 0;
}

void OrderCheck::add_region(const Region& region, bool now) {
  watched_.push_back({&region, total_});
  total_ += region.bytes;
  if (region.kind == RegionKind::shared_array) has_arrays_ = true;
  shadow_.resize(total_);
  owner_.resize(total_);
  writer_[0].resize(total_);
  writer_[1].resize(total_);
  atomic_.resize(total_);
  if (now) {
    auto* p = const_cast<std::byte*>(region.begin);
    std::memset(p, kFill, region.bytes);
    std::memcpy(shadow_.data() + watched_.back().at, p, region.bytes);
  }
}

void OrderCheck::fill_all() {
  for (const Watched& w : watched_) {
    std::memset(const_cast<std::byte*>(w.region->begin), kFill, w.region->bytes);
    std::memset(shadow_.data() + w.at, kFill, w.region->bytes);
  }
  std::fill(owner_.begin(), owner_.end(), 0);
  barriers_ = 0;
}

void OrderCheck::begin_block() {
  run_ = 0;
  fill_all();
  std::fill(writer_[0].begin(), writer_[0].end(), 0);
  std::fill(writer_[1].begin(), writer_[1].end(), 0);
  std::fill(atomic_.begin(), atomic_.end(), 0);
  snaps_.clear();
  snap_bytes_ = 0;
  undo_.clear();
  undo_bytes_.clear();
  undo_seen_.clear();
  global_atomic_.clear();
}

const OrderCheck::Watched* OrderCheck::watched_at(std::size_t at) const {
  for (const Watched& w : watched_)
    if (at >= w.at && at < w.at + w.region->bytes) return &w;
  return nullptr;
}

OrderFinding OrderCheck::shared_finding(OrderFinding::Kind kind, std::size_t at) const {
  const Watched* w = watched_at(at);
  OrderFinding f;
  f.kind = kind;
  f.region = w->region;
  const std::size_t unit = std::max<std::size_t>(1, w->region->element_bytes);
  const std::size_t offset = (at - w->at) / unit * unit;
  f.address = w->region->begin + offset;
  f.bytes = unit;
  f.interval = barriers_;
  return f;
}

std::optional<OrderFinding> OrderCheck::segment_end(std::uint32_t rank) {
  const std::uint32_t me = rank + 1;
  for (const Watched& w : watched_) {
    const std::byte* now = w.region->begin;
    std::byte* before = shadow_.data() + w.at;
    const std::size_t n = w.region->bytes;
    if (std::memcmp(now, before, n) == 0) continue;
    for (std::size_t i = 0; i < n; ++i) {
      if (now[i] == before[i]) continue;
      const std::size_t at = w.at + i;
      before[i] = now[i];
      writer_[run_][at] = me;
      if (run_ == 0 && atomic_[at] == 0 && owner_[at] != 0 && owner_[at] != me) {
        OrderFinding f = shared_finding(OrderFinding::Kind::write_write, at);
        f.first = owner_[at];
        f.second = me;
        return f;
      }
      owner_[at] = me;
    }
  }
  return std::nullopt;
}

void OrderCheck::note_touch(const void* address, std::size_t bytes) {
  if (run_ != 0) return;
  const auto key = reinterpret_cast<std::uintptr_t>(address);
  if (!undo_seen_.insert(key).second) return;
  auto* p = const_cast<std::byte*>(static_cast<const std::byte*>(address));
  undo_.push_back({p, bytes, undo_bytes_.size()});
  undo_bytes_.insert(undo_bytes_.end(), p, p + bytes);
}

void OrderCheck::note_atomic(const void* address, std::size_t bytes, bool shared) {
  const auto* p = static_cast<const std::byte*>(address);
  if (shared) {
    for (const Watched& w : watched_)
      if (p >= w.region->begin && p + bytes <= w.region->begin + w.region->bytes) {
        std::memset(atomic_.data() + w.at + std::size_t(p - w.region->begin), 1, bytes);
        return;
      }
    return;
  }
  note_touch(address, bytes);
  global_atomic_.insert(reinterpret_cast<std::uintptr_t>(address));
}

std::optional<OrderFinding> OrderCheck::barrier() {
  std::fill(owner_.begin(), owner_.end(), 0);
  const std::uint32_t k = barriers_++;
  if (run_ == 0) {
    if (snap_bytes_ + total_ > kSnapshotBudget) return std::nullopt;
    std::vector<std::byte> snap(total_);
    for (const Watched& w : watched_) std::memcpy(snap.data() + w.at, w.region->begin, w.region->bytes);
    snap_bytes_ += total_;
    snaps_.push_back(std::move(snap));
    return std::nullopt;
  }
  if (k >= snaps_.size()) return std::nullopt;
  const std::vector<std::byte>& snap = snaps_[k];
  for (const Watched& w : watched_) {
    const std::byte* now = w.region->begin;
    if (w.at + w.region->bytes > snap.size()) continue;  // an array the first run had not declared by then
    for (std::size_t i = 0; i < w.region->bytes; ++i) {
      const std::size_t at = w.at + i;
      if (now[i] == snap[at] || atomic_[at] != 0) continue;
      barriers_ = k;  // the interval that ended at barrier k
      OrderFinding f = shared_finding(OrderFinding::Kind::shared_differs, at);
      f.interval = k + 1;
      f.first = writer_[0][at];
      f.second = writer_[1][at];
      return f;
    }
  }
  return std::nullopt;
}

void OrderCheck::begin_second_run() {
  first_bytes_.resize(undo_bytes_.size());
  for (const Undo& u : undo_) {
    std::memcpy(first_bytes_.data() + u.at, u.address, u.bytes);
    std::memcpy(u.address, undo_bytes_.data() + u.at, u.bytes);
  }
  run_ = 1;
  fill_all();
}

std::optional<OrderFinding> OrderCheck::end_second_run() {
  run_ = 0;
  for (const Undo& u : undo_) {
    if (std::memcmp(u.address, first_bytes_.data() + u.at, u.bytes) == 0) continue;
    if (global_atomic_.count(reinterpret_cast<std::uintptr_t>(u.address)) != 0) continue;
    OrderFinding f;
    f.kind = OrderFinding::Kind::global_differs;
    f.address = u.address;
    f.bytes = u.bytes;
    return f;
  }
  return std::nullopt;
}

}  // namespace devctx::detail::cpu::check
