#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/python-stubs.sh [VENV] - regenerates python/devctx/_devctx.pyi with nanobind's stubgen from
# the extension installed in VENV (default build-python/venv: scripts/python-test.sh makes it),
# with python/stubgen_patterns.txt's argument types. python/tests/test_stubs.py fails until the
# stub checked in is what this writes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=$(cd "${1:-build-python/venv}" && pwd)/bin/python
patterns=$PWD/python/stubgen_patterns.txt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# From an empty directory, so that the installed package is the one imported.
(cd "$out" && "$python" -m nanobind.stubgen -q -P -m devctx._devctx -p "$patterns" -o _devctx.pyi)
cp "$out/_devctx.pyi" python/devctx/_devctx.pyi
echo "python/devctx/_devctx.pyi regenerated"
