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

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "baselines.hpp"

namespace {

struct Options {
  int reps = 5;
  std::size_t k1_n = std::size_t{1} << 18;
  std::size_t k2_n = std::size_t{1} << 18;
  unsigned k3_n = 128;
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr,
               "error: %s\nusage: devctx_bench_checking [--reps N] [--k1-n N] [--k2-n N] [--k3-n N]\n"
               "  --reps N   timed repetitions of each kernel in each mode, median reported (default 5)\n"
               "  --kX-n N   problem size of kernel X (K3: matrix side)\n",
               message);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + arg).c_str());
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[++i], &end, 10);
    if (*end != '\0' || v == 0) usage(("bad value for " + arg).c_str());
    if (arg == "--reps") o.reps = int(std::min<unsigned long long>(v, 1000));
    else if (arg == "--k1-n") o.k1_n = v;
    else if (arg == "--k2-n") o.k2_n = v;
    else if (arg == "--k3-n") o.k3_n = unsigned(std::min<unsigned long long>(v, 4096));
    else usage(("unknown argument " + arg).c_str());
  }
  return o;
}

double median_ms(int reps, const std::function<void()>& run) {
  run();  // warm-up: first-touch of buffers, fiber stacks
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
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
      r->upload_k3(a3.data(), b3.data(), o.k3_n);
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
      std::printf("%-34s %14.3f %14.3f %9.1fx%s\n", row.name.c_str(), off, on, on / off,
                  same ? "" : "  RESULTS DIFFER");
      if (!same) return 1;
    }
    first = false;
  }
  return 0;
}
