"""The one diagnostic model of Ave.

Every layer (front end, analysis, interpreter, code generation, language server) reports
through :class:`Diagnostic`. Ranges are LSP ranges: 0-based lines, and columns counted in
**UTF-16 code units** (LSP's default ``positionEncoding``). Python's :mod:`ast` gives
1-based lines and **UTF-8 byte** column offsets; :class:`SourceText` converts.

Codes are stable and grouped by layer:

* ``AVE1xx`` front end (syntax, unsupported constructs, types, layouts),
* ``AVE2xx`` analysis (assertions, witnesses, solver),
* ``AVE3xx`` interpreter dynamic checks,
* ``AVE4xx`` code generation and JIT,
* ``AVE9xx`` tool errors (internal errors, unreadable files).

The JSON output of ``ave-lsp --check --format json`` is described by the versioned JSON
Schema shipped in ``ave_core/schema/check-output.v<N>.json`` (see :func:`report_schema`).
"""

from __future__ import annotations

import ast
import bisect
import enum
import json
import re
import threading
import warnings
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Iterable, Sequence

#: Version of the JSON output schema (``"version"`` in the report).
SCHEMA_VERSION = "1.8"


class Severity(enum.IntEnum):
    """Diagnostic severity, numbered as LSP's ``DiagnosticSeverity``."""

    ERROR = 1
    WARNING = 2
    INFO = 3
    HINT = 4

    @property
    def label(self) -> str:
        """Lower-case name used in text and JSON output (``"error"``)."""
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str) -> "Severity":
        return cls[label.upper()]


@dataclass(frozen=True)
class CodeInfo:
    """A diagnostic code: its stable name, short title, default severity and summary."""

    code: str
    title: str
    severity: Severity
    summary: str


def _c(code: str, title: str, severity: Severity, summary: str) -> CodeInfo:
    return CodeInfo(code, title, severity, summary)


_E, _W = Severity.ERROR, Severity.WARNING

