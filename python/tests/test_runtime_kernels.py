# SPDX-License-Identifier: Apache-2.0
"""Kernels written by Python users (issue 28, item 4; docs/runtime-kernels.md): the course's
exercises (python/examples) compiled from source at run time, launched and checked element by
element against NumPy with fresh random inputs and poisoned (NaN) outputs, on the CPU and, where
there is one, on a GPU; arguments checked against the compiled signature (a mismatch raises the
named error and enqueues nothing); compile errors with the user's line numbers; the disk cache."""
import importlib
import os
import sys

import pytest

import devctx
from conftest import affine32, equal_plain_or_fused, gpu_or_skip

np = pytest.importorskip("numpy")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
vector_add = importlib.import_module("vector_add")
map2d = importlib.import_module("map2d")
reduction = importlib.import_module("reduction")
matmul = importlib.import_module("matmul")
softmax = importlib.import_module("softmax")

SAXPY = r"""
#include <devctx/kernel.hpp>

template <class T>
DEVCTX_KERNEL void saxpy(T a, devctx::span<const T> x, devctx::span<T> y) {
  const std::size_t i = devctx::global_idx().x;
  if (i < y.size()) y[i] = a * x[i] + y[i];
}

DEVCTX_KERNEL void scale_i8(devctx::span<std::int8_t> y, std::int8_t k, std::uint16_t u, bool twice) {
  const std::size_t i = devctx::global_idx().x;
  if (i < y.size()) y[i] = std::int8_t(y[i] * k * (twice ? 2 : 1) + (u & 1));
}
"""


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Each test compiles into its own temporary cache."""
    monkeypatch.setenv("DEVCTX_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def contexts():
    return ["cpu", "cuda"]


def context_for(device):
    if device == "cuda":
        gpu_or_skip()
    return devctx.Context(device)


# ---- the course's exercises ------------------------------------------------------------------------


@pytest.mark.parametrize("device", contexts())
def test_vector_add(device, rng):
    ctx = context_for(device)
    for n in (1, 255, 256, 10_007):
        a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        assert np.array_equal(vector_add.run(ctx, a, b), a + b)


@pytest.mark.parametrize("device", contexts())
def test_map2d(device, rng):
    ctx = context_for(device)
    for shape in ((1, 1), (7, 300), (129, 17)):
        x = rng.standard_normal(shape, dtype=np.float32)
        scale = float(rng.uniform(-3, 3))
        r, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
        got = map2d.run(ctx, x, scale)
        assert np.array_equal(map2d.reference(x, scale), affine32(x, scale, r - c, fused=False))
        assert equal_plain_or_fused(got, [(x, scale, r - c)], device)


@pytest.mark.parametrize("device", contexts())
def test_shared_memory_reduction(device, rng):
    ctx = context_for(device)
    for n in (1, 256, 257, 100_000):
        x = rng.standard_normal(n)
        partial = reduction.run(ctx, x)
        blocks = (n + 255) // 256
        padded = np.concatenate([x, np.zeros(blocks * 256 - n)]).reshape(blocks, 256)
        np.testing.assert_allclose(partial, padded.sum(axis=1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", contexts())
def test_tiled_matmul(device, rng):
    ctx = context_for(device)
    for m, k, n in ((1, 1, 1), (16, 16, 16), (33, 47, 20)):
        a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
        np.testing.assert_allclose(matmul.run(ctx, a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", contexts())
def test_softmax(device, rng):
    ctx = context_for(device)
    for shape in ((1, 1), (5, 255), (9, 1000)):
        x = rng.standard_normal(shape, dtype=np.float32) * 5
        np.testing.assert_allclose(softmax.run(ctx, x), softmax.reference(x), rtol=1e-5, atol=1e-6)


# ---- the function object and the cache ------------------------------------------------------------


def test_function_reports_signature_and_cache(ctx, cache_dir):
    module = devctx.Module(SAXPY, name="saxpy.cpp", options=["-DUNUSED=1"])
    assert module.name == "saxpy.cpp" and module.options == ["-DUNUSED=1"] and module.source == SAXPY
    fn = ctx.compile_function(module, "saxpy<float>")
    assert fn.name == "saxpy<float>"
    assert fn.signature == "(float, devctx::span<const float>, devctx::span<float>)"
    assert [(p["kind"], p["dtype"], p["readonly"]) for p in fn.params] == [
        ("scalar", "float32", False), ("span", "float32", True), ("span", "float32", False)]
    assert fn.load_kind == "compiled" and fn.load_ms > 0
    again = ctx.compile_function(module, "saxpy<float>")
    assert again.load_kind == "cached"
    assert any(cache_dir.iterdir())


def test_scalars_are_converted_to_the_declared_types(ctx, rng):
    fn = ctx.compile_function(devctx.Module(SAXPY), "saxpy<double>")
    x, y = rng.standard_normal(1000), rng.standard_normal(1000)
    d_x, d_y = devctx.to_device(ctx, x), devctx.to_device(ctx, y)
    ctx.enqueue_function(fn, 3, d_x, d_y, grid_dim=4, block_dim=256)  # an int for a double
    np.testing.assert_array_equal(devctx.to_numpy(d_y), 3.0 * x + y)
    ints = ctx.compile_function(devctx.Module(SAXPY), "scale_i8")
    v = rng.integers(-10, 10, size=300).astype(np.int8)
    d_v = devctx.to_device(ctx, v)
    ctx.enqueue_function(ints, d_v, np.int8(-3), 65535, True, grid_dim=2, block_dim=256)
    np.testing.assert_array_equal(devctx.to_numpy(d_v), (v.astype(np.int64) * -6 + 1).astype(np.int8))


def test_dlpack_arguments(ctx, rng):
    """A NumPy array is viewed in place (devctx.from_dlpack) on the CPU backend."""
    fn = ctx.compile_function(devctx.Module(SAXPY), "saxpy<float>")
    x, y = rng.standard_normal(777, dtype=np.float32), rng.standard_normal(777, dtype=np.float32)
    expected = np.float32(2) * x + y
    ctx.enqueue_function(fn, 2.0, x, y, grid_dim=4, block_dim=256)
    ctx.synchronize()
    np.testing.assert_array_equal(y, expected)


def test_bound_launch_repeats(ctx, rng):
    fn = ctx.compile_function(devctx.Module(SAXPY), "saxpy<float>")
    x, y = rng.standard_normal(500, dtype=np.float32), rng.standard_normal(500, dtype=np.float32)
    d_x, d_y = devctx.to_device(ctx, x), devctx.to_device(ctx, y)
    launch = ctx.bind_function(fn, 0.5, d_x, d_y, grid_dim=2, block_dim=256)
    expected = y.copy()
    for _ in range(5):
        launch()
        expected = np.float32(0.5) * x + expected
    np.testing.assert_array_equal(devctx.to_numpy(d_y), expected)


# ---- signature mismatches: the named error, nothing enqueued -------------------------------------


@pytest.fixture
def saxpy_setup(ctx, rng):
    fn = ctx.compile_function(devctx.Module(SAXPY), "saxpy<float>")
    x = rng.standard_normal(300, dtype=np.float32)
    y = rng.standard_normal(300, dtype=np.float32)
    return fn, devctx.to_device(ctx, x), devctx.to_device(ctx, y), y


def unchanged(ctx, d_y, y):
    ctx.synchronize()
    np.testing.assert_array_equal(devctx.to_numpy(d_y), y)


def test_wrong_dtype_is_refused(ctx, saxpy_setup):
    fn, d_x, d_y, y = saxpy_setup
    d_x64 = devctx.to_device(ctx, np.ones(300))
    with pytest.raises(devctx.Error, match="float") as info:
        ctx.enqueue_function(fn, 1.0, d_x64, d_y, grid_dim=2, block_dim=256)
    assert "double" in str(info.value)
    unchanged(ctx, d_y, y)


def test_read_only_array_for_a_writable_span_is_refused(ctx, saxpy_setup):
    fn, d_x, d_y, y = saxpy_setup
    frozen = np.array(y)
    frozen.flags.writeable = False
    ro = devctx.from_dlpack(frozen, ctx)
    assert ro.readonly
    with pytest.raises(devctx.Error, match="const|read"):
        ctx.enqueue_function(fn, 1.0, d_x, ro, grid_dim=2, block_dim=256)
    unchanged(ctx, d_y, y)


@pytest.mark.parametrize("bad, error", [
    (1e39, devctx.ArgumentOverflowError),   # past float's range
    ("2", TypeError),
    (None, TypeError),
])
def test_bad_scalar_is_refused(ctx, saxpy_setup, bad, error):
    fn, d_x, d_y, y = saxpy_setup
    with pytest.raises(error, match="argument 0"):
        ctx.enqueue_function(fn, bad, d_x, d_y, grid_dim=2, block_dim=256)
    unchanged(ctx, d_y, y)


@pytest.mark.parametrize("args, error", [
    ((300, 1, True), devctx.ArgumentOverflowError),     # int8
    ((-129, 1, True), devctx.ArgumentOverflowError),
    ((1, 65536, True), devctx.ArgumentOverflowError),   # uint16
    ((1, -1, True), devctx.ArgumentOverflowError),
    ((1, 2**64, True), devctx.ArgumentOverflowError),
    ((1.0, 1, True), TypeError),                        # a float for an int
    ((1, 1, 1), TypeError),                             # an int for a bool
])
def test_integer_and_bool_scalars_are_range_checked(ctx, rng, args, error):
    fn = ctx.compile_function(devctx.Module(SAXPY), "scale_i8")
    v = rng.integers(-10, 10, size=300).astype(np.int8)
    d_v = devctx.to_device(ctx, v)
    with pytest.raises(error):
        ctx.enqueue_function(fn, d_v, *args, grid_dim=2, block_dim=256)
    unchanged(ctx, d_v, v)
    assert issubclass(devctx.ArgumentOverflowError, OverflowError)


def test_wrong_argument_count_and_kinds(ctx, saxpy_setup):
    fn, d_x, d_y, y = saxpy_setup
    with pytest.raises(devctx.ArgumentError, match="takes 3 arguments"):
        ctx.enqueue_function(fn, 1.0, d_x, grid_dim=2, block_dim=256)
    with pytest.raises(TypeError, match="argument 1"):
        ctx.enqueue_function(fn, 1.0, [1.0, 2.0], d_y, grid_dim=2, block_dim=256)
    with pytest.raises(devctx.ArgumentOverflowError, match="grid_dim"):
        ctx.enqueue_function(fn, 1.0, d_x, d_y, grid_dim=2**32, block_dim=256)
    unchanged(ctx, d_y, y)


# ---- compile errors -------------------------------------------------------------------------------


def test_syntax_error_reports_the_users_line(ctx):
    source = "#include <devctx/kernel.hpp>\n\nDEVCTX_KERNEL void broken(devctx::span<float> y) {\n  y[0] = 1.0f +;\n}\n"
    with pytest.raises(devctx.CompileError) as info:
        ctx.compile_function(devctx.Module(source, name="broken.cpp"), "broken")
    e = info.value
    assert isinstance(e, devctx.Error) and e.code == "compile_failed"
    assert "broken.cpp:4" in str(e)
    assert "y[0] = 1.0f +;" in str(e)
    assert "broken.cpp:4" in e.log
    ctx.synchronize()  # the context stays usable


def test_unknown_kernel_name_is_a_compile_error(ctx):
    with pytest.raises(devctx.CompileError, match="nosuch"):
        ctx.compile_function(devctx.Module(SAXPY), "nosuch<float>")


def test_module_argument_checks():
    with pytest.raises(devctx.Error):
        devctx.Module("")
    with pytest.raises(devctx.Error):
        devctx.Module("int x;", name="bad name!")


def test_the_package_ships_the_headers_kernels_include():
    """The installed package carries the devctx headers (devctx/include) and points devctx at them."""
    shipped = os.path.join(os.path.dirname(devctx.__file__), "include")
    assert os.path.isfile(os.path.join(shipped, "devctx", "kernel.hpp"))
    assert os.path.isfile(os.path.join(shipped, "devctx", "detail", "runtime", "entry.hpp"))
    assert os.path.samefile(os.environ["DEVCTX_INCLUDE_DIR"], shipped)  # set by the package (the tests do not set it)


def test_bound_launch_keeps_its_arrays_alive(ctx, rng):
    fn = ctx.compile_function(devctx.Module(SAXPY), "saxpy<float>")
    x, y = rng.standard_normal(300, dtype=np.float32), rng.standard_normal(300, dtype=np.float32)
    d_y = devctx.to_device(ctx, y)
    launch = ctx.bind_function(fn, 2.0, devctx.to_device(ctx, x), d_y, grid_dim=2, block_dim=256)
    import gc
    gc.collect()  # the x array has no other reference: the launch holds it
    launch()
    np.testing.assert_array_equal(devctx.to_numpy(d_y), np.float32(2) * x + y)
    assert launch.function.name == "saxpy<float>"


def test_readme_snippet(ctx):
    a = devctx.to_device(ctx, np.arange(8, dtype=np.float32))
    out = ctx.empty(8)
    ctx.fill(out, float("nan"))
    add = ctx.compile_function(devctx.Module(r"""
  #include <devctx/kernel.hpp>
  DEVCTX_KERNEL void add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> out) {
    const std::size_t i = devctx::global_idx().x;
    if (i < out.size()) out[i] = a[i] + b[i];
  }"""), "add")
    ctx.enqueue_function(add, a, a, out, grid_dim=1, block_dim=256)
    np.testing.assert_array_equal(devctx.to_numpy(out), 2 * np.arange(8, dtype=np.float32))


# ---- GPU only: foreign arrays and host memory ------------------------------------------------------


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_gpu_dlpack_arguments(library, rng):
    lib = gpu_or_skip(library)
    ctx = devctx.Context("cuda")
    fn = ctx.compile_function(devctx.Module(SAXPY), "saxpy<float>")
    x, y = rng.standard_normal(1000, dtype=np.float32), rng.standard_normal(1000, dtype=np.float32)
    if library == "torch":
        gx, gy = lib.from_numpy(x).cuda(), lib.from_numpy(y).cuda()
    else:
        gx, gy = lib.asarray(x), lib.asarray(y)
    ctx.enqueue_function(fn, 2.0, gx, gy, grid_dim=4, block_dim=256)
    ctx.synchronize()
    got = gy.cpu().numpy() if library == "torch" else lib.asnumpy(gy)
    np.testing.assert_array_equal(got, np.float32(2) * x + y)


def test_gpu_refuses_host_memory(rng):
    gpu_or_skip()
    ctx = devctx.Context("cuda")
    fn = ctx.compile_function(devctx.Module(SAXPY), "saxpy<float>")
    y = rng.standard_normal(300, dtype=np.float32)
    d_y = devctx.to_device(ctx, y)
    with pytest.raises(devctx.Error):
        ctx.enqueue_function(fn, 1.0, np.ones(300, np.float32), d_y, grid_dim=2, block_dim=256)
    unchanged(ctx, d_y, y)
    cpu = devctx.Context("cpu")
    with pytest.raises(devctx.Error):  # memory of another device
        ctx.enqueue_function(fn, 1.0, devctx.to_device(cpu, y), d_y, grid_dim=2, block_dim=256)
    unchanged(ctx, d_y, y)


# ---- streams: stream= on enqueue_function, bind_function and a bound launch ---------------------

AFFINE = r"""
#include <devctx/kernel.hpp>

