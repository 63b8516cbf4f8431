// SPDX-License-Identifier: Apache-2.0
// tests/trust_test.cpp - the defects of issue 10, each shown by a test that failed before its
// fix: overlapping copies and a device-level wait that covers work left on dropped contexts
// (every backend), and on the CPU backend: address-space limits, copies that throw, fiber stack
// overflows and bad DEVCTX_CPU_THREADS values.
//
// The CPU tests that need a process of their own (a lowered address-space limit, an environment
// variable read when the device starts, a crash report) run their body in a child process
// (a gtest death test, "threadsafe" style: the child re-executes this program for that one test),
// so that a defect that kills the process fails the test instead of the whole run. ctest runs
// each such group as its own entry (tests/CMakeLists.txt).
#include "support/test_support.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <fstream>
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

namespace {

// ---- kernels --------------------------------------------------------------------------------------

DEVCTX_KERNEL void add_one(devctx::span<std::uint32_t> data) {
  const auto i = devctx::global_idx().x;
  if (i < data.size()) data[i] += 1;
}

/// out[i] = in[i] + (sum of the block's thread indices): needs a barrier, so on the CPU every
/// thread of a block gets a fiber stack.
DEVCTX_KERNEL void add_block_sum(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out) {
  DEVCTX_SHARED(std::uint32_t, ids, 1024);
  const unsigned t = devctx::thread_idx().x;
  ids[t] = t;
  devctx::barrier();
  std::uint32_t sum = 0;
  for (unsigned j = 0; j < devctx::block_dim().x; ++j) sum += ids[j];
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] + sum;
}

#if !defined(__CUDA_ARCH__)
/// Recursion whose frames cannot be merged (each passes its array to the next): about 600 bytes
/// of stack per level.
[[gnu::noinline]] unsigned deep(unsigned n, volatile unsigned char* prev) {
  volatile unsigned char pad[512];
  pad[0] = static_cast<unsigned char>(prev != nullptr ? prev[0] + 1 : 0);
  pad[511] = pad[0];
  if (n == 0) return pad[0];
  return deep(n - 1, pad) ^ pad[511];
}
#endif

/// Recurses `levels` deep in every thread, after a barrier when `with_barrier`.
DEVCTX_KERNEL void recurse(devctx::span<std::uint32_t> out, unsigned levels, unsigned with_barrier) {
#if !defined(__CUDA_ARCH__)
  if (with_barrier != 0) devctx::barrier();
  const auto i = devctx::global_idx().x;
  const unsigned r = deep(levels, nullptr);
  if (i < out.size()) out[i] = r;
#else
  (void)out, (void)levels, (void)with_barrier;
#endif
}

#if !defined(__CUDA_ARCH__)
constexpr std::size_t kBigFrame = 256 * 1024;
#endif

/// One frame far larger than a guard page, touched at its lowest address first: without a large
/// enough guard (or stack-clash probes) the write lands in the stack of another GPU thread.
DEVCTX_KERNEL void big_frame(devctx::span<std::uint32_t> out, unsigned with_barrier) {
#if !defined(__CUDA_ARCH__)
  if (with_barrier != 0) devctx::barrier();
  volatile unsigned char big[kBigFrame];
  big[0] = 1;
  big[kBigFrame - 1] = 2;
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = big[0] + big[kBigFrame - 1];
#else
  (void)out, (void)with_barrier;
#endif
}

#if !defined(__CUDA_ARCH__) && defined(__GNUC__) && !defined(__clang__)
#define DEVCTX_TEST_UNPROBED_FRAME 1
constexpr std::size_t kGuardFrame = 40 * 1024;
/// A frame of 40 KiB touched at its lowest address first, compiled without stack-clash probes
/// (as kernel code built without devctx_add_kernels would be): only the guard's size catches it.
[[gnu::optimize("no-stack-clash-protection"), gnu::noinline]] unsigned unprobed_frame(unsigned seed) {
  volatile unsigned char big[kGuardFrame];
  big[0] = static_cast<unsigned char>(seed);
  big[kGuardFrame - 1] = big[0];
  return big[0] + big[kGuardFrame - 1];
}
#endif

