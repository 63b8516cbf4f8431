// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/choices.hpp - where the generator's decisions come from: a seeded generator
// (the differential driver) or the bytes of a libFuzzer input. Both answer "a number below n",
// so one generator serves both and a byte input decodes to ops by driving the same decisions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>

namespace devctx_fuzz {

class Choices {
 public:
  virtual ~Choices() = default;
  /// A number in [0, n) (0 when n is 0 or 1).
  virtual std::uint64_t below(std::uint64_t n) = 0;
  /// True once a byte input has been used up: the program ends there.
  [[nodiscard]] virtual bool exhausted() const = 0;

  /// True with probability `percent` / 100.
  bool percent(unsigned percent) { return below(100) < percent; }
  /// A number in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
};

/// Reproducible from its seed on every platform (std::mt19937_64 is fully specified, and the
/// reduction to [0, n) is written out rather than left to a distribution).
class SeededChoices final : public Choices {
 public:
  explicit SeededChoices(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t below(std::uint64_t n) override {
    if (n <= 1) return 0;
    // Rejection keeps it unbiased: only draws below the largest multiple of n are used.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t r = rng_();
    while (r >= limit) r = rng_();
    return r % n;
  }
  [[nodiscard]] bool exhausted() const override { return false; }

 private:
  std::mt19937_64 rng_;
};

/// Reads each decision from as few bytes as its range needs; past the end every answer is 0
/// and exhausted() turns true.
class ByteChoices final : public Choices {
 public:
  explicit ByteChoices(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  std::uint64_t below(std::uint64_t n) override {
    if (n <= 1) return 0;
    std::uint64_t value = 0;
    for (std::uint64_t range = n - 1; range != 0; range >>= 8) {
      if (pos_ == bytes_.size()) {
        exhausted_ = true;
        return 0;
      }
      value = (value << 8) | bytes_[pos_++];
    }
    return value % n;
  }
  [[nodiscard]] bool exhausted() const override { return exhausted_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
  bool exhausted_ = false;
};

/// splitmix64: the per-element value stream behind host fills (value of element i of fill `seed`).
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace devctx_fuzz
