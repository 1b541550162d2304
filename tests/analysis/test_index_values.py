"""Index values of gathers and scatters (tests/analysis/review_cases/r7_*.py, from a review
of the checker): which unknowns the solver sees, their names in witnesses, and the sign
assumed of them -- each kernel's verdict against the interpreter's run on concrete inputs.

Findings that were false proofs before: two different index unknowns whose witness text
was the same became one z3 constant (a masked and an unmasked load of one table element;
an element read before and after the kernel rewrote the table); an index from ``ave.full``
or from floats was taken for an index table's entry (>= 0). A false positive: a gather and
a scatter through one shared index buffer had unknowns of their own per op."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_file
from ave_core.interp import numerics as NUM
from ave_core.interp import run
from ave_core.lang import bf16

CASES = pathlib.Path(__file__).resolve().parent / "review_cases"


def _analyze(name: str):
    k = compile_file(str(CASES / f"{name}.py")).kernels[0]
    return k, analyze(k)


def _rows(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((20, 32)).astype(np.float32), np.zeros((20, 32), np.float32)


def test_a_masked_index_load_is_not_the_unmasked_one():
    # i0 = Ids[p] where p < n else 0; i1 = Ids[p]: gather X by i0, scatter into Out by
    # i1 -- Out[Ids[p]] gets X[0] for p >= n. Proved before (one z3 constant for both).
    k, a = _analyze("r7_gmask0")
    (d,) = a.diagnostics
    assert d.code == "AVE201"
    note = next(n for n in d.notes if n.startswith("for "))
    # the witness: n and the table's entry (the masked load is If(p < n, Ids[p], 0))
    n = int(re.search(r"\bn = (-?\d+)", note).group(1))
    v = int(re.search(r"Ids\[0\] = (-?\d+)", note).group(1))
    assert n <= 0 and v != 0, note
    assert f"the value holds tok=0" in d.message and f"holds tok={v}" in d.message
    X, O = _rows()
    ids = np.arange(16, dtype=np.int32)
    ids[0], ids[v] = v, 0
    res = run(k, (1,), [X, O, ids, n], provenance=True)
    assert not [x for x in res.diagnostics if x.code != "AVE201"]
    np.testing.assert_array_equal(O[v], X[0])           # row tok=v holds X's tok=0
    X, O = _rows()
    run(k, (1,), [X, O, np.arange(16, dtype=np.int32), 8], provenance=True)
    np.testing.assert_array_equal(O[9], X[0])           # and for n = 8, row 9
    assert not np.array_equal(O[9], X[9])


def test_two_masked_loads_with_negative_other_are_two_unknowns_per_element():
    # i1 reads Ids shifted by one: Out[Ids[p + 1]] = X[Ids[p]]. Proved before: every
    # element's "Ids[...] or -1" was the same z3 constant.
    k, a = _analyze("r7_gmask")
    assert [d.code for d in a.diagnostics] == ["AVE201"]
    X, O = _rows()
    run(k, (1,), [X, O, np.arange(17, dtype=np.int32)], provenance=True)
    np.testing.assert_array_equal(O[1], X[0])


def test_an_index_read_after_the_kernel_rewrote_the_table_is_another_unknown():
    k, a = _analyze("r7_gver_nob")
    # (the re-read entry is what the kernel wrote -- global writes are not tracked: an
    # unknown of any sign, so the unmasked scatter through it is AVE208 too; a review
    # helper: a table the kernel shifted was trusted when read back)
    assert sorted(d.code for d in a.diagnostics) == ["AVE201", "AVE208"]
    d = next(x for x in a.diagnostics if x.code == "AVE201")
    note = next(n for n in d.notes if n.startswith("for "))
    assert "Ids[0] after write 1" in note, note
    X, O = _rows()
    ids = np.arange(16, dtype=np.int32)
    run(k, (1,), [X, O, ids], provenance=True)
    np.testing.assert_array_equal(ids, np.arange(1, 17))   # the kernel rewrote it
    np.testing.assert_array_equal(O[1], X[0])              # Out[tok=1] holds X's tok=0


@pytest.mark.parametrize("name, args, row", [
    ("r7_gneg", [], -1),                                   # ave.full(..., -1)
    ("r7_gneg2", [-1], -1),                                # ave.full(..., n), n = -1
    ("r7_gneg3", ["F"], -2),                               # cast from floats: -2.0
])
def test_indices_that_are_no_table_entries_may_be_negative(name, args, row):
    k, a = _analyze(name)
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "below 0" in d.message, d.message
    X, O = _rows()
    args = [np.full(16, -2.0, np.float32) if x == "F" else x for x in args]
    res = run(k, (1,), [X, O, *args], provenance=True)
    dyn = [x for x in res.diagnostics if x.code == "AVE301"]
    assert dyn and f"X[{row}, 0]" in dyn[0].message, [x.message for x in res.diagnostics]


def test_a_gather_and_a_scatter_through_one_shared_index_buffer():
    # Out[sI[r]] = X[sI[r]]: correct. A false AVE201 before, its witness giving sI's row
    # 0 two values under names made of object ids (another every run).
    k, a = _analyze("r7_sidx_fp")
    assert a.diagnostics == []
    assert [r.status for r in a.assertions] == ["proved"]
    X, O = _rows(3)
    ids = np.random.default_rng(3).permutation(20)[:16].astype(np.int32)
    res = run(k, (1,), [X, ids, O], provenance=True)
    assert res.diagnostics == []
    np.testing.assert_array_equal(O[ids], X[ids])


def test_a_constant_gather_index_is_followed():
    # ave.full(..., 3): row 3, every time. The witness named an unknown "loaded" value 1
    # (X[row=1], which no replay shows); now the value holds row=3, as the interpreter.
    k, a = _analyze("r7_gconst")
    pairing = [d for d in a.diagnostics if d.code == "AVE201"]
    assert len(pairing) == 1 and "the value holds row=3" in pairing[0].message
    assert not any(re.search(r"loaded|\d{9,}", n) for d in a.diagnostics for n in d.notes)
    X, O = _rows()
    run(k, (1,), [X, O, 5], provenance=True)
    np.testing.assert_array_equal(O[0], X[3])


def test_an_accumulator_kept_across_two_n_tiles_is_a_conflict():
    # acc = mma(a, b, acc * 0.5) over two N-tiles without re-zeroing: C[:, 64 + n] holds
    # B's column n too. The store's check was proved (agree dropped col); now col is ⊤ --
    # at the second N-tile's store (the static loop's nt = 1, named in the witness). The
    # scale keeps the MMA chain going (accumulation.scaled_chain), so the same bug is also
    # AVE206: acc[0, 0] sums the products of k = 0 at nt = 0 and again at nt = 1 (B's
    # column 0, then 64 -- the interpreter's C[:, 64:] holds 0.5 * (A B)[:, :64] too)
    k, a = _analyze("r7_acc_reuse3")
    (d,) = [d for d in a.diagnostics if d.code != "AVE206"]
    assert d.code == "AVE201" and "col=⊤" in d.message and "nt=1:" in d.message
    assert d.witness["loop_indices"] == {"nt": 1}
    (t,) = [d for d in a.diagnostics if d.code == "AVE206"]
    assert (t.witness["what"], t.witness["field"], t.witness["value"]) == ("twice", "k", 0)
    assert t.witness["mma_loops"] == {"first": {"nt": 0}, "again": {"nt": 1}}
    assert t.witness["accumulator"] == [0, 0]
    rng = np.random.default_rng(0)
    A = NUM.to_storage(bf16, rng.standard_normal((64, 32)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((32, 128)).astype(np.float32))
    C = np.zeros((64, 128), np.float32)
    run(k, (1,), [A, B, C])
    ref = NUM.from_storage(bf16, A).astype(np.float64) @ NUM.from_storage(bf16, B).astype(
        np.float64)
    np.testing.assert_allclose(C[:, 64:], ref[:, 64:] + 0.5 * ref[:, :64], rtol=1e-4,
                               atol=1e-3)
    assert np.abs(C[:, 64:] - ref[:, 64:]).max() > 1.0


def test_elementwise_ops_of_different_rows_drop_the_field():
    # DESIGN §2: an elementwise op keeps the fields all its inputs agree on; x1 + x0 of
    # rows 16..31 and 0..15 has no row field, so the store into Out[0:16] compares col
    # only (docs/codes/AVE201.md says so): proved, and the interpreter computes exactly
    # that sum.
    k, a = _analyze("r7_ew_rows")
    assert a.diagnostics == [] and [r.status for r in a.assertions] == ["proved"]
    X = np.random.default_rng(1).standard_normal((40, 32)).astype(np.float32)
    O = np.zeros((40, 32), np.float32)
    run(k, (1,), [X, O])
    np.testing.assert_allclose(O[:16], X[16:32].astype(np.float64) + X[:16], rtol=1e-6)


def test_a_padded_shared_index_table():
    # Ids copied into sI with `other=-1` past its E rows: sI[r] is Ids[r] where r < E,
    # else -1 -- a gather whose mask admits m < 0 reads X[-1] (every shared index was
    # taken for a table entry, >= 0: clean). The witness: E = 1, thread 8 reads X[-1, 0];
    # the interpreter says the same for E = 1. With `m >= 0` in the mask: clean.
    k, a = _analyze("r8_shared_pad")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "X[-1, 0] (below 0)" in d.message and "thread 8" in d.message
    assert "Ids.shape[0] = 1" in d.notes[0], d.notes
    X = np.random.default_rng(0).standard_normal((1, 32)).astype(np.float32)
    res = run(k, (1,), [X, np.zeros((1, 32), np.float32), np.zeros(1, np.int32)],
              provenance=True)
    (dyn,) = [x for x in res.diagnostics if x.code == "AVE301"][:1]
    assert "X[-1, 0]" in dyn.message and "thread 8 " in dyn.message
    k, a = _analyze("r8_shared_pad_ok")
    assert a.diagnostics == []
    X, O = _rows(2)
    ids = np.array([3, 1, 4, 1, 5], np.int32)
    assert run(k, (1,), [X, O, ids], provenance=True).diagnostics == []
    np.testing.assert_array_equal(O[:5], X[ids])


def test_an_index_computed_into_shared_memory_has_any_sign():
    # sI = Ids - 1, stored from registers: sI[0] = -1 for Ids[0] = 0 (clean before). The
    # stored value is kept: the witness names the table entry it came from (it named an
    # unknown sI[0] = -1)
    k, a = _analyze("r8_shared_computed")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "below 0" in d.message and "Ids[0] = 0" in d.notes[0]
    X, O = _rows()
    res = run(k, (1,), [X, O, np.arange(16, dtype=np.int32)], provenance=True)
    assert any(x.code == "AVE301" and "X[-1, 0]" in x.message for x in res.diagnostics)


# ----------------------------------------------------------------------------- round 2
# (tests/analysis/review_cases/r9_*.py: a second review of the above)

def _ids(n=16):
    return np.arange(n, dtype=np.int32)


@pytest.mark.parametrize("name, code, dyn, args", [
    # copy into sI, no barrier, gather: thread 1's write races with thread 0's read
    ("r9_r1", "AVE207", "AVE304", lambda X, O: [X, _ids(), O]),
    # sI never written
    ("r9_r2", "AVE203", "AVE303", lambda X, O: [X, _ids(), O]),
    # the loop refills sI while the last gather's reads are in the same epoch
    ("r9_r4", "AVE207", "AVE304", lambda X, O: [np.zeros((40, 32), np.float32), _ids(32),
                                                 np.zeros((32, 32), np.float32)]),
])
def test_a_gathers_shared_index_read_is_a_read(name, code, dyn, args):
    # The index rows a gather reads from shared memory went through no check: no race,
    # no uninitialized read, no copy in flight was reported (a review helper). They are
    # read as the interpreter reads them: by thread 0, at the gather.
    k, a = _analyze(name)
    assert code in [d.code for d in a.diagnostics], [d.format_text() for d in a.diagnostics]
    X, O = _rows()
    res = run(k, (1,), args(X, O), provenance=True)
    assert dyn in [d.code for d in res.diagnostics]


@pytest.mark.parametrize("name", ["r9_fp1", "r9_fp2", "r9_fpv"])
def test_indices_through_shared_memory_or_where_keep_their_values(name):
    # fp1: a masked copy of Ids into sI and a masked load of Ids under the same mask are
    # the same values (If(p < n, Ids[p], 0) both); fp2: Ids staged in shared memory and
    # loaded into registers is the table's entries, >= 0 (it was of any sign: a false
    # AVE208); fpv: where(coord >= 0, i0, 0) is i0. Each was a finding; the interpreter
    # runs them clean.
    k, a = _analyze(name)
    assert a.diagnostics == [], [d.format_text() for d in a.diagnostics]
    X, O = _rows(4)
    ids = np.random.default_rng(4).permutation(20)[:16].astype(np.int32)
    args = {"r9_fp1": [X, O, ids, 5], "r9_fp2": [X, ids, O], "r9_fpv": [X, O, ids]}[name]
    res = run(k, (1,), args, provenance=True)
    assert res.diagnostics == []


def test_a_constant_index_staged_in_shared_memory():
    # ave.store(sI, ave.full(..., -1)): the bytes are known -- -1, below 0 (was >= 0)
    k, a = _analyze("r9_m2")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "X[-1, 0] (below 0)" in d.message
    X, O = _rows()
    res = run(k, (1,), [X, O], provenance=True)
    assert any(x.code == "AVE301" and "X[-1, 0]" in x.message for x in res.diagnostics)


def test_a_right_shift_is_arithmetic_and_arguments_are_i32():
    # o = n >> 1: the solver shifted logically (o >= 0 always: proved) and took n as any
    # integer (a witness n = 5717214012). Now: found, with an i32 n; the interpreter reads
    # below X for a negative n.
    k, a = _analyze("r9_s1")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "below 0" in d.message
    n = int(re.search(r"n = (-?\d+)", d.notes[0]).group(1))
    assert -2**31 <= n < 0
    X = np.arange(200, dtype=np.float32)
    res = run(k, (1,), [X, np.zeros(128, np.float32), -2], provenance=True)
    assert any(x.code == "AVE301" for x in res.diagnostics)


def test_narrow_index_arithmetic_may_wrap():
    # an i8 table's 127 + 1 is -128: followed as 128 before (clean); now not followed, of
    # any sign -- the gather below 0 is reported, as the interpreter's X[-128, 0]
    k, a = _analyze("r9_w1")
    assert [d.code for d in a.diagnostics] == ["AVE208"]
    X, O = _rows()
    ids = np.zeros(16, np.int8)
    ids[0] = 127
    res = run(k, (1,), [X, O, ids], provenance=True)
    assert any(x.code == "AVE301" and "X[-128, 0]" in x.message for x in res.diagnostics)


# ----------------------------------------------------------------------------- round 3
# (tests/analysis/review_cases/r10_*.py)

def test_an_unmasked_gather_checks_the_lower_side_of_a_computed_index():
    # idx = Ids - 1 with no mask: a dimension indexed by a loaded value is trusted to the
    # tables, but the form was trusted whole -- X[-1] for Ids[r] = 0 went unreported.
    # The lower side of a form not >= 0 by its atoms is checked now.
    k, a = _analyze("r10_f9_minus")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "X[-1, 0] (below 0)" in d.message and "Ids[0] = 0" in d.notes[0]
    X, O = _rows()
    res = run(k, (1,), [X, O, np.arange(16, dtype=np.int32)], provenance=True)
    assert any(x.code == "AVE301" and "X[-1, 0]" in x.message for x in res.diagnostics)


def test_a_clamped_index_is_followed():
    # ave.maximum(ids - 1, 0): >= 0 (min/max were not followed: any sign, a false AVE208)
    k, a = _analyze("r10_f5_clamp")
    assert a.diagnostics == []


def test_the_low_half_of_an_index_table_entry_is_not_the_entry():
    # an i16 view of an i32 table: its low half of 65535 is -1 (it was taken for the
    # entry, >= 0: clean)
    k, a = _analyze("r10_f1_lowhalf")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "below 0" in d.message


def test_narrow_scalar_arithmetic_wraps():
    # an i8 n + 100 < 0 for n = 28 (128 wraps to -128): the witness is that n, exactly
    k, a = _analyze("r10_f4_i8")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "X[-32] (below 0)" in d.message
    n = int(re.search(r"\bn = (-?\d+)", d.notes[0]).group(1))
    assert 28 <= n <= 127 and ((n + 100 + 128) % 256) - 128 < 0
    X = np.arange(64, dtype=np.float32)
    res = run(k, (1,), [X, np.zeros(32, np.float32), np.int8(n)], provenance=True)
    assert any(x.code == "AVE301" and "X[-32]" in x.message for x in res.diagnostics)


def test_an_index_buffer_refilled_in_a_uniform_branch_is_one_value():
    # if n > 0: sI = Ids[0:16] else: sI = Ids[16:32]; Out[sI[r]] = X[sI[r]]: correct
    # (a false AVE201 whose witness gave sI[0] two values)
    k, a = _analyze("r10_f3_branch")
    assert a.diagnostics == [] and [r.status for r in a.assertions] == ["proved"]
    for n in (0, 1):
        X = np.random.default_rng(n).standard_normal((40, 32)).astype(np.float32)
        O = np.zeros((40, 32), np.float32)
        ids = np.random.default_rng(7).permutation(40)[:32].astype(np.int32)
        assert run(k, (1,), [X, ids, O, n], provenance=True).diagnostics == []
        sel = ids[:16] if n > 0 else ids[16:]
        np.testing.assert_array_equal(O[sel], X[sel])


def test_split_k_with_an_accumulator_started_from_c():
    # D = (C + A[:, :32] B[:32]) + A[:, 32:] B[32:]: the C-initialized accumulator's MMAs
    # are not followed, so the other term's chain was checked alone ("never accumulates
    # k=0", a false AVE206); the interpreter computes D = C + A B.
    k, a = _analyze("r10_splitk")
    assert a.diagnostics == []
    D, a64, b64, c64 = _run_split_k(k, 64, 3)
    np.testing.assert_allclose(D, c64 + a64 @ b64, rtol=1e-4, atol=1e-3)


def _run_split_k(k, K: int, seed: int):
    """Run a split-K kernel (A: 64 x K bf16, B: K x 64 bf16, C, D: 64 x 64 f32) in the
    interpreter's provenance mode (no finding): D and the float64 A, B, C."""
    rng = np.random.default_rng(seed)
    A = NUM.to_storage(bf16, rng.standard_normal((64, K)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((K, 64)).astype(np.float32))
    C = rng.standard_normal((64, 64)).astype(np.float32)
    D = np.zeros((64, 64), np.float32)
    assert run(k, (1,), [A, B, C, D], provenance=True).diagnostics == []
    a64, b64 = (NUM.from_storage(bf16, x).astype(np.float64) for x in (A, B))
    return D, a64, b64, C.astype(np.float64)


def test_split_k_with_a_k_tile_summed_twice_in_the_followed_term():
    # the same, with the second accumulator's k-tile 1 added twice: D = C + A0 B0 + 2 A1
    # B1. The followed term was not checked at all beside a C-initialized one (clean);
    # "at most once" holds for it alone -- k=32 twice, thread 0, the first k of tile 1
    k, a = _analyze("r15_splitk_twice")
    (d,) = a.diagnostics
    assert d.code == "AVE206" and "repeats k=32" in d.message and "thread 0 " in d.message
    assert [r.location.range.start.line for r in d.related][:2] == [16, 17]
    D, a64, b64, c64 = _run_split_k(k, 64, 5)
    right = c64 + a64 @ b64
    twice = right + a64[:, 32:] @ b64[32:]           # what the kernel computes
    np.testing.assert_allclose(D, twice, rtol=1e-4, atol=1e-3)
    assert np.abs(D - right).max() > 1.0


@pytest.mark.parametrize("name, twice", [("r16_splitk_three", False),
                                         ("r16_splitk_three_twice", True)])
def test_split_k_with_three_accumulators(name, twice):
    # D = (C + A0 B0 + A1 B1) + A2 B2 as (acc + acc2) + acc3, acc from C: the sum's
    # followed part is acc2's and acc3's chains together ("at most once"). It was "never
    # accumulates k=0" for acc3 alone -- a false AVE206 on the correct kernel, and the
    # wrong message where acc2 and acc3 both sum k-tile 1 (k = 32 twice)
    k, a = _analyze(name)
    if not twice:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
    else:
        (d,) = a.diagnostics
        assert d.code == "AVE206" and "repeats k=32" in d.message, d.message
    D, a64, b64, c64 = _run_split_k(k, 96, 7)
    want = c64 + a64 @ b64
    if twice:       # k-tile 1 twice, k-tile 2 never
        want = want + a64[:, 32:64] @ b64[32:64] - a64[:, 64:] @ b64[64:]
    np.testing.assert_allclose(D, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name, twice", [("r17_bias_first", False),
                                         ("r17_bias_first_twice", True)])
