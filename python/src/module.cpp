// SPDX-License-Identifier: Apache-2.0
// python/src/module.cpp - the devctx extension module (devctx._devctx): contexts, device and host
// arrays with the DLPack protocol, copies, fills, synchronize, devctx::Error as devctx.Error, and
// the kernels of kernels.hpp. It converts between Python and devctx, and checks only what that
// conversion needs (each argument's type and whether its value fits: "arguments" below); every
// other rule (sizes, devices, DLPack checks, stream order) is devctx's own, and so are those errors.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <devctx/devctx.hpp>
#include <devctx/dlpack.hpp>
#include <devctx/interop.hpp>

#include "kernels.hpp"
#include "runtime_kernels.hpp"
#include "streams.hpp"

namespace nb = nanobind;

namespace {

using devctx::Errc;

[[noreturn]] void fail(Errc code, const std::string& message) { throw devctx::Error(code, message); }

// ---- arguments ----------------------------------------------------------------------------------------
// Every entry point converts its arguments here, before anything is enqueued, and says which
// argument was wrong and why. The rule (docs/interop.md): an argument of the wrong Python type is
// a TypeError; one of the right type whose value devctx cannot take is devctx.ArgumentError, a
// devctx.Error (code 'invalid_argument') that is also a ValueError, or devctx.ArgumentOverflowError
// (also an OverflowError) when the number does not fit the C type or element type it is for. What
// devctx itself checks once the arguments are converted (sizes, devices, memory) stays a plain
// devctx.Error with its own code.

/// A value devctx cannot take (the Python binding's check): ArgumentError, or ArgumentOverflowError
/// when `overflow` is set.
struct ArgumentError : devctx::Error {
  bool overflow;
  ArgumentError(bool overflows, const std::string& message)
      : devctx::Error(Errc::invalid_argument, message), overflow(overflows) {}
};

[[noreturn]] void bad_value(const std::string& message) { throw ArgumentError(false, message); }
[[noreturn]] void too_large(const std::string& message) { throw ArgumentError(true, message); }
[[noreturn]] void bad_type(const std::string& message) { throw nb::type_error(message.c_str()); }

std::string py_type_name(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

/// repr(h), shortened; never throws (repr itself may fail, as for an int of more than 4300 digits).
std::string short_repr(nb::handle h) {
  PyObject* r = PyObject_Repr(h.ptr());
  if (r == nullptr) {
    PyErr_Clear();
    return "<" + py_type_name(h) + ": repr() failed>";
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(r, &size);
  std::string out = text != nullptr ? std::string(text, std::size_t(size)) : "<" + py_type_name(h) + ": repr() failed>";
  if (text == nullptr) PyErr_Clear();
  Py_DECREF(r);
  if (out.size() > 48) out = out.substr(0, 40) + "...(" + std::to_string(out.size()) + " characters)";
  return out;
}

bool is_numpy_bool(nb::handle h) {
  const std::string_view name = Py_TYPE(h.ptr())->tp_name;
  return name == "numpy.bool" || name == "numpy.bool_";
}

/// An integer argument: a Python int or anything with __index__ (bool, NumPy integers), never a
/// float or str; TypeError naming `what` otherwise.
nb::object as_int(nb::handle h, const std::string& what, const std::string& expected) {
  if (PyIndex_Check(h.ptr())) {
    if (PyObject* i = PyNumber_Index(h.ptr())) return nb::steal(i);
    PyErr_Clear();
  }
  bad_type(what + " must be " + expected + ", not " + py_type_name(h) + " (" + short_repr(h) + ")");
}

/// A Python int's value when it fits a long long.
std::optional<long long> to_long_long(nb::handle i) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return std::nullopt;
  }
  return v;
}

/// A Python int's value when it fits an unsigned long long (not negative).
std::optional<unsigned long long> to_unsigned_long_long(nb::handle i) {
  const unsigned long long v = PyLong_AsUnsignedLongLong(i.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return v;
}

/// A str argument; TypeError naming `what` otherwise (None only where `none_ok`).
std::optional<std::string> as_str(nb::handle h, const std::string& what, bool none_ok) {
  if (none_ok && h.is_none()) return std::nullopt;
  if (!PyUnicode_Check(h.ptr()))
    bad_type(what + " must be a str" + (none_ok ? " or None" : "") + ", not " + py_type_name(h) + " (" + short_repr(h) +
             ")");
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
  if (text == nullptr) {
    PyErr_Clear();
    bad_value(what + " is not valid text (it cannot be encoded as UTF-8)");
  }
  return std::string(text, std::size_t(size));
}

/// A True/False argument: bool or numpy.bool_; TypeError naming `what` otherwise.
bool as_bool(nb::handle h, const std::string& what) {
  if (PyBool_Check(h.ptr())) return h.ptr() == Py_True;
  if (is_numpy_bool(h)) {
    const int v = PyObject_IsTrue(h.ptr());
    if (v >= 0) return v == 1;
    PyErr_Clear();
  }
  bad_type(what + " must be True or False, not " + py_type_name(h) + " (" + short_repr(h) + ")");
}

// ---- element types ----------------------------------------------------------------------------------

enum class DType { boolean, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64 };

constexpr const char* dtype_names[] = {"bool",   "int8",   "int16",  "int32",   "int64",  "uint8",
                                       "uint16", "uint32", "uint64", "float32", "float64"};

const char* name_of(DType t) { return dtype_names[int(t)]; }

DType dtype_named(nb::handle dtype, const char* function) {
  const std::string name = *as_str(dtype, std::string(function) + ": dtype", false);
  for (int i = 0; i < int(std::size(dtype_names)); ++i)
    if (name == dtype_names[i]) return DType(i);
  bad_value(std::string(function) + ": unknown dtype '" + name +
            "': devctx arrays hold bool, int8..int64, uint8..uint64, float32 or float64");
}

/// Calls f.template operator()<T>() with T the C++ type of `t`.
template <class F>
decltype(auto) visit(DType t, F&& f) {
  switch (t) {
    case DType::boolean: return f.template operator()<bool>();
    case DType::int8: return f.template operator()<std::int8_t>();
    case DType::int16: return f.template operator()<std::int16_t>();
    case DType::int32: return f.template operator()<std::int32_t>();
    case DType::int64: return f.template operator()<std::int64_t>();
    case DType::uint8: return f.template operator()<std::uint8_t>();
    case DType::uint16: return f.template operator()<std::uint16_t>();
    case DType::uint32: return f.template operator()<std::uint32_t>();
    case DType::uint64: return f.template operator()<std::uint64_t>();
    case DType::float32: return f.template operator()<float>();
    case DType::float64: break;
  }
  return f.template operator()<double>();
}

DType dtype_of(const DLDataType& t) {
  for (int i = 0; i < int(std::size(dtype_names)); ++i) {
    const DLDataType d = visit(DType(i), []<class T>() { return devctx::dlpack::data_type<T>(); });
    if (d.code == t.code && d.bits == t.bits && d.lanes == t.lanes) return DType(i);
  }
  fail(Errc::invalid_argument, "from_dlpack: devctx has no element type for DLPack's " + devctx::dlpack::type_name(t) +
                                   " (it takes bool, int8..int64, uint8..uint64, float32 and float64)");
}

std::size_t size_of(DType t) {
  return visit(t, []<class T>() { return sizeof(T); });
}

/// The element type of a buffer-protocol format ("<f", "d", "q", ...) of `itemsize` bytes.
std::optional<DType> dtype_of_format(std::string_view format, Py_ssize_t itemsize) {
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || format[0] == '<')) format.remove_prefix(1);
  if (format.size() != 1) return std::nullopt;  // big-endian, structured or vector formats
  const char c = format[0];
  const std::string_view signed_codes = "bhilqn", unsigned_codes = "BHILQN";
  if (c == '?' && itemsize == 1) return DType::boolean;
  if (c == 'f' && itemsize == 4) return DType::float32;
  if (c == 'd' && itemsize == 8) return DType::float64;
  const bool is_signed = signed_codes.find(c) != std::string_view::npos;
  if (!is_signed && unsigned_codes.find(c) == std::string_view::npos) return std::nullopt;
  switch (itemsize) {
    case 1: return is_signed ? DType::int8 : DType::uint8;
    case 2: return is_signed ? DType::int16 : DType::uint16;
    case 4: return is_signed ? DType::int32 : DType::uint32;
    case 8: return is_signed ? DType::int64 : DType::uint64;
    default: return std::nullopt;
  }
}

