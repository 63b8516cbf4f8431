#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/internal/trace_memory.sh - the trace recorder's memory while 8 threads hammer one context
# (docs/observability.md): devctx_bench_trace_memory in each mode, each under /usr/bin/time -v for
# the peak resident memory of the whole run (exit included):
#   file    DEVCTX_TRACE_FILE, streamed, for SECONDS (default 60); the file (gigabytes) is then
#           checked line by line (check_trace_lines.py): valid JSON, every operation 1..N
#   memory  records kept and written at the end, as DEVCTX_TRACE_FILE did before it streamed, for
#           MEMORY_SECONDS (default 10: its memory grows with the run)
#   off     no recording, for SECONDS
#   short   DEVCTX_TRACE_FILE for 5 s, read back by `devctx trace summarize` (the project's tool
#           loads a file whole)
#
#   bash bench/internal/trace_memory.sh [BUILD_DIR] [SECONDS] [MODES] [MEMORY_SECONDS]
#   (defaults: build 60 "file memory off short" 10). The files go to $TMPDIR (several GB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
seconds=${2:-60}
modes=${3:-file memory off short}
memory_seconds=${4:-10}
bench="$build/bench/internal/devctx_bench_trace_memory"
tool="$build/tools/devctx"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in $modes; do
  file="$work/trace_$mode.json"
  run_mode=$mode; run_seconds=$seconds
  [ "$mode" = memory ] && run_seconds=$memory_seconds
  [ "$mode" = short ] && { run_mode=file; run_seconds=5; }
  /usr/bin/time -v -o "$work/time.txt" "$bench" --mode "$run_mode" --seconds "$run_seconds" --threads 8 --file "$file"
  echo "  peak resident memory of the whole run (/usr/bin/time -v): $(awk -F': ' '/Maximum resident/ {print $2}' "$work/time.txt") KiB"
  case $mode in
    file) python3 "$here/check_trace_lines.py" "$file" ;;
    memory) echo "  trace file: $(stat -c %s "$file") bytes" ;;
    short) "$tool" trace summarize "$file" | head -3 ;;
  esac
  rm -f "$file"
  echo
done
