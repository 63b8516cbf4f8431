// SPDX-License-Identifier: Apache-2.0
// src/runtime/launch.cpp - enqueue_function(DeviceFunction, ...): each KernelArg checked against
// the compiled signature (kind, element type, const-ness, device, scalar range), packed on the
// wire, and handed to queue_launch as a compiled-in kernel's launch is.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#define DEVCTX_RUNTIME_ENTRY_OK 1
#include <devctx/detail/runtime/entry.hpp>
#include <devctx/module.hpp>

#include "core/allocation.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"
#include "runtime/runtime_function.hpp"

namespace devctx::detail {

namespace {

const char* type_word(ScalarType t) {
  switch (t) {
    case ScalarType::boolean: return "bool";
    case ScalarType::int8: return "int8";
    case ScalarType::int16: return "int16";
    case ScalarType::int32: return "int32";
    case ScalarType::int64: return "int64";
    case ScalarType::uint8: return "uint8";
    case ScalarType::uint16: return "uint16";
    case ScalarType::uint32: return "uint32";
    case ScalarType::uint64: return "uint64";
    case ScalarType::float32: return "float32";
    case ScalarType::float64: return "float64";
    case ScalarType::other: break;
  }
  return "a struct";
}

bool is_signed_int(ScalarType t) { return t >= ScalarType::int8 && t <= ScalarType::int64; }
bool is_unsigned_int(ScalarType t) { return t >= ScalarType::uint8 && t <= ScalarType::uint64; }
bool is_float(ScalarType t) { return t == ScalarType::float32 || t == ScalarType::float64; }

/// The range of an integer ScalarType, as long double (exact for 64-bit bounds).
void int_range(ScalarType t, long double& lo, long double& hi) {
  switch (t) {
    case ScalarType::int8: lo = -128.0L, hi = 127.0L; break;
    case ScalarType::int16: lo = -32768.0L, hi = 32767.0L; break;
    case ScalarType::int32: lo = -2147483648.0L, hi = 2147483647.0L; break;
    case ScalarType::int64: lo = -9223372036854775808.0L, hi = 9223372036854775807.0L; break;
    case ScalarType::uint8: lo = 0, hi = 255.0L; break;
    case ScalarType::uint16: lo = 0, hi = 65535.0L; break;
    case ScalarType::uint32: lo = 0, hi = 4294967295.0L; break;
    default: lo = 0, hi = 18446744073709551615.0L; break;
  }
}

struct Checker {
  const DeviceFunction& function;
  const RuntimeFunction& f;
  DeviceImpl& device;

  [[noreturn]] void bad(Errc code, std::size_t i, const std::string& why) const {
    fail(code, launch_operation(f.name), " on ", device.label(), ": parameter ", i + 1, " (", f.params[i].cpp_type,
         "): ", why, "; nothing was enqueued");
  }

  std::string arg_text(const KernelArg& a) const {
    if (a.kind() == KernelArg::Kind::scalar) return concat("a scalar of type ", a.type_name());
    return concat(a.read_only() ? "a read-only " : "a ", a.what(), " of ", a.type_name());
  }

  void memory(std::size_t i, const KernelArg& a, unsigned char* wire) const {
    const KernelParam& p = f.params[i];
    if (a.kind() != KernelArg::Kind::memory)
      bad(Errc::invalid_argument, i,
          concat("takes device memory (a DeviceBuffer, slice, view or devctx::span), but got ", arg_text(a)));
    const bool same = p.type == ScalarType::other
                          ? a.type() == ScalarType::other && a.element_bytes() == p.element_bytes &&
                                p.cpp_type.find(a.type_name()) != std::string::npos
                          : a.type() == p.type && a.element_bytes() == p.element_bytes;
    if (!same)
      bad(Errc::invalid_argument, i,
          concat("the argument is ", arg_text(a), " (", type_word(a.type()), ", ", a.element_bytes(),
                 " bytes each) but the kernel's elements are ", type_word(p.type), " (", p.element_bytes,
                 " bytes each): the element types must match exactly"));
    if (a.read_only() && !p.read_only)
      bad(Errc::invalid_argument, i,
          concat("the argument is ", arg_text(a),
                 ", which is read-only, but the kernel may write through this parameter: "
                 "take span<const T> (or const T*) in the kernel, or pass a non-const buffer"));
    if (a.allocation() != nullptr && &a.allocation()->device() != &device)
      bad(Errc::wrong_device, i,
          concat("the argument is ", arg_text(a), " of ", a.allocation()->device().label(),
                 "; a kernel can only use memory of the device it runs on"));
    void* data = a.data();
    const std::size_t count = a.count();
    std::memcpy(wire, &data, sizeof data);
    std::memcpy(wire + sizeof(void*), &count, sizeof count);
  }

