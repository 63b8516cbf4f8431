// SPDX-License-Identifier: Apache-2.0
// tests/backends_test.cpp - devctx::backends(): each backend's description (devctx/backend.hpp)
// agrees with what the library does with it: names and aliases with parse_device and to_string,
// counts with DeviceContext::count, the default device with the preferences, contexts with
// their backend, and the list is there before main.
#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.hpp"

namespace {

using devctx::Api;
using devctx::Backend;
using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::error_of;
using devctx_test::ScopedEnv;
using testing::HasSubstr;

// Read during static initialization: the descriptors are constant-initialized.
const std::size_t kBackendsBeforeMain = devctx::backends().size();
const char* const kCpuNameBeforeMain = devctx::to_string(Api::cpu);

TEST(Backends, AreListedOnceEachInApiOrderAndBeforeMain) {
  const auto all = devctx::backends();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(kBackendsBeforeMain, all.size());
  EXPECT_STREQ(kCpuNameBeforeMain, "cpu");
  std::set<std::string> names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    ASSERT_NE(all[i], nullptr);
    EXPECT_EQ(int(all[i]->api), int(i)) << all[i]->name;
    EXPECT_TRUE(names.insert(std::string(all[i]->name)).second) << "two backends are called " << all[i]->name;
    for (const std::string_view alias : all[i]->aliases)
      EXPECT_TRUE(names.insert(std::string(alias)).second) << "the name " << alias << " is taken twice";
    EXPECT_EQ(&devctx::backend(all[i]->api), all[i]);
    EXPECT_NE(all[i]->device_count, nullptr);
    EXPECT_NE(all[i]->absent_reason, nullptr);
  }
  EXPECT_EQ(devctx::backend("cpu").name, "cpu");
  EXPECT_EQ(devctx::backend("cuda").name, "cuda");
}

TEST(Backends, NamesAndAliasesAreWhatDeviceNamesAndMessagesUse) {
  for (const Backend* b : devctx::backends()) {
    SCOPED_TRACE(std::string(b->name));
    EXPECT_EQ(std::string(devctx::to_string(b->api)), b->name);
    EXPECT_EQ(b->name.data()[b->name.size()], '\0') << "name views a null-terminated literal";
    EXPECT_EQ(devctx::parse_device(b->name), (devctx::DeviceId{b->api, 0}));
    EXPECT_EQ(devctx::parse_device(std::string(b->name) + ":3"), (devctx::DeviceId{b->api, 3}));
    EXPECT_EQ(&devctx::backend(b->name), b);
    for (const std::string_view alias : b->aliases) {
      EXPECT_EQ(&devctx::backend(alias), b);
      EXPECT_EQ(devctx::parse_device(std::string(alias) + ":2"), (devctx::DeviceId{b->api, 2}));
    }
  }
  EXPECT_EQ(&devctx::backend("gpu"), &devctx::backend("cuda"));
}

TEST(Backends, UnknownNamesAndApiValuesAreErrorsNamingTheBackends) {
  for (const char* name : {"tpu", "", "CPU", "cuda:0", " cpu"}) {
    SCOPED_TRACE(name);
    const auto e = error_of([&] { (void)devctx::backend(name); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(e->what(), HasSubstr(std::string("devctx::backend(\"") + name + "\")"));
    EXPECT_THAT(e->what(), HasSubstr("cpu, cuda (or gpu)"));
  }
  const auto e = error_of([] { (void)devctx::backend(static_cast<Api>(9)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("Api value 9 names no backend"));
  EXPECT_STREQ(devctx::to_string(static_cast<Api>(9)), "unknown");
}

TEST(Backends, BuiltAndCountsAgreeWithTheLibrary) {
  const Backend& cpu = devctx::backend("cpu");
  EXPECT_TRUE(cpu.built);
  EXPECT_FALSE(cpu.has_device_memory);
  EXPECT_GE(cpu.device_count(), 1);
  EXPECT_EQ(devctx::backend("cuda").built, devctx_test::cuda_built());
  EXPECT_TRUE(devctx::backend("cuda").has_device_memory);
  for (const Backend* b : devctx::backends()) {
    SCOPED_TRACE(std::string(b->name));
    const int count = b->device_count();
    EXPECT_EQ(count, DeviceContext::count(b->api));
    if (!b->built) {
      EXPECT_EQ(count, 0);
    }
    EXPECT_FALSE(b->absent_reason().empty());
    if (count == 0) {
      // Opening a device of a backend without one says why, in the backend's own words.
      const auto e = error_of([&] { DeviceContext ctx{b->api, 0}; });
      ASSERT_TRUE(e);
      EXPECT_EQ(e->code(), Errc::not_available);
      EXPECT_THAT(e->what(), HasSubstr(b->absent_reason()));
      EXPECT_THAT(e->what(), HasSubstr(std::string("no ") + std::string(b->name) + " device"));
    }
  }
}

TEST(Backends, TheDefaultDeviceIsTheMostPreferredBackendWithADevice) {
  const ScopedEnv env("DEVCTX_DEVICE", nullptr);
  const Backend* best = nullptr;
  for (const Backend* b : devctx::backends())
    if (b->device_count() > 0 && (best == nullptr || b->default_preference > best->default_preference)) best = b;
  ASSERT_NE(best, nullptr) << "the CPU always has a device";
  EXPECT_GT(devctx::backend("cuda").default_preference, devctx::backend("cpu").default_preference)
      << "a GPU comes before the CPU";
  DeviceContext ctx;
  EXPECT_EQ(ctx.api(), best->api);
  EXPECT_EQ(ctx.id(), 0);
  EXPECT_EQ(&ctx.backend(), best);
}

TEST(Backends, DlpackDeviceTypesAreDlpacksValues) {
  // DLPack's DLDeviceType values (ABI-stable): kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLCUDAManaged 13.
  const Backend& cpu = devctx::backend("cpu");
  EXPECT_EQ(cpu.dlpack_device_type, 1);
  EXPECT_EQ(cpu.dlpack_host_device_type, 1);
  EXPECT_EQ(cpu.dlpack_managed_device_type, 1);
  const Backend& cuda = devctx::backend("cuda");
  EXPECT_EQ(cuda.dlpack_device_type, 2);
  EXPECT_EQ(cuda.dlpack_host_device_type, 3);
  EXPECT_EQ(cuda.dlpack_managed_device_type, 13);
}

TEST(Backends, AreSafeToReadFromManyThreads) {
  std::vector<std::thread> threads;
  std::vector<int> counts(8, -1);
  for (std::size_t t = 0; t < counts.size(); ++t)
    threads.emplace_back([&, t] {
      int sum = 0;
      for (int i = 0; i < 200; ++i)
        for (const Backend* b : devctx::backends()) sum += b->device_count() + int(devctx::backend(b->name).api);
      counts[t] = sum;
    });
  for (auto& t : threads) t.join();
  for (const int c : counts) EXPECT_EQ(c, counts[0]);
}

class BackendOfContext : public devctx_test::BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(BackendOfContext);

TEST_P(BackendOfContext, IsTheDescriptorOfItsApi) {
  EXPECT_EQ(&ctx().backend(), &devctx::backend(api()));
  EXPECT_EQ(ctx().backend().name, devctx::to_string(ctx().api()));
}

}  // namespace
