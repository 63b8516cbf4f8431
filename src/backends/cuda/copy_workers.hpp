// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/copy_workers.hpp - a persistent pool of host threads that copy memory for
// the staged transfers (staging_engine.cpp). A job is one memcpy cut into pieces; the workers
// and the thread that waits for the job copy its pieces, oldest job first. Idle workers sleep
// on a condition variable: an idle pool costs no CPU time. Nothing here calls CUDA. Private to
// src/backends/cuda/.
#pragma once

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
    std::size_t pieces_ = 0;   ///< pieces that will be copied (lowered by cancel())
    std::size_t claimed_ = 0;  ///< pieces some thread has taken
    std::size_t done_ = 0;     ///< pieces copied
    std::condition_variable finished_;
  };

  /// Starts `threads` workers (0: every job is copied by the thread that finishes it).
  explicit CopyWorkers(std::size_t threads);
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

  const std::size_t thread_count_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job*> queue_;  ///< jobs with pieces left to take, oldest first
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace devctx::detail::cuda
