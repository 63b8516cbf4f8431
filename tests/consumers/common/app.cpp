// SPDX-License-Identifier: Apache-2.0
// The consumer projects' program with kernels (compiled through devctx_add_kernels: by nvcc when
// devctx has CUDA). On the default device (the CPU where no GPU is), it runs a plain kernel, one
// with block-shared memory and barriers and its block-level form over fresh random input into
// poisoned output, checks every element, and checks that the version the CMake package announced
// (CONSUMER_EXPECTED_VERSION) is the one compiled in. Prints "PASSED ..." and exits 0, else 1.
#include <cstdio>
#include <random>
#include <string_view>
#include <vector>

#include <devctx/devctx.hpp>

namespace {

constexpr unsigned kBlock = 128;

DEVCTX_KERNEL void axpy(int a, devctx::span<const int> x, devctx::span<const int> y, devctx::span<int> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a * x[i] + y[i];
}

// Each block writes its slice of `in` reversed: every thread reads another thread's element,
// so it is only right when the barrier holds.
DEVCTX_KERNEL void reverse_blocks(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, tile, kBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t base = std::size_t(devctx::block_idx().x) * kBlock;
  tile[t] = in[base + t];
  devctx::barrier();
  out[base + t] = tile[kBlock - 1 - t];
}

// The same as a block-level kernel: on the CPU each phase is a loop over the block's threads.
DEVCTX_KERNEL void reverse_blocks_phased(devctx::Block blk, devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, tile, kBlock);
  const std::size_t base = std::size_t(blk.idx().x) * kBlock;
  blk.for_each_thread([&](devctx::Thread t) { tile[t.x] = in[base + t.x]; });
  blk.for_each_thread([&](devctx::Thread t) { out[base + t.x] = tile[kBlock - 1 - t.x]; });
}

int fail(const char* what, std::size_t i, int got, int expected) {
  std::printf("FAILED %s at %zu: %d, expected %d\n", what, i, got, expected);
  return 1;
}

}  // namespace

int main() {
#ifdef CONSUMER_EXPECTED_VERSION
  if (std::string_view(DEVCTX_VERSION_STRING) != CONSUMER_EXPECTED_VERSION) {
    std::printf("FAILED the CMake package says devctx %s, the header %s\n", CONSUMER_EXPECTED_VERSION,
                DEVCTX_VERSION_STRING);
    return 1;
  }
#endif
  try {
    devctx::DeviceContext ctx;
    std::mt19937 random{std::random_device{}()};
    const std::size_t blocks = 50 + random() % 50;
    const std::size_t n = blocks * kBlock;
    auto h_x = ctx.enqueue_create_host_buffer<int>(n);
    auto h_y = ctx.enqueue_create_host_buffer<int>(n);
    auto h_out = ctx.enqueue_create_host_buffer<int>(n);
    auto d_x = ctx.enqueue_create_buffer<int>(n);
    auto d_y = ctx.enqueue_create_buffer<int>(n);
    auto d_out = ctx.enqueue_create_buffer<int>(n);
    ctx.synchronize();
    for (std::size_t i = 0; i < n; ++i) {
      h_x[i] = int(random() % 20001) - 10000;
      h_y[i] = int(random() % 20001) - 10000;
    }
    const int a = int(random() % 7) - 3;
    ctx.enqueue_copy(d_x, h_x);
    ctx.enqueue_copy(d_y, h_y);

    ctx.enqueue_memset(d_out, 0x5a5a5a5a);  // poison: a skipped element shows
    ctx.enqueue_function<axpy>({.grid_dim = unsigned(blocks), .block_dim = kBlock}, a, d_x, d_y, d_out);
    ctx.enqueue_copy(h_out, d_out);
    ctx.synchronize();
    for (std::size_t i = 0; i < n; ++i)
      if (h_out[i] != a * h_x[i] + h_y[i]) return fail("axpy", i, h_out[i], a * h_x[i] + h_y[i]);

    for (const bool phased : {false, true}) {
      const char* name = phased ? "reverse_blocks_phased" : "reverse_blocks";
      ctx.enqueue_memset(d_out, 0x5a5a5a5a);
      if (phased)
        ctx.enqueue_function<reverse_blocks_phased>({.grid_dim = unsigned(blocks), .block_dim = kBlock}, d_x, d_out);
      else
        ctx.enqueue_function<reverse_blocks>({.grid_dim = unsigned(blocks), .block_dim = kBlock}, d_x, d_out);
      ctx.enqueue_copy(h_out, d_out);
      ctx.synchronize();
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t from = i / kBlock * kBlock + (kBlock - 1 - i % kBlock);
        if (h_out[i] != h_x[from]) return fail(name, i, h_out[i], h_x[from]);
      }
    }
    std::printf("PASSED app: %zu elements on %s, devctx %s\n", n, ctx.name().c_str(), DEVCTX_VERSION_STRING);
    return 0;
  } catch (const devctx::Error& e) {
    std::printf("FAILED devctx error: %s\n", e.what());
    return 1;
  }
}