#: Registry of every diagnostic code Ave emits. Docs pages live in ``docs/codes/<CODE>.md``.
CODES: dict[str, CodeInfo] = {
    c.code: c
    for c in (
        _c("AVE100", "syntax error", _E, "The file is not valid Python."),
        _c("AVE101", "unsupported construct", _E,
           "A Python construct the Ave front end does not translate (e.g. while, try, "
           "with, generators, classes inside kernels)."),
        _c("AVE102", "unknown DSL name", _E,
           "A name is neither a DSL function, a kernel parameter, a local variable, a "
           "helper function nor a module-level constant."),
        _c("AVE103", "non-constant workgroup size", _E,
           "`@ave.kernel(threads=...)` must be a compile-time integer."),
        _c("AVE104", "wrong arity", _E,
           "A DSL function, helper or lambda was called with the wrong arguments."),
        _c("AVE105", "wrong dtype", _E, "An operand has a dtype the operation does not accept."),
        _c("AVE106", "view byte mismatch", _E,
           "`ave.view` must cover exactly the bytes of its source."),
        _c("AVE107", "layout does not cover tile", _E,
           "A layout's domain does not match the tile's shape, or a TV layout leaves tile "
           "elements without a thread, or a layout maps outside its allocation."),
        _c("AVE108", "vector width does not divide the row", _E,
           "`vector_bytes` must divide the bytes of the tile's innermost dimension."),
        _c("AVE109", "misaligned vector access", _E,
           "A vector access is not contiguous or not aligned to its width in a layout."),
        _c("AVE110", "MMA operand layout/shape mismatch", _E,
           "An `ave.mma` operand's shape or TV layout is not the one the tiled MMA expects."),
        _c("AVE111", "constexpr without a value", _E,
           "A constexpr parameter has no default, no `configs` value and no launch value."),
        _c("AVE112", "tag function not arithmetic on coordinates", _E,
           "A tag function may only use its coordinates, integer constants and + - * // %."),
        _c("AVE113", "import not resolved", _E,
           "A helper imported from another file of the workspace could not be found or read."),
        _c("AVE114", "recursive helper", _E, "Helper functions are inlined and cannot recurse."),
        _c("AVE115", "compile-time value required", _E,
           "A runtime value was used where the front end needs a compile-time value "
           "(a shape, a layout, a constexpr, a static loop bound)."),
        _c("AVE116", "shape mismatch", _E, "Operand shapes do not agree."),
        _c("AVE117", "invalid configuration", _E,
           "A `configs` entry or decorator argument is malformed or names no constexpr."),
        _c("AVE118", "type error", _E, "An operand has the wrong kind (tile, fragment, scalar...)."),
        _c("AVE119", "index out of range", _E,
           "A compile-time index or slice falls outside the tile or tensor."),
        _c("AVE120", "invalid compile-time argument", _E,
           "A layout, atom or other compile-time constructor rejected its arguments "
           "(e.g. a swizzle with |S| < B, an MMA shape the instruction does not have)."),
        _c("AVE121", "resource limit", _E,
           "The kernel exceeds a front-end limit (unrolled iterations, IR size, inlining "
           "depth) that keeps checking fast and bounded."),
        _c("AVE122", "suppression comment not understood", _W,
           "A comment starting `# ave:` is not `# ave: ignore` or `# ave: ignore[CODE, ...]` "
           "naming Ave codes: it suppresses nothing."),
        _c("AVE201", "operand pairing violated", _E,
           "An ave.mma's operands, the two sides of an ave.assert_conform, or a value and the "
           "element of a tagged tensor it is stored into, pair elements whose tags disagree; "
           "the witness names the thread, iteration and coordinates."),
        _c("AVE202", "disjointness violated", _E,
           "The two tiles of an ave.assert_disjoint share bytes of shared memory."),
        _c("AVE203", "uninitialized shared-memory read", _W,
           "A shared-memory read of bytes nothing wrote since the kernel started or the last "
           "ave.reset (found statically, for every thread)."),
        _c("AVE204", "vacuous assertion", _W,
           "Every element an assertion compares is untagged (⊥): it proves nothing."),
        _c("AVE205", "assertion unknown", _E,
           "The checker could not decide an assertion (solver budget, a construct it does not "
           "model, too many unrolled variants); unknown is a finding, never a silent pass."),
        _c("AVE206", "accumulation not exactly once", _E,
           "An MMA accumulator chain sums some index of its reduction (k of a GEMM) twice, or "
           "never, over the unrolled loop: the right pairs of the wrong k-tile."),
        _c("AVE207", "shared-memory race", _E,
           "Two threads touch the same shared-memory bytes, at least one writing, with no "
           "barrier between them, or a thread reads bytes an asynchronous copy still has in "
           "flight (found statically, for every thread and trip count); an asynchronous "
           "copy counts from its issue to its wait."),
        _c("AVE208", "global access out of bounds", _E,
           "A load, copy or store of a global tensor can touch an element outside its shape "
           "that its mask does not exclude (found statically, for every program id and size)."),
        _c("AVE209", "divergent barrier", _E,
           "A barrier that some threads of the workgroup reach and others skip (a branch on "
           "the thread or warp id around it): a deadlock or undefined behaviour on the GPU."),
        _c("AVE301", "global out-of-bounds access", _E,
           "The interpreter saw a load or store of a global tensor element outside its shape."),
        _c("AVE302", "shared memory outside its allocation", _E,
           "The interpreter saw a shared-memory access outside the allocation of its tile."),
        _c("AVE303", "uninitialized shared-memory read", _E,
           "The interpreter saw a read of shared-memory bytes that nothing had written."),
        _c("AVE304", "shared-memory data race", _E,
           "Two threads accessed the same shared-memory bytes between two barriers, at least "
           "one of them writing (or a read of bytes with an asynchronous copy in flight)."),
        _c("AVE305", "divergent collective operation", _E,
           "A barrier or collective operation was reached by only some threads, or with "
           "per-thread values where one value for the workgroup is needed."),
        _c("AVE306", "kernel precondition violated", _E,
           "The interpreter reached an ave.assume whose condition is false for this launch: "
           "the sizes or arguments break the kernel's stated contract."),
        _c("AVE401", "not supported by the code generator", _E,
           "The code generator cannot express an op, layout or target (yet): the range is the "
           "op's, or the kernel's for a kernel written for the other GPU vendor. Checking and "
           "the interpreter are unaffected."),
        _c("AVE900", "internal error", _E,
           "Ave itself failed; please report it with the file that triggered it."),
        _c("AVE901", "file not readable", _E, "A path given to the checker cannot be read."),
        _c("AVE902", "file not checked (too long)", Severity.INFO,
           "The file has more lines than the maxFileLines setting allows; it was not "
           "checked."),
    )
}


