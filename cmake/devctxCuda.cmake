# SPDX-License-Identifier: Apache-2.0
# Turns on the CUDA language for devctx's own build (DEVCTX_ENABLE_CUDA=ON) and decides which GPU
# architectures its kernels are compiled for, saying which in a message:
#   1. CMAKE_CUDA_ARCHITECTURES (or the CUDAARCHS environment variable) when the user set one;
#   2. else the architectures of the GPUs that nvidia-smi reports on this machine;
#   3. else the oldest architecture nvcc supports, but not older than 75 (Turing): 75 for CUDA 12
#      and 13. Its code runs on that architecture and, through the PTX kept beside it, on every
#      newer one (compiled by the driver at the first launch).
# The choice is kept as the cache variable CMAKE_CUDA_ARCHITECTURES, so that the parent project
# (add_subdirectory, FetchContent) and later configures compile their kernels the same way.
# Sets DEVCTX_CUDA_ARCHITECTURES: the concrete list ("native", "all" and "all-major" resolved),
# which the package exports as devctx_CUDA_ARCHITECTURES.

# The compute capabilities of this machine's GPUs as CMake architectures ("9.0" -> 90), or empty.
function(_devctx_gpu_architectures out)
  set(${out} "" PARENT_SCOPE)
  find_program(_devctx_nvidia_smi nvidia-smi NO_CACHE)
  if(NOT _devctx_nvidia_smi)
    return()
  endif()
  execute_process(COMMAND "${_devctx_nvidia_smi}" --query-gpu=compute_cap --format=csv,noheader
                  OUTPUT_VARIABLE capabilities RESULT_VARIABLE status ERROR_QUIET TIMEOUT 30)
  if(NOT status EQUAL 0)
    return()
  endif()
  string(REGEX MATCHALL "[0-9]+\\.[0-9]+" capabilities "${capabilities}")
  set(architectures "")
  foreach(capability IN LISTS capabilities)
    string(REPLACE "." "" architecture "${capability}")
    list(APPEND architectures ${architecture})
  endforeach()
  list(REMOVE_DUPLICATES architectures)
  list(SORT architectures COMPARE NATURAL)
  set(${out} "${architectures}" PARENT_SCOPE)
endfunction()

# The oldest architecture `nvcc --list-gpu-arch` names that is 75 or newer, or empty.
function(_devctx_oldest_cuda_architecture out)
  set(${out} "" PARENT_SCOPE)
  if(NOT CMAKE_CUDA_COMPILER)
    include(CheckLanguage)
    check_language(CUDA)
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    return()
  endif()
  execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --list-gpu-arch
                  OUTPUT_VARIABLE listed RESULT_VARIABLE status ERROR_QUIET TIMEOUT 60)
  if(NOT status EQUAL 0)
    return()
  endif()
  string(REGEX MATCHALL "compute_[0-9]+" listed "${listed}")
  set(oldest "")
  foreach(entry IN LISTS listed)
    string(REPLACE "compute_" "" architecture "${entry}")
    if(architecture GREATER_EQUAL 75 AND (oldest STREQUAL "" OR architecture LESS oldest))
      set(oldest ${architecture})
    endif()
  endforeach()
  set(${out} "${oldest}" PARENT_SCOPE)
endfunction()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
  _devctx_gpu_architectures(_devctx_picked)
  if(_devctx_picked)
    set(_devctx_why "the GPUs nvidia-smi found")
  else()
    _devctx_oldest_cuda_architecture(_devctx_picked)
    set(_devctx_why "no GPU found: the oldest one nvcc supports from 75 on; newer GPUs run its PTX")
  endif()
  if(_devctx_picked)
    set(CMAKE_CUDA_ARCHITECTURES "${_devctx_picked}" CACHE STRING
        "GPU architectures of CUDA kernels (picked by devctx: ${_devctx_why})")
    set(DEVCTX_PICKED_CUDA_ARCHITECTURES "${_devctx_picked}" CACHE INTERNAL "")
    set(DEVCTX_PICKED_CUDA_ARCHITECTURES_WHY "${_devctx_why}" CACHE INTERNAL "")
  endif()
  unset(_devctx_picked)
  unset(_devctx_why)
endif()

enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)

# "native", "all" and "all-major" mean different things on another machine: export the list.
if(CMAKE_CUDA_ARCHITECTURES STREQUAL "native" AND DEFINED CMAKE_CUDA_ARCHITECTURES_NATIVE)
  set(DEVCTX_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "all" AND DEFINED CMAKE_CUDA_ARCHITECTURES_ALL)
  set(DEVCTX_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES_ALL}")
elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "all-major" AND DEFINED CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR)
  set(DEVCTX_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR}")
else()
  set(DEVCTX_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
endif()

if(DEFINED DEVCTX_PICKED_CUDA_ARCHITECTURES_WHY AND
   "${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "${DEVCTX_PICKED_CUDA_ARCHITECTURES}")
  message(STATUS "devctx: CUDA kernels for architectures ${DEVCTX_CUDA_ARCHITECTURES} "
                 "(${DEVCTX_PICKED_CUDA_ARCHITECTURES_WHY}; set CMAKE_CUDA_ARCHITECTURES to choose, e.g. 90 for H100/H200)")
else()
  message(STATUS "devctx: CUDA kernels for architectures ${DEVCTX_CUDA_ARCHITECTURES} (CMAKE_CUDA_ARCHITECTURES)")
endif()
