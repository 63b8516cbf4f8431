#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/python-test.sh [VENV] - the devctx Python package's check: makes (or reuses) a virtual
# environment of Debian's python3 (VENV, default build-python/venv), installs the package into it
# with the README's one command, `pip install .` (with its test extras: pytest, NumPy, nanobind
# for the stub check), and runs the pytest suite (python/tests). A pytest run that collects no
# test (exit status 5) fails: an empty run must not pass for a green one.
#
# Then the package as it is shipped (skipped with DEVCTX_PYTHON_SDIST=0): builds the sdist
# (python -m build --sdist), checks that it holds what a build needs and nothing else
# (scripts/python-package-check.py), builds a wheel from it with `pip wheel`, checks the wheel
# and imports it and runs a kernel from it. The sdist step compiles devctx a second time: about
# as long again as the install (times printed). Extra pip arguments for both builds come from
# DEVCTX_PIP_ARGS (e.g. --config-settings=cmake.define.DEVCTX_ENABLE_CUDA=OFF).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=${DEVCTX_PYTHON:-/usr/bin/python3}
venv=${1:-build-python/venv}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
start=$SECONDS
# shellcheck disable=SC2086  # DEVCTX_PIP_ARGS is a word list on purpose
"$venv/bin/python" -m pip install --disable-pip-version-check -q ".[test]" ${DEVCTX_PIP_ARGS:-}
echo "python package: installed in $((SECONDS - start)) s"
status=0
# From the repository root, so that python/devctx (the sources) does not shadow the installed package.
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests || status=$?
if [ "$status" -eq 5 ]; then
  echo "python tests: pytest collected no tests: failing (exit status 5)" >&2
  exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
[ "${DEVCTX_PYTHON_SDIST:-1}" = 0 ] && exit 0

# ---- the sdist, and a wheel built from it ---------------------------------------------------------
start=$SECONDS
dist=$(dirname "$venv")/dist
rm -rf "$dist" && mkdir -p "$dist"
"$venv/bin/python" -m pip install --disable-pip-version-check -q build
"$venv/bin/python" -m build --sdist --outdir "$dist" . >"$dist/sdist.log" 2>&1 || { cat "$dist/sdist.log"; exit 1; }
sdist=$(ls "$dist"/devctx-*.tar.gz)
"$venv/bin/python" scripts/python-package-check.py sdist "$sdist"
echo "python package: sdist built and checked in $((SECONDS - start)) s"
start=$SECONDS
# shellcheck disable=SC2086
"$venv/bin/python" -m pip wheel --disable-pip-version-check -q --no-deps -w "$dist" "$sdist" ${DEVCTX_PIP_ARGS:-}
wheel=$(ls "$dist"/devctx-*.whl)
"$venv/bin/python" scripts/python-package-check.py wheel "$wheel"
# The wheel's own module (not the one installed above) runs a kernel.
site="$dist/site"
"$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps --target "$site" "$wheel"
PYTHONPATH="$site" "$venv/bin/python" - "$site" <<'PY'
import os, sys
import numpy as np
import devctx
assert os.path.realpath(devctx.__file__).startswith(os.path.realpath(sys.argv[1])), devctx.__file__
ctx = devctx.Context("cpu")
x = np.random.default_rng().random(1000, dtype=np.float32)
a = devctx.to_device(ctx, x)
out = ctx.empty(1000)
ctx.fill(out, float("nan"))
devctx.vector_add(ctx, a, a, out)
assert (devctx.to_numpy(out) == x + x).all()
print(f"wheel from the sdist: devctx {devctx.__version__} imports and runs vector_add")
PY
echo "python package: wheel built from the sdist and checked in $((SECONDS - start)) s"
