#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/check_demo_trace.py DEVCTX_TOOL OUTDIR [DEMO ARGS...] - the trace's device times against
the demo's own CUDA-event timings (scripts/gpu-check.sh runs it on the GPU; it works on the CPU too).

Runs `devctx demo` with DEVCTX_TRACE_FILE, then compares, for the timed (second) run, each step
the demo prints (upload, the three kernels, download; timed by the demo with its own events) with
the same span in the trace (first begin to last end of the step's operations). Passes when every
step agrees within 5% (plus 1 us: CUDA events resolve about 0.5 us). Writes OUTDIR/demo_trace.json
and prints the table.
"""
import json
import os
import pathlib
import re
import subprocess
import sys


def main() -> int:
    tool, outdir, *demo_args = sys.argv[1:]
    trace = pathlib.Path(outdir) / "demo_trace.json"
    env = dict(os.environ, DEVCTX_TRACE_FILE=str(trace))
    demo = subprocess.run([tool, "demo", *demo_args], env=env, capture_output=True, text=True)
    print(demo.stdout)
    if demo.returncode != 0:
        print(demo.stderr)
        return 1
    printed = {}
    for line in demo.stdout.splitlines():
        m = re.match(r"\s+(upload|kernel|download)\s+(\S+).*?\s([0-9.]+) ms\s", line + " ")
        if m:
            printed[m.group(2).rstrip(",") if m.group(1) == "kernel" else m.group(1)] = float(m.group(3))
    events = json.loads(trace.read_text())["traceEvents"]
    device = [e for e in events if e["ph"] == "X" and e["pid"] != 0]
    kernels = [e for e in device if e["cat"] == "kernel"]
    copies = [e for e in device if e["cat"] == "copy"]
    # The timed run is the second: the last two uploads, the last two downloads, the last kernel of each name.
    spans = {}
    up = [e for e in copies if e["args"]["direction"] == "host_to_device"][-2:]
    down = [e for e in copies if e["args"]["direction"] == "device_to_host"][-2:]
    for name, group in (("upload", up), ("download", down)):
        spans[name] = (max(e["ts"] + e["dur"] for e in group) - min(e["ts"] for e in group)) / 1000
    for name in [k for k in printed if k not in ("upload", "download")]:
        last = [e for e in kernels if e["name"].split("::")[-1].startswith(name)][-1]
        spans[name] = last["dur"] / 1000
    failed = 0
    print(f"{'step':<28}{'demo (events) ms':>18}{'trace ms':>12}{'difference':>12}")
    for name, ms in printed.items():
        got = spans.get(name)
        ok = got is not None and abs(got - ms) <= 0.05 * ms + 0.001
        failed += not ok
        diff = "-" if got is None or ms == 0 else f"{100 * (got - ms) / ms:+.1f}%"
        print(f"{name:<28}{ms:>18.3f}{(got if got is not None else float('nan')):>12.3f}{diff:>12}{'' if ok else '  MISSED'}")
    if failed or len(printed) != 5:
        print(f"check_demo_trace: FAILED ({failed} steps outside 5% + 1 us, {len(printed)} steps read from the demo)")
        return 1
    print("check_demo_trace: the trace's device times agree with the demo's events within 5% + 1 us (CUDA events resolve about 0.5 us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
