"""Source-text mutants of the bundled example kernels, and how each one is judged.

Used by ``benchmarks/mutants.py`` (the full benchmark) and
``tests/analysis/test_mutants_sample.py`` (a fixed sample in CI).

Generation
    :func:`generate` parses an example with :mod:`ast` and splices replacement text at node
    locations (UTF-8 column offsets converted to character offsets), so every mutant is the
    original file with one local edit (a few edits for a swap). Only the body of the
    ``@ave.kernel`` function (helpers nested in it included) is mutated; the *specification*
    -- ``ave.tag`` lambdas, ``ave.assert_conform`` and ``ave.assert_disjoint`` -- is never
    touched, nor the decorator (configs) or the module-level helpers. Mutants whose text
    equals an earlier one are dropped.

Classes (``CLASSES``; ``kind`` says which rule produced a mutant)
    swizzle_one_side  the reader or the writer of a swizzled shared tile (never both) sees
                      the tile through ``ave.view(..., layout=...)`` with another swizzle
                      (B, M or S changed by one, or no swizzle)
    stage_index       ``x % STAGES`` -> ``(x +- 1) % STAGES``; a reader indexing the stage
                      refilled in the same iteration; the tile or the stage argument of a
                      pipeline helper call (issue / load_k / load_v) off by one; the
                      prologue depth off by one
    barrier           one ``ave.barrier()`` removed
    index_swap        two index expressions of one subscript swapped; two program-id axes
                      swapped (``b = program_id(1)``, ``h = program_id(2)``)
    transpose         ``.T`` added to / removed from a data-movement operand (ldmatrix / load
                      source, copy source or destination, store destination)
    mask_bound        a comparison flipped (``<`` <-> ``<=``, ``>`` <-> ``>=``), its bound
                      moved (``M`` -> ``M + 8``), a conjunct of a mask dropped, a mask dropped
    head_offset       a global index ``i`` -> ``i + 1`` (``h`` -> ``h + 1``), a slice shifted
                      by 8 (global or shared), a program-id derived offset ``+ 1``
                      (``m0``, ``hk``, ...), ``//`` -> ``%`` in one (``hk = h % GROUP``)
    wait_count        ``wait_async(n)`` -> ``n + 1`` / ``n - 1``; a ``commit_async()`` removed
    swizzle_both      (control) the swizzle of a shared allocation itself changed: writers
                      and readers stay consistent, so these are expected to be equivalent

Judging (:func:`evaluate`)
    * front end: any error diagnostic in any specialization -> "frontend_rejected";
    * interpreter (:func:`classify`): the mutant and the original run on the same fresh
      random inputs -- three or four shapes with edges per specialization
      (:func:`shapes`), every specialization -- and the mutant is "output_changing" when
      some output element differs beyond a few ulps (``TOL``), is NaN/inf, or a dynamic
      check (AVE301..AVE305) fires; else "equivalent";
    * checker (:func:`check`): ``analyze`` on EVERY specialization; "flagged" when any
      AVE201 / AVE202 / AVE203 / AVE206 (accumulation) / AVE207 (race) / AVE208 (bounds)
      diagnostic appears or an assertion is violated / unknown (AVE205);
    * oracle (:func:`runtime_pairing`): the interpreter's provenance mode, which shares
      nothing with the tag engine, replays every ``ave.mma`` and reports whether a warp
      multiplied elements whose tags disagree on a field both carry -- the checker's
      vocabulary, observed at run time. Used to tell a checker miss (runtime pairing
      violated, not flagged) from a bug outside the vocabulary.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
EXAMPLE_FILES = ("gemm.py", "flash_attention.py", "moe.py")

CLASSES = ("swizzle_one_side", "stage_index", "barrier", "index_swap", "transpose",
           "mask_bound", "head_offset", "wait_count", "swizzle_both")
#: classes whose output-changing mutants the checker is meant to catch (operand pairing,
#: stage separation, uninitialized reads); the others may hold bugs outside its vocabulary
COVERED = ("swizzle_one_side", "stage_index", "transpose", "head_offset")
CONTROL = ("swizzle_both",)

FLAG_CODES = ("AVE201", "AVE202", "AVE203", "AVE205", "AVE206", "AVE207", "AVE208")
DYN_CODES = ("AVE301", "AVE302", "AVE303", "AVE304", "AVE305")
#: (rtol, atol) of the mutant-vs-original comparison: an element differs when
#: |out - ref| > rtol * |ref| + atol * max|ref|. Both run in the same interpreter on the same
#: inputs, and an equivalent mutant computes the same sums in the same order, so this is a
#: few units in the last place (bf16: 2**-8 relative), not the looser tolerance against the
#: float64 reference.
TOL = {"f32": (1e-6, 1e-7), "bf16": (2.0 ** -7, 1e-3)}


def _load_refs():
    """tests/interp/refs.py (input builders, float64 references, the MoE routing pass)."""
    name = "_ave_mutants_refs"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "interp" / "refs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


refs = _load_refs()


# ============================================================================ mutants

@dataclass
class Mutant:
    id: str
    example: str            # file name under examples/
    cls: str
    kind: str
    line: int               # 1-based line of the (first) edit
    before: str             # the original text of the edited line(s)
    after: str              # the same line(s) after the edit
    source: str = field(repr=False, default="")

    def describe(self) -> str:
        return f"{self.example}:{self.line} [{self.cls}/{self.kind}] {self.before} -> {self.after}"

    def to_json(self) -> dict:
        return {"id": self.id, "example": self.example, "class": self.cls, "kind": self.kind,
                "line": self.line, "before": self.before, "after": self.after}


class _Src:
    """Character offsets of ast nodes (whose columns are UTF-8 byte offsets)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for ln in self.lines:
            self.starts.append(self.starts[-1] + len(ln))

    def off(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.off(node.lineno, node.col_offset),
                self.off(node.end_lineno, node.end_col_offset))

    def seg(self, node: ast.AST) -> str:
        s, e = self.span(node)
        return self.text[s:e]

    def line_of(self, off: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi - 1:
            mid = (lo + hi) // 2
            if self.starts[mid] <= off:
                lo = mid
            else:
                hi = mid
        return lo + 1


@dataclass
class _Alloc:
    name: str
    node: ast.Call
    shape: list[str]                 # the shape tuple's elements, as text
    layout_kw: ast.keyword | None
    swizzle: tuple[int, int, int] | None = None   # (B, M, S), the same in every config


@dataclass
class _Site:
    call: str                        # copy_async, copy, load, ldmatrix, store, alias
    role: str                        # read | write
    arg: ast.expr


def _is_call(node: Any, alias: str, *names: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == alias
            and (not names or node.func.attr in names))


def _swizzle_variants(sw: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    B, M, S = sw
    out = []
    for c in ((B - 1, M, S), (B + 1, M, S), (B, M - 1, S), (B, M + 1, S), (B, M, S - 1),
              (B, M, S + 1)):
        b, m, s = c
        if b >= 0 and m >= 0 and abs(s) >= b and c != sw and c not in out:
            out.append(c)
    return out


class _Generator:
    def __init__(self, example: str, text: str, kernels: list) -> None:
        self.example = example
        self.stem = example.rsplit(".", 1)[0]
        self.src = _Src(text)
        self.tree = ast.parse(text)
        self.out: list[Mutant] = []
        self.seen: set[str] = {text}
        self.counts: dict[str, int] = {}
        self.alias = "ave"
        for n in self.tree.body:
            if isinstance(n, ast.Import):
                for a in n.names:
                    if a.name == "ave_core.lang" and a.asname:
                        self.alias = a.asname
            if isinstance(n, ast.ImportFrom) and n.module == "ave_core":
                for a in n.names:
                    if a.name == "lang":
                        self.alias = a.asname or "lang"
        self.fn = self._kernel_fn()
        A = self.alias
        # the specification is never mutated
        self.excluded: set[int] = set()
        for n in ast.walk(self.fn):
            if _is_call(n, A, "tag", "assert_conform", "assert_disjoint"):
                for m in ast.walk(n):
                    self.excluded.add(id(m))
        self.nodes = [n for st in self.fn.body for n in ast.walk(st) if id(n) not in self.excluded]
        self.parent: dict[int, ast.AST] = {}
        for n in ast.walk(self.fn):
            for c in ast.iter_child_nodes(n):
                self.parent[id(c)] = n
        self.tensors = {a.arg for a in self.fn.args.args
                        if a.annotation is not None and "Tensor" in ast.unparse(a.annotation)}
        self.helpers = {n.name for n in ast.walk(self.fn)
                        if isinstance(n, ast.FunctionDef) and n is not self.fn}
        self.allocs: dict[str, _Alloc] = {}
        self.gathered: set[str] = set()
        self.aliases: dict[str, ast.expr] = {}
        for n in self.nodes:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], ast.Name):
                tgt = n.targets[0].id
                v = n.value
                if _is_call(v, A, "alloc"):
                    space = next((k.value for k in v.keywords if k.arg == "space"), None)
                    if space is None or (isinstance(space, ast.Constant)
                                         and space.value == "shared"):
                        shp = v.args[0]
                        elts = shp.elts if isinstance(shp, ast.Tuple) else [shp]
                        lay = next((k for k in v.keywords if k.arg == "layout"), None)
                        self.allocs[tgt] = _Alloc(tgt, v, [self.src.seg(e) for e in elts], lay)
                elif _is_call(v, A, "gather", "scatter"):
                    self.gathered.add(tgt)
        for n in self.nodes:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], ast.Name) and self._shared_base(n.value):
                self.aliases[n.targets[0].id] = n.value
        self._swizzles_from_ir(kernels)
        self.sites = self._sites()

    # ------------------------------------------------------------------ analysis of the file

    def _kernel_fn(self) -> ast.FunctionDef:
        for n in self.tree.body:
            if isinstance(n, ast.FunctionDef):
                for d in n.decorator_list:
                    f = d.func if isinstance(d, ast.Call) else d
                    if isinstance(f, ast.Attribute) and f.attr == "kernel":
                        return n
        raise ValueError(f"{self.example}: no @ave.kernel function")

    def _swizzles_from_ir(self, kernels: list) -> None:
        from ave_core.lang.layout import ComposedLayout, Swizzle
        for a in self.allocs.values():
            seen = set()
            for k in kernels:
                for op in k.walk():
                    if op.name == "ave.alloc" and op.loc.range.start.line == a.node.lineno - 1:
                        lay = op.attrs.get("layout")
                        sw = lay.outer if isinstance(lay, ComposedLayout) else None
                        seen.add((sw.B, sw.M, sw.S) if isinstance(sw, Swizzle) else None)
            if len(seen) == 1:
                a.swizzle = seen.pop()

    def _shared_base(self, e: ast.expr) -> tuple[ast.expr, _Alloc, bool] | None:
        """(base node, allocation, staged) of a shared-tile expression: the allocation
        itself, or one stage of it (``sA[s]``); slices and ``.T`` around it are looked
        through. Aliases (``vs = sV[s]``) are not followed."""
        while True:
            if isinstance(e, ast.Attribute) and e.attr == "T":
                e = e.value
                continue
            if isinstance(e, ast.Name):
                a = self.allocs.get(e.id)
                return (e, a, False) if a else None
            if isinstance(e, ast.Subscript):
                v = e.value
                if isinstance(v, ast.Name) and v.id in self.allocs:
                    if isinstance(e.slice, (ast.Tuple, ast.Slice)):
                        return v, self.allocs[v.id], False
                    return e, self.allocs[v.id], True
                e = v
                continue
            return None

    def _sites(self) -> list[_Site]:
        A = self.alias
        out = []
        for n in self.nodes:
            if _is_call(n, A, "copy", "copy_async") and len(n.args) >= 2:
                out.append(_Site(n.func.attr, "read", n.args[0]))
                out.append(_Site(n.func.attr, "write", n.args[1]))
            elif _is_call(n, A, "load", "ldmatrix") and n.args:
                out.append(_Site(n.func.attr, "read", n.args[0]))
            elif _is_call(n, A, "store") and n.args:
                out.append(_Site("store", "write", n.args[0]))
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], ast.Name) and n.targets[0].id in self.aliases:
                out.append(_Site("alias", "read", n.value))
        return out

    # ------------------------------------------------------------------ emitting

    def add(self, cls: str, kind: str, edits: list[tuple[int, int, str]]) -> None:
        text = self.src.text
        for s, e, rep in sorted(edits, key=lambda x: -x[0]):
            text = text[:s] + rep + text[e:]
        if text in self.seen:
            return
        try:
            ast.parse(text)
        except SyntaxError:
            return
        self.seen.add(text)
        s0 = min(s for s, _, _ in edits)
        e0 = max(e for _, e, _ in edits)
        l0, l1 = self.src.line_of(s0), self.src.line_of(max(e0 - 1, s0))
        before = "".join(self.src.lines[l0 - 1:l1])
        delta = sum(len(r) - (e - s) for s, e, r in edits)
        a0 = self.src.starts[l0 - 1]
        a1 = self.src.starts[l1] + delta
        after = text[a0:a1]
        n = self.counts.get(cls, 0)
        self.counts[cls] = n + 1
        self.out.append(Mutant(f"{self.stem}.{cls}.{n:03d}", self.example, cls, kind, l0,
                               " ".join(before.split()), " ".join(after.split()), text))

    def rep(self, node: ast.AST, text: str) -> tuple[int, int, str]:
        s, e = self.src.span(node)
        return s, e, text

    def seg(self, node: ast.AST) -> str:
        return self.src.seg(node)

    # ------------------------------------------------------------------ the classes

    def gen_swizzle_one_side(self) -> None:
        A = self.alias
        for site in self.sites:
            b = self._shared_base(site.arg)
            if b is None:
                continue
            base, alloc, staged = b
            if alloc.swizzle is None:
                continue
            shape = alloc.shape[1:] if staged else alloc.shape
            shp = "(" + ", ".join(shape) + ("," if len(shape) == 1 else "") + ")"
            variants = [("unswizzled", f"{A}.row_major({shp})")]
            for v in _swizzle_variants(alloc.swizzle):
                variants.append((f"Sw<{v[0]},{v[1]},{v[2]}>",
                                 f"{A}.swizzled({A}.swizzle({v[0]}, {v[1]}, {v[2]}), "
                                 f"{A}.row_major({shp}))"))
            for label, lay in variants:
                self.add("swizzle_one_side", f"{site.role}:{site.call}:{alloc.name}:{label}",
                         [self.rep(base, f"{A}.view({self.seg(base)}, {shp}, layout={lay})")])

    def gen_swizzle_both(self) -> None:
        A = self.alias
        for alloc in self.allocs.values():
            kw = alloc.layout_kw
            if alloc.swizzle is None or kw is None or not _is_call(kw.value, A, "swizzled"):
                continue
            sw_node, inner = kw.value.args[0], kw.value.args[1]
            B, M, S = alloc.swizzle
            picks = [v for v in _swizzle_variants(alloc.swizzle)
                     if v in ((B - 1, M, S), (B, M + 1, S), (B, M, S + 1))]
            self.add("swizzle_both", f"alloc:{alloc.name}:unswizzled",
                     [self.rep(kw.value, self.seg(inner))])
            for v in picks:
                self.add("swizzle_both", f"alloc:{alloc.name}:Sw<{v[0]},{v[1]},{v[2]}>",
                         [self.rep(sw_node, f"{A}.swizzle({v[0]}, {v[1]}, {v[2]})")])

    def _stage_vars(self) -> dict[str, ast.AST]:
        out = {}
        for n in self.nodes:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.BinOp) \
                    and isinstance(n.value.op, ast.Mod):
                out[n.targets[0].id] = self.parent.get(id(n))
        return out

    def gen_stage_index(self) -> None:
        A = self.alias
        for n in self.nodes:
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and (
                    (isinstance(n.right, ast.Name) and n.right.id == "STAGES")
                    or (isinstance(n.right, ast.Constant) and isinstance(n.right.value, int))):
                L, R = self.seg(n.left), self.seg(n.right)
                for d in ("+ 1", "- 1"):
                    self.add("stage_index", f"mod:{d.replace(' ', '')}",
                             [self.rep(n, f"({L} {d}) % {R}")])
        svars = self._stage_vars()
        for site in self.sites:
            if site.role != "read":
                continue
            b = self._shared_base(site.arg)
            if b is None or not b[2]:
                continue
            base = b[0]
            idx = base.slice
            if not (isinstance(idx, ast.Name) and idx.id in svars):
                continue
            for other, scope in svars.items():
                if other != idx.id and scope is svars[idx.id]:
                    self.add("stage_index", f"read_stage:{b[1].name}[{other}]",
                             [self.rep(idx, other)])
        for n in self.nodes:
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                    n.func.id in self.helpers:
                for i, a in enumerate(n.args):
                    what = "tile" if i == 0 else "stage"
                    for d in ("+ 1", "- 1"):
                        self.add("stage_index", f"{n.func.id}:{what}{d.replace(' ', '')}",
                                 [self.rep(a, f"{self.seg(a)} {d}")])
        for n in self.nodes:
            if isinstance(n, ast.For) and _is_call(n.iter, A, "static_range") and \
                    any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                        and c.func.id in self.helpers for c in ast.walk(n)):
                a = n.iter.args[-1]
                for d in ("+ 1", "- 1"):
                    self.add("stage_index", f"prologue_depth{d.replace(' ', '')}",
                             [self.rep(a, f"{self.seg(a)} {d}")])

    def gen_barrier(self) -> None:
        for n in self.nodes:
            if isinstance(n, ast.Expr) and _is_call(n.value, self.alias, "barrier"):
                self.add("barrier", "removed", [self.rep(n, "pass")])

    def gen_wait_count(self) -> None:
        A = self.alias
        for n in self.nodes:
            if _is_call(n, A, "wait_async") and n.args:
                a = n.args[0]
                self.add("wait_count", "wait+1", [self.rep(a, f"{self.seg(a)} + 1")])
                if not (isinstance(a, ast.Constant) and a.value == 0):
                    self.add("wait_count", "wait-1", [self.rep(a, f"{self.seg(a)} - 1")])
            if isinstance(n, ast.Expr) and _is_call(n.value, A, "commit_async"):
                self.add("wait_count", "commit_removed", [self.rep(n, "pass")])

    def gen_index_swap(self) -> None:
        for n in self.nodes:
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple):
                el = n.slice.elts
                for i in range(len(el)):
                    for j in range(i + 1, len(el)):
                        a, b = self.seg(el[i]), self.seg(el[j])
                        if a != b:
                            self.add("index_swap", f"subscript[{i}<->{j}]",
                                     [self.rep(el[i], b), self.rep(el[j], a)])
        pids = [n for n in self.nodes if _is_call(n, self.alias, "program_id") and n.args]
        for i in range(len(pids)):
            for j in range(i + 1, len(pids)):
                a, b = self.seg(pids[i].args[0]), self.seg(pids[j].args[0])
                if a != b:
                    self.add("index_swap", f"program_id({a}<->{b})",
                             [self.rep(pids[i].args[0], b), self.rep(pids[j].args[0], a)])

    def gen_transpose(self) -> None:
        for site in self.sites:
            a = site.arg
            if isinstance(a, ast.Attribute) and a.attr == "T":
                self.add("transpose", f"removed:{site.call}:{site.role}",
                         [self.rep(a, self.seg(a.value))])
            else:
                t = self.seg(a)
                simple = isinstance(a, (ast.Name, ast.Subscript, ast.Call, ast.Attribute))
                self.add("transpose", f"added:{site.call}:{site.role}",
                         [self.rep(a, f"{t}.T" if simple else f"({t}).T")])

    _FLIP = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
    _OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

    def gen_mask_bound(self) -> None:
        for n in self.nodes:
            if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in self._FLIP:
                L, R = self.seg(n.left), self.seg(n.comparators[0])
                op = type(n.ops[0])
                self.add("mask_bound", f"flip:{self._OPS[op]}->{self._FLIP[op]}",
                         [self.rep(n, f"{L} {self._FLIP[op]} {R}")])
                self.add("mask_bound", "bound+8", [self.rep(n, f"{L} {self._OPS[op]} {R} + 8")])
        for n in self.nodes:
            if not isinstance(n, ast.Call):
                continue
            kw = next((k for k in n.keywords if k.arg == "mask"), None)
            if kw is None:
                continue
            items = sorted(list(n.args) + [k for k in n.keywords],
                           key=lambda x: (x.lineno, x.col_offset))
            i = items.index(kw)
            if i == 0:
                continue
            s = self.src.span(items[i - 1])[1]
            e = self.src.span(kw)[1]
            self.add("mask_bound", "mask_dropped", [(s, e, "")])
            for m in ast.walk(kw.value):
                if isinstance(m, ast.BinOp) and isinstance(m.op, ast.BitAnd):
                    self.add("mask_bound", "conjunct_dropped:right",
                             [self.rep(m, f"({self.seg(m.left)})")])
                    self.add("mask_bound", "conjunct_dropped:left",
                             [self.rep(m, f"({self.seg(m.right)})")])

    def _is_global(self, e: ast.expr) -> bool:
        if isinstance(e, ast.Name):
            return e.id in self.tensors or e.id in self.gathered
        return _is_call(e, self.alias, "gather", "scatter")

    def _is_shared(self, e: ast.expr) -> bool:
        if isinstance(e, ast.Name):
            return e.id in self.allocs or e.id in self.aliases
        if isinstance(e, ast.Subscript):
            return self._shared_base(e) is not None
        return False

    def gen_head_offset(self) -> None:
        A = self.alias
        for n in self.nodes:
            if not isinstance(n, ast.Subscript):
                continue
            glob = self._is_global(n.value)
            shared = not glob and self._is_shared(n.value)
            if not (glob or shared):
                continue
            if shared and not isinstance(n.slice, (ast.Tuple, ast.Slice)):
                continue                        # a stage index: stage_index's business
            el = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            where = "global" if glob else "shared"
            for i, e in enumerate(el):
                if isinstance(e, ast.Slice):
                    if e.lower is None or e.upper is None:
                        continue
                    self.add("head_offset", f"{where}_slice[{i}]+8",
                             [self.rep(e.lower, f"{self.seg(e.lower)} + 8"),
                              self.rep(e.upper, f"{self.seg(e.upper)} + 8")])
                elif glob:
                    self.add("head_offset", f"global_index[{i}]+1",
                             [self.rep(e, f"{self.seg(e)} + 1")])
        # scalars derived from program ids: m0, n0, b, h, hk, r0, pid_m, ... (assignments
        # whose value is plain integer arithmetic on program ids and constants)
        def pure(v: ast.AST) -> bool:
            return all(isinstance(m, (ast.BinOp, ast.Name, ast.Constant, ast.operator,
                                      ast.Load, ast.UnaryOp, ast.unaryop))
                       or _is_call(m, A, "program_id")
                       or (isinstance(m, ast.Attribute) and m.attr == "program_id")
                       for m in ast.walk(v))

        derived: set[str] = set()
        assigns = [n for n in self.nodes if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and pure(n.value)]
        changed = True
        while changed:
            changed = False
            for n in assigns:
                t = n.targets[0].id
                if t in derived:
                    continue
                if any(_is_call(m, A, "program_id") or (isinstance(m, ast.Name)
                                                         and m.id in derived)
                       for m in ast.walk(n.value)):
                    derived.add(t)
                    changed = True
        for n in assigns:
            if n.targets[0].id not in derived:
                continue
            v = n.value
            self.add("head_offset", f"pid_var:{n.targets[0].id}+1",
                     [self.rep(v, f"{self.seg(v)} + 1")])
            if isinstance(v, ast.BinOp) and isinstance(v.op, ast.FloorDiv):
                self.add("head_offset", f"pid_var:{n.targets[0].id}://->%",
                         [self.rep(v, f"({self.seg(v.left)}) % {self.seg(v.right)}"
                                   if isinstance(v.left, ast.BinOp)
                                   else f"{self.seg(v.left)} % {self.seg(v.right)}")])

    def run(self, classes: Iterable[str]) -> list[Mutant]:
        for c in classes:
            getattr(self, f"gen_{c}")()
        return self.out


