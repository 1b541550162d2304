"""``ave-lsp``: the command line of Ave's language server and headless checker.

Usage::

    ave-lsp --check PATHS... [--format text|json] [--fail-on error|warning]
                             [--output FILE] [--workspace DIR]
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

(``, N infos`` is appended when there are info or hint diagnostics). JSON output is the
report described by ``ave_core/schema/check-output.v1.json``.

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
import sys
import traceback
from typing import Sequence, TextIO

PROG = "ave-lsp"

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


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
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="output format (default: text)")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the exit status 1 (default: error)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the output to FILE instead of standard output")
    p.add_argument("--workspace", metavar="DIR",
                   help="workspace root where imported helper files are looked up")
    p.add_argument("--trip-bound", type=int, metavar="T",
                   help="unroll runtime loops for trip counts 1..T (default: STAGES + 2)")
    p.add_argument("--solver-timeout-ms", type=int, default=2000, metavar="MS",
                   help="budget of one SMT query; past it an assertion is unknown")
    p.add_argument("--no-analysis", action="store_true",
                   help="front end only: no tag analysis")
    p.add_argument("--stdio", action="store_true",
                   help="serve LSP over stdin/stdout (the default without --check)")
    p.add_argument("--tcp", metavar="HOST:PORT",
                   help="serve LSP on a TCP socket instead of stdio (for debugging)")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    return p


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(report: dict) -> str:
    """``checked N files, K kernels (S specializations): E errors, W warnings``."""
    s = report["summary"]
    specs = s.get("specializations")
    if specs is None:
        specs = sum(len(k["specializations"]) for f in report["files"] for k in f["kernels"])
    line = (f"checked {_plural(s['files'], 'file')}, {_plural(s['kernels'], 'kernel')} "
            f"({_plural(specs, 'specialization')}): "
            f"{_plural(s['errors'], 'error')}, {_plural(s['warnings'], 'warning')}")
    if s.get("infos"):
        line += f", {_plural(s['infos'], 'info')}"
    verdicts = [(s.get(k, 0), k) for k in ("proved", "violated", "unknown", "vacuous")]
    if any(n for n, _ in verdicts):
        line += "; assertions: " + ", ".join(f"{n} {k}" for n, k in verdicts)
    return line


def format_text(report: dict) -> str:
    """The text output of a report (every line ends with a newline)."""
    lines = []
    for d in report["diagnostics"]:
        start = d["range"]["start"]
        lines.append(f"{d['file']}:{start['line'] + 1}:{start['character'] + 1}: "
                     f"{d['severity']} {d['code']} {d['message']}")
        for note in d["notes"]:
            lines.append(f"    note: {note}")
        for rel in d["related"]:
            rs = rel["range"]["start"]
            lines.append(f"    {rel['file']}:{rs['line'] + 1}:{rs['character'] + 1}: "
                         f"related: {rel['message']}")
    lines.append(summary_line(report))
    return "".join(line + "\n" for line in lines)


def format_json(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


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


def run_check(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        for p in missing:
            print(f"{PROG}: error: no such file or directory: {p}", file=stderr)
        return EXIT_USAGE
    from ave_core.check import check_paths

    options = None
    if not args.no_analysis:
        from ave_core.analysis import AnalysisOptions
        if args.trip_bound is not None and args.trip_bound < 1:
            print("ave-lsp: --trip-bound must be >= 1", file=sys.stderr)
            return EXIT_USAGE
        options = AnalysisOptions(trip_bound=args.trip_bound,
                                  solver_timeout_ms=args.solver_timeout_ms)
    report = check_paths(args.paths, workspace=args.workspace,
                         analyze=not args.no_analysis, options=options)
    text = format_json(report) if args.format == "json" else format_text(report)
    try:
        _write(text, args.output, stdout)
    except OSError as e:
        print(f"{PROG}: error: cannot write {args.output}: {e.strerror or e}", file=stderr)
        return EXIT_USAGE
    return exit_status(report, args.fail_on)


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
        print(f"{PROG}: interrupted", file=stderr)
        return 130
    except Exception:  # noqa: BLE001 - the tool itself failed
        print(f"{PROG}: internal error:", file=stderr)
        traceback.print_exc(file=stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
