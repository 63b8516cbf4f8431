# SPDX-License-Identifier: Apache-2.0
"""The type stubs, python/devctx/_devctx.pyi: what nanobind's stubgen makes of the built extension
(with python/stubgen_patterns.txt's more precise types for arguments the bindings take as plain
objects), and every function, method and property they declare has the binding's parameters (names
and order, and which have defaults), so that a changed binding fails here until the stub is
regenerated: `bash scripts/python-stubs.sh`."""
import ast
import difflib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import devctx
from devctx import _devctx

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "python/devctx/_devctx.pyi"
PATTERNS = ROOT / "python/stubgen_patterns.txt"


def test_the_stub_is_what_stubgen_makes(tmp_path):
    pytest.importorskip("nanobind.stubgen")
    out = tmp_path / "_devctx.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-P", "-m", "devctx._devctx", "-p", str(PATTERNS),
                    "-o", str(out)], check=True, cwd=tmp_path)
    got, want = out.read_text(), STUB.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "python/devctx/_devctx.pyi",
                                            "stubgen's"))
        pytest.fail(f"the stub differs from stubgen's output; regenerate it (bash scripts/python-stubs.sh):\n{diff}")


def parameters(args: ast.arguments) -> list:
    """(name, has a default) of each parameter, in order, '*'/'**' marking the variadic ones."""
    positional = args.posonlyargs + args.args
    defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    out = [(a.arg, d) for a, d in zip(positional, defaults)]
    if args.vararg:
        out.append(("*" + args.vararg.arg, False))
    out += [(a.arg, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append(("**" + args.kwarg.arg, False))
    return out


def binding_overloads(func) -> list:
    """The parameters of each overload of a nanobind function, from its __nb_signature__."""
    out = []
    for signature, _doc, _defaults in func.__nb_signature__:
        text = re.sub(r"\\=?\d+", "...", signature)  # the placeholders of default values
        text = re.sub(r"^def \(", "def getter(", text)  # a property's getter has no name
        tree = ast.parse(text + ": ...")
        out.append(parameters(tree.body[0].args))
    return out


def stub_functions():
    """(qualified name, runtime object, stub parameters) of every def in the stub."""
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, getattr(_devctx, node.name, None), parameters(node.args)
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_devctx, node.name, None)
            for item in node.body:
                if not isinstance(item, ast.FunctionDef):
                    continue
                value = cls.__dict__.get(item.name) if cls is not None else None
                if isinstance(value, property):
                    value = value.fget
                yield f"{node.name}.{item.name}", value, parameters(item.args)


def test_every_stub_signature_is_the_bindings():
    checked = 0
    for name, value, declared in stub_functions():
        assert value is not None, f"the stub declares {name}, which the extension does not have"
        if not hasattr(value, "__nb_signature__"):
            continue  # a Python-level default (object.__init__, ...): nothing bound to compare with
        overloads = binding_overloads(value)
        assert declared in overloads, f"{name}: the stub says {declared}, the binding {overloads}"
        checked += 1
    assert checked >= 20, f"only {checked} signatures checked: is the stub empty?"


def test_every_public_binding_is_in_the_stub():
    declared = {name for name, _, _ in stub_functions()}
    declared |= {node.name for node in ast.parse(STUB.read_text()).body if isinstance(node, ast.ClassDef)}
    for name in dir(_devctx):
        if name.startswith("__"):
            continue
        assert name in declared, f"devctx._devctx.{name} is not in the stub"
        value = getattr(_devctx, name)
        if isinstance(value, type) and not issubclass(value, BaseException):
            for member, bound in vars(value).items():
                if hasattr(bound, "__nb_signature__") or isinstance(bound, property):
                    member = "__init__" if member == "__new__" else member  # nb::new_: stubgen writes __init__
                    assert f"{name}.{member}" in declared, f"devctx.{name}.{member} is not in the stub"
    assert devctx.__version__ == _devctx.__version__
    assert (Path(devctx.__file__).parent / "py.typed").is_file()
