// SPDX-License-Identifier: Apache-2.0
// python/src/streams.cpp - devctx streams in Python (streams.hpp): devctx.Stream, a move-only
// devctx::Stream owned by Python together with its devctx.Context (made by Context.create_stream,
// or by Context.wrap_stream over a CUDA stream of another library), and the `stream=` argument of
// the launch and copy verbs. The stream rules (ordering, devices, waits across devices) are devctx's.
#include "streams.hpp"

#include <nanobind/stl/string.h>

#include <Python.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include <devctx/interop.hpp>

#include "binding_errors.hpp"

namespace nb = nanobind;

namespace {

StreamHooks hooks_{};
PyTypeObject* stream_type_ = nullptr;  // devctx.Stream, for the launch verbs' fast path

/// A devctx.Stream: the stream, and the Python context it belongs to (kept alive by it).
/// `wrapped`: a foreign CUDA stream (Context.wrap_stream), which devctx never destroys.
struct PyStream {
  nb::object context;                          ///< the devctx.Context it was created from
  std::shared_ptr<devctx::DeviceContext> ctx;  ///< that context's DeviceContext
  devctx::Stream stream;
  bool wrapped = false;
};

[[noreturn]] void bad_type(const std::string& message) { throw nb::type_error(message.c_str()); }
[[noreturn]] void bad_value(bool overflow, const std::string& message) {
  throw BindingArgumentError(overflow, message);
}

std::string py_type(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

std::string repr_of(nb::handle h) {
  PyObject* r = PyObject_Repr(h.ptr());
  if (r == nullptr) {
    PyErr_Clear();
    return "<" + py_type(h) + ">";
  }
  const char* text = PyUnicode_AsUTF8(r);
  std::string out = text != nullptr ? text : "<" + py_type(h) + ">";
  if (text == nullptr) PyErr_Clear();
  Py_DECREF(r);
  if (out.size() > 48) out = out.substr(0, 40) + "...";
  return out;
}

/// A devctx.Stream, or null. The exact type (every stream devctx makes) without a type lookup.
const PyStream* as_stream(nb::handle obj) {
  if (Py_TYPE(obj.ptr()) == stream_type_ && nb::inst_ready(obj)) return nb::inst_ptr<PyStream>(obj);
  if (nb::isinstance<PyStream>(obj)) return &nb::cast<const PyStream&>(obj);
  return nullptr;
}

/// A devctx.Stream's or devctx.Context's stream, or false.
bool devctx_stream_of(nb::handle obj, devctx::StreamRef& out, devctx::DeviceContext*& ctx) {
  if (const PyStream* s = as_stream(obj)) {
    out = s->stream;
    ctx = s->ctx.get();
    return true;
  }
  if (devctx::DeviceContext* c = hooks_.context_ptr(obj)) {
    out = *c;
    ctx = c;
    return true;
  }
  return false;
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

/// A type's name with its module ("torch.cuda.streams.Stream"), for messages and for telling
/// whose stream an object is.
std::string qualified_type(nb::handle obj) {
  PyTypeObject* type = Py_TYPE(obj.ptr());
  if ((type->tp_flags & Py_TPFLAGS_HEAPTYPE) == 0) return type->tp_name;  // "module.Name" already
  nb::handle t(reinterpret_cast<PyObject*>(type));
  nb::object module = nb::steal(PyObject_GetAttrString(t.ptr(), "__module__"));
  nb::object name = nb::steal(PyObject_GetAttrString(t.ptr(), "__qualname__"));
  if (!module.is_valid() || !name.is_valid() || !PyUnicode_Check(module.ptr()) || !PyUnicode_Check(name.ptr())) {
    PyErr_Clear();
    return type->tp_name;
  }
  const char* m = PyUnicode_AsUTF8(module.ptr());
  const char* n = PyUnicode_AsUTF8(name.ptr());
  if (m == nullptr || n == nullptr) {
    PyErr_Clear();
    return type->tp_name;
  }
  return std::string_view(m) == "builtins" ? std::string(n) : std::string(m) + "." + n;
}

/// The cudaStream_t handle an int names; `label` says whose value it is in messages
/// ("enqueue_function: stream", "...: torch.cuda.streams.Stream.cuda_stream").
std::uint64_t handle_value(nb::handle value, const std::string& label) {
  if (PyBool_Check(value.ptr()) || !PyLong_Check(value.ptr()))
    bad_type(label + " is " + py_type(value) + " (" + repr_of(value) + "), not an int cudaStream_t");
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow < 0 || (overflow == 0 && v < 0))
    bad_value(false, label + " " + repr_of(value) + " is not a stream's handle (a cudaStream_t is not negative)");
  std::uint64_t handle = static_cast<std::uint64_t>(v);
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      bad_value(true, label + " " + repr_of(value) + " does not fit in 64 bits, so it is no stream's handle");
    }
    handle = u;
  }
  if (handle == 0)
    bad_value(false, label +
                         " 0 is ambiguous: CUDA's legacy or per-thread default stream, depending on how the caller "
                         "was compiled; pass 1 (cudaStreamLegacy, the default stream of PyTorch and CuPy) or 2 "
                         "(cudaStreamPerThread), or a stream's own handle");
  return handle;
}

