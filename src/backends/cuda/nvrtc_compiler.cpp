// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nvrtc_compiler.cpp - NVRTC for runtime-compiled CUDA kernels (runtime/nvrtc.hpp).
// libnvrtc is loaded with dlopen on first use, not linked: libdevctx (and the Python module built
// on it) then loads on machines whose CUDA install has no NVRTC (a driver-only machine that runs
// compiled-in kernels, or one that compiles with nvcc), and there a runtime compile is an
// Error(not_available) saying what to install, instead of the whole library failing to load.
// nvrtc.h gives the types only; every call goes through the pointers loaded here.
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "core/environment.hpp"
#include "core/errors.hpp"
#include "devctx_runtime_config.hpp"
#include "runtime/nvrtc.hpp"

namespace devctx::detail::rt {

namespace {

/// The NVRTC entry points devctx calls, from one loaded libnvrtc.
struct NvrtcApi {
  std::string path;  ///< what was loaded (the file, or the soname the loader found)
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  int major = 0;
  int minor = 0;
};

template <class F>
void load_symbol(void* handle, const char* name, F& out, const std::string& path) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  if (out == nullptr)
    fail(Errc::not_available, "compile_function: ", path, " has no ", name,
         ": it is not a usable NVRTC (CUDA 11.2 or later); name the toolkit's libnvrtc in DEVCTX_NVRTC, or set "
         "DEVCTX_RT_CUDA_COMPILER=nvcc");
}

/// The library to load: DEVCTX_NVRTC, else the toolkit's that devctx was built with while it
/// exists, else the soname through the loader's search path (LD_LIBRARY_PATH, a pip wheel's).
std::string nvrtc_path() {
  if (std::string p = setting_text("DEVCTX_NVRTC"); !p.empty()) return p;
  struct stat st{};
  if (std::string(DEVCTX_RT_NVRTC_LIBRARY).size() > 0 && ::stat(DEVCTX_RT_NVRTC_LIBRARY, &st) == 0)
    return DEVCTX_RT_NVRTC_LIBRARY;
  return DEVCTX_RT_NVRTC_SONAME;
}

/// The NVRTC at nvrtc_path(), loaded once per path (never unloaded: programs may be in flight).
const NvrtcApi& nvrtc() {
  static std::mutex mutex;
  static std::map<std::string, NvrtcApi> loaded;
  const std::string path = nvrtc_path();
  const std::lock_guard lock(mutex);
  if (const auto it = loaded.find(path); it != loaded.end()) return it->second;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    fail(Errc::not_available, "compile_function: NVRTC (", path, ") cannot be loaded (", why != nullptr ? why : "?",
         "): install the CUDA toolkit's NVRTC, ", DEVCTX_RT_NVRTC_SONAME,
         " (Debian/Ubuntu: the toolkit's cuda-nvrtc-<version> package; pip: nvidia-cuda-nvrtc), name its "
         "libnvrtc.so in DEVCTX_NVRTC, or compile with nvcc instead (DEVCTX_RT_CUDA_COMPILER=nvcc)");
  }
  NvrtcApi api;
  api.path = path;
  load_symbol(handle, "nvrtcVersion", api.version, path);
  load_symbol(handle, "nvrtcGetErrorString", api.error_string, path);
  load_symbol(handle, "nvrtcCreateProgram", api.create, path);
  load_symbol(handle, "nvrtcDestroyProgram", api.destroy, path);
  load_symbol(handle, "nvrtcCompileProgram", api.compile, path);
  load_symbol(handle, "nvrtcGetProgramLogSize", api.log_size, path);
  load_symbol(handle, "nvrtcGetProgramLog", api.log, path);
  load_symbol(handle, "nvrtcGetCUBINSize", api.cubin_size, path);
  load_symbol(handle, "nvrtcGetCUBIN", api.cubin, path);
  if (api.version(&api.major, &api.minor) != NVRTC_SUCCESS)
    fail(Errc::not_available, "compile_function: nvrtcVersion of ", path, " failed");
  return loaded.emplace(path, std::move(api)).first->second;
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t end = std::min(list.find(':', at), list.size());
    if (end > at) out.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace

std::string nvrtc_identity() {
  const NvrtcApi& api = nvrtc();
  std::string id = "nvrtc " + std::to_string(api.major) + "." + std::to_string(api.minor) + "\n" + api.path;
  Dl_info info{};
  struct stat st{};
  if (::dladdr(reinterpret_cast<void*>(api.compile), &info) != 0 && info.dli_fname != nullptr &&
      ::stat(info.dli_fname, &st) == 0)
    id += std::string("\n") + info.dli_fname + ' ' + std::to_string(st.st_size) + ' ' +
          std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec);
  id += std::string("\n") + DEVCTX_RT_CUDA_INCLUDE;
  return id;
}

std::vector<std::string> nvrtc_include_options() {
  std::vector<std::string> out;
  for (const auto& dir : split_paths(DEVCTX_RT_CUDA_INCLUDE)) out.push_back("-I" + dir);
  return out;
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& program_name,
                          const std::vector<std::string>& options) {
  const NvrtcApi& api = nvrtc();
  nvrtcProgram program = nullptr;
  if (const nvrtcResult r = api.create(&program, source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    fail(Errc::backend_error, "compile_function: nvrtcCreateProgram failed: ", api.error_string(r));
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram& program;
    ~Destroy() { (void)api.destroy(&program); }
  } destroy{api, program};
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult result = api.compile(program, int(argv.size()), argv.data());
  NvrtcOutput out;
  std::size_t log_size = 0;
  if (api.log_size(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    if (api.log(program, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  if (result == NVRTC_ERROR_COMPILATION || result == NVRTC_ERROR_INVALID_OPTION) {
    if (out.log.empty()) out.log = std::string("nvrtc: ") + api.error_string(result) + '\n';
    return out;
  }
  if (result != NVRTC_SUCCESS)
    fail(result == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE ? Errc::not_available : Errc::backend_error,
         "compile_function: nvrtcCompileProgram (", api.path, ") failed: ", api.error_string(result),
         result == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE
             ? " (NVRTC's libnvrtc-builtins is missing from its directory: reinstall the toolkit's NVRTC)"
             : "",
         out.log.empty() ? "" : "\n", out.log);
  std::size_t size = 0;
  if (const nvrtcResult r = api.cubin_size(program, &size); r != NVRTC_SUCCESS || size == 0)
    fail(Errc::backend_error, "compile_function: nvrtcGetCUBINSize failed: ", api.error_string(r),
         " (was the architecture given as sm_XY?)");
  out.cubin.resize(size);
  if (const nvrtcResult r = api.cubin(program, out.cubin.data()); r != NVRTC_SUCCESS)
    fail(Errc::backend_error, "compile_function: nvrtcGetCUBIN failed: ", api.error_string(r));
  out.ok = true;
  return out;
}

}  // namespace devctx::detail::rt
