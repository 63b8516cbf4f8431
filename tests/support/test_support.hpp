// SPDX-License-Identifier: Apache-2.0
// tests/support/test_support.hpp - what every devctx test shares: the backend parameter, the
// per-run random seed, poisoning and host/device round trips.
//
// Each behavioural test is written once as TEST_P(BackendTest, ...) (or a fixture derived from
// BackendTest) and runs once per backend named in DEVCTX_TEST_BACKENDS (comma list of cpu,
// cuda; default: every backend that was built). A backend with no device present skips its
// tests (GTEST_SKIP), unless DEVCTX_REQUIRE_GPU is on (1, true, yes or on: the library's flag rule), which turns a
// missing CUDA device into a failure.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <devctx/devctx.hpp>

#include "test_env.hpp"  // require_gpu(), print_errors()

namespace devctx {
/// gtest prints the backend parameter by name ("cpu") rather than as raw bytes.
inline void PrintTo(Api api, std::ostream* os) { *os << to_string(api); }
}  // namespace devctx

namespace devctx_test {

/// True in a ThreadSanitizer build. There every fiber switch also switches TSan's shadow stack,
/// so the few tests that switch fibers millions of times (many blocks of many threads meeting at
/// barriers) run fewer blocks under TSan: the same code paths, in a tenth of the time (CI's TSan
/// run took 150 s for one such test). Every other build runs them at full size.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kUnderTsan = true;
#else
inline constexpr bool kUnderTsan = false;
#endif
#else
inline constexpr bool kUnderTsan = false;
#endif

/// The GPU backend: the first one whose device memory is apart from the host's (CUDA), as tests
/// that need "a GPU" or "the other backend than the CPU" name it (never by an Api value).
inline devctx::Api gpu_api() {
  for (const devctx::Backend* backend : devctx::backends())
    if (backend->has_device_memory) return backend->api;
  return devctx::backend("cuda").api;  // unreachable while devctx knows a GPU backend
}
/// The backends this run covers, from DEVCTX_TEST_BACKENDS.
const std::vector<devctx::Api>& requested_backends();
/// True when devctx was built with the CUDA backend.
constexpr bool cuda_built() {
#if defined(DEVCTX_TESTS_CUDA_BUILT)
  return true;
#else
  return false;
#endif
}
/// The run's seed (DEVCTX_TEST_SEED, else std::random_device); printed at start and on failure.
std::uint64_t run_seed();
/// A generator for the current test: the run's seed mixed with the test's full name.
std::mt19937_64 test_rng();

std::string backend_name(const testing::TestParamInfo<devctx::Api>& info);

/// Sets (or unsets, with nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// The fixture of every behavioural test: a fresh DeviceContext on the parameter's backend.
class BackendTest : public testing::TestWithParam<devctx::Api> {
 protected:
  void SetUp() override;
  void TearDown() override;

  [[nodiscard]] devctx::Api api() const { return GetParam(); }
  [[nodiscard]] bool on_cpu() const { return GetParam() == devctx::Api::cpu; }
  devctx::DeviceContext& ctx() { return *ctx_; }

  std::mt19937_64 rng;

 private:
  std::optional<devctx::DeviceContext> ctx_;
};

// ---- values -------------------------------------------------------------------------------------

template <class T>
std::vector<T> random_vector(std::mt19937_64& rng, std::size_t n, T lo, T hi) {
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> d(lo, hi);
    for (auto& x : v) x = d(rng);
  } else {
    std::uniform_int_distribution<long long> d(static_cast<long long>(lo), static_cast<long long>(hi));
    for (auto& x : v) x = static_cast<T>(d(rng));
  }
  return v;
}

