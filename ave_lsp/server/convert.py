"""Ave diagnostics -> LSP diagnostics, and ``# ave: ignore`` suppression comments.

Everything here is pure (no server state) and imports only the standard library,
:mod:`lsprotocol` and :mod:`ave_core.diagnostics`, so it is cheap at start-up and easy to
test.

* :func:`to_lsp` converts the diagnostics of one :class:`~ave_core.check.FileReport` for
  the document they were computed for: range, severity, ``code``, ``codeDescription``
  (a ``file://`` URI of ``docs/codes/<CODE>.md``), ``source`` ``"ave"``, a one-line message,
  ``relatedInformation`` (one entry per related location) and ``data``
  (``{"witness": ..., "notes": [...]}``, and ``"fix"`` when the finding has a mechanical
  fix in this document: :mod:`ave_lsp.server.fixes`). Diagnostics whose start line carries
  ``# ave: ignore`` or ``# ave: ignore[CODE, ...]`` naming their code are dropped.
* :func:`suppress_edit` is the "suppress with a comment" quick fix: the edit that adds
  ``  # ave: ignore[CODE]`` at the end of a line (or adds the code to the line's existing
  ``ignore[...]`` list).

Ranges are already LSP ranges (0-based lines, UTF-16 columns); the server makes sure the
negotiated position encoding is UTF-16.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote

from lsprotocol import types

from ave_core.diagnostics import IGNORE_CODE_SPLIT as _CODE_SPLIT
from ave_core.diagnostics import (IGNORE_RE, Diagnostic, through_calls, utf16_len,
                                  utf16_to_index)

SOURCE = "ave"

# IGNORE_RE (ave_core.diagnostics): ``# ave: ignore`` (every code; the comment ends there,
# or another ``#`` comment follows: ``# ave: ignore  # why``) or ``# ave: ignore[CODE,
# ...]``. Anything else after ``ignore`` -- ``ignore(AVE203)``, ``ignore AVE203``,
# ``ignore-foo`` -- suppresses nothing (it suppressed every code on the line: a typo hid an
# error; a review helper) and is reported (AVE122, by the front end).

#: Codes the "suppress" quick fix is not offered for (failures of the tool, not findings).
#: AVE902 (a file over ``maxFileLines``) is not a finding either: the setting is its switch.
NOT_SUPPRESSIBLE = frozenset({"AVE900", "AVE901", "AVE902"})


# ----------------------------------------------------------------------------- URIs

def path_to_uri(path: str) -> str:
    """A ``file://`` URI for a filesystem path (made absolute)."""
    return Path(os.path.abspath(path)).as_uri()


def docs_dir() -> Path:
    """``docs/codes`` of the installed repository (resolved relative to the package)."""
    return Path(__file__).resolve().parents[2] / "docs" / "codes"


@lru_cache(maxsize=None)
def code_href(code: str) -> str | None:
    """``file://`` URI of ``docs/codes/<CODE>.md``, or None if the page is missing."""
    page = docs_dir() / f"{code}.md"
    return page.as_uri() if page.is_file() else None


# ----------------------------------------------------------------------------- comments

