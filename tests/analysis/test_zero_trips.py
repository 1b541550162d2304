"""Runtime loops that some sizes let run zero times are analysed for 0 trips too (trip
counts 1..T only before: a kernel whose loop is ``range(1, KT)`` was never checked for K <=
BK). Witnesses are derived by hand and confirmed by the interpreter's race check."""

from __future__ import annotations

import pathlib

import numpy as np

from ave_core.analysis import AnalysisOptions, analyze
from ave_core.compiler.frontend import compile_file, compile_source
from ave_core.compiler.unroll import runtime_loops, unrolled_variants
from ave_core.interp import run

from .test_conditional_copies import REFILL
from .test_races import _JOIN_HEAD, _JOIN_TAIL

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Q-style staging: `s` is filled by an asynchronous copy before the loop, the loop waits
# and synchronizes before using it, and the epilogue reuses `s` to stage the output. With
# one trip or more, the loop's last barrier separates the copy from the staging writes;
# with zero trips (K <= 32: KT = 1) nothing does.
SRC = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    KT = (K + 31) // 32
    s = ave.alloc((32, 32), ave.f32)
    t = ave.alloc((32, 32), ave.f32)
    ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)
    ave.commit_async()
    for kt in ave.range(1, KT):
        ave.wait_async(0)
        ave.barrier()
        ave.copy(s, t, vector_bytes=16)
        ave.barrier()
        ave.copy_async(X[0:32, kt * 32:kt * 32 + 32], s, vector_bytes=16,
                       mask=lambda m, k: k < K)
        ave.commit_async()
        ave.wait_async(0)
        ave.barrier()
{FIX}    ave.copy(Z[0:32, 0:32], s, vector_bytes=4)
    ave.barrier()
    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
