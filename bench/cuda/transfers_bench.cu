// SPDX-License-Identifier: Apache-2.0
// devctx_bench_transfers: copies between host memory and the GPU (issue 13), in one run:
//
//  1. Pageable copies, each direction, 4 KiB .. 1 GiB (4 GiB with --4g): devctx's enqueue_copy
//     from a std::vector (the staged path above its threshold), the raw cudaMemcpyAsync from the
//     same vector followed by cudaStreamSynchronize (what devctx's call promises: done on return),
//     and raw cudaMemcpyAsyncs from page-locked memory (cudaMallocHost) back to back, measured
//     in alternation (devctx, raw pageable, raw pinned, devctx, ...) so that drift favours none.
//     Ratios against both, and the issue's targets. Each devctx copy's result is checked once.
//  2. Both directions at once on page-locked memory (two streams), devctx and raw.
//  3. Sweeps of the staged path's settings (the device reopened with DEVCTX_CUDA_* set for each;
//     phases, not alternated): staged vs direct from 64 KiB to 16 MiB, for the threshold; copy
//     threads and chunk size at 256 MiB; the copy threads' spin.
//  4. The CPU time an idle context adds to its process once the staging engine has started (its
//     threads sleep), against the same process idling before the context existed, per thread name.
//  5. Copy, then synchronize, one copy at a time, as a user's loop does (issue 25): 64 KiB, 1 MiB
//     and 4 MiB uploads and downloads from a std::vector, each followed by ctx.synchronize(),
//     against raw cudaMemcpyAsync + cudaStreamSynchronize, alternating, and the pieces that tell
//     where a difference comes from (raw with cudaMemcpyDefault, raw on devctx's own stream,
//     enqueue_copy alone, an idle ctx.synchronize()). `--sync` runs this part alone.
//
// Method: warm-ups first; host wall time (steady_clock) from the first enqueue to the end of a
// synchronize, over enough copies to last milliseconds; medians of several trials. GB/s count
// the bytes moved once (10^9 bytes per second). Exit status: 1 when a result is wrong, 3 with
// --strict when a target is missed, else 0. Runs in well under a minute on an H200.
//
// Like cuda_bench.cu, this file calls CUDA directly: the raw runtime is the baseline.
#include <devctx/devctx.hpp>

#include <cuda_runtime.h>

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/env.hpp"
#include "support/raw_cuda.hpp"
#include "support/trials.hpp"

namespace {

using devctx_bench::size_name;
using Env = devctx_bench::ScopedEnv;

using devctx_bench::Clock;
using devctx_bench::median;
using devctx_bench::seconds_since;
using Byte = unsigned char;

/// --trials: 0 keeps each measurement's own count.
int trials_option = 0;
int trials_or(int own) { return trials_option > 0 ? trials_option : own; }

/// CPU time per thread of this process so far, in milliseconds, by thread id: /proc's
/// schedstat (nanoseconds on a CPU) where the kernel keeps it, else stat's ticks.
std::map<std::string, std::pair<std::string, double>> thread_cpu_ms() {
  std::map<std::string, std::pair<std::string, double>> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(base + "/comm");
    std::string name;
    std::getline(comm, name);
    double ms = -1;
    std::ifstream sched(base + "/schedstat");
    unsigned long long ns = 0;
    if (sched >> ns)
      ms = double(ns) / 1e6;
    else {
      std::ifstream stat(base + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      const std::size_t close = text.rfind(')');
      if (close != std::string::npos) {
        std::istringstream fields(text.substr(close + 2));
        std::string f;
        unsigned long long ticks = 0;
        for (int i = 3; i <= 15 && fields >> f; ++i)
          if (i == 14 || i == 15) ticks += std::stoull(f);
        ms = double(ticks) * 1e3 / double(sysconf(_SC_CLK_TCK));
      }
    }
    if (ms >= 0) out[e->d_name] = {name, ms};
  }
  closedir(dir);
  return out;
}

struct IdleSecond {
  double process_ms = 0;       ///< the whole process's CPU time per second of idling
  double copy_threads_ms = 0;  ///< devctx's copy threads' ("devctx-copy*") share of it
  std::map<std::string, double> by_name;
};

/// This thread sleeps for a second; what the process's threads used meanwhile.
IdleSecond idle_second() {
  const auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
  };
  const auto threads0 = thread_cpu_ms();
  const double c0 = cpu_ms();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double c1 = cpu_ms();
  const double seconds = seconds_since(t0);
  const auto threads1 = thread_cpu_ms();
  IdleSecond r;
  r.process_ms = (c1 - c0) / seconds;
  for (const auto& [tid, entry] : threads1) {
    const auto was = threads0.find(tid);
    const double ms = (entry.second - (was != threads0.end() ? was->second.second : 0.0)) / seconds;
    r.by_name[entry.first] += ms;
    if (entry.first.rfind("devctx-copy", 0) == 0) r.copy_threads_ms += ms;
  }
  return r;
}

