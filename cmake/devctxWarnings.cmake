# SPDX-License-Identifier: Apache-2.0
# Warnings for devctx's own targets (never pushed onto users): the C++ compiler's, and for CUDA
# sources nvcc's own and those of the host compiler that nvcc runs. DEVCTX_WARNINGS_AS_ERRORS
# makes every one of them an error.

# devctx_target_warnings(<target>): devctx's warning set on one target (calling it twice is harmless:
# CMake drops repeated options).
function(devctx_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${DEVCTX_WARNINGS_AS_ERRORS}>>:-Werror>
    # nvcc's host pass: the host compiler sees nvcc's generated code too, which -Wpedantic rejects
    # throughout ("style of line directive is a GCC extension"): the others only.
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow,-Wnon-virtual-dtor>
    "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${DEVCTX_WARNINGS_AS_ERRORS}>>:-Xcompiler=-Werror;SHELL:-Werror all-warnings>")
endfunction()

# devctx_warnings_everywhere(<directory>): devctx_target_warnings on every target that is built from
# source in <directory> and the directories below it (the library, tests, examples, bench and
# tools): a target added later cannot be left out. Called once, at the end of the top-level
# CMakeLists.txt.
function(devctx_warnings_everywhere directory)
  get_property(targets DIRECTORY "${directory}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      devctx_target_warnings(${target})
    endif()
  endforeach()
  get_property(subdirectories DIRECTORY "${directory}" PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    devctx_warnings_everywhere("${subdirectory}")
  endforeach()
endfunction()
