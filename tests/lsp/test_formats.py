"""``ave-lsp --check`` output formats (SARIF, GitHub), suppression comments, ``--fail-on``
with every format, and the progress display.

SARIF logs are validated against the official SARIF 2.1.0 schema, vendored in
``tests/lsp/data/`` (see its README for the source and license).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import jsonschema
import pytest

from ave_core.diagnostics import Diagnostic, Range, Severity, SourceText, validate_report
from ave_lsp import cli, sarif
from ave_lsp.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json")
                    .read_text("utf-8"))
BROKEN = "examples/broken/gemm_swizzle_mismatch.py"
CLEAN = "examples/gemm.py"


def validate_sarif(log: dict) -> None:
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA).validate(log)


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8", newline="")
    return p


# --- a small front-end error (the real front end) ------------------------------------------

FRONTEND_ERROR = '''import ave_core.lang as ave


@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2]):
    x = ave.frobnicate(A)
'''


# --- SARIF on the real examples ------------------------------------------------------------


@pytest.fixture(scope="module")
def broken_sarif():
    """``--format sarif`` of the broken GEMM, run from the repository root."""
    import contextlib
    import os

    out = io.StringIO()
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            rc = main(["--check", "--format", "sarif", BROKEN])
    finally:
        os.chdir(old)
    return rc, json.loads(out.getvalue())


def test_sarif_broken_example_validates(broken_sarif):
    rc, log = broken_sarif
    assert rc == 1
    validate_sarif(log)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run_ = log["runs"][0]
    driver = run_["tool"]["driver"]
    from ave_core import __version__
    from ave_core.diagnostics import CODES

    assert driver["name"] == "ave-lsp" and driver["version"] == __version__
    assert run_["columnKind"] == "utf16CodeUnits"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == ROOT.as_uri() + "/"
    results = run_["results"]
    assert results and {r["ruleId"] for r in results} == {"AVE201"}
    (rule,) = driver["rules"]
    assert rule["id"] == "AVE201" and rule["name"] == "OperandPairingViolated"
    assert rule["shortDescription"]["text"] == CODES["AVE201"].title
    assert rule["fullDescription"]["text"] == CODES["AVE201"].summary
    assert rule["helpUri"] == (ROOT / "docs" / "codes" / "AVE201.md").as_uri()
    assert rule["help"]["text"].startswith(CODES["AVE201"].summary)
    first = results[0]
    assert first["level"] == "error" and first["ruleIndex"] == 0
    assert first["message"]["text"].startswith("assert_conform violated: thread 8")
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": BROKEN, "uriBaseId": "%SRCROOT%"}
    # README: examples/broken/gemm_swizzle_mismatch.py:144:9 (0-based 143:8 .. 143:49)
    assert loc["region"] == {"startLine": 144, "startColumn": 9, "endLine": 144,
                             "endColumn": 50}
    assert [r["message"]["text"] for r in first["relatedLocations"]][:2] == [
        "x: tag introduced (A)", "x: written to shared memory by ave.copy_async (kt=0)"]
    assert [r["id"] for r in first["relatedLocations"]] == \
        list(range(1, len(first["relatedLocations"]) + 1))
    assert first["properties"]["witness"]["threads"][0]["thread"] == 8


def test_sarif_code_flows_one_thread_flow_per_witness_thread(broken_sarif):
    _, log = broken_sarif
    results = log["runs"][0]["results"]
    for r in results:
        w = r["properties"]["witness"]
        (flow,) = r["codeFlows"]
        threads = list(dict.fromkeys(t["thread"] for t in w["threads"]))
        assert [tf["id"] for tf in flow["threadFlows"]] == [f"thread {t}" for t in threads]
        for tf, t in zip(flow["threadFlows"], threads):
            locs = tf["locations"]
            # the witness' program points of this thread's operand, then the flagged range
            mine = [n for n, o in w["operands"].items() if o["thread"] == t]
            labels = [loc["location"]["message"]["text"] for loc in locs]
            expected = [p["label"] for p in w["program_points"]
                        if p["label"].split(":")[0] in mine]
            assert labels[:-1] == expected and expected
            assert locs[-1]["location"]["physicalLocation"] == \
                r["locations"][0]["physicalLocation"]
            for loc in locs:
                state = loc["state"]
                for name, value in w["loop_indices"].items():
                    assert state[name] == {"text": str(value)}
                for name in mine:
                    coords = w["coordinates"][name]
                    assert state[f"{name}.coordinates"]["text"] == \
                        ", ".join(f"{k}={v}" for k, v in coords.items())
            assert tf["properties"]["thread"] == t


def test_sarif_clean_example(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    rc, out, err = run(capsys, "--check", "--format", "sarif", CLEAN)
    assert rc == 0 and err == ""
    log = json.loads(out)
    validate_sarif(log)
    run_ = log["runs"][0]
    assert run_["results"] == [] and run_["tool"]["driver"]["rules"] == []
    assert run_["properties"]["summary"]["errors"] == 0


def test_sarif_of_a_file_too_deep_for_the_parser(tmp_path, capsys, monkeypatch):
    """A file Python's parser gives up on (RecursionError, not SyntaxError) is an AVE100
    in SARIF as in every other format -- the fingerprint's enclosing-function lookup
    parses the file too, and crashed the whole run (found by a review helper)."""
    deep = write(tmp_path, "deep.py", "import ave_core.lang as ave\n\nx = " +
                 "1+" * 30000 + "1\n")
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "--check", "--format", "sarif", "deep.py", str(
        ROOT / CLEAN))
    assert rc == 1, err
    log = json.loads(out)
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["AVE100"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] \
        == "deep.py"
    assert deep.exists()


def _fingerprints(path: str) -> list[tuple[str, int]]:
    checker = cli.Checker(workspace=None, analyze=True, options=None)
    report = checker.report(checker.check_all([path]))
    log = sarif.to_sarif(report)
    validate_sarif(log)
    return [(r["partialFingerprints"][sarif.FINGERPRINT_KEY],
             r["locations"][0]["physicalLocation"]["region"]["startLine"])
            for r in log["runs"][0]["results"]]


def test_partial_fingerprints_survive_unrelated_edits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dest = tmp_path / "kernels" / "gemm.py"
    dest.parent.mkdir()
    shutil.copy(ROOT / BROKEN, dest)
    before = _fingerprints("kernels/gemm.py")
    text = dest.read_text("utf-8")
    i = text.index("\n@ave.kernel")
    dest.write_text(text[:i] + "\n\nUNRELATED = 3  # lines added above the kernel" + text[i:],
                    "utf-8")
    after = _fingerprints("kernels/gemm.py")
    assert len(before) == len(after) == 2
    assert [f for f, _ in before] == [f for f, _ in after]
    assert [ln + 2 for _, ln in before] == [ln for _, ln in after]   # the lines did move
    assert len({f for f, _ in before}) == 2
    assert all(f.endswith(":0") for f, _ in before)


def test_fingerprint_parts_and_occurrences(tmp_path):
    text = "import x\n\n@deco\ndef kern():\n    a = 1\n    a = 1\n"
    p = write(tmp_path, "k.py", text)

    def diag(line: int) -> dict:
        return Diagnostic("AVE102", "m", str(p), Range.of(line, 4, line, 9)).to_json()

    src = sarif.Sources()
    assert src.enclosing_function(str(p), 2) == "kern"       # the decorator line too
    assert src.enclosing_function(str(p), 0) == ""
    a, b = (sarif.fingerprint_base(diag(n), src, str(tmp_path)) for n in (4, 5))
    assert a == b                            # same code, file, line text and kernel...
    log = sarif.to_sarif({"diagnostics": [diag(4), diag(5)], "summary": {}},
                         cwd=str(tmp_path))
    fps = [r["partialFingerprints"][sarif.FINGERPRINT_KEY]
           for r in log["runs"][0]["results"]]
    assert fps == [f"{a}:0", f"{a}:1"]       # ...told apart by their occurrence


def test_sarif_locations_outside_the_working_directory_and_levels(tmp_path):
    inside = tmp_path / "src" / "a b.py"
    outside = tmp_path / "elsewhere.py"
    diags = [
        Diagnostic("AVE204", "w", str(inside), Range.of(0, 0, 0, 0)),
        Diagnostic("AVE101", "i", str(outside), Range.of(1, 2, 3, 4),
                   severity=Severity.INFO),
        Diagnostic("AVE101", "h", str(outside), Range.of(1, 2, 3, 4),
                   severity=Severity.HINT),
    ]
    report = {"diagnostics": [d.to_json() for d in diags], "summary": {}}
    log = sarif.to_sarif(report, cwd=str(tmp_path / "src"))
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert [r["level"] for r in results] == ["warning", "note", "note"]
    locs = [r["locations"][0]["physicalLocation"] for r in results]
    assert locs[0]["artifactLocation"] == {"uri": "a%20b.py", "uriBaseId": "%SRCROOT%"}
    assert locs[0]["region"] == {"startLine": 1, "startColumn": 1, "endLine": 1,
                                 "endColumn": 1}
    assert locs[1]["artifactLocation"] == {"uri": outside.as_uri()}
    assert locs[1]["region"] == {"startLine": 2, "startColumn": 3, "endLine": 4,
                                 "endColumn": 5}
    assert [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]] == \
        ["AVE101", "AVE204"]
    assert [r["ruleIndex"] for r in results] == [1, 0, 0]


def test_sarif_utf16_columns(tmp_path):
    text = 's = "😀"; t = 0\n'
    src = SourceText(text, str(tmp_path / "u.py"))
    col = text.index("t")
    d = Diagnostic("AVE102", "m", src.path, Range(src.position_from_char(0, col),
                                                   src.position_from_char(0, col + 1)))
    log = sarif.to_sarif({"diagnostics": [d.to_json()], "summary": {}}, cwd=str(tmp_path))
    region = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startColumn"] == col + 2 and region["endColumn"] == col + 3  # 😀 = 2


def test_code_flow_without_operands_and_without_threads(tmp_path):
    pp = {"file": "k.py", "range": Range.of(3, 0, 3, 5).to_json(), "label": "ave.barrier"}
    race = Diagnostic("AVE304", "race", "k.py", Range.of(5, 4, 5, 9),
                      witness={"block": [1, 0, 0],
                               "threads": [{"thread": 3, "warp": 0, "lane": 3},
                                           {"thread": 40, "warp": 1, "lane": 8}],
                               "loop_indices": {"i": 2}, "program_points": [pp]})
    nothreads = Diagnostic("AVE202", "overlap", "k.py", Range.of(6, 4, 6, 9),
                           witness={"threads": [], "program_points": [pp],
                                    "coordinates": {"x": [1, 2]}})
    bare = Diagnostic("AVE203", "uninit", "k.py", Range.of(7, 4, 7, 9),
                      witness={"threads": [], "program_points": []})
    report = {"diagnostics": [d.to_json() for d in (race, nothreads, bare)], "summary": {}}
    log = sarif.to_sarif(report, cwd=str(tmp_path))
    validate_sarif(log)
    r0, r1, r2 = log["runs"][0]["results"]
    flows = r0["codeFlows"][0]["threadFlows"]
    assert [f["id"] for f in flows] == ["thread 3", "thread 40"]
    for f in flows:   # the point (no operand named), then the flagged location
        assert [loc["location"]["message"]["text"] for loc in f["locations"]] == \
            ["ave.barrier", "AVE304 reported here"]
        assert f["locations"][0]["state"] == {"block": {"text": "(1, 0, 0)"},
                                              "i": {"text": "2"}}
    (flow,) = r1["codeFlows"][0]["threadFlows"]
    assert flow["id"] == "workgroup"
    assert flow["locations"][0]["state"] == {"x.coordinates": {"text": "(1, 2)"}}
    assert "codeFlows" not in r2


# --- GitHub workflow commands --------------------------------------------------------------


def test_github_output_exact_lines(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "bad.py", FRONTEND_ERROR)
    write(tmp_path, "sub/b,c:d.py", FRONTEND_ERROR.replace("frobnicate", "nope"))
    write(tmp_path, "ok.py", FRONTEND_ERROR.replace("x = ave.frobnicate(A)", "pass"))
    rc, out, err = run(capsys, "--check", "--format", "github", ".")
    assert rc == 1 and err == ""
    assert out.splitlines() == [
        "::error file=bad.py,line=6,col=9,endLine=6,endColumn=23,title=AVE102::"
        "`ave.frobnicate` is not part of the DSL",
        "::error file=sub/b%2Cc%3Ad.py,line=6,col=9,endLine=6,endColumn=17,title=AVE102::"
        "`ave.nope` is not part of the DSL",
        "checked 3 files, 3 kernels (1 specialization): 2 errors, 0 warnings; "
        "assertions: 0 proved, 0 violated, 0 unknown, 0 vacuous",
    ]


def test_github_lines_severities_escapes_and_multiline_ranges():
    def j(sev, rng, msg="m", path="k.py"):
        return Diagnostic("AVE101", msg, path, rng, severity=Severity.from_label(sev)).to_json()

    assert cli.github_line(j("warning", Range.of(0, 0, 0, 3))) == \
        "::warning file=k.py,line=1,col=1,endLine=1,endColumn=4,title=AVE101::m"
    assert cli.github_line(j("info", Range.of(2, 1, 2, 1))) == \
        "::notice file=k.py,line=3,col=2,endLine=3,endColumn=2,title=AVE101::m"
    assert cli.github_line(j("hint", Range.of(2, 1, 4, 0), "100% sure\r\nnext")) == \
        "::notice file=k.py,line=3,endLine=5,title=AVE101::100%25 sure%0D%0Anext"
    assert cli.github_escape_property("a%b:c,d\ne") == "a%25b%3Ac%2Cd%0Ae"
    assert cli.github_escape_data("a:b,c") == "a:b,c"


# --- suppressions --------------------------------------------------------------------------


@pytest.mark.parametrize("comment, suppressed", [
    ("  # ave: ignore[AVE102]", True),
    ("  # ave: ignore", True),
    ("  # ave: ignore[AVE204, ave102]", True),
    ("  # ave: ignore[AVE204]", False),
    ('; s = "# ave: ignore"', False),          # not a comment
])
def test_suppression_comments_in_check(tmp_path, capsys, monkeypatch, comment, suppressed):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "bad.py", FRONTEND_ERROR.rstrip("\n") + comment + "\n")
    rc, out, _ = run(capsys, "--check", "bad.py")
    lines = out.splitlines()
    if suppressed:
        assert rc == 0
        assert lines == ["checked 1 file, 1 kernel (0 specializations): 0 errors, 0 warnings, "
                         "1 suppressed"]
    else:
        assert rc == 1 and lines[0].startswith("bad.py:6:9: error AVE102")
        assert "suppressed" not in lines[-1]


def test_suppression_applies_to_every_format(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "bad.py", FRONTEND_ERROR.rstrip("\n") + "  # ave: ignore[AVE102]\n")
    write(tmp_path, "other.py", FRONTEND_ERROR)
    rc, out, _ = run(capsys, "--check", "--format", "json", ".")
    report = json.loads(out)
    validate_report(report)
    assert rc == 1 and [d["file"] for d in report["diagnostics"]] == ["./other.py"]
    assert report["summary"]["suppressed"] == 1 and report["summary"]["errors"] == 1
    rc, out, _ = run(capsys, "--check", "--format", "sarif", ".")
    results = json.loads(out)["runs"][0]["results"]
    assert rc == 1 and [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                        for r in results] == ["other.py"]
    rc, out, _ = run(capsys, "--check", "--format", "github", ".")
    assert rc == 1 and [ln.split(",")[0] for ln in out.splitlines()[:-1]] == \
        ["::error file=other.py"]


def test_suppression_of_a_helper_diagnostic_at_the_call_site(tmp_path):
    from ave_core.check import FileReport
    from ave_core.diagnostics import Location, Related

    kernel = write(tmp_path, "k.py", "x = 1\ny = helper()  # ave: ignore[AVE110]\n")
    helper = write(tmp_path, "h.py", "def helper():\n    return 1\n")
    call = Related(Location(str(kernel), Range.of(1, 4, 1, 12)), "called here")
    d1 = Diagnostic("AVE110", "in helper", str(helper), Range.of(1, 4, 1, 12), related=[call])
    d2 = Diagnostic("AVE105", "in helper", str(helper), Range.of(1, 4, 1, 12), related=[call])
    fr = FileReport(str(kernel), True, [], [d1, d2])
    assert cli.Suppressions().apply(fr) == 1 and fr.diagnostics == [d2]
    # a comment in the helper itself works too
    helper.write_text("def helper():\n    return 1  # ave: ignore\n", "utf-8")
    fr = FileReport(str(kernel), True, [], [d2])
    assert cli.Suppressions().apply(fr) == 1 and fr.diagnostics == []


# --- --fail-on with every format (fake front end: one warning) -----------------------------


@pytest.fixture
def warning_frontend(monkeypatch):
    """A front end that reports ``# DIAG CODE severity message`` comments."""

    def compile_source(text, path, *, workspace=None):
        src = SourceText(text, path)
        diags = []
        for i, line in enumerate(src.lines):
            if "# DIAG " in line:
                col = line.index("# DIAG ")
                _, _, code, sev, msg = line[col:].split(" ", 4)
                start = src.position_from_char(i, col)
                diags.append(Diagnostic(code, msg, path, Range(start, start),
                                        severity=Severity.from_label(sev)))
        return types.SimpleNamespace(uses_ave=True, diagnostics=diags, kernels=[])

    mod = types.ModuleType("ave_core.compiler.frontend")
    mod.compile_source = compile_source
    monkeypatch.setitem(sys.modules, "ave_core.compiler.frontend", mod)


