// tests/host_api_test.cpp - the host side of the contract, run on every backend: device
// selection, DeviceInfo, buffers and slices, enqueue_copy between every pair of endpoint kinds,
// enqueue_memset, streams, events, buffer lifetimes, moved-from handles, cross-device misuse.
#include "support/test_support.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using devctx::Api;
using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::ScopedEnv;
using testing::HasSubstr;

// ---- kernels used by these tests ---------------------------------------------------------------

DEVCTX_KERNEL void iota_kernel(devctx::span<std::uint32_t> out, std::uint32_t base) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = base + std::uint32_t(i);
}

DEVCTX_KERNEL void add_kernel(devctx::span<std::uint32_t> data, std::uint32_t value) {
  const auto i = devctx::global_idx().x;
  if (i < data.size()) data[i] += value;
}

/// out[i] = in[i] * mul + add: reads one buffer, writes another (ordering between them matters).
DEVCTX_KERNEL void affine_kernel(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out,
                                 std::uint32_t mul, std::uint32_t add) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] * mul + add;
}

DEVCTX_DEVICE inline std::uint32_t lcg_rounds(std::uint32_t x, unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  return x;
}

/// Deliberately slow: each element needs `rounds` dependent steps, so work queued behind it on
/// another stream would see poison if ordering were broken.
DEVCTX_KERNEL void slow_fill(devctx::span<std::uint32_t> out, std::uint32_t seed, unsigned rounds) {
  const auto i = devctx::global_idx().x;
  if (i >= out.size()) return;
  out[i] = lcg_rounds(seed + std::uint32_t(i), rounds);
}

/// Announces itself in flags[me], then waits (a bounded number of polls) to see flags[other].
/// Two of these on two streams see each other only if the streams really run at the same time.
DEVCTX_KERNEL void handshake(devctx::span<unsigned> flags, unsigned me, unsigned other,
                             unsigned long long max_polls, devctx::span<unsigned> saw) {
  devctx::atomic_add(&flags[me], 1u);
  unsigned long long polls = 0;
  while (devctx::atomic_add(&flags[other], 0u) == 0u && polls < max_polls) ++polls;
  saw[me] = devctx::atomic_add(&flags[other], 0u) != 0u ? 1u : 0u;
}

DEVCTX_KERNEL void noop_kernel() {}

namespace {

std::vector<std::uint32_t> slow_fill_reference(std::size_t n, std::uint32_t seed, unsigned rounds) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = lcg_rounds(seed + std::uint32_t(i), rounds);
  return v;
}

std::string env_text(Api api, int id) { return std::string(devctx::to_string(api)) + ":" + std::to_string(id); }

}  // namespace

// ---- device selection and properties ------------------------------------------------------------

TEST(DeviceCount, CpuIsAlwaysOneAndCudaMatchesTheBuild) {
  EXPECT_EQ(DeviceContext::count(Api::cpu), 1);
  const int cuda = DeviceContext::count(Api::cuda);
  EXPECT_GE(cuda, 0);
  if (!devctx_test::cuda_built()) {
    EXPECT_EQ(cuda, 0) << "devctx was built without CUDA";
  }
}

TEST(DeviceSelection, ExplicitCpuDevice) {
  DeviceContext ctx{Api::cpu};
  EXPECT_EQ(ctx.api(), Api::cpu);
  EXPECT_EQ(ctx.id(), 0);
}

TEST(DeviceSelection, DefaultWithoutEnvironmentPrefersTheFirstGpu) {
  const ScopedEnv env("DEVCTX_DEVICE", nullptr);
  DeviceContext ctx;
  EXPECT_EQ(ctx.api(), DeviceContext::count(Api::cuda) > 0 ? Api::cuda : Api::cpu);
  EXPECT_EQ(ctx.id(), 0);
}

TEST(DeviceSelection, EmptyEnvironmentValueMeansUnset) {
  const ScopedEnv env("DEVCTX_DEVICE", "");
  DeviceContext ctx;
  EXPECT_EQ(ctx.api(), DeviceContext::count(Api::cuda) > 0 ? Api::cuda : Api::cpu);
}

TEST(DeviceSelection, EnvironmentCpu) {
  for (const char* text : {"cpu", "cpu:0"}) {
    SCOPED_TRACE(text);
    const ScopedEnv env("DEVCTX_DEVICE", text);
    DeviceContext ctx;
    EXPECT_EQ(ctx.api(), Api::cpu);
    EXPECT_EQ(ctx.id(), 0);
  }
}

