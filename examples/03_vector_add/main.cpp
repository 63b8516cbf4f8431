// SPDX-License-Identifier: Apache-2.0
// Lesson 3 - writing a kernel: the vector add of the devctx API contract.
//
// A kernel is a plain function marked DEVCTX_KERNEL. Every thread of the launch runs it once;
// devctx::global_idx().x tells a thread which element is its own. The launch rounds the
// thread count up to whole blocks, so the last block has threads past the end of the data:
// the `if (i < out.size())` guard keeps them from writing out of bounds.
//
//   ./03_vector_add [n]        n elements (default 1000000)
#include <cstdio>
#include <cstdlib>
#include <random>

#include <devctx/devctx.hpp>

DEVCTX_KERNEL void vector_add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a[i] + b[i];
}

int main(int argc, char** argv) try {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;  // not a multiple of the block size

  devctx::DeviceContext ctx;  // DEVCTX_DEVICE if set, else the first GPU, else the CPU
  std::printf("device: %s:%d  %s\n", devctx::to_string(ctx.api()), ctx.id(), ctx.name().c_str());

  // Host memory (fit for fast transfers) and device memory are separate: allocate both.
  auto h_a = ctx.enqueue_create_host_buffer<float>(n);
  auto h_b = ctx.enqueue_create_host_buffer<float>(n);
  auto h_out = ctx.enqueue_create_host_buffer<float>(n);
  auto d_a = ctx.enqueue_create_buffer<float>(n);
  auto d_b = ctx.enqueue_create_buffer<float>(n);
  auto d_out = ctx.enqueue_create_buffer<float>(n);
  ctx.synchronize();  // the host buffers exist once this returns

  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    h_a[i] = dist(rng);
    h_b[i] = dist(rng);
  }

  ctx.enqueue_copy(d_a, h_a);  // upload
  ctx.enqueue_copy(d_b, h_b);
  const unsigned block = 256;
  const auto blocks = unsigned((n + block - 1) / block);  // round up: cover every element
  ctx.enqueue_function<vector_add>({.grid_dim = blocks, .block_dim = block}, d_a, d_b, d_out);
  ctx.enqueue_copy(h_out, d_out);  // download
  ctx.synchronize();               // h_out is valid only after this

  std::printf("launched %u blocks x %u threads = %llu threads for %zu elements\n", blocks, block,
              static_cast<unsigned long long>(blocks) * block, n);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (h_out[i] != h_a[i] + h_b[i]) {
      if (wrong++ < 5) std::printf("  out[%zu] = %g, expected %g\n", i, h_out[i], h_a[i] + h_b[i]);
    }
  }
  if (wrong != 0) {
    std::printf("FAILED: %zu of %zu elements differ from the host's a + b\n", wrong, n);
    return 1;
  }
  std::printf("out[0] = %g + %g = %g\n", h_a[0], h_b[0], h_out[0]);
  std::printf("PASSED: all %zu elements equal a[i] + b[i]\n", n);
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
