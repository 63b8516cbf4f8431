// SPDX-License-Identifier: Apache-2.0
// python/src/runtime_kernels.cpp - kernels written by Python users (docs/runtime-kernels.md, Python):
// devctx.Module (a kernel source), Context.compile_function (a devctx.Function), and
// Context.enqueue_function / devctx.Launch, which convert Python arguments to devctx::KernelArg
// against the compiled signature: devctx arrays and __dlpack__ objects for spans and pointers,
// Python numbers for scalars (range-checked against the declared C++ type). Every check that
// devctx itself makes at launch (dtype, const, device, count) stays devctx's. A launch from Python
// should cost little more than a bound one: see "the two launch methods" below.
#include "runtime_kernels.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <Python.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <devctx/module.hpp>

#include "binding_errors.hpp"
#include "streams.hpp"

namespace nb = nanobind;

namespace {

using devctx::Errc;
using devctx::KernelArg;
using devctx::KernelParam;
using devctx::ScalarType;

RuntimeKernelHooks hooks_;
PyObject* compile_error_type = nullptr;
PyTypeObject* function_type_ = nullptr;  // devctx.Function, for the launch verbs' fast path

using RtArgumentError = BindingArgumentError;

[[noreturn]] void bad_type(const std::string& message) { throw nb::type_error(message.c_str()); }

std::string py_type(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

bool is_numpy_bool(PyObject* o) {
  const char* name = Py_TYPE(o)->tp_name;
  return std::strcmp(name, "numpy.bool_") == 0 || std::strcmp(name, "numpy.bool") == 0;
}

const char* const kind_names[] = {"scalar", "span", "pointer"};
const char* const scalar_names[] = {"other", "bool",   "int8",   "int16",  "int32",   "int64",
                                    "uint8", "uint16", "uint32", "uint64", "float32", "float64"};

/// Calls f.template operator()<T>() for a ScalarType other than `other`.
template <class F>
decltype(auto) visit(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::boolean: return f.template operator()<bool>();
    case ScalarType::int8: return f.template operator()<std::int8_t>();
    case ScalarType::int16: return f.template operator()<std::int16_t>();
    case ScalarType::int32: return f.template operator()<std::int32_t>();
    case ScalarType::int64: return f.template operator()<std::int64_t>();
    case ScalarType::uint8: return f.template operator()<std::uint8_t>();
    case ScalarType::uint16: return f.template operator()<std::uint16_t>();
    case ScalarType::uint32: return f.template operator()<std::uint32_t>();
    case ScalarType::uint64: return f.template operator()<std::uint64_t>();
    case ScalarType::float32: return f.template operator()<float>();
    case ScalarType::float64: return f.template operator()<double>();
    case ScalarType::other: break;
  }
  throw devctx::Error(Errc::invalid_argument, "unreachable: a struct type");
}

/// How messages name argument i (built only for a message: a launch that passes builds no string).
std::string where(const char* verb, const devctx::DeviceFunction& fn, std::size_t i) {
  return std::string(verb) + "(" + fn.name() + "): argument " + std::to_string(i) + " (" + fn.params()[i].cpp_type + ")";
}

/// A devctx.Function, or TypeError. The exact type (every Function devctx makes) without a type lookup.
const devctx::DeviceFunction& function_arg(nb::handle h, const char* what) {
  if (Py_TYPE(h.ptr()) == function_type_ && nb::inst_ready(h)) return *nb::inst_ptr<devctx::DeviceFunction>(h);
  if (nb::isinstance<devctx::DeviceFunction>(h)) return nb::cast<const devctx::DeviceFunction&>(h);
  bad_type(std::string(what) + ": function takes a devctx.Function (Context.compile_function), not " + py_type(h));
}

/// A Python number as the scalar parameter `p`: bools for bool, ints (anything with __index__, not
/// bool) for integers, ints and floats for floating types; the value must fit. Python's own int,
/// float and bool pass the type tests at their first step.
KernelArg scalar_arg(const char* verb, const devctx::DeviceFunction& fn, std::size_t i, const KernelParam& p, nb::handle v) {
  PyObject* const o = v.ptr();
  if (p.type == ScalarType::other)
    bad_type(where(verb, fn, i) + ": a struct parameter cannot be given from Python: use arithmetic parameters");
  const bool exact_number = PyFloat_CheckExact(o) || PyLong_CheckExact(o);
  const bool is_bool = !exact_number && (PyBool_Check(o) || is_numpy_bool(o));
  if (p.type == ScalarType::boolean) {
    if (!is_bool) bad_type(where(verb, fn, i) + " takes a bool, not " + py_type(v));
    if (o == Py_True || o == Py_False) return KernelArg(o == Py_True);
    return KernelArg(PyObject_IsTrue(o) == 1);
  }
  if (p.type == ScalarType::float32 || p.type == ScalarType::float64) {
    if (!exact_number &&
        (is_bool || !(PyFloat_Check(o) || PyLong_Check(o) || PyIndex_Check(o) || PyObject_HasAttrString(o, "__float__"))))
      bad_type(where(verb, fn, i) + " takes a float or int, not " + py_type(v));
    const double d = PyFloat_CheckExact(o) ? PyFloat_AS_DOUBLE(o) : PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw RtArgumentError(true, where(verb, fn, i) + ": " + nb::repr(v).c_str() + " does not fit a double");
    }
    if (p.type == ScalarType::float64) return KernelArg(d);
    if (std::isfinite(d) && std::fabs(d) > double(std::numeric_limits<float>::max()))
      throw RtArgumentError(true, where(verb, fn, i) + ": " + std::to_string(d) + " does not fit a float");
    return KernelArg(static_cast<float>(d));
  }
  if (!PyLong_CheckExact(o) && (is_bool || PyFloat_Check(o) || !PyIndex_Check(o)))
    bad_type(where(verb, fn, i) + " takes an int, not " + py_type(v));
  nb::object index = PyLong_CheckExact(o) ? nb::borrow(v) : nb::steal(PyNumber_Index(o));
  if (!index.is_valid()) throw nb::python_error();
  return visit(p.type, [&]<class T>() -> KernelArg {
    bool fits = false;
    T value{};
    if constexpr (std::is_signed_v<T>) {
      int over = 0;
      const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &over);
      fits = over == 0 && x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max();
      value = static_cast<T>(x);
    } else {
      int over = 0;
      const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &over);
      if (over > 0) {
        const unsigned long long u = PyLong_AsUnsignedLongLong(index.ptr());
        if (PyErr_Occurred())
          PyErr_Clear();
        else
          fits = u <= std::numeric_limits<T>::max(), value = static_cast<T>(u);
      } else {
        fits = over == 0 && x >= 0 && static_cast<unsigned long long>(x) <= std::numeric_limits<T>::max();
        value = static_cast<T>(x);
      }
    }
    if (!fits) throw RtArgumentError(true, where(verb, fn, i) + ": " + nb::repr(v).c_str() + " does not fit it");
    return KernelArg(value);
  });
}

