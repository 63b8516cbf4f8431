# SPDX-License-Identifier: Apache-2.0
"""Every entry point converts its own arguments (issue 25, defect 2: values that did not fit gave
`RuntimeError: std::bad_cast`). The rule (docs/interop.md): a wrong Python type is a TypeError; a
value of the right type that devctx cannot take is devctx.ArgumentError (a devctx.Error with code
'invalid_argument' and a ValueError); a number that does not fit its C or element type is
devctx.ArgumentOverflowError (also an OverflowError). Each message names the argument. A failed
call changes nothing: the arrays keep their contents and the context stays usable."""
import pytest

import devctx

np = pytest.importorskip("numpy")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
HUGE = 10**5000  # repr() of it fails (more than 4300 digits): the message must still be made


def check_raised(info, kind):
    """The exception's class follows the rule for `kind` ('type', 'value' or 'overflow')."""
    e = info.value
    if kind == "type":
        assert type(e) is TypeError, f"{type(e).__name__}: {e}"
    else:
        assert isinstance(e, devctx.Error) and isinstance(e, ValueError), f"{type(e).__mro__}: {e}"
        assert isinstance(e, devctx.ArgumentError) and e.code == "invalid_argument"
        assert isinstance(e, OverflowError) == (kind == "overflow"), f"{type(e).__name__}: {e}"
    assert "bad_cast" not in str(e)


@pytest.fixture
def arrays(ctx, rng):
    """A device array and a host array of every dtype, holding random values (and their copies)."""
    made = {}
    for dtype in DTYPES:
        if dtype == "bool":
            values = rng.integers(0, 2, size=17).astype(bool)
        elif dtype.startswith("float"):
            values = rng.standard_normal(17).astype(dtype)
        else:
            info = np.iinfo(dtype)
            values = rng.integers(info.min, info.max, size=17, dtype=dtype, endpoint=True)
        device = devctx.to_device(ctx, values)
        host = ctx.empty_host(17, dtype)
        ctx.copy(host, values)
        made[dtype] = (device, host, values)
    return made


def assert_unchanged(ctx, arrays):
    """Every array still holds its values, and the context still works."""
    ctx.synchronize()
    for device, host, values in arrays.values():
        np.testing.assert_array_equal(devctx.to_numpy(device), values)
        np.testing.assert_array_equal(devctx.to_numpy(host), values)
    probe = ctx.empty(5, "int32")
    ctx.fill(probe, 7)
    np.testing.assert_array_equal(devctx.to_numpy(probe), np.full(5, 7, np.int32))


BAD_FILLS = [
    # (dtype, value, kind, message)
    ("int8", 300, "overflow", r"fill: value 300 does not fit int8 \(-128\.\.127\)"),
    ("int8", -129, "overflow", "does not fit int8"),
    ("uint8", 256, "overflow", r"does not fit uint8 \(0\.\.255\)"),
    ("uint8", -1, "overflow", "does not fit uint8"),
    ("int16", 2**15, "overflow", "does not fit int16"),
    ("uint16", 2**16, "overflow", "does not fit uint16"),
    ("int32", -(2**31) - 1, "overflow", "does not fit int32"),
    ("uint32", 2**32, "overflow", "does not fit uint32"),
    ("int64", 2**63, "overflow", "does not fit int64"),
    ("int64", -(2**63) - 1, "overflow", "does not fit int64"),
    ("uint64", -1, "overflow", r"fill: value -1 does not fit uint64 \(0\.\.18446744073709551615\)"),
    ("uint64", 2**64, "overflow", "does not fit uint64"),
    ("uint64", HUGE, "overflow", "does not fit uint64"),
    ("int32", np.int64(2**40), "overflow", "does not fit int32"),
    ("bool", 2, "overflow", r"does not fit bool \(True, False, 0 or 1\)"),
    ("bool", -1, "overflow", "does not fit bool"),
    ("bool", 0.5, "type", "fill: value for a bool array must be True, False, 0 or 1, not float"),
    ("bool", "True", "type", "must be True, False, 0 or 1, not str"),
    ("int8", 2.5, "type", "fill: value into an int8 array must be an integer, not float"),
    ("int32", 2.0, "type", "must be an integer, not float"),
    ("int64", np.float64(3), "type", "must be an integer, not numpy.float64"),
    ("uint16", np.float32(3), "type", "must be an integer"),
    ("int8", "3", "type", "must be an integer, not str"),
    ("uint64", None, "type", "must be an integer, not NoneType"),
    ("int16", [1], "type", "must be an integer, not list"),
    ("float32", "1.5", "type", "fill: value into a float32 array must be a real number, not str"),
    ("float64", None, "type", "must be a real number, not NoneType"),
    ("float64", 1 + 2j, "type", "must be a real number, not complex"),
    ("float32", np.complex64(1), "type", "must be a real number"),
    ("float32", [1.0], "type", "must be a real number, not list"),
    ("float32", 1e300, "overflow", r"fill: value 1e\+300 does not fit float32"),
    ("float32", -3.5e38, "overflow", "does not fit float32"),
    ("float64", HUGE, "overflow", "does not fit float64"),
    ("float32", 2**200, "overflow", "does not fit float32"),
]


