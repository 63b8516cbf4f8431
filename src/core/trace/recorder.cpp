// SPDX-License-Identifier: Apache-2.0
// src/core/trace/recorder.cpp - the trace recorder: the process's list of recorded operations,
// the tracks they belong to (a device's streams, the host's threads), and how device times are
// read: each device operation is bracketed by two events of its queue, and each device has one
// reference event whose host time is known, so that the events' elapsed times place the work
// on the host's clock (CUDA events on a GPU, the workers' clock on the CPU backend). Under
// DEVCTX_TRACE_FILE and DEVCTX_REPORT each record is consumed once its device times are read:
// written to the file (streamed, a chunk at a time) and counted in a running report, then
// dropped, so that the recorder's memory stays bounded however long the program runs.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <devctx/trace.hpp>

#include "core/backend.hpp"
#include "core/environment.hpp"
#include "core/errors.hpp"
#include "core/operation.hpp"
#include "core/trace/chrome_json.hpp"
#include "core/trace/hooks.hpp"
#include "core/trace/summary.hpp"

namespace devctx::detail::trace {

/// One recorded operation, with the events that time it on the device until they are read.
/// Outside the anonymous namespace: OpScope::Pending (declared in the header) holds one.
struct Entry {
  devctx::trace::Operation op;
  std::size_t track = 0;
  std::shared_ptr<EventImpl> begin, end;  // until the device times are read
  std::shared_ptr<ExecutionNote> note;    // kernels: how the backend ran it, once it has
};

namespace {

using Clock = std::chrono::steady_clock;
using devctx::trace::Direction;
using devctx::trace::Operation;

struct DeviceTrack {
  const DeviceImpl* device = nullptr;
  std::weak_ptr<DeviceImpl> alive;  // tells a new device at a reused address from this one
  std::string label;
  bool base_done = false;           // the reference event was made (base) or could not be (no base)
  std::shared_ptr<EventImpl> base;  // reached at host time base_us
  double base_us = 0;
  std::vector<std::weak_ptr<QueueImpl>> queues;  // stream n is queues[n - 1]
};

// Device times are read once this many records wait for theirs (and again once as many more do).
constexpr std::size_t kResolveBatch = 1024;
// While records are consumed (DEVCTX_TRACE_FILE, DEVCTX_REPORT), at most this many wait in
// memory: beyond it the oldest is consumed with its host times only (counted, and said at exit)
// rather than waiting for the device, which an enqueue call must never do.
constexpr std::size_t kMaxPending = 16384;
// The file is written in chunks of about this size.
constexpr std::size_t kChunkBytes = std::size_t{1} << 18;
// The exit status of a process whose DEVCTX_TRACE_FILE could not be written (sysexits.h EX_IOERR).
constexpr int kTraceWriteFailedStatus = 74;

/// DEVCTX_TRACE_FILE, open from the first context on: the trace is streamed into it.
struct Sink {
  std::string path;
  int fd = -1;
  ChromeJson json;             // under the state lock
  std::string buffer;          // under the state lock: events not yet written
  std::uint64_t buffered = 0;  // under the state lock: the operations in `buffer`
  std::mutex file_mutex;       // taken under the state lock, held alone while a chunk is written
  // Under file_mutex:
  std::uint64_t written = 0;      // operations written
  std::uint64_t not_written = 0;  // operations lost to a failed write
  // Set once, by the first failed write (an errno value).
  std::atomic<int> error{0};
};

// Leaked on purpose: operations may be recorded from destructors of static objects.
struct State {
  std::mutex mutex;
  std::mutex base_mutex;  // held while a device's reference event is made (ensure_base)
  // Read without the lock by every record, set by start() and clear(): atomic.
  std::atomic<Clock::rep> epoch{Clock::now().time_since_epoch().count()};
  std::vector<DeviceTrack> tracks;
  std::deque<Entry> entries;     // in id order, consecutive ids
  std::uint64_t generation = 0;  // bumped by clear(): records read before it are stale
  std::size_t unresolved = 0;
  std::size_t resolve_at = kResolveBatch;
  std::uint64_t next_id = 1;
  std::string exit_file;     // DEVCTX_TRACE_FILE
  bool exit_report = false;  // DEVCTX_REPORT
  // DEVCTX_TRACE_FILE or DEVCTX_REPORT: records are consumed (below) once their device times are
  // read, and dropped.
  bool consume = false;
  std::unique_ptr<Sink> sink;  // DEVCTX_TRACE_FILE
  Summary consumed;            // the report of every consumed record
  std::map<std::string, Summary> consumed_by_device;
  std::uint64_t without_device_time = 0;  // records consumed before their device work finished
};

State& state() {
  static State* s = new State;
  return *s;
}

std::atomic<int> next_thread{1};
constinit thread_local int this_thread = 0;
constinit thread_local bool staged_note = false;
/// The note of the kernel whose enqueue this thread is recording (kernel_note), else null.
constinit thread_local std::shared_ptr<ExecutionNote>* current_note = nullptr;

/// The entry's operation with what its backend noted of how it ran (a kernel, once it ran).
void take_note(Entry& e) noexcept {
  if (!e.note) return;
  try {
    const std::lock_guard lock(e.note->mutex);
    if (!e.note->text.empty()) e.op.execution = e.note->text;
  } catch (...) {
    // Out of memory: the record goes without it.
  }
}

int host_thread() noexcept {
  if (this_thread == 0) this_thread = next_thread.fetch_add(1, std::memory_order_relaxed);
  return this_thread;
}

double now_us(const State& s) {
  const Clock::time_point epoch{Clock::duration{s.epoch.load(std::memory_order_relaxed)}};
  return std::chrono::duration<double, std::micro>(Clock::now() - epoch).count();
}

/// The track of `device`, added if new. Under the lock.
std::size_t track_of(State& s, DeviceImpl& device) {
  for (std::size_t i = 0; i < s.tracks.size(); ++i)
    if (s.tracks[i].device == &device && !s.tracks[i].alive.expired()) return i;
  DeviceTrack t;
  t.device = &device;
  t.alive = device.weak_from_this();
  t.label = device.label();
  s.tracks.push_back(std::move(t));
  return s.tracks.size() - 1;
}

/// The stream number of `queue` on its track. Under the lock.
int stream_of(DeviceTrack& t, const QueueImpl& queue) {
  for (std::size_t i = 0; i < t.queues.size(); ++i)
    if (const auto q = t.queues[i].lock(); q.get() == &queue) return int(i + 1);
  t.queues.push_back(const_cast<QueueImpl&>(queue).weak_from_this());
  return int(t.queues.size());
}

/// Gives the device its reference event once: on a queue of its own (empty, so that waiting
/// for the event waits for nothing else), synchronized, its host time taken right after.
///
/// Every thread recording on the device returns only once the event is made (or could not be):
/// a record taken while another thread was still making it would find no reference when its
/// device times are read, and lose them without being counted among the late ones.
void ensure_base(State& s, std::size_t track, DeviceImpl& device) noexcept {
  const auto done = [&] {
    const std::lock_guard lock(s.mutex);
    return track >= s.tracks.size() || s.tracks[track].device != &device || s.tracks[track].base_done;
  };
  if (done()) return;
  try {
    const std::lock_guard making(s.base_mutex);
    if (done()) return;
    std::shared_ptr<EventImpl> event;
    double at = 0;
    try {
      auto queue = device.create_queue();
      event = queue->record_event();
      event->synchronize();
      at = now_us(s);
    } catch (...) {
      event.reset();  // No device times for this device (it failed, or memory ran out): host times remain.
    }
    const std::lock_guard lock(s.mutex);
    if (track < s.tracks.size() && s.tracks[track].device == &device) {
      s.tracks[track].base = std::move(event);
      s.tracks[track].base_us = at;
      s.tracks[track].base_done = true;
    }
  } catch (...) {
    // std::system_error from the mutex: the record goes without device times.
  }
}

bool is_device_work(Kind kind) noexcept {
  return kind == Kind::copy || kind == Kind::fill || kind == Kind::kernel || kind == Kind::wait || kind == Kind::host_task;
}

/// Writes `data` whole to `fd`. Returns 0 or an errno value.
int write_all(int fd, const std::string& data) noexcept {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += std::size_t(n);
  }
  return 0;
}

/// Writes the sink's buffer. Called under the state lock `lock`, which it releases before the
/// write (the file lock, taken first, keeps the chunks in order); returns with it released.
void flush(State& s, std::unique_lock<std::mutex>& lock) noexcept {
  Sink& sink = *s.sink;
  std::string chunk;
  chunk.swap(sink.buffer);
  try {
    sink.buffer.reserve(kChunkBytes + kChunkBytes / 4);  // a chunk and the operation that ends it
  } catch (...) {
  }
  const std::uint64_t ops = std::exchange(sink.buffered, 0);
  const std::lock_guard file(sink.file_mutex);
  lock.unlock();
  if (sink.error.load() != 0) {
    sink.not_written += ops;
    return;
  }
  const int error = write_all(sink.fd, chunk);
  if (error == 0) {
    sink.written += ops;
    return;
  }
  sink.not_written += ops;
  sink.error.store(error);
  // Said at once, where it happened; at exit the process's status says it again (at_exit).
  std::fprintf(stderr,
               "devctx: DEVCTX_TRACE_FILE: writing '%s' failed (%s) after %llu operations; the trace is "
               "incomplete and the process will exit with status %d\n",
               sink.path.c_str(), std::strerror(error), static_cast<unsigned long long>(sink.written),
               kTraceWriteFailedStatus);
}

/// Consumes `op`: counted in the running reports, and queued for the file. Under the lock.
void consume(State& s, const Operation& op) {
  s.consumed.add(op);
  s.consumed_by_device[op.device].add(op);
  if (!s.sink) return;
  if (s.sink->error.load(std::memory_order_relaxed) != 0) {
    ++s.sink->buffered;  // counted as not written by the next flush
    return;
  }
  s.sink->json.add(op, s.sink->buffer);
  ++s.sink->buffered;
}

/// Consumes the records at the front whose device times are read (every record when `all`,
/// and the oldest beyond kMaxPending), then writes the file's buffer once it holds a chunk
/// (whatever it holds when `all`). Under the lock; returns with it released. The events of
/// records consumed early go into `dropped`, to be released after the lock.
void drain(State& s, std::unique_lock<std::mutex>& lock, bool all,
           std::vector<std::shared_ptr<EventImpl>>& dropped) noexcept {
  try {
    while (!s.entries.empty()) {
      Entry& e = s.entries.front();
      if (e.end) {
        if (!all && s.entries.size() <= kMaxPending) break;
        dropped.push_back(std::move(e.begin));
        dropped.push_back(std::move(e.end));
        if (s.unresolved > 0) --s.unresolved;
        ++s.without_device_time;
      }
      take_note(e);
      consume(s, e.op);
      s.entries.pop_front();
    }
  } catch (...) {
    // Out of memory while consuming: the records stay pending, for the next drain.
  }
  if (s.sink && (all ? !s.sink->buffer.empty() || s.sink->buffered > 0 : s.sink->buffer.size() >= kChunkBytes))
    flush(s, lock);
  else
    lock.unlock();
}

/// Reads the device times of the entries whose work has finished (all of them when `wait`),
/// without holding the lock while the backend is asked; then, while records are consumed,
/// consumes those that are ready.
void resolve(State& s, bool wait) noexcept {
  struct Job {
    std::uint64_t id;
    std::shared_ptr<EventImpl> begin, end, base;
    double base_us;
    double begin_us = 0, end_us = 0;
    bool ok = false;
  };
  std::vector<Job> jobs;
  std::uint64_t generation = 0;
  try {
    const std::lock_guard lock(s.mutex);
    generation = s.generation;
    for (const Entry& e : s.entries) {
      if (!e.end) continue;
      const DeviceTrack& t = s.tracks[e.track];
      jobs.push_back({e.op.id, e.begin, e.end, t.base, t.base_us});
    }
  } catch (...) {
    return;
  }
  for (Job& j : jobs) {
    try {
      if (!j.base || !j.begin) continue;
      if (!wait && !j.end->query()) continue;
      j.begin_us = j.base_us + 1000.0 * j.begin->elapsed_ms_since(*j.base);
      j.end_us = j.base_us + 1000.0 * j.end->elapsed_ms_since(*j.base);
      j.ok = true;
    } catch (...) {
      // The event's work failed or its device is gone: the entry keeps its host times only.
      j.ok = true;
      j.begin_us = j.end_us = std::numeric_limits<double>::quiet_NaN();
    }
  }
  std::vector<std::shared_ptr<EventImpl>> dropped;  // released after the lock
  try {
    dropped.reserve(2 * jobs.size());
  } catch (...) {
    return;
  }
  std::unique_lock lock(s.mutex);
  if (generation != s.generation) return;
  const std::uint64_t front = s.entries.empty() ? 0 : s.entries.front().op.id;
  for (Job& j : jobs) {
    if (j.id < front || j.id - front >= s.entries.size()) continue;  // consumed meanwhile
    Entry& e = s.entries[std::size_t(j.id - front)];
    if (!e.end) continue;                      // read meanwhile by another thread
    if (!j.ok && j.base && j.begin) continue;  // not finished yet
    if (j.ok && j.begin_us == j.begin_us) {    // not NaN
      e.op.device_begin_us = j.begin_us;
      e.op.device_end_us = j.end_us;
    }
    take_note(e);
    dropped.push_back(std::move(e.begin));
    dropped.push_back(std::move(e.end));
    if (s.unresolved > 0) --s.unresolved;
  }
  s.resolve_at = s.unresolved + kResolveBatch;
  if (s.consume) drain(s, lock, false, dropped);
}

/// Stops recording, and consumes and writes what is left. The trace's last record is read
/// without waiting for the device: work still running keeps its host times only.
void finish_consuming(State& s) noexcept {
  resolve(s, false);
  std::vector<std::shared_ptr<EventImpl>> dropped;
  std::unique_lock lock(s.mutex);
  if (!s.consume) return;
  if (s.sink) {
    try {
      drain(s, lock, true, dropped);
      lock.lock();
      s.sink->json.end(s.sink->buffer, s.without_device_time);
    } catch (...) {
      // No memory for the file's closing: the write below finds nothing, the file is incomplete.
      if (!lock.owns_lock()) lock.lock();
      if (s.sink->error.load() == 0) s.sink->error.store(ENOMEM);
    }
    flush(s, lock);
    lock.lock();
    Sink& sink = *s.sink;
    if (::close(sink.fd) != 0 && sink.error.load() == 0) sink.error.store(errno);
    sink.fd = -1;
  } else {
    drain(s, lock, true, dropped);
    lock.lock();
  }
  s.consume = false;
}

void at_exit() noexcept {
  State& s = state();
  devctx::trace::stop();
  bool report = false;
  std::string file;
  {
    const std::lock_guard lock(s.mutex);
    report = s.exit_report;
    file = s.exit_file;
  }
  if (!file.empty() || report) {
    finish_consuming(s);
    std::uint64_t lost = 0, late = 0, written = 0;
    int error = 0;
    std::optional<devctx::trace::Report> r;
    {
      const std::lock_guard lock(s.mutex);
      late = s.without_device_time;
      if (s.sink) {
        const std::lock_guard file_lock(s.sink->file_mutex);
        lost = s.sink->not_written;
        written = s.sink->written;
        error = s.sink->error.load();
      }
      try {
        if (report) r = s.consumed.report();
      } catch (...) {
      }
    }
    if (report) {
      try {
        if (r) std::fprintf(stderr, "%s", devctx::trace::to_string(*r).c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "devctx: DEVCTX_REPORT at exit: %s\n", e.what());
      }
    }
    if (late > 0)
      std::fprintf(stderr,
                   "devctx: trace: %llu operations were recorded without device times (their work had not "
                   "finished when %zu more were waiting, or at exit)\n",
                   static_cast<unsigned long long>(late), kMaxPending);
    if (error != 0) {
      std::fprintf(stderr,
                   "devctx: DEVCTX_TRACE_FILE: '%s' is incomplete: %llu operations written, %llu not (%s); "
                   "exit status %d\n",
                   file.c_str(), static_cast<unsigned long long>(written), static_cast<unsigned long long>(lost),
                   std::strerror(error), kTraceWriteFailedStatus);
      // The failure must show in the exit status: the exit steps registered before this one
      // (before the first DeviceContext) are skipped; the program's output is flushed first.
      std::fflush(nullptr);
      ::_exit(kTraceWriteFailedStatus);
    }
  }
  // The records hold events, and so their queues and devices: they go now, while the
  // backends' runtimes are still loaded.
  devctx::trace::clear();
}

void register_exit_once() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(at_exit); });
}

}  // namespace

