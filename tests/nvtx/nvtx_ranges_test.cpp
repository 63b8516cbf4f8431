// SPDX-License-Identifier: Apache-2.0
// tests/nvtx/nvtx_ranges_test.cpp - the CUDA backend's NVTX ranges (src/backends/cuda/nvtx_ranges.hpp)
// seen through the test injection library (nvtx_recorder.cpp), without a GPU: NVTX loads its
// injection library on its first call, which needs no device. The range helper, then the NVTX
// tool of the operation pipeline (core/subscribers.hpp) on a CPU context's operations. ctest runs
// it twice: DEVCTX_NVTX=1 (each range reaches the "devctx" domain, named, nested and popped) and
// DEVCTX_NVTX=0 (no NVTX call at all: the library is never loaded, no name is built).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "backends/cuda/nvtx_ranges.hpp"
#include "nvtx/nvtx_record.hpp"

namespace devctx_test {
namespace {

using devctx::detail::cuda::NvtxRange;

bool nvtx_wanted() {
  const char* flag = std::getenv("DEVCTX_NVTX");
  return flag != nullptr && std::string(flag) == "1";
}

TEST(NvtxRanges, EachRangeReachesTheDevctxDomainOnlyWhileOn) {
  const std::string path = nvtx_record_path();
  ASSERT_FALSE(path.empty()) << "run through ctest: DEVCTX_NVTX_RECORD names the record file";
  std::remove(path.c_str());  // before NVTX's first call, which opens it
  const bool on = nvtx_wanted();
  ASSERT_EQ(devctx::detail::cuda::nvtx_enabled(), on);

  std::mt19937_64 rng(std::random_device{}());
  const std::string outer = "copy HtoD " + std::to_string(rng() % 100000) + " bytes";
  const std::string inner = "kernel_" + std::to_string(rng() % 100000);
  int names_built = 0;
  {
    const NvtxRange a([&] {
      ++names_built;
      return outer;
    });
    {
      const NvtxRange b([&] {
        ++names_built;
        return inner;
      });
    }
    // A name that cannot be built (no memory): no range, and so no pop for it.
    const NvtxRange failed([&]() -> std::string {
      ++names_built;
      throw std::bad_alloc();
    });
  }
  const NvtxRange last([&] {
    ++names_built;
    return std::string("synchronize");
  });

  const auto calls = read_nvtx_record(path);
  if (!on) {
    EXPECT_EQ(names_built, 0);  // off: one branch, no name
    EXPECT_TRUE(calls.empty()) << calls.size() << " NVTX calls recorded with DEVCTX_NVTX=0";
    return;
  }
  EXPECT_EQ(names_built, 4);
  const std::vector<NvtxCall> expected = {
      {"init", "", ""},      {"domain", "devctx", ""}, {"push", "devctx", outer},         {"push", "devctx", inner},
      {"pop", "devctx", ""}, {"pop", "devctx", ""},    {"push", "devctx", "synchronize"},  // still open: `last` pops when the test returns
  };
  ASSERT_EQ(calls.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(calls[i].what, expected[i].what) << "call " << i;
    EXPECT_EQ(calls[i].domain, expected[i].domain) << "call " << i;
    EXPECT_EQ(calls[i].message, expected[i].message) << "call " << i;
  }
}

// Runs after the test above (gtest's order of definition): NVTX is already initialised, so only
// the calls recorded from here on are this test's.
TEST(NvtxRanges, ThePipelineNamesEveryOperationOfAContextInOrder) {
  const std::string path = nvtx_record_path();
  ASSERT_FALSE(path.empty()) << "run through ctest: DEVCTX_NVTX_RECORD names the record file";
  const std::size_t before = read_nvtx_record(path).size();
  std::mt19937_64 rng(std::random_device{}());
  const std::size_t n = std::uniform_int_distribution<std::size_t>(256, 65536)(rng);
  const std::size_t bytes = n * sizeof(std::uint32_t);
  const auto value = std::uint32_t(rng());
  std::vector<std::uint32_t> input(n), pageable(n), out(n, 0xDEADBEEFu);
  for (auto& x : input) x = std::uint32_t(rng());
  for (auto& x : pageable) x = std::uint32_t(rng());
  {
    devctx::DeviceContext ctx(devctx::Api::cpu);
    auto h = ctx.enqueue_create_host_buffer<std::uint32_t>(n);
    auto d = ctx.enqueue_create_buffer<std::uint32_t>(n);
    auto d2 = ctx.enqueue_create_buffer<std::uint32_t>(n);
    ctx.synchronize();
    for (std::size_t i = 0; i < n; ++i) h[i] = input[i];
    ctx.enqueue_copy(d, h);
    ctx.enqueue_copy(d2, std::span<const std::uint32_t>(pageable));
    ctx.enqueue_memset(d, value);
    ctx.enqueue_copy(h, d);
    ctx.synchronize();
    ctx.enqueue_copy(std::span<std::uint32_t>(out), d2);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(h[i], value) << i;
      ASSERT_EQ(out[i], pageable[i]) << i;
    }
  }
  const auto all = read_nvtx_record(path);
  const auto [pushes, balanced] = devctx_ranges(all, before);
  if (!nvtx_wanted()) {
    EXPECT_EQ(all.size(), before) << "NVTX calls with DEVCTX_NVTX=0";
    return;
  }
  EXPECT_TRUE(balanced) << "every range popped, none twice";
  const std::string size = bytes_name(bytes);
  const std::vector<std::string> wanted = {
      "create_host_buffer " + size,
      "create_buffer " + size,
      "create_buffer " + size,
      "synchronize",
      "copy HtoD " + size,
      "copy HtoD pageable " + size,
      "memset " + size,
      "copy DtoH " + size,
      "synchronize",
      "copy DtoH pageable " + size,
      "free " + size,
      "free " + size,
      "free " + size,
  };
  // Exactly these, in this order: every operation of the program above goes through the pipeline.
  EXPECT_EQ(pushes, wanted);
}

}  // namespace
}  // namespace devctx_test
