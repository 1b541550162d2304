"""``ave-lsp --check --watch``: re-check ``*.py`` files when they change.

After the first check (printed as without ``--watch``), :class:`Watcher` watches the
given paths with :mod:`watchdog` — directories recursively (hidden directories,
``__pycache__``, ``.venv`` and ``node_modules`` ignored, as the first check does), files
by themselves. Changes are debounced: a batch is checked :data:`DEBOUNCE_S` after the last
event of a burst (an editor's save is several events), or at most :data:`MAX_DELAY_S` after
the first one. Each changed file is re-checked on its own (files importing it are not)
and its diagnostics compared with the previous check's, on standard output, in the text
format::

    kernels/gemm.py: 1 new, 0 fixed
    new: kernels/gemm.py:143:9: error AVE201 assert_conform violated: ...
        note: ...
    checked 3 files, 3 kernels (4 specializations): 1 error, 0 warnings

``fixed: ...`` lines name the diagnostics that went away (at their previous position); a
file with neither says ``no new or fixed diagnostics``, a removed file ``deleted``. A
diagnostic is the same one across checks when its code, severity, file, message and the
text of the line it starts on (stripped) are — so edits that only move it are not
reported. Then the summary line of all watched files.

Ctrl-C (or SIGTERM) stops watching; the exit status is then 0. Ctrl-C works also where
the process started with SIGINT ignored -- what a non-interactive shell does to a command it
runs in the background (``ave-lsp --check --watch . &`` in a script, or a CI step that
backgrounds its test run): the watcher installs Python's handler for SIGINT while it
watches, as it does for SIGTERM (it ignored Ctrl-C there, and had to be killed).
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
import traceback
from collections import Counter
from typing import Any, TextIO

#: Quiet time after the last change of a burst before re-checking (seconds).
DEBOUNCE_S = 0.2
#: A continuous stream of changes is still checked this long after its first event.
MAX_DELAY_S = 2.0

_IGNORED_EVENTS = frozenset({"opened", "closed_no_write", "attrib"})


def _key(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _skipped_dir(name: str) -> bool:
    from ave_core.check import SKIP_DIRS

    return name in SKIP_DIRS or name.startswith(".")


class Watcher:
    """Watches ``paths`` and re-checks changed files with ``checker``.

    Args:
        paths: the paths given to ``--check`` (files and directories).
        checker: :class:`ave_lsp.cli.Checker` (``check(path)`` and ``report(results)``).
        results: the first check, ``{path: (FileReport, suppressed)}`` in report order.
        stdout, stderr: where changes, and the watcher's own messages, are written.
        debounce: quiet time before a batch of changes is checked (seconds).
    """

    def __init__(self, paths: list[str], checker: Any, results: dict, stdout: TextIO,
                 stderr: TextIO, *, debounce: float = DEBOUNCE_S) -> None:
        self.paths = list(paths)
        self.checker = checker
        self.results = dict(results)
        self.stdout = stdout
        self.stderr = stderr
        self.debounce = debounce
        self.events: queue.Queue[str] = queue.Queue()
        self.display = {_key(p): p for p in self.results}
        self.files = {_key(p) for p in self.paths if not os.path.isdir(p)}
        self.dirs = [(_key(p), p) for p in self.paths if os.path.isdir(p)]
        self.idents = {p: self._identities(fr) for p, (fr, _) in self.results.items()}
        self._observer = None

    # ------------------------------------------------------------------ events

    def accepts(self, path: str) -> bool:
        """Whether a change to ``path`` (absolute, normalised) is one to re-check."""
        name = os.path.basename(path)
        if not name.endswith(".py") or name.startswith(".#"):
            return False
        if path in self.files or path in self.display:
            return True
        for root, _ in self.dirs:
            rel = os.path.relpath(path, root)
            if rel == os.pardir or rel.startswith(os.pardir + os.sep):
                continue
            if not any(_skipped_dir(part) for part in rel.split(os.sep)[:-1]):
                return True
        return False

    def _on_event(self, event: Any) -> None:
        if event.event_type in _IGNORED_EVENTS or event.is_directory:
            return
        for p in (event.src_path, getattr(event, "dest_path", "")):
            if isinstance(p, bytes):
                p = os.fsdecode(p)
            if p:
                k = _key(p)
                if self.accepts(k):
                    self.events.put(k)

    def start(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event):  # noqa: D102 - watchdog's callback
                try:
                    watcher._on_event(event)
                except Exception:  # noqa: BLE001 - never kill the observer thread
                    traceback.print_exc(file=watcher.stderr)

        observer = Observer()
        handler = Handler()
        parents = set()
        for root, _ in self.dirs:
            observer.schedule(handler, root, recursive=True)
        for f in self.files:
            parent = os.path.dirname(f)
            if parent not in parents and not any(parent == r or parent.startswith(r + os.sep)
                                                 for r, _ in self.dirs):
                parents.add(parent)
                observer.schedule(handler, parent, recursive=False)
        observer.daemon = True
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None

    # ------------------------------------------------------------------ the loop

    def run(self) -> int:
        """Watch until Ctrl-C or SIGTERM; returns 0."""
        restore: dict = {}
        if threading.current_thread() is threading.main_thread():
            def _term(signum, frame):
                raise KeyboardInterrupt

            for sig, handler in ((signal.SIGTERM, _term),
                                 (signal.SIGINT, signal.default_int_handler)):
                try:
                    restore[sig] = signal.signal(sig, handler)
                except (ValueError, OSError):
                    pass
        try:
            self.start()
            n = len(self.paths)
            self._err(f"ave-lsp: watching {n} path{'s' if n != 1 else ''} for changes to "
                      f".py files (Ctrl-C to stop)")
            while True:
                batch = self.next_batch()
                if batch:
                    try:
                        self.recheck(batch)
                    except BrokenPipeError:   # nobody reads the output any more
                        break
                    except Exception:  # noqa: BLE001 - keep watching
                        self._err("ave-lsp: internal error while re-checking:")
                        traceback.print_exc(file=self.stderr)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()
            for sig, old in restore.items():
                if old is not None:
                    signal.signal(sig, old)
        return 0

    def next_batch(self, poll: float = 0.5) -> set[str]:
        """Wait (up to ``poll`` seconds) for a change, then collect the burst."""
        try:
            first = self.events.get(timeout=poll)
        except queue.Empty:
            return set()
        batch = {first}
        start = time.monotonic()
        while True:
            wait = min(self.debounce, start + MAX_DELAY_S - time.monotonic())
            if wait <= 0:
                break
            try:
                batch.add(self.events.get(timeout=wait))
            except queue.Empty:
                break
        return batch

    # ------------------------------------------------------------------ re-checking

    def _display_for(self, key: str) -> str:
        if key in self.display:
            return self.display[key]
        for root, given in self.dirs:
            rel = os.path.relpath(key, root)
            if not rel.startswith(os.pardir):
                disp = os.path.join(given, rel)
                break
        else:
            disp = next((p for p in self.paths if _key(p) == key), key)
        self.display[key] = disp
        return disp

    @staticmethod
    def _identities(fr: Any) -> list[tuple[tuple, dict]]:
        from ave_lsp.sarif import Sources

        src = Sources()
        out = []
        for d in fr.diagnostics:
            j = d.to_json()
            line = src.line(d.file, d.range.start.line).strip()
            out.append(((j["code"], j["severity"], j["file"], j["message"], line), j))
        return out

    def recheck(self, batch: set[str]) -> None:
        """Re-check the files of a batch; print what changed and the new summary."""
        from ave_lsp.cli import diagnostic_lines, summary_line

        lines: list[str] = []
        for key in sorted(batch):
            disp = self._display_for(key)
            old = self.idents.get(disp)
            if os.path.isfile(key):
                fr, n = self.checker.check(disp)
                self.results[disp] = (fr, n)
                new = self._identities(fr)
                self.idents[disp] = new
                deleted = False
            else:
                if disp not in self.results:
                    continue
                del self.results[disp]
                del self.idents[disp]
                new, deleted = [], True
            added, fixed = _diff(old or [], new)
            if deleted:
                head = f"{disp}: deleted, {len(fixed)} fixed"
            elif added or fixed:
                head = f"{disp}: {len(added)} new, {len(fixed)} fixed"
            else:
                head = f"{disp}: no new or fixed diagnostics"
            lines.append(head)
            for d in added:
                first, *rest = diagnostic_lines(d)
                lines.append("new: " + first)
                lines.extend(rest)
            for d in fixed:
                lines.append("fixed: " + diagnostic_lines(d, details=False)[0])
        if not lines:
            return
        lines.append(summary_line(self.checker.report(self.results)))
        self.stdout.write("".join(line + "\n" for line in lines))
        self.stdout.flush()

    def _err(self, message: str) -> None:
        print(message, file=self.stderr, flush=True)


def _diff(old: list[tuple[tuple, dict]], new: list[tuple[tuple, dict]]
          ) -> tuple[list[dict], list[dict]]:
    """(diagnostics only in ``new``, diagnostics only in ``old``), as multisets."""
    left = Counter(i for i, _ in old)
    added = []
    for ident, j in new:
        if left[ident] > 0:
            left[ident] -= 1
        else:
            added.append(j)
    right = Counter(i for i, _ in new)
    fixed = []
    for ident, j in old:
        if right[ident] > 0:
            right[ident] -= 1
        else:
            fixed.append(j)
    return added, fixed
