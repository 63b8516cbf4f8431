// SPDX-License-Identifier: Apache-2.0
// devctx/version.hpp - devctx's version, written here and nowhere else: CMakeLists.txt reads
// these three numbers for project(VERSION), so the CMake package version, the shared library's
// version, the pkg-config file and `devctx --version` all follow them (ctest version.agree
// checks that they do).
#pragma once

#define DEVCTX_VERSION_MAJOR 0
#define DEVCTX_VERSION_MINOR 1
#define DEVCTX_VERSION_PATCH 0

#define DEVCTX_DETAIL_VERSION_TEXT(x) #x
#define DEVCTX_DETAIL_VERSION_STRING(major, minor, patch) \
  DEVCTX_DETAIL_VERSION_TEXT(major) "." DEVCTX_DETAIL_VERSION_TEXT(minor) "." DEVCTX_DETAIL_VERSION_TEXT(patch)

/// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
#define DEVCTX_VERSION_STRING \
  DEVCTX_DETAIL_VERSION_STRING(DEVCTX_VERSION_MAJOR, DEVCTX_VERSION_MINOR, DEVCTX_VERSION_PATCH)

/// One number for preprocessor comparisons: MAJOR * 10000 + MINOR * 100 + PATCH.
#define DEVCTX_VERSION (DEVCTX_VERSION_MAJOR * 10000 + DEVCTX_VERSION_MINOR * 100 + DEVCTX_VERSION_PATCH)
