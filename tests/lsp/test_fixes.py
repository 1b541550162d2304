"""Quick fixes carried by diagnostics (``data["fix"]``, ave_lsp/server/fixes.py), in
process: the ``insert_barrier`` contract (the analysis emits it; here a synthetic
diagnostic), the ``view_shape`` fix of the front end's AVE106, and the server's
code-action handler that offers them."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types

from ave_core.compiler.frontend import compile_source
from ave_core.diagnostics import Diagnostic, Range
from ave_lsp.server import fixes
from ave_lsp.server.convert import to_lsp


def apply(text: str, edit: types.TextEdit) -> str:
    """Apply one edit (ASCII text: UTF-16 columns are code points)."""
    lines = text.split("\n")
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln) + 1)

    def at(p: types.Position) -> int:
        return offs[p.line] + p.character

    return text[:at(edit.range.start)] + edit.new_text + text[at(edit.range.end):]


def lsp_diag(fix: dict | None, line: int = 5, code: str = "AVE210") -> types.Diagnostic:
    data = {"witness": None, "notes": []}
    if fix is not None:
        data["fix"] = fix
    return types.Diagnostic(range=types.Range(types.Position(line, 8), types.Position(line, 20)),
                            message="shared-memory race", code=code, source="ave", data=data)


def changes(edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(changes={"file:///k.py": edits})


KERNEL = """\
import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 1]):
    s = ave.alloc((128,), ave.f32)
    for i in ave.static_range(2):
        ave.store(s, ave.load(X[0:128], ave.row_major((128,))))
        y = ave.load(s, ave.row_major((128,)))
"""


# ----------------------------------------------------------------------------- insert_barrier

def test_insert_barrier_at_a_line_with_its_indent():
    fix = {"kind": "insert_barrier", "line": 8, "indent": "        ",
           "reason": "s is written above and read below by other threads"}
    (action,) = fixes.code_actions(KERNEL, [lsp_diag(fix)], changes)
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.title.startswith("Insert ave.barrier() before line 9")
    assert "written above" in action.title
    (edit,) = action.edit.changes["file:///k.py"]
    want = KERNEL.replace("        y = ave.load", "        ave.barrier()\n        y = ave.load")
    assert apply(KERNEL, edit) == want


@pytest.mark.parametrize("imports, call", [
    ("import ave_core.lang as gpu", "gpu.barrier()"),
    ("import ave_core.lang", "ave_core.lang.barrier()"),
    ("from ave_core import lang as L", "L.barrier()"),
    ("from ave_core import lang", "lang.barrier()"),
    ("from ave_core.lang import barrier as sync, kernel", "sync()"),
    ("from ave_core.lang import *", "barrier()"),
])
def test_insert_barrier_uses_the_files_alias(imports, call):
    text = KERNEL.replace("import ave_core.lang as ave", imports + "\nimport ave_core.lang as z")
    assert fixes.barrier_call(text) == call  # the first import that fits
    fix = {"kind": "insert_barrier", "line": 9, "indent": "\t"}
    (action,) = fixes.code_actions(text, [lsp_diag(fix)], changes)
    (edit,) = action.edit.changes["file:///k.py"]
    assert edit.range.start == edit.range.end == types.Position(9, 0)
    assert edit.new_text == f"\t{call}\n"


def test_insert_barrier_keeps_crlf_and_appends_at_the_end():
    text = KERNEL.replace("\n", "\r\n")
    (action,) = fixes.code_actions(text, [lsp_diag({"kind": "insert_barrier", "line": 8,
                                                     "indent": "    "})], changes)
    assert action.edit.changes["file:///k.py"][0].new_text == "    ave.barrier()\r\n"
    no_final = KERNEL.rstrip("\n")                 # 9 lines, the last without "\n"
    (action,) = fixes.code_actions(no_final, [lsp_diag({"kind": "insert_barrier",
                                                         "line": 9, "indent": "    "})],
                                   changes)
    (edit,) = action.edit.changes["file:///k.py"]
    assert apply(no_final, edit) == no_final + "\n    ave.barrier()"


@pytest.mark.parametrize("fix", [
    {"kind": "insert_barrier", "line": 99, "indent": ""},          # past the end
    {"kind": "insert_barrier", "line": -1, "indent": ""},
    {"kind": "insert_barrier", "line": "8", "indent": ""},
    {"kind": "insert_barrier", "line": True, "indent": ""},
    {"kind": "insert_barrier", "line": 8, "indent": "x = 1; "},    # not an indentation
    {"kind": "insert_barrier", "line": 8, "indent": None},
    {"kind": "insert_barrier"},
    {"kind": "make_it_fast", "line": 8},
    "insert_barrier",
])
def test_malformed_or_unknown_fixes_offer_nothing(fix):
    assert fixes.code_actions(KERNEL, [lsp_diag(fix)], changes) == []


def test_insert_barrier_not_offered_twice_or_without_the_import():
    done = KERNEL.replace("        y = ave.load", "        ave.barrier()\n\n        y = ave.load")
    fix = {"kind": "insert_barrier", "line": 10, "indent": "        "}
    assert done.split("\n")[10].strip().startswith("y = ")
    assert fixes.code_actions(done, [lsp_diag(fix)], changes) == []
    other = KERNEL.replace("import ave_core.lang as ave", "import numpy as ave")
    assert fixes.code_actions(other, [lsp_diag({"kind": "insert_barrier", "line": 8,
                                                 "indent": ""})], changes) == []


def test_same_fix_from_two_diagnostics_is_one_action():
    fix = {"kind": "insert_barrier", "line": 8, "indent": "        "}
    a, b = lsp_diag(fix, line=7), lsp_diag(dict(fix), line=8)
    (action,) = fixes.code_actions(KERNEL, [a, b], changes)
    assert action.diagnostics == [a, b]


# ----------------------------------------------------------------------------- view_shape

VIEW = """\
import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 1], BK: ave.constexpr = 64):
    sA = ave.alloc((64, 64), ave.bf16)
    sF = ave.view(sA, {shape}, dtype=ave.f32)