// ---- contexts and arrays ----------------------------------------------------------------------------

struct Context {
  std::shared_ptr<devctx::DeviceContext> ctx;
};

/// A devctx array: the memory's untyped owner (the devctx::Buffer of a DeviceBuffer, HostBuffer or
/// DeviceView, kept alive by every exported DLPack tensor too), its element type and its
/// row-major shape. Typed slices are made from the Buffer, which checks kind, size and alignment.
struct Array {
  std::shared_ptr<devctx::DeviceContext> ctx;
  std::shared_ptr<devctx::Buffer> buffer;
  void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  bool readonly = false;

  template <class T>
  [[nodiscard]] devctx::DeviceSlice<T> device_slice() const {
    return devctx::DeviceSlice<T>(*buffer);
  }
  template <class T>
  [[nodiscard]] devctx::HostSlice<T> host_slice() const {
    return devctx::HostSlice<T>(*buffer);
  }
  /// Takes over a typed buffer's or view's memory.
  template <class Typed>
  void own(Typed&& typed) {
    count = typed.size();
    buffer = std::make_shared<devctx::Buffer>(typed.take_buffer());
    data = buffer->data();
  }
};
struct DeviceArray : Array {};
struct HostArray : Array {};

/// At most as many dimensions as NumPy and CuPy allow.
constexpr std::size_t kMaxDims = 64;

/// A shape argument: an int or an iterable of ints (not str or bytes), each in [0, 2^63), whose
/// product (stored in `count`) is below 2^63 too.
std::vector<std::int64_t> parse_shape(nb::handle shape, std::size_t& count, const char* function) {
  const std::string fn = function;
  // An int (or 0-d integer: NumPy scalars and 0-d arrays) or an iterable of them; a NumPy array
  // of shape (n,) is both iterable and has __index__, and is a sequence here.
  std::vector<nb::object> items;
  const auto not_a_shape = [&] {
    bad_type(fn + ": shape must be an int or a sequence of ints, not " + py_type_name(shape) + " (" +
             short_repr(shape) + ")");
  };
  if (PyUnicode_Check(shape.ptr()) || PyBytes_Check(shape.ptr()) || PyByteArray_Check(shape.ptr())) not_a_shape();
  PyObject* it = PyLong_Check(shape.ptr()) ? nullptr : PyObject_GetIter(shape.ptr());
  const bool single = it == nullptr;
  if (single) {
    PyErr_Clear();
    if (!PyIndex_Check(shape.ptr())) not_a_shape();
    items.push_back(nb::borrow(shape));
  } else {
    nb::object iterator = nb::steal(it);
    while (PyObject* item = PyIter_Next(it)) {
      items.push_back(nb::steal(item));
      if (items.size() > kMaxDims) bad_value(fn + ": shape has more than " + std::to_string(kMaxDims) + " dimensions");
    }
    if (PyErr_Occurred()) throw nb::python_error();  // the iterable itself failed
  }
  std::vector<std::int64_t> dims;
  count = 1;
  bool overflowed = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string what = fn + ": shape" + (single ? "" : "[" + std::to_string(i) + "]");
    const nb::object value = as_int(items[i], what, "an int");
    const auto v = to_long_long(value);
    if (PyObject_RichCompareBool(value.ptr(), nb::int_(0).ptr(), Py_LT) == 1)
      bad_value(what + " = " + short_repr(value) + " is negative");
    if (!v) too_large(what + " = " + short_repr(value) + " does not fit in 64 bits (a dimension is below 2^63)");
    dims.push_back(std::int64_t(*v));
    const std::size_t d = std::size_t(*v);
    if (d != 0 && count > std::size_t(std::numeric_limits<std::int64_t>::max()) / d)
      overflowed = true;
    else
      count *= d;
  }
  const bool empty = std::find(dims.begin(), dims.end(), 0) != dims.end();
  if (overflowed && !empty) too_large(fn + ": shape " + short_repr(shape) + " holds more than 2^63 - 1 elements");
  if (empty) count = 0;
  return dims;
}

