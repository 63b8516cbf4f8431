#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/fission/devctx_fission.py - the fission translator: writes a copy of a kernel file in
which every thread-level kernel with barriers that it can prove safe gets a block-level twin
(loops over the block's threads between barriers), as does every barrier-free map kernel (one loop
over the threads its bounds guard admits, which the compiler can vectorise), and a prologue that runs the twin when the CPU
backend offers it the block (docs/cpu-backend.md, "Translated kernels"; docs/internals.md,
"The fission translator").

    devctx_fission.py --input k.cpp --output gen/k.cpp [--summary s.txt] [--depfile d.d]
                      [--resource-dir DIR] [--nvcc VERSION] -- <compiler flags: -I, -D, -std>

With --nvcc (CUDA builds, where nvcc compiles the copy) it parses the file as nvcc's host pass
sees it; what it adds is under #if !defined(__CUDA_ARCH__), so the device pass compiles the
file's own kernels exactly.

It reads the file through libclang's stable C API (PyPI's `libclang` wheel). Whatever it cannot
prove stays on fibers with a reason (the prologue records it for DEVCTX_TRACE); on any failure -
no libclang, a parse error, a translation that does not parse again - it writes the original
file unchanged. It never fails a build: it exits 0 whenever it could write the output.
"""

import argparse
import os
import sys
import traceback

# Devctx functions whose calls are sync points the translator handles or declines.
BARRIER = "barrier"
INDEX_FUNCTIONS = {"thread_idx", "global_idx", "lane_id"}
UNIFORM_FUNCTIONS = {"block_idx", "block_dim", "grid_dim", "dynamic_shared"}
INTEGRAL_KINDS = {"BOOL", "CHAR_U", "UCHAR", "CHAR16", "CHAR32", "USHORT", "UINT", "ULONG", "ULONGLONG",
                  "CHAR_S", "SCHAR", "WCHAR", "SHORT", "INT", "LONG", "LONGLONG"}
ARITHMETIC_KINDS = INTEGRAL_KINDS | {"FLOAT", "DOUBLE"}
UNSIGNED_KINDS = {"BOOL", "CHAR_U", "UCHAR", "CHAR16", "CHAR32", "USHORT", "UINT", "ULONG", "ULONGLONG"}
PASS_THROUGH = {"UNEXPOSED_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR",
                "CXX_STATIC_CAST_EXPR"}
LITERALS = {"INTEGER_LITERAL", "FLOATING_LITERAL", "CXX_BOOL_LITERAL_EXPR", "CHARACTER_LITERAL", "CXX_UNARY_EXPR"}
IGNORED_CHILDREN = {"TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF"}
LOOP_KINDS = {"FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT", "SWITCH_STMT"}
# The warp operations and block collectives of devctx (kernel.hpp, collectives.hpp) that a twin
# computes over per-thread arrays (fission.hpp): name -> (what, the fission:: call's head).
F = "::devctx::detail::cpu::fission::"
COLLECTIVES = {
    "warp_sum": ("warp", F + "warp_reduce<::devctx::detail::SumOp>"),
    "warp_max": ("warp", F + "warp_reduce<::devctx::detail::MaxOp>"),
    "warp_min": ("warp", F + "warp_reduce<::devctx::detail::MinOp>"),
    "warp_prefix_sum": ("warp", F + "warp_prefix_sum"),
    "shuffle": ("warp", F + "shuffle"),
    "shuffle_idx": ("warp", F + "shuffle"),
    "shuffle_down": ("warp", F + "shuffle_down"),
    "shuffle_up": ("warp", F + "shuffle_up"),
    "shuffle_xor": ("warp", F + "shuffle_xor"),
    "warp_broadcast": ("warp", F + "shuffle"),
    "ballot": ("warp", F + "ballot"),
    "syncwarp": ("warp", None),
    "block_sum": ("block", F + "block_reduce<::devctx::detail::SumOp>"),
    "block_max": ("block", F + "block_reduce<::devctx::detail::MaxOp>"),
    "block_min": ("block", F + "block_reduce<::devctx::detail::MinOp>"),
    "block_prefix_sum": ("block", F + "block_prefix_sum"),
    "block_broadcast": ("block", F + "block_broadcast"),
}


class Decline(Exception):
    """The kernel stays on fibers; the message says why, in words a user can act on."""


def kind(c):
    return c.kind.name


def children(c):
    return [ch for ch in c.get_children() if kind(ch) not in IGNORED_CHILDREN]


def strip(c):
    while kind(c) in ("UNEXPOSED_EXPR", "PAREN_EXPR"):
        ch = children(c)
        if len(ch) != 1:
            break
        c = ch[0]
    return c


def qualified(c):
    """A declaration's enclosing namespaces, outermost first."""
    names = []
    p = c.semantic_parent
    while p is not None and kind(p) != "TRANSLATION_UNIT":
        names.append(p.spelling)
        p = p.semantic_parent
    return list(reversed(names))


def devctx_function(c):
    """The name of the devctx:: function a CALL_EXPR calls, else None."""
    ref = c.referenced
    if ref is None or kind(ref) not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        return None
    ns = qualified(ref)
    return ref.spelling if ns[:1] == ["devctx"] else None


def overloaded_decls(c):
    """The declarations an OVERLOADED_DECL_REF may name (libclang's C API; the Python bindings
    do not wrap it)."""
    import ctypes
    import clang.cindex as ci
    lib = ci.conf.lib
    count = lib.clang_getNumOverloadedDecls
    count.argtypes, count.restype = [ci.Cursor], ctypes.c_uint
    get = lib.clang_getOverloadedDecl
    get.argtypes, get.restype, get.errcheck = [ci.Cursor, ctypes.c_uint], ci.Cursor, ci.Cursor.from_result
    return [get(c, i) for i in range(count(c))]


class File:
    def __init__(self, path, data):
        self.path = path
        self.data = data

    def text(self, start, end):
        return self.data[start:end].decode("utf-8")

    def line_of(self, offset):
        return self.data.count(b"\n", 0, offset) + 1

    def line_start(self, offset):
        return self.data.rfind(b"\n", 0, offset) + 1

    def stmt_end(self, offset):
        """`offset` past a following ';' (an expression statement's extent leaves it out)."""
        i = offset
        while i < len(self.data) and self.data[i:i + 1] in (b" ", b"\t"):
            i += 1
        return i + 1 if self.data[i:i + 1] == b";" else offset


class SyncFinder:
    """Which functions contain sync points (barrier, warp operations), transitively."""

    def __init__(self):
        self.memo = {}

    def sync_of_call(self, call):
        """'barrier', a description of another sync point, or None."""
        ref = call.referenced
        if ref is None:
            # A call in a template that depends on its parameters: the candidates it may call.
            ch = children(call)
            for o in (ch[0].walk_preorder() if ch else []):
                if kind(o) != "OVERLOADED_DECL_REF":
                    continue
                for d in overloaded_decls(o):
                    if qualified(d) == ["devctx"] and (d.spelling in COLLECTIVES or d.spelling == BARRIER):
                        return (f"devctx::{d.spelling} on a value whose type depends on a template parameter (a "
                                f"template kernel's warp operations and block collectives are not translated yet)")
                    inner = self.function_sync(d)
                    if inner is not None:
                        return f"a call of {d.spelling}(), which reaches {inner}"
            return None
        name = devctx_function(call)
        if name == BARRIER:
            return "barrier"
        ns = qualified(ref)
        if ns[:3] == ["devctx", "detail", "cpu"] and ref.spelling in ("barrier", "warp_publish", "warp_width"):
            return "barrier" if ref.spelling == "barrier" else "a warp operation"
        inner = self.function_sync(ref)
        if inner is None:
            return None
        if ns[:1] == ["devctx"]:
            return f"devctx::{ref.spelling} (a warp operation or block collective)"
        return f"a call of {ref.spelling}(), which reaches {inner}"

    def function_sync(self, fn, depth=0):
        key = fn.get_usr() or fn.spelling
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = None  # recursion guard
        found = None
        d = fn.get_definition()
        if d is not None and depth < 8:
            for c in d.walk_preorder():
                if kind(c) == "CALL_EXPR" and c.referenced is not None and c.referenced != d:
                    s = self.sync_of_call_depth(c, depth + 1)
                    if s is not None:
                        found = s
                        break
        self.memo[key] = found
        return found

    def sync_of_call_depth(self, call, depth):
        ref = call.referenced
        ns = qualified(ref)
        if ns[:1] == ["devctx"] and ref.spelling == BARRIER:
            return "barrier"
        if ns[:3] == ["devctx", "detail", "cpu"] and ref.spelling in ("barrier", "warp_publish", "warp_width"):
            return "barrier" if ref.spelling == "barrier" else "a warp operation"
        if kind(ref) not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD"):
            return None
        return self.function_sync(ref, depth)

    def syncs_in(self, cursor):
        """Every (call, description) sync point in `cursor`."""
        out = []
        for c in cursor.walk_preorder():
            if kind(c) == "CALL_EXPR":
                s = self.sync_of_call(c)
                if s is not None:
                    out.append((c, s))
        return out


class Var:
    def __init__(self, cursor, stmt, region, index):
        self.cursor = cursor
        self.stmt = stmt          # the DECL_STMT item declaring it
        self.region = region      # the region that declares it
        self.name = cursor.spelling
        self.const = cursor.type.is_const_qualified()
        self.remat = False
        self.thread_x = False     # initialised with exactly devctx::thread_idx().x
        self.array = f"devctx_pt_{self.name}_{index}"
        self.used_in = set()


class Region:
    def __init__(self, index, level_is_last):
        self.index = index
        self.items = []         # (cursor list, start offset, end offset)
        self.range = None       # (begin text, end text) from a guard, else the whole block
        self.guard_body = None  # the guarded statement when range is set
        self.last = level_is_last


