"""The language server's pure parts, in process: diagnostic conversion, ``# ave: ignore``
suppression and its quick-fix edit, settings, hover lookup, and a light start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from ave_core.diagnostics import Diagnostic, Location, Range, Related, Severity
from ave_lsp import cli
from ave_lsp.server import convert
from ave_lsp.server.convert import LineComments, suppress_edit, to_lsp
from ave_lsp.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def diag(code="AVE201", line=1, col=4, end=9, file="/w/k.py", **kw) -> Diagnostic:
    return Diagnostic(code, kw.pop("message", "x and y disagree"), file,
                      Range.of(line, col, line, end), **kw)


TEXT = "import ave_core.lang as ave\nx = f(a, b)\ny = g(x)\n"


# ----------------------------------------------------------------------------- conversion

def test_to_lsp_fields():
    d = diag(severity=Severity.ERROR, notes=["note one", "note two"],
             related=[Related(Location("/w/k.py", Range.of(0, 0, 0, 3)), "x: tag introduced"),
                      Related(Location("/w/helper.py", Range.of(4, 1, 4, 2)), "y: moved")],
             witness={"block": [0, 0, 0], "threads": [{"thread": 8}]})
    (out,) = to_lsp([d], path="/w/k.py", uri="file:///w/k.py", text=TEXT, root="/w")
    assert out.range == types.Range(types.Position(1, 4), types.Position(1, 9))
    assert out.severity == types.DiagnosticSeverity.Error
    assert out.code == "AVE201" and out.source == "ave"
    href = out.code_description.href
    assert href == (ROOT / "docs" / "codes" / "AVE201.md").as_uri()
    assert [r.location.uri for r in out.related_information] == [
        "file:///w/k.py", "file:///w/helper.py"]
    assert [r.message for r in out.related_information] == ["x: tag introduced", "y: moved"]
    assert out.data == {"witness": d.witness, "notes": ["note one", "note two"]}


def test_every_code_has_a_docs_page():
    from ave_core.diagnostics import CODES

    for code in CODES:
        assert convert.code_href(code) is not None, code


def test_message_is_one_line_and_no_related_is_none():
    (out,) = to_lsp([diag(message="first\n  second\n")], path="/w/k.py",
                    uri="file:///w/k.py", text=TEXT)
    assert out.message == "first second"
    assert out.related_information is None
    assert out.data == {"witness": None, "notes": []}


def test_diagnostic_in_another_file_is_shown_at_the_call_site():
    d = diag(file="/w/helpers.py", line=7, col=2, end=5,
             related=[Related(Location("/w/k.py", Range.of(2, 4, 2, 8)), "called here")])
    (out,) = to_lsp([d], path="/w/k.py", uri="file:///w/k.py", text=TEXT, root="/w")
    assert out.range.start == types.Position(2, 4)
    assert out.message.startswith("helpers.py:8:3: ")
    first = out.related_information[0]
    assert first.location.uri == "file:///w/helpers.py"
    assert first.location.range.start == types.Position(7, 2)


# ----------------------------------------------------------------------------- suppression

@pytest.mark.parametrize("comment, code, suppressed", [
    ("# ave: ignore", "AVE201", True),
    ("# ave: ignore[AVE201]", "AVE201", True),
    ("# ave: ignore[AVE204]", "AVE201", False),
    ("# ave: ignore[AVE204, AVE201]", "AVE201", True),
    ("# ave:ignore[ave201]", "AVE201", True),
    ("#ave: ignore [AVE201]", "AVE201", True),
    ("# BUG: swapped  # ave: ignore[AVE201]", "AVE201", True),
    ("# ave: ignored for now", "AVE201", False),
    ("# nothing to see", "AVE201", False),
    ("# ave: ignore  # the pairing is checked by hand", "AVE201", True),
    ("# AVE: IGNORE", "AVE201", True),
    # a malformed directive suppresses nothing (it suppressed every code: a typo of the
    # code list hid an error on the same line; a review helper)
    ("# ave: ignore(AVE203)", "AVE201", False),
    ("# ave: ignore(AVE201)", "AVE201", False),
    ("# ave: ignore AVE203", "AVE201", False),
    ("# ave: ignore-foo", "AVE201", False),
])
def test_suppression_comments(comment, code, suppressed):
    text = f"import ave_core.lang as ave\nx = f(a, b)  {comment}\n"
    out = to_lsp([diag(code=code)], path="/w/k.py", uri="file:///w/k.py", text=text)
    assert (out == []) is suppressed


def test_suppression_is_by_the_start_line_and_not_inside_strings():
    text = 'import ave_core.lang as ave\nx = f("# ave: ignore")\ny = 1  # ave: ignore\n'
    assert len(to_lsp([diag(line=1)], path="/w/k.py", uri="u", text=text)) == 1
    multi = Diagnostic("AVE201", "m", "/w/k.py", Range.of(1, 0, 2, 3))
    assert len(to_lsp([multi], path="/w/k.py", uri="u", text=text)) == 1
    assert to_lsp([diag(line=2)], path="/w/k.py", uri="u", text=text) == []


def test_suppression_with_crlf_and_cr_line_ends():
    for nl in ("\r\n", "\r"):
        text = nl.join(["import ave_core.lang as ave", "x = f(a)  # ave: ignore[AVE201]",
                        "y = g(x)", ""])
        assert to_lsp([diag(line=1)], path="/w/k.py", uri="u", text=text) == []
        assert len(to_lsp([diag(line=2)], path="/w/k.py", uri="u", text=text)) == 1


def test_suppress_edit_appends_a_comment():
    e = suppress_edit(TEXT, 1, "AVE201")
    assert e.new_text == "  # ave: ignore[AVE201]"
    assert e.range.start == e.range.end == types.Position(1, len("x = f(a, b)"))


def test_suppress_edit_counts_utf16():
    text = "import ave_core.lang as ave\nx = f('\U0001F600')\n"
    e = suppress_edit(text, 1, "AVE201")
    assert e.range.start.character == len("x = f('')") + 2


def test_suppress_edit_adds_to_an_existing_list():
    text = "import ave_core.lang as ave\nx = f(a)  # ave: ignore[AVE204]\n"
    e = suppress_edit(text, 1, "AVE201")
    line = text.split("\n")[1]
    assert e.new_text == ", AVE201"
    assert e.range.start.character == line.index("]")
    new = line[:e.range.start.character] + e.new_text + line[e.range.start.character:]
    assert new.endswith("# ave: ignore[AVE204, AVE201]")
    assert LineComments.of("x\n" + new + "\n").is_suppressed(1, "AVE201")


def test_suppress_edit_not_offered_where_a_comment_cannot_go():
    text = ('import ave_core.lang as ave\nx = f(a) + \\\n    g(b)\ns = """doc\nmore\n"""\n'
            'y = 1  # ave: ignore\n')
    # a statement continued by a backslash: the comment goes on the first line after it
    # that can take one (no action was offered, and no comment suppressed it: a review
    # helper)
    e = suppress_edit(text, 1, "AVE201")
    assert e is not None and e.range.start.line == 2
    assert e.range.start.character == len("    g(b)")
    done = text.replace("    g(b)\n", "    g(b)  # ave: ignore[AVE201]\n")
    assert LineComments.of(done).is_suppressed(1, "AVE201")
    assert not LineComments.of(done).is_suppressed(1, "AVE207")
    assert suppress_edit(done, 1, "AVE201") is None       # already suppressed
    assert suppress_edit(text, 3, "AVE201") is None       # inside a triple-quoted string
    assert suppress_edit(text, 6, "AVE201") is None       # already suppressed
    assert suppress_edit(text, 2, "AVE201") is not None
    assert suppress_edit(text, 99, "AVE201") is None


def test_suppress_edit_not_offered_where_it_would_not_suppress():
    # an unclosed list on the line: the appended `# ave: ignore[AVE207]` was read as
    # part of it (codes AVE201, #, ave:, ignore[AVE207) and suppressed nothing, the
    # AVE122 on the line became three (a review helper)
    text = "import ave_core.lang as ave\nx = f(a)  # ave: ignore[AVE201\ny = f(b)\n"
    assert not LineComments.of(text).is_suppressed(1, "AVE207")
    assert suppress_edit(text, 1, "AVE207") is None
    assert suppress_edit(text, 1, "AVE122") is None
    e = suppress_edit(text, 2, "AVE207")
    assert e is not None and e.new_text == "  # ave: ignore[AVE207]"
    # (a non-BMP character before the comment: the check applies the edit where it goes)
    text = "import ave_core.lang as ave\nx = f('\U0001F600')  # why\n"
    e = suppress_edit(text, 1, "AVE201")
    assert e is not None and e.range.start.character == len("x = f('')  # why") + 2


def test_suppress_edit_on_a_file_that_does_not_tokenize():
    text = "import ave_core.lang as ave\nx = f(a,\ny = 1  # ave: ignore[AVE100]\n"
    assert to_lsp([diag(code="AVE100", line=2)], path="/w/k.py", uri="u", text=text) == []
    assert suppress_edit(text, 1, "AVE201") is not None


# ----------------------------------------------------------------------------- settings

def test_settings():
    assert Settings.from_json(None) == (Settings(), [])
    s, w = Settings.from_json({"checkOnChange": True, "tripCountBound": 4,
                               "solverTimeoutMs": 500})
    assert s == Settings(True, 4, 500) and w == []
    opts = s.analysis_options()
    assert opts.trip_bound == 4 and opts.solver_timeout_ms == 500
    s, w = Settings.from_json({"checkOnChange": "yes", "tripCountBound": 0,
                               "solverTimeoutMs": "fast", "inlayHints": "no"})
    assert s == Settings() and len(w) == 4 and s.inlay_hints is True
    s, w = Settings.from_json({"inlayHints": False})
    assert s.inlay_hints is False and w == [] and s.explicit == {"inlay_hints": False}
    s, w = Settings.from_json([1, 2])
    assert s == Settings() and len(w) == 1
    # an unknown key: a warning (it was silent); the client's own keys of the section
    # (VS Code's ave.server.*, ave.trace.server) are not the server's and say nothing
    s, w = Settings.from_json({"solverTimeOutMs": 10, "trace": {"server": "verbose"},
                               "server": {"path": "ave-lsp"}, "jobs": 1})
    assert s.jobs == 1 and s.solver_timeout_ms == Settings().solver_timeout_ms
    assert w == ["ave: unknown key 'solverTimeOutMs' ignored"]


# ----------------------------------------------------------------------------- hover

def test_hover_index_picks_the_reaching_definition():
    from ave_lsp.server.hover import build_index

    path = str(ROOT / "examples" / "gemm.py")
    text = Path(path).read_text("utf-8")
    idx = build_index(text, path, str(ROOT))

    def at(needle: str, offset: int):
        i = text.index(needle) + offset
        line = text.count("\n", 0, i)
        found = idx.hover(line, i - (text.rfind("\n", 0, i) + 1))
        return found[0] if found else None

    lhs = at("    A = ave.tag(A", 4)               # the tagged tensor
    rhs = at("    A = ave.tag(A", 16)              # the parameter it tags
    assert "`row`" in lhs and "tag" not in rhs
    assert "(128, 32)" in at("        a = ave.ldmatrix", 8)
    assert at("    for kt in ave.static_range", 13) is None   # not a kernel value
    assert at("import ave_core", 0) is None                   # outside every kernel
    assert idx.hover(10_000, 0) is None


# ----------------------------------------------------------------------------- start-up

def test_server_import_is_light():
    code = ("import sys, ave_lsp.cli, ave_lsp.server, ave_lsp.server.server as s; "
            "s.create_server(); "
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('z3', 'numpy', 'torch') "
            "or m.startswith(('ave_core.compiler', 'ave_core.analysis', 'ave_core.lang', "
            "'ave_core.check', 'ave_core.interp'))]; "
            "print(heavy)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


@pytest.mark.parametrize("value", ["nohost", "host:", ":80", "h:99999", "h:x"])
def test_tcp_needs_host_and_port(value, capsys):
    assert cli.main(["--tcp", value]) == 2
    assert "HOST:PORT" in capsys.readouterr().err


def test_stdio_server_exits_when_the_client_goes_away():
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--stdio"], input=b"",
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b"", p.stderr


def test_stdio_server_refuses_streams_that_are_not_files(capsys):
    # under capsys, stdin/stdout are Python objects without a file descriptor
    assert cli.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "not files" in err


# ----------------------------------------------------------------------------- incremental edits

@pytest.mark.parametrize("src, rng, text, want", [
    # past the end of a last line without a line end: at its end (pygls put it one early)
    ("x = 1  # ave: ignore[AVE100]", (0, 1000, 0, 1000), " # tail",
     "x = 1  # ave: ignore[AVE100] # tail"),
    # one past a CRLF line's text: before the CRLF, not inside it
    ("ab\r\ncd\r\n", (0, 3, 0, 3), "X", "abX\r\ncd\r\n"),
    ("ab\r\ncd\r\n", (0, 1, 1, 1), "X", "aXd\r\n"),
    ("ab\rcd", (0, 9, 1, 0), "", "abcd"),
    # UTF-16 units: the emoji is two
    ("a\U0001F60Bb\nc", (0, 3, 0, 4), "", "a\U0001F60B\nc"),
    # lines past the end: the end of the document
    ("ab\ncd", (5, 0, 5, 0), "Z", "ab\ncdZ"),
    ("ab\ncd\n", (2, 0, 2, 0), "Z", "ab\ncd\nZ"),
    # a form feed does not end an LSP line
    ("a\fb\nc", (1, 0, 1, 1), "D", "a\fb\nD"),
])
def test_incremental_edits_follow_lsp_positions(src, rng, text, want):
    from pygls.workspace import Workspace

    from ave_lsp.server.server import _use_lsp_line_ends

    ws = Workspace(None, sync_kind=types.TextDocumentSyncKind.Incremental)
    _use_lsp_line_ends(ws)
    ws.put_text_document(types.TextDocumentItem(uri="file:///w/a.py", language_id="python",
                                                version=1, text=src))
    doc = ws.get_text_document("file:///w/a.py")
    sl, sc, el, ec = rng
    doc.apply_change(types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(sl, sc), types.Position(el, ec)), text=text))
    assert doc.source == want


def test_hover_of_slices_and_helper_results(tmp_path):
    # A slice or transpose of a shared tile showed the allocation's layout (its type
    # carries it), and a name bound to a helper's result (its ops carry the helper's
    # names) showed the *later* definition of the same name: 64x64 for a 64x32 tile (a
    # review helper). Now the slice's own layout, and nothing rather than a wrong one.
    from ave_lsp.server.hover import build_index

    (tmp_path / "helpers.py").write_text(
        "import ave_core.lang as ave\n\n\ndef load_tile(src, BM, BK):\n"
        "    sX = ave.alloc((BM, BK), ave.bf16, space=\"shared\")\n"
        "    ave.copy(src, sX, vector_bytes=16)\n    ave.barrier()\n    return sX\n", "utf-8")
    text = ("import ave_core.lang as ave\nfrom helpers import load_tile\n\n\n"
            "@ave.kernel(threads=128)\n"
            "def kern(A: ave.Tensor[ave.bf16, 2], BM: ave.constexpr = 64, "
            "BK: ave.constexpr = 32):\n"
            "    sA = load_tile(A[0:BM, 0:BK], BM, BK)\n"          # line 6
            "    sub = sA[0:16, :]\n"                              # line 7
            "    s3 = ave.alloc((3, BM, BK), ave.bf16, space=\"shared\",\n"
            "                   layout=ave.swizzled(ave.swizzle(2, 3, 3), "
            "ave.row_major((3, BM, BK))))\n"
            "    cur = s3[1]\n"                                    # line 10
            "    curT = cur.T\n"                                   # line 11
            "    sA = ave.alloc((BM, 2 * BK), ave.bf16, space=\"shared\")\n")
    path = str(tmp_path / "k.py")
    idx = build_index(text, path, str(tmp_path))
    hints = {h[0].line: h[1] for h in idx.inlay_hints(0, 20)}
    assert hints[7] == "bf16 (16, 32) shared · (16,32):(32,1)"
    assert hints[10] == "bf16 (64, 32) shared · Sw<2,3,3> o 2048 o (64,32):(32,1)"
    assert hints[11] == "bf16 (32, 64) shared · Sw<2,3,3> o 2048 o (32,64):(1,32)"
    # sA = load_tile(...): the helper's result, 64 x 32 -- not the later 64 x 64 (it
    # showed that, then nothing; a second review helper: helper results, aliases, loop
    # variables and helper parameters had no hover or hint -- the names they are bound to
    # now come from the front end, KernelIR.bindings)
    assert "`(64, 32)`" in idx.hover(6, 5)[0] and hints[6].startswith("bf16 (64, 32) shared")
    assert "(64, 64)" in idx.hover(12, 5)[0]        # the later sA is the 64x64 one
    # a use of sA between them is the helper's result too
    assert "`(16, 32)`" in idx.hover(7, 5)[0] and "`(64, 32)`" in idx.hover(7, 11)[0]


def test_hover_of_aliases_loop_variables_and_helper_parameters(tmp_path):
    from ave_lsp.server.hover import build_index

    text = ("import ave_core.lang as ave\n\n\n"
            "@ave.kernel(threads=128)\n"
            "def kern(A: ave.Tensor[ave.bf16, 2], BM: ave.constexpr = 64, "
            "BK: ave.constexpr = 32):\n"
            "    s = ave.alloc((BM, BK), ave.bf16, space=\"shared\")\n"   # line 5
            "    def half(t):\n"                                         # line 6
            "        return t[0:32, :]\n"                                # line 7
            "    h = half(s)\n"                                          # line 8
            "    c = h\n"                                                # line 9
            "    for kt in ave.range(0, A.shape[1] // BK):\n"            # line 10
            "        x = kt * 2\n")                                      # line 11
    idx = build_index(text, str(tmp_path / "k.py"), str(tmp_path))
    hints = {h[0].line: h[1] for h in idx.inlay_hints(0, 20)}
    assert hints[8] == hints[9] == "bf16 (32, 32) shared · (32,32):(32,1)"
    assert "`(32, 32)`" in idx.hover(9, 4)[0] and "`(32, 32)`" in idx.hover(9, 8)[0]
    assert "`(64, 32)`" in idx.hover(7, 15)[0]      # the helper's parameter t: s
    assert "`i32`" in idx.hover(10, 8)[0] and "`i32`" in idx.hover(11, 12)[0]   # kt


def test_internal_errors_and_limits_are_not_suppressed():
    # docs/lsp.md: AVE900-AVE902 are the tool's own failures and limits; `# ave: ignore`
    # on line 1 hid an internal error silently (only the quick fix was withheld; a
    # review helper)
    text = "import ave_core.lang as ave  # ave: ignore\nx = 1  # ave: ignore[AVE901]\n"
    ds = [diag(code="AVE900"), diag(code="AVE902"), diag(code="AVE201")]
    for d in ds:
        d.range = type(d.range)(type(d.range.start)(0, 0), type(d.range.start)(0, 5))
    out = to_lsp(ds, path="/w/k.py", uri="file:///w/k.py", text=text)
    assert sorted(d.code for d in out) == ["AVE900", "AVE902"]


def test_watched_file_events_recheck_only_what_depends_on_them(tmp_path, monkeypatch):
    # A batch of file events (a checkout, writes into .venv, a pyproject.toml of another
    # project) re-checked every open document once per event and scanned every
    # document's configuration per event (12 s for 5000 events; a review helper). Now:
    # the dependents of helpers, every document only for its own pyproject.toml or
    # baseline, nothing under .venv, and a watcher event for a save just handled is
    # skipped.
    from ave_lsp.server.server import AveLanguageServer, _Doc

    ls = AveLanguageServer()
    scheduled: list[str] = []
    monkeypatch.setattr(ls, "schedule", lambda uri, delay: scheduled.append(uri))
    monkeypatch.setattr(ls, "refresh_inlay_hints", lambda: None)
    monkeypatch.setattr(ls, "root_for", lambda path: str(tmp_path))    # the workspace
    (tmp_path / "pyproject.toml").write_text("[tool.ave]\n", "utf-8")
    helper = tmp_path / "h.py"
    helper.write_text("x = 1\n", "utf-8")
    k1, k2 = tmp_path / "k1.py", tmp_path / "k2.py"
    for k in (k1, k2):
        ls.docs[k.as_uri()] = _Doc(k.as_uri())
    ls.docs[k1.as_uri()].files = [str(k1), str(helper)]
    ls.docs[k2.as_uri()].files = [str(k2)]
    venv = tmp_path / ".venv" / "lib" / "x.py"
    venv.parent.mkdir(parents=True)
    venv.write_text("", "utf-8")
    other = tmp_path.parent / "elsewhere" / "pyproject.toml"
    other.parent.mkdir(exist_ok=True)
    other.write_text("[tool.ave]\n", "utf-8")
    ls.files_changed([venv.as_uri(), other.as_uri(), (tmp_path / "data.json").as_uri()],
                     watched=True)
    assert scheduled == []
    ls.files_changed([helper.as_uri()])                     # the helper saved
    assert scheduled == [k1.as_uri()]
    ls.files_changed([helper.as_uri()], watched=True)       # and its watcher event
    assert scheduled == [k1.as_uri()]
    ls.files_changed([(tmp_path / "pyproject.toml").as_uri()], watched=True)
    assert sorted(scheduled[1:]) == sorted([k1.as_uri(), k2.as_uri()])
    # a pyproject.toml deleted: the documents under its directory are re-checked (their
    # nearest one is another now, which no event names; they kept the deleted file's
    # settings; a review helper) -- not those elsewhere
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[tool.ave]\nmaxFileLines = 1\n", "utf-8")
    k3 = sub / "k3.py"
    ls.docs[k3.as_uri()] = _Doc(k3.as_uri())
    ls.docs[k3.as_uri()].files = [str(k3)]
    (sub / "pyproject.toml").unlink()
    del scheduled[:]
    ls.files_changed([(sub / "pyproject.toml").as_uri()], watched=True)
    assert scheduled == [k3.as_uri()]
    # one created above a nearer one (an import root now): the documents under it (k4's
    # nearest is inner/pyproject.toml, no event names it)
    deeper = sub / "inner"
    deeper.mkdir()
    (deeper / "pyproject.toml").write_text("[project]\nname = 'i'\n", "utf-8")
    k4 = deeper / "k4.py"
    ls.docs[k4.as_uri()] = _Doc(k4.as_uri())
    ls.docs[k4.as_uri()].files = [str(k4)]
    del ls.docs[k3.as_uri()]            # (then it is no open document's nearest one)
    (sub / "pyproject.toml").write_text("[project]\nname = 's'\n", "utf-8")
    del scheduled[:]
    ls.files_changed([(sub / "pyproject.toml").as_uri()], watched=True)
    assert scheduled == [k4.as_uri()]


def test_hover_bindings_follow_the_text_and_the_scopes(tmp_path):
    # Review cases of the bound-name hover: a nested helper's parameter `x` shown for the
    # kernel's `x`; a name merged by a runtime branch shown as one arm's value (its tag);
    # the value after a runtime loop shown as the loop body's.
    from ave_lsp.server.hover import build_index

    head = ("import ave_core.lang as ave\n\n\n@ave.kernel(threads=128)\n"
            "def kern(A: ave.Tensor[ave.bf16, 2], BM: ave.constexpr = 64, "
            "BK: ave.constexpr = 32):\n")
    text = head + (
        "    sA = ave.alloc((2, BM, BK), ave.bf16, space=\"shared\")\n"       # 5
        "    sB = ave.alloc((32, 16), ave.bf16, space=\"shared\")\n"          # 6
        "    def half(x):\n"                                                  # 7
        "        return x[0:16, :]\n"                                         # 8
        "    x = sA[0]\n"                                                     # 9
        "    h = half(sB)\n"                                                  # 10
        "    z = x\n"                                                         # 11
        "    A2 = ave.tag(A, lambda m, k: ave.label(row=m, k=k))\n"           # 12
        "    A3 = ave.tag(A, lambda m, k: ave.label(row=k, k=m))\n"           # 13
        "    if A.shape[1] > 64:\n"                                           # 14
        "        T = A2\n"                                                    # 15
        "    else:\n"                                                         # 16
        "        T = A3\n"                                                    # 17
        "    U = T\n"                                                         # 18
        "    s = sA[0]\n"                                                     # 19
        "    for kt in ave.range(0, A.shape[1] // BK):\n"                     # 20
        "        t = sA[1]\n"                                                 # 21
        "        s = t\n"                                                     # 22
        "    u = s\n")                                                        # 23
    idx = build_index(text, str(tmp_path / "k.py"), str(tmp_path))
    lines = text.splitlines()

    def hover(line, word):
        return idx.hover(line, lines[line].index(word))[0]

    assert "`(64, 32)`" in hover(11, "x")            # the kernel's x, not half's
    assert "`(32, 16)`" in hover(8, "x")             # inside half: its parameter
    assert "tag" not in hover(18, "T")               # merged: no arm's tag
    assert "row=k" in hover(17, "T")                 # the arm's own value
    assert "2048 +" not in hover(23, "s") and "2048 +" in hover(22, "s")


def test_watched_files_in_a_hidden_folder_above_the_workspace_count(tmp_path, monkeypatch):
    # only the folders below the workspace are skipped: a project under ~/.work/ had every
    # helper change ignored (a hidden directory anywhere in its absolute path)
    from ave_lsp.server.server import _skipped

    root = tmp_path / ".work" / "proj"
    assert not _skipped(str(root / "h.py"), str(root), frozenset({".venv"}))
    assert _skipped(str(root / ".venv" / "x.py"), str(root), frozenset({".venv"}))
    assert _skipped(str(root / ".git" / "x.py"), str(root), frozenset({".venv"}))
    assert not _skipped(str(tmp_path / ".other" / "x.py"), str(root), frozenset({".venv"}))
    assert _skipped(str(tmp_path / "node_modules" / "x.py"), str(root),
                    frozenset({"node_modules"}))


def test_hover_lists_every_copy_of_a_helper_called_twice(tmp_path):
    # A helper called twice (and a static_range loop) defines its names once per copy;
    # the hover showed one copy -- the first for an assignment target, the last for a
    # later use -- while the inlay hint said "(+1 more)". Now every distinct copy is
    # listed with the call it comes from. By hand: sA is (2, 64, 32) row-major, strides
    # (2048, 32, 1); top(sA[0], 16) takes rows 0..15 of stage 0 -> (16, 32) at offset 0,
    # top(sA[1], 32) rows 0..31 of stage 1 -> (32, 32) at element offset 2048.
    from ave_lsp.server.hover import build_index

    head = ("import ave_core.lang as ave\n\n\n@ave.kernel(threads=128)\n"
            "def kern(A: ave.Tensor[ave.bf16, 2], BM: ave.constexpr = 64, "
            "BK: ave.constexpr = 32):\n")
    text = head + (
        "    sA = ave.alloc((2, BM, BK), ave.bf16, space=\"shared\")\n"       # 5
        "    def top(x, r):\n"                                                # 6
        "        y = x[0:r, :]\n"                                             # 7
        "        return y\n"                                                  # 8
        "    a = top(sA[0], 16)\n"                                            # 9
        "    b = top(sA[1], 32)\n"                                            # 10
        "    for i in ave.static_range(2):\n"                                 # 11
        "        z = sA[i]\n"                                                 # 12
        "    c = top(sA[0], 16)\n")                                           # 13
    idx = build_index(text, str(tmp_path / "k.py"), str(tmp_path))
    lines = text.splitlines()

    def hover(line, word):
        return idx.hover(line, lines[line].index(word))[0]

    for line in (7, 8):                     # the target and its use: both copies
        h = hover(line, "y")
        assert "3 copies" in h and "2 different" in h
        first, second = h.split("---")[1:]
        assert "*copy 1 of 3, the call at line 10, copy 3 of 3, the call at line 14*" in first
        assert "`(16, 32)`" in first and "`(16,32):(32,1)`" in first
        assert "*copy 2 of 3, the call at line 11*" in second
        assert "`(32, 32)`" in second and "`2048 + (32,32):(32,1)`" in second
    h = hover(7, "x")                       # the parameter: each call's argument
    assert "copy 2 of 3, the value of line 11" in h and "`2048 + (64,32):(32,1)`" in h
    h = hover(12, "z")                      # a static_range loop: stage 0, then stage 1
    assert "*copy 1 of 2*" in h and "`(64,32):(32,1)`" in h and "`2048 + (64,32)" in h
    h = hover(9, "a")                       # one copy: the plain form
    assert "copies" not in h and "`(16, 32)`" in h
    # the inlay hint's tooltip is that hover
    hints = {p.line: (label, tip) for p, label, tip in idx.inlay_hints(0, 20)}
    assert hints[7][0].endswith("(+1 more)") and "2 different" in hints[7][1]


def test_exit_does_not_wait_for_a_running_check(monkeypatch):
    # A check running on the server's thread cannot be interrupted and Python joins pool
    # threads at exit: after `exit` the process lived on until a 75 s check ended (a
    # review helper). The pools count what runs on them; with something running, the
    # server shuts its workers down and ends the process at once, with its status.
    import threading
    from ave_lsp import server as server_pkg
    from ave_lsp.server.server import AveLanguageServer

    ls = AveLanguageServer()
    assert not ls.busy()
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(10)
        return 7

    fut = ls.check_pool().submit(slow)
    assert started.wait(10) and ls.busy()
    exits, shutdowns = [], []
    monkeypatch.setattr(server_pkg.os, "_exit", exits.append)
    monkeypatch.setattr(ls, "shutdown", lambda kill=False: shutdowns.append(kill))
    server_pkg._exit_if_busy(ls, 1)
    assert exits == [1] and shutdowns == [True]       # (the workers killed, not awaited)
    release.set()
    assert fut.result(10) == 7 and not ls.busy()
    exits.clear()
    server_pkg._exit_if_busy(ls, 0)             # idle: a normal return
    assert exits == []
    ls.check_pool().shutdown(wait=True)


def test_hover_copies_name_the_calls_where_they_part_and_are_capped(tmp_path):
    # outer() called at lines 13 and 14 calls inner() at line 11: both copies were named
    # "the call at line 11" (the innermost call); the calls where they part are 13 and
    # 14. A static_range of 2048 copies made a 346,000-character hover: at most
    # MAX_COPIES_SHOWN answers now, then a count (review helpers).
    from ave_lsp.server.hover import MAX_COPIES_SHOWN, build_index

    head = ("import ave_core.lang as ave\n\n\n@ave.kernel(threads=128)\n"
            "def kern(A: ave.Tensor[ave.bf16, 2], BM: ave.constexpr = 64, "
            "BK: ave.constexpr = 32):\n")
    text = head + (
        "    sA = ave.alloc((2, BM, BK), ave.bf16, space=\"shared\")\n"       # 5
        "    def inner(x, r):\n"                                              # 6
        "        y = x[0:r, :]\n"                                             # 7
        "        return y\n"                                                  # 8
        "    def outer(x, r):\n"                                              # 9
        "        w = inner(x, r)\n"                                           # 10
        "        return w\n"                                                  # 11
        "    a = outer(sA[0], 16)\n"                                          # 12
        "    b = outer(sA[1], 32)\n"                                          # 13
        "    sB = ave.alloc((2048, 16), ave.bf16, space=\"shared\")\n"        # 14
        "    for i in ave.static_range(2048):\n"                              # 15
        "        z = sB[i]\n")                                                # 16
    idx = build_index(text, str(tmp_path / "k.py"), str(tmp_path))
    lines = text.splitlines()
    h = idx.hover(7, lines[7].index("y"))[0]
    assert "*copy 1 of 2, the call at line 13*" in h and "*copy 2 of 2, the call at line 14*" in h
    h = idx.hover(16, lines[16].index("z"))[0]
    assert h.count("*copy ") == MAX_COPIES_SHOWN and len(h) < 5000
    # copies that part at two levels (outer() at 14 and 15 calls inner() at 11 and 12)
    # name both calls: "15 → 11"
    two = head + (
        "    def inner(r, n):\n"                                            # 5
        "        t = A[r, 0:n]\n"                                           # 6
        "        return t\n"                                                # 7
        "    def outer(r):\n"                                               # 8
        "        a = inner(r, 8)\n"                                         # 9
        "        b = inner(r, 16)\n"                                        # 10
        "        return a\n"                                                # 11
        "    outer(0)\n"                                                    # 12
        "    outer(1)\n")                                                   # 13
    idx2 = build_index(two, str(tmp_path / "k2.py"), str(tmp_path))
    h2 = idx2.hover(6, two.splitlines()[6].index("t"))[0]
    assert "copy 1 of 4, the calls at lines 13 → 10, copy 3 of 4, the calls at lines 14 → 10" \
        in h2
    assert "copy 2 of 4, the calls at lines 13 → 11" in h2
    assert f"… and {2048 - MAX_COPIES_SHOWN} more different answers" in h