DeviceArray make_device_array(const Context& c, nb::handle shape, nb::handle dtype) {
  DeviceArray a;
  a.ctx = c.ctx;
  a.shape = parse_shape(shape, a.count, "empty");
  a.dtype = dtype_named(dtype, "empty");
  visit(a.dtype, [&]<class T>() { a.own(c.ctx->enqueue_create_buffer<T>(a.count)); });
  return a;
}

HostArray make_host_array(const Context& c, nb::handle shape, nb::handle dtype) {
  HostArray a;
  a.ctx = c.ctx;
  a.shape = parse_shape(shape, a.count, "empty_host");
  a.dtype = dtype_named(dtype, "empty_host");
  visit(a.dtype, [&]<class T>() { a.own(c.ctx->enqueue_create_host_buffer<T>(a.count)); });
  return a;
}

Context open_context(nb::handle device_name) {
  const std::optional<std::string> device = as_str(device_name, "Context: device", true);
  if (!device) return Context{std::make_shared<devctx::DeviceContext>()};
  const devctx::DeviceId id = devctx::parse_device(*device);  // devctx's own device names
  return Context{std::make_shared<devctx::DeviceContext>(id.api, id.id)};
}

/// The `ctx` argument of a module-level function.
const Context& context_arg(nb::handle obj, const char* function) {
  if (!nb::isinstance<Context>(obj))
    bad_type(std::string(function) + ": ctx must be a devctx Context, not " + py_type_name(obj));
  return nb::cast<const Context&>(obj);
}

// ---- copies and fills ---------------------------------------------------------------------------------

/// A Python object's host memory through the buffer protocol, held for one call.
struct HostObject {
  Py_buffer view{};
  bool held = false;
  HostObject() = default;
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;
  ~HostObject() {
    if (held) PyBuffer_Release(&view);
  }
};

/// One side of a copy: a devctx array or host memory.
struct Side {
  const Array* array = nullptr;
  bool host_array = false;
  HostObject object;
  DType dtype = DType::float32;
  std::size_t count = 0;
};

void describe(Side& side, nb::handle obj, bool writable, const char* role) {
  if (nb::isinstance<DeviceArray>(obj) || nb::isinstance<HostArray>(obj)) {
    side.host_array = nb::isinstance<HostArray>(obj);
    side.array = side.host_array ? static_cast<const Array*>(&nb::cast<const HostArray&>(obj))
                                 : static_cast<const Array*>(&nb::cast<const DeviceArray&>(obj));
    side.dtype = side.array->dtype;
    side.count = side.array->count;
    if (writable && side.array->readonly)
      fail(Errc::invalid_argument,
           std::string("copy: the ") + role + " is a read-only array (imported read-only through DLPack)");
    return;
  }
  const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), &side.object.view, flags) != 0) {
    PyErr_Clear();
    throw nb::type_error((std::string("copy: the ") + role + " must be a devctx DeviceArray or HostArray, or C-contiguous" +
                          (writable ? ", writable" : "") + " host memory (a NumPy array, array.array, bytearray, ...)")
                             .c_str());
  }
  side.object.held = true;
  const auto dtype = dtype_of_format(side.object.view.format ? side.object.view.format : "B", side.object.view.itemsize);
  if (!dtype)
    fail(Errc::invalid_argument, std::string("copy: the ") + role + "'s element format '" +
                                     (side.object.view.format ? side.object.view.format : "B") +
                                     "' is not one devctx holds (bool, int8..int64, uint8..uint64, float32, float64)");
  side.dtype = *dtype;
  side.count = std::size_t(side.object.view.len / side.object.view.itemsize);
}

/// Calls f with the devctx endpoint of `side` for element type T.
template <class T, class F>
void with_endpoint(const Side& side, F&& f) {
  if (side.array == nullptr)
    f(std::span<T>(static_cast<T*>(side.object.view.buf), side.count));
  else if (side.host_array)
    f(side.array->host_slice<T>());
  else
    f(side.array->device_slice<T>());
}

/// Context.copy: on `stream` (stream_argument's kinds: None is the context's own stream).
void copy(nb::handle self, nb::handle dst, nb::handle src, nb::handle stream) {
  Side d, s;
  describe(d, dst, true, "destination");
  describe(s, src, false, "source");
  if (d.dtype != s.dtype)
    fail(Errc::invalid_argument, std::string("copy: the destination holds ") + name_of(d.dtype) + " and the source " +
                                     name_of(s.dtype) + "; element types must match");
  nb::object keep;  // the stream's owner, alive until the copy is enqueued
  devctx::StreamRef on = stream_argument(stream, self, keep, "copy");
  nb::gil_scoped_release unlocked;  // a copy from or to host memory waits for the device
  visit(d.dtype, [&]<class T>() {
    with_endpoint<T>(d, [&](auto dst_endpoint) {
      with_endpoint<T>(s, [&](auto src_endpoint) { on.enqueue_copy(dst_endpoint, src_endpoint); });
    });
  });
}

