// SPDX-License-Identifier: Apache-2.0
// src/core/memory.hpp - the memory rules both backends share: the largest allocation a backend
// is ever asked for, the host's RAM, the text of an allocation failure, and which copies must
// finish before enqueue_copy returns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <devctx/detail/base/seam.hpp>

namespace devctx::detail {

/// No allocation above 2^62 bytes (4 EiB) reaches a backend. No 64-bit machine can address it
/// (x86-64 and AArch64 virtual addresses have at most 57 bits), and the margin below SIZE_MAX
/// lets a backend round any size it is given up to any alignment without wrapping around.
inline constexpr std::size_t kMaxAllocationBytes = std::size_t{1} << 62;

/// "enqueue_create_buffer" (device memory) or "enqueue_create_host_buffer" (HostBuffer memory).
[[nodiscard]] const char* allocation_operation(MemKind kind) noexcept;

/// count * element_bytes for an allocation of `kind` on `device`. Throws Error(out_of_memory),
/// naming the operation, the device, the count and the element size, when the product does not
/// fit in std::size_t or exceeds kMaxAllocationBytes.
[[nodiscard]] std::size_t allocation_bytes(const DeviceImpl& device, MemKind kind, std::size_t count,
                                           std::size_t element_bytes);

/// The host's physical memory in bytes; 0 when the system does not say.
[[nodiscard]] std::size_t host_memory_bytes() noexcept;
/// The machine's memory and swap together (sysinfo), 0 when unknown: no single host allocation
/// larger than this can ever be backed, whatever the kernel's overcommit setting lets malloc promise.
[[nodiscard]] std::size_t host_backable_bytes() noexcept;
/// What limits this process's host memory, for an out-of-memory message about an allocation of
/// `request` bytes (0: unknown): the limit that applied when one is set below the machine's
/// memory, with what is in use under it (the address-space limit RLIMIT_AS, `ulimit -v`; the
/// data limit RLIMIT_DATA, `ulimit -d`; the memory.max of the process's cgroup, v2, or its
/// memory.limit_in_bytes, v1), then the machine's memory:
/// "the process's address-space limit (RLIMIT_AS, `ulimit -v`) is 512.0 MiB (536870912 bytes),
/// 300.2 MiB (314785792 bytes) of it in use; the machine has 23.5 GiB (25276059648 bytes) of memory"
/// or, with no such limit, "the machine has 23.5 GiB (25276059648 bytes) of memory".
[[nodiscard]] std::string host_memory_text(std::size_t request = 0);

/// Throws Error(out_of_memory) for an allocation that the backend could not satisfy:
/// "<operation> on <device>: cannot allocate <bytes>[ of <memory>]; <state>", where `memory`
/// says which memory (may be empty) and `state` what is left of it (host_memory_text() for host
/// memory).
[[noreturn]] void throw_out_of_memory(const DeviceImpl& device, MemKind kind, std::size_t bytes,
                                      std::string_view memory, std::string_view state);

/// True when a copy between these kinds must have read or written its host side before
/// enqueue_copy returns: ordinary (pageable) host memory on either side may be reused, freed or
/// read by the caller as soon as the call returns. Copies between buffers return at once.
[[nodiscard]] constexpr bool copy_waits_for_host(MemKind dst, MemKind src) noexcept {
  return dst == MemKind::host_pageable || src == MemKind::host_pageable;
}

}  // namespace devctx::detail
