# SPDX-License-Identifier: Apache-2.0
"""bench/python/launch_overhead.py - the host's cost of launching a runtime-compiled kernel from
Python (issue 28: target at most raw CUDA + 1 us), devctx next to CuPy's RawKernel in the same run.

One tiny kernel (one block of 32 threads, a span and a float; it writes nothing), compiled at run
time by each library for the same device. Two measures, as bench/cuda/cuda_bench.cu takes them
for C++ (its "submit cost per launch (host)" row is raw CUDA's launch from C++ on the same machine):

  submit   500 launches back to back, the time per launch (the final synchronize not counted)
  latency  one launch then a synchronize, median over 500

Rows: devctx `ctx.enqueue_function(fn, ...)` (arguments converted and checked on each call),
devctx `launch = ctx.bind_function(...)` then `launch()` (checked once), and on CUDA CuPy's
`RawKernel` launched as `kernel((1,), (32,), (out, n, value))`. The libraries alternate, 21 trials
each (3 warm-up), medians printed, ratios against CuPy where it ran.

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
"""

CUPY_SOURCE = r"""
extern "C" __global__ void tiny(float* out, unsigned long long n, float value) {
  if (blockIdx.x * blockDim.x + threadIdx.x == 0 && n == 0) out[0] = value;
}
"""


def submit_cost(launch, sync, batch):
    """Microseconds per launch of `batch` launches back to back; the synchronize after is not timed."""
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


def alternate(rows, measure, trials, batch):
    """Median over `trials` of measure(launch, sync, batch) for each row, the rows taking turns."""
    samples = {name: [] for name in rows}
    for trial in range(trials + 3):
        for name, (launch, sync) in rows.items():
            value = measure(launch, sync, batch)
            if trial >= 3:
                samples[name].append(value)
    return {name: statistics.median(values) for name, values in samples.items()}


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
    if args.device.startswith("cuda"):
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
    submit = alternate(rows, submit_cost, args.trials, args.batch)
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
    for note in notes:
        print(f"\n{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
