"""Symbolic integers of the analysis: a concrete part per element plus a symbolic part.

After full unrolling, almost everything about a kernel is concrete — thread ids, loop
indices, shared-memory addresses — except a few *program-level* unknowns: program ids,
tensor shapes and strides, runtime scalars, and values read from global memory (a gather's
row indices). A value is therefore represented, for many elements at once (one per thread,
or one per tile element), as

    value[e] = LIN[key[e]] + conc[e]

where ``conc`` is a numpy ``int64`` array and ``key`` indexes a hash-consed table of linear
forms ``Σ coeff * atom`` over atoms (a program id, a runtime scalar, or an opaque term such
as ``pid1 % H``). Most arithmetic stays in numpy; the few comparisons whose symbolic parts
differ become SMT queries (:mod:`ave_core.analysis.smt`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Atom:
    """An opaque integer unknown.

    ``kind``: ``"pid"`` (args: axis), ``"nprog"`` (axis), ``"param"`` (name),
    ``"dim"``/``"stride"`` (tensor name, axis), ``"load"`` (a value read from an integer
    tensor -- an index table, taken to be ``>= 0`` -- args: the tensor's name and the
    element's coordinates ``(key, conc)``, then qualifiers: ``("masked", guard, other)``,
    ``("written", n)`` (read after the kernel's n-th write into the tensor); or ``("shared",
    datum)``: the value of shared-memory bytes holding ``datum``), ``"value"`` (an integer
    the analysis does not follow, no sign assumed: an index cast from floats; args:
    what makes it unique), ``"op"`` (name, (key_a, conc_a), (key_b, conc_b)): an integer
    operation the linear forms cannot express (``floordiv``, ``mod``, ``mul`` of two
    unknowns...), ``"select"`` (condition ids, (key_a, conc_a), (key_b, conc_b), label): the
    value after a branch on a runtime value, ``a`` when the conjunction of the conditions
    holds, else ``b`` (``k0`` assigned in both arms of an ``if``; label: its name and line).
    ``"op"`` and ``"select"`` are terms over other atoms (*derived*), not unknowns of their
    own.
    """

    kind: str
    args: tuple

    def __str__(self) -> str:
        if self.kind == "pid":
            return f"program_id({self.args[0]})"
        if self.kind == "nprog":
            return f"num_programs({self.args[0]})"
        if self.kind == "param":
            return str(self.args[0])
        if self.kind in ("dim", "stride"):
            return f"{self.args[0]}.{'shape' if self.kind == 'dim' else 'stride'}[{self.args[1]}]"
        if self.kind == "load":
            return f"loaded[{self.args[0]}:{self.args[1]}]"
        if self.kind == "value":
            return f"value{self.args}"
        if self.kind == "select":
            return str(self.args[3])
        return f"{self.kind}{self.args}"


#: Atom kinds that are terms over other atoms, not unknowns (see :class:`Atom`).
DERIVED = frozenset({"op", "select"})


class SymTable:
    """Hash-consed atoms and linear forms. Key 0 is the zero form."""

    def __init__(self) -> None:
        self.atoms: list[Atom] = []
        self.atom_ids: dict[Atom, int] = {}
        self.lins: list[tuple[tuple[int, int], ...]] = [()]
        self.lin_ids: dict[tuple, int] = {(): 0}
        self._add_cache: dict[tuple[int, int], int] = {}
        self._scale_cache: dict[tuple[int, int], int] = {}
        #: per atom, its name in witnesses and in z3 (unique: two atoms whose text is the
        #: same -- an index table's element read before and after the kernel rewrote it --
        #: were one z3 constant, and a wrong pairing through them was proved; a review
        #: helper): the text, or the name given at its creation, with ``#2``, ``#3`` ...
        #: for the later ones of the same text
        self.names: list[str] = []
        self._name_count: dict[str, int] = {}
        #: atom -> (lo, hi): the range of its dtype (a kernel's i32 argument)
        self.ranges: dict[int, tuple[int, int]] = {}

    def atom(self, a: Atom, name: str | None = None) -> int:
        """Key of the form ``1 * a``. ``name``: its name in witnesses when it is new
        (default: ``str(a)``; made unique, see :attr:`names`)."""
        i = self.atom_ids.get(a)
        if i is None:
            i = len(self.atoms)
            self.atoms.append(a)
            self.atom_ids[a] = i
            base = name if name is not None else self._op_text(a) or str(a)
            n = self._name_count.get(base, 0)
            text = base
            while n:
                text = f"{base}#{n + 1}"
                if text not in self._name_count:
                    break
                n += 1
            self._name_count[base] = n + 1
            self._name_count.setdefault(text, 1)
            self.names.append(text)
        return self.lin(((i, 1),))

    _OP_TEXT = {"floordiv": "//", "mod": "%", "mul": "*", "and": "&", "or": "|", "xor": "^",
                "shl": "<<", "shr": ">>"}

    def _op_text(self, a: Atom) -> str | None:
        """The text of an opaque term over other forms, ``(Ids[0] // 2)`` (its atom's
        repr named the forms by their table keys: "token=op('floordiv', (1, 0), (0, 2))"
        in a witness)."""
        if a.kind != "op" or len(a.args) != 3:
            return None
        op, (ka, ca), (kb, cb) = a.args
        x, y = self.format(int(ka), int(ca)), self.format(int(kb), int(cb))
        sym = self._OP_TEXT.get(op)
        return f"({x} {sym} {y})" if sym else f"{op}({x}, {y})"

    def element_name(self, tensor: str, coords: Any) -> str:
        """``T[c0, c1]``: an element of a tensor at coordinates ``(key, conc)``."""
        return f"{tensor}[{', '.join(self.format(int(k), int(c)) for k, c in coords)}]"

    def lin(self, terms: tuple[tuple[int, int], ...]) -> int:
        acc: dict[int, int] = {}
        for a, c in terms:
            acc[a] = acc.get(a, 0) + c
        t = tuple(sorted((a, c) for a, c in acc.items() if c != 0))
        k = self.lin_ids.get(t)
        if k is None:
            k = len(self.lins)
            self.lins.append(t)
            self.lin_ids[t] = k
        return k

    def add(self, ka: int, kb: int, sign: int = 1) -> int:
        if kb == 0:
            return ka
        if ka == 0 and sign == 1:
            return kb
        key = (ka, kb * sign)
        r = self._add_cache.get(key)
        if r is None:
            r = self.lin(self.lins[ka] + tuple((a, sign * c) for a, c in self.lins[kb]))
            self._add_cache[key] = r
        return r

    def scale(self, k: int, c: int) -> int:
        if k == 0 or c == 1:
            return k
        if c == 0:
            return 0
        key = (k, c)
        r = self._scale_cache.get(key)
        if r is None:
            r = self.lin(tuple((a, co * c) for a, co in self.lins[k]))
            self._scale_cache[key] = r
        return r

    def divisible(self, k: int, d: int) -> bool:
        return all(c % d == 0 for _, c in self.lins[k])

    def div_exact(self, k: int, d: int) -> int:
        return self.lin(tuple((a, c // d) for a, c in self.lins[k]))

    def format(self, k: int, c: int = 0) -> str:
        parts = []
        for a, co in self.lins[k]:
            s = self.names[a]
            parts.append(s if co == 1 else f"{co}*{s}")
        if c or not parts:
            parts.append(str(int(c)))
        return " + ".join(parts).replace("+ -", "- ")


#: A tag field's value, packed in one int64: ``ABSENT`` (0) = the field is absent (⊥),
#: ``TOP`` (-1) = ⊤ (conflict), else ``(key << 40) + conc + 2**39`` for ``LIN[key] + conc``
#: (key >= 0, |conc| < 2**39): one int64 compare decides "same value", one gather moves it.
ABSENT = 0
TOP = -1
_SHIFT = 40
_BIAS = 1 << 39
_CMASK = (1 << _SHIFT) - 1


def unpack(code: Any) -> tuple[int, int]:
    """(key, conc) of one packed value (not ABSENT or TOP)."""
    c = int(code)
    return c >> _SHIFT, (c & _CMASK) - _BIAS


def code_key(code: np.ndarray) -> np.ndarray:
    """The keys of packed values (0 where absent or ⊤)."""
    return np.where(code > 0, code >> _SHIFT, 0)


def code_conc(code: np.ndarray) -> np.ndarray:
    """The concrete parts of packed values (0 where absent or ⊤)."""
    return np.where(code > 0, (code & _CMASK) - _BIAS, 0)


#: the magnitude no concrete part may reach: the concrete parts are int64, and an
#: operation whose result could pass it raises :class:`SymOverflow` instead of wrapping
SYM_LIMIT = 1 << 62


class SymOverflow(ArithmeticError):
    """An integer of the analysis (a constant, a sum, a product) beyond +-2**62: numpy's
    int64 would wrap it (``(m * 2**62) // 2**62`` was 0 for m = 4, so a tag of row 4
    compared equal to row 0: a missed violation), or not hold it at all (``10**20`` raised
    ``OverflowError``: AVE900). The engine reports it as an analysis limit (AVE205)."""


def _max_abs(x: np.ndarray) -> int:
    return int(np.abs(x).max()) if np.size(x) else 0


class SymInt:
    """Many symbolic integers at once: ``LIN[key] + conc`` elementwise (same shapes)."""

    __slots__ = ("key", "conc")

    def __init__(self, key: np.ndarray, conc: np.ndarray) -> None:
        self.key = key
        self.conc = conc

    @staticmethod
    def const(c: Any, shape: tuple = ()) -> "SymInt":
        """Raises:
            SymOverflow: a Python integer beyond +-2**62."""
        if type(c) is int and not -SYM_LIMIT < c < SYM_LIMIT:
            raise SymOverflow(f"the integer {c} is beyond +-2**62")
        conc = np.broadcast_to(np.asarray(c, dtype=np.int64), shape).copy() if shape else \
            np.asarray(c, dtype=np.int64)
        return SymInt(np.zeros(np.shape(conc), dtype=np.int32), conc)

    @property
    def shape(self) -> tuple:
        return self.conc.shape

    def is_concrete(self) -> bool:
        return not np.any(self.key)

    def take(self, idx: Any) -> "SymInt":
        return SymInt(self.key[idx], self.conc[idx])

    def broadcast(self, shape: tuple) -> "SymInt":
        return SymInt(np.broadcast_to(self.key, shape), np.broadcast_to(self.conc, shape))


def _reduce_last(x: np.ndarray, op: Any, empty: bool) -> np.ndarray:
    """``op.reduce(x != 0, axis=-1)`` (``op``: np.logical_or / np.logical_and) for a short
    last axis (a field, a guard row): a loop over the columns is 5-10x faster than numpy's
    reduction along a short contiguous axis (measured: (8192, 6) bool, 18 us vs 107 us)."""
    k = x.shape[-1] if x.ndim else 0
    if k > 16 or x.ndim < 2:
        return op.reduce(x != 0, axis=-1)
    if k == 0:
        return np.full(x.shape[:-1], empty)
    out = x[..., 0] != 0
    for j in range(1, k):
        op(out, x[..., j], out=out)
    return out


def any_last(x: np.ndarray) -> np.ndarray:
    """``x.any(axis=-1)``, fast for a short last axis (see :func:`_reduce_last`)."""
    return _reduce_last(x, np.logical_or, False)


def all_last(x: np.ndarray) -> np.ndarray:
    """``x.all(axis=-1)``, fast for a short last axis (see :func:`_reduce_last`)."""
    return _reduce_last(x, np.logical_and, True)


def rows_take(a: np.ndarray, idx: Any) -> np.ndarray:
    """``a[idx]`` for a row index (integer array or boolean mask) of a 2-D array: numpy's
    ``take``/``compress`` along axis 0 are several times faster than fancy indexing there
    (measured: 8192 x 6 int64 rows, 14 us vs 58 us)."""
    if type(idx) is np.ndarray:
        if idx.dtype == np.bool_:
            if idx.ndim == 1 and idx.shape[0] == a.shape[0]:
                return a.compress(idx, axis=0)
            return a[idx]
        if idx.dtype.kind in "iu":
            return a.take(idx, axis=0)
    return a[idx]


def rows_put(a: np.ndarray, idx: Any, b: np.ndarray) -> None:
    """``a[idx] = b`` for rows of a 2-D array (through a one-element-per-row view when the
    rows are contiguous: 2-3x faster than fancy assignment)."""
    if (type(idx) is np.ndarray and idx.dtype.kind == "i" and idx.ndim == 1 and a.ndim == 2
            and a.flags.c_contiguous and a.shape[1] > 1):
        b = np.ascontiguousarray(np.broadcast_to(b, (len(idx.reshape(-1)), a.shape[1]))
                                 if np.ndim(b) < 2 else b, dtype=a.dtype)
        if b.shape == (idx.size, a.shape[1]):
            dt = np.dtype((np.void, a.dtype.itemsize * a.shape[1]))
            np.put(a.view(dt).reshape(-1), idx.reshape(-1), b.view(dt).reshape(-1))
            return
    a[idx] = b


def _unique_1d(x: np.ndarray, span: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, return_inverse=True)`` for an int64 array; values within a range
    a few times the array's length take a presence table instead of a sort (a tile's
    coordinates, packed guard rows: ~5x faster)."""
    n = x.size
    if n >= 64:
        lo = int(x.min())
        if span is None or lo != 0:
            span = int(x.max()) - lo + 1
        if span <= 4 * n:
            off = x - lo if lo else x
            present = np.zeros(span, bool)
            present[off] = True
            u = np.flatnonzero(present)
            rank = np.cumsum(present) - 1
            return u + lo, rank[off]
    u, inv = np.unique(x, return_inverse=True)
    return u, inv.reshape(-1)


