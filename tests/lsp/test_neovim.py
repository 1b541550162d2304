"""End to end with a real editor: headless Neovim 0.7 (Debian's ``neovim``) as the LSP
client of ``ave-lsp``, configured by ``editors/neovim/ave.lua`` -- the snippet users copy,
loaded unchanged.

``nvim --headless --clean -n -u tests/lsp/nvim/diagnostics.lua FILE`` opens a copy of
``examples/broken/gemm_swizzle_mismatch.py``, waits (``vim.wait``, 60 s deadline) until the
buffer has diagnostics, writes them as JSON and quits. The server is this Python's
``-m ave_lsp`` (the installed package). Skipped when ``nvim`` is not on PATH (``.ci/run``
installs it with apt where it can).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "editors" / "neovim" / "ave.lua"
INIT = Path(__file__).resolve().parent / "nvim" / "diagnostics.lua"
BROKEN = ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py"
MANIFEST = next(c for c in tomllib.loads(
    (ROOT / "examples" / "broken" / "manifest.toml").read_text("utf-8"))["case"]
    if c["file"] == BROKEN.name)

WAIT_MS = 60_000           # Neovim's deadline for the first diagnostics
PROCESS_TIMEOUT_S = 150    # the whole nvim run (start-up, server start, check, exit)


def _nvim() -> tuple[str, str]:
    """The nvim executable and its version line; skips without one, or with one older
    than 0.7 (the snippet needs nvim_create_autocmd)."""
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not on PATH (Debian: apt-get install -y neovim; .ci/run "
                    "installs it where apt is available)")
    first = (subprocess.run([nvim, "--version"], capture_output=True, text=True,
                            timeout=30).stdout.splitlines() or [""])[0]
    m = re.search(r"v(\d+)\.(\d+)", first)
    if m is None or (int(m.group(1)), int(m.group(2))) < (0, 7):
        pytest.skip(f"editors/neovim/ave.lua needs Neovim 0.7 or newer, found {first!r}")
    return nvim, first


def _gone(pid: int, within_s: float) -> bool:
    """Whether process ``pid`` has exited (or is a zombie) within ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                return True
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def _lsp_log(home: Path) -> str:
    logs = sorted(home.rglob("lsp.log"))
    return "\n".join(p.read_text("utf-8", "replace")[-6000:] for p in logs) or "(no lsp.log)"


def test_neovim_shows_ave_diagnostics(tmp_path: Path):
    nvim, version = _nvim()
    work = tmp_path / "project"
    work.mkdir()
    doc = work / BROKEN.name
    shutil.copyfile(BROKEN, doc)
    out = tmp_path / "diagnostics.json"
    home = tmp_path / "nvim-home"          # Neovim's state, cache (lsp.log) and data
    env = dict(os.environ,
               AVE_NVIM_SNIPPET=str(SNIPPET), AVE_NVIM_PYTHON=sys.executable,
               AVE_NVIM_OUT=str(out), AVE_NVIM_TIMEOUT_MS=str(WAIT_MS),
               XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               XDG_STATE_HOME=str(home / "state"), XDG_DATA_HOME=str(home / "data"))
    env.pop("VIMINIT", None)
    env.pop("NVIM_LISTEN_ADDRESS", None)
    start = time.monotonic()
    try:
        proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-u", str(INIT), str(doc)],
                              cwd=work, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"nvim did not exit within {PROCESS_TIMEOUT_S} s; stderr: {e.stderr!r}\n"
                    f"lsp.log:\n{_lsp_log(home)}")
    elapsed = time.monotonic() - start
    context = (f"{version}; nvim exit {proc.returncode} after {elapsed:.1f} s\n"
               f"stdout: {proc.stdout[-2000:]!r}\nstderr: {proc.stderr[-4000:]!r}\n"
               f"lsp.log:\n{_lsp_log(home)}")
    assert out.is_file(), f"nvim wrote no result\n{context}"
    result = json.loads(out.read_text("utf-8"))
    assert "error" not in result, f"{result['error']}\n{context}"
    assert proc.returncode == 0, context
    assert result["filetype"] == "python" and result["clients"] == ["ave"], (result, context)
    assert not result["timed_out"], \
        f"no diagnostics within {WAIT_MS / 1000:.0f} s\n{result}\n{context}"

    items = result["diagnostics"]
    assert all(d.get("source") == "ave" for d in items), items
    line = MANIFEST["line"]                      # 1-based; Neovim's lnum is 0-based
    hits = [d for d in items if d.get("code") == "AVE201" and d["lnum"] + 1 == line]
    assert hits, f"no AVE201 on line {line}: {items}"
    d = hits[0]
    src_line = BROKEN.read_text("utf-8").splitlines()[line - 1]
    assert d["col"] == src_line.index("ave.assert_conform"), d   # byte column (ASCII line)
    assert d["severity"] == 1 and "assert_conform violated" in d["message"], d
    allowed = {MANIFEST["code"], *MANIFEST.get("may_also", [])}
    assert {x.get("code") for x in items} <= allowed, items
    assert {x["lnum"] + 1 for x in items if x.get("code") == "AVE201"} == \
        {line, *MANIFEST.get("also_lines", [])}, items

    # quitting Neovim ends the server (no orphaned ave-lsp)
    for pid in result.get("server_pids") or []:
        assert _gone(pid, 10.0), f"ave-lsp (pid {pid}) still runs after nvim exited"
    print(f"\nneovim e2e: {version}; first diagnostics after "
          f"{result['elapsed_ms']} ms in nvim, whole run {elapsed:.1f} s")
