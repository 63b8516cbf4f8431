#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/check_fission.py - the fission differential test (docs/cpu-backend.md, "Translated
kernels"): runs a program of the build twice on the CPU backend, with translated twins on
(DEVCTX_CPU_FISSION=1) and off (=0), each with DEVCTX_TRACE=1, and checks that

  - both runs pass (exit 0: every program checks its own results, against host references or,
    in tests/fission_test.cpp, bitwise against the fibers);
  - the kernels that run as translated twins are exactly those the expectations file lists for
    the program (a kernel the translator stops translating, or the runtime stops offering, fails
    here, as does a newly translated one until it is listed), and with twins off none is;
  - with --translator-off (a build whose configure step turned the translator off), only twins
    written by hand run, and the other barrier kernels' traces name the build's reason.

usage: check_fission.py --expect FILE --program LABEL [--translator-off] -- CMD...

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
    return p.returncode, err, paths


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
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = [c for c in a.cmd if c != "--"] if a.cmd[:1] == ["--"] else a.cmd
    expected = set()
    hand = set()
    with open(a.expect, encoding="utf-8") as f:
        for line in f:
            fields = line.split("#", 1)[0].strip().split(None, 1)
            if len(fields) < 2 or fields[0] != a.program:
                continue
            kernel = fields[1].strip()  # may contain spaces: template_reduce<64, float>
            if kernel.endswith(" hand"):
                kernel = kernel[: -len(" hand")].strip()
                hand.add(kernel)
            expected.add(kernel)
    if a.translator_off:
        expected = hand
    problems = []
    rc1, err1, on = run(cmd, "1")
    rc0, err0, off = run(cmd, "0")
    for rc, err, what in ((rc1, err1, "DEVCTX_CPU_FISSION=1"), (rc0, err0, "DEVCTX_CPU_FISSION=0")):
        if rc != 0:
            tail = "\n".join([l for l in err.splitlines() if not l.startswith("devctx trace:")][-20:])
            problems.append(f"the program failed with {what} (exit status {rc}):\n{tail}")

    print(f"fission census of {a.program} (DEVCTX_CPU_FISSION=1):")
    for kernel in sorted(on):
        for path in sorted(on[kernel]):
            print(f"  {kernel}: {path}")
    translated = {k for k, ps in on.items() if any(kind_of(p) == "translated" for p in ps)}
    # Launches the program itself sends to fibers (DEVCTX_CPU_FISSION=0 in a scope, a checked
    # context) say so; a translated kernel must never say "not translated".
    partly = {k for k, ps in on.items() if k in translated and any("not translated" in p for p in ps)}
    if a.translator_off:
        for k, ps in on.items():
            for p in ps:
                if "was not processed by devctx's fission translator" in p:
                    problems.append(f"{k} says '{p}', not the build's reason")
    if True:
        for k in sorted(expected - translated):
            problems.append(f"{k} is listed as translated but ran as: {sorted(on.get(k, {'(not launched)'}))}")
        for k in sorted(translated - expected):
            problems.append(f"{k} now runs translated: list it in {os.path.basename(a.expect)} ({a.program} {k})")
        for k in sorted(partly):
            problems.append(f"{k} ran translated in some launches and not translated in others: {sorted(on[k])}")
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
