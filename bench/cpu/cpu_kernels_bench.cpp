// SPDX-License-Identifier: Apache-2.0
// CPU kernel benchmark: runs every registered implementation of three
// float32 kernels on the same random inputs, checks each result against a
// serial double-precision reference, and prints median throughput.
//
//   K1 vector add      out[i] = a[i] + b[i]              GB/s (12 bytes/element)
//   K2 block reduce    sum of each 256-element block      G elements/s
//   K3 matmul          C = A * B, row-major n x n         GFLOP/s (2 n^3)
//
// To add a row, write a make_*_impl() function like make_openmp_impl() and
// push its result in main(); a kernel left without a run function is "n/a".
//
// The devctx rows run on the CPU backend, also on a machine with a GPU; with
// DEVCTX_DEVICE set they run on the device it names (DEVCTX_DEVICE=cuda).

#include "baselines.hpp"
#include "devctx_rows.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/stats.hpp"

namespace {

using bench::block_count;
using bench::reduce_block;

class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(std::size_t n) : size_(n) {
    // 64-byte alignment so no implementation is penalised by split cache lines.
    const std::size_t bytes = std::max<std::size_t>(64, (n * sizeof(float) + 63) / 64 * 64);
    data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!data_) {
      throw std::bad_alloc();
    }
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::size_t size_ = 0;
  std::unique_ptr<float[], Free> data_;
};

struct Options {
  int reps = 20;
  int warmup = 2;
  bool quick = false;
  std::size_t k1_n = std::size_t{1} << 25;
  std::size_t k2_n = std::size_t{1} << 24;
  unsigned k3_n = 1024;
  std::uint64_t seed = 0;
  bool seed_given = false;
};

// Inputs and the host-side outputs every implementation must leave its
// result in (directly, or via KernelFn::collect).
struct Workload {
  std::size_t k1_n = 0;
  AlignedFloats k1_a, k1_b, k1_out;
  std::size_t k2_n = 0;
  AlignedFloats k2_in, k2_sums;
  unsigned k3_n = 0;
  AlignedFloats k3_a, k3_b, k3_c;
};

// One kernel of one implementation. run is timed and must return only once
// the result is complete. collect, when set, is called untimed before the
// correctness check to bring the result into the Workload output array.
struct KernelFn {
  std::function<void()> run;
  std::function<void()> collect;
};

struct Impl {
  std::string name;
  KernelFn k1, k2, k3;
  std::string note;  // shown under the table, e.g. why a row is n/a
};

struct Cell {
  enum class State { not_available, failed, measured };
  State state = State::not_available;
  double rate = 0.0;  // in the kernel's unit, median
  double min_s = 0.0, median_s = 0.0, max_s = 0.0;
};

// Serial double-precision reference results plus, per element, the sum of
// absolute values of the terms; the error bound scales with the latter so
// that cancellation in a sum cannot make a correct float result look wrong.
struct Reference {
  std::vector<double> k2_value, k2_scale;
  std::vector<double> k3_value, k3_scale;
};

Options parse_options(int argc, char** argv) {
  Options opt;
  int k3_n = int(opt.k3_n);
  std::size_t seed = 0;
  devctx_bench::Args args("devctx_bench_cpu_kernels",
                          "Three float kernels on the CPU: OpenMP, OpenCL and devctx's rows, each checked, then timed");
  args.option("--reps", opt.reps, "Timed repetitions per kernel (median reported)", 1, 100000);
  args.option("--warmup", opt.warmup, "Untimed runs first; the first is also checked", 1, 100000);
  args.flag("--quick", opt.quick, "Smoke run: small sizes, 3 reps, 1 warm-up (sizes and counts given still apply)");
  args.option("--seed", seed, "Input seed (default: random, printed)", 0, std::numeric_limits<std::size_t>::max());
  args.option("--k1-n", opt.k1_n, "Problem size of K1 (elements)", 1, std::size_t{1} << 34);
  args.option("--k2-n", opt.k2_n, "Problem size of K2 (elements)", 1, std::size_t{1} << 34);
  args.option("--k3-n", k3_n, "Problem size of K3 (matrix side)", 1, 16384);
  args.parse(argc, argv);
  if (opt.quick) {
    if (!args.given("--reps")) opt.reps = 3;
    if (!args.given("--warmup")) opt.warmup = 1;
    if (!args.given("--k1-n")) opt.k1_n = std::size_t{1} << 22;
    if (!args.given("--k2-n")) opt.k2_n = std::size_t{1} << 20;
    if (!args.given("--k3-n")) k3_n = 256;
  }
  opt.k3_n = static_cast<unsigned>(k3_n);
  opt.seed_given = args.given("--seed");
  opt.seed = opt.seed_given ? std::uint64_t{seed} : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  return opt;
}

