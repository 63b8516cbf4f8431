// SPDX-License-Identifier: Apache-2.0
// tests/runtime_kernels_test.cpp - kernels given as source at run time (devctx/module.hpp) on
// every backend: compiled, launched and every element checked against a host loop with fresh
// random inputs; each argument mismatch raises the named error and enqueues nothing; compile
// errors carry the user's line; the on-disk cache (hit, damaged entry rebuilt, read-only
// directory, off, two processes compiling one kernel at once).
#include "support/runtime_course_kernels.hpp"
#include "support/test_support.hpp"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::kCourseSource;
using devctx_test::poisoned_buffer;
using devctx_test::upload;

extern char** environ;  // NOLINT: POSIX

namespace {

std::filesystem::path make_temp_dir(const char* what) {
  std::string pattern = (std::filesystem::temp_directory_path() / (std::string("devctx-rt-") + what + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

/// The process's shared cache for the tests that only compile and launch (each kernel compiles
/// once per run); removed at exit.
const std::filesystem::path& shared_cache() {
  static const struct Dir {
    std::filesystem::path path = make_temp_dir("cache");
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

/// A fresh cache directory for one test, removed afterwards.
struct TempCache {
  std::filesystem::path path = make_temp_dir("own");
  devctx_test::ScopedEnv env{"DEVCTX_CACHE_DIR", path.c_str()};
  ~TempCache() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path, ec);
  }
  [[nodiscard]] std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(path))
      if (e.path().extension() == ".dck") out.push_back(e.path());
    return out;
  }
};

class RuntimeKernels : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    env_.emplace("DEVCTX_CACHE_DIR", shared_cache().c_str());
  }
  devctx::DeviceFunction compile(const char* name) { return ctx().compile_function(module_, name); }

  devctx::Module module_{kCourseSource, "course.cpp"};
  std::optional<devctx_test::ScopedEnv> env_;
};

/// Runs `f` and checks it throws devctx::Error with `code` whose message holds every one of `parts`.
template <class F>
void expect_error(devctx::Errc code, const std::vector<std::string>& parts, F&& f) {
  try {
    f();
    ADD_FAILURE() << "no devctx::Error thrown";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
  }
}

// ---- the course's kernels -------------------------------------------------------------------------

TEST_P(RuntimeKernels, VectorAdd) {
  const auto f = compile("vector_add");
  EXPECT_EQ(f.signature(), "(devctx::span<const float>, devctx::span<const float>, devctx::span<float>)");
  ASSERT_EQ(f.params().size(), 3u);
  EXPECT_EQ(f.params()[0].kind, devctx::KernelParam::Kind::span);
  EXPECT_EQ(f.params()[0].type, devctx::ScalarType::float32);
  EXPECT_TRUE(f.params()[0].read_only);
  EXPECT_FALSE(f.params()[2].read_only);
  for (const std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(100003)}) {
    const auto a = devctx_test::random_vector<float>(rng, n, -100.f, 100.f);
    const auto b = devctx_test::random_vector<float>(rng, n, -100.f, 100.f);
    auto da = upload(ctx(), a), db = upload(ctx(), b);
    auto dc = poisoned_buffer<float>(ctx(), n);
    ctx().enqueue_function(f, cover(n), da, db, dc);
    const auto c = download(ctx(), dc);
    ctx().synchronize();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  }
}

TEST_P(RuntimeKernels, TemplateKernelsByName) {
  const auto f32 = compile("saxpy<float>");
  const auto f64 = compile("saxpy<double>");
  EXPECT_EQ(f32.params()[0].kind, devctx::KernelParam::Kind::scalar);
  EXPECT_EQ(f32.params()[0].type, devctx::ScalarType::float32);
  EXPECT_EQ(f64.params()[0].type, devctx::ScalarType::float64);
  const std::size_t n = 5000;
  const auto x = devctx_test::random_vector<double>(rng, n, -10., 10.);
  const auto y = devctx_test::random_vector<double>(rng, n, -10., 10.);
  std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
  auto dx = upload(ctx(), x), dy = upload(ctx(), y);
  auto dxf = upload(ctx(), xf), dyf = upload(ctx(), yf);
  ctx().enqueue_function(f64, cover(n), 1.5, dx, dy);
  ctx().enqueue_function(f32, cover(n), 2.5f, dxf, dyf);
  // A double for a float parameter converts (it fits); an int converts exactly.
  ctx().enqueue_function(f32, cover(n), 3, dxf, dyf);
  const auto out = download(ctx(), dy);
  const auto outf = download(ctx(), dyf);
  ctx().synchronize();
  // a * x + y, rounded once (a fused multiply-add: nvcc contracts by default, as CUDA does) or
  // twice (the host compiler at -std=c++20 does not): exactly one of the two.
  const auto axpy = [](auto a, auto xv, auto yv, auto got) { return got == std::fma(a, xv, yv) || got == a * xv + yv; };
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(axpy(1.5, x[i], y[i], out[i])) << i << ": " << out[i];
    const float once_fused = std::fma(2.5f, xf[i], yf[i]), once_plain = 2.5f * xf[i] + yf[i];
    ASSERT_TRUE(axpy(3.0f, xf[i], once_fused, outf[i]) || axpy(3.0f, xf[i], once_plain, outf[i])) << i << ": " << outf[i];
  }
}

