#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/cpu/trace_memory.sh - the trace recorder's memory while 8 threads hammer one context for
# 60 s (docs/observability.md): devctx_bench_trace_memory in each mode (file: DEVCTX_TRACE_FILE,
# streamed; memory: records kept, as before they streamed; off), each under /usr/bin/time -v for
# the peak resident memory of the whole run (exit included), then `devctx trace summarize` of the
# streamed file: it must be complete JSON that the project's own tool reads.
#
#   bash bench/cpu/trace_memory.sh [BUILD_DIR] [SECONDS] [MODES]   (defaults: build 60 "file memory off")
set -euo pipefail
build=${1:-build}
seconds=${2:-60}
modes=${3:-file memory off}
bench="$build/bench/cpu/devctx_bench_trace_memory"
tool="$build/tools/devctx"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in $modes; do
  file="$work/trace_$mode.json"
  /usr/bin/time -v -o "$work/time_$mode.txt" "$bench" --mode "$mode" --seconds "$seconds" --threads 8 --file "$file"
  echo "  peak resident memory of the whole run (/usr/bin/time -v): $(awk -F': ' '/Maximum resident/ {print $2}' "$work/time_$mode.txt") KiB"
  if [ "$mode" != off ]; then
    echo "  trace file: $(stat -c %s "$file") bytes"
    "$tool" trace summarize "$file" | head -2
  fi
  rm -f "$file"
  echo
done
