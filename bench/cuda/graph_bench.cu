// SPDX-License-Identifier: Apache-2.0
// devctx_bench_graph: replaying a devctx::Graph of 100 small kernels against replaying the same
// kernels as a raw CUDA graph (stream capture of cudaLaunchKernel), in the same run on the same
// GPU. Prints the device time per replay and per node of each and their ratio (issue 14's target:
// devctx <= 1.1x raw per node). Also the cost of enqueueing the 100 kernels one by one, for
// scale. Exit status non-zero when a result is wrong; 77 without a GPU.
//
//   devctx_bench_graph [--nodes N] [--replays R] [--trials T]
//
// Like cuda_bench.cu, this file calls the CUDA runtime directly for its baseline.
#include <devctx/devctx.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "support/args.hpp"
#include "support/raw_cuda.hpp"
#include "support/stats.hpp"

namespace {

DEVCTX_KERNEL void bump(devctx::span<float> x, float by) {
  const std::size_t i = devctx::global_idx().x;
  if (i < x.size()) x[i] += by;
}

__global__ void raw_bump(float* x, std::size_t n, float by) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += by;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 100, replays = 200, trials = 9;
  devctx_bench::Args args("devctx_bench_graph", "devctx::Graph replay against a raw CUDA graph of the same small kernels");
  args.option("--nodes", nodes, "Kernels in the graph", 1, 100000);
  args.option("--replays", replays, "Replays per timing", 1, 1000000);
  args.option("--trials", trials, "Interleaved trials (median reported)", 1, 100000);
  args.parse(argc, argv);
  if (devctx::DeviceContext::count(devctx::backend("cuda").api) == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  devctx::DeviceContext ctx(devctx::backend("cuda").api);
  const std::size_t n = 256;  // one block: the kernels are as small as they come
  auto x = ctx.enqueue_create_buffer<float>(n);
  ctx.enqueue_memset(x, 0.0f);
  const devctx::LaunchConfig cfg{.grid_dim = 1, .block_dim = 256};
  devctx::Graph g = devctx::Graph::record(ctx, [&](devctx::StreamRef s) {
    for (int k = 0; k < nodes; ++k) s.enqueue_function<bump>(cfg, x, 1.0f);
  });

  // The raw baseline on the context's own stream, over the same memory.
  cudaStream_t stream = static_cast<cudaStream_t>(devctx::cuda_stream(ctx));
  cudaGraph_t raw_graph = nullptr;
  cudaGraphExec_t raw_exec = nullptr;
  ctx.synchronize();
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < nodes; ++k) raw_bump<<<1, 256, 0, stream>>>(x.data(), n, 1.0f);
  CK(cudaStreamEndCapture(stream, &raw_graph));
  CK(cudaGraphInstantiate(&raw_exec, raw_graph, 0));

  auto devctx_replays = [&] {
    for (int r = 0; r < replays; ++r) g.enqueue(ctx);
  };
  auto raw_replays = [&] {
    for (int r = 0; r < replays; ++r) CK(cudaGraphLaunch(raw_exec, stream));
  };
  auto one_by_one = [&] {
    for (int k = 0; k < nodes; ++k) ctx.enqueue_function<bump>(cfg, x, 1.0f);
  };
  // Warm-up, then interleaved trials.
  devctx_replays();
  raw_replays();
  ctx.synchronize();
  std::vector<double> td, tr, to;
  for (int t = 0; t < trials; ++t) {
    td.push_back(std::chrono::duration<double, std::micro>(ctx.execution_time(devctx_replays)).count());
    tr.push_back(std::chrono::duration<double, std::micro>(ctx.execution_time(raw_replays)).count());
    to.push_back(std::chrono::duration<double, std::micro>(ctx.execution_time(one_by_one, std::size_t(replays))).count());
  }
  // Every replay and launch added 1 to every element.
  const double expected = double(nodes) * replays * (2.0 + 3.0 * trials);
  std::vector<float> got(n);
  ctx.enqueue_copy(std::span<float>(got), x);
  bool ok = true;
  for (float v : got) ok = ok && double(v) == expected;
  const double md = devctx_bench::median(td), mr = devctx_bench::median(tr), mo = devctx_bench::median(to);
  const double per = double(replays) * nodes;
  std::printf("%s: graph of %d kernels (1 block of 256 threads), %d replays per timing, median of %d trials\n",
              ctx.name().c_str(), nodes, replays, trials);
  std::printf("  %-34s %12s %12s\n", "", "us/replay", "us/node");
  std::printf("  %-34s %12.2f %12.3f\n", "raw CUDA graph (stream capture)", mr / replays, mr / per);
  std::printf("  %-34s %12.2f %12.3f\n", "devctx::Graph", md / replays, md / per);
  std::printf("  %-34s %12.2f %12.3f\n", "devctx enqueue_function, one by one", mo / replays, mo / per);
  std::printf("  devctx::Graph / raw graph per node: %.3f (target <= 1.1)%s\n", md / mr, ok ? "" : "  RESULT WRONG");
  cudaGraphExecDestroy(raw_exec);
  cudaGraphDestroy(raw_graph);
  return ok ? 0 : 1;
}
