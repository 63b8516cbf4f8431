# SPDX-License-Identifier: Apache-2.0
# tests/tools/fission_ptx_check.cmake - in a CUDA build with the fission translator on, the GPU
# code of a translated kernel file is the file's own (docs/internals.md, "The fission translator",
# nvcc): nvcc's device pass compiles the original file and its translated copy to the same PTX,
# byte for byte. Both are compiled under one path (nvcc names anonymous namespaces after the
# file's path), so nothing but their text differs. Needs no GPU.
#
#   cmake -DNVCC=<nvcc> -DORIGINAL=<file> -DTRANSLATED=<its copy> -DWORK=<dir> -DARCH=<e.g. 90>
#         "-DFLAGS=<-I...;-D...>" -P fission_ptx_check.cmake
foreach(v NVCC ORIGINAL TRANSLATED WORK)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "fission_ptx_check: ${v} is not set")
  endif()
endforeach()
file(READ "${TRANSLATED}" translated_text)
if(NOT translated_text MATCHES "__devctx_twin")
  message(FATAL_ERROR "fission_ptx_check: ${TRANSLATED} has no twin: the translator did not translate "
                      "${ORIGINAL} (see the build's 'devctx fission:' line), so this check would prove nothing")
endif()
get_filename_component(name "${ORIGINAL}" NAME)
get_filename_component(dir "${ORIGINAL}" DIRECTORY)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/src")
# The first architecture, as a virtual one: its PTX (nvcc's default for native, all, ...).
string(REGEX MATCH "[0-9]+" arch "${ARCH}")
set(arch_flag "")
if(NOT arch STREQUAL "")
  set(arch_flag "-arch=compute_${arch}")
endif()
set(ptx "")
foreach(which original translated)
  if(which STREQUAL "original")
    configure_file("${ORIGINAL}" "${WORK}/src/${name}" COPYONLY)
  else()
    configure_file("${TRANSLATED}" "${WORK}/src/${name}" COPYONLY)
  endif()
  execute_process(
    COMMAND "${NVCC}" -x cu --ptx -std=c++20 --expt-relaxed-constexpr -O2 -DNDEBUG ${arch_flag}
            "-Xcompiler=-iquote,${dir}" ${FLAGS} "${WORK}/src/${name}" -o "${WORK}/${which}.ptx"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fission_ptx_check: nvcc --ptx of the ${which} ${name} failed (${rc}):\n${err}")
  endif()
endforeach()
file(SHA256 "${WORK}/original.ptx" a)
file(SHA256 "${WORK}/translated.ptx" b)
file(SIZE "${WORK}/original.ptx" size)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "fission_ptx_check: the translated ${name} compiles to other GPU code than the file itself: "
                      "compare ${WORK}/original.ptx and ${WORK}/translated.ptx (everything the translator adds must be "
                      "under #if !defined(__CUDA_ARCH__))")
endif()
message(STATUS "fission_ptx_check: ${name} and its translated copy: the same PTX (${size} bytes, ${arch_flag})")
