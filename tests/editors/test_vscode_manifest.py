"""The VS Code extension's manifest (``editors/vscode/package.json``) against the server.

``contributes.configuration``'s section ``ave.checker`` must be the server's settings
schema (:func:`ave_lsp.config.settings_schema`), key for key: the same keys, JSON types,
bounds, defaults and descriptions. The extension's own settings (section ``ave.server``:
how to start the server) must not collide with a server key. The install command the
extension suggests names this project's distribution and module.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from ave_lsp.config import settings_schema

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
MANIFEST = json.loads((VSCODE / "package.json").read_text("utf-8"))
SCHEMA = settings_schema()["properties"]
SECTIONS = {s["id"]: s for s in MANIFEST["contributes"]["configuration"]}

#: the extension's own settings: how the server is started and traced (never sent to it)
CLIENT_KEYS = {"ave.serverPath", "ave.interpreter", "ave.logLevel", "ave.trace.server"}


def test_sections_are_the_checker_and_the_server_start():
    assert set(SECTIONS) == {"ave.checker", "ave.server"}


def test_checker_section_is_the_server_schema_key_for_key():
    props = SECTIONS["ave.checker"]["properties"]
    assert list(props) == [f"ave.{k}" for k in SCHEMA]          # same keys, same order
    for key, want in SCHEMA.items():
        got = props[f"ave.{key}"]
        assert got["type"] == want["type"], key
        assert "default" in got and got["default"] == want["default"], key
        assert type(got["default"]) is type(want["default"]), key   # 0 vs False, 1 vs 1.0
        for bound in ("minimum", "maximum", "minLength", "enum"):
            assert got.get(bound) == want.get(bound), (key, bound)
        assert got["description"] == want["description"], key
        assert got["scope"] == "resource", key   # per workspace folder, as [tool.ave]
        # nothing VS Code would enforce that the server does not
        assert set(got) <= {"type", "default", "minimum", "minLength", "description",
                            "scope"}, key


def test_server_start_settings_are_the_extensions_own():
    props = SECTIONS["ave.server"]["properties"]
    assert set(props) == CLIENT_KEYS
    assert not {k.removeprefix("ave.") for k in props} & set(SCHEMA)
    for key, p in props.items():
        assert p.get("markdownDescription") or p.get("description"), key
        assert "default" in p, key
    # the log levels offered are the ones the server reads from AVE_LSP_LOG_LEVEL
    src = (ROOT / "ave_lsp" / "server" / "__init__.py").read_text("utf-8")
    assert "AVE_LSP_LOG_LEVEL" in src
    import logging
    for level in props["ave.logLevel"]["enum"]:
        assert isinstance(logging.getLevelName(level), int), level
    assert props["ave.logLevel"]["default"] == "WARNING"
    # a workspace must not pick the executable in an untrusted folder
    restricted = MANIFEST["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert set(restricted) == {"ave.serverPath", "ave.interpreter"}


def test_sync_script_reports_the_manifest_current():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(VSCODE / "scripts" / "sync_settings.py"), "--check"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_install_hint_and_server_names_match_the_project():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    discovery = (VSCODE / "src" / "discovery.ts").read_text("utf-8")

    def const(name: str) -> str:
        m = re.search(rf'export const {name} = "([^"]+)";', discovery)
        assert m, name
        return m.group(1)

    assert const("DISTRIBUTION") == pyproject["project"]["name"]
    assert const("SERVER_SCRIPT") in pyproject["project"]["scripts"]
    assert pyproject["project"]["scripts"][const("SERVER_SCRIPT")] == "ave_lsp.cli:main"
    assert (ROOT / const("SERVER_MODULE") / "__main__.py").is_file()


def test_minimum_server_version_is_not_newer_than_this_server():
    from ave_core import __version__

    version = (VSCODE / "src" / "version.ts").read_text("utf-8")
    m = re.search(r'export const MIN_SERVER_VERSION = "(\d+)\.(\d+)\.(\d+)";', version)
    assert m
    have = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)\.(\d+)", __version__).groups())
    assert tuple(int(x) for x in m.groups()) <= have
    assert re.search(r'export const SERVER_NAME = "ave-lsp";', version)
    from ave_lsp.server.server import NAME
    assert NAME == "ave-lsp"


def test_version_probe_prints_what_the_extension_parses():
    """The extension probes ``<python> -m ave_lsp --version`` and expects
    ``ave-lsp X.Y.Z`` on stdout (discovery.ts VERSION_LINE)."""
    import subprocess
    import sys

    from ave_core import __version__

    r = subprocess.run([sys.executable, "-m", "ave_lsp", "--version"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ave-lsp {__version__}"
    assert re.fullmatch(r"ave-lsp\s+(\d+\.\d+\.\d+\S*)\s*", r.stdout)


def test_build_outputs_are_git_ignored():
    import subprocess

    paths = ["editors/vscode/node_modules/x/index.js", "editors/vscode/dist/extension.js",
             "editors/vscode/out/src/test/a.js", "editors/vscode/ave.vsix"]
    r = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True,
                       text=True)
    if r.returncode == 128:
        pytest.skip(f"not a git checkout: {r.stderr.strip()}")
    assert sorted(r.stdout.split()) == sorted(paths)
    assert (VSCODE / "package-lock.json").is_file()      # npm ci needs it
