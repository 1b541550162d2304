"""AVE208: static out-of-bounds checks of global accesses, with hand-derived witnesses that
the interpreter's dynamic check (AVE301) reproduces."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_file, compile_source
from ave_core.interp import numerics as NUM
from ave_core.interp import run
from ave_core.lang import bf16

ROOT = pathlib.Path(__file__).resolve().parents[2]

ROWS = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def rows(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    M, N = X.shape
    m0 = ave.program_id(0) * 32
    s = ave.alloc((32, 32), ave.f32, space="shared")
    for nt in ave.range(0, (N + 31) // 32):
        n0 = nt * 32
        ave.copy(X[m0:m0 + 32, n0:n0 + 32], s, vector_bytes=16, mask={MASK})
        ave.barrier()
        ave.copy(s, Y[m0:m0 + 32, n0:n0 + 32], vector_bytes=16,
                 mask=lambda m, n: (m < M) & (n < N))
        ave.barrier()
'''


def _k(mask):
    res = compile_source(ROWS.replace("{MASK}", mask), "rows.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def _oob(k):
    return [d for d in analyze(k).diagnostics if d.code == "AVE208"]


def _interp_oob(k, M, N):
    X = np.ones((M, N), np.float32)
    res = run(k, ((M + 31) // 32,), [X, np.zeros((M, N), np.float32)])
    return [d for d in res.diagnostics if d.code == "AVE301"]


def test_correct_masks_are_clean_at_every_trip_count():
    k = _k("lambda m, n: (m < M) & (n < N)")
    assert _oob(k) == []
    assert _interp_oob(k, 40, 70) == []


def test_off_by_one_mask_witness():
    # m <= M admits row M. Block 0 (m0 = 0), the smallest M >= 1 whose row M lies in the
    # tile: M = 1, row 1. 16-byte vectors of 4 f32, 8 per row: X[1, 0] is vector 8, thread 8.
    k = _k("lambda m, n: (m <= M) & (n < N)")
    (d,) = _oob(k)
    w = d.witness
    assert w["block"] == [0, 0, 0] and w["threads"][0]["thread"] == 8
    assert w["coordinates"] == {"X": [1, 0]} and w["index"] == 1 and w["shape_dim"] == 1
    assert w["model"]["X.shape[0]"] == 1 and w["loop_indices"] == {"nt": 0}
    assert "out-of-bounds access of X[1, 0] (past X.shape[0] = 1)" in d.message
    dyn = _interp_oob(k, 1, 32)
    assert dyn and "X[1, 0]" in dyn[0].message and "thread 8" in dyn[0].message


def test_dropped_conjunct_witness():
    # no n < N: the n tile (a loop-driven offset: always checked) passes N. Trip count 1
    # stands for N in 1..32; the lowest thread reading column N = 1 is thread 0 (its vector
    # is X[0, 0:4]), element X[0, 1].
    k = _k("lambda m, n: m < M")
    (d,) = _oob(k)
    w = d.witness
    assert w["threads"][0]["thread"] == 0 and w["coordinates"] == {"X": [0, 1]}
    assert w["model"]["X.shape[1]"] == 1 and w["trip_counts"] == {"nt": 1}
    dyn = _interp_oob(k, 32, 1)
    assert dyn and "X[0, 1]" in dyn[0].message


def test_flash_attention_q_mask_bound_witness_in_the_interpreter():
    # the manifest's hand witness: block (0, 0, 0), S_Q = 1, thread 16 reads Q[0, 0, 1, 0]
    path = ROOT / "examples/broken/flash_attention_q_mask_bound.py"
    k = compile_file(str(path)).kernels[0]
    (d,) = _oob(k)
    assert d.witness["coordinates"] == {"Q": [0, 0, 1, 0]}
    assert d.witness["threads"][0]["thread"] == 16
    rng = np.random.default_rng(0)
    q = NUM.to_storage(bf16, rng.standard_normal((1, 1, 1, 128)).astype(np.float32))
    kv = [NUM.to_storage(bf16, rng.standard_normal((1, 1, 64, 128)).astype(np.float32))
          for _ in range(2)]
    res = run(k, (1, 1, 1), [q, kv[0], kv[1], np.zeros((1, 1, 1, 128), np.uint16), 0.1])
    dyn = [x for x in res.diagnostics if x.code == "AVE301"]
    assert dyn and "Q[0, 0, 1, 0]" in dyn[0].message and "thread 16" in dyn[0].message


def test_correct_examples_have_no_oob_finding():
    for name in ("gemm.py", "flash_attention.py", "moe.py", "mi300x/gemm_mfma.py"):
        for k in compile_file(str(ROOT / "examples" / name)).kernels:
            assert _oob(k) == [], name


def test_dropped_tiled_conjunct_of_a_masked_access():
    # the mask keeps n < N but drops m < M: m0 = program_id(0) * 32 is a tiled dim of a
    # masked access, so its edge is checked (the grid covers cdiv(M, 32) tiles, not M rows):
    # block 0 with M = 1, row 1, X[1, 0] moved by thread 8
    k = _k("lambda m, n: n < N")
    (d,) = _oob(k)
    w = d.witness
    assert w["coordinates"] == {"X": [1, 0]} and w["threads"][0]["thread"] == 8
    assert w["block"] == [0, 0, 0] and w["model"]["X.shape[0]"] == 1
    dyn = _interp_oob(k, 1, 32)
    assert dyn and "X[1, 0]" in dyn[0].message


def test_bound_with_an_offset_is_no_shape_precondition():
    # Y's store mask bounds m by X's M (a size of another tensor: Y.shape[0] == M is the
    # kernel's precondition) -- but M + 8 is no size: Y's own extent is checked. Block 0,
    # Y.shape[0] = 1: row 1, Y[1, 0], moved by thread 8 (16-byte vectors of s, 8 per row).
    head, tail = ROWS.replace("{MASK}", "lambda m, n: (m < M) & (n < N)").rsplit(
        "(m < M) & (n < N)", 1)
    text = head + "(m < M + 8) & (n < N)" + tail          # the store into Y only
    res = compile_source(text, "rows.py")
    k = res.kernels[0]
    (d,) = _oob(k)
    w = d.witness
    assert w["tensor"] == "Y" and w["coordinates"] == {"Y": [1, 0]}
    assert w["threads"][0]["thread"] == 8 and w["model"]["Y.shape[0]"] == 1
    assert "ave.copy(s, Y" in text.splitlines()[d.range.start.line]
    # the interpreter, with Y shaped like X as the kernel assumes: the store writes row 1
    dyn = _interp_oob(k, 1, 32)
    assert dyn and "Y[1, 0]" in dyn[0].message


#: ROWS with the column loop written over the offset itself, with a step
STEP = ROWS.replace("def rows(", "def step(").replace(
    "    for nt in ave.range(0, (N + 31) // 32):\n        n0 = nt * 32\n",
    "    for n0 in ave.range(0, N, 32):\n")
assert STEP != ROWS and "ave.range(0, N, 32)" in STEP


def _step(mask):
    res = compile_source(STEP.replace("{MASK}", mask), "step.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def test_loop_with_a_step_does_not_pin_its_bound_to_a_multiple_of_the_step():
    # `range(0, N, 32)` runs n times for N in (32(n-1), 32n]: N is not 32n. The unroller
    # used to bind N to 32n everywhere, so `n < N` admitted columns past X.shape[1]
    # (a false AVE208 from a review helper, the interpreter runs it exactly).
    k = _step("lambda m, n: (m < M) & (n < N)")
    assert _oob(k) == []
    X = np.arange(40 * 70, dtype=np.float32).reshape(40, 70)
    Y = np.zeros_like(X)
    res = run(k, (2,), [X, Y])
    assert [d for d in res.diagnostics if d.code == "AVE301"] == []
    assert np.array_equal(Y, X)


def test_loop_with_a_step_off_by_one_mask_witness():
    # n <= N admits column N. Trip count 1 (N in 1..32): the smallest N = 1, column 1 of
    # row 0 is in thread 0's 16-byte vector X[0, 0:4].
    k = _step("lambda m, n: (m < M) & (n <= N)")
    (d,) = _oob(k)
    w = d.witness
    assert w["threads"][0]["thread"] == 0 and w["coordinates"] == {"X": [0, 1]}
    assert w["model"]["X.shape[1]"] == 1 and w["trip_counts"] == {"n0": 1}
    dyn = _interp_oob(k, 32, 1)
    assert dyn and "X[0, 1]" in dyn[0].message


SELECT = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def tail(A: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2]):
    K = A.shape[1]
    s = ave.alloc((64, 32), ave.f32, space="shared")
    k0 = ave.program_id(0) * 32
    if ave.program_id(1) == 1:
        k0 = {TAIL}
    ave.copy(A[0:64, k0:k0 + 32], s, vector_bytes=4, mask=lambda m, k: k < K)
'''


def test_offset_chosen_by_a_runtime_branch_is_followed():
    # program 1 reads the last 32 columns, k0 = K - 32: below column 0 when K < 32. The
    # analysis follows k0 as If(program_id(1) == 1, K - 32, 32 * program_id(0)) (it was
    # "a tile offset is not an integer the analysis can follow", AVE205). Witness: block
    # (0, 1, 0), the smallest K = 1 -> k0 = -31, thread 0's first element A[0, -31].
    res = compile_source(SELECT.replace("{TAIL}", "K - 32"), "tail.py")
    assert res.diagnostics == []
    k = res.kernels[0]
    (d,) = analyze(k).diagnostics
    w = d.witness
    assert d.code == "AVE208" and w["block"] == [0, 1, 0]
    assert w["threads"][0]["thread"] == 0 and w["coordinates"] == {"A": [0, -31]}
    assert w["model"]["A.shape[1]"] == 1 and w["model"]["program_id(1)"] == 1
    dyn = [x for x in run(k, (1, 2), [np.ones((64, 1), np.float32),
                                      np.zeros((64, 1), np.float32)]).diagnostics
           if x.code == "AVE301"]
    assert dyn and "A[0, -31]" in dyn[0].message
    # clamped at 0: in bounds for every K and program
    ok = compile_source(SELECT.replace("{TAIL}", "ave.maximum(K - 32, 0)"), "tail.py")
    assert analyze(ok.kernels[0]).diagnostics == []


def test_offset_chosen_under_or_and_not_of_runtime_conditions():
    # (from a review helper) `not`/`or` of runtime conditions were "true": the tail offset
    # was missed under `not`, and under `or` the witness (K = 1) was one the interpreter
    # runs cleanly. Now: under `not (K >= 32)` the smallest K, 1, reads A[0, -31]; under
    # `(K > 4) | (K > 64)` the smallest K that takes the branch, 5, reads A[0, -27]
    for cond, K, col in (("not (K >= 32)", 1, -31), ("(K > 4) | (K > 64)", 5, -27)):
        text = SELECT.replace("    if ave.program_id(1) == 1:\n        k0 = {TAIL}\n",
                              f"    if {cond}:\n        k0 = K - 32\n")
        res = compile_source(text, "tail.py")
        assert res.diagnostics == []
        k = res.kernels[0]
        (d,) = analyze(k).diagnostics
        w = d.witness
        assert d.code == "AVE208" and w["model"]["A.shape[1]"] == K, cond
        assert w["coordinates"] == {"A": [0, col]}, cond
        dyn = [x for x in run(k, (1, 1), [np.ones((64, K), np.float32),
                                          np.zeros((64, K), np.float32)]).diagnostics
               if x.code == "AVE301"]
        assert dyn and f"A[0, {col}]" in dyn[0].message, cond


def test_offset_under_a_conjunction_of_more_than_four_conditions():
    # guard rows keep four conditions; a branch condition of six (from a review helper: cut
    # to four, a correct kernel got a false AVE208) stays exact: clean when every K that
    # takes the branch is >= 32, and the smallest K that takes it otherwise (K = 8 ->
    # A[0, -24])
    for first, witness in (("K >= 40", None), ("K >= 5", (8, -24))):
        cond = f"({first}) & (K > 7) & (K > 0) & (K > 1) & (K > 2) & (K > 3)"
        text = SELECT.replace("    if ave.program_id(1) == 1:\n        k0 = {TAIL}\n",
                              f"    if {cond}:\n        k0 = K - 32\n")
        ds = analyze(compile_source(text, "tail.py").kernels[0]).diagnostics
        if witness is None:
            assert ds == [], cond
        else:
            (d,) = ds
            assert d.witness["model"]["A.shape[1]"] == witness[0]
            assert d.witness["coordinates"] == {"A": [0, witness[1]]}


def test_unfollowed_comparisons_are_unknowns_of_their_own():
    # float comparisons the analysis does not follow: each its own unknown condition (two
    # on one line shared one, so `(alpha > 1) ^ (beta > 1)` was always false: the negative
    # offset was missed; a review helper) -- the interpreter hits A[0, -32] at alpha = 2
    text = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2], alpha: ave.f32, beta: ave.f32):
    s = ave.alloc((64, 32), ave.f32, space="shared")
    k0 = 0
    if (alpha > 1) ^ (beta > 1):
        k0 = -32
    ave.copy(A[0:64, k0:k0 + 32], s, vector_bytes=4,
             mask=lambda m, k: (m < A.shape[0]) & (k < A.shape[1]))
'''
    k = compile_source(text, "cmp.py").kernels[0]
    (d,) = analyze(k).diagnostics
    assert d.code == "AVE208" and d.witness["coordinates"] == {"A": [0, -32]}
    assert set(d.witness["model"]) >= {"cmp@7:9", "cmp@7:23"}
    dyn = [x for x in run(k, (1,), [np.ones((64, 32), np.float32), np.zeros((64, 32),
                                    np.float32), 2.0, 0.0]).diagnostics if x.code == "AVE301"]
    assert dyn and "A[0, -32]" in dyn[0].message


def test_a_negated_mask_states_the_extent_and_an_or_does_not():
    # B is masked by A's extent K: `k < K` states B.shape[0] == K (the kernel's
    # precondition), and so does `not (k >= K)` (it was a false AVE208, from a review
    # helper); a comparison under `|` states nothing (it used to count as one)
    text = """import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2], B: ave.Tensor[ave.f32, 2]):
    M, K = A.shape
    sB = ave.alloc((32, 64), ave.f32, space="shared")
    for kt in ave.range(0, (K + 31) // 32):
        k0 = kt * 32
        ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: {MASK})
        ave.barrier()
