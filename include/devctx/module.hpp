// SPDX-License-Identifier: Apache-2.0
// devctx/module.hpp - kernels given as source text at run time (docs/runtime-kernels.md):
// Module (the source), DeviceContext::compile_function (compiled for one device, through an
// on-disk cache), DeviceFunction (the result, with the signature read back from the compiled
// kernel) and KernelArg (one launch argument, type-erased) for
// StreamRef::enqueue_function(function, config, args...).
//
//   devctx::Module module(R"(
//     #include <devctx/kernel.hpp>
//     template <class T>
//     DEVCTX_KERNEL void saxpy(T a, devctx::span<const T> x, devctx::span<T> y) {
//       const std::size_t i = devctx::global_idx().x;
//       if (i < y.size()) y[i] = a * x[i] + y[i];
//     })", "saxpy.cpp");
//   devctx::DeviceFunction saxpy = ctx.compile_function(module, "saxpy<float>");
//   ctx.enqueue_function(saxpy, {.grid_dim = blocks, .block_dim = 256}, 2.0f, x, y);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <devctx/error.hpp>
#include <devctx/stream.hpp>
#include <devctx/detail/runtime/signature.hpp>

namespace devctx {

/// A kernel source given at run time: an ordinary devctx kernel file (DEVCTX_KERNEL functions,
/// spans, DEVCTX_SHARED, barriers, warp operations, templates), its name (used in compiler
/// messages, which number lines as in `source`) and extra compiler options (-DNAME=VALUE, -O3,
/// ...; passed to the host compiler on the CPU and to nvcc on CUDA). Nothing is compiled until
/// DeviceContext::compile_function. A value type; copies share nothing.
class Module {
 public:
  /// Throws Error(invalid_argument) for an empty source or a name with characters other than
  /// letters, digits and `._-+/`.
  explicit Module(std::string source, std::string name = "runtime_kernel.cpp", std::vector<std::string> options = {});
  /// The file's contents, named by its file name. Throws Error(invalid_argument) when it cannot be read.
  [[nodiscard]] static Module from_file(const std::string& path, std::vector<std::string> options = {});

  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::vector<std::string>& options() const noexcept { return options_; }

 private:
  std::string source_;
  std::string name_;
  std::vector<std::string> options_;
};

/// How compile_function produced a DeviceFunction.
enum class LoadKind : unsigned char {
  compiled,  ///< the compiler ran (a cache miss, a damaged entry, or the cache is off or unusable)
  cached,    ///< loaded from the on-disk cache, the compiler did not run
};
[[nodiscard]] const char* to_string(LoadKind kind) noexcept;

/// One parameter of a compiled kernel, as its compiled signature states it.
struct KernelParam {
  enum class Kind : unsigned char {
    scalar,   ///< passed by value: an arithmetic type (`type`), or a struct (ScalarType::other)
    span,     ///< devctx::span<T>: `type` is T's
    pointer,  ///< T*: `type` is T's
  };
  Kind kind = Kind::scalar;
  ScalarType type = ScalarType::other;
  bool read_only = false;         ///< span<const T> or const T*
  std::size_t element_bytes = 0;  ///< sizeof the scalar, or of T
  std::string cpp_type;           ///< as the compiler spells it: "devctx::span<const float>"
};

/// A compile failure: Error with code Errc::compile_failed whose message shows the first errors
/// with the lines of the user's source they point at (numbered as in Module::source()), followed
/// by the compiler's whole log, which log() also returns.
class CompileError : public Error {
 public:
  CompileError(const std::string& message, std::string log)
      : Error(Errc::compile_failed, message), log_(std::move(log)) {}
  [[nodiscard]] const std::string& log() const noexcept { return log_; }

 private:
  std::string log_;
};

namespace detail {
struct RuntimeFunction;  // src/runtime/runtime_function.hpp
}

/// A kernel compiled at run time for one device (DeviceContext::compile_function). A shared
/// handle: copies refer to the same compiled code, which stays loaded until the process ends
/// (launches already enqueued and traces may refer to it). Launch it with
/// StreamRef::enqueue_function(function, config, args...) on any stream of its device.
class DeviceFunction {
 public:
  DeviceFunction() noexcept = default;
  /// The kernel's name as requested ("saxpy<float>"). Throws Error(invalid_handle) when empty.
  [[nodiscard]] const std::string& name() const;
  /// The parameters, read from the compiled kernel.
  [[nodiscard]] const std::vector<KernelParam>& params() const;
  /// "(float, devctx::span<const float>, devctx::span<float>)".
  [[nodiscard]] std::string signature() const;
  /// Whether compile_function compiled the kernel or loaded it from the cache, and how long that took.
  [[nodiscard]] LoadKind load_kind() const;
  [[nodiscard]] double load_ms() const;
  [[nodiscard]] explicit operator bool() const noexcept { return impl_ != nullptr; }
  /// Internal (src/runtime): the compiled kernel.
  [[nodiscard]] const detail::RuntimeFunction& impl() const;

 private:
  friend class DeviceContext;
  explicit DeviceFunction(std::shared_ptr<const detail::RuntimeFunction> impl) noexcept : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::RuntimeFunction> impl_;
};

/// One argument of a launch of a DeviceFunction, type-erased: a DeviceBuffer<T> (read-only when
/// const), a slice or DeviceView of one (read-only when of const T), a devctx::span<T>, or an
/// arithmetic scalar. Made implicitly by enqueue_function; it refers to the buffer it was made
/// from, so it must not outlive it. Host memory (HostBuffer, std::vector, raw pointers) does not
/// compile: copy it to a DeviceBuffer first.
class KernelArg {
 public:
  enum class Kind : unsigned char { memory, scalar };