@pytest.mark.parametrize("where", ["device", "host"])
@pytest.mark.parametrize("dtype,value,kind,message", BAD_FILLS, ids=[f"{d}-{k}-{i}" for i, (d, _, k, _m) in enumerate(BAD_FILLS)])
def test_fill_refuses_values_that_do_not_fit(ctx, arrays, where, dtype, value, kind, message):
    device, host, _ = arrays[dtype]
    with pytest.raises(Exception, match=message) as info:
        ctx.fill(device if where == "device" else host, value)
    check_raised(info, kind)
    assert_unchanged(ctx, arrays)


GOOD_FILLS = [
    ("int8", -128), ("int8", 127), ("int8", True), ("int8", np.int64(-5)), ("int8", np.True_),
    ("uint8", 255), ("int16", -(2**15)), ("uint16", 2**16 - 1), ("int32", 2**31 - 1), ("uint32", np.uint64(2**32 - 1)),
    ("int64", -(2**63)), ("int64", 2**63 - 1), ("uint64", 2**64 - 1), ("uint64", 0),
    ("bool", True), ("bool", False), ("bool", 1), ("bool", 0), ("bool", np.True_), ("bool", np.False_),
    ("float32", 3.4e38), ("float32", -1.5), ("float32", 7), ("float32", np.float16(0.5)), ("float32", np.float64(2.25)),
    ("float32", float("inf")), ("float32", float("nan")), ("float32", 1e-50), ("float64", 1e308), ("float64", 2**1000),
    ("float64", np.int64(-3)), ("float64", True),
]


@pytest.mark.parametrize("dtype,value", GOOD_FILLS, ids=[f"{d}-{i}" for i, (d, _) in enumerate(GOOD_FILLS)])
def test_fill_takes_every_value_that_fits(ctx, dtype, value):
    a = ctx.empty(33, dtype)
    ctx.fill(a, value)
    expected = np.full(33, value, dtype=dtype) if dtype != "bool" else np.full(33, bool(value))
    np.testing.assert_array_equal(devctx.to_numpy(a), expected)


def raising_iterable():
    yield 2
    raise ZeroDivisionError("the shape's own iterator failed")


BAD_SHAPES = [
    # (shape, kind, message)
    (2**63, "overflow", r"shape = 9223372036854775808 does not fit in 64 bits"),
    (2**64 + 16, "overflow", "does not fit in 64 bits"),
    ((3, 2**70), "overflow", r"shape\[1\] = 1180591620717411303424 does not fit in 64 bits"),
    ((HUGE,), "overflow", r"shape\[0\] = <int: repr\(\) failed> does not fit"),
    ((2**32, 2**32), "overflow", "holds more than 2\\^63 - 1 elements"),
    ((2**21, 2**21, 2**21), "overflow", "holds more than"),
    (-1, "value", "shape = -1 is negative"),
    ((2, -3), "value", r"shape\[1\] = -3 is negative"),
    ((-(2**70),), "value", "is negative"),
    ((1,) * 65, "value", "more than 64 dimensions"),
    ("3", "type", "shape must be an int or a sequence of ints, not str"),
    (b"3", "type", "not bytes"),
    (3.0, "type", "shape must be an int or a sequence of ints, not float"),
    (None, "type", "not NoneType"),
    ((2, 3.0), "type", r"shape\[1\] must be an int, not float"),
    ((2, "3"), "type", r"shape\[1\] must be an int, not str"),
    ((2, None), "type", r"shape\[1\] must be an int, not NoneType"),
    (((2, 3),), "type", r"shape\[0\] must be an int, not tuple"),
    ((np.float64(2),), "type", "must be an int, not numpy.float64"),
]


@pytest.mark.parametrize("maker", ["empty", "empty_host", "reshape"])
@pytest.mark.parametrize("shape,kind,message", BAD_SHAPES, ids=[f"{k}-{i}" for i, (_, k, _m) in enumerate(BAD_SHAPES)])
def test_shapes_that_do_not_fit_are_refused(ctx, arrays, maker, shape, kind, message):
    device = arrays["float32"][0]
    call = {"empty": lambda: ctx.empty(shape), "empty_host": lambda: ctx.empty_host(shape),
            "reshape": lambda: device.reshape(shape)}[maker]
    with pytest.raises(Exception, match=f"{maker}: {message}" if message.startswith("shape") else message) as info:
        call()
    check_raised(info, kind)
    assert device.shape == (17,)
    assert_unchanged(ctx, arrays)


