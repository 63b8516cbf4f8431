// SPDX-License-Identifier: Apache-2.0
// tests/interop_test.cpp - interop, run on every backend: the native handles (and their
// refusal on the CPU backend), views of memory devctx did not allocate (every verb on them, the
// device checks, the stream-ordered release), handing a buffer's memory to another owner, and
// DLPack export and import in both forms (device types, shapes, strides, lifetimes, misuse).
#include "support/test_support.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include <devctx/dlpack.hpp>
#include <devctx/interop.hpp>

using devctx::Api;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::poisoned_buffer;
using devctx_test::upload;
using testing::HasSubstr;

// ---- kernels used by these tests ---------------------------------------------------------------

DEVCTX_KERNEL void interop_affine(devctx::span<const float> in, devctx::span<float> out, float mul, float add) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] * mul + add;
}

DEVCTX_KERNEL void interop_add(devctx::span<std::int32_t> data, std::int32_t value) {
  const auto i = devctx::global_idx().x;
  if (i < data.size()) data[i] += value;
}

DEVCTX_DEVICE inline std::uint32_t interop_lcg(std::uint32_t x, unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  return x;
}

/// Slow on purpose: a release that ran before it finished would see unwritten elements.
DEVCTX_KERNEL void interop_slow_fill(devctx::span<std::uint32_t> out, std::uint32_t seed, unsigned rounds) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = interop_lcg(seed + std::uint32_t(i), rounds);
}

namespace {

class Interop : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Interop);

/// Counts its own destruction: the owner of an exported tensor.
struct DropCounter {
  std::shared_ptr<std::atomic<int>> drops = std::make_shared<std::atomic<int>>(0);
  struct Token {
    std::shared_ptr<std::atomic<int>> drops;
    Token(const Token&) = delete;
    Token(Token&& other) noexcept = default;
    explicit Token(std::shared_ptr<std::atomic<int>> d) : drops(std::move(d)) {}
    ~Token() {
      if (drops) ++*drops;
    }
  };
  [[nodiscard]] Token token() const { return Token(drops); }
  [[nodiscard]] int count() const { return drops->load(); }
};

}  // namespace

// ---- native handles -------------------------------------------------------------------------------

TEST_P(Interop, DeviceInfoOfAnyStreamNamesTheContextsDevice) {
  auto stream = ctx().create_stream();
  EXPECT_EQ(&devctx::device_info(ctx()), &ctx().info());
  EXPECT_EQ(devctx::device_info(stream).api, api());
  EXPECT_EQ(devctx::device_info(stream).id, ctx().id());
  devctx::Stream moved = std::move(stream);
  auto e = error_of([&] { (void)devctx::device_info(stream); });  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
}

