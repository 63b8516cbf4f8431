// SPDX-License-Identifier: Apache-2.0
// devctx_bench_upload_probe: what bounds one large upload from pageable memory (issue 13).
//
// transfers_bench.cu measures a 256 MiB pageable upload right after a raw page-locked copy at
// 40-42 GB/s, and the same upload after a staged download or a raw pageable copy at 46-50. This
// probe separates the causes, in one run:
//
//  1. The same devctx upload (256 MiB unless --mib says otherwise, one copy per measurement)
//     after each of several other operations, in rotation: nothing, a staged download into the
//     same vector (its lines then sit in the CPU's caches), a raw pageable upload of it, a raw
//     page-locked upload, the host writing 1 GiB elsewhere (evicts the caches), 10 ms asleep
//     (the host's other cores idle). Then, cold, against a registered copy of the vector
//     (register_host_memory) and a HostBuffer: memory that stays page-locked.
//  2. The host alone, no DMA: copying the same bytes into a 64 MiB page-locked window (as the
//     staging chunks are filled) with 1..16 threads, cold (caches evicted first) and warm; and
//     the same with a raw page-locked upload of 256 MiB running meanwhile (the DMA engine
//     reading host memory too): how fast staging can be filled at all.
//  2b. The host alone, cold, by way of copying (memcpy; with software prefetch across pages;
//     AVX-512 non-temporal stores) and from a source on 2 MiB pages.
//  3. Staging settings (DEVCTX_CUDA_*: the staging memory's size and chunks, copy threads), one
//     context each, in rotation: uploads cold and warm, downloads, and each against the first
//     setting in the same round.
//  4. No host copy at all: the vector's own pages registered (cudaHostRegister) chunk by chunk
//     on several threads and copied from directly.
//
// Medians (min-max) of several rounds; GB/s are 10^9 bytes per second of the bytes moved once.
#include <devctx/devctx.hpp>

#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/env.hpp"
#include "support/raw_cuda.hpp"
#include "support/stats.hpp"

namespace {

using devctx_bench::size_name;
using Env = devctx_bench::ScopedEnv;

using devctx_bench::Clock;
using devctx_bench::seconds_since;
using Byte = unsigned char;
constexpr std::size_t kMiB = std::size_t{1} << 20;

using Stats = devctx_bench::Spread;
Stats stats(const std::vector<double>& v) { return devctx_bench::spread(v); }

std::string show(const Stats& s) {
  char text[64];
  std::snprintf(text, sizeof text, "%6.2f (%5.1f-%5.1f)", s.median, s.min, s.max);
  return text;
}

/// The ways the probe copies host memory: what staging could use.
enum class Way { memcpy, prefetch, stream512, stream512_prefetch };
const char* way_name(Way w) {
  switch (w) {
    case Way::memcpy: return "memcpy";
    case Way::prefetch: return "memcpy + prefetch 8 pages ahead";
    case Way::stream512: return "AVX-512 non-temporal stores";
    case Way::stream512_prefetch: return "AVX-512 non-temporal + prefetch";
  }
  return "?";
}

constexpr std::size_t kPage = 4096, kAhead = 8 * kPage;

/// memcpy 4 KiB at a time, prefetching the source 8 pages ahead (the hardware prefetcher stops
/// at page boundaries).
void copy_prefetch(Byte* d, const Byte* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + kPage <= n; i += kPage) {
    if (i + kAhead < n)
      for (std::size_t l = 0; l < kPage; l += 64) __builtin_prefetch(s + i + kAhead + l, 0, 0);
    std::memcpy(d + i, s + i, kPage);
  }
  std::memcpy(d + i, s + i, n - i);
}

#if defined(__x86_64__)
/// 64-byte loads and 64-byte non-temporal stores (destination 64-byte aligned here: the window
/// and the 1 MiB pieces are), optionally prefetching as above.
__attribute__((target("avx512f"))) void copy_stream512(Byte* d, const Byte* s, std::size_t n, bool prefetch) {
  std::size_t i = 0;
  for (; i + kPage <= n; i += kPage) {
    if (prefetch && i + kAhead < n)
      for (std::size_t l = 0; l < kPage; l += 64) __builtin_prefetch(s + i + kAhead + l, 0, 0);
    for (std::size_t l = 0; l < kPage; l += 256) {
      const __m512i a = _mm512_loadu_si512(s + i + l), b = _mm512_loadu_si512(s + i + l + 64),
                    c = _mm512_loadu_si512(s + i + l + 128), e = _mm512_loadu_si512(s + i + l + 192);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + l), a);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + l + 64), b);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + l + 128), c);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + l + 192), e);
    }
  }
  _mm_sfence();
  std::memcpy(d + i, s + i, n - i);
}
#endif