  template <class T>
  static void put(unsigned char* wire, T v) {
    std::memcpy(wire, &v, sizeof v);
  }

  void scalar(std::size_t i, const KernelArg& a, unsigned char* wire) const {
    const KernelParam& p = f.params[i];
    if (a.kind() != KernelArg::Kind::scalar)
      bad(Errc::invalid_argument, i, concat("takes a value, but got ", arg_text(a)));
    if (p.type == ScalarType::other)
      bad(Errc::invalid_argument, i,
          "a struct parameter cannot be passed through enqueue_function(DeviceFunction, ...) "
          "yet: pass its fields as separate parameters");
    const ScalarType from = a.type();
    const KernelArg::Value v = a.value();
    if (p.type == ScalarType::boolean) {
      if (from != ScalarType::boolean) bad(Errc::invalid_argument, i, concat("takes a bool, but got ", arg_text(a)));
      return put<bool>(wire, v.u != 0);
    }
    if (from == ScalarType::boolean)
      bad(Errc::invalid_argument, i, concat("takes ", type_word(p.type), ", but got a bool"));
    if (is_signed_int(p.type) || is_unsigned_int(p.type)) {
      if (is_float(from))
        bad(Errc::invalid_argument, i,
            concat("takes an integer (", type_word(p.type), "), but got ", arg_text(a), ": convert it explicitly"));
      const long double x = is_signed_int(from) ? static_cast<long double>(v.i) : static_cast<long double>(v.u);
      long double lo = 0, hi = 0;
      int_range(p.type, lo, hi);
      if (x < lo || x > hi)
        bad(Errc::invalid_argument, i,
            concat("the value ", is_signed_int(from) ? std::to_string(v.i) : std::to_string(v.u), " (", arg_text(a),
                   ") does not fit in ", type_word(p.type)));
      switch (p.type) {
        case ScalarType::int8: return put<std::int8_t>(wire, static_cast<std::int8_t>(v.i));
        case ScalarType::int16: return put<std::int16_t>(wire, static_cast<std::int16_t>(v.i));
        case ScalarType::int32: return put<std::int32_t>(wire, static_cast<std::int32_t>(v.i));
        case ScalarType::int64: return put<std::int64_t>(wire, static_cast<std::int64_t>(v.i));
        case ScalarType::uint8: return put<std::uint8_t>(wire, static_cast<std::uint8_t>(v.u));
        case ScalarType::uint16: return put<std::uint16_t>(wire, static_cast<std::uint16_t>(v.u));
        case ScalarType::uint32: return put<std::uint32_t>(wire, static_cast<std::uint32_t>(v.u));
        default: return put<std::uint64_t>(wire, static_cast<std::uint64_t>(v.u));
      }
    }
    // A floating-point parameter: from a floating value (finite ones must fit), or from an
    // integer that the type holds exactly.
    double d = 0;
    if (is_float(from)) {
      d = v.f;
      if (p.type == ScalarType::float32 && std::isfinite(d) && std::fabs(d) > double(std::numeric_limits<float>::max()))
        bad(Errc::invalid_argument, i, concat("the value ", d, " does not fit in float32"));
    } else {
      const long double x = is_signed_int(from) ? static_cast<long double>(v.i) : static_cast<long double>(v.u);
      const long double exact = p.type == ScalarType::float32 ? 16777216.0L : 9007199254740992.0L;
      if (x > exact || x < -exact)
        bad(Errc::invalid_argument, i,
            concat("the integer ", is_signed_int(from) ? std::to_string(v.i) : std::to_string(v.u),
                   " is not exactly representable in ", type_word(p.type), ": convert it explicitly"));
      d = static_cast<double>(x);
    }
    if (p.type == ScalarType::float32) return put<float>(wire, static_cast<float>(d));
    put<double>(wire, d);
  }
};

/// `n` values of T on the stack when they fit in N, else on the heap (a launch of a kernel with
/// few parameters allocates nothing).
template <class T, std::size_t N>
class SmallArray {
 public:
  SmallArray(std::size_t n, T init) {
    if (n > N) {
      heap_.assign(n, init);
      data_ = heap_.data();
    } else {
      for (std::size_t i = 0; i < n; ++i) local_[i] = init;
    }
  }
  SmallArray(const SmallArray&) = delete;
  SmallArray& operator=(const SmallArray&) = delete;
  T* data() noexcept { return data_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }

