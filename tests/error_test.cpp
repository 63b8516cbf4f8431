// SPDX-License-Identifier: Apache-2.0
// tests/error_test.cpp - errors found at the call, run on every backend where they apply:
// the Error type, launches that do not fit the device, shared memory over the limit, and
// allocations that cannot be satisfied (absurd sizes and sizes whose byte count wraps around),
// each refused before anything is enqueued, the context usable afterwards.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <climits>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using devctx::Api;
using devctx::Dim3;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::poisoned_buffer;
using testing::HasSubstr;

DEVCTX_KERNEL void mark_block(devctx::span<unsigned> out) {
  const Dim3 b = devctx::block_idx(), g = devctx::grid_dim();
  out[b.x + std::uint64_t(g.x) * (b.y + std::uint64_t(g.y) * b.z)] = 1;
}

template <class T>
DEVCTX_KERNEL void scale_by(devctx::span<T> data, T factor) {
  const auto i = devctx::global_idx().x;
  if (i < data.size()) data[i] *= factor;
}

/// Static shared memory over every device's limit (on the CPU; nvcc would reject it at
/// compile time, so the device pass declares a small array).
DEVCTX_KERNEL void too_much_static_shared(devctx::span<unsigned> out) {
#if defined(__CUDA_ARCH__)
  DEVCTX_SHARED(unsigned, big, 32);
#else
  DEVCTX_SHARED(unsigned, big, 64 * 1024);  // 256 KiB
#endif
  big[devctx::thread_idx().x] = devctx::thread_idx().x;
  devctx::barrier();
  out[devctx::global_idx().x] = big[0];
}

/// 32 KiB of static shared memory: fine alone, too much with a large dynamic part.
DEVCTX_KERNEL void static_32k_shared(devctx::span<unsigned> out) {
  DEVCTX_SHARED(unsigned, s, 8 * 1024);
  const devctx::span<unsigned> dyn = devctx::dynamic_shared<unsigned>();
  s[devctx::thread_idx().x] = 1;
  if (dyn.size() > 0 && devctx::thread_idx().x == 0) dyn[0] = 2;  // one writer: no race
  devctx::barrier();
  out[devctx::global_idx().x] = s[0] + (dyn.size() > 0 ? dyn[0] : 0u);
}

