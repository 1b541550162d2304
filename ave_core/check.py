"""The check driver every tool uses (``ave-lsp --check`` now, the language server later).

:func:`check_file` runs the front end on one file and never raises for anything the file
contains: an unreadable file is diagnostic ``AVE901``, a user error raised as
:class:`~ave_core.diagnostics.AveError` becomes its diagnostic, and any other exception is
an internal error ``AVE900``. :func:`check_paths` checks files and directories and builds
the versioned JSON report (:func:`~ave_core.diagnostics.make_report`).

With an :class:`ave_core.pool.AnalysisPool`, the analyses of a file's specializations
run in worker processes and are merged in the serial order (:func:`start_check`): the
report is the same.

Only the standard library and :mod:`ave_core.diagnostics` are imported here; the front end
is imported when the first file is checked.
"""

from __future__ import annotations

import math
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable

from ave_core.diagnostics import (
    ZERO_RANGE,
    AveError,
    Diagnostic,
    Severity,
    call_site,
    through_calls,
    Range,
    SourceText,
    decode_source,
    make_report,
)

#: Directory names never entered when walking a directory (hidden ones are skipped too).
SKIP_DIRS = frozenset({"__pycache__", ".venv", "node_modules"})

#: Status of a specialization the front end compiled (the analysis adds proved/violated...).
STATUS_OK = "ok"


@dataclass
class FileReport:
    """What checking one file found.

    Attributes:
        path: the path as given.
        uses_ave: whether the file imports the Ave DSL.
        kernels: one dict per kernel in the report schema's shape,
            ``{"name", "line", "specializations": [{"constexprs", "status"}]}``.
        diagnostics: the file's diagnostics (some may point into other files, e.g. helpers).
    """

    path: str
    uses_ave: bool
    kernels: list[dict] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: every file the file's kernels were built from (itself and imported helpers' files):
    #: saving any of them calls for a re-check
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The report's ``files[]`` entry."""
        return {"path": self.path, "uses_ave": self.uses_ave, "kernels": self.kernels}

    @property
    def specialization_count(self) -> int:
        return sum(len(k["specializations"]) for k in self.kernels)


def read_source(path: str) -> tuple[str | None, Diagnostic | None]:
    """Read ``path`` as UTF-8 (a leading BOM is dropped, line ends are kept as they are),
    or in the encoding its PEP 263 comment declares (``# -*- coding: latin-1 -*-``), as
    Python reads it.

    Returns ``(text, None)``, or ``(None, diagnostic)`` with an ``AVE901`` diagnostic when
    the file cannot be read, or is not text in its encoding and mentions ``ave_core`` (a
    file that does not is decoded with replacement characters: it does not use Ave and gets
    nothing, as a file with a syntax error that does not use Ave; it was an AVE901 error).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        reason = e.strerror or str(e)
        return None, Diagnostic("AVE901", f"cannot read {path}: {reason}", path, ZERO_RANGE)
    try:
        return decode_source(data), None
    except (UnicodeDecodeError, SyntaxError, LookupError):
        pass
    for bom, enc in ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
                     (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        # (a UTF-16 or UTF-32 file, as some Windows editors save: "ave_core" is not among
        # its bytes, and a kernel there was skipped without a word; a review helper)
        if data.startswith(bom):
            if "ave_core" in data.decode(enc, errors="replace"):
                return None, Diagnostic(
                    "AVE901", f"cannot read {path}: {enc.upper()} text (its byte order "
                    "mark says so)", path, ZERO_RANGE,
                    notes=["Ave reads source files as UTF-8, as Python does: save the file "
                           "as UTF-8"])
            break
    if b"ave_core" not in data:
        return data.decode("utf-8", errors="replace"), None
    # Point at the first byte that is not UTF-8 (the prefix before it decodes).
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        data[bom:].decode("utf-8")
        start = bom             # (not text in its declared encoding)
    except UnicodeDecodeError as e:
        start = bom + e.start
    prefix = data[bom:start].decode("utf-8", errors="replace")
    src = SourceText(prefix, path)
    pos = src.offset_to_position(len(prefix))
    return None, Diagnostic(
        "AVE901", f"cannot read {path}: not UTF-8 (byte 0x{data[start]:02x} at offset {start})",
        path, Range(pos, pos), notes=["Ave reads source files as UTF-8"])


def internal_error(path: str, exc: BaseException) -> Diagnostic:
    """An ``AVE900`` diagnostic for an unexpected exception while checking ``path``."""
    text = str(exc)
    first, _, rest = text.partition("\n")
    message = f"internal error: {type(exc).__name__}: {first}" if first else \
        f"internal error: {type(exc).__name__}"
    notes = [line for line in rest.splitlines() if line.strip()]
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        fr = frames[-1]
        notes.append(f"raised at {fr.filename}:{fr.lineno} in {fr.name}")
    notes.append("this is a bug in Ave; please report it with the file that triggered it")
    return Diagnostic("AVE900", message, path, ZERO_RANGE, notes=notes)


def json_scalar(value: Any) -> int | float | bool | str:
    """A constexpr value as the report writes it: JSON scalars as they are, others as text.

    Dtypes print as their DSL name (``bf16``); tuples, non-finite floats (which JSON cannot
    write) and other values as ``str``.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            item = value.item()
        except Exception:  # noqa: BLE001 - fall back to str
            item = None
        if isinstance(item, (bool, int, float, str)):
            return json_scalar(item)
    return str(value)


