"""The language server end to end: a real LSP client (pytest-lsp) talking to ``ave-lsp``
over stdio.

Two servers run for the module: one for a client that takes pushed diagnostics
(``textDocument/publishDiagnostics``), one for a client that pulls them
(``textDocument/diagnostic``); a third, short-lived one has its checker replaced by one
that raises, to see an internal error become a diagnostic. Every test opens its own
document (a copy of an example in a temporary workspace), so the tests do not depend on
one another. Nothing sleeps to synchronize: the tests wait for notifications (with a
generous timeout; one check of a GEMM example takes about a second), and use the fact
that the server checks one document at a time, in order, as a barrier where they must
show that something did *not* happen.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any, Callable

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from ave_core import __version__

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py"
FIXED = ROOT / "examples" / "gemm.py"
TIMEOUT = 60.0  # seconds to wait for one notification or response

MANIFEST = next(c for c in tomllib.loads(
    (ROOT / "examples" / "broken" / "manifest.toml").read_text("utf-8"))["case"]
    if c["file"] == BROKEN.name)

PLAIN = "import os\n\n\ndef f(x):\n    return os.path.join(x, 'y')\n"


# ----------------------------------------------------------------------------- the client

def make_client() -> LanguageClient:
    """pytest-lsp's client, also recording every publishDiagnostics in order (with its
    version) and waking up whoever waits for one."""
    client = LanguageClient(converter_factory=default_converter)
    client.publishes = []       # type: ignore[attr-defined]
    client.config_requests = 0  # type: ignore[attr-defined]
    client.waiters = []         # type: ignore[attr-defined]

    def wake(ls: LanguageClient) -> None:
        for fut in ls.waiters:
            if not fut.done():
                fut.set_result(None)
        ls.waiters.clear()

    def on_publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.publishes.append(params)
        wake(ls)

    def on_configuration(ls: LanguageClient, params: types.ConfigurationParams) -> list:
        # answered before anything the test sends afterwards (one ordered stream)
        ls.config_requests += 1
        wake(ls)
        return [ls.get_configuration(section=item.section, scope_uri=item.scope_uri)
                for item in params.items]

    default_log = DEFAULT_CLIENT_FEATURES[types.WINDOW_LOG_MESSAGE]

    def on_log(ls: LanguageClient, params: types.LogMessageParams) -> None:
        default_log(ls, params)
        wake(ls)

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish
    features[types.WORKSPACE_CONFIGURATION] = on_configuration
    features[types.WINDOW_LOG_MESSAGE] = on_log
    register_lsp_features(client, features)
    return client


async def wait_until(client: LanguageClient, check: Callable[[], Any], what: str) -> Any:
    """Wait (no polling: woken by the client's handlers) until ``check()`` is truthy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while True:
        found = check()
        if found:
            return found
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"timed out after {TIMEOUT} s waiting for {what}")
        fut = loop.create_future()
        client.waiters.append(fut)
        try:
            await asyncio.wait_for(fut, left)
        except asyncio.TimeoutError:
            pass


async def wait_publish(client: LanguageClient, uri: str,
                       pred: Callable[[types.PublishDiagnosticsParams], bool] = lambda p: True,
                       since: int = 0) -> types.PublishDiagnosticsParams:
    """The first publish for ``uri`` at index >= ``since`` satisfying ``pred``."""
    def check():
        return next((p for p in client.publishes[since:] if p.uri == uri and pred(p)), None)

    return await wait_until(client, check, f"publishDiagnostics for {uri}; got "
                            f"{[(p.uri, p.version) for p in client.publishes]}")


async def set_check_on_change(client: LanguageClient, value: bool) -> None:
    """Change the setting the way an editor does: a didChangeConfiguration without
    values, then the server asks for them."""
    client.set_configuration(value, section="ave.checkOnChange")
    before = client.config_requests
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=None))
    await wait_until(client, lambda: client.config_requests > before,
                     "the server to ask for its settings")


def capabilities(pull: bool) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(
            # UTF-8 first: the server must still answer in UTF-16 (and say so)
            position_encodings=[types.PositionEncodingKind.Utf8,
                                types.PositionEncodingKind.Utf16]),
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(
                dynamic_registration=False),
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
            if pull else None,
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True,
                code_description_support=True, data_support=True),
            diagnostic=types.DiagnosticClientCapabilities(related_document_support=False)
            if pull else None,
            inlay_hint=types.InlayHintClientCapabilities(),
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(
                        value_set=[types.CodeActionKind.QuickFix]))),
        ),
    )