class KernelTranslator:
    def __init__(self, fn, file, sync, index_module):
        self.fn = fn
        self.file = file
        self.sync = sync
        self.ci = index_module
        self.name = fn.spelling
        self.body = [c for c in fn.get_children() if kind(c) == "COMPOUND_STMT"][0]
        self.params = [c for c in fn.get_children() if kind(c) == "PARM_DECL"]
        self.vars = {}          # key -> Var (locals declared at region level)
        self.uniform_locals = {}  # key -> cursor of block-level uniform locals
        self.regions = []
        self.var_count = 0
        self.early_exit = False  # a thread may return before a later barrier
        self.shared_vars = set()  # keys of the DEVCTX_SHARED arrays
        self.coll_count = 0       # warp operations and block collectives split out
        self.coll_arrays = []     # (type, name) of their per-thread argument and result arrays
        self.replacements = {}    # call start offset -> (end offset, the text that replaces it)
        self.arg_items = {}       # region item start -> [(array, argument cursor)]
        self.excluded = set()     # (start, end) of calls whose arguments another region evaluates
        self.warp_mask = None     # inside a warp-uniform if: its per-thread condition array
        self.preconditions = {}   # run-time condition (C++ text) -> why the kernel needs it
        self.unread = set()       # while a stretch is emitted folded: keys only its folded comparisons read

    # ---- helpers ---------------------------------------------------------------------------------
    def key(self, decl):
        return (decl.location.offset, decl.spelling)

    def offsets(self, c):
        return c.extent.start.offset, c.extent.end.offset

    def src(self, c):
        s, e = self.offsets(c)
        return self.file.text(s, e)

    def in_main_file(self, c):
        f = c.extent.start.file
        return f is not None and os.path.realpath(f.name) == os.path.realpath(self.file.path)

    def binary_op(self, c):
        """The operator token of a BINARY_OPERATOR / COMPOUND_ASSIGNMENT_OPERATOR."""
        ch = children(c)
        if not ch:
            return None
        left_end = ch[0].extent.end.offset
        for t in c.get_tokens():
            if t.extent.start.offset >= left_end and t.kind.name == "PUNCTUATION":
                return t.spelling
        return None

    def unary_op(self, c):
        toks = list(c.get_tokens())
        if not toks:
            return None
        if toks[0].kind.name == "PUNCTUATION":
            return toks[0].spelling
        return toks[-1].spelling

    def is_param(self, decl):
        return kind(decl) == "PARM_DECL" and any(self.key(p) == self.key(decl) for p in self.params)

    def modified_refs(self, root):
        """Keys of declarations that `root` assigns, increments, decrements or takes the address of."""
        out = set()

        def walk(c):
            k = kind(c)
            ch = children(c)
            target = None
            if k == "BINARY_OPERATOR" and self.binary_op(c) == "=" and ch:
                target = ch[0]
            elif k == "COMPOUND_ASSIGNMENT_OPERATOR" and ch:
                target = ch[0]
            elif k == "UNARY_OPERATOR" and self.unary_op(c) in ("++", "--", "&") and ch:
                target = ch[0]
            if target is not None:
                t = strip(target)
                if kind(t) == "DECL_REF_EXPR" and t.referenced is not None:
                    out.add(self.key(t.referenced))
            for x in ch:
                walk(x)
        walk(root)
        return out

    # ---- expression classes ------------------------------------------------------------------------
    def uniform(self, c, allow_thread=False, remat_keys=frozenset()):
        """Whether `c` has one value for the whole block (or, with allow_thread, is a pure function
        of the thread index and such values). Returns None when it is, else a reason."""
        k = kind(c)
        ch = children(c)
        if k in LITERALS:
            return None
        if k in PASS_THROUGH or k == "CONDITIONAL_OPERATOR":
            for x in ch:
                r = self.uniform(x, allow_thread, remat_keys)
                if r:
                    return r
            return None
        if k == "BINARY_OPERATOR":
            if self.binary_op(c) in ("=", ","):
                return "an assignment"
            for x in ch:
                r = self.uniform(x, allow_thread, remat_keys)
                if r:
                    return r
            return None
        if k == "UNARY_OPERATOR":
            if self.unary_op(c) in ("++", "--", "&", "*"):
                return "an increment, address or dereference"
            return self.uniform(ch[0], allow_thread, remat_keys) if ch else None
        if k == "DECL_REF_EXPR":
            d = c.referenced
            if d is None:
                return f"'{c.spelling}'"
            dk = kind(d)
            if dk in ("ENUM_CONSTANT_DECL", "TEMPLATE_NON_TYPE_PARAMETER"):
                return None
            if dk == "PARM_DECL" and self.is_param(d):
                if self.key(d) in self.assigned:
                    return f"the parameter '{d.spelling}', which the kernel assigns"
                if d.type.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
                    return f"the reference parameter '{d.spelling}'"
                return None
            if dk == "VAR_DECL":
                kp = kind(d.semantic_parent) if d.semantic_parent is not None else ""
                if kp in ("NAMESPACE", "TRANSLATION_UNIT", "STRUCT_DECL", "CLASS_DECL") and d.type.is_const_qualified():
                    return None
                if self.key(d) in self.uniform_locals or self.key(d) in self.shared_vars:
                    return None  # the shared arrays: one per block (captured by reference)
                if allow_thread and self.key(d) in remat_keys:
                    return None
                return f"the variable '{d.spelling}'"
            return f"'{d.spelling}'"
        if k == "MEMBER_REF_EXPR":
            ref = c.referenced
            if ref is not None and kind(ref) == "FIELD_DECL":
                return self.uniform(ch[0], allow_thread, remat_keys) if ch else "a member"
            return f"the member '{c.spelling}'"
        if k == "CALL_EXPR":
            name = devctx_function(c)
            if name in UNIFORM_FUNCTIONS and not ch[1:]:
                return None
            if allow_thread and name in INDEX_FUNCTIONS and not ch[1:]:
                return None
            ref = c.referenced
            if ref is not None and kind(ref) == "CXX_METHOD" and ref.is_const_method() and ch:
                # obj.size() on a uniform object: pure.
                callee = strip(ch[0])
                if kind(callee) == "MEMBER_REF_EXPR":
                    objs = children(callee)
                    if objs and all(self.uniform(x, allow_thread, remat_keys) is None for x in objs + ch[1:]):
                        return None
            if ref is not None and kind(ref) == "CONSTRUCTOR" and qualified(ref)[:1] == ["devctx"] and \
                    all(self.uniform(x, allow_thread, remat_keys) is None for x in ch):
                return None  # a devctx view (LayoutTensor, span) over uniform values
            if ref is not None and name is None and self.pure_function(ref) and \
                    all(self.uniform(x, allow_thread, remat_keys) is None for x in ch[1:]):
                return None  # pow2_ceil(n) of uniform values: uniform
            if allow_thread and name in INDEX_FUNCTIONS:
                return None
            if name == "thread_idx" or name == "global_idx":
                return "the thread index"
            return f"a call of {c.spelling}()"
        return f"an expression the translator does not follow ({k.lower()})"

    def pure_function(self, fn, depth=0):
        """A function of numbers only: its parameters and locals are numbers, it reads nothing else
        but constants and calls only such functions; so its value depends on its arguments alone."""
        memo = self.__dict__.setdefault("pure_memo", {})
        key = fn.get_usr() or fn.spelling
        if key in memo:
            return memo[key]
        memo[key] = False  # recursion guard
        d = fn.get_definition()
        ok = d is not None and kind(d) == "FUNCTION_DECL" and depth < 6 and \
            d.result_type.get_canonical().kind.name in ARITHMETIC_KINDS
        if ok:
            for c in d.walk_preorder():
                k = kind(c)
                if k == "PARM_DECL" or (k == "VAR_DECL" and c.semantic_parent == d):
                    if c.type.get_canonical().kind.name not in ARITHMETIC_KINDS or c.storage_class.name == "STATIC":
                        ok = False
                elif k == "DECL_REF_EXPR":
                    r = c.referenced
                    if r is None:
                        ok = False
                    elif kind(r) in ("PARM_DECL", "VAR_DECL") and r.semantic_parent == d:
                        pass
                    elif kind(r) == "ENUM_CONSTANT_DECL":
                        pass
                    elif kind(r) == "VAR_DECL" and r.type.is_const_qualified() and \
                            r.type.get_canonical().kind.name in ARITHMETIC_KINDS:
                        pass
                    elif kind(r) == "FUNCTION_DECL":
                        pass  # the callee of a call, checked below
                    else:
                        ok = False
                elif k == "CALL_EXPR":
                    r = c.referenced
                    ok = r is not None and kind(r) == "FUNCTION_DECL" and self.pure_function(r, depth + 1)
                elif k in ("MEMBER_REF_EXPR", "ASM_STMT", "GCC_ASM_STMT", "LAMBDA_EXPR", "CXX_THROW_EXPR"):
                    ok = False
                if not ok:
                    break
        memo[key] = ok
        return ok

    def is_thread_x(self, c, thread_x_keys):
        """`c` is devctx::thread_idx().x, or a local initialised with exactly that."""
        c = strip(c)
        if kind(c) == "DECL_REF_EXPR" and c.referenced is not None:
            return self.key(c.referenced) in thread_x_keys
        if kind(c) == "MEMBER_REF_EXPR" and c.spelling == "x":
            ch = children(c)
            if ch:
                call = strip(ch[0])
                return kind(call) == "CALL_EXPR" and devctx_function(call) == "thread_idx"
        return False

    # ---- structure ---------------------------------------------------------------------------------
    def contains_sync(self, c):
        return bool(self.sync.syncs_in(c))

    def items_of(self, compound):
        """The statements of a compound statement, statements from one macro merged."""
        items = []
        for c in children(compound):
            s, e = self.offsets(c)
            if not self.file.text(s, e).rstrip().endswith((";", "}")):
                e = self.file.stmt_end(e)
            if items and s < items[-1][2]:
                items[-1][0].append(c)
                items[-1] = (items[-1][0], items[-1][1], max(items[-1][2], e))
                continue
            items.append(([c], s, e))
        return items

    def is_barrier_stmt(self, c):
        c = strip(c)
        return kind(c) == "CALL_EXPR" and devctx_function(c) == BARRIER

    def collective_of(self, call):
        """The name of the devctx warp operation or block collective a CALL_EXPR calls, else None."""
        ref = call.referenced
        if ref is None or kind(ref) not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
            return None
        return ref.spelling if qualified(ref) == ["devctx"] and ref.spelling in COLLECTIVES else None

    def form(self, compound, top, items=None):
        """Block-level nodes of a compound statement (or of `items`): ('region', Region), ('code',
        text, line), ('loop', header text, line, nodes), ('if', ...)."""
        nodes = []
        current = None
        items = self.items_of(compound) if items is None else items
        for n, (cs, s, e) in enumerate(items):
            first = cs[0]
            text = self.file.text(s, e)
            if len(cs) == 1 and self.is_barrier_stmt(first):
                if self.warp_mask is not None:
                    raise Decline(f"barrier() inside an if whose condition differs between warps "
                                  f"(line {self.file.line_of(s)})")
                current = None
                continue
            if len(cs) == 1 and kind(strip(first)) == "CALL_EXPR" and self.collective_of(strip(first)) == "syncwarp":
                # The lanes meet: the stretch ends (a twin's stretch runs the warp's lanes in order).
                self.coll_count += 1
                current = None
                continue
            if text.lstrip().startswith("DEVCTX_SHARED"):
                if not top:
                    raise Decline("DEVCTX_SHARED declared inside a loop that contains barrier()")
                for c in cs:
                    for v in children(c) if kind(c) == "DECL_STMT" else []:
                        if kind(v) == "VAR_DECL" and not v.spelling.startswith("devctx_shared_site_"):
                            self.shared_vars.add(self.key(v))
                nodes.append(("code", text, self.file.line_of(s)))
                continue
            k = kind(first)
            syncs = self.sync.syncs_in(first) if len(cs) == 1 else [x for c in cs for x in self.sync.syncs_in(c)]
            if syncs:
                what = [d for c, d in syncs if d != "barrier" and self.collective_of(c) is None]
                if what:
                    w = what[0]
                    if w.startswith("a call of "):
                        raise Decline(f"it makes {w}: helpers with barriers or warp operations are not translated "
                                      f"yet (a barrier written in the kernel itself can be)")
                    raise Decline(f"it uses {w}" + ("" if "not translated yet" in w else
                                                    ", which the translator does not follow"))
                if k in ("FOR_STMT", "WHILE_STMT"):
                    nodes.append(self.loop(first, s))
                    current = None
                    continue
                if k == "IF_STMT" and children(first) and self.uniform(children(first)[0]) is not None and \
                        self.warp_uniform(children(first)[0]) is None:
                    self.warp_if(first, s, current, nodes)
                    current = None
                    continue
                if k == "IF_STMT":
                    nodes.append(self.uniform_if(first, s))
                    current = None
                    continue
                if k == "DO_STMT":
                    raise Decline(f"barrier() inside a do-while loop (line {self.file.line_of(s)}; not translated yet)")
                if k == "COMPOUND_STMT":
                    raise Decline(f"barrier() inside a nested block {{ }} (line {self.file.line_of(s)})")
                if len(cs) == 1 and all(d != "barrier" for _, d in syncs) and \
                        (k == "DECL_STMT" or k.endswith("_EXPR") or k.endswith("_OPERATOR")):
                    current = self.split_collective(first, s, e, syncs, current, nodes)
                    continue
                raise Decline(f"barrier() inside a {k.lower().replace('_stmt', '')} statement "
                              f"(line {self.file.line_of(s)}), which the translator does not split")
            # A uniform update of a block-level local (stride /= 2) runs once per block.
            if len(cs) == 1 and self.uniform_update(first):
                nodes.append(("code", text, self.file.line_of(s)))
                current = None
                continue
            if current is None:
                current = Region(len(self.regions), False)
                self.regions.append(current)
                nodes.append(("region", current))
            current.items.append((cs, s, e))
        return nodes

    def path_to(self, root, target):
        """The cursors from `root` down to `target`, else None."""
        if root == target:
            return [root]
        for x in children(root):
            if x.extent.start.offset <= target.extent.start.offset and target.extent.end.offset <= x.extent.end.offset:
                p = self.path_to(x, target)
                if p is not None:
                    return [root] + p
        return None

    def split_collective(self, stmt, s, e, syncs, current, nodes):
        """A statement with one warp operation or block collective at a block-uniform point (or
        under a warp-uniform if): the stretch before it ends by storing the call's per-thread
        arguments, the block-level code computes every thread's result as the fibers would
        (fission.hpp), and a new stretch starts with the statement, the call replaced by the
        thread's result. Returns that stretch."""
        line = self.file.line_of(s)
        if len(syncs) != 1:
            raise Decline(f"more than one warp operation, block collective or barrier in one statement (line {line}); "
                          f"write each in its own statement")
        call = syncs[0][0]
        name = self.collective_of(call)
        what, head = COLLECTIVES[name]
        if what == "block" and self.warp_mask is not None:
            raise Decline(f"devctx::{name} inside an if whose condition differs between warps (line {line})")
        path = self.path_to(stmt, call)
        if path is None:
            raise Decline(f"devctx::{name} at line {line} in code the translator cannot place")
        for a in path[:-1]:
            ka = kind(a)
            if ka in ("CONDITIONAL_OPERATOR", "LAMBDA_EXPR") or \
                    (ka == "BINARY_OPERATOR" and self.binary_op(a) in ("&&", "||")):
                raise Decline(f"devctx::{name} inside ?:, && or || (line {line}): some threads may skip it")
        if kind(stmt) == "DECL_STMT" and len([v for v in children(stmt) if kind(v) == "VAR_DECL"]) != 1:
            raise Decline(f"devctx::{name} initialises one of several variables declared together (line {line})")
        fn = call.referenced
        params = list(fn.get_arguments())
        args = [a for a in children(call)[1:] if a.extent.start.offset < a.extent.end.offset]
        if not args or len(args) > len(params):
            raise Decline(f"devctx::{name} at line {line} with arguments the translator cannot read")
        for a in args:
            if self.modified_refs(a) or self.sync.syncs_in(a):
                raise Decline(f"an argument of devctx::{name} (line {line}) changes a variable or synchronises")
        ptypes = [p.type.get_canonical() for p in params]
        rtype = call.type.get_canonical()
        vkind = "BOOL" if name == "ballot" else None
        for t in [ptypes[0], rtype]:
            if "type-parameter" in t.spelling or "dependent" in t.spelling:
                raise Decline(f"devctx::{name} on a value whose type depends on a template parameter (line {line}; "
                              f"not translated yet)")
            if t.kind.name not in ARITHMETIC_KINDS or "type-parameter" in t.spelling or \
                    (vkind is not None and t is ptypes[0] and t.kind.name != vkind):
                raise Decline(f"devctx::{name} on a value of type '{t.spelling}' (line {line}): the translator "
                              f"keeps numbers only per thread")
        self.coll_count += 1
        n = self.coll_count
        per_thread = []   # (array, argument)
        call_args = []
        for i, a in enumerate(args):
            t = ptypes[i].spelling
            if i > 0 and self.uniform(a) is None:
                call_args.append(f"static_cast<{t}>({self.src(a)})")
                continue
            arr = f"devctx_ca{n}_{i}"
            self.coll_arrays.append((t, arr))
            per_thread.append((arr, a))
            call_args.append(arr)
        if name == "block_broadcast" and len(args) == 1:
            call_args.append("0u")
        if name == "warp_broadcast":
            call_args.append("0u")
        if name in ("warp_prefix_sum", "block_prefix_sum"):
            if fn.get_num_template_arguments() < 1 or fn.get_template_argument_kind(0).name != "INTEGRAL":
                raise Decline(f"devctx::{name} at line {line} whose Scan the translator cannot read")
            head += "<" + ("true" if fn.get_template_argument_value(0) != 0 else "false") + ">"
        mask = [self.warp_mask or "nullptr"] if what == "warp" else []
        result = f"devctx_cr{n}"
        if name in ("block_sum", "block_max", "block_min"):
            code = f"const {rtype.spelling} {result} = {head}({', '.join(call_args)});"
            replacement = result
        else:
            self.coll_arrays.append((rtype.spelling, result))
            code = f"{head}({', '.join(mask + call_args + [result])});"
            replacement = f"{result}[devctx_rank]"
        # The stretch before: each thread stores the arguments.
        if current is None:
            current = Region(len(self.regions), False)
            self.regions.append(current)
            nodes.append(("region", current))
        key = per_thread[0][1].extent.start.offset
        self.arg_items[key] = per_thread
        current.items.append(([a for _, a in per_thread], key, per_thread[-1][1].extent.end.offset))
        current.uses_rank = True
        nodes.append(("code", code, line))
        # The stretch after: the statement with the thread's result.
        self.replacements[call.extent.start.offset] = (call.extent.end.offset, replacement)
        self.excluded.add((call.extent.start.offset, call.extent.end.offset))
        current = Region(len(self.regions), False)
        current.uses_rank = "devctx_rank" in replacement
        self.regions.append(current)
        nodes.append(("region", current))
        current.items.append(([stmt], s, e))
        return current

    def prologue_constant(self, c):
        """`c` can be evaluated in the kernel's prologue, the same in every block: literals,
        parameters, template parameters, enumerators and namespace-level constants."""
        for x in c.walk_preorder():
            k = kind(x)
            if k == "CALL_EXPR" or (k.endswith("_OPERATOR") and k != "BINARY_OPERATOR" and
                                    not (k == "UNARY_OPERATOR" and self.unary_op(x) in ("-", "+", "~", "!"))):
                return False
            if k == "DECL_REF_EXPR":
                d = x.referenced
                if d is None:
                    return False
                dk = kind(d)
                if dk == "PARM_DECL" and self.is_param(d) and self.key(d) not in self.assigned:
                    continue
                if dk in ("ENUM_CONSTANT_DECL", "TEMPLATE_NON_TYPE_PARAMETER"):
                    continue
                if dk == "VAR_DECL" and d.type.is_const_qualified() and d.semantic_parent is not None and \
                        kind(d.semantic_parent) in ("NAMESPACE", "TRANSLATION_UNIT"):
                    continue
                return False
        return c.type.get_canonical().kind.name in INTEGRAL_KINDS

    def warp_uniform(self, c, depth=0):
        """None when `c` has one value for all lanes of a warp: made of block-uniform values and
        the warp index (x / K, x >> S, x < K on the thread index x, K a multiple of 32), given the
        run-time conditions it records in self.preconditions (a 1-D block or one whose x is a
        multiple of 32, so that a warp is 32 consecutive x of one row). Else a reason."""
        if depth > 8:
            return "an expression too deep to follow"
        if self.uniform(c) is None:
            return None
        c = strip(c)
        k = kind(c)
        ch = children(c)
        tx = self.thread_x_keys()
        line = self.file.line_of(c.extent.start.offset)
        rows = ("::devctx::block_dim().x % 32u == 0 || (::devctx::block_dim().y == 1 && ::devctx::block_dim().z == 1)",
                f"a warp-uniform if (line {line}) needs a 1-D block or one whose x is a multiple of 32")
        if k in PASS_THROUGH and len(ch) == 1:
            return self.warp_uniform(ch[0], depth + 1)
        if k == "UNARY_OPERATOR" and self.unary_op(c) == "!" and ch:
            return self.warp_uniform(ch[0], depth + 1)
        if k == "BINARY_OPERATOR" and len(ch) == 2:
            op = self.binary_op(c)
            left, right = ch
            if op in ("/", ">>", "<", ">=") and self.is_thread_x(left, tx) and self.prologue_constant(right):
                k_text = self.src(right)
                if op == ">>":
                    self.preconditions[f"({k_text}) >= 5"] = f"a shift of the thread index by less than 5 (line {line})"
                else:
                    self.preconditions[f"({k_text}) % 32 == 0"] = \
                        f"a condition on the thread index with a bound that is not a multiple of 32 (line {line})"
                self.preconditions[rows[0]] = rows[1]
                return None
            if op in (">", "<=") and self.is_thread_x(right, tx) and self.prologue_constant(left):
                self.preconditions[f"({self.src(left)}) % 32 == 0"] = \
                    f"a condition on the thread index with a bound that is not a multiple of 32 (line {line})"
                self.preconditions[rows[0]] = rows[1]
                return None
            if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/", "%", "&", "|", "^"):
                for x in ch:
                    r = self.warp_uniform(x, depth + 1)
                    if r is not None:
                        return r
                return None
        if k == "DECL_REF_EXPR" and c.referenced is not None and kind(c.referenced) == "VAR_DECL":
            d = c.referenced
            init = children(d)
            if d.type.is_const_qualified() and init and d.semantic_parent is not None and \
                    self.key(d) not in self.assigned and self.key(d) not in tx:
                return self.warp_uniform(init[-1], depth + 1)
        return self.uniform(c)

    def warp_if(self, c, start, current, nodes):
        """An `if` whose condition is the same for the lanes of each warp (`if (warp == 0)`) around
        warp operations: each thread stores the condition, and the stretches of its branch run the
        threads that hold it (collectives too, per warp)."""
        line = self.file.line_of(start)
        ch = children(c)
        if self.warp_mask is not None:
            raise Decline(f"a warp-uniform if (line {line}) inside another")
        if len(ch) != 2:
            raise Decline(f"barriers or warp operations inside an if (line {line}) whose condition may differ "
                          f"between warps, with an else branch or a declaration in its condition")
        cond, body = ch
        if self.modified_refs(cond):
            raise Decline(f"the condition of the if at line {line} changes a variable")
        self.coll_count += 1
        arr = f"devctx_wc{self.coll_count}"
        self.coll_arrays.append(("unsigned char", arr))
        if current is None:
            current = Region(len(self.regions), False)
            self.regions.append(current)
            nodes.append(("region", current))
        key = cond.extent.start.offset
        self.arg_items[key] = [(arr, cond)]
        current.items.append(([cond], key, cond.extent.end.offset))
        current.uses_rank = True
        items = None
        if kind(body) != "COMPOUND_STMT":
            bs, be = self.offsets(body)
            if not self.file.text(bs, be).rstrip().endswith((";", "}")):
                be = self.file.stmt_end(be)
            items = [([body], bs, be)]
        self.warp_mask = arr
        try:
            inner = self.form(body, False, items)
        finally:
            self.warp_mask = None
        for r, _ in self.all_regions(inner):
            r.mask = arr
        nodes.append(("if", "", line, inner, None))

    def refs_of(self, root):
        """Keys of the declarations `root` refers to, leaving out the arguments of calls that an
        earlier stretch evaluates (split_collective)."""
        out = set()

        def walk(c):
            if (c.extent.start.offset, c.extent.end.offset) in self.excluded and kind(c) == "CALL_EXPR":
                return
            if kind(c) == "DECL_REF_EXPR" and c.referenced is not None:
                out.add(self.key(c.referenced))
            for x in c.get_children():
                walk(x)
        walk(root)
        return out

    def uniform_update(self, c):
        c = strip(c)
        k = kind(c)
        ch = children(c)
        target = None
        rhs = None
        if k == "COMPOUND_ASSIGNMENT_OPERATOR" or (k == "BINARY_OPERATOR" and self.binary_op(c) == "="):
            target, rhs = ch[0], ch[1]
        elif k == "UNARY_OPERATOR" and self.unary_op(c) in ("++", "--"):
            target = ch[0]
        if target is None:
            return False
        t = strip(target)
        if kind(t) != "DECL_REF_EXPR" or t.referenced is None or self.key(t.referenced) not in self.uniform_locals:
            return False
        if rhs is not None and self.uniform(rhs) is not None:
            raise Decline(f"the block-uniform variable '{t.spelling}' gets a value that is not block-uniform "
                          f"(line {self.file.line_of(c.extent.start.offset)})")
        return True

    def uniform_if(self, c, start):
        """An `if` that contains barrier(): block-level when its condition is block-uniform and
        its branches are blocks { } (else if chains too)."""
        line = self.file.line_of(start)
        ch = children(c)
        r = self.uniform(ch[0]) if ch else "nothing"
        if r is not None:
            raise Decline(f"barrier() or a collective inside an if (line {line}) whose condition depends on {r}, "
                          f"which may differ between threads")
        if len(ch) not in (2, 3) or kind(ch[1]) != "COMPOUND_STMT":
            raise Decline(f"barrier() inside an if (line {line}) whose branches are not blocks {{ }} "
                          f"or that declares a variable in its condition")
        header = self.file.text(start, ch[1].extent.start.offset).rstrip()
        then = self.form(ch[1], False)
        other = None
        if len(ch) == 3:
            e = ch[2]
            if kind(e) == "COMPOUND_STMT":
                other = self.form(e, False)
            elif kind(e) == "IF_STMT":
                other = [self.uniform_if(e, e.extent.start.offset) if self.contains_sync(e) else None]
                if other[0] is None:
                    raise Decline(f"an else-if without barrier() after an if with barrier() (line {line}); "
                                  f"write its branches in blocks {{ }}")
            else:
                raise Decline(f"barrier() inside an if (line {line}) whose else branch is not a block {{ }}")
        return ("if", header, line, then, other)

    def loop(self, c, start):
        line = self.file.line_of(start)
        ch = children(c)
        body = ch[-1]
        body_items = None
        if kind(body) != "COMPOUND_STMT":
            # One statement without braces (`for (...) v += shuffle_down(v, d);`): one item.
            if kind(body) in LOOP_KINDS or kind(body) == "IF_STMT":
                raise Decline(f"the loop at line {line} that contains barrier() has no braces")
            bs, be = self.offsets(body)
            if not self.file.text(bs, be).rstrip().endswith((";", "}")):
                be = self.file.stmt_end(be)
            body_items = [([body], bs, be)]
        header = self.file.text(start, body.extent.start.offset).rstrip()
        parts = ch[:-1]
        if kind(c) == "FOR_STMT":
            # libclang leaves out absent parts: place them by the header's semicolons.
            semis = []
            depth = 0
            for t in c.get_tokens():
                if t.extent.start.offset >= body.extent.start.offset:
                    break
                if t.spelling == "(":
                    depth += 1
                elif t.spelling == ")":
                    depth -= 1
                elif t.spelling == ";" and depth == 1:
                    semis.append(t.extent.start.offset)
            if len(semis) != 2:
                raise Decline(f"the loop at line {line} is not a plain for loop")
            init = [p for p in parts if p.extent.start.offset < semis[0]]
            cond = [p for p in parts if semis[0] < p.extent.start.offset < semis[1]]
            inc = [p for p in parts if p.extent.start.offset > semis[1]]
            loop_var = None
            if init:
                d = init[0]
                if kind(d) != "DECL_STMT" or len(children(d)) != 1:
                    raise Decline(f"the loop at line {line} that contains barrier() does not declare one loop variable")
                v = children(d)[0]
                vi = children(v)
                if not vi or self.uniform(vi[-1]) is not None:
                    raise Decline(f"the loop variable '{v.spelling}' (line {line}) does not start block-uniform: "
                                  f"{self.uniform(vi[-1]) if vi else 'no initial value'}")
                loop_var = v
                self.uniform_locals[self.key(v)] = v
            for part in cond:
                r = self.uniform(part)
                if r is not None:
                    raise Decline(f"barrier() inside a loop whose condition (line {line}) depends on {r}, which may "
                                  f"differ between threads")
            for part in inc:
                if not self.uniform_update(part) and not (loop_var is None and self.uniform(part) is None):
                    raise Decline(f"the loop at line {line} that contains barrier() updates something other than a "
                                  f"block-uniform variable")
            if loop_var is not None and self.key(loop_var) in self.modified_refs(body):
                raise Decline(f"the loop variable '{loop_var.spelling}' (line {line}) is changed inside the loop")
        else:  # WHILE_STMT
            for part in parts:
                r = self.uniform(part)
                if r is not None:
                    raise Decline(f"barrier() inside a loop whose condition (line {line}) depends on {r}, which may "
                                  f"differ between threads")
        return ("loop", header, line, self.form(body, False, body_items))

    # ---- analysis ---------------------------------------------------------------------------------
    def prepare_uniform_locals(self):
        """Locals declared at the kernel's top level with a block-uniform value that barrier loops'
        headers read: they become block-level variables of the twin."""
        header_refs = set()
        for c in self.body.walk_preorder():
            if kind(c) in ("FOR_STMT", "WHILE_STMT", "IF_STMT") and self.contains_sync(c):
                ch = children(c)
                for part in (ch[:1] if kind(c) == "IF_STMT" else ch[:-1]):
                    for r in part.walk_preorder():
                        if kind(r) == "DECL_REF_EXPR" and r.referenced is not None:
                            header_refs.add(self.key(r.referenced))
        self.block_decls = set()
        decls = [c for c in children(self.body) if kind(c) == "DECL_STMT" and len(children(c)) == 1
                 and kind(children(c)[0]) == "VAR_DECL"]
        # What the headers read, and what those locals' values read (start, left -> active).
        for c in reversed(decls):
            v = children(c)[0]
            if self.key(v) in header_refs and children(v):
                for r in children(v)[-1].walk_preorder():
                    if kind(r) == "DECL_REF_EXPR" and r.referenced is not None:
                        header_refs.add(self.key(r.referenced))
        for c in decls:
            vs = children(c)
            if self.key(vs[0]) not in header_refs:
                continue
            init = children(vs[0])
            if init and self.uniform(init[-1]) is None:
                self.uniform_locals[self.key(vs[0])] = vs[0]
                self.block_decls.add(c.extent.start.offset)

    def analyse(self):
        for p in self.params:
            if not p.spelling:
                raise Decline("a parameter has no name")
        body_text = self.src(self.body)
        if any(line.lstrip().startswith("#") for line in body_text.splitlines()[1:]):
            # The translator sees one configuration; the compiler may see another (-DNDEBUG).
            raise Decline("preprocessor directives inside the kernel's body")
        self.assigned = self.modified_refs(self.body)
        for p in self.params:
            if self.key(p) in self.assigned:
                raise Decline(f"the kernel assigns its parameter '{p.spelling}' (each thread has its own copy)")
        for c in self.body.walk_preorder():
            k = kind(c)
            if k in ("GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT", "ASM_STMT", "GCC_ASM_STMT"):
                raise Decline(f"it uses {k.lower().replace('_stmt', '')} (line {self.file.line_of(c.extent.start.offset)})")
            if k == "LAMBDA_EXPR" and self.contains_sync(c):
                raise Decline("barrier() inside a lambda")
            if k == "LAMBDA_EXPR" and any(kind(x) == "RETURN_STMT" for x in c.walk_preorder()):
                raise Decline(f"a lambda with return inside the kernel (line {self.file.line_of(c.extent.start.offset)})")
            if k == "VAR_DECL" and c.storage_class.name == "STATIC" and not c.spelling.startswith("devctx_shared_site_"):
                raise Decline(f"the static local '{c.spelling}' (each stretch between barriers would get its own)")
        self.prepare_uniform_locals()
        self.nodes = self.form(self.body, True)
        # Block-level declarations leave their regions.
        for r in self.regions:
            kept = []
            for it in r.items:
                if it[1] in self.block_decls:
                    r.block_prefix = getattr(r, "block_prefix", []) + [it]
                else:
                    kept.append(it)
            r.items = kept
        self.split_guards()
        self.check_exits()
        if self.early_exit and self.coll_count:
            raise Decline("a warp operation or block collective in a kernel whose threads may return before it "
                          "(the lanes that returned would be missing from it)")
        self.find_vars()

    def last_region(self):
        """The region after which the kernel has no more barriers, if any."""
        if self.nodes and self.nodes[-1][0] == "region":
            return self.nodes[-1][1]
        return None

    def split_guards(self):
        """Turns `if (t < U) S` (t = thread_idx().x) into a region over the threads it selects."""
        thread_x = self.thread_x_keys()
        new_nodes = self.split_nodes(self.nodes, thread_x)
        self.nodes = new_nodes

    def thread_x_keys(self):
        keys = set()
        for c in children(self.body):
            if kind(c) != "DECL_STMT":
                continue
            for v in children(c):
                if kind(v) != "VAR_DECL" or not v.type.is_const_qualified():
                    continue
                if v.type.get_canonical().kind.name not in INTEGRAL_KINDS:
                    continue
                init = children(v)
                if init and self.is_thread_x(init[-1], set()):
                    keys.add(self.key(v))
        return keys

    def guard_range(self, stmt, thread_x):
        """(begin, end) texts of the thread range an `if` selects, else None."""
        if kind(stmt) != "IF_STMT":
            return None
        ch = children(stmt)
        if len(ch) != 2:
            return None
        cond = strip(ch[0])
        if kind(cond) != "BINARY_OPERATOR":
            return None
        op = self.binary_op(cond)
        lr = children(cond)
        if len(lr) != 2 or op not in ("<", "<=", ">", ">=", "=="):
            return None
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
        if self.is_thread_x(lr[0], thread_x):
            t, u = lr[0], lr[1]
        elif self.is_thread_x(lr[1], thread_x):
            t, u, op = lr[1], lr[0], flip[op]
        else:
            return None
        if self.uniform(u) is not None or u.type.get_canonical().kind.name not in INTEGRAL_KINDS:
            return None
        for c in ch[1].walk_preorder():
            if kind(c) in ("RETURN_STMT", "BREAK_STMT", "CONTINUE_STMT"):
                return None
        tt = strip(t)
        ttype = tt.type.get_canonical().spelling.replace("const ", "") if kind(tt) == "DECL_REF_EXPR" else "unsigned int"
        # The bound as the comparison converts it (an enumerator, a narrower type).
        ut = f"static_cast<{u.type.get_canonical().spelling}>({self.src(u)})"
        f = "::devctx::detail::cpu::fission::"
        if op == "<":
            return ("0", f"{f}lt_end<{ttype}>({ut}, devctx_bx)")
        if op == "<=":
            return ("0", f"{f}le_end<{ttype}>({ut}, devctx_bx)")
        if op == ">=":
            return (f"{f}ge_begin<{ttype}>({ut}, devctx_bx)", "devctx_bx")
        if op == ">":
            return (f"{f}le_end<{ttype}>({ut}, devctx_bx)", "devctx_bx")
        return (f"{f}eq_begin<{ttype}>({ut}, devctx_bx)", f"{f}eq_begin<{ttype}>({ut}, devctx_bx) + 1")

    def split_nodes(self, nodes, thread_x):
        out = []
        for node in nodes:
            if node[0] == "loop":
                out.append(("loop", node[1], node[2], self.split_nodes(node[3], thread_x)))
                continue
            if node[0] == "if":
                out.append(("if", node[1], node[2], self.split_nodes(node[3], thread_x),
                            None if node[4] is None else self.split_nodes(node[4], thread_x)))
                continue
            if node[0] != "region":
                out.append(node)
                continue
            r = node[1]
            for it in getattr(r, "block_prefix", []):
                out.append(("code", self.file.text(it[1], it[2]), self.file.line_of(it[1])))
            has_return = any(kind(c) == "RETURN_STMT" for cs, _, _ in r.items for c0 in cs for c in c0.walk_preorder())
            pieces = []
            for it in r.items:
                rng = None if has_return or len(it[0]) != 1 else self.guard_range(it[0][0], thread_x)
                if rng is not None:
                    g = Region(0, False)
                    g.mask = getattr(r, "mask", None)
                    g.uses_rank = getattr(r, "uses_rank", False)
                    g.items = [it]
                    g.range = rng
                    g.guard_body = children(it[0][0])[1]
                    pieces.append(g)
                else:
                    if not pieces or pieces[-1].range is not None:
                        pieces.append(Region(0, False))
                        pieces[-1].mask = getattr(r, "mask", None)
                        pieces[-1].uses_rank = getattr(r, "uses_rank", False)
                    pieces[-1].items.append(it)
            for p in pieces:
                if p.items:
                    out.append(("region", p))
        return out

    def all_regions(self, nodes=None, depth=0):
        for node in (self.nodes if nodes is None else nodes):
            if node[0] == "region":
                yield node[1], depth
            elif node[0] == "loop":
                yield from self.all_regions(node[3], depth + 1)
            elif node[0] == "if":
                yield from self.all_regions(node[3], depth + 1)
                if node[4] is not None:
                    yield from self.all_regions(node[4], depth + 1)

    def check_exits(self):
        regions = list(self.all_regions())
        for i, (r, depth) in enumerate(regions):
            for cs, s, _ in r.items:
                for c0 in cs:
                    for c in c0.walk_preorder():
                        k = kind(c)
                        if k == "RETURN_STMT":
                            if depth > 0 or i != len(regions) - 1 or self.nodes[-1][0] != "region" or \
                                    self.nodes[-1][1] is not r:
                                # A thread that returns before a later barrier: the twin's later
                                # stretches skip it (the exited mask, as the fibers keep one).
                                if children(c):
                                    raise Decline(f"a return with a value (line {self.file.line_of(c.extent.start.offset)})")
                                self.early_exit = True
                        if k in ("BREAK_STMT", "CONTINUE_STMT") and depth > 0 and not self.nested_loop(c0, c):
                            raise Decline(f"break or continue out of a loop that contains barrier() "
                                          f"(line {self.file.line_of(c.extent.start.offset)})")

    def nested_loop(self, root, target):
        """Whether `target` sits inside a loop or switch within `root`."""
        def walk(c, inside):
            if c == target:
                return inside
            for x in children(c):
                r = walk(x, inside or kind(c) in LOOP_KINDS)
                if r is not None:
                    return r
            return None
        return bool(walk(root, False))

    def find_vars(self):
        regions = [r for r, _ in self.all_regions()]
        for i, r in enumerate(regions):
            r.index = i
            r.refs = set()
            for cs, _, _ in r.items:
                for c0 in cs:
                    if kind(c0) == "DECL_STMT":
                        for v in children(c0):
                            if kind(v) == "VAR_DECL":
                                self.var_count += 1
                                self.vars[self.key(v)] = Var(v, (cs, c0), r, self.var_count)
                    r.refs |= self.refs_of(c0)
        self.regions_list = regions
        live = {k: v for k, v in self.vars.items() if any(k in r.refs and r is not v.region for r in regions)}
        # Rematerialisable: const, initialised from the thread index and uniform values only.
        remat = set()
        changed = True
        while changed:
            changed = False
            for k, v in self.vars.items():
                if k in remat or not v.const:
                    continue
                init = children(v.cursor)
                if not init or kind(v.stmt[1]) != "DECL_STMT":
                    continue
                # A multi-variable declaration is copied whole: every variable in it must qualify.
                if self.uniform(init[-1], allow_thread=True, remat_keys=frozenset(remat)) is None:
                    remat.add(k)
                    changed = True
        for k in list(remat):
            decl = self.vars[k].stmt[1]
            if any(self.key(v) not in remat for v in children(decl) if kind(v) == "VAR_DECL"):
                remat.discard(k)
        self.remat = remat
        for k, v in live.items():
            if k in remat:
                v.remat = True
                continue
            t = v.cursor.type.get_canonical()
            base = t.get_pointee().kind.name if t.kind.name == "POINTER" else t.kind.name
            if base not in ARITHMETIC_KINDS:
                raise Decline(f"the variable '{v.name}' lives across a barrier or collective and has the type "
                              f"'{v.cursor.type.spelling}' (only numbers and pointers to them are kept per thread yet)")
            if self.key(v.cursor) in self.assigned and any(
                    kind(c) == "UNARY_OPERATOR" and self.unary_op(c) == "&" for c in self.body.walk_preorder()
                    if any(kind(x) == "DECL_REF_EXPR" and x.referenced is not None and self.key(x.referenced) == k
                           for x in children(c))):
                raise Decline(f"the address of '{v.name}' is taken and it lives across a barrier")
            if not children(v.cursor):
                raise Decline(f"the variable '{v.name}' lives across a barrier and is declared without a value")
        self.live = live

    # ---- emission ---------------------------------------------------------------------------------
    def type_text(self, v):
        t = v.cursor.type.get_canonical()
        s = t.spelling
        if "type-parameter-" in s:  # a template's dependent type: as written
            s = v.cursor.type.spelling
        for q in ("const ", "volatile "):
            s = s.replace(q, "", 1) if s.startswith(q) else s
        if s.endswith(" const"):
            s = s[: -len(" const")]
        return s

    def line_directive(self, offset):
        path = self.file.path.replace("\\", "\\\\").replace('"', '\\"')
        return f'#line {self.file.line_of(offset)} "{path}"\n'

    def remat_stmts(self, keys):
        """The declaration statements of rematerialised variables `keys` need, with their
        dependencies, in source order."""
        need = set()
        work = list(keys)
        while work:
            k = work.pop()
            if k in need or k not in self.remat:
                continue
            need.add(k)
            v = self.vars[k]
            for c in v.stmt[1].walk_preorder():
                if kind(c) == "DECL_REF_EXPR" and c.referenced is not None:
                    work.append(self.key(c.referenced))
            for other in children(v.stmt[1]):
                if kind(other) == "VAR_DECL":
                    work.append(self.key(other))
        stmts = {}
        for k in need:
            d = self.vars[k].stmt[1]
            stmts[d.extent.start.offset] = d
        return [stmts[o] for o in sorted(stmts)]

    def body_text(self, start, end):
        """The kernel's text in [start, end); with early exits, each `return` also marks the thread
        exited (the twin's later stretches skip it)."""
        subs = [(s0, e0, t) for s0, (e0, t) in self.replacements.items()]
        if self.early_exit:
            for c in self.body.walk_preorder():
                if kind(c) == "RETURN_STMT":
                    subs.append((*self.offsets(c), "return (void)(devctx_exited[devctx_rank] = 1)"))
        out = []
        pos = start
        for s, e, t in sorted(subs):
            if s < pos or e > end:
                continue
            out.append(self.file.text(pos, s))
            out.append(t)
            pos = e
        out.append(self.file.text(pos, end))
        return "".join(out)

    def emit_region(self, r, indent):
        roots = [r.guard_body] if r.range is not None else [c for cs, s0, e0 in r.items if s0 not in self.arg_items
                                                              for c in cs]
        versions = self.bound_versions(roots)
        if not versions:
            return self.emit_stretch(r, indent)
        # Every thread of the block on the data's side of its bounds (all blocks but the last):
        # the comparisons are constants. Else the stretch as written.
        pad = " " * indent
        conds = list(dict.fromkeys(v[2] for v in versions))
        saved = dict(self.replacements)
        for s0, e0, _, value in versions:
            self.replacements[s0] = (e0, f"({value})")
        # What only the folded comparisons read (the bound m of `m > i`) is not captured there.
        folded = [(s0, e0) for s0, e0, _, _ in versions]
        inside, outside = set(), set()
        for root in roots:
            for c in root.walk_preorder():
                if kind(c) == "DECL_REF_EXPR" and c.referenced is not None:
                    o = c.extent.start.offset
                    (inside if any(a <= o < b for a, b in folded) else outside).add(self.key(c.referenced))
        self.unread = inside - outside
        try:
            fast = self.emit_stretch(r, indent + 2)
        finally:
            self.replacements = saved
            self.unread = set()
        return (f"{pad}if ({' && '.join(conds)}) {{\n{fast}{pad}}} else {{\n"
                f"{self.emit_stretch(r, indent + 2)}{pad}}}\n")

    def emit_stretch(self, r, indent):
        pad = " " * indent
        own = {k for k, v in self.vars.items() if v.region is r}
        used = r.refs if r.range is None else {self.key(c.referenced) for c in r.guard_body.walk_preorder()
                                               if kind(c) == "DECL_REF_EXPR" and c.referenced is not None}
        foreign = [k for k in used if k in self.vars and k not in own]
        remats = self.remat_stmts([k for k in foreign if k in self.remat])
        loads = [self.live[k] for k in foreign if k in self.live and not self.live[k].remat]
        loads.sort(key=lambda v: v.cursor.extent.start.offset)
        stores = [v for v in self.live.values() if not v.remat and (v.region is r or v in loads) and not v.const]
        stores += [v for v in self.live.values() if not v.remat and v.region is r and v.const]
        uses_rank = bool(loads or stores or self.early_exit or getattr(r, "uses_rank", False) or
                         getattr(r, "mask", None))
        # Parameters and block-uniform variables by value: a region may not change them.
        caps = sorted({self.vars_name(k) for k in used if self.captured_by_value(k) and
                       k not in self.unread})
        cap = "&" + "".join(", " + c for c in caps)
        begin, end = r.range if r.range is not None else ("0", "devctx_bx")
        rank = "[[maybe_unused]] std::size_t devctx_rank" if not uses_rank else "std::size_t devctx_rank"
        out = [f"{pad}::devctx::detail::cpu::fission::threads({begin}, {end}, [{cap}]({rank}) {{\n"]
        if self.early_exit:
            out.append(f"{pad}  if (devctx_exited[devctx_rank]) return;\n")
        if getattr(r, "mask", None):
            out.append(f"{pad}  if (!{r.mask}[devctx_rank]) return;\n")
        for d in remats:
            out.append(self.line_directive(d.extent.start.offset))
            out.append(f"{pad}  [[maybe_unused]] {self.src(d)}\n")
        for v in loads:
            q = "const " if v.const else ""
            out.append(f"{pad}  {q}{self.type_text(v)} {v.name} = {v.array}[devctx_rank];\n")
        if r.range is not None:
            b = r.guard_body
            out.append(self.line_directive(b.extent.start.offset))
            e = b.extent.end.offset
            if kind(b) != "COMPOUND_STMT":
                e = self.file.stmt_end(e)
            out.append(f"{pad}  {self.body_text(b.extent.start.offset, e)}\n")
        else:
            for cs, s, e in r.items:
                out.append(self.line_directive(s))
                if s in self.arg_items:
                    for arr, a in self.arg_items[s]:
                        out.append(f"{pad}  {arr}[devctx_rank] = {self.body_text(*self.offsets(a))};\n")
                    continue
                # A declaration whose variables the region itself may not use (row, col above a
                # barrier): no unused-variable warning.
                mu = "[[maybe_unused]] " if len(cs) == 1 and kind(cs[0]) == "DECL_STMT" and children(cs[0]) and all(
                    kind(v) == "VAR_DECL" for v in children(cs[0])) else ""
                out.append(f"{pad}  {mu}{self.body_text(s, e)}\n")
        for v in stores:
            out.append(f"{pad}  {v.array}[devctx_rank] = {v.name};\n")
        out.append(f"{pad}}});\n")
        return "".join(out)

    def plain_bound(self, c):
        """Whether `c` can be evaluated once before a stretch, outside it: block-uniform, reading
        only parameters, block-level locals, constants and their pure members (n, in.size()),
        never shared memory."""
        if self.uniform(c) is not None:
            return False
        for x in c.walk_preorder():
            k = kind(x)
            if k in ("ARRAY_SUBSCRIPT_EXPR", "LAMBDA_EXPR"):
                return False
            if k == "DECL_REF_EXPR" and x.referenced is not None and self.key(x.referenced) in self.shared_vars:
                return False
        return True

    def bound_versions(self, roots):
        """The comparisons in a stretch's code of a thread-affine sum (see affine: `i` holding
        `global_idx().x`, `row` holding `block_idx().y * 16 + ty`, `k0 + tx`) with a block-uniform
        bound: [(start, end, condition, value)], where `condition` (C++ text, evaluated before the
        stretch) holds when the comparison has the same `value` for every thread of the block.
        The twin then runs the stretch twice over: once with those comparisons replaced by their
        value, which GCC vectorises without masked loads (a select `i < n ? in[i] : 0` costs 4x as
        a masked load on AMD Zen), and as written for the blocks at the edge of the data."""
        taken = [(s0, e0) for s0, (e0, _) in self.replacements.items()]
        out = []
        for root in roots:
            for c in root.walk_preorder():
                if kind(c) != "BINARY_OPERATOR":
                    continue
                op = self.binary_op(c)
                lr = children(c)
                if op not in ("<", "<=", ">", ">=") or len(lr) != 2:
                    continue
                s0, e0 = self.offsets(c)
                if any(a < e0 and s0 < b for a, b in taken):
                    continue
                folded = self.corner_condition(lr, op)
                if folded is None:
                    continue
                cond, op = folded
                out.append((s0, e0, cond, "true" if op in ("<", "<=") else "false"))
                taken.append((s0, e0))
        return out

    def affine(self, c, keys, depth=0):
        """'thread' when `c` is a sum of thread index components (`thread_idx().x/.y/.z`,
        `global_idx().x`, or `const` locals holding such sums) and block-uniform values, converted
        only in ways that keep every value (to a wider type, or unsigned to unsigned); 'uniform'
        when block-uniform; else None. Adds the locals it reads to `keys`. Such a sum is
        non-decreasing in each component unless an unsigned addition wraps, which would make its
        value at the block's last thread smaller than at its first (corner_values checks that)."""
        if depth > 32:
            return None
        k = kind(c)
        ch = children(c)
        if k == "PAREN_EXPR" and len(ch) == 1:
            return self.affine(ch[0], keys, depth + 1)
        if k == "UNEXPOSED_EXPR" and len(ch) == 1:
            inner = self.affine(ch[0], keys, depth + 1)
            if inner == "thread" and not value_preserving(ch[0].type, c.type):
                return None
            return inner
        if k == "BINARY_OPERATOR" and self.binary_op(c) == "+" and len(ch) == 2:
            a, b = self.affine(ch[0], keys, depth + 1), self.affine(ch[1], keys, depth + 1)
            if a is None or b is None:
                return None
            if "thread" in (a, b):
                return "thread" if integral_width(c.type) >= 4 else None
            return "uniform"
        if k == "MEMBER_REF_EXPR" and c.spelling in ("x", "y", "z") and ch:
            call = strip(ch[0])
            if kind(call) == "CALL_EXPR" and devctx_function(call) == "thread_idx":
                return "thread"
        if is_global_x(c):
            return "thread"
        if k == "DECL_REF_EXPR" and c.referenced is not None:
            key = self.key(c.referenced)
            if key in self.remat and key in self.vars:
                init = children(self.vars[key].cursor)
                if not init:
                    return None
                r = self.affine(init[-1], keys, depth + 1)
                if r is not None:
                    keys.add(key)
                    if r == "thread" and not value_preserving(init[-1].type, self.vars[key].cursor.type):
                        return None
                return r
        return "uniform" if self.plain_bound(c) else None

    def corner_condition(self, lr, op):
        """For `X op B` (or `B op X`), X a thread-affine sum (see affine) and B a plain bound: (the
        C++ condition, evaluated before the stretch, under which the comparison holds for every
        thread of the block when op is < or <=, or fails for every thread when > or >=; the op with
        X on the left), else None."""
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
        for x, b, o in ((lr[0], lr[1], op), (lr[1], lr[0], flip.get(op))):
            keys = set()
            if o is None or self.affine(x, keys) != "thread" or not self.plain_bound(b):
                continue
            if b.type.get_canonical().kind.name not in INTEGRAL_KINDS:
                continue
            if x.type.get_canonical().kind.name not in INTEGRAL_KINDS:
                continue
            decls = "".join(f"[[maybe_unused]] {self.src(d)} " if self.src(d).rstrip().endswith(";")
                            else f"[[maybe_unused]] {self.src(d)}; " for d in self.remat_stmts(keys))
            # The comparison's own operator on the corner value: the kernel's conversions exactly.
            test = {"<": "<", "<=": "<=", ">": "<=", ">=": "<"}[o]
            cond = ("[&] { const auto [devctx_lo, devctx_hi] = ::devctx::detail::cpu::fission::corner_values("
                    f"[&] {{ {decls}return {self.src(x)}; }}); "
                    f"return devctx_lo <= devctx_hi && devctx_hi {test} ({self.src(b)}); }}()")
            return cond, o
        return None

    def vars_name(self, k):
        return k[1]

    def captured_by_value(self, k):
        if k in self.uniform_locals:
            return True
        return any(self.key(p) == k for p in self.params)

    def emit_nodes(self, nodes, indent):
        pad = " " * indent
        out = []
        for node in nodes:
            if node[0] == "region":
                out.append(self.emit_region(node[1], indent))
            elif node[0] == "code":
                out.append(f'#line {node[2]} "{self.file.path}"\n')
                out.append(f"{pad}{node[1].strip()}\n")
            elif node[0] == "if":
                out.append(f'#line {node[2]} "{self.file.path}"\n')
                out.append(f"{pad}{node[1]} {{\n")
                out.append(self.emit_nodes(node[3], indent + 2))
                out.append(f"{pad}}}")
                if node[4] is not None:
                    out.append(" else {\n")
                    out.append(self.emit_nodes(node[4], indent + 2))
                    out.append(f"{pad}}}")
                out.append("\n")
            else:
                out.append(f'#line {node[2]} "{self.file.path}"\n')
                out.append(f"{pad}{node[1]} {{\n")
                out.append(self.emit_nodes(node[3], indent + 2))
                out.append(f"{pad}}}\n")
        return "".join(out)

    def template_parts(self):
        """For a template kernel: (its `template <...>` text, the arguments that name this
        specialization: `<T, N>`), else ("", "")."""
        if kind(self.fn) != "FUNCTION_TEMPLATE":
            return "", ""
        toks = list(self.fn.get_tokens())
        if len(toks) < 2 or toks[0].spelling != "template" or toks[1].spelling != "<":
            raise Decline("a template kernel whose declaration the translator cannot read")
        depth = 0
        end = None
        for t in toks[1:]:
            if t.spelling in ("<", "(", "["):
                depth += 1
            elif t.spelling in (">", ")", "]"):
                depth -= 1
            elif t.spelling == ">>":
                depth -= 2
            if depth <= 0:
                end = t.extent.end.offset
                break
        if end is None or depth < 0:
            raise Decline("a template kernel whose template parameters the translator cannot read")
        names = []
        for c in self.fn.get_children():
            if kind(c) in ("TEMPLATE_TYPE_PARAMETER", "TEMPLATE_NON_TYPE_PARAMETER", "TEMPLATE_TEMPLATE_PARAMETER"):
                if not c.spelling:
                    raise Decline("a template parameter has no name")
                names.append(c.spelling)
        header = self.file.text(self.fn.extent.start.offset, end)
        if "..." in header:
            raise Decline("a variadic template kernel (not translated yet)")
        return header, "<" + ", ".join(names) + ">"

    def twin_name(self):
        return f"{self.name}__devctx_twin"

    def emit_twin(self):
        if self.params:
            ptext = self.file.text(self.params[0].extent.start.offset, self.params[-1].extent.end.offset)
        else:
            ptext = ""
        out = ["#if !defined(__CUDA_ARCH__)\n",
               f"// The block-level twin of {self.name} (devctx fission translator; docs/cpu-backend.md).\n",
               f"{self.template_parts()[0]}\n" if self.template_parts()[0] else "",
               f"static inline void {self.twin_name()}({ptext}) {{\n",
               "  const std::size_t devctx_bx = ::devctx::detail::cpu::tls.block_dim.x;\n"]
        for v in sorted(self.live.values(), key=lambda v: v.cursor.extent.start.offset):
            if not v.remat:
                out.append(f"  {self.type_text(v)}* const {v.array} = "
                           f"::devctx::detail::cpu::fission::per_thread<{self.type_text(v)}>();\n")
        for t, name in self.coll_arrays:
            out.append(f"  {t}* const {name} = ::devctx::detail::cpu::fission::per_thread<{t}>();\n")
        if self.early_exit:
            out.append("  unsigned char* const devctx_exited = "
                       "::devctx::detail::cpu::fission::per_thread<unsigned char>();\n"
                       "  for (std::size_t devctx_i = 0, devctx_n = ::devctx::detail::cpu::fission::block_threads(); "
                       "devctx_i < devctx_n; ++devctx_i) devctx_exited[devctx_i] = 0;\n")
        out.append(self.emit_nodes(self.nodes, 2))
        out.append("}\n#endif\n")
        return "".join(out)

    def prologue(self):
        args = ", ".join(p.spelling for p in self.params)
        targs = self.template_parts()[1]
        if not self.preconditions:
            return ("\n#if !defined(__CUDA_ARCH__)\n"
                    f"  if (::devctx::detail::cpu::take_fission_offer(&{self.name}{targs})) [[unlikely]] {{\n"
                    f"    {self.twin_name()}{targs}({args});\n"
                    "    return;\n"
                    "  }\n"
                    "#endif\n")
        # The twin holds only under run-time conditions (the block's shape): else fibers, and why.
        out = ["\n#if !defined(__CUDA_ARCH__)\n",
               f"  if (::devctx::detail::cpu::fission_offered(&{self.name}{targs})) [[unlikely]] {{\n"]
        conds = list(self.preconditions.items())
        for cond, why in conds:
            r = "the launch does not meet what the translated twin assumes: " + why
            r = r.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f"    if (!({cond})) ::devctx::detail::cpu::decline_fission_offer("
                       f"&{self.name}{targs}, \"{r}\");\n")
        out.append(f"    if (::devctx::detail::cpu::take_fission_offer(&{self.name}{targs})) {{\n"
                   f"      {self.twin_name()}{targs}({args});\n"
                   "      return;\n"
                   "    }\n"
                   "  }\n"
                   "#endif\n")
        return "".join(out)