TEST(DeviceSelection, EnvironmentCuda) {
  const int n = DeviceContext::count(Api::cuda);
  if (n == 0) {
    // Naming an absent backend is an error, not a silent fallback to the CPU.
    for (const char* text : {"cuda", "cuda:0"}) {
      const ScopedEnv env("DEVCTX_DEVICE", text);
      const auto e = error_of([] { DeviceContext ctx; });
      ASSERT_TRUE(e);
      EXPECT_EQ(e->code(), Errc::not_available) << e->what();
      EXPECT_THAT(e->what(), HasSubstr("CUDA"));
    }
    return;
  }
  {
    const ScopedEnv env("DEVCTX_DEVICE", "cuda");
    DeviceContext ctx;
    EXPECT_EQ(ctx.api(), Api::cuda);
    EXPECT_EQ(ctx.id(), 0);
  }
  for (int id = 0; id < n; ++id) {
    const std::string text = env_text(Api::cuda, id);
    const ScopedEnv env("DEVCTX_DEVICE", text.c_str());
    DeviceContext ctx;
    EXPECT_EQ(ctx.api(), Api::cuda);
    EXPECT_EQ(ctx.id(), id);
  }
  const std::string past_end = env_text(Api::cuda, n);
  const ScopedEnv env("DEVCTX_DEVICE", past_end.c_str());
  const auto e = error_of([] { DeviceContext ctx; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::not_available) << e->what();
}

TEST(DeviceSelection, EnvironmentCpuDevicePastTheEndIsNotAvailable) {
  const ScopedEnv env("DEVCTX_DEVICE", "cpu:1");
  const auto e = error_of([] { DeviceContext ctx; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::not_available) << e->what();
  EXPECT_THAT(e->what(), HasSubstr("cpu:1"));
}

TEST(DeviceSelection, EnvironmentGarbageIsAnError) {
  for (const char* text : {"tpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", ":0", "cpu cuda"}) {
    SCOPED_TRACE(text);
    const ScopedEnv env("DEVCTX_DEVICE", text);
    const auto e = error_of([] { DeviceContext ctx; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("DEVCTX_DEVICE"));
    EXPECT_THAT(e->what(), HasSubstr(text));
  }
}

TEST(DeviceSelection, EnvironmentDoesNotAffectExplicitChoice) {
  const ScopedEnv env("DEVCTX_DEVICE", "garbage");
  DeviceContext ctx{Api::cpu};
  EXPECT_EQ(ctx.api(), Api::cpu);
}

TEST(DeviceSelection, MissingDevicesAreNotAvailable) {
  const int n = DeviceContext::count(Api::cuda);
  // Api::cuda with no CUDA device (or past the last one), and a second CPU.
  for (const auto& [api, id] : {std::pair{Api::cuda, n}, std::pair{Api::cpu, 1}, std::pair{Api::cpu, -1}}) {
    SCOPED_TRACE(env_text(api, id));
    const auto e = error_of([&, a = api, i = id] { DeviceContext ctx{a, i}; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::not_available) << e->what();
  }
  if (n == 0) {
    const auto e = error_of([] { DeviceContext ctx{Api::cuda}; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::not_available);
    EXPECT_THAT(e->what(), HasSubstr("Api::cpu")) << "the message should say how to run on the CPU";
  }
}

class Device : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Device);

TEST_P(Device, IdentityAndInfo) {
  EXPECT_EQ(ctx().api(), api());
  EXPECT_EQ(ctx().id(), 0);
  const devctx::DeviceInfo& info = ctx().info();
  EXPECT_FALSE(ctx().name().empty());
  EXPECT_EQ(ctx().name(), info.name);
  EXPECT_EQ(info.api, api());
  EXPECT_EQ(info.id, 0);
  EXPECT_GE(info.multiprocessors, 1u);
  EXPECT_GE(info.max_threads_per_block, 1024u);
  EXPECT_GE(info.max_block_dim.x, 1024u);
  EXPECT_GE(info.max_block_dim.y, 1024u);
  EXPECT_GE(info.max_block_dim.z, 64u);
  EXPECT_GE(info.max_grid_dim.x, 65535u);
  EXPECT_GE(info.max_grid_dim.y, 65535u);
  EXPECT_GE(info.max_grid_dim.z, 65535u);
  EXPECT_GE(info.max_shared_bytes_per_block, 48u * 1024u);
  EXPECT_EQ(info.warp_size, 32u);
  EXPECT_EQ(info.warp_size, devctx::warp_size);
  EXPECT_GT(info.total_memory_bytes, std::size_t{1} << 28);
  if (api() == Api::cpu) {
    EXPECT_EQ(info.compute_capability_major, 0);
  } else {
    EXPECT_GE(info.compute_capability_major, 5);
  }
  EXPECT_STREQ(devctx::to_string(api()), api() == Api::cpu ? "cpu" : "cuda");
}

TEST_P(Device, TwoContextsOfOneDeviceWorkSideBySide) {
  DeviceContext other{api(), 0};
  EXPECT_EQ(other.name(), ctx().name());
  auto a = ctx().enqueue_create_buffer<std::uint32_t>(1000);
  auto b = other.enqueue_create_buffer<std::uint32_t>(1000);
  ctx().enqueue_function<iota_kernel>(cover(1000), a, 1u);
  other.enqueue_function<iota_kernel>(cover(1000), b, 2u);
  const auto va = download(ctx(), a);
  const auto vb = download(other, b);
  for (std::uint32_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(va[i], 1 + i);
    ASSERT_EQ(vb[i], 2 + i);
  }
}

TEST_P(Device, DefaultDeviceFromEnvironmentNamesThisBackend) {
  const ScopedEnv env("DEVCTX_DEVICE", devctx::to_string(api()));
  DeviceContext by_env;
  EXPECT_EQ(by_env.api(), api());
  EXPECT_EQ(by_env.id(), 0);
  // And it is a working device.
  auto buf = by_env.enqueue_create_buffer<std::uint32_t>(10);
  by_env.enqueue_function<iota_kernel>(cover(10), buf, 7u);
  EXPECT_EQ(download(by_env, buf)[9], 16u);
}

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
  auto d = ctx().enqueue_create_buffer<float>(0);
  auto h = ctx().enqueue_create_host_buffer<float>(0);
  std::vector<float> v;
  EXPECT_EQ(d.size(), 0u);
  ctx().enqueue_copy(d, h);
  ctx().enqueue_copy(h, d);
  ctx().enqueue_copy(d, std::span<const float>(v));
  ctx().enqueue_copy(v, d);
  ctx().enqueue_memset(d, 1.0f);
  ctx().synchronize();
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
    if (k == Kind::device_buffer || k == Kind::device_slice) dev = ctx.enqueue_create_buffer<T>(total);
    else if (k == Kind::host_buffer || k == Kind::host_slice) host = ctx.enqueue_create_host_buffer<T>(total);
    else vec.resize(total);
    ctx.synchronize();
  }
  [[nodiscard]] bool sliced() const { return kind == Kind::device_slice || kind == Kind::host_slice; }
  [[nodiscard]] std::size_t full() const { return sliced() ? n + 2 * kPad : n; }

  void set(DeviceContext& ctx, const std::vector<T>& contents) {
    if (dev) ctx.enqueue_copy(dev, std::span<const T>(contents));
    else if (host) std::copy(contents.begin(), contents.end(), host.begin());
    else vec = contents;
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
        dst.visit([&](auto&& d) {
          src.visit([&](auto&& s) { e = error_of([&] { ctx().enqueue_copy(d, s); }); });
        });
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
  s.enqueue_copy(d3, ch);                 // const HostBuffer
  s.enqueue_copy(d3.slice(0, 3), ch.slice(10, 3));  // const HostSlice
  const devctx::DeviceSlice<const std::uint32_t> cs = d.slice(1, 2);
  s.enqueue_copy(d3.slice(3, 2), cs);     // DeviceSlice<const T>
  std::array<std::uint32_t, 4> arr{};
  s.enqueue_copy(arr, d3.slice(0, 4));    // std::array destination
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
    ASSERT_TRUE(devctx_test::same_bits(dv[i], expect)) << "DeviceBuffer element " << i << " of " << sizeof(T) << "-byte type";
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

// ---- synchronize, streams and events --------------------------------------------------------------

class Streams : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Streams);

TEST_P(Streams, InOrderWithinAStream) {
  const std::size_t n = 20'000;
  auto s = ctx().create_stream();
  EXPECT_TRUE(s);
  auto a = s.enqueue_create_buffer<std::uint32_t>(n);
  auto b = devctx_test::poisoned_buffer<std::uint32_t>(s, n);
  auto h = s.enqueue_create_host_buffer<std::uint32_t>(n);
  s.enqueue_function<slow_fill>(cover(n), a, 7u, 200u);
  s.enqueue_function<affine_kernel>(cover(n), a, b, 3u, 1u);
  s.enqueue_function<add_kernel>(cover(n), b, 5u);
  s.enqueue_copy(h, b);
  s.synchronize();
  const auto ref = slow_fill_reference(n, 7u, 200u);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], ref[i] * 3u + 6u) << i;
}

TEST_P(Streams, ContextSynchronizeWaitsForEveryStream) {
  const std::size_t n = 10'000;
  std::vector<devctx::Stream> streams;
  std::vector<devctx::DeviceBuffer<std::uint32_t>> bufs;
  std::vector<devctx::HostBuffer<std::uint32_t>> hosts;
  for (unsigned k = 0; k < 4; ++k) {
    streams.push_back(ctx().create_stream());
    auto& s = streams.back();
    bufs.push_back(s.enqueue_create_buffer<std::uint32_t>(n));
    hosts.push_back(s.enqueue_create_host_buffer<std::uint32_t>(n));
    s.enqueue_function<slow_fill>(cover(n), bufs.back(), k, 300u);
    s.enqueue_copy(hosts.back(), bufs.back());
  }
  ctx().synchronize();  // every stream created from the context
  for (unsigned k = 0; k < 4; ++k) {
    const auto ref = slow_fill_reference(n, k, 300u);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hosts[k][i], ref[i]) << "stream " << k << " element " << i;
  }
}

