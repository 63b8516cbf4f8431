// SPDX-License-Identifier: Apache-2.0
// tests/untyped_buffer_test.cpp - devctx::Buffer, the untyped owner under DeviceBuffer<T>,
// HostBuffer<T> and DeviceView<T>, run on every backend: handing bytes between typed and untyped
// owners, typed slices over a Buffer and the checks on them (kind, size, alignment, empty),
// its home stream, release(), and that no public handle can be built from a private record.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

using devctx::Buffer;
using devctx::Errc;
using devctx::MemoryKind;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using testing::HasSubstr;

// ---- handles are made by devctx only: no public constructor takes a private record ---------------

static_assert(!std::is_constructible_v<devctx::DeviceSlice<float>, devctx::detail::Allocation*, float*, std::size_t>);
static_assert(!std::is_constructible_v<devctx::HostSlice<float>, devctx::detail::Allocation*, float*, std::size_t>);
static_assert(!std::is_constructible_v<devctx::DeviceBuffer<float>, devctx::detail::AllocationPtr, std::size_t>);
static_assert(!std::is_constructible_v<devctx::DeviceBuffer<float>, std::size_t, Buffer&&>);
static_assert(!std::is_constructible_v<devctx::HostBuffer<float>, devctx::detail::AllocationPtr, std::size_t>);
static_assert(!std::is_constructible_v<devctx::DeviceView<float>, Buffer, float*, std::size_t>);
static_assert(!std::is_constructible_v<Buffer, devctx::detail::AllocationPtr>);
static_assert(!std::is_constructible_v<devctx::StreamRef, devctx::detail::QueueImpl*>);
static_assert(!std::is_constructible_v<devctx::Stream, std::shared_ptr<devctx::detail::QueueImpl>>);
static_assert(!std::is_constructible_v<devctx::Event, std::shared_ptr<devctx::detail::EventImpl>>);
// Typed views over a Buffer: a const Buffer gives read-only views only.
static_assert(std::is_constructible_v<devctx::DeviceSlice<float>, Buffer&>);
static_assert(!std::is_constructible_v<devctx::DeviceSlice<float>, const Buffer&>);
static_assert(std::is_constructible_v<devctx::DeviceSlice<const float>, const Buffer&>);
static_assert(!std::is_constructible_v<devctx::HostSlice<float>, const Buffer&>);
static_assert(!std::is_copy_constructible_v<Buffer> && std::is_nothrow_move_constructible_v<Buffer>);

class UntypedBuffers : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(UntypedBuffers);

TEST_P(UntypedBuffers, DeviceBytesRoundTripThroughBuffer) {
  const std::size_t n = 1000 + std::size_t(rng() % 1000);
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, n, 0u, 0xffffffffu);
  auto typed = devctx_test::upload(ctx(), values);
  std::uint32_t* const address = typed.data();

  Buffer bytes = typed.take_buffer();
  EXPECT_FALSE(typed);
  EXPECT_EQ(typed.size(), 0u);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes.size_bytes(), n * sizeof(std::uint32_t));
  EXPECT_EQ(bytes.data(), static_cast<void*>(address));
  EXPECT_EQ(bytes.kind(), MemoryKind::device);
  EXPECT_EQ(bytes.device().api, ctx().api());
  EXPECT_EQ(bytes.device().id, ctx().id());

  // A typed slice over the bytes sees the same elements; a kernel writes through it.
  const devctx::DeviceSlice<std::uint32_t> view(bytes);
  EXPECT_EQ(view.size(), n);
  EXPECT_EQ(view.data(), address);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx(), view)));
  ctx().enqueue_function<add_kernel>(cover(n), view, 7u);

  // Back into a typed buffer: the same memory and contents.
  devctx::DeviceBuffer<std::uint32_t> again(std::move(bytes));
  EXPECT_FALSE(bytes);
  EXPECT_EQ(again.size(), n);
  EXPECT_EQ(again.data(), address);
  std::vector<std::uint32_t> expected = values;
  for (auto& v : expected) v += 7u;
  EXPECT_TRUE(devctx_test::all_equal(expected, download(ctx(), again)));
}

