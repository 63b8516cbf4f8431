// SPDX-License-Identifier: Apache-2.0
// tests/scale_test.cpp - several devices in one process: splitting the CPU into devices, copies
// and event waits between devices, and every collective x operation x type of a Communicator
// over 1, 2, 3 and 4 CPU devices against a host reference; mismatched and missing calls.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/comm_cases.hpp"
#include "support/test_support.hpp"

namespace {

using devctx::Api;
using devctx::Communicator;
using devctx::DeviceContext;
using devctx::Errc;
using devctx::ReduceOp;

/// Splits the CPU into `n` devices for one test, and back to what the environment says after.
class CpuDevices {
 public:
  explicit CpuDevices(int n) { DeviceContext::set_cpu_device_count(n); }
  ~CpuDevices() { DeviceContext::set_cpu_device_count(0); }
  CpuDevices(const CpuDevices&) = delete;
  CpuDevices& operator=(const CpuDevices&) = delete;
};

template <class F>
Errc error_of(F&& f) {
  try {
    f();
  } catch (const devctx::Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no devctx::Error was thrown";
  return Errc::backend_error;
}

TEST(CpuDevicesTest, CountFollowsTheSettingAndTheEnvironment) {
  {
    const CpuDevices split(4);
    EXPECT_EQ(DeviceContext::count(Api::cpu), 4);
    std::vector<DeviceContext> ctx;
    for (int i = 0; i < 4; ++i) ctx.emplace_back(Api::cpu, i);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(ctx[std::size_t(i)].id(), i);
      EXPECT_NE(ctx[std::size_t(i)].name().find("CPU device " + std::to_string(i) + " of 4"), std::string::npos);
      EXPECT_GE(ctx[std::size_t(i)].info().multiprocessors, 1u);
      for (int j = 0; j < 4; ++j) EXPECT_TRUE(ctx[std::size_t(i)].can_access_peer(ctx[std::size_t(j)]));
    }
    EXPECT_EQ(error_of([] { DeviceContext c(Api::cpu, 4); }), Errc::not_available);
  }
  EXPECT_EQ(DeviceContext::count(Api::cpu), 1);
  {
    const devctx_test::ScopedEnv env("DEVCTX_CPU_DEVICES", "3");
    EXPECT_EQ(DeviceContext::count(Api::cpu), 3);
  }
  for (const char* bad : {"0", "65", "-1", "two", "2x"}) {
    const devctx_test::ScopedEnv env("DEVCTX_CPU_DEVICES", bad);
    EXPECT_EQ(error_of([] { (void)DeviceContext::count(Api::cpu); }), Errc::invalid_argument) << bad;
    EXPECT_EQ(error_of([] { DeviceContext c(Api::cpu); }), Errc::invalid_argument) << bad;
  }
  EXPECT_EQ(error_of([] { DeviceContext::set_cpu_device_count(-1); }), Errc::invalid_argument);
  EXPECT_EQ(error_of([] { DeviceContext::set_cpu_device_count(65); }), Errc::invalid_argument);
  EXPECT_EQ(DeviceContext::count(Api::cpu), 1);
}

TEST(CpuDevicesTest, CopiesBetweenDevicesInStreamOrderOnEitherSide) {
  const CpuDevices split(3);
  DeviceContext a(Api::cpu, 0), b(Api::cpu, 1), c(Api::cpu, 2);
  auto rng = devctx_test::test_rng();
  const std::size_t n = 100003;
  std::vector<std::int32_t> host(n);
  for (auto& x : host) x = std::int32_t(rng());
  auto on_a = a.enqueue_create_buffer<std::int32_t>(n);
  a.enqueue_copy(on_a, std::span<const std::int32_t>(host));
  auto on_b = b.enqueue_create_buffer<std::int32_t>(n);
  b.enqueue_memset(on_b, -7);
  // b's copy must wait for a's upload: order it with an event of a.
  b.enqueue_wait_for(a.record_event());
  b.enqueue_copy(on_b, on_a);  // pulled on b's stream
  auto on_c = c.enqueue_create_buffer<std::int32_t>(n);
  c.enqueue_memset(on_c, -9);
  c.enqueue_wait_for(b.record_event());
  c.enqueue_copy(on_c.slice(0, n / 2), on_b.slice(0, n / 2));  // pulled on c's stream
  c.synchronize();
  b.enqueue_wait_for(c.record_event());
  b.enqueue_copy(on_c.slice(n / 2, n - n / 2), on_b.slice(n / 2, n - n / 2));  // pushed from b's stream
  std::vector<std::int32_t> back(n, 0);
  b.synchronize();
  c.enqueue_copy(std::span<std::int32_t>(back), on_c);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], host[i]) << "element " << i;
  // Dropping a buffer right after another device's stream used it is safe: its free waits.
  {
    auto tmp = a.enqueue_create_buffer<std::int32_t>(n);
    a.enqueue_memset(tmp, 5);
    b.enqueue_wait_for(a.record_event());
    b.enqueue_copy(on_b, tmp);
  }
  std::vector<std::int32_t> fives(n, 0);
  b.enqueue_copy(std::span<std::int32_t>(fives), on_b);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(fives[i], 5) << "element " << i;
  // Neither side on the stream's device: refused, nothing enqueued.
  EXPECT_EQ(error_of([&] { c.enqueue_copy(on_a, on_b); }), Errc::wrong_device);
}

Communicator* rank_of(std::vector<Communicator>& comms, std::size_t i) { return &comms[i]; }

