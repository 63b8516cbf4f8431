// SPDX-License-Identifier: Apache-2.0
// src/runtime/toolchain.cpp - the compilers behind runtime-compiled kernels (toolchain.hpp).
#include "runtime/toolchain.hpp"

#include "core/environment.hpp"

#include <fcntl.h>
#include <link.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/errors.hpp"
#include "devctx_runtime_config.hpp"
#include "runtime/fission.hpp"
#include "runtime/nvrtc.hpp"

extern char** environ;  // NOLINT: POSIX

namespace devctx::detail::rt {

namespace {

constexpr const char* kEntryFile = "devctx-runtime-entry";

bool has_headers(const std::filesystem::path& dir) {
  std::error_code ec;
  return !dir.empty() && std::filesystem::exists(dir / "devctx" / "detail" / "runtime" / "entry.hpp", ec);
}

/// Where a compiler message points into the user's source: the line, or 0.
std::size_t user_line(std::string_view line, std::string_view source_name) {
  if (!line.starts_with(source_name) || line.size() <= source_name.size()) return 0;
  std::size_t at = source_name.size();
  if (line[at] != ':' && line[at] != '(') return 0;
  ++at;
  std::size_t n = 0;
  bool digits = false;
  while (at < line.size() && line[at] >= '0' && line[at] <= '9') {
    n = n * 10 + std::size_t(line[at++] - '0');
    digits = true;
  }
  return digits ? n : 0;
}

/// The first errors of `log` with the user's lines around each, numbered as in the source.
std::string excerpt(const std::string& log, const Module& module, std::string_view name) {
  std::vector<std::string> source_lines;
  {
    std::istringstream in(module.source());
    for (std::string l; std::getline(in, l);) source_lines.push_back(l);
  }
  std::ostringstream out;
  std::istringstream in(log);
  int shown = 0;
  std::vector<std::string> elsewhere;  // errors in devctx's entry or headers
  for (std::string line; std::getline(in, line) && shown < 3;) {
    if (line.find("error") == std::string::npos) continue;
    const std::size_t n = user_line(line, module.name());
    if (n == 0) {
      if (elsewhere.size() < 2 && line.find(": note:") == std::string::npos) elsewhere.push_back(line);
      continue;
    }
    ++shown;
    out << line << '\n';
    const std::size_t first = n > 2 ? n - 2 : 1;
    for (std::size_t i = first; i <= n + 2 && i <= source_lines.size(); ++i)
      out << (i == n ? " >" : "  ") << std::string(5 - std::min<std::size_t>(5, std::to_string(i).size()), ' ') << i
          << " | " << source_lines[i - 1] << '\n';
  }
  if (shown == 0 && !elsewhere.empty()) {
    out << "the kernel `" << name << "` could not be instantiated: is it a DEVCTX_KERNEL function of " << module.name()
        << ", with the template arguments it needs, whose parameters are spans, pointers or "
        << "trivially copyable values?\n";
    for (const auto& line : elsewhere) out << line << '\n';
  }
  return out.str();
}

}  // namespace

std::string file_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

WorkDir::WorkDir(const std::filesystem::path& root) {
  std::string pattern = (root / "build-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    fail(Errc::backend_error, "compile_function: cannot make a directory to compile in under ", root.string(), ": ",
         std::strerror(errno));
  path = pattern;
}
WorkDir::~WorkDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

int run_tool(const std::vector<std::string>& argv, const std::filesystem::path& log, int& error) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      error = errno;
      return -1;
    }
  if (WIFEXITED(status)) {
    // posix_spawnp reports a missing program as exit status 127 on some C libraries.
    if (WEXITSTATUS(status) == 127 && file_text(log).empty()) {
      error = ENOENT;
      return -1;
    }
    return WEXITSTATUS(status);
  }
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::filesystem::path include_directory() {
  if (const std::string d = setting_text("DEVCTX_INCLUDE_DIR"); !d.empty()) {
    if (!has_headers(d))
      fail(Errc::not_available, "compile_function: DEVCTX_INCLUDE_DIR=", d, " holds no devctx headers");
    return d;
  }
  if (has_headers(DEVCTX_RT_SOURCE_INCLUDE)) return DEVCTX_RT_SOURCE_INCLUDE;
  if (has_headers(DEVCTX_RT_INSTALL_INCLUDE)) return DEVCTX_RT_INSTALL_INCLUDE;
  fail(Errc::not_available, "compile_function: devctx's headers are neither in ", DEVCTX_RT_SOURCE_INCLUDE, " nor in ",
       DEVCTX_RT_INSTALL_INCLUDE, ": install devctx, or set DEVCTX_INCLUDE_DIR to its include directory");
}

