// SPDX-License-Identifier: Apache-2.0
// Interop's checked entry points (include/devctx/interop.hpp): the native handles of queues and
// events, views of memory devctx did not allocate, and the deferred releases that tell that
// memory's owner when devctx's work on it has finished.
#include <devctx/interop.hpp>

#include <cstdint>
#include <limits>
#include <utility>

#include "core/allocation.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

const DeviceInfo& queue_device_info(QueueImpl& queue) { return queue.device().info(); }

const DeviceInfo& allocation_device_info(const Allocation& allocation) { return allocation.device().info(); }

void* queue_native_stream(QueueImpl& queue, const char* operation) {
  void* native = queue.native_handle();
  if (native == nullptr)
    fail(Errc::not_available, operation, ": the stream runs on ", queue.device().label(),
         ", which has no native CUDA stream; CUDA interop needs a context on a CUDA device "
         "(DeviceContext{devctx::backend(\"cuda\").api, N}, or DEVCTX_DEVICE=cuda:N)");
  return native;
}

void* event_native_handle(const std::shared_ptr<EventImpl>& event) {
  if (!event) throw_invalid_handle("a default-constructed or moved-from Event: record one with record_event()");
  void* native = event->native_handle();
  if (native == nullptr)
    fail(Errc::not_available, "cuda_event: the event was recorded on ", event->device().label(),
         ", which has no native CUDA events; CUDA interop needs a context on a CUDA device");
  return native;
}

AllocationPtr queue_wrap_memory(QueueImpl& queue, const void* data, std::size_t count, std::size_t element_bytes,
                                std::size_t alignment, std::function<void()> on_release) {
  DeviceImpl& device = queue.device();
  // A good moment to tell earlier views' owners that devctx is done with their memory.
  device.run_finished_releases();
  auto where = [&] { return concat("wrap_device_memory on ", device.label(), ": "); };
  if (count > std::numeric_limits<std::size_t>::max() / element_bytes)
    fail(Errc::invalid_argument, where(), count, " elements of ", element_bytes,
         " bytes do not fit in 64 bits: the count is wrong");
  if (data == nullptr && count > 0)
    fail(Errc::invalid_argument, where(), "the pointer is null but the count is ", count);
  if (reinterpret_cast<std::uintptr_t>(data) % alignment != 0)
    fail(Errc::invalid_argument, where(), "the pointer ", data, " is not aligned for its element type (", alignment,
         "-byte alignment)");
  const std::size_t bytes = count * element_bytes;
  if (count > 0) device.check_device_memory(data, bytes, "wrap_device_memory");
  return AllocationPtr(
      new Allocation(queue.shared_from_this(), const_cast<void*>(data), bytes, MemKind::device, std::move(on_release)));
}

// ---- the backend interface's defaults and deferred releases ----------------------------------------

std::shared_ptr<QueueImpl> DeviceImpl::wrap_native_queue(void* /*native*/) {
  fail(Errc::not_available, "wrap_cuda_stream: the context is on ", label(),
       ", which has no native CUDA streams; wrap a CUDA stream with a context on its CUDA device");
}

void DeviceImpl::defer_release(std::shared_ptr<EventImpl> after, std::function<void()> release) noexcept {
  try {
    const std::lock_guard lock(releases_mutex_);
    releases_.emplace_back(std::move(after), std::move(release));
    pending_releases_.fetch_add(1, std::memory_order_release);
  } catch (...) {
    // Cannot remember it: never running it is safe, running it early is not.
  }
}

void DeviceImpl::run_finished_releases() noexcept {
  if (pending_releases_.load(std::memory_order_acquire) == 0) return;
  std::vector<std::function<void()>> ready;
  try {
    const std::lock_guard lock(releases_mutex_);
    ready.reserve(releases_.size());  // so that moving entries out below cannot throw
    std::erase_if(releases_, [&](auto& entry) {
      bool reached = false;
      try {
        reached = entry.first->query();
      } catch (...) {
        return false;  // the device failed: the memory may still be in use, keep it (leak)
      }
      if (!reached) return false;
      ready.push_back(std::move(entry.second));
      return true;
    });
    pending_releases_.store(releases_.size(), std::memory_order_release);
  } catch (...) {
    return;
  }
  // Outside the lock: a release may drop the last reference to other devctx objects.
  for (auto& release : ready) {
    try {
      release();
    } catch (...) {
      // A release callback's failure has no one to report to.
    }
  }
}

}  // namespace devctx::detail
