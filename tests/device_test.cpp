// SPDX-License-Identifier: Apache-2.0
// tests/device_test.cpp - choosing a device, run on every backend: DeviceContext::count, the
// default device and DEVCTX_DEVICE, device names (devctx::parse_device), missing devices and
// DeviceInfo.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"
#include "support/thread_names.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

using devctx::Api;
using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::ScopedEnv;
using testing::HasSubstr;

namespace {

/// The CUDA backend, by its name (devctx/backend.hpp).
Api cuda() { return devctx::backend("cuda").api; }

std::string env_text(Api api, int id) { return std::string(devctx::to_string(api)) + ":" + std::to_string(id); }

}  // namespace

// ---- device selection and properties ------------------------------------------------------------

TEST(DeviceCount, CpuIsAlwaysOneAndCudaMatchesTheBuild) {
  EXPECT_EQ(DeviceContext::count(Api::cpu), 1);
  const int gpus = DeviceContext::count(cuda());
  EXPECT_GE(gpus, 0);
  if (!devctx_test::cuda_built()) {
    EXPECT_EQ(gpus, 0) << "devctx was built without CUDA";
  }
}

TEST(DeviceThreads, CpuWorkersAreNamedForTools) {
#if !defined(__linux__)
  GTEST_SKIP() << "thread names are read from /proc";
#endif
  DeviceContext ctx{Api::cpu};
  const auto names = devctx_test::thread_names();
  ASSERT_FALSE(names.empty()) << "/proc/self/task could not be read";
  for (unsigned i = 0; i < ctx.info().multiprocessors; ++i)
    EXPECT_EQ(std::count(names.begin(), names.end(), "devctx-worker" + std::to_string(i)), 1)
        << "worker " << i << " of " << ctx.info().multiprocessors;
}

TEST(DeviceSelection, ExplicitCpuDevice) {
  DeviceContext ctx{Api::cpu};
  EXPECT_EQ(ctx.api(), Api::cpu);
  EXPECT_EQ(ctx.id(), 0);
}

TEST(DeviceSelection, DefaultWithoutEnvironmentPrefersTheFirstGpu) {
  const ScopedEnv env("DEVCTX_DEVICE", nullptr);
  DeviceContext ctx;
  EXPECT_EQ(ctx.api(), DeviceContext::count(cuda()) > 0 ? cuda() : Api::cpu);
  EXPECT_EQ(ctx.id(), 0);
}

TEST(DeviceSelection, EmptyEnvironmentValueMeansUnset) {
  const ScopedEnv env("DEVCTX_DEVICE", "");
  DeviceContext ctx;
  EXPECT_EQ(ctx.api(), DeviceContext::count(cuda()) > 0 ? cuda() : Api::cpu);
}

TEST(DeviceSelection, EnvironmentCpu) {
  for (const char* text : {"cpu", "cpu:0"}) {
    SCOPED_TRACE(text);
    const ScopedEnv env("DEVCTX_DEVICE", text);
    DeviceContext ctx;
    EXPECT_EQ(ctx.api(), Api::cpu);
    EXPECT_EQ(ctx.id(), 0);
  }
}

