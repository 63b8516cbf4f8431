# SPDX-License-Identifier: Apache-2.0
"""tests/tools/check_bench.py - `devctx bench SUITE --json --plot FILE.svg`: the JSON is valid
against bench_schema.json (python3-jsonschema), its sizes sweep as documented, and the SVG is
well-formed XML with exactly one <polyline> per series of the plot, each with its points.

usage: check_bench.py DEVCTX_TOOL SCHEMA SUITE WORKDIR [DEVICE]
DEVICE (default cpu) may be cuda: then the raw CUDA rows must be there too, and without a GPU
the check is skipped (exit code 77), or fails when DEVCTX_REQUIRE_GPU is on.
"""
import json
import os
import pathlib
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import devctx_env  # noqa: E402  (the library's flag rule for DEVCTX_* flags)

try:
    import jsonschema  # python3-jsonschema: scripts/packages.txt installs it, and CI requires it
except ModuleNotFoundError:  # e.g. the GPU machine, which has no package registry
    if devctx_env.env_flag("DEVCTX_REQUIRE_JSONSCHEMA"):
        raise
    jsonschema = None

SVG = "{http://www.w3.org/2000/svg}"


def main() -> int:
    tool_path, schema_path, suite, workdir = sys.argv[1:5]
    tool = shlex.split(os.environ.get("DEVCTX_TOOL_EMULATOR", "")) + [tool_path]  # the emulator when cross-compiled
    device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    if device != "cpu":
        info = json.loads(subprocess.run([*tool, "info", "--json"], check=True, capture_output=True, text=True).stdout)
        if not any(d["api"] == "cuda" for d in info["devices"]):
            if devctx_env.require_gpu():
                print("DEVCTX_REQUIRE_GPU is on but devctx info lists no CUDA device")
                return 1
            print("no CUDA device: skipped")
            return 77
    svg_path = pathlib.Path(workdir) / f"bench_{suite}_{device.replace(':', '_')}.svg"
    out = subprocess.run([*tool, "bench", suite, "--device", device, "--max-bytes", "65536", "--json",
                          "--plot", str(svg_path)], check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    if jsonschema is None:
        print("python3-jsonschema not installed: the schema is not checked, the rest is")
    else:
        jsonschema.validate(doc, json.loads(pathlib.Path(schema_path).read_text()))
    rows = doc["results"]
    assert doc["suite"] == suite, doc["suite"]
    wanted = {"transfers", "launch", "alloc"} if suite == "all" else {suite}
    assert {r["suite"] for r in rows} == wanted, {r["suite"] for r in rows}
    for r in rows:
        if r["unit"] == "bytes":  # 4 KiB, 16 KiB, 64 KiB
            assert r["size"] in (4096, 16384, 65536), r
        if "gb_per_s" in r:  # bandwidth is bytes over time, as printed
            assert abs(r["gb_per_s"] - r["size"] / (r["time_us"] * 1000)) <= 1e-9 * r["gb_per_s"] + 1e-12, r

    if device != "cpu":  # raw CUDA next to devctx, for every size of every suite
        for s in wanted:
            devctx_sizes = sorted(r["size"] for r in rows if r["suite"] == s and r["series"].startswith("devctx"))
            raw_sizes = sorted(r["size"] for r in rows if r["suite"] == s and r["series"].startswith("raw CUDA"))
            assert raw_sizes and set(raw_sizes) == set(devctx_sizes), (s, devctx_sizes, raw_sizes)
        gpu_facts = [d for d in info["devices"] if d["api"] == "cuda"][0]
        for key in ("driver_version", "runtime_version", "pci_bus_id", "clock_khz", "l2_bytes", "free_memory_bytes"):
            assert key in gpu_facts, (key, gpu_facts)

    root = ET.parse(svg_path).getroot()  # raises unless well-formed
    assert root.tag == SVG + "svg", root.tag
    polylines = root.findall(f".//{SVG}polyline")
    plotted = [r for r in rows if r["suite"] == "transfers"] or rows
    series = []
    for r in plotted:
        name = r["series"] if r["suite"] == "transfers" else f'{r["suite"]}: {r["series"]}'
        if name not in series:
            series.append(name)
    assert len(polylines) == len(series), (len(polylines), series)
    for line, name in zip(polylines, series):
        assert line.find(f"{SVG}title").text == name, (line.find(f"{SVG}title").text, name)
        points = line.get("points").split()
        assert len(points) == sum(1 for r in plotted if name.endswith(r["series"])), (name, points)
    print(f"bench {suite}: {len(rows)} rows valid against the schema; {len(polylines)} polylines, one per series")
    return 0


if __name__ == "__main__":
    sys.exit(main())