/// Copies of `bytes` per trial: enough to last a few milliseconds, at least one.
int reps_for(std::size_t bytes) { return int(std::clamp<std::size_t>((std::size_t{32} << 20) / bytes, 1, 2000)); }

/// GB/s of `reps` copies of `bytes` done by `f` (which runs all of them and waits).
double gbps(std::size_t bytes, int reps, const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return double(bytes) * reps / seconds_since(t0) / 1e9;
}

/// Medians of several measurements taken in turn, trial after trial (--trials, when given,
/// replaces `trials`).
std::vector<double> alternate(int trials, int warmups, const std::vector<std::function<double()>>& fs) {
  return devctx_bench::alternating_medians(trials_or(trials), warmups, fs);
}

int missed = 0, wrong = 0;

const char* verdict(bool met) {
  if (!met) ++missed;
  return met ? "met" : "MISSED";
}

void fill_pattern(std::vector<Byte>& v, std::size_t bytes, unsigned salt) {
  for (std::size_t i = 0; i < bytes; i += 4096) v[i] = Byte(i / 4096 * 31 + salt);
  v[bytes - 1] = Byte(salt ^ 0x5A);
}

bool same_pattern(const Byte* a, const Byte* b, std::size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

}  // namespace

/// Part 5: one copy at a time, each waited for, as a user's loop does. Microseconds per copy
/// (median over trials of the mean of `reps` copies), every variant in alternation.
void copy_then_synchronize(cudaStream_t raw, std::vector<Byte>& pageable) {
  std::printf(
      "\n5. copy, then synchronize, one copy at a time (us per copy; devctx: enqueue_copy from a std::vector\n"
      "   + ctx.synchronize(); raw: cudaMemcpyAsync from the same vector + cudaStreamSynchronize), alternating;\n"
      "   target: devctx >= 0.95x raw (time ratio raw/devctx)\n");
  std::printf("%-8s %-4s %9s %9s %8s | %11s %11s %11s %11s\n", "size", "dir", "devctx", "raw", "ratio", "raw Default",
              "raw on ctx", "copy alone", "idle sync");
  devctx::DeviceContext ctx{devctx::backend("cuda").api, 0};
  const std::size_t largest = std::size_t{4} << 20;
  auto d = ctx.enqueue_create_buffer<Byte>(largest);
  ctx.synchronize();
  cudaStream_t own = devctx::cuda_stream(ctx);
  for (const std::size_t n : {std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{4} << 20}) {
    for (const bool up : {true, false}) {
      auto span = std::span<Byte>(pageable.data(), n);
      auto slice = d.slice(0, n);
      const int reps = 20;
      const auto per_copy_us = [&](const std::function<void()>& one) {
        return [&, one] {
          const auto t0 = Clock::now();
          for (int r = 0; r < reps; ++r) one();
          return seconds_since(t0) / reps * 1e6;
        };
      };
      const auto raw_copy = [&](cudaStream_t s, cudaMemcpyKind kind) {
        return [&, s, kind] {
          if (up)
            CK(cudaMemcpyAsync(d.data(), pageable.data(), n, kind, s));
          else
            CK(cudaMemcpyAsync(pageable.data(), d.data(), n, kind, s));
          CK(cudaStreamSynchronize(s));
        };
      };
      const auto devctx_copy = [&] {
        if (up)
          ctx.enqueue_copy(slice, span);
        else
          ctx.enqueue_copy(span, slice);
      };
      const auto m = alternate(51, 3,
                               {per_copy_us([&] {
                                  devctx_copy();
                                  ctx.synchronize();
                                }),
                                per_copy_us(raw_copy(raw, up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost)),
                                per_copy_us(raw_copy(raw, cudaMemcpyDefault)),
                                per_copy_us(raw_copy(own, up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost)),
                                per_copy_us(devctx_copy), per_copy_us([&] { ctx.synchronize(); })});
      const double ratio = m[1] / m[0];
      std::printf("%-8s %-4s %9.2f %9.2f %7.3fx | %11.2f %11.2f %11.2f %11.2f  %s\n", size_name(n).c_str(),
                  up ? "H2D" : "D2H", m[0], m[1], ratio, m[2], m[3], m[4], m[5], verdict(ratio >= 0.95));
      std::fflush(stdout);
    }
  }
  // The same as a user's loop spells it: a std::vector<float> and a whole DeviceBuffer<float>,
  // one devctx copy and one raw copy after the other, each timed alone.
  std::printf(
      "   1 MiB, a std::vector<float> into a whole DeviceBuffer<float> and back, devctx and raw copies\n"
      "   interleaved one by one, 51 x 40 pairs, median us per copy:\n");
  const std::size_t floats = (std::size_t{1} << 20) / sizeof(float);
  std::vector<float> host(floats, 1.5f);
  auto buffer = ctx.enqueue_create_buffer<float>(floats);
  ctx.synchronize();
  for (const bool up : {true, false}) {
    const cudaMemcpyKind kind = up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    void* dst = up ? static_cast<void*>(buffer.data()) : static_cast<void*>(host.data());
    const void* src = up ? static_cast<const void*>(host.data()) : static_cast<const void*>(buffer.data());
    const std::size_t bytes = floats * sizeof(float);
    const std::vector<std::function<void()>> variants = {[&] {
                                                           if (up)
                                                             ctx.enqueue_copy(buffer, host);
                                                           else
                                                             ctx.enqueue_copy(host, buffer);
                                                           ctx.synchronize();
                                                         },
                                                         [&] {
                                                           CK(cudaMemcpyAsync(dst, src, bytes, kind, raw));
                                                           CK(cudaStreamSynchronize(raw));
                                                         },
                                                         [&] {
                                                           CK(cudaMemcpyAsync(dst, src, bytes, kind, cudaStreamLegacy));
                                                           CK(cudaStreamSynchronize(cudaStreamLegacy));
                                                         },
                                                         [&] { CK(cudaMemcpy(dst, src, bytes, kind)); }};
    std::vector<std::vector<double>> us(variants.size());
    for (int i = 0; i < trials_or(51) * 40 + 20; ++i)
      for (std::size_t v = 0; v < variants.size(); ++v) {
        const auto t0 = Clock::now();
        variants[v]();
        if (i >= 20) us[v].push_back(seconds_since(t0) * 1e6);  // the first 20: warm-up
      }
    const double dv = median(us[0]), rv = median(us[1]);
    std::printf("   %s devctx %.2f us, raw %.2f us: %.3fx  %s   (raw on the legacy stream %.2f us, cudaMemcpy %.2f us)\n",
                up ? "H2D" : "D2H", dv, rv, rv / dv, verdict(rv / dv >= 0.95), median(us[2]), median(us[3]));
  }
}

