"""The Ave front end: kernel source text -> Ave IR, without running the file.

:func:`compile_source` parses the text with :mod:`ast`, finds how the file imported the
DSL (a file that never imports ``ave_core.lang`` gets no diagnostics at all), finds the
``@ave.kernel`` functions, and for every specialization (each entry of ``configs``, or
the defaults) evaluates the kernel body:

* values known at compile time (constexprs, Python numbers and tuples, dtypes, layouts,
  MMA atoms, helper functions, lambdas) are computed by the front end itself, with its
  own evaluator over the AST — module-level code is never executed, helper files are read
  as text, never imported;
* values known only on the GPU (ids, tensor shapes, loaded data, runtime loop indices)
  become :mod:`ave_core.compiler.ir` values, produced by ops that carry their source range.

Errors are :class:`~ave_core.diagnostics.AveError` s, reported as diagnostics; the first
error of a specialization stops that specialization only.
"""

from __future__ import annotations

import ast
import math
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ave_core.diagnostics import (AveError, Diagnostic, Location, Range, Related, SourceText,
                                  ZERO_RANGE, decode_source, parse_source)
from ave_core.compiler import ir
from ave_core.compiler.ir import (Block, FragmentType, KernelIR, Loc, Op, Param, ProjectedLayout,
                                  BroadcastLayout, ScalarType, TensorType, TileType, Value)
from ave_core.lang import dtypes as _dt
from ave_core.lang.dtypes import DType
import importlib as _importlib

_LAYOUT = _importlib.import_module("ave_core.lang.layout")
_ATOMS = _importlib.import_module("ave_core.lang.atoms")

#: Module names through which a file can import the DSL.
DSL_MODULES = ("ave_core.lang",)

#: Front-end limits (AVE121) that keep checking bounded on any input.
MAX_STATIC_ITERATIONS = 4096
#: Iterations of all compile-time loops of one kernel together (nested ones multiply).
MAX_STATIC_TOTAL = 1 << 16
MAX_OPS = 200_000
MAX_INLINE_DEPTH = 32
MAX_INT_BITS = 4096
MAX_SEQUENCE = 1_000_000
#: Largest tile (elements) the front end enumerates for its layout checks.
MAX_TILE_ELEMENTS = 1 << 22
#: Shared memory a workgroup can use (bytes): sm_90 (H100/H200: 227 KB, CUDA C Programming
#: Guide, compute capability 9.0) and CDNA3 LDS (64 KB, AMD CDNA3 ISA).
SHARED_BYTES = {"nvidia": 232448, "amd": 65536}

# ============================================================================ results

@dataclass
class FrontendResult:
    """What the front end returns for one file.

    Attributes:
        uses_ave: whether the file imports the DSL (if not, everything else is empty).
        diagnostics: front-end diagnostics (deduplicated across specializations).
        kernels: one :class:`~ave_core.compiler.ir.KernelIR` per kernel specialization
            that compiled without error.
        kernel_names: every kernel found (also those whose compilation failed), with the
            0-based line of its ``def``.
        files: every file read (the file itself and helpers' files).
    """

    uses_ave: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)
    kernels: list[KernelIR] = field(default_factory=list)
    kernel_names: list[tuple[str, int]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


# ============================================================================ compile-time objects

class DSLModule:
    """The ``ave_core.lang`` module as seen by kernel code."""

    def __repr__(self) -> str:
        return "<module ave_core.lang>"


@dataclass(frozen=True)
class PackageRef:
    """A prefix of a dotted module path (``ave_core`` in ``import ave_core.lang``)."""

    path: str


@dataclass(frozen=True)
class ExternalModule:
    """A module imported by the file that is not the DSL (only ``math`` is usable)."""

    name: str


@dataclass(frozen=True)
class DSLName:
    """A name of the DSL (``copy``, ``kernel``, ``bf16`` ...)."""

    name: str


@dataclass(eq=False)
class HelperFn:
    """A helper function to inline: its ``def``, its module, and its closure scope."""

    node: ast.FunctionDef
    module: "ModuleContext"
    closure: "Scope | None" = None


@dataclass(eq=False)
class LambdaFn:
    node: ast.Lambda
    module: "ModuleContext"
    closure: "Scope"


@dataclass(frozen=True)
class BoundMethod:
    """A method of a runtime value (``A.stride``, ``x.to``)."""

    name: str
    value: Any


class Unset:
    """Marker for a constexpr parameter without a value."""


_BUILTINS_OK = {"range", "len", "min", "max", "abs", "int", "float", "bool", "tuple", "list",
                "zip", "enumerate", "isinstance", "dict", "reversed", "sum", "divmod", "round",
                "True", "False", "None"}

_MATH_OK = {"log2", "log", "exp", "exp2", "sqrt", "e", "pi", "inf", "ceil", "floor", "log10",
            "isqrt", "gcd", "prod", "nan"}

# ============================================================================ module context


_MISSING_ANCHOR = object()


class ModuleContext:
    """One file read as text: its AST, imports and module-level definitions.

    Module-level assignments are evaluated lazily by the front end's own evaluator (only
    compile-time values; anything else is an error when used), never by Python.
    """

    def __init__(self, path: str, text: str, tree: ast.Module, loader: "ModuleLoader") -> None:
        self.path = path
        self.text = text
        self.source = SourceText(text, path)
        self.tree = tree
        self.loader = loader
        self.imports: dict[str, Any] = {}
        self.import_nodes: dict[str, ast.AST] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.assigns: dict[str, ast.AST] = {}
        self.globals_cache: dict[str, Any] = {}
        self.evaluating: set[str] = set()
        self.uses_ave = False
        self._anchors: dict[int, tuple[int, str] | None] = {}
        self._scan()

    def statement_anchor(self, st: ast.stmt) -> tuple[int, str] | None:
        """``(line, indentation)`` where a new statement can be inserted right before
        ``st`` (0-based line; the line's own leading spaces/tabs), or None when ``st`` does
        not start its line (``x = 1; a = f()``, ``if c: a = f()``, ``else: a = f()``):
        there, no single new line goes before it alone. Kept per statement (loops and
        helpers execute one statement many times)."""
        hit = self._anchors.get(id(st), _MISSING_ANCHOR)
        if hit is not _MISSING_ANCHOR:
            return hit
        p = self.range_of(st).start
        lines = self.source.lines
        out = None
        if 0 <= p.line < len(lines):
            line = lines[p.line]
            ws = line[:len(line) - len(line.lstrip(" \t"))]
            out = (p.line, ws) if len(ws) == p.character else None
        self._anchors[id(st)] = out      # the tree, and so st, lives as long as self
        return out

    def _scan(self) -> None:
        for node in self.tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                before = dict(self.imports)
                self._scan_import(node)
                # the last binding of a module-level name wins (as in Python): an import
                # after a def or an assignment of the name replaces it, and vice versa
                for k, v in self.imports.items():
                    if before.get(k) is not v:
                        self.functions.pop(k, None)
                        self.assigns.pop(k, None)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node  # type: ignore[assignment]
                self.assigns.pop(node.name, None)
                self.imports.pop(node.name, None)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.assigns[t.id] = node.value
                        self.functions.pop(t.id, None)
                        self.imports.pop(t.id, None)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                self.assigns[node.target.id] = node.value
                self.functions.pop(node.target.id, None)
                self.imports.pop(node.target.id, None)

    def _scan_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in DSL_MODULES:
                    self.uses_ave = True
                    if a.asname:
                        self.imports[a.asname] = DSLModule()
                    else:
                        self.imports[a.name.split(".")[0]] = PackageRef(a.name.split(".")[0])
                elif a.name == "ave_core" and a.asname:
                    self.imports[a.asname] = PackageRef("ave_core")
                else:
                    bound = a.asname or a.name.split(".")[0]
                    self.imports[bound] = ExternalModule(a.name if a.asname else bound)
                self.import_nodes[a.asname or a.name.split(".")[0]] = node
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 0 and mod in DSL_MODULES:
                self.uses_ave = True
                for a in node.names:
                    if a.name == "*":
                        from ave_core import lang
                        for n in getattr(lang, "__all__", []):
                            self.imports[n] = DSLName(n)
                    else:
                        self.imports[a.asname or a.name] = DSLName(a.name)
                        self.import_nodes[a.asname or a.name] = node
            elif node.level == 0 and mod == "ave_core":
                for a in node.names:
                    if a.name == "lang":
                        self.uses_ave = True
                        self.imports[a.asname or a.name] = DSLModule()
                    else:
                        self.imports[a.asname or a.name] = ExternalModule("ave_core." + a.name)
                    self.import_nodes[a.asname or a.name] = node
            else:
                for a in node.names:
                    self.imports[a.asname or a.name] = ("from", node.level, mod, a.name)
                    self.import_nodes[a.asname or a.name] = node

    def range_of(self, node: ast.AST) -> Range:
        return self.source.range_of(node)


class ModuleLoader:
    """Reads workspace files as text (never imports them) and caches their contexts."""

    def __init__(self, workspace: str | None, overlay: dict[str, str] | None = None,
                 extra_roots: Sequence[str] = ()) -> None:
        self.workspace = os.path.abspath(workspace) if workspace else None
        #: more directories absolute imports are looked up in, last (a launch: the
        #: program's own sys.path entries, see :func:`launch_roots`)
        self.extra_roots = [os.path.abspath(r) for r in extra_roots]
        self.overlay = overlay or {}
        self.cache: dict[str, ModuleContext | None] = {}
        #: Results of pure computations on compile-time facts (layout checks by layout,
        #: shapes, origins and vector width; the names a statement list assigns; reduction
        #: scopes), by the values they depend on: one compile's kernels and specializations
        #: repeat them many times. Lives as long as this loader, i.e. one
        #: :func:`compile_source` / :func:`specialize` call. See :func:`_memoized`.
        self.memo: dict[tuple, Any] = {}

    def load(self, path: str) -> ModuleContext | None:
        path = os.path.abspath(path)
        if path in self.cache:
            return self.cache[path]
        self.cache[path] = None
        try:
            text = self.overlay.get(path)
            if text is None:
                # (as Python and the checked file are read: a BOM, a PEP 263 coding
                # line -- a helper saved so was "cannot read or parse"; a review helper)
                with open(path, "rb") as f:
                    text = decode_source(f.read())
            tree = parse_source(text, path)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError,
                LookupError):
            return None
        ctx = ModuleContext(path, text, tree, self)
        self.cache[path] = ctx
        return ctx

    def _projects(self, start: str) -> list[str]:
        """The directories at or above ``start`` holding a ``pyproject.toml``, nearest
        first (cached per directory)."""
        memo = self.memo.setdefault(("projects",), {})
        hit = memo.get(start)
        if hit is None:
            hit, d = [], start
            while True:
                if os.path.isfile(os.path.join(d, "pyproject.toml")):
                    hit.append(d)
                parent = os.path.dirname(d)
                if parent == d:
                    break
                d = parent
            memo[start] = hit
        return hit

    def resolve(self, from_file: str, level: int, module: str) -> list[str]:
        """Candidate file paths for ``from <.*level><module> import ...``."""
        base = os.path.dirname(os.path.abspath(from_file))
        roots: list[str] = []
        if level > 0:
            d = base
            for _ in range(level - 1):
                d = os.path.dirname(d)
            roots.append(d)
        else:
            roots.append(base)
            # the projects the file lies in (directories with a pyproject.toml, nearest
            # first, and their src/ layouts), then the workspace: the editor looked in its
            # workspace folder, `--check` in the nearest project -- in a repository of
            # several projects each rejected imports the other resolved, or took another
            # file of the same name (review helpers); both look in the same order now
            for r in self._projects(base):
                for c in (r, os.path.join(r, "src")):
                    if c not in roots and (c == r or os.path.isdir(c)):
                        roots.append(c)
            if self.workspace and self.workspace not in roots:
                roots.append(self.workspace)
            roots += [r for r in self.extra_roots if r not in roots]
        parts = module.split(".") if module else []
        out = []
        for r in roots:
            p = os.path.join(r, *parts)
            out += [p + ".py", os.path.join(p, "__init__.py")]
        return out


# ============================================================================ scopes

class Scope:
    """Variables of one function body (kernel, inlined helper or lambda)."""

    def __init__(self, module: ModuleContext, parent: "Scope | None" = None,
                 vars: dict | None = None) -> None:
        self.module = module
        self.parent = parent
        self.vars: dict[str, Any] = dict(vars or {})

    def child_copy(self) -> "Scope":
        return Scope(self.module, self.parent, self.vars)

    def lookup_local(self, name: str) -> tuple[bool, Any]:
        s: Scope | None = self
        while s is not None:
            if name in s.vars:
                return True, s.vars[name]
            s = s.parent
        return False, None


_SENTINEL_LOOPVAR = object()


@dataclass(frozen=True)
class LoopOnly:
    """A name defined only inside a runtime loop/branch body (unusable after it)."""

    line: int


# ============================================================================ the evaluator

def _is_ct_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _is_ct_num(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


_BINOPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
    ast.LShift: "shl", ast.RShift: "shr",
}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}

_PY_BIN: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}

_UNARY_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs")


