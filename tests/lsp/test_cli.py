"""``ave-lsp --check`` and the check driver, against a fake front end (monkeypatched).

The fake front end stands in for ``ave_core.compiler.frontend.compile_source``: a file
uses Ave when it contains ``import ave_core``; every function decorated with something
containing ``kernel`` is a kernel, with one specialization per ``# CONFIG k=v,...``
comment inside it (or one with no constexprs); a comment ``# DIAG CODE severity message``
yields that diagnostic at the comment; ``# RAISE`` raises a RuntimeError and
``# AVEERROR`` raises an AveError.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pytest

from ave_core import check as check_mod
from ave_core.check import FileReport, check_file, check_paths, group_kernels, iter_python_files
from ave_core.diagnostics import (
    AveError,
    Diagnostic,
    Range,
    Severity,
    SourceText,
    SCHEMA_VERSION,
    report_schema,
    validate_report,
)
from ave_lsp import cli
from ave_lsp.cli import main

ROOT = Path(__file__).resolve().parents[2]


# --- the fake front end --------------------------------------------------------------------


@dataclass
class FakeKernelIR:
    name: str
    line: int
    constexprs: dict = field(default_factory=dict)
    config_index: int | None = None


@dataclass
class FakeFrontendResult:
    uses_ave: bool
    diagnostics: list
    kernels: list


def _parse_value(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(v, v)


def fake_compile_source(text: str, path: str, *, workspace: str | None = None):
    src = SourceText(text, path)
    if "# RAISE" in text:
        raise RuntimeError("fake front end exploded\nsecond line of detail")
    diagnostics, kernels = [], []
    for i, line in enumerate(src.lines):
        if "# AVEERROR" in line:
            raise AveError("AVE111", "constexpr BLOCK has no value",
                           range=src.line_range(i))
        if "# DIAG " in line:
            col = line.index("# DIAG ")
            _, _, code, sev, msg = line[col:].split(" ", 4)
            start = src.position_from_char(i, col)
            diagnostics.append(Diagnostic(code, msg, path, Range(start, start),
                                          severity=Severity.from_label(sev),
                                          notes=["a note"] if "NOTE" in msg else []))
    uses_ave = "import ave_core" in text
    if uses_ave:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and any(
                    "kernel" in ast.unparse(d) for d in node.decorator_list):
                body = ast.get_source_segment(text, node) or ""
                configs = [ln.split("# CONFIG ", 1)[1] for ln in body.splitlines()
                           if "# CONFIG " in ln]
                if not configs:
                    kernels.append(FakeKernelIR(node.name, node.lineno - 1))
                for ci, c in enumerate(configs):
                    cx = {k: _parse_value(v) for k, v in (kv.split("=") for kv in c.split(","))}
                    kernels.append(FakeKernelIR(node.name, node.lineno - 1, cx, ci))
    return FakeFrontendResult(uses_ave, diagnostics, kernels)


@pytest.fixture
def fake_frontend(monkeypatch):
    mod = types.ModuleType("ave_core.compiler.frontend")
    mod.compile_source = fake_compile_source
    mod.calls = []

    def recording(text, path, *, workspace=None):
        mod.calls.append((path, workspace))
        return fake_compile_source(text, path, workspace=workspace)

    mod.compile_source = recording
    monkeypatch.setitem(sys.modules, "ave_core.compiler.frontend", mod)
    return mod


PLAIN = "import os\n\nprint(os.getcwd())\n"

GEMM = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def gemm(A, B, BM=128):
    # CONFIG BM=128,BN=64
    # CONFIG BM=64,BN=64
    pass

@ave.kernel(threads=64)
def softmax(X):
    y = 1  # DIAG AVE105 warning operand has dtype f16, expected f32
'''

BAD = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A):
    s = "é😀"; t = 0  # DIAG AVE106 error view covers 16384 bytes NOTE
'''


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8", newline="")
    return str(p)


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# --- check_file / check_paths --------------------------------------------------------------


def test_check_file_groups_specializations(fake_frontend, tmp_path):
    path = write(tmp_path, "gemm.py", GEMM)
    rep = check_file(path, workspace=str(tmp_path))
    assert isinstance(rep, FileReport) and rep.uses_ave
    assert fake_frontend.calls == [(path, str(tmp_path))]
    assert rep.kernels == [
        {"name": "gemm", "line": 3, "specializations": [
            {"constexprs": {"BM": 128, "BN": 64}, "status": "ok"},
            {"constexprs": {"BM": 64, "BN": 64}, "status": "ok"}]},
        {"name": "softmax", "line": 9, "specializations": [{"constexprs": {}, "status": "ok"}]},
    ]
    assert [d.code for d in rep.diagnostics] == ["AVE105"]
    assert rep.to_json() == {"path": path, "uses_ave": True, "kernels": rep.kernels}


def test_check_file_uses_given_text_without_reading(fake_frontend, tmp_path):
    missing = str(tmp_path / "unsaved.py")
    rep = check_file(missing, GEMM)
    assert rep.uses_ave and [k["name"] for k in rep.kernels] == ["gemm", "softmax"]


def test_group_kernels_orders_and_serialises_values():
    class DType:  # stands in for ave_core.lang's dtypes, which print as their DSL name
        def __str__(self):
            return "bf16"

    bf16 = DType()
    irs = [FakeKernelIR("k", 4, {"DT": bf16, "W": (2, 2)}, 1),
           FakeKernelIR("k", 4, {"DT": "f16", "S": 0.5, "E": True, "X": float("inf")}, 0),
           FakeKernelIR("k", 20, {}, None),      # the same name redefined further down
           FakeKernelIR("j", 30, {}, None)]
    assert group_kernels(irs) == [
        {"name": "k", "line": 4, "specializations": [
            {"constexprs": {"DT": "f16", "S": 0.5, "E": True, "X": "inf"}, "status": "ok"},
            {"constexprs": {"DT": "bf16", "W": "(2, 2)"}, "status": "ok"}]},
        {"name": "k", "line": 20, "specializations": [{"constexprs": {}, "status": "ok"}]},
        {"name": "j", "line": 30, "specializations": [{"constexprs": {}, "status": "ok"}]},
    ]


def test_frontend_exception_becomes_ave900(fake_frontend, tmp_path):
    path = write(tmp_path, "boom.py", "import ave_core.lang as ave\n# RAISE\n")
    rep = check_file(path)
    (d,) = rep.diagnostics
    assert d.code == "AVE900" and d.severity is Severity.ERROR
    assert d.message == "internal error: RuntimeError: fake front end exploded"
    assert d.range == Range.of(0, 0, 0, 0) and d.file == path
    assert "second line of detail" in d.notes
    assert any(n.startswith("raised at ") and "fake_compile_source" in n for n in d.notes)


def test_missing_frontend_module_becomes_ave900(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ave_core.compiler.frontend", None)  # import fails
    (d,) = check_file(write(tmp_path, "x.py", PLAIN)).diagnostics
    assert d.code == "AVE900"
    assert "ModuleNotFoundError" in d.message or "ImportError" in d.message


def test_ave_error_escaping_frontend_is_a_user_diagnostic(fake_frontend, tmp_path):
    path = write(tmp_path, "k.py", "import ave_core.lang as ave\nBLOCK = 1  # AVEERROR\n")
    (d,) = check_file(path).diagnostics
    assert d.code == "AVE111" and d.range == Range.of(1, 0, 1, 21)


def test_non_utf8_file_is_ave901_at_the_bad_byte(fake_frontend, tmp_path):
    p = tmp_path / "latin1.py"
    p.write_bytes(b"import ave_core.lang as ave\r\ny = 'caf\xe9'\n")
    rep = check_file(str(p))
    (d,) = rep.diagnostics
    assert d.code == "AVE901" and not rep.uses_ave and rep.kernels == []
    assert d.range == Range.of(1, 8, 1, 8)
    assert "not UTF-8" in d.message and "0xe9" in d.message
    assert fake_frontend.calls == []


@pytest.mark.parametrize("enc", ["utf-16", "utf-16-be", "utf-32"])
def test_a_utf16_or_utf32_file_is_ave901(tmp_path, enc):
    # saved as UTF-16 with a byte order mark (some Windows editors): "ave_core" is not among
    # its bytes, and the kernel was skipped with exit 0 (a review helper)
    text = "import ave_core.lang as ave\nx = 1\n"
    data = text.encode(enc)
    if enc == "utf-16-be":
        data = b"\xfe\xff" + data
    p = tmp_path / "k.py"
    p.write_bytes(data)
    rep = check_file(str(p))
    (d,) = rep.diagnostics
    assert d.code == "AVE901" and "UTF-" in d.message and "byte order mark" in d.message
    # a UTF-16 file that is not Ave's gets nothing
    p.write_bytes("x = 1\n".encode("utf-16"))
    assert check_file(str(p)).diagnostics == []


def test_non_utf8_file_without_ave_gets_nothing(tmp_path):
    # a file that does not use Ave gets nothing, undecodable or not (it was an AVE901
    # error, failing CI over a tree Python itself reads; a review helper)
    p = tmp_path / "legacy.py"
    p.write_bytes(b"x = 1\ny = 'caf\xe9'\n")
    rep = check_file(str(p))
    assert rep.diagnostics == [] and not rep.uses_ave


def test_pep263_encoding_is_honoured(tmp_path):
    # `# -*- coding: latin-1 -*-`: Python reads the file as latin-1, and so does Ave (the
    # kernel's error is found, at the right UTF-16 column past the non-ASCII comment)
    p = tmp_path / "k.py"
    p.write_bytes(b"# -*- coding: latin-1 -*-\nimport ave_core.lang as ave\n\n\n"
                  b"@ave.kernel(threads=128)\ndef k(A: ave.Tensor[ave.bf16, 2]):\n"
                  b"    x = 'caf\xe9'; ave.barrier(1)\n")
    rep = check_file(str(p))
    (d,) = rep.diagnostics
    assert rep.uses_ave and d.code == "AVE104" and d.range.start.line == 6
    assert d.range.start.character == len("    x = 'cafe'; ")


def test_unreadable_path_is_ave901(fake_frontend, tmp_path):
    rep = check_file(str(tmp_path / "gone.py"))
    (d,) = rep.diagnostics
    assert d.code == "AVE901" and "cannot read" in d.message


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_permission_denied_is_ave901(fake_frontend, tmp_path):
    path = write(tmp_path, "secret.py", PLAIN)
    os.chmod(path, 0)
    try:
        (d,) = check_file(path).diagnostics
    finally:
        os.chmod(path, 0o644)
    assert d.code == "AVE901"


def test_bom_is_dropped_and_line_ends_kept(fake_frontend, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(fake_frontend, "compile_source",
                        lambda text, path, workspace=None: seen.append(text) or
                        fake_compile_source(text, path))
    p = tmp_path / "bom.py"
    p.write_bytes(b"\xef\xbb\xbfx = 1\r\ny = 2\r")
    assert check_file(str(p)).diagnostics == []
    assert seen == ["x = 1\r\ny = 2\r"]


def test_iter_python_files(tmp_path):
    for name in ["b.py", "a.py", "notes.txt", "sub/c.py", "sub/deeper/d.py",
                 ".hidden/h.py", "__pycache__/p.py", ".venv/lib/v.py",
                 "node_modules/n.py", "sub/.git/g.py"]:
        write(tmp_path, name, PLAIN)
    other = write(tmp_path / "..", f"{tmp_path.name}_explicit.txt", PLAIN)
    root = str(tmp_path)
    files = iter_python_files([root, other, os.path.join(root, "a.py"), "does-not-exist.py"])
    rel = [os.path.relpath(f, root) for f in files[:4]]
    assert rel == ["a.py", "b.py", os.path.join("sub", "c.py"),
                   os.path.join("sub", "deeper", "d.py")]
    # explicit files are kept as given, whatever the suffix; duplicates dropped
    assert files[4:] == [other, "does-not-exist.py"]
    # an explicitly named hidden directory is walked
    assert iter_python_files([os.path.join(root, ".hidden")]) == [
        os.path.join(root, ".hidden", "h.py")]


def test_check_paths_report_validates(fake_frontend, tmp_path):
    write(tmp_path, "gemm.py", GEMM)
    write(tmp_path, "plain.py", PLAIN)
    report = check_paths([str(tmp_path)])
    validate_report(report)
    assert report["summary"] == {"files": 2, "kernels": 2, "errors": 0, "warnings": 1,
                                 "infos": 0, "specializations": 3, "proved": 0,
                                 "violated": 0, "unknown": 0, "vacuous": 0}
    assert [f["uses_ave"] for f in report["files"]] == [True, False]


# --- the command line ----------------------------------------------------------------------


def test_plain_file_no_diagnostics_exit_0(fake_frontend, tmp_path, capsys):
    path = write(tmp_path, "plain.py", PLAIN)
    rc, out, err = run(capsys, "--check", path)
    assert rc == 0 and err == ""
    assert out == "checked 1 file, 0 kernels (0 specializations): 0 errors, 0 warnings\n"


def test_text_format_exact_lines(fake_frontend, tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BAD)
    gemm = write(tmp_path, "gemm.py", GEMM)
    plain = write(tmp_path, "plain.py", PLAIN)
    rc, out, err = run(capsys, "--check", str(tmp_path))
    assert rc == 1 and err == ""
    line = BAD.splitlines()[4]
    col = line.index("# DIAG") + 1 + 1       # 1-based, and 😀 counts two UTF-16 units
    gline = GEMM.splitlines()[10]
    assert out.splitlines() == [
        f"{bad}:5:{col}: error AVE106 view covers 16384 bytes NOTE",
        "    note: a note",
        f"{gemm}:11:{gline.index('# DIAG') + 1}: warning AVE105 operand has dtype f16, expected f32",
        "checked 3 files, 3 kernels (4 specializations): 1 error, 1 warning",
    ]
    assert plain  # checked, silent


def test_related_locations_are_printed(monkeypatch, tmp_path, capsys):
    from ave_core.diagnostics import Location, Related

    def fe(text, path, *, workspace=None):
        d = Diagnostic("AVE110", "operands disagree", path, Range.of(2, 4, 2, 9),
                       related=[Related(Location("helpers.py", Range.of(0, 0, 0, 1)),
                                        "A tagged here")])
        return FakeFrontendResult(True, [d], [])

    mod = types.ModuleType("ave_core.compiler.frontend")
    mod.compile_source = fe
    monkeypatch.setitem(sys.modules, "ave_core.compiler.frontend", mod)
    path = write(tmp_path, "k.py", PLAIN)
    rc, out, _ = run(capsys, "--check", path)
    assert rc == 1
    assert out.splitlines()[:2] == [f"{path}:3:5: error AVE110 operands disagree",
                                    "    helpers.py:1:1: related: A tagged here"]


def test_json_output_validates(fake_frontend, tmp_path, capsys):
    write(tmp_path, "bad.py", BAD)
    write(tmp_path, "gemm.py", GEMM)
    rc, out, err = run(capsys, "--check", "--format", "json", str(tmp_path))
    assert rc == 1 and err == ""
    report = json.loads(out)
    jsonschema.validate(report, report_schema())
    assert report["summary"]["errors"] == 1 and report["summary"]["warnings"] == 1
    assert [d["code"] for d in report["diagnostics"]] == ["AVE106", "AVE105"]
    assert out.startswith('{\n  "version": "1.8"')


def test_fail_on_warning(fake_frontend, tmp_path, capsys):
    path = write(tmp_path, "gemm.py", GEMM)      # one warning, no error
    assert run(capsys, "--check", path)[0] == 0
    assert run(capsys, "--check", path, "--fail-on", "error")[0] == 0
    assert run(capsys, "--check", path, "--fail-on", "warning")[0] == 1
    plain = write(tmp_path, "plain.py", PLAIN)
    assert run(capsys, "--check", "--fail-on", "warning", plain)[0] == 0


def test_info_diagnostics_never_fail(fake_frontend, tmp_path, capsys):
    path = write(tmp_path, "i.py", "x = 1  # DIAG AVE101 info just so you know\n")
    rc, out, _ = run(capsys, "--check", "--fail-on", "warning", path)
    assert rc == 0
    assert out.splitlines()[-1] == \
        "checked 1 file, 0 kernels (0 specializations): 0 errors, 0 warnings, 1 info"


def test_internal_error_in_a_file_is_a_finding(fake_frontend, tmp_path, capsys):
    path = write(tmp_path, "boom.py", "# RAISE\n")
    rc, out, err = run(capsys, "--check", path)
    assert rc == 1 and err == ""
    assert out.splitlines()[0] == \
        f"{path}:1:1: error AVE900 internal error: RuntimeError: fake front end exploded"


def test_output_file(fake_frontend, tmp_path, capsys):
    path = write(tmp_path, "gemm.py", GEMM)
    dest = tmp_path / "out" / "report.json"
    dest.parent.mkdir()
    rc, out, _ = run(capsys, "--check", path, "--format", "json", "--output", str(dest))
    assert rc == 0 and out == ""
    validate_report(json.loads(dest.read_text("utf-8")))
    rc, _, err = run(capsys, "--check", path, "--output", str(tmp_path / "no" / "dir" / "x"))
    assert rc == 2 and "cannot write" in err
    # never over a file checked (it replaced the kernel with the report; a review helper)
    before = open(path, encoding="utf-8").read()
    for flag in ("--output", "--write-baseline"):
        rc, out, err = run(capsys, "--check", str(tmp_path), flag, path)
        assert rc == 2 and f"{flag} {path} is one of the files checked" in err, err
        assert open(path, encoding="utf-8").read() == before


def test_missing_path_is_usage_error(fake_frontend, tmp_path, capsys):
    good = write(tmp_path, "plain.py", PLAIN)
    rc, out, err = run(capsys, "--check", good, str(tmp_path / "nope.py"))
    assert rc == 2 and out == ""
    assert f"no such file or directory: {tmp_path / 'nope.py'}" in err
    assert fake_frontend.calls == []


@pytest.mark.parametrize("argv", [
    ["--check"],                                  # no paths
    ["some.py"],                                  # paths without --check
    ["--check", "x.py", "--format", "xml"],       # bad choice
    ["--check", "x.py", "--fail-on", "info"],
    ["--bogus"],
])
def test_usage_errors_exit_2(argv, capsys):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and "usage: ave-lsp" in err


def test_version(capsys):
    from ave_core import __version__

    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and out == f"ave-lsp {__version__}\n"


def test_help_exits_0(capsys):
    rc, out, _ = run(capsys, "--help")
    assert rc == 0 and "--check" in out and "--fail-on" in out


def test_tool_internal_error_exit_2_with_traceback(fake_frontend, tmp_path, capsys, monkeypatch):
    def broken(*a, **k):
        raise ZeroDivisionError("report builder broke")

    monkeypatch.setattr(check_mod, "build_report", broken)
    rc, out, err = run(capsys, "--check", write(tmp_path, "p.py", PLAIN))
    assert rc == 2
    assert "internal error" in err and "Traceback" in err and "ZeroDivisionError" in err


def test_options_after_paths(fake_frontend, tmp_path, capsys):
    a = write(tmp_path, "a.py", PLAIN)
    b = write(tmp_path, "b.py", PLAIN)
    rc, out, _ = run(capsys, "--check", a, "--format", "json", b)
    assert rc == 0 and json.loads(out)["summary"]["files"] == 2
    assert cli.summary_line(json.loads(out)).startswith("checked 2 files, 0 kernels")


# --- as a process --------------------------------------------------------------------------


def _python(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=60)


def test_module_entry_points():
    from ave_core import __version__

    for mod in ("ave_lsp", "ave_lsp.cli"):
        p = _python("-m", mod, "--version")
        assert p.returncode == 0 and p.stdout == f"ave-lsp {__version__}\n", p.stderr
    # without --check it is the stdio language server: end of input ends it cleanly
    p = subprocess.run([sys.executable, "-m", "ave_lsp"], input="", capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    p = _python("-m", "ave_lsp", "--check", "definitely/not/here.py")
    assert p.returncode == 2 and "no such file or directory" in p.stderr


def _frames(*messages: dict) -> bytes:
    out = b""
    for m in messages:
        body = json.dumps({"jsonrpc": "2.0", **m}).encode()
        out += b"Content-Length: %d\r\n\r\n" % len(body) + body
    return out


@pytest.mark.parametrize("shutdown,status", [(True, 0), (False, 1)])
def test_exit_status_follows_the_protocol(shutdown, status):
    # LSP: exit -> status 0 after a shutdown request, 1 without one (it was always 0; a
    # review helper)
    init = {"id": 1, "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}}}
    msgs = [init, {"method": "initialized", "params": {}}]
    if shutdown:
        msgs.append({"id": 2, "method": "shutdown"})
    msgs.append({"method": "exit"})
    p = subprocess.run([sys.executable, "-m", "ave_lsp"], input=_frames(*msgs),
                       capture_output=True, timeout=60)
    assert p.returncode == status, p.stderr.decode(errors="replace")[-2000:]


def test_cli_import_is_light():
    code = ("import sys, ave_lsp.cli, ave_core.check; "
            "heavy = [m for m in ('z3', 'numpy', 'pygls', 'torch', 'jsonschema') "
            "if m in sys.modules]; print(heavy)")
    p = _python("-c", code)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


@pytest.mark.skipif(importlib.util.find_spec("ave_core.compiler.frontend") is None,
                    reason="the real front end is not there yet")
def test_real_frontend_plain_file(tmp_path):
    path = write(tmp_path, "plain.py", PLAIN)
    p = _python("-m", "ave_lsp.cli", "--check", "--format", "json", path)
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads(p.stdout)
    validate_report(report)
    assert report["diagnostics"] == [] and report["files"][0]["uses_ave"] is False


def test_json_report_keeps_the_quick_fix(capsys):
    """The headless report carries each finding's mechanical fix (``fix``, schema 1.2), as
    the language server's diagnostics do: a missing barrier's fix inserts ``ave.barrier()``
    before the statement of the later access, at its indentation (the real front end and
    analysis on examples/broken/gemm_missing_barrier.py)."""
    path = str(ROOT / "examples" / "broken" / "gemm_missing_barrier.py")
    lines = Path(path).read_text("utf-8").splitlines()
    rc, out, err = run(capsys, "--check", "--format", "json", "--jobs", "1", path)
    assert rc == 1
    report = json.loads(out)
    jsonschema.validate(report, report_schema())
    races = [d for d in report["diagnostics"] if d["code"] == "AVE207"]
    assert races and all(d.get("fix") for d in races)
    for d in races:
        fix = d["fix"]
        assert fix["kind"] == "insert_barrier"
        # the later access's statement starts at fix["line"] (0-based), with that indent
        stmt = lines[fix["line"]]
        assert stmt.startswith(fix["indent"]) and not stmt[len(fix["indent"])].isspace()
        # (one barrier fixes the four races: the note says so, see
        # tests/analysis/test_barrier_coordination.py)
        assert f"insert ave.barrier() before line {fix['line'] + 1} (quick fix; one " \
               "barrier there fixes 4 races)" in d["notes"]
        # applied, the fix leaves valid Python (the ldmatrix race's statement is
        # `a = ave.ldmatrix(...)`: the barrier goes before `a`, not at the call's column)
        fixed = lines[:fix["line"]] + [fix["indent"] + "ave.barrier()"] + lines[fix["line"]:]
        ast.parse("\n".join(fixed))


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
def test_dangling_symlink_in_a_directory_is_skipped(tmp_path):
    # a link to nothing is no file: walking a directory skips it (it was an AVE901 error
    # and exit 1; a review helper); named explicitly, it cannot be read (AVE901)
    from ave_core.check import iter_python_files
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.symlink(tmp_path / "nowhere.py", tmp_path / "dangling.py")
    assert iter_python_files([str(tmp_path)]) == [str(tmp_path / "ok.py")]
    (d,) = check_file(str(tmp_path / "dangling.py")).diagnostics
    assert d.code == "AVE901"


def test_also_in_another_specialization_says_what_it_found_there():
    # One finding per (code, file, range) across specializations: a second one with
    # another message (configs[2] pairs A's rows with A's rows, configs[1] a wrong
    # k-tile) was only "also in the specialization configs[2]", its witness dropped (a
    # review helper). Equal messages still get the short note.
    path = os.path.join(os.path.dirname(__file__), "data", "also_in_spec.py")
    (d,) = [d for d in check_file(path).diagnostics if d.code == "AVE201"
            and "MMA operand pairing" in d.message]
    assert "B holds k=16 (B[k=16, col=0])" in d.message
    also = [n for n in d.notes if n.startswith("also in the specialization configs[2]")]
    assert also == ["also in the specialization configs[2], there: MMA operand pairing "
                    "violated: thread 0 (warp 0, lane 0): A holds row=0 (A[row=0, k=0]) but "
                    "B holds row=8 (A[row=8, k=0])"], d.notes


def test_summary_line_keeps_the_assertions_part_for_analyzed_kernels_without_any():
    """One form for a CI log to parse: a kernel that was analyzed and has no assertion
    still gets `; assertions: 0 proved, ...`; without analysis (no `assertions` in its
    specializations) the part is left out."""
    def report(spec: dict) -> dict:
        return {"summary": {"files": 1, "kernels": 1, "errors": 0, "warnings": 0,
                            "specializations": 1, "proved": 0, "violated": 0,
                            "unknown": 0, "vacuous": 0},
                "files": [{"kernels": [{"specializations": [spec]}]}]}
    analyzed = report({"constexprs": {}, "status": "proved", "assertions": []})
    assert cli.summary_line(analyzed) == (
        "checked 1 file, 1 kernel (1 specialization): 0 errors, 0 warnings; "
        "assertions: 0 proved, 0 violated, 0 unknown, 0 vacuous")
    front_end_only = report({"constexprs": {}, "status": "ok"})
    assert cli.summary_line(front_end_only) == (
        "checked 1 file, 1 kernel (1 specialization): 0 errors, 0 warnings")


_PKG_HELPER = """import ave_core.lang as ave


