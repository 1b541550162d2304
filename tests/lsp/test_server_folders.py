"""The language server end to end (pytest-lsp) in a multi-root workspace: each folder's own
editor settings apply to its files (the server asked once, without a scope, and a
folder's values never reached it; a review helper)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_formats import _CALLER as _FORMATS_CALLER  # noqa: E402
from test_server import capabilities, did_open, make_client, wait_publish  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

KERNEL = """\
import ave_core.lang as ave


@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2]):
    s = ave.alloc((64, 32), ave.bf16)
    ave.copy(A[0:64, 0:32], s)
"""


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("multi")
    a, b = root / "a", root / "b"
    a.mkdir()
    b.mkdir()
    return a, b


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "ave_lsp"], client_factory=make_client))
async def client(lsp_client: LanguageClient, folders):
    a, b = folders
    lsp_client.set_configuration({"checkOnChange": False}, section="ave")
    # folder b holds its own value (VS Code: b/.vscode/settings.json)
    lsp_client.set_configuration({"maxFileLines": 3}, section="ave", scope_uri=b.as_uri())
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(pull=False), root_uri=a.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=a.as_uri(), name="a"),
                           types.WorkspaceFolder(uri=b.as_uri(), name="b")]))
    yield
    await lsp_client.shutdown_session()


async def test_each_folder_has_its_own_settings(client: LanguageClient, folders):
    a, b = folders
    (a / "k.py").write_text(KERNEL, "utf-8")
    (b / "k.py").write_text(KERNEL, "utf-8")
    for f in (a / "k.py", b / "k.py"):
        did_open(client, f.as_uri(), f.read_text("utf-8"))
    pa = await wait_publish(client, (a / "k.py").as_uri())
    pb = await wait_publish(client, (b / "k.py").as_uri())
    assert [d.code for d in pb.diagnostics] == ["AVE902"]     # b's maxFileLines = 3
    assert "AVE902" not in [d.code for d in pa.diagnostics]


_HELPER = """import ave_core.lang as ave


def stage(A, s, BM, BK, tiled):
    ave.copy(A[0:BM, 0:BK], s, vector_bytes=16){SYNC}
    a = ave.ldmatrix(s, tiled.a)
    return a
"""
_CALLER = _FORMATS_CALLER.replace("{K}", "")


def _codes(p: types.PublishDiagnosticsParams) -> list[str]:
    return [d.code for d in p.diagnostics]


async def test_a_helper_changed_on_disk_rechecks_its_kernels(client: LanguageClient, folders):
    # A helper rewritten outside the editor (git checkout, a pull) and reported with
    # workspace/didChangeWatchedFiles: the kernel kept its old findings (the server had
    # no handler; a review helper).
    a, _ = folders
    h, k = a / "h3.py", a / "k3.py"
    h.write_text(_HELPER.replace("{SYNC}", "\n    ave.barrier()"), "utf-8")
    k.write_text(_CALLER, "utf-8")
    did_open(client, k.as_uri(), _CALLER)
    p = await wait_publish(client, k.as_uri())
    assert "AVE207" not in _codes(p)
    since = len(client.publishes)
    h.write_text(_HELPER.replace("{SYNC}", ""), "utf-8")        # the barrier removed
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=h.as_uri(), type=types.FileChangeType.Changed)]))
    p = await wait_publish(client, k.as_uri(), since=since)
    assert "AVE207" in _codes(p)


async def test_pyproject_changes_recheck_open_documents(client: LanguageClient, folders):
    # [tool.ave] changed on disk (watched files) or saved in the editor: the open kernels
    # kept the old settings' findings until saved themselves (a review helper)
    a, _ = folders
    d = a / "p"
    d.mkdir()
    k, cfg = d / "k.py", d / "pyproject.toml"
    k.write_text(KERNEL, "utf-8")
    did_open(client, k.as_uri(), KERNEL)
    p = await wait_publish(client, k.as_uri())
    assert "AVE902" not in _codes(p)
    since = len(client.publishes)
    cfg.write_text("[tool.ave]\nmaxFileLines = 3\n", "utf-8")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=cfg.as_uri(), type=types.FileChangeType.Created)]))
    p = await wait_publish(client, k.as_uri(), since=since)
    assert _codes(p) == ["AVE902"]
    # the quick fix "suppress" is not offered for it (it did not suppress: the setting
    # is AVE902's switch; a review helper)
    acts = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=k.as_uri()),
        range=p.diagnostics[0].range,
        context=types.CodeActionContext(diagnostics=p.diagnostics)))
    assert not [x for x in acts or [] if "Suppress" in x.title]
    # saved in the editor
    since = len(client.publishes)
    text = "[tool.ave]\nmaxFileLines = 500\n"
    cfg.write_text(text, "utf-8")
    did_open(client, cfg.as_uri(), text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=cfg.as_uri())))
    p = await wait_publish(client, k.as_uri(), since=since)
    assert "AVE902" not in _codes(p)


async def test_a_folder_added_later_has_its_own_settings(client: LanguageClient, folders):
    # workspace/didChangeWorkspaceFolders: the new folder's scoped settings were never
    # asked for, its files had the unscoped ones (a review helper)
    a, _ = folders
    c = a.parent / "c"
    c.mkdir()
    client.set_configuration({"maxFileLines": 3}, section="ave", scope_uri=c.as_uri())
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(uri=c.as_uri(), name="c")], removed=[])))
    k = c / "k.py"
    k.write_text(KERNEL, "utf-8")
    since = len(client.publishes)
    did_open(client, k.as_uri(), KERNEL)
    p = await wait_publish(client, k.as_uri(), lambda p: _codes(p) == ["AVE902"],
                           since=since)
    assert _codes(p) == ["AVE902"]


async def test_a_configuration_problem_is_logged_again_after_the_file_changes(
        client: LanguageClient, folders):
    # a problem in [tool.ave] is logged once while it lasts; fixed and then made again it
    # is news: it was logged once per server life (a closing-note item)
    a, _ = folders
    d = a / "w"
    d.mkdir()
    k, cfg = d / "k.py", d / "pyproject.toml"
    bad = "[tool.ave]\ntripCountBound = \"many\"\n"
    cfg.write_text(bad, "utf-8")
    k.write_text(KERNEL, "utf-8")

    def warned() -> int:
        return sum(1 for m in client.log_messages
                   if "tripCountBound must be an integer" in m.message and str(cfg) in
                   m.message)
    assert warned() == 0
    since = len(client.publishes)
    did_open(client, k.as_uri(), KERNEL)
    await wait_publish(client, k.as_uri(), since=since)
    assert warned() == 1
    for text, expect in (("[tool.ave]\ntripCountBound = 3\n", 1), (bad, 2)):
        since = len(client.publishes)
        cfg.write_text(text, "utf-8")
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=cfg.as_uri(), type=types.FileChangeType.Changed)]))
        await wait_publish(client, k.as_uri(), since=since)
        assert warned() == expect, [m.message for m in client.log_messages]
    # the same problem, another check of the same file: not logged again
    since = len(client.publishes)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=k.as_uri())))
    await wait_publish(client, k.as_uri(), since=since)
    assert warned() == 2
