# SPDX-License-Identifier: Apache-2.0
# devctx_add_kernels(<target> <source>...)
#
# Adds source files that contain devctx kernels to <target>. When devctx was built with CUDA
# they are compiled by nvcc (so the CUDA backend can launch them, and the CPU backend runs the
# host-compiled copy of the same code); otherwise by the C++ compiler alone.
#
# Works the same after find_package(devctx), add_subdirectory and FetchContent, whatever
# languages the calling project enabled: when devctx has CUDA and the calling directory has not
# enabled it, devctx_add_kernels enables it there (a macro, because enable_language() must run
# in the directory's own scope, not in a function's; after add_subdirectory or FetchContent, a
# devctx_add_kernels inside a function of a directory without CUDA therefore stops with a message
# saying what to do). Kernels are compiled for the target's
# CUDA_ARCHITECTURES when the project chose some (CMAKE_CUDA_ARCHITECTURES), else for those
# devctx was built for (devctx_CUDA_ARCHITECTURES), as C++20, against the same CUDA runtime
# library as devctx (static, or shared when devctx is a shared library: one runtime in the
# process, so that devctx can launch the kernels these files register).
#
# With the fission translator on (cmake/devctxFission.cmake; the configure step says whether it
# is), each file is compiled from its translated copy under <binary dir>/devctx_fission/<target>/,
# in which CUDA-style barrier kernels get block-level twins for the CPU backend; the build prints
# one line per target saying how many were translated. When devctx has CUDA, nvcc compiles the
# copy: the twins are in its host pass only, and its device pass compiles the file's own kernels.
#
# Host-compiled kernel code gets -fstack-clash-protection (GCC and Clang): the CPU backend runs
# kernels on fiber stacks with a guard region below each, and with the flag a frame larger than
# the guard touches its pages in order and faults in the guard (reported as a stack overflow
# naming the kernel) instead of jumping over it into another GPU thread's stack. Functions whose
# frames fit in a page compile to the same code (bench/internal/stack_clash_cost.sh measures it).
include("${CMAKE_CURRENT_LIST_DIR}/devctxFission.cmake")

macro(devctx_add_kernels target)
  if(NOT TARGET devctx::devctx)
    message(FATAL_ERROR "devctx_add_kernels(${target} ...): there is no target devctx::devctx here; "
                        "call find_package(devctx), add_subdirectory(<devctx>) or FetchContent_MakeAvailable(devctx) first")
  endif()
  _devctx_enable_cuda_here("devctx_add_kernels(${target} ...)")
  _devctx_add_kernels(${target} ${ARGN})
endmacro()

# _devctx_enable_cuda_here(<caller>): when devctx has CUDA and the calling directory has not
# enabled it, enables it there (find_package(devctx) at a directory's top level does so for the
# whole directory and those below it), with devctx's architectures unless
# CMAKE_CUDA_ARCHITECTURES is set.
macro(_devctx_enable_cuda_here caller)
  get_target_property(_devctx_here_cuda devctx::devctx DEVCTX_CUDA)
  if(_devctx_here_cuda AND NOT DEFINED CMAKE_CUDA_COMPILE_OBJECT)
    if(CMAKE_CURRENT_FUNCTION)
      message(FATAL_ERROR "${caller} was called inside the function ${CMAKE_CURRENT_FUNCTION}(), where CUDA "
                          "cannot be enabled for the directory ${CMAKE_CURRENT_SOURCE_DIR}: call "
                          "enable_language(CUDA) in that directory's CMakeLists.txt first (or call "
                          "devctx_add_kernels outside functions)")
    endif()
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      get_target_property(CMAKE_CUDA_ARCHITECTURES devctx::devctx DEVCTX_CUDA_ARCHITECTURES)
      message(STATUS "devctx: CUDA enabled in ${CMAKE_CURRENT_SOURCE_DIR} for devctx's kernels, "
                     "architectures ${CMAKE_CUDA_ARCHITECTURES} (devctx's; set CMAKE_CUDA_ARCHITECTURES to choose)")
    endif()
    enable_language(CUDA)
  endif()
  unset(_devctx_here_cuda)
endmacro()

function(_devctx_add_kernels target)
  # The fission translator's copies of the files when it runs (cmake/devctxFission.cmake).
  _devctx_fission_sources(${target} sources ${ARGN})
  target_sources(${target} PRIVATE ${sources})
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    set_property(SOURCE ${sources} TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_OPTIONS
      $<$<COMPILE_LANGUAGE:CXX>:-fstack-clash-protection>
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fstack-clash-protection>)
  endif()
  get_target_property(cuda devctx::devctx DEVCTX_CUDA)
  if(NOT cuda)
    return()
  endif()
  set_source_files_properties(${sources} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE CUDA)
  devctx_cuda_standard(${target})
  # std:: constexpr functions (std::min, ...) inside kernels, as host code would use them.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
  get_target_property(architectures ${target} CUDA_ARCHITECTURES)
  if(architectures STREQUAL "architectures-NOTFOUND" OR architectures STREQUAL "")
    get_target_property(architectures devctx::devctx DEVCTX_CUDA_ARCHITECTURES)
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${architectures}")
  endif()
  get_target_property(runtime devctx::devctx DEVCTX_CUDA_RUNTIME)
  set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY ${runtime})
endfunction()

# devctx_cuda_standard(<target>): the target's CUDA sources are compiled as C++20.
# CMake 3.25 (Debian 12's) knows no C++20 flag for nvcc, and there a required CUDA20 (set here,
# or inherited from the project's CMAKE_CXX_STANDARD 20 with CMAKE_CXX_STANDARD_REQUIRED) fails
# generation. When CMake lacks the flag, the standard is not required, which makes CMake add no
# flag of its own, and the flag is given here.
function(devctx_cuda_standard target)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 20)
  if(DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set_target_properties(${target} PROPERTIES CUDA_STANDARD_REQUIRED ON)
  else()
    set_target_properties(${target} PROPERTIES CUDA_STANDARD_REQUIRED OFF)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
  endif()
endfunction()
