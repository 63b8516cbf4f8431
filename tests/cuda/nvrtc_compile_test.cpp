// SPDX-License-Identifier: Apache-2.0
// tests/cuda/nvrtc_compile_test.cpp - runtime-compiled CUDA kernels through NVRTC, without a GPU
// (NVRTC needs none): the course's kernels and every kernel-side header compile to a cubin that
// holds the entry devctx launches and the exact signature text it reads back (the same text nvcc
// writes); compile errors carry the user's own line numbers; the compiler choice, a missing
// NVRTC and NVRTC's part of the cache key. Launching these kernels on a GPU is
// tests/runtime_kernels_test.cpp's work (devctx_runtime_kernels_tests_cuda, NVRTC by default).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <devctx/error.hpp>
#include <devctx/module.hpp>

#include "runtime/nvrtc.hpp"
#include "runtime/toolchain.hpp"
#include "support/runtime_course_kernels.hpp"

namespace {

namespace rt = devctx::detail::rt;

/// The architecture the cubins are built for (the H100 and H200 the GPU tests run on).
constexpr const char* kArch = "sm_90";

/// Sets (or, for null, unsets) an environment variable for its lifetime.
class Env {
 public:
  Env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~Env() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

/// The cubin of kernel `name` of `module`, compiled as compile_function compiles it (the same
/// generated translation unit), by the compiler DEVCTX_RT_CUDA_COMPILER selects.
std::string cubin_of(const devctx::Module& module, std::string_view name) {
  const std::string tu = rt::wrapper_source(module, name, rt::Target::cuda, module.source(), "");
  return rt::compile(rt::Target::cuda, tu, module, name, std::filesystem::temp_directory_path(), kArch, false);
}

bool holds(const std::string& bytes, std::string_view what) { return bytes.find(what) != std::string::npos; }

/// The signature text stored in the cubin (devctx_rt_signature's bytes), or "".
std::string signature_in(const std::string& cubin) {
  const std::size_t at = cubin.find("devctx-signature ");
  if (at == std::string::npos) return {};
  return std::string(cubin.c_str() + at);  // null-terminated in the cubin
}

/// A cubin for the GPU: an ELF file of machine EM_CUDA (190) holding devctx's entry and signature.
void expect_cubin(const std::string& cubin, const std::string& signature, const char* kernel) {
  SCOPED_TRACE(kernel);
  ASSERT_GT(cubin.size(), 64u);
  EXPECT_EQ(cubin.compare(0, 4, "\177ELF"), 0);
  EXPECT_EQ(static_cast<unsigned char>(cubin[18]) | static_cast<unsigned char>(cubin[19]) << 8, 190);
  EXPECT_TRUE(holds(cubin, std::string_view("devctx_rt_kernel\0", 17))) << "no entry symbol";
  EXPECT_TRUE(holds(cubin, std::string_view("devctx_rt_signature\0", 20))) << "no signature symbol";
  EXPECT_EQ(signature_in(cubin), signature);
}

std::string signature_text(const char* block, std::vector<const char*> params) {
  std::string s = std::string("devctx-signature ") + std::to_string(rt::kAbiVersion) + "\nblock " + block +
                  "\nparams " + std::to_string(params.size()) + "\n";
  for (const char* p : params) s += std::string(p) + "\n";
  return s;
}

// ---- the course's kernels -------------------------------------------------------------------------

TEST(NvrtcCompile, CourseKernelsGiveCubinsWithTheEntryAndSignature) {
  const Env compiler("DEVCTX_RT_CUDA_COMPILER", nullptr);  // the default: NVRTC
  ASSERT_EQ(rt::cuda_compiler(), rt::CudaCompiler::nvrtc);
  const devctx::Module course(devctx_test::kCourseSource, "course.cpp");
  const char* span_cf = "p 10 1 4 16 8 devctx::span<const float>";
  const char* span_f = "p 10 0 4 16 8 devctx::span<float>";
  const struct {
    const char* name;
    std::string signature;
  } kernels[] = {
      {"vector_add", signature_text("0", {span_cf, span_cf, span_f})},
      {"saxpy<float>", signature_text("0", {"s 10 0 4 4 4 float", span_cf, span_f})},
      {"saxpy<double>", signature_text("0", {"s 11 0 8 8 8 double", "p 11 1 8 16 8 devctx::span<const double>",
                                             "p 11 0 8 16 8 devctx::span<double>"})},
      {"map2d", signature_text("0", {"r 10 1 4 16 8 const float *", "r 10 0 4 16 8 float *", "s 4 0 4 4 4 int",
                                     "s 4 0 4 4 4 int", "s 10 0 4 4 4 float"})},
      {"block_sum", signature_text("0", {"p 11 1 8 16 8 devctx::span<const double>", "p 11 0 8 16 8 devctx::span<double>"})},
      {"warp_sums", signature_text("0", {"p 4 1 4 16 8 devctx::span<const int>", "p 4 0 4 16 8 devctx::span<int>"})},
      {"matmul", signature_text("0", {span_cf, span_cf, span_f, "s 8 0 4 4 4 unsigned int", "s 8 0 4 4 4 unsigned int",
                                      "s 8 0 4 4 4 unsigned int"})},
  };
  for (const auto& k : kernels) expect_cubin(cubin_of(course, k.name), k.signature, k.name);
}

TEST(NvrtcCompile, SignatureAgreesWithNvcc) {
  // nvcc is the fallback compiler: both must write the same signature (types spelled the same,
  // std::uint64_t included), so that a kernel's checks do not depend on which compiled it.
  const devctx::Module m(R"(#include <devctx/kernel.hpp>
DEVCTX_KERNEL void mixed(const float* in, devctx::span<std::uint64_t> out, std::int64_t k, unsigned char c, bool b) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = std::uint64_t(in[i]) + std::uint64_t(k) + c + b;
}
)",
                         "mixed.cpp");
  std::string nvrtc_cubin, nvcc_cubin;
  {
    const Env compiler("DEVCTX_RT_CUDA_COMPILER", "nvrtc");
    nvrtc_cubin = cubin_of(m, "mixed");
  }
  // The C++ types as the CUDA front end (the same in nvcc and NVRTC) spells them: std::int64_t
  // is glibc's `signed long int`; CUDA's `__nv_bool` is written `bool`, as the user wrote it.
  const std::string expected = signature_text("0", {"r 10 1 4 16 8 const float *",
                                                    "p 9 0 8 16 8 devctx::span<unsigned long>", "s 5 0 8 8 8 signed long",
                                                    "s 6 0 1 1 1 unsigned char", "s 1 0 1 1 1 bool"});
  expect_cubin(nvrtc_cubin, expected, "mixed (NVRTC)");
  const Env compiler("DEVCTX_RT_CUDA_COMPILER", "nvcc");
  try {
    nvcc_cubin = cubin_of(m, "mixed");
  } catch (const devctx::Error& e) {
    if (e.code() == devctx::Errc::not_available) GTEST_SKIP() << "no nvcc here: " << e.what();
    throw;
  }
  expect_cubin(nvcc_cubin, expected, "mixed (nvcc)");
}

