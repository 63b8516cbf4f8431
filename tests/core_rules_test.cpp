// SPDX-License-Identifier: Apache-2.0
// tests/core_rules_test.cpp - the rules src/core keeps for the whole library, checked directly:
// DEVCTX_* flags and sizes (environment.hpp), overflow-checked size arithmetic
// (detail/base/checked_size.hpp), the bound on allocations and the pageable-copy rule
// (memory.hpp), and the formatting of byte counts and launches (text.hpp).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <devctx/devctx.hpp>  // first: the private header below is reached through it
#include <devctx/detail/base/checked_size.hpp>

#include "core/environment.hpp"
#include "core/memory.hpp"
#include "core/text.hpp"
#include "support/test_support.hpp"

using devctx::Errc;
using devctx_test::error_of;
using devctx_test::ScopedEnv;
using testing::HasSubstr;
namespace detail = devctx::detail;

namespace {
constexpr const char* kVar = "DEVCTX_TEST_RULES_VARIABLE";
}  // namespace

TEST(EnvironmentFlags, UnsetOrEmptyMeansTheDefault) {
  {
    const ScopedEnv env(kVar, nullptr);
    EXPECT_TRUE(detail::env_flag(kVar, true));
    EXPECT_FALSE(detail::env_flag(kVar, false));
  }
  const ScopedEnv env(kVar, "");
  EXPECT_TRUE(detail::env_flag(kVar, true));
  EXPECT_FALSE(detail::env_flag(kVar, false));
}

