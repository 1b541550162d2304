"""Witnesses name a runtime-start loop's iteration by its variable's value.

A loop whose start is known only at run time (``range(K // 64, K // 32)``, split-K's
``range(s * KPER, ...)``, a reversed ``range(KT - 1, -1, -1)``, ``range(program_id(0),
4)``) is unrolled by iteration number; witnesses used to name that number ("kt=0" for the
third k-tile), which the interpreter -- naming the variable's value -- never matched. The
value comes from the witness' own sizes (the query that found it, or its block's); where
they do not fix it the number stays, and the witness says so (``loop_iterations`` and a
note) rather than naming sizes the finding was not checked for. Each expected value is
derived by hand below and, where the interpreter has the check, confirmed by its dynamic
checks at the witness' sizes and block.
"""

from __future__ import annotations

import textwrap

import numpy as np

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_source
from ave_core.interp import run

HEAD = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2]):
    M, K = A.shape
    s = ave.alloc((32, 32), ave.f32, space="shared")
'''

RACE = HEAD + '''
    for kt in ave.range(K // 64, K // 32):
        ave.copy(A[0:32, kt * 32:kt * 32 + 32], s, vector_bytes=16)
        ave.barrier()
        ave.copy(ave.transpose(s), C[0:32, kt * 32:kt * 32 + 32], vector_bytes=4)
'''

PID_LOOP = HEAD + '''
    for kt in ave.range(ave.program_id(0), 4):
        ave.copy(A[0:32, kt * 32:kt * 32 + 32], s, vector_bytes=16)
        ave.barrier()
        if kt == 3:
{body}
        ave.copy(s, C[0:32, kt * 32:kt * 32 + 32], vector_bytes=16)
        ave.barrier()
'''

#: a kernel over tagged A (M, K), B (K, N) with a 2x2-warp m16n8k16 tiled MMA
MMA_HEAD = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))'''


def _kernel(src: str):
    res = compile_source(textwrap.dedent(src), "loops.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def _one(k, code: str):
    (d,) = [d for d in analyze(k).diagnostics if d.code == code]
    return d, d.witness


def test_a_race_whose_start_no_size_fixes_names_iterations_and_says_so():
    # range(K // 64, K // 32) runs twice for K in 96..159; the second iteration's copy
    # into s overwrites bytes the first iteration's transposed read still reads in other
    # warps. A race is found without a query: no sizes fix the start, so the witness
    # names iteration numbers 1 (later) and 0 (earlier) and says the start is K // 64.
    # (Sizes chosen to run the trip counts alone ignored branches and masks the finding
    # needs: "kt=2 for A.shape[1] = 96" for a race needing K >= 160; a review helper.)
    k = _kernel(RACE)
    d, w = _one(k, "AVE207")
    assert w["loop_indices"] == {"kt": 1} and w["earlier_loop_indices"] == {"kt": 0}
    assert w["loop_iterations"] == {"kt": "(A.shape[1] // 64)"} and "model" not in w
    assert "kt is named by its iteration number, from 0 (the loop starts at " \
           "A.shape[1] // 64, a value this finding does not fix)" in d.notes
    # the interpreter at K = 96 (start 1): the race in the second iteration, kt = 1 + 1
    rng = np.random.default_rng(5)
    A = rng.standard_normal((32, 96)).astype(np.float32)
    r = run(k, (1,), [A, np.full((32, 128), np.nan, np.float32)])
    races = [x for x in r.diagnostics if x.code == "AVE304"]        # (its race code)
    assert races and {x.witness["loop_indices"]["kt"] for x in races} == {2}


def test_an_out_of_bounds_access_names_the_iteration_by_value():
    # C is written unmasked at columns kt*32 .. kt*32+31. The bounds query fixes the
    # sizes: for one trip (K in 64..95: kt = K // 64 = 1) the lowest column past C's
    # extent is 32 with C.shape[1] <= 32; the iteration is kt = 1 (its number is 0).
    k = _kernel(RACE.replace("ave.transpose(s)", "s").replace("vector_bytes=4", "vector_bytes=16")
                .replace("        ave.copy(s, C", "        ave.barrier()\n        ave.copy(s, C")
                .rstrip() + "\n        ave.barrier()\n")
    d, w = _one(k, "AVE208")
    K = w["model"]["A.shape[1]"]
    assert 64 <= K < 96 and w["loop_indices"] == {"kt": 1}, w
    assert "loop_iterations" not in w
    assert w["coordinates"]["C"][1] == 32 * w["loop_indices"]["kt"]
    assert "kt=1" in d.message
    rng = np.random.default_rng(6)
    A = rng.standard_normal((32, K)).astype(np.float32)
    C = np.full((32, w["model"]["C.shape[1]"]), np.nan, np.float32)
    r = run(k, (1,), [A, C])
    oob = [x for x in r.diagnostics if x.code == "AVE301"]          # (its bounds code)
    assert oob and oob[0].witness["loop_indices"] == {"kt": 1}, [x.message for x in oob]


def test_a_loop_starting_at_zero_in_block_zero_keeps_its_values():
    # range(2 * z, min(2 * z + 2, K // 32)) in block z = 0 starts at 0: values and
    # iteration numbers agree; no sizes are added to the witness for them
    k = _kernel(RACE.replace("range(K // 64, K // 32)",
                             "range(ave.program_id(1) * 2, ave.minimum(ave.program_id(1) * 2 + 2, K // 32))"))
    d, w = _one(k, "AVE207")
    assert w["loop_indices"] == {"kt": 1} and w["block"] == [0, 0, 0]
    assert "model" not in w and "loop_iterations" not in w


def test_a_divergent_barrier_is_named_in_the_block_that_runs_the_trip_count():
    # range(program_id(0), 4) runs once only in block 3 (kt = 3), where `kt == 3` holds
    # and warp 0 alone reaches the inner barrier. It named block 0 and kt=0, where the
    # branch is not taken (a review helper). The interpreter, grid (4,), reports the
    # divergence at kt = 3 only.
    k = _kernel(PID_LOOP.format(body="            if ave.warp_id() == 0:\n"
                                     "                ave.barrier()"))
    d, w = _one(k, "AVE209")
    assert w["block"] == [3, 0, 0] and w["loop_indices"] == {"kt": 3}, w
    assert w["trip_counts"] == {"kt": 1} and "loop_iterations" not in w
    assert "(kt=3)" in d.message and "for some sizes" not in d.message
    r = run(k, (4,), [np.zeros((32, 128), np.float32), np.zeros((32, 128), np.float32)])
    div = [x for x in r.diagnostics if x.code == "AVE305"]
    assert div and {x.witness["loop_indices"]["kt"] for x in div} == {3}


def test_a_divergence_on_the_warp_alone_does_not_become_size_dependent():
    # the branch is on the warp only: "for any sizes" (no "for some sizes" in the
    # message, no sizes in the notes), the start K // 64 + 1 unfixed
    k = _kernel(HEAD + '''
    for kt in ave.range(K // 64 + 1, K // 32 + 1):
        if ave.warp_id() == 0:
            ave.barrier()
''')
    d, w = _one(k, "AVE209")
    assert "for some sizes" not in d.message and not any(n.startswith("for ") for n in d.notes)
    assert w["loop_iterations"] == {"kt": "(A.shape[1] // 64) + 1"}


def test_an_assert_disjoint_is_named_in_the_block_that_runs_the_trip_count():
    k = _kernel(PID_LOOP.format(body="            ave.assert_disjoint(s, s)"))
    d, w = _one(k, "AVE202")
    assert w["block"] == [3, 0, 0] and w["loop_indices"] == {"kt": 3}, w
    assert "kt=3" in d.message


def test_a_race_under_a_runtime_branch_names_no_sizes_it_was_not_checked_for():
    # block 0 cannot run `range(program_id(0), 2)` once: block 1 (b = 1). The read sits
    # under `kt >= 4`; the race needs K >= 192. The block's other sizes (z3's smallest
    # running the trip counts, K = 96) were shown, and kt named by value there (kt=2
    # after kt=1) -- where the interpreter sees no race (a review helper). Now: b by
    # value (the block's program id fixes it), kt by iteration number, no K.
    k = _kernel(HEAD + '''
    for b in ave.range(ave.program_id(0), 2):
        for kt in ave.range(K // 64, K // 32):
            ave.copy(A[0:32, kt * 32:kt * 32 + 32], s, vector_bytes=16)
            ave.barrier()
            if kt >= 4:
                ave.copy(ave.transpose(s), C[0:32, kt * 32:kt * 32 + 32], vector_bytes=4)
''')
    d, w = _one(k, "AVE207")
    assert w["block"] == [1, 0, 0] and w["trip_counts"] == {"b": 1, "kt": 2}
    assert w["loop_indices"] == {"b": 1, "kt": 1} and w["earlier_loop_indices"] == {"b": 1, "kt": 0}
    assert w["loop_iterations"] == {"kt": "(A.shape[1] // 64)"}
    assert w["model"] == {"num_programs(0)": 2, "program_id(0)": 1}
    # the interpreter, K = 192 (kt = 3, 4, 5): within an iteration of b the race is at
    # the iteration after the first read (kt = 4), kt = 5 (it reports the sites of block
    # 0, whose b = 1 iteration is block 1's; (1, 3) is block 0's race across b)
    rng = np.random.default_rng(8)
    A = rng.standard_normal((32, 192)).astype(np.float32)
    r = run(k, (2,), [A, np.full((32, 192), np.nan, np.float32)])
    races = {(x.witness["loop_indices"]["b"], x.witness["loop_indices"]["kt"])
             for x in r.diagnostics if x.code == "AVE304"}
    assert races == {(0, 5), (1, 3), (1, 5)}, races


def test_an_accumulation_witness_without_the_program_id_keeps_iteration_numbers():
    # range(2 - program_id(0), 2) runs twice only in block 0 (kt = 0, 1); the query's
    # model has no program id: the start 2 - pid was taken at pid = 0 in a check that
    # stands for every block (it said "kt=2 and again kt=3", values no block runs; a
    # review helper). The numbers stay, and the witness says so.
    src = MMA_HEAD + '''
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in ave.range(2 - ave.program_id(0), 2):
        a = ave.load(A[0:64, 0:16], tiled.a)
        b = ave.load(B[0:16, 0:64], tiled.b)
        acc = ave.mma(a, b, acc, tiled)
    ave.store(C[0:64, 0:64], acc)
'''
    d, w = _one(_kernel(src), "AVE206")
    assert (w["what"], w["value"]) == ("twice", 0)
    assert w["chain"] == [{"kt": 0}, {"kt": 1}]
    assert w["loop_iterations"] == {"kt": "-1*program_id(0) + 2"}
    assert "at kt=0 and again at kt=1" in d.message


def _mma_status(body: str) -> tuple:
    src = MMA_HEAD + """
    K = A.shape[1]
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
""" + textwrap.indent(textwrap.dedent(body), "    ") + """
    ave.store(C[0:64, 0:64], acc)
"""
    a = analyze(_kernel(src))
    (r,) = [r for r in a.assertions if r.kind == "mma"]
    return r.status, r


def test_a_pairing_check_past_its_candidate_limit_is_never_a_silent_pass():
    # A is masked to k % 8 >= 2 and B is one k-tile ahead: every loaded pair disagrees
    # on k, but the first 64 pairs (thread 0's, k % 8 in 0..1) are masked off. Only the
    # first 64 were decided and the MMA was "proved" (a review helper; the interpreter
    # pairs A's k = 2 with B's k = 18). Now every distinct query is decided: the first
    # pair that can differ, thread 0's k = 2 (its registers hold k = 0, 1, 8, 9 then 2,
    # 3, 10, 11 in the m16n8k16 A layout), paired with B's k = 18.
    status, r = _mma_status("""
        a = ave.load(A[0:64, 0:16], tiled.a, mask=lambda m, k: (k % 8) * K >= 2 * K)
        b = ave.load(B[16:32, 0:64], tiled.b)
        acc = ave.mma(a, b, acc, tiled)
    """)
    assert status == "violated"
    x, y = r.witness["operands"]["x"]["tags"]["k"], r.witness["operands"]["y"]["tags"]["k"]
    assert x % 8 >= 2 and y == x + 16, r.witness


def test_an_mma_under_a_runtime_branch_is_checked_where_the_branch_runs_it():
    # B is one k-tile ahead only for kt < 3 (kb = kt*16 + 16 there), and the MMA runs
    # only for kt >= 3: it always pairs A and B on k. The pairing query ignored the
    # branch: "violated, kt=0 for A.shape[1] = 16", where the MMA never runs (a false
    # positive). With the branch at kt >= 2, kt = 2 pairs A's k = 32 with B's k = 48:
    # violated there, named by value.
    body = """
        for kt in ave.range(K // 64, K // 16):
            kb = kt * 16 + (1 - ave.minimum(kt // 3, 1)) * 16
            a = ave.load(A[0:64, kt * 16:kt * 16 + 16], tiled.a)
            b = ave.load(B[kb:kb + 16, 0:64], tiled.b)
            if kt >= FIRST:
                acc = ave.mma(a, b, acc, tiled)
    """
    status, r = _mma_status(body.replace("FIRST", "3"))
    assert status == "proved", r.witness
    status, r = _mma_status(body.replace("FIRST", "2"))
    assert status == "violated"
    w = r.witness
    assert w["loop_indices"] == {"kt": 2} and "loop_iterations" not in w
    assert (w["operands"]["x"]["tags"]["k"], w["operands"]["y"]["tags"]["k"]) == (32, 48)
    K = w["model"]["A.shape[1]"]
    assert K // 64 <= 2 < K // 16, w


def test_an_mma_under_a_runtime_branch_keeps_violations_past_the_first_pairs():
    # under `if kt >= 3:` B's columns with k % 8 < 2 come from b1 (one tile ahead only
    # for kt < 3), the others from b2 (always one tile ahead): a violation at kt = 3
    # (the interpreter: A's k = 50 with B's k = 66). The first 64 pairs, b1's, cannot
    # differ under the branch's condition; asked under it alone the MMA was "proved"
    # (a review helper). Violated at kt = 3, K = 192 (the interpreter's pair).
    status, r = _mma_status("""
        kc = ave.coord((16, 64), 0, tiled.b)
        for kt in ave.range(K // 64, K // 16):
            kb = kt * 16 + (1 - ave.minimum(kt // 3, 1)) * 16
            a = ave.load(A[0:64, kt * 16:kt * 16 + 16], tiled.a)
            b1 = ave.load(B[kb:kb + 16, 0:64], tiled.b)
            b2 = ave.load(B[kt * 16 + 16:kt * 16 + 32, 0:64], tiled.b)
            b = ave.where(kc % 8 < 2, b1, b2)
            if kt >= 3:
                acc = ave.mma(a, b, acc, tiled)
    """)
    assert status == "violated"
    w = r.witness
    assert w["loop_indices"] == {"kt": 3} and w["model"]["A.shape[1]"] == 192, w
    assert (w["operands"]["x"]["tags"]["k"], w["operands"]["y"]["tags"]["k"]) == (50, 66)


def test_an_mma_under_a_lane_dependent_branch_reads_every_lane():
    # the condition differs between the half-warps; a warp's MMA reads every lane's
    # registers, also those of lanes that skip it. A and B disagree only across the
    # half-warps: the lanes' guards conjoined made every pair impossible ("proved"; a
    # review helper; the interpreter, K = 32: every warp pairs A's k = 16 with B's k = 0)
    status, r = _mma_status("""
        a0 = ave.load(A[0:64, 0:16], tiled.a)
        a1 = ave.load(A[0:64, 16:32], tiled.a)
        b0 = ave.load(B[0:16, 0:64], tiled.b)
        b1 = ave.load(B[16:32, 0:64], tiled.b)
        a = ave.where(ave.coord((64, 16), 0, tiled.a) % 8 < 4, a0, a1)
        b = ave.where(ave.coord((16, 64), 1, tiled.b) % 8 < 4, b0, b1)
        hi = ave.lane_id() // 16
        if hi == ave.minimum(K // 100, 1):
            acc = ave.mma(a, b, acc, tiled)
    """)
    assert status == "violated"