def generate(example: str, classes: Iterable[str] = CLASSES) -> list[Mutant]:
    """The mutants of ``examples/<example>`` of the given classes, in a stable order."""
    from ave_core.compiler.frontend import compile_source
    path = EXAMPLES / example
    text = path.read_text("utf-8")
    res = compile_source(text, str(path))
    if any(d.severity.label == "error" for d in res.diagnostics):
        raise ValueError(f"{example} does not compile")
    return _Generator(example, text, res.kernels).run([c for c in CLASSES if c in classes])


def generate_all(classes: Iterable[str] = CLASSES) -> list[Mutant]:
    out = []
    for ex in EXAMPLE_FILES:
        out += generate(ex, classes)
    return out


# ============================================================================ judging

def compile_mutant(m: Mutant):
    """(kernels, error codes of the front end)."""
    from ave_core.compiler.frontend import compile_source
    res = compile_source(m.source, str(EXAMPLES / m.example))
    errs = [d for d in res.diagnostics if d.severity.label == "error"]
    return res.kernels, errs


def shapes(example: str, cx: dict) -> list[dict]:
    """The problem sizes of a specialization: two off the tile (one with more trip counts than
    the checker's unrolling bound, STAGES + 2) and a degenerate one (a single partial tile,
    or no k-tile at all)."""
    if example == "gemm.py":
        return [dict(M=72, N=136, K=104), dict(M=130, N=24, K=232), dict(M=40, N=16, K=0),
                dict(M=1, N=8, K=8)]
    if example == "flash_attention.py":
        if cx["GROUP"] > 1:      # H = H_KV * GROUP query heads: keep the grid small
            return [dict(B=1, H_KV=1, S_Q=70, S_KV=124), dict(B=1, H_KV=2, S_Q=40, S_KV=200),
                    dict(B=1, H_KV=1, S_Q=17, S_KV=1)]
        return [dict(B=2, H_KV=1, S_Q=70, S_KV=124), dict(B=1, H_KV=2, S_Q=130, S_KV=330),
                dict(B=1, H_KV=1, S_Q=17, S_KV=1)]
    if example == "moe.py":
        return [dict(T=5, E=4, K=104, N=72), dict(T=9, E=3, K=392, N=24),
                dict(T=3, E=2, K=0, N=16), dict(T=1, E=2, K=8, N=8)]
    raise KeyError(example)


