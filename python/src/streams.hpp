// SPDX-License-Identifier: Apache-2.0
// python/src/streams.hpp - devctx streams in Python (streams.cpp): devctx.Stream (an owned
// devctx::Stream, from Context.create_stream), Context.create_stream / enqueue_wait_for, and
// how a `stream=` argument names the stream a verb enqueues on.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>

#include <devctx/devctx.hpp>

/// The stream a `stream=` argument names for work of the context `ctx` (a devctx.Context):
/// None is the context's own stream; a devctx.Stream or a devctx.Context is that stream. `keep`
/// receives the Python object that owns it (to keep it alive while a bound launch refers to it).
/// Raises TypeError for anything else; devctx.Error (code 'wrong_device') for a stream of another
/// device. `what` names the verb in messages.
devctx::StreamRef stream_argument(nanobind::handle stream, nanobind::handle ctx, nanobind::object& keep, const char* what);

/// Binds devctx.Stream and Context.create_stream / Context.enqueue_wait_for onto `m` (whose
/// Context class is bound). `context_of` gives a devctx.Context's DeviceContext (null otherwise).
void bind_streams(nanobind::module_& m, std::shared_ptr<devctx::DeviceContext> (*context_of)(nanobind::handle));