// splitmix64: fast enough to fill ~100M floats in well under a second, and
// good enough for benchmark inputs.
void fill_random(AlignedFloats& out, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    out[i] = static_cast<float>(z >> 40) * 0x1.0p-23f - 1.0f;  // uniform in [-1, 1)
  }
}

Workload make_workload(const Options& opt) {
  Workload w;
  w.k1_n = opt.k1_n;
  w.k1_a = AlignedFloats(w.k1_n);
  w.k1_b = AlignedFloats(w.k1_n);
  w.k1_out = AlignedFloats(w.k1_n);
  fill_random(w.k1_a, opt.seed ^ 0x1);
  fill_random(w.k1_b, opt.seed ^ 0x2);

  w.k2_n = opt.k2_n;
  w.k2_in = AlignedFloats(w.k2_n);
  w.k2_sums = AlignedFloats(block_count(w.k2_n));
  fill_random(w.k2_in, opt.seed ^ 0x3);

  w.k3_n = opt.k3_n;
  const std::size_t elems = std::size_t{w.k3_n} * w.k3_n;
  w.k3_a = AlignedFloats(elems);
  w.k3_b = AlignedFloats(elems);
  w.k3_c = AlignedFloats(elems);
  fill_random(w.k3_a, opt.seed ^ 0x4);
  fill_random(w.k3_b, opt.seed ^ 0x5);
  return w;
}

Reference make_reference(const Workload& w) {
  Reference ref;
  const std::size_t blocks = block_count(w.k2_n);
  ref.k2_value.assign(blocks, 0.0);
  ref.k2_scale.assign(blocks, 0.0);
  for (std::size_t i = 0; i < w.k2_n; ++i) {
    ref.k2_value[i / reduce_block] += w.k2_in[i];
    ref.k2_scale[i / reduce_block] += std::fabs(w.k2_in[i]);
  }

  const std::size_t n = w.k3_n;
  ref.k3_value.assign(n * n, 0.0);
  ref.k3_scale.assign(n * n, 0.0);
  std::vector<double> abs_b(n * n);
  for (std::size_t i = 0; i < n * n; ++i) {
    abs_b[i] = std::fabs(w.k3_b[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    double* value = &ref.k3_value[i * n];
    double* scale = &ref.k3_scale[i * n];
    for (std::size_t k = 0; k < n; ++k) {
      const double a = w.k3_a[i * n + k];
      const double abs_a = std::fabs(a);
      for (std::size_t j = 0; j < n; ++j) {
        value[j] += a * w.k3_b[k * n + j];
        scale[j] += abs_a * abs_b[k * n + j];
      }
    }
  }
  return ref;
}

// Returns an empty string when every element is within rtol * scale (the
// negated comparison also rejects NaN), else a description of the worst miss.
template <typename RefAt>
std::string compare(const float* got, std::size_t count, double rtol, RefAt ref_at) {
  std::size_t bad = 0;
  std::size_t worst = 0;
  double worst_ratio = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto [value, scale] = ref_at(i);
    const double err = std::fabs(static_cast<double>(got[i]) - value);
    const double allowed = rtol * scale + std::numeric_limits<float>::min();
    if (!(err <= allowed)) {
      const double ratio = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / allowed;
      if (bad == 0 || ratio > worst_ratio) {
        worst = i;
        worst_ratio = ratio;
      }
      ++bad;
    }
  }
  if (bad == 0) {
    return {};
  }
  const auto [value, scale] = ref_at(worst);
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%zu of %zu elements wrong; worst at index %zu: got %.9g, expected %.9g (allowed error %.3g)", bad,
                count, worst, static_cast<double>(got[worst]), value, rtol * scale);
  return buf;
}

