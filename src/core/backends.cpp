// SPDX-License-Identifier: Apache-2.0
// src/core/backends.cpp - the one list of backends (each folder's descriptor,
// core/backend_descriptor.hpp) and the public look-ups over it (devctx/backend.hpp).
#include <array>
#include <span>
#include <string>
#include <string_view>

#include <devctx/backend.hpp>

#include "core/backend_descriptor.hpp"
#include "core/errors.hpp"

namespace devctx {
namespace detail {
namespace {

// In the order of the Api values. Addresses of constant-initialized objects: this list is
// complete before any dynamic initializer of the program runs.
constinit const std::array<const BackendDescriptor*, 2> kDescriptors = {&cpu_backend_descriptor, &cuda_backend_descriptor};
constinit const std::array<const Backend*, 2> kBackends = {&cpu_backend_descriptor.backend,
                                                           &cuda_backend_descriptor.backend};

/// "cpu, cuda (or gpu)": every backend's name and aliases, for messages.
std::string names_text() {
  std::string text;
  for (const Backend* b : kBackends) {
    if (!text.empty()) text += ", ";
    text += b->name;
    for (std::size_t i = 0; i < b->aliases.size(); ++i) text += concat(i == 0 ? " (or " : ", ", b->aliases[i]);
    if (!b->aliases.empty()) text += ')';
  }
  return text;
}

}  // namespace

const BackendDescriptor& descriptor_of(Api api) {
  for (const BackendDescriptor* d : kDescriptors)
    if (d->backend.api == api) return *d;
  fail(Errc::invalid_argument, "devctx::Api value ", int(api), " names no backend: use one of devctx::backends() (",
       names_text(), ')');
}

void start_backend_tools() {
  for (const BackendDescriptor* d : kDescriptors)
    if (d->start_tools != nullptr) d->start_tools();
}

}  // namespace detail

std::span<const Backend* const> backends() noexcept { return detail::kBackends; }

// A backend's name is its descriptor's (here rather than in text.cpp, which programs built on a
// part of devctx, such as the staging engine's test, compile without the descriptors).
const char* to_string(Api api) noexcept {
  for (const Backend* b : detail::kBackends)
    if (b->api == api) return b->name.data();  // a string literal's view: null-terminated
  return "unknown";
}

const Backend& backend(Api api) { return detail::descriptor_of(api).backend; }

const Backend& backend(std::string_view name) {
  for (const Backend* b : detail::kBackends) {
    if (b->name == name) return *b;
    for (const std::string_view alias : b->aliases)
      if (alias == name) return *b;
  }
  detail::fail(Errc::invalid_argument, "devctx::backend(\"", name, "\"): no backend is called so; the backends are ",
               detail::names_text());
}

}  // namespace devctx
