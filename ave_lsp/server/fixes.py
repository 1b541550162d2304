"""Quick fixes carried by diagnostics: the one definition of the ``fix`` contract.

A layer of Ave (the front end, the analysis) that knows the mechanical fix of a finding
attaches it to the :class:`ave_core.diagnostics.Diagnostic` as ``fix`` (a JSON object);
the report's JSON carries it as ``"fix"``, the language server as ``data["fix"]`` of the
LSP diagnostic, and :func:`code_actions` turns it into a ``quickfix`` code action with a
``WorkspaceEdit``. Lines and ranges are LSP's (0-based lines, UTF-16 columns) in the
diagnostic's own ``file``; the server drops the fix of a diagnostic reported in another
file than the document (a finding inside a helper, shown at the call site).

The kinds (any other ``kind``, or a malformed object, offers nothing):

``view_shape`` — make an ``ave.view`` cover exactly the bytes of its source (AVE106)::

    {"kind": "view_shape",
     "range": {"start": {"line": L, "character": C}, "end": {...}},  # the extent's text
     "old": "64",          # the text in "range" when the diagnostic was computed
     "new": "32",          # what replaces it (a number, or e.g. "BK // 2")
     "shape": [64, 32],    # the view's corrected shape (this specialization)
     "dtype": "f32",       # the view's dtype
     "bytes": 8192}        # the source's byte size (= prod(shape) * dtype bytes)

  The edit replaces ``range`` by ``new``; it is not offered when the document no longer
  reads ``old`` there (the diagnostic is stale), nor when two diagnostics on the same
  range (two specializations) want different texts.

``insert_barrier`` — insert the missing barrier::

    {"kind": "insert_barrier",
     "line": L,            # 0-based line the barrier is inserted before (may be the
                           # line count: append at the end)
     "indent": "        ", # the new line's indentation (spaces and tabs only)
     "reason": "..."}      # optional: shown in the action's title

  The edit inserts ``{indent}{alias}.barrier()`` and a line end (the document's own) at
  the start of line ``L``, where ``{alias}`` is the name under which the document imports
  ``ave_core.lang`` (``import ave_core.lang as ave`` -> ``ave.barrier()``; ``from
  ave_core.lang import barrier as bar`` -> ``bar()``). Not offered when the document does
  not import it, nor when line ``L`` or the line before it (blank lines skipped)
  already is that call.

``insert_wait`` — wait for an asynchronous copy still in flight (AVE207)::

    {"kind": "insert_wait",
     "line": L, "indent": "    ",   # as for insert_barrier
     "count": N,           # the ave.wait_async(N) that retires the copy's group there
     "commit": false,      # true: the copy is not committed yet (ave.commit_async() first)
     "reason": "..."}      # optional: shown in the action's title

  The edit inserts ``{alias}.commit_async()`` (when ``commit``), ``{alias}.wait_async(N)``
  and ``{alias}.barrier()`` (other threads' copies become visible after it), one per line
  at ``indent``, before line ``L``. Not offered when the document does not import
  ``ave_core.lang``, nor when the lines before ``L``, or from ``L`` on (a stale
  diagnostic), already are those calls (blank lines skipped).

``set_wait_count`` — wait for more copies at an existing wait (AVE207: a read of bytes
an asynchronous copy still has in flight, behind an ``ave.wait_async(n)`` and a barrier
that leave its group in flight)::

    {"kind": "set_wait_count",
     "range": {"start": {"line": L, "character": C}, "end": {...}},  # the count's literal
     "old": "2",           # the text in "range" when the diagnostic was computed
     "new": "1",           # the count that retires the copy's group (a lower count
                           # only waits longer: right in every execution of the wait)
     "line": L,            # the wait's line (for the title)
     "reason": "..."}      # optional: shown in the action's title

  The edit replaces ``range`` by ``new``; not offered when the document no longer reads
  ``old`` there, when ``new`` is not a non-negative integer literal, or when two
  diagnostics want different counts for the same wait (see :func:`code_actions`).

Pure functions of the document's text and the diagnostics: only the standard library
and lsprotocol are imported.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any, Iterable

from lsprotocol import types

from ave_core.diagnostics import parse_source

VIEW_SHAPE = "view_shape"
INSERT_BARRIER = "insert_barrier"
INSERT_WAIT = "insert_wait"
SET_WAIT_COUNT = "set_wait_count"

_LINE_END = re.compile(r"\r\n|\r|\n")
_INDENT = re.compile(r"[ \t]*\Z")


# ----------------------------------------------------------------------------- helpers

def _lines(text: str) -> list[str]:
    return _LINE_END.split(text)


def _utf16_index(s: str, units: int) -> int | None:
    """A UTF-16 column -> a code-point index into ``s``; None past the end or inside a
    surrogate pair."""
    n = 0
    for i, ch in enumerate(s):
        if n == units:
            return i
        if n > units:
            return None
        n += 2 if ord(ch) > 0xFFFF else 1
    return len(s) if n == units else None


def _text_at(text: str, rng: types.Range) -> str | None:
    """The document's text in a single-line range, or None if the range does not fit."""
    lines = _lines(text)
    if rng.start.line != rng.end.line or not 0 <= rng.start.line < len(lines):
        return None
    src = lines[rng.start.line]
    a = _utf16_index(src, rng.start.character)
    b = _utf16_index(src, rng.end.character)
    if a is None or b is None or b < a:
        return None
    return src[a:b]


