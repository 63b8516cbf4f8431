// SPDX-License-Identifier: Apache-2.0
// src/comm/mpi_absent.cpp - the MPI engine's entry point in a build without MPI (the devctx_mpi
// library, devctx::mpi, as src/comm/mpi_comm.cpp is with MPI).
#include "comm/engines.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

std::shared_ptr<CommImpl> comm_create_mpi(QueueImpl& queue) {
  fail(Errc::not_available, "Communicator::create_mpi on ", queue.device().label(),
       ": devctx was built without MPI (CMake found none); install an MPI (Debian: libopenmpi-dev) and "
       "reconfigure devctx");
}

}  // namespace devctx::detail
