// SPDX-License-Identifier: Apache-2.0
// tests/buffer_test.cpp - buffers and their slices, run on every backend: sizes, host access,
// zero-sized buffers, slices as kernel arguments and out of range, and enqueue_memset.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using testing::HasSubstr;

// ---- buffers and slices ---------------------------------------------------------------------------

class Buffers : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Buffers);

TEST_P(Buffers, SizesAndHostBufferAccess) {
  auto d = ctx().enqueue_create_buffer<double>(1001);
  auto h = ctx().enqueue_create_host_buffer<std::uint16_t>(37);
  EXPECT_TRUE(d);
  EXPECT_TRUE(h);
  EXPECT_EQ(d.size(), 1001u);
  EXPECT_EQ(d.size_bytes(), 1001u * sizeof(double));
  EXPECT_EQ(h.size(), 37u);
  EXPECT_EQ(h.size_bytes(), 37u * 2u);
  EXPECT_NE(d.data(), nullptr);
  ctx().synchronize();  // host buffers may be filled once the context has synchronized
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = std::uint16_t(i * 3);
  EXPECT_EQ(h.end() - h.begin(), 37);
  EXPECT_EQ(h.data(), &h[0]);
  std::span<std::uint16_t> s = h;
  EXPECT_EQ(s.size(), 37u);
  EXPECT_EQ(s[36], 108);
  const auto& ch = h;
  std::span<const std::uint16_t> cs = ch;
  EXPECT_EQ(cs.data(), h.data());
  unsigned sum = 0;
  for (auto v : ch) sum += v;
  EXPECT_EQ(sum, 3u * 36u * 37u / 2u);

  const auto ds = d.slice(10, 20);
  EXPECT_EQ(ds.size(), 20u);
  EXPECT_EQ(ds.size_bytes(), 160u);
  EXPECT_EQ(ds.data(), d.data() + 10);
  const auto dss = ds.slice(5, 5);
  EXPECT_EQ(dss.data(), d.data() + 15);
  const auto hs = h.slice(30, 7);
  EXPECT_EQ(hs.size(), 7u);
  EXPECT_EQ(hs[0], 90);
  EXPECT_EQ(hs.slice(6, 1)[0], 108);
  std::span<std::uint16_t> hss = hs;
  EXPECT_EQ(hss.size(), 7u);
  EXPECT_EQ(d.slice(1001, 0).size(), 0u);  // an empty slice at the end is in range
}

TEST_P(Buffers, ZeroSizedBuffersAndCopies) {
  // Zero-sized buffers are real buffers of size 0, and copies and fills of zero elements
  // succeed and write nothing. The same calls on zero-length slices cut from poisoned buffers
  // (and on empty spans of a poisoned vector) would show any stray write in a neighbour.
  auto d = ctx().enqueue_create_buffer<float>(0);
  auto h = ctx().enqueue_create_host_buffer<float>(0);
  EXPECT_TRUE(d);
  EXPECT_TRUE(h);
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.size_bytes(), 0u);
  EXPECT_EQ(h.size(), 0u);
  EXPECT_EQ(h.size_bytes(), 0u);
  EXPECT_EQ(h.begin(), h.end());
  const std::size_t n = 64;
  const float poison = devctx_test::poison_value<float>();
  auto dn = devctx_test::poisoned_buffer<float>(ctx(), n);
  auto hn = ctx().enqueue_create_host_buffer<float>(n);
  ctx().enqueue_memset(hn, poison);
  std::vector<float> v(n, poison);
  std::vector<float> none;

  ctx().enqueue_copy(d, h);
  ctx().enqueue_copy(h, d);
  ctx().enqueue_copy(d, std::span<const float>(none));
  ctx().enqueue_copy(none, d);
  ctx().enqueue_memset(d, 1.0f);
  ctx().enqueue_memset(h, 1.0f);
  ctx().enqueue_copy(dn.slice(10, 0), h);
  ctx().enqueue_copy(hn.slice(20, 0), d);
  ctx().enqueue_copy(dn.slice(30, 0), std::span<const float>(v).subspan(5, 0));
  ctx().enqueue_copy(std::span<float>(v).subspan(40, 0), dn.slice(n, 0));
  ctx().enqueue_copy(dn.slice(0, 0), hn.slice(n, 0));
  ctx().enqueue_memset(dn.slice(50, 0), 1.0f);
  ctx().enqueue_memset(hn.slice(0, 0), 1.0f);
  ctx().synchronize();

  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(h.size(), 0u);
  EXPECT_TRUE(none.empty());
  const auto device_values = download(ctx(), dn);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(devctx_test::same_bits(device_values[i], poison)) << "DeviceBuffer element " << i << " was written";
    ASSERT_TRUE(devctx_test::same_bits(hn[i], poison)) << "HostBuffer element " << i << " was written";
    ASSERT_TRUE(devctx_test::same_bits(v[i], poison)) << "std::vector element " << i << " was written";
  }
}