class CommRanksTest : public testing::TestWithParam<int> {};

TEST_P(CommRanksTest, EveryCollectiveOperationAndTypeMatchesTheHostReference) {
  const int n = GetParam();
  const CpuDevices split(n);
  std::vector<DeviceContext> ctx;
  for (int i = 0; i < n; ++i) ctx.emplace_back(Api::cpu, i);
  auto comms = Communicator::create(ctx);
  ASSERT_EQ(comms.size(), std::size_t(n));
  devctx_test::comm::Local local;
  local.size = n;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(comms[std::size_t(i)].rank(), i);
    EXPECT_EQ(comms[std::size_t(i)].size(), n);
    local.ranks.push_back(i);
    local.contexts.push_back(&ctx[std::size_t(i)]);
    local.comms.push_back(rank_of(comms, std::size_t(i)));
  }
  int failures = 0;
  devctx_test::comm::run_all(local, devctx_test::run_seed(), [&](const std::string& what) {
    if (++failures <= 20) ADD_FAILURE() << what;
  });
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommRanksTest, testing::Values(1, 2, 3, 4));

TEST(CommTest, MisuseThrowsBeforeEnqueueing) {
  const CpuDevices split(2);
  std::vector<DeviceContext> ctx;
  ctx.emplace_back(Api::cpu, 0);
  ctx.emplace_back(Api::cpu, 1);
  auto comms = Communicator::create(ctx);
  auto a = ctx[0].enqueue_create_buffer<float>(8);
  auto b = ctx[1].enqueue_create_buffer<float>(8);
  auto small = ctx[0].enqueue_create_buffer<float>(4);
  EXPECT_EQ(error_of([&] { comms[0].all_reduce(b, b, ReduceOp::sum); }), Errc::wrong_device);
  EXPECT_EQ(error_of([&] { comms[0].all_reduce(a, small, ReduceOp::sum); }), Errc::size_mismatch);
  EXPECT_EQ(error_of([&] { comms[0].all_gather(a, a); }), Errc::size_mismatch);
  EXPECT_EQ(error_of([&] { comms[0].broadcast(a, 2); }), Errc::invalid_argument);
  EXPECT_EQ(error_of([&] { comms[0].send(a, 0); }), Errc::invalid_argument);
  EXPECT_EQ(error_of([&] { comms[1].all_reduce(b, b, ReduceOp(9)); }), Errc::invalid_argument);
  EXPECT_EQ(error_of([&] { (void)Communicator::create(std::span<DeviceContext>()); }), Errc::invalid_argument);
  EXPECT_EQ(error_of([&] { (void)Communicator().rank(); }), Errc::invalid_handle);
  // Nothing was enqueued: a matched call still works.
  ctx[0].enqueue_memset(a, 1.0f);
  ctx[1].enqueue_memset(b, 2.0f);
  comms[0].all_reduce(a, a, ReduceOp::sum);
  comms[1].all_reduce(b, b, ReduceOp::sum);
  std::vector<float> got(8);
  ctx[1].enqueue_copy(std::span<float>(got), b);
  for (float x : got) EXPECT_EQ(x, 3.0f);
  ctx[0].synchronize();
}

TEST(CommTest, MismatchedCallsFailOnEveryRankInsteadOfHanging) {
  const CpuDevices split(2);
  std::vector<DeviceContext> ctx;
  ctx.emplace_back(Api::cpu, 0);
  ctx.emplace_back(Api::cpu, 1);
  auto comms = Communicator::create(ctx);
  auto a = ctx[0].enqueue_create_buffer<float>(8);
  auto b = ctx[1].enqueue_create_buffer<float>(8);
  ctx[0].enqueue_memset(a, 1.0f);
  ctx[1].enqueue_memset(b, 1.0f);
  comms[0].all_reduce(a, a, ReduceOp::sum);
  try {
    comms[1].broadcast(b, 0);
    ADD_FAILURE() << "a mismatched call was accepted";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("all_reduce"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("broadcast"), std::string::npos) << e.what();
  }
  EXPECT_EQ(error_of([&] { ctx[0].synchronize(); }), Errc::backend_error);
  ctx[0].synchronize();  // reported once, then usable
  ctx[1].synchronize();
  // The next collective is matched again.
  comms[0].all_reduce(a, a, ReduceOp::max);
  comms[1].all_reduce(b, b, ReduceOp::max);
  ctx[0].synchronize();
  ctx[1].synchronize();
}

TEST(CommTest, AMissingRankTimesOut) {
  const CpuDevices split(2);
  const devctx_test::ScopedEnv timeout("DEVCTX_COMM_TIMEOUT_S", "1");
  std::vector<DeviceContext> ctx;
  ctx.emplace_back(Api::cpu, 0);
  ctx.emplace_back(Api::cpu, 1);
  auto comms = Communicator::create(ctx);
  auto a = ctx[0].enqueue_create_buffer<double>(16);
  ctx[0].enqueue_memset(a, 1.0);
  comms[0].all_reduce(a, a, ReduceOp::sum);  // rank 1 never calls
  try {
    ctx[0].synchronize();
    ADD_FAILURE() << "the collective did not fail";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), Errc::backend_error);
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1 never made the call"), std::string::npos) << e.what();
  }
  const devctx_test::ScopedEnv bad("DEVCTX_COMM_TIMEOUT_S", "soon");
  EXPECT_EQ(error_of([&] { (void)Communicator::create(ctx); }), Errc::invalid_argument);
}

}  // namespace