/// Part 1: pageable copies of every size, devctx against raw pageable and raw pinned copies.
void pageable_part(devctx::DeviceContext& ctx, auto& d, cudaStream_t raw, const std::vector<std::size_t>& sizes,
                   std::vector<Byte>& pageable, std::vector<Byte>& check, Byte* pinned) {
  // ---- 1. pageable copies -----------------------------------------------------------------------
  std::printf(
      "1. pageable copies (GB/s; devctx from a std::vector, raw cudaMemcpyAsync from the same vector and\n"
      "   from cudaMallocHost memory), alternating; targets: <= 1 MiB devctx >= 0.95x raw pageable,\n"
      "   >= 256 MiB devctx >= 0.75x pinned\n");
  std::printf("%-8s %-4s %10s %10s %10s %12s %10s  %s\n", "size", "dir", "devctx", "raw page", "raw pinned",
              "vs raw page", "vs pinned", "target");
  for (const std::size_t n : sizes) {
    const int reps = reps_for(n);
    const int trials = n >= (std::size_t{256} << 20) ? 5 : 7;
    for (const bool up : {true, false}) {
      auto span = std::span<Byte>(pageable.data(), n);
      auto slice = d.slice(0, n);
      const auto devctx_fn = [&] {
        return gbps(n, reps, [&] {
          for (int r = 0; r < reps; ++r) {
            if (up)
              ctx.enqueue_copy(slice, span);
            else
              ctx.enqueue_copy(span, slice);
          }
          ctx.synchronize();
        });
      };
      // Raw pageable: each copy followed by a stream wait, the promise devctx's call keeps (done
      // on return). Raw pinned: copies back to back, one wait at the end (the DMA ceiling).
      const auto raw_fn = [&](Byte* host, bool wait_each) {
        return [&, host, wait_each] {
          return gbps(n, reps, [&] {
            for (int r = 0; r < reps; ++r) {
              CK(devctx_bench::raw_copy(d.data(), host, n, up, raw, wait_each));
            }
            CK(cudaStreamSynchronize(raw));
          });
        };
      };
      const auto m = alternate(trials, 1, {devctx_fn, raw_fn(pageable.data(), true), raw_fn(pinned, false)});
      std::string target;
      if (n <= (std::size_t{1} << 20)) target = std::string(">= 0.95x raw pageable: ") + verdict(m[0] >= 0.95 * m[1]);
      if (n >= (std::size_t{256} << 20)) target = std::string(">= 0.75x pinned: ") + verdict(m[0] >= 0.75 * m[2]);
      std::printf("%-8s %-4s %10.2f %10.2f %10.2f %11.2fx %9.2fx  %s\n", size_name(n).c_str(), up ? "H2D" : "D2H", m[0],
                  m[1], m[2], m[0] / m[1], m[0] / m[2], target.c_str());
      std::fflush(stdout);
      // The result of one devctx copy, checked against the raw pinned path.
      fill_pattern(pageable, n, unsigned(n >> 12) + (up ? 1u : 2u));
      if (up) {
        ctx.enqueue_copy(slice, span);
        ctx.synchronize();
        CK(cudaMemcpy(check.data(), d.data(), n, cudaMemcpyDeviceToHost));
        if (!same_pattern(check.data(), pageable.data(), n)) {
          std::printf("WRONG: devctx H2D of %s\n", size_name(n).c_str());
          ++wrong;
        }
      } else {
        CK(cudaMemcpy(d.data(), pageable.data(), n, cudaMemcpyHostToDevice));
        std::memset(check.data(), 0xEE, n);
        ctx.enqueue_copy(std::span<Byte>(check.data(), n), slice);
        if (!same_pattern(check.data(), pageable.data(), n)) {
          std::printf("WRONG: devctx D2H of %s\n", size_name(n).c_str());
          ++wrong;
        }
      }
    }
  }
}

