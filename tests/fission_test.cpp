// SPDX-License-Identifier: Apache-2.0
// tests/fission_test.cpp - the CPU backend's offer protocol for translated kernels
// (docs/cpu-backend.md, "Translated kernels"): the CUDA-style K2 (block reduction) and K3 (tiled
// matmul) of bench/cpu/devctx_rows.cpp with block-level twins written by hand as the fission
// translator writes them, checked bitwise against the same kernels on fibers; unchecked launches
// run the twin, checked launches and DEVCTX_CPU_FISSION=0 never do.
#include <gtest/gtest.h>

#include <devctx/devctx.hpp>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr unsigned kReduceBlock = 256;
constexpr unsigned kTile = 16;

/// Blocks run by a twin (instrumentation of this test's hand-written twins only).
std::atomic<unsigned> twin_blocks{0};

// ---- K2, as on fibers: the kernel as a user writes it ----------------------------------------
DEVCTX_KERNEL void block_reduce_fibers(devctx::span<const float> in, devctx::span<float> sums) {
  DEVCTX_SHARED(float, s, kReduceBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) sums[devctx::block_idx().x] = s[0];
}

// ---- K2 with its twin, as the translator writes them -----------------------------------------
#if !defined(__CUDA_ARCH__)
inline void block_reduce__devctx_twin(devctx::span<const float> in, devctx::span<float> sums) {
  namespace fission = ::devctx::detail::cpu::fission;
  twin_blocks.fetch_add(1, std::memory_order_relaxed);
  const std::size_t devctx_bx = ::devctx::detail::cpu::tls.block_dim.x;
  DEVCTX_SHARED(float, s, kReduceBlock);
  fission::threads(0, devctx_bx, [&](std::size_t) {
    const unsigned t = devctx::thread_idx().x;
    const std::size_t i = devctx::global_idx().x;
    s[t] = i < in.size() ? in[i] : 0.0f;
  });
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    fission::threads(0, fission::lt_end<unsigned>(stride, devctx_bx), [&](std::size_t) {
      const unsigned t = devctx::thread_idx().x;
      s[t] += s[t + stride];
    });
  }
  const std::size_t devctx_x0 = fission::eq_begin<unsigned>(0, devctx_bx);
  fission::threads(devctx_x0, devctx_x0 + 1, [&](std::size_t) { sums[devctx::block_idx().x] = s[0]; });
}
#endif

DEVCTX_KERNEL void block_reduce(devctx::span<const float> in, devctx::span<float> sums) {
#if !defined(__CUDA_ARCH__)
  if (::devctx::detail::cpu::take_fission_offer(&block_reduce)) [[unlikely]] {
    block_reduce__devctx_twin(in, sums);
    return;
  }
#endif
  DEVCTX_SHARED(float, s, kReduceBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) sums[devctx::block_idx().x] = s[0];
}

// ---- K3, as on fibers ------------------------------------------------------------------------
DEVCTX_KERNEL void matmul_fibers(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                 unsigned n) {
  DEVCTX_SHARED(float, as, kTile * kTile);
  DEVCTX_SHARED(float, bs, kTile * kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
    bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    devctx::barrier();
    for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
    devctx::barrier();
  }
  if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
}

// ---- K3 with its twin: `acc` lives across barriers in a per-thread array ----------------------
#if !defined(__CUDA_ARCH__)
inline void matmul__devctx_twin(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                unsigned n) {
  namespace fission = ::devctx::detail::cpu::fission;
  twin_blocks.fetch_add(1, std::memory_order_relaxed);
  const std::size_t devctx_bx = ::devctx::detail::cpu::tls.block_dim.x;
  DEVCTX_SHARED(float, as, kTile * kTile);
  DEVCTX_SHARED(float, bs, kTile * kTile);
  float* const devctx_pt_acc = fission::per_thread<float>();
  fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
    float acc = 0.0f;
    devctx_pt_acc[devctx_rank] = acc;
  });
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    fission::threads(0, devctx_bx, [&](std::size_t) {
      [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
      [[maybe_unused]] const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
      as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
      bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    });
    fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
      [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
      float acc = devctx_pt_acc[devctx_rank];
      for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
      devctx_pt_acc[devctx_rank] = acc;
    });
  }
  fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
    [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
    [[maybe_unused]] const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
    float acc = devctx_pt_acc[devctx_rank];
    if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
  });
}
#endif

