// SPDX-License-Identifier: Apache-2.0
#include "backends/cpu/check/init_shadow.hpp"

#include <algorithm>
#include <mutex>

namespace devctx::detail::cpu::check {

namespace {
constexpr std::size_t kWordBits = 64;

/// Bits lo..hi-1 of a word (0 <= lo < hi <= 64).
constexpr std::uint64_t bit_range(std::size_t lo, std::size_t hi) noexcept {
  const std::uint64_t upper = hi == kWordBits ? ~std::uint64_t{0} : (std::uint64_t{1} << hi) - 1;
  return upper & ~((std::uint64_t{1} << lo) - 1);
}
}  // namespace

InitShadow::InitShadow(std::size_t bytes)
    : bytes_(bytes), words_(new std::atomic<std::uint64_t>[(bytes + kWordBits - 1) / kWordBits]()) {}

void InitShadow::mark(std::size_t offset, std::size_t count) noexcept {
  if (offset >= bytes_) return;
  const std::size_t end = offset + std::min(count, bytes_ - offset);
  std::size_t at = offset;
  while (at < end) {
    const std::size_t word = at / kWordBits, lo = at % kWordBits;
    const std::size_t hi = std::min<std::size_t>(kWordBits, lo + (end - at));
    const std::uint64_t bits = bit_range(lo, hi);
    // Whole words in the middle of a large copy are plain stores of all ones: no other writer
    // can clear a bit, so a store cannot lose one.
    if (bits == ~std::uint64_t{0})
      words_[word].store(bits, std::memory_order_relaxed);
    else
      words_[word].fetch_or(bits, std::memory_order_relaxed);
    at += hi - lo;
  }
}

bool InitShadow::written(std::size_t offset, std::size_t count) const noexcept {
  if (offset > bytes_ || count > bytes_ - offset) return false;
  const std::size_t end = offset + count;
  std::size_t at = offset;
  while (at < end) {
    const std::size_t word = at / kWordBits, lo = at % kWordBits;
    const std::size_t hi = std::min<std::size_t>(kWordBits, lo + (end - at));
    const std::uint64_t bits = bit_range(lo, hi);
    if ((words_[word].load(std::memory_order_relaxed) & bits) != bits) return false;
    at += hi - lo;
  }
  return true;
}

void ShadowRegistry::add(const void* base, std::size_t bytes) {
  auto shadow = std::make_shared<InitShadow>(bytes);
  const std::unique_lock lock(mutex_);
  by_base_[reinterpret_cast<std::uintptr_t>(base)] = std::move(shadow);
  count_.store(by_base_.size(), std::memory_order_relaxed);
}

void ShadowRegistry::remove(const void* base) noexcept {
  const std::unique_lock lock(mutex_);
  by_base_.erase(reinterpret_cast<std::uintptr_t>(base));
  count_.store(by_base_.size(), std::memory_order_relaxed);
}

ShadowRegistry::Hit ShadowRegistry::find(const void* address) const noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  const std::shared_lock lock(mutex_);
  auto it = by_base_.upper_bound(a);
  if (it == by_base_.begin()) return {};
  --it;
  const std::size_t offset = a - it->first;
  // An address one past the end belongs to no allocation (it may start the next one).
  if (offset >= it->second->bytes()) return {};
  return {it->second, reinterpret_cast<const std::byte*>(it->first), offset};
}

void ShadowRegistry::mark_written(const void* address, std::size_t bytes) noexcept {
  if (empty() || bytes == 0) return;
  const Hit hit = find(address);
  if (hit.shadow) hit.shadow->mark(hit.offset, bytes);
}

}  // namespace devctx::detail::cpu::check
