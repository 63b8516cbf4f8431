// SPDX-License-Identifier: Apache-2.0
// Host verbs of issue 14: a stream or context waiting for all work enqueued so far on another
// context of the same device (StreamRef::enqueue_wait_for(StreamRef)), and stream priorities
// (DeviceContext::stream_priority_range, create_stream(priority)), on every backend.
#include <cstdint>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;

/// out[i] = f(in[i]) after enough work per element that a reader not ordered after it would
/// see the poison (slow on purpose: `rounds` dependent steps).
DEVCTX_KERNEL void churn(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out, unsigned rounds) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= out.size()) return;
  std::uint32_t x = in[i];
  for (unsigned r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  out[i] = x;
}

DEVCTX_KERNEL void add_one(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] + 1u;
}

std::uint32_t churned(std::uint32_t x, unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  return x;
}

class StreamOrder : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(StreamOrder);

TEST_P(StreamOrder, AContextWaitsForAllWorkEnqueuedOnAnother) {
  const std::size_t n = 1 << 16;
  const unsigned rounds = 2000;
  devctx::DeviceContext other(ctx().api(), ctx().id());
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 31);
  auto in = upload(other, values);
  auto mid = devctx_test::poisoned_buffer<std::uint32_t>(other, n);
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  ctx().synchronize();
  other.enqueue_function<churn>(devctx_test::cover(n), in, mid, rounds);
  ctx().enqueue_wait_for(other);  // everything `other` enqueued so far, copies included
  ctx().enqueue_function<add_one>(devctx_test::cover(n), mid, out);
  const auto got = download(ctx(), out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], churned(values[i], rounds) + 1u) << "element " << i;
  other.synchronize();
}

TEST_P(StreamOrder, AStreamWaitsForAContextAndForItself) {
  const std::size_t n = 1 << 14;
  auto s = ctx().create_stream();
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 31);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  s.enqueue_wait_for(ctx());
  s.enqueue_wait_for(s);
  s.enqueue_function<add_one>(devctx_test::cover(n), in, out);
  const auto got = download(s, out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], values[i] + 1u) << "element " << i;
}

TEST_P(StreamOrder, WaitingForAnotherDeviceThrowsAndEnqueuesNothing) {
  const devctx::Api other_api = on_cpu() ? devctx::Api::cuda : devctx::Api::cpu;
  if (devctx::DeviceContext::count(other_api) == 0) GTEST_SKIP() << "needs a second backend's device";
  devctx::DeviceContext other(other_api);
  try {
    ctx().enqueue_wait_for(other);
    FAIL() << "a wait across devices was accepted";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::wrong_device);
  }
  ctx().synchronize();
}

TEST_P(StreamOrder, StreamPrioritiesInTheRangeWorkOthersThrow) {
  const devctx::StreamPriorityRange range = ctx().stream_priority_range();
  EXPECT_EQ(range.least, 0);
  EXPECT_LE(range.greatest, range.least);
  if (on_cpu()) {
    EXPECT_EQ(range.greatest, 0);
  }
  const std::size_t n = 1 << 14;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 31);
  auto in = upload(ctx(), values);
  ctx().synchronize();
  for (const int priority : {range.least, range.greatest}) {
    auto s = ctx().create_stream(priority);
    auto out = devctx_test::poisoned_buffer<std::uint32_t>(s, n);
    s.enqueue_function<add_one>(devctx_test::cover(n), in, out);
    const auto got = download(s, out);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], values[i] + 1u) << "priority " << priority << ", element " << i;
  }
  for (const int bad : {range.least + 1, range.greatest - 1}) {
    try {
      (void)ctx().create_stream(bad);
      FAIL() << "priority " << bad << " was accepted";
    } catch (const devctx::Error& e) {
      EXPECT_EQ(e.code(), devctx::Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("priority " + std::to_string(bad) + " is outside"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
