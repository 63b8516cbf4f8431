// SPDX-License-Identifier: Apache-2.0
// tools/settings.cpp - `devctx info --settings`: every DEVCTX_* environment variable devctx reads
// (the one table, src/core/settings_table.hpp) with its type, default, allowed values and meaning,
// and the value set in this environment now.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/settings_table.hpp"
#include "tool.hpp"

namespace devctx_tool {

int run_settings() {
  using devctx::detail::kSettings;
  std::printf(
      "DEVCTX_* environment variables (src/core/settings_table.hpp); flags take 1, true, yes, on / 0, false, no, off\n");
  const char* heading = nullptr;
  for (const auto& s : kSettings) {
    const char* group = s.reader == devctx::detail::SettingReader::library ? "read by the library (every program)"
                        : s.reader == devctx::detail::SettingReader::translator
                            ? "read by the fission translator, while a project builds"
                        : s.reader == devctx::detail::SettingReader::tests ? "read by devctx's own tests"
                                                                           : "read by devctx's scripts";
    if (group != heading) std::printf("\n%s:\n", group);
    heading = group;
    const std::string name(s.name);
    const char* now = std::getenv(name.c_str());
    std::printf("  %-32s %-7.*s now: %s\n", name.c_str(), int(to_string(s.type).size()), to_string(s.type).data(),
                now != nullptr && *now != '\0' ? now : "(unset)");
    std::printf("      %.*s\n      default: %.*s", int(s.meaning.size()), s.meaning.data(), int(s.fallback.size()),
                s.fallback.data());
    if (!s.range.empty()) std::printf("; allowed: %.*s", int(s.range.size()), s.range.data());
    std::printf("\n");
  }
  return Exit::ok;
}

}  // namespace devctx_tool