class KernelBuilder:
    """Evaluates one kernel specialization into a :class:`KernelIR`."""

    def __init__(self, module: ModuleContext, fn: ast.FunctionDef, deco: dict,
                 constexprs: dict, config_index: int | None) -> None:
        from ave_core import lang
        self.lang = lang
        self.module = module
        self.fn = fn
        self.threads: int = deco["threads"]
        self.warp_size: int = deco["warp_size"]
        self.target: str = deco["target"]
        self.constexprs = constexprs
        self.config_index = config_index
        self.block = Block()
        self.call_stack: list[tuple[ast.AST, ModuleContext]] = []
        #: compile-time loops being run (nesting), and their iterations so far, in all
        self.static_depth = 0
        #: the compile-time loops around the statement being built, outermost first: (loop
        #: variable, value) -- every op built records them (``attrs["static_indices"]``:
        #: witnesses name the iteration, see ir.shown_loops)
        self.static_stack: list[tuple[str, int]] = []
        self.static_total = 0
        #: (file, name) of the imported names being resolved (a cycle is AVE113)
        self._resolving: set[tuple[str, str]] = set()
        #: where a new statement can go before the statement being executed (Loc.stmt:
        #: its line and indentation, see ModuleContext.statement_anchor), and the same for
        #: each inlined call node (by id: the nodes live as long as the compile)
        self.cur_stmt: tuple[int, str] | None = None
        self._call_stmt: dict[int, tuple[int, str] | None] = {}
        self._chains: dict[tuple, tuple[Loc, ...]] = {}   # call stack -> its inlining chain
        self.cur_module = module
        self.n_ops = 0
        #: runtime integers the kernel assumes multiples of a constant (``ave.assume(KS %
        #: 32 == 0)``): value -> the constant (see _multiple_of, the vector alignment check)
        self.assumed_multiples: dict = {}
        self.files: set[str] = {module.path}
        #: (file, range, name, value) of every name bound to an IR value (KernelIR.bindings)
        self.bindings: list[tuple] = []
        self.mma_operand_layouts: set[int] = set()
        self.dim_cache: dict[tuple[int, str, int], Value] = {}

    # ------------------------------------------------------------------ errors / locations

    def err(self, code: str, msg: str, node: ast.AST | None, **kw: Any) -> AveError:
        """An AveError located at ``node`` of the module being evaluated."""
        return AveError(code, msg, range=self.cur_module.range_of(node) if node is not None
                        and hasattr(node, "lineno") else None, file=self.cur_module.path, **kw)

    def loc(self, node: ast.AST) -> Loc:
        """The location of an op built for ``node`` (with its inlining chain). One compile
        shares one (immutable) Loc per node, module and call stack."""
        memo = self.module.loader.memo
        key = ("loc", id(node))
        hit = memo.get(key)     # (node, module, call stack, loc): ids are only compared
        if hit is not None and hit[0] is node and hit[1] is self.cur_module and \
                hit[2] == self.call_stack:      # while the node is alive, so is hit[0]
            return hit[3]
        rng = self.cur_module.range_of(node) if hasattr(node, "lineno") else ZERO_RANGE
        stack = tuple(self.call_stack)      # (call node, module) pairs, compared by identity
        chain = self._chains.get(stack)
        if chain is None:
            chain = self._chains[stack] = tuple(Loc(m.path, m.range_of(n),
                                                    stmt=self._call_stmt.get(id(n)))
                                                for n, m in stack)
        loc = Loc(self.cur_module.path, rng, chain, stmt=self.cur_stmt)
        memo[key] = (node, self.cur_module, list(self.call_stack), loc)
        return loc

    # ------------------------------------------------------------------ op emission

    def emit(self, name: str, operands: Sequence[Value], result_types: Sequence[Any],
             node: ast.AST, attrs: dict | None = None, regions: Sequence[Block] = (),
             names: Sequence[str | None] | None = None) -> Op:
        self.n_ops += 1
        if self.n_ops > MAX_OPS:
            raise self.err("AVE121", f"the kernel produces more than {MAX_OPS} IR ops", node)
        op = Op(name, list(operands), [], dict(attrs or {}), list(regions), self.loc(node))
        if self.static_stack:
            op.attrs["static_indices"] = tuple(self.static_stack)
        for i, t in enumerate(result_types):
            op.results.append(Value(t, (names[i] if names else None), owner=op))
        self.block.ops.append(op)
        return op

    def const(self, value: Any, dtype: DType, node: ast.AST) -> Value:
        v = self.emit("arith.constant", [], [ScalarType(dtype)], node,
                      {"value": value, "dtype": dtype}).result
        if dtype == _dt.i32 and _is_ct_int(value):
            v.affine = {None: int(value)}
        return v

    # ------------------------------------------------------------------ top level

    def build(self) -> KernelIR:
        fn = self.fn
        scope = Scope(self.module)
        params: list[Param] = []
        args = fn.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.err("AVE101", "kernels take plain positional parameters only", fn)
        for a in args.args:
            if a.annotation is None:
                raise self.err("AVE118", f"kernel parameter `{a.arg}` needs an annotation "
                               "(ave.Tensor[dtype, rank], a scalar dtype, or ave.constexpr)", a)
            ann = self.eval_ct(a.annotation, scope, what="a parameter annotation")
            if a.arg in self.constexprs:
                val = self.constexprs[a.arg]
                if isinstance(val, Unset):
                    raise self.err("AVE111", f"constexpr `{a.arg}` has no value: give it a "
                                   "default, a value in every `configs` entry, or pass it at "
                                   "launch", a)
                scope.vars[a.arg] = val
                continue
            if isinstance(ann, self.lang.core.TensorSpec):
                t = TensorType(ann.dtype, ann.rank)
            elif isinstance(ann, DType):
                t = ScalarType(ann)
            else:
                raise self.err("AVE118", f"unsupported annotation for `{a.arg}`: expected "
                               "ave.Tensor[dtype, rank], a dtype or ave.constexpr", a.annotation)
            v = self.block.add_arg(t, a.arg)
            if isinstance(t, ScalarType) and t.dtype == _dt.i32:
                v.affine = {v: 1}
            params.append(Param(a.arg, t, v, self.module.range_of(a)))
            scope.vars[a.arg] = v
        self.exec_body(fn.body, scope, top=True)
        name_rng = _def_name_range(self.module, fn)
        return KernelIR(fn.name, self.module.path, fn.lineno - 1, name_rng, self.threads,
                        self.warp_size, self.target, dict(self.constexprs), self.config_index,
                        params, self.block, tuple(sorted(self.files)),
                        bindings=self.bindings)

    # ------------------------------------------------------------------ statements

    def exec_body(self, body: list[ast.stmt], scope: Scope, top: bool = False) -> Any:
        """Execute statements; returns ('return', value) when a return is hit."""
        for i, st in enumerate(body):
            r = self.exec_stmt(st, scope)
            if r is not None:
                if i != len(body) - 1:
                    raise self.err("AVE101", "code after `return` is not supported", body[i + 1])
                return r
        return None

    def exec_stmt(self, st: ast.stmt, scope: Scope) -> Any:
        saved = self.cur_stmt
        self.cur_stmt = self.cur_module.statement_anchor(st)
        try:
            return self._exec_stmt(st, scope)
        finally:
            self.cur_stmt = saved

    def _exec_stmt(self, st: ast.stmt, scope: Scope) -> Any:
        if isinstance(st, ast.Expr):
            if isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                return None  # docstring
            self.eval(st.value, scope)
            return None
        if isinstance(st, ast.Assign):
            val = self.eval(st.value, scope)
            for t in st.targets:
                self.assign(t, val, scope, st.value)
            return None
        if isinstance(st, ast.AnnAssign):
            if st.value is None:
                raise self.err("AVE101", "annotated declaration without a value", st)
            self.assign(st.target, self.eval(st.value, scope), scope, st.value)
            return None
        if isinstance(st, ast.AugAssign):
            if not isinstance(st.target, ast.Name):
                raise self.err("AVE101", "augmented assignment to anything but a name", st)
            # (the target itself, read as a name: building an ast.Name here raised
            # CPython 3.11's "AST constructor recursion depth mismatch" under threads)
            cur = self.eval(st.target, scope)
            val = self.binop(_BINOPS[type(st.op)], cur, self.eval(st.value, scope), st)
            scope.vars[st.target.id] = val
            return None
        if isinstance(st, ast.For):
            self.exec_for(st, scope)
            return None
        if isinstance(st, ast.If):
            return self.exec_if(st, scope)
        if isinstance(st, ast.Return):
            val = self.eval(st.value, scope) if st.value is not None else None
            return ("return", val)
        if isinstance(st, ast.Pass):
            return None
        if isinstance(st, ast.FunctionDef):
            if st.decorator_list:
                raise self.err("AVE101", "decorated functions inside a kernel", st.decorator_list[0])
            scope.vars[st.name] = HelperFn(st, self.cur_module, scope)
            return None
        if isinstance(st, ast.Assert):
            test = self.eval(st.test, scope)
            if isinstance(test, Value):
                raise self.err("AVE115", "`assert` needs a compile-time condition; use "
                               "ave.assert_conform / ave.assert_disjoint for data", st.test)
            if not test:
                msg = self.eval_ct(st.msg, scope) if st.msg is not None else "assertion failed"
                raise self.err("AVE117", f"compile-time assertion failed: {msg}", st)
            return None
        what = {ast.While: "a `while` loop (use ave.range)", ast.Try: "`try`",
                ast.With: "`with`", ast.ClassDef: "a class definition",
                ast.Global: "`global`", ast.Nonlocal: "`nonlocal`", ast.Delete: "`del`",
                ast.Raise: "`raise`", ast.Break: "`break`", ast.Continue: "`continue`",
                ast.Import: "imports inside a kernel", ast.ImportFrom: "imports inside a kernel",
                ast.AsyncFunctionDef: "async functions", ast.AsyncFor: "async for",
                ast.AsyncWith: "async with"}.get(type(st), type(st).__name__)
        if hasattr(ast, "Match") and isinstance(st, ast.Match):
            what = "`match`"
        raise self.err("AVE101", f"{what} is not supported in Ave kernels", st)

    def assign(self, target: ast.AST, val: Any, scope: Scope, vnode: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if isinstance(val, Value):
                if val.name is None:
                    val.name = target.id
                self._bind(target, val)
            scope.vars[target.id] = val
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(val, (tuple, list)):
                raise self.err("AVE118", "cannot unpack a non-tuple value", vnode)
            if len(val) != len(target.elts):
                raise self.err("AVE104", f"cannot unpack {len(val)} values into "
                               f"{len(target.elts)} names", target)
            for t, v in zip(target.elts, val):
                self.assign(t, v, scope, vnode)
            return
        raise self.err("AVE101", "only names and tuples of names can be assigned to "
                       "(tiles are written with ave.store / ave.copy)", target)

    # ------------------------------------------------------------------ control flow

    def _bind(self, target: Any, val: Value, name: str | None = None,
              module: ModuleContext | None = None) -> None:
        """Record that the name at ``target`` (an ``ast.Name``, or anything with its
        position) now stands for ``val`` (KernelIR.bindings)."""
        if len(self.bindings) < MAX_OPS:
            m = module or self.cur_module
            self.bindings.append((m.path, m.range_of(target), name or target.id, val))

    def exec_for(self, st: ast.For, scope: Scope) -> None:
        if st.orelse:
            raise self.err("AVE101", "`for ... else` is not supported", st.orelse[0])
        it = st.iter
        kind, args, kwargs = self.loop_kind(it, scope)
        if kind in ("static", "iter"):
            if kind == "static":
                seq = self.static_seq(args, kwargs, it)
                if len(seq) > MAX_STATIC_ITERATIONS:
                    raise self.err("AVE121", f"static loop of {len(seq)} iterations (limit "
                                   f"{MAX_STATIC_ITERATIONS})", it)
            else:
                seq = args
            self.static_depth += 1
            name = st.target.id if isinstance(st.target, ast.Name) else None
            try:
                for i, x in enumerate(seq):
                    # (every iteration of every compile-time loop, nested ones included:
                    # two nested loops of 4096 ran 16.7 million iterations, 81 s, each
                    # within its own limit; a review helper)
                    self.static_total += 1
                    if self.static_total > MAX_STATIC_TOTAL:
                        raise self.err("AVE121", f"compile-time loops run more than "
                                       f"{MAX_STATIC_TOTAL} iterations in all", it)
                    self.assign(st.target, x, scope, it)
                    if name is not None:
                        # (the value for ave.static_range, the position for a tuple of
                        # other things: layouts, stages)
                        self.static_stack.append((name, x if _is_ct_int(x) and
                                                  not isinstance(x, bool) else i))
                    try:
                        r = self.exec_body(st.body, scope)
                    finally:
                        if name is not None:
                            self.static_stack.pop()
                    if r is not None:
                        raise self.err("AVE101", "`return` inside a loop is not supported",
                                       st)
            finally:
                self.static_depth -= 1
            return
        # runtime loop -> scf.for
        if not isinstance(st.target, ast.Name):
            raise self.err("AVE101", "the index of an ave.range loop must be a single name",
                           st.target)
        start, stop, step, unroll = args
        if _is_ct_int(step) and step == 0:
            raise self.err("AVE120", "loop step must not be 0", it)
        if isinstance(step, Value) or not _is_ct_int(step):
            raise self.err("AVE115", "the step of ave.range must be a compile-time integer", it)
        lb = self.as_i32(start, it)
        ub = self.as_i32(stop, it)
        stv = self.as_i32(step, it)
        assigned = self.assigned_names(st.body)
        carried: list[str] = []
        for n in sorted(assigned):
            found, v = scope.lookup_local(n)
            if found and n in scope.vars and not isinstance(v, (LoopOnly, HelperFn)):
                carried.append(n)
        inits: list[Value] = []
        kept: list[str] = []
        for n in carried:
            v = scope.vars[n]
            if isinstance(v, Value):
                inits.append(v)
                kept.append(n)
            elif _is_ct_num(v) or isinstance(v, bool):
                kept.append(n)
                inits.append(self.materialize_scalar(v, st))
            # other compile-time values must not change in the body (checked below)
        body = Block()
        iv = body.add_arg(ScalarType(_dt.i32), st.target.id)
        # iv = lb + step * i, with i a fresh iteration counter
        iv.affine = _affine("add", lb.affine, {_IterCounter(st.target.id): int(step)}) \
            if lb.affine is not None else None
        bargs = [body.add_arg(v.type, n) for n, v in zip(kept, inits)]
        inner = scope.child_copy()
        inner.vars[st.target.id] = iv
        self._bind(st.target, iv)
        for n, a in zip(kept, bargs):
            inner.vars[n] = a
        saved = self.block
        self.block = body
        try:
            if self.exec_body(st.body, inner) is not None:
                raise self.err("AVE101", "`return` inside a loop is not supported", st)
            yields: list[Value] = []
            for n, a in zip(kept, bargs):
                nv = inner.vars.get(n)
                nv = self.coerce_like(nv, a.type, n, st)
                yields.append(nv)
            self.emit("scf.yield", yields, [], st)
        finally:
            self.block = saved
        for n in carried:
            if n not in kept and inner.vars.get(n) is not scope.vars.get(n):
                if not _ct_equal(inner.vars.get(n), scope.vars.get(n)):
                    raise self.err("AVE115", f"`{n}` holds a compile-time value that changes "
                                   "inside a runtime loop; use ave.static_range", st)
        op = self.emit("scf.for", [lb, ub, stv, *inits], [a.type for a in bargs], st,
                       {"unroll": unroll, "iv_name": st.target.id, "carried": tuple(kept)},
                       [body], names=kept)
        for n, r in zip(kept, op.results):
            scope.vars[n] = r
        for n in assigned:
            if n not in kept and n not in carried:
                scope.vars[n] = LoopOnly(st.lineno)

    def loop_kind(self, it: ast.AST, scope: Scope) -> tuple[str, Any, Any]:
        if isinstance(it, ast.Call):
            f = self.eval(it.func, scope)
            if f == DSLName("static_range") or f == DSLName("range") or f == ("builtin", "range"):
                name = "static_range" if f == DSLName("static_range") else "range"
                a = self.bind(name, it, scope)
                start, stop, step = a["start"], a.get("stop"), a.get("step", 1)
                if stop is None:
                    start, stop = 0, start
                if name == "static_range":
                    for x, nm in ((start, "start"), (stop, "stop"), (step, "step")):
                        if not _is_ct_int(x):
                            raise self.err("AVE115", f"ave.static_range needs compile-time "
                                           f"integer bounds; `{nm}` is a runtime value", it)
                    return "static", (start, stop, step), {}
                return "runtime", (start, stop, step, a.get("unroll")), {}
        val = self.eval(it, scope)
        if isinstance(val, (tuple, list)):
            return "iter", val, {}
        raise self.err("AVE101", "a kernel loop must iterate over ave.range(...), "
                       "ave.static_range(...) or a compile-time tuple", it)

    def static_seq(self, args: Any, kwargs: Any, node: ast.AST) -> list[int]:
        start, stop, step = args
        if step == 0:
            raise self.err("AVE120", "loop step must not be 0", node)
        n = max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))
        if n > MAX_STATIC_ITERATIONS:
            raise self.err("AVE121", f"static loop of {n} iterations (limit "
                           f"{MAX_STATIC_ITERATIONS})", node)
        return list(range(start, stop, step))

    def exec_if(self, st: ast.If, scope: Scope) -> Any:
        cond = self.eval(st.test, scope)
        if not isinstance(cond, Value):
            branch = st.body if self.truth(cond, st.test) else st.orelse
            return self.exec_body(branch, scope)
        cond = self.as_bool(cond, st.test)
        assigned = self.assigned_names(st.body) | self.assigned_names(st.orelse)
        results: dict[str, list] = {}
        branches = []
        for body in (st.body, st.orelse):
            blk = Block()
            inner = scope.child_copy()
            saved = self.block
            self.block = blk
            try:
                if self.exec_body(body, inner) is not None:
                    raise self.err("AVE101", "`return` inside a runtime branch is not supported",
                                   st)
            finally:
                self.block = saved
            branches.append((blk, inner))
        merged: list[str] = []
        for n in sorted(assigned):
            vt = branches[0][1].vars.get(n, scope.vars.get(n))
            ve = branches[1][1].vars.get(n, scope.vars.get(n))
            if vt is None or ve is None or isinstance(vt, LoopOnly) or isinstance(ve, LoopOnly):
                scope.vars[n] = LoopOnly(st.lineno)
                continue
            if vt is ve or _ct_equal(vt, ve):
                scope.vars[n] = vt
                continue
            merged.append(n)
            results[n] = [vt, ve]
        types = []
        for n in merged:
            vt, ve = results[n]
            ref = vt if isinstance(vt, Value) else ve
            if not isinstance(ref, Value):
                if _is_ct_num(vt) and _is_ct_num(ve):
                    dt = _dt.f32 if isinstance(vt, float) or isinstance(ve, float) else _dt.i32
                    ref = Value(ScalarType(dt))
                else:
                    raise self.err("AVE115", f"`{n}` gets different compile-time values on the "
                                   "two sides of a runtime branch", st)
            types.append(ref.type)
        for bi, (blk, inner) in enumerate(branches):
            saved = self.block
            self.block = blk
            try:
                ys = [self.coerce_like(results[n][bi], t, n, st) for n, t in zip(merged, types)]
                self.emit("scf.yield", ys, [], st)
            finally:
                self.block = saved
        op = self.emit("scf.if", [cond], types, st,
                       {"merged": tuple(merged), "cond_src": ast.unparse(st.test)},
                       [branches[0][0], branches[1][0]], names=merged)
        for n, r in zip(merged, op.results):
            scope.vars[n] = r
        return None

    def assigned_names(self, body: list[ast.stmt]) -> set[str]:
        """:func:`_assigned_names` of ``body``, computed once per compile (do not modify)."""
        hit = _memoized(self, ("assigned_names", id(body)), lambda: (body, _assigned_names(body)))
        return hit[1] if hit[0] is body else _assigned_names(body)

    def coerce_like(self, v: Any, t: Any, name: str, node: ast.AST) -> Value:
        if isinstance(v, Value):
            if v.type != t:
                raise self.err("AVE118", f"`{name}` changes type across a loop or branch: "
                               f"{t} vs {v.type}", node)
            return v
        if isinstance(t, ScalarType) and (_is_ct_num(v) or isinstance(v, bool)):
            return self.const(v, t.dtype, node)
        raise self.err("AVE118", f"`{name}` must hold a runtime value of type {t} here", node)

    def truth(self, v: Any, node: ast.AST) -> bool:
        try:
            return bool(v)
        except Exception:
            raise self.err("AVE118", "this value has no truth value", node) from None

    # ------------------------------------------------------------------ expressions

    def eval_ct(self, node: ast.AST, scope: Scope, what: str = "this value") -> Any:
        v = self.eval(node, scope)
        if isinstance(v, Value) or _contains_value(v):
            raise self.err("AVE115", f"{what} must be known at compile time", node)
        return v

    def eval(self, node: ast.AST, scope: Scope) -> Any:
        m = _EVALUATORS.get(type(node))
        if m is None:
            raise self.err("AVE101", f"{_describe(node)} is not supported in Ave kernels", node)
        return m(self, node, scope)

    def ev_Constant(self, node: ast.Constant, scope: Scope) -> Any:
        if isinstance(node.value, (bytes, complex)) or node.value is Ellipsis:
            raise self.err("AVE101", f"{type(node.value).__name__} constants are not supported",
                           node)
        return node.value

    def ev_Name(self, node: ast.Name, scope: Scope) -> Any:
        return self.lookup(node.id, node, scope)

    def lookup(self, name: str, node: ast.AST, scope: Scope) -> Any:
        found, v = scope.lookup_local(name)
        if found:
            if isinstance(v, LoopOnly):
                raise self.err("AVE102", f"`{name}` is only defined inside the runtime loop or "
                               f"branch at line {v.line}; define it before to carry it", node)
            return v
        return self.lookup_global(name, node, scope.module)

    def lookup_global(self, name: str, node: ast.AST, module: ModuleContext) -> Any:
        if name in module.globals_cache:
            return module.globals_cache[name]
        if name in module.imports:
            v = module.imports[name]
            if isinstance(v, tuple) and v and v[0] == "from":
                key = (module.path, name)
                if key in self._resolving:
                    raise self.err("AVE113", f"cannot import `{name}`: its imports lead back "
                                   "to it (a circular import)", node)
                self._resolving.add(key)
                try:
                    v = self.resolve_from_import(module, v, node)
                finally:
                    self._resolving.discard(key)
            elif isinstance(v, DSLName):
                if not hasattr(self.lang, v.name):
                    raise self.err("AVE102", f"`{v.name}` is not part of the DSL", node)
                v = _dsl_value(self.lang, v.name)
            module.globals_cache[name] = v
            return v
        if name in module.functions:
            fn = module.functions[name]
            if isinstance(fn, ast.AsyncFunctionDef):
                raise self.err("AVE101", "async functions cannot be used in kernels", node)
            v = HelperFn(fn, module)
            module.globals_cache[name] = v
            return v
        if name in module.assigns:
            if name in module.evaluating:
                raise self.err("AVE102", f"module-level `{name}` refers to itself", node)
            module.evaluating.add(name)
            saved = self.cur_module
            self.cur_module = module
            saved_block = self.block
            self.block = Block()  # module-level expressions must not emit ops
            try:
                expr = module.assigns[name]
                v = self.eval(expr, Scope(module))
                if self.block.ops or _contains_value(v):
                    raise self.err("AVE115", f"module-level `{name}` must be a compile-time value",
                                   expr)
            finally:
                self.block = saved_block
                self.cur_module = saved
                module.evaluating.discard(name)
            module.globals_cache[name] = v
            return v
        if name in _BUILTINS_OK:
            return ("builtin", name)
        raise self.err("AVE102", f"unknown name `{name}`", node)

    def resolve_from_import(self, module: ModuleContext, spec: tuple, node: ast.AST) -> Any:
        _, level, modname, attr = spec
        if level == 0 and modname.split(".")[0] in ("math",):
            return ExternalModule(modname + "." + attr) if modname != "math" else (
                ("math", attr) if attr in _MATH_OK else ExternalModule("math." + attr))
        for cand in module.loader.resolve(module.path, level, modname):
            if os.path.isfile(cand) or os.path.abspath(cand) in module.loader.overlay:
                ctx = module.loader.load(cand)
                if ctx is None:
                    raise self.err("AVE113", f"cannot read or parse `{cand}` imported here", node)
                self.files.add(ctx.path)
                if attr in ctx.functions or attr in ctx.assigns or attr in ctx.imports:
                    return self.lookup_global(attr, node, ctx)
                shown = os.path.relpath(cand, os.path.dirname(os.path.abspath(module.path)))
                raise self.err("AVE113", f"`{attr}` is not defined in `{shown}`", node)
        if level == 0 and _installed(modname.split(".")[0]):
            # an installed library (numpy, torch...): usable outside kernels only
            return ExternalModule(f"{modname}.{attr}")
        raise self.err("AVE113", f"cannot find the module `{'.' * level}{modname}`: it is "
                       "neither a file of the workspace nor an installed package", node)

    def ev_Attribute(self, node: ast.Attribute, scope: Scope) -> Any:
        base = self.eval(node.value, scope)
        a = node.attr
        if isinstance(base, DSLModule):
            return self.dsl_attr(a, node)
        if isinstance(base, PackageRef):
            path = f"{base.path}.{a}"
            if path in DSL_MODULES:
                return DSLModule()
            return PackageRef(path)
        if isinstance(base, ExternalModule):
            if base.name == "math":
                if a not in _MATH_OK:
                    raise self.err("AVE101", f"math.{a} is not available at compile time", node)
                return ("math", a)
            raise self.err("AVE101", f"module `{base.name}` cannot be used inside a kernel "
                           "(kernels are compiled, not run by Python)", node)
        if isinstance(base, Value):
            return self.value_attr(base, a, node)
        if isinstance(base, (HelperFn, LambdaFn)) or (isinstance(base, tuple) and base and
                                                       base[0] in ("builtin", "math")):
            raise self.err("AVE101", f"attribute `{a}` of a function", node)
        if a.startswith("_"):
            raise self.err("AVE101", f"private attribute `{a}`", node)
        try:
            v = getattr(base, a)
        except AttributeError:
            raise self.err("AVE102", f"{type(base).__name__} has no attribute `{a}`", node) from None
        except Exception as e:  # a property of a compile-time object failed
            raise self.err("AVE120", f"{type(base).__name__}.{a}: {e}", node) from None
        if callable(v) and not isinstance(v, (DType,)):
            return ("method", base, a, v)
        if a in ("a", "b") and hasattr(base, "atom"):
            self.mma_operand_layouts.add(id(v))
        return v

    def dsl_attr(self, a: str, node: ast.AST) -> Any:
        names = self.lang.names
        if a in names.DSL_FUNCTIONS or a in names.COMPILE_TIME_FUNCTIONS or hasattr(self.lang, a) \
                and not a.startswith("_"):
            if not hasattr(self.lang, a):
                raise self.err("AVE102", f"`ave.{a}` is not part of the DSL", node)
            return _dsl_value(self.lang, a)
        close = _close_matches(a, [n for n in dir(self.lang) if not n.startswith("_")])
        hint = f"; did you mean `ave.{close}`?" if close else ""
        raise self.err("AVE102", f"`ave.{a}` is not part of the DSL{hint}", node)

    def value_attr(self, v: Value, a: str, node: ast.AST) -> Any:
        t = v.type
        if a == "dtype" and hasattr(t, "dtype"):
            return t.dtype
        if isinstance(t, TensorType):
            if a == "shape":
                return tuple(self.tensor_dim(v, i, "dim", node) for i in range(t.rank))
            if a == "stride":
                return BoundMethod("stride", v)
            if a == "ndim":
                return t.rank
        if isinstance(t, (TileType, FragmentType)):
            if a == "shape":
                return t.shape
            if a == "ndim":
                return len(t.shape)
            if a == "layout":
                return t.layout
            if a == "T":
                if len(t.shape) != 2:
                    raise self.err("AVE116", "`.T` needs a 2-D tile", node)
                return self.h_transpose_impl(v, (1, 0), node)
        if a in ("to", "astype"):
            return BoundMethod("cast", v)
        raise self.err("AVE102", f"{_kind(v)} has no attribute `{a}`", node)

    def tensor_dim(self, v: Value, i: int, which: str, node: ast.AST) -> Value:
        key = (v.id, which, i)
        if key not in self.dim_cache:
            # emitted at kernel entry so the value dominates every use
            op = Op(f"ave.{which}", [v], [], {"axis": i}, [], self.loc(node))
            r = Value(ScalarType(_dt.i32), None, owner=op)
            r.affine = {r: 1}
            op.results.append(r)
            self.insert_at_entry(op, v)
            self.dim_cache[key] = r
        return self.dim_cache[key]

    def insert_at_entry(self, op: Op, after: Value) -> None:
        """Insert a value-free op right after the definition of ``after`` (or at entry)."""
        # find the block and position where `after` is defined; fall back to current block
        owner = after.owner
        root = self._root_block()
        if isinstance(owner, Block):
            owner.ops.insert(0, op) if owner is not root else root.ops.insert(
                _count_leading(root, "ave.dim", "ave.stride"), op)
            return
        for blk in _all_blocks(root):
            if owner in blk.ops:
                blk.ops.insert(blk.ops.index(owner) + 1, op)
                return
        self.block.ops.append(op)

    def _root_block(self) -> Block:
        return self._root if hasattr(self, "_root") else self.block

    def ev_Subscript(self, node: ast.Subscript, scope: Scope) -> Any:
        base = self.eval(node.value, scope)
        if isinstance(base, DSLName) and base.name == "Tensor":
            args = self.eval_ct(node.slice, scope, "tensor annotation")
            args = args if isinstance(args, tuple) else (args,)
            try:
                return self.lang.Tensor[args]
            except (TypeError, ValueError) as e:
                raise self.err("AVE118", str(e), node) from None
        idx_node = node.slice
        elts = idx_node.elts if isinstance(idx_node, ast.Tuple) else [idx_node]
        if isinstance(base, Value):
            return self.index_value(base, elts, scope, node)
        idx = self.eval(idx_node, scope)
        if isinstance(idx, Value):
            raise self.err("AVE115", "indexing a compile-time value needs a compile-time index",
                           idx_node)
        try:
            return base[idx]
        except (IndexError, KeyError) as e:
            raise self.err("AVE119", f"index {idx!r} out of range: {e}", idx_node) from None
        except ValueError as e:
            raise self.err("AVE120", f"invalid index {idx!r}: {e}", idx_node) from None
        except TypeError as e:
            raise self.err("AVE118", f"cannot index {type(base).__name__}: {e}", node) from None

    def ev_Tuple(self, node: ast.Tuple, scope: Scope) -> Any:
        out: list = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                v = self.eval(e.value, scope)
                if not isinstance(v, (tuple, list)):
                    raise self.err("AVE118", "only tuples can be unpacked with *", e)
                out.extend(v)
            else:
                out.append(self.eval(e, scope))
        return tuple(out)

    def ev_List(self, node: ast.List, scope: Scope) -> Any:
        return list(self.ev_Tuple(node, scope))  # type: ignore[arg-type]

    def ev_Dict(self, node: ast.Dict, scope: Scope) -> Any:
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise self.err("AVE101", "`**` in dict literals", v)
            out[self.eval_ct(k, scope)] = self.eval_ct(v, scope)
        return out

    def ev_Slice(self, node: ast.Slice, scope: Scope) -> Any:
        return slice(self.eval(node.lower, scope) if node.lower else None,
                     self.eval(node.upper, scope) if node.upper else None,
                     self.eval(node.step, scope) if node.step else None)

    def ev_IfExp(self, node: ast.IfExp, scope: Scope) -> Any:
        c = self.eval(node.test, scope)
        if isinstance(c, Value):
            return self.h_where_impl(self.as_bool(c, node.test), self.eval(node.body, scope),
                                     self.eval(node.orelse, scope), node)
        return self.eval(node.body if self.truth(c, node.test) else node.orelse, scope)

    def ev_Lambda(self, node: ast.Lambda, scope: Scope) -> Any:
        return LambdaFn(node, self.cur_module, scope)

    def ev_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> Any:
        v = self.eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            if isinstance(v, Value):
                return self.binop("xor", self.as_bool(v, node), True, node)
            return not self.truth(v, node)
        if isinstance(node.op, ast.USub):
            if isinstance(v, Value):
                return self.unary("neg", v, node)
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert):
            if isinstance(v, Value):
                return self.binop("xor", v, -1, node)
            return ~v
        raise self.err("AVE101", "unsupported unary operator", node)

    def ev_BinOp(self, node: ast.BinOp, scope: Scope) -> Any:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.err("AVE101", "the `@` operator (use ave.mma)", node)
        return self.binop(op, self.eval(node.left, scope), self.eval(node.right, scope), node)

    def ev_BoolOp(self, node: ast.BoolOp, scope: Scope) -> Any:
        vals = [self.eval(v, scope) for v in node.values]
        if not any(isinstance(v, Value) for v in vals):
            if isinstance(node.op, ast.And):
                r: Any = True
                for v in vals:
                    r = v
                    if not v:
                        return v
                return r
            for v in vals:
                if v:
                    return v
            return vals[-1]
        op = "and" if isinstance(node.op, ast.And) else "or"
        acc = self.as_bool(vals[0], node)
        for v in vals[1:]:
            acc = self.binop(op, acc, self.as_bool(v, node), node)
        return acc

    def ev_Compare(self, node: ast.Compare, scope: Scope) -> Any:
        left = self.eval(node.left, scope)
        result: Any = None
        for opn, rn in zip(node.ops, node.comparators):
            right = self.eval(rn, scope)
            if isinstance(opn, (ast.In, ast.NotIn, ast.Is, ast.IsNot)):
                if isinstance(left, Value) or isinstance(right, Value):
                    raise self.err("AVE101", "`in`/`is` on runtime values", node)
                r = {ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
                     ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}[
                    type(opn)](left, right)
            else:
                r = self.binop(_CMPOPS[type(opn)], left, right, node)
            result = r if result is None else self.binop("and", result, r, node) \
                if isinstance(r, Value) or isinstance(result, Value) else (result and r)
            left = right
        return result

    def ev_Call(self, node: ast.Call, scope: Scope) -> Any:
        f = self.eval(node.func, scope)
        if isinstance(f, DSLName):
            return self.call_dsl(f.name, node, scope)
        if isinstance(f, HelperFn):
            return self.inline(f, node, scope)
        if isinstance(f, LambdaFn):
            args, kwargs = self.eval_args(node, scope)
            return self.call_lambda(f, args, kwargs, node)
        if isinstance(f, BoundMethod):
            args, kwargs = self.eval_args(node, scope)
            if f.name == "stride":
                if len(args) != 1 or kwargs or not _is_ct_int(args[0]):
                    raise self.err("AVE104", "stride(i) takes one compile-time integer", node)
                if not 0 <= args[0] < f.value.type.rank:
                    raise self.err("AVE119", f"stride({args[0]}) of a rank-{f.value.type.rank} "
                                   "tensor", node)
                return self.tensor_dim(f.value, args[0], "stride", node)
            if f.name == "cast":
                if len(args) != 1 or kwargs:
                    raise self.err("AVE104", ".to(dtype) takes one dtype", node)
                return self.h_cast_impl(f.value, args[0], node)
        if isinstance(f, tuple) and f and f[0] == "builtin":
            return self.call_builtin(f[1], node, scope)
        if isinstance(f, tuple) and f and f[0] == "math":
            args, kwargs = self.eval_args(node, scope)
            if any(isinstance(a, Value) for a in args):
                raise self.err("AVE115", f"math.{f[1]} works on compile-time values only; use "
                               f"ave.{f[1]} on runtime data", node)
            fn = getattr(math, f[1], None)
            if fn is None:
                fn = {"exp2": lambda x: 2.0 ** x}.get(f[1])
            try:
                return fn(*args, **kwargs)  # type: ignore[misc]
            except (TypeError, ValueError, OverflowError) as e:
                raise self.err("AVE120", f"math.{f[1]}: {e}", node) from None
        if isinstance(f, tuple) and f and f[0] == "method":
            _, obj, name, meth = f
            args, kwargs = self.eval_args(node, scope)
            if _contains_value(args) or _contains_value(kwargs):
                raise self.err("AVE115", f"{type(obj).__name__}.{name}() takes compile-time "
                               "arguments", node)
            try:
                return meth(*args, **kwargs)
            except TypeError as e:
                raise self.err("AVE104", f"{type(obj).__name__}.{name}(): {e}", node) from None
            except (ValueError, ZeroDivisionError, IndexError, KeyError) as e:
                raise self.err("AVE120", f"{type(obj).__name__}.{name}(): {e}", node) from None
        if isinstance(f, ExternalModule):
            raise self.err("AVE101", f"`{f.name}` cannot be called inside a kernel", node)
        raise self.err("AVE118", f"{_kind(f)} is not callable", node.func)

    def eval_args(self, node: ast.Call, scope: Scope) -> tuple[list, dict]:
        args: list = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value, scope)
                if not isinstance(v, (tuple, list)):
                    raise self.err("AVE118", "only tuples can be unpacked with *", a)
                args.extend(v)
            else:
                args.append(self.eval(a, scope))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                v = self.eval_ct(k.value, scope)
                if not isinstance(v, dict):
                    raise self.err("AVE118", "only dicts can be unpacked with **", k.value)
                kwargs.update(v)
            else:
                kwargs[k.arg] = self.eval(k.value, scope)
        return args, kwargs

    def call_builtin(self, name: str, node: ast.Call, scope: Scope) -> Any:
        if name == "range":
            raise self.err("AVE101", "range() outside a for loop", node)
        args, kwargs = self.eval_args(node, scope)
        if _contains_value(args) or _contains_value(kwargs):
            if name in ("min", "max") and len(args) == 2 and not kwargs:
                return self.binop(name, args[0], args[1], node)
            if name == "abs" and len(args) == 1:
                return self.unary("abs", args[0], node)
            if name in ("float", "int") and len(args) == 1:
                return self.h_cast_impl(args[0], _dt.f32 if name == "float" else _dt.i32, node)
            if name == "len" and len(args) == 1 and isinstance(args[0], tuple):
                return len(args[0])
            if name in ("tuple", "list") and len(args) == 1 and isinstance(args[0], (tuple, list)):
                return tuple(args[0]) if name == "tuple" else list(args[0])
            if name in ("zip", "enumerate", "reversed"):
                pass
            else:
                raise self.err("AVE115", f"{name}() on runtime values", node)
        fn = {"len": len, "min": min, "max": max, "abs": abs, "int": int, "float": float,
              "bool": bool, "tuple": tuple, "list": list, "zip": lambda *a: tuple(zip(*a)),
              "enumerate": lambda *a: tuple(enumerate(*a)), "isinstance": None,
              "dict": dict, "reversed": lambda a: tuple(reversed(a)), "sum": sum,
              "divmod": divmod, "round": round}[name]
        if fn is None:
            raise self.err("AVE101", f"{name}() in kernels", node)
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            raise self.err("AVE120", f"{name}(): {e}", node) from None

    # ------------------------------------------------------------------ inlining

    def inline(self, f: HelperFn, node: ast.Call, scope: Scope) -> Any:
        if len(self.call_stack) >= MAX_INLINE_DEPTH:
            raise self.err("AVE121", f"helpers nested more than {MAX_INLINE_DEPTH} deep", node)
        if any(n is f.node for n, _ in self._inline_defs):
            raise self.err("AVE114", f"`{f.node.name}` calls itself (helpers are inlined and "
                           "cannot recurse)", node)
        fd = f.node
        if fd.decorator_list:
            raise self.err("AVE101", f"decorated helper `{fd.name}` (a kernel cannot call a "
                           "kernel; helpers must be plain functions)", node)
        args, kwargs = self.eval_args(node, scope)
        callee_scope = Scope(f.module, f.closure)
        self.bind_params(fd.args, args, kwargs, callee_scope, node, fd.name, f.module)
        self._call_stmt[id(node)] = self.cur_stmt
        self.call_stack.append((node, self.cur_module))
        self._inline_defs.append((fd, f.module))
        saved = self.cur_module
        self.cur_module = f.module
        self.files.add(f.module.path)
        try:
            r = self.exec_body(fd.body, callee_scope)
        except AveError as e:
            if e.file and e.file != self.module.path and len(self.call_stack) == 1:
                raise self._relocate(e, node, saved) from None
            raise
        finally:
            self.cur_module = saved
            self.call_stack.pop()
            self._inline_defs.pop()
        return r[1] if r is not None else None

    _inline_defs: list = []

    def _relocate(self, e: AveError, call: ast.AST, module: ModuleContext) -> AveError:
        """An error inside a helper of another file, reported at the call site."""
        rel = Related(ir.Location(e.file, e.range or ZERO_RANGE), f"{e.code}: {e.message}")
        return AveError(e.code, f"{e.message} (in helper called here)",
                        range=module.range_of(call), file=module.path, notes=e.notes,
                        related=[rel, *e.related])

    def bind_params(self, a: ast.arguments, args: list, kwargs: dict, scope: Scope,
                    node: ast.AST, fname: str, module: ModuleContext) -> None:
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.err("AVE101", f"helper `{fname}` uses *args/**kwargs/keyword-only "
                           "parameters", node)
        names = [p.arg for p in a.args]
        defaults = a.defaults
        nd = len(defaults)
        if len(args) > len(names):
            raise self.err("AVE104", f"`{fname}` takes {len(names)} arguments but "
                           f"{len(args)} were given", node)
        for n, v in zip(names, args):
            scope.vars[n] = v
        for k, v in kwargs.items():
            if k not in names:
                raise self.err("AVE104", f"`{fname}` has no parameter `{k}`", node)
            if k in scope.vars:
                raise self.err("AVE104", f"`{fname}` got two values for `{k}`", node)
            scope.vars[k] = v
        for i, n in enumerate(names):
            if n not in scope.vars:
                di = i - (len(names) - nd)
                if di < 0:
                    raise self.err("AVE104", f"`{fname}` is missing the argument `{n}`", node)
                saved = self.cur_module
                self.cur_module = module
                try:
                    scope.vars[n] = self.eval(defaults[di], Scope(module))
                finally:
                    self.cur_module = saved
        # (hover on a helper's parameters: what they stand for in this call)
        for p in a.args:
            v = scope.vars.get(p.arg)
            if isinstance(v, Value):
                # (the name only: an annotated parameter's node spans its annotation; a
                # plain record, not an ast node -- ast constructors on several threads at
                # once raise SystemError in CPython 3.11)
                self._bind(_Span(p.lineno, p.col_offset, p.lineno,
                                 p.col_offset + len(p.arg.encode("utf-8"))), v, p.arg, module)

    def call_lambda(self, f: LambdaFn, args: list, kwargs: dict, node: ast.AST) -> Any:
        sc = Scope(f.module, f.closure)
        self.bind_params(f.node.args, args, kwargs, sc, node, "lambda", f.module)
        saved = self.cur_module
        self.cur_module = f.module
        try:
            return self.eval(f.node.body, sc)
        finally:
            self.cur_module = saved

    # ------------------------------------------------------------------ arithmetic

    def materialize_scalar(self, v: Any, node: ast.AST, like: DType | None = None) -> Value:
        if isinstance(v, Value):
            return v
        if isinstance(v, bool):
            return self.const(v, _dt.i1, node)
        if _is_ct_int(v):
            dt = like if like is not None else _dt.i32
            if dt == _dt.i32 and not -2**31 <= int(v) < 2**31:
                raise self.err("AVE120", f"integer {v} does not fit in i32", node)
            return self.const(int(v) if dt.is_int else float(v), dt, node)
        if _is_ct_num(v):
            dt = like if like is not None and like.is_float else _dt.f32
            return self.const(float(v), dt, node)
        raise self.err("AVE118", f"{_kind(v)} cannot be used as a runtime value", node)

    def as_i32(self, v: Any, node: ast.AST) -> Value:
        if isinstance(v, Value):
            if not (isinstance(v.type, ScalarType) and v.type.dtype.is_int):
                raise self.err("AVE105", f"expected an integer scalar, got {v.type}", node)
            return v
        if not _is_ct_int(v):
            raise self.err("AVE105", f"expected an integer, got {_kind(v)}", node)
        return self.materialize_scalar(v, node)

    def as_bool(self, v: Any, node: ast.AST) -> Value:
        if isinstance(v, Value) and isinstance(v.type, (ScalarType, FragmentType)):
            if v.type.dtype == _dt.i1:
                return v
            return self.binop("ne", v, 0, node)
        if isinstance(v, bool):
            return self.const(v, _dt.i1, node)
        raise self.err("AVE118", f"expected a condition, got {_kind(v)}", node)

    def binop(self, op: str, a: Any, b: Any, node: ast.AST) -> Any:
        if not isinstance(a, Value) and not isinstance(b, Value):
            if op in ("min", "max"):
                return min(a, b) if op == "min" else max(a, b)
            if op == "pow" and _is_ct_int(b) and _is_ct_int(a) and abs(b) > 256:
                raise self.err("AVE121", "integer power too large", node)
            if op == "shl" and _is_ct_int(b) and b > 256:
                raise self.err("AVE121", "shift too large", node)
            if op == "mul" and (isinstance(a, (tuple, list, str)) and _is_ct_int(b) or
                                isinstance(b, (tuple, list, str)) and _is_ct_int(a)):
                seq, n = (a, b) if _is_ct_int(b) else (b, a)
                if len(seq) * max(0, int(n)) > MAX_SEQUENCE:
                    raise self.err("AVE121", f"a compile-time sequence of "
                                   f"{len(seq) * int(n)} elements (limit {MAX_SEQUENCE})", node)
            try:
                r = _PY_BIN[op](a, b)
            except ZeroDivisionError:
                raise self.err("AVE120", "division by zero at compile time", node) from None
            except TypeError as e:
                raise self.err("AVE118", f"unsupported operand types: {e}", node) from None
            except (ValueError, OverflowError, MemoryError) as e:
                raise self.err("AVE120", f"invalid compile-time arithmetic: {e}", node) from None
            if _is_ct_int(r) and abs(int(r)).bit_length() > MAX_INT_BITS:
                raise self.err("AVE121", "integer too large", node)
            return r
        ta = a.type if isinstance(a, Value) else None
        tb = b.type if isinstance(b, Value) else None
        for t in (ta, tb):
            if t is not None and not isinstance(t, (ScalarType, FragmentType)):
                raise self.err("AVE118", f"arithmetic on {t} (only scalars and register "
                               "fragments; load tiles first)", node)
        ref = a if isinstance(a, Value) else b
        dtype = ref.type.dtype
        # python numbers adopt the other operand's dtype
        if not isinstance(a, Value):
            a = self.materialize_scalar(a, node, dtype)
        if not isinstance(b, Value):
            b = self.materialize_scalar(b, node, dtype)
        if a.type.dtype != b.type.dtype:
            if {a.type.dtype, b.type.dtype} <= {_dt.i1, _dt.i32} and op in ("and", "or", "xor"):
                pass
            else:
                raise self.err("AVE105", f"operands of `{op}` have different dtypes "
                               f"({a.type.dtype} and {b.type.dtype}); use ave.cast", node)
        if op in ("and", "or", "xor", "shl", "shr", "floordiv", "mod") and dtype.is_float:
            raise self.err("AVE105", f"`{op}` needs integer operands, not {dtype}", node)
        if isinstance(a.type, FragmentType) and isinstance(b.type, FragmentType):
            # numpy's rule: the operand of lower rank gains leading axes of extent 1 (a full
            # reduction, shape (), scaling a tile: `x * ave.sum(s, axis=0)`, as x[None, None])
            ra, rb = len(a.type.shape), len(b.type.shape)
            if ra < rb:
                a = self.expand_rank(a, rb, node)
            elif rb < ra:
                b = self.expand_rank(b, ra, node)
        rt = self.result_type(a, b, node)
        rdt = _dt.i1 if op in _CMP_NAMES else rt.dtype
        if isinstance(rt, FragmentType):
            rtype: Any = FragmentType(rdt, rt.shape, rt.layout, rt.reg_class)
            a = self.broadcast_to(a, rt, node)
            b = self.broadcast_to(b, rt, node)
        else:
            rtype = ScalarType(rdt)
        name = f"arith.{'cmp' if op in _CMP_NAMES else op}"
        attrs = {"pred": op} if op in _CMP_NAMES else {}
        r = self.emit(name, [a, b], [rtype], node, attrs).result
        if isinstance(rtype, ScalarType) and rdt == _dt.i32:
            # an integer with no affine form (a branch's result, a product of two runtime
            # values) is an opaque term of its own: `k0:k0 + BK` has extent BK whatever k0
            r.affine = _affine(op, _opaque(a), _opaque(b))
        return r

    def unary(self, op: str, a: Value, node: ast.AST) -> Value:
        if not isinstance(a.type, (ScalarType, FragmentType)):
            raise self.err("AVE118", f"`{op}` on {a.type}", node)
        r = self.emit(f"arith.{op}" if op == "neg" else f"math.{op}", [a], [a.type], node).result
        if op == "neg" and a.affine is not None:
            r.affine = {k: -c for k, c in a.affine.items()}
        return r

    def result_type(self, a: Value, b: Value, node: ast.AST) -> Any:
        fa = isinstance(a.type, FragmentType)
        fb = isinstance(b.type, FragmentType)
        if not fa and not fb:
            return a.type
        if fa and not fb:
            return a.type
        if fb and not fa:
            return b.type
        sa, sb = a.type.shape, b.type.shape
        if sa == sb:
            if a.type.layout != b.type.layout and a.type.layout is not None and \
                    b.type.layout is not None:
                raise self.err("AVE116", "operands are distributed over threads differently "
                               "(different TV layouts); use ave.convert", node)
            return a.type if a.type.layout is not None else b.type
        if len(sa) != len(sb):
            raise self.err("AVE116", f"shapes {sa} and {sb} do not broadcast", node)
        full = tuple(max(x, y) for x, y in zip(sa, sb))
        for x, y in zip(sa, sb):
            if x != y and 1 not in (x, y):
                raise self.err("AVE116", f"shapes {sa} and {sb} do not broadcast", node)
        big = a if a.type.shape == full else b if b.type.shape == full else None
        if big is None:
            raise self.err("AVE116", f"shapes {sa} and {sb} do not broadcast", node)
        return big.type

    def expand_rank(self, v: Value, rank: int, node: ast.AST) -> Value:
        """``v[None, ..., :]``: ``v`` with leading axes of extent 1 up to ``rank`` axes."""
        t = v.type
        shape = (1,) * (rank - len(t.shape)) + tuple(t.shape)
        return self.emit("ave.expand_dims", [v], [FragmentType(t.dtype, shape, t.layout,
                                                               t.reg_class)],
                         node, {"shape": shape}).result

    def broadcast_to(self, v: Value, t: FragmentType, node: ast.AST) -> Value:
        if isinstance(v.type, ScalarType):
            return v
        if v.type.shape == t.shape:
            return v
        lay = v.type.layout
        keep = tuple(i for i, s in enumerate(v.type.shape) if s != 1 or t.shape[i] == 1)
        if isinstance(lay, ProjectedLayout):
            if lay.keep != keep:
                raise self.err("AVE116", f"cannot broadcast: the fragment keeps axes {lay.keep} "
                               f"of its reduction but is broadcast along axes {keep}", node)
            if lay.parent != t.layout and not _memoized(
                    self, ("holds_projection", lay, t.layout, keep),
                    lambda: _holds_projection(lay, t.layout, keep)):
                raise self.err("AVE116", "this broadcast needs data other threads hold: some "
                               "thread needs a reduced element it does not hold (reduce a "
                               "fragment distributed like the one you combine it with)", node)
        elif lay is not None:
            raise self.err("AVE116", f"cannot broadcast a fragment of shape {v.type.shape} "
                           f"to {t.shape} without a reduction layout", node)
        bl = BroadcastLayout(t.layout, keep, t.shape)
        return self.emit("ave.broadcast", [v], [FragmentType(v.type.dtype, t.shape, t.layout,
                                                             t.reg_class)], node,
                         {"shape": t.shape, "keep": keep, "layout": bl}).result

    # ------------------------------------------------------------------ indexing runtime values

    def index_value(self, base: Value, elts: list[ast.AST], scope: Scope, node: ast.AST) -> Value:
        t = base.type
        if isinstance(t, FragmentType):
            idx = [self.eval(e, scope) for e in elts]
            if all(isinstance(i, slice) and i == slice(None) or i is None for i in idx) and \
                    sum(1 for i in idx if i is None) >= 1:
                shape = list(t.shape)
                pos = 0
                new_shape: list[int] = []
                for i in idx:
                    if i is None:
                        new_shape.append(1)
                    else:
                        new_shape.append(shape[pos])
                        pos += 1
                if pos != len(shape):
                    raise self.err("AVE116", "`x[:, None]` must list every axis of x", node)
                return self.emit("ave.expand_dims", [base],
                                 [FragmentType(t.dtype, tuple(new_shape), t.layout, t.reg_class)],
                                 node, {"shape": tuple(new_shape)}).result
            raise self.err("AVE101", "fragments can only be indexed as x[:, None] "
                           "(broadcast); load or convert instead", node)
        if isinstance(t, TensorType):
            return self.tile_of(base, t.rank, elts, scope, node, is_tensor=True)
        if isinstance(t, TileType):
            return self.tile_of(base, len(t.shape), elts, scope, node, is_tensor=False)
        raise self.err("AVE118", f"{_kind(base)} cannot be indexed", node)

    def tile_of(self, base: Value, rank: int, elts: list[ast.AST], scope: Scope, node: ast.AST,
                is_tensor: bool) -> Value:
        t = base.type
        if len(elts) > rank:
            raise self.err("AVE119", f"{len(elts)} indices for a rank-{rank} "
                           f"{'tensor' if is_tensor else 'tile'}", node)
        offsets: list[Any] = []
        shape: list[int] = []
        keep: list[int] = []
        dyn: list[Value] = []
        # a gathered view (ave.gather / ave.scatter) has as many rows along its gathered
        # dimension as its index holds: a slice or an index past them read the index out
        # of its bounds (the checker clamped such a row to the last one, and a shifted
        # window of a gather was proved; a review helper)
        g_rows = None
        if is_tensor and isinstance(t, TensorType) and t.gathered_dim is not None and \
                isinstance(base.owner, Op) and base.owner.name in ("ave.gather", "ave.scatter"):
            g_rows = base.owner.attrs.get("rows")
        for d in range(rank):
            e = elts[d] if d < len(elts) else None
            ext_full = None if is_tensor else t.shape[d]
            if g_rows is not None and d == t.gathered_dim:
                ext_full = g_rows
            if e is None or (isinstance(e, ast.Slice) and e.lower is None and e.upper is None):
                if e is not None and e.step is not None:
                    raise self.err("AVE101", "slice steps are not supported", e)
                if ext_full is None:
                    raise self.err("AVE115", f"a full slice `:` of tensor dimension {d} has a "
                                   "runtime extent; slice with a compile-time extent "
                                   "(`i0:i0 + BLOCK`)", e or node)
                offsets.append(0)
                shape.append(ext_full)
                keep.append(d)
                continue
            if isinstance(e, ast.Slice):
                if e.step is not None:
                    raise self.err("AVE101", "slice steps are not supported", e.step)
                lo = self.eval(e.lower, scope) if e.lower is not None else 0
                hi = self.eval(e.upper, scope) if e.upper is not None else ext_full
                if hi is None:
                    raise self.err("AVE115", "open-ended slice of a runtime-sized dimension", e)
                ext = _extent(lo, hi)
                if ext is None:
                    raise self.err("AVE115", "the extent of this slice is not a compile-time "
                                   "constant (write `start:start + EXTENT`)", e)
                if ext <= 0:
                    raise self.err("AVE119", f"empty slice (extent {ext})", e)
                if ext_full is not None and _is_ct_int(lo) and (lo < 0 or lo + ext > ext_full):
                    raise self.err("AVE119", f"slice {lo}:{lo + ext} outside dimension {d} of "
                                   f"extent {ext_full}", e)
                if ext_full is not None and ext > ext_full:
                    raise self.err("AVE119", f"slice extent {ext} larger than dimension {d} "
                                   f"({ext_full})", e)
                offsets.append(self._offset(lo, dyn, e))
                shape.append(ext)
                keep.append(d)
            else:
                i = self.eval(e, scope)
                if _is_ct_int(i) and ext_full is not None and not 0 <= i < ext_full:
                    raise self.err("AVE119", f"index {i} outside dimension {d} of extent "
                                   f"{ext_full}", e)
                if not isinstance(i, Value) and not _is_ct_int(i):
                    raise self.err("AVE118", f"index must be an integer, got {_kind(i)}", e)
                offsets.append(self._offset(i, dyn, e))
        self._limit(_prod(tuple(shape)) if shape else 1, node, "this tile")
        space = "global" if is_tensor else t.space
        dtype = t.dtype
        layout = None if (is_tensor or t.space == "global") else t.layout
        rt = TileType(dtype, tuple(shape), space, layout, None if is_tensor else t.reg_class)
        name = "ave.global_tile" if is_tensor else "ave.subtile"
        return self.emit(name, [base, *dyn], [rt], node,
                         {"offsets": tuple(offsets), "shape": tuple(shape),
                          "keep": tuple(keep)}).result

    def _offset(self, v: Any, dyn: list[Value], node: ast.AST) -> Any:
        if isinstance(v, Value):
            v = self.as_i32(v, node)
            dyn.append(v)
            return ("dyn", len(dyn) - 1)
        if not _is_ct_int(v):
            raise self.err("AVE118", f"offset must be an integer, got {_kind(v)}", node)
        return int(v)

    # ------------------------------------------------------------------ DSL calls

    def bind(self, name: str, node: ast.Call, scope: Scope) -> dict[str, Any]:
        """Evaluate the arguments of a call of ``ave.<name>`` and bind them to its parameters
        (defaults applied); a binding error is AVE104."""
        args, kwargs = self.eval_args(node, scope)
        try:
            return _binder(name).bind(args, kwargs)
        except TypeError as e:
            raise self.err("AVE104", f"ave.{name}(): {e}", node) from None

    def call_dsl(self, name: str, node: ast.Call, scope: Scope) -> Any:
        names = self.lang.names
        if name in ("tag",):
            return self.h_tag(node, scope)
        handler = getattr(self, "h_" + name, None)
        if name in names.DSL_FUNCTIONS:
            if handler is None:
                raise self.err("AVE101", f"ave.{name} is not supported by this front end yet",
                               node)
            return handler(node, scope, **self.bind(name, node, scope))
        # compile-time constructors (layouts, atoms, dtypes, cdiv, swizzle, label...)
        obj = getattr(self.lang, name, None)
        if obj is None:
            raise self.err("AVE102", f"`ave.{name}` is not part of the DSL", node)
        if name == "kernel":
            raise self.err("AVE101", "ave.kernel inside a kernel", node)
        if name == "label":
            raise self.err("AVE101", "ave.label() is only meaningful as the result of a tag "
                           "function", node)
        args, kwargs = self.eval_args(node, scope)
        if _contains_value(args) or _contains_value(kwargs):
            raise self.err("AVE115", f"ave.{name}() is computed at compile time: its arguments "
                           "must be compile-time values", node)
        if not callable(obj):
            raise self.err("AVE118", f"ave.{name} is not callable", node)
        try:
            if name in _SHARED_CONSTRUCTORS:
                return _memoized(self, ("dsl", name, _typed_key(args), _typed_key(kwargs)),
                                 lambda: obj(*args, **kwargs))
            return obj(*args, **kwargs)
        except TypeError as e:
            raise self.err("AVE104", f"ave.{name}(): {e}", node) from None
        except (ValueError, ZeroDivisionError, IndexError, KeyError, AssertionError) as e:
            raise self.err("AVE120", f"ave.{name}(): {e}", node) from None

    # ---- ids

    def _id(self, opname: str, node: ast.AST, attrs: dict | None = None) -> Value:
        r = self.emit(opname, [], [ScalarType(_dt.i32)], node, attrs).result
        r.affine = {r: 1}
        return r

    def h_thread_id(self, node, sc):
        return self._id("ave.thread_id", node)

    def h_warp_id(self, node, sc):
        return self._id("ave.warp_id", node)

    def h_lane_id(self, node, sc):
        return self._id("ave.lane_id", node)

    def h_warp_group_id(self, node, sc):
        return self._id("ave.warp_group_id", node)

    def h_program_id(self, node, sc, axis):
        if axis not in (0, 1, 2):
            raise self.err("AVE120", "program_id axis must be 0, 1 or 2", node)
        return self._id("ave.program_id", node, {"axis": axis})

    def h_num_programs(self, node, sc, axis):
        if axis not in (0, 1, 2):
            raise self.err("AVE120", "num_programs axis must be 0, 1 or 2", node)
        return self._id("ave.num_programs", node, {"axis": axis})

    # ---- tiles

    def _limit(self, n: int, node: ast.AST, what: str) -> None:
        if n > MAX_TILE_ELEMENTS:
            raise self.err("AVE121", f"{what} has {n} elements; tiles are limited to "
                           f"{MAX_TILE_ELEMENTS} elements (a workgroup's tile, not a tensor)",
                           node)

    def _shape(self, shape: Any, node: ast.AST, what: str = "shape") -> tuple[int, ...]:
        if _is_ct_int(shape):
            shape = (shape,)
        if isinstance(shape, list):
            shape = tuple(shape)
        if not isinstance(shape, tuple) or not shape:
            raise self.err("AVE115" if _contains_value(shape) else "AVE118",
                           f"{what} must be a tuple of compile-time integers", node)
        for s in shape:
            if isinstance(s, Value):
                raise self.err("AVE115", f"{what} must be known at compile time", node)
            if not _is_ct_int(s) or s <= 0:
                raise self.err("AVE118", f"{what} entries must be positive integers, got {s!r}",
                               node)
        return tuple(int(s) for s in shape)

    def _dtype(self, d: Any, node: ast.AST) -> DType:
        if not isinstance(d, DType):
            raise self.err("AVE105", f"expected a dtype (ave.bf16, ...), got {_kind(d)}", node)
        return d

    def _check_layout_covers(self, layout: Any, shape: tuple, node: ast.AST, what: str) -> None:
        L = _LAYOUT
        lshape = getattr(layout, "shape", None)
        if lshape is None or not hasattr(layout, "size"):
            raise self.err("AVE118", f"{what}: expected a layout, got {_kind(layout)}", node)
        if isinstance(layout, L.TVLayout):
            raise self.err("AVE118", f"{what}: a TV layout (thread, value) describes register "
                           "fragments, not memory; use a shape:stride layout", node)
        lsh = lshape if isinstance(lshape, tuple) else (lshape,)
        sizes = tuple(_prod(m) for m in lsh)
        if len(sizes) != len(shape) or sizes != tuple(shape):
            raise self.err("AVE107", f"{what}: layout {layout!r} has mode sizes "
                           f"{sizes} but the tile's shape is {tuple(shape)}", node)

    def h_alloc(self, node, sc, shape, dtype, space, layout, reg_class):
        shape = self._shape(shape, _arg_node(node, "shape", 0))
        dtype = self._dtype(dtype, _arg_node(node, "dtype", 1))
        if space not in ("shared", "register"):
            raise self.err("AVE120", f"space must be 'shared' or 'register', got {space!r}",
                           _arg_node(node, "space", 2))
        L = _LAYOUT
        if layout is None:
            layout = L.row_major(shape)
        else:
            self._check_layout_covers(layout, shape, _arg_node(node, "layout", 3), "alloc")
        if reg_class not in (None, "vgpr", "agpr", "sgpr"):
            raise self.err("AVE120", f"reg_class must be 'vgpr', 'agpr' or 'sgpr', got "
                           f"{reg_class!r}", _arg_node(node, "reg_class", 4))
        try:
            cos = int(layout.cosize)
        except Exception as e:
            raise self.err("AVE120", f"cannot evaluate the layout: {e}", node) from None
        self._limit(_prod(shape), node, "this allocation")
        if space == "shared":
            self.shared_bytes = getattr(self, "shared_bytes", 0) + cos * dtype.bytes
            cap = SHARED_BYTES.get(self.target, SHARED_BYTES["nvidia"])
            if self.shared_bytes > cap:
                raise self.err("AVE121", f"shared memory allocations total {self.shared_bytes} "
                               f"bytes, more than the {cap} bytes a workgroup can use on "
                               f"{'sm_90' if self.target == 'nvidia' else 'CDNA3'}", node)
        t = TileType(dtype, shape, space, layout, reg_class)
        return self.emit("ave.alloc", [], [t], node,
                         {"shape": shape, "dtype": dtype, "space": space, "layout": layout,
                          "reg_class": reg_class, "cosize": cos,
                          "bytes": cos * dtype.bytes}).result

    def _tile(self, v: Any, node: ast.AST, what: str, spaces: tuple = ("global", "shared",
                                                                          "register")) -> Value:
        if not isinstance(v, Value) or not isinstance(v.type, TileType):
            hint = " (slice the tensor first: `A[i0:i0 + BM, ...]`)" if isinstance(v, Value) and \
                isinstance(v.type, TensorType) else ""
            raise self.err("AVE118", f"{what} must be a tile, got {_kind(v)}{hint}", node)
        if v.type.space not in spaces:
            raise self.err("AVE118", f"{what} must be a tile in {' or '.join(spaces)} memory, "
                           f"not {v.type.space}", node)
        return v

    def _frag(self, v: Any, node: ast.AST, what: str) -> Value:
        if not isinstance(v, Value) or not isinstance(v.type, FragmentType):
            raise self.err("AVE118", f"{what} must be a register fragment, got {_kind(v)}", node)
        return v

    def h_view(self, node, sc, tile, shape, dtype, layout):
        src = self._tile(tile, _arg_node(node, "tile", 0), "ave.view's source",
                         ("shared", "register"))
        shape = self._shape(shape, _arg_node(node, "shape", 1))
        dtype = src.type.dtype if dtype is None else self._dtype(dtype, _arg_node(node, "dtype", 2))
        L = _LAYOUT
        if layout is None:
            layout = L.row_major(shape)
        else:
            self._check_layout_covers(layout, shape, _arg_node(node, "layout", 3), "ave.view")
        if not _contiguous_tile(self, src):
            raise self.err("AVE106", "ave.view reinterprets the bytes of a contiguous tile; "
                           "this slice is strided in memory (view the whole allocation or a "
                           "whole stage, then slice the view)", node)
        src_bytes = src.type.nbytes
        dst_bytes = _prod(shape) * dtype.bytes
        if src_bytes != dst_bytes:
            raise self.err("AVE106", f"ave.view changes the byte size: the source covers "
                           f"{src_bytes} bytes ({'x'.join(map(str, src.type.shape))} x "
                           f"{src.type.dtype}) but the view covers {dst_bytes} bytes "
                           f"({'x'.join(map(str, shape))} x {dtype})", node,
                           fix=self._view_shape_fix(_arg_node(node, "shape", 1), shape,
                                                    dtype, src_bytes))
        t = TileType(dtype, shape, src.type.space, layout, src.type.reg_class)
        return self.emit("ave.view", [src], [t], node,
                         {"shape": shape, "dtype": dtype, "layout": layout}).result

    def _view_shape_fix(self, shape_node: ast.AST | None, shape: tuple, dtype: DType,
                        src_bytes: int) -> dict | None:
        """The ``view_shape`` fix of an AVE106 byte mismatch (see ave_lsp/server/fixes.py):
        scale the innermost extent of the view's shape so that the view covers exactly
        ``src_bytes`` bytes. Only offered when that is mechanical and unambiguous: the
        shape is written as a tuple (or list) display without ``*``, and the innermost
        extent comes out a positive integer. A literal extent is replaced by the number;
        an expression (a constexpr ``BK``) is scaled (``BK // 2``, ``BK * 2``), so the fix
        stays right for every specialization with the same ratio."""
        if not isinstance(shape_node, (ast.Tuple, ast.List)) or \
                len(shape_node.elts) != len(shape) or \
                any(isinstance(e, ast.Starred) for e in shape_node.elts):
            return None
        if self.call_stack or self.static_depth:
            # the statement may run again with another source (a helper called twice, a
            # loop over tiles): a fix right for this one broke the other, whose fix broke
            # this one again (a review helper)
            return None
        outer = _prod(shape[:-1]) * dtype.bytes
        if outer <= 0 or src_bytes % outer:
            return None
        inner = src_bytes // outer
        if inner <= 0 or inner == shape[-1]:
            return None
        node = shape_node.elts[-1]
        old = self.cur_module.source.segment(node)
        if old is None:
            return None
        if isinstance(node, ast.Constant) and _is_ct_int(node.value):
            new = str(inner)
        else:
            from fractions import Fraction
            r = Fraction(inner, shape[-1])
            atom = old if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript,
                                            ast.Call, ast.Constant)) else f"({old})"
            if r.denominator == 1:
                new = f"{atom} * {r.numerator}"
            elif r.numerator == 1:
                new = f"{atom} // {r.denominator}"
            else:
                new = f"{atom} * {r.numerator} // {r.denominator}"
        new_shape = [*shape[:-1], inner]
        return {"kind": "view_shape", "range": self.cur_module.range_of(node).to_json(),
                "old": old, "new": new, "shape": new_shape, "dtype": str(dtype),
                "bytes": src_bytes}

    def h_transpose(self, node, sc, tile, perm):
        v = self._tile(tile, _arg_node(node, "tile", 0), "ave.transpose's operand")
        n = len(v.type.shape)
        perm = tuple(reversed(range(n))) if perm is None else perm
        if not isinstance(perm, tuple) or sorted(perm) != list(range(n)):
            raise self.err("AVE120", f"perm must be a permutation of 0..{n - 1}", node)
        return self.h_transpose_impl(v, perm, node)

    def h_transpose_impl(self, v: Value, perm: tuple, node: ast.AST) -> Value:
        t = v.type
        if not isinstance(t, TileType):
            raise self.err("AVE118", f"transpose needs a tile, got {_kind(v)}", node)
        shape = tuple(t.shape[p] for p in perm)
        rt = TileType(t.dtype, shape, t.space, t.layout, t.reg_class)
        return self.emit("ave.transpose", [v], [rt], node, {"perm": perm}).result

    def h_gather(self, node, sc, tensor, index, dim):
        return self._gather("ave.gather", node, tensor, index, dim)

    def h_scatter(self, node, sc, tensor, index, dim):
        return self._gather("ave.scatter", node, tensor, index, dim)

    def _gather(self, opname, node, tensor, index, dim):
        if not isinstance(tensor, Value) or not isinstance(tensor.type, TensorType):
            raise self.err("AVE118", f"{opname} needs a tensor, got {_kind(tensor)}",
                           _arg_node(node, "tensor", 0))
        if not isinstance(index, Value) or not isinstance(index.type, (TileType, FragmentType)):
            raise self.err("AVE118", f"{opname}'s index must be an i32 tile or fragment, got "
                           f"{_kind(index)}", _arg_node(node, "index", 1))
        if index.type.dtype != _dt.i32:
            raise self.err("AVE105", f"{opname}'s index must be i32, not {index.type.dtype}",
                           _arg_node(node, "index", 1))
        if len(index.type.shape) != 1:
            raise self.err("AVE116", f"{opname}'s index must be 1-D, got shape "
                           f"{index.type.shape}", _arg_node(node, "index", 1))
        if not _is_ct_int(dim) or not 0 <= dim < tensor.type.rank:
            raise self.err("AVE120", f"dim must be in 0..{tensor.type.rank - 1}", node)
        t = TensorType(tensor.type.dtype, tensor.type.rank, dim)
        return self.emit(opname, [tensor, index], [t], node,
                         {"dim": dim, "rows": index.type.shape[0]}).result

    # ---- masks

    def mask_region(self, fn: Any, tile: Value, node: ast.AST, what: str) -> Block | None:
        if fn is None:
            return None
        if not isinstance(fn, LambdaFn):
            raise self.err("AVE118", f"{what}'s mask must be a lambda over coordinates "
                           "(`mask=lambda m, k: m < M`)", node)
        rank = _coord_rank(tile)
        nparams = len(fn.node.args.args)
        if nparams != rank:
            raise self.err("AVE104", f"the mask lambda takes {nparams} coordinates but the "
                           f"{'tensor' if tile.type.space == 'global' else 'tile'} has {rank} "
                           "dimensions", fn.node)
        blk = Block()
        coords = [blk.add_arg(ScalarType(_dt.i32), a.arg) for a in fn.node.args.args]
        for c in coords:
            c.affine = {c: 1}
        saved = self.block
        self.block = blk
        try:
            r = self.call_lambda(fn, list(coords), {}, node)
            r = self.as_bool(r, fn.node.body)
            self.emit("ave.yield", [r], [], fn.node.body)
        finally:
            self.block = saved
        # a mask is arithmetic on its coordinates and on values computed before it: a DSL
        # call inside it (ave.thread_id(), ave.load) was accepted here and rejected by the
        # interpreter when it ran ("not allowed in a mask")
        for op in blk.ops:
            if not op.name.startswith(("arith.", "math.", "ave.yield")):
                raise self.err("AVE101", f"{op.name} inside a mask: a mask may only compute "
                               "on its coordinates and on values computed before it (`t = "
                               "ave.thread_id()` before the call, then `mask=lambda m: m < t`)",
                               fn.node.body)
        return blk

    # ---- data movement

    def _check_vectors(self, tile: Value, vector_bytes: int, vb_node: ast.AST,
                       node: ast.AST, what: str) -> None:
        t = tile.type
        eb = t.dtype.bytes
        if vector_bytes not in (1, 2, 4, 8, 16):
            raise self.err("AVE108", f"vector_bytes must be 1, 2, 4, 8 or 16, got "
                           f"{vector_bytes!r}", vb_node)
        if vector_bytes < eb:
            raise self.err("AVE108", f"vector_bytes={vector_bytes} is smaller than one "
                           f"{t.dtype} element ({eb} bytes)", vb_node)
        row_bytes = t.shape[-1] * eb
        if row_bytes % vector_bytes:
            raise self.err("AVE108", f"vector_bytes={vector_bytes} does not divide the tile's "
                           f"rows of {t.shape[-1]} x {t.dtype} = {row_bytes} bytes", vb_node)
        n = vector_bytes // eb
        if n == 1:
            return
        bad = _vector_violation(self, tile, n)
        if bad is not None:
            coord, offs, why = bad
            raise self.err("AVE109", f"{what}: the {vector_bytes}-byte vector at tile "
                           f"coordinate {coord} is {why} (element offsets {offs})", node)

    def _check_thread_vectors(self, layout: Any, dtype: DType, vector_bytes: int,
                              node: ast.AST, what: str) -> None:
        """A register <-> memory vector access moves ``vector_bytes`` of consecutive values
        of one thread: those values must be consecutive elements along the innermost
        dimension (AVE109)."""
        n = vector_bytes // dtype.bytes
        if n <= 1 or not hasattr(layout, "coords_table"):
            return
        bad = _memoized(self, ("thread_vectors", layout, n),
                        lambda: _thread_vector_violation(layout, n))
        if bad is None:
            return
        if len(bad) == 1:
            raise self.err("AVE109", f"{what}: each thread holds {bad[0]} values, not a "
                           f"multiple of the {n} elements of a {vector_bytes}-byte vector", node)
        t, grp, coords = bad
        raise self.err("AVE109", f"{what}: thread {t}'s values {grp * n}..{grp * n + n - 1} "
                       f"are not {n} consecutive, aligned elements of a row ({coords}); "
                       f"a {vector_bytes}-byte vector cannot move them", node)

    def _check_copy(self, node, src, dst, vector_bytes, what, async_: bool):
        s = self._tile(src, _arg_node(node, "src", 0), f"{what}'s source")
        d = self._tile(dst, _arg_node(node, "dst", 1), f"{what}'s destination")
        if async_:
            if s.type.space != "global" or d.type.space != "shared":
                raise self.err("AVE118", f"{what} copies global memory to shared memory "
                               f"(got {s.type.space} -> {d.type.space})", node)
        if s.type.shape != d.type.shape:
            raise self.err("AVE116", f"{what}: source shape {s.type.shape} and destination "
                           f"shape {d.type.shape} differ", node)
        if s.type.dtype != d.type.dtype:
            raise self.err("AVE105", f"{what}: source dtype {s.type.dtype} and destination "
                           f"dtype {d.type.dtype} differ (copies do not convert)", node)
        vb_node = _arg_node(node, "vector_bytes", 2) or node
        if not _is_ct_int(vector_bytes):
            raise self.err("AVE115", "vector_bytes must be a compile-time integer", vb_node)
        self._check_vectors(s, vector_bytes, vb_node, node, f"{what} source")
        self._check_vectors(d, vector_bytes, vb_node, node, f"{what} destination")
        return s, d

    def _threads_layout(self, threads: Any, node: ast.AST) -> Any:
        if threads is None:
            return None
        if _is_ct_int(threads) and not isinstance(threads, bool):
            # the number of threads sharing the copy: threads 0 .. n-1, as documented
            # (ave.copy's docstring; it was AVE118 "must be a layout"; a review helper)
            if not 0 < int(threads) <= self.threads:
                raise self.err("AVE107", f"threads={int(threads)}: the workgroup has "
                               f"{self.threads} threads", node)
            from ave_core.lang.layout import Layout
            return Layout(int(threads), 1)
        if not hasattr(threads, "size") or not hasattr(threads, "shape"):
            raise self.err("AVE118", "threads= must be a thread count or a layout of thread "
                           "ids", node)
        if threads.size > self.threads:
            raise self.err("AVE107", f"threads= layout has {threads.size} threads but the "
                           f"workgroup has {self.threads}", node)
        return threads

    def _copy(self, name, node, scope, src, dst, vector_bytes, threads, mask, other, async_):
        s, d = self._check_copy(node, src, dst, vector_bytes, f"ave.{name}", async_)
        thr = self._threads_layout(threads, _arg_node(node, "threads", 3) or node)
        # the mask guards the global side: masked global reads give `other`, masked global
        # writes are skipped; its lambda takes that side's coordinates
        side = d if d.type.space == "global" and s.type.space != "global" else s
        region = self.mask_region(mask, side, _arg_node(node, "mask", 4) or node, f"ave.{name}")
        other = self._fill(other, s.type.dtype, node, _arg_node(node, "other", 5))
        self.emit(f"ave.{name}", [s, d], [], node,
                  {"vector_bytes": vector_bytes, "threads": thr, "other": other,
                   "masked": region is not None,
                   "mask_side": "dst" if side is d and side is not s else "src"}, [region] if region is not None else [])
        return None

    def _fill(self, other: Any, dtype: DType, node: ast.AST, at: ast.AST | None = None) -> Any:
        """The compile-time fill value ``other`` of a masked read of ``dtype`` elements
        (``at``: its argument's node, for the range of a diagnostic)."""
        if isinstance(other, Value):
            raise self.err("AVE115", "the fill value `other` must be a compile-time number",
                           node)
        if not _is_ct_num(other) and not isinstance(other, bool):
            raise self.err("AVE118", f"the fill value must be a number, got {_kind(other)}", node)
        return self._fits(other, dtype, at or node, "the fill value `other`")

    def _fits(self, value: Any, dtype: DType, node: ast.AST, what: str) -> Any:
        """A compile-time ``value`` written into elements of an integer ``dtype`` must be an
        integer the dtype holds (``i8``: -128..127, ``u8``: 0..255; a bool is 0 or 1); a
        float with no fractional part counts as that integer. Without this, 300 as an
        ``i8`` silently became 44 (the store wraps it) and 3.7 became 3 (numpy 2 raises
        ``OverflowError`` for the first; C compilers warn, ``-Woverflow``). An ``i1`` is a
        predicate: any number, nonzero is true.

        Raises:
            FrontendError: AVE118 with the dtype's range, at ``node``.
        """
        if dtype.int_range is None or isinstance(value, (bool, np.bool_)):
            return value
        v = value
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(v) or v != math.floor(v):
                raise self.err("AVE118", f"{what} {v!r} is not an integer, but the elements "
                               f"are {dtype} (integers)", node)
            v = int(v)
        v = int(v)
        lo, hi = dtype.int_range
        if not lo <= v <= hi:
            raise self.err("AVE118", f"{what} {value!r} does not fit {dtype} ({lo}..{hi}); "
                           f"a store would wrap it to {(v - lo) % (hi - lo + 1) + lo}", node)
        return value

    def h_copy(self, node, sc, src, dst, vector_bytes, threads, mask, other):
        return self._copy("copy", node, sc, src, dst, vector_bytes, threads, mask, other, False)

    def h_copy_async(self, node, sc, src, dst, vector_bytes, threads, mask, other):
        return self._copy("copy_async", node, sc, src, dst, vector_bytes, threads, mask,
                          other, True)

    def h_commit_async(self, node, sc):
        self.emit("ave.commit_async", [], [], node)

    def h_wait_async(self, node, sc, n):
        if not _is_ct_int(n) or n < 0:
            raise self.err("AVE115", "ave.wait_async(n) needs a compile-time n >= 0", node)
        attrs = {"n": int(n)}
        arg = _arg_node(node, "n", 0)
        if isinstance(arg, ast.Constant) and type(arg.value) is int:
            # where the count is written, as a literal (the analysis' quick fix of a
            # wait with too high a count rewrites it: "set_wait_count")
            r = self.cur_module.range_of(arg)
            txt = self.cur_module.source.segment(arg)
            if txt is not None:
                attrs["n_literal"] = (r.start.line, r.start.character, r.end.line,
                                      r.end.character, txt)
        self.emit("ave.wait_async", [], [], node, attrs)

    def h_barrier(self, node, sc):
        self.emit("ave.barrier", [], [], node)

    def h_sched_barrier(self, node, sc, mask):
        if not _is_ct_int(mask):
            raise self.err("AVE115", "ave.sched_barrier(mask) needs a compile-time mask", node)
        self.emit("ave.sched_barrier", [], [], node, {"mask": int(mask)})

    def h_reset(self, node, sc, tile):
        v = self._tile(tile, _arg_node(node, "tile", 0), "ave.reset's operand", ("shared",))
        self.emit("ave.reset", [v], [], node)

    def _tv(self, layout: Any, shape: tuple, node: ast.AST, what: str) -> Any:
        L = _LAYOUT
        if not isinstance(layout, L.TVLayout):
            raise self.err("AVE118", f"{what}: expected a TV layout (thread, value) -> "
                           f"coordinate, e.g. tiled.a; got {_kind(layout)}", node)
        if tuple(layout.tile_shape) != tuple(shape):
            raise self.err("AVE107", f"{what}: the TV layout distributes a "
                           f"{_fmt_shape(layout.tile_shape)} tile but the tile is "
                           f"{_fmt_shape(shape)}", node)
        self._limit(int(layout.num_threads) * int(layout.num_values), node, f"{what}'s TV layout")
        if layout.num_threads != self.threads:
            raise self.err("AVE107", f"{what}: the TV layout spans {layout.num_threads} threads "
                           f"but the kernel has threads={self.threads}", node)
        if not layout.covers():
            raise self.err("AVE107", f"{what}: the TV layout leaves elements of the "
                           f"{_fmt_shape(shape)} tile without a thread", node)
        return layout

    def h_load(self, node, sc, src, layout, vector_bytes, mask, other):
        s = self._tile(src, _arg_node(node, "src", 0), "ave.load's source")
        lay = self._tv(layout, s.type.shape, _arg_node(node, "layout", 1) or node, "ave.load")
        if vector_bytes is not None:
            vb_node = _arg_node(node, "vector_bytes", 2) or node
            if not _is_ct_int(vector_bytes):
                raise self.err("AVE115", "vector_bytes must be a compile-time integer", vb_node)
            self._check_vectors(s, vector_bytes, vb_node, node, "ave.load source")
            self._check_thread_vectors(lay, s.type.dtype, vector_bytes, vb_node, "ave.load")
        region = self.mask_region(mask, s, _arg_node(node, "mask", 3) or node, "ave.load")
        other = self._fill(other, s.type.dtype, node, _arg_node(node, "other", 4))
        t = FragmentType(s.type.dtype, s.type.shape, lay)
        return self.emit("ave.load", [s], [t], node,
                         {"layout": lay, "vector_bytes": vector_bytes, "other": other,
                          "ldmatrix": False, "masked": region is not None},
                         [region] if region is not None else []).result

    def h_ldmatrix(self, node, sc, src, layout):
        s = self._tile(src, _arg_node(node, "src", 0), "ave.ldmatrix's source", ("shared",))
        if s.type.dtype.bytes != 2:
            raise self.err("AVE105", f"ldmatrix moves 16-bit elements; the tile is "
                           f"{s.type.dtype}", node)
        lay = self._tv(layout, s.type.shape, _arg_node(node, "layout", 1) or node,
                       "ave.ldmatrix")
        if id(lay) not in self.mma_operand_layouts:
            raise self.err("AVE110", "ave.ldmatrix needs the A or B operand layout of an "
                           "mma.sync tiled MMA (tiled.a / tiled.b)", node)
        bad = _ldmatrix_violation(self, s)
        if bad is not None:
            raise self.err("AVE109", f"ave.ldmatrix: {bad}", node)
        t = FragmentType(s.type.dtype, s.type.shape, lay)
        return self.emit("ave.load", [s], [t], node,
                         {"layout": lay, "vector_bytes": None, "other": 0, "ldmatrix": True,
                          "masked": False}).result

    def h_store(self, node, sc, dst, value, vector_bytes, mask):
        d = self._tile(dst, _arg_node(node, "dst", 0), "ave.store's destination")
        v = self._frag(value, _arg_node(node, "value", 1), "ave.store's value")
        lay = v.type.layout
        if lay is not None and (isinstance(lay, (ProjectedLayout, BroadcastLayout))
                                or not hasattr(lay, "coords_table")
                                or len(lay.tile_shape) != len(v.type.shape)):
            # (x[:, None] keeps x's layout over fewer axes than its shape: the store raised
            # IndexError in the checker; a review helper)
            raise self.err("AVE118", "ave.store of a reduced, broadcast or expanded (x[:, None]) "
                           "fragment is not supported yet: ave.convert the reduced fragment "
                           "to a TV layout over its shape first, and store it into a tile of "
                           "that shape (C[m0:m0 + BM, n] for one column)", node)
        if d.type.shape != v.type.shape:
            raise self.err("AVE116", f"ave.store: tile shape {d.type.shape} and fragment shape "
                           f"{v.type.shape} differ", node)
        if d.type.dtype != v.type.dtype:
            raise self.err("AVE105", f"ave.store: the tile holds {d.type.dtype} but the "
                           f"fragment is {v.type.dtype}; ave.cast it first", node)
        if vector_bytes is not None:
            vb_node = _arg_node(node, "vector_bytes", 2) or node
            if not _is_ct_int(vector_bytes):
                raise self.err("AVE115", "vector_bytes must be a compile-time integer", vb_node)
            self._check_vectors(d, vector_bytes, vb_node, node, "ave.store destination")
            self._check_thread_vectors(v.type.layout, d.type.dtype, vector_bytes, vb_node,
                                       "ave.store")
        region = self.mask_region(mask, d, _arg_node(node, "mask", 3) or node, "ave.store")
        self.emit("ave.store", [d, v], [], node, {"vector_bytes": vector_bytes,
                                                  "masked": region is not None},
                  [region] if region is not None else [])

    # ---- fragments

    def h_zeros(self, node, sc, shape, dtype, layout):
        return self.h_full_impl(node, shape, 0, dtype, layout)

    def h_full(self, node, sc, shape, value, dtype, layout):
        return self.h_full_impl(node, shape, value, dtype, layout)

    def h_full_impl(self, node, shape, value, dtype, layout):
        shape = self._shape(shape, _arg_node(node, "shape", 0))
        dtype = self._dtype(dtype, _arg_node(node, "dtype", 2 if value is not None else 1))
        lay = self._tv(layout, shape, _arg_node(node, "layout", 3) or node, "fragment")
        if isinstance(value, Value):
            if not isinstance(value.type, ScalarType):
                raise self.err("AVE118", "the fill value must be a scalar", node)
            ops = [value]
            val = None
        else:
            if not _is_ct_num(value) and not isinstance(value, bool):
                raise self.err("AVE118", f"the fill value must be a number, got {_kind(value)}",
                               node)
            ops, val = [], self._fits(value, dtype, _arg_node(node, "value", 1) or node,
                                      "the fill value")
        t = FragmentType(dtype, shape, lay)
        return self.emit("ave.full", ops, [t], node, {"value": val, "layout": lay}).result

    def h_coord(self, node, sc, shape, axis, layout):
        shape = self._shape(shape, _arg_node(node, "shape", 0))
        if not _is_ct_int(axis) or not 0 <= axis < len(shape):
            raise self.err("AVE120", f"axis must be a compile-time integer in 0..{len(shape) - 1}",
                           _arg_node(node, "axis", 1) or node)
        lay = self._tv(layout, shape, _arg_node(node, "layout", 2) or node, "ave.coord")
        t = FragmentType(_dt.i32, shape, lay)
        return self.emit("ave.coord", [], [t], node, {"axis": int(axis), "layout": lay}).result

    def _math(self, name, node, x):
        if not isinstance(x, Value):
            if _is_ct_num(x):
                try:
                    return {"exp": math.exp, "exp2": lambda a: 2.0 ** a, "log": math.log,
                            "log2": math.log2, "sqrt": math.sqrt,
                            "rsqrt": lambda a: 1 / math.sqrt(a), "abs": abs}[name](x)
                except (ValueError, ZeroDivisionError, OverflowError) as e:
                    raise self.err("AVE120", f"ave.{name}({x}): {e}", node) from None
            raise self.err("AVE118", f"ave.{name} needs a number or fragment, got {_kind(x)}",
                           node)
        if name != "abs" and not x.type.dtype.is_float:
            raise self.err("AVE105", f"ave.{name} needs a floating-point operand, not "
                           f"{x.type.dtype}", node)
        return self.unary(name, x, node)

    def h_exp(self, node, sc, x): return self._math("exp", node, x)
    def h_exp2(self, node, sc, x): return self._math("exp2", node, x)
    def h_log(self, node, sc, x): return self._math("log", node, x)
    def h_log2(self, node, sc, x): return self._math("log2", node, x)
    def h_sqrt(self, node, sc, x): return self._math("sqrt", node, x)
    def h_rsqrt(self, node, sc, x): return self._math("rsqrt", node, x)
    def h_abs(self, node, sc, x): return self._math("abs", node, x)

    def h_maximum(self, node, sc, a, b):
        return self.binop("max", a, b, node)

    def h_minimum(self, node, sc, a, b):
        return self.binop("min", a, b, node)

    def h_where(self, node, sc, cond, a, b):
        return self.h_where_impl(cond, a, b, node)

    def h_where_impl(self, cond, a, b, node):
        if not isinstance(cond, Value):
            return a if cond else b
        c = self.as_bool(cond, node)
        ref = a if isinstance(a, Value) else b
        if not isinstance(ref, Value):
            dt = _dt.f32 if isinstance(a, float) or isinstance(b, float) else _dt.i32
            a, b = self.materialize_scalar(a, node, dt), self.materialize_scalar(b, node, dt)
            ref = a
        dt = ref.type.dtype
        a = a if isinstance(a, Value) else self.materialize_scalar(a, node, dt)
        b = b if isinstance(b, Value) else self.materialize_scalar(b, node, dt)
        if a.type.dtype != b.type.dtype:
            raise self.err("AVE105", f"ave.where: branches have dtypes {a.type.dtype} and "
                           f"{b.type.dtype}", node)
        # (numpy's rank rule, as for arithmetic: `ave.where(c, x, tot)` with tot of shape ())
        frs = [x for x in (c, a, b) if isinstance(x.type, FragmentType)]
        rank = max((len(x.type.shape) for x in frs), default=0)
        c, a, b = (self.expand_rank(x, rank, node) if isinstance(x.type, FragmentType) and
                   len(x.type.shape) < rank else x for x in (c, a, b))
        rt = self.result_type(a, b, node)
        rt = self.result_type(c, Value(rt), node) if isinstance(c.type, FragmentType) else rt
        if isinstance(rt, FragmentType):
            rt = FragmentType(dt, rt.shape, rt.layout, rt.reg_class)
            a, b, c = (self.broadcast_to(x, rt, node) for x in (a, b, c))
        return self.emit("arith.select", [c, a, b], [rt], node).result

    def h_cast(self, node, sc, x, dtype):
        return self.h_cast_impl(x, dtype, node)

    def h_cast_impl(self, x, dtype, node):
        dtype = self._dtype(dtype, node)
        if not isinstance(x, Value):
            if _is_ct_num(x):
                return float(x) if dtype.is_float else int(x)
            raise self.err("AVE118", f"cannot cast {_kind(x)}", node)
        t = x.type
        if isinstance(t, ScalarType):
            rt: Any = ScalarType(dtype)
        elif isinstance(t, FragmentType):
            rt = FragmentType(dtype, t.shape, t.layout, t.reg_class)
        else:
            raise self.err("AVE118", f"cannot cast {_kind(x)}; load it into registers first",
                           node)
        if t.dtype == dtype:
            return x
        return self.emit("arith.cast", [x], [rt], node, {"dtype": dtype}).result

    def h_reduce(self, node, sc, x, op, axis, scope=None):
        return self._reduce(node, x, op, axis, scope)

    def _reduce(self, node, x, op, axis, red_scope):
        v = self._frag(x, _arg_node(node, "x", 0), "the reduced value")
        if op not in ("sum", "max", "min"):
            raise self.err("AVE120", f"reduction op must be 'sum', 'max' or 'min', got {op!r}",
                           node)
        n = len(v.type.shape)
        if not _is_ct_int(axis) or not -n <= axis < n:
            raise self.err("AVE120", f"axis must be a compile-time integer in [-{n}, {n})", node)
        axis = axis % n
        lay = v.type.layout
        inferred = _memoized(self, ("reduction_scope", lay, axis, self.warp_size),
                             lambda: _reduction_scope(lay, axis, self.warp_size))
        if red_scope is not None:
            if red_scope not in ("thread", "warp", "block"):
                raise self.err("AVE120", "scope must be 'thread', 'warp' or 'block'", node)
            order = {"thread": 0, "warp": 1, "block": 2}
            if order[red_scope] < order[inferred]:
                raise self.err("AVE118", f"this reduction needs {inferred} scope (the reduced "
                               f"elements are spread over {inferred}s) but scope="
                               f"{red_scope!r} was asked for", node)
            inferred = red_scope
        keep = tuple(i for i in range(n) if i != axis)
        shape = tuple(v.type.shape[i] for i in keep)
        rl = ProjectedLayout(lay, keep) if lay is not None else None
        t = FragmentType(v.type.dtype, shape, rl, v.type.reg_class)
        return self.emit("ave.reduce", [v], [t], node,
                         {"op": op, "axis": axis, "scope": inferred}).result

    def h_sum(self, node, sc, x, axis, scope=None):
        return self._reduce(node, x, "sum", axis, scope)

    def h_max(self, node, sc, x, axis, scope=None):
        return self._reduce(node, x, "max", axis, scope)

    def h_min(self, node, sc, x, axis, scope=None):
        return self._reduce(node, x, "min", axis, scope)

    def h_convert(self, node, sc, x, layout):
        v = self._frag(x, _arg_node(node, "x", 0), "ave.convert's operand")
        src = v.type.layout
        if isinstance(src, BroadcastLayout) or (
                src is not None and len(getattr(src, "tile_shape", v.type.shape))
                != len(v.type.shape)):
            # (a reduction's result converts; one with axes added, s[:, None], or broadcast
            # did not: an internal error in the checker and the interpreter; a review helper)
            raise self.err("AVE118", "ave.convert of a fragment with added or broadcast axes "
                           "(s[:, None]) is not supported: convert the reduced fragment "
                           "itself", _arg_node(node, "x", 0) or node)
        lay = self._tv(layout, v.type.shape, _arg_node(node, "layout", 1) or node, "ave.convert")
        t = FragmentType(v.type.dtype, v.type.shape, lay, v.type.reg_class)
        in_regs = _memoized(self, ("same_holdings", v.type.layout, lay),
                            lambda: _same_holdings(v.type.layout, lay))
        return self.emit("ave.convert", [v], [t], node,
                         {"layout": lay, "register_only": in_regs}).result

    def h_materialize(self, node, sc, x):
        v = self._frag(x, _arg_node(node, "x", 0), "ave.materialize's operand")
        return self.emit("ave.materialize", [v], [v.type], node).result

    def h_mma(self, node, sc, a, b, c, tiled):
        atoms = _ATOMS
        if not isinstance(tiled, atoms.TiledMMA):
            raise self.err("AVE118", f"ave.mma's `tiled` must be an ave.tiled_mma(...), got "
                           f"{_kind(tiled)}", _arg_node(node, "tiled", 3) or node)
        atom = tiled.atom
        BM, BN, BK = tiled.tile
        expect = {"a": ((BM, BK), tiled.a, atom.ab_dtype), "b": ((BK, BN), tiled.b, atom.ab_dtype),
                  "c": ((BM, BN), tiled.c, atom.acc_dtype)}
        vals = {"a": a, "b": b, "c": c}
        for i, k in enumerate(("a", "b", "c")):
            anode = _arg_node(node, k, i) or node
            v = self._frag(vals[k], anode, f"ave.mma's {k.upper()} operand")
            shape, lay, dt = expect[k]
            if v.type.shape != shape:
                raise self.err("AVE110", f"ave.mma: the {k.upper()} operand has shape "
                               f"{_fmt_shape(v.type.shape)} but {tiled!r} expects "
                               f"{_fmt_shape(shape)}", anode)
            if v.type.dtype != dt:
                raise self.err("AVE105", f"ave.mma: the {k.upper()} operand is {v.type.dtype} "
                               f"but {atom.name} takes {dt}", anode)
            if lay is not None and v.type.layout != lay:
                raise self.err("AVE110", f"ave.mma: the {k.upper()} operand is not distributed "
                               f"as the instruction needs (layout tiled.{k}); load it with "
                               f"layout=tiled.{k} or ave.convert it", anode)
        if tiled.threads != self.threads:
            raise self.err("AVE110", f"ave.mma: the tiled MMA spans {tiled.threads} threads but "
                           f"the kernel has threads={self.threads}", node)
        if atom.kind == "mfma" and self.target != "amd":
            pass  # reported by code generation for the target (AVE4xx)
        return self.emit("ave.mma", [a, b, c], [c.type], node, {"tiled": tiled}).result

    # ---- tags and assertions

    def h_tag(self, node: ast.Call, scope: Scope) -> Value:
        from ave_core.lang import names
        sig = names.signature_of("tag")
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in
                                                                     node.keywords):
            raise self.err("AVE104", "ave.tag(x, fn) takes two plain arguments", node)
        try:
            ba = sig.bind(*node.args, **{k.arg: k.value for k in node.keywords})
        except TypeError as e:
            raise self.err("AVE104", f"ave.tag(): {e}", node) from None
        xnode, fnode = ba.arguments["x"], ba.arguments["fn"]
        x = self.eval(xnode, scope)
        if not isinstance(x, Value) or not isinstance(x.type, (TensorType, TileType)):
            raise self.err("AVE118", f"ave.tag tags a tensor or a tile, got {_kind(x)}", xnode)
        fn = fnode if isinstance(fnode, ast.Lambda) else None
        if fn is None:
            f = self.eval(fnode, scope)
            if isinstance(f, LambdaFn):
                fn = f.node
            elif isinstance(f, HelperFn):
                raise self.err("AVE112", "the tag function must be a lambda returning "
                               "ave.label(...)", fnode)
            else:
                raise self.err("AVE112", f"the tag function must be a lambda, got {_kind(f)}",
                               fnode)
        rank = x.type.rank if isinstance(x.type, TensorType) else len(x.type.shape)
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.err("AVE112", "the tag function takes exactly one plain parameter per "
                           "coordinate", fn)
        if len(a.args) != rank:
            raise self.err("AVE104", f"the tag function takes {len(a.args)} coordinates but "
                           f"the {'tensor' if isinstance(x.type, TensorType) else 'tile'} has "
                           f"rank {rank}", fn.args if a.args else fn)
        body = fn.body
        if not (isinstance(body, ast.Call) and self._is_label(body.func, scope)):
            raise self.err("AVE112", "a tag function must return ave.label(field=..., ...)", body)
        if body.args:
            raise self.err("AVE112", "ave.label takes named fields only (`row=m, k=k`)",
                           body.args[0])
        coord_names = [p.arg for p in a.args]
        blk = Block()
        coords = {n: blk.add_arg(ScalarType(_dt.i32), n) for n in coord_names}
        for c in coords.values():
            c.affine = {c: 1}
        fields: list[str] = []
        saved = self.block
        self.block = blk
        try:
            outs = []
            for kw in body.keywords:
                if kw.arg is None:
                    raise self.err("AVE112", "`**` in ave.label", kw.value)
                if kw.arg in fields:
                    raise self.err("AVE112", f"field `{kw.arg}` given twice", kw.value)
                fields.append(kw.arg)
                outs.append(self.tag_expr(kw.value, coords, scope))
            if not fields:
                raise self.err("AVE112", "ave.label() needs at least one field", body)
            self.emit("ave.yield", outs, [], body)
        finally:
            self.block = saved
        return self.emit("ave.tag", [x], [x.type], node,
                         {"fields": tuple(fields), "coords": tuple(coord_names)}, [blk]).result

    def _is_label(self, fnode: ast.AST, scope: Scope) -> bool:
        try:
            f = self.eval(fnode, scope)
        except AveError:
            return False
        return f == DSLName("label")

    def tag_expr(self, e: ast.AST, coords: dict, scope: Scope) -> Value:
        """Arithmetic on coordinates (+ - * // %), integer constants and constexprs."""
        if isinstance(e, ast.Name) and e.id in coords:
            return coords[e.id]
        if isinstance(e, ast.BinOp) and type(e.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
                                                        ast.Mod):
            l = self.tag_expr(e.left, coords, scope)
            r = self.tag_expr(e.right, coords, scope)
            return self.binop(_BINOPS[type(e.op)], l, r, e)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            v = self.tag_expr(e.operand, coords, scope)
            return self.unary("neg", v, e) if isinstance(e.op, ast.USub) else v
        if isinstance(e, ast.Constant) and _is_ct_int(e.value):
            return self.const(int(e.value), _dt.i32, e)
        if isinstance(e, (ast.Name, ast.Attribute, ast.Subscript)):
            try:
                v = self.eval(e, scope)
            except AveError:
                v = None
            if _is_ct_int(v):
                return self.const(int(v), _dt.i32, e)
            raise self.err("AVE112", "a tag function may only use its coordinates, integer "
                           "constants and constexprs; "
                           f"`{ast.unparse(e)}` is {_kind(v) if v is not None else 'unknown'}", e)
        raise self.err("AVE112", "a tag function may only combine coordinates with + - * // %; "
                       f"`{ast.unparse(e)}` is not allowed", e)

    def h_label(self, node, sc, **fields):
        raise self.err("AVE101", "ave.label() is only meaningful as the result of a tag "
                       "function", node)

    def _assert_operand(self, v: Any, node: ast.AST, what: str) -> Value:
        if not isinstance(v, Value) or not isinstance(v.type, (FragmentType, TileType)):
            raise self.err("AVE118", f"{what} must be a fragment or a tile, got {_kind(v)}", node)
        return v

    def h_assert_conform(self, node, sc, x, y, fields, contract):
        xv = self._assert_operand(x, _arg_node(node, "x", 0) or node, "assert_conform's x")
        yv = self._assert_operand(y, _arg_node(node, "y", 1) or node, "assert_conform's y")
        if fields is not None:
            if isinstance(fields, str):
                fields = (fields,)
            if not isinstance(fields, (tuple, list)) or not all(isinstance(f, str) for f in fields):
                raise self.err("AVE118", "fields must be a tuple of field names", node)
            fields = tuple(fields)
        sx, sy = xv.type.shape, yv.type.shape
        if contract is None:
            if sx != sy:
                raise self.err("AVE116", f"assert_conform compares elementwise but the shapes "
                               f"differ: {_fmt_shape(sx)} vs {_fmt_shape(sy)} (pass contract="
                               "(i, j) to pair along a contraction)", node)
        else:
            if not (isinstance(contract, tuple) and len(contract) == 2 and
                    all(_is_ct_int(c) for c in contract)):
                raise self.err("AVE118", "contract must be a pair of axis numbers (i, j)", node)
            i, j = contract
            if not (0 <= i < len(sx) and 0 <= j < len(sy)):
                raise self.err("AVE119", f"contract axes {contract} outside the operands' ranks",
                               node)
            if sx[i] != sy[j]:
                raise self.err("AVE116", f"contracted extents differ: x axis {i} has {sx[i]}, "
                               f"y axis {j} has {sy[j]}", node)
        self.emit("ave.assert_conform", [xv, yv], [], node,
                  {"fields": fields, "contract": contract})

    def h_assume(self, node, sc, cond, message=None):
        arg = _arg_node(node, "cond", 0) or node
        if message is not None and not isinstance(message, str):
            raise self.err("AVE115", "ave.assume's message must be a compile-time string",
                           _arg_node(node, "message", 1) or node)
        text = message if message is not None else ast.unparse(arg)
        if isinstance(cond, (bool, np.bool_)) or _is_ct_int(cond):
            if not cond:
                raise self.err("AVE120", f"ave.assume({text}) is false for this "
                               "specialization", arg)
            return None
        v = self.as_bool(cond, arg)
        if not isinstance(v.type, ScalarType):
            raise self.err("AVE118", "ave.assume needs one condition (a scalar), not a "
                           "fragment", arg)
        self.emit("ave.assume", [v], [], node, {"message": text})
        _note_assumed_multiples(self, v)
        return None

    def h_assert_disjoint(self, node, sc, x, y):
        xv = self._tile(x, _arg_node(node, "x", 0) or node, "assert_disjoint's x",
                        ("shared", "global"))
        yv = self._tile(y, _arg_node(node, "y", 1) or node, "assert_disjoint's y",
                        ("shared", "global"))
        self.emit("ave.assert_disjoint", [xv, yv], [], node)

    # ---- loops used as calls

    def h_range(self, node, sc, **kw):
        raise self.err("AVE101", "ave.range() is only valid as the iterable of a for loop", node)

    def h_static_range(self, node, sc, **kw):
        raise self.err("AVE101", "ave.static_range() is only valid as the iterable of a for "
                       "loop", node)


