// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/copy_workers.hpp - a persistent pool of host threads that copy memory for
// the staged transfers (staging_engine.cpp). A job is one memcpy cut into pieces; the workers
// and the thread that waits for the job copy its pieces, oldest job first. While a staged copy
// is in progress (a Session is open), a worker with nothing to copy waits actively for the next
// chunk's job for up to the spin time before it sleeps: a chunk's pieces last tens of
// microseconds, about what waking a sleeping thread can cost. Without an open session workers
// sleep on a condition variable: an idle pool costs no CPU time. Nothing here calls CUDA.
// Private to src/backends/cuda/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace devctx::detail::cuda {

class CopyWorkers {
 public:
  /// One memcpy, in pieces. It belongs to the thread that submits it, which must finish() or
  /// cancel() it before the job (or the memory it names) goes away. Reusable after either.
  class Job {
   public:
    Job() = default;
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;

   private:
    friend class CopyWorkers;
    std::byte* dst_ = nullptr;
    const std::byte* src_ = nullptr;
    std::size_t bytes_ = 0;
    std::size_t piece_bytes_ = 0;
    // Guarded by the pool's mutex.
    std::size_t pieces_ = 0;             ///< pieces that will be copied (lowered by cancel())
    std::size_t claimed_ = 0;            ///< pieces some thread has taken
    std::atomic<std::size_t> done_ = 0;  ///< pieces copied (changed under the mutex; read without it while spinning)
    std::condition_variable finished_;
  };

  /// While one is open (one per staged copy in progress), idle workers and finishing threads
  /// wait actively for up to the spin time before they sleep.
  class Session {
   public:
    explicit Session(CopyWorkers& workers) noexcept : workers_(workers) { workers_.sessions_.fetch_add(1); }
    ~Session() { workers_.sessions_.fetch_sub(1); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

   private:
    CopyWorkers& workers_;
  };

  /// Starts `threads` workers (0: every job is copied by the thread that finishes it) that
  /// spin for up to `spin` while a session is open.
  CopyWorkers(std::size_t threads, std::chrono::microseconds spin);
  /// Stops and joins the workers. No job may be pending.
  ~CopyWorkers();
  CopyWorkers(const CopyWorkers&) = delete;
  CopyWorkers& operator=(const CopyWorkers&) = delete;

  /// Queues `job`: `bytes` from `src` to `dst`, which do not overlap, and wakes workers for it.
  void submit(Job& job, void* dst, const void* src, std::size_t bytes);
  /// Copies pieces of `job` on the calling thread until none is left to take, then waits until
  /// the workers' pieces are done too: on return all of `dst` has been written.
  void finish(Job& job) noexcept;
  /// Takes back the pieces of `job` that no thread has started and waits for the started ones:
  /// on return no worker touches the job's memory any more.
  void cancel(Job& job) noexcept;

 private:
  void run() noexcept;
  /// Takes the next piece of `job` (the caller holds the mutex); dequeues the job with its last.
  std::size_t take_piece(Job& job);
  /// Copies one piece (without the mutex), then counts it done (with it).
  void copy_piece(std::unique_lock<std::mutex>& lock, Job& job, std::size_t piece) noexcept;
  /// Waits actively, without the mutex, until `done()` is true, no session is open or the spin
  /// time has passed.
  template <class Done>
  void spin_until(Done done) const noexcept;

  const std::size_t thread_count_;
  const std::chrono::microseconds spin_;
  std::atomic<std::size_t> sessions_ = 0;
  std::atomic<std::size_t> queued_ = 0;  ///< queue_.size(), readable without the mutex
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job*> queue_;  ///< jobs with pieces left to take, oldest first
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace devctx::detail::cuda
