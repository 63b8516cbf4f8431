// SPDX-License-Identifier: Apache-2.0
// devctx/print.hpp - devctx::printf: formatted output from kernels, on every backend.
//
//   DEVCTX_KERNEL void k(devctx::span<const float> x) {
//     devctx::printf("block %u thread %u: %f\n", devctx::block_idx().x, devctx::thread_idx().x, double(x[0]));
//   }
//
// The format is C's printf format; pass float as double and 64-bit integers with %ll.. /
// %zu as C requires (CUDA's device printf has the same rules). What each backend does:
// - CUDA: the device printf. Output is buffered on the GPU and written to stdout at the next
//   synchronizing call (synchronize(), a blocking copy, ...); a launch's lines from different
//   threads come in no set order; the buffer holds 1 MiB by default (cudaLimitPrintfFifoSize).
// - CPU: written to stdout at the call, each call's text whole (stdio locks the stream for the
//   call, so the text of two calls never interleaves). Within a block the lines come in the
//   order the block's threads run: thread order (x fastest) for a block without barriers, or
//   phase by phase in the block-level form; blocks run on several worker threads at once, so the
//   lines of different blocks interleave in no set order, as on a GPU.
// Returns the number of characters written, or a negative value on an error (as printf does).
// In checking mode's second, reverse-order run of a block nothing is printed (and 0 returned).
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#if !defined(__CUDACC_RTC__)  // NVRTC: printf is built in (detail/base/std.hpp)
#include <cstdio>
#endif

#include <devctx/detail/base/config.hpp>
#if !defined(__CUDA_ARCH__)
#include <devctx/detail/base/cpu_state.hpp>
#endif

namespace devctx {

// The format is the caller's, as for printf itself: there is no literal to check here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
template <class... A>
DEVCTX_HD int printf(const char* format, A... args) {
#if defined(__CUDA_ARCH__)
  return ::printf(format, args...);
#else
  // Checking mode runs some blocks a second time (docs/checking.md): only the first run prints.
  if (detail::cpu::in_checked_launch() && detail::cpu::checked_threads_reversed()) return 0;
  return std::printf(format, args...);
#endif
}
#pragma GCC diagnostic pop

}  // namespace devctx
