// SPDX-License-Identifier: Apache-2.0
// bench/runtime/runtime_kernels_bench.cpp - runtime-compiled kernels against the same source
// compiled in, on one device (DEVCTX_DEVICE, default the default device; the same binary built
// with CUDA measures nvcc and the GPU):
//   1. compile_function: cold (empty cache) and cached load, median of several runs; on the CPU
//      cold also with DEVCTX_RT_FISSION=0 (the fission translator's share of a cold compile);
//   2. cost per launch of a tiny kernel (many enqueued, then one synchronize), runtime against compiled-in;
//   3. the CUDA-style barrier reduction (reduction_kernel.cpp, compiled in and at run time from
//      the same file) and saxpy over 2^22 floats, runtime against compiled-in; on the CPU also
//      the runtime-compiled reduction with the translator off, and each one's execution path
//      as the trace records it (translated, or fibers and why).
//   0. In a build with CUDA, before all that and without a GPU: a cold compile of bench_saxpy for
//      --arch by each CUDA compiler, NVRTC (in the process) and nvcc (a child process), alternating
//      (the compile step alone, as compile_function runs it on a cache miss; the first NVRTC
//      compile of the process, which loads libnvrtc, apart). --cuda-compile-only stops there.
// Prints Markdown tables; ratios are against the compiled-in row measured in the same run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include <devctx/devctx.hpp>

#if DEVCTX_BENCH_CUDA_BUILT
#include "runtime/toolchain.hpp"  // the compile step alone (src/runtime), for the compile-only table
#endif

#include "compiled_in.hpp"
#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/stats.hpp"
#include "support/trials.hpp"

