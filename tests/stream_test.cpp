// SPDX-License-Identifier: Apache-2.0
// tests/stream_test.cpp - streams, events and stream-ordered lifetimes, run on every backend:
// order within a stream, overlap between streams, events (cross-stream waits, host waits,
// timing), many host threads, many tiny launches, and buffers, streams and contexts dropped
// with work in flight.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using devctx::Api;
using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using testing::HasSubstr;

DEVCTX_DEVICE inline std::uint32_t lcg_rounds(std::uint32_t x, unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  return x;
}

/// Deliberately slow: each element needs `rounds` dependent steps, so work queued behind it on
/// another stream would see poison if ordering were broken.
DEVCTX_KERNEL void slow_fill(devctx::span<std::uint32_t> out, std::uint32_t seed, unsigned rounds) {
  const auto i = devctx::global_idx().x;
  if (i >= out.size()) return;
  out[i] = lcg_rounds(seed + std::uint32_t(i), rounds);
}

/// Announces itself in flags[me], then waits (a bounded number of polls) to see flags[other].
/// Two of these on two streams see each other only if the streams really run at the same time.
DEVCTX_KERNEL void handshake(devctx::span<unsigned> flags, unsigned me, unsigned other, unsigned long long max_polls,
                             devctx::span<unsigned> saw) {
  devctx::atomic_add(&flags[me], 1u);
  unsigned long long polls = 0;
  while (devctx::atomic_add(&flags[other], 0u) == 0u && polls < max_polls) ++polls;
  saw[me] = devctx::atomic_add(&flags[other], 0u) != 0u ? 1u : 0u;
}

DEVCTX_KERNEL void noop_kernel() {}

/// counter[0] += 1 for every thread.
DEVCTX_KERNEL void count_threads(devctx::span<unsigned> counter) { devctx::atomic_add(&counter[0], 1u); }

namespace {

std::vector<std::uint32_t> slow_fill_reference(std::size_t n, std::uint32_t seed, unsigned rounds) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = lcg_rounds(seed + std::uint32_t(i), rounds);
  return v;
}

}  // namespace

// ---- synchronize, streams and events --------------------------------------------------------------

class Streams : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Streams);

TEST_P(Streams, InOrderWithinAStream) {
  const std::size_t n = 20'000;
  auto s = ctx().create_stream();
  EXPECT_TRUE(s);
  auto a = s.enqueue_create_buffer<std::uint32_t>(n);
  auto b = devctx_test::poisoned_buffer<std::uint32_t>(s, n);
  auto h = s.enqueue_create_host_buffer<std::uint32_t>(n);
  s.enqueue_function<slow_fill>(cover(n), a, 7u, 200u);
  s.enqueue_function<affine_kernel>(cover(n), a, b, 3u, 1u);
  s.enqueue_function<add_kernel>(cover(n), b, 5u);
  s.enqueue_copy(h, b);
  s.synchronize();
  const auto ref = slow_fill_reference(n, 7u, 200u);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], ref[i] * 3u + 6u) << i;
}

TEST_P(Streams, ContextSynchronizeWaitsForEveryStream) {
  const std::size_t n = 10'000;
  std::vector<devctx::Stream> streams;
  std::vector<devctx::DeviceBuffer<std::uint32_t>> bufs;
  std::vector<devctx::HostBuffer<std::uint32_t>> hosts;
  for (unsigned k = 0; k < 4; ++k) {
    streams.push_back(ctx().create_stream());
    auto& s = streams.back();
    bufs.push_back(s.enqueue_create_buffer<std::uint32_t>(n));
    hosts.push_back(s.enqueue_create_host_buffer<std::uint32_t>(n));
    s.enqueue_function<slow_fill>(cover(n), bufs.back(), k, 300u);
    s.enqueue_copy(hosts.back(), bufs.back());
  }
  ctx().synchronize();  // every stream created from the context
  for (unsigned k = 0; k < 4; ++k) {
    const auto ref = slow_fill_reference(n, k, 300u);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hosts[k][i], ref[i]) << "stream " << k << " element " << i;
  }
}

