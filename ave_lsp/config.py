"""Ave's configuration, one source for ``ave-lsp --check`` and the language server.

Values come from, lowest precedence first:

1. the defaults (:data:`DEFAULTS`);
2. ``[tool.ave]`` of the nearest ``pyproject.toml`` at or above the checked file (or the
   workspace folder), read with :mod:`tomllib`;
3. the editor's ``workspace/configuration`` section ``ave`` (server) or the command-line
   flags (``--check``).

=================== =========== =========================================================
key                 type        meaning
=================== =========== =========================================================
``solverTimeoutMs`` int >= 1    budget of one SMT query (ms)
``tripCountBound``  int >= 1    unroll runtime loops for trip counts ``1..T``
                    or null     (null: the kernel's ``STAGES + 2``)
``checkOnChange``   bool        the server also checks while typing
``inlayHints``      bool        the server shows inlay hints (a tile's layout, dtype)
``maxFileLines``    int >= 1    files with more lines are not checked (an info says so)
                    or null
``baseline``        str         path of a baseline file (relative paths: to the
                                ``pyproject.toml`` that names it, or to the working
                                directory for a flag)
``jobs``            int >= 0    worker processes analyzing specializations in parallel
                                (0: 1.5 per CPU; 1: none, all in the checking process)
=================== =========== =========================================================

A value of the wrong type is ignored with a warning (the lower layer's value is kept). In
the editor's section and on the command line, ``null``/an absent key means "not set" (the
pyproject or default value applies).

Only the standard library is imported here.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from typing import Any

KEYS = ("solverTimeoutMs", "tripCountBound", "checkOnChange", "maxFileLines", "baseline",
        "inlayHints", "jobs")

DEFAULT_SOLVER_TIMEOUT_MS = 2000

#: What each key accepts and means, for :func:`settings_schema` (the machine-readable
#: form editors and their tests read): JSON types, the minimum of an integer, the
#: ``--check`` flag and a one-paragraph description. :func:`validate` enforces the same
#: (tests/lsp/test_settings_schema.py checks that they agree).
_SPECS: dict[str, dict[str, Any]] = {
    "checkOnChange": {
        "type": "boolean", "flag": None,
        "description": "Also check while typing, 300 ms after the last change. Otherwise "
                       "a file is checked when it is opened and when it is saved."},
    "tripCountBound": {
        "type": ["integer", "null"], "minimum": 1, "flag": "--trip-bound",
        "description": "Unroll runtime loops for trip counts 1..T. null: the kernel's "
                       "STAGES + 2."},
    "solverTimeoutMs": {
        "type": "integer", "minimum": 1, "flag": "--solver-timeout-ms",
        "description": "Budget of one SMT query, in milliseconds; past it the assertion "
                       "is unknown (AVE205)."},
    "maxFileLines": {
        "type": ["integer", "null"], "minimum": 1, "flag": "--max-file-lines",
        "description": "Files with more lines are not checked (one info diagnostic says "
                       "so). null: no limit."},
    "baseline": {
        "type": ["string", "null"], "minLength": 1, "flag": "--baseline",
        "description": "Path of a baseline file of accepted findings (ave-lsp --check "
                       "--write-baseline FILE); findings recorded there are not shown. "
                       "A relative path is taken relative to the workspace folder (in "
                       "pyproject.toml: to that file's directory). null: none."},
    "inlayHints": {
        "type": "boolean", "flag": None,
        "description": "Show inlay hints after tile and tensor names: dtype, shape, memory "
                       "space and layout (shape:stride, swizzle)."},
    "jobs": {
        "type": "integer", "minimum": 0, "flag": "--jobs",
        "description": "Worker processes that analyze the kernel specializations (configs) "
                       "of a file in parallel; ave-lsp --check also overlaps files. 0: "
                       "automatic, one and a half per CPU core (a file uses at most one "
                       "per specialization), at most two per core; 1: no worker processes, everything runs in the "
                       "checking process. The results are the same whatever the number."},
}


def settings_schema() -> dict[str, Any]:
    """The settings (the ``ave`` section of ``workspace/configuration``, ``[tool.ave]``)
    as a JSON Schema (draft 2020-12) object: one property per key of :data:`KEYS` with
    its JSON ``type``, ``minimum`` (integers) or ``minLength`` (paths), ``default`` (the :class:`Config`
    default; ``null`` where the default is "not set") and ``description``; the
    ``x-ave-flag`` extension names the ``ave-lsp --check`` flag (``null``: none).
    Editor integrations are generated from and tested against this
    (``editors/vscode/package.json``). A fresh dict at each call."""
    import dataclasses

    defaults = {f.name: f.default for f in dataclasses.fields(Config)}
    props: dict[str, Any] = {}
    for key in KEYS:
        spec = _SPECS[key]
        prop: dict[str, Any] = {"type": spec["type"]}
        for bound in ("minimum", "minLength"):
            if bound in spec:
                prop[bound] = spec[bound]
        prop["default"] = defaults[_FIELDS[key]]
        prop["description"] = spec["description"]
        prop["x-ave-flag"] = spec["flag"]
        props[key] = prop
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Ave settings (workspace/configuration section \"ave\", "
                     "[tool.ave] of pyproject.toml)",
            "type": "object", "properties": props, "additionalProperties": False}


@dataclass(frozen=True)
class Config:
    """The effective configuration of one file."""

    solver_timeout_ms: int = DEFAULT_SOLVER_TIMEOUT_MS
    trip_count_bound: int | None = None
    check_on_change: bool = False
    inlay_hints: bool = True
    max_file_lines: int | None = None
    baseline: str | None = None          # absolute path
    jobs: int = 0                        # 0: automatic; 1: serial, in the process
    pyproject: str | None = None         # the pyproject.toml read, if any

    def analysis_options(self) -> Any:
        """The :class:`ave_core.analysis.AnalysisOptions` (imports the analysis)."""
        from ave_core.analysis import AnalysisOptions

        return AnalysisOptions(trip_bound=self.trip_count_bound,
                               solver_timeout_ms=self.solver_timeout_ms)


_FIELDS = {"solverTimeoutMs": "solver_timeout_ms", "tripCountBound": "trip_count_bound",
           "checkOnChange": "check_on_change", "maxFileLines": "max_file_lines",
           "baseline": "baseline", "inlayHints": "inlay_hints", "jobs": "jobs"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def validate(values: Any, where: str, base_dir: str | None = None,
             null_is_unset: bool = True, warn_unknown: bool = True,
             ) -> tuple[dict[str, Any], list[str]]:
    """The valid entries of ``values`` (camelCase keys) as :class:`Config` field names,
    and one warning per ignored entry. ``baseline`` is made absolute against
    ``base_dir`` (or the working directory)."""
    out: dict[str, Any] = {}
    warnings: list[str] = []
    if values is None:
        return out, warnings
    if not isinstance(values, dict):
        return out, [f"{where} must be a table/object, not {type(values).__name__}"]
    for key, v in values.items():
        if key not in _FIELDS:
            if warn_unknown:
                warnings.append(f"{where}: unknown key {key!r} ignored")
            continue
        if v is None and null_is_unset:
            continue
        ok = True
        if key == "solverTimeoutMs":
            ok = _is_int(v) and v >= 1
            want = "an integer >= 1"
        elif key in ("tripCountBound", "maxFileLines"):
            ok = v is None or (_is_int(v) and v >= 1)
            want = "an integer >= 1 or null"
        elif key in ("checkOnChange", "inlayHints"):
            ok = isinstance(v, bool)
            want = "true or false"
        elif key == "jobs":
            ok = _is_int(v) and v >= 0
            want = "an integer >= 0 (0: automatic)"
        else:  # baseline
            ok = isinstance(v, str) and v != "" and "\x00" not in v
            want = "a path (string, no NUL character)"
            if ok:
                v = os.path.abspath(os.path.join(base_dir or os.getcwd(),
                                                 os.path.expanduser(v)))
        if not ok:
            warnings.append(f"{where}.{key} must be {want}, not {v!r}; ignored")
            continue
        out[_FIELDS[key]] = v
    return out, warnings


# ----------------------------------------------------------------------------- pyproject

_cache: dict[str, tuple[tuple[int, int] | None, dict[str, Any], list[str]]] = {}


def find_pyproject(start: str) -> str | None:
    """The nearest ``pyproject.toml`` in ``start`` (a directory) or the directory of
    ``start`` (a file), or above."""
    p = os.path.abspath(start)
    d = p if os.path.isdir(p) else os.path.dirname(p)
    while True:
        cand = os.path.join(d, "pyproject.toml")
        if os.path.isfile(cand):
            return cand
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def read_pyproject(path: str) -> tuple[dict[str, Any], list[str]]:
    """The valid ``[tool.ave]`` entries of ``path`` and warnings (cached by mtime)."""
    try:
        st = os.stat(path)
        stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):     # (ValueError: a NUL in the path)
        stamp = None
    hit = _cache.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1], hit[2]
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        # (TOML is UTF-8: a Latin-1 byte in a comment raised UnicodeDecodeError, which
        # ended `--check` with an internal error and made every editor check AVE900; a
        # review helper)
        values, warnings = {}, [f"{path}: cannot read [tool.ave]: {e}"]
    else:
        section = data.get("tool", {}).get("ave") if isinstance(data.get("tool"), dict) \
            else None
        values, warnings = validate(section, f"{path}: [tool.ave]",
                                    os.path.dirname(path), null_is_unset=False)
    _cache[path] = (stamp, values, warnings)
    return values, warnings


def resolve(start: str | None, overrides: dict[str, Any] | None = None) -> tuple[Config, list[str]]:
    """The configuration for a file or directory ``start``: defaults, then ``[tool.ave]``
    of the nearest pyproject.toml, then ``overrides`` (valid :class:`Config` field
    values, as :func:`validate` returns them). Returns it and the pyproject's warnings."""
    cfg = Config()
    warnings: list[str] = []
    if start and not start.startswith("<"):
        pp = find_pyproject(start)
        if pp is not None:
            values, warnings = read_pyproject(pp)
            cfg = replace(cfg, pyproject=pp, **values)
    if overrides:
        cfg = replace(cfg, **overrides)
    return cfg, list(warnings)