/// Part 2: both directions at once, page-locked (devctx and raw) and pageable (devctx).
void both_directions_part(devctx::DeviceContext& ctx, cudaStream_t raw, std::vector<Byte>& pageable,
                          std::vector<Byte>& check, Byte* pinned) {
  // ---- 2. both directions at once on page-locked memory ------------------------------------------
  const std::size_t n = std::size_t{256} << 20;
  auto up_src = ctx.enqueue_create_host_buffer<Byte>(n);
  auto down_dst = ctx.enqueue_create_host_buffer<Byte>(n);
  auto d_up = ctx.enqueue_create_buffer<Byte>(n);
  auto d_down = ctx.enqueue_create_buffer<Byte>(n);
  auto s1 = ctx.create_stream();
  auto s2 = ctx.create_stream();
  ctx.synchronize();
  std::memset(up_src.data(), 4, n);
  cudaStream_t raw2;
  CK(cudaStreamCreateWithFlags(&raw2, cudaStreamNonBlocking));
  Byte* pinned2 = nullptr;
  CK(cudaMallocHost(&pinned2, n));
  const int reps = 4;
  const auto devctx_both = [&] {
    return gbps(2 * n, reps, [&] {
      for (int r = 0; r < reps; ++r) {
        s1.enqueue_copy(d_up, up_src);
        s2.enqueue_copy(down_dst, d_down);
      }
      s1.synchronize();
      s2.synchronize();
    });
  };
  const auto raw_both = [&] {
    return gbps(2 * n, reps, [&] {
      for (int r = 0; r < reps; ++r) {
        CK(cudaMemcpyAsync(d_up.data(), pinned, n, cudaMemcpyHostToDevice, raw));
        CK(cudaMemcpyAsync(pinned2, d_down.data(), n, cudaMemcpyDeviceToHost, raw2));
      }
      CK(cudaStreamSynchronize(raw));
      CK(cudaStreamSynchronize(raw2));
    });
  };
  // Pageable both ways at once: two host threads, each with its own stream.
  const auto pageable_both = [&] {
    return gbps(2 * n, 2, [&] {
      std::thread other([&] {
        for (int r = 0; r < 2; ++r) s2.enqueue_copy(std::span<Byte>(check.data(), n), d_down);
      });
      for (int r = 0; r < 2; ++r) s1.enqueue_copy(d_up, std::span<Byte>(pageable.data(), n));
      s1.synchronize();
      other.join();
    });
  };
  const auto m = alternate(5, 1, {devctx_both, raw_both, pageable_both});
  std::printf("\n2. both directions at once, 256 MiB each way on two streams (GB/s, both directions summed)\n");
  std::printf("   page-locked: devctx %.2f, raw %.2f (%.2fx); target devctx >= 95: %s\n", m[0], m[1], m[0] / m[1],
              verdict(m[0] >= 95.0));
  std::printf("   pageable (devctx, two host threads): %.2f\n", m[2]);
  CK(cudaFreeHost(pinned2));
  CK(cudaStreamDestroy(raw2));
}

