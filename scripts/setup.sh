#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages in scripts/packages.txt that are missing. Idempotent and quiet:
# when everything is present it does nothing (not even apt-get update).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mapfile -t wanted < <(grep -vE '^\s*(#|$)' "$here/packages.txt")
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  log=$(mktemp)
  if ! { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log"; echo "setup: package installation failed" >&2; exit 1
  fi
  rm -f "$log"
fi

# The fission translator (tools/fission, docs/internals.md): PyPI's libclang wheel, pinned in
# tools/fission/requirements.txt, in a venv that the configure step finds. Offline (the GPU
# machine): DEVCTX_FISSION_WHEEL=<path to the downloaded .whl> installs that file. Failing here
# only leaves CUDA-style barrier kernels on fibers (the configure step says so): setup goes on.
fission_venv="${DEVCTX_FISSION_VENV:-$HOME/.cache/devctx/fission-venv}"
if ! "$fission_venv/bin/python3" -c "import clang.cindex" >/dev/null 2>&1; then
  echo "setup: making $fission_venv for the fission translator (libclang from PyPI)"
  if [ -n "${DEVCTX_FISSION_WHEEL:-}" ]; then fission_source=(--no-index "$DEVCTX_FISSION_WHEEL")
  else fission_source=(-r "$here/../tools/fission/requirements.txt"); fi
  if ! { python3 -m venv "$fission_venv" && "$fission_venv/bin/pip" install -q "${fission_source[@]}"; } >/dev/null 2>&1; then
    echo "setup: could not install libclang for the fission translator: CUDA-style barrier kernels will run on fibers" >&2
  fi
fi

# The formatter (scripts/format.sh, which CI runs with --check): PyPI's clang-format, pinned in
# scripts/format-requirements.txt, in a venv of its own. Failing here fails the layout check only.
format_venv="${DEVCTX_FORMAT_VENV:-$HOME/.cache/devctx/format-venv}"
if ! [ -x "$format_venv/bin/clang-format" ]; then
  echo "setup: making $format_venv for scripts/format.sh (clang-format from PyPI)"
  if ! { python3 -m venv "$format_venv" && "$format_venv/bin/pip" install -q -r "$here/format-requirements.txt"; } >/dev/null 2>&1; then
    echo "setup: could not install clang-format: scripts/format.sh cannot check the layout" >&2
  fi
fi
