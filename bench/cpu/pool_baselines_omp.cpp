// SPDX-License-Identifier: Apache-2.0
// bench/cpu/pool_baselines_omp.cpp - the OpenMP side of devctx_bench_cpu_pool (pool_bench.cpp),
// compiled by the host compiler alone: vector add, an empty parallel region, and memcpy/memset
// split evenly over the OpenMP threads.
#include "pool_baselines.hpp"

#include <omp.h>

#include <cstdlib>
#include <cstring>

namespace pool_bench {

int omp_threads() { return omp_get_max_threads(); }

void omp_fill3(float* a, float* b, float* c, std::size_t n, float va, float vb, float vc) {
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = va;
    b[i] = vb;
    c[i] = vc;
  }
}

void omp_vector_add(const float* a, const float* b, float* c, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void omp_empty_region() {
#pragma omp parallel
  {
    if (omp_get_thread_num() < 0) std::abort();  // not empty: the region cannot be elided
  }
}

void omp_empty_region(int threads) {
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_thread_num() < 0) std::abort();
  }
}

namespace {
/// [begin, end) of `bytes` for the calling thread of a parallel region.
void share(std::size_t bytes, std::size_t& begin, std::size_t& end) {
  const auto t = std::size_t(omp_get_thread_num()), nt = std::size_t(omp_get_num_threads());
  begin = bytes * t / nt;
  end = bytes * (t + 1) / nt;
}
}  // namespace

void omp_memcpy(void* dst, const void* src, std::size_t bytes) {
#pragma omp parallel
  {
    std::size_t begin = 0, end = 0;
    share(bytes, begin, end);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

void omp_memset(void* dst, int value, std::size_t bytes) {
#pragma omp parallel
  {
    std::size_t begin = 0, end = 0;
    share(bytes, begin, end);
    std::memset(static_cast<char*>(dst) + begin, value, end - begin);
  }
}

}  // namespace pool_bench
