// SPDX-License-Identifier: Apache-2.0
// A shared module with kernels, linked against devctx and loaded only with dlopen (by loader.cpp),
// the way a Python extension is. Its kernel reaches barriers, so the CPU backend runs its threads
// as fibers and reads its thread-local state from inside the module and from libdevctx.
#include <cstdio>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

namespace {

constexpr unsigned kBlock = 64;

// out[i] = the sum of in over i's block, computed by a tree of barrier-separated steps.
DEVCTX_KERNEL void block_sums(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, partial, kBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = std::size_t(devctx::block_idx().x) * kBlock + t;
  partial[t] = in[i];
  devctx::barrier();
  for (unsigned stride = kBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    devctx::barrier();
  }
  out[i] = partial[0];
}

}  // namespace

/// Runs block_sums on the CPU backend over random input, checks every element; 0 when right.
extern "C" __attribute__((visibility("default"))) int devctx_consumer_plugin_run() {
  try {
    devctx::DeviceContext ctx{devctx::Api::cpu};
    std::mt19937 random{std::random_device{}()};
    const std::size_t blocks = 20 + random() % 20;
    const std::size_t n = blocks * kBlock;
    std::vector<int> input(n), output(n, -1);
    for (auto& x : input) x = int(random() % 1000);
    auto d_in = ctx.enqueue_create_buffer<int>(n);
    auto d_out = ctx.enqueue_create_buffer<int>(n);
    ctx.enqueue_copy(d_in, std::span<const int>(input));
    ctx.enqueue_function<block_sums>({.grid_dim = unsigned(blocks), .block_dim = kBlock}, d_in, d_out);
    ctx.enqueue_copy(std::span<int>(output), d_out);
    ctx.synchronize();
    for (std::size_t b = 0; b < blocks; ++b) {
      int sum = 0;
      for (unsigned t = 0; t < kBlock; ++t) sum += input[b * kBlock + t];
      for (unsigned t = 0; t < kBlock; ++t)
        if (output[b * kBlock + t] != sum) {
          std::printf("FAILED plugin block_sums at %zu: %d, expected %d\n", b * kBlock + t, output[b * kBlock + t], sum);
          return 1;
        }
    }
    return 0;
  } catch (const devctx::Error& e) {
    std::printf("FAILED plugin: devctx error: %s\n", e.what());
    return 1;
  }
}
