// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/copy_workers.cpp - the pool of memcpy threads of the staged transfers
// (copy_workers.hpp).
#include "backends/cuda/copy_workers.hpp"

#include "core/thread_name.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace devctx::detail::cuda {
namespace {

/// Pieces smaller than this cost more in hand-offs than they gain in parallelism.
constexpr std::size_t kMinPieceBytes = std::size_t{256} << 10;

/// One step of an active wait: tells the core that this is a spin loop (it yields its pipeline
/// to a sibling hyper-thread and saves power).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

template <class Done>
void CopyWorkers::spin_until(Done done) const noexcept {
  if (spin_.count() == 0) return;
  const auto until = std::chrono::steady_clock::now() + spin_;
  for (unsigned i = 1; !done() && sessions_.load(std::memory_order_relaxed) != 0; ++i) {
    cpu_relax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() >= until) return;
      std::this_thread::yield();  // where threads outnumber cores, the copying ones go first
    }
  }
}

CopyWorkers::CopyWorkers(std::size_t threads, std::chrono::microseconds spin) : thread_count_(threads), spin_(spin) {
  threads_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { run(); });
      name_thread(threads_.back(), "devctx-copy", i);
    }
  } catch (...) {
    // Could not start them all: stop those that did, and report.
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

CopyWorkers::~CopyWorkers() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void CopyWorkers::submit(Job& job, void* dst, const void* src, std::size_t bytes) {
  // As many pieces as there are threads to copy them (the workers and the finishing thread),
  // none below kMinPieceBytes; each piece a multiple of 64 bytes (a cache line) but the last.
  const std::size_t most = std::max<std::size_t>((bytes + kMinPieceBytes - 1) / kMinPieceBytes, 1);
  const std::size_t pieces = std::min(most, thread_count_ + 1);
  std::size_t piece_bytes = (bytes + pieces - 1) / pieces;
  piece_bytes = (piece_bytes + 63) / 64 * 64;
  {
    const std::lock_guard lock(mutex_);
    job.dst_ = static_cast<std::byte*>(dst);
    job.src_ = static_cast<const std::byte*>(src);
    job.bytes_ = bytes;
    job.piece_bytes_ = std::max<std::size_t>(piece_bytes, 1);
    job.pieces_ = bytes == 0 ? 0 : (bytes + job.piece_bytes_ - 1) / job.piece_bytes_;
    job.claimed_ = 0;
    job.done_ = 0;
    if (job.pieces_ != 0) {
      queue_.push_back(&job);
      queued_.store(queue_.size(), std::memory_order_relaxed);
    }
  }
  // The finishing thread takes one piece; wake a worker for each of the others.
  for (std::size_t i = 1; i < std::min(job.pieces_, thread_count_ + 1); ++i) wake_.notify_one();
}

std::size_t CopyWorkers::take_piece(Job& job) {
  const std::size_t piece = job.claimed_++;
  if (job.claimed_ == job.pieces_) {
    const auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    queued_.store(queue_.size(), std::memory_order_relaxed);
  }
  return piece;
}

void CopyWorkers::copy_piece(std::unique_lock<std::mutex>& lock, Job& job, std::size_t piece) noexcept {
  const std::size_t offset = piece * job.piece_bytes_;
  const std::size_t bytes = std::min(job.piece_bytes_, job.bytes_ - offset);
  lock.unlock();
  std::memcpy(job.dst_ + offset, job.src_ + offset, bytes);
  lock.lock();
  // Notified under the mutex: the waiting thread sees the count only after this thread has let
  // go of the job, so the job may be gone as soon as the waiter returns.
  if (++job.done_ == job.pieces_) job.finished_.notify_all();
}

void CopyWorkers::run() noexcept {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty() && !stopping_ && sessions_.load(std::memory_order_relaxed) != 0) {
      // A copy is in progress: its next chunk comes soon. (Its notify may find this thread
      // spinning, not waiting: the wait below then finds the job queued.)
      lock.unlock();
      spin_until([&] { return queued_.load(std::memory_order_relaxed) != 0; });
      lock.lock();
    }
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to copy
    Job& job = *queue_.front();
    const std::size_t piece = take_piece(job);
    copy_piece(lock, job, piece);
  }
}

void CopyWorkers::finish(Job& job) noexcept {
  std::unique_lock lock(mutex_);
  while (job.claimed_ < job.pieces_) copy_piece(lock, job, take_piece(job));
  if (job.done_ != job.pieces_) {
    // The workers are finishing their pieces. Taking the mutex again afterwards also waits
    // for the last one to let go of the job.
    const std::size_t pieces = job.pieces_;
    lock.unlock();
    spin_until([&] { return job.done_.load(std::memory_order_acquire) == pieces; });
    lock.lock();
  }
  job.finished_.wait(lock, [&] { return job.done_ == job.pieces_; });
}

void CopyWorkers::cancel(Job& job) noexcept {
  std::unique_lock lock(mutex_);
  if (job.claimed_ < job.pieces_) {
    const auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    queued_.store(queue_.size(), std::memory_order_relaxed);
    job.pieces_ = job.claimed_;
  }
  job.finished_.wait(lock, [&] { return job.done_ == job.pieces_; });
}

}  // namespace devctx::detail::cuda
