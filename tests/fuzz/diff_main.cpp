// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/diff_main.cpp - devctx_fuzz_diff: the differential fuzzer's command line.
//
//   devctx_fuzz_diff --seed S --ops N [--seeds K] [--backend cpu|cuda] [--no-overlap-copies] ...
//   devctx_fuzz_diff --replay FILE      (a program printed by an earlier failure)
//   devctx_fuzz_diff --bytes FILE       (a libFuzzer input: decoded as devctx_fuzz_libfuzzer does)
//
// Exit status: 0 when every program matched the model, 1 on a mismatch (after printing the
// seed, the op index and a minimized reproduction), 2 on bad usage, 77 when the backend has no
// device (a failure instead with DEVCTX_REQUIRE_GPU=1).
#include <CLI/CLI.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "fuzz/libfuzzer_options.hpp"
#include "fuzz/session.hpp"
#include "support/test_env.hpp"

namespace {

using namespace devctx_fuzz;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Prints a failure and its reproduction; shortens it first unless minimize_seconds is 0.
int report(devctx::Api api, const RunResult& failed, const std::string& what, double minimize_seconds,
           const std::string& save) {
  std::printf("devctx_fuzz_diff: MISMATCH %s, op %zu (%s): %s\n", what.c_str(), failed.failed_at,
              failed.failed_at < failed.ops.size() ? to_text(failed.ops[failed.failed_at]).c_str() : "final check",
              failed.failure.c_str());
  std::vector<Op> ops(failed.ops.begin(),
                      failed.ops.begin() + std::ptrdiff_t(std::min(failed.ops.size(), failed.failed_at + 1)));
  if (minimize_seconds > 0 && !ops.empty()) ops = minimize(api, std::move(ops), failure_kind(failed), minimize_seconds);
  // Run the short program again with its C++ trace; concurrency bugs may need a few tries.
  RunResult again;
  int reproduced = 0;
  for (int i = 0; i < 5; ++i) {
    RunResult r = run_ops(api, ops, true);
    if (r.failed) {
      if (reproduced++ == 0) again = std::move(r);
    }
  }
  if (reproduced == 0) again = run_ops(api, ops, true);
  std::printf("devctx_fuzz_diff: reproduction: %zu ops (from %zu), failed %d of 5 reruns%s%s\n", again.ops.size(),
              failed.failed_at + 1, reproduced, reproduced ? ": " : "", reproduced ? again.failure.c_str() : "");
  const std::string text = reproduction(again);
  std::printf("%s", text.c_str());
  if (!save.empty()) {
    std::ofstream(save) << text;
    std::printf("devctx_fuzz_diff: reproduction written to %s\n", save.c_str());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"devctx_fuzz_diff: random programs over devctx, checked against a host model"};
  std::uint64_t seed = 1, seeds = 1, ops = 10000;
  std::string backend = "cpu", replay, bytes, save, dump;
  double minimize_seconds = 120;
  GenOptions opt;
  bool no_overlap = false, no_huge = false, no_throw = false, no_fiber_throw = false, no_large = false, stats = false,
       print = false;
  app.add_option("--seed", seed, "first seed");
  app.add_option("--seeds", seeds, "number of seeds (seed, seed + 1, ...)");
  app.add_option("--ops", ops, "ops per seed");
  app.add_option("--backend", backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--replay", replay, "run the ops in FILE (a reproduction printed earlier)");
  app.add_option("--bytes", bytes, "decode FILE as the libFuzzer harness does, and run it");
  app.add_option("--save", save, "write the reproduction of a failure to FILE");
  app.add_option("--dump", dump, "write each seed's whole program to FILE (the last seed's stays), to replay elsewhere");
  app.add_option("--minimize-seconds", minimize_seconds, "time to spend shortening a failing program (0: none)");
  app.add_option("--max-elements", opt.max_elements, "largest ordinary buffer, in elements");
  app.add_flag("--no-overlap-copies", no_overlap, "no copies between overlapping parts of one buffer (issue 10 item 4)");
  app.add_flag("--no-huge-sizes", no_huge, "no allocation sizes that wrap when rounded up (issue 10 item 1)");
  app.add_flag("--no-throwing-kernels", no_throw, "no kernels that throw");
  app.add_flag("--no-throws-in-fibers", no_fiber_throw, "no kernels that throw between barriers (sanitizer builds)");
  app.add_flag("--print", print, "with --replay or --bytes: print the program (ops and C++) even when it passes");
  app.add_flag("--stats", stats, "print how many ops of each kind ran and were refused");
  app.add_flag("--no-large-buffers", no_large, "no buffers of 1-2 MiB");
  CLI11_PARSE(app, argc, argv);
  opt.overlap_copies = !no_overlap;
  opt.huge_sizes = !no_huge;
  opt.throwing_kernels = !no_throw;
  opt.throws_in_fibers = !no_fiber_throw;
  opt.large_buffers = !no_large;

  const devctx::Api api = devctx::backend(backend).api;  // throws, naming the backends, for an unknown name
  if (devctx::DeviceContext::count(api) == 0) {
    const bool required = devctx_test::require_gpu();
    std::printf("devctx_fuzz_diff: no %s device%s\n", backend.c_str(),
                required ? " (DEVCTX_REQUIRE_GPU is on: failing)" : ": skipped");
    return required ? 1 : 77;
  }

  if (!replay.empty()) {
    std::string error;
    const auto program = parse_ops(read_file(replay), error);
    if (!program) {
      std::fprintf(stderr, "devctx_fuzz_diff: %s: %s\n", replay.c_str(), error.c_str());
      return 2;
    }
    const RunResult r = run_ops(api, *program, true);
    if (r.failed) return report(api, r, "replaying " + replay, minimize_seconds, save);
    if (print) std::printf("%s", reproduction(r).c_str());
    std::printf("devctx_fuzz_diff: %s: %zu ops matched the model\n", replay.c_str(), r.ops.size());
    return 0;
  }
  if (!bytes.empty()) {
    const std::string data = read_file(bytes);
    ByteChoices choices({reinterpret_cast<const std::uint8_t*>(data.data()), data.size()});
    const RunResult r = run_generated(api, choices, libfuzzer_options(), kLibFuzzerMaxOps, true);
    if (r.failed) return report(api, r, "decoding " + bytes, minimize_seconds, save);
    if (print) std::printf("%s", reproduction(run_ops(api, r.ops, true)).c_str());
    std::printf("devctx_fuzz_diff: %s: %zu ops matched the model\n", bytes.c_str(), r.ops.size());
    return 0;
  }

  const auto start = std::chrono::steady_clock::now();
  std::uint64_t total_ran = 0, total_skipped = 0, total_checked = 0;
  std::array<std::uint64_t, kOpKinds> ran_by_kind{}, refused_by_kind{};
  for (std::uint64_t s = seed; s < seed + seeds; ++s) {
    SeededChoices choices(s);
    const RunResult r = run_generated(api, choices, opt, ops, true);
    if (!dump.empty()) {
      std::ofstream out(dump);
      for (const Op& op : r.ops) out << to_text(op) << '\n';
    }
    if (r.failed) return report(api, r, "seed " + std::to_string(s), minimize_seconds, save);
    total_ran += r.ran;
    total_skipped += r.skipped;
    total_checked += r.checked_elements;
    for (std::size_t k = 0; k < kOpKinds; ++k) {
      ran_by_kind[k] += r.ran_by_kind[k];
      refused_by_kind[k] += r.refused_by_kind[k];
    }
  }
  if (stats)
    for (std::size_t k = 0; k < kOpKinds; ++k)
      std::printf("  %-15s %9llu ran, %8llu of them refused with the expected devctx::Error\n", to_string(OpKind(k)),
                  static_cast<unsigned long long>(ran_by_kind[k]), static_cast<unsigned long long>(refused_by_kind[k]));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "devctx_fuzz_diff: %s, seeds %llu..%llu, %llu ops each: all matched the model (%llu ran, %llu skipped, "
      "%llu elements checked) in %.1f s\n",
      backend.c_str(), static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed + seeds - 1),
      static_cast<unsigned long long>(ops), static_cast<unsigned long long>(total_ran),
      static_cast<unsigned long long>(total_skipped), static_cast<unsigned long long>(total_checked), secs);
  return 0;
}
