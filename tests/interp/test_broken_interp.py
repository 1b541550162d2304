"""The broken example kernels the manifest assigns to the interpreter (``expect =
"interpreter"`` in examples/broken/manifest.toml), and the checker cases that also name their
dynamic ``outcome`` (a race, an out-of-bounds access the checker finds statically: AVE207,
AVE208), run at the manifest's ``sizes``.

For each case the manifest's ``outcome`` must be what happens:

* ``"oob"`` / ``"race"`` / ``"uninit"``: the dynamic check AVE301 / AVE304 / AVE303 fires,
  and nothing else; every report points at a line of the broken file holding a DSL call
  (for an out-of-bounds access: the call whose ``# BUG:`` mask let it through);
* ``"wrong_result"``: no dynamic check fires and the output differs from the float64
  reference beyond tolerance.

The same launch on the CORRECT base kernel (``base``) is clean and matches the reference,
so each test can fail. Hand-derived witnesses (block, thread, coordinates, loop index) are
checked for the first report of each case.
"""

from __future__ import annotations

import functools
import tomllib

import numpy as np
import pytest

from ave_core.compiler.frontend import compile_file
from ave_core.interp import run

from . import refs
from .refs import EXAMPLES

BROKEN = EXAMPLES / "broken"
OUTCOME_CODE = {"oob": "AVE301", "race": "AVE304", "uninit": "AVE303"}


def _manifest_cases() -> list[dict]:
    with (BROKEN / "manifest.toml").open("rb") as f:
        return [c for c in tomllib.load(f)["case"]
                if c["expect"] == "interpreter" or "outcome" in c]


CASES = _manifest_cases()


@functools.lru_cache(maxsize=None)
def _compile(path: str):
    res = compile_file(path)
    errors = [d.format_text() for d in res.diagnostics if d.severity.label == "error"]
    assert not errors, errors
    return tuple(res.kernels)


def _kernel(path, name: str, config: int):
    ks = [k for k in _compile(str(path)) if k.name == name and k.config_index == config]
    assert len(ks) == 1, f"{path}: kernel {name} config {config} not found"
    return ks[0]


def _launch(path, case: dict):
    """Compile ``path`` and run the manifest case's kernel on fresh seeded inputs."""
    k = _kernel(path, case["kernel"], case["config"])
    rng = np.random.default_rng(refs.seed_of("broken", case["file"], case["sizes"]))
    c = refs.build_case(case["kernel"], k.constexprs, case["sizes"], rng)
    res = run(k, c.grid, c.args)
    return k, c, res


def _bug_line(path) -> int:
    """0-based line of the ``# BUG:`` comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [i for i, ln in enumerate(lines) if "# BUG" in ln]
    assert len(hits) == 1, f"{path.name}: expected one '# BUG' line, found {hits}"
    return hits[0]


def _line_of(path, text: str) -> int:
    """0-based line of the one code line of ``path`` that contains ``text``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [i for i, ln in enumerate(lines) if text in ln.split("#")[0]]
    assert len(hits) == 1, f"{path.name}: {text!r} on lines {hits}"
    return hits[0]


def _fmt(diags) -> str:
    return "\n".join(d.format_text() for d in diags) or "(none)"


