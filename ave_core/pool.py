"""Worker processes that analyze kernel specializations in parallel.

The tag analysis of one specialization (:func:`ave_core.analysis.analyze`) takes 0.1-1 s;
a file's kernels have several (their ``configs``). :class:`AnalysisPool` runs them in a
warm pool of worker processes (:class:`concurrent.futures.ProcessPoolExecutor`, started
with ``forkserver`` where the platform has it, else ``spawn`` — never a plain ``fork``:
the language server has threads). :func:`ave_core.check.check_file` hands it one *unit*
per specialization and merges the results in the serial order, so the report is the
serial one, byte for byte.

What travels to a worker (a unit, a dict):

* ``"ir"``: the specialization's :class:`~ave_core.compiler.ir.KernelIR`, pickled by the
  checking process after its front end ran (2-4 ms and 0.1-0.6 MB for the examples, much
  less than running the front end again: 30-200 ms), with the analysis options; or, when
  the IR cannot be pickled,
* ``"source"``: the file's path, text and workspace and the specialization's index and
  identity (kernel name, line, ``configs`` index, constexprs); the worker runs the front
  end again and analyzes that specialization. If what it compiles is not the same
  specialization, or a helper file changed on disk in between, it answers ``stale`` and
  the checking process analyzes the specialization itself.

Workers never run user code: they run the front end (which parses, never executes) and
the analysis, as the checking process does. They return plain data (``dict``, ``list``,
``str``, numbers: the verdicts and the diagnostics in their JSON form).

Robustness: a worker that dies (a crash, a signal, the OOM killer) breaks the executor;
the pool is rebuilt and every unit that was lost is run again, alone, once; a unit that
kills its worker a second time is reported as an ``AVE900`` internal error on its
specialization. A check that is abandoned (a newer version of the document) cancels its
units that have not started.

Only the standard library is imported here; the analysis is imported in the workers (and
preloaded in the fork server).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

#: Modules the fork server imports once, so that each worker forked from it starts warm.
#: (A name that does not exist is skipped by :mod:`multiprocessing.forkserver`.)
PRELOAD = ["ave_core.pool", "ave_core.compiler.frontend", "ave_core.analysis",
           "ave_core.analysis.engine", "ave_core.analysis.smt", "z3"]

#: Whether a worker gives memory back to the OS (:func:`release_memory`) after a unit that
#: left its resident size above :func:`retain_mib`.
RELEASE_MEMORY = True

#: Resident memory (MiB) the workers of a pool may keep between units, all together: a
#: worker gives memory back after a unit that left it above ``max(RELEASE_MIN_MIB,
#: RETAIN_TOTAL_MIB / workers)``. Giving it back after every unit would cost the next one
#: 15-25 % (re-faulting the pages, measured on the flash-attention example); keeping
#: everything would let each worker stay at its high-water mark.
RETAIN_TOTAL_MIB = 3072
RELEASE_MIN_MIB = 512


def retain_mib(workers: int) -> float:
    """What one of ``workers`` workers may keep resident between units (MiB)."""
    return max(RELEASE_MIN_MIB, RETAIN_TOTAL_MIB / max(1, workers))


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_jobs(jobs: int | None) -> int:
    """Worker processes for the setting ``jobs``: ``0``/``None`` -> one and a half per CPU
    (``C + C // 2`` for ``C`` CPUs; one on a single CPU), else ``jobs`` itself, at most
    two per CPU (``jobs = 100000`` started workers until the machine ran out of memory).
    ``1`` means: no workers, analyze in the checking process.

    More workers than CPUs: a save checks one file, whose few specializations take
    similar times (flash attention: three of 120-150 ms). With one worker per CPU, three
    units on two CPUs take two rounds (~2 x 150 ms); three workers share the two CPUs and
    all finish after about (3 x 140) / 2 ms. Measured here (2 CPUs,
    ``benchmarks/lsp_latency.py --jobs 0 3``): didSave -> diagnostics median 322 -> 277
    ms, p95 405 -> 321 ms; a kernel with two specializations is unchanged. The cost is
    memory (a worker keeps its high-water mark up to :func:`retain_mib`, ~70 MiB more
    RSS per idle worker), and nothing is gained by more than two per CPU."""
    c = cpu_count()
    if jobs is None or jobs <= 0:
        return c if c == 1 else c + c // 2
    return min(jobs, 2 * c)


#: How often (seconds) a worker checks that the process that started its pool is alive.
PARENT_POLL_S = 0.5


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux: /proc; else kill 0)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def _watch_parent(pid: int) -> None:
    """Worker initializer: exit when process ``pid`` (the language server or ``--check``
    that started the pool) is gone. A worker's parent is the fork server, and it holds
    pipes that keep it from seeing the checking process die: killed (SIGKILL, an editor
    that gives up after ``shutdown``), the server used to leave its workers and fork
    server running for good."""
    def watch() -> None:
        while _alive(pid):
            time.sleep(PARENT_POLL_S)
        os._exit(0)
    threading.Thread(target=watch, name="ave-parent-watch", daemon=True).start()


class CheckCancelled(Exception):
    """The check was abandoned (its ``cancel`` event was set) before it finished."""


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


class AnalysisPool:
    """A lazily started, rebuilt-when-broken pool of ``workers`` analysis processes.

    Args:
        workers: number of worker processes (>= 1).
        target: the function a worker runs on a unit (default :func:`run_unit`); it must
            be importable by name in a fresh process (tests pass their own to simulate
            crashes).

    Thread-safe: the language server's check thread and the command line use it.
    """

    def __init__(self, workers: int, target: Callable[[dict], dict] | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, not {workers}")
        self.workers = workers
        self.target = target or run_unit
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        #: how many times the executor was rebuilt after a worker died
        self.rebuilds = 0
        self._closed = False            # shut down with kill: no executor again

    # ------------------------------------------------------------------ executor

    def executor(self) -> ProcessPoolExecutor:
        """The live executor (started, with its workers warming up, on first use)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the analysis pool was shut down")
            if self._executor is None:
                # (no max_tasks_per_child: up to Python 3.13/3.14 a worker that reaches
                # it can deadlock the executor, CPython gh-115634; the workers release
                # their memory after each unit instead, release_memory)
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=_context(),
                    initializer=_watch_parent, initargs=(os.getpid(),))
                for _ in range(self.workers):    # spawn them all now, importing the analysis
                    self._executor.submit(run_unit, {"kind": "warm"})
            return self._executor

    def warm(self) -> None:
        """Start the workers now (they import the front end and the analysis) so that
        the first units do not wait for them."""
        self.executor()

    def rebuild(self, broken: ProcessPoolExecutor) -> None:
        """Replace ``broken`` (an executor a worker died in) by a fresh one, unless that
        was done already."""
        with self._lock:
            if self._executor is broken:
                self._executor = None
                self.rebuilds += 1
            else:
                return
        broken.shutdown(wait=False, cancel_futures=True)

    def submit(self, unit: dict) -> tuple[Future, ProcessPoolExecutor]:
        """Submit one unit; returns its future and the executor that runs it."""
        for _ in range(2):
            ex = self.executor()
            try:
                return ex.submit(self.target, unit), ex
            except BrokenProcessPool:     # broke since: rebuild once and submit again
                self.rebuild(ex)
            except RuntimeError:          # shut down by another thread's rebuild
                pass
        ex = self.executor()
        return ex.submit(self.target, unit), ex

    def shutdown(self, wait: bool = False, kill: bool = False) -> None:
        """Stop the workers (pending units are cancelled). ``wait``: until they have
        exited -- a process about to exit (the headless check) waits, or the executor's
        exit hook may write to a pipe its manager thread is closing ("Exception ignored
        ... Bad file descriptor" on stderr, now and then). ``kill``: the process is
        about to exit while units run (the server got ``exit`` mid-check): the workers
        are terminated, not waited for, the executor is shut down (its manager thread
        joined, so that its queues' semaphores can be released) and no new one starts
        (a check thread that saw its worker die would start one)."""
        with self._lock:
            ex, self._executor = self._executor, None
            self._closed = self._closed or kill
        if ex is None:
            return
        if kill:
            for proc in list((getattr(ex, "_processes", None) or {}).values()):
                try:
                    proc.terminate()
                except (OSError, ValueError, AttributeError):
                    pass            # (exited already)
        ex.shutdown(wait=wait or kill, cancel_futures=True)

    # ------------------------------------------------------------------ running units

    def start(self, units: list[dict]) -> "Batch":
        """Submit ``units``; :meth:`Batch.results` collects them in order."""
        return Batch(self, units)