async def start(client: LanguageClient, workspace: Path, pull: bool) -> None:
    client.set_configuration({"checkOnChange": False, "tripCountBound": None,
                              "solverTimeoutMs": 2000}, section="ave")
    client.init_result = await client.initialize_session(types.InitializeParams(
        capabilities=capabilities(pull),
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
    ))


SERVER = [sys.executable, "-m", "ave_lsp"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient, workspace: Path):
    await start(lsp_client, workspace, pull=False)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=SERVER, client_factory=make_client))
async def pull_client(lsp_client: LanguageClient, workspace: Path):
    await start(lsp_client, workspace, pull=True)
    yield
    await lsp_client.shutdown_session()


# ----------------------------------------------------------------------------- helpers

def new_doc(workspace: Path, name: str, source: Path | str) -> tuple[str, str]:
    """A file in the workspace (a copy of ``source``); its URI and text."""
    path = workspace / name
    if isinstance(source, Path):
        shutil.copyfile(source, path)
    else:
        path.write_text(source, "utf-8")
    return path.as_uri(), path.read_text("utf-8")


def did_open(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python",
                                             version=version, text=text)))


def did_change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def did_save(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


def did_close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def barrier(client: LanguageClient, workspace: Path, name: str) -> None:
    """Wait until every check queued so far has finished: checks run one at a time in
    order, so once a file opened now has its diagnostics, earlier checks are done."""
    uri, text = new_doc(workspace, name, PLAIN)
    did_open(client, uri, text)
    await wait_publish(client, uri, lambda p: p.version == 1)
    did_close(client, uri)


def versions(client: LanguageClient, uri: str) -> list[int | None]:
    return [p.version for p in client.publishes if p.uri == uri]


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply single-line edits (UTF-16 columns equal code points here: ASCII files)."""
    lines = text.split("\n")
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        assert e.range.start.line == e.range.end.line
        ln = lines[e.range.start.line]
        lines[e.range.start.line] = (ln[:e.range.start.character] + e.new_text
                                     + ln[e.range.end.character:])
    return "\n".join(lines)


def assert_broken_diagnostics(items: list[types.Diagnostic], uri: str) -> None:
    """The AVE201 findings of gemm_swizzle_mismatch.py, as the manifest says."""
    ave201 = sorted((d for d in items if d.code == MANIFEST["code"]),
                    key=lambda d: (d.range.start.line, d.range.start.character))
    assert ave201, [d.code for d in items]
    allowed = {MANIFEST["code"], *MANIFEST.get("may_also", [])}
    assert {d.code for d in items} <= allowed
    lines = {d.range.start.line + 1 for d in ave201}
    assert lines == {MANIFEST["line"], *MANIFEST.get("also_lines", [])}
    first = ave201[0]
    assert first.range.start.line + 1 == MANIFEST["line"]
    src_line = BROKEN.read_text("utf-8").splitlines()[MANIFEST["line"] - 1]
    assert first.range.start.character == src_line.index("ave.assert_conform")
    assert first.severity == types.DiagnosticSeverity.Error
    assert first.source == "ave"
    assert "\n" not in first.message and "assert_conform violated" in first.message
    href = first.code_description.href
    assert href.startswith("file://") and href.endswith("docs/codes/AVE201.md")
    assert Path(href[len("file://"):]).is_file()
    # related information: every step of the witness, in this file
    rel = first.related_information
    assert rel and all(r.location.uri == uri for r in rel)
    assert any("tag introduced" in r.message for r in rel)
    # the witness in data
    w = first.data["witness"]
    mw = MANIFEST["witness"]
    assert w["block"] == mw["block"]
    assert w["threads"][0]["thread"] == mw["thread"]
    assert w["loop_indices"] == mw["loop"]
    assert isinstance(first.data["notes"], list) and first.data["notes"]


# ----------------------------------------------------------------------------- push tests

async def test_server_info(client: LanguageClient):
    info = client.init_result.server_info
    assert info.name == "ave-lsp" and info.version == __version__
    caps = client.init_result.capabilities
    assert caps.position_encoding == types.PositionEncodingKind.Utf16
    assert caps.hover_provider and caps.code_action_provider and caps.diagnostic_provider
    assert caps.inlay_hint_provider


async def test_broken_then_fixed(client: LanguageClient, workspace: Path):
    uri, text = new_doc(workspace, "broken_then_fixed.py", BROKEN)
    did_open(client, uri, text)
    pub = await wait_publish(client, uri)
    assert pub.version == 1
    assert_broken_diagnostics(list(pub.diagnostics), uri)

    did_change(client, uri, FIXED.read_text("utf-8"), 2)
    did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == 2)
    assert list(pub.diagnostics) == []
    assert versions(client, uri) == [1, 2]
    did_close(client, uri)


@pytest.mark.parametrize("name", ["my kernels/broken.py", "núcleos/😀 broken.py"])
async def test_percent_encoded_uri(client: LanguageClient, workspace: Path, name: str):
    # A path with a space or non-ASCII characters arrives percent-encoded
    # (file:///.../my%20kernels/broken.py, what VS Code sends; on Windows every file:
    # file:///c%3A/...). pygls keys open documents by the unquoted URI, the server looked
    # them up by the raw one: such files got no diagnostics, hover or fixes at all (a
    # review helper). Publishes carry the URI as the client sent it.
    (workspace / name).parent.mkdir(exist_ok=True)
    uri, text = new_doc(workspace, name, BROKEN)
    assert "%" in uri
    did_open(client, uri, text)
    pub = await wait_publish(client, uri)
    assert pub.version == 1
    assert_broken_diagnostics(list(pub.diagnostics), uri)
    line = next(i for i, ln in enumerate(text.splitlines()) if "sA = ave.alloc" in ln)
    hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=text.splitlines()[line].index("sA")))),
        TIMEOUT)
    assert hover is not None and "shared tile" in hover.contents.value
    did_change(client, uri, FIXED.read_text("utf-8"), 2)
    did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == 2)
    assert list(pub.diagnostics) == []
    did_close(client, uri)


async def test_burst_publishes_only_latest(client: LanguageClient, workspace: Path):
    uri, broken = new_doc(workspace, "burst.py", BROKEN)
    fixed = FIXED.read_text("utf-8")
    did_open(client, uri, broken)
    last = 12
    for v in range(2, last + 1):       # ends on the broken text: a non-empty last list
        did_change(client, uri, broken if v % 2 == 0 else fixed, v)
        did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == last)
    assert_broken_diagnostics(list(pub.diagnostics), uri)
    await barrier(client, workspace, "burst_barrier.py")
    vs = versions(client, uri)
    assert vs[-1] == last, vs
    assert vs == sorted(vs), f"an older version was published after a newer one: {vs}"
    assert all(v is not None for v in vs)
    # superseded checks were dropped: far fewer publishes than saves
    assert len(vs) < last, vs
    did_close(client, uri)


async def test_check_on_change_debounced(client: LanguageClient, workspace: Path):
    uri, broken = new_doc(workspace, "on_change.py", BROKEN)
    fixed = FIXED.read_text("utf-8")
    await set_check_on_change(client, True)
    try:
        did_open(client, uri, fixed)
        await wait_publish(client, uri, lambda p: p.version == 1)
        start = len(client.publishes)
        for v in range(2, 8):          # typing, no save
            did_change(client, uri, broken if v % 2 == 1 else fixed, v)
        pub = await wait_publish(client, uri, lambda p: p.version == 7, since=start)
        assert_broken_diagnostics(list(pub.diagnostics), uri)
        await barrier(client, workspace, "on_change_barrier.py")
        vs = versions(client, uri)
        assert vs == sorted(vs) and vs[-1] == 7, vs
    finally:
        await set_check_on_change(client, False)
        did_close(client, uri)
    # with checkOnChange off again, an edit alone publishes nothing (the barrier's
    # own publish comes, this document's does not)
    uri2, text2 = new_doc(workspace, "on_change_off.py", PLAIN)
    did_open(client, uri2, text2)
    await wait_publish(client, uri2, lambda p: p.version == 1)
    did_change(client, uri2, PLAIN + "\n", 2)
    await barrier(client, workspace, "on_change_off_barrier.py")
    assert versions(client, uri2) == [1]
    did_close(client, uri2)


async def test_serial_and_parallel_checks_publish_the_same(client: LanguageClient,
                                                          workspace: Path):
    """``jobs = 2`` (two worker processes analyze the two specializations) and
    ``jobs = 1`` (the server's own thread, one after the other) publish the same list."""
    uri, text = new_doc(workspace, "jobs.py", BROKEN)
    published = []
    for version, jobs in ((1, 2), (2, 1), (3, 2)):
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"ave": {"checkOnChange": False, "jobs": jobs}}))
        if version == 1:
            did_open(client, uri, text)
        else:
            did_change(client, uri, text, version)
            did_save(client, uri)
        pub = await wait_publish(client, uri, lambda p, v=version: p.version == v)
        published.append(pub.diagnostics)
    assert_broken_diagnostics(list(published[0]), uri)
    assert published[0] == published[1] == published[2]
    assert any(n.startswith("also in the specialization")
               for d in published[0] for n in d.data["notes"])
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"ave": {"checkOnChange": False}}))
    did_close(client, uri)