std::string compiler_path(Target target) {
  if (target == Target::cpu) {
    if (const std::string c = setting_text("DEVCTX_CXX"); !c.empty()) return c;
    return DEVCTX_RT_CXX;
  }
  if (const std::string c = setting_text("DEVCTX_NVCC"); !c.empty()) return c;
  return DEVCTX_RT_NVCC;
}

CudaCompiler cuda_compiler() {
  std::string v = setting_text("DEVCTX_RT_CUDA_COMPILER");
  for (char& c : v) c = (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
  if (v.empty() || v == "nvrtc") return CudaCompiler::nvrtc;
  if (v == "nvcc") return CudaCompiler::nvcc;
  fail(Errc::invalid_argument, "DEVCTX_RT_CUDA_COMPILER=", setting_text("DEVCTX_RT_CUDA_COMPILER"),
       " is not a compiler of runtime-compiled CUDA kernels: use nvrtc (the default) or nvcc");
}

std::string compiler_identity(Target target) {
  if (target == Target::cuda && cuda_compiler() == CudaCompiler::nvrtc) return nvrtc_identity();
  const std::string path = compiler_path(target);
  std::string id = path + '\n' + (target == Target::cpu ? DEVCTX_RT_CXX_VERSION : DEVCTX_RT_NVCC_VERSION);
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0)
    id += '\n' + std::to_string(st.st_size) + ' ' + std::to_string(st.st_mtim.tv_sec) + '.' +
          std::to_string(st.st_mtim.tv_nsec);
  return id;
}

void check_kernel_name(std::string_view name) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_:<>, *&().-+").find(c) != std::string_view::npos;
  };
  bool ok = !name.empty() && name.size() < 1024;
  for (const char c : name) ok = ok && allowed(c);
  if (!ok || name.find("::") == 0 || name.front() == ' ')
    fail(Errc::invalid_argument, "compile_function: \"", name,
         "\" is not a kernel name: give the function's name, with its template arguments for a template "
         "(\"saxpy<float>\"), using letters, digits and _ : < > , * & ( ) . - + only");
}

std::string wrapper_source(const Module& module, std::string_view name, Target target, const std::string& source,
                           std::string_view fission_reason) {
  std::string s;
  s.reserve(source.size() + 2048);
  s += "// generated by devctx (src/runtime/toolchain.cpp) for kernel ";
  s += name;
  s += '\n';
  if (target == Target::cpu) s += kCpuPrelude;
  s += "#line 1 \"";
  s += module.name();
  s += "\"\n";
  s += source;
  s += "\n#line 1 \"";
  s += kEntryFile;
  s += "\"\n#define DEVCTX_RUNTIME_ENTRY_OK 1\n#include <devctx/detail/runtime/entry.hpp>\n";
  // Appended, not "&" + name: GCC 12 at -O3 warns (-Wrestrict) on operator+(const char*, string&&).
  std::string k = "&";
  k.append(name);
  if (target == Target::cpu) {
    s += "extern \"C\" __attribute__((visibility(\"default\"))) const devctx::detail::rt::CpuEntry* devctx_rt_entry() {\n";
    s += "  return devctx::detail::rt::CpuEntryOf<" + k + ">::get();\n}\n";
    // Why the kernel has no translated twin (the trace's execution path names it), else null.
    s += "extern \"C\" __attribute__((visibility(\"default\"))) const char* devctx_rt_fission_off() {\n  return ";
    if (fission_reason.empty()) {
      s += "nullptr";
    } else {
      s += '"';
      for (const char c : fission_reason) {
        if (c == '"' || c == '\\') s += '\\';
        s += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
      }
      s += '"';
    }
    s += ";\n}\n";
  } else {
    s += "extern \"C\" __global__ void devctx_rt_kernel(devctx::detail::rt::CudaEntryOf<" + k + ">::Wire wire) {\n";
    s += "  devctx::detail::rt::CudaEntryOf<" + k + ">::Entry::run(wire);\n}\n";
    s += "extern \"C\" __device__ const devctx::detail::rt::CudaEntryOf<" + k + ">::Text devctx_rt_signature =\n";
    s += "    devctx::detail::rt::CudaEntryOf<" + k + ">::Entry::Signature::text;\n";
  }
  return s;
}

bool devctx_in_main_program() {
  static const bool in_main = [] {
    struct Probe {
      std::uintptr_t address;
      bool found;
    } probe{reinterpret_cast<std::uintptr_t>(&devctx_in_main_program), false};
    // The first object dl_iterate_phdr reports is the main program.
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) -> int {
          auto* p = static_cast<Probe*>(data);
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
            if (ph.p_type == PT_LOAD && p->address >= begin && p->address < begin + ph.p_memsz) p->found = true;
          }
          return 1;  // stop after the main program
        },
        &probe);
    return probe.found;
  }();
  return in_main;
}