_OUT = {"gemm.py": ("C", "f32"), "flash_attention.py": ("O", "bf16"), "moe.py": ("Out", "bf16")}


def make_case(example: str, cx: dict, shape: dict, seed: int):
    rng = np.random.default_rng(refs.seed_of("mutants", example, sorted(cx.items()),
                                             sorted(shape.items()), seed))
    if example == "gemm.py":
        return refs.gemm_case(cx, shape["M"], shape["N"], shape["K"], rng)
    if example == "flash_attention.py":
        return refs.attention_case(cx, shape["B"], shape["H_KV"] * cx["GROUP"], shape["S_Q"],
                                   shape["S_KV"], rng, H_KV=shape["H_KV"])
    return refs.moe_case(cx, shape["T"], shape["E"], shape["K"], shape["N"], rng)


def _decoded(example: str, case) -> np.ndarray:
    name, dt = _OUT[example]
    arr = case.info[name]
    return refs.bf16_value(arr) if dt == "bf16" else arr.astype(np.float64)


class _Timeout(Exception):
    pass


def _alarm(_sig, _frm):
    raise _Timeout()


def _run(kernel, case, provenance: bool = False, timeout_s: int = 0):
    from ave_core.interp import run
    old = None
    if timeout_s and hasattr(signal, "SIGALRM"):
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(timeout_s)
    try:
        return run(kernel, case.grid, case.args, provenance=provenance)
    finally:
        if old is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


