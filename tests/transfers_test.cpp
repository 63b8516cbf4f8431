// SPDX-License-Identifier: Apache-2.0
// tests/transfers_test.cpp - copies between ordinary host memory and buffers in every size class
// of the CUDA backend's staged path (issue 13: below and above the threshold, whole and partial
// chunks, more than the staging memory holds, unaligned starts, slices), in order with kernels,
// from four host threads on four streams at once, and with the host side freed as soon as the
// copy returns; and the registration of host memory (DeviceContext::register_host_memory).
// Written once, run on every backend (devctx_transfers_tests_cpu / _cuda); ctest also runs the
// CUDA program with small staging settings and with no copy threads (tests/CMakeLists.txt), so
// that chunks and slots are reused thousands of times. Each copy is checked against an
// independent path: uploads are read back through a HostBuffer, downloads are fed from one.
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

namespace {

using namespace devctx_test;
using Byte = unsigned char;

/// A setting of the staged path as this run configured it (the variables the CUDA backend
/// reads), else its default: the sizes below sit around the real limits.
std::size_t setting(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::size_t(std::strtoull(text, nullptr, 10)) : fallback;
}

struct Limits {
  std::size_t threshold = setting("DEVCTX_CUDA_STAGING_THRESHOLD", std::size_t{8} << 20);
  std::size_t chunk = setting("DEVCTX_CUDA_STAGING_CHUNK_BYTES", std::size_t{8} << 20);
  std::size_t staging = setting("DEVCTX_CUDA_STAGING_BYTES", std::size_t{64} << 20);
};

/// Byte counts of every size class: tiny, around the threshold, one chunk, a chunk and a bit,
/// several chunks and a remainder, more than all the staging memory (slots reused).
std::vector<std::size_t> size_classes() {
  const Limits l;
  std::set<std::size_t> sizes = {1, 4093};
  for (const std::size_t s : {l.threshold - 1, l.threshold, l.threshold + 1, l.chunk, l.chunk + 3, 3 * l.chunk + 12345,
                              l.staging + l.chunk / 2 + 7})
    if (s > 0 && s < (std::size_t{1} << 30)) sizes.insert(s);
  return {sizes.begin(), sizes.end()};
}

/// Fresh random bytes, 8 at a time.
std::vector<Byte> random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::vector<Byte> v(n);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = Byte(rng());
  return v;
}

std::vector<std::uint32_t> random_words(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = std::uint32_t(rng());
  return v;
}

/// `bytes` of device memory at `d` read back through a HostBuffer (a direct copy, never staged).
template <class T, class B>
std::vector<T> read_back(devctx::StreamRef s, const B& d) {
  auto h = s.enqueue_create_host_buffer<T>(d.size());
  s.synchronize();
  std::fill(h.begin(), h.end(), poison_value<T>());
  s.enqueue_copy(h, d);
  s.synchronize();
  return std::vector<T>(h.begin(), h.end());
}

/// A DeviceBuffer holding `values`, written through a HostBuffer (a direct copy, never staged).
template <class T>
devctx::DeviceBuffer<T> write_through_pinned(devctx::StreamRef s, const std::vector<T>& values) {
  auto h = s.enqueue_create_host_buffer<T>(values.size());
  auto d = s.enqueue_create_buffer<T>(values.size());
  s.synchronize();
  std::copy(values.begin(), values.end(), h.begin());
  s.enqueue_copy(d, h);
  s.synchronize();
  return d;
}

class Transfers : public BackendTest {};

TEST_P(Transfers, UploadsEverySizeClassAlignedAndNot) {
  for (const std::size_t n : size_classes()) {
    for (const std::size_t shift : {std::size_t{0}, std::size_t{1}}) {
      SCOPED_TRACE("bytes " + std::to_string(n) + ", host start offset " + std::to_string(shift));
      const auto host = random_bytes(rng, n + shift);
      auto d = poisoned_buffer<Byte>(ctx(), n);
      ctx().enqueue_copy(d, std::span<const Byte>(host).subspan(shift, n));
      const auto got = read_back<Byte>(ctx(), d);
      ASSERT_TRUE(all_equal(std::vector<Byte>(host.begin() + std::ptrdiff_t(shift), host.end()), got));
    }
  }
}

