"""``ave-lsp``: the command line of Ave's language server and headless checker.

Usage::

    ave-lsp --check PATHS... [--format text|json|sarif|github] [--fail-on error|warning]
                             [--output FILE] [--workspace DIR] [--watch]
                             [--trip-bound T] [--solver-timeout-ms MS]
                             [--max-file-lines N] [--baseline FILE | --write-baseline FILE]
                             [--jobs N]
    ave-lsp --version
    ave-lsp [--stdio]        # the language server, over stdin/stdout
    ave-lsp --tcp HOST:PORT  # the language server on a TCP socket (for debugging)

``--check`` checks files and directories (``*.py`` found recursively, hidden directories,
``__pycache__``, ``.venv`` and ``node_modules`` skipped) with the same driver the language
server uses (:mod:`ave_core.check`).

Text output is one line per diagnostic, ``file:line:col: severity CODE message`` (1-based
line and column; the column counts UTF-16 code units, as the editor does), its notes and
related locations indented below it, and a final summary line::

    checked 3 files, 5 kernels (7 specializations): 0 errors, 0 warnings

(``, N infos`` is appended when there are info or hint diagnostics, ``, N suppressed``
when ``# ave: ignore`` comments dropped some). JSON output is the report described by
``ave_core/schema/check-output.v1.json`` (its summary gains ``suppressed`` when non-zero).
``--format sarif`` writes a SARIF 2.1.0 log (:mod:`ave_lsp.sarif`); ``--format github``
writes GitHub Actions workflow commands, one per diagnostic::

    ::error file=F,line=L,col=C,endLine=L,endColumn=E,title=AVE102::message

(``::warning`` for warnings, ``::notice`` for infos and hints; 1-based UTF-16 columns,
``endColumn`` one past the last character; ``col``/``endColumn`` left out when the range
spans lines, as GitHub wants; ``%``, CR and LF escaped in the message, and also ``:`` and
``,`` in the properties), then the summary line.

A diagnostic is dropped when the line it starts on carries ``# ave: ignore`` or
``# ave: ignore[CODE, ...]`` naming its code — the language server's filter
(:class:`ave_lsp.server.convert.LineComments`); a diagnostic in another file (a helper) is
also dropped when its call site in the checked file carries the comment, as in the editor.

``--workspace DIR``: where ``from pkg.mod import f`` is looked up besides the file's own
directory (default: the directory of the nearest ``pyproject.toml`` above each file, else
the working directory: the editor's workspace folder, in a project).

``--jobs N`` (``[tool.ave] jobs``): the specializations of the files are analyzed by N
worker processes (0, the default: 1.5 per CPU core; 1: none, in this process), the next
files' front end running meanwhile; the output is the same whatever N.

``--watch`` checks once, then watches the paths and re-checks changed ``*.py`` files,
printing new and fixed diagnostics and the updated summary (:mod:`ave_lsp.watch`); Ctrl-C
ends it with status 0. On a terminal (stdout and stderr both TTYs) a progress bar or
counter on stderr shows the files being checked when there are several.

Configuration: ``[tool.ave]`` of the nearest ``pyproject.toml`` above each file, overridden
by the flags (:mod:`ave_lsp.config`, shared with the server). ``--write-baseline FILE``
records the findings; ``--baseline FILE`` (or ``[tool.ave] baseline``) drops the findings
recorded there (``, N baselined`` in the summary).

Exit status:

* ``0`` — nothing at or above the ``--fail-on`` severity (default ``error``);
* ``1`` — findings at or above ``--fail-on``;
* ``2`` — usage error (bad options, no paths, a path that does not exist — as ruff and
  pyright do, nothing is checked then), or an internal
  error of the tool itself (a traceback is printed to stderr). An exception inside the
  checking of one file is not an exit-2 error: it is reported as diagnostic ``AVE900``.

Without ``--check`` it serves LSP (:mod:`ave_lsp.server`; see ``docs/lsp.md``) and exits
0 when the client disconnects.

Start-up stays light: this module imports only the standard library; the checker (and
whatever the front end needs) is imported when ``--check`` runs, the server when it starts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import traceback
from collections import Counter
from typing import Any, Callable, Sequence, TextIO

PROG = "ave-lsp"

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

FORMATS = ("text", "json", "sarif", "github")

#: The progress display starts at this many files (and only on a terminal).
PROGRESS_MIN_FILES = 4


def _version() -> str:
    from ave_core import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Ave language server (stdio) and headless checker.",
        epilog="exit status: 0 clean, 1 findings at or above --fail-on, "
               "2 usage or internal error",
    )
    p.add_argument("--check", action="store_true",
                   help="check PATHS (files or directories) and exit instead of serving LSP")
    p.add_argument("paths", nargs="*", metavar="PATHS", help="files or directories to check")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="output format: text, json (the report schema), sarif (SARIF 2.1.0) "
                        "or github (GitHub Actions annotations) (default: text)")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the exit status 1 (default: error)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the output to FILE instead of standard output")
    p.add_argument("--workspace", metavar="DIR",
                   help="workspace root where imported helper files are looked up "
                        "(default: the directory of the nearest pyproject.toml above "
                        "each file, else the working directory)")
    p.add_argument("--trip-bound", type=int, metavar="T",
                   help="unroll runtime loops for trip counts 1..T (default: STAGES + 2)")
    p.add_argument("--solver-timeout-ms", type=int, metavar="MS",
                   help="budget of one SMT query; past it an assertion is unknown "
                        "(default: [tool.ave] solverTimeoutMs, else 2000)")
    p.add_argument("--max-file-lines", type=int, metavar="N",
                   help="do not check files longer than N lines "
                        "(default: [tool.ave] maxFileLines, else no limit)")
    # (alternatives, as the usage line says: both were accepted, the first ignored and not
    # even required to exist; a review helper)
    bl = p.add_mutually_exclusive_group()
    bl.add_argument("--baseline", metavar="FILE",
                    help="drop the findings recorded in this baseline file "
                         "(default: [tool.ave] baseline)")
    bl.add_argument("--write-baseline", metavar="FILE",
                    help="with --check: write the current findings to FILE as a baseline "
                         "(no baseline is applied) and exit 0")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="worker processes analyzing specializations (and files) in "
                        "parallel; 0: 1.5 per CPU core, 1: none (default: [tool.ave] jobs "
                        "of the first PATH's pyproject.toml, else 0)")
    p.add_argument("--no-analysis", action="store_true",
                   help="front end only: no tag analysis")
    p.add_argument("--watch", action="store_true",
                   help="with --check: after the first check, re-check changed .py files "
                        "and print new and fixed diagnostics until Ctrl-C")
    p.add_argument("--stdio", action="store_true",
                   help="serve LSP over stdin/stdout (the default without --check)")
    p.add_argument("--tcp", metavar="HOST:PORT",
                   help="serve LSP on a TCP socket instead of stdio (for debugging)")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    return p


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(report: dict) -> str:
    """``checked N files, K kernels (S specializations): E errors, W warnings; assertions:
    P proved, V violated, U unknown, Z vacuous`` (the assertions part whenever a
    specialization was analyzed -- its report has ``assertions``, an empty list for a
    kernel with none -- or any assertion has a verdict)."""
    s = report["summary"]
    specs = s.get("specializations")
    if specs is None:
        specs = sum(len(k["specializations"]) for f in report["files"] for k in f["kernels"])
    line = (f"checked {_plural(s['files'], 'file')}, {_plural(s['kernels'], 'kernel')} "
            f"({_plural(specs, 'specialization')}): "
            f"{_plural(s['errors'], 'error')}, {_plural(s['warnings'], 'warning')}")
    if s.get("infos"):
        line += f", {_plural(s['infos'], 'info')}"
    if s.get("suppressed"):
        line += f", {s['suppressed']} suppressed"
    if s.get("baselined"):
        line += f", {s['baselined']} baselined"
    if s.get("skipped"):
        line += f", {_plural(s['skipped'], 'file')} not checked (maxFileLines)"
    verdicts = [(s.get(k, 0), k) for k in ("proved", "violated", "unknown", "vacuous")]
    # (whenever specializations were analyzed, even with no assertion: one form for a CI
    # log to parse; dropped only when nothing was analyzed -- no kernel, --no-analysis)
    analyzed = any("assertions" in sp for f in report.get("files", ())
                   for k in f.get("kernels", ()) for sp in k.get("specializations", ()))
    if any(n for n, _ in verdicts) or analyzed:
        line += "; assertions: " + ", ".join(f"{n} {k}" for n, k in verdicts)
    return line


def diagnostic_lines(d: dict, *, details: bool = True) -> list[str]:
    """The text-format lines of one diagnostic (a report's ``diagnostics[]`` entry):
    ``file:line:col: severity CODE message``, then (with ``details``) its notes and
    related locations, indented."""
    start = d["range"]["start"]
    lines = [f"{d['file']}:{start['line'] + 1}:{start['character'] + 1}: "
             f"{d['severity']} {d['code']} {d['message']}"]
    if details:
        for note in d["notes"]:
            lines.append(f"    note: {note}")
        for rel in d["related"]:
            rs = rel["range"]["start"]
            lines.append(f"    {rel['file']}:{rs['line'] + 1}:{rs['character'] + 1}: "
                         f"related: {rel['message']}")
    return lines


def format_text(report: dict) -> str:
    """The text output of a report (every line ends with a newline)."""
    lines = [line for d in report["diagnostics"] for line in diagnostic_lines(d)]
    lines.append(summary_line(report))
    return "".join(line + "\n" for line in lines)


def format_json(report: dict) -> str:
    from ave_lsp.sarif import dump_json

    return dump_json(report)


def format_sarif(report: dict) -> str:
    """The SARIF 2.1.0 log of a report (see :mod:`ave_lsp.sarif`)."""
    from ave_lsp.sarif import format_sarif as fmt

    return fmt(report)


#: Ave severity -> GitHub workflow command.
GITHUB_COMMANDS = {"error": "error", "warning": "warning", "info": "notice", "hint": "notice"}


def github_escape_data(s: str) -> str:
    """Escape a workflow command's message: ``%``, CR, LF."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_escape_property(s: str) -> str:
    """Escape a workflow command's property value: as the message, and ``:`` and ``,``."""
    return github_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_line(d: dict) -> str:
    """``::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=CODE::message``."""
    from ave_core.diagnostics import call_site
    from ave_lsp.sarif import display_path

    s, e = d["range"]["start"], d["range"]["end"]
    if (e["line"], e["character"]) < (s["line"], s["character"]):
        e = s
    props: list[tuple[str, object]] = [("file", display_path(d["file"])),
                                       ("line", s["line"] + 1)]
    if e["line"] == s["line"]:
        props += [("col", s["character"] + 1), ("endLine", e["line"] + 1),
                  ("endColumn", e["character"] + 1)]
    else:  # GitHub takes columns only for a range on one line
        props.append(("endLine", e["line"] + 1))
    props.append(("title", d["code"]))
    command = GITHUB_COMMANDS.get(d["severity"], "notice")
    head = ",".join(f"{k}={github_escape_property(str(v))}" for k, v in props)
    msg = d["message"]
    site = call_site(d)
    if site is not None and isinstance(site[1], dict):
        # (one annotation per call of a helper from another file: which call it is; they
        # were identical lines; a review helper)
        msg += f" (in the call at {display_path(site[0])}:{site[1]['start']['line'] + 1})"
    return f"::{command} {head}::{github_escape_data(msg)}"


def format_github(report: dict) -> str:
    """GitHub Actions workflow commands, one per diagnostic, then the summary line."""
    lines = [github_line(d) for d in report["diagnostics"]]
    lines.append(summary_line(report))
    return "".join(line + "\n" for line in lines)


FORMATTERS: dict[str, Callable[[dict], str]] = {
    "text": format_text, "json": format_json, "sarif": format_sarif, "github": format_github,
}


def exit_status(report: dict, fail_on: str) -> int:
    s = report["summary"]
    findings = s["errors"] + (s["warnings"] if fail_on == "warning" else 0)
    return EXIT_FINDINGS if findings else EXIT_OK


def _write(text: str, output: str | None, stdout: TextIO) -> None:
    if output is None or output == "-":
        stdout.write(text)
        stdout.flush()
    else:
        with open(output, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)


# ----------------------------------------------------------------------------- checking

class Suppressions:
    """``# ave: ignore`` comments, read once per file, applied by the language server's
    rule (:func:`ave_lsp.server.convert.is_suppressed`): on the line a diagnostic starts
    on, in its own file, or on the line the checked file shows it on (a helper's
    finding: the call)."""

    def __init__(self) -> None:
        self._comments: dict[str, Any] = {}

    def comments(self, path: str):
        if path not in self._comments:
            from ave_core.check import read_source
            from ave_lsp.server.convert import LineComments

            text, _ = read_source(path) if not path.startswith("<") else (None, None)
            self._comments[path] = LineComments.of(text) if text is not None else None
        return self._comments[path]

    def is_suppressed(self, d, checked: str) -> bool:
        from ave_lsp.server.convert import is_suppressed

        return is_suppressed(d, checked, self.comments)

    def apply(self, report) -> int:
        """Drop the suppressed diagnostics of a FileReport; return how many."""
        kept = [d for d in report.diagnostics if not self.is_suppressed(d, report.path)]
        dropped = len(report.diagnostics) - len(kept)
        report.diagnostics = kept
        return dropped


def _done(value: tuple) -> Callable[[], tuple]:
    def finish() -> tuple:
        return value
    finish.units = 0  # type: ignore[attr-defined]
    return finish


def _file_report(report: dict, path: str):
    """The :class:`~ave_core.check.FileReport` of a one-file report of ``check_paths``."""
    from ave_core.check import FileReport, diagnostic_from_json

    entry = report["files"][0] if report["files"] else {"path": path, "uses_ave": False,
                                                         "kernels": []}
    # the one JSON -> Diagnostic conversion (it keeps the witness and the fix)
    diags = [diagnostic_from_json(d) for d in report["diagnostics"]]
    return FileReport(entry["path"], entry["uses_ave"], entry["kernels"], diags)


class Checker:
    """Checks one file at a time with the driver (:func:`ave_core.check.check_paths`),
    drops suppressed and baselined diagnostics and builds the report of several files.

    With ``overrides`` (a dict of :class:`ave_lsp.config.Config` fields: the command-line
    flags), each file's configuration is ``[tool.ave]`` of its nearest pyproject.toml
    overridden by them (:func:`ave_lsp.config.resolve`); otherwise ``options`` is used
    as given.
    """

    def __init__(self, *, workspace: str | None, analyze: bool, options: Any,
                 overrides: dict | None = None, use_baseline: bool = True,
                 warn: Callable[[str], None] | None = None, pool: Any = None) -> None:
        self.workspace = workspace
        #: an :class:`ave_core.pool.AnalysisPool` (None: analyze in this process)
        self.pool = pool
        self.analyze = analyze
        self.options = options
        self.overrides = overrides
        self.use_baseline = use_baseline
        #: per baseline file: (per checked path, the entries its findings absorbed; all
        #: of them together)
        self._baseline_books: dict = {}
        self.warn = warn
        self._warned: set[str] = set()
        #: per path: {"baselined": n, "skipped": 0|1}
        self.extra: dict[str, dict[str, int]] = {}

    def workspace_for(self, path: str) -> str:
        """Where a file's ``from pkg.helpers import f`` is looked up: ``--workspace``;
        without it, the directory of the nearest ``pyproject.toml`` at or above the file
        (the project's root, the editor's workspace folder), else the working directory.
        None searched only the file's own directory: CI rejected a package import the
        editor resolved (a review helper)."""
        if self.workspace:
            return self.workspace
        from ave_lsp.config import find_pyproject

        pp = find_pyproject(path)
        return os.path.dirname(pp) if pp is not None else os.getcwd()

    def _warn(self, message: str) -> None:
        if self.warn is not None and message not in self._warned:
            self._warned.add(message)
            self.warn(message)

    def check(self, path: str):
        """Check one file; returns ``(FileReport, number of suppressed diagnostics)``."""
        return self._start(path)()

    def _start(self, path: str) -> Callable[[], tuple]:
        """Run the front end on ``path`` and submit its analyses to the pool; returns the
        function that waits for them and finishes the check (suppressions, baseline).
        Its ``units`` attribute: the specializations being analyzed by workers."""
        from ave_core import check as check_mod

        options, cfg = self.options, None
        if self.overrides is not None:
            from ave_lsp.config import count_lines, resolve, too_long_message

            cfg, warnings = resolve(path, self.overrides)
            for w in warnings:
                self._warn(w)
            if self.analyze:
                options = cfg.analysis_options()
            if cfg.max_file_lines is not None and os.path.isfile(path):
                text, _ = check_mod.read_source(path)
                n = count_lines(text) if text is not None else 0
                # (a file that does not use Ave gets nothing, long or not: it was warned
                # about and reported as using Ave; a review helper)
                if n > cfg.max_file_lines and "ave_core" in text:
                    self._warn(f"{path}: {too_long_message(n, cfg.max_file_lines)}")
                    self.extra[path] = {"baselined": 0, "skipped": 1}
                    return _done((check_mod.FileReport(path, True, [], []), 0))
        # one file as check_paths([path]) would find it (a directory names no file here)
        files = check_mod.iter_python_files([path])
        pending = [check_mod.start_check(p, workspace=self.workspace_for(p),
                                         analyze=self.analyze, options=options,
                                         pool=self.pool) for p in files]

        def finish() -> tuple:
            results = [c.result() for c in pending]
            for c, r in zip(pending, results):
                if c.text is not None and any(d.proposal for d in r.diagnostics):
                    # (better fixes, kept where a check of the fixed text proves them;
                    # the text the check read, not the file again: --watch may see it
                    # saved in between)
                    from ave_lsp.fixplan import improve_fixes
                    improve_fixes(r, c.text, lambda t, r=r: check_mod.check_file(
                        r.path, t, workspace=self.workspace_for(r.path),
                        analyze=self.analyze, options=options, pool=self.pool))
            report = check_mod.build_report(results)
            fr = _file_report(report, path)
            suppressed = Suppressions().apply(fr)
            baselined = 0
            if cfg is not None and cfg.baseline is not None and self.use_baseline \
                    and fr.diagnostics:
                from ave_lsp.config import load_baseline_cached

                baseline, err = load_baseline_cached(cfg.baseline)
                if err is not None:
                    self._warn(err)
                else:
                    # (one budget per baseline for the run: a file's entries absorbed by
                    # the other files are not there for it; a re-checked file -- --watch
                    # -- gives back what it took before)
                    books, total = self._baseline_books.setdefault(
                        cfg.baseline, ({}, Counter()))
                    total.subtract(books.pop(path, {}))
                    used: dict = {}
                    hits = baseline.matches([d.to_json() for d in fr.diagnostics],
                                            taken=total, used=used)
                    books[path] = used
                    total.update(used)
                    fr.diagnostics = [d for d, h in zip(fr.diagnostics, hits) if not h]
                    baselined = sum(hits)
            self.extra[path] = {"baselined": baselined, "skipped": 0}
            return fr, suppressed

        finish.units = sum(c.units for c in pending)  # type: ignore[attr-defined]
        return finish

    def check_all(self, files: Sequence[str], progress: "Progress | None" = None):
        """Check ``files``; returns ``{path: (FileReport, suppressed)}`` in their order.

        With a pool, the front end of the next files runs while the workers analyze the
        specializations of the previous ones (at most twice as many units waiting as
        there are workers)."""
        out = {}
        pending: list[tuple[str, Callable[[], tuple]]] = []
        window = 2 * self.pool.workers if self.pool is not None else 0

        def finish_one() -> None:
            f, fin = pending.pop(0)
            out[f] = fin()
            if progress is not None and pending:
                progress.update(len(out), pending[0][0])     # the file now waited for

        try:
            for f in files:
                while pending and (self.pool is None or not pending[0][1].units or sum(
                        fin.units for _, fin in pending) >= window):
                    finish_one()
                if progress is not None and not pending:
                    progress.update(len(out), f)
                pending.append((f, self._start(f)))
            while pending:
                finish_one()
        finally:
            if progress is not None:
                progress.update(len(out), None)
        return out

    def report(self, results) -> dict:
        """The report (schema ``check-output.v1``) of ``{path: (FileReport, suppressed)}``;
        its summary gains ``suppressed``, ``baselined`` and ``skipped`` when non-zero."""
        from ave_core.check import build_report

        report = build_report(fr for fr, _ in results.values())
        suppressed = sum(n for _, n in results.values())
        if suppressed:
            report["summary"]["suppressed"] = suppressed
        for key in ("baselined", "skipped"):
            n = sum(self.extra.get(p, {}).get(key, 0) for p in results)
            if n:
                report["summary"][key] = n
        return report


class Progress:
    """Progress of a check of many files on stderr: a ``rich`` bar when ``rich`` is
    installed, else a one-line counter rewritten in place; erased when done."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = total
        self.stream = stream
        self._rich = None
        self._width = 0
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress
            from rich.progress import TextColumn, TimeElapsedColumn
        except ImportError:
            return
        self._rich = RichProgress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TextColumn("{task.description}"),
                                  console=Console(file=stream), transient=True)
        self._task = self._rich.add_task("", total=total)
        self._rich.start()

    def update(self, done: int, current: str | None) -> None:
        """``done`` files checked; ``current`` is being checked (None: finished)."""
        if self._rich is not None:
            self._rich.update(self._task, completed=done, description=current or "")
            if current is None:
                self._rich.stop()
            return
        if current is None:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        else:
            head = f"checking [{done + 1}/{self.total}] "
            room = max(10, shutil.get_terminal_size().columns - 1 - len(head))
            if len(current) > room:
                current = "..." + current[len(current) - room + 3:]
            line = head + current
            self.stream.write("\r" + line + " " * max(0, self._width - len(line)))
            self._width = max(self._width, len(line))
        self.stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def make_progress(total: int, stdout: TextIO, stderr: TextIO) -> Progress | None:
    """A :class:`Progress` on ``stderr`` when there are at least
    :data:`PROGRESS_MIN_FILES` files and both ``stdout`` and ``stderr`` are terminals
    (and ``TERM`` is not ``dumb``); otherwise None."""
    if total < PROGRESS_MIN_FILES or os.environ.get("TERM") == "dumb":
        return None
    if not (_isatty(stdout) and _isatty(stderr)):
        return None
    return Progress(total, stderr)


def run_check(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        for p in missing:
            print(f"{PROG}: error: no such file or directory: {p}", file=stderr)
        return EXIT_USAGE
    from ave_core.check import iter_python_files

    overrides: dict[str, Any] = {}
    if args.trip_bound is not None:
        if args.trip_bound < 1:
            print(f"{PROG}: error: --trip-bound must be >= 1", file=stderr)
            return EXIT_USAGE
        overrides["trip_count_bound"] = args.trip_bound
    if args.solver_timeout_ms is not None:
        if args.solver_timeout_ms < 1:
            print(f"{PROG}: error: --solver-timeout-ms must be >= 1", file=stderr)
            return EXIT_USAGE
        overrides["solver_timeout_ms"] = args.solver_timeout_ms
    if args.max_file_lines is not None:
        if args.max_file_lines < 1:
            print(f"{PROG}: error: --max-file-lines must be >= 1", file=stderr)
            return EXIT_USAGE
        overrides["max_file_lines"] = args.max_file_lines
    if args.baseline is not None and args.write_baseline is None:
        from ave_lsp.config import load_baseline_cached

        overrides["baseline"] = os.path.abspath(args.baseline)
        _, err = load_baseline_cached(overrides["baseline"])
        if err is not None:
            print(f"{PROG}: error: {err}", file=stderr)
            return EXIT_USAGE
    if args.jobs is not None:
        if args.jobs < 0:
            print(f"{PROG}: error: --jobs must be >= 0", file=stderr)
            return EXIT_USAGE
        overrides["jobs"] = args.jobs
    if args.write_baseline is not None and args.watch:
        print(f"{PROG}: error: --write-baseline and --watch do not go together", file=stderr)
        return EXIT_USAGE
    files = iter_python_files(args.paths)
    # (the report written over a checked source file: `-o k.py` replaced the kernel with
    # JSON, without a word; a review helper)
    for what, out in (("--output", args.output), ("--write-baseline", args.write_baseline)):
        if out is not None and out != "-" and any(
                os.path.exists(out) and os.path.samefile(out, f) for f in files):
            print(f"{PROG}: error: {what} {out} is one of the files checked", file=stderr)
            return EXIT_USAGE
    pool = None
    if not args.no_analysis and files:
        from ave_core.pool import AnalysisPool, resolve_jobs
        from ave_lsp.config import resolve

        jobs = resolve(args.paths[0], overrides)[0].jobs
        if resolve_jobs(jobs) > 1:
            pool = AnalysisPool(resolve_jobs(jobs))
    checker = Checker(workspace=args.workspace, analyze=not args.no_analysis, options=None,
                      overrides=overrides, use_baseline=args.write_baseline is None,
                      warn=lambda m: print(f"{PROG}: warning: {m}", file=stderr), pool=pool)
    try:
        return _check_and_report(args, checker, files, stdout, stderr)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)


def _check_and_report(args: argparse.Namespace, checker: "Checker", files: list[str],
                      stdout: TextIO, stderr: TextIO) -> int:
    results = checker.check_all(files, make_progress(len(files), stdout, stderr))
    report = checker.report(results)
    if args.write_baseline is not None:
        from ave_lsp.config import write_baseline

        try:
            n = write_baseline(args.write_baseline, report["diagnostics"])
        except OSError as e:
            print(f"{PROG}: error: cannot write {args.write_baseline}: {e.strerror or e}",
                  file=stderr)
            return EXIT_USAGE
        print(f"{PROG}: wrote {_plural(n, 'finding')} to {args.write_baseline}", file=stderr)
        return EXIT_OK
    text = FORMATTERS[args.format](report)
    try:
        _write(text, args.output, stdout)
    except BrokenPipeError:
        if args.output is not None:
            print(f"{PROG}: error: cannot write {args.output}: broken pipe", file=stderr)
            return EXIT_USAGE
        # the reader went away (`ave-lsp --check . | head`): quiet, as Unix tools are, with
        # the check's own status ("cannot write None: Broken pipe", status 2, before)
        _detach(stdout)
        return exit_status(report, args.fail_on)
    except OSError as e:
        where = args.output if args.output is not None else "the standard output"
        print(f"{PROG}: error: cannot write {where}: {e.strerror or e}", file=stderr)
        return EXIT_USAGE
    if args.watch:
        from ave_lsp.watch import Watcher

        return Watcher(args.paths, checker, results, stdout, stderr).run()
    return exit_status(report, args.fail_on)


def _detach(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null: the interpreter's final flush of a
    stream whose reader went away would print a BrokenPipeError at exit."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, stream.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass


def run_server(args: argparse.Namespace, parser: argparse.ArgumentParser,
               stderr: TextIO) -> int:
    """Serve LSP over stdio, or TCP with ``--tcp HOST:PORT``."""
    if args.tcp is not None:
        host, sep, port = args.tcp.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            parser.print_usage(stderr)
            print(f"{PROG}: error: --tcp wants HOST:PORT, not {args.tcp!r}", file=stderr)
            return EXIT_USAGE
        from ave_lsp.server import serve_tcp

        return serve_tcp(host.strip("[]"), int(port))
    from ave_lsp.server import serve_stdio

    return serve_stdio()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ave-lsp``; returns the exit status (never raises SystemExit)."""
    stdout, stderr = sys.stdout, sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_intermixed_args(None if argv is None else list(argv))
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if not args.check:
        if args.watch:
            parser.print_usage(stderr)
            print(f"{PROG}: error: --watch needs --check", file=stderr)
            return EXIT_USAGE
        if args.paths:
            parser.print_usage(stderr)
            print(f"{PROG}: error: paths given without --check", file=stderr)
            return EXIT_USAGE
        return run_server(args, parser, stderr)
    if not args.paths:
        parser.print_usage(stderr)
        print(f"{PROG}: error: --check needs at least one path", file=stderr)
        return EXIT_USAGE
    try:
        return run_check(args, stdout, stderr)
    except KeyboardInterrupt:
        if args.watch:   # Ctrl-C is how --watch ends
            return EXIT_OK
        print(f"{PROG}: interrupted", file=stderr)
        return 130
    except Exception:  # noqa: BLE001 - the tool itself failed
        print(f"{PROG}: internal error:", file=stderr)
        traceback.print_exc(file=stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
