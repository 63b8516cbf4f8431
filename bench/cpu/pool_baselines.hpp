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
/// A parallel region that does nothing (but cannot be elided), with every OpenMP thread or with
/// `threads` of them.
void omp_empty_region();
void omp_empty_region(int threads);
/// memcpy / memset, each thread its contiguous share.
void omp_memcpy(void* dst, const void* src, std::size_t bytes);
void omp_memset(void* dst, int value, std::size_t bytes);

// handoff_floor.cpp (no OpenMP, no devctx): median microseconds of one round trip between two
// threads, over `batches` batches of `per_batch` round trips each.
/// Both threads spin on one cache line (std::atomic).
double spin_round_trip_us(int batches, int per_batch);
/// Both threads sleep on condition variables (a mutex and two std::condition_variable).
double sleep_round_trip_us(int batches, int per_batch);

}  // namespace pool_bench
