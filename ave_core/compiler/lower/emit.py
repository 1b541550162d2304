"""Text emission of MLIR for the lowering, and symbolic integers that fold as they go.

The lowering writes MLIR in its generic-enough textual form, one op a line, through
:class:`Emitter`; the module is then parsed and verified by the official MLIR Python bindings
(:mod:`ave_core.jit.pipeline`). Integer index arithmetic goes through :class:`Sym`, a linear
form ``const + sum(coef * atom)`` over emitted ``i32`` SSA values ("atoms") whose value
ranges are known where possible. Python's integer operators work on it, so the layout
algebra of :mod:`ave_core.lang.layout` (``crd2idx``, swizzles) evaluates on ``Sym`` values
unchanged; ``//``, ``%``, ``&``, ``>>`` by constants fold exactly when the ranges allow it
(``(64*w + l) // 64 == w`` for ``0 <= l < 64``), which keeps per-thread address arithmetic
small and loop-invariant parts separable (LLVM then hoists them out of the loops).

Division semantics follow Python (and the interpreter): ``//`` rounds toward negative
infinity and ``%`` takes the divisor's sign. Where both operands are known non-negative the
cheaper unsigned instructions are emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

I32_MIN, I32_MAX = -(2 ** 31), 2 ** 31 - 1


class LoweringError(Exception):
    """A construct the code generator cannot express; carries the IR op (or a location) for
    its source range."""

    def __init__(self, message: str, op: Any = None, loc: Any = None) -> None:
        super().__init__(message)
        self.op = op
        self.loc = loc

    @property
    def location(self) -> Any:
        """The :class:`~ave_core.compiler.ir.Loc` of the op (or the kernel), or None."""
        return self.op.loc if self.op is not None else self.loc

    def to_diagnostic(self) -> Any:
        """This error as an AVE401 diagnostic at the op's (or the kernel's) range."""
        from ave_core.diagnostics import ZERO_RANGE, Diagnostic
        loc = self.location
        return Diagnostic("AVE401", str(self), loc.file if loc is not None else "<unknown>",
                          loc.range if loc is not None else ZERO_RANGE)

    def __str__(self) -> str:
        msg = super().__str__()
        loc = self.location
        if loc is not None and loc.file != "<unknown>":
            p = loc.range.start
            return f"{msg} [{loc.file}:{p.line + 1}:{p.character + 1}]"
        return msg


@dataclass(frozen=True)
class V:
    """An emitted SSA value of any MLIR type (``%name`` and its type text)."""

    name: str
    type: str

    def __str__(self) -> str:
        return self.name


class Emitter:
    """Accumulates MLIR text with unique SSA names and scoped caches (dominance-safe).

    Scopes follow the structured regions being emitted: a value cached in a loop body is
    never reused after the loop, while one cached at function level is reused everywhere.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 3
        self._n = 0
        self._scopes: list[dict] = [{}]
        self.ranges: dict[str, tuple[int | None, int | None]] = {}

    # ------------------------------------------------------------------ basics
    def fresh(self, hint: str = "v") -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def op(self, text: str, type_: str, hint: str = "v") -> V:
        """Emit ``%new = <text>`` and return it as a value of ``type_``."""
        name = self.fresh(hint)
        self.line(f"{name} = {text}")
        return V(name, type_)

    def push(self) -> None:
        self._scopes.append({})
        self.indent += 1

    def pop(self) -> None:
        self._scopes.pop()
        self.indent -= 1

    def cached(self, key: Any) -> Any:
        for sc in reversed(self._scopes):
            if key in sc:
                return sc[key]
        return None

    def cache(self, key: Any, value: Any) -> Any:
        self._scopes[-1][key] = value
        return value

    # ------------------------------------------------------------------ constants
    def const(self, value: Any, type_: str = "i32") -> V:
        key = ("const", type_, value)
        hit = self.cached(key)
        if hit is not None:
            return hit
        if type_ in ("f32", "f16", "bf16", "f64"):
            text = f"arith.constant {float_literal(float(value), type_)} : {type_}"
        elif type_ == "i1":
            text = f"arith.constant {'true' if value else 'false'}"
        else:
            text = f"arith.constant {int(value)} : {type_}"
        v = self.op(text, type_, "c")
        # constants are hoisted to the outermost scope's cache only when emitted there
        return self.cache(key, v)

    # ------------------------------------------------------------------ integer atoms
    def field(self, name: str, m: int) -> tuple[str, str]:
        """Names of ``x % m`` and ``x // m`` for the non-negative atom ``x`` and a power of
        two ``m`` (emitted once, where ``x`` is visible)."""
        key = ("field", name, m)
        hit = self.cached(key)
        if hit is not None:
            return hit
        lo, hi = self.ranges.get(name, (0, None))
        sh = m.bit_length() - 1
        a = self.op(f"arith.andi {name}, {self.const(m - 1)} : i32", "i32", "f")
        b = self.op(f"arith.shrui {name}, {self.const(sh)} : i32", "i32", "f")
        self.ranges[a.name] = (0, m - 1 if hi is None or hi >= m - 1 else hi)
        self.ranges[b.name] = (lo >> sh if lo is not None else 0,
                               None if hi is None else hi >> sh)
        return self.cache(key, (a.name, b.name))

    # ------------------------------------------------------------------ integer atoms
    def atom(self, v: V, lo: int | None = None, hi: int | None = None) -> "Sym":
        """A Sym for an emitted ``i32`` value with the inclusive range ``[lo, hi]``."""
        self.ranges[v.name] = (lo, hi)
        return Sym(self, {v.name: 1}, 0)


