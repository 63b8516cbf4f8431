// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/config.hpp - the compiler annotations shared by host and device code
// (DEVCTX_HD, DEVCTX_KERNEL, DEVCTX_DEVICE, DEVCTX_IVDEP). The kernel-side functions of each
// backend are chosen per compiler pass in kernel.hpp (detail/device/cpu.hpp or cuda.hpp).
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/config.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#if defined(__CUDACC__)
#define DEVCTX_HD __host__ __device__
#define DEVCTX_HD_INLINE __host__ __device__ __forceinline__
#else
#define DEVCTX_HD
#define DEVCTX_HD_INLINE inline __attribute__((always_inline))
#endif

/// Marks a kernel: a function returning void, launched with DeviceContext::enqueue_function.
/// With nvcc it is compiled for both host (CPU backend) and device (CUDA backend).
#define DEVCTX_KERNEL DEVCTX_HD
/// Marks a helper callable from kernels (compiled for host and device).
#define DEVCTX_DEVICE DEVCTX_HD

// Marks a loop over the threads of a block: GPU threads between barriers are independent, so
// the compiler may vectorise without proving that their memory accesses do not overlap.
#if defined(__clang__)
#define DEVCTX_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define DEVCTX_IVDEP _Pragma("GCC ivdep")
#else
#define DEVCTX_IVDEP
#endif