#: A suppression comment: ``# ave: ignore`` (group 1 None: every code on the line) or ``#
#: ave: ignore[CODE, ...]`` (group 1: the codes, split by :data:`IGNORE_CODE_SPLIT`). A bare
#: ``ignore`` ends the comment or is followed by another ``#`` comment (see docs/lsp.md).
IGNORE_RE = re.compile(r"#\s*ave\s*:\s*ignore(?:\s*\[([^\]]*)\]|(?=\s*(?:#|$)))",
                       re.IGNORECASE)
IGNORE_CODE_SPLIT = re.compile(r"[\s,]+")
_DIRECTIVE_RE = re.compile(r"#\s*ave\s*:", re.IGNORECASE)


def suppression_problems(comment: str) -> list[tuple[int, int, str]]:
    """What is wrong with the Ave suppressions of one comment (a ``#`` token's text):
    ``(start, end, message)`` per problem, offsets into ``comment`` (code points). A
    directive ``# ave:`` that is not ``ignore`` or ``ignore[...]`` (``ignore(AVE203)``,
    ``ignore AVE203``, ``ignre``) suppresses nothing; nor does a list naming no code; a
    name in the list that is no Ave code (``AVE2O3``) suppresses nothing of its own."""
    out = []
    for d in _DIRECTIVE_RE.finditer(comment):
        m = IGNORE_RE.match(comment, d.start())
        end = comment.find("#", d.end())
        end = len(comment) if end < 0 else end
        text = comment[d.start():end].rstrip()
        if m is None:
            out.append((d.start(), d.start() + len(text),
                        f"`{text}` is not understood and suppresses nothing: write `# ave: "
                        f"ignore` (every code on the line) or `# ave: ignore[CODE, ...]`"))
            continue
        if m.group(1) is None:
            continue
        names = [n for n in IGNORE_CODE_SPLIT.split(m.group(1)) if n]
        if not names:
            out.append((m.start(), m.end(), f"`{m.group(0)}` names no code and suppresses "
                        "nothing: write `# ave: ignore[CODE, ...]` or `# ave: ignore`"))
        for n in names:
            if n.upper() not in CODES:
                at = comment.find(n, m.start(1))
                out.append((at, at + len(n), f"`{n}` in `{m.group(0)}` is no Ave code and "
                            "suppresses nothing (codes: AVE100 to AVE902; see docs/codes)"))
    return out


def register_code(info: CodeInfo) -> None:
    """Register a diagnostic code (used by later layers: analysis, interpreter, codegen).

    Raises:
        ValueError: the code is already registered with a different meaning.
    """
    old = CODES.get(info.code)
    if old is not None and old != info:
        raise ValueError(f"diagnostic code {info.code} already registered as {old.title!r}")
    CODES[info.code] = info


@dataclass(frozen=True, order=True)
class Position:
    """A position in a text document: 0-based ``line``, ``character`` in UTF-16 code units."""

    line: int
    character: int

    def to_json(self) -> dict:
        return {"line": self.line, "character": self.character}


@dataclass(frozen=True)
class Range:
    """A half-open range ``[start, end)`` in a text document (LSP ``Range``)."""

    start: Position
    end: Position

    @staticmethod
    def of(line: int, character: int, end_line: int, end_character: int) -> "Range":
        return Range(Position(line, character), Position(end_line, end_character))

    def to_json(self) -> dict:
        return {"start": self.start.to_json(), "end": self.end.to_json()}

    def contains(self, pos: Position) -> bool:
        return self.start <= pos < self.end or self.start == pos


ZERO_RANGE = Range(Position(0, 0), Position(0, 0))


@dataclass(frozen=True)
class Location:
    """A range in a file (``file`` is a path as given to the checker)."""

    file: str
    range: Range

    def to_json(self) -> dict:
        return {"file": self.file, "range": self.range.to_json()}


@dataclass(frozen=True)
class Related:
    """A related location of a diagnostic (LSP ``DiagnosticRelatedInformation``)."""

    location: Location
    message: str

    def to_json(self) -> dict:
        return {**self.location.to_json(), "message": self.message}


