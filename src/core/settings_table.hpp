// SPDX-License-Identifier: Apache-2.0
// src/core/settings_table.hpp - the one table of every DEVCTX_* environment variable that devctx
// reads: the library (its readers are environment.hpp's env_flag / env_size and
// device_from_environment), the build's fission translator, the test programs and the CI scripts.
// Each row gives the name, the type, the default, the allowed values and the meaning, written as
// README's and docs/errors.md's lists write them. `devctx info --settings` prints the table with
// the values set now. tests/tools/check_settings.py (ctest settings.table) fails when a variable
// read in src/, include/, tools/, python/, tests/ or scripts/ is missing here, when a row names a
// variable nothing reads, or when README (every row) or docs/errors.md (the library's rows) does
// not list one.
//
// Adding a variable: read it through env_flag/env_size (one rule per type, errors name it), add
// its row here (same order: library first, by area), and list it in README's table (and for the
// library's variables in docs/errors.md, invalid_argument). docs/internals.md, "A new environment
// variable", says the same.
#pragma once

#include <array>
#include <string_view>

namespace devctx::detail {

/// How a value is read (the rule is environment.hpp's; `text` is taken as it is).
enum class SettingType : unsigned char { flag, count, bytes, device, text };

/// Who reads the variable.
enum class SettingReader : unsigned char {
  library,     ///< libdevctx, every program using it (errors: Error(invalid_argument))
  translator,  ///< the fission translator, while a project builds (tools/fission)
  tests,       ///< devctx's own test programs and pytest suite
  scripts,     ///< scripts/test.sh and the scripts it runs
};

struct Setting {
  std::string_view name;
  SettingType type;
  SettingReader reader;
  std::string_view fallback;  ///< the value when unset or empty
  std::string_view range;     ///< the values allowed ("" where any text goes)
  std::string_view meaning;
};

[[nodiscard]] constexpr std::string_view to_string(SettingType type) noexcept {
  switch (type) {
    case SettingType::flag: return "flag";
    case SettingType::count: return "count";
    case SettingType::bytes: return "bytes";
    case SettingType::device: return "device";
    case SettingType::text: return "text";
  }
  return "?";
}

[[nodiscard]] constexpr std::string_view to_string(SettingReader reader) noexcept {
  switch (reader) {
    case SettingReader::library: return "library";
    case SettingReader::translator: return "translator";
    case SettingReader::tests: return "tests";
    case SettingReader::scripts: return "scripts";
  }
  return "?";
}

// One row per line, in this exact shape: tests/tools/check_settings.py reads the rows from this
// file. Flags take 1, true, yes, on / 0, false, no, off (any case).
inline constexpr std::array kSettings = {
    // clang-format off
    Setting{"DEVCTX_DEVICE", SettingType::device, SettingReader::library, "the first CUDA GPU, else cpu", "cpu, cpu:N, cuda, cuda:N, gpu", "the device a default DeviceContext (and the devctx tool) opens"},
    Setting{"DEVCTX_CHECK", SettingType::flag, SettingReader::library, "0", "", "checking mode on the CPU backend for every context (docs/checking.md)"},
    Setting{"DEVCTX_TRACE", SettingType::flag, SettingReader::library, "0", "", "print, for every CPU launch, which execution path it took and why"},
    Setting{"DEVCTX_TRACE_FILE", SettingType::text, SettingReader::library, "unset: no trace file", "a writable path", "write a trace of every operation to this file at exit (docs/observability.md)"},
    Setting{"DEVCTX_REPORT", SettingType::flag, SettingReader::library, "0", "", "print a report of where the time went at exit (docs/observability.md)"},
    Setting{"DEVCTX_NVTX", SettingType::flag, SettingReader::library, "0", "", "NVTX ranges named in devctx's words around every queue operation (builds with CUDA)"},
    Setting{"DEVCTX_CPU_THREADS", SettingType::count, SettingReader::library, "all cores", "1 .. 1024", "worker threads of the CPU device"},
    Setting{"DEVCTX_CPU_STACK_BYTES", SettingType::bytes, SettingReader::library, "64 KiB", "16 KiB .. 64 MiB", "the stack of each GPU thread of a thread-level kernel on the CPU"},
    Setting{"DEVCTX_CPU_SPIN_US", SettingType::count, SettingReader::library, "50", "0 .. 10000", "microseconds a CPU worker out of work spins before it sleeps"},
    Setting{"DEVCTX_CPU_DEVICES", SettingType::count, SettingReader::library, "1", "1 .. 64", "CPU devices the CPU is split into (docs/scale-out.md)"},
    Setting{"DEVCTX_CPU_FISSION", SettingType::flag, SettingReader::library, "1", "", "run the fission translator's block-level twins of barrier kernels (0: fibers)"},
    Setting{"DEVCTX_COMM_TIMEOUT_S", SettingType::count, SettingReader::library, "300", "1 .. 86400", "seconds a collective of CPU devices waits for the other ranks"},
    Setting{"DEVCTX_NCCL_DEFER", SettingType::flag, SettingReader::library, "0", "", "a communicator of one GPU takes the path of several (docs/scale-out.md)"},
    Setting{"DEVCTX_CUDA_HOST_POOL", SettingType::flag, SettingReader::library, "1", "", "HostBuffers from a stream-ordered page-locked pool, where the driver has one"},
    Setting{"DEVCTX_CUDA_STAGING", SettingType::flag, SettingReader::library, "1", "", "copies between pageable host memory and a GPU go through staging"},
    Setting{"DEVCTX_CUDA_STAGING_THRESHOLD", SettingType::bytes, SettingReader::library, "8 MiB", "0 .. 4 EiB", "the smallest pageable copy that goes through staging"},
    Setting{"DEVCTX_CUDA_STAGING_CHUNK_BYTES", SettingType::bytes, SettingReader::library, "8 MiB", "64 KiB .. 1 GiB", "one chunk of page-locked staging memory"},
    Setting{"DEVCTX_CUDA_STAGING_BYTES", SettingType::bytes, SettingReader::library, "64 MiB", "128 KiB .. 16 GiB, at least two chunks", "the page-locked staging memory of one GPU"},
    Setting{"DEVCTX_CUDA_COPY_THREADS", SettingType::count, SettingReader::library, "3/4 of the hardware threads, at most 12", "0 .. 256", "host threads of one GPU that copy between pageable and staging memory"},
    Setting{"DEVCTX_CUDA_COPY_SPIN_US", SettingType::count, SettingReader::library, "500", "0 .. 100000", "microseconds a copy thread waits actively for a staged copy's next chunk"},
    Setting{"DEVCTX_FISSION_VERBOSE", SettingType::text, SettingReader::translator, "unset", "any non-empty value", "the translator prints, per file, which kernels it translated and why not"},
    Setting{"DEVCTX_FISSION_DEBUG", SettingType::text, SettingReader::translator, "unset", "any non-empty value", "the translator prints the Python traceback of its own failures"},
    Setting{"DEVCTX_CACHE", SettingType::flag, SettingReader::library, "1", "", "the on-disk cache of runtime-compiled kernels (0: compile every time; docs/runtime-kernels.md)"},
    Setting{"DEVCTX_CACHE_DIR", SettingType::text, SettingReader::library, "$XDG_CACHE_HOME/devctx/kernels, else ~/.cache/devctx/kernels", "a directory path", "where runtime-compiled kernels are cached (created user-only)"},
    Setting{"DEVCTX_CXX", SettingType::text, SettingReader::library, "the compiler devctx was built with", "a compiler command", "the host compiler of runtime-compiled CPU kernels"},
    Setting{"DEVCTX_NVCC", SettingType::text, SettingReader::library, "the nvcc devctx was built with, else nvcc", "a compiler command", "the nvcc of runtime-compiled CUDA kernels (DEVCTX_RT_CUDA_COMPILER=nvcc)"},
    Setting{"DEVCTX_RT_CUDA_COMPILER", SettingType::text, SettingReader::library, "nvrtc", "nvrtc, nvcc", "what compiles runtime-compiled CUDA kernels: NVRTC in the process, or nvcc as a child process"},
    Setting{"DEVCTX_NVRTC", SettingType::text, SettingReader::library, "the toolkit's libnvrtc devctx was built with, else libnvrtc.so.<major>", "a libnvrtc.so path", "the NVRTC library runtime-compiled CUDA kernels are compiled with (loaded with dlopen)"},
    Setting{"DEVCTX_INCLUDE_DIR", SettingType::text, SettingReader::library, "devctx's installed headers (the Python package: its own)", "a directory holding devctx/", "the devctx headers runtime-compiled kernels are built against"},
    Setting{"DEVCTX_RT_FISSION", SettingType::flag, SettingReader::library, "1", "", "run the fission translator on runtime-compiled CPU sources, when devctx has one (0: compile them as written)"},
    Setting{"DEVCTX_FISSION_PYTHON", SettingType::text, SettingReader::library, "the Python the build's translator used", "a Python with libclang's bindings", "the Python that runs the fission translator on runtime-compiled CPU sources"},
    Setting{"DEVCTX_FISSION_RESOURCE_DIR", SettingType::text, SettingReader::library, "the one the build's translator used", "a clang -print-resource-dir", "clang's builtin headers for the fission translator on runtime-compiled CPU sources"},
    Setting{"DEVCTX_TEST_BACKENDS", SettingType::text, SettingReader::tests, "every backend built", "a comma list of cpu, cuda", "the backends the behavioural tests run on"},
    Setting{"DEVCTX_TEST_SEED", SettingType::text, SettingReader::tests, "random, printed", "an integer (0x... too)", "replays a test run's random inputs"},
    Setting{"DEVCTX_REQUIRE_GPU", SettingType::flag, SettingReader::tests, "0", "", "a missing GPU fails the GPU tests instead of skipping them"},
    Setting{"DEVCTX_TEST_PRINT_ERRORS", SettingType::flag, SettingReader::tests, "0", "", "the tests print every devctx::Error they provoke (docs/errors.md quotes them)"},
    Setting{"DEVCTX_REQUIRE_JSONSCHEMA", SettingType::flag, SettingReader::tests, "0", "", "the tool tests fail instead of skipping the schema check without python3-jsonschema"},
    Setting{"DEVCTX_TOOL_EMULATOR", SettingType::text, SettingReader::tests, "unset", "a command line", "the emulator the tool tests run a cross-built devctx tool under (qemu-aarch64)"},
    Setting{"DEVCTX_RT_CHILD_TOKEN", SettingType::text, SettingReader::tests, "unset", "set by the test itself", "the runtime-kernel test's child process: which kernel it compiles"},
    Setting{"DEVCTX_RT_CHILD_API", SettingType::text, SettingReader::tests, "unset", "cpu, cuda (set by the test itself)", "the runtime-kernel test's child process: its backend"},
    Setting{"DEVCTX_NVTX_RECORD", SettingType::text, SettingReader::tests, "unset", "a writable path", "where the NVTX test recorder writes the ranges it saw"},
    Setting{"DEVCTX_FUZZ_SECONDS", SettingType::count, SettingReader::scripts, "60", "seconds", "how long scripts/test.sh runs the libFuzzer harness"},
    Setting{"DEVCTX_PIP_ARGS", SettingType::text, SettingReader::scripts, "unset", "pip arguments", "extra arguments of scripts/python-test.sh's pip install"},
    Setting{"DEVCTX_PYTHON_SDIST", SettingType::flag, SettingReader::scripts, "1", "", "scripts/python-test.sh also builds the sdist, checks it, builds a wheel from it and runs a kernel from that wheel"},
    Setting{"DEVCTX_PYTHON", SettingType::text, SettingReader::scripts, "/usr/bin/python3", "a Python 3 interpreter", "the Python scripts/python-test.sh makes its virtual environment with"},
    Setting{"DEVCTX_FISSION_VENV", SettingType::text, SettingReader::scripts, "~/.cache/devctx/fission-venv", "a directory", "where scripts/setup.sh installs the fission translator's Python packages"},
    Setting{"DEVCTX_FISSION_WHEEL", SettingType::text, SettingReader::scripts, "unset: from PyPI", "a .whl file", "scripts/setup.sh installs the translator's parser from this file"},
    Setting{"DEVCTX_FORMAT_VENV", SettingType::text, SettingReader::scripts, "~/.cache/devctx/format-venv", "a directory", "where scripts/setup.sh installs clang-format for scripts/format.sh"},
    Setting{"DEVCTX_CLANG_FORMAT", SettingType::text, SettingReader::scripts, "the format venv's clang-format", "a clang-format 19.1.7 binary", "the formatter scripts/format.sh runs"},
    Setting{"DEVCTX_CUDA_ARCH", SettingType::text, SettingReader::scripts, "90", "a CUDA architecture number", "the GPU architecture the GPU check script (gpu-check.sh) builds for"},
    Setting{"DEVCTX_DLPACK_INCLUDE_DIR", SettingType::text, SettingReader::scripts, "found by itself", "a directory holding dlpack/dlpack.h", "the DLPack header the GPU check script builds the interop tests with"},
    // clang-format on
};

/// The row of `name`, or nullptr.
[[nodiscard]] constexpr const Setting* find_setting(std::string_view name) noexcept {
  for (const auto& setting : kSettings)
    if (setting.name == name) return &setting;
  return nullptr;
}

}  // namespace devctx::detail
