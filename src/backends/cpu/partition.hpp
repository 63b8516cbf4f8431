// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/partition.hpp - how an operation's work is cut into the parts that the pool's
// threads claim (a kernel's blocks, a copy's cache lines, a fill's elements).
//
// With work enough for `per_lane` parts per worker, the work is split into one contiguous lane per
// worker, each cut into `per_lane` pieces, and claim c is piece c / lanes of lane c % lanes. The
// threads claim parts from one counter, in turn, so each then walks a lane of its own instead of
// taking the range next to the other thread's. Why: a CUDA-style block reduction of 2^24 floats
// on 2 cores took 0.58-0.69x OpenMP's time with neighbouring ranges and 0.81-0.86x in lanes
// (docs/cpu-backend.md, "Parts and lanes"). A thread that finishes its lane early still takes
// pieces of the others. With less work, the parts (of at least `min_units` each) are in order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace devctx::detail::cpu {

struct Partition {
  Partition() = default;
  /// `total` units for `workers` threads: `per_lane` parts per worker when every part can have
  /// at least `min_units` (taken as 1 when 0), else as many parts of at least `min_units` as fit
  /// (one when there is less work than that, none when there is none), in order.
  Partition(std::uint64_t total_units, std::size_t workers, std::size_t per_lane, std::uint64_t min_units) noexcept
      : total(total_units) {
    min_units = std::max<std::uint64_t>(min_units, 1);
    const std::uint64_t wanted = std::uint64_t(std::max<std::size_t>(workers, 1)) * std::max<std::size_t>(per_lane, 1);
    // The most parts of at least min_units each (one, for less work than that).
    const std::uint64_t most = total == 0 ? 0 : std::max<std::uint64_t>(total / min_units, 1);
    if (most >= wanted) {
      parts = std::size_t(wanted);
      lanes = std::max<std::size_t>(workers, 1);
    } else {
      parts = std::size_t(most);
      lanes = parts;  // one piece per lane: the parts in order
    }
  }

  /// The units [first, last) of claimed part `part` (< parts). Every unit is in exactly one part.
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> range(std::size_t part) const noexcept {
    const std::uint64_t lane = part % lanes, piece = part / lanes, pieces = parts / lanes;
    const std::uint64_t lane_begin = piece_begin(total, lanes, lane);
    const std::uint64_t lane_units = piece_begin(total, lanes, lane + 1) - lane_begin;
    return {lane_begin + piece_begin(lane_units, pieces, piece), lane_begin + piece_begin(lane_units, pieces, piece + 1)};
  }

  std::uint64_t total = 0;
  std::size_t parts = 0;
  std::size_t lanes = 0;

 private:
  /// The first unit of piece `i` of `n` nearly equal pieces of [0, units) (the first units % n
  /// pieces have one more). Never overflows.
  [[nodiscard]] static std::uint64_t piece_begin(std::uint64_t units, std::uint64_t n, std::uint64_t i) noexcept {
    return i * (units / n) + std::min(i, units % n);
  }
};

}  // namespace devctx::detail::cpu
