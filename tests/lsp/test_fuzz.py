"""Fuzzing the language server: ONE long-lived ``ave-lsp`` process over stdio, fed
thousands of documents and edits by hypothesis (derandomized: the same cases every run).

The client is a minimal synchronous JSON-RPC client written here (a reader thread, framed
messages), so hypothesis drives it from an ordinary function. Every case resets one open
document to a fresh text (a whole-document ``didChange``; some cases ``didClose`` +
``didOpen`` instead), applies random incremental edits (UTF-16 ranges, several changes per
notification), and may ``didSave``; then:

* after a save (or open) the server publishes diagnostics for exactly the final version
  within ``TIMEOUT`` s; every range lies inside the document (a column past the end of its
  line is allowed, as LSP clamps it, and counted); for texts small enough to check twice,
  the list equals what the server's own check function gives in this process for the text
  the *client* holds (so the server's copy of the buffer followed the incremental edits);
* inlay hints of the whole document are inside it;
* a hover request at a random position (also past the end of a line or of the file) is
  answered within ``TIMEOUT`` s, with a range inside the document;
* a code action request for a made-up Ave diagnostic on a random line answers with the
  edit :func:`ave_lsp.server.convert.suppress_edit` computes from the client's text (a
  cheap probe of the server's copy of the buffer, line by line).

At the end the server is still alive and exits cleanly on shutdown/exit. ``AVE900``
(internal error) diagnostics and hover failures logged by the server are recorded with
their input and printed; an ``AVE900`` fails the test unless the input is pathological
(nesting 100 deep or more).

Regression covered: pygls 2.1 split the buffer with ``str.splitlines`` when applying an
incremental change, so after an edit of a text holding a form feed (or another non-LSP
line end) the server's copy was wrong (found by this fuzz; fixed in the server, pinned by
``test_incremental_edit_after_form_feed``). Texts with such characters are generated on
purpose, and any divergence now fails the test.

Texts: arbitrary Unicode (with or without an Ave import), deep nesting (hundreds of
brackets, long operator chains, 150 nested blocks), the Ave code snippets of
``docs/codes/`` and the example kernels, with CRLF or CR line ends, a BOM, non-BMP
characters (emoji; mathematical letters that are NFKC-equal to ASCII names, so the program
is unchanged but its UTF-16 columns move) and random slice edits with such fragments. Most
texts do not import Ave or fail early in the front end; checks of whole example kernels run
with ``tripCountBound`` 1 and only a quarter of those cases are saved, which keeps the run
at about 1-1.5 minutes on two cores.

``AVE_FUZZ_EXAMPLES`` changes the number of cases (default 2000).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0                 # seconds for any one answer of the server
MAX_EXAMPLES = int(os.environ.get("AVE_FUZZ_EXAMPLES", "2000"))
ORACLE_MAX_CHARS = 4000        # texts up to this size are also checked in this process
SETTINGS = {"checkOnChange": False, "tripCountBound": 1, "solverTimeoutMs": 1000}
AVE_IMPORT = "import ave_core.lang as ave\n"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: Line ends of str.splitlines that are not LSP line ends (the server must not split there:
#: see test_incremental_edit_after_form_feed).
_SPLITLINES_ONLY = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


# ----------------------------------------------------------------------------- seeds

def _code_blocks(md: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", md, re.S)


SMALL_SEEDS: list[str] = sorted({b for p in sorted((ROOT / "docs" / "codes").glob("*.md"))
                                 for b in _code_blocks(p.read_text("utf-8"))
                                 if "ave_core" in b})
SMALL_SEEDS += [
    AVE_IMPORT,
    AVE_IMPORT + "\n@ave.kernel(threads=32)\ndef k(A: ave.Tensor[ave.f32, 1]):\n    pass\n",
    AVE_IMPORT + "\n@ave.kernel(threads=32)\ndef k(A: ave.Tensor[ave.f32, 1]):\n"
    "    x = ave.load(A[0:32])  # ave: ignore\n    ave.store(A[0:32], x)\n",
]
LARGE_SEEDS: list[str] = [p.read_text("utf-8") for p in sorted((ROOT / "examples").rglob("*.py"))]

EMOJI = ["😀", "🦆", "𝔸", "𐍈", "🇩🇪", "👩‍👩‍👧", "\U0010FFFF", "𝄞"]
FRAGMENTS = [
    "(", ")", "[", "]", "{", "}", ":", ",", "\n", "\r\n", "\r", "\t", "    ", "\\\n", "#",
    "'", '"', '"""', "\x00", "\x0c", "\u2028", "\ufeff", "\x85", "ave.", "import ave_core",
    "def ", "@ave.kernel(threads=128)\n", "lambda ", " for ", " if ", "await ", "yield ",
    "ave.static_range(", "ave.range(0, ", "ave.mma(", "ave.assert_conform(", "configs=[",
    "# ave: ignore[AVE201]", "= ", "* ", "** ", "// ", "-1", "0x", "1e309", "9" * 40,
    "ave.constexpr", "A.shape", "[::-1]", "...", "None", "True",
]
# mathematical bold letters: NFKC-equal to ASCII, so Python reads the same names
_BOLD = {c: chr(0x1D400 + i) for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZ")}
_BOLD.update({c: chr(0x1D41A + i) for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")})


def nfkc_spell(text: str, names: list[str]) -> str:
    """Spell the first letter of each of ``names`` in mathematical bold, as whole words."""
    for name in names:
        if name and name[0] in _BOLD:
            text = re.sub(rf"(?<![\w.]){re.escape(name)}\b", _BOLD[name[0]] + name[1:], text)
    return text


def utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def lsp_lines(text: str) -> list[str]:
    """The document's lines as LSP counts them (ends: \\r\\n, \\r, \\n)."""
    return _LINE_BREAK.split(text)


def line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def position(text: str, offset: int, starts: list[int] | None = None) -> dict:
    """The LSP position (UTF-16 column) of code point ``offset``."""
    import bisect

    starts = starts if starts is not None else line_starts(text)
    line = bisect.bisect_right(starts, offset) - 1
    return {"line": line, "character": utf16(text[starts[line]:offset])}


def _not_inside_crlf(text: str, offset: int) -> int:
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


# ----------------------------------------------------------------------------- the client

class ServerError(AssertionError):
    pass


class RpcServer:
    """``python -m ave_lsp`` over pipes, with a reader thread. Answers the server's own
    requests (``workspace/configuration`` with :data:`SETTINGS`, others with null)."""

    def __init__(self, cwd: Path, stderr_path: Path) -> None:
        self.stderr_file = open(stderr_path, "wb")
        self.stderr_path = stderr_path
        self.proc = subprocess.Popen([sys.executable, "-m", "ave_lsp"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file)
        self._write_lock = threading.Lock()
        self._cond = threading.Condition()
        self._next_id = 0
        self.responses: dict[int, dict] = {}
        self.publishes: list[dict] = []
        self.logs: list[dict] = []
        self.server_requests: list[str] = []
        self.eof = False
        self.reader = threading.Thread(target=self._read, name="rpc-reader", daemon=True)
        self.reader.start()

    # -- wire
    def _send(self, msg: dict) -> None:
        body = json.dumps(msg, ensure_ascii=False).encode("utf-8")
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:
                raise ServerError(f"the server is gone ({e}); exit code "
                                  f"{self.proc.poll()}\n{self.stderr_tail()}") from e

    def _read(self) -> None:
        f = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = f.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip())
                if length is None:
                    continue
                msg = json.loads(f.read(length).decode("utf-8"))
                self._dispatch(msg)
        finally:
            with self._cond:
                self.eof = True
                self._cond.notify_all()

    def _dispatch(self, msg: dict) -> None:
        method = msg.get("method")
        if method is not None and "id" in msg:            # a request of the server
            self.server_requests.append(method)
            result: Any = None
            if method == "workspace/configuration":
                result = [SETTINGS if item.get("section") == "ave" else None
                          for item in msg["params"]["items"]]
            try:
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            except ServerError:
                pass
            return
        with self._cond:
            if method == "textDocument/publishDiagnostics":
                self.publishes.append(msg["params"])
            elif method in ("window/logMessage", "window/showMessage"):
                self.logs.append(msg["params"])
            elif method is None and "id" in msg:
                self.responses[msg["id"]] = msg
            self._cond.notify_all()

    # -- API
    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        with self._cond:
            self._next_id += 1
            rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        msg = self.wait_for(lambda: self.responses.pop(rid, None), f"the answer to {method}",
                            timeout)
        if "error" in msg:
            raise ServerError(f"{method} failed: {msg['error']}")
        return msg.get("result")

    def wait_for(self, check: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = check()
                if found:
                    return found
                left = deadline - time.monotonic()
                if self.eof or left <= 0:
                    raise ServerError(
                        f"{'the server closed its output' if self.eof else 'timed out'} "
                        f"waiting for {what} (exit code {self.proc.poll()})\n"
                        f"{self.stderr_tail()}")
                self._cond.wait(min(left, 1.0))

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            self.stderr_file.flush()
            return "server stderr: " + self.stderr_path.read_text("utf-8", "replace")[-n:]
        except OSError:
            return ""

    def close(self) -> int | None:
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=30)
            self.stderr_file.close()


# ----------------------------------------------------------------------------- the session

@dataclass
class Finding:
    kind: str
    message: str
    text: str
    case: str


@dataclass
class Session:
    server: RpcServer
    workspace: Path
    uri: str
    path: str
    version: int = 1
    opened: bool = True
    cases: int = 0
    saves: int = 0
    oracle_checks: int = 0
    check_seconds: float = 0.0
    solver_timing_differences: int = 0
    codes: Counter = field(default_factory=Counter)      # diagnostics' codes seen
    kinds: Counter = field(default_factory=Counter)      # cases by kind
    kind_seconds: Counter = field(default_factory=Counter)
    past_line_end: list = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: the texts a check may have run on since the document was (last) opened: the server
    #: offers fixes for a text that equals its last checked one, whatever the version
    #: (edits undone); a case that leaves such a text unchecked may get them or not
    checked: set = field(default_factory=lambda: {"x = 1\n"})


def _capabilities() -> dict:
    return {
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {"configuration": True,
                      "didChangeConfiguration": {"dynamicRegistration": False}},
        "textDocument": {
            "synchronization": {"didSave": True},
            "publishDiagnostics": {"relatedInformation": True, "versionSupport": True,
                                   "codeDescriptionSupport": True, "dataSupport": True},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "codeAction": {"codeActionLiteralSupport": {
                "codeActionKind": {"valueSet": ["quickfix"]}}},
        },
    }


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Session:
    ws = tmp_path_factory.mktemp("fuzz_ws")
    server = RpcServer(ws, ws.parent / "fuzz_server_stderr.log")
    try:
        init = server.request("initialize", {
            "processId": os.getpid(), "rootUri": ws.as_uri(), "capabilities": _capabilities(),
            "workspaceFolders": [{"uri": ws.as_uri(), "name": "fuzz"}]})
        assert init["capabilities"].get("positionEncoding", "utf-16") == "utf-16"
        sync = init["capabilities"]["textDocumentSync"]
        assert (sync["change"] if isinstance(sync, dict) else sync) == 2   # incremental
        server.notify("initialized", {})
        doc = ws / "fuzz_doc.py"
        doc.write_text("x = 1\n", "utf-8")
        s = Session(server, ws, doc.as_uri(), str(doc))
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": s.uri, "languageId": "python", "version": 1, "text": "x = 1\n"}})
        server.wait_for(lambda: any(p["uri"] == s.uri for p in server.publishes),
                        "the first publish")
        yield s
    finally:
        alive = server.proc.poll() is None
        code = server.close() if alive else server.proc.returncode
        print(f"\nfuzz server: alive at the end: {alive}, exit code {code}")


# ----------------------------------------------------------------------------- checks

def _in_document(sess: Session, rng: dict, lines: list[str], what: str) -> None:
    """A range inside the document. A character past the end of its line is allowed (LSP:
    it "defaults back to the line length"), and counted."""
    s, e = rng["start"], rng["end"]
    assert (s["line"], s["character"]) <= (e["line"], e["character"]), (what, rng)
    for p in (s, e):
        assert 0 <= p["line"] < len(lines), (what, rng, len(lines))
        assert p["character"] >= 0, (what, rng)
        if p["character"] > utf16(lines[p["line"]]):
            sess.past_line_end.append((what, rng, lines[p["line"]]))


def _oracle(sess: Session, text: str) -> list[dict]:
    """What the server's check function says of ``text``, in this process."""
    from lsprotocol import converters

    from ave_lsp.server.server import _check_in_worker
    from ave_lsp.server.settings import Settings

    settings, _ = Settings.from_json(SETTINGS)
    outcome = _check_in_worker(sess.uri, sess.path, text, str(sess.workspace), settings)
    return converters.get_converter().unstructure(outcome.items)


def _drop_solver_timeouts(items: list[dict]) -> list[dict]:
    """The diagnostics without AVE205s that ran out of the solver's budget (timing)."""
    return [d for d in items if not (d["code"] == "AVE205" and re.search(
        r"timeout|canceled|budget", d["message"]))]


def _strip(d: dict) -> dict:
    """A diagnostic without the witness notes (their wording may mention timings)."""
    return {k: v for k, v in d.items() if k != "data"}


def run_case(sess: Session, *, name: str, text: str, edits: list[list[tuple[int, int, str]]],
             save: bool, reopen: bool, hover_at: float, action_line: float,
             pathological: bool) -> None:
    srv = sess.server
    sess.cases += 1
    kind = name.split("-")[0]
    sess.kinds[kind] += 1
    started = time.monotonic()
    # 1. the starting text
    sess.version += 1
    if reopen or not sess.opened:
        if sess.opened:
            srv.notify("textDocument/didClose", {"textDocument": {"uri": sess.uri}})
            sess.checked = set()
        srv.notify("textDocument/didOpen", {"textDocument": {
            "uri": sess.uri, "languageId": "python", "version": sess.version, "text": text}})
        sess.checked.add(text)
        sess.opened = True
        opened_version = sess.version
    else:
        srv.notify("textDocument/didChange", {
            "textDocument": {"uri": sess.uri, "version": sess.version},
            "contentChanges": [{"text": text}]})
        opened_version = None
    # 2. incremental edits: each notification carries one or more changes, applied in order
    for group in edits:
        changes = []
        for start_frac, length, new in group:
            start = _not_inside_crlf(text, int(start_frac * len(text) / 1000))
            end = _not_inside_crlf(text, min(len(text), start + length))
            starts = line_starts(text)
            changes.append({"range": {"start": position(text, start, starts),
                                      "end": position(text, end, starts)},
                            "text": new})
            text = text[:start] + new + text[end:]
        sess.version += 1
        srv.notify("textDocument/didChange", {
            "textDocument": {"uri": sess.uri, "version": sess.version},
            "contentChanges": changes})
    lines = lsp_lines(text)
    note(f"case {sess.cases} {name}: version {sess.version}, {len(text)} chars, "
         f"{len(lines)} lines, save={save}")
    # 3. a check: on save (or the open, when nothing followed it)
    want = sess.version if save else (opened_version if opened_version == sess.version
                                      else None)
    if save:
        srv.notify("textDocument/didSave", {"textDocument": {"uri": sess.uri}})
        sess.saves += 1
        sess.checked.add(text)
    if want is not None:
        t0 = time.monotonic()
        pub = srv.wait_for(lambda: next((p for p in reversed(srv.publishes)
                                         if p["uri"] == sess.uri
                                         and p.get("version") == want), None),
                           f"diagnostics of version {want} ({name})")
        sess.check_seconds += time.monotonic() - t0
        items = pub["diagnostics"]
        sess.codes.update(d["code"] for d in items)
        if not items:
            sess.codes["(none)"] += 1
        for d in items:
            assert d.get("source") == "ave" and str(d.get("code", "")).startswith("AVE"), d
            assert d["message"] and "\n" not in d["message"], d
            if d["code"] == "AVE900":
                sess.findings.append(Finding(d["code"], d["message"], text, name))
                if not pathological:
                    pytest.fail(f"internal error on a {name} text: {d['message']}\n"
                                f"notes: {d.get('data')}\ntext: {text!r}")
        for d in items:
            _in_document(sess, d["range"], lines, d["code"])
            for r in d.get("relatedInformation") or []:
                if r["location"]["uri"] == sess.uri:
                    _in_document(sess, r["location"]["range"], lines,
                                 "related of " + d["code"])
        # (not for deep nesting: whether it ends in AVE121 "nested too deeply" depends on
        # the stack depth the check starts at, and hypothesis raises the recursion limit
        # while it runs the test)
        if len(text) <= ORACLE_MAX_CHARS and not pathological:
            sess.oracle_checks += 1
            got = [_strip(d) for d in items]
            exp = [_strip(d) for d in _oracle(sess, text)]
            if got != exp and _drop_solver_timeouts(got) == _drop_solver_timeouts(exp):
                sess.solver_timing_differences += 1      # a loaded machine's z3 budget
            else:
                assert got == exp, (
                    f"the server's diagnostics differ from a check of the client's text "
                    f"(its copy of the buffer diverged?)\nserver: {got}\nlocal: {exp}\n"
                    f"text: {text!r}")
    # 4. hover somewhere (also past the end of a line or of the file)
    n = len(text)
    off = min(n, int(hover_at * (n + 1)))
    pos = position(text, off)
    if hover_at > 0.97:
        pos = {"line": pos["line"] + int(hover_at * 1000) % 3,
               "character": pos["character"] + int(hover_at * 10000) % 5}
    logs_before = len(srv.logs)
    h = srv.request("textDocument/hover", {"textDocument": {"uri": sess.uri},
                                           "position": pos})
    if h is not None:
        assert h["contents"]["kind"] == "markdown" and h["contents"]["value"], h
        if h.get("range"):
            _in_document(sess, h["range"], lines, "hover")
    # 4b. inlay hints of the whole document (the same index as hover): inside it
    hints = srv.request("textDocument/inlayHint", {
        "textDocument": {"uri": sess.uri},
        "range": {"start": {"line": 0, "character": 0},
                  "end": {"line": len(lines), "character": 0}}})
    for hint in hints or []:
        p = hint["position"]
        _in_document(sess, {"start": p, "end": p}, lines, "inlay hint")
        assert hint["label"].startswith(": ") and "\n" not in hint["label"], hint
    for m in srv.logs[logs_before:]:
        if m.get("type") == 1 and ("hover failed" in m.get("message", "")
                                   or "inlay hints failed" in m.get("message", "")):
            sess.findings.append(Finding("hover", m["message"], text, name))
    # 5. the suppression quick fix for a made-up diagnostic: the server's copy of the line
    from ave_lsp.server import convert

    line = min(len(lines) - 1, int(action_line * len(lines)))
    diag = {"range": {"start": {"line": line, "character": 0},
                      "end": {"line": line, "character": 0}},
            "message": "fuzz", "severity": 1, "code": "AVE201", "source": "ave"}
    actions = srv.request("textDocument/codeAction", {
        "textDocument": {"uri": sess.uri},
        "range": diag["range"], "context": {"diagnostics": [diag]}})
    # (fixes only for a text as checked: with no check of this version -- no save, or an
    # edit after the open -- the server offers none, test_server's
    # test_no_fix_for_diagnostics_of_an_older_text)
    expected_edit = convert.suppress_edit(text, line, "AVE201") if want is not None else None
    expected = [] if expected_edit is None else [{
        "range": {"start": {"line": expected_edit.range.start.line,
                            "character": expected_edit.range.start.character},
                  "end": {"line": expected_edit.range.end.line,
                          "character": expected_edit.range.end.character}},
        "newText": expected_edit.new_text}]
    got = []
    for a in actions or []:
        edit = a["edit"]
        got += edit["changes"][sess.uri] if "changes" in edit else \
            [e for dc in edit["documentChanges"] for e in dc["edits"]]
    if want is None and text in sess.checked and expected_edit is None:
        # (this text, unchecked in this version, equals one checked before -- the same
        # text drawn twice in a row, edits that change nothing: the server may offer the
        # fix of that check; found flaky on a 'large-cr' case drawn twice)
        alt = convert.suppress_edit(text, line, "AVE201")
        if alt is not None and got:
            expected = [{"range": {"start": {"line": alt.range.start.line,
                                             "character": alt.range.start.character},
                                   "end": {"line": alt.range.end.line,
                                           "character": alt.range.end.character}},
                         "newText": alt.new_text}]
    assert got == expected, (f"the server's line {line} differs from the client's "
                             f"{lines[line]!r} (its copy of the buffer diverged?)",
                             got, expected, text)
    assert srv.proc.poll() is None, f"the server died\n{srv.stderr_tail()}"
    sess.kind_seconds[kind] += time.monotonic() - started


# ----------------------------------------------------------------------------- strategies

any_text = st.text(max_size=300)
insert_text = st.one_of(st.text(max_size=12), st.sampled_from(FRAGMENTS),
                        st.sampled_from(EMOJI),
                        st.lists(st.sampled_from(FRAGMENTS + EMOJI), max_size=6).map("".join))


def edit_groups(max_groups: int) -> st.SearchStrategy:
    one = st.tuples(st.integers(0, 1000), st.integers(0, 60), insert_text)
    return st.lists(st.lists(one, min_size=1, max_size=3), max_size=max_groups)


def _nest(kind: str, depth: int) -> str:
    if kind == "parens":
        return "(" * depth + "1" + ")" * depth
    if kind == "lists":
        return "[" * depth + "]" * depth
    if kind == "dicts":
        return "{'a': " * depth + "1" + "}" * depth
    if kind == "calls":
        return "ave.cdiv(" * depth + "1" + ", 2)" * depth
    if kind == "unary":
        return "-" * depth + "1"
    if kind == "sum":
        return " + ".join(["1"] * depth)
    if kind == "attr":
        return "A" + ".shape" * depth
    if kind == "lambda":
        return "lambda: " * depth + "1"
    if kind == "ifexp":
        return "1 if True else " * depth + "0"
    if kind == "subscript":
        return "A" + "[0]" * depth
    raise ValueError(kind)


NEST_KINDS = ["parens", "lists", "dicts", "calls", "unary", "sum", "attr", "lambda", "ifexp",
              "subscript"]


@st.composite
def cases(draw) -> dict:
    kind = draw(st.sampled_from(["text", "text", "ave_text", "nest", "small", "small",
                                 "small", "large"]))
    pathological = False
    save = True
    if kind in ("text", "ave_text"):
        text = draw(any_text)
        if kind == "ave_text":
            text = AVE_IMPORT + text
        edits = draw(edit_groups(2))
    elif kind == "nest":
        nk = draw(st.sampled_from(NEST_KINDS))
        depth = draw(st.sampled_from([1, 10, 50, 99, 100, 101, 199, 200, 201, 500, 1000,
                                      3000]))
        expr = _nest(nk, depth)
        where = draw(st.sampled_from(["module", "kernel", "config", "indent"]))
        if where == "module":
            text = AVE_IMPORT + f"X = {expr}\n"
        elif where == "kernel":
            text = (AVE_IMPORT + "\n@ave.kernel(threads=32)\ndef k(A: ave.Tensor[ave.f32, 1]):\n"
                    f"    x = {expr}\n    ave.store(A[0:32], ave.load(A[0:32]))\n")
        elif where == "config":
            text = (AVE_IMPORT + f"\n@ave.kernel(threads=32, configs=[dict(N={expr})])\n"
                    "def k(A: ave.Tensor[ave.f32, 1], N: ave.constexpr = 32):\n"
                    "    ave.store(A[0:32], ave.load(A[0:32]))\n")
        else:                               # nested blocks: Python allows 100 levels
            levels = min(depth, 150)
            body = "".join(" " * (4 * (i + 1)) + "if True:\n" for i in range(levels))
            text = (AVE_IMPORT + "\n@ave.kernel(threads=32)\ndef k(A: ave.Tensor[ave.f32, 1]):\n"
                    + body + " " * (4 * (levels + 1)) + "pass\n")
        pathological = depth >= 100
        edits = draw(edit_groups(1))
        name = f"nest-{nk}-{depth}-{where}"
    else:
        seeds = SMALL_SEEDS if kind == "small" else LARGE_SEEDS
        text = draw(st.sampled_from(seeds))
        transform = draw(st.sampled_from(["none", "none", "crlf", "cr", "emoji_comments",
                                          "nfkc_names", "bom"]))
        if transform == "crlf":
            text = text.replace("\n", "\r\n")
        elif transform == "cr":
            text = text.replace("\n", "\r")
        elif transform == "emoji_comments":
            e = draw(st.sampled_from(EMOJI))
            text = re.sub(r"(#[^\n]*)", lambda m: m.group(1) + " " + e * 2, text)
            text = text.replace('"""\n', f'"""  # {e}\n', 1)
        elif transform == "nfkc_names":
            text = nfkc_spell(text, ["A", "B", "C", "a", "b", "acc", "sA", "sB", "tiled"])
        elif transform == "bom":
            text = "\ufeff" + text
        edits = draw(edit_groups(4 if kind == "small" else 3))
        if kind == "large":
            save = draw(st.integers(0, 3)) == 0
        name = f"{kind}-{transform}"
    if kind in ("text", "ave_text"):
        name = kind
    return dict(name=name, text=text, edits=edits, save=save,
                reopen=draw(st.integers(0, 9)) == 0 and len(text) < 2000,
                hover_at=draw(st.floats(0, 1)), action_line=draw(st.floats(0, 0.999)),
                pathological=pathological)


# ----------------------------------------------------------------------------- the test

def test_fuzz_server(session: Session):
    t0 = time.monotonic()

    @settings(derandomize=True, max_examples=MAX_EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(case=cases())
    def one(case: dict) -> None:
        run_case(session, **case)

    try:
        one()
    finally:
        s = session
        elapsed = time.monotonic() - t0
        print(f"\nfuzz: {s.cases} cases in {elapsed:.1f} s ({s.saves} saves, "
              f"{s.oracle_checks} compared with a local check, {s.check_seconds:.1f} s "
              f"waiting for diagnostics); findings: {len(s.findings)}; "
              f"ranges past the end of a line: {len(s.past_line_end)}; solver-budget "
              f"differences from the local check: {s.solver_timing_differences}")
        print("  cases (seconds) by kind: " + ", ".join(
            f"{k} {n} ({s.kind_seconds[k]:.1f} s)" for k, n in sorted(s.kinds.items())))
        print("  codes published: " + ", ".join(f"{c} {n}" for c, n in sorted(s.codes.items())))
        for what, rng, ln in s.past_line_end[:3]:
            print(f"  past the end of line: {what} {rng} line {ln!r}")
        for f in s.findings:
            print(f"  {f.kind} [{f.case}] {f.message[:300]}\n    input: {f.text[:500]!r}")
    assert session.server.proc.poll() is None, \
        f"the server died\n{session.server.stderr_tail()}"
    assert session.cases >= MAX_EXAMPLES


# ----------------------------------------------------------------------------- regressions

def test_incremental_edit_after_form_feed(tmp_path: Path):
    """A valid Ave file with a form feed on a line of its own (an Emacs page break); the
    editor changes ``return 1`` to ``return 2`` (an incremental edit, as Neovim and VS Code
    send) and saves: the file is still valid, so there is nothing to report. The server
    applies the edit one line too high (``def f():2``) and reports a syntax error."""
    server = RpcServer(tmp_path, tmp_path / "stderr.log")
    try:
        server.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                      "capabilities": _capabilities()})
        server.notify("initialized", {})
        uri = (tmp_path / "ff.py").as_uri()
        text = AVE_IMPORT + "\x0c\ndef f():\n    return 1\n"
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        first = server.wait_for(lambda: next((p for p in server.publishes
                                              if p["version"] == 1), None), "version 1")
        assert first["diagnostics"] == []
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 3, "character": 11},
                                          "end": {"line": 3, "character": 12}},
                                "text": "2"}]})
        server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        second = server.wait_for(lambda: next((p for p in server.publishes
                                               if p["version"] == 2), None), "version 2")
        assert second["diagnostics"] == [], second["diagnostics"]
    finally:
        server.close()


