// SPDX-License-Identifier: Apache-2.0
// python/src/runtime_kernels.cpp - kernels written by Python users (docs/runtime-kernels.md, Python):
// devctx.Module (a kernel source), Context.compile_function (a devctx.Function), and
// Context.enqueue_function / devctx.Launch, which convert Python arguments to devctx::KernelArg
// against the compiled signature: devctx arrays and __dlpack__ objects for spans and pointers,
// Python numbers for scalars (range-checked against the declared C++ type). Every check that
// devctx itself makes at launch (dtype, const, device, count) stays devctx's.
#include "runtime_kernels.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <Python.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <devctx/module.hpp>

#include "streams.hpp"

namespace nb = nanobind;

namespace {

using devctx::Errc;
using devctx::KernelArg;
using devctx::KernelParam;
using devctx::ScalarType;

RuntimeKernelHooks hooks_;
PyObject* compile_error_type = nullptr;

/// A value that does not fit the parameter it is for (devctx.ArgumentOverflowError) or that
/// devctx cannot take (devctx.ArgumentError).
struct RtArgumentError : devctx::Error {
  bool overflow;
  RtArgumentError(bool o, const std::string& m) : devctx::Error(Errc::invalid_argument, m), overflow(o) {}
};

[[noreturn]] void bad_type(const std::string& message) { throw nb::type_error(message.c_str()); }

std::string py_type(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

const char* const kind_names[] = {"scalar", "span", "pointer"};
const char* const scalar_names[] = {"other", "bool",   "int8",   "int16",   "int32",  "int64",
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

std::string where(const devctx::DeviceFunction& fn, std::size_t i) {
  return "enqueue_function(" + fn.name() + "): argument " + std::to_string(i) + " (" + fn.params()[i].cpp_type + ")";
}

/// A Python number as the scalar parameter `p`: bools for bool, ints (anything with __index__, not
/// bool) for integers, ints and floats for floating types; the value must fit.
KernelArg scalar_arg(const devctx::DeviceFunction& fn, std::size_t i, nb::handle v) {
  const KernelParam& p = fn.params()[i];
  const std::string at = where(fn, i);
  if (p.type == ScalarType::other)
    bad_type(at + ": a struct parameter cannot be given from Python: use arithmetic parameters");
  const bool is_bool = PyBool_Check(v.ptr()) || py_type(v) == std::string("numpy.bool_") ||
                       py_type(v) == std::string("numpy.bool");
  if (p.type == ScalarType::boolean) {
    if (!is_bool) bad_type(at + " takes a bool, not " + py_type(v));
    return KernelArg(PyObject_IsTrue(v.ptr()) == 1);
  }
  if (p.type == ScalarType::float32 || p.type == ScalarType::float64) {
    if (is_bool || !(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()) || PyIndex_Check(v.ptr()) ||
                     PyObject_HasAttrString(v.ptr(), "__float__")))
      bad_type(at + " takes a float or int, not " + py_type(v));
    const double d = PyFloat_AsDouble(v.ptr());
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw RtArgumentError(true, at + ": " + nb::repr(v).c_str() + " does not fit a double");
    }
    if (p.type == ScalarType::float64) return KernelArg(d);
    if (std::isfinite(d) && std::fabs(d) > double(std::numeric_limits<float>::max()))
      throw RtArgumentError(true, at + ": " + std::to_string(d) + " does not fit a float");
    return KernelArg(static_cast<float>(d));
  }
  if (is_bool || PyFloat_Check(v.ptr()) || !PyIndex_Check(v.ptr()))
    bad_type(at + " takes an int, not " + py_type(v));
  nb::object index = nb::steal(PyNumber_Index(v.ptr()));
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
        if (PyErr_Occurred()) PyErr_Clear();
        else fits = u <= std::numeric_limits<T>::max(), value = static_cast<T>(u);
      } else {
        fits = over == 0 && x >= 0 && static_cast<unsigned long long>(x) <= std::numeric_limits<T>::max();
        value = static_cast<T>(x);
      }
    }
    if (!fits) throw RtArgumentError(true, at + ": " + nb::repr(v).c_str() + " does not fit it");
    return KernelArg(value);
  });
}

