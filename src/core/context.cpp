// SPDX-License-Identifier: Apache-2.0
// src/core/context.cpp - DeviceContext and Event: choosing a device (through the backends'
// descriptors, core/backend_descriptor.hpp, and the default device), sharing one DeviceImpl among the contexts of a
// device, and the streams a context owns. The checked enqueue entry points are in enqueue.cpp.
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
#include "core/backend_descriptor.hpp"
#include "core/environment.hpp"
#include "core/errors.hpp"
#include "core/trace/hooks.hpp"

namespace devctx {
namespace detail {

const std::string& DeviceImpl::label() const {
  std::call_once(label_once_, [this] {
    const DeviceInfo& i = info();
    label_ = concat(to_string(i.api), ':', i.id, " (", i.name, ')');
  });
  return label_;
}

void QueueImpl::copy_peer(void*, DeviceImpl& dst_device, const void*, DeviceImpl& src_device, std::size_t) {
  fail(Errc::not_available, "enqueue_copy on ", device_.label(), ": copies between ", dst_device.label(), " and ",
       src_device.label(), " are not available on this backend; copy through host memory");
}

namespace {

// Contexts of one device share its DeviceImpl (one worker pool, one memory pool). Held weakly:
// the device goes away with its last context, so nothing outlives the program's own objects.
std::shared_ptr<DeviceImpl> open_device(Api api, int id) {
  static std::mutex mutex;
  static std::map<std::pair<Api, int>, std::weak_ptr<DeviceImpl>> open;
  const std::lock_guard lock(mutex);
  const BackendDescriptor& backend = descriptor_of(api);  // first: throws for an Api naming no backend
  auto& slot = open[{api, id}];
  if (auto device = slot.lock()) return device;
  const int available = backend.backend.device_count();
  if (id < 0 || id >= available) {
    if (available == 0)
      fail(Errc::not_available, "no ", backend.backend.name, " device: ", backend.backend.absent_reason(),
           "; use DeviceContext{devctx::Api::cpu} to run on the CPU");
    fail(Errc::not_available, "device ", backend.backend.name, ':', id, " does not exist: ", available, ' ',
         backend.backend.name, " device(s) are present (ids 0..", std::max(available - 1, 0), ')');
  }
  auto device = backend.open_device(id);
  slot = device;
  return device;
}

/// Whether a context on `device` runs checked (ContextOptions::check, else DEVCTX_CHECK).
bool checking_for(const DeviceImpl& device, const ContextOptions& options) {
  const bool from_environment = env_flag("DEVCTX_CHECK", false);  // read always: a bad value is an error
  const bool on_cpu = device.info().api == Api::cpu;
  if (!options.check) return from_environment && on_cpu;
  if (*options.check && !on_cpu)
    fail(Errc::not_available, "ContextOptions{.check = true} on ", device.label(),
         ": checking mode runs kernels on the CPU backend (DeviceContext{devctx::Api::cpu, 0, {.check = true}}); "
         "on a GPU, run the program under compute-sanitizer (docs/checking.md)");
  return *options.check;
}

/// DEVCTX_DEVICE, else device 0 of the backend with a device and the highest preference.
DeviceId default_device() {
  if (const auto chosen = device_from_environment()) return *chosen;
  const Backend* best = nullptr;
  for (const Backend* b : backends())
    if ((best == nullptr || b->default_preference > best->default_preference) && b->device_count() > 0) best = b;
  return {best != nullptr ? best->api : Api::cpu, 0};
}

}  // namespace

class ContextImpl {
 public:
  ContextImpl(Api api, int id, const ContextOptions& options)
      : device_(open_device(api, id)), checking_(checking_for(*device_, options)), queue_(device_->create_queue()) {
    if (checking_) enable_checking(*queue_);
    start_backend_tools();            // the backends' pipeline tools their settings ask for (NVTX)
    trace::start_from_environment();  // after the device opened: its exit step runs before the backends' own
  }

  [[nodiscard]] DeviceImpl& device() const { return *device_; }
  [[nodiscard]] QueueImpl& queue() const { return *queue_; }
  [[nodiscard]] bool checking() const noexcept { return checking_; }

  ContextImpl(const ContextImpl&) = delete;
  ContextImpl& operator=(const ContextImpl&) = delete;
  // Never blocks: view releases whose work has finished run now, the others at the device's
  // next synchronize.
  ~ContextImpl() { device_->run_finished_releases(); }

  Stream create_stream() { return adopt(device_->create_queue()); }
  Stream create_stream(int priority) {
    const StreamPriorityRange range = device_->stream_priority_range();
    if (priority < range.greatest || priority > range.least)
      fail(Errc::invalid_argument, "create_stream: priority ", priority, " is outside ", device_->label(),
           "'s stream priorities, ", range.least, " (the lowest, the default) to ", range.greatest,
           " (the highest); ask stream_priority_range() for them");
    return adopt(device_->create_priority_queue(priority));
  }
  Stream wrap_native_stream(void* native) { return adopt(device_->wrap_native_queue(native)); }

  Stream adopt(std::shared_ptr<QueueImpl> queue) {
    if (checking_) enable_checking(*queue);  // a checked context's streams are checked
    const std::lock_guard lock(mutex_);
    std::erase_if(streams_, [](const auto& s) { return s.expired(); });
    streams_.push_back(queue);
    return Access::make<Stream>(std::move(queue));
  }

