# SPDX-License-Identifier: Apache-2.0
# Warnings for devctx's own targets (never pushed onto users).
function(devctx_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${DEVCTX_WARNINGS_AS_ERRORS}>>:-Werror>)
endfunction()
