// SPDX-License-Identifier: Apache-2.0
// Layouts and tensors at the limits of std::size_t (issue 25, defect 1): extents whose size,
// strides or span would wrap around past 2^64 are refused where the layout is made and at
// devctx::tensor(), with Error(size_mismatch) naming the extents; extents just inside the limits
// are exact; nothing is enqueued and the context stays usable (a real kernel runs over a
// poisoned buffer afterwards and every element is checked), on every backend and for the host
// forms (HostBuffer, std::span, a LayoutTensor over a pointer).
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <devctx/devctx.hpp>

#include "support/test_support.hpp"

namespace {

using devctx::ColMajor;
using devctx::dyn;
using devctx::Errc;
using devctx::LayoutTensor;
using devctx::RowMajor;
using devctx::Strided;
using devctx_test::BackendTest;
using devctx_test::download;
using devctx_test::error_of;

using u32 = std::uint32_t;
using Mat = RowMajor<dyn, dyn>;
using MatC = ColMajor<dyn, dyn>;
using Cube = RowMajor<dyn, dyn, dyn>;
using CubeC = ColMajor<dyn, dyn, dyn>;

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
constexpr std::size_t k32 = std::size_t{1} << 32;
constexpr std::size_t k62 = std::size_t{1} << 62;
constexpr std::size_t k63 = std::size_t{1} << 63;

/// Expects `f` to throw Error(code) whose message holds every fragment.
template <class F>
void expect_refused(F&& f, Errc code, std::initializer_list<std::string> fragments) {
  const auto e = error_of(f);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), code) << e->what();
  for (const std::string& fragment : fragments)
    EXPECT_NE(std::string(e->what()).find(fragment), std::string::npos) << e->what();
}

const std::string kWraps = "is more than a 64-bit size can count";

// ---- layouts alone, on the host -------------------------------------------------------------------

TEST(LayoutLimits, DynamicExtentsWhoseSizeWrapsAreRefused) {
  // The issue's case: 2^62 x 4 = 2^64 wraps to 0.
  expect_refused([] { (void)Mat(k62, 4); }, Errc::size_mismatch,
                 {"devctx::RowMajor layout with extents (4611686018427387904, 4)", "its size", kWraps});
  expect_refused([] { (void)MatC(4, k62); }, Errc::size_mismatch,
                 {"devctx::ColMajor layout with extents (4, 4611686018427387904)"});
  // 2^32 x 2^32 = 2^64; 2^63 x 2; (2^63 + 8) x 2 wraps to 16; SIZE_MAX x SIZE_MAX.
  expect_refused([] { (void)Mat(k32, k32); }, Errc::size_mismatch, {"(4294967296, 4294967296)", kWraps});
  expect_refused([] { (void)Mat(k63, 2); }, Errc::size_mismatch, {"(9223372036854775808, 2)"});
  expect_refused([] { (void)MatC(k63 + 8, 2); }, Errc::size_mismatch, {"(9223372036854775816, 2)"});
  expect_refused([] { (void)Mat(kMax, kMax); }, Errc::size_mismatch, {"(18446744073709551615, 18446744073709551615)"});
  // Rank 3: each pair fits, the three do not.
  expect_refused([] { (void)Cube(1u << 22, 1u << 21, 1u << 21); }, Errc::size_mismatch, {"(4194304, 2097152, 2097152)"});
  expect_refused([] { (void)CubeC(3, k62, 2); }, Errc::size_mismatch, {"devctx::ColMajor", "(3, 4611686018427387904, 2)"});
  expect_refused([] { (void)Strided<dyn, dyn>(k32 + 1, k32 - 1 + 2); }, Errc::size_mismatch, {"devctx::Strided"});
  // Static extents mixed with dynamic ones: 2^54 x 1024 = 2^64.
  expect_refused([] { (void)RowMajor<dyn, 1024>(std::size_t{1} << 54); }, Errc::size_mismatch,
                 {"(18014398509481984, 1024)"});
  expect_refused([] { (void)ColMajor<2, dyn, 4>(std::size_t{1} << 61); }, Errc::size_mismatch,
                 {"(2, 2305843009213693952, 4)"});
  // A negative count converted to std::size_t.
  expect_refused([] { (void)Mat(-1, 2); }, Errc::size_mismatch, {"(18446744073709551615, 2)"});
}