/// A fill value as element type T, converted as NumPy users expect and refused otherwise (nothing
/// is enqueued): bool takes True/False (or NumPy's) and the integers 0 and 1; integer types take
/// integers (int, bool, NumPy integers: never a float or str, which NumPy would truncate or
/// parse) within the type's range; float types take real numbers (int, float, NumPy scalars),
/// finite ones within the type's range (inf and nan are fine).
template <class T>
T fill_value(nb::handle value, DType dtype) {
  const std::string what = std::string("fill: value ") + short_repr(value);
  const std::string into = std::string(name_of(dtype)[0] == 'i' ? " into an " : " into a ") + name_of(dtype) + " array";
  if constexpr (std::is_same_v<T, bool>) {
    if (PyBool_Check(value.ptr()) || is_numpy_bool(value)) return as_bool(value, "fill: value");
    const nb::object i = as_int(value, "fill: value for a bool array", "True, False, 0 or 1");
    const auto v = to_long_long(i);
    if (!v || (*v != 0 && *v != 1)) too_large(what + " does not fit bool (True, False, 0 or 1)");
    return *v == 1;
  } else if constexpr (std::is_integral_v<T>) {
    const nb::object i = is_numpy_bool(value) ? nb::int_(int(as_bool(value, "fill: value")))
                                              : as_int(value, "fill: value" + into, "an integer");
    const auto range = [&] {
      return what + " does not fit " + name_of(dtype) + " (" + std::to_string(std::numeric_limits<T>::min()) + ".." +
             std::to_string(std::numeric_limits<T>::max()) + ")";
    };
    if constexpr (std::is_signed_v<T>) {
      const auto v = to_long_long(i);
      if (!v || *v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max()) too_large(range());
      return T(*v);
    } else {
      const auto v = to_unsigned_long_long(i);
      if (!v || *v > std::numeric_limits<T>::max()) too_large(range());
      return T(*v);
    }
  } else {
    PyNumberMethods* number = Py_TYPE(value.ptr())->tp_as_number;
    const bool real = PyFloat_Check(value.ptr()) || PyIndex_Check(value.ptr()) || is_numpy_bool(value) ||
                      (number != nullptr && number->nb_float != nullptr && !PyComplex_Check(value.ptr()) &&
                       std::string_view(Py_TYPE(value.ptr())->tp_name).find("complex") == std::string_view::npos);
    if (!real)
      bad_type("fill: value" + into + " must be a real number, not " + py_type_name(value) + " (" + short_repr(value) + ")");
    const double d = PyFloat_AsDouble(value.ptr());
    if (d == -1.0 && PyErr_Occurred()) {
      const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError) != 0;
      PyErr_Clear();
      if (overflow) too_large(what + " does not fit " + name_of(dtype) + " (it is beyond a double's range)");
      bad_type("fill: value" + into + " must be a real number; converting " + short_repr(value) + " to float failed");
    }
    if (std::isfinite(d) && !std::isfinite(static_cast<T>(d)))
      too_large(what + " does not fit float32 (its largest finite value is 3.4028235e+38)");
    return static_cast<T>(d);
  }
}

/// Context.fill: on `stream` (as copy).
void fill(nb::handle self, nb::handle dst, nb::handle value, nb::handle stream) {
  const bool host = nb::isinstance<HostArray>(dst);
  if (!host && !nb::isinstance<DeviceArray>(dst))
    bad_type("fill: dst must be a devctx DeviceArray or HostArray, not " + py_type_name(dst));
  const Array& a = host ? static_cast<const Array&>(nb::cast<const HostArray&>(dst))
                        : static_cast<const Array&>(nb::cast<const DeviceArray&>(dst));
  visit(a.dtype, [&]<class T>() {
    const T v = fill_value<T>(value, a.dtype);
    if (a.readonly) fail(Errc::invalid_argument, "fill: the destination is a read-only array");
    nb::object keep;  // the stream's owner, alive until the fill is enqueued
    devctx::StreamRef on = stream_argument(stream, self, keep, "fill");
    if (host)
      on.enqueue_memset(a.host_slice<T>(), v);
    else
      on.enqueue_memset(a.device_slice<T>(), v);
  });
}

// ---- DLPack -------------------------------------------------------------------------------------------

constexpr const char* kCapsule = "dltensor";
constexpr const char* kCapsuleUsed = "used_dltensor";
constexpr const char* kCapsuleVersioned = "dltensor_versioned";
constexpr const char* kCapsuleVersionedUsed = "used_dltensor_versioned";

/// A capsule nobody consumed frees its tensor (the DLPack Python protocol's rule).
template <class Managed>
void capsule_destructor(PyObject* capsule) {
  const bool versioned = std::is_same_v<Managed, devctx::dlpack::ManagedTensorVersioned>;
  if (PyCapsule_IsValid(capsule, versioned ? kCapsuleVersionedUsed : kCapsuleUsed)) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* tensor = static_cast<Managed*>(PyCapsule_GetPointer(capsule, versioned ? kCapsuleVersioned : kCapsule));
  if (tensor == nullptr)
    PyErr_Clear();
  else if (tensor->deleter != nullptr)
    tensor->deleter(tensor);
  PyErr_Restore(type, value, traceback);
}

/// The device type and id an array exports as.
std::pair<int, int> dlpack_device(const Array& a, bool host) {
  const devctx::Backend& backend = a.ctx->backend();
  if (host) return {int(backend.dlpack_host_device_type), 0};
  return {int(backend.dlpack_device_type), backend.has_device_memory ? a.ctx->id() : 0};
}

nb::tuple dlpack_device_of(const Array& a, bool host) {
  const auto [type, id] = dlpack_device(a, host);
  return nb::make_tuple(type, id);
}

