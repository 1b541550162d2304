"""Parallel analysis of specializations (``jobs``, :mod:`ave_core.pool`) against the serial
check: the same report, byte for byte, and robustness when a worker dies.

* The whole ``examples/`` tree (the correct examples, ``examples/broken/`` and
  ``examples/mi300x/``): every file's :class:`FileReport` JSON (kernels, statuses,
  assertions, diagnostics with their notes — "also in the specialization ..." —,
  witnesses and fixes) and the files' report are identical with a pool of 2 workers and
  serially (``pool=None``, the code path of ``jobs = 1``).
* The same through ``ave-lsp --check``'s own pipeline (suppressions, baseline, report) in
  its three machine formats, and with the fallback where the worker compiles the source
  again instead of receiving the pickled IR (also when what it compiles is not the same
  specialization: then the checking process analyzes it).
* A worker SIGKILLed on one specialization, every time: that specialization is ``unknown``
  with an ``AVE900`` on the kernel's name, the other one is reported exactly as serially,
  the pool is rebuilt and the next check is the serial one again. Killed only once: the
  retry gives the serial report. A unit that raises: ``AVE900`` on its specialization.
* A check whose ``cancel`` event is set returns (``CheckCancelled``) while its unit is
  still running.

Everything runs on the CPU; nothing asserts a time.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from ave_core import check as check_mod
from ave_core import pool as pool_mod
from ave_core.check import build_report, check_file, check_files
from ave_core.pool import AnalysisPool, CheckCancelled, SharedPool, resolve_jobs

import pool_targets

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GEMM = "examples/gemm.py"          # two specializations (configs[0], configs[1])
BROKEN = "examples/broken/gemm_missing_barrier.py"   # violated in both: a shared finding


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def dump(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def file_json(fr) -> str:
    """Everything a FileReport says, as JSON."""
    return dump({**fr.to_json(), "diagnostics": [d.to_json() for d in fr.diagnostics],
                 "files": fr.files})


@pytest.fixture(scope="module")
def pool():
    p = AnalysisPool(2)
    yield p
    p.shutdown()


@pytest.fixture(scope="module")
def serial_reports():
    os.chdir(ROOT)
    return {fr.path: fr for fr in check_files(["examples"], workspace=str(ROOT))}


def test_examples_tree_identical_serial_and_parallel(pool, serial_reports):
    os.chdir(ROOT)
    parallel = check_files(["examples"], workspace=str(ROOT), pool=pool)
    paths = [fr.path for fr in parallel]
    assert paths == list(serial_reports)
    # the tree has what the test is about: broken and mi300x files, several
    # specializations per file, and findings shared by specializations
    assert any("/broken/" in p for p in paths) and any("/mi300x/" in p for p in paths)
    assert sum(fr.specialization_count for fr in parallel) > len(parallel)
    notes = [n for fr in parallel for d in fr.diagnostics for n in d.notes]
    assert any(n.startswith("also in the specialization") for n in notes)
    for fr in parallel:
        assert file_json(fr) == file_json(serial_reports[fr.path]), fr.path
    assert dump(build_report(parallel)) == dump(build_report(serial_reports.values()))
    assert pool.rebuilds == 0


def _cli_outputs(pool, paths):
    from ave_lsp import cli
    from ave_core.check import iter_python_files

    checker = cli.Checker(workspace=None, analyze=True, options=None, overrides={},
                          pool=pool)
    results = checker.check_all(iter_python_files(paths))
    report = checker.report(results)
    return {fmt: cli.FORMATTERS[fmt](report) for fmt in ("json", "sarif", "text")}


def test_cli_formats_identical_serial_and_parallel(pool):
    paths = [BROKEN, "examples/mi300x", "examples/broken/moe_expert_wrong_program_id.py"]
    serial = _cli_outputs(None, paths)
    parallel = _cli_outputs(pool, paths)
    assert json.loads(serial["json"])["summary"]["errors"] > 0
    for fmt in serial:
        assert parallel[fmt] == serial[fmt], fmt


def test_recompiling_worker_gives_the_same_report(pool, serial_reports, monkeypatch):
    monkeypatch.setattr(pool_mod, "ir_unit", lambda kernel, options: None)  # "does not pickle"
    for path in (GEMM, BROKEN):
        key = next(p for p in serial_reports if os.path.samefile(p, path))
        fr = check_file(key, workspace=str(ROOT), pool=pool)
        assert file_json(fr) == file_json(serial_reports[key]), path


def test_stale_recompilation_is_analyzed_by_the_checking_process(pool, serial_reports,
                                                                 monkeypatch):
    monkeypatch.setattr(pool_mod, "ir_unit", lambda kernel, options: None)
    real = pool_mod.source_unit

    def wrong_identity(*args, **kwargs):
        unit = real(*args, **kwargs)
        unit["identity"] = ["not_this_kernel", *unit["identity"][1:]]
        return unit

    monkeypatch.setattr(pool_mod, "source_unit", wrong_identity)
    text = (ROOT / GEMM).read_text("utf-8")
    assert pool_mod.run_unit(wrong_identity(GEMM, text, str(ROOT), 0, _first_kernel(),
                                            None, {})) == {"kind": "stale"}
    key = next(p for p in serial_reports if os.path.samefile(p, BROKEN))
    fr = check_file(key, workspace=str(ROOT), pool=pool)
    assert file_json(fr) == file_json(serial_reports[key])


def _first_kernel():
    from ave_core.compiler.frontend import compile_source

    return compile_source((ROOT / GEMM).read_text("utf-8"), GEMM,
                          workspace=str(ROOT)).kernels[0]


def _spec(fr, config_index):
    return fr.kernels[0]["specializations"][config_index]


def test_worker_killed_every_time_is_an_internal_error_on_that_specialization(
        serial_reports):
    key = next(p for p in serial_reports if os.path.samefile(p, BROKEN))
    serial = serial_reports[key]
    p = AnalysisPool(2, target=functools.partial(pool_targets.kill_on_config, 1))
    try:
        fr = check_file(key, workspace=str(ROOT), pool=p)
        assert p.rebuilds >= 2                    # the batch, then the retry alone
    finally:
        p.shutdown()
    errors = [d for d in fr.diagnostics if d.code == "AVE900"]
    assert len(errors) == 1
    err = errors[0]
    assert "configs[1]" in err.message and "worker process" in err.message
    assert err.range == _kernel_range(key) and err.file == key
    assert _spec(fr, 1)["status"] == "unknown" and "assertions" not in _spec(fr, 1)
    assert _spec(fr, 0) == _spec(serial, 0)        # the other specialization: as serially
    # configs[0]'s findings are all there, with configs[0]'s note and no "also in"
    want = [d for d in serial.diagnostics
            if any(n.startswith("in the specialization configs[0]") for n in d.notes)]
    got = [d for d in fr.diagnostics if d.code != "AVE900"]
    assert want and len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.code, g.range, g.message, g.witness) == (w.code, w.range, w.message,
                                                           w.witness)
        assert [n for n in w.notes if not n.startswith("also in")] == g.notes


def _kernel_range(path):
    from ave_core.compiler.frontend import compile_source

    return compile_source(Path(path).read_text("utf-8"), path,
                          workspace=str(ROOT)).kernels[0].range


def test_worker_killed_once_is_retried_and_the_pool_rebuilt(serial_reports, tmp_path):
    key = next(p for p in serial_reports if os.path.samefile(p, BROKEN))
    marker = tmp_path / "killed"
    p = AnalysisPool(2, target=functools.partial(pool_targets.kill_once_on_config, 0,
                                                 str(marker)))
    try:
        fr = check_file(key, workspace=str(ROOT), pool=p)
        assert marker.exists() and p.rebuilds == 1
        assert file_json(fr) == file_json(serial_reports[key])
        again = check_file(key, workspace=str(ROOT), pool=p)   # the rebuilt pool works
        assert file_json(again) == file_json(serial_reports[key]) and p.rebuilds == 1
    finally:
        p.shutdown()


def test_unit_that_raises_is_an_internal_error(serial_reports):
    key = next(p for p in serial_reports if os.path.samefile(p, GEMM))
    p = AnalysisPool(2, target=functools.partial(pool_targets.raise_on_config, 0))
    try:
        fr = check_file(key, workspace=str(ROOT), pool=p)
    finally:
        p.shutdown()
    assert [d.code for d in fr.diagnostics] == ["AVE900"]
    assert "injected failure" in fr.diagnostics[0].message
    assert _spec(fr, 0)["status"] == "unknown"
    assert _spec(fr, 1) == _spec(serial_reports[key], 1)
    assert p.rebuilds == 0


def test_cancelled_check_returns_while_its_unit_runs(tmp_path, serial_reports):
    release = tmp_path / "release"
    p = AnalysisPool(1, target=functools.partial(pool_targets.wait_for_file, str(release)))
    try:
        pending = check_mod.start_check(GEMM, workspace=str(ROOT), pool=p)
        assert pending.units == 2
        cancel = threading.Event()
        cancel.set()
        with pytest.raises(CheckCancelled):
            pending.result(cancel)
        release.touch()                              # the unit that ran finishes
        key = next(k for k in serial_reports if os.path.samefile(k, GEMM))
        fr = check_file(key, workspace=str(ROOT), pool=p)
        assert file_json(fr) == file_json(serial_reports[key])
    finally:
        release.touch()
        p.shutdown()


def test_one_specialization_stays_in_the_checking_process(tmp_path):
    src = (ROOT / "examples" / "broken" / "gemm_missing_barrier.py").read_text("utf-8")
    # a file whose kernel has no configs: one specialization
    import re

    one = re.sub(r"configs=\[.*?\]\s*,?", "", src, flags=re.S)
    f = tmp_path / "one.py"
    f.write_text(one, "utf-8")
    p = AnalysisPool(2, target=functools.partial(pool_targets.raise_on_config, None))
    try:
        pending = check_mod.start_check(str(f), workspace=str(ROOT), pool=p)
        assert pending.units == 0                    # nothing was sent to a worker
        fr = pending.result()
        assert fr.specialization_count == 1
        assert file_json(fr) == file_json(check_file(str(f), workspace=str(ROOT)))
    finally:
        p.shutdown()


def test_jobs_resolution_and_shared_pool(monkeypatch):
    monkeypatch.setattr(pool_mod, "cpu_count", lambda: 4)
    assert resolve_jobs(1) == 1 and resolve_jobs(3) == 3
    # automatic: one and a half per CPU (a file's few specializations share the CPUs
    # rather than wait for a second round)
    assert resolve_jobs(0) == resolve_jobs(None) == 6
    # at most two workers per CPU (jobs = 100000 started workers until memory ran out)
    assert resolve_jobs(5) == 5 and resolve_jobs(8) == resolve_jobs(100000) == 8
    monkeypatch.setattr(pool_mod, "cpu_count", lambda: 1)
    assert resolve_jobs(0) == 1 and resolve_jobs(2) == 2 and resolve_jobs(3) == 2
    monkeypatch.setattr(pool_mod, "cpu_count", lambda: 2)
    assert resolve_jobs(0) == 3
    # the memory workers keep between units: a shared budget, a floor per worker
    assert pool_mod.retain_mib(2) == pool_mod.RETAIN_TOTAL_MIB / 2
    assert pool_mod.retain_mib(10**6) == pool_mod.RELEASE_MIN_MIB
    shared = SharedPool()
    try:
        assert shared.get(1) is None                 # serial: no pool at all
        two = shared.get(2)
        assert two is not None and two.workers == 2 and shared.get(2) is two
        three = shared.get(3)
        assert three is not two and three.workers == 3
        assert shared.get(10**5).workers == 4
    finally:
        shared.shutdown()


def test_workers_exit_when_the_process_that_started_them_is_killed(tmp_path):
    """A checking process killed with SIGKILL (no cleanup at all) must not leave its pool
    behind: the workers watch it and exit (found by a review helper: the fork server and
    the workers stayed up for good)."""
    import signal
    import subprocess

    script = tmp_path / "owner.py"
    script.write_text(
        "import os, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from ave_core.pool import AnalysisPool\n"
        "if __name__ == '__main__':\n"
        "    ex = AnalysisPool(2).executor()\n"
        "    futs = [ex.submit(os.getpid) for _ in range(8)]\n"
        "    print(' '.join(sorted({str(f.result()) for f in futs})), flush=True)\n"
        "    time.sleep(60)\n", "utf-8")
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in owner.stdout.readline().split()]
        assert pids and all(pool_mod._alive(p) for p in pids)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        deadline = time.time() + 10
        while time.time() < deadline and any(pool_mod._alive(p) for p in pids):
            time.sleep(0.1)
        assert not any(pool_mod._alive(p) for p in pids)
    finally:
        if owner.poll() is None:
            owner.kill()


class _Recorder:
    def __init__(self) -> None:
        self.updates: list[tuple[int, str | None]] = []

    def update(self, done: int, current: str | None) -> None:
        self.updates.append((done, current))


@pytest.mark.parametrize("with_pool", [False, True])
def test_cli_progress_names_every_file_and_ends_once(pool, tmp_path, with_pool):
    from ave_lsp import cli

    plain, plain2 = tmp_path / "plain.py", tmp_path / "plain2.py"
    plain.write_text("x = 1\n", "utf-8")
    plain2.write_text("y = 2\n", "utf-8")
    files = [str(plain), GEMM, "examples/mi300x/gemm_mfma.py", str(plain2)]
    rec = _Recorder()
    checker = cli.Checker(workspace=None, analyze=True, options=None, overrides={},
                          pool=pool if with_pool else None)
    out = checker.check_all(files, rec)
    assert list(out) == files                               # in order
    assert rec.updates[-1] == (len(files), None)
    assert [c for _, c in rec.updates].count(None) == 1     # the display ends once, at the end
    assert {c for _, c in rec.updates[:-1]} >= {GEMM, "examples/mi300x/gemm_mfma.py"}
    done = [d for d, _ in rec.updates]
    assert done == sorted(done)


def test_a_kernel_without_constexprs_says_so(tmp_path):
    # (a fresh-user run: "in the specialization defaults = " with nothing after it)
    f = tmp_path / "t.py"
    f.write_text("import ave_core.lang as ave\n\n@ave.kernel(threads=128)\n"
                 "def t(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):\n"
                 "    s = ave.alloc((32, 32), ave.f32, space=\"shared\")\n"
                 "    ave.copy(X[0:32, 0:32], s, vector_bytes=16)\n"
                 "    ave.copy(ave.transpose(s), Y[0:32, 0:32], vector_bytes=4)\n")
    res = check_mod.check_file(str(f))
    (d,) = [d for d in res.diagnostics if d.code == "AVE207"]
    assert "in the specialization defaults (no constexprs)" in d.notes


def test_exit_mid_check_kills_the_workers_and_leaks_no_semaphores(tmp_path):
    """The server's exit while a unit runs (``_exit_if_busy``: ``os._exit`` after
    ``shutdown(kill=True)``): the workers are terminated, no new executor starts (a check
    thread that saw its worker die would start one), and the resource tracker finds no
    leaked semaphore of the executor's queues -- it warned "There appear to be 5 leaked
    semaphore objects" on every exit mid-check (a closing-note item)."""
    import subprocess

    gate = tmp_path / "never"
    script = tmp_path / "owner.py"
    script.write_text(
        "import functools, os, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'tests' / 'lsp')!r})\n"
        "import pool_targets\n"
        "from ave_core.pool import AnalysisPool, SharedPool\n"
        "from ave_lsp import server as server_pkg\n"
        "class Server:\n"
        "    def __init__(self):\n"
        "        self.pools = SharedPool(functools.partial(pool_targets.wait_for_file, "
        f"{str(gate)!r}))\n"
        "    def busy(self):\n"
        "        return True\n"
        "    def shutdown(self, kill=False):\n"
        "        self.pools.shutdown(kill=kill)\n"
        "if __name__ == '__main__':\n"
        "    s = Server()\n"
        "    pool = s.pools.get(2)\n"
        "    futs = [pool.submit({'kind': 'source'})[0] for _ in range(3)]\n"
        "    time.sleep(0.5)\n"
        "    import multiprocessing\n"
        "    pids = sorted(p.pid for p in multiprocessing.active_children())\n"
        "    print(' '.join(map(str, pids)), flush=True)\n"
        "    server_pkg._exit_if_busy(s, 3)\n"
        "    print('not reached', flush=True)\n", "utf-8")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 3, proc.stderr
    pids = [int(x) for x in proc.stdout.split()[:2]]
    assert len(pids) == 2 and "not reached" not in proc.stdout
    deadline = time.time() + 10
    while time.time() < deadline and any(pool_mod._alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(pool_mod._alive(p) for p in pids)
    time.sleep(1.0)        # (the resource tracker reports when its last user is gone)
    assert "leaked" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_pool_shut_down_with_kill_starts_no_executor_again():
    pool = AnalysisPool(2)
    try:
        pool.warm()
    finally:
        pool.shutdown(kill=True)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.executor()
    with pytest.raises(RuntimeError):
        pool.submit({"kind": "warm"})
