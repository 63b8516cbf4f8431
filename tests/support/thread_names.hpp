// SPDX-License-Identifier: Apache-2.0
// tests/support/thread_names.hpp - the names of this process's threads, as tools see them
// (Linux: /proc/self/task/*/comm; empty elsewhere). Header-only: the staging engine's tests,
// which link no test support library, use it too.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace devctx_test {

inline std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) names.push_back(name);
  }
  return names;
}

}  // namespace devctx_test
