# SPDX-License-Identifier: Apache-2.0
# MPI for Communicator::create_mpi, in a library of its own: devctx_mpi (target devctx::mpi,
# find_package(devctx COMPONENTS mpi), pkg-config devctx-mpi), so that a program that does not
# call create_mpi links no MPI and its build needs no MPI development files, even when devctx was
# built with MPI. With an MPI found (DEVCTX_ENABLE_MPI, default ON) devctx_mpi holds the MPI
# engine (src/comm/mpi_comm.cpp); without, an entry point that says devctx was built without it
# (src/comm/mpi_absent.cpp). libdevctx itself never references MPI.
option(DEVCTX_ENABLE_MPI "Build Communicator::create_mpi when an MPI is found" ON)
set(DEVCTX_WITH_MPI OFF)
if(DEVCTX_ENABLE_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(DEVCTX_WITH_MPI ON)
  endif()
endif()
# Communicator::mpi_available() (src/comm/communicator.cpp).
target_compile_definitions(devctx PRIVATE DEVCTX_MPI_BUILT=$<BOOL:${DEVCTX_WITH_MPI}>)

add_library(devctx_mpi)  # static or shared as libdevctx (BUILD_SHARED_LIBS)
add_library(devctx::mpi ALIAS devctx_mpi)
target_link_libraries(devctx_mpi PUBLIC devctx)
target_include_directories(devctx_mpi PRIVATE ${PROJECT_SOURCE_DIR}/src)
# mpi_comm.cpp includes the CPU backend's private headers: libdevctx's own definitions
# (DEVCTX_DETAIL_HEADERS_OK, the fiber implementation, ...).
target_compile_definitions(devctx_mpi PRIVATE $<TARGET_PROPERTY:devctx,COMPILE_DEFINITIONS>)
set_target_properties(devctx_mpi PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  EXPORT_NAME mpi
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
devctx_target_warnings(devctx_mpi)
if(DEVCTX_WITH_MPI)
  target_sources(devctx_mpi PRIVATE src/comm/mpi_comm.cpp)
  target_link_libraries(devctx_mpi PRIVATE MPI::MPI_CXX)
  message(STATUS "devctx: MPI found (${MPI_CXX_LIBRARY_VERSION_STRING}); Communicator::create_mpi is built "
                 "(in devctx::mpi)")
else()
  target_sources(devctx_mpi PRIVATE src/comm/mpi_absent.cpp)
  message(STATUS "devctx: no MPI; Communicator::create_mpi (devctx::mpi) reports not_available")
endif()