def _range(obj: Any) -> types.Range | None:
    try:
        s, e = obj["start"], obj["end"]
        vals = [s["line"], s["character"], e["line"], e["character"]]
    except (TypeError, KeyError):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in vals):
        return None
    return types.Range(types.Position(vals[0], vals[1]), types.Position(vals[2], vals[3]))


def barrier_call(text: str) -> str | None:
    """How the document calls ``ave_core.lang.barrier``: ``"ave.barrier()"`` for
    ``import ave_core.lang as ave``, ``"lang.barrier()"`` for ``from ave_core import
    lang``, ``"barrier()"`` for ``from ave_core.lang import barrier`` (or ``*``); None
    when it does not import it (or does not parse). Module-level imports only, the
    first that fits."""
    return lang_call(text, "barrier")


def lang_call(text: str, name: str, args: str = "") -> str | None:
    """How the document calls ``ave_core.lang.<name>(args)`` (see :func:`barrier_call`)."""
    for imp in _module_imports(text) or ():
        if imp[0] == "import":
            _, mod, asname = imp
            if mod == "ave_core.lang":
                return f"{asname or 'ave_core.lang'}.{name}({args})"
        else:
            _, mod, what, asname = imp
            if mod == "ave_core" and what == "lang":
                return f"{asname or 'lang'}.{name}({args})"
            if mod == "ave_core.lang" and what in (name, "*"):
                return f"{asname if what == name and asname else name}({args})"
    return None


