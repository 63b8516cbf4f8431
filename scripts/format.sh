#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layout of devctx's C++ sources: .clang-format, applied by one pinned clang-format (PyPI's
# clang-format==19.1.7, scripts/format-requirements.txt, in the venv scripts/setup.sh makes; the
# layout changes between clang-format releases, so CI and contributors use the same one).
#
# Usage: bash scripts/format.sh            format every tracked C++ file in place
#        bash scripts/format.sh --check    change nothing; list the files whose layout differs,
#                                          with the first differences, and exit 1 (CI runs this)
#        bash scripts/format.sh FILE...    format those files
# DEVCTX_CLANG_FORMAT names another clang-format binary (it must be version 19.1.7).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
want=19.1.7
cf="${DEVCTX_CLANG_FORMAT:-${DEVCTX_FORMAT_VENV:-$HOME/.cache/devctx/format-venv}/bin/clang-format}"
if ! [ -x "$cf" ] && ! command -v "$cf" >/dev/null 2>&1; then
  echo "format: $cf not found: run scripts/setup.sh (it installs clang-format==$want from PyPI into" \
       "~/.cache/devctx/format-venv), or name one in DEVCTX_CLANG_FORMAT" >&2
  exit 2
fi
version=$("$cf" --version | sed -nE 's/.*clang-format version ([0-9.]+).*/\1/p')
if [ "$version" != "$want" ]; then
  echo "format: $cf is clang-format $version; the layout is clang-format $want's (scripts/format-requirements.txt)" >&2
  exit 2
fi
check=0
files=()
case "${1:-}" in
  --check) check=1; shift ;;
esac
if [ $# -gt 0 ]; then
  files=("$@")
else
  # Every tracked C++ source: the library, its tests, tools, benchmarks, examples and bindings.
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
fi
if [ $check = 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 -P "$(nproc)" "$cf" -i --style=file
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$cf" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "format: ${#bad[@]} file(s) differ from .clang-format's layout (bash scripts/format.sh fixes them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  for f in "${bad[@]:0:3}"; do
    "$cf" --style=file "$f" | diff -u "$f" - | head -20 >&2 || true
  done
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format (clang-format $want)"
