"""The SMT side of the analysis (z3): deciding the comparisons numpy cannot.

A comparison of two tag fields reaches the solver only when the symbolic parts of the two
values differ (e.g. ``head = program_id(2) // GROUP`` against ``head = program_id(2)``),
or when the elements involved are guarded by masks over runtime sizes. The query is

    ∃ atoms:  domain(atoms) ∧ guards ∧ (lhs ≠ rhs)

``unsat`` proves the pair conforms, ``sat`` gives a model — the program ids and runtime
sizes of the witness — and ``unknown`` (the solver's budget ran out) is reported as such.
Atoms are integers: program ids in ``[0, num_programs)``, sizes and strides ``>= 1``,
loaded values unconstrained; opaque terms are defined by their operation (floor division
and modulo as in Python; bitwise ops through bit-vectors).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ave_core.analysis.symbolic import Atom, Cond, CondTable, SymTable


@dataclass
class SolveResult:
    status: str                      # "unsat" | "sat" | "unknown"
    model: dict[str, int]            # atom text -> value (sat only)
    reason: str = ""


class Solver:
    """Translates the analysis' symbolic tables to z3 and answers queries."""

    def __init__(self, tab: SymTable, conds: CondTable, timeout_ms: int = 2000) -> None:
        import z3  # lazy: the analysis is the only user
        self.z3 = z3
        self.tab = tab
        self.conds = conds
        self.timeout_ms = timeout_ms
        self._atoms: dict[int, Any] = {}
        self._domain: list[Any] = []
        self.queries = 0
        #: seconds spent in z3 (building and checking queries), for the latency benchmark
        self.time_s = 0.0

    def atom(self, i: int) -> Any:
        z = self._atoms.get(i)
        if z is not None:
            return z
        z3 = self.z3
        a: Atom = self.tab.atoms[i]
        if a.kind == "op":
            name, (ka, ca), (kb, cb) = a.args
            x, y = self.lin(ka, ca), self.lin(kb, cb)
            if name == "floordiv":
                z = z3.If(y == 0, 0, x / y)
                self._domain.append(y != 0)
            elif name == "mod":
                z = z3.If(y == 0, 0, x % y)
                self._domain.append(y != 0)
            elif name == "mul":
                z = x * y
            elif name in ("and", "or", "xor", "shl", "shr"):
                bx, by = z3.Int2BV(x, 32), z3.Int2BV(y, 32)
                r = {"and": lambda: bx & by, "or": lambda: bx | by, "xor": lambda: bx ^ by,
                     "shl": lambda: bx << by, "shr": lambda: z3.LShR(bx, by)}[name]()
                z = z3.BV2Int(r, is_signed=True)
            elif name == "min":
                z = z3.If(x < y, x, y)
            elif name == "max":
                z = z3.If(x > y, x, y)
            else:
                z = z3.Int(f"t{i}")
        else:
            z = z3.Int(str(a))
            if a.kind in ("dim", "stride", "nprog"):
                self._domain.append(z >= 1)
            elif a.kind == "pid":
                n = self.tab.atom_ids.get(Atom("nprog", a.args))
                self._domain.append(z >= 0)
                if n is not None:
                    self._domain.append(z < self.atom(n))
            elif a.kind == "param":
                pass
        self._atoms[i] = z
        return z

    def lin(self, key: int, conc: int) -> Any:
        z3 = self.z3
        terms = [c * self.atom(a) for a, c in self.tab.lins[key]]
        return z3.Sum(terms) + int(conc) if terms else z3.IntVal(int(conc))

    def cond(self, cid: Any) -> Any:
        z3 = self.z3
        if isinstance(cid, (list, tuple)):
            return z3.And(*[self.cond(c) for c in cid]) if cid else z3.BoolVal(True)
        if cid == 0:
            return z3.BoolVal(True)
        if cid == 1:
            return z3.BoolVal(False)
        out = []
        for c in self.conds.sets[cid]:  # type: ignore[union-attr]
            e = self.lin(c.key, c.conc)
            out.append({"lt": e < 0, "le": e <= 0, "gt": e > 0, "ge": e >= 0, "eq": e == 0,
                        "ne": e != 0}[c.pred])
        return z3.And(*out) if out else z3.BoolVal(True)

    def differ(self, ka: int, ca: int, kb: int, cb: int, guard: Any) -> SolveResult:
        """Can ``LIN[ka] + ca != LIN[kb] + cb`` under condition ``guard``?"""
        t0 = time.perf_counter()
        try:
            return self._differ(ka, ca, kb, cb, guard)
        finally:
            self.time_s += time.perf_counter() - t0

    def _differ(self, ka: int, ca: int, kb: int, cb: int, guard: Any) -> SolveResult:
        z3 = self.z3
        self.queries += 1
        s = z3.Solver()
        s.set("timeout", self.timeout_ms)
        lhs, rhs = self.lin(ka, ca), self.lin(kb, cb)
        g = self.cond(guard)
        s.add(*self._domain)
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
        m = s.model()
        model = {}
        for i, z in self._atoms.items():
            if self.tab.atoms[i].kind != "op":
                v = m.eval(z, model_completion=True)
                try:
                    model[str(self.tab.atoms[i])] = v.as_long()
                except Exception:
                    pass
        model["__lhs"] = m.eval(lhs, model_completion=True).as_long()
        model["__rhs"] = m.eval(rhs, model_completion=True).as_long()
        return SolveResult("sat", model)

    def satisfiable(self, guard: Any) -> SolveResult:
        """Is condition ``guard`` satisfiable (for a concrete mismatch under masks)?"""
        t0 = time.perf_counter()
        try:
            return self._satisfiable(guard)
        finally:
            self.time_s += time.perf_counter() - t0

    def _satisfiable(self, guard: Any) -> SolveResult:
        z3 = self.z3
        if guard == 0 or guard == []:
            return SolveResult("sat", {})
        self.queries += 1
        s = z3.Solver()
        s.set("timeout", self.timeout_ms)
        s.add(*self._domain_for(guard))
        s.add(self.cond(guard))
        r = s.check()
        if r == z3.unsat:
            return SolveResult("unsat", {})
        if r == z3.unknown:
            return SolveResult("unknown", {}, s.reason_unknown() or "solver budget exhausted")
        m = s.model()
        model = {}
        for i, z in self._atoms.items():
            if self.tab.atoms[i].kind != "op":
                try:
                    model[str(self.tab.atoms[i])] = m.eval(z, model_completion=True).as_long()
                except Exception:
                    pass
        return SolveResult("sat", model)

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