@pytest.mark.parametrize("fmt", cli.FORMATS)
def test_fail_on_with_every_format(warning_frontend, tmp_path, capsys, fmt):
    warn = str(write(tmp_path, "w.py", "x = 1  # DIAG AVE204 warning vacuous\n"))
    info = str(write(tmp_path, "i.py", "x = 1  # DIAG AVE101 info fyi\n"))
    err = str(write(tmp_path, "e.py", "x = 1  # DIAG AVE102 error unknown\n"))
    for path, fail_on, expected in [(warn, "error", 0), (warn, "warning", 1),
                                    (info, "warning", 0), (err, "error", 1),
                                    (err, "warning", 1)]:
        rc, out, _ = run(capsys, "--check", "--format", fmt, "--fail-on", fail_on, path)
        assert rc == expected, (fmt, path, fail_on)
        assert out
        if fmt == "sarif":
            validate_sarif(json.loads(out))
    rc, out, _ = run(capsys, "--check", "--format", fmt, "--fail-on", "warning",
                     "--output", str(tmp_path / "out.txt"), warn)
    assert rc == 1 and out == "" and (tmp_path / "out.txt").read_text("utf-8")


def test_usage_errors_of_the_new_options(capsys):
    assert run(capsys, "--watch")[0] == 2
    assert run(capsys, "--check", "x.py", "--format", "sarif2")[0] == 2
    rc, out, _ = run(capsys, "--help")
    assert rc == 0 and "--watch" in out and "sarif" in out and "github" in out


