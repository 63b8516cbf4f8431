// DeviceContext, Stream and Event: device selection and the checked entry points that the
// public templates call. Every request is validated here, before any backend sees it.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <devctx/context.hpp>
#include <devctx/error.hpp>

#include "core/allocation.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx {
namespace detail {

std::string DeviceImpl::label() const {
  const DeviceInfo& i = info();
  return concat(to_string(i.api), ':', i.id, " (", i.name, ')');
}

namespace {

// Contexts of one device share its DeviceImpl (one worker pool, one memory pool). Held weakly:
// the device goes away with its last context, so nothing outlives the program's own objects.
std::shared_ptr<DeviceImpl> open_device(Api api, int id) {
  static std::mutex mutex;
  static std::map<std::pair<Api, int>, std::weak_ptr<DeviceImpl>> open;
  const std::lock_guard lock(mutex);
  auto& slot = open[{api, id}];
  if (auto device = slot.lock()) return device;
  const int available = DeviceContext::count(api);
  if (id < 0 || id >= available) {
    if (api == Api::cuda && available == 0)
      fail(Errc::not_available, "no CUDA device: ", cuda_absent_reason(),
           "; use DeviceContext{devctx::Api::cpu} to run on the CPU");
    fail(Errc::not_available, "device ", to_string(api), ':', id, " does not exist: ", available, ' ',
         to_string(api), " device(s) are present (ids 0..", std::max(available - 1, 0), ')');
  }
  auto device = api == Api::cpu ? open_cpu_device(id) : open_cuda_device(id);
  slot = device;
  return device;
}

std::pair<Api, int> default_device() {
  if (const char* env = std::getenv("DEVCTX_DEVICE"); env != nullptr && *env != '\0') {
    std::string text(env);
    std::string name = text;
    int id = 0;
    if (const auto colon = text.find(':'); colon != std::string::npos) {
      name = text.substr(0, colon);
      const std::string number = text.substr(colon + 1);
      char* end = nullptr;
      const long value = std::strtol(number.c_str(), &end, 10);
      if (number.empty() || *end != '\0' || value < 0 || value > 1 << 20)
        fail(Errc::invalid_argument, "DEVCTX_DEVICE='", text, "': the device number after ':' must be a non-negative integer");
      id = int(value);
    }
    if (name == "cpu") return {Api::cpu, id};
    if (name == "cuda" || name == "gpu") return {Api::cuda, id};
    fail(Errc::invalid_argument, "DEVCTX_DEVICE='", text, "' names no backend: use cpu, cuda or cuda:N");
  }
  if (DeviceContext::count(Api::cuda) > 0) return {Api::cuda, 0};
  return {Api::cpu, 0};
}

void check_same_device(const QueueImpl& queue, const Allocation* allocation, const char* what, const char* operation) {
  if (allocation != nullptr && &allocation->device() != &queue.device())
    fail(Errc::wrong_device, operation, " on ", queue.device().label(), ": the ", what, " belongs to ",
         allocation->device().label(), "; copy it through host memory to use it on this device");
}

void note_use_if_local(QueueImpl& queue, Allocation* allocation) {
  if (allocation != nullptr && &allocation->device() == &queue.device()) allocation->note_use(queue);
}

// A HostBuffer of another device is ordinary host memory to this one.
MemKind effective_kind(const QueueImpl& queue, const MemRef& ref) {
  if (ref.kind == MemKind::host_pinned && ref.allocation != nullptr && &ref.allocation->device() != &queue.device())
    return MemKind::host_pageable;
  return ref.kind;
}

}  // namespace

class ContextImpl {
 public:
  ContextImpl(Api api, int id) : device_(open_device(api, id)), queue_(device_->create_queue()) {}

  [[nodiscard]] DeviceImpl& device() const { return *device_; }
  [[nodiscard]] QueueImpl& queue() const { return *queue_; }

  ContextImpl(const ContextImpl&) = delete;
  ContextImpl& operator=(const ContextImpl&) = delete;
  // Never blocks: view releases whose work has finished run now, the others at the device's
  // next synchronize.
  ~ContextImpl() { device_->run_finished_releases(); }

  Stream create_stream() { return adopt(device_->create_queue()); }
  Stream wrap_native_stream(void* native) { return adopt(device_->wrap_native_queue(native)); }

