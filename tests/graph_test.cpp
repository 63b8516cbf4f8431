// SPDX-License-Identifier: Apache-2.0
// devctx::Graph (devctx/graph.hpp): recorded copies, memsets and launches replay in order many
// times, kernel updates apply to later replays only, and misuse throws and leaves the graph and
// the context usable; on every backend.
#include <cstdint>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::upload;

/// x[i] = x[i] * mul + add (wrapping).
DEVCTX_KERNEL void affine(devctx::span<std::uint32_t> x, std::uint32_t mul, std::uint32_t add) {
  const std::size_t i = devctx::global_idx().x;
  if (i < x.size()) x[i] = x[i] * mul + add;
}

DEVCTX_KERNEL void accumulate(devctx::span<const std::uint32_t> x, devctx::span<std::uint32_t> sum) {
  const std::size_t i = devctx::global_idx().x;
  if (i < sum.size()) sum[i] += x[i];
}

class Graphs : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Graphs);

std::uint32_t step(std::uint32_t x, std::uint32_t mul, std::uint32_t add) { return x * mul + add; }

TEST_P(Graphs, ReplaysRunTheRecordedWorkInOrder) {
  const std::size_t n = 3000;
  const auto init = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 31);
  auto host = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  ctx().synchronize();
  for (std::size_t i = 0; i < n; ++i) host[i] = init[i];
  auto x = ctx().enqueue_create_buffer<std::uint32_t>(n);
  auto sum = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  auto out = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  const auto cfg = devctx_test::cover(n);
  // Per replay: x = init, 5 affine steps, sum += x, and the sum copied out.
  devctx::Graph g = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
    s.enqueue_copy(x, host);
    for (std::uint32_t k = 0; k < 5; ++k) s.enqueue_function<affine>(cfg, x, 3u + k, k);
    s.enqueue_function<accumulate>(cfg, x, sum);
    s.enqueue_copy(out, sum);
  });
  EXPECT_EQ(g.kernel_count(), 6u);
  // Nothing ran while recording: sum still holds the poison.
  EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(n, devctx_test::poison_value<std::uint32_t>()),
                                     download(ctx(), sum)));
  ctx().enqueue_memset(sum, 0u);
  const int replays = 7;
  for (int r = 0; r < replays; ++r) g.enqueue(ctx());
  ctx().synchronize();
  std::vector<std::uint32_t> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t v = init[i];
    for (std::uint32_t k = 0; k < 5; ++k) v = step(v, 3u + k, k);
    expected[i] = v * std::uint32_t(replays);
  }
  EXPECT_TRUE(devctx_test::all_equal(expected, std::vector<std::uint32_t>(out.begin(), out.end())));
}

TEST_P(Graphs, MemsetsOfEverySizeAndReplaysOnAnotherStream) {
  const std::size_t n = 1000;
  auto a = ctx().enqueue_create_buffer<std::uint8_t>(n);
  auto b = ctx().enqueue_create_buffer<std::uint16_t>(n);
  auto c = ctx().enqueue_create_buffer<float>(n);
  auto d = ctx().enqueue_create_buffer<double>(n);
  devctx::Graph g = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
    s.enqueue_memset(a, std::uint8_t(0x5A));
    s.enqueue_memset(b, std::uint16_t(0xBEEF));
    s.enqueue_memset(c, 1.25f);
    s.enqueue_memset(d, -3.5);
  });
  EXPECT_EQ(g.kernel_count(), 0u);
  auto s = ctx().create_stream();
  s.enqueue_wait_for(ctx());
  g.enqueue(s);
  s.synchronize();
  for (auto v : download(ctx(), a)) ASSERT_EQ(v, 0x5A);
  for (auto v : download(ctx(), b)) ASSERT_EQ(v, 0xBEEF);
  for (auto v : download(ctx(), c)) ASSERT_EQ(v, 1.25f);
  for (auto v : download(ctx(), d)) ASSERT_EQ(v, -3.5);
}

TEST_P(Graphs, UpdatedKernelArgumentsApplyToLaterReplays) {
  const std::size_t n = 2048;
  const auto init = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 31);
  auto x = upload(ctx(), init);
  auto y = upload(ctx(), init);
  const auto cfg = devctx_test::cover(n);
  devctx::Graph g = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
    s.enqueue_function<affine>(cfg, x, 5u, 1u);
    s.enqueue_function<affine>(cfg, x, 7u, 2u);
  });
  g.enqueue(ctx());                             // x: two steps
  g.update_kernel<affine>(1, cfg, y, 11u, 3u);  // launch 1 now works on y
  g.enqueue(ctx());                             // x: step (5, 1); y: step (11, 3)
  const auto gx = download(ctx(), x);
  const auto gy = download(ctx(), y);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(gx[i], step(step(step(init[i], 5, 1), 7, 2), 5, 1)) << i;
    ASSERT_EQ(gy[i], step(init[i], 11, 3)) << i;
  }
}