def _unique_rows(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of equally shaped integer columns (1-D fast path: no structured sort)."""
    flat = [np.asarray(c).reshape(-1).astype(np.int64) for c in cols]
    if len(flat) == 1:
        u, inv = _unique_1d(flat[0])
        return u[:, None], inv
    first = flat[0]
    if all(np.all(c == c[0]) for c in flat) if first.size else True:
        return np.array([[c[0] for c in flat]]) if first.size else np.zeros((0, len(flat)),
                                                                          np.int64), \
            np.zeros(first.size, np.int64)
    # Pack the columns into one int64 per row (mixed radix over each column's range): the
    # 1-D unique sorts the codes in the same lexicographic order as np.unique(axis=0)
    # would sort the rows, at a fraction of the cost. Falls back when the ranges overflow.
    los = [int(c.min()) for c in flat]
    spans = [int(c.max()) - lo + 1 for c, lo in zip(flat, los)]
    total = 1
    for s in spans:
        total *= s
    if total < (1 << 62):
        code = np.zeros(first.size, np.int64)
        for c, lo, s in zip(flat, los, spans):
            code = code * s + (c - lo)
        u, inv = _unique_1d(code, total)
        out = np.empty((len(u), len(flat)), np.int64)
        for j in range(len(flat) - 1, -1, -1):
            out[:, j] = u % spans[j] + los[j]
            u = u // spans[j]
        return out, inv.reshape(-1)
    rows = np.stack(flat, axis=1)
    u, inv = np.unique(rows, axis=0, return_inverse=True)
    return u, inv.reshape(-1)


def _uniform(x: np.ndarray) -> bool:
    """Every element equal (``x`` not empty)."""
    first = x.flat[0]
    return bool((x == first).all())


def _pairwise(tab: SymTable, ka: np.ndarray, kb: np.ndarray, f) -> np.ndarray:
    """Apply ``f(key_a, key_b) -> key`` over the unique pairs of two key arrays."""
    ka, kb = np.broadcast_arrays(ka, kb)
    if not ka.any() and not kb.any():
        return np.zeros(ka.shape, dtype=np.int32)
    if ka.size and _uniform(ka) and _uniform(kb):          # the usual: one pair
        return np.full(ka.shape, f(int(ka.flat[0]), int(kb.flat[0])), dtype=np.int32)
    uniq, inv = _unique_rows(ka, kb)
    out = np.array([f(int(a), int(b)) for a, b in uniq], dtype=np.int32)
    return out[inv].reshape(ka.shape)


def sym_add(tab: SymTable, a: SymInt, b: SymInt, sign: int = 1) -> SymInt:
    """``a + sign * b``.

    Raises:
        SymOverflow: a concrete part of the result could reach 2**62."""
    if _max_abs(a.conc) + _max_abs(b.conc) >= SYM_LIMIT:
        raise SymOverflow("an integer sum beyond +-2**62")
    key = _pairwise(tab, a.key, b.key, lambda x, y: tab.add(x, y, sign))
    conc = a.conc + sign * b.conc if sign == 1 else a.conc - b.conc
    return SymInt(key, np.asarray(conc, dtype=np.int64))


def _opaque(tab: SymTable, name: str, a: SymInt, b: SymInt) -> SymInt:
    ka, ca, kb, cb = np.broadcast_arrays(a.key, a.conc, b.key, b.conc)
    uniq, inv = _unique_rows(ka, ca, kb, cb)
    keys = np.array([tab.atom(Atom("op", (name, (int(r[0]), int(r[1])), (int(r[2]), int(r[3])))))
                     for r in uniq], dtype=np.int32)
    return SymInt(keys[inv.reshape(-1)].reshape(ka.shape), np.zeros(ka.shape, dtype=np.int64))


def sym_mul(tab: SymTable, a: SymInt, b: SymInt) -> SymInt:
    ac, bc = a.is_concrete(), b.is_concrete()
    if (ac or bc) and _max_abs(a.conc) * _max_abs(b.conc) >= SYM_LIMIT:
        # (a symbolic part times a constant scales its coefficients: tab.scale, exact)
        raise SymOverflow("an integer product beyond +-2**62")
    if ac and bc:
        return SymInt.const(a.conc * b.conc, np.broadcast_shapes(a.shape, b.shape))
    if bc or ac:
        s, c = (a, b) if bc else (b, a)
        key = _pairwise(tab, s.key, c.conc, lambda k, co: tab.scale(k, co))
        return SymInt(key, np.asarray(s.conc * c.conc, dtype=np.int64))
    return _opaque(tab, "mul", a, b)


def sym_floordiv_mod(tab: SymTable, a: SymInt, b: SymInt, op: str) -> SymInt:
    """``a // b`` or ``a % b`` (floor semantics)."""
    if a.is_concrete() and b.is_concrete():
        d = np.where(b.conc == 0, 1, b.conc)
        r = np.floor_divide(a.conc, d) if op == "floordiv" else np.mod(a.conc, d)
        return SymInt.const(r, np.broadcast_shapes(a.shape, b.shape))
    if b.is_concrete():
        # (d*q + c) // d == q + c // d and (d*q + c) % d == c % d when d divides every
        # coefficient of the symbolic part
        ka, ca, dc = np.broadcast_arrays(a.key, a.conc, b.conc)
        uniq, _ = _unique_rows(ka, dc)
        good = {(int(k), int(d)) for k, d in uniq if d != 0 and tab.divisible(int(k), int(d))}
        if len(good) == len(uniq):
            d = np.where(dc == 0, 1, dc)
            if op == "mod":
                return SymInt(np.zeros(ka.shape, dtype=np.int32), np.mod(ca, d))
            key = _pairwise(tab, ka, dc, lambda k, dd: tab.div_exact(k, dd))
            return SymInt(key, np.floor_divide(ca, d))
    return _opaque(tab, op, a, b)


def sym_neg(tab: SymTable, a: SymInt) -> SymInt:
    return sym_mul(tab, a, SymInt.const(-1))


def sym_binop(tab: SymTable, name: str, a: SymInt, b: SymInt) -> SymInt:
    """The integer ops of the IR on symbolic integers."""
    if name == "add":
        return sym_add(tab, a, b)
    if name == "sub":
        return sym_add(tab, a, b, -1)
    if name == "mul":
        return sym_mul(tab, a, b)
    if name in ("floordiv", "mod"):
        return sym_floordiv_mod(tab, a, b, name)
    if a.is_concrete() and b.is_concrete():
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
             "shl": np.left_shift, "shr": np.right_shift, "min": np.minimum,
             "max": np.maximum}.get(name)
        if f is not None:
            return SymInt.const(f(a.conc, b.conc), np.broadcast_shapes(a.shape, b.shape))
    return _opaque(tab, name, a, b)


