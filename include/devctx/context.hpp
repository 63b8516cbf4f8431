// devctx/context.hpp - DeviceContext: one device and its default stream.
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include <devctx/device_info.hpp>
#include <devctx/error.hpp>
#include <devctx/event.hpp>
#include <devctx/stream.hpp>

namespace devctx {

class DeviceContext;
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

/// A device and its default stream; every enqueue verb of StreamRef works on it.
///
/// `DeviceContext ctx;` picks the default device: DEVCTX_DEVICE from the environment if set
/// ("cpu", "cuda", "cuda:N"), else the first CUDA GPU when devctx was built with CUDA and one
/// is present, else the CPU. `DeviceContext ctx{Api::cuda, 1};` picks one; it throws
/// devctx::Error (not_available) when that backend or device does not exist. Either form takes
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

  /// Number of devices of a backend: 0 when none is present or the backend was not built.
  [[nodiscard]] static int count(Api api);

  [[nodiscard]] Api api() const;
  [[nodiscard]] int id() const;
  /// "NVIDIA H200", "CPU (16 threads): AMD EPYC ...".
  [[nodiscard]] std::string name() const;
  [[nodiscard]] const DeviceInfo& info() const;
  /// True when checking mode is on for this context (ContextOptions::check, DEVCTX_CHECK).
  [[nodiscard]] bool checking() const;

  /// A new stream on this device. Work on it may overlap with the default stream's.
  [[nodiscard]] Stream create_stream();

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
      if constexpr (std::is_invocable_v<F&, DeviceContext&>) f(*this);
      else f();
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
