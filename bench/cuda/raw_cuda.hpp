// SPDX-License-Identifier: Apache-2.0
// bench/cuda/raw_cuda.hpp - what the CUDA benchmarks' raw baselines share: a checked CUDA call
// that ends the run with exit status 2 (CK), and the median of the trials.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace devctx_bench {

inline void cuda_check(cudaError_t s, const char* what) {
  if (s != cudaSuccess) {
    std::fprintf(stderr, "raw CUDA: %s failed: %s\n", what, cudaGetErrorString(s));
    std::exit(2);
  }
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace devctx_bench

#define CK(call) ::devctx_bench::cuda_check((call), #call)