async def test_pushed_settings_are_validated(client: LanguageClient):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"ave": {"checkOnChange": False, "tripCountBound": "many"}}))
    msg = await wait_until(client, lambda: next(
        (m for m in client.log_messages if "tripCountBound" in m.message), None),
        "a log message about the bad setting")
    assert msg.type == types.MessageType.Warning


async def test_suppress_code_action(client: LanguageClient, workspace: Path):
    uri, text = new_doc(workspace, "suppress.py", BROKEN)
    did_open(client, uri, text)
    pub = await wait_publish(client, uri, lambda p: p.version == 1)
    target = next(d for d in pub.diagnostics if d.code == "AVE201"
                  and d.range.start.line + 1 == MANIFEST["line"])
    actions = await asyncio.wait_for(client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=target.range,
            context=types.CodeActionContext(diagnostics=[target]))), TIMEOUT)
    assert actions, actions
    action = actions[0]
    assert action.kind == types.CodeActionKind.QuickFix and "AVE201" in action.title
    edits = action.edit.changes[uri]
    new_text = apply_edits(text, edits)
    line = new_text.split("\n")[MANIFEST["line"] - 1]
    assert line.endswith("  # ave: ignore[AVE201]")
    assert line.startswith(text.split("\n")[MANIFEST["line"] - 1])

    did_change(client, uri, new_text, 2)
    did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == 2)
    assert pub.diagnostics, "the other findings stay"
    assert all(d.range.start.line + 1 != MANIFEST["line"] for d in pub.diagnostics)
    did_close(client, uri)