@dataclass
class Diagnostic:
    """One finding.

    Attributes:
        code: stable code registered in :data:`CODES` (``"AVE110"``).
        message: one line, no trailing period required.
        file: the file the range refers to.
        range: where (LSP conventions: 0-based, UTF-16 columns).
        severity: defaults to the code's severity.
        notes: further lines of explanation.
        related: related locations (witness steps, the definition that caused it...).
        witness: structured witness (analysis layer) or ``None``.
        fix: a mechanical fix of the finding, or ``None``: a JSON object whose ``kind``
            names its shape (``"view_shape"``, ``"insert_barrier"``; the shapes are
            defined in ``ave_lsp/server/fixes.py`` and docs/lsp.md). Its ranges and lines
            are in ``file``. The language server turns it into a quick fix.
        proposal: a better fix than ``fix`` that the analysis cannot vouch for alone,
            or ``None`` (not in the JSON): ``{"span": [[line, indent], ...]}`` -- the
            statements before which one barrier separates this race's accesses in the
            execution the witness came from -- and/or ``{"set_wait": fix}`` -- a
            ``set_wait_count`` fix. ``ave_lsp.fixplan`` applies proposals to the text,
            checks it again, and offers them only where that leaves the findings they
            claim to fix gone.
    """

    code: str
    message: str
    file: str
    range: Range
    severity: Severity | None = None
    notes: list[str] = field(default_factory=list)
    related: list[Related] = field(default_factory=list)
    witness: dict | None = None
    fix: dict | None = None
    proposal: dict | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unregistered diagnostic code {self.code!r}")
        if self.severity is None:
            self.severity = CODES[self.code].severity

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity.label,
            "message": self.message,
            "file": self.file,
            "range": self.range.to_json(),
            "notes": list(self.notes),
            "related": [r.to_json() for r in self.related],
            "witness": self.witness,
            **({"fix": self.fix} if self.fix is not None else {}),
        }

    def format_text(self) -> str:
        """``file:line:col: severity CODE message`` with 1-based line and column."""
        p = self.range.start
        return f"{self.file}:{p.line + 1}:{p.character + 1}: {self.severity.label} {self.code} {self.message}"

    def sort_key(self) -> tuple:
        # (a helper's findings, one per call of it: in call order)
        call = call_site(self)
        return (self.file, self.range.start, self.code,
                () if call is None else (call[0], call[1].start), self.message)


#: The message of the first related location of a finding in a helper from another file:
#: the kernel's call it was found in (each call is a finding of its own:
#: :attr:`ave_core.compiler.ir.Loc.report_key`; set by the analysis)
CALL_SITE = "the call of the helper it is in"
#: The message of the related locations after :data:`CALL_SITE`: the calls between the
#: kernel's and the finding (a helper calling the helper it is in), outermost first; a
#: ``# ave: ignore`` on one of them suppresses the finding too (it did nothing there)
THROUGH_CALL = "through this call"


def call_site(d: "Diagnostic | dict") -> tuple | None:
    """``(file, range)`` of the call of an imported helper a finding was found in, else
    None; ``d`` a :class:`Diagnostic` or its JSON form (``range`` then a dict)."""
    if isinstance(d, dict):
        rel = d.get("related") or []
        r = rel[0] if rel else None
        if isinstance(r, dict) and r.get("message") == CALL_SITE:
            return (r.get("file"), r.get("range"))
        return None
    r = d.related[0] if d.related else None
    if r is not None and r.message == CALL_SITE:
        return (r.location.file, r.location.range)
    return None


def through_calls(d: "Diagnostic") -> tuple:
    """``(file, range)`` of each call between the kernel's call and the helper a finding
    is in (:data:`THROUGH_CALL` related locations), outermost first."""
    return tuple((r.location.file, r.location.range) for r in d.related
                 if r.message == THROUGH_CALL)


