#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/internal/stack_clash_cost.sh - what -fstack-clash-protection (added by devctx_add_kernels to
# host-compiled kernel files) costs: compiles each file twice, without and with the flag, with
# the flags of a Release build, and counts the instructions that differ and the stack probes
# added. A function gets one probe per 4 KiB page of a frame larger than 4 KiB; a kernel with
# smaller frames compiles to the same machine code.
#
#   bash bench/internal/stack_clash_cost.sh [file.cpp ...]   (default: the kernel files of bench/,
#                                                         tests/ and examples/)
set -euo pipefail
cd "$(dirname "$0")/../.."
CXX=${CXX:-c++}
FLAGS=(-std=c++20 -O3 -march=native -DNDEBUG -Iinclude -Itests)
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=(bench/cpu/devctx_rows.cpp bench/internal/cpu_costs.cpp tests/kernel_test.cpp examples/*/main.cpp)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "$CXX $("$CXX" -dumpfullversion) ${FLAGS[*]}, with and without -fstack-clash-protection"
for f in "${files[@]}"; do
  "$CXX" "${FLAGS[@]}" -c "$f" -o "$work/off.o"
  "$CXX" "${FLAGS[@]}" -fstack-clash-protection -c "$f" -o "$work/on.o"
  # Per function: its instructions without addresses, so that code moved by an earlier change
  # does not count as changed.
  for v in off on; do
    objdump -d -C --no-show-raw-insn "$work/$v.o" |
      awk '/^[0-9a-f]+ <.*>:$/ { name = substr($0, index($0, "<") + 1); sub(/>:$/, "", name); next }
           /^ *[0-9a-f]+:\t/ { sub(/^ *[0-9a-f]+:\t/, ""); gsub(/[0-9a-f]+ <[^>]*>/, "<target>"); print name "\t" $0 }' > "$work/$v.s"
  done
  total=$(wc -l < "$work/off.s")
  changed=$( (diff "$work/off.s" "$work/on.s" || true) | grep '^[<>]' | cut -f1 | sed "s/^[<>] //" | sort -u || true)
  probes=$(grep -cE 'orq +\$0x0,' "$work/on.s" || true)
  printf '  %-42s %6d instructions, %2d probes, functions changed: %s\n' "$f" "$total" "$probes" \
    "$(if [ -n "$changed" ]; then echo "$changed" | tr '\n' ' '; else echo none; fi)"
done
