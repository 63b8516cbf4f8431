// SPDX-License-Identifier: Apache-2.0
// tests/mpi_comm_test.cpp - run under mpirun -n N: one CPU device per rank, every collective x
// operation x type of Communicator::create_mpi against the host reference (tests/support/
// comm_cases.hpp). Rank 0 picks the run's seed and broadcasts it with the communicator itself.
// Exit code 0 when every rank's every element matched.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/comm_cases.hpp"

int main() {
  try {
    devctx::DeviceContext ctx(devctx::Api::cpu);
    auto comm = devctx::Communicator::create_mpi(ctx);
    auto seed_buffer = ctx.enqueue_create_buffer<std::uint64_t>(1);
    std::uint64_t seed = comm.rank() == 0 ? std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) : 0;
    ctx.enqueue_copy(seed_buffer, std::span<const std::uint64_t>(&seed, 1));
    comm.broadcast(seed_buffer, 0);
    ctx.enqueue_copy(std::span<std::uint64_t>(&seed, 1), seed_buffer);
    ctx.synchronize();
    devctx_test::comm::Local local;
    local.size = comm.size();
    local.ranks = {comm.rank()};
    local.contexts = {&ctx};
    local.comms = {&comm};
    int failures = 0;
    devctx_test::comm::run_all(local, seed, [&](const std::string& what) {
      if (++failures <= 20) std::fprintf(stderr, "rank %d: %s\n", comm.rank(), what.c_str());
    });
    std::printf("rank %d of %d (seed %llu): %s\n", comm.rank(), comm.size(), static_cast<unsigned long long>(seed),
                failures == 0 ? "every collective matched the host reference" : "FAILED");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
