"""The SARIF 2.1.0 output of ``ave-lsp --check --format sarif``.

:func:`to_sarif` turns a check report (schema ``check-output.v1``, built by
:func:`ave_core.check.build_report`) into one SARIF log with one run:

* ``tool.driver``: name ``ave-lsp``, the version, and one ``rules`` entry per code used
  (id, a CamelCase ``name``, ``shortDescription``/``fullDescription`` from
  :data:`ave_core.diagnostics.CODES`, ``helpUri`` — the ``file://`` URI of
  ``docs/codes/<CODE>.md`` — and ``help``, plain text plus the page's Markdown);
* one ``result`` per diagnostic: ``ruleId``/``ruleIndex``, ``level`` (``error``,
  ``warning``, ``note`` for info and hint), the message, the location, the related
  locations, ``partialFingerprints`` and, in ``properties``, the notes and the witness as
  in the JSON report;
* for a diagnostic with a witness that names threads or program points, one ``codeFlow``
  with one ``threadFlow`` per GPU thread of the witness (``id`` ``"thread N"``): the
  witness' program points that thread's operand went through (where its tag was
  introduced, written to shared memory, last moved; all of them when the witness does
  not say which operand a point belongs to), then the flagged location. Every step's
  ``state`` holds the block, the loop indices and the coordinates of the thread's
  operands (SARIF multiformat message strings);
* for a diagnostic with a mechanical fix (``fix`` in the JSON report), one ``fixes``
  entry: the language server's quick fix (its title, and its edit of the file as it is
  now as an ``artifactChange`` replacement) -- see :func:`sarif_fixes`.

Locations: a file under the working directory is a relative URI with
``uriBaseId`` ``%SRCROOT%`` (``run.originalUriBaseIds`` gives the working directory's
``file://`` URI); any other file an absolute ``file://`` URI. Regions are 1-based:
``startLine``/``startColumn``/``endLine``/``endColumn``, ``endColumn`` one past the last
character, as SARIF defines it. Columns count **UTF-16 code units** (``run.columnKind``
``utf16CodeUnits``, SARIF's default and the unit of Ave's LSP ranges).

``partialFingerprints["aveFingerprint/v1"]`` is stable across edits elsewhere in the
file: a SHA-256 over the code, the file (relative to the working directory), the code of
the flagged line (stripped, its comment left out) and the name of the top-level function
(the kernel) around it -- and for a finding in a helper from another file the same of the
kernel's call it was found in -- no line numbers, followed by ``:N``, the index of the
result among those with the same hash.

Imports the standard library, :mod:`ave_core.diagnostics` and the server's
:mod:`ave_lsp.server.convert` (for the code pages' URIs) and, for fixes,
:mod:`ave_lsp.server.fixes`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import quote

from ave_core.diagnostics import call_site, parse_source

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                    "sarif-schema-2.1.0.json")
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "aveFingerprint/v1"
TOOL_NAME = "ave-lsp"

#: Ave severity -> SARIF result level.
LEVELS = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}


# ----------------------------------------------------------------------------- paths

def docs_codes_dir() -> Path:
    """``docs/codes`` of the installed repository (where ``helpUri`` points)."""
    from ave_lsp.server.convert import docs_dir

    return docs_dir()


def relative_path(path: str, cwd: str | None = None) -> str | None:
    """``path`` relative to ``cwd`` (default: the working directory) with ``/``
    separators, or None when it is not under ``cwd`` (or is a ``<pseudo>`` name)."""
    if path.startswith("<"):
        return None
    cwd = cwd or os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(cwd))
    except ValueError:  # another drive (Windows)
        return None
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


def display_path(path: str, cwd: str | None = None) -> str:
    """The path as CI tools want it: relative to the working directory when under it
    (``/`` separators), else as given."""
    rel = relative_path(path, cwd)
    return rel if rel is not None else path


def artifact_location(path: str, cwd: str | None = None) -> dict:
    """A SARIF ``artifactLocation``: relative to ``%SRCROOT%`` when under ``cwd``."""
    rel = relative_path(path, cwd)
    if rel is not None:
        # (the file system's bytes, percent-encoded: a name that is no UTF-8 raised)
        return {"uri": quote(os.fsencode(rel), safe="/"), "uriBaseId": SRCROOT}
    if path.startswith("<"):
        return {"uri": quote(path.strip("<>"), safe="")}
    return {"uri": Path(os.path.abspath(path)).as_uri()}


def region(rng: dict) -> dict:
    """An LSP range (0-based, UTF-16, end exclusive) -> a SARIF region (1-based lines and
    columns, ``endColumn`` one past the last character: the same UTF-16 columns + 1)."""
    s, e = rng["start"], rng["end"]
    if (e["line"], e["character"]) < (s["line"], s["character"]):
        e = s
    return {"startLine": s["line"] + 1, "startColumn": s["character"] + 1,
            "endLine": e["line"] + 1, "endColumn": e["character"] + 1}


def physical_location(path: str, rng: dict, cwd: str | None = None) -> dict:
    return {"artifactLocation": artifact_location(path, cwd), "region": region(rng)}


# ----------------------------------------------------------------------------- sources

class Sources:
    """Reads source files once (for fingerprints): their lines and top-level functions."""

    def __init__(self, reader: Callable[[str], str | None] | None = None) -> None:
        self._reader = reader or _read_text
        self._text: dict[str, str | None] = {}
        self._lines: dict[str, list[str]] = {}
        self._defs: dict[str, list[tuple[int, int, str]]] = {}

    def text(self, path: str) -> str | None:
        """The file's text (None when it cannot be read)."""
        if path not in self._text:
            self._text[path] = self._reader(path)
        return self._text[path]

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            text = self.text(path)
            self._lines[path] = re.split(r"\r\n|\r|\n", text) if text is not None else []
        return self._lines[path]

    def line(self, path: str, line0: int) -> str:
        lines = self.lines(path)
        return lines[line0] if 0 <= line0 < len(lines) else ""

    def enclosing_function(self, path: str, line0: int) -> str:
        """The name of the top-level function or class whose text (decorators included)
        holds 0-based line ``line0``, or ``""``."""
        if path not in self._defs:
            self._defs[path] = _top_level_defs("\n".join(self.lines(path)))
        for first, last, name in self._defs[path]:
            if first <= line0 <= last:
                return name
        return ""