// ---- what a kernel source may include ---------------------------------------------------------------

TEST(NvrtcCompile, EveryKernelSideHeaderCompiles) {
  const devctx::Module m(R"(#include <devctx/kernel.hpp>
#include <devctx/collectives.hpp>
#include <devctx/print.hpp>
#include <devctx/tensor.hpp>
static_assert(std::is_same_v<std::uint64_t, unsigned long> && std::is_same_v<std::size_t, unsigned long>);
static_assert(std::numeric_limits<int>::max() == 2147483647);

DEVCTX_KERNEL void collectives(devctx::span<const float> in, devctx::span<float> out, unsigned long long* count) {
  const std::size_t i = devctx::global_idx().x;
  const float v = i < in.size() ? in[i] : 0.0f;
  const float s = devctx::block_sum(v);
  const int p = devctx::warp_prefix_sum<devctx::Scan::exclusive>(int(v));
  devctx::atomic_add(count, 1ull);
  devctx::atomic_max(&out[0], devctx::warp_max(v));
  if (i == 0) {
    out[1] = s;
    devctx::printf("sum %f prefix %d\n", s, p);
  }
}

DEVCTX_KERNEL void block_level(devctx::Block b, devctx::span<const float> in, devctx::span<float> out) {
  DEVCTX_SHARED(float, s, 256);
  b.for_each_thread([&](devctx::Thread t) {
    const auto i = b.global_idx(t).x;
    s[t.x] = i < in.size() ? in[i] : 0.0f;
  });
  for (unsigned stride = b.dim().x / 2; stride > 0; stride /= 2)
    b.for_first_threads(stride, [&](devctx::Thread t) { s[t.x] += s[t.x + stride]; });
  b.single([&] { out[b.idx().x] = s[0] + float(devctx::dynamic_shared<float>().size()); });
}

using Tile = devctx::RowMajor<4, 4>;
DEVCTX_KERNEL void tensors(devctx::span<float> data) {
  devctx::LayoutTensor<float, Tile> t(data.data());
  t(1, 2) = float(t.extent(0));
}

struct Pair { int a; float b; };
DEVCTX_KERNEL void with_struct(Pair p, devctx::span<float> out) { out[0] = float(p.a) + p.b; }
)",
                         "headers.cpp");
  const char* span_cf = "p 10 1 4 16 8 devctx::span<const float>";
  const char* span_f = "p 10 0 4 16 8 devctx::span<float>";
  expect_cubin(cubin_of(m, "collectives"), signature_text("0", {span_cf, span_f, "r 9 0 8 16 8 unsigned long long *"}),
               "collectives");
  expect_cubin(cubin_of(m, "block_level"), signature_text("1", {span_cf, span_f}), "block_level");
  expect_cubin(cubin_of(m, "tensors"), signature_text("0", {span_f}), "tensors");
  expect_cubin(cubin_of(m, "with_struct"), signature_text("0", {"s 0 0 8 8 4 Pair", span_f}), "with_struct");
}