DEVCTX_KERNEL void matmul(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                          unsigned n) {
#if !defined(__CUDA_ARCH__)
  if (::devctx::detail::cpu::take_fission_offer(&matmul)) [[unlikely]] {
    matmul__devctx_twin(a, b, c, n);
    return;
  }
#endif
  DEVCTX_SHARED(float, as, kTile * kTile);
  DEVCTX_SHARED(float, bs, kTile * kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
    bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    devctx::barrier();
    for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
    devctx::barrier();
  }
  if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
}

// ---- a declined kernel: its prologue only says why -------------------------------------------
DEVCTX_KERNEL void declined(devctx::span<unsigned> out) {
#if !defined(__CUDA_ARCH__)
  ::devctx::detail::cpu::decline_fission_offer(&declined, "a test's reason");
#endif
  DEVCTX_SHARED(unsigned, s, 64);
  const unsigned t = devctx::thread_idx().x;
  s[t] = t * 7u;
  devctx::barrier();
  out[std::size_t(devctx::block_idx().x) * 64 + t] = s[63 - t];
}

std::vector<float> random_floats(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

template <class T>
std::vector<T> download(devctx::DeviceContext& ctx, const devctx::DeviceBuffer<T>& buffer) {
  std::vector<T> host(buffer.size());
  ctx.enqueue_copy(std::span(host), buffer);
  ctx.synchronize();
  return host;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Sets an environment variable for one scope.
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

/// Whether the environment leaves twins on (the whole suite also runs with DEVCTX_CPU_FISSION=0).
bool twins_on() {
  const char* v = std::getenv("DEVCTX_CPU_FISSION");
  if (v == nullptr) return true;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return !(s == "0" || s == "false" || s == "no" || s == "off");
}

/// K2 over `n` random floats: the twin's sums, the fibers' sums, and how many blocks the twin ran.
struct K2Run {
  std::vector<float> twin, fibers;
  unsigned twin_blocks = 0;
};
K2Run run_k2(devctx::DeviceContext& ctx, std::mt19937_64& rng, std::size_t n) {
  const unsigned blocks = unsigned((n + kReduceBlock - 1) / kReduceBlock);
  auto in = ctx.enqueue_create_buffer<float>(n);
  { const auto values = random_floats(rng, n); ctx.enqueue_copy(in, std::span(values)); }
  auto twin = ctx.enqueue_create_buffer<float>(blocks);
  auto fibers = ctx.enqueue_create_buffer<float>(blocks);
  ctx.enqueue_memset(twin, -7.0f);
  ctx.enqueue_memset(fibers, -9.0f);
  ctx.synchronize();
  twin_blocks = 0;
  ctx.enqueue_function<block_reduce>({.grid_dim = blocks, .block_dim = kReduceBlock}, in, twin);
  ctx.synchronize();
  K2Run run;
  run.twin_blocks = twin_blocks.load();
  {
    // The reference on fibers (the fission translator, when it ran on this file, gave
    // block_reduce_fibers a twin too).
    const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
    ctx.enqueue_function<block_reduce_fibers>({.grid_dim = blocks, .block_dim = kReduceBlock}, in, fibers);
  }
  run.twin = download(ctx, twin);
  run.fibers = download(ctx, fibers);
  return run;
}

}  // namespace

TEST(Fission, HandWrittenReductionTwinIsBitwiseEqualToFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{256 * 37 + 19}, std::size_t{1} << 18}) {
    SCOPED_TRACE(n);
    const K2Run run = run_k2(ctx, rng, n);
    EXPECT_EQ(run.twin_blocks, twins_on() ? run.twin.size() : 0);  // every block ran the twin
    EXPECT_TRUE(bitwise_equal(run.twin, run.fibers));
  }
}

