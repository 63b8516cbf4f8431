// SPDX-License-Identifier: Apache-2.0
// tests/kernel_failure_test.cpp - failures while kernels run, reported at the next wait and
// run on every backend where they apply (host exceptions and divergence checks are CPU-backend
// features): the kernel, block and thread named, each failure reported once, later work still
// run, waiting threads unwound, destructors that never throw, host API misuse from kernels.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using devctx::Api;
using devctx::DeviceContext;
using devctx::Dim3;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::poisoned_buffer;
using testing::HasSubstr;

/// Throws (on the CPU backend; device code cannot throw) in one thread of one block.
/// mode 0: straight-line code; 1: between barriers; 2: throws a non-std exception.
DEVCTX_KERNEL void throw_in_one_thread(devctx::span<unsigned> out, Dim3 bad_block, Dim3 bad_thread, int mode) {
  const Dim3 b = devctx::block_idx(), t = devctx::thread_idx();
  const bool bad = b.x == bad_block.x && b.y == bad_block.y && b.z == bad_block.z && t.x == bad_thread.x &&
                   t.y == bad_thread.y && t.z == bad_thread.z;
  if (mode == 1) devctx::barrier();
#if !defined(__CUDA_ARCH__)
  if (bad && mode == 2) throw 42;
  if (bad) throw std::runtime_error("boom from the test kernel");
#else
  (void)bad;
#endif
  if (mode == 1) devctx::barrier();
  const auto g = devctx::global_idx();
  if (g.y == 0 && g.z == 0 && g.x < out.size()) out[g.x] = 1;  // one writer per element: no race
}

/// Counts live instances: a failed block must unwind every started thread's frames.
std::atomic<int> g_guards_alive{0};
std::atomic<int> g_guards_made{0};
#if !defined(__CUDA_ARCH__)
struct Guard {
  Guard() {
    ++g_guards_alive;
    ++g_guards_made;
  }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  ~Guard() { --g_guards_alive; }
};
#endif

/// Every thread holds a Guard across several barriers (two call sites, a warp operation); one
/// thread of block `bad_block` throws in round `bad_round` (round 0: before any barrier), while
/// the others wait at a barrier or a warp operation, or have not started.
DEVCTX_KERNEL void throw_while_others_wait(devctx::span<int> out, unsigned bad_block, unsigned bad_thread,
                                           unsigned bad_round) {
#if !defined(__CUDA_ARCH__)
  const Guard guard;
  const unsigned t = devctx::thread_idx().x;
  const bool bad = devctx::block_idx().x == bad_block && t == bad_thread;
  int v = int(t);
  for (unsigned round = 0; round < 4; ++round) {
    if (bad && round == bad_round) throw std::runtime_error("failure while others wait");
    devctx::barrier();
    v = devctx::warp_sum(v) % 1000;
    devctx::barrier();
  }
  out[devctx::global_idx().x] = v;
#else
  (void)out, (void)bad_block, (void)bad_thread, (void)bad_round;
#endif
}

DEVCTX_KERNEL void throw_in_phase(devctx::Block blk, devctx::span<unsigned> out, unsigned bad_rank) {
  blk.for_each_thread([&](devctx::Thread t) {
#if !defined(__CUDA_ARCH__)
    if (blk.idx().x == 1 && t.rank == bad_rank) throw std::logic_error("phase failure");
#endif
    out[blk.global_idx(t).x] = 1;
  });
}

/// Half of each warp waits at a barrier while the other half is in a warp operation.
DEVCTX_KERNEL void diverge_barrier_vs_warp(devctx::span<int> out) {
  const unsigned t = devctx::thread_idx().x;
  int v = int(t);
  if (t % 32 < 16)
    devctx::barrier();
  else
    v = devctx::warp_sum(v);
  out[devctx::global_idx().x] = v;
}

