# SPDX-License-Identifier: Apache-2.0
# cmake/toolchains/aarch64-linux-gnu.cmake - cross-builds devctx for AArch64 Linux with Debian's
# cross compiler (g++-aarch64-linux-gnu) and runs its tests under qemu-user (qemu-aarch64).
# Libraries for the target come from Debian's multiarch packages (e.g. libgtest-dev:arm64, after
# `dpkg --add-architecture arm64`), found under /usr/lib/aarch64-linux-gnu.
# scripts/cross-aarch64.sh uses it:
#   cmake -S . -B build-aarch64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# ctest and try_run run target programs through qemu on the target's own runtime: Debian's arm64
# multiarch packages (libc6:arm64 with its loader /lib/ld-linux-aarch64.so.1, libstdc++6:arm64,
# libssl3:arm64), the same builds a Debian arm64 machine runs. Not the cross toolchain's copies
# under /usr/aarch64-linux-gnu: with those as qemu's root (-L), the loader came from
# libc6-arm64-cross while the build machine's /etc/ld.so.cache handed it the multiarch libc.so.6
# (pulled in by libssl3:arm64), two builds of glibc whose private data differ, and the first
# pthread_create looped forever in glibc's stack cache.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
# pkg-config (FindOpenSSL asks it first) reads the target's .pc files, not the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