BAD_VIEW = """\
import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2]):
    sA = ave.alloc((64, 64), ave.bf16)                # 64 * 64 * 2 = 8192 bytes
    sF = ave.view(sA, (64, 64), dtype=ave.f32)        # 64 * 64 * 4 = 16384 bytes
"""


async def test_view_bytes_code_action(client: LanguageClient, workspace: Path):
    uri, text = new_doc(workspace, "bad_view.py", BAD_VIEW)
    did_open(client, uri, text)
    pub = await wait_publish(client, uri, lambda p: p.version == 1)
    (target,) = [d for d in pub.diagnostics if d.code == "AVE106"]
    assert target.range.start.line == 6
    actions = await asyncio.wait_for(client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=target.range,
            context=types.CodeActionContext(diagnostics=[target]))), TIMEOUT)
    fix = actions[0]                               # the fix first, then "suppress"
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    assert "8192 bytes" in fix.title and "(64, 32)" in fix.title
    assert any("Suppress AVE106" in a.title for a in actions[1:])
    new_text = apply_edits(text, fix.edit.changes[uri])
    # f32 is 4 bytes: 8192 / 4 / 64 = 32 columns; nothing else changes
    assert new_text == text.replace("(64, 64), dtype=ave.f32", "(64, 32), dtype=ave.f32")

    did_change(client, uri, new_text, 2)
    did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == 2)
    assert list(pub.diagnostics) == []
    did_close(client, uri)


