"""The Ave language server (pygls 2.x): diagnostics, hover, inlay hints, quick fixes.

Checks run :func:`ave_core.check.check_file` on the editor's buffer in a worker thread
(one at a time: z3's default context is not thread-safe), never on the event loop; the
analyses of a file's specializations run in a pool of worker processes (the ``jobs``
setting, :mod:`ave_core.pool`; started by the first check, kept for the server's life):

* ``didOpen`` and ``didSave`` check the document now; ``didChange`` checks it after 300 ms
  of quiet when the ``checkOnChange`` setting is on;
* a newer version of the document supersedes an older check: a queued one is cancelled,
  a running one stops waiting for its worker processes (their units that have not started
  are cancelled) or finishes in its thread, and its result is dropped. Diagnostics are only
  ever delivered for the document's latest version, with that ``version``;
* every delivery is the full current list (an empty list clears); a file that does not
  import Ave gets an empty list;
* a client that advertises ``textDocument.diagnostic`` gets pull diagnostics
  (``textDocument/diagnostic``, and ``workspace/diagnostic/refresh`` when a check it did
  not wait for finishes); any other client gets ``textDocument/publishDiagnostics``.
  Never both.

An exception anywhere in a check becomes diagnostic ``AVE900`` and a
``window/logMessage``; the server keeps serving.

Importing this module imports pygls, lsprotocol and the standard library only: the
checker, the front end and z3 are imported in the worker when the first check runs.
"""

from __future__ import annotations

import asyncio
import re
import hashlib
import logging
import os
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from ave_core import __version__
from ave_lsp.server import convert
from ave_lsp.server.settings import SECTION, Settings

logger = logging.getLogger("ave_lsp.server")

NAME = "ave-lsp"

#: Quiet time after a change before a ``checkOnChange`` check starts (seconds).
DEBOUNCE_S = 0.3
#: files whose change on disk re-checks open documents (workspace/didChangeWatchedFiles):
#: helpers, the configuration, baselines (any JSON: a baseline may have any name; a JSON
#: that is no open document's baseline re-checks nothing)
WATCHED_GLOBS = ("**/*.py", "**/*.pyi", "**/pyproject.toml", "**/*.json")

#: A check running longer than this gets work-done progress (seconds).
PROGRESS_AFTER_S = 0.3

#: Interval of the progress reports while a check runs (seconds).
PROGRESS_REPORT_S = 1.0

#: After this many seconds of re-checking fixed texts (ave_lsp.fixplan) no further
#: re-check starts: a save's diagnostics wait for them (seconds).
FIXPLAN_BUDGET_S = 2.0

#: How long the first check waits for the client's settings (seconds).
SETTINGS_WAIT_S = 5.0


# ----------------------------------------------------------------------------- protocol

#: A request ``structure_message`` answered already (its params did not deserialize).
_ANSWERED = object()


class AveProtocol(LanguageServerProtocol):
    """pygls' protocol, negotiating UTF-16 positions whatever the client prefers.

    Ave's ranges are UTF-16 (LSP's default, which every client must support); pygls
    would otherwise pick the client's first preference (e.g. UTF-8).
    """

    def structure_message(self, data: dict) -> Any:
        """pygls' deserialization, but a request whose params do not fit its method
        (``"params": null``, a position without ``line``, ``line: -1``) is answered with
        the error (InvalidParams, -32602) instead of being dropped: JSON-RPC answers every
        request, and a client would wait for it forever."""
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], error=e.to_response_error())
                return _ANSWERED
            raise

    #: ``initialize`` was received (LSP: before it, a request is answered with
    #: ServerNotInitialized, -32002, and a notification other than ``exit`` is dropped)
    _initialize_seen = False

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        method = getattr(message, "method", None)
        if method == types.INITIALIZE:
            self._initialize_seen = True
        elif not self._initialize_seen and method not in (None, types.EXIT):
            # (pygls answered a request before `initialize` with a null result, or ran a
            # notification against a workspace that does not exist yet)
            if getattr(message, "id", None) is not None:
                self._send_response(message.id, error=types.ResponseError(
                    code=types.ErrorCodes.ServerNotInitialized,
                    message=f"{method}: the server is not initialized (send 'initialize' "
                            "first)"))
            return
        if self._shutdown and method not in (None, types.EXIT) \
                and getattr(message, "id", None) is not None:
            # after `shutdown` a request is an error (LSP: InvalidRequest), not silence
            self._send_response(message.id, error=types.ResponseError(
                code=types.ErrorCodes.InvalidRequest,
                message=f"{message.method}: the server is shut down"))
            return
        super().handle_message(message)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        general = params.capabilities.general if params.capabilities else None
        if general is not None and general.position_encodings:
            general.position_encodings = [types.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))


# ----------------------------------------------------------------------------- state

@dataclass
class _Result:
    version: int | None
    items: list[types.Diagnostic]
    result_id: str
    #: the text the diagnostics were computed for (None: not kept)
    text: str | None = None


@dataclass
class _Doc:
    """What the server knows of one open document."""

    uri: str
    task: asyncio.Task | None = None
    task_version: int | None = None     # version the task checks (None: debouncing)
    result: _Result | None = None       # last delivered result
    pull_waiters: int = 0               # pull requests waiting on the task
    files: list[str] = field(default_factory=list)  # files its kernels are built from
    unresolved: bool = False            # an import the front end could not resolve (AVE113)
    hover: tuple[int | None, asyncio.Future] | None = None


