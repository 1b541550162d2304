"""The editor snippets that cannot be run here: Neovim 0.11's ``vim.lsp.config`` form
(``editors/neovim/ave-0.11.lua``; this machine has Neovim 0.7) and Helix's
``languages.toml`` (Helix is not packaged here). They are checked as far as is possible
without those editors: the Lua file is loaded in Neovim 0.7 with ``vim.lsp.config`` and
``vim.lsp.enable`` stubbed (a syntax error, or a wrong table, fails), the TOML is parsed
and its server command and settings are checked against the server's CLI and schema.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import jsonschema
import pytest

from ave_lsp.config import settings_schema

ROOT = Path(__file__).resolve().parents[2]
NVIM_011 = ROOT / "editors" / "neovim" / "ave-0.11.lua"
NVIM_07 = ROOT / "editors" / "neovim" / "ave.lua"
STUB = Path(__file__).resolve().parent / "nvim" / "stub_config.lua"
HELIX = ROOT / "editors" / "helix" / "languages.toml"
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]


def _stubbed_nvim(tmp_path: Path, cmd: list[str] | None = None) -> dict:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not on PATH (Debian: apt-get install -y neovim)")
    out = tmp_path / "config.json"
    home = tmp_path / "nvim-home"
    env = dict(os.environ, AVE_NVIM_SNIPPET=str(NVIM_011), AVE_NVIM_OUT=str(out),
               AVE_NVIM_CMD=json.dumps(cmd) if cmd else "",
               XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               XDG_STATE_HOME=str(home / "state"), XDG_DATA_HOME=str(home / "data"))
    env.pop("VIMINIT", None)
    proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-u", str(STUB)], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert out.is_file(), (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    result = json.loads(out.read_text("utf-8"))
    assert "error" not in result, result["error"]
    assert proc.returncode == 0, proc.stderr
    return result


def test_neovim_011_snippet_passes_a_complete_config(tmp_path: Path):
    r = _stubbed_nvim(tmp_path)
    assert r["had_config"] is False          # Neovim 0.7: the API really is missing here
    assert [c["name"] for c in r["config"]] == ["ave"]
    assert r["enable"] == [{"name": "ave", "enable": True}]
    cfg = r["config"][0]["cfg"]
    assert cfg["cmd"] == ["ave-lsp"] and cfg["cmd"][0] in SCRIPTS
    assert cfg["filetypes"] == ["python"]
    assert cfg["root_markers"] == ["pyproject.toml", ".git"]
    # no value of its own by default: an editor value overrides [tool.ave], and the
    # snippets sent checkOnChange = false, so a project's true never applied (a review
    # helper)
    assert cfg["settings"] == {"ave": {}}
    jsonschema.validate(cfg["settings"]["ave"], settings_schema())
    assert set(cfg) == {"cmd", "filetypes", "root_markers", "settings"}


def test_neovim_011_snippet_takes_the_same_options_as_the_07_one(tmp_path: Path):
    cmd = ["/venv/bin/python", "-m", "ave_lsp"]
    r = _stubbed_nvim(tmp_path, cmd)
    assert r["config"][0]["cfg"]["cmd"] == cmd
    # both snippets document and read the same globals
    for g in ("vim.g.ave_lsp_cmd", "vim.g.ave_lsp_settings"):
        assert g in NVIM_011.read_text("utf-8") and g in NVIM_07.read_text("utf-8"), g
    assert "UNTESTED HERE" in NVIM_011.read_text("utf-8")


def test_helix_languages_toml():
    text = HELIX.read_text("utf-8")
    assert "UNTESTED HERE" in text
    data = tomllib.loads(text)
    server = data["language-server"]["ave-lsp"]
    assert server["command"] in SCRIPTS and SCRIPTS[server["command"]] == "ave_lsp.cli:main"
    assert not server.get("args")                 # plain `ave-lsp` serves LSP on stdio
    # Helix answers workspace/configuration for section "ave" from config.ave
    jsonschema.validate(server["config"]["ave"], settings_schema())
    assert server["config"]["ave"] == {}          # [tool.ave] is not overridden
    (python,) = [lang for lang in data["language"] if lang["name"] == "python"]
    servers = python["language-servers"]
    names = [s if isinstance(s, str) else s["name"] for s in servers]
    assert names[-1] == "ave-lsp"                 # beside the Python servers, last
    assert len(names) > 1 and "ave-lsp" not in names[:-1]
    # the other names are Helix's built-in Python servers (no definition needed here)
    assert set(names[:-1]) <= {"ruff", "jedi", "pylsp", "pyright", "basedpyright"}
