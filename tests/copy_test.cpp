// SPDX-License-Identifier: Apache-2.0
// tests/copy_test.cpp - enqueue_copy, run on every backend: every pair of endpoint kinds, size
// mismatches, const and array endpoints, and the wait of copies with ordinary host memory.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using testing::HasSubstr;

// ---- enqueue_copy between every pair of endpoint kinds ---------------------------------------------

namespace {

enum class Kind { device_buffer, device_slice, host_buffer, host_slice, std_span, std_vector };
constexpr Kind kAllKinds[] = {Kind::device_buffer, Kind::device_slice, Kind::host_buffer,
                              Kind::host_slice,    Kind::std_span,     Kind::std_vector};
constexpr std::size_t kPad = 7;  // slices are cut from the middle of a bigger buffer

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::device_buffer: return "DeviceBuffer";
    case Kind::device_slice: return "DeviceSlice";
    case Kind::host_buffer: return "HostBuffer";
    case Kind::host_slice: return "HostSlice";
    case Kind::std_span: return "std::span";
    case Kind::std_vector: return "std::vector";
  }
  return "?";
}

/// One side of a copy: its storage (bigger than the endpoint when it is a slice, so that
/// writes outside the slice are caught) and the endpoint object of its kind.
struct Side {
  using T = std::uint32_t;

  Side(DeviceContext& ctx, Kind k, std::size_t count) : kind(k), n(count) {
    const std::size_t total = full();
    if (k == Kind::device_buffer || k == Kind::device_slice)
      dev = ctx.enqueue_create_buffer<T>(total);
    else if (k == Kind::host_buffer || k == Kind::host_slice)
      host = ctx.enqueue_create_host_buffer<T>(total);
    else
      vec.resize(total);
    ctx.synchronize();
  }
  [[nodiscard]] bool sliced() const { return kind == Kind::device_slice || kind == Kind::host_slice; }
  [[nodiscard]] std::size_t full() const { return sliced() ? n + 2 * kPad : n; }

  void set(DeviceContext& ctx, const std::vector<T>& contents) {
    if (dev)
      ctx.enqueue_copy(dev, std::span<const T>(contents));
    else if (host)
      std::copy(contents.begin(), contents.end(), host.begin());
    else
      vec = contents;
    ctx.synchronize();
  }
  std::vector<T> get(DeviceContext& ctx) {
    ctx.synchronize();
    if (dev) return download(ctx, dev);
    if (host) return {host.begin(), host.end()};
    return vec;
  }
  template <class F>
  void visit(F&& f) {
    switch (kind) {
      case Kind::device_buffer: f(dev); break;
      case Kind::device_slice: f(dev.slice(kPad, n)); break;
      case Kind::host_buffer: f(host); break;
      case Kind::host_slice: f(host.slice(kPad, n)); break;
      case Kind::std_span: f(std::span<T>(vec)); break;
      case Kind::std_vector: f(vec); break;
    }
  }

  Kind kind;
  std::size_t n;
  devctx::DeviceBuffer<T> dev;
  devctx::HostBuffer<T> host;
  std::vector<T> vec;
};

}  // namespace

class Copy : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Copy);