/// The Python objects a launch's memory arguments refer to: those it must keep alive.
using Keep = std::vector<nb::object>;

/// A devctx.DeviceArray (or an object with __dlpack__, viewed through devctx.from_dlpack on the
/// launch's context) as a span or pointer parameter. The view made of a __dlpack__ object goes to
/// `keep` always, the devctx array itself only with `keep_arrays` (a bound launch: the arguments
/// of an enqueue_function call outlive it anyway).
KernelArg memory_arg(const char* verb, const devctx::DeviceFunction& fn, std::size_t i, nb::handle v, nb::handle ctx,
                     bool keep_arrays, Keep& keep) {
  RuntimeArray a;
  if (hooks_.device_array_of(v, a)) {
    if (keep_arrays) keep.push_back(nb::borrow(v));
  } else {
    if (!nb::hasattr(v, "__dlpack__"))
      bad_type(where(verb, fn, i) +
               " takes a devctx.DeviceArray or an array with __dlpack__ (NumPy, CuPy, PyTorch), not " + py_type(v));
    nb::object obj = nb::module_::import_("devctx").attr("from_dlpack")(v, ctx);
    if (!hooks_.device_array_of(obj, a)) bad_type(where(verb, fn, i) + ": devctx.from_dlpack returned no DeviceArray");
    keep.push_back(std::move(obj));
  }
  return visit(ScalarType(a.dtype + 1), [&]<class T>() -> KernelArg {
    if (a.readonly) return KernelArg(devctx::DeviceSlice<const T>(std::as_const(*a.buffer)));
    return KernelArg(devctx::DeviceSlice<T>(*a.buffer));
  });
}

