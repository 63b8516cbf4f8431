// SPDX-License-Identifier: Apache-2.0
// src/core/thread_name.cpp - names devctx's own threads (thread_name.hpp).
#include "core/thread_name.hpp"

#include <algorithm>
#include <string>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace devctx::detail {

void name_thread(std::thread& thread, const char* prefix, std::size_t index) noexcept {
#if defined(__linux__)
  try {
    std::string name = prefix + std::to_string(index);
    name.resize(std::min<std::size_t>(name.size(), 15));  // Linux keeps 15 characters
    (void)pthread_setname_np(thread.native_handle(), name.c_str());
  } catch (...) {
    // no memory for a name: the thread stays unnamed
  }
#else
  (void)thread;
  (void)prefix;
  (void)index;
#endif
}

}  // namespace devctx::detail