_ORIG: dict = {}


def original(example: str):
    """The original's kernels (by config index)."""
    key = ("kernels", example)
    if key not in _ORIG:
        from ave_core.compiler.frontend import compile_source
        path = EXAMPLES / example
        res = compile_source(path.read_text("utf-8"), str(path))
        _ORIG[key] = {k.config_index: k for k in res.kernels}
    return _ORIG[key]


def original_output(example: str, cfg: int, si: int, seed: int) -> np.ndarray:
    key = ("out", example, cfg, si, seed)
    if key not in _ORIG:
        k = original(example)[cfg]
        case = make_case(example, k.constexprs, shapes(example, k.constexprs)[si], seed)
        res = _run(k, case)
        errs = [d.format_text() for d in res.diagnostics]
        assert not errs, f"the original {example} config {cfg} trips dynamic checks: {errs}"
        ok, msg = case.check()
        assert ok, f"the original {example} config {cfg} is wrong: {msg}"
        _ORIG[key] = _decoded(example, case)
    return _ORIG[key]


def _differs(out: np.ndarray, ref: np.ndarray, tol: tuple[float, float]) -> str | None:
    if out.shape != ref.shape:
        return f"shape {out.shape} != {ref.shape}"
    nf = ~np.isfinite(out)
    if nf.any():
        i = tuple(int(x) for x in np.argwhere(nf)[0])
        return f"{int(nf.sum())} of {out.size} elements NaN/inf (first at {i})"
    rtol, atol = tol
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    err = np.abs(out - ref)
    bad = err > rtol * np.abs(ref) + atol * scale
    if bad.any():
        i = tuple(int(x) for x in np.unravel_index(np.argmax(err), out.shape))
        return (f"{int(bad.sum())} of {out.size} elements differ (worst at {i}: "
                f"{out[i]:.6g} vs {ref[i]:.6g})")
    return None


