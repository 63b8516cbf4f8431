// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/guarded_memory.cpp - maps checking mode's device allocations between guard
// pages and keeps the lock-free table of them that the SIGSEGV handler reads.
#include "backends/cpu/check/guarded_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <new>

#include "core/text.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define DEVCTX_GUARDED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEVCTX_GUARDED_ASAN 1
#endif
#endif
#if defined(DEVCTX_GUARDED_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace devctx::detail::cpu::check {
namespace {

/// One live allocation. `begin` publishes the others: 0 free, kBusy while a thread fills or
/// empties the slot, else the first byte of the mapping (front guard page included).
struct Slot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};   // one past the back guard page
  std::atomic<std::uintptr_t> data{0};  // the buffer
  std::atomic<std::size_t> bytes{0};
};
constexpr std::uintptr_t kBusy = 1;

/// The table: a list of chunks that only grows (a chunk is never freed, so the handler may walk
/// it at any time). The first chunk is static; later ones come from new, outside the handler.
struct Chunk {
  Slot slots[1024];
  std::atomic<Chunk*> next{nullptr};
};
Chunk g_first;
/// The page size, stored before the first slot is published (the handler may not call sysconf).
std::atomic<std::size_t> g_page{0};
/// errno of this thread's last failed guarded_allocate (read by guarded_failure_note, after
/// other calls may have changed errno).
thread_local int t_failure = 0;

std::size_t page_bytes() noexcept {
  std::size_t page = g_page.load(std::memory_order_relaxed);
  if (page == 0) {
    page = std::size_t(sysconf(_SC_PAGESIZE));
    g_page.store(page, std::memory_order_relaxed);
  }
  return page;
}

std::size_t data_pages(std::size_t bytes, std::size_t page) noexcept {
  return std::max(page, (bytes + page - 1) / page * page);
}

/// A free slot, claimed (kBusy); null when the table cannot grow.
Slot* claim() noexcept {
  Chunk* chunk = &g_first;
  for (;;) {
    for (Slot& s : chunk->slots) {
      std::uintptr_t expected = 0;
      if (s.begin.load(std::memory_order_relaxed) == 0 &&
          s.begin.compare_exchange_strong(expected, kBusy, std::memory_order_acquire))
        return &s;
    }
    Chunk* next = chunk->next.load(std::memory_order_acquire);
    if (next == nullptr) {
      auto* fresh = new (std::nothrow) Chunk;
      if (fresh == nullptr) return nullptr;
      if (chunk->next.compare_exchange_strong(next, fresh, std::memory_order_acq_rel))
        next = fresh;
      else
        delete fresh;  // another thread linked one first: `next` is it
    }
    chunk = next;
  }
}

}  // namespace

std::size_t guarded_footprint(std::size_t bytes) noexcept {
  const std::size_t page = page_bytes();
  return data_pages(bytes, page) + 2 * page;
}

std::string guarded_failure_note(std::size_t bytes) {
  const int error = t_failure;
  std::string note = concat("; checking mode maps each device buffer on pages of its own between two guard pages (",
                            bytes_text(guarded_footprint(bytes)), " of address space for this one)");
  std::ifstream limit("/proc/sys/vm/max_map_count");
  long long maps = 0;
  if (error == ENOMEM && (limit >> maps))
    note += concat(", three memory mappings per buffer, and a process may have at most vm.max_map_count = ", maps,
                   " of them: free checked buffers or raise the limit (sysctl vm.max_map_count)");
  return note;
}

void* guarded_allocate(std::size_t bytes) noexcept {
  const std::size_t page = page_bytes();
  const std::size_t pages = data_pages(bytes, page), total = pages + 2 * page;  // bytes <= 2^62: no wrap
  // Not MAP_NORESERVE: making the pages writable charges them, as malloc's mapping would be charged.
  void* mapping = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    t_failure = errno;
    return nullptr;
  }
  auto* base = static_cast<std::byte*>(mapping);
  Slot* slot = nullptr;
  int error = ENOMEM;  // when the table cannot grow
  if (mprotect(base + page, pages, PROT_READ | PROT_WRITE) != 0)
    error = errno;
  else
    slot = claim();
  if (slot == nullptr) {
    munmap(mapping, total);
    errno = t_failure = error;
    return nullptr;
  }
#if defined(DEVCTX_GUARDED_ASAN)
  // The address range may have held a fiber stack whose abandoned frames left their redzones
  // poisoned in ASan's shadow (munmap does not clear it): the buffer is addressable, and so are the
  // guard pages, so that an access there reaches the fault (checking mode's report), not ASan.
  __asan_unpoison_memory_region(base, total);
#endif
  std::byte* data = base + page + pages - bytes;
  slot->end.store(reinterpret_cast<std::uintptr_t>(base) + total, std::memory_order_relaxed);
  slot->data.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_relaxed);
  slot->bytes.store(bytes, std::memory_order_relaxed);
  slot->begin.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
  return data;
}

void guarded_free(void* data) noexcept {
  const auto wanted = reinterpret_cast<std::uintptr_t>(data);
  for (Chunk* chunk = &g_first; chunk != nullptr; chunk = chunk->next.load(std::memory_order_acquire)) {
    for (Slot& s : chunk->slots) {
      std::uintptr_t begin = s.begin.load(std::memory_order_acquire);
      if (begin <= kBusy || s.data.load(std::memory_order_relaxed) != wanted) continue;
      if (!s.begin.compare_exchange_strong(begin, kBusy, std::memory_order_acq_rel)) continue;
      const std::uintptr_t end = s.end.load(std::memory_order_relaxed);
      munmap(reinterpret_cast<void*>(begin), end - begin);
      s.begin.store(0, std::memory_order_release);
      return;
    }
  }
}

bool guarded_hit(std::uintptr_t address, GuardedHit& hit) noexcept {
  const std::size_t page = g_page.load(std::memory_order_relaxed);
  if (page == 0) return false;  // nothing was ever allocated
  for (Chunk* chunk = &g_first; chunk != nullptr; chunk = chunk->next.load(std::memory_order_acquire)) {
    for (const Slot& s : chunk->slots) {
      const std::uintptr_t begin = s.begin.load(std::memory_order_acquire);
      if (begin <= kBusy || address < begin) continue;
      const std::uintptr_t end = s.end.load(std::memory_order_relaxed);
      if (address >= end) continue;
      const std::uintptr_t data = s.data.load(std::memory_order_relaxed);
      const std::size_t bytes = s.bytes.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.begin.load(std::memory_order_relaxed) != begin) continue;     // freed meanwhile
      if (address >= begin + page && address < end - page) return false;  // its pages, not a guard
      hit.data = reinterpret_cast<const std::byte*>(data);
      hit.bytes = bytes;
      hit.before = address < begin + page;
      return true;
    }
  }
  return false;
}

}  // namespace devctx::detail::cpu::check
