// SPDX-License-Identifier: Apache-2.0
// devctx_bench_cuda: devctx's CUDA backend against the raw CUDA runtime doing the same work in
// the same run, on the same GPU. Prints one table with both timings and their ratio, and
// checks each result against the targets of issue #4. Exit status: non-zero when a result is
// wrong (vector add), or with --strict when a target is missed.
//
// Method: warm-ups first; device work is timed with CUDA events (devctx::elapsed_ms on the
// devctx side) and host-side costs with steady_clock; every figure is the median of several
// trials. Bandwidths count the bytes moved once per direction (device copy and vector add
// count every byte read and written).
//
// This file is the one place outside src/backends/cuda that calls CUDA directly: the raw
// runtime is the baseline.
#include <devctx/devctx.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/env.hpp"
#include "support/raw_cuda.hpp"
#include "support/trials.hpp"

namespace {

using devctx_bench::size_name;

struct alignas(16) F4 {
  float x, y, z, w;
};

DEVCTX_KERNEL void empty_kernel() {}

DEVCTX_KERNEL void vector_add4(devctx::span<const F4> a, devctx::span<const F4> b, devctx::span<F4> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) {
    const F4 x = a[i], y = b[i];
    out[i] = F4{x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w};
  }
}

DEVCTX_KERNEL void init_inputs(devctx::span<F4> a, devctx::span<F4> b) {
  const std::size_t i = devctx::global_idx().x;
  if (i < a.size()) {
    const float v = float(i % 1024);
    a[i] = F4{v, v + 1, v + 2, v + 3};
    b[i] = F4{2 * v, 1, 0, -v};
  }
}

__global__ void raw_empty() {}

__global__ void raw_vector_add4(const F4* __restrict__ a, const F4* __restrict__ b, F4* __restrict__ out, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const F4 x = a[i], y = b[i];
    out[i] = F4{x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w};
  }
}

using devctx_bench::Clock;
using devctx_bench::us_since;

/// --trials: 0 keeps each measurement's own count.
int trials_option = 0;

/// Median over `trials` (or --trials) of `f()`, after `warmups` untimed calls.
double med(int trials, int warmups, const std::function<double()>& f) {
  return devctx_bench::median_of(trials_option > 0 ? trials_option : trials, warmups, f);
}

/// Medians of two measurements taken in alternation (devctx, raw, devctx, raw, ...), so that a
/// drift of the GPU's clocks or the host's state during the run favours neither side.
std::pair<double, double> med_alternating(int trials, int warmups, const std::function<double()>& devctx_fn,
                                          const std::function<double()>& raw_fn) {
  const auto m = devctx_bench::alternating_medians(trials_option > 0 ? trials_option : trials, warmups,
                                                   {devctx_fn, raw_fn});
  return {m[0], m[1]};
}

struct Row {
  std::string name;
  std::string unit;
  double devctx;
  double raw;
  bool higher_is_better;
  std::string target;  ///< empty: reported only
  bool met = true;
};
std::vector<Row> rows;

void add_bandwidth(const std::string& name, double d, double r, bool targeted) {
  Row row{name, "GB/s", d, r, true, "", true};
  if (targeted) {
    row.target = ">= 0.97x raw";
    row.met = d >= 0.97 * r;
  }
  rows.push_back(row);
}

void add_latency(const std::string& name, double d, double r, double max_delta, double absolute = -1) {
  Row row{name, "us", d, r, false, "", true};
  if (absolute > 0) {
    row.target = "<= " + std::to_string(absolute).substr(0, 4) + " us";
    row.met = d <= absolute;
  } else if (max_delta > 0) {
    row.target = "<= raw + " + std::to_string(max_delta).substr(0, 3) + " us";
    row.met = d <= r + max_delta;
  }
  rows.push_back(row);
}

/// The raw side's stream and two events to time it.
struct Raw {
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
};

