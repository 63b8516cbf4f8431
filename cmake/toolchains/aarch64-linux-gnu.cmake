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
# ctest and try_run run target programs through qemu, with the cross toolchain's C and C++
# runtime libraries (libc6-arm64-cross, libstdc++6-arm64-cross) as the target's root.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# pkg-config (FindOpenSSL asks it first) reads the target's .pc files, not the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
