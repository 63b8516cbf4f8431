# SPDX-License-Identifier: Apache-2.0
"""tests/tools/check_settings.py - the docs agree with the code, checked from the sources alone.

usage: check_settings.py SOURCE_DIR table|map

table: every DEVCTX_* environment variable read in src/, include/, tools/, python/, tests/ or
       scripts/ (getenv, env_flag, env_size, env_text, os.environ, ${DEVCTX_X:-...}) has a row in
       src/core/settings_table.hpp; every row is read somewhere; README.md lists every row, and
       docs/errors.md lists every row the library reads (a malformed value is an invalid_argument).
map:   every file under src/ is named in docs/internals.md: by its path, or in backquotes by its name
       (`regions.hpp`), the end of its path (`check/regions.hpp`) or with its twin
       (`regions.{hpp,cpp}`).
"""
import pathlib
import re
import sys

TABLE = "src/core/settings_table.hpp"
ROW = re.compile(r'^\s*Setting\{"(DEVCTX_[A-Z0-9_]+)", SettingType::(\w+), SettingReader::(\w+),')
READS = [
    # C++: the library's readers, getenv, and the tests' readers of their own flags
    re.compile(r'(?:getenv|env_flag|env_size|env_text|setting_text)\(\s*"(DEVCTX_[A-Z0-9_]+)"'),
    re.compile(r'(?:flag)\(\s*"(DEVCTX_[A-Z0-9_]+)"\)'),
    # Python
    re.compile(r'os\.environ(?:\.get\(|\[)\s*"(DEVCTX_[A-Z0-9_]+)"'),
    re.compile(r'env_flag\(\s*"(DEVCTX_[A-Z0-9_]+)"'),
    # shell: ${DEVCTX_X:-...} / ${DEVCTX_X-...}
    re.compile(r'\$\{(DEVCTX_[A-Z0-9_]+):?-'),
]
SOURCES = {"src": None, "include": None, "tools": None, "python": None, "tests": None, "scripts": None}
SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh", ".py", ".sh"}
SKIP = {"tests/consumers"}  # the consumer checks' own knobs (DEVCTX_CI_*) are the script's arguments


def table_rows(root):
    rows = {}
    for line in (root / TABLE).read_text().splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = m.group(3)
    return rows


def reads(root):
    found = {}
    for top in SOURCES:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix not in SUFFIXES or not path.is_file() or any(rel.startswith(s) for s in SKIP):
                continue
            if rel in (TABLE, "tests/tools/check_settings.py"):
                continue
            text = path.read_text(errors="replace")
            for pattern in READS:
                for m in pattern.finditer(text):
                    found.setdefault(m.group(1), rel)
    return found


def check_table(root):
    problems = []
    rows = table_rows(root)
    if len(rows) < 10:
        return [f"{TABLE}: found only {len(rows)} rows: has the row shape changed?"]
    read = reads(root)
    for name, where in sorted(read.items()):
        if name not in rows:
            problems.append(f"{name} is read in {where} but has no row in {TABLE}")
    for name in sorted(rows):
        if name not in read:
            problems.append(f"{TABLE} has a row for {name}, which nothing in {', '.join(SOURCES)} reads")
    readme = (root / "README.md").read_text()
    errors = (root / "docs/errors.md").read_text()
    for name, reader in sorted(rows.items()):
        if not re.search(rf"`{name}[`=]", readme):
            problems.append(f"README.md does not list {name} (as `{name}` or `{name}=...`)")
        if reader == "library" and not re.search(rf"`{name}[`=]", errors):
            problems.append(f"docs/errors.md does not list {name} (invalid_argument: a malformed value)")
    print(f"{len(rows)} settings, {len(read)} variables read; README.md and docs/errors.md checked")
    return problems


def check_map(root):
    internals = (root / "docs/internals.md").read_text()
    problems = []
    files = sorted(p for p in (root / "src").rglob("*") if p.is_file())
    for path in files:
        below = path.relative_to(root / "src").as_posix()
        stem, suffix = path.stem, path.suffix
        # `settings.{hpp,cpp}` names both files; a folder's row may name its files as `dir/name.cpp`
        both = re.compile(rf"`(?:[\w/]*/)?{re.escape(stem)}\.\{{([\w,]+)\}}`")
        parts = below.split("/")
        tails = ["/".join(parts[k:]) for k in range(len(parts))]  # check/regions.hpp, regions.hpp
        named = below in internals or any(f"`{tail}`" in internals for tail in tails)
        named = named or any(suffix[1:] in m.group(1).split(",") for m in both.finditer(internals))
        if not named:
            problems.append(f"src/{below} is not named in docs/internals.md")
    print(f"{len(files)} files under src/ checked against docs/internals.md")
    return problems


def main():
    root = pathlib.Path(sys.argv[1])
    problems = {"table": check_table, "map": check_map}[sys.argv[2]](root)
    for p in problems:
        print("FAIL ", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