# ----------------------------------------------------------------------------- UTF-16 columns

def test_utf16_columns_with_non_bmp_text(tmp_path: Path):
    """The swizzle-mismatch example with emoji before the assertion on its line and
    NFKC-equal mathematical letters (two UTF-16 units each) for its names, in CRLF: the
    AVE201 findings keep their lines and start at the UTF-16 column of the construct."""
    broken = (ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py").read_text("utf-8")
    text = nfkc_spell(broken, ["A", "B", "C", "a", "b", "acc", "sA", "sB", "tiled"])
    text = text.replace("ave.assert_conform(", "'😀🦆'; ave.assert_conform(")
    text = text.replace("\n", "\r\n")
    lines = lsp_lines(text)
    server = RpcServer(tmp_path, tmp_path / "stderr.log")
    try:
        server.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                      "capabilities": _capabilities()})
        server.notify("initialized", {})
        uri = (tmp_path / "wide.py").as_uri()
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        pub = server.wait_for(lambda: next((p for p in server.publishes
                                            if p["version"] == 1), None), "version 1")
    finally:
        server.close()
    found = {}
    for d in pub["diagnostics"]:
        if d["code"] == "AVE201":
            found[d["range"]["start"]["line"]] = d["range"]
    assert sorted(found) == [143, 144], pub["diagnostics"]
    for line, construct in ((143, "ave.assert_conform"), (144, "ave.mma")):
        src = lines[line]
        rng = found[line]
        assert rng["start"]["character"] == utf16(src[:src.index(construct)]), (rng, src)
        assert rng["end"]["line"] == line and \
            rng["end"]["character"] == utf16(src.rstrip()), (rng, src)


