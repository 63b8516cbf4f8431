# SPDX-License-Identifier: Apache-2.0
"""Type stubs of devctx's extension module (python/src/module.cpp, python/src/runtime_kernels.cpp)."""
from typing import Any, Optional, Sequence, SupportsFloat, Union

Shape = Union[int, Sequence[int]]
DTypeName = str  # 'bool', 'int8'..'int64', 'uint8'..'uint64', 'float32', 'float64'

class Error(RuntimeError):
    """Every devctx failure. str(e) is devctx's message."""

    code: str
    """The kind, as devctx::Errc names it: 'invalid_argument', 'size_mismatch', 'invalid_launch',
    'invalid_handle', 'wrong_device', 'not_available', 'out_of_memory', 'kernel_failed',
    'backend_error' or 'context_lost'."""

class ArgumentError(Error, ValueError):
    """An argument of the right type whose value devctx cannot take (a negative dimension, an
    unknown dtype, stream 0, ...); code is 'invalid_argument'. Raised before anything is enqueued."""

class ArgumentOverflowError(ArgumentError, OverflowError):
    """A number that does not fit the C type or element type it is for: fill(int8_array, 300),
    fill(uint64_array, -1), a dimension of 2**63 or more, a stream handle past 64 bits."""

class CompileError(Error):
    """A kernel source that did not compile (Context.compile_function); code is 'compile_failed'.
    str(e) shows the first errors with the lines of the Module's source, numbered as in it."""

    log: str
    """The compiler's whole log."""

class Module:
    """A kernel source given at run time (devctx::Module); nothing compiles until
    Context.compile_function."""

    def __init__(self, source: str, name: str = "runtime_kernel.cpp", options: Sequence[str] = ...) -> None: ...
    @staticmethod
    def from_file(path: str, options: Sequence[str] = ...) -> Module: ...
    @property
    def source(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def options(self) -> list[str]: ...

class Function:
    """A kernel compiled at run time for one device (Context.compile_function)."""

    @property
    def name(self) -> str: ...
    @property
    def signature(self) -> str:
        """'(float, devctx::span<const float>, devctx::span<float>)'."""
    @property
    def params(self) -> list[dict[str, Any]]:
        """One dict per parameter: kind ('scalar', 'span', 'pointer'), dtype, readonly, cpp_type."""
    @property
    def load_kind(self) -> str:
        """'compiled' or 'cached'."""
    @property
    def load_ms(self) -> float: ...

class Launch:
    """A launch whose arguments were converted and checked once (Context.bind_function)."""

    def __call__(self) -> None: ...
    @property
    def function(self) -> Function: ...

Dim = Union[int, Sequence[int]]

class Context:
    """A device and its default stream (devctx::DeviceContext)."""

    def __init__(self, device: Optional[str] = None) -> None: ...
    @property
    def api(self) -> str: ...
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def cuda_stream(self) -> int: ...
    def synchronize(self) -> None: ...
    def empty(self, shape: Shape, dtype: DTypeName = "float32") -> DeviceArray: ...
    def empty_host(self, shape: Shape, dtype: DTypeName = "float32") -> HostArray: ...
    def copy(self, dst: Any, src: Any) -> None: ...
    def fill(self, dst: Union[DeviceArray, HostArray], value: Union[bool, int, SupportsFloat]) -> None:
        """bool arrays take True/False (or 0, 1); integer arrays integers within the dtype's range
        (never a float or str: TypeError); float arrays real numbers (finite ones within range)."""
    def compile_function(self, module: Module, name: str) -> Function: ...
    def enqueue_function(
        self, function: Function, *args: Any, grid_dim: Dim, block_dim: Dim, shared_bytes: int = 0, stream: None = None
    ) -> None: ...
    def bind_function(
        self, function: Function, *args: Any, grid_dim: Dim, block_dim: Dim, shared_bytes: int = 0, stream: None = None
    ) -> Launch: ...

class _Array:
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> DTypeName: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def data_ptr(self) -> int: ...
    @property
    def context(self) -> Context: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[tuple[int, int]] = None,
        dl_device: Optional[tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __len__(self) -> int: ...

class DeviceArray(_Array):
    """Device memory of a context: a devctx DeviceBuffer, or a DeviceView of another library's."""

    def reshape(self, shape: Shape) -> DeviceArray: ...

class HostArray(_Array):
    """Host memory fit for fast transfers (page-locked on CUDA): a devctx HostBuffer."""

    def reshape(self, shape: Shape) -> HostArray: ...

def count(api: str) -> int: ...
def vector_add(ctx: Context, a: DeviceArray, b: DeviceArray, out: DeviceArray) -> None: ...
def softmax(ctx: Context, x: DeviceArray, out: DeviceArray) -> None: ...
def _softmax(ctx: Context, x: DeviceArray, out: DeviceArray, launch_shape: Optional[tuple[int, int]]) -> None: ...
def _from_capsule(ctx: Context, capsule: Any) -> DeviceArray: ...