def classify(kernels: dict, example: str, seed: int = 0, timeout_s: int = 300,
             exhaustive: bool = False) -> dict:
    """Run the mutant (its specializations ``kernels``, by config index) and the original on
    the same inputs. Returns {"verdict": output_changing | equivalent | error, "evidence":
    {"wrong_output": [...], "dynamic": {code: first message}}, "runs": [...]}.

    Without ``exhaustive`` the runs stop at the first one with a wrong output (the strongest
    evidence); dynamic checks alone keep it going, so that a race-only mutant is told from
    one that also computes a wrong result."""
    runs, wrong, dyn, errors = [], [], {}, []
    for cfg in sorted(kernels):
        k = kernels[cfg]
        for si, shape in enumerate(shapes(example, k.constexprs)):
            ref = original_output(example, cfg, si, seed)
            case = make_case(example, k.constexprs, shape, seed)
            t0 = time.perf_counter()
            rec = {"config": cfg, "shape": shape, "grid": list(case.grid)}
            try:
                res = _run(k, case, timeout_s=timeout_s)
            except _Timeout:
                rec["error"] = f"timeout after {timeout_s} s"
                errors.append(rec)
                runs.append(rec)
                continue
            except Exception as e:          # an interpreter error is a finding, not a crash
                rec["error"] = f"{type(e).__name__}: {e}"
                errors.append(rec)
                runs.append(rec)
                continue
            rec["seconds"] = round(time.perf_counter() - t0, 3)
            codes = sorted({d.code for d in res.diagnostics if d.code in DYN_CODES})
            rec["dynamic"] = codes
            for d in res.diagnostics:
                if d.code in DYN_CODES and d.code not in dyn:
                    dyn[d.code] = f"config {cfg} {shape}: " + d.format_text().splitlines()[0]
            diff = _differs(_decoded(example, case), ref, TOL[_OUT[example][1]])
            rec["differs"] = diff
            if diff:
                wrong.append(f"config {cfg} {shape}: {diff}")
            runs.append(rec)
            if wrong and not exhaustive:
                break
        if wrong and not exhaustive:
            break
    if wrong or dyn:
        verdict = "output_changing"
    elif errors:
        verdict = "error"
    else:
        verdict = "equivalent"
    return {"verdict": verdict, "evidence": {"wrong_output": wrong, "dynamic": dyn,
                                             "errors": [r["error"] for r in errors]},
            "runs": runs}


