// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/copy_workers.cpp - the pool of memcpy threads of the staged transfers
// (copy_workers.hpp).
#include "backends/cuda/copy_workers.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

namespace devctx::detail::cuda {
namespace {

/// Pieces smaller than this cost more in hand-offs than they gain in parallelism.
constexpr std::size_t kMinPieceBytes = std::size_t{256} << 10;

}  // namespace

CopyWorkers::CopyWorkers(std::size_t threads) : thread_count_(threads) {
  threads_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
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
    if (job.pieces_ != 0) queue_.push_back(&job);
  }
  // The finishing thread takes one piece; wake a worker for each of the others.
  for (std::size_t i = 1; i < std::min(job.pieces_, thread_count_ + 1); ++i) wake_.notify_one();
}

std::size_t CopyWorkers::take_piece(Job& job) {
  const std::size_t piece = job.claimed_++;
  if (job.claimed_ == job.pieces_) {
    const auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
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
  job.finished_.wait(lock, [&] { return job.done_ == job.pieces_; });
}

void CopyWorkers::cancel(Job& job) noexcept {
  std::unique_lock lock(mutex_);
  if (job.claimed_ < job.pieces_) {
    const auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    job.pieces_ = job.claimed_;
  }
  job.finished_.wait(lock, [&] { return job.done_ == job.pieces_; });
}

}  // namespace devctx::detail::cuda