def test_a_loaded_bias_added_before_the_accumulators(name, twice):
    # D = C + A0 B0 + A1 B1 written `c + ev + od`, c loaded: the bias sums no k, so the
    # sum continues both chains. It ended the first one there, checked alone: a false
    # "never accumulates k=0", and `c + ev + ev` (k-tile 0 twice) was clean
    k, a = _analyze(name)
    if not twice:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
    else:
        (d,) = a.diagnostics
        assert d.code == "AVE206" and "repeats k=0" in d.message, d.message
    D, a64, b64, c64 = _run_split_k(k, 64, 9)
    want = c64 + a64 @ b64
    if twice:       # k-tile 0 twice, k-tile 1 never
        want = want + a64[:, :32] @ b64[:32] - a64[:, 32:] @ b64[32:]
    np.testing.assert_allclose(D, want, rtol=1e-4, atol=1e-3)


# ----------------------------------------------------------------------------- round 4
# (tests/analysis/review_cases/r11_*.py)

@pytest.mark.parametrize("name, args, where", [
    # a division under `if d > 0` made every query assume d != 0: the read at d = 0 proved
    ("r11_z3k", lambda: [np.arange(64, dtype=np.float32), np.zeros(64, np.float32),
                         np.arange(64, dtype=np.float32), 0], "X[-32]"),
    # z3's % is Euclidean (1 % -2 = 1), the GPU's and numpy's floor (-1)
    ("r11_m1", lambda: [np.arange(64, dtype=np.float32), np.zeros(32, np.float32), 1, -2],
     "X[-1]"),
])
def test_division_is_floor_division_and_assumes_nothing_elsewhere(name, args, where):
    k, a = _analyze(name)
    (d,) = a.diagnostics
    assert d.code == "AVE208" and f"{where} (below 0)" in d.message, d.message
    res = run(k, (1,), args(), provenance=True)
    assert any(x.code == "AVE301" and where in x.message for x in res.diagnostics)