"""


@pytest.mark.parametrize("shape, fixed", [
    ("(64, 64)", "(64, 32)"),        # bf16 -> f32: half the f32 elements
    ("[64, BK]", "[64, BK // 2]"),   # an expression is scaled, not replaced
    ("(16, 256)", "(16, 128)"),
    ("(8, 2 * BK)", "(8, (2 * BK) * 2)"),   # 8 * 256 f32 = 8192 bytes
])
def test_view_shape_fix_from_the_front_end(shape, fixed):
    text = VIEW.format(shape=shape)
    (d,) = compile_source(text, "/w/k.py").diagnostics
    assert d.code == "AVE106"
    assert d.fix["kind"] == "view_shape" and d.fix["bytes"] == 64 * 64 * 2
    (ld,) = to_lsp([d], path="/w/k.py", uri="file:///w/k.py", text=text)
    assert ld.data["fix"] == d.fix
    (action,) = fixes.code_actions(text, [ld], changes)
    assert "8192 bytes" in action.title
    (edit,) = action.edit.changes["file:///k.py"]
    new = apply(text, edit)
    assert new == VIEW.format(shape=fixed)
    assert compile_source(new, "/w/k.py").diagnostics == []      # the view now fits


def test_view_shape_fix_replaces_a_literal_by_the_number():
    text = VIEW.format(shape="(64, 3)")
    (d,) = compile_source(text, "/w/k.py").diagnostics
    assert d.fix["old"] == "3" and d.fix["new"] == "32" and d.fix["shape"] == [64, 32]
    assert d.fix["dtype"] == "f32"


@pytest.mark.parametrize("shape", [
    "(3, 64)",          # 8192 / (3 * 4) is not an integer
    "(4096, 1)",        # 8192 / (4096 * 4) = 0.5
    "SHAPE",            # not written as a tuple
    "(*SHAPE2,)",       # starred
])
def test_view_shape_fix_not_offered_when_not_mechanical(shape):
    text = VIEW.format(shape=shape).replace(
        "@ave.kernel", "SHAPE = (64, 64)\nSHAPE2 = (64, 64)\n\n\n@ave.kernel")
    (d,) = compile_source(text, "/w/k.py").diagnostics
    assert d.code == "AVE106" and d.fix is None


def test_view_shape_fix_not_offered_on_changed_text_or_disagreement():
    text = VIEW.format(shape="(64, 64)")
    (d,) = compile_source(text, "/w/k.py").diagnostics
    (ld,) = to_lsp([d], path="/w/k.py", uri="file:///w/k.py", text=text)
    edited = text.replace("(64, 64), dtype", "(64, 65), dtype")
    assert fixes.code_actions(edited, [ld], changes) == []       # stale diagnostic
    other = lsp_diag(dict(ld.data["fix"], new="16", shape=[64, 16]), code="AVE106")
    assert fixes.code_actions(text, [ld, other], changes) == []  # two answers


def test_view_shape_fix_not_offered_when_other_specializations_compile():
    # configs[0] (BK=32: a 4096-byte source) fails, configs[1] (BK=64) compiles: the fix
    # for configs[0] ((64, 16)) broke configs[1], whose fix ((64, 32)) broke configs[0]
    # again -- the editor flipped between them (a review helper). No fix now; a note says
    # why. Where every specialization fails the same way, the fix stays (above).
    text = VIEW.replace("@ave.kernel(threads=128)",
                        "@ave.kernel(threads=128, configs=[dict(BK=32), dict(BK=64)])"
                        ).replace("(64, 64), ave.bf16", "(64, BK), ave.bf16").format(
                            shape="(64, 32)")
    res = compile_source(text, "/w/k.py")
    (d,) = res.diagnostics
    assert d.code == "AVE106" and d.fix is None
    assert "no quick fix: the specialization configs[1] compiles with this text" in d.notes
    assert [k.constexprs["BK"] for k in res.kernels] == [64]
    both = text.replace("configs=[dict(BK=32), dict(BK=64)]", "configs=[dict(BK=32)]")
    (d,) = compile_source(both, "/w/k.py").diagnostics
    assert d.fix is not None and d.fix["new"] == "16"


def test_fix_of_a_finding_in_another_file_is_dropped():
    d = Diagnostic("AVE106", "view", "/w/helper.py", Range.of(3, 4, 3, 9),
                   fix={"kind": "insert_barrier", "line": 3, "indent": "    "})
    (ld,) = to_lsp([d], path="/w/k.py", uri="file:///w/k.py", text=KERNEL)
    assert "fix" not in ld.data
    assert d.to_json()["fix"] == d.fix
    assert "fix" not in Diagnostic("AVE106", "v", "/w/k.py", Range.of(0, 0, 0, 1)).to_json()


def test_server_fills_in_data_a_client_dropped():
    """A client that does not send ``data`` back gets the fix of the same diagnostic
    (range, code, message) from the server's last result."""
    from ave_lsp.server.server import AveLanguageServer, _Doc, _Result

    text = VIEW.format(shape="(64, 64)")
    (d,) = compile_source(text, "/w/k.py").diagnostics
    (ld,) = to_lsp([d], path="/w/k.py", uri="file:///w/k.py", text=text)
    ls = AveLanguageServer()
    ls.docs["file:///w/k.py"] = st = _Doc("file:///w/k.py")
    st.result = _Result(1, [ld], "1:x")
    bare = types.Diagnostic(range=ld.range, message=ld.message, code=ld.code, source="ave")
    assert ls._with_data("file:///w/k.py", bare).data["fix"] == d.fix
    other = types.Diagnostic(range=ld.range, message="another", code=ld.code, source="ave")
    assert ls._with_data("file:///w/k.py", other).data is None