struct OpScope::Pending {
  Entry entry;
  QueueImpl* queue = nullptr;
  bool device_work = false;
};

OpScope::OpScope(QueueImpl& queue, const detail::Operation& what) noexcept {
  State& s = state();
  try {
    auto p = std::make_unique<Pending>();
    p->queue = &queue;
    Operation& op = p->entry.op;
    op.kind = kind_of(what);
    p->device_work = is_device_work(op.kind);
    op.direction = direction_of(what);
    std::visit(
        [&op](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (requires { o.bytes; }) op.bytes = o.bytes;
          if constexpr (std::is_same_v<T, detail::op::Copy>)
            op.pageable = o.dst_kind == MemKind::host_pageable || o.src_kind == MemKind::host_pageable;
          if constexpr (std::is_same_v<T, detail::op::Allocate> || std::is_same_v<T, detail::op::Free>)
            op.host_memory = o.kind != MemKind::device;
          if constexpr (std::is_same_v<T, detail::op::Launch>) {
            op.grid_dim = o.launch->config.grid_dim;
            op.block_dim = o.launch->config.block_dim;
            op.shared_bytes = o.launch->config.shared_bytes;
          }
        },
        what);
    op.name = name_of(what);
    op.host_thread = host_thread();
    {
      const std::lock_guard lock(s.mutex);
      p->entry.track = track_of(s, queue.device());
      DeviceTrack& t = s.tracks[p->entry.track];
      op.device = t.label;
      op.stream = stream_of(t, queue);
    }
    if (p->device_work) {
      ensure_base(s, p->entry.track, queue.device());
      try {
        p->entry.begin = queue.record_event();
      } catch (...) {
      }
    }
    staged_note = false;
    if (op.kind == Kind::kernel) {
      p->entry.note = std::make_shared<ExecutionNote>();
      current_note = &p->entry.note;
    }
    op.host_begin_us = now_us(s);
    pending_ = p.release();
  } catch (...) {
    // Out of memory: this operation goes unrecorded.
  }
}

