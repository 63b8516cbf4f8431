# SPDX-License-Identifier: Apache-2.0
# Runtime-compiled kernels (docs/runtime-kernels.md, src/runtime): the compilers and include
# directories recorded for them, and libcrypto for the SHA-256 of their on-disk cache.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
target_link_libraries(devctx PRIVATE OpenSSL::Crypto)
# dlopen/dladdr for the kernels' shared objects (part of libc from glibc 2.34; -ldl before).
target_link_libraries(devctx PRIVATE ${CMAKE_DL_LIBS})
if(DEVCTX_ENABLE_CUDA)
  set(_devctx_rt_nvcc "${CMAKE_CUDA_COMPILER}")
else()
  set(_devctx_rt_nvcc "nvcc")
endif()
configure_file(${PROJECT_SOURCE_DIR}/src/runtime/devctx_runtime_config.hpp.in
               ${PROJECT_BINARY_DIR}/generated/devctx_runtime_config.hpp @ONLY)
target_include_directories(devctx PRIVATE $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>)
unset(_devctx_rt_nvcc)