'''
LINES = SRC.splitlines()
FIX = "    ave.wait_async(0)\n    ave.barrier()\n"


def _kernel(fix: str = ""):
    res = compile_source(SRC.replace("{FIX}", fix), "z.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def _interp(k, K):
    X = np.random.default_rng(1).standard_normal((32, K)).astype(np.float32)
    Z = np.random.default_rng(2).standard_normal((32, 32)).astype(np.float32)
    Y = np.full((32, 32), np.nan, np.float32)
    res = run(k, (1,), [X, Z, Y])
    return [x.code for x in res.diagnostics], Y, Z


def test_a_race_only_when_the_loop_runs_zero_times():
    k = _kernel()
    # trip counts 1..T: clean (the blind spot)
    a = analyze(k, AnalysisOptions(zero_trips=False))
    assert a.diagnostics == [] and a.variants == 4
    # with the zero-trip variant: two races, both at kt = 0 trips. Hand witnesses: the
    # async copy's 16-byte vectors go to threads 0..63 in order (thread 0: bytes 0..15),
    # the staging copy's 4-byte vectors to threads 0..127 (thread 1: bytes 4..7): thread
    # 1's staging write of byte 4 and thread 0's copy into it, never waited, race (the
    # copy lands at the latest when the kernel ends; reported at the copy, the later
    # write). Thread 0 then reads byte 0 of its own copy still in flight.
    a = analyze(k)
    assert a.variants == 5
    got = sorted((d.range.start.line, d.code, [t["thread"] for t in d.witness["threads"]],
                  d.witness["byte"], d.witness["trip_counts"]) for d in a.diagnostics)
    copy = LINES.index("    ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)")
    read = LINES.index("    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)")
    assert got == [(copy, "AVE207", [0, 1], 4, {"kt": 0}),
                   (read, "AVE207", [0], 0, {"kt": 0})]
    assert all("found with the kt loop running 0 times" in d.notes for d in a.diagnostics)
    # the interpreter: K = 32 (one k-tile, zero trips) races; K = 64 does not
    codes, _, _ = _interp(k, 32)
    assert codes.count("AVE304") >= 2
    assert _interp(k, 64)[0] == []


def test_the_fixed_kernel_is_clean_and_right():
    k = _kernel(FIX)
    a = analyze(k)
    assert a.variants == 5 and a.diagnostics == []
    for K in (32, 64):
        codes, Y, Z = _interp(k, K)
        assert codes == [] and np.array_equal(Y, Z)


def test_loops_that_always_run_get_no_zero_variant():
    # examples/gemm.py: KT = cdiv(K, 32) >= 1 for every K >= 1: no zero-trip variant
    res = compile_file(str(ROOT / "examples" / "gemm.py"))
    k = res.kernels[0]
    assert analyze(k).variants == analyze(k, AnalysisOptions(zero_trips=False)).variants


def test_zero_trip_variants_are_the_combinations_with_a_zero():
    text = SRC.replace("{FIX}", "").replace(
        "    ave.copy(Z[0:32, 0:32], s, vector_bytes=4)\n",
        "    for j in ave.range(0, KT):\n        ave.barrier()\n"
        "    ave.copy(Z[0:32, 0:32], s, vector_bytes=4)\n")
    k = compile_source(text, "z2.py").kernels[0]
    loops = runtime_loops(k)
    assert len(loops) == 2
    combos = [tuple(t.values()) for t, _ in unrolled_variants(k, 2, zero=loops[:1])]
    assert combos == [(0, 1), (0, 2)]
    combos = [tuple(t.values()) for t, _ in unrolled_variants(k, 2, zero=loops)]
    assert combos == [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0)]
    assert [tuple(t.values()) for t, _ in unrolled_variants(k, 2)] == \
        [(1, 1), (1, 2), (2, 1), (2, 2)]
    # `keep` decides before unrolling (here: equal counts only)
    same = [tuple(t.values()) for t, _ in unrolled_variants(
        k, 2, keep=lambda c: len(set(c.values())) == 1)]
    assert same == [(1, 1), (2, 2)]


# ------------------------------------------------------------------ ave.assume


def _with_assume(cond: str):
    text = SRC.replace("{FIX}", "").replace(
        "    KT = (K + 31) // 32\n", f"    KT = (K + 31) // 32\n    ave.assume({cond})\n")
    res = compile_source(text, "z.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def test_a_precondition_rules_out_the_zero_trip_variant():
    # `K > 32`: KT >= 2, the loop runs: no zero-trip variant, no race (K = 32 breaks the
    # contract: the interpreter says so)
    k = _with_assume("K > 32")
    a = analyze(k)
    assert a.diagnostics == [] and a.variants == 4
    codes, _, _ = _interp(k, 32)
    assert "AVE306" in codes
    assert _interp(k, 64)[0] == []
    # `K > 0` rules out nothing: the races stay, with sizes that satisfy it
    assert sorted(d.code for d in analyze(_with_assume("K > 0")).diagnostics) == \
        ["AVE207", "AVE207"]


ONCE = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    KT = (K + 31) // 32
{ASSUME}    s = ave.alloc((32, 32), ave.f32)
    for kt in ave.range(1, KT):
        if kt == 2:
            ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.barrier()
    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
'''


def test_a_precondition_rules_out_trip_counts():
    # `s` is written in the loop's second iteration (kt = 2) only: read unwritten when the
    # loop runs 0 or 1 times (K <= 64). Under `K > 64` it runs at least twice: the variants
    # of 0 and 1 trips are not reported (the 1-trip one still runs: it is the prefix the
    # others resume from)
    k = compile_source(ONCE.replace("{ASSUME}", ""), "o.py").kernels[0]
    (d,) = analyze(k).diagnostics
    assert d.code == "AVE203" and d.witness["trip_counts"] == {"kt": 1}
    k = compile_source(ONCE.replace("{ASSUME}", "    ave.assume(K > 64)\n"), "o.py").kernels[0]
    assert analyze(k).diagnostics == []