@dataclass
class LineComments:
    """The comments of a document, by 0-based line, found with :mod:`tokenize` (so a
    ``#`` inside a string is not a comment), and the lines that cannot take a trailing
    comment (a backslash continuation, or inside a multi-line string)."""

    comments: dict[int, tuple[int, str]] = field(default_factory=dict)  # line -> (col, text)
    no_comment: set[int] = field(default_factory=set)
    #: the lines ending with a backslash continuation (outside strings): a statement
    #: starting there is suppressed on the first line after it that does not (no comment
    #: can follow a backslash: such a finding could not be suppressed; a review helper)
    backslash: set[int] = field(default_factory=set)

    def target(self, line: int) -> int:
        """The line whose comment suppresses a finding on ``line``: itself, or past a
        backslash continuation, the first line of the statement that can take one."""
        while line in self.backslash:
            line += 1
        return line

    @classmethod
    def of(cls, text: str) -> "LineComments":
        out = cls()
        lines = _lines(text)
        # tokenize splits lines on "\n" only; LSP also ends lines at "\r\n" and "\r"
        norm = "".join(line + "\n" for line in lines)
        last_line = -1
        try:
            for tok in tokenize.generate_tokens(io.StringIO(norm).readline):
                (sl, sc), (el, _ec) = tok.start, tok.end
                last_line = max(last_line, el - 1)
                if tok.type == tokenize.COMMENT:
                    out.comments[sl - 1] = (sc, tok.string)
                elif el > sl and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                    # a token spanning lines (a triple-quoted string): its inner lines
                    out.no_comment.update(range(sl - 1, el - 1))
        except (tokenize.TokenError, SyntaxError, ValueError):
            # the rest of the file does not tokenize: fall back to a plain search
            for i in range(last_line + 1, len(lines)):
                j = lines[i].find("#")
                if j >= 0:
                    out.comments[i] = (j, lines[i][j:])
        for i, line in enumerate(lines):
            if i not in out.comments and line.rstrip().endswith("\\"):
                if i not in out.no_comment:
                    out.backslash.add(i)
                out.no_comment.add(i)
        return out

    def ignored_codes(self, line: int) -> set[str] | None | bool:
        """What ``# ave: ignore`` on ``line`` suppresses: ``None`` everything, a set of
        codes, or ``False`` nothing."""
        c = self.comments.get(line)
        if c is None:
            return False
        codes: set[str] = set()
        for m in IGNORE_RE.finditer(c[1]):
            if m.group(1) is None:
                return None
            codes.update(s.upper() for s in _CODE_SPLIT.split(m.group(1)) if s)
        return codes if codes else False

    def is_suppressed(self, line: int, code: str) -> bool:
        ignored = self.ignored_codes(self.target(line))
        return ignored is None or (ignored is not False and code.upper() in ignored)


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as LSP counts them (``\\n``, ``\\r\\n``, ``\\r``), no ends."""
    return re.split(r"\r\n|\r|\n", text)


def suppress_edit(text: str, line: int, code: str,
                  comments: LineComments | None = None) -> types.TextEdit | None:
    """The edit that suppresses ``code`` on ``line``: ``  # ave: ignore[CODE]`` appended
    at the end of the line, or ``, CODE`` added to the line's ``# ave: ignore[...]``.
    None when the line cannot take a comment, already suppresses the code, or the edit
    would not suppress it (the line's comment holds an unclosed ``# ave: ignore[AVE201``:
    the appended ``# ave: ignore[AVE207]`` was read as part of that list, and the action
    suppressed nothing; a review helper)."""
    edit = _suppress_edit(text, line, code, comments)
    if edit is None:
        return None
    src = _lines(text)[edit.range.start.line]
    at = utf16_to_index(src, edit.range.start.character)
    after = LineComments.of(src[:at] + edit.new_text + src[at:])
    return edit if after.is_suppressed(0, code) else None


def _suppress_edit(text: str, line: int, code: str,
                   comments: LineComments | None = None) -> types.TextEdit | None:
    lines = _lines(text)
    if not 0 <= line < len(lines):
        return None
    comments = comments or LineComments.of(text)
    line = comments.target(line)            # (past a backslash continuation)
    if not 0 <= line < len(lines) or line in comments.no_comment or \
            comments.is_suppressed(line, code):
        return None
    src = lines[line]
    c = comments.comments.get(line)
    if c is not None:
        col, comment = c
        matches = [m for m in IGNORE_RE.finditer(comment) if m.group(1) is not None]
        if matches:
            m = matches[-1]
            inner = m.group(1)
            close = col + m.end() - 1              # the "]" (code points in the line)
            sep = ", " if inner.strip() else ""
            if inner.rstrip().endswith(","):
                sep = " "
            pos = types.Position(line, utf16_len(src[:close]))
            return types.TextEdit(types.Range(pos, pos), f"{sep}{code}")
    end = types.Position(line, utf16_len(src))
    return types.TextEdit(types.Range(end, end), f"  # ave: ignore[{code}]")


# ----------------------------------------------------------------------------- conversion

def one_line(message: str) -> str:
    """The message on one line (later lines joined with spaces)."""
    parts = [p.strip() for p in message.splitlines() if p.strip()]
    return " ".join(parts) if parts else message.strip()


def _range(r) -> types.Range:
    return types.Range(types.Position(r.start.line, r.start.character),
                       types.Position(r.end.line, r.end.character))


def _same_file(a: str, b: str) -> bool:
    if a == b:
        return True
    if a.startswith("<") or b.startswith("<"):
        return False
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def display_line(d: Diagnostic, checked: str) -> int:
    """The line of the checked file a diagnostic is shown on: its own, or for one in
    another file (a helper inlined from elsewhere) its first related location in the
    checked file (the call), else the first line."""
    if _same_file(d.file, checked):
        return d.range.start.line
    here = next((r for r in d.related if _same_file(r.location.file, checked)), None)
    return here.location.range.start.line if here else 0


def is_suppressed(d: Diagnostic, checked: str, comments_of: Any) -> bool:
    """``# ave: ignore`` drops ``d``: on the line it starts on, in its own file, on the
    line the checked file shows it on (:func:`display_line`), or on a call between the
    kernel's call and the helper it is in (``THROUGH_CALL`` related locations). ``comments_of(file)`` gives
    a file's :class:`LineComments` (None: unreadable). One rule for the editor
    (:func:`to_lsp`) and ``ave-lsp --check`` (``cli.Suppressions``)."""
    if d.code in NOT_SUPPRESSIBLE:
        return False        # (the tool's own failures and limits: docs/lsp.md)
    places = [(d.file, d.range.start.line)]
    if not _same_file(d.file, checked):
        places.append((checked, display_line(d, checked)))
        # (and the calls between the kernel's and the helper it is in)
        places += [(f, rng.start.line) for f, rng in through_calls(d)]
    for f, line in places:
        c = comments_of(f)
        if c is not None and c.is_suppressed(line, d.code):
            return True
    return False


def _comments_reader(path: str, text: str, root: str | None) -> Any:
    """``comments_of(file)`` for :func:`is_suppressed`: the editor's buffer for the
    document ``path`` itself, other files from disk (once each)."""
    others: dict[str, LineComments | None] = {}

    def comments_of(f: str) -> LineComments | None:
        if _same_file(f, path):
            f = path
            if f not in others:
                others[f] = LineComments.of(text)       # (the editor's buffer)
        if f not in others:
            from ave_core.check import read_source
            src = None if f.startswith("<") else read_source(
                f if os.path.isabs(f) or not root else os.path.join(root, f))[0]
            others[f] = LineComments.of(src) if src is not None else None
        return others[f]
    return comments_of


def drop_suppressed(diagnostics: Iterable[Diagnostic], *, path: str, text: str,
                    root: str | None = None) -> list[Diagnostic]:
    """The diagnostics of one check of the document ``path`` (contents ``text``) that no
    ``# ave: ignore`` comment suppresses (:func:`is_suppressed`). The server filters them
    before the baseline, as ``ave-lsp --check`` does: a suppressed finding took the
    baseline entry of another (a review helper)."""
    comments_of = _comments_reader(path, text, root)
    return [d for d in diagnostics if not is_suppressed(d, path, comments_of)]


def to_lsp(diagnostics: Iterable[Diagnostic], *, path: str, uri: str, text: str,
           root: str | None = None) -> list[types.Diagnostic]:
    """Convert the diagnostics of one check of the document ``uri`` (checked as
    ``path``, with contents ``text``) and drop those suppressed by a comment.

    A diagnostic pointing into another file (a helper inlined from elsewhere) is shown
    in this document at its first related location here (the call site), or at the
    top of the file, with the other file's location prefixed to the message and first
    in ``relatedInformation``. It is suppressed by a comment on that line here, or on its
    own line in the other file (read from disk), as ``ave-lsp --check`` does (the editor
    ignored the helper file's comment; a review helper).
    """
    out: list[types.Diagnostic] = []
    comments_of = _comments_reader(path, text, root)

    def file_uri(f: str) -> str:
        if _same_file(f, path):
            return uri
        if f.startswith("<"):
            return "untitled:" + quote(f.strip("<>"))
        if not os.path.isabs(f) and root:
            f = os.path.join(root, f)
        return path_to_uri(f)

    for d in diagnostics:
        if is_suppressed(d, path, comments_of):
            continue
        related = [types.DiagnosticRelatedInformation(
            types.Location(file_uri(r.location.file), _range(r.location.range)),
            one_line(r.message) or "related")
            for r in d.related]
        rng = _range(d.range)
        message = one_line(d.message)
        if not _same_file(d.file, path):
            here = next((r for r in d.related if _same_file(r.location.file, path)), None)
            where = f"{_display(d.file, root)}:{d.range.start.line + 1}:" \
                    f"{d.range.start.character + 1}"
            related.insert(0, types.DiagnosticRelatedInformation(
                types.Location(file_uri(d.file), rng), f"{d.code} reported here"))
            rng = _range(here.location.range) if here else types.Range(
                types.Position(0, 0), types.Position(0, 0))
            message = f"{where}: {message}"
        href = code_href(d.code)
        data = {"witness": d.witness, "notes": list(d.notes)}
        fix = getattr(d, "fix", None)
        if fix is not None and _same_file(d.file, path):
            data["fix"] = fix           # ranges in this document (see fixes.py)
        out.append(types.Diagnostic(
            range=rng,
            message=message,
            severity=types.DiagnosticSeverity(int(d.severity)),
            code=d.code,
            code_description=types.CodeDescription(href=href) if href else None,
            source=SOURCE,
            related_information=related or None,
            data=data,
        ))
    return out


def _display(f: str, root: str | None) -> str:
    if root and not f.startswith("<"):
        try:
            rel = os.path.relpath(f, root)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return f
