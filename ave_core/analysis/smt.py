"""The SMT side of the analysis (z3): deciding the comparisons numpy cannot.

A comparison of two tag fields reaches the solver only when the symbolic parts of the two
values differ (e.g. ``head = program_id(2) // GROUP`` against ``head = program_id(2)``),
or when the elements involved are guarded by masks over runtime sizes. The query is

    ∃ atoms:  domain(atoms) ∧ guards ∧ (lhs ≠ rhs)

``unsat`` proves the pair conforms, ``sat`` gives a model — the program ids and runtime
sizes of the witness — and ``unknown`` (the solver's budget ran out) is reported as such.
Atoms are integers: program ids in ``[0, num_programs)``, sizes and strides ``>= 1``,
loaded values ``>= 0`` (index tables are well formed; a masked load's negative ``other`` is
a parameter, unconstrained); opaque terms are defined by their operation (floor division
and modulo as in Python; bitwise ops through bit-vectors).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from ave_core.analysis.symbolic import DERIVED, Atom, Cond, CondTable, SymTable


class _FreshContexts:
    """Fresh z3 contexts, each made ahead of time on a helper thread.

    Making a z3 context costs 5-7 ms of CPU (measured here), a sizeable part of a whole
    analysis. z3's ctypes calls release the GIL, so the next analysis' context is made on
    a daemon thread while this one runs (on another core). A context handed out has never
    been used: the same as one made on demand (witnesses stay reproducible)."""

    def __init__(self) -> None:
        import threading
        self._lock = threading.Lock()
        self._ready: Any = None
        self._thread: Any = None

    def _make(self, z3: Any) -> None:
        self._ready = z3.Context()

    def take(self, z3: Any) -> Any:
        """A fresh context (thread-safe: analyses may run on several threads; each gets
        its own context, the prepared one or a new one)."""
        import threading
        with self._lock:        # one taker at a time; joining the maker publishes _ready
            if self._thread is not None:
                self._thread.join()
            ctx, self._ready = self._ready, None
            if ctx is None:
                ctx = z3.Context()
            self._thread = threading.Thread(target=self._make, args=(z3,), daemon=True,
                                            name="ave-z3-context")
            self._thread.start()
        return ctx

    @staticmethod
    def release(ctx: Any) -> None:
        """Drop a finished analysis' context on a helper thread (freeing a z3 context costs
        ~3 ms; it happens there when that thread holds the last reference)."""
        import threading
        threading.Thread(target=_drop, args=(ctx,), daemon=True,
                         name="ave-z3-release").start()


def _drop(ctx: Any) -> None:
    del ctx


_CONTEXTS = _FreshContexts()


@dataclass
class SolveResult:
    status: str                      # "unsat" | "sat" | "unknown"
    model: dict[str, int]            # atom text -> value (sat only): z3's own model
    reason: str = ""
    #: sat only: computes the canonical model (:meth:`Solver.canonical_model`) of the same
    #: query -- what a reported witness uses; an optimization, so only for the one kept
    refine: Any = None


class Solver:
    """Translates the analysis' symbolic tables to z3 and answers queries."""

    def __init__(self, tab: SymTable, conds: CondTable, timeout_ms: int = 2000) -> None:
        import z3  # lazy: the analysis is the only user
        self.z3 = z3
        self._ctx: Any = None
        self.tab = tab
        self.conds = conds
        self.timeout_ms = timeout_ms
        self._atoms: dict[int, Any] = {}
        self._domain: list[Any] = []
        #: the conditions of the kernel's ``ave.assume`` preconditions (tuples of condition
        #: ids), part of :attr:`_domain` since the op ran (see :meth:`assume`)
        self.assumed: set = set()
        self._assume_terms: list = []
        #: answers about barriers under branches on runtime values, shared by the
        #: variants of one analysis (Engine._always_reached / Engine._may_diverge)
        self.reach_memo: dict = {}
        self.diverge_memo: dict = {}
        #: whether sets of runtime-branch conditions of two threads hold together for some
        #: size (RaceTracker._first), shared by the variants too (domain only)
        self.race_pair_memo: dict = {}
        #: Engine._arm_possible's answers: (condition row, enclosing arms) -> arm or None
        self.arm_memo: dict = {}
        self._lin_memo: dict[tuple[int, int], Any] = {}
        self._cond_memo: dict[int, Any] = {}
        self.queries = 0
        #: seconds spent in z3 (building and checking queries, canonical models), for the
        #: latency benchmark: every query site runs inside :meth:`timed`
        self.time_s = 0.0
        self._timing = 0

    @contextlib.contextmanager
    def timed(self):
        """Count the time inside into :attr:`time_s` (nested uses count once)."""
        if self._timing:
            yield
            return
        self._timing += 1
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._timing -= 1
            self.time_s += time.perf_counter() - t0

    @contextlib.contextmanager
    def scratch(self):
        """Atoms made inside are forgotten after (their domain too): a query whose terms
        must not show in later witnesses, which list every atom the solver knew (a
        variant that made them and one that did not -- the incremental analysis and the
        full one -- gave different models). z3 terms made again are the same terms."""
        known = set(self._atoms)
        lins, conds = set(self._lin_memo), set(self._cond_memo)
        nd = len(self._domain)
        try:
            yield
        finally:
            for i in [i for i in self._atoms if i not in known]:
                del self._atoms[i]
            del self._domain[nd:]
            # (and the terms kept over them: reused, they skipped making the atom again, so
            # its domain -- sizes >= 1 -- was lost: "past X.shape[0] = 0"; a review helper)
            for k in [k for k in self._lin_memo if k not in lins]:
                del self._lin_memo[k]
            for k in [k for k in self._cond_memo if k not in conds]:
                del self._cond_memo[k]

    @property
    def ctx(self) -> Any:
        """This analysis' own z3 context (made on first use: a kernel that needs no query
        does not pay for it).

        z3's models depend on everything its context has seen, so with the shared default
        context the same kernel could get a different witness (other sizes, other program
        ids) depending on what the process checked before (a language server checks many
        files). One context per analysis: witnesses are reproducible."""
        if self._ctx is None:
            self._ctx = _CONTEXTS.take(self.z3)
        return self._ctx

    #: the order in which a witness' unknowns are made small (program ids first: the
    #: witness' block; then grid sizes, tensor sizes and strides, scalars, loaded values)
    _RANK = {"pid": 0, "nprog": 1, "dim": 2, "stride": 3, "param": 4, "load": 5, "value": 6}

    def canonical_model(self, s: Any, first: tuple = (), mentioned_only: bool = False) -> Any:
        with self.timed():
            return self._canonical_model(s, first, mentioned_only)

    def _canonical_model(self, s: Any, first: tuple = (), mentioned_only: bool = False
                         ) -> Any:
        """The lexicographically smallest model of the (satisfiable) hard assertions of
        ``s``: ``first`` minimized first, then ``|atom|`` for every atom in a fixed order
        (:data:`_RANK`, then by name). z3's own model depends on the search, which depends
        on what the process did before (z3's symbol table is global), so the same kernel
        could get another witness after other files were checked; this one is the same
        every time. Falls back to ``s``'s model when the solver budget runs out."""
        z3 = self.z3
        o = z3.Optimize(ctx=self.ctx)
        o.set("timeout", self.timeout_ms)
        o.set(priority="lex")
        o.add(*s.assertions())
        for t in first:
            o.minimize(t)
        # mentioned_only: only the atoms the assertions mention (any other is
        # unconstrained, and model completion gives it 0 -- what minimizing it gives --
        # without one optimization objective each: an unknown per thread made 128 of them,
        # past the budget); the traversal costs more than it saves on ordinary queries
        used = _constants(z3, s.assertions()) if mentioned_only else None
        items = sorted((self._RANK.get(a.kind, 9), self.tab.names[i], self._atoms[i])
                       for i, a in enumerate(self.tab.atoms)
                       if i in self._atoms and a.kind not in DERIVED
                       and (used is None or self._atoms[i].get_id() in used))
        for _, _, z in items:
            o.minimize(z3.If(z >= 0, z, -z))
        if o.check() == z3.sat:
            return o.model()
        return s.model()

    def assume(self, cids: tuple) -> None:
        """A precondition of the kernel (``ave.assume``; a conjunction of the condition
        ids ``cids``): every later query holds to it, as to the sizes' domain."""
        key = tuple(int(c) for c in cids)
        if key in self.assumed:
            return
        self.assumed.add(key)
        term = self.cond(list(key))
        self._assume_terms.append((key, term))
        self._domain.append(term)

    def assumption_state(self) -> tuple:
        """The preconditions in force, in the order they were made (a checkpoint's)."""
        return tuple(k for k, _ in self._assume_terms)

    def restore_assumptions(self, state: tuple) -> bool:
        """Put the preconditions of ``state`` (:meth:`assumption_state`) in force: they
        belong to one trip-count variant (``ave.assume(N <= KT * 32)`` reads ``N <= 32``
        where the variant fixes ``KT = 1``; kept for every later variant it hid their
        findings -- a review helper). Clears the answers decided under other ones; True
        when they changed."""
        if state == self.assumption_state():
            return False
        for _, term in self._assume_terms:
            for i in range(len(self._domain) - 1, -1, -1):
                if self._domain[i] is term:
                    del self._domain[i]
                    break
        self._assume_terms = []
        self.assumed = set()
        for key in state:
            self.assume(key)
        for memo in (self.reach_memo, self.diverge_memo, self.race_pair_memo,
                     self.arm_memo):
            memo.clear()
        return True

    def close(self) -> None:
        """The analysis is over: its z3 terms are dropped and its context freed off this
        thread (see :meth:`_FreshContexts.release`). A later query would make a new one."""
        if self._ctx is None:
            return
        self._atoms.clear()
        self._domain.clear()
        self.assumed.clear()
        self._assume_terms.clear()
        self._lin_memo.clear()
        self._cond_memo.clear()
        ctx, self._ctx = self._ctx, None
        _FreshContexts.release(ctx)

    def model_dict(self, m: Any, atoms: list | None = None) -> dict[str, int]:
        """Atom text -> value of a model (opaque terms left out), for ``atoms`` (pairs of
        atom index and z3 term; default: every atom made so far -- pass the atoms of the
        query when the model is read later, after other queries made more)."""
        out = {}
        for i, z in (self._atoms.items() if atoms is None else atoms):
            if self.tab.atoms[i].kind not in DERIVED:
                try:
                    out[self.tab.names[i]] = m.eval(z, model_completion=True).as_long()
                except Exception:
                    pass
        return out

    def atom(self, i: int) -> Any:
        z = self._atoms.get(i)
        if z is not None:
            return z
        z3 = self.z3
        a: Atom = self.tab.atoms[i]
        if a.kind == "op":
            name, (ka, ca), (kb, cb) = a.args
            x, y = self.lin(ka, ca), self.lin(kb, cb)
            if name in ("floordiv", "mod"):
                # floor division, as the GPU (arith.floordivsi), numpy and the interpreter
                # do -- z3's Int / and % are Euclidean (the remainder >= 0): 1 % -2 was 1,
                # not -1, and a read at X[n % d] below 0 was proved (a review helper).
                # Division by 0 divides by 1, as the interpreter and the engine's concrete
                # path (x // 0 = x, x % 0 = 0; it was 0 here: a read at X[n // d] for
                # d = 0 was proved), and nothing is assumed of y elsewhere (y != 0 was
                # added to every query: a path that never divides was analysed only for
                # y != 0; review helpers)
                qe, re_ = x / y, x % y
                qf = z3.If(z3.And(y < 0, re_ != 0), qe - 1, qe)
                z = z3.If(y == 0, x if name == "floordiv" else 0,
                          qf if name == "floordiv" else x - y * qf)
            elif name == "mul":
                z = x * y
            elif name in ("and", "or", "xor", "shl", "shr"):
                bx, by = z3.Int2BV(x, 32), z3.Int2BV(y, 32)
                r = {"and": lambda: bx & by, "or": lambda: bx | by, "xor": lambda: bx ^ by,
                     # (>> of a signed integer shifts arithmetically, as numpy, the
                     # interpreter and shr.s32 do: a logical shift proved o = n >> 1 >= 0
                     # for n = -2; a review helper)
                     "shl": lambda: bx << by, "shr": lambda: bx >> by}[name]()
                z = z3.BV2Int(r, is_signed=True)
            elif name == "min":
                z = z3.If(x < y, x, y)
            elif name == "max":
                z = z3.If(x > y, x, y)
            else:
                z = z3.Int(f"t{i}", self.ctx)
        elif a.kind == "select":
            cids, (ka, ca), (kb, cb), _ = a.args
            z = z3.If(self.cond(list(cids)), self.lin(ka, ca), self.lin(kb, cb))
        else:
            z = z3.Int(self.tab.names[i], self.ctx)
            if a.kind in ("dim", "stride", "nprog"):
                self._domain.append(z >= 1)
            elif a.kind == "pid":
                n = self.tab.atom_ids.get(Atom("nprog", a.args))
                self._domain.append(z >= 0)
                if n is not None:
                    self._domain.append(z < self.atom(n))
            elif a.kind == "load":
                # a value loaded from an index table is >= 0, as the bounds check assumes
                # (AVE208.md: tables are well formed): a pairing witness named
                # loaded[I] = -1, which the interpreter turns into an out-of-bounds read,
                # not the reported pairing (a review helper). A masked load whose negative
                # `other` may be taken is If(mask, element, other). At most its dtype's
                # largest value (an i8 table's 127).
                self._domain.append(z >= 0)
                rng = self.tab.ranges.get(i)
                if rng is not None:
                    self._domain.append(z <= rng[1])
            elif a.kind in ("param", "value"):
                rng = self.tab.ranges.get(i)
                if rng is not None:
                    self._domain.append(z >= rng[0])
                    self._domain.append(z <= rng[1])
        self._atoms[i] = z
        return z

    def knows(self, key: int) -> bool:
        """Every atom of ``LIN[key]`` has its z3 term already (a query over it would make
        no new one)."""
        return all(a in self._atoms for a, _ in self.tab.lins[int(key)])

    def knows_dim(self, dim: tuple) -> bool:
        """:meth:`knows` for the extent ``(tensor, d)`` (``T.shape[d]``), without making
        its symbolic atom or key when it has none."""
        a = self.tab.atom_ids.get(Atom("dim", tuple(dim)))
        return a is not None and self.tab.lin_ids.get(((a, 1),)) is not None and \
            a in self._atoms

    def knows_cond(self, cid: int) -> bool:
        """:meth:`knows` for every condition of condition id ``cid``."""
        if cid <= 1:
            return True
        return all(self.knows(c.key) for c in self.conds.sets[int(cid)])

    def lin(self, key: int, conc: int) -> Any:
        """The z3 term of ``LIN[key] + conc`` (kept: a search builds the same terms again
        and again; z3's terms are immutable and hash-consed, so a kept term is the very
        term building it again would give)."""
        k = (int(key), int(conc))
        z = self._lin_memo.get(k)
        if z is None:
            z3 = self.z3
            terms = [c * self.atom(a) for a, c in self.tab.lins[k[0]]]
            z = z3.Sum(terms) + k[1] if terms else z3.IntVal(k[1], self.ctx)
            self._lin_memo[k] = z
        return z

    def cond(self, cid: Any) -> Any:
        z3 = self.z3
        if isinstance(cid, (list, tuple)):
            return z3.And(*[self.cond(c) for c in cid]) if cid else z3.BoolVal(True, self.ctx)
        z = self._cond_memo.get(int(cid))
        if z is None:
            z = self._cond_memo[int(cid)] = self._cond(int(cid))
        return z

    def _cond(self, cid: int) -> Any:
        z3 = self.z3
        if cid == 0:
            return z3.BoolVal(True, self.ctx)
        if cid == 1:
            return z3.BoolVal(False, self.ctx)
        out = []
        for c in self.conds.sets[cid]:  # type: ignore[union-attr]
            e = self.lin(c.key, c.conc)
            out.append({"lt": e < 0, "le": e <= 0, "gt": e > 0, "ge": e >= 0, "eq": e == 0,
                        "ne": e != 0}[c.pred])
        return z3.And(*out) if out else z3.BoolVal(True, self.ctx)

    def differ(self, ka: int, ca: int, kb: int, cb: int, guard: Any,
               extra: Any = ()) -> SolveResult:
        """Can ``LIN[ka] + ca != LIN[kb] + cb`` under condition ``guard`` (and the z3
        constraints ``extra``: the variant's trip counts)?"""
        with self.timed():
            return self._differ(ka, ca, kb, cb, guard, extra)

    def _differ(self, ka: int, ca: int, kb: int, cb: int, guard: Any,
                extra: Any = ()) -> SolveResult:
        z3 = self.z3
        self.queries += 1
        s = z3.Solver(ctx=self.ctx)
        s.set("timeout", self.timeout_ms)
        lhs, rhs = self.lin(ka, ca), self.lin(kb, cb)
        g = self.cond(guard)
        s.add(*self._domain)
        s.add(*extra)
        s.add(g, lhs != rhs)
        # prefer the smallest program ids for a readable witness
        pids = [self._atoms[i] for i, a in enumerate(self.tab.atoms)
                if a.kind == "pid" and i in self._atoms]
        s.push()
        for p in pids:
            s.add(p == 0)
        r = s.check()
        if r != z3.sat:
            s.pop()
            r = s.check()
        if r == z3.unsat:
            return SolveResult("unsat", {})
        if r == z3.unknown:
            return SolveResult("unknown", {}, s.reason_unknown() or "solver budget exhausted")
        atoms = list(self._atoms.items())

        def values(m: Any) -> dict:
            out = self.model_dict(m, atoms)
            out["__lhs"] = m.eval(lhs, model_completion=True).as_long()
            out["__rhs"] = m.eval(rhs, model_completion=True).as_long()
            return out
        return SolveResult("sat", values(s.model()),
                           refine=lambda: values(self.canonical_model(s)))

    def satisfiable(self, guard: Any, extra: Any = ()) -> SolveResult:
        """Is condition ``guard`` satisfiable (for a concrete mismatch under masks), with
        the z3 constraints ``extra`` (the variant's trip counts)?"""
        with self.timed():
            return self._satisfiable(guard, extra)

    def _satisfiable(self, guard: Any, extra: Any = ()) -> SolveResult:
        z3 = self.z3
        if (guard == 0 or guard == []) and not len(extra):
            return SolveResult("sat", {})
        self.queries += 1
        s = z3.Solver(ctx=self.ctx)
        s.set("timeout", self.timeout_ms)
        s.add(*self._domain_for(guard))
        s.add(*extra)
        s.add(self.cond(guard))
        r = s.check()
        if r == z3.unsat:
            return SolveResult("unsat", {})
        if r == z3.unknown:
            return SolveResult("unknown", {}, s.reason_unknown() or "solver budget exhausted")
        atoms = list(self._atoms.items())
        return SolveResult("sat", self.model_dict(s.model(), atoms),
                           refine=lambda: self.model_dict(self.canonical_model(s), atoms))

    def _domain_for(self, guard: int) -> list:
        self.cond(guard)
        return list(self._domain)


def cond_text(tab: SymTable, conds: CondTable, cid: int) -> str:
    if cid == 0:
        return "true"
    if cid == 1:
        return "false"
    sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
    return " and ".join(f"{tab.format(c.key, c.conc)} {sym[c.pred]} 0"
                        for c in sorted(conds.sets[cid], key=repr))  # type: ignore[arg-type]


__all__ = ["Solver", "SolveResult", "cond_text", "Cond"]


def _constants(z3: Any, exprs: Any) -> set[int]:
    """The z3 ids of the uninterpreted constants (atoms) the expressions mention."""
    return set(constant_terms(z3, exprs))


def constant_terms(z3: Any, exprs: Any) -> dict[int, Any]:
    """The uninterpreted constants (atoms) the expressions mention, by z3 id."""
    seen: set[int] = set()
    out: dict[int, Any] = {}
    todo = list(exprs)
    while todo:
        e = todo.pop()
        i = e.get_id()
        if i in seen:
            continue
        seen.add(i)
        if e.num_args() == 0:
            if e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                out[i] = e
        else:
            todo.extend(e.children())
    return out