TEST_P(Streams, StreamsOverlap) {
  // Two kernels on two streams, each waiting (a bounded number of polls) for the other to
  // start: both see each other only if the streams run them at the same time. No timing.
  if (api() == Api::cpu && ctx().info().multiprocessors < 2)
    GTEST_SKIP() << "the CPU device has one worker: streams interleave but cannot overlap";
  auto flags = ctx().enqueue_create_buffer<unsigned>(2);
  auto saw = ctx().enqueue_create_buffer<unsigned>(2);
  ctx().enqueue_memset(flags, 0u);
  ctx().enqueue_memset(saw, 0xDEADBEEFu);
  ctx().synchronize();
  auto s1 = ctx().create_stream();
  auto s2 = ctx().create_stream();
  const unsigned long long polls = 1ull << 24;
  s1.enqueue_function<handshake>({.grid_dim = 1, .block_dim = 1}, flags, 0u, 1u, polls, saw);
  s2.enqueue_function<handshake>({.grid_dim = 1, .block_dim = 1}, flags, 1u, 0u, polls, saw);
  ctx().synchronize();
  const auto v = download(ctx(), saw);
  EXPECT_EQ(v[0], 1u) << "the kernel on stream 1 never saw the one on stream 2 running";
  EXPECT_EQ(v[1], 1u) << "the kernel on stream 2 never saw the one on stream 1 running";
}