DEVCTX_KERNEL void barrier_in_block_level(devctx::Block blk, devctx::span<int> out) {
  blk.for_each_thread([&](devctx::Thread t) {
    out[t.rank] = 1;
    devctx::barrier();
  });
}

DEVCTX_KERNEL void warp_op_in_block_level(devctx::Block blk, devctx::span<int> out) {
  blk.for_each_thread([&](devctx::Thread t) { out[t.rank] = devctx::warp_sum(int(t.rank)); });
}

// ---- failures inside kernels -------------------------------------------------------------------------

/// Failures raised by running kernels. Only the CPU backend can run host C++ (exceptions) inside
/// a kernel or detect barrier divergence; on a GPU these are device faults or hangs.
class KernelFailures : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (api() != Api::cpu) GTEST_SKIP() << "exceptions and divergence checks in kernels are CPU-backend features";
  }

  /// The context works after a failure: a kernel runs and synchronize reports nothing old.
  void expect_usable(devctx::StreamRef s) {
    auto buf = poisoned_buffer<unsigned>(s, 1000);
    s.enqueue_function<write_marker>(cover(1000, 128), buf, 77u);
    EXPECT_NO_THROW(s.synchronize());
    EXPECT_NO_THROW(ctx().synchronize());
    EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(1000, 77u), download(s, buf)));
  }
};
DEVCTX_INSTANTIATE_BACKEND_TESTS(KernelFailures);

TEST_P(KernelFailures, ExceptionReportedAtSynchronizeNamingKernelBlockAndThread) {
  for (const int mode : {0, 1}) {
    SCOPED_TRACE(mode == 0 ? "plain code" : "between barriers");
    const Dim3 grid{4, 3, 1}, block{8, 4, 2};
    auto out = poisoned_buffer<unsigned>(ctx(), 64);
    // Enqueueing does not throw: the failure happens later, while the kernel runs.
    ASSERT_NO_THROW(ctx().enqueue_function<throw_in_one_thread>({.grid_dim = grid, .block_dim = block}, out,
                                                                Dim3{3, 1, 0}, Dim3{5, 2, 1}, mode));
    const auto e = error_of([&] { ctx().synchronize(); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::kernel_failed) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("throw_in_one_thread"));
    EXPECT_THAT(e->what(), HasSubstr("block (3, 1, 0)"));
    EXPECT_THAT(e->what(), HasSubstr("thread (5, 2, 1)"));
    EXPECT_THAT(e->what(), HasSubstr("boom from the test kernel"));
    EXPECT_THAT(e->what(), HasSubstr("runtime_error"));
    expect_usable(ctx());
  }
}

TEST_P(KernelFailures, NonStandardExceptionType) {
  auto out = poisoned_buffer<unsigned>(ctx(), 64);
  ctx().enqueue_function<throw_in_one_thread>({.grid_dim = 2, .block_dim = 32}, out, Dim3{1, 0, 0}, Dim3{31, 0, 0}, 2);
  const auto e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::kernel_failed);
  EXPECT_THAT(e->what(), HasSubstr("block (1, 0, 0)"));
  EXPECT_THAT(e->what(), HasSubstr("thread (31, 0, 0)"));
  expect_usable(ctx());
}

TEST_P(KernelFailures, ExceptionInABlockLevelPhase) {
  auto out = poisoned_buffer<unsigned>(ctx(), 3 * 64);
  ctx().enqueue_function<throw_in_phase>({.grid_dim = 3, .block_dim = 64}, out, 40u);
  const auto e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::kernel_failed) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("throw_in_phase"));
  EXPECT_THAT(e->what(), HasSubstr("block (1, 0, 0)"));
  EXPECT_THAT(e->what(), HasSubstr("thread (40, 0, 0)"));
  EXPECT_THAT(e->what(), HasSubstr("phase failure"));
  expect_usable(ctx());
}