TEST_P(Graphs, DroppingAGraphRightAfterEnqueueingItNeverBlocksItsReplay) {
  const std::size_t n = 1 << 15;
  const auto init = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 31);
  auto x = upload(ctx(), init);
  {
    devctx::Graph g = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
      for (std::uint32_t k = 0; k < 20; ++k) s.enqueue_function<affine>(devctx_test::cover(n), x, 3u, k);
    });
    g.enqueue(ctx());
  }
  const auto got = download(ctx(), x);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t v = init[i];
    for (std::uint32_t k = 0; k < 20; ++k) v = step(v, 3u, k);
    ASSERT_EQ(got[i], v) << i;
  }
}

TEST_P(Graphs, MisuseThrowsAndLeavesEverythingUsable) {
  const std::size_t n = 256;
  auto x = upload(ctx(), devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1000));
  auto sum = ctx().enqueue_create_buffer<std::uint32_t>(n);
  const auto cfg = devctx_test::cover(n);
  auto expect_error = [](devctx::Errc code, const char* part, auto&& f) {
    try {
      f();
      ADD_FAILURE() << "no error for: " << part;
    } catch (const devctx::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  std::vector<std::uint32_t> pageable(n);
  expect_error(devctx::Errc::invalid_argument, "ordinary host memory", [&] {
    (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef s) { s.enqueue_copy(std::span(pageable), x); });
  });
  expect_error(devctx::Errc::invalid_argument, "enqueue_create_buffer on a stream recording", [&] {
    (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef s) { (void)s.enqueue_create_buffer<int>(4); });
  });
  expect_error(devctx::Errc::invalid_argument, "synchronize on a stream recording",
               [&] { (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef s) { s.synchronize(); }); });
  // A launch that does not fit is refused while recording, as when enqueued.
  expect_error(devctx::Errc::invalid_launch, "block_dim", [&] {
    (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
      s.enqueue_function<affine>({.grid_dim = 1, .block_dim = 1u << 20}, x, 1u, 1u);
    });
  });
  // Work enqueued through the context being recorded from instead of the recording stream: each
  // kind is refused at the call, nothing runs (sum keeps its poison), and a recording that ends
  // with nothing recorded is an error rather than an empty graph that replays silently.
  const auto poison = devctx_test::poison_value<std::uint32_t>();
  ctx().enqueue_memset(sum, poison);
  expect_error(devctx::Errc::invalid_argument, "enqueue_function<accumulate> on", [&] {
    (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef) { ctx().enqueue_function<accumulate>(cfg, x, sum); });
  });
  expect_error(devctx::Errc::invalid_argument, "while Graph::record records from this stream", [&] {
    (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
      s.enqueue_function<accumulate>(cfg, x, sum);
      ctx().enqueue_memset(sum, 0u);
    });
  });
  expect_error(devctx::Errc::invalid_argument, "enqueue_copy on",
               [&] { (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef) { ctx().enqueue_copy(sum, x); }); });
  expect_error(devctx::Errc::invalid_argument,
               "nothing was recorded: enqueue on the stream passed to the recording function",
               [&] { (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef) {}); });
  {
    // Work on another stream runs at once, as it always does; the recording holds none of it.
    devctx::Stream other = ctx().create_stream();
    ctx().synchronize();  // the poison memset above before the other stream's memset
    expect_error(devctx::Errc::invalid_argument, "nothing was recorded",
                 [&] { (void)devctx::Graph::record(ctx(), [&](devctx::StreamRef) { other.enqueue_memset(sum, 0u); }); });
    other.synchronize();
    EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(n, 0u), download(ctx(), sum)));
    ctx().enqueue_memset(sum, poison);
  }
  EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(n, poison), download(ctx(), sum)));
  // Once the recording is over (finished or failed), the context takes work again.
  ctx().enqueue_memset(sum, 1u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(n, 1u), download(ctx(), sum)));

  devctx::StreamRef kept;
  devctx::Graph g = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
    s.enqueue_function<accumulate>(cfg, x, sum);
    kept = s;
  });
  expect_error(devctx::Errc::invalid_argument, "recording has finished",
               [&] { kept.enqueue_function<accumulate>(cfg, x, sum); });
  expect_error(devctx::Errc::invalid_argument, "launch 1 does not exist",
               [&] { g.update_kernel<accumulate>(1, cfg, x, sum); });
  expect_error(devctx::Errc::invalid_argument, "accumulate'; an update keeps the kernel",
               [&] { g.update_kernel<affine>(0, cfg, sum, 1u, 1u); });
  expect_error(devctx::Errc::invalid_handle, "empty devctx::Graph", [&] { devctx::Graph{}.enqueue(ctx()); });
  // Still usable: one replay adds x to sum.
  ctx().enqueue_memset(sum, 0u);
  g.enqueue(ctx());
  const auto got = download(ctx(), sum);
  const auto want = download(ctx(), x);
  EXPECT_TRUE(devctx_test::all_equal(want, got));
}

}  // namespace