def test_a_witness_satisfies_the_preconditions():
    # the conditional copy of test_conditional_copies (`if K > 64:` around the only copy
    # into sA) is read unwritten for K <= 64: the smallest such K is 1, under `K > 8` it is 9
    head = _JOIN_HEAD.replace("    M, K = A.shape\n", "    M, K = A.shape\n    ave.assume(K > 8)\n")
    assert head != _JOIN_HEAD
    res = compile_source(head + REFILL + _JOIN_TAIL, "j.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    (d,) = [d for d in analyze(res.kernels[0]).diagnostics if d.code == "AVE203"]
    assert d.witness["model"] == {"A.shape[1]": 9}


def test_assume_errors():
    base = SRC.replace("{FIX}", "")

    def diags(line: str):
        text = base.replace("    KT = (K + 31) // 32\n", "    KT = (K + 31) // 32\n" + line)
        res = compile_source(text, "z.py")
        if res.diagnostics:
            return [d.code for d in res.diagnostics]
        a = analyze(res.kernels[0])
        return [(r.status, r.reason) for r in a.assertions if r.kind == "analysis"]

    assert diags("    ave.assume(32 > 64)\n") == ["AVE120"]
    assert diags("    ave.assume(K > 0, 3)\n") == ["AVE115"]
    (st, why), = diags("    if K > 64:\n        ave.assume(K > 96)\n")
    assert st == "unknown" and "under a branch" in why
    (st, why), = diags("    ave.assume(ave.thread_id() < K)\n")
    assert st == "unknown" and "differs across threads" in why


def test_lower_bound_of_a_trip_count():
    # the fast path that spares a z3 query per loop: cdiv(K, 32) >= 1 for K >= 1
    from ave_core.analysis.accumulation import lower_bound
    from ave_core.analysis.symbolic import Atom, SymTable
    tab = SymTable()
    K = tab.atom(Atom("dim", ("A", 1)))
    cdiv = tab.atom(Atom("op", ("floordiv", (K, 31), (0, 32))))
    assert lower_bound(tab, cdiv, 0) == 1          # (1 + 31) // 32
    assert lower_bound(tab, cdiv, -1) == 0          # range(1, KT): may run zero times
    assert lower_bound(tab, K, -64) == -63
    floor16 = tab.atom(Atom("op", ("floordiv", (K, 0), (0, 16))))
    assert lower_bound(tab, floor16, 0) == 0        # K // 16: 0 for K < 16
    pid = tab.atom(Atom("pid", (0,)))
    assert lower_bound(tab, tab.add(K, pid), 0) == 1
    assert lower_bound(tab, tab.add(K, pid, -1), 0) is None   # would need an upper bound
    by_size = tab.atom(Atom("op", ("floordiv", (K, 0), (K, 0))))
    assert lower_bound(tab, by_size, 0) is None     # not a constant divisor


def test_preconditions_that_rule_out_every_variant_are_unknown_not_clean():
    # `K >= 1024` runs the loop >= 32 times, past T: every variant 1..T was dropped and the
    # broken GEMM (a swizzle mismatch) checked clean, "0 errors" (a review helper)
    path = ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py"
    text = path.read_text(encoding="utf-8")
    anchor = "    M, K = A.shape\n"
    assert anchor in text
    res = compile_source(text.replace(anchor, anchor + "    ave.assume(K >= 1024)\n"),
                         "g.py")
    a = analyze(res.kernels[0])
    (r,) = a.assertions
    assert r.kind == "analysis" and r.status == "unknown"
    assert "rule out every trip count analysed (1..5)" in r.reason
    assert [d.code for d in a.diagnostics] == ["AVE205"]


def test_contradictory_or_misplaced_preconditions_are_unknown():
    def reasons(line: str, where: str = "    KT = (K + 31) // 32\n"):
        src = SRC.replace("{FIX}", "")
        assert src.count(where) == 1
        at = src.index(where) + len(where) - (0 if where.endswith("\n") else len("    for kt"))
        text = src[:at] + line + src[at:]
        a = analyze(compile_source(text, "z.py").kernels[0])
        return [r.reason for r in a.assertions if r.kind == "analysis"]

    (why,) = reasons("    ave.assume((K > 64) and (K < 40))\n")
    assert "no sizes satisfy" in why
    (why,) = reasons("    ave.assume(K < 0)\n")
    assert "no sizes satisfy" in why
    # inside a loop: a loop that runs zero times never reaches it (it hid the races)
    (why,) = reasons("        ave.assume(K > 32)\n", "    for kt in ave.range(1, KT):\n")
    assert "inside a loop" in why
    # after an access: the checks before it were made without it
    (why,) = reasons("    ave.assume(K > 32)\n", "    ave.commit_async()\n    for kt")
    assert "after a memory access" in why


FLOAT = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], alpha: ave.f32):
    ave.assume(alpha > 0.0)
    s = ave.alloc((32, 32), ave.f32)
    if alpha > 0.0:
        ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)
    ave.commit_async()
    ave.wait_async(0)
    ave.barrier()
    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