def test_shapes_take_numpy_integers_and_any_iterable(ctx):
    assert ctx.empty(np.int64(4)).shape == (4,)
    assert ctx.empty(np.array([2, 3])).shape == (2, 3)
    assert ctx.empty([np.uint8(2), True, 3], "int8").shape == (2, 1, 3)
    assert ctx.empty(x for x in (4, 5)).shape == (4, 5)
    assert ctx.empty(()).shape == () and ctx.empty(()).size == 1
    assert ctx.empty((0, 2**62, 2**62)).size == 0  # an empty array holds nothing, whatever the other extents
    assert ctx.empty((1,) * 64).size == 1
    with pytest.raises(ZeroDivisionError, match="own iterator failed"):
        ctx.empty(raising_iterable())


def test_a_shape_too_large_to_allocate_is_devctxs_out_of_memory(ctx):
    with pytest.raises(devctx.Error, match="cannot allocate") as e:
        ctx.empty(2**62)
    assert e.value.code == "out_of_memory" and not isinstance(e.value, devctx.ArgumentError)


@pytest.mark.parametrize("maker", ["empty", "empty_host"])
@pytest.mark.parametrize(
    "dtype,kind,message",
    [
        (3, "type", "dtype must be a str, not int"),
        (None, "type", "dtype must be a str, not NoneType"),
        (np.float32, "type", "dtype must be a str, not type"),
        (np.dtype("float32"), "type", "dtype must be a str"),
        ("float16", "value", "unknown dtype 'float16'"),
        ("float", "value", "unknown dtype 'float'"),
        ("float32\0", "value", "unknown dtype"),
        ("\udcff", "value", "dtype is not valid text"),
    ],
)
def test_dtypes_are_names(ctx, maker, dtype, kind, message):
    with pytest.raises(Exception, match=f"{maker}: {message}") as info:
        getattr(ctx, maker)(3, dtype)
    check_raised(info, kind)


BAD_DLPACK = [
    # (keyword arguments, kind, message)
    ({"stream": 2**70}, "overflow", "__dlpack__: stream 1180591620717411303424 does not fit in 64 bits"),
    ({"stream": HUGE}, "overflow", "does not fit in 64 bits"),
    ({"stream": "x"}, "type", "__dlpack__: stream must be None or an int .*, not str"),
    ({"stream": 1.0}, "type", "stream must be None or an int .*, not float"),
    ({"stream": -2}, "value", "__dlpack__: stream -2 is not a stream"),
    ({"stream": -(2**70)}, "value", "is not a stream"),
    ({"stream": 5}, "value", "a CPU array takes no stream"),
    ({"stream": 0}, "value", "a CPU array takes no stream"),
    ({"max_version": "x"}, "type", r"__dlpack__: max_version must be None or a \(major, minor\) tuple of ints, not str"),
    ({"max_version": (1,)}, "type", "max_version must be None or a"),
    ({"max_version": (1, 0, 0)}, "type", "max_version must be None or a"),
    ({"max_version": 1}, "type", "not int"),
    ({"max_version": (1.0, 0)}, "type", r"max_version\[0\] must be an int, not float"),
    ({"max_version": (1, "0")}, "type", r"max_version\[1\] must be an int, not str"),
    ({"max_version": (-1, 0)}, "value", "is not a version"),
    ({"dl_device": "x"}, "type", r"__dlpack__: dl_device must be None or a \(device_type, device_id\) tuple of ints"),
    ({"dl_device": (1,)}, "type", "dl_device must be None or a"),
    ({"dl_device": (1, 0.0)}, "type", r"dl_device\[1\] must be an int, not float"),
    ({"dl_device": ("1", 0)}, "type", r"dl_device\[0\] must be an int, not str"),
    ({"copy": "x"}, "type", r"__dlpack__: copy \(None, True or False\) must be True or False, not str"),
    ({"copy": 1}, "type", "must be True or False, not int"),
]


@pytest.mark.parametrize("where", ["device", "host"])
@pytest.mark.parametrize("kwargs,kind,message", BAD_DLPACK, ids=[f"{k}-{i}" for i, (_, k, _m) in enumerate(BAD_DLPACK)])
def test_dlpack_arguments_are_converted(ctx, arrays, where, kwargs, kind, message):
    device, host, _ = arrays["float64"]
    with pytest.raises(Exception, match=message) as info:
        (device if where == "device" else host).__dlpack__(**kwargs)
    check_raised(info, kind)
    assert_unchanged(ctx, arrays)


