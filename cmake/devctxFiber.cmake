# SPDX-License-Identifier: Apache-2.0
# cmake/devctxFiber.cmake - chooses how the CPU backend switches fibers (DEVCTX_FIBER) and adds
# that implementation to a target.
#
#   DEVCTX_FIBER=auto   (default) devctx's assembly on x86-64 and AArch64 Linux, else Boost.Context
#   DEVCTX_FIBER=asm    devctx's assembly; an error on any other target
#   DEVCTX_FIBER=boost  Boost.Context's fcontext (Debian: libboost-context-dev), on any target
#
# Sets DEVCTX_FIBER_IMPL to X86_64, AARCH64 or BOOST: src/backends/cpu/fiber_switch.hpp expects
# DEVCTX_FIBER_<impl> defined on every target that includes it.
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

set(DEVCTX_FIBER "auto" CACHE STRING
  "How the CPU backend switches fibers: auto, asm (x86-64 or AArch64 Linux) or boost (Boost.Context)")
set_property(CACHE DEVCTX_FIBER PROPERTY STRINGS auto asm boost)

# The target as the compiler sees it (a cross compiler, -m32, ...), not the build machine.
check_cxx_source_compiles("
#if !defined(__x86_64__) || !defined(__linux__) || !defined(__ELF__)
#error not x86-64 Linux
#endif
int main() { return 0; }" DEVCTX_TARGET_X86_64_LINUX)
check_cxx_source_compiles("
#if !defined(__aarch64__) || !defined(__linux__) || !defined(__ELF__)
#error not AArch64 Linux
#endif
int main() { return 0; }" DEVCTX_TARGET_AARCH64_LINUX)

if(DEVCTX_TARGET_X86_64_LINUX)
  set(_devctx_fiber_asm X86_64)
elseif(DEVCTX_TARGET_AARCH64_LINUX)
  set(_devctx_fiber_asm AARCH64)
else()
  set(_devctx_fiber_asm "")
endif()

if(DEVCTX_FIBER STREQUAL "auto")
  if(_devctx_fiber_asm)
    set(DEVCTX_FIBER_IMPL ${_devctx_fiber_asm})
  else()
    set(DEVCTX_FIBER_IMPL BOOST)
  endif()
elseif(DEVCTX_FIBER STREQUAL "asm")
  if(NOT _devctx_fiber_asm)
    message(FATAL_ERROR "DEVCTX_FIBER=asm: devctx has fiber-switch assembly for x86-64 and AArch64 Linux only; "
      "this compiler targets neither. Use -DDEVCTX_FIBER=boost (Boost.Context) or auto.")
  endif()
  set(DEVCTX_FIBER_IMPL ${_devctx_fiber_asm})
elseif(DEVCTX_FIBER STREQUAL "boost")
  set(DEVCTX_FIBER_IMPL BOOST)
else()
  message(FATAL_ERROR "DEVCTX_FIBER must be auto, asm or boost, not '${DEVCTX_FIBER}'")
endif()

if(DEVCTX_FIBER_IMPL STREQUAL "BOOST")
  find_package(Boost 1.65 CONFIG COMPONENTS context)
  if(NOT TARGET Boost::context)
    if(DEVCTX_FIBER STREQUAL "boost")
      set(_why "DEVCTX_FIBER=boost was chosen")
    else()
      set(_why "devctx has no fiber-switch assembly for this target (only x86-64 and AArch64 Linux)")
    endif()
    message(FATAL_ERROR "The CPU backend's portable fiber switch needs Boost.Context, because ${_why}. "
      "Debian/Ubuntu: apt-get install libboost-context-dev (or point CMAKE_PREFIX_PATH at a Boost install).")
  endif()
endif()

# CET (-fcf-protection): the compiler marks objects IBT- and shadow-stack-compatible, and the
# program runs with shadow stacks only if every object is. No fiber switch here keeps a shadow
# stack per fiber (nor does Boost.Context's), so a fiber's returns would fault under one: the
# assembly's object is built unmarked (-fcf-protection=none), and programs that link devctx run
# without CET. Linking with -Wl,-z,cet-report=error therefore fails, naming that object.
check_cxx_source_compiles("
#if !defined(__CET__)
#error no CET
#endif
int main() { return 0; }" DEVCTX_COMPILER_EMITS_CET)
if(DEVCTX_COMPILER_EMITS_CET)
  message(STATUS "devctx: the compiler emits CET code (-fcf-protection), but devctx's fiber switches keep no "
    "shadow stack per fiber: the fiber switch is built without the CET marking, so programs linking devctx "
    "run without CET shadow stacks and indirect-branch tracking")
endif()

set(DEVCTX_FIBER_IMPL ${DEVCTX_FIBER_IMPL} CACHE INTERNAL "The fiber implementation devctx was configured with")
message(STATUS "devctx: CPU fibers switch with ${DEVCTX_FIBER_IMPL} (DEVCTX_FIBER=${DEVCTX_FIBER})")

set(_devctx_fiber_sources ${CMAKE_CURRENT_LIST_DIR}/../src/backends/cpu)

# Adds the configured implementation's sources and definitions to `target` (the devctx library).
function(devctx_add_fiber_sources target)
  set(_dir ${_devctx_fiber_sources})
  if(DEVCTX_FIBER_IMPL STREQUAL "X86_64")
    set(_impl ${_dir}/fiber_x86_64.cpp)
  elseif(DEVCTX_FIBER_IMPL STREQUAL "AARCH64")
    set(_impl ${_dir}/fiber_aarch64.cpp)
  else()
    set(_impl ${_dir}/fiber_boost.cpp)
    target_link_libraries(${target} PRIVATE Boost::context)
  endif()
  # fiber_annotated.cpp compiles to nothing unless a sanitizer is on.
  target_sources(${target} PRIVATE ${_impl} ${_dir}/fiber_annotated.cpp)
  target_compile_definitions(${target} PRIVATE DEVCTX_FIBER_${DEVCTX_FIBER_IMPL}=1)
  if(DEVCTX_COMPILER_EMITS_CET AND NOT DEVCTX_FIBER_IMPL STREQUAL "BOOST")
    set_source_files_properties(${_impl} TARGET_DIRECTORY ${target} PROPERTIES COMPILE_OPTIONS -fcf-protection=none)
  endif()
endfunction()