 private:
  T local_[N];
  std::vector<T> heap_;
  T* data_ = local_;
};

}  // namespace

void queue_launch_runtime(QueueImpl& queue, const DeviceFunction& function, const LaunchConfig& config,
                          const KernelArg* args, std::size_t count) {
  const RuntimeFunction& f = function.impl();
  DeviceImpl& device = queue.device();
  if (&device != f.device.get())
    fail(Errc::wrong_device, launch_operation(f.name), " on ", device.label(), ": the kernel was compiled for ",
         f.device->label(), "; compile it for this device with its context's compile_function");
  if (count != f.params.size())
    fail(Errc::invalid_argument, launch_operation(f.name), " on ", device.label(), ": the kernel takes ",
         f.params.size(), " arguments ", function.signature(), " but ", count, " were given; nothing was enqueued");

  const Checker check{function, f, device};
  // The wire, and the arrays KernelLaunch points at (one entry per argument, plus one).
  SmallArray<std::max_align_t, 16> storage(f.wire_size / sizeof(std::max_align_t) + 1, std::max_align_t{});
  auto* wire = reinterpret_cast<unsigned char*>(storage.data());
  SmallArray<Allocation*, 17> buffers(count + 1, nullptr);
  SmallArray<const void*, 17> spans(count + 1, nullptr);
  SmallArray<std::size_t, 17> span_bytes(count + 1, 0);
  bool any_span = false;
  for (std::size_t i = 0; i < count; ++i) {
    const KernelParam& p = f.params[i];
    unsigned char* at = wire + f.wire_offsets[i];
    if (p.kind == KernelParam::Kind::scalar) {
      check.scalar(i, args[i], at);
    } else {
      check.memory(i, args[i], at);
      buffers[i] = args[i].allocation();
      if (buffers[i] == nullptr && args[i].count() > 0) {
        spans[i] = args[i].data();
        span_bytes[i] = args[i].count() * args[i].element_bytes();
        any_span = true;
      }
    }
  }

  KernelLaunch l;
  l.name = f.launch_name;
  l.config = config;
  l.block_level = f.block_level;
  l.param_count = f.params.size();
  l.buffers = buffers.data();
  l.buffer_count = count;
  if (any_span) {
    l.spans = spans.data();
    l.span_bytes = span_bytes.data();
  }
  void* cuda_args[2] = {nullptr, nullptr};
  // The ArgPack the compiled-in runners read (CPU), built by the kernel's own code from the wire.
  SmallArray<std::max_align_t, 16> pack(f.cpu != nullptr ? f.cpu->pack_size / sizeof(std::max_align_t) + 1 : 0,
                                        std::max_align_t{});
  if (f.cpu != nullptr) {
    if (f.cpu->pack_align > alignof(std::max_align_t))
      fail(Errc::backend_error, launch_operation(f.name), ": the kernel's arguments need alignment ", f.cpu->pack_align);
    f.cpu->pack(pack.data(), wire);
    l.args = pack.data();
    l.args_size = f.cpu->pack_size;
    l.args_align = f.cpu->pack_align;
    l.cpu = &f.cpu->runners;
    l.fission_off = f.fission_off;
  } else {
    // CUDA: the entry takes the wire as its one parameter.
    l.args = wire;
    l.args_size = f.wire_size == 0 ? 1 : f.wire_size;
    l.args_align = f.wire_align;
    cuda_args[0] = wire;
    l.param_count = 1;  // cuda_args' length (a graph copies that many)
    l.cuda_function = f.cuda_kernel;
    l.cuda_args = cuda_args;
  }
  queue_launch(queue, l);
}

}  // namespace devctx::detail