class Inliner:
    """Writes a kernel's calls of helpers that contain sync points (barriers, warp operations,
    block collectives) inline, so that the kernel's twin can split them: a statement that calls
    such a helper `h(a, b)` once, where every thread evaluates it, becomes the helper's
    parameters as locals initialised from the arguments, the helper's body (its parameters and
    locals renamed apart), and the statement with the call replaced by the returned value. The
    helper must be a plain function defined in the same file, take its parameters by value, and
    return only by one `return` at its end. The inlined code goes on the call's line (the body's
    tokens joined, comments dropped), so every other line of the file keeps its number; it is used
    for the twin only: the kernel itself runs as written on fibers."""

    def __init__(self, file, sync, counter):
        self.file = file
        self.sync = sync
        self.counter = counter  # [n]: numbers the inlined copies
        self.kt = object.__new__(KernelTranslator)  # for its stateless cursor helpers

    def helper_of(self, call):
        ref = call.referenced
        if ref is None or kind(ref) != "FUNCTION_DECL" or qualified(ref)[:1] == ["devctx"]:
            return None
        d = ref.get_definition()
        if d is None or d.location.file is None or \
                os.path.realpath(d.location.file.name) != os.path.realpath(self.file.path):
            return None
        return d if self.sync.function_sync(d) is not None else None

    def check_helper(self, h, line):
        why = None
        body = [c for c in h.get_children() if kind(c) == "COMPOUND_STMT"]
        if h.get_num_template_arguments() > 0 and body:
            # A specialization: its parameter and return types are concrete; the body is the
            # template's text, so it must not name the template's parameters.
            names = self.template_parameter_names(h)
            used = {t.spelling for t in body[0].get_tokens() if t.kind.name == "IDENTIFIER"}
            if names is None or names & used:
                raise Decline(f"it calls {h.spelling}() (line {line}), a template with barriers or warp operations "
                              f"whose body names its template parameters (not inlined yet)")
        params = [c for c in h.get_children() if kind(c) == "PARM_DECL"]
        if not body:
            why = "it has no body"
        elif any(not p.spelling or p.type.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE") or
                 any(ch in p.type.spelling for ch in "([") for p in params):
            why = "it takes a parameter by reference, without a name, or of an array or function type"
        elif kind(h.semantic_parent) not in ("NAMESPACE", "TRANSLATION_UNIT"):
            why = "it is a member function"
        if why is None:
            stmts = children(body[0])
            text = self.file.text(*self.kt.offsets(body[0]))
            returns = [c for c in body[0].walk_preorder() if kind(c) == "RETURN_STMT"]
            void = h.result_type.kind.name == "VOID"
            if any(line.lstrip().startswith("#") for line in text.splitlines()[1:]) or "DEVCTX_SHARED" in text:
                why = "its body has preprocessor directives or DEVCTX_SHARED"
            elif any(kind(c) in ("LAMBDA_EXPR", "GOTO_STMT", "LABEL_STMT") or
                     (kind(c) == "VAR_DECL" and c.storage_class.name == "STATIC") for c in body[0].walk_preorder()):
                why = "its body has a lambda, goto or static local"
            elif void and returns:
                why = "it returns early"
            elif not void and (len(returns) != 1 or not stmts or stmts[-1] != returns[0] or not children(returns[0])):
                why = "it does not return once, at its end"
        if why is not None:
            raise Decline(f"it calls {h.spelling}() (line {line}), which has barriers or warp operations and "
                          f"cannot be inlined: {why}")
        return body[0], params

    def template_parameter_names(self, h):
        """The names in the `template <...>` right before a helper's definition, else None."""
        import re
        data = self.file.data[:h.extent.start.offset].decode("utf-8", "replace")
        at = data.rfind("template")
        if at < 0:
            return None
        depth, end = 0, None
        for i in range(data.find("<", at), len(data)):
            if data[i] == "<":
                depth += 1
            elif data[i] == ">":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        between = data[end + 1:] if end is not None else ""
        if end is None or re.fullmatch(r"(\s|DEVCTX_DEVICE|DEVCTX_HD_INLINE|inline|static|constexpr)*", between) is None:
            return None
        keywords = {"class", "typename", "unsigned", "int", "long", "short", "char", "bool", "auto", "signed",
                    "template", "const"}
        return set(re.findall(r"[A-Za-z_]\w*", data[data.find("<", at):end])) - keywords

    def copy(self, h, body, params, args, n):
        """The helper's parameters and body (but its final return) as one line, and the returned
        expression, with its parameters and locals renamed."""
        decls = {}
        for c in [h] + list(h.walk_preorder()):
            if kind(c) in ("PARM_DECL", "VAR_DECL") and c.semantic_parent is not None and \
                    c.semantic_parent.get_usr() == h.get_usr():
                decls[(c.location.offset, c.spelling)] = c
        names = {k[1] for k in decls}
        assigned = self.kt.modified_refs(body)

        def renamed(cursor, end=None):
            out = []
            prev = None
            for t in cursor.get_tokens():
                if end is not None and t.extent.start.offset >= end:
                    break
                sp = t.spelling
                member = prev in (".", "->", "::")
                prev = sp
                if t.kind.name == "IDENTIFIER" and not member and sp not in names and sp in self.kernel_names:
                    # The helper names something outside it that a kernel's local would hide.
                    raise Decline(f"the helper {h.spelling}() uses '{sp}', which the kernel declares too")
                if t.kind.name == "IDENTIFIER" and not member and sp in names:
                    c = t.cursor
                    target = c if kind(c) in ("PARM_DECL", "VAR_DECL") else c.referenced
                    if target is None or (target.location.offset, target.spelling) not in decls:
                        raise Decline(f"the helper {h.spelling}() uses the name '{sp}' in a way the translator "
                                      f"cannot rename")
                    sp = f"{sp}__devctx_i{n}"
                out.append(sp)
            return " ".join(out)

        head = []
        for p, a in zip(params, args):
            const = "" if (p.location.offset, p.spelling) in assigned else " const"
            head.append(f"{p.type.spelling}{const} {p.spelling}__devctx_i{n} = static_cast<{p.type.spelling}>"
                        f"({self.file.text(*self.kt.offsets(a))});")
        stmts = children(body)
        ret = None
        if h.result_type.kind.name != "VOID":
            ret = children(stmts[-1])[0]
            stmts = stmts[:-1]
        for st in stmts:
            t = renamed(st)
            head.append(t if t.rstrip().endswith((";", "}")) else t + ";")
        value = f"static_cast<{h.result_type.spelling}>({renamed(ret)})" if ret is not None else None
        return " ".join(head), value

    def path_ok(self, stmt, call):
        p = self.kt.path_to(stmt, call)
        if p is None:
            return False
        for a in p[:-1]:
            ka = kind(a)
            if ka in ("CONDITIONAL_OPERATOR", "LAMBDA_EXPR") or (ka == "BINARY_OPERATOR" and
                                                               self.kt.binary_op(a) in ("&&", "||")):
                return False
        return True

    def run(self, kernel_body, param_names):
        """The file's text with the kernel's helper calls inlined, or None when there are none."""
        edits = []  # (start, end, text)
        self.kernel_names = set(param_names) | {c.spelling for c in kernel_body.walk_preorder()
                                                 if kind(c) in ("VAR_DECL", "PARM_DECL")}

        for comp in [c for c in kernel_body.walk_preorder() if kind(c) == "COMPOUND_STMT"]:
            for st in children(comp):
                if kind(st) in ("COMPOUND_STMT", "IF_STMT", "FOR_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT",
                                "RETURN_STMT", "CXX_FOR_RANGE_STMT"):
                    continue
                calls = [c for c in st.walk_preorder() if kind(c) == "CALL_EXPR" and self.helper_of(c) is not None]
                if not calls:
                    continue
                line = self.file.line_of(st.extent.start.offset)
                if len(calls) != 1 or not self.path_ok(st, calls[0]):
                    raise Decline(f"a statement (line {line}) calls helpers with barriers or warp operations more "
                                  f"than once, or inside ?:, && or ||")
                call = calls[0]
                h = self.helper_of(call)
                if kind(st) == "DECL_STMT" and len([v for v in children(st) if kind(v) == "VAR_DECL"]) != 1:
                    raise Decline(f"the helper {h.spelling}() initialises one of several variables (line {line})")
                body, params = self.check_helper(h, line)
                args = [a for a in children(call)[1:] if a.extent.start.offset < a.extent.end.offset]
                if len(args) != len(params):
                    raise Decline(f"the call of {h.spelling}() at line {line} leaves out arguments")
                self.counter[0] += 1
                head, value = self.copy(h, body, params, args, self.counter[0])
                s0, e0 = self.kt.offsets(st)
                cs, ce = self.kt.offsets(call)
                if value is None and strip(st) != call:
                    raise Decline(f"the value of the void helper {h.spelling}() is used (line {line})")
                stmt_text = "" if value is None else self.file.text(s0, cs) + value + self.file.text(ce, e0)
                edits.append((s0, e0, head + " " + stmt_text))
        if not edits:
            return None
        out = bytearray()
        pos = 0
        for s0, e0, t in sorted(edits):
            if s0 < pos:
                raise Decline("helper calls the translator cannot inline one by one")
            out += self.file.data[pos:s0]
            out += t.encode("utf-8")
            pos = e0
        out += self.file.data[pos:]
        return bytes(out)