TEST(Fission, HandWrittenMatmulTwinIsBitwiseEqualToFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  for (const unsigned n : {1u, 15u, 16u, 70u, 128u}) {
    SCOPED_TRACE(n);
    const std::size_t count = std::size_t(n) * n;
    auto a = ctx.enqueue_create_buffer<float>(count);
    auto b = ctx.enqueue_create_buffer<float>(count);
    { const auto values = random_floats(rng, count); ctx.enqueue_copy(a, std::span(values)); }
    { const auto values = random_floats(rng, count); ctx.enqueue_copy(b, std::span(values)); }
    auto twin = ctx.enqueue_create_buffer<float>(count);
    auto fibers = ctx.enqueue_create_buffer<float>(count);
    ctx.enqueue_memset(twin, -7.0f);
    ctx.enqueue_memset(fibers, -9.0f);
    const unsigned tiles = (n + kTile - 1) / kTile;
    const devctx::LaunchConfig cfg{.grid_dim = {tiles, tiles}, .block_dim = {kTile, kTile}};
    ctx.synchronize();
    twin_blocks = 0;
    ctx.enqueue_function<matmul>(cfg, a, b, twin, n);
    ctx.synchronize();
    EXPECT_EQ(twin_blocks.load(), twins_on() ? tiles * tiles : 0);
    {
      const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
      ctx.enqueue_function<matmul_fibers>(cfg, a, b, fibers, n);
    }
    const auto t = download(ctx, twin), f = download(ctx, fibers);
    EXPECT_TRUE(bitwise_equal(t, f));
    // And against the host, in the same order of additions. Within rounding, not bitwise: where
    // the compiler contracts a * b + c into one fused multiply-add (GCC does by default on
    // AArch64), the kernels and this loop may round differently; twin and fibers above agree bitwise.
    const auto ha = download(ctx, a), hb = download(ctx, b);
    for (unsigned r = 0; r < n; ++r)
      for (unsigned col = 0; col < n; ++col) {
        double acc = 0.0, magnitude = 0.0;
        for (unsigned k = 0; k < n; ++k) {
          const double p = double(ha[std::size_t(r) * n + k]) * double(hb[std::size_t(k) * n + col]);
          acc += p;
          magnitude += p < 0 ? -p : p;
        }
        ASSERT_NEAR(t[std::size_t(r) * n + col], acc, 1e-6 * (magnitude + 1.0) * n) << r << ", " << col;
      }
  }
}

TEST(Fission, OffTurnsTwinsOffAtRunTime) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  std::mt19937_64 rng(std::random_device{}());
  const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
  const K2Run run = run_k2(ctx, rng, 256 * 9 + 3);
  EXPECT_EQ(run.twin_blocks, 0u);
  EXPECT_TRUE(bitwise_equal(run.twin, run.fibers));
}

TEST(Fission, MalformedSettingThrowsAndQueuesNothing) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto in = ctx.enqueue_create_buffer<float>(256);
  auto out = ctx.enqueue_create_buffer<float>(1);
  const ScopedEnv bad("DEVCTX_CPU_FISSION", "maybe");
  try {
    ctx.enqueue_function<block_reduce>({.grid_dim = 1, .block_dim = kReduceBlock}, in, out);
    FAIL() << "no error";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("DEVCTX_CPU_FISSION"), std::string::npos) << e.what();
  }
  ctx.synchronize();
}

