// SPDX-License-Identifier: Apache-2.0
// bench/internal/trace_memory.cpp - the memory a trace recording takes while host threads hammer one
// context (issue 25: 20 s of 8 threads with DEVCTX_TRACE_FILE reached a 597 MB peak). Each thread
// enqueues memsets, empty kernels and 1 KiB device-to-device copies on a stream of its own,
// synchronizing every 64 rounds, for --seconds; every 10 s the program prints the operations
// so far and its resident memory now (VmRSS) and at its peak (VmHWM).
//
//   --mode file   DEVCTX_TRACE_FILE=--file (set here, before the first context): streamed
//   --mode memory devctx::trace::start(), records kept, written with trace::write(--file) at the
//                 end, as DEVCTX_TRACE_FILE did before it streamed
//   --mode off    no recording (the program's own memory)
//
// The file is complete once the program has exited: bench/internal/trace_memory.sh runs each mode
// under /usr/bin/time -v and checks the file with `devctx trace summarize`.
//
// usage: devctx_bench_trace_memory [--mode file|memory|off] [--seconds S] [--threads T]
//                                  [--file PATH] [--device cpu|cuda]
#include <devctx/devctx.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"

namespace {

DEVCTX_KERNEL void trace_memory_touch(devctx::span<unsigned> out, unsigned value) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = value;
}

/// A "Name:   123 kB" line of /proc/self/status, in MiB.
double status_mib(const char* name) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  const std::size_t n = std::strlen(name);
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, name, n) == 0 && line[n] == ':' && std::sscanf(line + n + 1, "%ld", &kib) == 1) break;
  std::fclose(f);
  return double(kib) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "file", file = "devctx_trace_memory.json", device = "cpu";
  double seconds = 60;
  int threads = 8;
  devctx_bench::Args args("devctx_bench_trace_memory", "The trace recorder's memory while host threads hammer one context");
  args.option("--mode", mode, "file (DEVCTX_TRACE_FILE), memory (trace::start, written at the end) or off",
              "file,memory,off");
  args.option("--seconds", seconds, "How long the threads run", 0.0, 1e6);
  args.option("--threads", threads, "Host threads, each on a stream of its own", 1, 1024);
  args.option("--file", file, "The trace file (modes file and memory)");
  args.option("--device", device, "cpu, cuda or cuda:N");
  args.parse(argc, argv);
  if (mode == "file") setenv("DEVCTX_TRACE_FILE", file.c_str(), 1);
  const devctx::DeviceId id = devctx::parse_device(device);
  devctx::DeviceContext ctx{id.api, id.id};
  if (mode == "memory") devctx::trace::start();
  std::printf("devctx trace memory, mode %s: %d threads for %.0f s on %s\n", mode.c_str(), threads, seconds,
              ctx.name().c_str());
  std::printf("  %8s %14s %12s %12s\n", "time (s)", "operations", "VmRSS (MiB)", "VmHWM (MiB)");
  std::fflush(stdout);
  constexpr std::size_t n = 256;
  std::atomic<bool> stop{false};
  std::atomic<long> operations{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      auto stream = ctx.create_stream();
      auto a = stream.enqueue_create_buffer<unsigned>(n);
      auto b = stream.enqueue_create_buffer<unsigned>(n);
      for (long r = 0; !stop.load(std::memory_order_relaxed); ++r) {
        stream.enqueue_memset(a, unsigned(r));
        stream.enqueue_function<trace_memory_touch>({.grid_dim = 1, .block_dim = n}, a, unsigned(t));
        stream.enqueue_copy(b, a);
        if (r % 64 == 63) {
          stream.synchronize();
          operations.fetch_add(3 * 64 + 1, std::memory_order_relaxed);
        }
      }
      stream.synchronize();
    });
  const auto start = devctx_bench::Clock::now();
  for (int tick = 1;; ++tick) {
    const auto at = start + std::chrono::duration<double>(std::min(seconds, 10.0 * tick));
    std::this_thread::sleep_until(at);
    const double elapsed = devctx_bench::seconds_since(start);
    std::printf("  %8.0f %14ld %12.1f %12.1f\n", elapsed, operations.load(), status_mib("VmRSS"), status_mib("VmHWM"));
    std::fflush(stdout);
    if (10.0 * tick >= seconds) break;
  }
  stop = true;
  for (auto& th : pool) th.join();
  ctx.synchronize();
  if (mode == "memory") devctx::trace::write(file);  // what DEVCTX_TRACE_FILE did at exit before
  std::printf("  end: about %ld operations; peak resident memory before exit %.1f MiB\n", operations.load(),
              status_mib("VmHWM"));
  return 0;
}
