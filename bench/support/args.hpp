// SPDX-License-Identifier: Apache-2.0
// bench/support/args.hpp - a benchmark's command line, read with CLI11 (args.cpp: the one file
// that includes it, so that nvcc never compiles CLI11 and each benchmark does not either).
//
// Every benchmark declares its options here and calls parse() first, before it touches a
// device: an unknown flag, a missing value, a malformed number ("--trials x") or one outside
// its range is refused with a message naming the option and exit status 2; --help prints the
// options and exits 0. Nothing is clamped or ignored silently.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace devctx_bench {

class Args {
 public:
  /// `name`: the program's name in messages; `description`: what it measures (--help).
  Args(std::string name, std::string description);
  ~Args();
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  /// An option taking a whole number in [min, max] ("--trials 9"); `value` holds the default.
  void option(const std::string& flag, int& value, const std::string& help, int min, int max);
  void option(const std::string& flag, std::size_t& value, const std::string& help, std::size_t min, std::size_t max);
  /// An option taking a number in [min, max] (digits, a decimal point or an exponent: "1e6").
  void option(const std::string& flag, double& value, const std::string& help, double min, double max);
  /// An option taking a word; with `choices` (comma-separated), only one of them.
  void option(const std::string& flag, std::string& value, const std::string& help, const std::string& choices = "");
  /// A flag without a value: true when given.
  void flag(const std::string& flag, bool& value, const std::string& help);
  /// A flag the benchmark passes to a copy of itself (a child process): hidden from --help.
  void hidden_flag(const std::string& flag, bool& value);

  /// Whether `flag` was given on the command line (after parse()), to tell a default from a
  /// value the user chose.
  [[nodiscard]] bool given(const std::string& flag) const;

  /// Reads the command line into the variables given above. Returns on success; prints the
  /// help and exits 0 on --help; prints "NAME: error: ..." naming the option and exits 2 on
  /// anything it does not accept.
  void parse(int argc, char** argv);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace devctx_bench