/// One dimension of grid_dim / block_dim: an int in [0, 2^32).
unsigned dim_value(PyObject* item, const char* verb, const char* what) {
  if (PyBool_Check(item) || !PyIndex_Check(item))
    bad_type(std::string(verb) + ": " + what + " takes ints, not " + Py_TYPE(item)->tp_name);
  nb::object index = PyLong_CheckExact(item) ? nb::borrow(item) : nb::steal(PyNumber_Index(item));
  if (!index.is_valid()) throw nb::python_error();
  int over = 0;
  const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &over);
  if (over != 0 || x < 0 || x > 0xFFFFFFFFLL)
    throw RtArgumentError(true, std::string(verb) + ": " + what + " " + nb::repr(item).c_str() +
                                    " does not fit 32 bits unsigned");
  return static_cast<unsigned>(x);
}

/// grid_dim / block_dim: an int or a tuple (or list) of one to three ints, each in [0, 2^32).
devctx::Dim3 dim_arg(nb::handle v, const char* verb, const char* what) {
  PyObject* o = v.ptr();
  if (PyLong_CheckExact(o)) {  // the usual grid_dim=n: no tuple, no __index__
    int over = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &over);
    if (over == 0 && x >= 0 && x <= 0xFFFFFFFFLL) return {static_cast<unsigned>(x), 1, 1};
  }
  PyObject* const* items = &o;
  Py_ssize_t n = 1;
  if (PyTuple_Check(o)) {
    items = reinterpret_cast<PyTupleObject*>(o)->ob_item;
    n = PyTuple_GET_SIZE(o);
  } else if (PyList_Check(o)) {
    items = reinterpret_cast<PyListObject*>(o)->ob_item;
    n = PyList_GET_SIZE(o);
  }
  if (n < 1 || n > 3)
    throw RtArgumentError(false, std::string(verb) + ": " + what + " has 1 to 3 dimensions, not " + std::to_string(n));
  unsigned d[3] = {1, 1, 1};
  for (Py_ssize_t k = 0; k < n; ++k) d[k] = dim_value(items[k], verb, what);
  return {d[0], d[1], d[2]};
}

/// A launch with its arguments converted once (devctx.Launch): enqueued by launch() or __call__.
struct Launch {
  devctx::DeviceFunction fn;
  devctx::LaunchConfig config;
  std::vector<KernelArg> args;
  Keep keep;                 // the arrays the arguments refer to
  nb::object context;        // the devctx.Context it was made on (which keeps its DeviceContext)
  devctx::StreamRef stream;  // where it is enqueued (streams.hpp's stream_argument)
  nb::object stream_owner;   // the devctx.Stream or devctx.Context that owns `stream`

  void enqueue(devctx::StreamRef on) const {
    devctx::detail::queue_launch_runtime(devctx::detail::Access::queue(on), fn, config, args.data(), args.size());
  }
  void enqueue() const { enqueue(stream); }
};

/// One call of Context.enqueue_function or bind_function as Python made it (launch_method): self,
/// the function, the kernel's arguments and the keywords (grid_dim and block_dim given; the
/// others defaulted).
struct Call {
  const char* verb = "enqueue_function";  // how messages name the call
  nb::handle self, function;
  PyObject* const* args = nullptr;  // the kernel's arguments
  std::size_t count = 0;
  nb::handle grid_dim, block_dim, shared_bytes, stream;
};

/// What enqueue_function and bind_function convert besides the kernel's arguments.
struct Prepared {
  const devctx::DeviceFunction* fn = nullptr;
  devctx::StreamRef stream;
  nb::object stream_owner;
  devctx::LaunchConfig config;
};

