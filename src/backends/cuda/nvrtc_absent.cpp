// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nvrtc_absent.cpp - NVRTC (runtime/nvrtc.hpp) in a build without the CUDA
// backend, where no CUDA device exists to compile for.
#include "core/errors.hpp"
#include "runtime/nvrtc.hpp"

namespace devctx::detail::rt {

namespace {
[[noreturn]] void absent() {
  fail(Errc::not_available, "compile_function: this devctx was built without CUDA, so it has no NVRTC");
}
}  // namespace

std::string nvrtc_identity() { absent(); }
std::vector<std::string> nvrtc_include_options() { absent(); }
NvrtcOutput nvrtc_compile(const std::string&, const std::string&, const std::vector<std::string>&) { absent(); }

}  // namespace devctx::detail::rt