  Stream adopt(std::shared_ptr<QueueImpl> queue) {
    const std::lock_guard lock(mutex_);
    std::erase_if(streams_, [](const auto& s) { return s.expired(); });
    streams_.push_back(queue);
    return Stream(std::move(queue));
  }

  void synchronize() {
    std::vector<std::shared_ptr<QueueImpl>> streams;
    {
      const std::lock_guard lock(mutex_);
      for (const auto& s : streams_)
        if (auto q = s.lock()) streams.push_back(std::move(q));
    }
    // Wait for everything first, then report the first failure, so that no work is still
    // running when the caller sees the error.
    std::exception_ptr first;
    auto sync = [&](QueueImpl& q) {
      try {
        q.synchronize();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    };
    sync(*queue_);
    for (const auto& q : streams) sync(*q);
    device_->run_finished_releases();
    if (first) std::rethrow_exception(first);
  }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::shared_ptr<QueueImpl> queue_;
  std::mutex mutex_;
  std::vector<std::weak_ptr<QueueImpl>> streams_;
};

void enqueue_copy(QueueImpl& queue, const MemRef& dst, const MemRef& src, std::size_t element_bytes) {
  check_same_device(queue, dst.kind == MemKind::device ? dst.allocation : nullptr, "destination DeviceBuffer", "enqueue_copy");
  check_same_device(queue, src.kind == MemKind::device ? src.allocation : nullptr, "source DeviceBuffer", "enqueue_copy");
  if (dst.count != src.count)
    fail(Errc::size_mismatch, "enqueue_copy on ", queue.device().label(), ": the destination ", dst.what, " has ",
         dst.count, " elements of ", element_bytes, " bytes but the source ", src.what, " has ", src.count,
         " elements; sizes must be equal (use slice(offset, count) to copy part of a buffer)");
  // A buffer of another device is host memory here (checked above), copied synchronously like
  // pageable memory, so only buffers of this device need their frees ordered after this copy.
  note_use_if_local(queue, dst.allocation);
  note_use_if_local(queue, src.allocation);
  if (dst.count == 0) return;
  queue.copy(dst.data, effective_kind(queue, dst), src.data, effective_kind(queue, src), dst.count * element_bytes);
}

void enqueue_fill(QueueImpl& queue, const MemRef& dst, const void* value, std::size_t element_bytes) {
  if (dst.kind == MemKind::host_pageable)
    fail(Errc::invalid_argument, "enqueue_memset on ", queue.device().label(),
         ": ordinary host memory cannot be filled in stream order; fill it on the host (std::fill) "
         "or use a HostBuffer");
  check_same_device(queue, dst.kind == MemKind::device ? dst.allocation : nullptr, "DeviceBuffer", "enqueue_memset");
  note_use_if_local(queue, dst.allocation);
  if (dst.count == 0) return;
  queue.fill(dst.data, effective_kind(queue, dst), dst.count, value, element_bytes);
}

void enqueue_launch(QueueImpl& queue, const KernelLaunch& launch) {
  DeviceImpl& device = queue.device();
  const DeviceInfo& info = device.info();
  const LaunchConfig& c = launch.config;
  auto where = [&] { return concat("enqueue_function<", launch.name, "> on ", device.label(), ": "); };
  auto check_dims = [&](const char* what, const Dim3& d, const Dim3& max) {
    if (d.x == 0 || d.y == 0 || d.z == 0)
      fail(Errc::invalid_launch, where(), what, ' ', to_string(d), " has a zero dimension; every dimension must be at least 1");
    if (d.x > max.x || d.y > max.y || d.z > max.z)
      fail(Errc::invalid_launch, where(), what, ' ', to_string(d), " exceeds the device's maximum ", to_string(max));
  };
  check_dims("grid_dim", c.grid_dim, info.max_grid_dim);
  check_dims("block_dim", c.block_dim, info.max_block_dim);
  if (c.block_dim.volume() > info.max_threads_per_block)
    fail(Errc::invalid_launch, where(), "block_dim ", to_string(c.block_dim), " has ", c.block_dim.volume(),
         " threads; the device allows at most ", info.max_threads_per_block, " threads per block");
  if (c.shared_bytes > info.max_shared_bytes_per_block)
    fail(Errc::invalid_launch, where(), "shared_bytes ", bytes_text(c.shared_bytes),
         " exceeds the device's shared memory per block, ", bytes_text(info.max_shared_bytes_per_block));
  for (std::size_t i = 0; i < launch.buffer_count; ++i) {
    const Allocation* a = launch.buffers[i];
    if (a != nullptr && &a->device() != &device)
      fail(Errc::wrong_device, where(), "argument ", i + 1, " is a DeviceBuffer of ", a->device().label(),
           "; a kernel can only use buffers of the device it runs on");
  }
  device.check_kernel_limits(launch);
  for (std::size_t i = 0; i < launch.buffer_count; ++i)
    if (launch.buffers[i] != nullptr) launch.buffers[i]->note_use(queue);
  queue.launch(launch);
}

void queue_synchronize(QueueImpl& queue) {
  struct RunReleases {
    DeviceImpl& device;
    ~RunReleases() { device.run_finished_releases(); }
  } run_releases{queue.device()};
  queue.synchronize();
}

Stream context_wrap_native_stream(DeviceContext& context, void* native) {
  return context.impl().wrap_native_stream(native);
}

std::shared_ptr<EventImpl> queue_record_event(QueueImpl& queue) { return queue.record_event(); }

void queue_wait_for(QueueImpl& queue, const Event& event) {
  if (!event) throw_invalid_handle("a default-constructed Event: record one with record_event()");
  if (&event.impl()->device() != &queue.device())
    fail(Errc::wrong_device, "enqueue_wait_for on ", queue.device().label(), ": the event was recorded on ",
         event.impl()->device().label(), "; streams can only wait for events of their own device");
  queue.wait_for(event.impl());
}

}  // namespace detail

DeviceContext::DeviceContext() : StreamRef(nullptr) {
  const auto [api, id] = detail::default_device();
  impl_ = std::make_unique<detail::ContextImpl>(api, id);
  reset(&impl_->queue());
}

DeviceContext::DeviceContext(Api api, int id)
    : StreamRef(nullptr), impl_(std::make_unique<detail::ContextImpl>(api, id)) {
  reset(&impl_->queue());
}

DeviceContext::DeviceContext(DeviceContext&& other) noexcept
    : StreamRef(other.impl_ ? &other.impl_->queue() : nullptr), impl_(std::move(other.impl_)) {
  other.reset(nullptr);
}

DeviceContext& DeviceContext::operator=(DeviceContext&& other) noexcept {
  impl_ = std::move(other.impl_);
  reset(impl_ ? &impl_->queue() : nullptr);
  other.reset(nullptr);
  return *this;
}

DeviceContext::~DeviceContext() = default;

int DeviceContext::count(Api api) {
  return api == Api::cpu ? detail::cpu_device_count() : detail::cuda_device_count();
}

detail::ContextImpl& DeviceContext::impl() const {
  if (!impl_) detail::throw_invalid_handle("a moved-from DeviceContext: it has no device any more");
  return *impl_;
}

Api DeviceContext::api() const { return info().api; }
int DeviceContext::id() const { return info().id; }
std::string DeviceContext::name() const { return info().name; }
const DeviceInfo& DeviceContext::info() const { return impl().device().info(); }
Stream DeviceContext::create_stream() { return impl().create_stream(); }
void DeviceContext::synchronize() { impl().synchronize(); }

void Event::synchronize() const {
  if (!impl_) detail::throw_invalid_handle("a default-constructed Event: record one with record_event()");
  impl_->synchronize();
  impl_->device().run_finished_releases();
}

bool Event::query() const {
  if (!impl_) detail::throw_invalid_handle("a default-constructed Event: record one with record_event()");
  return impl_->query();
}

double elapsed_ms(const Event& start, const Event& stop) {
  if (!start || !stop) detail::throw_invalid_handle("a default-constructed Event: record one with record_event()");
  if (&start.impl()->device() != &stop.impl()->device())
    detail::fail(Errc::wrong_device, "elapsed_ms: the events belong to different devices (",
                 start.impl()->device().label(), " and ", stop.impl()->device().label(), ')');
  return stop.impl()->elapsed_ms_since(*start.impl());
}

}  // namespace devctx
