// SPDX-License-Identifier: Apache-2.0
// tests/support/test_main.cpp - the test program's main: backend selection, the run's seed,
// and the exit code that tells ctest "skipped" (77) when no requested backend has a device.
#include "test_support.hpp"

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace devctx_test {
namespace {

/// DEVCTX_TEST_BACKENDS ("cpu,cuda": backends' names), else every backend this devctx was built with.
std::vector<devctx::Api> parse_backends() {
  const char* text = std::getenv("DEVCTX_TEST_BACKENDS");
  std::vector<devctx::Api> out;
  if (text == nullptr || *text == '\0') {
    for (const devctx::Backend* backend : devctx::backends())
      if (backend->built) out.push_back(backend->api);
    return out;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto all = devctx::backends();
    const auto named = std::ranges::find(all, std::string_view(item), &devctx::Backend::name);
    if (named == all.end()) {
      std::string names;
      for (const devctx::Backend* backend : all) names += (names.empty() ? "" : ", ") + std::string(backend->name);
      std::fprintf(stderr, "DEVCTX_TEST_BACKENDS='%s': unknown backend '%s' (use %s)\n", text, item.c_str(), names.c_str());
      std::exit(2);
    }
    out.push_back((*named)->api);
  }
  return out;
}

std::uint64_t make_seed() {
  if (const char* text = std::getenv("DEVCTX_TEST_SEED"); text != nullptr && *text != '\0')
    return std::strtoull(text, nullptr, 0);
  std::random_device rd;
  return (std::uint64_t(rd()) << 32) ^ rd();
}

/// Prints the seed with the first failure of each test, so any failure can be replayed.
class SeedPrinter : public testing::EmptyTestEventListener {
  void OnTestStart(const testing::TestInfo&) override { printed_ = false; }
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed() && !printed_) {
      printed_ = true;
      std::printf("[  SEED    ] reproduce with DEVCTX_TEST_SEED=%llu\n", static_cast<unsigned long long>(run_seed()));
    }
  }
  bool printed_ = false;
};

}  // namespace

const std::vector<devctx::Api>& requested_backends() {
  static const std::vector<devctx::Api> backends = parse_backends();
  return backends;
}

std::uint64_t run_seed() {
  static const std::uint64_t seed = make_seed();
  return seed;
}

std::mt19937_64 test_rng() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::uint64_t h = run_seed();
  if (info != nullptr) {
    const std::string name = std::string(info->test_suite_name()) + "." + info->name();
    h ^= std::hash<std::string>{}(name) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return std::mt19937_64(h);
}

std::string backend_name(const testing::TestParamInfo<devctx::Api>& info) { return devctx::to_string(info.param); }

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value != nullptr)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (old_)
    setenv(name_.c_str(), old_->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

void BackendTest::SetUp() {
  rng = test_rng();
  if (devctx::DeviceContext::count(api()) == 0) {
    const devctx::Backend& backend = devctx::backend(api());
    if (backend.has_device_memory && require_gpu())
      FAIL() << "DEVCTX_REQUIRE_GPU is on but there is no " << backend.name << " device: " << backend.absent_reason();
    GTEST_SKIP() << "no " << devctx::to_string(api()) << " device present";
  }
  ctx_.emplace(api(), 0);
}

void BackendTest::TearDown() {
  // Every test leaves its context clean; a failure still queued is a test bug worth seeing.
  if (ctx_ && *ctx_) {
    try {
      ctx_->synchronize();
    } catch (const devctx::Error& e) {
      ADD_FAILURE() << "unreported failure left on the context: " << e.what();
    }
  }
  ctx_.reset();
}

}  // namespace devctx_test

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  using devctx_test::requested_backends;
  std::printf("devctx tests: backends");
  bool any_present = false;
  for (const auto api : requested_backends()) {
    const int n = devctx::DeviceContext::count(api);
    any_present = any_present || n > 0;
    std::printf(" %s (%d device%s)", devctx::to_string(api), n, n == 1 ? "" : "s");
  }
  std::printf("; seed %llu (set DEVCTX_TEST_SEED to replay)\n", static_cast<unsigned long long>(devctx_test::run_seed()));
  testing::UnitTest::GetInstance()->listeners().Append(new devctx_test::SeedPrinter);
  const int result = RUN_ALL_TESTS();
  // 77: ctest's SKIP_RETURN_CODE. The tests themselves were skipped (GTEST_SKIP) because no
  // requested backend has a device; with DEVCTX_REQUIRE_GPU on they failed instead.
  if (result == 0 && !any_present && !devctx_test::require_gpu()) {
    std::printf("devctx tests: no requested backend has a device here: reporting the run as skipped\n");
    return 77;
  }
  return result;
}
