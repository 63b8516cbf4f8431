# SPDX-License-Identifier: Apache-2.0
"""bench/python/launch_overhead.py - the host's cost of launching a runtime-compiled kernel from
Python (issue 28: target at most raw CUDA + 1 us), devctx next to CuPy's RawKernel in the same run.

One tiny kernel (one block of 32 threads, a span and a float; it writes nothing), compiled at run
time by each library for the same device. Two measures, as bench/cuda/cuda_bench.cu takes them
for C++ (its "submit cost per launch (host)" row is raw CUDA's launch from C++ on the same machine):

  submit   500 launches back to back, the time per launch (the final synchronize not counted);
           on the CPU backend with the stream held back by a kernel meanwhile, so that the
           workers running the launches do not compete with the submitting thread for cores
  latency  one launch then a synchronize, median over 500

Rows: devctx `ctx.enqueue_function(fn, ...)` (arguments converted and checked on each call),
devctx `launch = ctx.bind_function(...)` then `launch()` (checked once), and on CUDA CuPy's
`RawKernel` launched as `kernel((1,), (32,), (out, n, value))` and `enqueue_function` on other
streams: a devctx.Stream, a CUDA stream wrapped once (`ctx.wrap_stream(handle)`) and the same
stream's int handle (wrapped at each call). The rows alternate, 21 trials each (3 warm-up), medians
printed, ratios against CuPy where it ran, and the difference enqueue_function - launch() (the
conversion of the arguments: the same work on every backend, so the CPU run measures it too).

usage: launch_overhead.py [--device cpu|cuda|cuda:N] [--trials N] [--batch N]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import devctx

DEVCTX_SOURCE = r"""
#include <devctx/kernel.hpp>

DEVCTX_KERNEL void tiny(devctx::span<float> out, float value) {
  if (devctx::global_idx().x == 0 && out.size() == 0) out[0] = value;
}