TEST(LayoutLimits, StridesThatWrapAreRefusedEvenWhenTheLayoutIsEmpty) {
  // 0 x 2^40 x 2^40 holds no element, but the stride of dimension 0 would be 2^80.
  expect_refused([] { (void)Cube(0, std::size_t{1} << 40, std::size_t{1} << 40); }, Errc::size_mismatch,
                 {"(0, 1099511627776, 1099511627776)", "the stride of dimension 0", kWraps});
  expect_refused([] { (void)CubeC(std::size_t{1} << 40, std::size_t{1} << 40, 0); }, Errc::size_mismatch,
                 {"the stride of dimension 2"});
  // The same extents in the other order need no large stride: accepted, size 0.
  const Cube r(std::size_t{1} << 40, std::size_t{1} << 40, 0);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.span_size(), 0u);
  EXPECT_EQ(r.stride(0), 0u);
  const CubeC c(0, std::size_t{1} << 40, std::size_t{1} << 40);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.stride(2), 0u);
  // A zero extent makes the size 0 however large the others are (the product is not taken
  // pairwise), in a layout made from its extents, from parts, and at tensor() (found by
  // devctx_fuzz_diff seed 1).
  const Cube w(15, kMax - 1, 0);
  EXPECT_EQ(w.size(), 0u);
  EXPECT_EQ((Strided<dyn, dyn>::from_parts({kMax, 0}, {kMax, kMax}).size()), 0u);
  std::vector<float> none;
  EXPECT_EQ(devctx::tensor(std::span<float>(none), w).size(), 0u);
  // A zero extent with the largest stride that fits.
  const Mat z(0, kMax);
  EXPECT_EQ(z.size(), 0u);
  EXPECT_EQ(z.stride(0), kMax);
  EXPECT_EQ(z.span_size(), 0u);
}

TEST(LayoutLimits, ExtentsJustInsideTheLimitsAreExact) {
  const Mat a(k32, k32 - 1);  // 2^64 - 2^32
  EXPECT_EQ(a.size(), kMax - (k32 - 1));
  EXPECT_EQ(a.span_size(), a.size());
  EXPECT_EQ(a.stride(0), k32 - 1);
  EXPECT_TRUE(a.is_contiguous());
  const Mat b(k63, 1);
  EXPECT_EQ(b.size(), k63);
  const MatC c(1, kMax);
  EXPECT_EQ(c.size(), kMax);
  EXPECT_EQ(c.span_size(), kMax);
  EXPECT_EQ(c.stride(1), 1u);
  EXPECT_EQ(c.offset({0, kMax - 1}), kMax - 1);
  const Cube d(3, 5, 1229782938247303441u);  // 15 x 1229782938247303441 = 2^64 - 1
  EXPECT_EQ(d.size(), kMax);
  EXPECT_EQ(d.offset({2, 4, 1229782938247303440u}), kMax - 1);
  const RowMajor<dyn, 1024> e((std::size_t{1} << 54) - 1);
  EXPECT_EQ(e.size(), kMax - 1023);
  // Static layouts at the limit compile and are exact.
  static_assert(RowMajor<k32, k32 - 1>{}.size() == kMax - (k32 - 1));
  static_assert(ColMajor<3, 5, 1229782938247303441u>{}.span_size() == kMax);
  static_assert(RowMajor<0, kMax - 1>{}.stride(0) == kMax - 1);  // (kMax itself is dyn)
}

TEST(LayoutLimits, FromPartsRefusesSizesAndSpansThatWrap) {
  using S2 = Strided<dyn, dyn>;
  // A broadcast (stride 0) of 2^33 x 2^33 elements reaches one element but has 2^66.
  expect_refused([] { (void)S2::from_parts({k32 * 2, k32 * 2}, {0, 0}); }, Errc::size_mismatch,
                 {"devctx::Strided layout with extents (8589934592, 8589934592) and strides (0, 0)", "its size", kWraps});
  // 3 x 2 elements whose last one lies at 2 * 2^63 + 1: the span wraps to 2.
  expect_refused([] { (void)S2::from_parts({3, 2}, {k63, 1}); }, Errc::size_mismatch,
                 {"(3, 2) and strides (9223372036854775808, 1)", "its span", kWraps});
  expect_refused([] { (void)S2::from_parts({2, 2}, {kMax, 1}); }, Errc::size_mismatch, {"its span"});
  // Row-major: the stride of the last dimension is the constant 1, whatever is given.
  expect_refused([] { (void)Mat::from_parts({2, 2}, {kMax, 99}); }, Errc::size_mismatch,
                 {"strides (18446744073709551615, 1)"});
  // An extent that contradicts a static one.
  expect_refused([] { (void)RowMajor<4, dyn>::from_parts({5, 3}, {3, 1}); }, Errc::invalid_argument,
                 {"devctx::RowMajor::from_parts: extent 0 is given as 5 but the layout's static extent 0 is 4"});
  // Just inside: the last element at 2^64 - 2.
  const auto ok = S2::from_parts({2, 2}, {kMax - 2, 0});
  EXPECT_EQ(ok.span_size(), kMax - 1);
  EXPECT_EQ(ok.size(), 4u);
  EXPECT_EQ(S2::from_parts({0, 5}, {kMax, kMax}).span_size(), 0u);
}