TEST_P(Streams, StreamsOverlap) {
  // Two kernels on two streams, each waiting (a bounded number of polls) for the other to
  // start: both see each other only if the streams run them at the same time. No timing.
  if (api() == Api::cpu && ctx().info().multiprocessors < 2)
    GTEST_SKIP() << "the CPU device has one worker: streams interleave but cannot overlap";
  auto flags = ctx().enqueue_create_buffer<unsigned>(2);
  auto saw = ctx().enqueue_create_buffer<unsigned>(2);
  ctx().enqueue_memset(flags, 0u);
  ctx().enqueue_memset(saw, 0xDEADBEEFu);
  ctx().synchronize();
  auto s1 = ctx().create_stream();
  auto s2 = ctx().create_stream();
  const unsigned long long polls = 1ull << 24;
  s1.enqueue_function<handshake>({.grid_dim = 1, .block_dim = 1}, flags, 0u, 1u, polls, saw);
  s2.enqueue_function<handshake>({.grid_dim = 1, .block_dim = 1}, flags, 1u, 0u, polls, saw);
  ctx().synchronize();
  const auto v = download(ctx(), saw);
  EXPECT_EQ(v[0], 1u) << "the kernel on stream 1 never saw the one on stream 2 running";
  EXPECT_EQ(v[1], 1u) << "the kernel on stream 2 never saw the one on stream 1 running";
}

TEST_P(Streams, EventOrdersWorkAcrossStreams) {
  const std::size_t n = 50'000;
  auto producer = ctx().create_stream();
  auto consumer = ctx().create_stream();
  for (unsigned round = 0; round < 3; ++round) {
    auto data = devctx_test::poisoned_buffer<std::uint32_t>(producer, n);
    auto out = devctx_test::poisoned_buffer<std::uint32_t>(producer, n);
    producer.enqueue_function<slow_fill>(cover(n), data, round, 400u);
    const devctx::Event ready = producer.record_event();
    EXPECT_TRUE(ready);
    consumer.enqueue_wait_for(ready);  // the consumer reads `data` and writes `out` only now
    consumer.enqueue_function<affine_kernel>(cover(n), data, out, 1u, 1u);
    const auto v = download(consumer, out);
    const auto ref = slow_fill_reference(n, round, 400u);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], ref[i] + 1u) << "round " << round << " element " << i;
  }
}

TEST_P(Streams, DefaultStreamWaitsForAnEventOfAnotherStream) {
  const std::size_t n = 30'000;
  auto s = ctx().create_stream();
  auto data = s.enqueue_create_buffer<std::uint32_t>(n);
  s.enqueue_function<slow_fill>(cover(n), data, 11u, 300u);
  ctx().enqueue_wait_for(s.record_event());
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  ctx().enqueue_function<affine_kernel>(cover(n), data, out, 2u, 0u);
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(n, 11u, 300u);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], ref[i] * 2u) << i;
}

TEST_P(Streams, EventHostWaitQueryAndElapsed) {
  const std::size_t n = 40'000;
  auto s = ctx().create_stream();
  auto buf = s.enqueue_create_buffer<std::uint32_t>(n);
  auto h = s.enqueue_create_host_buffer<std::uint32_t>(n);
  const devctx::Event start = s.record_event();
  s.enqueue_function<slow_fill>(cover(n), buf, 3u, 500u);
  s.enqueue_copy(h, buf);
  const devctx::Event stop = s.record_event();
  const devctx::Event copy = stop;  // copies refer to the same point
  (void)stop.query();               // never blocks; either answer is right here
  copy.synchronize();               // host wait: the work before it is done
  EXPECT_TRUE(stop.query());
  EXPECT_TRUE(start.query());
  const auto ref = slow_fill_reference(n, 3u, 500u);
  for (std::size_t i = 0; i < n; i += 97) ASSERT_EQ(h[i], ref[i]) << i;
  const double ms = devctx::elapsed_ms(start, stop);
  EXPECT_GE(ms, 0.0);
  EXPECT_TRUE(std::isfinite(ms));
  EXPECT_GE(devctx::elapsed_ms(start, start), 0.0);
  // elapsed_ms waits for events that have not finished yet.
  const devctx::Event a = ctx().record_event();
  auto buf2 = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_function<slow_fill>(cover(n), buf2, 1u, 200u);
  const devctx::Event b = ctx().record_event();
  EXPECT_GE(devctx::elapsed_ms(a, b), 0.0);
  EXPECT_TRUE(b.query());
}