// [[maybe_unused]]: the test that launches it is compiled only where DEVCTX_TEST_UNPROBED_FRAME is
// (nvcc's device pass compiles the kernel unused: warning #177-D).
[[maybe_unused]] DEVCTX_KERNEL void guard_frame(devctx::span<std::uint32_t> out) {
#if defined(DEVCTX_TEST_UNPROBED_FRAME)
  devctx::barrier();
  const auto i = devctx::global_idx().x;
  const unsigned r = unprobed_frame(unsigned(i));
  if (i < out.size()) out[i] = r;
#else
  (void)out;
#endif
}

// ---- process helpers (the CPU-only tests) ----------------------------------------------------------

/// The process's address space in use (VmSize), in bytes.
std::size_t address_space_in_use() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmSize:") {
      std::size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  ADD_FAILURE() << "no VmSize in /proc/self/status";
  return 0;
}

/// Limits the process's address space to what it uses now plus `headroom` (as `ulimit -v`
/// would, but relative to this process, so the test does not depend on its binary's size).
///
/// Every thread also shares glibc's main malloc arena from here on: by default glibc gives each
/// thread that allocates an arena of its own, reserving 64 MiB of address space (mallopt(3)),
/// and whichever of that and the fiber stacks comes first would take the headroom, so what
/// fails would depend on thread timing. Under a real `ulimit -v`, MALLOC_ARENA_MAX=1 or 2
/// does the same.
void limit_address_space(std::size_t headroom) {
  ASSERT_EQ(mallopt(M_ARENA_MAX, 1), 1);
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &limit), 0);
  limit.rlim_cur = address_space_in_use() + headroom;
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limit), 0) << std::strerror(errno);
}

/// Lifts the soft limit again (up to the hard limit, which was never lowered).
void unlimit_address_space() {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &limit), 0);
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limit), 0) << std::strerror(errno);
}

/// Threads of this process now.
std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

/// A crash test's child writes no core file (the report on stderr is what is checked).
void no_core_files() {
  const rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

// ASan and TSan reserve terabytes of shadow address space at start-up, so a process under them
// cannot run with an address-space limit (RLIMIT_AS) at all: the tests that set one skip there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerShadow = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerShadow = true;
#else
constexpr bool kSanitizerShadow = false;
#endif
#else
constexpr bool kSanitizerShadow = false;
#endif
#define DEVCTX_SKIP_UNDER_SANITIZER_SHADOW() \
  if (kSanitizerShadow) GTEST_SKIP() << "an address-space limit cannot be set under ASan or TSan (shadow memory)"

}  // namespace

/// Runs `body` in a child process (a fresh copy of this program running only the current test)
/// and expects it to exit with 0: every gtest failure inside it makes the exit code 1, and a
/// crash or std::terminate fails the test.
template <class F>
void in_child(F&& body) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        body();
        std::fflush(nullptr);
        std::_Exit(testing::Test::HasFailure() ? 1 : 0);
      },
      testing::ExitedWithCode(0), "");
}

// ================================================================================================
// Defect 4: overlapping copies within one buffer. They are refused on every backend (the CUDA
// runtime's cudaMemcpyAsync does not promise memmove semantics either), with both ranges named.
// ================================================================================================

class Overlap : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Overlap);

