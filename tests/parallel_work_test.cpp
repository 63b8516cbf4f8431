// SPDX-License-Identifier: Apache-2.0
// tests/parallel_work_test.cpp - work that the CPU backend splits across its workers, run on every
// backend: copies and fills larger than the split threshold (1 MiB per part) with odd sizes and
// unaligned starts on 4 streams at once, every element and the bytes around each slice checked;
// chains of small launches handed between streams by events; a device that slept in between.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

using devctx::DeviceContext;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;

namespace {

constexpr std::size_t kStreams = 4;

/// An element of 12 bytes: a fill with no 1-, 4- or 8-byte fast path.
struct Triple {
  std::uint32_t a, b, c;
  friend bool operator==(const Triple&, const Triple&) = default;
};

/// `count` elements from `offset` of a buffer of `total` set to `value`, the rest to `around`.
template <class T>
std::vector<T> expected_fill(std::size_t total, std::size_t offset, std::size_t count, T around, T value) {
  std::vector<T> v(total, around);
  std::fill(v.begin() + std::ptrdiff_t(offset), v.begin() + std::ptrdiff_t(offset + count), value);
  return v;
}

}  // namespace

class ParallelWork : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(ParallelWork);

TEST_P(ParallelWork, LargeCopiesWithOddSizesAndUnalignedStartsOnFourStreams) {
  // Bytes, so that every start is unaligned; sizes of a few MiB plus a few bytes, so that the copy
  // is split into parts whose last is short. Device to device, device to host and host to device,
  // all four streams at once.
  std::vector<devctx::Stream> streams;
  for (std::size_t i = 0; i < kStreams; ++i) streams.push_back(ctx().create_stream());
  struct Job {
    std::size_t n, src_off, dst_off, total;
    std::vector<std::uint8_t> values;
    devctx::DeviceBuffer<std::uint8_t> src, dst, back;
    devctx::HostBuffer<std::uint8_t> host;
  };
  std::vector<Job> jobs(kStreams);
  for (std::size_t i = 0; i < kStreams; ++i) {
    Job& j = jobs[i];
    j.n = (std::size_t{3} << 20) + 2 * i * (std::size_t{1} << 20) + 2 * i + 1;  // 3 to 9 MiB, odd
    j.src_off = 2 * i + 1;
    j.dst_off = 4 * i + 3;
    j.total = j.n + 64;
    j.values = devctx_test::random_vector<std::uint8_t>(rng, j.total, 0, 255);
    j.src = devctx_test::upload(streams[i], j.values);
    j.dst = devctx_test::poisoned_buffer<std::uint8_t>(streams[i], j.total);
    j.back = devctx_test::poisoned_buffer<std::uint8_t>(streams[i], j.total);
    j.host = streams[i].enqueue_create_host_buffer<std::uint8_t>(j.total);
    std::fill(j.host.begin(), j.host.end(), std::uint8_t{0x5A});
  }
  for (std::size_t i = 0; i < kStreams; ++i) {
    Job& j = jobs[i];
    streams[i].enqueue_copy(j.dst.slice(j.dst_off, j.n), j.src.slice(j.src_off, j.n));
    streams[i].enqueue_copy(j.host.slice(j.dst_off, j.n), j.dst.slice(j.dst_off, j.n));
    streams[i].enqueue_copy(j.back.slice(j.src_off, j.n), j.host.slice(j.dst_off, j.n));
  }
  for (std::size_t i = 0; i < kStreams; ++i) {
    Job& j = jobs[i];
    const auto dst = download(streams[i], j.dst);
    const auto back = download(streams[i], j.back);
    const auto poison = devctx_test::poison_value<std::uint8_t>();
    std::vector<std::uint8_t> want_dst(j.total, poison), want_host(j.total, 0x5A), want_back(j.total, poison);
    for (std::size_t k = 0; k < j.n; ++k) {
      want_dst[j.dst_off + k] = j.values[j.src_off + k];
      want_host[j.dst_off + k] = j.values[j.src_off + k];
      want_back[j.src_off + k] = j.values[j.src_off + k];
    }
    EXPECT_TRUE(devctx_test::all_equal(want_dst, dst)) << "stream " << i << ", device to device";
    EXPECT_TRUE(devctx_test::all_equal(want_host, std::vector<std::uint8_t>(j.host.begin(), j.host.end())))
        << "stream " << i << ", device to host";
    EXPECT_TRUE(devctx_test::all_equal(want_back, back)) << "stream " << i << ", host to device";
  }
}

