// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/staging_engine.cpp - the staged pageable copies (staging_engine.hpp).
//
// Upload (pageable -> device), per chunk: take a slot, copy the chunk into it on the copy
// threads (several chunks ahead, as many as there are free slots), then cudaMemcpyAsync the
// slot to the device on the copy's stream and record the slot's event; the slot is reused once
// that event has completed. The call returns when the last chunk has reached the device (the
// stream is synchronized, as on the direct path). Download (device -> pageable), per chunk: take
// a slot, cudaMemcpyAsync the chunk into it on the stream and record its event (several chunks
// ahead); wait for each chunk's event in turn and hand the chunk to the copy threads at once
// (copying out chunk i overlaps the wait for chunk i+1); once every held chunk has landed, help
// finish the oldest and give its slot back for the next DMA. The calling thread copies pieces
// too, and makes every CUDA call: the copy threads only copy host memory.
#include "backends/cuda/staging_engine.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>

#include "core/errors.hpp"

namespace devctx::detail::cuda {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

}  // namespace

/// One staged copy in progress: the slots it holds, in chunk order, and what each is doing.
/// Whatever way the copy ends (done, a failed call, an exception), its destructor leaves no
/// copy thread on the caller's memory and gives every slot back in a state that is true.
class StagingEngine::Run {
 public:
  struct Chunk {
    std::size_t slot = kNone;
    std::size_t offset = 0;
    std::size_t bytes = 0;
    bool copying = false;   ///< a copy-thread job on it is pending
    bool dma = false;       ///< a DMA to or from the slot is enqueued ...
    bool recorded = false;  ///< ... and the slot's event recorded after it
    CopyWorkers::Job job;
  };

  Run(StagingEngine& engine, cudaStream_t stream, std::size_t total)
      : engine_(engine), session_(engine.workers_), stream_(stream), total_(total), ring_(new Chunk[engine.slots_.size()]) {}
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  ~Run() {
    bool unknown = false;  // a DMA with no event after it: only a stream wait says it is over
    for (std::size_t i = 0; i < count_; ++i) {
      Chunk& c = at(i);
      if (c.copying) engine_.workers_.cancel(c.job);
      if (c.dma && !c.recorded) unknown = true;
    }
    const bool drained = unknown && succeeded(cudaStreamSynchronize(stream_));
    for (std::size_t i = 0; i < count_; ++i) {
      const Chunk& c = at(i);
      SlotState state = SlotState::free;
      if (c.recorded)
        state = SlotState::pending;
      else if (c.dma && !drained)
        state = SlotState::lost;  // may still be in use: never reuse it
      engine_.release(c.slot, state);
    }
  }

  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] bool full() const noexcept { return count_ == engine_.slots_.size(); }
  [[nodiscard]] Chunk& front() noexcept { return at(0); }
  [[nodiscard]] Chunk& at_back() noexcept { return at(count_ - 1); }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// The i-th chunk this copy holds, oldest first.
  [[nodiscard]] Chunk& at(std::size_t i) noexcept { return ring_[(head_ + i) % engine_.slots_.size()]; }

  /// Takes a slot for the next chunk, at `offset`. False when none is free and `wait` is false,
  /// or on a failure (then in `failure`).
  bool push(std::size_t offset, bool wait, CudaCall& failure) {
    const auto slot = engine_.acquire(wait, failure);
    if (!slot) return false;
    Chunk& c = at(count_);
    c.slot = *slot;
    c.offset = offset;
    c.bytes = std::min(engine_.chunk_bytes_, total_ - offset);
    c.copying = c.dma = c.recorded = false;
    ++count_;
    return true;
  }
  /// The front chunk is done with; its slot goes back in `state`.
  void pop(SlotState state) noexcept {
    engine_.release(front().slot, state);
    head_ = (head_ + 1) % engine_.slots_.size();
    --count_;
  }
  [[nodiscard]] std::byte* memory(const Chunk& c) const noexcept { return engine_.slots_[c.slot].memory; }
  [[nodiscard]] cudaEvent_t event(const Chunk& c) const noexcept { return engine_.slots_[c.slot].done; }

 private:
  StagingEngine& engine_;
  CopyWorkers::Session session_;  ///< the copy threads wait actively for this copy's chunks
  cudaStream_t stream_;
  std::size_t total_;
  std::unique_ptr<Chunk[]> ring_;
  std::size_t head_ = 0, count_ = 0;
};