#: What :meth:`Batch.results` gives for a unit whose worker died twice.
DIED = {"kind": "died"}


class Batch:
    """Units submitted together (one file's specializations)."""

    def __init__(self, pool: AnalysisPool, units: list[dict]) -> None:
        self.pool = pool
        keep = retain_mib(pool.workers)
        self.units = [{**u, "retain_mib": keep} for u in units]
        self.submitted = [pool.submit(u) for u in self.units]

    def cancel(self) -> None:
        """Cancel the units that have not started."""
        for fut, _ in self.submitted:
            fut.cancel()

    def _wait(self, fut: Future, ex: Any, cancel: threading.Event | None, poll_s: float,
              cancel_all: bool) -> dict | None:
        """A unit's result; None when its worker died (the pool is rebuilt). Polls
        ``cancel`` while waiting (raises :class:`CheckCancelled`, cancelling the batch's
        units that have not started, or this one)."""
        from concurrent.futures import TimeoutError as FutureTimeout

        while True:
            if cancel is not None and cancel.is_set():
                if cancel_all:
                    self.cancel()
                else:
                    fut.cancel()
                raise CheckCancelled()
            try:
                return fut.result(timeout=poll_s if cancel is not None else None)
            except FutureTimeout:
                continue
            except BrokenProcessPool:
                self.pool.rebuild(ex)
                return None
            except Exception as e:  # noqa: BLE001 - e.g. a result that does not pickle
                return {"kind": "error", "error": f"{type(e).__name__}: {e}"}

    def results(self, cancel: threading.Event | None = None,
                poll_s: float = 0.05) -> list[dict]:
        """One result per unit, in order: what the target returned, ``{"kind":
        "error", "error": text}`` when it raised, or :data:`DIED` when the unit's
        worker died twice. Raises :class:`CheckCancelled` when ``cancel`` is set
        first (the units that have not started are cancelled)."""
        out: list[dict | None] = [None] * len(self.units)
        lost: list[int] = []
        for i, (fut, ex) in enumerate(self.submitted):
            out[i] = self._wait(fut, ex, cancel, poll_s, cancel_all=True)
            if out[i] is None:
                lost.append(i)
        for i in lost:                  # again, one at a time: who killed its worker
            fut, ex = self.pool.submit(self.units[i])
            r = self._wait(fut, ex, cancel, poll_s, cancel_all=False)
            out[i] = dict(DIED) if r is None else r
        return out  # type: ignore[return-value]


