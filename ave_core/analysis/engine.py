"""Tag propagation over an unrolled kernel, and the checks of its assertions.

The engine executes one unrolled specialization abstractly, vectorized over the threads of
the workgroup (the workgroup size is a compile-time constant, so every thread is
enumerated exactly — registers are arrays indexed by thread id, as in the paper, §5):

* every element carries a **tag**: one value per named field (``row``, ``k``, ``head``
  ...), each either absent (⊥ for that field), a symbolic integer
  (:mod:`~ave_core.analysis.symbolic`) or ⊤ (conflict); plus the guard under which it holds
  (masks over runtime sizes) and where it came from (the ``ave.tag`` and the last op that
  moved it: the witness' related locations);
* shared memory is tracked per **byte** (vector accesses, packed types and views behave
  as on the hardware); async copies land at the ``wait_async`` that retires their group;
  ``ave.reset`` forgets tags (not what data the bytes hold); barriers never clear tags;
  global writes are not tracked;
* compute follows DESIGN §2: an elementwise op or a reduction keeps the fields its inputs
  agree on; an MMA result takes A's row fields and B's column fields; joins (branches on
  runtime values, ``ave.where``) keep identical values, let ⊥ conform and make
  disagreements ⊤;
* a branch on a runtime value whose arms touch shared memory (and issue no asynchronous
  copies) runs each arm from the state before it and joins the two after it
  (:meth:`Engine.op_scf_if`): the shared-memory tags (a byte one path leaves alone keeps
  its old tags on that path; under a condition that differs across threads, a byte the
  two arms write by different threads may be written by neither), and, when every thread
  takes the same arm, the race state. A branch on the same condition as an enclosing one
  has one path. Arms with asynchronous copies run one after the other on one state: their
  plain writes are weak (old and new tags joined: the write may not happen); their
  asynchronous copies are weak under a condition that differs across threads and land
  as issued under one every thread takes the same way, the bytes marked with the
  branch conditions (:attr:`Engine.landed_when`): a read checks them under its own
  iteration's trip constraints (a prefetch ``if k0 + 2 * BK < K:`` is read in the
  iteration the same sizes let run; merging would make every such pipeline ⊤), and
  where they can fail the read sees what the bytes held before (AVE203, with the
  sizes). Arms that leave different groups in flight
  (a ``commit_async`` in one arm only) stop the analysis (AVE205). Branches on
  thread/warp ids and constexprs are exact (per-thread masks); there a ``wait_async``
  retires the waiting threads' own copies (PTX ``cp.async.wait_group``), and a
  ``commit_async`` stops the analysis (each thread's groups would differ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Sequence

import numpy as np

from ave_core.analysis import accumulation
from ave_core.analysis.bounds import BoundsChecker
from ave_core.analysis.races import RaceTracker
from ave_core.analysis.symbolic import (_BIAS, _SHIFT, ABSENT, TOP, Atom, CondTable, SymInt,
                                        SymOverflow,
                                        _used_columns,
                                        all_last, any_last,
                                        SymTable, code_conc, code_key, rows_put, rows_take,
                                        sym_binop, sym_compare, unpack)
from ave_core.compiler.fragments import broadcast_index, convert_index
from ave_core.compiler.ir import (Block, FragmentType, KernelIR, Op, ScalarType, TensorType,
                                  TileType, Value, shown_loops)


class VariantRuledOut(Exception):
    """The kernel's preconditions (``ave.assume``) hold for no sizes that run this
    trip-count variant (``ave.assume(KT >= 2)`` where the variant runs the loop once): the
    variant is not analysed."""

    def __init__(self, message: str, op: Op | None = None) -> None:
        super().__init__(message)
        self.op = op


class AnalysisLimit(Exception):
    """A construct the analysis cannot model precisely (reported as ``unknown``)."""

    def __init__(self, message: str, op: Op | None = None) -> None:
        super().__init__(message)
        self.op = op


# ============================================================================ tag arrays

def pack(key: Any, conc: Any) -> np.ndarray:
    """Packed field values of symbolic integers ``LIN[key] + conc`` (see
    :data:`~ave_core.analysis.symbolic.TOP`).

    Raises:
        AnalysisLimit: a concrete part of 2**39 or more in magnitude (a tag coordinate
            that large is not a tile coordinate), or a key past 2**23.
    """
    conc = np.asarray(conc, np.int64)
    key = np.asarray(key, np.int64)
    if conc.size and (int(conc.max()) >= _BIAS or int(conc.min()) <= -_BIAS):
        raise AnalysisLimit("a tag value beyond +-2**39 (not a tensor coordinate)")
    if key.size and int(key.max()) >= 1 << (63 - _SHIFT):
        raise AnalysisLimit("more than 2**23 symbolic tag values")
    return (key << _SHIFT) + conc + _BIAS


@dataclass
class Tags:
    """Tags of N elements over F fields (see the module docstring). Arrays are never
    mutated once a value holds them (operations build new ones), so values share them."""

    code: np.ndarray   # (N, F) int64 packed field values (ABSENT, TOP, or key/conc)
    cond: np.ndarray   # (N, GUARD) int32 guard rows (conjunctions of condition ids)
    src: np.ndarray    # (N,) int32 index of the ave.tag op (-1 none, -2 mixed)
    moved: np.ndarray  # (N,) int32 index of the exec record that last moved it (-1 none)
    via: np.ndarray = None  # (N,) int32 the move before that (e.g. the copy into shared)
    #: (N,) int64 what data the elements are, for write/write races (see :func:`data_ids`,
    #: :func:`_other_data`): equal ids, the same data; 0 unknown, -1 joined different
    #: data; None: computed (a new value: the shared-memory write gives it its ids)
    data: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.via is None:
            self.via = np.full(self.code.shape[0], -1, np.int32)

    @staticmethod
    def bottom(n: int, f: int) -> "Tags":
        return Tags(np.zeros((n, f), np.int64), np.zeros((n, CondTable.GUARD), np.int32),
                    np.full(n, -1, np.int32), np.full(n, -1, np.int32))

    @property
    def n(self) -> int:
        return self.code.shape[0]

    # views for readers (derived on demand)
    @property
    def pres(self) -> np.ndarray:
        return self.code != ABSENT

    @property
    def top(self) -> np.ndarray:
        return self.code == TOP

    @property
    def key(self) -> np.ndarray:
        return code_key(self.code)

    @property
    def conc(self) -> np.ndarray:
        return code_conc(self.code)

    def take(self, idx: Any) -> "Tags":
        # (rows_take for the 1-D arrays too: ``take``/``compress`` beat fancy indexing
        # there as well, by 1.5x for an index, 5x for a mask)
        return Tags(rows_take(self.code, idx), rows_take(self.cond, idx),
                    rows_take(self.src, idx), rows_take(self.moved, idx),
                    rows_take(self.via, idx),
                    None if self.data is None else rows_take(self.data, idx))

    def copy(self) -> "Tags":
        return Tags(self.code.copy(), self.cond.copy(), self.src.copy(), self.moved.copy(),
                    self.via.copy(), None if self.data is None else self.data.copy())

    def put(self, idx: Any, other: "Tags") -> None:
        rows_put(self.code, idx, other.code)
        rows_put(self.cond, idx, other.cond)
        self.src[idx] = other.src
        self.moved[idx] = other.moved
        self.via[idx] = other.via
        if other.data is not None or self.data is not None:
            if self.data is None:
                self.data = np.zeros(self.n, np.int64)
            self.data[idx] = 0 if other.data is None else other.data


_MUL = np.uint64(0x9E3779B97F4A7C15)      # (odd: x -> x * _MUL is a bijection mod 2**64)
_SALT = np.uint64(0xD1B54A32D192ED03)


#: the seeds of data_ids, one per kind of datum (a global element, a read whose mask
#: depends on sizes, a computed value, known bytes -- a compile-time constant, also the
#: 'other' value of a masked read --, part j > 0 of an element of several shared
#: granules and an element made of the parts of others, see Engine.granule_data and
#: element_data, and an element of ave.where whose condition the analysis does not
#: follow): ids of different kinds never meet but by chance
#: (an 'other' value of 0 hashed like element 0 of the first tensor read: a missed race,
#: found by a review helper)
_DATUM_GLOBAL, _DATUM_MASKED, _DATUM_COMPUTED, _DATUM_CONSTANT, _DATUM_PART = (
    0x6A09E667F3BCC908, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1, 0x510E527FADE682D1,
    0x9B05688C2B3E6C1F)
_DATUM_WHOLE, _DATUM_SELECT = 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179
_DATUM_JOINED = 0x428A2F98D728AE22


def constant_bytes(value: Any, dtype: Any) -> bytes | None:
    """The storage bytes (little-endian) of a compile-time constant ``value`` of ``dtype``,
    as a store writes them: floats rounded to nearest even (bf16, f16, fp8: the
    interpreter's :func:`ave_core.interp.numerics.to_storage`), integers wrapped to the
    dtype's width (two's complement; a float toward zero first), an i1 as 0 or 1 (true).
    None when the value has no float64 form (a huge integer for a float dtype) or no
    integer one (NaN, inf): the fill is then computed data."""
    from ave_core.interp.numerics import to_storage
    try:
        if dtype.is_float:
            with np.errstate(over="ignore", invalid="ignore"):
                return np.asarray(to_storage(dtype, np.asarray(float(value)))).tobytes()
        if dtype.name == "i1":
            return b"\x01" if value else b"\x00"      # a predicate: true or false
        if isinstance(value, float):
            value = math.trunc(value)                   # toward zero, as a store rounds
        return (int(value) % (1 << (8 * dtype.bytes))).to_bytes(dtype.bytes, "little")
    except (OverflowError, ValueError, TypeError):
        return None


def bytes_datum(raw: bytes) -> int:
    """The datum (see :attr:`Tags.data`) of known bytes: equal for equal bytes, whatever
    dtype wrote them (f32 zeros and two bf16 zeros are the same bytes, as the interpreter's
    byte compare sees them)."""
    return int(data_ids(_DATUM_CONSTANT, [np.int64(int.from_bytes(raw, "little")),
                                          np.int64(len(raw))], 1)[0])


def data_ids(seed: int, parts: Sequence[Any], n: int) -> np.ndarray:
    """Data ids (see :attr:`Tags.data`) of ``n`` elements: a 64-bit hash of ``seed`` and
    each element's ``parts`` (int64 arrays or scalars: a tensor and the packed symbolic
    global coordinates of the element, or the exec record of a write and the element's
    coordinates in its destination): per part ``h = (h ^ part) * odd; h ^= h >> 32``
    from a seed spread the same way. Only equality is used; two different data share an
    id with probability about 2**-64 per pair (then a write/write race of untagged data
    would be missed), and 0 / -1 (unknown / joined) are as unlikely."""
    h = np.full(n, np.uint64(seed % (1 << 64)), np.uint64)
    with np.errstate(over="ignore"):
        h *= _MUL
        h ^= _SALT
        for x in parts:
            x = np.asarray(x)
            h ^= x.view(np.uint64) if x.dtype == np.int64 else x.astype(np.uint64)
            h *= _MUL
            h ^= h >> np.uint64(32)
    return h.view(np.int64)


def agree(tags: Sequence[Tags], conds: CondTable) -> Tags:
    """Elementwise compute: keep the fields on which every input that has them agrees (a
    field only one input has is kept; a field one input has as ⊤ stays ⊤; differing
    values are dropped)."""
    base = tags[0]
    for t in tags[1:]:
        a, b = base.code, t.code
        if t is base or np.array_equal(a, b):
            code = a            # the same fields and values: they agree everywhere
        else:
            # (kept by contents: the result is shared like any tag array, never mutated)
            memo = conds.memo["agree"]
            key, code = memo.get(a, b)
            if code is None:
                code = _agree_code(a, b)
                memo.put(key, a, b, code)
        base = Tags(code, conds.conj_arrays(base.cond, t.cond), _merge_src(base.src, t.src),
                    np.maximum(base.moved, t.moved), base.via)
    if base.data is not None:       # a computed value is new data (one input: f(x))
        base = Tags(base.code, base.cond, base.src, base.moved, base.via)
    return base          # one input: its tags as they are (tag arrays are never mutated)


def _agree_code(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The field values of :func:`agree` for two packed arrays: equal values stay; where
    one side is ⊥ (ABSENT, 0) or ⊤ (TOP, -1) the result is the other side or ⊤ (``a | b``
    is exactly that: ``0 | x = x``, ``-1 | x = -1``); two different values give ⊥. Packed
    values are positive (:func:`pack` biases them), so ``min(a, b) <= 0`` says "one side is
    ⊥ or ⊤". Six vector operations instead of eleven (tested against the definition in
    tests/analysis/test_fast_paths.py)."""
    keep = a == b
    keep |= np.minimum(a, b) <= 0
    return np.where(keep, a | b, ABSENT)