/// Checks and converts, in this order (the first failure is the one raised): function, self,
/// stream, the argument count, grid_dim, block_dim, shared_bytes.
void prepare(const Call& c, Prepared& out) {
  const std::string_view verb = c.verb;
  const devctx::DeviceFunction& fn = function_arg(c.function, c.verb);
  out.stream = stream_argument(c.stream, c.self, out.stream_owner, c.verb);  // checks self too
  if (!fn) throw devctx::Error(Errc::invalid_handle, std::string(verb) + ": an empty Function");
  const auto& params = fn.params();
  if (c.count != params.size())
    throw RtArgumentError(false, std::string(verb) + "(" + fn.name() + "): the kernel takes " +
                                     std::to_string(params.size()) + " arguments " + fn.signature() + ", " +
                                     std::to_string(c.count) + " were given");
  out.fn = &fn;
  out.config.grid_dim = dim_arg(c.grid_dim, c.verb, "grid_dim");
  out.config.block_dim = dim_arg(c.block_dim, c.verb, "block_dim");
  PyObject* shared = c.shared_bytes.ptr();
  if (PyLong_CheckExact(shared)) {
    int over = 0;
    const long long x = PyLong_AsLongLongAndOverflow(shared, &over);
    if (over == 0 && x >= 0) {
      out.config.shared_bytes = static_cast<std::size_t>(x);
      return;
    }
  }
  if (PyBool_Check(shared) || !PyIndex_Check(shared))
    bad_type(std::string(verb) + ": shared_bytes takes an int, not " + py_type(c.shared_bytes));
  nb::object index = nb::steal(PyNumber_Index(shared));
  if (!index.is_valid()) throw nb::python_error();
  int over = 0;
  const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &over);
  if (over != 0 || x < 0)
    throw RtArgumentError(true, std::string(verb) + ": shared_bytes " + std::string(nb::repr(c.shared_bytes).c_str()) +
                                    " does not fit a size_t");
  out.config.shared_bytes = static_cast<std::size_t>(x);
}

/// Converts the kernel's arguments (as many as fn has parameters) into `out`.
void convert_args(const devctx::DeviceFunction& fn, const Call& c, KernelArg* out, bool keep_arrays, Keep& keep) {
  const auto& params = fn.params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].kind == KernelParam::Kind::scalar)
      new (out + i) KernelArg(scalar_arg(c.verb, fn, i, params[i], c.args[i]));
    else
      new (out + i) KernelArg(memory_arg(c.verb, fn, i, c.args[i], c.self, keep_arrays, keep));
  }
}

static_assert(std::is_trivially_copyable_v<KernelArg> && std::is_trivially_destructible_v<KernelArg>,
              "enqueue_function keeps its KernelArgs in raw storage");

/// Context.enqueue_function: converts and checks everything, then enqueues; it makes no Launch,
/// and for up to kInline arguments allocates nothing.
void enqueue_function(const Call& c) {
  Prepared p;
  prepare(c, p);
  constexpr std::size_t kInline = 16;
  const std::size_t n = c.count;
  alignas(KernelArg) unsigned char inline_args[kInline * sizeof(KernelArg)];
  std::unique_ptr<unsigned char[]> heap;
  if (n > kInline) heap = std::make_unique<unsigned char[]>(n * sizeof(KernelArg));
  auto* converted = reinterpret_cast<KernelArg*>(n > kInline ? heap.get() : inline_args);
  Keep keep;  // the views made of __dlpack__ arguments, alive until the launch is enqueued
  convert_args(*p.fn, c, converted, false, keep);
  devctx::detail::queue_launch_runtime(devctx::detail::Access::queue(p.stream), *p.fn, p.config, converted, n);
}

Launch bind_function(const Call& c) {
  Prepared p;
  prepare(c, p);
  Launch l;
  l.args.resize(c.count, KernelArg(0));
  convert_args(*p.fn, c, l.args.data(), true, l.keep);
  l.fn = *p.fn;
  l.config = p.config;
  l.context = nb::borrow(c.self);
  l.stream = p.stream;
  l.stream_owner = std::move(p.stream_owner);
  return l;
}

// ---- the two launch methods, called by CPython directly ----------------------------------------------
// Context.enqueue_function and Context.bind_function are METH_FASTCALL methods rather than
// nanobind functions: Python hands them its argument array and keyword names, which they match
// against interned names, so that a launch makes no tuple of its arguments (nanobind's *args) and
// no keyword pass of nanobind's general dispatcher: about a tenth of a microsecond of a launch's
// cost from Python. Failures go through nanobind's exception translation all the same (rethrown
// inside rethrow_function_, a nanobind function).

