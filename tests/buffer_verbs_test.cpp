// SPDX-License-Identifier: Apache-2.0
// tests/buffer_verbs_test.cpp - Mojo's buffer verbs, run on every backend: map_to_host (read-only
// and mutable views, return values, exceptions from the callable, stream errors), the buffer's own
// stream for enqueue_copy_to / enqueue_copy_from / enqueue_fill, and typed views (view_as<U>) of
// buffers and slices with their size and alignment checks.
#include "support/test_support.hpp"

#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::poison_value;
using devctx_test::random_vector;
using devctx_test::upload;
using testing::HasSubstr;

DEVCTX_KERNEL void scale_in_place(devctx::span<int> v, int factor) {
  const std::size_t i = devctx::global_idx().x;
  if (i < v.size()) v[i] *= factor;
}

/// Sums the four floats of each 16-byte vector: a typed view passed as a kernel argument.
DEVCTX_KERNEL void sum_quads(devctx::span<const devctx::SIMD<float, 4>> in, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= in.size()) return;
  const devctx::SIMD<float, 4> q = in[i];
  out[i] = (q[0] + q[1]) + (q[2] + q[3]);
}

/// Doubles every vector with the element-wise operators, loaded and stored whole.
DEVCTX_KERNEL void double_quads(devctx::span<devctx::SIMD<float, 4>> v) {
  const std::size_t i = devctx::global_idx().x;
  if (i < v.size()) v[i] = v[i] + v[i];
}

// ---- map_to_host -------------------------------------------------------------------------------------

class MapToHost : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(MapToHost);

TEST_P(MapToHost, ReadOnlyViewSeesEnqueuedWorkAndReturnsTheResult) {
  const auto values = random_vector<int>(rng, 3001, -1000, 1000);
  auto d = upload(ctx(), values);
  ctx().enqueue_function<scale_in_place>(cover(values.size()), d, 3);
  // No synchronize: map_to_host orders after the kernel on the buffer's stream.
  const long long sum = d.map_to_host([&](std::span<const int> h) {
    EXPECT_EQ(h.size(), values.size());
    long long s = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      EXPECT_EQ(h[i], values[i] * 3) << i;
      s += h[i];
    }
    return s;
  });
  EXPECT_EQ(sum, 3 * std::accumulate(values.begin(), values.end(), 0LL));
}

TEST_P(MapToHost, MutableViewIsCopiedBack) {
  const auto values = random_vector<int>(rng, 1000, -5000, 5000);
  auto d = upload(ctx(), values);
  d.map_to_host([](std::span<int> h) {
    for (auto& x : h) x = x * 2 + 1;
  });
  // Work enqueued after map_to_host sees the written values.
  ctx().enqueue_function<scale_in_place>(cover(values.size()), d, -1);
  const auto out = download(ctx(), d);
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(out[i], -(values[i] * 2 + 1)) << i;
}

TEST_P(MapToHost, ReadOnlyViewIsNotCopiedBack) {
  const auto values = random_vector<int>(rng, 257, 0, 100);
  auto d = upload(ctx(), values);
  d.map_to_host([](std::span<const int> h) {
    // Writing through a cast would be a bug in user code; the point is that nothing is copied
    // back, so the device copy must stay as it was even if the host view changed.
    auto* p = const_cast<int*>(h.data());
    for (std::size_t i = 0; i < h.size(); ++i) p[i] = -1;
  });
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx(), d)));
}

TEST_P(MapToHost, GenericLambdaGetsAMutableView) {
  const auto values = random_vector<int>(rng, 64, 0, 100);
  auto d = upload(ctx(), values);
  const int first = d.map_to_host([](auto h) {
    h[0] = 777;
    return h[1];
  });
  EXPECT_EQ(first, values[1]);
  auto expect = values;
  expect[0] = 777;
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), d)));
}

TEST_P(MapToHost, SlicesAndConstBuffers) {
  const auto values = random_vector<int>(rng, 500, -100, 100);
  auto d = upload(ctx(), values);
  d.slice(100, 50).map_to_host([](std::span<int> h) {
    for (auto& x : h) x = 0;
  });
  const auto& cd = d;
  const auto n = cd.map_to_host([](std::span<const int> h) { return h.size(); });
  EXPECT_EQ(n, values.size());
  const int at = cd.slice(150, 1).map_to_host([](std::span<const int> h) { return h[0]; });
  EXPECT_EQ(at, values[150]);
  auto expect = values;
  std::fill(expect.begin() + 100, expect.begin() + 150, 0);
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), d)));
}