class SourceText:
    """A source file's text with conversions from :mod:`ast` positions to LSP positions.

    ``ast`` nodes carry 1-based ``lineno`` and a ``col_offset`` in UTF-8 **bytes**; LSP
    wants 0-based lines and UTF-16 code-unit columns. Line ends ``\\n``, ``\\r\\n`` and
    ``\\r`` are all recognised, as both Python and LSP do.
    """

    def __init__(self, text: str, path: str = "<string>") -> None:
        self.text = text
        self.path = path
        self.lines: list[str] = _split_lines(text)
        # per line: whether it is pure ASCII (then byte, code-point and UTF-16 columns agree);
        # filled lazily. And the ranges already converted, by ast position (many IR ops share
        # one node's range).
        self._ascii: list[bool | None] = [None] * len(self.lines)
        self._ranges: dict[tuple, Range] = {}

    def line(self, lineno0: int) -> str:
        """The text of 0-based line ``lineno0`` without its line end ('' past the end)."""
        return self.lines[lineno0] if 0 <= lineno0 < len(self.lines) else ""

    def position(self, lineno: int, col_utf8: int) -> Position:
        """Convert an ``ast`` position (1-based line, UTF-8 byte column) to a Position."""
        line0 = max(0, lineno - 1)
        text = self.line(line0)
        if self._is_ascii(line0):
            return Position(line0, min(max(0, col_utf8), len(text)))
        prefix = text.encode("utf-8")[: max(0, col_utf8)].decode("utf-8", errors="ignore")
        return Position(line0, utf16_len(prefix))

    def _is_ascii(self, line0: int) -> bool:
        """Whether 0-based line ``line0`` is pure ASCII ('' past the end is)."""
        if not 0 <= line0 < len(self.lines):
            return True
        flag = self._ascii[line0]
        if flag is None:
            flag = self._ascii[line0] = self.lines[line0].isascii()
        return flag

    def position_from_char(self, line0: int, char_index: int) -> Position:
        """Convert a 0-based line and a code-point column to a Position."""
        return Position(line0, utf16_len(self.line(line0)[:char_index]))

    def segment(self, node: Any) -> str | None:
        """The source text of an ``ast`` node that starts and ends on one line (None for a
        node spanning lines or without an end). What ``ast.get_source_segment`` gives, from
        the lines already split (that function splits the whole text on every call: ~4 ms
        per call on a 300-line file)."""
        end_lineno = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None or end_lineno != node.lineno:
            return None
        line0 = node.lineno - 1
        if not 0 <= line0 < len(self.lines):
            return None
        text = self.lines[line0]
        if self._is_ascii(line0):
            return text[node.col_offset:end_col]
        return text.encode("utf-8")[node.col_offset:end_col].decode("utf-8", errors="replace")

    def range_of(self, node: Any) -> Range:
        """The range of an ``ast`` node (or anything with lineno/col_offset/end_*)."""
        end_lineno = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", None)
        key = (node.lineno, node.col_offset, end_lineno, end_col)
        rng = self._ranges.get(key)
        if rng is not None:
            return rng
        start = self.position(node.lineno, node.col_offset)
        if end_col is None:
            end = Position(start.line, utf16_len(self.line(start.line)))
        else:
            end = self.position(end_lineno, end_col)
        rng = self._ranges[key] = Range(start, end)
        return rng

    def line_range(self, line0: int) -> Range:
        """The whole of 0-based line ``line0``, without its line end."""
        return Range(Position(line0, 0), Position(line0, utf16_len(self.line(line0))))

    def offset_to_position(self, offset: int) -> Position:
        """A code-point offset into the text -> Position."""
        starts = self._line_starts()
        line0 = bisect.bisect_right(starts, offset) - 1
        return self.position_from_char(line0, offset - starts[line0])

    def _line_starts(self) -> list[int]:
        starts, pos = [0], 0
        text = self.text
        n = len(text)
        while pos < n:
            ch = text[pos]
            if ch == "\r":
                pos += 2 if pos + 1 < n and text[pos + 1] == "\n" else 1
                starts.append(pos)
            elif ch == "\n":
                pos += 1
                starts.append(pos)
            else:
                pos += 1
        return starts


_LINE_END = re.compile(r"\r\n|\r|\n")


