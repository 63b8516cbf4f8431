// SPDX-License-Identifier: Apache-2.0
// python/src/kernels.cpp - the devctx kernels behind devctx.vector_add and devctx.softmax, and
// the host functions that check sizes and launch them (kernels.hpp). Ordinary devctx code: the
// same source runs on the CPU backend and, compiled by nvcc, on CUDA GPUs.
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <devctx/devctx.hpp>

namespace devctx_python {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / devctx::warp_size;
constexpr unsigned kChunk = 256;
constexpr std::size_t kWarpRowsMin = 2048;  // fewer rows of more than 32 elements: a block per row on a GPU

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

/// One block of kThreads per row: for long rows (kernels.hpp says when).
template <class T>
DEVCTX_KERNEL void softmax_block_kernel(devctx::span<const T> x_all, devctx::span<T> y_all, std::size_t cols) {
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

/// Maximum (Max) or sum of `v` over the `group` lanes of a row's group (group: a power of two
/// up to the warp size; the groups tile the warp). An xor butterfly: every lane of the group ends
/// with the same value, and with group == 1 no warp operation is reached at all (the CPU backend
/// then runs the block as a plain loop).
template <class T, bool Max>
DEVCTX_DEVICE T group_reduce(T v, unsigned group) {
  for (unsigned mask = group / 2; mask > 0; mask /= 2) {
    const T other = devctx::shuffle_xor(v, mask);
    v = Max ? (other > v ? other : v) : v + other;
  }
  return v;
}

/// `group` threads per row, blockDim.x / group rows per block: for short rows. Threads of a row
/// past the last one still take part in the group's shuffles (every lane of a warp must), but
/// read and write nothing.
template <class T>
DEVCTX_KERNEL void softmax_group_kernel(devctx::span<const T> x_all, devctx::span<T> y_all, std::size_t rows,
                                        std::size_t cols, unsigned group) {
  const unsigned t = devctx::thread_idx().x;
  const std::size_t row = std::size_t(devctx::block_idx().x) * (devctx::block_dim().x / group) + t / group;
  const std::size_t lane = t % group;
  const bool active = row < rows;
  const std::size_t start = active ? row * cols : 0;
  const std::size_t end = active ? start + cols : 0;
  T m = -std::numeric_limits<T>::infinity();
  for (std::size_t i = start + lane; i < end; i += group) m = x_all[i] > m ? x_all[i] : m;
  m = group_reduce<T, true>(m, group);
  // Summed in chunks of kChunk elements per lane, then the chunks' sums: a long row (one thread
  // per row on the CPU) keeps the rounding error of a block's 256 partial sums.
  T sum = 0;
  for (std::size_t c = start + lane; c < end; c += std::size_t(kChunk) * group) {
    const std::size_t chunk_end = end - c > std::size_t(kChunk) * group ? c + std::size_t(kChunk) * group : end;
    T part = 0;
    for (std::size_t i = c; i < chunk_end; i += group) {
      const T e = std::exp(x_all[i] - m);
      y_all[i] = e;
      part += e;
    }
    sum += part;
  }
  sum = group_reduce<T, false>(sum, group);
  const T inv = T(1) / sum;
  for (std::size_t i = start + lane; i < end; i += group) y_all[i] *= inv;
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

SoftmaxShape softmax_shape(devctx::Api api, std::size_t rows, std::size_t cols) {
  if (api == devctx::Api::cpu) {
    // The CPU backend runs a block as a plain loop unless a thread reaches a barrier or a warp
    // operation, and then pays a fiber switch per thread for each: one thread per row (no
    // exchange at all) is the fastest there for every shape, since a block runs on one core
    // anyway. Blocks of up to 256 rows, smaller when rows are few, so that every core gets some.
    const std::size_t per_block = std::min<std::size_t>(kThreads, std::max<std::size_t>(1, (rows + 63) / 64));
    return {1, unsigned(per_block)};
  }
  // A GPU: as many lanes as the row has elements up to a warp (the warp's shuffles, no barrier,
  // several rows per block); a whole block per row for rows longer than 32 elements per lane,
  // and for rows of more than a warp's elements when there are too few rows to fill the GPU
  // with warps (on the H200, (512, 1000) took 19 us with a warp per row, 13 us with a block).
  if (cols > 1024 || (cols > devctx::warp_size && rows < kWarpRowsMin)) return {kThreads, kThreads};
  unsigned group = 1;
  while (group < cols && group < devctx::warp_size) group *= 2;
  return {group, kThreads};
}

template <class T>
void softmax(devctx::StreamRef stream, devctx::DeviceSlice<const T> x, devctx::DeviceSlice<T> out, std::size_t rows,
             std::size_t cols, SoftmaxShape shape) {
  if (cols != 0 && rows > std::numeric_limits<std::size_t>::max() / cols)
    size_error("softmax: " + std::to_string(rows) + " rows of " + std::to_string(cols) + " columns overflow");
  if (x.size() != rows * cols || out.size() != rows * cols)
    size_error("softmax: " + std::to_string(rows) + " rows of " + std::to_string(cols) + " columns need " +
               std::to_string(rows * cols) + " elements, but x has " + std::to_string(x.size()) + " and out " +
               std::to_string(out.size()));
  const unsigned g = shape.threads_per_row, b = shape.block_dim;
  const bool whole_block = g == kThreads && b == kThreads;
  const bool groups = g != 0 && g <= devctx::warp_size && (g & (g - 1)) == 0 && b != 0 && b <= 1024 &&
                      (g == 1 || b % devctx::warp_size == 0);
  if (!whole_block && !groups)
    throw devctx::Error(devctx::Errc::invalid_argument,
                        "softmax: " + std::to_string(g) + " threads per row in blocks of " + std::to_string(b) +
                            ": it takes 1 thread per row in blocks of 1..1024, 2, 4, 8, 16 or 32 in blocks of a "
                            "multiple of 32 up to 1024, or " +
                            std::to_string(kThreads) + " in blocks of " + std::to_string(kThreads));
  if (rows == 0 || cols == 0) return;
  const std::size_t rows_per_block = whole_block ? 1 : b / g;
  const std::size_t blocks = rows / rows_per_block + (rows % rows_per_block != 0);
  if (blocks > std::numeric_limits<unsigned>::max())
    size_error("softmax: " + std::to_string(rows) + " rows exceed one launch's grid");
  if (whole_block)
    stream.enqueue_function<softmax_block_kernel<T>>({.grid_dim = unsigned(blocks), .block_dim = b}, x, out, cols);
  else
    stream.enqueue_function<softmax_group_kernel<T>>({.grid_dim = unsigned(blocks), .block_dim = b}, x, out, rows, cols, g);
}

template void vector_add<float>(devctx::StreamRef, devctx::DeviceSlice<const float>, devctx::DeviceSlice<const float>,
                                devctx::DeviceSlice<float>);
template void vector_add<double>(devctx::StreamRef, devctx::DeviceSlice<const double>,
                                 devctx::DeviceSlice<const double>, devctx::DeviceSlice<double>);
template void softmax<float>(devctx::StreamRef, devctx::DeviceSlice<const float>, devctx::DeviceSlice<float>,
                             std::size_t, std::size_t, SoftmaxShape);
template void softmax<double>(devctx::StreamRef, devctx::DeviceSlice<const double>, devctx::DeviceSlice<double>,
                              std::size_t, std::size_t, SoftmaxShape);

}  // namespace devctx_python
