// SPDX-License-Identifier: Apache-2.0
// src/core/memory.cpp - the memory rules both backends share (see memory.hpp).
#include "core/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <devctx/detail/base/checked_size.hpp>

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

std::size_t host_backable_bytes() noexcept {
  struct sysinfo s{};
  if (sysinfo(&s) != 0 || s.mem_unit == 0) return 0;
  const auto ram = checked_mul(std::size_t(s.totalram), std::size_t(s.mem_unit));
  const auto swap = checked_mul(std::size_t(s.totalswap), std::size_t(s.mem_unit));
  if (!ram || !swap) return 0;
  return checked_add(*ram, *swap).value_or(0);
}

/// MemAvailable of /proc/meminfo (what the kernel can hand out without swapping, page cache
/// included), else the free pages sysconf reports.
std::size_t host_available_bytes() noexcept {
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr)
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
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

namespace {

/// One limit on the process's memory, and what it counts that is in use (0: unknown).
struct HostLimit {
  std::string what;
  std::size_t limit = 0, used = 0;
};

/// A "Name:   123 kB" line of /proc/self/status, in bytes (0 when absent).
std::size_t status_bytes(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(name) + ':';
  while (std::getline(in, line))
    if (line.compare(0, prefix.size(), prefix) == 0) {
      unsigned long long kib = 0;
      if (std::sscanf(line.c_str() + prefix.size(), "%llu", &kib) == 1)
        return checked_mul(std::size_t(kib), std::size_t(1024)).value_or(0);
    }
  return 0;
}

/// A file holding one number (a cgroup's memory.max: "max" when unlimited), or nothing.
std::optional<std::size_t> file_number(const std::string& path) {
  std::ifstream in(path);
  unsigned long long value = 0;
  if (!(in >> value)) return std::nullopt;
  return std::size_t(value);
}

/// The memory limit of this process's cgroup (or the tightest of its ancestors'), if any.
std::optional<HostLimit> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::optional<HostLimit> best;
  auto consider = [&](const std::string& limit_file, const std::string& usage_file) {
    const auto limit = file_number(limit_file);
    if (!limit || (best && *limit >= best->limit)) return;
    best = HostLimit{concat("the memory limit of its cgroup (", limit_file, ')'), *limit,
                     file_number(usage_file).value_or(0)};
  };
  while (std::getline(in, line)) {
    if (line.compare(0, 3, "0::") == 0) {  // cgroup v2: the process's group and its ancestors
      for (std::string group = line.substr(3);; group = group.substr(0, group.rfind('/'))) {
        const std::string dir = "/sys/fs/cgroup" + (group == "/" ? std::string() : group);
        consider(dir + "/memory.max", dir + "/memory.current");
        if (group.empty() || group == "/" || group.find('/') == std::string::npos) break;
      }
    } else if (const auto at = line.find(":memory:"); at != std::string::npos) {  // cgroup v1
      const std::string dir = "/sys/fs/cgroup/memory" + line.substr(at + 8);
      consider(dir + "/memory.limit_in_bytes", dir + "/memory.usage_in_bytes");
    }
  }
  return best;
}

}  // namespace

std::string host_memory_text(std::size_t request) {
  const std::size_t machine = host_memory_bytes();
  // The limits set below the machine's memory (a v1 cgroup without a limit says 2^63 - 4096).
  std::vector<HostLimit> limits;
  const auto below_machine = [&](std::size_t limit) { return machine == 0 || limit < machine; };
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY && below_machine(std::size_t(r.rlim_cur)))
    limits.push_back({"the process's address-space limit (RLIMIT_AS, `ulimit -v`)", std::size_t(r.rlim_cur),
                      status_bytes("VmSize")});
  if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY && below_machine(std::size_t(r.rlim_cur)))
    limits.push_back(
        {"the process's data limit (RLIMIT_DATA, `ulimit -d`)", std::size_t(r.rlim_cur), status_bytes("VmData")});
  if (auto c = cgroup_limit(); c && below_machine(c->limit)) limits.push_back(std::move(*c));
  std::string out;
  // The limit that applied: the first that the request does not fit under, else the one with
  // the least room left.
  const HostLimit* applied = nullptr;
  for (const HostLimit& l : limits) {
    const std::size_t room = l.limit > l.used ? l.limit - l.used : 0;
    if (request > room) {
      applied = &l;
      break;
    }
    if (applied == nullptr || room < (applied->limit > applied->used ? applied->limit - applied->used : 0))
      applied = &l;
  }
  if (applied != nullptr) {
    out = concat(applied->what, " is ", bytes_text(applied->limit));
    if (applied->used > 0) out += concat(", ", bytes_text(applied->used), " of it in use");
    out += "; ";
  }
  if (machine == 0) return out + "the machine's memory size is unknown";
  return out + concat("the machine has ", bytes_text(machine), " of memory");
}

void throw_out_of_memory(const DeviceImpl& device, MemKind kind, std::size_t bytes, std::string_view memory,
                         std::string_view state) {
  fail(Errc::out_of_memory, allocation_operation(kind), " on ", device.label(), ": cannot allocate ", bytes_text(bytes),
       memory.empty() ? "" : " of ", memory, "; ", state);
}

}  // namespace devctx::detail