TEST_P(Copy, EveryPairOfEndpointKinds) {
  // A small size and one above the backends' copy chunking (1 MiB on the CPU).
  for (const std::size_t n : {std::size_t{1013}, std::size_t{300'007}}) {
    for (const Kind dk : kAllKinds) {
      for (const Kind sk : kAllKinds) {
        SCOPED_TRACE(testing::Message() << kind_name(dk) << " <- " << kind_name(sk) << ", n = " << n);
        Side dst(ctx(), dk, n), src(ctx(), sk, n);
        const auto src_contents = devctx_test::random_vector<std::uint32_t>(rng, src.full(), 0, 0xFFFFFFFFu);
        const auto dst_before = devctx_test::random_vector<std::uint32_t>(rng, dst.full(), 0, 0xFFFFFFFFu);
        src.set(ctx(), src_contents);
        dst.set(ctx(), dst_before);
        dst.visit([&](auto&& d) { src.visit([&](auto&& s) { ctx().enqueue_copy(d, s); }); });
        auto expected = dst_before;
        const std::size_t doff = dst.sliced() ? kPad : 0, soff = src.sliced() ? kPad : 0;
        std::copy_n(src_contents.begin() + std::ptrdiff_t(soff), n, expected.begin() + std::ptrdiff_t(doff));
        ASSERT_TRUE(devctx_test::all_equal(expected, dst.get(ctx())));
        // The source is unchanged.
        ASSERT_TRUE(devctx_test::all_equal(src_contents, src.get(ctx())));
      }
    }
  }
}

TEST_P(Copy, SizeMismatchThrowsAndEnqueuesNothing) {
  for (const Kind dk : kAllKinds) {
    for (const Kind sk : kAllKinds) {
      for (const auto& [dn, sn] : {std::pair<std::size_t, std::size_t>{64, 65}, {65, 64}, {1, 0}}) {
        SCOPED_TRACE(testing::Message() << kind_name(dk) << "[" << dn << "] <- " << kind_name(sk) << "[" << sn << "]");
        Side dst(ctx(), dk, dn), src(ctx(), sk, sn);
        const auto dst_before = devctx_test::random_vector<std::uint32_t>(rng, dst.full(), 0, 0xFFFFFFFFu);
        src.set(ctx(), devctx_test::random_vector<std::uint32_t>(rng, src.full(), 0, 0xFFFFFFFFu));
        dst.set(ctx(), dst_before);
        std::optional<devctx::Error> e;
        dst.visit([&](auto&& d) { src.visit([&](auto&& s) { e = error_of([&] { ctx().enqueue_copy(d, s); }); }); });
        ASSERT_TRUE(e);
        EXPECT_EQ(e->code(), Errc::size_mismatch) << e->what();
        EXPECT_THAT(e->what(), HasSubstr("enqueue_copy"));
        EXPECT_THAT(e->what(), HasSubstr("has " + std::to_string(dn)));  // both sizes are named
        EXPECT_THAT(e->what(), HasSubstr("has " + std::to_string(sn)));
        ASSERT_TRUE(devctx_test::all_equal(dst_before, dst.get(ctx()))) << "the destination changed";
      }
    }
  }
}

TEST_P(Copy, ConstSourcesArraysAndStreams) {
  const std::size_t n = 4099;
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0, 0xFFFFFFFFu);
  const auto d = devctx_test::upload(ctx(), values);  // const DeviceBuffer as a source
  auto d2 = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_copy(d2, d);
  auto s = ctx().create_stream();
  ctx().synchronize();
  auto h = s.enqueue_create_host_buffer<std::uint32_t>(n);
  s.enqueue_copy(h, d2.slice(0, n));
  s.synchronize();
  ASSERT_TRUE(devctx_test::all_equal(values, std::vector<std::uint32_t>(h.begin(), h.end())));
  const auto& ch = h;
  auto d3 = s.enqueue_create_buffer<std::uint32_t>(n);
  s.enqueue_copy(d3, ch);                           // const HostBuffer
  s.enqueue_copy(d3.slice(0, 3), ch.slice(10, 3));  // const HostSlice
  const devctx::DeviceSlice<const std::uint32_t> cs = d.slice(1, 2);
  s.enqueue_copy(d3.slice(3, 2), cs);  // DeviceSlice<const T>
  std::array<std::uint32_t, 4> arr{};
  s.enqueue_copy(arr, d3.slice(0, 4));  // std::array destination
  EXPECT_EQ(arr[0], values[10]);
  EXPECT_EQ(arr[2], values[12]);
  EXPECT_EQ(arr[3], values[1]);
  std::uint32_t c_array[2] = {};
  s.enqueue_copy(c_array, d3.slice(3, 2));  // a C array
  EXPECT_EQ(c_array[0], values[1]);
  EXPECT_EQ(c_array[1], values[2]);
  const std::vector<std::uint32_t> cvec(values.rbegin(), values.rbegin() + 5);
  s.enqueue_copy(d3.slice(n - 5, 5), cvec);  // const std::vector
  const auto back = download(s, d3);
  EXPECT_EQ(back[n - 5], values[n - 1]);
  EXPECT_EQ(back[n - 1], values[n - 5]);
  EXPECT_EQ(back[5], values[5]);
}

TEST_P(Copy, PageableCopiesCompleteBeforeReturning) {
  // With ordinary host memory on either side, enqueue_copy returns once that memory has been
  // read or written: the source may be overwritten at once, the destination read at once.
  const std::size_t n = 1 << 18;
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(n);
  std::vector<std::uint32_t> v(n);
  for (std::uint32_t round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < n; ++i) v[i] = round * 1000003u + std::uint32_t(i);
    ctx().enqueue_copy(d, v);
    std::fill(v.begin(), v.end(), 0u);
    ctx().enqueue_function<add_kernel>(cover(n), d, 1u);
    ctx().enqueue_copy(v, d);
    for (std::size_t i = 0; i < n; i += 4099) ASSERT_EQ(v[i], round * 1000003u + std::uint32_t(i) + 1u);
  }
}