_CMP_NAMES = {"lt", "le", "gt", "ge", "eq", "ne"}


#: ``ast`` node class -> the ``KernelBuilder.ev_<Class>`` method that evaluates it.
_EVALUATORS: dict[type, Callable[..., Any]] = {
    getattr(ast, name[3:]): fn for name, fn in vars(KernelBuilder).items()
    if name.startswith("ev_") and isinstance(getattr(ast, name[3:], None), type)}


class _Binder:
    """Binds call arguments to the parameters of a DSL function: the arguments dict that
    ``inspect.Signature.bind`` then ``apply_defaults`` give (in parameter order), computed
    directly for the usual plain parameters; anything else, and every binding error (its
    ``TypeError`` and message), goes through ``Signature.bind`` itself."""

    def __init__(self, sig: Any) -> None:
        self.sig = sig
        params = list(sig.parameters.values())
        self.plain = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
        self.names = tuple(p.name for p in params)
        self.defaults = {p.name: p.default for p in params if p.default is not p.empty}

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The arguments by parameter name. Raises ``TypeError`` as ``Signature.bind``."""
        if self.plain and len(args) <= len(self.names):
            given = dict(zip(self.names, args))
            if all(k not in given and k in self.names for k in kwargs):
                given.update(kwargs)
                if all(n in given or n in self.defaults for n in self.names):
                    return {n: given[n] if n in given else self.defaults[n] for n in self.names}
        ba = self.sig.bind(*args, **kwargs)
        ba.apply_defaults()
        return dict(ba.arguments)


_BINDERS: dict[str, _Binder] = {}


def _binder(name: str) -> _Binder:
    """The :class:`_Binder` of ``ave.<name>`` (signatures are fixed: kept for the process)."""
    b = _BINDERS.get(name)
    if b is None:
        from ave_core.lang import names
        b = _BINDERS[name] = _Binder(names.signature_of(name))
    return b


class _IterCounter:
    """The iteration counter of a runtime loop (a symbol of affine forms)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"iter({self.name})"


