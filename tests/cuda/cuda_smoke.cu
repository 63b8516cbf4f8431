// SPDX-License-Identifier: Apache-2.0
// devctx_cuda_smoke: an end-to-end check of the CUDA backend on a real GPU, beside the
// behavioural suite (tests/*_test.cpp), run by ctest with the label `gpu`. Each check prints
// PASS/FAIL; the exit status is 0 when all pass, 1 otherwise, 77 (skipped) without a CUDA
// device unless DEVCTX_REQUIRE_GPU=1. `devctx_cuda_smoke oob|trap` instead launches a kernel
// that faults and checks how the fault and the lost context are reported: the process cannot
// use the GPU afterwards, so each fault runs in a process of its own (its own ctest entry).
#include <devctx/devctx.hpp>

#include "../support/gpu_program.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace {

DEVCTX_KERNEL void vector_add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a[i] + b[i];
}

// One partial sum per block of 256 threads, through shared memory and barriers.
DEVCTX_KERNEL void block_sum(devctx::span<const float> in, devctx::span<float> out) {
  DEVCTX_SHARED(float, s, 256);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned stride = devctx::block_dim().x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = s[0];
}

DEVCTX_KERNEL void warp_sums(devctx::span<const int> in, devctx::span<int> out) {
  const std::size_t i = devctx::global_idx().x;
  const int total = devctx::warp_sum(in[i]);
  if (devctx::lane_id() == 0) out[i / devctx::warp_size] = total;
}

DEVCTX_KERNEL void count_and_sum(devctx::span<const int> in, devctx::span<unsigned> count, devctx::span<float> sum) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= in.size()) return;
  if (in[i] % 3 == 0) devctx::atomic_add(&count[0], 1u);
  devctx::atomic_add(&sum[0], 1.0f);
}

// Uses the whole dynamic shared memory of the launch: thread t fills a strided part, the block
// reverses it, and writes element k of the reversed array to out.
DEVCTX_KERNEL void shared_reverse(devctx::span<float> out) {
  const auto sh = devctx::dynamic_shared<float>();
  const unsigned t = devctx::thread_idx().x, n = unsigned(sh.size());
  for (unsigned k = t; k < n; k += devctx::block_dim().x) sh[k] = float(k);
  devctx::barrier();
  for (unsigned k = t; k < n; k += devctx::block_dim().x) out[k] = sh[n - 1 - k];
}

DEVCTX_KERNEL void block_level_scale(devctx::Block blk, devctx::span<float> data, float factor) {
  blk.for_each_thread([&](devctx::Thread t) {
    const auto i = blk.global_idx(t).x;
    if (i < data.size()) data[i] *= factor;
  });
}

DEVCTX_KERNEL void out_of_bounds(devctx::span<float> out) {
  // Far outside any allocation: an illegal address on the GPU.
  out.data()[(std::size_t(1) << 40) + devctx::global_idx().x] = 1.0f;
}

DEVCTX_KERNEL void trap_kernel(devctx::span<float> out) {
#if defined(__CUDA_ARCH__)
  if (devctx::global_idx().x == 7) __trap();
#endif
  out[0] = 1.0f;
}

struct Pattern12 {
  std::uint32_t a, b, c;
  bool operator==(const Pattern12&) const = default;
};
struct Pattern24 {
  double a;
  std::uint64_t b;
  std::uint32_t c, d;
  bool operator==(const Pattern24&) const = default;
};
struct alignas(16) Pattern16 {
  std::uint64_t a, b;
  bool operator==(const Pattern16&) const = default;
};
struct Pattern300 {
  unsigned char bytes[300];
  bool operator==(const Pattern300& o) const { return std::memcmp(bytes, o.bytes, 300) == 0; }
};

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

void section(const char* name, const std::function<void()>& body) {
  try {
    body();
  } catch (const devctx::Error& e) {
    check(false, std::string(name) + ": devctx::Error (" + devctx::to_string(e.code()) + "): " + e.what());
  } catch (const std::exception& e) {
    check(false, std::string(name) + ": exception: " + e.what());
  }
}

/// Checks that f() throws devctx::Error with `code`, and a message that names `names`.
template <class F>
void expect_error(const char* name, devctx::Errc code, F&& f, const char* names = "") {
  try {
    f();
    check(false, std::string(name) + ": no error was thrown");
  } catch (const devctx::Error& e) {
    check(e.code() == code && std::string(e.what()).find(names) != std::string::npos,
          std::string(name) + " -> " + devctx::to_string(e.code()) + ": " + e.what());
  }
}

