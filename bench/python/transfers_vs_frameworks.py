# SPDX-License-Identifier: Apache-2.0
"""bench/python/transfers_vs_frameworks.py - pageable copies between NumPy arrays and the GPU:
devctx's Python package next to PyTorch and CuPy, the libraries a user would call instead
(issue 13's second baseline), in the same run.

For each size and direction, measured in alternation (devctx, torch, cupy, devctx, ...; medians of
several trials) so that drift favours none:
  devctx  ctx.copy(device_array, numpy_array) / ctx.copy(numpy_array, device_array): done on return
  torch   into preallocated memory: dev.copy_(torch.from_numpy(a)) / torch.from_numpy(out).copy_(dev),
          then torch.cuda.synchronize(); the spelling users write most, torch.from_numpy(a).cuda() and
          dev.cpu(), also measured where it differs (it allocates, and .cpu() returns fresh pages)
  cupy    dev.set(a) / dev.get(out=out), then a stream synchronize; cupy.asarray(a) also measured
The source arrays are touched before timing (no first-use page faults); each devctx result is
checked once against the source. GB/s count the bytes moved once (10^9 bytes per second).

usage: transfers_vs_frameworks.py [--max-mib N] [--trials N]
Needs devctx's Python package built with CUDA (scripts/gpu-check.sh builds it) and a GPU; torch and
cupy are optional (their columns say "-" when missing). Exit status 1 when a result is wrong.
"""
import argparse
import statistics
import sys
import time

import numpy as np

import devctx


def optional(name):
    try:
        return __import__(name)
    except Exception:  # noqa: BLE001 - any import failure means "not available here"
        return None


def timed(fn, nbytes, reps):
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return nbytes * reps / (time.perf_counter() - start) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mib", type=int, default=1024)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    if devctx.count("cuda") == 0:
        print("transfers_vs_frameworks: no CUDA device; nothing to measure")
        return 0
    torch = optional("torch")
    cupy = optional("cupy")
    ctx = devctx.Context("cuda:0")
    print(f"pageable copies, NumPy <-> {ctx.name}: devctx {getattr(devctx, '__version__', '')} vs "
          f"torch {getattr(torch, '__version__', 'absent')} vs cupy {getattr(cupy, '__version__', 'absent')}")
    print(f"{'size':>9} {'dir':>4} {'devctx':>8} {'torch':>8} {'cupy':>8} {'torch*':>8} {'cupy*':>8}"
          f" {'vs torch':>9} {'vs cupy':>8}   GB/s; * = allocating spelling (.cuda()/.cpu(), cupy.asarray/.get())")
    wrong = 0
    sizes = [1 << 20, 16 << 20, 256 << 20, 1 << 30, 4 << 30]
    for nbytes in [s for s in sizes if s <= args.max_mib << 20]:
        n = nbytes // 4
        a = np.random.default_rng(nbytes).random(n, dtype=np.float32)
        out = np.full(n, np.nan, dtype=np.float32)
        dev = ctx.empty(n)
        tdev = torch.empty(n, dtype=torch.float32, device="cuda:0") if torch else None
        cdev = cupy.empty(n, dtype=cupy.float32) if cupy else None
        reps = max(1, min(50, (1 << 30) // nbytes))
        for up in (True, False):
            fns = {}
            if up:
                fns["devctx"] = lambda: ctx.copy(dev, a)
                if torch:
                    ta = torch.from_numpy(a)

                    def torch_up():
                        tdev.copy_(ta)
                        torch.cuda.synchronize()

                    def torch_up_alloc():
                        ta.cuda()
                        torch.cuda.synchronize()
                    fns["torch"], fns["torch*"] = torch_up, torch_up_alloc
                if cupy:
                    def cupy_up():
                        cdev.set(a)
                        cupy.cuda.get_current_stream().synchronize()

                    def cupy_up_alloc():
                        cupy.asarray(a)
                        cupy.cuda.get_current_stream().synchronize()
                    fns["cupy"], fns["cupy*"] = cupy_up, cupy_up_alloc
            else:
                fns["devctx"] = lambda: ctx.copy(out, dev)
                if torch:
                    tout = torch.from_numpy(out)

                    def torch_down():
                        tout.copy_(tdev)
                        torch.cuda.synchronize()

                    def torch_down_alloc():
                        tdev.cpu()
                    fns["torch"], fns["torch*"] = torch_down, torch_down_alloc
                if cupy:
                    def cupy_down():
                        cdev.get(out=out)
                        cupy.cuda.get_current_stream().synchronize()

                    def cupy_down_alloc():
                        cdev.get()
                    fns["cupy"], fns["cupy*"] = cupy_down, cupy_down_alloc
            samples = {k: [] for k in fns}
            for _ in range(args.trials):
                for name, fn in fns.items():
                    samples[name].append(timed(fn, nbytes, reps))
            m = {k: statistics.median(v) for k, v in samples.items()}
            cell = lambda k: f"{m[k]:8.2f}" if k in m else f"{'-':>8}"  # noqa: E731
            ratio = lambda k: f"{m['devctx'] / m[k]:8.2f}x" if k in m else f"{'-':>9}"  # noqa: E731
            size = f"{nbytes >> 20} MiB" if nbytes < (1 << 30) else f"{nbytes >> 30} GiB"
            print(f"{size:>9} {'H2D' if up else 'D2H':>4} {cell('devctx')} {cell('torch')} {cell('cupy')}"
                  f" {cell('torch*')} {cell('cupy*')} {ratio('torch')} {ratio('cupy')}", flush=True)
            # devctx's result, checked once.
            if up:
                ctx.copy(dev, a)
                ctx.copy(out, dev)
            else:
                out[:] = np.nan
                ctx.copy(out, dev)
            if not np.array_equal(out, a):
                print(f"WRONG: devctx {'H2D' if up else 'D2H'} of {size}")
                wrong += 1
        del dev, tdev, cdev
    print(f"{wrong} wrong result(s)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
