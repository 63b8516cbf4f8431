// SPDX-License-Identifier: Apache-2.0
// bench/support/env.hpp - what the benchmarks that sweep devctx's settings share: an environment
// variable set (or unset) for one scope, read by the next device opened in it; and sizes named
// as the tables print them ("64 KiB", "256 MiB", "1 GiB").
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

namespace devctx_bench {

/// Sets `name` to `value` (with nullptr: unsets it) until the end of the scope, then unsets it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() { unsetenv(name_.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
};

/// `bytes` in the largest whole binary unit: "4 KiB", "16 MiB", "1 GiB".
[[nodiscard]] inline std::string size_name(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (std::size_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

}  // namespace devctx_bench
