// SPDX-License-Identifier: Apache-2.0
// src/core/trace/chrome_json.hpp - the Chrome trace-event writer a piece at a time: the file's
// opening, then each operation's events as it comes (with the names of its tracks the first
// time one appears), then the closing with the count of operations written. to_json() writes a
// whole list with it; DEVCTX_TRACE_FILE streams through it (recorder.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <devctx/trace.hpp>

namespace devctx::detail::trace {

class ChromeJson {
 public:
  /// The document's opening, up to the open traceEvents array, and the host's track name.
  void begin(std::string& out);
  /// The events of `op` (host enqueue, device execution, memory counter, flow arrow), after the
  /// names of its device, stream and host thread when they are new.
  void add(const devctx::trace::Operation& op, std::string& out);
  /// Closes the array and the document; otherData says how many operations the file holds and
  /// how many of them were written without device times that the recorder could not wait for.
  void end(std::string& out, std::uint64_t without_device_time = 0);
  [[nodiscard]] std::uint64_t operations() const noexcept { return operations_; }

 private:
  void begin_event(std::string& out);
  std::map<std::string, std::uint64_t> devices_;  // label -> process id, from 1 in order of appearance
  std::set<std::pair<std::uint64_t, int>> streams_;
  std::set<int> threads_;
  std::map<std::uint64_t, std::uint64_t> in_use_;  // device memory per device, for the counter
  std::uint64_t operations_ = 0;
  bool first_ = true;
};

}  // namespace devctx::detail::trace
