// SPDX-License-Identifier: Apache-2.0
// tests/mpi_comm_test.cpp - run under mpirun -n N: one CPU device per rank (with the argument
// `gpu`: one GPU per rank, through NCCL), every collective x operation x type of
// Communicator::create_mpi against the host reference (tests/support/comm_cases.hpp). Rank 0
// picks the run's seed and broadcasts it with the communicator itself. Exit code 0 when every
// rank's every element matched.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/comm_cases.hpp"
#include "support/test_env.hpp"

namespace {

/// This process's index among the ranks of its node (set by the MPI launcher), 0 when unknown.
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* text = std::getenv(name); text != nullptr && *text != '\0') return std::atoi(text);
  return 0;
}

int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* text = std::getenv(name); text != nullptr && *text != '\0') return std::atoi(text);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // `gpu`: one GPU per rank (NCCL); exit 77 (skipped) when there are fewer GPUs than ranks.
  const bool gpu = argc > 1 && std::string(argv[1]) == "gpu";
  try {
    const devctx::Api cuda = devctx::backend("cuda").api;
    const int gpus = gpu ? devctx::DeviceContext::count(cuda) : 0;
    if (gpu && gpus < launcher_size()) {
      const bool required = devctx_test::require_gpu() && gpus == 0;
      std::printf("%d GPU(s) for %d rank(s): %s\n", gpus, launcher_size(),
                  required ? "FAILED (DEVCTX_REQUIRE_GPU is on)" : "skipped");
      return required ? 1 : 77;
    }
    devctx::DeviceContext ctx = gpu ? devctx::DeviceContext(cuda, local_rank() % gpus)
                                    : devctx::DeviceContext(devctx::Api::cpu);
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