TEST_P(MapToHost, EmptyBuffer) {
  auto d = ctx().enqueue_create_buffer<double>(0);
  const auto n = d.map_to_host([](std::span<double> h) { return h.size(); });
  EXPECT_EQ(n, 0u);
}

TEST_P(MapToHost, ExceptionFromTheCallableCopiesNothingBack) {
  const auto values = random_vector<int>(rng, 100, 1, 9);
  auto d = upload(ctx(), values);
  EXPECT_THROW(d.map_to_host([](std::span<int> h) {
    h[0] = 0;
    throw std::runtime_error("user error");
  }),
               std::runtime_error);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx(), d)));
  // The stream stays usable.
  ctx().enqueue_function<scale_in_place>(cover(values.size()), d, 2);
  d.map_to_host([&](std::span<const int> h) {
    for (std::size_t i = 0; i < h.size(); ++i) EXPECT_EQ(h[i], 2 * values[i]);
  });
}

TEST_P(MapToHost, MovedFromBufferIsAnError) {
  auto d = ctx().enqueue_create_buffer<int>(4);
  auto other = std::move(d);
  const auto e = error_of([&] { (void)d.map_to_host([](std::span<const int> h) { return h.size(); }); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
  EXPECT_THAT(e->what(), HasSubstr("moved-from"));
}

TEST_P(MapToHost, UsesTheStreamThatCreatedTheBuffer) {
  auto stream = ctx().create_stream();
  const auto values = random_vector<int>(rng, 2048, -9, 9);
  auto d = upload(stream, values);
  stream.enqueue_function<scale_in_place>(cover(values.size()), d, 5);
  // Ordered after the launch on `stream`, though the context's own stream never saw either.
  d.map_to_host([&](std::span<const int> h) {
    for (std::size_t i = 0; i < h.size(); ++i) ASSERT_EQ(h[i], 5 * values[i]) << i;
  });
}

// ---- enqueue_copy_to / enqueue_copy_from / enqueue_fill -------------------------------------------------

class BufferVerbs : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(BufferVerbs);

TEST_P(BufferVerbs, CopyToCopyFromAndFillOnTheBuffersStream) {
  auto stream = ctx().create_stream();
  const auto values = random_vector<std::int64_t>(rng, 777, -1'000'000'000'000, 1'000'000'000'000);
  auto d = stream.enqueue_create_buffer<std::int64_t>(values.size());
  auto h = stream.enqueue_create_host_buffer<std::int64_t>(values.size());
  d.enqueue_fill(poison_value<std::int64_t>());
  d.enqueue_copy_from(std::span<const std::int64_t>(values));  // pageable: read before return
  d.enqueue_copy_to(h);
  stream.synchronize();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(h[i], values[i]) << i;

  // A HostBuffer's verbs run on its own stream too.
  h.enqueue_fill(std::int64_t{-3});
  auto d2 = stream.enqueue_create_buffer<std::int64_t>(values.size());
  h.enqueue_copy_to(d2);
  std::vector<std::int64_t> back(values.size());
  d2.enqueue_copy_to(std::span<std::int64_t>(back));  // pageable: written before return
  EXPECT_TRUE(devctx_test::all_equal(std::vector<std::int64_t>(values.size(), -3), back));

  // Slices.
  d2.slice(10, 20).enqueue_copy_from(d.slice(100, 20));
  d2.slice(0, 10).enqueue_fill(7);
  h.enqueue_copy_from(d2);
  stream.synchronize();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int64_t expect = i < 10 ? 7 : i < 30 ? values[i + 90] : -3;
    ASSERT_EQ(h[i], expect) << i;
  }
}

TEST_P(BufferVerbs, ErrorsAreThoseOfTheStreamVerbs) {
  auto d = ctx().enqueue_create_buffer<float>(10);
  auto small = ctx().enqueue_create_buffer<float>(9);
  auto e = error_of([&] { d.enqueue_copy_to(small); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::size_mismatch);
  EXPECT_THAT(e->what(), HasSubstr("9 elements"));
  e = error_of([&] { d.enqueue_copy_from(d); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  auto moved = std::move(small);
  e = error_of([&] { small.enqueue_fill(1.0f); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
  // Nothing was enqueued by the refused calls: the context is still usable.
  d.enqueue_fill(2.5f);
  EXPECT_TRUE(devctx_test::all_equal(std::vector<float>(10, 2.5f), download(ctx(), d)));
}

// ---- typed views -----------------------------------------------------------------------------------

class TypedViews : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(TypedViews);

TEST_P(TypedViews, BytesAsWordsRoundTrip) {
  const auto words = random_vector<std::uint32_t>(rng, 300, 0, 0xFFFFFFFFu);
  auto bytes = ctx().enqueue_create_buffer<std::uint8_t>(words.size() * 4);
  auto as_words = bytes.view_as<std::uint32_t>();
  static_assert(std::is_same_v<decltype(as_words), devctx::DeviceSlice<std::uint32_t>>);
  EXPECT_EQ(as_words.size(), words.size());
  ctx().enqueue_copy(as_words, std::span<const std::uint32_t>(words));
  const auto raw = download(ctx(), bytes);
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::uint32_t w;
    std::memcpy(&w, raw.data() + 4 * i, 4);
    ASSERT_EQ(w, words[i]) << i;
  }
  const auto& cbytes = bytes;
  static_assert(std::is_same_v<decltype(cbytes.view_as<std::uint16_t>()), devctx::DeviceSlice<const std::uint16_t>>);
  EXPECT_EQ(cbytes.view_as<std::uint16_t>().size(), words.size() * 2);
}

TEST_P(TypedViews, VectorViewAsKernelArgument) {
  const std::size_t quads = 513;
  const auto values = devctx_test::random_small_ints<float>(rng, quads * 4, -100, 100);
  auto d = upload(ctx(), values);
  auto out = devctx_test::poisoned_buffer<float>(ctx(), quads);
  ctx().enqueue_function<sum_quads>(cover(quads, 64), d.view_as<devctx::SIMD<float, 4>>(), out);
  ctx().enqueue_function<double_quads>(cover(quads, 64), d.view_as<devctx::SIMD<float, 4>>());
  const auto sums = download(ctx(), out);
  const auto doubled = download(ctx(), d);
  for (std::size_t i = 0; i < quads; ++i) {
    ASSERT_EQ(sums[i], (values[4 * i] + values[4 * i + 1]) + (values[4 * i + 2] + values[4 * i + 3])) << i;
    for (std::size_t k = 0; k < 4; ++k) ASSERT_EQ(doubled[4 * i + k], 2 * values[4 * i + k]) << i;
  }
}

TEST_P(TypedViews, SizeAndAlignmentAreChecked) {
  auto bytes = ctx().enqueue_create_buffer<std::uint8_t>(30);
  auto e = error_of([&] { (void)bytes.view_as<std::uint32_t>(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::size_mismatch);
  EXPECT_THAT(e->what(), HasSubstr("30 bytes"));
  EXPECT_THAT(e->what(), HasSubstr("4-byte elements"));
  // Alignment, on a buffer of 32 bytes: a buffer starts aligned to 64 bytes or more, except in
  // checking mode, where it ends at a page's end and so starts aligned to the largest power of two
  // dividing its size (docs/checking.md): 32 bytes here, 2 for the 30 bytes above.
  auto words = ctx().enqueue_create_buffer<std::uint8_t>(32);
  e = error_of([&] { (void)words.slice(2, 8).view_as<std::uint32_t>(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::size_mismatch);
  EXPECT_THAT(e->what(), HasSubstr("2 bytes past a multiple of 4"));
  e = error_of([&] { (void)words.slice(4, 16).view_as<devctx::SIMD<float, 4>>(); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr("4 bytes past a multiple of 16"));
  EXPECT_EQ(words.slice(16, 8).view_as<std::uint64_t>().size(), 1u);
  EXPECT_EQ(words.slice(0, 0).view_as<std::uint64_t>().size(), 0u);
  // Host buffers and slices too.
  auto h = ctx().enqueue_create_host_buffer<std::uint16_t>(6);
  EXPECT_EQ(h.view_as<std::uint32_t>().size(), 3u);
  e = error_of([&] { (void)h.slice(0, 3).view_as<std::uint32_t>(); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr("HostSlice::view_as: 6 bytes (3 elements of 2 bytes)"));
}