def _installed(top: str) -> bool:
    """Whether a top-level module is an installed one (without importing or running it):
    a builtin, one imported already, or one found on ``sys.path`` without its entries for
    the working directory (``''``, ``.``, the directory itself: ``python -m ave_lsp`` puts
    it there, and a package of the workspace was taken for an installed library -- its
    helpers "cannot be called inside a kernel"; a review helper)."""
    import importlib.machinery
    import sys
    if top in sys.builtin_module_names or top in sys.modules:
        return True
    cwd = os.getcwd()
    path = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != cwd]
    try:
        return importlib.machinery.PathFinder.find_spec(top, path) is not None
    except (ImportError, ValueError):
        return False


def _dsl_value(lang: Any, name: str) -> Any:
    """What ``ave.<name>`` is at compile time: dtypes are themselves, the rest DSLName."""
    obj = getattr(lang, name)
    if isinstance(obj, DType):
        return obj
    d = _DSL_NAMES.get(name)
    if d is None:
        d = _DSL_NAMES[name] = DSLName(name)
    return d


#: One (immutable) DSLName per name of the DSL.
_DSL_NAMES: dict[str, DSLName] = {}

KernelBuilder._inline_defs = []  # type: ignore[attr-defined]


# ============================================================================ helpers

def _prod(x: Any) -> int:
    if isinstance(x, tuple):
        p = 1
        for e in x:
            p *= _prod(e)
        return p
    return int(x)


