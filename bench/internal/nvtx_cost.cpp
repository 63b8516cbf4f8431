// SPDX-License-Identifier: Apache-2.0
// devctx_bench_nvtx_cost: what the CUDA backend's NVTX ranges (DEVCTX_NVTX, docs/observability.md)
// cost the host per operation, without a GPU: the range helper (src/backends/cuda/nvtx_ranges.hpp)
// with the names the CUDA queue gives a copy and a kernel launch, timed with DEVCTX_NVTX=0 (one
// branch, no name built) and =1 with no profiler attached (the name built, NVTX's push and pop,
// which return at once without a tool), each in a child process of its own (the setting is read
// once per process). What a profiler does with the ranges it receives is the profiler's cost.
// Usage: devctx_bench_nvtx_cost [--reps N]
#include <cstdio>
#include <functional>
#include <string>

#include "backends/cuda/nvtx_ranges.hpp"
#include "core/text.hpp"
#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/trials.hpp"

namespace {

using devctx::detail::concat;
using devctx::detail::cuda::NvtxRange;

/// Median nanoseconds per range of `f` over `reps` batches of 10000, after one batch of warm-up.
double ns_per_range(int reps, const std::function<void(int)>& f) {
  return devctx_bench::median_of(reps, 1, [&] {
    const auto start = devctx_bench::Clock::now();
    for (int i = 0; i < 10000; ++i) f(i);
    return devctx_bench::us_since(start) * 1e3 / 10000;
  });
}

/// The child: prints "COPY_NS KERNEL_NS" for this process's DEVCTX_NVTX.
int child(int reps) {
  (void)devctx::detail::cuda::nvtx_enabled();  // reads DEVCTX_NVTX, as creating a queue does
  volatile std::size_t sink = 0;
  const double copy = ns_per_range(reps, [&](int i) {
    const std::size_t bytes = (std::size_t{4} << 20) + std::size_t(i);
    const NvtxRange range(
        [&] { return concat("copy ", 'H', "to", 'D', " pageable ", devctx::detail::bytes_text(bytes)); });
    sink = sink + bytes;
  });
  static constexpr const char* kName = "my_namespace::vector_add<float>";
  const double kernel = ns_per_range(reps, [&](int i) {
    const NvtxRange range([&] { return std::string(kName); });
    sink = sink + std::size_t(i);
  });
  std::printf("%.1f %.1f\n", copy, kernel);
  return 0;
}

bool run_child(const char* self, const char* nvtx, int reps, double& copy, double& kernel) {
  const std::string command = std::string("DEVCTX_NVTX=") + nvtx + " NVTX_INJECTION64_PATH= '" + self +
                              "' --child --reps " + std::to_string(reps);
  FILE* out = popen(command.c_str(), "r");
  if (out == nullptr) return false;
  const bool ok = std::fscanf(out, "%lf %lf", &copy, &kernel) == 2;
  return pclose(out) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  bool is_child = false;
  devctx_bench::Args args("devctx_bench_nvtx_cost",
                          "What the CUDA backend's NVTX ranges cost the host per operation (no GPU needed)");
  args.option("--reps", reps, "Batches of 10000 ranges per measurement (median reported)", 3, 100000);
  args.hidden_flag("--child", is_child);
  args.parse(argc, argv);
  if (is_child) return child(reps);
  double copy_off = 0, kernel_off = 0, copy_on = 0, kernel_on = 0;
  if (!run_child(argv[0], "0", reps, copy_off, kernel_off) || !run_child(argv[0], "1", reps, copy_on, kernel_on)) {
    std::fprintf(stderr, "devctx_bench_nvtx_cost: a child run failed\n");
    return 1;
  }
  std::printf("devctx NVTX ranges: host time per range (median of %d batches of 10000), no profiler attached\n", reps);
  std::printf("  range                                   DEVCTX_NVTX=0   DEVCTX_NVTX=1\n");
  std::printf("  copy (\"copy HtoD pageable 4.0 MiB\")      %8.1f ns     %8.1f ns\n", copy_off, copy_on);
  std::printf("  kernel launch (the kernel's name)       %8.1f ns     %8.1f ns\n", kernel_off, kernel_on);
  return 0;
}
