#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# scripts/header_layers.py - the one definition of the layers of devctx's headers, and the check
# that every #include <devctx/...> in include/devctx runs down or sideways, never up (ctest
# include.layers). A header belongs to the first layer whose pattern matches its path (relative to
# include/devctx); a header no layer names is an error too, so a new header gets a place here.
# Exits 1 listing each upward include and each unplaced header.
import pathlib
import re
import sys

# Bottom to top. A header may include headers of its own layer or of layers below it.
LAYERS = [
    ("base", [r"detail/base/.*"]),  # no public header below: config, records, the seam, access
    ("values", [r"launch\.hpp", r"error\.hpp", r"version\.hpp", r"device_info\.hpp", r"trace\.hpp"]),
    ("backends", [r"backend\.hpp"]),  # the descriptors: names and facts, above device_info.hpp
    ("device", [r"span\.hpp", r"simd\.hpp", r"print\.hpp", r"tensor\.hpp"]),
    ("device-backends", [r"detail/device/.*"]),
    # block.hpp declares devctx::Block and includes its backend halves (detail/device/block_*.hpp)
    ("kernels", [r"block\.hpp", r"kernel\.hpp", r"collectives\.hpp"]),
    ("memory", [r"untyped_buffer\.hpp", r"buffer\.hpp", r"device_view\.hpp", r"device_tensor\.hpp", r"event\.hpp"]),
    # endpoints, kernel arguments, launches, buffer verbs; runtime kernels' signatures and entries
    ("host-templates", [r"detail/host/.*", r"detail/runtime/.*"]),
    ("streams", [r"stream\.hpp", r"module\.hpp"]),  # stream.hpp includes module.hpp at its end
    ("contexts", [r"context\.hpp", r"graph\.hpp", r"interop\.hpp", r"comm\.hpp", r"dlpack\.hpp"]),
    ("umbrella", [r"devctx\.hpp"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]devctx/([^>"]+)[>"]', re.M)


def layer_of(rel: str):
    for index, (_, patterns) in enumerate(LAYERS):
        if any(re.fullmatch(p, rel) for p in patterns):
            return index
    return None


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent / "include" / "devctx"
    problems = []
    for path in sorted(root.rglob("*.hpp")):
        rel = path.relative_to(root).as_posix()
        own = layer_of(rel)
        if own is None:
            problems.append(f"{rel}: in no layer; give it one in scripts/header_layers.py")
            continue
        for target in INCLUDE.findall(path.read_text(encoding="utf-8")):
            other = layer_of(target)
            if other is None:
                problems.append(f"{rel}: includes <devctx/{target}>, which is in no layer")
            elif other > own:
                problems.append(f"{rel} (layer {LAYERS[own][0]}) includes <devctx/{target}> (layer "
                                f"{LAYERS[other][0]}, above it)")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) against the layers of scripts/header_layers.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
