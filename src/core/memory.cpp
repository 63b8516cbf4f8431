// SPDX-License-Identifier: Apache-2.0
// src/core/memory.cpp - the memory rules both backends share (see memory.hpp).
#include "core/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include <unistd.h>

#include <devctx/detail/host/checked_size.hpp>

#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

const char* allocation_operation(MemKind kind) noexcept {
  return kind == MemKind::device ? "enqueue_create_buffer" : "enqueue_create_host_buffer";
}

std::size_t allocation_bytes(const DeviceImpl& device, MemKind kind, std::size_t count, std::size_t element_bytes) {
  const auto bytes = checked_mul(count, element_bytes);
  if (bytes && *bytes <= kMaxAllocationBytes) return *bytes;
  // A count with its top bit set is rarely meant: it is what a negative integer becomes.
  const bool negative_looking = count > std::numeric_limits<std::size_t>::max() / 2;
  fail(Errc::out_of_memory, allocation_operation(kind), " on ", device.label(), ": cannot allocate ", count,
       " elements of ", element_bytes, " bytes: that is more than ", bytes_text(kMaxAllocationBytes),
       ", beyond what any device can address (this one has ", bytes_text(device.info().total_memory_bytes), ')',
       negative_looking ? "; a count this large is usually a negative number converted to std::size_t" : "");
}

std::size_t host_memory_bytes() noexcept {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return checked_mul(std::size_t(pages), std::size_t(page_bytes)).value_or(0);
}

/// MemAvailable of /proc/meminfo (what the kernel can hand out without swapping, page cache
/// included), else the free pages sysconf reports.
std::size_t host_available_bytes() noexcept {
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr) found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(f);
    if (found) return checked_mul(std::size_t(kib), std::size_t(1024)).value_or(0);
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return checked_mul(std::size_t(pages), std::size_t(page_bytes)).value_or(0);
}

MemoryInfo DeviceImpl::memory_info() const {
  const std::size_t total = info().total_memory_bytes;
  return {std::min(host_available_bytes(), total), total};
}

std::string host_memory_text() {
  const std::size_t bytes = host_memory_bytes();
  if (bytes == 0) return "the machine's memory size is unknown";
  return concat("the machine has ", bytes_text(bytes), " of memory");
}

void throw_out_of_memory(const DeviceImpl& device, MemKind kind, std::size_t bytes, std::string_view memory,
                         std::string_view state) {
  fail(Errc::out_of_memory, allocation_operation(kind), " on ", device.label(), ": cannot allocate ", bytes_text(bytes),
       memory.empty() ? "" : " of ", memory, "; ", state);
}

}  // namespace devctx::detail