def check(kernels: dict) -> dict:
    """``analyze`` on every specialization; flagged when AVE201/202/203/205/206/207/208 or an
    assertion is violated / unknown."""
    from ave_core.analysis import analyze
    per, first, codes, flagged, crash = [], None, set(), False, None
    for cfg in sorted(kernels):
        k = kernels[cfg]
        t0 = time.perf_counter()
        try:
            a = analyze(k)
        except Exception as e:              # analyze promises never to raise
            crash = f"config {cfg}: {type(e).__name__}: {e}"
            per.append({"config": cfg, "crash": crash})
            continue
        cc = sorted({d.code for d in a.diagnostics})
        st = [r.status for r in a.assertions]
        f = bool(set(cc) & set(FLAG_CODES)) or any(s in ("violated", "unknown") for s in st)
        for d in a.diagnostics:
            if d.code in FLAG_CODES and first is None:
                first = f"config {cfg}: " + d.format_text().splitlines()[0]
        codes |= set(cc)
        flagged |= f
        per.append({"config": cfg, "codes": cc, "flagged": f,
                    "statuses": {s: st.count(s) for s in sorted(set(st))},
                    "seconds": round(time.perf_counter() - t0, 3)})
    return {"flagged": flagged, "codes": sorted(codes), "first": first, "per_config": per,
            "crash": crash}


