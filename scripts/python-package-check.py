#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/python-package-check.py sdist|wheel FILE - checks a built devctx Python package.

sdist: it holds every file git tracks that a build needs (pyproject.toml, LICENSE, the root and
python/ CMake files, include/, src/, cmake/, the fission translator, python/ but its tests), none
of what the build does not need (tests/, bench/, docs/, examples/, the tool's sources, build
directories), and PKG-INFO carries include/devctx/version.hpp's version and the SPDX licence.
wheel: the extension, the package, its stubs and py.typed, METADATA with that version and
licence, and the licence text. Prints what it checked; exits 1 naming each missing or stray file.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ["pyproject.toml", "LICENSE", "CMakeLists.txt", "include", "src", "cmake", "tools/fission", "python"]
NOT_NEEDED = ("tests/", "bench/", "docs/", "examples/", "packaging/", "scripts/", "build", "python/build", ".ci/")


def header_version() -> str:
    text = (ROOT / "include/devctx/version.hpp").read_text()
    return ".".join(re.search(rf"#define DEVCTX_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH"))


def check_metadata(text: str, where: str, problems: list[str]) -> None:
    meta = Parser().parsestr(text)
    if meta["Name"] != "devctx":
        problems.append(f"{where}: Name is {meta['Name']!r}, not 'devctx'")
    if meta["Version"] != header_version():
        problems.append(f"{where}: Version {meta['Version']!r} is not include/devctx/version.hpp's {header_version()!r}")
    if meta["License-Expression"] != "Apache-2.0":
        problems.append(f"{where}: License-Expression is {meta['License-Expression']!r}, not 'Apache-2.0'")


def check_sdist(path: Path) -> list[str]:
    problems: list[str] = []
    with tarfile.open(path) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
        top = names[0].split("/", 1)[0]
        files = {n.split("/", 1)[1] for n in names if "/" in n}
        pkg_info = tar.extractfile(f"{top}/PKG-INFO")
        check_metadata(pkg_info.read().decode() if pkg_info else "", "sdist PKG-INFO", problems)
    if top != f"devctx-{header_version()}":
        problems.append(f"sdist: top directory {top!r}, not 'devctx-{header_version()}'")
    tracked = subprocess.run(["git", "ls-files", "--", *NEEDED], cwd=ROOT, check=True, capture_output=True, text=True)
    wanted = {f for f in tracked.stdout.split() if not f.startswith("python/tests/")}
    for f in sorted(wanted - files):
        problems.append(f"sdist: {f} is missing (a build from the sdist needs it)")
    for f in sorted(files):
        if f.startswith(NOT_NEEDED) or (f.startswith("tools/") and not f.startswith("tools/fission/")):
            problems.append(f"sdist: {f} should not be in it (a build does not need it)")
    print(f"sdist {path.name}: {len(files)} files, {len(wanted)} needed ones checked")
    return problems


def check_wheel(path: Path) -> list[str]:
    problems: list[str] = []
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        info = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        if info is None:
            return [f"wheel: no METADATA in {path.name}"]
        check_metadata(whl.read(info).decode(), "wheel METADATA", problems)
    for f in ("devctx/__init__.py", "devctx/_devctx.pyi", "devctx/py.typed"):
        if f not in names:
            problems.append(f"wheel: {f} is missing")
    if not any(re.fullmatch(r"devctx/_devctx\..*(so|pyd)", n) for n in names):
        problems.append("wheel: the extension devctx/_devctx.*.so is missing")
    if not any(re.search(r"\.dist-info/licenses/LICENSE$", n) for n in names):
        problems.append("wheel: the licence text (.dist-info/licenses/LICENSE) is missing")
    print(f"wheel {path.name}: {len(names)} files")
    return problems


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("sdist", "wheel"):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    path = Path(sys.argv[2])
    problems = check_sdist(path) if sys.argv[1] == "sdist" else check_wheel(path)
    for p in problems:
        print("FAIL ", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
