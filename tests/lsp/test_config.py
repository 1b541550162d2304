"""Configuration (``[tool.ave]``, editor settings, CLI flags: :mod:`ave_lsp.config`) and
the baseline file of accepted findings, in the CLI and in the server's check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ave_lsp import cli, config
from ave_lsp.config import Config, resolve
from ave_lsp.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py"


def pyproject(d: Path, body: str) -> Path:
    p = d / "pyproject.toml"
    p.write_text("[project]\nname = 'x'\n\n[tool.ave]\n" + body, "utf-8")
    return p


# ----------------------------------------------------------------------------- precedence

def test_defaults_without_pyproject(tmp_path):
    f = tmp_path / "k.py"
    f.write_text("x = 1\n")
    cfg, warnings = resolve(str(f))
    # tmp dirs have no pyproject.toml above them (or one without [tool.ave])
    assert (cfg.solver_timeout_ms, cfg.trip_count_bound, cfg.check_on_change,
            cfg.max_file_lines, cfg.baseline) == (2000, None, False, None, None)
    assert cfg.inlay_hints is True
    assert warnings == []


def test_inlay_hints_from_pyproject_and_editor(tmp_path):
    pyproject(tmp_path, "inlayHints = false\n")
    cfg, w = resolve(str(tmp_path / "k.py"))
    assert cfg.inlay_hints is False and w == []
    s, _ = Settings.from_json({"inlayHints": True})
    assert s.config_for(str(tmp_path / "k.py"), str(tmp_path))[0].inlay_hints is True
    s, _ = Settings.from_json({"inlayHints": None})     # not set: the pyproject value
    assert s.config_for(str(tmp_path / "k.py"), str(tmp_path))[0].inlay_hints is False
    pyproject(tmp_path, "inlayHints = 0\n")
    cfg, w = resolve(str(tmp_path / "k.py"))
    assert cfg.inlay_hints is True and len(w) == 1 and "inlayHints" in w[0]


def test_nearest_pyproject_above_the_file(tmp_path):
    pyproject(tmp_path, "solverTimeoutMs = 111\ntripCountBound = 3\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    pyproject(tmp_path / "a", "solverTimeoutMs = 222\nbaseline = 'base.json'\n")
    cfg, warnings = resolve(str(sub / "k.py"))
    assert warnings == []
    assert cfg.solver_timeout_ms == 222            # the nearest one wins ...
    assert cfg.trip_count_bound is None            # ... alone (no merging of files)
    assert cfg.baseline == str(tmp_path / "a" / "base.json")   # relative to it
    assert cfg.pyproject == str(tmp_path / "a" / "pyproject.toml")
    assert resolve(str(tmp_path / "k.py"))[0].trip_count_bound == 3


def test_editor_overrides_pyproject(tmp_path):
    pyproject(tmp_path, "solverTimeoutMs = 111\ntripCountBound = 3\ncheckOnChange = true\n"
                        "maxFileLines = 50\n")
    s, w = Settings.from_json({"solverTimeoutMs": 999, "tripCountBound": None,
                               "baseline": "b.json"})
    assert w == []
    cfg, _ = s.config_for(str(tmp_path / "k.py"), str(tmp_path))
    assert cfg.solver_timeout_ms == 999            # editor value wins
    assert cfg.trip_count_bound == 3               # null in the editor: not set
    assert cfg.check_on_change is True and cfg.max_file_lines == 50
    assert cfg.baseline == str(tmp_path / "b.json")   # relative to the workspace root
    opts = cfg.analysis_options()
    assert (opts.trip_bound, opts.solver_timeout_ms) == (3, 999)


def test_cli_flags_override_pyproject(tmp_path, monkeypatch):
    pyproject(tmp_path, "solverTimeoutMs = 111\ntripCountBound = 3\n")
    f = tmp_path / "k.py"
    f.write_text("x = 1\n")
    seen = []
    from ave_core import check as check_mod

    real = check_mod.start_check

    def spy(path, text=None, **kw):
        seen.append(kw["options"])
        return real(path, text, **kw)

    monkeypatch.setattr(check_mod, "start_check", spy)
    assert cli.main(["--check", str(f)]) == 0
    assert (seen[-1].trip_bound, seen[-1].solver_timeout_ms) == (3, 111)
    assert cli.main(["--check", str(f), "--solver-timeout-ms", "5"]) == 0
    assert (seen[-1].trip_bound, seen[-1].solver_timeout_ms) == (3, 5)


def test_cli_jobs_from_pyproject_and_flag(tmp_path, monkeypatch, capsys):
    from ave_core import pool as pool_mod

    pyproject(tmp_path, "jobs = 3\n")
    f = tmp_path / "k.py"
    f.write_text("x = 1\n")
    made = []

    class Spy(pool_mod.AnalysisPool):
        def __init__(self, workers, target=None):
            made.append(workers)
            super().__init__(workers, target)

    monkeypatch.setattr(pool_mod, "AnalysisPool", Spy)
    monkeypatch.setattr(pool_mod, "cpu_count", lambda: 4)    # jobs is capped: 2 per CPU
    assert cli.main(["--check", str(f)]) == 0 and made == [3]
    assert cli.main(["--check", str(f), "--jobs", "2"]) == 0 and made == [3, 2]
    assert cli.main(["--check", str(f), "-j", "1"]) == 0 and made == [3, 2]   # serial
    assert cli.main(["--check", str(f), "--jobs", "0"]) == 0
    assert made[-1] == 6                                     # automatic: 1.5 per CPU
    assert cli.main(["--check", str(f), "--jobs", "100000"]) == 0 and made[-1] == 8
    assert cli.main(["--check", str(f), "--jobs", "-1"]) == 2
    assert "--jobs must be >= 0" in capsys.readouterr().err


# ----------------------------------------------------------------------------- bad values

def test_bad_pyproject_values_are_ignored_with_a_warning(tmp_path):
    pyproject(tmp_path, "solverTimeoutMs = 'fast'\ntripCountBound = 0\ncheckOnChange = 1\n"
                        "maxFileLines = -3\nbaseline = 7\nnope = 1\n")
    cfg, warnings = resolve(str(tmp_path / "k.py"))
    assert cfg == Config(pyproject=str(tmp_path / "pyproject.toml"))
    assert len(warnings) == 6
    assert any("solverTimeoutMs" in w and "'fast'" in w for w in warnings)
    assert any("unknown key 'nope'" in w for w in warnings)


def test_bad_value_keeps_the_pyproject_value_under_the_editor(tmp_path):
    pyproject(tmp_path, "solverTimeoutMs = 111\n")
    s, w = Settings.from_json({"solverTimeoutMs": "x"})
    assert len(w) == 1
    assert s.config_for(str(tmp_path / "k.py"), str(tmp_path))[0].solver_timeout_ms == 111


def test_baseline_path_with_a_nul_is_ignored_with_a_warning(broken):
    # (from a review helper: every check of the file became AVE900 "embedded null byte")
    from ave_lsp.server.server import _check_in_worker

    s, w = Settings.from_json({"baseline": "base\x00.json"})
    assert len(w) == 1 and "baseline" in w[0] and "NUL" in w[0]
    k = broken / "kernel.py"
    out = _check_in_worker(k.as_uri(), str(k), k.read_text(), str(broken), s)
    assert any(d.code == "AVE201" for d in out.items)
    assert not any(d.code == "AVE900" for d in out.items)
    assert config.load_baseline_cached("/tmp/x\x00.json")[0] is None


def test_unparsable_pyproject_is_a_warning(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ave\n")
    cfg, warnings = resolve(str(tmp_path / "k.py"))
    assert cfg.solver_timeout_ms == 2000 and len(warnings) == 1


def test_a_pyproject_that_is_not_utf8_is_a_warning_and_the_check_runs(tmp_path, capsys):
    # a Latin-1 byte in a comment (TOML is UTF-8): it was an internal error, exit 2, and
    # AVE900 in place of every finding in the editor (a review helper)
    (tmp_path / "pyproject.toml").write_bytes(
        b"[project]\nname = 'x'  # Jos\xe9\n\n[tool.ave]\nsolverTimeoutMs = 10\n")
    cfg, warnings = resolve(str(tmp_path / "k.py"))
    assert cfg.solver_timeout_ms == 2000
    assert len(warnings) == 1 and "cannot read [tool.ave]" in warnings[0]
    f = tmp_path / "k.py"
    shutil.copy(BROKEN, f)
    assert cli.main(["--check", str(f), "--format", "json"]) == 1
    out = capsys.readouterr()
    report = json.loads(out.out)
    codes = {d["code"] for d in report["diagnostics"]}
    assert "AVE201" in codes and "AVE900" not in codes
    assert "cannot read [tool.ave]" in out.err


def test_cli_prints_pyproject_warnings(tmp_path, capsys):
    pyproject(tmp_path, "solverTimeoutMs = 'fast'\n")
    f = tmp_path / "k.py"
    f.write_text("x = 1\n")
    assert cli.main(["--check", str(f)]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "solverTimeoutMs" in err


# ----------------------------------------------------------------------------- maxFileLines

def test_count_lines():
    assert [config.count_lines(t) for t in ("", "a", "a\n", "a\nb", "a\r\nb\r\n", "a\rb")] \
        == [0, 1, 1, 2, 2, 2]


def test_max_file_lines_cli(tmp_path, capsys):
    pyproject(tmp_path, "maxFileLines = 3\n")
    f = tmp_path / "k.py"
    f.write_text("import ave_core.lang as ave\n" + "x = 1\n" * 5)
    assert cli.main(["--check", str(f), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["summary"]["skipped"] == 1
    assert "not checked" in err and "maxFileLines = 3" in err
    # the flag overrides the pyproject value: now it is checked
    assert cli.main(["--check", str(f), "--max-file-lines", "100", "--format", "json"]) == 0
    assert "skipped" not in json.loads(capsys.readouterr().out)["summary"]
    # a long file that does not use Ave gets nothing (it was warned about, and reported
    # as using Ave; a review helper)
    g = tmp_path / "plain.py"
    g.write_text("x = 1\n" * 9)
    assert cli.main(["--check", str(g), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "not checked" not in err and "skipped" not in json.loads(out)["summary"]
    assert json.loads(out)["files"][0]["uses_ave"] is False


def test_max_file_lines_server(tmp_path):
    from ave_lsp.server.server import _check_in_worker

    pyproject(tmp_path, "maxFileLines = 3\n")
    f = tmp_path / "k.py"
    text = "import ave_core.lang as ave\n" + "x = 1\n" * 5
    out = _check_in_worker(f.as_uri(), str(f), text, str(tmp_path), Settings())
    (d,) = out.items
    assert d.severity == 3 and "not checked" in d.message and "6 lines" in d.message
    # a stable code with its page, as every diagnostic of the server (a review helper)
    assert d.code == "AVE902" and d.code_description.href.endswith("docs/codes/AVE902.md")
    # a file that does not use Ave is not flagged
    out = _check_in_worker(f.as_uri(), str(f), "x = 1\n" * 9, str(tmp_path), Settings())
    assert out.items == []
    # the editor's value overrides the pyproject's
    s, _ = Settings.from_json({"maxFileLines": 1000})
    out = _check_in_worker(f.as_uri(), str(f), text, str(tmp_path), s)
    assert not any("not checked" in d.message for d in out.items)


# ----------------------------------------------------------------------------- baseline

@pytest.fixture
def broken(tmp_path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    shutil.copyfile(BROKEN, d / "kernel.py")
    return d


def test_write_and_apply_baseline_cli(broken, capsys):
    base = broken / "base.json"
    assert cli.main(["--check", str(broken), "--write-baseline", str(base)]) == 0
    data = json.loads(base.read_text())
    assert data["findings"] and all(e["file"] == "kernel.py" for e in data["findings"])
    assert all(len(e["fingerprint"]) == 64 for e in data["findings"])
    n = len(data["findings"])
    capsys.readouterr()
    assert cli.main(["--check", str(broken)]) == 1
    capsys.readouterr()
    assert cli.main(["--check", str(broken), "--baseline", str(base), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["diagnostics"] == [] and report["summary"]["baselined"] == n
    # lines added above: still the same findings (the fingerprint has no line numbers)
    k = broken / "kernel.py"
    k.write_text("# a comment\n\n" + k.read_text())
    assert cli.main(["--check", str(broken), "--baseline", str(base)]) == 0
    assert f"{n} baselined" in capsys.readouterr().out
    # [tool.ave] baseline does the same
    pyproject(broken, "baseline = 'base.json'\n")
    assert cli.main(["--check", str(broken)]) == 0


def test_baseline_only_drops_what_it_holds(broken, capsys):
    base = broken / "base.json"
    assert cli.main(["--check", str(broken), "--write-baseline", str(base)]) == 0
    data = json.loads(base.read_text())
    data["findings"] = data["findings"][:1]
    base.write_text(json.dumps(data))
    capsys.readouterr()
    assert cli.main(["--check", str(broken), "--baseline", str(base), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["baselined"] == 1 and report["diagnostics"]


def test_bad_baseline_flag_is_a_usage_error(tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_text("x = 1\n")
    (tmp_path / "bad.json").write_text("{}")
    assert cli.main(["--check", str(f), "--baseline", str(tmp_path / "bad.json")]) == 2
    assert cli.main(["--check", str(f), "--baseline", str(tmp_path / "none.json")]) == 2


@pytest.mark.parametrize("body", [
    '{"findings": [{"code": ["AVE201"], "file": "k.py", "fingerprint": "x"}]}',
    '{"findings": [{"code": "AVE201", "file": 3, "fingerprint": "x"}]}',
    "[" * 100000 + "]" * 100000])
def test_malformed_baseline_is_a_usage_error_or_a_warning(broken, tmp_path, capsys, body):
    # a finding whose code is a list (unhashable) or JSON nested 100,000 deep crashed the
    # check (internal error, exit 2 with a traceback; in the server every finding became
    # one AVE900) instead of the documented usage error / warning (a review helper)
    from ave_lsp.server.server import _check_in_worker

    bad = tmp_path / "bad.json"
    bad.write_text(body)
    k = broken / "kernel.py"
    assert cli.main(["--check", str(k), "--baseline", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "cannot read the baseline" in err and "Traceback" not in err
    s, _ = Settings.from_json({"baseline": str(bad)})
    out = _check_in_worker(k.as_uri(), str(k), k.read_text(), str(broken), s)
    assert any(d.code == "AVE201" for d in out.items)          # findings still show
    assert not any(d.code == "AVE900" for d in out.items)
    assert any("cannot read the baseline" in w for w in out.warnings)


def test_baseline_in_the_server(broken):
    from ave_lsp.server.server import _check_in_worker

    k = broken / "kernel.py"
    base = broken / "base.json"
    assert cli.main(["--check", str(broken), "--write-baseline", str(base)]) == 0
    text = "\n\n" + k.read_text()                   # the buffer, not saved, lines moved
    out = _check_in_worker(k.as_uri(), str(k), text, str(broken), Settings())
    assert any(d.code == "AVE201" for d in out.items)
    s, _ = Settings.from_json({"baseline": "base.json"})
    out = _check_in_worker(k.as_uri(), str(k), text, str(broken), s)
    assert not any(d.code == "AVE201" for d in out.items)
    assert str(k) in out.files


def test_the_server_drops_suppressed_findings_before_the_baseline(tmp_path):
    # Two identical reads on consecutive lines, the first suppressed by a comment: the
    # baseline (written after suppressions, as --check lists them) holds the second's.
    # The server matched the baseline first, so the suppressed finding took that entry and
    # the second read's race showed in the editor while --check passed (a review helper).
    from ave_lsp.server.server import _check_in_worker

    src = (ROOT / "examples" / "broken" / "gemm_missing_barrier.py").read_text("utf-8")
    read = "        a = ave.ldmatrix(sA[s], tiled.a)\n"
    assert src.count(read) == 1
    src = src.replace(read, read.rstrip("\n") + "  # ave: ignore[AVE207]\n"
                      + read.rstrip("\n") + "  # second read\n")
    k = tmp_path / "k.py"
    k.write_text(src, "utf-8")
    base = tmp_path / "base.json"
    assert cli.main(["--check", str(k), "--write-baseline", str(base), "-j", "1"]) == 0
    assert cli.main(["--check", str(k), "--baseline", str(base), "-j", "1"]) == 0
    s, _ = Settings.from_json({"baseline": str(base), "jobs": 1})
    out = _check_in_worker(k.as_uri(), str(k), src, str(tmp_path), s)
    assert [d.code for d in out.items if d.code.startswith("AVE2")] == []
    # without the baseline both reads' races show but the suppressed one
    out = _check_in_worker(k.as_uri(), str(k), src, str(tmp_path), Settings())
    second = src.splitlines().index(read.rstrip("\n") + "  # second read")
    lines = {d.range.start.line for d in out.items if d.code == "AVE207"}
    assert second in lines and second - 1 not in lines