/// A devctx.DeviceArray (or an object with __dlpack__, viewed through devctx.from_dlpack on the
/// launch's context, kept alive in `keep`) as a span or pointer parameter.
KernelArg memory_arg(const devctx::DeviceFunction& fn, std::size_t i, nb::handle v, nb::handle ctx, nb::list& keep) {
  RuntimeArray a;
  nb::object obj = nb::borrow(v);
  if (!hooks_.device_array_of(obj, a)) {
    if (!nb::hasattr(obj, "__dlpack__"))
      bad_type(where(fn, i) + " takes a devctx.DeviceArray or an array with __dlpack__ (NumPy, CuPy, PyTorch), not " +
               py_type(v));
    obj = nb::module_::import_("devctx").attr("from_dlpack")(obj, ctx);
    if (!hooks_.device_array_of(obj, a)) bad_type(where(fn, i) + ": devctx.from_dlpack returned no DeviceArray");
  }
  keep.append(obj);
  return visit(ScalarType(a.dtype + 1), [&]<class T>() -> KernelArg {
    if (a.readonly) return KernelArg(devctx::DeviceSlice<const T>(std::as_const(*a.buffer)));
    return KernelArg(devctx::DeviceSlice<T>(*a.buffer));
  });
}

/// grid_dim / block_dim: an int or a tuple of one to three ints, each in [1, 2^32).
devctx::Dim3 dim_arg(nb::handle v, const char* what) {
  std::vector<nb::handle> items;
  if (PyTuple_Check(v.ptr()) || PyList_Check(v.ptr())) {
    for (nb::handle h : v) items.push_back(h);
  } else {
    items.push_back(v);
  }
  if (items.empty() || items.size() > 3)
    throw RtArgumentError(false, std::string("enqueue_function: ") + what + " has 1 to 3 dimensions, not " +
                                     std::to_string(items.size()));
  unsigned d[3] = {1, 1, 1};
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (PyBool_Check(items[k].ptr()) || !PyIndex_Check(items[k].ptr()))
      bad_type(std::string("enqueue_function: ") + what + " takes ints, not " + py_type(items[k]));
    int over = 0;
    nb::object index = nb::steal(PyNumber_Index(items[k].ptr()));
    const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &over);
    if (over != 0 || x < 0 || x > 0xFFFFFFFFLL)
      throw RtArgumentError(true, std::string("enqueue_function: ") + what + " " + nb::repr(items[k]).c_str() +
                                      " does not fit 32 bits unsigned");
    d[k] = static_cast<unsigned>(x);
  }
  return {d[0], d[1], d[2]};
}

/// A launch with its arguments converted once (devctx.Launch): enqueued by launch() or __call__.
struct Launch {
  std::shared_ptr<devctx::DeviceContext> ctx;
  devctx::DeviceFunction fn;
  devctx::LaunchConfig config;
  std::vector<KernelArg> args;
  nb::list keep;  // the arrays the arguments refer to
  nb::object context;        // the devctx.Context it was made on
  devctx::StreamRef stream;  // where it is enqueued (streams.hpp's stream_argument)
  nb::object stream_owner;   // the devctx.Stream or devctx.Context that owns `stream`

  void enqueue(devctx::StreamRef on) const {
    devctx::detail::queue_launch_runtime(devctx::detail::Access::queue(on), fn, config, args.data(), args.size());
  }
  void enqueue() const { enqueue(stream); }
};

