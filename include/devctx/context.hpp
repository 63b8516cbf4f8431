// SPDX-License-Identifier: Apache-2.0
// devctx/context.hpp - DeviceContext: one device and its default stream.
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>

#include <devctx/backend.hpp>
#include <devctx/device_info.hpp>
#include <devctx/error.hpp>
#include <devctx/event.hpp>
#include <devctx/stream.hpp>
#include <devctx/trace.hpp>

namespace devctx {

class DeviceContext;
class Module;          // devctx/module.hpp
class DeviceFunction;  // devctx/module.hpp
namespace detail {
class ContextImpl;
[[nodiscard]] Stream context_wrap_native_stream(DeviceContext& context, void* native);
}  // namespace detail

/// How a DeviceContext is set up beyond its device: `DeviceContext ctx{Api::cpu, 0, {.check = true}};`
struct ContextOptions {
  /// Checking mode (docs/checking.md): the CPU backend runs this context's kernels with every
  /// span and shared-array index bounds-checked, races, barrier divergence and reads of device
  /// memory never written reported (blocks of a launch then run one after another), and the host
  /// may not touch a HostBuffer while a copy into or out of it may still run. Each finding is a
  /// devctx::Error with code Errc::check_failed. Unset: the DEVCTX_CHECK environment variable
  /// decides (a flag: 1/0, true/false, yes/no, on/off; unset means off), and it does nothing on a
  /// CUDA device. `true` on a CUDA device throws Error(not_available): there compute-sanitizer
  /// checks kernels. `false` turns checking off whatever DEVCTX_CHECK says.
  std::optional<bool> check;
};

/// Ordinary host memory registered with a device by DeviceContext::register_host_memory: it
/// stays registered (page-locked, on CUDA) until this handle is dropped or reset(). Move-only;
/// an empty handle (default-constructed or moved-from) registers nothing. It keeps its device
/// open, so it may outlive the context that made it; it must not outlive the memory.
class HostRegistration {
 public:
  HostRegistration() noexcept = default;
  HostRegistration(HostRegistration&& other) noexcept
      : record_(std::move(other.record_)),
        data_(std::exchange(other.data_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  HostRegistration& operator=(HostRegistration&& other) noexcept {
    if (this != &other) {
      record_ = std::move(other.record_);  // unregisters what this handle held first
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  ~HostRegistration() = default;

  /// Unregisters the memory now. A copy of it running on another thread finishes first (this
  /// waits for it); copies enqueued afterwards take the staged path. The handle is then empty.
  void reset() noexcept {
    record_.reset();
    data_ = nullptr;
    bytes_ = 0;
  }
  [[nodiscard]] explicit operator bool() const noexcept { return record_ != nullptr; }
  /// The registered range: its first byte and its length (null and 0 when empty).
  [[nodiscard]] const void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return bytes_; }

 private:
  friend class DeviceContext;
  HostRegistration(detail::HostRegistrationPtr record, const void* data, std::size_t bytes) noexcept
      : record_(std::move(record)), data_(data), bytes_(bytes) {}
  detail::HostRegistrationPtr record_;
  const void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A device and its default stream; every enqueue verb of StreamRef works on it.
///
/// `DeviceContext ctx;` picks the default device: DEVCTX_DEVICE from the environment if set
/// ("cpu", "cuda", "cuda:N"), else device 0 of the backend with a device and the highest
/// Backend::default_preference (the first CUDA GPU when devctx was built with CUDA and one is
/// present), else the CPU. `DeviceContext ctx{api, 1};` picks device 1 of a backend (an Api
/// value, or devctx::backend("cuda").api by name); it throws devctx::Error (not_available) when
/// that backend or device does not exist, (invalid_argument) for an Api value naming none. Either form takes
/// ContextOptions last; a bad value of DEVCTX_CHECK throws Error(invalid_argument).
/// Move-only. Dropping it never blocks: enqueued work still runs, memory is freed after it.
class DeviceContext : public StreamRef {
 public:
  DeviceContext();
  explicit DeviceContext(ContextOptions options);
  explicit DeviceContext(Api api, int id = 0, ContextOptions options = {});
  DeviceContext(DeviceContext&& other) noexcept;
  DeviceContext& operator=(DeviceContext&& other) noexcept;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  ~DeviceContext();

  /// Number of devices of a backend: 0 when none is present or the backend was not built. For
  /// Api::cpu: the number of CPU devices the CPU is split into (set_cpu_device_count, else
  /// DEVCTX_CPU_DEVICES, else 1); throws Error(invalid_argument) for a malformed DEVCTX_CPU_DEVICES.
  [[nodiscard]] static int count(Api api);

  /// Splits the CPU into `count` devices (1 to 64), each with its own id and its share of the
  /// worker threads (DEVCTX_CPU_THREADS or one per hardware thread, divided by `count`, at
  /// least one each), so that multi-device code and collectives (devctx/comm.hpp) run anywhere.
  /// Overrides DEVCTX_CPU_DEVICES; 0 lets the variable decide again. Devices already open keep
  /// their workers; contexts made afterwards see the new count. Throws Error(invalid_argument)
  /// outside 0..64.
  static void set_cpu_device_count(int count);

  /// Whether this device reads and writes `other`'s memory directly: always for itself and
  /// between CPU devices; between GPUs when CUDA reports peer access (enqueue_copy then enables
  /// it on first use and copies directly; without it, copies between the two are staged by
  /// the driver through host memory). False between a GPU and a CPU device.
  [[nodiscard]] bool can_access_peer(const DeviceContext& other) const;

  [[nodiscard]] Api api() const;
  /// The description of this context's backend (devctx/backend.hpp): has_device_memory, name...
  [[nodiscard]] const Backend& backend() const;
  [[nodiscard]] int id() const;
  /// "NVIDIA H200", "CPU (16 threads): AMD EPYC ...".
  [[nodiscard]] std::string name() const;
  [[nodiscard]] const DeviceInfo& info() const;
  /// True when checking mode is on for this context (ContextOptions::check, DEVCTX_CHECK).
  [[nodiscard]] bool checking() const;

  /// Kernel `name` of `module` compiled for this device (docs/runtime-kernels.md): the source
  /// through the host compiler into a shared object on the CPU, through nvcc into a cubin on
  /// CUDA, with the signature read back from the compiled kernel. `name` is a kernel of the
  /// source, a template one with its arguments ("saxpy<float>"). Blocks while it compiles (or
  /// loads the result from the on-disk cache: DEVCTX_CACHE_DIR, else $XDG_CACHE_HOME/devctx/kernels,
  /// else ~/.cache/devctx/kernels; DEVCTX_CACHE=0 turns it off); the result says which. Throws
  /// CompileError (Errc::compile_failed) with the compiler's log when the source does not
  /// compile, Error(not_available) when the compiler is missing, Error(invalid_argument) for a
  /// malformed name. Thread-safe.
  [[nodiscard]] DeviceFunction compile_function(const Module& module, std::string_view name);

  /// A new stream on this device. Work on it may overlap with the default stream's.
  [[nodiscard]] Stream create_stream();
  /// A new stream with a priority from stream_priority_range() (Mojo's create_stream(priority=)):
  /// on CUDA cudaStreamCreateWithPriority, whose blocks the GPU schedules before those of
  /// lower-priority streams when both wait; `range.greatest` is the highest. Throws
  /// devctx::Error (invalid_argument) naming the range for a value outside it. The CPU backend
  /// has one priority (0), so portable code asks for range.greatest or range.least.
  [[nodiscard]] Stream create_stream(int priority);
  /// The priorities create_stream(int) accepts on this device.
  [[nodiscard]] StreamPriorityRange stream_priority_range() const;

  /// Registers long-lived ordinary host memory (a std::vector, std::array or std::span, or any
  /// contiguous range of an lvalue; a std::span temporary is fine) for fast copies with this
  /// context's device, until the returned handle is dropped or reset().
  ///
  /// On CUDA the memory is page-locked (cudaHostRegister), which costs time once (milliseconds
  /// per hundred MiB) and takes the memory out of what the system may page out; every
  /// enqueue_copy on this device whose host side lies inside the range is then one direct DMA
  /// instead of going through staging. Such copies still return only once the host memory has
  /// been read or written, as for all ordinary host memory. Register memory you copy often;
  /// large one-off copies are fast without it. On the CPU backend registration changes nothing
  /// (copies are memcpy whatever the memory is), but the range is checked and remembered alike.
  ///
  /// Throws devctx::Error (invalid_argument) and registers nothing for an empty range, a null
  /// data pointer, a range that overlaps one registered on this device and not yet
  /// unregistered, and on CUDA for memory that is device memory or already page-locked (a
  /// HostBuffer; memory registered by other code, on another device, or sharing a memory page
  /// with a registration); (out_of_memory) when the system refuses to page-lock that much.
  template <class R>
    requires std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
             (std::is_lvalue_reference_v<R> || std::ranges::borrowed_range<R>)
  [[nodiscard]] HostRegistration register_host_memory(R&& memory) {
    using T = std::remove_reference_t<std::ranges::range_reference_t<R>>;
    const void* data = std::ranges::data(memory);
    const auto count = std::size_t(std::ranges::size(memory));
    auto record = detail::queue_register_host_memory(detail::Access::queue(*this), data, count, sizeof(T));
    return HostRegistration(std::move(record), data, count * sizeof(T));
  }

  /// Blocks until everything enqueued on this context has finished: its default stream and
  /// every stream created from it. Throws devctx::Error for the first failure among that work
  /// (and forgets it: the context stays usable). Work of other contexts, including work left
  /// running by contexts and streams already dropped, is not waited for: see
  /// synchronize_device().
  void synchronize();

  /// Blocks until all work on this context's device has finished: every stream of every
  /// DeviceContext of that device in this process, including work left running by contexts and
  /// streams that were dropped (on CUDA this is cudaDeviceSynchronize, which also waits for work
  /// that other libraries enqueued on the device). Then reports as synchronize() does: the
  /// first failure among this context's own work. Failures of another context's work stay
  /// with that context; those of work whose context or stream was dropped are never reported.
  void synchronize_device();

  /// Where this device's time went (devctx/trace.hpp, docs/observability.md): bytes and device
  /// time of each kind of transfer, kernel time, round trips, the share of device time in
  /// transfers and the advice that applies, over the operations recorded on this context's
  /// device (by every context and stream of it) since recording started. Print it with
  /// devctx::trace::to_string. Never waits for work: synchronize first to count all of it.
  /// Throws Error(not_available) when nothing is recorded: set DEVCTX_REPORT=1 or
  /// DEVCTX_TRACE_FILE, or call devctx::trace::start() before the work.
  [[nodiscard]] trace::Report report() const;

  // ---- Mojo's host verbs (execution_time, memory_info) ------------------------------------------

  /// Free and total bytes of the device's memory now (Mojo's get_memory_info). Never blocks for
  /// enqueued work; allocations still pending in stream order may not be counted yet.
  [[nodiscard]] MemoryInfo memory_info() const;

  /// Device time, in total over `iterations` calls, of the work `f` enqueues on this context
  /// (its default stream): records an event, calls `f(*this)` (or `f()`) `iterations` times,
  /// records another, and returns the time between them (elapsed_ms) once the work has
  /// finished. Blocks. Work `f` enqueues on other streams is not timed. Throws devctx::Error
  /// (invalid_argument) for 0 iterations (and calls nothing), the first failure of the timed
  /// work as synchronize() does, and lets an exception from `f` propagate (the work enqueued so
  /// far still runs). Event resolution: about 0.5 us on CUDA, the steady clock on the CPU.
  template <class F>
  [[nodiscard]] std::chrono::nanoseconds execution_time(F&& f, std::size_t iterations = 1) {
    if (iterations == 0)
      throw Error(Errc::invalid_argument, "execution_time: iterations is 0; time at least one call of the function");
    const Event start = record_event();
    for (std::size_t i = 0; i < iterations; ++i) {
      if constexpr (std::is_invocable_v<F&, DeviceContext&>)
        f(*this);
      else
        f();
    }
    const Event stop = record_event();
    stop.synchronize();
    return std::chrono::nanoseconds(std::llround(elapsed_ms(start, stop) * 1e6));
  }

 private:
  friend Stream detail::context_wrap_native_stream(DeviceContext& context, void* native);
  [[nodiscard]] detail::ContextImpl& impl() const;
  std::unique_ptr<detail::ContextImpl> impl_;
};

}  // namespace devctx
