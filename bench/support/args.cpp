// SPDX-License-Identifier: Apache-2.0
// bench/support/args.cpp - args.hpp on CLI11 (Debian: libcli11-dev), as the devctx tool reads
// its own command line.
#include "support/args.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace devctx_bench {

namespace {

/// Checks that a value is a number before its range is checked: "x" says it is not a number
/// (CLI11's range check alone would call it out of range). `whole`: digits only, with an
/// optional minus sign (a count).
CLI::Validator number(bool whole) {
  return CLI::Validator(
      [whole](std::string& text) -> std::string {
        char* end = nullptr;
        if (whole) {
          const std::size_t digits = text.find_first_not_of("0123456789", text.starts_with('-') ? 1 : 0);
          if (text.empty() || text == "-" || digits != std::string::npos) return text + " is not a whole number";
        } else {
          (void)std::strtod(text.c_str(), &end);
          if (text.empty() || end == text.c_str() || *end != '\0') return text + " is not a number";
        }
        return {};
      },
      "", whole ? "whole number" : "number");
}

}  // namespace

struct Args::Impl {
  std::string name;
  CLI::App app;
  Impl(std::string n, std::string description) : name(std::move(n)), app(std::move(description), name) {}
};

Args::Args(std::string name, std::string description)
    : impl_(std::make_unique<Impl>(std::move(name), std::move(description))) {
  // Unknown arguments are errors (CLI11's default), whether flags or stray words.
  impl_->app.allow_extras(false);
}

Args::~Args() = default;

void Args::option(const std::string& flag, int& value, const std::string& help, int min, int max) {
  impl_->app.add_option(flag, value, help)->capture_default_str()->check(number(true))->check(CLI::Range(min, max));
}

void Args::option(const std::string& flag, std::size_t& value, const std::string& help, std::size_t min, std::size_t max) {
  impl_->app.add_option(flag, value, help)->capture_default_str()->check(number(true))->check(CLI::Range(min, max));
}

void Args::option(const std::string& flag, double& value, const std::string& help, double min, double max) {
  impl_->app.add_option(flag, value, help)->capture_default_str()->check(number(false))->check(CLI::Range(min, max));
}

void Args::option(const std::string& flag, std::string& value, const std::string& help, const std::string& choices) {
  auto* o = impl_->app.add_option(flag, value, help)->capture_default_str();
  if (!choices.empty()) {
    std::vector<std::string> allowed;
    std::string word;
    for (const char c : choices + ",") {
      if (c != ',')
        word += c;
      else if (!word.empty())
        allowed.push_back(std::exchange(word, {}));
    }
    o->check(CLI::IsMember(allowed));
  }
}

void Args::flag(const std::string& flag, bool& value, const std::string& help) {
  impl_->app.add_flag(flag, value, help);
}

void Args::hidden_flag(const std::string& flag, bool& value) { impl_->app.add_flag(flag, value)->group(""); }

bool Args::given(const std::string& flag) const { return impl_->app.count(flag) > 0; }

void Args::parse(int argc, char** argv) {
  try {
    impl_->app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::exit(impl_->app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s (%s --help lists the options)\n", impl_->name.c_str(), e.what(),
                 impl_->name.c_str());
    std::exit(2);
  }
}

}  // namespace devctx_bench
