// SPDX-License-Identifier: Apache-2.0
// bench/runtime/runtime_kernels_bench.cpp - runtime-compiled kernels against the same source
// compiled in, on one device (DEVCTX_DEVICE, default the default device):
//   1. compile_function: cold (empty cache) and cached load, median of several runs;
//   2. cost per launch of a tiny kernel (many enqueued, then one synchronize), runtime against compiled-in;
//   3. a barrier-heavy reduction and saxpy over 2^22 floats, runtime against compiled-in.
// Prints a Markdown table; ratios are against the compiled-in row measured in the same run.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <devctx/devctx.hpp>

#include "compiled_in.hpp"
#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/stats.hpp"
#include "support/trials.hpp"

namespace {

using devctx_bench::median;

void set_env(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

}  // namespace

int main(int argc, char** argv) {
  int trials = 7;
  devctx_bench::Args args("devctx_bench_runtime_kernels",
                          "Runtime-compiled kernels against the same kernels compiled in: cold compile, cached load, "
                          "launch cost, kernel speed (DEVCTX_DEVICE picks the device)");
  args.option("--trials", trials, "alternating trials of each comparison (their median is printed)", 1, 1000);
  args.parse(argc, argv);
  std::string dir = (std::filesystem::temp_directory_path() / "devctx-bench-cache-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return 1;
  set_env("DEVCTX_CACHE_DIR", dir);
  devctx::DeviceContext ctx;
  std::printf("# runtime-compiled kernels on %s\n\n", ctx.name().c_str());
  const devctx::Module module = devctx::Module::from_file(DEVCTX_BENCH_KERNELS_FILE);

  // 1. compile_function: cold (a fresh cache directory each time) and cached.
  std::vector<double> cold;
  for (int r = 0; r < 3; ++r) {
    const std::string fresh = dir + "/cold" + std::to_string(r);
    set_env("DEVCTX_CACHE_DIR", fresh);
    const auto f = ctx.compile_function(module, "bench_saxpy");
    if (f.load_kind() != devctx::LoadKind::compiled) return 2;
    cold.push_back(f.load_ms());
  }
  std::vector<double> cached;
  for (int r = 0; r < 20; ++r) {
    const auto f = ctx.compile_function(module, "bench_saxpy");
    if (f.load_kind() != devctx::LoadKind::cached) return 3;
    cached.push_back(f.load_ms());
  }
  std::printf("| compile_function(bench_saxpy) | median ms |\n|---|---|\n| cold (compiler runs) | %.1f |\n"
              "| cached load | %.3f |\n\n",
              median(cold), median(cached));

  const auto noop = ctx.compile_function(module, "bench_noop");
  const auto block_sum = ctx.compile_function(module, "bench_block_sum");
  const auto saxpy = ctx.compile_function(module, "bench_saxpy");

  // The two forms alternate, so that drift in the machine's load affects both alike.
  auto pair = [&](const std::function<void()>& compiled, const std::function<void()>& runtime, int reps) {
    const auto timed = [&](const std::function<void()>& f) {
      return [&, f] {
        return devctx_bench::seconds_of([&] {
                 f();
                 ctx.synchronize();
               }) *
               1e3;
      };
    };
    const auto m = devctx_bench::alternating_medians(reps, 1, {timed(compiled), timed(runtime)});  // one warm-up pair
    return std::pair{m[0], m[1]};
  };

  // 2. Launch cost: enqueue only (the tiny kernel runs while the next is enqueued).
  auto out = ctx.enqueue_create_buffer<float>(1);
  const int launches = 20000;
  ctx.synchronize();
  auto [compiled_launch, runtime_launch] = pair([&] { for (int i = 0; i < launches; ++i) launch_noop(ctx, out); },
                                                [&] {
                                                  for (int i = 0; i < launches; ++i)
                                                    ctx.enqueue_function(noop, {.grid_dim = 1, .block_dim = 32}, out, 1.0f);
                                                },
                                                trials);
  compiled_launch *= 1000.0 / launches;
  runtime_launch *= 1000.0 / launches;

  // 3. Kernel speed over 2^22 floats.
  const std::size_t n = std::size_t(1) << 22;
  auto x = ctx.enqueue_create_buffer<float>(n);
  auto y = ctx.enqueue_create_buffer<float>(n);
  auto sums = ctx.enqueue_create_buffer<float>(n / 256);
  ctx.enqueue_memset(x, 1.0f);
  ctx.enqueue_memset(y, 0.5f);
  ctx.synchronize();
  const devctx::LaunchConfig cover{.grid_dim = unsigned(n / 256), .block_dim = 256};
  const auto [sum_compiled, sum_runtime] = pair([&] { launch_block_sum(ctx, cover, x, sums); },
                                                [&] { ctx.enqueue_function(block_sum, cover, x, sums); }, trials);
  const auto [saxpy_compiled, saxpy_runtime] = pair([&] { launch_saxpy(ctx, cover, x, y); },
                                                    [&] { ctx.enqueue_function(saxpy, cover, 2.0f, x, y); }, trials);

  std::printf("| measure | compiled in | runtime-compiled | runtime / compiled in |\n|---|---|---|---|\n");
  std::printf("| tiny kernel, us per launch (%d enqueued, then synchronize) | %.3f | %.3f | %.2f |\n", launches, compiled_launch,
              runtime_launch, runtime_launch / compiled_launch);
  std::printf("| block_sum (barriers, 2^22 floats), ms | %.3f | %.3f | %.2f |\n", sum_compiled, sum_runtime,
              sum_runtime / sum_compiled);
  std::printf("| saxpy (2^22 floats), ms | %.3f | %.3f | %.2f |\n", saxpy_compiled, saxpy_runtime,
              saxpy_runtime / saxpy_compiled);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
