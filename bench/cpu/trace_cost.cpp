// SPDX-License-Identifier: Apache-2.0
// Measures what recording a trace costs (docs/observability.md): the host time per enqueued
// operation (an empty kernel launch, a 4 KiB device-to-device copy), with devctx::trace
// recording off and on, in the same run, as a ratio. Usage: devctx_bench_trace_cost [--reps N] [--device cpu|cuda]
#include <devctx/devctx.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

DEVCTX_KERNEL void trace_cost_empty(devctx::span<unsigned> out) {
  if (devctx::global_idx().x == std::uint64_t(1) << 62) out[0] = 1;
}

constexpr int kBatch = 1000;

/// Median over `reps` batches of the host time per operation, synchronize included.
template <class F>
double median_us_per_op(devctx::DeviceContext& ctx, int reps, F&& op) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    devctx::trace::clear();  // keeps the recording's memory the same for every batch
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) op();
    ctx.synchronize();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kBatch);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  std::string device = "cpu";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(3, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
  }
  const devctx::DeviceId id = devctx::parse_device(device);
  devctx::DeviceContext ctx{id.api, id.id};
  auto out = ctx.enqueue_create_buffer<unsigned>(1024);
  auto other = ctx.enqueue_create_buffer<unsigned>(1024);
  ctx.enqueue_memset(out, 0u);
  ctx.synchronize();
  std::printf("devctx trace recording cost on %s (host time per operation, synchronize included; median of %d batches of %d)\n",
              ctx.name().c_str(), reps, kBatch);
  std::printf("  %-36s %12s %12s %8s\n", "operation", "off (us)", "on (us)", "on/off");
  auto row = [&](const char* name, auto op) {
    devctx::trace::stop();
    (void)median_us_per_op(ctx, 3, op);  // warm-up
    const double off = median_us_per_op(ctx, reps, op);
    devctx::trace::start();
    const double on = median_us_per_op(ctx, reps, op);
    devctx::trace::stop();
    devctx::trace::clear();
    std::printf("  %-36s %12.3f %12.3f %8.2f\n", name, off, on, on / off);
  };
  row("enqueue_function (empty, 1 block)",
      [&] { ctx.enqueue_function<trace_cost_empty>({.grid_dim = 1, .block_dim = 32}, out); });
  row("enqueue_copy DtoD 4 KiB", [&] { ctx.enqueue_copy(other, out); });
  return 0;
}
