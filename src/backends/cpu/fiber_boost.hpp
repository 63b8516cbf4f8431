// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber_boost.hpp - the Boost.Context fiber switch under its own names, so that
// devctx_bench_fiber_switch can run it next to the assembly in one program. In builds configured
// with it (DEVCTX_FIBER_BOOST), fiber_boost.cpp also provides the raw interface of
// fiber_switch.hpp through these.
#pragma once

#include "backends/cpu/fiber_switch.hpp"

namespace devctx::detail::cpu::boost_fiber {

void switch_to(FiberSp* save, FiberSp load);
[[noreturn]] void jump_to(FiberSp load);
void launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg);
[[nodiscard]] FiberSp prepare(FiberStack stack, void (*entry)(void*), void* arg) noexcept;

}  // namespace devctx::detail::cpu::boost_fiber
