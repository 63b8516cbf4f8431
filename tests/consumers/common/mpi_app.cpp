// SPDX-License-Identifier: Apache-2.0
// The consumer projects' program that uses the component `mpi` (devctx::mpi, or pkg-config
// devctx-mpi): one MPI rank (a singleton, no launcher) on the CPU backend, a kernel over fresh
// random input, then an all-reduce through Communicator::create_mpi, every
// element checked against the host's result. Prints "PASSED ..." and exits 0, else 1.
#include <cstdio>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

namespace {

DEVCTX_KERNEL void square(const long* in, long* out, unsigned n) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i] = in[i] * in[i];
}

}  // namespace

int main() {
  try {
    if (!devctx::Communicator::mpi_available()) {
      std::printf("FAILED Communicator::mpi_available() is false in a devctx built with MPI\n");
      return 1;
    }
    devctx::DeviceContext ctx{devctx::Api::cpu};
    devctx::Communicator comm = devctx::Communicator::create_mpi(ctx);
    std::mt19937 random{std::random_device{}()};
    const unsigned n = 1000 + unsigned(random() % 1000);
    std::vector<long> input(n), output(n, -7);
    for (auto& x : input) x = long(random() % 200001) - 100000;
    auto d_in = ctx.enqueue_create_buffer<long>(n);
    auto d_sq = ctx.enqueue_create_buffer<long>(n);
    auto d_sum = ctx.enqueue_create_buffer<long>(n);
    ctx.enqueue_copy(d_in, std::span<const long>(input));
    ctx.enqueue_memset(d_sum, -1L);
    ctx.enqueue_function<square>({.grid_dim = (n + 127) / 128, .block_dim = 128}, d_in, d_sq, n);
    comm.all_reduce(d_sq, d_sum, devctx::ReduceOp::sum);  // one rank: the sum is its own part
    ctx.enqueue_copy(std::span<long>(output), d_sum);
    ctx.synchronize();
    for (unsigned i = 0; i < n; ++i)
      if (output[i] != input[i] * input[i]) {
        std::printf("FAILED all_reduce at %u: %ld, expected %ld\n", i, output[i], input[i] * input[i]);
        return 1;
      }
    std::printf("PASSED mpi_app: rank %d of %d, %u elements squared and all-reduced on %s\n", comm.rank(), comm.size(),
                n, ctx.name().c_str());
    return 0;
  } catch (const devctx::Error& e) {
    std::printf("FAILED devctx error: %s\n", e.what());
    return 1;
  }
}
