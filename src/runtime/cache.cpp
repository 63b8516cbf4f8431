// SPDX-License-Identifier: Apache-2.0
// src/runtime/cache.cpp - the on-disk cache of runtime-compiled kernels (cache.hpp): SHA-256
// through OpenSSL's libcrypto, user-only directories, entries = magic + SHA-256 of the payload +
// payload, written to a temporary file and renamed into place.
#include "runtime/cache.hpp"

#include "core/environment.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "core/errors.hpp"

namespace devctx::detail::rt {

namespace {

constexpr std::string_view kMagic = "DEVCTXK1";  // 8 bytes, then the 32-byte SHA-256 of the payload
constexpr std::size_t kDigestBytes = 32;

std::string hex_of(const unsigned char* bytes, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

std::string sha256_raw(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1 || size != kDigestBytes)
    fail(Errc::backend_error, "compile_function: OpenSSL's SHA-256 failed");
  return {reinterpret_cast<const char*>(digest), size};
}

/// DEVCTX_CACHE=0 (or any false word of the library's one flag rule) turns the cache off; a value
/// that is not a flag is an Error naming the variable.
bool cache_disabled() { return !env_flag("DEVCTX_CACHE", true); }

}  // namespace

Hasher::Hasher() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1)
    fail(Errc::backend_error, "compile_function: OpenSSL's SHA-256 could not be set up");
}
Hasher::~Hasher() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

Hasher& Hasher::add(std::string_view part) {
  const std::string length = std::to_string(part.size()) + ':';
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), length.data(), length.size());
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), part.data(), part.size());
  return *this;
}

std::string Hasher::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &size);
  return hex_of(digest, size);
}

const std::string& tree_hash(const std::filesystem::path& dir) {
  static std::mutex mutex;
  static std::map<std::filesystem::path, std::string> hashes;
  const std::lock_guard lock(mutex);
  if (const auto it = hashes.find(dir); it != hashes.end()) return it->second;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  Hasher h;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    h.add(std::filesystem::relative(file, dir, ec).generic_string()).add(content);
  }
  return hashes.emplace(dir, h.hex()).first->second;
}

void warn_once(const std::string& text) {
  static std::mutex mutex;
  static std::set<std::string> said;
  const std::lock_guard lock(mutex);
  if (said.insert(text).second) std::fprintf(stderr, "devctx: warning: %s\n", text.c_str());
}

std::optional<std::filesystem::path> cache_directory() {
  if (cache_disabled()) return std::nullopt;
  std::filesystem::path dir;
  if (const std::string d = setting_text("DEVCTX_CACHE_DIR"); !d.empty())
    dir = d;
  else if (const std::string x = setting_text("XDG_CACHE_HOME"); !x.empty())
    dir = std::filesystem::path(x) / "devctx" / "kernels";
  else if (const std::string home = setting_text("HOME"); !home.empty())
    dir = std::filesystem::path(home) / ".cache" / "devctx" / "kernels";
  else {
    warn_once("kernel cache off: neither DEVCTX_CACHE_DIR, XDG_CACHE_HOME nor HOME is set");
    return std::nullopt;
  }
  // Each missing component is made user-only (mode 0700), as mkdir -p -m 0700 would.
  std::filesystem::path made;
  for (const auto& part : dir) {
    made /= part;
    if (::mkdir(made.c_str(), 0700) != 0 && errno != EEXIST) {
      warn_once("kernel cache directory " + dir.string() + " cannot be created (" + std::strerror(errno) +
                "): kernels are compiled without the cache");
      return std::nullopt;
    }
  }
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    warn_once("kernel cache directory " + dir.string() + " is not a directory: kernels are compiled without the cache");
    return std::nullopt;
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    warn_once("kernel cache directory " + dir.string() +
              " is not the user's alone (another owner, or writable by group or others): kernels are compiled "
              "without the cache");
    return std::nullopt;
  }
  return dir;
}

std::optional<std::string> cache_load(const std::filesystem::path& dir, const std::string& key) {
  const std::filesystem::path file = dir / (key + ".dck");
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t header = kMagic.size() + kDigestBytes;
  if (content.size() > header && std::string_view(content).substr(0, kMagic.size()) == kMagic) {
    std::string_view payload = std::string_view(content).substr(header);
    if (sha256_raw(payload) == std::string_view(content).substr(kMagic.size(), kDigestBytes))
      return std::string(payload);
  }
  // Truncated or altered: never loaded; removed so that the rebuilt entry replaces it.
  std::error_code ec;
  std::filesystem::remove(file, ec);
  return std::nullopt;
}

void cache_store(const std::filesystem::path& dir, const std::string& key, std::string_view payload) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  const std::filesystem::path file = dir / (key + ".dck");
  const std::filesystem::path temp = dir /
                                     (".tmp-" + key + "-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  const std::string digest = sha256_raw(payload);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  auto give_up = [&](int error) {
    if (fd >= 0) ::unlink(temp.c_str());
    warn_once("kernel cache directory " + dir.string() + " cannot be written (" + std::strerror(error) +
              "): kernels are compiled without the cache");
  };
  if (fd < 0) return give_up(errno);
  bool ok = true;
  for (std::string_view part : {kMagic, std::string_view(digest), payload}) {
    while (ok && !part.empty()) {
      const ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        ok = false;
      else
        part.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  const int error = ok ? 0 : (errno != 0 ? errno : ENOSPC);
  if (::close(fd) != 0 && ok) ok = false;
  if (!ok) return give_up(error != 0 ? error : EIO);
  // rename replaces atomically: a reader sees the old entry or the new one, never a torn one,
  // and two processes storing the same key at once both succeed (the last rename wins).
  if (::rename(temp.c_str(), file.c_str()) != 0) give_up(errno);
}

}  // namespace devctx::detail::rt