# ----------------------------------------------------------------------------- units

def ir_unit(kernel: Any, options: Any) -> dict | None:
    """The ``"ir"`` unit of a specialization, or None when its IR does not pickle."""
    from ave_core.compiler import ir as ir_mod

    import dataclasses

    try:
        # (without the name bindings: hover's, not the analysis')
        if getattr(kernel, "bindings", None):
            kernel = dataclasses.replace(kernel, bindings=[])
        data = pickle.dumps(kernel, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - anything unpicklable: the "source" unit instead
        return None
    # The worker's SSA value ids continue after the checking process' (values the
    # analysis creates never collide with the IR's).
    next_id = next(ir_mod._ids) if hasattr(ir_mod, "_ids") else 0
    return {"kind": "ir", "ir": data, "next_id": next_id, "options": _options_dict(options)}


def source_unit(path: str, text: str, workspace: str | None, index: int, kernel: Any,
                options: Any, stamps: dict[str, Any]) -> dict:
    """The ``"source"`` unit: the worker compiles ``text`` again and analyzes its
    ``index``-th specialization (checked against ``kernel``'s identity and the helper
    files' ``stamps``)."""
    return {"kind": "source", "path": path, "text": text, "workspace": workspace,
            "index": index, "identity": identity(kernel), "stamps": stamps,
            "options": _options_dict(options)}


def identity(kernel: Any) -> list:
    """What tells two compilations' specializations apart (plain data)."""
    from ave_core.check import json_scalar

    return [str(kernel.name), int(kernel.line), kernel.config_index,
            sorted((str(n), repr(json_scalar(v))) for n, v in kernel.constexprs.items())]


def file_stamps(files: Any) -> dict[str, Any]:
    """``(mtime_ns, size)`` of each file on disk (None when it cannot be read)."""
    out: dict[str, Any] = {}
    for f in files or ():
        f = str(f)
        if f.startswith("<"):
            continue
        try:
            st = os.stat(f)
            out[f] = [st.st_mtime_ns, st.st_size]
        except OSError:
            out[f] = None
    return out


def _options_dict(options: Any) -> dict | None:
    if options is None:
        return None
    import dataclasses

    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}