TEST_P(Interop, NativeHandlesExistOnCudaAndAreRefusedClearlyOnTheCpu) {
  auto stream = ctx().create_stream();
  const devctx::Event event = stream.record_event();
  if (on_cpu()) {
    for (auto* call : {+[](devctx::DeviceContext& c) { (void)devctx::cuda_stream(c); },
                       +[](devctx::DeviceContext& c) { (void)devctx::cuda_device(c); }}) {
      auto e = error_of([&] { call(ctx()); });
      ASSERT_TRUE(e);
      EXPECT_EQ(e->code(), Errc::not_available);
      EXPECT_THAT(e->what(), HasSubstr("no native CUDA stream"));
      EXPECT_THAT(e->what(), HasSubstr("cpu:0"));
    }
    auto e = error_of([&] { (void)devctx::cuda_event(event); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::not_available);
    EXPECT_THAT(e->what(), HasSubstr("no native CUDA events"));
    int some_object = 0;
    e = error_of([&] { (void)devctx::wrap_cuda_stream(ctx(), reinterpret_cast<devctx::CudaStreamHandle>(&some_object)); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::not_available);
    EXPECT_THAT(e->what(), HasSubstr("wrap_cuda_stream"));
  } else {
    EXPECT_NE(devctx::cuda_stream(ctx()), nullptr);
    EXPECT_NE(devctx::cuda_stream(stream), nullptr);
    EXPECT_NE(devctx::cuda_stream(ctx()), devctx::cuda_stream(stream));
    EXPECT_NE(devctx::cuda_event(event), nullptr);
    EXPECT_EQ(devctx::cuda_device(stream), ctx().id());
    auto e = error_of([&] { (void)devctx::wrap_cuda_stream(ctx(), nullptr); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(e->what(), HasSubstr("cudaStreamLegacy"));
  }
  auto e = error_of([&] { (void)devctx::cuda_event(devctx::Event{}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
  event.synchronize();
}

// ---- views of memory devctx did not allocate ------------------------------------------------------

/// Memory "another library" allocated on this device: a devctx buffer handed over with release().
struct ForeignMemory {
  devctx::ReleasedBuffer<float> memory;
  ForeignMemory(devctx::StreamRef s, std::size_t n) : memory(s.enqueue_create_buffer<float>(n).release()) {}
  ForeignMemory(const ForeignMemory&) = delete;
  ForeignMemory& operator=(const ForeignMemory&) = delete;
  ~ForeignMemory() { memory.free(memory.owner); }
};

TEST_P(Interop, EveryVerbWorksOnAViewOfForeignMemory) {
  const std::size_t n = 10'007;
  ForeignMemory a(ctx(), n), b(ctx(), n);
  auto in = devctx::wrap_device_memory(ctx(), a.memory.data, n);
  auto out = devctx::wrap_device_memory(ctx(), b.memory.data, n);
  EXPECT_EQ(in.data(), a.memory.data);
  EXPECT_EQ(in.size(), n);
  EXPECT_EQ(in.size_bytes(), n * sizeof(float));
  const auto values = devctx_test::random_vector<float>(rng, n, -100.0f, 100.0f);
  ctx().enqueue_copy(in, std::span<const float>(values));  // upload into the view
  ctx().enqueue_memset(out, devctx_test::poison_value<float>());
  ctx().enqueue_function<interop_affine>(cover(n), in, out, 2.0f, 1.0f);  // views as kernel arguments
  auto v = download(ctx(), out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], values[i] * 2.0f + 1.0f) << i;

  // Slices of views, a const view as a read-only span, and device-to-device copies.
  auto host = ctx().enqueue_create_host_buffer<float>(100);
  ctx().enqueue_copy(host, out.slice(n - 100, 100));
  ctx().synchronize();
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(host[i], values[n - 100 + i] * 2.0f + 1.0f) << i;
  auto copy = poisoned_buffer<float>(ctx(), n);
  ctx().enqueue_copy(copy, in);
  const devctx::DeviceView<const float> read_only = devctx::wrap_device_memory<const float>(ctx(), a.memory.data, n);
  ctx().enqueue_function<interop_affine>(cover(n), read_only, out, -1.0f, 0.0f);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx(), copy)));
  v = download(ctx(), out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], -values[i]) << i;

  // On another stream of the device, too.
  auto stream = ctx().create_stream();
  ctx().synchronize();
  stream.enqueue_function<interop_affine>(cover(n), in, out, 0.5f, 0.0f);
  v = download(stream, out);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], values[i] * 0.5f) << i;
}

