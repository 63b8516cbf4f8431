# SPDX-License-Identifier: Apache-2.0
# find_package(devctx COMPONENTS ...): `cpu` is always there, `cuda` when devctx was built with
# CUDA, `mpi` (the target devctx::mpi, Communicator::create_mpi) when devctx was built with MPI.
# A missing required component makes the package not found, with a message saying why.
# Included by the installed devctxConfig.cmake and by the find_package redirect that a build of
# devctx inside another project writes; devctx_CUDA and devctx_MPI are set before. (The installed
# config also needs MPI's development files for `mpi` with a static devctx: devctxConfig.cmake.in.)
set(devctx_cpu_FOUND TRUE)
if(devctx_CUDA)
  set(devctx_cuda_FOUND TRUE)
else()
  set(devctx_cuda_FOUND FALSE)
endif()
if(devctx_MPI)
  set(devctx_mpi_FOUND TRUE)
else()
  set(devctx_mpi_FOUND FALSE)
endif()
foreach(_devctx_component IN LISTS devctx_FIND_COMPONENTS)
  if(NOT _devctx_component MATCHES "^(cpu|cuda|mpi)$")
    set(devctx_${_devctx_component}_FOUND FALSE)
    if(devctx_FIND_REQUIRED_${_devctx_component})
      set(devctx_FOUND FALSE)
      set(devctx_NOT_FOUND_MESSAGE "devctx has no component '${_devctx_component}' (its components are cpu, cuda and mpi)")
    endif()
  elseif(_devctx_component STREQUAL "mpi" AND NOT devctx_mpi_FOUND AND devctx_FIND_REQUIRED_mpi)
    set(devctx_FOUND FALSE)
    string(CONCAT devctx_NOT_FOUND_MESSAGE
        "this devctx was built without MPI (DEVCTX_ENABLE_MPI=OFF, or no MPI when it was configured), "
        "so it has no component 'mpi'. Rebuild devctx with an MPI installed (Debian: libopenmpi-dev), "
        "or ask for OPTIONAL_COMPONENTS mpi (devctx::mpi then exists and create_mpi throws not_available).")
  elseif(NOT devctx_${_devctx_component}_FOUND AND devctx_FIND_REQUIRED_${_devctx_component})
    set(devctx_FOUND FALSE)
    string(CONCAT devctx_NOT_FOUND_MESSAGE
        "this devctx was built without CUDA (DEVCTX_ENABLE_CUDA=OFF, or no nvcc when it was configured), "
        "so it has no component 'cuda'. Rebuild devctx with nvcc in PATH (or -DDEVCTX_ENABLE_CUDA=ON), "
        "or ask for COMPONENTS cpu only.")
  endif()
endforeach()
unset(_devctx_component)