@dataclass
class _Outcome:
    """A check's result, computed in the worker."""

    items: list[types.Diagnostic] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # configuration problems
    files: list[str] = field(default_factory=list)      # files the kernels were built from
    unresolved: bool = False                            # an AVE113 (import not resolved)


def _too_long_diagnostic(lines: int, limit: int) -> types.Diagnostic:
    from ave_lsp.config import too_long_message

    href = convert.code_href("AVE902")
    return types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        message=too_long_message(lines, limit),
        severity=types.DiagnosticSeverity.Information,
        code="AVE902",
        code_description=types.CodeDescription(href=href) if href else None,
        source=convert.SOURCE,
    )


def _read_disk(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8-sig", errors="replace")
    except OSError:
        return None


def _files_of(report: Any, path: str) -> list[str]:
    files = {os.path.abspath(path)}
    files.update(os.path.abspath(f) for f in (getattr(report, "files", None) or []))
    return sorted(files)


_frozen = False


def _freeze_imports() -> None:
    """Once, when the first check has imported the checker (the server starts without it):
    move what exists then -- modules, the LSP machinery, Ave's code, all alive as long as
    the server -- out of the collector's way (``gc.freeze``). Its full collections then
    walk only what checks leave, not the whole heap (in a serial server, one took up to
    ~0.3 s here, landing on whichever check was running)."""
    global _frozen
    if _frozen:
        return
    _frozen = True
    import gc

    gc.collect()
    gc.freeze()


def _check_in_worker(uri: str, path: str, text: str, root: str | None,
                     settings: Settings, pools: Any = None,
                     cancel: threading.Event | None = None) -> _Outcome:
    """Check one buffer and convert its diagnostics (runs in the worker thread):
    configuration from ``[tool.ave]`` then the editor's settings, ``maxFileLines``,
    the baseline. With ``pools`` (an :class:`ave_core.pool.SharedPool`), the
    specializations are analyzed in its worker processes (``jobs``); ``cancel`` set
    abandons the check (an empty outcome, not to be delivered)."""
    from ave_core.check import check_file
    from ave_core.pool import CheckCancelled
    from ave_lsp.config import count_lines, load_baseline_cached

    _freeze_imports()

    cfg, warnings = settings.config_for(path, root)
    if cfg.max_file_lines is not None and "ave_core" in text:
        n = count_lines(text)
        if n > cfg.max_file_lines:
            return _Outcome([_too_long_diagnostic(n, cfg.max_file_lines)], warnings=warnings)
    pool = pools.get(cfg.jobs) if pools is not None and "ave_core" in text else None
    try:
        report = check_file(path, text, workspace=root, options=cfg.analysis_options(),
                            pool=pool, cancel=cancel)
        if any(d.proposal for d in report.diagnostics):
            from ave_lsp.fixplan import improve_fixes

            def recheck(t: str) -> Any:
                # (without a pool, jobs = 1, check_file does not look at `cancel`: a
                # newer version waited for every re-check; a review helper)
                if cancel is not None and cancel.is_set():
                    raise CheckCancelled()
                return check_file(path, t, workspace=root, options=cfg.analysis_options(),
                                  pool=pool, cancel=cancel)
            improve_fixes(report, text, recheck, budget_s=FIXPLAN_BUDGET_S)
    except CheckCancelled:
        return _Outcome(warnings=warnings)
    files = _files_of(report, path) if not path.startswith("<") else []
    if not report.uses_ave:
        return _Outcome(warnings=warnings)
    logs = []
    for d in report.diagnostics:
        if d.code == "AVE900":
            logs.append("\n".join([f"{d.file}:{d.range.start.line + 1}: {d.message}",
                                   *(f"    {n}" for n in d.notes)]))
    diags = list(report.diagnostics)
    if cfg.baseline is not None and diags:
        # (suppressions first, as ave-lsp --check: the baseline lists what they leave)
        diags = convert.drop_suppressed(diags, path=path, text=text, root=root)
        baseline, err = load_baseline_cached(cfg.baseline)
        if err is not None:
            warnings.append(err)
        else:
            me = os.path.normcase(os.path.abspath(path))

            def reader(p: str) -> str | None:
                return text if os.path.normcase(os.path.abspath(p)) == me else _read_disk(p)

            hits = baseline.matches([d.to_json() for d in diags], reader)
            diags = [d for d, h in zip(diags, hits) if not h]
    items = convert.to_lsp(diags, path=path, uri=uri, text=text, root=root)
    return _Outcome(items, logs, warnings, files,
                    unresolved=any(d.code == "AVE113" for d in report.diagnostics))


def is_python(language_id: str | None, path: str) -> bool:
    """Whether a document is Python: its language id says so, or (no id, or a client
    that labels files oddly) its name ends in ``.py``/``.pyi``."""
    return language_id in (None, "", "python") or path.endswith((".py", ".pyi"))


def internal_error_diagnostic(exc: BaseException) -> types.Diagnostic:
    """An ``AVE900`` diagnostic at the top of the file for an exception of the server."""
    first = str(exc).partition("\n")[0]
    message = f"internal error: {type(exc).__name__}" + (f": {first}" if first else "")
    notes = [line.rstrip() for line in
             traceback.format_exception(type(exc), exc, exc.__traceback__)[-4:]]
    notes.append("this is a bug in Ave; please report it with the file that triggered it")
    href = convert.code_href("AVE900")
    return types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        message=convert.one_line(message),
        severity=types.DiagnosticSeverity.Error,
        code="AVE900",
        code_description=types.CodeDescription(href=href) if href else None,
        source=convert.SOURCE,
        data={"witness": None, "notes": notes},
    )