def test_manifest_has_interpreter_cases():
    assert {c["outcome"] for c in CASES} <= {"wrong_result", "oob", "race", "uninit"}
    assert {c["file"] for c in CASES} >= {"gemm_missing_barrier.py", "gemm_mask_bound.py",
                                          "flash_attention_q_mask_bound.py",
                                          "moe_gather_mask_bound.py",
                                          "moe_expert_wrong_program_id.py"}


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_broken_case_outcome(case):
    path = BROKEN / case["file"]
    _, c, res = _launch(path, case)
    ok, msg = c.check()
    outcome = case["outcome"]
    if outcome == "wrong_result":
        assert not res.diagnostics, \
            f"{case['file']}: expected only a wrong result, but dynamic checks fired:\n" + \
            _fmt(res.diagnostics)
        assert not ok, f"{case['file']}: the output matches the reference ({msg})"
        return
    code = OUTCOME_CODE[outcome]
    codes = {d.code for d in res.diagnostics}
    assert codes == {code}, f"{case['file']}: expected {code} only, got:\n" + \
        _fmt(res.diagnostics)
    src = path.read_text(encoding="utf-8").splitlines()
    for d in res.diagnostics:
        assert d.file == str(path), d.format_text()
        r = d.range
        assert 0 <= r.start.line <= r.end.line < len(src), d.format_text()
        assert "ave." in src[r.start.line], f"{d.format_text()}\n  -> {src[r.start.line]!r}"
        w = d.witness
        assert w and w["threads"] and len(w["block"]) == 3, d.format_text()
    if outcome == "oob":
        # the access that went out of bounds is the call the buggy mask belongs to
        bug = _bug_line(path)
        first = res.diagnostics[0]
        assert first.range.start.line <= bug <= first.range.end.line, \
            f"{first.format_text()} does not cover the # BUG line {bug + 1}"
        # ... and only the bounds check sees it: the store masks are right
        assert ok, f"{case['file']}: {msg}"
    if outcome == "race":
        assert all(len(d.witness["threads"]) == 2 for d in res.diagnostics), \
            _fmt(res.diagnostics)


@pytest.mark.parametrize("case", CASES, ids=[c["base"] + "<-" + c["file"] for c in CASES])
def test_base_kernel_is_clean_and_correct(case):
    path = EXAMPLES / case["base"]
    _, c, res = _launch(path, case)
    assert not res.diagnostics, _fmt(res.diagnostics)
    ok, msg = c.check()
    assert ok, f"{case['base']} at {case['sizes']}: {msg}"


# ----------------------------------------------------------------------------- hand-derived
# witnesses of the first report (the interpreter reports in execution order: lowest block,
# earliest loop index, lowest element of the failing access)

def _case(file: str) -> dict:
    (c,) = [c for c in CASES if c["file"] == file]
    return c


def test_gemm_mask_bound_witness():
    # M = 128, N = 72, K = 64, config 0 (BM = BN = 128, BK = 32): program (0, 0) copies
    # B[0:32, 0:128] in 16-byte vectors (8 bf16), 16 vectors per row, vector i by thread
    # i % 128. The first element past N is (k 0, n 72): vector 72 / 8 = 9 -> thread 9.
    case = _case("gemm_mask_bound.py")
    path = BROKEN / case["file"]
    _, _, res = _launch(path, case)
    d = res.diagnostics[0]
    assert d.code == "AVE301"
    assert d.witness["block"] == [0, 0, 0]
    assert [t["thread"] for t in d.witness["threads"]] == [9]
    assert d.witness["coordinates"] == {"B": [0, 72]}
    assert d.witness["loop_indices"] == {"kt": 0}   # issued by the prologue's static kt = 0
    assert d.range.start.line == _line_of(path, "ave.copy_async(B[")


def test_flash_attention_q_mask_bound_witness():
    # S_Q = 100, config 0 (BR = 128, D = 128): program (0, 0, 0) copies Q[0, 0, 0:128, :]
    # in 16-byte vectors, 16 per row; m <= S_Q admits row 100: vector 100 * 16 = 1600 ->
    # thread 1600 % 128 = 64, element Q[0, 0, 100, 0]. Head 1's program reports it too.
    case = _case("flash_attention_q_mask_bound.py")
    path = BROKEN / case["file"]
    _, _, res = _launch(path, case)
    d = res.diagnostics[0]
    assert d.code == "AVE301"
    assert d.witness["block"] == [0, 0, 0]
    assert [t["thread"] for t in d.witness["threads"]] == [64]
    assert d.witness["coordinates"] == {"Q": [0, 0, 100, 0]}
    assert d.range.start.line == _line_of(path, "ave.copy_async(Q[")
    assert {tuple(x.witness["block"]) for x in res.diagnostics} == {(0, 0, 0), (0, 0, 1)}


