"""Ave IR: typed, structured, with a source location on every op.

The front end (:mod:`ave_core.compiler.frontend`) produces one :class:`KernelIR` per kernel
specialization. The IR is MLIR-shaped — SSA :class:`Value` s, :class:`Op` s with attributes
and nested regions (:class:`Block` s) — so that lowering to MLIR's ``scf``/``arith``/``gpu``
dialects is one op at a time, and so that the analysis and the interpreter walk the same
structure. Loops (``scf.for``) and branches (``scf.if``) stay structured; full unrolling is
a separate pass (:mod:`ave_core.compiler.unroll`).

Types:

* :class:`ScalarType` — a runtime scalar, uniform or per thread (``i32`` index math,
  ``f32`` softmax scale, ``i1`` predicates).
* :class:`TensorType` — a global-memory tensor parameter (shape and strides are runtime
  ``i32`` values read with ``ave.dim`` / ``ave.stride``; innermost stride 1).
* :class:`TileType` — a view of memory with a static shape: ``space`` is ``"global"``
  (a box of a tensor at runtime offsets), ``"shared"`` or ``"register"``; ``layout`` maps
  tile coordinates to element offsets in the backing allocation (``None`` for global tiles,
  whose layout is the tensor's row-major strides).
* :class:`FragmentType` — register data distributed over the threads of the workgroup by
  a TV layout (``(thread, value) -> coordinate``).

Op names and their operands/attributes are listed in ``docs/ir.md``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from ave_core.diagnostics import Location, Range, ZERO_RANGE
from ave_core.lang.dtypes import DType

_ids = itertools.count()


# ----------------------------------------------------------------------------- types

@dataclass(frozen=True)
class ScalarType:
    """A runtime scalar of ``dtype``."""

    dtype: DType

    def __str__(self) -> str:
        return str(self.dtype)


@dataclass(frozen=True)
class TensorType:
    """A global-memory tensor of ``dtype`` and ``rank`` (runtime shape and strides)."""

    dtype: DType
    rank: int
    gathered_dim: int | None = None  # set for ave.gather / ave.scatter views

    def __str__(self) -> str:
        g = f", gather={self.gathered_dim}" if self.gathered_dim is not None else ""
        return f"tensor<{self.dtype}, rank={self.rank}{g}>"


@dataclass(frozen=True)
class TileType:
    """A memory tile: static ``shape`` (elements), ``dtype``, ``space`` and ``layout``."""

    dtype: DType
    shape: tuple[int, ...]
    space: str
    layout: Any = None
    reg_class: str | None = None

    @property
    def num_elements(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        """Byte size of the tile's logical elements."""
        return self.num_elements * self.dtype.bytes

    def __str__(self) -> str:
        shape = "x".join(map(str, self.shape))
        lay = f", {self.layout!r}" if self.layout is not None else ""
        return f"tile<{self.space}, {shape}x{self.dtype}{lay}>"


@dataclass(frozen=True)
class FragmentType:
    """Register data of static ``shape`` distributed over threads by ``layout``.

    ``layout`` is a :class:`~ave_core.lang.layout.TVLayout`, or a
    :class:`ProjectedLayout` for the result of a reduction (each thread holds the
    reduced coordinates of the elements it held before), or ``None`` for a fragment whose
    every element is held by every thread (a broadcast constant).
    """

    dtype: DType
    shape: tuple[int, ...]
    layout: Any = None
    reg_class: str | None = None

    def __str__(self) -> str:
        shape = "x".join(map(str, self.shape))
        return f"frag<{shape}x{self.dtype}, {self.layout!r}>"


@dataclass(frozen=True)
class ProjectedLayout:
    """A TV layout with some tile axes removed (the layout of a reduction's result).

    ``coord(t, v)`` is ``parent.coord(t, v)`` without the axes not in ``keep``; several
    values of a thread may hold the same reduced element (replication).
    """

    parent: Any
    keep: tuple[int, ...]

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return tuple(self.parent.tile_shape[a] for a in self.keep)

    @property
    def num_threads(self) -> int:
        return self.parent.num_threads

    @property
    def num_values(self) -> int:
        return self.parent.num_values

    def coord(self, t: Any, v: Any) -> tuple:
        c = self.parent.coord(t, v)
        return tuple(c[a] for a in self.keep)

    def coords_table(self) -> np.ndarray:
        """``int64`` ``(num_threads, num_values, len(keep))``: the reduced coordinate of
        every (t, v), as TV layouts have it (``ave.convert`` of a reduction's result
        needs it: AttributeError, AVE900 in the checker and the interpreter; a review
        helper)."""
        return np.ascontiguousarray(self.parent.coords_table()[..., list(self.keep)])

    def __repr__(self) -> str:
        return f"project({self.parent!r}, keep={self.keep})"


