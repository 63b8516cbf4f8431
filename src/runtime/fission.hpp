// SPDX-License-Identifier: Apache-2.0
// src/runtime/fission.hpp - the fission translator (tools/fission/devctx_fission.py, run as a
// command-line tool) on a runtime-compiled CPU source: which translator (recorded at configure
// time, overridden by DEVCTX_FISSION_PYTHON / DEVCTX_FISSION_RESOURCE_DIR, off with
// DEVCTX_RT_FISSION=0), its identity for cache keys, and the translated source with, per
// kernel, why it stays on fibers. Never fails a compile: any failure keeps the source as written.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <devctx/module.hpp>

namespace devctx::detail::rt {

/// What the translation unit of a runtime-compiled CPU kernel includes before the user's source:
/// the kernel headers and the block-level twins' runtime (devctx/detail/device/fission.hpp),
/// which a source that includes only <devctx/kernel.hpp> would otherwise lack.
inline constexpr std::string_view kCpuPrelude = "#include <devctx/kernel.hpp>\n#include <devctx/detail/device/fission.hpp>\n";

/// The translator runtime compiles use now, as a text for cache keys: the script's SHA-256, the
/// Python (path, size, mtime), libclang's version and the builtin headers; or why it is off.
/// Cheap after the first call (the script is hashed once per process).
[[nodiscard]] std::string translator_identity();

/// The result of translating a module's source.
struct Translation {
  /// The user's source to compile: the translated copy (its #line directives name the module),
  /// or the source as written.
  std::string source;
  /// Per kernel: "translated", "map" (a barrier-free map kernel's twin), "fibers", "hand" or
  /// "error" (the whole file), the kernel's name
  /// and why (tools/fission's summary lines). Empty when the translator did not run.
  struct Line {
    std::string state, kernel, why;
  };
  std::vector<Line> summary;
  /// Why the translator did not run or produced nothing, else empty.
  std::string not_run;
};

/// Runs the translator on `module`'s source in a fresh directory under `work_root` (removed
/// afterwards), with devctx's include directory, kCpuPrelude and the module's options. Never
/// throws for a failure of the translator: the source as written comes back with the reason.
[[nodiscard]] Translation translate(const Module& module, const std::filesystem::path& work_root);

/// Why kernel `name` ("ns::reduce<float>") of a translated module will not run a block-level
/// twin, in words the trace prints after "not translated: "; empty when it has one.
[[nodiscard]] std::string fission_reason(const Translation& t, std::string_view name);

}  // namespace devctx::detail::rt
