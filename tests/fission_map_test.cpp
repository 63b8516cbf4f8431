// SPDX-License-Identifier: Apache-2.0
// tests/fission_map_test.cpp - map kernels through the fission translator (docs/cpu-backend.md,
// "Map kernels"): barrier-free kernels over devctx::global_idx().x with a bounds guard get a twin
// that loops over exactly the threads the guard admits (a loop the compiler can vectorise). Each
// kernel here runs with twins on and off into poisoned buffers: results bitwise equal, equal to
// the host's, elements the guard leaves out keep their poison, and the trace says "translated"
// when the translator ran on this file.
#include <gtest/gtest.h>

#include <devctx/devctx.hpp>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fission_maps {

// `if (i < n) S`, n a size: the contract's vector add.
DEVCTX_KERNEL void map_add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a[i] + b[i];
}

// `if (i >= n) return;` then several statements, n a signed parameter, a pure local first.
DEVCTX_KERNEL void map_axpy_early(devctx::span<const float> x, devctx::span<float> y, float alpha, int n) {
  const long long i = static_cast<long long>(devctx::global_idx().x);
  const float scale = alpha * 2.0f;
  if (i >= n) return;
  const float xi = x[i];
  y[i] = scale * xi + y[i];
  y[i] += 1.0f;
}

// `if (last >= i)`: the flipped comparison with <=, bound in an unsigned of another width.
DEVCTX_KERNEL void map_up_to(devctx::span<std::int32_t> out, unsigned last) {
  const auto i = devctx::global_idx().x;
  if (last >= i) {
    out[i] = std::int32_t(i) * 3 - 7;
  }
}

// A body that reads the thread index itself: the twin sets it per thread.
DEVCTX_KERNEL void map_thread_ids(devctx::span<std::uint32_t> out, std::size_t n) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[devctx::thread_idx().y * n + i] = devctx::thread_idx().x * 1000u + devctx::thread_idx().y;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

bool env_on(const char* name, bool otherwise) {
  const char* v = std::getenv(name);
  if (v == nullptr) return otherwise;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return !(s == "0" || s == "false" || s == "no" || s == "off");
}

constexpr bool kTranslatorRan =
#if defined(DEVCTX_FISSION_OFF_REASON)
    false;
#else
    true;
#endif

bool twins_expected() {
  return kTranslatorRan && env_on("DEVCTX_CPU_FISSION", true) && !env_on("DEVCTX_CHECK", false);
}

template <class T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n);
  std::memset(v.data(), 0xA5, n * sizeof(T));
  return v;
}

template <class T>
std::vector<T> download(devctx::DeviceContext& ctx, const devctx::DeviceBuffer<T>& buf) {
  std::vector<T> out(buf.size());
  ctx.enqueue_copy(std::span(out), buf);
  ctx.synchronize();
  return out;
}

std::vector<float> random_floats(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Runs `launch(buffer)` on a poisoned copy of `init` with twins on (recording how the kernel ran
/// in `path`) and again with DEVCTX_CPU_FISSION=0; returns both results.
template <class T, class Launch>
std::pair<std::vector<T>, std::vector<T>> on_and_off(devctx::DeviceContext& ctx, const std::vector<T>& init,
                                                     Launch launch, std::string& path) {
  auto on = ctx.enqueue_create_buffer<T>(init.size());
  auto off = ctx.enqueue_create_buffer<T>(init.size());
  ctx.enqueue_copy(on, std::span(init));
  ctx.enqueue_copy(off, std::span(init));
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  launch(on);
  ctx.synchronize();
  path = "(no kernel recorded)";
  for (const devctx::trace::Operation& op : devctx::trace::operations())
    if (op.kind == devctx::trace::Kind::kernel) path = op.execution;
  devctx::trace::stop();
  devctx::trace::clear();
  {
    const ScopedEnv no_twins("DEVCTX_CPU_FISSION", "0");
    launch(off);
    ctx.synchronize();
  }
  return {download(ctx, on), download(ctx, off)};
}

void expect_path(const std::string& path) {
  if (twins_expected()) {
    EXPECT_EQ(path.rfind("translated: the kernel's block-level twin ran every block", 0), 0u) << path;
  } else {
    EXPECT_NE(path.rfind("translated: ", 0), 0u) << path;
  }
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}


TEST(FissionMaps, GuardedVectorAddCoversExactlyTheGuardedElements) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{1000},
                              std::size_t{256 * 9 + 17}}) {
    SCOPED_TRACE(n);
    const auto va = random_floats(rng, n), vb = random_floats(rng, n);
    auto a = ctx.enqueue_create_buffer<float>(n);
    auto b = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(a, std::span(va));
    ctx.enqueue_copy(b, std::span(vb));
    // Two blocks more than needed (wholly outside the guard), 1-D and 2-D blocks. (In 2-D blocks
    // every row writes the same elements: a race that checking mode rightly reports.)
    const bool checked = env_on("DEVCTX_CHECK", false);
    for (const devctx::Dim3 block : {devctx::Dim3{256, 1, 1}, devctx::Dim3{64, 2, 1}}) {
      if (checked && block.y > 1) continue;
      const unsigned grid = unsigned((n + block.x - 1) / block.x) + 2;
      std::string path;
      const auto [on, off] = on_and_off<float>(ctx, poisoned<float>(n), [&](devctx::DeviceBuffer<float>& out) {
        ctx.enqueue_function<map_add>({.grid_dim = grid, .block_dim = block}, a, b, out);
      }, path);
      expect_path(path);
      EXPECT_TRUE(same_bytes(on, off));
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(on[i], va[i] + vb[i]) << "element " << i;
    }
  }
}

