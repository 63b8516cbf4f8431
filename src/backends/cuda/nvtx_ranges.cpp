// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nvtx_ranges.cpp - NVTX ranges of the CUDA backend (nvtx_ranges.hpp): the
// range helpers and the pipeline's NVTX tool.
#include "backends/cuda/nvtx_ranges.hpp"

#include <nvtx3/nvToolsExt.h>

#include <atomic>

#include "backends/cuda/cuda_backend.hpp"
#include "core/environment.hpp"
#include "core/subscribers.hpp"

namespace devctx::detail {
namespace cuda {
namespace {

std::atomic<bool> on{false};

nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("devctx");
  return handle;
}

/// Each operation of every queue in a range named text_of(op).
class NvtxTool final : public OperationTool {
 public:
  bool begin(const QueueImpl& /*queue*/, const Operation& op) noexcept override {
    try {
      return nvtx_push(text_of(op));
    } catch (...) {
      return false;  // no memory for the name: no range
    }
  }
  void end(const QueueImpl& /*queue*/, const Operation& /*op*/) noexcept override { nvtx_pop(); }
};

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

bool nvtx_push(const std::string& text) noexcept {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = text.c_str();  // NVTX copies the text
  return nvtxDomainRangePushEx(domain(), &attributes) >= 0;
}

void nvtx_pop() noexcept { nvtxDomainRangePop(domain()); }

}  // namespace cuda

void start_cuda_tools() {
  if (!cuda::nvtx_enabled()) return;
  static cuda::NvtxTool tool;
  add_tool(tool);  // once registered, again does nothing
}

}  // namespace devctx::detail
