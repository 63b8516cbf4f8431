// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/arenas.cpp - lays out a worker's shared memory and per_thread storage.
#include "backends/cpu/arenas.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <new>

#include "core/errors.hpp"

namespace devctx::detail::cpu {
namespace {

constexpr std::size_t kPerThreadBytes = std::size_t{1} << 20;

std::size_t align_up(std::size_t value, std::size_t align) { return (value + align - 1) / align * align; }

/// The guarded layout's page (and guard) size.
std::size_t page_bytes() {
  static const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  return page;
}
/// Arrays a checked launch's kernel may declare (each costs its pages and a guard page).
constexpr std::size_t kGuardedArrays = 64;

}  // namespace

SharedArena::SharedArena(std::size_t limit) : limit_(limit), memory_(cache_line_bytes(2 * stride(limit))) {}

SharedArena::~SharedArena() {
  if (guarded_ != nullptr) munmap(guarded_, guarded_bytes_);
}

void SharedArena::enter_launch(std::uint64_t launch_id, std::size_t dynamic_bytes, bool checked) {
  dynamic_bytes_ = dynamic_bytes;
  if (launch_ != launch_id || checked != checked_) {
    launch_ = launch_id;
    sites_.clear();
    top_ = align_up(dynamic_bytes, 64);
    checked_ = checked;
    if (checked) {
      const std::size_t page = page_bytes();
      if (guarded_ == nullptr) {
        const std::size_t bytes = align_up(limit_, page) + (2 * kGuardedArrays + 2) * page;
        void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
          fail(Errc::out_of_memory, "checking mode: cannot reserve ", bytes_text(bytes),
               " of address space for the guarded shared-memory layout");
        guarded_ = static_cast<std::byte*>(p);
        guarded_bytes_ = bytes;
      }
      // Dynamic shared memory first (its accesses are checked through its span), then a guard.
      mprotect(guarded_, guarded_bytes_, PROT_NONE);
      const std::size_t dynamic_pages = align_up(dynamic_bytes, page);
      if (dynamic_pages > 0) mprotect(guarded_, dynamic_pages, PROT_READ | PROT_WRITE);
      guarded_top_ = dynamic_pages + page;
    }
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

void* SharedArena::array(const void* site, std::size_t bytes, std::size_t align, std::size_t element_bytes) {
  for (const Site& s : sites_)
    if (s.site == site) return base() + s.offset;
  std::size_t offset = align_up(top_, std::max<std::size_t>(align, 16));
  if (offset + bytes > limit_)
    fail(Errc::invalid_launch, "DEVCTX_SHARED arrays (", bytes_text(offset + bytes - align_up(dynamic_bytes_, 64)),
         ") plus dynamic shared_bytes (", bytes_text(dynamic_bytes_),
         ") exceed the CPU device's shared memory per block (", bytes_text(limit_), ')');
  top_ = offset + bytes;
  if (checked_) {
    // Pages of its own, ending at a page's end; the page after it stays inaccessible.
    const std::size_t page = page_bytes(), pages = align_up(std::max<std::size_t>(bytes, 1), page);
    if (guarded_top_ + pages + page > guarded_bytes_ || align > page)
      fail(Errc::invalid_launch, "checking mode lays out at most ", kGuardedArrays,
           " DEVCTX_SHARED arrays of alignment at most ", page, " per kernel");
    if (mprotect(guarded_ + guarded_top_, pages, PROT_READ | PROT_WRITE) != 0)
      fail(Errc::out_of_memory, "checking mode: cannot map ", bytes_text(pages), " of guarded shared memory");
    offset = guarded_top_ + pages - bytes;
    guarded_top_ += pages + page;
  }
  sites_.push_back({site, offset, bytes, element_bytes});
  if (tls.shared_count < std::size(tls.shared_sites)) cache(sites_.back());
  return base() + offset;
}

bool SharedArena::guard_hit(std::uintptr_t address, GuardHit& hit) const noexcept {
  if (!checked_ || guarded_ == nullptr) return false;
  const auto begin = reinterpret_cast<std::uintptr_t>(guarded_);
  if (address < begin || address >= begin + guarded_bytes_) return false;
  const std::size_t page = page_bytes();
  for (const Site& s : sites_) {
    const std::uintptr_t end = begin + s.offset + s.bytes;
    if (address < end || address >= end + page) continue;
    hit.name = static_cast<const char*>(s.site);
    const std::size_t unit = s.element_bytes > 0 ? s.element_bytes : 1;
    hit.index = (address - (begin + s.offset)) / unit;
    hit.count = s.bytes / unit;
    return true;
  }
  return false;
}

PerThreadArena::PerThreadArena() : memory_(cache_line_bytes(kPerThreadBytes)) {}

void* PerThreadArena::allocate(std::size_t bytes, std::size_t align) {
  const std::size_t offset = align_up(top_, std::max<std::size_t>(align, 64));
  if (offset + bytes > kPerThreadBytes)
    fail(Errc::invalid_launch, "Block::per_thread values of one block need more than ", bytes_text(kPerThreadBytes),
         " on the CPU backend");
  top_ = offset + bytes;
  return memory_.get() + offset;
}

}  // namespace devctx::detail::cpu
