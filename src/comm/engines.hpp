// SPDX-License-Identifier: Apache-2.0
// src/comm/engines.hpp - the entry points of each communicator engine (each defined in its own
// file: the CPU devices' in src/backends/cpu, MPI's in src/comm/mpi_comm.cpp or mpi_absent.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "comm/comm_impl.hpp"

namespace devctx::detail {

/// Ranks 0..count-1 over CPU devices of this process, rank i on queues[i]'s device (distinct, checked).
[[nodiscard]] std::vector<std::shared_ptr<CommImpl>> create_cpu_group(QueueImpl* const* queues, std::size_t count);
/// This process's rank of MPI_COMM_WORLD; Error(not_available) without MPI.
[[nodiscard]] std::shared_ptr<CommImpl> create_mpi_rank(QueueImpl& queue);
[[nodiscard]] bool mpi_built() noexcept;

}  // namespace devctx::detail