TEST_P(Overlap, ShiftWithinOneDeviceBufferIsRefusedAndEnqueuesNothing) {
  // The case that went wrong: a 4M-element slice shifted by 100,000 elements, above the CPU
  // backend's 1 MiB copy chunks.
  const std::size_t n = std::size_t{4} << 20, shift = 100'000;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n + shift, 0, 0xFFFFFFFFu);
  auto d = devctx_test::upload(ctx(), values);
  for (const auto& [dst_off, src_off] : {std::pair<std::size_t, std::size_t>{shift, 0}, {0, shift}}) {
    SCOPED_TRACE(testing::Message() << "dst offset " << dst_off << ", src offset " << src_off);
    const auto e = error_of([&] { ctx().enqueue_copy(d.slice(dst_off, n), d.slice(src_off, n)); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("enqueue_copy"));
    EXPECT_THAT(e->what(), HasSubstr("overlap"));
    // Both ranges, as element ranges of the buffer.
    EXPECT_THAT(e->what(), HasSubstr("elements [" + std::to_string(dst_off) + ", " + std::to_string(dst_off + n) + ")"));
    EXPECT_THAT(e->what(), HasSubstr("elements [" + std::to_string(src_off) + ", " + std::to_string(src_off + n) + ")"));
    ASSERT_TRUE(devctx_test::all_equal(values, download(ctx(), d))) << "the buffer changed";
  }
}

TEST_P(Overlap, EveryOverlapIsRefusedOnEveryKindOfMemory) {
  const std::size_t n = 1000;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 0xFFFFFFFFu);
  auto d = devctx_test::upload(ctx(), values);
  auto h = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  ctx().synchronize();
  std::copy(values.begin(), values.end(), h.begin());
  std::vector<std::uint32_t> v = values;
  auto refused = [&](auto&& dst, auto&& src, const char* what) {
    SCOPED_TRACE(what);
    const auto e = error_of([&] { ctx().enqueue_copy(dst, src); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("overlap"));
  };
  refused(d, d, "a DeviceBuffer onto itself");
  refused(d.slice(1, 10), d.slice(10, 10), "device slices sharing one element");
  refused(d.slice(500, 500), d.slice(0, 501).slice(1, 500), "a slice of a slice");
  refused(h.slice(0, 100), h.slice(99, 100), "host slices sharing one element");
  refused(std::span<std::uint32_t>(h.data() + 10, 100), h.slice(0, 100), "a std::span into a HostBuffer");
  refused(std::span<std::uint32_t>(v.data() + 3, 500), std::span<const std::uint32_t>(v.data(), 500),
          "two spans of one vector");
  ctx().synchronize();
  ASSERT_TRUE(devctx_test::all_equal(values, download(ctx(), d)));
  ASSERT_TRUE(devctx_test::all_equal(values, std::vector<std::uint32_t>(h.begin(), h.end())));
  ASSERT_TRUE(devctx_test::all_equal(values, v));
}

TEST_P(Overlap, AdjacentSlicesOfOneBufferCopyExactly) {
  // Touching but not overlapping: allowed, and exact above the CPU's copy chunks too.
  const std::size_t n = std::size_t{3} << 20;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, 2 * n, 0, 0xFFFFFFFFu);
  auto d = devctx_test::upload(ctx(), values);
  ctx().enqueue_copy(d.slice(n, n), d.slice(0, n));
  auto expected = values;
  std::copy_n(values.begin(), n, expected.begin() + std::ptrdiff_t(n));
  ASSERT_TRUE(devctx_test::all_equal(expected, download(ctx(), d)));
  ctx().enqueue_copy(d.slice(0, n), d.slice(n, n));  // and back, after the first
  std::copy_n(expected.begin() + std::ptrdiff_t(n), n, expected.begin());
  ASSERT_TRUE(devctx_test::all_equal(expected, download(ctx(), d)));
}

// ================================================================================================
// Item 8: work left running on a dropped context or stream is covered by a device-level wait,
// DeviceContext::synchronize_device() (cudaDeviceSynchronize on CUDA), on every backend.
// ================================================================================================

class DeviceWait : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(DeviceWait);

