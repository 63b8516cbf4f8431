// SPDX-License-Identifier: Apache-2.0
// devctx/launch.hpp - grid and block dimensions and the launch configuration: devctx::Dim3,
// devctx::Idx3 and devctx::LaunchConfig (defined in detail/base/launch_types.hpp, below every
// public header, since the seam and the CPU executor's state hold them).
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/detail/base/launch_types.hpp>
