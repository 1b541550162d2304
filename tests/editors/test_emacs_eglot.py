"""End to end with a real editor: batch Emacs with eglot (Debian's ``emacs-nox`` 28 +
``elpa-eglot`` 1.9) as the LSP client of ``ave-lsp``, configured by
``editors/emacs/ave-eglot.el`` -- the file users load, unchanged.

``emacs --batch -l tests/editors/emacs/diagnostics.el`` loads the snippet with the server
command pointed at this Python's ``-m ave_lsp``, turns on ``eglot-ensure`` for Python
buffers, visits a copy of ``examples/broken/gemm_swizzle_mismatch.py``, and waits until
Flymake shows the server's diagnostics; they are compared with
``examples/broken/manifest.toml``. A second run sets ``ave-eglot-settings`` and checks
that the server received them (through ``workspace/configuration``). Skipped when
``emacs`` or eglot is missing (``.ci/run`` installs both with apt where it can).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "editors" / "emacs" / "ave-eglot.el"
DRIVER = Path(__file__).resolve().parent / "emacs" / "diagnostics.el"
BROKEN = ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py"
MANIFEST = next(c for c in tomllib.loads(
    (ROOT / "examples" / "broken" / "manifest.toml").read_text("utf-8"))["case"]
    if c["file"] == BROKEN.name)

WAIT_S = 60                # Emacs's deadline for the first diagnostics
PROCESS_TIMEOUT_S = 150    # the whole Emacs run


def _emacs(home: Path) -> str:
    """The emacs executable; skips without one, or without a loadable eglot."""
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.skip("emacs is not on PATH (Debian: apt-get install -y emacs-nox elpa-eglot; "
                    ".ci/run installs them where apt is available)")
    r = subprocess.run([emacs, "--batch", "--eval",
                        "(progn (require 'eglot) (princ (format \"eglot-ok %s\" emacs-version)))"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=str(home)))
    if "eglot-ok" not in r.stdout:
        pytest.skip("eglot cannot be loaded in this Emacs (Debian: apt-get install -y "
                    f"elpa-eglot): {r.stderr.strip()[-300:]}")
    return emacs


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while True:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def _run(tmp_path: Path, settings: str | None = None) -> tuple[dict, str]:
    home = tmp_path / "home"                   # Emacs's ~ (nothing of the user's is read)
    home.mkdir()
    emacs = _emacs(home)
    work = tmp_path / "project"
    work.mkdir()
    doc = work / BROKEN.name
    shutil.copyfile(BROKEN, doc)
    out = tmp_path / "diagnostics.json"
    env = dict(os.environ, HOME=str(home), AVE_EMACS_SNIPPET=str(SNIPPET),
               AVE_EMACS_PYTHON=sys.executable, AVE_EMACS_FILE=str(doc),
               AVE_EMACS_OUT=str(out), AVE_EMACS_TIMEOUT_S=str(WAIT_S),
               AVE_EMACS_SETTINGS=settings or "")
    start = time.monotonic()
    try:
        proc = subprocess.run([emacs, "--batch", "-l", str(DRIVER)], cwd=work, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"emacs did not exit within {PROCESS_TIMEOUT_S} s; stderr: {e.stderr!r}")
    context = (f"emacs exit {proc.returncode} after {time.monotonic() - start:.1f} s\n"
               f"stdout: {proc.stdout[-2000:]!r}\nstderr: {proc.stderr[-4000:]!r}")
    assert out.is_file(), f"emacs wrote no result\n{context}"
    result = json.loads(out.read_text("utf-8"))
    assert "error" not in result, f"{result['error']}\n{context}"
    assert proc.returncode == 0, context
    assert result["mode"] == "python-mode", (result, context)
    assert result["server_name"] == "ave-lsp", (result, context)
    assert result["server_command"] == [sys.executable, "-m", "ave_lsp"], result
    assert not result["timed_out"], f"no diagnostics within {WAIT_S} s\n{result}\n{context}"
    return result, context


def test_eglot_shows_ave_diagnostics(tmp_path: Path):
    result, context = _run(tmp_path)
    items = result["diagnostics"]
    # eglot's Flymake text: "<source> [<code>]: <message>"
    assert all(d["text"].startswith("ave [AVE") for d in items), items
    line = MANIFEST["line"]
    hits = [d for d in items if d["text"].startswith(f"ave [{MANIFEST['code']}]: ")
            and d["line"] == line]
    assert hits, f"no {MANIFEST['code']} on line {line}: {items}\n{context}"
    d = hits[0]
    src_line = BROKEN.read_text("utf-8").splitlines()[line - 1]
    assert d["column"] == src_line.index("ave.assert_conform"), d
    assert d["type"] == "eglot-error" and "assert_conform violated" in d["text"], d
    allowed = {MANIFEST["code"], *MANIFEST.get("may_also", [])}
    assert {x["text"].split("]")[0].removeprefix("ave [") for x in items} <= allowed, items
    assert {x["line"] for x in items if x["text"].startswith("ave [AVE201]")} == \
        {line, *MANIFEST.get("also_lines", [])}, items
    # eglot-shutdown ends the server (no orphaned ave-lsp)
    assert _gone(result["server_pid"], 10.0), f"ave-lsp (pid {result['server_pid']}) still runs"
    print(f"\nemacs e2e: Emacs {result['emacs_version']}; first diagnostics after "
          f"{result['elapsed_ms']} ms")


def test_eglot_sends_the_snippets_settings(tmp_path: Path):
    """``ave-eglot-settings`` reaches the server as its ``ave`` section: with
    ``:maxFileLines 5`` the file (longer than that) is not checked, and one info
    diagnostic says so instead of the findings."""
    n_lines = len(BROKEN.read_text("utf-8").splitlines())
    assert n_lines > 5
    result, context = _run(tmp_path, "(:maxFileLines 5 :checkOnChange :json-false)")
    items = result["diagnostics"]
    assert len(items) == 1, f"{items}\n{context}"
    d = items[0]
    assert d["type"] == "eglot-note", d
    assert f"not checked: the file has {n_lines} lines, more than maxFileLines = 5" in d["text"], d


def test_missing_server_says_how_to_install(tmp_path: Path):
    """Without the server, eglot's contact function stops with the install command."""
    emacs = _emacs(tmp_path)
    form = ("(progn (setq ave-eglot-server-command '(\"no-such-ave-lsp-xyz\"))"
            f" (load {json.dumps(str(SNIPPET))} nil t)"
            " (condition-case e (progn (ave-eglot--contact) (princ \"NO ERROR\"))"
            "  (user-error (princ (error-message-string e)))))")
    r = subprocess.run([emacs, "--batch", "--eval", form], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, HOME=str(tmp_path)))
    # (Emacs may render `...' quotes as curved ones: text-quoting-style)
    text = r.stdout.replace("\u2018", "`").replace("\u2019", "'")
    assert text == ("ave-eglot: no-such-ave-lsp-xyz not found: install Ave's server with "
                    "`python3 -m pip install -e /path/to/ave', or set `ave-eglot-server-command'"), \
        (r.stdout, r.stderr[-2000:])
