# SPDX-License-Identifier: Apache-2.0
"""tests/tools/check_locale.py - what the devctx tool writes for machines is the same under a
comma-decimal locale. The tool honours its user's locale (setlocale(LC_ALL, "")), so under
de_DE.UTF-8 its tables write "0,123 ms"; its --json, --csv, SVG plots and timelines, and the
trace files and the report of DEVCTX_TRACE_FILE / DEVCTX_REPORT, must still write "0.123".

The locale is generated here with localedef (the Debian package `locales` provides its source;
scripts/packages.txt installs it). Exit code 77 (skipped) only when it cannot be generated.

usage: check_locale.py DEVCTX_TOOL WORKDIR
"""
import csv
import io
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?%?$")  # "100%" too
NUMERIC_ATTRIBUTES = ("x", "y", "x1", "x2", "y1", "y2", "width", "height", "stroke-width")


def generate_locale(workdir: pathlib.Path):
    """LOCPATH holding de_DE.UTF-8, or None and why not."""
    locpath = workdir / "locales"
    locpath.mkdir(parents=True, exist_ok=True)
    try:
        run = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(locpath / "de_DE.UTF-8")],
                             capture_output=True, text=True)
    except FileNotFoundError:
        return None, "localedef is not installed"
    # localedef exits 1 for warnings with the locale written: its files decide.
    if not (locpath / "de_DE.UTF-8" / "LC_NUMERIC").exists():
        return None, f"localedef -i de_DE failed ({run.returncode}): {run.stderr.strip()}"
    return locpath, ""


def check_svg(path: pathlib.Path) -> int:
    """Every number in the SVG has a '.' (or none); returns how many were checked."""
    checked = 0
    for element in ET.parse(path).getroot().iter():
        for name in NUMERIC_ATTRIBUTES:
            if name in element.attrib:
                assert NUMBER.match(element.attrib[name]), (path, element.tag, name, element.attrib[name])
                checked += 1
        if element.tag == SVG + "polyline":
            for pair in element.attrib["points"].split(" "):
                x, y = pair.split(",")  # "12,3,45,6" under a comma locale would not split in two
                assert NUMBER.match(x) and NUMBER.match(y), (path, pair)
                checked += 1
        if element.tag in (SVG + "text", SVG + "title") and element.text:
            assert not re.search(r"[0-9],[0-9]", element.text), (path, element.text)
    return checked


def main() -> int:
    tool_path, workdir = sys.argv[1], pathlib.Path(sys.argv[2])
    tool = shlex.split(os.environ.get("DEVCTX_TOOL_EMULATOR", "")) + [tool_path]  # the emulator when cross-compiled
    locpath, why = generate_locale(workdir)
    if locpath is None:
        print(f"cannot generate the de_DE.UTF-8 locale ({why}): install the Debian package `locales` "
              "(scripts/setup.sh does); skipped")
        return 77
    env = dict(os.environ, LC_ALL="de_DE.UTF-8", LOCPATH=str(locpath))
    env.pop("DEVCTX_TRACE_FILE", None)
    env.pop("DEVCTX_REPORT", None)

    def tool_run(*args, extra_env=None):
        run = subprocess.run([*tool, *args], env=dict(env, **(extra_env or {})), capture_output=True, text=True)
        assert run.returncode == 0, (args, run.stdout, run.stderr)
        return run

    # The locale is in force: the tables people read use its decimal comma.
    trace = workdir / "locale_trace.json"
    trace.unlink(missing_ok=True)
    demo = tool_run("demo", "--device", "cpu", "--n", "50000", extra_env={"DEVCTX_TRACE_FILE": str(trace),
                                                                        "DEVCTX_REPORT": "1"})
    assert re.search(r"[0-9],[0-9]{3} ms", demo.stdout), demo.stdout
    # The trace file is JSON, and the report printed at exit writes '.'.
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(isinstance(e.get("ts"), float) and e["ts"] != int(e["ts"]) for e in events), "no fractional times?"
    assert "devctx report" in demo.stderr and not re.search(r"[0-9],[0-9]", demo.stderr), demo.stderr
    summary = tool_run("trace", "summarize", str(trace)).stdout
    assert " copies, " in summary and not re.search(r"[0-9],[0-9]", summary), summary
    timeline = workdir / "locale_timeline.svg"
    tool_run("trace", "timeline", str(trace), "--svg", str(timeline))
    checked = check_svg(timeline)

    # bench: JSON, CSV and the plot.
    common = ["bench", "transfers", "--device", "cpu", "--max-bytes", "65536"]
    doc = json.loads(tool_run(*common, "--json").stdout)
    assert doc["results"] and all(isinstance(r["time_us"], (int, float)) for r in doc["results"]), doc
    rows = list(csv.DictReader(io.StringIO(tool_run(*common, "--csv").stdout)))
    assert rows
    for row in rows:
        assert NUMBER.match(row["time_us"]), row
        assert row["gb_per_s"] == "" or NUMBER.match(row["gb_per_s"]), row
    plot = workdir / "locale_plot.svg"
    tool_run(*common, "--plot", str(plot))
    checked += check_svg(plot)
    print(f"under de_DE.UTF-8: the trace, its report and summary, {len(rows)} CSV rows, the bench JSON and "
          f"{checked} SVG numbers all use '.'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