namespace {

std::string dims(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

}  // namespace

// ---- Error and Errc ------------------------------------------------------------------------------

TEST(ErrorType, IsARuntimeErrorWithACodeAndNamedCodes) {
  static_assert(std::is_base_of_v<std::runtime_error, devctx::Error>);
  const devctx::Error e(Errc::size_mismatch, "message");
  EXPECT_EQ(e.code(), Errc::size_mismatch);
  EXPECT_STREQ(e.what(), "message");
  const std::pair<Errc, const char*> names[] = {
      {Errc::invalid_argument, "invalid_argument"}, {Errc::size_mismatch, "size_mismatch"},
      {Errc::invalid_launch, "invalid_launch"},     {Errc::invalid_handle, "invalid_handle"},
      {Errc::wrong_device, "wrong_device"},         {Errc::not_available, "not_available"},
      {Errc::out_of_memory, "out_of_memory"},       {Errc::kernel_failed, "kernel_failed"},
      {Errc::backend_error, "backend_error"},       {Errc::context_lost, "context_lost"},
      {Errc::check_failed, "check_failed"},         {Errc::compile_failed, "compile_failed"}};
  for (const auto& [code, name] : names) EXPECT_STREQ(devctx::to_string(code), name);
}

// ---- launches that do not fit ------------------------------------------------------------------------

class LaunchErrors : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(LaunchErrors);

TEST_P(LaunchErrors, BadDimensionsThrowNameTheKernelValueAndLimitAndEnqueueNothing) {
  const devctx::DeviceInfo& info = ctx().info();
  struct Case {
    const char* what;
    devctx::LaunchConfig config;
    std::vector<std::string> mentions;
  };
  const Dim3 mb = info.max_block_dim, mg = info.max_grid_dim;
  std::vector<Case> cases = {
      {"zero grid x", {.grid_dim = {0, 1, 1}, .block_dim = 32}, {"grid_dim", "(0, 1, 1)", "zero", "at least 1"}},
      {"zero grid z", {.grid_dim = {4, 1, 0}, .block_dim = 32}, {"grid_dim", "(4, 1, 0)", "zero"}},
      {"zero block y", {.grid_dim = 1, .block_dim = {32, 0, 1}}, {"block_dim", "(32, 0, 1)", "zero"}},
      {"block x over the limit",
       {.grid_dim = 1, .block_dim = {mb.x + 1, 1, 1}},
       {"block_dim", dims({mb.x + 1, 1, 1}), dims(mb)}},
      {"block y over the limit",
       {.grid_dim = 1, .block_dim = {1, mb.y + 1, 1}},
       {"block_dim", dims({1, mb.y + 1, 1}), dims(mb)}},
      {"block z over the limit",
       {.grid_dim = 1, .block_dim = {1, 1, mb.z + 1}},
       {"block_dim", dims({1, 1, mb.z + 1}), dims(mb)}},
      {"too many threads",
       {.grid_dim = 1, .block_dim = {32, 32, 2}},
       {"block_dim", "(32, 32, 2)", "2048", std::to_string(info.max_threads_per_block)}},
      {"too many threads (1025 in x*y)",
       {.grid_dim = 1, .block_dim = {25, 41, 1}},
       {"1025", std::to_string(info.max_threads_per_block)}},
      {"grid y over the limit",
       {.grid_dim = {1, mg.y + 1, 1}, .block_dim = 32},
       {"grid_dim", dims({1, mg.y + 1, 1}), dims(mg)}},
      {"grid z over the limit",
       {.grid_dim = {1, 1, mg.z + 1}, .block_dim = 32},
       {"grid_dim", dims({1, 1, mg.z + 1}), dims(mg)}},
      {"shared_bytes over the limit",
       {.grid_dim = 1, .block_dim = 32, .shared_bytes = info.max_shared_bytes_per_block + 1},
       {"shared_bytes", std::to_string(info.max_shared_bytes_per_block + 1),
        std::to_string(info.max_shared_bytes_per_block)}},
  };
  if (mg.x < UINT_MAX)
    cases.push_back({"grid x over the limit",
                     {.grid_dim = {mg.x + 1, 1, 1}, .block_dim = 32},
                     {"grid_dim", dims({mg.x + 1, 1, 1}), dims(mg)}});
  auto out = poisoned_buffer<unsigned>(ctx(), 64);
  const std::string device = std::string(devctx::to_string(api())) + ":0";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const auto e = error_of([&] { ctx().enqueue_function<write_marker>(c.config, out, 7u); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_launch) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("enqueue_function<write_marker>"));
    EXPECT_THAT(e->what(), HasSubstr(device)) << "the message names the device";
    for (const auto& m : c.mentions) EXPECT_THAT(e->what(), HasSubstr(m));
  }
  // Nothing ran: the output still holds its poison; and the context works.
  ctx().synchronize();
  EXPECT_TRUE(
      devctx_test::all_equal(std::vector<unsigned>(64, devctx_test::poison_value<unsigned>()), download(ctx(), out)));
  ctx().enqueue_function<write_marker>(cover(64, 32), out, 5u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(64, 5u), download(ctx(), out)));
}

TEST_P(LaunchErrors, LimitsThemselvesAreAccepted) {
  const devctx::DeviceInfo& info = ctx().info();
  auto out = poisoned_buffer<unsigned>(ctx(), info.max_threads_per_block);
  ctx().enqueue_function<write_marker>({.grid_dim = 1, .block_dim = info.max_threads_per_block}, out, 3u);
  ctx().enqueue_function<write_marker>({.grid_dim = {1, 1, 1}, .block_dim = {1, 1, info.max_block_dim.z}}, out, 3u);
  // One block: blocks of a grid in y or z would all write out[0..31] (a data race, TSan).
  ctx().enqueue_function<write_marker>({.grid_dim = 1, .block_dim = 32, .shared_bytes = info.max_shared_bytes_per_block},
                                       out, 3u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(out.size(), 3u), download(ctx(), out)));
  // The largest grid in z and y (one thread a block): every block runs.
  for (const Dim3 grid : {Dim3{1, 1, info.max_grid_dim.z}, Dim3{1, info.max_grid_dim.y, 1}}) {
    auto all = poisoned_buffer<unsigned>(ctx(), grid.volume());
    ctx().enqueue_function<mark_block>({.grid_dim = grid, .block_dim = 1}, all);
    EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(all.size(), 1u), download(ctx(), all)));
  }
}