@dataclass(frozen=True)
class BroadcastLayout:
    """A projected layout seen at the full shape again (``x[:, None]`` broadcast)."""

    parent: Any
    keep: tuple[int, ...]
    tile_shape: tuple[int, ...]

    @property
    def num_threads(self) -> int:
        return self.parent.num_threads

    @property
    def num_values(self) -> int:
        return self.parent.num_values

    def coord(self, t: Any, v: Any) -> tuple:
        c = self.parent.coord(t, v)
        return tuple(c[a] if a in self.keep else 0 for a in range(len(self.tile_shape)))

    def __repr__(self) -> str:
        return f"broadcast({self.parent!r}, keep={self.keep})"


# ----------------------------------------------------------------------------- values/ops

class Value:
    """An SSA value: the result of an op, or an argument of a block."""

    __slots__ = ("id", "type", "name", "owner", "affine")

    def __init__(self, type: Any, name: str | None = None, owner: Any = None) -> None:
        self.id = next(_ids)
        self.type = type
        self.name = name
        self.owner = owner
        # For i32 scalars: a linear form {Value: coeff, None: constant} when known.
        self.affine: dict | None = None

    def __repr__(self) -> str:
        return f"%{self.name or ''}{self.id}"


@dataclass(frozen=True)
class Loc:
    """Source location of an op: file, range, and the inlining chain (call sites,
    outermost first: the call in the kernel's body, then the calls inside the helpers it
    runs, down to the one that made the op -- the front end built it innermost first, while
    every reader took ``[0]`` for the kernel's call: a finding two helpers deep was shown
    at the top of the kernel's file and its call's ``# ave: ignore`` did nothing; a review
    helper).

    ``stmt`` is where a new statement can go right before the statement the op comes
    from: ``(0-based line, that line's indentation)``, or None when that statement does
    not start its line (``x = 1; a = f()``) or is unknown. A quick fix inserts there, not
    at the op's own expression (``a = ave.ldmatrix(...)`` starts at ``a``). It takes no
    part in comparisons, hashing or the printed form."""

    file: str
    range: Range = ZERO_RANGE
    inlined_from: tuple["Loc", ...] = ()
    stmt: tuple[int, str] | None = field(default=None, compare=False, repr=False)

    def location(self) -> Location:
        return Location(self.file, self.range)

    @property
    def report_key(self) -> tuple:
        """What the analysis reports one finding per: ``(file, range, call)``, where
        ``call`` is ``(file, range, via)`` of the outermost call (the kernel's) when the op
        comes from a helper in another file (``via``: the calls between it and the op's
        helper, outermost first), else None. Each call of an imported helper is its
        own finding, shown and suppressed at that call (one finding for all of them, shown
        at the first failing call: an ``# ave: ignore`` there hid the other calls'; a review
        helper); a helper in the kernel's own file is shown at the op's line, once."""
        site = self.inlined_from[0] if self.inlined_from else None
        # (with the calls in between, ``(file, range)`` each: a finding made through
        # another path of calls is another finding -- a `# ave: ignore` on one of those
        # calls suppresses the findings made through it, and one path's comment hid the
        # other's; a review helper)
        call = (site.file, site.range,
                tuple((s.file, s.range) for s in self.inlined_from[1:])) \
            if site is not None and site.file != self.file else None
        return (self.file, self.range, call)

    def __str__(self) -> str:
        p = self.range.start
        return f"{self.file}:{p.line + 1}:{p.character + 1}"


UNKNOWN_LOC = Loc("<unknown>")


@dataclass(eq=False)
class Block:
    """A region's single block: arguments and a list of ops."""

    args: list[Value] = field(default_factory=list)
    ops: list["Op"] = field(default_factory=list)

    def add_arg(self, type: Any, name: str | None = None) -> Value:
        v = Value(type, name, owner=self)
        self.args.append(v)
        return v


@dataclass(eq=False)
class Op:
    """One operation. ``name`` is ``dialect.op`` (``"ave.copy"``, ``"scf.for"``)."""

    name: str
    operands: list[Value] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    regions: list[Block] = field(default_factory=list)
    loc: Loc = UNKNOWN_LOC

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results")
        return self.results[0]

    def walk(self) -> Iterator["Op"]:
        """This op and all ops nested in its regions, in program order."""
        yield self
        for r in self.regions:
            for op in r.ops:
                yield from op.walk()


@dataclass(frozen=True)
class Param:
    """A runtime kernel parameter: a tensor or a scalar."""

    name: str
    type: Any
    value: Value
    range: Range