TEST(LayoutLimits, HostFormsRefuseTheLayoutAndKeepTheMemory) {
  std::vector<float> v(100, 1.5f);
  const std::span<float> mem(v);
  expect_refused([&] { (void)devctx::tensor(mem, Mat(k62, 4)); }, Errc::size_mismatch,
                 {"(4611686018427387904, 4)", kWraps});
  expect_refused([&] { (void)LayoutTensor<float, Mat>(v.data(), k62, 4); }, Errc::size_mismatch,
                 {"(4611686018427387904, 4)"});
  expect_refused([&] { (void)LayoutTensor<float, CubeC>(v.data(), 2, k63, 2); }, Errc::size_mismatch, {"devctx::ColMajor"});
  // Representable but far larger than the memory: the extents and the exact span are named.
  expect_refused([&] { (void)devctx::tensor(mem, Mat(k32, k32 - 1)); }, Errc::size_mismatch,
                 {"tensor over a std::span: its layout (devctx::RowMajor with extents (4294967296, 4294967295) and strides "
                  "(4294967295, 1)) reaches 18446744069414584320 elements but the memory holds 100"});
  expect_refused([&] { (void)devctx::tensor(mem.subspan(10, 20), MatC(5, 5)); }, Errc::size_mismatch,
                 {"reaches 25 elements but the memory holds 20"});
  // Zero extents fit any memory, even none.
  const auto empty = devctx::tensor(mem.subspan(0, 0), Mat(0, kMax));
  EXPECT_EQ(empty.size(), 0u);
  for (const float x : v) ASSERT_EQ(x, 1.5f);
  // The transpose of a layout at the limit stays exact (a view of no memory, never read).
  const LayoutTensor<float, Mat> big(nullptr, k32, k32 - 1);
  const auto tt = big.transpose();
  EXPECT_EQ(tt.extent(0), k32 - 1);
  EXPECT_EQ(tt.stride(1), k32 - 1);
  EXPECT_EQ(tt.size(), big.size());
  EXPECT_EQ(tt.span_size(), big.span_size());
}

// ---- on every backend: refused at tensor(), then a kernel over a valid tensor ---------------------

/// t(i, j) = base + i * 4096 + j for every element inside the tensor's own extents.
DEVCTX_KERNEL void fill_mat(LayoutTensor<u32, Mat> t, u32 base) {
  const auto g = devctx::global_idx();
  if (g.y < t.extent(0) && g.x < t.extent(1)) t(g.y, g.x) = base + u32(g.y) * 4096u + u32(g.x);
}

/// The same through a column-major 3-D view, one thread per element of the first two dimensions.
DEVCTX_KERNEL void fill_cube(LayoutTensor<u32, CubeC> t, u32 base) {
  const auto g = devctx::global_idx();
  if (g.x < t.extent(0) && g.y < t.extent(1))
    for (std::size_t k = 0; k < t.extent(2); ++k) t(g.x, g.y, k) = base + u32(g.x) + u32(g.y) * 64u + u32(k) * 4096u;
}

class TensorLimits : public BackendTest {
 protected:
  /// Runs fill_mat over an m x n tensor of a fresh poisoned buffer of `slack` more elements and
  /// checks every element: the tensor's written, the rest still poison.
  void check_fill_mat(std::size_t m, std::size_t n, std::size_t slack) {
    auto buf = devctx_test::poisoned_buffer<u32>(ctx(), m * n + slack);
    const u32 base = u32(rng());
    ctx().enqueue_function<fill_mat>({.grid_dim = {unsigned((n + 15) / 16), unsigned((m + 15) / 16)}, .block_dim = {16, 16}},
                                     devctx::tensor(buf, Mat(m, n)), base);
    const auto got = download(ctx(), buf);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) ASSERT_EQ(got[i * n + j], base + u32(i) * 4096u + u32(j)) << i << ", " << j;
    for (std::size_t k = m * n; k < got.size(); ++k) ASSERT_EQ(got[k], devctx_test::poison_value<u32>()) << k;
  }
};
DEVCTX_INSTANTIATE_BACKEND_TESTS(TensorLimits);