TEST_P(LaunchErrors, TemplateKernelsAreNamedWithTheirArguments) {
  auto data = ctx().enqueue_create_buffer<int>(4);
  const auto e = error_of([&] { ctx().enqueue_function<scale_by<int>>({.grid_dim = 0, .block_dim = 4}, data, 2); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_launch);
  EXPECT_THAT(e->what(), HasSubstr("scale_by<int>"));
  // And it runs when launched properly.
  ctx().enqueue_memset(data, 3);
  ctx().enqueue_function<scale_by<int>>({.grid_dim = 1, .block_dim = 4}, data, 2);
  EXPECT_TRUE(devctx_test::all_equal({6, 6, 6, 6}, download(ctx(), data)));
}

TEST_P(LaunchErrors, LaunchErrorsOnStreamsToo) {
  auto s = ctx().create_stream();
  auto out = poisoned_buffer<unsigned>(s, 8);
  const auto e = error_of([&] { s.enqueue_function<write_marker>({.grid_dim = 1, .block_dim = 0}, out, 1u); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_launch);
  s.enqueue_function<write_marker>({.grid_dim = 1, .block_dim = 8}, out, 1u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(8, 1u), download(s, out)));
}

// ---- shared memory over the limit -------------------------------------------------------------------

class SharedMemoryErrors : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(SharedMemoryErrors);

TEST_P(SharedMemoryErrors, StaticPlusDynamicOverTheLimit) {
  // Either backend may refuse at enqueue (it knows the kernel's static size) or report at the
  // next synchronize (the CPU learns it when DEVCTX_SHARED runs); both name shared memory.
  const std::size_t limit = ctx().info().max_shared_bytes_per_block;
  ASSERT_GT(limit, 16u * 1024u);
  auto out = poisoned_buffer<unsigned>(ctx(), 64);
  ctx().enqueue_function<static_32k_shared>({.grid_dim = 2, .block_dim = 32}, out);  // 32 KiB alone: fine
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(64, 1u), download(ctx(), out)));
  const std::size_t dynamic = limit - 16 * 1024;  // within the limit by itself
  const auto e = error_of([&] {
    ctx().enqueue_function<static_32k_shared>({.grid_dim = 2, .block_dim = 32, .shared_bytes = dynamic}, out);
    ctx().synchronize();
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_launch) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("shared"));
  EXPECT_THAT(e->what(), HasSubstr(std::to_string(limit))) << "the message names the limit";
  // The context still works.
  ctx().enqueue_function<static_32k_shared>({.grid_dim = 2, .block_dim = 32, .shared_bytes = 64}, out);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(64, 3u), download(ctx(), out)));
}

TEST_P(SharedMemoryErrors, StaticSharedAloneOverTheLimit) {
  if (api() != Api::cpu) GTEST_SKIP() << "nvcc rejects such a kernel at compile time";
  auto out = poisoned_buffer<unsigned>(ctx(), 32);
  const auto e = error_of([&] {
    ctx().enqueue_function<too_much_static_shared>({.grid_dim = 1, .block_dim = 32}, out);
    ctx().synchronize();
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_launch) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("DEVCTX_SHARED"));
  EXPECT_THAT(e->what(), HasSubstr("too_much_static_shared"));
  EXPECT_THAT(e->what(), HasSubstr(std::to_string(ctx().info().max_shared_bytes_per_block)));
  ctx().enqueue_function<write_marker>(cover(32), out, 4u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(32, 4u), download(ctx(), out)));
}

// ---- sizes: out of memory, and byte counts that would wrap around ----------------------------------

class MemoryErrors : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(MemoryErrors);