std::string check_k1(const Workload& w) {
  return compare(w.k1_out.data(), w.k1_n, 1e-6, [&](std::size_t i) {
    const double a = w.k1_a[i];
    const double b = w.k1_b[i];
    return std::pair{a + b, std::fabs(a) + std::fabs(b)};
  });
}

// K2 and K3 accumulate up to a few thousand float terms in implementation-
// defined order; 1e-4 of the absolute-value sum is far above that rounding
// yet far below the effect of a single missing or doubled term.
std::string check_k2(const Workload& w, const Reference& ref) {
  return compare(w.k2_sums.data(), block_count(w.k2_n), 1e-4,
                 [&](std::size_t i) { return std::pair{ref.k2_value[i], ref.k2_scale[i]}; });
}

std::string check_k3(const Workload& w, const Reference& ref) {
  return compare(w.k3_c.data(), std::size_t{w.k3_n} * w.k3_n, 1e-4,
                 [&](std::size_t i) { return std::pair{ref.k3_value[i], ref.k3_scale[i]}; });
}

void poison(AlignedFloats& out) {
  std::fill(out.data(), out.data() + out.size(), std::numeric_limits<float>::quiet_NaN());
}

Impl make_openmp_impl(Workload& w) {
  Impl impl;
  impl.name = "openmp";
  impl.k1.run = [&w] { bench::omp_vector_add(w.k1_a.data(), w.k1_b.data(), w.k1_out.data(), w.k1_n); };
  impl.k2.run = [&w] { bench::omp_block_reduce(w.k2_in.data(), w.k2_sums.data(), w.k2_n); };
  impl.k3.run = [&w] { bench::omp_matmul(w.k3_a.data(), w.k3_b.data(), w.k3_c.data(), w.k3_n); };
  return impl;
}

// The runner is shared so the lambdas keep it alive as long as the Impl.
Impl make_opencl_impl(Workload& w) {
  Impl impl;
  impl.name = "opencl";
  std::string why_not;
  std::shared_ptr<bench::OpenClRunner> cl = bench::OpenClRunner::create(&why_not);
  if (!cl) {
    impl.note = "opencl: n/a: " + why_not;
    return impl;
  }
  impl.note = "opencl: " + cl->device_name() + " (" + cl->platform_version() + ")";
  cl->upload_k1(w.k1_a.data(), w.k1_b.data(), w.k1_n);
  cl->upload_k2(w.k2_in.data(), w.k2_n);
  cl->upload_k3(w.k3_a.data(), w.k3_b.data(), w.k3_n);
  impl.k1 = {[cl] { cl->run_k1(); }, [cl, &w] { cl->download_k1(w.k1_out.data()); }};
  impl.k2 = {[cl] { cl->run_k2(); }, [cl, &w] { cl->download_k2(w.k2_sums.data()); }};
  impl.k3 = {[cl] { cl->run_k3(); }, [cl, &w] { cl->download_k3(w.k3_c.data()); }};
  return impl;
}

// K1 is the same contract kernel in every devctx row; K2 and K3 differ by form.
Impl make_devctx_impl(Workload& w, bench::DevctxForm form) {
  Impl impl;
  const bool block_level = form == bench::DevctxForm::block_level;
  impl.name = block_level                            ? "devctx block-level"
              : form == bench::DevctxForm::hand_twin ? "devctx CUDA-style, hand twin"
                                                     : "devctx CUDA-style";
  std::shared_ptr<bench::DevctxRunner> dx = bench::DevctxRunner::create(form);
  if (form == bench::DevctxForm::cuda_style) impl.note = "devctx: " + dx->device_name();
  dx->upload_k1(w.k1_a.data(), w.k1_b.data(), w.k1_n);
  dx->upload_k2(w.k2_in.data(), w.k2_n);
  dx->upload_k3(w.k3_a.data(), w.k3_b.data(), w.k3_n);
  impl.k1 = {[dx] { dx->run_k1(); }, [dx, &w] { dx->download_k1(w.k1_out.data()); }};
  impl.k2 = {[dx] { dx->run_k2(); }, [dx, &w] { dx->download_k2(w.k2_sums.data()); }};
  impl.k3 = {[dx] { dx->run_k3(); }, [dx, &w] { dx->download_k3(w.k3_c.data()); }};
  return impl;
}