TEST(NvrtcCompile, HostOptimisationLevelsAreDroppedOtherOptionsPassed) {
  // -O3 is the host compiler's (and nvcc's host code's); NVRTC refuses it and optimises device
  // code fully anyway, so a module's options work on the CPU and on CUDA alike. Span and tensor
  // bounds checks (DEVCTX_CHECK_BOUNDS: printf and __trap on the GPU) compile under NVRTC too.
  const devctx::Module m(R"(#include <devctx/kernel.hpp>
#include <devctx/tensor.hpp>
static_assert(SCALE == 3, "-DSCALE=3 reached the compiler");
#if !defined(DEVCTX_CHECK_BOUNDS)
#error "-DDEVCTX_CHECK_BOUNDS did not reach the compiler"
#endif
DEVCTX_KERNEL void scale(devctx::span<float> y) {
  y[devctx::global_idx().x] *= SCALE;
  devctx::LayoutTensor<float, devctx::RowMajor<2, 2>> t(y.data());
  t(1, 1) += 1.0f;
}
)",
                         "options.cpp", {"-O3", "-DSCALE=3", "-DDEVCTX_CHECK_BOUNDS"});
  expect_cubin(cubin_of(m, "scale"), signature_text("0", {"p 10 0 4 16 8 devctx::span<float>"}), "scale");
}

// ---- compile errors -------------------------------------------------------------------------------

/// The CompileError compiling kernel `name` of `module` throws (fails the test when none).
devctx::CompileError compile_error(const devctx::Module& module, const char* name) {
  try {
    (void)cubin_of(module, name);
  } catch (const devctx::CompileError& e) {
    return e;
  }
  ADD_FAILURE() << "no CompileError for " << name;
  return devctx::CompileError("", "");
}

TEST(NvrtcCompile, SyntaxErrorsReportTheUsersLines) {
  const devctx::Module broken(R"(#include <devctx/kernel.hpp>

DEVCTX_KERNEL void broken(devctx::span<float> y) {
  y[0] = undeclared_name + 1;
}
)",
                              "broken.cpp");
  const devctx::CompileError e = compile_error(broken, "broken");
  const std::string what = e.what();
  EXPECT_EQ(e.code(), devctx::Errc::compile_failed);
  EXPECT_NE(what.find("compile_function(\"broken\") of broken.cpp: NVRTC failed"), std::string::npos) << what;
  EXPECT_NE(what.find("broken.cpp(4): error"), std::string::npos) << what;
  EXPECT_NE(what.find(">    4 |   y[0] = undeclared_name + 1;"), std::string::npos) << what;
  EXPECT_NE(e.log().find("undeclared_name"), std::string::npos) << e.log();

  // Deeper in a longer source, after a template, with several errors: each at its own line.
  const devctx::Module later(R"(#include <devctx/kernel.hpp>

template <class T>
DEVCTX_DEVICE T twice(T v) { return v + v; }

DEVCTX_KERNEL void fine(devctx::span<float> y) { y[0] = twice(y[0]); }

// line 8
DEVCTX_KERNEL void later(devctx::span<float> y) {
  const std::size_t i = devctx::global_idx().x;
  y[i] = twice(y[i]);
  y[i] += missing_one;
  y[i] += missing_two;
}
)",
                             "later.cpp");
  const std::string what2 = compile_error(later, "later").what();
  EXPECT_NE(what2.find("later.cpp(12): error"), std::string::npos) << what2;
  EXPECT_NE(what2.find(">   12 |   y[i] += missing_one;"), std::string::npos) << what2;
  EXPECT_NE(what2.find("later.cpp(13): error"), std::string::npos) << what2;
  EXPECT_NE(what2.find(">   13 |   y[i] += missing_two;"), std::string::npos) << what2;
}

