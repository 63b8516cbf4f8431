#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/python-test.sh [VENV] - the devctx Python package's check: makes (or reuses) a virtual
# environment of Debian's python3 (VENV, default build-python/venv), installs the package into it
# with the README's one command, `pip install ./python` (with its test extras: pytest, NumPy),
# and runs the pytest suite (python/tests). Extra pip arguments come from DEVCTX_PIP_ARGS
# (e.g. --config-settings=cmake.define.DEVCTX_ENABLE_CUDA=OFF). A pytest run that collects no
# test (exit status 5) fails: an empty run must not pass for a green one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=${DEVCTX_PYTHON:-/usr/bin/python3}
venv=${1:-build-python/venv}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# shellcheck disable=SC2086  # DEVCTX_PIP_ARGS is a word list on purpose
"$venv/bin/python" -m pip install --disable-pip-version-check -q "./python[test]" ${DEVCTX_PIP_ARGS:-}
status=0
# From the repository root, so that python/devctx (the sources) does not shadow the installed package.
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests || status=$?
if [ "$status" -eq 5 ]; then
  echo "python tests: pytest collected no tests: failing (exit status 5)" >&2
  exit 1
fi
exit "$status"