/// Part 3: sweeps of the staged path's settings, the device reopened for each.
void settings_part(cudaStream_t raw, std::vector<Byte>& pageable) {
  // ---- 3. sweeps of the staged path's settings -------------------------------------------------------
  // with_raw: a raw pageable copy of the same size runs between devctx's (as in part 1), so that
  // devctx's copy threads have slept and their cores idled before each measured copy.
  const auto measure = [&](std::size_t n, int trials, bool with_raw = false) {
    devctx::DeviceContext ctx{devctx::backend("cuda").api, 0};
    auto d = ctx.enqueue_create_buffer<Byte>(n);
    ctx.synchronize();
    const int reps = reps_for(n);
    auto span = std::span<Byte>(pageable.data(), n);
    const auto raw_pageable = [&] {
      return gbps(n, 1, [&] { CK(devctx_bench::raw_copy(d.data(), pageable.data(), n, true, raw, true)); });
    };
    if (with_raw) {
      const auto m = alternate(trials, 1,
                               {[&] {
                                  return gbps(n, reps, [&] {
                                    for (int r = 0; r < reps; ++r) ctx.enqueue_copy(d, span);
                                    ctx.synchronize();
                                  });
                                },
                                raw_pageable,
                                [&] {
                                  return gbps(n, reps, [&] {
                                    for (int r = 0; r < reps; ++r) ctx.enqueue_copy(span, d);
                                    ctx.synchronize();
                                  });
                                },
                                raw_pageable});
      return std::vector<double>{m[0], m[2]};
    }
    const auto up = [&] {
      return gbps(n, reps, [&] {
        for (int r = 0; r < reps; ++r) ctx.enqueue_copy(d, span);
        ctx.synchronize();
      });
    };
    const auto down = [&] {
      return gbps(n, reps, [&] {
        for (int r = 0; r < reps; ++r) ctx.enqueue_copy(span, d);
        ctx.synchronize();
      });
    };
    return alternate(trials, 1, {up, down});
  };
  std::printf(
      "\n3a. staged (DEVCTX_CUDA_STAGING_THRESHOLD=0) vs direct (DEVCTX_CUDA_STAGING=0), GB/s H2D / D2H:\n"
      "    the threshold belongs where staged starts to win\n");
  for (std::size_t n = std::size_t{64} << 10; n <= (std::size_t{16} << 20); n *= 2) {
    std::vector<double> staged, direct;
    {
      const Env e("DEVCTX_CUDA_STAGING_THRESHOLD", "0");
      staged = measure(n, 5);
    }
    {
      const Env e("DEVCTX_CUDA_STAGING", "0");
      direct = measure(n, 5);
    }
    std::printf("    %-8s staged %6.2f / %6.2f   direct %6.2f / %6.2f   staged/direct %5.2fx / %5.2fx\n",
                size_name(n).c_str(), staged[0], staged[1], direct[0], direct[1], staged[0] / direct[0],
                staged[1] / direct[1]);
    std::fflush(stdout);
  }
  std::printf(
      "\n3b. 256 MiB pageable copies by DEVCTX_CUDA_COPY_THREADS and DEVCTX_CUDA_STAGING_CHUNK_BYTES\n"
      "    (staging memory 8 chunks), GB/s H2D / D2H:\n");
  for (const char* chunk : {"4194304", "8388608", "16777216"}) {
    std::printf("    chunk %2zu MiB:", std::size_t(std::strtoull(chunk, nullptr, 10)) >> 20);
    for (const char* threads : {"0", "2", "4", "8", "12"}) {
      const Env c("DEVCTX_CUDA_STAGING_CHUNK_BYTES", chunk);
      const std::string staging = std::to_string(8 * std::strtoull(chunk, nullptr, 10));
      const Env s("DEVCTX_CUDA_STAGING_BYTES", staging.c_str());
      const Env t("DEVCTX_CUDA_COPY_THREADS", threads);
      const auto m = measure(std::size_t{256} << 20, 3);
      std::printf("  %s thr %5.1f / %5.1f", threads, m[0], m[1]);
      std::fflush(stdout);
    }
    std::printf("\n");
  }

  std::printf(
      "\n3c. 256 MiB pageable copies, each after a raw pageable copy (the copy threads idle in between),\n"
      "    by DEVCTX_CUDA_COPY_SPIN_US (how long copy threads wait actively for the next chunk), GB/s H2D / D2H:\n   ");
  for (const char* spin : {"0", "100", "500", "2000"}) {
    const Env e("DEVCTX_CUDA_COPY_SPIN_US", spin);
    const auto m = measure(std::size_t{256} << 20, 5, true);
    std::printf("  %s us %5.1f / %5.1f", spin, m[0], m[1]);
    std::fflush(stdout);
  }
  std::printf("\n");
}