async def test_insert_barrier_code_action(client: LanguageClient, workspace: Path):
    """The contract the analysis emits (ave_lsp/server/fixes.py), sent by the client as
    a diagnostic's data: the server offers the edit inserting the barrier."""
    uri, text = new_doc(workspace, "barrier.py", FIXED)
    did_open(client, uri, text)
    lines = text.split("\n")
    line = next(i for i, ln in enumerate(lines) if ln.strip() == "ave.barrier()" or
                ln.lstrip().startswith("ave.barrier()  "))
    without = "\n".join(lines[:line] + lines[line + 1:])
    did_change(client, uri, without, 2)
    did_save(client, uri)
    # (fixes are offered for diagnostics of the text as checked: test_no_fix_for_...)
    await wait_publish(client, uri, lambda p: p.version == 2)
    indent = lines[line][:len(lines[line]) - len(lines[line].lstrip())]
    diag = types.Diagnostic(
        range=types.Range(types.Position(line, len(indent)), types.Position(line, 40)),
        message="race on sA", code="AVE201", source="ave",
        data={"witness": None, "notes": [],
              "fix": {"kind": "insert_barrier", "line": line, "indent": indent}})
    actions = await asyncio.wait_for(client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]))), TIMEOUT)
    fix = actions[0]
    assert fix.title.startswith(f"Insert ave.barrier() before line {line + 1}")
    (edit,) = fix.edit.changes[uri]
    assert edit.range.start == edit.range.end == types.Position(line, 0)
    assert edit.new_text == indent + "ave.barrier()\n"
    did_close(client, uri)


#: a copy read while in flight (shared with test_fixes.py)
IN_FLIGHT = (Path(__file__).parent / "data" / "in_flight.py").read_text("utf-8")


async def test_insert_wait_code_action_end_to_end(client: LanguageClient, workspace: Path):
    """The analysis's wait fix through the real server: s[0] is read while its copy is in
    flight (AVE207, with the AVE203 and the landing race of the same bug); the quick fix
    inserts ave.wait_async(1) and a barrier before the read, and the saved text publishes
    no finding at all."""
    uri, text = new_doc(workspace, "in_flight.py", IN_FLIGHT)
    did_open(client, uri, text)
    pub = await wait_publish(client, uri, lambda p: p.version == 1 and len(p.diagnostics) > 0)
    (target,) = [d for d in pub.diagnostics
                 if d.code == "AVE207" and "still in flight" in d.message]
    assert target.range.start.line == 10 and target.data["fix"]["kind"] == "insert_wait"
    actions = await asyncio.wait_for(client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=target.range,
            context=types.CodeActionContext(diagnostics=[target]))), TIMEOUT)
    fix = actions[0]
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    assert fix.title.startswith("Insert ave.wait_async(1) and ave.barrier() before line 11")
    new_text = apply_edits(text, fix.edit.changes[uri])
    assert "    ave.wait_async(1)\n    ave.barrier()\n    ave.copy(s[0]" in new_text
    did_change(client, uri, new_text, 2)
    did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == 2)
    assert list(pub.diagnostics) == []
    did_close(client, uri)


async def test_no_fix_for_diagnostics_of_an_older_text(client: LanguageClient,
                                                       workspace: Path):
    """An edit not saved yet (checkOnChange off) leaves the client showing the diagnostics
    of the previous version: their fixes would insert the wait before line 11 of the new
    text, another statement, and the suppression comment too (a review helper). No fix
    then; after the save, the fixes of the new text, at the moved line."""
    uri, text = new_doc(workspace, "stale_fix.py", IN_FLIGHT)
    did_open(client, uri, text)
    pub = await wait_publish(client, uri, lambda p: p.version == 1 and len(p.diagnostics) > 0)
    (old,) = [d for d in pub.diagnostics if d.code == "AVE207" and "still in flight" in d.message]
    lines = text.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
    moved = "\n".join(lines[:at + 1] + ["    x = 1", "    y = 2"] + lines[at + 1:])
    did_change(client, uri, moved, 2)

    async def actions_for(d):
        return await asyncio.wait_for(client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=d.range,
                context=types.CodeActionContext(diagnostics=[d]))), TIMEOUT)
    assert not await actions_for(old)
    # undone (the checked text again, version 3): the fixes are right again (none were
    # offered: the versions differ; a review helper)
    did_change(client, uri, text, 3)
    acts = await actions_for(old)
    assert acts and acts[0].title.startswith(
        f"Insert ave.wait_async(1) and ave.barrier() before line {old.range.start.line + 1}")
    did_change(client, uri, moved, 4)
    assert not await actions_for(old)
    did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == 4)
    (new,) = [d for d in pub.diagnostics if d.code == "AVE207" and "still in flight" in d.message]
    assert new.range.start.line == old.range.start.line + 2
    acts = await actions_for(new)
    assert acts and acts[0].title.startswith(
        f"Insert ave.wait_async(1) and ave.barrier() before line {new.range.start.line + 1}")
    did_close(client, uri)