def fill(X, s):
    ave.copy(X[0, 0:64], s[0], vector_bytes=16)
"""
_PKG_KERNEL = """import ave_core.lang as ave
from mylib_ab.helpers import fill


@ave.kernel(threads=64)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((2, 64), ave.f32, space="shared")
    fill(X, s)
    ave.copy(s[0], Y[0, 0:64], vector_bytes=4)
"""


@pytest.mark.parametrize("cwd, pyproject", [("root", False), ("elsewhere", True)])
def test_check_resolves_package_imports_like_the_editor(tmp_path, cwd, pyproject):
    # `from mylib_ab.helpers import fill` in kernels/k.py: the editor (workspace folder:
    # the project's root) resolves it; --check without --workspace searched only kernels/
    # (AVE113), and `python -m ave_lsp` took the package in the working directory for an
    # installed library (AVE101). Now the workspace defaults to the nearest pyproject's
    # directory, else the working directory: the race of the helper's copy into s[0]
    # with the kernel's read of it, no barrier between (AVE207 at the read, line 9), as
    # in the editor.
    root = tmp_path / "proj"
    (root / "mylib_ab").mkdir(parents=True)
    (root / "kernels").mkdir()
    (root / "mylib_ab" / "helpers.py").write_text(_PKG_HELPER, "utf-8")
    (root / "kernels" / "k.py").write_text(_PKG_KERNEL, "utf-8")
    if pyproject:
        (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", "utf-8")
    where = root if cwd == "root" else tmp_path
    p = _python("-m", "ave_lsp", "--check", str(root / "kernels" / "k.py"), "-j1",
                cwd=where)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "AVE113" not in p.stdout and "AVE101" not in p.stdout, p.stdout
    assert re.search(r"k\.py:9:5: error AVE207 ", p.stdout), p.stdout
    assert "helpers.py:5:5: related: earlier access: ave.copy" in p.stdout, p.stdout


def test_a_comment_on_a_flagged_line_keeps_its_baselined_findings(tmp_path):
    # The baseline's (and SARIF's) fingerprint hashed the whole line, comment included:
    # the editor's "Suppress AVE203 on this line" on a line that also has a baselined
    # AVE207 made that AVE207 new, and CI failed (a review helper). The comment is left
    # out; the code of the line still counts.
    src = (ROOT / "tests" / "lsp" / "data" / "in_flight.py").read_text("utf-8")
    k = tmp_path / "k.py"
    k.write_text(src, "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--write-baseline", "base.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = _python("-m", "ave_lsp", "--check", "k.py", "--format", "json", "-j1",
                cwd=tmp_path)
    diags = json.loads(p.stdout)["diagnostics"]
    lines = src.splitlines()
    shared = {d["range"]["start"]["line"] for d in diags if d["code"] == "AVE203"} & \
        {d["range"]["start"]["line"] for d in diags if d["code"] == "AVE207"}
    assert shared, diags          # a line with an AVE203 and an AVE207
    line = min(shared)
    lines[line] += "  # ave: ignore[AVE203]"
    k.write_text("\n".join(lines) + "\n", "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--baseline", "base.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0 and "suppressed" in p.stdout and "error" not in \
        p.stdout.split("checked")[0], p.stdout
    # a baseline written when the comment was still hashed (the whole stripped line,
    # here with a `# TODO` on the flagged line) keeps matching after the upgrade
    import hashlib
    from ave_lsp.sarif import Sources
    todo = lines[:line] + [lines[line].replace("  # ave: ignore[AVE203]", "  # TODO")] + \
        lines[line + 1:]
    k.write_text("\n".join(todo) + "\n", "utf-8")
    rep = json.loads(_python("-m", "ave_lsp", "--check", "k.py", "--format", "json", "-j1",
                             cwd=tmp_path).stdout)
    src = Sources()
    findings = []
    for d in rep["diagnostics"]:
        ln = d["range"]["start"]["line"]
        parts = [d["code"], "k.py", todo[ln].strip(), src.enclosing_function(str(k), ln)]
        findings.append({"code": d["code"], "file": "k.py",
                         "fingerprint": hashlib.sha256("\0".join(parts).encode()).hexdigest()})
    assert any("# TODO" in todo[d["range"]["start"]["line"]] for d in rep["diagnostics"])
    (tmp_path / "legacy.json").write_text(json.dumps(
        {"version": 1, "tool": "ave-lsp", "findings": findings}), "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--baseline", "legacy.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0 and f"{len(findings)} baselined" in p.stdout, p.stdout
    # the code itself changed: the finding is new
    lines[line] = lines[line].replace("vector_bytes=4", "vector_bytes=4 ")
    lines[line] = lines[line].replace("Y[0, 0:64]", "Y[0, 0: 64]")
    k.write_text("\n".join(lines) + "\n", "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--baseline", "base.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 1 and "AVE207" in p.stdout, p.stdout


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file names must be UTF-8")
def test_a_file_name_that_is_no_utf8(tmp_path):
    # One such file in a checked directory crashed --format sarif and --write-baseline
    # (UnicodeEncodeError in the fingerprint) and made --format json unreadable (a raw
    # 0xFF byte): all three now work; JSON escapes the name (a review helper).
    src = (ROOT / "tests" / "lsp" / "data" / "in_flight.py").read_bytes()
    name = os.fsdecode(b"bad\xff.py")
    try:
        (tmp_path / name).write_bytes(src)
    except (OSError, UnicodeError):
        pytest.skip("the file system takes no such name")
    p = _python("-m", "ave_lsp", "--check", ".", "--format", "json", "-j1", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    report = json.loads(p.stdout.encode("utf-8", "surrogateescape"))
    assert report["files"][0]["path"].endswith(name)
    p = _python("-m", "ave_lsp", "--check", ".", "--format", "sarif", "-j1", cwd=tmp_path)
    assert p.returncode == 1 and "internal error" not in p.stderr, p.stderr
    log = json.loads(p.stdout.encode("utf-8", "surrogateescape"))
    assert log["runs"][0]["results"]
    p = _python("-m", "ave_lsp", "--check", ".", "--write-baseline", "b.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0 and "internal error" not in p.stderr, p.stderr
    p = _python("-m", "ave_lsp", "--check", ".", "--baseline", "b.json", "-j1", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("head", [b"\xef\xbb\xbf", b"# -*- coding: latin-1 -*-\n# caf\xe9\n"])
def test_a_helper_file_is_read_as_python_reads_it(tmp_path, head):
    # A helper saved with a UTF-8 BOM, or declaring latin-1 (PEP 263): Python imports
    # both, the checked file itself was read so, but the helper was "cannot read or
    # parse" (AVE113; a review helper). Now its race is found through the call.
    (tmp_path / "helpers.py").write_bytes(head + _PKG_HELPER.encode("ascii"))
    (tmp_path / "k.py").write_text(_PKG_KERNEL.replace("from mylib_ab.helpers import",
                                                       "from helpers import"), "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "-j1", cwd=tmp_path)
    assert "AVE113" not in p.stdout, p.stdout
    assert re.search(r"k\.py:9:5: error AVE207 ", p.stdout), p.stdout


def test_a_kernel_file_with_a_coding_line_compiles_and_launches(tmp_path, monkeypatch):
    # `--check` honoured `# -*- coding: latin-1 -*-`, but compile_file and the launch
    # path read UTF-8 and raised UnicodeDecodeError (a review helper).
    import numpy as np
    from ave_core.compiler.frontend import compile_file

    body = (b"# -*- coding: latin-1 -*-\n# caf\xe9\nimport ave_core.lang as ave\n\n\n"
            b"@ave.kernel(threads=32)\n"
            b"def twice(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1]):\n"
            b"    L = ave.tv_layout(ave.layout(32, 1), ave.layout(1, 1), (32,))\n"
            b"    x = ave.load(X[0:32], L)\n"
            b"    ave.store(Y[0:32], x + x)\n")
    (tmp_path / "latin_kernel.py").write_bytes(body)
    assert len(compile_file(str(tmp_path / "latin_kernel.py")).kernels) == 1
    monkeypatch.syspath_prepend(str(tmp_path))
    import latin_kernel
    X = np.arange(32, dtype=np.float32)
    Y = np.zeros(32, np.float32)
    latin_kernel.twice[(1,)](X, Y)
    np.testing.assert_array_equal(Y, 2 * X)


def test_editor_and_check_resolve_imports_alike_in_a_repository_of_projects(tmp_path):
    # mono/{pyproject.toml, shared/helpers.py, pkgA/{pyproject.toml, k.py},
    # proj/{pyproject.toml, mylib/helpers.py, kernels/k.py}}: the editor (workspace folder
    # mono/) rejected `from mylib.helpers import` and --check (nearest project) rejected
    # `from shared.helpers import` (a review helper). Both look in every project the file
    # lies in, and in the workspace: the helper's race (AVE207 at the read) in both.
    from ave_lsp.server.server import _check_in_worker
    from ave_lsp.server.settings import Settings

    mono = tmp_path / "mono"
    for d in ("shared", "pkgA", "proj/mylib", "proj/kernels"):
        (mono / d).mkdir(parents=True)
    for d in ("", "pkgA", "proj"):
        (mono / d / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    (mono / "shared" / "helpers.py").write_text(_PKG_HELPER, "utf-8")
    (mono / "proj" / "mylib" / "helpers.py").write_text(_PKG_HELPER, "utf-8")
    ka = mono / "pkgA" / "k.py"
    ka.write_text(_PKG_KERNEL.replace("mylib_ab.helpers", "shared.helpers"), "utf-8")
    kb = mono / "proj" / "kernels" / "k.py"
    kb.write_text(_PKG_KERNEL.replace("mylib_ab.helpers", "mylib.helpers"), "utf-8")
    for k in (ka, kb):
        out = _check_in_worker(k.as_uri(), str(k), k.read_text("utf-8"), str(mono),
                               Settings())
        assert [d.code for d in out.items] == ["AVE207"], out.items
        p = _python("-m", "ave_lsp", "--check", str(k), "-j1", cwd=mono)
        assert "AVE113" not in p.stdout and re.search(r"k\.py:9:5: error AVE207 ", p.stdout), \
            p.stdout


_MOVE = """import ave_core.lang as ave


