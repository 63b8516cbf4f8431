"""
devctx from Python: contexts, device and host arrays with DLPack, copies, and devctx kernels
"""



from typing import Any, Optional, Sequence, SupportsFloat, Union

__version__: str
"""devctx's version, "MAJOR.MINOR.PATCH" (include/devctx/version.hpp)."""

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

class Context:
    """A device and its default stream (devctx::DeviceContext)."""

    def __init__(self, device: Optional[str] = None) -> None:
        """
        None: DEVCTX_DEVICE if set, else the first CUDA GPU, else the CPU; or 'cpu', 'cuda', 'cuda:N'.
        """

    @property
    def api(self) -> str: ...

    @property
    def id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def cuda_stream(self) -> int:
        """
        The context's cudaStream_t as an integer; devctx.Error (not_available) on the CPU backend.
        """

    def synchronize(self) -> None:
        """
        Blocks until all work enqueued on the context has finished; raises devctx.Error for a failure in it.
        """

    def empty(self, shape: Shape, dtype: DTypeName = "float32") -> DeviceArray:
        """A DeviceArray (contents uninitialised), allocated in stream order."""

    def empty_host(self, shape: Shape, dtype: DTypeName = "float32") -> HostArray:
        """
        A HostArray: host memory fit for fast transfers (page-locked on CUDA). Fill it after synchronize().
        """

    def copy(self, dst: Any, src: Any) -> None:
        """
        Copies src into dst (DeviceArray, HostArray or C-contiguous host memory); sizes and dtypes must match.
        """

    def fill(self, dst: Union[DeviceArray, HostArray], value: Union[bool, int, SupportsFloat]) -> None:
        """Sets every element of a DeviceArray or HostArray to value."""

    def __repr__(self) -> str: ...

class DeviceArray:
    """Device memory of a context: a devctx DeviceBuffer or DeviceView."""

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

    def reshape(self, shape: Shape) -> DeviceArray:
        pass

    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Optional[tuple[int, int]] = None, dl_device: Optional[tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        pass

    def __dlpack_device__(self) -> tuple[int, int]:
        pass

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

class HostArray:
    """Host memory fit for fast transfers: a devctx HostBuffer."""

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

    def reshape(self, shape: Shape) -> HostArray:
        pass

    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Optional[tuple[int, int]] = None, dl_device: Optional[tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        pass

    def __dlpack_device__(self) -> tuple[int, int]:
        pass

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

def count(api: str) -> int:
    """
    The number of devices of a backend ('cpu' or 'cuda'); 0 when none or not built.
    """

def vector_add(ctx: Context, a: DeviceArray, b: DeviceArray, out: DeviceArray) -> None:
    """
    out = a + b, elementwise, as a devctx kernel on ctx's stream (float32 or float64).
    """

def softmax(ctx: Context, x: DeviceArray, out: DeviceArray) -> None:
    """
    Row-wise softmax of x (shape (rows, cols) or (cols,)) into out, as a devctx kernel on ctx's stream.
    """

def _softmax(ctx: Context, x: DeviceArray, out: DeviceArray, launch_shape: Optional[tuple[int, int]]) -> None:
    """
    softmax with a forced launch shape (threads per row, block size): for the tests, which check every shape the GPU uses on the CPU backend too.
    """

def _from_capsule(ctx: Context, capsule: Any) -> DeviceArray:
    """A DeviceArray over a DLPack capsule's tensor (consumes the capsule)."""
