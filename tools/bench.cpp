// SPDX-License-Identifier: Apache-2.0
// tools/bench.cpp - `devctx bench [transfers|launch|alloc|all]`: size sweeps on one device,
// timed by devctx's own events (ctx.execution_time), with raw CUDA next to devctx's transfers on
// a GPU (the output formats are bench_output.cpp's, the plot svg_plot.cpp's). Holds a kernel:
// nvcc compiles it when devctx has CUDA.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cuda_facts.hpp"
#include "support/clock.hpp"
#include "tool.hpp"

/// The launch suite's kernel: does nothing (the branch is never taken), so the time is the
/// launch's own.
DEVCTX_KERNEL void bench_empty_kernel(devctx::span<float> out) {
  if (devctx::global_idx().x == std::uint64_t(1) << 62) out[0] = 1.0f;
}

namespace devctx_tool {
namespace {

/// Sizes from 4 KiB to `max_bytes`, by factors of 4.
std::vector<std::size_t> byte_sizes(std::size_t max_bytes) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = 4096; s <= max_bytes; s *= 4) sizes.push_back(s);
  return sizes;
}

/// Enough repetitions that each size moves about 256 MiB (GPU) or 32 MiB (CPU), 3 to 100.
std::uint64_t iterations_for(std::size_t bytes, bool gpu) {
  const std::size_t budget = gpu ? (std::size_t{256} << 20) : (std::size_t{32} << 20);
  return std::clamp<std::uint64_t>(budget / std::max<std::size_t>(bytes, 1), 3, 100);
}

class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), shown_(isatty(STDERR_FILENO) != 0) {}
  void step(const std::string& what) {
    ++done_;
    if (shown_) std::fprintf(stderr, "\r\033[Kdevctx bench: %zu/%zu %s", done_, total_, what.c_str());
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  std::size_t total_, done_ = 0;
  bool shown_;
};

double us_per(std::chrono::nanoseconds total, std::uint64_t iterations) {
  return double(total.count()) / 1000.0 / double(iterations);
}

void transfers(devctx::DeviceContext& ctx, std::size_t max_bytes, std::vector<BenchRow>& rows) {
  const bool gpu = ctx.backend().name == "cuda";
  const auto sizes = byte_sizes(max_bytes);
  Progress progress(sizes.size() * (gpu ? 9 : 5));
  auto pinned = ctx.enqueue_create_host_buffer<std::byte>(max_bytes);
  auto device = ctx.enqueue_create_buffer<std::byte>(max_bytes);
  auto device2 = ctx.enqueue_create_buffer<std::byte>(max_bytes);
  std::vector<std::byte> pageable(max_bytes, std::byte{1});
  ctx.synchronize();
  std::fill(pinned.begin(), pinned.end(), std::byte{2});
  ctx.enqueue_memset(device, std::byte{3});
  ctx.enqueue_memset(device2, std::byte{4});
  for (const std::size_t bytes : sizes) {
    const std::uint64_t n = iterations_for(bytes, gpu);
    auto d = device.slice(0, bytes);
    auto d2 = device2.slice(0, bytes);
    auto h = pinned.slice(0, bytes);
    const std::span<std::byte> p(pageable.data(), bytes);
    auto row = [&](const char* series, const std::function<void()>& copy) {
      progress.step(std::string(series) + " " + bytes_text(bytes));
      copy();  // warm-up
      const double us = us_per(ctx.execution_time([&] { copy(); }, n), n);
      rows.push_back({"transfers", series, bytes, "bytes", n, us, double(bytes) / (us * 1000.0)});
    };
    row("devctx HtoD pinned", [&] { ctx.enqueue_copy(d, h); });
    row("devctx HtoD pageable", [&] { ctx.enqueue_copy(d, std::span<const std::byte>(p)); });
    row("devctx DtoH pinned", [&] { ctx.enqueue_copy(h, d); });
    row("devctx DtoH pageable", [&] { ctx.enqueue_copy(p, d); });
    row("devctx DtoD", [&] { ctx.enqueue_copy(d2, d); });
    if (!gpu) continue;
    for (const bool to_device : {true, false}) {
      for (const bool pin : {true, false}) {
        const std::string series = std::string("raw CUDA ") + (to_device ? "HtoD " : "DtoH ") +
                                   (pin ? "pinned" : "pageable");
        progress.step(series + " " + bytes_text(bytes));
        if (const auto us = raw_cuda_copy_us(ctx.id(), bytes, to_device, pin, int(n)))
          rows.push_back({"transfers", series, bytes, "bytes", n, *us, double(bytes) / (*us * 1000.0)});
      }
    }
  }
  ctx.synchronize();
}