# ----------------------------------------------------------------------------- insert_wait

#: a copy read while in flight (thread i reads s[0, i], its own 16-byte vector's first
#: element, thread 1 the one thread 0 moves): shared with test_server.py
PIPE = (pathlib.Path(__file__).parent / "data" / "in_flight.py").read_text("utf-8")
#: the same without committing X[1]'s copy
UNCOMMITTED = PIPE.replace("    ave.commit_async()\n    ave.copy(s[0]", "    ave.copy(s[0]")


def _inflight(text):
    from ave_core.analysis import analyze
    k = compile_source(text, "k.py").kernels[0]
    return [d for d in analyze(k).diagnostics
            if d.code == "AVE207" and "still in flight" in d.message], \
        [d.code for d in analyze(k).diagnostics]


def test_insert_wait_from_the_analysis_retires_the_copy():
    # s[0] is read while its copy (group 0) is in flight: 16-byte vectors (4 f32) by
    # thread i, 4-byte ones by thread i -- thread 0 reads s[0, 0] its own copy moves. With
    # X[1]'s copy committed after it, ave.wait_async(1) retires group 0 there, and a
    # barrier makes the other threads' bytes visible. (The same bug also gives an AVE203,
    # the bytes land at the wait, and a race of the copy landing there with the read: one
    # bug, three findings, one fix.)
    text = PIPE
    (d,), _ = _inflight(text)
    assert d.fix == {"kind": "insert_wait", "line": 10, "indent": "    ", "count": 1,
                     "commit": False, "reason": "the asynchronous copy is still in flight"}
    (out,) = to_lsp([d], path="k.py", uri="file:///k.py", text=text)
    (action,) = fixes.code_actions(text, [out], changes)
    assert action.title == ("Insert ave.wait_async(1) and ave.barrier() before line 11 (the "
                            "asynchronous copy is still in flight)")
    fixed = apply(text, action.edit.changes["file:///k.py"][0])
    assert "    ave.wait_async(1)\n    ave.barrier()\n    ave.copy(s[0]" in fixed
    assert _inflight(fixed) == ([], [])
    assert fixes.code_actions(fixed, [out], changes) == []        # offered once only


