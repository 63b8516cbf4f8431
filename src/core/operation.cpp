// SPDX-License-Identifier: Apache-2.0
// src/core/operation.cpp - the one naming of operations (operation.hpp): what traces, NVTX
// ranges, messages and the tools call each operation, and which trace kind it is.
#include "core/operation.hpp"

#include <string>
#include <type_traits>
#include <variant>

#include "core/text.hpp"

namespace devctx::detail {
namespace {

using devctx::trace::Direction;
using devctx::trace::Kind;

bool is_host(MemKind k) noexcept { return k != MemKind::device; }

Direction copy_direction(MemKind dst, MemKind src) noexcept {
  if (is_host(src)) return is_host(dst) ? Direction::host_to_host : Direction::host_to_device;
  return is_host(dst) ? Direction::device_to_host : Direction::device_to_device;
}

// Overloads of one name, so that a new operation struct without its cases does not compile.
Kind kind(const op::Allocate&) noexcept { return Kind::allocate; }
Kind kind(const op::Free&) noexcept { return Kind::free; }
Kind kind(const op::Copy&) noexcept { return Kind::copy; }
Kind kind(const op::PeerCopy&) noexcept { return Kind::copy; }
Kind kind(const op::Fill&) noexcept { return Kind::fill; }
Kind kind(const op::Launch&) noexcept { return Kind::kernel; }
Kind kind(const op::RecordEvent&) noexcept { return Kind::record_event; }
Kind kind(const op::Wait&) noexcept { return Kind::wait; }
Kind kind(const op::HostTask&) noexcept { return Kind::host_task; }
Kind kind(const op::Synchronize&) noexcept { return Kind::synchronize; }

std::string name(const op::Allocate& o) { return o.kind == MemKind::device ? "create_buffer" : "create_host_buffer"; }
std::string name(const op::Free&) { return "free"; }
std::string name(const op::Copy& o) {
  switch (copy_direction(o.dst_kind, o.src_kind)) {
    case Direction::host_to_device: return "copy HtoD";
    case Direction::device_to_host: return "copy DtoH";
    case Direction::device_to_device: return "copy DtoD";
    default: return "copy HtoH";
  }
}
std::string name(const op::PeerCopy&) { return "copy DtoD"; }
std::string name(const op::Fill&) { return "memset"; }
std::string name(const op::Launch& o) { return o.launch != nullptr ? std::string(o.launch->name) : "kernel"; }
std::string name(const op::RecordEvent&) { return "record_event"; }
std::string name(const op::Wait&) { return "wait_for"; }
std::string name(const op::HostTask&) { return "host_task"; }
std::string name(const op::Synchronize& o) { return o.name != nullptr ? o.name : "synchronize"; }

}  // namespace

std::string name_of(const Operation& op) {
  return std::visit([](const auto& o) { return name(o); }, op);
}

std::string text_of(const Operation& op) {
  return std::visit(
      [](const auto& o) {
        using Op = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<Op, op::Allocate> || std::is_same_v<Op, op::Free> ||
                      std::is_same_v<Op, op::Copy> || std::is_same_v<Op, op::PeerCopy> || std::is_same_v<Op, op::Fill>) {
          bool pageable = false;
          if constexpr (std::is_same_v<Op, op::Copy>)
            pageable = o.dst_kind == MemKind::host_pageable || o.src_kind == MemKind::host_pageable;
          return concat(name(o), pageable ? " pageable " : " ", bytes_text(o.bytes));
        } else {
          return name(o);
        }
      },
      op);
}

devctx::trace::Kind kind_of(const Operation& op) noexcept {
  return std::visit([](const auto& o) noexcept { return kind(o); }, op);
}

devctx::trace::Direction direction_of(const Operation& op) noexcept {
  if (const auto* c = std::get_if<op::Copy>(&op)) return copy_direction(c->dst_kind, c->src_kind);
  if (std::holds_alternative<op::PeerCopy>(op)) return Direction::device_to_device;
  return Direction::none;
}

}  // namespace devctx::detail
