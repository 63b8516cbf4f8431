// SPDX-License-Identifier: Apache-2.0
// tests/cuda/staging_engine_test.cpp - the CUDA backend's staging engine and copy threads
// (src/backends/cuda/staging_engine.cpp, copy_workers.cpp) on a host-side fake of the CUDA calls
// they make (fake_cuda_runtime.cpp), so that their pipelining, slot reuse, concurrency and
// failure paths run on every machine, GPU or not (ctest devctx_staging_engine_tests, label
// cpu). The fake DMA engine pauses at random before each operation: a slot reused before its
// DMA finished, or a chunk sent before it was filled, shows up as wrong bytes.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/copy_workers.hpp"
#include "backends/cuda/staging_engine.hpp"
#include "../support/thread_names.hpp"
#include "fake_cuda_runtime.hpp"

namespace {

using devctx::detail::cuda::CopyWorkers;
using devctx::detail::cuda::StagingEngine;
using devctx::detail::cuda::TransferSettings;

std::vector<unsigned char> random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TransferSettings small_settings(std::size_t threads, std::size_t chunks = 4) {
  TransferSettings s;
  s.chunk_bytes = 64 << 10;
  s.staging_bytes = chunks * s.chunk_bytes;
  s.copy_threads = threads;
  return s;
}

struct Stream {
  cudaStream_t handle = nullptr;
  Stream() { EXPECT_EQ(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), cudaSuccess); }
  ~Stream() { (void)cudaStreamDestroy(handle); }
};

TEST(CopyWorkers, CopiesEveryByteWithAnyNumberOfThreads) {
  std::mt19937_64 rng(1);
  // Sleeping workers, and workers that wait actively inside an open session.
  for (const auto& [threads, spin] : {std::pair{0, 0}, {1, 0}, {3, 0}, {8, 0}, {1, 200}, {3, 200}, {8, 200}}) {
    SCOPED_TRACE(std::to_string(threads) + " threads, spin " + std::to_string(spin) + " us");
    CopyWorkers workers(threads, std::chrono::microseconds(spin));
    std::optional<CopyWorkers::Session> session;
    if (spin != 0) session.emplace(workers);
    for (const std::size_t n : {std::size_t{1}, std::size_t{4095}, std::size_t{1} << 20, (std::size_t{5} << 20) + 77}) {
      const auto src = random_bytes(rng, n);
      std::vector<unsigned char> dst(n + 2, 0xA5);
      CopyWorkers::Job job;
      workers.submit(job, dst.data() + 1, src.data(), n);
      workers.finish(job);
      ASSERT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 1)) << n << " bytes";
      EXPECT_EQ(dst.front(), 0xA5);
      EXPECT_EQ(dst.back(), 0xA5);
    }
  }
}

TEST(CopyWorkers, ThreadsAreNamedForTools) {
#if !defined(__linux__)
  GTEST_SKIP() << "thread names are read from /proc";
#endif
  const CopyWorkers workers(3, std::chrono::microseconds(0));
  const auto names = devctx_test::thread_names();
  for (const char* want : {"devctx-copy0", "devctx-copy1", "devctx-copy2"})
    EXPECT_EQ(std::count(names.begin(), names.end(), want), 1) << want;
}

TEST(CopyWorkers, CancelLeavesNoWorkerOnTheMemory) {
  CopyWorkers workers(4, std::chrono::microseconds(100));
  const CopyWorkers::Session session(workers);
  std::mt19937_64 rng(2);
  for (int round = 0; round < 50; ++round) {
    const std::size_t n = std::size_t{4} << 20;
    const auto src = random_bytes(rng, n);
    auto dst = std::make_unique<std::vector<unsigned char>>(n, 0);
    CopyWorkers::Job job;
    workers.submit(job, dst->data(), src.data(), n);
    workers.cancel(job);
    dst.reset();  // freed: a worker still copying would write freed memory (ASan builds see it)
  }
}

class Engine : public testing::TestWithParam<std::size_t> {};  // the number of copy threads

TEST_P(Engine, UploadsAndDownloadsEverySize) {
  StagingEngine engine(small_settings(GetParam()), nullptr);
  Stream stream;
  std::mt19937_64 rng(3 + GetParam());
  const std::size_t chunk = 64 << 10;
  for (const std::size_t n : {std::size_t{1}, chunk - 1, chunk, chunk + 1, 4 * chunk, 4 * chunk + 3, 13 * chunk + 999}) {
    SCOPED_TRACE(std::to_string(n) + " bytes");
    auto host = random_bytes(rng, n);
    const auto expected = host;
    std::vector<unsigned char> device(n, 0xA5);
    ASSERT_TRUE(engine.upload(device.data(), host.data(), n, stream.handle).ok());
    // Done on return, as the direct path is: on the device without a stream wait, and the
    // source may be overwritten at once.
    ASSERT_TRUE(device == expected);
    std::fill(host.begin(), host.end(), 0x11);
    ASSERT_EQ(cudaStreamSynchronize(stream.handle), cudaSuccess);
    ASSERT_TRUE(device == expected);
    // Download: written completely on return, without a stream wait.
    std::vector<unsigned char> back(n, 0x5A);
    ASSERT_TRUE(engine.download(back.data(), device.data(), n, stream.handle).ok());
    ASSERT_TRUE(back == expected);
  }
}

TEST_P(Engine, ManyThreadsShareTheSlots) {
  StagingEngine engine(small_settings(GetParam(), 3), nullptr);
  constexpr int kThreads = 4;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Stream stream;
      std::mt19937_64 rng(100 + t);
      for (int round = 0; round < 12; ++round) {
        const std::size_t n = 1 + rng() % (std::size_t{600} << 10);
        const auto host = random_bytes(rng, n);
        std::vector<unsigned char> device(n, 0xA5), back(n, 0x5A);
        if (!engine.upload(device.data(), host.data(), n, stream.handle).ok()) ++wrong;
        if (!engine.download(back.data(), device.data(), n, stream.handle).ok()) ++wrong;  // stream order
        if (back != host) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(Engine, AFailedCallIsReportedAndTheEngineStaysUsable) {
  StagingEngine engine(small_settings(GetParam()), nullptr);
  Stream stream;
  std::mt19937_64 rng(7);
  const std::size_t n = (std::size_t{64} << 10) * 9 + 5;
  for (long fail_at = 0; fail_at < 10; fail_at += 3) {
    SCOPED_TRACE("failing memcpy " + std::to_string(fail_at));
    auto host = random_bytes(rng, n);
    std::vector<unsigned char> device(n, 0);
    fake_cuda_fail_after(fail_at);
    const auto up = engine.upload(device.data(), host.data(), n, stream.handle);
    EXPECT_EQ(up.status, cudaErrorInvalidValue);
    fake_cuda_fail_after(fail_at);
    std::vector<unsigned char> back(n, 0);
    const auto down = engine.download(back.data(), device.data(), n, stream.handle);
    EXPECT_EQ(down.status, cudaErrorInvalidValue);
    fake_cuda_fail_after(-1);
    // Every slot came back: whole copies work again.
    ASSERT_TRUE(engine.upload(device.data(), host.data(), n, stream.handle).ok());
    ASSERT_TRUE(engine.download(back.data(), device.data(), n, stream.handle).ok());
    ASSERT_TRUE(back == host);
  }
}

INSTANTIATE_TEST_SUITE_P(CopyThreads, Engine, testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{4}));

}  // namespace
