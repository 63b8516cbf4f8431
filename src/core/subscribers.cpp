// SPDX-License-Identifier: Apache-2.0
// src/core/subscribers.cpp - the process's flag word of pipeline subscribers and its tools
// (subscribers.hpp).
#include "core/subscribers.hpp"

#include <array>
#include <mutex>

#include "core/errors.hpp"

namespace devctx::detail {
namespace {

constexpr unsigned kMaxTools = 8;
std::mutex tools_mutex;  // held while a tool is added
std::array<std::atomic<OperationTool*>, kMaxTools> tools{};
std::atomic<unsigned> tool_count{0};

}  // namespace

constinit std::atomic<unsigned> pipeline_observers{0};

void add_tool(OperationTool& tool) {
  const std::lock_guard lock(tools_mutex);
  const unsigned n = tool_count.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < n; ++i)
    if (tools[i].load(std::memory_order_relaxed) == &tool) return;
  if (n == kMaxTools) fail(Errc::backend_error, "add_tool: more than ", kMaxTools, " pipeline tools registered");
  tools[n].store(&tool, std::memory_order_relaxed);
  tool_count.store(n + 1, std::memory_order_release);  // the tool is in place before it counts
  pipeline_observers.fetch_or(kToolsRegistered, std::memory_order_relaxed);
}

ToolScope::ToolScope(const QueueImpl& queue, const Operation& op) noexcept : queue_(queue), op_(op) {
  const unsigned n = tool_count.load(std::memory_order_acquire);
  for (unsigned i = 0; i < n; ++i)
    if (tools[i].load(std::memory_order_relaxed)->begin(queue_, op_)) began_ |= 1u << i;
}

ToolScope::~ToolScope() {
  // In the reverse order, so that tools' nested ranges close as they opened.
  for (unsigned i = kMaxTools; i-- > 0;)
    if ((began_ & (1u << i)) != 0) tools[i].load(std::memory_order_relaxed)->end(queue_, op_);
}

}  // namespace devctx::detail
