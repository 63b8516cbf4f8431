#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages the CPU kernel benchmark needs. Safe to rerun:
# when everything is already installed it does nothing, not even apt-get update.
#   g++ (with libgomp)  OpenMP baseline and the benchmark itself
#   cmake               build
#   ocl-icd-opencl-dev  libOpenCL.so ICD loader to link against
#   opencl-c-headers    CL/cl.h
#   pocl-opencl-icd     PoCL, the OpenCL implementation that runs on the CPU
set -euo pipefail

packages=(g++ cmake ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd)

missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi

echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# apt's chatter goes to a log that is shown only when something fails.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { "${sudo_cmd[@]}" apt-get update -qq &&
       "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup.sh: package installation failed" >&2
    exit 1
fi