/// Part 4: the CPU time an idle context whose staging engine has started adds to its process.
void idle_part(std::vector<Byte>& pageable) {
  // ---- 4. an idle context whose staging engine has started: its copy threads sleep -----------------
  // The same process idles for a second before the context exists (the CUDA runtime's own threads
  // and this thread: the baseline) and for a second with it; what the context adds is the
  // difference, and its copy threads' own CPU time is read from /proc per thread.
  const IdleSecond before = idle_second();
  devctx::DeviceContext ctx{devctx::backend("cuda").api, 0};
  auto d = ctx.enqueue_create_buffer<Byte>(std::size_t{64} << 20);
  ctx.enqueue_copy(d, std::span<Byte>(pageable.data(), d.size()));  // starts the engine
  std::this_thread::sleep_for(std::chrono::milliseconds(20));       // past the copy threads' spin
  const IdleSecond after = idle_second();
  const double added = after.process_ms - before.process_ms;
  std::printf(
      "\n4. idle for 1 s: the process used %.3f ms of CPU time per second before the context existed, "
      "%.3f ms with an idle context whose staging engine has started (%.3f ms added; its copy threads "
      "%.3f ms); target: the context adds < 1 ms: %s\n",
      before.process_ms, after.process_ms, added, after.copy_threads_ms, verdict(added < 1.0));
  std::printf("   CPU time by thread name over the second with the context (ms):");
  for (const auto& [name, ms] : after.by_name) std::printf(" %s %.3f", name.c_str(), ms);
  std::printf("\n");
}