bool has_avx512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

void copy_way(Way w, Byte* d, const Byte* s, std::size_t n) {
  switch (w) {
    case Way::memcpy: std::memcpy(d, s, n); return;
    case Way::prefetch: copy_prefetch(d, s, n); return;
#if defined(__x86_64__)
    case Way::stream512: copy_stream512(d, s, n, false); return;
    case Way::stream512_prefetch: copy_stream512(d, s, n, true); return;
#else
    default: std::memcpy(d, s, n); return;
#endif
  }
}

/// Copies `bytes` from `src` into a `window`-byte page-locked region (wrapping, 1 MiB pieces),
/// split between `threads` threads, the `way` given; GB/s.
double host_fill(const Byte* src, Byte* window, std::size_t window_bytes, std::size_t bytes, unsigned threads,
                 Way way = Way::memcpy) {
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  const std::size_t share = (bytes / threads + kMiB - 1) / kMiB * kMiB;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      const std::size_t begin = std::min(bytes, t * share), end = std::min(bytes, begin + share);
      for (std::size_t at = begin; at < end; at += kMiB) {
        const std::size_t n = std::min(kMiB, end - at);
        copy_way(way, window + at % window_bytes, src + at, n);
      }
    });
  }
  for (auto& th : pool) th.join();
  return double(bytes) / seconds_since(t0) / 1e9;
}

/// What every part of the probe shares: the sizes, a raw stream, the pageable vector, 1 GiB to
/// write elsewhere (evicts the CPU's caches), page-locked memory and a device buffer for raw copies.
struct Probe {
  std::size_t n;
  int rounds;
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  std::size_t evict_bytes = std::size_t{1} << 30;
  cudaStream_t raw = nullptr;
  std::vector<Byte> pageable, elsewhere;
  Byte *pinned = nullptr, *window = nullptr, *device = nullptr;