template <class T>
void memset_case(devctx::DeviceContext& ctx, const char* name, T value, std::size_t n, std::size_t offset) {
  auto d = ctx.enqueue_create_buffer<T>(n);
  auto h = ctx.enqueue_create_host_buffer<T>(n);
  T zero{};
  std::memset(&zero, 0, sizeof zero);
  ctx.enqueue_memset(d, zero);
  ctx.enqueue_memset(d.slice(offset, n - offset - 1), value);
  ctx.enqueue_copy(h, d);
  ctx.synchronize();
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok &= (i >= offset && i < n - 1) ? h[i] == value : h[i] == zero;
  // And straight into the page-locked host buffer.
  ctx.enqueue_memset(h, zero);
  ctx.enqueue_memset(h.slice(offset, n - offset - 1), value);
  ctx.synchronize();
  for (std::size_t i = 0; i < n; ++i) ok &= (i >= offset && i < n - 1) ? h[i] == value : h[i] == zero;
  check(ok, std::string("enqueue_memset ") + name + " (" + std::to_string(sizeof(T)) +
                " bytes, n=" + std::to_string(n) + ", offset " + std::to_string(offset) + "), device and host buffer");
}

// Every check of the backend on one context, each section on its own.
void checks(devctx::DeviceContext& ctx) {
  section("round trip", [&] {
    const std::size_t n = (1u << 20) + 3;
    auto h_a = ctx.enqueue_create_host_buffer<float>(n);
    auto h_b = ctx.enqueue_create_host_buffer<float>(n);
    auto h_out = ctx.enqueue_create_host_buffer<float>(n);
    auto d_a = ctx.enqueue_create_buffer<float>(n);
    auto d_b = ctx.enqueue_create_buffer<float>(n);
    auto d_out = ctx.enqueue_create_buffer<float>(n);
    ctx.synchronize();
    for (std::size_t i = 0; i < n; ++i) {
      h_a[i] = float(i);
      h_b[i] = 2.0f * float(i);
    }
    ctx.enqueue_copy(d_a, h_a);
    ctx.enqueue_copy(d_b, h_b);
    ctx.enqueue_function<vector_add>({.grid_dim = unsigned((n + 255) / 256), .block_dim = 256}, d_a, d_b, d_out);
    ctx.enqueue_copy(h_out, d_out);
    ctx.synchronize();
    bool ok = true;
    for (std::size_t i = 0; i < n; ++i) ok &= h_out[i] == 3.0f * float(i);
    check(ok, "vector_add round trip through HostBuffers");

    std::vector<float> pageable(n, 0.0f);
    ctx.enqueue_copy(pageable, d_out);  // returns once written
    ok = true;
    for (std::size_t i = 0; i < n; ++i) ok &= pageable[i] == 3.0f * float(i);
    std::vector<float> back(1000);
    for (std::size_t i = 0; i < back.size(); ++i) back[i] = -float(i);
    ctx.enqueue_copy(d_out.slice(10, 1000), back);
    back.assign(back.size(), 0.0f);  // reusing the memory at once must be safe
    ctx.enqueue_copy(pageable, d_out);
    for (std::size_t i = 0; i < n; ++i) ok &= pageable[i] == ((i >= 10 && i < 1010) ? -float(i - 10) : 3.0f * float(i));
    auto d_copy = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(d_copy, d_out);
    ctx.enqueue_copy(h_a, d_copy);
    ctx.synchronize();
    for (std::size_t i = 0; i < n; ++i) ok &= h_a[i] == pageable[i];
    check(ok, "pageable std::vector copies both ways, slices, device-to-device");
  });

  section("block reduction", [&] {
    const std::size_t n = 1u << 22;
    std::vector<float> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = float(i % 7);
    auto d_in = ctx.enqueue_create_buffer<float>(n);
    auto d_part = ctx.enqueue_create_buffer<float>(n / 256);
    ctx.enqueue_copy(d_in, host);
    ctx.enqueue_function<block_sum>({.grid_dim = unsigned(n / 256), .block_dim = 256}, d_in, d_part);
    std::vector<float> parts(n / 256);
    ctx.enqueue_copy(parts, d_part);
    double total = std::accumulate(parts.begin(), parts.end(), 0.0);
    double expected = std::accumulate(host.begin(), host.end(), 0.0);
    check(total == expected, "block_sum with DEVCTX_SHARED and barrier(): " + std::to_string(total));
  });

  section("warp_sum", [&] {
    const std::size_t n = 1u << 16;
    std::vector<int> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = int(i % 100) - 50;
    auto d_in = ctx.enqueue_create_buffer<int>(n);
    auto d_out = ctx.enqueue_create_buffer<int>(n / 32);
    ctx.enqueue_copy(d_in, host);
    ctx.enqueue_function<warp_sums>({.grid_dim = unsigned(n / 128), .block_dim = 128}, d_in, d_out);
    std::vector<int> out(n / 32);
    ctx.enqueue_copy(out, d_out);
    bool ok = true;
    for (std::size_t w = 0; w < n / 32; ++w)
      ok &= out[w] == std::accumulate(host.begin() + w * 32, host.begin() + w * 32 + 32, 0);
    check(ok, "warp_sum");
  });

  section("atomics", [&] {
    const std::size_t n = 1000003;
    std::vector<int> host(n);
    std::iota(host.begin(), host.end(), 0);
    auto d_in = ctx.enqueue_create_buffer<int>(n);
    auto d_count = ctx.enqueue_create_buffer<unsigned>(1);
    auto d_sum = ctx.enqueue_create_buffer<float>(1);
    ctx.enqueue_copy(d_in, host);
    ctx.enqueue_memset(d_count, 0u);
    ctx.enqueue_memset(d_sum, 0.0f);
    ctx.enqueue_function<count_and_sum>({.grid_dim = unsigned((n + 255) / 256), .block_dim = 256}, d_in, d_count, d_sum);
    unsigned count = 0;
    float sum = 0;
    ctx.enqueue_copy(std::span<unsigned>(&count, 1), d_count);
    ctx.enqueue_copy(std::span<float>(&sum, 1), d_sum);
    check(count == (n + 2) / 3 && sum == float(n),
          "atomic_add unsigned " + std::to_string(count) + ", float " + std::to_string(sum));
  });

  section("dynamic shared memory above 48 KiB", [&] {
    const std::size_t bytes = 200 * 1024;
    const std::size_t n = bytes / sizeof(float);
    auto d_out = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_function<shared_reverse>({.grid_dim = 1, .block_dim = 1024, .shared_bytes = bytes}, d_out);
    std::vector<float> out(n);
    ctx.enqueue_copy(out, d_out);
    bool ok = true;
    for (std::size_t k = 0; k < n; ++k) ok &= out[k] == float(n - 1 - k);
    check(ok, "dynamic_shared<float>() over 200 KiB");
  });

  section("block-level kernel", [&] {
    const std::size_t n = 5000;
    std::vector<float> host(n, 2.0f);
    auto d = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(d, host);
    ctx.enqueue_function<block_level_scale>({.grid_dim = unsigned((n + 127) / 128), .block_dim = 128}, d, 1.5f);
    ctx.enqueue_copy(host, d);
    bool ok = true;
    for (float v : host) ok &= v == 3.0f;
    check(ok, "Block / for_each_thread kernel");
  });

  section("memset", [&] {
    memset_case<unsigned char>(ctx, "uint8", 0xab, 1001, 3);
    memset_case<std::uint16_t>(ctx, "uint16 uniform", 0x7777, 4099, 1);
    memset_case<std::uint16_t>(ctx, "uint16", 0x1234, 4099, 1);
    memset_case<float>(ctx, "float", 1.5f, 100003, 5);
    memset_case<double>(ctx, "double", -2.25, 100003, 1);
    memset_case<Pattern12>(ctx, "12-byte struct", Pattern12{1, 2, 3}, 33333, 1);
    memset_case<Pattern16>(ctx, "16-byte struct", Pattern16{0x0102030405060708ull, 0x1112131415161718ull}, 33333, 1);
    memset_case<Pattern24>(ctx, "24-byte struct", Pattern24{1.0, 2, 3, 4}, 3333, 2);
    Pattern300 big;
    for (int i = 0; i < 300; ++i) big.bytes[i] = static_cast<unsigned char>(i * 7);
    memset_case<Pattern300>(ctx, "300-byte struct", big, 1025, 1);
  });

  section("streams and events", [&] {
    const std::size_t n = 1u << 24;
    auto s1 = ctx.create_stream();
    auto s2 = ctx.create_stream();
    auto d = ctx.enqueue_create_buffer<float>(n);
    auto e_alloc = ctx.record_event();
    s1.enqueue_wait_for(e_alloc);
    auto t0 = s1.record_event();
    s1.enqueue_memset(d, 4.0f);
    for (int k = 0; k < 5; ++k)
      s1.enqueue_function<block_level_scale>({.grid_dim = unsigned(n / 256), .block_dim = 256}, d, 0.5f);
    auto t1 = s1.record_event();
    s2.enqueue_wait_for(t1);
    auto h = s2.enqueue_create_host_buffer<float>(n);
    s2.enqueue_copy(h, d);
    {
      auto scratch = s2.enqueue_create_buffer<float>(n);  // freed in stream order right away
      s2.enqueue_copy(scratch, d);
    }
    auto done = s2.record_event();
    done.synchronize();
    const double ms = devctx::elapsed_ms(t0, t1);
    bool ok = done.query() && ms > 0.0;
    for (std::size_t i = 0; i < n; i += 4097) ok &= h[i] == 0.125f;
    check(ok, "cross-stream waits, stream-ordered allocation on another stream, elapsed_ms " + std::to_string(ms));
    // A buffer used on a second stream and dropped while that stream still works on it.
    {
      auto shared_buffer = ctx.enqueue_create_buffer<float>(n);
      ctx.enqueue_memset(shared_buffer, 1.0f);
      auto ready = ctx.record_event();
      s1.enqueue_wait_for(ready);
      for (int k = 0; k < 20; ++k)
        s1.enqueue_function<block_level_scale>({.grid_dim = unsigned(n / 256), .block_dim = 256}, shared_buffer, 1.0f);
    }
    ctx.synchronize();
    check(true, "buffer used on two streams dropped while in use");
  });

  section("sizes and errors", [&] {
    auto empty = ctx.enqueue_create_buffer<float>(0);
    auto empty_host = ctx.enqueue_create_host_buffer<float>(0);
    ctx.enqueue_copy(empty, empty_host);
    ctx.synchronize();
    check(empty.size() == 0, "zero-sized buffers");
    auto d = ctx.enqueue_create_buffer<float>(16);
    expect_error("block of 2048 threads", devctx::Errc::invalid_launch,
                 [&] { ctx.enqueue_function<block_level_scale>({.grid_dim = 1, .block_dim = 2048}, d, 1.0f); });
    expect_error("shared_bytes 1 MiB", devctx::Errc::invalid_launch, [&] {
      ctx.enqueue_function<shared_reverse>({.grid_dim = 1, .block_dim = 32, .shared_bytes = 1u << 20}, d);
    });
    expect_error("out of device memory", devctx::Errc::out_of_memory,
                 [&] { auto huge = ctx.enqueue_create_buffer<char>(std::size_t(1) << 44); });
    expect_error("cuda:99", devctx::Errc::not_available,
                 [] { devctx::DeviceContext other{devctx_test::gpu::cuda_api(), 99}; });
    devctx::DeviceContext second{devctx_test::gpu::cuda_api(), 0};
    auto d2 = second.enqueue_create_buffer<float>(16);
    second.enqueue_memset(d2, 2.0f);
    second.enqueue_copy(d, d2);
    std::vector<float> out(16);
    ctx.synchronize();
    second.synchronize();
    ctx.enqueue_copy(out, d);
    check(out[15] == 2.0f, "a second context of the same device shares its memory");
    ctx.synchronize();
    check(true, "the context is still usable after the rejected requests");
  });
}

