"""The diagnostic model: UTF-16 positions, AveError, the report and its JSON Schema, code docs."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ave_core.diagnostics import (
    CODES,
    SCHEMA_VERSION,
    ZERO_RANGE,
    AveError,
    CodeInfo,
    Diagnostic,
    Location,
    Position,
    Range,
    Related,
    Severity,
    SourceText,
    make_report,
    register_code,
    report_schema,
    utf16_len,
    validate_report,
)

ROOT = Path(__file__).resolve().parents[2]


def utf16_col(line: str, index: int) -> int:
    """Independent reference: the UTF-16 column of code-point ``index`` of ``line``."""
    return len(line[:index].encode("utf-16-le")) // 2


def nodes_of(text: str, kind: type) -> list:
    return [n for n in ast.walk(ast.parse(text)) if isinstance(n, kind)]


# --- UTF-16 conversion -------------------------------------------------------------------


def test_utf16_len_counts_non_bmp_as_two():
    assert utf16_len("") == 0
    assert utf16_len("abc") == 3
    assert utf16_len("é") == 1          # 2 UTF-8 bytes, 1 UTF-16 unit
    assert utf16_len("日本") == 2        # 3 UTF-8 bytes each, 1 unit each
    assert utf16_len("😀") == 2          # 4 UTF-8 bytes, a surrogate pair
    assert utf16_len("a😀é𝔸") == 6


def test_position_converts_utf8_bytes_to_utf16_units():
    line = 'x = "é日😀" + value'
    src = SourceText(line + "\n")
    (name,) = [n for n in nodes_of(line, ast.Name) if n.id == "value"]
    # ast's column is in UTF-8 bytes: larger than the code-point index.
    assert name.col_offset == len(line[: line.index("value")].encode("utf-8"))
    pos = src.position(name.lineno, name.col_offset)
    assert pos == Position(0, utf16_col(line, line.index("value")))
    assert pos.character == line.index("value") + 1  # one surrogate pair


def test_position_clamps_to_line_and_handles_out_of_range_lines():
    src = SourceText("ab😀\n")
    assert src.position(1, 0) == Position(0, 0)
    assert src.position(1, 100) == Position(0, 4)    # past the end: the whole line
    assert src.position(1, 3) == Position(0, 2)      # inside the 4-byte char: before it
    assert src.position(5, 3) == Position(4, 0)      # past the last line: empty line
    assert src.position(0, 0) == Position(0, 0)


def test_range_of_node_on_non_ascii_line():
    text = 'import os\ns = "日本語😀" + foo(bar, "𝔸")  # café\n'
    src = SourceText(text, "m.py")
    line = src.line(1)
    (call,) = nodes_of(text, ast.Call)
    rng = src.range_of(call)
    start = line.index("foo")
    end = line.index("  # café")
    assert rng == Range.of(1, utf16_col(line, start), 1, utf16_col(line, end))
    assert rng.start.character == start + 1          # 😀 before it
    assert rng.end.character == end + 2              # 😀 and 𝔸 before the end
    (arg,) = [n for n in nodes_of(text, ast.Name) if n.id == "bar"]
    assert src.range_of(arg) == Range.of(1, utf16_col(line, line.index("bar")),
                                         1, utf16_col(line, line.index("bar") + 3))


def test_range_of_multiline_node_and_node_without_end():
    text = 'x = [\n    "😀",\n    y,\n]\n'
    src = SourceText(text)
    (lst,) = nodes_of(text, ast.List)
    assert src.range_of(lst) == Range.of(0, 4, 3, 1)

    class Bare:  # lineno/col_offset only: the range runs to the end of the line
        lineno, col_offset = 2, 4

    assert src.range_of(Bare()) == Range.of(1, 4, 1, len('    "😀",') + 1)


def test_crlf_and_lone_cr_line_ends():
    text = 'a = 1\r\nb = "é"\rc = 3\nd = 4'
    src = SourceText(text)
    assert src.lines == ["a = 1", 'b = "é"', "c = 3", "d = 4"]
    # Python's own parser agrees about the line numbers.
    names = {n.id: n for n in nodes_of(text, ast.Name)}
    for i, name in enumerate("abcd"):
        assert src.range_of(names[name]) == Range.of(i, 0, i, 1)
    (const,) = [n for n in nodes_of(text, ast.Constant) if n.value == "é"]
    assert src.range_of(const) == Range.of(1, 4, 1, 7)
    assert src.line_range(1) == Range.of(1, 0, 1, 7)
    # Offsets (code points) skip both characters of \r\n.
    assert src.offset_to_position(0) == Position(0, 0)
    assert src.offset_to_position(text.index("b")) == Position(1, 0)
    assert src.offset_to_position(text.index("c")) == Position(2, 0)
    assert src.offset_to_position(text.index("d") + 1) == Position(3, 1)
    assert src.offset_to_position(len(text)) == Position(3, 5)


def test_trailing_line_end_gives_empty_last_line():
    assert SourceText("x\r\n").lines == ["x", ""]
    assert SourceText("x\r").lines == ["x", ""]
    assert SourceText("").lines == [""]
    assert SourceText("\r\r\n\n").lines == ["", "", "", ""]


def _reference_lines(text: str) -> list[str]:
    """Independent reference: split at \\r\\n, \\r and \\n, one character at a time."""
    out, start, i = [], 0, 0
    while i < len(text):
        if text[i] in "\r\n":
            out.append(text[start:i])
            if text[i] == "\r" and text[i + 1:i + 2] == "\n":
                i += 1
            start = i + 1
        i += 1
    return out + [text[start:]]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet="ab é日😀\r\n\t", max_size=40), st.integers(-2, 12),
       st.integers(-3, 30))
def test_lines_and_positions_match_a_reference_on_any_text(text, line, col):
    src = SourceText(text)
    assert src.lines == _reference_lines(text)
    line0 = max(0, line - 1)                     # ast lines are 1-based; 0 clamps to the first
    ref_line = src.lines[line0] if line0 < len(src.lines) else ""
    prefix = ref_line.encode("utf-8")[:max(0, col)].decode("utf-8", errors="ignore")
    for _ in range(2):  # the second time from the memo of converted lines/ranges
        assert src.position(line, col) == Position(line0, utf16_col(prefix, len(prefix)))
    for s in (text, ref_line, prefix):
        assert utf16_len(s) == utf16_col(s, len(s))


def test_position_from_char_and_offset_with_non_bmp():
    src = SourceText("😀😀x\ny")
    assert src.position_from_char(0, 2) == Position(0, 4)
    assert src.offset_to_position(2) == Position(0, 4)
    assert src.offset_to_position(4) == Position(1, 0)


def test_range_contains():
    r = Range.of(1, 2, 1, 5)
    assert r.contains(Position(1, 2)) and r.contains(Position(1, 4))
    assert not r.contains(Position(1, 5)) and not r.contains(Position(0, 9))
    assert Range.of(3, 1, 3, 1).contains(Position(3, 1))   # empty range: its point


# --- Diagnostic and AveError ---------------------------------------------------------------


def test_diagnostic_defaults_json_and_text():
    d = Diagnostic("AVE106", "view covers 16384 bytes, source 8192", "k.py", Range.of(4, 8, 4, 20),
                   notes=["source: 64x64 bf16"],
                   related=[Related(Location("k.py", Range.of(3, 4, 3, 9)), "source allocated here")])
    assert d.severity is Severity.ERROR
    assert d.format_text() == "k.py:5:9: error AVE106 view covers 16384 bytes, source 8192"
    assert d.to_json() == {
        "code": "AVE106",
        "severity": "error",
        "message": "view covers 16384 bytes, source 8192",
        "file": "k.py",
        "range": {"start": {"line": 4, "character": 8}, "end": {"line": 4, "character": 20}},
        "notes": ["source: 64x64 bf16"],
        "related": [{"file": "k.py",
                     "range": {"start": {"line": 3, "character": 4},
                               "end": {"line": 3, "character": 9}},
                     "message": "source allocated here"}],
        "witness": None,
    }
    w = Diagnostic("AVE106", "m", "k.py", ZERO_RANGE, severity=Severity.WARNING)
    assert w.severity is Severity.WARNING and w.to_json()["severity"] == "warning"
    assert Severity.from_label("hint") is Severity.HINT


def test_unregistered_code_is_rejected():
    with pytest.raises(ValueError):
        Diagnostic("AVE999", "m", "f.py", ZERO_RANGE)
    with pytest.raises(ValueError):
        AveError("XYZ", "m")


def test_register_code_is_idempotent_and_refuses_redefinition():
    info = CODES["AVE100"]
    register_code(info)
    assert CODES["AVE100"] is info
    with pytest.raises(ValueError):
        register_code(CodeInfo("AVE100", "something else", Severity.ERROR, "other"))
    assert CODES["AVE100"] is info


def test_ave_error_to_diagnostic_resolves_node_range():
    text = 'import ave_core.lang as ave\nv = ave.view(sA, ("é", 😀))\n'.replace("😀", "'😀'")
    src = SourceText(text, "k.py")
    (call,) = nodes_of(text, ast.Call)
    err = AveError("AVE106", "bytes differ", call, notes=["n"])
    d = err.to_diagnostic(src)
    assert d.code == "AVE106" and d.file == "k.py" and d.notes == ["n"]
    line = src.line(1)
    assert d.range == Range.of(1, 4, 1, utf16_col(line, len(line)))
    assert str(err) == "AVE106: bytes differ"


def test_ave_error_explicit_range_file_and_fallback():
    src = SourceText("x = 1\n", "k.py")
    r = Range.of(7, 0, 7, 3)
    d = AveError("AVE113", "cannot resolve helpers.f", range=r, file="helpers.py").to_diagnostic(src)
    assert (d.file, d.range) == ("helpers.py", r)
    d = AveError("AVE100", "no node").to_diagnostic(src)
    assert (d.file, d.range) == ("k.py", ZERO_RANGE)
    fallback = Range.of(0, 0, 0, 5)
    assert AveError("AVE100", "no node").to_diagnostic(src, fallback).range == fallback


# --- the report and its schema -------------------------------------------------------------


def sample_diagnostics() -> list[Diagnostic]:
    return [
        Diagnostic("AVE110", "b", "b.py", Range.of(2, 0, 2, 1)),
        Diagnostic("AVE105", "w", "a.py", Range.of(5, 0, 5, 1), severity=Severity.WARNING),
        Diagnostic("AVE101", "i", "a.py", Range.of(1, 0, 1, 1), severity=Severity.INFO),
        Diagnostic("AVE101", "h", "a.py", Range.of(1, 0, 1, 1), severity=Severity.HINT),
        Diagnostic("AVE100", "e", "a.py", Range.of(1, 0, 1, 1)),
    ]


def sample_files() -> list[dict]:
    return [
        {"path": "a.py", "uses_ave": True, "kernels": [
            {"name": "gemm", "line": 3, "specializations": [
                {"constexprs": {"BM": 128, "BN": 64, "EVEN": True, "DT": "bf16", "SCALE": 0.5},
                 "status": "ok"},
                {"constexprs": {"BM": 64, "BN": 64, "EVEN": False, "DT": "f16", "SCALE": 1.0},
                 "status": "ok"}]},
            {"name": "softmax", "line": 30, "specializations": [{"constexprs": {}, "status": "ok"}]},
        ]},
        {"path": "b.py", "uses_ave": False, "kernels": []},
    ]


def test_make_report_counts_and_sorts():
    report = make_report(sample_files(), sample_diagnostics())
    assert report["version"] == SCHEMA_VERSION
    assert report["summary"] == {"files": 2, "kernels": 2, "errors": 2, "warnings": 1, "infos": 2}
    keys = [(d["file"], d["range"]["start"]["line"], d["code"], d["message"])
            for d in report["diagnostics"]]
    assert keys == sorted(keys)
    assert [d["message"] for d in report["diagnostics"]] == ["e", "h", "i", "w", "b"]
    extra = make_report([], [], summary_extra={"proved": 3, "vacuous": 1})
    assert extra["summary"] == {"files": 0, "kernels": 0, "errors": 0, "warnings": 0,
                                "infos": 0, "proved": 3, "vacuous": 1}
    validate_report(extra)


def test_schema_is_a_valid_draft_2020_12_schema():
    schema = report_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] and schema["title"] and schema["description"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert re.match(schema["properties"]["version"]["pattern"], SCHEMA_VERSION)
    # every registered code matches the schema's code pattern
    pattern = schema["$defs"]["diagnostic"]["properties"]["code"]["pattern"]
    assert all(re.match(pattern, c) for c in CODES)


def witness_example() -> dict:
    return {
        "block": [0, 3, 1],
        "threads": [{"thread": 37, "warp": 1, "lane": 5}, {"thread": 70, "warp": 2, "lane": 6}],
        "loop_indices": {"kt": 2, "s": 0},
        "coordinates": {"a": [16, 8], "b": [9, 16]},
        "tags": {"a": {"k": 8}, "b": {"k": 9}},
        "program_points": [{"file": "k.py", "range": Range.of(10, 4, 10, 30).to_json(),
                            "label": "A tagged here"}],
        "smem_byte": 4096,            # open: the analysis may add properties
    }


def test_report_without_and_with_witness_validates():
    report = make_report(sample_files(), sample_diagnostics(),
                         summary_extra={"specializations": 3, "proved": 2, "violated": 1,
                                        "unknown": 0, "vacuous": 0})
    validate_report(report)
    diag = Diagnostic("AVE110", "operands disagree on k", "a.py", Range.of(12, 8, 12, 30),
                      related=[Related(Location("a.py", Range.of(10, 4, 10, 30)), "A tagged")],
                      witness=witness_example())
    report = make_report(sample_files(), [diag])
    validate_report(report)
    assert report["diagnostics"][0]["witness"]["threads"][0]["lane"] == 5
    # a minimal witness: an empty object is a valid (open) witness
    validate_report(make_report([], [Diagnostic("AVE110", "m", "a.py", ZERO_RANGE, witness={})]))


def _malformed_reports():
    good = make_report(sample_files(), [
        Diagnostic("AVE110", "m", "a.py", ZERO_RANGE, witness=witness_example())])

    def mutate(fn):
        r = copy.deepcopy(good)
        fn(r)
        return r

    yield "version 2", mutate(lambda r: r.__setitem__("version", "2.0"))
    yield "no summary", mutate(lambda r: r.pop("summary"))
    yield "unknown top-level key", mutate(lambda r: r.__setitem__("extra", 1))
    yield "summary count missing", mutate(lambda r: r["summary"].pop("errors"))
    yield "summary extra not an int", mutate(lambda r: r["summary"].__setitem__("proved", "3"))
    yield "negative count", mutate(lambda r: r["summary"].__setitem__("errors", -1))
    yield "bad code", mutate(lambda r: r["diagnostics"][0].__setitem__("code", "E110"))
    yield "bad severity", mutate(lambda r: r["diagnostics"][0].__setitem__("severity", "fatal"))
    yield "negative line", mutate(
        lambda r: r["diagnostics"][0]["range"]["start"].__setitem__("line", -1))
    yield "float column", mutate(
        lambda r: r["diagnostics"][0]["range"]["end"].__setitem__("character", 1.5))
    yield "missing witness key", mutate(lambda r: r["diagnostics"][0].pop("witness"))
    yield "witness a string", mutate(lambda r: r["diagnostics"][0].__setitem__("witness", "t=3"))
    yield "witness thread without lane", mutate(
        lambda r: r["diagnostics"][0]["witness"]["threads"][0].pop("lane"))
    yield "witness loop index not int", mutate(
        lambda r: r["diagnostics"][0]["witness"]["loop_indices"].__setitem__("kt", "2"))
    yield "witness block not ints", mutate(
        lambda r: r["diagnostics"][0]["witness"].__setitem__("block", ["x"]))
    yield "program point without label", mutate(
        lambda r: r["diagnostics"][0]["witness"]["program_points"][0].pop("label"))
    yield "related without message", mutate(
        lambda r: r["diagnostics"][0]["related"].append({"file": "a.py", "range": ZERO_RANGE.to_json()}))
    yield "uses_ave not bool", mutate(lambda r: r["files"][0].__setitem__("uses_ave", "yes"))
    yield "kernel without line", mutate(lambda r: r["files"][0]["kernels"][0].pop("line"))
    yield "constexpr value a list", mutate(
        lambda r: r["files"][0]["kernels"][0]["specializations"][0]["constexprs"]
        .__setitem__("BM", [1, 2]))
    yield "specialization without status", mutate(
        lambda r: r["files"][0]["kernels"][0]["specializations"][0].pop("status"))


@pytest.mark.parametrize("why,report", list(_malformed_reports()),
                         ids=[w for w, _ in _malformed_reports()])
def test_schema_rejects_malformed_report(why, report):
    with pytest.raises(jsonschema.ValidationError):
        validate_report(report)


# --- one docs page per code ----------------------------------------------------------------

CODE_DOCS = ROOT / "docs" / "codes"


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_a_docs_page(code):
    page = CODE_DOCS / f"{code}.md"
    assert page.is_file(), f"missing docs page {page.relative_to(ROOT)}"
    text = page.read_text("utf-8")
    assert text.startswith(f"# {code}: {CODES[code].title}\n")
    for heading in ("## What it means", "## Example", "## How to fix"):
        assert heading in text, f"{page.name} lacks {heading!r}"


def test_codes_index_links_every_code():
    index = (CODE_DOCS / "README.md").read_text("utf-8")
    for code in CODES:
        assert f"[{code}]({code}.md)" in index, f"docs/codes/README.md does not list {code}"
