"""The language server end to end (pytest-lsp): saving a helper file re-checks the open
kernels built from it, and a slow check shows work-done progress."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_server import (  # noqa: E402 - the helpers of the main server test
    capabilities, did_open, did_save, make_client, new_doc, wait_publish,
)

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

ROOT = Path(__file__).resolve().parents[2]
# The server with work-done progress from the start of every check: whether a check takes
# longer than PROGRESS_AFTER_S (0.3 s) depends on the machine and on how fast checking has
# become (a GEMM check is now close to it), so the test does not rely on it.
SERVER = [sys.executable, "-c", "import ave_lsp.server.server as s; s.PROGRESS_AFTER_S = 0.0; "
          "from ave_lsp.cli import main; raise SystemExit(main([]))"]

HELPERS = """\
import ave_core.lang as ave


def issue(src, dst):
    ave.copy(src, dst)
    ave.barrier()
"""

BAD_HELPERS = """\
import ave_core.lang as ave


def issue(src, dst):
    v = ave.view(src, (64, 64), ave.f32)
    ave.copy(src, dst)
    ave.barrier()
"""

KERNEL = """\
import ave_core.lang as ave
from helpers import issue


@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2]):
    s = ave.alloc((64, 32), ave.bf16)
    issue(A[0:64, 0:32], s)
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient, workspace: Path):
    caps = capabilities(pull=False)
    caps.window = types.WindowClientCapabilities(work_done_progress=True)
    lsp_client.set_configuration({"checkOnChange": False}, section="ave")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")]))
    yield
    await lsp_client.shutdown_session()


async def test_saving_a_helper_rechecks_its_users(client: LanguageClient, workspace: Path):
    huri, htext = new_doc(workspace, "helpers.py", HELPERS)
    kuri, ktext = new_doc(workspace, "kernel.py", KERNEL)
    did_open(client, huri, htext)
    did_open(client, kuri, ktext)
    first = await wait_publish(client, kuri)
    assert list(first.diagnostics) == []
    since = len(client.publishes)
    # the helper gets an error (an editor saves its buffer to disk, then says so)
    (workspace / "helpers.py").write_text(BAD_HELPERS, "utf-8")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=huri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=BAD_HELPERS)]))
    did_save(client, huri)
    again = await wait_publish(client, kuri, since=since)
    assert again.diagnostics, "the helper's new error must reach kernel.py"
    d = again.diagnostics[0]
    assert d.severity == types.DiagnosticSeverity.Error and d.source == "ave"
    assert d.range.start.line == 7                 # the call site in kernel.py
    assert d.related_information and \
        d.related_information[0].location.uri == huri
    # a kernel that does not use helpers.py is not re-checked by its save
    assert again.version == 1


async def test_creating_a_missing_helper_rechecks_its_users(client: LanguageClient,
                                                            workspace: Path):
    """A kernel that imports a module not written yet has AVE113; saving the new module
    (which the kernel's last check could not list among its files) re-checks it (its stale
    AVE113 stayed until the kernel itself was saved; a review helper)."""
    kuri, ktext = new_doc(workspace, "kernel_later.py",
                          KERNEL.replace("from helpers import", "from helpers_later import"))
    did_open(client, kuri, ktext)
    first = await wait_publish(client, kuri)
    assert [d.code for d in first.diagnostics] == ["AVE113"]
    since = len(client.publishes)
    huri, htext = new_doc(workspace, "helpers_later.py", HELPERS)
    did_open(client, huri, htext)
    did_save(client, huri)
    again = await wait_publish(client, kuri, since=since)
    assert list(again.diagnostics) == [] and again.version == 1


async def test_saving_a_helper_refreshes_hover(client: LanguageClient, workspace: Path):
    """Hover facts of a kernel built from a helper follow the helper's save (the index was
    kept by the kernel document's version: it still said bf16 after the helper made the
    tile f32; a review helper)."""
    helper = ("import ave_core.lang as ave\n\n\ndef make(BM, BK):\n"
              "    t = ave.alloc((BM, BK), ave.bf16, space=\"shared\")\n    return t\n")
    huri, htext = new_doc(workspace, "maker.py", helper)
    kuri, ktext = new_doc(workspace, "uses_maker.py", (
        "import ave_core.lang as ave\nfrom maker import make\n\n\n"
        "@ave.kernel(threads=128)\ndef k(A: ave.Tensor[ave.bf16, 2]):\n"
        "    t = make(64, 32)\n    sub = t[0:16, :]\n"))
    did_open(client, huri, htext)
    did_open(client, kuri, ktext)
    await wait_publish(client, kuri)

    async def hover() -> str:
        h = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=kuri),
            position=types.Position(line=7, character=5)))
        return h.contents.value
    assert "`bf16`" in await hover()
    since = len(client.publishes)
    f32 = helper.replace("ave.bf16", "ave.f32")
    (workspace / "maker.py").write_text(f32, "utf-8")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=huri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=f32)]))
    did_save(client, huri)
    await wait_publish(client, kuri, since=since)
    assert "`f32`" in await hover()


async def test_slow_check_shows_progress(client: LanguageClient, workspace: Path):
    """A check running past PROGRESS_AFTER_S (here 0: every check) shows progress: the
    server creates a token, then sends begin, (reports,) end, all before the diagnostics
    (one ordered stream)."""
    uri, text = new_doc(workspace, "gemm.py", ROOT / "examples" / "gemm.py")
    before = set(client.progress_reports)
    did_open(client, uri, text)
    await wait_publish(client, uri)
    new = [t for t in client.progress_reports if t not in before]
    assert new, "no window/workDoneProgress/create"
    values = client.progress_reports[new[-1]]
    assert isinstance(values[0], types.WorkDoneProgressBegin)
    assert isinstance(values[-1], types.WorkDoneProgressEnd)
    assert all(isinstance(v, types.WorkDoneProgressReport) for v in values[1:-1])
    assert "gemm.py" in values[0].message