TEST_P(Interop, AViewChecksItsPointerAndCount) {
  auto where = [](const std::optional<devctx::Error>& e) { return e ? std::string(e->what()) : std::string(); };
  auto e = error_of([&] { (void)devctx::wrap_device_memory(ctx(), static_cast<float*>(nullptr), 10); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(where(e), HasSubstr("null"));
  ForeignMemory m(ctx(), 64);
  auto* misaligned = reinterpret_cast<float*>(reinterpret_cast<char*>(m.memory.data) + 2);
  e = error_of([&] { (void)devctx::wrap_device_memory(ctx(), misaligned, 4); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(where(e), HasSubstr("not aligned"));
  e = error_of([&] { (void)devctx::wrap_device_memory(ctx(), m.memory.data, std::size_t{1} << 62); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  // A null pointer with no elements is an empty view.
  auto empty = devctx::wrap_device_memory(ctx(), static_cast<float*>(nullptr), 0);
  EXPECT_EQ(empty.size(), 0u);
  std::vector<float> nothing;
  ctx().enqueue_copy(empty, nothing);

  // Host memory is device memory on the CPU backend only.
  std::vector<float> host(256);
  if (on_cpu()) {
    auto view = devctx::wrap_device_memory(ctx(), host.data(), host.size());
    ctx().enqueue_memset(view, 3.5f);
    ctx().synchronize();
    for (float x : host) ASSERT_EQ(x, 3.5f);
  } else {
    e = error_of([&] { (void)devctx::wrap_device_memory(ctx(), host.data(), host.size()); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(where(e), HasSubstr("host memory"));
    auto pinned = ctx().enqueue_create_host_buffer<float>(256);
    ctx().synchronize();
    e = error_of([&] { (void)devctx::wrap_device_memory(ctx(), pinned.data(), pinned.size()); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(where(e), HasSubstr("page-locked host memory"));
  }
}

TEST_P(Interop, ARawSpanKernelArgumentIsCheckedAsAViewIs) {
  const std::size_t n = 1000;
  const auto values = devctx_test::random_vector<std::int32_t>(rng, n, -1000, 1000);
  // Over device memory it passes on every backend.
  auto buffer = upload(ctx(), values);
  ctx().enqueue_function<interop_add>(cover(n), buffer.span(), 3);
  auto v = download(ctx(), buffer);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], values[i] + 3) << i;
  // Over host memory: the CPU backend's device memory; refused before anything is enqueued on CUDA.
  std::vector<std::int32_t> host = values;
  const devctx::span<std::int32_t> raw(host.data(), host.size());
  if (on_cpu()) {
    ctx().enqueue_function<interop_add>(cover(n), raw, -1);
    ctx().synchronize();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(host[i], values[i] - 1) << i;
  } else {
    auto e = error_of([&] { ctx().enqueue_function<interop_add>(cover(n), raw, -1); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(e->what(), HasSubstr("argument 1 (a devctx::span)"));
    EXPECT_THAT(e->what(), HasSubstr("ordinary host memory"));
    ctx().synchronize();
    EXPECT_TRUE(devctx_test::all_equal(values, host));
  }
}

TEST_P(Interop, AMovedFromViewIsAnInvalidHandleEverywhere) {
  ForeignMemory m(ctx(), 16);
  auto view = devctx::wrap_device_memory(ctx(), m.memory.data, 16);
  auto other = std::move(view);
  EXPECT_FALSE(view);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(other);
  std::vector<float> host(16);
  for (const auto& f : std::vector<std::function<void()>>{
           [&] { ctx().enqueue_copy(host, view); }, [&] { ctx().enqueue_memset(view, 1.0f); },
           [&] { ctx().enqueue_function<interop_affine>(cover(16), other, view, 1.0f, 0.0f); },
           [&] { (void)view.slice(0, 1); }}) {
    auto e = error_of(f);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_handle);
    EXPECT_THAT(e->what(), HasSubstr("DeviceView"));
  }
}

TEST_P(Interop, AViewsReleaseRunsOnlyAfterDevctxsWorkOnItOnEveryStream) {
  const std::size_t n = 1 << 16;
  const unsigned rounds = on_cpu() ? 200 : 20000;
  const auto seed = std::uint32_t(rng());
  ForeignMemory m(ctx(), n);  // float-sized elements, used as uint32
  auto* data = reinterpret_cast<std::uint32_t*>(m.memory.data);
  std::atomic<int> releases{0};
  std::vector<std::uint32_t> seen_at_release;
  auto stream = ctx().create_stream();
  {
    auto view = devctx::wrap_device_memory(ctx(), data, n, [&] {
      // Runs once devctx's work on the memory has finished: the slow fill is complete.
      ++releases;
      auto tmp = ctx().enqueue_create_buffer<std::uint32_t>(0);  // devctx may be called from a release
      (void)tmp;
    });
    ctx().synchronize();
    stream.enqueue_function<interop_slow_fill>(cover(n), view, seed, rounds);  // not the view's home stream
    // Leaving the scope drops the view while the fill may still run; the release never runs inside the drop.
  }
  EXPECT_EQ(releases.load(), 0);
  ctx().synchronize();  // waits for both streams; the release runs at its end
  EXPECT_EQ(releases.load(), 1);
  auto check = devctx::wrap_device_memory(ctx(), data, n);
  std::vector<std::uint32_t> expect(n);
  for (std::size_t i = 0; i < n; ++i) expect[i] = interop_lcg(seed + std::uint32_t(i), rounds);
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), check)));
  ctx().synchronize();
  EXPECT_EQ(releases.load(), 1);
}

TEST_P(Interop, AViewWithoutReleaseCallbackAndStreamSynchronizeRunReleases) {
  ForeignMemory m(ctx(), 1024);
  int released = 0;
  auto stream = ctx().create_stream();
  {
    auto v = devctx::wrap_device_memory(stream, m.memory.data, 1024, [&] { ++released; });
    stream.enqueue_memset(v, 1.0f);
  }
  stream.synchronize();  // the view's home stream: its release is due now
  EXPECT_EQ(released, 1);
  {
    auto v = devctx::wrap_device_memory(ctx(), m.memory.data, 1024);
    ctx().enqueue_memset(v, 2.0f);
  }
  ctx().synchronize();
}

// ---- handing a buffer's memory to another owner ---------------------------------------------------

TEST_P(Interop, ReleaseHandsTheMemoryOverAndEmptiesTheBuffer) {
  const std::size_t n = 4099;
  const auto values = devctx_test::random_vector<std::int32_t>(rng, n, -1'000'000, 1'000'000);
  auto buffer = upload(ctx(), values);
  std::int32_t* address = buffer.data();
  auto released = buffer.release();
  EXPECT_FALSE(buffer);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_EQ(released.data, address);
  EXPECT_EQ(released.size, n);
  ASSERT_NE(released.free, nullptr);
  auto e = error_of([&] { (void)buffer.release(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
  {
    // Still the same memory and contents, used as a foreign owner would let devctx use it.
    auto view = devctx::wrap_device_memory(ctx(), released.data, released.size);
    ctx().enqueue_function<interop_add>(cover(n), view, 7);
    auto v = download(ctx(), view);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], values[i] + 7) << i;
  }
  released.free(released.owner);  // frees in stream order after the work above

  auto host = ctx().enqueue_create_host_buffer<double>(33);
  auto host_released = host.release();
  EXPECT_FALSE(host);
  EXPECT_EQ(host_released.size, 33u);
  host_released.free(host_released.owner);
  ctx().synchronize();
}

// ---- DLPack export --------------------------------------------------------------------------------

TEST_P(Interop, ExportedTensorsDescribeTheMemoryAndOwnIt) {
  const std::size_t rows = 37, cols = 101, n = rows * cols;
  const auto values = devctx_test::random_vector<float>(rng, n, -1.0f, 1.0f);
  auto buffer = upload(ctx(), values);
  float* address = buffer.data();
  const std::int64_t shape[] = {std::int64_t(rows), std::int64_t(cols)};
  DLManagedTensor* t = devctx::to_dlpack(std::move(buffer), shape);
  EXPECT_FALSE(buffer);  // NOLINT(bugprone-use-after-move): moved into the tensor
  const DLTensor& d = t->dl_tensor;
  EXPECT_EQ(d.data, address);
  EXPECT_EQ(d.byte_offset, 0u);
  if (on_cpu()) {
    EXPECT_EQ(d.device.device_type, kDLCPU);
    EXPECT_EQ(d.device.device_id, 0);
  } else {
    EXPECT_EQ(d.device.device_type, kDLCUDA);
    EXPECT_EQ(d.device.device_id, ctx().id());
  }
  EXPECT_EQ(d.dtype.code, kDLFloat);
  EXPECT_EQ(d.dtype.bits, 32);
  EXPECT_EQ(d.dtype.lanes, 1);
  ASSERT_EQ(d.ndim, 2);
  EXPECT_EQ(d.shape[0], std::int64_t(rows));
  EXPECT_EQ(d.shape[1], std::int64_t(cols));
  ASSERT_NE(d.strides, nullptr);
  EXPECT_EQ(d.strides[0], std::int64_t(cols));
  EXPECT_EQ(d.strides[1], 1);
  // The tensor keeps the buffer alive: a view of it still reads the values.
  {
    auto view = devctx::wrap_device_memory(ctx(), static_cast<const float*>(d.data), n);
    EXPECT_TRUE(devctx_test::all_equal(values, download(ctx(), view)));
  }
  t->deleter(t);  // frees the buffer in stream order

  // A host buffer, and the versioned form.
  auto host = ctx().enqueue_create_host_buffer<std::uint16_t>(9);
  auto* v = devctx::to_dlpack_versioned(std::move(host));
  EXPECT_EQ(v->version.major, 1u);
  EXPECT_EQ(v->version.minor, 0u);
  EXPECT_EQ(v->flags, 0u);
  EXPECT_EQ(v->dl_tensor.device.device_type, on_cpu() ? kDLCPU : kDLCUDAHost);
  EXPECT_EQ(v->dl_tensor.device.device_id, 0);
  EXPECT_EQ(v->dl_tensor.dtype.code, kDLUInt);
  EXPECT_EQ(v->dl_tensor.dtype.bits, 16);
  ASSERT_EQ(v->dl_tensor.ndim, 1);
  EXPECT_EQ(v->dl_tensor.shape[0], 9);
  EXPECT_EQ(v->dl_tensor.strides[0], 1);
  v->deleter(v);
}

TEST_P(Interop, ExportedSlicesOwnWhatTheyAreGivenAndConstOnesAreReadOnly) {
  DropCounter counter;
  auto buffer = std::make_shared<devctx::DeviceBuffer<double>>(ctx().enqueue_create_buffer<double>(1000));
  const devctx::DeviceBuffer<double>& const_buffer = *buffer;
  auto* t = devctx::to_dlpack(buffer->slice(100, 50), counter.token());
  EXPECT_EQ(t->dl_tensor.data, buffer->data() + 100);
  EXPECT_EQ(t->dl_tensor.shape[0], 50);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 64);
  auto* r = devctx::to_dlpack_versioned(const_buffer.slice(0, 10), buffer);  // shares the buffer
  EXPECT_EQ(r->flags & devctx::dlpack::flag_read_only, devctx::dlpack::flag_read_only);
  EXPECT_EQ(buffer.use_count(), 2);
  EXPECT_EQ(counter.count(), 0);
  t->deleter(t);
  EXPECT_EQ(counter.count(), 1);
  r->deleter(r);
  EXPECT_EQ(buffer.use_count(), 1);

  // Bool and signed integers; a zero-sized export.
  auto flags = ctx().enqueue_create_buffer<bool>(3);
  auto* b = devctx::to_dlpack(std::move(flags));
  EXPECT_EQ(b->dl_tensor.dtype.code, devctx::dlpack::code_bool);
  EXPECT_EQ(b->dl_tensor.dtype.bits, 8);
  b->deleter(b);
  auto* z = devctx::to_dlpack(ctx().enqueue_create_buffer<std::int8_t>(0));
  EXPECT_EQ(z->dl_tensor.shape[0], 0);
  EXPECT_EQ(z->dl_tensor.dtype.code, kDLInt);
  z->deleter(z);
}

TEST_P(Interop, ExportRefusesAShapeThatDoesNotHoldTheElementsAndKeepsTheBuffer) {
  auto buffer = ctx().enqueue_create_buffer<float>(12);
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{5, 2}, {3, -4}, {1LL << 62, 1LL << 62, 4}}) {
    auto e = error_of([&] { (void)devctx::to_dlpack(std::move(buffer), shape); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::size_mismatch);
    EXPECT_THAT(e->what(), HasSubstr("12 elements"));
    EXPECT_TRUE(buffer);  // NOLINT(bugprone-use-after-move): nothing was taken
  }
  devctx::DeviceBuffer<float> empty;
  auto e = error_of([&] { (void)devctx::to_dlpack(std::move(empty)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
}

// ---- DLPack import --------------------------------------------------------------------------------

TEST_P(Interop, ImportedTensorsAreUsedInPlaceAndReleasedAfterTheWork) {
  const std::size_t n = 5000;
  const auto values = devctx_test::random_vector<std::int32_t>(rng, n, -1'000'000, 1'000'000);
  DropCounter counter;
  auto buffer = upload(ctx(), values);
  const std::int64_t shape[] = {50, 100};
  DLManagedTensor* t = devctx::to_dlpack(buffer.as_slice(), counter.token(), shape);
  auto view = devctx::from_dlpack<std::int32_t>(ctx(), t);  // zero-copy: the same memory
  EXPECT_EQ(view.data(), buffer.data());
  EXPECT_EQ(view.size(), n);
  ctx().enqueue_function<interop_add>(cover(n), view, -3);
  auto v = download(ctx(), buffer);  // seen through the original buffer
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], values[i] - 3) << i;
  view = {};
  EXPECT_EQ(counter.count(), 0);  // the deleter waits for the next synchronize
  ctx().synchronize();
  EXPECT_EQ(counter.count(), 1);

  // The versioned form, read-only into a const view; byte_offset is honoured.
  auto* r = devctx::to_dlpack_versioned(std::as_const(buffer).as_slice(), counter.token());
  r->dl_tensor.byte_offset = 8 * sizeof(std::int32_t);
  r->dl_tensor.shape[0] -= 8;
  auto read_only = devctx::from_dlpack<const std::int32_t>(ctx(), r);
  EXPECT_EQ(read_only.data(), buffer.data() + 8);
  auto copy = poisoned_buffer<std::int32_t>(ctx(), n - 8);
  ctx().enqueue_copy(copy, read_only);
  v = download(ctx(), copy);
  for (std::size_t i = 0; i < n - 8; ++i) ASSERT_EQ(v[i], values[i + 8] - 3) << i;
  read_only = {};
  ctx().synchronize();
  EXPECT_EQ(counter.count(), 2);
}

TEST_P(Interop, ImportRefusesWhatDoesNotFitAndLeavesTheTensorToTheCaller) {
  DropCounter counter;
  auto buffer = ctx().enqueue_create_buffer<float>(64);
  const std::int64_t shape[] = {8, 8};
  DLManagedTensor* t = devctx::to_dlpack(buffer.as_slice(), counter.token(), shape);
  DLTensor& d = t->dl_tensor;
  auto refused = [&](Errc code, const char* text) {
    auto e = error_of([&] { (void)devctx::from_dlpack<float>(ctx(), t); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), code);
    EXPECT_THAT(e->what(), HasSubstr(text));
    EXPECT_EQ(counter.count(), 0);  // not consumed
  };
  // The element type.
  auto e = error_of([&] { (void)devctx::from_dlpack<std::int32_t>(ctx(), t); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("does not hold int32 elements"));
  EXPECT_THAT(e->what(), HasSubstr("float32"));
  // Strides that are not row-major contiguous (a transposed view).
  std::swap(d.strides[0], d.strides[1]);
  refused(Errc::invalid_argument, "not contiguous");
  std::swap(d.strides[0], d.strides[1]);
  // A device of another kind.
  const DLDevice home = d.device;
  d.device = on_cpu() ? DLDevice{kDLCUDA, 0} : DLDevice{kDLCPU, 0};
  refused(on_cpu() ? Errc::wrong_device : Errc::invalid_argument, on_cpu() ? "kDLCUDA:0" : "host memory");
  d.device = DLDevice{kDLROCM, 0};
  refused(Errc::wrong_device, "kDLROCM:0");
  d.device = home;
  d.shape[0] = -1;
  refused(Errc::invalid_argument, "malformed shape");
  d.shape[0] = 8;
  e = error_of([&] { (void)devctx::from_dlpack<float>(ctx(), static_cast<DLManagedTensor*>(nullptr)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  // A dimension of extent 1 may have any stride; null strides mean compact.
  d.shape[0] = 1;
  d.strides[0] = 12345;
  {
    auto ok = devctx::from_dlpack<float>(ctx(), t);
    EXPECT_EQ(ok.size(), 8u);
  }
  ctx().synchronize();
  EXPECT_EQ(counter.count(), 1);

  auto* v = devctx::to_dlpack_versioned(std::as_const(buffer).as_slice(), counter.token());
  v->dl_tensor.strides = nullptr;
  e = error_of([&] { (void)devctx::from_dlpack<float>(ctx(), v); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("read-only"));
  v->version.major = 2;
  e = error_of([&] { (void)devctx::from_dlpack<const float>(ctx(), v); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_argument);
  EXPECT_THAT(e->what(), HasSubstr("DLPack 2.0"));
  EXPECT_EQ(counter.count(), 1);
  v->version.major = 1;
  {
    auto ok = devctx::from_dlpack<const float>(ctx(), v);
    EXPECT_EQ(ok.size(), 64u);
  }
  ctx().synchronize();
  EXPECT_EQ(counter.count(), 2);
}