  template <class A>
    requires(!std::is_same_v<std::remove_cvref_t<A>, KernelArg>)
  KernelArg(A&& arg) {  // NOLINT(google-explicit-constructor): made implicitly by enqueue_function
    using D = std::remove_cvref_t<A>;
    static_assert(!detail::is_host_memory<D>::value,
                  "a kernel argument is host memory (HostBuffer, std::vector, std::span, std::array or a raw "
                  "pointer): kernels cannot read host memory. Copy the data to a DeviceBuffer with "
                  "enqueue_copy first and pass the DeviceBuffer (or a slice of it)");
    if constexpr (detail::is_device_buffer<D>::value) {
      using T = std::remove_const_t<std::remove_reference_t<decltype(*arg.data())>>;
      set_memory<T>(detail::buffer_of(arg), const_cast<T*>(arg.data()), arg.size(),
                    std::is_const_v<std::remove_reference_t<A>>, "DeviceBuffer");
    } else if constexpr (detail::is_device_slice<D>::value) {
      using E = std::remove_pointer_t<decltype(arg.data())>;
      using T = std::remove_const_t<E>;
      set_memory<T>(detail::buffer_of(arg), const_cast<T*>(arg.data()), arg.size(), std::is_const_v<E>,
                    detail::is_device_view<D>::value ? "DeviceView" : "DeviceSlice");
    } else if constexpr (detail::is_devctx_span<D>::value) {
      using E = typename D::element_type;
      using T = std::remove_const_t<E>;
      set_memory<T>(nullptr, const_cast<T*>(arg.data()), arg.size(), std::is_const_v<E>, "devctx::span");
    } else {
      static_assert(std::is_arithmetic_v<D>,
                    "a runtime-compiled kernel's argument must be a DeviceBuffer, a slice or DeviceView of one, a "
                    "devctx::span or an arithmetic scalar");
      kind_ = Kind::scalar;
      type_ = detail::rt::ScalarOf<D>::value;
      element_bytes_ = sizeof(D);
      static constexpr std::string_view spelled = detail::type_name<D>();  // at compile time
      type_name_ = spelled;
      if constexpr (std::is_same_v<D, bool>)
        value_.u = arg ? 1 : 0;
      else if constexpr (std::is_floating_point_v<D>)
        value_.f = static_cast<double>(arg);
      else if constexpr (std::is_signed_v<D>)
        value_.i = static_cast<long long>(arg);
      else
        value_.u = static_cast<unsigned long long>(arg);
    }
  }

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  /// The element type (memory) or the scalar's type.
  [[nodiscard]] ScalarType type() const noexcept { return type_; }
  [[nodiscard]] std::size_t element_bytes() const noexcept { return element_bytes_; }
  /// "float", as the compiler spells the element or scalar type.
  [[nodiscard]] std::string_view type_name() const noexcept { return type_name_; }
  [[nodiscard]] bool read_only() const noexcept { return read_only_; }
  /// Memory: the first element, the element count, the buffer (null for a devctx::span) and what
  /// was passed ("DeviceBuffer", "DeviceSlice", "DeviceView", "devctx::span").
  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  [[nodiscard]] detail::Allocation* allocation() const noexcept { return allocation_; }
  [[nodiscard]] const char* what() const noexcept { return what_; }
  /// Scalars: the value, as given (signed integers in `i`, unsigned and bool in `u`, floating in `f`).
  union Value {
    long long i;
    unsigned long long u;
    double f;
  };
  [[nodiscard]] Value value() const noexcept { return value_; }

 private:
  template <class T>
  void set_memory(detail::Allocation* allocation, T* data, std::size_t count, bool read_only, const char* what) {
    kind_ = Kind::memory;
    type_ = detail::rt::ScalarOf<T>::value;
    element_bytes_ = sizeof(T);
    static constexpr std::string_view spelled = detail::type_name<T>();  // at compile time
    type_name_ = spelled;
    allocation_ = allocation;
    data_ = data;
    count_ = count;
    read_only_ = read_only;
    what_ = what;
  }

  Kind kind_ = Kind::scalar;
  ScalarType type_ = ScalarType::other;
  bool read_only_ = false;
  std::size_t element_bytes_ = 0;
  std::string_view type_name_;
  detail::Allocation* allocation_ = nullptr;
  void* data_ = nullptr;
  std::size_t count_ = 0;
  const char* what_ = "";
  Value value_{0};
};

namespace detail {
/// Checks `args` against the function's signature, packs them and enqueues the launch on `queue`
/// (src/runtime/launch.cpp); throws and enqueues nothing on a mismatch.
void queue_launch_runtime(QueueImpl& queue, const DeviceFunction& function, const LaunchConfig& config,
                          const KernelArg* args, std::size_t count);
}  // namespace detail

template <class... Args>
void StreamRef::enqueue_function(const DeviceFunction& function, const LaunchConfig& config, Args&&... args) {
  const KernelArg list[sizeof...(Args) + 1] = {KernelArg(std::forward<Args>(args))..., KernelArg(0)};
  detail::queue_launch_runtime(queue(), function, config, list, sizeof...(Args));
}

}  // namespace devctx