TEST_P(DeviceWait, SynchronizeDeviceCoversWorkLeftOnDroppedContextsAndStreams) {
  const std::size_t n = std::size_t{1} << 21;
  const unsigned rounds = 8;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 0xFFFF0000u);
  auto expected = values;
  for (auto& x : expected) x += rounds;
  // Host buffers of this context, written by work of contexts and streams dropped before it ends.
  auto h_context = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  auto h_stream = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  ctx().synchronize();
  std::fill(h_context.begin(), h_context.end(), devctx_test::poison_value<std::uint32_t>());
  std::fill(h_stream.begin(), h_stream.end(), devctx_test::poison_value<std::uint32_t>());
  {
    DeviceContext other{api()};
    auto d = devctx_test::upload(other, values);
    for (unsigned r = 0; r < rounds; ++r) other.enqueue_function<add_one>(cover(n), d);
    other.enqueue_copy(h_context, d);
    auto s = other.create_stream();
    auto d2 = devctx_test::upload(s, values);
    for (unsigned r = 0; r < rounds; ++r) s.enqueue_function<add_one>(cover(n), d2);
    s.enqueue_copy(h_stream, d2);
  }  // the context, its stream and the device buffers are gone; their work may still run
  ctx().synchronize_device();
  EXPECT_TRUE(devctx_test::all_equal(expected, std::vector<std::uint32_t>(h_context.begin(), h_context.end())));
  EXPECT_TRUE(devctx_test::all_equal(expected, std::vector<std::uint32_t>(h_stream.begin(), h_stream.end())));
}

/// Throws in block 0, thread 0 (the CPU backend runs kernels as C++; device code cannot throw).
DEVCTX_KERNEL void throw_once(devctx::span<std::uint32_t> out) {
#if !defined(__CUDA_ARCH__)
  if (devctx::global_idx().x == 0) throw std::runtime_error("planted failure");
#endif
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = 1;
}

TEST_P(DeviceWait, SynchronizeDeviceReportsOnlyThisContextsFailures) {
  if (!on_cpu()) GTEST_SKIP() << "a kernel can throw only on the CPU backend";
  DeviceContext other{api()};
  auto d_other = other.enqueue_create_buffer<std::uint32_t>(256);
  other.enqueue_function<throw_once>(cover(256), d_other);
  // Nothing failed on this context: the other context's failure stays with it.
  ctx().synchronize_device();
  const auto e_other = error_of([&] { other.synchronize(); });
  ASSERT_TRUE(e_other);
  EXPECT_THAT(e_other->what(), HasSubstr("planted failure"));
  // A failure of this context's own work is reported, after all of the device's work.
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(256);
  ctx().enqueue_function<throw_once>(cover(256), d);
  const auto e = error_of([&] { ctx().synchronize_device(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::kernel_failed) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("planted failure"));
  ctx().synchronize();  // reported once
}

// ================================================================================================
// Defect 2: address-space limits (`ulimit -v`). Fiber stacks are reserved when a launch needs
// them and in proportion to its block size; a reservation that fails fails that launch, reported
// at synchronize(); copies need no stacks at all; the device recovers once memory is free.
// ================================================================================================

namespace {

/// Checks add_block_sum's output for blocks of `block` threads.
void expect_block_sums(const std::vector<std::uint32_t>& in, const std::vector<std::uint32_t>& out, unsigned block) {
  std::vector<std::uint32_t> expected(in.size());
  const std::uint32_t sum = block * (block - 1) / 2;
  for (std::size_t i = 0; i < in.size(); ++i) expected[i] = in[i] + sum;
  EXPECT_TRUE(devctx_test::all_equal(expected, out));
}

/// A 4 KiB round trip through device memory, checked element by element.
void round_trip_4k(DeviceContext& ctx, std::mt19937_64& rng) {
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, 1024, 0, 0xFFFFFFFEu);
  auto d = devctx_test::upload(ctx, values);
  // Blocks of 64: each thread that runs them reserves 65 fiber stacks (8 MiB of address space).
  ctx.enqueue_function<add_one>(cover(values.size(), 64), d);
  auto expected = values;
  for (auto& x : expected) x += 1;
  EXPECT_TRUE(devctx_test::all_equal(expected, download(ctx, d)));
}

/// A barrier kernel over `blocks` blocks of `block` threads, checked.
void barrier_launch(DeviceContext& ctx, std::mt19937_64& rng, unsigned block, unsigned blocks) {
  const std::size_t n = std::size_t(block) * blocks;
  const auto in = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 20);
  auto d_in = devctx_test::upload(ctx, in);
  auto d_out = devctx_test::poisoned_buffer<std::uint32_t>(ctx, n);
  ctx.enqueue_function<add_block_sum>({.grid_dim = blocks, .block_dim = block}, d_in, d_out);
  expect_block_sums(in, download(ctx, d_out), block);
}

}  // namespace