/// The cudaStream_t that a foreign stream object names: an int, an object with the CUDA stream
/// protocol (__cuda_stream__() -> (0, handle): cuda.core, PyTorch, numba-cuda, RMM, ...), an
/// object with an int `cuda_stream` (torch.cuda.Stream before the protocol) or a CuPy stream (its
/// `ptr`). False when `obj` is none of these; raises for one whose handle is wrong. `what`:
/// "enqueue_function: stream". `source` receives how messages name the stream ("" for an int).
bool foreign_handle(nb::handle obj, std::uint64_t& out, std::string& source, const std::string& what) {
  PyObject* o = obj.ptr();
  source.clear();
  if (PyBool_Check(o)) return false;
  if (PyLong_Check(o)) {
    out = handle_value(obj, what);
    return true;
  }
  const std::string type = qualified_type(obj);
  if (PyObject_HasAttrString(o, "__cuda_stream__")) {
    nb::object protocol = nb::getattr(obj, "__cuda_stream__");
    // A method, as the protocol says (early cuda.core releases had a property: its value is used).
    nb::object pair = PyCallable_Check(protocol.ptr()) ? protocol() : protocol;
    const std::string call = what + ": " + type + ".__cuda_stream__()";
    if (!PyTuple_Check(pair.ptr()) || PyTuple_GET_SIZE(pair.ptr()) != 2)
      bad_type(call + " returned " + repr_of(pair) + ", not a (version, handle) tuple");
    nb::handle version = PyTuple_GET_ITEM(pair.ptr(), 0);
    if (PyBool_Check(version.ptr()) || !PyLong_Check(version.ptr()))
      bad_type(call + " returned version " + repr_of(version) + ", not an int");
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(version.ptr(), &overflow);
    if (overflow != 0 || v != 0)
      bad_value(false,
                call + " speaks version " + repr_of(version) + " of the CUDA stream protocol; devctx knows version 0");
    out = handle_value(PyTuple_GET_ITEM(pair.ptr(), 1), call + "'s handle");
    source = type;
    return true;
  }
  if (PyObject_HasAttrString(o, "cuda_stream")) {  // torch.cuda.Stream, torch.cuda.ExternalStream
    out = handle_value(nb::getattr(obj, "cuda_stream"), what + ": " + type + ".cuda_stream");
    source = type;
    return true;
  }
  if (std::string_view(type).starts_with("cupy") && PyObject_HasAttrString(o, "ptr")) {  // cupy.cuda.Stream
    out = handle_value(nb::getattr(obj, "ptr"), what + ": " + type + ".ptr");
    source = type;
    return true;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return false;
}

/// A devctx.Stream over the foreign CUDA stream `handle` on ctx_obj's device (wrap_cuda_stream).
nb::object wrap_foreign(nb::handle ctx_obj, std::uint64_t handle, const std::string& source, const std::string& what) {
  std::shared_ptr<devctx::DeviceContext> ctx = hooks_.context_of(ctx_obj);
  if (!ctx) bad_type(what + ": self must be a devctx Context");
  try {
    devctx::Stream s = devctx::wrap_cuda_stream(*ctx, reinterpret_cast<devctx::CudaStreamHandle>(
                                                          static_cast<std::uintptr_t>(handle)));
    return nb::cast(PyStream{nb::borrow(ctx_obj), std::move(ctx), std::move(s), true});
  } catch (const devctx::Error& e) {
    const std::string named = source.empty() ? "cudaStream_t " + hex(handle)
                                             : source + " (cudaStream_t " + hex(handle) + ")";
    throw devctx::Error(e.code(), what + " " + named + ": " + e.what());
  }
}

/// The stream `other` names for a wait by a stream of ctx_obj's device: a devctx.Stream, a
/// devctx.Context, or a foreign CUDA stream (wrapped into `keep`).
devctx::StreamRef wait_argument(nb::handle other, nb::handle ctx_obj, nb::object& keep, const char* what) {
  devctx::StreamRef ref;
  devctx::DeviceContext* of = nullptr;
  if (devctx_stream_of(other, ref, of)) return ref;
  std::uint64_t handle = 0;
  std::string source;
  const std::string where = std::string(what) + ": other";
  if (!foreign_handle(other, handle, source, where))
    bad_type(std::string(what) +
             ": other takes a devctx.Stream, a devctx.Context or a CUDA stream (__cuda_stream__, "
             "torch.cuda.Stream, cupy.cuda.Stream, an int cudaStream_t), not " +
             py_type(other));
  keep = wrap_foreign(ctx_obj, handle, source, where);
  return nb::inst_ptr<PyStream>(keep)->stream;
}

const char* const kStreamTypes =
    "None, a devctx.Stream (Context.create_stream, Context.wrap_stream), a devctx.Context (its stream) or a CUDA "
    "stream of the context's device (an object with __cuda_stream__, a torch.cuda.Stream, a cupy.cuda.Stream, or a "
    "cudaStream_t as an int)";

}  // namespace