Launch make_launch(nb::handle self, const devctx::DeviceFunction& fn, nb::args args, nb::handle grid_dim,
                   nb::handle block_dim, nb::handle shared_bytes, nb::handle stream) {
  Launch l;
  l.ctx = hooks_.context_of(self);
  if (!l.ctx) bad_type("enqueue_function: self must be a devctx Context");
  l.context = nb::borrow(self);
  l.stream = stream_argument(stream, self, l.stream_owner, "enqueue_function");
  if (!fn) throw devctx::Error(Errc::invalid_handle, "enqueue_function: an empty Function");
  const auto& params = fn.params();
  if (args.size() != params.size())
    throw RtArgumentError(false, "enqueue_function(" + fn.name() + "): the kernel takes " +
                                     std::to_string(params.size()) + " arguments " + fn.signature() + ", " +
                                     std::to_string(args.size()) + " were given");
  l.fn = fn;
  l.config.grid_dim = dim_arg(grid_dim, "grid_dim");
  l.config.block_dim = dim_arg(block_dim, "block_dim");
  if (PyBool_Check(shared_bytes.ptr()) || !PyIndex_Check(shared_bytes.ptr()))
    bad_type("enqueue_function: shared_bytes takes an int, not " + py_type(shared_bytes));
  {
    int over = 0;
    nb::object index = nb::steal(PyNumber_Index(shared_bytes.ptr()));
    const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &over);
    if (over != 0 || x < 0) throw RtArgumentError(true, "enqueue_function: shared_bytes " + std::string(nb::repr(shared_bytes).c_str()) + " does not fit a size_t");
    l.config.shared_bytes = static_cast<std::size_t>(x);
  }
  l.args.reserve(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].kind == KernelParam::Kind::scalar) l.args.push_back(scalar_arg(fn, i, args[i]));
    else l.args.push_back(memory_arg(fn, i, args[i], self, l.keep));
  }
  return l;
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

  nb::class_<devctx::Module>(m, "Module", "A kernel source given at run time (devctx::Module): nothing compiles until Context.compile_function.")
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

  nb::class_<devctx::DeviceFunction>(m, "Function", "A kernel compiled at run time for one device (Context.compile_function).")
      .def_prop_ro("name", &devctx::DeviceFunction::name)
      .def_prop_ro("signature", &devctx::DeviceFunction::signature,
                   "The parameters as compiled: '(float, devctx::span<const float>, devctx::span<float>)'.")
      .def_prop_ro("params",
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
      .def_prop_ro("load_kind", [](const devctx::DeviceFunction& fn) { return std::string(devctx::to_string(fn.load_kind())); },
                   "'compiled' (the compiler ran) or 'cached' (loaded from the disk cache).")
      .def_prop_ro("load_ms", &devctx::DeviceFunction::load_ms)
      .def("__repr__", [](const devctx::DeviceFunction& fn) { return "Function('" + fn.name() + "', " + fn.signature() + ")"; });

  nb::class_<Launch>(m, "Launch",
                     "A launch whose arguments were converted and checked once (Context.bind_function); call it to enqueue it.")
      .def(
          "__call__",
          [](const Launch& l, nb::handle stream) {
            if (stream.is_none()) return l.enqueue();
            nb::object owner;
            l.enqueue(stream_argument(stream, l.context, owner, "Launch"));
          },
          nb::kw_only(), nb::arg("stream").none() = nb::none(),
          "Enqueues the launch (checked again by devctx) on the stream it was bound to, or on stream (a "
          "devctx.Stream or devctx.Context of the same device) for this call.")
      .def_prop_ro("function", [](const Launch& l) { return l.fn; })
      .def_prop_ro(
          "stream", [](const Launch& l) { return l.stream_owner; },
          "The devctx.Stream (or devctx.Context, for its own stream) the launch is enqueued on.");

  nb::object context = m.attr("Context");
  nb::setattr(context, "compile_function",
              nb::cpp_function(
                  [](nb::handle self, const devctx::Module& module, const std::string& name) {
                    auto ctx = hooks_.context_of(self);
                    if (!ctx) bad_type("compile_function: self must be a devctx Context");
                    const devctx::Module copy = module;
                    nb::gil_scoped_release unlocked;
                    return ctx->compile_function(copy, name);
                  },
                  nb::scope(context), nb::name("compile_function"), nb::is_method(), nb::arg("module"), nb::arg("name"),
                  "Compiles module's kernel `name` (with template arguments: 'saxpy<float>') for this context's device, "
                  "through the disk cache (DEVCTX_CACHE_DIR). Raises devctx.CompileError when it does not compile."));
  nb::setattr(context, "enqueue_function",
              nb::cpp_function(
                  [](nb::handle self, const devctx::DeviceFunction& fn, nb::args args, nb::handle grid_dim,
                     nb::handle block_dim, nb::handle shared_bytes, nb::handle stream) {
                    make_launch(self, fn, std::move(args), grid_dim, block_dim, shared_bytes, stream).enqueue();
                  },
                  nb::scope(context), nb::name("enqueue_function"), nb::is_method(), nb::arg("function"),
                  nb::arg("args"), nb::kw_only(), nb::arg("grid_dim"), nb::arg("block_dim"),
                  nb::arg("shared_bytes") = 0, nb::arg("stream").none() = nb::none(),
                  "Enqueues fn with args (devctx arrays or __dlpack__ objects for spans and pointers, Python numbers "
                  "for scalars), checked against fn.signature first: a mismatch raises and enqueues nothing. stream: "
                  "None (this context's stream), a devctx.Stream of this context's device (Context.create_stream) or "
                  "a devctx.Context (its stream)."));
  nb::setattr(context, "bind_function",
              nb::cpp_function(
                  [](nb::handle self, const devctx::DeviceFunction& fn, nb::args args, nb::handle grid_dim,
                     nb::handle block_dim, nb::handle shared_bytes, nb::handle stream) {
                    return make_launch(self, fn, std::move(args), grid_dim, block_dim, shared_bytes, stream);
                  },
                  nb::scope(context), nb::name("bind_function"), nb::is_method(), nb::arg("function"), nb::arg("args"),
                  nb::kw_only(), nb::arg("grid_dim"), nb::arg("block_dim"), nb::arg("shared_bytes") = 0,
                  nb::arg("stream").none() = nb::none(),
                  "As enqueue_function, but returns a devctx.Launch that enqueues the launch (on stream) each time it "
                  "is called: the arguments are converted once (for hot loops)."));
}
