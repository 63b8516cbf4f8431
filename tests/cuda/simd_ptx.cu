// SPDX-License-Identifier: Apache-2.0
// tests/cuda/simd_ptx.cu - compiled to PTX by the ctest simd_one_instruction (CUDA builds):
// devctx::SIMD<float, 4> and SIMD<double, 2> must load and store as one 16-byte instruction each
// (ld.global.v4.f32 / st.global.v4.f32, ld.global.v2.f64 / st.global.v2.f64), the reason the
// type is aligned to its size. Only compiled, never run.
#include <devctx/devctx.hpp>

__global__ void devctx_simd_float4(const devctx::SIMD<float, 4>* in, devctx::SIMD<float, 4>* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const devctx::SIMD<float, 4> q = in[i];
  out[i] = q * 2.0f + q;
}

__global__ void devctx_simd_double2(const devctx::SIMD<double, 2>* in, devctx::SIMD<double, 2>* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const devctx::SIMD<double, 2> q = in[i];
  out[i] = q - 1.0;
}

// Operators take their vectors by value: an expression on in[i] loads it whole too.
__global__ void devctx_simd_float4_in_place(const devctx::SIMD<float, 4>* in, devctx::SIMD<float, 4>* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i] * 3.0f;
}
