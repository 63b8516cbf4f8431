#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/consumers/run.sh WORKDIR CPU_BUILD [CUDA_BUILD]
#
# Every way a project can take devctx in, each tried as an outside project
# (tests/consumers/<route>/) that is configured, built and run on the CPU:
#   find_package               devctx installed, found with find_package(devctx COMPONENTS ...)
#   add_subdirectory           devctx's source added to the project
#   fetchcontent               FetchContent_Declare + FetchContent_MakeAvailable
#   fetchcontent_find_package  the same with FIND_PACKAGE_ARGS: installed if found, else fetched
# each with `project(... LANGUAGES CXX)` as it is and with CMAKE_CXX_STANDARD 20 (required), on
# Debian's CMake and on a current CMake from PyPI (a venv in WORKDIR), with nvcc on the machine
# (CUDA_BUILD given: devctx and the kernels are compiled with it, and run on the CPU backend) and
# without (nvcc taken out of PATH). Also: a shared libdevctx installed in the Debian layout
# (SONAME, no static TLS, loaded with dlopen by a module after the static TLS surplus is used
# up), the CUDA runtime a program ends up with (exactly one), components that are missing,
# pkg-config, the Conan recipe (conan create), and MPI as the separate component `mpi` (when the
# CPU build has MPI): programs that do not ask for it configure, build and run where
# find_package(MPI) finds nothing, and mpi_app uses it through devctx::mpi and devctx-mpi.pc.
#
# DEVCTX_CONSUMERS_ONLY=<regex> runs only the jobs and checks whose names match (while working
# on one route); the shared Debian-layout build only when the regex's text contains "shared", PyPI's
# CMake and Conan only when it contains "pypi", "conan" or "shared" (DEVCTX_CONSUMERS_ONLY=mpi:
# the MPI jobs alone, in about a minute).
#
# CPU_BUILD and CUDA_BUILD are configured and built devctx trees (CPU-only, and with CUDA), as
# scripts/test.sh leaves them; they are installed into WORKDIR and the routes that build devctx
# themselves use this checkout. Jobs run two at a time with one compile each (ccache, when
# installed, keeps compiles that repeat across jobs cheap). Exits 0 when everything passes; the
# logs of each job are in WORKDIR/<job>/.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 WORKDIR CPU_BUILD [CUDA_BUILD]" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
mkdir -p "$1"
work=$(cd "$1" && pwd)
cpu_build=$(cd "$2" && pwd)
cuda_build=""
[[ $# -eq 3 ]] && cuda_build=$(cd "$3" && pwd)

# The current CMake and Conan the CI uses, from PyPI (pinned so that a run can be repeated).
pypi_cmake=${DEVCTX_CI_CMAKE:-cmake==4.4.5}
pypi_conan=${DEVCTX_CI_CONAN:-conan==2.34.0}
parallel=2
started=$SECONDS
only=${DEVCTX_CONSUMERS_ONLY:-}
wanted() { [[ -z "$only" || "$1" =~ $only ]]; }
# Whether a selection (DEVCTX_CONSUMERS_ONLY) can include jobs that need WORD's preparation.
selects() { [[ -z "$only" || "$only" == *"$1"* ]]; }

step() { printf '\n== %s\n' "$*"; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# ---- tools ---------------------------------------------------------------------------------------
step "tools: a current CMake and Conan from PyPI in $work/venv"
venv="$work/venv"
if ! selects pypi && ! selects conan && ! selects shared; then  # the shared layout's job uses PyPI's CMake
  echo "(not needed for the jobs selected)"
elif ! "$venv/bin/pip" show -q "${pypi_cmake%%==*}" "${pypi_conan%%==*}" > /dev/null 2>&1 ||
   [[ "$("$venv/bin/cmake" --version 2> /dev/null | head -1)" != "cmake version ${pypi_cmake#*==}" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "$pypi_cmake" "$pypi_conan"
fi
cmake_debian=$(command -v cmake)
cmake_pypi="$venv/bin/cmake"
if selects pypi || selects conan || selects shared; then
  echo "Debian's: $("$cmake_debian" --version | head -1); PyPI's: $("$cmake_pypi" --version | head -1); $("$venv/bin/conan" --version)"
fi

if command -v ccache > /dev/null; then
  export CCACHE_DIR="$work/ccache" CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=2G
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  ccache --zero-stats > /dev/null
  echo "ccache: $CCACHE_DIR"
fi

# What a machine without CUDA sees: PATH without the directories that hold an nvcc, and CMake told
# to ignore them and /usr/local/cuda/bin (it also looks in <prefix>/bin of /usr/local, ...).
nvcc_dirs=$( (tr ':' '\n' <<< "$PATH"; echo /usr/local/bin; echo /usr/local/cuda/bin) |
  while read -r dir; do [[ -x "$dir/nvcc" ]] && echo "$dir"; done | sort -u | paste -sd';')
nocuda_path=$(tr ':' '\n' <<< "$PATH" | while read -r dir; do [[ -x "$dir/nvcc" ]] || echo "$dir"; done | paste -sd:)
nocuda_cmake=("-DCMAKE_IGNORE_PATH=$nvcc_dirs")
if env PATH="$nocuda_path" sh -c 'command -v nvcc' > /dev/null; then
  echo "FAIL: cannot hide nvcc from PATH" >&2
  exit 1
fi
have_nvcc=no
[[ -n "$cuda_build" ]] && command -v nvcc > /dev/null && have_nvcc=yes

# ---- what the routes consume ---------------------------------------------------------------------
step "devctx for the routes: installs, a shared Debian-layout install, a source archive"
# A FetchContent URL: this checkout's files as git sees them (committed or not, never ignored ones).
archive="$work/devctx-src.tar.gz"
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
  xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' |
  tar --null -T - --transform 's,^,devctx/,' -czf "$archive")
url="file://$archive"

prefix_cpu="$work/prefix-cpu"
rm -rf "$prefix_cpu" && cmake --install "$cpu_build" --prefix "$prefix_cpu" > "$work/install-cpu.log"
if [[ -n "$cuda_build" ]]; then
  prefix_cuda="$work/prefix-cuda"
  rm -rf "$prefix_cuda" && cmake --install "$cuda_build" --prefix "$prefix_cuda" > "$work/install-cuda.log"
fi

# A shared, CPU-only devctx with the tool, installed as a Debian package would be (prefix /usr,
# into a staging directory).
shared_build="$work/shared-build"
stage="$work/stage"
multiarch="" libdir=""
if selects shared; then
rm -rf "$shared_build"
# -O2 without debug information: what is checked here is the layout, not the code (and CI's time).
env PATH="$nocuda_path" cmake -S "$src" -B "$shared_build" -G Ninja "${nocuda_cmake[@]}" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr -DDEVCTX_BUILD_TESTS=OFF -DDEVCTX_BUILD_EXAMPLES=OFF \
  -DDEVCTX_BUILD_BENCH=OFF > "$work/shared-configure.log" 2>&1 ||
  { tail -30 "$work/shared-configure.log"; echo "FAIL: configuring the shared build"; exit 1; }
cmake --build "$shared_build" -j "$parallel" > "$work/shared-build.log" 2>&1 ||
  { tail -30 "$work/shared-build.log"; echo "FAIL: building the shared build"; exit 1; }
rm -rf "$stage" && DESTDIR="$stage" cmake --install "$shared_build" > "$work/shared-install.log"
multiarch=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$shared_build/CMakeCache.txt")
libdir="$stage/usr/$multiarch"
version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$shared_build/devctxConfigVersion.cmake")
soversion=${version%.*}
for f in "$multiarch/libdevctx.so.$version" "$multiarch/libdevctx.so.$soversion" "$multiarch/libdevctx.so" \
         "$multiarch/libdevctx_mpi.so.$version" "$multiarch/libdevctx_mpi.so" "$multiarch/cmake/devctx/devctxMpiTargets.cmake" \
         "$multiarch/cmake/devctx/devctxConfig.cmake" "$multiarch/cmake/devctx/devctxConfigVersion.cmake" \
         "$multiarch/pkgconfig/devctx.pc" "$multiarch/pkgconfig/devctx-mpi.pc" include/devctx/devctx.hpp include/devctx/version.hpp \
         share/doc/devctx/LICENSE share/doc/devctx/CHANGELOG.md bin/devctx; do
  [[ -e "$stage/usr/$f" ]] || fail "the Debian-layout install has no /usr/$f"
done
echo "installed /usr/$multiarch/libdevctx.so.$version and the rest under $stage"
dynamic=$(readelf -dW "$libdir/libdevctx.so.$version")
grep -q "Library soname: \[libdevctx.so.$soversion\]" <<< "$dynamic" || fail "libdevctx's SONAME is not libdevctx.so.$soversion"
grep -q "STATIC_TLS" <<< "$dynamic" && fail "libdevctx.so uses static (initial-exec) TLS: dlopen may fail"
grep -q "TEXTREL" <<< "$dynamic" && fail "libdevctx.so has text relocations"
# The runtime component alone: the shared libraries (SONAME links included) and the docs.
DESTDIR="$work/stage-runtime" cmake --install "$shared_build" --component devctx_runtime > /dev/null
runtime_files=$(cd "$work/stage-runtime" && find . \( -type f -o -type l \) | LC_ALL=C sort | paste -sd' ')
[[ "$runtime_files" == "./usr/$multiarch/libdevctx.so.$soversion ./usr/$multiarch/libdevctx.so.$version ./usr/$multiarch/libdevctx_mpi.so.$soversion ./usr/$multiarch/libdevctx_mpi.so.$version ./usr/share/doc/devctx/CHANGELOG.md ./usr/share/doc/devctx/LICENSE ./usr/share/doc/devctx/README.md" ]] ||
  fail "the devctx_runtime component installs: $runtime_files"
rm -rf "$work/stage-runtime"
cmake -DVERSION="$version" -DLIBRARY="$libdir/libdevctx.so.$version" -DSHARED=ON -DTOOL="$stage/usr/bin/devctx" \
  -DPKG_CONFIG="$libdir/pkgconfig/devctx.pc" -DCONFIG_VERSION="$libdir/cmake/devctx/devctxConfigVersion.cmake" \
  -P "$src/cmake/devctxCheckVersion.cmake" > "$work/shared-version.log" 2>&1 ||
  { cat "$work/shared-version.log"; fail "the shared install's versions disagree (the tool runs through its RPATH)"; }
else
  echo "(the shared Debian-layout build: not needed for the jobs selected)"
fi

# ---- the jobs ------------------------------------------------------------------------------------
# job NAME ROUTE CMAKE ENV EXPECT [cmake args...]: configures tests/consumers/ROUTE into
# WORKDIR/NAME with CMAKE (debian|pypi), with nvcc (ENV=cuda) or without (nocuda), builds it and
# runs its programs. EXPECT: a regular expression every line of which the configure output must
# match somewhere (|-separated alternatives stay within one line; lines separated by newlines).
# Results go to WORKDIR/NAME/result ("ok ..." or "FAIL ...").
# job_fails NAME ROUTE CMAKE ENV EXPECT [cmake args...]: the configure must fail, printing EXPECT.
run_job() {
  local mode=$1 name=$2 route=$3 which=$4 env_kind=$5 expect=$6
  shift 6
  local dir="$work/$name" cmake_bin=$cmake_debian path=$PATH t0=$SECONDS
  [[ $which == pypi ]] && cmake_bin=$cmake_pypi
  [[ $env_kind == nocuda ]] && path=$nocuda_path && set -- "${nocuda_cmake[@]}" "$@"
  rm -rf "$dir" && mkdir -p "$dir"
  result() { echo "$* ($((SECONDS - t0)) s)" > "$dir/result"; }
  local rc=0
  env -u CUDACXX PATH="$path" "$cmake_bin" -S "$here/$route" -B "$dir/build" -G Ninja "$@" > "$dir/configure.log" 2>&1 || rc=$?
  local line
  while IFS= read -r line; do
    [[ -z "$line" ]] && continue
    grep -Eq -- "$line" "$dir/configure.log" || { result "FAIL configure printed nothing matching '$line'"; return; }
  done <<< "$expect"
  if [[ $mode == fails ]]; then
    [[ $rc -ne 0 ]] && result "ok (configure failed as it must)" || result "FAIL configure succeeded"
    return
  fi
  [[ $rc -eq 0 ]] || { result "FAIL configure (exit $rc)"; return; }
  env PATH="$path" "$cmake_bin" --build "$dir/build" -j 1 > "$dir/build.log" 2>&1 || { result "FAIL build"; return; }
  local program
  local programs=(app host_only)
  [[ -e "$dir/build/mpi_app" ]] && programs+=(mpi_app)
  for program in "${programs[@]}"; do
    env -u DEVCTX_DEVICE "$dir/build/$program" > "$dir/$program.log" 2>&1 && grep -q '^PASSED' "$dir/$program.log" ||
      { result "FAIL $program: $(tail -1 "$dir/$program.log")"; return; }
  done
  # Inside another project devctx installs nothing unless asked (-DDEVCTX_INSTALL=ON); the
  # consumer projects install nothing themselves.
  "$cmake_bin" --install "$dir/build" --prefix "$dir/installed" > "$dir/install.log" 2>&1 || { result "FAIL install"; return; }
  if [[ " $* " == *" -DDEVCTX_INSTALL=ON "* ]]; then
    local f
    for f in include/devctx/version.hpp lib/libdevctx.a lib/cmake/devctx/devctxConfig.cmake lib/pkgconfig/devctx.pc \
             share/doc/devctx/LICENSE; do
      [[ -e "$dir/installed/$f" ]] || { result "FAIL with DEVCTX_INSTALL=ON, installing the project gave no $f"; return; }
    done
  elif [[ -n "$(find "$dir/installed" -type f 2> /dev/null)" ]]; then
    result "FAIL installing the project installed devctx's files"
    return
  fi
  if [[ -x "$dir/build/loader" ]]; then
    local fillers=()
    for b in 4096 2048 1024 512 256 128 64 32 16; do fillers+=("$dir/build/libtls_filler_$b.so"); done
    "$dir/build/loader" "$dir/build/libplugin.so" "${fillers[@]}" > "$dir/loader.log" 2>&1 &&
      grep -q '^PASSED' "$dir/loader.log" || { result "FAIL loader: $(tail -1 "$dir/loader.log")"; return; }
  fi
  result "ok $(grep -o '^-- consumer: devctx.*' "$dir/configure.log" | cut -c4- | head -1)"
}
pids=()
launch() {
  "$@" &
  pids+=($!)
  if [[ ${#pids[@]} -ge $parallel ]]; then
    wait -n || true
    local alive=() pid
    for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null && alive+=("$pid"); done
    pids=("${alive[@]}")
  fi
}
jobs_run=()
job() { wanted "$1" || return 0; jobs_run+=("$1"); launch run_job passes "$@"; }
job_fails() { wanted "$1" || return 0; jobs_run+=("$1"); launch run_job fails "$@"; }

arch_agree="architectures='([^']+)' app-architectures='\\1'"  # kernels default to devctx's architectures
picks="devctx: CUDA kernels for architectures [0-9]"            # devctx picks and says which
fetched="devctx fetched and built here"
installed="devctx from find_package"

step "consumer routes (2 at a time)"
if [[ $have_nvcc == yes ]]; then
  for which in debian pypi; do
    for cxx20 in OFF ON; do
      tag=$which && [[ $cxx20 == ON ]] && tag+=-cxx20
      common=(-DCONSUMER_CXX20=$cxx20)
      job "cuda-find_package-$tag" find_package $which cuda "cuda_FOUND=TRUE"$'\n'"$arch_agree" "${common[@]}" \
        -DCMAKE_PREFIX_PATH="$prefix_cuda" "-DCONSUMER_COMPONENTS=cpu;cuda" -DCONSUMER_DLOPEN=$cxx20
      # PyPI's CMake builds devctx in a subdirectory with CUDA in the shared route below: each CMake
      # version compiles devctx with its own command lines, a set of ccache misses per route.
      [[ $which == debian ]] && job "cuda-add_subdirectory-$tag" add_subdirectory $which cuda "$picks"$'\n'"$arch_agree" \
        "${common[@]}" -DDEVCTX_SOURCE_DIR="$src"
      job "cuda-fetchcontent-$tag" fetchcontent $which cuda "$picks"$'\n'"$arch_agree" "${common[@]}" -DDEVCTX_URL="$url"
    done
  done
  # devctx_add_kernels inside a function: fine after find_package (CUDA is on for the directory),
  # a message saying what to do after add_subdirectory in a directory without CUDA.
  job "cuda-find_package-debian-kernels-in-function" find_package debian cuda "$arch_agree" \
    -DCMAKE_PREFIX_PATH="$prefix_cuda" -DCONSUMER_KERNELS_IN_FUNCTION=ON
  job_fails "cuda-add_subdirectory-kernels-in-function" add_subdirectory debian cuda \
    "was called inside the function"$'\n'"consumer_add_kernels\(\)"$'\n'"enable_language\(CUDA\)" \
    -DDEVCTX_SOURCE_DIR="$src" \
    -DCONSUMER_KERNELS_IN_FUNCTION=ON
  job "cuda-fetchcontent_find_package-debian" fetchcontent_find_package debian cuda "$installed"$'\n'"$arch_agree" \
    -DDEVCTX_URL="$url" -DCMAKE_PREFIX_PATH="$prefix_cuda"
  job "cuda-fetchcontent_find_package-pypi-cxx20" fetchcontent_find_package pypi cuda "$fetched"$'\n'"$arch_agree" \
    -DDEVCTX_URL="$url" -DCONSUMER_CXX20=ON
  # A shared libdevctx with CUDA: the program and the module get the shared CUDA runtime, once.
  job "cuda-shared-add_subdirectory-pypi" add_subdirectory pypi cuda "consumer: devctx .* SHARED_LIBRARY shared=ON cuda=ON" \
    -DDEVCTX_SOURCE_DIR="$src" -DBUILD_SHARED_LIBS=ON -DCONSUMER_DLOPEN=ON
  # A CUDA devctx on a machine without nvcc, and a CPU-only devctx asked for its cuda component.
  job_fails "cuda-install-without-nvcc" find_package debian nocuda "this devctx was built with CUDA"$'\n'"need nvcc too" \
    -DCMAKE_PREFIX_PATH="$prefix_cuda"
fi
job_fails "cpu-find_package-component-cuda" find_package debian cuda \
  "this devctx was built without CUDA"$'\n'"it has no component 'cuda'" -DCMAKE_PREFIX_PATH="$prefix_cpu" \
  "-DCONSUMER_COMPONENTS=cpu;cuda"
# Without nvcc, the routes that build devctx run with Debian's CMake only: each CMake version
# compiles devctx with its own command lines (no ccache hits across them), and PyPI's CMake
# already builds devctx from source in the CUDA routes above and the FetchContent fallback below.
for which in debian pypi; do
  for cxx20 in OFF ON; do
    tag=$which && [[ $cxx20 == ON ]] && tag+=-cxx20
    common=(-DCONSUMER_CXX20=$cxx20)
    job "nocuda-find_package-$tag" find_package $which nocuda "cuda=OFF cuda_FOUND=FALSE" "${common[@]}" -DCMAKE_PREFIX_PATH="$prefix_cpu"
    [[ $which == pypi ]] && continue
    [[ $tag == debian-cxx20 ]] && common+=(-DDEVCTX_INSTALL=ON)  # devctx installed with the project
    job "nocuda-add_subdirectory-$tag" add_subdirectory $which nocuda "cuda=OFF" "${common[@]}" -DDEVCTX_SOURCE_DIR="$src"
    job "nocuda-fetchcontent-$tag" fetchcontent $which nocuda "cuda=OFF" "${common[@]}" -DDEVCTX_URL="$url"
  done
done
job "nocuda-fetchcontent_find_package-debian-cxx20" fetchcontent_find_package debian nocuda "$fetched" \
  -DDEVCTX_URL="$url" -DCONSUMER_CXX20=ON
job "nocuda-fetchcontent_find_package-pypi" fetchcontent_find_package pypi nocuda "$installed" \
  -DDEVCTX_URL="$url" -DCMAKE_PREFIX_PATH="$prefix_cpu"
# MPI is the component `mpi` (devctx::mpi), apart from the rest: against the CPU install (built
# with MPI here), a project that does not ask for it configures with find_package(MPI) disabled
# (what a machine without MPI's development files gives) and builds and runs its programs with no
# MPI on their link line; asking for it there fails, saying why; asked for where MPI is found,
# mpi_app runs Communicator::create_mpi through devctx::mpi.
cpu_has_mpi=no
grep -q '^set(devctx_MPI ON)' "$prefix_cpu/lib/cmake/devctx/devctxBuildInfo.cmake" && cpu_has_mpi=yes
if [[ $cpu_has_mpi == yes ]]; then
  job "mpi-hidden-find_package-debian" find_package debian nocuda "mpi=ON mpi_FOUND=TRUE mpi-target=OFF mpi_app=OFF MPI_FOUND=$" \
    -DCMAKE_PREFIX_PATH="$prefix_cpu" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
  job_fails "mpi-hidden-component-mpi" find_package debian nocuda \
    "the component 'mpi' of this \(static\) devctx links MPI"$'\n'"found no MPI development files" \
    -DCMAKE_PREFIX_PATH="$prefix_cpu" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "-DCONSUMER_COMPONENTS=cpu;mpi"
  job "mpi-component-find_package-debian" find_package debian nocuda "mpi=ON mpi_FOUND=TRUE mpi-target=ON mpi_app=ON MPI_FOUND=TRUE" \
    -DCMAKE_PREFIX_PATH="$prefix_cpu" "-DCONSUMER_COMPONENTS=cpu;mpi"
else
  job_fails "mpi-component-without-mpi" find_package debian nocuda "this devctx was built without MPI"$'\n'"no component 'mpi'" \
    -DCMAKE_PREFIX_PATH="$prefix_cpu" "-DCONSUMER_COMPONENTS=cpu;mpi"
fi
# The shared Debian-layout install, found through its multiarch directory, loaded with dlopen.
selects shared && job "shared-find_package-debian-layout" find_package pypi nocuda "consumer: devctx .* SHARED_LIBRARY shared=ON cuda=OFF" \
  -DCMAKE_PREFIX_PATH="$stage/usr" -DCONSUMER_DLOPEN=ON -DCONSUMER_CXX20=ON
wait

for name in "${jobs_run[@]}"; do
  r=$(cat "$work/$name/result" 2> /dev/null || echo "FAIL no result")
  if [[ $r == ok* ]]; then printf '  ok  %-48s %s\n' "$name" "${r#ok }"; else fail "$name: $r (logs: $work/$name)"; fi
done

# The CUDA runtime a program gets: the static one inside it with a static libdevctx; the shared
# one, not a second copy, with a shared libdevctx (else kernels registered in the program would be
# unknown to devctx's runtime).
one_runtime() {
  local what=$1 kind=$2 file=$3
  local needs defines
  [[ -e "$file" ]] || { wanted "$what" && fail "$what: $file was not built"; return 0; }
  needs=$(readelf -dW "$file" | grep -c 'NEEDED.*libcudart\.so' || true)
  defines=$(nm --defined-only "$file" 2> /dev/null | grep -c ' [Tt] cudaLaunchKernel$' || true)
  if [[ $kind == static && ($needs -ne 0 || $defines -ne 1) ]] || [[ $kind == shared && ($needs -ne 1 || $defines -ne 0) ]]; then
    fail "$what: expected the $kind CUDA runtime only (libcudart.so needed $needs times, cudaLaunchKernel defined $defines times)"
  else
    printf '  ok  %-48s %s\n' "$what" "the $kind CUDA runtime only"
  fi
}
if [[ $have_nvcc == yes ]]; then
  step "one CUDA runtime per process"
  one_runtime "static devctx: app" static "$work/cuda-find_package-debian/build/app"
  one_runtime "static devctx: plugin" static "$work/cuda-find_package-debian-cxx20/build/libplugin.so"
  one_runtime "shared devctx: libdevctx.so" shared "$(ls "$work"/cuda-shared-add_subdirectory-pypi/build/devctx/libdevctx.so.*.*.* 2> /dev/null)"
  one_runtime "shared devctx: app" shared "$work/cuda-shared-add_subdirectory-pypi/build/app"
  one_runtime "shared devctx: plugin" shared "$work/cuda-shared-add_subdirectory-pypi/build/libplugin.so"
fi

# ---- pkg-config ----------------------------------------------------------------------------------
# pc_check NAME PREFIX_PC_DIR [LD_LIBRARY_PATH]: app.cpp and host_only.cpp built with the C++
# compiler and `pkg-config --cflags --libs devctx` alone, run on the CPU backend; app.cpp again as a
# user's UBSan build (devctx's headers must add no report); stack_overflow.cpp must end with
# devctx's report naming kernel, block and thread (the Cflags carry what the report needs).
pc_check() {
  local name=$1 pc_dir=$2 ld_path=${3:-}
  wanted "pkg-config-$name" || return 0
  local dir="$work/pkg-config-$name" program flags
  rm -rf "$dir" && mkdir -p "$dir"
  flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs devctx) || { fail "pkg-config $name: devctx.pc not found"; return; }
  local ubsan=(-fsanitize=undefined -fno-sanitize-recover=undefined)
  for program in app host_only app:ubsan; do
    local extra=() out=${program/:/-}
    [[ $program == *:ubsan ]] && extra=("${ubsan[@]}")
    # shellcheck disable=SC2086  # the flags are words
    c++ -std=c++20 -O1 "${extra[@]}" "$here/common/${program%:*}.cpp" $flags -o "$dir/$out" > "$dir/$out-build.log" 2>&1 ||
      { fail "pkg-config $name: building $out with '${extra[*]} $flags'"; tail -5 "$dir/$out-build.log"; return; }
    DEVCTX_DEVICE=cpu LD_LIBRARY_PATH="$ld_path" "$dir/$out" > "$dir/$out.log" 2>&1 && grep -q '^PASSED' "$dir/$out.log" ||
      { fail "pkg-config $name: $out: $(tail -1 "$dir/$out.log")"; return; }
  done
  # shellcheck disable=SC2086
  c++ -std=c++20 -O1 "$here/common/stack_overflow.cpp" $flags -o "$dir/stack_overflow" > "$dir/stack_overflow-build.log" 2>&1 ||
    { fail "pkg-config $name: building stack_overflow with '$flags'"; tail -5 "$dir/stack_overflow-build.log"; return; }
  local status=0
  # (The group's 2>/dev/null keeps bash's own "Segmentation fault" line out of the log.)
  { (ulimit -c 0; LD_LIBRARY_PATH="$ld_path" exec "$dir/stack_overflow") > "$dir/stack_overflow.log" 2>&1; } 2> /dev/null || status=$?
  [[ $status == 139 ]] && grep -q "stack overflow in kernel '[^']*big_frame', block ([0-9, ]*), thread ([0-9, ]*)" "$dir/stack_overflow.log" ||
    { fail "pkg-config $name: stack_overflow (exit status $status): $(tail -1 "$dir/stack_overflow.log")"; return; }
  printf '  ok  %-48s %s\n' "pkg-config $name" "$flags"
}
step "pkg-config"
pc_check cpu-static "$prefix_cpu/lib/pkgconfig"
[[ -n "$libdir" ]] && pc_check cpu-shared-debian-layout "$libdir/pkgconfig" "$libdir"
# devctx.pc and libdevctx.a know nothing of MPI; devctx-mpi.pc builds mpi_app (with MPI's libraries).
if [[ $cpu_has_mpi == yes ]] && wanted pkg-config-mpi; then
  dir="$work/pkg-config-mpi" && rm -rf "$dir" && mkdir -p "$dir"
  mpi_refs=$(nm -u "$prefix_cpu/lib/libdevctx.a" 2> /dev/null | grep -c ' MPI_\| ompi_' || true)
  plain=$(PKG_CONFIG_PATH="$prefix_cpu/lib/pkgconfig" pkg-config --libs devctx)
  flags=$(PKG_CONFIG_PATH="$prefix_cpu/lib/pkgconfig" pkg-config --cflags --libs devctx-mpi) || flags=""
  if [[ $mpi_refs -ne 0 ]]; then
    fail "pkg-config mpi: libdevctx.a refers to MPI ($mpi_refs undefined MPI symbols)"
  elif [[ "$plain" == *mpi* ]]; then
    fail "pkg-config mpi: devctx.pc names MPI: $plain"
  elif [[ -z "$flags" ]]; then
    fail "pkg-config mpi: devctx-mpi.pc not found"
  # shellcheck disable=SC2086  # the flags are words
  elif ! c++ -std=c++20 -O1 "$here/common/mpi_app.cpp" $flags -o "$dir/mpi_app" > "$dir/build.log" 2>&1; then
    fail "pkg-config mpi: building mpi_app with '$flags'"; tail -5 "$dir/build.log"
  elif ! "$dir/mpi_app" > "$dir/mpi_app.log" 2>&1 || ! grep -q '^PASSED' "$dir/mpi_app.log"; then
    fail "pkg-config mpi: mpi_app: $(tail -1 "$dir/mpi_app.log")"
  else
    printf '  ok  %-48s %s\n' "pkg-config mpi (devctx.pc without MPI)" "$flags"
  fi
fi
[[ -n "$cuda_build" ]] && pc_check cuda-static "$prefix_cuda/lib/pkgconfig"

# ---- Conan ---------------------------------------------------------------------------------------
step "Conan: conan create packaging/conan (CPU-only package; builds and runs its test_package)"
export CONAN_HOME="$work/conan-home"
if ! wanted conan; then
  echo "(skipped)"
elif "$venv/bin/conan" profile detect --force > "$work/conan-profile.log" 2>&1 &&
     "$venv/bin/conan" create "$src/packaging/conan" -s compiler.cppstd=20 \
       -s build_type=Release -c tools.build:jobs=$parallel --build=missing --no-remote \
       -c tools.cmake.cmake_layout:test_folder="$work/conan-test_package" -c tools.cmake.cmaketoolchain:user_presets= \
       > "$work/conan.log" 2>&1 &&
     grep -q "^PASSED devctx" "$work/conan.log"; then
  printf '  ok  %-48s %s\n' "conan create" "$(grep -m1 '^PASSED devctx' "$work/conan.log")"
else
  tail -30 "$work/conan.log"
  fail "conan create (log: $work/conan.log)"
fi

if command -v ccache > /dev/null; then
  echo
  ccache --show-stats 2> /dev/null | grep -Ei '^ *(hits|misses|cacheable calls)' | sed 's/^/ccache: /' || true
fi
echo
if [[ $failures -ne 0 ]]; then
  echo "consumers: FAILED ($failures problems, $((SECONDS - started)) s; logs in $work)"
  exit 1
fi
echo "consumers: PASSED (${#jobs_run[@]} outside projects, pkg-config and Conan, $((SECONDS - started)) s)"
