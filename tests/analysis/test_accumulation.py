"""AVE206: every accumulator element receives each k of its reduction exactly once.

Small GEMM kernels (64 x 64 x 32 tiles, 2 x 2 warps of m16n8k16): the k-tile a loop
iteration reads is moved, everything else correct (every MMA still pairs A and B on the same
k, so AVE201 cannot see it). Witnesses are derived by hand and confirmed in the interpreter:
the output element the witness names lacks (or doubles) exactly the product it names.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_source
from ave_core.interp import numerics as NUM
from ave_core.interp import run
from ave_core.lang import bf16

ROOT = pathlib.Path(__file__).resolve().parents[2]

KERNEL = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(64, 64, 32))
    sA = ave.alloc((64, 32), ave.bf16, space="shared")
    sB = ave.alloc((32, 64), ave.bf16, space="shared")
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in ave.range(0, (K + 31) // 32):
        k0 = {K0}
        ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))
        ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)
        ave.barrier()
        acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)
        ave.barrier()
    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)
'''
MMA_LINE = KERNEL.splitlines().index(
    "        acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)")


def _kernel(k0: str):
    res = compile_source(KERNEL.replace("{K0}", k0), "acc.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def _run(kernel, K: int):
    rng = np.random.default_rng(1)
    a = NUM.to_storage(bf16, rng.standard_normal((64, K)).astype(np.float32))
    b = NUM.to_storage(bf16, rng.standard_normal((K, 64)).astype(np.float32))
    c = np.zeros((64, 64), np.float32)
    run(kernel, (1,), [a, b, c], checks=False)
    af = NUM.from_storage(bf16, a).astype(np.float64)
    bf = NUM.from_storage(bf16, b).astype(np.float64)
    return af, bf, c


def _acc206(kernel, **kw):
    a = analyze(kernel, **kw)
    return a, [d for d in a.diagnostics if d.code == "AVE206"]


def test_correct_tiles_proved_for_every_trip_count_with_tails():
    a, d = _acc206(_kernel("kt * 32"))
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved" and r.coverage == 1.0 and r.trip_bound >= 3


def test_shifted_tile_never_accumulates_k0():
    # Iteration kt reads k-tile kt + 1. Trip count 1 stands for K in 1..32: the one
    # iteration reads k 32..63, all masked (k < K fails), so k = 0 < K is never summed.
    # Minimal witness: warp 0, thread 0, its first accumulator c0 = (row 0, col 0), k = 0.
    k = _kernel("(kt + 1) * 32")
    a, (d,) = _acc206(k)
    assert d.range.start.line == MMA_LINE
    w = d.witness
    assert w["what"] == "never" and w["field"] == "k" and w["value"] == 0
    assert w["threads"][0] == {"thread": 0, "warp": 0, "lane": 0}
    assert w["accumulator"] == [0, 0] and w["coordinates"] == {"acc": [0, 0], "k": 0}
    assert w["trip_counts"] == {"kt": 1}
    K = w["model"]["A.shape[1]"]
    assert 1 <= K <= 32
    assert "never accumulates k=0 into acc[0, 0]" in d.message
    # the interpreter: C[0, 0] lacks A[0, 0] * B[0, 0] -- here everything: the only tile
    # read (k 32..63) is masked, so the sum is empty
    af, bf, c = _run(k, K)
    got = float(c[0, 0])
    assert got == 0.0
    assert abs(got - float(af[0, :K] @ bf[:K, 0])) > 1e-3


def test_repeated_tile_accumulates_k_twice():
    # Every iteration reads k-tile 0: trip count 1 (K in 1..32) is right; trip count 2
    # (K in 33..64) reads tile 0 at kt = 0 and again at kt = 1, so k = 0 is summed twice
    # (and tile 1 never; "twice" is reported first).
    k = _kernel("kt * 0")
    a, (d,) = _acc206(k)
    w = d.witness
    assert w["what"] == "twice" and w["value"] == 0 and w["field"] == "k"
    assert w["mma_loops"] == {"first": {"kt": 0}, "again": {"kt": 1}}
    assert w["trip_counts"] == {"kt": 2}
    assert w["threads"][0]["thread"] == 0 and w["accumulator"] == [0, 0]
    assert "accumulation repeats k=0" in d.message
    K = 40
    af, bf, c = _run(k, K)
    twice = 2 * float(af[0, :32] @ bf[:32, 0])
    assert abs(float(c[0, 0]) - twice) < 1e-2 * max(1.0, abs(twice))


@pytest.mark.parametrize("bound", [1, 2, 6])
def test_no_finding_at_any_trip_bound(bound):
    from ave_core.analysis import AnalysisOptions
    a, d = _acc206(_kernel("kt * 32"), options=AnalysisOptions(trip_bound=bound))
    assert d == []


# --- sums of accumulators (found by a review helper: both were false AVE206) --------------

MMA_OF = "ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), {C}, tiled)"
MMA_STMT = "        acc = " + MMA_OF.replace("{C}", "acc")


def _summed(body: list[str], before: list[str] = (), after: list[str] = ()):
    text = KERNEL.replace("{K0}", "kt * 32").replace(MMA_STMT, "\n".join(body))
    text = text.replace("    for kt in", "\n".join(list(before) + ["    for kt in"]))
    text = text.replace("    ave.store(", "\n".join(list(after) + ["    ave.store("]))
    res = compile_source(text, "sum.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


ZEROS = "ave.zeros((64, 64), ave.f32, tiled.c)"


def _exact(kernel, K=72):
    af, bf, c = _run(kernel, K)
    ref = af @ bf
    assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())


def test_a_sum_of_one_step_chains_is_one_chain():
    # acc = acc + mma(a, b, 0): each k-tile's products are added once -- proved, the
    # output exact; the add does not end a chain of one MMA (which lacks the other tiles)
    k = _summed(["        acc = acc + " + MMA_OF.replace("{C}", ZEROS)])
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved" and r.coverage == 1.0
    _exact(k)


def test_a_sum_that_adds_each_tile_twice_is_caught():
    step = "        acc = acc + " + MMA_OF.replace("{C}", ZEROS)
    k = _summed([step, step])
    a, (d,) = _acc206(k)
    w = d.witness
    assert w["what"] == "twice" and w["value"] == 0 and w["field"] == "k"
    assert w["mma_loops"] == {"first": {"kt": 0}, "again": {"kt": 0}}
    assert w["trip_counts"] == {"kt": 1}
    assert w["threads"][0]["thread"] == 0 and w["accumulator"] == [0, 0]
    af, bf, c = _run(k, 40)
    ref = af @ bf
    assert abs(float(c[0, 0]) - 2 * ref[0, 0]) < 1e-2 * max(1.0, abs(ref[0, 0]))


def test_two_accumulators_summed_at_the_end():
    # even k-tiles into acc, odd into acc1, acc + acc1 stored: every k once
    body = ["        if kt % 2 == 0:", "            acc = " + MMA_OF.replace("{C}", "acc"),
            "        else:", "            acc1 = " + MMA_OF.replace("{C}", "acc1")]
    k = _summed(body, before=["    acc1 = " + ZEROS], after=["    acc = acc + acc1"])
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    _exact(k)
    # acc added twice: the even tiles twice (k = 0 first)
    k2 = _summed(body, before=["    acc1 = " + ZEROS], after=["    acc = acc + acc + acc1"])
    a2, (d2,) = _acc206(k2)
    assert d2.witness["what"] == "twice" and d2.witness["value"] == 0


def test_a_tagged_term_of_global_data_continues_the_chain():
    # acc + mma(a, b, 0) + (a tile loaded from global memory): the loaded term sums no k
    # (FragVal.global_data), so the chain goes on -- each k once, no finding (it ended the
    # chain, checked alone: a false "never accumulates")
    term = "ave.cast(ave.load(A[0:64, 0:64], tiled.c, mask=lambda m, k: (m < M) & (k < K)), ave.f32)"
    k = _summed(["        acc = acc + " + MMA_OF.replace("{C}", ZEROS) + " + " + term])
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved"
    # the interpreter: C = A B + KT * A[:, 0:64] (K = 72: three k-tiles, each once)
    af, bf, c = _run(k, 72)
    ref = af @ bf + 3 * af[:, 0:64]
    assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())


def test_a_bias_added_before_two_accumulators():
    # bias + even + odd (the bias first): the sum continues both chains -- proved; the
    # even tiles twice (bias + acc + acc) is "repeats k=0" (the bias ended the first chain,
    # checked alone: a false "never accumulates", and the repeat went unseen)
    body = ["        if kt % 2 == 0:", "            acc = " + MMA_OF.replace("{C}", "acc"),
            "        else:", "            acc1 = " + MMA_OF.replace("{C}", "acc1")]
    bias = "ave.cast(ave.load(A[0:64, 0:64], tiled.c, mask=lambda m, k: (m < M) & (k < K)), ave.f32)"
    k = _summed(body, before=["    acc1 = " + ZEROS], after=[f"    acc = {bias} + acc + acc1"])
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    af, bf, c = _run(k, 72)
    ref = af @ bf + af[:, 0:64]
    assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())
    k2 = _summed(body, before=["    acc1 = " + ZEROS], after=[f"    acc = {bias} + acc + acc"])
    a2, (d2,) = _acc206(k2)
    assert d2.witness["what"] == "twice" and d2.witness["value"] == 0
    af, bf, c = _run(k2, 72)
    even = af[:, 0:32] @ bf[0:32] + af[:, 64:72] @ bf[64:72]
    ref2 = 2 * even + af[:, 0:64]
    assert np.abs(c - ref2).max() < 1e-3 * max(1.0, np.abs(ref2).max())


def test_an_accumulator_started_from_a_loaded_tile_is_followed():
    # D = C + A B with acc loaded from global memory: the chain starts there (it was not
    # followed: a tile read twice was clean)
    k = _summed([MMA_STMT], before=[
        "    acc = ave.cast(ave.load(A[0:64, 0:64], tiled.c, mask=lambda m, k: (m < M) & "
        "(k < K)), ave.f32)"])
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved"
    start = ("    acc = ave.cast(ave.load(A[0:64, 0:64], tiled.c, mask=lambda m, k: (m < M) & "
             "(k < K)), ave.f32)")
    bad = _summed([MMA_STMT, MMA_STMT], before=[start])     # each k-tile twice
    a, (d,) = _acc206(bad)
    assert d.witness["what"] == "twice" and d.witness["value"] == 0
    af, bf, c = _run(bad, 72)
    ref = 2 * (af @ bf) + af[:, 0:64]
    assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())


# --- MMAs under branches on runtime values (found by a review helper: proved before) -------

def _branch(cond: str):
    body = [f"        if {cond}:", "            acc = " + MMA_OF.replace("{C}", "acc")]
    return _summed(body)


def test_mma_skipped_for_the_last_partial_tile_is_caught():
    # `if kt * 32 + 32 <= K`: the last tile is skipped unless K is a multiple of 32. Trip
    # count 1 (K in 1..32): the smallest K = 1 skips tile 0, so k = 0 is never summed
    # (thread 0, acc[0, 0]); the interpreter's C[0, 0] stays 0 at K = 40 for tile 1...
    k = _branch("kt * 32 + 32 <= K")
    a, (d,) = _acc206(k)
    w = d.witness
    assert w["what"] == "never" and w["value"] == 0 and w["trip_counts"] == {"kt": 1}
    assert w["model"]["A.shape[1]"] == 1
    assert w["threads"][0]["thread"] == 0 and w["accumulator"] == [0, 0]
    # ... at K = 40 tile 1 (k = 32..39) is skipped: C = A[:, :32] @ B[:32, :]
    af, bf, c = _run(k, 40)
    ref = af[:, :32] @ bf[:32, :]
    assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())


def test_mma_under_a_condition_every_iteration_meets_is_proved():
    # kt * 32 < K holds in every iteration the loop runs (kt < cdiv(K, 32))
    k = _branch("kt * 32 < K")
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved"
    _exact(k)


# --- loops with other steps and starts (from a review helper: false AVE206/AVE208) --------

LOOP = "    for kt in ave.range(0, (K + 31) // 32):\n        k0 = {K0}\n"
STEPS = {
    "range(0, K, 32)": ("    for k0 in ave.range(0, K, 32):\n", True),
    "range(0, 2 * KT, 2)": ("    for kt2 in ave.range(0, (K + 31) // 32 * 2, 2):\n"
                            "        k0 = kt2 * 16\n", True),
    "range(0, -K, -32)": ("    for j in ave.range(0, -K, -32):\n        k0 = -j\n", True),
    "range(KT - 1, -1, -1)": ("    for j in ave.range((K + 31) // 32 - 1, -1, -1):\n"
                              "        k0 = j * 32\n", True),
    "range(32, K, 32)": ("    for k0 in ave.range(32, K, 32):\n", False),
    # a start known only at run time makes the k indices symbolic: z3 compares them (they
    # were skipped, and this one, missing tile 0, was proved; from a review helper)
    "range(KT - 1, 0, -1)": ("    for j in ave.range((K + 31) // 32 - 1, 0, -1):\n"
                             "        k0 = j * 32\n", False),
    "range(0, K, 64)": ("    for k0 in ave.range(0, K, 64):\n", False),
}


@pytest.mark.parametrize("loop", list(STEPS))
def test_loops_with_any_step_and_start(loop):
    # the trip count of range(lb, ub, st) constrains ub - lb to ((n-1)*st, n*st] (mirrored
    # for st < 0), whether the start is a constant or not: the correct loops are proved
    # (and exact in the interpreter); a loop that starts one tile late or steps over every
    # other tile misses k = 0 or k = 32
    head, correct = STEPS[loop]
    text = KERNEL.replace(LOOP, head).replace("{K0}", "kt * 32")
    res = compile_source(text, "steps.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, d = _acc206(k)
    if correct:
        assert a.diagnostics == [] and d == []
        for K in (8, 40, 96):
            af, bf, c = _run(k, K)
            ref = af @ bf
            assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())
    else:
        (x,) = d
        assert x.witness["what"] == "never"
        assert x.witness["value"] == (32 if loop == "range(0, K, 64)" else 0)


def test_chains_a_branch_does_not_extend_are_unknown_not_proved():
    # (from a review helper) an arm that resets the accumulator: the other arm's chain was
    # made before the branch, it is no extension of the reset one -- was "proved" while C
    # is 0 for K > 64; an MMA in an else-arm (the negated condition is no conjunction):
    # was unchecked. Both are AVE205 now, at the chain's first MMA / the MMA
    reset = _summed([MMA_STMT, "        if K > 64:", "            acc = " + ZEROS])
    a, d = _acc206(reset)
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "unknown" and "resets" in r.reason and d == []
    assert [x.code for x in a.diagnostics] == ["AVE205"]
    af, bf, c = _run(reset, 96)
    assert np.abs(c).max() == 0.0              # (the bug the analysis must not prove away)
    other = _summed(["        if kt * 32 + 32 <= K:", "            acc = acc",
                     "        else:", "            acc = " + MMA_OF.replace("{C}", "acc")])
    a, d = _acc206(other)
    assert [r.status for r in a.assertions if r.kind == "accumulate"] == ["unknown"]


def test_an_mma_outside_the_loop_is_named_by_its_line():
    # The k-loop sums tile 0 at kt = 0, and one more MMA after the loop sums it again: the
    # message read "at kt=0 and again at again" and the related location "accumulated
    # again ()" (a review helper). The MMA in the loop is on line 11 (0-based 10), the one
    # after it on line 12: the related locations name them, the message does not (a
    # line number in it changed with every line added above: --watch, baselines).
    text = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2), tile=(64, 64, 32))
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in ave.range(0, (K + 31) // 32):
        acc = ave.mma(ave.load(A[0:64, kt * 32:kt * 32 + 32], tiled.a, mask=lambda m, k: k < K), ave.load(B[kt * 32:kt * 32 + 32, 0:64], tiled.b, mask=lambda k, n: k < K), acc, tiled)
    acc = ave.mma(ave.load(A[0:64, 0:32], tiled.a, mask=lambda m, k: k < K), ave.load(B[0:32, 0:64], tiled.b, mask=lambda k, n: k < K), acc, tiled)
    ave.store(C[0:64, 0:64], acc)
'''
    from ave_core.compiler.frontend import compile_source
    (d,) = [d for d in analyze(compile_source(text, "t.py").kernels[0]).diagnostics
            if d.code == "AVE206"]
    assert d.message.endswith("accumulates it into acc[0, 0] at kt=0 and again by an MMA "
                              "outside every loop"), d.message
    labels = [r.message for r in d.related]
    assert labels[:2] == ["k=0 accumulated (kt=0)", "k=0 accumulated again"], labels
    assert [r.location.range.start.line for r in d.related[:2]] == [10, 11]


@pytest.mark.parametrize("k0,complete", [("kt * 32", True), ("(kt + 1) * 32", False)])
def test_the_sum_runs_over_the_k_both_operands_have(k0, complete):
    # K = ave.minimum(K, B.shape[0]) (the README tour's "the k extent A and B share") with
    # masks k < K: for sizes where B has fewer k than A, k >= B.shape[0] was "never
    # accumulated, though A.shape[1] > k puts it in the sum" (a review helper's refactor
    # of gemm.py); an index only A has cannot be paired, so the sum is over both extents.
    # A skipped k-tile is still reported.
    text = KERNEL.replace("    M, K = A.shape\n",
                          "    M, K = A.shape\n    K = ave.minimum(K, B.shape[0])\n")
    res = compile_source(text.replace("{K0}", k0), "acc.py")
    assert res.diagnostics == []
    codes = [d.code for d in analyze(res.kernels[0]).diagnostics]
    assert ("AVE206" in codes) != complete, codes


_SPLIT = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def wb(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(32, 32, 32))
    a = ave.load(A[0:32, 0:32], tiled.a)
    b = ave.load(B[0:32, 0:32], tiled.b)
    acc = ave.zeros((32, 32), ave.f32, tiled.c)
{BODY}
    ave.store(C[0:32, 0:32], acc)
'''


@pytest.mark.parametrize("body, verdict", [
    # warps 2 and 3 (rows 16..31) skip the MMA: their acc stays 0 (the interpreter: rows
    # 16..31 of C are 0). The chain was dropped at the branch without a word -- no AVE206
    # check at all, "proved" (a review helper).
    ("    if ave.warp_id() < 2:\n        acc = ave.mma(a, b, acc, tiled)", "violated"),
    # every warp runs one of the arms' MMAs: each warp receives k = 0..31 once
    ("    if ave.warp_id() < 2:\n        acc = ave.mma(a, b, acc, tiled)\n"
     "    else:\n        acc = ave.mma(a, b, acc, tiled)", "proved"),
    # every warp takes the arm
    ("    if ave.warp_id() < 4:\n        acc = ave.mma(a, b, acc, tiled)", "proved"),
    # an arm that resets the accumulator after an MMA before the branch: not followed
    ("    acc = ave.mma(a, b, acc, tiled)\n    if ave.warp_id() < 2:\n"
     "        acc = ave.zeros((32, 32), ave.f32, tiled.c)\n"
     "        acc = ave.mma(a, b, acc, tiled)", "unknown"),
    # arms that split a warp (an MMA is a warp's instruction): not followed -- they were
    # "proved" while rows 4..7, 12..15, ... got nothing (a second review helper)
    ("    if ave.lane_id() < 16:\n        acc = ave.mma(a, b, acc, tiled)", "unknown"),
    ("    if ave.thread_id() < 48:\n        acc = ave.mma(a, b, acc, tiled)\n"
     "    else:\n        acc = ave.mma(a, b, acc, tiled)", "unknown"),
    # each warp-id arm stores its own chain: the other arm's warps are no consumers there
    # (they were "incomplete")
    ("    if ave.warp_id() < 2:\n        acc = ave.mma(a, b, acc, tiled)\n"
     "        ave.store(C[0:32, 0:32], acc)\n"
     "    else:\n        acc = ave.mma(a, b, acc, tiled)\n"
     "        ave.store(C[0:32, 0:32], acc)", "proved"),
])
def test_chains_through_branches_on_warp_ids(body, verdict):
    res = compile_source(_SPLIT.replace("{BODY}", body), "wb.py")
    assert res.diagnostics == []
    k = res.kernels[0]
    a, d = _acc206(k)
    rs = [r for r in a.assertions if r.kind == "accumulate"]
    assert rs and {r.status for r in rs} == {verdict}, \
        ([(r.status, r.reason) for r in rs], [x.format_text() for x in a.diagnostics])
    if verdict == "unknown":
        assert [x.code for x in a.diagnostics] == ["AVE205"]
    rng = np.random.default_rng(3)
    A = NUM.to_storage(bf16, rng.standard_normal((32, 32)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((32, 32)).astype(np.float32))
    C = np.zeros((32, 32), np.float32)
    run(k, (1,), [A, B, C], checks=False)
    ref = NUM.from_storage(bf16, A).astype(np.float64) @ NUM.from_storage(bf16, B).astype(
        np.float64)
    if verdict == "proved":
        np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-4)
    if verdict == "violated":
        (x,) = d
        w = x.witness
        # the lowest thread of the first warp that runs no MMA: warp 2 (rows 16..31)
        assert w["threads"][0] == {"thread": 64, "warp": 2, "lane": 0}
        row = w["accumulator"][0]
        assert 16 <= row < 32 and C[row, w["accumulator"][1]] == 0.0
        assert np.abs(C[:16] - ref[:16]).max() < 1e-3


# --- split-K across blocks: each block sums its own k range ---------------------------------

SPLIT_K = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], W: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    k0 = ave.program_id({AXIS}) * 64
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    acc = ave.mma(ave.load(A[{M0}:{M0} + 64, k0:k0 + 32], tiled.a),
                  ave.load(B[k0:k0 + 32, 0:64], tiled.b), acc, tiled)
    acc = ave.mma(ave.load(A[{M0}:{M0} + 64, {K1}:{K1} + 32], tiled.a),
                  ave.load(B[{K1}:{K1} + 32, 0:64], tiled.b), acc, tiled)
    w0 = ave.program_id({AXIS}) * 64
    ave.store(W[w0:w0 + 64, 0:64], acc)
'''


def _split_k(axis: int, m0: str, k1: str):
    text = SPLIT_K.replace("{AXIS}", str(axis)).replace("{M0}", m0).replace("{K1}", k1)
    res = compile_source(text, "splitk.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def _run_split(kernel, grid, arows: int):
    rng = np.random.default_rng(3)
    a = NUM.to_storage(bf16, rng.standard_normal((arows, 128)).astype(np.float32))
    b = NUM.to_storage(bf16, rng.standard_normal((128, 64)).astype(np.float32))
    w = np.zeros((128, 64), np.float32)
    run(kernel, grid, [a, b, w], checks=False)
    return (NUM.from_storage(bf16, a).astype(np.float64),
            NUM.from_storage(bf16, b).astype(np.float64), w)


def test_split_k_across_blocks_is_not_incomplete():
    # block z sums k in [64 z, 64 z + 64) into its own rows of the workspace W; the two
    # partial sums make A B. One block's chain lacks the other's k by design: "at least
    # once" is not asked of it (it was a false "never accumulates k=0", program_id(2) = 1)
    k = _split_k(2, "0", "k0 + 32")
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    af, bf, w = _run_split(k, (1, 1, 2), 64)
    ref = af @ bf
    got = w[0:64] + w[64:128]
    assert np.abs(got - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())
    # a block that reads its first k-tile twice: still "repeats"
    k2 = _split_k(2, "0", "k0")
    a2, (d2,) = _acc206(k2)
    assert d2.witness["what"] == "twice"


def test_k_range_by_the_output_rows_block_is_still_complete_or_not():
    # the k offset depends on program_id(0), which also picks the output rows: one block
    # computes each output element alone, so "at least once" is asked -- block 1 (rows
    # 64..127) sums k in 64..127 only and never k = 0
    k = _split_k(0, "k0", "k0 + 32")
    a, (d,) = _acc206(k)
    w = d.witness
    assert w["what"] == "never" and w["value"] == 0
    assert w["model"]["program_id(0)"] == 1
    af, bf, out = _run_split(k, (2,), 128)
    ref = af[64:128] @ bf
    assert abs(float(out[64, 0]) - float(ref[0, 0])) > 1e-3      # lacks k < 64
    part = af[64:128, 64:128] @ bf[64:128]
    assert np.abs(out[64:128] - part).max() < 1e-3 * max(1.0, np.abs(part).max())


# --- scaled accumulators: a scale keeps the MMA chain (the online softmax) -----------------

def test_rescaled_between_mmas_is_followed_and_a_repeated_tile_caught():
    # acc = acc * 0.5 before each MMA: the scale sums no k, the chain goes on through it
    # (it ended there, and each one-MMA chain after it was not followed: nothing checked).
    # With every iteration reading k-tile 0, trip count 2 sums k = 0 at kt = 0 and again
    # at kt = 1; the interpreter's C[0, 0] is 0.5 * P + P for P the tile-0 product.
    step = ["        acc = acc * 0.5", MMA_STMT]
    ok = _summed(step)
    a, d = _acc206(ok)
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved" and r.coverage == 1.0
    bad = compile_source(KERNEL.replace("{K0}", "kt * 0").replace(
        MMA_STMT, "\n".join(step)), "scaled.py").kernels[0]
    a, (d,) = _acc206(bad)
    w = d.witness
    assert (w["what"], w["field"], w["value"]) == ("twice", "k", 0)
    assert w["mma_loops"] == {"first": {"kt": 0}, "again": {"kt": 1}}
    assert w["trip_counts"] == {"kt": 2} and w["accumulator"] == [0, 0]
    af, bf, c = _run(bad, 40)
    p = float(af[0, :32] @ bf[:32, 0])
    assert abs(float(c[0, 0]) - 1.5 * p) < 1e-2 * max(1.0, abs(p))


def test_a_scale_after_the_last_mma_keeps_at_least_once():
    # The epilogue's acc * 2.0 before the store: the chain is checked at the store, in
    # full -- the shifted tile (iteration kt reads tile kt + 1) still never sums k = 0
    k = compile_source(KERNEL.replace("{K0}", "(kt + 1) * 32").replace(
        "    ave.store(", "    acc = acc * 2.0\n    ave.store("), "epi.py").kernels[0]
    a, (d,) = _acc206(k)
    assert (d.witness["what"], d.witness["value"]) == ("never", 0)
    assert d.range.start.line == MMA_LINE
    assert d.witness["trip_counts"] == {"kt": 1}


FA = (ROOT / "examples" / "flash_attention.py").read_text(encoding="utf-8")


def _fa(text: str, config: int = 0):
    res = compile_source(text, "fa.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return next(k for k in res.kernels if k.config_index == config)


def _line(text: str, code: str) -> int:
    (i,) = [i for i, ln in enumerate(text.splitlines()) if ln.strip().startswith(code)]
    return i


def test_flash_attention_p_v_chains_are_checked():
    # O += P V_j with o rescaled by alpha before each MMA: both halves' chains are followed
    # over every KV block -- an "accumulate" verdict each, proved
    a = analyze(_fa(FA))
    got = sorted(r.loc.range.start.line for r in a.assertions
                 if r.kind == "accumulate" and r.status == "proved")
    assert got == sorted([_line(FA, "acc = ave.mma(q, k, acc, tqk)"),
                          _line(FA, "o_lo = ave.mma(pa, v_lo, o_lo, tpv)"),
                          _line(FA, "o_hi = ave.mma(pa, v_hi, o_hi, tpv)")])
    assert a.diagnostics == []


def test_flash_attention_causal_is_proved():
    # CAUSAL: a program's loop ends at its last row's diagonal, so the keys past it never
    # reach O (their scores would be masked to -inf): no finding -- P's key is not a
    # coordinate of P's own tagged tensor (it comes from K through the Q K^T MMA), so P V
    # is held to "at most once", which the causal loop meets
    text = FA.replace("dict(BR=64, BC=64, GROUP=1),", "dict(BR=64, BC=64, GROUP=1, CAUSAL=True),")
    assert text != FA
    a = analyze(_fa(text, config=2))
    assert a.diagnostics == []
    assert sum(r.kind == "accumulate" and r.status == "proved" for r in a.assertions) == 3


def test_flash_attention_visiting_a_kv_block_twice_is_caught():
    # K and V loaded from block j // 2: every pairing is right (P's keys are V's keys), but
    # KV block 0 is visited at j = 0 and again at j = 1, so the P V chains sum key 0 twice:
    # for K.shape[2] = 65 (two blocks) the second visit masks all but its first column --
    # key 64's place, which holds key 0 -- so O is attention over keys 0..63 and key 0 again.
    text = FA.replace("        n0 = j * BC", "        n0 = (j // 2) * BC")
    assert text.count("(j // 2) * BC") == 2
    k = _fa(text)
    a = analyze(k)
    assert {d.code for d in a.diagnostics} == {"AVE206"}
    lines = sorted(d.range.start.line for d in a.diagnostics)
    assert lines == sorted([_line(text, "o_lo = ave.mma(pa, v_lo, o_lo, tpv)"),
                            _line(text, "o_hi = ave.mma(pa, v_hi, o_hi, tpv)")])
    d = min(a.diagnostics, key=lambda d: d.range.start.line)
    w = d.witness
    assert (w["what"], w["field"], w["value"]) == ("twice", "key", 0)
    assert w["mma_loops"] == {"first": {"j": 0}, "again": {"j": 1}}
    assert w["trip_counts"] == {"j": 2}
    assert w["threads"][0]["thread"] == 0 and w["accumulator"] == [0, 0]
    S_KV = w["model"]["K.shape[2]"]
    assert 64 < S_KV <= 128
    # the interpreter, at the witness' sizes: O is attention over keys 0..63 alone
    rng = np.random.default_rng(7)
    D, S_Q = 128, 16
    q, kk, v = (NUM.to_storage(bf16, rng.standard_normal(s).astype(np.float32))
                for s in ((1, 1, S_Q, D), (1, 1, S_KV, D), (1, 1, S_KV, D)))
    o = np.zeros((1, 1, S_Q, D), np.uint16)
    sm = 1.0 / np.sqrt(D)
    run(k, (1, 1, 1), [q, kk, v, o, sm], checks=False)
    qf, kf, vf = (NUM.from_storage(bf16, x).astype(np.float64)[0, 0] for x in (q, kk, v))
    got = NUM.from_storage(bf16, o).astype(np.float64)[0, 0]

    def attention(keys):
        s = qf @ kf[keys].T * np.float64(np.float32(sm))
        p = np.exp(s - s.max(axis=1, keepdims=True))
        return (p / p.sum(axis=1, keepdims=True)) @ vf[keys]
    twice = attention(list(range(64)) + [0])            # the witness: key 0 twice
    right = attention(list(range(S_KV)))
    assert np.abs(got - twice).max() < 2e-2 * np.abs(twice).max()
    assert np.abs(got - right).max() > 10 * np.abs(got - twice).max()


def test_a_partial_sum_extended_by_an_mma_stays_partial():
    # (C staged through shared memory, not followed, + k-tile 0) + (k-tile 1), then k-tile 2
    # added to the sum by an MMA: the sum holds part of the k only (FragVal.partial), and
    # the MMA after it kept that no more -- "never accumulates k=0" for a correct kernel (a
    # false AVE206). Proved now, and the interpreter's D is C + A B; the sum's k-tile 1
    # added again instead of k-tile 2 is still "twice".
    text = (ROOT / "tests" / "analysis" / "review_cases" / "r19_partial_then_mma.py"
            ).read_text(encoding="utf-8")
    rng = np.random.default_rng(3)
    a_ = NUM.to_storage(bf16, rng.standard_normal((64, 96)).astype(np.float32))
    b_ = NUM.to_storage(bf16, rng.standard_normal((96, 64)).astype(np.float32))
    c_ = rng.standard_normal((64, 64)).astype(np.float32)
    af = NUM.from_storage(bf16, a_).astype(np.float64)
    bf = NUM.from_storage(bf16, b_).astype(np.float64)
    for tiles, ok in (("64:96", True), ("32:64", False)):
        k = compile_source(text.replace("64:96", tiles), "r19.py").kernels[0]
        a, d = _acc206(k)
        (r,) = [r for r in a.assertions if r.kind == "accumulate"]
        if ok:
            assert d == [] and a.diagnostics == [] and r.status == "proved"
        else:
            (d,) = d
            assert (d.witness["what"], d.witness["value"]) == ("twice", 32)
        out = np.zeros((64, 64), np.float32)
        run(k, (1,), [a_, b_, c_.copy(), out], checks=False)
        lo, hi = map(int, tiles.split(":"))
        ref = c_ + af[:, :64] @ bf[:64] + af[:, lo:hi] @ bf[lo:hi]
        assert np.abs(out - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())
        if ok:
            assert np.abs(out - (c_ + af @ bf)).max() < 1e-3 * np.abs(ref).max()


# --- review of the scale (a review helper found each of these) ------------------------------

def test_a_factor_on_the_left_scales_too():
    # `0.5 * acc` ended the chain (the factor was taken for the accumulator): a false
    # "never accumulates" for the correct kernel, and flash attention with `alpha[:, None]
    # * o_lo` proved a KV block visited twice
    step = ["        acc = 0.5 * acc", MMA_STMT]
    a, d = _acc206(_summed(step))
    assert d == [] and a.diagnostics == []
    bad = compile_source(KERNEL.replace("{K0}", "kt * 0").replace(
        MMA_STMT, "\n".join(step)), "left.py").kernels[0]
    a, (d,) = _acc206(bad)
    assert (d.witness["what"], d.witness["value"]) == ("twice", 0)
    text = FA.replace("        n0 = j * BC", "        n0 = (j // 2) * BC").replace(
        "o_lo = o_lo * alpha[:, None]", "o_lo = alpha[:, None] * o_lo").replace(
        "o_hi = o_hi * alpha[:, None]", "o_hi = alpha[:, None] * o_hi")
    assert text.count("alpha[:, None] * o_") == 2
    a = analyze(_fa(text))
    assert sorted(d.code for d in a.diagnostics) == ["AVE206", "AVE206"]
    assert all(d.witness["what"] == "twice" for d in a.diagnostics)


def _review(name: str):
    text = (ROOT / "tests" / "analysis" / "review_cases" / f"{name}.py").read_text("utf-8")
    return compile_source(text, f"{name}.py").kernels[0]


def test_ones_times_a_staged_partial_sum_is_no_chain_start():
    # k-tile 0 summed, staged through shared memory, reloaded times an all-ones fragment,
    # then k-tile 1 added: correct (C = A B). Only ave.zeros scaled starts a chain -- an
    # untagged factor did, and the sum was held to "at least once": "never k=0".
    k = _review("r19_smem_ones")
    a, d = _acc206(k)
    assert d == [] and a.diagnostics == []
    af, bf, c = _run(k, 64)
    assert np.abs(c - af @ bf).max() < 1e-3 * np.abs(af @ bf).max()


def test_a_chain_first_used_by_some_warps_is_checked_for_all():
    # warps 2-3 add k-tile 0 again; warps 0-1 store acc into D first, then every warp
    # stores it into C. The first use was checked for warps 0-1 only, and the store into
    # C was skipped as "checked already": proved. Now "repeats k=0" in warp 2 (thread 64,
    # acc[32, 0]), and the interpreter's rows 32..63 of C hold k-tile 0 twice.
    k = _review("r19_warp_first_noscale")
    a, (d,) = _acc206(k)
    w = d.witness
    assert (w["what"], w["value"]) == ("twice", 0)
    assert w["threads"][0] == {"thread": 64, "warp": 2, "lane": 0}
    assert w["accumulator"] == [32, 0]
    rng = np.random.default_rng(0)
    a_ = NUM.to_storage(bf16, rng.standard_normal((64, 64)).astype(np.float32))
    b_ = NUM.to_storage(bf16, rng.standard_normal((64, 64)).astype(np.float32))
    c, dd = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    run(k, (1,), [a_, b_, c, dd], checks=False)
    af = NUM.from_storage(bf16, a_).astype(np.float64)
    bf = NUM.from_storage(bf16, b_).astype(np.float64)
    ref = af @ bf
    assert np.abs(c[:32] - ref[:32]).max() < 1e-3 * np.abs(ref).max()
    twice = ref + af[:, :32] @ bf[:32]
    assert np.abs(c[32:] - twice[32:]).max() < 1e-3 * np.abs(twice).max()


def test_a_partial_sum_in_one_arm_leaves_the_other_arms_chain_whole():
    # the loop never reads k-tile 0; t = acc, or acc + (an MMA onto a tile staged in shared
    # memory: not followed) when K > 64. The join was marked partial because of the
    # then-arm, and the else-arm's incomplete acc was proved; now "never k=0"
    k = _review("r19_partial_join_only")
    a, (d,) = _acc206(k)
    assert (d.witness["what"], d.witness["value"]) == ("never", 0)


def test_a_branch_on_a_per_thread_fragment_condition():
    # `if ave.min(alpha, axis=0) < 1.0:` around the rescale (a lazy rescale, one value per
    # thread): it crashed the analysis (AVE900); the branch is on an unknown per thread,
    # and the P V chains go through it -- clean, and the KV block visited twice caught
    lazy = FA.replace("        o_lo = o_lo * alpha[:, None]\n        o_hi = o_hi * alpha[:, None]",
                      "        if ave.min(alpha, axis=0) < 1.0:\n"
                      "            o_lo = o_lo * alpha[:, None]\n"
                      "            o_hi = o_hi * alpha[:, None]")
    assert lazy != FA
    a = analyze(_fa(lazy))
    assert a.diagnostics == []
    assert sum(r.kind == "accumulate" and r.status == "proved" for r in a.assertions) == 3
    a = analyze(_fa(lazy.replace("        n0 = j * BC", "        n0 = (j // 2) * BC")))
    assert sorted(d.code for d in a.diagnostics) == ["AVE206", "AVE206"]


# --- the chain through ave.convert and ave.where; a use under a branch on sizes -----------

IN_LOOP = {
    "convert": "        acc = ave.convert(acc, tiled.c)",
    # (every element keeps the accumulator, decided: a loop index, a coordinate)
    "where_kt": "        acc = ave.where(kt >= 0, acc, 0.0)",
    "where_coord": "        acc = ave.where(ave.coord((64, 64), 0, tiled.c) < 64, acc, 0.0)",
}


@pytest.mark.parametrize("step", sorted(IN_LOOP))
def test_an_accumulator_converted_or_kept_by_a_select_in_the_loop_is_followed(step):
    # acc = ave.convert(acc, tiled.c) (no element moves), or a select every element of
    # which takes the accumulator, after each MMA: the value goes on into the next MMA.
    # Both ended the chain at its first use: "never accumulates k=32" at kt=0 for a
    # correct kernel. Now a correct kernel is clean, and every iteration reading k-tile 0
    # sums k = 0 twice (trip count 2: kt = 0 and kt = 1); the interpreter's C[0, 0] is 2 P.
    ok = _summed([MMA_STMT, IN_LOOP[step]])
    a, d = _acc206(ok)
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved"
    bad = compile_source(KERNEL.replace("{K0}", "kt * 0").replace(
        MMA_STMT, MMA_STMT + "\n" + IN_LOOP[step]), "conv.py").kernels[0]
    a, (d,) = _acc206(bad)
    w = d.witness
    assert (w["what"], w["value"]) == ("twice", 0)
    assert w["mma_loops"] == {"first": {"kt": 0}, "again": {"kt": 1}}
    af, bf, c = _run(bad, 40)
    p = float(af[0, :32] @ bf[:32, 0])
    assert abs(float(c[0, 0]) - 2 * p) < 1e-2 * max(1.0, abs(p))
    af, bf, c = _run(ok, 72)
    ref = af[:, :72] @ bf[:72, :]
    assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())
    # the shifted tile (iteration kt reads tile kt + 1) still never sums k = 0
    k = compile_source(KERNEL.replace("{K0}", "(kt + 1) * 32").replace(
        MMA_STMT, MMA_STMT + "\n" + IN_LOOP[step]), "shift.py").kernels[0]
    a, (d,) = _acc206(k)
    assert (d.witness["what"], d.witness["value"]) == ("never", 0)
    assert d.witness["trip_counts"] == {"kt": 1}


@pytest.mark.parametrize("select, k0", [
    ("acc = ave.where(kt == 1, 0.0, acc)", "kt * 32"),                    # drops tile 0
    ("acc = ave.where(ave.coord((64, 64), 0, tiled.c) < M, acc, 0.0)", "kt * 64"),
])
def test_a_select_that_may_drop_the_accumulator_ends_its_chain(select, k0):
    # A select that may take the other side for some element ends the chain and checks
    # it there (an element that took 0.0 dropped the products before it). Carried on as a
    # partial sum instead (a review helper's finds against an earlier version of the
    # change): 'where(kt == 1, 0.0, acc)' -- decided per iteration, all elements drop the
    # accumulator at kt = 1 -- lost k-tile 0 unseen, and with the masked rows and k-tiles
    # 0, 2, 4, ... read, the odd tiles were never summed, unseen. Both are wrong in the
    # interpreter for K = 72 and "never" here.
    k = compile_source(KERNEL.replace("{K0}", k0).replace(
        MMA_STMT, "        " + select + "\n" + MMA_STMT), "sel.py").kernels[0]
    a, ds = _acc206(k)
    assert ds and ds[0].witness["what"] == "never"
    af, bf, c = _run(k, 72)
    ref = af[:, :72] @ bf[:72, :]
    assert np.abs(c - ref).max() > 1e-2


def test_a_select_between_a_chain_and_zeros_credits_no_element_twice():
    # other = mma(a, b, 0); acc = where(row < M, zeros, other); acc = mma(a, b, acc): a
    # row takes zeros (then one product) or `other` (then two -- rows >= M, never stored).
    # Carrying `other`'s chain through the select credited both MMAs to every element:
    # a false "repeats k=0" for acc[0, 0] (a review helper). The select ends `other`'s
    # chain; the interpreter agrees with A B on the stored rows.
    text = KERNEL.replace("{K0}", "kt * 32").replace(
        "    for kt in ave.range(0, (K + 31) // 32):\n        k0 = kt * 32\n",
        "    ave.assume(K <= 32, 'one k-tile')\n    if True:\n        k0 = 0\n").replace(
        MMA_STMT, """        a = ave.load(sA, tiled.a)
        b = ave.load(sB, tiled.b)
        other = ave.mma(a, b, ave.zeros((64, 64), ave.f32, tiled.c), tiled)
        acc = ave.where(ave.coord((64, 64), 0, tiled.c) < M,
                        ave.zeros((64, 64), ave.f32, tiled.c), other)
        acc = ave.mma(a, b, acc, tiled)""")
    res = compile_source(text, "start.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a, d = _acc206(res.kernels[0])
    assert d == [], [x.message for x in d]
    af, bf, c = _run(res.kernels[0], 32)
    ref = af[:, :32] @ bf[:32, :]
    assert np.abs(c - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())


FULL_TILES = KERNEL.replace("{K0}", "kt * 32").replace(
    "for kt in ave.range(0, (K + 31) // 32):", "for kt in ave.range(0, K // 32):")
STORE = "    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)"


def _stored_if(cond: str):
    res = compile_source(FULL_TILES.replace(STORE, f"    if {cond}:\n    " + STORE),
                         "if.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def test_a_use_under_a_branch_on_sizes_is_checked_under_its_condition():
    # K // 32 full tiles only: complete where K % 32 == 0, the only sizes for which the
    # store runs (it was "never accumulates k=32" for K = 33, which skips the store)
    a, d = _acc206(_stored_if("K % 32 == 0"))
    assert d == [] and a.diagnostics == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved"
    # the opposite condition: the store runs exactly where a tail is lost. Minimal
    # witness, by hand: trip count 1 holds K in 32..63, K % 32 != 0 makes it 33, and
    # k = 32 is the first index never summed.
    k = _stored_if("K % 32 != 0")
    a, (d,) = _acc206(k)
    w = d.witness
    assert (w["what"], w["value"], w["trip_counts"]) == ("never", 32, {"kt": 1})
    assert w["model"]["A.shape[1]"] == 33
    af, bf, c = _run(k, 33)
    assert abs(float(c[0, 0]) - float(af[0, :32] @ bf[:32, 0])) < 1e-3
    assert abs(float(c[0, 0]) - float(af[0, :33] @ bf[:33, 0])) > 1e-4
    # the same chain used again elsewhere: in the else-arm, after the branch, or joined
    # with a value the then-arm computed from it. The check under `K % 32 == 0` stood for
    # these too, and the lost tail was proved (a review helper): each is checked under its
    # own arms -- K = 33 misses k = 32
    both = "    if K % 32 == 0:\n    " + STORE + "\n    else:\n    " + STORE
    after = "    if K % 32 == 0:\n    " + STORE + "\n" + STORE
    join = ("    res = acc\n    if K % 32 == 0:\n        res = acc * acc\n" +
            STORE.replace(", acc,", ", res,"))
    for body in (both, after, join):
        res = compile_source(FULL_TILES.replace(STORE, body), "again.py")
        assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
        a, (d,) = _acc206(res.kernels[0])
        w = d.witness
        assert (w["what"], w["value"], w["model"]["A.shape[1]"]) == ("never", 32, 33), body
    # K >= 64: the first K for which a tail is lost is 65 (two tiles, k = 64 missing)
    a, (d,) = _acc206(_stored_if("K >= 64"))
    w = d.witness
    assert (w["what"], w["value"], w["trip_counts"]) == ("never", 64, {"kt": 2})
    assert w["model"]["A.shape[1]"] == 65


def test_a_chain_whose_first_mmas_add_nothing_is_reported_at_its_mma():
    # The prologue one tile short: kt = 0 and 1 read stage bytes nothing wrote (untagged:
    # those MMAs contribute nothing the check follows), so k = 0 is never summed. The
    # finding is at the chain's MMA like every AVE206 (it was at the store, the consumer).
    text = (ROOT / "examples" / "broken" / "gemm_prologue_short.py").read_text()
    res = compile_source(text, "gemm_prologue_short.py")
    a, (d,) = _acc206(res.kernels[0])
    mma = next(i for i, ln in enumerate(text.splitlines()) if "acc = ave.mma(" in ln)
    assert d.range.start.line == mma
    assert (d.witness["what"], d.witness["value"]) == ("never", 0)
    store = next(i for i, ln in enumerate(text.splitlines()) if "ave.store(" in ln)
    assert any(r.location.range.start.line == store for r in d.related)


# --- a second review: unreached uses, a use after the shared prefix, flash attention's start

def test_a_use_under_a_branch_no_analysed_trip_count_reaches_is_unknown():
    # `if K > 200:` store after K // 32 full tiles: trip counts 1..3 (the default bound
    # here) mean K <= 127, so every query under the branch was unsat and the lost tail
    # "proved" (a review helper). Now: unknown (AVE205), raise the bound; with 8 trips it
    # is found -- by hand: K > 200 first holds at K = 201, six full tiles (trip count 6),
    # k = 192 never summed.
    k = _stored_if("K > 200")
    a, d = _acc206(k)
    assert d == []
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "unknown" and "raise tripCountBound" in r.reason, r
    text = FULL_TILES.replace(STORE, "    if K > 200:\n    " + STORE)
    store = text.splitlines().index("    " + STORE)
    assert f"use at line {store + 1} " in r.reason, r.reason
    from ave_core.analysis import AnalysisOptions
    a, (d,) = _acc206(k, options=AnalysisOptions(trip_bound=8))
    w = d.witness
    assert (w["what"], w["value"], w["model"]["A.shape[1]"]) == ("never", 192, 201)
    assert w["trip_counts"] == {"kt": 6}
    af, bf, c = _run(k, 201)
    assert abs(float(c[0, 0]) - float(af[0, :192] @ bf[:192, 0])) < 1e-3
    assert abs(float(c[0, 0]) - float(af[0, :201] @ bf[:201, 0])) > 1e-4
    # (a branch some analysed trip counts reach is checked there, as before)
    a, (d,) = _acc206(_stored_if("K >= 64"))
    assert d.witness["model"]["A.shape[1]"] == 65


def test_a_use_after_the_loop_of_a_value_checked_in_the_loop_is_checked_again():
    # `first = acc` kept at kt == 0 (and stored there too), stored again after the loop:
    # the check at kt == 0 was made in the prefix later variants resume after, under trip
    # count 1, and stood for the store after the loop in every variant -- the value holds
    # k-tile 0 only and was proved (a review helper). Now: never k=32.
    text = KERNEL.replace("{K0}", "kt * 32").replace(
        "    acc = ave.zeros((64, 64), ave.f32, tiled.c)\n",
        "    acc = ave.zeros((64, 64), ave.f32, tiled.c)\n    first = acc\n").replace(
        MMA_STMT, MMA_STMT + "\n        if kt == 0:\n            first = acc\n"
        "            ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)").replace(
        "    ave.store(C[0:64, 0:64], acc,", "    ave.store(C[0:64, 0:64], first,")
    res = compile_source(text, "first.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a, (d,) = _acc206(res.kernels[0])
    assert (d.witness["what"], d.witness["value"]) == ("never", 32)
    af, bf, c = _run(res.kernels[0], 40)
    ref = af[:, :40] @ bf[:40, :]
    assert np.abs(c - ref).max() > 1e-2


@pytest.mark.parametrize("rescale", [
    ("        o_lo = o_lo * alpha[:, None]\n        o_hi = o_hi * alpha[:, None]\n",
     "        o_lo = ave.where(j > 0, o_lo * alpha[:, None], 0.0)\n"
     "        o_hi = ave.where(j > 0, o_hi * alpha[:, None], 0.0)\n"),
    ("        o_hi = o_hi * alpha[:, None]\n",
     "        o_hi = o_hi * alpha[:, None]\n        o_lo = ave.convert(o_lo, tpv.c)\n"
     "        o_hi = ave.convert(o_hi, tpv.c)\n"),
])
def test_flash_attention_rescaled_through_a_select_or_a_convert_is_followed(rescale):
    # `where(j > 0, o * alpha, 0.0)` (a condition decided alike for every thread) and
    # `ave.convert(o, tpv.c)`: the P V chain went unchecked (the select joined both sides
    # into a tagged value no chain starts from; the convert dropped the scaled zeros'
    # start), and a KV block visited twice was proved (a review helper)
    old, new = rescale
    assert old in FA
    ok = FA.replace(old, new)
    a = analyze(_fa(ok, 2))
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    assert sum(r.kind == "accumulate" and r.status == "proved" for r in a.assertions) == 3
    bad = ok.replace("        n0 = j * BC", "        n0 = (j // 2) * BC")
    a = analyze(_fa(bad, 2))
    ws = [d.witness for d in a.diagnostics if d.code == "AVE206"]
    assert len(ws) == 2 and all((w["what"], w["value"]) == ("twice", 0) for w in ws)


@pytest.mark.parametrize("k0", ["kt * 32", "kt * 0"])
def test_an_mma_into_a_select_that_ended_its_chain_is_unknown_not_silent(k0):
    # `acc = ave.where(row < M, acc, t)` after the MMA inside the k loop, `t` a tagged
    # tile (not a value without products: no accumulation.Reset): the select may take `t`
    # for some rows, so it ends the chain (checked there, at kt = 0); the MMAs of later
    # iterations accumulate into its result, which no chain follows. That was a silent
    # pass -- also for every iteration reading k-tile 0 (kt * 0: wrong in the
    # interpreter). Now: AVE205 at the MMA, naming the select's line.
    sel = ("        acc = ave.where(ave.coord((64, 64), 0, tiled.c) < M, acc, "
           "ave.cast(ave.load(A[0:64, 0:64], tiled.c), ave.f32))")
    text = KERNEL.replace("{K0}", k0).replace(MMA_STMT, MMA_STMT + "\n" + sel)
    res = compile_source(text, "sel_after.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a = analyze(res.kernels[0])
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    line = text.splitlines().index(sel) + 1
    assert r.status == "unknown", r
    assert f"cannot be followed through the ave.where at line {line}" in r.reason
    (d,) = [d for d in a.diagnostics if d.code == "AVE205"]
    assert d.range.start.line == MMA_LINE
    if k0 == "kt * 0":
        af, bf, c = _run(res.kernels[0], 40)
        assert np.abs(c - af[:, :40] @ bf[:40, :]).max() > 1e-2


ROW = "ave.coord((64, 64), 0, tiled.c)"


def _reset_kernel(select: str, k0: str = "kt * 32", where: str = "before"):
    """KERNEL with ``select`` (a statement) before or after the MMA in the k loop, or
    ("end") after the loop, before the store."""
    text = KERNEL.replace("{K0}", k0)
    if where == "end":
        text = text.replace("    ave.store(", "    " + select + "\n    ave.store(")
    else:
        stmt = "        " + select
        text = text.replace(MMA_STMT, stmt + "\n" + MMA_STMT if where == "before"
                            else MMA_STMT + "\n" + stmt)
    res = compile_source(text, "reset.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0], text


def _gemm_in_interpreter(kernel, M: int, K: int, seed: int):
    """C (64 x 64, NaN where not stored) and A B in float64 for an M x K A."""
    rng = np.random.default_rng(seed)
    A = NUM.to_storage(bf16, rng.standard_normal((M, K)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((K, 64)).astype(np.float32))
    C = np.full((64, 64), np.nan, np.float32)
    run(kernel, (1,), [A, B, C], checks=False)
    af = NUM.from_storage(bf16, A).astype(np.float64)
    bf = NUM.from_storage(bf16, B).astype(np.float64)
    return C, af, bf


@pytest.mark.parametrize("select, where", [
    (f"acc = ave.where({ROW} < M, acc, 0.0)", "before"),
    (f"acc = ave.where({ROW} < M, acc, 0.0)", "after"),
    (f"acc = ave.where({ROW} >= M, 0.0, acc)", "before"),
    (f"acc = ave.where({ROW} < M, acc, 0.0)", "end"),
    (f"acc = ave.where({ROW} < M, acc, ave.zeros((64, 64), ave.f32, tiled.c))", "before"),
])
def test_a_reset_of_rows_the_store_leaves_out_is_proved(select, where):
    # `acc = ave.where(row < M, acc, 0.0)` inside the k loop resets only rows the masked
    # store (m < M) never writes: correct (the interpreter agrees with A B on every stored
    # row, M = 50). Before the MMA it ended the chain at the first tile: a false "never
    # accumulates k=32"; after it, AVE205 (unknown) -- now each stored element keeps the
    # accumulator at every reset (its condition is the store mask's), so the whole chain
    # is checked for it, and proved.
    k, _ = _reset_kernel(select, where=where)
    a = analyze(k)
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == "proved" and r.compared >= 1
    C, af, bf = _gemm_in_interpreter(k, 50, 72, 3)
    ref = af @ bf
    assert np.abs(C[:50] - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())


def test_a_reset_of_a_stored_row_inside_the_loop_is_caught_for_that_row():
    # `where(row < M - 1, acc, 0.0)` before the MMA resets the last stored row (M - 1)
    # at every k-tile: that row holds the last tile's products only. Its class of elements
    # (reset at the last k-tile) is checked as a chain of its own: "never accumulates
    # k=0", naming the reset; the interpreter's C[M - 1] is exactly the last tile's
    # product, the other rows are right.
    k, text = _reset_kernel(f"acc = ave.where({ROW} < M - 1, acc, 0.0)")
    a, (d,) = _acc206(k)
    w = d.witness
    assert (w["what"], w["value"]) == ("never", 0)
    assert w["trip_counts"] == {"kt": 2} and w["reset"] == {"kt": 1}
    assert w["chain"] == [{"kt": 1}]
    assert "after the ave.where at kt=1 reset it" in d.message
    sel_line = next(i for i, t in enumerate(text.splitlines()) if "M - 1, acc" in t)
    assert any(r.location.range.start.line == sel_line and
               "takes its other side here" in r.message for r in d.related)
    # thread 0's first element (row 0) is the reset row for M = 1; K > 32: two k-tiles
    assert w["accumulator"] == [0, 0] and w["model"]["A.shape[0]"] == 1
    assert w["model"]["A.shape[1]"] > 32
    C, af, bf = _gemm_in_interpreter(k, 64, 72, 4)
    ref = af @ bf
    assert np.abs(C[:63] - ref[:63]).max() < 1e-3 * np.abs(ref).max()
    last = af[63, 64:] @ bf[64:, :]               # the last k-tile only
    assert np.abs(C[63] - last).max() < 1e-3 * max(1.0, np.abs(last).max())
    assert np.abs(C[63] - ref[63]).max() > 1e-1


@pytest.mark.parametrize("select", [
    f"acc = ave.where({ROW} < M - 1, acc, 0.0)",
    f"acc = ave.where({ROW} >= M - 1, 0.0, acc)",
])
def test_a_reset_after_the_last_mma_of_a_stored_row_is_dropped(select):
    # after the loop, `where(row < M - 1, acc, 0.0)` zeroes a stored row: it holds none
    # of the products ("dropped", at the lowest such element and the sizes that store
    # it). It was unchecked: the select ended the chain (complete there), and the store
    # had none. The interpreter stores 0.0 in row M - 1.
    k, _ = _reset_kernel(select, where="end")
    a, (d,) = _acc206(k)
    w = d.witness
    assert w["what"] == "dropped"
    assert w["accumulator"] == [0, 0] and w["model"]["A.shape[0]"] == 1
    assert w["chain"] == [{"kt": 0}]
    assert d.message.startswith("accumulation incomplete: thread 0 (warp 0, lane 0) resets "
                                "acc[0, 0] at the ave.where, dropping the products")
    C, af, bf = _gemm_in_interpreter(k, 64, 40, 5)
    assert (C[63] == 0.0).all()
    ref = af @ bf
    assert np.abs(C[:63] - ref[:63]).max() < 1e-3 * np.abs(ref).max()


def test_the_stored_rows_after_their_last_reset_are_checked_as_a_chain():
    # every iteration reads k-tile 0 (kt * 0) and the select resets the stored rows before
    # each MMA: a stored row holds k-tile 0 once -- the last MMA's -- the whole sum when
    # K <= 32, missing k = 32.. beyond: "never k=32", not "twice" (the chain of the class
    # of stored rows starts after their last reset). The interpreter's stored rows hold
    # tile 0 once.
    k, _ = _reset_kernel(f"acc = ave.where({ROW} >= M, acc, 0.0)", k0="kt * 0")
    a, (d,) = _acc206(k)
    assert (d.witness["what"], d.witness["value"]) == ("never", 32)
    C, af, bf = _gemm_in_interpreter(k, 50, 72, 6)
    tile0 = af[:, :32] @ bf[:32, :]
    assert np.abs(C[:50] - tile0).max() < 1e-3 * max(1.0, np.abs(tile0).max())


#: KERNEL with each k-tile copied in one arm of a branch on the sizes: full tiles ({FULL}
#: the A mask) and the tail ({TAIL})
TAIL = KERNEL.replace("{K0}", "kt * 32").replace(
    "        ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))\n"
    "        ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)\n",
    "        if k0 + 32 <= K:\n"
    "            ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: {FULL})\n"
    "            ave.copy(B[k0:k0 + 32, 0:64], sB)\n"
    "        else:\n"
    "            ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: {TAIL})\n"
    "            ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)\n")
assert "{FULL}" in TAIL


def _async(text: str) -> str:
    """TAIL with cp.async copies (landing at a wait after the branch)."""
    return text.replace("ave.copy(", "ave.copy_async(").replace(
        "        ave.barrier()\n        acc",
        "        ave.commit_async()\n        ave.wait_async(0)\n        ave.barrier()\n        acc")


@pytest.mark.parametrize("form", ["copy", "copy_async"])
@pytest.mark.parametrize("full, tail_, verdict", [
    ("m < M", "(m < M) & (k < K)", None),
    ("m < M", "(m < M) & (k < K - 1)", (0, 1)),       # the tail drops k = K - 1
    ("(m < M) & (k < K - 1)", "(m < M) & (k < K)", (31, 32)),   # a full tile drops its last
])
def test_a_tail_tile_masked_in_its_own_arm_is_checked_on_each_path(full, tail_, verdict,
                                                                   form):
    # Full k-tiles copied with a row mask only, the last partial tile (the else-arm of a
    # branch on the sizes) with a k mask too: the CUTLASS-style predicated tail. The two
    # paths' guards differed, so the join held the copied tags "always": a tail mask that
    # drops k = K - 1 (or a full tile's mask dropping its last k) was proved (a review
    # helper; wrong in the interpreter). Now the joined guard is the paths' If(then, ...):
    # the missing k is found, with the sizes that take that path. With cp.async copies
    # (the arms run on one state, the copies land after the branch) alike.
    text = TAIL.replace("{FULL}", full).replace("{TAIL}", tail_)
    if form == "copy_async":
        text = _async(text)
        assert "ave.copy(" not in text and text.count("wait_async(0)") == 1
    res = compile_source(text, "tail.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, ds = _acc206(k)
    if verdict is None:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
        for K in (40, 64):
            C, af, bf = _gemm_in_interpreter(k, 64, K, 7)
            ref = af @ bf
            assert np.abs(C - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())
        return
    k0, K = verdict
    (d,) = ds
    w = d.witness
    assert (w["what"], w["value"]) == ("never", k0)
    assert w["model"]["A.shape[1]"] == K
    C, af, bf = _gemm_in_interpreter(k, 64, K, 8)
    ref = af @ bf
    # C misses exactly A[:, k0] B[k0, :]
    miss = np.outer(af[:, k0], bf[k0, :])
    assert np.abs(C - (ref - miss)).max() < 1e-3 * max(1.0, np.abs(ref).max())
    assert np.abs(miss).max() > 1e-2


@pytest.mark.parametrize("bound, verdict", [
    ("k0 + {C} < K", None),
    ("k0 + {C} < K - 1", (0, 1)),          # drops k = K - 1 of every tile's last column
    ("{C} < 16", (16, 17)),                # a constant: columns 16.. of each tile zeroed
])
def test_an_operand_masked_in_registers_holds_its_tags_under_the_mask(bound, verdict):
    # `a = ave.where(k0 + ave.coord(..., 1, tiled.a) < K - 1, a, 0.0)` after the load: the
    # elements it zeroes contribute nothing, so the MMA chain misses k = K - 1. The select
    # joined `a`'s tags with the zero's (⊥), which kept them "always": proved (a review
    # helper; wrong in the interpreter). Now they hold under the select's condition, as a
    # masked load's do; a condition decided to zero (a constant bound) keeps the tags under
    # a false guard instead of ⊥ (rows of ⊥ through the MMA were ⊤: a false AVE201 at the
    # store).
    sel = bound.replace("{C}", "ave.coord((64, 32), 1, tiled.a)")
    body = ("        a = ave.load(sA, tiled.a)\n"
            f"        a = ave.where({sel}, a, 0.0)\n"
            "        acc = ave.mma(a, ave.load(sB, tiled.b), acc, tiled)")
    res = compile_source(KERNEL.replace("{K0}", "kt * 32").replace(MMA_STMT, body), "opw.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, ds = _acc206(k)
    if verdict is None:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
        C, af, bf = _gemm_in_interpreter(k, 64, 72, 9)
        ref = af @ bf
        assert np.abs(C - ref).max() < 1e-3 * np.abs(ref).max()
        return
    assert [d.code for d in a.diagnostics] == ["AVE206"], [d.message for d in a.diagnostics]
    k0, K = verdict
    w = ds[0].witness
    assert (w["what"], w["value"]) == ("never", k0) and w["model"]["A.shape[1]"] == K
    C, af, bf = _gemm_in_interpreter(k, 64, K, 10)
    ref = af @ bf
    miss = np.outer(af[:, k0], bf[k0, :])
    assert np.abs(C - (ref - miss)).max() < 1e-3 * max(1.0, np.abs(ref).max())
    assert np.abs(miss).max() > 1e-2


@pytest.mark.parametrize("k0, verdict", [("kt * 32", None), ("(kt + 1) * 32", ("never", 0)),
                                         ("kt * 0", ("twice", 0))])
def test_an_accumulator_started_from_the_output_it_overwrites_is_followed(k0, verdict):
    # C = A B + beta C in place (BLAS): `acc = ave.load(C[...]) * beta` before the k loop,
    # the store into C after it. C was no chain's start because the kernel writes C (it
    # may hold a partial sum the kernel stored) -- and a skipped or doubled k-tile went
    # unchecked, silently (a review helper; wrong in the interpreter). A tensor the
    # kernel only reads before writing it is input data: the chain starts at the load.
    text = KERNEL.replace("{K0}", k0).replace(
        "    acc = ave.zeros((64, 64), ave.f32, tiled.c)",
        "    acc = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M) * 0.5")
    res = compile_source(text, "inplace.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, ds = _acc206(k)
    rng = np.random.default_rng(11)
    A = NUM.to_storage(bf16, rng.standard_normal((64, 72)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((72, 64)).astype(np.float32))
    C0 = rng.standard_normal((64, 64)).astype(np.float32)
    C = C0.copy()
    run(k, (1,), [A, B, C], checks=False)
    ref = 0.5 * C0.astype(np.float64) + NUM.from_storage(bf16, A).astype(np.float64) @ \
        NUM.from_storage(bf16, B).astype(np.float64)
    err = np.abs(C - ref).max()
    if verdict is None:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
        (r,) = [r for r in a.assertions if r.kind == "accumulate"]
        assert r.status == "proved"
        assert err < 1e-3 * np.abs(ref).max()
    else:
        (d,) = ds
        assert (d.witness["what"], d.witness["value"]) == verdict
        assert err > 1e-1


TAIL_MMA = TAIL.replace('''        ave.barrier()
        acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)
        ave.barrier()
''', '').replace('''            ave.copy(B[k0:k0 + 32, 0:64], sB)
''', '''            ave.copy(B[k0:k0 + 32, 0:64], sB)
            ave.barrier()
            acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)
            ave.barrier()
''').replace('''            ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)
''', '''            ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)
            ave.barrier()
            {ELSE_MMA}
            ave.barrier()
''')
ELSE_MMA = "acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)"


@pytest.mark.parametrize("tail_, else_mma, verdict", [
    ("(m < M) & (k < K)", ELSE_MMA, None),
    ("(m < M) & (k < K - 1)", ELSE_MMA, ("never", 0, 1)),
    ("(m < M) & (k < K)", "acc = acc * 1.0", ("never", 0, 1)),          # the tail skipped
    ("(m < M) & (k < K)", ELSE_MMA.replace("acc, tiled", "ave.mma(ave.load(sA, tiled.a), "
                                           "ave.load(sB, tiled.b), acc, tiled), tiled"),
     ("twice", 0, 1)),
])
def test_full_tiles_and_the_tail_each_with_an_mma_in_its_own_arm(tail_, else_mma, verdict):
    # `if k0 + 32 <= K:` full tile and its MMA, `else:` the masked tail and its MMA: the
    # else-arm's MMAs contribute under the negated condition (one condition: k0 + 32 > K),
    # and the chain after the branch holds both arms' MMAs. It was AVE205 "cannot be
    # followed" (a review helper). Wrong tails are found with the sizes that take them.
    text = TAIL_MMA.replace("{FULL}", "m < M").replace("{TAIL}", tail_).replace(
        "{ELSE_MMA}", else_mma)
    assert text.count("ave.mma(") == 1 + else_mma.count("ave.mma(")
    res = compile_source(text, "tail2.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, ds = _acc206(k)
    if verdict is None:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
        for K in (40, 64):
            C, af, bf = _gemm_in_interpreter(k, 64, K, 12)
            ref = af @ bf
            assert np.abs(C - ref).max() < 1e-3 * max(1.0, np.abs(ref).max())
        return
    what, k0, K = verdict
    assert [d.code for d in a.diagnostics] == ["AVE206"], [d.message for d in a.diagnostics]
    w = ds[0].witness
    assert (w["what"], w["value"], w["model"]["A.shape[1]"]) == (what, k0, K)
    C, af, bf = _gemm_in_interpreter(k, 64, K, 13)
    ref = af @ bf
    assert np.abs(C - ref).max() > 1e-2


def test_witness_sizes_keep_the_size_statements_of_the_masks():
    # The B copy's mask `k < K` states B.shape[0] == A.shape[1] (the bounds check reads it
    # so). The accumulation check's sizes did not: a peeled first tile and a loop from 2
    # (k-tile 1 skipped) gave "for A.shape[1] = 65, B.shape[0] = 33", sizes at which the
    # kernel reads B out of bounds -- the interpreter stopped there instead of showing the
    # missing k (a review helper). Now the witness' sizes agree, and replay there shows C
    # missing exactly k-tile 1.
    text = KERNEL.replace("{K0}", "kt * 32").replace(
        "    for kt in ave.range(0, (K + 31) // 32):",
        "    ave.copy(A[0:64, 0:32], sA, mask=lambda m, k: (m < M) & (k < K))\n"
        "    ave.copy(B[0:32, 0:64], sB, mask=lambda k, n: k < K)\n"
        "    ave.barrier()\n"
        "    acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)\n"
        "    ave.barrier()\n"
        "    for kt in ave.range(2, (K + 31) // 32):")
    res = compile_source(text, "peel.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, (d,) = _acc206(k)
    w = d.witness
    assert (w["what"], w["value"]) == ("never", 32)
    K = w["model"]["A.shape[1]"]
    assert w["model"]["B.shape[0]"] == K and K > 32
    rng = np.random.default_rng(14)
    A = NUM.to_storage(bf16, rng.standard_normal((64, K)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((K, 64)).astype(np.float32))
    C = np.zeros((64, 64), np.float32)
    assert run(k, (1,), [A, B, C]).diagnostics == []          # (no out-of-bounds read)
    af, bf = (NUM.from_storage(bf16, x).astype(np.float64) for x in (A, B))
    expect = af @ bf - af[:, 32:64] @ bf[32:64, :]
    assert np.abs(C - expect).max() < 1e-3 * max(1.0, np.abs(expect).max())


@pytest.mark.parametrize("select", [
    f"acc = ave.where(({ROW} < M) | ({ROW} < 0), acc, 0.0)",
    f"acc = ave.where(~({ROW} >= M), acc, 0.0)",
    f"acc = ave.where(({ROW} >= M) == ({ROW} < 0), acc, 0.0)",
    f"acc = ave.where(({ROW} < M) | (kt > 0), acc, 0.0)",
])
def test_a_reset_on_a_condition_built_with_or_not_xor_eq_is_followed(select):
    # `|`, `~` and `==` of conditions gave no per-element condition, so the select was
    # no reset but a use: a correct kernel "never accumulates k=32" (a review helper)
    k, _ = _reset_kernel(select)
    a = analyze(k)
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    C, af, bf = _gemm_in_interpreter(k, 50, 72, 15)
    ref = af @ bf
    assert np.abs(C[:50] - ref).max() < 1e-3 * np.abs(ref).max()


@pytest.mark.parametrize("where, what", [("end", "dropped"), ("before", "never")])
def test_a_reset_to_a_value_other_than_zero_is_a_reset(where, what):
    # `ave.where(row < M - 1, acc, 5.0)`: row M - 1 holds 5.0 (after the loop) or 5.0 and
    # the last tile (in the loop), none of the products before; it was proved after the
    # loop (a select to a non-zero value ended the chain, complete there; a review helper)
    k, _ = _reset_kernel(f"acc = ave.where({ROW} < M - 1, acc, 5.0)", where=where)
    a, (d,) = _acc206(k)
    assert d.witness["what"] == what
    C, af, bf = _gemm_in_interpreter(k, 64, 72, 16)
    ref = af @ bf
    assert np.abs(C[:63] - ref[:63]).max() < 1e-3 * np.abs(ref).max()
    assert np.abs(C[63] - ref[63]).max() > 1e-1


def test_a_full_tiles_mask_false_outright_for_some_k_is_caught():
    # the full-tile arm's A mask `(m < M) & (k < k0 + 31)` drops every full tile's last
    # column: in that arm the element holds no tags, and the join took the tail arm's
    # guard for both paths -- proved (a review helper). Held on one path only, the tags
    # hold under that path's condition.
    text = TAIL.replace("{FULL}", "(m < M) & (k < k0 + 31)").replace(
        "{TAIL}", "(m < M) & (k < K)")
    res = compile_source(text, "tail31.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, (d,) = _acc206(k)
    assert (d.witness["what"], d.witness["value"]) == ("never", 31)
    K = d.witness["model"]["A.shape[1]"]
    assert K >= 32
    C, af, bf = _gemm_in_interpreter(k, 64, 64, 17)
    ref = af @ bf
    miss = np.outer(af[:, 31], bf[31, :]) + np.outer(af[:, 63], bf[63, :])
    assert np.abs(C - (ref - miss)).max() < 1e-3 * np.abs(ref).max()


@pytest.mark.parametrize("sel, verdict", [
    ("(k0 + {C} < K) & ({C} != 5)", ("never", 5)),      # a decided part: column 5 dropped
    ("k0 + {C} < K - 1", ("never", 0)),                 # the other side is 1.0, not 0.0
])
def test_an_operand_select_with_a_decided_part_or_another_value(sel, verdict):
    # (a review helper: both were proved) -- the elements that take the other side hold no
    # data of A: their k-slot contributes nothing there
    other = "1.0" if "K - 1" in sel else "0.0"
    c = "ave.coord((64, 32), 1, tiled.a)"
    body = ("        a = ave.load(sA, tiled.a)\n"
            f"        a = ave.where({sel.replace('{C}', c)}, a, {other})\n"
            "        acc = ave.mma(a, ave.load(sB, tiled.b), acc, tiled)")
    res = compile_source(KERNEL.replace("{K0}", "kt * 32").replace(MMA_STMT, body), "o.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a, ds = _acc206(res.kernels[0])
    assert [d.code for d in a.diagnostics] == ["AVE206"], [d.message for d in a.diagnostics]
    assert (ds[0].witness["what"], ds[0].witness["value"]) == verdict


RMW = KERNEL.replace(
    "        acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)\n",
    "        part = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)\n"
    "        part = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), part, tiled)\n"
    "        ave.store(C[0:64, 0:64], part, mask=lambda m, n: m < M)\n").replace(
    "    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)\n", "")


@pytest.mark.parametrize("tag", [False, True])
@pytest.mark.parametrize("k0, verdict", [("kt * 32", None), ("kt * 0", "twice")])
def test_an_accumulator_kept_in_global_memory_across_iterations(tag, k0, verdict):
    # C += A B one k-tile per iteration, through global memory (load C, one MMA, store C).
    # The store's chain goes on at the next iteration's load of the same elements and is
    # checked at the kernel's end. It was "never accumulates k=0" for an untagged C (each
    # load a fresh start), and for a tagged C the iterations after the first were not
    # checked: every iteration reading k-tile 0 was proved (a review helper).
    text = RMW.replace("{K0}", k0)
    if tag:
        text = text.replace("    B = ave.tag(", "    C = ave.tag(C, lambda m, n: ave.label("
                            "row=m, col=n))\n    B = ave.tag(")
    res = compile_source(text, "rmw.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, ds = _acc206(k)
    rng = np.random.default_rng(18)
    A = NUM.to_storage(bf16, rng.standard_normal((64, 72)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((72, 64)).astype(np.float32))
    C = np.zeros((64, 64), np.float32)
    run(k, (1,), [A, B, C], checks=False)
    ref = NUM.from_storage(bf16, A).astype(np.float64) @ \
        NUM.from_storage(bf16, B).astype(np.float64)
    if verdict is None:
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
        assert [r.status for r in a.assertions if r.kind == "accumulate"] == ["proved"]
        assert np.abs(C - ref).max() < 1e-3 * np.abs(ref).max()
    else:
        (d,) = ds
        assert d.witness["what"] == verdict
        assert np.abs(C - ref).max() > 1e-1


def test_an_accumulator_read_back_where_no_chain_was_stored_is_unknown():
    # the first pass's result staged through shared memory into C, then C loaded as the
    # start of a second pass: C holds a partial sum the check did not follow there (the
    # store into shared memory ended the chain). It was a fresh start: proved, for a kernel
    # that sums every k twice (a review helper). Now AVE205 at the MMA.
    text = KERNEL.replace("{K0}", "kt * 32").replace(
        "    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)\n",
        "    sC = ave.alloc((64, 64), ave.f32, space=\"shared\")\n"
        "    ave.store(sC, acc)\n    ave.barrier()\n"
        "    ave.copy(sC, C[0:64, 0:64], mask=lambda m, n: m < M)\n    ave.barrier()\n"
        "    acc = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)\n"
        "    for kt in ave.range(0, (K + 31) // 32):\n        k0 = kt * 32\n"
        "        ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))\n"
        "        ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)\n"
        "        ave.barrier()\n"
        "        acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)\n"
        "        ave.barrier()\n"
        "    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)\n")
    res = compile_source(text, "twice.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a = analyze(res.kernels[0])
    (d,) = [d for d in a.diagnostics if d.code == "AVE205"]
    assert "read back from global memory" in d.message
    assert not any(d.code == "AVE206" for d in a.diagnostics)


@pytest.mark.parametrize("change, code", [
    # the load under a narrower mask than the store: its last row reads zeros
    (("        part = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)\n",
      "        part = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M - 1)\n"),
     "AVE205"),
    # zeros stored over the chain: each load reads zeros
    (("        ave.store(C[0:64, 0:64], part, mask=lambda m, n: m < M)\n",
      "        ave.store(C[0:64, 0:64], part, mask=lambda m, n: m < M)\n"
      "        ave.store(C[0:64, 0:64], ave.zeros((64, 64), ave.f32, tiled.c),"
      " mask=lambda m, n: m < M)\n"), "AVE205"),
    # the stored chain loaded twice and added: every earlier tile counted twice
    (("        part = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)\n",
      "        part = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M) + "
      "ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)\n"), "AVE206"),
])
def test_a_chain_in_global_memory_is_continued_only_by_what_reads_it_back(change, code):
    # (a review helper: all three were proved) -- a load continues the chain stored in the
    # same elements under the same mask; any other write into the tensor drops what is
    # known to be there (a later load of it: AVE205); a load leaves the chain in place
    old, new = change
    text = RMW.replace("{K0}", "kt * 32")
    assert old in text
    res = compile_source(text.replace(old, new), "rmw2.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a = analyze(res.kernels[0])
    assert code in {d.code for d in a.diagnostics}, [d.message for d in a.diagnostics]
    if code == "AVE206":
        (d,) = [d for d in a.diagnostics if d.code == "AVE206"]
        assert (d.witness["what"], d.witness["value"]) == ("twice", 0)
    assert any(r.status in ("unknown", "violated") for r in a.assertions
               if r.kind == "accumulate")


def test_a_reset_after_the_loop_read_by_an_epilogue_is_not_passed_over():
    # `acc = where(row < M - 1, acc, 0.0)` then `ave.maximum(acc, 0.0)` (a ReLU epilogue)
    # and the store: the stored row M - 1 holds 0. The computation made the reset class
    # pass unchecked, as flash attention's masked scores are (a review helper): only a
    # reduction or an op with other tagged data is that idiom; here AVE205.
    k, _ = _reset_kernel(f"acc = ave.where({ROW} < M - 1, acc, 0.0)\n"
                         "    acc = ave.maximum(acc, 0.0)", where="end")
    a = analyze(k)
    assert [d.code for d in a.diagnostics] == ["AVE205"], [d.message for d in a.diagnostics]


def test_a_reset_class_witness_names_a_reset_element():
    # `where((row == 3) & (kt == 1), 0.0, acc)`: only row 3 is reset, at kt = 1. The class
    # was checked in every warp and the witness named thread 0's acc[0, 0], which kept the
    # accumulator (a review helper); now a member: thread 12 holds row 3 (m16n8k16 C:
    # thread t holds rows t // 4 and t // 4 + 8), and the interpreter's row 3 is the one
    # wrong.
    k, _ = _reset_kernel(f"acc = ave.where(({ROW} == 3) & (kt == 1), 0.0, acc)")
    a, (d,) = _acc206(k)
    w = d.witness
    assert w["threads"][0]["thread"] == 12 and w["accumulator"] == [3, 0]
    assert (w["what"], w["value"]) == ("never", 0)
    C, af, bf = _gemm_in_interpreter(k, 64, 72, 19)
    ref = af @ bf
    bad = np.nonzero(np.abs(C - ref).max(axis=1) > 1e-2)[0].tolist()
    assert bad == [3]


@pytest.mark.parametrize("prologue, verdict", [
    # C zeroed under the loads' mask: each load reads the chain's start, then the chain
    ("    ave.store(C[0:64, 0:64], ave.zeros((64, 64), ave.f32, tiled.c),"
     " mask=lambda m, n: m < M)\n", "proved"),
    # a start of global data alone: C = 2 * C before C += A B
    ("    ave.store(C[0:64, 0:64], ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)"
     " * 2.0, mask=lambda m, n: m < M)\n", "proved"),
    # zeroed under a narrower mask: the loads' last row is no known start
    ("    ave.store(C[0:64, 0:64], ave.zeros((64, 64), ave.f32, tiled.c),"
     " mask=lambda m, n: m < M - 1)\n", "unknown"),
])
def test_a_start_stored_before_an_accumulation_through_global_memory(prologue, verdict):
    # zeroing C before `C += A B` one k-tile per iteration through global memory: the
    # first load read back a tile the kernel wrote, no chain stored there -- AVE205 "may
    # hold a partial sum" on a correct kernel (a review note). A store of a value with no
    # products is the chain's start for a load of the same elements under the same mask.
    text = RMW.replace("{K0}", "kt * 32").replace(
        "    acc = ave.zeros((64, 64), ave.f32, tiled.c)\n", prologue)
    res = compile_source(text, "start.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a = analyze(k)
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    assert r.status == verdict, [d.message for d in a.diagnostics]
    if verdict == "proved":
        assert a.diagnostics == [], [d.message for d in a.diagnostics]
        rng = np.random.default_rng(20)
        A = NUM.to_storage(bf16, rng.standard_normal((64, 72)).astype(np.float32))
        B = NUM.to_storage(bf16, rng.standard_normal((72, 64)).astype(np.float32))
        C0 = rng.standard_normal((64, 64)).astype(np.float32)
        C = C0.copy()
        run(k, (1,), [A, B, C], checks=False)
        ref = NUM.from_storage(bf16, A).astype(np.float64) @ \
            NUM.from_storage(bf16, B).astype(np.float64)
        ref += 0.0 if "zeros" in prologue else 2.0 * C0.astype(np.float64)
        assert np.abs(C - ref).max() < 1e-3 * np.abs(ref).max()
    else:
        assert [d.code for d in a.diagnostics] == ["AVE205"]


SPLIT_RUNTIME = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], W: ave.Tensor[ave.f32, 3],
      SPLIT: ave.i32):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    KS = K // SPLIT
    ave.assume((B.shape[0] == K) & (K % (SPLIT * 32) == 0) & (SPLIT >= 1) & (K >= 32)
               & (M >= 64) & (B.shape[1] >= 64) & (W.shape[0] == SPLIT)
               & (W.shape[1] >= 64) & (W.shape[2] >= 64))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    z = ave.program_id(2)
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in ave.range(0, KS // 32):
        k0 = z * KS + {KT} * 32
        acc = ave.mma(ave.load(A[0:64, k0:k0 + 32], tiled.a),
                      ave.load(B[k0:k0 + 32, 0:64], tiled.b), acc, tiled)
    ave.store(W[z, 0:64, 0:64], acc)
'''


@pytest.mark.parametrize("kt, verdict", [("kt", None), ("0", "twice")])
def test_split_k_by_a_runtime_split_count(kt, verdict):
    # k0 = program_id(2) * (K // SPLIT) with a runtime SPLIT: the split query is not
    # linear, z3 ran to its budget and the undecided split was taken for a whole sum -- a
    # false "never accumulates k=0" (a review note). A model of two blocks decides it.
    # (the bounds of `z * (K // SPLIT)` are not linear either: z3 may give up on them
    # within a short budget -- AVE205 there is not what this test is about)
    from ave_core.analysis import AnalysisOptions
    res = compile_source(SPLIT_RUNTIME.replace("{KT}", kt), "splitr.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, d = _acc206(k, options=AnalysisOptions(solver_timeout_ms=500))
    (r,) = [r for r in a.assertions if r.kind == "accumulate"]
    if verdict is None:
        assert d == [] and r.status == "proved", [x.message for x in a.diagnostics]
        rng = np.random.default_rng(21)
        A = NUM.to_storage(bf16, rng.standard_normal((64, 128)).astype(np.float32))
        B = NUM.to_storage(bf16, rng.standard_normal((128, 64)).astype(np.float32))
        W = np.full((2, 64, 64), np.nan, np.float32)
        run(k, (1, 1, 2), [A, B, W, 2], checks=False)
        ref = NUM.from_storage(bf16, A).astype(np.float64) @ \
            NUM.from_storage(bf16, B).astype(np.float64)
        assert np.abs(W.sum(axis=0) - ref).max() < 1e-3 * np.abs(ref).max()
    else:
        (x,) = d
        assert x.witness["what"] == verdict


HEAD_DIM = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def qk(Q: ave.Tensor[ave.bf16, 2], K: ave.Tensor[ave.bf16, 2], S: ave.Tensor[ave.f32, 2]):
    Q = ave.tag(Q, lambda m, d: ave.label(row=m, k=d))
    K = ave.tag(K, lambda n, d: ave.label(key=n, k=d))
    t = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(4, 1),
                      tile=(64, 64, 16))
    sQ = ave.alloc((64, 64), ave.bf16, space="shared")
    sK = ave.alloc((64, 64), ave.bf16, space="shared")
    ave.copy(Q[0:64, 0:64], sQ, vector_bytes=16)
    ave.copy(K[0:64, 0:64], sK, vector_bytes=16)
    ave.barrier()
    acc = ave.zeros((64, 64), ave.f32, t.c)
    for kk in ave.static_range({NK}):
        q = ave.load(sQ[0:64, kk * 16:kk * 16 + 16], t.a)
        k = ave.load(sK[0:64, kk * 16:kk * 16 + 16].T, t.b)
        acc = ave.mma(q, k, acc, t)
    ave.store(S[0:64, 0:64], acc)
'''


@pytest.mark.parametrize("split", [False, True])
def test_a_packed_row_half_reduced_is_proved(split):
    # Q packs [q | other]: q (columns 0:64) is reduced, the other half passed through to R
    # -- read by its own load (split) or staged with q by one copy of the whole row. The
    # range the copies read was tried as the reduction's extent: "never accumulates k=64"
    # on both correct kernels (review helpers); the extent is the range the MMAs read.
    text = HEAD_DIM.replace("{NK}", "4").replace(
        "S: ave.Tensor[ave.f32, 2]):", "S: ave.Tensor[ave.f32, 2], R: ave.Tensor[ave.f32, 2]):")
    if split:
        text = text.replace("    ave.store(S[0:64, 0:64], acc)\n",
                            "    ave.store(R[0:64, 0:64], ave.cast(ave.load(Q[0:64, 64:128], t.c),"
                            " ave.f32))\n    ave.store(S[0:64, 0:64], acc)\n")
    else:
        text = text.replace("sQ = ave.alloc((64, 64)", "sQ = ave.alloc((64, 128)").replace(
            "ave.copy(Q[0:64, 0:64], sQ", "ave.copy(Q[0:64, 0:128], sQ").replace(
            "    ave.store(S[0:64, 0:64], acc)\n",
            "    ave.store(R[0:64, 0:64], ave.cast(ave.load(sQ[0:64, 64:128], t.c), ave.f32))\n"
            "    ave.store(S[0:64, 0:64], acc)\n")
    res = compile_source(text, "packed.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a = analyze(k)
    assert a.diagnostics == [], [d.message for d in a.diagnostics]
    rng = np.random.default_rng(31)
    Q = NUM.to_storage(bf16, rng.standard_normal((64, 128)).astype(np.float32))
    Kt = NUM.to_storage(bf16, rng.standard_normal((64, 64)).astype(np.float32))
    S = np.full((64, 64), np.nan, np.float32)
    R = np.full((64, 64), np.nan, np.float32)
    run(k, (1,), [Q, Kt, S, R], checks=False)
    qf, kf = (NUM.from_storage(bf16, x).astype(np.float64) for x in (Q, Kt))
    ref = qf[:, :64] @ kf.T
    assert np.abs(S - ref).max() < 1e-3 * np.abs(ref).max()
    assert np.array_equal(R, qf[:, 64:].astype(np.float32))


TAIL_TILE = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def tl(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    ave.assume(K >= 32)
    t = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                      tile=(64, 64, 32))
    acc = ave.zeros((64, 64), ave.f32, t.c)
    KF = K // 32
    for kt in ave.range(0, KF):
        acc = ave.mma(ave.load(A[0:64, kt * 32:kt * 32 + 32], t.a, mask=lambda m, k: m < M),
                      ave.load(B[kt * 32:kt * 32 + 32, 0:64], t.b), acc, t)
    if K % 32 != 0:
        k0 = {K0}
        acc = ave.mma(ave.load(A[0:64, k0:k0 + 32], t.a, mask=lambda m, k: (m < M) & (k < K)),
                      ave.load(B[k0:k0 + 32, 0:64], t.b, mask=lambda k, n: k < K), acc, t)
    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)
'''


@pytest.mark.parametrize("k0", ["KF * 32", "K - 32"])
def test_a_tail_tile_overlapping_the_last_full_tile_repeats(k0):
    # `k0 = K - 32` (the last 32 columns) overlaps the loop's last full tile: k in
    # [K - 32, 32 * KF) is summed twice. Only equal index forms were compared for "at most
    # once": `K - 32 + j` against the loop's constants never was -- proved (a review
    # helper). For K = 33 the tail starts at k = 1: k = 1 again, after kt = 0.
    res = compile_source(TAIL_TILE.replace("{K0}", k0), "tail.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, d = _acc206(k)
    rng = np.random.default_rng(23)
    A = NUM.to_storage(bf16, rng.standard_normal((64, 33)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((33, 64)).astype(np.float32))
    C = np.full((64, 64), np.nan, np.float32)
    run(k, (1,), [A, B, C], checks=False)
    af, bf = (NUM.from_storage(bf16, x).astype(np.float64) for x in (A, B))
    if k0 == "KF * 32":
        assert a.diagnostics == [], [x.message for x in a.diagnostics]
        assert np.abs(C - af @ bf).max() < 1e-3 * np.abs(af @ bf).max()
    else:
        (x,) = d
        w = x.witness
        assert (w["what"], w["value"], w["accumulator"]) == ("twice", 1, [0, 0])
        assert w["model"]["A.shape[1]"] == 33
        assert w["mma_loops"] == {"first": {"kt": 0}, "again": {}}
        # the interpreter's C[0, 0] counts k = 1..31 twice
        extra = float(af[0, 1:32] @ bf[1:32, 0])
        assert abs(float(C[0, 0]) - float(af[0] @ bf[:, 0]) - extra) < 1e-3


TWO_TILES = KERNEL[:KERNEL.index("    acc = ave.zeros")] + '''\
    for nt in ave.static_range(2):
        n0 = nt * 64
        ave.store(C[0:64, n0:n0 + 64], ave.zeros((64, 64), ave.f32, tiled.c),
                  mask=lambda m, n: m < M)
        for kt in ave.range(0, (K + 31) // 32):
            k0 = {K0}
            ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))
            ave.copy(B[k0:k0 + 32, n0:n0 + 64], sB, mask=lambda k, n: k < K)
            ave.barrier()
            part = ave.load(C[0:64, n0:n0 + 64], tiled.c, mask=lambda m, n: m < M)
            part = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), part, tiled)
            ave.store(C[0:64, n0:n0 + 64], part, mask=lambda m, n: m < M)
            ave.barrier()
'''


@pytest.mark.parametrize("k0, verdict", [("kt * 32", None),
                                         ("kt * 32 * nt", ("twice", 0))])
def test_a_write_into_another_tile_keeps_a_chain_in_global_memory(k0, verdict):
    # two column tiles of C, each zeroed then accumulated through global memory: zeroing
    # tile 1 dropped tile 0's chain (any write into C did) -- its start refused (AVE205 on
    # a correct kernel) and, with tile 0 summing k-tile 0 every time, its chain never
    # checked (proved; a review helper). Tiles by constant offsets of one form are apart.
    res = compile_source(TWO_TILES.replace("{K0}", k0), "tiles.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a, d = _acc206(k)
    rng = np.random.default_rng(29)
    A = NUM.to_storage(bf16, rng.standard_normal((64, 72)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((72, 128)).astype(np.float32))
    C = np.full((64, 128), np.nan, np.float32)
    run(k, (1,), [A, B, C], checks=False)
    ref = NUM.from_storage(bf16, A).astype(np.float64) @ \
        NUM.from_storage(bf16, B).astype(np.float64)
    if verdict is None:
        assert a.diagnostics == [], [x.message for x in a.diagnostics]
        assert np.abs(C - ref).max() < 1e-3 * np.abs(ref).max()
    else:
        (x,) = d
        assert (x.witness["what"], x.witness["value"]) == verdict
        assert np.abs(C[:, :64] - ref[:, :64]).max() > 1e-1


ZERO_STORE = ("ave.store(C[0:64, 0:64], ave.zeros((64, 64), ave.f32, tiled.c),"
         " mask=lambda m, n: m < M)\n")


@pytest.mark.parametrize("after", [
    # zeros right after each iteration's chain: the kernel outputs zeros
    "        " + ZERO_STORE,
    # ... after a load of the chain whose value nobody uses (it made the zeros a start: the
    # kernel was proved while C ended with the last k-tile; a review helper)
    "        ave.barrier()\n"
    "        old = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)\n"
    "        ave.barrier()\n        " + ZERO_STORE,
    # ... in one arm of a runtime branch, all iterations but the last (the drop was undone
    # with its arm, the next load continued the chain: proved; a review helper)
    "        ave.barrier()\n        if kt + 1 < (K + 31) // 32:\n            " + ZERO_STORE,
])
def test_zeros_over_a_chain_are_no_start(after):
    # C zeroed first (a start), then C += A B through global memory with zeros stored over
    # the chain after each iteration (or some): those products are lost -- the next load is
    # a read back, AVE205 at its MMA
    store = "        ave.store(C[0:64, 0:64], part, mask=lambda m, n: m < M)\n"
    text = RMW.replace("{K0}", "kt * 32").replace(
        "    acc = ave.zeros((64, 64), ave.f32, tiled.c)\n", "    " + ZERO_STORE).replace(
        store, store + after)
    res = compile_source(text, "zeros.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    a = analyze(res.kernels[0])
    assert [d.code for d in a.diagnostics] == ["AVE205"], [d.message for d in a.diagnostics]
    assert "read back" in a.diagnostics[0].message