TEST_P(Transfers, DownloadsEverySizeClassAlignedAndNot) {
  for (const std::size_t n : size_classes()) {
    for (const std::size_t shift : {std::size_t{0}, std::size_t{1}}) {
      SCOPED_TRACE("bytes " + std::to_string(n) + ", host start offset " + std::to_string(shift));
      const auto expected = random_bytes(rng, n);
      const auto d = write_through_pinned(ctx(), expected);
      std::vector<Byte> host(n + shift + 1, poison_value<Byte>());
      ctx().enqueue_copy(std::span<Byte>(host).subspan(shift, n), d);
      ASSERT_TRUE(all_equal(expected, std::vector<Byte>(host.begin() + std::ptrdiff_t(shift), host.end() - 1)));
      // Nothing written outside the span.
      if (shift != 0) {
        EXPECT_EQ(host.front(), poison_value<Byte>());
      }
      EXPECT_EQ(host.back(), poison_value<Byte>());
    }
  }
}

TEST_P(Transfers, SlicesAtOddOffsetsBothWays) {
  const Limits l;
  const std::size_t count = (3 * l.chunk + 4 * 1000 + 4) / 4, offset = 3, total = count + 7;
  // Upload into a slice: the elements around it keep their poison.
  const auto values = random_words(rng, count + 1);
  auto d = poisoned_buffer<std::uint32_t>(ctx(), total);
  ctx().enqueue_copy(d.slice(offset, count), std::span<const std::uint32_t>(values).subspan(1));
  const auto got = read_back<std::uint32_t>(ctx(), d);
  for (std::size_t i = 0; i < total; ++i) {
    const std::uint32_t expected = i >= offset && i < offset + count ? values[i - offset + 1]
                                                                     : poison_value<std::uint32_t>();
    ASSERT_EQ(got[i], expected) << "element " << i;
  }
  // Download from a slice into the middle of a vector.
  const auto source = random_words(rng, total);
  const auto d2 = write_through_pinned(ctx(), source);
  std::vector<std::uint32_t> host(count + 2, poison_value<std::uint32_t>());
  ctx().enqueue_copy(std::span<std::uint32_t>(host).subspan(1, count), d2.slice(offset, count));
  EXPECT_EQ(host.front(), poison_value<std::uint32_t>());
  EXPECT_EQ(host.back(), poison_value<std::uint32_t>());
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(host[i + 1], source[offset + i]) << "element " << i;
}

TEST_P(Transfers, KeepStreamOrderWithKernelsAndOtherCopies) {
  const Limits l;
  const std::size_t n = (2 * l.chunk + l.threshold + 12) / 4;
  const auto first = random_words(rng, n), second = random_words(rng, n);
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(n);
  // Two uploads in a row: the second's chunks land after the first's.
  ctx().enqueue_copy(d, first);
  ctx().enqueue_copy(d, second);
  // A kernel after an upload sees all of it; a download after a kernel sees all it wrote.
  ctx().enqueue_function<add_kernel>(cover(n), d, 7u);
  std::vector<std::uint32_t> out(n, poison_value<std::uint32_t>());
  ctx().enqueue_copy(out, d);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], second[i] + 7u) << "element " << i;
  ctx().enqueue_function<iota_kernel>(cover(n), d, 1000u);
  ctx().enqueue_copy(out, d);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 1000u + std::uint32_t(i)) << "element " << i;
  // A copy from ordinary memory is done when it returns, with everything before it on its
  // stream: another stream may read the data without an event.
  ctx().enqueue_function<add_kernel>(cover(n), d, 1u);
  ctx().enqueue_copy(d, first);
  auto other = ctx().create_stream();
  std::vector<std::uint32_t> seen(n, poison_value<std::uint32_t>());
  other.enqueue_copy(seen, d);
  EXPECT_TRUE(all_equal(first, seen));
}

