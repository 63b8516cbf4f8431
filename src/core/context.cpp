// src/core/context.cpp - DeviceContext and Event: choosing a device (the backend table and the
// default device), sharing one DeviceImpl among the contexts of a device, and the streams a
// context owns. The checked enqueue entry points are in enqueue.cpp.
#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <devctx/context.hpp>
#include <devctx/error.hpp>

#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx {
namespace detail {

std::string DeviceImpl::label() const {
  const DeviceInfo& i = info();
  return concat(to_string(i.api), ':', i.id, " (", i.name, ')');
}

namespace {

/// How core counts and opens the devices of each backend: the one place that maps an Api to
/// a backend folder's entry points.
struct Backend {
  Api api;
  int (*device_count)() noexcept;
  std::shared_ptr<DeviceImpl> (*open_device)(int id);
};

constexpr Backend kBackends[] = {
    {Api::cpu, &cpu_device_count, &open_cpu_device},
    {Api::cuda, &cuda_device_count, &open_cuda_device},
};

const Backend& backend(Api api) {
  for (const Backend& b : kBackends)
    if (b.api == api) return b;
  fail(Errc::invalid_argument, "devctx::Api value ", int(api), " names no backend: use Api::cpu or Api::cuda");
}

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
  auto device = backend(api).open_device(id);
  slot = device;
  return device;
}

DeviceId default_device() {
  if (const auto chosen = device_from_environment()) return *chosen;
  if (DeviceContext::count(Api::cuda) > 0) return {Api::cuda, 0};
  return {Api::cpu, 0};
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

  void synchronize_device() {
    device_->synchronize_device();
    synchronize();
  }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::shared_ptr<QueueImpl> queue_;
  std::mutex mutex_;
  std::vector<std::weak_ptr<QueueImpl>> streams_;
};

Stream context_wrap_native_stream(DeviceContext& context, void* native) {
  return context.impl().wrap_native_stream(native);
}

}  // namespace detail

DeviceContext::DeviceContext() : StreamRef(nullptr) {
  const DeviceId device = detail::default_device();
  impl_ = std::make_unique<detail::ContextImpl>(device.api, device.id);
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

int DeviceContext::count(Api api) { return detail::backend(api).device_count(); }

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
void DeviceContext::synchronize_device() { impl().synchronize_device(); }
MemoryInfo DeviceContext::memory_info() const { return impl().device().memory_info(); }

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
