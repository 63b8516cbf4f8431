// devctx/detail/runtime.hpp - the seam between the public templates and the compiled
// library: opaque implementation types and the non-template functions that the templates
// call. Users never include this directly.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include <devctx/device_info.hpp>
#include <devctx/launch.hpp>

namespace devctx::detail {

class DeviceImpl;  // one device of one backend (src/core/backend.hpp)
class QueueImpl;   // one in-order stream of work on a device
class EventImpl;   // a point in a queue's work

/// Where a copy endpoint lives.
enum class MemKind : unsigned char {
  device,         ///< DeviceBuffer memory
  host_pinned,    ///< HostBuffer memory (page-locked on CUDA)
  host_pageable,  ///< ordinary host memory given as std::span
};

/// One buffer's memory. Heap-allocated and owned by its DeviceBuffer/HostBuffer, so that slices
/// (which point at it) stay valid when the owner is moved. Defined in src/core/allocation.cpp.
class Allocation;

/// Releases an Allocation in stream order (after all work enqueued on every queue that used it).
struct AllocationReleaser {
  void operator()(Allocation* allocation) const noexcept;
};
using AllocationPtr = std::unique_ptr<Allocation, AllocationReleaser>;

[[nodiscard]] AllocationPtr allocate(QueueImpl& queue, std::size_t bytes, MemKind kind);
[[nodiscard]] void* allocation_data(const Allocation& allocation) noexcept;

/// One side of a copy or fill, type-erased.
struct MemRef {
  void* data = nullptr;
  std::size_t count = 0;                  ///< elements
  MemKind kind = MemKind::host_pageable;
  Allocation* allocation = nullptr;       ///< null for pageable host memory
  const char* what = "";                  ///< "DeviceBuffer", "HostBuffer slice", "std::span", ...
};

void enqueue_copy(QueueImpl& queue, const MemRef& dst, const MemRef& src, std::size_t element_bytes);
void enqueue_fill(QueueImpl& queue, const MemRef& dst, const void* value, std::size_t element_bytes);

/// Everything a backend needs to launch one kernel. Built by detail::launch_kernel.
struct KernelLaunch {
  std::string_view name;
  LaunchConfig config;
  bool block_level = false;                       ///< kernel takes devctx::Block
  const void* args = nullptr;                     ///< the packed, mapped kernel arguments
  std::size_t args_size = 0;
  std::size_t args_align = 1;
  // CPU backend entry points, instantiated per kernel and argument list.
  void (*cpu_run_block)(const void* args) = nullptr;   ///< all threads of the current block
  void (*cpu_run_thread)(const void* args) = nullptr;  ///< the current thread only
  // CUDA backend: the trampoline's host stub, and pointers to each packed argument.
  const void* cuda_function = nullptr;            ///< null when not compiled by nvcc
  void* const* cuda_args = nullptr;
  // Buffers the arguments refer to (checked for device, tracked for stream-ordered frees).
  Allocation* const* buffers = nullptr;
  std::size_t buffer_count = 0;
};

void enqueue_launch(QueueImpl& queue, const KernelLaunch& launch);

[[noreturn]] void throw_invalid_handle(const char* what);
[[noreturn]] void throw_slice_out_of_range(const char* what, std::size_t offset, std::size_t count,
                                           std::size_t size);

}  // namespace devctx::detail