def move(X, s, Y):
    ave.copy(X[0, 0:64], s, vector_bytes=16)
    ave.copy(s, Y[0, 0:64], vector_bytes=4)
"""


def test_a_baseline_entry_absorbs_one_finding_in_a_whole_run(tmp_path):
    # A race in a helper has one fingerprint whatever kernel reaches it: the entry for
    # a.py's absorbed b.py's too, a new kernel (a review helper). One budget per run now.
    (tmp_path / "helpers.py").write_text(_MOVE, "utf-8")
    for name, rows, row in (("a", 2, 0), ("b", 4, 3)):
        (tmp_path / f"{name}.py").write_text(
            "import ave_core.lang as ave\nfrom helpers import move\n\n\n"
            "@ave.kernel(threads=64)\n"
            f"def k{name}(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):\n"
            f"    s = ave.alloc(({rows}, 64), ave.f32, space=\"shared\")\n"
            f"    move(X, s[{row}], Y)\n", "utf-8")
    p = _python("-m", "ave_lsp", "--check", "a.py", "--write-baseline", "base.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = _python("-m", "ave_lsp", "--check", "a.py", "b.py", "--baseline", "base.json",
                "-j1", cwd=tmp_path)
    assert p.returncode == 1 and "1 error" in p.stdout and "1 baselined" in p.stdout, p.stdout


def test_a_legacy_baseline_with_a_commented_line_and_its_twin(tmp_path):
    # Lines 8 and 14 hold the same code, 8 with a comment. A legacy baseline (whole lines)
    # has three entries; matched greedily, line 8 took line 14's entry (same code) and
    # line 14's finding came back (a review helper).
    import hashlib
    from ave_lsp.sarif import Sources
    lines = ["import ave_core.lang as ave", "", "", "@ave.kernel(threads=64)",
             "def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):",
             '    s = ave.alloc((2, 64), ave.f32, space="shared")',
             "    ave.copy(X[0, 0:64], s[0], vector_bytes=16)",
             "    ave.copy(s[0], Y[0, 0:64], vector_bytes=4)  # TODO: add the barrier",
             "    ave.barrier()",
             "    ave.copy(X[1, 0:64], s[1], vector_bytes=16)",
             "    ave.copy(s[1], Y[1, 0:64], vector_bytes=4)",
             "    ave.barrier()",
             "    ave.copy(X[0, 0:64], s[0], vector_bytes=16)",
             "    ave.copy(s[0], Y[0, 0:64], vector_bytes=4)"]
    k = tmp_path / "k.py"
    k.write_text("\n".join(lines) + "\n", "utf-8")
    rep = json.loads(_python("-m", "ave_lsp", "--check", "k.py", "--format", "json", "-j1",
                             cwd=tmp_path).stdout)
    src = Sources()
    entries = []
    for d in rep["diagnostics"]:
        ln = d["range"]["start"]["line"]
        parts = [d["code"], "k.py", lines[ln].strip(), src.enclosing_function(str(k), ln)]
        entries.append({"code": d["code"], "file": "k.py",
                        "fingerprint": hashlib.sha256("\0".join(parts).encode()).hexdigest()})
    assert len(entries) == 3
    (tmp_path / "legacy.json").write_text(json.dumps(
        {"version": 1, "tool": "ave-lsp", "findings": entries}), "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--baseline", "legacy.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0 and "3 baselined" in p.stdout, p.stdout


_DOUBLE = "import ave_core.lang as ave\n\n\ndef double(x):\n    return x + x\n"
_TWICE_K = """import ave_core.lang as ave
from mylib.helpers import double


