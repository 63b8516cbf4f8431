// SPDX-License-Identifier: Apache-2.0
// bench/cpu/pool_baselines.hpp - the OpenMP baselines of devctx_bench_cpu_pool, in their own file
// so that the benchmark's kernel source (compiled by nvcc in a CUDA build) needs no OpenMP.
#pragma once

#include <cstddef>

namespace pool_bench {

/// OpenMP's thread count.
int omp_threads();
/// a, b, c = va, vb, vc, first touched by the threads that later add them.
void omp_fill3(float* a, float* b, float* c, std::size_t n, float va, float vb, float vc);
/// c = a + b, `parallel for simd`, static schedule.
void omp_vector_add(const float* a, const float* b, float* c, std::size_t n);
/// A parallel region that does nothing (but cannot be elided).
void omp_empty_region();
/// memcpy / memset, each thread its contiguous share.
void omp_memcpy(void* dst, const void* src, std::size_t bytes);
void omp_memset(void* dst, int value, std::size_t bytes);

}  // namespace pool_bench
