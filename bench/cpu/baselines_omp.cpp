// SPDX-License-Identifier: Apache-2.0
#include "baselines.hpp"

#include <algorithm>

namespace bench {

void omp_vector_add(const float* a, const float* b, float* out, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = a[i] + b[i];
  }
}

void omp_block_reduce(const float* in, float* block_sums, std::size_t n) {
  const std::size_t blocks = block_count(n);
#pragma omp parallel for schedule(static)
  for (std::size_t blk = 0; blk < blocks; ++blk) {
    const float* p = in + blk * reduce_block;
    const std::size_t len = std::min(reduce_block, n - blk * reduce_block);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::size_t i = 0; i < len; ++i) {
      sum += p[i];
    }
    block_sums[blk] = sum;
  }
}

void omp_matmul(const float* A, const float* B, float* C, unsigned n) {
  // i-k-j order: the inner loop walks a row of B and a row of C with unit
  // stride, so it vectorises and the C row stays in L1 across the k loop.
  const std::size_t dim = n;
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < dim; ++i) {
    float* c_row = C + i * dim;
    std::fill(c_row, c_row + dim, 0.0f);
    for (std::size_t k = 0; k < dim; ++k) {
      const float a_ik = A[i * dim + k];
      const float* b_row = B + k * dim;
#pragma omp simd
      for (std::size_t j = 0; j < dim; ++j) {
        c_row[j] += a_ik * b_row[j];
      }
    }
  }
}

}  // namespace bench