TEST_P(TensorLimits, TheIssuesLayoutIsRefusedAndTheContextStaysUsable) {
  auto buf = devctx_test::poisoned_buffer<u32>(ctx(), 100);
  // Before the fix this passed the "does the layout fit" check (its span wrapped to 0) and the
  // kernel, guarded by the tensor's own extents, wrote far past the 100 elements.
  expect_refused(
      [&] {
        ctx().enqueue_function<fill_mat>({.grid_dim = {1, 1}, .block_dim = {16, 16}}, devctx::tensor(buf, Mat(k62, 4)), 7u);
      },
      Errc::size_mismatch, {"devctx::RowMajor layout with extents (4611686018427387904, 4)", kWraps});
  ctx().synchronize();
  // Nothing ran: still poison.
  for (const u32 x : download(ctx(), buf)) ASSERT_EQ(x, devctx_test::poison_value<u32>());
  check_fill_mat(10, 10, 0);
}

TEST_P(TensorLimits, EveryDeviceFormRefusesLayoutsNearTheLimits) {
  auto buf = devctx_test::poisoned_buffer<u32>(ctx(), 256);
  const auto& cbuf = buf;
  std::vector<std::function<void()>> misuse = {
      [&] { (void)devctx::tensor(buf, Mat(k32, k32)); },
      [&] { (void)devctx::tensor(cbuf, MatC(k63, 2)); },
      [&] { (void)devctx::tensor(buf.slice(5, 100), Cube(0, std::size_t{1} << 40, std::size_t{1} << 40)); },
      [&] { (void)devctx::tensor(cbuf.slice(1, 9), CubeC(7, k62, 3)); },
      [&] { (void)devctx::tensor(buf, Strided<dyn, dyn>::from_parts({3, 2}, {k63, 1})); },
  };
  for (auto& f : misuse) expect_refused(f, Errc::size_mismatch, {"layout with extents (", kWraps});
  // Representable, far too large: refused by the comparison, naming the extents.
  expect_refused([&] { (void)devctx::tensor(buf.slice(6, 250), Mat(k32, k32 - 1)); }, Errc::size_mismatch,
                 {"tensor over a device buffer: its layout (devctx::RowMajor with extents (4294967296, 4294967295)",
                  "reaches 18446744069414584320 elements but the memory holds 250"});
  expect_refused([&] { (void)devctx::tensor(buf, CubeC(1, 1, 257)); }, Errc::size_mismatch,
                 {"reaches 257 elements but the memory holds 256"});
  ctx().synchronize();
  for (const u32 x : download(ctx(), buf)) ASSERT_EQ(x, devctx_test::poison_value<u32>());
  // A zero-extent tensor over no memory launches and writes nothing.
  auto none = ctx().enqueue_create_buffer<u32>(0);
  ctx().enqueue_function<fill_mat>({.grid_dim = {1, 1}, .block_dim = {16, 16}}, devctx::tensor(none, Mat(0, kMax)), 1u);
  ctx().synchronize();
  // Column-major 3-D, random extents, then a row-major one: every element checked.
  const std::size_t x = 1 + rng() % 20, y = 1 + rng() % 20, z = 1 + rng() % 5;
  auto cube = devctx_test::poisoned_buffer<u32>(ctx(), x * y * z);
  const u32 base = u32(rng());
  ctx().enqueue_function<fill_cube>({.grid_dim = {1, 1}, .block_dim = {32, 32}}, devctx::tensor(cube, CubeC(x, y, z)),
                                    base);
  const auto got = download(ctx(), cube);
  for (std::size_t k = 0; k < z; ++k)
    for (std::size_t j = 0; j < y; ++j)
      for (std::size_t i = 0; i < x; ++i)
        ASSERT_EQ(got[i + x * (j + y * k)], base + u32(i) + u32(j) * 64u + u32(k) * 4096u) << i << ", " << j << ", " << k;
  check_fill_mat(1 + rng() % 40, 1 + rng() % 40, 3);
}

TEST_P(TensorLimits, HostBufferFormsRefuseLayoutsNearTheLimits) {
  auto host = ctx().enqueue_create_host_buffer<u32>(64);
  ctx().synchronize();
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = u32(i);
  expect_refused([&] { (void)devctx::tensor(host, Mat(k62, 4)); }, Errc::size_mismatch, {"(4611686018427387904, 4)"});
  expect_refused([&] { (void)devctx::tensor(std::as_const(host), RowMajor<dyn, 1024>(std::size_t{1} << 54)); },
                 Errc::size_mismatch, {"(18014398509481984, 1024)"});
  expect_refused(
      [&] { (void)devctx::tensor(host, Mat(8, 9)); }, Errc::size_mismatch,
      {"tensor over a HostBuffer: its layout (devctx::RowMajor with extents (8, 9) and strides (9, 1)) reaches 72"});
  for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(host[i], u32(i));
  // Still usable: a host tensor and a kernel.
  auto t = devctx::tensor(host, ColMajor<8, 8>{});
  t(7, 1) = 99u;
  EXPECT_EQ(host[15], 99u);
  check_fill_mat(3, 17, 1);
}

}  // namespace