/// __dlpack__: makes the consumer's stream (or the host) wait for devctx's work on the context,
/// then exports a tensor that shares the array's memory and keeps it alive.
nb::object export_dlpack(const Array& a, bool host, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                         nb::handle copy_requested) {
  // Every argument is converted before anything happens (no wait, no synchronize).
  if (!copy_requested.is_none() && as_bool(copy_requested, "__dlpack__: copy (None, True or False)"))
    throw nb::buffer_error("__dlpack__: devctx exports its memory without copying (copy=True is not supported)");
  bool versioned = false;
  if (!max_version.is_none()) {
    const std::string what = "__dlpack__: max_version";
    const bool pair = PyTuple_Check(max_version.ptr()) || PyList_Check(max_version.ptr());
    if (!pair || PySequence_Size(max_version.ptr()) != 2)
      bad_type(what + " must be None or a (major, minor) tuple of ints, not " + py_type_name(max_version) + " (" +
               short_repr(max_version) + ")");
    const nb::object major = as_int(nb::borrow(PySequence_Fast_GET_ITEM(max_version.ptr(), 0)), what + "[0]", "an int");
    const nb::object minor = as_int(nb::borrow(PySequence_Fast_GET_ITEM(max_version.ptr(), 1)), what + "[1]", "an int");
    const nb::object zero = nb::int_(0);
    if (PyObject_RichCompareBool(major.ptr(), zero.ptr(), Py_LT) == 1 ||
        PyObject_RichCompareBool(minor.ptr(), zero.ptr(), Py_LT) == 1)
      bad_value(what + " " + short_repr(max_version) + " is not a version (its numbers are not negative)");
    versioned = PyObject_RichCompareBool(major.ptr(), nb::int_(1).ptr(), Py_GE) == 1;
  }
  const auto own = dlpack_device(a, host);
  bool as_cpu = false;
  if (!dl_device.is_none()) {
    const std::string what = "__dlpack__: dl_device";
    const bool pair = PyTuple_Check(dl_device.ptr()) || PyList_Check(dl_device.ptr());
    if (!pair || PySequence_Size(dl_device.ptr()) != 2)
      bad_type(what + " must be None or a (device_type, device_id) tuple of ints, not " + py_type_name(dl_device) +
               " (" + short_repr(dl_device) + ")");
    const auto type = to_long_long(as_int(nb::borrow(PySequence_Fast_GET_ITEM(dl_device.ptr(), 0)), what + "[0]", "an int"));
    const auto id = to_long_long(as_int(nb::borrow(PySequence_Fast_GET_ITEM(dl_device.ptr(), 1)), what + "[1]", "an int"));
    const bool host_memory = own.first == kDLCPU || own.first == kDLCUDAHost;
    if (type == kDLCPU && id == 0 && host_memory)
      as_cpu = true;
    else if (type != own.first || id != own.second)
      throw nb::buffer_error("__dlpack__: the array cannot be exported to that device without a copy");
  }
  // The consumer's stream: None is CUDA's legacy default stream (1), -1 asks for no ordering;
  // any other value is a stream's handle (an address: up to 2^64 - 1).
  std::optional<std::uint64_t> handle;  // none: no ordering
  if (!stream.is_none()) {
    const std::string what = "__dlpack__: stream";
    const nb::object s = as_int(stream, what, "None or an int (-1, 1, 2 or a CUDA stream's handle)");
    const auto v = to_long_long(s);
    if (v && *v == -1) {
    } else if (v && *v < -1) {
      bad_value(what + " " + short_repr(s) + " is not a stream (it takes -1, 1, 2 or a stream's handle)");
    } else if (const auto u = to_unsigned_long_long(s)) {
      handle = *u;
    } else {
      if (PyObject_RichCompareBool(s.ptr(), nb::int_(0).ptr(), Py_LT) == 1)
        bad_value(what + " " + short_repr(s) + " is not a stream (it takes -1, 1, 2 or a stream's handle)");
      too_large(what + " " + short_repr(s) + " does not fit in 64 bits, so it is no stream's handle");
    }
  } else {
    handle = 1;
  }
  const bool cuda_device_memory = own.first == kDLCUDA;
  if (cuda_device_memory) {
    if (handle == std::uint64_t{0})
      bad_value(
          "__dlpack__: stream 0 is ambiguous for CUDA; pass 1 (legacy default stream), 2 (per-thread default "
          "stream) or a stream's handle");
  } else if (!stream.is_none() && handle && !a.ctx->backend().has_device_memory) {
    bad_value("__dlpack__: a CPU array takes no stream (stream must be None or -1)");
  }
  if (cuda_device_memory) {
    if (handle) {
      nb::gil_scoped_release unlocked;
      devctx::Stream consumer = devctx::wrap_cuda_stream(*a.ctx, reinterpret_cast<devctx::CudaStreamHandle>(
                                                                     std::uintptr_t(*handle)));
      consumer.enqueue_wait_for(a.ctx->record_event());
    }
  } else {
    // Host memory: the consumer reads it at once, so devctx's work on it must have finished.
    nb::gil_scoped_release unlocked;
    a.ctx->synchronize();
  }
  std::shared_ptr<devctx::Buffer> owner = a.buffer;
  return visit(a.dtype, [&]<class T>() -> nb::object {
    auto make = [&](auto view) -> nb::object {
      PyObject* capsule = nullptr;
      if (versioned) {
        auto* t = devctx::to_dlpack_versioned(view, owner, a.shape);
        if (as_cpu) t->dl_tensor.device = DLDevice{kDLCPU, 0};
        capsule = PyCapsule_New(t, kCapsuleVersioned, &capsule_destructor<devctx::dlpack::ManagedTensorVersioned>);
        if (capsule == nullptr) t->deleter(t);
      } else {
        auto* t = devctx::to_dlpack(view, owner, a.shape);
        if (as_cpu) t->dl_tensor.device = DLDevice{kDLCPU, 0};
        capsule = PyCapsule_New(t, kCapsule, &capsule_destructor<DLManagedTensor>);
        if (capsule == nullptr) t->deleter(t);
      }
      if (capsule == nullptr) throw nb::python_error();
      return nb::steal(capsule);
    };
    if (host) return a.readonly ? make(a.host_slice<const T>()) : make(a.host_slice<T>());
    return a.readonly ? make(a.device_slice<const T>()) : make(a.device_slice<T>());
  });
}