TEST_P(Streams, EventOrdersWorkAcrossStreams) {
  const std::size_t n = 50'000;
  auto producer = ctx().create_stream();
  auto consumer = ctx().create_stream();
  for (unsigned round = 0; round < 3; ++round) {
    auto data = devctx_test::poisoned_buffer<std::uint32_t>(producer, n);
    auto out = devctx_test::poisoned_buffer<std::uint32_t>(producer, n);
    producer.enqueue_function<slow_fill>(cover(n), data, round, 400u);
    const devctx::Event ready = producer.record_event();
    EXPECT_TRUE(ready);
    consumer.enqueue_wait_for(ready);  // the consumer reads `data` and writes `out` only now
    consumer.enqueue_function<affine_kernel>(cover(n), data, out, 1u, 1u);
    const auto v = download(consumer, out);
    const auto ref = slow_fill_reference(n, round, 400u);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], ref[i] + 1u) << "round " << round << " element " << i;
  }
}

TEST_P(Streams, DefaultStreamWaitsForAnEventOfAnotherStream) {
  const std::size_t n = 30'000;
  auto s = ctx().create_stream();
  auto data = s.enqueue_create_buffer<std::uint32_t>(n);
  s.enqueue_function<slow_fill>(cover(n), data, 11u, 300u);
  ctx().enqueue_wait_for(s.record_event());
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), n);
  ctx().enqueue_function<affine_kernel>(cover(n), data, out, 2u, 0u);
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(n, 11u, 300u);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], ref[i] * 2u) << i;
}