def count_lines(text: str) -> int:
    """Lines of ``text`` as an editor counts them (a final line without newline counts)."""
    if not text:
        return 0
    n = text.count("\n") + text.count("\r") - text.count("\r\n")
    return n + (0 if text.endswith(("\n", "\r")) else 1)


def too_long_message(lines: int, limit: int) -> str:
    return (f"not checked: the file has {lines} lines, more than maxFileLines = {limit} "
            f"([tool.ave] or the editor's ave.maxFileLines)")


# ----------------------------------------------------------------------------- baseline

#: 2: fingerprints leave the line's comment out and name a helper's call (each call its
#: own finding). A file of version 1 may hold the older fingerprints: matched by them too
#: (Baseline.matches); a file of version 2 by its own keys only -- a version-1 file written
#: after the change could not be told from an older one, and the fallback let the helper
#: file's own finding's entry accept a new kernel's call of that helper (a review helper).
BASELINE_VERSION = 2


def _baseline_key(d: dict, base_dir: str, sources: Any, legacy: bool = False,
                  call: bool = True) -> tuple[str, str, str]:
    """``(code, file relative to base_dir, line-independent fingerprint)`` of a report
    diagnostic (a dict), the fingerprint being SARIF's ``aveFingerprint/v1`` base
    (:func:`ave_lsp.sarif.fingerprint_base`) computed relative to ``base_dir``
    (``legacy``: as it was computed before the line's comment was left out; ``call``
    False: before each call of a helper from another file was a finding)."""
    from ave_lsp.sarif import display_path, fingerprint_base

    return (d["code"], display_path(d["file"], base_dir),
            fingerprint_base(d, sources, base_dir, legacy=legacy, call=call))