# --- progress ------------------------------------------------------------------------------


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_and_for_several_files(monkeypatch):
    monkeypatch.setitem(sys.modules, "rich", None)       # the fallback counter
    monkeypatch.delenv("TERM", raising=False)
    tty, pipe = FakeTTY(), io.StringIO()
    n = cli.PROGRESS_MIN_FILES
    assert cli.make_progress(n, pipe, tty) is None
    assert cli.make_progress(n, tty, pipe) is None
    assert cli.make_progress(n - 1, tty, tty) is None
    monkeypatch.setenv("TERM", "dumb")
    assert cli.make_progress(n, tty, tty) is None
    monkeypatch.delenv("TERM")
    err = FakeTTY()
    progress = cli.make_progress(n, FakeTTY(), err)
    assert progress is not None and progress._rich is None
    progress.update(0, "a/long/name.py")
    progress.update(1, "b.py")
    progress.update(2, None)
    text = err.getvalue()
    assert "checking [1/4] a/long/name.py" in text and "checking [2/4] b.py" in text
    assert text.endswith("\r" + " " * len("checking [1/4] a/long/name.py") + "\r")


def test_progress_during_a_check(warning_frontend, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "rich", None)
    monkeypatch.delenv("TERM", raising=False)
    for i in range(cli.PROGRESS_MIN_FILES):
        write(tmp_path, f"f{i}.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "_isatty", lambda stream: True)
    rc, out, err = run(capsys, "--check", ".")
    assert rc == 0 and out.startswith("checked 4 files")
    assert "checking [4/4] ./f3.py" in err and err.endswith("\r")
    monkeypatch.setattr(cli, "_isatty", lambda stream: False)
    rc, out, err = run(capsys, "--check", ".")
    assert rc == 0 and err == ""


# --- SARIF fixes ---------------------------------------------------------------------------


def _apply(text: str, rep: dict) -> str:
    """Apply one SARIF replacement (1-based lines and UTF-16 columns, ASCII text here)."""
    lines = text.splitlines(keepends=True)
    r = rep["deletedRegion"]

    def offset(line1: int, col1: int) -> int:
        return sum(len(x) for x in lines[:line1 - 1]) + col1 - 1

    a, b = offset(r["startLine"], r["startColumn"]), offset(r["endLine"], r["endColumn"])
    return text[:a] + rep["insertedContent"]["text"] + text[b:]


def test_sarif_carries_the_quick_fixes(capsys, monkeypatch):
    """A finding with a mechanical fix gets SARIF ``fixes``: the server's quick fix (title
    and edit); applied, the missing barrier's fix leaves valid Python with the barrier
    before the racing statement (the real analysis of examples/broken/gemm_missing_barrier.py)."""
    import ast

    from ave_lsp.server.fixes import edit_for

    monkeypatch.chdir(ROOT)
    path = "examples/broken/gemm_missing_barrier.py"
    rc, out, _ = run(capsys, "--check", "--format", "sarif", "--jobs", "1", path)
    log = json.loads(out)
    validate_sarif(log)
    text = (ROOT / path).read_text("utf-8")
    rc2, out2, _ = run(capsys, "--check", "--format", "json", "--jobs", "1", path)
    diags = json.loads(out2)["diagnostics"]
    results = log["runs"][0]["results"]
    assert rc == rc2 == 1 and len(results) == len(diags)
    races = [(i, r, d) for i, (r, d) in enumerate(zip(results, diags))
             if r["ruleId"] == "AVE207"]
    assert races
    carried: dict = {}
    for i, r, d in races:
        if "fixes" not in r:
            # the A-tile and the B-tile races share their fix (one barrier before the
            # loads): the first result carries it, the other names that result
            j = r["properties"]["fixedWith"]
            assert j < i and results[j]["fixes"] and diags[j]["fix"] == d["fix"]
            continue
        key = json.dumps(r["fixes"], sort_keys=True)
        assert key not in carried           # an edit is in the log once
        carried[key] = i
        (fix,) = r["fixes"]
        title, edit = edit_for(d["fix"], text)
        assert fix["description"]["text"] == title
        (change,) = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == path
        (rep,) = change["replacements"]
        reg = rep["deletedRegion"]
        assert (reg["startLine"], reg["startColumn"]) == (edit.range.start.line + 1, 1)
        assert (reg["endLine"], reg["endColumn"]) == (reg["startLine"], 1)    # an insertion
        fixed = _apply(text, rep)
        ast.parse(fixed)
        assert fixed.splitlines()[d["fix"]["line"]] == d["fix"]["indent"] + "ave.barrier()"
    # findings without a fix have none
    assert all("fixes" not in r for r, d in zip(results, diags) if not d.get("fix"))


def test_sarif_fix_replacement_of_a_range(tmp_path):
    """A fix that replaces text (an ave.view extent) becomes a replacement of exactly that
    region; a fix that no longer applies to the file (other text there) is left out."""
    text = "import ave_core.lang as ave\nv = ave.view(sA, (64, 64), dtype=ave.f32)\n"
    path = write(tmp_path, "k.py", text)
    col = text.splitlines()[1].index("64)")
    fix = {"kind": "view_shape", "old": "64", "new": "32", "shape": [64, 32],
           "dtype": "f32", "bytes": 8192,
           "range": {"start": {"line": 1, "character": col},
                     "end": {"line": 1, "character": col + 2}}}
    diag = {"code": "AVE106", "severity": "error", "message": "m", "file": str(path),
            "range": fix["range"], "notes": [], "related": [], "witness": None, "fix": fix}
    (f,) = sarif.sarif_fixes(diag, sarif.Sources(), str(tmp_path))
    (rep,) = f["artifactChanges"][0]["replacements"]
    assert rep["deletedRegion"] == {"startLine": 2, "startColumn": col + 1, "endLine": 2,
                                    "endColumn": col + 3}
    assert _apply(text, rep) == text.replace("(64, 64)", "(64, 32)")
    stale = dict(diag, fix=dict(fix, old="48"))
    assert sarif.sarif_fixes(stale, sarif.Sources(), str(tmp_path)) == []


_HELPER = """import ave_core.lang as ave


def stage(A, s, BM, BK, tiled):
    ave.copy(A[0:BM, 0:BK], s, vector_bytes=16)
    a = ave.ldmatrix(s, tiled.a){H}
    return a
"""
_CALLER = """import ave_core.lang as ave
from h3 import stage


@ave.kernel(threads=128)
def kern(A: ave.Tensor[ave.bf16, 2], BM: ave.constexpr = 64, BK: ave.constexpr = 32):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    s = ave.alloc((BM, BK), ave.bf16, space="shared")
    a = stage(A, s, BM, BK, tiled){K}
"""


@pytest.mark.parametrize("where", ["none", "call", "helper"])
def test_a_helper_finding_is_shown_and_suppressed_at_its_call(tmp_path, where):
    # A race inside a helper of another file: the editor showed it at the top of the
    # kernel's file (its first related location there), '# ave: ignore' on the call did
    # nothing, and a comment on the helper's own line worked for --check only (a review
    # helper). Now: the call (line 9, 0-based) is its first related location, the
    # editor's range, and a comment there or on the helper's line drops it in both.
    (tmp_path / "h3.py").write_text(_HELPER.replace(
        "{H}", "  # ave: ignore[AVE207]" if where == "helper" else ""), "utf-8")
    k = tmp_path / "k3.py"
    k.write_text(_CALLER.replace("{K}", "  # ave: ignore" if where == "call" else ""),
                 "utf-8")
    out, p = _editor_and_check(k, tmp_path)
    if where != "none":
        assert out.items == [] and "1 suppressed" in p.stdout, (out.items, p.stdout)
        return
    (d,) = out.items
    assert d.code == "AVE207" and d.range.start.line == 9
    assert d.message.startswith("h3.py:6:9: shared-memory race")
    assert d.related_information[1].message == "the call of the helper it is in"
    assert "k3.py:10:9: related: the call of the helper it is in" in p.stdout


_OUTER = """import ave_core.lang as ave
from {INNER_MOD} import stage_inner


def stage(A, s, BM, BK, tiled):
    return stage_inner(A, s, BM, BK, tiled)
{SAME}"""
_INNER = """import ave_core.lang as ave


def stage_inner(A, s, BM, BK, tiled):
    ave.copy(A[0:BM, 0:BK], s, vector_bytes=16)
    a = ave.ldmatrix(s, tiled.a)
    return a
"""


def _editor_and_check(k, root, *args):
    """The kernel file ``k`` checked by the language server's worker (its items) and by
    ``ave-lsp --check k -j1 *args`` in ``root`` (the completed process)."""
    from ave_lsp.server.server import _check_in_worker
    from ave_lsp.server.settings import Settings

    out = _check_in_worker(k.as_uri(), str(k), k.read_text("utf-8"), str(root), Settings())
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", str(k), "-j1", *args],
                       capture_output=True, text=True, cwd=str(root), timeout=120)
    return out, p