TEST_P(Transfers, FourStreamsFromFourHostThreads) {
  const Limits l;
  const std::vector<std::size_t> counts = {1000, l.threshold / 4 + 1, (l.chunk + l.threshold) / 4 + 3,
                                           (2 * l.chunk) / 4 + 5, (l.staging / 2) / 4 + 11};
  constexpr int kThreads = 4, kRounds = 6;
  std::vector<devctx::Stream> streams;
  for (int t = 0; t < kThreads; ++t) streams.push_back(ctx().create_stream());
  std::atomic<int> failures{0};
  std::vector<std::string> reports(kThreads);
  std::vector<std::uint64_t> seeds;
  for (int t = 0; t < kThreads; ++t) seeds.push_back(rng());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 local(seeds[std::size_t(t)]);
      try {
        devctx::Stream& s = streams[std::size_t(t)];
        for (int r = 0; r < kRounds; ++r) {
          const std::size_t n = counts[std::size_t(r + t) % counts.size()];
          const auto values = random_words(local, n);
          auto d = s.enqueue_create_buffer<std::uint32_t>(n);
          s.enqueue_copy(d, values);
          s.enqueue_function<add_kernel>(cover(n), d, std::uint32_t(t + 1));
          std::vector<std::uint32_t> out(n, poison_value<std::uint32_t>());
          s.enqueue_copy(out, d);
          for (std::size_t i = 0; i < n; ++i)
            if (out[i] != values[i] + std::uint32_t(t + 1)) {
              reports[std::size_t(t)] = "round " + std::to_string(r) + ", " + std::to_string(n) + " words: element " +
                                        std::to_string(i) + " is wrong";
              ++failures;
              return;
            }
        }
      } catch (const std::exception& e) {
        reports[std::size_t(t)] = e.what();
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(reports[std::size_t(t)].empty()) << "thread " << t << ": " << reports[std::size_t(t)];
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(Transfers, HostMemoryMayBeFreedAsSoonAsTheCopyReturns) {
  const Limits l;
  const std::size_t n = 2 * l.chunk + l.chunk / 3 + 1;
  const auto expected = random_bytes(rng, n);
  auto d = ctx().enqueue_create_buffer<Byte>(n);
  {
    auto source = std::make_unique<std::vector<Byte>>(expected);
    ctx().enqueue_copy(d, *source);
    std::fill(source->begin(), source->end(), Byte(0x11));  // read completely: overwriting is fine
  }  // freed
  // Memory freed just now is likely handed out again: nothing may still read or write it.
  std::vector<Byte> reused(n, Byte(0xEE));
  EXPECT_TRUE(all_equal(expected, read_back<Byte>(ctx(), d)));
  {
    auto target = std::make_unique<std::vector<Byte>>(n, poison_value<Byte>());
    ctx().enqueue_copy(*target, d);
    EXPECT_TRUE(all_equal(expected, *target));
  }  // freed
  std::vector<Byte> after(n, Byte(0x77));
  ctx().synchronize();
  EXPECT_TRUE(all_equal(std::vector<Byte>(n, Byte(0x77)), after));
  EXPECT_TRUE(all_equal(std::vector<Byte>(n, Byte(0xEE)), reused));
}

// ---- registration ------------------------------------------------------------------------------

TEST_P(Transfers, RegisteredMemoryIsCopiedBothWaysWholeAndInPart) {
  const Limits l;
  const std::size_t n = 2 * l.chunk + 4097;
  auto memory = random_bytes(rng, n);
  auto registration = ctx().register_host_memory(memory);
  ASSERT_TRUE(registration);
  EXPECT_EQ(registration.data(), memory.data());
  EXPECT_EQ(registration.size_bytes(), n);
  auto d = poisoned_buffer<Byte>(ctx(), n);
  ctx().enqueue_copy(d, memory);  // inside the registration: direct
  EXPECT_TRUE(all_equal(memory, read_back<Byte>(ctx(), d)));
  const auto fresh = random_bytes(rng, n);
  const auto d2 = write_through_pinned(ctx(), fresh);
  std::fill(memory.begin(), memory.end(), poison_value<Byte>());
  ctx().enqueue_copy(memory, d2);
  EXPECT_TRUE(all_equal(fresh, memory));
  // Half inside the registration, half outside: a second vector registered on half its range.
  std::vector<Byte> partly = random_bytes(rng, n);
  auto half = ctx().register_host_memory(std::span<Byte>(partly).first(n / 2));
  auto d3 = poisoned_buffer<Byte>(ctx(), n);
  ctx().enqueue_copy(d3, partly);
  EXPECT_TRUE(all_equal(partly, read_back<Byte>(ctx(), d3)));
  // Unregistered again: the same copies still work.
  registration.reset();
  EXPECT_FALSE(registration);
  const auto third = random_bytes(rng, n);
  const auto d4 = write_through_pinned(ctx(), third);
  ctx().enqueue_copy(memory, d4);
  EXPECT_TRUE(all_equal(third, memory));
}

TEST_P(Transfers, LargeCopiesThroughSpansOverBufferMemory) {
  // A std::span whose memory is in fact a buffer's (a DeviceBuffer's data: GPU memory on CUDA,
  // which the CPU cannot read) or page-locked (a HostBuffer's data): copied as the buffer would
  // be, whatever the size - the staging engine's copy threads must not be handed GPU memory.
  const std::size_t n = Limits{}.threshold + 4097;
  const auto values = random_bytes(rng, n);
  auto source = write_through_pinned(ctx(), values);
  // Device memory seen as a span, both ways.
  auto d = poisoned_buffer<Byte>(ctx(), n);
  ctx().enqueue_copy(d, std::span<const Byte>(source.data(), n));
  ASSERT_TRUE(all_equal(values, read_back<Byte>(ctx(), d)));
  auto back = poisoned_buffer<Byte>(ctx(), n);
  ctx().synchronize();
  ctx().enqueue_copy(std::span<Byte>(back.data(), n), d);
  ASSERT_TRUE(all_equal(values, read_back<Byte>(ctx(), back)));
  // Page-locked memory seen as a span, both ways, at an odd offset.
  auto pinned = ctx().enqueue_create_host_buffer<Byte>(n + 1);
  ctx().synchronize();
  std::copy(values.begin(), values.end(), pinned.begin() + 1);
  auto up = poisoned_buffer<Byte>(ctx(), n);
  ctx().enqueue_copy(up, std::span<const Byte>(pinned.data() + 1, n));
  std::fill(pinned.begin(), pinned.end(), Byte{0xEE});  // done on return: the source may change
  ASSERT_TRUE(all_equal(values, read_back<Byte>(ctx(), up)));
  ctx().enqueue_copy(std::span<Byte>(pinned.data() + 1, n), up);
  ASSERT_TRUE(all_equal(values, std::vector<Byte>(pinned.begin() + 1, pinned.end())));
  EXPECT_EQ(pinned[0], Byte{0xEE});
}

TEST_P(Transfers, RegistrationRefusesEmptyAndOverlappingRanges) {
  std::vector<float> empty;
  auto e = error_of([&] { (void)ctx().register_host_memory(empty); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), devctx::Errc::invalid_argument);
  EXPECT_THAT(e->what(), testing::HasSubstr("empty"));

  std::vector<float> memory(100000);
  auto whole = ctx().register_host_memory(memory);
  for (const auto& [offset, count] :
       {std::pair<std::size_t, std::size_t>{0, 100000}, {50000, 50000}, {99999, 1}, {10, 20}}) {
    e = error_of([&] { (void)ctx().register_host_memory(std::span<float>(memory).subspan(offset, count)); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), devctx::Errc::invalid_argument);
    EXPECT_THAT(e->what(), testing::HasSubstr("overlaps"));
    EXPECT_THAT(e->what(), testing::HasSubstr("register_host_memory"));
  }
  // Refusals left the first registration as it was; once it is gone, a part can be registered.
  whole = {};
  auto part = ctx().register_host_memory(std::span<float>(memory).subspan(50000, 50000));
  EXPECT_TRUE(part);
}

TEST_P(Transfers, RegistrationsOfSeparatePagesAndMovedHandles) {
  const std::size_t page = 1 << 16;  // a multiple of every page size in use
  std::unique_ptr<Byte, decltype(&std::free)> memory(static_cast<Byte*>(std::aligned_alloc(page, 2 * page)), &std::free);
  ASSERT_NE(memory, nullptr);
  std::span<Byte> both(memory.get(), 2 * page);
  auto first = ctx().register_host_memory(both.first(page));
  auto second = ctx().register_host_memory(both.last(page));
  // Moving a handle moves the registration: the range stays registered once.
  devctx::HostRegistration moved(std::move(first));
  EXPECT_FALSE(first);  // NOLINT(bugprone-use-after-move): moved-from handles are empty
  EXPECT_TRUE(moved);
  EXPECT_EQ(moved.size_bytes(), page);
  auto e = error_of([&] { (void)ctx().register_host_memory(both.first(page)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), devctx::Errc::invalid_argument);
  second = std::move(moved);  // unregisters the second page, takes over the first
  EXPECT_EQ(second.data(), memory.get());
  auto again = ctx().register_host_memory(both.last(page));
  EXPECT_TRUE(again);
  // A copy through both registrations at once (the range spans two of them: staged or direct,
  // the data arrives).
  for (std::size_t i = 0; i < 2 * page; ++i) both[i] = Byte(rng());
  auto d = poisoned_buffer<Byte>(ctx(), 2 * page);
  ctx().enqueue_copy(d, both);
  EXPECT_TRUE(all_equal(std::vector<Byte>(both.begin(), both.end()), read_back<Byte>(ctx(), d)));
}

TEST_P(Transfers, RegistrationOutlivesItsContext) {
  std::vector<std::uint32_t> memory = random_words(rng, 5000);
  devctx::HostRegistration kept;
  {
    devctx::DeviceContext other{api(), 0};
    kept = other.register_host_memory(memory);
  }
  EXPECT_TRUE(kept);
  kept.reset();  // unregisters with the device kept open by the handle
  EXPECT_FALSE(kept);
  devctx::DeviceContext moved_from{api(), 0};
  devctx::DeviceContext taker = std::move(moved_from);
  auto e = error_of([&] { (void)moved_from.register_host_memory(memory); });  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), devctx::Errc::invalid_handle);
}

TEST_P(Transfers, RegistrationOfDeviceOrPageLockedMemory) {
  auto d = ctx().enqueue_create_buffer<float>(4096);
  auto h = ctx().enqueue_create_host_buffer<float>(4096);
  ctx().synchronize();
  if (on_cpu()) {
    // The CPU device's memory is host memory, and registration changes nothing there: accepted.
    auto a = ctx().register_host_memory(std::span<float>(d.data(), d.size()));
    auto b = ctx().register_host_memory(h);
    EXPECT_TRUE(a && b);
    return;
  }
  auto e = error_of([&] { (void)ctx().register_host_memory(std::span<float>(d.data(), d.size())); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), devctx::Errc::invalid_argument);
  EXPECT_THAT(e->what(), testing::HasSubstr("device memory"));
  e = error_of([&] { (void)ctx().register_host_memory(h); });  // a HostBuffer is page-locked already
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), devctx::Errc::invalid_argument);
  EXPECT_THAT(e->what(), testing::HasSubstr("register_host_memory"));
  // The refusals left nothing behind: the context works and the ranges can be used.
  std::vector<float> values(4096, 1.5f);
  ctx().enqueue_copy(d, values);
  ctx().enqueue_copy(h, d);
  ctx().synchronize();
  EXPECT_EQ(h[4095], 1.5f);
}

