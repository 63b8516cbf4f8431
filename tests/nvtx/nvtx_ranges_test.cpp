// SPDX-License-Identifier: Apache-2.0
// tests/nvtx/nvtx_ranges_test.cpp - the CUDA backend's NVTX range helper
// (src/backends/cuda/nvtx_ranges.hpp) seen through the test injection library (nvtx_recorder.cpp),
// without a GPU: NVTX loads its injection library on its first call, which needs no device.
// ctest runs it twice: DEVCTX_NVTX=1 (each range reaches the "devctx" domain, named, nested and
// popped) and DEVCTX_NVTX=0 (no NVTX call at all: the library is never loaded, no name is built).
#include <gtest/gtest.h>

#include <cstdio>
#include <new>
#include <random>
#include <string>
#include <vector>

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
      {"init", "", ""},
      {"domain", "devctx", ""},
      {"push", "devctx", outer},
      {"push", "devctx", inner},
      {"pop", "devctx", ""},
      {"pop", "devctx", ""},
      {"push", "devctx", "synchronize"},  // still open: `last` pops when the test returns
  };
  ASSERT_EQ(calls.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(calls[i].what, expected[i].what) << "call " << i;
    EXPECT_EQ(calls[i].domain, expected[i].domain) << "call " << i;
    EXPECT_EQ(calls[i].message, expected[i].message) << "call " << i;
  }
}

}  // namespace
}  // namespace devctx_test
