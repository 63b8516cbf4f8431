// SPDX-License-Identifier: Apache-2.0
// src/comm/engines.hpp - the entry points of each communicator engine (each defined in its own
// file: the CPU devices' in src/backends/cpu, NCCL's in src/backends/cuda/nccl_comm.cpp or
// nccl_absent.cpp). MPI's (comm_create_mpi, declared in <devctx/comm.hpp>) is the devctx_mpi
// library's, devctx::mpi: src/comm/mpi_comm.cpp, or mpi_absent.cpp in a build without MPI.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "comm/comm_impl.hpp"

namespace devctx::detail {

/// Ranks 0..count-1 over CPU devices of this process, rank i on queues[i]'s device (distinct, checked).
[[nodiscard]] std::vector<std::shared_ptr<CommImpl>> create_cpu_group(QueueImpl* const* queues, std::size_t count);
/// NCCL's unique id of a new communicator (ncclUniqueId), as bytes another process can be sent.
using NcclId = std::array<char, 128>;
/// Ranks 0..count-1 over GPUs of this process, rank i on queues[i]'s device (distinct, checked):
/// one NCCL communicator each (ncclCommInitAll). Error(not_available) without NCCL.
[[nodiscard]] std::vector<std::shared_ptr<CommImpl>> create_nccl_group(QueueImpl* const* queues, std::size_t count);
/// A new unique id (ncclGetUniqueId), made by one rank and given to all (create_nccl_rank).
[[nodiscard]] NcclId nccl_unique_id();
/// Rank `rank` of `size` of the NCCL communicator `id`, on `queue`'s GPU (ncclCommInitRank):
/// every rank calls it at once, each in its own process.
[[nodiscard]] std::shared_ptr<CommImpl> create_nccl_rank(QueueImpl& queue, int rank, int size, const NcclId& id);
/// Whether devctx was built with NCCL; when not, why (for messages).
[[nodiscard]] bool nccl_built() noexcept;
[[nodiscard]] const char* nccl_absent_reason() noexcept;

}  // namespace devctx::detail
