# SPDX-License-Identifier: Apache-2.0
# find_package(devctx COMPONENTS ...): `cpu` is always there, `cuda` when devctx was built with
# CUDA. A missing required component makes the package not found, with a message saying why.
# Included by the installed devctxConfig.cmake and by the find_package redirect that a build of
# devctx inside another project writes; devctx_CUDA is set before.
set(devctx_cpu_FOUND TRUE)
if(devctx_CUDA)
  set(devctx_cuda_FOUND TRUE)
else()
  set(devctx_cuda_FOUND FALSE)
endif()
foreach(_devctx_component IN LISTS devctx_FIND_COMPONENTS)
  if(NOT _devctx_component MATCHES "^(cpu|cuda)$")
    set(devctx_${_devctx_component}_FOUND FALSE)
    if(devctx_FIND_REQUIRED_${_devctx_component})
      set(devctx_FOUND FALSE)
      set(devctx_NOT_FOUND_MESSAGE "devctx has no component '${_devctx_component}' (its components are cpu and cuda)")
    endif()
  elseif(NOT devctx_${_devctx_component}_FOUND AND devctx_FIND_REQUIRED_${_devctx_component})
    set(devctx_FOUND FALSE)
    string(CONCAT devctx_NOT_FOUND_MESSAGE
        "this devctx was built without CUDA (DEVCTX_ENABLE_CUDA=OFF, or no nvcc when it was configured), "
        "so it has no component 'cuda'. Rebuild devctx with nvcc in PATH (or -DDEVCTX_ENABLE_CUDA=ON), "
        "or ask for COMPONENTS cpu only.")
  endif()
endforeach()
unset(_devctx_component)