TEST(CpuAddressSpace, WorkersStartUnderATightLimit) {
  DEVCTX_SKIP_UNDER_SANITIZER_SHADOW();
  // Before: every worker reserved 128 MiB of fiber stacks when the device started; a worker
  // that could not died with an uncaught devctx::Error (std::terminate).
  in_child([&] {
    auto rng = devctx_test::test_rng();
    setenv("DEVCTX_CPU_THREADS", "4", 1);
    limit_address_space(160 * kMiB);
    DeviceContext ctx{Api::cpu};
    round_trip_4k(ctx, rng);
    barrier_launch(ctx, rng, 64, 64);
    ctx.synchronize();
  });
}

TEST(CpuAddressSpace, ALaunchWhoseStacksDoNotFitFailsAtSynchronizeAndTheDeviceRecovers) {
  DEVCTX_SKIP_UNDER_SANITIZER_SHADOW();
  in_child([&] {
    auto rng = devctx_test::test_rng();
    setenv("DEVCTX_CPU_THREADS", "2", 1);
    DeviceContext ctx{Api::cpu};
    limit_address_space(96 * kMiB);
    // 1024 threads per block need 1025 stacks of 128 KiB: more than the limit leaves.
    const unsigned block = 1024, blocks = 8;
    const std::size_t n = std::size_t(block) * blocks;
    const auto in = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 1u << 20);
    auto d_in = devctx_test::upload(ctx, in);
    auto d_out = devctx_test::poisoned_buffer<std::uint32_t>(ctx, n);
    ctx.enqueue_function<add_block_sum>({.grid_dim = blocks, .block_dim = block}, d_in, d_out);
    const auto e = error_of([&] { ctx.synchronize(); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("add_block_sum"));
    EXPECT_THAT(e->what(), HasSubstr("fiber stacks"));
    EXPECT_THAT(e->what(), HasSubstr("DEVCTX_CPU_STACK_BYTES"));
    // The device is usable: copies, plain kernels and small barrier blocks still run.
    round_trip_4k(ctx, rng);
    barrier_launch(ctx, rng, 128, 16);
    // Once the limit is lifted, the big launch runs too.
    unlimit_address_space();
    barrier_launch(ctx, rng, block, blocks);
    ctx.synchronize();
  });
}

TEST(CpuAddressSpace, RoundTripsWorkAgainOnceBuffersAreDropped) {
  DEVCTX_SKIP_UNDER_SANITIZER_SHADOW();
  // Before: once out of memory, every later copy that the waiting host thread helped with tried
  // to reserve that thread's 128 MiB of fiber stacks and failed, buffers dropped or not.
  in_child([&] {
    auto rng = devctx_test::test_rng();
    setenv("DEVCTX_CPU_THREADS", "2", 1);
    DeviceContext ctx{Api::cpu};
    limit_address_space(128 * kMiB);
    {
      std::vector<devctx::DeviceBuffer<std::uint32_t>> hog;
      const auto e = error_of([&] {
        for (int i = 0; i < 1000; ++i) hog.push_back(ctx.enqueue_create_buffer<std::uint32_t>(2 * kMiB));
      });
      ASSERT_TRUE(e);
      EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
    }
    ctx.synchronize();  // the dropped buffers are freed in stream order
    for (int i = 0; i < 3; ++i) round_trip_4k(ctx, rng);
    barrier_launch(ctx, rng, 64, 8);
    ctx.synchronize();
  });
}

// ================================================================================================
// Issue 25, defect 7: an out-of-memory message under `ulimit -v` (or -d) quoted the machine's RAM
// ("the machine has 125.7 GiB of memory"), not the limit that made the allocation fail.
// ================================================================================================