def _result_id(version: int | None, items: list[types.Diagnostic]) -> str:
    digest = hashlib.sha1(repr(items).encode("utf-8", "replace")).hexdigest()[:16]
    return f"{version}:{digest}"


# ----------------------------------------------------------------------------- documents

_LSP_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _lsp_lines(source: str) -> tuple[str, ...]:
    """Lines as LSP counts them: ended by \\n, \\r\\n or \\r only (not by \\f, \\v,
    \\x1c-\\x1e, \\x85, U+2028/9, which str.splitlines also splits at)."""
    return tuple(_LSP_LINE.findall(source))


def _offset(lines: Sequence[str], pos: Any, codec: Any) -> int:
    """The code-point offset in the document (``lines``: :func:`_lsp_lines`) of an LSP
    position in the negotiated encoding's code units: a line past the last is the end of
    the document, a character past the end of its line's text (before its line end) is
    that end."""
    line = max(0, pos.line)
    if line >= len(lines):
        return sum(len(x) for x in lines)
    base = sum(len(x) for x in lines[:line])
    text = lines[line].rstrip("\r\n")
    units = 0
    for i, ch in enumerate(text):
        if units >= pos.character:
            return base + i
        units += codec.impl.code_units_for_char(ch)
    return base + len(text)


def _use_lsp_line_ends(workspace: Any) -> None:
    """Make the workspace create documents that apply incremental edits by LSP lines.

    pygls 2.1's TextDocument splits with ``str.splitlines``; after an edit below a form
    feed (an Emacs page break) its copy of the buffer was wrong.
    """
    from pygls.workspace.text_document import TextDocument

    class LspTextDocument(TextDocument):
        @property
        def lines(self):  # type: ignore[override]
            return _lsp_lines(self.source)

        def _apply_incremental_change(self, change: Any) -> None:
            # pygls 2.1 clamps a character past the end of a line to its length - 1 (it
            # counts the line end): on a last line without one, an insertion at
            # (0, 1000) landed one character early; a character just past the line end
            # landed after it (inside a CRLF). LSP: past the end means at the end.
            src = self.source
            lines = _lsp_lines(src)
            start = _offset(lines, change.range.start, self._position_codec)
            end = _offset(lines, change.range.end, self._position_codec)
            if end < start:
                start, end = end, start
            self._source = src[:start] + change.text + src[end:]

    def create(doc_uri: str, source: str | None = None, version: int | None = None,
               language_id: str | None = None) -> TextDocument:
        return LspTextDocument(doc_uri, source=source, version=version,
                               language_id=language_id, sync_kind=workspace._sync_kind,
                               position_codec=workspace._position_codec)

    workspace._create_text_document = create


# ----------------------------------------------------------------------------- server