'''


def test_a_float_precondition_decides_the_same_comparison():
    # the two `alpha > 0.0` were two unknowns: the branch's else-arm stayed possible under
    # the assumption (AVE203 "for cmp@6:16 = 1, cmp@7:8 = 0"; a review helper)
    k = compile_source(FLOAT, "f.py").kernels[0]
    assert analyze(k).diagnostics == []
    # its negation is the other arm: `alpha <= 0.0` around the copy is never taken
    k = compile_source(FLOAT.replace("if alpha > 0.0:", "if alpha <= 0.0:"), "f.py").kernels[0]
    (d,) = analyze(k).diagnostics
    assert d.code == "AVE203"
    X = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    res = run(k, (1,), [X, np.zeros((32, 32), np.float32), np.float32(1.0)])
    assert "AVE303" in [x.code for x in res.diagnostics]


def test_contradictory_preconditions_are_reported_once_at_the_second():
    # every variant re-runs the first assume on the same solver, which already held both:
    # it was reported too (a new user)
    text = SRC.replace("{FIX}", "").replace(
        "    KT = (K + 31) // 32\n",
        "    KT = (K + 31) // 32\n    ave.assume(K % 32 == 0)\n    ave.assume(K < 0)\n")
    a = analyze(compile_source(text, "z.py").kernels[0])
    (d,) = a.diagnostics
    assert d.code == "AVE205" and "no sizes satisfy" in d.message
    assert text.splitlines()[d.range.start.line].strip() == "ave.assume(K < 0)"


ZERO_ASSUME = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    N = X.shape[1]
    E = N - 3
    ave.assume({COND})
    s = ave.alloc((32, 32), ave.f32)
    for kt in ave.range(0, E):
        ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.barrier()
    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
'''


def test_a_precondition_keeps_the_zero_trips_it_allows():
    # `s` is written only in the loop: read unwritten when E = N - 3 <= 0. The zero-trip
    # variant bound E to 0 (zero trips is E <= 0, not E = 0): `E != 0` ruled it out although
    # N = 1, 2 run it, and `E <= 0` ruled out every variant ("raise tripCountBound"; the
    # zero-trip one never built). A review helper; the interpreter: AVE303 at N = 1
    for cond in ("E != 0", "E <= 0", "E < 0", "N != 3"):
        k = compile_source(ZERO_ASSUME.replace("{COND}", cond), "z.py").kernels[0]
        a = analyze(k)
        assert [(d.code, d.witness["trip_counts"]) for d in a.diagnostics] == \
            [("AVE203", {"kt": 0})], (cond, [d.format_text() for d in a.diagnostics])
        X = np.random.default_rng(0).standard_normal((32, 1)).astype(np.float32)
        res = run(k, (1,), [X, np.zeros((32, 32), np.float32)])
        assert "AVE303" in [x.code for x in res.diagnostics]
    # `E > 0`: the loop runs, no zero trips
    k = compile_source(ZERO_ASSUME.replace("{COND}", "E > 0"), "z.py").kernels[0]
    assert analyze(k).diagnostics == []


def test_contradictory_preconditions_without_loops_say_nothing_of_trips():
    # (a new user: the hint "raise tripCountBound" on a kernel with no loop)
    text = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    ave.assume(X.shape[1] >= 32)
    ave.assume(X.shape[1] < 16)
    s = ave.alloc((32, 32), ave.f32)
    ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.barrier()
    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
'''
    (d,) = analyze(compile_source(text, "c.py").kernels[0]).diagnostics
    assert d.code == "AVE205" and "no sizes satisfy" in d.message
    assert "trip" not in d.message and d.range.start.line == 5