def _join_code(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The field values of :func:`join`: equal values stay, ⊥ takes the other side
    (``0 | v = v``), anything else becomes ⊤ (see :func:`_agree_code`)."""
    keep = x == y
    keep |= x == ABSENT
    keep |= y == ABSENT
    return np.where(keep, x | y, TOP)


def _other_data(da: np.ndarray, db: np.ndarray, ca: np.ndarray, cb: np.ndarray
                ) -> np.ndarray:
    """Per element, whether data ``db`` (tags ``cb``) is other data than ``da`` (``ca``):
    a write/write race needs other data. What the data is (:attr:`Tags.data`) decides
    where both are known -- the same global element (also through registers) is the same
    data, a computed value is new data: ``x * 2`` and ``x * 3`` have x's tags, yet differ;
    joined different data (-1) is other data -- and the tags where one is unknown (0)."""
    known = (da != 0) & (db != 0)
    return np.where(known, (da != db) | (da == -1), any_last(ca != cb))


def _merge_src(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The tag origin of a value computed from two: the one both have, the one that exists,
    or -2 (mixed; mixed with anything stays mixed: P V's products, P mixed from Q and K,
    were named after V -- "V[row=0, col=0]" for a field V does not have; a review
    helper)."""
    if a is b or np.array_equal(a, b):
        return a
    return np.where(a == b, a, np.where(a == -1, b, np.where(b == -1, a, -2)))


def join(a: Tags, b: Tags, conds: CondTable) -> Tags:
    """Control-flow join: identical stay, ⊥ conforms, differing become ⊤. The guard (the
    condition under which the tags hold, e.g. a mask) is that of the side the values come
    from: a's where b has nothing (⊥, e.g. masked off), b's where a has nothing, the
    common one where both have the same, and none (always checked) otherwise -- a side
    whose guard is false must not hide the other side's data. The shared-memory writer
    stays a's (b's where a has nothing)."""
    x, y = a.code, b.code
    if a is b:
        return Tags(x, a.cond, a.src, a.moved, a.via, a.data)
    if np.array_equal(x, y):
        code = x
    else:
        code = _join_code(x, y)
    cond, via = a.cond, a.via
    if not (a.cond is b.cond or np.array_equal(a.cond, b.cond)):
        ha = (x != ABSENT).any(axis=1)
        hb = (y != ABSENT).any(axis=1)
        same = (a.cond == b.cond).all(axis=1)
        cond = np.where((same | ~hb)[:, None], a.cond,
                        np.where((~ha)[:, None], b.cond, 0)).astype(a.cond.dtype)
        via = np.where(ha, a.via, b.via)
    data = None
    if a.data is not None and b.data is not None:
        # the same data stays, unknown (0: a byte not written) takes the other side,
        # different data: -1; a computed side (None: a constant of ave.where) makes the
        # join computed (None: new data when stored)
        da, db = a.data, b.data
        data = da if da is db else np.where(
            da == db, da, np.where(da == 0, db, np.where(db == 0, da, -1)))
    return Tags(code, cond, _merge_src(a.src, b.src), np.maximum(a.moved, b.moved), via,
                data)


# ============================================================================ runtime objects

@dataclass
class TensorVal:
    name: str
    rank: int
    tag_op: int | None = None           # index into Engine.tag_ops
    gather: tuple[int, SymInt] | None = None


@dataclass
class TileVal:
    space: str
    dtype: Any
    shape: tuple[int, ...]
    tensor: TensorVal | None = None
    origin: tuple = ()                  # per tensor/base dim: (key, conc) for global; int for shared
    dims: tuple[int, ...] = ()
    base: int = 0
    layout: Any = None
    lo: int = 0
    hi: int = 0
    name: str = ""
    dyn: tuple = ()                     # per tensor dim: offset computed at run time


@dataclass
class FragVal:
    tags: Tags                          # N = T * V
    V: int
    ival: SymInt | None = None          # integer values (T*V,), for index fragments
    kcov: Any = None                    # MMA chain contributions (analysis.accumulation)
    #: the chain ``kcov`` holds part of the value's sum only: an addend's MMAs are not
    #: followed (split-K's accumulator started from C) -- "at most once" is checked, not
    #: "at least once" (accumulation.summed_chain)
    partial: bool = False
    #: the copies of one element (held by several threads) may hold different values: the
    #: value comes from a scalar that differs across threads (``ave.full(shape,
    #: ave.thread_id(), ...)``, ``x * tid``) or a branch whose condition does -- their
    #: data then differ per thread (see Engine.write_bytes)
    varies: bool = False
    #: for a predicate fragment (i1) from comparing integer fragments (``ave.coord``) and
    #: scalars: each element's condition as guard rows (N, GUARD) -- ``ave.where`` takes
    #: the side an element's condition picks for certain (0 true, 1 false)
    cond: np.ndarray | None = None
    #: every tagged element is data read from global memory (a bias tile ``C[m, n]``) or
    #: computed from such data alone -- never an MMA result nor bytes of shared memory
    #: (which may hold one): added to an MMA chain, or its accumulator, it is a term that
    #: sums no k (accumulation.summed_chain)
    global_data: bool = False
    #: every element is 0 (``ave.zeros``, ``ave.full(..., 0.0, ...)``, or such a value scaled):
    #: scaled by anything it is still an MMA chain's start (accumulation.scaled_chain)
    zero: bool = False
    #: the ``ave.where`` that ended an MMA chain to make this value (it may take its other
    #: side for some element): an MMA accumulating into it cannot follow the chain --
    #: AVE205 there, not a silent pass (accumulation.passed_chain)
    ended_by: Any = None
    #: for a predicate fragment from comparing integer fragments with runtime sizes
    #: (``row < M``, which ``cond`` leaves out: an i32 runtime part may wrap there), each
    #: element's condition as guard rows over the sizes, unbounded integers as z3 sees them
    #: (and of such predicates: their conjunction); None otherwise. Read by the MMA chain's
    #: resets only (accumulation.Reset), which decide them with z3 as the masks are
    scond: np.ndarray | None = None
    #: loaded from a global tensor the kernel wrote before (here) and reads back, with no
    #: MMA chain stored there to continue (Engine.defers_store): it may hold a partial sum
    #: -- an MMA accumulating into it cannot follow the chain (AVE205, never a silent pass
    #: nor a fresh start; a review helper)
    readback: bool = False

    @property
    def size_cond(self) -> np.ndarray | None:
        """``cond``, or else ``scond``: each element's condition, decided or over sizes."""
        return self.cond if self.cond is not None else self.scond


def reread_tensors(k: KernelIR) -> frozenset:
    """The names of the tensor parameters kernel ``k`` (an unrolled variant) reads after it
    wrote them (an ``ave.store``, a copy or scatter into a tile of theirs, then a load or a
    copy from one, in program order): what such a load reads may be a partial sum the
    kernel stored (``C += A B`` through global memory, one k-tile per iteration; a
    stream-K fix-up) -- not global data alone (FragVal.global_data). A tensor only read
    before the kernel writes it is input data: ``C = alpha A B + beta C`` loads ``C`` as
    the accumulator's start (it was no start whenever the kernel wrote ``C``, and the k
    loop went unchecked, silently; a review helper)."""
    roots = {p.value: p.name for p in k.params}
    names = {p.name for p in k.params}

    def root(v: Any) -> str | None:
        for _ in range(256):        # (the tile's chain of views back to its tensor)
            owner = getattr(v, "owner", None)
            if v in roots or owner is None or not getattr(owner, "operands", None):
                break
            v = owner.operands[0]
        if v in roots:
            return roots[v]
        # (a runtime loop of the front end's kernel: its parameters by name)
        n = getattr(v, "name", None)
        return n if n in names and not isinstance(getattr(v, "owner", None), Op) else None

    def accesses(ops: Any) -> Any:
        for op in ops:
            if op.name == "ave.store" and op.operands:
                yield (), (op.operands[0],)
            elif op.name in ("ave.copy", "ave.copy_async") and len(op.operands) > 1:
                yield (op.operands[0],), (op.operands[1],)
            elif op.name == "ave.load" and op.operands:
                yield (op.operands[0],), ()

    written: set = set()
    out = set()
    for reads, writes in accesses(k.walk()):
        for v in reads:
            r = root(v)
            if r is not None and r in written:
                out.add(r)
        for v in writes:
            r = root(v)
            if r is not None:
                written.add(r)
    # a runtime loop that reads and writes a tensor reads it back in its next iteration,
    # also in a variant that unrolls it once (its chain through C was checked at the
    # first iteration's store, in the prefix later variants resume from)
    for lop in getattr(k, "trip_loop_ops", None) or ():
        got: tuple[set, set] = (set(), set())
        for reads, writes in accesses(lop.walk() if hasattr(lop, "walk") else ()):
            for i, vs in ((0, reads), (1, writes)):
                for v in vs:
                    r = root(v)
                    if r is not None:
                        got[i].add(r)
        out |= got[0] & got[1]
    return frozenset(out)


def _tile_box(tile: Any) -> tuple | None:
    """The elements a global tile covers, per tensor dimension ``(key, first conc,
    extent)`` (the symbolic form of its first coordinate and how many follow), or None
    when not known so (a gathered tensor, a view whose kept dimensions do not match its
    shape)."""
    if not isinstance(tile, TileVal) or tile.space != "global" or tile.tensor is None or \
            tile.tensor.gather is not None or len(tile.shape) != len(tile.dims):
        return None
    ext = dict(zip(tile.dims, tile.shape))
    box = []
    for d, o in enumerate(tile.origin):
        if not isinstance(o, tuple) or len(o) != 2:
            return None
        box.append((int(o[0]), int(o[1]), int(ext.get(d, 1))))
    return tuple(box)


def _boxes_disjoint(a: tuple | None, b: tuple | None) -> bool:
    """Two global tiles (:func:`_tile_box`) share no element for any sizes: along some
    dimension their coordinates have one form and disjoint constant ranges."""
    if a is None or b is None or len(a) != len(b):
        return False
    return any(ka == kb and (ca + na <= cb or cb + nb <= ca)
               for (ka, ca, na), (kb, cb, nb) in zip(a, b))


def _global_data(frs: list) -> bool:
    """An elementwise result of ``frs`` is global data alone (FragVal.global_data): each
    tagged operand is, and one is tagged."""
    tagged = [f for f in frs if f.tags.code.any()]
    return bool(tagged) and all(f.global_data for f in tagged)


class RuntimeBranch(NamedTuple):
    """An enclosing arm of a branch on a runtime value (see ``Engine.op_scf_if``)."""

    op: Op                  # the scf.if
    arm: int                # 0 then, 1 else
    rows: np.ndarray        # (T, GUARD) the condition's guard row per thread
    certain: np.ndarray     # (T,) threads that take this arm for certain
    guard: np.ndarray | None  # (GUARD,) the condition every thread of the then-arm has
    # (for MMA contributions under it); None: an else-arm (no conjunction negates it) or a
    # condition that differs across threads
    forked: bool = False    # the arms run from one race state, joined (Engine.op_scf_if)
    uniform: bool = False   # one condition for every thread (each takes the same arm)
    tags_forked: bool = False  # the arms run from one shared-memory tag state, joined
    cond_row: np.ndarray | None = None  # (GUARD,) the condition of a uniform branch
    #: the sizes (and the variant's trip counts) leave either arm possible: the arms run
    #: one after the other on one state, and what they do may not happen
    undecided: bool = True
    #: both arms do the same to the asynchronous-copy groups (waits in both: every
    #: thread waits, whichever arm it takes)
    groups_alike: bool = False

    @property
    def token(self) -> tuple:
        return (id(self.op), self.arm)


@dataclass
class ExecRecord:
    op: Op
    loops: tuple


@dataclass
class PairCheck:
    """The outcome of one assertion execution."""

    op: Op
    kind: str                           # "mma" | "assert_conform" | "assert_disjoint"
    occurrence: int = 0                 # how many times this op ran before, same loop indices
    compared: int = 0
    covered: int = 0
    #: the witness; it may hold ``"__refine"``: a callable giving the same witness with the
    #: canonical (reproducible) model, for the analysis to call on the one it keeps
    violation: dict | None = None
    unknown: str | None = None
    #: some paired values differed, so the verdict also rests on the guards (a clean
    #: verdict then holds for these guards only: see Engine._check_store)
    consulted: bool = False
    #: nothing was checked because no size of the variant reaches the op's branch arms
    #: (the reason); an assertion no variant reaches is unknown (AnalysisResult)
    unreached: str | None = None

    @property
    def location(self) -> tuple:
        """``(kind, file, range)``: what the analysis reports one result per (the first
        witness of each is kept)."""
        return (self.kind,) + self.op.loc.report_key


class _NoFingerprint(Exception):
    pass


def _fingerprint(x: Any, keep: list, tag_ops: list) -> Any:
    """A hashable key of a value's contents (see ``Engine._xv_entry``); objects keyed by
    identity are appended to ``keep``. Raises _NoFingerprint for a value without one."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return ("p", type(x).__name__, x)
    t = type(x)
    if t is SymInt:
        k, c = np.asarray(x.key), np.asarray(x.conc)
        return ("s", k.dtype.str, k.shape, c.dtype.str, c.shape, k.tobytes(), c.tobytes())
    if t is np.ndarray:
        return ("a", x.dtype.str, x.shape, x.tobytes())
    if t is TileVal:
        keep.append(x.layout)
        return ("t", x.space, str(x.dtype), tuple(x.shape),
                _fingerprint(x.tensor, keep, tag_ops),
                tuple(tuple(int(v) for v in o) if isinstance(o, tuple) else int(o)
                      for o in x.origin),
                tuple(x.dims), x.base, id(x.layout), x.lo, x.hi, x.name, tuple(x.dyn))
    if t is TensorVal:
        # a tensor's tag op is an index into the engine's list, which variants rebuild:
        # the index (the destination's tags carry it as their origin) and the op itself
        # (kept) are the key
        keep.append(tag_ops[x.tag_op] if x.tag_op is not None else None)
        g = None if x.gather is None else (x.gather[0], _fingerprint(x.gather[1], keep, tag_ops))
        return ("T", x.name, x.rank, x.tag_op, id(keep[-1]), g)
    raise _NoFingerprint


# ============================================================================ the engine

class Engine:
    """Abstract execution of one unrolled kernel (see the module docstring)."""

    def __init__(self, kernel: KernelIR, tab: SymTable, conds: CondTable, solver: Any,
                 fields: list[str]) -> None:
        self.k = kernel
        self.T = kernel.threads
        self.ws = kernel.warp_size
        #: the tensors the kernel writes (see written_tensors; the variants run here, all)
        self.written_tensors = reread_tensors(kernel)
        self.tab = tab
        self.conds = conds
        self.solver = solver
        self.fields = fields
        self.F = len(fields)
        self.tag_ops: list[Op] = []
        self.tag_names: list[str] = []
        self.records: list[ExecRecord] = []
        self.checks: list[PairCheck] = []
        #: uninitialized reads: (op, loop indices, thread, byte, a copy into it in flight,
        #: None or -- bytes a copy under a branch writes on one path only -- a dict with
        #: the branch conditions ``when``, the ``copy`` op and the sizes' ``model``)
        self.uninit: list[tuple[Op, tuple, int, int, bool, dict | None]] = []
        #: barriers not every thread reaches: (barrier op, loop indices, a thread that
        #: reaches it, one that does not, the scf.if op that splits them)
        self.divergent: list[tuple[Op, tuple, int, int, Op]] = []
        #: barriers under branches on runtime values whose conditions differ across
        #: threads: (barrier op, loop indices, the enclosing branches' arms), decided at
        #: the end of each variant under its trip counts (:meth:`check_divergence`)
        self.may_diverge: list[tuple] = []
        #: the enclosing scf.if ops, and those of them that branch on a runtime value
        self._ifs: list[Op] = []
        #: the loop variables of the loops some executed op was in (a runtime loop not
        #: around the current op but in here has finished: running_trip_constraints)
        self.entered_loops: frozenset = frozenset()
        #: the loop variable's value, as a linear form ``(key, conc)``, of each iteration
        #: of a loop whose start is known only at run time, by the ``loop_indices`` of the
        #: iteration (whose last entry is its 0-based number): see :meth:`shown`
        self.loop_ivs: dict[tuple, tuple[int, int]] = {}
        #: the arms being run, ``(id(if op), 0 then / 1 else)`` (Contribution.arms)
        self._arms: list[tuple[int, int]] = []
        self.runtime_branches: list[RuntimeBranch] = []
        self._free_labels: dict = {}
        self._keep_ops: list = []
        #: scalars the analysis does not follow (floats) that may differ across threads:
        #: computed from a per-thread integer (``ave.cast(ave.thread_id(), f32)``)
        self._varying: set = set()
        #: (bytes, tags) the then-arm of enclosing thread-dependent forked branches left,
        #: while their else-arm runs (see _differs)
        self._other_arm: list = []
        #: [epoch, bytes, tags, still valid] after a uniform branch: the data of bytes
        #: whose last writer of that epoch is on one path only (see _differs)
        self._writer_over: list | None = None
        self._tables: dict[int, np.ndarray] = {}
        self._kept_memo: dict = {}
        self._n_gran = 0
        self.loops: tuple = ()
        self.occurrence: dict[tuple, int] = {}
        #: undo entries of the incremental mode (see :meth:`run_variant`); ``journal`` is
        #: that list while a change must be journaled, else None (the modules' test)
        self._jlist: list | None = None
        self.journal: list | None = None
        self._keep: frozenset | None = None
        self.checkpoints: dict[int, tuple] = {}
        self._pick_cache: dict = {}
        self._dense_cache: dict = {}
        self._addr_cache: dict = {}
        self._mma_last: dict = {}
        self._xv: dict = {}          # cross-variant memo (see _xv_entry)
        #: assertion and MMA locations ``(kind, file, range)`` with a violation already
        #: (earlier variants': set by the analysis; this variant's: added when found)
        self.known_violations: set = set()
        self._pair_memo: dict = {}   # clean contraction verdicts by compared values
        self._disjoint_memo: dict = {}   # pairs of shared tiles found disjoint
        #: MMA chains checked where they ended, by the fragment (accumulation.end_chain)
        self.chains_ended: dict = {}
        #: (branch condition ids, A's guard rest, B's) -> the joined guard's condition id
        #: (_path_guards)
        self._path_guard_memo: dict = {}
        #: chains a global store ends whose resets its mask decides (accumulation.Reset):
        #: checked by the store's handler, or after the op by _step with no mask
        self.pending_resets: list = []
        #: chains deferred stores wrote into global tensors the kernel reads back: their
        #: elements' key -> (value, store, its guard, branches, active threads, loops,
        #: the tile's box: _tile_box, whether a use of a load of it was checked:
        #: _chain_consumed); value None: a start (_keep_global_start)
        self.global_chains: dict = {}
        self._dropped_chain = False
        #: while accumulation.check_resets checks a class of elements: its z3 terms
        self.chain_class: Any = None
        #: and ``(warp, element)``: the class's member it is checked for (that warp only)
        self.chain_member: Any = None
        #: (id of the variant's kernel, arms) -> (that kernel, some sizes take those arms
        #: with its trip counts): accumulation._path_possible
        self.paths_possible: dict = {}
        self.tileds = []
        for op in kernel.walk():
            if op.name == "ave.mma" and op.attrs["tiled"] not in self.tileds:
                self.tileds.append(op.attrs["tiled"])

    # ------------------------------------------------------------------ helpers

    def table(self, layout: Any) -> np.ndarray:
        k = id(layout)
        t = self._tables.get(k)
        if t is None:
            t = np.asarray(layout.coords_table(), dtype=np.int64)
            self._tables[k] = t
        return t

    def _undecided(self, op: Op, reason: str) -> None:
        """A question about ``op`` z3 could not decide within its budget: an unknown
        (AVE205) at ``op``, never a silent pass (it rides on the checks: a variant that
        resumes before it drops it with them)."""
        chk = PairCheck(op, "analysis", 0)
        chk.compared = 1
        chk.unknown = reason
        self.checks.append(chk)

    def new_check(self, op: Op, kind: str) -> PairCheck:
        key = (op.loc.file, op.loc.range, tuple(op.attrs.get("loop_indices", ())))
        n = self.occurrence.get(key, 0)
        self.occurrence[key] = n + 1
        return PairCheck(op, kind, n)

    def record(self, op: Op) -> int:
        self.records.append(ExecRecord(op, op.attrs.get("loop_indices", ())))
        return len(self.records) - 1

    def scalar(self, v: Value) -> Any:
        return self.env[v]

    def uniform(self, v: Value, op: Op, what: str) -> tuple[int, int]:
        """(key, conc) of a scalar that must be the same for every thread."""
        s = self.env[v]
        if not isinstance(s, SymInt):
            raise AnalysisLimit(f"{what} is not an integer the analysis can follow", op)
        k, c = s.key.reshape(-1), s.conc.reshape(-1)
        if np.any(k != k[0]) or np.any(c != c[0]):
            raise AnalysisLimit(f"{what} differs across threads (a collective operation "
                                "needs one value)", op)
        return int(k[0]), int(c[0])

    def concrete(self, v: Value, op: Op, what: str) -> int:
        k, c = self.uniform(v, op, what)
        if k != 0:
            raise AnalysisLimit(f"{what} depends on a runtime value "
                                f"({self.tab.format(k, c)}); shared-memory addresses must be "
                                "known after unrolling", op)
        return c

    # ------------------------------------------------------------------ run

    def run(self, stop: Any = None) -> None:
        """Run the kernel (``stop``: a predicate over its top-level ops; the run ends
        before the first it holds for -- a prefix, for the bounds of its loops)."""
        T = self.T
        # (a variant's own preconditions: see Solver.restore_assumptions)
        self.solver.restore_assumptions(())
        self.env: dict[Value, Any] = {}
        for p in self.k.params:
            if isinstance(p.type, TensorType):
                self.env[p.value] = TensorVal(p.name, p.type.rank)
            elif isinstance(p.type, ScalarType) and p.type.dtype.is_int:
                key = self.tab.atom(Atom("param", (p.name,)))
                # (its dtype's range: a witness named n = 5717214012 for an i32 n; a review
                # helper)
                rng = p.type.dtype.int_range
                if rng is not None:
                    self.tab.ranges[self.tab.lins[key][0][0]] = rng
                self.env[p.value] = SymInt(np.full(T, key, np.int32), np.zeros(T, np.int64))
            else:
                self.env[p.value] = None
        from ave_core.compiler.ir import shared_plan
        self.allocs, size = shared_plan(self.k)
        # Shared memory is tracked per byte, stored per granule of G bytes, where G is the
        # smallest element size of any shared access in the kernel: every access is
        # element-aligned, so a granule is never split and the result is byte-exact.
        self.G = self._granule()
        ng = max(size // self.G + 1, 1)
        self.smem = Tags.bottom(ng, self.F)
        self.smem.data = np.zeros(ng, np.int64)
        #: the data of known bytes (constants, their granules): datum -> the bytes (see
        #: granule_data, element_data)
        self._bytes: dict = {}
        #: elements read from granules of different data (four i8 read as an f32): their
        #: datum -> the granules' data (see element_data)
        self._whole: dict = {}
        #: integers stored from registers into shared memory: datum -> (key, conc, bytes)
        #: of the value, or None (see _keep_stored_ints)
        self._stored_ints: dict = {}
        #: the ave.where ops whose elements are data of their own, numbered (the dict
        #: keeps them: an id() could be reused by a later variant's op)
        self._select_ops: dict = {}
        #: per op with regions (a mask): the scalars they use from outside (_scalars_vary)
        self._region_outer: dict = {}
        self._tensor_ids: dict = {}
        #: integer data read from global tensors (index tables) and by masked reads, kept
        #: to tell what an index read from shared bytes holding one of their data is
        #: (:meth:`_int_element`, :meth:`_masked_element`; looked up on demand -- not a
        #: Python loop per element of every read), and those found, by datum
        self._int_reads: list = []
        self._masked_reads: list = []
        self._int_elements: dict = {}
        self._masked_parts: dict = {}
        #: objects whose id() names an atom (kept alive: an id is unique only while its
        #: object lives)
        self._keep_alive: list = []
        #: data a uniform branch's two paths left in shared bytes: datum -> (the
        #: condition's ids, the then-path's datum, the else-path's) (see _fork_join)
        self._joined_parts: dict = {}
        #: per global tensor, how many writes into it ran so far (its elements' data
        #: before and after one differ: see _global_written)
        self._gversion: dict = {}
        self.written = np.zeros(ng, bool)
        #: per granule: 0, or the index + 1 into ``_landings`` of the asynchronous copy that
        #: wrote it last, issued in an arm of a branch on a runtime value the sizes leave
        #: undecided -- on the other path the copy never ran and the granule holds what it
        #: held before (see :meth:`_check_landings`)
        self.landed_when = np.zeros(ng, np.int32)
        #: mark - 1 -> its disjunction of branch-arm clauses (a frozenset; see
        #: _landing_marks); (clauses, copy, loops) -> mark; mark -> (copy, loops)
        self._landings: list[frozenset] = []
        self._landing_ids: dict = {}
        self._landing_memo: dict = {}
        self._excl_memo: dict = {}
        #: comparisons of untracked kernel arguments and constants -> their condition
        #: (_shared_free_cond)
        self._cmp_conds: dict = {}
        #: a memory access or check ran (an ``ave.assume`` after one is refused)
        self._accessed = False
        self._landing_ops: dict = {}
        self._branch_ops: dict = {}
        self.races = RaceTracker(self, ng)
        self.bounds = BoundsChecker(self)
        self.in_branch = 0
        self.active = np.ones(T, bool)
        # asynchronous copies per thread (PTX cp.async: commit_group / wait_group act on
        # the executing thread's own copies): the plans no commit has grouped yet, those
        # committed with each row's group number (its thread's commit count then), and
        # how many groups each thread has committed
        self.open_group: list = []
        self.inflight: list[tuple] = []
        self.commits = np.zeros(self.T, np.int64)
        if stop is not None:
            for op in self.k.body.ops:
                if stop(op):
                    return
                self._step(op)
            return
        if self._jlist is not None:
            self._exec_top(self.k.body.ops, 0)
        else:
            self.exec_block(self.k.body)
            self._end_global_chains()
            self._retire_at_exit()

    # ------------------------------------------------------------------ incremental variants

    def _smem_write(self, byts: np.ndarray, t: Tags, written: bool = True,
                    weak: bool | None = None, threads: np.ndarray | None = None,
                    when: Any = 0) -> None:
        """Write tags to shared bytes, journaling the old contents (for :meth:`resume`, and
        the rollback of a forked arm: ``threads``, the writer of each, go with them).

        ``weak`` (default: under a branch on a runtime value whose arms share one state,
        see :meth:`op_scf_if`): the write may not happen -- the bytes get the join of their
        old and new tags (identical stay, ⊥ conforms, differing: ⊤) and stay unwritten for
        the uninitialized-read check if they were (written must hold on every path).
        ``when``: the :attr:`landed_when` of the granules after a write that happens (0: on
        every path that gets here; a weak write keeps theirs)."""
        if weak is None:
            weak = self._weak_writes()
        old = self.smem.take(byts) if weak or self.journal is not None else None
        if self.journal is not None:
            self.journal.append((byts, old, self.written[byts].copy(), threads,
                                 self.landed_when[byts].copy()))
        if weak:
            t = join(t, old, self.conds)
            written = self.written[byts]
        else:
            self.landed_when[byts] = when
        ov = self._writer_over
        if ov is not None:
            pos, hit = _lookup(ov[1], byts)
            ov[3][pos[hit]] = False                     # (a new writer: its own data)
        self.smem.put(byts, t)
        self.written[byts] = written

    def _weak_writes(self, deferred: bool = False) -> bool:
        """Shared-memory writes here may not happen on every path: an enclosing branch on a
        runtime value runs its arms on one tag state (not forked: an arm with asynchronous
        copies). An asynchronous copy (``deferred``) is weak only under a branch whose
        condition may differ across threads: under one every thread takes the same way it
        is taken to land (a prefetch ``if k0 + 2 * BK < K:`` whose later use the same sizes
        decide: a merge would make every such pipeline ⊤; documented)."""
        if deferred:
            return any(not b.uniform for b in self.runtime_branches)
        return any(not b.tags_forked for b in self.runtime_branches)

    def _shared_arms(self) -> bool:
        """Some enclosing branch on a runtime value runs its arms on one race state (not
        forked): a write here keeps the epoch's other writers (the other arm's)."""
        return any(not b.forked for b in self.runtime_branches)

    def _arm_possible(self, row: np.ndarray) -> int | None:
        """The only arm sizes allow a uniform condition ``row`` to take (0 then, 1 else),
        or None when both are possible (or z3 cannot tell within its budget). Under the
        conditions of the enclosing uniform branches' arms (``if K < 32:`` inside ``if K >
        64:`` has no then-arm); the answer is kept for the solver's life (every trip-count
        variant asks the same)."""
        sv = self.solver
        z3 = sv.z3
        ids = list(self._cond_ids(row))
        if not ids:
            return None
        path = tuple((b.arm, b.cond_row.tobytes()) for b in self.runtime_branches
                     if b.uniform and b.cond_row is not None)
        memo = sv.arm_memo
        key = (row.tobytes(), path)
        if key in memo:
            return memo[key]
        terms = [self._arm_term(ids, arm) for ids, arm, _ in self._uniform_arms()]
        c = sv.cond(ids)
        out = None
        for arm, term in ((1, c), (0, z3.Not(c))):
            with sv.timed():
                sv.queries += 1
                s = z3.Solver(ctx=sv.ctx)
                s.set("timeout", sv.timeout_ms)
                s.add(*sv._domain, *terms, term)
                if s.check() == z3.unsat:
                    out = arm           # the condition cannot hold (fail): the other arm
                    break
        memo[key] = out
        return out

    def branch_guard(self, threads: np.ndarray) -> np.ndarray | None:
        """Per element (made by ``threads``), the conditions of the enclosing branches on
        runtime values as one guard row: an access there happens only when they hold (an
        unmasked full-tile copy under ``if k0 + BK <= K:`` is in bounds). A then-arm's
        condition; an else-arm's where it is one comparison (its negation, ``k0 + BK >
        K``); otherwise nothing (a weaker guard: sound). None outside such branches."""
        out = None
        for b in self.runtime_branches:
            r = b.rows[threads]
            if b.arm == 1:
                neg = np.zeros_like(r)
                sym = ~b.certain[threads]
                if sym.any():
                    memo: dict = {}
                    for i in np.nonzero(sym)[0].tolist():
                        k = r[i].tobytes()
                        if k not in memo:
                            n = self._negated(self._cond_ids(r[i]))
                            memo[k] = 0 if n is None else n
                        neg[i, 0] = memo[k]
                r = neg
            else:
                r = np.where(b.certain[threads][:, None], 0, r).astype(r.dtype)
            out = r if out is None else self.conds.conj_arrays(out, r)
        return out

    def _fork_arm(self, jl: list, races: bool) -> tuple:
        """After one arm of a forked branch ran with its own journal ``jl``: what it left
        on the bytes (and race granules, ``races``) it touched, the last writer thread of
        each byte; then it is rolled back (the state before the branch again). Records
        (points, findings) and, without ``races``, race-state changes are kept: they go
        to the enclosing journal, in order."""
        byts = [e[0] for e in jl if type(e) is tuple]
        ub = _distinct(byts, len(self.written))
        writer = np.full(len(ub), -1, np.int64)
        for e in jl:
            if type(e) is tuple:
                pos = np.searchsorted(ub, e[0])
                writer[pos] = -2 if e[3] is None else e[3]
        tags = self.smem.take(ub)
        wr = self.written[ub].copy()
        rg = None
        rows = epoch = None
        if races:
            gs = [e.race_g for e in jl if callable(e) and getattr(e, "race_g", None) is not None]
            rg = _distinct(gs, len(self.races.state))
            rows = self.races.state[rg].copy()
            epoch = self.races.epoch
        kept = []
        for e in reversed(jl):
            if type(e) is tuple:
                self.smem.put(e[0], e[1])
                self.written[e[0]] = e[2]
                self.landed_when[e[0]] = e[4]
            elif getattr(e, "keep", False) or not races:
                kept.append(e)
            else:
                e()
        if self.journal is not None:
            self.journal.extend(reversed(kept))
        return ub, tags, wr, writer, rg, rows, epoch

    def _else_guard(self, rows: np.ndarray | None) -> np.ndarray | None:
        """The guard row of the else-arm of a branch whose then-arm has ``rows`` (one
        condition for every thread): the negation of a single condition (``k0 + BK > K``
        for ``k0 + BK <= K``), or None (a conjunction's negation is no guard row)."""
        if rows is None:
            return None
        n = self._negated(self._cond_ids(rows))
        if n is None:
            return None
        out = np.zeros_like(rows)
        out[0] = n
        return out

    def _path_guards(self, out: Tags, A: Tags, B: Tags, cids: tuple) -> None:
        """After a uniform branch on ``cids`` (its then-arm's condition ids): where both
        paths hold the same tags under different guards (``ave.copy(..., mask=m < M)`` of
        full tiles in the then-arm, ``mask=(m < M) & (k < K)`` of the tail tile in the
        else-arm), the guard of ``out`` (the join: none, always checked) becomes the
        guards' common atoms and one condition for the rest: ``If(then, rest of A's
        guard, rest of B's)`` (a select term, as :meth:`_opaque_cond` makes). A k the
        tail's mask drops was taken as held on every path: the MMA chain's "at least
        once" (AVE206) proved a mask ``k < K - 1`` there (a review helper). The common
        atoms stay atoms of their own (a row's ``m < M`` is not the column's condition:
        the chain's per-slot guards keep what every row of the slot has)."""
        if not cids or not len(out.cond):
            return
        pa, pb = (A.code != ABSENT).any(axis=1), (B.code != ABSENT).any(axis=1)
        hold = pa & pb & (A.code == B.code).all(axis=1) & (A.cond != B.cond).any(axis=1)
        # a path where the element holds no tags (a mask false for it outright: `k < k0 +
        # 31` drops a full tile's last column) holds it under no condition there -- the
        # join took the other path's guard for both, and such a mask was proved (a review
        # helper)
        one = pa ^ pb
        if not (hold | one).any():
            return
        idx = np.nonzero(hold | one)[0]
        G = A.cond.shape[1]
        ca, cb = A.cond[idx].copy(), B.cond[idx].copy()
        never = np.zeros(G, ca.dtype)
        never[0] = 1
        ca[~pa[idx]] = never
        cb[~pb[idx]] = never
        pairs = np.concatenate([ca, cb], axis=1)
        uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
        memo = self._path_guard_memo
        label = "joined guard"
        rows = np.zeros((len(uniq), G), out.cond.dtype)
        neg = self._negated(tuple(cids))
        for u, pr in enumerate(uniq.tolist()):
            ga, gb = set(a for a in pr[:G] if a), set(b for b in pr[G:] if b)
            if 1 in ga and 1 in gb:
                rows[u, 0] = 1
                continue
            # held on one path only: that path's condition and guard, a conjunction (the
            # guard's per-row atoms stay atoms of their own, as below)
            one = None
            if 1 in gb:                         # the then-path's: then and its guard
                one = sorted(set(cids) | ga)
            elif 1 in ga and neg is not None:   # the else-path's: not then and its guard
                one = sorted({neg} | gb)
            if one is not None and len(one) <= G:
                rows[u, :len(one)] = one
                continue
            common = sorted(ga & gb)
            ra, rb = tuple(sorted(ga - set(common))), tuple(sorted(gb - set(common)))
            key = (cids, ra, rb)
            h = memo.get(key)
            if h is None:
                # [g] = If(g, 1, 0); the rest: If(then, [ra], [rb]) > 0 (a false guard,
                # id 1, is If(false, ...): 0)
                def ind(g: tuple) -> tuple:
                    if not g:
                        return (0, 1)
                    if 1 in g:
                        return (0, 0)
                    return (self.tab.atom(Atom("select", (g, (0, 1), (0, 0), label))), 0)
                s_ = self.tab.atom(Atom("select", (tuple(cids), ind(ra), ind(rb), label)))
                h = memo[key] = self.conds.atomic("gt", s_, 0)
            row = common + [h]
            if len(row) > G:
                continue                    # (no room: always checked, as the join left it)
            rows[u, :len(row)] = row
        new = rows[inv.reshape(-1)]
        keep = (new != 0).any(axis=1) | (pairs == 0).all(axis=1)
        if keep.any():
            cond = out.cond.copy()
            cond[idx[keep]] = new[keep]
            out.cond = cond

    def _fork_join(self, arms: list, uniform: bool, e0: int, cond: tuple | None = None
                   ) -> None:
        """Join the two arms of a forked branch (:meth:`_fork_arm`'s results; the state is
        the one before the branch again). Shared memory, per byte either arm wrote: the
        join of the two paths' tags; under a condition that differs across threads a byte
        both arms write by different threads may be written by neither (a thread takes
        the other arm): joined with the old tags too, and left unwritten if it was. The
        race state (a uniform branch): :meth:`RaceTracker.join`."""
        (ua, ta, wa_, wra, ga, ra, ea), (ub, tb, wb_, wrb, gb, rb, eb) = arms
        u = _distinct([ua, ub], len(self.written))
        if u.size:
            old = self.smem.take(u)
            w0 = self.written[u]
            pa, pb = np.searchsorted(u, ua), np.searchsorted(u, ub)
            A, B = old.copy(), old.copy()
            A.put(pa, ta)
            B.put(pb, tb)
            wA, wB = w0.copy(), w0.copy()
            wA[pa], wB[pb] = wa_, wb_
            out = join(A, B, self.conds)
            if cond is not None:
                self._path_guards(out, A, B, cond[1])
            if cond is not None and A.data is not None and B.data is not None:
                # other known data on the two paths of a uniform branch (a buffer refilled
                # from one table or another, a one-arm refill over -1 padding): a datum of
                # its own, If(condition, then-data, else-data) -- what an index read from
                # these bytes is (_datum_value: it was -1, an unknown; a review helper)
                da, db = A.data, B.data
                both = (da != db) & (da != 0) & (da != -1) & (db != 0) & (db != -1)
                if both.any():
                    op_, cids = cond
                    serial = self._select_ops.setdefault(op_, len(self._select_ops) + 1)
                    i = np.nonzero(both)[0]
                    jd = data_ids(_DATUM_JOINED, [np.int64(serial), da[i], db[i]], len(i))
                    data = out.data.copy()
                    data[i] = jd
                    out.data = data
                    for x, a_, b_ in zip(jd.tolist(), da[i].tolist(), db[i].tolist()):
                        self._joined_parts.setdefault(x, (cids, a_, b_))
            written = wA & wB
            # (the granules' landings from before the branch stay, except where both
            # paths wrote: what either wrote is there for certain)
            lw = np.where(np.isin(u, ua) & np.isin(u, ub), 0, self.landed_when[u])
            if not uniform:
                xa = np.full(len(u), -1, np.int64)
                xb = np.full(len(u), -1, np.int64)
                xa[pa], xb[pb] = wra, wrb
                unsure = (xa != -1) & (xb != -1) & ((xa != xb) | (xa < 0))
                if unsure.any():
                    i = np.nonzero(unsure)[0]
                    out.put(i, join(out.take(i), old.take(i), self.conds))
                    written[i] = w0[i]
            self._smem_write(u, out, weak=False, when=lw)
            self.written[u] = written
        if uniform:
            g = _distinct([ga, gb], len(self.races.state))
            base = self.races.state[g]
            RA, RB = base.copy(), base.copy()
            RA[np.searchsorted(g, ga)] = ra
            RB[np.searchsorted(g, gb)] = rb
            self.races.join(g, RA, RB, e0, ea, eb)
            if u.size and g.size:
                # bytes whose last writer of the epoch is on one path only: what it wrote
                # is that path's data, not the merged tags (a later write of the same data
                # by another thread is no race; see _differs)
                c = self.races._COL
                pos, on = _lookup(g, u)
                cur_a = on & (RA[pos, c["w_epoch"]] == ea) & (RA[pos, c["w_thread"]] >= 0)
                cur_b = on & (RB[pos, c["w_epoch"]] == eb) & (RB[pos, c["w_thread"]] >= 0)
                one = cur_a ^ cur_b
                if one.any():
                    code = np.where(cur_a[:, None], A.code, B.code)[one]
                    ud = np.where(cur_a, A.data, B.data)[one]
                    self._writer_over = [self.races.epoch, u[one], code,
                                         np.ones(int(one.sum()), bool), ud]

    def _checkpoint(self) -> tuple:
        return (len(self._jlist), (list(self.inflight), self.commits.copy()),
                list(self.open_group),
                len(self.checks), len(self.uninit), len(self.records), len(self.tag_ops),
                dict(self.occurrence), len(self.divergent), len(self.may_diverge),
                None if self._writer_over is None else
                [*self._writer_over[:3], self._writer_over[3].copy(), self._writer_over[4]],
                self.entered_loops, self.solver.assumption_state(), self._accessed)

    def _restore(self, cp: tuple) -> None:
        jlen, groups, open_group, nc, nu, nr, nt, occ, nd, nm, over, entered, assumed, \
            accessed = cp
        self.entered_loops = entered
        self._accessed = accessed
        if self.solver.restore_assumptions(assumed):
            self._changed_assumptions()
        while len(self._jlist) > jlen:
            e = self._jlist.pop()
            if callable(e):
                e()
                continue
            byts, old, wr = e[0], e[1], e[2]
            self.smem.put(byts, old)
            self.written[byts] = wr
            self.landed_when[byts] = e[4]
        self.inflight, self.commits = list(groups[0]), groups[1].copy()
        self.open_group = list(open_group)
        self._writer_over = None if over is None else [*over[:3], over[3].copy(), over[4]]
        del self.checks[nc:]
        del self.uninit[nu:]
        del self.divergent[nd:]
        del self.may_diverge[nm:]
        del self.records[nr:]
        del self.tag_ops[nt:]
        del self.tag_names[nt:]
        self.occurrence = dict(occ)

    _PURE = frozenset({"arith.constant"})

    @classmethod
    def shared_prefix(cls, prev: list, ops: list) -> tuple[int, list]:
        """How many top-level ops of ``ops`` a run can take over from a run of ``prev``
        (ops that are the same objects, see ``unroll(memo=...)``; pure constants that
        differ do not end the shared prefix), and those constants (re-executed)."""
        p = 0
        redo = []
        n = min(len(ops), len(prev))
        while p < n:
            if ops[p] is not prev[p]:
                if ops[p].name in cls._PURE and prev[p].name in cls._PURE:
                    redo.append(ops[p])
                else:
                    break
            p += 1
        return p, redo

    def run_variant(self, kernel: KernelIR, resume_points: Sequence[int] | None = None
                    ) -> bool:
        """Run one unrolled variant, resuming from the longest prefix it shares with the
        previous variant (:meth:`shared_prefix`).

        ``resume_points``: the op indices at which later variants will resume (None: any).
        Checkpoints are kept only there, and state changes before the lowest of them are
        not journaled (no later variant undoes them): the last variant journals nothing.
        Returns False when the variant cannot resume here (no checkpoint where it would
        resume): the caller runs it on a fresh engine.
        """
        ops = kernel.body.ops
        self.written_tensors = self.written_tensors | reread_tensors(kernel)
        prev = getattr(self, "_prev_ops", None)
        self._keep = None if resume_points is None else frozenset(resume_points)
        if prev is None or self._jlist is None:
            self.k = kernel
            self._jlist = []
            self.checkpoints = {}
            self.run()
            self._prev_ops = ops
            return True
        p, redo = self.shared_prefix(prev, ops)
        if p < len(prev):
            cp = self.checkpoints.get(p)
            if cp is None:
                return False
            self._restore(cp)
            for i in [i for i in self.checkpoints if i >= p]:
                del self.checkpoints[i]
        # else: the previous variant is a prefix of this one; go on from where it ended
        self.k = kernel
        for op in redo:
            self.loops = op.attrs.get("loop_indices", ())
            self.op_arith_constant(op)
        self._exec_top(ops, p)
        self._prev_ops = ops
        return True

    def _exec_top(self, ops: list, start: int) -> None:
        keep = self._keep
        floor = 0 if keep is None else (min(keep) if keep else len(ops))
        try:
            for i in range(start, len(ops)):
                op = ops[i]
                if keep is None or i in keep:
                    self.checkpoints[i] = self._checkpoint()
                # journal only what a later variant may undo
                self.journal = self._jlist if i >= floor else None
                self._step(op)
            self._end_global_chains()
            self._retire_at_exit()
        finally:
            self.journal = None

    def exec_block(self, blk: Block) -> list | None:
        for op in blk.ops:
            if op.name in ("scf.yield", "ave.yield"):
                return [self.env.get(v) for v in op.operands]
            self._step(op)
        return None

    def _step(self, op: Op) -> None:
        """Execute one op (ending the MMA chains it consumes)."""
        self.loops = op.attrs.get("loop_indices", ())
        if self.loops:
            for name, _ in self.loops:
                if name not in self.entered_loops:
                    self.entered_loops = self.entered_loops | {name}
        h = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if h is None:
            raise AnalysisLimit(f"the analysis does not support {op.name}", op)
        accumulation.on_consume(self, op)
        if op.name in _CHECKED_OPS:
            self._accessed = True
        try:
            h(op)
        except SymOverflow as e:
            raise AnalysisLimit(f"{e} (int64 would wrap it)", op) from None
        if self.pending_resets:
            accumulation.flush_resets(self, op)

    # ------------------------------------------------------------------ scalars

    def op_arith_constant(self, op):
        v = op.attrs["value"]
        dt = op.attrs["dtype"]
        if dt.name == "i1":
            self.env[op.result] = np.full(self.T, 0 if v else 1, np.int32)
        elif dt.is_int:
            self.env[op.result] = SymInt.const(int(v), (self.T,))
        else:
            self.env[op.result] = None

    def _int_or_frag(self, x: Any) -> Any:
        return x

    def _bin(self, op: Op, name: str) -> None:
        a, b = (self.env.get(v) for v in op.operands)
        rt = op.result.type
        if isinstance(rt, FragmentType):
            out = self._frag_elementwise(op, [a, b], name)
            if name == "add":
                # a sum of accumulators continues their MMA chains (AVE206)
                out.kcov = accumulation.summed_chain(self, op)
                out.partial = bool(out.kcov) and any(
                    type(x) is FragVal and (x.kcov is False or x.partial) for x in (a, b))
            elif name in ("mul", "div"):
                # a scaled accumulator continues its MMA chain (AVE206)
                sc = accumulation.scaled_chain(self, op)
                if sc is not None:
                    out.kcov, out.partial = sc
                    out.zero = not sc[0]        # (a start: ave.zeros scaled)
            self.env[op.result] = out
            return
        if rt.dtype.name == "i1" and name in ("and", "or", "xor"):
            self.env[op.result] = self._bool_op(name, a, b, op)
            return
        if isinstance(a, SymInt) and isinstance(b, SymInt):
            r = sym_binop(self.tab, name, a, b)
            if getattr(rt.dtype, "bits", 32) < 32 and rt.dtype.is_int and \
                    np.any(np.asarray(r.key) != 0):
                r = self._narrow_unknown(op, r, rt.dtype)
            self.env[op.result] = r
        else:
            self.env[op.result] = None
            self._mark_varying(op)

    def _narrow_unknown(self, op: Op, r: SymInt, dtype: Any) -> SymInt:
        """A scalar of a narrow integer dtype computed from runtime values, wrapped as the
        GPU wraps it: ``((x + 2**(b-1)) mod 2**b) - 2**(b-1)`` (``x mod 2**b`` unsigned) --
        an i8 ``n + 100`` is -56 for n = 100; followed unwrapped, a branch on it was decided
        wrong (a review helper)."""
        bits = dtype.bits
        signed = not dtype.name.startswith("u")
        half = (1 << (bits - 1)) if signed else 0
        shape = np.shape(r.key)
        t = sym_binop(self.tab, "add", r, SymInt.const(half, shape)) if half else r
        m = sym_binop(self.tab, "mod", t, SymInt.const(1 << bits, shape))
        return sym_binop(self.tab, "sub", m, SymInt.const(half, shape)) if half else m

    def _mark_varying(self, op: Op, values: Sequence[Value] | None = None) -> None:
        """An untracked scalar result may differ across threads when an operand (or one
        of ``values``) does."""
        if any(self._varies(v) for v in (op.operands if values is None else values)):
            for r in op.results:
                self._varying.add(r)

    def _varies(self, v: Value) -> bool:
        """A scalar that may differ across threads: a per-thread integer, a per-thread
        condition, or an untracked value computed from one."""
        if v in self._varying:
            return True
        x = self.env.get(v)
        if isinstance(x, SymInt):
            return x.key.shape == (self.T,) and bool(
                (x.key != x.key[0]).any() or (x.conc != x.conc[0]).any())
        if isinstance(x, np.ndarray) and x.shape[:1] == (self.T,):
            return bool((x != x[0]).any())      # a condition: ids (or rows) per thread
        return False

    def _bool_op(self, name: str, a: Any, b: Any, op: Op) -> Any:
        """``and``/``or``/``xor`` (``not x`` is ``x xor true``) of conditions (guard rows,
        per thread or per element). A conjunction is a guard row; the others are exact
        where the operands' truth is known, pass one operand's condition through where
        the other decides nothing (``x or false``), and otherwise become one atomic
        condition over a ``select`` term (``If(a, 1, If(b, 1, 0)) > 0`` for ``a or b``),
        which z3 decides exactly. (They used to be "true" whenever a runtime value was
        involved: a barrier, a select or a mask under ``not``/``or`` was taken for
        certain.)"""
        if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
            return None
        ct = self.conds
        if name == "and":
            out = ct.conj_arrays(a, b)
            if _cond_width(a) + _cond_width(b) <= ct.GUARD:
                return out                  # (the usual mask: no row can hold more)
            ra, rb = ct.rows(a), ct.rows(b)
            n = max(ra.shape[0], rb.shape[0])
            ra, rb = ct.rows(ra, n), ct.rows(rb, n)
            # a conjunction of more than GUARD conditions: guard rows keep GUARD of them
            # (weaker: fine for a guard), but a condition a branch, a select or a negation
            # depends on must be exact -- the rest become one condition, If(rest, 1, 0) > 0
            over = (_nonzero_count(ra) + _nonzero_count(rb) > ct.GUARD) & \
                (out[:, 0] != 1)
            if over.any():
                memo: dict = {}
                for i in np.nonzero(over)[0].tolist():
                    ids = sorted({int(x) for x in ra[i] if x} | {int(x) for x in rb[i] if x},
                                 reverse=True)
                    if len(ids) <= ct.GUARD:
                        continue
                    k = tuple(ids)
                    row = memo.get(k)
                    if row is None:
                        keep, rest = ids[:ct.GUARD - 1], tuple(ids[ct.GUARD - 1:])
                        s = self.tab.atom(Atom("select", (rest, (0, 1), (0, 0),
                                                          f"cond@{op.loc.range.start.line + 1}")))
                        keep.append(ct.atomic("gt", s, 0))
                        row = memo[k] = np.array(sorted(keep, reverse=True), np.int32)
                    out[i] = row
            return out
        ra, rb = ct.rows(a), ct.rows(b)
        n = max(ra.shape[0], rb.shape[0])
        ra, rb = ct.rows(ra, n), ct.rows(rb, n)
        ta, tb = ct.truth(ra), ct.truth(rb)
        out = np.zeros((n, ct.GUARD), np.int32)
        if name == "or":
            out[(ta == 1) & (tb == 1), 0] = 1
            pa, pb = (ta == 2) & (tb == 1), (tb == 2) & (ta == 1)      # x or false = x
            out[pa], out[pb] = ra[pa], rb[pb]
            opaque = (ta == 2) & (tb == 2)
        else:
            concrete = (ta < 2) & (tb < 2)
            out[concrete & (ta == tb), 0] = 1                         # equal: false
            pa, pb = (ta == 2) & (tb == 1), (tb == 2) & (ta == 1)      # x xor false = x
            out[pa], out[pb] = ra[pa], rb[pb]
            opaque = ((ta == 2) & (tb != 1)) | ((tb == 2) & (ta != 1))
        if opaque.any():
            memo: dict = {}
            for i in np.nonzero(opaque)[0].tolist():
                k = (ta[i], tb[i], ra[i].tobytes(), rb[i].tobytes())
                c = memo.get(k)
                if c is None:
                    c = memo[k] = self._opaque_cond(name, ra[i], rb[i], ta[i], tb[i], op)
                out[i, 0] = c
        return out

    _NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}

    def _negated(self, ids: tuple) -> int | None:
        """The atomic condition that negates a single one (``k >= K`` for ``k < K``: masks
        keep their plain form, which the bounds check reads as a size statement), or
        None for a conjunction."""
        if len(ids) != 1:
            return None
        conds = self.conds.sets[ids[0]]
        if conds is None or len(conds) != 1:
            return None
        (c,) = tuple(conds)
        return self.conds.atomic(self._NEGATE[c.pred], c.key, c.conc)

    @staticmethod
    def _cond_ids(row: np.ndarray) -> tuple:
        """The atomic conditions of a condition's row (exact for a scalar condition:
        :meth:`_bool_op` keeps conjunctions exact)."""
        return tuple(int(x) for x in row if x != 0)

    def _free_cond(self, op: Op, what: str, thread: int | None = None) -> int:
        """A condition the analysis cannot state: a fresh unknown ``cond@line > 0`` (z3
        may make it true or false: a sound over-approximation); ``thread``: one of its own
        for that thread (a condition that may differ across threads)."""
        # one unknown per op (two comparisons on one line, a helper inlined twice: two)
        r = op.loc.range.start
        where = f"{what}@{r.line + 1}:{r.character + 1}" + "".join(
            f",{k}={v}" for k, v in self.loops) + (
            f",thread={thread}" if thread is not None else "")
        seen = self._free_labels.setdefault(where, [])
        if id(op) not in seen:
            seen.append(id(op))
            self._keep_ops.append(op)           # (ids stay unique while it lives)
        n = seen.index(id(op))
        label = where + (f"#{n + 1}" if n else "")
        return self.conds.atomic("gt", self.tab.atom(Atom("param", (label,))), 0)

    def _opaque_cond(self, name: str, ra: np.ndarray, rb: np.ndarray, ta: int, tb: int,
                     op: Op) -> int:
        ca, cb = self._cond_ids(ra), self._cond_ids(rb)
        if name == "xor" and not (ta == 2 and tb == 2):
            neg = self._negated(ca if ta == 2 else cb)
            if neg is not None:
                return neg                      # not (e < 0) is e >= 0: one condition
        label = f"cond@{op.loc.range.start.line + 1}"
        sel = lambda c, x, y: self.tab.atom(Atom("select", (c, x, y, label)))  # noqa: E731
        if name == "or":                        # If(a, 1, If(b, 1, 0))
            s = sel(ca, (0, 1), (sel(cb, (0, 1), (0, 0)), 0))
        elif ta == 2 and tb == 2:               # a xor b: If(a, If(b, 0, 1), If(b, 1, 0))
            s = sel(ca, (sel(cb, (0, 0), (0, 1)), 0), (sel(cb, (0, 1), (0, 0)), 0))
        else:                                   # not x: If(x, 0, 1)
            s = sel(ca if ta == 2 else cb, (0, 0), (0, 1))
        return self.conds.atomic("gt", s, 0)

    for _n in ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "and", "or", "xor", "shl",
               "shr", "min", "max"):
        locals()["op_arith_" + _n] = (lambda n: lambda self, op: self._bin(op, n))(_n)
    del _n

    def op_arith_add(self, op):
        self._bin(op, "add")
        if op.attrs.get("loop_iv"):
            # the variable of an iteration of a loop starting at a runtime value (the
            # unroller's ``start + i * step``): witnesses name its value, see shown()
            v = self.env.get(op.result)
            if isinstance(v, SymInt):
                self.loop_ivs[tuple(op.attrs.get("loop_indices", ()))] = (
                    int(np.asarray(v.key).reshape(-1)[0]), int(np.asarray(v.conc).reshape(-1)[0]))

    def shown(self, loops: Any, op: Any, model: dict | None = None) -> tuple:
        """The loop iterations a witness names for ``op`` (:func:`shown_loops`), with each
        loop that starts at a runtime value (``range(KT - 1, -1, -1)``, ``range(s * KPER,
        ...)``) named by its variable's value under the witness' ``model`` (the unrolled
        op holds the 0-based iteration number: ``kt=0`` read as the first k-tile where it
        was the third). Where ``model`` does not fix the value, the iteration number stays
        (:meth:`loop_iterations` names those loops)."""
        return shown_loops(self.loop_values(loops, model), op)

    def _loop_value(self, loops: tuple, j: int, model: dict) -> int | None:
        """The value of the variable of runtime-start loop ``loops[j]`` under ``model``,
        or None: not a runtime-start loop, or a value the model does not fix -- also when
        it depends on a program id the model lacks (an accumulation query's model has
        none where its check does not read them: block 0 does not run every variant of
        ``range(2 - program_id(0), 2)``; a review helper)."""
        iv = self.loop_ivs.get(loops[:j + 1])
        if iv is None:
            return None
        m = dict(model)
        x = self._concretize(iv[0], iv[1], m)     # (adds the program ids it lacked, as 0)
        if not isinstance(x, int) or len(m) != len(model):
            return None
        return x

    def loop_values(self, loops: Any, model: dict | None = None) -> tuple:
        """``loops`` (``loop_indices`` of an unrolled op) with each runtime-start loop's
        iteration number replaced by its variable's value under ``model`` where it fixes
        it (see :meth:`shown`, which adds the compile-time loops).

        The sizes are the witness' own: those of the query that found it (a pairing,
        bounds or accumulation check, whose conditions they satisfy), or the block's for a
        finding made without one. They are never completed here: sizes chosen only to run
        the variant's trip counts ignored the branch an op sits under, the masks of the
        accesses and the barrier a path skipped -- "kt=2 for A.shape[1] = 96" for a race
        that needs K >= 160 (a review helper)."""
        loops = tuple(loops)
        if not self.loop_ivs or not loops:
            return loops
        model = dict(model or {})
        out = []
        for j, (name, v) in enumerate(loops):
            x = self._loop_value(loops, j, model)
            out.append((name, v if x is None else x))
        return tuple(out)

    def loop_iterations(self, model: dict | None, *loop_lists: Any) -> dict[str, str]:
        """The runtime-start loops of ``loop_lists`` (``loop_indices`` tuples) whose values
        ``model`` does not fix, by name, with their start's text (``{"kt": "(A.shape[1]
        // 64)"}``): a witness names their 0-based iteration numbers (its
        ``loop_iterations``)."""
        starts: dict[str, list[str]] = {}
        if not self.loop_ivs:
            return {}
        model = dict(model or {})
        for loops in loop_lists:
            loops = tuple(loops or ())
            for j, (name, _) in enumerate(loops):
                if loops[:j + 1] not in self.loop_ivs or \
                        self._loop_value(loops, j, model) is not None:
                    continue
                start = self.loop_ivs.get(loops[:j] + ((name, 0),))
                txt = self.tab.format(*start) if start is not None else "a runtime value"
                if txt not in starts.setdefault(name, []):
                    starts[name].append(txt)
        # (an inner loop starting at the outer one's variable starts elsewhere in each of
        # the outer iterations a witness names: each start, "or")
        return {name: " or ".join(ts) for name, ts in starts.items()}

    @staticmethod
    def block_sizes(block: Any) -> dict:
        """The program ids of a witness' ``block`` as a model (``program_id(a)``): what
        fixes a pid-started loop's values for a finding made without a query (its block's
        other sizes, z3's smallest running the trip counts, ignore the branches and masks
        the finding needs; a review helper)."""
        return {f"program_id({a})": int(b) for a, b in enumerate(block)}

    def op_arith_cmp(self, op):
        a, b = (self.env.get(v) for v in op.operands)
        if isinstance(op.result.type, FragmentType):
            self.env[op.result] = self._frag_elementwise(op, [a, b], "cmp")
            return
        if isinstance(a, SymInt) and isinstance(b, SymInt):
            self.env[op.result] = sym_compare(self.tab, self.conds, op.attrs["pred"], a, b)
        elif op.attrs["pred"] in ("eq", "ne") and isinstance(a, np.ndarray) and \
                isinstance(b, np.ndarray) and \
                all(getattr(getattr(v.type, "dtype", None), "name", None) == "i1"
                    for v in op.operands):
            # conditions compared: `!=` is xor, `==` its negation (x xor y xor true) --
            # they were one unknown per comparison (`(n > 0) != (K > 64)` in two
            # complementary ifs: AVE203 with a witness over `cmp@7:8`; a review helper)
            x = self._bool_op("xor", a, b, op)
            if x is not None and op.attrs["pred"] == "eq":
                x = self._bool_op("xor", x, np.zeros_like(x), op)
            self.env[op.result] = x
            if x is None:
                self.env[op.result] = np.full(getattr(self, "_mask_n", None) or self.T,
                                              self._shared_free_cond(op), np.int32)
        else:
            # a comparison of values the analysis does not follow (floats, loaded data):
            # may be true or false (it was taken as true); of values that may differ
            # across threads (a float computed from the thread id), an unknown per thread
            # (one for all made a barrier under it look uniform: no AVE209)
            self._mark_varying(op)
            mt = getattr(self, "_mask_threads", None)
            if op.result in self._varying and mt is not None:
                # (inside a mask: per element, its thread's)
                per_t = np.array([self._free_cond(op, "cmp", t) for t in range(self.T)],
                                 np.int32)
                self.env[op.result] = per_t[mt]
            elif op.result in self._varying:
                self.env[op.result] = np.array([self._free_cond(op, "cmp", t)
                                                for t in range(self.T)], np.int32)
            else:
                self.env[op.result] = np.full(getattr(self, "_mask_n", None) or self.T,
                                              self._shared_free_cond(op), np.int32)

    _SWAP_PRED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}

    def _shared_free_cond(self, op: Op) -> int:
        """:meth:`_free_cond` of a comparison the same for every thread, shared by the
        comparisons of the same kernel arguments and constants (``ave.assume(alpha >
        0.0)`` then ``if alpha > 0.0:`` are one condition, and ``alpha <= 0.0`` its
        negation: two unknowns made the branch's else-arm possible under the assumption;
        a review helper)."""
        def key(v: Value) -> Any:
            d = v.owner
            if not isinstance(d, Op):
                return ("arg", id(v))
            if d.name == "arith.constant":
                return ("const", repr(d.attrs["value"]), d.attrs["dtype"].name)
            return None
        ka, kb = (key(v) for v in op.operands)
        pred = op.attrs["pred"]
        if ka is None or kb is None:
            return self._free_cond(op, "cmp")
        memo = self._cmp_conds
        c = memo.get((pred, ka, kb))
        if c is None:
            # (`0.0 < alpha` is `alpha > 0.0`)
            c = memo.get((self._SWAP_PRED[pred], kb, ka))
        if c is not None:
            return c
        neg = memo.get((self._NEGATE[pred], ka, kb)) or \
            memo.get((self._SWAP_PRED[self._NEGATE[pred]], kb, ka))
        if neg is not None:
            n = self._negated((neg,))
            if n is not None:
                memo[(pred, ka, kb)] = n
                return n
        c = memo[(pred, ka, kb)] = self._free_cond(op, "cmp")
        return c

    def _unary(self, op):
        x = self.env.get(op.operands[0])
        if isinstance(op.result.type, FragmentType):
            out = self._frag_elementwise(op, [x], op.name)
            if op.name == "arith.cast" and isinstance(x, FragVal):
                src, dst = op.operands[0].type.dtype, op.result.type.dtype
                if x.ival is not None and self._widens(src, dst):
                    # integer values stay what they are (an i8 index table's -1, cast to
                    # i32 for a gather, was an unknown taken to be >= 0: a missed AVE208)
                    out.ival = x.ival
                d = self._cast_constant(x, op)
                if d is not None:
                    out.tags = Tags(out.tags.code, out.tags.cond, out.tags.src, out.tags.moved,
                                    out.tags.via, np.full(out.tags.n, d, np.int64))
            self.env[op.result] = out
        elif isinstance(x, SymInt) and op.name == "arith.neg":
            self.env[op.result] = sym_binop(self.tab, "mul", x, SymInt.const(-1))
        else:
            self.env[op.result] = None
            self._mark_varying(op)

    op_arith_neg = op_math_exp = op_math_exp2 = op_math_log = op_math_log2 = _unary
    op_math_sqrt = op_math_rsqrt = op_math_abs = op_arith_cast = _unary

    def op_arith_select(self, op):
        c, a, b = (self.env.get(v) for v in op.operands)
        if isinstance(op.result.type, FragmentType) and isinstance(c, np.ndarray) and \
                c.ndim == 1 and len(c) == self.T:
            # a scalar condition decided alike for every thread (`j > 0` of an unrolled
            # loop): the value is the side it picks, as it is -- its MMA chain, an
            # ave.zeros start (the join of both sides was a tagged value no chain starts
            # from: flash attention's `ave.where(j > 0, o * alpha, 0.0)` left P V unchecked;
            # a review helper)
            tr = self.conds.truth(self.conds.rows(c, self.T))
            lay = getattr(op.result.type, "layout", None)
            for side, x, v in ((0, a, op.operands[1]), (1, b, op.operands[2])):
                if bool((tr == side).all()) and (
                        not isinstance(x, FragVal) or
                        getattr(v.type, "layout", None) == lay):
                    self.env[op.result] = self._as_frag(x, op)
                    return
        if isinstance(op.result.type, FragmentType):
            fa, fb = self._as_frag(a, op), self._as_frag(b, op)
            tags = join(fa.tags, fb.tags, self.conds)
            da, db = fa.tags.data, fb.tags.data
            if da is not None and db is not None and not (da == db).all():
                # per element, one of two known data by a condition the analysis does not
                # follow (a fragment comparison): a datum of this select, its two data and
                # the element's logical coordinates (the same element, the same datum,
                # wherever it is stored; it was -1, other data than anything)
                coords = self.layout_coords(op.result.type.layout)
                serial = self._select_ops.setdefault(op, len(self._select_ops) + 1)
                sel = data_ids(_DATUM_SELECT, [np.int64(serial), da, db, *coords], tags.n)
                known = (da != 0) & (da != -1) & (db != 0) & (db != -1)
                tags.data = np.where(da == db, da, np.where(known, sel, -1))
            if isinstance(c, FragVal) and c.cond is not None:
                # an element whose condition is decided (ave.coord against constants: a
                # row or column picked at compile time) is the side it picks, not the join
                # of both (row=⊤ for where(coord < 0, y, x), which is x everywhere; and a
                # witness at an element the condition decides right; a review helper)
                tr = self.conds.truth(c.cond)
                if (tr <= 1).any():
                    tags = tags.copy()      # (join may share its inputs' arrays)
                    for side, sel_t in ((fa.tags, tr == 0), (fb.tags, tr == 1)):
                        if sel_t.any():
                            idx = np.nonzero(sel_t)[0]
                            tags.put(idx, side.take(idx))
            if isinstance(c, FragVal) and c.size_cond is not None:
                tags = self._select_guards(op, c, fa, fb, tags)
            varies = any(isinstance(x, FragVal) and x.varies for x in (c, a, b)) or \
                self._scalars_vary(op)
            if varies and tags.data is not None:
                # (per holder: the copies of an element may have taken different arms)
                th = self._holders(self.T, fa.V)
                tags.data = np.where((tags.data == 0) | (tags.data == -1), tags.data,
                                     data_ids(_DATUM_SELECT, [tags.data, th], tags.n))
            ival = None
            if isinstance(c, FragVal) and c.cond is not None:
                # integer values where every element's condition is decided: the side it
                # picks (an index through `where(coord >= 0, i0, 0)` is i0's: it was an
                # unknown, and a scatter by it paired other rows than the gather by i0; a
                # review helper)
                ia, ib = self._int_values(a, fa.V), self._int_values(b, fa.V)
                tr = self.conds.truth(c.cond)
                if ia is not None and ib is not None and (tr <= 1).all():
                    pick = tr == 0
                    ival = SymInt(np.where(pick, ia.key, ib.key).astype(np.int32),
                                  np.where(pick, ia.conc, ib.conc))
            out = FragVal(tags, fa.V, ival, varies=varies,
                          global_data=_global_data([fa, fb]))
            # (a select every element of which takes the accumulator: its MMA chain goes
            # on, AVE206; one that may not ended it -- on_consume)
            pc = accumulation.passed_chain(self, op)
            if pc is not None:
                out.kcov, out.partial = pc
            elif any(isinstance(x, FragVal) and isinstance(x.kcov, list) and x.kcov
                     for x in (a, b)):
                out.ended_by = op
            self.env[op.result] = out
            return
        if isinstance(a, SymInt) and isinstance(b, SymInt) and isinstance(c, np.ndarray):
            # (inside a mask: one value per element, not per thread -- AVE900 before)
            T = getattr(self, "_mask_n", None) or self.T
            rows = self.conds.rows(c, T)
            tr = self.conds.truth(rows)
            if np.all(tr == 0):
                self.env[op.result] = a
            elif np.all(tr == 1):
                self.env[op.result] = b
            else:
                # per thread: a, b, or If(c, a, b) where c depends on runtime values (was
                # an unconstrained unknown for every thread)
                a2 = SymInt(np.broadcast_to(a.key, (T,)), np.broadcast_to(a.conc, (T,))) \
                    if a.key.shape != (T,) else a
                b2 = SymInt(np.broadcast_to(b.key, (T,)), np.broadcast_to(b.conc, (T,))) \
                    if b.key.shape != (T,) else b
                self.env[op.result] = self._select(op, op.result, a2, b2, rows, tr == 1,
                                                   tr > 1)
        else:
            self.env[op.result] = None
        if self.env[op.result] is None:
            # (floats, or more per-thread conditions than a select term follows)
            self._mark_varying(op)

    def _element_cond(self, x: Any, V: int, n: int) -> np.ndarray | None:
        """Each element's condition (guard rows, ``n`` of them) of an ``i1`` operand: a
        fragment's ``size_cond``, or a scalar condition (one per thread) for each of the
        thread's ``V`` elements; None when not known."""
        if isinstance(x, FragVal):
            sc = x.size_cond
            return sc if sc is not None and sc.shape[0] == n else None
        if isinstance(x, np.ndarray) and x.ndim == 1 and len(x) == self.T and \
                self.T * V == n:
            return np.repeat(self.conds.rows(x, self.T), V, axis=0)
        return None

    def _bare_side(self, op: Op, j: int) -> bool:
        """Operand ``j`` of a select carries no tags and no MMA chain: a constant (``0.0``,
        ``1.0``), a scalar, ``ave.zeros``/``ave.full`` -- data that is no element of a
        tagged tensor and holds none of a chain's products. A select of an accumulator
        to it is a reset (accumulation.Reset: ``where(row < M - 1, acc, 5.0)`` after the
        loop stores 5.0 in that row, and was proved; a review helper)."""
        x = self.env.get(op.operands[j])
        if isinstance(x, FragVal):
            return not x.tags.code.any() and not x.kcov
        return not isinstance(x, (TileVal, TensorVal))

    def _select_guards(self, op: Op, c: FragVal, fa: FragVal, fb: FragVal,
                       tags: Tags) -> Tags:
        """``ave.where(c, x, 0.0)`` (either side; any value with no tags: ``1.0``, a scalar)
        with a condition undecided for some elements (over sizes: ``k0 + ave.coord(...) <
        K``): where ``x``'s tags are kept, they hold under ``c`` only (else the element is
        that value, no data of a tagged tensor) -- the join held them always. As a masked load's guard: a pairing is checked where it holds, and an MMA
        chain's k-slot contributes there only (an operand masked ``< K - 1`` in registers
        was proved complete; a review helper). The false side's condition is the negation
        of a one-atom ``c`` (a conjunction's is no guard row: the join's stays)."""
        rows = c.size_cond
        if rows.shape[0] != tags.n:
            return tags
        tr = self.conds.truth(rows)
        if tr.shape[0] == tags.n:
            # elements decided to take the zero: the other side's tags under a false
            # guard (as a masked load's padding), not ⊥ -- an A operand zeroed past column
            # 16 in registers made its rows ⊤ through the MMA: a false AVE201 at the store
            # (a review helper); also where only part of a conjunction decides it (`(k0 +
            # c < K) & (c != 5)`: column 5 kept its tags "always"; another review)
            for side, x in ((0, fa), (1, fb)):
                zero = tr == 1 - side
                if zero.any() and self._bare_side(op, 2 - side) and x.tags.code.any():
                    i = np.nonzero(zero & (x.tags.code != ABSENT).any(axis=1))[0]
                    if len(i):
                        tags = tags.copy()
                        tags.put(i, x.tags.take(i))
                        cond = tags.cond.copy()
                        cond[i] = 0
                        cond[i, 0] = 1
                        tags.cond = cond
        und = tr == 2
        if not und.any():
            return tags
        for side, x in ((0, fa), (1, fb)):
            if not self._bare_side(op, 2 - side) or not x.tags.code.any():
                continue
            held = und & (x.tags.code != ABSENT).any(axis=1) & \
                (tags.code == x.tags.code).all(axis=1)
            if not held.any():
                continue
            i = np.nonzero(held)[0]
            g = rows[i]
            if side == 1:
                neg = np.zeros_like(g)
                for j, r in enumerate(g.tolist()):
                    n = self._negated(tuple(a for a in r if a))
                    if n is None:
                        neg[j, 0] = -1
                    else:
                        neg[j, 0] = n
                ok = neg[:, 0] >= 0
                i, g = i[ok], neg[ok]
                if not len(i):
                    continue
            # (only where the guard row has room: conj_arrays keeps GUARD atoms, and one
            # it dropped -- the copy mask `64 < S_KV` of a key read from the wrong stage --
            # made a witness at sizes where that key is not even loaded)
            room = _nonzero_count(tags.cond[i]) + _nonzero_count(g) <= self.conds.GUARD
            i, g = i[room], g[room]
            if not len(i):
                continue
            tags = tags.copy()
            cond = tags.cond.copy()
            cond[i] = self.conds.conj_arrays(cond[i], g)
            tags.cond = cond
        return tags

    # ------------------------------------------------------------------ ids

    def _id(self, op, conc):
        self.env[op.result] = SymInt(np.zeros(self.T, np.int32), conc.astype(np.int64))

    def op_ave_thread_id(self, op): self._id(op, np.arange(self.T))
    def op_ave_warp_id(self, op): self._id(op, np.arange(self.T) // self.ws)
    def op_ave_lane_id(self, op): self._id(op, np.arange(self.T) % self.ws)
    def op_ave_warp_group_id(self, op): self._id(op, np.arange(self.T) // 128)

    def _atom_scalar(self, op, atom):
        key = self.tab.atom(atom)
        self.env[op.result] = SymInt(np.full(self.T, key, np.int32), np.zeros(self.T, np.int64))

    def op_ave_program_id(self, op):
        self.tab.atom(Atom("nprog", (op.attrs["axis"],)))
        self._atom_scalar(op, Atom("pid", (op.attrs["axis"],)))

    def op_ave_num_programs(self, op):
        self._atom_scalar(op, Atom("nprog", (op.attrs["axis"],)))

    def op_ave_dim(self, op):
        t = self.env[op.operands[0]]
        self._atom_scalar(op, Atom("dim", (t.name, op.attrs["axis"])))

    def op_ave_stride(self, op):
        t = self.env[op.operands[0]]
        self._atom_scalar(op, Atom("stride", (t.name, op.attrs["axis"])))

    # ------------------------------------------------------------------ tensors and tiles

    def op_ave_tag(self, op):
        t = self.env[op.operands[0]]
        if not isinstance(t, TensorVal):
            raise AnalysisLimit("ave.tag of a tile is not supported by the analysis yet", op)
        self.tag_ops.append(op)
        self.tag_names.append(t.name)
        self.env[op.result] = TensorVal(t.name, t.rank, len(self.tag_ops) - 1, t.gather)

    def op_ave_gather(self, op):
        t: TensorVal = self.env[op.operands[0]]
        idx = self.env[op.operands[1]]
        rows = op.attrs["rows"]
        vals = self._index_values(idx, op, rows)
        self.env[op.result] = TensorVal(t.name, t.rank, t.tag_op, (op.attrs["dim"], vals))

    op_ave_scatter = op_ave_gather

    def _index_values(self, idx: Any, op: Op, rows: int) -> SymInt:
        if isinstance(idx, FragVal) and idx.ival is not None:
            lay = op.operands[1].type.layout
            tab = self.table(lay)[:, :, 0].reshape(-1)
            key = np.zeros(rows, np.int32)
            conc = np.zeros(rows, np.int64)
            key[tab] = idx.ival.key
            conc[tab] = idx.ival.conc
            return SymInt(key, conc)
        if isinstance(idx, TileVal) and idx.space == "global":
            coords = [np.arange(rows)]
            return self._loaded_values(idx, coords, op)
        if isinstance(idx, TileVal):
            return self._shared_index_values(idx, op, rows)
        # an index fragment whose values the analysis does not follow (cast from floats, a
        # reduction): an unknown per row of the value -- the same for every gather or
        # scatter through it -- and of any sign (not an index table's entry)
        src = op.operands[1]
        owner = src.owner if isinstance(src.owner, Op) else None
        label = src.name or "index"
        keys = np.array([self.tab.atom(Atom("value", (id(owner) if owner is not None
                                                      else id(src), r)),
                                       name=f"{label}[{r}]") for r in range(rows)], np.int32)
        self._keep_alive.append(owner if owner is not None else src)
        return SymInt(keys, np.zeros(rows, np.int64))

    def _int_values(self, x: Any, V: int) -> SymInt | None:
        """The integer values ``(T * V,)`` of a fragment (its :attr:`FragVal.ival`) or of a
        per-thread scalar broadcast to it; None when not known."""
        if isinstance(x, FragVal):
            return x.ival
        if isinstance(x, SymInt) and np.shape(x.key) == (self.T,):
            return SymInt(np.repeat(x.key, V), np.repeat(x.conc, V))
        return None

    def _shared_index_values(self, tile: TileVal, op: Op, rows: int) -> SymInt:
        """The values of a gather's or scatter's index rows read from shared memory (a
        read like any, by thread 0 as the interpreter reads them: races with writes of
        other threads, bytes nothing wrote, copies still in flight are reported at the
        gather -- none was; a review helper): per row, what its bytes hold
        (:meth:`_shared_int_values`)."""
        coords = [np.arange(rows)]
        threads = np.zeros(rows, np.int64)
        self.read_tags(tile, coords, op, np.zeros(rows, np.int32), threads)
        return self._shared_int_values(tile, coords, op)

    def _shared_int_values(self, tile: TileVal, coords: list[np.ndarray], op: Op,
                           name_of: Any = None) -> SymInt:
        """Integer values of shared elements at ``coords`` (``(n,)`` each), from what their
        bytes hold: an index table's element they were copied from (the same unknown as
        that element loaded directly: two gathers through the same bytes read the same
        indices -- each op had unknowns of its own, and a gather and a scatter through one
        shared index buffer were a false AVE201; a review helper), a masked copy's element
        or fill value (``other=-1`` padding is below 0 where the sizes make it so), a
        constant, or -- computed and stored from registers, or unwritten -- an unknown of
        any sign (one per datum: the same bytes read twice are the same value).
        ``name_of(i)``: element i's name in witnesses (default ``tile[i]``)."""
        addr = self.shared_addresses(tile, coords)
        eb = tile.dtype.bytes
        per = max(1, eb // self.G)
        byts = (addr // self.G)[:, None] + np.arange(per)
        dd = self.smem.data[byts]
        data = self.element_data(dd) if per > 1 else dd[:, 0]
        wr = all_last(self.written[byts])
        n = len(addr)
        keys = np.zeros(n, np.int32)
        conc = np.zeros(n, np.int64)
        signed = not tile.dtype.name.startswith("u")
        if name_of is None:
            label = tile.name or "index"
            name_of = lambda r: f"{label}[{r}]"  # noqa: E731
        memo: dict = {}
        for r in range(n):
            datum = int(data[r])
            if not wr[r]:
                # (read as unwritten: AVE203 there)
                keys[r] = self.tab.atom(Atom("value", ("shared", id(op), r)), name=name_of(r))
                self._keep_alive.append(op)
                continue
            if datum in (0, -1):
                # writers merged otherwise than by a uniform branch (a masked store, a branch
                # on the thread id): an unknown of any sign of these bytes as their last
                # writes left them -- the same for every read until they are written again
                # (an unknown per op: a gather and a scatter through them got two values of
                # one element; a review helper)
                g = byts[r]
                ident = (tuple(g.tolist()), tuple(self.races.w_at[g].tolist()),
                         tuple(self.races.w_oat[g].tolist()), eb)
                keys[r] = self.tab.atom(Atom("value", ("bytes",) + ident), name=name_of(r))
                continue
            hit = memo.get(datum)
            if hit is None:
                hit = memo[datum] = self._datum_value(datum, eb, signed, name_of(r))
            keys[r], conc[r] = hit
        return SymInt(keys, conc)

    def _keep_stored_ints(self, dst: TileVal, coords: list, ival: SymInt,
                          act: np.ndarray) -> None:
        """A store of integers from registers into shared memory: remember each written
        element's value (its form) by the datum its bytes now hold, so that a read of them
        is that value (:meth:`_datum_value`) -- it was an unknown of any sign: a routing
        index `ids // 2` staged in shared memory for every warp's gather read back as
        -1, a false AVE208 and AVE201 with a self-contradicting witness (a review helper).
        Elements whose copies differ across threads keep no value."""
        addr = self.shared_addresses(dst, coords)
        per = max(1, dst.dtype.bytes // self.G)
        byts = (addr // self.G)[:, None] + np.arange(per)
        dd = self.smem.data[byts]
        data = self.element_data(dd) if per > 1 else dd[:, 0]
        key = np.broadcast_to(np.asarray(ival.key), act.shape)[act]
        conc = np.broadcast_to(np.asarray(ival.conc), act.shape)[act]
        seen: dict = {}
        for d, k, c in zip(data.tolist(), key.tolist(), conc.tolist()):
            if d in (0, -1):
                continue
            v = (int(k), int(c), dst.dtype.bytes)
            if seen.setdefault(d, v) != v:
                seen[d] = None
        self._stored_ints.update(seen)

    def _datum_value(self, datum: int, eb: int, signed: bool, name: str, depth: int = 0
                     ) -> tuple[int, int]:
        """(key, conc) of an integer element of ``eb`` bytes holding ``datum`` (see
        :meth:`_shared_int_values`)."""
        kept = self._stored_ints.get(datum)
        if kept is not None and kept[2] == eb:
            return kept[0], kept[1]
        raw = self._bytes.get(datum)
        if raw is not None and len(raw) == eb:
            return 0, int.from_bytes(raw, "little", signed=signed)
        joined = self._joined_parts.get(datum)
        if joined is not None and depth < 16:
            # a uniform branch's two paths: If(condition, then-value, else-value)
            cids, da, db = joined
            a = self._datum_value(da, eb, signed, name, depth + 1)
            b = self._datum_value(db, eb, signed, name, depth + 1)
            return self.tab.atom(Atom("select", (cids, a, b, name))), 0
        masked = self._masked_element(datum)
        if masked is not None and masked[3] == eb:
            # the element where its guard holds, the fill value where it fails
            cids, ed, other, _ = masked
            ek = self._datum_index(ed, name, eb)
            return self.tab.atom(Atom("select", (cids, (ek, 0), (0, other), name))), 0
        return self._datum_index(datum, name, eb), 0

    def _datum_index(self, datum: int, name: str | None, eb: int) -> int:
        """The key of an index of ``eb`` bytes whose bytes hold ``datum``: an index table's
        element of that size (the same unknown as that element loaded directly, >= 0),
        else -- computed and stored from registers, or a part of a wider element (the low
        i16 half of an i32 entry is the entry's first granule: it was taken for the whole
        entry, >= 0; a review helper) -- an unknown of that datum and size, of any sign."""
        src = self._int_element(datum)
        if src is not None and src[3].bytes == eb:
            return self._element_atom(*src)
        return self.tab.atom(Atom("value", ("shared", datum, eb)), name=name)

    def _element_atom(self, tensor: str, coords: tuple, ver: int, dtype: Any) -> int:
        """The key of the value of integer tensor ``tensor``'s element at ``coords``
        (``(key, conc)`` per dimension) read after the kernel's ``ver``-th write into it:
        a table entry (``Ids[r]``, >= 0, within ``dtype``) -- or, after a write, what the
        kernel wrote, an unknown of any sign (``Ids[r] after write 1``; global writes are
        not tracked: a table the kernel shifted by one was trusted when read back, a
        review helper). The same atom wherever the element is read."""
        at = (tensor,) + tuple(coords) + ((("written", ver),) if ver else ())
        name = self.tab.element_name(tensor, coords) + (f" after write {ver}" if ver else "")
        k = self.tab.atom(Atom("value" if ver else "load", at), name=name)
        if dtype.int_range is not None:
            # (its dtype's range: an i8 table's entry is at most 127)
            self.tab.ranges[self.tab.lins[k][0][0]] = dtype.int_range
        return k

    def _loaded_values(self, tile: TileVal, coords: list[np.ndarray], op: Op,
                       guard: np.ndarray | None = None) -> SymInt:
        """Values read from a global integer tensor: opaque atoms per element (one per
        element and, after the kernel wrote into the tensor, per write count). Under a
        mask (``guard`` rows): the ``other`` value where it fails, an atom of its own
        where the sizes decide (the loaded value or ``other``) -- the mask was ignored, so
        a masked-off index counted as the tensor's element (a missed race through a
        gather, from a review helper)."""
        tc = self.global_coords(tile, coords)
        n = len(coords[0])
        if guard is None:
            # (a masked load's bounds are checked by read_tags, under its mask: this
            # unmasked access was a false AVE208 for every masked integer load)
            self.bounds.access(op, tile, coords, np.zeros(n, np.int32), np.zeros(n, np.int64))
        ver = self._gversion.get(tile.tensor.name, 0)
        truth = self.conds.truth(guard) if guard is not None else np.zeros(n, np.int64)
        keys = np.zeros(n, np.int32)
        conc = np.zeros(n, np.int64)
        raw = constant_bytes(op.attrs.get("other", 0) or 0, tile.dtype)
        # ('other' as the register holds it: wrapped to the dtype)
        other = int.from_bytes(raw, "little", signed=not tile.dtype.name.startswith("u")) \
            if raw is not None else 0
        for i in range(n):
            if truth[i] == 1:
                conc[i] = other
                continue
            ek = self._element_atom(tile.tensor.name,
                                    tuple((int(c.key[i]), int(c.conc[i])) for c in tc), ver,
                                    tile.dtype)
            if truth[i] > 1:
                # the element where the mask holds, 'other' where it fails (the sizes
                # decide): If(guard, element, other) -- not a table entry >= 0 when 'other'
                # is negative (a missed AVE208), and the same value as the element copied
                # under that mask into shared memory (a false AVE201; review helpers)
                keys[i] = self.tab.atom(Atom("select", (
                    self._cond_ids(guard[i]), (ek, 0), (0, other),
                    f"the masked load of {self.tab.names[self.tab.lins[ek][0][0]]}")))
                continue
            keys[i] = ek
        return SymInt(keys, conc)

    def op_ave_global_tile(self, op):
        src: TensorVal = self.env[op.operands[0]]
        dyn = [self.uniform(v, op, "a tile offset") for v in op.operands[1:]]
        offs = tuple(dyn[o[1]] if isinstance(o, tuple) else (0, int(o))
                     for o in op.attrs["offsets"])
        self.env[op.result] = TileVal("global", op.result.type.dtype, op.attrs["shape"], src,
                                      offs, tuple(op.attrs["keep"]),
                                      dyn=tuple(isinstance(o, tuple)
                                                for o in op.attrs["offsets"]))

    def op_ave_subtile(self, op):
        src: TileVal = self.env[op.operands[0]]
        keep = op.attrs["keep"]
        origin = list(src.origin)
        dynf = list(src.dyn) if src.dyn else [False] * len(origin)
        if src.space == "global":
            dyn = [self.uniform(v, op, "a tile offset") for v in op.operands[1:]]
            for ld, o in enumerate(op.attrs["offsets"]):
                k, c = dyn[o[1]] if isinstance(o, tuple) else (0, int(o))
                bd = src.dims[ld]
                ok, oc = origin[bd]
                origin[bd] = (self.tab.add(ok, k), oc + c)
                dynf[bd] = dynf[bd] or isinstance(o, tuple)
        else:
            dyn = [self.concrete(v, op, "a shared tile offset") for v in op.operands[1:]]
            for ld, o in enumerate(op.attrs["offsets"]):
                origin[src.dims[ld]] += dyn[o[1]] if isinstance(o, tuple) else int(o)
        dims = tuple(src.dims[ld] for ld in keep)
        self.env[op.result] = TileVal(src.space, src.dtype, op.attrs["shape"], src.tensor,
                                      tuple(origin), dims, src.base, src.layout, src.lo, src.hi,
                                      src.name, tuple(dynf))

    def op_ave_transpose(self, op):
        src: TileVal = self.env[op.operands[0]]
        perm = op.attrs["perm"]
        self.env[op.result] = TileVal(src.space, src.dtype, tuple(src.shape[p] for p in perm),
                                      src.tensor, src.origin, tuple(src.dims[p] for p in perm),
                                      src.base, src.layout, src.lo, src.hi, src.name, src.dyn)

    def op_ave_alloc(self, op):
        if op.attrs["space"] != "shared":
            raise AnalysisLimit("register tiles are not supported by the analysis yet", op)
        rng = self.allocs.get(id(getattr(op, "source", op)))
        if rng is None:     # (an allocation the first variant does not run: none placed it)
            raise AnalysisLimit("a shared allocation that only some trip counts reach", op)
        lo, hi = rng
        shape = op.attrs["shape"]
        self.env[op.result] = TileVal("shared", op.attrs["dtype"], shape, None,
                                      (0,) * len(shape), tuple(range(len(shape))), lo,
                                      op.attrs["layout"], lo, hi, op.results[0].name or "smem")

    def op_ave_view(self, op):
        src: TileVal = self.env[op.operands[0]]
        zero = [np.zeros(1, np.int64) for _ in src.shape]
        addr = int(self.shared_addresses(src, zero)[0])
        shape = op.attrs["shape"]
        self.env[op.result] = TileVal("shared", op.attrs["dtype"], shape, None,
                                      (0,) * len(shape), tuple(range(len(shape))), addr,
                                      op.attrs["layout"], src.lo, src.hi, src.name)

    # ------------------------------------------------------------------ addressing and tags

    def _granule(self) -> int:
        sizes = []
        for op in self.k.walk():
            for v in list(op.operands) + list(op.results):
                t = v.type
                if isinstance(t, TileType) and t.space == "shared":
                    sizes.append(t.dtype.bytes)
        g = min(sizes) if sizes else 1
        return g if g in (1, 2, 4, 8, 16) else 1

    def layout_coords(self, layout: Any) -> list[np.ndarray]:
        """The coordinates of a fragment layout's elements, ``(T * V,)`` per dimension, in
        (thread, value) order -- the same arrays every time (their ids key caches)."""
        k = ("coords", id(layout))
        c = self._tables.get(k)
        if c is None:
            tab = self.table(layout)
            c = self._tables[k] = [np.ascontiguousarray(tab[:, :, d].reshape(-1))
                                   for d in range(tab.shape[2])]
        return c

    def shared_addresses(self, t: TileVal, coords: Sequence[np.ndarray]) -> np.ndarray:
        """Byte addresses (int64, like ``coords``) of tile ``t``'s elements at ``coords``.
        Memoized per tile geometry for coordinate arrays the engine keeps (layout tables,
        copy plans): unrolled iterations address the same bytes again and again."""
        key = (tuple(id(c) for c in coords), id(t.layout), t.base, t.origin, t.dims,
               t.dtype.bytes)
        hit = self._addr_cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], coords)):
            return hit[1]
        addr = self._shared_addresses(t, coords)
        if len(self._addr_cache) > 256:
            self._addr_cache.clear()
        self._addr_cache[key] = (list(coords), addr)
        return addr

    def _shared_addresses(self, t: TileVal, coords: Sequence[np.ndarray]) -> np.ndarray:
        n = np.shape(coords[0])
        base = [np.full(n, o, np.int64) for o in t.origin]
        for ld, bd in enumerate(t.dims):
            base[bd] = base[bd] + coords[ld]
        off = np.asarray(t.layout(tuple(base)), dtype=np.int64)
        return t.base + off * t.dtype.bytes

    def global_coords(self, t: TileVal, coords: Sequence[np.ndarray]) -> list[SymInt]:
        n = np.shape(coords[0])
        out = []
        for d, (k, c) in enumerate(t.origin):
            out.append(SymInt(np.full(n, k, np.int32), np.full(n, c, np.int64)))
        for ld, bd in enumerate(t.dims):
            out[bd] = SymInt(out[bd].key, out[bd].conc + coords[ld])
        if t.tensor.gather is not None:
            gd, vals = t.tensor.gather
            r = out[gd]
            if np.any(r.key != 0):
                raise AnalysisLimit("a gathered row index with a runtime offset")
            rr = np.clip(r.conc, 0, len(vals.conc) - 1)
            out[gd] = SymInt(vals.key[rr], vals.conc[rr])
        return out

    def tensor_tags(self, t: TensorVal, coords: list[SymInt], n: int) -> Tags:
        tags = Tags.bottom(n, self.F)
        if t.tag_op is None:
            return tags
        op = self.tag_ops[t.tag_op]
        region = op.regions[0]
        env = dict(zip(region.args, coords))
        for rop in region.ops:
            if rop.name == "ave.yield":
                for fname, v in zip(op.attrs["fields"], rop.operands):
                    f = self.fields.index(fname)
                    s: SymInt = env[v]
                    s = s.broadcast((n,))
                    try:
                        tags.code[:, f] = pack(s.key, s.conc)
                    except AnalysisLimit as e:
                        raise AnalysisLimit(f"the tag of `{t.name}`, field `{fname}`: {e}",
                                            op) from None
                break
            if rop.name == "arith.constant":
                env[rop.result] = SymInt.const(int(rop.attrs["value"]))
            elif rop.name == "arith.neg":
                env[rop.result] = sym_binop(self.tab, "mul", env[rop.operands[0]],
                                            SymInt.const(-1))
            else:
                name = rop.name.split(".", 1)[1]
                env[rop.result] = sym_binop(self.tab, name, env[rop.operands[0]],
                                            env[rop.operands[1]])
        tags.src[:] = t.tag_op
        return tags

    def eval_mask(self, op: Op, coords: list[np.ndarray], tile: TileVal, n: int,
                  threads: np.ndarray | None = None) -> np.ndarray:
        """Guard ids (N,) of a masked access (0 = always, 1 = never). ``threads`` (N,): the
        thread of each element -- a per-thread scalar the mask uses takes that thread's
        value, as the interpreter evaluates it (without: thread 0's, which read a mask
        over the thread id wrongly when threads hold several elements; a review helper)."""
        if not op.attrs.get("masked"):
            return self.conds.rows(np.zeros(n, np.int32))
        region = op.regions[0]
        if tile.space == "global":
            args = self.global_coords(tile, coords)
        else:
            args = [SymInt.const(c) for c in coords]
        env = dict(self.env)
        for a, c in zip(region.args, args):
            env[a] = c
        env_local: set = set(region.args)   # values the region defines (not outer scalars)
        for rop in region.ops:
            env_local.update(rop.results)
        saved = self.env
        self.env = env
        done: set = set()                   # outer values already taken per element

        def per_element(v: Value) -> None:
            """An outer per-thread value (a SymInt or condition ids per thread: (T,) or
            (T, k)) -> each element's thread's (once: a value used twice was taken twice,
            a review helper); without ``threads``, thread 0's when the shapes differ."""
            x = self.env.get(v)
            if v in env_local or v in done or not isinstance(x, (SymInt, np.ndarray)) or \
                    x.shape[:1] != (self.T,):
                return
            done.add(v)
            if threads is not None and len(threads) == n:
                self.env[v] = SymInt(x.key[threads], x.conc[threads]) \
                    if isinstance(x, SymInt) else x[threads]
            elif n != self.T:
                self.env[v] = SymInt(x.key[:1], x.conc[:1]) \
                    if isinstance(x, SymInt) else x[:1]
        # (per-thread conditions made inside the mask, a float compare: per element)
        prev_mt, self._mask_threads = getattr(self, "_mask_threads", None), \
            (threads if threads is not None and len(threads) == n else None)
        prev_n, self._mask_n = getattr(self, "_mask_n", None), n
        try:
            for rop in region.ops:
                if rop.name == "ave.yield":
                    per_element(rop.operands[0])
                    r = self.env[rop.operands[0]]
                    self.bounds.mask_bounds(op, tile, region, args, self.env)
                    break
                if rop.name == "arith.constant":
                    v = rop.attrs["value"]
                    self.env[rop.result] = (np.full(n, 0 if v else 1, np.int32)
                                            if rop.attrs["dtype"].name == "i1"
                                            else SymInt.const(v) if rop.attrs["dtype"].is_int
                                            else None)
                    continue
                h = getattr(self, "op_" + rop.name.replace(".", "_"))
                for v in rop.operands:
                    per_element(v)
                h(rop)
            else:
                r = None
        finally:
            self._mask_threads = prev_mt
            self._mask_n = prev_n
            self.env = saved
        if r is None:
            return self.conds.rows(np.zeros(n, np.int32))
        return self.conds.rows(r, n).copy()

    def read_tags(self, tile: TileVal, coords: list[np.ndarray], op: Op, guard: np.ndarray,
                  threads: np.ndarray) -> Tags:
        n = len(coords[0])
        if tile.space == "global":
            self.bounds.access(op, tile, coords, guard, threads)
            gc = self.global_coords(tile, coords)
            tags = self.tensor_tags(tile.tensor, gc, n)
            tags.cond = self.conds.rows(guard, n).copy()
            off = self.conds.truth(tags.cond) == 1
            tags.code[off] = ABSENT
            # what the elements are (write/write races are between different data): the
            # tensor's elements at these (symbolic) coordinates, under the mask
            tid = self._tensor_ids.setdefault(tile.tensor.name, len(self._tensor_ids) + 1)
            ver = self._gversion.get(tile.tensor.name, 0)
            raw = data_ids(_DATUM_GLOBAL, [tid, ver] + [(c.key.astype(np.int64) << 40) + c.conc
                                                       for c in gc], n)
            if tile.dtype.is_int and tile.dtype.name != "i1":
                self._int_reads.append((tile.tensor.name, gc, raw, ver, tile.dtype))
            tags.data = self._masked_data(raw, tags.cond, op, tile.dtype)
            return tags
        addr = self.shared_addresses(tile, coords)
        eb = tile.dtype.bytes
        if np.any(addr < tile.lo) or np.any(addr + eb > tile.hi):
            raise AnalysisLimit(f"a shared-memory access outside `{tile.name}`", op)
        G = self.G
        byts, g, gt = self._granules(addr, eb // G, threads)
        first = byts[:, 0]
        tags = self.smem.take(first)
        if eb > G:
            for j in range(1, eb // G):
                if not np.array_equal(rows_take(self.smem.code, byts[:, j]), tags.code):
                    tags = join(tags, self.smem.take(byts[:, j]), self.conds)
            # an element of several granules is the datum whose parts they hold (a packed
            # pair of two data read as one: -1, other data than any)
            tags.data = self.element_data(self.smem.data[byts])
        if op.attrs.get("masked"):
            rows = self.conds.rows(guard, n)
            tags.data = self._masked_data(tags.data, rows, op, tile.dtype)
            truth = self.conds.truth(rows)
            if (truth != 0).any():
                # as a global read (the elements it does not read hold the `other` value,
                # no tags; the rest are read under the mask) -- and an element its mask
                # excludes for certain is not read: no race, no uninitialized read (both
                # were reported, the interpreter shows neither)
                tags.code = np.where((truth == 1)[:, None], ABSENT, tags.code)
                tags.cond = self.conds.conj_arrays(tags.cond, rows)
                live = truth != 1
                if not live.all():
                    per = eb // G
                    lf = np.repeat(live, per)
                    g, gt, byts = g[lf], gt[lf], byts[live]
                    first, threads = first[live], threads[live]
        if not self.active.all():
            # (threads a branch on thread or warp ids leaves out read nothing: a consumer
            # warp's load was a race or an uninitialized read of the producer's threads;
            # a review helper)
            live = self.active[threads]
            if not live.all():
                lf = np.repeat(live, eb // G)
                g, gt, byts = g[lf], gt[lf], byts[live]
                first, threads = first[live], threads[live]
        self.races.read(g, gt, op)
        wr = all_last(self.written[byts]) if byts.size else np.ones(0, bool)
        if not wr.all():
            i = int(np.nonzero(~wr)[0][0])
            # (a copy into it still in flight: the message says so -- AVE207 reports the
            # read too, with the wait that fixes it)
            self.uninit.append((op, self.loops, int(threads[i]), int(first[i]) * G,
                                bool(self.races.pending[first[i]] > 0), None))
        if byts.size:
            # (after the unconditional finding: the first of an op is the one reported)
            marks = self.landed_when[byts]
            if marks.any():
                self._check_landings(op, marks, threads, first)
        return tags

    def _int_element(self, datum: int) -> tuple | None:
        """``(tensor, coords, ver, dtype)`` of the global integer element whose datum is
        ``datum`` (an index table's entry copied into shared memory), from the integer
        reads kept in :attr:`_int_reads` (found once, then remembered); None: not one."""
        hit = self._int_elements.get(datum)
        if hit is not None or datum in self._int_elements:
            return hit
        for tensor, gc, data, ver, dtype in reversed(self._int_reads):
            pos = np.nonzero(data == datum)[0]
            if len(pos):
                i = int(pos[0])
                coords = tuple((int(np.broadcast_to(c.key, data.shape)[i]),
                                int(np.broadcast_to(c.conc, data.shape)[i])) for c in gc)
                hit = (tensor, coords, ver, dtype)
                break
        self._int_elements[datum] = hit
        return hit

    def _masked_element(self, datum: int) -> tuple | None:
        """``(guard's condition ids, element's datum, other, bytes)`` of a masked integer
        read's datum (see :meth:`_masked_data`); None: not one."""
        hit = self._masked_parts.get(datum)
        if hit is not None or datum in self._masked_parts:
            return hit
        for ms, ds, rs, ov, nb in reversed(self._masked_reads):
            pos = np.nonzero(ms == datum)[0]
            if len(pos):
                i = int(pos[0])
                hit = (self._cond_ids(rs[i]), int(ds[i]), ov, nb)
                break
        self._masked_parts[datum] = hit
        return hit

    def _global_written(self, tile: TileVal) -> None:
        """A write into a global tensor ran (or may have: an arm of a branch): its elements
        read after it are other data than those read before (global writes are not
        tracked, so which elements changed is not known; the same element read before and
        after the kernel rewrote it was one datum -- a missed race, from a review helper).
        Journaled (a later variant resumes before it), and kept when a branch's arm is
        rolled back (the write may have happened)."""
        name = tile.tensor.name if tile.tensor is not None else None
        if name is None:
            return
        # (whether it dropped a chain: see _keep_global_start)
        self._dropped_chain = bool(self.global_chains) and self._global_written_chains(tile)
        old = self._gversion.get(name, 0)
        self._gversion[name] = old + 1
        if self.journal is not None:
            def undo() -> None:
                self._gversion[name] = old
            undo.keep = True
            self.journal.append(undo)

    def _masked_data(self, data: np.ndarray, rows: np.ndarray, op: Op, dtype: Any
                     ) -> np.ndarray:
        """The data (:attr:`Tags.data`) a masked read of elements of ``dtype`` yields:
        ``data`` where the guard ``rows`` holds, the ``other`` value (0 by default) where
        it fails -- a constant of ``dtype``, its bytes' datum (:meth:`constant_datum`: a
        copy's zero-fill and ``ave.zeros`` write the same bytes) -- and where it depends on
        sizes, a datum of its own for that element, guard and ``other`` (two reads under
        the same guard yield the same)."""
        truth = self.conds.truth(rows)
        if (truth == 0).all():
            return data
        other = op.attrs.get("other", 0) or 0
        od = self.constant_datum(other, dtype)
        if od is None:
            od = -1             # (no float64 form: other data than anything)
        out = np.where(truth == 1, od, data)
        sym = truth > 1
        if sym.any():
            # (the guard row's four int32 ids as two int64 words)
            g = np.ascontiguousarray(rows[sym], np.int32)
            g = g.view(np.int64) if g.shape[1] % 2 == 0 else g.astype(np.int64)
            out[sym] = data_ids(_DATUM_MASKED, [od, data[sym], *g.T], int(sym.sum()))
            if dtype.is_int and dtype.name != "i1" and isinstance(other, (int, np.integer)):
                # what such an element is, for an index read from the shared bytes it lands
                # in (_shared_index_values): the element where the guard holds, `other`
                # where it fails
                raw = constant_bytes(other, dtype)
                ov = int.from_bytes(raw, "little", signed=not dtype.name.startswith("u")) \
                    if raw is not None else int(other)
                self._masked_reads.append((out[sym], data[sym], rows[sym], ov, dtype.bytes))
        return out

    def constant_datum(self, value: Any, dtype: Any) -> int | None:
        """The datum of a compile-time constant of ``dtype``: its storage bytes'
        (:func:`constant_bytes`, :func:`bytes_datum`), so equal bytes are the same data
        whatever dtype wrote them; the bytes are registered (:meth:`granule_data` splits
        them into their granules', :meth:`element_data` joins those). None: ``value`` is
        None or has no float64 form."""
        if value is None:
            return None
        raw = constant_bytes(value, dtype)
        if raw is None:
            return None
        return self._known(raw)

    def _known(self, raw: bytes) -> int:
        """The datum of known bytes, registered with them (and their granules')."""
        d = bytes_datum(raw)
        if d not in self._bytes:
            self._bytes[d] = raw
            G = self.G
            for j in range(0, len(raw), G) if len(raw) > G else ():
                part = raw[j:j + G]
                self._bytes.setdefault(bytes_datum(part), part)
        return d

    @staticmethod
    def _widens(src: Any, dst: Any) -> bool:
        """An integer cast that keeps every value (to a wider type of the same signedness,
        or from unsigned to a wider signed one)."""
        if src.is_float or dst.is_float or src.name == "i1" or dst.name == "i1":
            return False
        us, ud = src.name.startswith("u"), dst.name.startswith("u")
        return (dst.bytes >= src.bytes and us == ud) or (us and not ud and dst.bytes > src.bytes)

    def _cast_constant(self, x: FragVal, op: Op) -> int | None:
        """The datum of ``ave.cast`` of a constant (every element the same known bytes):
        the cast value's bytes, as the interpreter computes it (the register value rounded
        to the new dtype: floats to nearest even, toward zero into an integer). None: not
        a constant, or a float outside the integer dtype's range (or NaN): computed data."""
        from ave_core.interp import numerics as NUM
        data = x.tags.data
        if data is None or data.size == 0 or not (data == data[0]).all():
            return None
        raw = self._bytes.get(int(data[0]))
        src, dst = op.operands[0].type.dtype, op.result.type.dtype
        if raw is None or len(raw) != src.bytes:
            return None
        with np.errstate(all="ignore"):
            v = NUM.from_storage(src, np.frombuffer(raw, NUM.STORAGE[src.name]))
            if not dst.is_float and v.dtype.kind == "f":
                lim = 1 << (8 * dst.bytes - (0 if dst.name.startswith("u") else 1))
                if not np.isfinite(v).all() or not (-lim <= np.trunc(v[0]) < lim):
                    return None
            r = NUM.round_to(dst, v)
        return self._known(np.asarray(NUM.to_storage(dst, r)).tobytes())

    def granule_data(self, data: np.ndarray, per: int) -> np.ndarray:
        """The data ``(n, per)`` of the ``per`` granules each of ``n`` elements covers: a
        granule holds a part of its element, not the element (the low and the high half of
        an f32 are different bytes: two threads writing them into one granule race). Part
        0 keeps the element's datum (a bf16 view of an f32's low half reads it), part j > 0
        a datum of its own derived from it; known bytes (a constant) split into their
        granules' bytes (f32 zeros are two bf16 zeros). 0 (unknown) and -1 (joined
        different) stay as they are. :meth:`element_data` is the inverse."""
        out = np.empty((len(data), per), np.int64)
        out[:, 0] = data
        plain = (data != 0) & (data != -1)
        for j in range(1, per):
            out[:, j] = np.where(plain, data_ids(_DATUM_PART, [data, np.int64(j)], len(data)),
                                 data)
        if self._bytes or self._whole:
            # (only the registered data: the registries are small, a tile's data are not)
            reg = np.fromiter(list(self._bytes) + list(self._whole), np.int64)
            hit = np.isin(data, reg)
            G = self.G
            for d in np.unique(data[hit]) if hit.any() else ():
                raw = self._bytes.get(int(d))
                if raw is not None and len(raw) == per * G:
                    out[data == d] = [bytes_datum(raw[j:j + G]) for j in range(0, len(raw), G)]
                parts = self._whole.get(int(d))
                if parts is not None and len(parts) == per:
                    out[data == d] = parts
        return out

    def element_data(self, dd: np.ndarray) -> np.ndarray:
        """The data of elements whose granules hold ``dd`` ``(n, per)``: the element whose
        parts they are (:meth:`granule_data`); known bytes: their concatenation's; other
        known data: a datum made of the parts (registered, so that :meth:`granule_data`
        splits it back); a part unknown (0) or joined (-1): -1, other data than anything."""
        per = dd.shape[1]
        want = self.granule_data(dd[:, 0], per)
        out = np.where((dd == want).all(axis=1), dd[:, 0], -1)
        bad = (out == -1) & (dd != 0).all(axis=1) & (dd != -1).all(axis=1)
        if bad.any():
            # granules of known bytes (two i8 zeros read as an f16): the datum of their
            # concatenation; of other data: a datum made of theirs (granule_data splits it
            # back: the element written elsewhere and read as i8 again is the same data)
            rows, inv = np.unique(dd[bad], axis=0, return_inverse=True)
            got = np.empty(len(rows), np.int64)
            for r, row in enumerate(rows):
                parts = [self._bytes.get(int(x)) for x in row]
                if all(p is not None for p in parts):
                    got[r] = self._known(b"".join(parts))
                else:
                    key = tuple(int(x) for x in row)
                    d = int(data_ids(_DATUM_WHOLE, [np.int64(x) for x in key], 1)[0])
                    self._whole.setdefault(d, key)
                    got[r] = d
            out[bad] = got[inv.reshape(-1)]
        return out

    def _granules(self, addr: np.ndarray, per: int, threads: np.ndarray) -> tuple:
        """The granules of the elements at byte addresses ``addr`` (``(n, per)``), flat,
        and the thread of each; the same arrays for the same (memoized) addresses and
        threads, so the race tracker can keep its per-access summaries."""
        key = ("gran", id(addr), id(threads), per)
        hit = self._tables.get(key)
        if hit is not None and hit[0] is addr and hit[1] is threads:
            return hit[2]
        byts = (addr // self.G)[:, None] + np.arange(per)
        out = (byts, byts.reshape(-1), np.repeat(threads, per))
        if self._n_gran >= 256:            # bounded like the address cache
            for k in [k for k in self._tables if type(k) is tuple and k[0] == "gran"]:
                del self._tables[k]
            self._n_gran = 0
        self._tables[key] = (addr, threads, out)
        self._n_gran += 1
        return out

    def write_bytes(self, tile: TileVal, coords: list[np.ndarray], tags: Tags, op: Op,
                    deferred: bool, threads: np.ndarray | None = None,
                    weak: bool | None = None, varies: bool = False,
                    granules: Tags | None = None) -> Any:
        """Write ``tags`` to the shared bytes of ``tile`` at ``coords`` by ``threads`` (race
        tracking; None: not tracked), or for an asynchronous copy (``deferred``) return the
        plan its wait_async lands. ``weak``: the write may not happen (see
        :meth:`_smem_write`; its other writers stay writers). ``varies``: the copies of an
        element may differ (``FragVal.varies``): computed data is then per thread.
        ``granules``: for elements of several granules, each granule's own tags and data
        (``n * per`` rows, element-major: a byte-exact copy out of shared memory) instead
        of the element's tags repeated."""
        computed = tags.data is None or not tags.data.all()
        if computed:
            # computed data (or unknown): new, one datum per element of this write (a
            # replicated element, held by several threads, is one datum -- unless its
            # copies may differ)
            fresh = data_ids(_DATUM_COMPUTED, [tags.moved, *coords] +
                             ([threads] if varies and threads is not None else []), tags.n)
            tags = Tags(tags.code, tags.cond, tags.src, tags.moved, tags.via,
                        fresh if tags.data is None else np.where(tags.data == 0, fresh,
                                                                 tags.data))
        addr = self.shared_addresses(tile, coords)
        eb = tile.dtype.bytes
        if np.any(addr < tile.lo) or np.any(addr + eb > tile.hi):
            raise AnalysisLimit(f"a shared-memory access outside `{tile.name}`", op)
        per = eb // self.G
        if per == 1:            # one granule per element: the tags as they are
            byts, t, thr = addr // self.G, tags, threads
        else:
            byts = ((addr // self.G)[:, None] + np.arange(per)).reshape(-1)
            rep = np.repeat(np.arange(tags.n), per)
            if granules is not None:
                t = granules
            else:
                t = tags.take(rep)
                t.data = self.granule_data(tags.data, per).reshape(-1)
            thr = threads[rep] if threads is not None else None
        # two elements of this write in one granule (a layout that maps them to the same
        # bytes: a padding typo `(28, 1)` for 32 columns, a stride 0): threads writing
        # different data there race within the write (it was no finding; the
        # interpreter's AVE304 reports it -- a review helper)
        # (data moved as is only: computed values have one datum per coordinate, and a
        # stride-0 store of a broadcast row writes equal values -- no race, a review helper)
        overlap = thr is not None and not varies and len(byts) > 1 and \
            int(np.bincount(byts).max()) > 1
        clash_data = t.data
        if overlap and computed:
            # computed values are compared by their tags: elements whose tags differ are
            # different data (a staged accumulator in an overlapping layout races); equal
            # tags may be equal values (a broadcast row's max in a stride-0 layout); an
            # untagged (⊥) element could be either -- no finding
            code = t.code.reshape(len(byts), -1)
            if (code == ABSENT).all(axis=1).any():
                overlap = False
            else:
                clash_data = np.unique(code, axis=0, return_inverse=True)[1].reshape(-1) + 1
        if deferred:
            issued = self.races.issue_async(byts, thr, op) if thr is not None else None
            if overlap:
                self.races.clash(byts, thr, clash_data, op)
            return (byts, t, thr, issued, self._weak_writes(True), self._shared_arms(),
                    self._landing_condition(op))
        marks = None
        if weak is None and self._weak_writes() and all(
                b.uniform or b.tags_forked for b in self.runtime_branches):
            # a plain write in an arm of a branch the sizes leave undecided whose arms run
            # on one state (they hold asynchronous copies): written as a copy landing there
            # is (strong, the bytes marked with the arms' conditions; a read where they
            # fail sees the old contents: AVE203 with sizes) -- it was a weak write, whose
            # join never let the other arm's copy cancel the mark (an async copy in one
            # arm, a plain copy in the other: AVE203 at a size the plain copy wrote; a
            # review helper)
            when = self._landing_condition(op)[0]
            if when:
                marks, joined, alike = self._landing_marks(byts, t, when, op, self.loops)
                t = self._join_other_paths(byts, t, joined, alike, when)
                weak = False
        if thr is not None:
            self.races.write(byts, thr, op, differs=self._differs(byts, t),
                             keep=self._shared_arms() or bool(weak) or marks is not None,
                             data=t.data if varies else clash_data if overlap else None)
        if marks is not None:
            self._smem_write(byts, t, threads=thr, weak=False, when=marks)
        else:
            self._smem_write(byts, t, threads=thr, weak=weak or None)
        return None

    def _differs(self, byts: np.ndarray, t: Tags, current_epoch: bool = True) -> np.ndarray:
        """Per granule: the new tags differ from the data the epoch's other writers wrote
        (write/write races need other data): the stored tags; where the last writer of
        the epoch is on one path of a uniform branch, that path's (``_writer_over``; not
        for an asynchronous copy retiring, whose writers since its issue may be older);
        where the other arm of an enclosing branch whose arms run at once (a condition that
        differs across threads) wrote, what it wrote (the stored tags are those before the
        branch, on this arm's own state)."""
        nd = t.data if t.data is not None else np.zeros(t.n, np.int64)
        d = _other_data(self.smem.data[byts], nd, rows_take(self.smem.code, byts), t.code)
        ov = self._writer_over
        over = [(ov[1], ov[2], ov[4], ov[3])] if (ov is not None and current_epoch and
                                                   ov[0] == self.races.epoch) else []
        for ub, code, ud, valid in over + [(ub, code, ud, None)
                                           for ub, code, ud in self._other_arm]:
            pos, hit = _lookup(ub, byts)
            if valid is not None:
                hit &= valid[pos]
            if hit.any():
                q = pos[hit]
                d[hit] = _other_data(ud[q], nd[hit], code[q], t.code[hit])
        return d

    # ------------------------------------------------------------------ movement

    def _copy_plan(self, op: Op, src: TileVal) -> tuple[list[np.ndarray], np.ndarray]:
        shape = src.shape
        vb = op.attrs["vector_bytes"]
        nv = max(1, vb // src.dtype.bytes)
        nthreads = self.T if op.attrs.get("threads") is None else int(op.attrs["threads"].size)
        key = ("copy", tuple(shape), nv, nthreads)
        plan = self._tables.get(key)
        if plan is None:
            idx = np.indices(shape).reshape(len(shape), -1)
            lin = np.arange(idx.shape[1])
            thread = (lin // nv) % nthreads
            plan = self._tables[key] = ([np.ascontiguousarray(idx[d])
                                         for d in range(len(shape))], thread)
        return plan

    def _copy(self, op: Op, deferred: bool) -> None:
        src: TileVal = self.env[op.operands[0]]
        dst: TileVal = self.env[op.operands[1]]
        coords, thread = self._copy_plan(op, src)
        act = self.active[thread]
        if not act.all():
            coords = [c[act] for c in coords]
            thread = thread[act]
        n = len(thread)
        if n == 0:
            return
        on_dst = op.attrs.get("mask_side") == "dst"
        if dst.space == "global":
            # as for a global store (op_ave_store): the mask, the bounds obligations and
            # the destination's tags are the same in every variant's epilogue
            entry = self._xv_entry(op, src, dst)

            def global_side() -> np.ndarray:
                g = self.eval_mask(op, coords, dst if on_dst else src, n, thread)
                self.bounds.access(op, dst, coords, g, thread)
                return g
            guard = self._xv_guard(op, entry, global_side)
            if src.space == "shared":
                stags = self.read_tags(src, coords, op, np.zeros(n, np.int32), thread)
                if dst.tensor is not None and dst.tensor.tag_op is not None:
                    self._check_into_tagged(op, stags, dst, coords, thread, guard, entry)
            self._global_written(dst)
            return                                    # global writes are not tracked
        guard = self.eval_mask(op, coords, dst if on_dst else src, n, thread)
        tags = self.read_tags(src, coords, op, np.zeros(n, np.int32) if on_dst else guard,
                              thread)
        rec = self.record(op)
        tags.moved[:] = rec
        granules = None
        per = src.dtype.bytes // self.G
        if per > 1 and src.space == "shared" and not op.attrs.get("masked"):
            # shared -> shared moves bytes: each granule keeps its own tags and data (a
            # bf16 pair moved as one i32 was the join of its halves' tags, k=⊤: a false
            # pairing violation after a byte-exact copy; a review helper)
            byts = (self.shared_addresses(src, coords) // self.G)[:, None] + np.arange(per)
            granules = self.smem.take(byts.reshape(-1))
            granules.data = self.smem.data[byts].reshape(-1)
            granules.moved = np.full(granules.n, rec, np.int32)
        plan = self.write_bytes(dst, coords, tags, op, deferred, thread, granules=granules)
        if deferred:
            self.open_group.append(plan)

    def op_ave_copy(self, op): self._copy(op, False)
    def op_ave_copy_async(self, op): self._copy(op, True)

    def _group_paths_alike(self, op: Op) -> bool:
        """Both arms of ``op`` do the same to the asynchronous-copy groups in flight now:
        as many groups from before the branch retired, as many new ones left in flight."""
        g0 = self.groups_in_flight()
        effects = [_group_effect(reg.ops, g0) for reg in op.regions]
        return effects[0] is not None and effects[0] == effects[1]

    def groups_in_flight(self) -> int:
        """The most groups some thread has committed and not fully retired."""
        if not self.inflight:
            return 0
        oldest = np.full(self.T, np.iinfo(np.int64).max)
        for plan, seq in self.inflight:
            thr = plan[2]
            if thr is None:
                oldest[:] = np.minimum(oldest, int(seq.min()))
            else:
                np.minimum.at(oldest, thr, seq)
        left = self.commits - np.minimum(oldest, self.commits)
        return int(left.max())

    def _certain_active(self) -> np.ndarray:
        """The threads that run the current op for certain: active, and inside the arms of
        enclosing branches on runtime values that differ across threads only where they
        take that arm for certain."""
        act = self.active
        for b in self.runtime_branches:
            if not b.uniform and not b.groups_alike:
                act = act & b.certain
        return act

    def op_ave_commit_async(self, op):
        if any(not b.uniform for b in self.runtime_branches):
            raise AnalysisLimit(
                "`ave.commit_async` under a branch on a runtime value that may differ across "
                "threads: which threads commit depends on the sizes, and each thread counts "
                "its own groups (commit on every thread, outside the branch: a commit with "
                "no copy is an empty group)", op)
        act = self.active
        keep = []
        for plan in self.open_group:
            sel = _plan_active(plan, act)
            if not sel.all():
                keep.append(_plan_rows(plan, ~sel))
                if not sel.any():
                    continue
                plan = _plan_rows(plan, sel)
            thr = plan[2]
            seq = self.commits[thr] if thr is not None else \
                np.full(len(plan[0]), int(self.commits.max()), np.int64)
            self.inflight.append((plan, seq))
        self.open_group = keep
        # (each thread's own count: a producer warp's commit is its own group -- a commit
        # on some threads was AVE205; the interpreter counts the same way)
        self.commits = self.commits + act.astype(np.int64)

    def op_ave_wait_async(self, op):
        """The threads running it (for certain) retire their own copies committed more than
        ``n`` groups ago (PTX cp.async.wait_group); other threads' copies stay in flight
        (they all landed: a producer warp that never waited raced with the readers after
        the barrier, unreported; a review helper)."""
        n = op.attrs["n"]
        act = self._certain_active()
        keep = []
        for entry in self.inflight:
            plan, seq = entry
            thr = plan[2]
            done = self.commits[thr] if thr is not None else int(self.commits.max())
            sel = _plan_active(plan, act) & (seq < done - n)
            landed = _entry_rows(entry, sel)
            if landed is not None:
                self._land(landed[0], op, tags=True)
            rest = _entry_rows(entry, ~sel)
            if rest is not None:
                keep.append(rest)
        self.inflight = keep

    def _land(self, plan: tuple, op: Op | None, tags: bool) -> None:
        """An asynchronous copy's bytes land (``plan``: what :meth:`write_bytes` returned
        for it): its write races like any since its issue; with ``tags``, its tags are
        written (weakly where it was issued under a branch whose arms share one state: it
        may not have been)."""
        byts, t, thr, issued, weak, keep, when = plan
        if issued is not None:
            self.races.retire_async(byts, thr, op, issued,
                                    self._differs(byts, t, issued[0] == self.races.epoch),
                                    keep)
        if tags:
            marks = 0
            if when[0]:
                marks, joined, alike = self._landing_marks(byts, t, *when)
                t = self._join_other_paths(byts, t, joined, alike, when[0])
            self._smem_write(byts, t, weak=weak, threads=thr, when=marks)

    def _join_other_paths(self, byts: np.ndarray, t: Tags, joined: np.ndarray,
                          alike: np.ndarray, when: tuple = ()) -> Tags:
        """``t`` with the rows ``joined`` (granules another path wrote other data into:
        :meth:`_landing_marks`) joined with the granules' tags now. Where the other arm
        of the one branch ``when`` names wrote (``joined``, or ``alike``: the same data)
        under another guard (a tail tile's copy masked on k, the full tiles' not), the
        guard becomes the two paths' (:meth:`_path_guards`; this copy's guard alone held
        for both paths)."""
        if alike.any() and len(when) == 1:
            ids, arm, _ = when[0]
            i = np.nonzero(alike)[0]
            old, new = self.smem.take(byts[i]), t.take(i)
            out = new.copy()
            self._path_guards(out, *((old, new) if arm == 1 else (new, old)), ids)
            if out.cond is not new.cond:
                t = t.copy()
                t.put(i, out)
        if not joined.any():
            return t
        t = t.copy()
        i = np.nonzero(joined)[0]
        new, old = t.take(i), self.smem.take(byts[i])
        out = join(new, old, self.conds)
        if len(when) == 1:
            ids, arm, _ = when[0]
            self._path_guards(out, *((old, new) if arm == 1 else (new, old)), ids)
        t.put(i, out)
        return t

    def _landing_condition(self, op: Op) -> tuple:
        """The condition under which an asynchronous copy issued here runs, as far as the
        branches on runtime values around it decide it: ``((condition ids, arm, branch
        id), ...)`` for each enclosing branch whose condition every thread takes the same
        way and the sizes leave undecided -- () when none: the copy runs on every path
        that gets here, or :meth:`_weak_writes` makes its landing weak -- then ``op`` and
        the loop indices."""
        out = []
        for ids, arm, b in self._uniform_arms(undecided=True):
            out.append((ids, arm, id(b.op)))
            self._branch_ops[id(b.op)] = b.op
        return tuple(out), op, self.loops

    def _uniform_arms(self, undecided: bool = False) -> list[tuple]:
        """``(condition ids, arm, RuntimeBranch)`` of each enclosing arm of a branch on a
        runtime condition every thread takes the same way (``undecided``: only those the
        sizes leave undecided)."""
        out = []
        for b in self.runtime_branches:
            if b.uniform and b.cond_row is not None and (b.undecided or not undecided):
                ids = tuple(self._cond_ids(b.cond_row))
                if ids:
                    out.append((ids, b.arm, b))
        return out

    def _arm_term(self, ids: tuple, arm: int) -> Any:
        """The z3 term of taking arm ``arm`` (0 then, 1 else) of a branch on ``ids``."""
        c = self.solver.cond(list(ids))
        return c if arm == 0 else self.solver.z3.Not(c)

    def _landing_marks(self, byts: np.ndarray, t: Tags, when: tuple, copy: Op,
                       loops: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The :attr:`landed_when` of granules ``byts`` that a copy issued under ``when``
        (:meth:`_landing_condition`: one clause, a conjunction of branch arms) writes
        with tags ``t``. A mark is a disjunction of such clauses: the granule holds the
        data of the copies that wrote it when one of them holds, what it held before
        otherwise. Where the granule already holds the same data (tags and datum), what it
        held before is as good: the old condition or this one (untagged data is compared
        by datum: a prefetch one tile short over an older untagged tile was proved). Where
        the old clauses are each exclusive with this one (other arms of the same branches:
        if/else, if/elif/else, nested arms; the arms run one after the other on one
        state), one of them ran: their disjunction, and where they wrote other data the
        tags are to be joined (the second array: :meth:`_join_other_paths`; the third: the
        granules of such paths that hold the same data). Otherwise this copy's clause
        alone."""
        old = self.landed_when[byts]
        same = self.written[byts] & (rows_take(self.smem.code, byts) == t.code).all(axis=1)
        if t.data is not None:
            same &= self.smem.data[byts] == t.data
        base = self._landing_id(frozenset((when,)), copy, loops)
        out = np.full(len(byts), base, np.int32)
        joined = np.zeros(len(byts), bool)
        alike = np.zeros(len(byts), bool)
        for o in np.unique(old).tolist():
            sel = old == o
            if o == 0:
                out[sel & same] = 0             # (written for certain, the same data)
                continue
            clauses = self._landings[o - 1]
            merged = self._landing_id(_simplify(clauses | {when}), copy, loops)
            if all(self._exclusive(c, when) for c in clauses):
                out[sel] = merged
                # other data on the other paths: the bytes hold one or the other -- their
                # tags joined (a wrong k-tile refilled in one arm, the right one in the
                # other: only the later arm's tags were kept, and the pairing was proved;
                # a review helper)
                joined |= sel & ~same
                alike |= sel & same
            else:
                out[sel & same] = merged
        return out, joined, alike

    def _exclusive(self, a: tuple, b: tuple) -> bool:
        """Two clauses of branch arms cannot both hold: different arms of one branch, or
        (z3, under the sizes' domain) conditions no sizes satisfy together -- ``if n >
        3:`` and a later ``if n <= 3:``."""
        if _exclusive(a, b):
            return True
        key = (a, b)
        r = self._excl_memo.get(key)
        if r is None:
            both = [self._arm_term(ids, arm) for ids, arm, _ in a + b]
            r = self._excl_memo[key] = self.solver.satisfiable([], both).status == "unsat"
        return r

    def _landing_id(self, clauses: frozenset, copy: Op, loops: tuple) -> int:
        """The mark of a disjunction of clauses, written last by ``copy`` at ``loops`` (0:
        the empty conjunction is among them -- written on every path)."""
        if () in clauses:
            return 0
        key = (clauses, id(copy), loops)
        i = self._landing_ids.get(key)
        if i is None:
            self._landings.append(clauses)
            self._landing_ops[len(self._landings)] = (copy, loops)
            i = self._landing_ids[key] = len(self._landings)
        return i

    def _check_landings(self, op: Op, marks: np.ndarray, threads: np.ndarray,
                        first: np.ndarray) -> None:
        """A shared read of granules an asynchronous copy wrote under a branch condition
        (``marks``: their :attr:`landed_when` per element read, rows of granules): where
        the sizes let this read run (the loops around it at this iteration, the branches
        around it) while that condition fails, the copy never ran and the bytes hold what
        they held before -- nothing (the interpreter's AVE303), or an older tile: AVE203
        with the sizes (a prefetch ``if (kt + 2) * BK < K:`` whose stage is read
        unconditionally; it was proved). One z3 query per condition and iteration."""
        from ave_core.analysis.accumulation import running_trip_constraints
        m = marks.reshape(len(marks), -1).max(axis=1)
        sv = self.solver
        z3 = sv.z3
        arms = self._uniform_arms()
        pkey = tuple((ids, arm) for ids, arm, _ in arms)
        for idx in np.unique(m[m > 0]).tolist():
            key = (idx, pkey, self.loops, self.entered_loops, id(self.k))
            res = self._landing_memo.get(key)
            if res is None:
                ran = z3.Or(*[z3.And(*[self._arm_term(ids, arm) for ids, arm, _ in when])
                              for when in sorted(self._landings[idx - 1], key=repr)])
                extra = running_trip_constraints(self, z3) + \
                    [self._arm_term(ids, arm) for ids, arm, _ in arms] + [z3.Not(ran)]
                r = sv.satisfiable([], extra)
                res = self._landing_memo[key] = (r.status, r)
            status, r = res
            if status == "unknown":
                # (a path where the copy did not run, undecided: never a silent pass -- it
                # was skipped, and the read of bytes only that copy writes was clean with a
                # budget of 5 ms; a review helper)
                self._undecided(op, "whether the bytes it reads were written: an "
                                "asynchronous copy into them runs under a branch, and the "
                                "solver's budget ran out deciding whether it can not run")
                continue
            if status != "sat":
                continue
            model = r.refine() if r.refine is not None else r.model
            i = int(np.nonzero(m == idx)[0][0])
            clauses = sorted(self._landings[idx - 1], key=repr)
            copy_op, issued = self._landing_ops.get(idx, (None, ()))
            self.uninit.append((op, self.loops, int(threads[i]), int(first[i]) * self.G,
                                False, {"when": clauses, "copy": copy_op,
                                        "copy_loops": dict(issued),
                                        "model": {k: v for k, v in model.items()
                                                  if not k.startswith("__")}}))

    # ------------------------------------------------------------------ chains through global

    def _global_key(self, tile: Any, lay: Any, guard: Any) -> tuple | None:
        """The elements a global access of ``tile`` in layout ``lay`` under ``guard`` (its
        mask's rows) touches, per (thread, value) position: ``(tensor, their coordinates'
        forms, the mask)`` -- two accesses with equal keys move the same elements, under
        the same mask, to the same registers (a load masked `m < M - 1` continued a chain
        stored under `m < M`: its last row read zeros; a review helper) -- or None."""
        if tile is None or tile.space != "global" or tile.tensor is None or \
                not hasattr(lay, "coords_table"):
            return None
        try:
            gc = self.global_coords(tile, self.layout_coords(lay))
        except Exception:  # noqa: BLE001 - (a tile the forms do not cover: no key)
            return None
        g = b"" if guard is None else np.ascontiguousarray(
            self.conds.rows(guard, len(gc[0].conc) if gc else 1)).tobytes()
        return (tile.tensor.name, g) + tuple(
            (np.asarray(c.key).tobytes(), np.asarray(c.conc).tobytes()) for c in gc)

    def defers_store(self, op: Op) -> bool:
        """A global store of an MMA chain into a tensor the kernel reads back after writing
        it (``C += A B`` one k-tile per iteration through global memory): the chain does not
        end there -- a later load of the same elements continues it, and a chain no load
        continues is checked at the kernel's end (:meth:`_end_global_chains`)."""
        if op.name != "ave.store" or len(op.operands) < 2:
            return False
        dst, fr = self.env.get(op.operands[0]), self.env.get(op.operands[1])
        return isinstance(dst, TileVal) and dst.space == "global" and \
            dst.tensor is not None and dst.tensor.name in self.written_tensors and \
            isinstance(fr, FragVal) and isinstance(fr.kcov, list) and bool(fr.kcov)

    def _keep_global_chain(self, op: Op, dst: TileVal, fr: FragVal, guard: Any) -> None:
        """Register the chain a deferred store (:meth:`defers_store`) writes (journaled):
        the tile's content now (the tensor's other registered tiles are dropped: this
        store may overlap them)."""
        key = self._global_key(dst, op.operands[1].type.layout, guard)
        self._global_written_chains(dst)
        if key is None:
            accumulation.end_chain(self, fr, op)
            accumulation.flush_resets(self, op, guard)
            return
        self.global_chains[key] = (fr, op, guard, list(self.runtime_branches),
                                   self.active.copy(), self.loops, _tile_box(dst), False)
        # (kept when a branch's arm is rolled back, as the drop of what it overwrote is: the
        # store may have happened -- the final store of a chain under `if M > 8:` was
        # undone with its arm, and the chain never checked; a review helper. The kernel's
        # end checks it under the store's branches)
        self._journal_chains(key, None, keep=bool(self.runtime_branches))

    def _stores_start(self, dst: Any, fr: Any) -> bool:
        """A global store into a tensor the kernel reads back after writing it, of a value
        that holds no products (``ave.zeros``, a constant, global data alone: a bias tile,
        ``beta * C``): what a later load of the same elements reads is a chain's start, as
        the value itself would be (zeroing C before a loop that accumulates into it through
        global memory was AVE205, "may hold a partial sum"; a review note)."""
        return isinstance(dst, TileVal) and dst.space == "global" and \
            dst.tensor is not None and dst.tensor.name in self.written_tensors and \
            isinstance(fr, FragVal) and fr.kcov is None and not fr.readback and \
            fr.ended_by is None and (fr.global_data or not fr.tags.code.any())

    def _keep_global_start(self, op: Op, dst: TileVal, guard: Any) -> None:
        """Register a start (:meth:`_stores_start`) in the elements a store wrote (after
        :meth:`_global_written` dropped what was known there; journaled). A load of them
        under the same mask (:meth:`_global_key`) is global data alone; the kernel's end
        checks nothing for it. Not over a chain stored in elements it may overwrite, unless
        a use of a load of it was checked (:meth:`_chain_consumed`): those products would
        be lost (zeros stored after each iteration's chain -- the kernel
        outputs zeros: every load after is a read back, AVE205 at its MMA; a load of the
        chain in between, its value discarded, made it a start, and the kernel was proved;
        a review helper)."""
        if self._dropped_chain:
            return
        key = self._global_key(dst, op.operands[1].type.layout, guard)
        if key is not None:
            self.global_chains[key] = (None, op, guard, list(self.runtime_branches),
                                       self.active.copy(), self.loops, _tile_box(dst), True)
            self._journal_chains(key, None)

    def _global_written_chains(self, tile: Any) -> bool:
        """Any write into a global tensor: the chains registered in tiles it may overlap are
        no longer known to be there (a store of zeros, or of another tile overlapping them,
        over a chain: the reload continued it, and the kernel was proved; a review helper)
        -- those of tiles it cannot overlap (another column block, by constant offsets
        from one form) stay (zeroing C's second tile dropped the first's chain, which was
        then never checked; a review helper). A chain dropped so is not checked at the end
        (its tile was overwritten); a load of it is a read back with no chain (AVE205 at
        an MMA into it). Returns whether a chain no use checked was among them."""
        name = tile.tensor.name if getattr(tile, "tensor", None) is not None else None
        box = _tile_box(tile)
        dropped = False
        for key in [k for k in self.global_chains if k[0] == name]:
            if _boxes_disjoint(box, self.global_chains[key][6]):
                continue
            old = self.global_chains.pop(key)
            dropped |= old[0] is not None and not old[7]
            # (kept when a branch's arm is rolled back: the write may have happened -- zeros
            # stored in one arm of `if kt + 1 < KT:` were undone for the join, and the next
            # load continued the chain they overwrote; a review helper)
            self._journal_chains(key, old, keep=True)
        return dropped

    def _chain_consumed(self, kcov: list) -> None:
        """A chain a load continued was checked at a use of the loaded value (stored into
        C from a workspace W): its products reached the output, and zeros stored over it
        in W are a start (a workspace reused for the next output tile was AVE205; a
        review helper). Journaled (a branch's arm rolled back: not consumed)."""
        for key, ent in list(self.global_chains.items()):
            if ent[0] is not None and ent[0].kcov is kcov and not ent[7]:
                self.global_chains[key] = ent[:7] + (True,)
                self._journal_chains(key, ent)

    def _journal_chains(self, key: tuple, old: Any, keep: bool = False) -> None:
        if self.journal is not None:
            def undo() -> None:
                if old is None:
                    self.global_chains.pop(key, None)
                else:
                    self.global_chains[key] = old
            undo.keep = keep
            self.journal.append(undo)

    def _take_global_chain(self, op: Op, src: TileVal, out: FragVal, guard: Any) -> None:
        """A global load of elements a deferred store wrote with an MMA chain: the loaded
        value continues that chain (C += A B through global memory was "never accumulates
        k=0" for each iteration's one MMA, or no check at all; a review helper)."""
        key = self._global_key(src, op.attrs["layout"], guard)
        hit = self.global_chains.get(key) if key is not None else None
        if hit is None:
            return
        # (the tile keeps it: a second load of it continues it too -- two loads added
        # count its products twice -- and the kernel's end checks it while it is there)
        fr = hit[0]
        if fr is None:              # a start stored there (_keep_global_start)
            out.global_data = True
            return
        out.kcov, out.partial = fr.kcov, fr.partial

    def _end_global_chains(self) -> None:
        """The kernel ends: each chain a deferred store wrote that no load continued is
        checked there, as a store's would be (under the store's branches, threads and
        mask)."""
        for key in list(self.global_chains):
            fr, op, guard, branches, active, loops, _, _ = self.global_chains[key]
            if fr is None:          # a start (_keep_global_start): no chain to check
                continue
            saved = (self.runtime_branches, self.active, self.loops)
            self.runtime_branches, self.active, self.loops = branches, active, loops
            try:
                accumulation.end_chain(self, fr, op)
                accumulation.flush_resets(self, op, guard)
            finally:
                self.runtime_branches, self.active, self.loops = saved

    def _retire_at_exit(self) -> None:
        """The kernel ends: the asynchronous copies no ``ave.wait_async`` retired still
        land (the hardware completes them), so they race like retired ones with the
        accesses of other threads since their issue -- a copy left in flight over bytes
        another thread wrote was no finding at all (the interpreter's AVE304 reports it;
        a review helper's differential test). Nothing reads their bytes after the end:
        the tags are not written. Journaled like any op of the variant's end."""
        for plan in [p for p, _ in self.inflight] + list(self.open_group):
            self._land(plan, None, tags=False)

    def wait_needed(self, gran: int) -> tuple[int, bool]:
        """For an asynchronous copy into granule ``gran`` still in flight: the
        ``ave.wait_async(n)`` that retires it here -- ``n`` the groups committed after the
        last one that writes it -- and whether it is still uncommitted (then
        ``ave.commit_async()`` first, and ``n = 0``). For the quick fix of AVE207."""
        if any((np.asarray(e[0]) == gran).any() for e in self.open_group):
            return 0, True
        best = None
        for plan, seq in self.inflight:
            hit = np.asarray(plan[0]) == gran
            if not hit.any():
                continue
            thr = plan[2]
            done = self.commits[thr[hit]] if thr is not None else int(self.commits.max())
            after = int((done - 1 - seq[hit]).min())
            best = after if best is None else min(best, after)
        return (max(best, 0) if best is not None else 0), False

    def op_ave_barrier(self, op):
        """A barrier ends the race epoch -- when every thread reaches it. One some threads
        skip for certain (a branch on the thread or warp id) is a divergent barrier (AVE209:
        a deadlock or undefined behaviour on the GPU), reported with the first thread that
        reaches it and the first that does not; it still ends the epoch (no cascade of
        races behind the real finding). Under a branch on a runtime value that every thread
        takes the same way, arms that touch shared memory run on forked race states (see
        :meth:`op_scf_if`): the barrier ends the epoch of its own path. Under any other
        branch on a runtime value it may not run at all (the race state is one for both
        paths, and the other has no barrier), so it does not end the epoch: the accesses on
        either side race unless another barrier separates them; whether it may diverge is
        asked at the end of the variant (:meth:`check_divergence`: under its trip counts,
        the same whichever variant ran the barrier)."""
        if not self.active.all():
            if self.runtime_branches and not self._reachable(np.nonzero(self.active)[0]):
                return          # the enclosing runtime conditions never hold together
            reach = int(np.argmax(self.active))
            miss = int(np.argmax(~self.active))
            self.divergent.append((op, self.loops, reach, miss, self._ifs[-1] if self._ifs
                                   else None, None))
            if self.runtime_branches and not all(b.forked for b in self.runtime_branches):
                # (inside an arm of a runtime branch whose paths share one race state, it
                # may not run at all: ending the epoch hid the race on the path that skips
                # the arm; a review helper's differential test)
                return
        elif self.runtime_branches and not all(b.forked for b in self.runtime_branches):
            branches = tuple(self.runtime_branches)
            if not self._always_reached(branches):
                self.may_diverge.append((op, self.loops, branches))
                return
            # every thread reaches it for every size (`if M >= 128:` around `if tid < M:`):
            # a barrier like any other (decided without trip counts: the same in every
            # variant)
        self.races.barrier()

    def _reach_terms(self, branches: tuple) -> tuple:
        """Per group of threads with the same enclosing conditions (first thread order):
        ``(keys per thread, groups, z3 terms "this group reaches the barrier")``."""
        sv = self.solver
        z3 = sv.z3
        keys = [tuple(b"" if b.certain[t] else b.rows[t].tobytes() for b in branches)
                for t in range(self.T)]
        firsts: dict = {}
        for t, k in enumerate(keys):
            firsts.setdefault(k, t)
        groups = sorted(firsts.items(), key=lambda kv: kv[1])

        def reaches(k: tuple) -> Any:
            parts = []
            for b, row in zip(branches, k):
                if not row:
                    continue
                c = sv.cond(list(self._cond_ids(np.frombuffer(row, np.int32))))
                parts.append(c if b.arm == 0 else z3.Not(c))
            return z3.And(*parts) if parts else z3.BoolVal(True, sv.ctx)
        return keys, groups, [reaches(k) for k, _ in groups]

    def _reachable(self, threads: np.ndarray) -> bool:
        """Some size lets one of ``threads`` take every enclosing branch on a runtime value
        to here (``if X > 64: if X < 32: ...`` never does); True when z3 cannot tell."""
        sv = self.solver
        z3 = sv.z3
        keys, groups, terms = self._reach_terms(tuple(self.runtime_branches))
        wanted = {keys[int(t)] for t in threads}
        terms = [t for (k, _), t in zip(groups, terms) if k in wanted]
        with sv.timed():
            sv.queries += 1
            s = z3.Solver(ctx=sv.ctx)
            s.set("timeout", sv.timeout_ms)
            s.add(*sv._domain, z3.Or(*terms))
            return s.check() != z3.unsat

    def _always_reached(self, branches: tuple) -> bool:
        """Every thread reaches a barrier under these branches, for every size (z3 under
        the sizes' domain only); False when some size lets a thread skip it, or z3 cannot
        tell."""
        sv = self.solver
        z3 = sv.z3
        memo = sv.reach_memo
        key = tuple((b.arm, b.rows.tobytes(), b.certain.tobytes(), b.forked)
                    for b in branches)
        hit = memo.get(key)
        if hit is not None:
            return hit
        # the branches whose arms are separate paths (forked: every thread takes the same
        # arm) are where this path is: assumed; the others must let every thread through
        path = tuple(b for b in branches if b.forked)
        rest = tuple(b for b in branches if not b.forked)
        _, _, terms = self._reach_terms(rest)
        _, _, assumed = self._reach_terms(path) if path else (None, None, [])
        with sv.timed():
            sv.queries += 1
            s = z3.Solver(ctx=sv.ctx)
            s.set("timeout", sv.timeout_ms)
            s.add(*sv._domain, *assumed[:1], z3.Or(*[z3.Not(t) for t in terms]))
            out = s.check() == z3.unsat
        memo[key] = out
        return out

    def check_uniform_trips(self) -> None:
        """A runtime loop's bound (or start) must be one value for the whole workgroup: the
        variant unrolls one trip count for every thread, so ``for i in
        ave.range(0, ave.warp_id()):`` (warp 0 runs no iteration, warp 1 one) was analyzed
        as if every warp ran the same ones, and a barrier in it -- a deadlock on the GPU,
        the interpreter's AVE305 -- went unreported (a review helper).

        Raises:
            AnalysisLimit: at the bound's op, a loop bound that differs across threads.
        """
        for v, lb, _, _ in getattr(self.k, "trip_preconditions", ()):
            for x in (v, lb):
                if isinstance(x, (int, np.integer)):
                    continue
                val = accumulation.trip_bound_value(self, x)
                if isinstance(val, SymInt) and np.ndim(val.conc) and \
                        np.shape(val.conc)[0] == self.T and \
                        not ((val.conc == val.conc[0]).all() and (val.key == val.key[0]).all()):
                    raise AnalysisLimit(
                        "the trip count of a runtime loop differs across the threads of the "
                        "workgroup (its bounds are per thread): the checker unrolls one trip "
                        "count for all of them, and a barrier in such a loop deadlocks",
                        x if isinstance(x, Op) else
                        (x.owner if isinstance(getattr(x, "owner", None), Op) else None))

    def check_divergence(self, known: set) -> list:
        """The barriers of :attr:`may_diverge` that may diverge under this variant's trip
        counts (locations in ``known`` already have a finding): ``(op, loops, reach, miss,
        split branch, model)`` each."""
        out = []
        for op, loops, branches in self.may_diverge:
            if op.loc.report_key in known:
                continue
            saved = self.loops
            self.loops = loops
            try:
                f = self._may_diverge(op, branches)
            finally:
                self.loops = saved
            if f is not None:
                out.append(f)
                known = known | {op.loc.report_key}
        return out

    def _may_diverge(self, op: Op, branches: tuple) -> tuple | None:
        """A barrier every thread may reach, under branches on runtime values whose
        conditions differ across threads (``if ave.thread_id() < M``; ``branches``: the
        enclosing :class:`RuntimeBranch` entries): a thread reaches it when every enclosing branch's
        arm is taken (their conditions together: an outer ``if M >= 128`` rules out the
        sizes an inner one would diverge for). One z3 query asks for sizes under which some
        thread reaches it and another does not; from the (canonical) model, the lowest
        thread on each side. Found: the AVE209 finding."""
        sv = self.solver
        z3 = sv.z3
        from ave_core.analysis.accumulation import _trip_constraints
        keys, groups, terms = self._reach_terms(branches)
        if len(groups) < 2:
            return None                        # the same conditions for every thread
        # the answer depends on the variant only through trip-count constraints that
        # share atoms with the conditions: the same query otherwise (asked once)
        trips = _trip_constraints(self, z3)
        from ave_core.analysis.smt import _constants
        used = _constants(z3, terms)
        # (closed over the domain: `pid < nprog` ties a program id to a grid size a trip
        # count fixes)
        dom = [(_constants(z3, [d])) for d in sv._domain]
        grew = True
        while grew:
            grew = False
            for a in dom:
                if a & used and not a <= used:
                    used |= a
                    grew = True
        relevant = [c for c in trips if _constants(z3, [c]) & used]
        memo = sv.diverge_memo
        mkey = (id(op), self.loops, tuple((b.arm, b.rows.tobytes(), b.certain.tobytes())
                                          for b in branches),
                tuple(sorted(str(c) for c in relevant)))
        if mkey in memo:
            return memo[mkey]
        out = self._diverge_query(op, keys, groups, terms, branches, trips)
        memo[mkey] = out
        return out

    def _diverge_query(self, op: Op, keys: list, groups: list, terms: list, branches: tuple,
                       trips: list) -> tuple | None:
        sv = self.solver
        z3 = sv.z3
        with sv.timed():
            sv.queries += 1
            s = z3.Solver(ctx=sv.ctx)
            s.set("timeout", sv.timeout_ms)
            s.add(*sv._domain, *trips, z3.Or(*terms), z3.Or(*[z3.Not(t) for t in terms]))
            st = s.check()
            if st == z3.unknown:
                # (undecided: never a silent pass -- a barrier some thread may skip was
                # clean with a budget of 20 ms; a review helper)
                self._undecided(op, "whether every thread of the workgroup reaches this "
                                "barrier: the solver's budget ran out")
                return None
            if st != z3.sat:
                return None
            # the lowest thread that can reach it, then (with it reaching) the lowest that
            # can miss it: one small query per group in thread order (groups before the
            # chosen one cannot, so the model's lowest threads are these two)
            chosen = []
            for pick in (lambda t: t, z3.Not):
                for term in terms:
                    sv.queries += 1
                    s.push()
                    s.add(pick(term))
                    if s.check() == z3.sat:
                        chosen.append(pick(term))
                        break
                    s.pop()
        if len(chosen) == 2:
            # the canonical model of the two choices alone (the disjunctions over every
            # group made z3's optimization run out of budget with an unknown per thread)
            s = z3.Solver(ctx=sv.ctx)
            s.set("timeout", sv.timeout_ms)
            s.add(*sv._domain, *trips, *chosen)
            if s.check() != z3.sat:
                self._undecided(op, "whether every thread of the workgroup reaches this "
                                "barrier: the solver's budget ran out")
                return None
        m = sv.canonical_model(s, mentioned_only=True)
        took = {k: z3.is_true(m.eval(t, model_completion=True))
                for (k, _), t in zip(groups, terms)}
        reach = next((t for t, k in enumerate(keys) if took[k]), None)
        miss = next((t for t, k in enumerate(keys) if not took[k]), None)
        if reach is None or miss is None:
            return None
        model = sv.model_dict(m)
        # per-thread unknowns (comparisons of per-thread floats): those of the two threads
        other = tuple(f",thread={t}" for t in range(self.T) if t not in (reach, miss))
        model = {a: v for a, v in model.items() if not a.endswith(other)}
        # the branch that splits them: the innermost whose arm the two take differently
        split = next((b.op for b, x, y in zip(reversed(branches), reversed(keys[reach]),
                                              reversed(keys[miss])) if x != y),
                     branches[-1].op)
        return (op, self.loops, reach, miss, split, model)

    def op_ave_sched_barrier(self, op): pass

    def op_ave_assume(self, op):
        """A precondition of the kernel: part of the solver's domain from here on (every
        later query holds to it; variants whose trip counts it rules out are dropped by the
        analysis). A condition the analysis does not follow (floats) is not used (sound:
        nothing is assumed)."""
        if self.runtime_branches or not self.active.all():
            raise AnalysisLimit("`ave.assume` under a branch: a precondition of the kernel "
                                "holds on every path (state it at the top of the kernel)", op)
        if self.loops:
            # (a loop that runs zero times never reaches it: taken as the kernel's, it
            # hid the zero-trip variant's races; a review helper)
            raise AnalysisLimit("`ave.assume` inside a loop: a precondition of the kernel "
                                "holds on every launch (state it at the top of the kernel)",
                                op)
        if self._accessed:
            # (the checks before it were made without it: a witness broke the contract)
            raise AnalysisLimit("`ave.assume` after a memory access or check: state the "
                                "kernel's preconditions at its top, before its first "
                                "access", op)
        c = self.env.get(op.operands[0])
        if c is None:
            return
        rows = self.conds.rows(c, self.T)
        if not (rows == rows[0]).all():
            raise AnalysisLimit("`ave.assume` of a condition that differs across threads (a "
                                "precondition is over sizes, arguments and program ids)", op)
        truth = int(self.conds.truth(rows[:1])[0])
        if truth == 0:
            return
        if truth == 1:
            # (false where this variant fixes a loop bound: `KT >= 2` with KT = 1)
            raise VariantRuledOut("`ave.assume`: the condition is false here", op)
        sv = self.solver
        key = tuple(int(c) for c in self._cond_ids(rows[0]))
        if key not in sv.assumed:
            sv.assume(key)
            self._changed_assumptions()
            if sv.satisfiable([], [sv.z3.BoolVal(True, sv.ctx)]).status == "unsat":
                # (contradictory preconditions, with this variant's trip counts: every
                # query unsat, every check proved; the engine is dropped, and the next
                # variant starts from none)
                raise VariantRuledOut("`ave.assume`: no sizes satisfy the kernel's "
                                      "preconditions", op)

    def _changed_assumptions(self) -> None:
        """The preconditions in force changed: forget the answers decided under others."""
        self._excl_memo.clear()
        self._landing_memo.clear()
        for memo in ("_never_memo", "_grid_fit_memo", "_possible_memo"):
            # (the grid contract's answers too: decided under one trip count's
            # `ave.assume(KT * N >= 32)`, reused by the next variant's; a review helper)
            nm = getattr(self.bounds, memo, None)
            if nm is not None:
                nm.clear()

    def op_ave_reset(self, op):
        t: TileVal = self.env[op.operands[0]]
        coords = [c.reshape(-1) for c in np.indices(t.shape)]
        addr = self.shared_addresses(t, coords)
        byts = ((addr // self.G)[:, None] + np.arange(t.dtype.bytes // self.G)).reshape(-1)
        # (tags forgotten; the data is still there: a write of the same data after it is
        # no write/write race)
        b = Tags.bottom(len(byts), self.F)
        b.data = self.smem.data[byts].copy()
        self._smem_write(byts, b, written=False)

    def _holders(self, T: int, V: int) -> np.ndarray:
        """The thread of each (thread, register) of a fragment, ``(T * V,)``: ``t`` repeated
        ``V`` times (one array per shape, never mutated: the race tracker keys its
        per-access summaries on the arrays it is given)."""
        key = ("threads", T, V)
        out = self._tables.get(key)
        if out is None:
            out = self._tables[key] = np.repeat(np.arange(T), V)
        return out

    def op_ave_load(self, op):
        src: TileVal = self.env[op.operands[0]]
        lay = op.attrs["layout"]
        tab = self.table(lay)
        T, V, R = tab.shape
        coords = self.layout_coords(lay)
        threads = self._holders(T, V)
        n = T * V
        guard = self.eval_mask(op, coords, src, n, threads)
        tags = self.read_tags(src, coords, op, guard, threads)
        rec = self.record(op)
        if src.space == "shared":
            tags.via = tags.moved.copy()
        tags.moved[:] = rec
        ival = None
        if op.result.type.dtype.is_int and src.space == "global":
            ival = self._loaded_values(src, coords, op, self.conds.rows(guard, n)
                                       if op.attrs.get("masked") else None)
        elif op.result.type.dtype.is_int and op.result.type.dtype.name != "i1" and \
                not op.attrs.get("masked"):
            # (an index table staged in shared memory and loaded into registers: what its
            # bytes hold -- it was an unknown of any sign, a false AVE208; a review helper.
            # Not for a tile of data: INDEX_ELEMENTS)
            addr = self.shared_addresses(src, coords)
            if len(np.unique(addr)) <= INDEX_ELEMENTS:
                label = src.name or "index"
                # (by the element's coordinates: the (thread, value) position named sI[64]
                # for a 16-element tile; a review helper)
                name_of = lambda e: f"{label}[{', '.join(str(int(c[e])) for c in coords)}]"  # noqa: E731
                ival = self._shared_int_values(src, coords, op, name_of)
        # a mask (or 'other') over a scalar that differs across threads: the copies of an
        # element may differ (one thread's copy masked off, another's loaded)
        # global data: a tensor the kernel does not read back after writing it, or one it
        # has not written yet here (C += A B through global memory: the first load is
        # C's own data, the chain's start; the later ones continue the chain stored)
        out = FragVal(tags, V, ival, varies=bool(op.attrs.get("masked")) and
                      self._scalars_vary(op),
                      global_data=src.space == "global" and src.tensor is not None and
                      (src.tensor.name not in self.written_tensors or
                       not self._gversion.get(src.tensor.name, 0)))
        if self.global_chains and src.space == "global":
            self._take_global_chain(op, src, out, guard)
        # (read back after the kernel wrote the tensor, no chain stored there continued:
        # it may hold a partial sum -- an accumulator starting from it is not followed)
        out.readback = out.kcov is None and src.space == "global" and \
            src.tensor is not None and not out.global_data
        self.env[op.result] = out

    def op_ave_store(self, op):
        dst: TileVal = self.env[op.operands[0]]
        fr: FragVal = self.env[op.operands[1]]
        if dst.space == "global":
            # The global side of a store (its mask, bounds obligations, the destination's
            # tags) does not depend on the stored value: the epilogue of every trip-count
            # variant stores to the same elements under the same mask, so it is computed
            # once (see :meth:`_xv_entry`).
            entry = self._xv_entry(op, dst)

            def global_side() -> np.ndarray | None:
                lay = op.operands[1].type.layout
                if not hasattr(lay, "coords_table"):
                    return None
                tab = self.table(lay)
                T, V, R = tab.shape
                coords = self.layout_coords(lay)
                holders = self._holders(T, V)
                g = self.eval_mask(op, coords, dst, T * V, holders)
                held = np.repeat(self.active, V)
                self.bounds.access(op, dst, [c[held] for c in coords], g[held], holders[held])
                return g
            guard = self._xv_guard(op, entry, global_side)
            defer = self.defers_store(op)
            if self.pending_resets:
                accumulation.flush_resets(self, op, guard)
            if dst.tensor is not None and dst.tensor.tag_op is not None:
                self._check_store(op, dst, fr, guard, entry)
            self._global_written(dst)
            if defer:
                self._keep_global_chain(op, dst, fr, guard)
            elif self._stores_start(dst, fr):
                self._keep_global_start(op, dst, guard)
            return                                    # global writes are not tracked
        lay = op.operands[1].type.layout
        tab = self.table(lay)
        T, V, R = tab.shape
        coords = self.layout_coords(lay)
        act = np.repeat(self.active, V)
        tags = fr.tags.copy()
        tags.moved[:] = self.record(op)
        threads = self._holders(T, V)
        if not op.attrs.get("masked"):
            self.write_bytes(dst, [c[act] for c in coords], tags.take(act), op, False,
                             threads[act], varies=fr.varies)
            if fr.ival is not None and dst.dtype.is_int:
                self._keep_stored_ints(dst, [c[act] for c in coords], fr.ival, act)
            return
        # a masked store writes where its mask holds: nothing where it fails, and where
        # sizes decide, a write that may not happen (weak: old and new tags joined, the
        # bytes' other writers kept) -- it counted as writing every element (a missed
        # race with the writer it does not replace; a review helper)
        truth = self.conds.truth(self.conds.rows(
            self.eval_mask(op, coords, dst, T * V, threads), T * V))
        for sel, weak in ((act & (truth == 0), None), (act & (truth > 1), True)):
            if sel.any():
                self.write_bytes(dst, [c[sel] for c in coords], tags.take(sel), op, False,
                                 threads[sel], weak=weak, varies=fr.varies)

    def _check_into_tagged(self, op: Op, tags: Tags, dst: TileVal, coords: list,
                           thread: np.ndarray, guard: np.ndarray,
                           entry: dict | None = None) -> None:
        """A copy from shared memory into a tagged tensor: each element's tags must conform
        to the destination element's tag (see :meth:`_check_store`, also for ``entry``)."""
        n = len(thread)
        if self._xv_clean(op, entry, tags.code):
            return
        if entry is not None and "dst" in entry:
            dtags, held = entry["dst"]
        else:
            dtags = self.tensor_tags(dst.tensor, self.global_coords(dst, coords), n)
            dtags.cond = self.conds.rows(guard, n).copy()
            held = self.conds.truth(dtags.cond) != 1
            if entry is not None:
                entry["dst"] = (dtags, held)
        check = self.new_check(op, "store")
        reg = np.zeros(n, np.int64)
        X = {"tags": tags, "holder": thread, "reg": reg, "held": held, "shape": (n,)}
        Y = {"tags": dtags, "holder": thread, "reg": reg, "held": held, "shape": (n,)}
        self._pair(check, X, Y, None, None, op)
        self.checks.append(check)
        self._xv_keep_clean(entry, check, tags.code)

    def _check_store(self, op: Op, dst: TileVal, fr: FragVal,
                     guard: np.ndarray | None = None, entry: dict | None = None) -> None:
        """A value stored into a tagged tensor must carry tags that conform to the tag of
        the element it lands on (on the fields both have): C[m, n] must hold the product
        of A's row m and B's column n.

        ``entry``: the store's cross-variant memo (:meth:`_xv_entry`): the destination's
        tags are kept there, and a clean verdict with the stored tags' values; the same
        values stored again (the next variant's epilogue) get the same verdict and counts
        (a clean pairing depends on the compared values and the held elements only)."""
        lay = op.operands[1].type.layout
        if not hasattr(lay, "coords_table"):
            return
        tab = self.table(lay)
        T, V, R = tab.shape
        if self._xv_clean(op, entry, fr.tags.code):
            return
        n = T * V
        if entry is not None and "dst" in entry:
            dtags, held = entry["dst"]
        else:
            coords = self.layout_coords(lay)
            if guard is None:
                guard = self.eval_mask(op, coords, dst, n, self._holders(T, V))
            gc = self.global_coords(dst, coords)
            dtags = self.tensor_tags(dst.tensor, gc, n)
            dtags.cond = guard.copy()
            held = np.repeat(self.active, V) & (self.conds.truth(guard) != 1)
            if entry is not None:
                entry["dst"] = (dtags, held)
        check = self.new_check(op, "store")
        holder = self._holders(T, V)
        reg = np.tile(np.arange(V), T)
        X = {"tags": fr.tags, "holder": holder, "reg": reg, "held": held, "shape": (n,)}
        Y = {"tags": dtags, "holder": holder, "reg": reg, "held": held, "shape": (n,)}
        self._pair(check, X, Y, None, None, op)
        self.checks.append(check)
        self._xv_keep_clean(entry, check, fr.tags.code)

    # ------------------------------------------------------------------ cross-variant memo

    def _xv_entry(self, op: Op, *vals: Any) -> dict | None:
        """The memo entry of ``op`` for what it computes from ``vals`` and the values its
        regions (a mask) read from outside: keyed by the op it was unrolled from, its loop
        indices, the active threads and the *contents* of those values, so that the same
        op of another trip-count variant, on equal inputs, finds it. None when an input has
        no content key (e.g. a fragment). Entries keep the objects whose identity is part
        of a key alive (ids stay unique)."""
        keep: list = []
        try:
            parts = [id(getattr(op, "source", op)), tuple(op.attrs.get("loop_indices", ())),
                     self.active.tobytes(), self.in_branch]
            parts += [_fingerprint(v, keep, self.tag_ops) for v in vals]
            for reg in op.regions:
                inner = set(reg.args)
                for rop in reg.ops:
                    # arithmetic only (what a mask is): nothing else to replay
                    if rop.regions or not (rop.name.startswith(("arith.", "math."))
                                           or rop.name == "ave.yield"):
                        return None
                    for v in rop.operands:
                        if v not in inner:
                            parts.append(_fingerprint(self.env.get(v), keep, self.tag_ops))
                    inner.update(rop.results)
        except _NoFingerprint:
            return None
        key = tuple(parts)
        entry = self._xv.get(key)
        if entry is None:
            if len(self._xv) >= 256:
                self._xv.pop(next(iter(self._xv)))
            entry = self._xv[key] = {"keep": keep}
        return entry

    def _xv_guard(self, op: Op, entry: dict | None, compute: Any) -> Any:
        """The guard of a global access's elements: ``compute()`` (which evaluates the
        mask and records the bounds obligations), kept in ``entry``, or replayed from it."""
        if entry is not None and "guard" in entry:
            self._xv_replay(op, entry)
            return entry["guard"]
        mark = self._xv_mark()
        guard = compute()
        self._xv_record(entry, mark, guard=guard)
        return guard

    def _xv_clean(self, op: Op, entry: dict | None, code: np.ndarray) -> bool:
        """A store check of values equal to those of a clean verdict kept in ``entry``:
        the same verdict and counts, recorded; False when there is none to reuse."""
        if entry is None or "clean" not in entry:
            return False
        kept, compared, covered = entry["clean"]
        if not np.array_equal(kept, code):
            return False
        check = self.new_check(op, "store")
        check.compared, check.covered = compared, covered
        self.checks.append(check)
        return True

    def _xv_keep_clean(self, entry: dict | None, check: PairCheck, code: np.ndarray
                       ) -> None:
        """Keep a store check's verdict for reuse when it is clean on the values alone (no
        pair differed: clean for any guards; one that rested on the guards is not)."""
        if entry is not None and check.violation is None and check.unknown is None and \
                not check.consulted:
            entry["clean"] = (code.copy(), check.compared, check.covered)

    def _xv_mark(self) -> int:
        """Start recording an op's bounds obligations and the assumptions its mask states
        (all of them: one another op stated first in this variant may be missing in the
        next)."""
        self.bounds.mask_log = []
        self.bounds.contract_log = []
        return len(self.bounds.obligations)

    def _xv_record(self, entry: dict | None, mark: int, **results: Any) -> None:
        """Keep what an op computed, the bounds obligations it added and the assumptions
        its mask stated (in ``entry``; None: stop recording only)."""
        log, self.bounds.mask_log = self.bounds.mask_log, None
        clog, self.bounds.contract_log = self.bounds.contract_log, None
        if entry is None:
            return
        entry.update(results)
        entry["obligations"] = [ob[1:] for ob in self.bounds.obligations[mark:]]
        entry["assumptions"] = list(log or ())
        entry["contracts"] = list(clog or ())

    def _xv_replay(self, op: Op, entry: dict) -> None:
        """Add the bounds obligations (the same arrays: their fast-path verdicts are kept by
        the bounds checker), assumptions and grid contracts a memoized op added when it
        ran."""
        b = self.bounds
        for item in entry["assumptions"]:
            if item not in b.assumptions:
                b._push(b.assumptions, item)
        for item in entry.get("contracts", ()):
            b._state_contract(item)
        for ob in entry["obligations"]:
            b._push(b.obligations, (op,) + ob)

    # ------------------------------------------------------------------ fragments

    def _as_frag(self, x: Any, op: Op) -> FragVal:
        if isinstance(x, FragVal):
            return x
        V = 1
        for v in op.results:
            t = v.type
            if isinstance(t, FragmentType) and t.layout is not None:
                V = t.layout.num_values
        return FragVal(Tags.bottom(self.T * V, self.F), V)

    def _frag_elementwise(self, op: Op, xs: list, name: str) -> FragVal:
        frs = [x for x in xs if isinstance(x, FragVal)]
        V = frs[0].V if frs else 1
        if not frs:
            return self._as_frag(None, op)
        tags = agree([f.tags for f in frs], self.conds)
        ival = None
        if op.result.type.dtype.is_int and all(
                isinstance(x, FragVal) and x.ival is not None or isinstance(x, SymInt)
                for x in xs) and name in ("add", "sub", "mul", "floordiv", "mod", "min",
                                          "max"):
            # (min/max too: an index clamped with ave.maximum(ids - 1, 0) was of any sign,
            # a false AVE208; a review helper)
            vals = [self._int_values(x, V) for x in xs]
            ival = sym_binop(self.tab, name, vals[0], vals[1]) \
                if vals[0] is not None and vals[1] is not None else None
        rdt = op.result.type.dtype
        if ival is not None and getattr(rdt, "bits", 32) < 32 and rdt.is_int and \
                np.any(np.asarray(ival.key) != 0):
            # a narrow integer with a runtime part: wrapped as the GPU wraps it (an i8
            # table's 127 + 1 is -128)
            ival = self._narrow_unknown(op, ival, rdt)
        elif ival is not None and not _fits_dtype(ival, rdt):
            # (the value wrapped on the GPU: c * 2**31 is negative for odd c in i32, and
            # a where decided on the unwrapped value took the wrong side; a review helper)
            ival = None
        cond = scond = None
        if name == "cmp":
            iv = [x.ival if isinstance(x, FragVal) else
                  SymInt(np.repeat(x.key, V), np.repeat(x.conc, V)) if isinstance(x, SymInt)
                  and np.shape(x.key) == (self.T,) else None for x in xs]
            if op.attrs["pred"] in ("eq", "ne") and iv[0] is None and iv[1] is None:
                # conditions compared (`(r >= M) == (r < 0)`): `!=` is xor, `==` its
                # negation, per element (a select on them was no reset; a review helper)
                ea, eb = (self._element_cond(x, V, tags.n) for x in xs)
                if ea is not None and eb is not None:
                    r = self._bool_op("xor", ea, eb, op)
                    if r is not None and op.attrs["pred"] == "eq":
                        r = self._bool_op("xor", r, np.zeros(tags.n, np.int32), op)
                    if r is not None:
                        scond = self.conds.rows(r, tags.n)
            # (only concrete values within the operands' dtype: a runtime part may wrap)
            if iv[0] is not None and iv[1] is not None and not iv[0].key.any() and \
                    not iv[1].key.any() and all(
                        _fits_dtype(v, x.type.dtype) for v, x in zip(iv, op.operands)
                        if hasattr(x.type, "dtype")):
                cond = self.conds.rows(sym_compare(self.tab, self.conds, op.attrs["pred"],
                                                   iv[0], iv[1]), tags.n)
            elif iv[0] is not None and iv[1] is not None:
                scond = self.conds.rows(sym_compare(self.tab, self.conds, op.attrs["pred"],
                                                    iv[0], iv[1]), tags.n)
        elif name == "and" and all(isinstance(x, FragVal) and x.cond is not None for x in xs):
            cond = self.conds.conj_arrays(xs[0].cond, xs[1].cond)
        elif name in ("and", "or", "xor"):
            # (of conditions over sizes, per element: `(row < M) | (kt > 0)`, `~(row >= M)`
            # -- a select on them was no reset, and a correct kernel "never accumulates
            # k=32"; a review helper)
            ea, eb = (self._element_cond(x, V, tags.n) for x in xs)
            if ea is not None and eb is not None:
                r = self._bool_op(name, ea, eb, op)
                if r is not None:
                    scond = self.conds.rows(r, tags.n)
        out = FragVal(tags, V, ival, varies=any(f.varies for f in frs) or
                      self._scalars_vary(op), cond=cond, global_data=_global_data(frs))
        out.scond = scond
        return out

    def _scalars_vary(self, op: Op) -> bool:
        """A scalar operand of a fragment op differs across threads (see FragVal.varies),
        or one its regions (a mask) use from outside them."""
        if any(self._varies(v) for v in op.operands if not isinstance(v.type, FragmentType)):
            return True
        if not op.regions:
            return False
        outer = self._region_outer.get(op)
        if outer is None:
            # the scalars the regions use from outside them (by structure: kept per op)
            inside: set = set()
            used: list = []

            def walk(blocks: Any) -> None:
                for blk in blocks:
                    inside.update(blk.args)
                    for o in blk.ops:
                        inside.update(o.results)
                        used.extend(o.operands)
                        walk(o.regions)
            walk(op.regions)
            outer = self._region_outer[op] = tuple(
                v for v in used if v not in inside and not isinstance(v.type, FragmentType))
        return any(self._varies(v) for v in outer)

    def op_ave_full(self, op):
        V = op.attrs["layout"].num_values
        tags = Tags.bottom(self.T * V, self.F)
        dtype = op.result.type.dtype
        d = self.constant_datum(op.attrs.get("value"), dtype)
        if d is not None:
            # a constant: its bytes are its datum, in every element (a fill from a runtime
            # scalar stays computed: new data per store)
            tags.data = np.full(tags.n, d, np.int64)
        # an integer fill's values (an index fragment: a gather through ave.full(..., -1)
        # was taken for an index table's entries, >= 0 -- an out-of-bounds read went
        # unreported, and a constant index was an unknown in witnesses; a review helper)
        ival = None
        if dtype.is_int and dtype.name != "i1":
            if op.operands:
                ival = self._int_values(self.env.get(op.operands[0]), V)
            elif op.attrs.get("value") is not None:
                ival = SymInt.const(np.full(self.T * V, int(op.attrs["value"]), np.int64))
            if ival is not None and not _fits_dtype(ival, dtype):
                ival = None
        v = op.attrs.get("value")
        self.env[op.result] = FragVal(tags, V, ival, varies=bool(op.operands) and
                                      self._varies(op.operands[0]),
                                      zero=not op.operands and isinstance(v, (int, float))
                                      and not isinstance(v, bool) and v == 0)

    def op_ave_coord(self, op):
        tab = self.table(op.attrs["layout"])
        T, V, _ = tab.shape
        vals = tab[:, :, op.attrs["axis"]].reshape(-1)
        self.env[op.result] = FragVal(Tags.bottom(T * V, self.F), V, SymInt.const(vals))

    def op_ave_materialize(self, op):
        self.env[op.result] = self.env[op.operands[0]]

    op_ave_expand_dims = op_ave_materialize

    def op_ave_broadcast(self, op):
        x: FragVal = self.env[op.operands[0]]
        lay = op.operands[0].type.layout
        dst = op.result.type.layout
        if getattr(lay, "parent", None) == dst:
            self.env[op.result] = x
            return
        idx = broadcast_index(lay.parent, dst, op.attrs["keep"], op.result.type.shape)
        V2 = idx.shape[1]
        self.env[op.result] = FragVal(x.tags.take(idx.reshape(-1)), V2, varies=x.varies,
                                      global_data=x.global_data)

    def _dense_index(self, layout: Any, shape: tuple) -> np.ndarray:
        tab = self.table(layout)
        T, V, R = tab.shape
        return np.ravel_multi_index(tuple(tab[:, :, d].reshape(-1) for d in range(R)), shape)

    def _convert_index(self, src_layout: Any, dst_layout: Any, shape: tuple, V1: int
                       ) -> np.ndarray:
        """For every (thread, register) of ``dst_layout``: the flat (thread, register) of
        ``src_layout`` it takes its element from -- a register of the same thread when
        that thread holds the element (register-only conversions; its last such register),
        else the element's first holder."""
        key = ("convert", id(src_layout), id(dst_layout), tuple(shape), V1)
        hit = self._tables.get(key)
        if hit is not None and hit[0] is src_layout and hit[1] is dst_layout:
            return hit[2]
        idx = convert_index(self._dense_index(src_layout, shape),
                            self._dense_index(dst_layout, shape), self.T, int(np.prod(shape)))
        self._tables[key] = (src_layout, dst_layout, idx)
        return idx

    def op_ave_convert(self, op):
        x: FragVal = self.env[op.operands[0]]
        idx = self._convert_index(op.operands[0].type.layout, op.attrs["layout"],
                                  op.operands[0].type.shape, x.V)
        V2 = op.attrs["layout"].num_values
        out = FragVal(x.tags.take(idx), V2,
                      x.ival.take(idx) if x.ival is not None else None,
                      varies=x.varies, global_data=x.global_data)
        # (to its own layout: an MMA chain goes on through it, AVE206; zeros stay zeros)
        out.zero = x.zero
        pc = accumulation.passed_chain(self, op)
        if pc is not None:
            out.kcov, out.partial = pc
        self.env[op.result] = out

    def op_ave_reduce(self, op):
        x: FragVal = self.env[op.operands[0]]
        src_t = op.operands[0].type
        axis = op.attrs["axis"]
        tab = self.table(src_t.layout)
        T, V, R = tab.shape
        keep = [d for d in range(R) if d != axis]
        kshape = tuple(src_t.shape[d] for d in keep)
        key = np.ravel_multi_index(tuple(tab[:, :, d].reshape(-1) for d in keep), kshape) \
            if keep else np.zeros(T * V, np.int64)
        t = x.tags
        n = int(np.prod(kshape)) if kshape else 1
        F = self.F
        # a field survives for a reduced element iff every contributing element has it
        # with one value (not ⊤): all equal to the group's first element, and present
        code = t.code
        first = np.zeros(n, np.int64)
        first[key[::-1]] = np.arange(len(key))[::-1]
        ok = (code > 0) & (code == code.take(first[key], axis=0))
        agree_f = np.empty((n, F), bool)
        for f in range(F):
            agree_f[:, f] = np.bincount(key, weights=~ok[:, f], minlength=n) == 0
        out = Tags(np.where(agree_f[key], code, ABSENT), t.cond, t.src, t.moved, t.via)
        self.env[op.result] = FragVal(out, V, varies=x.varies, global_data=x.global_data)

    # ------------------------------------------------------------------ MMA

    def op_ave_mma(self, op):
        a: FragVal = self.env[op.operands[0]]
        b: FragVal = self.env[op.operands[1]]
        c: FragVal = self.env[op.operands[2]]
        tiled = op.attrs["tiled"]
        BM, BN, BK = tiled.tile
        at = tiled.atom.threads
        check = self.new_check(op, "mma")
        A = self._warps_dense(a, tiled.a, at, (BM, BK), "a")
        B = self._warps_dense(b, tiled.b, at, (BK, BN), "b")
        self._pair_warps(check, A, B, None, op)
        # a chain starts at an untagged (⊥) accumulator (ave.zeros) or one of global data
        # alone (D = C + A B from a loaded C), or such a start scaled (o_lo * alpha before
        # the first P V); an accumulator with other history that is not an MMA chain
        # (computed from tagged data, joined, staged in shared memory) cannot be followed
        prev = c.kcov if c.kcov is not None else (
            False if (c.tags.code.any() and not c.global_data) or c.readback else None)
        kcov = False
        if prev is False and c.ended_by is not None:
            accumulation.lost_at_select(self, op, c.ended_by)
        elif c.readback and c.kcov is None:
            accumulation.lost_at_readback(self, op)
        if prev is not False:
            contrib = accumulation.contribution(self, op, A, B)
            kept = accumulation.under_branches(self, contrib)
            if kept is None and contrib is not None:
                accumulation.lost_chain(self, op, None, None, at=op)
            if kept and self._arms:
                arms = tuple(self._arms)
                kept = [replace(k, arms=arms) for k in kept]
            kcov = accumulation.chain(prev, kept, op)
        # the result takes A's fields constant along k (row fields) and B's fields constant
        # along k (column fields), per warp: each warp multiplies its own registers
        # A's fields B does not have (row fields) and B's fields A does not have (column
        # fields) must be constant along k; if they are not, the MMA mixed rows (columns):
        # ⊤, not ⊥. Fields both have (k, and e.g. head) are checked by the pairing and are
        # consumed (k) or kept where constant.
        fa, fb = A["fields"], B["fields"]
        row = self._constant_along_w(A, axis=1, top_fields=fa & ~fb)      # (W * BM)
        col = self._constant_along_w(B, axis=0, top_fields=fb & ~fa)      # (W * BN)
        tc = self.table(tiled.c)
        T, Vc, _ = tc.shape
        w = (np.arange(T) // at)[:, None]
        ri = self._kept_index(A, 0, w, tc[:, :, 0], BM)
        ci = self._kept_index(B, 1, w, tc[:, :, 1], BN)
        new = self._mma_product_tags(tiled, row, col, ri, ci)
        out = agree([c.tags, new], self.conds) if c.tags.code.any() else new
        if out is not new:
            # C[m, n] += A[m, :] B[:, n]: an accumulator element holding another row or
            # column than its products is a conflict, ⊤ (agree dropped the field: an
            # accumulator kept across two N-tiles, scaled -- no MMA chain to follow --
            # stored the second tile's C[m, 64 + n] with B's column n in it, and the
            # store's check proved it, the field no longer compared; a review helper).
            # A field only one side has is kept, as agree does.
            code = _join_code(c.tags.code, new.code)
            out = Tags(code, out.cond, out.src, out.moved, out.via, out.data)
        out.moved[:] = -1
        act = np.repeat(self.active, Vc)
        if not act.all():
            keep = c.tags.copy()
            keep.put(act, out.take(act))
            out = keep
        self.checks.append(check)
        # (a chain holding part of a sum stays so: accumulation.summed_chain)
        partial = isinstance(kcov, list) and isinstance(prev, list) and c.partial
        self.env[op.result] = FragVal(out, c.V, kcov=kcov, partial=partial,
                                      varies=a.varies or b.varies or c.varies)

    def _warps_dense(self, x: FragVal, layout: Any, at: int, shape: tuple, role: str) -> dict:
        """For every warp at once: dense tags of the elements of the ``shape`` operand the
        warp's threads hold (first holder), flattened as ``(warp, row, col)``, with the
        holder thread and register of each slot.

        ``role`` "a" (an A operand, ``(M, K)``): when every warp holds the same number of
        rows, only those rows are kept (``"rows"``: ``(W, Mw)`` tile rows, ascending); "b"
        (``(K, N)``): the same for columns (``"cols"``). The reduction index ``k`` is never
        cut, so A's and B's k-slots stay aligned. ``"shape"`` is the kept shape."""
        V = x.V
        all_active = bool(self.active.all())
        ck = (id(x), id(layout), shape, at, role)
        if all_active:
            hit = self._dense_cache.get(ck)
            if hit is not None and hit[0] is x:
                return hit[1]
        key = (id(layout), shape, at, role)
        plan = self._pick_cache.get(key)
        if plan is None:
            tab = self.table(layout)
            T = tab.shape[0]
            W = T // at
            n = shape[0] * shape[1]
            lin = tab[:, :, 0] * shape[1] + tab[:, :, 1]
            flat = np.arange(T * V).reshape(T, V)
            pick = np.full((W, n), -1, np.int64)
            for w in range(W):
                pick[w, lin[w * at:(w + 1) * at].reshape(-1)[::-1]] = \
                    flat[w * at:(w + 1) * at].reshape(-1)[::-1]
            R, C = shape
            p3 = pick.reshape(W, R, C)
            rows = cols = None
            kept = shape
            if role == "a":
                hr = (p3 >= 0).any(axis=2)                               # (W, R)
                cnt = hr.sum(axis=1)
                if (cnt == cnt[0]).all() and 0 < cnt[0] < R:
                    rows = np.nonzero(hr)[1].reshape(W, int(cnt[0]))
                    p3 = np.take_along_axis(p3, rows[:, :, None], axis=1)
                    kept = (int(cnt[0]), C)
            elif role == "b":
                hc = (p3 >= 0).any(axis=1)                               # (W, C)
                cnt = hc.sum(axis=1)
                if (cnt == cnt[0]).all() and 0 < cnt[0] < C:
                    cols = np.nonzero(hc)[1].reshape(W, int(cnt[0]))
                    p3 = np.take_along_axis(p3, cols[:, None, :], axis=2)
                    kept = (R, int(cnt[0]))
            plan = self._pick_cache[key] = (p3.reshape(W, -1), kept, rows, cols)
        pick, kept, rows, cols = plan
        # the gather index, the held slots and their holders: the plan's when every thread
        # is active (kept with it, per register count: they depend on nothing else; never
        # mutated, like tag arrays)
        derived = self._pick_cache.get((key, V)) if all_active else None
        if derived is None:
            held = pick >= 0
            if not all_active:
                held &= self.active[np.where(held, pick // V, 0)]
            pk = np.where(held, pick, 0).reshape(-1)
            h = held.reshape(-1)
            derived = (pk, h, bool(h.all()), np.where(h, pk // V, -1), np.where(h, pk % V, -1))
            if all_active:
                self._pick_cache[(key, V)] = derived
        pk, h, h_all, holder, reg = derived
        tags = x.tags.take(pk)
        if not h_all:
            tags.code = np.where(h[:, None], tags.code, ABSENT)
        out = {"tags": tags, "holder": holder, "reg": reg,
               "held": h, "shape": kept, "W": pick.shape[0], "rows": rows, "cols": cols,
               "fields": _fields_present(tags.code)}     # unheld slots are ABSENT
        if all_active:
            # an operand is often checked by an assert_conform and then multiplied: the
            # dense form is computed once (the entry keeps x alive, so its id stays unique)
            if len(self._dense_cache) >= 8:
                self._dense_cache.pop(next(iter(self._dense_cache)))
            self._dense_cache[ck] = (x, out)
        return out

    def _mma_product_tags(self, tiled: Any, row: Tags, col: Tags, ri: np.ndarray,
                          ci: np.ndarray) -> Tags:
        """Tags of an MMA's products, C[m, n] = agree(row m of A, column n of B), over the
        C fragment. The k-steps of one MMA chain usually meet the same row and column tags
        (Q's rows and K's keys for every k-slice of the head dimension): then the previous
        k-step's products are reused (their ``moved`` is overwritten by the caller)."""
        cur = (row.code, row.cond, row.src, col.code, col.cond, col.src, ri, ci)
        recent = self._mma_last.setdefault(id(tiled), [])
        for last in recent:
            if last[0] is tiled and all(x is y or np.array_equal(x, y)
                                        for x, y in zip(last[1], cur)):
                # the same rows and columns (every k-step of a chain, and every k-tile of a
                # pipeline: A's rows and B's columns again): the products' fields, guards
                # and origins again; only where the operands last moved (``via``: another
                # copy each k-tile) is A's own (was part of the key: recomputed every
                # iteration)
                p, pvia = last[2], last[3]
                via = p.via if row.via is pvia or np.array_equal(row.via, pvia) \
                    else rows_take(row.via, ri)
                return Tags(p.code, p.cond, p.src, np.full(p.n, -1, np.int32), via)
        new = agree([row.take(ri), col.take(ci)], self.conds)
        # the last two: two chains of one tiled MMA interleaved (O's two column halves in
        # flash attention: the same V columns every iteration)
        recent.insert(0, (tiled, cur, new, row.via))
        del recent[2:]
        return new

    def _kept_index(self, D: dict, dim: int, w: np.ndarray, coord: np.ndarray, full: int
                    ) -> np.ndarray:
        """Index into ``(W * kept)`` of warp ``w``'s tile coordinate ``coord`` along ``dim``
        of a per-warp dense operand (see :meth:`_warps_dense`)."""
        kept = D["rows"] if dim == 0 else D["cols"]
        if kept is None:
            return (w * full + coord).reshape(-1)
        # the same plan (kept rows/columns of a layout) and C layout: the same index
        key = (id(kept), coord.shape, int(coord.sum()), full)
        memo = self._kept_memo
        hit = memo.get(key)
        if hit is not None and hit[0] is kept and np.array_equal(hit[1], coord):
            return hit[2]
        W, n = kept.shape
        pos = np.full((W, full), -1, np.int64)
        pos[np.arange(W)[:, None], kept] = np.arange(n)[None, :]
        wb = np.broadcast_to(w, coord.shape)
        p = pos[wb, coord]
        if (p < 0).any():
            raise AnalysisLimit("an MMA result element whose warp holds no operand row or "
                                "column for it")
        out = (wb * n + p).reshape(-1)
        if len(memo) >= 64:
            memo.pop(next(iter(memo)))
        memo[key] = (kept, coord.copy(), out)
        return out

    def _constant_along_w(self, D: dict, axis: int, top_fields: np.ndarray | None = None
                          ) -> Tags:
        t: Tags = D["tags"]
        W = D["W"]
        R, C = D["shape"]
        F = self.F
        code = t.code.reshape(W, R, C, F)
        held = D["held"].reshape(W, R, C)
        all_held = bool(held.all())
        # ok: every held element of the line holds the first held one's value, a value
        # (not ⊥ or ⊤: codes > 0); a line with nothing held is ok
        if axis == 1:       # per (w, r), along c
            i0 = np.argmax(held, axis=2)                                   # (W, R)
            wi, ri = np.arange(W)[:, None], np.arange(R)[None, :]
            base = t.take(((wi * R + ri) * C + i0).reshape(-1))
            c0 = base.code.reshape(W, R, 1, F)
            same = code == c0
            if not all_held:
                same |= ~held[..., None]
            ok = _all_axis2(same)
            some = held.any(axis=2)                                        # (W, R)
        else:               # per (w, c), along r
            i0 = np.argmax(held, axis=1)                                   # (W, C)
            wi, ci = np.arange(W)[:, None], np.arange(C)[None, :]
            base = t.take(((wi * R + i0) * C + ci).reshape(-1))
            c0 = base.code.reshape(W, 1, C, F)
            same = code == c0
            if not all_held:
                same |= ~held[..., None]
            ok = same.all(axis=1)
            some = held.any(axis=1)                                        # (W, C)
        ok = ok.reshape(W * (R if axis == 1 else C), F)
        ok &= (base.code > 0) | ~some.reshape(-1, 1)
        if top_fields is None:
            top_fields = np.zeros(F, bool)
        # constant: kept; varying, in a field the other operand lacks: ⊤ (the MMA mixed
        # rows or columns); else dropped
        conflict = ~ok & top_fields[None, :] & (base.code != ABSENT)
        base.code = np.where(conflict, TOP, np.where(ok, base.code, ABSENT))
        return base

    def _pair_warps(self, check: PairCheck, X: dict, Y: dict, fields: tuple | None,
                    op: Op) -> None:
        """The contraction check ``X[w, m, k]`` vs ``Y[w, k, n]`` for every warp at once:
        O(rows + cols) per (warp, k) (see :meth:`_pair`), explicit pairs only where a
        (warp, k) can violate."""
        F = self.F
        tx, ty = X["tags"], Y["tags"]
        W = X["W"]
        R, K = X["shape"]
        _, C = Y["shape"]
        fsel = np.ones(F, bool) if fields is None else np.array(
            [f in fields for f in self.fields])
        fx, fy = X["fields"], Y["fields"]
        common = fsel & fx & fy
        # the same operands and compared fields again (an MMA after its assert_conform):
        # the counts and the verdict are known
        whole = X.setdefault("pair_whole", {})
        wkey = (id(Y), common.tobytes())
        hit = whole.get(wkey)
        if hit is not None and hit[0] is Y:
            check.compared += hit[1]
            check.covered += hit[2]
            return
        # The same compared values again (the next iteration's k-slices of Q against K's:
        # the k fields are the same, the key fields are not compared): a clean verdict and
        # its counts depend on the held slots and the compared fields' values only
        ckey = None
        if check.violation is None and check.unknown is None and common.any():
            sel = np.nonzero(common)[0]
            # keyed by the shapes, the compared fields and a sample of their rows; an entry
            # is the same values when the held slots and the compared columns are equal
            # (checked: hashing them whole cost more than the checks they saved)
            ckey = (W, R, K, C, common.tobytes(), tx.code[::61].take(sel, axis=1).tobytes(),
                    ty.code[::61].take(sel, axis=1).tobytes())
            hit = self._pair_memo_get(ckey, X["held"], Y["held"], tx.code, ty.code, sel)
            if hit is not None:
                check.compared += hit[0]
                check.covered += hit[1]
                whole[wkey] = (Y, hit[0], hit[1])
                return
        hx = X["held"].reshape(W, R, K)
        hy = Y["held"].reshape(W, K, C)
        compared = int((hx.sum(axis=1) * hy.sum(axis=2)).sum())
        check.compared += compared
        if not common.any():
            whole[wkey] = (Y, compared, 0)
            return
        code_x = tx.code.reshape(W, R, K, F)
        code_y = ty.code.reshape(W, K, C, F)
        px_all = code_x != ABSENT
        py_all = code_y != ABSENT
        cx = hx & all_last(px_all[..., common])
        cy = hy & all_last(py_all[..., common])
        covered = int((cx.sum(axis=1) * cy.sum(axis=2)).sum())
        check.covered += covered
        if check.violation is not None or check.unknown is not None:
            return
        big = np.iinfo(np.int64).max
        bad = np.zeros((W, K), bool)
        # per field, the (warp, k) slots that can violate: the same operands are often
        # checked twice (an assert_conform, then the MMA's own pairing check)
        memo = X.setdefault("pair_memo", {})
        for f in np.nonzero(common)[0]:
            hit = memo.get((id(Y), int(f)))
            if hit is not None and hit[0] is Y:
                bad |= hit[1]
                continue
            px = px_all[..., f] & hx
            py = py_all[..., f] & hy
            vx, vy = code_x[..., f], code_y[..., f]
            # one value along the row of x and the column of y, the same, not ⊤ (TOP = -1
            # is below every value)
            xmin, xmax = np.where(px, vx, big).min(1), np.where(px, vx, -big).max(1)
            ymin, ymax = np.where(py, vy, big).min(2), np.where(py, vy, -big).max(2)
            same = (xmin == xmax) & (ymin == ymax) & (xmin == ymin) & (xmin > 0)
            bad_f = px.any(axis=1) & py.any(axis=2) & ~same
            memo[(id(Y), int(f))] = (Y, bad_f)
            bad |= bad_f
        if not bad.any():
            whole[wkey] = (Y, compared, covered)      # nothing can violate: a clean verdict
            if ckey is not None:
                bucket = self._pair_memo.get(ckey)
                if bucket is None:
                    if len(self._pair_memo) >= 64:
                        self._pair_memo.pop(next(iter(self._pair_memo)))
                    bucket = self._pair_memo[ckey] = []
                bucket.append((X["held"], Y["held"], tx.code.take(sel, axis=1),
                               ty.code.take(sel, axis=1), compared, covered))
            return
        self._find_in_slots(check, X, Y, hx, hy, bad, common, op)

    def _pair_memo_get(self, ckey: tuple, hx: np.ndarray, hy: np.ndarray, cx: np.ndarray,
                       cy: np.ndarray, sel: np.ndarray) -> tuple | None:
        """(compared, covered) of a clean contraction verdict on the same values: an entry
        of ``ckey``'s bucket whose held slots equal ``hx``/``hy`` and whose compared
        columns equal columns ``sel`` of ``cx``/``cy`` (the verdict and its counts depend
        on nothing else); None when there is none."""
        for ex, ey, vx, vy, compared, covered in self._pair_memo.get(ckey, ()):
            if (ex is hx or np.array_equal(ex, hx)) and (ey is hy or np.array_equal(ey, hy)) \
                    and np.array_equal(vx, cx.take(sel, axis=1)) \
                    and np.array_equal(vy, cy.take(sel, axis=1)):
                return compared, covered
        return None

    #: checks whose later violations at a location are never reported (the analysis keeps
    #: the first witness of an assertion, an MMA or a store into a tagged tensor)
    _FIRST_ONLY = frozenset({"mma", "assert_conform", "store"})

    def _violated_before(self, check: PairCheck, X: dict, Y: dict, cand: tuple) -> bool:
        """The check's location has a violation already (an earlier execution or trip-count
        variant): the analysis reports the first one, so deciding ``cand`` (see
        :meth:`_candidates`) with z3 again is wasted -- in a broken kernel, every k-step and
        iteration searched again. Skipped only when those queries would make no new z3
        atom (the atoms of the candidates' values and guards are made already): witness
        models list every atom the solver knew at their query, so a skipped query that
        would have made one would change a later witness. The pairs may still differ:
        ``consulted`` (so a store's verdict is not kept as clean for the next variant:
        see :meth:`_xv_keep_clean`)."""
        if check.kind not in self._FIRST_ONLY or check.location not in self.known_violations:
            return False
        tx, ty = X["tags"], Y["tags"]
        ix, iy, vx, vy, topv, diffk, diffc = cand
        sv = self.solver
        keys = set(code_key(vx[diffk]).tolist()) | set(code_key(vy[diffk]).tolist())
        if not all(sv.knows(k) for k in keys):
            return False
        ids = set(tx.cond[ix].reshape(-1).tolist()) | set(ty.cond[iy].reshape(-1).tolist())
        if not all(sv.knows_cond(c) for c in ids):
            return False
        check.consulted = True
        return True

    def _find_in_slots(self, check: PairCheck, X: dict, Y: dict, hx: np.ndarray,
                       hy: np.ndarray, bad: np.ndarray, common: np.ndarray, op: Op) -> None:
        """:meth:`_find` over the explicit pairs of the (warp, k) slots ``bad`` (``hx``:
        ``(W, R, K)`` and ``hy``: ``(W, K, C)`` held masks): the first :attr:`_FIND_LIMIT`
        candidates, then (see :meth:`_decide`) every one."""
        cand, cut = self._slot_candidates(X, Y, hx, hy, bad, common, self._FIND_LIMIT)
        if cand is not None:
            check.consulted = True
            self._decide(check, X, Y, cand, op, cut=cut, more=lambda: self._slot_candidates(
                X, Y, hx, hy, bad, common, None)[0])

    def _slot_candidates(self, X: dict, Y: dict, hx: np.ndarray, hy: np.ndarray,
                         bad: np.ndarray, common: np.ndarray, limit: int | None) -> tuple:
        """The candidate pairs of the (warp, k) slots ``bad`` in :meth:`_candidates`'
        order, the first ``limit`` (None: all), and whether some were left out.

        Warp by warp: a pair's x element is held by a thread of its own warp, so every
        candidate of warp w comes before every candidate of warp w + 1 in _find's order
        (holder threads first), and the first _FIND_LIMIT candidates are found without
        expanding the later warps (a wrong operand made every slot of every warp a
        candidate: 0.9 s of pairs)."""
        W, R, K = hx.shape
        C = hy.shape[2]
        bw, bk = np.nonzero(bad)
        parts = []
        got = 0
        # (one past the limit: whether any is left out)
        cap = (1 << 62) if limit is None else limit + 1

        def take(ix: np.ndarray, iy: np.ndarray) -> bool:
            nonlocal got
            cand = self._candidates(X, Y, ix, iy, common, cap - got)
            if cand is not None:
                parts.append(cand)
                got += len(cand[0])
            return got >= cap
        full = False
        for w in np.unique(bw):
            ks = bk[bw == w]
            npairs = int(hx[w][:, ks].sum(axis=0) @ hy[w][ks, :].sum(axis=1))
            if npairs <= self._PAIRS_AT_ONCE:
                m = hx[w][:, ks].T[:, :, None] & hy[w][ks, :][:, None, :]  # (slots, R, C)
                si, r, c = np.nonzero(m)
                k = ks[si]
                if take((w * R + r) * K + k, (w * K + k) * C + c):
                    full = True
                    break
                continue
            # many pairs: holder thread by holder thread (the order's first key), so that
            # the first _FIND_LIMIT candidates come from the first threads' pairs only
            si, r = np.nonzero(hx[w][:, ks].T)                          # x elements
            k = ks[si]
            ixs = (w * R + r) * K + k
            holder = X["holder"][ixs]
            for t in np.unique(holder):
                sel = holder == t
                kt, ixt = k[sel], ixs[sel]
                m = hy[w][kt, :]                                         # (n_t, C)
                i, c = np.nonzero(m)
                if take(ixt[i], (w * K + kt[i]) * C + c):
                    full = True
                    break
            if full:
                break
        if not parts:
            return None, False
        cand = tuple(np.concatenate(x) for x in zip(*parts))
        if limit is None or got <= limit:
            return cand, False
        return tuple(a[:limit] for a in cand), True

    # ------------------------------------------------------------------ pairing checks

    def _pair(self, check: PairCheck, X: dict, Y: dict, contract: tuple | None,
              fields: tuple | None, op: Op) -> None:
        """Compare paired elements of two dense operands (see assert_conform).

        Without ``contract`` element c of x pairs with element c of y. With
        ``contract=(i, j)`` (2-D operands), x's element (.., c_i, ..) pairs with every element
        of y whose coordinate j is c_i. Per contracted index, the check is O(rows + cols):
        when the x values of a compared field are all equal along the other axis, and so are
        the y values, one comparison decides every pair; only a violating index is expanded
        pair by pair, to find the minimal witness (lowest threads).
        """
        F = self.F
        tx, ty = X["tags"], Y["tags"]
        fsel = np.ones(F, bool) if fields is None else np.array(
            [f in fields for f in self.fields])
        fx, fy = _fields_held(tx.code, X["held"]), _fields_held(ty.code, Y["held"])
        common = fsel & fx & fy
        if contract is None:
            ix = np.nonzero(X["held"] & Y["held"])[0]
            iy = ix
            check.compared += len(ix)
            cov = all_last((tx.code.take(ix, axis=0)[:, common] != ABSENT) &
                           (ty.code.take(iy, axis=0)[:, common] != ABSENT)) \
                if common.any() else np.zeros(len(ix), bool)
            check.covered += int(cov.sum())
            if check.violation is None and check.unknown is None and common.any():
                self._find(check, X, Y, ix, iy, common, op)
            return
        i, j = contract
        sx, sy = X["shape"], Y["shape"]
        ox, kx = (sx[0], sx[1]) if i == 1 else (sx[1], sx[0])
        oy = sy[1] if j == 0 else sy[0]
        # index grids: xi[a, k], yi[k, b] -> flat indices into the dense operands
        a_ = np.arange(ox)[:, None]
        k_ = np.arange(kx)[None, :]
        xi = (a_ * sx[1] + k_) if i == 1 else (k_ * sx[1] + a_)
        kk = np.arange(kx)[:, None]
        b_ = np.arange(oy)[None, :]
        yi = (kk * sy[1] + b_) if j == 0 else (b_ * sy[1] + kk)
        hx = X["held"][xi]                     # (ox, kx)
        hy = Y["held"][yi]                     # (kx, oy)
        nx = hx.sum(axis=0)
        ny = hy.sum(axis=1)
        check.compared += int((nx * ny).sum())
        if not common.any():
            return
        vx_all = tx.code.take(xi, axis=0)                    # (ox, kx, F)
        vy_all = ty.code.take(yi, axis=0)                    # (kx, oy, F)
        cx = hx & all_last(vx_all[:, :, common] != ABSENT)
        cy = hy & all_last(vy_all[:, :, common] != ABSENT)
        check.covered += int((cx.sum(axis=0) * cy.sum(axis=1)).sum())
        if check.violation is not None or check.unknown is not None:
            return
        big = np.iinfo(np.int64).max
        bad_k = np.zeros(kx, bool)
        for f in np.nonzero(common)[0]:
            vx, vy = vx_all[:, :, f], vy_all[:, :, f]
            px = (vx != ABSENT) & hx
            py = (vy != ABSENT) & hy
            # one value along x's other axis and along y's, the same, not ⊤ (TOP = -1 is
            # below every value)
            xmin, xmax = np.where(px, vx, big).min(axis=0), np.where(px, vx, -big).max(axis=0)
            ymin, ymax = np.where(py, vy, big).min(axis=1), np.where(py, vy, -big).max(axis=1)
            same = (xmin == xmax) & (ymin == ymax) & (xmin == ymin) & (xmin > 0)
            bad_k |= px.any(axis=0) & py.any(axis=1) & ~same
        for k in np.nonzero(bad_k)[0]:
            mx = np.nonzero(hx[:, k])[0]
            my = np.nonzero(hy[k, :])[0]
            ix = np.repeat(xi[mx, k], len(my))
            iy = np.tile(yi[k, my], len(mx))
            self._find(check, X, Y, ix, iy, common, op)
            if check.violation is not None or check.unknown is not None:
                return

    #: how many candidate pairs (in order) a pairing check decides, at most
    _FIND_LIMIT = 64
    #: a warp's pairs expanded at once up to this many; past it, holder thread by thread
    _PAIRS_AT_ONCE = 8192

    def _find(self, check: PairCheck, X: dict, Y: dict, ix: np.ndarray, iy: np.ndarray,
              common: np.ndarray, op: Op) -> None:
        """Among explicit pairs, find the minimal one whose tags can differ (SMT if needed)."""
        # (one past the limit: whether any is left out)
        cand = self._candidates(X, Y, ix, iy, common, self._FIND_LIMIT + 1)
        if cand is None:
            return
        check.consulted = True
        cut = len(cand[0]) > self._FIND_LIMIT
        self._decide(check, X, Y, tuple(a[:self._FIND_LIMIT] for a in cand), op, cut=cut,
                     more=lambda: self._candidates(X, Y, ix, iy, common, 1 << 62))

    def _candidates(self, X: dict, Y: dict, ix: np.ndarray, iy: np.ndarray,
                    common: np.ndarray, limit: int) -> tuple | None:
        """The first ``limit`` pairs (by holder thread of x, of y, then slot) whose tags may
        differ: ``(ix, iy, vx, vy, topv, diffk, diffc)`` rows, or None when none may."""
        tx, ty = X["tags"], Y["tags"]
        vx, vy = rows_take(tx.code, ix), rows_take(ty.code, iy)
        both = (vx != ABSENT) & (vy != ABSENT) & common[None, :]
        topv = both & ((vx == TOP) | (vy == TOP))
        neq = both & ~topv & (vx != vy)
        if not neq.any() and not topv.any():
            return None
        diffk = neq & ((vx >> _SHIFT) != (vy >> _SHIFT))      # symbolic parts differ
        diffc = neq & ~diffk                                  # concrete parts differ
        cand = any_last(topv | diffk | diffc)
        if not cand.any():
            return None
        hx = X["holder"][ix]
        hy = Y["holder"][iy]
        cidx = np.nonzero(cand)[0]
        order = np.lexsort((iy[cidx], ix[cidx], hy[cidx], hx[cidx]))
        sel = cidx[order][:limit]
        return ix[sel], iy[sel], vx[sel], vy[sel], topv[sel], diffk[sel], diffc[sel]

    #: distinct z3 queries one pairing check may ask over all its candidate pairs (past
    #: it: unknown)
    _ALL_QUERIES = 256

    def _decide(self, check: PairCheck, X: dict, Y: dict, cand: tuple, op: Op,
                cut: bool = False, more: Any = None) -> None:
        """Decide candidate pairs in order (see :meth:`_candidates`): the first that can
        differ under its guards (z3) is the violation.

        ``cut``: more pairs whose tags differ were left out of ``cand`` (the first
        :attr:`_FIND_LIMIT`). When none of these can differ, ``more()`` gives every
        candidate, and each distinct query among them is decided (at most
        :attr:`_ALL_QUERIES`; past it the check is ``unknown``). Deciding the first 64
        alone proved a check whose first pairs a mask rules out and whose later ones
        differ (a missed violation; a review helper).

        Under branches on runtime values where every thread of the op has the same
        condition, the pairs are asked under it (the op runs only there: an MMA under ``if
        kt >= 3:`` whose B is one tile ahead only for kt < 3 was reported at kt = 0). A
        condition that differs across threads adds none: a warp's MMA reads every lane's
        registers, also those of the lanes that skip it (a review helper)."""
        if self._violated_before(check, X, Y, cand):
            return
        guard = self._uniform_branch_guard()
        seen: dict = {}
        self._decide_under(check, X, Y, cand, op, guard, seen)
        if check.violation is not None or check.unknown is not None or not cut \
                or more is None:
            return
        full = more()
        if full is not None:
            self._decide_under(check, X, Y, full, op, guard, seen, self._ALL_QUERIES)

    def _uniform_branch_guard(self) -> np.ndarray | None:
        """The conditions of the branches on runtime values around the op as one guard row
        ``(1, width)``, when every active thread's is the same (see :meth:`_decide`);
        None outside such branches or when they differ across threads."""
        if not self.runtime_branches or not all(b.uniform for b in self.runtime_branches):
            return None
        act = np.nonzero(self.active)[0]
        if not len(act):
            return None
        rows = self.branch_guard(act)
        if rows is None or not (rows == rows[0]).all():
            return None
        return rows[:1]

    def _decide_under(self, check: PairCheck, X: dict, Y: dict, cand: tuple, op: Op,
                      guard: np.ndarray | None, seen: dict, cap: int | None = None) -> None:
        """:meth:`_decide`'s queries, each pair's guards conjoined with ``guard`` (a guard
        row, or None). ``seen``: the queries found impossible already (asked once);
        ``cap``: at most that many distinct queries, then the check is unknown."""
        tx, ty = X["tags"], Y["tags"]
        ix, iy, vx, vy, topv, diffk, diffc = cand
        # the loops around the op run this iteration: a pairing that differs only for
        # sizes under which it does not run is no violation (a start known at run time,
        # ``range(KT - 1, -1, -1)``: a witness with K = 1 at the second trip, where KT = 1
        # runs one; a review helper). Not the variant's exact trip counts: the op's checks
        # stand for every later variant that shares it
        from ave_core.analysis.accumulation import running_trip_constraints
        extra = running_trip_constraints(self, self.solver.z3)
        for p in range(len(ix)):
            for f in np.nonzero(topv[p] | diffk[p] | diffc[p])[0]:
                row = self.conds.conj_arrays(tx.cond[ix[p]][None, :], ty.cond[iy[p]][None, :])
                if guard is not None:
                    row = self.conds.conj_arrays(row, guard)
                g = self.conds.members(row[0])
                if 1 in g:
                    continue
                key = (int(vx[p, f]), int(vy[p, f]), tuple(g)) if diffk[p, f] else \
                    (tuple(g),)
                if key in seen:
                    continue
                if cap is not None and len(seen) >= cap:
                    check.unknown = (f"more than {cap} distinct pairings of differently "
                                     "tagged elements to decide (the check's query limit)")
                    return
                if diffk[p, f]:
                    res = self.solver.differ(*unpack(vx[p, f]), *unpack(vy[p, f]), g,
                                             extra)
                else:
                    res = self.solver.satisfiable(g, extra)
                if res.status == "unsat":
                    seen[key] = True
                    continue
                if res.status == "unknown":
                    check.unknown = res.reason
                    return
                why = "top" if topv[p, f] else "differ"
                a, b, ff = int(ix[p]), int(iy[p]), int(f)
                w = self._witness(op, X, Y, a, b, ff, res.model, why)
                if res.refine is not None:
                    w["__refine"] = self._refiner(op, X, Y, a, b, ff, res.refine, why)
                check.violation = w
                if check.kind in self._FIRST_ONLY:
                    self.known_violations.add(check.location)
                return

    def _refiner(self, op: Op, X: dict, Y: dict, ix: int, iy: int, f: int, refine: Any,
                 why: str) -> Any:
        """The witness again with the query's canonical model (see ``PairCheck``): called by
        the analysis for the one witness it keeps, before the next variant runs."""
        loops = self.loops

        def run() -> dict:
            saved = self.loops
            self.loops = loops
            try:
                return self._witness(op, X, Y, ix, iy, f, refine(), why)
            finally:
                self.loops = saved
        return run

    def _witness(self, op: Op, X: dict, Y: dict, ix: int, iy: int, f: int, model: dict,
                 why: str) -> dict:
        tx, ty = X["tags"], Y["tags"]

        def val(t: Tags, i: int, ff: int) -> Any:
            c = int(t.code[i, ff])
            if c == ABSENT:
                return None
            if c == TOP:
                return "⊤"
            return self._concretize(*unpack(c), model)

        def fields_of(t: Tags, i: int) -> dict:
            return {name: val(t, i, ff) for ff, name in enumerate(self.fields)
                    if t.code[i, ff] != ABSENT}

        hx, hy = int(X["holder"][ix]), int(Y["holder"][iy])
        threads = []
        for h in (hx, hy):
            if h >= 0 and h not in [x["thread"] for x in threads]:
                threads.append({"thread": h, "warp": h // self.ws, "lane": h % self.ws})
        cx, cy = _slot(X, ix), _slot(Y, iy)
        points = []
        for t, i, label in ((tx, ix, "x"), (ty, iy, "y")):
            s = int(t.src[i])
            if s >= 0:
                top = self.tag_ops[s]
                points.append({"file": top.loc.file, "range": top.loc.range.to_json(),
                               "label": f"{label}: tag introduced ({self.tag_names[s]})"})
            for m, what in ((int(t.via[i]), "written to shared memory by"),
                            (int(t.moved[i]), "last moved by")):
                if m < 0:
                    continue
                rec = self.records[m]
                loops = ", ".join(f"{k}={v}" for k, v in self.shown(rec.loops, rec.op, model))
                name = "ave.ldmatrix" if rec.op.attrs.get("ldmatrix") else rec.op.name
                points.append({"file": rec.op.loc.file, "range": rec.op.loc.range.to_json(),
                               "label": f"{label}: {what} {name}"
                                        + (f" ({loops})" if loops else "")})
        block = [int(model.get(f"program_id({a})", 0)) for a in range(3)]
        sx, sy = int(tx.src[ix]), int(ty.src[iy])
        return {
            "block": block,
            "threads": threads,
            "loop_indices": dict(self.shown(self.loops, op, model)),
            "field": self.fields[f],
            "why": why,
            "operands": {
                "x": {"tensor": self.tag_names[sx] if sx >= 0 else None,
                      "slot": [int(c) for c in cx], "thread": hx,
                      "register": int(X["reg"][ix]) if "reg" in X else None,
                      "tags": fields_of(tx, ix)},
                "y": {"tensor": self.tag_names[sy] if sy >= 0 else None,
                      "slot": [int(c) for c in cy], "thread": hy,
                      "register": int(Y["reg"][iy]) if "reg" in Y else None,
                      "tags": fields_of(ty, iy)},
            },
            "program_points": points,
            "model": {k: v for k, v in model.items() if not k.startswith("__")},
            **self._iterations_entry(model, self.loops, *(
                self.records[int(t.via[i])].loops for t, i in ((tx, ix), (ty, iy))
                if int(t.via[i]) >= 0), *(
                self.records[int(t.moved[i])].loops for t, i in ((tx, ix), (ty, iy))
                if int(t.moved[i]) >= 0)),
        }

    def _iterations_entry(self, model: dict | None, *loop_lists: Any) -> dict:
        """``{"loop_iterations": ...}`` for a witness naming iteration numbers of
        runtime-start loops (:meth:`loop_iterations`), else ``{}``."""
        its = self.loop_iterations(model, *loop_lists)
        return {"loop_iterations": its} if its else {}

    def _concretize(self, key: int, conc: int, model: dict) -> int | str:
        if key == 0:
            return int(conc)
        total = int(conc)
        for a, c in self.tab.lins[key]:
            v = self._atom_value(a, model)
            if v is None:
                return self.tab.format(key, conc)
            total += c * v
        return total

    def _cond_value(self, cids: tuple, model: dict) -> bool | None:
        """Whether the conjunction of conditions ``cids`` holds under a witness' model
        (None: one depends on something the model does not fix)."""
        for cid in cids:
            cid = int(cid)
            if cid == 1:
                return False
            if cid == 0:
                continue
            for c in self.conds.sets[cid] or ():
                e = self._concretize(c.key, c.conc, model)
                if not isinstance(e, int):
                    return None
                if not {"lt": e < 0, "le": e <= 0, "gt": e > 0, "ge": e >= 0, "eq": e == 0,
                        "ne": e != 0}[c.pred]:
                    return False
        return True

    def _atom_value(self, a: int, model: dict) -> int | None:
        """The value of atom ``a`` under a witness' model: an unknown from the model, an
        opaque term (``h // GROUP``) evaluated from its operands as the solver defines it
        (see :mod:`~ave_core.analysis.smt`), None when it depends on something unknown."""
        at = self.tab.atoms[a]
        if at.kind == "op":
            name, (ka, ca), (kb, cb) = at.args
            x, y = self._concretize(ka, ca, model), self._concretize(kb, cb, model)
            if not isinstance(x, int) or not isinstance(y, int):
                return None
            return _eval_opaque(name, x, y)
        if at.kind == "select":
            # the arm its condition takes under the model (both arms the same: that value;
            # a condition that depends on something unknown: None) -- a masked index load
            # was shown as its name, "tok=the masked load of Ids[0]"
            (ka, ca), (kb, cb) = at.args[1:3]
            x, y = self._concretize(ka, ca, model), self._concretize(kb, cb, model)
            if isinstance(x, int) and x == y:
                return x
            holds = self._cond_value(at.args[0], model)
            if holds is None:
                return None
            v = x if holds else y
            return v if isinstance(v, int) else None
        name = self.tab.names[a]
        if name not in model:
            if at.kind != "pid":
                return None
            model[name] = 0          # the witness' block: lowest program ids
        return int(model[name])

    # ------------------------------------------------------------------ assertions

    def _dense_frag(self, x: Any, vtype: Any) -> dict:
        if isinstance(x, FragVal):
            lay = vtype.layout
            tab = self.table(lay)
            T, V, R = tab.shape
            shape = vtype.shape
            lin = np.ravel_multi_index(tuple(tab[:, :, d].reshape(-1) for d in range(R)), shape)
            n = int(np.prod(shape))
            pick = np.full(n, -1, np.int64)
            order = np.arange(len(lin))[::-1]
            pick[lin[order]] = order
            held = pick >= 0
            tags = x.tags.take(np.where(held, pick, 0))
            return {"tags": tags, "holder": np.where(held, pick // V, -1),
                    "reg": np.where(held, pick % V, -1), "held": held, "shape": shape}
        raise AnalysisLimit("assert_conform on tiles is not supported by the analysis yet")

    def op_ave_assert_conform(self, op):
        x, y = (self.env[v] for v in op.operands)
        check = self.new_check(op, "assert_conform")
        tx, ty = op.operands[0].type, op.operands[1].type
        contract = op.attrs.get("contract")
        fields = op.attrs.get("fields")
        lx, ly = getattr(tx, "layout", None), getattr(ty, "layout", None)
        tiled = next((t for t in self.tileds if t.a == lx and t.b == ly), None) \
            if lx is not None and ly is not None and contract == (1, 0) else None
        if tiled is not None and contract == (1, 0):
            at = tiled.atom.threads
            X = self._warps_dense(x, lx, at, tx.shape, "a")
            Y = self._warps_dense(y, ly, at, ty.shape, "b")
            self._pair_warps(check, X, Y, fields, op)
        else:
            X = self._dense_frag(x, tx)
            Y = self._dense_frag(y, ty)
            self._pair(check, X, Y, contract, fields, op)
        self.checks.append(check)

    def op_ave_assert_disjoint(self, op):
        x, y = (self.env[v] for v in op.operands)
        check = self.new_check(op, "assert_disjoint")
        if x.space != "shared" or y.space != "shared":
            check.unknown = "assert_disjoint of global tiles is not modelled"
            self.checks.append(check)
            return
        # a pure function of the two tiles (their bytes): disjoint tiles stay disjoint in
        # every iteration and variant that names them again
        kept: list = []                     # the layouts keyed by identity, kept alive
        try:
            dkey = (_fingerprint(x, kept, self.tag_ops), _fingerprint(y, kept, self.tag_ops))
        except _NoFingerprint:
            dkey = None
        if dkey is not None and dkey in self._disjoint_memo:
            check.compared = check.covered = 1
            self.checks.append(check)
            return
        cx = [c.reshape(-1) for c in np.indices(x.shape)]
        cy = [c.reshape(-1) for c in np.indices(y.shape)]
        ax = self.shared_addresses(x, cx)
        ay = self.shared_addresses(y, cy)
        bx = (ax[:, None] + np.arange(x.dtype.bytes)).reshape(-1)
        by = (ay[:, None] + np.arange(y.dtype.bytes)).reshape(-1)
        # bytes of y that x also covers (a byte map over the shared-memory window: sorted
        # distinct overlap bytes, as np.intersect1d would give, without its sort)
        hit = np.zeros(int(max(bx.max(), by.max())) + 1, bool)
        hit[bx] = True
        hx = hit[by]
        common = np.unique(by[hx]) if hx.any() else by[:0]
        check.compared = 1
        check.covered = 1
        if common.size:
            byte = int(common[0])
            i = int(np.nonzero(bx == byte)[0][0]) // x.dtype.bytes
            j = int(np.nonzero(by == byte)[0][0]) // y.dtype.bytes
            # (the loops named by value with the block's sizes, in the analysis' collect)
            check.violation = {
                "block": [0, 0, 0], "threads": [],
                "loop_indices": dict(shown_loops(self.loops, op)),
                "__loops": (self.loops, op),
                "byte": byte, "overlap_bytes": int(common.size),
                "coordinates": {"x": [int(c[i]) for c in cx], "y": [int(c[j]) for c in cy]},
                "program_points": [], "tags": {},
            }
        elif dkey is not None:
            self._disjoint_memo[dkey] = kept
        self.checks.append(check)

    # ------------------------------------------------------------------ control flow

    def op_scf_if(self, op):
        c0 = self.env.get(op.operands[0])
        if isinstance(c0, FragVal):
            # a predicate fragment of one value per thread (`if ave.min(alpha, axis=0) <
            # 1.0:`): its element's condition, or an unknown per thread (it crashed the
            # analysis: AVE900; a review helper)
            c0 = c0.cond if c0.V == 1 and c0.cond is not None else np.array(
                [self._free_cond(op, "if", t) for t in range(self.T)], np.int32)
        c = self.conds.truth(self.conds.rows(c0 if c0 is not None else 0, self.T))
        then_m = self.active & (c == 0)
        else_m = self.active & (c == 1)
        sym = self.active & (c > 1)
        outs = []
        saved = self.active
        runtime = int(bool(sym.any()))
        # A barrier in one arm may not run: it does not end the race epoch (the arms run
        # one after the other on one race state, so letting an else-arm barrier end it
        # would close the epoch of the then-arm's accesses: a missed race, found by a
        # review helper). When both arms *begin* with a barrier (only arithmetic before
        # it), every path passes one before any access: it is the barrier before the
        # branch, and ends the epoch there (the arms' own barriers then end nothing more).
        rows = crows = None
        fork = uniform = single = False
        if runtime:
            crows = self.conds.rows(c0, self.T)
            r = crows[sym]
            rows = r[0] if (r == r[0]).all() and then_m.sum() == 0 else None
            # Arms that touch shared memory and issue no asynchronous copies (their commit
            # groups are one state) run each from the state before the branch -- with its
            # own journal, rolled back after it -- and the two are joined after it: the
            # shared-memory tags always (a byte one path does not write keeps its old tags
            # on that path; in one arm the other's writes are not there), and the race
            # state when every thread takes the same arm (one condition, the same for
            # all: exclusive paths -- no race between accesses of different arms, and a
            # barrier inside an arm ends the epoch on its path). Under a condition that
            # differs across threads both arms run at once, by different threads: one
            # race state for both.
            uniform = rows is not None and not else_m.any()
            tags_fork = _forkable(op)
            fork = uniform and tags_fork
            if uniform:
                # One arm only: the same condition as an enclosing branch's decides it
                # (`if K > 64:` inside `if K > 64:`), or no size allows the other (`if K >
                # 0:`: sizes are >= 1; z3 under the sizes' domain only -- the same answer
                # in every trip-count variant). The arm left is a single path: as a forked
                # arm (strong writes, its barriers end the epoch), with nothing to join (an
                # impossible path merged in made the other arm's refill ⊤)
                taken = next((b.arm for b in self.runtime_branches
                              if b.cond_row is not None and np.array_equal(b.cond_row, rows)),
                             None)
                if taken is None and (tags_fork or _checks_in(op)):
                    # (also arms with an assertion, an MMA or a copy: an impossible arm's
                    # were reported -- `if K == 0:` with sizes >= 1, or `if K < 32:` inside
                    # `if K > 64:`; a review helper. Not arms of arithmetic only, whose
                    # query would cost time for nothing to report)
                    taken = self._arm_possible(rows)
                if taken is not None:
                    if taken == 0:
                        then_m = then_m | sym
                    else:
                        else_m = else_m | sym
                    sym = sym & False
                    single = True
        else:
            tags_fork = False
        # commit_async / wait_async in the arms of a branch on a runtime value
        first_group = next((o for o in _region_ops(op) if o.name in _GROUP_OPS), None) \
            if runtime else None
        # Arms the sizes leave undecided run one after the other on one state: they must
        # leave the same groups in flight on both paths -- else a wait after the branch
        # retires other copies on each path, which one sequence of groups cannot follow:
        # AVE205 at the first such op (a prefetch whose commit is inside its ``if (kt +
        # STAGES - 1) * BK < K:`` was proved; a review helper). Arms that do the same run
        # each from the groups before the branch (group_fork below).
        group_fork = first_group is not None and uniform and not single and not tags_fork
        if group_fork and not self._group_paths_alike(op):
            raise AnalysisLimit(
                f"`{first_group.name}` in a branch on a runtime value that the sizes leave "
                "undecided, and the branch's arms leave different asynchronous-copy groups "
                "in flight (commit and wait outside the branch, or the same in both arms: a "
                "commit with no copy is an empty group)", first_group)
        if runtime and not fork and not single and self.active.all() and all(
                _leading_barrier(reg) for reg in op.regions):
            self.races.barrier()
        if single:
            fork, tags_fork = True, False
        outer = self.journal
        e0 = self.races.epoch
        arms: list = []
        # group_fork: each arm from the groups before the branch, the copies of both in
        # flight after it -- run in turn they counted two commits, and a later wait
        # retired a group the path taken still has in flight (a review helper). The
        # else-arm starts from what the then-arm left of the copies from before the branch
        # (the same ones retire on both paths: landing them again raced with themselves),
        # with the commit counts from before it.
        if group_fork and self.open_group:
            raise AnalysisLimit(
                "copies issued before a branch on a runtime value that the sizes leave "
                "undecided, and committed or waited for in its arms: the analysis cannot "
                "follow them on both paths (commit before the branch)", op)
        c0 = self.commits.copy() if group_fork else None
        g_then = None
        # (a condition that differs across threads: waits alike in both arms are waited by
        # every thread, whichever arm it takes)
        alike = first_group is not None and not uniform and self._group_paths_alike(op)
        for ri, (mask, region) in enumerate(((then_m | sym, op.regions[0]),
                                             (else_m | sym, op.regions[1]))):
            if not mask.any():
                outs.append(None)
                continue
            if group_fork and ri == 1 and outs and outs[0] is not None:
                g_then = (self.open_group, self.inflight, self.commits)
                self.open_group = []
                self.inflight = [e for e in (_rows_before(e, c0) for e in self.inflight)
                                 if e is not None]
                self.commits = c0.copy()
            self.active = mask
            self.in_branch += 1
            self._ifs.append(op)
            self._arms.append((id(op), ri))
            if runtime:
                self.runtime_branches.append(RuntimeBranch(
                    op, ri, crows, then_m if ri == 0 else else_m,
                    rows if ri == 0 else self._else_guard(rows),
                    fork, uniform, tags_fork or single, rows if uniform else None,
                    not single, alike))
            jl: list = []
            if tags_fork:
                self.journal = jl
                self._writer_over = None
            overlay = tags_fork and not fork and bool(arms)
            if overlay:
                self._other_arm.append((arms[0][0], arms[0][1].code, arms[0][1].data))
            try:
                outs.append(self.exec_block(region) or [])
            finally:
                self.active = saved
                self.in_branch -= 1
                self._ifs.pop()
                self._arms.pop()
                if runtime:
                    self.runtime_branches.pop()
                if overlay:
                    self._other_arm.pop()
                if tags_fork:
                    self.journal = outer
                    arms.append(self._fork_arm(jl, fork))
        if g_then is not None:
            # what is left from before the branch: the then-arm's (the same on both paths);
            # the copies each arm committed or issued: both
            news = [e for e in (_rows_after(e, c0) for e in self.inflight) if e is not None]
            self.inflight = list(g_then[1]) + news
            self.open_group = list(g_then[0]) + list(self.open_group)
            self.commits = np.maximum(self.commits, g_then[2])
        if tags_fork and len(arms) == 2:
            self._fork_join(arms, fork, e0,
                            cond=(op, self._cond_ids(rows)) if uniform and rows is not None
                            else None)
        for i, r in enumerate(op.results):
            tv = outs[0][i] if outs[0] is not None else None
            ev = outs[1][i] if outs[1] is not None else None
            if tv is None or ev is None:
                self.env[r] = tv if ev is None else ev
            elif isinstance(tv, FragVal) and isinstance(ev, FragVal):
                # (id(op), 0): the then-arm's RuntimeBranch.token
                if runtime:
                    kcov = accumulation.join_chains(tv, ev, (id(op), 0))
                else:
                    # arms on different threads (a condition on thread or warp ids)
                    kcov = accumulation.join_split_chains(
                        tv, ev, id(op), not _splits_warps(then_m, else_m, self.ws))
                left = accumulation.ended_in_one_arm(tv, ev) \
                    if kcov is False and runtime else None
                if left is not None:
                    # (one arm consumed the chain -- a mask applied to a score tile -- and
                    # the other left it: it ends here, the joined value is no chain)
                    accumulation.end_chain(self, left, op)
                    kcov = None
                if kcov is False:
                    accumulation.lost_chain(self, op, tv, ev)
                jt = join(tv.tags, ev.tags, self.conds)
                if runtime and uniform and rows is not None:
                    # (the paths' guards, as for shared memory: a select in one arm that
                    # guards the tags it keeps -- flash attention's score mask -- made the
                    # join drop both arms' guards, the copy mask `key < S_KV` too)
                    self._path_guards(jt, tv.tags, ev.tags, self._cond_ids(rows))
                self.env[r] = FragVal(jt, tv.V, kcov=kcov,
                                      varies=tv.varies or ev.varies or
                                      self._varies(op.operands[0]),
                                      global_data=_global_data([tv, ev]),
                                      # (partial where both arms hold part of a sum
                                      # only: one arm's whole chain is checked whole --
                                      # `t = acc + other` in one arm left the other's
                                      # incomplete acc unchecked; a review helper)
                                      partial=isinstance(kcov, list) and
                                      (tv.partial and ev.partial))
            elif _same_sym(tv, ev):
                self.env[r] = tv
            else:
                self.env[r] = self._select(op, r, tv, ev, crows, else_m, sym)
        if op.results:
            # an untracked result (a float) differs across threads when the threads may
            # take different arms, or when an arm's value does
            split = (int(then_m.any()) + int(else_m.any()) + int(sym.any()) > 1) or (
                runtime and not uniform)
            for i, r in enumerate(op.results):
                if self.env.get(r) is not None and not isinstance(self.env[r], np.ndarray):
                    continue
                ys = [y.operands[i] for y in (_yield_of(reg) for reg in op.regions)
                      if y is not None and i < len(y.operands)]
                if split or any(self._varies(v) for v in ys):
                    self._varying.add(r)

    def _select(self, op: Op, r: Value, tv: Any, ev: Any, crows: np.ndarray | None,
                else_m: np.ndarray, sym: np.ndarray) -> Any:
        """The integer a branch's arms assign differently (``k0 = ...`` in both arms):
        per thread, the then-arm's value where the condition holds for certain, the
        else-arm's where it fails for certain, and where it depends on runtime values a
        ``select`` term (``If(condition, a, b)`` in z3) -- so ``A[:, k0:k0 + BK]`` stays
        an access the analysis follows. None (not followed) for non-integers or more than
        64 distinct (condition, a, b) triples."""
        if not (isinstance(tv, SymInt) and isinstance(ev, SymInt)) or \
                tv.key.shape != (self.T,) or ev.key.shape != (self.T,):
            return None
        key = np.where(else_m, ev.key, tv.key).astype(tv.key.dtype)
        conc = np.where(else_m, ev.conc, tv.conc).astype(np.int64)
        diff = sym & ((tv.key != ev.key) | (tv.conc != ev.conc))
        if diff.any():
            groups: dict[tuple, list[int]] = {}
            for t in np.nonzero(diff)[0].tolist():
                cids = self._cond_ids(crows[t])
                groups.setdefault((cids, int(tv.key[t]), int(tv.conc[t]), int(ev.key[t]),
                                   int(ev.conc[t])), []).append(t)
            if len(groups) > 64:
                return None
            label = f"{r.name or 'value'}@{op.loc.range.start.line + 1}" + "".join(
                f",{k}={v}" for k, v in self.loops)
            for (cids, ka, ca, kb, cb), ts in groups.items():
                k = self.tab.atom(Atom("select", (cids, (ka, ca), (kb, cb), label)))
                key[ts] = k
                conc[ts] = 0
        return SymInt(key, conc)

    def op_scf_for(self, op):
        raise AnalysisLimit("a loop survived unrolling", op)


def _all_axis2(x: np.ndarray) -> np.ndarray:
    """``x.all(axis=2)`` of a 4-D bool array with a short last axis: the axis is halved
    while its length is even (contiguous blocks AND-ed) -- numpy's reduction over a middle
    axis with a short inner one is slow ((4, 32, 16, 6): 9 us vs 27 us)."""
    n = x.shape[2]
    while n > 1 and n % 2 == 0:
        n //= 2
        x = x[:, :, :n] & x[:, :, n:]
    return x.all(axis=2)


def _fields_present(code: np.ndarray) -> np.ndarray:
    """(F,) bool: the fields some element carries. The rows are OR-ed in 32 blocks first
    (one contiguous reduction), then the few rows left per field: 3x faster than a scan
    per column (8192 x 6 int64: 9 us vs 26 us; ``any(axis=0)``: 94 us)."""
    n, F = code.shape
    if F and n >= 256 and n % 32 == 0 and code.flags.c_contiguous:
        code = np.bitwise_or.reduce(code.reshape(32, -1), axis=0).reshape(-1, F)
    return np.array([code[:, f].any() for f in range(F)], bool)


def _fields_held(code: np.ndarray, held: np.ndarray) -> np.ndarray:
    """(F,) bool: the fields some held element carries (ABSENT is 0)."""
    if held.all():
        return _fields_present(code)
    if not held.any():
        return np.zeros(code.shape[1], bool)
    if held.shape != code.shape[:1]:
        return code[held].any(axis=0)
    return code.compress(held, axis=0).any(axis=0)


def _slot(D: dict, i: int) -> tuple[int, ...]:
    """The operand-tile coordinates of slot ``i`` of a dense operand (per-warp dense
    operands hold one, possibly row- or column-cut, tile per warp)."""
    n = int(np.prod(D["shape"]))
    w, c = divmod(int(i), n)
    crd = [int(x) for x in np.unravel_index(c, D["shape"])]
    if D.get("rows") is not None:
        crd[0] = int(D["rows"][w, crd[0]])
    if D.get("cols") is not None:
        crd[1] = int(D["cols"][w, crd[1]])
    return tuple(crd)


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _eval_opaque(name: str, x: int, y: int) -> int | None:
    """An opaque integer operation on concrete operands, with the solver's definition:
    floor division and modulo (a zero divisor divides by 1, as the interpreter and the
    concrete path do: x // 0 = x, x % 0 = 0), bitwise ops on 32-bit two's complement,
    arithmetic right shift."""
    if name == "floordiv":
        return x if y == 0 else x // y
    if name == "mod":
        return 0 if y == 0 else x % y
    if name == "mul":
        return x * y
    if name == "min":
        return min(x, y)
    if name == "max":
        return max(x, y)
    ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
    if name == "and":
        return _i32(ux & uy)
    if name == "or":
        return _i32(ux | uy)
    if name == "xor":
        return _i32(ux ^ uy)
    if name == "shl":
        return _i32(ux << uy) if uy < 32 else 0
    if name == "shr":
        # (arithmetic, as the solver's bvashr and the GPU's shr.s32)
        sx = _i32(ux)
        return sx >> uy if uy < 32 else (-1 if sx < 0 else 0)
    return None


_RACE_OPS = frozenset({"ave.load", "ave.store", "ave.copy", "ave.barrier"})
_ASYNC_OPS = frozenset({"ave.copy_async", "ave.commit_async", "ave.wait_async"})
_GROUP_OPS = frozenset({"ave.commit_async", "ave.wait_async"})


def _lookup(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``values`` in the ascending array ``keys`` (clamped) and whether each
    is there."""
    if len(keys) == 0:
        return np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    pos = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
    return pos, keys[pos] == values


def _distinct(parts: list, n: int) -> np.ndarray:
    """The distinct values (ascending) of index arrays into ``range(n)`` (a mark per index:
    faster than ``np.unique`` for the few thousand indices of a tile)."""
    if not parts:
        return np.zeros(0, np.int64)
    mark = np.zeros(n, bool)
    for p in parts:
        mark[p] = True
    return np.flatnonzero(mark)


def _yield_of(region: Any) -> Op | None:
    ops = region.ops
    return ops[-1] if ops and ops[-1].name in ("scf.yield", "ave.yield") else None


def _exclusive(a: tuple, b: tuple) -> bool:
    """Two clauses of branch arms (:meth:`Engine._landing_condition`) cannot both hold:
    they take different arms of one branch."""
    arms = {bid: arm for _, arm, bid in a}
    return any(bid in arms and arms[bid] != arm for _, arm, bid in b)


def _simplify(clauses: frozenset) -> frozenset:
    """A disjunction of clauses with each pair that differs only in the arm of one
    branch replaced by their common rest (``c and x or c and not x`` is ``c``), until
    none is left; () among them: true."""
    cur = set(clauses)
    changed = True
    while changed and () not in cur:
        changed = False
        for a in sorted(cur, key=repr):
            for k, (ids, arm, bid) in enumerate(a):
                other = a[:k] + ((ids, 1 - arm, bid),) + a[k + 1:]
                if other in cur:
                    cur -= {a, other}
                    cur.add(a[:k] + a[k + 1:])
                    changed = True
                    break
            if changed:
                break
    return frozenset(cur)


def _plan_rows(plan: tuple, sel: np.ndarray) -> tuple:
    """An asynchronous copy's plan (:meth:`Engine.write_bytes`) for the rows ``sel``."""
    byts, t, thr, issued, weak, keep, when = plan
    i = np.nonzero(sel)[0]
    return byts[i], t.take(i), thr[i] if thr is not None else None, issued, weak, keep, when


def _plan_active(plan: tuple, act: np.ndarray) -> np.ndarray:
    """Per row of a plan: its thread is in ``act`` (a plan without threads: all of them)."""
    thr = plan[2]
    return act[thr] if thr is not None else np.full(len(plan[0]), bool(act.all()))


def _rows_before(entry: tuple, c0: np.ndarray) -> tuple | None:
    """The rows of an in-flight ``(plan, group numbers)`` committed before the counts
    ``c0`` (per thread), or None."""
    plan, seq = entry
    thr = plan[2]
    sel = seq < (c0[thr] if thr is not None else int(c0.max()))
    return _entry_rows(entry, sel)


def _rows_after(entry: tuple, c0: np.ndarray) -> tuple | None:
    plan, seq = entry
    thr = plan[2]
    sel = seq >= (c0[thr] if thr is not None else int(c0.max()))
    return _entry_rows(entry, sel)


def _entry_rows(entry: tuple, sel: np.ndarray) -> tuple | None:
    """An in-flight ``(plan, group numbers)`` for the rows ``sel`` (None: no row)."""
    if sel.all():
        return entry
    if not sel.any():
        return None
    return _plan_rows(entry[0], sel), entry[1][sel]


def _splits_warps(then_m: np.ndarray, else_m: np.ndarray, ws: int) -> bool:
    """Some warp has threads in both arms of a branch on thread ids."""
    n = len(then_m) // ws * ws
    t = then_m[:n].reshape(-1, ws).any(axis=1)
    e = else_m[:n].reshape(-1, ws).any(axis=1)
    return bool((t & e).any())


def _group_effect(ops: list, pending: int) -> tuple | None:
    """What ``ops`` (an arm, run after ``pending`` committed groups are in flight) do to
    the asynchronous-copy groups: ``(groups from before retired, new groups in flight)``;
    None when it depends on a nested branch whose arms differ."""
    old, new = pending, 0
    for o in ops:
        if o.name == "ave.commit_async":
            new += 1
        elif o.name == "ave.wait_async":
            n = o.attrs.get("n", 0)
            drop = max(old + new - n, 0)
            take = min(drop, old)
            old, new = old - take, new - (drop - take)
        elif o.name == "scf.if" and o.regions:
            # a nested branch: both its arms must do the same (from the groups in flight
            # here); then its effect applies
            inner = [_group_effect(r.ops, old + new) for r in o.regions]
            if inner[0] is None or inner[0] != inner[1]:
                return None
            retired, added = inner[0]
            take = min(retired, old)
            old, new = old - take, new - (retired - take) + added
    return (pending - old, new)


def _region_ops(op: Op):
    for reg in op.regions:
        for o in reg.ops:
            yield o
            if o.regions:
                yield from _region_ops(o)


def _forkable(op: Op) -> bool:
    """An ``scf.if`` whose arms touch shared memory (or hold a barrier) and issue no
    asynchronous copies (see ``Engine.op_scf_if``)."""
    names = {o.name for o in _region_ops(op)}
    return bool(names & _RACE_OPS) and not names & _ASYNC_OPS


#: ops whose execution can be reported (a check, a memory access, an MMA)
_CHECKED_OPS = frozenset({"ave.assert_conform", "ave.assert_disjoint", "ave.mma", "ave.load",
                          "ave.commit_async",
                          "ave.store", "ave.copy", "ave.copy_async", "ave.wait_async",
                          "ave.barrier"})


#: Most distinct elements of a shared integer tile an ``ave.load`` follows as index values
#: (an index table's rows): a larger tile is data (an i8 GEMM's), and following each
#: element is a Python loop per element of every load.
INDEX_ELEMENTS = 1024


def _fits_dtype(v: SymInt, dtype: Any) -> bool:
    """The concrete parts of integer values ``v`` lie in ``dtype``'s range (i32: a value
    beyond it wrapped on the GPU, where the analysis computed it exactly)."""
    rng = getattr(dtype, "int_range", None)
    if rng is None:
        return True
    lo, hi = rng
    if getattr(dtype, "bits", 32) < 32 and np.any(np.asarray(v.key) != 0):
        # a runtime part in a narrow integer may wrap too: an i8 table's 127 + 1 is -128
        # (it was followed as 128; a review helper) -- not followed (any value). i32's
        # wraparound is a documented limit (docs/codes/AVE208.md)
        return False
    c = np.asarray(v.conc)
    return not c.size or (int(c.min()) >= lo and int(c.max()) <= hi)


def _checks_in(op: Op) -> bool:
    """An ``scf.if`` with an op in an arm that can be reported (:data:`_CHECKED_OPS`)."""
    return any(o.name in _CHECKED_OPS for o in _region_ops(op))


def _leading_barrier(region: Any) -> bool:
    """The region's first op that is not arithmetic (touches no memory) is a barrier."""
    for o in region.ops:
        if o.name == "ave.barrier":
            return True
        if o.regions or not o.name.startswith(("arith.", "math.")):
            return False
    return False


def _cond_width(x: np.ndarray) -> int:
    """How many leading columns of a condition (cond ids per row, or one id per row)
    hold an atomic condition: at most that many per row."""
    if x.ndim < 2:
        return 1 if x.any() else 0
    return _used_columns(x)


def _nonzero_count(rows: np.ndarray) -> np.ndarray:
    """Per row, how many atomic conditions (non-zero ids) a guard row holds."""
    return (rows != 0).sum(axis=1)


def _same_sym(a: Any, b: Any) -> bool:
    if isinstance(a, SymInt) and isinstance(b, SymInt):
        return bool(np.array_equal(a.key, b.key) and np.array_equal(a.conc, b.conc))
    return a is b

