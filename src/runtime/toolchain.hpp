// SPDX-License-Identifier: Apache-2.0
// src/runtime/toolchain.hpp - the compilers behind runtime-compiled kernels: which ones (recorded
// when devctx was configured), the generated translation unit around the user's source, running
// a compiler as a child process, and turning its log into a CompileError.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <devctx/module.hpp>

namespace devctx::detail::rt {

enum class Target : unsigned char { cpu, cuda };

/// The bytes of `file` (empty when it cannot be read).
[[nodiscard]] std::string file_text(const std::filesystem::path& file);

/// A unique, user-only directory under `root`, removed with its contents by the destructor.
/// Throws Error(backend_error) when it cannot be made.
struct WorkDir {
  std::filesystem::path path;
  explicit WorkDir(const std::filesystem::path& root);
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
};

/// Runs argv[0] (found through PATH when it has no '/') with stdin from /dev/null and stdout and
/// stderr to `log`. Returns the exit status, or -1 with `error` (an errno) set when it could not
/// be started.
int run_tool(const std::vector<std::string>& argv, const std::filesystem::path& log, int& error);

/// The devctx include directory kernels compile against: DEVCTX_INCLUDE_DIR, else the source
/// tree's when devctx runs from its build tree, else the installed one. Throws
/// Error(not_available) when none holds devctx's headers.
[[nodiscard]] std::filesystem::path include_directory();
/// What compiles CUDA kernels: NVRTC in the process (the default) or nvcc as a child process.
enum class CudaCompiler : unsigned char { nvrtc, nvcc };
/// DEVCTX_RT_CUDA_COMPILER: unset or empty -> nvrtc; nvrtc or nvcc (any letter case); anything
/// else throws Error(invalid_argument) naming the variable and the values allowed.
[[nodiscard]] CudaCompiler cuda_compiler();

/// The compiler for `target` (DEVCTX_CXX / DEVCTX_NVCC override the configured ones) and a text
/// that identifies it for cache keys: for the host compiler and nvcc their path, version recorded
/// at configure time, size and mtime; for NVRTC (cuda_compiler()) its version and library
/// (runtime/nvrtc.hpp). Each names the compiler, so entries of nvcc and NVRTC never mix.
[[nodiscard]] std::string compiler_path(Target target);
[[nodiscard]] std::string compiler_identity(Target target);

/// Throws Error(invalid_argument) unless `name` looks like a kernel name with template
/// arguments: letters, digits, _ : < > , space * & ( ) . - + (no ; { } # " ' \ or newline).
void check_kernel_name(std::string_view name);

/// The translation unit compiled for kernel `name` of `module`: on the CPU fission.hpp's
/// kCpuPrelude, then `source` (the module's source, or the fission translator's copy of it;
/// numbered from line 1 as `module.name()`), then the entry devctx needs
/// (devctx/detail/runtime/entry.hpp) and, on the CPU, `devctx_rt_fission_off()` returning
/// `fission_reason` (why the kernel has no translated twin; null when empty).
[[nodiscard]] std::string wrapper_source(const Module& module, std::string_view name, Target target,
                                         const std::string& source, std::string_view fission_reason);

/// Whether devctx is part of the main program (a static libdevctx linked into it): its
/// thread-locals then live in the static TLS block, which kernels' shared objects may reach
/// with the initial-exec model (a direct offset instead of a __tls_get_addr call per function).
[[nodiscard]] bool devctx_in_main_program();

/// Compiles `source` into the bytes of a shared object (CPU) or a cubin for `arch` (CUDA, sm_XY):
/// a child process in a fresh directory under `work_root`, removed afterwards, or for CUDA with
/// NVRTC (cuda_compiler()) in memory, as program `module.name()`. `initial_exec_tls`: the CPU
/// shared object reaches devctx's thread-locals with the initial-exec model. Throws
/// CompileError when the compiler fails, Error(not_available) when it cannot be run or loaded.
[[nodiscard]] std::string compile(Target target, const std::string& source, const Module& module, std::string_view name,
                                  const std::filesystem::path& work_root, const std::string& arch, bool initial_exec_tls);

}  // namespace devctx::detail::rt