# ----------------------------------------------------------------------------- every request answered

def test_malformed_requests_and_requests_after_shutdown_are_answered(tmp_path: Path):
    """JSON-RPC answers every request: params that do not fit the method get InvalidParams
    (-32602), a request after ``shutdown`` InvalidRequest (-32600). pygls dropped both
    silently (a client waits forever; found by a review helper)."""
    server = RpcServer(tmp_path, tmp_path / "stderr.log")

    def raw(rid: int, method: str, params: Any) -> dict:
        server._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return server.wait_for(lambda: server.responses.pop(rid, None), method)
    try:
        server.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                      "capabilities": _capabilities()})
        server.notify("initialized", {})
        uri = (tmp_path / "k.py").as_uri()
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": AVE_IMPORT}})
        bad = [("textDocument/hover", {"textDocument": {"uri": uri}}),
               ("textDocument/hover", None),
               ("textDocument/hover", {"textDocument": {"uri": uri},
                                       "position": {"line": -1, "character": 0}}),
               ("textDocument/codeAction", None)]
        for i, (method, params) in enumerate(bad):
            r = raw(100 + i, method, params)
            assert r.get("error", {}).get("code") == -32602, (method, params, r)
        ok = raw(200, "textDocument/hover", {"textDocument": {"uri": uri},
                                             "position": {"line": 0, "character": 0}})
        assert "error" not in ok
        assert "result" in raw(201, "shutdown", None)
        for rid, method, params in ((202, "textDocument/hover", {
                "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
                (203, "shutdown", None)):
            r = raw(rid, method, params)
            assert r.get("error", {}).get("code") == -32600, (method, r)
        server.notify("exit", None)
        assert server.proc.wait(timeout=30) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=30)
        server.stderr_file.close()


def test_requests_before_initialize_get_server_not_initialized(tmp_path: Path):
    """LSP: before ``initialize`` a request is answered with ServerNotInitialized
    (-32002) and a notification (other than ``exit``) is dropped. pygls answered a hover
    with a null result and ran a didOpen against no workspace (a closing-note item)."""
    server = RpcServer(tmp_path, tmp_path / "stderr.log")
    uri = (tmp_path / "k.py").as_uri()

    def raw(rid: int, method: str, params: Any) -> dict:
        server._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return server.wait_for(lambda: server.responses.pop(rid, None), method)
    try:
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": AVE_IMPORT}})
        for rid, method, params in ((101, "textDocument/hover", {
                "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
                (102, "shutdown", None)):
            r = raw(rid, method, params)
            assert r.get("error", {}).get("code") == -32002, (method, r)
            assert "result" not in r, r
        init = server.request("initialize", {"processId": os.getpid(),
                                             "rootUri": tmp_path.as_uri(),
                                             "capabilities": _capabilities()})
        assert init["capabilities"]["hoverProvider"], init
        server.notify("initialized", {})
        ok = raw(103, "textDocument/hover", {"textDocument": {"uri": uri},
                                             "position": {"line": 0, "character": 0}})
        assert "error" not in ok, ok
        # the didOpen before initialize was dropped: a document opened after initialize
        # is published (checks run one at a time, in order), the dropped one never
        other = (tmp_path / "other.py").as_uri()
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": other, "languageId": "python", "version": 1, "text": AVE_IMPORT}})
        server.wait_for(lambda: any(p["uri"] == other for p in server.publishes), "other")
        assert not [p for p in server.publishes if p.get("uri") == uri], server.publishes
        assert "result" in raw(104, "shutdown", None)
        server.notify("exit", None)
        assert server.proc.wait(timeout=30) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=30)
        server.stderr_file.close()