def test_moe_gather_mask_bound_witness():
    # T = 5, TOPK = 2 (config 0: BM = BK = 64): the padding rows of a bucket hold the
    # sentinel 10 and gather X row 10 // 2 = 5 = T, which t < num_valid lets through.
    # Block 0 is the first non-empty expert's bucket; its first padding row r (= that
    # expert's pair count) is copied, 8 vectors per row, by thread (8 r) % 128.
    case = _case("moe_gather_mask_bound.py")
    path = BROKEN / case["file"]
    _, c, res = _launch(path, case)
    ids = c.info["sorted_token_ids"]
    r = int(np.nonzero(ids[:64] == 5 * 2)[0][0])
    d = res.diagnostics[0]
    assert d.code == "AVE301"
    assert d.witness["block"] == [0, 0, 0]
    assert [t["thread"] for t in d.witness["threads"]] == [(8 * r) % 128]
    assert d.witness["coordinates"] == {"X": [5, 0]}
    assert d.range.start.line == _line_of(path, "ave.copy_async(Xg[")


def test_gemm_missing_barrier_witness():
    # Config 0 (BM = 128, BK = 32, Swizzle<2,3,3> on sA): sA rows are 64 bytes = 4 vectors,
    # so thread t cp.asyncs row t // 4, chunk t % 4 of stage 0 (no wait needed by thread 0
    # for the bytes of others: only a barrier would order them). In iteration kt = 0 thread 0
    # (lane 0: g = 0, t4 = 0) ldmatrix-reads a0 = (row 0, k 0) -- its own copy -- then
    # a2 = (row 8, k 0): element offset 8 * 32 = 256 (row bits 6..7 are 0: unswizzled),
    # byte 512, copied by thread 8 * 4 = 32 in the same barrier interval: the first race.
    case = _case("gemm_missing_barrier.py")
    path = BROKEN / case["file"]
    _, _, res = _launch(path, case)
    d = res.diagnostics[0]
    assert d.code == "AVE304"
    assert d.witness["block"] == [0, 0, 0]
    assert d.witness["loop_indices"] == {"kt": 0}
    assert [t["thread"] for t in d.witness["threads"]] == [32, 0]
    assert d.witness["address"] == 512
    assert d.range.start.line == _line_of(path, "a = ave.ldmatrix(sA[")
    # The refill of stage (kt - 1) % STAGES also overwrites bytes other warps read in the
    # previous iteration with no barrier between: reported at the copy_async of sA / sB.
    war = {x.range.start.line for x in res.diagnostics if "overwritten" in x.message}
    assert war == {_line_of(path, "ave.copy_async(A["), _line_of(path, "ave.copy_async(B[")}


def test_moe_expert_wrong_program_id_rows():
    # Which rows are wrong: those of the row blocks whose expert differs from the one the
    # N-block id picks (expert_ids[pid_n]); rows of blocks that happen to agree are right.
    case = _case("moe_expert_wrong_program_id.py")
    path = BROKEN / case["file"]
    k, c, res = _launch(path, case)
    assert not res.diagnostics, _fmt(res.diagnostics)
    BM, BN = k.constexprs["BM"], k.constexprs["BN"]
    ids, eids = c.info["sorted_token_ids"], c.info["expert_ids"]
    out = refs.bf16_value(c.info["Out"])
    ref = c.info["ref"]
    n_valid = out.shape[0]
    wrong_blocks = 0
    for pid_m in range(len(eids)):
        rows = ids[pid_m * BM:(pid_m + 1) * BM]
        rows = rows[rows < n_valid]
        for pid_n in range(refs.cdiv(out.shape[1], BN)):
            cols = slice(pid_n * BN, (pid_n + 1) * BN)
            if not rows.size:
                continue
            got, want = out[rows, cols], ref[rows, cols]
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            if eids[pid_m] == eids[pid_n]:
                assert err <= refs.TOL["bf16"], (pid_m, pid_n, err)
            else:
                assert err > 0.1, (pid_m, pid_n, err)
                wrong_blocks += 1
    assert wrong_blocks > 0
