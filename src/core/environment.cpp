// SPDX-License-Identifier: Apache-2.0
// src/core/environment.cpp - DEVCTX_* environment variables and device names (environment.hpp).
#include "core/environment.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <devctx/backend.hpp>
#include <devctx/device_info.hpp>

#include "core/errors.hpp"

namespace devctx {
namespace detail {
namespace {

/// The variable's value; std::nullopt when unset or empty (an empty value counts as unset, so
/// that `DEVCTX_X= program` restores the default).
std::optional<std::string_view> env_text(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::string_view(text);
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

/// A decimal integer of digits only; std::nullopt for anything else (signs, spaces, overflow).
template <class T>
std::optional<T> parse_whole_number(std::string_view text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) return std::nullopt;
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string limit_text(std::size_t value, SizeUnit unit) {
  return unit == SizeUnit::bytes ? bytes_text(value) : std::to_string(value);
}

/// `subject` is how messages name the text: "DEVCTX_DEVICE='tpu'" or "device name 'tpu'".
DeviceId parse_device_name(std::string_view text, const std::string& subject) {
  std::string_view name = text;
  int id = 0;
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    const auto number = parse_whole_number<int>(text.substr(colon + 1));
    if (!number) fail(Errc::invalid_argument, subject, ": the device number after ':' must be a non-negative integer");
    id = *number;
  }
  std::string names;  // "cpu, cuda or cuda:N"
  for (const Backend* b : backends()) {
    if (b->name == name || std::ranges::find(b->aliases, name) != b->aliases.end()) return {b->api, id};
    names += concat(names.empty() ? "" : ", ", b->name);
  }
  fail(Errc::invalid_argument, subject, " names no backend: use ", names, " or ", backends().back()->name, ":N");
}

}  // namespace

bool env_flag(const char* name, bool fallback) {
  const auto text = env_text(name);
  if (!text) return fallback;
  static constexpr std::array<std::string_view, 4> on = {"1", "true", "yes", "on"};
  static constexpr std::array<std::string_view, 4> off = {"0", "false", "no", "off"};
  const auto is = [&](std::string_view word) { return equals_ignoring_case(*text, word); };
  if (std::ranges::any_of(on, is)) return true;
  if (std::ranges::any_of(off, is)) return false;
  fail(Errc::invalid_argument, name, "='", *text, "' is not a flag: use 1, true, yes or on to enable it and 0, false, no ",
       "or off to disable it (or leave it unset)");
}

std::size_t env_size(const char* name, std::size_t fallback, std::size_t min, std::size_t max, SizeUnit unit,
                     const char* meaning) {
  const auto text = env_text(name);
  if (!text) return fallback;
  const auto range = [&] { return concat(limit_text(min, unit), " .. ", limit_text(max, unit), " (", meaning, ')'); };
  const auto value = parse_whole_number<std::size_t>(*text);
  if (!value) fail(Errc::invalid_argument, name, "='", *text, "' is not a whole number: use ", range());
  if (*value < min || *value > max) fail(Errc::invalid_argument, name, '=', *value, " is outside ", range());
  return *value;
}

std::string setting_text(const char* name) {
  const auto text = env_text(name);
  return text ? std::string(*text) : std::string();
}

}  // namespace detail

DeviceId parse_device(std::string_view name) {
  return detail::parse_device_name(name, detail::concat("device name '", name, '\''));
}

std::optional<DeviceId> device_from_environment() {
  const auto text = detail::env_text("DEVCTX_DEVICE");
  if (!text) return std::nullopt;
  return detail::parse_device_name(*text, detail::concat("DEVCTX_DEVICE='", *text, '\''));
}

}  // namespace devctx
