// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/seam.hpp - the one seam between the public templates and the compiled
// library: the opaque implementation types and every non-template function that a public
// header calls. All of them are defined in src/core, which validates each request before any
// backend sees it.
//
// Naming: a function that acts on a stream is queue_<verb>(QueueImpl&, ...), one that reads a
// buffer's record is allocation_<what>(const Allocation&), and one that reports misuse found in
// a header is [[noreturn]] throw_<what>(...).
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/seam.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/stream.hpp>) instead"
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include <devctx/detail/base/launch_types.hpp>

namespace devctx {
struct DeviceInfo;  // devctx/device_info.hpp
}  // namespace devctx

namespace devctx::detail {

class DeviceImpl;  // one device of one backend (src/core/backend.hpp)
class QueueImpl;   // one in-order stream of work on a device
class EventImpl;   // a point in a queue's work
class GraphImpl;   // recorded work, replayable (src/core/graph.cpp)

/// Where a copy endpoint lives.
enum class MemKind : unsigned char {
  device,         ///< DeviceBuffer memory
  host_pinned,    ///< HostBuffer memory (page-locked on CUDA)
  host_pageable,  ///< ordinary host memory given as std::span
};

/// One buffer's memory. Heap-allocated and owned by its DeviceBuffer/HostBuffer, so that slices
/// (which point at it) stay valid when the owner is moved. Defined in src/core/allocation.hpp.
class Allocation;

/// Releases an Allocation in stream order (after all work enqueued on every queue that used it).
struct AllocationReleaser {
  void operator()(Allocation* allocation) const noexcept;
};
using AllocationPtr = std::unique_ptr<Allocation, AllocationReleaser>;

/// One side of a copy or fill, type-erased.
struct MemRef {
  void* data = nullptr;
  std::size_t count = 0;  ///< elements
  MemKind kind = MemKind::host_pageable;
  Allocation* allocation = nullptr;  ///< null for pageable host memory
  const char* what = "";             ///< "DeviceBuffer", "HostBuffer slice", "std::span", ...
};

/// One devctx::span parameter of a launch, as checking mode names it (docs/checking.md).
struct LaunchSpan {
  const void* data = nullptr;
  std::size_t count = 0;
  std::size_t element_bytes = 1;
  unsigned argument = 0;   ///< 1-based position among the kernel's parameters
  std::string_view type;   ///< "devctx::span<const float>"
  bool read_only = false;  ///< span<const T>
};

/// A kernel's CPU entry points: one static table per kernel and parameter list
/// (launch_kernel.hpp's cpu_runners_of; a runtime-compiled kernel's shared object exports its own
/// inside its CpuEntry, detail/runtime/entry.hpp). Its address names the kernel and parameter
/// list (a graph's update compares it). Plain C layout: shared objects compiled apart use it.
struct CpuRunners {
  void (*run_block)(const void* args) = nullptr;   ///< all threads of the current block (block-level: once)
  void (*run_thread)(const void* args) = nullptr;  ///< the current thread only; null for a block-level kernel
  /// The same for a checked launch (docs/checking.md), whose accessors reach checking mode.
  void (*run_block_checked)(const void* args) = nullptr;
  void (*run_thread_checked)(const void* args) = nullptr;
  /// Checking mode: writes the launch's span parameters, as found in `args`, to `out` (room for
  /// one per parameter) and returns how many there are.
  std::size_t (*spans)(const void* args, LaunchSpan* out) = nullptr;
};

/// Everything a backend needs to launch one kernel. Built by detail::launch_kernel.
struct KernelLaunch {
  std::string_view name;  ///< static storage (kernel_name): backends keep the view, not a copy
  LaunchConfig config;
  bool block_level = false;    ///< kernel takes devctx::Block
  const void* args = nullptr;  ///< the packed, mapped kernel arguments
  std::size_t args_size = 0;
  std::size_t args_align = 1;
  /// The CPU backend's entry points of this kernel and parameter list (static storage).
  const CpuRunners* cpu = nullptr;
  std::size_t param_count = 0;
  /// CPU backend: why the kernel has no translated twin, when its code says so itself (a
  /// runtime-compiled kernel: src/runtime/fission.cpp); static storage. Null otherwise.
  const char* fission_off = nullptr;
  // CUDA backend: the trampoline's host stub, and pointers to each packed argument.
  const void* cuda_function = nullptr;  ///< null when not compiled by nvcc
  void* const* cuda_args = nullptr;
  // Buffers the arguments refer to (checked for device, tracked for stream-ordered frees).
  Allocation* const* buffers = nullptr;
  std::size_t buffer_count = 0;
  // devctx::span arguments (made from raw pointers, so no buffer vouches for them): their data
  // and byte counts, one per argument (null / 0 for the others), checked to be memory of the
  // device. Null when no argument is a span.
  const void* const* spans = nullptr;
  const std::size_t* span_bytes = nullptr;
};

// ---- acting on a stream ---------------------------------------------------------------------------

/// `count` elements of `element_bytes` each, allocated in stream order (enqueue_create_buffer for
/// MemKind::device, enqueue_create_host_buffer for MemKind::host_pinned). The byte count is
/// computed and bounded here, never in a header: a count whose bytes overflow or exceed what any
/// device can address throws Error(out_of_memory) and nothing is enqueued.
[[nodiscard]] AllocationPtr queue_allocate(QueueImpl& queue, MemKind kind, std::size_t count, std::size_t element_bytes);
void queue_copy(QueueImpl& queue, const MemRef& dst, const MemRef& src, std::size_t element_bytes);
void queue_fill(QueueImpl& queue, const MemRef& dst, const void* value, std::size_t element_bytes);
void queue_launch(QueueImpl& queue, const KernelLaunch& launch);
void queue_synchronize(QueueImpl& queue);
[[nodiscard]] std::shared_ptr<EventImpl> queue_record_event(QueueImpl& queue);
/// `event` may be null (a default-constructed Event): throws Error(invalid_handle) then.
void queue_wait_for(QueueImpl& queue, const std::shared_ptr<EventImpl>& event);
/// `task` on a host thread in the queue's order (StreamRef::enqueue_host_task); an empty task
/// throws Error(invalid_argument).
void queue_host_task(QueueImpl& queue, std::function<void()> task);

// ---- graphs (devctx/graph.hpp) ------------------------------------------------------------------------

/// A queue of `queue`'s device on which the copies, fills and launches enqueued are recorded,
/// checked as on any queue, instead of run. Allocation, events, waits and synchronize throw there.
[[nodiscard]] std::shared_ptr<QueueImpl> queue_graph_recorder(QueueImpl& queue);
/// The work recorded on `recorder` as a graph (a CUDA graph on the CUDA backend); the recorder
/// records nothing more.
[[nodiscard]] std::shared_ptr<GraphImpl> graph_finish(QueueImpl& recorder);
/// Enqueues one replay of `graph` on `queue` (of the graph's device; Error(wrong_device) otherwise).
void graph_enqueue(QueueImpl& queue, GraphImpl& graph);
[[nodiscard]] std::size_t graph_kernel_count(const GraphImpl& graph) noexcept;
/// Replaces kernel launch number `index` of the graph (the same kernel, checked) by `launch`,
/// checked as a launch is, for the replays enqueued after this call.
void graph_update_kernel(GraphImpl& graph, std::size_t index, const KernelLaunch& launch);

// ---- interop (devctx/interop.hpp, devctx/dlpack.hpp) ------------------------------------------------

/// The device `queue` runs on.
[[nodiscard]] const DeviceInfo& queue_device_info(QueueImpl& queue);
/// The queue's native stream (a cudaStream_t); Error(not_available) naming `operation` when its
/// backend has none.
[[nodiscard]] void* queue_native_stream(QueueImpl& queue, const char* operation);
/// A record of `count` elements of another library's memory at `data` on `queue`'s device,
/// checked there (null, alignment, size, and on CUDA what the pointer is); `on_release` runs once
/// devctx's work on the memory has finished after the record is released.
[[nodiscard]] AllocationPtr queue_wrap_memory(QueueImpl& queue, const void* data, std::size_t count,
                                              std::size_t element_bytes, std::size_t alignment,
                                              std::function<void()> on_release);
/// The event's native handle (a cudaEvent_t); Error(invalid_handle) for a null event,
/// Error(not_available) when its backend has none.
[[nodiscard]] void* event_native_handle(const std::shared_ptr<EventImpl>& event);

// ---- registering host memory (DeviceContext::register_host_memory) ---------------------------------

/// One registration of host memory with a device; releasing it unregisters the memory.
/// Defined in src/core/host_registry.cpp.
class HostRegistrationRecord;
struct HostRegistrationReleaser {
  void operator()(HostRegistrationRecord* record) const noexcept;
};
using HostRegistrationPtr = std::unique_ptr<HostRegistrationRecord, HostRegistrationReleaser>;
/// Registers `count` elements of `element_bytes` at `data` with `queue`'s device. Throws
/// Error(invalid_argument) for an empty range, a null pointer, a range past the end of the
/// address space or overlapping one registered on the device, and what the backend refuses.
[[nodiscard]] HostRegistrationPtr queue_register_host_memory(QueueImpl& queue, const void* data, std::size_t count,
                                                             std::size_t element_bytes);

// ---- reading a buffer's record ----------------------------------------------------------------------

[[nodiscard]] void* allocation_data(const Allocation& allocation) noexcept;
/// The record's length in bytes (a buffer's count times its element's bytes, exactly).
[[nodiscard]] std::size_t allocation_size_bytes(const Allocation& allocation) noexcept;
/// Where the memory is: MemKind::device or MemKind::host_pinned.
[[nodiscard]] MemKind allocation_kind(const Allocation& allocation) noexcept;
/// The queue that allocated (or wrapped) the memory: the stream a buffer's own verbs
/// (map_to_host, enqueue_copy_to/_from, enqueue_fill) enqueue on. It lives as long as the record.
[[nodiscard]] QueueImpl& allocation_home_queue(const Allocation& allocation) noexcept;
/// The device whose memory the record describes.
[[nodiscard]] const DeviceInfo& allocation_device_info(const Allocation& allocation);

/// Checking mode's gate on a HostBuffer made by a checked context (docs/checking.md): `pending`
/// is non-zero while a copy into or out of the buffer, or a fill of it, may not have been waited
/// for. The buffer's accessors test it inline (src/core/host_access.hpp keeps it).
struct HostAccessGate {
  std::atomic<std::uint32_t> pending{0};
};
/// The allocation's gate, or null when it has none (every buffer of an unchecked context).
[[nodiscard]] HostAccessGate* allocation_host_gate(const Allocation& allocation) noexcept;
/// The host is about to touch the buffer through `access` ("HostBuffer::operator[]"): throws
/// Error(check_failed) unless it has waited for all the work pending on it.
void host_access_check(HostAccessGate& gate, const char* access);

// ---- misuse found in a header -------------------------------------------------------------------------

[[noreturn]] void throw_invalid_handle(const char* what);
/// Error(invalid_argument) for a typed buffer or slice (`what`) made from a devctx::Buffer whose
/// memory is not of the kind it needs (`device` true: device memory, else host memory).
[[noreturn]] void throw_wrong_memory_kind(const char* what, bool device);
[[noreturn]] void throw_slice_out_of_range(const char* what, std::size_t offset, std::size_t count, std::size_t size);
/// Error(size_mismatch) for view_as<U>() of `bytes` bytes at `address` (elements of `from_bytes`
/// each) that is not a whole number of `to_bytes`-byte elements, or not aligned to `to_align`.
[[noreturn]] void throw_bad_view(const char* what, const void* address, std::size_t bytes, std::size_t from_bytes,
                                 std::size_t to_bytes, std::size_t to_align);
/// Error(kernel_failed) for an out-of-range span index (DEVCTX_CHECK_BOUNDS).
[[noreturn]] void throw_span_out_of_range(std::size_t index, std::size_t size);
/// Error(kernel_failed) for a tensor's `what` ("index" or "tile") outside `bounds` (its extents, or
/// its extents in whole tiles), rank 1-3 (devctx/tensor.hpp; DEVCTX_CHECK_BOUNDS, checking mode).
[[noreturn]] void throw_tensor_out_of_range(const char* what, const std::size_t* index, const std::size_t* bounds,
                                            std::size_t rank);
/// Error(kernel_failed) for a tensor reshape between sizes that differ or a non-contiguous layout.
[[noreturn]] void throw_tensor_bad_reshape(std::size_t from, std::size_t to, bool from_contiguous, bool to_contiguous);
/// Error(size_mismatch) for a tensor whose layout reaches `needed` elements over `what` of `size`,
/// naming the layout (`layout`: "RowMajor", ...) and its extents and strides.
[[noreturn]] void throw_tensor_too_large(const char* what, const char* layout, const std::size_t* extents,
                                         const std::size_t* strides, std::size_t rank, std::size_t needed,
                                         std::size_t size);
/// A layout that is not representable (devctx/tensor.hpp): with `extents` (and `strides`, null
/// for a contiguous layout made from its extents), the stride of dimension `fault` (fault <
/// rank), its size (fault == rank) or its span (fault == rank + 1) does not fit in std::size_t.
/// Error(size_mismatch), or Error(kernel_failed) when `in_kernel`.
[[noreturn]] void throw_tensor_layout_overflow(const char* layout, const std::size_t* extents, const std::size_t* strides,
                                               std::size_t rank, std::size_t fault, bool in_kernel);
/// Error(invalid_argument) (kernel_failed when `in_kernel`) for Layout::from_parts given `given`
/// as extent `dim`, whose static extent is `fixed`.
[[noreturn]] void throw_tensor_static_extent(const char* layout, std::size_t dim, std::size_t given, std::size_t fixed,
                                             bool in_kernel);

}  // namespace devctx::detail
