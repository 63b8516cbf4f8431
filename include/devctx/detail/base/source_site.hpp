// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/source_site.hpp - where in the kernel's source a call was made (file, line,
// column), filled in at the caller as a default argument. devctx's own type rather than
// std::source_location: clang 14 with libstdc++ 12 (Debian 12's clang) has no
// std::source_location at all (it needs __builtin_source_location, clang 15+), and a library
// built with one compiler must link with kernels built by another, so the type in the signature
// must not depend on which one is used. Users never include this.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/source_site.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#include <cstdint>
#include <version>
#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

namespace devctx::detail {

/// A call site. `file` is a string literal (static storage); `column` is 0 where the compiler
/// cannot tell (GCC before 14 without std::source_location).
struct SourceSite {
  const char* file = "";
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  /// The caller's site when used as a default argument (nested default arguments included).
#if defined(__cpp_lib_source_location)
  static constexpr SourceSite current(std::source_location s = std::source_location::current()) noexcept {
    return {s.file_name(), static_cast<std::uint32_t>(s.line()), static_cast<std::uint32_t>(s.column())};
  }
#else
#if defined(__has_builtin)
#if __has_builtin(__builtin_COLUMN)
#define DEVCTX_DETAIL_SITE_COLUMN __builtin_COLUMN()
#endif
#endif
#if !defined(DEVCTX_DETAIL_SITE_COLUMN)
#define DEVCTX_DETAIL_SITE_COLUMN 0
#endif
  static constexpr SourceSite current(const char* file = __builtin_FILE(), std::uint32_t line = __builtin_LINE(),
                                      std::uint32_t column = DEVCTX_DETAIL_SITE_COLUMN) noexcept {
    return {file, line, column};
  }
#undef DEVCTX_DETAIL_SITE_COLUMN
#endif
};

}  // namespace devctx::detail