@pytest.mark.parametrize("name", ["r11_s2", "r11_ub1"])
def test_shared_index_bytes_of_two_writers_are_not_table_entries(name):
    # s2: a masked store of coord - 1 over zeros (row 0: -1 for n >= 1); ub1: -1 padding
    # refilled from Ids only when n > 0. Both were taken for table entries (>= 0): clean.
    k, a = _analyze(name)
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "X[-1, 0] (below 0)" in d.message
    X, O = _rows()
    args = [X, O, 4] if name == "r11_s2" else [X, np.arange(16, dtype=np.int32), O, 0]
    res = run(k, (1,), args, provenance=True)
    assert any(x.code == "AVE301" and "X[-1, 0]" in x.message for x in res.diagnostics)
    if name == "r11_ub1":
        assert "n = 0" in d.notes[0]          # the witness takes the path without the copy


def test_a_constant_row_among_table_entries_is_checked():
    # where(coord < 8, ids, 100000): one table entry in the fragment trusted the whole
    # dimension -- the constant rows past X went unreported; thread 64 reads X[100000]
    k, a = _analyze("r11_g1")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "X[100000, 0]" in d.message and "thread 64" in d.message
    X, O = _rows()
    res = run(k, (1,), [X, O, np.arange(16, dtype=np.int32)], provenance=True)
    assert any(x.code == "AVE301" and "X[100000, 0]" in x.message for x in res.diagnostics)