TEST_P(Streams, EmptyEventsAreInvalidHandles) {
  const devctx::Event none;
  EXPECT_FALSE(none);
  const devctx::Event real = ctx().record_event();
  for (auto* f : {+[](const devctx::Event& e, const devctx::Event&, DeviceContext&) { e.synchronize(); },
                  +[](const devctx::Event& e, const devctx::Event&, DeviceContext&) { (void)e.query(); },
                  +[](const devctx::Event& e, const devctx::Event& r, DeviceContext&) { (void)devctx::elapsed_ms(e, r); },
                  +[](const devctx::Event& e, const devctx::Event& r, DeviceContext&) { (void)devctx::elapsed_ms(r, e); },
                  +[](const devctx::Event& e, const devctx::Event&, DeviceContext& c) { c.enqueue_wait_for(e); }}) {
    const auto e = error_of([&] { f(none, real, ctx()); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_handle) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("Event"));
  }
  devctx::Event moved = real;
  const devctx::Event taken = std::move(moved);
  EXPECT_TRUE(taken);
  const auto e = error_of([&] { moved.synchronize(); });  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
}

TEST_P(Streams, HostThreadsEachDrivingTheirOwnStream) {
  // Several host threads enqueue concurrently, each on a stream of its own.
  constexpr unsigned kThreads = 4;
  const std::size_t n = 20'000;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (unsigned k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      try {
        auto s = ctx().create_stream();
        for (unsigned round = 0; round < 10; ++round) {
          auto d = s.enqueue_create_buffer<std::uint32_t>(n);
          s.enqueue_function<iota_kernel>(cover(n), d, k * 1000u + round);
          s.enqueue_function<add_kernel>(cover(n), d, 1u);
          const auto v = download(s, d);
          for (std::size_t i = 0; i < n; i += 101)
            if (v[i] != k * 1000u + round + std::uint32_t(i) + 1u) {
              failures[k] = "wrong value at " + std::to_string(i);
              return;
            }
        }
        s.synchronize();
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (unsigned k = 0; k < kThreads; ++k) EXPECT_EQ(failures[k], "") << "host thread " << k;
}

TEST_P(Streams, ManyLaunchesOfAnEmptyKernel) {
  // 400 launches of a kernel with no parameters and no work, on two streams, interleaved with
  // a one-atomic kernel that counts its threads: all of them run and every counting launch runs
  // each of its threads exactly once.
  auto s = ctx().create_stream();
  auto on_stream = ctx().enqueue_create_buffer<unsigned>(1);
  auto on_default = ctx().enqueue_create_buffer<unsigned>(1);
  ctx().enqueue_memset(on_stream, 0u);
  ctx().enqueue_memset(on_default, 0u);
  ctx().synchronize();
  const devctx::LaunchConfig small{.grid_dim = 3, .block_dim = 5};
  const devctx::LaunchConfig cube{.grid_dim = {2, 2, 2}, .block_dim = {2, 2, 2}};
  for (int i = 0; i < 200; ++i) {
    s.enqueue_function<noop_kernel>(small);
    s.enqueue_function<count_threads>(small, on_stream);
    ctx().enqueue_function<noop_kernel>(cube);
    ctx().enqueue_function<count_threads>(cube, on_default);
  }
  EXPECT_NO_THROW(ctx().synchronize());
  EXPECT_EQ(download(ctx(), on_stream)[0], 200u * 15u);
  EXPECT_EQ(download(ctx(), on_default)[0], 200u * 64u);
}

// ---- lifetimes: stream-ordered frees ---------------------------------------------------------------

