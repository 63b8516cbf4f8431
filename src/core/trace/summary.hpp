// SPDX-License-Identifier: Apache-2.0
// src/core/trace/summary.hpp - the transfer report built one operation at a time: what
// devctx::trace::summarize does to a list, kept as running totals so that DEVCTX_TRACE_FILE and
// DEVCTX_REPORT can drop each record once it is written and still report on all of them. Its
// memory grows with the devices and the distinct copy sizes, not with the operations.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include <devctx/trace.hpp>

namespace devctx::detail::trace {

class Summary {
 public:
  /// Counts `op` (in enqueue order: round trips depend on it).
  void add(const devctx::trace::Operation& op);
  /// The report of every operation added so far.
  [[nodiscard]] devctx::trace::Report report() const;
  [[nodiscard]] bool empty() const noexcept { return operations_ == 0; }

 private:
  devctx::trace::Report r_;
  std::map<std::string, bool> uploaded_;  // per device: an upload since the last download
  std::map<std::tuple<devctx::trace::Direction, bool, std::uint64_t>, devctx::trace::Offender> groups_;
  std::uint64_t operations_ = 0;
};

}  // namespace devctx::detail::trace