# ----------------------------------------------------------------------------- conditions

@dataclass(frozen=True)
class Cond:
    """``LIN[key] + conc  <pred>  0`` (pred in lt le gt ge eq ne), or a conjunction."""

    pred: str
    key: int
    conc: int


class ContentMemo:
    """Results of a pure function of two integer arrays, by the arrays' contents: an
    elementwise op of an iteration often meets the operands of an earlier one again (the
    two halves of an accumulator scaled by one factor, an MMA chain's accumulator and
    products the same every iteration, a variant's epilogue after another's).

    Keyed by the shapes, dtypes and a sample of rows of both arrays; an entry is used only
    when its (copied) arrays equal the new ones element for element, so a hit is exactly
    the result the function gives. Holds at most ``size`` keys (the oldest go first). One
    lives in a :class:`CondTable`: one analysis run, never across runs."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._d: dict = {}

    @staticmethod
    def _key(a: np.ndarray, b: np.ndarray) -> tuple:
        sa = a[::max(1, len(a) // 64)]
        sb = b[::max(1, len(b) // 64)]
        return (a.shape, b.shape, a.dtype.str, b.dtype.str, sa.tobytes(), sb.tobytes())

    def get(self, a: np.ndarray, b: np.ndarray) -> tuple[tuple, Any]:
        """(the key, the kept result for these contents or None)."""
        key = self._key(a, b)
        for ea, eb, out in self._d.get(key, ()):
            if np.array_equal(ea, a) and np.array_equal(eb, b):
                return key, out
        return key, None

    def put(self, key: tuple, a: np.ndarray, b: np.ndarray, out: Any) -> None:
        """Keep ``out`` for the contents of ``a`` and ``b`` (copied: a caller may reuse
        its arrays; ``out`` itself must not be mutated afterwards)."""
        bucket = self._d.get(key)
        if bucket is None:
            if len(self._d) >= self.size:
                self._d.pop(next(iter(self._d)))
            bucket = self._d[key] = []
        bucket.append((a.copy(), b.copy(), out))


class CondTable:
    """Hash-consed conjunctions of :class:`Cond`. Id 0 = true, id 1 = false.

    It also holds the content memos of one analysis run (:class:`ContentMemo`): ``memo``
    by name, for the elementwise tag computations the engine repeats (``"conj"``: guard
    rows' conjunctions, ``"agree"``: the field values of ``engine.agree``)."""

    def __init__(self) -> None:
        self.sets: list[frozenset[Cond] | None] = [frozenset(), None]
        self.ids: dict[frozenset[Cond], int] = {frozenset(): 0}
        self._and: dict[tuple[int, int], int] = {}
        self._atomic: dict[tuple[str, int, int], int] = {}
        self._log: dict[str, list] = {}            # pred -> [(key, conc, id)] in order made
        self._atomic_tab: dict[str, tuple] = {}    # pred -> (log length, codes, ids) sorted
        self._conj_last: tuple | None = None       # (a result of conj_arrays, its b)
        self.memo: dict[str, ContentMemo] = {"conj": ContentMemo(), "agree": ContentMemo()}

    def of(self, conds: frozenset[Cond]) -> int:
        i = self.ids.get(conds)
        if i is None:
            i = len(self.sets)
            self.sets.append(conds)
            self.ids[conds] = i
        return i

    def atomic(self, pred: str, key: int, conc: int) -> int:
        """Id of the one-condition conjunction ``LIN[key] + conc <pred> 0``."""
        t = (pred, key, conc)
        i = self._atomic.get(t)
        if i is None:
            i = self._atomic[t] = self.of(frozenset([Cond(pred, key, conc)]))
            self._log.setdefault(pred, []).append((key, conc, i))
        return i

    def find_atomic_many(self, pred: str, keys: np.ndarray, concs: np.ndarray) -> np.ndarray:
        """:meth:`find_atomic` for arrays of (key, conc): the ids, -1 where none was built.
        (A sorted table per predicate, extended from a log of new atomic conditions.)"""
        keys = np.asarray(keys, np.int64)
        concs = np.asarray(concs, np.int64)
        log = self._log.get(pred, [])
        tab = self._atomic_tab.get(pred)
        if tab is None or tab[0] != len(log):
            done = 0 if tab is None else tab[0]
            arr = np.array(log[done:], np.int64).reshape(-1, 3)      # only the new ones
            fits = (arr[:, 1] >= -(1 << 31)) & (arr[:, 1] < (1 << 31))
            arr = arr[fits]
            codes = (arr[:, 0] << 32) + (arr[:, 1] + (1 << 31))
            ids = arr[:, 2]
            if tab is not None:
                codes = np.concatenate([tab[1], codes])
                ids = np.concatenate([tab[2], ids])
            order = np.argsort(codes, kind="stable")
            tab = self._atomic_tab[pred] = (len(log), codes[order], ids[order])
        _, codes, ids = tab
        out = np.full(keys.shape, -1, np.int64)
        if codes.size == 0 or keys.size == 0:
            return out
        ok = (concs >= -(1 << 31)) & (concs < (1 << 31)) & (keys >= 0)
        q = (keys << 32) + (concs + (1 << 31))
        pos = np.minimum(np.searchsorted(codes, q), codes.size - 1)
        hit = ok & (codes[pos] == q)
        out[hit] = ids[pos[hit]]
        return out

    def find_atomic(self, pred: str, key: int, conc: int) -> int | None:
        """Id of ``LIN[key] + conc <pred> 0`` if some comparison built it, else None (every
        one-condition conjunction is built by :meth:`atomic`)."""
        return self._atomic.get((pred, key, conc))

    def conj(self, a: int, b: int) -> int:
        if a == 0 or a == b:
            return b
        if b == 0:
            return a
        if a == 1 or b == 1:
            return 1
        k = (min(a, b), max(a, b))
        r = self._and.get(k)
        if r is None:
            r = self.of(self.sets[a] | self.sets[b])  # type: ignore[operator]
            self._and[k] = r
        return r

    #: Width of a guard row: the conjunction of up to GUARD atomic conditions per element.
    GUARD = 4

    def rows(self, x: np.ndarray, n: int | None = None) -> np.ndarray:
        """A guard array as rows ``(N, GUARD)`` of atomic condition ids (0 = true, 1 =
        false; a row is their conjunction)."""
        x = np.asarray(x, dtype=np.int32)
        if x.ndim == 0:
            x = x.reshape(1, 1)
        elif x.ndim == 1:
            x = x[:, None]
        if n is not None and x.shape[0] != n:
            x = np.broadcast_to(x, (n, x.shape[1]))
        g = self.GUARD
        if x.shape[1] < g:
            x = np.concatenate([x, np.zeros((x.shape[0], g - x.shape[1]), np.int32)], axis=1)
        return x

    def conj_arrays(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Elementwise conjunction of guard rows: false if either is false; else the union
        of their atomic conditions (the first GUARD distinct ones are kept: dropping a
        conjunct can only make a witness query easier, never hide a violation)."""
        a = self.rows(a)
        b = self.rows(b)
        n = max(a.shape[0], b.shape[0])
        a, b = self.rows(a, n), self.rows(b, n)
        last = self._conj_last
        if last is not None and a is last[0] and b is last[1]:
            # (x & b) & b = x & b, also cut to GUARD ids (the ids of b cut from x & b are
            # below its last one): an MMA chain's accumulator meeting the same products'
            # guards again (a k-step whose products were reused)
            return a.copy()
        if n >= 256:
            # (a copy: callers may change the rows they get, e.g. _bool_op's cut rows)
            memo = self.memo["conj"]
            key, hit = memo.get(a, b)
            if hit is None:
                hit = self._conj(a, b)
                memo.put(key, a, b, hit)
            out = hit.copy()
        else:
            out = self._conj(a, b)
        self._conj_last = (out, b)
        return out

    def _conj(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        na, nb = _used_columns(a), _used_columns(b)
        if nb == 0:
            return a.copy()
        if na == 0:
            return b.copy()
        if a is b or np.array_equal(a, b):
            # guard rows are kept canonical (distinct ids, largest first, zeros last), and
            # a conjunction with itself is itself
            return a.copy()
        if na + nb == 2:
            # one atomic condition per side: the larger first, a duplicate dropped
            x, y = a[:, 0], b[:, 0]
            false = (x == 1) | (y == 1)
            hi, lo = np.maximum(x, y), np.minimum(x, y)
            out = np.zeros((len(x), self.GUARD), np.int32)
            out[:, 0] = hi
            out[:, 1] = np.where(lo == hi, 0, lo)
            out[false] = 0
            out[false, 0] = 1
            return out
        # rows are canonical (distinct ids, largest first, zeros last: every guard row is
        # made here or from single ids), so the union of two sorted lists, through sorting
        # networks
        return _merge_few(a[:, :na], b[:, :nb], self.GUARD)

    def truth(self, x: np.ndarray) -> np.ndarray:
        """Per row: 0 true, 1 false, 2 depends on runtime values."""
        r = self.rows(x)
        return np.where(any_last(r == 1), 1, np.where(all_last(r == 0), 0, 2))

    def members(self, row: np.ndarray) -> list[int]:
        return [int(c) for c in np.asarray(row).reshape(-1) if c != 0]



def _used_columns(x: np.ndarray) -> int:
    """How many leading columns of guard rows ``x`` hold any atomic condition."""
    for j in range(x.shape[1] - 1, -1, -1):      # column scans: cheaper than any(axis=0)
        if x[:, j].any():
            return j + 1
    return 0


#: Sorting networks (pairs of columns compared and exchanged, in order): Knuth's optimal
#: ones for 4 inputs (5 comparators) and 8 inputs (19 comparators, depth 6).
_NETWORKS = {
    4: ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2)),
    8: ((0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7), (0, 1), (2, 3),
        (4, 5), (6, 7), (2, 4), (3, 5), (1, 4), (3, 6), (1, 2), (3, 4), (5, 6)),
}


def _sort_desc(cols: list, network: tuple) -> list:
    """Sort columns row-wise, largest first, with a sorting network (compare-exchange)."""
    c = list(cols)
    for i, j in network:
        c[i], c[j] = np.maximum(c[i], c[j]), np.minimum(c[i], c[j])
    return c


def _merge_few(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """Conjunction of canonical guard rows (see :meth:`CondTable.conj_arrays`): the first
    ``width`` (<= 4) distinct ids of the union of two descending lists, largest first,
    zeros last; a row where either side holds false (1) is false.

    Only a side's first ``width`` ids can be among the union's first ``width``, so at most
    8 values per row go through a sorting network (largest first), duplicates are zeroed
    (a value repeats at most once, one from each side, next to each other once sorted) and
    the network runs again to move the zeros last: a few dozen vector operations (16384
    rows, 2 + 2 atoms: 0.12 ms; a merge of the two lists took 0.6 ms)."""
    if width > 4:
        raise ValueError("guard rows of more than 4 conditions need a larger network")
    n = a.shape[0]
    false = any_last(a == 1) | any_last(b == 1)      # 1, the smallest id, may be cut below
    a, b = a[:, :width], b[:, :width]
    cols = [a[:, j] for j in range(a.shape[1])] + [b[:, j] for j in range(b.shape[1])]
    size = 4 if len(cols) <= 4 else 8
    cols += [np.zeros(n, np.int32)] * (size - len(cols))
    net = _NETWORKS[size]
    c = _sort_desc(cols, net)
    for j in range(size - 1, 0, -1):         # equal to its left neighbour: a duplicate
        c[j] = c[j] * (c[j] != c[j - 1])
    c = _sort_desc(c, net)
    c = c[:width] + [np.zeros(n, np.int32)] * max(0, width - size)
    out = np.stack(c, axis=1).astype(np.int32, copy=False)
    if false.any():
        out[false] = 0
        out[false, 0] = 1
    return out


_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
        "eq": np.equal, "ne": np.not_equal}


def mentions(tab: SymTable, key: int, kinds: tuple) -> bool:
    """The linear form ``LIN[key]`` mentions an atom of one of ``kinds`` (``"pid"``,
    ``"load"``, ...), directly or inside an opaque term (an op, a select)."""
    return bool(atoms_in(tab, key, kinds, first=True))


def atoms_in(tab: SymTable, key: int, kinds: tuple, first: bool = False) -> set:
    """The atoms of ``kinds`` the linear form ``LIN[key]`` mentions, directly or inside
    opaque terms (``first``: stop at the first one found)."""
    out: set = set()
    todo = [key]
    while todo:
        for a, _ in tab.lins[todo.pop()]:
            at = tab.atoms[a]
            if at.kind in kinds:
                out.add(a)
                if first:
                    return out
            elif at.kind in ("op", "select"):
                (ka, _), (kb, _) = at.args[1:3]
                todo += [ka, kb]
    return out


def sym_compare(tab: SymTable, ct: CondTable, pred: str, a: SymInt, b: SymInt) -> np.ndarray:
    """Condition ids (0 true, 1 false, else symbolic) of ``a <pred> b`` elementwise."""
    d = sym_add(tab, a, b, -1)
    shape = d.shape
    out = np.zeros(shape, dtype=np.int32)
    conc_mask = d.key == 0
    if conc_mask.any():
        truth = _CMP[pred](d.conc[conc_mask], 0)
        out[conc_mask] = np.where(truth, 0, 1)
    sym = ~conc_mask
    if sym.any():
        if not conc_mask.any() and _uniform(d.key):
            # one linear form (a tile's coordinate against a size): by offset
            cs, inv = _unique_1d(np.asarray(d.conc, np.int64).reshape(-1))
            k = int(d.key.flat[0])
            get = ct._atomic.get
            ids = [get((pred, k, c)) for c in cs.tolist()]
            if None in ids:
                ids = [ct.atomic(pred, k, c) if i is None else i
                       for i, c in zip(ids, cs.tolist())]
            return np.array(ids, dtype=np.int32)[inv].reshape(shape)
        ks, cs = d.key[sym], d.conc[sym]
        rows, inv = _unique_rows(ks, cs)
        ids = np.array([ct.atomic(pred, k, c) for k, c in rows.tolist()], dtype=np.int32)
        out[sym] = ids[inv]
    return out