TEST_P(Streams, EventHostWaitQueryAndElapsed) {
  const std::size_t n = 40'000;
  auto s = ctx().create_stream();
  auto buf = s.enqueue_create_buffer<std::uint32_t>(n);
  auto h = s.enqueue_create_host_buffer<std::uint32_t>(n);
  const devctx::Event start = s.record_event();
  s.enqueue_function<slow_fill>(cover(n), buf, 3u, 500u);
  s.enqueue_copy(h, buf);
  const devctx::Event stop = s.record_event();
  const devctx::Event copy = stop;  // copies refer to the same point
  (void)stop.query();               // never blocks; either answer is right here
  copy.synchronize();               // host wait: the work before it is done
  EXPECT_TRUE(stop.query());
  EXPECT_TRUE(start.query());
  const auto ref = slow_fill_reference(n, 3u, 500u);
  for (std::size_t i = 0; i < n; i += 97) ASSERT_EQ(h[i], ref[i]) << i;
  const double ms = devctx::elapsed_ms(start, stop);
  EXPECT_GE(ms, 0.0);
  EXPECT_TRUE(std::isfinite(ms));
  EXPECT_GE(devctx::elapsed_ms(start, start), 0.0);
  // elapsed_ms waits for events that have not finished yet.
  const devctx::Event a = ctx().record_event();
  auto buf2 = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_function<slow_fill>(cover(n), buf2, 1u, 200u);
  const devctx::Event b = ctx().record_event();
  EXPECT_GE(devctx::elapsed_ms(a, b), 0.0);
  EXPECT_TRUE(b.query());
}

TEST_P(Streams, EmptyEventsAreInvalidHandles) {
  const devctx::Event none;
  EXPECT_FALSE(none);
  const devctx::Event real = ctx().record_event();
  for (auto* f : {+[](const devctx::Event& e, const devctx::Event&, DeviceContext&) { e.synchronize(); },
                  +[](const devctx::Event& e, const devctx::Event&, DeviceContext&) { (void)e.query(); },
                  +[](const devctx::Event& e, const devctx::Event& r, DeviceContext&) { (void)devctx::elapsed_ms(e, r); },
                  +[](const devctx::Event& e, const devctx::Event& r, DeviceContext&) { (void)devctx::elapsed_ms(r, e); },
                  +[](const devctx::Event& e, const devctx::Event&, DeviceContext& c) { c.enqueue_wait_for(e); }}) {
    const auto e = error_of([&] { f(none, real, ctx()); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_handle) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("Event"));
  }
  devctx::Event moved = real;
  const devctx::Event taken = std::move(moved);
  EXPECT_TRUE(taken);
  const auto e = error_of([&] { moved.synchronize(); });  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::invalid_handle);
}

TEST_P(Streams, HostThreadsEachDrivingTheirOwnStream) {
  // Several host threads enqueue concurrently, each on a stream of its own.
  constexpr unsigned kThreads = 4;
  const std::size_t n = 20'000;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (unsigned k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      try {
        auto s = ctx().create_stream();
        for (unsigned round = 0; round < 10; ++round) {
          auto d = s.enqueue_create_buffer<std::uint32_t>(n);
          s.enqueue_function<iota_kernel>(cover(n), d, k * 1000u + round);
          s.enqueue_function<add_kernel>(cover(n), d, 1u);
          const auto v = download(s, d);
          for (std::size_t i = 0; i < n; i += 101)
            if (v[i] != k * 1000u + round + std::uint32_t(i) + 1u) {
              failures[k] = "wrong value at " + std::to_string(i);
              return;
            }
        }
        s.synchronize();
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (unsigned k = 0; k < kThreads; ++k) EXPECT_EQ(failures[k], "") << "host thread " << k;
}

