# SPDX-License-Identifier: Apache-2.0
"""bench/python/softmax_shapes.py - devctx.softmax over row shapes from many one-column rows to
one long row, timed next to NumPy's softmax of the same array in the same run (issue 25, defect 7:
(65536, 1) took tens of seconds on the CPU backend with one 256-thread block per row).

For each shape: devctx.softmax(ctx, x, out) then ctx.synchronize(), and the NumPy expression
exp(x - max) / sum over the last axis, each repeated until about --seconds have passed (at least
once; medians reported). Every element of devctx's result is checked against the NumPy result
(float64 reference) before timing; the exit status is 1 when one is wrong.

With --old, also the launch shape softmax used before (one 256-thread block per row, forced
through devctx._devctx._softmax), as a second baseline: on the CPU backend it takes tens of
seconds for (65536, 1).

usage: softmax_shapes.py [--device cpu|cuda|cuda:N] [--dtype float32|float64] [--seconds S]
                         [--shapes 65536x1,1x65536,...] [--old]
"""
import argparse
import statistics
import sys
import time

import numpy as np

import devctx

DEFAULT_SHAPES = "65536x1,65536x2,65536x7,16384x33,4096x257,3x1000,512x1000,64x4096,1x65536,1x1000003"


def timed(fn, seconds):
    times = []
    start = time.perf_counter()
    while not times or (time.perf_counter() - start < seconds and len(times) < 1000):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def reference(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    parser.add_argument("--old", action="store_true", help="also time one 256-thread block per row")
    args = parser.parse_args()
    ctx = devctx.Context(args.device)
    rng = np.random.default_rng(25)
    tolerance = 1e-5 if args.dtype == "float32" else 1e-13
    print(f"# devctx.softmax on {ctx!r}, {args.dtype}; NumPy {np.__version__} in the same process")
    old = f" {'old ms':>10} {'old/devctx':>11}" if args.old else ""
    print(f"{'shape':>14} {'devctx ms':>11} {'reps':>5} {'numpy ms':>10} {'devctx/numpy':>13}{old}")
    wrong = False
    for text in args.shapes.split(","):
        shape = tuple(int(d) for d in text.split("x"))
        x = (rng.standard_normal(shape) * 10).astype(args.dtype)
        d_x = devctx.to_device(ctx, x)
        out = ctx.empty(shape, args.dtype)
        ctx.fill(out, np.nan)

        def run():
            devctx.softmax(ctx, d_x, out)
            ctx.synchronize()

        run()
        expected = reference(x)
        got = devctx.to_numpy(out)
        if not np.allclose(got, expected, rtol=tolerance * 50, atol=tolerance):
            bad = np.argwhere(~np.isclose(got, expected, rtol=tolerance * 50, atol=tolerance))
            print(f"{text}: WRONG at {len(bad)} elements, first {tuple(bad[0])}", file=sys.stderr)
            wrong = True
        t_devctx, reps = timed(run, args.seconds)

        def numpy_softmax():
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)

        t_numpy, _ = timed(numpy_softmax, args.seconds)
        old = ""
        if args.old:

            def run_old():
                devctx._devctx._softmax(ctx, d_x, out, (256, 256))
                ctx.synchronize()

            t_old, _ = timed(run_old, args.seconds)
            old = f" {t_old * 1e3:10.3f} {t_old / t_devctx:11.2f}"
        print(f"{text:>14} {t_devctx * 1e3:11.3f} {reps:5d} {t_numpy * 1e3:10.3f} {t_devctx / t_numpy:13.2f}{old}")
        sys.stdout.flush()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