/// Part 1: an empty kernel's launch + synchronize.
void launch_part(devctx::DeviceContext& ctx, const Raw& raw) {
  cudaStream_t s = raw.s;
  // ---- empty kernel: launch + synchronize --------------------------------------------------------
  const int iters = 2000;
  auto per_iter = [&](const std::function<void()>& f) {
    return [=] {
      std::vector<double> t;
      t.reserve(iters);
      for (int i = 0; i < iters; ++i) {
        const auto t0 = Clock::now();
        f();
        t.push_back(us_since(t0));
      }
      return devctx_bench::median(t);
    };
  };
  const auto [d, r] = med_alternating(9, 1, per_iter([&] {
                                        ctx.enqueue_function<empty_kernel>({.grid_dim = 1, .block_dim = 1});
                                        ctx.synchronize();
                                      }),
                                      per_iter([&] {
                                        raw_empty<<<1, 1, 0, s>>>();
                                        CK(cudaStreamSynchronize(s));
                                      }));
  add_latency("empty kernel launch + synchronize", d, r, 0.5);
}

/// Part 2: the host's cost of submitting one launch.
void submit_part(devctx::DeviceContext& ctx, const Raw& raw) {
  cudaStream_t s = raw.s;
  // ---- host-side submit cost per launch ------------------------------------------------------------
  const int batch = 500;
  const auto [d, r] = med_alternating(
      21, 3,
      [&] {
        const auto t0 = Clock::now();
        for (int i = 0; i < batch; ++i) ctx.enqueue_function<empty_kernel>({.grid_dim = 1, .block_dim = 1});
        const double us = us_since(t0) / batch;
        ctx.synchronize();
        return us;
      },
      [&] {
        const auto t0 = Clock::now();
        for (int i = 0; i < batch; ++i) raw_empty<<<1, 1, 0, s>>>();
        const double us = us_since(t0) / batch;
        CK(cudaStreamSynchronize(s));
        return us;
      });
  add_latency("submit cost per launch (host)", d, r, 0.5);
}

/// Part 3: stream-ordered allocate + free, and a page-locked host buffer's create + drop.
void allocation_part(devctx::DeviceContext& ctx, const Raw& raw) {
  cudaStream_t s = raw.s;
  // ---- stream-ordered allocate + free ---------------------------------------------------------------
  const int batch = 1000;
  const std::size_t bytes = 1 << 20;
  cudaMemPool_t pool;
  CK(cudaDeviceGetDefaultMemPool(&pool, 0));
  std::uint64_t threshold = UINT64_MAX;
  CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  const double d = med(11, 2, [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) {
      auto b = ctx.enqueue_create_buffer<char>(bytes);
    }
    const double us = us_since(t0) / batch;
    ctx.synchronize();
    return us;
  });
  const double r = med(11, 2, [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) {
      void* p;
      CK(cudaMallocAsync(&p, bytes, s));
      CK(cudaFreeAsync(p, s));
    }
    const double us = us_since(t0) / batch;
    CK(cudaStreamSynchronize(s));
    return us;
  });
  add_latency("allocate + free 1 MiB (stream-ordered)", d, r, 0, 2.0);
  const double dh = med(5, 1, [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < 100; ++i) {
      auto b = ctx.enqueue_create_host_buffer<char>(bytes);
    }
    const double us = us_since(t0) / 100;
    ctx.synchronize();
    return us;
  });
  const double rh = med(5, 1, [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < 100; ++i) {
      void* p;
      CK(cudaMallocHost(&p, bytes));
      CK(cudaFreeHost(p));
    }
    return us_since(t0) / 100;
  });
  add_latency("host buffer 1 MiB create + drop (raw: cudaMallocHost + cudaFreeHost)", dh, rh, 0);
}

