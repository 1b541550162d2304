"""Symbolic integers, guards and the tag lattice, against concrete evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ave_core.analysis.engine import AnalysisLimit, Tags, agree, join, pack
from ave_core.analysis.smt import Solver
from ave_core.analysis.symbolic import (ABSENT, Atom, CondTable, SymInt, SymTable,
                                        code_conc, code_key, sym_binop, sym_compare, unpack)


def _eval(tab: SymTable, key: int, conc: int, env: dict) -> int:
    """Evaluate LIN[key] + conc with concrete atom values (opaque ops evaluated too)."""
    total = int(conc)
    for a, c in tab.lins[key]:
        atom = tab.atoms[a]
        if atom.kind == "op":
            name, (ka, ca), (kb, cb) = atom.args
            x, y = _eval(tab, ka, ca, env), _eval(tab, kb, cb, env)
            v = {"floordiv": lambda: x // y, "mod": lambda: x % y, "mul": lambda: x * y}[name]()
        else:
            v = env[atom]
        total += c * v
    return total


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["add", "sub", "mul", "floordiv", "mod"]), min_size=1,
                max_size=6),
       st.lists(st.integers(-50, 50), min_size=7, max_size=7),
       st.integers(0, 40), st.integers(1, 9))
def test_symbolic_arithmetic_matches_concrete(ops, consts, pid, size):
    tab = SymTable()
    p = Atom("pid", (0,))
    d = Atom("dim", ("A", 0))
    env = {p: pid, d: size}
    x = SymInt(np.array([tab.atom(p)], np.int32), np.array([0], np.int64))
    n = SymInt(np.array([tab.atom(d)], np.int32), np.array([0], np.int64))
    conc_x, conc_n = pid, size
    cur, ref = x, conc_x
    for i, op in enumerate(ops):
        c = consts[i]
        if op in ("floordiv", "mod"):
            c = abs(c) + 1
        rhs, rhs_ref = (n, conc_n) if i % 3 == 2 and op in ("add", "sub", "mul") else (
            SymInt.const(np.array([c])), c)
        cur = sym_binop(tab, op, cur, rhs)
        ref = {"add": lambda: ref + rhs_ref, "sub": lambda: ref - rhs_ref,
               "mul": lambda: ref * rhs_ref, "floordiv": lambda: ref // rhs_ref,
               "mod": lambda: ref % rhs_ref}[op]()
        assert _eval(tab, int(cur.key[0]), int(cur.conc[0]), env) == ref


def test_exact_division_stays_linear():
    tab = SymTable()
    pid = SymInt(np.array([tab.atom(Atom("pid", (0,)))], np.int32), np.array([0]))
    v = sym_binop(tab, "add", sym_binop(tab, "mul", pid, SymInt.const(np.array([128]))),
                  SymInt.const(np.array([70])))
    q = sym_binop(tab, "floordiv", v, SymInt.const(np.array([64])))
    r = sym_binop(tab, "mod", v, SymInt.const(np.array([64])))
    # (128 p + 70) // 64 = 2 p + 1 ; (128 p + 70) % 64 = 6: no opaque atom needed
    assert tab.lins[int(q.key[0])] == ((0, 2),) and int(q.conc[0]) == 1
    assert int(r.key[0]) == 0 and int(r.conc[0]) == 6


def test_compare_and_guards():
    tab, ct = SymTable(), CondTable()
    m = SymInt(np.zeros(4, np.int32), np.arange(4, dtype=np.int64))
    M = SymInt(np.full(4, tab.atom(Atom("dim", ("A", 0))), np.int32), np.zeros(4, np.int64))
    g = sym_compare(tab, ct, "lt", m, M)                # 4 distinct symbolic conditions
    assert len(set(g.tolist())) == 4 and all(x > 1 for x in g)
    concrete = sym_compare(tab, ct, "lt", m, SymInt.const(np.full(4, 2)))
    assert concrete.tolist() == [0, 0, 1, 1]            # true, true, false, false
    both = ct.conj_arrays(g, concrete)
    assert ct.truth(both).tolist() == [2, 2, 1, 1]
    assert ct.members(both[0]) == [int(g[0])]


def test_solver_decides_symbolic_differences():
    tab, ct = SymTable(), CondTable()
    pid = tab.atom(Atom("pid", (0,)))
    tab.atom(Atom("nprog", (0,)))
    s = Solver(tab, ct)
    # 2*pid + 1 vs 2*pid + 1: never differ; pid vs pid + 1: always differ
    two_p = tab.scale(pid, 2)
    assert s.differ(two_p, 1, two_p, 1, []).status == "unsat"
    r = s.differ(pid, 0, pid, 1, [])
    assert r.status == "sat" and r.model["program_id(0)"] == 0      # the lowest block


def _tags(n, pres, key, conc, F=2):
    t = Tags.bottom(n, F)
    t.code = np.where(np.asarray(pres), pack(np.asarray(key), np.asarray(conc)), ABSENT)
    return t


def test_packed_values_round_trip():
    keys = np.array([0, 0, 5, 123456, (1 << 23) - 1])
    concs = np.array([0, -7, 2 ** 39 - 1, -(2 ** 39) + 1, 42])
    code = pack(keys, concs)
    assert (code > 0).all()                                     # never ABSENT or TOP
    assert code_key(code).tolist() == keys.tolist()
    assert code_conc(code).tolist() == concs.tolist()
    assert [unpack(c) for c in code] == list(zip(keys.tolist(), concs.tolist()))
    # equal packed values <=> equal (key, conc)
    assert len(set(code.tolist())) == len(code)
    with pytest.raises(AnalysisLimit):
        pack(np.array([0]), np.array([2 ** 39]))


def test_lattice_agree_and_join():
    ct = CondTable()
    a = _tags(1, [[True, True]], [[0, 0]], [[3, 7]])
    b = _tags(1, [[True, False]], [[0, 0]], [[3, 0]])           # field 1 is ⊥ in b
    c = _tags(1, [[True, True]], [[0, 0]], [[4, 7]])            # field 0 differs from a
    ag = agree([a, b], ct)
    assert ag.pres.tolist() == [[True, True]] and ag.conc.tolist() == [[3, 7]]
    ag2 = agree([a, c], ct)                                     # compute drops disagreement
    assert ag2.pres.tolist() == [[False, True]]
    jn = join(a, c, ct)                                         # a join makes it ⊤
    assert jn.pres.tolist() == [[True, True]] and jn.top.tolist() == [[True, False]]
    jb = join(a, b, ct)                                         # ⊥ conforms
    assert jb.top.tolist() == [[False, False]] and jb.conc.tolist() == [[3, 7]]


def test_integers_beyond_2_62_raise_instead_of_wrapping():
    # numpy's int64 wraps: (m * 2**62) // 2**62 was 0 for m = 4 (a tag of row 4 equal to
    # row 0: a missed violation, from a review helper); 10**20 raised OverflowError
    from ave_core.analysis.symbolic import SymOverflow, SymTable, sym_add, sym_mul
    tab = SymTable()
    m = SymInt.const(np.arange(8))
    with pytest.raises(SymOverflow):
        SymInt.const(10 ** 20)
    with pytest.raises(SymOverflow):
        SymInt.const(-(1 << 62))
    assert int(SymInt.const((1 << 62) - 1).conc) == (1 << 62) - 1
    with pytest.raises(SymOverflow):
        sym_mul(tab, m, SymInt.const(1 << 60))            # 7 * 2**60 >= 2**62
    assert sym_mul(tab, m, SymInt.const(1 << 59)).conc.tolist() == [i << 59 for i in range(8)]
    big = SymInt.const(np.array([(1 << 61) + 5, 3]))
    with pytest.raises(SymOverflow):
        sym_add(tab, big, big)
    with pytest.raises(SymOverflow):
        sym_add(tab, big, SymInt.const(-(1 << 61)), -1)  # a - b
    # (the bound is on the operands' magnitudes: a sum that could reach 2**62 raises even
    # where this one would not)
    with pytest.raises(SymOverflow):
        sym_add(tab, big, SymInt.const(-(1 << 61)))
    assert sym_add(tab, big, SymInt.const(-(1 << 60))).conc.tolist() == \
        [(1 << 60) + 5, 3 - (1 << 60)]