TEST(FissionMaps, EarlyReturnGuardWithASignedBound) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const std::size_t size = 256 * 5 + 3;
  const auto vx = random_floats(rng, size), vy = random_floats(rng, size);
  auto x = ctx.enqueue_create_buffer<float>(size);
  ctx.enqueue_copy(x, std::span(vx));
  const float alpha = 0.75f;
  // n inside the buffer, at its end, zero and negative (a signed bound: no thread passes).
  for (const int n : {int(size) - 300, int(size), 1, 0, -5}) {
    SCOPED_TRACE(n);
    std::string path;
    const auto [on, off] = on_and_off<float>(ctx, vy, [&](devctx::DeviceBuffer<float>& y) {
      ctx.enqueue_function<map_axpy_early>({.grid_dim = 6, .block_dim = 256}, x, y, alpha, n);
    }, path);
    expect_path(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (std::size_t i = 0; i < size; ++i) {
      float want = vy[i];
      if (n > 0 && i < std::size_t(n)) {
        want = (alpha * 2.0f) * vx[i] + vy[i];
        want += 1.0f;
      }
      ASSERT_EQ(on[i], want) << "element " << i;
    }
  }
}

TEST(FissionMaps, FlippedLessOrEqualGuard) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  const std::size_t size = 700;
  for (const unsigned last : {0u, 1u, 255u, 256u, 699u}) {
    SCOPED_TRACE(last);
    std::string path;
    const auto init = poisoned<std::int32_t>(size);
    const auto [on, off] = on_and_off<std::int32_t>(ctx, init, [&](devctx::DeviceBuffer<std::int32_t>& out) {
      ctx.enqueue_function<map_up_to>({.grid_dim = 3, .block_dim = 256}, out, last);
    }, path);
    expect_path(path);
    EXPECT_TRUE(same_bytes(on, off));
    for (std::size_t i = 0; i < size; ++i)
      ASSERT_EQ(on[i], i <= last ? std::int32_t(i) * 3 - 7 : init[i]) << "element " << i;
  }
}

TEST(FissionMaps, ABodyThatReadsTheThreadIndexSeesEachThreadsOwn) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  const std::size_t n = 64 * 4 - 10;
  std::string path;
  // 2-D blocks: row y of each block writes its own stretch of the output.
  const auto init = poisoned<std::uint32_t>(3 * n + 20);
  const auto [on, off] = on_and_off<std::uint32_t>(ctx, init, [&](devctx::DeviceBuffer<std::uint32_t>& out) {
    ctx.enqueue_function<map_thread_ids>({.grid_dim = 5, .block_dim = {64, 3, 1}}, out, n);
  }, path);
  expect_path(path);
  EXPECT_TRUE(same_bytes(on, off));
  for (std::size_t j = 0; j < init.size(); ++j) {
    const std::size_t y = j / n, i = j % n;
    ASSERT_EQ(on[j], y < 3 ? std::uint32_t(i % 64) * 1000u + std::uint32_t(y) : init[j]) << "element " << j;
  }
}

TEST(FissionMaps, CheckedLaunchesRunThePlainLoop) {
  const ScopedEnv checked("DEVCTX_CHECK", "1");  // read when the context is made
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto a = ctx.enqueue_create_buffer<float>(300);
  auto b = ctx.enqueue_create_buffer<float>(300);
  auto out = ctx.enqueue_create_buffer<float>(300);
  ctx.enqueue_memset(a, 1.5f);
  ctx.enqueue_memset(b, 2.0f);
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  ctx.enqueue_function<map_add>({.grid_dim = 2, .block_dim = 256}, a, b, out);
  ctx.synchronize();
  std::string path;
  for (const devctx::trace::Operation& op : devctx::trace::operations())
    if (op.kind == devctx::trace::Kind::kernel) path = op.execution;
  devctx::trace::stop();
  devctx::trace::clear();
  EXPECT_EQ(path.rfind("plain loop", 0), 0u) << path;
  for (const float v : download(ctx, out)) ASSERT_EQ(v, 3.5f);
}

}  // namespace fission_maps (named, not anonymous: unity builds merge this file with fission_test.cpp)