  Probe(std::size_t bytes, int r) : n(bytes), rounds(r), pageable(bytes), elsewhere(evict_bytes) {
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
    std::memset(pageable.data(), 1, n);
    std::memset(elsewhere.data(), 2, evict_bytes);
    CK(cudaMallocHost(&pinned, n));
    CK(cudaMallocHost(&window, 64 * kMiB));
    CK(cudaMalloc(&device, n));
    std::memset(pinned, 3, n);
    std::memset(window, 4, 64 * kMiB);
  }
  ~Probe() {
    CK(cudaFree(device));
    CK(cudaFreeHost(window));
    CK(cudaFreeHost(pinned));
    CK(cudaStreamDestroy(raw));
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  void evict() { std::memset(elsewhere.data(), 5, evict_bytes); }
  void raw_pinned_upload() { CK(devctx_bench::raw_copy(device, pinned, n, true, raw, true)); }
  void raw_pageable_upload() { CK(devctx_bench::raw_copy(device, pageable.data(), n, true, raw, true)); }
};

/// Part 1: one devctx upload after each of several other operations, in rotation; then against
/// memory that stays page-locked.
void upload_after_part(Probe& p) {
  const std::size_t n = p.n;
  const int rounds = p.rounds;
  std::vector<Byte>& pageable = p.pageable;
  const auto evict = [&p] { p.evict(); };
  const auto raw_pinned_upload = [&p] { p.raw_pinned_upload(); };
  const auto raw_pageable_upload = [&p] { p.raw_pageable_upload(); };
  devctx::DeviceContext ctx{devctx::backend("cuda").api, 0};
  auto d = ctx.enqueue_create_buffer<Byte>(n);
  ctx.synchronize();
  const auto span = std::span<Byte>(pageable.data(), n);
  const auto upload = [&] {
    const auto t0 = Clock::now();
    ctx.enqueue_copy(d, span);
    ctx.synchronize();
    return double(n) / seconds_since(t0) / 1e9;
  };
  struct Before {
    const char* name;
    std::function<void()> run;
  };
  const std::vector<Before> befores = {
      {"nothing (uploads back to back)", [] {}},
      {"a staged download into the same vector", [&] { ctx.enqueue_copy(span, d); }},
      {"a raw pageable upload of the vector", raw_pageable_upload},
      {"a raw page-locked upload", raw_pinned_upload},
      {"the host writing 1 GiB elsewhere", evict},
      {"10 ms asleep", [] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); }},
      {"1 GiB written elsewhere, then a raw page-locked upload",
       [&] {
         evict();
         raw_pinned_upload();
       }},
  };
  for (int w = 0; w < 2; ++w) (void)upload();
  std::vector<std::vector<double>> results(befores.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t b = 0; b < befores.size(); ++b) {
      befores[b].run();
      results[b].push_back(upload());
    }
  std::printf("1. one devctx upload (GB/s, median (min-max)) after:\n");
  for (std::size_t b = 0; b < befores.size(); ++b)
    std::printf("   %-56s %s\n", befores[b].name, show(stats(results[b])).c_str());
  std::vector<double> raw_up;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    raw_pinned_upload();
    raw_up.push_back(double(n) / seconds_since(t0) / 1e9);
  }
  std::printf("   (raw page-locked upload, back to back:                  %s)\n", show(stats(raw_up)).c_str());
  // Memory that stays page-locked: a registered copy of the vector (register_host_memory) and
  // a HostBuffer, each after the host wrote 1 GiB elsewhere, in rotation with the staged upload.
  {
    std::vector<Byte> registered_vector(pageable.begin(), pageable.end());
    const auto registration = ctx.register_host_memory(std::span<Byte>(registered_vector));
    auto host_buffer = ctx.enqueue_create_host_buffer<Byte>(n);
    ctx.synchronize();
    std::memcpy(host_buffer.data(), pageable.data(), n);
    const auto from = [&](std::span<Byte> src) {
      evict();
      const auto t0 = Clock::now();
      ctx.enqueue_copy(d, src);
      ctx.synchronize();
      return double(n) / seconds_since(t0) / 1e9;
    };
    std::vector<double> staged, reg, hb;
    for (int r = 0; r < rounds; ++r) {
      staged.push_back(from(span));
      reg.push_back(from(std::span<Byte>(registered_vector)));
      hb.push_back(from(std::span<Byte>(host_buffer.data(), n)));
    }
    std::printf(
        "   after 1 GiB written elsewhere, in rotation: staged from the vector %s, from a registered\n"
        "   vector %s, from a HostBuffer %s\n\n",
        show(stats(staged)).c_str(), show(stats(reg)).c_str(), show(stats(hb)).c_str());
  }
  std::fflush(stdout);
}

/// Part 2: the host alone filling a page-locked window, 1..16 threads, cold and warm, with and
/// without a raw upload running meanwhile.
void fill_window_part(Probe& p) {
  const std::size_t n = p.n;
  const int rounds = p.rounds;
  const unsigned hw = p.hw;
  cudaStream_t raw = p.raw;
  std::vector<Byte>& pageable = p.pageable;
  Byte* pinned = p.pinned;
  Byte* window = p.window;
  Byte* device = p.device;
  const auto evict = [&p] { p.evict(); };
  std::printf("2. the host copying the %zu MiB into a 64 MiB page-locked window, no devctx (GB/s):\n", n / kMiB);
  std::printf("   %-8s %22s %22s %22s %14s\n", "threads", "cold (1 GiB evicted)", "warm (just read)",
              "cold, DMA meanwhile", "DMA meanwhile");
  for (unsigned threads : {1u, 4u, 8u, 12u, 13u, 16u}) {
    if (threads > hw) continue;
    std::vector<double> cold, warm, contended, dma;
    for (int r = 0; r < rounds; ++r) {
      evict();
      cold.push_back(host_fill(pageable.data(), window, 64 * kMiB, n, threads));
      warm.push_back(host_fill(pageable.data(), window, 64 * kMiB, n, threads));
      evict();
      // A raw page-locked upload of the same size, started just before the host copy.
      cudaEvent_t start, stop;
      CK(cudaEventCreate(&start));
      CK(cudaEventCreate(&stop));
      CK(cudaEventRecord(start, raw));
      CK(cudaMemcpyAsync(device, pinned, n, cudaMemcpyHostToDevice, raw));
      CK(cudaEventRecord(stop, raw));
      contended.push_back(host_fill(pageable.data(), window, 64 * kMiB, n, threads));
      CK(cudaEventSynchronize(stop));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, start, stop));
      dma.push_back(double(n) / (ms * 1e-3) / 1e9);
      CK(cudaEventDestroy(start));
      CK(cudaEventDestroy(stop));
    }
    std::printf("   %-8u %22s %22s %22s %14.2f\n", threads, show(stats(cold)).c_str(), show(stats(warm)).c_str(),
                show(stats(contended)).c_str(), stats(dma).median);
    std::fflush(stdout);
  }
  std::printf("\n");
}