def test_a_large_index_table_staged_in_shared_memory_keeps_the_table_contract():
    # 2,048 entries copied into sI: past the per-element registration they were unknowns
    # of any sign (a false AVE208, "sI[0] = -1"); they are table entries, >= 0
    k, a = _analyze("r11_b1")
    assert a.diagnostics == [] and [r.status for r in a.assertions] == ["proved"]


# ----------------------------------------------------------------------------- round 5
# (tests/analysis/review_cases/r12_*.py)

def test_division_by_zero_is_division_by_one_everywhere():
    # n // d with d = 0: the interpreter (and the engine's concrete path) divide by 1,
    # z3 made it 0 -- a read at X[n // 0] = X[n] < 0 was proved (a review helper)
    k, a = _analyze("r12_d1")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "below 0" in d.message and "d = 0" in d.notes[0]
    n = int(re.search(r"\bn = (-?\d+)", d.notes[0]).group(1))
    res = run(k, (1,), [np.arange(64, dtype=np.float32), np.zeros(32, np.float32), n, 0],
              provenance=True)
    assert any(x.code == "AVE301" and f"X[{n}]" in x.message for x in res.diagnostics)


@pytest.mark.parametrize("name", ["r12_u1", "r12_b2048"])
def test_table_arms_of_a_fill_keep_the_table_contract(name):
    # u1: If(n > 0, Ids[r], -1) read only under n > 0 (its negative arm made the whole
    # form checked: Ids[0] = 1 "past X.shape[0] = 1"); b2048: a masked copy of 2,048
    # entries padded with -1, read where E >= 16 (unknowns of any sign: "sI[0] = -1").
    k, a = _analyze(name)
    assert a.diagnostics == [], [d.format_text() for d in a.diagnostics]
    X = np.random.default_rng(2).standard_normal((20, 32)).astype(np.float32)
    O = np.zeros((20, 32), np.float32)
    if name == "r12_u1":
        ids = (np.arange(32) * 7 % 20).astype(np.int32)
        for n in (1, 0, -3):
            assert run(k, (1,), [X, ids, O, n], provenance=True).diagnostics == []
    else:
        ids = (np.arange(40) * 3 % 20).astype(np.int32)
        assert run(k, (1,), [X, ids, O], provenance=True).diagnostics == []
        np.testing.assert_array_equal(O[:16], X[ids[:16]])


