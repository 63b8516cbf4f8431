// SPDX-License-Identifier: Apache-2.0
// devctx/devctx.hpp - the umbrella header: everything a devctx program needs.
//
//   #include <devctx/devctx.hpp>
//
// Host side: DeviceContext (context.hpp), DeviceBuffer / HostBuffer (buffer.hpp), Stream and
// the enqueue verbs (stream.hpp), Event (event.hpp), Graph (graph.hpp), LaunchConfig / Dim3
// (launch.hpp), DeviceInfo (device_info.hpp), the backends' descriptions (backend.hpp), Error (error.hpp); native CUDA
// handles, foreign streams and DeviceView of foreign memory (interop.hpp, device_view.hpp). DLPack:
// <devctx/dlpack.hpp>, included separately (it needs <dlpack/dlpack.h>). Device side: thread_idx(), barrier(),
// DEVCTX_SHARED, atomics, warps (kernel.hpp), warp and block collectives (collectives.hpp), SIMD<T, N> vectors
// (simd.hpp), the block-level kernel form (block.hpp), devctx::printf (print.hpp) and LayoutTensor views (tensor.hpp;
// devctx::tensor(buffer, layout) on the host: device_tensor.hpp).
// DEVCTX_VERSION_MAJOR / _MINOR / _PATCH / _STRING (version.hpp).
#pragma once

#include <devctx/backend.hpp>
#include <devctx/block.hpp>
#include <devctx/buffer.hpp>
#include <devctx/collectives.hpp>
#include <devctx/comm.hpp>
#include <devctx/context.hpp>
#include <devctx/device_info.hpp>
#include <devctx/device_tensor.hpp>
#include <devctx/device_view.hpp>
#include <devctx/error.hpp>
#include <devctx/event.hpp>
#include <devctx/graph.hpp>
#include <devctx/interop.hpp>
#include <devctx/kernel.hpp>
#include <devctx/launch.hpp>
#include <devctx/module.hpp>
#include <devctx/print.hpp>
#include <devctx/simd.hpp>
#include <devctx/span.hpp>
#include <devctx/stream.hpp>
#include <devctx/trace.hpp>
#include <devctx/tensor.hpp>
#include <devctx/untyped_buffer.hpp>
#include <devctx/version.hpp>