TEST(DeviceSelection, EnvironmentCuda) {
  const int n = DeviceContext::count(cuda());
  if (n == 0) {
    // Naming an absent backend is an error, not a silent fallback to the CPU.
    for (const char* text : {"cuda", "cuda:0"}) {
      const ScopedEnv env("DEVCTX_DEVICE", text);
      const auto e = error_of([] { DeviceContext ctx; });
      ASSERT_TRUE(e);
      EXPECT_EQ(e->code(), Errc::not_available) << e->what();
      EXPECT_THAT(e->what(), HasSubstr("CUDA"));
    }
    return;
  }
  {
    const ScopedEnv env("DEVCTX_DEVICE", "cuda");
    DeviceContext ctx;
    EXPECT_EQ(ctx.api(), cuda());
    EXPECT_EQ(ctx.id(), 0);
  }
  for (int id = 0; id < n; ++id) {
    const std::string text = env_text(cuda(), id);
    const ScopedEnv env("DEVCTX_DEVICE", text.c_str());
    DeviceContext ctx;
    EXPECT_EQ(ctx.api(), cuda());
    EXPECT_EQ(ctx.id(), id);
  }
  const std::string past_end = env_text(cuda(), n);
  const ScopedEnv env("DEVCTX_DEVICE", past_end.c_str());
  const auto e = error_of([] { DeviceContext ctx; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::not_available) << e->what();
}

TEST(DeviceSelection, EnvironmentCpuDevicePastTheEndIsNotAvailable) {
  const ScopedEnv env("DEVCTX_DEVICE", "cpu:1");
  const auto e = error_of([] { DeviceContext ctx; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::not_available) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("cpu:1"));
}

TEST(DeviceSelection, EnvironmentGarbageIsAnError) {
  for (const char* text : {"tpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", ":0", "cpu cuda"}) {
    SCOPED_TRACE(text);
    const ScopedEnv env("DEVCTX_DEVICE", text);
    const auto e = error_of([] { DeviceContext ctx; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("DEVCTX_DEVICE"));
    EXPECT_THAT(e->what(), HasSubstr(text));
  }
}

TEST(DeviceSelection, AnApiValueThatNamesNoBackendIsAnError) {
  const auto bogus = static_cast<Api>(7);
  for (const auto& e : {error_of([&] { DeviceContext ctx{bogus}; }), error_of([&] { (void)DeviceContext::count(bogus); })}) {
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("Api value 7 names no backend"));
  }
}

TEST(DeviceNames, TheAcceptedFormsAndWhatTheyName) {
  using devctx::DeviceId;
  using devctx::parse_device;
  EXPECT_EQ(parse_device("cpu"), (DeviceId{Api::cpu, 0}));
  EXPECT_EQ(parse_device("cpu:0"), (DeviceId{Api::cpu, 0}));
  EXPECT_EQ(parse_device("cuda"), (DeviceId{cuda(), 0}));
  EXPECT_EQ(parse_device("gpu"), (DeviceId{cuda(), 0}));
  EXPECT_EQ(parse_device("cuda:7"), (DeviceId{cuda(), 7}));
  EXPECT_EQ(parse_device("gpu:12"), (DeviceId{cuda(), 12}));
  EXPECT_EQ(parse_device("cpu:3"), (DeviceId{Api::cpu, 3})) << "existence is checked when a context opens it";
}

TEST(DeviceNames, AnythingElseIsAnErrorNamingTheText) {
  for (const char* text : {"", "tpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:+1", "cuda: 1", "cuda:1x", ":0",
                           "cpu cuda", " cpu", "cuda:99999999999"}) {
    SCOPED_TRACE(text);
    const auto e = error_of([&] { (void)devctx::parse_device(text); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
    EXPECT_THAT(e->what(), HasSubstr(std::string("device name '") + text + "'"));
  }
}

TEST(DeviceNames, FromTheEnvironment) {
  {
    const ScopedEnv env("DEVCTX_DEVICE", nullptr);
    EXPECT_FALSE(devctx::device_from_environment());
  }
  {
    const ScopedEnv env("DEVCTX_DEVICE", "");
    EXPECT_FALSE(devctx::device_from_environment()) << "an empty value counts as unset";
  }
  {
    const ScopedEnv env("DEVCTX_DEVICE", "cuda:2");
    EXPECT_EQ(devctx::device_from_environment(), (devctx::DeviceId{cuda(), 2}));
  }
  const ScopedEnv env("DEVCTX_DEVICE", "tpu");
  const auto e = error_of([] { (void)devctx::device_from_environment(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("DEVCTX_DEVICE='tpu' names no backend: use cpu, cuda or cuda:N"));
}

TEST(DeviceSelection, EnvironmentDoesNotAffectExplicitChoice) {
  const ScopedEnv env("DEVCTX_DEVICE", "garbage");
  DeviceContext ctx{Api::cpu};
  EXPECT_EQ(ctx.api(), Api::cpu);
}

TEST(DeviceSelection, MissingDevicesAreNotAvailable) {
  const int n = DeviceContext::count(cuda());
  // CUDA with no CUDA device (or past the last one), and a second CPU.
  for (const auto& [api, id] : {std::pair{cuda(), n}, std::pair{Api::cpu, 1}, std::pair{Api::cpu, -1}}) {
    SCOPED_TRACE(env_text(api, id));
    const auto e = error_of([&, a = api, i = id] { DeviceContext ctx{a, i}; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::not_available) << e->what();
  }
  if (n == 0) {
    const auto e = error_of([] { DeviceContext ctx{cuda()}; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::not_available);
    EXPECT_THAT(e->what(), HasSubstr("Api::cpu")) << "the message should say how to run on the CPU";
  }
}

class Device : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Device);

TEST_P(Device, IdentityAndInfo) {
  EXPECT_EQ(ctx().api(), api());
  EXPECT_EQ(ctx().id(), 0);
  const devctx::DeviceInfo& info = ctx().info();
  EXPECT_FALSE(ctx().name().empty());
  EXPECT_EQ(ctx().name(), info.name);
  EXPECT_EQ(info.api, api());
  EXPECT_EQ(info.id, 0);
  EXPECT_GE(info.multiprocessors, 1u);
  EXPECT_GE(info.max_threads_per_block, 1024u);
  EXPECT_GE(info.max_block_dim.x, 1024u);
  EXPECT_GE(info.max_block_dim.y, 1024u);
  EXPECT_GE(info.max_block_dim.z, 64u);
  EXPECT_GE(info.max_grid_dim.x, 65535u);
  EXPECT_GE(info.max_grid_dim.y, 65535u);
  EXPECT_GE(info.max_grid_dim.z, 65535u);
  EXPECT_GE(info.max_shared_bytes_per_block, 48u * 1024u);
  EXPECT_EQ(info.warp_size, 32u);
  EXPECT_EQ(info.warp_size, devctx::warp_size);
  EXPECT_GT(info.total_memory_bytes, std::size_t{1} << 28);
  if (api() == Api::cpu) {
    EXPECT_EQ(info.compute_capability_major, 0);
  } else {
    EXPECT_GE(info.compute_capability_major, 5);
  }
  EXPECT_STREQ(devctx::to_string(api()), api() == Api::cpu ? "cpu" : "cuda");
}

TEST_P(Device, TwoContextsOfOneDeviceWorkSideBySide) {
  DeviceContext other{api(), 0};
  EXPECT_EQ(other.name(), ctx().name());
  auto a = ctx().enqueue_create_buffer<std::uint32_t>(1000);
  auto b = other.enqueue_create_buffer<std::uint32_t>(1000);
  ctx().enqueue_function<iota_kernel>(cover(1000), a, 1u);
  other.enqueue_function<iota_kernel>(cover(1000), b, 2u);
  const auto va = download(ctx(), a);
  const auto vb = download(other, b);
  for (std::uint32_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(va[i], 1 + i);
    ASSERT_EQ(vb[i], 2 + i);
  }
}

TEST_P(Device, DefaultDeviceFromEnvironmentNamesThisBackend) {
  const ScopedEnv env("DEVCTX_DEVICE", devctx::to_string(api()));
  DeviceContext by_env;
  EXPECT_EQ(by_env.api(), api());
  EXPECT_EQ(by_env.id(), 0);
  // And it is a working device.
  auto buf = by_env.enqueue_create_buffer<std::uint32_t>(10);
  by_env.enqueue_function<iota_kernel>(cover(10), buf, 7u);
  EXPECT_EQ(download(by_env, buf)[9], 16u);
}