def _outer_text(layout: str) -> str:
    """h3.py's stage calling stage_inner: from h4.py, or defined in h3.py itself."""
    if layout == "three_files":
        return _OUTER.replace("{INNER_MOD}", "h4").replace("{SAME}", "")
    return _OUTER.replace("from {INNER_MOD} import stage_inner\n", "").replace(
        "{SAME}", "\n\n" + _INNER.split("\n\n\n", 1)[1])


@pytest.mark.parametrize("layout", ["three_files", "inner_in_helper_file"])
@pytest.mark.parametrize("suppress", [False, True])
def test_a_finding_two_helpers_deep_is_shown_at_the_kernels_call(tmp_path, layout,
                                                                 suppress):
    # kernel -> stage (h3.py) -> stage_inner (h4.py, or h3.py itself): the inlining chain
    # was innermost first while every reader took its first entry for the kernel's call:
    # the race was shown at line 0 of the kernel's file (the same-file variant listed no
    # call at all), '# ave: ignore' on the call did nothing, and one on the import line
    # suppressed it (a review helper). Now the kernel's call (0-based line 9) is the
    # editor's range and its comment drops it.
    if layout == "three_files":
        (tmp_path / "h4.py").write_text(_INNER, "utf-8")
    outer = _outer_text(layout)
    (tmp_path / "h3.py").write_text(outer, "utf-8")
    k = tmp_path / "k3.py"
    k.write_text(_CALLER.replace("{K}", "  # ave: ignore[AVE207]" if suppress else ""),
                 "utf-8")
    out, p = _editor_and_check(k, tmp_path)
    if suppress:
        assert out.items == [] and "1 suppressed" in p.stdout, (out.items, p.stdout)
        return
    (d,) = out.items
    inner = "h4.py" if layout == "three_files" else "h3.py"
    line = 1 + (tmp_path / inner).read_text("utf-8").splitlines().index(
        "    a = ave.ldmatrix(s, tiled.a)")
    assert d.code == "AVE207" and d.range.start.line == 9, d
    assert d.message.startswith(f"{inner}:{line}:9: shared-memory race"), d.message
    assert "k3.py:10:9: related: the call of the helper it is in" in p.stdout, p.stdout