def test_a_table_entry_plus_a_constant_is_checked_past_the_end():
    # where(coord < 8, ids, ids + 100000): the upper side of forms of table entries was
    # trusted (only a bare entry is, by the table contract): thread 64 reads X[100008]
    k, a = _analyze("r12_g2")
    (d,) = a.diagnostics
    assert d.code == "AVE208" and "past X.shape[0]" in d.message and "thread 64" in d.message
    X, O = _rows()
    res = run(k, (1,), [X, O, np.arange(16, dtype=np.int32)], provenance=True)
    assert any(x.code == "AVE301" and "X[100008, 0]" in x.message for x in res.diagnostics)


# ----------------------------------------------------------------------------- round 6

def test_a_table_the_kernel_rewrote_is_not_trusted_when_read_back():
    # Ids += 1, then a gather by Ids re-read: trusted as a table entry (a bare entry is in
    # bounds by the table contract) -- the last row reads X[20] for a well-formed Ids
    # (a review helper). What the kernel wrote is an unknown of any sign: found.
    k, a = _analyze("r13_w2")
    assert [d.code for d in a.diagnostics] == ["AVE208"]
    X, O = _rows()
    ids = np.arange(16, dtype=np.int32)
    ids[15] = 19
    res = run(k, (1,), [X, O, ids], provenance=True)
    assert any(x.code == "AVE301" and "X[20, 0]" in x.message for x in res.diagnostics)