TEST_P(MemoryErrors, AbsurdAllocationsThrowOutOfMemoryNamingTheSize) {
  const std::size_t huge = std::size_t{1} << 60;  // 1 EiB
  const auto e = error_of([&] { (void)ctx().enqueue_create_buffer<char>(huge); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
  EXPECT_THAT(e->what(), HasSubstr(std::to_string(huge)));
  EXPECT_THAT(e->what(), HasSubstr("enqueue_create_buffer"));
  const auto h = error_of([&] { (void)ctx().enqueue_create_host_buffer<std::uint64_t>(huge / 8); });
  ASSERT_TRUE(h);
  EXPECT_EQ(h->code(), Errc::out_of_memory) << h->what();
  EXPECT_THAT(h->what(), HasSubstr(std::to_string(huge)));
  // Element count times element size overflowing std::size_t.
  const std::size_t count = SIZE_MAX / 4;
  const auto o = error_of([&] { (void)ctx().enqueue_create_buffer<double>(count); });
  ASSERT_TRUE(o);
  EXPECT_EQ(o->code(), Errc::out_of_memory) << o->what();
  EXPECT_THAT(o->what(), HasSubstr(std::to_string(count)));
  // Like every devctx::Error, it names the operation and the device.
  EXPECT_THAT(o->what(), HasSubstr("enqueue_create_buffer"));
  EXPECT_THAT(o->what(), HasSubstr(std::string(devctx::to_string(api())) + ":0"));
  // The context still works.
  auto ok = ctx().enqueue_create_buffer<unsigned>(16);
  ctx().enqueue_function<write_marker>(cover(16), ok, 9u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(16, 9u), download(ctx(), ok)));
}

TEST_P(MemoryErrors, ByteCountsThatWrapAroundThrowAndEnqueueNothing) {
  // count * sizeof(T), rounded up to a backend's alignment, must never wrap around to a small
  // block behind a buffer whose size() is the whole count: every later check would trust it.
  const std::string device = std::string(devctx::to_string(api())) + ":0";
  const auto refused = [&](auto&& allocate, const char* operation, std::size_t count, std::size_t element_bytes) {
    SCOPED_TRACE(testing::Message() << operation << " of " << count << " elements of " << element_bytes << " bytes");
    const auto e = error_of(allocate);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
    EXPECT_THAT(e->what(), HasSubstr(operation));
    EXPECT_THAT(e->what(), HasSubstr(device));
    EXPECT_THAT(e->what(), HasSubstr(std::to_string(count) + " elements of " + std::to_string(element_bytes) + " bytes"));
  };
  refused([&] { (void)ctx().enqueue_create_buffer<char>(SIZE_MAX); }, "enqueue_create_buffer", SIZE_MAX, 1);
  refused([&] { (void)ctx().enqueue_create_buffer<float>((std::size_t{1} << 62) - 1); }, "enqueue_create_buffer",
          (std::size_t{1} << 62) - 1, 4);
  refused([&] { (void)ctx().enqueue_create_host_buffer<char>(SIZE_MAX - 99); }, "enqueue_create_host_buffer",
          SIZE_MAX - 99, 1);
  auto s = ctx().create_stream();
  refused([&] { (void)s.enqueue_create_buffer<char>(SIZE_MAX - 4095); }, "enqueue_create_buffer", SIZE_MAX - 4095, 1);
  // A negative int count converts to a count just below 2^64; the message says what it likely was.
  const int negative = -1 - int(rng() % 1000);  // a run-time value, as a miscomputed count would be
  for (const bool host : {false, true}) {
    const auto e = error_of([&] {
      if (host)
        (void)ctx().enqueue_create_host_buffer<char>(negative);
      else
        (void)ctx().enqueue_create_buffer<char>(negative);
    });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
    EXPECT_THAT(e->what(), HasSubstr(std::to_string(std::size_t(negative))));
    EXPECT_THAT(e->what(), HasSubstr("negative"));
  }
  // Nothing was enqueued: both streams synchronize cleanly, and the context still works.
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_NO_THROW(ctx().synchronize());
  auto ok = poisoned_buffer<unsigned>(ctx(), 16);
  ctx().enqueue_function<write_marker>(cover(16), ok, 9u);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<unsigned>(16, 9u), download(ctx(), ok)));
}

TEST_P(MemoryErrors, CopyWhoseByteCountWrapsAroundIsRefusedBeforeTouchingMemory) {
  // A std::span can claim more elements than memory holds: that claim is the misuse here, and
  // neither side may be touched. (2^62 + 1) floats are 2^64 + 4 bytes, which wrap to 4 bytes.
  std::vector<float> dst(4, 1.0f);
  const std::vector<float> src(4, 2.0f);
  const std::size_t claimed = (std::size_t{1} << 62) + 1;
  const auto e = error_of(
      [&] { ctx().enqueue_copy(std::span<float>(dst.data(), claimed), std::span<const float>(src.data(), claimed)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::size_mismatch) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("enqueue_copy"));
  EXPECT_THAT(e->what(), HasSubstr(std::to_string(claimed)));
  EXPECT_EQ(dst, std::vector<float>(4, 1.0f)) << "the destination was written";
  EXPECT_NO_THROW(ctx().synchronize());
}