@pytest.mark.parametrize("layout", ["three_files", "inner_in_helper_file"])
def test_a_comment_on_the_call_between_suppresses_a_finding_two_helpers_deep(tmp_path,
                                                                            layout):
    # kernel -> stage (h3.py) -> stage_inner: '# ave: ignore' on stage's call of
    # stage_inner (h3.py line 5, 0-based) did nothing. Now that call is a related location
    # ("through this call", after the kernel's call) and its comment drops the finding, in
    # the editor and in --check alike.
    call = "    return stage_inner(A, s, BM, BK, tiled)"
    for suppress in (False, True):
        if layout == "three_files":
            (tmp_path / "h4.py").write_text(_INNER, "utf-8")
        outer = _outer_text(layout)
        if suppress:
            outer = outer.replace(call, call + "  # ave: ignore[AVE207]")
        (tmp_path / "h3.py").write_text(outer, "utf-8")
        k = tmp_path / "k3.py"
        k.write_text(_CALLER.replace("{K}", ""), "utf-8")
        out, p = _editor_and_check(k, tmp_path)
        if suppress:
            assert out.items == [] and "1 suppressed" in p.stdout, (out.items, p.stdout)
            continue
        (d,) = out.items
        line = outer.splitlines().index(call)
        assert d.code == "AVE207" and d.range.start.line == 9, d
        rel = [(r.message, r.location.uri.rsplit("/", 1)[1], r.location.range.start.line)
               for r in d.related_information]
        assert rel[1] == ("the call of the helper it is in", "k3.py", 9), rel
        assert rel[2] == ("through this call", "h3.py", line), rel
        assert f"h3.py:{line + 1}:12: related: through this call" in p.stdout, p.stdout