class _CountingPool(ThreadPoolExecutor):
    """A thread pool that counts the calls running on its threads (:attr:`running`): at
    ``exit`` the server ends the process at once when one still runs (see
    :func:`ave_lsp.server._exit_if_busy`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.running = 0
        self._count_lock = threading.Lock()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        def counted() -> Any:
            with self._count_lock:
                self.running += 1
            try:
                return fn(*args, **kwargs)
            finally:
                with self._count_lock:
                    self.running -= 1
        return super().submit(counted)


class AveLanguageServer(LanguageServer):
    """pygls server with Ave's per-document check scheduling."""

    def __init__(self) -> None:
        super().__init__(NAME, __version__, protocol_cls=AveProtocol)
        self.settings = Settings()
        #: the editor's settings of each workspace folder (its path, as root_for gives it)
        #: where the client has folder-scoped values (VS Code: .vscode/settings.json of a
        #: multi-root workspace's folder); else ``settings``
        self.folder_settings: dict[str, Settings] = {}
        #: an ``exit`` notification came (the exit status: ave_lsp.server._exit_status)
        self.exit_received = False
        self.docs: dict[str, _Doc] = {}
        self._check_pool: ThreadPoolExecutor | None = None
        self.analysis_pools: Any = None          # ave_core.pool.SharedPool, on first check
        self._hover_pool: ThreadPoolExecutor | None = None
        self._settings_ready: asyncio.Event | None = None
        #: (size, mtime) of each file whose save or change was last handled
        self._seen: dict[str, tuple | None] = {}
        self._background: set[asyncio.Task] = set()
        self._warned: set[str] = set()

    # ------------------------------------------------------------------ capabilities

    @property
    def pull_mode(self) -> bool:
        """Whether the client pulls diagnostics (``textDocument.diagnostic``)."""
        caps = self.client_capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic)

    def _client_can(self, *path: str) -> bool:
        obj: Any = self.client_capabilities
        for p in path:
            obj = getattr(obj, p, None) if obj is not None else None
        return bool(obj)

    # ------------------------------------------------------------------ pools

    def check_pool(self) -> ThreadPoolExecutor:
        if self._check_pool is None:
            self._check_pool = _CountingPool(max_workers=1, thread_name_prefix="ave-check")
        return self._check_pool

    def hover_pool(self) -> ThreadPoolExecutor:
        if self._hover_pool is None:
            self._hover_pool = _CountingPool(max_workers=1, thread_name_prefix="ave-hover")
        return self._hover_pool

    def busy(self) -> bool:
        """A check or a hover index is being computed on a pool's thread now."""
        return any(p is not None and p.running > 0
                   for p in (self._check_pool, self._hover_pool))

    def shared_pool(self) -> Any:
        """The :class:`ave_core.pool.SharedPool` whose worker processes analyze the
        specializations (its workers start with the first check that wants them)."""
        if self.analysis_pools is None:
            from ave_core.pool import SharedPool

            self.analysis_pools = SharedPool()
        return self.analysis_pools

    def shutdown(self, kill: bool = False) -> None:
        """Stop the pools; ``kill``: the process exits now, mid-check (see
        :meth:`ave_core.pool.AnalysisPool.shutdown`)."""
        for pool in (self._check_pool, self._hover_pool):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        if self.analysis_pools is not None:
            self.analysis_pools.shutdown(kill=kill)
        super().shutdown()

    # ------------------------------------------------------------------ logging

    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # noqa: BLE001 - never fail because the client went away
            logger.warning("%s", message)

    # ------------------------------------------------------------------ settings

    def background(self, coro: Any) -> asyncio.Task:
        """Run ``coro`` on the event loop, keeping a reference until it is done."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def settings_event(self) -> asyncio.Event:
        if self._settings_ready is None:
            self._settings_ready = asyncio.Event()
        return self._settings_ready

    async def fetch_settings(self) -> None:
        """Ask the client for the ``ave`` section; re-check open documents if the
        analysis options changed."""
        try:
            if self._client_can("workspace", "configuration"):
                # the section once without a scope, then once per workspace folder (a
                # folder's own values: without a scopeUri VS Code answers with the first
                # folder's, and every other folder's settings were ignored; a review
                # helper)
                folders = [(f.uri, to_fs_path(f.uri))
                           for f in list(self.workspace.folders.values())]
                folders = [(u, p) for u, p in folders if p]
                values = await self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]
                                              + [types.ConfigurationItem(scope_uri=u,
                                                                         section=SECTION)
                                                 for u, _ in folders]))
                values = list(values or [])
                per = {}
                for (u, p), v in zip(folders, values[1:]):
                    s, _ = Settings.from_json(v)     # (warnings: logged for the section)
                    per[p] = s
                changed = per != self.folder_settings
                self.folder_settings = per
                self.apply_settings(values[0] if values else None, force=changed)
        except Exception as e:  # noqa: BLE001 - keep the defaults
            self.log(f"ave-lsp: could not read the settings: {e}", types.MessageType.Warning)
        finally:
            self.settings_event().set()

    def settings_for(self, path: str) -> Settings:
        """The editor's settings for a file: its workspace folder's, else the section's."""
        return self.folder_settings.get(self.root_for(path), self.settings) \
            if self.folder_settings else self.settings

    def apply_settings(self, value: Any, force: bool = False) -> None:
        new, warnings = Settings.from_json(value)
        self._warned.clear()        # (settings that change what is read: news again)
        for w in warnings:
            self.log(f"ave-lsp: {w}", types.MessageType.Warning)
        old, self.settings = self.settings, new
        def key(s: Settings) -> dict:
            return {k: v for k, v in s.explicit.items()
                    if k not in ("check_on_change", "inlay_hints", "jobs")}
        if key(old) != key(new) or force:
            for uri in list(self.docs):
                self.schedule(uri, 0.0)
        if old.explicit.get("inlay_hints") != new.explicit.get("inlay_hints"):
            self.refresh_inlay_hints()

    def refresh_inlay_hints(self) -> None:
        """Ask the client to fetch inlay hints again (``workspace/inlayHint/refresh``)
        when it supports that."""
        if self._client_can("workspace", "inlay_hint", "refresh_support"):
            try:
                self.workspace_inlay_hint_refresh(None)
            except Exception as e:  # noqa: BLE001 - the hints update on the next edit
                logger.info("could not refresh inlay hints: %s", e)

    def check_on_change(self, uri: str) -> bool:
        """``checkOnChange`` for this document ([tool.ave], then the editor)."""
        path = self.path_of(uri)
        try:
            return self.settings_for(path).config_for(path, self.root_for(path))[0] \
                .check_on_change
        except Exception:  # noqa: BLE001 - a bad pyproject.toml: the editor's value
            return self.settings_for(path).check_on_change

    def dependents(self, uri: str) -> list[str]:
        """Open documents (other than ``uri``) whose kernels are built from its file, and
        those with an import the front end could not resolve (AVE113): the saved file may
        be the module they lack (a helper created after the kernel that imports it kept
        its stale AVE113 until the kernel itself was saved; a review helper)."""
        path = self.path_of(uri)
        if path.startswith("<"):
            return []
        me = os.path.normcase(os.path.abspath(path))
        py = me.endswith((".py", ".pyi"))
        return [u for u, st in self.docs.items()
                if u != uri and (any(os.path.normcase(f) == me for f in st.files)
                                 or (py and st.unresolved))]

    async def register_capability(self, rid: str, method: str, options: Any) -> None:
        """Register ``method`` with the client (``client/registerCapability``); a refusal
        is logged, nothing more."""
        try:
            await self.client_register_capability_async(types.RegistrationParams(
                registrations=[types.Registration(id=rid, method=method,
                                                  register_options=options)]))
        except Exception as e:  # noqa: BLE001 - the feature then works without it
            logger.info("could not register %s: %s", method, e)

    def files_changed(self, uris: list[str], watched: bool = False) -> None:
        """Files saved in the editor or changed on disk (``watched``: reported by the
        client's file watchers): re-check the open documents that depend on them (kernels
        built from a helper -- and documents whose check is still running, whose files are
        not known yet; every document for the ``pyproject.toml`` one of them is configured
        by, or its baseline file). Files under ``.venv``, ``node_modules``, hidden
        directories and ``__pycache__`` are ignored; a watcher event for a file whose save
        was just handled (same size and time) is not handled twice."""
        from ave_core.check import SKIP_DIRS
        from ave_lsp.config import find_pyproject

        deps: set[str] = set()
        configs: set[str] | None = None
        baselines: set[str] | None = None
        for uri in uris:
            path = self.path_of(uri)
            if path.startswith("<"):
                continue
            if _skipped(path, self.root_for(path), SKIP_DIRS):
                continue
            stamp = _stamp(path)
            if watched and stamp is not None and self._seen.get(path) == stamp:
                continue            # (the save handled it already)
            self._seen[path] = stamp
            name = os.path.basename(path)
            if name == "pyproject.toml":
                # (a configuration problem is logged once while it lasts: after an edit of
                # a configuration it is news again -- fixed, then made again, it was
                # never logged a second time; a closing-note item)
                self._warned.clear()
                if configs is None:
                    configs = {_norm(c) for c in (
                        find_pyproject(self.path_of(u)) for u in list(self.docs)
                        if not self.path_of(u).startswith("<")) if c}
                if _norm(path) in configs:
                    deps.update(self.docs)
                else:
                    # deleted (the documents it configured are under its directory, their
                    # nearest pyproject another one now: they kept its settings until the
                    # next save) or created above another one (a project root where
                    # imports are looked up: a stale AVE113 stayed; review helpers)
                    top = _norm(os.path.dirname(path)) + os.sep
                    deps.update(u for u in self.docs if not self.path_of(u).startswith("<")
                                and _norm(self.path_of(u)).startswith(top))
                continue
            if name.endswith(".json"):
                if baselines is None:
                    baselines = self._baselines()
                if _norm(path) in baselines:
                    self._warned.clear()        # (an unreadable baseline: the same)
                    deps.update(self.docs)
                continue
            deps.update(self.dependents(uri))
            # (a document whose first check is still running has no files yet: a helper
            # changed right after opening it was missed; a review helper)
            deps.update(u for u, st in self.docs.items() if not st.files and
                        st.task is not None and not st.task.done())
        deps.difference_update(uris)     # (an open document's text is the editor's)
        for dep in deps:                     # kernels built from the saved helper
            # (their hover facts and inlay hints come from the helper too: the index was
            # kept by the document's version and went stale; a review helper)
            st = self.docs.get(dep)
            if st is not None:
                st.hover = None
            self.schedule(dep, 0.0)
        if deps:
            self.refresh_inlay_hints()

    def _baselines(self) -> set[str]:
        """The baseline files of the open documents (normalized paths), once per batch of
        events (per event and document it froze the server on a checkout; a review
        helper)."""
        out: set[str] = set()
        for uri in list(self.docs):
            p = self.path_of(uri)
            if p.startswith("<"):
                continue
            try:
                cfg, _ = self.settings_for(p).config_for(p, self.root_for(p))
            except Exception:  # noqa: BLE001 - a bad pyproject.toml: no baseline
                continue
            b = getattr(cfg, "baseline", None)
            if b:
                out.add(_norm(b))
        return out

    # ------------------------------------------------------------------ paths

    def path_of(self, uri: str) -> str:
        path = to_fs_path(uri)
        if path is None or not uri.startswith("file:"):
            return f"<{uri}>"
        return path

    def root_for(self, path: str) -> str | None:
        """The workspace folder holding ``path`` (the longest match), else the root."""
        if path.startswith("<"):
            return self.workspace.root_path
        best = None
        apath = os.path.normcase(os.path.abspath(path))
        for folder_uri in list(self.workspace.folders):
            fp = to_fs_path(folder_uri)
            if not fp:
                continue
            f = os.path.normcase(os.path.abspath(fp))
            if (apath == f or apath.startswith(f.rstrip(os.sep) + os.sep)) and \
                    (best is None or len(f) > len(best[0])):
                best = (f, fp)
        if best is not None:
            return best[1]
        return self.workspace.root_path

    def open_document(self, uri: str) -> Any:
        """The open document ``uri`` (pygls' TextDocument), or None when it is not open.
        pygls keys its documents by the *unquoted* URI (``file:///my%20kernels/k.py`` is
        stored as ``file:///my kernels/k.py``): a lookup by the URI as the client sent it
        found nothing for a path with a space or a non-ASCII character, or any file on
        Windows (``file:///c%3A/...``), and such files got no diagnostics, hover or fixes
        at all (a review helper)."""
        return self.workspace.text_documents.get(unquote(uri))

    def current_version(self, uri: str) -> int | None:
        doc = self.open_document(uri)
        return doc.version if doc is not None else None

    # ------------------------------------------------------------------ scheduling

    def schedule(self, uri: str, delay: float) -> asyncio.Task | None:
        """(Re)start the check of ``uri``: cancels the pending one."""
        st = self.docs.get(uri)
        if st is None:
            return None
        if st.task is not None and not st.task.done():
            st.task.cancel()
        st.task_version = self.current_version(uri) if delay <= 0 else None
        st.task = asyncio.get_running_loop().create_task(self._run(st, delay))
        return st.task

    def checking_current(self, uri: str) -> bool:
        """Whether a check of the document's current version is already under way (not
        debouncing): a save then needs no new check. Restarting it would not stop the
        running one (a worker thread cannot be interrupted): the new check would queue
        behind it, and the save would wait for both (with ``checkOnChange``, a save right
        after a pause in typing did exactly that)."""
        st = self.docs.get(uri)
        return st is not None and st.task is not None and not st.task.done() and \
            st.task_version is not None and st.task_version == self.current_version(uri)

    def drop_stale(self, uri: str) -> None:
        """A change arrived and no check follows it: cancel a check of an older version
        (its result could not be delivered anyway)."""
        st = self.docs.get(uri)
        if st is None or st.task is None or st.task.done():
            return
        if st.task_version is not None and st.task_version != self.current_version(uri):
            st.task.cancel()

    async def _run(self, st: _Doc, delay: float) -> None:
        me = asyncio.current_task()
        if delay > 0:
            await asyncio.sleep(delay)
        ready = self.settings_event()
        if not ready.is_set():
            try:
                await asyncio.wait_for(ready.wait(), SETTINGS_WAIT_S)
            except asyncio.TimeoutError:
                pass
        doc = self.open_document(st.uri)
        if doc is None:
            return
        version, text = doc.version, doc.source
        st.task_version = version
        path = self.path_of(st.uri)
        root = self.root_for(path)
        loop = asyncio.get_running_loop()
        cancel = threading.Event()       # superseded: the pool's queued units are dropped
        try:
            if is_python(doc.language_id, path):
                fut = loop.run_in_executor(self.check_pool(), _check_in_worker,
                                           st.uri, path, text, root,
                                           self.settings_for(path),
                                           self.shared_pool(), cancel)
                outcome = await self._with_progress(fut, path)
            else:
                outcome = _Outcome()                     # not Python: nothing to say
        except asyncio.CancelledError:
            cancel.set()
            raise
        except BaseException as e:  # noqa: BLE001 - the server never dies on any input
            if isinstance(e, (KeyboardInterrupt,)):
                raise
            outcome = _Outcome([internal_error_diagnostic(e)], [
                "".join(traceback.format_exception(type(e), e, e.__traceback__))])
        for entry in outcome.logs:
            self.log(f"ave-lsp: internal error while checking {path}:\n{entry}",
                     types.MessageType.Error)
        for w in outcome.warnings:
            if w not in self._warned:                    # each problem once
                self._warned.add(w)
                self.log(f"ave-lsp: {w}", types.MessageType.Warning)
        if st.task is not me or self.docs.get(st.uri) is not st:
            return                                       # superseded or closed
        if self.current_version(st.uri) != version:
            logger.debug("dropping diagnostics of %s version %s (now %s)", st.uri, version,
                         self.current_version(st.uri))
            return
        st.files = outcome.files
        st.unresolved = outcome.unresolved
        st.result = _Result(version, outcome.items, _result_id(version, outcome.items), text)
        self._deliver(st)

    async def _with_progress(self, fut: asyncio.Future, path: str) -> Any:
        """Await the check ``fut``; when it takes longer than :data:`PROGRESS_AFTER_S`
        and the client supports it (``window.workDoneProgress``), show work-done
        progress: ``window/workDoneProgress/create``, then ``$/progress`` begin,
        a report every :data:`PROGRESS_REPORT_S`, end."""
        if not self._client_can("window", "work_done_progress"):
            return await fut
        try:
            done, _ = await asyncio.wait({fut}, timeout=PROGRESS_AFTER_S)
        except asyncio.CancelledError:
            fut.cancel()
            raise
        if done:
            return fut.result()
        self._progress_seq = getattr(self, "_progress_seq", 0) + 1
        token = f"ave-check-{os.getpid()}-{self._progress_seq}"
        name = os.path.basename(path)
        started = False
        try:
            try:
                await asyncio.wait_for(self.work_done_progress.create_async(token), 5.0)
                self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                    title="Ave", message=f"checking {name}", cancellable=False))
                started = True
            except Exception as e:  # noqa: BLE001 - progress is a nicety
                logger.info("no work-done progress: %s", e)
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            while True:
                done, _ = await asyncio.wait({fut}, timeout=PROGRESS_REPORT_S)
                if done:
                    return fut.result()
                if started:
                    self.work_done_progress.report(token, types.WorkDoneProgressReport(
                        message=f"checking {name} ({loop.time() - t0 + PROGRESS_AFTER_S:.0f} s)"))
        finally:
            if not fut.done():
                fut.cancel()                             # superseded: drop the result
            if started:
                try:
                    self.work_done_progress.end(token, types.WorkDoneProgressEnd(
                        message=f"checked {name}"))
                except Exception:  # noqa: BLE001 - the client went away
                    pass

    def _deliver(self, st: _Doc) -> None:
        r = st.result
        if r is None:
            return
        if not self.pull_mode:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=st.uri, diagnostics=r.items, version=r.version))
        elif st.pull_waiters == 0 and self._client_can("workspace", "diagnostics",
                                                       "refresh_support"):
            self.workspace_diagnostic_refresh(None)

    # ------------------------------------------------------------------ pull

    async def pull(self, params: types.DocumentDiagnosticParams) -> Any:
        uri = params.text_document.uri
        while True:
            st = self.docs.get(uri)
            if st is None or self.open_document(uri) is None:
                # not open (never, or closed): nothing to report -- and no check to wait
                # for (one would find no text and end without a result: this loop spun)
                return types.RelatedFullDocumentDiagnosticReport(items=[])
            version = self.current_version(uri)
            r = st.result
            if r is not None and r.version == version:
                if params.previous_result_id == r.result_id:
                    return types.RelatedUnchangedDocumentDiagnosticReport(
                        result_id=r.result_id)
                return types.RelatedFullDocumentDiagnosticReport(items=r.items,
                                                                 result_id=r.result_id)
            task = st.task
            pending = task is not None and not task.done() and \
                st.task_version in (None, version)
            if not pending:
                if not self.check_on_change(uri) and r is not None and \
                        params.previous_result_id == r.result_id:
                    # edits since the last check and no check on change: the client
                    # keeps what it shows until the next save
                    return types.RelatedUnchangedDocumentDiagnosticReport(
                        result_id=r.result_id)
                task = self.schedule(uri, 0.0)
                if task is None:
                    continue
            st.pull_waiters += 1
            try:
                await asyncio.wait({task})
            finally:
                st.pull_waiters -= 1

    # ------------------------------------------------------------------ hover

    async def hover_index(self, uri: str) -> Any:
        """The :class:`~ave_lsp.server.hover.HoverIndex` of the document's current
        version (hover and inlay hints share it: one front-end run per version), built
        in the hover worker; None for a document the server does not know."""
        from ave_lsp.server import hover as hover_mod

        st = self.docs.get(uri)
        doc = self.open_document(uri)
        if st is None or doc is None:
            return None
        if not is_python(doc.language_id, self.path_of(uri)):
            return None     # (as for diagnostics: a .pyx got hints; a review helper)
        if st.hover is None or st.hover[0] != doc.version or (
                st.hover[1].done() and (st.hover[1].cancelled()
                                        or st.hover[1].exception() is not None)):
            path = self.path_of(uri)
            fut = asyncio.get_running_loop().run_in_executor(
                self.hover_pool(), hover_mod.build_index, doc.source, path,
                self.root_for(path))
            st.hover = (doc.version, fut)
        return await asyncio.shield(st.hover[1])

    async def hover(self, params: types.HoverParams) -> types.Hover | None:
        loop = asyncio.get_running_loop()
        try:
            index = await self.hover_index(params.text_document.uri)
            if index is None:
                return None
            found = await loop.run_in_executor(self.hover_pool(), index.hover,
                                               params.position.line,
                                               params.position.character)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - no hover, but say why in the log
            self.log(f"ave-lsp: hover failed: {type(e).__name__}: {e}\n"
                     + traceback.format_exc(), types.MessageType.Error)
            return None
        if found is None:
            return None
        markdown, rng = found
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
            range=types.Range(types.Position(rng.start.line, rng.start.character),
                              types.Position(rng.end.line, rng.end.character)))

    # ------------------------------------------------------------------ inlay hints

    def inlay_hints_enabled(self, uri: str) -> bool:
        """``inlayHints`` for this document ([tool.ave], then the editor)."""
        path = self.path_of(uri)
        try:
            return self.settings_for(path).config_for(path, self.root_for(path))[0] \
                .inlay_hints
        except Exception:  # noqa: BLE001 - a bad pyproject.toml: the editor's value
            return self.settings_for(path).inlay_hints

    async def inlay_hints(self, params: types.InlayHintParams) -> list[types.InlayHint]:
        """Each assignment of a tile, fragment or tensor in the range gets a type hint
        after its name: dtype, shape, memory, layout (:meth:`HoverIndex.inlay_hints`,
        the facts hover shows), the hover as its tooltip. Empty when ``inlayHints`` is
        off or the file does not pass the front end."""
        uri = params.text_document.uri
        if not self.inlay_hints_enabled(uri):
            return []
        r = params.range
        loop = asyncio.get_running_loop()
        try:
            index = await self.hover_index(uri)
            if index is None:
                return []
            found = await loop.run_in_executor(self.hover_pool(), index.inlay_hints,
                                               r.start.line, r.end.line)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - no hints, but say why in the log
            self.log(f"ave-lsp: inlay hints failed: {type(e).__name__}: {e}\n"
                     + traceback.format_exc(), types.MessageType.Error)
            return []
        out = []
        for pos, label, tooltip in found:
            p = types.Position(pos.line, pos.character)
            if p < r.start or r.end < p:
                continue
            out.append(types.InlayHint(
                position=p, label=f": {label}", kind=types.InlayHintKind.Type,
                tooltip=types.MarkupContent(kind=types.MarkupKind.Markdown, value=tooltip)
                if tooltip else None))
        return out

    # ------------------------------------------------------------------ code actions

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        """Quick fixes of the Ave diagnostics in the request's context: the mechanical
        fixes their ``data["fix"]`` carries (:mod:`ave_lsp.server.fixes`), then
        "suppress with a comment". A diagnostic the client sends back without its
        ``data`` gets it from the server's last result for the document."""
        from ave_lsp.server import fixes

        only = params.context.only
        quickfix = types.CodeActionKind.QuickFix.value
        if only and not any(quickfix.startswith(str(getattr(k, "value", k))) for k in only):
            return None
        uri = params.text_document.uri
        doc = self.open_document(uri)
        if doc is None:
            return None
        st = self.docs.get(uri)
        if st is None or st.result is None or (st.result.version != doc.version and
                                               st.result.text != doc.source):
            # the diagnostics the client shows were computed for another text (an edit
            # since, not saved yet: checkOnChange is off by default), so their lines and a
            # fix's positions may name other statements now -- a barrier or a suppression
            # comment landed on the wrong line, in an edit stamped with the new version (a
            # review helper). No fix until the text is checked again -- unless the edits
            # since were undone: the text is the checked one again (no fix was offered
            # after an undo; another review)
            return []
        text = doc.source

        def make_edit(edits: list[types.TextEdit]) -> types.WorkspaceEdit:
            if self._client_can("workspace", "workspace_edit", "document_changes"):
                return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=doc.version),
                    edits=list(edits))])
            return types.WorkspaceEdit(changes={uri: list(edits)})

        ours = [self._with_data(uri, d) for d in params.context.diagnostics
                if d.source == convert.SOURCE]
        actions: list[types.CodeAction] = fixes.code_actions(text, ours, make_edit)
        comments = convert.LineComments.of(text)
        seen: set[tuple[int, str]] = set()
        for d in ours:
            code = d.code if isinstance(d.code, str) else None
            if code is None or code in convert.NOT_SUPPRESSIBLE:
                continue
            line = d.range.start.line
            if (line, code) in seen:
                continue
            seen.add((line, code))
            edit = convert.suppress_edit(text, line, code, comments)
            if edit is None:
                continue
            actions.append(types.CodeAction(
                title=f"Suppress {code} on this line (# ave: ignore[{code}])",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[d],
                edit=make_edit([edit]),
            ))
        return actions

    def _with_data(self, uri: str, d: types.Diagnostic) -> types.Diagnostic:
        """``d`` with ``data``: as sent, or (a client that drops ``data``) that of the
        same diagnostic (range, code, message) in the last result for ``uri``."""
        if isinstance(d.data, dict):
            return d
        st = self.docs.get(uri)
        r = st.result if st is not None else None
        for item in (r.items if r is not None else ()):
            if item.range == d.range and item.code == d.code and item.message == d.message:
                return item
        return d