TEST_P(Streams, ManyLaunchesOfAnEmptyKernel) {
  auto s = ctx().create_stream();
  for (int i = 0; i < 200; ++i) {
    s.enqueue_function<noop_kernel>({.grid_dim = 3, .block_dim = 5});
    ctx().enqueue_function<noop_kernel>({.grid_dim = {2, 2, 2}, .block_dim = {2, 2, 2}});
  }
  ctx().synchronize();
}

// ---- lifetimes: stream-ordered frees ---------------------------------------------------------------

class Lifetime : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(Lifetime);

// Buffers here are several MiB: the CPU backend's allocator then returns freed memory to the
// system at once, so work touching a buffer freed too early crashes instead of passing by luck.
constexpr std::size_t kBig = std::size_t{3} << 20;  // elements (12 MiB of uint32)

TEST_P(Lifetime, BufferDroppedRightAfterEnqueueingWork) {
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), kBig);
  {
    auto tmp = ctx().enqueue_create_buffer<std::uint32_t>(kBig);
    ctx().enqueue_function<slow_fill>(cover(kBig), tmp, 5u, 20u);
    ctx().enqueue_function<affine_kernel>(cover(kBig), tmp, out, 1u, 3u);
    auto host = ctx().enqueue_create_host_buffer<std::uint32_t>(kBig);
    ctx().enqueue_copy(host, tmp);
    ctx().enqueue_copy(tmp, host);
  }  // tmp and host are freed in stream order, after the work above
  ctx().synchronize();
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(kBig, 5u, 20u);
  for (std::size_t i = 0; i < kBig; ++i) ASSERT_EQ(v[i], ref[i] + 3u) << i;
}

TEST_P(Lifetime, BufferUsedOnTwoStreamsThenDropped) {
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), kBig);
  auto worker = ctx().create_stream();
  {
    auto tmp = ctx().enqueue_create_buffer<std::uint32_t>(kBig);  // home: the default stream
    worker.enqueue_wait_for(ctx().record_event());                // tmp and out exist now
    worker.enqueue_function<slow_fill>(cover(kBig), tmp, 9u, 60u);
    worker.enqueue_function<affine_kernel>(cover(kBig), tmp, out, 1u, 0u);
  }  // the free must wait for the worker stream, not only for the (idle) default stream
  worker.synchronize();
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(kBig, 9u, 60u);
  for (std::size_t i = 0; i < kBig; ++i) ASSERT_EQ(v[i], ref[i]) << i;
}

TEST_P(Lifetime, StreamAndItsBuffersDroppedWithWorkInFlight) {
  auto out = devctx_test::poisoned_buffer<std::uint32_t>(ctx(), kBig);
  ctx().synchronize();
  {
    auto s = ctx().create_stream();
    auto tmp = s.enqueue_create_buffer<std::uint32_t>(kBig);
    s.enqueue_function<slow_fill>(cover(kBig), tmp, 4u, 40u);
    s.enqueue_copy(out, tmp);
  }  // dropping neither blocks nor cancels: the work still runs
  ctx().synchronize();  // waits for the dropped stream's work too
  const auto v = download(ctx(), out);
  const auto ref = slow_fill_reference(kBig, 4u, 40u);
  for (std::size_t i = 0; i < kBig; ++i) ASSERT_EQ(v[i], ref[i]) << i;
}

TEST_P(Lifetime, ContextDroppedWithWorkInFlightAndBuffersOutlivingIt) {
  devctx::DeviceBuffer<std::uint32_t> survivor;
  {
    DeviceContext c{api()};
    survivor = c.enqueue_create_buffer<std::uint32_t>(kBig);
    auto tmp = c.enqueue_create_buffer<std::uint32_t>(kBig);
    c.enqueue_function<slow_fill>(cover(kBig), tmp, 1u, 40u);
    c.enqueue_copy(survivor, tmp);
  }  // must not block on, cancel or crash the enqueued work
  survivor = {};  // freeing a buffer of a dropped context
  EXPECT_FALSE(survivor);
}

TEST_P(Lifetime, MovedBuffersKeepTheirContentsAndSlices) {
  auto a = devctx_test::upload<std::uint32_t>(ctx(), {1, 2, 3, 4, 5});
  const auto slice = a.slice(1, 3);
  devctx::DeviceBuffer<std::uint32_t> b = std::move(a);
  devctx::DeviceBuffer<std::uint32_t> c;
  c = std::move(b);
  ctx().enqueue_function<add_kernel>(cover(3), slice, 10u);  // slices stay valid across moves
  EXPECT_TRUE(devctx_test::all_equal({1, 12, 13, 14, 5}, download(ctx(), c)));
}