TEST(Fission, CheckedLaunchesNeverRunTwins) {
  devctx::DeviceContext ctx{devctx::Api::cpu, 0, {.check = true}};
  std::mt19937_64 rng(std::random_device{}());
  const K2Run run = run_k2(ctx, rng, 256 * 5);
  EXPECT_EQ(run.twin_blocks, 0u);
  EXPECT_TRUE(bitwise_equal(run.twin, run.fibers));
}

TEST(Fission, DeclinedKernelRunsOnFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto out = ctx.enqueue_create_buffer<unsigned>(64 * 5);
  ctx.enqueue_memset(out, 0xdeadbeefu);
  ctx.enqueue_function<declined>({.grid_dim = 5, .block_dim = 64}, out);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], (63 - i % 64) * 7u) << i;
}

namespace {
/// The execution path devctx::trace recorded for each kernel launched while recording.
std::vector<std::pair<std::string, std::string>> recorded_paths() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const devctx::trace::Operation& op : devctx::trace::operations())
    if (op.kind == devctx::trace::Kind::kernel) out.emplace_back(op.name, op.execution);
  return out;
}
}  // namespace

TEST(Fission, TraceRecordsTranslatedOrWhyFibers) {
  devctx::DeviceContext ctx{devctx::Api::cpu};
  auto in = ctx.enqueue_create_buffer<float>(256 * 3);
  auto sums = ctx.enqueue_create_buffer<float>(3);
  auto out = ctx.enqueue_create_buffer<unsigned>(64 * 2);
  ctx.enqueue_memset(in, 1.0f);
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  ctx.enqueue_function<block_reduce>({.grid_dim = 3, .block_dim = kReduceBlock}, in, sums);
  ctx.enqueue_function<declined>({.grid_dim = 2, .block_dim = 64}, out);
  ctx.enqueue_function<block_reduce_fibers>({.grid_dim = 3, .block_dim = kReduceBlock}, in, sums);
  {
    const ScopedEnv off("DEVCTX_CPU_FISSION", "0");
    ctx.enqueue_function<block_reduce>({.grid_dim = 3, .block_dim = kReduceBlock}, in, sums);
  }
  ctx.synchronize();
  const auto paths = recorded_paths();
  devctx::trace::stop();
  devctx::trace::clear();
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_NE(paths[0].first.find("block_reduce"), std::string::npos) << paths[0].first;
  if (twins_on()) {
    EXPECT_EQ(paths[0].second.rfind("translated: the kernel's block-level twin ran every block", 0), 0u)
        << paths[0].second;
  } else {
    EXPECT_NE(paths[0].second.find("fibers: DEVCTX_CPU_FISSION=0 turned translated twins off"), std::string::npos)
        << paths[0].second;
  }
  EXPECT_NE(paths[1].second.find("cooperative fibers for 2 of 2 blocks"), std::string::npos) << paths[1].second;
  if (twins_on()) {
    EXPECT_NE(paths[1].second.find("fibers: not translated: a test's reason"), std::string::npos) << paths[1].second;
  }
  // block_reduce_fibers has no hand-written prologue: the translator's twin when it ran on this
  // file, else the build's reason (devctx_add_kernels defines it when the translator is off).
#if defined(DEVCTX_FISSION_OFF_REASON)
  if (twins_on()) {
    EXPECT_NE(paths[2].second.find("fibers: not translated: the fission translator did not run on this program's "
                                   "kernel files (the translator was off in this build: "),
              std::string::npos)
        << paths[2].second;
  }
#else
  if (twins_on()) {
    EXPECT_EQ(paths[2].second.rfind("translated: ", 0), 0u) << paths[2].second;
  }
#endif
  EXPECT_NE(paths[3].second.find("fibers: DEVCTX_CPU_FISSION=0 turned translated twins off"), std::string::npos)
      << paths[3].second;
  const auto got = download(ctx, sums);
  for (std::size_t b = 0; b < got.size(); ++b) EXPECT_EQ(got[b], 256.0f) << b;
}