/// Part 2b: ways of copying (memcpy, prefetch, non-temporal stores) and a source on huge pages.
void copy_ways_part(Probe& p) {
  const std::size_t n = p.n;
  const int rounds = p.rounds;
  const unsigned hw = p.hw;
  std::vector<Byte>& pageable = p.pageable;
  Byte* window = p.window;
  const auto evict = [&p] { p.evict(); };
  std::vector<Way> ways = {Way::memcpy, Way::prefetch};
  if (has_avx512()) {
    ways.push_back(Way::stream512);
    ways.push_back(Way::stream512_prefetch);
  }
  // The same bytes in memory the kernel was asked to back with 2 MiB pages (THP, madvise).
  const std::size_t huge_bytes = (n + (2 * kMiB) - 1) / (2 * kMiB) * (2 * kMiB);
  void* huge_memory = nullptr;
  Byte* huge = nullptr;
  if (posix_memalign(&huge_memory, 2 * kMiB, huge_bytes) == 0) {
    huge = static_cast<Byte*>(huge_memory);
    (void)madvise(huge, huge_bytes, MADV_HUGEPAGE);
    std::memset(huge, 6, huge_bytes);
  }
  std::printf(
      "2b. the host copying the %zu MiB into the window, cold (1 GiB evicted first), by way of copying and\n"
      "    threads, in rotation (GB/s):\n",
      n / kMiB);
  for (unsigned threads : {1u, 12u, 16u}) {
    if (threads > hw) continue;
    std::vector<std::vector<double>> results(ways.size() + 1);
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t w = 0; w < ways.size(); ++w) {
        evict();
        results[w].push_back(host_fill(pageable.data(), window, 64 * kMiB, n, threads, ways[w]));
      }
      if (huge != nullptr) {
        evict();
        results[ways.size()].push_back(host_fill(huge, window, 64 * kMiB, n, threads));
      }
    }
    for (std::size_t w = 0; w < ways.size(); ++w)
      std::printf("    %2u threads  %-36s %s\n", threads, way_name(ways[w]), show(stats(results[w])).c_str());
    if (huge != nullptr)
      std::printf("    %2u threads  %-36s %s\n", threads, "memcpy from 2 MiB pages (madvise)",
                  show(stats(results[ways.size()])).c_str());
    std::fflush(stdout);
  }
  std::printf("\n");
  std::free(huge_memory);
}