// The device fault `fault` ("oob" or "trap") on a fresh context: reported once as kernel_failed
// naming the kernel, then as context_lost by every later call, on any context of the device.
void fault_run(devctx::DeviceContext& ctx, const std::string& fault) {
  auto d = ctx.enqueue_create_buffer<float>(1024);
  const char* kernel = fault == "oob" ? "out_of_bounds" : "trap_kernel";
  if (fault == "oob")
    ctx.enqueue_function<out_of_bounds>({.grid_dim = 4, .block_dim = 256}, d);
  else
    ctx.enqueue_function<trap_kernel>({.grid_dim = 4, .block_dim = 256}, d);
  expect_error("device fault at synchronize", devctx::Errc::kernel_failed, [&] { ctx.synchronize(); }, kernel);
  expect_error("the next call", devctx::Errc::context_lost, [&] { auto b = ctx.enqueue_create_buffer<float>(16); });
  expect_error("a new context", devctx::Errc::context_lost, [&] {
    devctx::DeviceContext again{devctx_test::gpu::cuda_api(), 0};
    again.synchronize();
  });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string fault = argc > 1 ? argv[1] : "";
  if (argc > 2 || (argc == 2 && fault != "oob" && fault != "trap")) {
    std::fprintf(stderr, "usage: %s [oob|trap]\n", argv[0]);
    return 2;
  }
  const int gpus = devctx::DeviceContext::count(devctx_test::gpu::cuda_api());
  std::printf("cuda devices: %d\n", gpus);
  if (gpus == 0) {
    return devctx_test::gpu::no_gpu_exit();
  }
  devctx::DeviceContext ctx{devctx_test::gpu::cuda_api(), 0};
  const auto& info = ctx.info();
  std::printf("%s: %u SMs, %u threads/block, shared/block %zu, warp %u, memory %zu, cc %d.%d\n", ctx.name().c_str(),
              info.multiprocessors, info.max_threads_per_block, info.max_shared_bytes_per_block, info.warp_size,
              info.total_memory_bytes, info.compute_capability_major, info.compute_capability_minor);
  if (!fault.empty()) {
    section("device fault", [&] { fault_run(ctx, fault); });
  } else {
    check(ctx.api() == devctx_test::gpu::cuda_api() && info.warp_size == 32 && info.max_shared_bytes_per_block > 48 * 1024,
          "device info");
    checks(ctx);
  }
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
