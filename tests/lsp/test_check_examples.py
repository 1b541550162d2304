"""``ave-lsp --check`` on the bundled examples and on their broken variants, as a process.

* the three NVIDIA examples check clean: exit 0, no diagnostic, and the summary line counts
  3 files, 3 kernels and the specializations of their ``configs`` (derived by hand below);
  the JSON report validates against the schema and every specialization is proved with
  full coverage;
* every broken variant the manifest (``examples/broken/manifest.toml``) expects the checker
  to catch is reported with the manifest's code at the manifest's line, at the column of
  the assertion call on that line, and with nothing but the codes the manifest allows.

All the processes start together (one module fixture), so the file takes about as long as
its slowest few runs.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ave_core.diagnostics import validate_report

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BROKEN = "examples/broken"
EXAMPLES = ["examples/gemm.py", "examples/flash_attention.py", "examples/moe.py"]
TIMEOUT = 300  # seconds per process; they share the CPUs

# The configs of each example kernel, copied by hand (constexprs with defaults added).
CONFIGS = {
    "examples/gemm.py": ("gemm", [
        dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3),
        dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=4)]),
    "examples/flash_attention.py": ("flash_attention", [
        dict(BR=128, BC=64, D=128, GROUP=1, CAUSAL=False),
        dict(BR=128, BC=64, D=128, GROUP=8, CAUSAL=False),
        dict(BR=64, BC=64, D=128, GROUP=1, CAUSAL=False)]),
    "examples/moe.py": ("fused_moe", [
        dict(BM=64, BN=64, BK=64, STAGES=4, TOPK=2, MUL_ROUTED_WEIGHT=False),
        dict(BM=16, BN=64, BK=64, STAGES=4, TOPK=1, MUL_ROUTED_WEIGHT=True)]),
}
# 2 + 3 + 2 specializations
SPECIALIZATIONS = 7

# The assertions of one specialization: every assert_conform / assert_disjoint call and every
# mma (it checks its operand pairing by itself), counted once per source call (the 8
# unrolled k-steps of flash attention's Q K^T are one call).
ASSERTION_CALLS = {
    "examples/gemm.py": [
        ("assert_disjoint", "ave.assert_disjoint(sA[s_fill], sA[s])"),
        ("assert_disjoint", "ave.assert_disjoint(sB[s_fill], sB[s])"),
        ("assert_conform", "ave.assert_conform(a, b, contract=(1, 0))"),
        ("mma", "ave.mma(a, b, acc, tiled)"),
        ("accumulate", "ave.mma(a, b, acc, tiled)"),
        ("store", "ave.store(C[m0:m0 + BM, n0:n0 + BN]")],
    "examples/flash_attention.py": [
        ("assert_disjoint", "ave.assert_disjoint(sK[sn], sK[s])"),
        ("assert_conform", "ave.assert_conform(q, k, "),
        ("mma", "ave.mma(q, k, acc, tqk)"),
        ("accumulate", "ave.mma(q, k, acc, tqk)"),
        ("assert_disjoint", "ave.assert_disjoint(sV[sn], sV[s])"),
        ("assert_conform", "ave.assert_conform(pa, v_lo, "),
        ("mma", "ave.mma(pa, v_lo, o_lo, tpv)"),
        ("accumulate", "ave.mma(pa, v_lo, o_lo, tpv)"),
        ("mma", "ave.mma(pa, v_hi, o_hi, tpv)"),
        ("accumulate", "ave.mma(pa, v_hi, o_hi, tpv)"),
        ("store", "ave.copy(sQ, O[b, h, m0:m0 + BR, 0:D]")],
    "examples/moe.py": [
        ("assert_disjoint", "ave.assert_disjoint(sX[s_fill], sX[s])"),
        ("assert_disjoint", "ave.assert_disjoint(sW[s_fill], sW[s])"),
        ("mma", "ave.mma(a, b, acc, tiled)"),
        ("accumulate", "ave.mma(a, b, acc, tiled)"),
        ("store", "ave.store(ave.scatter(Out, sorted_token_ids[r0:r0 + BM], 0)")],
}
# plus, per specialization, the store into the tagged output and the accumulation of the
# MMA chain that is stored (flash attention: Q K^T, and P V's two halves -- each one chain
# through the online softmax's rescaling)
# 6 * 2 (gemm) + 11 * 3 (flash attention) + 5 * 2 (MoE) = 12 + 33 + 10
ASSERTIONS = 55
# Runtime loops are unrolled for trip counts 1 .. T, T = STAGES + 2, or for a kernel
# without STAGES the buffers its loop cycles through + 2 (flash attention: sK[j % 2]).
TRIP_BOUNDS = {"examples/gemm.py": [3 + 2, 4 + 2], "examples/flash_attention.py": [4, 4, 4],
               "examples/moe.py": [4 + 2, 4 + 2]}

# docs: AVE201 and AVE202 are errors, AVE203 (read of uninitialized shared memory) a warning
SEVERITY = {"AVE201": "error", "AVE202": "error", "AVE203": "warning", "AVE206": "error",
            "AVE207": "error", "AVE208": "error"}
# what the manifest's `assertion` names is this call on the reported line
CALL = {"mma": ("ave.mma(",), "assert_conform": ("ave.assert_conform(",),
        "assert_disjoint": ("ave.assert_disjoint(",), "read": ("ave.ldmatrix(", "ave.load("),
        "access": ("ave.ldmatrix(", "ave.load(", "ave.store(", "ave.copy(", "ave.copy_async(")}


def _manifest_cases() -> list[dict]:
    with (ROOT / BROKEN / "manifest.toml").open("rb") as f:
        return tomllib.load(f)["case"]


CHECKER_CASES = [c for c in _manifest_cases() if c["expect"] == "checker"]


def _code_lines(path: str) -> list[str]:
    return (ROOT / path).read_text(encoding="utf-8").splitlines()


def _line_of(path: str, needle: str) -> int:
    """0-based line of the one code line (not a comment, not the docstring) with ``needle``."""
    text = (ROOT / path).read_text(encoding="utf-8")
    first = ast.parse(text).body[0]
    start = first.end_lineno if isinstance(first, ast.Expr) else 0
    lines = text.splitlines()
    found = [i for i in range(start, len(lines))
             if needle in lines[i] and not lines[i].lstrip().startswith("#")]
    assert len(found) == 1, (path, needle, found)
    return found[0]


def _check(*args: str) -> list[str]:
    return [sys.executable, "-m", "ave_lsp", "--check", *args]


def _jobs() -> dict:
    # The two runs of the examples analyze with worker processes (jobs: the default, one
    # per CPU); the many runs of one broken file each are processes running side by side
    # already: they analyze in their own process (--jobs 1), as many pools would only
    # crowd the CPUs and the memory.
    jobs = {"text": _check(*EXAMPLES), "json": _check("--format", "json", *EXAMPLES)}
    for case in CHECKER_CASES:
        path = f"{BROKEN}/{case['file']}"
        jobs[("broken", case["file"])] = _check("--jobs", "1", path)
        if SEVERITY.get(case["code"]) == "warning":
            jobs[("broken-fail-on-warning", case["file"])] = _check(
                "--jobs", "1", "--fail-on", "warning", path)
    return jobs


@pytest.fixture(scope="module")
def runs() -> dict[object, subprocess.CompletedProcess]:
    jobs = _jobs()
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}

    def run(cmd):
        return subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8",
                              cwd=ROOT, env=env, timeout=TIMEOUT)

    with ThreadPoolExecutor(max_workers=len(jobs)) as ex:
        futures = {key: ex.submit(run, cmd) for key, cmd in jobs.items()}
        return {key: f.result() for key, f in futures.items()}


# ----------------------------------------------------------------------------- the examples


def test_examples_check_clean_text(runs):
    p = runs["text"]
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stderr == ""
    lines = p.stdout.splitlines()
    assert lines[-1] == (
        f"checked 3 files, 3 kernels ({SPECIALIZATIONS} specializations): 0 errors, "
        f"0 warnings; assertions: {ASSERTIONS} proved, 0 violated, 0 unknown, 0 vacuous")
    assert lines == lines[-1:], "no diagnostic expected"


def test_examples_check_clean_json(runs):
    p = runs["json"]
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads(p.stdout)
    validate_report(report)
    assert report["diagnostics"] == []
    s = report["summary"]
    assert (s["files"], s["kernels"], s["specializations"]) == (3, 3, SPECIALIZATIONS)
    assert (s["errors"], s["warnings"]) == (0, 0)
    assert (s["proved"], s["violated"], s["unknown"], s["vacuous"]) == (ASSERTIONS, 0, 0, 0)

    assert [f["path"] for f in report["files"]] == EXAMPLES
    n_specs = 0
    for f in report["files"]:
        path = f["path"]
        name, configs = CONFIGS[path]
        assert f["uses_ave"] is True
        (kernel,) = f["kernels"]
        assert kernel["name"] == name
        assert kernel["line"] == _line_of(path, f"def {name}(")
        specs = kernel["specializations"]
        assert [sp["constexprs"] for sp in specs] == configs
        lines = _code_lines(path)
        expected = sorted((kind, _line_of(path, call)) for kind, call in ASSERTION_CALLS[path])
        for sp, bound in zip(specs, TRIP_BOUNDS[path]):
            n_specs += 1
            assert sp["status"] == "proved", (path, sp["constexprs"])
            assert sp["findings"] == {}, (path, sp["constexprs"])
            assert sp["trip_bound"] == bound
            got = sorted((a["kind"], a["line"]) for a in sp["assertions"])
            assert got == expected, (path, sp["constexprs"])
            for a in sp["assertions"]:
                assert a["status"] == "proved" and a["coverage"] == 1.0, (path, a)
                assert a["compared"] > 0
                assert a["range"]["start"]["line"] == a["line"]
                # the range starts at the call itself
                col = a["range"]["start"]["character"]
                assert lines[a["line"]][col:].startswith("ave.")
    assert n_specs == SPECIALIZATIONS


# ----------------------------------------------------------------------------- broken variants


_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|info) "
                   r"(?P<code>AVE\d+) ")


def _diagnostics(stdout: str, path: str) -> list[tuple[int, int, str, str]]:
    """(1-based line, 1-based column, severity, code) of each diagnostic line of ``path``."""
    out = []
    for ln in stdout.splitlines():
        m = _DIAG.match(ln)
        if m and m["file"] == path:
            out.append((int(m["line"]), int(m["col"]), m["sev"], m["code"]))
    return out


def test_manifest_has_checker_cases():
    assert len(CHECKER_CASES) >= 1
    assert {c["code"] for c in CHECKER_CASES} <= set(SEVERITY)


@pytest.mark.parametrize("case", CHECKER_CASES, ids=[c["file"] for c in CHECKER_CASES])
def test_broken_variant_is_caught(case, runs):
    path = f"{BROKEN}/{case['file']}"
    p = runs[("broken", case["file"])]
    code, line = case["code"], case["line"]
    severity = SEVERITY[code]
    assert p.stderr == "", p.stderr
    # an error fails the check; a warning does so only with --fail-on warning
    errors = {c for _, _, sev, c in _diagnostics(p.stdout, path) if sev == "error"}
    assert p.returncode == (1 if severity == "error" or errors else 0), p.stdout
    if severity == "warning":
        q = runs[("broken-fail-on-warning", case["file"])]
        assert q.returncode == 1, q.stdout + q.stderr

    diags = _diagnostics(p.stdout, path)
    reported = {(ln, c) for ln, _, _, c in diags}
    assert (line, code) in reported, (case["file"], code, line, p.stdout)
    for extra in case.get("also_lines", []):
        assert (extra, code) in reported, (case["file"], code, extra, p.stdout)
    # nothing the manifest does not allow
    allowed = {code, *case.get("may_also", [])}
    assert {c for _, _, _, c in diags} <= allowed, p.stdout
    # the severity, and the column: the assertion call the manifest names on that line
    text = _code_lines(path)[line - 1]
    calls = [text.index(c) for c in CALL[case["assertion"]] if c in text]
    assert calls, (case["file"], text)
    assert (line, min(calls) + 1, severity, code) in diags, p.stdout
    assert p.stdout.splitlines()[-1].startswith("checked 1 file, 1 kernel (")
