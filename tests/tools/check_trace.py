# SPDX-License-Identifier: Apache-2.0
"""tests/tools/check_trace.py - DEVCTX_TRACE_FILE and DEVCTX_REPORT on a whole program (`devctx
demo`): the file is a trace-event JSON whose device tracks hold the demo's copies and kernels,
the report printed at exit names them, frees and host waits are in it, and `devctx trace
summarize` of the file prints the same byte counts and host waits as that report; `devctx trace
timeline` draws one bar per device operation.

usage: check_trace.py DEVCTX_TOOL WORKDIR
"""
import json
import os
import pathlib
import shlex
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def byte_lines(text: str) -> list:
    """The report's lines that count copies and bytes (times differ: the file rounds them)."""
    return [re.sub(r"\), .*", ")", line) for line in text.splitlines() if " copies, " in line]


def main() -> int:
    tool_path, workdir = sys.argv[1:3]
    tool = shlex.split(os.environ.get("DEVCTX_TOOL_EMULATOR", "")) + [tool_path]  # the emulator when cross-compiled
    trace = pathlib.Path(workdir) / "demo_trace.json"
    trace.unlink(missing_ok=True)
    env = dict(os.environ, DEVCTX_TRACE_FILE=str(trace), DEVCTX_REPORT="1")
    demo = subprocess.run([*tool, "demo", "--device", "cpu", "--n", "50000", "--seed", "7"], env=env,
                          capture_output=True, text=True)
    assert demo.returncode == 0, demo.stderr
    assert "PASSED" in demo.stdout, demo.stdout
    report = demo.stderr
    assert "devctx report: where the device time went" in report, report
    assert "kernels: " in report, report

    doc = json.loads(trace.read_text())
    events = doc["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert "host" in names and any(n.startswith("cpu:0") for n in names), names
    device_events = [e for e in events if e["ph"] == "X" and e["pid"] != 0]
    kernels = {e["name"].split("::")[-1] for e in device_events if e["cat"] == "kernel"}  # source names
    assert {"vector_add", "scale", "block_sum"} <= kernels, kernels
    copies = [e for e in device_events if e["cat"] == "copy"]
    assert copies and all(e["args"]["bytes"] > 0 and e["dur"] >= 0 for e in copies), copies[:3]

    summary = subprocess.run([*tool, "trace", "summarize", str(trace)], check=True, capture_output=True,
                             text=True).stdout
    assert byte_lines(summary) == byte_lines(report) and byte_lines(report), (summary, report)
    # Host waits (the demo's synchronizes and elapsed_ms calls) and frees are in the file, and
    # summarize counts the same waits as the report printed at exit.
    waits = [e for e in events if e["ph"] == "X" and e["pid"] == 0 and e["cat"] == "synchronize"]
    assert any(e["name"] == "elapsed_ms" for e in waits), sorted({e["name"] for e in waits})
    frees = [e for e in events if e["pid"] == 0 and e.get("cat") == "free"]
    assert frees and all(e["args"]["bytes"] > 0 and e["args"]["memory"] in ("host", "device") for e in frees), frees[:3]
    wait_line = re.compile(r"host waits \(synchronize, events\): (\d+),")
    counts = [m.group(1) for text in (summary, report) for m in [wait_line.search(text)] if m]
    assert counts == [str(len(waits))] * 2, (counts, len(waits))
    print(summary)

    # The timeline: well-formed SVG, one bar (a rect with a title) per device operation.
    svg = pathlib.Path(workdir) / "demo_timeline.svg"
    subprocess.run([*tool, "trace", "timeline", str(trace), "--svg", str(svg)], check=True)
    bars = [r for r in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}rect")
            if r.find("{http://www.w3.org/2000/svg}title") is not None]
    assert len(bars) == len(device_events), (len(bars), len(device_events))
    return 0


if __name__ == "__main__":
    sys.exit(main())