def test_a_table_entry_with_a_program_id_keeps_the_grid_trust():
    # max(Ids[r], pid): the contract bounded the entry only, the pid was free -- "past
    # the end" for a grid that does not cover X (a review helper); trusted as pid forms are
    k, a = _analyze("r13_f1")
    assert a.diagnostics == []
    X = np.random.default_rng(5).standard_normal((64, 32)).astype(np.float32)
    O = np.zeros((64, 32), np.float32)
    ids = np.random.default_rng(6).integers(0, 64, 64).astype(np.int32)
    assert run(k, (4,), [X, O, ids], provenance=True).diagnostics == []


# ----------------------------------------------------------------------------- round 18
# (tests/analysis/review_cases/r18_*.py: a review of the global-data terms of AVE206)

def _bias_run(k, flag: int, where: bool = False):
    rng = np.random.default_rng(11)
    A = NUM.to_storage(bf16, rng.standard_normal((64, 64)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((64, 64)).astype(np.float32))
    C = rng.standard_normal((64, 64)).astype(np.float32)
    D = np.zeros((64, 64), np.float32)
    assert run(k, (1,), [A, B, C, D, flag]).diagnostics == []
    a64, b64 = (NUM.from_storage(bf16, x).astype(np.float64) for x in (A, B))
    c64 = C.astype(np.float64)
    bias = np.where(c64 > 0, c64, 0) if where else c64 * (2.0 if flag <= 0 else 1.0)
    np.testing.assert_allclose(D, bias + a64 @ b64, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", ["r18_bias_where", "r18_bias_branch"])
def test_a_bias_through_where_or_a_branch_is_global_data(name):
    # bias (picked by ave.where, or by a runtime branch) + even + odd: the bias is still
    # loaded data alone -- the sum continues both chains (it ended them: a false "never
    # accumulates k=0")
    k, a = _analyze(name)
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    if name == "r18_bias_where":
        _bias_run(k, flag=1, where=True)
    else:
        _bias_run(k, flag=1)
        _bias_run(k, flag=0)


def test_an_accumulator_read_modified_and_written_through_global_memory():
    # C += A B one k-tile per iteration (load C, one MMA, store C): C holds the partial
    # sum the kernel stored, not a bias -- no chain starts at the load (it was "never
    # accumulates k=0 ... at kt=1": each iteration's one MMA checked as the whole sum)
    k, a = _analyze("r18_rmw_global")
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    rng = np.random.default_rng(12)
    for K in (64, 96):
        A = NUM.to_storage(bf16, rng.standard_normal((64, K)).astype(np.float32))
        B = NUM.to_storage(bf16, rng.standard_normal((K, 64)).astype(np.float32))
        C = np.zeros((64, 64), np.float32)
        assert run(k, (1,), [A, B, C]).diagnostics == []
        ref = NUM.from_storage(bf16, A).astype(np.float64) @ \
            NUM.from_storage(bf16, B).astype(np.float64)
        np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-3)


def test_a_loaded_accumulator_through_a_guarded_loop_misses_the_partial_tile():
    # W = C + A B from a loaded C, full k-tiles only (`if k0 + 32 <= K`): a partial last
    # tile is never summed. The chain from the loaded C is followed through the branch
    # (it was AVE205 "cannot be followed"), as from ave.zeros: AVE206 "never"
    k, a = _analyze("r18_loaded_c_branch")
    (d,) = a.diagnostics
    assert d.code == "AVE206" and d.witness["what"] == "never", d.message
    k0, K = d.witness["value"], d.witness["model"]["A.shape[1]"]
    assert K % 32 != 0 and K - K % 32 <= k0 < K, d.witness
    rng = np.random.default_rng(13)
    A = NUM.to_storage(bf16, rng.standard_normal((64, 40)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((40, 64)).astype(np.float32))
    C = rng.standard_normal((64, 64)).astype(np.float32)
    W = np.zeros((64, 64), np.float32)
    assert run(k, (1,), [A, B, C, W]).diagnostics == []
    a64, b64 = (NUM.from_storage(bf16, x).astype(np.float64) for x in (A, B))
    np.testing.assert_allclose(W, C + a64[:, :32] @ b64[:32], rtol=1e-4, atol=1e-3)
    assert np.abs(W - (C + a64 @ b64)).max() > 0.1          # k = 32..39 never summed


def test_split_k_on_a_linearised_grid():
    # block pid: output rows (pid // 2) * 64, k-half (pid % 2) * 64, its partial sum into
    # its own workspace slab. The k offset and the rows share program_id(0), yet two blocks
    # (pid and pid ^ 1) compute the same rows over other k: "at least once" is not asked of
    # one block (it was a false "never accumulates k=0", program_id(0) = 1)
    k, a = _analyze("r18_splitk_linear")
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    rng = np.random.default_rng(14)
    A = NUM.to_storage(bf16, rng.standard_normal((128, 128)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((128, 64)).astype(np.float32))
    W = np.zeros((256, 64), np.float32)
    assert run(k, (4,), [A, B, W]).diagnostics == []
    ref = NUM.from_storage(bf16, A).astype(np.float64) @ \
        NUM.from_storage(bf16, B).astype(np.float64)
    np.testing.assert_allclose(W[:128] + W[128:], ref, rtol=1e-4, atol=1e-3)


STAGED_INDEX = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1], Out: ave.Tensor[ave.f32, 2]):
    X = ave.tag(X, lambda t, c: ave.label(token=t, col=c))
    Out = ave.tag(Out, lambda p, c: ave.label(token=p // 2, col=c))
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    sIds = ave.alloc((16,), ave.i32)
    sTok = ave.alloc((16,), ave.i32)
    ave.copy(Ids[0:16], sIds, vector_bytes=4)
    ave.barrier()
    ave.store(sTok, ave.load(sIds, IDX) // 2{PLUS})
    ave.barrier()
    x = ave.load(ave.gather(X, sTok, 0)[0:16, 0:32], L)
    ave.store(ave.scatter(Out, sIds, 0)[0:16, 0:32], x)
'''


@pytest.mark.parametrize("plus", ["", " + 1"])
def test_an_index_computed_in_registers_and_staged_in_shared_memory(plus):
    # token = pair // 2 computed from a routing table, stored to shared memory for every
    # warp's gather: it read back as an unknown of any sign -- AVE208 at X[-1] and AVE201
    # "token=1 but token=0" with Ids[0] = 0 (a review helper). The stored value is kept:
    # clean; `+ 1` is a real mismatch, named by its form.
    from ave_core.compiler.frontend import compile_source
    res = compile_source(STAGED_INDEX.replace("{PLUS}", plus), "staged.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a = analyze(k)
    if not plus:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
        rng = np.random.default_rng(27)
        X = rng.standard_normal((16, 32)).astype(np.float32)
        Ids = rng.permutation(16).astype(np.int32)
        Out = np.full((16, 32), np.nan, np.float32)
        run(k, (1,), [X, Ids, Out])
        assert np.array_equal(Out[Ids], X[Ids // 2])
    else:
        d = next(d for d in a.diagnostics if d.code == "AVE201")
        assert "token=(Ids[0] // 2) + 1" in d.message and "token=(Ids[0] // 2)" in d.message
