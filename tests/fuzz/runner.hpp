// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/runner.hpp - runs ops against a real DeviceContext and checks each against the
// model: every call must succeed or throw exactly as the model says, and at each synchronize
// point every element of every buffer the host may read must hold what the model holds.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "fuzz/model.hpp"
#include "fuzz/op.hpp"

namespace devctx_fuzz {

enum class Status : std::uint8_t {
  ran,      ///< the op ran (or threw) as the model expected
  skipped,  ///< the op makes no sense here (empty slot, types differ) or would race: not run
  failed,   ///< devctx disagreed with the model: see Runner::failure()
};

class Runner {
 public:
  /// Opens a context on `api` with three extra streams.
  explicit Runner(devctx::Api api);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  [[nodiscard]] static Limits limits_of(const devctx::DeviceContext& ctx);
  [[nodiscard]] const Model& model() const { return model_; }

  Status apply(const Op& op);
  /// ctx.synchronize() and a check of every buffer (the end of every program).
  Status finish();

  /// What went wrong, once apply() returned failed.
  [[nodiscard]] const std::string& failure() const { return failure_; }
  /// The devctx calls made so far, as C++ statements (the reproduction's body).
  [[nodiscard]] const std::vector<std::string>& trace() const { return trace_; }
  /// Keep the trace (off by default in long runs: it grows with every op).
  void keep_trace(bool on) { keep_trace_ = on; }
  [[nodiscard]] std::uint64_t checked_elements() const { return checked_elements_; }
  /// Per op kind (OpKind's order): ops that ran, ops refused with the expected devctx::Error
  /// (counted in `ran` too), and ops skipped.
  struct Counts {
    std::array<std::uint64_t, kOpKinds> ran{}, refused{}, skipped{};
  };
  [[nodiscard]] const Counts& counts() const { return counts_; }

 private:
  struct Objects;

  Status run(const Op& op);
  Status check_slot(int slot, const char* when);
  Status check_all(const char* when);
  Status check_host_visible(const char* when);
  Status fail(std::string message);
  void note(std::string line);
  /// `name`, with "auto " before it the first time the trace assigns it.
  [[nodiscard]] std::string declare(const std::string& name);

  std::unique_ptr<Objects> objects_;  // before model_: the model takes the device's limits from it
  Model model_;
  std::string failure_;
  std::vector<std::string> trace_;
  std::set<std::string> declared_;
  bool keep_trace_ = false;
  std::uint64_t checked_elements_ = 0;
  Counts counts_;
  bool refused_ = false;  // the current op threw as the model expected
};

}  // namespace devctx_fuzz