// ---- moved-from handles ------------------------------------------------------------------------------

class MovedFrom : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(MovedFrom);

namespace {
void expect_invalid_handle(const std::optional<devctx::Error>& e, const char* what) {
  ASSERT_TRUE(e) << what;
  EXPECT_EQ(e->code(), Errc::invalid_handle) << what << ": " << e->what();
}
}  // namespace

TEST_P(MovedFrom, DeviceBuffer) {
  auto a = devctx_test::upload<std::uint32_t>(ctx(), {1, 2, 3});
  auto b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b);
  EXPECT_EQ(a.size(), 0u);
  std::vector<std::uint32_t> v(3);
  std::vector<std::uint32_t> none;
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(v, a); }), "copy from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(a, v); }), "copy to");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(none, a); }), "copy of 0 elements from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(b, a); }), "device copy from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_memset(a, 0u); }), "memset");
  expect_invalid_handle(error_of([&] { (void)a.slice(0, 0); }), "slice");
  expect_invalid_handle(error_of([&] { ctx().enqueue_function<add_kernel>(cover(3), a, 1u); }), "kernel argument");
  const auto& ca = a;
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(v, ca); }), "const copy from");
  devctx::DeviceBuffer<std::uint32_t> empty;  // default-constructed: the same rules
  expect_invalid_handle(error_of([&] { ctx().enqueue_memset(empty, 0u); }), "default-constructed");
  EXPECT_TRUE(devctx_test::all_equal({1, 2, 3}, download(ctx(), b)));
}

TEST_P(MovedFrom, HostBuffer) {
  auto a = ctx().enqueue_create_host_buffer<int>(4);
  auto b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0u);
  auto d = ctx().enqueue_create_buffer<int>(4);
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(d, a); }), "copy from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(a, d); }), "copy to");
  expect_invalid_handle(error_of([&] { ctx().enqueue_memset(a, 1); }), "memset");
  expect_invalid_handle(error_of([&] { (void)a.slice(0, 0); }), "slice");
  ctx().enqueue_memset(b, 6);
  ctx().synchronize();
  EXPECT_EQ(b[3], 6);
}

TEST_P(MovedFrom, Stream) {
  auto s = ctx().create_stream();
  auto t = std::move(s);
  EXPECT_FALSE(s);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(t);
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(8);
  std::vector<std::uint32_t> v(8);
  expect_invalid_handle(error_of([&] { (void)s.enqueue_create_buffer<int>(1); }), "create_buffer");
  expect_invalid_handle(error_of([&] { (void)s.enqueue_create_host_buffer<int>(1); }), "create_host_buffer");
  expect_invalid_handle(error_of([&] { s.enqueue_copy(v, d); }), "copy");
  expect_invalid_handle(error_of([&] { s.enqueue_memset(d, 1u); }), "memset");
  expect_invalid_handle(error_of([&] { s.enqueue_function<add_kernel>(cover(8), d, 1u); }), "launch");
  expect_invalid_handle(error_of([&] { s.synchronize(); }), "synchronize");
  expect_invalid_handle(error_of([&] { (void)s.record_event(); }), "record_event");
  expect_invalid_handle(error_of([&] { s.enqueue_wait_for(t.record_event()); }), "enqueue_wait_for");
  devctx::Stream u = ctx().create_stream();
  u = std::move(t);  // move assignment
  ctx().synchronize();
  u.enqueue_wait_for(ctx().record_event());
  u.enqueue_function<iota_kernel>(cover(8), d, 0u);
  u.synchronize();
  EXPECT_EQ(download(ctx(), d)[7], 7u);
}

