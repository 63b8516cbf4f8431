# SPDX-License-Identifier: Apache-2.0
# MPI for Communicator::create_mpi: built when CMake finds an MPI (DEVCTX_ENABLE_MPI, default
# ON), else the entry points say devctx was built without it.
option(DEVCTX_ENABLE_MPI "Build Communicator::create_mpi when an MPI is found" ON)
set(DEVCTX_WITH_MPI OFF)
if(DEVCTX_ENABLE_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(DEVCTX_WITH_MPI ON)
  endif()
endif()
if(DEVCTX_WITH_MPI)
  target_sources(devctx PRIVATE src/comm/mpi_comm.cpp)
  target_link_libraries(devctx PRIVATE MPI::MPI_CXX)
  message(STATUS "devctx: MPI found (${MPI_CXX_LIBRARY_VERSION_STRING}); Communicator::create_mpi is built")
else()
  target_sources(devctx PRIVATE src/comm/mpi_absent.cpp)
  message(STATUS "devctx: no MPI; Communicator::create_mpi reports not_available")
endif()