def inline_and_translate(fn, file, index, args, ci):
    """The kernel translated from a copy of the file with its helpers inlined (up to three levels:
    helpers that call helpers), as (its KernelTranslator, the copy's File); raises Decline."""
    counter = [0]
    cur_file, cur_fn = file, fn
    for _ in range(3):
        sync = SyncFinder()
        body = [c for c in cur_fn.get_children() if kind(c) == "COMPOUND_STMT"][0]
        data = Inliner(cur_file, sync, counter).run(body, [c.spelling for c in cur_fn.get_children()
                                                           if kind(c) == "PARM_DECL"])
        if data is None:
            break
        tu = index.parse(file.path, args=args, unsaved_files=[(file.path, data.decode("utf-8"))])
        errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errors:
            raise Decline(f"its helpers, inlined, did not parse ({errors[0].spelling})")
        cur_file = File(file.path, data)
        found = [c for c in tu.cursor.walk_preorder() if kind(c) in ("FUNCTION_DECL",) and c.spelling == fn.spelling
                 and c.extent.start.offset == fn.extent.start.offset and c.is_definition()]
        if len(found) != 1:
            raise Decline("the kernel with its helpers inlined could not be found again")
        cur_fn = found[0]
    kt = KernelTranslator(cur_fn, cur_file, SyncFinder(), ci)
    kt.analyse()
    return kt, cur_file



