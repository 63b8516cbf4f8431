// SPDX-License-Identifier: Apache-2.0
// src/core/thread_name.cpp - names devctx's own threads (thread_name.hpp).
#include "core/thread_name.hpp"

#include <cstdio>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace devctx::detail {

void name_thread(std::thread& thread, const char* prefix, std::size_t index) noexcept {
#if defined(__linux__)
  char name[16];  // Linux keeps 15 characters and the terminating zero
  std::snprintf(name, sizeof name, "%s%zu", prefix, index);
  (void)pthread_setname_np(thread.native_handle(), name);
#else
  (void)thread;
  (void)prefix;
  (void)index;
#endif
}

}  // namespace devctx::detail
