// SPDX-License-Identifier: Apache-2.0
// python/src/streams.hpp - devctx streams in Python (streams.cpp): devctx.Stream (an owned
// devctx::Stream, from Context.create_stream, or a foreign CUDA stream wrapped by
// Context.wrap_stream), Context.create_stream / wrap_stream / enqueue_wait_for, and how a
// `stream=` argument names the stream a verb enqueues on.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>

#include <devctx/devctx.hpp>

/// What streams.cpp needs from module.cpp's Context type.
struct StreamHooks {
  /// The DeviceContext of a devctx.Context (valid while that object lives), or null when `obj`
  /// is not one. No reference count is touched: the launch verbs call it on every call.
  devctx::DeviceContext* (*context_ptr)(nanobind::handle obj);
  /// The same, shared (for a devctx.Stream, which keeps its context's DeviceContext).
  std::shared_ptr<devctx::DeviceContext> (*context_of)(nanobind::handle obj);
};

/// The stream a `stream=` argument names for work of the context `ctx` (a devctx.Context):
/// None is the context's own stream; a devctx.Stream or a devctx.Context is that stream; a
/// foreign CUDA stream (an int cudaStream_t, an object with __cuda_stream__, a torch.cuda.Stream
/// or a cupy.cuda.Stream) is wrapped on ctx's device for this call (wrap_cuda_stream). `keep`
/// receives the Python object that owns the stream (the devctx.Stream made for a foreign one):
/// the StreamRef is valid while it lives. Raises TypeError for anything else; devctx.ArgumentError
/// for a handle that is no stream (0, negative); devctx.Error (code 'wrong_device') for a stream
/// of another device, ('not_available') for a CUDA stream given to a CPU context. `what` names
/// the verb in messages.
devctx::StreamRef stream_argument(nanobind::handle stream, nanobind::handle ctx, nanobind::object& keep, const char* what);

/// Binds devctx.Stream and Context.create_stream / wrap_stream / enqueue_wait_for onto `m`
/// (whose Context class is bound).
void bind_streams(nanobind::module_& m, const StreamHooks& hooks);