TEST_P(Buffers, SlicesAsKernelArguments) {
  const std::size_t n = 1000;
  auto buf = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_memset(buf, 5u);
  // Only the sliced part changes; a slice of a slice and a const slice work as well.
  ctx().enqueue_function<add_kernel>(cover(300), buf.slice(100, 300), 10u);
  ctx().enqueue_function<add_kernel>(cover(50), buf.slice(600, 200).slice(20, 50), 1000u);
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), 40);
  const auto& cbuf = buf;
  ctx().enqueue_function<affine_kernel>(cover(40), cbuf.slice(90, 40), out, 2u, 1u);
  const auto v = download(ctx(), buf);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t expect = (i >= 100 && i < 400) ? 15u : (i >= 620 && i < 670) ? 1005u : 5u;
    ASSERT_EQ(v[i], expect) << "at " << i;
  }
  const auto o = download(ctx(), out);
  for (std::size_t i = 0; i < 40; ++i) ASSERT_EQ(o[i], 2u * (i < 10 ? 5u : 15u) + 1u) << "at " << i;
}

TEST_P(Buffers, SliceOutOfRangeIsAnError) {
  auto d = ctx().enqueue_create_buffer<int>(100);
  auto h = ctx().enqueue_create_host_buffer<int>(100);
  const auto check = [](auto&& f, const char* what) {
    const auto e = error_of(f);
    ASSERT_TRUE(e) << what;
    EXPECT_EQ(e->code(), Errc::size_mismatch) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("100 elements")) << what;
  };
  check([&] { (void)d.slice(0, 101); }, "count too big");
  check([&] { (void)d.slice(101, 0); }, "offset past end");
  check([&] { (void)d.slice(50, 51); }, "offset + count past end");
  check([&] { (void)d.slice(1, std::size_t(-1)); }, "overflowing offset + count");
  check([&] { (void)h.slice(99, 2); }, "host");
  const auto& cd = d;
  check([&] { (void)cd.slice(0, 200); }, "const buffer");
  const auto e = error_of([&] { (void)d.slice(10, 20).slice(15, 10); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::size_mismatch);
  EXPECT_THAT(e->what(), HasSubstr("20 elements"));
  const auto eh = error_of([&] { (void)h.slice(10, 20).slice(21, 0); });
  ASSERT_TRUE(eh);
  EXPECT_EQ(eh->code(), Errc::size_mismatch);
}

// ---- enqueue_memset -------------------------------------------------------------------------------

namespace {

struct Quad {
  std::uint32_t a, b, c, d;
};
static_assert(sizeof(Quad) == 16);

struct Vec3 {
  float x, y, z;
};
static_assert(sizeof(Vec3) == 12);

/// Fills a DeviceBuffer and a HostBuffer with `background`, then part of each with `value`
/// (through a slice, or through a HostSlice when `host_slice` is set), and checks every byte.
template <class T>
void check_memset(DeviceContext& ctx, T value, T background, bool host_slice = false) {
  const std::size_t n = 100'003, off = 1001, count = 60'000;
  auto d = ctx.enqueue_create_buffer<T>(n);
  auto h = ctx.enqueue_create_host_buffer<T>(n);
  ctx.enqueue_memset(d, background);
  ctx.enqueue_memset(d.slice(off, count), value);
  if (host_slice) {
    ctx.enqueue_memset(h, background);
    ctx.enqueue_memset(h.slice(off, count), value);
  } else {
    // The HostBuffer is filled whole; the slice part is copied in from the device.
    ctx.enqueue_memset(h, background);
    ctx.enqueue_copy(h.as_slice().slice(off, count), d.slice(off, count));
  }
  const auto dv = download(ctx, d);
  ctx.synchronize();
  for (std::size_t i = 0; i < n; ++i) {
    const T& expect = (i >= off && i < off + count) ? value : background;
    ASSERT_TRUE(devctx_test::same_bits(dv[i], expect))
        << "DeviceBuffer element " << i << " of " << sizeof(T) << "-byte type";
    ASSERT_TRUE(devctx_test::same_bits(h[i], expect)) << "HostBuffer element " << i << " of " << sizeof(T) << "-byte type";
  }
}

}  // namespace

