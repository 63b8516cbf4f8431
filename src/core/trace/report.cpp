// SPDX-License-Identifier: Apache-2.0
// src/core/trace/report.cpp - the transfer report: from a list of operations (recorded, or read
// back from a trace file by `devctx trace summarize`), the bytes and device time of each kind of
// transfer, the kernels' time, round trips, the share of device time spent moving data, and
// the lesson's advice when transfers dominate. The one home of these rules.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include <devctx/trace.hpp>

#include "core/text.hpp"
#include "core/trace/summary.hpp"

namespace devctx::trace {
namespace {

double device_ms(const Operation& op) {
  if (!op.device_begin_us || !op.device_end_us) return 0;
  return (*op.device_end_us - *op.device_begin_us) / 1000.0;
}

TransferTotals& totals_of(Report& r, const Operation& op) {
  switch (op.direction) {
    case Direction::host_to_device: return op.pageable ? r.host_to_device_pageable : r.host_to_device_pinned;
    case Direction::device_to_host: return op.pageable ? r.device_to_host_pageable : r.device_to_host_pinned;
    case Direction::device_to_device: return r.device_to_device;
    default: return r.host_to_host;
  }
}

// Above this share of device time in transfers, the report says what the lesson says.
constexpr double kTransfersDominate = 0.5;

}  // namespace

std::uint64_t Report::transfer_bytes() const noexcept {
  return host_to_device_pinned.bytes + host_to_device_pageable.bytes + device_to_host_pinned.bytes +
         device_to_host_pageable.bytes + device_to_device.bytes + host_to_host.bytes;
}

double Report::transfer_ms() const noexcept {
  return host_to_device_pinned.device_ms + host_to_device_pageable.device_ms + device_to_host_pinned.device_ms +
         device_to_host_pageable.device_ms + device_to_device.device_ms + host_to_host.device_ms;
}

}  // namespace devctx::trace

namespace devctx::detail::trace {

using devctx::trace::Direction;
using devctx::trace::Kind;
using devctx::trace::Offender;
using devctx::trace::Operation;
using devctx::trace::Report;
using devctx::trace::TransferTotals;

void Summary::add(const Operation& op) {
  ++operations_;
  Report& r = r_;
  const double ms = devctx::trace::device_ms(op);
  if (op.kind == Kind::kernel) {
    ++r.kernels;
    r.kernel_ms += ms;
  } else if (op.kind == Kind::fill) {
    ++r.fills;
    r.fill_bytes += op.bytes;
    r.fill_ms += ms;
  } else if (op.kind == Kind::synchronize) {
    ++r.host_waits;
    r.host_wait_ms += (op.host_end_us - op.host_begin_us) / 1000.0;
  } else if (op.kind == Kind::copy) {
    TransferTotals& t = devctx::trace::totals_of(r, op);
    ++t.count;
    t.bytes += op.bytes;
    t.device_ms += ms;
    if (op.direction == Direction::host_to_device) uploaded_[op.device] = true;
    if (op.direction == Direction::device_to_host && uploaded_[op.device]) {
      ++r.round_trips;
      uploaded_[op.device] = false;
    }
    if (op.direction == Direction::host_to_device || op.direction == Direction::device_to_host) {
      Offender& g = groups_[{op.direction, op.pageable, op.bytes}];
      g.direction = op.direction;
      g.pageable = op.pageable;
      g.bytes_each = op.bytes;
      ++g.count;
      g.device_ms += ms;
    }
  }
}

Report Summary::report() const {
  Report r = r_;
  const double transfer = r.transfer_ms(), busy = transfer + r.kernel_ms + r.fill_ms;
  r.transfer_share = busy > 0 ? transfer / busy : 0;
  for (const auto& [key, g] : groups_) r.largest.push_back(g);
  std::sort(r.largest.begin(), r.largest.end(), [](const Offender& a, const Offender& b) {
    return a.device_ms != b.device_ms ? a.device_ms > b.device_ms : a.bytes_each * a.count > b.bytes_each * b.count;
  });
  if (r.largest.size() > 3) r.largest.resize(3);
  if (r.transfer_share > devctx::trace::kTransfersDominate) {
    r.advice.push_back(detail::concat("transfers take ", int(r.transfer_share * 100 + 0.5),
                                      "% of the device's busy time: keep data on the device between kernels (upload inputs once, "
                                      "chain kernels on DeviceBuffers, download only the results)"));
    if (r.host_to_device_pageable.count + r.device_to_host_pageable.count > 0)
      r.advice.push_back(
          "copies from and to ordinary (pageable) host memory are slower than from a HostBuffer: "
          "use enqueue_create_host_buffer for data you transfer (page-locked on CUDA), or "
          "register_host_memory for memory you already have");
  }
  return r;
}

}  // namespace devctx::detail::trace

namespace devctx::trace {

Report summarize(std::span<const Operation> ops) {
  detail::trace::Summary summary;
  for (const Operation& op : ops) summary.add(op);
  return summary.report();
}

std::string to_string(const Report& r) {
  // Numbers through core/text.hpp (std::to_chars), not printf: the report reads the same under
  // every locale, as `devctx trace summarize` and scripts expect.
  using detail::bytes_text;
  using detail::concat;
  using detail::fixed_text;
  std::string out = "devctx report: where the device time went\n";
  auto line = [&](const char* what, const TransferTotals& t) {
    if (t.count == 0) return;
    std::string rate;
    if (t.device_ms > 0) rate = concat(", ", fixed_text(double(t.bytes) / (t.device_ms * 1e6), 2), " GB/s");
    out += concat("  ", what, ": ", t.count, " copies, ", bytes_text(t.bytes), ", ", fixed_text(t.device_ms, 3), " ms",
                  rate, '\n');
  };
  line("host -> device (HostBuffer, pinned)  ", r.host_to_device_pinned);
  line("host -> device (std::span, pageable) ", r.host_to_device_pageable);
  line("device -> host (HostBuffer, pinned)  ", r.device_to_host_pinned);
  line("device -> host (std::span, pageable) ", r.device_to_host_pageable);
  line("device -> device                     ", r.device_to_device);
  line("host -> host                         ", r.host_to_host);
  out += concat("  kernels: ", r.kernels, " launches, ", fixed_text(r.kernel_ms, 3), " ms\n");
  if (r.fills > 0) out += concat("  fills: ", r.fills, ", ", fixed_text(r.fill_ms, 3), " ms\n");
  if (r.host_waits > 0)
    out += concat("  host waits (synchronize, events): ", r.host_waits, ", ", fixed_text(r.host_wait_ms, 3), " ms\n");
  out += concat("  round trips (uploads then a download): ", r.round_trips, '\n');
  out += concat("  transfers: ", fixed_text(100.0 * r.transfer_share, 1), "% of the device's busy time (",
                fixed_text(r.transfer_ms(), 3), " of ", fixed_text(r.transfer_ms() + r.kernel_ms + r.fill_ms, 3),
                " ms)\n");
  if (!r.largest.empty()) {
    out += "  largest transfers:\n";
    for (const Offender& g : r.largest)
      out += concat("    ", g.count, " x ", bytes_text(g.bytes_each), ' ',
                    g.direction == Direction::host_to_device ? "host -> device" : "device -> host", ", host side ",
                    g.pageable ? "pageable (std::span)" : "a HostBuffer", ": ", fixed_text(g.device_ms, 3), " ms\n");
  }
  for (const std::string& a : r.advice) out += concat("  advice: ", a, '\n');
  return out;
}

}  // namespace devctx::trace
