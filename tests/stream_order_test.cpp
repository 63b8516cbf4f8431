// SPDX-License-Identifier: Apache-2.0
// Host verbs of issue 14: a stream or context waiting for all work enqueued so far on another
// context of the same device (StreamRef::enqueue_wait_for(StreamRef)), and stream priorities
// (DeviceContext::stream_priority_range, create_stream(priority)), on every backend.
#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
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

TEST_P(StreamOrder, StreamsWaitForTheOtherBackendsWork) {
  const devctx::Api other_api = on_cpu() ? devctx_test::gpu_api() : devctx::Api::cpu;
  if (devctx::DeviceContext::count(other_api) == 0) GTEST_SKIP() << "needs a CPU and a GPU";
  devctx::DeviceContext other(other_api);
  devctx::DeviceContext& gpu = on_cpu() ? other : ctx();
  devctx::DeviceContext& cpu = on_cpu() ? ctx() : other;
  const std::size_t n = std::uniform_int_distribution<std::size_t>(1 << 16, 1 << 17)(rng);
  const auto input = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 0xFFFFFFFFu);
  constexpr std::uint32_t kPoison = 0xDEADBEEFu;
  const auto check = [&](const std::vector<std::uint32_t>& got, unsigned rounds, std::uint32_t plus, const char* what) {
    std::size_t wrong = 0, first = n;
    for (std::size_t i = 0; i < n; ++i)
      if (got[i] != churned(input[i], rounds) + plus && wrong++ == 0) first = i;
    EXPECT_EQ(wrong, 0u) << what << ": first wrong element " << first << " holds " << (first < n ? got[first] : 0u);
  };

  // GPU, then CPU: the GPU churns (slowly) and copies the result into one of its HostBuffers
  // (a DMA in stream order); the CPU stream waits for the GPU's event, copies that host memory
  // into CPU device memory and adds one. Without the wait the CPU would copy the poison.
  {
    constexpr unsigned kRounds = 20000;
    auto g_in = upload(gpu, input);
    auto g_out = gpu.enqueue_create_buffer<std::uint32_t>(n);
    auto staging = gpu.enqueue_create_host_buffer<std::uint32_t>(n);
    auto c_in = cpu.enqueue_create_buffer<std::uint32_t>(n);
    auto c_out = cpu.enqueue_create_buffer<std::uint32_t>(n);
    gpu.synchronize();
    std::fill(staging.begin(), staging.end(), kPoison);
    gpu.enqueue_function<churn>(devctx_test::cover(n), g_in, g_out, kRounds);
    gpu.enqueue_copy(staging, g_out);
    const devctx::Event done = gpu.record_event();
    cpu.enqueue_wait_for(done);
    cpu.enqueue_copy(c_in, std::span<const std::uint32_t>(staging.data(), n));
    cpu.enqueue_function<add_one>(devctx_test::cover(n), c_in, c_out);
    check(download(cpu, c_out), kRounds, 1u, "GPU then CPU");
    gpu.synchronize();
  }
  // CPU, then GPU: the CPU churns into CPU device memory; the GPU's stream waits for the CPU's
  // work (a StreamRef wait: an event recorded on the CPU's stream now) and copies the result in.
  {
    constexpr unsigned kRounds = 2000;
    auto c_in = upload(cpu, input);
    auto c_out = cpu.enqueue_create_buffer<std::uint32_t>(n);
    cpu.enqueue_memset(c_out, kPoison);
    auto g_out = gpu.enqueue_create_buffer<std::uint32_t>(n);
    gpu.enqueue_memset(g_out, kPoison);
    cpu.synchronize();
    gpu.synchronize();
    cpu.enqueue_function<churn>(devctx_test::cover(n), c_in, c_out, kRounds);
    gpu.enqueue_wait_for(cpu);
    gpu.enqueue_copy(g_out, c_out);
    check(download(gpu, g_out), kRounds, 0u, "CPU then GPU");
    cpu.synchronize();
  }
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
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], values[i] + 1u) << "priority " << priority << ", element " << i;
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
