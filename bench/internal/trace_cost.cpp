// SPDX-License-Identifier: Apache-2.0
// Measures what recording a trace costs (docs/observability.md): the host time per enqueued
// operation (an empty kernel launch, a 4 KiB device-to-device copy) with devctx::trace recording
// off, on (records kept in memory: trace::start()), and on with DEVCTX_TRACE_FILE (records
// streamed to a file), in the same run, as ratios; and the file's bytes per operation, so the
// cost per MB written. DEVCTX_TRACE_FILE is read by a process's first context, so the streamed
// column comes from a second run of this program (a child) with the variable set.
//
// Usage: devctx_bench_trace_cost [--reps N] [--device cpu|cuda] [--file PATH]
//   --file: where the streamed trace goes (default: devctx_trace_cost.json in the current directory)
#include <devctx/devctx.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/trials.hpp"

namespace {

DEVCTX_KERNEL void trace_cost_empty(devctx::span<unsigned> out) {
  if (devctx::global_idx().x == std::uint64_t(1) << 62) out[0] = 1;
}

constexpr int kBatch = 1000;

/// Median over `reps` batches of the host time per operation, synchronize included. `clear`:
/// drop the records before each batch (kept in memory, they would otherwise pile up).
double median_us_per_op(devctx::DeviceContext& ctx, int reps, bool clear, const std::function<void()>& op) {
  return devctx_bench::median_of(reps, 0, [&] {
    if (clear) devctx::trace::clear();  // keeps the recording's memory the same for every batch
    const auto start = devctx_bench::Clock::now();
    for (int i = 0; i < kBatch; ++i) op();
    ctx.synchronize();
    return devctx_bench::us_since(start) / kBatch;
  });
}

struct Row {
  const char* name;
  double off = 0, on = 0, streamed = 0;
};

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  std::string device = "cpu", file = "devctx_trace_cost.json";
  bool child = false;  // the run with DEVCTX_TRACE_FILE set: prints its times only
  devctx_bench::Args args("devctx_bench_trace_cost",
                          "What recording a trace costs per operation: off, on, streamed to a file");
  args.option("--reps", reps, "Batches of 1000 operations per measurement (median reported)", 3, 100000);
  args.option("--device", device, "cpu, cuda or cuda:N");
  args.option("--file", file, "Where the streamed trace goes");
  args.hidden_flag("--child", child);
  args.parse(argc, argv);
  const devctx::DeviceId id = devctx::parse_device(device);
  devctx::DeviceContext ctx{id.api, id.id};
  auto out = ctx.enqueue_create_buffer<unsigned>(1024);
  auto other = ctx.enqueue_create_buffer<unsigned>(1024);
  ctx.enqueue_memset(out, 0u);
  ctx.synchronize();
  std::vector<Row> rows = {{"enqueue_function (empty, 1 block)"}, {"enqueue_copy DtoD 4 KiB"}};
  auto op_of = [&](std::size_t row) {
    return [&, row] {
      if (row == 0)
        ctx.enqueue_function<trace_cost_empty>({.grid_dim = 1, .block_dim = 32}, out);
      else
        ctx.enqueue_copy(other, out);
    };
  };
  if (child) {
    // Recording to the file from the first context on: each row measured while streaming.
    for (std::size_t r = 0; r < rows.size(); ++r) {
      (void)median_us_per_op(ctx, 3, false, op_of(r));  // warm-up
      std::printf("%.6f\n", median_us_per_op(ctx, reps, false, op_of(r)));
    }
    std::printf("%d\n", (3 + reps) * kBatch * int(rows.size()));  // operations enqueued (and synchronizes)
    return 0;
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    devctx::trace::stop();
    (void)median_us_per_op(ctx, 3, true, op_of(r));  // warm-up
    rows[r].off = median_us_per_op(ctx, reps, true, op_of(r));
    devctx::trace::start();
    rows[r].on = median_us_per_op(ctx, reps, true, op_of(r));
    devctx::trace::stop();
    devctx::trace::clear();
  }
  // The streamed column: this program again, with DEVCTX_TRACE_FILE set.
  const std::string command = "DEVCTX_TRACE_FILE='" + file + "' '" + argv[0] + "' --child --reps " +
                              std::to_string(reps) + " --device " + device;
  std::FILE* pipe = popen(command.c_str(), "r");
  long operations = 0;
  bool ok = pipe != nullptr;
  for (auto& row : rows) ok = ok && std::fscanf(pipe, "%lf", &row.streamed) == 1;
  ok = ok && std::fscanf(pipe, "%ld", &operations) == 1;
  if (pipe != nullptr) ok = pclose(pipe) == 0 && ok;
  struct stat st{};
  if (!ok || stat(file.c_str(), &st) != 0 || operations <= 0) {
    std::fprintf(stderr, "the streamed run (%s) failed\n", command.c_str());
    return 1;
  }
  // Each batch adds a synchronize to its 1000 operations.
  const double ops = double(operations) * (kBatch + 1) / kBatch;
  const double bytes_per_op = double(st.st_size) / ops;
  std::printf("devctx trace recording cost on %s (host time per operation, synchronize included; median of %d batches of %d)\n",
              ctx.name().c_str(), reps, kBatch);
  std::printf("  %-36s %10s %10s %12s %8s %10s\n", "operation", "off (us)", "on (us)", "to file (us)", "on/off",
              "file/off");
  for (const auto& r : rows)
    std::printf("  %-36s %10.3f %10.3f %12.3f %8.2f %10.2f\n", r.name, r.off, r.on, r.streamed, r.on / r.off,
                r.streamed / r.off);
  // Per MB: the whole host-time cost of recording to the file (over recording off), per MB written.
  const double extra_us = ((rows[0].streamed - rows[0].off) + (rows[1].streamed - rows[1].off)) / 2;
  std::printf(
      "  trace file: %.0f bytes per operation (%.1f MB written); recording to it cost %.3f us per operation "
      "(mean of the two rows, over off), %.0f us per MB written\n",
      bytes_per_op, double(st.st_size) / 1e6, extra_us, extra_us / (bytes_per_op / 1e6));
  std::remove(file.c_str());
  return 0;
}
