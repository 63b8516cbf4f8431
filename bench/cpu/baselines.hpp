// SPDX-License-Identifier: Apache-2.0
// Baseline implementations for the CPU kernel benchmark: plain OpenMP code
// written the way one would write it for a CPU, and an OpenCL runner whose
// kernels are written the way one would write them for a GPU.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace bench {

// K2 sums consecutive blocks of this many elements; it is also the OpenCL
// work-group size of K1 and K2.
inline constexpr std::size_t reduce_block = 256;

inline constexpr std::size_t block_count(std::size_t n) { return (n + reduce_block - 1) / reduce_block; }

void omp_vector_add(const float* a, const float* b, float* out, std::size_t n);

// block_sums must hold block_count(n) floats; a short last block sums what it has.
void omp_block_reduce(const float* in, float* block_sums, std::size_t n);

// Row-major n x n: C = A * B.
void omp_matmul(const float* A, const float* B, float* C, unsigned n);

// Owns one OpenCL context/queue and the device buffers of the three kernels.
// upload_* creates the buffers (once per size) and copies inputs; run_* only
// enqueues the kernel and waits for it, so timing run_* measures the kernel
// alone; download_* copies the result back. Errors after create() throw
// std::runtime_error.
class OpenClRunner {
 public:
  // Returns nullptr and sets *why_not when OpenCL support was not compiled
  // in, no platform/device exists, or the kernels fail to build.
  static std::unique_ptr<OpenClRunner> create(std::string* why_not);

  ~OpenClRunner();
  OpenClRunner(const OpenClRunner&) = delete;
  OpenClRunner& operator=(const OpenClRunner&) = delete;

  std::string device_name() const;
  std::string platform_version() const;

  void upload_k1(const float* a, const float* b, std::size_t n);
  void run_k1();
  void download_k1(float* out);

  void upload_k2(const float* in, std::size_t n);
  void run_k2();
  void download_k2(float* block_sums);

  void upload_k3(const float* A, const float* B, unsigned n);
  void run_k3();
  void download_k3(float* C);

 private:
  struct State;
  explicit OpenClRunner(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace bench