def test_insert_wait_commits_a_copy_not_committed_yet():
    # X[1]'s copy is never committed: ave.wait_async(0) does not wait for it (as
    # cp.async.wait_group), so the last read meets it in flight: commit, then wait
    text = UNCOMMITTED
    found, _ = _inflight(text)
    assert [(d.range.start.line, d.fix["count"], d.fix["commit"]) for d in found] == \
        [(9, 0, False), (12, 0, True)]
    fixed = text
    for d in reversed(found):                    # bottom up: the lines above stay put
        (out,) = to_lsp([d], path="k.py", uri="file:///k.py", text=fixed)
        (action,) = fixes.code_actions(fixed, [out], changes)
        fixed = apply(fixed, action.edit.changes["file:///k.py"][0])
    assert "    ave.commit_async()\n    ave.wait_async(0)\n    ave.barrier()\n" \
        "    ave.copy(s[1]" in fixed
    assert _inflight(fixed) == ([], [])


@pytest.mark.parametrize("imports,wait", [
    ("from ave_core import lang as L", "L.wait_async(2)"),
    ("from ave_core.lang import *", "wait_async(2)"),
])
def test_insert_wait_uses_the_files_alias(imports, wait):
    text = KERNEL.replace("import ave_core.lang as ave", imports + "\nimport ave_core.lang as ave")
    fix = {"kind": "insert_wait", "line": 9, "indent": "        ", "count": 2, "commit": False}
    (action,) = fixes.code_actions(text, [lsp_diag(fix)], changes)
    assert action.edit.changes["file:///k.py"][0].new_text.startswith(f"        {wait}\n")


@pytest.mark.parametrize("fix", [
    {"kind": "insert_wait", "line": 8, "indent": "    ", "count": -1, "commit": False},
    {"kind": "insert_wait", "line": 8, "indent": "    ", "count": True, "commit": False},
    {"kind": "insert_wait", "line": 8, "indent": "x", "count": 1, "commit": False},
    {"kind": "insert_wait", "line": 99, "indent": "    ", "count": 1, "commit": False},
    {"kind": "insert_wait", "line": 8, "indent": "    ", "count": 1, "commit": "no"},
])
def test_malformed_insert_wait_offers_nothing(fix):
    assert fixes.code_actions(KERNEL, [lsp_diag(fix)], changes) == []


def _improved(path, text):
    """The diagnostics as ave-lsp reports them: the check, then the proposals that a
    check of the fixed text proves (ave_lsp.fixplan)."""
    from ave_core.check import check_file
    from ave_lsp.fixplan import improve_fixes
    report = check_file(path, text)
    improve_fixes(report, text, lambda t: check_file(path, t))
    return report.diagnostics


def _v_wait():
    path = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "broken" /
               "flash_attention_v_wait.py")
    return path, open(path, encoding="utf-8").read()