TEST(EnvironmentFlags, OneTruthinessRule) {
  for (const char* text : {"1", "true", "TRUE", "yes", "Yes", "on", "ON"}) {
    const ScopedEnv env(kVar, text);
    EXPECT_TRUE(detail::env_flag(kVar, false)) << text;
  }
  for (const char* text : {"0", "false", "False", "no", "NO", "off", "Off"}) {
    const ScopedEnv env(kVar, text);
    EXPECT_FALSE(detail::env_flag(kVar, true)) << text;
  }
  for (const char* text : {"2", "enable", " 1", "1 ", "y", "-1"}) {
    SCOPED_TRACE(text);
    const ScopedEnv env(kVar, text);
    const auto e = error_of([] { (void)detail::env_flag(kVar, false); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(e->what(), HasSubstr(std::string(kVar) + "='" + text + "' is not a flag"));
  }
}

// The test programs read their own flags (DEVCTX_REQUIRE_GPU) through the same parser
// (support/test_env.hpp): `yes` requires the GPU as `1` does, instead of skipping its tests.
TEST(EnvironmentFlags, TheTestsReadRequireGpuByTheLibraryRule) {
  for (const char* text : {"1", "true", "yes", "YES", "on"}) {
    const ScopedEnv env("DEVCTX_REQUIRE_GPU", text);
    EXPECT_TRUE(devctx_test::require_gpu()) << text;
  }
  for (const char* text : {"", "0", "false", "no", "Off"}) {
    const ScopedEnv env("DEVCTX_REQUIRE_GPU", text);
    EXPECT_FALSE(devctx_test::require_gpu()) << text;
  }
  const ScopedEnv env("DEVCTX_REQUIRE_GPU", nullptr);
  EXPECT_FALSE(devctx_test::require_gpu());
}

TEST(EnvironmentSizes, ValuesWithinTheRangeAndTheDefault) {
  {
    const ScopedEnv env(kVar, nullptr);
    EXPECT_EQ(detail::env_size(kVar, 7, 1, 64, detail::SizeUnit::count, "things"), 7u);
  }
  for (const auto& [text, value] : {std::pair{"1", 1u}, std::pair{"64", 64u}, std::pair{"0032", 32u}}) {
    const ScopedEnv env(kVar, text);
    EXPECT_EQ(detail::env_size(kVar, 7, 1, 64, detail::SizeUnit::count, "things"), value) << text;
  }
}

TEST(EnvironmentSizes, AnythingElseNamesTheVariableAndTheRange) {
  // "-1" must not be read as 2^64 - 1 (strtoull would), nor "1e3" as 1.
  for (const char* text : {"-1", "+3", " 3", "3 ", "1e3", "0x10", "three", "18446744073709551616"}) {
    SCOPED_TRACE(text);
    const ScopedEnv env(kVar, text);
    const auto e = error_of([] { (void)detail::env_size(kVar, 7, 1, 64, detail::SizeUnit::count, "things"); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(e->what(), HasSubstr(std::string(kVar) + "='" + text + "' is not a whole number: use 1 .. 64 (things)"));
  }
  for (const char* text : {"0", "65", "4096"}) {
    SCOPED_TRACE(text);
    const ScopedEnv env(kVar, text);
    const auto e = error_of([] { (void)detail::env_size(kVar, 7, 1, 64, detail::SizeUnit::count, "things"); });
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr(std::string(kVar) + "=" + text + " is outside 1 .. 64 (things)"));
  }
  const ScopedEnv env(kVar, "1000");
  const auto e = error_of(
      [] { (void)detail::env_size(kVar, 65536, 16 * 1024, 64 * 1024 * 1024, detail::SizeUnit::bytes, "a stack"); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr(std::string(kVar) +
                                   "=1000 is outside 16.0 KiB (16384 bytes) .. 64.0 MiB (67108864 bytes) (a stack)"));
}

TEST(CheckedSizes, ExactResultsOrNothing) {
  constexpr std::size_t max = SIZE_MAX;
  static_assert(detail::checked_mul(3, 4) == 12u);
  static_assert(detail::checked_mul(max, 0) == 0u);
  static_assert(detail::checked_mul(0, max) == 0u);
  static_assert(detail::checked_mul(max, 1) == max);
  static_assert(!detail::checked_mul(max / 2 + 1, 2));
  static_assert(!detail::checked_mul((std::size_t{1} << 62) + 1, 4));
  static_assert(detail::checked_add(max - 1, 1) == max);
  static_assert(!detail::checked_add(max, 1));
  static_assert(!detail::checked_add(1, max));
  static_assert(detail::checked_round_up(0, 64) == 0u);
  static_assert(detail::checked_round_up(1, 64) == 64u);
  static_assert(detail::checked_round_up(64, 64) == 64u);
  static_assert(detail::checked_round_up(65, 4096) == 4096u);
  static_assert(!detail::checked_round_up(max, 4096));
  static_assert(detail::checked_round_up(max - 99, 64) == max - 63);
  static_assert(!detail::checked_round_up(max - 99, 4096));
  static_assert(detail::checked_round_up(max - 4095, 4096) == max - 4095);
  static_assert(!detail::checked_round_up(5, 0));
  SUCCEED() << "checked at compile time";
}

TEST(MemoryRules, NoAllocationABackendCanWrapWhenRoundingReachesIt) {
  // Whatever a backend rounds an accepted size up to (an alignment or a page, up to 2^61),
  // the result still fits.
  EXPECT_TRUE(detail::checked_round_up(detail::kMaxAllocationBytes, std::size_t{1} << 61));
  EXPECT_GT(detail::host_memory_bytes(), 0u);
  EXPECT_THAT(detail::host_memory_text(), HasSubstr("the machine has "));
}

TEST(MemoryRules, OnlyOrdinaryHostMemoryMakesACopyWait) {
  using detail::MemKind;
  EXPECT_TRUE(detail::copy_waits_for_host(MemKind::host_pageable, MemKind::device));
  EXPECT_TRUE(detail::copy_waits_for_host(MemKind::device, MemKind::host_pageable));
  EXPECT_TRUE(detail::copy_waits_for_host(MemKind::host_pageable, MemKind::host_pinned));
  EXPECT_FALSE(detail::copy_waits_for_host(MemKind::device, MemKind::host_pinned));
  EXPECT_FALSE(detail::copy_waits_for_host(MemKind::host_pinned, MemKind::device));
  EXPECT_FALSE(detail::copy_waits_for_host(MemKind::device, MemKind::device));
}

TEST(Text, BytesAreWrittenOneWay) {
  EXPECT_EQ(detail::bytes_text(0), "0 bytes");
  EXPECT_EQ(detail::bytes_text(1023), "1023 bytes");
  EXPECT_EQ(detail::bytes_text(1024), "1.0 KiB (1024 bytes)");
  EXPECT_EQ(detail::bytes_text(1572864), "1.5 MiB (1572864 bytes)");
  EXPECT_EQ(detail::bytes_text(std::size_t{1} << 60), "1.0 EiB (1152921504606846976 bytes)");
  EXPECT_EQ(detail::bytes_text(SIZE_MAX), "16.0 EiB (18446744073709551615 bytes)");
}

TEST(Text, ConcatWritesEveryPartAsAStreamWould) {
  // Text and integers take a path without a stream; everything else goes through one. Each part
  // must come out as `std::ostringstream <<` writes it.
  const std::string text = "text";
  const std::string_view view = "view";
  const char array[] = "array";
  const unsigned char byte = 'u';
  const signed char sbyte = 's';
  const auto streamed = [](const auto&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
  };
  EXPECT_EQ(detail::concat(text, ' ', view, array, "literal", byte, sbyte),
            streamed(text, ' ', view, array, "literal", byte, sbyte));
  EXPECT_EQ(detail::concat(0, -1, 42u, -9223372036854775807LL - 1, SIZE_MAX, short{-7}, true, false),
            streamed(0, -1, 42u, -9223372036854775807LL - 1, SIZE_MAX, short{-7}, true, false));
  const void* pointer = &text;
  EXPECT_EQ(detail::concat(1.5, 0.1f, 1e300, pointer), streamed(1.5, 0.1f, 1e300, pointer));
  EXPECT_EQ(detail::concat(), "");
  const char* null_text = nullptr;
  EXPECT_EQ(detail::concat("before ", null_text, " after"), "before (null) after");
  EXPECT_EQ(detail::concat(-12345, " of ", std::size_t{67890}), "-12345 of 67890");
}

TEST(Text, LaunchesAreNamedOneWay) {
  EXPECT_EQ(detail::launch_operation("vector_add"), "enqueue_function<vector_add>");
  EXPECT_EQ(detail::launch_operation("ns::scale<float>"), "enqueue_function<ns::scale<float>>");
}
