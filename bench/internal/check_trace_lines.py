# SPDX-License-Identifier: Apache-2.0
"""bench/internal/check_trace_lines.py - checks a devctx trace file too large to load whole (a minute of
8 threads writes gigabytes): devctx writes one event per line between the opening line and the
closing one, so each line is parsed as JSON on its own. Checks that every line is a JSON event,
that the host events' operation ids are 1..N with none missing or twice (their count and sum),
and that the closing otherData says N. Prints N, the events and the bytes.

usage: python3 check_trace_lines.py TRACE.json
"""
import json
import os
import sys


def main() -> int:
    path = sys.argv[1]
    count = total = events = 0
    tail = None
    with open(path, encoding="utf-8") as f:
        head = f.readline()
        assert head.startswith('{"displayTimeUnit":"ns","traceEvents":['), head[:80]
        for line in f:
            if line.startswith("]"):
                tail = json.loads("{" + line[2:])  # ],"otherData":{...}}
                break
            event = json.loads(line.rstrip("\n").rstrip(","))
            events += 1
            if event["pid"] == 0 and event["ph"] in ("X", "i") and "op" in event.get("args", {}):
                count += 1
                total += event["args"]["op"]
        assert f.read() == "", "text after the closing line"
    assert tail is not None, "no closing line: the file was cut short"
    n = tail["otherData"]["operations"]
    assert count == n and total == n * (n + 1) // 2, (count, total, n)
    print(f"{path}: valid, complete: {n} operations (ids 1..{n}), {events} events, {os.path.getsize(path)} bytes, "
          f"{tail['otherData']['operations_without_device_time']} without device time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