int main(int argc, char** argv) {
  bool four_gib = false, strict = false, sync_only = false;
  devctx_bench::Args args("devctx_bench_transfers",
                          "Copies between host memory and the GPU: devctx against raw cudaMemcpyAsync");
  args.flag("--4g", four_gib, "Part 1 up to 4 GiB (default 1 GiB)");
  args.flag("--strict", strict, "Exit status 3 when a target is missed");
  args.flag("--sync", sync_only, "Part 5 alone (copy, then synchronize)");
  args.option("--trials", trials_option, "Trials of every alternating measurement (default 0: each its own, 5 to 51)",
              0, 10000);
  args.parse(argc, argv);
  if (devctx::DeviceContext::count(devctx::backend("cuda").api) == 0) {
    std::printf("devctx_bench_transfers: no CUDA device; nothing to measure\n");
    return 0;
  }
  if (sync_only) {
    CK(cudaSetDevice(0));
    cudaStream_t raw;
    CK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
    std::vector<Byte> pageable(std::size_t{4} << 20, 1);
    copy_then_synchronize(raw, pageable);
    CK(cudaStreamDestroy(raw));
    std::printf("\n%d target(s) MISSED\n", missed);
    return strict && missed > 0 ? 3 : 0;
  }
  const std::size_t largest = four_gib ? std::size_t{4} << 30 : std::size_t{1} << 30;
  std::vector<std::size_t> sizes;
  for (std::size_t s = 4096; s <= largest; s *= 4) sizes.push_back(s);

  CK(cudaSetDevice(0));
  cudaStream_t raw;
  CK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
  std::vector<Byte> pageable(largest), check(largest);
  std::memset(pageable.data(), 1, largest);  // touched: no first-use page faults in the timings
  std::memset(check.data(), 2, largest);
  Byte* pinned = nullptr;
  CK(cudaMallocHost(&pinned, largest));
  std::memset(pinned, 3, largest);
  {
    devctx::DeviceContext ctx{devctx::backend("cuda").api, 0};
    auto d = ctx.enqueue_create_buffer<Byte>(largest);
    ctx.synchronize();
    std::printf("devctx_bench_transfers on %s; %u hardware threads on the host\n\n", ctx.name().c_str(),
                std::thread::hardware_concurrency());
    pageable_part(ctx, d, raw, sizes, pageable, check, pinned);
    both_directions_part(ctx, raw, pageable, check, pinned);
  }  // the device closes: the sweeps reopen it with other settings
  settings_part(raw, pageable);
  idle_part(pageable);
  copy_then_synchronize(raw, pageable);

  CK(cudaFreeHost(pinned));
  CK(cudaStreamDestroy(raw));
  if (missed > 0)
    std::printf("\n%d target(s) MISSED", missed);
  else
    std::printf("\nevery target met");
  std::printf("; %d wrong result(s)\n", wrong);
  if (wrong > 0) return 1;
  return strict && missed > 0 ? 3 : 0;
}