def _fmt_shape(s: Sequence[int]) -> str:
    return "x".join(str(x) for x in s)


def _kind(v: Any) -> str:
    if isinstance(v, Value):
        t = v.type
        if isinstance(t, TensorType):
            return f"a tensor ({t})"
        if isinstance(t, TileType):
            return f"a {t.space} tile ({t})"
        if isinstance(t, FragmentType):
            return f"a register fragment ({_fmt_shape(t.shape)} x {t.dtype})"
        return f"a runtime {t} scalar"
    if isinstance(v, (HelperFn, LambdaFn)):
        return "a function"
    if isinstance(v, DSLName):
        return f"ave.{v.name}"
    if isinstance(v, DSLModule):
        return "the ave module"
    if isinstance(v, bool):
        return "a bool"
    if _is_ct_int(v):
        return f"the integer {v}"
    if isinstance(v, float):
        return f"the number {v}"
    if isinstance(v, str):
        return f"the string {v!r}"
    if v is None:
        return "None"
    return f"a {type(v).__name__}"


def _describe(node: ast.AST) -> str:
    return {
        "ListComp": "a list comprehension", "DictComp": "a dict comprehension",
        "SetComp": "a set comprehension", "GeneratorExp": "a generator expression",
        "JoinedStr": "an f-string", "Await": "`await`", "Yield": "`yield`",
        "YieldFrom": "`yield from`", "NamedExpr": "the walrus operator `:=`", "Set": "a set",
        "Starred": "`*` unpacking here", "FormattedValue": "an f-string",
    }.get(type(node).__name__, type(node).__name__)