def test_set_wait_count_fixes_the_broken_flash_attention_example():
    # examples/broken/flash_attention_v_wait.py waits for one group too few before P V:
    # `ave.wait_async(2)`, then a barrier, then the refill of V_{j+1} (one commit), then
    # the reads of V_j. The read needs wait_async(2) after that commit, so the wait before
    # it needs 2 - 1 = 1: the quick fix changes its count (it inserted a second wait and
    # barrier after the refill, leaving the wrong count in place). Applied once (both
    # reads of V_j offer it), no finding at all is left in any specialization (the
    # correct example, examples/flash_attention.py, waits with wait_async(1) there)
    path, text = _v_wait()
    lines = text.splitlines()
    found = [d for d in _improved(path, text)
             if d.code == "AVE207" and "still in flight" in d.message]
    wait = lines.index("        ave.wait_async(2)                   # BUG: V_j may still be "
                       "in flight")
    assert len(found) == 2
    for d in found:
        assert d.fix == {"kind": "set_wait_count",
                         "range": {"start": {"line": wait, "character": 23},
                                   "end": {"line": wait, "character": 24}},
                         "old": "2", "new": "1", "line": wait,
                         "reason": "the wait leaves the asynchronous copy in flight"}
        assert f"change ave.wait_async(2) at line {wait + 1} to ave.wait_async(1) " \
               "(quick fix)" in d.notes
    outs = to_lsp(found, path=path, uri="file:///k.py", text=text)
    (action,) = fixes.code_actions(text, outs, changes)        # one action for both
    assert action.title == (f"Change the wait's count 2 -> 1 at line {wait + 1} (the wait "
                            "leaves the asynchronous copy in flight)")
    assert len(action.diagnostics) == 2
    fixed = apply(text, action.edit.changes["file:///k.py"][0])
    assert fixed.splitlines()[wait].startswith("        ave.wait_async(1)   ")
    from ave_core.check import check_file
    assert check_file(path, fixed).diagnostics == []
    assert fixes.code_actions(fixed, outs, changes) == []       # stale: not offered again


def test_insert_wait_fixes_the_broken_flash_attention_example_with_an_expression_count():
    # the same bug with the wait's count written as an expression (`1 + 1`): no
    # literal to rewrite -- the fix inserts a wait and a barrier
    # before the read, and applied once it leaves no finding at all (the interpreter
    # computes O right with it: checked by hand, AVE303/AVE304 before, none after)
    from ave_core.check import check_file
    path, text = _v_wait()
    text = text.replace("        ave.wait_async(2)                   # BUG:",
                        "        ave.wait_async(1 + 1)               # BUG:")
    found = [d for d in check_file(path, text).diagnostics
             if d.code == "AVE207" and "still in flight" in d.message]
    assert found and all(d.fix and d.fix["kind"] == "insert_wait" for d in found)
    (out,) = to_lsp([found[0]], path=path, uri="file://" + path, text=text)
    (action,) = fixes.code_actions(text, [out], changes)
    # (before the read of V_j: its line, derived from the file)
    read = text.splitlines().index("        v_lo = ave.ldmatrix(vs[0:BC, 0:DH], tpv.b)") + 1
    assert action.title.startswith(
        f"Insert ave.wait_async(2) and ave.barrier() before line {read}")
    fixed = apply(text, action.edit.changes["file:///k.py"][0])
    assert check_file(path, fixed).diagnostics == []


def test_set_wait_count_needs_a_barrier_between_the_wait_and_the_read():
    # without the barrier after the wait, tightening the count retires the thread's own
    # copies only: the insert_wait fix (a wait and a barrier before the read) stays
    path, text = _v_wait()
    text = text.replace("        ave.barrier()                       # visible to all; "
                        "nobody reads sV[sn] any more\n", "", 1)
    ds = [d for d in _improved(path, text)
          if d.code == "AVE207" and "still in flight" in d.message]
    assert ds and {d.fix["kind"] for d in ds if d.fix} == {"insert_wait"}