def test_dlpack_arguments_that_fit(ctx, arrays):
    device, _, values = arrays["float64"]
    for kwargs in [{"stream": -1}, {"stream": None}, {"max_version": (2**70, 0)}, {"max_version": [1, 0]},
                   {"max_version": (np.int64(1), np.int64(0))}, {"copy": np.False_}, {"copy": False},
                   {"dl_device": (np.int32(1), 0)}]:
        np.testing.assert_array_equal(np.from_dlpack(devctx._devctx._from_capsule(ctx, device.__dlpack__(**kwargs))), values)
    for dl_device in [(2**70, 0), (1, -(2**70)), (-1, 0), (2, 0)]:
        with pytest.raises(BufferError, match="cannot be exported to that device"):
            device.__dlpack__(dl_device=dl_device)


NOT_A_CONTEXT = [3, None, "cpu", np.zeros(3)]


@pytest.mark.parametrize("bad", NOT_A_CONTEXT, ids=["int", "None", "str", "ndarray"])
def test_functions_name_a_wrong_context(ctx, arrays, bad):
    a = arrays["float32"][0]
    for call, name in [(lambda: devctx.vector_add(bad, a, a, a), "vector_add"),
                       (lambda: devctx.softmax(bad, a, a), "softmax"),
                       (lambda: devctx._devctx._softmax(bad, a, a, None), "softmax"),
                       (lambda: devctx._devctx._from_capsule(bad, a.__dlpack__()), "_from_capsule"),
                       (lambda: devctx.to_device(bad, np.zeros(3)), "to_device")]:
        with pytest.raises(TypeError, match=f"{name}: ctx must be a devctx Context") as info:
            call()
        check_raised(info, "type")
    if bad is not None:
        with pytest.raises(TypeError, match="from_dlpack: ctx must be a devctx Context or None"):
            devctx.from_dlpack(np.zeros(3), bad)
    assert_unchanged(ctx, arrays)


def test_module_functions_name_their_arguments(ctx, arrays):
    for bad, kind, message in [(3, "type", "Context: device must be a str or None, not int"),
                               (b"cpu", "type", "Context: device must be a str or None, not bytes"),
                               ("\udcff", "value", "Context: device is not valid text")]:
        with pytest.raises(Exception, match=message) as info:
            devctx.Context(bad)
        check_raised(info, kind)
    with pytest.raises(TypeError, match="count: api must be a str, not int") as info:
        devctx.count(3)
    check_raised(info, "type")
    with pytest.raises(devctx.ArgumentError, match="the backends are 'cpu' and 'cuda'"):
        devctx.count("gpu")
    with pytest.raises(TypeError, match="fill: dst must be a devctx DeviceArray or HostArray, not numpy.ndarray"):
        ctx.fill(np.zeros(3), 1.0)
    with pytest.raises(TypeError, match="vector_add: b must be a devctx DeviceArray, not int"):
        devctx.vector_add(ctx, arrays["float32"][0], 3, arrays["float32"][0])
    with pytest.raises(TypeError, match="from_dlpack: x must have __dlpack__"):
        devctx.from_dlpack([1.0, 2.0], ctx)
    with pytest.raises(TypeError, match="to_device: host must be host memory"):
        devctx.to_device(ctx, 3)
    with pytest.raises(TypeError, match="to_numpy: array must be a devctx DeviceArray or HostArray, not list"):
        devctx.to_numpy([1, 2])
    assert_unchanged(ctx, arrays)


CUDA_STREAMS = [
    # (stream, kind, message): refused before devctx waits or wraps anything
    (2**70, "overflow", "does not fit in 64 bits"),
    (2**64, "overflow", "does not fit in 64 bits"),
    ("x", "type", "stream must be None or an int"),
    (1.0, "type", "stream must be None or an int"),
    (-2, "value", "is not a stream"),
    (0, "value", "stream 0 is ambiguous for CUDA"),
]


@pytest.mark.parametrize("stream,kind,message", CUDA_STREAMS, ids=[f"{k}-{i}" for i, (_, k, _m) in enumerate(CUDA_STREAMS)])
def test_dlpack_streams_of_cuda_arrays_are_converted(rng, stream, kind, message):
    from conftest import gpu_or_skip

    gpu_or_skip()
    gpu = devctx.Context("cuda:0")
    values = rng.standard_normal(100)
    a = devctx.to_device(gpu, values)
    with pytest.raises(Exception, match=message) as info:
        a.__dlpack__(stream=stream)
    check_raised(info, kind)
    for good in (None, -1, 1, 2, gpu.cuda_stream):
        devctx._devctx._from_capsule(gpu, a.__dlpack__(stream=good))
    gpu.synchronize()
    np.testing.assert_array_equal(devctx.to_numpy(a), values)
