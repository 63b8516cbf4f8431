// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/session.cpp - running whole programs, and shortening a failing one.
#include "fuzz/session.hpp"

#include <chrono>
#include <cstdio>

#include "fuzz/runner.hpp"

namespace devctx_fuzz {
namespace {

Op final_sync() {
  Op op;
  op.kind = OpKind::sync_context;
  return op;
}

void record(RunResult& r, Status st, std::size_t index, const Runner& runner) {
  if (st == Status::ran)
    ++r.ran;
  else if (st == Status::skipped)
    ++r.skipped;
  else {
    r.failed = true;
    r.failed_at = index;
    r.failure = runner.failure();
  }
}

}  // namespace

RunResult run_generated(devctx::Api api, Choices& choices, const GenOptions& options, std::uint64_t max_ops, bool keep_ops) {
  RunResult r;
  Runner runner(api);
  Generator gen(choices, options);
  std::size_t index = 0;
  for (; index < max_ops && !r.failed; ++index) {
    const Op op = gen.next(runner.model());
    if (choices.exhausted()) break;
    if (keep_ops) r.ops.push_back(op);
    record(r, runner.apply(op), index, runner);
  }
  if (!r.failed) {
    if (keep_ops) r.ops.push_back(final_sync());
    record(r, runner.finish(), index, runner);
  }
  r.checked_elements = runner.checked_elements();
  r.ran_by_kind = runner.counts().ran;
  r.refused_by_kind = runner.counts().refused;
  return r;
}

RunResult run_ops(devctx::Api api, const std::vector<Op>& ops, bool keep_trace) {
  RunResult r;
  r.ops = ops;
  Runner runner(api);
  runner.keep_trace(keep_trace);
  for (std::size_t i = 0; i < ops.size() && !r.failed; ++i) record(r, runner.apply(ops[i]), i, runner);
  if (!r.failed && (ops.empty() || ops.back().kind != OpKind::sync_context)) {
    r.ops.push_back(final_sync());
    record(r, runner.finish(), ops.size(), runner);
  }
  r.trace = runner.trace();
  r.checked_elements = runner.checked_elements();
  return r;
}

std::string failure_kind(const RunResult& r) {
  if (!r.failed) return "";
  const std::string& m = r.failure;
  const char* what = m.find("differ from the model") != std::string::npos           ? "contents"
                     : m.find("succeeded; the model expected") != std::string::npos ? "unexpected success"
                     : m.find(" threw ") != std::string::npos                       ? "unexpected error"
                                                                                    : "other";
  const char* at = r.failed_at < r.ops.size() ? to_string(r.ops[r.failed_at].kind) : "end";
  return std::string(what) + " at " + at;
}

std::vector<Op> minimize(devctx::Api api, std::vector<Op> ops, const std::string& kind, double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  auto still_fails = [&](const std::vector<Op>& candidate, std::size_t& failed_at) {
    const RunResult r = run_ops(api, candidate, false);
    failed_at = r.failed_at;
    return r.failed && failure_kind(r) == kind;
  };
  std::size_t failed_at = 0;
  // Classic ddmin over complements: drop one of n chunks while the failure persists.
  std::size_t n = 2;
  while (ops.size() >= 2 && Clock::now() < deadline) {
    const std::size_t chunk = (ops.size() + n - 1) / n;
    bool reduced = false;
    for (std::size_t start = 0; start < ops.size() && Clock::now() < deadline; start += chunk) {
      std::vector<Op> candidate(ops.begin(), ops.begin() + std::ptrdiff_t(start));
      candidate.insert(candidate.end(), ops.begin() + std::ptrdiff_t(std::min(ops.size(), start + chunk)), ops.end());
      if (still_fails(candidate, failed_at)) {
        if (failed_at + 1 < candidate.size()) candidate.resize(failed_at + 1);  // nothing after the failure matters
        ops = std::move(candidate);
        n = std::max<std::size_t>(n - 1, 2);
        reduced = true;
        std::fprintf(stderr, "devctx_fuzz_diff: minimizing: %zu ops\n", ops.size());
        break;
      }
    }
    if (!reduced) {
      if (n >= ops.size()) break;
      n = std::min(ops.size(), n * 2);
    }
  }
  return ops;
}

std::string reproduction(const RunResult& r) {
  std::string s = "# ops (devctx_fuzz_diff --replay FILE reads these lines back)\n";
  for (const Op& op : r.ops) s += to_text(op) + "\n";
  s += "# the same program as devctx calls (d = DeviceBuffer, h = HostBuffer, v = std::vector; _8: uint8_t\n"
       "# elements, else uint32_t; fuzz_values / fuzz_fill write Model::fill_value(seed, i))\n";
  s += "devctx::DeviceContext ctx{api}, ctx2{api};  // ctx2: a second context of the same device\n"
       "auto s1 = ctx.create_stream(), s2 = ctx.create_stream(), s3 = ctx.create_stream();\n"
       "devctx::Event e0, e1, e2, e3;\n"
       "devctx::Stream moved_stream = ctx.create_stream();\n"
       "devctx::DeviceContext moved_ctx{api};\n"
       "{ auto taken = std::move(moved_stream); auto taken_ctx = std::move(moved_ctx); }\n"
       "std::vector<std::uint32_t> a(4), b(4);\n";
  for (const std::string& line : r.trace) s += line + "\n";
  return s;
}

}  // namespace devctx_fuzz