_OUTER_TWICE = """import ave_core.lang as ave
from h4 import stage_inner


def stage(A, s, BM, BK, tiled):
    s2 = ave.alloc((BM, BK), ave.bf16, space="shared")
    a = stage_inner(A, s, BM, BK, tiled){C1}
    b = stage_inner(A, s2, BM, BK, tiled){C2}
    return a
"""


@pytest.mark.parametrize("comment", [None, 1, 2, (1, 2)])
def test_each_path_of_calls_is_its_own_finding(tmp_path, comment):
    # stage calls stage_inner (which races) on two lines, through one kernel call: two
    # findings, one per path. They were one (keyed by the kernel's call alone): a comment
    # on line 7 of h3.py suppressed the race made through line 8 too, and one on line 8
    # did nothing (a review helper).
    (tmp_path / "h4.py").write_text(_INNER, "utf-8")
    on = {comment} if isinstance(comment, int) else set(comment or ())
    outer = _OUTER_TWICE
    for n in (1, 2):
        outer = outer.replace("{C%d}" % n, "  # ave: ignore[AVE207]" if n in on else "")
    (tmp_path / "h3.py").write_text(outer, "utf-8")
    k = tmp_path / "k3.py"
    k.write_text(_CALLER.replace("{K}", ""), "utf-8")
    out, p = _editor_and_check(k, tmp_path, "--format", "json")
    rep = json.loads(p.stdout)
    lines = outer.splitlines()
    call_line = {n: next(i for i, ln in enumerate(lines)
                         if ln.startswith(("    a = stage_inner", "    b = stage_inner")[n - 1]))
                 for n in (1, 2)}
    left = sorted(n for n in (1, 2) if n not in on)
    via = sorted(next(r["range"]["start"]["line"] for r in d["related"]
                      if r["message"] == "through this call") for d in rep["diagnostics"])
    assert via == [call_line[n] for n in left], rep["diagnostics"]
    assert all(d["code"] == "AVE207" for d in rep["diagnostics"])
    assert rep["summary"].get("suppressed", 0) == len(on), rep["summary"]
    assert len(out.items) == len(left)
    assert all(d.range.start.line == 9 for d in out.items)


_READ_HELPER = """import ave_core.lang as ave


def read(s, tiled):
    a = ave.ldmatrix(s, tiled.a)
    return a
"""
_TWICE = """import ave_core.lang as ave
from h5 import read


@ave.kernel(threads=128)
def kern(A: ave.Tensor[ave.bf16, 2], BM: ave.constexpr = 64, BK: ave.constexpr = 32):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    s1 = ave.alloc((BM, BK), ave.bf16, space="shared")
    s2 = ave.alloc((BM, BK), ave.bf16, space="shared")
    ave.copy(A[0:BM, 0:BK], s1, vector_bytes=16)
    ave.barrier()
    a = read(s1, tiled)
    ave.copy(A[0:BM, 0:BK], s2, vector_bytes=16)
    b = read(s2, tiled){K}
"""