/// Part 4: page-locked copies by size, a pageable upload, a device copy.
void transfers_part(devctx::DeviceContext& ctx, const Raw& raw) {
  cudaStream_t s = raw.s;
  cudaEvent_t e0 = raw.e0, e1 = raw.e1;
  // ---- transfers ------------------------------------------------------------------------------------
  const std::size_t max_bytes = std::size_t(1) << 30;
  auto h = ctx.enqueue_create_host_buffer<char>(max_bytes);
  auto dbuf = ctx.enqueue_create_buffer<char>(max_bytes);
  ctx.synchronize();
  std::memset(h.data(), 1, max_bytes);
  void *rh = nullptr, *rd = nullptr;
  CK(cudaMallocHost(&rh, max_bytes));
  CK(cudaMalloc(&rd, max_bytes));
  std::memset(rh, 1, max_bytes);

  for (const std::size_t bytes : {std::size_t(64) << 10, std::size_t(1) << 20, std::size_t(16) << 20,
                                  std::size_t(256) << 20, std::size_t(1) << 30}) {
    const int reps = bytes <= (1u << 20) ? 200 : bytes <= (16u << 20) ? 20 : 3;
    const int trials = bytes >= (256u << 20) ? 5 : 9;
    for (const bool h2d : {true, false}) {
      const double d = med(trials, 2, [&] {
        auto t0 = ctx.record_event();
        for (int i = 0; i < reps; ++i) {
          if (h2d)
            ctx.enqueue_copy(dbuf.slice(0, bytes), h.slice(0, bytes));
          else
            ctx.enqueue_copy(h.slice(0, bytes), dbuf.slice(0, bytes));
        }
        auto t1 = ctx.record_event();
        return double(bytes) * reps / (devctx::elapsed_ms(t0, t1) * 1e6);
      });
      const double r = med(trials, 2, [&] {
        CK(cudaEventRecord(e0, s));
        for (int i = 0; i < reps; ++i) {
          CK(devctx_bench::raw_copy(rd, rh, bytes, h2d, s, false));
        }
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return double(bytes) * reps / (double(ms) * 1e6);
      });
      add_bandwidth(std::string(h2d ? "pinned H2D " : "pinned D2H ") + size_name(bytes), d, r, bytes >= (16u << 20));
    }
  }

  // Pageable host memory (std::vector): devctx returns once the memory has been read.
  {
    const std::size_t bytes = std::size_t(256) << 20;
    std::vector<char> pageable(bytes, 3);
    const double d = med(5, 1, [&] {
      const auto t0 = Clock::now();
      ctx.enqueue_copy(dbuf.slice(0, bytes), std::span<const char>(pageable));
      ctx.synchronize();
      return double(bytes) / (us_since(t0) * 1e3);
    });
    const double r = med(5, 1, [&] {
      const auto t0 = Clock::now();
      CK(devctx_bench::raw_copy(rd, pageable.data(), bytes, true, s, true));
      return double(bytes) / (us_since(t0) * 1e3);
    });
    add_bandwidth("pageable H2D 256 MiB", d, r, false);
  }

  // Device to device (bytes read + bytes written).
  {
    auto dst = ctx.enqueue_create_buffer<char>(max_bytes);
    void* rdst;
    CK(cudaMalloc(&rdst, max_bytes));
    const int reps = 10;
    const double d = med(7, 2, [&] {
      auto t0 = ctx.record_event();
      for (int i = 0; i < reps; ++i) ctx.enqueue_copy(dst, dbuf);
      auto t1 = ctx.record_event();
      return 2.0 * double(max_bytes) * reps / (devctx::elapsed_ms(t0, t1) * 1e6);
    });
    const double r = med(7, 2, [&] {
      CK(cudaEventRecord(e0, s));
      for (int i = 0; i < reps; ++i) CK(cudaMemcpyAsync(rdst, rd, max_bytes, cudaMemcpyDeviceToDevice, s));
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      return 2.0 * double(max_bytes) * reps / (double(ms) * 1e6);
    });
    add_bandwidth("device copy 1 GiB (read + write)", d, r, true);
    CK(cudaFree(rdst));
  }
  CK(cudaFreeHost(rh));
  CK(cudaFree(rd));
}