// Checks one kernel of one implementation: poisoned output, one run, the result compared with
// the reference (a wrong kernel is not timed), then the remaining warm-ups. Returns the cell's
// state: measured (ready to be timed), failed or not_available.
Cell::State check_kernel(const std::string& label, const KernelFn& fn, AlignedFloats& output,
                         const std::function<std::string()>& check, const Options& opt) {
  if (!fn.run) {
    return Cell::State::not_available;
  }
  poison(output);
  fn.run();
  if (fn.collect) {
    fn.collect();
  }
  const std::string error = check();
  if (!error.empty()) {
    std::fprintf(stderr, "FAILED %s: %s\n", label.c_str(), error.c_str());
    return Cell::State::failed;
  }
  for (int i = 1; i < opt.warmup; ++i) {
    fn.run();
  }
  return Cell::State::measured;
}

// Times one kernel across all implementations with their repetitions interleaved (rep 1 of
// every implementation, then rep 2, ...), so that the machine's drift - its memory bandwidth
// moves by 2x over seconds here - affects every row alike and the ratios stay comparable.
void time_kernel(int kernel, const std::vector<Impl>& impls, std::vector<std::array<Cell, 3>>& results,
                 double work_per_run, const Options& opt) {
  const auto fn_of = [kernel](const Impl& impl) -> const KernelFn& {
    return kernel == 0 ? impl.k1 : kernel == 1 ? impl.k2 : impl.k3;
  };
  std::vector<std::vector<double>> seconds(impls.size());
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (std::size_t r = 0; r < impls.size(); ++r) {
      if (results[r][kernel].state != Cell::State::measured) {
        continue;
      }
      // OpenMP's threads spin for a while after a parallel region; a pause lets any
      // implementation's idle threads go to sleep before the next one is timed.
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      seconds[r].push_back(devctx_bench::seconds_of(fn_of(impls[r]).run));
    }
  }
  for (std::size_t r = 0; r < impls.size(); ++r) {
    Cell& cell = results[r][kernel];
    if (cell.state != Cell::State::measured) {
      continue;
    }
    const devctx_bench::Spread spread = devctx_bench::spread(seconds[r]);
    cell.median_s = spread.median;
    cell.min_s = spread.min;
    cell.max_s = spread.max;
    cell.rate = work_per_run / cell.median_s / 1e9;
    std::fprintf(stderr, "  %-28s median %9.3f ms\n", (impls[r].name + " K" + std::to_string(kernel + 1)).c_str(),
                 cell.median_s * 1e3);
  }
}

std::string format_cell(const Cell& cell, int width) {
  char buf[64];
  switch (cell.state) {
    case Cell::State::measured:
      // Small rates keep three significant digits (0.0315, not 0.03).
      std::snprintf(buf, sizeof(buf), "%*.*f", width, cell.rate < 1.0 ? 4 : 2, cell.rate);
      break;
    case Cell::State::failed: std::snprintf(buf, sizeof(buf), "%*s", width, "FAILED"); break;
    case Cell::State::not_available: std::snprintf(buf, sizeof(buf), "%*s", width, "n/a"); break;
  }
  return buf;
}