# ---- barrier-free kernels: one loop the compiler can vectorise ------------------------------------
# A kernel without barriers already runs as a plain loop over the block's threads, but that loop
# keeps the bounds guard (`if (i < n)`) inside it and stores the thread index to thread-local state
# for every thread, and g++ vectorises neither. When the kernel is a map over a 64-bit global index
# - `const std::size_t i = devctx::global_idx().x;` then `if (i < n) S` or `if (i >= n) return; S`,
# n block-uniform - its twin loops over exactly the threads the guard admits, with `i` a local the
# compiler can see, so the loop vectorises as OpenMP's does (issue 26's K1). Anything else keeps
# the plain loop, silently: nothing is lost, as the plain loop is not on fibers.

MATH_FUNCTIONS = {"sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "fabs", "abs", "fmin", "fmax",
                  "min", "max", "tanh", "sinh", "cosh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                  "pow", "floor", "ceil", "round", "trunc", "fma", "erf", "erfc", "cbrt", "hypot", "copysign"}
WIDE_INTEGRAL_KINDS = {"ULONG", "ULONGLONG", "LONG", "LONGLONG"}


def integral_width(t):
    """Bytes of an integral type, else 0."""
    t = t.get_canonical()
    return t.get_size() if t.kind.name in INTEGRAL_KINDS and t.kind.name != "BOOL" else 0


def value_preserving(src, dst):
    """Whether converting integral type `src` to `dst` keeps every value of `src`."""
    a, b = integral_width(src), integral_width(dst)
    if not a or not b:
        return False
    su = src.get_canonical().kind.name in UNSIGNED_KINDS
    du = dst.get_canonical().kind.name in UNSIGNED_KINDS
    if a == b:
        return su == du
    if b < a:
        return False
    return su or not du


def is_global_x(c):
    """`c` is exactly devctx::global_idx().x (through implicit conversions)."""
    c = strip(c)
    # Implicit conversions, and casts to a 64-bit integer type (exact: the index is below 2^42).
    while (kind(c) == "UNEXPOSED_EXPR" or (kind(c) in ("CXX_STATIC_CAST_EXPR", "CSTYLE_CAST_EXPR",
                                                       "CXX_FUNCTIONAL_CAST_EXPR") and
                                            c.type.get_canonical().kind.name in WIDE_INTEGRAL_KINDS)) \
            and len(children(c)) == 1:
        c = strip(children(c)[0])
    if kind(c) != "MEMBER_REF_EXPR" or c.spelling != "x":
        return False
    ch = children(c)
    return bool(ch) and kind(strip(ch[0])) == "CALL_EXPR" and devctx_function(strip(ch[0])) == "global_idx"


class MapKernel:
    """The twin of a barrier-free map kernel (see above), or Decline."""

    def __init__(self, kt):
        self.kt = kt

    def index_decl(self, stmt):
        """The VAR_DECL of `const <64-bit integer> i = devctx::global_idx().x;`, else None."""
        if kind(stmt) != "DECL_STMT" or len(children(stmt)) != 1:
            return None
        v = children(stmt)[0]
        if kind(v) != "VAR_DECL" or not v.type.is_const_qualified():
            return None
        if v.type.get_canonical().kind.name not in WIDE_INTEGRAL_KINDS:
            return None
        init = children(v)
        return v if init and is_global_x(init[-1]) else None

    def guard(self, stmt, index_key):
        """(op, bound cursor, then-statement or None) of `if (i OP n) S` / `if (i OP n) return;`."""
        if kind(stmt) != "IF_STMT" or len(children(stmt)) != 2:
            return None
        cond, then = children(stmt)
        cond = strip(cond)
        if kind(cond) != "BINARY_OPERATOR":
            return None
        op = self.kt.binary_op(cond)
        lr = children(cond)
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
        if len(lr) != 2 or op not in flip:
            return None

        def is_index(c):
            c = strip(c)
            while kind(c) == "UNEXPOSED_EXPR" and len(children(c)) == 1:
                c = strip(children(c)[0])
            return kind(c) == "DECL_REF_EXPR" and c.referenced is not None and self.kt.key(c.referenced) == index_key
        if is_index(lr[0]):
            bound = lr[1]
        elif is_index(lr[1]):
            bound, op = lr[0], flip[op]
        else:
            return None
        if self.kt.uniform(bound) is not None or bound.type.get_canonical().kind.name not in INTEGRAL_KINDS:
            return None
        return op, bound, then

    def needs_thread_index(self, cursors):
        """Whether the copied statements may read the thread index through the thread-local state:
        they call something other than a devctx view's members, numbers-only functions, <cmath>
        or the block's uniform functions. (Bounds-checked builds always set it: the twin's code
        says so.)"""
        for root in cursors:
            for c in root.walk_preorder():
                if kind(c) != "CALL_EXPR":
                    continue
                ref = c.referenced
                if ref is None:
                    return True
                name = devctx_function(c)
                if name in UNIFORM_FUNCTIONS:
                    continue
                if name is not None:
                    return True  # thread_idx, atomics, printing: they see the thread index
                rk = kind(ref)
                ns = qualified(ref)
                if rk in ("CXX_METHOD", "CONSTRUCTOR", "CONVERSION_FUNCTION") and ns[:1] in (["devctx"], ["std"]):
                    continue  # span / tensor indexing and sizes, std::array, std::complex
                if ns[:1] in (["std"], []) and ref.spelling.rstrip("f").rstrip("l") in MATH_FUNCTIONS | {"fabs", "fmin", "fmax"}:
                    continue
                if rk == "FUNCTION_DECL" and self.kt.pure_function(ref):
                    continue
                return True
        return False

    def reads_block(self, cursors):
        """Whether the cursors read the block's index or its shared memory (block_idx, dynamic
        shared memory, shared arrays): then the twin runs one block per call, else a run of blocks."""
        for root in cursors:
            for c in root.walk_preorder():
                if kind(c) == "CALL_EXPR" and devctx_function(c) in ("block_idx", "dynamic_shared", "shared_array"):
                    return True
                if kind(c) == "DECL_REF_EXPR" and c.spelling in ("block_idx", "dynamic_shared"):
                    return True
        return "DEVCTX_SHARED" in "".join(self.kt.src(r) for r in cursors)

    def translate(self):
        kt = self.kt
        kt.assigned = kt.modified_refs(kt.body)
        for p in kt.params:
            if not p.spelling:
                raise Decline("a parameter has no name")
            if p.type.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
                raise Decline("a reference parameter")
            if kt.key(p) in kt.assigned:
                raise Decline("the kernel assigns a parameter")
        body_text = kt.src(kt.body)
        if any(line.lstrip().startswith("#") for line in body_text.splitlines()[1:]):
            raise Decline("preprocessor directives inside the kernel's body")
        stmts = children(kt.body)
        index = None
        n = 0
        while n < len(stmts) and kind(stmts[n]) == "DECL_STMT":
            v = self.index_decl(stmts[n])
            if v is not None and index is None:
                index = v
            elif index is None or len(children(stmts[n])) != 1:
                raise Decline("not a map over devctx::global_idx().x")
            else:
                # Another local before the guard: it runs for the admitted threads only, so it
                # must be a pure function of the index and block-uniform values.
                init = children(children(stmts[n])[0])
                if init and kt.uniform(init[-1], allow_thread=True, remat_keys=frozenset({kt.key(index)})) is not None:
                    raise Decline("a local before the guard that is not a pure function of the index")
            n += 1
        if index is None or n >= len(stmts):
            raise Decline("not a map over devctx::global_idx().x")
        g = self.guard(stmts[n], kt.key(index))
        if g is None:
            raise Decline("no bounds guard on the index")
        op, bound, then = g
        then_s = strip(then)
        if kind(then_s) == "RETURN_STMT" and not children(then_s):
            # if (i >= n) return; ... : the threads that stay are those with i < n.
            negate = {">=": "<", ">": "<="}
            if op not in negate:
                raise Decline("an early return that does not bound the index from above")
            op = negate[op]
            rest = stmts[n + 1:]
        else:
            if op not in ("<", "<="):
                raise Decline("a guard that does not bound the index from above")
            if n + 1 != len(stmts):
                raise Decline("statements after the guard")
            rest = [then]
        for c in rest:
            for x in c.walk_preorder():
                if kind(x) in ("RETURN_STMT", "GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT", "ASM_STMT",
                               "GCC_ASM_STMT", "CXX_THROW_EXPR", "CXX_TRY_STMT"):
                    raise Decline(f"it uses {kind(x).lower()}")
                if kind(x) == "VAR_DECL" and x.storage_class.name == "STATIC":
                    raise Decline("a static local")
        pre = stmts[:n]
        tls_needed = self.needs_thread_index([s for s in pre if s is not None and
                                              self.index_decl(s) is None] + rest)
        # A run of blocks per call (fission::map_blocks) when nothing but the index tells blocks apart.
        ranged = not tls_needed and not self.reads_block([s for s in pre if self.index_decl(s) is None] + rest + [bound])
        return self.emit(index, op, bound, pre, rest, tls_needed, ranged)

    def emit(self, index, op, bound, pre, rest, tls_needed, ranged):
        kt = self.kt
        f = "::devctx::detail::cpu::fission::"
        itype = index.type.get_canonical().spelling.replace("const ", "").strip()
        btype = bound.type.get_canonical().spelling
        # The parameters the copied code reads, by value (as the barrier twins capture them): an
        # unused capture would be a new warning, and the translated file must add none.
        used = set()
        for root in list(pre) + list(rest):
            for c in root.walk_preorder():
                if kind(c) == "DECL_REF_EXPR" and c.referenced is not None and kt.is_param(c.referenced):
                    used.add(kt.key(c.referenced))
        captures = ", ".join(p.spelling for p in kt.params if kt.key(p) in used)
        ptext = kt.file.text(kt.params[0].extent.start.offset, kt.params[-1].extent.end.offset) if kt.params else ""
        tmpl = kt.template_parts()[0]
        inclusive = "false" if op == "<" else "true"
        # The blocks this call runs: a run of them along x (fission::map_blocks) when nothing but the
        # index tells blocks apart and no thread index is stored (bounds-checked builds store it).
        blocks = ("#if defined(DEVCTX_CHECK_BOUNDS)\n"
                  "  constexpr std::uint64_t devctx_blocks = 1;\n"
                  "#else\n"
                  f"  const std::uint64_t devctx_blocks = {f}map_blocks();\n"
                  "#endif\n") if ranged else "  constexpr std::uint64_t devctx_blocks = 1;\n"
        out = ["#if !defined(__CUDA_ARCH__)\n",
               f"// The block-level twin of {kt.name} (devctx fission translator, a map kernel: one loop over\n"
               "// the threads its bounds guard admits; docs/cpu-backend.md).\n",
               f"{tmpl}\n" if tmpl else "",
               f"static inline void {kt.twin_name()}({ptext}) {{\n",
               blocks,
               "  const std::uint64_t devctx_base = std::uint64_t(::devctx::detail::cpu::tls.block_idx.x) * "
               "::devctx::detail::cpu::tls.block_dim.x;\n",
               f"  const std::size_t devctx_end = {f}global_end<{itype}, {inclusive}>(static_cast<{btype}>({kt.src(bound)}), "
               "devctx_base, devctx_blocks);\n",
               # Bounds-checked builds: span and tensor indexing name the thread in their errors.
               "#if defined(DEVCTX_CHECK_BOUNDS)\n",
               f"  {f}map_threads<true>(devctx_end, devctx_blocks, ",
               f"[&{', ' + captures if captures else ''}]([[maybe_unused]] std::size_t devctx_x) {{\n",
               "#else\n",
               f"  {f}map_threads<{'true' if tls_needed else 'false'}>(devctx_end, devctx_blocks, ",
               f"[&{', ' + captures if captures else ''}]([[maybe_unused]] std::size_t devctx_x) {{\n",
               "#endif\n"]
        for s in pre:
            line = kt.file.line_of(s.extent.start.offset)
            if self.index_decl(s) is not None:
                out.append(f'#line {line} "{kt.file.path}"\n')
                out.append(f"    [[maybe_unused]] const {itype} {index.spelling} = static_cast<{itype}>(devctx_base + "
                           "devctx_x);\n")
            else:
                out.append(f'#line {line} "{kt.file.path}"\n')
                out.append(f"    [[maybe_unused]] {kt.src(s)};\n" if not kt.src(s).rstrip().endswith(";")
                           else f"    [[maybe_unused]] {kt.src(s)}\n")
        for s in rest:
            line = kt.file.line_of(s.extent.start.offset)
            start, end = kt.offsets(s)
            text = kt.file.text(start, end)
            if not text.rstrip().endswith((";", "}")):
                end = kt.file.stmt_end(end)
                text = kt.file.text(start, end)
            out.append(f'#line {line} "{kt.file.path}"\n')
            out.append(f"    {text}\n")
        out.append("  });\n}\n#endif\n")
        return "".join(out)


def decline_prologue(name, reason):
    r = reason.replace("\\", "\\\\").replace('"', '\\"')
    return ("\n#if !defined(__CUDA_ARCH__)\n"
            f"  ::devctx::detail::cpu::decline_fission_offer(&{name}, \"{r}\");\n"
            "#endif\n")


def is_kernel(fn, file):
    """A DEVCTX_KERNEL function defined in the file itself."""
    if fn.location.file is None or os.path.realpath(fn.location.file.name) != os.path.realpath(file.path):
        return False
    start = fn.extent.start.offset
    name_at = fn.location.offset
    lo = max(file.data.rfind(b";", 0, start), file.data.rfind(b"}", 0, start), file.data.rfind(b"{", 0, start))
    return b"DEVCTX_KERNEL" in file.data[lo + 1:name_at]


def nvcc_host_pass_flags(version):
    """What nvcc's host pass defines for a file of version `version` (nvcc --version's X.Y.Z; "" when
    not known), for a C++ parse: nvcc's own macros, and CUDA's execution-space keywords as nothing
    (cuda_runtime.h, which defines them and which nvcc includes first, does not parse as C++).
    __CUDA_ARCH__ stays undefined: the device pass compiles the file's own kernels only, since
    everything the translator adds is under #if !defined(__CUDA_ARCH__)."""
    flags = ["-D__CUDACC__", "-D__NVCC__"]
    parts = (version.split(".") + ["0", "0", "0"])[:3] if version else []
    if parts and all(p.isdigit() for p in parts):
        flags += [f"-D__CUDACC_VER_MAJOR__={parts[0]}", f"-D__CUDACC_VER_MINOR__={parts[1]}",
                  f"-D__CUDACC_VER_BUILD__={parts[2]}", f"-D__CUDA_API_VER_MAJOR__={parts[0]}",
                  f"-D__CUDA_API_VER_MINOR__={parts[1]}"]
    for keyword in ("__host__", "__device__", "__global__", "__shared__", "__constant__", "__managed__",
                    "__grid_constant__", "__launch_bounds__(...)"):
        flags.append(f"-D{keyword}=")
    flags.append("-D__forceinline__=__inline__ __attribute__((always_inline))")
    return flags


def translate(path, flags, resource_dir, out_path):
    import clang.cindex as ci
    data = open(path, "rb").read()
    file = File(os.path.abspath(path), data)
    args = ["-x", "c++", "-std=c++20", "-Wall", "-Wextra", "-Wshadow"] + flags
    if resource_dir:
        args += ["-resource-dir", resource_dir]
    index = ci.Index.create()
    tu = index.parse(path, args=args)
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        return data, [("error", "", f"libclang could not parse the file: {errors[0]}")], []
    deps = sorted({inc.include.name for inc in tu.get_includes()})
    sync = SyncFinder()
    by_name = {}
    kernels = []
    templates = []
    def main_file_decls(parent):
        for c in parent.get_children():
            f = c.location.file
            if f is None or os.path.realpath(f.name) != os.path.realpath(file.path):
                continue
            yield c
            if kind(c) in ("NAMESPACE", "LINKAGE_SPEC", "UNEXPOSED_DECL"):
                yield from main_file_decls(c)

    for c in main_file_decls(tu.cursor):
        k = kind(c)
        if k == "FUNCTION_DECL" and c.is_definition() and is_kernel(c, file):
            kernels.append(c)
        elif k == "FUNCTION_TEMPLATE" and c.is_definition() and is_kernel(c, file):
            templates.append(c)
        if k in ("FUNCTION_DECL", "FUNCTION_TEMPLATE") and c.location.file is not None:
            by_name.setdefault((c.semantic_parent.get_usr() if c.semantic_parent else "", c.spelling), set()).add(
                c.get_usr())
    inserts = []  # (offset, text)
    results = []
    # Template kernels get a template twin: each specialization's prologue offers itself.
    kernels = kernels + [t for t in templates]
    for fn in kernels:
        body = [c for c in fn.get_children() if kind(c) == "COMPOUND_STMT"][0]
        syncs = sync.syncs_in(body)
        params = [c for c in fn.get_children() if kind(c) == "PARM_DECL"]
        if params and "devctx::Block" in params[0].type.get_canonical().spelling:
            continue
        overloaded = len(by_name.get((fn.semantic_parent.get_usr() if fn.semantic_parent else "", fn.spelling),
                                     ())) > 1
        body_text = file.text(body.extent.start.offset, body.extent.end.offset)
        if "take_fission_offer" in body_text or "decline_fission_offer" in body_text:
            if syncs:
                results.append(("hand", fn.spelling, "its prologue is written by hand"))
            continue
        brace = body.extent.start.offset + 1
        if not syncs:
            # No barrier: the plain loop runs it as it is, unless it is a map kernel, whose twin
            # is one loop the compiler can vectorise (MapKernel).
            if overloaded:
                continue
            kt = KernelTranslator(fn, file, sync, ci)
            try:
                twin = MapKernel(kt).translate()
            except Decline:
                continue
            line_start = file.line_start(fn.extent.start.offset)
            inserts.append((line_start, twin + f'#line {file.line_of(line_start)} "{file.path}"\n'))
            inserts.append((brace, kt.prologue() + f'#line {file.line_of(brace)} "{file.path}"\n'))
            results.append(("map", fn.spelling, ""))
            continue
        kt = KernelTranslator(fn, file, sync, ci)
        try:
            if overloaded:
                raise Decline("the kernel's name is overloaded")
            try:
                kt.analyse()
            except Decline as first:
                # Helpers with sync points: translate a copy with them inlined, else the reason.
                if "helpers with barriers" not in str(first) or kind(fn) != "FUNCTION_DECL":
                    raise
                kt, _ = inline_and_translate(fn, file, index, args, ci)
            twin = kt.emit_twin()
            line_start = file.line_start(fn.extent.start.offset)
            # The kernel declared first when its body names it (the twin copies that code).
            names_itself = any(kind(c) == "DECL_REF_EXPR" and c.referenced is not None and
                               c.referenced.get_usr() == fn.get_usr() for c in body.walk_preorder())
            # Inside the twin's #if: nvcc's device pass sees the file's own declarations only.
            proto = file.text(line_start, body.extent.start.offset).rstrip() + ";\n" if names_itself else ""
            if proto:
                twin = twin.replace("#if !defined(__CUDA_ARCH__)\n", "#if !defined(__CUDA_ARCH__)\n" + proto, 1)
            inserts.append((line_start, twin + f'#line {file.line_of(line_start)} "{file.path}"\n'))
            inserts.append((brace, kt.prologue() + f'#line {file.line_of(brace)} "{file.path}"\n'))
            results.append(("translated", fn.spelling, ""))
        except Decline as e:
            results.append(("fibers", fn.spelling, str(e)))
            targs = ""
            if kind(fn) == "FUNCTION_TEMPLATE":
                try:
                    targs = kt.template_parts()[1]
                except Decline:
                    targs = None
            if not overloaded and targs is not None:
                inserts.append((brace, decline_prologue(fn.spelling + targs, str(e)) +
                                f'#line {file.line_of(brace)} "{file.path}"\n'))
    if not inserts:
        return data, results, deps
    out = bytearray()
    pos = 0
    for off, text in sorted(inserts, key=lambda x: x[0]):
        out += data[pos:off]
        out += text.encode("utf-8")
        pos = off
    out += data[pos:]
    # g++'s -Wsubobject-linkage takes a file named by #line for a header, and warns about every
    # class with a base in an anonymous namespace (a test fixture, say) as if it were in one;
    # the generated file is the translation unit's main file, so the warning does not apply.
    # Host compilers only: nvcc's device pass (__CUDA_ARCH__) sees nothing but the file itself and
    # #line directives.
    header = ("#if !defined(__CUDA_ARCH__) && defined(__GNUC__) && !defined(__clang__)\n"
              "#pragma GCC diagnostic ignored \"-Wsubobject-linkage\"\n"
              f'#endif\n#line 1 "{file.path}"\n').encode("utf-8")
    generated = header + bytes(out)
    # The translation must parse again, else the file is compiled as it was.
    tu2 = index.parse(out_path, args=args + ["-iquote", os.path.dirname(file.path)],
                      unsaved_files=[(out_path, generated.decode("utf-8"))])
    errors = [d for d in tu2.diagnostics if d.severity >= ci.Diagnostic.Error]
    # No new warnings either (builds use -Werror): the twins' are reported at the kernel's lines.
    # Compared by text, as a twin's copies of a statement carry its original line.
    from collections import Counter

    def warnings(unit):
        return Counter(d.spelling for d in unit.diagnostics if d.severity == ci.Diagnostic.Warning)
    new_warnings = sorted((warnings(tu2) - warnings(tu)).keys())
    if new_warnings and not errors:
        errors = [f"warning: {new_warnings[0]}"]
    if errors:
        return data, [("error", "", f"the translated file did not parse ({errors[0]}); compiled as written")] + \
            [("fibers", n, "the translated file did not parse") for s, n, _ in results if s == "translated"], deps
    return generated, results, deps


def guarded(argv):
    """Runs the translation in a child process: if libclang crashes or hangs, the original file is
    written instead and the build goes on."""
    import shutil
    import subprocess
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--summary")
    p.add_argument("--depfile")
    a, _ = p.parse_known_args(argv)
    why = None
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"] + argv, timeout=600)
        if r.returncode != 0:
            why = f"the translator stopped with status {r.returncode}"
    except Exception as e:  # a timeout, or no way to start it
        why = f"the translator did not finish ({type(e).__name__})"
    if why is None and os.path.exists(a.output):
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    shutil.copyfile(a.input, a.output)
    if a.summary:
        with open(a.summary, "w") as f:
            f.write(f"error\t\t{why or 'no output'}\n")
    if a.depfile:
        with open(a.depfile, "w") as f:
            f.write(f"{a.output}: {os.path.abspath(a.input)}\n")
    return 0


def main():
    if "--child" not in sys.argv[1:]:
        return guarded(sys.argv[1:])
    sys.argv.remove("--child")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--summary")
    p.add_argument("--depfile")
    p.add_argument("--resource-dir", default="")
    p.add_argument("--nvcc", metavar="VERSION", help="parse the file as nvcc's host pass sees it (CUDA builds)")
    p.add_argument("flags", nargs=argparse.REMAINDER)
    a = p.parse_args()
    flags = [f for f in a.flags if f != "--" and f not in ("-I", "-D")]
    if a.nvcc is not None:
        flags = nvcc_host_pass_flags(a.nvcc) + flags
    data = None
    deps = []
    try:
        data, results, deps = translate(a.input, flags, a.resource_dir, a.output)
    except Exception as e:  # never fail the build: the original file is compiled
        results = [("error", "", f"the translator failed ({type(e).__name__}: {e})")]
        if os.environ.get("DEVCTX_FISSION_DEBUG"):
            traceback.print_exc()
    if data is None:
        data = open(a.input, "rb").read()
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    old = open(a.output, "rb").read() if os.path.exists(a.output) else None
    if old != data:
        with open(a.output, "wb") as f:
            f.write(data)
    else:
        os.utime(a.output)
    if a.summary:
        with open(a.summary, "w") as f:
            for state, name, why in results:
                f.write(f"{state}\t{name}\t{why}\n")
    if a.depfile:
        def esc(s):
            return s.replace(" ", "\\ ")
        with open(a.depfile, "w") as f:
            f.write(esc(a.output) + ": " + " \\\n  ".join(esc(d) for d in [os.path.abspath(a.input)] + deps) + "\n")
    if os.environ.get("DEVCTX_FISSION_VERBOSE"):
        for state, name, why in results:
            print(f"devctx fission: {os.path.basename(a.input)}: {name}: {state} {why}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
