"""The CI integrations: the pre-commit hook (``.pre-commit-hooks.yaml``) and the example
GitHub Actions workflow (``editors/github/ave-check.yml``). Each is parsed, its command is
checked against the CLI's parser and console scripts, and then run as pre-commit / the
workflow would run it, on a correct kernel, a broken one and a file without kernels."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

yaml = pytest.importorskip("yaml", reason="pyyaml is in the dev extra: pip install -e '.[dev]'")

from ave_lsp.cli import build_parser  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / ".pre-commit-hooks.yaml"
WORKFLOW = ROOT / "editors" / "github" / "ave-check.yml"
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
GOOD = ROOT / "examples" / "gemm.py"
BROKEN = ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py"
MANIFEST = next(c for c in tomllib.loads(
    (ROOT / "examples" / "broken" / "manifest.toml").read_text("utf-8"))["case"]
    if c["file"] == BROKEN.name)
SARIF_SCHEMA = json.loads((ROOT / "tests" / "lsp" / "data" / "sarif-schema-2.1.0.json")
                          .read_text("utf-8"))
PLAIN = "import os\n\n\ndef f():\n    return os.sep\n"


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``argv`` (starting with the console script ``ave-lsp``) as this Python runs it."""
    assert argv[0] in SCRIPTS and SCRIPTS[argv[0]] == "ave_lsp.cli:main", argv
    return subprocess.run([sys.executable, "-m", "ave_lsp", *argv[1:]], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


# ----------------------------------------------------------------------------- pre-commit

def _hook() -> dict:
    hooks = yaml.safe_load(HOOKS.read_text("utf-8"))
    assert isinstance(hooks, list) and [h["id"] for h in hooks] == ["ave-check"]
    return hooks[0]


def test_pre_commit_hook_definition():
    hook = _hook()
    # the keys pre-commit requires, and only keys it knows
    assert {"id", "name", "entry", "language"} <= set(hook)
    assert set(hook) <= {"id", "name", "entry", "language", "description", "types",
                         "types_or", "files", "exclude", "args", "require_serial",
                         "minimum_pre_commit_version", "pass_filenames", "stages",
                         "always_run", "verbose", "language_version"}
    assert hook["language"] == "python"            # pre-commit pip-installs this repo
    assert hook["types"] == ["python"]
    argv = shlex.split(hook["entry"]) + list(hook.get("args", []))
    assert argv[0] in SCRIPTS
    # pre-commit appends the staged files: the whole command line must parse
    ns = build_parser().parse_args(argv[1:] + ["a.py", "b/c.py"])
    assert ns.check and ns.paths == ["a.py", "b/c.py"] and ns.format == "text"


def test_pre_commit_hook_runs_on_staged_files(tmp_path: Path):
    hook = _hook()
    argv = shlex.split(hook["entry"]) + list(hook.get("args", []))
    for f in (GOOD, BROKEN):
        shutil.copyfile(f, tmp_path / f.name)
    (tmp_path / "plain.py").write_text(PLAIN, "utf-8")

    ok = _run(argv + ["gemm.py", "plain.py"], tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr           # the commit goes through
    assert "0 errors" in ok.stdout

    bad = _run(argv + ["plain.py", BROKEN.name], tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr        # the commit is refused
    want = f"{BROKEN.name}:{MANIFEST['line']}:"
    assert any(line.startswith(want) and f"error {MANIFEST['code']}" in line
               for line in bad.stdout.splitlines()), bad.stdout


# ----------------------------------------------------------------------------- workflow

def _workflow() -> dict:
    wf = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    # YAML 1.1 reads the key `on` as true
    assert set(wf.get("on", wf.get(True))) == {"push", "pull_request"}
    return wf


def _steps() -> tuple[dict, dict]:
    wf = _workflow()
    assert wf["permissions"]["security-events"] == "write"
    (job,) = wf["jobs"].values()
    steps = job["steps"]
    checks = [s for s in steps if "ave-lsp --check" in s.get("run", "")]
    uploads = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert len(checks) == 1 and len(uploads) == 1, steps
    assert steps.index(checks[0]) < steps.index(uploads[0])
    assert any(s.get("uses", "").startswith("actions/checkout@") for s in steps)
    return checks[0], uploads[0]


def test_workflow_check_command_is_valid():
    check, upload = _steps()
    argv = shlex.split(check["run"])
    assert argv[0] in SCRIPTS
    ns = build_parser().parse_args(argv[1:])
    assert ns.check and ns.format == "sarif" and ns.paths
    assert upload["with"]["sarif_file"] == ns.output
    # the upload runs after a failing check (findings make the check exit 1)
    assert upload["if"].startswith("always()")
    assert upload["uses"].endswith("@v3")


def test_workflow_check_writes_sarif_for_code_scanning(tmp_path: Path):
    check, upload = _steps()
    argv = shlex.split(check["run"])
    ns = build_parser().parse_args(argv[1:])
    for p in ns.paths:                                   # the repository layout it expects
        d = tmp_path / p
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(GOOD, d / GOOD.name)
        shutil.copyfile(BROKEN, d / BROKEN.name)
    r = _run(argv, tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr        # an error-level finding
    log = json.loads((tmp_path / upload["with"]["sarif_file"]).read_text("utf-8"))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    results = log["runs"][0]["results"]
    loc = f"{ns.paths[0].rstrip('/')}/{BROKEN.name}"
    hits = [x for x in results if x["ruleId"] == MANIFEST["code"]
            and x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == loc
            and x["locations"][0]["physicalLocation"]["region"]["startLine"] == MANIFEST["line"]]
    assert hits, results
    good = f"{ns.paths[0].rstrip('/')}/{GOOD.name}"
    assert all(x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] != good
               for x in results)
