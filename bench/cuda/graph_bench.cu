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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

DEVCTX_KERNEL void bump(devctx::span<float> x, float by) {
  const std::size_t i = devctx::global_idx().x;
  if (i < x.size()) x[i] += by;
}

__global__ void raw_bump(float* x, std::size_t n, float by) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += by;
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 100, replays = 200, trials = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--nodes") nodes = std::max(1, v);
    else if (a == "--replays") replays = std::max(1, v);
    else if (a == "--trials") trials = std::max(1, v);
  }
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
  cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int k = 0; k < nodes; ++k) raw_bump<<<1, 256, 0, stream>>>(x.data(), n, 1.0f);
  cuda_check(cudaStreamEndCapture(stream, &raw_graph), "cudaStreamEndCapture");
  cuda_check(cudaGraphInstantiate(&raw_exec, raw_graph, 0), "cudaGraphInstantiate");

  auto devctx_replays = [&] { for (int r = 0; r < replays; ++r) g.enqueue(ctx); };
  auto raw_replays = [&] { for (int r = 0; r < replays; ++r) cuda_check(cudaGraphLaunch(raw_exec, stream), "cudaGraphLaunch"); };
  auto one_by_one = [&] { for (int k = 0; k < nodes; ++k) ctx.enqueue_function<bump>(cfg, x, 1.0f); };
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
  const double md = median(td), mr = median(tr), mo = median(to);
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
