# SPDX-License-Identifier: Apache-2.0
# Reads devctx's version from include/devctx/version.hpp, the one place it is written, into
# DEVCTX_VERSION ("MAJOR.MINOR.PATCH") for project(VERSION). Included before project().
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../include/devctx/version.hpp" _devctx_version_lines
     REGEX "^#define DEVCTX_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+$")
foreach(_devctx_part MAJOR MINOR PATCH)
  set(_devctx_${_devctx_part})
  foreach(_devctx_line IN LISTS _devctx_version_lines)
    if(_devctx_line MATCHES "^#define DEVCTX_VERSION_${_devctx_part} +([0-9]+)$")
      set(_devctx_${_devctx_part} ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(_devctx_${_devctx_part} STREQUAL "")
    message(FATAL_ERROR "devctx: include/devctx/version.hpp defines no DEVCTX_VERSION_${_devctx_part}")
  endif()
endforeach()
set(DEVCTX_VERSION "${_devctx_MAJOR}.${_devctx_MINOR}.${_devctx_PATCH}")
unset(_devctx_version_lines)
unset(_devctx_line)
unset(_devctx_part)
unset(_devctx_MAJOR)
unset(_devctx_MINOR)
unset(_devctx_PATCH)
