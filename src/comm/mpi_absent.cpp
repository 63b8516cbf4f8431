// SPDX-License-Identifier: Apache-2.0
// src/comm/mpi_absent.cpp - the MPI engine's entry points in a build without MPI.
#include "comm/engines.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

std::shared_ptr<CommImpl> create_mpi_rank(QueueImpl& queue) {
  fail(Errc::not_available, "Communicator::create_mpi on ", queue.device().label(),
       ": devctx was built without MPI (CMake found none); install an MPI (Debian: libopenmpi-dev) and "
       "reconfigure devctx");
}

bool mpi_built() noexcept { return false; }

}  // namespace devctx::detail