"""
    for mask, clean in (("k < K", True), ("not (k >= K)", True),
                        ("not (not (k < K))", True), ("not ((k >= K) | (n >= 64))", True),
                        ("(k < K) | (n > 1000)", False), ("not ((k < K) & (n < 64))", False)):
        res = compile_source(text.replace("{MASK}", mask), "bm.py")
        assert res.diagnostics == []
        assert (_oob(res.kernels[0]) == []) == clean, mask


def test_an_unmasked_copy_under_a_full_tile_condition_is_in_bounds():
    # the fast path of a tiled loop: `if k0 + 32 <= K:` copy unmasked, else masked. The
    # bounds check ignored the branch's condition: a false AVE208 at K = 1 (a review
    # helper). The condition joins the access's guard (an else-arm: its negation, when it
    # is one comparison); a condition that does not keep the tile inside still fails, with
    # the interpreter's coordinate
    from tests.analysis.test_accumulation import KERNEL, _run
    masked = "        ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))\n"
    fast = "ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: m < M)\n"
    slow = masked.replace("        ave", "            ave")
    for cond, then, other, ok in (
            ("k0 + 32 <= K", fast, slow, True),
            ("k0 + 32 > K", slow.strip() + "\n", "            " + fast, True),
            ("k0 <= K", fast, slow, False)):
        text = KERNEL.replace("{K0}", "kt * 32").replace(
            masked, f"        if {cond}:\n            {then}        else:\n{other}")
        res = compile_source(text, "b.py")
        assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
        k = res.kernels[0]
        ds = [d for d in analyze(k).diagnostics if d.code == "AVE208"]
        if ok:
            assert ds == [], (cond, [d.message for d in ds])
            for K in (8, 40, 64):
                af, bf, c = _run(k, K)
                assert np.abs(c - af @ bf).max() < 1e-3 * max(1.0, np.abs(af @ bf).max())
        else:
            (d,) = ds
            assert "A[0, 1] (past A.shape[1] = 1)" in d.message and d.witness["loop_indices"] \
                == {"kt": 0}
            from ave_core.interp import run
            a = np.zeros((64, 1), np.uint16)
            b = np.zeros((1, 64), np.uint16)
            out = run(k, (1,), [a, b, np.zeros((64, 64), np.float32)])
            assert any(x.code == "AVE301" and "A[0, 1]" in x.message for x in out.diagnostics)


_OTHER = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def copy_like(A: ave.Tensor[ave.f32, 2], B: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2]):
    M, K = A.shape
    m0 = ave.program_id(0) * 32
    s = ave.alloc((32, 32), ave.f32, space="shared")
    for kt in ave.range(0, (K + 31) // 32):
        k0 = kt * 32
        ave.copy(B[m0:m0 + 32, k0:k0 + 32], s, vector_bytes=16, mask=lambda m, k: {MASK})
        ave.barrier()
        ave.copy(s, C[m0:m0 + 32, k0:k0 + 32], vector_bytes=16, mask=lambda m, k: {MASK})
        ave.barrier()
'''


@pytest.mark.parametrize("mask,oob", [
    ("(m < M) & (k < K)", False), ("(not (m >= M)) & (not (k >= K))", False),
    # the same bound written otherwise: each lost the precondition B.shape == A.shape the
    # mask states (a false AVE208 on B and C; a review helper)
    ("(M > m) & (K > k)", False), ("~(m >= M) & ~(k >= K)", False),
    ("(m <= M - 1) & (k <= K - 1)", False), ("(M - 1 >= m) & (K + -1 >= k)", False),
    ("(not (m > M - 1)) & (k < K)", False),
    # not the same: row M is read
    ("(m <= M) & (k < K)", True), ("(M >= m) & (k < K)", True)])
def test_a_bound_written_otherwise_states_the_same_extent(mask, oob):
    res = compile_source(_OTHER.replace("{MASK}", mask), "t.py")
    assert res.diagnostics == []
    k = res.kernels[0]
    assert bool(_oob(k)) == oob, [d.message for d in _oob(k)]
    A = np.zeros((40, 70), np.float32)
    B = np.random.default_rng(9).random((40, 70)).astype(np.float32)
    C = np.zeros((40, 70), np.float32)
    dyn = [d.code for d in run(k, (2,), [A, B, C], provenance=True).diagnostics]
    assert ("AVE301" in dyn) == oob
    if not oob:
        np.testing.assert_array_equal(C, B)


_GATHER = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.bf16, 2], ids: ave.Tensor[ave.i32, 1], Y: ave.Tensor[ave.bf16, 2]):
    T, K = X.shape
    r0 = ave.program_id(0) * 16
    sX = ave.alloc((16, 64), ave.bf16, space="shared")
    Xg = ave.gather(X, ids[r0:r0 + 16], 0)
    ave.copy(Xg[{ROWS}, 0:64], sX, vector_bytes=16, mask=lambda t, kk: {MASK})
    ave.barrier()
    ave.copy(sX, Y[r0:r0 + 16, 0:64], vector_bytes=16)
'''


@pytest.mark.parametrize("mask, found", [("(t < T) & (kk < K)", False), ("kk < K", True),
                                         ("(t < 2 * T) & (kk < K)", True)])
def test_a_gathered_dimension_with_no_bound_in_the_mask(mask, found):
    # Routing tables pad with the id T (a row past X): the mask must bound the gathered
    # row. A wrong bound (`t < 2 * T`) was AVE208, no bound at all (`kk < K` only) was
    # nothing -- a masked access did not check its gathered dimension (a mutant of
    # examples/moe.py, a review helper). The interpreter (T = 5, ids padded with 5):
    # AVE301 out-of-bounds read of X[5, 0].
    res = compile_source(_GATHER.replace("{ROWS}", "0:16").replace("{MASK}", mask), "g.py")
    assert res.diagnostics == []
    k = res.kernels[0]
    codes = [d.code for d in analyze(k).diagnostics]
    assert codes == (["AVE208"] if found else []), codes
    rng = np.random.default_rng(2)
    X = NUM.to_storage(bf16, rng.standard_normal((5, 64)).astype(np.float32))
    ids = np.array([0, 3, 1, 4, 2] + [5] * 11, np.int32)
    Y = np.zeros((16, 64), np.uint16)
    dyn = [d.code for d in run(k, (1,), [X, ids, Y]).diagnostics]
    assert ("AVE301" in dyn) == (mask != "(t < T) & (kk < K)"), dyn


def test_a_slice_past_the_gathered_rows_is_a_front_end_error():
    # a gathered view has as many rows as its index (16): rows 8..23 read the index past
    # its end (the interpreter: AVE301 X[-1, 0]); the checker clamped them to the last
    # row and proved it (a review helper). Now AVE119 at the slice.
    res = compile_source(_GATHER.replace("{ROWS}", "8:24").replace("{MASK}", "kk < K"),
                         "g.py")
    (d,) = res.diagnostics
    assert d.code == "AVE119" and "slice 8:24 outside dimension 0 of extent 16" in d.message
    res = compile_source(_GATHER.replace("{ROWS}", "0:16").replace(
        "Xg = ave.gather(X, ids[r0:r0 + 16], 0)", "Xg = ave.gather(X, ids[r0:r0 + 1], 0)")
        .replace("{MASK}", "kk < K"), "g.py")
    (d,) = res.diagnostics
    assert d.code == "AVE119"


# The launch grid's contract with unmasked tiles (tests/analysis/review_cases/r14_*.py): an
# unmasked access at a program id's tile was trusted whole -- whatever else its offset held
# -- so a tile starting at X.shape[0] and a flat row's last k-tile past the row were clean
# (a review helper). Now the block's own tile is assumed to fit, (pid + 1) * stride <=
# extent, and the whole offset is checked under that.
CASES = ROOT / "tests" / "analysis" / "review_cases"


def _case(name):
    k = compile_file(str(CASES / f"{name}.py")).kernels[0]
    return k, analyze(k).diagnostics


def test_a_tile_past_the_grid_contract_is_out_of_bounds():
    # r0 = X.shape[0] + program_id(0) * 16: block 0 starts at row X.shape[0]; the smallest
    # witness is X.shape[0] = 16 (the contract: one 16-row tile fits), thread 0 at X[16, 0]
    k, ds = _case("r14_grid_start")
    (d,) = ds
    assert d.code == "AVE208" and d.witness["coordinates"] == {"X": [16, 0]}, d.message
    assert d.witness["block"] == [0, 0, 0] and d.witness["threads"][0]["thread"] == 0
    X = np.ones((16, 32), np.float32)
    res = run(k, (1,), [X, np.zeros((16, 32), np.float32)])
    assert any(x.code == "AVE301" and "X[16, 0]" in x.message for x in res.diagnostics)


def test_a_flat_rows_last_k_tile_reads_past_the_row():
    # X holds an (M, N) matrix flat, block b reads row b at b * N + t * 32 + j unmasked: for
    # N = 1, M = 1 (one block) thread 1 reads X[1] -- past X's one element
    k, ds = _case("r14_grid_flat_tail")
    (d,) = ds
    assert d.code == "AVE208" and d.witness["coordinates"] == {"X": [1]}, d.message
    assert d.witness["threads"][0]["thread"] == 1 and d.witness["loop_indices"] == {"t": 0}
    res = run(k, (1,), [np.ones(1, np.float32), np.zeros(1, np.float32)])
    assert any(x.code == "AVE301" and "X[1]" in x.message for x in res.diagnostics)
    # and for M = 3 rows of N = 40 (the last row's second k-tile ends at 3 * 40 + 24)
    res = run(k, (3,), [np.ones(120, np.float32), np.zeros(40, np.float32)])
    assert any(x.code == "AVE301" and "X[120]" in x.message for x in res.diagnostics)


def test_whole_tiles_from_either_end_are_in_bounds():
    # block b copies X's rows X.shape[0] - 16 * (b + 1) .. into Y's rows 16 * b ..: in
    # bounds for every grid of whole tiles (it was a false AVE208 "below 0" on X)
    k, ds = _case("r14_grid_ok")
    assert ds == [], [d.message for d in ds]
    X = np.random.default_rng(2).standard_normal((48, 32)).astype(np.float32)
    Y = np.zeros((48, 32), np.float32)
    res = run(k, (3,), [X, Y])
    assert res.diagnostics == []
    np.testing.assert_array_equal(Y, X.reshape(3, 16, 32)[::-1].reshape(48, 32))


# ---- a review of the grid contract (tests/analysis/review_cases/r15_grid_*.py)

def test_a_tile_counted_from_the_end_one_row_too_low():
    # r1 = X.shape[0] - (pid + 1) * 16 - 1: below 0 for the last block. The fast path's
    # bound was inverted (it took lo <= -16 for lo >= -16): proved
    k, ds = _case("r15_grid_rev_low")
    (d,) = ds
    assert "X[-1, 0] (below 0)" in d.message, d.message
    res = run(k, (3,), [np.ones((48, 32), np.float32), np.zeros((48, 32), np.float32)])
    assert any(x.code == "AVE301" and "X[-1, 0]" in x.message for x in res.diagnostics)


def test_the_contracts_answer_is_not_kept_across_trip_counts_with_assume():
    # ave.assume(KT * N >= 32): N >= 32 at KT = 1 (the tile fits), N = 16 allowed at KT =
    # 2 -- the answer of the first variant was reused by the second (a stale memo)
    k, ds = _case("r15_grid_assume_variants")
    (d,) = ds
    assert "X[16] (past X.shape[0] = 16)" in d.message, d.message
    assert d.witness["trip_counts"] == {"t": 2}, d.notes
    res = run(k, (2,), [np.ones(32, np.float32), np.ones(16, np.float32),
                        np.ones(33, np.float32)])
    assert any(x.code == "AVE301" and "X[32]" in x.message for x in res.diagnostics)


def test_a_program_id_times_two_sizes_is_a_stride():
    # base = pid * S * D ((pid * S) * D): it was trusted while pid * (S * D) was checked
    k, ds = _case("r15_grid_nested_product")
    (d,) = ds
    assert d.witness["coordinates"] == {"X": [1]} and d.witness["loop_indices"] == {"t": 0}
    res = run(k, (2,), [np.ones(30, np.float32), np.zeros((3, 5), np.float32)])
    assert any(x.code == "AVE301" and "X[30]" in x.message for x in res.diagnostics)


def test_every_unmasked_tile_of_the_launch_fits_at_once():
    # the halo X[m0 + BM:m0 + BM + 2] with X.shape[0] == Y.shape[0] + 2 fits because the
    # store's tile Y[m0:m0 + BM] fits: each access under its own contract alone was a
    # false AVE208 (a witness with Y.shape[0] = 30, outside the store's contract)
    k, ds = _case("r15_grid_halo")
    assert ds == [], [d.message for d in ds]
    res = run(k, (3,), [np.ones(98, np.float32), np.zeros(96, np.float32)])
    assert res.diagnostics == []


# ---- a second review (tests/analysis/review_cases/r16_grid_*.py)

def test_an_access_under_a_runtime_branch_states_no_contract():
    # `if m0 + 16 <= M:` full tile, else the partial tile and X[m0 - 16:m0] unmasked:
    # the full tile's contract, (pid + 1) * 16 <= M, contradicted the else-arm's
    # condition, so every search there was unsat -- X[-16] for M = 8 was proved
    k, ds = _case("r16_grid_else_arm")
    (d,) = ds
    assert "X[-1] (below 0)" in d.message and d.range.start.line == 14, d.message
    res = run(k, (1,), [np.ones(8, np.float32), np.zeros(8, np.float32)])
    assert any(x.code == "AVE301" and "X[-16]" in x.message for x in res.diagnostics)


def test_an_arm_never_taken_lends_no_stride():
    # a 32-wide window at stride 16 beside `if flag > 0:` a stride-32 tile: the arm's
    # contract proved the window; for flag = 0 block 1 reads X[32] of 32. (The arm's own
    # tile is checked under its contract where flag > 0: in bounds.)
    k, ds = _case("r16_grid_arm_stride")
    assert [d.range.start.line for d in ds] == [9], [d.message for d in ds]
    res = run(k, (2,), [np.ones(32, np.float32), np.zeros((2, 32), np.float32), 0])
    assert any(x.code == "AVE301" and "X[32]" in x.message for x in res.diagnostics)


def test_the_joint_contract_query_leaves_the_sizes_domain():
    # its atoms were forgotten but not the terms kept over them: a later query reused
    # the terms without the sizes' domain (>= 1) -- "X[0] past X.shape[0] = 0" for a
    # circular read X[n % M], in bounds for every n and M >= 1
    k, ds = _case("r16_grid_scratch_domain")
    assert ds == [], [d.message for d in ds]
    for n in (-5, 0, 63, 1000):
        res = run(k, (2,), [np.ones(64, np.float32), np.zeros(64, np.float32), n])
        assert res.diagnostics == []


# ---- a flat row per block, masked at its own row end (review_cases/r17_grid_row_end*.py)

def test_a_mask_at_the_blocks_row_end_states_the_rows_contract():
    # i < row0 + N with row0 = pid * N: the mask keeps each block inside its own row, and
    # a launch of whole rows keeps the row inside X -- the grid contract of stride N, as
    # for an unmasked tile. It was a false AVE208 (witness: N = 2 with X of one element).
    k, ds = _case("r17_grid_row_end")
    assert ds == [], [d.message for d in ds]
    rng = np.random.default_rng(4)
    for rows, N in ((3, 40), (2, 1024), (5, 1)):
        X = rng.standard_normal(rows * N).astype(np.float32)
        Y = np.full(rows * N, np.nan, np.float32)
        res = run(k, (rows,), [X, Y, N])
        assert res.diagnostics == [], [d.message for d in res.diagnostics]
        np.testing.assert_array_equal(Y, X)


def test_a_mask_one_past_the_row_end_is_out_of_bounds():
    # i < row0 + N + 1: the last row reads one element past X. Smallest witness: one
    # block, N = 1, X of one element, thread 1 at X[1] (a launch that keeps the contract)
    k, ds = _case("r17_grid_row_end_past")
    d = next(d for d in ds if "access of X[" in d.message)      # the copy from X
    assert d.code == "AVE208" and d.witness["coordinates"] == {"X": [1]}, d.message
    assert d.witness["block"] == [0, 0, 0] and d.witness["threads"][0]["thread"] == 1
    assert d.witness["model"]["N"] == 1 and d.witness["model"]["X.shape[0]"] == 1
    res = run(k, (3,), [np.ones(120, np.float32), np.zeros(120, np.float32), 40])
    assert any(x.code == "AVE301" and "X[120]" in x.message for x in res.diagnostics)


def test_a_mask_with_a_second_bound_states_no_row_end():
    # (i < row0 + N) & (i < M): the kernel expects a partial last row, so the row end is
    # no contract; the else-arm (`row0 + N > M`) re-reads the row unmasked -- past X for
    # the last block. It was proved: the row end's contract made the arm unreachable.
    k, ds = _case("r18_row_end_else_arm")
    (d,) = ds
    assert d.code == "AVE208" and d.witness["coordinates"] == {"X": [1]}, d.message
    res = run(k, (3,), [np.arange(100, dtype=np.float32), np.zeros(100, np.float32), 40])
    assert any(x.code == "AVE301" and "X[100]" in x.message for x in res.diagnostics)


def test_a_row_end_written_as_one_product():
    # i < (pid + 1) * N is the row end as i < row0 + N is (it was a false AVE208)
    k, ds = _case("r18_row_end_product")
    assert ds == [], [d.message for d in ds]
    X = np.random.default_rng(5).standard_normal(120).astype(np.float32)
    Y = np.zeros(120, np.float32)
    res = run(k, (3,), [X, Y, 40])
    assert res.diagnostics == [] and np.array_equal(X, Y)


def test_a_row_end_under_a_uniform_runtime_branch():
    # the row copy under `if flag > 0:` states its contract where the branch is taken (the
    # branch's condition, not the per-element mask rows: it stated none, a false AVE208)
    k, ds = _case("r18_row_end_branch")
    assert ds == [], [d.message for d in ds]
    X = np.random.default_rng(6).standard_normal(120).astype(np.float32)
    for flag in (1, 0):
        Y = np.zeros(120, np.float32)
        res = run(k, (3,), [X, Y, 40, flag])
        assert res.diagnostics == []
        np.testing.assert_array_equal(Y, X if flag else np.zeros(120, np.float32))


MIN_MASK = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], W: ave.Tensor[ave.f32, 3]):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    K = A.shape[1]
    z = ave.program_id(0)
    kbeg = z * 32
    kend = {KEND}
    a = ave.load(A[0:64, kbeg:kbeg + 32], tiled.a, mask=lambda m, k: {AMASK})
    b = ave.load(B[kbeg:kbeg + 32, 0:64], tiled.b, mask=lambda k, n: k < kend)
    acc = ave.mma(a, b, ave.zeros((64, 64), ave.f32, tiled.c), tiled)
    ave.store(W[z, 0:64, 0:64], acc)
'''


@pytest.mark.parametrize("kend, amask, oob", [
    # k < min(K, kend) is k < K and k < kend: B's `k < K` states B.shape[0] == K, as the
    # `&` form does (a review helper: AVE208 on B for B.shape[0] < A.shape[1])
    ("ave.minimum(K, kbeg + 32)", "k < kend", False),
    ("(K, kbeg + 32)", "k < kend", False),
    # K + 8 is no size: rows up to K + 7 are read
    ("ave.minimum(K + 8, kbeg + 32)", "k < kend", True),
])
def test_a_mask_bound_by_a_minimum_states_each_side(kend, amask, oob):
    if kend.startswith("("):        # the `&` form of the first case
        kend, amask = "kbeg + 32", "(k < K) & (k < kend)"
    src = MIN_MASK.replace("{KEND}", kend).replace("{AMASK}", amask)
    if amask.startswith("("):
        src = src.replace("mask=lambda k, n: k < kend", "mask=lambda k, n: (k < K) & (k < kend)")
    res = compile_source(src, "minmask.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    ds = _oob(res.kernels[0])
    assert bool(ds) == oob, [d.message for d in ds]


@pytest.mark.parametrize("rows, oob", [("r:r + 1", False), ("r", False), ("r:r + 2", True)])
def test_a_one_row_slice_is_an_index(rows, oob):
    # a row kernel, one row per block, columns masked: `X[r:r + 1, 0:512]` reads what
    # `X[r, 0:512]` reads, under the same grid contract (the masked width-1 slice was
    # checked with no contract: AVE208 for a grid of more blocks than rows; a review
    # helper). Two rows per block, r = pid, is a tile the mask should bound: reported.
    src = ('import ave_core.lang as ave\n@ave.kernel(threads=128)\n'
           'def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):\n'
           '    N = X.shape[1]\n    r = ave.program_id(0)\n'
           f'    s = ave.alloc({"(512,)" if rows == "r" else f"({rows[-1]}, 512)"}, ave.f32)\n'
           f'    ave.copy(X[{rows}, 0:512], s, vector_bytes=4, mask=lambda m, n: n < N)\n')
    res = compile_source(src, "row.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    assert bool(_oob(res.kernels[0])) == oob


@pytest.mark.parametrize("incremental", [True, False])
def test_a_row_end_contract_holds_in_every_trip_count_variant(incremental):
    # a store masked at its block's row end (`h < h0 + 4`, h0 = pid * 4) states the grid
    # contract (pid + 1) * 4 <= Y.shape[0]; a runtime loop before it that touches no memory
    # made later trip-count variants replay the memoized store without its contract: a
    # false AVE208 "found with 2 trips" (a review helper). Both analyses agree: clean.
    from ave_core.analysis import AnalysisOptions
    src = ('import ave_core.lang as ave\n@ave.kernel(threads=128)\n'
           'def k(Y: ave.Tensor[ave.f32, 2], n: ave.i32):\n'
           '    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))\n'
           '    h0 = ave.program_id(0) * 4\n'
           '    x = ave.zeros((16, 32), ave.f32, L)\n'
           '    for j in ave.range(0, n):\n        x = x + 1.0\n'
           '    ave.store(Y[h0:h0 + 16, 0:32], x, mask=lambda h, d: h < h0 + 4)\n')
    res = compile_source(src, "rowend.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a = analyze(res.kernels[0], AnalysisOptions(trip_bound=4, incremental=incremental))
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    # the report's bound is the analysis's (with no assertion it said 1)
    from ave_core.check import summarize
    assert a.assertions == [] and summarize(a)[1] == 4


def test_a_minimum_of_two_sizes_states_neither():
    # `K = ave.minimum(KA, B.shape[0])` says A and B may disagree: its mask `k < K` must not
    # state A.shape[1] == B.shape[0] (split into two conjuncts it did, and the unmasked read
    # of B's last rows by A's extent was proved; a review helper)
    src = ('import ave_core.lang as ave\n@ave.kernel(threads=128)\n'
           'def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], '
           'C: ave.Tensor[ave.f32, 2], D: ave.Tensor[ave.bf16, 2]):\n'
           '    M, KA = A.shape\n'
           '    K = ave.minimum(KA, B.shape[0])\n'
           '    ave.assume(KA >= 32)\n'
           '    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),'
           ' tile=(64, 64, 32))\n'
           '    acc = ave.zeros((64, 64), ave.f32, tiled.c)\n'
           '    for kt in ave.range(0, (K + 31) // 32):\n'
           '        k0 = kt * 32\n'
           '        a = ave.load(A[0:64, k0:k0 + 32], tiled.a, mask=lambda m, k: (m < M) & (k < K))\n'
           '        b = ave.load(B[k0:k0 + 32, 0:64], tiled.b, mask=lambda k, n: k < K)\n'
           '        acc = ave.mma(a, b, acc, tiled)\n'
           '    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)\n'
           '    t = ave.load(B[KA - 32:KA, 0:64], tiled.b)\n'
           '    ave.store(D[0:32, 0:64], t)\n')
    res = compile_source(src, "min2.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    ds = _oob(res.kernels[0])
    assert len(ds) == 1 and "B[" in ds[0].message and ds[0].range.start.line == 14


@pytest.mark.parametrize("budget_ms", [1, 50, 300])
def test_a_contract_the_solver_cannot_decide_is_not_assumed(budget_ms):
    # the else-arm access's grid contract contradicts its arm (`row0 + N > M`); z3 decides
    # that only with time. Undecided, the contract was taken as possible and stated: every
    # search under it unsat, the out-of-bounds read proved clean for budgets of 50-500 ms
    # (a fresh user's failing test under load). Now: a finding (the violation, or AVE205
    # where even the search gives up), never a silent pass.
    from ave_core.analysis import AnalysisOptions
    k = compile_file(str(ROOT / "tests/analysis/review_cases/r18_row_end_else_arm.py")).kernels[0]
    a = analyze(k, AnalysisOptions(solver_timeout_ms=budget_ms))
    codes = [d.code for d in a.diagnostics]
    assert codes and set(codes) <= {"AVE208", "AVE205"}, [d.message for d in a.diagnostics]
