// SPDX-License-Identifier: Apache-2.0
// tests/partition_test.cpp - how the CPU backend cuts an operation's work into parts
// (src/backends/cpu/partition.hpp): every unit in exactly one part, each worker's lane contiguous
// and walked in claim order, small work in order, and no overflow near 2^64 units.
#include "backends/cpu/partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

using devctx::detail::cpu::Partition;

namespace {

/// Checks that the parts of `p` cover [0, total) once, in order of their first unit, and that
/// each has at least `min_units` (but for a single part of less work than that).
void expect_exact_cover(const Partition& p, std::uint64_t total, std::uint64_t min_units) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (std::size_t c = 0; c < p.parts; ++c) ranges.push_back(p.range(c));
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t next = 0;
  for (const auto& [first, last] : ranges) {
    ASSERT_EQ(first, next) << "a gap or an overlap before unit " << next << " of " << total;
    ASSERT_LT(first, last) << "an empty part at unit " << first;
    if (p.parts > 1) {
      EXPECT_GE(last - first, min_units) << "a part smaller than " << min_units << " units";
    }
    next = last;
  }
  EXPECT_EQ(next, total);
}

TEST(Partition, EveryUnitIsInExactlyOnePart) {
  for (std::uint64_t total = 0; total < 200; ++total)
    for (std::size_t workers : {1, 2, 3, 7})
      for (std::size_t per_lane : {1, 4, 16})
        for (std::uint64_t min_units : {0, 1, 3, 50}) {
          const Partition p(total, workers, per_lane, min_units);
          SCOPED_TRACE(testing::Message() << "total " << total << ", workers " << workers << ", per lane " << per_lane
                                          << ", at least " << min_units);
          EXPECT_LE(p.parts, workers * per_lane);
          EXPECT_EQ(p.parts == 0, total == 0);
          expect_exact_cover(p, total, std::max<std::uint64_t>(min_units, 1));
        }
}

TEST(Partition, ClaimsGoRoundTheLanesAndEachLaneIsWalkedInOrder) {
  std::mt19937_64 random{std::random_device{}()};
  for (int round = 0; round < 200; ++round) {
    const std::size_t workers = 1 + random() % 16, per_lane = 1 + random() % 16;
    const std::uint64_t total = workers * per_lane + random() % 100000;
    const Partition p(total, workers, per_lane, 1);
    SCOPED_TRACE(testing::Message() << "total " << total << ", workers " << workers << ", per lane " << per_lane);
    ASSERT_EQ(p.parts, workers * per_lane);
    ASSERT_EQ(p.lanes, workers);
    // Lane l is claims l, l + workers, ...: one contiguous run, the lanes in order, of nearly
    // equal sizes.
    std::uint64_t lane_start = 0;
    for (std::size_t lane = 0; lane < workers; ++lane) {
      std::uint64_t at = lane_start;
      for (std::size_t piece = 0; piece < per_lane; ++piece) {
        const auto [first, last] = p.range(piece * workers + lane);
        ASSERT_EQ(first, at) << "lane " << lane << ", piece " << piece;
        at = last;
      }
      const std::uint64_t size = at - lane_start;
      EXPECT_TRUE(size == total / workers || size == total / workers + 1) << "lane " << lane << " has " << size;
      lane_start = at;
    }
    EXPECT_EQ(lane_start, total);
  }
}

TEST(Partition, LessWorkThanAPartPerLaneIsCutInOrder) {
  // A copy of 40 lines with parts of at least 16 lines on 4 workers: two parts, in order.
  const Partition p(40, 4, 4, 16);
  ASSERT_EQ(p.parts, 2u);
  EXPECT_EQ(p.range(0), std::make_pair(std::uint64_t{0}, std::uint64_t{20}));
  EXPECT_EQ(p.range(1), std::make_pair(std::uint64_t{20}, std::uint64_t{40}));
  // Less than one part's worth: one part with all of it.
  const Partition one(5, 4, 4, 16);
  ASSERT_EQ(one.parts, 1u);
  EXPECT_EQ(one.range(0), std::make_pair(std::uint64_t{0}, std::uint64_t{5}));
  // A checked launch: one part of every block.
  const Partition checked(123456, 1, 1, 123456);
  ASSERT_EQ(checked.parts, 1u);
  EXPECT_EQ(checked.range(0), std::make_pair(std::uint64_t{0}, std::uint64_t{123456}));
}

TEST(Partition, HugeCountsDoNotOverflow) {
  // A grid of the most blocks CUDA allows ((2^31 - 1) x 65535 x 65535), and units near 2^64.
  for (const std::uint64_t total :
       {std::uint64_t{2147483647} * 65535 * 65535, ~std::uint64_t{0}, ~std::uint64_t{0} - 12345}) {
    const Partition p(total, 7, 16, 1);
    ASSERT_EQ(p.parts, 7u * 16);
    expect_exact_cover(p, total, 1);
  }
}

}  // namespace
