# SPDX-License-Identifier: Apache-2.0
# When devctx is built inside another project (add_subdirectory, FetchContent), a later
# find_package(devctx [version] [COMPONENTS ...]) anywhere in that project finds this devctx:
# CMake's find_package redirect directory gets its version file and the build's facts (the
# files FetchContent_MakeAvailable leaves to the dependency), and a config file that reads them
# when FetchContent has not written one.
set(_devctx_redirects "${CMAKE_FIND_PACKAGE_REDIRECTS_DIR}")
write_basic_package_version_file(${_devctx_redirects}/devctx-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
file(WRITE ${_devctx_redirects}/devctx-extra.cmake
  "# Written by devctx's cmake/devctxRedirect.cmake.\n"
  "include(\"${PROJECT_BINARY_DIR}/devctxBuildInfo.cmake\")\n"
  "include(\"${PROJECT_SOURCE_DIR}/cmake/devctxComponents.cmake\")\n")
if(NOT EXISTS ${_devctx_redirects}/devctx-config.cmake AND NOT EXISTS ${_devctx_redirects}/devctxConfig.cmake)
  file(WRITE ${_devctx_redirects}/devctx-config.cmake
    "# Written by devctx's cmake/devctxRedirect.cmake: devctx is built in this project.\n"
    "include(\"\${CMAKE_CURRENT_LIST_DIR}/devctx-extra.cmake\")\n")
endif()
unset(_devctx_redirects)
