// SPDX-License-Identifier: Apache-2.0
// src/core/enqueue.cpp - the checked entry points behind the enqueue verbs (copy, memset,
// launch, host task, synchronize, events): every request is validated here - sizes, devices,
// launch limits, size arithmetic - and becomes one operation record (core/operation.hpp) that
// `submit` (core/submit.hpp) hands on. Each refusal throws before anything is enqueued.
#include <algorithm>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include <devctx/backend.hpp>
#include <devctx/detail/base/checked_size.hpp>
#include <devctx/device_info.hpp>

#include "core/allocation.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"
#include "core/graph.hpp"
#include "core/memory.hpp"
#include "core/operation.hpp"
#include "core/submit.hpp"

namespace devctx::detail {
namespace {

void check_same_device(const QueueImpl& queue, const Allocation* allocation, const char* what, const char* operation) {
  if (allocation != nullptr && &allocation->device() != &queue.device())
    fail(Errc::wrong_device, operation, " on ", queue.device().label(), ": the ", what, " belongs to ",
         allocation->device().label(), "; copy it through host memory to use it on this device");
}

/// The device of the DeviceBuffer side of a copy that belongs to another device than the
/// queue's, or null.
DeviceImpl* foreign_device(const QueueImpl& queue, const MemRef& ref) {
  if (ref.kind != MemKind::device || ref.allocation == nullptr || &ref.allocation->device() == &queue.device())
    return nullptr;
  return &ref.allocation->device();
}

/// How a copy between two devices runs, or an Error naming why it cannot: a peer copy between
/// devices of one backend; on a GPU's stream, CPU device memory is ordinary host memory.
enum class CrossCopy : unsigned char { none, peer, as_host };
CrossCopy cross_copy_kind(const QueueImpl& queue, const MemRef& dst, const MemRef& src) {
  DeviceImpl* d = foreign_device(queue, dst);
  DeviceImpl* s = foreign_device(queue, src);
  if (d == nullptr && s == nullptr) return CrossCopy::none;
  DeviceImpl& here = queue.device();
  if (d != nullptr && s != nullptr)
    fail(Errc::wrong_device, "enqueue_copy on ", here.label(),
         ": neither side is memory of this device (the destination is a ", dst.what, " of ", d->label(),
         ", the source a ", src.what, " of ", s->label(), "); enqueue the copy on a stream of one of the two devices");
  DeviceImpl& other = d != nullptr ? *d : *s;
  if (here.can_copy_peer(other)) return CrossCopy::peer;
  // A device whose memory is host memory (a CPU device) is host memory to one with its own (a GPU).
  const bool here_has_device_memory = backend(here.info().api).has_device_memory;
  const bool other_has_device_memory = backend(other.info().api).has_device_memory;
  if (!other_has_device_memory && here_has_device_memory) return CrossCopy::as_host;
  fail(Errc::wrong_device, "enqueue_copy on ", here.label(), ": the ", d != nullptr ? "destination " : "source ",
       d != nullptr ? dst.what : src.what, " belongs to ", other.label(), ", whose memory this device cannot reach; ",
       other_has_device_memory && !here_has_device_memory
           ? "enqueue the copy on a stream of the GPU, which copies to and from CPU device memory"
           : "copy it through host memory");
}

// A HostBuffer of another device is ordinary host memory to this one.
MemKind effective_kind(const QueueImpl& queue, const MemRef& ref) {
  if (ref.kind == MemKind::host_pinned && ref.allocation != nullptr && &ref.allocation->device() != &queue.device())
    return MemKind::host_pageable;
  return ref.kind;
}

/// count * element_bytes of a copy or fill endpoint. Only a std::span can claim more elements
/// than memory holds (buffers were checked when allocated), but no byte count is trusted unchecked.
std::size_t endpoint_bytes(const QueueImpl& queue, const char* operation, const MemRef& ref, std::size_t element_bytes) {
  const auto bytes = checked_mul(ref.count, element_bytes);
  if (!bytes)
    fail(Errc::size_mismatch, operation, " on ", queue.device().label(), ": the ", ref.what, " has ", ref.count,
         " elements of ", element_bytes, " bytes, more bytes than a 64-bit size can count: no memory holds it");
  return *bytes;
}

/// Refuses a copy whose two sides share memory. Neither backend copies overlapping ranges as
/// memmove would: cudaMemcpyAsync does not promise it, and the CPU backend copies chunks in
/// parallel. So the rule is one for every backend, checked here before any of them.
void check_no_overlap(const QueueImpl& queue, const MemRef& dst, const MemRef& src, std::size_t bytes,
                      std::size_t element_bytes) {
  const auto d = reinterpret_cast<std::uintptr_t>(dst.data), s = reinterpret_cast<std::uintptr_t>(src.data);
  const std::uintptr_t low = std::min(d, s), distance = std::max(d, s) - low;
  if (distance >= bytes) return;
  // Element ranges counted from the start of the buffer that holds both sides when there is
  // one (slices of one buffer), else from the lower of the two starts.
  std::uintptr_t origin = low;
  const char* counted = "of the same host memory, counted from the lower start,";
  for (const Allocation* a : {dst.allocation, src.allocation}) {
    if (a == nullptr) continue;
    const auto begin = reinterpret_cast<std::uintptr_t>(a->data());
    if (begin <= low) {
      origin = begin;
      counted = "of one buffer";
      break;
    }
  }
  auto range = [&](std::uintptr_t p) {
    const std::size_t first = (p - origin) / element_bytes;
    return concat("elements [", first, ", ", first + dst.count, ")");
  };
  fail(Errc::invalid_argument, "enqueue_copy on ", queue.device().label(), ": the destination ", dst.what, " (",
       range(d), ") and the source ", src.what, " (", range(s), ") ", counted,
       " overlap; no backend copies overlapping ranges, so the two sides of a copy must not share memory "
       "(copy through a second buffer)");
}

/// x * y * z, or nullopt when it does not fit.
std::optional<std::size_t> volume(const Dim3& d) {
  const auto xy = checked_mul(d.x, d.y);
  return xy ? checked_mul(*xy, d.z) : std::nullopt;
}

}  // namespace

void queue_copy(QueueImpl& queue, const MemRef& dst, const MemRef& src, std::size_t element_bytes) {
  refuse_if_recorded_from(queue, "enqueue_copy");
  const CrossCopy cross = cross_copy_kind(queue, dst, src);
  if (dst.count != src.count)
    fail(Errc::size_mismatch, "enqueue_copy on ", queue.device().label(), ": the destination ", dst.what, " has ",
         dst.count, " elements of ", element_bytes, " bytes but the source ", src.what, " has ", src.count,
         " elements; sizes must be equal (use slice(offset, count) to copy part of a buffer)");
  const std::size_t bytes = endpoint_bytes(queue, "enqueue_copy", dst, element_bytes);
  check_no_overlap(queue, dst, src, bytes, element_bytes);
  if (queue.recorder() != nullptr) [[unlikely]] {
    if (cross != CrossCopy::none)
      fail(Errc::invalid_argument, "enqueue_copy on a stream recording a devctx::Graph (", queue.device().label(),
           "): a graph records copies within its own device only; copy between devices outside the graph");
  }
  // A buffer of another device is either copied in stream order here (a peer copy: its free
  // then waits for this queue too) or host memory, copied synchronously like pageable memory.
  if (cross == CrossCopy::peer) {
    DeviceImpl& dst_device = dst.allocation != nullptr ? dst.allocation->device() : queue.device();
    DeviceImpl& src_device = src.allocation != nullptr ? src.allocation->device() : queue.device();
    return submit(
        queue, op::PeerCopy{.dst = dst, .src = src, .bytes = bytes, .dst_device = &dst_device, .src_device = &src_device});
  }
  const MemKind dst_kind = cross == CrossCopy::as_host && foreign_device(queue, dst) ? MemKind::host_pageable
                                                                                     : effective_kind(queue, dst);
  const MemKind src_kind = cross == CrossCopy::as_host && foreign_device(queue, src) ? MemKind::host_pageable
                                                                                     : effective_kind(queue, src);
  // CPU device memory read by a GPU's stream may still be written by CPU streams this stream waits
  // for (enqueue_wait_for an event of the CPU device): the GPU's pageable paths read host memory
  // when called (the staged one fills its first chunks at once), so wait for this stream first.
  if (cross == CrossCopy::as_host && foreign_device(queue, src) != nullptr && bytes != 0) queue.synchronize();
  submit(queue, op::Copy{.dst = dst, .src = src, .bytes = bytes, .dst_kind = dst_kind, .src_kind = src_kind});
}

void queue_fill(QueueImpl& queue, const MemRef& dst, const void* value, std::size_t element_bytes) {
  refuse_if_recorded_from(queue, "enqueue_memset");
  if (dst.kind == MemKind::host_pageable)
    fail(Errc::invalid_argument, "enqueue_memset on ", queue.device().label(),
         ": ordinary host memory cannot be filled in stream order; fill it on the host (std::fill) "
         "or use a HostBuffer");
  check_same_device(queue, dst.kind == MemKind::device ? dst.allocation : nullptr, "DeviceBuffer", "enqueue_memset");
  const std::size_t bytes = endpoint_bytes(queue, "enqueue_memset", dst, element_bytes);
  submit(queue,
         op::Fill{.dst = dst, .kind = effective_kind(queue, dst), .value = value, .element_bytes = element_bytes, .bytes = bytes});
}

void queue_launch(QueueImpl& queue, const KernelLaunch& launch) {
  refuse_if_recorded_from(queue, "enqueue_function", launch.name);
  DeviceImpl& device = queue.device();
  const DeviceInfo& info = device.info();
  const LaunchConfig& c = launch.config;
  auto where = [&] { return concat(launch_operation(launch.name), " on ", device.label(), ": "); };
  auto check_dims = [&](const char* what, const Dim3& d, const Dim3& max) {
    if (d.x == 0 || d.y == 0 || d.z == 0)
      fail(Errc::invalid_launch, where(), what, ' ', to_string(d),
           " has a zero dimension; every dimension must be at least 1");
    if (d.x > max.x || d.y > max.y || d.z > max.z)
      fail(Errc::invalid_launch, where(), what, ' ', to_string(d), " exceeds the device's maximum ", to_string(max));
  };
  check_dims("grid_dim", c.grid_dim, info.max_grid_dim);
  check_dims("block_dim", c.block_dim, info.max_block_dim);
  if (const auto threads = volume(c.block_dim); !threads || *threads > info.max_threads_per_block)
    fail(Errc::invalid_launch, where(), "block_dim ", to_string(c.block_dim), " has ", c.block_dim.volume(),
         " threads; the device allows at most ", info.max_threads_per_block, " threads per block");
  if (!volume(c.grid_dim))
    fail(Errc::invalid_launch, where(), "grid_dim ", to_string(c.grid_dim), " has more blocks than a 64-bit count holds");
  if (c.shared_bytes > info.max_shared_bytes_per_block)
    fail(Errc::invalid_launch, where(), "shared_bytes ", bytes_text(c.shared_bytes),
         " exceeds the device's shared memory per block, ", bytes_text(info.max_shared_bytes_per_block));
  for (std::size_t i = 0; i < launch.buffer_count; ++i) {
    const Allocation* a = launch.buffers[i];
    if (a != nullptr && &a->device() != &device)
      fail(Errc::wrong_device, where(), "argument ", i + 1, " is a DeviceBuffer of ", a->device().label(),
           "; a kernel can only use buffers of the device it runs on");
  }
  // A span made from a raw pointer: the backend checks it is memory of this device (on CUDA,
  // host memory is refused here rather than faulting in the kernel).
  if (launch.spans != nullptr)
    for (std::size_t i = 0; i < launch.buffer_count; ++i)
      if (launch.span_bytes[i] > 0)
        device.check_device_memory(launch.spans[i], launch.span_bytes[i],
                                   concat(launch_operation(launch.name), " argument ", i + 1, " (a devctx::span)"));
  device.check_kernel_limits(launch);
  submit(queue, op::Launch{&launch});
}

void queue_synchronize(QueueImpl& queue) {
  // Views of foreign memory whose work is done tell their owners now, whether or not it failed.
  struct RunReleases {
    DeviceImpl& device;
    ~RunReleases() { device.run_finished_releases(); }
  } run_releases{queue.device()};
  submit(queue, op::Synchronize{});
}

std::shared_ptr<EventImpl> queue_record_event(QueueImpl& queue) { return submit(queue, op::RecordEvent{}); }

void queue_wait_for(QueueImpl& queue, const std::shared_ptr<EventImpl>& event) {
  if (!event) throw_invalid_handle("a default-constructed or moved-from Event: record one with record_event()");
  if (!queue.device().can_wait_for(event->device()))
    fail(Errc::wrong_device, "enqueue_wait_for on ", queue.device().label(), ": the event was recorded on ",
         event->device().label(),
         ", which this stream's device cannot wait for: wait on the host "
         "(event.synchronize()) before enqueueing the dependent work");
  submit(queue, op::Wait{&event});
}

void queue_host_task(QueueImpl& queue, std::function<void()> task) {
  refuse_if_recorded_from(queue, "enqueue_host_task");
  if (!task)
    fail(Errc::invalid_argument, "enqueue_host_task on ", queue.device().label(),
         ": the task is empty (a "
         "default-constructed or moved-from std::function); pass a function to run");
  submit(queue, op::HostTask{std::move(task)});
}

}  // namespace devctx::detail
