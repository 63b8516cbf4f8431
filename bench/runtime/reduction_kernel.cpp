// SPDX-License-Identifier: Apache-2.0
// bench/runtime/reduction_kernel.cpp - the CUDA-style reduction (shared memory, barriers in a
// loop) runtime_kernels_bench runs twice from this one file: compiled in through
// devctx_add_kernels (the fission translator gives it a block-level twin where the build has
// the translator), and compiled at run time by Module::from_file with
// -DDEVCTX_BENCH_RUNTIME_SOURCE, which leaves out the launcher below (the part only the program
// needs).
#if defined(DEVCTX_BENCH_RUNTIME_SOURCE)
#include <devctx/kernel.hpp>
#else
// <devctx/devctx.hpp> and the launcher's declaration. (A kernel file that includes only
// <devctx/kernel.hpp> is not translated at build time: the twins' runtime header comes with the
// launch headers. Runtime compiles include it themselves: src/runtime/fission.hpp's prelude.)
#include "compiled_in.hpp"
#endif

DEVCTX_KERNEL void bench_block_sum(devctx::span<const float> in, devctx::span<float> out) {
  DEVCTX_SHARED(float, tile, 256);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  tile[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned s = devctx::block_dim().x / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = tile[0];
}

#if !defined(DEVCTX_BENCH_RUNTIME_SOURCE)
void launch_block_sum(devctx::StreamRef s, const devctx::LaunchConfig& c, const devctx::DeviceBuffer<float>& in,
                      devctx::DeviceBuffer<float>& out) {
  s.enqueue_function<bench_block_sum>(c, in, out);
}
#endif
