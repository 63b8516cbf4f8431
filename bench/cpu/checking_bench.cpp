// SPDX-License-Identifier: Apache-2.0
// What checking mode costs: the CPU kernel benchmark's devctx kernels (K1 vector add, K2 block
// reduction, K3 tiled matmul, in both forms) run unchecked and checked in the same run, on the
// same inputs, and the slowdown of each is printed. (Its cost when off is measured by
// devctx_bench_cpu_kernels of two builds, docs/checking.md "Cost".)
//
//   devctx_bench_checking [--reps N] [--k1-n N] [--k2-n N] [--k3-n N]
//
// The sizes are smaller than devctx_bench_cpu_kernels' because a checked launch records every
// access: the defaults take a few seconds checked.
#include "devctx_rows.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "support/args.hpp"
#include "support/trials.hpp"

namespace {

struct Options {
  int reps = 5;
  std::size_t k1_n = std::size_t{1} << 18;
  std::size_t k2_n = std::size_t{1} << 18;
  int k3_n = 128;
};

Options parse(int argc, char** argv) {
  Options o;
  devctx_bench::Args args("devctx_bench_checking",
                          "What checking mode costs: the devctx rows' kernels unchecked and checked");
  args.option("--reps", o.reps, "Timed repetitions of each kernel in each mode (median reported)", 1, 1000);
  args.option("--k1-n", o.k1_n, "Problem size of K1 (elements)", 1, std::size_t{1} << 32);
  args.option("--k2-n", o.k2_n, "Problem size of K2 (elements)", 1, std::size_t{1} << 32);
  args.option("--k3-n", o.k3_n, "Problem size of K3 (matrix side)", 1, 4096);
  args.parse(argc, argv);
  return o;
}

/// Milliseconds per run of `run`: the median of `reps`, after one warm-up (first touch of the
/// buffers, fiber stacks).
double median_ms(int reps, const std::function<void()>& run) {
  return 1e3 * devctx_bench::median_seconds(reps, 1, run);
}

std::vector<float> random_floats(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::mt19937_64 rng(12345);
  const auto a1 = random_floats(rng, o.k1_n), b1 = random_floats(rng, o.k1_n);
  const auto in2 = random_floats(rng, o.k2_n);
  const std::size_t k3 = std::size_t(o.k3_n) * o.k3_n;
  const auto a3 = random_floats(rng, k3), b3 = random_floats(rng, k3);

  std::printf("devctx checking mode: median of %d runs of each kernel, unchecked and checked\n", o.reps);
  std::printf("%-34s %14s %14s %10s\n", "kernel", "unchecked ms", "checked ms", "slowdown");
  bool first = true;
  for (const auto form : {bench::DevctxForm::cuda_style, bench::DevctxForm::block_level}) {
    const char* form_name = form == bench::DevctxForm::cuda_style ? "thread-level" : "block-level";
    auto plain = bench::DevctxRunner::create(form, false);
    auto checked = bench::DevctxRunner::create(form, true);
    if (first) std::printf("device: %s\n", plain->device_name().c_str());
    for (auto* r : {plain.get(), checked.get()}) {
      r->upload_k1(a1.data(), b1.data(), o.k1_n);
      r->upload_k2(in2.data(), o.k2_n);
      r->upload_k3(a3.data(), b3.data(), unsigned(o.k3_n));
    }
    struct Row {
      std::string name;
      std::function<void(bench::DevctxRunner&)> run;
      std::function<std::vector<float>(bench::DevctxRunner&)> result;
    };
    const std::vector<Row> rows = {
        {"K1 vector add n=" + std::to_string(o.k1_n), [](bench::DevctxRunner& r) { r.run_k1(); },
         [&](bench::DevctxRunner& r) {
           std::vector<float> out(o.k1_n);
           r.download_k1(out.data());
           return out;
         }},
        {std::string("K2 block reduce (") + form_name + ") n=" + std::to_string(o.k2_n),
         [](bench::DevctxRunner& r) { r.run_k2(); },
         [&](bench::DevctxRunner& r) {
           std::vector<float> out(bench::block_count(o.k2_n));
           r.download_k2(out.data());
           return out;
         }},
        {std::string("K3 matmul (") + form_name + ") n=" + std::to_string(o.k3_n),
         [](bench::DevctxRunner& r) { r.run_k3(); },
         [&](bench::DevctxRunner& r) {
           std::vector<float> out(k3);
           r.download_k3(out.data());
           return out;
         }},
    };
    for (const Row& row : rows) {
      if (!first && row.name.starts_with("K1")) continue;  // K1 has one form
      const double off = median_ms(o.reps, [&] { row.run(*plain); });
      const double on = median_ms(o.reps, [&] { row.run(*checked); });
      // Checking must not change a result: the two runs are bit-identical.
      const bool same = row.result(*plain) == row.result(*checked);
      std::printf("%-34s %14.3f %14.3f %9.1fx%s\n", row.name.c_str(), off, on, on / off, same ? "" : "  RESULTS DIFFER");
      if (!same) return 1;
    }
    first = false;
  }
  return 0;
}
