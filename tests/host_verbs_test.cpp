// SPDX-License-Identifier: Apache-2.0
// tests/host_verbs_test.cpp - Mojo's host verbs on DeviceContext, run on every backend:
// execution_time (events around the work a function enqueues) and memory_info.
#include "support/test_support.hpp"

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::upload;
using testing::HasSubstr;

DEVCTX_KERNEL void increment_all(devctx::span<std::uint32_t> v) {
  const std::size_t i = devctx::global_idx().x;
  if (i < v.size()) v[i] += 1u;
}

class HostVerbs : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(HostVerbs);

TEST_P(HostVerbs, ExecutionTimeRunsTheFunctionEachIterationAndWaitsForItsWork) {
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, 100000, 0, 1000000);
  auto d = upload(ctx(), values);
  auto h = ctx().enqueue_create_host_buffer<std::uint32_t>(values.size());
  ctx().synchronize();
  int calls = 0;
  const std::chrono::nanoseconds t = ctx().execution_time(
      [&](devctx::DeviceContext& c) {
        ++calls;
        c.enqueue_function<increment_all>(cover(values.size()), d);
        c.enqueue_copy(h, d);
      },
      7);
  EXPECT_EQ(calls, 7);
  EXPECT_GE(t.count(), 0);
  // Returned after the timed work finished: the host buffer holds the last copy, no synchronize.
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(h[i], values[i] + 7u) << i;
  // A function without the context argument works too.
  calls = 0;
  (void)ctx().execution_time([&] { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST_P(HostVerbs, ExecutionTimeErrors) {
  int calls = 0;
  auto e = error_of([&] { (void)ctx().execution_time([&] { ++calls; }, 0); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("iterations is 0"));
  EXPECT_EQ(calls, 0);
  EXPECT_THROW((void)ctx().execution_time([](devctx::DeviceContext&) { throw std::runtime_error("user"); }),
               std::runtime_error);
  // A refused launch inside the timed function surfaces as that launch's error.
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(4);
  e = error_of([&] {
    (void)ctx().execution_time(
        [&](devctx::DeviceContext& c) { c.enqueue_function<increment_all>({.grid_dim = 0, .block_dim = 4}, d); });
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_launch);
  // The context stays usable.
  ctx().enqueue_memset(d, 5u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(4, 5u), download(ctx(), d)));
}

TEST_P(HostVerbs, MemoryInfo) {
  const devctx::MemoryInfo m = ctx().memory_info();
  EXPECT_GT(m.total_bytes, 0u);
  EXPECT_EQ(m.total_bytes, ctx().info().total_memory_bytes);
  EXPECT_GT(m.free_bytes, 0u);
  EXPECT_LE(m.free_bytes, m.total_bytes);
  devctx::DeviceContext moved = std::move(ctx());
  const auto e = error_of([&] { (void)ctx().memory_info(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
  ctx() = std::move(moved);
}