def group_kernels(kernels: Iterable[Any]) -> list[dict]:
    """Group KernelIRs (one per specialization) into the report's kernel entries.

    Kernels are keyed by ``(name, line)`` in first-seen order; specializations are ordered
    by ``config_index`` where given (``None`` — the defaults — first), then as given.
    """
    groups: dict[tuple[str, int], list[Any]] = {}
    for k in kernels:
        groups.setdefault((str(k.name), int(k.line)), []).append(k)
    out = []
    for (name, line), specs in groups.items():
        order = sorted(range(len(specs)), key=lambda i: (
            -1 if getattr(specs[i], "config_index", None) is None else specs[i].config_index, i))
        out.append({
            "name": name,
            "line": line,
            "specializations": [
                {"constexprs": {str(n): json_scalar(v)
                                for n, v in (getattr(specs[i], "constexprs", None) or {}).items()},
                 "status": STATUS_OK}
                for i in order
            ],
        })
    return out


def check_file(path: str, text: str | None = None, *, workspace: str | None = None,
               analyze: bool = True, options: Any = None, pool: Any = None,
               cancel: Any = None) -> FileReport:
    """Check one file.

    Args:
        path: the file's path (used in diagnostics as given).
        text: its contents, when already known (an editor buffer); read from disk if None.
        workspace: the workspace root, where imported helper files are looked up.
        analyze: run the tag analysis on every specialization the front end compiled.
        options: :class:`ave_core.analysis.AnalysisOptions` (trip bound, solver budget).
        pool: an :class:`ave_core.pool.AnalysisPool`: the specializations are analyzed
            in its worker processes, in parallel (None: one after the other, here). The
            report is the same either way. A file with a single specialization is
            analyzed here (see :data:`POOL_MIN_UNITS`).
        cancel: a :class:`threading.Event`; when it is set while the pool's workers run,
            the check is abandoned: :class:`ave_core.pool.CheckCancelled` is raised.

    Returns:
        A :class:`FileReport`. Never raises for a problem in the file or in Ave itself
        (``KeyboardInterrupt`` and ``SystemExit`` pass through, and
        :class:`~ave_core.pool.CheckCancelled` when ``cancel`` is set).
    """
    return start_check(path, text, workspace=workspace, analyze=analyze, options=options,
                       pool=pool).result(cancel)


#: A file needs at least this many specializations for a pool to analyze them: one alone
#: is analyzed in the checking process (the round trip to a worker would only add to it).
POOL_MIN_UNITS = 2


class PendingCheck:
    """A check whose front end ran and whose specializations may still be analyzed by
    worker processes (:func:`start_check`); :meth:`result` gives the report."""

    def __init__(self, report: FileReport | None = None) -> None:
        self._report = report
        self._finish: Any = None
        self._batch: Any = None
        #: the text checked (read from disk when not given; None when it could not be)
        self.text: str | None = None

    @property
    def units(self) -> int:
        """Specializations being analyzed in worker processes."""
        return len(self._batch.units) if self._batch is not None else 0

    def cancel(self) -> None:
        """Cancel the worker units that have not started (the result is not wanted)."""
        if self._batch is not None:
            self._batch.cancel()

    def result(self, cancel: Any = None) -> FileReport:
        """The :class:`FileReport` (waits for the workers)."""
        if self._report is None:
            self._report = self._finish(cancel)
        return self._report