def _read_text(path: str) -> str | None:
    from ave_core.diagnostics import decode_source
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        return decode_source(data)          # (as the checker read it: a coding line)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        return data.decode("utf-8-sig", errors="replace")


def _top_level_defs(text: str) -> list[tuple[int, int, str]]:
    try:
        tree = parse_source(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []            # (the front end reports why the file does not parse)
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((first - 1, (node.end_lineno or node.lineno) - 1, node.name))
    return out


def fingerprint_base(diag: dict, sources: Sources, cwd: str | None = None,
                     legacy: bool = False, call: bool = True) -> str:
    """SHA-256 (hex) of code, file, flagged line's code (stripped, its comment left out:
    :func:`line_code`) and enclosing kernel; for a finding in a helper from another file,
    also the file, line code and enclosing function of the kernel's call it was found in
    (each call is a finding of its own: with the helper's line alone, every call had one
    hash, told apart by its rank, so editing one call renumbered the others and a baseline
    entry hid whichever call came first; a review helper). A file name that is no UTF-8 (a
    surrogate escape of its bytes) hashes its escapes (it raised UnicodeEncodeError: the
    whole SARIF log and ``--write-baseline`` failed; a review helper). ``legacy``: the
    line's whole stripped text, comment included, and no call (baselines written before
    the comment was left out); ``call=False``: no call (baselines written before each
    call was a finding). Both are still read."""
    line0 = diag["range"]["start"]["line"]
    text = sources.line(diag["file"], line0)
    parts = [diag["code"], display_path(diag["file"], cwd),
             text.strip() if legacy else line_code(text),
             sources.enclosing_function(diag["file"], line0)]
    site = call_site(diag) if call and not legacy else None
    if site is not None and isinstance(site[1], dict):
        cfile, cl = site[0], site[1]["start"]["line"]
        parts += [display_path(cfile, cwd), line_code(sources.line(cfile, cl)),
                  sources.enclosing_function(cfile, cl)]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def line_code(line: str) -> str:
    """A source line without its comment, stripped: what a fingerprint keeps of it, so
    that ``# ave: ignore[AVE203]`` added for another finding on the line (the editor's own
    quick fix) or a ``# TODO`` does not turn its baselined finding into a new one (a
    review helper). A ``#`` inside a string literal is code; a line inside a multi-line
    string is taken as it is (only its own quotes are seen)."""
    quote = None
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif ch == "#":
            return line[:i].strip()
        elif ch in "'\"":
            quote = ch * 3 if line.startswith(ch * 3, i) else ch
            i += len(quote)
            continue
        i += 1
    return line.strip()


# ----------------------------------------------------------------------------- rules

def rule_name(title: str) -> str:
    """``"operand pairing violated"`` -> ``"OperandPairingViolated"``."""
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[^0-9A-Za-z]+", title) if w)


def rule(code: str) -> dict:
    """The ``reportingDescriptor`` of a code."""
    from ave_core.diagnostics import CODES
    from ave_lsp.server.convert import code_href

    info = CODES.get(code)
    title = info.title if info else code
    summary = info.summary if info else code
    href = code_href(code)
    out: dict = {"id": code, "name": rule_name(title) or code,
                 "shortDescription": {"text": title},
                 "fullDescription": {"text": summary}}
    if info is not None:
        out["defaultConfiguration"] = {"level": LEVELS[info.severity.label]}
    help_ = {"text": f"{summary} See docs/codes/{code}.md."}
    if href:
        out["helpUri"] = href
        try:
            help_["markdown"] = (docs_codes_dir() / f"{code}.md").read_text("utf-8")
        except OSError:
            pass
    out["help"] = help_
    return out


# ----------------------------------------------------------------------------- code flows

def _value_text(v) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_value_text(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(_value_text(x) for x in v) + ")"
    return str(v)


def _state(witness: dict, operands: Iterable[str] | None) -> dict:
    state: dict = {}
    block = witness.get("block")
    if block:
        state["block"] = {"text": _value_text(block)}
    for name, value in (witness.get("loop_indices") or {}).items():
        state[str(name)] = {"text": str(value)}
    coords = witness.get("coordinates") or {}
    tags = witness.get("tags") or {}
    if not isinstance(coords, dict):            # free form: shown as a whole
        state["coordinates"] = {"text": _value_text(coords)}
        coords = {}
    if not isinstance(tags, dict):
        state["tags"] = {"text": _value_text(tags)}
        tags = {}
    names = list(coords) if operands is None else [n for n in operands if n in coords]
    for name in names:
        state[f"{name}.coordinates"] = {"text": _value_text(coords[name])}
    for name in (list(tags) if operands is None else [n for n in operands if n in tags]):
        if tags[name] != coords.get(name):
            state[f"{name}.tags"] = {"text": _value_text(tags[name])}
    return state


def _owner(label: str, operands: dict) -> str | None:
    """The operand a program point belongs to: its label starts with ``"name:"``."""
    head, sep, _ = label.partition(":")
    head = head.strip()
    return head if sep and head in operands else None


def code_flows(diag: dict, cwd: str | None = None) -> list[dict]:
    """The ``codeFlows`` of a diagnostic: one code flow with one thread flow per
    distinct thread of its witness ([] without a witness, or one that names neither
    threads nor program points)."""
    w = diag.get("witness")
    if not isinstance(w, dict):
        return []
    threads = []
    seen = set()
    for t in w.get("threads") or []:
        if isinstance(t, dict) and "thread" in t and t["thread"] not in seen:
            seen.add(t["thread"])
            threads.append(t)
    points = [p for p in w.get("program_points") or [] if isinstance(p, dict)]
    if not threads and not points:
        return []
    ops = w.get("operands") if isinstance(w.get("operands"), dict) else {}
    op_thread = {n: o.get("thread") for n, o in ops.items() if isinstance(o, dict)}
    flagged = {"file": diag["file"], "range": diag["range"],
               "label": f"{diag['code']} reported here"}

    def step(p: dict, state: dict) -> dict:
        loc = {"physicalLocation": physical_location(p["file"], p["range"], cwd),
               "message": {"text": str(p.get("label", ""))}}
        return {"location": loc, "state": state, "nestingLevel": 0}

    def flow(tid: str, message: str, pts: list[dict], operands, props: dict) -> dict:
        state = _state(w, operands)
        pts = list(pts)
        last = pts[-1] if pts else None
        if last is None or (last["file"], last["range"]) != (flagged["file"], flagged["range"]):
            pts.append(flagged)
        out = {"id": tid, "message": {"text": message},
               "locations": [step(p, state) for p in pts]}
        if props:
            out["properties"] = props
        return out

    flows = []
    if not threads:
        flows.append(flow("workgroup", "the workgroup", points, None,
                          {"block": w.get("block")} if w.get("block") else {}))
    for t in threads:
        mine = [n for n, th in op_thread.items() if th == t["thread"]]
        pts = [p for p in points
               if (o := _owner(str(p.get("label", "")), op_thread)) is None or o in mine]
        desc = f"thread {t['thread']}"
        if "warp" in t and "lane" in t:
            desc += f" (warp {t['warp']}, lane {t['lane']})"
        if mine:
            desc += ": " + ", ".join(mine)
        props = {k: t[k] for k in ("thread", "warp", "lane") if k in t}
        if w.get("block"):
            props["block"] = w["block"]
        flows.append(flow(f"thread {t['thread']}", desc, pts, mine if op_thread else None,
                          props))
    loops = ", ".join(f"{k}={v}" for k, v in (w.get("loop_indices") or {}).items())
    msg = "witness"
    if w.get("block") is not None:
        msg += f": block {_value_text(w['block'])}"
    if loops:
        msg += f", {loops}"
    return [{"message": {"text": msg}, "threadFlows": flows}]


# ----------------------------------------------------------------------------- the log

def sarif_fixes(diag: dict, sources: Sources, cwd: str | None = None) -> list[dict]:
    """The SARIF ``fixes`` of a diagnostic: its mechanical fix (``diag["fix"]``) as the
    language server's quick fix would edit the file now (:func:`ave_lsp.server.fixes.
    edit_for`: the same title and text edit; an insertion is an empty ``deletedRegion``).
    Empty when it has no fix, the file cannot be read, or the fix no longer applies."""
    fix = diag.get("fix")
    if not isinstance(fix, dict):
        return []
    text = sources.text(diag["file"])
    if text is None:
        return []
    from ave_lsp.server.fixes import edit_for

    made = edit_for(fix, text)
    if made is None:
        return []
    title, edit = made
    rng = {"start": {"line": edit.range.start.line, "character": edit.range.start.character},
           "end": {"line": edit.range.end.line, "character": edit.range.end.character}}
    return [{"description": {"text": title},
             "artifactChanges": [{
                 "artifactLocation": artifact_location(diag["file"], cwd),
                 "replacements": [{"deletedRegion": region(rng),
                                   "insertedContent": {"text": edit.new_text}}]}]}]


def to_sarif(report: dict, *, cwd: str | None = None, version: str | None = None,
             sources: Sources | None = None) -> dict:
    """The SARIF 2.1.0 log (a dict) of a check report."""
    cwd = os.path.abspath(cwd or os.getcwd())
    if version is None:
        from ave_core import __version__ as version
    sources = sources or Sources()
    diags = report["diagnostics"]
    codes = sorted({d["code"] for d in diags})
    index = {c: i for i, c in enumerate(codes)}
    seen: dict[str, int] = {}
    fixed: dict[str, int] = {}      # a fix's JSON -> the index of the result carrying it
    results = []
    for d in diags:
        fixed_with = None
        base = fingerprint_base(d, sources, cwd)
        n = seen.get(base, 0)
        seen[base] = n + 1
        result: dict = {
            "ruleId": d["code"],
            "ruleIndex": index[d["code"]],
            "level": LEVELS.get(d["severity"], "note"),
            "message": {"text": d["message"]},
            "locations": [{"physicalLocation": physical_location(d["file"], d["range"], cwd)}],
        }
        related = [{"id": i + 1,
                    "physicalLocation": physical_location(r["file"], r["range"], cwd),
                    "message": {"text": r["message"] or "related"}}
                   for i, r in enumerate(d.get("related") or [])]
        if related:
            result["relatedLocations"] = related
        flows = code_flows(d, cwd)
        if flows:
            result["codeFlows"] = flows
        fixes = sarif_fixes(d, sources, cwd)
        if fixes:
            # one edit per place: the findings of a helper called twice (one per call) share
            # its fix, and a tool applying every result's fixes inserted it twice; the first
            # result carries it, the others name it in a property
            key = json.dumps(fixes, sort_keys=True)
            if key in fixed:
                fixed_with = fixed[key]
            else:
                fixed[key] = len(results)
                result["fixes"] = fixes
        result["partialFingerprints"] = {FINGERPRINT_KEY: f"{base}:{n}"}
        props: dict = {"severity": d["severity"]}
        if fixed_with is not None:
            props["fixedWith"] = fixed_with
        if d.get("notes"):
            props["notes"] = list(d["notes"])
        if d.get("witness") is not None:
            props["witness"] = d["witness"]
        result["properties"] = props
        results.append(result)
    _merge_covered_fixes(results)
    driver = {"name": TOOL_NAME, "version": str(version), "semanticVersion": str(version),
              "rules": [rule(c) for c in codes]}
    run = {
        "tool": {"driver": driver},
        "invocations": [{"executionSuccessful": True}],
        "originalUriBaseIds": {SRCROOT: {"uri": _dir_uri(cwd)}},
        "columnKind": "utf16CodeUnits",
        "results": results,
        "properties": {"summary": report.get("summary", {})},
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def _insertion(result: dict) -> tuple | None:
    """``(file, line, column, inserted lines)`` of a result's fix when it is one
    insertion (an empty deleted region), else None."""
    fixes = result.get("fixes")
    if not fixes or len(fixes) != 1 or len(fixes[0]["artifactChanges"]) != 1:
        return None
    ch = fixes[0]["artifactChanges"][0]
    if len(ch["replacements"]) != 1:
        return None
    rep = ch["replacements"][0]
    reg = rep["deletedRegion"]
    if (reg.get("endLine"), reg.get("endColumn")) != (reg.get("startLine"),
                                                       reg.get("startColumn")):
        return None
    lines = tuple(x.strip() for x in rep["insertedContent"]["text"].splitlines() if x.strip())
    return (json.dumps(ch["artifactLocation"], sort_keys=True), reg.get("startLine"),
            reg.get("startColumn"), lines)


def _merge_covered_fixes(results: list[dict]) -> None:
    """A fix inserted where another fix inserts more (``ave.barrier()`` where another
    finding's fix inserts ``ave.wait_async(1)`` and ``ave.barrier()``): applying both put
    two barriers there; the larger one does what the smaller does (its lines include the
    other's, at the same place). The smaller result then carries no fix and names the
    larger in ``properties.fixedWith``, as identical fixes do (and results that named the
    smaller name the larger)."""
    ins = {i: _insertion(r) for i, r in enumerate(results)}
    moved: dict[int, int] = {}
    for i, a in ins.items():
        if a is None:
            continue
        best = None
        for j, b in ins.items():
            if j == i or b is None or b[:3] != a[:3] or len(b[3]) <= len(a[3]):
                continue
            rest = list(b[3])
            if all(x in rest and not rest.remove(x) for x in a[3]):
                if best is None or len(b[3]) > len(ins[best][3]):
                    best = j
        if best is not None:
            moved[i] = best
    for i, j in moved.items():
        while j in moved:               # (the largest of a chain)
            j = moved[j]
        del results[i]["fixes"]
        results[i].setdefault("properties", {})["fixedWith"] = j
    for r in results:
        props = r.get("properties", {})
        k = props.get("fixedWith")
        while k in moved:
            k = moved[k]
        if k is not None:
            props["fixedWith"] = k


def _dir_uri(path: str) -> str:
    uri = Path(path).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def format_sarif(report: dict, **kwargs) -> str:
    return dump_json(to_sarif(report, **kwargs))


def dump_json(obj: Any) -> str:
    """JSON text (indented, non-ASCII as it is, a newline at the end) that is valid UTF-8:
    where a string holds a lone surrogate (the escape of a file name's bytes that are no
    UTF-8), every non-ASCII character is escaped instead (the raw byte made the output
    unreadable as JSON; a review helper)."""
    text = json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, indent=2, ensure_ascii=True) + "\n"
    return text
