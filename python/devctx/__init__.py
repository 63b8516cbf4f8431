# SPDX-License-Identifier: Apache-2.0
"""devctx from Python: devices, device and host arrays, DLPack, copies and devctx kernels.

    import numpy as np, devctx
    ctx = devctx.Context()                      # the default device (DEVCTX_DEVICE, else a GPU, else the CPU)
    a = devctx.to_device(ctx, np.arange(8, dtype=np.float32))
    out = ctx.empty(8)                          # float32 by default
    devctx.vector_add(ctx, a, a, out)           # a devctx kernel on ctx's stream
    print(devctx.to_numpy(out))                 # waits for the work, copies to a NumPy array

Arrays speak DLPack both ways without copies (``torch.from_dlpack(out)``, ``np.from_dlpack(host)``,
``devctx.from_dlpack(tensor, ctx)``); docs/interop.md says who owns what and what is synchronous.
Every failure raises devctx.Error, whose ``code`` names its kind as devctx::Errc does in C++.
Arguments are checked at the call: a wrong type is a TypeError; a value devctx cannot take is a
devctx.ArgumentError (a devctx.Error and a ValueError), or devctx.ArgumentOverflowError (also an
OverflowError) when the number does not fit its C or element type. A failed call changes nothing.
"""
from __future__ import annotations

import os as _os
from typing import Any, Optional

# Kernels compiled at run time (Context.compile_function) include the devctx headers this package
# ships (devctx/include); DEVCTX_INCLUDE_DIR, when set, names others.
_include = _os.path.join(_os.path.dirname(__file__), "include")
if "DEVCTX_INCLUDE_DIR" not in _os.environ and _os.path.isdir(_include):
    _os.environ["DEVCTX_INCLUDE_DIR"] = _include

from ._devctx import (
    ArgumentError,
    ArgumentOverflowError,
    CompileError,
    Context,
    DeviceArray,
    Error,
    Function,
    HostArray,
    Launch,
    Module,
    Stream,
    __version__,
    _from_capsule,
    count,
    softmax,
    vector_add,
)

__all__ = [
    "ArgumentError",
    "ArgumentOverflowError",
    "CompileError",
    "Context",
    "DeviceArray",
    "Error",
    "Function",
    "HostArray",
    "Launch",
    "Module",
    "Stream",
    "count",
    "from_dlpack",
    "softmax",
    "to_device",
    "to_numpy",
    "vector_add",
]

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


def _device_of(x: Any) -> str:
    device_type, device_id = x.__dlpack_device__()
    if int(device_type) == _KDL_CUDA:
        return f"cuda:{int(device_id)}"
    if int(device_type) in (_KDL_CPU, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED):
        return "cpu"
    raise Error(f"from_dlpack: devctx has no backend for DLPack device type {int(device_type)}")


def from_dlpack(x: Any, ctx: Optional[Context] = None) -> DeviceArray:
    """A DeviceArray over ``x``'s memory, without a copy (``x``: any object with ``__dlpack__``,
    or a DLPack capsule). ``ctx`` defaults to a new context on ``x``'s device. The producer's
    work is ordered before ctx's stream (DLPack's stream handshake); ``x``'s memory stays alive
    until the array is gone and devctx's work on it has finished."""
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"from_dlpack: ctx must be a devctx Context or None, not {type(ctx).__name__}")
    if type(x).__name__ == "PyCapsule":
        if ctx is None:
            raise TypeError("from_dlpack: pass a Context with a bare DLPack capsule")
        return _from_capsule(ctx, x)
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(
            f"from_dlpack: x must have __dlpack__ and __dlpack_device__ (a NumPy, CuPy or PyTorch array, ...), "
            f"not {type(x).__name__}"
        )
    if ctx is None:
        ctx = Context(_device_of(x))
    # DLPack's stream handshake is for device memory: a host producer (NumPy) takes no stream,
    # and its memory then reaches the context, which refuses host memory on a GPU clearly.
    on_cuda = ctx.api == "cuda" and int(x.__dlpack_device__()[0]) == _KDL_CUDA
    kwargs = {"stream": ctx.cuda_stream} if on_cuda else {}
    try:
        capsule = x.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:  # a producer older than DLPack 1.0's protocol
        capsule = x.__dlpack__(**kwargs)
    return _from_capsule(ctx, capsule)


def to_device(ctx: Context, host: Any) -> DeviceArray:
    """A new DeviceArray on ctx holding a copy of ``host`` (a C-contiguous NumPy array, or any
    host memory with the buffer protocol, shape and dtype taken from it)."""
    if not isinstance(ctx, Context):
        raise TypeError(f"to_device: ctx must be a devctx Context, not {type(ctx).__name__}")
    try:
        view = memoryview(host)
    except TypeError:
        raise TypeError(
            f"to_device: host must be host memory with the buffer protocol (a NumPy array, ...), not {type(host).__name__}"
        ) from None
    import numpy  # only for the dtype name of a buffer's format

    array = ctx.empty(tuple(view.shape), numpy.dtype(view.format).name if view.format != "?" else "bool")
    ctx.copy(array, host)
    return array


def to_numpy(array: DeviceArray | HostArray) -> Any:
    """A NumPy array holding a copy of ``array``; returns once the copy is done (after the
    work enqueued before it on the array's context)."""
    if not isinstance(array, (DeviceArray, HostArray)):
        raise TypeError(f"to_numpy: array must be a devctx DeviceArray or HostArray, not {type(array).__name__}")
    import numpy

    out = numpy.empty(array.shape, dtype=array.dtype)
    array.context.copy(out, array)
    return out