async def _inlay(client: LanguageClient, uri: str, first: int, last: int):
    return await asyncio.wait_for(client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(first, 0), types.Position(last, 0)))), TIMEOUT)


async def test_inlay_hints(client: LanguageClient, workspace: Path):
    uri, text = new_doc(workspace, "inlay.py", FIXED)
    did_open(client, uri, text)
    lines = text.split("\n")
    line = next(i for i, ln in enumerate(lines) if ln.startswith("    sA = ave.alloc("))
    hints = await _inlay(client, uri, 0, len(lines))
    by_line = {h.position.line: h for h in hints}
    h = by_line[line]
    assert h.position.character == len("    sA")      # just after the name
    assert h.kind == types.InlayHintKind.Type
    # By hand, for the defaults (configs[0]: STAGES=3, BM=128, BK=32): a row-major
    # (3, 128, 32) tile has strides (128 * 32, 32, 1); row_swizzle(32) is Swizzle<2,3,3>.
    # configs[1] (STAGES=4, BM=64) gives another layout: "+1 more".
    assert h.label == ": bf16 (3, 128, 32) shared · Sw<2,3,3> o 0 o (3,128,32):(4096,32,1) (+1 more)"
    assert "(4,64,32):(2048,32,1)" in h.tooltip.value      # the hover lists both
    # a scalar gets none; the tagged tensor gets its dtype and rank
    assert not any(lines[i].startswith("    m0 = ") for i in by_line)
    tag_line = next(i for i, ln in enumerate(lines) if ln.startswith("    A = ave.tag("))
    assert by_line[tag_line].label == ": bf16 tensor rank 2, global"
    # only the requested range
    assert [x.position.line for x in await _inlay(client, uri, line, line + 1)] == [line]
    # configurable: off, then on again (pushed settings apply before the next request)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"ave": {"checkOnChange": False, "solverTimeoutMs": 2000,
                          "inlayHints": False}}))
    assert list(await _inlay(client, uri, 0, len(lines))) == []
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"ave": {"checkOnChange": False, "solverTimeoutMs": 2000}}))
    assert len(await _inlay(client, uri, 0, len(lines))) == len(hints)
    did_close(client, uri)


async def test_file_without_ave_gets_empty_list(client: LanguageClient, workspace: Path):
    uri, text = new_doc(workspace, "plain.py", PLAIN)
    did_open(client, uri, text)
    pub = await wait_publish(client, uri)
    assert pub.version == 1 and list(pub.diagnostics) == []
    did_close(client, uri)
    # nor does a document that is not Python, whatever it mentions
    uri, text = new_doc(workspace, "notes.md", "# ave_core notes\n\n`import ave_core`\n")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                             text=text)))
    pub = await wait_publish(client, uri)
    assert pub.version == 1 and list(pub.diagnostics) == []
    did_close(client, uri)
    # a kernel in a document of another language (Cython) gets no hover and no hints
    # either (it got hints; a review helper)
    uri, text = new_doc(workspace, "kernel.pyx", FIXED)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="cython", version=1,
                                             text=text)))
    pub = await wait_publish(client, uri)
    assert list(pub.diagnostics) == []
    assert not await _inlay(client, uri, 0, len(text.splitlines()))
    assert await _hover(client, uri, _pos(text, "    sA = ave.alloc", 4)) is None
    did_close(client, uri)


def _pos(text: str, needle: str, offset: int = 0) -> types.Position:
    i = text.index(needle) + offset
    line = text.count("\n", 0, i)
    return types.Position(line, i - (text.rfind("\n", 0, i) + 1))


async def _hover(client: LanguageClient, uri: str, pos: types.Position) -> str | None:
    h = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos)), TIMEOUT)
    return None if h is None else h.contents.value