TEST_P(RuntimeKernels, Map2D) {
  const auto f = compile("map2d");
  EXPECT_EQ(f.params()[0].kind, devctx::KernelParam::Kind::pointer);
  EXPECT_TRUE(f.params()[0].read_only);
  EXPECT_EQ(f.params()[2].type, devctx::ScalarType::int32);
  const int rows = 77, cols = 131;
  const auto in = devctx_test::random_small_ints<float>(rng, std::size_t(rows) * cols, -50, 50);
  auto din = upload(ctx(), in);
  auto dout = poisoned_buffer<float>(ctx(), in.size());
  const devctx::LaunchConfig config{.grid_dim = {(cols + 15) / 16, (rows + 7) / 8, 1}, .block_dim = {16, 8, 1}};
  ctx().enqueue_function(f, config, din, dout, rows, cols, 0.5f);
  const auto out = download(ctx(), dout);
  ctx().synchronize();
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      ASSERT_EQ(out[std::size_t(r) * cols + c], in[std::size_t(r) * cols + c] * 0.5f + float(r - c)) << r << ',' << c;
}

TEST_P(RuntimeKernels, SharedMemoryReduction) {
  const auto f = compile("block_sum");
  const std::size_t n = 256 * 37 + 11, blocks = (n + 255) / 256;
  const auto in = devctx_test::random_small_ints<double>(rng, n, -1000, 1000);
  auto din = upload(ctx(), in);
  auto dout = poisoned_buffer<double>(ctx(), blocks);
  ctx().enqueue_function(f, cover(n, 256), din, dout);
  const auto out = download(ctx(), dout);
  ctx().synchronize();
  for (std::size_t b = 0; b < blocks; ++b) {
    double s = 0;
    for (std::size_t i = b * 256; i < std::min(n, (b + 1) * 256); ++i) s += in[i];
    ASSERT_EQ(out[b], s) << b;
  }
}

TEST_P(RuntimeKernels, WarpSums) {
  const auto f = compile("warp_sums");
  const std::size_t n = 32 * 100;
  const auto in = devctx_test::random_vector<int>(rng, n, -100000, 100000);
  auto din = upload(ctx(), in);
  auto dout = poisoned_buffer<int>(ctx(), n / 32);
  ctx().enqueue_function(f, cover(n, 128), din, dout);
  const auto out = download(ctx(), dout);
  ctx().synchronize();
  for (std::size_t w = 0; w < n / 32; ++w) {
    int s = 0;
    for (std::size_t i = 0; i < 32; ++i) s += in[w * 32 + i];
    ASSERT_EQ(out[w], s) << w;
  }
}

TEST_P(RuntimeKernels, TiledMatmul) {
  const auto f = compile("matmul");
  const unsigned M = 70, N = 45, K = 83;
  // Small integers: every product and sum is exact, in any order and with or without FMA.
  const auto A = devctx_test::random_small_ints<float>(rng, std::size_t(M) * K, -8, 8);
  const auto B = devctx_test::random_small_ints<float>(rng, std::size_t(K) * N, -8, 8);
  auto dA = upload(ctx(), A), dB = upload(ctx(), B);
  auto dC = poisoned_buffer<float>(ctx(), std::size_t(M) * N);
  const devctx::LaunchConfig config{.grid_dim = {(N + 15) / 16, (M + 15) / 16, 1}, .block_dim = {16, 16, 1}};
  ctx().enqueue_function(f, config, dA, dB, dC, M, N, K);
  const auto C = download(ctx(), dC);
  ctx().synchronize();
  for (unsigned r = 0; r < M; ++r)
    for (unsigned c = 0; c < N; ++c) {
      float s = 0;
      for (unsigned k = 0; k < K; ++k) s += A[std::size_t(r) * K + k] * B[std::size_t(k) * N + c];
      ASSERT_EQ(C[std::size_t(r) * N + c], s) << r << ',' << c;
    }
}

