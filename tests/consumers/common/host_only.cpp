// SPDX-License-Identifier: Apache-2.0
// The consumer projects' program without kernels (compiled by the C++ compiler alone, whatever
// devctx was built with): a round trip through device memory on the CPU backend, checked element
// by element, and a misuse that must throw devctx::Error from inside the library and be caught
// here (across the shared library's boundary when devctx is shared). Prints "PASSED ..." and
// exits 0, else 1.
#include <cstdio>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

int main() {
  try {
    devctx::DeviceContext ctx{devctx::Api::cpu};
    std::mt19937 random{std::random_device{}()};
    const std::size_t n = 1000 + random() % 1000;
    std::vector<double> input(n), output(n, -1.0);
    for (auto& x : input) x = double(random()) / 7.0;
    auto d = ctx.enqueue_create_buffer<double>(n);
    ctx.enqueue_copy(d, std::span<const double>(input));
    ctx.enqueue_copy(std::span<double>(output), d);
    ctx.synchronize();
    for (std::size_t i = 0; i < n; ++i)
      if (output[i] != input[i]) {
        std::printf("FAILED round trip at %zu: %g, expected %g\n", i, output[i], input[i]);
        return 1;
      }
    bool threw = false;
    try {
      auto shorter = ctx.enqueue_create_buffer<double>(n - 1);
      ctx.enqueue_copy(shorter, d);
    } catch (const devctx::Error& e) {
      threw = e.code() == devctx::Errc::size_mismatch;
      if (!threw) std::printf("FAILED the size mismatch threw code %s: %s\n", devctx::to_string(e.code()), e.what());
    }
    if (!threw) {
      std::printf("FAILED copying %zu elements into %zu did not throw devctx::Error(size_mismatch)\n", n, n - 1);
      return 1;
    }
    std::printf("PASSED host_only: %zu doubles round trip on %s; misuse throws devctx::Error\n", n, ctx.name().c_str());
    return 0;
  } catch (const devctx::Error& e) {
    std::printf("FAILED devctx error: %s\n", e.what());
    return 1;
  }
}