// Holds a CPU stream back while a batch is submitted (--device cpu): one thread counts to n.
DEVCTX_KERNEL void hold(devctx::span<float> out, std::uint64_t n) {
  volatile std::uint64_t count = 0;
  for (std::uint64_t i = 0; i < n; ++i) count = count + 1;
  if (out.size() == 0) out[0] = float(count);
}
"""

CUPY_SOURCE = r"""
extern "C" __global__ void tiny(float* out, unsigned long long n, float value) {
  if (blockIdx.x * blockDim.x + threadIdx.x == 0 && n == 0) out[0] = value;
}
"""


def submit_cost(launch, sync, batch, hold=None):
    """Microseconds per launch of `batch` launches back to back; the synchronize after is not timed.
    `hold` (the CPU backend) enqueues, untimed, a kernel that keeps the stream busy while the batch
    is submitted, so that the workers running the launches do not compete with the submitting
    thread for the machine's cores: the time is then the host's cost of a launch alone, as on a GPU."""
    if hold is not None:
        hold()
    t0 = time.perf_counter()
    for _ in range(batch):
        launch()
    us = (time.perf_counter() - t0) * 1e6 / batch
    sync()
    return us


def latency(launch, sync, batch):
    """Median microseconds of one launch followed by a synchronize."""
    times = []
    for _ in range(batch):
        t0 = time.perf_counter()
        launch()
        sync()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def alternate(rows, measure, trials, batch, **kwargs):
    """Median over `trials` of measure(launch, sync, batch) for each row, the rows taking turns."""
    samples = {name: [] for name in rows}
    for trial in range(trials + 3):
        for name, (launch, sync) in rows.items():
            value = measure(launch, sync, batch, **kwargs)
            if trial >= 3:
                samples[name].append(value)
    return {name: statistics.median(values) for name, values in samples.items()}


def holder(ctx, out, batch):
    """A function that enqueues, on ctx's stream, a kernel of one thread that runs a few times as long
    as `batch` launches take to submit (at least 2 ms): calibrated here."""
    hold = ctx.compile_function(devctx.Module(DEVCTX_SOURCE, name="tiny.cpp"), "hold")
    n = 1 << 16
    while True:
        t0 = time.perf_counter()
        ctx.enqueue_function(hold, out, n, grid_dim=1, block_dim=1)
        ctx.synchronize()
        seconds = time.perf_counter() - t0
        if seconds > 1e-3:
            break
        n *= 4
    target = max(2e-3, batch * 20e-6)
    n = int(n * target / seconds) + 1
    return lambda: ctx.enqueue_function(hold, out, n, grid_dim=1, block_dim=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--trials", type=int, default=21)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    if args.trials < 1 or args.batch < 1:
        parser.error("--trials and --batch must be at least 1")

    os.environ.setdefault("DEVCTX_CACHE_DIR", tempfile.mkdtemp(prefix="devctx-launch-bench-"))
    ctx = devctx.Context(args.device)
    fn = ctx.compile_function(devctx.Module(DEVCTX_SOURCE, name="tiny.cpp"), "tiny")
    out = ctx.empty(1, "float32")
    launch = ctx.bind_function(fn, out, 1.0, grid_dim=1, block_dim=32)
    rows = {
        "devctx enqueue_function": (
            lambda: ctx.enqueue_function(fn, out, 1.0, grid_dim=1, block_dim=32), ctx.synchronize),
        "devctx bind_function, launch()": (launch, ctx.synchronize),
    }
    notes = []
    hold = None
    if ctx.api == "cpu":
        hold = holder(ctx, out, args.batch)
        notes.append("CPU: the submit column is measured with the stream held back by a kernel (submit_cost), the "
                     "latency column without.")
    if args.device.startswith("cuda"):
        # Other streams (stream=): a devctx.Stream, a foreign CUDA stream wrapped once
        # (Context.wrap_stream), and the same stream's int handle, wrapped on each call.
        side = ctx.create_stream()
        foreign = side.cuda_stream
        wrapped = ctx.wrap_stream(foreign)
        rows["devctx enqueue_function, stream=devctx.Stream"] = (
            lambda: ctx.enqueue_function(fn, out, 1.0, grid_dim=1, block_dim=32, stream=side), side.synchronize)
        rows["devctx enqueue_function, stream=ctx.wrap_stream(handle)"] = (
            lambda: ctx.enqueue_function(fn, out, 1.0, grid_dim=1, block_dim=32, stream=wrapped), side.synchronize)
        rows["devctx enqueue_function, stream=handle (int, wrapped per call)"] = (
            lambda: ctx.enqueue_function(fn, out, 1.0, grid_dim=1, block_dim=32, stream=foreign), side.synchronize)
        try:
            import cupy
        except ImportError as e:
            notes.append(f"CuPy not measured: {e}")
        else:
            ordinal = int(args.device.split(":")[1]) if ":" in args.device else 0
            with cupy.cuda.Device(ordinal):
                kernel = cupy.RawKernel(CUPY_SOURCE, "tiny")
                c_out = cupy.empty(1, dtype=cupy.float32)
                n, value = cupy.uint64(1), cupy.float32(1.0)
                kernel((1,), (32,), (c_out, n, value))  # compiles and loads
                cupy.cuda.Device(ordinal).synchronize()
                stream = cupy.cuda.get_current_stream()
                rows["CuPy RawKernel"] = (lambda: kernel((1,), (32,), (c_out, n, value)), stream.synchronize)
    print(f"# launch overhead from Python on {ctx.name} (devctx {devctx.__version__}, Python "
          f"{sys.version.split()[0]}), {args.trials} trials of {args.batch}\n")
    submit = alternate(rows, submit_cost, args.trials, args.batch, hold=hold)
    lat = alternate(rows, latency, args.trials, args.batch)
    base = "CuPy RawKernel" if "CuPy RawKernel" in rows else None
    head = "| launch | submit, us per launch | latency (launch + synchronize), us |"
    head += " submit / CuPy | latency / CuPy |" if base else ""
    print(head)
    print("|---" * (5 if base else 3) + "|")
    for name in rows:
        line = f"| {name} | {submit[name]:.2f} | {lat[name]:.2f} |"
        if base:
            line += f" {submit[name] / submit[base]:.2f} | {lat[name] / lat[base]:.2f} |"
        print(line)
    extra = submit["devctx enqueue_function"] - submit["devctx bind_function, launch()"]
    print(f"\nenqueue_function - launch(): {extra:+.2f} us per launch submitted (the conversion of the arguments)")
    for note in notes:
        print(f"\n{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
