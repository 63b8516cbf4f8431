# SPDX-License-Identifier: Apache-2.0
# NCCL for communicators of GPUs (Communicator::create over CUDA contexts, create_mpi on a GPU):
# looked for when the CUDA backend is built (DEVCTX_ENABLE_NCCL, default ON) beside the CUDA
# toolkit (its include/ and lib/ or lib64/) and under NCCL_ROOT; linked into the CUDA backend
# only. Without it the CUDA build still works and a GPU communicator reports not_available.
option(DEVCTX_ENABLE_NCCL "Build the NCCL engine (collectives of GPUs) when NCCL is found" ON)
set(DEVCTX_WITH_NCCL OFF)
if(DEVCTX_ENABLE_CUDA AND DEVCTX_ENABLE_NCCL)
  set(_devctx_nccl_roots $ENV{NCCL_ROOT} ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  find_path(DEVCTX_NCCL_INCLUDE_DIR nccl.h HINTS ${_devctx_nccl_roots} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(DEVCTX_NCCL_LIBRARY nccl HINTS ${_devctx_nccl_roots} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
  if(DEVCTX_NCCL_INCLUDE_DIR AND DEVCTX_NCCL_LIBRARY)
    set(DEVCTX_WITH_NCCL ON)
  endif()
endif()
if(DEVCTX_WITH_NCCL)
  target_sources(devctx PRIVATE src/backends/cuda/nccl_comm.cpp src/backends/cuda/nccl_gate.cpp)
  set_source_files_properties(src/backends/cuda/nccl_comm.cpp PROPERTIES INCLUDE_DIRECTORIES "${DEVCTX_NCCL_INCLUDE_DIR}")
  # A static devctx passes it on to the program's link (CMake's LINK_ONLY), as it does MPI.
  target_link_libraries(devctx PRIVATE ${DEVCTX_NCCL_LIBRARY})
  message(STATUS "devctx: NCCL found (${DEVCTX_NCCL_LIBRARY}); communicators of GPUs are built")
else()
  target_sources(devctx PRIVATE src/backends/cuda/nccl_absent.cpp)
  if(DEVCTX_ENABLE_CUDA AND NOT DEVCTX_ENABLE_NCCL)
    message(STATUS "devctx: NCCL left out (DEVCTX_ENABLE_NCCL=OFF); GPU communicators report not_available")
  elseif(DEVCTX_ENABLE_CUDA)
    message(STATUS "devctx: no NCCL (nccl.h and libnccl not found; NCCL_ROOT names where); GPU communicators report not_available")
  endif()
endif()
