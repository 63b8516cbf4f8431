// SPDX-License-Identifier: Apache-2.0
// src/runtime/module.cpp - Module, DeviceFunction and DeviceContext::compile_function: the cache
// key, cache lookup or compile, loading the result (a shared object through dlopen on the CPU, a
// cubin on CUDA) and reading its signature back.
#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>

#include <devctx/context.hpp>
#define DEVCTX_RUNTIME_ENTRY_OK 1
#include <devctx/detail/runtime/entry.hpp>
#include <devctx/module.hpp>

#include "core/errors.hpp"
#include "devctx_runtime_config.hpp"
#include "runtime/cache.hpp"
#include "runtime/cuda_module.hpp"
#include "runtime/fission.hpp"
#include "runtime/runtime_function.hpp"
#include "runtime/toolchain.hpp"

namespace devctx {

namespace {

bool valid_source_name(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          std::string_view("._-+/").find(c) != std::string_view::npos))
      return false;
  return true;
}

}  // namespace

Module::Module(std::string source, std::string name, std::vector<std::string> options)
    : source_(std::move(source)), name_(std::move(name)), options_(std::move(options)) {
  if (source_.empty()) detail::fail(Errc::invalid_argument, "Module: the kernel source is empty");
  if (!valid_source_name(name_))
    detail::fail(Errc::invalid_argument, "Module: the source name \"", name_,
                 "\" may hold only letters, digits and . _ - + / (it names the source in compiler messages)");
}

Module Module::from_file(const std::string& path, std::vector<std::string> options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::fail(Errc::invalid_argument, "Module::from_file: cannot read ", path, ": ", std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string name = std::filesystem::path(path).filename().string();
  if (!valid_source_name(name)) name = "runtime_kernel.cpp";
  return Module(std::move(text), std::move(name), std::move(options));
}

const char* to_string(LoadKind kind) noexcept { return kind == LoadKind::cached ? "cached" : "compiled"; }

const detail::RuntimeFunction& DeviceFunction::impl() const {
  if (impl_ == nullptr)
    detail::throw_invalid_handle("an empty DeviceFunction (default-constructed: use compile_function)");
  return *impl_;
}
const std::string& DeviceFunction::name() const { return impl().name; }
const std::vector<KernelParam>& DeviceFunction::params() const { return impl().params; }
LoadKind DeviceFunction::load_kind() const { return impl().load_kind; }
double DeviceFunction::load_ms() const { return impl().load_ms; }
std::string DeviceFunction::signature() const {
  std::string s = "(";
  for (const auto& p : impl().params) s += (s.size() > 1 ? ", " : "") + p.cpp_type;
  return s + ")";
}

namespace detail {

void parse_signature(const std::string& text, RuntimeFunction& f, const std::string& what) {
  auto bad = [&](const std::string& why) {
    fail(Errc::backend_error, "compile_function(\"", f.name, "\"): the signature in ", what, " is malformed (", why,
         "): the compiled kernel is damaged or from another devctx");
  };
  std::istringstream in(text);
  std::string word;
  unsigned abi = 0;
  int block = 0;
  std::size_t count = 0;
  if (!(in >> word >> abi) || word != "devctx-signature") bad("no header");
  if (abi != rt::kAbiVersion) bad("ABI version " + std::to_string(abi));
  if (!(in >> word >> block) || word != "block") bad("no block line");
  if (!(in >> word >> count) || word != "params" || count > 4096) bad("no parameter count");
  f.block_level = block != 0;
  f.params.clear();
  f.wire_offsets.clear();
  std::size_t at = 0;
  f.wire_align = 1;
  for (std::size_t i = 0; i < count; ++i) {
    char wire = 0;
    unsigned type = 0;
    int read_only = 0;
    std::size_t bytes = 0, wire_size = 0, wire_align = 0;
    std::string name;
    if (!(in >> wire >> type >> read_only >> bytes >> wire_size >> wire_align) || !std::getline(in, name))
      bad("parameter " + std::to_string(i + 1));
    if (wire_align == 0 || (wire_align & (wire_align - 1)) != 0 || wire_align > 256 || wire_size > 4096 ||
        type > static_cast<unsigned>(ScalarType::float64))
      bad("parameter " + std::to_string(i + 1));
    KernelParam p;
    if (wire == 's')
      p.kind = KernelParam::Kind::scalar;
    else if (wire == 'p')
      p.kind = KernelParam::Kind::span;
    else if (wire == 'r')
      p.kind = KernelParam::Kind::pointer;
    else
      bad("parameter " + std::to_string(i + 1) + " of kind " + wire);
    p.type = static_cast<ScalarType>(type);
    p.read_only = read_only != 0;
    p.element_bytes = bytes;
    p.cpp_type = name.empty() ? name : name.substr(1);
    at = rt::align_up(at, wire_align);
    f.wire_offsets.push_back(at);
    at += wire_size;
    f.wire_align = std::max(f.wire_align, wire_align);
    f.params.push_back(std::move(p));
  }
  f.wire_size = rt::align_up(at, f.wire_align);
}

namespace {

/// Puts the library holding devctx in the global symbol scope (it may have been loaded
/// RTLD_LOCAL, as Python loads extension modules), so that kernels' shared objects find the CPU
/// executor's symbols in it.
void expose_devctx_symbols() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&queue_launch), &info) != 0 && info.dli_fname != nullptr)
      if (void* self = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) (void)self;
  });
}

