# SPDX-License-Identifier: Apache-2.0
# The fission translator's build side (docs/cpu-backend.md, "Translated kernels";
# docs/internals.md, "The fission translator"): decides whether it runs, and adds to a target the
# translated copy of a kernel file in place of the file.
#
#   DEVCTX_FISSION=AUTO|ON|OFF   (cache, default AUTO) AUTO: on when a Python with libclang's
#                                bindings and a clang's builtin headers are found; ON: the same,
#                                but configuring stops when they are not; OFF: never.
#   DEVCTX_FISSION_PYTHON        a Python with `import clang.cindex` (PyPI libclang==18.1.1);
#                                found by default in <build>/devctx-fission-venv, then
#                                ~/.cache/devctx/fission-venv (scripts/setup.sh makes it), then the
#                                system's python3.
#   DEVCTX_FISSION_RESOURCE_DIR  a clang's -resource-dir (its builtin headers); by default asked
#                                of the newest clang++ found.
#
# The translator never fails a build: a file it cannot translate is compiled as written.

# This file's directory, for the functions below whichever directory scope calls them (devctx's
# own, a parent project's after add_subdirectory, or cmake_language(DEFER)'s).
set_property(GLOBAL PROPERTY DEVCTX_FISSION_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# Sets <python> (a Python with libclang's bindings, or ""), <libclang> (its version) and
# <resource> (a clang's builtin headers, or "") in the caller's scope: DEVCTX_FISSION_PYTHON and
# DEVCTX_FISSION_RESOURCE_DIR when set, else found. For the build's decision below, and for the
# translator runtime-compiled CPU kernels use (cmake/devctxRuntime.cmake), in CUDA builds too.
function(_devctx_fission_find out_python out_libclang out_resource)
  # A Python with libclang's bindings.
  set(pythons "")
  if(DEVCTX_FISSION_PYTHON)
    list(APPEND pythons "${DEVCTX_FISSION_PYTHON}")
  else()
    list(APPEND pythons "${CMAKE_BINARY_DIR}/devctx-fission-venv/bin/python3" "$ENV{HOME}/.cache/devctx/fission-venv/bin/python3")
    find_program(_devctx_fission_python3 NAMES python3)
    if(_devctx_fission_python3)
      list(APPEND pythons "${_devctx_fission_python3}")
    endif()
  endif()
  set(python "")
  set(libclang "")
  foreach(p IN LISTS pythons)
    if(NOT EXISTS "${p}")
      continue()
    endif()
    execute_process(COMMAND "${p}" -c "import clang.cindex as c; c.Index.create(); import importlib.metadata as m; print(m.version('libclang'))"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
    if(rc EQUAL 0)
      set(python "${p}")
      set(libclang "${out}")
      break()
    endif()
  endforeach()
  # A clang's builtin headers (the wheel has none).
  set(resource "${DEVCTX_FISSION_RESOURCE_DIR}")
  if(resource STREQUAL "")
    find_program(_devctx_fission_clang NAMES clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14 clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
    if(_devctx_fission_clang)
      execute_process(COMMAND "${_devctx_fission_clang}" -print-resource-dir RESULT_VARIABLE rc OUTPUT_VARIABLE resource
                      ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
      if(NOT rc EQUAL 0)
        set(resource "")
      endif()
    endif()
  endif()
  set(${out_python} "${python}" PARENT_SCOPE)
  set(${out_libclang} "${libclang}" PARENT_SCOPE)
  set(${out_resource} "${resource}" PARENT_SCOPE)
endfunction()

# Sets DEVCTX_FISSION_ON (TRUE/FALSE) and DEVCTX_FISSION_WHY in the caller's scope, once per
# configure run, and prints the decision.
function(_devctx_fission_decide)
  get_property(decided GLOBAL PROPERTY DEVCTX_FISSION_DECIDED SET)
  if(decided)
    get_property(enabled GLOBAL PROPERTY DEVCTX_FISSION_ON)
    get_property(why GLOBAL PROPERTY DEVCTX_FISSION_WHY)
    set(DEVCTX_FISSION_ON "${enabled}" PARENT_SCOPE)
    set(DEVCTX_FISSION_WHY "${why}" PARENT_SCOPE)
    return()
  endif()
  set(DEVCTX_FISSION "AUTO" CACHE STRING "Translate CUDA-style barrier kernels into block-level twins for the CPU backend (AUTO, ON, OFF)")
  set_property(CACHE DEVCTX_FISSION PROPERTY STRINGS AUTO ON OFF)
  set(enabled FALSE)
  set(why "")
  set(tool "")
  get_property(_devctx_fission_dir GLOBAL PROPERTY DEVCTX_FISSION_CMAKE_DIR)
  foreach(candidate "${_devctx_fission_dir}/../tools/fission/devctx_fission.py" "${_devctx_fission_dir}/fission/devctx_fission.py")
    if(EXISTS "${candidate}")
      get_filename_component(tool "${candidate}" ABSOLUTE)
      break()
    endif()
  endforeach()
  get_target_property(cuda devctx::devctx DEVCTX_CUDA)
  if(DEVCTX_FISSION STREQUAL "OFF")
    set(why "DEVCTX_FISSION=OFF")
  elseif(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    set(why "the C++ compiler is ${CMAKE_CXX_COMPILER_ID}; the translated code is written for g++ and clang")
  elseif(tool STREQUAL "")
    set(why "tools/fission/devctx_fission.py is missing")
  else()
    _devctx_fission_find(python libclang resource)
    if(python STREQUAL "")
      set(why "no Python with the libclang bindings was found (run scripts/setup.sh, which makes ~/.cache/devctx/fission-venv with PyPI's libclang==18.1.1, or set DEVCTX_FISSION_PYTHON)")
    elseif(resource STREQUAL "" OR NOT EXISTS "${resource}/include")
      set(why "no clang builtin headers were found (install clang, or set DEVCTX_FISSION_RESOURCE_DIR)")
    else()
      set(enabled TRUE)
      set(why "libclang ${libclang} via ${python}, builtin headers from ${resource}")
      set_property(GLOBAL PROPERTY DEVCTX_FISSION_PYTHON_USED "${python}")
      set_property(GLOBAL PROPERTY DEVCTX_FISSION_RESOURCE_USED "${resource}")
      set_property(GLOBAL PROPERTY DEVCTX_FISSION_TOOL "${tool}")
    endif()
  endif()
  if(enabled)
    set(where "")
    if(cuda)
      # nvcc compiles the translated copies: the twins in its host pass only (devctx_fission.py --nvcc).
      set(where " (kernel files compiled by nvcc: the twins are in nvcc's host pass, the GPU code is the file's own)")
    endif()
    message(STATUS "devctx: fission translator on (${why}): CUDA-style barrier kernels get block-level twins on the CPU backend${where}")
  elseif(DEVCTX_FISSION STREQUAL "ON")
    message(FATAL_ERROR "devctx: DEVCTX_FISSION=ON, but the fission translator cannot run: ${why}")
  else()
    message(STATUS "devctx: fission translator off: ${why}; CUDA-style barrier kernels run on fibers on the CPU backend")
  endif()
  set_property(GLOBAL PROPERTY DEVCTX_FISSION_DECIDED TRUE)
  set_property(GLOBAL PROPERTY DEVCTX_FISSION_ON "${enabled}")
  set_property(GLOBAL PROPERTY DEVCTX_FISSION_WHY "${why}")
  set(DEVCTX_FISSION_ON "${enabled}" PARENT_SCOPE)
  set(DEVCTX_FISSION_WHY "${why}" PARENT_SCOPE)
endfunction()

# _devctx_fission_sources(<target> <out-var> <source>...): the sources to compile for <target>:
# each kernel file's translated copy when the translator is on, else the files themselves.
function(_devctx_fission_sources target out)
  _devctx_fission_decide()
  if(NOT DEVCTX_FISSION_ON)
    # The program says why at run time: DEVCTX_TRACE names it for kernels left on fibers
    # (fission.hpp's fission_off_noted). Only characters every generator and shell pass as is.
    string(REGEX REPLACE "[^A-Za-z0-9 _.,:=/()+-]" " " why "${DEVCTX_FISSION_WHY}")
    set_property(SOURCE ${ARGN} TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_DEFINITIONS
      "DEVCTX_FISSION_OFF_REASON=\"the translator was off in this build: ${why}\"")
    set(${out} ${ARGN} PARENT_SCOPE)
    return()
  endif()
  get_property(python GLOBAL PROPERTY DEVCTX_FISSION_PYTHON_USED)
  get_property(resource GLOBAL PROPERTY DEVCTX_FISSION_RESOURCE_USED)
  get_property(tool GLOBAL PROPERTY DEVCTX_FISSION_TOOL)
  set(includes "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defines "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  # In a CUDA build nvcc compiles the copy: the translator parses it as nvcc's host pass sees it
  # (__CUDACC__ and nvcc's version macros defined, __CUDA_ARCH__ not), and everything it adds is
  # under #if !defined(__CUDA_ARCH__), so that the device pass compiles the file's own kernels.
  get_target_property(cuda devctx::devctx DEVCTX_CUDA)
  set(nvcc "")
  if(cuda)
    set(nvcc --nvcc "${CMAKE_CUDA_COMPILER_VERSION}")
  endif()
  set(result "")
  foreach(src IN LISTS ARGN)
    get_filename_component(abs "${src}" ABSOLUTE)
    get_filename_component(name "${src}" NAME)
    get_filename_component(dir "${abs}" DIRECTORY)
    set(gen "${CMAKE_CURRENT_BINARY_DIR}/devctx_fission/${target}/${name}")
    add_custom_command(OUTPUT "${gen}"
      COMMAND "${python}" "${tool}" --input "${abs}" --output "${gen}" --summary "${gen}.summary"
              --depfile "${gen}.d" --resource-dir "${resource}" ${nvcc} --
              "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
              "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
      DEPENDS "${abs}" "${tool}"
      DEPFILE "${gen}.d"
      COMMENT "devctx fission: translating ${name} for ${target}"
      COMMAND_EXPAND_LISTS VERBATIM)
    # Quoted includes of the kernel file resolve from its own directory, as before (nvcc has no
    # -iquote of its own; given to its host compiler, it reaches the preprocessing of both passes).
    if(cuda AND NOT dir MATCHES ",")
      set_property(SOURCE "${gen}" TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_OPTIONS "-Xcompiler=-iquote,${dir}")
    elseif(cuda)  # -Xcompiler splits at commas
      set_property(SOURCE "${gen}" TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_OPTIONS "-I${dir}")
    else()
      set_property(SOURCE "${gen}" TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_OPTIONS "-iquote" "${dir}")
    endif()
    list(APPEND result "${gen}")
    set_property(TARGET ${target} APPEND PROPERTY DEVCTX_FISSION_SUMMARIES "${gen}.summary")
  endforeach()
  # The files themselves, when the target lists them too (add_executable(app main.cpp k.cpp)),
  # are not compiled for it: their copies are. Other targets keep them.
  get_target_property(listed ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  if(listed)
    set(kept "")
    foreach(item IN LISTS listed)
      set(drop FALSE)
      if(NOT item MATCHES "\\$<")
        get_filename_component(item_abs "${item}" ABSOLUTE BASE_DIR "${source_dir}")
        foreach(src IN LISTS ARGN)
          get_filename_component(abs "${src}" ABSOLUTE)
          if(item_abs STREQUAL abs)
            set(drop TRUE)
          endif()
        endforeach()
      endif()
      if(NOT drop)
        list(APPEND kept "${item}")
      endif()
    endforeach()
    set_property(TARGET ${target} PROPERTY SOURCES "${kept}")
  endif()
  get_target_property(has_summary ${target} DEVCTX_FISSION_SUMMARY_STEP)
  if(NOT has_summary)
    set_target_properties(${target} PROPERTIES DEVCTX_FISSION_SUMMARY_STEP TRUE)
    get_property(_devctx_fission_dir GLOBAL PROPERTY DEVCTX_FISSION_CMAKE_DIR)
    set(script "${_devctx_fission_dir}/devctxFissionSummary.cmake")
    if(NOT EXISTS "${script}")
      set(script "${_devctx_fission_dir}/fission/devctxFissionSummary.cmake")
    endif()
    add_custom_command(TARGET ${target} PRE_LINK
      COMMAND "${CMAKE_COMMAND}" "-DTARGET=${target}"
              "-DSUMMARIES=$<TARGET_PROPERTY:${target},DEVCTX_FISSION_SUMMARIES>" -P "${script}"
      VERBATIM)
  endif()
  set(${out} ${result} PARENT_SCOPE)
endfunction()
