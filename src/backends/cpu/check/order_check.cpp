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
  first_block_ = true;
  run_ = 0;
  writable_.clear();
  writable_bytes_ = 0;
}

void OrderCheck::add_writable(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  writable_.push_back({const_cast<std::byte*>(static_cast<const std::byte*>(data)), bytes, writable_bytes_});
  writable_bytes_ += bytes;
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
  atomic_seen_ = false;
  fill_all();
  // Arrays are declared while the first block runs: until then, any block may run twice.
  if (writable_bytes_ <= kWritableBudget && (has_arrays_ || first_block_)) {
    before_.resize(writable_bytes_);
    for (const Writable& w : writable_) std::memcpy(before_.data() + w.at, w.data, w.bytes);
  }
  first_block_ = false;
  std::fill(writer_[0].begin(), writer_[0].end(), 0);
  std::fill(writer_[1].begin(), writer_[1].end(), 0);
  std::fill(atomic_.begin(), atomic_.end(), 0);
  snaps_.clear();
  snap_bytes_ = 0;
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

void OrderCheck::note_atomic(const void* address, std::size_t bytes, bool shared) {
  const auto* p = static_cast<const std::byte*>(address);
  if (run_ == 0) atomic_seen_ = true;
  if (shared) {
    for (const Watched& w : watched_)
      if (p >= w.region->begin && p + bytes <= w.region->begin + w.region->bytes) {
        std::memset(atomic_.data() + w.at + std::size_t(p - w.region->begin), 1, bytes);
        return;
      }
  }
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
  first_.resize(writable_bytes_);
  for (const Writable& w : writable_) {
    std::memcpy(first_.data() + w.at, w.data, w.bytes);
    std::memcpy(w.data, before_.data() + w.at, w.bytes);
  }
  run_ = 1;
  fill_all();
}

std::optional<OrderFinding> OrderCheck::end_second_run() {
  run_ = 0;
  for (const Writable& w : writable_) {
    const std::byte* first = first_.data() + w.at;
    if (std::memcmp(w.data, first, w.bytes) == 0) continue;
    std::size_t i = 0;
    while (w.data[i] == first[i]) ++i;
    OrderFinding f;
    f.kind = OrderFinding::Kind::global_differs;
    f.address = w.data + i;  // the Checker finds the element around it
    f.bytes = 1;
    return f;
  }
  return std::nullopt;
}

}  // namespace devctx::detail::cpu::check
