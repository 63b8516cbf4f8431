# SPDX-License-Identifier: Apache-2.0
# The consumer projects' targets, the same whichever route brought devctx in (each route's
# CMakeLists.txt includes this after devctx::devctx exists):
#   app        kernels (devctx_add_kernels; inside a function with CONSUMER_KERNELS_IN_FUNCTION),
#              run on the default device
#   host_only  no kernels: plain C++ against devctx::devctx
#   mpi_app    with the component `mpi` in CONSUMER_COMPONENTS: Communicator::create_mpi through
#              devctx::mpi (a singleton MPI rank)
#   plugin, loader and tls_filler_<bytes>   with CONSUMER_DLOPEN: a module with kernels loaded
#              by dlopen after the static TLS surplus is used up (see loader.cpp)
# and reports in one line what the route decided, for run.sh to check.
set(_consumer_common ${CMAKE_CURRENT_LIST_DIR})

add_executable(app ${_consumer_common}/app.cpp)
if(CONSUMER_KERNELS_IN_FUNCTION)  # as projects that wrap their targets' definitions do
  function(consumer_add_kernels target)
    devctx_add_kernels(${target} ${ARGN})
  endfunction()
  consumer_add_kernels(app ${_consumer_common}/app.cpp)
else()
  devctx_add_kernels(app ${_consumer_common}/app.cpp)
endif()
target_link_libraries(app PRIVATE devctx::devctx)
if(DEFINED devctx_VERSION)
  target_compile_definitions(app PRIVATE CONSUMER_EXPECTED_VERSION="${devctx_VERSION}")
endif()

add_executable(host_only ${_consumer_common}/host_only.cpp)
target_link_libraries(host_only PRIVATE devctx::devctx)

set(_consumer_mpi_app OFF)
if("mpi" IN_LIST CONSUMER_COMPONENTS)
  add_executable(mpi_app)
  devctx_add_kernels(mpi_app ${_consumer_common}/mpi_app.cpp)
  target_link_libraries(mpi_app PRIVATE devctx::mpi)
  set(_consumer_mpi_app ON)
endif()
set(_consumer_mpi_target OFF)
if(TARGET devctx::mpi)
  set(_consumer_mpi_target ON)
endif()

if(CONSUMER_DLOPEN)
  add_library(plugin MODULE)
  devctx_add_kernels(plugin ${_consumer_common}/plugin.cpp)
  target_link_libraries(plugin PRIVATE devctx::devctx)
  add_executable(loader ${_consumer_common}/loader.cpp)
  target_link_libraries(loader PRIVATE ${CMAKE_DL_LIBS})
  foreach(bytes 4096 2048 1024 512 256 128 64 32 16)
    add_library(tls_filler_${bytes} MODULE ${_consumer_common}/tls_filler.cpp)
    target_compile_definitions(tls_filler_${bytes} PRIVATE FILLER_BYTES=${bytes})
    add_dependencies(loader tls_filler_${bytes})
  endforeach()
  add_dependencies(loader plugin)
endif()

get_target_property(_consumer_app_architectures app CUDA_ARCHITECTURES)
get_target_property(_consumer_devctx_type devctx::devctx TYPE)
message(STATUS "consumer: devctx ${devctx_VERSION} ${_consumer_devctx_type} shared=${devctx_SHARED} cuda=${devctx_CUDA} "
               "cuda_FOUND=${devctx_cuda_FOUND} architectures='${devctx_CUDA_ARCHITECTURES}' "
               "app-architectures='${_consumer_app_architectures}' mpi=${devctx_MPI} mpi_FOUND=${devctx_mpi_FOUND} "
               "mpi-target=${_consumer_mpi_target} mpi_app=${_consumer_mpi_app} MPI_FOUND=${MPI_FOUND}")