StagingEngine::StagingEngine(const TransferSettings& settings, cudaMemPool_t host_pool)
    : chunk_bytes_(settings.chunk_bytes),
      slots_(settings.chunks()),
      workers_(settings.copy_threads, std::chrono::microseconds(settings.spin_us)) {
  const std::size_t bytes = chunk_bytes_ * slots_.size();
  void* memory = nullptr;
  const auto operation = [&] {
    return concat("enqueue_copy (allocating ", bytes_text(bytes), " of page-locked staging memory)");
  };
  if (host_pool != nullptr) {
    // Stream-ordered pool memory: freeing it later waits for nothing but its own last use.
    CudaCall call = DEVCTX_CUDA(cudaStreamCreateWithFlags(&pool_stream_, cudaStreamNonBlocking));
    if (call.ok()) call = DEVCTX_CUDA(cudaMallocFromPoolAsync(&memory, bytes, host_pool, pool_stream_));
    if (call.ok()) call = DEVCTX_CUDA(cudaStreamSynchronize(pool_stream_));
    if (!call.ok()) {
      if (memory != nullptr) ignore(cudaFreeAsync(memory, pool_stream_));
      if (pool_stream_ != nullptr) ignore(cudaStreamDestroy(pool_stream_));
      fail(Errc::out_of_memory, operation(), ": ", describe(call.status));
    }
    pool_ = host_pool;
  } else {
    const CudaCall call = DEVCTX_CUDA(cudaHostAlloc(&memory, bytes, cudaHostAllocPortable));
    if (!call.ok()) {
      ignore(call.status);
      fail(Errc::out_of_memory, operation(), ": ", describe(call.status));
    }
  }
  memory_ = static_cast<std::byte*>(memory);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].memory = memory_ + i * chunk_bytes_;
    if (!succeeded(cudaEventCreateWithFlags(&slots_[i].done, cudaEventDisableTiming))) {
      slots_[i].done = nullptr;
      slots_[i].state = SlotState::lost;  // a slot without an event cannot say when it is free
    }
  }
}

StagingEngine::~StagingEngine() {
  // The copies have returned, but the DMAs of the last chunks of an upload may still be
  // running: the memory goes only after them.
  if (pool_ != nullptr) {
    for (const Slot& s : slots_)
      if (s.done != nullptr && s.state == SlotState::pending) ignore(cudaStreamWaitEvent(pool_stream_, s.done, 0));
    ignore(cudaFreeAsync(memory_, pool_stream_));
    ignore(cudaStreamDestroy(pool_stream_));  // returns at once; the free runs after the waits
  } else {
    bool safe = true;
    for (const Slot& s : slots_) {
      if (s.state == SlotState::lost) safe = false;
      if (s.done != nullptr && s.state == SlotState::pending && !succeeded(cudaEventSynchronize(s.done))) safe = false;
    }
    if (safe) ignore(cudaFreeHost(memory_));  // else a DMA may still use it: leak it
  }
  for (const Slot& s : slots_)
    if (s.done != nullptr) ignore(cudaEventDestroy(s.done));
}

std::optional<std::size_t> StagingEngine::acquire(bool wait, CudaCall& failure) {
  std::unique_lock lock(slots_mutex_);
  for (;;) {
    std::size_t oldest = kNone;
    bool usable = false;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (s.state == SlotState::free) {
        s.state = SlotState::owned;
        return i;
      }
      if (s.state != SlotState::lost) usable = true;
      if (s.state != SlotState::pending) continue;
      const CudaCall query = DEVCTX_CUDA(cudaEventQuery(s.done));
      if (query.ok()) {
        s.state = SlotState::owned;
        return i;
      }
      if (query.status != cudaErrorNotReady) {
        failure = query;
        return std::nullopt;
      }
      if (oldest == kNone || s.released < slots_[oldest].released) oldest = i;
    }
    if (!wait) return std::nullopt;
    if (!usable) {
      // Every slot was lost to earlier failures (whose copies reported them).
      failure = CudaCall{cudaErrorUnknown, "staging memory lost to earlier failures", __FILE__, __LINE__};
      return std::nullopt;
    }
    if (oldest != kNone) {
      // Wait for the DMA that will free a slot first. If another copy takes the slot meanwhile
      // and records the event again, this waits for that DMA too: still bounded.
      const cudaEvent_t event = slots_[oldest].done;
      lock.unlock();
      const CudaCall sync = DEVCTX_CUDA(cudaEventSynchronize(event));
      lock.lock();
      if (!sync.ok()) {
        failure = sync;
        return std::nullopt;
      }
      continue;
    }
    // Every slot is held by copies in progress; each gives its slots back without waiting for
    // this one.
    slot_released_.wait(lock);
  }
}