/// The producer's tensor, wrapped so that its deleter runs holding the GIL: devctx runs a view's
/// release on whichever thread next synchronizes, and a Python producer's deleter needs the GIL.
template <class Managed>
struct GilTensor {
  static Managed* wrap(Managed* original) {
    auto* w = new Managed(*original);
    w->manager_ctx = original;
    w->deleter = &deleter;
    return w;
  }
  static void deleter(Managed* self) noexcept {
    auto* original = static_cast<Managed*>(self->manager_ctx);
    delete self;
    if (original->deleter == nullptr || !nb::is_alive()) return;  // the interpreter is gone: leak
    nb::gil_scoped_acquire locked;
    original->deleter(original);
  }
};

template <class Managed>
DeviceArray import_tensor(const Context& c, Managed* original) {
  DeviceArray a;
  a.ctx = c.ctx;
  const DLTensor& t = original->dl_tensor;
  a.dtype = dtype_of(t.dtype);
  if (t.ndim > 0 && t.shape != nullptr) a.shape.assign(t.shape, t.shape + t.ndim);
  if constexpr (std::is_same_v<Managed, devctx::dlpack::ManagedTensorVersioned>)
    a.readonly = (original->flags & devctx::dlpack::flag_read_only) != 0;
  Managed* wrapped = GilTensor<Managed>::wrap(original);
  try {
    visit(a.dtype, [&]<class T>() {
      if (a.readonly)
        a.own(devctx::from_dlpack<const T>(*c.ctx, wrapped));
      else
        a.own(devctx::from_dlpack<T>(*c.ctx, wrapped));
    });
  } catch (...) {
    delete wrapped;  // not taken over: the capsule still owns the producer's tensor
    throw;
  }
  return a;
}

DeviceArray from_capsule(nb::handle ctx, nb::handle capsule) {
  const Context& c = context_arg(ctx, "_from_capsule");
  PyObject* p = capsule.ptr();
  if (PyCapsule_IsValid(p, kCapsuleVersioned)) {
    auto* t = static_cast<devctx::dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(p, kCapsuleVersioned));
    DeviceArray a = import_tensor(c, t);
    PyCapsule_SetName(p, kCapsuleVersionedUsed);
    return a;
  }
  if (PyCapsule_IsValid(p, kCapsule)) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(p, kCapsule));
    DeviceArray a = import_tensor(c, t);
    PyCapsule_SetName(p, kCapsuleUsed);
    return a;
  }
  throw nb::type_error(
      "from_dlpack: expected a DLPack capsule ('dltensor' or 'dltensor_versioned') that no one has consumed yet");
}

// ---- kernels ------------------------------------------------------------------------------------------

const DeviceArray& float_array(nb::handle obj, const char* function, const char* role) {
  if (!nb::isinstance<DeviceArray>(obj))
    bad_type(std::string(function) + ": " + role + " must be a devctx DeviceArray, not " + py_type_name(obj));
  const auto& a = nb::cast<const DeviceArray&>(obj);
  if (a.dtype != DType::float32 && a.dtype != DType::float64)
    fail(Errc::invalid_argument,
         std::string(function) + ": " + role + " holds " + name_of(a.dtype) + "; it takes float32 or float64 arrays");
  return a;
}

void check_same_type(const char* function, const Array& a, const Array& out) {
  if (a.dtype != out.dtype)
    fail(Errc::invalid_argument, std::string(function) + ": the inputs hold " + name_of(a.dtype) + " but out holds " +
                                     name_of(out.dtype) + "; element types must match");
  if (out.readonly) fail(Errc::invalid_argument, std::string(function) + ": out is a read-only array");
}

void vector_add(nb::handle ctx, nb::handle a_obj, nb::handle b_obj, nb::handle out_obj) {
  const Context& c = context_arg(ctx, "vector_add");
  const auto& a = float_array(a_obj, "vector_add", "a");
  const auto& b = float_array(b_obj, "vector_add", "b");
  const auto& out = float_array(out_obj, "vector_add", "out");
  check_same_type("vector_add", a, out);
  check_same_type("vector_add", b, out);
  if (a.dtype == DType::float32)
    devctx_python::vector_add<float>(*c.ctx, a.device_slice<const float>(), b.device_slice<const float>(),
                                     out.device_slice<float>());
  else
    devctx_python::vector_add<double>(*c.ctx, a.device_slice<const double>(), b.device_slice<const double>(),
                                      out.device_slice<double>());
}

/// devctx.softmax, and with `threads_per_row` (not None) the test suite's devctx._devctx._softmax
/// that forces a launch shape: (threads per row, block size), as devctx_python::SoftmaxShape.
void softmax(nb::handle ctx, nb::handle x_obj, nb::handle out_obj, nb::handle shape_obj) {
  const Context& c = context_arg(ctx, "softmax");
  const auto& x = float_array(x_obj, "softmax", "x");
  const auto& out = float_array(out_obj, "softmax", "out");
  check_same_type("softmax", x, out);
  if (x.shape != out.shape || x.shape.empty() || x.shape.size() > 2)
    fail(Errc::size_mismatch, "softmax: x and out must have the same shape, (cols,) or (rows, cols)");
  const std::size_t rows = x.shape.size() == 2 ? std::size_t(x.shape[0]) : 1;
  const std::size_t cols = std::size_t(x.shape.back());
  devctx_python::SoftmaxShape shape = devctx_python::softmax_shape(c.ctx->api(), rows, cols);
  if (!shape_obj.is_none()) {
    std::size_t count = 0;
    const auto dims = parse_shape(shape_obj, count, "_softmax: launch shape");
    if (dims.size() != 2 || dims[0] > 1024 || dims[1] > 1024)
      bad_value("_softmax: the launch shape is (threads per row, block size), each up to 1024");
    shape = {unsigned(dims[0]), unsigned(dims[1])};
  }
  if (x.dtype == DType::float32)
    devctx_python::softmax<float>(*c.ctx, x.device_slice<const float>(), out.device_slice<float>(), rows, cols, shape);
  else
    devctx_python::softmax<double>(*c.ctx, x.device_slice<const double>(), out.device_slice<double>(), rows, cols, shape);
}