void launches(devctx::DeviceContext& ctx, std::vector<BenchRow>& rows) {
  const bool gpu = ctx.backend().name == "cuda";
  const std::vector<unsigned> grids = {1, 8, 64, 512, 4096};
  Progress progress(grids.size());
  auto out = ctx.enqueue_create_buffer<float>(1);
  for (const unsigned blocks : grids) {
    progress.step("launch " + std::to_string(blocks) + " blocks");
    const std::uint64_t n = gpu ? 200 : (blocks >= 512 ? 10 : 50);
    const devctx::LaunchConfig config{.grid_dim = blocks, .block_dim = 256};
    ctx.enqueue_function<bench_empty_kernel>(config, out);  // warm-up
    const auto total = ctx.execution_time([&] { ctx.enqueue_function<bench_empty_kernel>(config, out); }, n);
    rows.push_back({"launch", "devctx empty kernel, 256 threads per block", blocks, "blocks", n, us_per(total, n), -1});
    if (gpu)
      if (const auto us = raw_cuda_launch_us(ctx.id(), blocks, int(n)))
        rows.push_back({"launch", "raw CUDA empty kernel, 256 threads per block", blocks, "blocks", n, *us, -1});
  }
}

void allocations(devctx::DeviceContext& ctx, std::size_t max_bytes, std::vector<BenchRow>& rows) {
  const auto sizes = byte_sizes(max_bytes);
  Progress progress(sizes.size() * 2);
  for (const std::size_t bytes : sizes) {
    const std::uint64_t n = 20;
    for (const bool host : {false, true}) {
      const char* series = host ? "devctx HostBuffer create + free" : "devctx DeviceBuffer create + free";
      progress.step(std::string(series) + " " + bytes_text(bytes));
      ctx.synchronize();
      // Host time, create and drop included, until the frees have run.
      const auto start = devctx_bench::Clock::now();
      for (std::uint64_t i = 0; i < n; ++i) {
        if (host)
          (void)ctx.enqueue_create_host_buffer<std::byte>(bytes);
        else
          (void)ctx.enqueue_create_buffer<std::byte>(bytes);
      }
      ctx.synchronize();
      rows.push_back({"alloc", series, bytes, "bytes", n, devctx_bench::us_since(start) / double(n), -1});
    }
    if (ctx.backend().name == "cuda")
      if (const auto us = raw_cuda_alloc_us(ctx.id(), bytes, int(n)))
        rows.push_back({"alloc", "raw CUDA cudaMallocAsync + cudaFreeAsync", bytes, "bytes", n, *us, -1});
  }
}

}  // namespace

int run_bench(const BenchOptions& o) {
  devctx::DeviceContext ctx = o.device.empty() ? devctx::DeviceContext{}
                                               : devctx::DeviceContext{devctx::parse_device(o.device).api,
                                                                       devctx::parse_device(o.device).id};
  const bool gpu = ctx.backend().name == "cuda";
  const std::size_t max_bytes = o.max_bytes != 0 ? o.max_bytes
                                : gpu            ? (std::size_t{256} << 20)
                                                 : (std::size_t{16} << 20);
  std::vector<BenchRow> rows;
  if (o.suite == "transfers" || o.suite == "all") transfers(ctx, max_bytes, rows);
  if (o.suite == "launch" || o.suite == "all") launches(ctx, rows);
  if (o.suite == "alloc" || o.suite == "all") allocations(ctx, max_bytes, rows);
  const std::string device = std::string(devctx::to_string(ctx.api())) + ":" + std::to_string(ctx.id());
  if (o.json)
    std::fputs(bench_json(rows, device, ctx.name(), o.suite).c_str(), stdout);
  else if (o.csv)
    std::fputs(bench_csv(rows).c_str(), stdout);
  else {
    std::printf("devctx bench %s on %s (%s)\n", o.suite.c_str(), device.c_str(), ctx.name().c_str());
    bench_table(rows);
  }
  if (!o.plot.empty()) {
    const std::string svg = bench_svg(rows, "devctx bench " + o.suite + " on " + ctx.name());
    std::FILE* f = std::fopen(o.plot.c_str(), "wb");
    bool written = f != nullptr && std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
    if (f != nullptr && std::fclose(f) != 0) written = false;
    if (!written) {
      std::fprintf(stderr, "devctx: error: cannot write the plot to '%s'\n", o.plot.c_str());
      return Exit::error;
    }
  }
  return Exit::ok;
}

}  // namespace devctx_tool