def _split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their ends (``\\n``, ``\\r\\n`` or ``\\r``); a text
    ending with a line end has a last, empty line."""
    if "\r" not in text:
        return text.split("\n")
    return _LINE_END.split(text)


def utf16_len(s: str) -> int:
    """Length of ``s`` in UTF-16 code units (characters outside the BMP count 2)."""
    if s.isascii():
        return len(s)
    # "surrogatepass": a lone surrogate (possible in a str) is one code unit, as in UTF-16
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def utf16_to_index(s: str, units: int) -> int:
    """A UTF-16 column -> a code-point index into ``s`` (clamped to the line)."""
    n = 0
    for i, ch in enumerate(s):
        if n >= units:
            return i
        n += 2 if ord(ch) > 0xFFFF else 1
    return len(s)


class AveError(Exception):
    """An error in the user's kernel, raised by a layer and turned into a Diagnostic.

    Args:
        code: a registered code (``"AVE106"``).
        message: one line.
        node: the ``ast`` node it points at (its range is converted by the catcher, which
            knows the file), or ``None``.
        range: an already converted range (overrides ``node``).
        file: the file of ``node``/``range`` when not the file being checked.
        notes, related, fix: as in :class:`Diagnostic`.
    """

    def __init__(self, code: str, message: str, node: Any = None, *, range: Range | None = None,
                 file: str | None = None, notes: Sequence[str] = (),
                 related: Sequence[Related] = (), fix: dict | None = None) -> None:
        super().__init__(f"{code}: {message}")
        if code not in CODES:
            raise ValueError(f"unregistered diagnostic code {code!r}")
        self.code = code
        self.message = message
        self.node = node
        self.range = range
        self.file = file
        self.notes = list(notes)
        self.related = list(related)
        self.fix = fix

    def to_diagnostic(self, source: SourceText, fallback: Range = ZERO_RANGE) -> Diagnostic:
        """Convert to a Diagnostic, resolving ``node`` against ``source``."""
        rng = self.range
        if rng is None and self.node is not None and hasattr(self.node, "lineno"):
            rng = source.range_of(self.node)
        return Diagnostic(self.code, self.message, self.file or source.path, rng or fallback,
                          notes=self.notes, related=self.related, fix=self.fix)


def report_schema() -> dict:
    """The JSON Schema (draft 2020-12) of the check report, version :data:`SCHEMA_VERSION`."""
    major = SCHEMA_VERSION.split(".")[0]
    text = resources.files("ave_core").joinpath(f"schema/check-output.v{major}.json").read_text("utf-8")
    return json.loads(text)


def make_report(files: Iterable[dict], diagnostics: Iterable[Diagnostic],
                summary_extra: dict | None = None) -> dict:
    """Build the top-level JSON report ``{"version", "files", "diagnostics", "summary"}``.

    Args:
        files: one dict per checked file: ``{"path", "uses_ave", "kernels": [...]}``.
        diagnostics: all diagnostics, any order (sorted here).
        summary_extra: further counts later layers add (e.g. ``"proved"``).
    """
    diags = sorted(diagnostics, key=Diagnostic.sort_key)
    files = list(files)
    counts = {s.label: 0 for s in Severity}
    for d in diags:
        counts[d.severity.label] += 1
    summary = {
        "files": len(files),
        "kernels": sum(len(f.get("kernels", [])) for f in files),
        "errors": counts["error"],
        "warnings": counts["warning"],
        "infos": counts["info"] + counts["hint"],
    }
    if summary_extra:
        summary.update(summary_extra)
    return {
        "version": SCHEMA_VERSION,
        "files": files,
        "diagnostics": [d.to_json() for d in diags],
        "summary": summary,
    }


def validate_report(report: dict) -> None:
    """Validate a report against :func:`report_schema`.

    Raises:
        jsonschema.ValidationError: the report does not match.
        ImportError: ``jsonschema`` is not installed (it is in the ``dev`` extra).
    """
    import jsonschema

    jsonschema.validate(report, report_schema())


def decode_source(data: bytes) -> str:
    """Python source bytes as text, as Python reads them: UTF-8 (a leading BOM dropped,
    line ends kept), or the encoding a PEP 263 comment declares (``# -*- coding: latin-1
    -*-``).

    Raises:
        UnicodeDecodeError: the bytes are not text in that encoding.
    """
    import io
    import tokenize
    try:
        # (the declared encoding first, as Python: a latin-1 file whose bytes also read as
        # UTF-8 was read as UTF-8; a review helper)
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):
        enc = "utf-8-sig"
    try:
        return data.decode(enc)
    except LookupError as e:
        raise UnicodeDecodeError(enc, data, 0, 1, str(e)) from None


def parse_source(text: str, path: str | None = None) -> ast.Module:
    """``ast.parse`` of user text without Python's compile-time warnings (``SyntaxWarning:
    invalid decimal literal``, ``DeprecationWarning`` for escapes): the checker reports on
    the text, it does not print on its behalf to stderr (the language server's log).

    One parse at a time in the process (:data:`_PARSE_LOCK`): CPython 3.11's ``ast.parse``
    on two threads at once can raise ``SystemError: AST constructor recursion depth
    mismatch`` (its recursion counter is shared), and ``warnings.catch_warnings`` swaps the
    process-wide filters -- the language server parses on its check and hover threads at
    once, and a test running analyses on four threads failed now and then.

    Raises:
        SyntaxError, ValueError, RecursionError, MemoryError: as ``ast.parse``.
    """
    with _PARSE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (not the real path: CPython reads the error line of a SyntaxError from the file
        # of that name when it exists, and took the column from the disk's text -- wrong for
        # an unsaved buffer, two columns off on line 1 of a file with a BOM; a review
        # helper)
        return ast.parse(text, filename=f"<ave: {path or 'unknown'}>")


_PARSE_LOCK = threading.Lock()
