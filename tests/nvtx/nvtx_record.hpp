// SPDX-License-Identifier: Apache-2.0
// tests/nvtx/nvtx_record.hpp - reading back what the test injection library (nvtx_recorder.cpp)
// wrote to DEVCTX_NVTX_RECORD: one NvtxCall per line. Shared by the NVTX tests.
#pragma once

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

}  // namespace devctx_test
