// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nvtx_ranges.cpp - NVTX ranges of the CUDA backend (nvtx_ranges.hpp).
#include "backends/cuda/nvtx_ranges.hpp"

#include <nvtx3/nvToolsExt.h>

#include <atomic>

#include "core/environment.hpp"

namespace devctx::detail::cuda {
namespace {

std::atomic<bool> on{false};

nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("devctx");
  return handle;
}

}  // namespace

bool nvtx_enabled() {
  static const bool enabled = [] {
    const bool flag = env_flag("DEVCTX_NVTX", false);
    on.store(flag, std::memory_order_relaxed);
    return flag;
  }();
  return enabled;
}

bool NvtxRange::nvtx_on() noexcept { return on.load(std::memory_order_relaxed); }

bool NvtxRange::push_text(const std::string& text) noexcept {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = text.c_str();  // NVTX copies the text
  return nvtxDomainRangePushEx(domain(), &attributes) >= 0;
}

void NvtxRange::pop() noexcept { nvtxDomainRangePop(domain()); }

}  // namespace devctx::detail::cuda