PyObject* kw_grid_dim_ = nullptr;
PyObject* kw_block_dim_ = nullptr;
PyObject* kw_shared_bytes_ = nullptr;
PyObject* kw_stream_ = nullptr;
PyObject* kw_function_ = nullptr;
PyObject* zero_ = nullptr;
PyObject* rethrow_function_ = nullptr;
thread_local std::exception_ptr pending_;

/// Raises the C++ exception being handled as Python sees it (nanobind's translators: devctx.Error,
/// TypeError, ...) and returns null.
PyObject* raise_current() noexcept {
  pending_ = std::current_exception();
  PyObject* result = PyObject_CallNoArgs(rethrow_function_);
  Py_XDECREF(result);
  pending_ = nullptr;
  if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "devctx: an exception was lost in translation");
  return nullptr;
}

/// Fills `c` from a vectorcall, or sets TypeError as Python does for a call that does not fit the
/// signature (name)(self, function, *args, grid_dim, block_dim, shared_bytes=0, stream=None).
bool parse_call(const char* name, PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, Call& c) {
  c.verb = name;
  c.self = self;
  PyObject *function = nargs > 0 ? args[0] : nullptr, *grid = nullptr, *block = nullptr, *shared = nullptr,
           *stream = nullptr;
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, j);
    // Interned names first (a call written out in Python), then by value (keywords from a dict).
    PyObject** slot = key == kw_grid_dim_       ? &grid
                      : key == kw_block_dim_    ? &block
                      : key == kw_shared_bytes_ ? &shared
                      : key == kw_stream_       ? &stream
                                                : nullptr;
    if (slot == nullptr) {
      if (PyUnicode_Compare(key, kw_grid_dim_) == 0)
        slot = &grid;
      else if (PyUnicode_Compare(key, kw_block_dim_) == 0)
        slot = &block;
      else if (PyUnicode_Compare(key, kw_shared_bytes_) == 0)
        slot = &shared;
      else if (PyUnicode_Compare(key, kw_stream_) == 0)
        slot = &stream;
      else if (nargs == 0 && PyUnicode_Compare(key, kw_function_) == 0)
        slot = &function;
      if (PyErr_Occurred()) return false;
    }
    if (slot == nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", name, key);
      return false;
    }
    *slot = args[nargs + j];
  }
  const char* missing = function == nullptr ? "positional argument: 'function'"
                        : grid == nullptr   ? "keyword-only argument: 'grid_dim'"
                        : block == nullptr  ? "keyword-only argument: 'block_dim'"
                                            : nullptr;
  if (missing != nullptr) {
    PyErr_Format(PyExc_TypeError, "%s() missing required %s", name, missing);
    return false;
  }
  c.function = function;
  c.args = nargs > 0 ? args + 1 : args;
  c.count = nargs > 0 ? static_cast<std::size_t>(nargs - 1) : 0;
  c.grid_dim = grid;
  c.block_dim = block;
  c.shared_bytes = shared != nullptr ? shared : zero_;
  c.stream = stream != nullptr ? stream : Py_None;
  return true;
}

PyObject* enqueue_function_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) noexcept {
  Call c;
  if (!parse_call("enqueue_function", self, args, nargs, kwnames, c)) return nullptr;
  try {
    enqueue_function(c);
  } catch (...) {
    return raise_current();
  }
  Py_RETURN_NONE;
}

PyObject* bind_function_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) noexcept {
  Call c;
  if (!parse_call("bind_function", self, args, nargs, kwnames, c)) return nullptr;
  try {
    return nb::cast(bind_function(c)).release().ptr();
  } catch (...) {
    return raise_current();
  }
}

// The docstrings begin with the signature (inspect.signature reads it: __text_signature__).
PyMethodDef enqueue_function_def = {
    "enqueue_function", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&enqueue_function_method)),
    METH_FASTCALL | METH_KEYWORDS,
    "enqueue_function($self, function, *args, grid_dim, block_dim, shared_bytes=0, stream=None)\n--\n\n"
    "Enqueues fn with args (devctx arrays or __dlpack__ objects for spans and pointers, Python numbers for scalars), "
    "checked against fn.signature first: a mismatch raises and enqueues nothing. stream: None (this context's "
    "stream), a devctx.Stream of this context's device (Context.create_stream, Context.wrap_stream), a "
    "devctx.Context (its stream), or a CUDA stream of the device made elsewhere (an object with __cuda_stream__, "
    "a torch.cuda.Stream, a cupy.cuda.Stream, or a cudaStream_t as an int), wrapped for this call (as "
    "Context.wrap_stream does: it must outlive the work enqueued on it)."};
