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
