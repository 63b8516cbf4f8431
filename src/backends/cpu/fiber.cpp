#include "backends/cpu/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

#include "core/errors.hpp"

#if !defined(__x86_64__)
#error "devctx's CPU backend switches fibers with x86-64 assembly; add a switch for this architecture in src/backends/cpu/fiber.cpp"
#endif

// System V x86-64: rbx, rbp, r12-r15 are callee-saved; the return address is on the stack.
asm(R"(
  .text
  .globl devctx_fiber_switch
  .type devctx_fiber_switch, @function
devctx_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size devctx_fiber_switch, .-devctx_fiber_switch

  .globl devctx_fiber_start
  .type devctx_fiber_start, @function
devctx_fiber_start:
  movq %r13, %rdi
  callq *%r12
  ud2
  .size devctx_fiber_start, .-devctx_fiber_start
)");

extern "C" void devctx_fiber_start();

namespace devctx::detail::cpu {

FiberSp fiber_prepare(void* top, void (*entry)(void*), void* arg) noexcept {
  // Frame popped by devctx_fiber_switch: r15 r14 r13 r12 rbx rbp, then the return address.
  // devctx_fiber_start must begin with a 16-byte aligned stack (the ABI's rule before a call).
  auto aligned = reinterpret_cast<std::uintptr_t>(top) & ~std::uintptr_t{15};
  auto* frame = reinterpret_cast<void**>(aligned - 16 - 7 * sizeof(void*));
  frame[0] = nullptr;                                         // r15
  frame[1] = nullptr;                                         // r14
  frame[2] = arg;                                             // r13
  frame[3] = reinterpret_cast<void*>(entry);                  // r12
  frame[4] = nullptr;                                         // rbx
  frame[5] = nullptr;                                         // rbp
  frame[6] = reinterpret_cast<void*>(&devctx_fiber_start);    // return address
  return frame;
}

StackPool::StackPool(std::size_t stack_bytes) : page_(std::size_t(sysconf(_SC_PAGESIZE))) {
  stack_bytes_ = (stack_bytes + page_ - 1) / page_ * page_;
}

StackPool::~StackPool() {
  for (void* region : regions_) munmap(region, stack_bytes_ + page_);
}

void* StackPool::grow(std::size_t i) {
  const std::size_t page = page_;
  while (regions_.size() <= i) {
    void* region = mmap(nullptr, stack_bytes_ + page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED)
      fail(Errc::out_of_memory, "CPU backend: cannot map a ", bytes_text(stack_bytes_),
           " stack for GPU thread ", regions_.size(), " of a cooperative block");
    mprotect(region, page, PROT_NONE);  // overflowing a fiber's stack faults instead of corrupting
    const std::size_t n = regions_.size();
    const std::size_t stagger = (n % 64) * 64;
    regions_.push_back(region);
    tops_.push_back(static_cast<char*>(region) + page + stack_bytes_ - stagger);
  }
  return tops_[i];
}

}  // namespace devctx::detail::cpu