/// Loads a kernel's shared object from its bytes (already checked against their hash): written
/// to a fresh user-only directory, loaded, then removed, so that exactly those bytes are loaded
/// under a name no other load shares (dlopen returns an already loaded object of the same name).
/// Never unloaded.
const rt::CpuEntry* load_shared_object(const std::string& payload, const std::string& name, const char*& fission_off) {
  expose_devctx_symbols();
  std::string dir = (std::filesystem::temp_directory_path() / "devctx-load-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr)
    fail(Errc::backend_error, "compile_function(\"", name, "\"): cannot make a directory under ",
         std::filesystem::temp_directory_path().string(), ": ", std::strerror(errno));
  const std::string path = dir + "/kernel.so";
  bool written = false;
  {
    std::ofstream out(path, std::ios::binary);
    out.write(payload.data(), std::streamsize(payload.size()));
    written = static_cast<bool>(out.flush());
  }
  void* handle = written ? ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  const std::string why = written ? (handle == nullptr ? ::dlerror() : "") : "cannot write " + path;
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
  if (handle == nullptr) {
    if (why.find("undefined symbol") != std::string::npos)
      fail(Errc::not_available, "compile_function(\"", name,
           "\"): the kernel's code cannot reach devctx's CPU executor in this program (", why,
           "): link the program with -rdynamic (CMake: set_target_properties(<target> PROPERTIES ENABLE_EXPORTS ON)) "
           "or use a shared libdevctx (BUILD_SHARED_LIBS=ON)");
    fail(Errc::backend_error, "compile_function(\"", name, "\"): loading the kernel's code failed: ", why);
  }
  using EntryFn = const rt::CpuEntry* (*)();
  auto entry_fn = reinterpret_cast<EntryFn>(::dlsym(handle, "devctx_rt_entry"));
  const rt::CpuEntry* entry = entry_fn != nullptr ? entry_fn() : nullptr;
  if (entry == nullptr || entry->abi != rt::kAbiVersion)
    fail(Errc::backend_error, "compile_function(\"", name, "\"): the kernel's code has no devctx entry of ABI version ",
         rt::kAbiVersion);
  using ReasonFn = const char* (*)();
  auto reason_fn = reinterpret_cast<ReasonFn>(::dlsym(handle, "devctx_rt_fission_off"));
  fission_off = reason_fn != nullptr ? reason_fn() : nullptr;
  return entry;
}

std::string_view intern(const std::string& text) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;
  const std::lock_guard lock(mutex);
  return *names.insert(text).first;
}

