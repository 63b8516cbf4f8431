// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber_boost.cpp - the fiber switch on any architecture without devctx's own
// assembly (or with -DDEVCTX_FIBER=boost): Boost.Context's fcontext.
//
// fcontext is the layer Boost.Context's own fibers are built on: jump_fcontext saves the running
// context and resumes another, handing the resumed side the context it left together with one
// pointer. devctx's switch stores the context it leaves in a slot it names (*save); with fcontext
// only the resumed side knows that context, so every switch passes a Handoff naming the slot and
// the resumed side fills it in. Compared with devctx's assembly, jump_fcontext also saves and
// restores the floating-point control words (MXCSR and the x87 control word on x86-64);
// devctx_bench_fiber_switch measures the difference in the same run, which is why the switch
// also exists under its own names (boost_fiber::) in builds that use the assembly.
#include <boost/context/detail/fcontext.hpp>

#include <cstdint>
#include <cstdlib>

#include "backends/cpu/fiber_boost.hpp"

namespace devctx::detail::cpu {

namespace {

namespace bc = boost::context::detail;

/// A fiber prepared but not started yet, at the top of its stack. Its FiberSp is the record's
/// address plus one, so that a switch can tell it apart from a started fiber's fcontext (which
/// a switch resumes directly) with one test of the low bit: records are 16-byte aligned.
struct alignas(16) Start {
  bc::fcontext_t context;
  void (*entry)(void*);
  void* arg;
};

/// What a switch hands to the fiber it resumes.
struct Handoff {
  FiberSp* save;       // where the context just left goes; nullptr after a jump (it has finished)
  const Start* start;  // the resumed fiber's start record if it has not started yet
};

void store_left(bc::transfer_t from) {
  const auto* handoff = static_cast<const Handoff*>(from.data);
  if (handoff->save != nullptr) *handoff->save = from.fctx;
}

[[noreturn]] void start(bc::transfer_t from) {
  const Start self = *static_cast<const Handoff*>(from.data)->start;
  store_left(from);
  self.entry(self.arg);
  std::abort();  // a fiber's entry leaves with a jump and never returns
}

bc::transfer_t jump(FiberSp* save, FiberSp load) {
  Handoff handoff{save, nullptr};
  bc::fcontext_t to = load;
  if (const auto bits = reinterpret_cast<std::uintptr_t>(load); (bits & 1) != 0) [[unlikely]] {
    handoff.start = reinterpret_cast<const Start*>(bits - 1);
    to = handoff.start->context;
  }
  return bc::jump_fcontext(to, &handoff);
}

}  // namespace

namespace boost_fiber {

void switch_to(FiberSp* save, FiberSp load) { store_left(jump(save, load)); }

void jump_to(FiberSp load) {
  jump(nullptr, load);
  std::abort();  // nothing resumes a finished fiber
}

void launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg) {
  const auto bytes = std::size_t(static_cast<char*>(stack.top) - static_cast<char*>(stack.bottom));
  const Start self{bc::make_fcontext(stack.top, bytes, &start), entry, arg};
  Handoff handoff{save, &self};
  store_left(bc::jump_fcontext(self.context, &handoff));
}

FiberSp prepare(FiberStack stack, void (*entry)(void*), void* arg) noexcept {
  auto* record = reinterpret_cast<Start*>(static_cast<char*>(stack.top) - sizeof(Start));
  const auto bytes = std::size_t(reinterpret_cast<char*>(record) - static_cast<char*>(stack.bottom));
  *record = {bc::make_fcontext(record, bytes, &start), entry, arg};
  return reinterpret_cast<FiberSp>(reinterpret_cast<std::uintptr_t>(record) + 1);
}

}  // namespace boost_fiber

#if defined(DEVCTX_FIBER_BOOST)
extern "C" void devctx_fiber_switch(FiberSp* save, FiberSp load) { boost_fiber::switch_to(save, load); }
extern "C" void devctx_fiber_jump(FiberSp load) { boost_fiber::jump_to(load); }
void raw_fiber_launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg) {
  boost_fiber::launch(save, stack, entry, arg);
}
FiberSp raw_fiber_prepare(FiberStack stack, void (*entry)(void*), void* arg) noexcept {
  return boost_fiber::prepare(stack, entry, arg);
}
#endif

}  // namespace devctx::detail::cpu