TEST(NvrtcCompile, NotAKernelAndUnpassableParametersCannotBeInstantiated) {
  const devctx::Module course(devctx_test::kCourseSource, "course.cpp");
  EXPECT_NE(std::string(compile_error(course, "no_such_kernel<int>").what()).find("could not be instantiated"),
            std::string::npos);
  EXPECT_NE(std::string(compile_error(course, "saxpy").what()).find("could not be instantiated"), std::string::npos);
  const devctx::Module forms(R"(#include <devctx/kernel.hpp>
#include <devctx/tensor.hpp>
DEVCTX_KERNEL void with_tensor(devctx::LayoutTensor<float, devctx::RowMajor<4, 4>> t) { t(0, 0) = 1.0f; }
)",
                             "forms.cpp");
  EXPECT_NE(std::string(compile_error(forms, "with_tensor").what()).find("could not be instantiated"), std::string::npos);
}

TEST(NvrtcCompile, HostStandardHeadersAreNotThere) {
  // NVRTC compiles device code alone, without a C++ standard library: a host header is a
  // CompileError at the user's line naming the header (docs/runtime-kernels.md).
  const devctx::Module m(R"(#include <devctx/kernel.hpp>
#include <vector>
DEVCTX_KERNEL void k(devctx::span<float> y) { y[0] = 1; }
)",
                         "host_header.cpp");
  const std::string what = compile_error(m, "k").what();
  EXPECT_NE(what.find("host_header.cpp(2)"), std::string::npos) << what;
  EXPECT_NE(what.find("\"vector\""), std::string::npos) << what;
  EXPECT_NE(what.find(">    2 | #include <vector>"), std::string::npos) << what;
  EXPECT_NE(what.find("has no host C++ standard library"), std::string::npos) << what;
  EXPECT_NE(what.find("DEVCTX_RT_CUDA_COMPILER=nvcc"), std::string::npos) << what;
}

// ---- which compiler, a missing NVRTC, the cache key -------------------------------------------------

TEST(NvrtcCompile, CompilerChoiceAndItsIdentity) {
  {
    const Env compiler("DEVCTX_RT_CUDA_COMPILER", "NVRTC");
    EXPECT_EQ(rt::cuda_compiler(), rt::CudaCompiler::nvrtc);
  }
  std::string nvrtc_id, nvcc_id;
  {
    const Env compiler("DEVCTX_RT_CUDA_COMPILER", "");
    EXPECT_EQ(rt::cuda_compiler(), rt::CudaCompiler::nvrtc);
    nvrtc_id = rt::compiler_identity(rt::Target::cuda);
  }
  {
    const Env compiler("DEVCTX_RT_CUDA_COMPILER", "nvcc");
    EXPECT_EQ(rt::cuda_compiler(), rt::CudaCompiler::nvcc);
    nvcc_id = rt::compiler_identity(rt::Target::cuda);
  }
  // NVRTC's version is in its identity (and so in every cache key), and it differs from nvcc's.
  EXPECT_EQ(nvrtc_id.rfind("nvrtc ", 0), 0u) << nvrtc_id;
  EXPECT_NE(nvrtc_id.find("libnvrtc"), std::string::npos) << nvrtc_id;
  EXPECT_NE(nvrtc_id, nvcc_id);
  {
    const Env compiler("DEVCTX_RT_CUDA_COMPILER", "clang");
    try {
      (void)rt::cuda_compiler();
      ADD_FAILURE() << "no Error";
    } catch (const devctx::Error& e) {
      EXPECT_EQ(e.code(), devctx::Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("DEVCTX_RT_CUDA_COMPILER=clang"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("use nvrtc (the default) or nvcc"), std::string::npos) << e.what();
    }
  }
}

TEST(NvrtcCompile, MissingNvrtcSaysWhatToInstall) {
  const Env compiler("DEVCTX_RT_CUDA_COMPILER", nullptr);
  const Env library("DEVCTX_NVRTC", "/nonexistent/devctx-test/libnvrtc.so.13");
  const devctx::Module m(devctx_test::kCourseSource, "course.cpp");
  for (int step = 0; step < 2; ++step) {  // the identity (cache key) first, then the compile itself
    try {
      if (step == 0)
        (void)rt::compiler_identity(rt::Target::cuda);
      else
        (void)cubin_of(m, "vector_add");
      ADD_FAILURE() << "no Error";
    } catch (const devctx::Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), devctx::Errc::not_available) << what;
      for (const char* part : {"NVRTC (/nonexistent/devctx-test/libnvrtc.so.13) cannot be loaded",
                               "install the CUDA toolkit's NVRTC", "DEVCTX_NVRTC", "DEVCTX_RT_CUDA_COMPILER=nvcc"})
        EXPECT_NE(what.find(part), std::string::npos) << part << " not in: " << what;
    }
  }
}

}  // namespace