devctx::StreamRef stream_argument(nb::handle stream, nb::handle ctx, nb::object& keep, const char* what) {
  devctx::DeviceContext* own = hooks_.context_ptr(ctx);
  if (own == nullptr) bad_type(std::string(what) + ": self must be a devctx Context");
  if (stream.is_none()) {
    keep = nb::borrow(ctx);
    return *own;
  }
  devctx::StreamRef ref;
  devctx::DeviceContext* of = nullptr;
  if (devctx_stream_of(stream, ref, of)) {
    if (of->api() != own->api() || of->id() != own->id())
      throw devctx::Error(devctx::Errc::wrong_device,
                          std::string(what) + ": the stream belongs to " + std::string(devctx::to_string(of->api())) +
                              ":" + std::to_string(of->id()) + ", the context to " +
                              std::string(devctx::to_string(own->api())) + ":" + std::to_string(own->id()) +
                              ": use a stream of the context's device (Context.create_stream)");
    keep = nb::borrow(stream);
    return ref;
  }
  std::uint64_t handle = 0;
  std::string source;
  const std::string where = std::string(what) + ": stream";
  if (!foreign_handle(stream, handle, source, where))
    bad_type(std::string(what) + ": stream takes " + kStreamTypes + ", not " + py_type(stream));
  keep = wrap_foreign(ctx, handle, source, where);
  return nb::inst_ptr<PyStream>(keep)->stream;
}