# ----------------------------------------------------------------------------- features

def create_server() -> AveLanguageServer:
    """A new server with every feature registered."""
    server = AveLanguageServer()

    @server.feature(types.INITIALIZED)
    async def initialized(ls: AveLanguageServer, params: types.InitializedParams) -> None:
        _use_lsp_line_ends(ls.workspace)
        if ls._client_can("workspace", "did_change_configuration", "dynamic_registration"):
            # (settings then come on restart only, if the client refuses)
            await ls.register_capability(
                "ave-configuration", types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                types.DidChangeConfigurationRegistrationOptions(section=SECTION))
        if ls._client_can("workspace", "did_change_watched_files", "dynamic_registration"):
            # files changed outside the editor (git checkout, a pull, another tool): a
            # helper of an open kernel, a pyproject.toml, a baseline -- the kernels showed
            # their old findings until saved (a review helper)
            await ls.register_capability(
                "ave-watched-files", types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCHED_GLOBS]))
        await ls.fetch_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(ls: AveLanguageServer,
                           params: types.DidChangeWorkspaceFoldersParams) -> None:
        # (pygls has updated ls.workspace.folders) a folder added later has its own
        # settings too: they were never asked for (a review helper)
        ls.background(ls.fetch_settings())

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: AveLanguageServer,
                                 params: types.DidChangeWatchedFilesParams) -> None:
        ls.files_changed([c.uri for c in params.changes], watched=True)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: AveLanguageServer,
                                 params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and SECTION in settings:
            # the client pushed the values (unscoped): they apply everywhere until the
            # folders' own are read again (kept ones would hide the push)
            ls.folder_settings = {}
            ls.apply_settings(settings[SECTION])
            if ls._client_can("workspace", "configuration") and \
                    len(ls.workspace.folders) > 1:
                ls.background(ls.fetch_settings())
        else:
            ls.background(ls.fetch_settings())

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AveLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        old = ls.docs.get(uri)
        if old is not None and old.task is not None and not old.task.done():
            old.task.cancel()
        ls.docs[uri] = _Doc(uri)
        ls.schedule(uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AveLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri not in ls.docs:
            ls.docs[uri] = _Doc(uri)
        if ls.check_on_change(uri):
            ls.schedule(uri, DEBOUNCE_S)
        else:
            ls.drop_stale(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AveLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        # (a save of a file the client did not open -- a helper -- re-checks only the open
        # files built from it: there is no text of it to check)
        if ls.open_document(uri) is not None:
            if uri not in ls.docs:
                ls.docs[uri] = _Doc(uri)
            if not ls.checking_current(uri):
                ls.schedule(uri, 0.0)
        ls.files_changed([uri])

    @server.feature(types.EXIT)
    def on_exit(ls: AveLanguageServer, *args: Any) -> None:
        # (the exit status depends on it: ave_lsp.server._exit_status)
        ls.exit_received = True

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AveLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        st = ls.docs.pop(uri, None)
        if st is not None and st.task is not None and not st.task.done():
            st.task.cancel()
        if not ls.pull_mode:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier="ave", inter_file_dependencies=True, workspace_diagnostics=False))
    async def document_diagnostic(ls: AveLanguageServer,
                                  params: types.DocumentDiagnosticParams):
        return await ls.pull(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: AveLanguageServer, params: types.HoverParams):
        return await ls.hover(params)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT,
                    types.InlayHintOptions(resolve_provider=False))
    async def inlay_hint(ls: AveLanguageServer, params: types.InlayHintParams):
        return await ls.inlay_hints(params)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: AveLanguageServer, params: types.CodeActionParams):
        return ls.code_actions(params)

    return server


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _skipped(path: str, root: str | None, skip: frozenset) -> bool:
    """``path`` lies in a directory the checks skip (``.venv``, ``node_modules``, a hidden
    one), below the workspace folder ``root`` -- the folders above it do not count (a
    project under ``~/.work/`` is checked)."""
    rel = None
    if root:
        r = os.path.relpath(_norm(path), _norm(root))
        if not r.startswith(os.pardir):
            rel = r
    parts = (rel if rel is not None else path).split(os.sep)[:-1]
    return any(x in skip or (rel is not None and x.startswith(".") and x not in (".", ".."))
               for x in parts)


def _stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)