DEVCTX_KERNEL void affine(devctx::span<float> y, float a, float b) {
  const std::size_t i = devctx::global_idx().x;
  if (i < y.size()) y[i] = y[i] * a + b;
}
"""


@pytest.mark.parametrize("device", contexts())
def test_launches_on_a_stream_in_order_with_the_context(device, rng):
    """Work on a devctx.Stream runs in its order, and waits order it against the context's stream:
    (y * 2 + 1) on the context, then (* 3 + 5) on the stream, then (* -1 + 0.5) on the context."""
    ctx = context_for(device)
    fn = ctx.compile_function(devctx.Module(AFFINE), "affine")
    stream = ctx.create_stream()
    assert isinstance(stream, devctx.Stream) and stream.context is ctx
    n = 100_003
    y = rng.standard_normal(n, dtype=np.float32)
    d_y = devctx.to_device(ctx, y)
    grid = (n + 255) // 256
    ctx.enqueue_function(fn, d_y, 2.0, 1.0, grid_dim=grid, block_dim=256)
    stream.enqueue_wait_for(ctx)
    ctx.enqueue_function(fn, d_y, 3.0, 5.0, grid_dim=grid, block_dim=256, stream=stream)
    ctx.enqueue_wait_for(stream)
    ctx.enqueue_function(fn, d_y, -1.0, 0.5, grid_dim=grid, block_dim=256, stream=None)
    assert equal_plain_or_fused(devctx.to_numpy(d_y), [(y, 2, 1), (None, 3, 5), (None, -1, 0.5)], device)


def test_stream_synchronize_waits_for_its_launches(ctx, rng):
    """A NumPy array viewed in place: after stream.synchronize() it holds the stream's results."""
    fn = ctx.compile_function(devctx.Module(AFFINE), "affine")
    stream = ctx.create_stream(priority=0)
    y = rng.standard_normal(5000, dtype=np.float32)
    expected = y * np.float32(-2) + np.float32(0.25)
    ctx.enqueue_function(fn, y, -2.0, 0.25, grid_dim=20, block_dim=256, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(y, expected)
    assert repr(stream) == "Stream(cpu:0)"


def test_bound_launch_on_a_stream_and_per_call_stream(ctx, rng):
    fn = ctx.compile_function(devctx.Module(AFFINE), "affine")
    y = rng.standard_normal(700, dtype=np.float32)
    d_y = devctx.to_device(ctx, y)
    launch = ctx.bind_function(fn, d_y, 1.5, -1.0, grid_dim=3, block_dim=256, stream=ctx.create_stream())
    import gc
    gc.collect()  # the launch keeps its stream (and the stream its context) alive
    assert isinstance(launch.stream, devctx.Stream)
    expected = y.copy()
    for _ in range(3):
        launch()
        launch.stream.synchronize()
        expected = expected * np.float32(1.5) + np.float32(-1.0)
    other = ctx.create_stream()
    other.enqueue_wait_for(launch.stream)
    launch(stream=other)  # this call only, on another stream of the device
    expected = expected * np.float32(1.5) + np.float32(-1.0)
    ctx.enqueue_wait_for(other)
    launch(stream=ctx)
    expected = expected * np.float32(1.5) + np.float32(-1.0)
    np.testing.assert_array_equal(devctx.to_numpy(d_y), expected)
    assert ctx.bind_function(fn, d_y, 1.0, 0.0, grid_dim=3, block_dim=256).stream is ctx


@pytest.mark.parametrize("bad", [True, "stream", 0.5, object()])
def test_stream_argument_of_the_wrong_type_is_refused(ctx, rng, bad):
    fn = ctx.compile_function(devctx.Module(AFFINE), "affine")
    y = rng.standard_normal(300, dtype=np.float32)
    d_y = devctx.to_device(ctx, y)
    with pytest.raises(TypeError, match="stream takes None, a devctx.Stream"):
        ctx.enqueue_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256, stream=bad)
    with pytest.raises(TypeError, match="stream takes None, a devctx.Stream"):
        ctx.bind_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256, stream=bad)
    launch = ctx.bind_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256)
    with pytest.raises(TypeError, match="stream takes None, a devctx.Stream"):
        launch(stream=bad)
    with pytest.raises(TypeError):
        ctx.enqueue_wait_for(bad)
    with pytest.raises(TypeError):
        ctx.create_stream().enqueue_wait_for(bad)
    with pytest.raises(TypeError):
        ctx.create_stream(priority="high")
    unchanged(ctx, d_y, y)