def baseline_entries(diagnostics: list[dict], baseline_path: str,
                     reader: Any = None) -> list[dict]:
    """The baseline entries of report diagnostics (dicts)."""
    from ave_lsp.sarif import Sources

    base = os.path.dirname(os.path.abspath(baseline_path))
    sources = Sources(reader)
    out = []
    for d in diagnostics:
        code, f, fp = _baseline_key(d, base, sources)
        out.append({"code": code, "file": f, "fingerprint": fp})
    out.sort(key=lambda e: (e["file"], e["code"], e["fingerprint"]))
    return out


def write_baseline(path: str, diagnostics: list[dict]) -> int:
    """Write the baseline file of ``diagnostics``; returns how many entries."""
    import json

    entries = baseline_entries(diagnostics, path)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump({"version": BASELINE_VERSION, "tool": "ave-lsp", "findings": entries},
                  f, indent=2)
        f.write("\n")
    return len(entries)


class Baseline:
    """Accepted findings (a baseline file); :meth:`filter` drops the ones present."""

    def __init__(self, path: str, entries: list[dict], version: int = BASELINE_VERSION
                 ) -> None:
        self.path = os.path.abspath(path)
        #: the file's format (see BASELINE_VERSION): before 2, older fingerprints match too
        self.version = version
        self.dir = os.path.dirname(self.path)
        self.keys: dict[tuple[str, str, str], int] = {}
        for e in entries:
            k = (e["code"], e["file"], e["fingerprint"])
            self.keys[k] = self.keys.get(k, 0) + 1

    @classmethod
    def load(cls, path: str) -> "Baseline":
        """Read a baseline file; raises ``OSError`` or ``ValueError`` when it is bad."""
        import json

        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except RecursionError:      # (valid JSON nested 100,000 deep)
                raise ValueError(f"{path}: nested too deeply for a baseline file") from None
        # the three keys must be strings: a list was unhashable (TypeError: an internal
        # error instead of the documented usage error or warning; a review helper)
        if not isinstance(data, dict) or not isinstance(data.get("findings"), list) or \
                not all(isinstance(e, dict) and all(isinstance(e.get(k), str)
                                                    for k in ("code", "file", "fingerprint"))
                        for e in data["findings"]):
            raise ValueError(f"{path}: not an ave-lsp baseline file (each finding needs "
                             "the strings code, file and fingerprint)")
        v = data.get("version")
        return cls(path, data["findings"],
                   v if isinstance(v, int) and not isinstance(v, bool) else 1)

    def matches(self, diagnostics: list[dict], reader: Any = None,
                taken: dict | None = None, used: dict | None = None) -> list[bool]:
        """For each report diagnostic (a dict), whether the baseline accepts it; each
        baseline entry absorbs one matching finding. ``reader(path)`` gives a file's text
        (an editor buffer), default: read it from disk. ``taken``: entries other files of
        the same run absorbed already (a finding in a helper has one fingerprint whatever
        kernel reaches it: one entry absorbed it in every file, a new kernel's race too; a
        review helper); ``used`` receives the entries these absorb.

        A baseline of version 1 (``BASELINE_VERSION``) may have been written before the
        fingerprint left the line's comment out: it holds the legacy fingerprint (the whole line): a diagnostic on a commented line takes such
        an entry first -- it names that line only -- then every diagnostic its
        fingerprint's (matched in one pass, a commented line took an uncommented twin's
        entry and the twin's finding came back; review helpers). A finding in a helper
        from another file is one per call of the helper, its fingerprint naming the call;
        an entry written before (the helper's line alone, or the whole line) stood for
        every call's finding, and still does in a version-1 file: it absorbs them all (an
        upgrade does not turn accepted findings into new ones). A version-2 file is matched
        by the current fingerprints only."""
        from ave_core.diagnostics import call_site
        from ave_lsp.sarif import Sources

        sources = Sources(reader)
        left = dict(self.keys)
        for k, n in (taken or {}).items():
            if k in left:
                left[k] -= n
        out = [False] * len(diagnostics)
        calls = [call_site(d) is not None for d in diagnostics]
        keys = [(_baseline_key(d, self.dir, sources),
                 _baseline_key(d, self.dir, sources, legacy=True),
                 _baseline_key(d, self.dir, sources, call=False) if c else None)
                for d, c in zip(diagnostics, calls)]
        # (an uncommented line's legacy key is its key: the passes cover both; a call's
        # legacy entry, once taken, absorbs the other calls' findings -- after every
        # current key, so that it takes no entry of a finding without a call on the same
        # helper line: the helper's file's own kernel)
        absorbing: set = set()
        passes = ((1, False), (0, None), (1, True), (2, True)) if self.version < 2 \
            else ((0, None),)
        for pick, with_call in passes:
            for i, ks in enumerate(keys):
                k = ks[pick]
                if out[i] or k is None or (with_call is not None and calls[i] != with_call):
                    continue
                if pick != 0 and calls[i] and k in absorbing:
                    out[i] = True
                elif left.get(k, 0) > 0:
                    left[k] -= 1
                    out[i] = True
                    if pick != 0 and calls[i]:
                        absorbing.add(k)
                    if used is not None:
                        used[k] = used.get(k, 0) + 1
        return out

    def filter(self, diagnostics: list[dict], reader: Any = None) -> tuple[list[dict], int]:
        """``(kept, number dropped)``."""
        hits = self.matches(diagnostics, reader)
        kept = [d for d, h in zip(diagnostics, hits) if not h]
        return kept, len(diagnostics) - len(kept)


_baselines: dict[str, tuple[tuple[int, int] | None, Baseline | None, str | None]] = {}


def load_baseline_cached(path: str) -> tuple[Baseline | None, str | None]:
    """The baseline at ``path`` (reloaded when it changes) or ``(None, error message)``."""
    try:
        st = os.stat(path)
        stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):     # (ValueError: a NUL in the path)
        stamp = None
    hit = _baselines.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1], hit[2]
    try:
        b, err = Baseline.load(path), None
    except (OSError, ValueError) as e:
        b, err = None, f"cannot read the baseline {path}: {e}"
    _baselines[path] = (stamp, b, err)
    return b, err