@pytest.mark.parametrize("fix", [
    {"kind": "set_wait_count", "range": {"start": {"line": 9, "character": 23},
                                         "end": {"line": 9, "character": 24}},
     "old": "2", "new": "-1", "line": 9},
    {"kind": "set_wait_count", "range": {"start": {"line": 9, "character": 23},
                                         "end": {"line": 9, "character": 24}},
     "old": "2", "new": "2", "line": 9},
    {"kind": "set_wait_count", "range": {"start": {"line": 9, "character": 23},
                                         "end": {"line": 9, "character": 24}},
     "old": "7", "new": "1", "line": 9},               # the text there is not "7"
    {"kind": "set_wait_count", "range": None, "old": "2", "new": "1", "line": 9},
])
def test_malformed_or_stale_set_wait_count_offers_nothing(fix):
    text = "import ave_core.lang as ave\n" + "\n" * 8 + "        ave.wait_async(2)\n"
    assert fixes.code_actions(text, [lsp_diag(fix)], changes) == []
    ok = {**fix, "old": "2", "new": "1", "range": {"start": {"line": 9, "character": 23},
                                                   "end": {"line": 9, "character": 24}}}
    (action,) = fixes.code_actions(text, [lsp_diag(ok)], changes)
    assert apply(text, action.edit.changes["file:///k.py"][0]).endswith(
        "        ave.wait_async(1)\n")


def test_proposals_merge_across_specializations():
    # the same finding in two specializations: a set_wait proposal of the same wait keeps
    # the lower count (it retires what both need), a barrier span the statements both
    # share; what the other specialization lacks is dropped (a barrier inside `if F ==
    # 0:` proposed by configs[0] was offered for configs[1], where that branch is gone;
    # a review helper)
    from ave_core.analysis import merge_wait_fixes
    rng = {"start": {"line": 3, "character": 20}, "end": {"line": 3, "character": 21}}

    def diag(new=None, span=None, old="3"):
        d = Diagnostic("AVE207", "race", "k.py", Range.of(3, 20, 3, 21))
        p = {}
        if new is not None:
            p["set_wait"] = {"kind": "set_wait_count", "range": rng, "old": old,
                             "new": new, "line": 3}
        if span is not None:
            p["span"] = span
        d.proposal = p or None
        return d
    a, b = diag("2", [[1, "  "], [2, "  "]]), diag("1", [[2, "  "], [5, "  "]])
    merge_wait_fixes(a, b)
    assert a.proposal["set_wait"]["new"] == "1" and a.proposal["span"] == [[2, "  "]]
    for other in (diag("1", old="4"), diag(), diag(span=[[9, "  "]])):
        c = diag("2", [[1, "  "]])
        merge_wait_fixes(c, other)
        assert c.proposal is None

def test_insert_wait_holds_for_every_loop_iteration():
    # two groups in flight, read by a loop: i = 0 needs wait_async(1), i = 1 needs
    # wait_async(0) -- the fix (before the read, inside the loop) takes the fewest, and one
    # application clears both (it took the first iteration's count: a third review)
    text = PIPE.replace(
        "    ave.copy(s[0], Y[0, 0:64], vector_bytes=4)\n    ave.wait_async(0)\n"
        "    ave.barrier()\n    ave.copy(s[1], Y[1, 0:64], vector_bytes=4)\n",
        "    for i in ave.range(0, 2):\n        ave.copy(s[i], Y[i, 0:64], vector_bytes=4)\n"
        "    ave.wait_async(0)\n")
    (d,), _ = _inflight(text)
    assert (d.fix["line"], d.fix["count"], d.fix["commit"]) == (11, 0, False)
    (out,) = to_lsp([d], path="k.py", uri="file:///k.py", text=text)
    (action,) = fixes.code_actions(text, [out], changes)
    fixed = apply(text, action.edit.changes["file:///k.py"][0])
    assert _inflight(fixed)[0] == []


def test_insert_wait_inside_a_helper_that_issues_the_copy_itself():
    # the helper copies and then reads before any wait: a wait before its call comes
    # before the copy (it was offered there, again and again; then none). The wait goes
    # inside the helper, before its read, and fixes it.
    text = """\
import ave_core.lang as ave


def stage(X, s, r):
    ave.copy_async(X[r, 0:64], s, vector_bytes=16)
    ave.commit_async()
    ave.copy(s, X[r + 8, 0:64], vector_bytes=4)


@ave.kernel(threads=64)
def k(X: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((64,), ave.f32, space="shared")
    stage(X, s, 0)
    ave.wait_async(0)
"""
    (d,), _ = _inflight(text)
    assert {k: v for k, v in d.fix.items() if k != "reason"} == \
        {"kind": "insert_wait", "line": 6, "indent": "    ", "count": 0, "commit": False}
    lines = text.splitlines()
    lines[6:6] = ["    ave.wait_async(0)", "    ave.barrier()"]
    assert _inflight("\n".join(lines) + "\n")[0] == []