# ============================================================================ the oracle

def _tag_fns(kernel) -> dict:
    fns = {}
    pv = {p.value: p.name for p in kernel.params}
    for op in kernel.walk():
        if op.name == "ave.tag":
            src = op.operands[0]
            fns[pv.get(src, src.name)] = (op.attrs["fields"], op.regions[0])
    return fns


def _eval_tag(fields, region, coords) -> dict:
    from ave_core.analysis.replay import eval_tag_region
    out = eval_tag_region(fields, region, coords)
    return {f: np.broadcast_to(np.asarray(v, dtype=np.int64), coords[0].shape)
            for f, v in out.items()}


def _fields(result, fns: dict, pids: np.ndarray | None) -> dict:
    from ave_core.interp.machine import _TID_SHIFT
    out: dict = {}
    if pids is None:
        return out
    for t in result.tensors:
        if t.name not in fns:
            continue
        sel = (pids >= 0) & ((pids >> _TID_SHIFT) == t.index + 1)
        if not sel.any():
            continue
        lin = pids[sel] & ((1 << _TID_SHIFT) - 1)
        coords = [c.astype(np.int64) for c in np.unravel_index(lin, t.shape)]
        for f, v in _eval_tag(*fns[t.name], coords).items():
            arr, known = out.setdefault(f, (np.zeros(pids.shape, np.int64),
                                            np.zeros(pids.shape, bool)))
            arr[sel] = v
            known[sel] = True
    return out


def _merged(result, fns, p, p2) -> dict:
    a = _fields(result, fns, p)
    b = _fields(result, fns, p2)
    for f, (v2, k2) in b.items():
        if f in a:
            v, k = a[f]
            take = ~k & k2
            v[take] = v2[take]
            k |= k2
        else:
            a[f] = (v2.copy(), k2.copy())
    return a


