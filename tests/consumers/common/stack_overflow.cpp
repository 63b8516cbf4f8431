// SPDX-License-Identifier: Apache-2.0
// The consumer projects' stack-overflow program: a kernel whose frame (256 KiB) is larger than the
// guard below each CPU fiber stack, built with the flags the route under test gives (pkg-config's
// Cflags). It must end with devctx's report naming the kernel, block and thread (SIGSEGV), neither
// with a bare SIGSEGV nor by running to its end (which prints FAILED and exits 1).
#include <cstddef>
#include <cstdio>

#include <devctx/devctx.hpp>

constexpr std::size_t kFrame = 256 * 1024;

DEVCTX_KERNEL void big_frame(devctx::span<unsigned> out) {
  volatile unsigned char big[kFrame];  // touched at its lowest address first
  big[0] = 1;
  big[kFrame - 1] = 2;
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = big[0] + big[kFrame - 1];
}

int main() {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto out = ctx.enqueue_create_buffer<unsigned>(64);
  ctx.enqueue_function<big_frame>({.grid_dim = 1, .block_dim = 64}, out);
  ctx.synchronize();
  std::printf("FAILED: a kernel frame of %zu bytes ran without a stack-overflow report\n", kFrame);
  return 1;
}