def start_check(path: str, text: str | None = None, *, workspace: str | None = None,
                analyze: bool = True, options: Any = None, pool: Any = None) -> PendingCheck:
    """Run the front end on one file and submit its specializations' analyses to
    ``pool`` (see :func:`check_file`, which is ``start_check(...).result()``); the
    result's ``text`` is the text checked."""
    if text is None:
        text, diag = read_source(path)
        if diag is not None:
            return PendingCheck(FileReport(path, False, [], [diag]))
    pending = _start_check(path, text, workspace, analyze, options, pool)
    pending.text = text
    return pending


def _start_check(path: str, text: str, workspace: str | None, analyze: bool, options: Any,
                 pool: Any) -> PendingCheck:
    try:
        from ave_core.compiler.frontend import compile_source

        result = compile_source(text, path, workspace=workspace)
        kernels = group_kernels(result.kernels)
        compiled = {(k["name"], k["line"]) for k in kernels}
        for name, line in getattr(result, "kernel_names", []) or []:
            if (name, line) not in compiled:       # found, but no specialization compiled
                kernels.append({"name": name, "line": line, "specializations": []})
        diags = list(result.diagnostics)
        files = [f for f in (getattr(result, "files", None) or [path])
                 if not str(f).startswith("<")]
        irs: list = []
        if analyze and result.kernels:
            from ave_core.compiler.ir import KernelIR
            irs = [k for k in result.kernels if isinstance(k, KernelIR)]
        uses_ave = bool(result.uses_ave)
        if pool is not None and len(irs) >= POOL_MIN_UNITS:
            return _start_in_pool(pool, path, text, workspace, options, result, irs,
                                  kernels, diags, uses_ave, files)
        if irs:
            _analyze_into(irs, kernels, diags, options)
        return PendingCheck(FileReport(path, uses_ave, kernels, diags, files))
    except AveError as e:
        # A user error that escaped the front end's own collection: still the user's error.
        return PendingCheck(FileReport(path, True, [], [e.to_diagnostic(SourceText(text, path))]))
    except Exception as e:  # noqa: BLE001 - anything else is an Ave bug, reported, not raised
        return PendingCheck(FileReport(path, _mentions_ave(text), [], [internal_error(path, e)]))


def _start_in_pool(pool: Any, path: str, text: str, workspace: str | None, options: Any,
                   result: Any, irs: list, kernels: list[dict], diags: list[Diagnostic],
                   uses_ave: bool, files: list[str]) -> PendingCheck:
    from ave_core import pool as pool_mod

    stamps = None
    units = []
    all_kernels = list(result.kernels)
    for k in irs:
        unit = pool_mod.ir_unit(k, options)
        if unit is None:                          # an IR that does not pickle: recompile
            if stamps is None:
                me = os.path.normcase(os.path.abspath(path))
                stamps = pool_mod.file_stamps(
                    f for f in files if os.path.normcase(os.path.abspath(f)) != me)
            index = next(i for i, x in enumerate(all_kernels) if x is k)
            unit = pool_mod.source_unit(path, text, workspace, index, k,
                                        options, stamps)
        units.append(unit)
    try:
        batch = pool.start(units)
    except Exception:  # noqa: BLE001 - no pool to be had (e.g. shutting down): here
        _analyze_into(irs, kernels, diags, options)
        return PendingCheck(FileReport(path, uses_ave, kernels, diags, files))
    pending = PendingCheck()
    pending._batch = batch

    def finish(cancel: Any) -> FileReport:
        outcomes = batch.results(cancel)
        try:
            _merge_plain(irs, outcomes, kernels, diags, options)
            return FileReport(path, uses_ave, kernels, diags, files)
        except Exception as e:  # noqa: BLE001 - an Ave bug, reported, not raised
            return FileReport(path, uses_ave, [], [internal_error(path, e)])

    pending._finish = finish
    return pending