def _contains_value(v: Any) -> bool:
    if isinstance(v, Value):
        return True
    if isinstance(v, (tuple, list)):
        return any(_contains_value(x) for x in v)
    if isinstance(v, dict):
        return any(_contains_value(x) for x in v.values())
    return False


def _ct_equal(a: Any, b: Any) -> bool:
    if isinstance(a, Value) or isinstance(b, Value):
        return a is b
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _assigned_names(body: list[ast.stmt]) -> set[str]:
    out: set[str] = set()

    def targets(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)

    # Each statement's subtree breadth first, as ast.walk, but only through the nodes that
    # can hold statements (statements never sit inside expressions): the same names, added
    # in the same order.
    for st in body:
        todo = deque([st])
        while todo:
            n = todo.popleft()
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    targets(t)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                targets(n.target)
            elif isinstance(n, ast.For):
                targets(n.target)
            elif isinstance(n, ast.FunctionDef):
                out.add(n.name)
            for f in n._fields:
                v = getattr(n, f, None)
                if isinstance(v, list):
                    todo.extend(x for x in v if isinstance(x, _STATEMENT_NODES))
    return out


#: The ast nodes that statements can be children of (besides the module).
_STATEMENT_NODES = (ast.stmt, ast.excepthandler, ast.match_case)


def _opaque(v: Value) -> dict | None:
    """``v``'s affine form, or ``{v: 1}`` for a scalar integer without one."""
    if v.affine is not None:
        return v.affine
    t = v.type
    if isinstance(t, ScalarType) and t.dtype.is_int and t.dtype != _dt.i1:
        return {v: 1}
    return None


def _affine(op: str, a: dict | None, b: dict | None) -> dict | None:
    if a is None or b is None:
        return None
    if op in ("add", "sub"):
        s = -1 if op == "sub" else 1
        r = dict(a)
        for k, c in b.items():
            r[k] = r.get(k, 0) + s * c
        return {k: c for k, c in r.items() if c != 0 or k is None}
    if op == "mul":
        if set(a) <= {None}:
            a, b = b, a
        if set(b) <= {None}:
            c = b.get(None, 0)
            return {k: v * c for k, v in a.items()}
    return None


def _extent(lo: Any, hi: Any) -> int | None:
    if _is_ct_int(lo) and _is_ct_int(hi):
        return int(hi - lo)
    fa = {None: int(lo)} if _is_ct_int(lo) else (_opaque(lo) if isinstance(lo, Value) else None)
    fb = {None: int(hi)} if _is_ct_int(hi) else (_opaque(hi) if isinstance(hi, Value) else None)
    if fa is None or fb is None:
        return None
    d = _affine("sub", fb, fa)
    if d is None or any(k is not None and c != 0 for k, c in d.items()):
        return None
    return int(d.get(None, 0))


def _def_name_range(module: ModuleContext, fn: ast.FunctionDef) -> Range:
    line0 = fn.lineno - 1
    text = module.source.line(line0)
    i = text.find("def ")
    if i >= 0:
        j = i + 4
        while j < len(text) and text[j] == " ":
            j += 1
        return Range(module.source.position_from_char(line0, j),
                     module.source.position_from_char(line0, j + len(fn.name)))
    return module.source.line_range(line0)


def _arg_node(call: ast.Call, name: str, pos: int) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if pos < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None


def _count_leading(blk: Block, *names: str) -> int:
    i = 0
    while i < len(blk.ops) and blk.ops[i].name in names:
        i += 1
    return i


def _all_blocks(root: Block):
    yield root
    for op in root.ops:
        for r in op.regions:
            yield from _all_blocks(r)


def _close_matches(name: str, options: list[str]) -> str | None:
    import difflib
    m = difflib.get_close_matches(name, options, n=1, cutoff=0.75)
    return m[0] if m else None


def _coord_rank(tile: Value) -> int:
    """Number of coordinates a mask lambda takes for ``tile``: the tensor's rank for a
    global tile, the tile's rank otherwise."""
    t = tile.type
    if t.space == "global":
        v = tile
        while isinstance(v.owner, Op) and v.owner.name in ("ave.global_tile", "ave.subtile",
                                                           "ave.transpose"):
            src = v.owner.operands[0]
            if isinstance(src.type, TensorType):
                return src.type.rank
            v = src
    return len(t.shape)


#: Compile-time constructors whose results (immutable, and costly to build) one compile
#: shares between the calls with equal arguments, e.g. the same tiled MMA in several
#: specializations.
_SHARED_CONSTRUCTORS = frozenset({"mma_atom", "wgmma_atom", "tiled_mma"})


def _typed_key(v: Any) -> Any:
    """A memo key for compile-time arguments that also tells apart equal values of other
    types (``16`` / ``16.0`` / ``True``). Unhashable values make the key unhashable."""
    if isinstance(v, (tuple, list)):
        return (type(v), tuple(_typed_key(e) for e in v))
    if isinstance(v, dict):
        return (dict, tuple((k, _typed_key(e)) for k, e in sorted(v.items())))
    return (type(v), v)


def _tile_geometry(tile: Value) -> tuple[Any, tuple, list[list[int]], Any] | None:
    """(base layout, base shape, candidate origins per base dim, map local->base dims).

    Walks ``ave.subtile``/``ave.transpose`` back to an ``ave.alloc``/``ave.view``. Runtime
    offsets of a dropped (indexed) dimension are enumerated over that dimension's extent.
    Returns ``None`` for global tiles (row-major, stride 1 innermost, handled separately).
    """
    chain = []
    v = tile
    while isinstance(v.owner, Op) and v.owner.name in ("ave.subtile", "ave.transpose"):
        chain.append(v.owner)
        v = v.owner.operands[0]
    if not (isinstance(v.owner, Op) and v.owner.name in ("ave.alloc", "ave.view")):
        return None
    base_layout = v.type.layout
    base_shape = v.type.shape
    # local dim -> base dim mapping and per-base-dim candidate offsets
    dims = list(range(len(base_shape)))          # current local dims as base dims
    origins: list[list[int]] = [[0] for _ in base_shape]
    for op in reversed(chain):
        if op.name == "ave.transpose":
            dims = [dims[p] for p in op.attrs["perm"]]
            continue
        offs = op.attrs["offsets"]
        keep = op.attrs["keep"]
        new_dims = []
        for local_d, off in enumerate(offs):
            bd = dims[local_d]
            if isinstance(off, tuple):  # runtime: enumerate
                ext_local = op.operands[0].type.shape[local_d]
                sub_ext = op.attrs["shape"][keep.index(local_d)] if local_d in keep else 1
                cands = list(range(0, ext_local - sub_ext + 1))
                origins[bd] = sorted({o + c for o in origins[bd] for c in cands})
            else:
                origins[bd] = [o + off for o in origins[bd]]
            if local_d in keep:
                new_dims.append(bd)
        dims = new_dims
    return base_layout, base_shape, origins, dims


_MISS = object()