DEVCTX_INSTANTIATE_BACKEND_TESTS(Transfers);

// ---- the CUDA backend's settings (read when the device opens) ------------------------------------

TEST(TransferSettings, MalformedValuesStopTheDeviceFromOpening) {
  const devctx::Api cuda = devctx::backend("cuda").api;
  const auto& backends = requested_backends();
  if (std::find(backends.begin(), backends.end(), cuda) == backends.end())
    GTEST_SKIP() << "the CUDA backend is not requested";
  if (devctx::DeviceContext::count(cuda) == 0) {
    if (require_gpu()) FAIL() << "DEVCTX_REQUIRE_GPU=1 but there is no CUDA device";
    GTEST_SKIP() << "no CUDA device";
  }
  struct Case {
    const char* name;
    const char* value;
    const char* expected;
  };
  for (const Case& c : {Case{"DEVCTX_CUDA_COPY_THREADS", "lots", "DEVCTX_CUDA_COPY_THREADS"},
                        Case{"DEVCTX_CUDA_COPY_THREADS", "100000", "outside"},
                        Case{"DEVCTX_CUDA_COPY_SPIN_US", "soon", "DEVCTX_CUDA_COPY_SPIN_US"},
                        Case{"DEVCTX_CUDA_COPY_SPIN_US", "1000000", "outside"},
                        Case{"DEVCTX_CUDA_STAGING_BYTES", "1024", "DEVCTX_CUDA_STAGING_BYTES"},
                        Case{"DEVCTX_CUDA_STAGING_CHUNK_BYTES", "1073741824", "fewer than two chunks"},
                        Case{"DEVCTX_CUDA_STAGING", "maybe", "not a flag"},
                        Case{"DEVCTX_CUDA_STAGING_THRESHOLD", "-1", "DEVCTX_CUDA_STAGING_THRESHOLD"}}) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    const ScopedEnv env(c.name, c.value);
    auto e = error_of([&] { devctx::DeviceContext bad{cuda, 0}; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), devctx::Errc::invalid_argument);
    EXPECT_THAT(e->what(), testing::HasSubstr(c.expected));
  }
  // With the variables back, the device opens.
  devctx::DeviceContext good{cuda, 0};
  EXPECT_EQ(good.api(), cuda);
}

}  // namespace