  void synchronize() {
    trace::traced(*queue_, [] { return op::Synchronize{}; }, [&] { synchronize_all(); });
  }

  void synchronize_all() {
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
        synchronize_observed(q);
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
    trace::traced(
        *queue_, [] { return op::Synchronize{"synchronize_device"}; },
        [&] {
          synchronize_device_observed(*device_);
          synchronize_all();
        });
  }

 private:
  std::shared_ptr<DeviceImpl> device_;
  bool checking_;
  std::shared_ptr<QueueImpl> queue_;
  std::mutex mutex_;
  std::vector<std::weak_ptr<QueueImpl>> streams_;
};

Stream context_wrap_native_stream(DeviceContext& context, void* native) {
  return context.impl().wrap_native_stream(native);
}

}  // namespace detail

namespace {
// What every use of a moved-from context says (its device calls and its stream's verbs alike).
constexpr const char* kMovedFromContext = "a moved-from DeviceContext: it has no device or stream any more";
}  // namespace

DeviceContext::DeviceContext() : DeviceContext(ContextOptions{}) {}

DeviceContext::DeviceContext(ContextOptions options) : StreamRef(nullptr, kMovedFromContext) {
  const DeviceId device = detail::default_device();
  impl_ = std::make_unique<detail::ContextImpl>(device.api, device.id, options);
  reset(&impl_->queue());
}

DeviceContext::DeviceContext(Api api, int id, ContextOptions options)
    : StreamRef(nullptr, kMovedFromContext), impl_(std::make_unique<detail::ContextImpl>(api, id, options)) {
  reset(&impl_->queue());
}

DeviceContext::DeviceContext(DeviceContext&& other) noexcept
    : StreamRef(other.impl_ ? &other.impl_->queue() : nullptr, kMovedFromContext), impl_(std::move(other.impl_)) {
  other.reset(nullptr);
}

DeviceContext& DeviceContext::operator=(DeviceContext&& other) noexcept {
  impl_ = std::move(other.impl_);
  reset(impl_ ? &impl_->queue() : nullptr);
  other.reset(nullptr);
  return *this;
}

DeviceContext::~DeviceContext() = default;

int DeviceContext::count(Api api) { return devctx::backend(api).device_count(); }

void DeviceContext::set_cpu_device_count(int count) { detail::set_cpu_device_count(count); }

bool DeviceContext::can_access_peer(const DeviceContext& other) const {
  return impl().device().can_access_peer(other.impl().device());
}

detail::ContextImpl& DeviceContext::impl() const {
  if (!impl_) detail::throw_invalid_handle(kMovedFromContext);
  return *impl_;
}

Api DeviceContext::api() const { return info().api; }
const Backend& DeviceContext::backend() const { return devctx::backend(info().api); }
int DeviceContext::id() const { return info().id; }
std::string DeviceContext::name() const { return info().name; }
const DeviceInfo& DeviceContext::info() const { return impl().device().info(); }
bool DeviceContext::checking() const { return impl().checking(); }
Stream DeviceContext::create_stream() { return impl().create_stream(); }
Stream DeviceContext::create_stream(int priority) { return impl().create_stream(priority); }
StreamPriorityRange DeviceContext::stream_priority_range() const { return impl().device().stream_priority_range(); }
void DeviceContext::synchronize() { impl().synchronize(); }
void DeviceContext::synchronize_device() { impl().synchronize_device(); }
MemoryInfo DeviceContext::memory_info() const { return impl().device().memory_info(); }

trace::Report DeviceContext::report() const {
  const std::string label = impl().device().label();
  auto report = detail::trace::report_of(&label);
  if (!report && !trace::recording())
    detail::fail(Errc::not_available, "report() on ", label,
                 ": nothing was recorded; set DEVCTX_REPORT=1 or DEVCTX_TRACE_FILE=out.json, or call "
                 "devctx::trace::start() before the work to report on");
  return report ? std::move(*report) : trace::summarize({});
}

void Event::synchronize() const {
  if (!impl_) detail::throw_invalid_handle("a default-constructed or moved-from Event: record one with record_event()");
  detail::trace::traced(
      impl_->recorded_on(), [] { return detail::op::Synchronize{"Event::synchronize"}; },
      [&] { detail::event_synchronize(*impl_); });
  impl_->device().run_finished_releases();
}

bool Event::query() const {
  if (!impl_) detail::throw_invalid_handle("a default-constructed or moved-from Event: record one with record_event()");
  return detail::event_query(*impl_);
}

double elapsed_ms(const Event& start, const Event& stop) {
  if (!start || !stop)
    detail::throw_invalid_handle("a default-constructed or moved-from Event: record one with record_event()");
  if (&start.impl()->device() != &stop.impl()->device())
    detail::fail(Errc::wrong_device, "elapsed_ms: the events belong to different devices (",
                 start.impl()->device().label(), " and ", stop.impl()->device().label(), ')');
  // Waits for both events: a host wait, on the track of the stream that recorded `stop`.
  const double ms = detail::trace::traced(
      stop.impl()->recorded_on(), [] { return detail::op::Synchronize{"elapsed_ms"}; },
      [&] { return stop.impl()->elapsed_ms_since(*start.impl()); });
  detail::event_reached(*start.impl());
  detail::event_reached(*stop.impl());
  return ms;
}

}  // namespace devctx