TEST(CpuAddressSpace, OutOfMemoryNamesTheLimitThatApplied) {
  DEVCTX_SKIP_UNDER_SANITIZER_SHADOW();
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    SCOPED_TRACE(resource == RLIMIT_AS ? "RLIMIT_AS" : "RLIMIT_DATA");
    in_child([&] {
      setenv("DEVCTX_CPU_THREADS", "2", 1);
      DeviceContext ctx{Api::cpu};
      ASSERT_EQ(mallopt(M_ARENA_MAX, 1), 1);
      rlimit limit{};
      ASSERT_EQ(getrlimit(resource, &limit), 0);
      limit.rlim_cur = address_space_in_use() + 256 * kMiB;  // VmSize is at least VmData
      ASSERT_EQ(setrlimit(resource, &limit), 0) << std::strerror(errno);
      const std::string limit_text = std::to_string(limit.rlim_cur) + " bytes)";
      for (const bool host : {false, true}) {
        const auto e = error_of([&] {
          if (host)
            (void)ctx.enqueue_create_host_buffer<char>(1024 * kMiB);
          else
            (void)ctx.enqueue_create_buffer<char>(1024 * kMiB);
        });
        ASSERT_TRUE(e);
        EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
        EXPECT_THAT(e->what(), HasSubstr("cannot allocate 1.0 GiB"));
        EXPECT_THAT(e->what(),
                    HasSubstr(resource == RLIMIT_AS ? "the process's address-space limit (RLIMIT_AS, `ulimit -v`) is "
                                                    : "the process's data limit (RLIMIT_DATA, `ulimit -d`) is "));
        EXPECT_THAT(e->what(), HasSubstr(limit_text));
        EXPECT_THAT(e->what(), HasSubstr(" of it in use; the machine has "));
      }
      // The device is still usable within the limit.
      auto rng = devctx_test::test_rng();
      round_trip_4k(ctx, rng);
    });
  }
}

// ================================================================================================
// Found by the differential fuzzer on the H200's host (vm.overcommit_memory=1): a 16 TiB host
// buffer on the CPU device was "allocated" (malloc promised the address space) instead of
// refused. A buffer larger than the machine's memory and swap together is out_of_memory
// whatever the kernel's overcommit setting.
// ================================================================================================

TEST(CpuAddressSpace, ABufferLargerThanMemoryAndSwapIsRefusedUnderAnyOvercommitSetting) {
  struct sysinfo info{};
  ASSERT_EQ(sysinfo(&info), 0);
  const std::size_t backable = (std::size_t(info.totalram) + info.totalswap) * info.mem_unit;
  DeviceContext ctx{Api::cpu};
  auto rng = devctx_test::test_rng();
  for (const std::size_t bytes : {backable + 4096, 2 * backable, std::size_t{1} << 44}) {
    if (bytes <= backable) continue;
    for (const bool host : {false, true}) {
      const auto e = error_of([&] {
        if (host)
          (void)ctx.enqueue_create_host_buffer<char>(bytes);
        else
          (void)ctx.enqueue_create_buffer<char>(bytes);
      });
      ASSERT_TRUE(e) << bytes << " bytes were allocated";
      EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
      EXPECT_THAT(e->what(), HasSubstr("more than the machine's memory and swap together"));
      EXPECT_THAT(e->what(), HasSubstr(host ? "enqueue_create_host_buffer" : "enqueue_create_buffer"));
    }
  }
  round_trip_4k(ctx, rng);  // nothing was enqueued; the device is usable
}

// ================================================================================================
// Defect 3: "throws and enqueues nothing" holds for a copy from ordinary host memory too. Before,
// the waiting host thread could fail (out_of_memory creating its fiber stacks while helping)
// after the copy was queued; the copy then ran later and read the caller's vector.
// ================================================================================================

