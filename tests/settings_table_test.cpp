// SPDX-License-Identifier: Apache-2.0
// tests/settings_table_test.cpp - the settings table (src/core/settings_table.hpp) says what the
// library does: for every count and size the library reads, the range the table writes is the one
// its reader enforces (both ends accepted, one past either refused with a message naming the
// variable) and a numeric default is the value read when the variable is unset; the flags the CPU
// backend reads default as the table says. (ctest settings.table checks the table against the
// sources and the docs.)
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <devctx/devctx.hpp>

#include "backends/cpu/settings.hpp"
#include "comm/comm_impl.hpp"
#include "core/settings_table.hpp"
#include "support/test_support.hpp"
#if defined(DEVCTX_TESTS_CUDA_BUILT)
#include "backends/cuda/transfer_settings.hpp"
#endif

namespace detail = devctx::detail;
using devctx_test::error_of;
using devctx_test::ScopedEnv;
using testing::HasSubstr;

namespace {

/// "64 KiB" -> 65536, "1024" -> 1024; std::nullopt for text that is no number ("all cores").
std::optional<std::uint64_t> number_of(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  std::uint64_t value = std::stoull(std::string(text.substr(0, digits)));
  const std::string_view unit = text.substr(digits);
  const std::map<std::string_view, int> shifts = {{"", 0}, {" KiB", 10}, {" MiB", 20}, {" GiB", 30}, {" EiB", 60}};
  const auto shift = shifts.find(unit);
  if (shift == shifts.end()) return std::nullopt;
  return value << shift->second;
}

/// What reads each count or size of the library, as the number it reads.
std::map<std::string_view, std::function<std::uint64_t()>> readers() {
  std::map<std::string_view, std::function<std::uint64_t()>> r;
  r["DEVCTX_CPU_THREADS"] = [] { return detail::cpu::read_settings().workers; };
  r["DEVCTX_CPU_STACK_BYTES"] = [] { return detail::cpu::read_settings().stack_bytes; };
  r["DEVCTX_CPU_SPIN_US"] = [] { return detail::cpu::read_settings().spin_us; };
  r["DEVCTX_CPU_DEVICES"] = [] { return std::uint64_t(detail::cpu::device_count()); };
  r["DEVCTX_COMM_TIMEOUT_S"] = [] { return std::uint64_t(detail::comm_timeout_seconds()); };
#if defined(DEVCTX_TESTS_CUDA_BUILT)
  r["DEVCTX_CUDA_STAGING_THRESHOLD"] = [] { return detail::cuda::read_transfer_settings().threshold; };
  r["DEVCTX_CUDA_STAGING_CHUNK_BYTES"] = [] { return detail::cuda::read_transfer_settings().chunk_bytes; };
  r["DEVCTX_CUDA_STAGING_BYTES"] = [] { return detail::cuda::read_transfer_settings().staging_bytes; };
  r["DEVCTX_CUDA_COPY_THREADS"] = [] { return detail::cuda::read_transfer_settings().copy_threads; };
  r["DEVCTX_CUDA_COPY_SPIN_US"] = [] { return detail::cuda::read_transfer_settings().spin_us; };
#endif
  return r;
}

}  // namespace

TEST(SettingsTable, CountsAndSizesHaveTheRangeAndDefaultTheLibraryEnforces) {
  const auto read = readers();
  int checked = 0;
  for (const auto& s : detail::kSettings) {
    if (s.reader != detail::SettingReader::library ||
        (s.type != detail::SettingType::count && s.type != detail::SettingType::bytes))
      continue;
    const std::string name(s.name);
    SCOPED_TRACE(name);
    const auto reader = read.find(s.name);
    if (reader == read.end()) {
      // Only the CUDA backend's settings have no reader in a CPU-only build.
      EXPECT_THAT(name, testing::StartsWith("DEVCTX_CUDA_"));
      continue;
    }
    const auto dots = s.range.find(" .. ");
    ASSERT_NE(dots, std::string_view::npos) << "range '" << s.range << "' is not 'MIN .. MAX'";
    const auto min = number_of(s.range.substr(0, dots));
    const auto max = number_of(s.range.substr(dots + 4, s.range.find(',') - dots - 4));
    ASSERT_TRUE(min && max) << "range '" << s.range << "'";
    // Staging needs two chunks: its smallest size is tried with the smallest chunks, and the
    // largest chunks with the largest staging memory.
    const ScopedEnv chunks("DEVCTX_CUDA_STAGING_CHUNK_BYTES", name == "DEVCTX_CUDA_STAGING_BYTES" ? "65536" : nullptr);
    const ScopedEnv staging("DEVCTX_CUDA_STAGING_BYTES", name == "DEVCTX_CUDA_STAGING_CHUNK_BYTES"
                                                             ? std::to_string(std::uint64_t{16} << 30).c_str()
                                                             : nullptr);
    {
      const ScopedEnv unset(name.c_str(), nullptr);
      if (const auto fallback = number_of(s.fallback)) {
        EXPECT_EQ(reader->second(), *fallback) << "default";
      }
    }
    for (const std::uint64_t value : {*min, *max}) {
      const ScopedEnv env(name.c_str(), std::to_string(value).c_str());
      EXPECT_EQ(reader->second(), value);
    }
    std::vector<std::uint64_t> outside = {*max + 1};
    if (*min > 0) outside.push_back(*min - 1);
    for (const std::uint64_t value : outside) {
      const ScopedEnv env(name.c_str(), std::to_string(value).c_str());
      const auto e = error_of([&] { (void)reader->second(); });
      ASSERT_TRUE(e) << value << " was accepted";
      EXPECT_EQ(e->code(), devctx::Errc::invalid_argument);
      EXPECT_THAT(e->what(), HasSubstr(name + '=' + std::to_string(value) + " is outside "));
    }
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

TEST(SettingsTable, TheCpuBackendsFlagsDefaultAsTheTableSays) {
  const std::map<std::string_view, std::function<bool()>> flags = {
      {"DEVCTX_CPU_FISSION", [] { return detail::cpu::fission_enabled(); }},
      {"DEVCTX_TRACE", [] { return detail::cpu::trace_enabled(); }}};
  for (const auto& [name, read] : flags) {
    const auto* row = detail::find_setting(name);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(row->type, detail::SettingType::flag);
    const ScopedEnv unset(std::string(name).c_str(), nullptr);
    EXPECT_EQ(read(), row->fallback == "1") << name;
  }
}

TEST(SettingsTable, EveryNameOnceAndEveryRowComplete) {
  for (std::size_t i = 0; i < detail::kSettings.size(); ++i) {
    const auto& s = detail::kSettings[i];
    EXPECT_THAT(std::string(s.name), testing::StartsWith("DEVCTX_"));
    EXPECT_FALSE(s.fallback.empty()) << s.name;
    EXPECT_FALSE(s.meaning.empty()) << s.name;
    EXPECT_EQ(detail::find_setting(s.name), &s) << s.name << " has two rows";
  }
}
