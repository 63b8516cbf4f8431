// SPDX-License-Identifier: Apache-2.0
// python/src/kernels.hpp - the devctx kernels the Python module offers, as plain host functions
// that launch them on a stream. This is all a C++ author writes to ship devctx kernels to
// Python: kernels.cpp holds the kernels (compiled by devctx_add_kernels, so nvcc when devctx has
// CUDA), and the binding (module.cpp) only converts Python objects and calls these. Each checks
// its sizes and throws devctx::Error (size_mismatch) when they do not fit; nothing is enqueued then.
#pragma once

#include <cstddef>

#include <devctx/buffer.hpp>
#include <devctx/stream.hpp>

namespace devctx_python {

/// out[i] = a[i] + b[i]; the three sizes must be equal. T: float or double.
template <class T>
void vector_add(devctx::StreamRef stream, devctx::DeviceSlice<const T> a, devctx::DeviceSlice<const T> b,
                devctx::DeviceSlice<T> out);

/// Row-wise softmax of `rows` rows of `cols` elements: out[r][c] = exp(x[r][c] - max_r) / sum_r.
/// x and out hold rows * cols elements. T: float or double.
template <class T>
void softmax(devctx::StreamRef stream, devctx::DeviceSlice<const T> x, devctx::DeviceSlice<T> out, std::size_t rows,
             std::size_t cols);

}  // namespace devctx_python