OpScope::~OpScope() {
  current_note = nullptr;
  delete pending_;
}

void OpScope::done() noexcept {
  current_note = nullptr;
  if (pending_ == nullptr) return;
  State& s = state();
  Entry& e = pending_->entry;
  e.op.host_end_us = now_us(s);
  e.op.staged = e.op.kind == Kind::copy && staged_note;
  if (pending_->device_work && e.begin) {
    try {
      e.end = pending_->queue->record_event();
    } catch (...) {
      e.begin.reset();
    }
  }
  bool resolve_now = false;
  std::vector<std::shared_ptr<EventImpl>> dropped;  // released after the lock
  std::unique_lock lock(s.mutex);
  try {
    if (e.track >= s.tracks.size() || s.tracks[e.track].device != &pending_->queue->device()) {
      // clear() ran meanwhile: the track is gone.
      e.op.device.clear();
    } else {
      // The ids of the records held are consecutive (resolve() finds a record by its id): the
      // next id is taken only once the record is in.
      e.op.id = s.next_id;
      s.entries.push_back(std::move(e));
      ++s.next_id;
      if (s.entries.back().end) ++s.unresolved;
      resolve_now = s.unresolved >= s.resolve_at;
    }
  } catch (...) {
  }
  if (s.consume && !resolve_now) {
    drain(s, lock, false, dropped);
  } else {
    lock.unlock();
    // Keeps the number of events held bounded on long runs.
    if (resolve_now) resolve(s, false);
  }
}

