"""The language server end to end (pytest-lsp): a save while the check of the same
version is running (``checkOnChange``: the check started after a pause in typing) does
not start a second check of that version. The server's checker is wrapped to record each
check it starts (in checks.log beside the file) and to take a second, so that the save lands mid-check."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_server import (  # noqa: E402 - the helpers of the main server test
    TIMEOUT, barrier, did_change, did_close, did_open, did_save, make_client, new_doc, start,
    wait_publish,
)

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

SLOW = """\
import os, time
import ave_lsp.server.server as s
real = s._check_in_worker
def counting(uri, path, text, root, settings, *rest):
    if "SLOW" in text:
        with open(os.path.join(os.path.dirname(path), "checks.log"), "a") as f:
            f.write(f"{len(text)}\\n")
        time.sleep(1.0)
    return real(uri, path, text, root, settings, *rest)
s._check_in_worker = counting
from ave_lsp.server import serve_stdio
raise SystemExit(serve_stdio())
"""

KERNEL = """\
import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2]):
    sA = ave.alloc((64, 64), ave.bf16)  # SLOW
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-c", SLOW], client_factory=make_client))
async def client(lsp_client: LanguageClient, workspace: Path):
    await start(lsp_client, workspace, pull=False)
    yield
    await lsp_client.shutdown_session()


async def wait_file_lines(path: Path, n: int) -> list[str]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while loop.time() < deadline:
        lines = path.read_text().split() if path.exists() else []
        if len(lines) >= n:
            return lines
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {n} checks recorded in {path}")


async def test_save_during_the_check_of_the_same_version(client: LanguageClient,
                                                         workspace: Path):
    log = workspace / "checks.log"
    on = {"checkOnChange": True, "tripCountBound": None, "solverTimeoutMs": 2000}
    client.set_configuration(on, section="ave")    # should the server still ask
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"ave": on}))
    uri, text = new_doc(workspace, "k.py", KERNEL)
    did_open(client, uri, text)
    await wait_publish(client, uri, lambda p: p.version == 1)
    assert len(log.read_text().split()) == 1
    edited = text + "# typed\n"
    did_change(client, uri, edited, 2)             # checked after 300 ms of quiet
    lines = await wait_file_lines(log, 2)          # that check is running (1 s) ...
    did_save(client, uri)                          # ... when the editor saves
    pub = await wait_publish(client, uri, lambda p: p.version == 2)
    assert [d.code for d in pub.diagnostics] == []
    await barrier(client, workspace, "saves_barrier.py")
    lines = log.read_text().split()
    assert lines == [str(len(text)), str(len(edited))], lines   # v2 checked once
    # a save of a version whose check is done checks it again (the disk may differ)
    did_save(client, uri)
    await wait_publish(client, uri, lambda p: p.version == 2,
                       since=client.publishes.index(pub) + 1)
    assert log.read_text().split() == [str(len(text)), str(len(edited)), str(len(edited))]
    did_close(client, uri)