TEST_P(ParallelWork, LargeFillsOfEveryElementSizeOnFourStreams) {
  // Per stream one element size (the fill's 1-byte, 4-byte, 8-byte and general paths), a few MiB,
  // an odd count from an odd element offset; what lies around the slice must keep its value.
  std::vector<devctx::Stream> streams;
  for (std::size_t i = 0; i < kStreams; ++i) streams.push_back(ctx().create_stream());
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  const auto r32 = devctx_test::random_vector<std::uint32_t>(rng, 8, 1, 0xFFFFFFFEu);

  const std::size_t n8 = 5 * kMiB + 3, n32 = 3 * kMiB / 4 * 2 + 5, n64 = kMiB + 7, n12 = kMiB / 2 + 11;
  auto b8 = streams[0].enqueue_create_buffer<std::uint8_t>(n8 + 9);
  auto b32 = streams[1].enqueue_create_buffer<std::uint32_t>(n32 + 9);
  auto b64 = streams[2].enqueue_create_buffer<std::uint64_t>(n64 + 9);
  auto b12 = streams[3].enqueue_create_buffer<Triple>(n12 + 9);
  const std::uint8_t v8 = std::uint8_t(r32[0] | 1u);
  const std::uint32_t v32 = r32[1] | 0x01000000u;  // bytes differ: not a memset
  const std::uint64_t v64 = (std::uint64_t{r32[2]} << 32) | r32[3] | 1u;
  const Triple v12{r32[4], r32[5], r32[6]};
  const Triple t0{0, 0, 0};
  streams[0].enqueue_memset(b8, std::uint8_t{0});
  streams[1].enqueue_memset(b32, 0u);
  streams[2].enqueue_memset(b64, std::uint64_t{0});
  streams[3].enqueue_memset(b12, t0);
  streams[0].enqueue_memset(b8.slice(5, n8), v8);
  streams[1].enqueue_memset(b32.slice(3, n32), v32);
  streams[2].enqueue_memset(b64.slice(1, n64), v64);
  streams[3].enqueue_memset(b12.slice(7, n12), v12);

  EXPECT_TRUE(devctx_test::all_equal(expected_fill<std::uint8_t>(n8 + 9, 5, n8, 0, v8), download(streams[0], b8)));
  EXPECT_TRUE(devctx_test::all_equal(expected_fill<std::uint32_t>(n32 + 9, 3, n32, 0, v32), download(streams[1], b32)));
  EXPECT_TRUE(devctx_test::all_equal(expected_fill<std::uint64_t>(n64 + 9, 1, n64, 0, v64), download(streams[2], b64)));
  const auto got12 = download(streams[3], b12);
  const auto want12 = expected_fill<Triple>(n12 + 9, 7, n12, t0, v12);
  ASSERT_EQ(got12.size(), want12.size());
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < want12.size(); ++k) wrong += got12[k] == want12[k] ? 0 : 1;
  EXPECT_EQ(wrong, 0u) << "12-byte elements not as filled";
}

TEST_P(ParallelWork, SmallLaunchesHandedBetweenStreamsByEvents) {
  // Hundreds of small launches, each on the next stream after waiting for the previous one's
  // event: every completion hands work to another queue (the pool's claim, complete and wake
  // path), and a lost or reordered operation shows in the count.
  std::vector<devctx::Stream> streams;
  for (std::size_t i = 0; i < kStreams; ++i) streams.push_back(ctx().create_stream());
  const std::size_t n = 3000;  // 12 blocks of 256: several parts per launch
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_memset(d, 0u);
  devctx::Event last = ctx().record_event();
  const std::uint32_t rounds = 400;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    devctx::Stream& s = streams[r % kStreams];
    s.enqueue_wait_for(last);
    s.enqueue_function<add_kernel>(cover(n), d, 1u);
    last = s.record_event();
  }
  ctx().enqueue_wait_for(last);
  const auto got = download(ctx(), d);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(n, rounds), got));
}

TEST_P(ParallelWork, WorkAfterTheDeviceWentToSleep) {
  // Past the workers' spin (DEVCTX_CPU_SPIN_US, 50 us by default) they sleep: the next launch
  // must wake them, with or without a waiting host thread to help.
  const std::size_t n = 1 << 16;
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_memset(d, 0u);
  ctx().synchronize();
  for (std::uint32_t round = 1; round <= 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ctx().enqueue_function<add_kernel>(cover(n), d, 1u);
    auto e = ctx().record_event();
    while (!e.query()) std::this_thread::sleep_for(std::chrono::microseconds(200));  // workers alone
  }
  const auto got = download(ctx(), d);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(n, 3u), got));
}