@functools.lru_cache(maxsize=4)
def _module_imports(text: str) -> tuple | None:
    """The document's module-level imports, in order: ``("import", module, asname)`` and
    ``("from", module, name, asname)``; None when it does not parse. (Kept for the last
    few texts: one code-action request spells several calls, for several diagnostics.)"""
    try:
        tree = parse_source(text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            out += [("import", a.name, a.asname) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out += [("from", node.module, a.name, a.asname) for a in node.names]
    return tuple(out)


def _line_end(text: str) -> str:
    m = _LINE_END.search(text)
    return m.group(0) if m else "\n"


# ----------------------------------------------------------------------------- edits

def edit_for(fix: Any, text: str) -> tuple[str, types.TextEdit] | None:
    """``(title, edit)`` of one ``fix`` object on the document ``text``, or None when
    the fix is malformed, of an unknown kind, or does not apply to this text."""
    if not isinstance(fix, dict):
        return None
    kind = fix.get("kind")
    if kind == VIEW_SHAPE:
        return _view_shape(fix, text)
    if kind == INSERT_BARRIER:
        return _insert_barrier(fix, text)
    if kind == INSERT_WAIT:
        return _insert_wait(fix, text)
    if kind == SET_WAIT_COUNT:
        return _set_wait_count(fix, text)
    return None


def _set_wait_count(fix: dict, text: str) -> tuple[str, types.TextEdit] | None:
    rng = _range(fix.get("range"))
    old, new, line = fix.get("old"), fix.get("new"), fix.get("line")
    if rng is None or not isinstance(old, str) or not isinstance(new, str) or \
            not re.fullmatch(r"[0-9]+", new) or new == old:
        return None
    if _text_at(text, rng) != old:
        return None                       # the document changed since the check
    where = f" at line {line + 1}" if isinstance(line, int) and \
        not isinstance(line, bool) else ""
    title = f"Change the wait's count {old} -> {new}{where}"
    reason = fix.get("reason")
    if isinstance(reason, str) and reason.strip():
        title += f" ({' '.join(reason.split())})"
    return title, types.TextEdit(rng, new)


def _view_shape(fix: dict, text: str) -> tuple[str, types.TextEdit] | None:
    rng = _range(fix.get("range"))
    old, new = fix.get("old"), fix.get("new")
    if rng is None or not isinstance(old, str) or not isinstance(new, str) or not new \
            or "\n" in new or "\r" in new:
        return None
    if _text_at(text, rng) != old:
        return None                       # the document changed since the check
    shape = fix.get("shape")
    dtype = fix.get("dtype")
    nbytes = fix.get("bytes")
    what = ""
    if isinstance(shape, list) and all(isinstance(s, int) for s in shape) and shape:
        what = f": shape ({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
        if isinstance(dtype, str):
            what += f" of {dtype}"
    size = f"{nbytes} bytes" if isinstance(nbytes, int) else "bytes"
    title = f"Make the view cover the source's {size}{what} ({old} -> {new})"
    return title, types.TextEdit(rng, new)


def _insert_barrier(fix: dict, text: str) -> tuple[str, types.TextEdit] | None:
    line, indent = fix.get("line"), fix.get("indent", "")
    if not isinstance(line, int) or isinstance(line, bool) or not isinstance(indent, str) \
            or not _INDENT.match(indent):
        return None
    lines = _lines(text)
    if not 0 <= line <= len(lines):
        return None
    call = barrier_call(text)
    if call is None:
        return None
    prev = line - 1
    while prev >= 0 and not lines[prev].strip():
        prev -= 1
    if (prev >= 0 and lines[prev].strip() == call) or \
            (line < len(lines) and lines[line].strip() == call):
        return None                       # already there
    eol = _line_end(text)
    if line < len(lines):
        pos = types.Position(line, 0)
        new_text = indent + call + eol
    else:                                 # after the last line
        last = len(lines) - 1
        pos = types.Position(last, _utf16_len(lines[last]))
        new_text = indent + call + eol if lines[last] == "" else eol + indent + call
    reason = fix.get("reason")
    title = f"Insert {call} before line {line + 1}"
    if isinstance(reason, str) and reason.strip():
        title += f" ({' '.join(reason.split())})"
    return title, types.TextEdit(types.Range(pos, pos), new_text)


def _insert_wait(fix: dict, text: str) -> tuple[str, types.TextEdit] | None:
    line, indent, count = fix.get("line"), fix.get("indent", ""), fix.get("count")
    commit = fix.get("commit", False)
    if not isinstance(line, int) or isinstance(line, bool) or not isinstance(indent, str) \
            or not _INDENT.match(indent) or not isinstance(count, int) \
            or isinstance(count, bool) or count < 0 or not isinstance(commit, bool):
        return None
    lines = _lines(text)
    if not 0 <= line < len(lines):
        return None
    wait = lang_call(text, "wait_async", str(count))
    barrier = lang_call(text, "barrier")
    commit_call = lang_call(text, "commit_async")
    if wait is None or barrier is None or commit_call is None:
        return None
    calls = ([commit_call] if commit else []) + [wait, barrier]
    before = [ln.strip() for ln in lines[:line] if ln.strip()][-len(calls):]
    after = [ln.strip() for ln in lines[line:] if ln.strip()][:len(calls)]
    if calls in (before, after):
        return None                       # already there (the diagnostic may be stale)
    eol = _line_end(text)
    pos = types.Position(line, 0)
    reason = fix.get("reason")
    title = f"Insert {' and '.join(calls)} before line {line + 1}"
    if isinstance(reason, str) and reason.strip():
        title += f" ({' '.join(reason.split())})"
    return title, types.TextEdit(types.Range(pos, pos),
                                 "".join(indent + c + eol for c in calls))


def _utf16_len(s: str) -> int:
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


# ----------------------------------------------------------------------------- actions

def fix_of(diagnostic: types.Diagnostic) -> dict | None:
    """The ``fix`` object in an LSP diagnostic's ``data``, if any."""
    data = diagnostic.data
    if isinstance(data, dict) and isinstance(data.get("fix"), dict):
        return data["fix"]
    return None


def code_actions(text: str, diagnostics: Iterable[types.Diagnostic],
                 make_edit: Any) -> list[types.CodeAction]:
    """The quick fixes of ``diagnostics`` (each with its ``data["fix"]``) on ``text``.

    ``make_edit(edits)`` wraps a list of :class:`TextEdit` of the document into a
    :class:`WorkspaceEdit` (the server knows the URI, version and client capabilities).
    Identical edits (the same fix reported by several specializations) give one action;
    different edits of the same range give none (ambiguous).
    """
    found: list[tuple[str, types.TextEdit, list[types.Diagnostic]]] = []
    conflicts: set[tuple] = set()
    for d in diagnostics:
        fix = fix_of(d)
        if fix is None:
            continue
        got = edit_for(fix, text)
        if got is None:
            continue
        title, edit = got
        rkey = (edit.range.start.line, edit.range.start.character,
                edit.range.end.line, edit.range.end.character)
        for i, (t, e, ds) in enumerate(found):
            ekey = (e.range.start.line, e.range.start.character,
                    e.range.end.line, e.range.end.character)
            if ekey == rkey and e.new_text == edit.new_text:
                ds.append(d)
                break
            if ekey == rkey and edit.range.start != edit.range.end:
                conflicts.add(rkey)       # two replacements of one range disagree
                break
        else:
            found.append((title, edit, [d]))
    out = []
    for title, edit, ds in found:
        r = edit.range
        if (r.start.line, r.start.character, r.end.line, r.end.character) in conflicts:
            continue
        out.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix,
                                    diagnostics=ds, edit=make_edit([edit]),
                                    is_preferred=True))
    return out