PyMethodDef bind_function_def = {
    "bind_function", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&bind_function_method)),
    METH_FASTCALL | METH_KEYWORDS,
    "bind_function($self, function, *args, grid_dim, block_dim, shared_bytes=0, stream=None)\n--\n\n"
    "As enqueue_function, but returns a devctx.Launch that enqueues the launch (on stream) each time it is called: "
    "the arguments are converted once (for hot loops). A foreign CUDA stream is wrapped once, for the Launch's "
    "lifetime: it must outlive the Launch."};

/// devctx.Launch's tp_call: launch() or launch(stream=s). A type slot rather than a nanobind
/// __call__, which CPython would reach through a lookup of __call__ and nanobind's dispatcher.
PyObject* launch_call(PyObject* self, PyObject* args, PyObject* kwargs) noexcept {
  if (PyTuple_GET_SIZE(args) != 0) {
    PyErr_Format(PyExc_TypeError, "Launch() takes no positional arguments (%zd given): launch() or launch(stream=s)",
                 PyTuple_GET_SIZE(args));
    return nullptr;
  }
  PyObject* stream = Py_None;
  if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
    PyObject *key = nullptr, *value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      if (!PyUnicode_Check(key) || PyUnicode_Compare(key, kw_stream_) != 0) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "Launch() got an unexpected keyword argument '%S'", key);
        return nullptr;
      }
      stream = value;
    }
  }
  try {
    if (!nb::inst_ready(self)) throw nb::type_error("Launch: an uninitialized devctx.Launch");
    const Launch& l = *nb::inst_ptr<Launch>(self);
    if (stream == Py_None) {
      l.enqueue();
    } else {
      nb::object owner;
      l.enqueue(stream_argument(stream, l.context, owner, "Launch"));
    }
  } catch (...) {
    return raise_current();
  }
  Py_RETURN_NONE;
}

PyType_Slot launch_slots[] = {{Py_tp_call, reinterpret_cast<void*>(&launch_call)}, {0, nullptr}};

void add_method(nb::handle cls, PyMethodDef& def) {
  nb::object descriptor = nb::steal(PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def));
  if (!descriptor.is_valid()) throw nb::python_error();
  nb::setattr(cls, def.ml_name, descriptor);
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const devctx::CompileError& e) {
    nb::object instance = nb::steal(PyObject_CallFunction(compile_error_type, "s", e.what()));
    if (!instance.is_valid()) return;
    instance.attr("code") = devctx::to_string(e.code());
    instance.attr("log") = e.log();
    PyErr_SetObject(compile_error_type, instance.ptr());
  } catch (const RtArgumentError& e) {
    nb::module_ m = nb::module_::import_("devctx._devctx");
    nb::object type = m.attr(e.overflow ? "ArgumentOverflowError" : "ArgumentError");
    nb::object instance = type(e.what());
    instance.attr("code") = devctx::to_string(e.code());
    PyErr_SetObject(type.ptr(), instance.ptr());
  }
}

}  // namespace