TEST_P(RuntimeKernels, RunsOnAnotherStream) {
  const auto f = compile("vector_add");
  auto stream = ctx().create_stream();
  const std::size_t n = 4096;
  const auto a = devctx_test::random_vector<float>(rng, n, -1.f, 1.f);
  auto da = upload(stream, a);
  auto dc = poisoned_buffer<float>(stream, n);
  stream.enqueue_function(f, cover(n), da, da, dc);
  const auto c = download(stream, dc);
  stream.synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + a[i]) << i;
}

TEST_P(RuntimeKernels, RecordedInAGraphAndReplayed) {
  const auto f = compile("saxpy<float>");
  const std::size_t n = 3000;
  const auto x = devctx_test::random_small_ints<float>(rng, n, -20, 20);
  auto dx = upload(ctx(), x);
  auto dy = upload(ctx(), std::vector<float>(n, 0.0f));
  ctx().synchronize();
  devctx::Graph g = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
    s.enqueue_function(f, cover(n), 2.0f, dx, dy);
    s.enqueue_function(f, cover(n), -1.0f, dx, dy);
  });
  EXPECT_EQ(g.kernel_count(), 2u);
  const int replays = 5;
  for (int r = 0; r < replays; ++r) g.enqueue(ctx());
  const auto y = download(ctx(), dy);
  ctx().synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], float(replays) * x[i]) << i;  // (2 - 1) per replay
}

// ---- arguments checked against the compiled signature ----------------------------------------------

TEST_P(RuntimeKernels, MismatchesNameTheParameterAndEnqueueNothing) {
  const auto add = compile("vector_add");
  const auto map = compile("map2d");
  const std::size_t n = 512;
  auto a = upload(ctx(), devctx_test::random_vector<float>(rng, n, -1.f, 1.f));
  auto out = poisoned_buffer<float>(ctx(), n);
  auto doubles = upload(ctx(), std::vector<double>(n, 1.0));
  const devctx::DeviceBuffer<float>& read_only = a;
  using devctx::Errc;

  expect_error(Errc::invalid_argument, {"parameter 1", "devctx::span<const float>", "double"},
               [&] { ctx().enqueue_function(add, cover(n), doubles, a, out); });
  expect_error(Errc::invalid_argument, {"parameter 3", "devctx::span<float>", "read-only"},
               [&] { ctx().enqueue_function(add, cover(n), a, a, read_only); });
  expect_error(Errc::invalid_argument, {"parameter 3", "read-only"},
               [&] { ctx().enqueue_function(add, cover(n), a, a, std::as_const(out).slice(0, n)); });
  expect_error(Errc::invalid_argument, {"parameter 3", "(int", "1099511627776", "does not fit in int32"},
               [&] { ctx().enqueue_function(map, cover(n), a, out, 1LL << 40, 1, 1.0f); });
  expect_error(Errc::invalid_argument, {"parameter 4", "integer", "double"},
               [&] { ctx().enqueue_function(map, cover(n), a, out, 1, 2.0, 1.0f); });
  expect_error(Errc::invalid_argument, {"parameter 5", "float32", "1e+300"},
               [&] { ctx().enqueue_function(map, cover(n), a, out, 1, 1, 1e300); });
  expect_error(Errc::invalid_argument, {"parameter 1", "takes device memory", "scalar"},
               [&] { ctx().enqueue_function(add, cover(n), 1.0f, a, out); });
  expect_error(Errc::invalid_argument, {"parameter 3", "takes a value"},
               [&] { ctx().enqueue_function(map, cover(n), a, out, a, 1, 1.0f); });
  expect_error(Errc::invalid_argument, {"takes 3 arguments", "2 were given"},
               [&] { ctx().enqueue_function(add, cover(n), a, out); });
  expect_error(Errc::invalid_handle, {"DeviceFunction"},
               [&] { ctx().enqueue_function(devctx::DeviceFunction{}, cover(n), a, a, out); });

  // Memory of another device, and a function compiled for another device.
  const bool two_cpus = on_cpu();
  if (two_cpus) devctx::DeviceContext::set_cpu_device_count(2);
  {
    devctx::DeviceContext other(devctx::Api::cpu, two_cpus ? 1 : 0);
    auto foreign = upload(other, std::vector<float>(n, 2.0f));
    other.synchronize();
    expect_error(Errc::wrong_device, {"parameter 2", "devctx::span<const float>"},
                 [&] { ctx().enqueue_function(add, cover(n), a, foreign, out); });
    expect_error(Errc::wrong_device, {"compiled for"},
                 [&] { other.enqueue_function(add, cover(n), foreign, foreign, foreign); });
  }
  if (two_cpus) devctx::DeviceContext::set_cpu_device_count(0);

  // Nothing ran: the output still holds its poison, and the context still works.
  auto before = download(ctx(), out);
  ctx().synchronize();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_TRUE(devctx_test::same_bits(before[i], devctx_test::poison_value<float>())) << i;
  ctx().enqueue_function(add, cover(n), a, a, out);
  const auto after = download(ctx(), out);
  const auto av = download(ctx(), a);
  ctx().synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(after[i], av[i] + av[i]) << i;
}