async def test_hover(client: LanguageClient, workspace: Path):
    uri, text = new_doc(workspace, "hover.py", FIXED)
    did_open(client, uri, text)
    # a shared tile: dtype, shape, memory space, layout (the swizzle)
    md = await _hover(client, uri, _pos(text, "    sA = ave.alloc", 4))
    assert md is not None
    assert "**sA**" in md and "`bf16`" in md and "(3, 128, 32)" in md
    assert "shared" in md and "Sw<2,3,3>" in md
    # a tagged tensor: the tag fields
    md = await _hover(client, uri, _pos(text, "    A = ave.tag(A", 4))
    assert md is not None and "tensor" in md and "global" in md
    assert "`row`" in md and "`k`" in md and "ave.label(row=m, k=k)" in md
    # the kernel parameter itself is not tagged
    md = await _hover(client, uri, _pos(text, "A: ave.Tensor"))
    assert md is not None and "tensor" in md and "tag" not in md
    # a fragment: its TV layout
    md = await _hover(client, uri, _pos(text, "    acc = ave.", 4))
    assert md is not None and "fragment" in md and "`f32`" in md and "TV(" in md
    # a variable's name in a comment, and a DSL function name: nothing
    assert await _hover(client, uri, _pos(text, "of A carries", 3)) is None
    assert await _hover(client, uri, _pos(text, "ave.alloc", 4)) is None
    did_close(client, uri)


# ----------------------------------------------------------------------------- pull tests

async def test_pull_diagnostics(pull_client: LanguageClient, workspace: Path):
    client = pull_client
    uri, text = new_doc(workspace, "pull.py", BROKEN)
    did_open(client, uri, text)
    ident = types.TextDocumentIdentifier(uri=uri)
    report = await asyncio.wait_for(client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=ident)), TIMEOUT)
    assert report.kind == "full"
    assert_broken_diagnostics(list(report.items), uri)
    again = await asyncio.wait_for(client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=ident,
                                       previous_result_id=report.result_id)), TIMEOUT)
    assert again.kind == "unchanged" and again.result_id == report.result_id

    did_change(client, uri, FIXED.read_text("utf-8"), 2)
    did_save(client, uri)
    fixed = await asyncio.wait_for(client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=ident,
                                       previous_result_id=report.result_id)), TIMEOUT)
    assert fixed.kind == "full" and list(fixed.items) == []

    plain_uri, plain = new_doc(workspace, "pull_plain.py", PLAIN)
    did_open(client, plain_uri, plain)
    empty = await asyncio.wait_for(client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=plain_uri))), TIMEOUT)
    assert empty.kind == "full" and list(empty.items) == []
    # never both models for one client
    assert client.publishes == []
    did_close(client, uri)
    did_close(client, plain_uri)
    # a document that is not open (closed, or saved but never opened): an empty report at
    # once (the pull used to wait, spinning, for a check that could never run)
    never = (workspace / "never_opened.py").as_uri()
    did_save(client, never)
    for u in (uri, never):
        gone = await asyncio.wait_for(client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=u))),
            TIMEOUT)
        assert gone.kind == "full" and list(gone.items) == []


# ----------------------------------------------------------------------------- internal error

BOOM = ("import ave_lsp.server.server as s\n"
        "def boom(*a, **k):\n"
        "    raise ZeroDivisionError('checker exploded')\n"
        "s._check_in_worker = boom\n"
        "from ave_lsp.server import serve_stdio\n"
        "raise SystemExit(serve_stdio())\n")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-c", BOOM], client_factory=make_client))
async def boom_client(lsp_client: LanguageClient, workspace: Path):
    await start(lsp_client, workspace, pull=False)
    yield
    await lsp_client.shutdown_session()


async def test_internal_error_is_a_diagnostic(boom_client: LanguageClient, workspace: Path):
    client = boom_client
    uri, text = new_doc(workspace, "boom.py", BROKEN)
    did_open(client, uri, text)
    pub = await wait_publish(client, uri)
    assert [d.code for d in pub.diagnostics] == ["AVE900"]
    d = pub.diagnostics[0]
    assert "ZeroDivisionError" in d.message and "checker exploded" in d.message
    assert any(m.type == types.MessageType.Error and "checker exploded" in m.message
               for m in client.log_messages)
    # and the server still serves
    did_change(client, uri, text + "\n", 2)
    did_save(client, uri)
    pub = await wait_publish(client, uri, lambda p: p.version == 2)
    assert [d.code for d in pub.diagnostics] == ["AVE900"]
    did_close(client, uri)
