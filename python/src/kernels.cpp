// SPDX-License-Identifier: Apache-2.0
// python/src/kernels.cpp - the devctx kernels behind devctx.vector_add and devctx.softmax, and
// the host functions that check sizes and launch them (kernels.hpp). Ordinary devctx code: the
// same source runs on the CPU backend and, compiled by nvcc, on CUDA GPUs.
#include "kernels.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <devctx/devctx.hpp>

namespace devctx_python {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / devctx::warp_size;

template <class T>
DEVCTX_KERNEL void add_kernel(devctx::span<const T> a, devctx::span<const T> b, devctx::span<T> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a[i] + b[i];
}

template <class T>
DEVCTX_DEVICE T warp_max(T v) {
  for (unsigned mask = devctx::warp_size / 2; mask > 0; mask /= 2) {
    const T other = devctx::shuffle_xor(v, mask);
    v = other > v ? other : v;
  }
  return v;
}

/// Block-wide maximum or sum through one value per warp in `partial`; every thread gets it.
template <class T, bool Max>
DEVCTX_DEVICE T block_reduce(T v, T* partial) {
  const unsigned lane = devctx::lane_id(), warp = devctx::thread_idx().x / devctx::warp_size;
  v = Max ? warp_max(v) : devctx::warp_sum(v);
  if (lane == 0) partial[warp] = v;
  devctx::barrier();
  const T identity = Max ? -std::numeric_limits<T>::infinity() : T(0);
  v = lane < kWarps ? partial[lane] : identity;
  v = Max ? warp_max(v) : devctx::warp_sum(v);
  devctx::barrier();  // partial is reused by the next reduction
  return v;
}

/// One block of kThreads per row.
template <class T>
DEVCTX_KERNEL void softmax_kernel(devctx::span<const T> x_all, devctx::span<T> y_all, std::size_t cols) {
  DEVCTX_SHARED(T, partial, kWarps);
  const std::size_t start = std::size_t(devctx::block_idx().x) * cols;
  const auto x = x_all.subspan(start, cols);
  const auto y = y_all.subspan(start, cols);
  const unsigned t = devctx::thread_idx().x;
  T m = -std::numeric_limits<T>::infinity();
  for (std::size_t c = t; c < cols; c += kThreads) m = x[c] > m ? x[c] : m;
  m = block_reduce<T, true>(m, partial);
  T sum = 0;
  for (std::size_t c = t; c < cols; c += kThreads) {
    const T e = std::exp(x[c] - m);
    y[c] = e;
    sum += e;
  }
  sum = block_reduce<T, false>(sum, partial);
  const T inv = T(1) / sum;
  for (std::size_t c = t; c < cols; c += kThreads) y[c] *= inv;
}

[[noreturn]] void size_error(const std::string& message) { throw devctx::Error(devctx::Errc::size_mismatch, message); }

}  // namespace

template <class T>
void vector_add(devctx::StreamRef stream, devctx::DeviceSlice<const T> a, devctx::DeviceSlice<const T> b,
                devctx::DeviceSlice<T> out) {
  if (a.size() != out.size() || b.size() != out.size())
    size_error("vector_add: a has " + std::to_string(a.size()) + " elements, b " + std::to_string(b.size()) +
               " and out " + std::to_string(out.size()) + "; all three must be equal");
  if (out.size() == 0) return;
  const std::size_t blocks = (out.size() + kThreads - 1) / kThreads;
  stream.enqueue_function<add_kernel<T>>({.grid_dim = unsigned(blocks), .block_dim = kThreads}, a, b, out);
}

template <class T>
void softmax(devctx::StreamRef stream, devctx::DeviceSlice<const T> x, devctx::DeviceSlice<T> out, std::size_t rows,
             std::size_t cols) {
  if (cols != 0 && rows > std::numeric_limits<std::size_t>::max() / cols)
    size_error("softmax: " + std::to_string(rows) + " rows of " + std::to_string(cols) + " columns overflow");
  if (x.size() != rows * cols || out.size() != rows * cols)
    size_error("softmax: " + std::to_string(rows) + " rows of " + std::to_string(cols) + " columns need " +
               std::to_string(rows * cols) + " elements, but x has " + std::to_string(x.size()) + " and out " +
               std::to_string(out.size()));
  if (rows == 0 || cols == 0) return;
  if (rows > std::numeric_limits<unsigned>::max())
    size_error("softmax: " + std::to_string(rows) + " rows exceed one launch's grid");
  stream.enqueue_function<softmax_kernel<T>>({.grid_dim = unsigned(rows), .block_dim = kThreads}, x, out, cols);
}

template void vector_add<float>(devctx::StreamRef, devctx::DeviceSlice<const float>, devctx::DeviceSlice<const float>,
                                devctx::DeviceSlice<float>);
template void vector_add<double>(devctx::StreamRef, devctx::DeviceSlice<const double>, devctx::DeviceSlice<const double>,
                                 devctx::DeviceSlice<double>);
template void softmax<float>(devctx::StreamRef, devctx::DeviceSlice<const float>, devctx::DeviceSlice<float>, std::size_t,
                             std::size_t);
template void softmax<double>(devctx::StreamRef, devctx::DeviceSlice<const double>, devctx::DeviceSlice<double>,
                              std::size_t, std::size_t);

}  // namespace devctx_python