std::string cpu_target() {
  utsname u{};
  ::uname(&u);
  return std::string("cpu-") + u.machine;
}

}  // namespace
}  // namespace detail

DeviceFunction DeviceContext::compile_function(const Module& module, std::string_view name) {
  using namespace detail;
  const auto start = std::chrono::steady_clock::now();
  rt::check_kernel_name(name);
  QueueImpl& q = detail::Access::queue(*this);
  DeviceImpl& device = q.device();
  const DeviceInfo& info = device.info();
  const rt::Target target = info.api == Api::cpu ? rt::Target::cpu : rt::Target::cuda;
  const std::string arch = target == rt::Target::cuda ? "sm_" + std::to_string(info.compute_capability_major) +
                                                            std::to_string(info.compute_capability_minor)
                                                      : std::string();

  const bool initial_exec_tls = target == rt::Target::cpu && rt::devctx_in_main_program();
  std::string options;
  for (const auto& o : module.options()) options += o + '\n';
  rt::Hasher key_hash;
  key_hash.add("devctx-runtime-kernel")
      .add(std::to_string(rt::kAbiVersion))
      .add(DEVCTX_RT_VERSION)
      .add(rt::tree_hash(rt::include_directory()))
      .add(rt::compiler_identity(target))
      .add(target == rt::Target::cpu ? cpu_target() + (initial_exec_tls ? "-tls-ie" : "") : "cuda-" + arch)
      .add(target == rt::Target::cpu ? rt::translator_identity() : std::string())
      .add(module.name())
      .add(module.source())
      .add(options)
      .add(name);
  const std::string key = key_hash.hex();

  auto f = std::make_shared<RuntimeFunction>();
  f->name = std::string(name);
  f->device = device.shared_from_this();
  const std::optional<std::filesystem::path> dir = rt::cache_directory();
  std::optional<std::string> payload;
  if (dir) payload = rt::cache_load(*dir, key);
  f->load_kind = payload ? LoadKind::cached : LoadKind::compiled;
  if (!payload) {
    // On the CPU the fission translator's copy of the source, when it runs (never an error).
    std::string user_source = module.source(), fission_off;
    if (target == rt::Target::cpu) {
      rt::Translation t = rt::translate(module, std::filesystem::temp_directory_path());
      fission_off = rt::fission_reason(t, name);
      user_source = std::move(t.source);
    }
    const auto compile = [&](const std::string& text, const std::string& reason) {
      return rt::compile(target, rt::wrapper_source(module, name, target, text, reason), module, name,
                         std::filesystem::temp_directory_path(), arch, initial_exec_tls);
    };
    if (user_source == module.source()) {
      payload = compile(user_source, fission_off);
    } else {
      try {
        payload = compile(user_source, fission_off);
      } catch (const CompileError& e) {
        // The translated copy did not compile: the source as written decides (its own errors,
        // if any, are the user's), and the trace says why the kernel has no twin.
        std::string first = e.log().substr(0, e.log().find('\n'));
        payload = compile(module.source(), concat("the fission translator's copy of this runtime-compiled source did "
                                                  "not compile, so it was compiled as written (",
                                                  first.substr(0, 200), ")"));
      }
    }
    if (dir) rt::cache_store(*dir, key, *payload);
  }
  if (target == rt::Target::cpu) {
    f->cpu = load_shared_object(*payload, f->name, f->fission_off);
    parse_signature(f->cpu->signature, *f, "the kernel's shared object");
    f->launch_name = std::string_view(f->cpu->name, f->cpu->name_size);
  } else {
    const std::string signature = load_cuda_module(*f, device, *payload);
    parse_signature(signature, *f, "the kernel's cubin");
    f->launch_name = intern(f->name);
  }
  f->load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return DeviceFunction(std::move(f));
}

}  // namespace devctx