def float_literal(x: float, type_: str) -> str:
    """The exact bit pattern of ``x`` rounded to ``type_`` as an MLIR hex float literal."""
    import struct
    import numpy as np
    if type_ == "f64":
        return f"0x{struct.unpack('<Q', struct.pack('<d', x))[0]:016X}"
    bits32 = int(np.array(x, dtype=np.float32).view(np.uint32))
    if type_ == "f32":
        return f"0x{bits32:08X}"
    if type_ == "f16":
        return f"0x{int(np.array(x, dtype=np.float16).view(np.uint16)):04X}"
    if type_ == "bf16":
        if x != x:
            return "0x7FC0"
        return f"0x{((bits32 + 0x7FFF + ((bits32 >> 16) & 1)) >> 16) & 0xFFFF:04X}"  # RNE
    raise ValueError(f"no float literal for {type_}")


def _rng_mul(r: tuple, c: int) -> tuple:
    lo, hi = r
    if lo is None or hi is None:
        if c == 0:
            return (0, 0)
        if c > 0:
            return (None if lo is None else lo * c, None if hi is None else hi * c)
        return (None if hi is None else hi * c, None if lo is None else lo * c)
    a, b = lo * c, hi * c
    return (min(a, b), max(a, b))


class Sym:
    """A symbolic ``i32``: ``const + sum(coef * atom)``; see the module docstring.

    Arithmetic with ints and other Syms returns Syms (or ints when everything folds).
    Comparisons return :class:`Pred` (an emitted ``i1``).
    """

    __slots__ = ("em", "terms", "const")

    def __init__(self, em: Emitter, terms: dict, const: int) -> None:
        self.em = em
        self.terms = {k: c for k, c in terms.items() if c != 0}
        self.const = const

    # -------------------------------------------------------------- helpers
    @staticmethod
    def make(em: Emitter, terms: dict, const: int) -> "Sym | int":
        s = Sym(em, terms, const)
        return s.const if not s.terms else s

    def range(self) -> tuple[int | None, int | None]:
        lo = hi = self.const
        for name, c in self.terms.items():
            r = _rng_mul(self.em.ranges.get(name, (None, None)), c)
            lo = None if lo is None or r[0] is None else lo + r[0]
            hi = None if hi is None or r[1] is None else hi + r[1]
        return lo, hi

    def nonneg(self) -> bool:
        lo, _ = self.range()
        return lo is not None and lo >= 0

    def value(self) -> V:
        """Materialize as an emitted ``i32`` value."""
        em = self.em
        key = ("sym", tuple(sorted(self.terms.items())), self.const)
        hit = em.cached(key)
        if hit is not None:
            return hit
        acc: V | None = None
        if self.terms:
            base = Sym(em, self.terms, 0)
            bkey = ("sym", tuple(sorted(self.terms.items())), 0)
            acc = em.cached(bkey)
            if acc is None:
                for name, c in sorted(self.terms.items()):
                    t = V(name, "i32")
                    if c != 1:
                        if c > 0 and c & (c - 1) == 0:
                            t = em.op(f"arith.shli {name}, {em.const(c.bit_length() - 1)} : i32",
                                      "i32")
                        else:
                            t = em.op(f"arith.muli {name}, {em.const(c)} : i32", "i32")
                    acc = t if acc is None else em.op(f"arith.addi {acc}, {t} : i32", "i32")
                em.ranges[acc.name] = base.range()
                em.cache(bkey, acc)
        if self.const or acc is None:
            c = em.const(self.const)
            acc = c if acc is None else em.op(f"arith.addi {acc}, {c} : i32", "i32")
        lo, hi = self.range()
        em.ranges[acc.name] = (lo, hi)
        return em.cache(key, acc)

    def _atomize(self, v: V) -> "Sym":
        lo, hi = self.range()
        return self.em.atom(v, lo, hi)

    # -------------------------------------------------------------- linear ops
    def __add__(self, o: Any) -> "Sym | int":
        if isinstance(o, Sym):
            t = dict(self.terms)
            for k, c in o.terms.items():
                t[k] = t.get(k, 0) + c
            return Sym.make(self.em, t, self.const + o.const)
        if isinstance(o, (int,)) or hasattr(o, "__index__"):
            return Sym.make(self.em, self.terms, self.const + int(o))
        return NotImplemented

    __radd__ = __add__

    def __neg__(self) -> "Sym":
        return Sym.make(self.em, {k: -c for k, c in self.terms.items()}, -self.const)

    def __sub__(self, o: Any) -> "Sym | int":
        return self + (-o)

    def __rsub__(self, o: Any) -> "Sym | int":
        return (-self) + o

    def __mul__(self, o: Any) -> "Sym | int":
        if isinstance(o, Sym):
            if not o.terms:
                return self * o.const
            if not self.terms:
                return o * self.const
            a, b = self.value(), o.value()
            lo1, hi1 = self.range()
            lo2, hi2 = o.range()
            r = (None, None)
            if None not in (lo1, hi1, lo2, hi2):
                ps = [lo1 * lo2, lo1 * hi2, hi1 * lo2, hi1 * hi2]
                r = (min(ps), max(ps))
            v = self.em.op(f"arith.muli {a}, {b} : i32", "i32")
            return self.em.atom(v, *r)
        o = int(o)
        return Sym.make(self.em, {k: c * o for k, c in self.terms.items()}, self.const * o)

    __rmul__ = __mul__

    # -------------------------------------------------------------- division family
    def _refine(self, d: int) -> "Sym":
        """Rewrite terms ``c*x`` (``c`` a power of two below the power of two ``d``, ``x`` a
        non-negative atom) as ``c*(x % m) + c*m*(x // m)`` with ``m = d / c``: the second
        part is then a multiple of ``d``. The two fields of ``x`` are emitted once."""
        if d & (d - 1) or d <= 1:
            return self
        em = self.em
        terms: dict = {}
        for k, c in self.terms.items():
            lo, hi = em.ranges.get(k, (None, None))
            if (c > 0 and c & (c - 1) == 0 and c < d and lo is not None and lo >= 0
                    and hi is not None and hi >= d // c):
                m = d // c
                lo_f, hi_f = em.field(k, m)
                terms[lo_f] = terms.get(lo_f, 0) + c
                terms[hi_f] = terms.get(hi_f, 0) + c * m
            else:
                terms[k] = terms.get(k, 0) + c
        return Sym(em, terms, self.const)

    def _split(self, d: int) -> tuple[dict, "Sym | int"] | None:
        """``self == d*q + r`` with ``q`` linear and ``0 <= r < d``: (q terms, q const) and
        r; None when the ranges don't allow it."""
        me = self._refine(d)
        mult = {k: c // d for k, c in me.terms.items() if c % d == 0}
        rest = {k: c for k, c in me.terms.items() if c % d != 0}
        r = Sym.make(self.em, rest, self.const % d)
        q_const = self.const // d
        lo, hi = (r.range() if isinstance(r, Sym) else (r, r))
        if lo is None or hi is None:
            return None
        if lo // d != hi // d:
            return None
        shift = lo // d
        q = Sym.make(self.em, mult, q_const + shift)
        return (q, r - shift * d)

    def __floordiv__(self, o: Any) -> "Sym | int":
        if isinstance(o, Sym):
            if o.terms:
                return self._div_rt(o, "floordiv")
            o = o.const
        d = int(o)
        if d == 1:
            return self
        if d > 0:
            sp = self._split(d)
            if sp is not None:
                return sp[0]
        return self._div_rt(d, "floordiv")

    def __mod__(self, o: Any) -> "Sym | int":
        if isinstance(o, Sym):
            if o.terms:
                return self._div_rt(o, "mod")
            o = o.const
        d = int(o)
        if d == 1:
            return 0
        if d > 0:
            sp = self._split(d)
            if sp is not None:
                return sp[1]
        return self._div_rt(d, "mod")

    def __rfloordiv__(self, o: Any) -> "Sym | int":
        return Sym(self.em, {}, int(o)) // self

    def __rmod__(self, o: Any) -> "Sym | int":
        return Sym(self.em, {}, int(o)) % self

    def _div_rt(self, o: Any, kind: str) -> "Sym":
        em = self.em
        a = self.value()
        b = o.value() if isinstance(o, Sym) else em.const(int(o))
        bpos = (o > 0) if isinstance(o, int) else o.nonneg()
        if self.nonneg() and bpos:
            ins = "arith.divui" if kind == "floordiv" else "arith.remui"
            v = em.op(f"{ins} {a}, {b} : i32", "i32")
        elif kind == "floordiv":
            v = em.op(f"arith.floordivsi {a}, {b} : i32", "i32")
        else:  # Python modulo: a - floor(a / b) * b
            q = em.op(f"arith.floordivsi {a}, {b} : i32", "i32")
            qb = em.op(f"arith.muli {q}, {b} : i32", "i32")
            v = em.op(f"arith.subi {a}, {qb} : i32", "i32")
        lo = hi = None
        if kind == "mod" and isinstance(o, int) and o > 0:
            lo, hi = 0, o - 1
        elif kind == "floordiv" and isinstance(o, int) and o > 0:
            slo, shi = self.range()
            lo = None if slo is None else slo // o
            hi = None if shi is None else shi // o
        return em.atom(v, lo, hi)

    # -------------------------------------------------------------- bit ops
    def __and__(self, o: Any) -> "Sym | int":
        if isinstance(o, int) and o >= 0 and (o + 1) & o == 0 and self.nonneg():
            return self % (o + 1)
        return self._bitop("andi", o)

    __rand__ = __and__

    def __or__(self, o: Any) -> "Sym | int":
        return self._bitop("ori", o)

    __ror__ = __or__

    def __xor__(self, o: Any) -> "Sym | int":
        if isinstance(o, int) and o == 0:
            return self
        return self._bitop("xori", o)

    __rxor__ = __xor__

    def __rshift__(self, o: Any) -> "Sym | int":
        if isinstance(o, int) and o >= 0 and self.nonneg():
            return self // (1 << o)
        return self._bitop("shrsi", o)

    def __lshift__(self, o: Any) -> "Sym | int":
        if isinstance(o, int) and o >= 0:
            return self * (1 << o)
        return self._bitop("shli", o)

    def __rrshift__(self, o: Any) -> "Sym":
        return Sym(self.em, {}, int(o))._bitop("shrsi", self)

    def __rlshift__(self, o: Any) -> "Sym":
        return Sym(self.em, {}, int(o))._bitop("shli", self)

    def _bitop(self, ins: str, o: Any) -> "Sym":
        em = self.em
        a = self.value()
        b = o.value() if isinstance(o, Sym) else em.const(int(o))
        v = em.op(f"arith.{ins} {a}, {b} : i32", "i32")
        lo = hi = None
        if ins == "andi" and isinstance(o, int) and o >= 0:
            lo, hi = 0, o
        elif ins in ("xori", "ori") and self.nonneg() and (
                isinstance(o, int) and o >= 0 or isinstance(o, Sym) and o.nonneg()):
            _, h1 = self.range()
            h2 = o if isinstance(o, int) else o.range()[1]
            if h1 is not None and h2 is not None:
                lo, hi = 0, (1 << max(h1, h2).bit_length()) - 1
        return em.atom(v, lo, hi)

    # -------------------------------------------------------------- comparisons
    def _cmp(self, o: Any, pred: str) -> "Pred":
        em = self.em
        a = self.value()
        b = o.value() if isinstance(o, Sym) else em.const(int(o))
        return Pred(em.op(f"arith.cmpi {pred}, {a}, {b} : i32", "i1"))

    def __lt__(self, o: Any) -> "Pred":
        return self._cmp(o, "slt")

    def __le__(self, o: Any) -> "Pred":
        return self._cmp(o, "sle")

    def __gt__(self, o: Any) -> "Pred":
        return self._cmp(o, "sgt")

    def __ge__(self, o: Any) -> "Pred":
        return self._cmp(o, "sge")

    def __repr__(self) -> str:
        return f"Sym({self.terms}, {self.const})"


@dataclass(frozen=True)
class Pred:
    """An emitted ``i1``."""

    v: V


def materialize(em: Emitter, x: Any) -> V:
    """An ``i32`` value for an int or a Sym."""
    if isinstance(x, Sym):
        return x.value()
    return em.const(int(x))


def pred_and(em: Emitter, preds: Iterable[Any]) -> Any:
    """Conjunction of Preds / Python bools (True folds away; None when all True)."""
    out = None
    for p in preds:
        if p is True:
            continue
        if p is False:
            return False
        out = p if out is None else Pred(em.op(f"arith.andi {out.v}, {p.v} : i1", "i1"))
    return out