TEST_P(KernelFailures, FailureOnAStreamIsReportedOnceByWhicheverWaitSeesItFirst) {
  auto out = poisoned_buffer<unsigned>(ctx(), 64);
  ctx().synchronize();
  const devctx::LaunchConfig cfg{.grid_dim = 2, .block_dim = 32};
  {
    auto s = ctx().create_stream();
    s.enqueue_function<throw_in_one_thread>(cfg, out, Dim3{0, 0, 0}, Dim3{3, 0, 0}, 0);
    const auto e = error_of([&] { s.synchronize(); });  // the stream's own synchronize
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr("throw_in_one_thread"));
    EXPECT_NO_THROW(ctx().synchronize());  // already reported
    expect_usable(s);
  }
  {
    auto s = ctx().create_stream();
    s.enqueue_function<throw_in_one_thread>(cfg, out, Dim3{0, 0, 0}, Dim3{3, 0, 0}, 0);
    const auto e = error_of([&] { ctx().synchronize(); });  // the context covers its streams
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::kernel_failed);
    EXPECT_NO_THROW(s.synchronize());
    expect_usable(s);
  }
  {
    auto s = ctx().create_stream();
    s.enqueue_function<throw_in_one_thread>(cfg, out, Dim3{0, 0, 0}, Dim3{3, 0, 0}, 0);
    const devctx::Event after = s.record_event();
    const auto e = error_of([&] { after.synchronize(); });  // an event wait reports it
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::kernel_failed);
    EXPECT_NO_THROW(s.synchronize());
    EXPECT_NO_THROW(ctx().synchronize());
    expect_usable(s);
  }
}

TEST_P(KernelFailures, LaterWorkStillRunsAndLaterFailuresAreCounted) {
  auto out = poisoned_buffer<unsigned>(ctx(), 64);
  auto after = poisoned_buffer<unsigned>(ctx(), 64);
  const devctx::LaunchConfig cfg{.grid_dim = 2, .block_dim = 32};
  ctx().enqueue_function<throw_in_one_thread>(cfg, out, Dim3{1, 0, 0}, Dim3{0, 0, 0}, 0);
  ctx().enqueue_function<write_marker>(cfg, after, 5u);
  ctx().enqueue_function<throw_in_phase>({.grid_dim = 2, .block_dim = 32}, out, 1u);
  const auto e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr("throw_in_one_thread")) << "the first failure is the one reported";
  EXPECT_THAT(e->what(), HasSubstr("1 later failure"));
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(64, 5u), download(ctx(), after)))
      << "work enqueued after a failed kernel still runs";
  expect_usable(ctx());
}

TEST_P(KernelFailures, AFailedBlockUnwindsEveryWaitingThread) {
  if (!on_cpu()) GTEST_SKIP() << "device code cannot throw";
  // Block 0 is the first of its worker's range of blocks; the middle block runs in fibers
  // parked by the blocks before it (100 blocks, 20 under TSan: kUnderTsan).
  const unsigned blocks = devctx_test::kUnderTsan ? 20 : 100;
  for (const unsigned bad_block : {0u, blocks / 2}) {
    for (const unsigned bad_thread : {0u, 77u, 255u}) {
      for (const unsigned bad_round : {0u, 2u}) {
        SCOPED_TRACE(testing::Message() << "block " << bad_block << ", thread " << bad_thread << ", round " << bad_round);
        g_guards_made = 0;
        auto out = poisoned_buffer<int>(ctx(), blocks * 256);
        ctx().enqueue_function<throw_while_others_wait>({.grid_dim = blocks, .block_dim = 256}, out, bad_block,
                                                        bad_thread, bad_round);
        const auto e = error_of([&] { ctx().synchronize(); });
        ASSERT_TRUE(e);
        EXPECT_THAT(e->what(), HasSubstr("failure while others wait"));
        EXPECT_THAT(e->what(), HasSubstr("block (" + std::to_string(bad_block) + ", 0, 0), thread (" +
                                         std::to_string(bad_thread) + ", 0, 0)"));
        EXPECT_GT(g_guards_made.load(), 0);
        EXPECT_EQ(g_guards_alive.load(), 0) << "threads left without unwinding their frames";
        expect_usable(ctx());
      }
    }
  }
}