TEST(CpuAddressSpace, ACopyThatThrowsNeverRuns) {
  DEVCTX_SKIP_UNDER_SANITIZER_SHADOW();
  in_child([&] {
    auto rng = devctx_test::test_rng();
    setenv("DEVCTX_CPU_THREADS", "1", 1);
    DeviceContext ctx{Api::cpu};
    const std::size_t n = 2 * kMiB;  // 8 MiB: several parts, so the waiting thread helps
    const std::vector<std::uint32_t> poison(n, devctx_test::poison_value<std::uint32_t>());
    auto d = devctx_test::poisoned_buffer<std::uint32_t>(ctx, n);
    ctx.synchronize();
    limit_address_space(48 * kMiB);
    // Each attempt waits in a new host thread (before the fix, one that had no fiber stacks yet
    // and failed to reserve them while helping), whose vector is gone once it returns.
    for (int attempt = 0; attempt < 10; ++attempt) {
      SCOPED_TRACE(attempt);
      std::vector<std::uint32_t> sent;
      bool threw = false;
      std::thread user([&] {
        std::vector<std::uint32_t> v = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 0xFFFFFFFFu);
        try {
          ctx.enqueue_copy(d, v);
          sent = v;
        } catch (const devctx::Error& e) {
          threw = true;
          std::fprintf(stderr, "enqueue_copy threw: %s\n", e.what());
          // The caller may reuse its memory at once: nothing may read it any more.
          std::fill(v.begin(), v.end(), 0x5A5A5A5Au);
        }
      });
      user.join();
      if (threw) {
        ASSERT_TRUE(devctx_test::all_equal(poison, download(ctx, d))) << "a copy that threw ran";
      } else {
        ASSERT_TRUE(devctx_test::all_equal(sent, download(ctx, d)));
        ctx.enqueue_memset(d, poison[0]);
      }
    }
    ctx.synchronize();
  });
}

// ================================================================================================
// Defect 5: a fiber stack overflow stops the process with a report naming the kernel, block and
// thread and the setting to raise, on the plain path and on fibers, for deep recursion and for
// one frame far larger than a guard page.
// ================================================================================================

namespace {

constexpr const char* kOverflowReport =
    "stack overflow.*kernel '[^']*recurse'.*block \\([0-9]+, 0, 0\\).*thread \\([0-9]+, 0, 0\\).*DEVCTX_CPU_STACK_BYTES";

void run_overflowing(unsigned with_barrier, bool big) {
  no_core_files();
  setenv("DEVCTX_CPU_THREADS", "2", 1);
  DeviceContext ctx{Api::cpu};
  auto out = ctx.enqueue_create_buffer<std::uint32_t>(64 * 4);
  if (big)
    ctx.enqueue_function<big_frame>({.grid_dim = 4, .block_dim = 64}, out, with_barrier);
  else
    ctx.enqueue_function<recurse>({.grid_dim = 4, .block_dim = 64}, out, 1u << 20, with_barrier);
  ctx.synchronize();
  std::fprintf(stderr, "the overflowing kernel finished without a report\n");
  std::_Exit(0);
}

}  // namespace

TEST(CpuStackOverflow, DeepRecursionOnThePlainPathIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_overflowing(0, false), testing::KilledBySignal(SIGSEGV), kOverflowReport);
}

TEST(CpuStackOverflow, DeepRecursionOnAFiberIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_overflowing(1, false), testing::KilledBySignal(SIGSEGV), kOverflowReport);
}

TEST(CpuStackOverflow, AFrameLargerThanTheGuardIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const char* report = "stack overflow.*kernel '[^']*big_frame'.*block.*thread.*DEVCTX_CPU_STACK_BYTES";
  EXPECT_EXIT(run_overflowing(0, true), testing::KilledBySignal(SIGSEGV), report);
  EXPECT_EXIT(run_overflowing(1, true), testing::KilledBySignal(SIGSEGV), report);
}

TEST(CpuStackOverflow, AFrameWithinTheGuardIsReportedWithoutStackClashProbes) {
#if defined(DEVCTX_TEST_UNPROBED_FRAME)
  // 16 KiB stacks: a 40 KiB frame lands below the stack, in its guard (at least 32 KiB; before,
  // one 4 KiB page, so the write went into the stack of the thread below).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        no_core_files();
        setenv("DEVCTX_CPU_STACK_BYTES", "16384", 1);
        setenv("DEVCTX_CPU_THREADS", "1", 1);
        DeviceContext ctx{Api::cpu};
        auto out = ctx.enqueue_create_buffer<std::uint32_t>(64);
        ctx.enqueue_function<guard_frame>({.grid_dim = 1, .block_dim = 64}, out);
        ctx.synchronize();
        std::_Exit(0);
      },
      testing::KilledBySignal(SIGSEGV), "stack overflow.*kernel '[^']*guard_frame'.*DEVCTX_CPU_STACK_BYTES=16384");