// ---- compile errors ---------------------------------------------------------------------------------

TEST_P(RuntimeKernels, SyntaxErrorReportsTheUsersLine) {
  const devctx::Module bad(R"(#include <devctx/kernel.hpp>

DEVCTX_KERNEL void broken(devctx::span<float> y) {
  y[0] = undeclared_name + 1;
}
)",
                           "broken.cpp");
  try {
    (void)ctx().compile_function(bad, "broken");
    FAIL() << "no CompileError";
  } catch (const devctx::CompileError& e) {
    EXPECT_EQ(e.code(), devctx::Errc::compile_failed);
    const std::string what = e.what();
    EXPECT_TRUE(what.find("broken.cpp:4:") != std::string::npos || what.find("broken.cpp(4)") != std::string::npos) << what;
    EXPECT_NE(what.find(">    4 |   y[0] = undeclared_name + 1;"), std::string::npos) << what;
    EXPECT_NE(e.log().find("undeclared_name"), std::string::npos) << e.log();
  }
  // A name that is not a kernel of the source.
  try {
    (void)compile("no_such_kernel<int>");
    FAIL() << "no CompileError";
  } catch (const devctx::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("could not be instantiated"), std::string::npos) << e.what();
  }
  // Parameters runtime kernels cannot pass: a LayoutTensor does not compile; a struct compiles,
  // and its launch is refused.
  const devctx::Module forms(R"(#include <devctx/kernel.hpp>
#include <devctx/tensor.hpp>
struct Pair { int a; float b; };
DEVCTX_KERNEL void with_struct(Pair p, devctx::span<float> out) { out[0] = float(p.a) + p.b; }
DEVCTX_KERNEL void with_tensor(devctx::LayoutTensor<float, devctx::RowMajor<4, 4>> t) { t(0, 0) = 1.0f; }
)",
                             "forms.cpp");
  try {
    (void)ctx().compile_function(forms, "with_tensor");
    FAIL() << "no CompileError";
  } catch (const devctx::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("could not be instantiated"), std::string::npos) << e.what();
  }
  const auto with_struct = ctx().compile_function(forms, "with_struct");
  EXPECT_EQ(with_struct.params()[0].type, devctx::ScalarType::other);
  EXPECT_EQ(with_struct.params()[0].element_bytes, 8u);
  auto out = poisoned_buffer<float>(ctx(), 1);
  expect_error(devctx::Errc::invalid_argument, {"parameter 1", "Pair", "struct parameter"},
               [&] { ctx().enqueue_function(with_struct, cover(1), 1, out); });
  expect_error(devctx::Errc::invalid_argument, {"is not a kernel name"}, [&] { (void)compile("x; int y"); });
  expect_error(devctx::Errc::invalid_argument, {"empty"}, [] { devctx::Module m(""); });
}

// ---- the cache ------------------------------------------------------------------------------------

