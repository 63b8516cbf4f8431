// SPDX-License-Identifier: Apache-2.0
// tests/cuda/fake_cuda_runtime.cpp - the few CUDA runtime calls the staging engine makes,
// implemented on the host, so that devctx_staging_engine_tests runs the engine's real code on a
// machine without a GPU. A stream is a thread that runs its operations in order, each after a
// random pause of up to 200 us (a DMA engine that is sometimes slow); "device memory" is host
// memory; an event completes when its stream reaches it. fake_cuda_fail_after(n) makes the n-th
// later cudaMemcpyAsync fail, to drive the engine's failure paths.
#include "fake_cuda_runtime.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace {

struct FakeEvent {
  std::mutex mutex;
  std::condition_variable reached;
  std::uint64_t recorded = 0;   ///< tickets handed out by cudaEventRecord
  std::uint64_t completed = 0;  ///< the last ticket its stream reached
};

class FakeStream {
 public:
  FakeStream() : thread_([this] { run(); }) {}
  ~FakeStream() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void enqueue(std::function<void()> op) {
    {
      const std::lock_guard lock(mutex_);
      ops_.push_back(std::move(op));
    }
    wake_.notify_all();
  }

 private:
  void run() {
    std::mt19937 rng(std::random_device{}());
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !ops_.empty(); });
      if (ops_.empty()) return;
      auto op = std::move(ops_.front());
      ops_.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
      op();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> ops_;
  bool stopping_ = false;
  std::thread thread_;
};

FakeEvent* event_of(cudaEvent_t e) { return reinterpret_cast<FakeEvent*>(e); }
FakeStream* stream_of(cudaStream_t s) { return reinterpret_cast<FakeStream*>(s); }

std::atomic<long> fail_countdown{-1};
std::atomic<long> memcpy_calls{0};

void wait_for(FakeEvent& e, std::uint64_t ticket) {
  std::unique_lock lock(e.mutex);
  e.reached.wait(lock, [&] { return e.completed >= ticket; });
}

}  // namespace

void fake_cuda_fail_after(long calls) { fail_countdown.store(calls); }
long fake_cuda_memcpy_calls() { return memcpy_calls.load(); }

extern "C" {

cudaError_t CUDARTAPI cudaGetLastError(void) { return cudaSuccess; }

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  *stream = reinterpret_cast<cudaStream_t>(new FakeStream);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  delete stream_of(stream);  // runs what is queued, then stops
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream) {
  FakeEvent done;
  stream_of(stream)->enqueue([&] {
    const std::lock_guard lock(done.mutex);
    done.completed = 1;
    done.reached.notify_all();
  });
  wait_for(done, 1);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  *event = reinterpret_cast<cudaEvent_t>(new FakeEvent);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event) {
  delete event_of(event);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  FakeEvent* e = event_of(event);
  std::uint64_t ticket = 0;
  {
    const std::lock_guard lock(e->mutex);
    ticket = ++e->recorded;
  }
  stream_of(stream)->enqueue([e, ticket] {
    const std::lock_guard lock(e->mutex);
    if (ticket > e->completed) e->completed = ticket;
    e->reached.notify_all();
  });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event) {
  FakeEvent* e = event_of(event);
  const std::lock_guard lock(e->mutex);
  return e->completed >= e->recorded ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event) {
  FakeEvent* e = event_of(event);
  std::uint64_t ticket = 0;
  {
    const std::lock_guard lock(e->mutex);
    ticket = e->recorded;
  }
  wait_for(*e, ticket);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  FakeEvent* e = event_of(event);
  std::uint64_t ticket = 0;
  {
    const std::lock_guard lock(e->mutex);
    ticket = e->recorded;
  }
  stream_of(stream)->enqueue([e, ticket] { wait_for(*e, ticket); });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind, cudaStream_t stream) {
  ++memcpy_calls;
  if (fail_countdown.load() >= 0 && fail_countdown.fetch_sub(1) == 0) return cudaErrorInvalidValue;
  stream_of(stream)->enqueue([dst, src, count] { std::memcpy(dst, src, count); });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaHostAlloc(void** host, size_t size, unsigned int) {
  *host = std::malloc(size);
  return *host != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t CUDARTAPI cudaFreeHost(void* host) {
  std::free(host);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void**, size_t, cudaMemPool_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t CUDARTAPI cudaFreeAsync(void*, cudaStream_t) { return cudaErrorNotSupported; }

}  // extern "C"

namespace devctx::detail::cuda {

// cuda_error.cpp's, which the engine's helpers call; the fake has no sticky errors.
bool is_sticky(cudaError_t) noexcept { return false; }
std::string describe(cudaError_t status) { return "fake CUDA error " + std::to_string(int(status)); }

}  // namespace devctx::detail::cuda
