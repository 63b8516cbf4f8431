// SPDX-License-Identifier: Apache-2.0
// src/runtime/cache.hpp - the on-disk cache of runtime-compiled kernels: where it is, its keys
// (SHA-256), and its entries, each written atomically and checked by its own hash when read.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace devctx::detail::rt {

/// SHA-256 of a sequence of length-prefixed parts, as 64 hex digits.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  /// Adds `part` preceded by its length, so that ("ab", "c") and ("a", "bc") differ.
  Hasher& add(std::string_view part);
  [[nodiscard]] std::string hex();

 private:
  void* ctx_;
};

/// The SHA-256 of every file under `dir` (its path relative to `dir` and its contents), computed
/// once per process and directory.
[[nodiscard]] const std::string& tree_hash(const std::filesystem::path& dir);

/// The cache directory, created (user-only) if needed: DEVCTX_CACHE_DIR, else
/// $XDG_CACHE_HOME/devctx/kernels, else $HOME/.cache/devctx/kernels. Empty when DEVCTX_CACHE=0,
/// or when the directory cannot be made or is not the user's alone (then warns once).
[[nodiscard]] std::optional<std::filesystem::path> cache_directory();

/// The payload of entry `key`, when present and intact; a damaged entry is removed and treated as absent.
[[nodiscard]] std::optional<std::string> cache_load(const std::filesystem::path& dir, const std::string& key);
/// Stores `payload` as entry `key` (temporary file, then rename). A directory that is read-only
/// or full warns once; the caller goes on without the cache.
void cache_store(const std::filesystem::path& dir, const std::string& key, std::string_view payload);

/// Prints "devctx: warning: <text>" to stderr, once per distinct text in the process.
void warn_once(const std::string& text);

}  // namespace devctx::detail::rt