def test_stream_of_another_device_is_refused(tmp_path):
    """In a process of two CPU devices (DEVCTX_CPU_DEVICES=2): a stream of cpu:1 for a launch of a
    cpu:0 context is devctx.Error('wrong_device'), and nothing is enqueued."""
    import subprocess
    script = tmp_path / "other_device.py"
    script.write_text(f"""
import numpy as np, devctx
AFFINE = {AFFINE!r}
ctx, other = devctx.Context("cpu:0"), devctx.Context("cpu:1")
fn = ctx.compile_function(devctx.Module(AFFINE), "affine")
y = np.random.default_rng().standard_normal(300).astype(np.float32)
d_y = devctx.to_device(ctx, y)
for stream in (other.create_stream(), other):
    try:
        ctx.enqueue_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256, stream=stream)
        raise SystemExit("no error")
    except devctx.Error as e:
        assert e.code == "wrong_device" and "stream belongs to cpu:1" in str(e), str(e)
    try:
        ctx.bind_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256)(stream=stream)
        raise SystemExit("no error")
    except devctx.Error as e:
        assert e.code == "wrong_device", str(e)
ctx.synchronize()
assert (devctx.to_numpy(d_y) == y).all()
print("refused")
""")
    env = dict(os.environ, DEVCTX_CPU_DEVICES="2")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "refused" in out.stdout


