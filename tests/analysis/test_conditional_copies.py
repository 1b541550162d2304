"""AVE203 for reads of shared bytes an asynchronous copy under a branch on a runtime value
wrote on one path only: for the sizes the witness names the branch goes the other way, the
copy never runs, and the read sees what the bytes held before (nothing, or an older tile).
Such copies used to land as issued, and these kernels were proved. Witnesses are derived
by hand and confirmed by the interpreter (AVE303, or the wrong product); the correct
conditional prefetch stays proved."""

from __future__ import annotations

import pathlib

import numpy as np

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_source
from ave_core.interp import numerics as NUM
from ave_core.interp import run
from ave_core.lang import bf16

from .test_races import (_JOIN_HEAD, _JOIN_TAIL, _incremental_is_full, _interp_codes,
                         _join_run, _pairing)

ROOT = pathlib.Path(__file__).resolve().parents[2]
GEMM = (ROOT / "examples" / "gemm.py").read_text()
ISSUE = "        issue(kt + STAGES - 1, s_fill)      # overlaps the math below\n"
assert ISSUE in GEMM


def _join(body: str):
    text = _JOIN_HEAD + body + _JOIN_TAIL
    res = compile_source(text, "j.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0], text.splitlines()


def _line(lines: list[str], needle: str, nth: int = 0) -> int:
    """0-based line of the ``nth`` line containing ``needle``."""
    return [i for i, s in enumerate(lines) if needle in s][nth]


def _ave203(k):
    return [d for d in analyze(k).diagnostics if d.code == "AVE203"]


REFILL = ("    if K > 64:\n"
          "        ave.copy_async(A[0:64, 32:64], sA, vector_bytes=16)\n"
          "    ave.commit_async()\n"
          "    ave.wait_async(0)\n")


def test_a_copy_under_a_branch_read_on_every_path():
    # sA is written only by the copy under `if K > 64:`; the MMA reads it on every path.
    # Hand witness: the smallest size with K <= 64 is K = 1 (sizes are >= 1); thread 0's
    # first A-fragment element is sA[0, 0], byte 0
    k, lines = _join(REFILL)
    (d,) = _ave203(k)
    assert d.range.start.line == _line(lines, "acc = ave.mma(")
    w = d.witness
    assert w["model"] == {"A.shape[1]": 1}
    assert w["byte"] == 0 and w["threads"][0]["thread"] == 0
    assert "only when `K > 64`" in d.message and "A.shape[1] = 1" in d.message
    assert [(r.location.range.start.line, r.message) for r in d.related] == [
        (_line(lines, "ave.copy_async("), "runs only when `K > 64`"),
        (_line(lines, "if K > 64:"), "the branch around the copy (`K > 64`)")]
    assert [p["label"] for p in w["program_points"]] == [
        "the copy that does not run", "the branch: `K > 64` is false here", "the read"]
    # the interpreter: for K = 64 the MMA reads bytes nothing wrote
    assert "AVE303" in _interp_codes(k, 64)
    assert "AVE303" not in _interp_codes(k, 96)


def test_a_refill_under_a_branch_leaves_the_old_tile_on_the_other_path():
    # sA holds k = 0..31, refilled with k = 32..63 (what sB holds) only when K > 64: for
    # K <= 64 the MMA pairs A's k = 0..31 with B's k = 32..63. The tags are the refill's
    # (its path), so the pairing is proved; the read is reported, with the old tile named
    k, lines = _join("    ave.copy(A[0:64, 0:32], sA)\n    ave.barrier()\n" + REFILL)
    status, diags = _pairing(k)
    assert status == ["proved"]
    (d,) = [d for d in diags if d.code == "AVE203"]
    assert d.witness["model"] == {"A.shape[1]": 1}
    assert "holds what it held before" in d.message
    c, right, wrong = _join_run(k, 64)
    assert np.abs(c - wrong).max() < 1e-2 and np.abs(c - right).max() > 1.0


def test_both_arms_copy_into_the_bytes():
    # each path writes sA (the else-arm masked): no path leaves it unwritten
    k, _ = _join("    if K > 64:\n"
                 "        ave.copy_async(A[0:64, 32:64], sA, vector_bytes=16)\n"
                 "    else:\n"
                 "        ave.copy_async(A[0:64, 32:64], sA, vector_bytes=16,\n"
                 "                       mask=lambda m, kk: kk < K)\n"
                 "    ave.commit_async()\n    ave.wait_async(0)\n")
    assert _ave203(k) == []
    assert "AVE303" not in _interp_codes(k, 64)


def test_the_other_arm_does_not_see_this_arms_copy():
    # the arms run one after the other on one state: the else-arm's read saw the
    # then-arm's landed copy (proved); on its path the copy never ran
    k, lines = _join("    if K > 64:\n"
                     "        ave.copy_async(A[0:64, 32:64], sA, vector_bytes=16)\n"
                     "        ave.commit_async()\n        ave.wait_async(0)\n"
                     "    else:\n        ave.commit_async()\n        ave.wait_async(0)\n"
                     "        ave.barrier()\n        a2 = ave.load(sA, tiled.a)\n")
    found = sorted(d.range.start.line for d in _ave203(k))
    assert found == [_line(lines, "a2 = ave.load"), _line(lines, "acc = ave.mma(")]
    assert _interp_codes(k, 64).count("AVE303") == 2
    _incremental_is_full(k)


def _gemm(cond: str):
    """examples/gemm.py with its prefetch under ``if cond:`` (the commit outside it: one
    group per iteration either way)."""
    text = GEMM.replace(ISSUE, (
        f"        if {cond}:\n"
        "            ave.copy_async(A[m0:m0 + BM, (kt + STAGES - 1) * BK:(kt + STAGES) * BK],\n"
        "                           sA[s_fill], vector_bytes=16,\n"
        "                           mask=lambda m, k: (m < M) & (k < K))\n"
        "            ave.copy_async(B[(kt + STAGES - 1) * BK:(kt + STAGES) * BK, n0:n0 + BN],\n"
        "                           sB[s_fill], vector_bytes=16,\n"
        "                           mask=lambda k, n: (k < K) & (n < N))\n"
        "        ave.commit_async()\n"))
    res = compile_source(text, "gemm.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels, text.splitlines()


def test_the_conditional_prefetch_is_proved():
    # the read of tile j at iteration j runs only when the loop runs j + 1 times, which
    # implies the condition its prefetch ran under (j * BK < K), in both spellings
    for cond in ("(kt + STAGES - 1) * BK < K", "kt + STAGES - 1 < KT"):
        kernels, _ = _gemm(cond)
        assert len(kernels) == 2
        for k in kernels:
            a = analyze(k)
            assert [r.status for r in a.assertions if r.status != "proved"] == [], cond
            assert a.diagnostics == [], [d.format_text() for d in a.diagnostics]


def test_a_prefetch_condition_one_tile_short():
    # `(kt + STAGES) * BK < K`: tile kt + STAGES - 1 is issued only when tile kt + STAGES
    # exists. Config 1 (BK = 32, STAGES = 3): tile 2 is issued at kt = 0 iff 96 < K; it is
    # read at kt = 2, which runs iff KT = cdiv(K, 32) >= 3 iff K > 64: the smallest K
    # reading it unissued is 65. Config 2 (STAGES = 4): tile 3 issued at kt = 0 iff 128 < K,
    # read at kt = 3 iff K > 96: K = 97. Both ldmatrix reads (sA, sB) are reported
    kernels, lines = _gemm("(kt + STAGES) * BK < K")
    reads = [_line(lines, "a = ave.ldmatrix("), _line(lines, "b = ave.ldmatrix(")]
    copies = {reads[0]: _line(lines, "ave.copy_async(A[m0:m0 + BM, (kt + STAGES - 1)"),
              reads[1]: _line(lines, "ave.copy_async(B[(kt + STAGES - 1) * BK")}
    for k, (K, kt) in zip(kernels, ((65, 2), (97, 3))):
        ds = analyze(k).diagnostics
        assert sorted(d.code for d in ds) == ["AVE203", "AVE203"], \
            [d.format_text() for d in ds]
        assert sorted(d.range.start.line for d in ds) == reads
        for d in ds:
            w = d.witness
            assert w["model"] == {"A.shape[1]": K}
            assert w["loop_indices"] == {"kt": kt} and w["copy_loop_indices"] == {"kt": 0}
            copy = copies[d.range.start.line]          # sA's read: A's copy; sB's: B's
            assert w["program_points"][0]["range"]["start"]["line"] == copy
            assert f"at line {copy + 1} (kt=0) writes only when `(kt + STAGES) * BK < K`" \
                in d.message
    # the interpreter at the witness' size (config 1: 128 x 128 tiles, one program):
    # stage 2 is read unwritten, and C is wrong
    k = kernels[0]
    M, N, K = 128, 128, 65
    rng = np.random.default_rng(7)
    a = NUM.to_storage(bf16, rng.standard_normal((M, K)).astype(np.float32))
    b = NUM.to_storage(bf16, rng.standard_normal((K, N)).astype(np.float32))
    c = np.full((M, N), np.nan, np.float32)
    res = run(k, (1, 1), [a, b, c])
    assert "AVE303" in {x.code for x in res.diagnostics}
    ref = NUM.from_storage(bf16, a).astype(np.float64) @ NUM.from_storage(bf16, b).astype(
        np.float64)
    assert np.abs(c - ref).max() > 1.0
    # the correct condition at the same size: right
    kg, _ = _gemm("(kt + STAGES - 1) * BK < K")
    c = np.full((M, N), np.nan, np.float32)
    res = run(kg[0], (1, 1), [a, b, c])
    assert [x.code for x in res.diagnostics] == []
    assert np.abs(c - ref).max() < 1e-2 * np.abs(ref).max()
    _incremental_is_full(k)
