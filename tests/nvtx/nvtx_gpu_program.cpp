// SPDX-License-Identifier: Apache-2.0
// tests/nvtx/nvtx_gpu_program.cpp - NVTX names on the GPU without a profiler: run with
// DEVCTX_NVTX=1 and the test injection library (NVTX_INJECTION64_PATH, DEVCTX_NVTX_RECORD; see
// nvtx_recorder.cpp), a scripted program (allocations, a pinned and a pageable upload, a
// kernel, a download, a synchronize) checks its results element by element, then that the
// "devctx" domain holds a range per operation, in order, named as devctx names them (with the
// byte counts: "copy HtoD 16.0 KiB (16384 bytes)", the kernel's source name as the trace names
// it, "synchronize", "free ..."), every range popped. Prints PASS/FAIL lines; exit 0 when all pass, 1 when one
// fails, 77 (skipped) without a CUDA device unless DEVCTX_REQUIRE_GPU=1. Compiled by nvcc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "nvtx/nvtx_record.hpp"
#include "support/gpu_program.hpp"
#include "support/test_kernels.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

}  // namespace

int main() {
  using devctx_test::NvtxCall;
  if (devctx::DeviceContext::count(devctx_test::gpu::cuda_api()) == 0) return devctx_test::gpu::no_gpu_exit();
  const std::string path = devctx_test::nvtx_record_path();
  if (path.empty() || std::getenv("NVTX_INJECTION64_PATH") == nullptr) {
    std::printf("FAIL  run through ctest: NVTX_INJECTION64_PATH and DEVCTX_NVTX_RECORD are unset\n");
    return 1;
  }
  std::remove(path.c_str());  // before devctx's first NVTX call, which opens it

  std::mt19937_64 rng(std::random_device{}());
  const std::size_t n = std::uniform_int_distribution<std::size_t>(1024, 65536)(rng) / 4 * 4;
  const std::size_t bytes = n * sizeof(std::uint32_t);
  const std::uint32_t add = std::uint32_t(rng() % 1000000);
  std::vector<std::uint32_t> input(n), pageable(n), out(n, 0xDEADBEEFu);
  for (auto& x : input) x = std::uint32_t(rng());
  for (auto& x : pageable) x = std::uint32_t(rng());
  std::string kernel_name;
  {
    devctx::DeviceContext ctx(devctx_test::gpu::cuda_api(), 0);
    devctx::trace::start();  // the trace names the kernel as devctx does
    auto h = ctx.enqueue_create_host_buffer<std::uint32_t>(n);
    auto d = ctx.enqueue_create_buffer<std::uint32_t>(n);
    auto d2 = ctx.enqueue_create_buffer<std::uint32_t>(n);
    ctx.synchronize();
    for (std::size_t i = 0; i < n; ++i) h[i] = input[i];
    ctx.enqueue_copy(d, h);
    ctx.enqueue_copy(d2, std::span<const std::uint32_t>(pageable));
    ctx.enqueue_function<add_kernel>({.grid_dim = unsigned((n + 127) / 128), .block_dim = 128}, d, add);
    ctx.enqueue_copy(h, d);
    ctx.synchronize();
    ctx.enqueue_copy(std::span<std::uint32_t>(out), d2);
    bool ok = true;
    for (std::size_t i = 0; i < n && ok; ++i) ok = h[i] == input[i] + add && out[i] == pageable[i];
    expect(ok, "every element of the kernel's result and of the pageable round trip");
    devctx::trace::stop();
    for (const auto& op : devctx::trace::operations())
      if (op.kind == devctx::trace::Kind::kernel) kernel_name = op.name;
  }

  const auto calls = devctx_test::read_nvtx_record(path);
  const bool domain_created = std::any_of(calls.begin(), calls.end(),
                                          [](const NvtxCall& c) { return c.what == "domain" && c.domain == "devctx"; });
  const auto [pushes, balanced] = devctx_test::devctx_ranges(calls);
  expect(!calls.empty() && calls[0].what == "init", "the injection library was loaded (" + path + ")");
  expect(domain_created, "devctx created its NVTX domain \"devctx\"");
  expect(balanced, "every devctx range was popped, none twice");
  const std::string size = devctx_test::bytes_name(bytes);
  const std::vector<std::string> wanted = {
      "create_host_buffer " + size,
      "create_buffer " + size,
      "create_buffer " + size,
      "synchronize",
      "copy HtoD " + size,
      "copy HtoD pageable " + size,
      kernel_name,
      "copy DtoH " + size,
      "synchronize",
      "copy DtoH pageable " + size,
      "free " + size,  // d2, d and h, at the end of their scope
      "free " + size,
      "free " + size,
  };
  // In this order among the ranges (others, such as frees, may come between).
  std::size_t at = 0;
  for (const std::string& name : wanted) {
    while (at < pushes.size() && pushes[at] != name) ++at;
    expect(!name.empty() && at < pushes.size(), "a range named \"" + name + "\" in order");
    if (at < pushes.size()) ++at;
  }
  if (failures > 0) {
    std::printf("the devctx ranges recorded:\n");
    for (const auto& p : pushes) std::printf("  %s\n", p.c_str());
  }
  std::printf("%s: %d failure(s)\n", failures == 0 ? "PASSED" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
