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
# NVRTC, the default compiler of runtime-compiled CUDA kernels (src/backends/cuda/nvrtc_compiler.cpp):
# loaded with dlopen when first used, not linked, so that libdevctx (and the Python module) loads
# where the toolkit's libnvrtc is absent; a kernel compile there is Error(not_available) saying what
# to install. Recorded: the toolkit's library (its real file), the soname to look for otherwise,
# and the include directories holding libcu++ (cuda/std/...; include/cccl from CUDA 13).
set(_devctx_rt_nvrtc_library "")
set(_devctx_rt_nvrtc_soname "libnvrtc.so")
set(_devctx_rt_cuda_include "")
if(DEVCTX_ENABLE_CUDA)
  target_sources(devctx PRIVATE src/backends/cuda/nvrtc_compiler.cpp)
  set(_devctx_rt_nvrtc_soname "libnvrtc.so.${CUDAToolkit_VERSION_MAJOR}")
  set(_devctx_nvrtc_location "")
  if(TARGET CUDA::nvrtc)
    get_target_property(_devctx_nvrtc_location CUDA::nvrtc LOCATION)
  endif()
  if(NOT _devctx_nvrtc_location AND EXISTS "${CUDAToolkit_LIBRARY_DIR}/${_devctx_rt_nvrtc_soname}")
    set(_devctx_nvrtc_location "${CUDAToolkit_LIBRARY_DIR}/${_devctx_rt_nvrtc_soname}")
  endif()
  if(_devctx_nvrtc_location)
    get_filename_component(_devctx_rt_nvrtc_library "${_devctx_nvrtc_location}" REALPATH)
  else()
    message(STATUS "devctx: the toolkit's libnvrtc was not found: runtime-compiled CUDA kernels look for "
                   "${_devctx_rt_nvrtc_soname} on the loader's path (or DEVCTX_NVRTC)")
  endif()
  foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    if(EXISTS "${dir}/cccl/cuda/std/type_traits")
      list(APPEND _devctx_rt_cuda_include "${dir}/cccl")
    elseif(EXISTS "${dir}/cuda/std/type_traits")
      list(APPEND _devctx_rt_cuda_include "${dir}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _devctx_rt_cuda_include)
  if(_devctx_rt_cuda_include STREQUAL "")
    message(WARNING "devctx: no libcu++ (cuda/std/type_traits) under ${CUDAToolkit_INCLUDE_DIRS}: NVRTC cannot "
                    "compile runtime kernels with devctx's headers; use DEVCTX_RT_CUDA_COMPILER=nvcc")
  endif()
  string(REPLACE ";" ":" _devctx_rt_cuda_include "${_devctx_rt_cuda_include}")
  message(STATUS "devctx: runtime-compiled CUDA kernels: NVRTC ${_devctx_rt_nvrtc_library} (dlopen), libcu++ from "
                 "${_devctx_rt_cuda_include}; nvcc ${_devctx_rt_nvcc} as the fallback (DEVCTX_RT_CUDA_COMPILER=nvcc)")
else()
  target_sources(devctx PRIVATE src/backends/cuda/nvrtc_absent.cpp)
endif()
set(_devctx_rt_config_in "${PROJECT_SOURCE_DIR}/src/runtime/devctx_runtime_config.hpp.in")
set(_devctx_rt_config_out "${PROJECT_BINARY_DIR}/generated/devctx_runtime_config.hpp")
target_include_directories(devctx PRIVATE $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>)

# The fission translator for runtime-compiled CPU sources (src/runtime/fission.cpp): the one the
# build found (cmake/devctxFission.cmake decides once per configure run); in a CUDA build, whose
# kernel files nvcc compiles untranslated, the one _devctx_fission_find finds, since runtime CPU
# sources are compiled by the host compiler there too. DEVCTX_FISSION=OFF records none. Written at
# the end of this directory, when the target's DEVCTX_CUDA property the decision reads is set.
# The target property DEVCTX_RT_FISSION says whether one was recorded (the tests read it).
function(_devctx_rt_write_config)
  _devctx_fission_decide()
  set(_devctx_rt_fission_python "")
  set(_devctx_rt_fission_libclang "")
  set(_devctx_rt_fission_resource "")
  set(why "${DEVCTX_FISSION_WHY}")
  if(DEVCTX_FISSION_ON)
    get_property(_devctx_rt_fission_python GLOBAL PROPERTY DEVCTX_FISSION_PYTHON_USED)
    get_property(_devctx_rt_fission_resource GLOBAL PROPERTY DEVCTX_FISSION_RESOURCE_USED)
    execute_process(COMMAND "${_devctx_rt_fission_python}" -c "import importlib.metadata as m; print(m.version('libclang'))"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE _devctx_rt_fission_libclang ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
    if(NOT rc EQUAL 0)
      set(_devctx_rt_fission_libclang "unknown")
    endif()
  elseif(DEVCTX_ENABLE_CUDA AND NOT DEVCTX_FISSION STREQUAL "OFF" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    _devctx_fission_find(python libclang resource)
    if(python STREQUAL "")
      set(why "no Python with the libclang bindings was found (scripts/setup.sh makes one)")
    elseif(resource STREQUAL "" OR NOT EXISTS "${resource}/include")
      set(why "no clang builtin headers were found (install clang)")
    else()
      set(_devctx_rt_fission_python "${python}")
      set(_devctx_rt_fission_libclang "${libclang}")
      set(_devctx_rt_fission_resource "${resource}")
      message(STATUS "devctx: fission translator for runtime-compiled CPU kernels: libclang ${libclang} via ${python}, "
                     "builtin headers from ${resource}")
    endif()
  endif()
  string(REGEX REPLACE "[^A-Za-z0-9 _.,:=/()+-]" " " _devctx_rt_fission_why "${why}")
  if(NOT _devctx_rt_fission_python STREQUAL "")
    set(_devctx_rt_fission_why "")
  endif()
  if(_devctx_rt_fission_python STREQUAL "")
    set_target_properties(devctx PROPERTIES DEVCTX_RT_FISSION 0)
  else()
    set_target_properties(devctx PROPERTIES DEVCTX_RT_FISSION 1)
  endif()
  set(_devctx_rt_fission_tool_install "${CMAKE_INSTALL_FULL_LIBDIR}/cmake/devctx/fission/devctx_fission.py")
  configure_file("${_devctx_rt_config_in}" "${_devctx_rt_config_out}" @ONLY)
endfunction()
cmake_language(DEFER CALL _devctx_rt_write_config)
