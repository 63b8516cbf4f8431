# SPDX-License-Identifier: Apache-2.0
# devctx's install rules (DEVCTX_INSTALL, ON when devctx is the top-level project), in the
# GNUInstallDirs layout Debian uses (lib/<multiarch> when the prefix is /usr):
#   <libdir>/libdevctx.a, or libdevctx.so.X.Y.Z and its SONAME link   (component devctx_runtime)
#   <libdir>/libdevctx.so (the link to build against), <includedir>/devctx/,
#   <libdir>/cmake/devctx/ (find_package), <libdir>/pkgconfig/devctx.pc (component devctx_development)
#   libdevctx_mpi (devctx::mpi, Communicator::create_mpi) and devctx-mpi.pc beside libdevctx and
#   devctx.pc, in the same components; only they refer to MPI (cmake/devctxMpi.cmake)
#   <docdir> = share/doc/devctx: LICENSE, README.md, CHANGELOG.md      (component devctx_runtime)
# The package files are relocatable: the CMake ones find their prefix from their own location,
# devctx.pc through ${pcfiledir}.
include(CMakePackageConfigHelpers)

set(_devctx_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/devctx)
install(TARGETS devctx EXPORT devctxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devctx_development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devctx_runtime NAMELINK_COMPONENT devctx_development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT devctx_runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/devctx DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devctx_development)
install(EXPORT devctxTargets NAMESPACE devctx:: DESTINATION ${_devctx_cmake_dir} COMPONENT devctx_development)
# devctx::mpi in a file of its own, which devctxConfig.cmake reads only for the component `mpi`.
install(TARGETS devctx_mpi EXPORT devctxMpiTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devctx_development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devctx_runtime NAMELINK_COMPONENT devctx_development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT devctx_runtime)
install(EXPORT devctxMpiTargets NAMESPACE devctx:: DESTINATION ${_devctx_cmake_dir} COMPONENT devctx_development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/devctxConfig.cmake.in ${PROJECT_BINARY_DIR}/devctxConfig.cmake
  INSTALL_DESTINATION ${_devctx_cmake_dir} NO_SET_AND_CHECK_MACRO NO_CHECK_REQUIRED_COMPONENTS_MACRO)
install(FILES
    ${PROJECT_BINARY_DIR}/devctxConfig.cmake
    ${PROJECT_BINARY_DIR}/devctxConfigVersion.cmake
    ${PROJECT_BINARY_DIR}/devctxBuildInfo.cmake
    ${PROJECT_SOURCE_DIR}/cmake/devctxComponents.cmake
    ${PROJECT_SOURCE_DIR}/cmake/devctxHelpers.cmake
    ${PROJECT_SOURCE_DIR}/cmake/devctxFission.cmake
    ${PROJECT_SOURCE_DIR}/cmake/devctxFissionSummary.cmake
  DESTINATION ${_devctx_cmake_dir} COMPONENT devctx_development)
# The fission translator, which devctx_add_kernels runs for find_package(devctx) users too.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/fission/devctx_fission.py DESTINATION ${_devctx_cmake_dir}/fission
  COMPONENT devctx_development)

# ---- pkg-config ---------------------------------------------------------------------------------
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(DEVCTX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(DEVCTX_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(DEVCTX_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _devctx_pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" _devctx_pc_up "${_devctx_pc_up}")
  set(DEVCTX_PC_PREFIX "\${pcfiledir}/${_devctx_pc_up}")
  set(DEVCTX_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(DEVCTX_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(_devctx_pc_deps -pthread)
if(DEVCTX_ENABLE_CUDA)
  set(DEVCTX_PC_CUDA yes)
  set(DEVCTX_PC_CUDA_ARCHITECTURES "${DEVCTX_CUDA_ARCHITECTURES}")
  if(DEVCTX_SHARED)
    list(PREPEND _devctx_pc_deps "-L${CUDAToolkit_LIBRARY_DIR}" -lcudart)
  else()
    list(PREPEND _devctx_pc_deps "-L${CUDAToolkit_LIBRARY_DIR}" -lcudart_static -ldl -lrt)
  endif()
else()
  set(DEVCTX_PC_CUDA no)
  set(DEVCTX_PC_CUDA_ARCHITECTURES "")
endif()
# libcrypto: the SHA-256 of runtime-compiled kernels' cache (cmake/devctxRuntime.cmake).
list(PREPEND _devctx_pc_deps -lcrypto)
if(DEVCTX_WITH_NCCL)  # communicators of GPUs (cmake/devctxNccl.cmake)
  list(PREPEND _devctx_pc_deps ${DEVCTX_NCCL_LIBRARY})
endif()
# A static libdevctx needs its dependencies on every link line; a shared one carries them itself.
if(DEVCTX_SHARED)
  set(DEVCTX_PC_LIBS "")
  list(JOIN _devctx_pc_deps " " DEVCTX_PC_LIBS_PRIVATE)
else()
  list(JOIN _devctx_pc_deps " " DEVCTX_PC_LIBS)
  set(DEVCTX_PC_LIBS_PRIVATE "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/devctx.pc.in ${PROJECT_BINARY_DIR}/devctx.pc @ONLY)
# devctx-mpi.pc: libdevctx_mpi, and for a static one MPI's libraries (cmake/devctxMpi.cmake).
set(DEVCTX_MPI_PC_LIBS "")
set(DEVCTX_MPI_PC_LIBS_PRIVATE "")
if(DEVCTX_WITH_MPI)
  list(JOIN MPI_CXX_LIBRARIES " " _devctx_mpi_libs)
  if(DEVCTX_SHARED)
    set(DEVCTX_MPI_PC_LIBS_PRIVATE "${_devctx_mpi_libs}")
  else()
    set(DEVCTX_MPI_PC_LIBS "${_devctx_mpi_libs}")
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/devctx-mpi.pc.in ${PROJECT_BINARY_DIR}/devctx-mpi.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/devctx.pc ${PROJECT_BINARY_DIR}/devctx-mpi.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT devctx_development)

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT devctx_runtime)