class Memset : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Memset);

TEST_P(Memset, ElementWidths1248AndStructs) {
  std::uniform_int_distribution<std::uint64_t> bits;
  const std::uint64_t r = bits(rng) | 0x0102040810204080ull;  // never a uniform byte pattern
  check_memset<std::uint8_t>(ctx(), std::uint8_t(r), 0xA5);
  check_memset<std::int8_t>(ctx(), -3, 7);
  check_memset<std::uint16_t>(ctx(), std::uint16_t(r), 0xBEEF);
  check_memset<std::uint16_t>(ctx(), 0x0101, 0);  // uniform bytes
  check_memset<std::int16_t>(ctx(), -2, 3);
  check_memset<std::uint32_t>(ctx(), std::uint32_t(r), 0xDEADBEEFu);
  check_memset<std::int32_t>(ctx(), -123456, 0);
  check_memset<float>(ctx(), -1.5f, std::numeric_limits<float>::quiet_NaN());
  check_memset<std::uint64_t>(ctx(), r, 0xDEADBEEFDEADBEEFull);
  check_memset<double>(ctx(), 3.25, -0.0);
  check_memset<Quad>(ctx(), Quad{std::uint32_t(r), std::uint32_t(r >> 32), 0xDEADBEEFu, 42u}, Quad{1, 2, 3, 4});
  check_memset<Vec3>(ctx(), Vec3{1.5f, -2.0f, 1e30f}, Vec3{0.0f, 0.0f, 0.0f});
}

TEST_P(Memset, HostSlices) {
  // A HostSlice is a HostBuffer view, fillable in stream order like the buffer itself.
  check_memset<std::uint8_t>(ctx(), 0x5A, 0xA5, true);
  check_memset<std::uint16_t>(ctx(), 0x1234, 0xBEEF, true);
  check_memset<std::uint32_t>(ctx(), 0xCAFEF00Du, 0xDEADBEEFu, true);
  check_memset<std::uint64_t>(ctx(), 0x0123456789ABCDEFull, 0xDEADBEEFDEADBEEFull, true);
  check_memset<Quad>(ctx(), Quad{1, 2, 3, 4}, Quad{5, 6, 7, 8}, true);
}

TEST_P(Memset, ValueConvertsToTheElementType) {
  auto d = ctx().enqueue_create_buffer<float>(10);
  ctx().enqueue_memset(d, 2);  // int -> float
  for (float f : download(ctx(), d)) EXPECT_EQ(f, 2.0f);
  auto b = ctx().enqueue_create_buffer<std::uint8_t>(10);
  ctx().enqueue_memset(b.slice(0, 10), 0x1FF);  // converts as static_cast does
  for (auto x : download(ctx(), b)) EXPECT_EQ(x, 0xFF);
}

TEST_P(Memset, OrdinaryHostMemoryIsRejected) {
  std::vector<int> v(10, 7);
  const auto e = error_of([&] { ctx().enqueue_memset(v, 1); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("enqueue_memset"));
  EXPECT_EQ(v[0], 7);
}

TEST_P(Memset, OrderedWithKernelsOnTheStream) {
  const std::size_t n = 5000;
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_function<iota_kernel>(cover(n), d, 0u);
  ctx().enqueue_memset(d.slice(0, n / 2), 9u);
  ctx().enqueue_function<add_kernel>(cover(n), d, 1u);
  const auto v = download(ctx(), d);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i < n / 2 ? 10u : std::uint32_t(i) + 1u) << i;
}
