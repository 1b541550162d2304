"""Better quick fixes for races (ave_lsp.fixplan), offered only where a check of the
fixed text proves them: one ``ave.barrier()`` for several races where one separates the
accesses of all of them, and a wait's count lowered where it leaves a copy in flight.
Each expectation is also checked independently: the fixes are applied to the text and
the text is analysed again (no AVE207 left), and the interpreter's dynamic race check
(AVE304) runs the fixed kernel. Cases found by review helpers: proposals that a check of
the fixed text refutes keep the race's own fix."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from ave_core.analysis import analyze
from ave_core.check import check_file
from ave_core.compiler.frontend import compile_source
from ave_core.interp import run
from ave_lsp.fixplan import improve_fixes
from ave_lsp.server.fixes import edit_for

from .inputs import inputs_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = pathlib.Path(__file__).parent / "review_cases"


def _kernel(text: str, path: str = "t.py"):
    res = compile_source(text, path)
    assert [d for d in res.diagnostics if d.severity.label == "error"] == [], \
        [d.format_text() for d in res.diagnostics]
    return res.kernels


def _races(text: str, path: str = "t.py", config: int = 0) -> list:
    """The AVE207 findings of one specialization (``configs[config]``), as analysed."""
    k = _kernel(text, path)[config]
    return [d for d in analyze(k).diagnostics if d.code == "AVE207"]


def _improved(path: str, text: str) -> list:
    """What ave-lsp reports for the file: the check, then the proven proposals."""
    report = check_file(path, text)
    improve_fixes(report, text, lambda t: check_file(path, t))
    assert all(d.proposal is None for d in report.diagnostics)
    return report.diagnostics


def _apply(text: str, fixes: list[dict]) -> str:
    """Every distinct fix, applied as the editor applies it (edit_for)."""
    edits = {}
    for f in fixes:
        got = edit_for(f, text)
        assert got is not None, f
        e = got[1]
        edits[(e.range.start.line, e.range.start.character, e.range.end.line,
               e.range.end.character, e.new_text)] = e
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    out = text
    for key in sorted(edits, reverse=True):
        e = edits[key]
        a = starts[e.range.start.line] + e.range.start.character
        b = starts[e.range.end.line] + e.range.end.character
        out = out[:a] + e.new_text + out[b:]
    return out


def _apply_barriers(text: str, fixes: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    for line, indent in sorted({(f["line"], f["indent"]) for f in fixes}, reverse=True):
        lines.insert(line, f"{indent}ave.barrier()\n")
    return "".join(lines)


def test_missing_barrier_gemm_one_barrier_fixes_all_four_races():
    # the refill (line 140, 1-based) comes after the wait (135) and before the reads
    # (141, 142): a barrier before it is after the copies of tile kt landed (read after
    # write, 141/142) and after the previous iteration's reads of the stage it refills
    # (write after read, 122/124 through the call at 140). Each race's own fix is the
    # line before its later access: 140, 140, 141 and 142 -- three barriers
    path = ROOT / "examples/broken/gemm_missing_barrier.py"
    text = path.read_text("utf-8")
    lines = text.splitlines()
    own = _races(text, str(path))
    assert sorted((d.range.start.line + 1, d.fix["line"] + 1) for d in own) == \
        [(122, 140), (124, 140), (141, 141), (142, 142)]
    assert all(d.proposal and [139, "        "] in d.proposal["span"] for d in own)
    races = [d for d in _improved(str(path), text) if d.code == "AVE207"]
    assert len(races) == 4
    assert {d.range.start.line + 1 for d in races} == {122, 124, 141, 142}
    fixes = [d.fix for d in races]
    assert {(f["kind"], f["line"]) for f in fixes} == {("insert_barrier", 139)}
    assert lines[139].strip() == "issue(kt + STAGES - 1, s_fill)      # overlaps the math below"
    for d in races:
        assert "insert ave.barrier() before line 140 (quick fix; one barrier there fixes " \
               "4 races)" in d.notes, d.notes
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
    improved = sorted([d for d in _improved("/t/two.py", TWO_PHASES) if d.code == "AVE207"],
                      key=lambda d: d.range.start.line)
    assert [d.fix for d in improved] == [d.fix for d in races]
    for d in improved:
        assert not any("one barrier there" in n for n in d.notes), d.notes
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
    races = sorted([d for d in _improved("/t/loop.py", LOOP) if d.code == "AVE207"],
                   key=lambda d: d.range.start.line)
    assert [d.range.start.line for d in races] == [6, 7]
    assert [d.fix["line"] for d in races] == [6, 7]
    fixed = _apply_barriers(LOOP, [d.fix for d in races])
    assert _races(fixed) == []
    (k,) = _kernel(fixed)
    X = np.arange(96 * 32, dtype=np.float32).reshape(96, 32)
    res = run(k, (1,), [X, np.zeros((96, 32), np.float32)])
    assert not [x for x in res.diagnostics if x.code == "AVE304"]


@pytest.mark.parametrize("name, kinds", [
    # a barrier inside `if F == 0:` (compile-time) proposed for both races: configs[1]
    # has no such branch, and its race stays -- each race keeps its own barrier
    ("r21_static_if", {"insert_barrier": {11, 12}}),
    # a barrier inside a loop that may run zero times: the race after the loop stays
    ("r21_zero_trip", {"insert_barrier": {11, 12}}),
    # the read sees two writes; the witness named the first, and a barrier between
    # them left the second racing
    ("r21_two_writers", {"insert_barrier": {9, 11}}),
    # a read racing with the previous iteration's write: a barrier before the loop
    # fixed only the first iteration
    ("r21_loop_carried", {"insert_barrier": {12, 14, 15}}),
    # the prologue's wait was the last wait before the read in the first iteration: the
    # loop's reads pass another one -- the inserted wait stays
    ("r21_end_wait", {"insert_wait": {14}}),
    # each specialization passes another `ave.wait_async(2)` (a compile-time branch)
    ("r21_wait_per_config", {"insert_wait": {15}}),
    # a read after a loop that may run zero times: the loop's wait is not always passed
    ("r21_zero_trip_wait", {"insert_wait": {17}}),
    # two reads in one statement need 3 -> 2 and 3 -> 1 of the same wait: different
    # edits of one range offered nothing in the editor -- the lower count, for both
    ("r21_two_reads_one_statement", {"set_wait_count": {13}}),
])
def test_review_cases_every_offered_fix_works(name, kinds):
    """Cases found by review helpers (proposals that looked right on the witness'
    execution): what ave-lsp offers, applied all at once as the editor applies it,
    leaves no race in any specialization, and no new error."""
    path = CASES / f"{name}.py"
    text = path.read_text("utf-8")
    ds = _improved(str(path), text)
    races = [d for d in ds if d.code == "AVE207" and d.fix is not None]
    assert races, [d.format_text() for d in ds]
    got: dict = {}
    for d in races:
        got.setdefault(d.fix["kind"], set()).add(d.fix["line"])
    assert got == kinds, got
    if "set_wait_count" in kinds:
        assert {d.fix["new"] for d in races} == {"1"}
    before = sorted(d.code for d in ds if d.severity.label == "error")
    fixed = _apply(text, [d.fix for d in races])
    after = check_file(str(path), fixed).diagnostics
    # (a race without a fix -- a write after a read in a branch -- may stay; here every
    # race goes, one fix settling another's)
    assert not [d for d in after if d.code == "AVE207"], [d.format_text() for d in after]
    errors = [d.code for d in after if d.severity.label == "error"]
    assert all(errors.count(c) <= before.count(c) for c in errors), (before, errors)


@pytest.mark.parametrize("name, kind", [("r21_two_writers", "barrier"),
                                        ("r21_loop_carried", "barrier"),
                                        ("r21_end_wait", "wait")])
def test_a_refuted_proposal_is_not_offered(name, kind):
    # these proposals survive every merge (one specialization) and are wrong: only the
    # check of the fixed text refutes them -- improve_fixes then keeps the own fixes
    from ave_lsp.fixplan import _plan
    path = CASES / f"{name}.py"
    text = path.read_text("utf-8")
    report = check_file(str(path), text)
    own = [(d.code, d.range, dict(d.fix)) for d in report.diagnostics if d.fix]
    parts = _plan(report)
    assert [p["kind"] for p in parts] == [kind]
    checks = []

    def recheck(t):
        checks.append(t)
        return check_file(str(path), t)
    improve_fixes(report, text, recheck)
    assert len(checks) == 1
    assert [(d.code, d.range, d.fix) for d in report.diagnostics if d.fix] == own


def test_rechecks_are_bounded(monkeypatch):
    # each part alone, at most MAX_PARTS of them; with a budget spent (the language
    # server), no further one
    import ave_lsp.fixplan as fp

    class Report:
        path = "k.py"
        diagnostics: list = []
    calls = []
    monkeypatch.setattr(fp, "_plan", lambda report: [{"kind": "barrier"}] * 5)
    monkeypatch.setattr(fp, "_holds", lambda parts, *a: calls.append(len(parts)) and False)
    fp.improve_fixes(Report(), "", lambda t: None)
    assert calls == [1] * fp.MAX_PARTS and fp.MAX_PARTS == 3
    calls.clear()
    fp.improve_fixes(Report(), "", lambda t: None, budget_s=0.0)
    assert calls == [1]


def test_each_part_of_the_plan_holds_alone():
    # a wrong wait_async(1) (its proposal: 0) and two reads of `t` after the plain
    # wait_async(0), one inside a loop that may run zero times, one after it: a barrier
    # inside the loop was credited with both reads, checked together with the wait's new
    # count -- which is what fixed the second; applied alone, it left it (a review helper)
    path = CASES / "r23_wait_and_barrier.py"
    text = path.read_text("utf-8")
    ds = [d for d in _improved(str(path), text) if d.code == "AVE207" and d.fix]
    assert sorted((d.range.start.line, d.fix["kind"]) for d in ds) == [
        (14, "set_wait_count"), (17, "insert_barrier"), (18, "insert_barrier")]
    assert {d.fix["line"] for d in ds if d.fix["kind"] == "insert_barrier"} == {17, 18}
    for d in ds:                # each fix alone removes its own finding
        after = check_file(str(path), _apply(text, [d.fix])).diagnostics
        line = d.range.start.line + (1 if d.fix["kind"] == "insert_barrier" and
                                     d.fix["line"] <= d.range.start.line else 0)
        assert not [x for x in after if x.code == "AVE207" and x.range.start.line == line]


@pytest.mark.parametrize("brk", ["\f", "\u2028", "\x85"])
def test_a_page_break_does_not_move_the_checked_edit(brk):
    # str.splitlines breaks at a form feed, U+2028 or NEL, LSP and the editor do not: the
    # checked text had the barrier one line higher than the editor puts it -- at the end
    # of an `if` body before a loop that may run zero times, where it fixed both races,
    # and the editor's barrier, inside the loop, did not (a review helper)
    src = (CASES / "r23_zero_trip_shifted.py").read_text("utf-8")
    text = src.replace("# (a page break goes on the line above)\n", f"# page{brk}\n", 1)
    assert text != src
    ds = [d for d in _improved("/t/k.py", text) if d.code == "AVE207" and d.fix]
    assert len(ds) == 2 and len({d.fix["line"] for d in ds}) == 2, [d.fix for d in ds]
    fixed = _apply(text, [d.fix for d in ds])
    assert not [d for d in check_file("/t/k.py", fixed).diagnostics if d.code == "AVE207"]


@pytest.mark.parametrize("ends", ["\n", "\r", "\r\n"])
def test_line_ends_other_than_lf(ends):
    # a CR-only file lost every improvement: its lines after the first mapped to none in
    # the check of the fixed text, and the race in the second kernel (no fix) looked new
    # there (a review helper)
    text = (CASES / "r23_two_kernels.py").read_text("utf-8").replace("\n", ends)
    ds = [d for d in _improved("/t/k.py", text) if d.code == "AVE207" and d.fix]
    assert len(ds) == 2
    assert len({d.fix["line"] for d in ds}) == 1, [d.fix for d in ds]
    fixed = _apply(text, [d.fix for d in ds])
    left = [d for d in check_file("/t/k.py", fixed).diagnostics
            if d.code == "AVE207" and d.fix is not None]
    assert left == [], [d.format_text() for d in left]


def test_the_language_server_abandons_rechecks_of_a_superseded_version(monkeypatch):
    # without a worker pool (jobs = 1) check_file does not look at `cancel`: the rechecks
    # of fixplan ran one after another while a newer version waited (a review helper).
    # A superseded check now starts none: an empty outcome, one check run
    import threading

    import ave_core.check as check_mod
    from ave_lsp.server.server import _check_in_worker
    from ave_lsp.server.settings import Settings

    path = ROOT / "examples/broken/gemm_missing_barrier.py"
    text = path.read_text("utf-8")
    runs = []
    real = check_mod.check_file

    def counted(*a, **k):
        runs.append(1)
        return real(*a, **k)
    monkeypatch.setattr(check_mod, "check_file", counted)
    settings, _ = Settings.from_json({"jobs": 1})
    live = _check_in_worker(path.as_uri(), str(path), text, str(ROOT), settings,
                            None, threading.Event())
    reasons = [((i.data or {}).get("fix") or {}).get("reason", "") for i in live.items]
    assert len(runs) == 2 and reasons.count(
        "no barrier between the two accesses (one barrier fixes 4 races)") == 4, reasons
    runs.clear()
    gone = threading.Event()
    gone.set()
    out = _check_in_worker(path.as_uri(), str(path), text, str(ROOT), settings, None, gone)
    assert len(runs) == 1 and out.items == []


def test_a_helper_that_waits_then_reads_gets_its_barrier_after_the_wait():
    # consume() waits for the copy and reads it: the barrier went before the helper's
    # call (line 14), before the wait -- it fixed nothing, and applied, the same fix was
    # offered one line down (a review helper). It goes after the wait, before the read
    # inside the helper (line 10)
    path = CASES / "r23_wait_in_helper.py"
    text = path.read_text("utf-8")
    (d,) = [d for d in _improved(str(path), text) if d.code == "AVE207"]
    assert (d.fix["kind"], d.fix["line"], d.fix["indent"]) == ("insert_barrier", 9,
                                                               "        ")
    fixed = _apply(text, [d.fix])
    assert "        ave.wait_async(0)\n        ave.barrier()\n        ave.copy(" in fixed
    assert not [x for x in check_file(str(path), fixed).diagnostics if x.code == "AVE207"]