_STATUS_ORDER = {"proved": 0, "vacuous": 1, "unknown": 2, "violated": 3}


def spec_status(assertions: Iterable[str], diagnostics: Iterable[Diagnostic]) -> str:
    """A specialization's status: the worst of its assertions' verdicts and of the
    checker's findings outside them -- an error (a race, AVE207; an out-of-bounds access,
    AVE208; a divergent barrier, AVE209) is ``violated``, an analysis limit (AVE205) is
    ``unknown``; ``proved`` when there is neither an assertion nor an error (warnings
    such as AVE203 do not change it)."""
    statuses = list(assertions)
    for d in diagnostics:
        if d.severity == Severity.ERROR:
            statuses.append("unknown" if d.code == "AVE205" else "violated")
    return max(statuses, key=_STATUS_ORDER.get) if statuses else "proved"


def findings_by_code(diagnostics: Iterable[Diagnostic]) -> dict[str, int]:
    """``{code: count}`` of one specialization's diagnostics (the report's
    ``findings``), codes in order."""
    out: dict[str, int] = {}
    for d in diagnostics:
        out[d.code] = out.get(d.code, 0) + 1
    return dict(sorted(out.items()))


def summarize(ka: Any) -> tuple[str, int, list[dict], list[Diagnostic]]:
    """A :class:`~ave_core.analysis.KernelAnalysis` as the report records it: the
    specialization's status (:func:`spec_status`), its trip-count bound, the assertions'
    JSON and the diagnostics."""
    status = spec_status((a.status for a in ka.assertions), ka.diagnostics)
    # (the analysis's own bound: a kernel with no assertion reported 1 -- its findings
    # named 2 trips; a review helper)
    trip_bound = getattr(ka, "trip_bound", 0) or \
        next((a.trip_bound for a in ka.assertions if a.trip_bound), None) or 1
    return status, trip_bound, [a.to_json(ka.kernel.file) for a in ka.assertions], \
        list(ka.diagnostics)


def analyze_plain(kernel: Any, options: Any) -> dict:
    """Analyze one specialization (in a worker process) and return plain data:
    ``{"status", "trip_bound", "assertions", "diagnostics"}`` (the diagnostics as
    :meth:`Diagnostic.to_json`) or ``{"internal_error": diagnostic JSON}`` when the
    analysis raised."""
    from ave_core.analysis import analyze as run_analysis

    try:
        ka = run_analysis(kernel, options)
    except Exception as e:  # noqa: BLE001 - an Ave bug: reported on the specialization
        d = internal_error(kernel.file, e)
        d.range = kernel.range
        return {"internal_error": d.to_json()}
    status, trip_bound, assertions, ds = summarize(ka)
    return {"status": status, "trip_bound": trip_bound, "assertions": assertions,
            "diagnostics": [d.to_json() for d in ds],
            # (not in the JSON schema: Diagnostic.proposal, for ave_lsp.fixplan)
            "proposals": [d.proposal for d in ds]}


def diagnostic_from_json(j: dict) -> Diagnostic:
    """The :class:`Diagnostic` of its :meth:`~Diagnostic.to_json` form (witness and fix
    are taken as they are)."""
    from ave_core.diagnostics import Location, Related, Severity

    def rng(r: dict) -> Range:
        return Range.of(r["start"]["line"], r["start"]["character"],
                        r["end"]["line"], r["end"]["character"])

    return Diagnostic(j["code"], j["message"], j["file"], rng(j["range"]),
                      severity=Severity.from_label(j["severity"]), notes=list(j["notes"]),
                      related=[Related(Location(r["file"], rng(r["range"])), r["message"])
                               for r in j["related"]],
                      witness=j["witness"], fix=j.get("fix"))


def _spec_index(kernels: list[dict]) -> dict:
    by_key = {}
    for entry in kernels:
        for spec in entry["specializations"]:
            by_key[(entry["name"], entry["line"], tuple(sorted(spec["constexprs"].items())))] = spec
    return by_key


def _spec_of(by_key: dict, k: Any) -> dict | None:
    return by_key.get((str(k.name), int(k.line), tuple(sorted(
        (str(n), json_scalar(v)) for n, v in k.constexprs.items()))))