@ave.kernel(threads=32)
def twice(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1]):
    L = ave.tv_layout(ave.layout(32, 1), ave.layout(1, 1), (32,))
    x = ave.load(X[0:32], L)
    ave.store(Y[0:32], double(x))
"""
_RUN = """import numpy as np
from mylib.kernels.k import twice
X = np.arange(32, dtype=np.float32); Y = np.zeros(32, np.float32)
twice[(1,)](X, Y)
print("ok", float(Y[3]))
"""


@pytest.mark.parametrize("layout", ["flat", "src"])
def test_a_package_helper_resolves_at_launch_and_in_check(tmp_path, layout):
    # app/mylib/{helpers.py, kernels/k.py} imported as a package: --check was clean but the
    # launch searched only the kernel's directory -- `mylib.helpers` was an installed
    # library: AVE101 (a review helper); a src/ layout failed in --check (AVE113) and at
    # launch. Now the launch also looks in the program's sys.path, --check in the
    # projects' src/.
    root = tmp_path / "app"
    pkg = root / ("src" if layout == "src" else "") / "mylib"
    (pkg / "kernels").mkdir(parents=True)
    for f in (pkg / "__init__.py", pkg / "kernels" / "__init__.py"):
        f.write_text("", "utf-8")
    (pkg / "helpers.py").write_text(_DOUBLE, "utf-8")
    (pkg / "kernels" / "k.py").write_text(_TWICE_K, "utf-8")
    (root / "run.py").write_text(_RUN, "utf-8")
    if layout == "src":
        (root / "pyproject.toml").write_text("[project]\nname = 'mylib'\n", "utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root / "src")] * (layout == "src") + [str(ROOT)]))
    p = subprocess.run([sys.executable, "run.py"], capture_output=True, text=True, cwd=root,
                       env=env, timeout=120)
    assert p.returncode == 0 and "ok 6.0" in p.stdout, p.stdout + p.stderr
    p = _python("-m", "ave_lsp", "--check", str(pkg), "-j1", cwd=root)
    assert p.returncode == 0 and "AVE1" not in p.stdout, p.stdout


def test_the_nearest_project_wins_in_the_editor_and_in_check(tmp_path):
    # mono/mylib/helpers.py (with a barrier) and mono/proj/mylib/helpers.py (without):
    # proj/kernels/k.py's `from mylib.helpers import fill` was mono's in the editor (the
    # workspace folder first: clean) and proj's in --check (a race) -- a review helper.
    # The projects the file lies in come first, nearest first, in both: proj's, a race.
    from ave_lsp.server.server import _check_in_worker
    from ave_lsp.server.settings import Settings

    mono = tmp_path / "mono"
    for d in ("mylib", "proj/mylib", "proj/kernels"):
        (mono / d).mkdir(parents=True)
    for d in ("", "proj"):
        (mono / d / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    (mono / "mylib" / "helpers.py").write_text(
        _PKG_HELPER + "    ave.barrier()\n", "utf-8")
    (mono / "proj" / "mylib" / "helpers.py").write_text(_PKG_HELPER, "utf-8")
    k = mono / "proj" / "kernels" / "k.py"
    k.write_text(_PKG_KERNEL.replace("mylib_ab.helpers", "mylib.helpers"), "utf-8")
    out = _check_in_worker(k.as_uri(), str(k), k.read_text("utf-8"), str(mono), Settings())
    assert [d.code for d in out.items] == ["AVE207"], out.items
    p = _python("-m", "ave_lsp", "--check", str(k), "-j1", cwd=mono)
    assert re.search(r"k\.py:9:5: error AVE207 ", p.stdout), p.stdout


def test_a_declared_encoding_wins_over_utf8():
    # b'\xc3\xa9' in a latin-1 file is two characters, as Python reads it (it was read as
    # UTF-8: one character, other columns; a review helper)
    from ave_core.diagnostics import decode_source
    assert decode_source(b'# -*- coding: latin-1 -*-\nNAME = "\xc3\xa9"\n').endswith(
        'NAME = "\u00c3\u00a9"\n')
    assert decode_source(b"\xef\xbb\xbfx = 1\n") == "x = 1\n"
    with pytest.raises(UnicodeDecodeError):
        decode_source(b"x = '\xff'\n")


def test_a_reader_that_goes_away_is_no_error(tmp_path):
    # `ave-lsp --check . | head -1`: the pipe closes before the report is written. It
    # printed "cannot write None: Broken pipe" and exited 2 (a usage error); now it is
    # quiet and exits with the check's own status (1: the broken example has errors).
    p = subprocess.Popen([sys.executable, "-m", "ave_lsp", "--check", "-j1",
                          str(ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path))
    p.stdout.close()                     # (long before the check writes anything)
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 1, err
    assert "cannot write" not in err and "BrokenPipe" not in err, err


# Findings in a helper from another file, one per call of it (a review helper's round):
# baselines, SARIF fingerprints, GitHub annotations, the JSON assertions and the wait
# advice of several specializations follow the call.
_CHK = "import ave_core.lang as ave\n\n\ndef chk(a, b):\n    ave.assert_disjoint(a, b)\n"


def _calls(tmp_path, *calls, name="k.py"):
    (tmp_path / "hchk.py").write_text(_CHK, "utf-8")
    (tmp_path / name).write_text(
        "import ave_core.lang as ave\nfrom hchk import chk\n\n\n@ave.kernel(threads=64)\n"
        "def k(X: ave.Tensor[ave.f32, 2]):\n"
        '    s = ave.alloc((4, 64), ave.f32, space="shared")\n'
        + "".join(f"    {c}\n" for c in calls), "utf-8")


def _related_call_lines(rep):
    return [d["related"][0]["range"]["start"]["line"] for d in rep["diagnostics"]]


def test_a_baseline_entry_of_one_call_accepts_that_call_only(tmp_path):
    # baselined with one failing call (line 8); a failing call added below it is the new
    # finding -- it took the entry before (the calls had one fingerprint, the new one's
    # message sorted first) and the old call was reported
    _calls(tmp_path, "chk(s[2], s[2])")
    assert _python("-m", "ave_lsp", "--check", "k.py", "--write-baseline", "b.json", "-j1",
                   cwd=tmp_path).returncode == 0
    _calls(tmp_path, "chk(s[2], s[2])", "chk(s[1], s[1])")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--baseline", "b.json", "-j1",
                "--format", "json", cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert rep["summary"]["baselined"] == 1 and _related_call_lines(rep) == [8], p.stdout
    # a new call above both: the two old ones (lines 9, 10 now) stay accepted
    _calls(tmp_path, "chk(s[3], s[3])", "chk(s[2], s[2])", "chk(s[1], s[1])")
    rep = json.loads(_python("-m", "ave_lsp", "--check", "k.py", "--baseline", "b.json",
                             "-j1", "--format", "json", cwd=tmp_path).stdout)
    assert sorted(_related_call_lines(rep)) == [7, 9]


def test_a_baseline_from_before_each_call_was_a_finding_accepts_every_call(tmp_path):
    # an entry of the helper's line alone (how baselines were written before) stood for
    # the finding at every call: an upgrade keeps them accepted
    from ave_lsp.config import _baseline_key
    from ave_lsp.sarif import Sources
    _calls(tmp_path, "chk(s[2], s[2])", "chk(s[1], s[1])", "chk(s[3], s[3])")
    rep = json.loads(_python("-m", "ave_lsp", "--check", "k.py", "--format", "json", "-j1",
                             cwd=tmp_path).stdout)
    assert len(rep["diagnostics"]) == 3
    code, f, fp = _baseline_key(rep["diagnostics"][0], str(tmp_path), Sources(), call=False)
    assert fp != _baseline_key(rep["diagnostics"][0], str(tmp_path), Sources())[2]
    (tmp_path / "old.json").write_text(json.dumps(
        {"version": 1, "tool": "ave-lsp",
         "findings": [{"code": code, "file": f, "fingerprint": fp}]}), "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--baseline", "old.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0 and "3 baselined" in p.stdout, p.stdout


def test_sarif_fingerprints_of_a_helpers_calls_are_their_own(tmp_path):
    # editing one call's line leaves the other call's fingerprint as it was (they had one
    # hash told apart by rank: the untouched call became ":1")
    def fps():
        log = json.loads(_python("-m", "ave_lsp", "--check", "k.py", "--format", "sarif",
                                 "-j1", cwd=tmp_path).stdout)
        out = {}
        for r in log["runs"][0]["results"]:
            line = r["relatedLocations"][0]["physicalLocation"]["region"]["startLine"]
            out[line] = r["partialFingerprints"]["aveFingerprint/v1"]
        return out
    _calls(tmp_path, "chk(s[2], s[2])", "chk(s[1], s[1])")
    before = fps()
    _calls(tmp_path, "chk(s[2], s[2])", "chk(s[3], s[3])")
    after = fps()
    assert before[8] == after[8] and before[9] != after[9]
    assert all(v.endswith(":0") for v in (*before.values(), *after.values()))


def test_github_annotations_name_the_call(tmp_path):
    _calls(tmp_path, "chk(s[2], s[2])", "chk(s[2], s[2])")
    out = _python("-m", "ave_lsp", "--check", "k.py", "--format", "github", "-j1",
                  cwd=tmp_path).stdout.splitlines()
    assert out[0].endswith("(in the call at k.py:8)") and \
        out[1].endswith("(in the call at k.py:9)"), out


def test_json_assertions_of_a_helpers_calls_name_file_and_call(tmp_path):
    _calls(tmp_path, "chk(s[2], s[2])", "chk(s[1], s[2])")
    rep = json.loads(_python("-m", "ave_lsp", "--check", "k.py", "--format", "json", "-j1",
                             cwd=tmp_path).stdout)
    (spec,) = rep["files"][0]["kernels"][0]["specializations"]
    got = [(a["status"], os.path.basename(a["file"]), a["call"]["file"],
            a["call"]["range"]["start"]["line"]) for a in spec["assertions"]]
    assert got == [("violated", "hchk.py", "k.py", 7), ("proved", "hchk.py", "k.py", 8)]


def test_wait_advice_for_a_helper_holds_for_every_specialization(tmp_path):
    # configs N=2 needs wait_async(2), N=1 wait_async(1): the advice (the fix goes before
    # the call, in the kernel's file) kept the first specialization's count, which leaves
    # the race in the second
    (tmp_path / "h5.py").write_text(
        "import ave_core.lang as ave\n\n\ndef read(s, tiled):\n"
        "    a = ave.ldmatrix(s, tiled.a)\n    return a\n", "utf-8")
    (tmp_path / "kw.py").write_text('''import ave_core.lang as ave
from h5 import read


@ave.kernel(threads=128, configs=[dict(N=2), dict(N=1)])
def kern(A: ave.Tensor[ave.bf16, 2], N: ave.constexpr = 1):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    s = ave.alloc((3, 64, 32), ave.bf16, space="shared")
    ave.copy_async(A[0:64, 0:32], s[0], vector_bytes=16)
    ave.commit_async()
    for i in ave.static_range(N):
        ave.copy_async(A[0:64, 0:32], s[i + 1], vector_bytes=16)
        ave.commit_async()
    a = read(s[0], tiled)
''', "utf-8")
    rep = json.loads(_python("-m", "ave_lsp", "--check", "kw.py", "--format", "json", "-j1",
                             cwd=tmp_path).stdout)
    (d,) = [d for d in rep["diagnostics"] if d["code"] == "AVE207" and
            d["file"].endswith("h5.py")]
    assert "insert ave.wait_async(1), ave.barrier() before line 15 of kw.py " \
           "(the helper's call)" in d["notes"], d["notes"]
    assert d["witness"]["advice"]["count"] == 1 and "fix" not in d


# --- a specialization's status counts the checker's findings outside assertions ------------

def _diag(code, severity):
    return Diagnostic(code, "m", "k.py", Range.of(0, 0, 0, 1),
                      severity=Severity.from_label(severity))


@pytest.mark.parametrize("assertions, diags, expected", [
    ([], [], "proved"),
    (["proved", "vacuous"], [], "vacuous"),
    (["proved"], [("AVE203", "warning")], "proved"),        # a warning changes nothing
    (["proved"], [("AVE208", "error")], "violated"),        # an out-of-bounds access
    ([], [("AVE207", "error")], "violated"),                # a race, no assertion at all
    (["vacuous"], [("AVE205", "error")], "unknown"),        # an analysis limit
    (["violated"], [("AVE205", "error")], "violated"),
])
def test_spec_status_is_the_worst_verdict_over_assertions_and_findings(assertions, diags,
                                                                       expected):
    assert check_mod.spec_status(assertions, [_diag(c, s) for c, s in diags]) == expected


def _race_kernel() -> str:
    """The transpose of tests/analysis/test_races.py without its barrier (an AVE207)."""
    from tests.analysis.test_races import TRANSPOSE
    return TRANSPOSE.replace("{BARRIER}", "")


def test_json_status_is_violated_for_findings_outside_assertions(tmp_path):
    # The broken MoE's only finding is an out-of-bounds gather (AVE208; every assertion is
    # proved) in its first specialization (TOPK = 2: the mask t < T * TOPK admits rows
    # past X's T tokens; with the second's TOPK = 1 the same mask is right); a kernel
    # without assertions has a race (AVE207). Those specializations are "violated", and
    # their findings say why; the MoE's second stays "proved".
    race = tmp_path / "race.py"
    race.write_text(_race_kernel())
    moe = str(ROOT / "examples" / "broken" / "moe_gather_mask_bound.py")
    report = check_paths([moe, str(race)])
    jsonschema.validate(report, report_schema())
    assert report["version"] == SCHEMA_VERSION == "1.8"
    by_path = {f["path"]: f for f in report["files"]}
    specs = by_path[moe]["kernels"][0]["specializations"]
    assert len(specs) == 2
    for sp in specs:
        assert {a["status"] for a in sp["assertions"]} == {"proved"}
    assert [(sp["constexprs"]["TOPK"], sp["status"], sp["findings"]) for sp in specs] == [
        (2, "violated", {"AVE208": 1}), (1, "proved", {})]
    (sp,) = by_path[str(race)]["kernels"][0]["specializations"]
    assert sp["assertions"] == []
    assert sp["status"] == "violated" and sp["findings"] == {"AVE207": 1}
    assert sorted((d["file"], d["code"]) for d in report["diagnostics"]) == sorted(
        [(moe, "AVE208"), (str(race), "AVE207")])


_OWN_HELPER = '''import ave_core.lang as ave


def out(s, Y, m0, n0):
    ave.copy(ave.transpose(s), Y[n0:n0 + 32, m0:m0 + 32], vector_bytes=4)


@ave.kernel(threads=128)
def t_own(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    m0 = ave.program_id(0) * 32
    n0 = ave.program_id(1) * 32
    s = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[m0:m0 + 32, n0:n0 + 32], s, vector_bytes=16)
    out(s, Y, m0, n0)
'''


@pytest.mark.parametrize("order", [["a_k.py"], ["a_k.py", "z_h.py"], ["z_h.py", "a_k.py"]])
def test_a_helper_files_own_baselined_finding_does_not_accept_a_new_kernels_call(
        tmp_path, order):
    # z_h.py: a helper with a race (no barrier between the copy into s and its transposed
    # read) and its own kernel; the baseline accepts that kernel's finding. A new kernel
    # in a_k.py calls the helper: its finding is new. The fallback for baselines written
    # before each call was a finding gave the new call the same key as the helper file's
    # own finding: "1 baselined" for a_k.py alone, and with both files the result depended
    # on their order (a review helper). Baselines are now version 2, matched exactly.
    (tmp_path / "z_h.py").write_text(_OWN_HELPER, "utf-8")
    (tmp_path / "a_k.py").write_text(
        "import ave_core.lang as ave\nfrom z_h import out\n\n\n"
        + _OWN_HELPER.split("\n\n\n", 2)[2].replace("t_own", "t_new"), "utf-8")
    p = _python("-m", "ave_lsp", "--check", "z_h.py", "--write-baseline", "base.json", "-j1",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "base.json").read_text())["version"] == 2
    p = _python("-m", "ave_lsp", "--check", *order, "--baseline", "base.json", "-j1",
                "--format", "json", cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert p.returncode == 1, p.stdout
    shown = [(d["code"], os.path.basename(d["file"]), d["range"]["start"]["line"])
             for d in rep["diagnostics"]]
    # the one finding left is the new kernel's call (the helper's line, through a_k.py)
    assert len(shown) == 1 and shown[0][0] == "AVE207", shown
    assert rep["summary"].get("baselined", 0) == (1 if "z_h.py" in order else 0)


def test_a_same_file_helpers_finding_names_the_other_kernel_that_reaches_it(tmp_path):
    # one finding at the helper's line for both kernels of the file (docs/lsp.md); its
    # "also in" note named a specialization of the first kernel ("also in the
    # specialization defaults") for the second kernel's (a review helper)
    text = _OWN_HELPER + "\n\n" + _OWN_HELPER.split("\n\n\n", 2)[2].replace("t_own", "t_two")
    (tmp_path / "k.py").write_text(text, "utf-8")
    p = _python("-m", "ave_lsp", "--check", "k.py", "--format", "json", "-j1", cwd=tmp_path)
    (d,) = json.loads(p.stdout)["diagnostics"]
    assert d["code"] == "AVE207" and d["range"]["start"]["line"] == 4
    assert "also in kernel t_two, the specialization defaults" in d["notes"], d["notes"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_directory_walk_takes_regular_files_once(tmp_path):
    # a named pipe `*.py` in a checked directory blocked the check forever (nothing was
    # printed, not even for the other files); a file named through a symbolic link and by
    # its own name was checked twice (a review helper)
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")
    os.symlink(tmp_path / "ok.py", tmp_path / "link.py")
    files = iter_python_files([str(tmp_path), str(tmp_path / "ok.py")])
    assert [os.path.basename(f) for f in files] == ["link.py"]


def test_tcp_on_a_port_in_use_is_a_usage_failure():
    # the server on a port already taken died with a traceback and status 1 ("findings");
    # now one error line and status 2 (a review helper)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "ave_lsp", "--tcp", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(
        f"ave-lsp: error: cannot listen on 127.0.0.1:{port}")


def test_baseline_and_write_baseline_are_alternatives(capsys):
    # both were accepted, --baseline ignored (not even required to exist); a review helper
    assert main(["--check", str(ROOT / "examples/gemm.py"), "--baseline", "x", "--write-baseline",
                 "y"]) == 2
    assert "not allowed with argument --baseline" in capsys.readouterr().err