int run_benchmark(const Options& opt) {
  std::printf("devctx CPU kernel benchmark%s\n", opt.quick ? " (--quick)" : "");
  std::printf("  OpenMP threads %d, reps %d (median), warm-up %d, seed %llu\n", omp_get_max_threads(), opt.reps,
              opt.warmup, static_cast<unsigned long long>(opt.seed));
  std::printf("  K1 vector add n=%zu | K2 block reduce n=%zu, block %zu | K3 matmul %ux%u\n", opt.k1_n, opt.k2_n,
              reduce_block, opt.k3_n, opt.k3_n);
  std::fflush(stdout);

  Workload w = make_workload(opt);
  const Reference ref = make_reference(w);

  // The first row is the baseline of the ratio section.
  std::vector<Impl> impls;
  impls.push_back(make_openmp_impl(w));
  impls.push_back(make_opencl_impl(w));
  impls.push_back(make_devctx_impl(w, bench::DevctxForm::cuda_style));
  impls.push_back(make_devctx_impl(w, bench::DevctxForm::block_level));
  impls.push_back(make_devctx_impl(w, bench::DevctxForm::hand_twin));

  const double k1_work = 12.0 * static_cast<double>(w.k1_n);
  const double k2_work = static_cast<double>(w.k2_n);
  const double k3_work = 2.0 * std::pow(static_cast<double>(w.k3_n), 3);

  std::vector<std::array<Cell, 3>> results(impls.size());
  bool any_failed = false;
  for (std::size_t r = 0; r < impls.size(); ++r) {
    const Impl& impl = impls[r];
    results[r][0].state = check_kernel(impl.name + " K1", impl.k1, w.k1_out, [&] { return check_k1(w); }, opt);
    results[r][1].state = check_kernel(impl.name + " K2", impl.k2, w.k2_sums, [&] { return check_k2(w, ref); }, opt);
    results[r][2].state = check_kernel(impl.name + " K3", impl.k3, w.k3_c, [&] { return check_k3(w, ref); }, opt);
    for (const Cell& cell : results[r]) {
      any_failed = any_failed || cell.state == Cell::State::failed;
    }
  }
  time_kernel(0, impls, results, k1_work, opt);
  time_kernel(1, impls, results, k2_work, opt);
  time_kernel(2, impls, results, k3_work, opt);

  std::size_t name_width = 14;
  for (const Impl& impl : impls) {
    name_width = std::max(name_width, impl.name.size());
  }
  const int nw = static_cast<int>(name_width);
  constexpr int col = 14;

  std::printf("\n%-*s %*s %*s %*s\n", nw, "implementation", col, "K1 GB/s", col, "K2 Gelem/s", col, "K3 GFLOP/s");
  for (std::size_t r = 0; r < impls.size(); ++r) {
    std::printf("%-*s", nw, impls[r].name.c_str());
    for (const Cell& cell : results[r]) {
      std::printf(" %s", format_cell(cell, col).c_str());
    }
    std::printf("\n");
  }

  // Ratios are rate / OpenMP rate, so > 1 means faster than OpenMP.
  std::printf("\nratio to openmp (higher is faster)\n");
  const std::array<Cell, 3>& base = results.front();
  for (std::size_t r = 0; r < impls.size(); ++r) {
    std::printf("%-*s", nw, impls[r].name.c_str());
    for (std::size_t k = 0; k < 3; ++k) {
      const Cell& cell = results[r][k];
      if (cell.state == Cell::State::measured && base[k].state == Cell::State::measured) {
        const double ratio = cell.rate / base[k].rate;
        std::printf(" %*.*fx", col - 1, ratio < 0.1 ? 4 : 2, ratio);
      } else {
        std::printf(" %*s", col, cell.state == Cell::State::failed ? "FAILED" : "n/a");
      }
    }
    std::printf("\n");
  }

  // The machine may be noisy: the spread shows how far to trust a median.
  std::printf("\ntimes per run, ms: min / median / max\n");
  for (std::size_t r = 0; r < impls.size(); ++r) {
    for (std::size_t k = 0; k < 3; ++k) {
      const Cell& cell = results[r][k];
      if (cell.state == Cell::State::measured) {
        std::printf("  %-*s K%zu %10.3f / %10.3f / %10.3f\n", nw, impls[r].name.c_str(), k + 1, cell.min_s * 1e3,
                    cell.median_s * 1e3, cell.max_s * 1e3);
      }
    }
  }

  bool any_note = false;
  for (const Impl& impl : impls) {
    if (!impl.note.empty()) {
      if (!any_note) {
        std::printf("\nnotes\n");
        any_note = true;
      }
      std::printf("  %s\n", impl.note.c_str());
    }
  }

  if (any_failed) {
    std::fprintf(stderr, "\nerror: at least one implementation produced wrong results (see FAILED above)\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_options(argc, argv);
  try {
    return run_benchmark(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