@dataclass
class KernelIR:
    """One specialization of one kernel.

    Attributes:
        name: the kernel function's name.
        file: the file it was read from.
        line: 0-based line of the ``def``.
        range: range of the kernel's name in the ``def``.
        threads: workgroup size (threads).
        warp_size: 32 (NVIDIA) or 64 (AMD).
        target: ``"nvidia"`` or ``"amd"``.
        constexprs: the constexpr values of this specialization.
        config_index: index into the decorator's ``configs`` (``None``: defaults).
        params: runtime parameters, in order.
        body: the kernel body.
        files: every file whose text this kernel was built from (helpers' files too).
        bindings: ``(file, range of the name, name, value)`` for every assignment of an IR
            value to a name while the kernel was built (a helper's result, an alias, a
            loop variable): what a name stands for at that point, for hover.
    """

    name: str
    file: str
    line: int
    range: Range
    threads: int
    warp_size: int
    target: str
    constexprs: dict
    config_index: int | None
    params: list[Param]
    body: Block
    files: tuple[str, ...] = ()
    bindings: list = field(default_factory=list, compare=False, repr=False)

    def walk(self) -> Iterator[Op]:
        for op in self.body.ops:
            yield from op.walk()

    def ops(self, name: str) -> list[Op]:
        """All ops called ``name``, in program order (nested ones included)."""
        return [op for op in self.walk() if op.name == name]


# ----------------------------------------------------------------------------- printer

def _fmt_attr(v: Any) -> str:
    if isinstance(v, Block):
        return "<region>"
    if isinstance(v, str):
        return repr(v)
    return repr(v) if not isinstance(v, DType) else str(v)


def shown_loops(loops: Sequence[tuple[str, int]], op: "Op | None") -> tuple:
    """The loop iterations a witness names for ``op``: ``loops``, the runtime loops'
    ``(name, value)`` pairs (``attrs["loop_indices"]`` of the unrolled op, outermost
    first), then the compile-time loops the front end built ``op`` in (``ave.static_range``,
    a ``for`` over a tuple: ``attrs["static_indices"]``, outermost first). A compile-time
    loop's name already taken gets a ``'`` (a helper's ``kt`` inside the kernel's ``kt``
    loop: ``kt'``). The analysis and the interpreter name iterations alike (replay
    matches them)."""
    static = op.attrs.get("static_indices", ()) if op is not None else ()
    if not static:
        return tuple(loops)
    out = list(loops)
    names = {n for n, _ in out}
    for n, v in static:
        while n in names:
            n += "'"
        names.add(n)
        out.append((n, v))
    return tuple(out)


#: attributes the IR text leaves out: where the front end built an op (compile-time loop
#: iterations; the source range of a wait's count, for a quick fix), like the op's
#: location -- the JIT cache keys the text, and moving a kernel in its file must keep it
_UNPRINTED_ATTRS = frozenset({"static_indices", "n_literal"})


def format_block(block: Block, indent: int = 1) -> list[str]:
    pad = "  " * indent
    out: list[str] = []
    for op in block.ops:
        res = ", ".join(repr(r) for r in op.results)
        lhs = f"{res} = " if res else ""
        operands = ", ".join(repr(o) for o in op.operands)
        attrs = ", ".join(f"{k}={_fmt_attr(v)}" for k, v in op.attrs.items()
                          if v is not None and k not in _UNPRINTED_ATTRS)
        attrs = f" {{{attrs}}}" if attrs else ""
        types = ", ".join(str(r.type) for r in op.results)
        types = f" : {types}" if types else ""
        out.append(f"{pad}{lhs}{op.name}({operands}){attrs}{types}  // {op.loc}")
        for i, r in enumerate(op.regions):
            args = ", ".join(f"{a!r}: {a.type}" for a in r.args)
            out.append(f"{pad}  ^region{i}({args}):")
            out.extend(format_block(r, indent + 2))
    return out


def format_kernel(k: KernelIR) -> str:
    """Human-readable text of a kernel (for ``--dump`` and debugging; not parsed back)."""
    params = ", ".join(f"{p.value!r} {p.name}: {p.type}" for p in k.params)
    head = (f"kernel @{k.name}({params}) threads={k.threads} warp_size={k.warp_size} "
            f"target={k.target} constexprs={k.constexprs}")
    return "\n".join([head + " {", *format_block(k.body), "}"])


def shared_plan(kernel: "KernelIR") -> tuple[dict, int]:
    """Byte ranges ``{id(alloc op): (lo, hi)}`` of a kernel's shared allocations (program
    order, each 128-byte aligned) and the total bytes. The interpreter, the analysis and the
    code generator all place shared memory with this one function.

    In an unrolled kernel (:mod:`ave_core.compiler.unroll`) an allocation inside a loop
    appears once per iteration; each copy is keyed too, and all copies of one front-end
    op (``op.source``) share its bytes, as the one static buffer of the compiled kernel
    does (the analysis raised KeyError on an ``ave.alloc`` inside a runtime loop)."""
    size = 0
    plan: dict[int, tuple[int, int]] = {}
    for op in kernel.walk():
        if op.name == "ave.alloc" and op.attrs["space"] == "shared":
            src = getattr(op, "source", op)
            rng = plan.get(id(src))
            if rng is None:
                size = (size + 127) // 128 * 128
                rng = plan[id(src)] = (size, size + op.attrs["bytes"])
                size += op.attrs["bytes"]
            plan[id(op)] = rng
    return plan, size
