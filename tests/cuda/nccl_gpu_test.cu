// SPDX-License-Identifier: Apache-2.0
// devctx_nccl_gpu: Communicator over GPUs through NCCL (issue 16), label `gpu`. Every collective x
// operation x element type against the host reference (tests/support/comm_cases.hpp: fresh random
// inputs, poisoned outputs, every element checked) on a communicator of all GPUs present and, with
// more than two, of two; a collective between two devctx kernels on one stream, ordered by the
// stream alone (no host synchronize between them); the refusals (a group of a CPU device and a
// GPU, buffers of another device, a call recorded into a graph). Each check prints PASS/FAIL; the
// exit status is 0 when all pass, 1 otherwise, 77 (skipped) without a CUDA device unless
// DEVCTX_REQUIRE_GPU=1. In a build without NCCL it checks that a GPU communicator says so.
#include <devctx/devctx.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/comm_cases.hpp"
#include "support/gpu_program.hpp"

namespace {

using devctx_test::gpu::check;
using devctx_test::gpu::refused;
using devctx_test::gpu::section;
using devctx_test::gpu::seed;

/// data[i] = (i % 1000) * (rank + 1)
DEVCTX_KERNEL void fill_ramp(devctx::span<std::int32_t> data, std::int32_t rank) {
  const std::size_t i = devctx::global_idx().x;
  if (i < data.size()) data[i] = std::int32_t(i % 1000) * (rank + 1);
}

DEVCTX_KERNEL void times3_plus1(devctx::span<std::int32_t> data) {
  const std::size_t i = devctx::global_idx().x;
  if (i < data.size()) data[i] = data[i] * 3 + 1;
}

devctx::LaunchConfig cover(std::size_t n) { return {.grid_dim = unsigned((n + 255) / 256), .block_dim = 256}; }

std::vector<devctx::DeviceContext> gpus(int n) {
  std::vector<devctx::DeviceContext> ctx;
  for (int i = 0; i < n; ++i) ctx.emplace_back(devctx_test::gpu::cuda_api(), i);
  return ctx;
}

/// Every collective, operation and type on a communicator of the first `n` GPUs, one thread.
[[maybe_unused]] void every_collective(int n) {
  auto ctx = gpus(n);
  auto comms = devctx::Communicator::create(ctx);
  devctx_test::comm::Local local;
  local.size = n;
  for (int i = 0; i < n; ++i) {
    local.ranks.push_back(i);
    local.contexts.push_back(&ctx[std::size_t(i)]);
    local.comms.push_back(&comms[std::size_t(i)]);
  }
  int mismatches = 0;
  devctx_test::comm::run_all(local, seed(), [&](const std::string& what) {
    if (++mismatches <= 20) std::printf("      %s\n", what.c_str());
  });
  check(mismatches == 0,
        "every collective x operation x type on " + std::to_string(n) + " GPU(s) matches the host reference");
}

/// kernel -> all_reduce -> kernel on one (non-default) stream per GPU, then one download each.
[[maybe_unused]] void ordered_between_kernels(int n) {
  auto ctx = gpus(n);
  auto comms = devctx::Communicator::create(ctx);
  const std::size_t count = std::size_t(1) << 22;
  std::vector<devctx::Stream> streams;
  std::vector<devctx::DeviceBuffer<std::int32_t>> data;
  for (int r = 0; r < n; ++r) {
    streams.push_back(ctx[std::size_t(r)].create_stream());
    data.push_back(streams.back().enqueue_create_buffer<std::int32_t>(count));
    streams.back().enqueue_memset(data.back(), std::int32_t(-7));
  }
  // Rank by rank: with several GPUs, rank 0's second kernel is enqueued before the other ranks
  // have called, so before its all_reduce is launched; it must still run after it.
  for (int r = 0; r < n; ++r) {
    auto& stream = streams[std::size_t(r)];
    stream.enqueue_function<fill_ramp>(cover(count), data[std::size_t(r)], r);
    comms[std::size_t(r)].all_reduce(stream, data[std::size_t(r)], data[std::size_t(r)], devctx::ReduceOp::sum);
    stream.enqueue_function<times3_plus1>(cover(count), data[std::size_t(r)]);
  }
  const std::int32_t factor = n * (n + 1) / 2;
  for (int r = 0; r < n; ++r) {
    std::vector<std::int32_t> host(count, 0);
    streams[std::size_t(r)].enqueue_copy(std::span<std::int32_t>(host), data[std::size_t(r)]);
    streams[std::size_t(r)].synchronize();
    std::size_t bad = count;
    for (std::size_t i = 0; i < count && bad == count; ++i)
      if (host[i] != std::int32_t(i % 1000) * factor * 3 + 1) bad = i;
    check(bad == count,
          "rank " + std::to_string(r) + ": kernel, all_reduce, kernel in stream order" +
              (bad == count ? "" : " (element " + std::to_string(bad) + " is " + std::to_string(host[bad]) + ")"));
  }
}

[[maybe_unused]] void refusals(int n) {
  std::vector<devctx::DeviceContext> mixed;
  mixed.emplace_back(devctx_test::gpu::cuda_api(), 0);
  mixed.emplace_back(devctx::Api::cpu, 0);
  refused([&] { (void)devctx::Communicator::create(mixed); }, devctx::Errc::not_available,
          "all CPU devices or all GPUs", "a group of a GPU and a CPU device is refused");
  auto ctx = gpus(1);
  auto comms = devctx::Communicator::create(ctx);
  auto a = ctx[0].enqueue_create_buffer<float>(10), b = ctx[0].enqueue_create_buffer<float>(11);
  refused([&] { comms[0].all_reduce(a, b, devctx::ReduceOp::sum); }, devctx::Errc::size_mismatch, "must be equal",
          "all_reduce of unequal sizes is refused");
  auto cpu_buffer = mixed[1].enqueue_create_buffer<float>(10);
  refused([&] { comms[0].all_reduce(cpu_buffer, cpu_buffer, devctx::ReduceOp::sum); }, devctx::Errc::wrong_device,
          "belongs to", "a CPU device's buffer on a GPU rank is refused");
  auto big = ctx[0].enqueue_create_buffer<float>(20);
  refused([&] { comms[0].all_gather(big.slice(0, 10), big.slice(5, 10)); }, devctx::Errc::invalid_argument, "overlap",
          "overlapping send and recv (not NCCL's in-place form) are refused");
  // The communicator still works after the refusals.
  std::vector<float> ones(10, 1.0f), out(10, 0.0f);
  ctx[0].enqueue_copy(a, std::span<const float>(ones));
  comms[0].all_reduce(a, a, devctx::ReduceOp::max);
  ctx[0].enqueue_copy(std::span<float>(out), a);
  ctx[0].synchronize();
  check(out == ones, "the communicator works after refused calls");
  if (n >= 2) {
    auto two = gpus(2);
    auto pair = devctx::Communicator::create(two);
    auto other = two[1].enqueue_create_buffer<float>(10);
    refused([&] { pair[0].all_reduce(other, other, devctx::ReduceOp::sum); }, devctx::Errc::wrong_device, "belongs to",
            "a buffer of another GPU is refused");
  }
}

}  // namespace

int main() {
  const int n = devctx::DeviceContext::count(devctx_test::gpu::cuda_api());
  std::printf("cuda devices: %d; seed %llu (DEVCTX_TEST_SEED replays)\n", n, static_cast<unsigned long long>(seed()));
  if (n == 0) return devctx_test::gpu::no_gpu_exit();
#ifndef DEVCTX_TEST_NCCL_BUILT
  auto ctx = gpus(1);
  refused([&] { (void)devctx::Communicator::create(ctx); }, devctx::Errc::not_available, "NCCL",
          "without NCCL a GPU communicator says NCCL was not found at build time");
#else
  section("every collective on all GPUs", [&] { every_collective(n); });
  if (n > 2) section("every collective on two GPUs", [&] { every_collective(2); });
  section("a collective between kernels", [&] { ordered_between_kernels(n); });
  section("refusals", [&] { refusals(n); });
#endif
  const int failures = devctx_test::gpu::failures;
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
