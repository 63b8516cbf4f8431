# SPDX-License-Identifier: Apache-2.0
# tests/cuda/check_simd_ptx.cmake - the ctest simd_one_instruction: compiles simd_ptx.cu to PTX
# and checks that every SIMD load and store is one vector instruction (no scalar global access).
#   cmake -DNVCC=... -DINCLUDE=... -DSOURCE=... -DARCH=75 -DOUT=... -P check_simd_ptx.cmake
execute_process(COMMAND ${NVCC} -std=c++20 --expt-relaxed-constexpr -ptx -arch=sm_${ARCH} -I${INCLUDE} ${SOURCE} -o ${OUT}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed (${rc}): ${err}")
endif()
file(READ ${OUT} ptx)
foreach(wanted IN ITEMS "ld.global.v4.f32" "st.global.v4.f32" "ld.global.v2.f64" "st.global.v2.f64")
  string(FIND "${ptx}" "${wanted}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no ${wanted} in ${OUT}: a SIMD vector was not loaded or stored whole")
  endif()
endforeach()
foreach(unwanted IN ITEMS "ld.global.f32" "st.global.f32" "ld.global.f64" "st.global.f64")
  string(FIND "${ptx}" "${unwanted}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${unwanted} in ${OUT}: a SIMD vector was loaded or stored element by element")
  endif()
endforeach()
message(STATUS "every SIMD load and store is one vector instruction")
