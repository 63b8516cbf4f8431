// SPDX-License-Identifier: Apache-2.0
// src/core/thread_name.hpp - names devctx's own threads ("devctx-worker3", "devctx-copy0") so that
// top -H, gdb, perf and /proc/PID/task/*/comm show what each one is.
#pragma once

#include <cstddef>
#include <thread>

namespace devctx::detail {

/// Names `thread` `prefix` followed by `index`, cut to the 15 characters Linux keeps. Called by
/// the thread that started it, so that the name is there as soon as the thread exists. Does
/// nothing where threads cannot be named; never fails.
void name_thread(std::thread& thread, const char* prefix, std::size_t index) noexcept;

}  // namespace devctx::detail