namespace {

/// The CompileError of a failed compile by `what` ("the host compiler", ...) with its log.
[[noreturn]] void compile_failed(const Module& module, std::string_view name, const char* what, const std::string& log,
                                 std::string_view hint = {}) {
  std::string message = concat("compile_function(\"", name, "\") of ", module.name(), ": ", what, " failed:\n",
                               excerpt(log, module, name), hint, "--- compiler log ---\n");
  message += log.size() > 20000 ? log.substr(0, 20000) + "\n[log truncated]\n" : log;
  throw CompileError(message, log);
}

/// -O0 .. -O3, -Os, -Oz, -Ofast: the host compiler's (and nvcc's host code's) optimisation levels,
/// which NVRTC does not take; it optimises device code fully by default, as nvcc does.
bool host_optimization_level(std::string_view o) {
  return o == "-O" || o == "-Ofast" ||
         (o.size() == 3 && o.starts_with("-O") && std::string_view("0123sz").find(o[2]) != std::string_view::npos);
}

/// A CUDA kernel through NVRTC, in memory: the program is named after the module, so that lines
/// before the wrapper's first #line (none of the user's) are named like the user's.
std::string compile_nvrtc(const std::string& source, const Module& module, std::string_view name, const std::string& arch) {
  std::vector<std::string> options{"-std=c++20", "-arch=" + arch, "-default-device", "-w",
                                   "-I" + include_directory().string()};
  for (auto& o : nvrtc_include_options()) options.push_back(std::move(o));
  for (const auto& o : module.options())
    if (!host_optimization_level(o)) options.push_back(o);
  NvrtcOutput out = nvrtc_compile(source, module.name(), options);
  if (!out.ok)
    compile_failed(module, name, "NVRTC", out.log,
                   out.log.find("cannot open source file") != std::string::npos
                       ? "NVRTC compiles device code alone and has no host C++ standard library: devctx's kernel "
                         "headers give std::size_t, the fixed-width integers, <type_traits>, <utility>, <limits> and "
                         "<optional> names; include <cuda/std/...> headers for more, or compile with nvcc "
                         "(DEVCTX_RT_CUDA_COMPILER=nvcc) (docs/runtime-kernels.md)\n"
                       : "");
  return std::move(out.cubin);
}

}  // namespace

std::string compile(Target target, const std::string& source, const Module& module, std::string_view name,
                    const std::filesystem::path& work_root, const std::string& arch, bool initial_exec_tls) {
  if (target == Target::cuda && cuda_compiler() == CudaCompiler::nvrtc)
    return compile_nvrtc(source, module, name, arch);
  const WorkDir work(work_root);
  const std::filesystem::path src = work.path / (target == Target::cpu ? "kernel.cpp" : "kernel.cu");
  const std::filesystem::path out = work.path / (target == Target::cpu ? "kernel.so" : "kernel.cubin");
  const std::filesystem::path log = work.path / "log.txt";
  {
    std::ofstream f(src, std::ios::binary);
    f << source;
    if (!f.flush())
      fail(Errc::backend_error, "compile_function: cannot write ", src.string(), " (is ", work_root.string(), " full?)");
  }
  const std::string compiler = compiler_path(target);
  std::vector<std::string> argv{compiler, "-std=c++20"};
  if (target == Target::cpu) {
    for (const char* o : {"-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-fvisibility-inlines-hidden",
                          "-fstack-clash-protection", "-w"})
      argv.emplace_back(o);
    if (initial_exec_tls) argv.emplace_back("-ftls-model=initial-exec");
  } else {
    for (const char* o : {"-cubin", "-O3", "--expt-relaxed-constexpr", "-w"}) argv.emplace_back(o);
    argv.push_back("-arch=" + arch);
  }
  argv.push_back("-I" + include_directory().string());
  for (const auto& o : module.options()) argv.push_back(o);
  argv.insert(argv.end(), {"-o", out.string(), src.string()});

  int error = 0;
  const int status = run_tool(argv, log, error);
  const char* what = target == Target::cpu ? "host compiler" : "CUDA compiler (nvcc)";
  if (status < 0)
    fail(Errc::not_available, "compile_function(\"", name, "\"): the ", what, " ", compiler, " cannot be run (",
         std::strerror(error), "): ",
         target == Target::cpu ? "install the compiler devctx was built with (Debian: apt install g++) or name one in "
                                 "DEVCTX_CXX"
                               : "install the CUDA toolkit's nvcc (the one devctx was built with) or name it in "
                                 "DEVCTX_NVCC");
  const std::string text = file_text(log);
  if (status != 0)
    compile_failed(module, name, target == Target::cpu ? "the host compiler" : "the CUDA compiler (nvcc)", text);
  std::string binary = file_text(out);
  if (binary.empty())
    fail(Errc::backend_error, "compile_function(\"", name, "\"): the ", what, " reported success but wrote no ",
         out.filename().string());
  return binary;
}

}  // namespace devctx::detail::rt