std::shared_ptr<ExecutionNote> kernel_note() noexcept { return current_note != nullptr ? *current_note : nullptr; }

void note_staged_copy() noexcept {
  if (on()) staged_note = true;
}

void start_from_environment() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* file = std::getenv("DEVCTX_TRACE_FILE");
    const bool report = env_flag("DEVCTX_REPORT", false);
    if ((file == nullptr || *file == '\0') && !report) return;
    std::unique_ptr<Sink> sink;
    if (file != nullptr && *file != '\0') {
      // Opened now, so that a path that cannot be written is an error here, not a lost trace.
      sink = std::make_unique<Sink>();
      sink->path = file;
      sink->fd = ::open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (sink->fd < 0)
        fail(Errc::invalid_argument, "DEVCTX_TRACE_FILE='", file, "': cannot open it for writing (",
             std::strerror(errno), "); set it to a file in a directory this program may write, or unset it");
    }
    State& s = state();
    {
      const std::lock_guard lock(s.mutex);
      s.exit_file = file != nullptr ? file : "";
      s.exit_report = report;
      s.consume = true;
      if (sink) {
        sink->json.begin(sink->buffer);
        s.sink = std::move(sink);
      }
    }
    devctx::trace::start();
  });
}

std::optional<devctx::trace::Report> report_of(const std::string* device) {
  State& s = state();
  resolve(s, false);
  const std::lock_guard lock(s.mutex);
  Summary summary;
  if (s.consume) {
    if (device == nullptr) {
      summary = s.consumed;
    } else if (const auto it = s.consumed_by_device.find(*device); it != s.consumed_by_device.end()) {
      summary = it->second;
    }
  }
  const bool any = !s.consumed.empty() || !s.entries.empty();
  for (const Entry& e : s.entries)
    if (device == nullptr || e.op.device == *device) summary.add(e.op);
  if (!any) return std::nullopt;
  return summary.report();
}

}  // namespace devctx::detail::trace

