#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# scripts/spdx.py [--fix] - every source, build and script file that git tracks carries the line
# "SPDX-License-Identifier: Apache-2.0" in its first lines (after a shebang). Without --fix,
# lists the files that lack it and exits 1 (ctest license.spdx); with --fix, adds the line as a
# comment of the file's language at the top. Data files (the fuzz corpus), Markdown and the
# licence itself are left alone.
import pathlib
import subprocess
import sys

TAG = "SPDX-License-Identifier: Apache-2.0"
SLASH = {".cpp", ".hpp", ".cu", ".cuh", ".h", ".c"}
HASH = {".cmake", ".sh", ".py", ".toml", ".in", ".txt", ".pyi"}


def comment_for(path: pathlib.Path):
    if path.suffix in SLASH:
        return "// " + TAG
    if path.name == "CMakeLists.txt" or path.name == "run" or path.suffix in HASH:
        if path.suffix == ".txt" and path.name != "CMakeLists.txt":
            return None  # package lists and other plain text
        return "# " + TAG
    return None


def main() -> int:
    fix = "--fix" in sys.argv[1:]
    root = pathlib.Path(__file__).resolve().parent.parent
    files = subprocess.run(["git", "-C", str(root), "ls-files"], check=True, capture_output=True,
                           text=True).stdout.split()
    missing = []
    for name in files:
        path = root / name
        line = comment_for(path)
        if line is None or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if TAG in "\n".join(text.splitlines()[:3]):
            continue
        missing.append(name)
        if fix:
            if text.startswith("#!"):
                first, _, rest = text.partition("\n")
                text = first + "\n" + line + "\n" + rest
            else:
                text = line + "\n" + text
            path.write_text(text, encoding="utf-8")
    if missing and not fix:
        print("spdx: these files lack the line '%s' (run scripts/spdx.py --fix):" % TAG)
        for name in missing:
            print("  " + name)
        return 1
    if fix:
        print("spdx: added the line to %d file(s)" % len(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