// ---- what streams.cpp and runtime_kernels.cpp take from here ----------------------------------------

PyTypeObject* context_type = nullptr;       // devctx.Context
PyTypeObject* device_array_type = nullptr;  // devctx.DeviceArray

/// A devctx.Context's DeviceContext, or null: the exact type (every Context devctx makes) without
/// a type lookup or a reference count, for the launch verbs' every call.
devctx::DeviceContext* context_ptr(nb::handle h) {
  if (Py_TYPE(h.ptr()) == context_type && nb::inst_ready(h)) return nb::inst_ptr<Context>(h)->ctx.get();
  return nb::isinstance<Context>(h) ? nb::cast<const Context&>(h).ctx.get() : nullptr;
}

// ---- errors -------------------------------------------------------------------------------------------

PyObject* error_type = nullptr;
PyObject* argument_error_type = nullptr;
PyObject* argument_overflow_type = nullptr;

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const devctx::Error& e) {
    PyObject* type = error_type;
    if (const auto* argument = dynamic_cast<const ArgumentError*>(&e))
      type = argument->overflow ? argument_overflow_type : argument_error_type;
    PyObject* instance = PyObject_CallFunction(type, "s", e.what());
    if (instance == nullptr) return;  // the call set its own exception
    PyObject* code = PyUnicode_FromString(devctx::to_string(e.code()));
    if (code != nullptr) PyObject_SetAttrString(instance, "code", code);
    Py_XDECREF(code);
    PyErr_SetObject(type, instance);
    Py_DECREF(instance);
  }
}

template <class A>
nb::object array_repr(const A& a, const char* kind) {
  std::string shape;
  for (const auto d : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  if (a.shape.size() == 1) shape += ",";
  return nb::str((std::string(kind) + "(shape=(" + shape + "), dtype=" + name_of(a.dtype) +
                  ", device=" + devctx::to_string(a.ctx->api()) + ":" + std::to_string(a.ctx->id()) +
                  (a.readonly ? ", readonly" : "") + ")")
                     .c_str());
}

template <class A>
void bind_array(nb::class_<A>& cls, bool host, const char* kind) {
  cls.def_prop_ro("shape",
                  [](const A& a) {
                    nb::list dims;
                    for (const auto d : a.shape) dims.append(d);
                    return nb::tuple(dims);
                  })
      .def_prop_ro("dtype", [](const A& a) { return std::string(name_of(a.dtype)); })
      .def_prop_ro("size", [](const A& a) { return a.count; })
      .def_prop_ro("nbytes", [](const A& a) { return a.count * size_of(a.dtype); })
      .def_prop_ro("readonly", [](const A& a) { return a.readonly; })
      .def_prop_ro("data_ptr", [](const A& a) { return reinterpret_cast<std::uintptr_t>(a.data); })
      .def_prop_ro("context", [](const A& a) { return Context{a.ctx}; })
      .def(
          "reshape",
          [](const A& a, nb::handle shape) {
            A r = a;
            std::size_t count = 0;
            r.shape = parse_shape(shape, count, "reshape");
            if (count != a.count)
              fail(Errc::size_mismatch, "reshape: the new shape holds " + std::to_string(count) +
                                            " elements, the array " + std::to_string(a.count));
            return r;
          },
          nb::arg("shape").none())
      .def(
          "__dlpack__",
          [host](const A& a, nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy_requested) {
            return export_dlpack(a, host, stream, max_version, dl_device, copy_requested);
          },
          nb::kw_only(), nb::arg("stream").none() = nb::none(), nb::arg("max_version").none() = nb::none(),
          nb::arg("dl_device").none() = nb::none(), nb::arg("copy").none() = nb::none())
      .def("__dlpack_device__", [host](const A& a) { return dlpack_device_of(a, host); })
      .def("__len__",
           [](const A& a) {
             if (a.shape.empty()) throw nb::type_error("len() of a 0-d array");
             return std::size_t(a.shape[0]);
           })
      .def("__repr__", [kind](const A& a) { return array_repr(a, kind); });
}

}  // namespace