void bind_streams(nb::module_& m, const StreamHooks& hooks) {
  hooks_ = hooks;
  nb::class_<PyStream> stream_class(
      m, "Stream",
      "A stream of a context's device (devctx::Stream, from Context.create_stream, or a CUDA stream of another "
      "library wrapped by Context.wrap_stream): work enqueued on it runs in order, and may overlap with the "
      "context's own stream. Pass it as stream= to Context.enqueue_function / bind_function / copy / fill; order "
      "it with enqueue_wait_for.");
  stream_type_ = reinterpret_cast<PyTypeObject*>(stream_class.ptr());
  stream_class
      .def_prop_ro(
          "context", [](const PyStream& s) { return s.context; }, "The devctx.Context it was created from.")
      .def_prop_ro(
          "cuda_stream",
          [](const PyStream& s) { return reinterpret_cast<std::uintptr_t>(devctx::cuda_stream(s.stream)); },
          "The stream's cudaStream_t as an integer; devctx.Error (not_available) on the CPU backend.")
      .def(
          "__cuda_stream__",
          [](const PyStream& s) {
            return nb::make_tuple(0, reinterpret_cast<std::uintptr_t>(devctx::cuda_stream(s.stream)));
          },
          "The CUDA stream protocol (cuda.core, PyTorch, ...): (0, the cudaStream_t as an integer); devctx.Error "
          "(not_available) on the CPU backend.")
      .def_prop_ro(
          "wrapped", [](const PyStream& s) { return s.wrapped; },
          "True for a foreign CUDA stream (Context.wrap_stream), which devctx never destroys.")
      .def(
          "synchronize",
          [](PyStream& s) {
            nb::gil_scoped_release unlocked;
            s.stream.synchronize();
          },
          "Blocks until all work enqueued on this stream has finished; raises devctx.Error for a failure in it.")
      .def(
          "enqueue_wait_for",
          [](PyStream& s, nb::handle other) {
            nb::object keep;
            const devctx::StreamRef ref = wait_argument(other, s.context, keep, "Stream.enqueue_wait_for");
            s.stream.enqueue_wait_for(ref);
          },
          nb::arg("other").none(),
          "Work enqueued on this stream after this call starts only once all work enqueued so far on other "
          "(a devctx.Stream, a devctx.Context's stream, or a CUDA stream of the device: __cuda_stream__, "
          "torch.cuda.Stream, cupy.cuda.Stream, an int cudaStream_t) has finished. Returns at once.")
      .def("__repr__", [](const PyStream& s) {
        return "Stream(" + std::string(devctx::to_string(s.ctx->api())) + ":" + std::to_string(s.ctx->id()) +
               (s.wrapped ? ", wrapped)" : ")");
      });

  nb::object context = m.attr("Context");
  nb::setattr(context, "create_stream",
              nb::cpp_function(
                  [](nb::handle self, nb::handle priority) {
                    auto ctx = hooks_.context_of(self);
                    if (!ctx) bad_type("create_stream: self must be a devctx Context");
                    if (priority.is_none()) return PyStream{nb::borrow(self), ctx, ctx->create_stream()};
                    if (PyBool_Check(priority.ptr()) || !PyLong_Check(priority.ptr()))
                      bad_type("create_stream: priority takes an int or None, not " + py_type(priority));
                    int over = 0;
                    const long long p = PyLong_AsLongLongAndOverflow(priority.ptr(), &over);
                    if (over != 0 || p < INT32_MIN || p > INT32_MAX)
                      throw devctx::Error(devctx::Errc::invalid_argument, "create_stream: priority " +
                                                                              std::string(nb::repr(priority).c_str()) +
                                                                              " is outside the device's range");
                    return PyStream{nb::borrow(self), ctx, ctx->create_stream(int(p))};
                  },
                  nb::scope(context), nb::name("create_stream"), nb::is_method(), nb::arg("priority").none() = nb::none(),
                  "A new stream of this context's device (devctx::DeviceContext::create_stream). priority: None, or "
                  "one of the device's stream priorities (the CPU backend has one, 0)."));
  nb::setattr(context, "wrap_stream",
              nb::cpp_function(
                  [](nb::handle self, nb::handle stream) -> nb::object {
                    if (hooks_.context_ptr(self) == nullptr) bad_type("wrap_stream: self must be a devctx Context");
                    if (const PyStream* s = as_stream(stream)) {
                      if (s->ctx.get() == hooks_.context_ptr(self)) return nb::borrow(stream);
                    }
                    std::uint64_t handle = 0;
                    std::string source;
                    if (!foreign_handle(stream, handle, source, "wrap_stream: stream"))
                      bad_type(
                          "wrap_stream: stream takes a CUDA stream (an object with __cuda_stream__, a "
                          "torch.cuda.Stream, a cupy.cuda.Stream, or a cudaStream_t as an int), not " +
                          py_type(stream));
                    return wrap_foreign(self, handle, source, "wrap_stream: stream");
                  },
                  nb::scope(context), nb::name("wrap_stream"), nb::is_method(), nb::arg("stream").none(),
                  "A devctx.Stream over a CUDA stream made elsewhere (devctx::wrap_cuda_stream): an object with "
                  "__cuda_stream__ (cuda.core, PyTorch, ...), a torch.cuda.Stream, a cupy.cuda.Stream, or a "
                  "cudaStream_t as an int (1: cudaStreamLegacy, 2: cudaStreamPerThread; 0 is refused as ambiguous). "
                  "devctx never destroys it: the foreign stream must outlive the devctx.Stream and everything "
                  "enqueued or allocated on it. The stream must belong to this context's CUDA device "
                  "(devctx.Error 'wrong_device' otherwise; 'not_available' on the CPU backend). "
                  "Context.synchronize() waits for it too while the devctx.Stream lives."));
  nb::setattr(context, "enqueue_wait_for",
              nb::cpp_function(
                  [](nb::handle self, nb::handle other) {
                    devctx::DeviceContext* ctx = hooks_.context_ptr(self);
                    if (ctx == nullptr) bad_type("enqueue_wait_for: self must be a devctx Context");
                    nb::object keep;
                    const devctx::StreamRef ref = wait_argument(other, self, keep, "Context.enqueue_wait_for");
                    ctx->enqueue_wait_for(ref);
                  },
                  nb::scope(context), nb::name("enqueue_wait_for"), nb::is_method(), nb::arg("other").none(),
                  "Work enqueued on this context's stream after this call starts only once all work enqueued so far "
                  "on other (a devctx.Stream, a devctx.Context's stream, or a CUDA stream of the device: "
                  "__cuda_stream__, torch.cuda.Stream, cupy.cuda.Stream, an int cudaStream_t) has finished. Returns "
                  "at once."));
}
