// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nccl_gate.cpp - RankGate (nccl_gate.hpp): a collective launched after its call
// stays in its stream's order, through a side stream, an event and a flag word in device memory
// waited for and written with the driver's stream memory operations (looked up through the
// runtime: devctx does not link libcuda).
#include "backends/cuda/nccl_gate.hpp"

#include <cuda.h>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "core/errors.hpp"

namespace devctx::detail::cuda {
namespace {

using StreamValue64 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

struct StreamMemOps {
  StreamValue64 wait = nullptr;
  StreamValue64 write = nullptr;
};

/// cuStreamWaitValue64 and cuStreamWriteValue64 (their CUDA 12 forms), once per process.
const StreamMemOps& stream_mem_ops(const CudaDevice& gpu) {
  static const StreamMemOps ops = [] {
    StreamMemOps o;
    void* wait = nullptr;
    void* write = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (succeeded(cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &wait, 12000, cudaEnableDefault, &found)) &&
        found == cudaDriverEntryPointSuccess)
      o.wait = reinterpret_cast<StreamValue64>(wait);
    if (succeeded(cudaGetDriverEntryPointByVersion("cuStreamWriteValue64", &write, 12000, cudaEnableDefault, &found)) &&
        found == cudaDriverEntryPointSuccess)
      o.write = reinterpret_cast<StreamValue64>(write);
    return o;
  }();
  if (ops.wait == nullptr || ops.write == nullptr)
    fail(Errc::not_available, "Communicator::create over several GPUs on ", gpu.label(),
         ": the CUDA driver does not give cuStreamWaitValue64 / cuStreamWriteValue64, which keep a rank's ",
         "collective in its stream's order; update the driver, or use one process per GPU (create_mpi)");
  return ops;
}

void check_driver(CUresult result, const CudaDevice& gpu, const char* call) {
  if (result != CUDA_SUCCESS)
    fail(Errc::backend_error, "Communicator (", gpu.label(), "): ", call, " failed (CUresult ", int(result), ')');
}

}  // namespace

RankGate::RankGate(CudaDevice& gpu) : gpu_(gpu) {
  (void)stream_mem_ops(gpu);
  gpu.make_current();
  check(DEVCTX_CUDA(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking)), gpu, "Communicator: its side stream");
  const CudaCall made = DEVCTX_CUDA(cudaMalloc(&flag_, sizeof(std::uint64_t)));
  if (made.ok()) {
    const CudaCall zeroed = DEVCTX_CUDA(cudaMemset(flag_, 0, sizeof(std::uint64_t)));
    if (zeroed.ok()) return;
    ignore(cudaFree(flag_));
    ignore(cudaStreamDestroy(side_));
    check(zeroed, gpu, "Communicator: its flag word");
  }
  ignore(cudaStreamDestroy(side_));
  check(made, gpu, "Communicator: its flag word");
}

RankGate::~RankGate() {
  ignore(cudaSetDevice(gpu_.id()));
  drain();
  ignore(cudaStreamDestroy(side_));
  ignore(cudaFree(flag_));
  for (cudaEvent_t e : events_) ignore(cudaEventDestroy(e));
}

RankGate::Ticket RankGate::mark(cudaStream_t user) {
  Ticket t;
  if (events_.empty()) {
    check(DEVCTX_CUDA(cudaEventCreateWithFlags(&t.ready, cudaEventDisableTiming)), gpu_, "Communicator: an event");
  } else {
    t.ready = events_.back();
    events_.pop_back();
  }
  const CudaCall recorded = DEVCTX_CUDA(cudaEventRecord(t.ready, user));
  if (!recorded.ok()) {
    events_.push_back(t.ready);
    check(recorded, gpu_, "Communicator: marking the stream");
  }
  t.value = ++next_;
  return t;
}

void RankGate::hold(cudaStream_t user, const Ticket& ticket) {
  check_driver(stream_mem_ops(gpu_).wait(user, CUdeviceptr(flag_), ticket.value, CU_STREAM_WAIT_VALUE_GEQ), gpu_,
               "cuStreamWaitValue64");
}

cudaStream_t RankGate::start(const Ticket& ticket) {
  const CudaCall waited = DEVCTX_CUDA(cudaStreamWaitEvent(side_, ticket.ready, 0));
  events_.push_back(ticket.ready);  // the wait took the event's state: it may be recorded again
  check(waited, gpu_, "Communicator: ordering its side stream");
  return side_;
}

void RankGate::release(const Ticket& ticket) noexcept {
  // Without this write the held stream would wait forever: on failure, write from the host.
  if (stream_mem_ops(gpu_).write(side_, CUdeviceptr(flag_), ticket.value, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) {
    const std::uint64_t value = ticket.value;
    ignore(cudaMemcpy(flag_, &value, sizeof value, cudaMemcpyHostToDevice));
  }
}

void RankGate::drop(const Ticket& ticket) noexcept {
  if (ticket.ready != nullptr) events_.push_back(ticket.ready);
}

void RankGate::drain() noexcept { ignore(cudaStreamSynchronize(side_)); }

}  // namespace devctx::detail::cuda