/// Part 3: staging settings, one context each, in rotation.
// One context per setting, all open at once (each reads DEVCTX_CUDA_* when it opens and has its
// own staging engine, whose threads sleep while another is measured), measured in turn.
void settings_part(Probe& p) {
  const std::size_t n = p.n;
  const int rounds = p.rounds;
  std::vector<Byte>& pageable = p.pageable;
  std::vector<Byte>& elsewhere = p.elsewhere;
  const auto evict = [&p] { p.evict(); };
  const auto raw_pinned_upload = [&p] { p.raw_pinned_upload(); };
  std::printf(
      "3. by staging settings, in rotation (GB/s): an upload after 1 GiB written elsewhere and a raw page-locked\n"
      "   upload (cold), an upload after a staged download (warm), a download after 1 GiB written elsewhere\n");
  struct Setting {
    const char* name;
    std::vector<std::pair<const char*, const char*>> env;
  };
  const char* kb = "DEVCTX_CUDA_STAGING_BYTES";
  const char* kc = "DEVCTX_CUDA_STAGING_CHUNK_BYTES";
  const char* kt = "DEVCTX_CUDA_COPY_THREADS";
  // Measured in the eleventh session besides these, 31 rounds at 256 MiB and 11 at 1 GiB, all
  // within 0.99-1.03x of the first: AVX-512 streaming stores into staging, the source
  // prefetched 1 or 4 KiB ahead with the non-temporal hint, with and without streaming stores
  // (commit b5a8a26, taken out again).
  const std::vector<Setting> settings = {
      {"8 chunks of 8 MiB", {{kb, "67108864"}, {kc, "8388608"}}},
      {"4 chunks of 8 MiB", {{kb, "33554432"}, {kc, "8388608"}}},
      {"8 chunks of 4 MiB", {{kb, "33554432"}, {kc, "4194304"}}},
      {"4 chunks of 4 MiB", {{kb, "16777216"}, {kc, "4194304"}}},
      {"8 chunks of 16 MiB", {{kb, "134217728"}, {kc, "16777216"}}},
      {"8 copy threads", {{kt, "8"}}},
      {"15 copy threads", {{kt, "15"}}},
      {"defaults", {}},
  };
  struct Open {
    devctx::DeviceContext ctx;
    devctx::DeviceBuffer<Byte> d;
  };
  std::vector<std::unique_ptr<Open>> opened;
  for (const Setting& s : settings) {
    std::deque<Env> env;  // set for this scope; a deque: Env neither copies nor moves
    for (const auto& [name, value] : s.env) env.emplace_back(name, value);
    devctx::DeviceContext ctx{devctx::backend("cuda").api, 0};
    auto d = ctx.enqueue_create_buffer<Byte>(n);
    ctx.enqueue_copy(d, std::span<Byte>(pageable.data(), n));  // starts its staging engine
    ctx.synchronize();
    opened.push_back(std::make_unique<Open>(Open{std::move(ctx), std::move(d)}));
  }
  const auto span = std::span<Byte>(pageable.data(), n);
  const auto other = std::span<Byte>(elsewhere.data(), n);
  std::vector<std::vector<double>> cold(settings.size()), warm(settings.size()), down(settings.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < settings.size(); ++i) {
      auto& ctx = opened[i]->ctx;
      auto& d = opened[i]->d;
      evict();
      raw_pinned_upload();
      auto t0 = Clock::now();
      ctx.enqueue_copy(d, span);
      ctx.synchronize();
      cold[i].push_back(double(n) / seconds_since(t0) / 1e9);
      ctx.enqueue_copy(span, d);
      t0 = Clock::now();
      ctx.enqueue_copy(d, span);
      ctx.synchronize();
      warm[i].push_back(double(n) / seconds_since(t0) / 1e9);
      evict();
      t0 = Clock::now();
      ctx.enqueue_copy(other, d);
      down[i].push_back(double(n) / seconds_since(t0) / 1e9);
    }
  // The machine's host memory is shared with other guests, and its speed drifts: besides the
  // medians, each setting against the first one in the same round (median of those ratios).
  const auto paired = [&](const std::vector<std::vector<double>>& m, std::size_t i) {
    std::vector<double> ratios;
    for (std::size_t r = 0; r < m[i].size(); ++r) ratios.push_back(m[i][r] / m[0][r]);
    return stats(ratios).median;
  };
  std::printf("   %-30s %-22s %-22s %-22s  paired vs the first: up cold / warm / down\n", "", "up cold", "up warm", "down");
  for (std::size_t i = 0; i < settings.size(); ++i)
    std::printf("   %-30s %s %s %s  %5.2fx / %5.2fx / %5.2fx\n", settings[i].name, show(stats(cold[i])).c_str(),
                show(stats(warm[i])).c_str(), show(stats(down[i])).c_str(), paired(cold, i), paired(warm, i),
                paired(down, i));
  std::fflush(stdout);
}

