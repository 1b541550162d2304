"""The analysis' vectorized fast paths against their plain definitions (random inputs).

Speed work replaced a few numpy idioms by cheaper ones (1-D unique of packed rows, guard
conjunctions without a sort in the common cases, a probe row before the full "atom common
to every row" test); each must give exactly what the definition gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from ave_core.analysis.accumulation import _common_atoms
from ave_core.analysis.engine import convert_index, rows_put, rows_take
from ave_core.analysis.symbolic import CondTable, _unique_1d, _unique_rows, all_last, any_last


def _conj_reference(a: np.ndarray, b: np.ndarray, width: int = 4) -> np.ndarray:
    """Guard conjunction by definition: the distinct atom ids of both rows, largest first,
    zeros last, cut to ``width``; a row with the false condition (1) is false."""
    out = np.zeros((a.shape[0], width), np.int32)
    for i in range(a.shape[0]):
        ids = sorted(({int(x) for x in a[i]} | {int(x) for x in b[i]}) - {0}, reverse=True)
        if 1 in ids:
            out[i, 0] = 1
            continue
        ids = ids[:width]
        out[i, :len(ids)] = ids
    return out


def _canonical_rows(rng, n: int, atoms: int) -> np.ndarray:
    rows = np.zeros((n, 4), np.int32)
    for i in range(n):
        k = int(rng.integers(0, atoms + 1))
        ids = sorted({int(x) for x in rng.integers(2, 9, k)}, reverse=True)[:4]
        if rng.random() < 0.05:
            ids = [1]
        rows[i, :len(ids)] = ids
    return rows


@pytest.mark.parametrize("seed", range(5))
def test_conj_arrays_matches_definition(seed):
    rng = np.random.default_rng(seed)
    ct = CondTable()
    for _ in range(200):
        n = int(rng.integers(1, 12))
        a = _canonical_rows(rng, n, int(rng.integers(0, 4)))
        b = a.copy() if rng.random() < 0.15 else _canonical_rows(rng, n, int(rng.integers(0, 4)))
        assert np.array_equal(ct.conj_arrays(a, b), _conj_reference(a, b))


@pytest.mark.parametrize("seed", range(5))
def test_conj_arrays_again_with_the_same_rows(seed):
    """A conjunction's result conjoined again with the same second rows (an MMA chain's
    accumulator meeting reused products' guards) is reused: it must equal the definition,
    truncation to 4 ids included, and stay a fresh array."""
    rng = np.random.default_rng(200 + seed)
    ct = CondTable()
    for _ in range(100):
        n = int(rng.integers(1, 12))
        x = _canonical_rows(rng, n, int(rng.integers(0, 5)))
        b = _canonical_rows(rng, n, int(rng.integers(0, 5)))
        xb = ct.conj_arrays(x, b)
        again = ct.conj_arrays(xb, b)
        assert again is not xb
        assert np.array_equal(again, _conj_reference(xb, b))
        assert np.array_equal(again, _conj_reference(x, b))


@pytest.mark.parametrize("seed", range(3))
def test_conj_arrays_many_rows_matches_definition(seed):
    """Past 256 rows with few distinct (a, b) row pairs, each pair is merged once and
    scattered back; with many distinct pairs, the flat-index merge runs on every row."""
    rng = np.random.default_rng(100 + seed)
    ct = CondTable()
    for n, distinct in ((300, 3), (1000, 7), (600, 600)):
        pool_a = _canonical_rows(rng, distinct, 3)
        pool_b = _canonical_rows(rng, distinct, 3)
        a = pool_a[rng.integers(0, distinct, n)]
        b = pool_b[rng.integers(0, distinct, n)]
        if distinct == 600:          # ids past 2**10 (fewer bits left for packing)
            a = np.where(a > 1, a + 5000, a)
            b = np.where(b > 1, b + 70000, b)
            a = -np.sort(-a, axis=1)
            b = -np.sort(-b, axis=1)
        assert np.array_equal(ct.conj_arrays(a, b), _conj_reference(a, b))


@pytest.mark.parametrize("seed", range(3))
def test_row_take_and_put_match_fancy_indexing(seed):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        n, f = int(rng.integers(1, 40)), int(rng.integers(1, 7))
        a = rng.integers(-9, 9, (n, f))
        idx = rng.integers(-n, n, int(rng.integers(0, 50)))       # repeats, negatives
        mask = rng.random(n) < 0.5
        assert np.array_equal(rows_take(a, idx), a[idx])
        assert np.array_equal(rows_take(a, mask), a[mask])
        assert np.array_equal(rows_take(a, idx.reshape(-1, 1)), a[idx.reshape(-1, 1)])
        val = rng.integers(-9, 9, (len(idx), f))
        x, y = a.copy(), a.copy()
        x[idx] = val                                 # the last write of a repeat wins
        rows_put(y, idx, val)
        assert np.array_equal(x, y)
        x[mask] = 7
        rows_put(y, mask, 7)
        assert np.array_equal(x, y)


@pytest.mark.parametrize("seed", range(5))
def test_unique_rows_matches_numpy_axis0(seed):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        n = int(rng.integers(1, 40))
        cols = [rng.integers(-5, 5, n) * int(rng.choice([1, 1000, 1 << 20]))
                for _ in range(int(rng.integers(2, 5)))]
        u, inv = _unique_rows(*cols)
        ref_u, ref_inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        assert np.array_equal(u, ref_u)
        assert np.array_equal(inv, ref_inv.reshape(-1))
    # ranges whose product overflows int64: the structured fallback
    big = [np.array([0, 1 << 40, 0]), np.array([5, -(1 << 40), 5]), np.array([1, 2, 1])]
    u, inv = _unique_rows(*big)
    assert u.tolist() == [[0, 5, 1], [1 << 40, -(1 << 40), 2]] and inv.tolist() == [0, 1, 0]


@pytest.mark.parametrize("axis", [1, 2])
def test_common_atoms_matches_definition(axis):
    rng = np.random.default_rng(axis)
    for _ in range(1000):
        W, R, K = (int(x) for x in rng.integers(1, 5, 3))
        shape = (W, R, K) if axis == 1 else (W, K, R)
        g = (rng.integers(0, 5, shape + (4,)) * (rng.random(shape + (4,)) < 0.6)).astype(
            np.int32)
        held = rng.random(shape) < 0.7
        first = np.expand_dims(np.argmax(held, axis=axis), axis)[..., None]
        cand = np.take_along_axis(g, first, axis=axis).squeeze(axis)
        if rng.random() < 0.3:                        # every row the candidate's
            g = np.broadcast_to(np.expand_dims(cand, axis), g.shape).copy()
        c = np.expand_dims(cand, axis)                # (W, 1, K, G) or (W, K, 1, G)
        inrow = np.any(g[..., None, :] == c[..., :, None], axis=-1)
        ref = np.all(inrow | ~held[..., None], axis=axis) & (cand != 0)
        assert np.array_equal(_common_atoms(g, cand, held, axis), ref)


@pytest.mark.parametrize("shape", [(7, 0), (5, 1), (9, 4), (3, 4, 6), (2, 3, 17), (0, 3)])
def test_last_axis_reductions_match_numpy(shape):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    for p in (0.05, 0.5, 0.95):
        x = rng.random(shape) < p
        assert np.array_equal(any_last(x), x.any(axis=-1))
        assert np.array_equal(all_last(x), x.all(axis=-1))
        ints = np.where(x, rng.integers(-3, 4, shape), 0)
        assert np.array_equal(any_last(ints), ints.any(axis=-1))
        assert np.array_equal(all_last(ints), ints.all(axis=-1))


def _convert_reference(src_lin, dst_lin, T, n):
    """The conversion index by definition: a register of the same thread holding the
    element (the last one), else the element's first holder (-1 if none)."""
    V1, V2 = len(src_lin) // T, len(dst_lin) // T
    first = {}
    for i, c in enumerate(src_lin.tolist()):
        first.setdefault(c, i)
    out = np.empty(T * V2, np.int64)
    for t in range(T):
        mine = dict(zip(src_lin[t * V1:(t + 1) * V1].tolist(), range(V1)))
        for j, c in enumerate(dst_lin[t * V2:(t + 1) * V2].tolist()):
            out[t * V2 + j] = t * V1 + mine[c] if c in mine else first.get(c, -1)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_convert_index_matches_definition(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        T, V1, V2 = (int(x) for x in rng.integers(1, 9, 3))
        n = int(rng.integers(1, T * max(V1, V2) + 2))
        src = rng.integers(0, n, T * V1)            # replicated and missing elements
        dst = rng.integers(0, n, T * V2)
        assert np.array_equal(convert_index(src, dst, T, n), _convert_reference(src, dst, T, n))


@pytest.mark.parametrize("seed", range(3))
def test_unique_1d_matches_numpy(seed):
    """Dense value ranges take a presence table, sparse ones np.unique: the same answer."""
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(1, 500))
        hi = int(rng.choice([3, 100, 5000, 1 << 40]))
        x = rng.integers(-hi // 2, hi, n).astype(np.int64)
        u, inv = _unique_1d(x)
        ref_u, ref_inv = np.unique(x, return_inverse=True)
        assert np.array_equal(u, ref_u) and np.array_equal(inv, ref_inv.reshape(-1))


def test_find_atomic_many_matches_find_atomic():
    """The vectorized lookup of atomic conditions (the bounds fast path) against the
    dictionary, while new conditions keep being made between lookups."""
    rng = np.random.default_rng(7)
    ct = CondTable()
    for _ in range(30):
        for _ in range(int(rng.integers(0, 40))):
            ct.atomic(str(rng.choice(["lt", "le", "eq"])), int(rng.integers(1, 20)),
                      int(rng.integers(-50, 50)))
        keys, concs = rng.integers(0, 22, 200), rng.integers(-60, 60, 200)
        for pred in ("lt", "le", "eq", "ne"):
            got = ct.find_atomic_many(pred, keys, concs)
            ref = [ct.find_atomic(pred, int(k), int(c)) for k, c in zip(keys, concs)]
            assert got.tolist() == [-1 if r is None else r for r in ref]
    # a value past int32 is never confused with another (no wrap-around in the packing)
    i = ct.atomic("lt", 3, 5)
    assert ct.find_atomic_many("lt", np.array([3, 3]), np.array([5, 5 + (1 << 32)])).tolist() \
        == [i, -1]


def test_race_read_per_granule_matches_element_path():
    """A read decided per distinct granule (lowest/highest reader) leaves the tracker in
    the same state, with the same findings, as the element-by-element definition."""
    from types import SimpleNamespace

    from ave_core.analysis.races import RaceTracker

    rng = np.random.default_rng(11)
    fields = ("w_epoch", "w_thread", "w_at", "r_epoch", "r_lo", "r_hi", "r_at", "pending",
              "p_thread", "p_at")
    reported = 0
    for _ in range(40):
        eng = SimpleNamespace(journal=None, loops=(), G=1, in_branch=0, runtime_branches=[],
                              wait_needed=lambda gran: (0, False))
        fast, slow = RaceTracker(eng, 64), RaceTracker(eng, 64)
        for step in range(30):
            kind = rng.choice(["read", "write", "barrier", "issue"], p=[0.5, 0.2, 0.15, 0.15])
            g = rng.integers(0, 64, int(rng.integers(1, 40)))
            t = rng.integers(0, int(rng.choice([1, 3, 32])), len(g))
            op = SimpleNamespace(name=f"op{step}", attrs={})
            for tr in (fast, slow):
                if kind == "read":
                    if tr is fast:
                        tr.read(g, t, op)
                    else:
                        tr._read_elements(g, t, op, tr.point(op))
                elif kind == "write":
                    ug, first = np.unique(g, return_index=True)
                    tr.write(ug, t[first], op)
                elif kind == "barrier":
                    tr.barrier()
                else:
                    tr.issue_async(g, t, op)
            for name in fields:
                assert np.array_equal(getattr(fast, name), getattr(slow, name)), (step, name)
            assert [(f["threads"], f["byte"], f["what"]) for f in fast.findings] == \
                [(f["threads"], f["byte"], f["what"]) for f in slow.findings]
        reported += len(fast.findings)
    assert reported > 0             # the finding path was exercised too


def test_granule_cache_is_bounded_and_right():
    """The per-access granule arrays are kept for at most 256 accesses (then dropped,
    without touching the engine's other tables) and equal their definition."""
    from ave_core.analysis.engine import Engine

    eng = Engine.__new__(Engine)            # only what _granules uses
    eng._tables, eng.G, eng._n_gran = {12345: np.zeros(1)}, 2, 0
    threads = np.arange(4)
    keep = []
    for i in range(600):
        addr = np.arange(4) * 4 + 16 * i
        keep.append(addr)
        byts, g, gt = eng._granules(addr, 2, threads)
        assert np.array_equal(byts, (addr // 2)[:, None] + np.arange(2))
        assert np.array_equal(g, byts.reshape(-1)) and np.array_equal(gt, np.repeat(threads, 2))
        assert eng._granules(addr, 2, threads)[1] is g          # the same arrays again
    assert eng._n_gran <= 256 and 12345 in eng._tables
    assert sum(1 for k in eng._tables if type(k) is tuple) <= 256


def test_size_upper_bound_from_trip_counts_is_sound_and_tight():
    """The bound a trip-count precondition puts on a tensor extent (the accumulation
    check's shortcut past z3), against brute force: with ``KT = cdiv(K, BK) + c`` (or a
    linear ``a*K + c``) known to satisfy ``(n-1)*st < KT - lb <= n*st``, the largest K
    that satisfies it is exactly the bound."""
    from types import SimpleNamespace

    from ave_core.analysis.accumulation import _size_upper_bound
    from ave_core.analysis.symbolic import Atom, SymInt, SymTable, sym_binop

    for bk, c, lb, st, coef, use_div in [(32, 0, 0, 1, 1, True), (16, 3, 0, 1, 1, True),
                                         (64, -2, 1, 2, 1, True), (1, 0, 0, 1, 3, False),
                                         (1, 5, 2, 1, 2, False)]:
        tab = SymTable()
        kkey = tab.atom(Atom("dim", ("A", 1)))
        K = SymInt(np.array(kkey), np.array(0))
        if use_div:             # cdiv(K, bk) = (K + bk - 1) // bk
            kt = sym_binop(tab, "floordiv", sym_binop(tab, "add", K, SymInt.const(bk - 1)),
                           SymInt.const(bk))
        else:
            kt = sym_binop(tab, "mul", K, SymInt.const(coef))
        kt = sym_binop(tab, "add", kt, SymInt.const(c))
        k, cc = int(np.asarray(kt.key).reshape(-1)[0]), int(np.asarray(kt.conc).reshape(-1)[0])
        atom = tab.atom_ids[Atom("dim", ("A", 1))]
        for n in range(1, 7):
            ub = _size_upper_bound(SimpleNamespace(tab=tab), atom, [(k, cc, lb, st, n)])

            def val(x):
                return (-(-x // bk) if use_div else coef * x) + c
            ok = [x for x in range(-50, 2000) if (n - 1) * st < val(x) - lb <= n * st]
            if ok:              # (a linear form can skip a trip count: nothing to bound)
                assert ub == max(ok), (bk, c, lb, st, coef, n, ub, max(ok))
            assert ub is not None


def test_sorting_networks_sort_every_zero_one_input():
    """The guard merge's sorting networks (4 and 8 inputs) sort every 0/1 input, hence
    every input (the 0-1 principle, Knuth TAOCP vol. 3, 5.3.4)."""
    import itertools

    from ave_core.analysis.symbolic import _NETWORKS, _sort_desc

    for size, net in _NETWORKS.items():
        bits = np.array(list(itertools.product([0, 1], repeat=size)), np.int32)   # (2**size, size)
        out = np.stack(_sort_desc([bits[:, j] for j in range(size)], net), axis=1)
        assert np.array_equal(out, -np.sort(-bits, axis=1))


@pytest.mark.parametrize("seed", range(3))
def test_merge_few_matches_definition(seed):
    """Guard rows of up to 8 atoms in all merged through the sorting networks."""
    from ave_core.analysis.symbolic import _merge_few

    rng = np.random.default_rng(300 + seed)
    for _ in range(100):
        n = int(rng.integers(1, 40))
        a = _canonical_rows(rng, n, int(rng.integers(1, 5)))
        b = _canonical_rows(rng, n, int(rng.integers(1, 5)))
        assert np.array_equal(_merge_few(a, b, 4), _conj_reference(a, b))


@pytest.mark.parametrize("seed", range(6))
def test_bounds_fast_path_matches_definition(seed):
    """The bounds checker's fast path (work per distinct linear form and offset) against
    its definition element by element: the upper bound is proved when ``c - E`` is a
    negative constant or the element's guard holds the condition ``c - E < 0`` (or, when
    no comparison built that one, ``c - E + 1 <= 0``); the lower bound when ``c``'s form
    is nonnegative and its offset is >= 0. Uniform and mixed linear forms, with and without an assumed extent."""
    from types import SimpleNamespace

    from ave_core.analysis.bounds import BoundsChecker
    from ave_core.analysis.symbolic import Atom, SymTable

    rng = np.random.default_rng(seed)
    tab, ct = SymTable(), CondTable()
    E = tab.atom(Atom("dim", ("T", 0)))
    M = tab.atom(Atom("dim", ("X", 1)))
    pid = tab.atom(Atom("pid", (0,)))
    neg = tab.scale(pid, -1)
    keys = [0, pid, tab.add(pid, tab.scale(E, 0)), tab.add(E, 0), neg, tab.add(pid, E)]
    bc = BoundsChecker(SimpleNamespace(tab=tab, conds=ct, journal=None))
    if seed % 2:
        bc.assumptions.append(("T", 0, M, 0))          # T.shape[0] == X.shape[1]
    n = 300
    key = (np.full(n, keys[1]) if seed < 2 else rng.choice(keys, n)).astype(np.int64)
    conc = rng.integers(-3, 40, n).astype(np.int64)
    guard = np.zeros((n, 4), np.int32)
    bounds = bc._bounds_of("T", 0)
    for i in range(n):                 # guards holding some of the relevant conditions
        ids = set()
        for bk, bcc in bounds:
            dk = tab.add(int(key[i]), bk, -1)
            r = rng.random()
            if r < 0.3:
                ids.add(ct.atomic("lt", dk, int(conc[i]) - bcc))
            elif r < 0.4:
                ids.add(ct.atomic("le", dk, int(conc[i]) - bcc + 1))
            elif r < 0.5:
                ids.add(ct.atomic("lt", dk, int(conc[i]) - bcc + 1))    # a weaker one
        ids = sorted(ids, reverse=True)[:4]
        guard[i, :len(ids)] = ids
    got = bc._fast("T", 0, key, conc, guard)
    ref = []
    for i in range(n):
        hi = False
        for bk, bcc in bounds:
            dk, dc = tab.add(int(key[i]), bk, -1), int(conc[i]) - bcc
            if dk == 0 and dc < 0:
                hi = True
            elif dk != 0:
                # the condition's id: `c - E < 0` if any comparison built it, else
                # `c - E + 1 <= 0`
                ce = ct.find_atomic("lt", dk, dc)
                if ce is None:
                    ce = ct.find_atomic("le", dk, dc + 1)
                hi = hi or (ce is not None and ce in set(guard[i].tolist()))
        lo = (int(key[i]) == 0 or bc._nonneg(int(key[i]))) and conc[i] >= 0
        if not (hi and lo):
            ref.append(i)
    assert got.tolist() == ref
    assert 0 < len(ref) < n


@pytest.mark.parametrize("seed", range(6))
def test_sym_compare_matches_definition(seed):
    """``a <pred> b`` elementwise: 0 (true) / 1 (false) where ``a - b`` is a constant,
    else the id of the atomic condition ``LIN[key] + conc <pred> 0``, new conditions made
    in ascending (key, conc) order (ids are part of a witness: they must not depend on
    the path taken). One linear form (the fast path), several, and constants."""
    from ave_core.analysis.symbolic import Atom, SymInt, SymTable, sym_compare

    rng = np.random.default_rng(seed)
    tab = SymTable()
    M = tab.atom(Atom("dim", ("A", 0)))
    pid = tab.atom(Atom("pid", (0,)))
    m0 = tab.scale(pid, 64)
    n = 500
    if seed < 2:       # a tile row against a size: one form
        a = SymInt(np.full(n, m0, np.int32), rng.integers(0, 64, n).astype(np.int64))
    elif seed < 4:     # mixed forms, some constant
        a = SymInt(rng.choice([0, m0, pid], n).astype(np.int32),
                   rng.integers(-5, 70, n).astype(np.int64))
    else:              # a scalar, and a 2-D shape
        a = SymInt(np.full((20, 25), m0, np.int32), rng.integers(0, 9, (20, 25)))
    b = SymInt(np.full(a.shape, M, np.int32), np.zeros(a.shape, np.int64)) if seed != 5 \
        else SymInt(np.zeros(a.shape, np.int32), np.full(a.shape, 30, np.int64))
    for pred in ("lt", "ge", "eq"):
        ct, ref_ct = CondTable(), CondTable()
        ct.atomic(pred, m0, 3)                   # some conditions exist already
        ref_ct.atomic(pred, m0, 3)
        got = sym_compare(tab, ct, pred, a, b)
        dk = np.vectorize(lambda x, y: tab.add(int(x), int(y), -1))(a.key, b.key)
        dc = a.conc - b.conc
        new = sorted({(int(k), int(c)) for k, c in zip(dk.reshape(-1), dc.reshape(-1))
                      if k != 0})
        for k, c in new:
            ref_ct.atomic(pred, k, c)
        op = {"lt": np.less, "ge": np.greater_equal, "eq": np.equal}[pred]
        ref = np.where(dk == 0, np.where(op(dc, 0), 0, 1),
                       np.vectorize(lambda k, c: ref_ct.find_atomic(pred, int(k), int(c))
                                    if k != 0 else 0)(dk, dc))
        assert got.shape == a.shape
        assert got.tolist() == ref.tolist()
        assert ct.sets == ref_ct.sets


@pytest.mark.parametrize("seed", range(4))
def test_constant_along_w_matches_definition(seed):
    """An MMA's row (column) tags: per warp and row of A (column of B), per field, the
    value of the first held element if every held element of the line holds that value
    and it is a value (> 0: not ⊥ or ⊤), ⊤ where a field the other operand lacks varies,
    else ⊥; a line with nothing held keeps its (unheld) first element's value."""
    from types import SimpleNamespace

    from ave_core.analysis.engine import ABSENT, TOP, Engine, Tags

    rng = np.random.default_rng(seed)
    W, R, C, F = 2, 5, 4, 3
    n = W * R * C
    code = rng.choice([ABSENT, TOP, 7, 9, 11], (n, F)).astype(np.int64)
    if seed % 2:                      # mostly constant lines
        code[:, 1] = np.repeat(rng.choice([7, 9], W * R), C)
    held = rng.random(n) < (0.3 if seed == 3 else 0.8)
    t = Tags(code, np.zeros((n, 4), np.int32), np.zeros(n, np.int32),
             np.zeros(n, np.int32))
    D = {"tags": t, "W": W, "shape": (R, C), "held": held}
    eng = SimpleNamespace(F=F)
    top_fields = np.array([True, False, True])
    for axis in (1, 0):
        got = Engine._constant_along_w(eng, D, axis, top_fields).code
        c3, h3 = code.reshape(W, R, C, F), held.reshape(W, R, C)
        lines = [(w, i) for w in range(W) for i in range(R if axis == 1 else C)]
        for li, (w, i) in enumerate(lines):
            idx = [(w, i, j) for j in range(C)] if axis == 1 else \
                [(w, j, i) for j in range(R)]
            hs = [h3[x] for x in idx]
            first = idx[hs.index(True)] if any(hs) else idx[0]
            for f in range(F):
                v0 = c3[first][f]
                ok = all((not h) or (c3[x][f] == v0 and c3[x][f] > 0)
                         for x, h in zip(idx, hs))
                if ok:
                    want = v0
                elif top_fields[f] and v0 != ABSENT:
                    want = TOP
                else:
                    want = ABSENT
                assert got[li, f] == want, (axis, w, i, f)


@pytest.mark.parametrize("seed", range(4))
def test_agree_and_join_codes_match_definition(seed):
    """``agree``/``join`` field values (engine._agree_code/_join_code, arithmetic on the
    packed encoding) against DESIGN §3's lattice, element by element: ⊥ conforms, equal
    values stay; agree drops differing values (⊤ stays ⊤), join makes them ⊤."""
    from ave_core.analysis.engine import _agree_code, _join_code, pack
    from ave_core.analysis.symbolic import ABSENT, TOP
    rng = np.random.default_rng(seed)
    vals = np.concatenate([[ABSENT, TOP], pack(rng.integers(0, 50, 6),
                                               rng.integers(-(1 << 38), 1 << 38, 6)),
                           pack([0, (1 << 23) - 1], [-(1 << 39) + 1, (1 << 39) - 1])])
    a = rng.choice(vals, (300, 5))
    b = rng.choice(vals, (300, 5))

    def agree1(x, y):
        if x == ABSENT:
            return y
        if y == ABSENT:
            return x
        if TOP in (x, y):
            return TOP
        return x if x == y else ABSENT

    def join1(x, y):
        if x == ABSENT:
            return y
        if y == ABSENT:
            return x
        return x if x == y and x != TOP else TOP

    want_a = np.array([[agree1(x, y) for x, y in zip(r, s)] for r, s in zip(a, b)])
    want_j = np.array([[join1(x, y) for x, y in zip(r, s)] for r, s in zip(a, b)])
    assert (_agree_code(a, b) == want_a).all()
    assert (_join_code(a, b) == want_j).all()
    assert (vals[2:] > 0).all()          # what both rest on: packed values are positive
