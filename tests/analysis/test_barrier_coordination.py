"""AVE207 quick fixes coordinated: where one ``ave.barrier()`` separates the accesses of
several races, every one of those races offers that same barrier (the language server
then shows one action for all of them), and where none does, each keeps a barrier of its
own. Each expectation is checked independently: the fixes are applied to the text and the
text is analysed again (no AVE207 left), and the interpreter's dynamic race check (AVE304)
runs the fixed kernel."""

from __future__ import annotations

import pathlib

import numpy as np

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_source
from ave_core.interp import run

from .inputs import inputs_for

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _kernel(text: str, path: str = "t.py"):
    res = compile_source(text, path)
    assert [d for d in res.diagnostics if d.severity.label == "error"] == [], \
        [d.format_text() for d in res.diagnostics]
    return res.kernels


def _races(text: str, path: str = "t.py", config: int = 0) -> list:
    """The AVE207 findings of one specialization (``configs[config]``)."""
    k = _kernel(text, path)[config]
    return [d for d in analyze(k).diagnostics if d.code == "AVE207"]


def _apply_barriers(text: str, fixes: list[dict]) -> str:
    """The quick fixes' edit (ave_lsp.server.fixes): ``{indent}ave.barrier()`` before each
    fix's line, one per distinct line."""
    lines = text.splitlines(keepends=True)
    for line, indent in sorted({(f["line"], f["indent"]) for f in fixes}, reverse=True):
        lines.insert(line, f"{indent}ave.barrier()\n")
    return "".join(lines)


def test_missing_barrier_gemm_one_barrier_fixes_all_four_races():
    # the refill (line 140, 1-based) comes after the wait (135) and before the reads
    # (141, 142): a barrier before it is after the copies of tile kt landed (read after
    # write, 141/142) and after the previous iteration's reads of the stage it refills
    # (write after read, 122/124 through the call at 140). Each race's own fix was the
    # line before its later access: 140, 140, 141 and 142 -- three barriers
    path = ROOT / "examples/broken/gemm_missing_barrier.py"
    text = path.read_text("utf-8")
    lines = text.splitlines()
    races = _races(text, str(path))
    assert len(races) == 4
    assert {d.fix["line"] for d in _races(text, str(path), 1)} == {139}    # configs[1]
    assert {d.range.start.line + 1 for d in races} == {122, 124, 141, 142}
    fixes = [d.fix for d in races]
    assert {(f["kind"], f["line"]) for f in fixes} == {("insert_barrier", 139)}
    assert lines[139].strip() == "issue(kt + STAGES - 1, s_fill)      # overlaps the math below"
    for d in races:
        assert "insert ave.barrier() before line 140 (quick fix; one barrier there fixes " \
               "all 4 races found)" in d.notes, d.notes
        assert d.fix["reason"] == "no barrier between the two accesses (one barrier fixes " \
                                  "4 races)"
    fixed = _apply_barriers(text, fixes)
    assert fixed.count("ave.barrier()") == text.count("ave.barrier()") + 1
    assert _races(fixed, str(path)) == [] and _races(fixed, str(path), 1) == []
    # the interpreter: the race at trip count 2 (K = 64) is gone with the one barrier
    k = _kernel(fixed, str(path))[0]
    grid, args = inputs_for(k, [0, 0, 0], 2)
    res = run(k, grid, args)
    assert not [x for x in res.diagnostics if x.code == "AVE304"]


TWO_PHASES = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def two(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    m0 = ave.program_id(0) * 32
    s = ave.alloc((32, 32), ave.f32, space="shared")
    t = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[m0:m0 + 32, 0:32], s, vector_bytes=16)
    ave.copy(ave.transpose(s), Y[m0:m0 + 32, 0:32], vector_bytes=4)
    ave.copy(Y[m0:m0 + 32, 0:32], t, vector_bytes=16)
    ave.copy(ave.transpose(t), Z[m0:m0 + 32, 0:32], vector_bytes=4)
'''


def test_races_no_one_barrier_separates_keep_their_own_fixes():
    # s: written at line 8 (0-based 7), read transposed at 8; t: written at 9, read at 10.
    # A barrier before line 8 or before line 9 separates s's write from its read; only one
    # before line 10 separates t's: two races, two barriers -- wherever one barrier went,
    # one race stayed
    races = sorted(_races(TWO_PHASES), key=lambda d: d.range.start.line)
    assert [d.range.start.line for d in races] == [8, 10]
    assert [d.fix["line"] for d in races] == [8, 10]
    for d in races:
        assert not any("fixes all" in n or "races found" in n for n in d.notes), d.notes
    for one in races:
        assert _races(_apply_barriers(TWO_PHASES, [one.fix])) != []
    fixed = _apply_barriers(TWO_PHASES, [d.fix for d in races])
    assert _races(fixed) == []
    (k,) = _kernel(fixed)
    X = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    res = run(k, (2,), [X, np.zeros((64, 32), np.float32), np.zeros((64, 32), np.float32)])
    assert not [x for x in res.diagnostics if x.code == "AVE304"]


LOOP = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def loop(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((32, 32), ave.f32, space="shared")
    for i in ave.range(0, X.shape[0] // 32):
        ave.copy(X[i * 32:i * 32 + 32, 0:32], s, vector_bytes=16)
        ave.copy(ave.transpose(s), Y[i * 32:i * 32 + 32, 0:32], vector_bytes=4)
'''


def test_a_loop_with_one_buffer_needs_two_barriers_and_none_before_the_loop():
    # the read (line 7, 0-based) after this iteration's write, and the next iteration's
    # write (line 6) after this iteration's read: between the read and the next write
    # there is only the loop's header, where a barrier would run once, before the loop
    # -- no barrier there, and no one barrier for both
    races = sorted(_races(LOOP), key=lambda d: d.range.start.line)
    assert [d.range.start.line for d in races] == [6, 7]
    assert [d.fix["line"] for d in races] == [6, 7]
    assert all(d.fix["line"] != 5 for d in races)
    fixed = _apply_barriers(LOOP, [d.fix for d in races])
    assert _races(fixed) == []
    (k,) = _kernel(fixed)
    X = np.arange(96 * 32, dtype=np.float32).reshape(96, 32)
    res = run(k, (1,), [X, np.zeros((96, 32), np.float32)])
    assert not [x for x in res.diagnostics if x.code == "AVE304"]
