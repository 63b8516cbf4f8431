// SPDX-License-Identifier: Apache-2.0
// tests/nvtx/nvtx_record.hpp - reading back what the test injection library (nvtx_recorder.cpp)
// wrote to DEVCTX_NVTX_RECORD: one NvtxCall per line. Shared by the NVTX tests.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace devctx_test {

struct NvtxCall {
  std::string what;     ///< "init", "domain", "push", "pop"
  std::string domain;   ///< the domain's name ("(default)" for the plain calls); "domain": its name
  std::string message;  ///< "push": the range's name

  bool operator==(const NvtxCall&) const = default;
};

/// The file DEVCTX_NVTX_RECORD names, or "" when unset.
inline std::string nvtx_record_path() {
  const char* path = std::getenv("DEVCTX_NVTX_RECORD");
  return path != nullptr ? path : "";
}

/// The calls recorded in `path`, in order; empty when the file does not exist.
inline std::vector<NvtxCall> read_nvtx_record(const std::string& path) {
  std::vector<NvtxCall> calls;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    NvtxCall call;
    const auto tab = line.find('\t');
    call.what = line.substr(0, tab);
    if (tab != std::string::npos) {
      const auto rest = line.substr(tab + 1);
      const auto tab2 = rest.find('\t');
      call.domain = rest.substr(0, tab2);
      if (tab2 != std::string::npos) call.message = rest.substr(tab2 + 1);
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

/// The "devctx" domain's ranges among calls[from...]: the names pushed, in order, and whether
/// every push was popped and none popped twice.
struct DevctxRanges {
  std::vector<std::string> pushes;
  bool balanced = true;
};
inline DevctxRanges devctx_ranges(const std::vector<NvtxCall>& calls, std::size_t from = 0) {
  DevctxRanges r;
  int depth = 0, lowest = 0;
  for (std::size_t i = from; i < calls.size(); ++i) {
    if (calls[i].domain != "devctx") continue;
    if (calls[i].what == "push") {
      r.pushes.push_back(calls[i].message);
      ++depth;
    } else if (calls[i].what == "pop") {
      lowest = std::min(lowest, --depth);
    }
  }
  r.balanced = depth == 0 && lowest == 0;
  return r;
}

/// "16.0 KiB (16384 bytes)": devctx's byte text (src/core/text.cpp) for sizes of 1 KiB to 1 MiB.
inline std::string bytes_name(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f KiB (%zu bytes)", double(bytes) / 1024.0, bytes);
  return text;
}

}  // namespace devctx_test