def run_unit(unit: dict) -> dict:
    """Run one unit in a worker (the default target of :class:`AnalysisPool`).

    Returns ``{"kind": "done", **summary}`` (:func:`ave_core.check.summarize_plain`),
    ``{"kind": "stale"}`` (a ``"source"`` unit whose specialization is not the one the
    checking process compiled), or ``{}`` for a ``"warm"`` unit.
    """
    kind = unit["kind"]
    if kind == "warm":
        import ave_core.analysis  # noqa: F401 - warm up: the imports the units need
        import ave_core.compiler.frontend  # noqa: F401
        # what the imports made lives as long as the worker: out of the collector's way
        # (a full collection then walks only what analyses leave)
        gc.collect()
        gc.freeze()
        return {}
    from ave_core.analysis import AnalysisOptions
    from ave_core.check import analyze_plain

    opts = unit.get("options")
    options = AnalysisOptions(**opts) if opts is not None else None
    if kind == "ir":
        from ave_core.compiler import ir as ir_mod
        import itertools

        if hasattr(ir_mod, "_ids"):
            ir_mod._ids = itertools.count(max(unit.get("next_id", 0),
                                              next(ir_mod._ids)))
        kernel = pickle.loads(unit["ir"])
    elif kind == "source":
        kernel = _recompile(unit)
        if kernel is None:
            return {"kind": "stale"}
    else:
        raise ValueError(f"unknown unit kind {kind!r}")
    t0 = time.perf_counter()
    out = analyze_plain(kernel, options)
    del kernel
    # Once the result has been sent, while the worker waits for the next unit: give memory
    # back, or at least collect the analysis' garbage (its unrolled IR is cyclic: left to
    # the collector's own schedule, a full collection lands in a later analysis, 15-20 ms
    # of the flash-attention example's, measured)
    release = RELEASE_MEMORY and (resident_mib() or 0) > unit.get("retain_mib",
                                                                  RELEASE_MIN_MIB)
    collect_soon(release_memory if release else gc.collect)
    return {"kind": "done", **out, "elapsed_ms": (time.perf_counter() - t0) * 1000,
            "pid": os.getpid()}


def collect_soon(what: Callable[[], Any] = gc.collect, delay_s: float = 0.02) -> None:
    """Run ``what`` (a garbage collection) on a timer thread ``delay_s`` from now: after a
    check's result has gone out, while the process waits for the next one, rather than
    in the middle of the next check (the analysis' unrolled IR is cyclic; a full
    collection of what a flash-attention analysis leaves takes 15-20 ms here)."""
    try:
        t = threading.Timer(delay_s, what)
        t.daemon = True
        t.start()
    except RuntimeError:        # no thread now (a limit, the interpreter shutting down)
        pass


def resident_mib() -> float | None:
    """This process' resident size in MiB (Linux ``/proc/self/statm``), else None."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def release_memory() -> None:
    """Give the memory an analysis freed back to the OS: a collection, then glibc's
    ``malloc_trim`` (without it a worker's resident size stays at the high-water mark of
    the analyses it ran — about 0.9 GB after the examples, against 70 MB after a trim;
    it takes 4-20 ms). Only the collection where there is no glibc."""
    import gc

    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


_trim_fn: Any = False


def _malloc_trim() -> Any:
    global _trim_fn
    if _trim_fn is False:
        _trim_fn = None
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _trim_fn = libc.malloc_trim
        except (OSError, AttributeError):
            pass
    return _trim_fn


def _recompile(unit: dict) -> Any:
    from ave_core.compiler.frontend import compile_source
    from ave_core.compiler.ir import KernelIR

    result = compile_source(unit["text"], unit["path"], workspace=unit["workspace"])
    kernels = list(result.kernels)
    i = unit["index"]
    if i >= len(kernels) or not isinstance(kernels[i], KernelIR) or \
            identity(kernels[i]) != unit["identity"]:
        return None
    if file_stamps(unit["stamps"]) != unit["stamps"]:
        return None
    return kernels[i]


class SharedPool:
    """The one :class:`AnalysisPool` of a long-lived process (the language server, a
    ``--check`` run), sized by the ``jobs`` setting of each check: :meth:`get` starts it
    on first need and replaces it when ``jobs`` asks for another size."""

    def __init__(self, target: Callable[[dict], dict] | None = None) -> None:
        self._lock = threading.Lock()
        self._pool: AnalysisPool | None = None
        self._target = target

    def get(self, jobs: int | None) -> AnalysisPool | None:
        """The pool for ``jobs`` (see :func:`resolve_jobs`), its workers started; None
        when that means one process (analyze in the checking process)."""
        n = resolve_jobs(jobs)
        if n <= 1:
            return None
        old = None
        with self._lock:
            if self._pool is None or self._pool.workers != n:
                old, self._pool = self._pool, AnalysisPool(n, self._target)
            pool = self._pool
        if old is not None:
            old.shutdown()
        pool.warm()
        return pool

    @property
    def pool(self) -> AnalysisPool | None:
        """The pool, if one was started."""
        return self._pool

    def shutdown(self, kill: bool = False) -> None:
        """Stop the pool's workers (see :meth:`AnalysisPool.shutdown`)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(kill=kill)