TEST_P(KernelFailures, BarrierDivergenceIsDetected) {
  auto out = poisoned_buffer<int>(ctx(), 128);
  ctx().enqueue_function<diverge_barrier_vs_warp>({.grid_dim = 2, .block_dim = 64}, out);
  const auto e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::kernel_failed) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("barrier divergence"));
  EXPECT_THAT(e->what(), HasSubstr("diverge_barrier_vs_warp"));
  expect_usable(ctx());
}

TEST_P(KernelFailures, BarriersAndWarpOperationsInsideBlockLevelPhasesAreRejected) {
  auto out = poisoned_buffer<int>(ctx(), 64);
  ctx().enqueue_function<barrier_in_block_level>({.grid_dim = 1, .block_dim = 64}, out);
  auto e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::kernel_failed) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("barrier_in_block_level"));
  EXPECT_THAT(e->what(), HasSubstr("block-level"));
  ctx().enqueue_function<warp_op_in_block_level>({.grid_dim = 1, .block_dim = 64}, out);
  e = error_of([&] { ctx().synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::kernel_failed) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("warp operation"));
  expect_usable(ctx());
}

TEST_P(KernelFailures, DestructorsNeverThrowWithFailuresPending) {
  {
    DeviceContext c{api()};
    auto out = poisoned_buffer<unsigned>(c, 64);
    auto s = c.create_stream();
    s.enqueue_function<throw_in_one_thread>({.grid_dim = 2, .block_dim = 32}, out, Dim3{0, 0, 0}, Dim3{0, 0, 0}, 1);
    c.enqueue_function<throw_in_one_thread>({.grid_dim = 2, .block_dim = 32}, out, Dim3{1, 0, 0}, Dim3{0, 0, 0}, 0);
  }  // the stream, the buffer and the context go with unreported failures: no throw, no terminate
  // The dropped failures are gone with their context: a fresh context of the same device, and
  // the fixture's own, synchronize cleanly and run work.
  DeviceContext fresh{api()};
  auto buf = poisoned_buffer<unsigned>(fresh, 256);
  fresh.enqueue_function<write_marker>(cover(256, 64), buf, 5u);
  EXPECT_NO_THROW(fresh.synchronize());
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(256, 5u), download(fresh, buf)));
  expect_usable(ctx());
}

devctx::StreamRef* g_waiting_stream = nullptr;

/// Kernel code that waits for device work: on the CPU it could call the host API, and would wait
/// for its own launch forever. (A GPU kernel cannot call host functions at all.)
DEVCTX_KERNEL void waits_inside_kernel(devctx::span<int> out) {
#if !defined(__CUDA_ARCH__)
  if (devctx::global_idx().x == 0) g_waiting_stream->synchronize();
#endif
  out[devctx::global_idx().x] = 1;
}

TEST_P(KernelFailures, SynchronizeInsideAKernelIsAnErrorNotAHang) {
  if (!on_cpu()) GTEST_SKIP() << "kernels on a GPU cannot call host functions";
  auto out = ctx().enqueue_create_buffer<int>(64);
  g_waiting_stream = &ctx();
  ctx().enqueue_function<waits_inside_kernel>({.grid_dim = 1, .block_dim = 64}, out);
  const auto e = error_of([&] { ctx().synchronize(); });
  g_waiting_stream = nullptr;
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("waits_inside_kernel"));
  EXPECT_THAT(e->what(), HasSubstr("called from inside a kernel"));
}

TEST_P(KernelFailures, DeviceSideApiOutsideAKernelIsAnError) {
  // Kernel-side functions need a running kernel (the CPU backend checks).
  const auto e = error_of([] { devctx::barrier(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("outside a running kernel"));
  const auto d = error_of([] { (void)devctx::dynamic_shared<int>(); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->code(), Errc::invalid_argument);
}