TEST_P(RuntimeKernels, CacheHitAndDamagedEntryRebuilt) {
  const TempCache cache;
  const devctx::Module m(kCourseSource, "cache_test.cpp", {"-DCACHE_TEST_TOKEN=" + std::to_string(rng())});
  const auto first = ctx().compile_function(m, "vector_add");
  EXPECT_EQ(first.load_kind(), devctx::LoadKind::compiled);
  const auto entries = cache.entries();
  ASSERT_EQ(entries.size(), 1u);
  struct stat st{};
  ASSERT_EQ(::stat(cache.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "the cache directory is user-only";
  ASSERT_EQ(::stat(entries[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "entries are user-only";

  const auto second = ctx().compile_function(m, "vector_add");
  EXPECT_EQ(second.load_kind(), devctx::LoadKind::cached);

  // Flip one byte in the middle of the entry, then truncate it: each is detected and rebuilt.
  for (const bool truncate : {false, true}) {
    std::string bytes;
    {
      std::ifstream in(entries[0], std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    ASSERT_GT(bytes.size(), 1000u);
    if (truncate)
      bytes.resize(bytes.size() / 2);
    else
      bytes[bytes.size() / 2] = char(bytes[bytes.size() / 2] ^ 0x5a);
    {
      std::ofstream out(entries[0], std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    const auto rebuilt = ctx().compile_function(m, "vector_add");
    EXPECT_EQ(rebuilt.load_kind(), devctx::LoadKind::compiled) << (truncate ? "truncated" : "altered");
    const std::size_t n = 3000;
    const auto a = devctx_test::random_vector<float>(rng, n, -5.f, 5.f);
    auto da = upload(ctx(), a);
    auto dc = poisoned_buffer<float>(ctx(), n);
    ctx().enqueue_function(rebuilt, cover(n), da, da, dc);
    const auto c = download(ctx(), dc);
    ctx().synchronize();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + a[i]) << i;
    EXPECT_EQ(ctx().compile_function(m, "vector_add").load_kind(), devctx::LoadKind::cached);
  }
}

TEST_P(RuntimeKernels, ReadOnlyOrDisabledCacheStillCompiles) {
  const TempCache cache;
  const devctx::Module m(kCourseSource, "readonly_test.cpp", {"-DCACHE_TEST_TOKEN=" + std::to_string(rng())});
  std::filesystem::permissions(cache.path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (::geteuid() != 0) {  // root writes anyway
    const auto f = ctx().compile_function(m, "saxpy<float>");
    EXPECT_EQ(f.load_kind(), devctx::LoadKind::compiled);
    EXPECT_TRUE(cache.entries().empty());
    const std::size_t n = 100;
    const auto x = devctx_test::random_vector<float>(rng, n, -5.f, 5.f);
    auto dx = upload(ctx(), x);
    auto dy = upload(ctx(), std::vector<float>(n, 1.0f));
    ctx().enqueue_function(f, cover(n), 2.0f, dx, dy);
    const auto y = download(ctx(), dy);
    ctx().synchronize();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 2.0f * x[i] + 1.0f) << i;
  }
  std::filesystem::permissions(cache.path, std::filesystem::perms::owner_all);
  const devctx_test::ScopedEnv off("DEVCTX_CACHE", "0");
  EXPECT_EQ(ctx().compile_function(m, "saxpy<float>").load_kind(), devctx::LoadKind::compiled);
  EXPECT_EQ(ctx().compile_function(m, "saxpy<float>").load_kind(), devctx::LoadKind::compiled);
  EXPECT_TRUE(cache.entries().empty());
}

TEST_P(RuntimeKernels, MissingCompilerSaysWhatToInstall) {
  const TempCache cache;
  const devctx::Module m(kCourseSource, "missing.cpp", {"-DCACHE_TEST_TOKEN=" + std::to_string(rng())});
  {
    // The host compiler, or nvcc where it was asked for instead of NVRTC.
    const devctx_test::ScopedEnv nvcc("DEVCTX_RT_CUDA_COMPILER", "nvcc");
    const devctx_test::ScopedEnv cxx(on_cpu() ? "DEVCTX_CXX" : "DEVCTX_NVCC", "/nonexistent/devctx-test-compiler");
    expect_error(devctx::Errc::not_available,
                 {"/nonexistent/devctx-test-compiler", "cannot be run", on_cpu() ? "apt install g++" : "nvcc",
                  on_cpu() ? "DEVCTX_CXX" : "DEVCTX_NVCC"},
                 [&] { (void)ctx().compile_function(m, "vector_add"); });
  }
  if (!on_cpu()) {
    // NVRTC, the default on CUDA (loaded when first used).
    const devctx_test::ScopedEnv nvrtc("DEVCTX_NVRTC", "/nonexistent/libnvrtc.so.13");
    expect_error(devctx::Errc::not_available,
                 {"NVRTC (/nonexistent/libnvrtc.so.13) cannot be loaded", "install the CUDA toolkit's NVRTC",
                  "DEVCTX_NVRTC", "DEVCTX_RT_CUDA_COMPILER=nvcc"},
                 [&] { (void)ctx().compile_function(m, "vector_add"); });
    const devctx_test::ScopedEnv bad("DEVCTX_RT_CUDA_COMPILER", "clang");
    expect_error(devctx::Errc::invalid_argument, {"DEVCTX_RT_CUDA_COMPILER=clang", "nvrtc", "nvcc"},
                 [&] { (void)ctx().compile_function(m, "vector_add"); });
  }
  EXPECT_TRUE(cache.entries().empty());
}

/// Started twice at once by ConcurrentProcessesCompileOneKernel (in other processes): compiles
/// and runs the kernel named by DEVCTX_RT_CHILD_TOKEN, printing how it was loaded.
TEST(RuntimeKernelsChild, CompileAndRun) {
  const char* token = std::getenv("DEVCTX_RT_CHILD_TOKEN");
  const char* backend = std::getenv("DEVCTX_RT_CHILD_API");
  if (token == nullptr || backend == nullptr) GTEST_SKIP() << "run by ConcurrentProcessesCompileOneKernel only";
  devctx::DeviceContext ctx(devctx::backend(backend).api, 0);
  const devctx::Module m(kCourseSource, "concurrent.cpp", {std::string("-DCACHE_TEST_TOKEN=") + token});
  const auto f = ctx.compile_function(m, "vector_add");
  std::printf("load=%s\n", devctx::to_string(f.load_kind()));
  const std::size_t n = 1000;
  std::vector<float> a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = float(i) * 0.25f;
  auto da = upload(ctx, a);
  auto dc = poisoned_buffer<float>(ctx, n);
  ctx.enqueue_function(f, cover(n), da, da, dc);
  const auto c = download(ctx, dc);
  ctx.synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + a[i]) << i;
}

TEST_P(RuntimeKernels, ConcurrentProcessesCompileOneKernel) {
  const TempCache cache;
  const std::string token = std::to_string(rng());
  const devctx_test::ScopedEnv t("DEVCTX_RT_CHILD_TOKEN", token.c_str());
  const devctx_test::ScopedEnv b("DEVCTX_RT_CHILD_API", on_cpu() ? "cpu" : "cuda");
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string filter = "--gtest_filter=RuntimeKernelsChild.CompileAndRun";
    char* argv[] = {const_cast<char*>(exe.c_str()), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, environ), 0);
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit status " << status;
  }
  ASSERT_EQ(cache.entries().size(), 1u);
  const devctx::Module m(kCourseSource, "concurrent.cpp", {"-DCACHE_TEST_TOKEN=" + token});
  EXPECT_EQ(ctx().compile_function(m, "vector_add").load_kind(), devctx::LoadKind::cached);
  for (const auto& e : std::filesystem::directory_iterator(cache.path))
    EXPECT_EQ(e.path().extension(), ".dck") << "a temporary file was left behind: " << e.path();
}

// ---- the fission translator on runtime-compiled sources (CPU) ------------------------------------

/// Whether devctx's configure step found the fission translator (tests/CMakeLists.txt).
constexpr bool kTranslatorBuilt = DEVCTX_TESTS_RT_FISSION != 0;

bool checking_everything() {
  const char* c = std::getenv("DEVCTX_CHECK");
  return c != nullptr && *c != '\0' && std::string(c) != "0";
}

/// The execution paths the trace recorded for the kernels launched by `launch`.
template <class F>
std::vector<std::string> traced_paths(devctx::DeviceContext& ctx, F&& launch) {
  ctx.synchronize();
  devctx::trace::clear();
  devctx::trace::start();
  launch();
  ctx.synchronize();
  std::vector<std::string> paths;
  for (const devctx::trace::Operation& op : devctx::trace::operations())
    if (op.kind == devctx::trace::Kind::kernel) paths.push_back(op.execution);
  devctx::trace::stop();
  devctx::trace::clear();
  return paths;
}

/// A CUDA-style reduction (shared memory, barriers in a loop) in a source of its own; its blocks
/// of 128 threads each write one float.
constexpr const char* kReductionSource = R"(#include <devctx/kernel.hpp>

// TOKEN
DEVCTX_KERNEL void tree_sum(devctx::span<const float> in, devctx::span<float> out) {
  DEVCTX_SHARED(float, tile, 128);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  tile[t] = i < in.size() ? in[i] * 1.5f : 0.0f;
  devctx::barrier();
  for (unsigned s = devctx::block_dim().x / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = tile[0];
}
)";

/// The kernel's result for one block, in its order of additions (so it is bitwise the same).
float host_tree_sum(const std::vector<float>& in, std::size_t block) {
  std::vector<float> tile(128);
  for (std::size_t t = 0; t < 128; ++t) {
    const std::size_t i = block * 128 + t;
    tile[t] = i < in.size() ? in[i] * 1.5f : 0.0f;
  }
  for (std::size_t s = 64; s > 0; s /= 2)
    for (std::size_t t = 0; t < s; ++t) tile[t] += tile[t + s];
  return tile[0];
}

devctx::Module reduction_module(std::uint64_t token) {
  std::string src = kReductionSource;
  src.replace(src.find("TOKEN"), 5, "token " + std::to_string(token));
  return devctx::Module(std::move(src), "tree_sum.cpp");
}

TEST_P(RuntimeKernels, CudaStyleReductionRunsTranslatedBitwiseAsOnFibers) {
  if (!on_cpu()) GTEST_SKIP() << "the fission translator is for the CPU backend";
  if (checking_everything()) GTEST_SKIP() << "DEVCTX_CHECK=1: every launch is checked, none runs a twin";
  const TempCache cache;
  const devctx::Module m = reduction_module(rng());
  const auto f = ctx().compile_function(m, "tree_sum");
  EXPECT_EQ(f.load_kind(), devctx::LoadKind::compiled);
  const std::size_t n = 128 * 45 + 77, blocks = (n + 127) / 128;
  const auto in = devctx_test::random_vector<float>(rng, n, -100.f, 100.f);
  auto din = upload(ctx(), in);
  auto twin = poisoned_buffer<float>(ctx(), blocks);
  auto fibers = poisoned_buffer<float>(ctx(), blocks);
  const auto translated_paths = traced_paths(ctx(), [&] { ctx().enqueue_function(f, cover(n, 128), din, twin); });
  const auto fiber_paths = traced_paths(ctx(), [&] {
    const devctx_test::ScopedEnv off("DEVCTX_CPU_FISSION", "0");
    ctx().enqueue_function(f, cover(n, 128), din, fibers);
  });
  ASSERT_EQ(translated_paths.size(), 1u);
  ASSERT_EQ(fiber_paths.size(), 1u);
  if (kTranslatorBuilt) {
    EXPECT_EQ(translated_paths[0].rfind("translated: the kernel's block-level twin ran every block", 0), 0u)
        << translated_paths[0];
  } else {
    EXPECT_NE(translated_paths[0].find("not translated: the fission translator did not run on this runtime-compiled "
                                       "source (the translator was off when devctx was built"),
              std::string::npos)
        << translated_paths[0];
  }
  EXPECT_NE(fiber_paths[0].find("DEVCTX_CPU_FISSION=0 turned translated twins off"), std::string::npos) << fiber_paths[0];
  const auto a = download(ctx(), twin);
  const auto b = download(ctx(), fibers);
  ctx().synchronize();
  for (std::size_t k = 0; k < blocks; ++k) {
    ASSERT_EQ(std::memcmp(&a[k], &b[k], sizeof(float)), 0) << "block " << k << ": " << a[k] << " vs " << b[k];
    const float expected = host_tree_sum(in, k);
    ASSERT_EQ(std::memcmp(&a[k], &expected, sizeof(float)), 0) << "block " << k << ": " << a[k] << " vs " << expected;
  }
  // A cached load runs translated too: the reason (or its absence) is in the kernel's code.
  const auto again = ctx().compile_function(m, "tree_sum");
  EXPECT_EQ(again.load_kind(), devctx::LoadKind::cached);
  auto cached_out = poisoned_buffer<float>(ctx(), blocks);
  const auto cached_paths = traced_paths(ctx(), [&] { ctx().enqueue_function(again, cover(n, 128), din, cached_out); });
  ASSERT_EQ(cached_paths.size(), 1u);
  EXPECT_EQ(cached_paths[0].rfind("translated: ", 0) == 0, kTranslatorBuilt) << cached_paths[0];
  const auto c = download(ctx(), cached_out);
  ctx().synchronize();
  for (std::size_t k = 0; k < blocks; ++k) ASSERT_EQ(std::memcmp(&a[k], &c[k], sizeof(float)), 0) << k;
}

/// A stand-in for the translator's Python, run as `<it> <script> --input I --output O --summary S
/// ...`: writes `output` (or nothing) and a summary line, and exits with `status`.
std::filesystem::path fake_translator(const std::filesystem::path& dir, const std::string& output, int status) {
  const std::filesystem::path script = dir / ("fake-python-" + std::to_string(status) + ".sh");
  std::ofstream f(script);
  f << "#!/bin/sh\nout=; summary=\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n    --output) out=$2; shift;;\n"
       "    --summary) summary=$2; shift;;\n  esac\n  shift\ndone\n";
  if (!output.empty()) f << "printf '%s\\n' '" << output << "' > \"$out\"\n";
  f << "printf 'translated\\ttree_sum\\t\\n' > \"$summary\"\nexit " << status << "\n";
  f.close();
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return script;
}

TEST_P(RuntimeKernels, TranslatorOffOrBrokenStillCompilesAndSaysWhy) {
  if (!on_cpu()) GTEST_SKIP() << "the fission translator is for the CPU backend";
  if (checking_everything()) GTEST_SKIP() << "DEVCTX_CHECK=1: every launch is checked, none runs a twin";
  const TempCache cache;
  const std::uint64_t token = rng();
  const std::size_t n = 128 * 9 + 5, blocks = (n + 127) / 128;
  const auto in = devctx_test::random_vector<float>(rng, n, -100.f, 100.f);
  auto din = upload(ctx(), in);
  // A translator whose copy does not compile, one that fails, one that cannot be run, and off.
  const std::string broken = fake_translator(cache.path, "#error a translation g++ refuses", 0).string();
  const std::string failing = fake_translator(cache.path, "", 3).string();
  struct Case {
    std::vector<std::pair<const char*, std::string>> env;
    const char* why;
  };
  const Case cases[] = {
      {{{"DEVCTX_RT_FISSION", "0"}}, "DEVCTX_RT_FISSION=0 turned the translator off"},
      {{{"DEVCTX_FISSION_PYTHON", "/nonexistent/devctx-test-python"}, {"DEVCTX_FISSION_RESOURCE_DIR", "/"}},
       "did not run on this runtime-compiled source (/nonexistent/devctx-test-python cannot be run"},
      {{{"DEVCTX_FISSION_PYTHON", failing}, {"DEVCTX_FISSION_RESOURCE_DIR", "/"}}, "stopped with status 3"},
      {{{"DEVCTX_FISSION_PYTHON", broken}, {"DEVCTX_FISSION_RESOURCE_DIR", "/"}},
       "the fission translator's copy of this runtime-compiled source did not compile, so it was compiled as written"},
  };
  for (const Case& c : cases) {
    std::vector<std::unique_ptr<devctx_test::ScopedEnv>> env;
    for (const auto& [name, value] : c.env)
      env.push_back(std::make_unique<devctx_test::ScopedEnv>(name, value.c_str()));
    const std::string label = std::string(c.env[0].first) + "=" + c.env[0].second;
    const devctx::Module m = reduction_module(token);
    const auto f = ctx().compile_function(m, "tree_sum");
    EXPECT_EQ(f.load_kind(), devctx::LoadKind::compiled) << label << ": the translator is part of the cache key";
    auto out = poisoned_buffer<float>(ctx(), blocks);
    const auto paths = traced_paths(ctx(), [&] { ctx().enqueue_function(f, cover(n, 128), din, out); });
    ASSERT_EQ(paths.size(), 1u);
    EXPECT_NE(paths[0].rfind("translated: ", 0), 0u) << paths[0];
    EXPECT_NE(paths[0].find(c.why), std::string::npos) << label << ": " << paths[0];
    const auto got = download(ctx(), out);
    ctx().synchronize();
    for (std::size_t k = 0; k < blocks; ++k) {
      const float expected = host_tree_sum(in, k);
      ASSERT_EQ(std::memcmp(&got[k], &expected, sizeof(float)), 0) << label << " block " << k;
    }
  }
}

// ---- checking mode (CPU) --------------------------------------------------------------------------

TEST_P(RuntimeKernels, CheckingModeSeesTheSpans) {
  if (!on_cpu()) GTEST_SKIP() << "checking mode runs on the CPU backend";
  devctx::DeviceContext checked(devctx::Api::cpu, 0, {.check = true});
  const auto f = checked.compile_function(module_, "vector_add");
  const std::size_t n = 300;
  const auto a = devctx_test::random_vector<float>(rng, n, -5.f, 5.f);
  auto da = upload(checked, a);
  auto dc = poisoned_buffer<float>(checked, n);
  // One thread too many per block is fine (the kernel tests i < c.size()); the result is checked.
  checked.enqueue_function(f, cover(n, 64), da, da, dc);
  const auto c = download(checked, dc);
  checked.synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + a[i]) << i;
}

DEVCTX_INSTANTIATE_BACKEND_TESTS(RuntimeKernels);

}  // namespace