def _memoized(builder: KernelBuilder, key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered under ``key`` for the rest of this compile (see
    :attr:`ModuleLoader.memo`). Keys holding an unhashable layout are not kept."""
    memo = builder.module.loader.memo
    try:
        hit = memo.get(key, _MISS)
    except TypeError:
        return compute()
    if hit is _MISS:
        hit = memo[key] = compute()
    return hit


def _geometry_key(geo: tuple) -> tuple:
    """A hashable form of :func:`_tile_geometry`'s result."""
    lay, bshape, origins, dims = geo
    return (lay, tuple(bshape), tuple(tuple(o) for o in origins), tuple(dims))


#: Elements evaluated per layout call by the vectorized checks (bounds their memory).
_CHECK_CHUNK = 1 << 20


def _offset_table(builder: KernelBuilder, lay: Any, bshape: tuple) -> np.ndarray | None:
    """The offsets of every coordinate of a ``bshape`` allocation or view whose layout is
    ``lay``, by colexicographic linear index (``lay.offsets()``: for a layout covering the
    shape mode by mode, the offset of an in-range coordinate ``c`` is
    ``table[c0 + s0*c1 + s0*s1*c2 ...]``), or ``None`` where that does not apply (another kind
    of layout, a size mismatch, a huge tile). Computed once per compile and layout."""
    L = _LAYOUT
    n = _prod(tuple(bshape))
    if type(lay) not in (L.Layout, L.ComposedLayout, L.XorSwizzle2D) or \
            n > MAX_TILE_ELEMENTS:
        return None

    def table() -> np.ndarray | None:
        try:
            if lay.size != n:
                return None
            return np.asarray(lay.offsets(), dtype=np.int64).reshape(n)
        except Exception:
            return None
    return _memoized(builder, ("offset_table", lay, tuple(bshape)), table)


def _vector_offsets(geo: tuple, combos: list[list[int]], starts: np.ndarray,
                    n: int, table: np.ndarray | None = None) -> np.ndarray:
    """Element offsets of the ``n``-vectors starting at local coordinates ``starts``
    (``(rank, S)``; the vector runs along the last local dimension), for each origin
    combination: an ``int64`` array ``(len(combos), S, n)``. ``table``: the layout's
    :func:`_offset_table`, looked up instead of evaluating the layout when every
    coordinate is inside the base shape."""
    lay, bshape, _, dims = geo
    j = np.arange(n, dtype=np.int64)
    if table is not None:
        lin = _start_indices(geo, combos, starts, n)
        if lin is not None:
            return table[lin[0][:, :, None] + j * lin[1]]
    combo = np.asarray(combos, dtype=np.int64).reshape(len(combos), len(bshape))
    full = (len(combos), starts.shape[1], n)
    coords = []
    for bd in range(len(bshape)):
        c = combo[:, bd][:, None, None]
        for ld, d in enumerate(dims):
            if d == bd:
                c = c + starts[ld][None, :, None] + (j[None, None, :] if ld == len(dims) - 1
                                                      else 0)
        coords.append(np.broadcast_to(c, full))
    return np.broadcast_to(np.asarray(lay(tuple(coords)), dtype=np.int64), full)


def _start_indices(geo: tuple, combos: list[list[int]], starts: np.ndarray,
                   n: int) -> tuple[np.ndarray, int] | None:
    """The colexicographic linear indices into the base shape of the first element of every
    ``n``-vector (``(len(combos), S)``, as in :func:`_vector_offsets`) and the index step
    from one element of a vector to the next; ``None`` unless every element of every vector
    lies inside the base shape (or for a tile without dimensions, or nothing to check)."""
    _, bshape, _, dims = geo
    if not dims or not starts.shape[1] or not combos:
        return None
    combo = np.asarray(combos, dtype=np.int64).reshape(len(combos), len(bshape))
    last = len(dims) - 1
    lo = combo.min(axis=0).tolist()
    hi = combo.max(axis=0).tolist()
    smin, smax = starts.min(axis=1).tolist(), starts.max(axis=1).tolist()
    for ld, bd in enumerate(dims):
        lo[bd] += smin[ld]
        hi[bd] += smax[ld] + (n - 1 if ld == last else 0)
    if not all(0 <= lo[bd] and hi[bd] < bshape[bd] for bd in range(len(bshape))):
        return None
    fstride = [_prod(tuple(bshape[:k])) for k in range(len(bshape))]
    start_lin = sum(starts[ld] * fstride[bd] for ld, bd in enumerate(dims))
    lin = (combo @ np.asarray(fstride, dtype=np.int64))[:, None] + start_lin[None, :]
    return lin, fstride[dims[last]]


def _vectors_ok(table: np.ndarray, bshape: tuple, bd: int, n: int) -> tuple[np.ndarray, bool]:
    """The ``n``-vectors along base dimension ``bd`` of a ``bshape`` allocation whose
    :func:`_offset_table` is ``table``: for every linear base index ``i``, whether the
    elements ``i, i + step, ...`` (``step`` = the colexicographic stride of ``bd``) have
    consecutive offsets starting at a multiple of ``n`` (contiguous and aligned; False for a
    vector that would leave the allocation along ``bd``); and whether that holds for every
    vector inside the allocation that starts at a multiple of ``n`` along ``bd`` (then so it
    does for every in-range tile whose origins along ``bd`` are multiples of ``n``)."""
    step, ext = _prod(tuple(bshape[:bd])), bshape[bd]
    t = table.reshape(-1, ext, step)               # (outer dims, bd, inner dims)
    ok = np.zeros(t.shape, dtype=bool)
    m = ext - n + 1                                # vector starts that stay inside along bd
    if m > 0:
        good = t[:, :m, :] % n == 0
        if n > 1:
            plus_one = np.diff(t, axis=1) == 1     # offset at c+1 is the one at c plus 1
            for k in range(n - 1):
                good &= plus_one[:, k:k + m, :]
        ok[:, :m, :] = good
    return ok.reshape(-1), bool(ok[:, 0:m:n, :].all()) if m > 0 else True


def _combo_chunks(combos: list[list[int]], per_combo: int):
    """``combos`` in consecutive chunks of at most :data:`_CHECK_CHUNK` evaluated elements."""
    step = max(1, _CHECK_CHUNK // max(1, per_combo))
    for k in range(0, len(combos), step):
        yield combos[k:k + step]


def _contiguous_tile(builder: KernelBuilder, tile: Value) -> bool:
    """Whether a shared/register tile's elements fill one contiguous range of offsets."""
    geo = _tile_geometry(tile)
    if geo is None:
        return True
    shape = tile.type.shape
    return _memoized(builder, ("contiguous", _geometry_key(geo), shape),
                     lambda: _layout_contiguous(geo, shape,
                                                _offset_table(builder, geo[0], geo[1])))


def _layout_contiguous(geo: tuple, shape: tuple, table: np.ndarray | None) -> bool:
    n = _prod(shape)
    if n > MAX_TILE_ELEMENTS:
        return False
    starts = np.indices(shape).reshape(len(shape), -1)
    for chunk in _combo_chunks(_product_lists(geo[2], 8), n):
        offs = np.sort(_vector_offsets(geo, chunk, starts, 1, table)[:, :, 0], axis=1)
        if not np.array_equal(offs, offs[:, :1] + np.arange(n)):
            return False
    return True


def _vector_violation(builder: KernelBuilder, tile: Value, n: int):
    """The first ``n``-element vector of ``tile`` (along its innermost dimension) that is not
    contiguous and ``n``-aligned in memory: ``(start coordinate, element offsets, why)``, or
    ``None`` when every vector is fine."""
    t = tile.type
    if t.space == "global":
        # row-major with unit innermost stride: contiguous; check the innermost origin
        v = tile
        off_terms = []
        while isinstance(v.owner, Op) and v.owner.name in ("ave.global_tile", "ave.subtile"):
            op = v.owner
            offs = op.attrs["offsets"]
            src_rank = len(offs)
            last = offs[src_rank - 1]
            if (src_rank - 1) not in op.attrs["keep"]:
                return None  # innermost dim indexed away: a column of scalars; no vectors
            off_terms.append(op.operands[1 + last[1]] if isinstance(last, tuple) else last)
            v = op.operands[0]
        if isinstance(v.type, TensorType) and v.type.gathered_dim is not None and \
                v.type.gathered_dim == v.type.rank - 1:
            return (0, "-", "gathered along the innermost dimension, so not contiguous")
        for term in off_terms:
            if isinstance(term, Value):
                m = _multiple_of(builder, term)
                if m == 0 or m % n == 0:
                    continue            # (a multiple of the vector: `z * KS`, KS % 32 == 0)
                aff = term.affine
                if aff is None:
                    return ((0,) * len(t.shape), "runtime", "at an innermost offset that cannot be "
                            "shown to be a multiple of the vector width")
                if any(c % n for c in aff.values()):
                    return ((0,) * len(t.shape), "runtime", f"at an innermost offset that is not "
                            f"always a multiple of {n} elements")
            elif term % n:
                return ((0,) * len(t.shape), term, f"at innermost offset {term}, not a multiple "
                        f"of {n} elements")
        return None
    geo = _tile_geometry(tile)
    if geo is None:
        return None
    shape = t.shape
    lay, bshape = geo[0], tuple(geo[1])
    table = _offset_table(builder, lay, bshape)

    def vectors_ok(bd: int) -> tuple[np.ndarray, bool]:
        return _memoized(builder, ("vectors_ok", lay, bshape, bd, n),
                         lambda: _vectors_ok(table, bshape, bd, n))
    return _memoized(builder, ("vector", _geometry_key(geo), shape, n),
                     lambda: _layout_vector_violation(geo, shape, n, table, vectors_ok))


def _const_of(v: Any) -> int | None:
    """The value of a compile-time integer or of an ``arith.constant`` op's result."""
    if _is_ct_int(v) and not isinstance(v, bool):
        return int(v)
    own = getattr(v, "owner", None)
    if isinstance(own, Op) and own.name == "arith.constant" and \
            _is_ct_int(own.attrs.get("value")) and not isinstance(own.attrs["value"], bool):
        return int(own.attrs["value"])
    return None


def _note_assumed_multiples(builder: Any, cond: Value) -> None:
    """Record the ``X % c == 0`` conjuncts of an assumed condition (``&`` at the top; ``c``
    a constant): ``X`` is then a multiple of ``c`` (:func:`_multiple_of`)."""
    todo = [cond]
    while todo:
        v = todo.pop()
        op = getattr(v, "owner", None)
        if not isinstance(op, Op):
            continue
        if op.name == "arith.and":
            todo += list(op.operands)
        elif op.name == "arith.cmp" and op.attrs.get("pred") == "eq":
            a, b = op.operands
            for x, z in ((a, b), (b, a)):
                mod = getattr(x, "owner", None)
                if _const_of(z) == 0 and isinstance(mod, Op) and mod.name == "arith.mod":
                    c = _const_of(mod.operands[1])
                    if c:
                        x = mod.operands[0]
                        builder.assumed_multiples[x] = math.lcm(
                            builder.assumed_multiples.get(x, 1), c)


def _multiple_of(builder: Any, v: Any, depth: int = 0) -> int:
    """A constant every value of the integer ``v`` is a multiple of (0: ``v`` is 0; 1:
    nothing known): from constants, sums, differences and products of such values, and
    what the kernel assumes (``ave.assume(KS % 32 == 0)``; a split-K offset ``z * KS`` was
    AVE109 "cannot be shown to be a multiple of the vector width"; a review helper)."""
    c = _const_of(v)
    if c is not None:
        return abs(c)
    if not isinstance(v, Value) or depth > 32:
        return 1
    known = builder.assumed_multiples.get(v, 1)
    op = v.owner
    m = 1
    if isinstance(op, Op) and len(op.operands) == 2 and \
            op.name in ("arith.mul", "arith.add", "arith.sub"):
        x, y = (_multiple_of(builder, o, depth + 1) for o in op.operands)
        m = x * y if op.name == "arith.mul" else math.gcd(x, y)
    elif v.affine is not None and v.affine != {v: 1}:
        g = 0
        for k, co in v.affine.items():
            g = math.gcd(g, abs(co) * (1 if k is None else _multiple_of(builder, k, depth + 1)))
        m = g
    return 0 if m == 0 else math.lcm(m, known)


def _layout_vector_violation(geo: tuple, shape: tuple, n: int, table: np.ndarray | None,
                             vectors_ok: Callable[[int], np.ndarray] | None = None):
    """:func:`_vector_violation` for a shared/register tile of geometry ``geo``: every origin
    combination of runtime offsets (at most 64), in order; the first bad vector wins.
    ``table`` and ``vectors_ok`` (base dimension -> :func:`_vectors_ok` of ``table``, shared
    by the tiles of one allocation) let in-range vectors be judged by lookup."""
    combos = _product_lists(geo[2], 64)
    if table is not None and vectors_ok is not None:
        found = _lookup_vector_violation(geo, shape, n, combos, table, vectors_ok)
        if found is not False:
            return found
    idx = np.indices(shape).reshape(len(shape), -1)
    starts = idx[:, idx[-1] % n == 0] if shape else idx
    for chunk in _combo_chunks(combos, starts.shape[1] * n):
        offs = _vector_offsets(geo, chunk, starts, n, table)       # (combos, S, n)
        contiguous = np.all(offs[:, :, 1:] - offs[:, :, :-1] == 1, axis=2)
        aligned = offs[:, :, 0] % n == 0
        bad = ~(contiguous & aligned)
        if bad.any():
            c, i = (int(x) for x in np.argwhere(bad)[0])
            coord = tuple(int(x) for x in starts[:, i])
            why = "not contiguous in the layout" if not contiguous[c, i] else \
                f"not aligned to {n} elements"
            return coord, offs[c, i].tolist(), why
    return None


def _lookup_vector_violation(geo: tuple, shape: tuple, n: int, combos: list[list[int]],
                             table: np.ndarray,
                             vectors_ok: Callable[[int], tuple[np.ndarray, bool]]):
    """:func:`_layout_vector_violation` by table lookup: the same answer, or ``False`` when
    the lookup does not apply (some vector leaves the base shape, an extent is not a
    multiple of ``n``, nothing to check)."""
    _, bshape, origins, dims = geo
    if not dims or not combos or len(dims) != len(shape) or shape[-1] % n:
        return False
    hi = [max(o) if o else 0 for o in origins]
    for ld, bd in enumerate(dims):
        hi[bd] += shape[ld] - 1
    if any(min(o) < 0 for o in origins if o) or any(h >= e for h, e in zip(hi, bshape)):
        return False
    ok, every_ok = vectors_ok(dims[-1])
    if every_ok and all(o % n == 0 for o in origins[dims[-1]]):
        return None         # every aligned vector of the allocation is fine: so are these

    fstride = [_prod(tuple(bshape[:k])) for k in range(len(bshape))]
    step = fstride[dims[-1]]
    # start indices of the vectors, local coordinates in C order (the last one by n)
    grid_shape = (*shape[:-1], shape[-1] // n)
    grid = np.zeros((), dtype=np.int64)
    for ld, bd in enumerate(dims):
        scale = n if ld == len(dims) - 1 else 1
        grid = np.add.outer(grid, np.arange(grid_shape[ld], dtype=np.int64) * fstride[bd] * scale)
    starts = grid.reshape(-1)
    for chunk in _combo_chunks(combos, starts.size * n):
        base = np.asarray([sum(c * f for c, f in zip(combo, fstride)) for combo in chunk],
                          dtype=np.int64)
        good = ok[np.add.outer(base, starts)]                      # (combos, S)
        if good.all():
            continue
        c, i = divmod(int(np.argmin(good.reshape(-1))), starts.size)
        offs = table[base[c] + starts[i] + step * np.arange(n, dtype=np.int64)]
        local = np.unravel_index(i, grid_shape)
        coord = tuple(int(x) * (n if ld == len(shape) - 1 else 1) for ld, x in enumerate(local))
        why = "not contiguous in the layout" if not np.all(np.diff(offs) == 1) else \
            f"not aligned to {n} elements"
        return coord, offs.tolist(), why
    return None


def _thread_vector_violation(layout: Any, n: int) -> tuple | None:
    """Whether each thread's values of a TV layout come in groups of ``n`` consecutive,
    ``n``-aligned elements of a row (what a vector access of ``n`` elements moves): ``None``
    if so; else ``(values per thread,)`` when that is not a multiple of ``n``, or
    ``(thread, group, coordinates of the group)`` of the first group that is not."""
    if isinstance(layout, _LAYOUT.TVLayout):
        # on linear (colexicographic) tile indices: the next element of a row is the index
        # plus the product of the other extents, and the row coordinate is index // that
        idx = layout.index_table()
        T, V = idx.shape
        if V % n:
            return (V,)
        rows = _prod(tuple(layout.tile_shape[:-1]))
        g = idx.reshape(T, V // n, n)
        ok = np.all(np.diff(g, axis=2) == rows, axis=2) & (g[:, :, 0] // rows % n == 0)
        if ok.all():
            return None
        t, grp = (int(x) for x in np.argwhere(~ok)[0])
        coords = _LAYOUT.idx2crd(g[t, grp], tuple(layout.tile_shape))
        return t, grp, [tuple(int(c[j]) for c in coords) for j in range(n)]
    tab = np.asarray(layout.coords_table())
    T, V, R = tab.shape
    if V % n:
        return (V,)
    g = tab.reshape(T, V // n, n, R)
    step = np.diff(g, axis=2)                           # (T, groups, n-1, R)
    ok = np.all(step[..., -1] == 1, axis=2) & np.all(step[..., :-1] == 0, axis=(2, 3))
    ok &= g[:, :, 0, -1] % n == 0
    if not ok.all():
        t, grp = (int(x) for x in np.argwhere(~ok)[0])
        return t, grp, [tuple(int(c) for c in g[t, grp, j]) for j in range(n)]
    return None


def _ldmatrix_violation(builder: KernelBuilder, tile: Value) -> str | None:
    """ldmatrix reads 8 rows of 16 bytes: 8 contiguous, 16-byte aligned b16 elements along
    either axis of each 8x8 block (along the innermost axis, or the other one with .trans)."""
    shape = tile.type.shape
    if len(shape) != 2 or shape[0] % 8 or shape[1] % 8:
        return f"the tile {_fmt_shape(shape)} is not made of 8x8 blocks"
    if _vector_violation(builder, tile, 8) is None:
        return None
    # try the transposed view (ldmatrix .trans)
    geo = _tile_geometry(tile)
    if geo is None:
        return None
    lay, bshape = geo[0], tuple(geo[1])
    table = _offset_table(builder, lay, bshape)
    return _memoized(builder, ("ldmatrix.trans", _geometry_key(geo), shape),
                     lambda: _layout_ldmatrix_trans_violation(
                         geo, shape, table, lambda bd: _memoized(
                             builder, ("vectors_ok", lay, bshape, bd, 8),
                             lambda: _vectors_ok(table, bshape, bd, 8))))


def _layout_ldmatrix_trans_violation(geo: tuple, shape: tuple, table: np.ndarray | None,
                                     vectors_ok: Callable[[int], tuple] | None = None
                                     ) -> str | None:
    lay, bshape, origins, dims = geo
    tgeo = (lay, bshape, origins, list(reversed(dims)))
    if table is not None and vectors_ok is not None:
        # the same as 8-vectors along the other axis (the transposed tile)
        found = _lookup_vector_violation(tgeo, tuple(reversed(shape)), 8,
                                         _product_lists(origins, 64), table, vectors_ok)
        if found is not False:
            return None if found is None else _LDMATRIX_NEITHER
    idx = np.indices(tuple(reversed(shape))).reshape(2, -1)
    starts = idx[:, idx[-1] % 8 == 0]
    for chunk in _combo_chunks(_product_lists(origins, 64), starts.shape[1] * 8):
        o = _vector_offsets(tgeo, chunk, starts, 8, table)
        if not (np.all(o[:, :, 1:] - o[:, :, :-1] == 1) and np.all(o[:, :, 0] % 8 == 0)):
            return _LDMATRIX_NEITHER
    return None


_LDMATRIX_NEITHER = ("rows of 8 elements are neither contiguous and 16-byte aligned along the "
                     "innermost axis nor along the other axis (.trans)")


def _product_lists(lists: list[list[int]], limit: int) -> list[list[int]]:
    combos: list[list[int]] = [[]]
    for o in lists:
        combos = [c + [x] for c in combos for x in o][:limit]
    return combos


def _reduction_scope(layout: Any, axis: int, warp_size: int) -> str:
    """Where the elements reduced into one result live: all in one thread ("thread"), in
    one warp ("warp", shuffles), or across warps ("block", shared memory)."""
    if layout is None:
        return "thread"
    if isinstance(layout, _LAYOUT.TVLayout) and 0 <= axis < len(layout.tile_shape):
        # the element's tile index without its coordinate along `axis` (colexicographic
        # index minus that coordinate's part): one key per kept coordinate, as below
        idx = layout.index_table()
        T, V = idx.shape
        stride = _prod(tuple(layout.tile_shape[:axis]))
        flat = idx.reshape(-1)
        key = flat - flat // stride % layout.tile_shape[axis] * stride
    else:
        try:
            tab = np.asarray(layout.coords_table())
        except Exception:
            return "block"
        T, V, R = tab.shape
        keep = [i for i in range(R) if i != axis]
        if keep:
            dims = tab[:, :, keep].reshape(T * V, -1).max(axis=0) + 1
            key = np.ravel_multi_index(tuple(tab[:, :, keep].reshape(T * V, -1).T),
                                       tuple(dims))
        else:
            key = np.zeros(T * V, np.int64)
    th = np.repeat(np.arange(T), V)
    per_key_threads = _sorted_unique(key * T + th) // T
    if np.bincount(per_key_threads).max() <= 1:
        return "thread"
    per_key_warps = _sorted_unique(key * T + th // warp_size) // T
    return "warp" if np.bincount(per_key_warps).max() <= 1 else "block"

def _holdings(layout: Any, keep: Sequence[int] | None = None) -> tuple[tuple, np.ndarray]:
    """Which (kept) coordinates each thread holds: ``((threads, coordinates), codes)``, the
    codes ``thread * coordinates + linear coordinate`` of every (thread, held coordinate)
    pair, sorted and unique (the true cells of the threads x coordinates holding matrix)."""
    tab = np.asarray(layout.coords_table())
    T, V, R = tab.shape
    keep = list(range(R)) if keep is None else list(keep)
    dims = tuple(int(layout.tile_shape[a]) for a in keep)
    lin = np.ravel_multi_index(tuple(tab[:, :, a] for a in keep), dims)
    n = int(np.prod(dims))
    return (T, n), _sorted_unique(np.repeat(np.arange(T, dtype=np.int64), V) * n +
                                  lin.reshape(-1))


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` of a 1-D integer array, by sorting (numpy's hash-based unique is much
    slower on the few thousand codes the front end compares)."""
    a = np.sort(a)
    if a.size:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return a


def _holds_projection(proj: ProjectedLayout, target: Any, keep: tuple) -> bool:
    """Whether every thread holds, in ``proj``, every kept coordinate that ``target``
    gives it (so a broadcast of ``proj`` to ``target`` needs no communication)."""
    try:
        src_shape, src = _holdings(proj.parent, keep)
        dst_shape, dst = _holdings(target, keep)
    except Exception:
        return False
    return src_shape == dst_shape and bool(np.isin(dst, src, assume_unique=True).all())

def _same_holdings(a: Any, b: Any) -> bool:
    """Whether two TV layouts give every thread the same set of coordinates."""
    try:
        (sa, ha), (sb, hb) = _holdings(a), _holdings(b)
    except Exception:
        return False
    return sa == sb and bool(np.array_equal(ha, hb))

def _kernel_decorator(module: ModuleContext, fn: ast.FunctionDef) -> ast.AST | None:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if _resolves_to(module, target, "kernel"):
            return d
    return None


def _resolves_to(module: ModuleContext, node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return module.imports.get(node.id) == DSLName(name)
    if isinstance(node, ast.Attribute) and node.attr == name:
        base = node.value
        if isinstance(base, ast.Name):
            return isinstance(module.imports.get(base.id), DSLModule)
        if isinstance(base, ast.Attribute):
            parts = []
            b: ast.AST = base
            while isinstance(b, ast.Attribute):
                parts.append(b.attr)
                b = b.value
            if isinstance(b, ast.Name):
                parts.append(b.id)
                dotted = ".".join(reversed(parts))
                root = module.imports.get(b.id)
                return isinstance(root, PackageRef) and dotted in DSL_MODULES
    return False


def _decorator_args(builder_module: ModuleContext, deco: ast.AST, fn: ast.FunctionDef,
                    evaluator: "KernelBuilder") -> dict:
    if not isinstance(deco, ast.Call):
        raise AveError("AVE103", "@ave.kernel needs the workgroup size: "
                       "@ave.kernel(threads=128)", range=builder_module.range_of(deco),
                       file=builder_module.path)
    from ave_core.lang import names
    sig = names.signature_of("kernel")
    scope = Scope(builder_module)
    kw = {}
    for k in deco.keywords:
        if k.arg is None:
            raise evaluator.err("AVE117", "`**` in @ave.kernel(...)", k.value)
        kw[k.arg] = k.value
    if deco.args:
        raise evaluator.err("AVE104", "@ave.kernel(...) takes keyword arguments only "
                            "(threads=..., configs=...)", deco.args[0])
    if "threads" not in kw:
        raise evaluator.err("AVE103", "@ave.kernel needs threads=<compile-time integer>", deco)
    try:
        sig.bind(None, **{k: None for k in kw})
    except TypeError as e:
        raise evaluator.err("AVE104", f"@ave.kernel(): {e}", deco) from None
    out: dict = {}
    try:
        threads = evaluator.eval(kw["threads"], scope)
    except AveError as e:
        raise evaluator.err("AVE103", f"the workgroup size must be a compile-time integer: "
                            f"{e.message}", kw["threads"]) from None
    if isinstance(threads, Value) or not _is_ct_int(threads) or threads <= 0:
        raise evaluator.err("AVE103", f"the workgroup size must be a positive compile-time "
                            f"integer, got {_kind(threads)}", kw["threads"])
    target = evaluator.eval_ct(kw["target"], scope) if "target" in kw else None
    if target not in (None, "nvidia", "amd"):
        raise evaluator.err("AVE117", f"target must be 'nvidia' or 'amd', got {target!r}",
                            kw["target"])
    target = target or "nvidia"
    ws = evaluator.eval_ct(kw["warp_size"], scope) if "warp_size" in kw else None
    ws = ws or (64 if target == "amd" else 32)
    if ws not in (32, 64):
        raise evaluator.err("AVE117", "warp_size must be 32 or 64", kw["warp_size"])
    if threads % ws:
        raise evaluator.err("AVE103", f"threads={threads} is not a multiple of the warp size "
                            f"{ws}", kw["threads"])
    if threads > 1024:
        raise evaluator.err("AVE103", f"threads={threads} exceeds the 1024 threads a "
                            "workgroup can have", kw["threads"])
    configs = None
    if "configs" in kw:
        configs = evaluator.eval_ct(kw["configs"], scope, "configs")
        if not isinstance(configs, (list, tuple)) or not all(isinstance(c, dict) for c in configs):
            raise evaluator.err("AVE117", "configs must be a list of dicts of constexpr values",
                                kw["configs"])
        if not configs:
            raise evaluator.err("AVE117", "configs is empty", kw["configs"])
    out.update(threads=int(threads), warp_size=int(ws), target=target, configs=configs,
               configs_node=kw.get("configs"))
    return out


def _constexpr_params(module: ModuleContext, fn: ast.FunctionDef,
                      ev: KernelBuilder) -> dict[str, Any]:
    """Constexpr parameter names -> default (or Unset)."""
    a = fn.args
    defaults: dict[str, ast.AST] = {}
    for p, d in zip(a.args[len(a.args) - len(a.defaults):], a.defaults):
        defaults[p.arg] = d
    out: dict[str, Any] = {}
    scope = Scope(module)
    for p in a.args:
        if p.annotation is None:
            continue
        try:
            ann = ev.eval(p.annotation, scope)
        except AveError:
            continue
        if ann == DSLName("constexpr") or ann is getattr(ev.lang, "constexpr", None):
            out[p.arg] = ev.eval_ct(defaults[p.arg], scope, "a constexpr default") \
                if p.arg in defaults else Unset()
        elif p.arg in defaults:
            raise ev.err("AVE117", f"runtime parameter `{p.arg}` cannot have a default "
                         "(only ave.constexpr parameters can)", defaults[p.arg])
    return out


def compile_source(text: str, path: str, *, workspace: str | None = None,
                   overlay: dict[str, str] | None = None) -> FrontendResult:
    """Compile every kernel of a file, given as text, into Ave IR.

    Args:
        text: the file's text (the editor's buffer; need not be saved).
        path: the file's path (used for messages and to resolve helper imports).
        workspace: root directory for absolute helper imports (``from helpers import f``).
        overlay: unsaved texts of other files, by absolute path (the editor's buffers).

    Returns:
        A :class:`FrontendResult`. A file that does not import ``ave_core.lang`` gets
        ``uses_ave=False`` and nothing else. Never raises on bad input: syntax errors and
        every user error become diagnostics; an internal failure becomes AVE900.
    """
    if text.startswith("\ufeff"):
        text = text[1:]            # a UTF-8 BOM is not part of the document (LSP, Python)
    source = SourceText(text, path)
    try:
        tree = parse_source(text, path)
    except SyntaxError as e:
        if "ave_core" not in text:
            return FrontendResult(False)
        if "\x00" in text and "null bytes" in str(e.msg):
            pos = source.offset_to_position(text.index("\x00"))
            return FrontendResult(True, [Diagnostic(
                "AVE100", f"syntax error: {e.msg}", path,
                Range(pos, pos.__class__(pos.line, pos.character + 1)))], files=[path])
        line0 = max(0, (e.lineno or 1) - 1)
        col = max(0, (e.offset or 1) - 1)
        line_text = source.line(line0)
        if col > len(line_text) or (e.text is not None and col > len(e.text.rstrip("\r\n"))):
            # some tokenizer errors count UTF-8 bytes, not code points
            col = len(line_text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))
        start = source.position_from_char(line0, col)
        end_line0 = max(line0, (getattr(e, "end_lineno", None) or e.lineno or 1) - 1)
        end_col = getattr(e, "end_offset", None)
        if end_col is not None and end_col > (e.offset or 0) and end_line0 == line0 and \
                end_col - 1 <= len(source.line(end_line0)):
            end = source.position_from_char(end_line0, end_col - 1)
        else:
            end = source.position_from_char(line0, col + 1)
        if end <= start:
            end = start.__class__(start.line, start.character + 1)
        return FrontendResult(True, [Diagnostic("AVE100", f"syntax error: {e.msg}", path,
                                                Range(start, end))], files=[path])
    except (ValueError, RecursionError, MemoryError) as e:
        if "ave_core" not in text:
            return FrontendResult(False)
        # (CPython's parser raises MemoryError('') on 100,000 nested unary operators: the
        # message ended at the colon; a review helper)
        why = str(e) or {MemoryError: "the parser ran out of memory (nested too deeply?)",
                         RecursionError: "nested too deeply"}.get(type(e), type(e).__name__)
        return FrontendResult(True, [Diagnostic("AVE100", f"cannot parse the file: {why}",
                                                path, source.line_range(0))], files=[path])
    loader = ModuleLoader(workspace, overlay)
    module = ModuleContext(os.path.abspath(path) if path and not path.startswith("<") else path,
                           text, tree, loader)
    module.path = path
    module.source = source
    loader.cache[os.path.abspath(path)] = module
    result = FrontendResult(module.uses_ave, files=[path])
    if not module.uses_ave:
        return result
    seen: dict[tuple, Diagnostic] = {}
    cyc, imported = _partial_import(module)
    if cyc is not None:
        result.diagnostics.append(cyc)

    def add(d: Diagnostic) -> None:
        key = (d.code, d.file, d.range, d.message)
        if key not in seen:
            seen[key] = d
            result.diagnostics.append(d)
            return
        old = seen[key]
        new_cfg = [n for n in d.notes if n.startswith("in the specialization")]
        if new_cfg:
            for i, n in enumerate(old.notes):
                if n.startswith("in the specialization"):
                    old.notes[i] = n.replace("in the specialization ", "in the specializations ",
                                             1) + "; " + new_cfg[0].split(" ", 3)[3]
                    break

    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        deco = _kernel_decorator(module, node)  # type: ignore[arg-type]
        if deco is None:
            continue
        result.kernel_names.append((node.name, node.lineno - 1))
        try:
            _compile_kernel(module, node, deco, result, add)  # type: ignore[arg-type]
        except AveError as e:
            add(e.to_diagnostic(module.source, module.source.line_range(node.lineno - 1)))
        except RecursionError:
            add(Diagnostic("AVE121", "the kernel is nested too deeply to compile", path,
                           module.source.line_range(node.lineno - 1)))
        except Exception as e:  # never crash on any input
            import traceback
            add(Diagnostic("AVE900", f"internal error in the front end: {type(e).__name__}: "
                           f"{e}", path, module.source.line_range(node.lineno - 1),
                           notes=traceback.format_exc().splitlines()[-6:]))
    for d in _suppression_diagnostics(text, path, source):
        add(d)
    files = {path}
    for k in result.kernels:
        files.update(k.files)
    # (the order of their initialization is checked: saving one re-checks this file)
    files.update(f for f in imported if f != os.path.abspath(path))
    result.files = sorted(files)
    return result


def _suppression_diagnostics(text: str, path: str, source: SourceText) -> list[Diagnostic]:
    """AVE122 for each ``# ave:`` comment that suppresses nothing (see
    :func:`ave_core.diagnostics.suppression_problems`): real comments only (found with
    :mod:`tokenize`; the same text in a string is no comment)."""
    import io
    import tokenize

    from ave_core.diagnostics import suppression_problems

    if "ave" not in text.lower():
        return []
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type != tokenize.COMMENT or ":" not in tok.string:
                continue
            (line, col) = tok.start
            for a, b, msg in suppression_problems(tok.string):
                out.append(Diagnostic("AVE122", msg, path, Range(
                    source.position_from_char(line - 1, col + a),
                    source.position_from_char(line - 1, col + max(b, a + 1)))))
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return out


def _workspace_file(module: ModuleContext, level: int, modname: str | None
                    ) -> tuple[str, list[str]] | None:
    """The workspace file ``from <level dots><modname> import ...`` in ``module`` reads
    (as :meth:`Compiler.resolve_from_import` finds it) and the ``__init__.py`` files of
    the packages on the way to it, outermost first (Python initializes those before it);
    None for an installed package or a missing module."""
    if level == 0 and (modname or "").split(".")[0] == "ave_core":
        return None                     # the DSL itself (not a workspace helper)
    loader = module.loader
    parts = (modname or "").split(".") if modname else []
    for cand in loader.resolve(module.path, level, modname or ""):
        if os.path.isfile(cand) or os.path.abspath(cand) in loader.overlay:
            path = os.path.abspath(cand)
            # the package directories between the search root and the module
            d = os.path.dirname(path)
            if os.path.basename(path) == "__init__.py":
                d = os.path.dirname(d)
            n = len(parts) - 1
            inits = []
            for _ in range(max(n, 0)):
                init = os.path.join(d, "__init__.py")
                if os.path.isfile(init) or init in loader.overlay:
                    inits.append(init)
                d = os.path.dirname(d)
            return path, inits[::-1]
    return None


def _scan_bindings(node: ast.AST, out: set[str], nested_import: list) -> None:
    """The module-level names a statement binds (not inside function or class bodies: a
    local or a class attribute is no module name); imports inside compound statements are
    noted in ``nested_import``."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(node.name)
        for d in getattr(node, "decorator_list", ()):
            _scan_bindings(d, out, nested_import)
        return
    if isinstance(node, ast.Lambda):
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        out.add(node.id)
    elif isinstance(node, ast.alias):
        out.add((node.asname or node.name).split(".")[0])
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        nested_import.append(node)
    for child in ast.iter_child_nodes(node):
        _scan_bindings(child, out, nested_import)


_DYNAMIC = frozenset({"globals", "vars", "exec", "eval", "setattr", "__import__"})


def _dynamic(tree: ast.Module) -> bool:
    """Module-level code that may bind names the text does not show (``globals()[n] =``,
    ``setattr(sys.modules[__name__], ...)``, ``exec``) or a module ``__getattr__``."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if n.name == "__getattr__":
                return True
            continue
        if isinstance(n, (ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _DYNAMIC:
            return True
        if isinstance(n, ast.Attribute) and n.attr == "modules" and \
                isinstance(n.value, ast.Name) and n.value.id == "sys":
            return True
        todo.extend(ast.iter_child_nodes(n))
    return False


class _Unfollowed(Exception):
    """An import the simulation does not follow (inside ``try``/``if``/...): no verdict."""


def _partial_import(root: ModuleContext) -> tuple[Diagnostic | None, list[str]]:
    """Python's order of module initialization, followed statically over the workspace
    files a kernel file imports (nothing is imported or run): a ``from m import name`` that
    runs while ``m`` is still being initialized -- a circular import, ``m`` -> ... -> the
    importing file -> ``m`` -- and before ``m`` binds ``name`` raises ImportError
    ("cannot import name ... from partially initialized module"; Python's reference,
    "The import system", §5.3). Packages' ``__init__.py`` run before their modules; a
    star import binds what its module has bound. No finding (never a false one) when a
    file on the way imports inside ``if``/``try``/``with`` (which order Python takes
    depends on run-time facts) or binds names dynamically (``globals()``, ``setattr``,
    ``exec``, a module ``__getattr__``).

    Returns:
        AVE113 at the kernel file's import statement that starts the chain, with the
        statement that fails as a related location (None when every import succeeds or
        the order cannot be followed), and the workspace files followed.
    """
    state: dict[str, set[str]] = {}          # file -> names bound so far
    dynamic: set[str] = set()
    active: list[str] = []                   # files being initialized (the import chain)
    root_stmt: list = [None]                 # the kernel file's statement running

    def load(path: str) -> ModuleContext | None:
        return root.loader.load(path) if path != os.path.abspath(root.path) else root

    def enter(path: str) -> tuple | None:
        if path in state:
            return None
        ctx = load(path)
        if ctx is None:                 # unreadable: reported where a kernel uses it
            state[path] = set()
            dynamic.add(path)
            return None
        return init(ctx)

    def init(ctx: ModuleContext) -> tuple | None:
        path = os.path.abspath(ctx.path)
        state[path] = set()
        if _dynamic(ctx.tree):
            dynamic.add(path)
        active.append(path)
        try:
            for node in ctx.tree.body:
                if ctx is root:
                    root_stmt[0] = node
                if isinstance(node, ast.ImportFrom):
                    found = _workspace_file(ctx, node.level, node.module)
                    if found is not None:
                        target, inits = found
                        for p in inits + [target]:
                            bad = enter(p)
                            if bad is not None:
                                return bad
                        for a in node.names:
                            if a.name == "*":
                                state[path] |= state[target]
                                continue
                            if a.name in state[target] or target in dynamic:
                                continue
                            # not bound (yet): Python imports the submodule of that name
                            sub = _workspace_file(ctx, node.level, ((node.module + ".")
                                                  if node.module else "") + a.name)
                            if sub is not None:
                                bad = enter(sub[0])
                                if bad is not None:
                                    return bad
                            elif target in active:
                                return (ctx, node, target, a.name)
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        found = _workspace_file(ctx, 0, a.name)
                        if found is not None:
                            for p in found[1] + [found[0]]:
                                bad = enter(p)
                                if bad is not None:
                                    return bad
                elif isinstance(node, ast.Delete):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            state[path].discard(t.id)
                    continue
                nested: list = []
                _scan_bindings(node, state[path], nested)
                if nested and not isinstance(node, (ast.Import, ast.ImportFrom)):
                    raise _Unfollowed
            return None
        finally:
            active.pop()

    try:
        bad = init(root)
    except _Unfollowed:
        return None, list(state)
    if bad is None:
        return None, list(state)
    ctx, node, target, name = bad
    start = root_stmt[0]
    mod = os.path.relpath(target, os.path.dirname(os.path.abspath(root.path)))
    where = os.path.relpath(ctx.path, os.path.dirname(os.path.abspath(root.path)))
    return Diagnostic(
        "AVE113", f"importing this file fails in Python: `{where}` line {node.lineno} "
        f"imports `{name}` from `{mod}` while `{mod}` is still being initialized and has not "
        f"defined it yet (a circular import: ImportError)", root.path, root.range_of(start),
        related=[Related(Location(ctx.path, ctx.range_of(node)),
                         f"`from ... import {name}` runs here, before `{mod}` defines it")]
    ), list(state)


def _compile_kernel(module: ModuleContext, fn: ast.FunctionDef, deco: ast.AST,
                    result: FrontendResult, add: Callable[[Diagnostic], None]) -> None:
    if isinstance(fn, ast.AsyncFunctionDef):
        raise AveError("AVE101", "a kernel cannot be async", range=module.range_of(fn),
                       file=module.path)
    # a throwaway builder for compile-time evaluation of the decorator and defaults
    pre = KernelBuilder(module, fn, {"threads": 32, "warp_size": 32, "target": "nvidia"}, {},
                        None)
    d = _decorator_args(module, deco, fn, pre)
    defaults = _constexpr_params(module, fn, pre)
    specs: list[tuple[int | None, dict]] = []
    if d["configs"] is None:
        specs.append((None, dict(defaults)))
    else:
        for i, cfg in enumerate(d["configs"]):
            unknown = [k for k in cfg if k not in defaults]
            if unknown:
                raise pre.err("AVE117", f"configs[{i}] sets {', '.join(map(repr, unknown))}, "
                              f"which {'is not a constexpr' if len(unknown) == 1 else 'are not constexprs'} "
                              f"of `{fn.name}`", d["configs_node"])
            vals = dict(defaults)
            vals.update(cfg)
            specs.append((i, vals))
    built = []
    fixed: list[Diagnostic] = []
    for idx, vals in specs:
        b = KernelBuilder(module, fn, d, vals, idx)
        b._root = b.block  # type: ignore[attr-defined]
        b._inline_defs = []
        try:
            k = b.build()
        except AveError as e:
            diag = e.to_diagnostic(module.source, module.source.line_range(fn.lineno - 1))
            if idx is not None and len(specs) > 1:
                diag.notes.append(f"in the specialization configs[{idx}] = "
                                  f"{_fmt_cfg(d['configs'][idx])}")
            if diag.fix is not None:
                fixed.append(diag)
            add(diag)
            continue
        built.append(idx)
        result.kernels.append(k)
    def where(fix: dict) -> tuple:
        r = fix["range"]
        return (r["start"]["line"], r["start"]["character"], r["end"]["line"],
                r["end"]["character"])
    by_range: dict = {}
    for diag in fixed:
        by_range.setdefault(where(diag.fix), set()).add(diag.fix["new"])
    for diag in fixed:
        if len(by_range[where(diag.fix)]) > 1:
            # specializations that want other texts there (W // 4 and W // 2): either
            # breaks the other (a review helper)
            diag.fix = None
            diag.notes.append("no quick fix: the specializations want different shapes here")
    fixed = [d for d in fixed if d.fix is not None]
    if built and fixed:
        # A fix edits text every specialization compiles: where some compile as it is,
        # it would break them (a view right for configs[1] and not for configs[0]: the
        # fix for configs[0] broke configs[1], whose fix broke configs[0] again -- the
        # editor flipped between them; a review helper). No fix then.
        for diag in fixed:
            diag.fix = None
            many = len(built) > 1
            diag.notes.append(f"no quick fix: the specialization{'s' if many else ''} "
                              + ", ".join(f"configs[{i}]" for i in built)
                              + f" compile{'' if many else 's'} with this text")


def _fmt_cfg(cfg: dict) -> str:
    return "dict(" + ", ".join(f"{k}={v!r}" for k, v in cfg.items()) + ")"


def compile_file(path: str, *, workspace: str | None = None) -> FrontendResult:
    """Read ``path`` as Python reads it (UTF-8, a BOM dropped, or the encoding of a PEP 263
    coding line) and :func:`compile_source` it.

    Raises:
        OSError: the file cannot be read.
        UnicodeDecodeError: it is not text in its encoding.
    """
    with open(path, "rb") as f:
        text = decode_source(f.read())      # as Python reads it (a BOM, a coding line)
    return compile_source(text, path, workspace=workspace)


def main(argv: list[str] | None = None) -> int:
    """``python -m ave_core.compiler.frontend FILE``: print the IR of each specialization."""
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m ave_core.compiler.frontend FILE [--workspace DIR]",
              file=sys.stderr)
        return 2
    ws = None
    if "--workspace" in argv:
        i = argv.index("--workspace")
        ws = argv[i + 1]
        del argv[i:i + 2]
    res = compile_file(argv[0], workspace=ws)
    try:
        for k in res.kernels:
            print(ir.format_kernel(k))
        for dg in res.diagnostics:
            print(dg.format_text(), file=sys.stderr)
            for n in dg.notes:
                print("    " + n, file=sys.stderr)
        sys.stdout.flush()
    except BrokenPipeError:
        # (piped into `head`: the reader is gone; no traceback, as other CLI tools)
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if res.diagnostics else 0


class _Span(NamedTuple):
    """What ``SourceText.range_of`` reads of a node: its start and end (1-based lines,
    UTF-8 byte columns)."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int


if __name__ == "__main__":
    raise SystemExit(main())


class SpecializationError(Exception):
    """:func:`specialize` could not compile the kernel (``.diagnostics`` says why)."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.format_text() for d in diagnostics) or "no such kernel")


def launch_roots() -> list[str]:
    """The directories of this program's ``sys.path`` a launch looks helper imports up in
    besides the kernel's project: where Python found the kernel's own package (the
    working directory, a ``src/`` on the path, an editable install's source) -- not the
    standard library or installed packages (site-packages), whose modules stay libraries.
    The launch had only the kernel file's directory: a helper Python imported from the
    package root was "an installed library" that "cannot be called inside a kernel" (a
    review helper)."""
    import sys
    import sysconfig
    skip = set()
    for k in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            skip.add(os.path.abspath(sysconfig.get_paths()[k]))
        except KeyError:
            pass
    out = []
    for p in sys.path:
        d = os.path.abspath(p or os.getcwd())
        if d in skip or "site-packages" in d or "dist-packages" in d or \
                not os.path.isdir(d) or d in out:
            continue
        out.append(d)
    return out


def specialize(text: str, path: str, kernel_name: str, constexprs: dict | None = None, *,
               workspace: str | None = None) -> KernelIR:
    """Compile one kernel of a file for the given constexpr values (defaults for the rest).

    This is what a launch does: the specialization need not be one of ``configs``.

    Raises:
        SpecializationError: syntax error, no such kernel, unknown constexpr, or any
            front-end error (with the diagnostics).
    """
    res = FrontendResult(True)
    try:
        tree = parse_source(text, path)
    except SyntaxError:
        raise SpecializationError(compile_source(text, path).diagnostics) from None
    loader = ModuleLoader(workspace or os.path.dirname(os.path.abspath(path)),
                          extra_roots=launch_roots())
    module = ModuleContext(path, text, tree, loader)
    loader.cache[os.path.abspath(path)] = module
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel_name
               and _kernel_decorator(module, n) is not None), None)
    if fn is None:
        raise SpecializationError([Diagnostic("AVE102", f"no kernel `{kernel_name}` in {path}",
                                              path, ZERO_RANGE)])
    deco = _kernel_decorator(module, fn)
    pre = KernelBuilder(module, fn, {"threads": 32, "warp_size": 32, "target": "nvidia"}, {},
                        None)
    try:
        d = _decorator_args(module, deco, fn, pre)
        defaults = _constexpr_params(module, fn, pre)
    except AveError as e:
        raise SpecializationError([e.to_diagnostic(module.source)]) from None
    vals = dict(defaults)
    for k, v in (constexprs or {}).items():
        if k not in defaults:
            raise SpecializationError([Diagnostic(
                "AVE117", f"`{k}` is not a constexpr of `{kernel_name}`", path,
                module.range_of(fn))])
        vals[k] = v
    idx = None
    for i, cfg in enumerate(d["configs"] or []):
        if all(vals.get(k) == v for k, v in cfg.items()):
            idx = i
            break
    b = KernelBuilder(module, fn, d, vals, idx)
    b._root = b.block  # type: ignore[attr-defined]
    b._inline_defs = []
    try:
        return b.build()
    except AveError as e:
        res.diagnostics.append(e.to_diagnostic(module.source, module.range_of(fn)))
        raise SpecializationError(res.diagnostics) from None


def specialize_kernel(kernel_obj: Any, constexprs: dict) -> KernelIR:
    """Specialize an ``@ave.kernel`` object for ``constexprs`` from its source file (what a
    launch compiles, for the interpreter and the JIT alike).

    Raises:
        FileNotFoundError: the kernel's source file is unknown.
        SpecializationError: the kernel does not compile for these constexprs.
    """
    path = kernel_obj.source_file
    if path is None:
        raise FileNotFoundError(f"cannot find the source file of kernel {kernel_obj.name}")
    with open(path, "rb") as f:
        text = decode_source(f.read())      # as Python read it to define the kernel
    return specialize(text, path, kernel_obj.fn.__name__, constexprs)

