#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/check_fission.py - the fission differential test (docs/cpu-backend.md, "Translated
kernels"): runs a program of the build twice on the CPU backend, with translated twins on
(DEVCTX_CPU_FISSION=1) and off (=0), each with DEVCTX_TRACE=1, and checks that

  - both runs pass (exit 0: every program checks its own results, against host references or,
    in tests/fission_test.cpp, bitwise against the fibers);
  - with --same-output, both print the same stdout once the trace lines and the numbers followed
    by a unit of time or rate are left out (the results an example prints, compared bitwise as
    text);
  - the kernels that run as translated twins are exactly those the expectations file lists for
    the program (a kernel the translator stops translating, or the runtime stops offering, fails
    here, as does a newly translated one until it is listed), and with twins off none is;
  - with --translator-off (a build whose configure step turned the translator off), no kernel is
    translated and each barrier kernel's trace names the build's reason.

usage: check_fission.py --expect FILE --program LABEL [--translator-off] [--same-output] -- CMD...

The expectations file has one line per translated kernel: `LABEL KERNEL` (the kernel as the
trace names it), `LABEL KERNEL hand` for a twin written by hand (translated without the
translator too); `#` starts a comment. The census of every kernel's path is printed either way.
"""
import argparse
import os
import re
import subprocess
import sys

TRACE = re.compile(r"^devctx trace: cpu:\d+ \((?:[^()]|\([^()]*\))*\) (.+?) grid \(\d+, \d+, \d+\) "
                   r"block \(\d+, \d+, \d+\) shared \d+ B: (.*); [0-9.]+ ms from enqueue$")
TIMING = re.compile(r"[-+]?\d[\d.,eE+-]*\s*(?:ns|us|µs|ms|s|sec|seconds|GB/s|GiB/s|MB/s|GFLOP/s|GFLOPS|TFLOP/s|x)\b")


def run(cmd, fission):
    env = dict(os.environ, DEVCTX_TRACE="1", DEVCTX_CPU_FISSION=fission, DEVCTX_CHECK="0")
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1500)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    paths = {}
    for line in (out + "\n" + err).splitlines():
        m = TRACE.match(line)
        if m:
            paths.setdefault(m.group(1), set()).add(m.group(2))
    kept = [line for line in out.splitlines() if not line.startswith("devctx trace:")]
    return p.returncode, out, err, paths, kept


def kind_of(path):
    if path.startswith("translated"):
        return "translated"
    if path.startswith("plain loop"):
        return "plain loop"
    if path.startswith("block-level"):
        return "block-level"
    return "fibers"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--translator-off", action="store_true")
    ap.add_argument("--same-output", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = [c for c in a.cmd if c != "--"] if a.cmd[:1] == ["--"] else a.cmd
    expected = set()
    hand = set()
    with open(a.expect, encoding="utf-8") as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if len(fields) < 2 or fields[0] != a.program:
                continue
            expected.add(fields[1])
            if fields[2:] == ["hand"]:
                hand.add(fields[1])
    if a.translator_off:
        expected = hand
    problems = []
    rc1, out1, err1, on, kept1 = run(cmd, "1")
    rc0, out0, err0, off, kept0 = run(cmd, "0")
    for rc, err, what in ((rc1, err1, "DEVCTX_CPU_FISSION=1"), (rc0, err0, "DEVCTX_CPU_FISSION=0")):
        if rc != 0:
            tail = "\n".join([l for l in err.splitlines() if not l.startswith("devctx trace:")][-20:])
            problems.append(f"the program failed with {what} (exit status {rc}):\n{tail}")
    if a.same_output:
        s1 = [TIMING.sub("<t>", l) for l in kept1]
        s0 = [TIMING.sub("<t>", l) for l in kept0]
        if s1 != s0:
            diff = [f"  on:  {x}\n  off: {y}" for x, y in zip(s1, s0) if x != y][:5]
            problems.append("stdout differs between twins on and off:\n" + "\n".join(diff))

    print(f"fission census of {a.program} (DEVCTX_CPU_FISSION=1):")
    for kernel in sorted(on):
        for path in sorted(on[kernel]):
            print(f"  {kernel}: {path}")
    translated = {k for k, ps in on.items() if any(kind_of(p) == "translated" for p in ps)}
    partly = {k for k, ps in on.items() if k in translated and any(kind_of(p) == "fibers" for p in ps)}
    if a.translator_off:
        for k, ps in on.items():
            for p in ps:
                if kind_of(p) == "fibers" and "the translator was off in this build" not in p:
                    problems.append(f"{k} says '{p}', not the build's reason")
    if True:
        for k in sorted(expected - translated):
            problems.append(f"{k} is listed as translated but ran as: {sorted(on.get(k, {'(not launched)'}))}")
        for k in sorted(translated - expected):
            problems.append(f"{k} now runs translated: list it in {os.path.basename(a.expect)} ({a.program} {k})")
        for k in sorted(partly):
            problems.append(f"{k} ran translated in some launches and on fibers in others: {sorted(on[k])}")
    still = {k for k, ps in off.items() if any(kind_of(p) == "translated" for p in ps)}
    if still:
        problems.append(f"translated with DEVCTX_CPU_FISSION=0: {sorted(still)}")
    for k, ps in off.items():
        for p in ps:
            if kind_of(p) == "fibers" and "DEVCTX_CPU_FISSION=0" not in p and "checked launch" not in p:
                problems.append(f"with DEVCTX_CPU_FISSION=0, {k} does not say so: '{p}'")
    n_fib = len([k for k, ps in on.items() if all(kind_of(p) == "fibers" for p in ps)])
    print(f"{a.program}: {len(translated)} kernels translated, {n_fib} on fibers, "
          f"{len(on) - len(translated) - n_fib} other (plain loop, block-level)")
    if problems:
        for p in problems:
            print("FAIL: " + p, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