#else
  GTEST_SKIP() << "needs GCC's optimize attribute to compile a frame without stack-clash probes";
#endif
}

TEST(CpuStackOverflow, ASegfaultThatIsNotAnOverflowReachesThePreviousHandler) {
  // A fault outside any fiber stack is not ours: the handler installed before devctx sees it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        no_core_files();
        struct sigaction previous{};
        previous.sa_handler = [](int) {
          const char text[] = "the program's own SIGSEGV handler ran\n";
          (void)!write(2, text, sizeof text - 1);
          std::_Exit(3);
        };
        sigaction(SIGSEGV, &previous, nullptr);
        setenv("DEVCTX_CPU_THREADS", "1", 1);
        DeviceContext ctx{Api::cpu};
        auto d = ctx.enqueue_create_buffer<std::uint32_t>(64);
        ctx.enqueue_memset(d, 1u);  // read by the kernel: written first (clean under DEVCTX_CHECK=1)
        ctx.enqueue_function<add_block_sum>({.grid_dim = 1, .block_dim = 64}, d, d);
        ctx.synchronize();
        static volatile std::uintptr_t wild = 16;  // not a constant: a real store that faults
        *reinterpret_cast<volatile int*>(wild) = 1;
      },
      testing::ExitedWithCode(3), "own SIGSEGV handler ran");
}

TEST(CpuStackOverflow, KernelsWithinTheirStackRunNormally) {
  // The default 64 KiB holds about 100 levels of `deep`, barrier or not.
  in_child([&] {
    DeviceContext ctx{Api::cpu};
    auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx, 256);
    for (unsigned with_barrier : {0u, 1u}) {
      ctx.enqueue_function<recurse>({.grid_dim = 4, .block_dim = 64}, out, 60u, with_barrier);
      const auto got = download(ctx, out);
      EXPECT_TRUE(devctx_test::all_equal(std::vector<std::uint32_t>(256, got[0]), got));
    }
  });
}

// ================================================================================================
// Defect 6: DEVCTX_CPU_THREADS is validated and capped; a worker that cannot start stops and
// joins the ones already started and throws devctx::Error.
// ================================================================================================

TEST(CpuThreadsEnv, BadValuesAreRefusedWithTheSettingNamed) {
  for (const char* value : {"-1", "0", "abc", "4x", "18446744073709551615", "100000"}) {
    SCOPED_TRACE(value);
    in_child([&] {
      setenv("DEVCTX_CPU_THREADS", value, 1);
      const std::size_t before = thread_count();
      const auto e = error_of([] { DeviceContext ctx{Api::cpu}; });
      ASSERT_TRUE(e);
      EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
      EXPECT_THAT(e->what(), HasSubstr("DEVCTX_CPU_THREADS"));
      EXPECT_THAT(e->what(), HasSubstr(value));
      EXPECT_EQ(thread_count(), before);
    });
  }
}

TEST(CpuThreadsEnv, AWorkerThatCannotStartLeavesNoThreadsBehind) {
  DEVCTX_SKIP_UNDER_SANITIZER_SHADOW();
  in_child([&] {
    auto rng = devctx_test::test_rng();
    const std::size_t before = thread_count();
    setenv("DEVCTX_CPU_THREADS", "200", 1);  // 200 thread stacks of 8 MiB do not fit in 256 MiB
    limit_address_space(256 * kMiB);
    const auto e = error_of([] { DeviceContext ctx{Api::cpu}; });
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr("worker thread"));
    EXPECT_THAT(e->what(), HasSubstr("DEVCTX_CPU_THREADS"));
    EXPECT_EQ(thread_count(), before) << "started workers were left running";
    setenv("DEVCTX_CPU_THREADS", "2", 1);
    DeviceContext ctx{Api::cpu};
    round_trip_4k(ctx, rng);
  });
}
