// SPDX-License-Identifier: Apache-2.0
// devctx/interop.hpp - sharing streams, events and memory with other GPU code (cuBLAS, CUB,
// NCCL, PyTorch, ...): the native CUDA handles of devctx's streams and events, devctx streams
// over CUDA streams made elsewhere, views of device memory allocated elsewhere. (A buffer's
// memory goes to another owner with DeviceBuffer::release(); DLPack is <devctx/dlpack.hpp>.)
// docs/interop.md says who owns what and what is synchronous.
//
// No CUDA header is included, yet the handles are CUDA's own types: cudaStream_t is a pointer
// to the opaque struct CUstream_st (so is the driver API's CUstream), and cudaEvent_t one to
// CUevent_st. Declaring the two structs gives the very same types, so a CUDA program passes its
// cudaStream_t straight in and gets one straight back, and a program without CUDA still
// compiles this header.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/context.hpp>
#include <devctx/detail/base/seam.hpp>
#include <devctx/device_info.hpp>
#include <devctx/device_view.hpp>
#include <devctx/event.hpp>
#include <devctx/stream.hpp>

struct CUstream_st;
struct CUevent_st;

namespace devctx {

/// CUDA's cudaStream_t (and CUstream): the same type.
using CudaStreamHandle = CUstream_st*;
/// CUDA's cudaEvent_t (and CUevent): the same type.
using CudaEventHandle = CUevent_st*;

/// The device `stream` runs on (a DeviceContext, a Stream, any StreamRef): its backend `api`,
/// its `id` and its limits. On a CUDA device `id` is the CUDA runtime's device ordinal, as
/// cudaSetDevice takes it. Throws devctx::Error (invalid_handle) for a moved-from stream.
[[nodiscard]] inline const DeviceInfo& device_info(const StreamRef& stream) {
  return detail::queue_device_info(detail::Access::queue(stream));
}

/// The CUDA device ordinal of `stream`'s device. Throws devctx::Error (not_available) when
/// the stream is not on a CUDA device.
[[nodiscard]] inline int cuda_device(const StreamRef& stream) {
  (void)detail::queue_native_stream(detail::Access::queue(stream), "cuda_device");
  return device_info(stream).id;
}

/// The cudaStream_t behind a DeviceContext's default stream or a Stream. It stays devctx's:
/// valid while that context or Stream lives; never destroy it. Work enqueued on it by other
/// libraries runs in order with devctx's work on the stream (cuBLAS, CUB and NCCL calls given
/// this stream need no synchronize() around them). It is a non-blocking stream: it does not
/// synchronize with CUDA's legacy default stream. Throws devctx::Error (not_available) on the
/// CPU backend, which has no native stream, and (invalid_handle) for a moved-from stream.
[[nodiscard]] inline CudaStreamHandle cuda_stream(const StreamRef& stream) {
  return static_cast<CudaStreamHandle>(detail::queue_native_stream(detail::Access::queue(stream), "cuda_stream"));
}

/// The cudaEvent_t behind an event (recorded by record_event()). It stays devctx's: valid
/// while any copy of the Event lives; never destroy or re-record it. Other code may wait for it
/// (cudaStreamWaitEvent, cudaEventSynchronize). Throws devctx::Error (not_available) for an
/// event of the CPU backend and (invalid_handle) for a default-constructed Event.
[[nodiscard]] inline CudaEventHandle cuda_event(const Event& event) {
  return static_cast<CudaEventHandle>(detail::event_native_handle(event.impl()));
}

/// A devctx Stream over a CUDA stream made elsewhere (by PyTorch, CuPy, your own
/// cudaStreamCreate), with every enqueue verb: buffers, copies, memsets, kernels, events.
/// Non-owning: it never destroys `stream`, which must outlive the Stream and every buffer
/// allocated on it (their frees are enqueued on it). `context` must be on the CUDA device the
/// stream belongs to; context.synchronize() waits for this stream too (and so for the other
/// library's work on it). The special handles cudaStreamLegacy and cudaStreamPerThread are
/// accepted; a null stream is refused (devctx::Error invalid_argument): which stream 0 means
/// depends on how the caller was compiled, so name one of the two explicitly.
/// Throws devctx::Error (not_available) on the CPU backend, (wrong_device) for a stream of
/// another device.
[[nodiscard]] inline Stream wrap_cuda_stream(DeviceContext& context, CudaStreamHandle stream) {
  return detail::context_wrap_native_stream(context, stream);
}

/// A DeviceView of `count` elements at `data`: device memory that another library allocated,
/// on the device of `stream`. It is checked first, and nothing is kept when a check fails (the
/// caller still owns `on_release`, which is not called then): `data` must be non-null when
/// count > 0 and aligned for T, and the byte count must not overflow (invalid_argument). On a
/// CUDA device the pointer must be device (or managed) memory of that very device, with all
/// `count` elements inside one allocation: host memory is refused (invalid_argument), memory of
/// another GPU too (wrong_device). On the CPU backend, whose device memory is host memory, any
/// host address passes.
///
/// The view never frees the memory. When it is dropped, `on_release` (if given) runs once the
/// work devctx enqueued on the memory has finished, on every devctx stream that used it: at the
/// next synchronize() of that device's work (or the creation of another view there, or a
/// context's end) after that point, on the thread making that call; never inside a CUDA
/// callback. The caller keeps the memory valid until then.
template <class T>
[[nodiscard]] DeviceView<T> wrap_device_memory(const StreamRef& stream, T* data, std::size_t count,
                                               std::function<void()> on_release = {}) {
  auto record = detail::queue_wrap_memory(detail::Access::queue(stream), data, count, sizeof(T), alignof(T),
                                          std::move(on_release));
  return detail::Access::make<DeviceView<T>>(detail::Access::make<Buffer>(std::move(record)), data, count);
}

}  // namespace devctx