class Lifetime : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Lifetime);

// Buffers here are several MiB: the CPU backend's allocator then returns freed memory to the
// system at once, so work touching a buffer freed too early crashes instead of passing by luck.
constexpr std::size_t kBig = std::size_t{3} << 20;  // elements (12 MiB of uint32)

TEST_P(Lifetime, BufferDroppedRightAfterEnqueueingWork) {
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), kBig);
  {
    auto tmp = ctx().enqueue_create_buffer<std::uint32_t>(kBig);
    ctx().enqueue_function<slow_fill>(cover(kBig), tmp, 5u, 20u);
    ctx().enqueue_function<affine_kernel>(cover(kBig), tmp, out, 1u, 3u);
    auto host = ctx().enqueue_create_host_buffer<std::uint32_t>(kBig);
    ctx().enqueue_copy(host, tmp);
    ctx().enqueue_copy(tmp, host);
  }  // tmp and host are freed in stream order, after the work above
  ctx().synchronize();
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(kBig, 5u, 20u);
  for (std::size_t i = 0; i < kBig; ++i) ASSERT_EQ(v[i], ref[i] + 3u) << i;
}

TEST_P(Lifetime, BufferUsedOnTwoStreamsThenDropped) {
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), kBig);
  auto worker = ctx().create_stream();
  {
    auto tmp = ctx().enqueue_create_buffer<std::uint32_t>(kBig);  // home: the default stream
    worker.enqueue_wait_for(ctx().record_event());                // tmp and out exist now
    worker.enqueue_function<slow_fill>(cover(kBig), tmp, 9u, 60u);
    worker.enqueue_function<affine_kernel>(cover(kBig), tmp, out, 1u, 0u);
  }  // the free must wait for the worker stream, not only for the (idle) default stream
  worker.synchronize();
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(kBig, 9u, 60u);
  for (std::size_t i = 0; i < kBig; ++i) ASSERT_EQ(v[i], ref[i]) << i;
}

TEST_P(Lifetime, StreamAndItsBuffersDroppedWithWorkInFlight) {
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), kBig);
  ctx().synchronize();
  {
    auto s = ctx().create_stream();
    auto tmp = s.enqueue_create_buffer<std::uint32_t>(kBig);
    s.enqueue_function<slow_fill>(cover(kBig), tmp, 4u, 40u);
    s.enqueue_copy(out, tmp);
  }  // dropping neither blocks nor cancels: the work still runs
  ctx().synchronize();  // waits for the dropped stream's work too
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(kBig, 4u, 40u);
  for (std::size_t i = 0; i < kBig; ++i) ASSERT_EQ(v[i], ref[i]) << i;
}

TEST_P(Lifetime, ContextDroppedWithWorkInFlightAndBuffersOutlivingIt) {
  devctx::DeviceBuffer<std::uint32_t> survivor;
  {
    DeviceContext c{api()};
    survivor = c.enqueue_create_buffer<std::uint32_t>(kBig);
    auto tmp = c.enqueue_create_buffer<std::uint32_t>(kBig);
    c.enqueue_function<slow_fill>(cover(kBig), tmp, 1u, 40u);
    c.enqueue_copy(survivor, tmp);
  }  // must not block on, cancel or crash the enqueued work
  survivor = {};  // freeing a buffer of a dropped context
  EXPECT_FALSE(survivor);
}

TEST_P(Lifetime, MovedBuffersKeepTheirContentsAndSlices) {
  auto a = devctx_test::upload<std::uint32_t>(ctx(), {1, 2, 3, 4, 5});
  const auto slice = a.slice(1, 3);
  devctx::DeviceBuffer<std::uint32_t> b = std::move(a);
  devctx::DeviceBuffer<std::uint32_t> c;
  c = std::move(b);
  ctx().enqueue_function<add_kernel>(cover(3), slice, 10u);  // slices stay valid across moves
  EXPECT_TRUE(devctx_test::all_equal({1, 12, 13, 14, 5}, download(ctx(), c)));
}