def _record(k: Any, spec: dict | None, summary: tuple, diags: list[Diagnostic],
            seen: dict) -> None:
    """Record one specialization's analysis: its status, and its diagnostics (a finding
    an earlier specialization reported already gets a note there instead)."""
    status, trip_bound, assertions, kdiags = summary
    if spec is not None:
        spec["status"] = status
        spec["trip_bound"] = trip_bound
        spec["assertions"] = assertions
        spec["findings"] = findings_by_code(kdiags)
    cfg = "defaults" if k.config_index is None else f"configs[{k.config_index}]"
    for d in kdiags:
        key = (d.code, d.file, d.range, call_site(d), through_calls(d))
        if key in seen:
            # (with what it found there when that differs: another field, tensor or
            # witness was dropped under "also in"; a review helper) -- and the kernel,
            # when it is another one (a helper in the file two kernels call is one
            # finding: "also in the specialization configs[0]" named the first kernel's;
            # another review)
            other = seen.get(("kernel", key)) != (str(k.name), int(k.line))
            seen[key].notes.append(
                f"also in {'kernel ' + str(k.name) + ', ' if other else ''}the specialization "
                f"{cfg}" + (f", there: {d.message}" if d.message != seen[key].message else ""))
            if d.fix is not None or seen[key].fix is not None or \
                    seen[key].proposal is not None or (
                    isinstance(d.witness, dict) and "advice" in d.witness):
                from ave_core.analysis import merge_wait_fixes
                merge_wait_fixes(seen[key], d)
            continue
        # (written as the front end's notes write a configuration: `dict(BM=128, ...)`)
        d.notes.append(f"in the specialization {cfg}" + (
            " = dict(" + ", ".join(f"{n}={v!r}" for n, v in k.constexprs.items()) + ")"
            if k.constexprs else " (no constexprs)"))
        seen[key] = d
        seen[("kernel", key)] = (str(k.name), int(k.line))
        diags.append(d)


def _record_error(k: Any, spec: dict | None, d: Diagnostic, diags: list[Diagnostic]) -> None:
    diags.append(d)
    if spec is not None:
        spec["status"] = "unknown"


def _analyze_into(kernel_irs: list, kernels: list[dict], diags: list[Diagnostic],
                  options: Any) -> None:
    """Run the analysis on every specialization, here, one after the other; fill
    statuses and add diagnostics (a finding shared by several specializations is
    reported once, with a note)."""
    from ave_core.analysis import analyze as run_analysis

    by_key = _spec_index(kernels)
    seen: dict[tuple, Diagnostic] = {}
    for k in kernel_irs:
        spec = _spec_of(by_key, k)
        try:
            ka = run_analysis(k, options)
        except Exception as e:  # noqa: BLE001 - an Ave bug: reported, the rest goes on
            d = internal_error(k.file, e)
            d.range = k.range
            _record_error(k, spec, d, diags)
            continue
        _record(k, spec, summarize(ka), diags, seen)


def worker_died_diagnostic(k: Any) -> Diagnostic:
    """``AVE900`` on a specialization whose analysis ended its worker process twice."""
    cfg = "defaults" if k.config_index is None else f"configs[{k.config_index}]"
    return Diagnostic(
        "AVE900", f"internal error: the analysis of the specialization {cfg} ended its "
        "worker process (a crash or a signal), twice", k.file, k.range,
        notes=["the specialization is not checked; the other ones are",
               "this is a bug in Ave (or the machine ran out of memory); please report it "
               "with the file that triggered it"])


def _merge_plain(kernel_irs: list, outcomes: list[dict], kernels: list[dict],
                 diags: list[Diagnostic], options: Any) -> None:
    """:func:`_analyze_into` from the workers' results (:func:`analyze_plain`), in the
    same order: the same report."""
    by_key = _spec_index(kernels)
    seen: dict[tuple, Diagnostic] = {}
    for k, out in zip(kernel_irs, outcomes):
        spec = _spec_of(by_key, k)
        kind = out.get("kind")
        if kind == "stale":                       # recompiled to something else: here
            out = {"kind": "done", **analyze_plain(k, options)}
            kind = "done"
        if kind == "died":
            _record_error(k, spec, worker_died_diagnostic(k), diags)
            continue
        if kind != "done":                        # the unit raised outside the analysis
            d = Diagnostic("AVE900", f"internal error: {out.get('error', out)}", k.file,
                           k.range, notes=["this is a bug in Ave; please report it with "
                                           "the file that triggered it"])
            _record_error(k, spec, d, diags)
            continue
        if "internal_error" in out:
            _record_error(k, spec, diagnostic_from_json(out["internal_error"]), diags)
            continue
        kds = [diagnostic_from_json(d) for d in out["diagnostics"]]
        for d, p in zip(kds, out.get("proposals") or ()):
            d.proposal = p
        _record(k, spec, (out["status"], out["trip_bound"], out["assertions"], kds),
                diags, seen)