void StagingEngine::release(std::size_t slot, SlotState state) noexcept {
  {
    const std::lock_guard lock(slots_mutex_);
    slots_[slot].state = state;
    slots_[slot].released = ++releases_;
  }
  slot_released_.notify_all();
}

CudaCall StagingEngine::upload(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  auto* out = static_cast<std::byte*>(dst);
  const auto* in = static_cast<const std::byte*>(src);
  Run run(*this, stream, bytes);
  CudaCall failure;
  std::size_t next = 0;  // offset of the next chunk to start filling
  std::size_t sent = 0;  // bytes handed to the DMA engine
  while (sent < bytes) {
    // Start filling as many chunks ahead as there are free slots (waiting for one only when
    // this copy holds none).
    while (next < bytes && !run.full() && run.push(next, run.empty(), failure)) {
      Run::Chunk& c = run.at_back();
      workers_.submit(c.job, run.memory(c), in + c.offset, c.bytes);
      c.copying = true;
      next += c.bytes;
    }
    if (!failure.ok()) return failure;
    Run::Chunk& c = run.front();
    workers_.finish(c.job);
    c.copying = false;
    failure = DEVCTX_CUDA(cudaMemcpyAsync(out + c.offset, run.memory(c), c.bytes, cudaMemcpyDefault, stream));
    if (!failure.ok()) return failure;
    c.dma = true;
    failure = DEVCTX_CUDA(cudaEventRecord(run.event(c), stream));
    if (!failure.ok()) return failure;
    c.recorded = true;
    sent += c.bytes;
    run.pop(SlotState::pending);
  }
  // As the direct path does, return once the copy is done and so is everything before it on the
  // stream: callers (and tests, and the fuzzer's model) may rely on a pageable copy being
  // complete. Only the DMA of the last chunks is left to wait for here.
  return DEVCTX_CUDA(cudaStreamSynchronize(stream));
}

CudaCall StagingEngine::download(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  auto* out = static_cast<std::byte*>(dst);
  const auto* in = static_cast<const std::byte*>(src);
  Run run(*this, stream, bytes);
  CudaCall failure;
  std::size_t next = 0;     // offset of the next chunk to bring into a slot
  std::size_t written = 0;  // bytes copied out to the caller's memory
  std::size_t landed = 0;   // chunks at the front of the run that are in their slots, being copied out
  while (written < bytes) {
    while (next < bytes && !run.full() && run.push(next, run.empty(), failure)) {
      Run::Chunk& c = run.at_back();
      next += c.bytes;
      failure = DEVCTX_CUDA(cudaMemcpyAsync(run.memory(c), in + c.offset, c.bytes, cudaMemcpyDefault, stream));
      if (!failure.ok()) return failure;
      c.dma = true;
      failure = DEVCTX_CUDA(cudaEventRecord(run.event(c), stream));
      if (!failure.ok()) return failure;
      c.recorded = true;
    }
    if (!failure.ok()) return failure;
    if (landed < run.size()) {
      // The oldest chunk still on its way: wait for it, then hand it to the copy threads and go
      // on to the next one, so that copying out chunk i overlaps waiting for chunk i+1 (the
      // copy threads take their jobs oldest first). Finishing waits until no chunk is left to wait for.
      Run::Chunk& c = run.at(landed);
      failure = DEVCTX_CUDA(cudaEventSynchronize(run.event(c)));
      if (!failure.ok()) return failure;
      c.dma = c.recorded = false;  // the chunk is in the slot; nothing on the device uses it now
      workers_.submit(c.job, out + c.offset, run.memory(c), c.bytes);
      c.copying = true;
      ++landed;
      continue;
    }
    // Every chunk this copy holds has landed: help copy out the oldest, then free its slot for
    // the next DMA.
    Run::Chunk& c = run.front();
    workers_.finish(c.job);
    c.copying = false;
    written += c.bytes;
    run.pop(SlotState::free);
    --landed;
  }
  return failure;
}

}  // namespace devctx::detail::cuda