namespace devctx::trace {

using detail::trace::state;

void start() {
  auto& s = state();
  {
    const std::lock_guard lock(s.mutex);
    // A fresh clock only when nothing refers to the old one (records, or devices' reference times).
    if (s.entries.empty() && s.tracks.empty())
      s.epoch.store(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  detail::trace::register_exit_once();
  detail::pipeline_observers.fetch_or(detail::kTraceRecords, std::memory_order_relaxed);
}

void stop() noexcept { detail::pipeline_observers.fetch_and(~detail::kTraceRecords, std::memory_order_relaxed); }

bool recording() noexcept { return detail::trace::on(); }

void clear() noexcept {
  auto& s = state();
  std::vector<std::shared_ptr<detail::EventImpl>> dropped;
  {
    // While records are consumed, the file keeps every record: those still waiting are
    // written first (with the device times of the work that has finished).
    if (s.consume) detail::trace::resolve(s, false);
    std::unique_lock lock(s.mutex);
    if (s.consume) {
      detail::trace::drain(s, lock, true, dropped);
      lock.lock();
    }
  }
  std::deque<detail::trace::Entry> entries;
  std::vector<detail::trace::DeviceTrack> tracks;
  {
    const std::lock_guard lock(s.mutex);
    entries.swap(s.entries);
    tracks.swap(s.tracks);
    ++s.generation;
    s.unresolved = 0;
    s.resolve_at = detail::trace::kResolveBatch;
    s.consumed = {};
    s.consumed_by_device.clear();
    // The ids in a file go on from where they were: each names one operation.
    if (!s.sink) s.next_id = 1;
    if (!s.sink) s.epoch.store(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  // Events, queues and devices released here, outside the lock.
}

std::vector<Operation> operations() {
  auto& s = state();
  detail::trace::resolve(s, false);
  std::vector<Operation> ops;
  const std::lock_guard lock(s.mutex);
  ops.reserve(s.entries.size());
  for (auto& e : s.entries) {
    detail::trace::take_note(e);
    ops.push_back(e.op);
  }
  return ops;
}

void write(const std::string& path) {
  const std::string json = to_json(operations());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) detail::fail(Errc::invalid_argument, "devctx::trace::write: cannot open '", path, "' for writing");
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (std::fclose(f) != 0 || !ok)
    detail::fail(Errc::invalid_argument, "devctx::trace::write: writing '", path, "' failed (disk full?)");
}

Report report() {
  auto r = detail::trace::report_of(nullptr);
  return r ? std::move(*r) : summarize({});
}

}  // namespace devctx::trace
