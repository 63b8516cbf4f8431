// SPDX-License-Identifier: Apache-2.0
// python/src/streams.cpp - devctx streams in Python (streams.hpp): devctx.Stream, a move-only
// devctx::Stream owned by Python together with its devctx.Context, and the `stream=` argument
// of the launch verbs. The stream rules (ordering, devices, waits across devices) are devctx's.
#include "streams.hpp"

#include <nanobind/stl/string.h>

#include <Python.h>

#include <cstdint>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace {

std::shared_ptr<devctx::DeviceContext> (*context_of_)(nb::handle) = nullptr;

/// A devctx.Stream: the stream, and the Python context it belongs to (kept alive by it).
struct PyStream {
  nb::object context;                          ///< the devctx.Context it was created from
  std::shared_ptr<devctx::DeviceContext> ctx;  ///< that context's DeviceContext
  devctx::Stream stream;
};

[[noreturn]] void bad_type(const std::string& message) { throw nb::type_error(message.c_str()); }

std::string py_type(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

/// A devctx.Stream's or devctx.Context's stream, or false.
bool stream_of(nb::handle obj, devctx::StreamRef& out, std::shared_ptr<devctx::DeviceContext>& ctx) {
  if (nb::isinstance<PyStream>(obj)) {
    const auto& s = nb::cast<const PyStream&>(obj);
    out = s.stream;
    ctx = s.ctx;
    return true;
  }
  if (auto c = context_of_(obj)) {
    out = *c;
    ctx = std::move(c);
    return true;
  }
  return false;
}

const char* const kStreamTypes = "None, a devctx.Stream (Context.create_stream) or a devctx.Context (its stream)";

}  // namespace

devctx::StreamRef stream_argument(nb::handle stream, nb::handle ctx, nb::object& keep, const char* what) {
  const auto own = context_of_(ctx);
  if (!own) bad_type(std::string(what) + ": self must be a devctx Context");
  if (stream.is_none()) {
    keep = nb::borrow(ctx);
    return *own;
  }
  devctx::StreamRef ref;
  std::shared_ptr<devctx::DeviceContext> of;
  if (!stream_of(stream, ref, of))
    bad_type(std::string(what) + ": stream takes " + kStreamTypes + ", not " + py_type(stream));
  if (of->api() != own->api() || of->id() != own->id())
    throw devctx::Error(devctx::Errc::wrong_device,
                        std::string(what) + ": the stream belongs to " + std::string(devctx::to_string(of->api())) +
                            ":" + std::to_string(of->id()) + ", the context to " +
                            std::string(devctx::to_string(own->api())) + ":" + std::to_string(own->id()) +
                            ": use a stream of the context's device (Context.create_stream)");
  keep = nb::borrow(stream);
  return ref;
}

void bind_streams(nb::module_& m, std::shared_ptr<devctx::DeviceContext> (*context_of)(nb::handle)) {
  context_of_ = context_of;
  nb::class_<PyStream>(m, "Stream",
                       "A stream of a context's device (devctx::Stream, from Context.create_stream): work enqueued on "
                       "it runs in order, and may overlap with the context's own stream. Pass it as stream= to "
                       "Context.enqueue_function / bind_function; order it with enqueue_wait_for.")
      .def_prop_ro(
          "context", [](const PyStream& s) { return s.context; }, "The devctx.Context it was created from.")
      .def_prop_ro(
          "cuda_stream",
          [](const PyStream& s) { return reinterpret_cast<std::uintptr_t>(devctx::cuda_stream(s.stream)); },
          "The stream's cudaStream_t as an integer; devctx.Error (not_available) on the CPU backend.")
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
            devctx::StreamRef ref;
            std::shared_ptr<devctx::DeviceContext> of;
            if (!stream_of(other, ref, of))
              bad_type(std::string("Stream.enqueue_wait_for: other takes a devctx.Stream or a devctx.Context, not ") +
                       py_type(other));
            s.stream.enqueue_wait_for(ref);
          },
          nb::arg("other").none(),
          "Work enqueued on this stream after this call starts only once all work enqueued so far on other "
          "(a devctx.Stream, or a devctx.Context's stream) has finished. Returns at once.")
      .def("__repr__", [](const PyStream& s) {
        return "Stream(" + std::string(devctx::to_string(s.ctx->api())) + ":" + std::to_string(s.ctx->id()) + ")";
      });

  nb::object context = m.attr("Context");
  nb::setattr(context, "create_stream",
              nb::cpp_function(
                  [](nb::handle self, nb::handle priority) {
                    auto ctx = context_of_(self);
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
  nb::setattr(context, "enqueue_wait_for",
              nb::cpp_function(
                  [](nb::handle self, nb::handle other) {
                    auto ctx = context_of_(self);
                    if (!ctx) bad_type("enqueue_wait_for: self must be a devctx Context");
                    devctx::StreamRef ref;
                    std::shared_ptr<devctx::DeviceContext> of;
                    if (!stream_of(other, ref, of))
                      bad_type(std::string("Context.enqueue_wait_for: other takes a devctx.Stream or a devctx.Context, "
                                           "not ") +
                               py_type(other));
                    ctx->enqueue_wait_for(ref);
                  },
                  nb::scope(context), nb::name("enqueue_wait_for"), nb::is_method(), nb::arg("other").none(),
                  "Work enqueued on this context's stream after this call starts only once all work enqueued so far "
                  "on other (a devctx.Stream, or a devctx.Context's stream) has finished. Returns at once."));
}
