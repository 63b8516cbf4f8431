// SPDX-License-Identifier: Apache-2.0
// test_package: one kernel over random input on the CPU backend, every element checked.
#include <cstdio>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

DEVCTX_KERNEL void scale(devctx::span<const int> in, devctx::span<int> out, int factor) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] * factor;
}

int main() {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  const std::size_t n = 10007;
  auto host = ctx.enqueue_create_host_buffer<int>(n);
  auto in = ctx.enqueue_create_buffer<int>(n);
  auto out = ctx.enqueue_create_buffer<int>(n);
  ctx.synchronize();
  std::mt19937 random{std::random_device{}()};
  for (auto& x : host) x = int(random() % 1000);
  const std::vector<int> expected(host.begin(), host.end());
  ctx.enqueue_copy(in, host);
  ctx.enqueue_memset(out, -1);
  ctx.enqueue_function<scale>({.grid_dim = unsigned((n + 127) / 128), .block_dim = 128}, in, out, 3);
  ctx.enqueue_copy(host, out);
  ctx.synchronize();
  for (std::size_t i = 0; i < n; ++i)
    if (host[i] != 3 * expected[i]) {
      std::printf("FAILED at %zu: %d, expected %d\n", i, host[i], 3 * expected[i]);
      return 1;
    }
  std::printf("PASSED devctx %s (Conan package)\n", DEVCTX_VERSION_STRING);
  return 0;
}