TEST_P(MovedFrom, DeviceContext) {
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(8);
  DeviceContext taken = std::move(ctx());
  DeviceContext& gone = ctx();
  EXPECT_FALSE(gone);
  std::vector<std::uint32_t> v(8);
  expect_invalid_handle(error_of([&] { (void)gone.api(); }), "api");
  expect_invalid_handle(error_of([&] { (void)gone.id(); }), "id");
  expect_invalid_handle(error_of([&] { (void)gone.name(); }), "name");
  expect_invalid_handle(error_of([&] { (void)gone.info(); }), "info");
  expect_invalid_handle(error_of([&] { (void)gone.create_stream(); }), "create_stream");
  expect_invalid_handle(error_of([&] { gone.synchronize(); }), "synchronize");
  expect_invalid_handle(error_of([&] { (void)gone.enqueue_create_buffer<int>(1); }), "create_buffer");
  expect_invalid_handle(error_of([&] { gone.enqueue_copy(v, d); }), "copy");
  expect_invalid_handle(error_of([&] { gone.enqueue_memset(d, 0u); }), "memset");
  expect_invalid_handle(error_of([&] { gone.enqueue_function<iota_kernel>(cover(8), d, 0u); }), "launch");
  expect_invalid_handle(error_of([&] { (void)gone.record_event(); }), "record_event");
  // The moved-to context is fully usable; then move it back (assignment).
  taken.enqueue_function<iota_kernel>(cover(8), d, 2u);
  EXPECT_EQ(download(taken, d)[7], 9u);
  gone = std::move(taken);
  EXPECT_TRUE(gone);
  EXPECT_EQ(gone.api(), api());
  gone.enqueue_function<iota_kernel>(cover(8), d, 3u);
  EXPECT_EQ(download(gone, d)[7], 10u);
}

// ---- cross-device misuse ------------------------------------------------------------------------

class CrossDevice : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // Another device: a second GPU, or the other backend (the CPU is always present).
    const int gpus = DeviceContext::count(Api::cuda);
    if (api() == Api::cuda && gpus >= 2) other_.emplace(Api::cuda, 1);
    else if (api() == Api::cuda) other_.emplace(Api::cpu, 0);
    else if (gpus >= 1) other_.emplace(Api::cuda, 0);
    else GTEST_SKIP() << "only one device is present (the CPU): nothing to misuse across";
  }
  void TearDown() override {
    if (other_) other_->synchronize();
    other_.reset();
    BackendTest::TearDown();
  }
  std::optional<DeviceContext> other_;
};
DEVCTX_INSTANTIATE_BACKEND_TESTS(CrossDevice);

TEST_P(CrossDevice, ForeignBuffersAndEventsAreRejected) {
  DeviceContext& other = *other_;
  auto mine = devctx_test::upload<std::uint32_t>(ctx(), {1, 2, 3, 4});
  auto theirs = devctx_test::upload<std::uint32_t>(other, {5, 6, 7, 8});
  const auto wrong = [&](auto&& f, const char* what) {
    const auto e = error_of(f);
    ASSERT_TRUE(e) << what;
    EXPECT_EQ(e->code(), Errc::wrong_device) << what << ": " << e->what();
  };
  wrong([&] { ctx().enqueue_copy(mine, theirs); }, "copy from a foreign buffer");
  wrong([&] { ctx().enqueue_copy(theirs, mine); }, "copy into a foreign buffer");
  wrong([&] { ctx().enqueue_copy(theirs.slice(0, 2), mine.slice(0, 2)); }, "copy into a foreign slice");
  wrong([&] { ctx().enqueue_memset(theirs, 0u); }, "memset of a foreign buffer");
  wrong([&] { ctx().enqueue_function<add_kernel>(cover(4), theirs, 1u); }, "kernel on a foreign buffer");
  wrong([&] { ctx().enqueue_function<affine_kernel>(cover(4), mine, theirs, 1u, 1u); }, "second argument foreign");
  const devctx::Event foreign = other.record_event();
  wrong([&] { ctx().enqueue_wait_for(foreign); }, "waiting for a foreign event");
  wrong([&] { (void)devctx::elapsed_ms(ctx().record_event(), foreign); }, "elapsed_ms across devices");
  // Nothing was enqueued: both buffers are unchanged.
  EXPECT_TRUE(devctx_test::all_equal({1, 2, 3, 4}, download(ctx(), mine)));
  EXPECT_TRUE(devctx_test::all_equal({5, 6, 7, 8}, download(other, theirs)));
  // A HostBuffer of another device is ordinary host memory here.
  auto their_host = other.enqueue_create_host_buffer<std::uint32_t>(4);
  other.synchronize();
  ctx().enqueue_copy(their_host, mine);
  ctx().synchronize();
  EXPECT_EQ(their_host[3], 4u);
}