def _mma_violation(kernel, result, fns, rec) -> dict | None:
    tx = rec.op.operands[0].type.layout.coords_table()
    ty = rec.op.operands[1].type.layout.coords_table()
    fa = _merged(result, fns, rec.a_prov, rec.a_prov2)
    fb = _merged(result, fns, rec.b_prov, rec.b_prov2)
    ws = kernel.warp_size
    T = tx.shape[0]
    warp_a = np.broadcast_to((np.arange(T) // ws)[:, None], tx.shape[:2])
    warp_b = np.broadcast_to((np.arange(ty.shape[0]) // ws)[:, None], ty.shape[:2])
    kdim = int(max(tx[..., 1].max(), ty[..., 0].max())) + 1
    for f in sorted(set(fa) & set(fb)):
        va, ka = fa[f]
        vb, kb = fb[f]
        if not ka.any() or not kb.any():
            continue
        key_a = (warp_a * kdim + tx[..., 1])[ka]
        key_b = (warp_b * kdim + ty[..., 0])[kb]
        n = int(max(key_a.max(), key_b.max())) + 1
        big = np.iinfo(np.int64).max
        mn = np.full(n, big)
        mx = np.full(n, -big)
        has_a = np.zeros(n, bool)
        has_b = np.zeros(n, bool)
        for key, vals, has in ((key_a, va[ka], has_a), (key_b, vb[kb], has_b)):
            np.minimum.at(mn, key, vals)
            np.maximum.at(mx, key, vals)
            has[key] = True
        bad = has_a & has_b & (mn != mx)
        if bad.any():
            key = int(np.nonzero(bad)[0][0])
            w, kk = divmod(key, kdim)
            av = sorted(set(va[ka][key_a == key].tolist()))[:4]
            bv = sorted(set(vb[kb][key_b == key].tolist()))[:4]
            return {"op_line": rec.op.loc.range.start.line + 1, "block": list(rec.block),
                    "loops": [list(x) for x in rec.loop_indices], "warp": w, "k": kk,
                    "field": f, "A_values": av, "B_values": bv}
    return None


def runtime_pairing(kernels: dict, example: str, seed: int = 0, timeout_s: int = 300,
                    max_runs: int | None = None) -> dict:
    """The provenance oracle: does some warp multiply, in some ``ave.mma``, elements whose
    tags disagree on a field both operands carry? Stops at the first such pair."""
    n = 0
    for cfg in sorted(kernels):
        k = kernels[cfg]
        fns = _tag_fns(k)
        for si, shape in enumerate(shapes(example, k.constexprs)):
            if max_runs is not None and n >= max_runs:
                return {"violated": False, "runs": n}
            n += 1
            case = make_case(example, k.constexprs, shape, seed)
            try:
                res = _run(k, case, provenance=True, timeout_s=timeout_s)
            except Exception as e:
                return {"violated": None, "error": f"{type(e).__name__}: {e}", "runs": n}
            for rec in res.mma_trace:
                v = _mma_violation(k, res, fns, rec)
                if v is not None:
                    v.update({"violated": True, "config": cfg, "shape": shape, "runs": n})
                    return v
    return {"violated": False, "runs": n}


# ============================================================================ one mutant

def evaluate(m: Mutant, seed: int = 0, oracle: str = "missed", timeout_s: int = 300,
             configs: Iterable[int] | None = None) -> dict:
    """Front end, interpreter, checker (and the oracle where asked) for one mutant.

    ``oracle``: "none", "missed" (for output-changing mutants the checker does not flag and
    for flagged equivalent ones), or "all" (every output-changing mutant too).
    ``configs``: judge only these specializations (default: every one)."""
    t0 = time.perf_counter()
    out = m.to_json()
    ks, errs = compile_mutant(m)
    if errs:
        out["status"] = "frontend_rejected"
        out["frontend"] = sorted({d.code for d in errs})
        out["frontend_first"] = errs[0].format_text().splitlines()[0]
        out["seconds"] = round(time.perf_counter() - t0, 3)
        return out
    kernels = {k.config_index: k for k in ks
               if configs is None or k.config_index in set(configs)}
    out["status"] = "compiled"
    out["configs"] = sorted(kernels)
    out["checker"] = check(kernels)
    out["interp"] = classify(kernels, m.example, seed, timeout_s)
    oc = out["interp"]["verdict"] == "output_changing"
    fl = out["checker"]["flagged"]
    if oracle == "all" and oc or oracle in ("all", "missed") and oc != fl:
        out["oracle"] = runtime_pairing(kernels, m.example, seed, timeout_s)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def explain_miss(r: dict) -> str:
    """Why an output-changing mutant the checker does not flag is (or is not) a checker bug."""
    ev = r["interp"]["evidence"]
    o = r.get("oracle") or {}
    dyn = set(ev["dynamic"])
    if o.get("violated"):
        return ("CHECKER MISS: the interpreter's provenance oracle sees an operand-pairing "
                f"violation ({o['field']} {o['A_values']} vs {o['B_values']} at line "
                f"{o['op_line']}, config {o['config']}, loops {o['loops']})")
    parts = []
    if ev["wrong_output"]:
        parts.append("wrong output")
    parts += sorted(dyn)
    what = ", ".join(parts)
    if not ev["wrong_output"] and dyn == {"AVE304"}:
        return f"race only ({what}): outside the tag vocabulary; the interpreter's race check"
    if not ev["wrong_output"] and dyn <= {"AVE301", "AVE302"}:
        return (f"out-of-bounds only ({what}): masks and bounds are outside the tag vocabulary;"
                " the interpreter's bounds check")
    why = _why(r)
    return (f"outside the vocabulary ({what}): the provenance oracle sees every mma pairing "
            f"hold; {why}")


_GLOBAL_WRITE = ("ave.store(", "ave.copy(sQ", "ave.scatter(")


def _why(r: dict) -> str:
    """A per-mutant reason (from its class, rule and text) why no tag assertion sees it."""
    cls, kind, after = r["class"], r["kind"], r["after"]
    write = any(w in after for w in _GLOBAL_WRITE)
    if cls == "swizzle_one_side":
        if kind.startswith(("write:store", "read:copy")):
            return ("the epilogue staging through shared memory: the permuted values only "
                    "reach a global write, and global writes are not tracked")
        return ("the permutation keeps every element's contracted index (k / key) and moves "
                "the row or column of an operand element, which no assertion compares (the "
                "output tile is not tagged: global writes are not tracked)")
    if cls == "stage_index":
        return ("both operands move together (A and B of the same other k-tile): every mma "
                "pairs matching k, but the sum covers the wrong k-tiles -- 'each k exactly "
                "once' is not an assertion of the vocabulary")
    if cls == "index_swap":
        if kind.startswith("program_id"):
            return ("program ids swapped: each tile is computed consistently and lands in the "
                    "wrong place of the output (global writes are not tracked)")
        if write:
            return "the swapped index is on a write into an untagged tensor (not tracked)"
        return "the swapped indices are not a compared field"
    if cls == "head_offset":
        if write:
            return "the moved index is on a write into an untagged tensor (not tracked)"
        if "sorted_token_ids" in after or "expert_ids" in after:
            return ("the moved index reads routing data from global memory (token / expert "
                    "ids): values on the heap are not modelled")
        return ("the moved coordinate is a row / column of an operand, not its contracted "
                "field: every mma still pairs matching k / key / head, the result lands in or "
                "comes from the wrong rows or columns consistently (which tile a program owns "
                "is a launch-grid contract the DSL does not express)")
    if cls == "mask_bound":
        if "keep" in after or "if " in after:
            return ("the softmax key mask decides which scores count: a value computation, "
                    "not a data-pairing property")
        return "a mask changes which elements are zero-filled or written, not which meet"
    if cls == "barrier":
        return "a missing barrier is a race between epochs, not a tag mismatch"
    if cls == "wait_count":
        return "the data read still pairs consistently"
    if cls == "transpose":
        return "the transposed operand is not a compared side"
    return ""