def test_stream_priority_outside_the_range_is_refused(ctx):
    with pytest.raises(devctx.Error) as info:
        ctx.create_stream(priority=5)
    assert info.value.code == "invalid_argument"
    with pytest.raises(devctx.Error):
        ctx.create_stream(priority=2**40)


# ---- the launch call itself: its keywords, its fast paths and their fallbacks --------------------

MANY = r"""
#include <devctx/kernel.hpp>

// 20 parameters: more than enqueue_function converts in place (16), so its arguments go to the heap.
DEVCTX_KERNEL void many(devctx::span<double> out, std::int8_t a, std::int16_t b, std::int32_t c, std::int64_t d,
                        std::uint8_t e, std::uint16_t f, std::uint32_t g, std::uint64_t h, float i, double j,
                        bool k, devctx::span<const double> x, int l, unsigned m, long long n, short o,
                        unsigned char p, double q, float r) {
  const std::size_t t = devctx::global_idx().x;
  if (t >= out.size()) return;
  const double v[] = {double(a), double(b), double(c), double(d), double(e), double(f), double(g), double(h),
                      double(i), j, k ? 1.0 : 0.0, x[t], double(l), double(m), double(n), double(o), double(p), q,
                      double(r)};
  out[t] = v[t % 19];
}
"""


