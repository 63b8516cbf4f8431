// SPDX-License-Identifier: Apache-2.0
// devctx/trace.hpp - seeing where the time goes: a record of every devctx operation (allocations,
// frees, copies, fills, kernel launches, waits, synchronizes) with its host enqueue time and its
// device execution time, written as a Chrome trace-event file (ui.perfetto.dev, chrome://tracing)
// and summarised as a transfer report (docs/observability.md).
//
//   DEVCTX_TRACE_FILE=out.json ./app     records from the first DeviceContext on, streamed into
//                                        the file as it goes (bounded memory), complete at exit
//   DEVCTX_REPORT=1 ./app                records, prints the report to stderr at exit
//   devctx::trace::start(); ...; devctx::trace::write("out.json");   the same from code
//
// Recording is process-wide (every context, stream and device). While it is off, each operation
// pays one predictable branch; while it is on, each device operation records two events of its
// stream around itself (docs/observability.md gives the measured costs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <devctx/launch.hpp>

namespace devctx::trace {

/// What an operation was.
enum class Kind : unsigned char {
  allocate,      ///< enqueue_create_buffer / enqueue_create_host_buffer
  free,          ///< a buffer's memory released in stream order (its last handle went, or a
                 ///< released buffer's `free` was called), on the stream that allocated it
  copy,          ///< enqueue_copy (and the buffers' copy verbs)
  fill,          ///< enqueue_memset / enqueue_fill
  kernel,        ///< enqueue_function
  wait,          ///< enqueue_wait_for: the stream waits for an event
  record_event,  ///< record_event
  synchronize,   ///< the host waits: for a stream, a context, a device (synchronize_device), an
                 ///< event (Event::synchronize, elapsed_ms); on the track of the stream it waits for
  host_task,     ///< enqueue_host_task: a host function in the stream's order (also a stream's wait
                 ///< for another backend's event)
};
/// How many kinds there are (the values of Kind are 0 to kind_count - 1).
inline constexpr unsigned kind_count = unsigned(Kind::host_task) + 1;

/// Which way a copy moved its bytes (the kinds of memory of its two sides as devctx sees them:
/// DeviceBuffer memory is "device" on every backend, HostBuffer and std::span memory "host").
enum class Direction : unsigned char { none, host_to_device, device_to_host, device_to_device, host_to_host };

/// "copy", "kernel", ...; "host_to_device", ...: the spellings the trace file uses.
[[nodiscard]] const char* to_string(Kind kind) noexcept;
[[nodiscard]] const char* to_string(Direction direction) noexcept;
/// The kind whose to_string is `text` (reading a trace file back); nullopt when none is.
[[nodiscard]] std::optional<Kind> kind_from_string(std::string_view text) noexcept;

/// One recorded operation. Times are microseconds on one clock (the host's steady clock, from
/// when recording started); device times are placed on it through a reference event of each
/// device, and are absent for operations that have no device time (allocations, frees, event
/// records, synchronizes) or whose work had not finished when the record was read.
struct Operation {
  std::uint64_t id = 0;  ///< enqueue order, from 1, over the whole process
  Kind kind = Kind::copy;
  std::string name;     ///< the trace's event name: "copy HtoD", "memset", the kernel's source name, ...
  std::string device;   ///< "cuda:0 (NVIDIA H200)", as messages name devices
  int stream = 0;       ///< the stream's track on its device, from 1 in order of first use
  int host_thread = 0;  ///< the host thread that enqueued it, from 1 in order of first use
  Direction direction = Direction::none;  ///< copies only
  bool pageable = false;                  ///< copies: the host side is ordinary (pageable) memory, not a HostBuffer
  bool staged = false;                    ///< copies: went through the CUDA staging engine (pinned chunks)
  bool host_memory = false;               ///< allocations and frees: a HostBuffer's memory
  std::uint64_t bytes = 0;                ///< bytes copied, filled, allocated or freed
  Dim3 grid_dim{0, 0, 0}, block_dim{0, 0, 0};  ///< kernels only
  std::uint64_t shared_bytes = 0;              ///< kernels only
  /// Kernels on the CPU backend, once they ran: how ("translated: ...", "plain loop: ...",
  /// "cooperative fibers ...; fibers: <why not translated>"), as DEVCTX_TRACE=1 prints it.
  std::string execution;
  double host_begin_us = 0, host_end_us = 0;             ///< the enqueue call on the host (for synchronize: the wait)
  std::optional<double> device_begin_us, device_end_us;  ///< when the device ran it
};

/// Starts recording (again). Records already taken are kept; clear() drops them. Never blocks.
void start();
/// Stops recording. What was recorded is kept for operations(), write() and report().
void stop() noexcept;
/// Whether operations are being recorded now.
[[nodiscard]] bool recording() noexcept;
/// Drops every record (and the events they hold). Recording continues if it was on. Under
/// DEVCTX_TRACE_FILE the records not yet written go to the file first (the file keeps every
/// operation, and its ids go on), and the running report starts again.
void clear() noexcept;

/// The records so far, in enqueue order. Device times are filled in for the operations whose
/// work has finished; this never waits for work (synchronize first to have them all). Under
/// DEVCTX_TRACE_FILE or DEVCTX_REPORT, records are dropped once written to the file and counted
/// in the report: this returns those not yet written (report() still counts them all).
[[nodiscard]] std::vector<Operation> operations();

/// The Chrome trace-event JSON of `ops`: one track ("process") for the host with a track per
/// host thread (each operation's enqueue call, and the host's waits), one per device with a
/// track per stream (each operation's device execution, and the device memory in use), and an
/// arrow from each enqueue to its execution. Every event carries its operation's fields in args.
[[nodiscard]] std::string to_json(std::span<const Operation> ops);
/// Writes to_json(operations()) to `path`. Throws Error(invalid_argument) naming the path when
/// the file cannot be written. Numbers in the JSON (and in the report's text) are written the
/// same under every locale the program may set.
void write(const std::string& path);

/// Totals of one kind of transfer.
struct TransferTotals {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  double device_ms = 0;  ///< summed device time of those copies that have one
};

/// A group of same-looking copies (direction, host memory, size) that took much device time.
struct Offender {
  Direction direction = Direction::none;
  bool pageable = false;
  std::uint64_t bytes_each = 0;
  std::uint64_t count = 0;
  double device_ms = 0;
};

/// Where the time went, from a list of operations (summarize) or what is recorded (report).
struct Report {
  TransferTotals host_to_device_pinned, host_to_device_pageable;
  TransferTotals device_to_host_pinned, device_to_host_pageable;
  TransferTotals device_to_device, host_to_host;
  std::uint64_t kernels = 0;
  double kernel_ms = 0;  ///< summed device time of kernels
  std::uint64_t fills = 0;
  std::uint64_t fill_bytes = 0;
  double fill_ms = 0;
  /// Host waits (Kind::synchronize: a stream's, a context's or a device's synchronize,
  /// Event::synchronize, elapsed_ms) and the host time they took, summed.
  std::uint64_t host_waits = 0;
  double host_wait_ms = 0;
  /// Uploads followed by a download of the same device: each download that comes after at
  /// least one upload since the previous download counts one round trip.
  std::uint64_t round_trips = 0;
  /// Device time in copies over device time in copies, fills and kernels (0 when none).
  double transfer_share = 0;
  std::vector<Offender> largest;    ///< up to 3 copy groups, most device time first
  std::vector<std::string> advice;  ///< the lesson's advice that applies, if any

  [[nodiscard]] std::uint64_t transfer_bytes() const noexcept;
  [[nodiscard]] double transfer_ms() const noexcept;
};

/// The report of `ops` (all devices).
[[nodiscard]] Report summarize(std::span<const Operation> ops);
/// The report of everything recorded: summarize(operations()), plus, under DEVCTX_TRACE_FILE or
/// DEVCTX_REPORT, the records already written and dropped.
[[nodiscard]] Report report();
/// The report as text, as DEVCTX_REPORT=1 prints it.
[[nodiscard]] std::string to_string(const Report& report);

}  // namespace devctx::trace
