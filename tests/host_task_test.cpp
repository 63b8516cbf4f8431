// SPDX-License-Identifier: Apache-2.0
// StreamRef::enqueue_host_task on every backend: the task runs after the work enqueued before it
// and before the work enqueued after it, what it throws is reported by the stream's next
// synchronize (and then forgotten), an empty task is refused with nothing enqueued, and a task
// recorded into a devctx::Graph runs at each replay.
#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::upload;
using ::testing::HasSubstr;

/// out[i] = f(in[i]) after `rounds` dependent steps, so that a reader not ordered after it
/// would see the poison.
DEVCTX_KERNEL void churn(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out, unsigned rounds) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= out.size()) return;
  std::uint32_t x = in[i];
  for (unsigned r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  out[i] = x;
}

std::uint32_t churned(std::uint32_t x, unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  return x;
}

DEVCTX_KERNEL void add_seven(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] + 7u;
}

class HostTask : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(HostTask);

TEST_P(HostTask, RunsAfterTheWorkBeforeItAndBeforeTheWorkAfterIt) {
  const std::size_t n = 1 << 15;
  const unsigned kRounds = 2000;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 28);
  auto in = upload(ctx(), values);
  auto tripled = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  auto staged = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  auto back = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  ctx().synchronize();
  std::uint32_t* const staged_data = staged.data();
  std::uint32_t* const back_data = back.data();
  for (std::size_t i = 0; i < n; ++i) back_data[i] = devctx_test::poison_value<std::uint32_t>();

  ctx().enqueue_function<churn>(devctx_test::cover(n), in, tripled, kRounds);
  ctx().enqueue_copy(staged, tripled);
  // Reads what the copy before it wrote, writes what the copy after it reads.
  auto seen = std::make_shared<std::vector<std::uint32_t>>();
  ctx().enqueue_host_task([staged_data, back_data, n, seen] {
    seen->assign(staged_data, staged_data + n);
    for (std::size_t i = 0; i < n; ++i) back_data[i] = staged_data[i] ^ 0x5a5a5a5au;
  });
  ctx().enqueue_copy(out, back);
  auto final = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  ctx().enqueue_function<add_seven>(devctx_test::cover(n), out, final);
  const auto got = download(ctx(), final);
  ASSERT_EQ(seen->size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t expected = churned(values[i], kRounds);
    ASSERT_EQ((*seen)[i], expected) << "element " << i << " as the task saw it";
    ASSERT_EQ(got[i], (expected ^ 0x5a5a5a5au) + 7u) << "element " << i;
  }
}

TEST_P(HostTask, TasksOfOneStreamRunInOrder) {
  auto order = std::make_shared<std::vector<int>>();
  const int tasks = 64;
  for (int k = 0; k < tasks; ++k) ctx().enqueue_host_task([order, k] { order->push_back(k); });
  ctx().synchronize();
  ASSERT_EQ(order->size(), std::size_t(tasks));
  for (int k = 0; k < tasks; ++k) EXPECT_EQ((*order)[std::size_t(k)], k);
}

TEST_P(HostTask, AnErrorItThrowsIsReportedBySynchronizeThenForgotten) {
  ctx().enqueue_host_task([] { throw devctx::Error(Errc::invalid_argument, "the task refused its input 42"); });
  auto e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("the task refused its input 42"));

  // Any other exception: Error(backend_error) with its text.
  ctx().enqueue_host_task([] { throw std::runtime_error("disk full while logging"); });
  e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::backend_error);
  EXPECT_THAT(e->what(), HasSubstr("disk full while logging"));

  // The stream stays usable: later work runs and the failure is not reported twice.
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, 1000, 0, 1u << 30);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), values.size());
  ctx().enqueue_function<add_seven>(devctx_test::cover(values.size()), in, out);
  const auto got = download(ctx(), out);
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(got[i], values[i] + 7u) << "element " << i;
  EXPECT_NO_THROW(ctx().synchronize());
}

TEST_P(HostTask, AnEmptyTaskIsRefusedAndNothingIsEnqueued) {
  const std::function<void()> empty;
  const auto e = error_of([&] { ctx().enqueue_host_task(empty); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("enqueue_host_task"));
  EXPECT_NO_THROW(ctx().synchronize());
}

TEST_P(HostTask, ARecordedTaskRunsAtEachReplay) {
  const std::size_t n = 4096;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 30);
  auto in = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  ctx().synchronize();
  auto runs = std::make_shared<std::atomic<int>>(0);
  devctx::Graph graph = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
    s.enqueue_function<add_seven>(devctx_test::cover(n), in, out);
    s.enqueue_host_task([runs] { runs->fetch_add(1); });
  });
  EXPECT_EQ(runs->load(), 0) << "recording runs nothing";
  const int replays = 3;
  for (int r = 0; r < replays; ++r) graph.enqueue(ctx());
  ctx().synchronize();
  EXPECT_EQ(runs->load(), replays);
  const auto got = download(ctx(), out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], values[i] + 7u) << "element " << i;
}

}  // namespace