def many_expected(values, x):
    return np.array([values[t % 19] if t % 19 != 11 else x[t] for t in range(len(x))])


def test_more_arguments_than_converted_in_place(ctx, rng):
    fn = ctx.compile_function(devctx.Module(MANY), "many")
    assert len(fn.params) == 20
    n = 57
    x = rng.standard_normal(n)
    d_x, out = devctx.to_device(ctx, x), ctx.empty(n, "float64")
    scalars = [-128, -32768, -2**31, -2**63, 255, 65535, 2**32 - 1, 2**64 - 1, 0.5, -1e300, True]
    rest = [2**31 - 1, 7, -5, -32768, 200, 3.25, -2.5]
    for enqueue in ("enqueue_function", "bind_function"):
        ctx.fill(out, float("nan"))
        call = getattr(ctx, enqueue)(fn, out, *scalars, d_x, *rest, grid_dim=1, block_dim=64)
        if call is not None:
            call()
        values = [float(v) for v in scalars] + [None] + [float(v) for v in rest]
        np.testing.assert_array_equal(devctx.to_numpy(out), many_expected(values, x))
    with pytest.raises(devctx.ArgumentOverflowError, match="argument 19"):  # the last one, a float
        ctx.enqueue_function(fn, out, *scalars, d_x, *rest[:-1], 1e39, grid_dim=1, block_dim=64)


