// SPDX-License-Identifier: Apache-2.0
// python/src/kernels.hpp - the devctx kernels the Python module offers, as plain host functions
// that launch them on a stream. This is all a C++ author writes to ship devctx kernels to
// Python: kernels.cpp holds the kernels (compiled by devctx_add_kernels, so nvcc when devctx has
// CUDA), and the binding (module.cpp) only converts Python objects and calls these. Each checks
// its sizes and throws devctx::Error (size_mismatch) when they do not fit; nothing is enqueued then.
#pragma once

#include <cstddef>

#include <devctx/buffer.hpp>
#include <devctx/device_info.hpp>
#include <devctx/stream.hpp>

namespace devctx_python {

/// out[i] = a[i] + b[i]; the three sizes must be equal. T: float or double.
template <class T>
void vector_add(devctx::StreamRef stream, devctx::DeviceSlice<const T> a, devctx::DeviceSlice<const T> b,
                devctx::DeviceSlice<T> out);

/// How softmax spreads rows over threads: `threads_per_row` threads share a row (1, 2, 4, 8, 16
/// or 32: that many lanes of a warp, combined by shuffles; or 256: a whole block per row, combined
/// through shared memory), in blocks of `block_dim` threads.
struct SoftmaxShape {
  unsigned threads_per_row;
  unsigned block_dim;
};

/// The launch shape that fits `rows` rows of `cols` elements on a backend. CPU backend: one
/// thread per row (no barrier or warp operation, so each block runs as a plain loop), blocks of
/// up to 256 rows (fewer when rows are few). GPU: nextpow2(cols) lanes of a warp per row for rows
/// of up to 32 elements, a warp per row for rows of up to 1024 elements when there are at least
/// 2048 rows (several rows per block of 256); else a block of 256 threads per row.
SoftmaxShape softmax_shape(devctx::Api api, std::size_t rows, std::size_t cols);

/// Row-wise softmax of `rows` rows of `cols` elements: out[r][c] = exp(x[r][c] - max_r) / sum_r.
/// x and out hold rows * cols elements. T: float or double. `shape` as softmax_shape gives (any
/// valid shape gives the same results up to rounding); devctx::Error (invalid_argument) for one
/// that is not valid, before anything is enqueued.
template <class T>
void softmax(devctx::StreamRef stream, devctx::DeviceSlice<const T> x, devctx::DeviceSlice<T> out, std::size_t rows,
             std::size_t cols, SoftmaxShape shape);

}  // namespace devctx_python
