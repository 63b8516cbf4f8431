# devctx_add_kernels(<target> <source>...)
#
# Adds source files that contain devctx kernels to <target>. When devctx was built with CUDA
# they are compiled by nvcc (so the CUDA backend can launch them, and the CPU backend runs the
# host-compiled copy of the same code); otherwise by the C++ compiler alone.
#
# Host-compiled kernel code gets -fstack-clash-protection (GCC and Clang): the CPU backend runs
# kernels on fiber stacks with a guard region below each, and with the flag a frame larger than
# the guard touches its pages in order and faults in the guard (reported as a stack overflow
# naming the kernel) instead of jumping over it into another GPU thread's stack. Functions whose
# frames fit in a page compile to the same code (bench/cpu/stack_clash_cost.sh measures it).
function(devctx_add_kernels target)
  target_sources(${target} PRIVATE ${ARGN})
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    set_property(SOURCE ${ARGN} TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_OPTIONS
      $<$<COMPILE_LANGUAGE:CXX>:-fstack-clash-protection>
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fstack-clash-protection>)
  endif()
  if(DEVCTX_ENABLE_CUDA)
    set_source_files_properties(${ARGN} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE CUDA)
    if(CMAKE_CUDA20_COMPILE_FEATURES)
      set_target_properties(${target} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON)
    else()
      # CMake before 3.26 knows no C++20 dialect for nvcc (CUDA_STANDARD 20 fails to generate).
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
    endif()
    # std:: constexpr functions (std::min, ...) inside kernels, as host code would use them.
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
  endif()
endfunction()