@pytest.mark.parametrize("comment_on", [None, 12, 14])
def test_a_finding_in_a_helper_called_twice_is_at_the_call_that_races(tmp_path, comment_on):
    # read() after the barrier (line 13) is safe; the second read() (line 15) races with
    # the copy into s2 before it. The finding was shown at the first call (every copy of
    # the helper's op mapped to it), its comment suppressed it and one on line 15 did
    # nothing (a review helper).
    (tmp_path / "h5.py").write_text(_READ_HELPER, "utf-8")
    lines = _TWICE.replace("{K}", "").splitlines()
    if comment_on is not None:
        lines[comment_on] += "  # ave: ignore[AVE207]"
    k = tmp_path / "k5.py"
    k.write_text("\n".join(lines) + "\n", "utf-8")
    out, p = _editor_and_check(k, tmp_path)
    if comment_on == 14:
        assert out.items == [] and "1 suppressed" in p.stdout, (out.items, p.stdout)
        return
    (d,) = out.items
    assert d.code == "AVE207" and d.range.start.line == 14, d
    assert "k5.py:15:9: related: the call of the helper it is in" in p.stdout, p.stdout


@pytest.mark.parametrize("comment_on", [None, 7, 8])
def test_a_violated_assertion_in_a_helper_called_twice(tmp_path, comment_on):
    # chk(s[0], s[1]) holds, chk(s[1], s[1]) fails: the assertion was reported at the
    # first call (the result kept the first copy's location), whose comment hid it (a
    # review helper)
    (tmp_path / "hchk.py").write_text("import ave_core.lang as ave\n\n\ndef chk(a, b):\n"
                                      "    ave.assert_disjoint(a, b)\n", "utf-8")
    lines = ["import ave_core.lang as ave", "from hchk import chk", "", "",
             "@ave.kernel(threads=64)",
             "def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):",
             '    s = ave.alloc((2, 64), ave.f32, space="shared")',
             "    chk(s[0], s[1])", "    chk(s[1], s[1])"]
    if comment_on is not None:
        lines[comment_on] += "  # ave: ignore[AVE202]"
    k = tmp_path / "kchk.py"
    k.write_text("\n".join(lines) + "\n", "utf-8")
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", str(k), "-j1"],
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    if comment_on == 8:
        assert "1 suppressed" in p.stdout and "0 errors" in p.stdout, p.stdout
    else:
        assert "kchk.py:9:5: related: the call of the helper it is in" in p.stdout, p.stdout


def test_a_comment_on_one_call_of_a_helper_leaves_the_other_calls_findings(tmp_path):
    # Both calls fail: the analysis kept one finding for the helper's op (the first
    # call's), so `# ave: ignore` on the first call hid the second's too (a review
    # helper). Each call of an imported helper is a finding of its own now.
    (tmp_path / "hchk.py").write_text("import ave_core.lang as ave\n\n\ndef chk(a, b):\n"
                                      "    ave.assert_disjoint(a, b)\n", "utf-8")
    lines = ["import ave_core.lang as ave", "from hchk import chk", "", "",
             "@ave.kernel(threads=64)",
             "def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):",
             '    s = ave.alloc((2, 64), ave.f32, space="shared")',
             "    chk(s[0], s[0])  # ave: ignore[AVE202]", "    chk(s[1], s[1])"]
    k = tmp_path / "kchk2.py"
    k.write_text("\n".join(lines) + "\n", "utf-8")
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", str(k), "-j1",
                        "--format", "json"],
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    out = json.loads(p.stdout)
    (d,) = out["diagnostics"]
    assert d["code"] == "AVE202", d
    rel = d["related"][0]
    assert rel["message"] == "the call of the helper it is in"
    assert rel["range"]["start"]["line"] == 8, d
    # without the comment: two findings, one per call
    lines[7] = "    chk(s[0], s[0])"
    k.write_text("\n".join(lines) + "\n", "utf-8")
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", str(k), "-j1",
                        "--format", "json"],
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    ds = json.loads(p.stdout)["diagnostics"]
    calls = sorted(d["related"][0]["range"]["start"]["line"] for d in ds)
    assert calls == [7, 8], ds


_READER = """import ave_core.lang as ave


def read(s, tiled):
    a = ave.ldmatrix(s, tiled.a)
    return a


def other(x):
    y = x
    return y
"""


@pytest.mark.parametrize("inside", [True, False])
def test_a_helper_race_in_another_file_gets_a_fix_in_the_right_file(tmp_path, inside):
    # The barrier between two accesses goes before the later one's statement at the
    # first level of calls where the accesses' statements differ. Both in the helper
    # (copy, then ldmatrix): in the helper, before its ldmatrix. The copy in the kernel,
    # the read in the helper: before the helper's call, in the kernel's file -- not the
    # diagnostic's file, so advice naming it, no fix (the JSON fix named line 9 of k3.py
    # as a line of h3.py and SARIF inserted `ave.barrier()` into h3.py after the helper's
    # `return`; a review helper).
    if inside:
        (tmp_path / "h3.py").write_text(_HELPER.replace("{H}", "") +
                                        "\n\ndef other(x):\n    y = x\n    return y\n", "utf-8")
        caller = _CALLER.replace("{K}", "")
    else:
        (tmp_path / "h3.py").write_text(_READER, "utf-8")
        caller = _CALLER.replace("from h3 import stage", "from h3 import read").replace(
            "    a = stage(A, s, BM, BK, tiled){K}",
            "    ave.copy(A[0:BM, 0:BK], s, vector_bytes=16)\n    a = read(s, tiled)")
    k = tmp_path / "k3.py"
    k.write_text(caller, "utf-8")
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "k3.py", "-j1",
                        "--format", "json"], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    (d,) = json.loads(p.stdout)["diagnostics"]
    assert d["code"] == "AVE207" and d["file"].endswith("h3.py"), d
    s = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "k3.py", "-j1",
                        "--format", "sarif"], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    (r,) = json.loads(s.stdout)["runs"][0]["results"]
    if not inside:
        assert d.get("fix") is None, d
        assert "insert ave.barrier() before line 11 of k3.py (the helper's call)" in d["notes"]
        assert "fixes" not in r
        return
    assert d["fix"]["kind"] == "insert_barrier" and d["fix"]["line"] == 5, d
    assert "insert ave.barrier() before line 6 (quick fix)" in d["notes"]
    (fx,) = r["fixes"]
    (ch,) = fx["artifactChanges"]
    assert ch["artifactLocation"]["uri"].endswith("h3.py")
    (rep,) = ch["replacements"]
    text = (tmp_path / "h3.py").read_text("utf-8")
    fixed = _apply(text, rep)
    assert fixed.splitlines()[5] == "    ave.barrier()"
    assert fixed.splitlines()[6].startswith("    a = ave.ldmatrix(")
    (tmp_path / "h3.py").write_text(fixed, "utf-8")
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "k3.py", "-j1",
                        "--format", "json"], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    assert json.loads(p.stdout)["diagnostics"] == []


