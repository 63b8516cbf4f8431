// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/arenas.cpp - lays out a worker's shared memory and per_thread storage.
#include "backends/cpu/arenas.hpp"

#include <algorithm>
#include <iterator>
#include <new>

#include "core/errors.hpp"

namespace devctx::detail::cpu {
namespace {

constexpr std::size_t kPerThreadBytes = std::size_t{1} << 20;

std::size_t align_up(std::size_t value, std::size_t align) { return (value + align - 1) / align * align; }

}  // namespace

SharedArena::SharedArena(std::size_t limit)
    : limit_(limit), memory_(cache_line_bytes(2 * stride(limit))) {}

void SharedArena::enter_launch(std::uint64_t launch_id, std::size_t dynamic_bytes) {
  dynamic_bytes_ = dynamic_bytes;
  if (launch_ != launch_id) {
    launch_ = launch_id;
    sites_.clear();
    top_ = align_up(dynamic_bytes, 64);
  }
  tls.shared_count = 0;
  for (const Site& site : sites_) {
    if (tls.shared_count == std::size(tls.shared_sites)) break;
    cache(site);
  }
  tls.dynamic_shared = base();
  tls.dynamic_shared_bytes = dynamic_bytes;
}

void SharedArena::cache(const Site& site) noexcept {
  tls.shared_sites[tls.shared_count] = site.site;
  tls.shared_addresses[tls.shared_count] = base() + site.offset;
  cached_offsets_[tls.shared_count] = site.offset;
  ++tls.shared_count;
}

void* SharedArena::array(const void* site, std::size_t bytes, std::size_t align) {
  for (const Site& s : sites_)
    if (s.site == site) return base() + s.offset;
  const std::size_t offset = align_up(top_, std::max<std::size_t>(align, 16));
  if (offset + bytes > limit_)
    fail(Errc::invalid_launch, "DEVCTX_SHARED arrays (", bytes_text(offset + bytes - align_up(dynamic_bytes_, 64)),
         ") plus dynamic shared_bytes (", bytes_text(dynamic_bytes_),
         ") exceed the CPU device's shared memory per block (", bytes_text(limit_), ')');
  sites_.push_back({site, offset});
  top_ = offset + bytes;
  if (tls.shared_count < std::size(tls.shared_sites)) cache(sites_.back());
  return base() + offset;
}

PerThreadArena::PerThreadArena() : memory_(cache_line_bytes(kPerThreadBytes)) {}

void* PerThreadArena::allocate(std::size_t bytes, std::size_t align) {
  const std::size_t offset = align_up(top_, std::max<std::size_t>(align, 64));
  if (offset + bytes > kPerThreadBytes)
    fail(Errc::invalid_launch, "Block::per_thread values of one block need more than ",
         bytes_text(kPerThreadBytes), " on the CPU backend");
  top_ = offset + bytes;
  return memory_.get() + offset;
}

}  // namespace devctx::detail::cpu