def test_numbers_of_every_python_kind_give_the_same_launch(ctx, rng):
    """Python's own int, float and bool take a shortcut; NumPy's scalars, subclasses and objects with
    __index__ take the general path: both give the same values, and the same errors."""
    fn = ctx.compile_function(devctx.Module(SAXPY), "scale_i8")

    class Index:
        def __init__(self, v):
            self.v = v

        def __index__(self):
            return self.v

    class MyInt(int):
        pass

    v = rng.integers(-10, 10, size=300).astype(np.int8)
    expected = (v.astype(np.int64) * -6 + 1).astype(np.int8)
    for k, u, twice in [(-3, 65535, True), (np.int8(-3), np.uint16(65535), np.bool_(True)),
                        (Index(-3), MyInt(65535), True), (np.int64(-3), Index(65535), np.True_)]:
        d_v = devctx.to_device(ctx, v)
        ctx.enqueue_function(fn, d_v, k, u, twice, grid_dim=[np.int32(2)], block_dim=(256, 1, Index(1)),
                             shared_bytes=np.uint8(0))
        np.testing.assert_array_equal(devctx.to_numpy(d_v), expected)
    for bad in (MyInt(300), Index(-129), np.int64(128)):
        with pytest.raises(devctx.ArgumentOverflowError, match="argument 1"):
            ctx.enqueue_function(fn, d_v, bad, 1, True, grid_dim=2, block_dim=256)
    for bad, kind in ((np.float64(1.0), "float64"), (True, "bool"), (np.True_, "bool")):
        with pytest.raises(TypeError, match=f"argument 1 .* takes an int, not .*{kind}"):
            ctx.enqueue_function(fn, d_v, bad, 1, True, grid_dim=2, block_dim=256)
    floats = ctx.compile_function(devctx.Module(SAXPY), "saxpy<double>")
    x = rng.standard_normal(100)
    for a in (2, 2.0, np.float32(2), np.int16(2), MyInt(2), Index(2)):
        d_y = devctx.to_device(ctx, np.ones(100))
        ctx.enqueue_function(floats, a, devctx.to_device(ctx, x), d_y, grid_dim=1, block_dim=128)
        np.testing.assert_array_equal(devctx.to_numpy(d_y), 2 * x + 1)
    for bad in (True, np.True_, "2", 1j):
        with pytest.raises(TypeError, match="argument 0 .* takes a float or int"):
            ctx.enqueue_function(floats, bad, d_y, d_y, grid_dim=1, block_dim=128)
    with pytest.raises(devctx.ArgumentOverflowError, match="does not fit a double"):
        ctx.enqueue_function(floats, 10**400, d_y, d_y, grid_dim=1, block_dim=128)


