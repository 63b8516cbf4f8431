// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nccl_absent.cpp - the NCCL engine's entry points in a build without NCCL
// (CUDA off, or CMake found no nccl.h / libnccl): communicators of GPUs say why they cannot be had.
// Includes no CUDA header.
#include "comm/engines.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

const char* nccl_absent_reason() noexcept {
  return "collectives of GPUs need NCCL, which was not found when devctx was built (CMake looked for nccl.h and "
         "libnccl beside the CUDA toolkit and in NCCL_ROOT, unless -DDEVCTX_ENABLE_NCCL=OFF left it out; install NCCL, "
         "e.g. Debian's libnccl-dev, and reconfigure), or use CPU devices (DeviceContext::set_cpu_device_count)";
}

bool nccl_built() noexcept { return false; }

std::vector<std::shared_ptr<CommImpl>> create_nccl_group(QueueImpl* const* queues, std::size_t) {
  fail(Errc::not_available, "Communicator::create on ", queues[0]->device().label(), ": ", nccl_absent_reason());
}

NcclId nccl_unique_id() { fail(Errc::not_available, "ncclGetUniqueId: ", nccl_absent_reason()); }

std::shared_ptr<CommImpl> create_nccl_rank(QueueImpl& queue, int, int, const NcclId&) {
  fail(Errc::not_available, "Communicator::create_mpi on ", queue.device().label(), ": ", nccl_absent_reason());
}

}  // namespace devctx::detail