/// Small integers stored as floating point: sums of them are exact in any order.
template <class T>
std::vector<T> random_small_ints(std::mt19937_64& rng, std::size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

/// The value a kernel output is filled with before the kernel runs: NaN for floating point,
/// 0xDEADBEEF-style patterns for integers, so that an element the kernel missed is visible.
template <class T>
T poison_value() {
  if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::quiet_NaN();
  else if constexpr (sizeof(T) == 1)
    return static_cast<T>(0xA5);
  else if constexpr (sizeof(T) == 2)
    return static_cast<T>(0xBEEF);
  else if constexpr (sizeof(T) == 4)
    return static_cast<T>(0xDEADBEEFu);
  else
    return static_cast<T>(0xDEADBEEFDEADBEEFull);
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// A 1-D launch covering n threads with blocks of `block`.
inline devctx::LaunchConfig cover(std::size_t n, unsigned block = 256, std::size_t shared_bytes = 0) {
  return {.grid_dim = unsigned(std::max<std::size_t>(1, (n + block - 1) / block)),
          .block_dim = block,
          .shared_bytes = shared_bytes};
}

// ---- host/device round trips -------------------------------------------------------------------

/// A DeviceBuffer holding `values` (enqueued on `s`; ordinary host memory is read before return).
template <class T>
devctx::DeviceBuffer<T> upload(devctx::StreamRef s, const std::vector<T>& values) {
  auto buf = s.enqueue_create_buffer<T>(values.size());
  s.enqueue_copy(buf, std::span<const T>(values));
  return buf;
}

/// A DeviceBuffer of n elements, every one set to the poison value.
template <class T>
devctx::DeviceBuffer<T> poisoned_buffer(devctx::StreamRef s, std::size_t n) {
  auto buf = s.enqueue_create_buffer<T>(n);
  s.enqueue_memset(buf, poison_value<T>());
  return buf;
}

/// The contents of a buffer or slice, in stream order on `s` (returns once they are copied).
template <class B>
auto download(devctx::StreamRef s, const B& buf) {
  using T = std::remove_const_t<std::remove_pointer_t<decltype(buf.data())>>;
  std::vector<T> out(buf.size());
  s.enqueue_copy(std::span<T>(out), buf);
  return out;
}

/// Compares element by element; reports at most a few mismatches, with their index.
template <class T>
testing::AssertionResult all_equal(const std::vector<T>& expected, const std::vector<T>& actual) {
  if (expected.size() != actual.size())
    return testing::AssertionFailure() << "size " << actual.size() << ", expected " << expected.size();
  std::size_t bad = 0;
  auto result = testing::AssertionFailure();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const bool ok = expected[i] == actual[i];
    if (!ok) {
      if (bad < 8) {
        if constexpr (std::is_arithmetic_v<T>)
          result << "\n  [" << i << "] = " << +actual[i] << ", expected " << +expected[i];
        else
          result << "\n  [" << i << "] differs";
      }
      ++bad;
    }
  }
  if (bad == 0) return testing::AssertionSuccess();
  return result << "\n  " << bad << " of " << expected.size() << " elements differ";
}

/// As all_equal, within a relative tolerance (for floating-point sums in different orders).
template <class T>
testing::AssertionResult all_near(const std::vector<T>& expected, const std::vector<T>& actual, double rel) {
  if (expected.size() != actual.size())
    return testing::AssertionFailure() << "size " << actual.size() << ", expected " << expected.size();
  std::size_t bad = 0;
  auto result = testing::AssertionFailure();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = double(expected[i]), a = double(actual[i]);
    if (!(std::abs(e - a) <= rel * std::max(1.0, std::abs(e)))) {
      if (bad < 8) result << "\n  [" << i << "] = " << a << ", expected " << e;
      ++bad;
    }
  }
  if (bad == 0) return testing::AssertionSuccess();
  return result << "\n  " << bad << " of " << expected.size() << " elements differ";
}

// print_errors() (test_env.hpp): when DEVCTX_TEST_PRINT_ERRORS is on, every error a test
// provokes is printed (docs/errors.md quotes them).
/// Runs `f` and returns the devctx::Error it throws; fails the test if it throws nothing.
template <class F>
std::optional<devctx::Error> error_of(F&& f) {
  try {
    f();
  } catch (const devctx::Error& e) {
    if (print_errors()) std::printf("[ ERROR    ] %s: %s\n", devctx::to_string(e.code()), e.what());
    return e;
  }
  ADD_FAILURE() << "expected a devctx::Error, nothing was thrown";
  return std::nullopt;
}

}  // namespace devctx_test

/// Instantiates a BackendTest-derived fixture for every requested backend.
#define DEVCTX_INSTANTIATE_BACKEND_TESTS(Fixture)                                                     \
  INSTANTIATE_TEST_SUITE_P(Backends, Fixture, testing::ValuesIn(::devctx_test::requested_backends()), \
                           ::devctx_test::backend_name)