TEST_P(UntypedBuffers, BytesSeenAsAnotherElementType) {
  const auto values = devctx_test::random_vector<std::uint32_t>(rng, 64, 0u, 0xffffffffu);
  Buffer bytes = devctx_test::upload(ctx(), values).take_buffer();
  // 64 four-byte elements are 32 eight-byte ones, element for element the same bytes.
  devctx::DeviceBuffer<std::uint64_t> wide(std::move(bytes));
  ASSERT_EQ(wide.size(), 32u);
  const auto got = download(ctx(), wide);
  for (std::size_t i = 0; i < 32; ++i) {
    std::uint64_t want = 0;
    std::memcpy(&want, &values[2 * i], sizeof want);
    ASSERT_EQ(got[i], want) << "element " << i;
  }
  // 3 bytes are not a whole number of uint16s: refused, and the Buffer still owns its memory.
  Buffer odd = ctx().enqueue_create_buffer<std::uint8_t>(3).take_buffer();
  auto e = error_of([&] { devctx::DeviceBuffer<std::uint16_t> no(std::move(odd)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::size_mismatch);
  EXPECT_THAT(e->what(), HasSubstr("DeviceBuffer<T>(Buffer&&)"));
  EXPECT_THAT(e->what(), HasSubstr("3 bytes"));
  EXPECT_TRUE(odd);
  EXPECT_EQ(odd.size_bytes(), 3u);
}

TEST_P(UntypedBuffers, HostBytesAndTheWrongKind) {
  const auto values = devctx_test::random_vector<std::int32_t>(rng, 257, -1000000, 1000000);
  auto host = ctx().enqueue_create_host_buffer<std::int32_t>(values.size());
  ctx().synchronize();
  Buffer bytes = host.take_buffer();
  EXPECT_EQ(bytes.kind(), MemoryKind::host);
  EXPECT_EQ(bytes.device().api, ctx().api());
  {
    devctx::HostSlice<std::int32_t> h(bytes);
    ASSERT_EQ(h.size(), values.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = values[i];
    auto d = devctx_test::poisoned_buffer<std::int32_t>(ctx(), values.size());
    ctx().enqueue_copy(d, h);
    EXPECT_TRUE(devctx_test::all_equal(values, download(ctx(), d)));
  }
  // Host bytes are not device memory, and the reverse.
  auto e = error_of([&] { devctx::DeviceBuffer<std::int32_t> no(std::move(bytes)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("holds host memory"));
  EXPECT_TRUE(bytes);
  e = error_of([&] { (void)devctx::DeviceSlice<std::int32_t>(bytes); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  devctx::HostBuffer<std::int32_t> back(std::move(bytes));
  EXPECT_EQ(back.size(), values.size());
  ctx().synchronize();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(back[i], values[i]) << "element " << i;

  Buffer device = ctx().enqueue_create_buffer<std::int32_t>(4).take_buffer();
  e = error_of([&] { (void)devctx::HostSlice<std::int32_t>(device); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("holds device memory"));
}

TEST_P(UntypedBuffers, HomeStreamAndStreamOrderedFree) {
  const std::size_t n = 4096;
  auto s = ctx().create_stream();
  auto typed = s.enqueue_create_buffer<std::uint32_t>(n);
  Buffer bytes = typed.take_buffer();
  // Its home stream is the stream that allocated it: work there is ordered after the allocation.
  devctx::StreamRef home = bytes.stream();
  const std::uint32_t base = std::uint32_t(rng());
  home.enqueue_function<iota_kernel>(cover(n), devctx::DeviceSlice<std::uint32_t>(bytes), base);
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  home.enqueue_wait_for(ctx());  // the poisoning fill, on the context's stream, comes first
  home.enqueue_copy(out, devctx::DeviceSlice<const std::uint32_t>(std::as_const(bytes)));
  bytes = Buffer();  // dropped right after the work that uses it: freed after that work
  home.synchronize();
  std::vector<std::uint32_t> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = base + std::uint32_t(i);
  EXPECT_TRUE(devctx_test::all_equal(expected, download(ctx(), out)));
}

TEST_P(UntypedBuffers, EmptyBufferAndRelease) {
  Buffer empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.size_bytes(), 0u);
  EXPECT_EQ(empty.data(), nullptr);
  for (auto e : {error_of([&] { (void)empty.kind(); }), error_of([&] { (void)empty.device(); }),
                 error_of([&] { (void)empty.stream(); }), error_of([&] { (void)empty.release(); }),
                 error_of([&] { (void)devctx::DeviceSlice<float>(empty); }),
                 error_of([&] { devctx::DeviceBuffer<float> no(std::move(empty)); })}) {
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_handle);
    EXPECT_THAT(e->what(), HasSubstr("a moved-from or default-constructed Buffer"));
  }
  // release(): the bytes go to a new owner, who frees them once; the Buffer is empty.
  Buffer bytes = ctx().enqueue_create_buffer<double>(100).take_buffer();
  void* const address = bytes.data();
  const devctx::ReleasedBuffer<std::byte> released = bytes.release();
  EXPECT_FALSE(bytes);
  EXPECT_EQ(static_cast<void*>(released.data), address);
  EXPECT_EQ(released.size, 100u * sizeof(double));
  ASSERT_NE(released.free, nullptr);
  released.free(released.owner);
  ctx().synchronize();
}

TEST_P(UntypedBuffers, DeviceViewBytes) {
  const auto values = devctx_test::random_vector<float>(rng, 300, -1.0f, 1.0f);
  auto memory = devctx_test::upload(ctx(), values).release();  // "another library's" memory
  auto released = std::make_shared<int>(0);
  auto view = devctx::wrap_device_memory(ctx(), memory.data, memory.size, [released] { ++*released; });
  Buffer bytes = view.take_buffer();
  EXPECT_FALSE(view);
  EXPECT_EQ(bytes.kind(), MemoryKind::device);
  EXPECT_EQ(bytes.size_bytes(), values.size() * sizeof(float));
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx(), devctx::DeviceSlice<const float>(bytes))));
  bytes = Buffer();  // the view's release callback runs once devctx's work has finished
  ctx().synchronize();
  EXPECT_EQ(*released, 1);
  memory.free(memory.owner);
  ctx().synchronize();
}