/// Part 4: no host copy: the vector's own pages registered chunk by chunk.
// Each of `threads` threads takes chunks in turn: cudaHostRegister, cudaMemcpyAsync on its own
// stream, wait, cudaHostUnregister. The DMA then reads the bytes where they are: one pass over
// host memory instead of three (read, write staging, DMA reads staging), if registering scales.
void registered_part(Probe& p) {
  const std::size_t n = p.n;
  const int rounds = p.rounds;
  std::vector<Byte>& pageable = p.pageable;
  Byte* device = p.device;
  const auto evict = [&p] { p.evict(); };
  std::printf(
      "4. uploads with no host copy: the vector's own pages registered chunk by chunk, cold (GB/s;\n"
      "   register+unregister alone in brackets, per thread, GB/s of chunk bytes)\n");
  const long page = sysconf(_SC_PAGESIZE);
  // A page-aligned copy of the vector (a large std::vector starts 16 bytes into a page).
  void* aligned_memory = nullptr;
  if (posix_memalign(&aligned_memory, std::size_t(page), n) != 0) {
    std::fprintf(stderr, "devctx_bench_upload_probe: out of memory for a page-aligned copy\n");
    std::exit(1);
  }
  Byte* source = static_cast<Byte*>(aligned_memory);
  std::memcpy(source, pageable.data(), n);
  for (const std::size_t chunk : {2 * kMiB, 8 * kMiB, 32 * kMiB}) {
    for (const unsigned threads : {1u, 4u, 8u, 12u}) {
      std::vector<double> rates, reg_rates;
      for (int r = 0; r < std::max(3, rounds / 3); ++r) {
        evict();
        std::atomic<std::size_t> next{0};
        std::atomic<bool> failed{false};
        std::vector<double> reg_seconds(threads, 0.0);
        const auto t0 = Clock::now();
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            cudaSetDevice(0);
            cudaStream_t stream;
            if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
              failed = true;
              return;
            }
            for (;;) {
              const std::size_t at = next.fetch_add(chunk);
              if (at >= n) break;
              const std::size_t bytes = std::min(chunk, n - at);
              // Whole pages only (the vector's start is page-aligned at these sizes; a real
              // engine would stage the partial pages at the ends).
              Byte* host = source + at;
              const auto r0 = Clock::now();
              const bool page_aligned = reinterpret_cast<std::uintptr_t>(host) % std::uintptr_t(page) == 0;
              const bool registered = page_aligned && cudaHostRegister(host, bytes, cudaHostRegisterDefault) == cudaSuccess;
              reg_seconds[t] += seconds_since(r0);
              if (cudaMemcpyAsync(device + at, host, bytes, cudaMemcpyHostToDevice, stream) != cudaSuccess ||
                  cudaStreamSynchronize(stream) != cudaSuccess)
                failed = true;
              const auto u0 = Clock::now();
              if (registered)
                (void)cudaHostUnregister(host);
              else
                failed = true;
              reg_seconds[t] += seconds_since(u0);
            }
            (void)cudaStreamDestroy(stream);
          });
        for (auto& th : pool) th.join();
        const double seconds = seconds_since(t0);
        if (failed) break;
        rates.push_back(double(n) / seconds / 1e9);
        double reg = 0;
        for (double x : reg_seconds) reg += x;
        reg_rates.push_back(double(n) / reg / 1e9);
      }
      if (rates.empty()) {
        std::printf("   chunk %2zu MiB, %2u threads: cudaHostRegister or the copy failed\n", chunk / kMiB, threads);
        continue;
      }
      std::printf("   chunk %2zu MiB, %2u threads: %s  [%6.2f]\n", chunk / kMiB, threads, show(stats(rates)).c_str(),
                  stats(reg_rates).median);
      std::fflush(stdout);
    }
  }
  std::free(aligned_memory);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 256;
  int rounds = 9;
  std::string parts = "1,2,2b,3,4";
  devctx_bench::Args args("devctx_bench_upload_probe",
                          "What bounds one large pageable upload: the parts 1, 2, 2b, 3 and 4");
  args.option("--mib", mib, "Size of the upload, MiB", 1, std::size_t{1} << 16);
  args.option("--rounds", rounds, "Rounds of each measurement (median (min-max) reported)", 1, 10000);
  args.option("--parts", parts, "The parts to run, comma-separated: 1,2,2b,3,4");
  args.parse(argc, argv);
  const std::size_t n = mib * kMiB;
  std::vector<std::string> chosen;
  for (std::size_t at = 0; at <= parts.size();) {
    const std::size_t comma = std::min(parts.find(',', at), parts.size());
    chosen.push_back(parts.substr(at, comma - at));
    at = comma + 1;
  }
  for (const std::string& c : chosen)
    if (c != "1" && c != "2" && c != "2b" && c != "3" && c != "4") {
      std::fprintf(stderr, "devctx_bench_upload_probe: error: --parts: '%s' is not a part (1, 2, 2b, 3, 4)\n", c.c_str());
      return 2;
    }
  const auto part = [&](const char* name) { return std::find(chosen.begin(), chosen.end(), name) != chosen.end(); };
  if (devctx::DeviceContext::count(devctx::backend("cuda").api) == 0) {
    std::printf("devctx_bench_upload_probe: no CUDA device; nothing to measure\n");
    return 0;
  }
  Probe p(n, rounds);
  std::printf("devctx_bench_upload_probe: %zu MiB, %d rounds, %u hardware threads\n\n", n / kMiB, rounds, p.hw);
  if (part("1")) upload_after_part(p);
  if (part("2")) fill_window_part(p);
  if (part("2b")) copy_ways_part(p);
  if (part("3")) settings_part(p);
  if (part("4")) registered_part(p);
  return 0;
}