namespace {

using devctx_bench::median;

void set_env(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

/// The execution path the trace records for the one kernel `launch` enqueues ("-" when none).
std::string execution_of(devctx::DeviceContext& ctx, const std::function<void()>& launch) {
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  launch();
  ctx.synchronize();
  std::string path = "-";
  for (const devctx::trace::Operation& op : devctx::trace::operations())
    if (op.kind == devctx::trace::Kind::kernel && !op.execution.empty()) path = op.execution;
  devctx::trace::stop();
  devctx::trace::clear();
  return path;
}

/// An execution path in short: "translated", or "cooperative fibers: not translated: <why>".
std::string short_path(const std::string& path) {
  if (path.rfind("translated", 0) == 0) return "translated";
  const std::size_t why = path.find("not translated: ");
  return path.substr(0, path.find(' ', path.find("fibers") + 1)) +
         (why == std::string::npos ? "" : ": " + path.substr(why));
}

#if DEVCTX_BENCH_CUDA_BUILT
/// 0. Cold compiles of `kernel` for `arch` by NVRTC and by nvcc, alternating: no device needed.
void cuda_compile_only(const devctx::Module& module, const char* kernel, const std::string& arch, int trials) {
  namespace rt = devctx::detail::rt;
  const std::string tu = rt::wrapper_source(module, kernel, rt::Target::cuda, module.source(), "");
  const auto compile_with = [&](const char* compiler) {
    return [&, compiler] {
      set_env("DEVCTX_RT_CUDA_COMPILER", compiler);
      std::size_t bytes = 0;
      const double ms = devctx_bench::seconds_of([&] {
                          bytes = rt::compile(rt::Target::cuda, tu, module, kernel,
                                              std::filesystem::temp_directory_path(), arch, false)
                                      .size();
                        }) *
                        1e3;
      ::unsetenv("DEVCTX_RT_CUDA_COMPILER");
      if (bytes == 0) std::exit(4);
      return ms;
    };
  };
  const double first_nvrtc = compile_with("nvrtc")();  // loads libnvrtc
  const auto m = devctx_bench::alternating_medians(trials, 1, {compile_with("nvrtc"), compile_with("nvcc")});
  std::printf("| cold compile of %s for %s, compile step only (%d alternating trials) | median ms |\n|---|---|\n",
              kernel, arch.c_str(), trials);
  std::printf("| NVRTC, first compile of the process (loads libnvrtc) | %.1f |\n", first_nvrtc);
  std::printf("| NVRTC | %.1f |\n| nvcc -cubin (child process) | %.1f |\n| nvcc / NVRTC | %.2f |\n\n", m[0], m[1],
              m[1] / m[0]);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int trials = 21;
  devctx_bench::Args args("devctx_bench_runtime_kernels",
                          "Runtime-compiled kernels against the same kernels compiled in: cold compile, cached load, "
                          "launch cost, kernel speed (DEVCTX_DEVICE picks the device)");
  args.option("--trials", trials, "alternating trials of each comparison (their median is printed)", 1, 1000);
  std::string arch = "sm_90";
  bool compile_only = false;
#if DEVCTX_BENCH_CUDA_BUILT
  args.option("--arch", arch, "the sm_XY the CUDA compile-only table compiles for (no GPU needed)");
  args.flag("--cuda-compile-only", compile_only, "print the CUDA compile-only table and stop");
#endif
  args.parse(argc, argv);
  std::string dir = (std::filesystem::temp_directory_path() / "devctx-bench-cache-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return 1;
  set_env("DEVCTX_CACHE_DIR", dir);
  const devctx::Module module = devctx::Module::from_file(DEVCTX_BENCH_KERNELS_FILE);
#if DEVCTX_BENCH_CUDA_BUILT
  cuda_compile_only(module, "bench_saxpy", arch, std::min(trials, 11));
  if (compile_only) return 0;
#else
  (void)compile_only;
#endif
  devctx::DeviceContext ctx;
  const bool cpu = ctx.api() == devctx::Api::cpu;
  std::printf("# runtime-compiled kernels on %s\n\n", ctx.name().c_str());
  const devctx::Module reduction = devctx::Module::from_file(DEVCTX_BENCH_REDUCTION_FILE,
                                                             {"-DDEVCTX_BENCH_RUNTIME_SOURCE=1"});

  // 1. compile_function: cold (a fresh cache directory each time; on the CPU alternately with the
  //    fission translator and without) and cached.
  std::vector<double> cold, cold_plain;
  for (int r = 0; r < 3; ++r) {
    for (const bool plain : {false, true}) {
      if (plain && !cpu) continue;
      set_env("DEVCTX_CACHE_DIR", dir + "/cold" + std::to_string(r) + (plain ? "p" : ""));
      if (plain) set_env("DEVCTX_RT_FISSION", "0");
      const auto f = ctx.compile_function(module, "bench_saxpy");
      ::unsetenv("DEVCTX_RT_FISSION");
      if (f.load_kind() != devctx::LoadKind::compiled) return 2;
      (plain ? cold_plain : cold).push_back(f.load_ms());
    }
  }
  std::vector<double> cached;
  set_env("DEVCTX_CACHE_DIR", dir + "/cold0");  // holds bench_saxpy as compiled by default
  for (int r = 0; r < 20; ++r) {
    const auto f = ctx.compile_function(module, "bench_saxpy");
    if (f.load_kind() != devctx::LoadKind::cached) return 3;
    cached.push_back(f.load_ms());
  }
  std::printf("| compile_function(bench_saxpy) | median ms |\n|---|---|\n| cold (compiler runs%s) | %.1f |\n",
              cpu ? ", fission translator first" : "", median(cold));
  if (cpu) std::printf("| cold, DEVCTX_RT_FISSION=0 (compiler only) | %.1f |\n", median(cold_plain));
  std::printf("| cached load | %.3f |\n\n", median(cached));

  set_env("DEVCTX_CACHE_DIR", dir);
  const auto noop = ctx.compile_function(module, "bench_noop");
  const auto block_sum = ctx.compile_function(reduction, "bench_block_sum");
  const auto saxpy = ctx.compile_function(module, "bench_saxpy");
  // The same reduction compiled as written (on fibers), for reference.
  std::optional<devctx::DeviceFunction> block_sum_plain;
  if (cpu) {
    set_env("DEVCTX_RT_FISSION", "0");
    block_sum_plain = ctx.compile_function(reduction, "bench_block_sum");
    ::unsetenv("DEVCTX_RT_FISSION");
  }

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
  auto [compiled_launch, runtime_launch] = pair(
      [&] {
        for (int i = 0; i < launches; ++i) launch_noop(ctx, out);
      },
      [&] {
        for (int i = 0; i < launches; ++i) ctx.enqueue_function(noop, {.grid_dim = 1, .block_dim = 32}, out, 1.0f);
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
  const auto sum_compiled_launch = [&] { launch_block_sum(ctx, cover, x, sums); };
  const auto sum_runtime_launch = [&] { ctx.enqueue_function(block_sum, cover, x, sums); };
  const auto [sum_compiled, sum_runtime] = pair(sum_compiled_launch, sum_runtime_launch, trials);
  const auto [saxpy_compiled, saxpy_runtime] = pair([&] { launch_saxpy(ctx, cover, x, y); },
                                                    [&] { ctx.enqueue_function(saxpy, cover, 2.0f, x, y); }, trials);
  // On the CPU: the reduction compiled at run time as written, against the compiled-in one.
  double sum_plain = 0, sum_plain_compiled = 0;
  if (block_sum_plain)
    std::tie(sum_plain_compiled, sum_plain) =
        pair(sum_compiled_launch, [&] { ctx.enqueue_function(*block_sum_plain, cover, x, sums); }, std::min(trials, 3));

  std::printf("| measure | compiled in | runtime-compiled | runtime / compiled in |\n|---|---|---|---|\n");
  std::printf("| tiny kernel, us per launch (%d enqueued, then synchronize) | %.3f | %.3f | %.2f |\n", launches,
              compiled_launch, runtime_launch, runtime_launch / compiled_launch);
  std::printf("| block_sum (CUDA-style, barriers, 2^22 floats), ms | %.3f | %.3f | %.2f |\n", sum_compiled, sum_runtime,
              sum_runtime / sum_compiled);
  if (block_sum_plain)
    std::printf("| block_sum, runtime-compiled with DEVCTX_RT_FISSION=0, ms | %.3f | %.3f | %.2f |\n",
                sum_plain_compiled, sum_plain, sum_plain / sum_plain_compiled);
  std::printf("| saxpy (2^22 floats), ms | %.3f | %.3f | %.2f |\n", saxpy_compiled, saxpy_runtime,
              saxpy_runtime / saxpy_compiled);
  if (cpu) {
    std::printf("\nblock_sum's execution path (DEVCTX_TRACE):\n- compiled in: %s\n- runtime-compiled: %s\n",
                short_path(execution_of(ctx, sum_compiled_launch)).c_str(),
                short_path(execution_of(ctx, sum_runtime_launch)).c_str());
    if (block_sum_plain)
      std::printf("- runtime-compiled, DEVCTX_RT_FISSION=0: %s\n",
                  short_path(execution_of(ctx, [&] { ctx.enqueue_function(*block_sum_plain, cover, x, sums); })).c_str());
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