@pytest.mark.parametrize("kwargs, message", [
    ({"grid_dim": 2}, "enqueue_function\\(\\) missing required keyword-only argument: 'block_dim'"),
    ({"block_dim": 256}, "enqueue_function\\(\\) missing required keyword-only argument: 'grid_dim'"),
    ({"grid_dim": 2, "block_dim": 256, "stram": None}, "got an unexpected keyword argument 'stram'"),
    ({"grid_dim": None, "block_dim": 256}, "grid_dim takes ints, not NoneType"),
    ({"grid_dim": 2, "block_dim": 256, "shared_bytes": None}, "shared_bytes takes an int, not NoneType"),
    ({"grid_dim": 2, "block_dim": 256, "shared_bytes": 1.0}, "shared_bytes takes an int, not float"),
    ({"grid_dim": (2, "1"), "block_dim": 256}, "grid_dim takes ints, not str"),
])
def test_launch_keywords_are_checked(ctx, saxpy_setup, kwargs, message):
    fn, d_x, d_y, y = saxpy_setup
    for verb in (ctx.enqueue_function, ctx.bind_function):
        with pytest.raises(TypeError, match=message.replace("enqueue_function", verb.__name__)
                           if "missing" in message else message):
            verb(fn, 1.0, d_x, d_y, **kwargs)
    unchanged(ctx, d_y, y)


def test_launch_call_shapes(ctx, saxpy_setup):
    """Keywords from a dict (not interned), no function at all, a function of the wrong type, and
    the signature inspect reads."""
    import inspect
    fn, d_x, d_y, y = saxpy_setup
    with pytest.raises(TypeError, match="missing required positional argument: 'function'"):
        ctx.enqueue_function(grid_dim=2, block_dim=256)
    with pytest.raises(TypeError, match="function takes a devctx.Function .*, not str"):
        ctx.enqueue_function("saxpy", 1.0, d_x, d_y, grid_dim=2, block_dim=256)
    with pytest.raises(TypeError):
        devctx.Context.enqueue_function(object(), fn, 1.0, d_x, d_y, grid_dim=2, block_dim=256)
    unchanged(ctx, d_y, y)
    keywords = {"".join(["grid", "_dim"]): 2, "".join(["block", "_dim"]): 256, "".join(["shared", "_bytes"]): 0,
                "".join(["str", "eam"]): None}
    ctx.enqueue_function(fn, 1.0, d_x, d_y, **keywords)
    ctx.bind_function(fn, 1.0, d_x, d_y, **keywords)()
    expected = y + np.float32(1) * devctx.to_numpy(d_x)
    expected = expected + np.float32(1) * devctx.to_numpy(d_x)
    np.testing.assert_array_equal(devctx.to_numpy(d_y), expected)
    launch = ctx.bind_function(fn, 1.0, d_x, d_y, grid_dim=2, block_dim=256)
    with pytest.raises(TypeError, match="takes no positional arguments"):
        launch(ctx)
    with pytest.raises(TypeError, match="unexpected keyword argument 'stram'"):
        launch(stram=None)
    other = ctx.create_stream()
    other.enqueue_wait_for(ctx)
    launch(**{"".join(["str", "eam"]): other})
    other.synchronize()
    expected = expected + np.float32(1) * devctx.to_numpy(d_x)
    np.testing.assert_array_equal(devctx.to_numpy(d_y), expected)
    for verb in (devctx.Context.enqueue_function, devctx.Context.bind_function):
        parameters = inspect.signature(verb).parameters
        assert list(parameters) == ["self", "function", "args", "grid_dim", "block_dim", "shared_bytes", "stream"]
        assert parameters["shared_bytes"].default == 0 and parameters["stream"].default is None
        assert parameters["grid_dim"].kind == inspect.Parameter.KEYWORD_ONLY