def test_insert_wait_holds_for_every_specialization():
    # the same in-flight read in two specializations (S = 4 stages needs wait_async(3),
    # S = 2 needs wait_async(1) there): the one fix must hold for both -- it kept the
    # first specialization's count (a review helper)
    import tempfile

    from ave_core.check import check_file
    text = """\
import ave_core.lang as ave


@ave.kernel(threads=64, configs=[{"S": 4}, {"S": 2}])
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 1], KT: ave.i32, S: ave.constexpr):
    tv = ave.tv_layout(ave.layout((2, 32), (32, 1)), ave.layout(1, 1), (64,))
    sA = ave.alloc((S, 64), ave.f32, space="shared")
    for i in ave.static_range(S - 1):
        ave.copy_async(X[i, 0:64], sA[i], vector_bytes=16)
        ave.commit_async()
    acc = ave.zeros((64,), ave.f32, tv)
    for kt in ave.range(0, KT):
        ave.barrier()
        ave.copy_async(X[kt + S - 1, 0:64], sA[(kt + S - 1) % S], vector_bytes=16)
        ave.commit_async()
        acc = acc + ave.load(sA[kt % S], tv)
    ave.wait_async(0)
    ave.store(Y[0:64], acc)
"""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(pathlib.Path(tmp) / "k.py")
        pathlib.Path(path).write_text(text)
        (d,) = [d for d in check_file(path, text).diagnostics if d.fix is not None]
        assert (d.fix["kind"], d.fix["count"]) == ("insert_wait", 1)
        assert "insert ave.wait_async(1), ave.barrier() before line 16 (quick fix)" in d.notes
        (out,) = to_lsp([d], path=path, uri="file:///k.py", text=text)
        (action,) = fixes.code_actions(text, [out], changes)
        fixed = apply(text, action.edit.changes["file:///k.py"][0])
        assert [x for x in check_file(path, fixed).diagnostics
                if x.code == "AVE207" and "still in flight" in x.message] == []


@pytest.mark.parametrize("body", [
    # a helper called twice with different sources
    "    def as_f32(s):\n        return ave.view(s, (64, 32), dtype=ave.f32)\n"
    "    sA = ave.alloc((64, 32), ave.bf16)\n    sB = ave.alloc((64, 64), ave.bf16)\n"
    "    fa = as_f32(sA)\n    fb = as_f32(sB)\n",
    # a compile-time loop over them
    "    sA = ave.alloc((64, 32), ave.bf16)\n    sB = ave.alloc((64, 64), ave.bf16)\n"
    "    for s in (sA, sB):\n        f = ave.view(s, (64, 32), dtype=ave.f32)\n",
])
def test_view_shape_fix_not_offered_for_a_repeated_statement(body):
    # The fix for the first source (16 columns) broke the second (8192 bytes: 32), whose
    # fix broke the first again: the editor's preferred action flipped forever (a review
    # helper). A view in a helper or a compile-time loop gets no fix.
    text = ("import ave_core.lang as ave\n\n\n@ave.kernel(threads=128)\n"
            "def k(X: ave.Tensor[ave.f32, 1]):\n" + body)
    (d,) = compile_source(text, "/w/k.py").diagnostics
    assert d.code == "AVE106" and d.fix is None


def test_view_shape_fix_not_offered_when_specializations_want_different_texts():
    # configs[0] wants W // 4, configs[1] W // 2 at the same place: both were offered (the
    # JSON report and SARIF carried both; a review helper)
    text = ("import ave_core.lang as ave\n\n\n"
            "@ave.kernel(threads=32, configs=[dict(BK=32, W=64), dict(BK=64, W=64)])\n"
            "def k(X: ave.Tensor[ave.f32, 2], BK: ave.constexpr = 32, W: ave.constexpr = 64):\n"
            "    s = ave.alloc((16, BK), ave.bf16, space=\"shared\")\n"
            "    v = ave.view(s, (16, W), dtype=ave.f32)\n")
    ds = compile_source(text, "/w/k.py").diagnostics
    assert [d.code for d in ds] == ["AVE106", "AVE106"] and all(d.fix is None for d in ds)
    assert all("no quick fix: the specializations want different shapes here" in d.notes
               for d in ds)