def _mentions_ave(text: str) -> bool:
    return "ave_core" in text


def _is_skipped_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.startswith(".")


def iter_python_files(paths: Iterable[str]) -> list[str]:
    """The files to check.

    A path that is not a directory is taken as given (whatever its suffix, and even if it
    does not exist: checking it then reports ``AVE901``; a named pipe is read, as
    ``/dev/stdin``). A directory is walked recursively for regular ``*.py`` files (a named
    pipe there would block the check), skipping hidden directories, ``__pycache__``,
    ``.venv`` and ``node_modules``; each directory's files come sorted. Duplicates (the
    same file named twice, also through a symbolic link) are dropped, first occurrence
    kept.
    """
    out: list[str] = []
    seen: set[str] = set()

    def add(p: str) -> None:
        # (links resolved: a file named through a symbolic link and by its own name was
        # checked twice; a review helper)
        key = os.path.normcase(os.path.realpath(p))
        if key not in seen:
            seen.add(key)
            out.append(p)

    for p in paths:
        p = os.fspath(p)
        if not os.path.isdir(p):
            add(p)
            continue
        found = []
        for root, dirs, files in os.walk(p):
            dirs[:] = [d for d in dirs if not _is_skipped_dir(d)]
            # (a dangling symbolic link is no file: it was an AVE901 "cannot read" error,
            # failing a CI run over a tree that Python itself has no trouble with)
            # (regular files only: a named pipe `*.py` blocked the check forever)
            found.extend(os.path.join(root, f) for f in files if f.endswith(".py")
                         and os.path.isfile(os.path.join(root, f)))
        for f in sorted(found):
            add(f)
    return out


def check_files(paths: Iterable[str], *, workspace: str | None = None, analyze: bool = True,
                options: Any = None, pool: Any = None) -> list[FileReport]:
    """:func:`check_file` on every file :func:`iter_python_files` finds under ``paths``
    (with a ``pool``, a file's front end runs while the previous files' specializations
    are analyzed)."""
    files = iter_python_files(paths)
    if pool is None:
        return [check_file(p, workspace=workspace, analyze=analyze, options=options)
                for p in files]
    out: list[FileReport] = []
    pending: list[PendingCheck] = []
    window = 2 * getattr(pool, "workers", 1)
    for p in files:
        while pending and sum(c.units for c in pending) >= window:
            out.append(pending.pop(0).result())
        pending.append(start_check(p, workspace=workspace, analyze=analyze,
                                   options=options, pool=pool))
    out.extend(c.result() for c in pending)
    return out


def build_report(reports: Iterable[FileReport]) -> dict:
    """The JSON report of checked files (summary adds ``specializations`` and the count of
    assertion verdicts ``proved``/``violated``/``unknown``/``vacuous``, counted once per
    assertion and specialization)."""
    reports = list(reports)
    counts = {"proved": 0, "violated": 0, "unknown": 0, "vacuous": 0}
    for r in reports:
        for k in r.kernels:
            for spec in k["specializations"]:
                for a in spec.get("assertions", []):
                    counts[a["status"]] = counts.get(a["status"], 0) + 1
    return make_report(
        [r.to_json() for r in reports],
        [d for r in reports for d in r.diagnostics],
        summary_extra={"specializations": sum(r.specialization_count for r in reports),
                       **counts},
    )


def check_paths(paths: Iterable[str], *, workspace: str | None = None, analyze: bool = True,
                options: Any = None, pool: Any = None) -> dict:
    """Check files and directories; return the report (schema ``check-output.v1``)."""
    return build_report(check_files(paths, workspace=workspace, analyze=analyze,
                                    options=options, pool=pool))
