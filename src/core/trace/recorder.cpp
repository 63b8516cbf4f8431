// SPDX-License-Identifier: Apache-2.0
// src/core/trace/recorder.cpp - the trace recorder: the process's list of recorded operations,
// the tracks they belong to (a device's streams, the host's threads), and how device times are
// read: each device operation is bracketed by two events of its queue, and each device has one
// reference event whose host time is known, so that the events' elapsed times place the work
// on the host's clock (CUDA events on a GPU, the workers' clock on the CPU backend).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <devctx/trace.hpp>

#include "core/backend.hpp"
#include "core/environment.hpp"
#include "core/errors.hpp"
#include "core/trace/hooks.hpp"

namespace devctx::detail::trace {

std::atomic<bool> recording_flag{false};

/// One recorded operation, with the events that time it on the device until they are read.
/// Outside the anonymous namespace: OpScope::Pending (declared in the header) holds one.
struct Entry {
  devctx::trace::Operation op;
  std::size_t track = 0;
  std::shared_ptr<EventImpl> begin, end;  // until the device times are read
};

namespace {

using Clock = std::chrono::steady_clock;
using devctx::trace::Direction;
using devctx::trace::Operation;

struct DeviceTrack {
  const DeviceImpl* device = nullptr;
  std::weak_ptr<DeviceImpl> alive;  // tells a new device at a reused address from this one
  std::string label;
  bool base_tried = false;
  std::shared_ptr<EventImpl> base;  // reached at host time base_us
  double base_us = 0;
  std::vector<std::weak_ptr<QueueImpl>> queues;  // stream n is queues[n - 1]
};

// Leaked on purpose: operations may be recorded from destructors of static objects.
struct State {
  std::mutex mutex;
  // Read without the lock by every record, set by start() and clear(): atomic.
  std::atomic<Clock::rep> epoch{Clock::now().time_since_epoch().count()};
  std::vector<DeviceTrack> tracks;
  std::vector<Entry> entries;
  std::uint64_t generation = 0;  // bumped by clear(): indices into `entries` from before are stale
  std::size_t unresolved = 0;
  std::uint64_t next_id = 1;
  std::string exit_file;         // DEVCTX_TRACE_FILE
  bool exit_report = false;      // DEVCTX_REPORT
};

State& state() {
  static State* s = new State;
  return *s;
}

std::atomic<int> next_thread{1};
constinit thread_local int this_thread = 0;
constinit thread_local bool staged_note = false;

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
void ensure_base(State& s, std::size_t track, DeviceImpl& device) noexcept {
  {
    const std::lock_guard lock(s.mutex);
    if (s.tracks[track].base_tried) return;
    s.tracks[track].base_tried = true;
  }
  try {
    auto queue = device.create_queue();
    auto event = queue->record_event();
    event->synchronize();
    const double at = now_us(s);
    const std::lock_guard lock(s.mutex);
    if (track < s.tracks.size() && s.tracks[track].device == &device) {
      s.tracks[track].base = std::move(event);
      s.tracks[track].base_us = at;
    }
  } catch (...) {
    // No device times for this device (it failed, or memory ran out): host times remain.
  }
}

bool is_device_work(Kind kind) noexcept {
  return kind == Kind::copy || kind == Kind::fill || kind == Kind::kernel || kind == Kind::wait;
}

bool is_host(MemKind k) noexcept { return k != MemKind::device; }

Direction direction_of(MemKind dst, MemKind src) noexcept {
  if (is_host(src)) return is_host(dst) ? Direction::host_to_host : Direction::host_to_device;
  return is_host(dst) ? Direction::device_to_host : Direction::device_to_device;
}

std::string name_of(const OpDesc& d, Direction direction) {
  switch (d.kind) {
    case Kind::allocate: return d.dst == MemKind::device ? "create_buffer" : "create_host_buffer";
    case Kind::free: return "free";
    case Kind::fill: return "memset";
    case Kind::kernel: return d.launch != nullptr ? std::string(d.launch->name) : "kernel";
    case Kind::wait: return "wait_for";
    case Kind::record_event: return "record_event";
    case Kind::synchronize: return d.name != nullptr ? d.name : "synchronize";
    case Kind::copy: break;
  }
  switch (direction) {
    case Direction::host_to_device: return "copy HtoD";
    case Direction::device_to_host: return "copy DtoH";
    case Direction::device_to_device: return "copy DtoD";
    default: return "copy HtoH";
  }
}

/// Reads the device times of the entries whose work has finished (all of them when `wait`),
/// without holding the lock while the backend is asked.
void resolve(State& s, bool wait) noexcept {
  struct Job {
    std::size_t index;
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
    for (std::size_t i = 0; i < s.entries.size(); ++i) {
      Entry& e = s.entries[i];
      if (!e.end) continue;
      const DeviceTrack& t = s.tracks[e.track];
      jobs.push_back({i, e.begin, e.end, t.base, t.base_us});
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
  const std::lock_guard lock(s.mutex);
  if (generation != s.generation) return;
  for (Job& j : jobs) {
    Entry& e = s.entries[j.index];
    if (!j.ok && j.base && j.begin) continue;  // not finished yet
    if (j.ok && j.begin_us == j.begin_us) {    // not NaN
      e.op.device_begin_us = j.begin_us;
      e.op.device_end_us = j.end_us;
    }
    dropped.push_back(std::move(e.begin));
    dropped.push_back(std::move(e.end));
    if (s.unresolved > 0) --s.unresolved;
  }
}

void at_exit() noexcept {
  State& s = state();
  std::string file;
  bool report = false;
  {
    const std::lock_guard lock(s.mutex);
    file = s.exit_file;
    report = s.exit_report;
  }
  if (!file.empty() || report) {
    try {
      const auto ops = devctx::trace::operations();
      if (!file.empty()) devctx::trace::write(file);
      if (report) std::fprintf(stderr, "%s", devctx::trace::to_string(devctx::trace::summarize(ops)).c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "devctx: DEVCTX_TRACE_FILE / DEVCTX_REPORT at exit: %s\n", e.what());
    }
  }
  // The records hold events, and so their queues and devices: they go now, while the
  // backends' runtimes are still loaded.
  devctx::trace::stop();
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

OpScope::OpScope(QueueImpl& queue, const OpDesc& desc) noexcept {
  State& s = state();
  try {
    auto p = std::make_unique<Pending>();
    p->queue = &queue;
    p->device_work = is_device_work(desc.kind);
    Operation& op = p->entry.op;
    op.kind = desc.kind;
    op.bytes = desc.bytes;
    if (desc.kind == Kind::copy) {
      op.direction = direction_of(desc.dst, desc.src);
      op.pageable = desc.dst == MemKind::host_pageable || desc.src == MemKind::host_pageable;
    }
    if (desc.kind == Kind::allocate || desc.kind == Kind::free) op.host_memory = desc.dst != MemKind::device;
    if (desc.launch != nullptr) {
      op.grid_dim = desc.launch->config.grid_dim;
      op.block_dim = desc.launch->config.block_dim;
      op.shared_bytes = desc.launch->config.shared_bytes;
    }
    op.name = name_of(desc, op.direction);
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
    op.host_begin_us = now_us(s);
    pending_ = p.release();
  } catch (...) {
    // Out of memory: this operation goes unrecorded.
  }
}

OpScope::~OpScope() { delete pending_; }

void OpScope::done() noexcept {
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
  try {
    const std::lock_guard lock(s.mutex);
    if (e.track >= s.tracks.size() || s.tracks[e.track].device != &pending_->queue->device()) {
      // clear() ran meanwhile: the track is gone.
      e.op.device.clear();
    } else {
      e.op.id = s.next_id++;
      if (e.end) ++s.unresolved;
      resolve_now = s.unresolved >= 4096;
      s.entries.push_back(std::move(e));
    }
  } catch (...) {
  }
  // Keeps the number of events held bounded on long runs.
  if (resolve_now) resolve(s, false);
}

void note_staged_copy() noexcept {
  if (on()) staged_note = true;
}

void start_from_environment() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* file = std::getenv("DEVCTX_TRACE_FILE");
    const bool report = env_flag("DEVCTX_REPORT", false);
    if ((file == nullptr || *file == '\0') && !report) return;
    State& s = state();
    {
      const std::lock_guard lock(s.mutex);
      s.exit_file = file != nullptr ? file : "";
      s.exit_report = report;
    }
    devctx::trace::start();
  });
}

}  // namespace devctx::detail::trace

namespace devctx::trace {

using detail::trace::state;

void start() {
  auto& s = state();
  {
    const std::lock_guard lock(s.mutex);
    // A fresh clock only when nothing refers to the old one (records, or devices' reference times).
    if (s.entries.empty() && s.tracks.empty()) s.epoch.store(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  detail::trace::register_exit_once();
  detail::trace::recording_flag.store(true, std::memory_order_relaxed);
}

void stop() noexcept { detail::trace::recording_flag.store(false, std::memory_order_relaxed); }

bool recording() noexcept { return detail::trace::on(); }

void clear() noexcept {
  auto& s = state();
  std::vector<detail::trace::Entry> entries;
  std::vector<detail::trace::DeviceTrack> tracks;
  {
    const std::lock_guard lock(s.mutex);
    entries.swap(s.entries);
    tracks.swap(s.tracks);
    ++s.generation;
    s.unresolved = 0;
    s.next_id = 1;
    s.epoch.store(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  // Events, queues and devices released here, outside the lock.
}

std::vector<Operation> operations() {
  auto& s = state();
  detail::trace::resolve(s, false);
  std::vector<Operation> ops;
  const std::lock_guard lock(s.mutex);
  ops.reserve(s.entries.size());
  for (const auto& e : s.entries) ops.push_back(e.op);
  return ops;
}

void write(const std::string& path) {
  const std::string json = to_json(operations());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    detail::fail(Errc::invalid_argument, "devctx::trace::write: cannot open '", path, "' for writing");
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (std::fclose(f) != 0 || !ok)
    detail::fail(Errc::invalid_argument, "devctx::trace::write: writing '", path, "' failed (disk full?)");
}

Report report() { return summarize(operations()); }

}  // namespace devctx::trace