/// Part 5: a float4 vector add of 2^28 floats. False when a result is wrong.
bool vector_add_part(devctx::DeviceContext& ctx, const Raw& raw) {
  cudaStream_t s = raw.s;
  cudaEvent_t e0 = raw.e0, e1 = raw.e1;
  // ---- vector add, float4, 2^28 floats ----------------------------------------------------------------
  bool correct = true;
  const std::size_t n4 = (std::size_t(1) << 28) / 4;
  const std::size_t bytes = n4 * sizeof(F4);
  const unsigned blocks = unsigned((n4 + 255) / 256);
  auto a = ctx.enqueue_create_buffer<F4>(n4);
  auto b = ctx.enqueue_create_buffer<F4>(n4);
  auto out = ctx.enqueue_create_buffer<F4>(n4);
  ctx.enqueue_function<init_inputs>({.grid_dim = blocks, .block_dim = 256}, a, b);
  ctx.enqueue_memset(out, F4{0, 0, 0, 0});
  const int reps = 10;
  const double d = med(7, 2, [&] {
    auto t0 = ctx.record_event();
    for (int i = 0; i < reps; ++i) ctx.enqueue_function<vector_add4>({.grid_dim = blocks, .block_dim = 256}, a, b, out);
    auto t1 = ctx.record_event();
    return 3.0 * double(bytes) * reps / (devctx::elapsed_ms(t0, t1) * 1e6);
  });
  std::vector<F4> host(n4);
  ctx.enqueue_copy(host, out);
  for (std::size_t i = 0; i < n4 && correct; ++i) {
    const float v = float(i % 1024);
    const F4 o = host[i];
    correct = o.x == 3 * v && o.y == v + 2 && o.z == v + 2 && o.w == 3;
    if (!correct) std::printf("vector add (devctx) WRONG at %zu\n", i);
  }
  // The raw baseline works on the same inputs, through their device addresses.
  ctx.enqueue_memset(out, F4{0, 0, 0, 0});
  ctx.synchronize();
  const F4* ra = a.data();
  const F4* rb = b.data();
  F4* ro = out.data();
  const double r = med(7, 2, [&] {
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < reps; ++i) raw_vector_add4<<<blocks, 256, 0, s>>>(ra, rb, ro, n4);
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return 3.0 * double(bytes) * reps / (double(ms) * 1e6);
  });
  CK(cudaMemcpy(host.data(), ro, bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n4 && correct; ++i) {
    const F4 o = host[i];
    const float v = float(i % 1024);
    correct = o.x == 3 * v && o.w == 3;
    if (!correct) std::printf("vector add (raw) WRONG at %zu\n", i);
  }
  add_bandwidth("vector add float4, 2^28 floats (3 x 1 GiB)", d, r, true);
  return correct;
}

}  // namespace

int main(int argc, char** argv) {
  bool strict = false;
  devctx_bench::Args args("devctx_bench_cuda", "devctx's CUDA backend against the raw CUDA runtime, same work, same run");
  args.flag("--strict", strict, "Exit status 3 when a target is missed");
  args.option("--trials", trials_option, "Trials of every measurement (default 0: each its own, 5 to 21)", 0, 10000);
  args.parse(argc, argv);
  if (devctx::DeviceContext::count(devctx::backend("cuda").api) == 0) {
    std::printf("devctx_bench_cuda: no CUDA device; nothing to measure\n");
    return 0;
  }
  devctx::DeviceContext ctx{devctx::backend("cuda").api, 0};
  CK(cudaSetDevice(0));
  Raw raw;
  CK(cudaStreamCreateWithFlags(&raw.s, cudaStreamNonBlocking));
  CK(cudaEventCreate(&raw.e0));
  CK(cudaEventCreate(&raw.e1));
  std::printf("devctx_bench_cuda on %s (%u SMs, %.1f GiB)\n\n", ctx.name().c_str(), ctx.info().multiprocessors,
              double(ctx.info().total_memory_bytes) / double(1u << 30));
  launch_part(ctx, raw);
  submit_part(ctx, raw);
  allocation_part(ctx, raw);
  transfers_part(ctx, raw);
  const bool correct = vector_add_part(ctx, raw);

  // ---- the table ------------------------------------------------------------------------------------
  std::printf("%-66s %12s %12s %8s  %-18s %s\n", "benchmark", "devctx", "raw CUDA", "ratio", "target", "");
  int missed = 0;
  for (const Row& row : rows) {
    const double ratio = row.higher_is_better ? row.devctx / row.raw : row.devctx / row.raw;
    char d[32], r[32];
    std::snprintf(d, sizeof d, "%.2f %s", row.devctx, row.unit.c_str());
    std::snprintf(r, sizeof r, "%.2f %s", row.raw, row.unit.c_str());
    const char* verdict = row.target.empty() ? "" : row.met ? "met" : "MISSED";
    std::printf("%-66s %12s %12s %7.3fx  %-18s %s\n", row.name.c_str(), d, r, ratio, row.target.c_str(), verdict);
    if (!row.target.empty() && !row.met) ++missed;
  }
  std::printf("\nvector add results: %s; targets missed: %d\n", correct ? "correct" : "WRONG", missed);
  CK(cudaEventDestroy(raw.e0));
  CK(cudaEventDestroy(raw.e1));
  CK(cudaStreamDestroy(raw.s));
  if (!correct) return 1;
  return strict && missed > 0 ? 3 : 0;
}
