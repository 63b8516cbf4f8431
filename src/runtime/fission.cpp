// SPDX-License-Identifier: Apache-2.0
// src/runtime/fission.cpp - the fission translator on a runtime-compiled CPU source (fission.hpp).
#include "runtime/fission.hpp"

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/environment.hpp"
#include "core/errors.hpp"
#include "devctx_runtime_config.hpp"
#include "runtime/cache.hpp"
#include "runtime/toolchain.hpp"

namespace devctx::detail::rt {

namespace {

/// The translator to run, or why none runs.
struct Translator {
  std::string python, tool, resource_dir, libclang;
  std::string off;  ///< why it does not run; empty when it does
};

bool exists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::exists(path, ec);
}

Translator find_translator() {
  Translator t;
  if (!env_flag("DEVCTX_RT_FISSION", true)) {
    t.off = "DEVCTX_RT_FISSION=0 turned the translator off for runtime-compiled sources";
    return t;
  }
  const std::string python = setting_text("DEVCTX_FISSION_PYTHON");
  t.python = python.empty() ? std::string(DEVCTX_RT_FISSION_PYTHON) : python;
  const std::string resource = setting_text("DEVCTX_FISSION_RESOURCE_DIR");
  t.resource_dir = resource.empty() ? std::string(DEVCTX_RT_FISSION_RESOURCE_DIR) : resource;
  // libclang's version as the configure step found it, for the Python it found.
  t.libclang = python.empty() || python == DEVCTX_RT_FISSION_PYTHON ? DEVCTX_RT_FISSION_LIBCLANG : "";
  if (exists(DEVCTX_RT_FISSION_TOOL_SOURCE))
    t.tool = DEVCTX_RT_FISSION_TOOL_SOURCE;
  else if (exists(DEVCTX_RT_FISSION_TOOL_INSTALL))
    t.tool = DEVCTX_RT_FISSION_TOOL_INSTALL;
  if (t.python.empty())
    t.off = concat("the translator was off when devctx was built (", DEVCTX_RT_FISSION_OFF_REASON,
                   "); DEVCTX_FISSION_PYTHON and DEVCTX_FISSION_RESOURCE_DIR name one");
  else if (t.resource_dir.empty())
    t.off = "no clang builtin headers are known (set DEVCTX_FISSION_RESOURCE_DIR to a clang's -print-resource-dir)";
  else if (t.tool.empty())
    t.off = concat("the translator's script is neither at ", DEVCTX_RT_FISSION_TOOL_SOURCE, " nor at ",
                   DEVCTX_RT_FISSION_TOOL_INSTALL);
  return t;
}

std::string stat_text(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return "absent";
  return std::to_string(st.st_size) + ' ' + std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec);
}

/// The SHA-256 of the script, once per process and path.
std::string tool_hash(const std::string& tool) {
  static std::mutex mutex;
  static std::string path, hash;
  const std::lock_guard lock(mutex);
  if (tool != path) {
    Hasher h;
    hash = h.add(file_text(tool)).hex();
    path = tool;
  }
  return hash;
}

/// `text` with every `"from"` (quoted) replaced by `"to"`.
std::string replace_quoted(std::string text, const std::string& from, const std::string& to) {
  const std::string a = '"' + from + '"', b = '"' + to + '"';
  for (std::size_t at = text.find(a); at != std::string::npos; at = text.find(a, at + b.size()))
    text.replace(at, a.size(), b);
  return text;
}

/// The part of a kernel name the translator's summary uses: "ns::reduce<float>" -> "reduce".
std::string_view base_name(std::string_view name) {
  name = name.substr(0, name.find('<'));
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  if (const std::size_t colon = name.rfind("::"); colon != std::string_view::npos) name.remove_prefix(colon + 2);
  return name;
}

}  // namespace

std::string translator_identity() {
  const Translator t = find_translator();
  if (!t.off.empty()) return "fission off: " + t.off;
  return concat("fission ", tool_hash(t.tool), '\n', t.python, ' ', stat_text(t.python), '\n', "libclang ", t.libclang,
                '\n', t.resource_dir);
}

Translation translate(const Module& module, const std::filesystem::path& work_root) {
  Translation result;
  result.source = module.source();
  const Translator t = find_translator();
  if (!t.off.empty()) {
    result.not_run = t.off;
    return result;
  }
  try {
    const WorkDir work(work_root);
    const std::filesystem::path input = work.path / "source.cpp";
    const std::filesystem::path output = work.path / "translated.cpp";
    const std::filesystem::path prelude = work.path / "prelude.hpp";
    const std::filesystem::path summary = work.path / "summary.txt";
    const std::filesystem::path log = work.path / "log.txt";
    {
      std::ofstream f(input, std::ios::binary);
      f << module.source();
      std::ofstream p(prelude, std::ios::binary);
      p << kCpuPrelude;
      if (!f.flush() || !p.flush()) {
        result.not_run = concat("the translator's input could not be written under ", work_root.string());
        return result;
      }
    }
    std::vector<std::string> argv{t.python,         t.tool,          "--input",   input.string(),
                                  "--output",       output.string(), "--summary", summary.string(),
                                  "--resource-dir", t.resource_dir,  "--",        "-I" + include_directory().string(),
                                  "-include",       prelude.string()};
    for (const auto& o : module.options()) argv.push_back(o);
    int error = 0;
    const int status = run_tool(argv, log, error);
    std::string translated = file_text(output);
    if (status != 0 || translated.empty()) {
      std::string why = status < 0 ? concat(t.python, " cannot be run (", std::strerror(error), ")")
                                   : concat("the translator (", t.python, ' ', t.tool, ") stopped with status ", status);
      std::string first = file_text(log);
      first = first.substr(0, first.find('\n'));
      if (!first.empty()) why += ": " + first.substr(0, 300);
      result.not_run = why;
      return result;
    }
    std::istringstream lines(file_text(summary));
    for (std::string line; std::getline(lines, line);) {
      Translation::Line l;
      const std::size_t a = line.find('\t');
      const std::size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
      if (b == std::string::npos) continue;
      l.state = line.substr(0, a);
      l.kernel = line.substr(a + 1, b - a - 1);
      l.why = line.substr(b + 1);
      result.summary.push_back(std::move(l));
    }
    // The translated copy names the file it read in its #line directives: the module's name instead.
    result.source = replace_quoted(std::move(translated), input.string(), module.name());
  } catch (const std::exception& e) {  // a work directory that cannot be made: compile as written
    result.source = module.source();
    result.summary.clear();
    result.not_run = concat("the translator could not run: ", e.what());
  }
  return result;
}

std::string fission_reason(const Translation& t, std::string_view name) {
  if (!t.not_run.empty())
    return concat("the fission translator did not run on this runtime-compiled source (", t.not_run, ")");
  const std::string_view base = base_name(name);
  std::string error;
  for (const auto& l : t.summary) {
    if (l.kernel == base && (l.state == "translated" || l.state == "map" || l.state == "hand")) return {};
  }
  for (const auto& l : t.summary) {
    if (l.kernel == base && l.state == "fibers") return concat("the fission translator left it on fibers: ", l.why);
    if (l.state == "error" && error.empty()) error = l.why;
  }
  if (!error.empty()) return concat("the fission translator could not process this runtime-compiled source: ", error);
  return "the fission translator found no barrier kernel of this name in the runtime-compiled source (a kernel "
         "defined in a header it includes is not translated)";
}

}  // namespace devctx::detail::rt