def test_a_helper_fix_shared_by_two_calls_is_in_the_sarif_log_once(tmp_path):
    # A race inside a helper called twice: two findings (one per call) with one fix, the
    # barrier in the helper. Each SARIF result carried it, and a tool applying every
    # result's fixes inserted `ave.barrier()` twice (noticed in an earlier session). The
    # first result carries it; the second names that result in `fixedWith`.
    (tmp_path / "h3.py").write_text(_HELPER.replace("{H}", ""), "utf-8")
    caller = _CALLER.replace("{K}", "").replace(
        "    a = stage(A, s, BM, BK, tiled)",
        "    a = stage(A, s, BM, BK, tiled)\n"
        "    s2 = ave.alloc((BM, BK), ave.bf16, space=\"shared\")\n"
        "    b = stage(A, s2, BM, BK, tiled)")
    (tmp_path / "k3.py").write_text(caller, "utf-8")
    s = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "k3.py", "-j1",
                        "--format", "sarif"], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    results = json.loads(s.stdout)["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["AVE207", "AVE207"], results
    calls = [r["relatedLocations"][0]["physicalLocation"]["region"]["startLine"]
             for r in results]
    assert calls == [10, 12], calls
    (fx,) = results[0]["fixes"]
    assert "fixes" not in results[1]
    assert results[1]["properties"]["fixedWith"] == 0
    (rep,) = fx["artifactChanges"][0]["replacements"]
    text = (tmp_path / "h3.py").read_text("utf-8")
    fixed = _apply(text, rep)
    assert fixed.count("ave.barrier()") == 1
    (tmp_path / "h3.py").write_text(fixed, "utf-8")
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "k3.py", "-j1",
                        "--format", "json"], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    assert json.loads(p.stdout)["diagnostics"] == []


def test_a_call_that_does_not_start_its_line_keeps_the_fix_inside_it(tmp_path):
    # stage's `x = 1; return stage_inner(...)`: both racing accesses are made by that one
    # call, so the barrier goes inside stage_inner, before its ldmatrix. The call has no
    # statement of its own (it does not start its line) and the fix was dropped there,
    # leaving advice only (a review helper).
    (tmp_path / "h4.py").write_text(_INNER, "utf-8")
    outer = _OUTER.replace("{INNER_MOD}", "h4").replace("{SAME}", "").replace(
        "    return stage_inner(", "    x = 1; return stage_inner(")
    (tmp_path / "h3.py").write_text(outer, "utf-8")
    (tmp_path / "k3.py").write_text(_CALLER.replace("{K}", ""), "utf-8")
    p = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "k3.py", "-j1",
                        "--format", "json"], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    (d,) = json.loads(p.stdout)["diagnostics"]
    assert d["code"] == "AVE207" and d["file"].endswith("h4.py"), d
    line = _INNER.splitlines().index("    a = ave.ldmatrix(s, tiled.a)")
    assert d["fix"]["kind"] == "insert_barrier" and d["fix"]["line"] == line, d


def test_a_fix_another_fix_contains_at_the_same_place_is_in_the_sarif_log_once(tmp_path):
    # Two races fixed before the same line: one by `ave.barrier()`, the other by
    # `ave.wait_async(1)` + `ave.barrier()`. Each result carried its own fix, and applying
    # every result's fixes put two barriers there (noticed in an earlier session). The
    # smaller fix is in the larger: the result carrying the larger carries it, the other
    # (and a third with the smaller fix again) name that result in `fixedWith`.
    text = ("import ave_core.lang as ave\n\n\n@ave.kernel(threads=32)\ndef k():\n"
            "    x = 1\n    y = 2\n")
    p = write(tmp_path, "k.py", text)

    def diag(line: int, fix: dict) -> dict:
        d = Diagnostic("AVE207", f"race {line}", str(p), Range.of(line, 4, line, 9)).to_json()
        d["fix"] = fix
        return d

    barrier = {"kind": "insert_barrier", "line": 6, "indent": "    "}
    wait = {"kind": "insert_wait", "line": 6, "indent": "    ", "count": 1, "commit": False}
    other = {"kind": "insert_barrier", "line": 5, "indent": "    "}
    report = {"diagnostics": [diag(6, barrier), diag(6, wait), diag(6, barrier),
                              diag(5, other)], "summary": {}}
    results = sarif.to_sarif(report, cwd=str(tmp_path))["runs"][0]["results"]
    assert "fixes" not in results[0] and results[0]["properties"]["fixedWith"] == 1
    assert results[1]["fixes"] and "fixedWith" not in results[1]["properties"]
    assert "fixes" not in results[2] and results[2]["properties"]["fixedWith"] == 1
    assert results[3]["fixes"] and "fixedWith" not in results[3]["properties"]
    fixed = text
    for r in sorted((r for r in results if "fixes" in r), key=lambda r: -r["fixes"][0][
            "artifactChanges"][0]["replacements"][0]["deletedRegion"]["startLine"]):
        fixed = _apply(fixed, r["fixes"][0]["artifactChanges"][0]["replacements"][0])
    assert fixed.count("ave.barrier()") == 2 and fixed.count("ave.wait_async(1)") == 1
    assert fixed.splitlines()[5:9] == ["    ave.barrier()", "    x = 1",
                                       "    ave.wait_async(1)", "    ave.barrier()"]
