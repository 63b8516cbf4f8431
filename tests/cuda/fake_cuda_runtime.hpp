// SPDX-License-Identifier: Apache-2.0
// tests/cuda/fake_cuda_runtime.hpp - the controls of the host-side fake of the CUDA runtime
// calls the staging engine makes (fake_cuda_runtime.cpp).
#pragma once

/// The `calls`-th cudaMemcpyAsync from now (0: the next one) fails with cudaErrorInvalidValue;
/// -1: none fails.
void fake_cuda_fail_after(long calls);
/// How many cudaMemcpyAsync calls were made so far.
long fake_cuda_memcpy_calls();
