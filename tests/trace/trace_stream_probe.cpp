// SPDX-License-Identifier: Apache-2.0
// tests/trace/trace_stream_probe.cpp - a program for the DEVCTX_TRACE_FILE tests (trace_test.cpp
// starts it with the variable set, since the file is opened by the first context of a process):
// host threads, each on a stream of its own, enqueue memsets, empty kernels and device-to-device
// copies, synchronizing every 64 rounds. With --locale NAME it first calls setlocale(LC_ALL, NAME),
// as a program that honours its user's locale does. It prints what it enqueued and how much its
// peak resident memory grew from after the first rounds to the end:
//   fills N / kernels N / copies N / rss_growth_kib N
// A devctx::Error (from the first context, say) is printed as "error: CODE: MESSAGE", exit 3.
//
// usage: devctx_trace_stream_probe [--threads T] [--rounds N] [--device cpu|cuda] [--locale NAME]
//                                  [--record 1]   (devctx::trace::start(): records kept in memory)
#include <atomic>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <devctx/devctx.hpp>

namespace {

DEVCTX_KERNEL void probe_touch(devctx::span<unsigned> out, unsigned value) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = value;
}

/// The peak resident memory of this program so far (VmHWM). Not getrusage's ru_maxrss: that
/// one carries over the peak of the process that started this one (posix_spawn, fork).
long peak_rss_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  std::fclose(f);
  return kib;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 4;
  long rounds = 1000;
  std::string device = "cpu";
  const char* locale = nullptr;
  bool record = false;  // --record 1: devctx::trace::start() (records kept in memory, no file)
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0)
      threads = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--rounds") == 0)
      rounds = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--device") == 0)
      device = argv[i + 1];
    else if (std::strcmp(argv[i], "--locale") == 0)
      locale = argv[i + 1];
    else if (std::strcmp(argv[i], "--record") == 0)
      record = std::atoi(argv[i + 1]) != 0;
  }
  if (locale != nullptr && std::setlocale(LC_ALL, locale) == nullptr) {
    std::fprintf(stderr, "setlocale(LC_ALL, \"%s\") failed\n", locale);
    return 4;
  }
  try {
    const devctx::DeviceId id = devctx::parse_device(device);
    devctx::DeviceContext ctx{id.api, id.id};
    if (record) devctx::trace::start();
    constexpr std::size_t n = 256;
    // A first stretch (threads and allocator warmed up), then the peak so far, then the rest.
    std::atomic<int> warm{0};
    std::atomic<long> base_kib{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        auto stream = ctx.create_stream();
        auto a = stream.enqueue_create_buffer<unsigned>(n);
        auto b = stream.enqueue_create_buffer<unsigned>(n);
        for (long r = 0; r < rounds; ++r) {
          stream.enqueue_memset(a, unsigned(r));
          stream.enqueue_function<probe_touch>({.grid_dim = 1, .block_dim = n}, a, unsigned(t));
          stream.enqueue_copy(b, a);
          if (r % 64 == 63) stream.synchronize();
          if (r == rounds / 10 && warm.fetch_add(1) + 1 == threads) base_kib = peak_rss_kib();
        }
        stream.synchronize();
      });
    for (auto& th : pool) th.join();
    ctx.synchronize();
    const long total = long(threads) * rounds;
    std::printf("fills %ld\nkernels %ld\ncopies %ld\nrss_growth_kib %ld\n", total, total, total,
                base_kib.load() > 0 ? peak_rss_kib() - base_kib.load() : -1);
  } catch (const devctx::Error& e) {
    std::printf("error: %s: %s\n", devctx::to_string(e.code()), e.what());
    return 3;
  }
  return 0;
}
