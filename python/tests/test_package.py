# SPDX-License-Identifier: Apache-2.0
"""The installed package as users see it: one version everywhere (include/devctx/version.hpp,
which pyproject.toml reads and the extension is compiled with), the SPDX licence, the stubs."""
import importlib.metadata
import re
from pathlib import Path

import devctx

ROOT = Path(__file__).resolve().parents[2]


def header_version() -> str:
    text = (ROOT / "include/devctx/version.hpp").read_text()
    return ".".join(re.search(rf"#define DEVCTX_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH"))


def test_the_version_is_devctxs_everywhere():
    version = header_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert devctx.__version__ == version  # compiled into the extension from version.hpp
    assert importlib.metadata.version("devctx") == version  # pyproject.toml's, read from version.hpp
    # CMake's project(VERSION) reads the same three numbers (ctest version.agree checks the rest).
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert re.search(r"project\(devctx VERSION \$\{DEVCTX_VERSION\}", cmake)
    assert "include/devctx/version.hpp" in cmake


def test_the_licence_is_an_spdx_expression_and_ships():
    meta = importlib.metadata.metadata("devctx")
    assert meta["License-Expression"] == "Apache-2.0"
    files = [str(f) for f in importlib.metadata.files("devctx") or []]
    assert any(f.endswith("licenses/LICENSE") for f in files), files


def test_the_stubs_ship_with_the_package():
    package = Path(devctx.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_devctx.pyi").read_text() == (ROOT / "python/devctx/_devctx.pyi").read_text()