NB_MODULE(_devctx, m) {
  m.attr("__version__") = DEVCTX_VERSION_STRING;  // include/devctx/version.hpp, as pyproject.toml's
  m.doc() = "devctx from Python: contexts, device and host arrays with DLPack, copies, and devctx kernels";

  error_type = PyErr_NewExceptionWithDoc("devctx.Error",
                                         "Every devctx failure. str(e) is devctx's message; e.code names the kind "
                                         "('size_mismatch', 'wrong_device', ...), as devctx::Errc does in C++.",
                                         PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(error_type);
  // The arguments' rule (the top of this file): a value devctx cannot take is both a devctx.Error
  // and the ValueError (OverflowError) a NumPy user catches.
  nb::object argument_bases = nb::make_tuple(nb::handle(error_type), nb::handle(PyExc_ValueError));
  argument_error_type = PyErr_NewExceptionWithDoc(
      "devctx.ArgumentError",
      "An argument of the right type whose value devctx cannot take (a negative dimension, an unknown "
      "dtype, stream 0, ...): a devctx.Error (code 'invalid_argument') and a ValueError.",
      argument_bases.ptr(), nullptr);
  m.attr("ArgumentError") = nb::handle(argument_error_type);
  nb::object overflow_bases = nb::make_tuple(nb::handle(argument_error_type), nb::handle(PyExc_OverflowError));
  argument_overflow_type = PyErr_NewExceptionWithDoc(
      "devctx.ArgumentOverflowError",
      "A number that does not fit the C type or element type it is for (fill(int8_array, 300), a "
      "dimension of 2**63 or more, a stream handle past 64 bits): a devctx.ArgumentError and an OverflowError.",
      overflow_bases.ptr(), nullptr);
  m.attr("ArgumentOverflowError") = nb::handle(argument_overflow_type);
  nb::register_exception_translator(&translate);

  nb::class_<Context> context_class(m, "Context", "A device and its default stream (devctx::DeviceContext).");
  context_type = reinterpret_cast<PyTypeObject*>(context_class.ptr());
  context_class
      .def(nb::new_([](nb::handle device) { return open_context(device); }), nb::arg("device").none() = nb::none(),
           "None: DEVCTX_DEVICE if set, else the first CUDA GPU, else the CPU; or 'cpu', 'cuda', 'cuda:N'.")
      .def_prop_ro("api", [](const Context& c) { return std::string(devctx::to_string(c.ctx->api())); })
      .def_prop_ro("id", [](const Context& c) { return c.ctx->id(); })
      .def_prop_ro("name", [](const Context& c) { return c.ctx->name(); })
      .def_prop_ro(
          "cuda_stream", [](const Context& c) { return reinterpret_cast<std::uintptr_t>(devctx::cuda_stream(*c.ctx)); },
          "The context's cudaStream_t as an integer; devctx.Error (not_available) on the CPU backend.")
      .def(
          "synchronize",
          [](const Context& c) {
            nb::gil_scoped_release unlocked;
            c.ctx->synchronize();
          },
          "Blocks until all work enqueued on the context has finished; raises devctx.Error for a failure in it.")
      .def("empty", &make_device_array, nb::arg("shape").none(), nb::arg("dtype").none() = "float32",
           "A DeviceArray (contents uninitialised), allocated in stream order.")
      .def("empty_host", &make_host_array, nb::arg("shape").none(), nb::arg("dtype").none() = "float32",
           "A HostArray: host memory fit for fast transfers (page-locked on CUDA). Fill it after synchronize().")
      .def("copy", &copy, nb::arg("dst").none(), nb::arg("src").none(), nb::kw_only(),
           nb::arg("stream").none() = nb::none(),
           "Copies src into dst (DeviceArray, HostArray or C-contiguous host memory); sizes and dtypes must match. "
           "stream: as Context.enqueue_function's (None: this context's stream).")
      .def("fill", &fill, nb::arg("dst").none(), nb::arg("value").none(), nb::kw_only(),
           nb::arg("stream").none() = nb::none(),
           "Sets every element of a DeviceArray or HostArray to value. stream: as Context.enqueue_function's (None: "
           "this context's stream).")
      .def("__repr__", [](const Context& c) {
        return "Context('" + std::string(devctx::to_string(c.ctx->api())) + ":" + std::to_string(c.ctx->id()) + "', " +
               c.ctx->name() + ")";
      });

  nb::class_<DeviceArray> device_array(m, "DeviceArray",
                                       "Device memory of a context: a devctx DeviceBuffer or DeviceView.");
  device_array_type = reinterpret_cast<PyTypeObject*>(device_array.ptr());
  bind_array(device_array, false, "DeviceArray");
  nb::class_<HostArray> host_array(m, "HostArray", "Host memory fit for fast transfers: a devctx HostBuffer.");
  bind_array(host_array, true, "HostArray");

  m.def(
      "count",
      [](nb::handle api_name) {
        const std::string api = *as_str(api_name, "count: api", false);
        const auto all = devctx::backends();
        std::string names;  // "'cpu' and 'cuda'"
        for (std::size_t i = 0; i < all.size(); ++i) {
          if (all[i]->name == api) return all[i]->device_count();
          names += (i == 0 ? "'" : i + 1 == all.size() ? " and '" : ", '") + std::string(all[i]->name) + "'";
        }
        bad_value("count('" + api + "'): the backends are " + names);
      },
      nb::arg("api").none(), "The number of devices of a backend ('cpu' or 'cuda'); 0 when none or not built.");
  m.def("vector_add", &vector_add, nb::arg("ctx").none(), nb::arg("a").none(), nb::arg("b").none(),
        nb::arg("out").none(), "out = a + b, elementwise, as a devctx kernel on ctx's stream (float32 or float64).");
  m.def(
      "softmax", [](nb::handle ctx, nb::handle x, nb::handle out) { softmax(ctx, x, out, nb::none()); },
      nb::arg("ctx").none(), nb::arg("x").none(), nb::arg("out").none(),
      "Row-wise softmax of x (shape (rows, cols) or (cols,)) into out, as a devctx kernel on ctx's stream.");
  m.def("_softmax", &softmax, nb::arg("ctx").none(), nb::arg("x").none(), nb::arg("out").none(),
        nb::arg("launch_shape").none(),
        "softmax with a forced launch shape (threads per row, block size): for the tests, which check every "
        "shape the GPU uses on the CPU backend too.");
  m.def("_from_capsule", &from_capsule, nb::arg("ctx").none(), nb::arg("capsule").none(),
        "A DeviceArray over a DLPack capsule's tensor (consumes the capsule).");
  bind_streams(m, {&context_ptr,
                   [](nb::handle h) { return nb::isinstance<Context>(h) ? nb::cast<const Context&>(h).ctx : nullptr; }});
  bind_runtime_kernels(m, {&context_ptr, [](nb::handle h, RuntimeArray& out) {
                             const DeviceArray* a = nullptr;
                             if (Py_TYPE(h.ptr()) == device_array_type && nb::inst_ready(h))
                               a = nb::inst_ptr<DeviceArray>(h);
                             else if (nb::isinstance<DeviceArray>(h))
                               a = &nb::cast<const DeviceArray&>(h);
                             else
                               return false;
                             out = {a->buffer.get(), int(a->dtype), a->readonly};
                             return true;
                           }});
}