void bind_runtime_kernels(nb::module_& m, const RuntimeKernelHooks& hooks) {
  hooks_ = hooks;
  nb::object error = m.attr("Error");
  compile_error_type = PyErr_NewExceptionWithDoc(
      "devctx.CompileError",
      "A kernel source that did not compile (Context.compile_function): a devctx.Error (code "
      "'compile_failed') whose message shows the first errors with the lines of the Module's source, "
      "numbered as in it; e.log is the compiler's whole log.",
      error.ptr(), nullptr);
  m.attr("CompileError") = nb::handle(compile_error_type);
  nb::register_exception_translator(&translate);

  nb::class_<devctx::Module>(
      m, "Module", "A kernel source given at run time (devctx::Module): nothing compiles until Context.compile_function.")
      .def(nb::init<std::string, std::string, std::vector<std::string>>(), nb::arg("source"),
           nb::arg("name") = "runtime_kernel.cpp", nb::arg("options") = std::vector<std::string>{},
           "source: devctx kernel code (#include <devctx/kernel.hpp>, DEVCTX_KERNEL functions); name: the file "
           "name compiler messages use; options: extra compiler options (-DNAME=VALUE, ...).")
      .def_static("from_file", &devctx::Module::from_file, nb::arg("path"),
                  nb::arg("options") = std::vector<std::string>{}, "A Module of a file's contents, named by its file name.")
      .def_prop_ro("source", &devctx::Module::source)
      .def_prop_ro("name", &devctx::Module::name)
      .def_prop_ro("options", &devctx::Module::options)
      .def("__repr__", [](const devctx::Module& mod) { return "Module(name='" + mod.name() + "')"; });

  nb::class_<devctx::DeviceFunction> function_class(
      m, "Function", "A kernel compiled at run time for one device (Context.compile_function).");
  function_type_ = reinterpret_cast<PyTypeObject*>(function_class.ptr());
  function_class.def_prop_ro("name", &devctx::DeviceFunction::name)
      .def_prop_ro("signature", &devctx::DeviceFunction::signature,
                   "The parameters as compiled: '(float, devctx::span<const float>, devctx::span<float>)'.")
      .def_prop_ro(
          "params",
          [](const devctx::DeviceFunction& fn) {
            nb::list out;
            for (const KernelParam& p : fn.params()) {
              nb::dict d;
              d["kind"] = kind_names[int(p.kind)];
              d["dtype"] = scalar_names[int(p.type)];
              d["readonly"] = p.read_only;
              d["cpp_type"] = p.cpp_type;
              out.append(d);
            }
            return out;
          },
          "One dict per parameter: kind ('scalar', 'span', 'pointer'), dtype, readonly, cpp_type.")
      .def_prop_ro(
          "load_kind", [](const devctx::DeviceFunction& fn) { return std::string(devctx::to_string(fn.load_kind())); },
          "'compiled' (the compiler ran) or 'cached' (loaded from the disk cache).")
      .def_prop_ro("load_ms", &devctx::DeviceFunction::load_ms)
      .def("__repr__",
           [](const devctx::DeviceFunction& fn) { return "Function('" + fn.name() + "', " + fn.signature() + ")"; });

  nb::class_<Launch>(m, "Launch",
                     "A launch whose arguments were converted and checked once (Context.bind_function): launch() "
                     "enqueues it (checked again by devctx) on the stream it was bound to, launch(stream=s) on s (a "
                     "devctx.Stream or devctx.Context of the same device, or a CUDA stream of the device made "
                     "elsewhere, as Context.enqueue_function takes) for this call.",
                     nb::type_slots(launch_slots))
      .def_prop_ro("function", [](const Launch& l) { return l.fn; })
      .def_prop_ro(
          "stream", [](const Launch& l) { return l.stream_owner; },
          "The devctx.Stream (or devctx.Context, for its own stream) the launch is enqueued on.");

  nb::object context = m.attr("Context");
  nb::setattr(context, "compile_function",
              nb::cpp_function(
                  [](nb::handle self, const devctx::Module& module, const std::string& name) {
                    devctx::DeviceContext* ctx = hooks_.context_ptr(self);
                    if (ctx == nullptr) bad_type("compile_function: self must be a devctx Context");
                    const devctx::Module copy = module;
                    nb::gil_scoped_release unlocked;
                    return ctx->compile_function(copy, name);
                  },
                  nb::scope(context), nb::name("compile_function"), nb::is_method(), nb::arg("module"), nb::arg("name"),
                  "Compiles module's kernel `name` (with template arguments: 'saxpy<float>') for this context's device, "
                  "through the disk cache (DEVCTX_CACHE_DIR). Raises devctx.CompileError when it does not compile."));
  for (const auto& [slot, text] : {std::pair{&kw_grid_dim_, "grid_dim"}, std::pair{&kw_block_dim_, "block_dim"},
                                   std::pair{&kw_shared_bytes_, "shared_bytes"}, std::pair{&kw_stream_, "stream"},
                                   std::pair{&kw_function_, "function"}})
    *slot = PyUnicode_InternFromString(text);
  zero_ = PyLong_FromLong(0);
  rethrow_function_ = nb::cpp_function([] { std::rethrow_exception(std::exchange(pending_, nullptr)); }).release().ptr();
  add_method(context, enqueue_function_def);
  add_method(context, bind_function_def);
}
