"""Latency of the language server, as an editor sees it.

(a) Start-up: time from spawning the server to its ``initialize`` response, for
    ``ave-lsp`` (``python -m ave_lsp``) and, side by side, for a minimal pygls server (a
    few lines, started the same way: ``python FILE``); median of ``--starts`` starts each,
    and the ratio (goal <= 1.25).
(b) didSave -> diagnostics: for each example, after a first check (warm-up), ``--saves``
    saves, each a ``didChange`` with a trivially modified text (a comment line with a
    counter, so no result can be reused) then ``didSave``; the time from the save to the
    ``publishDiagnostics`` of that version. Median and p95 (goal p95 <= 100 ms).
(c) The server's resident memory (``VmRSS`` of ``/proc/<pid>/status``) after the saves,
    and that of its analysis worker processes (``jobs``, see docs/lsp.md "Parallel
    analysis"): their count, the sum of their RSS and of their PSS (shared pages divided
    among the processes sharing them, ``/proc/<pid>/smaps_rollup``).
(e) ``--jobs 1 0``: each example is measured with one server per ``jobs`` setting (sent
    in ``workspace/configuration``), started together; every save goes to each server in
    turn (the same machine load); ``1`` is the serial check in the server's process, ``0``
    one and a half workers per CPU core (ave_core.pool.resolve_jobs).
(d) The reference: ``ave_core.check.check_file`` called directly (in this process, same
    texts, same options) after each save, interleaved (the same machine load), and the server's own overhead (median
    didSave -> diagnostics minus median check_file). The built-in ``<tiny>`` example (a
    kernel with one allocation) shows the fixed cost of a round trip; a broken example
    (examples/broken/flash_attention_wrong_kv_head.py) what a save costs while a kernel is
    being edited and has findings.

Prints a table last; writes JSON (``--out``, default benchmarks/results/lsp_latency.json).

Usage: python benchmarks/lsp_latency.py [--starts 10] [--saves 20] [--jobs 1 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["examples/gemm.py", "examples/flash_attention.py", "examples/moe.py", "<tiny>",
            # a kernel mid-edit: findings and witnesses (z3 at work) on every save
            "examples/broken/flash_attention_wrong_kv_head.py"]
TINY = """\
import ave_core.lang as ave


@ave.kernel(threads=128)
def tiny(X: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((64, 32), ave.bf16)
"""
START_GOAL = 1.25
P95_GOAL_MS = 100.0

MINIMAL_SERVER = """\
from pygls.lsp.server import LanguageServer

server = LanguageServer("minimal", "0")
server.start_io()
"""


class Client:
    """A bare JSON-RPC client over a subprocess' stdin/stdout."""

    def __init__(self, proc: asyncio.subprocess.Process, settings: dict | None = None) -> None:
        self.proc = proc
        self.settings = {"checkOnChange": False, **(settings or {})}
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.publishes: list[tuple[float, dict]] = []
        self.publish_event = asyncio.Event()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def spawn(cls, argv: list[str], cwd: str, settings: dict | None = None) -> "Client":
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, cwd=cwd)
        return cls(proc, settings)

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: dict | None) -> dict:
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return await fut

    def notify(self, method: str, params: dict | None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = await out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(await out.readexactly(length))
            now = time.perf_counter()
            if "id" in msg and "method" not in msg:
                fut = self.pending.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
            elif "id" in msg:                               # a request of the server
                result = None
                if msg["method"] == "workspace/configuration":
                    result = [dict(self.settings) for _ in msg["params"]["items"]]
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif msg.get("method") == "textDocument/publishDiagnostics":
                self.publishes.append((now, msg["params"]))
                self.publish_event.set()

    async def wait_publish(self, uri: str, version: int, timeout: float = 120.0) -> float:
        deadline = time.perf_counter() + timeout
        while True:
            for t, p in self.publishes:
                if p["uri"] == uri and p.get("version") == version:
                    return t
            self.publish_event.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            try:
                await asyncio.wait_for(self.publish_event.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.request("shutdown", None), 10)
            self.notify("exit", None)
            await asyncio.wait_for(self.proc.wait(), 10)
        except (asyncio.TimeoutError, ConnectionError, BrokenPipeError):
            self.proc.kill()
            await self.proc.wait()
        self.reader.cancel()


def init_params(root: Path) -> dict:
    return {"processId": os.getpid(), "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}],
            "capabilities": {"workspace": {"configuration": True},
                             "textDocument": {"synchronization": {"didSave": True},
                                              "publishDiagnostics": {"versionSupport": True}}}}


async def time_start(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    c = await Client.spawn(argv, str(cwd))
    await c.request("initialize", init_params(cwd))
    dt = time.perf_counter() - t0
    c.notify("initialized", {})
    await c.close()
    return dt


def _proc_kib(path: str, key: str) -> int | None:
    """The kiB figure of line ``key`` in a /proc file (None when unreadable)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def vm_rss_kib(pid: int) -> int | None:
    return _proc_kib(f"/proc/{pid}/status", "VmRSS:")


def _children(pid: int) -> list[int]:
    """Descendant process ids of ``pid`` (from /proc)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def pss_kib(pid: int) -> int | None:
    return _proc_kib(f"/proc/{pid}/smaps_rollup", "Pss:")


def worker_memory(pid: int) -> dict:
    """The analysis workers of server ``pid`` (its multiprocessing descendants, the fork
    server and resource tracker included): count, summed RSS and PSS in MiB."""
    pids = _children(pid)
    rss = [vm_rss_kib(p) or 0 for p in pids]
    pss = [pss_kib(p) or 0 for p in pids]
    return {"processes": len(pids), "rss_mib": round(sum(rss) / 1024, 1),
            "pss_mib": round(sum(pss) / 1024, 1)}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


async def save_latency(example: str, saves: int, ws: Path,
                       jobs_list: list[int | None]) -> list[dict]:
    """didSave -> diagnostics of ``example``, one server per ``jobs`` value, all started
    together; each save goes to every server in turn, then the reference check_file runs
    on the same text (so every figure of a save is taken under the same machine load)."""
    if example == "<tiny>":
        src, path = TINY, ws / "tiny.py"
    else:
        src = (ROOT / example).read_text("utf-8")
        path = ws / Path(example).name
    path.write_text(src, "utf-8")
    uri = path.as_uri()
    clients = []
    for jobs in jobs_list:
        c = await Client.spawn([sys.executable, "-m", "ave_lsp"], str(ws),
                               {"jobs": jobs} if jobs is not None else None)
        await c.request("initialize", init_params(ws))
        c.notify("initialized", {})
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": src}})
        await c.wait_publish(uri, 1)                 # warm-up: imports, z3, first check
        clients.append(c)
    reference = reference_checker(path, src, ws)
    lat: list[list[float]] = [[] for _ in clients]
    ref = []
    n_diags: list[int | None] = [None] * len(clients)
    for i in range(saves):
        version = i + 2
        text = src + f"\n# save {i}\n"
        path.write_text(text, "utf-8")
        for j, c in enumerate(clients):
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}]})
            t0 = time.perf_counter()
            c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            t1 = await c.wait_publish(uri, version)
            lat[j].append((t1 - t0) * 1000)
            n_diags[j] = len(next(p for _, p in reversed(c.publishes)
                                  if p["uri"] == uri and p.get("version") == version)
                              ["diagnostics"])
        ref.append(reference(text))                  # the same text, under the same load
    from ave_core.pool import resolve_jobs

    out = []
    for j, (c, jobs) in enumerate(zip(clients, jobs_list)):
        rss = vm_rss_kib(c.proc.pid)
        pss = pss_kib(c.proc.pid)
        workers = worker_memory(c.proc.pid)
        await c.close()
        med = statistics.median(lat[j])
        out.append({
            "example": example, "jobs": jobs,
            "workers": resolve_jobs(jobs) if jobs != 1 else 0, "saves": saves,
            "median_ms": med, "p95_ms": pct(lat[j], 0.95), "max_ms": max(lat[j]),
            "diagnostics": n_diags[j],
            "rss_mib": round(rss / 1024, 1) if rss else None,
            "pss_mib": round(pss / 1024, 1) if pss else None, "worker_memory": workers,
            "samples_ms": lat[j],
            "check_file_median_ms": statistics.median(ref),
            "overhead_ms": med - statistics.median(ref), "check_file_samples_ms": ref})
    return out


def reference_checker(path: Path, src: str, ws: Path):
    """The reference: a function that runs ``check_file`` on a text with the options the
    server uses (the defaults and [tool.ave]) and returns its time in ms (warmed up)."""
    from ave_core.check import check_file
    from ave_lsp.server.settings import Settings

    opts = Settings().config_for(str(path), str(ws))[0].analysis_options()

    def run(text: str) -> float:
        t0 = time.perf_counter()
        check_file(str(path), text, workspace=str(ws), options=opts)
        return (time.perf_counter() - t0) * 1000

    run(src)
    return run


async def main_async(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        minimal = ws / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER)
        starts = {"ave-lsp": [], "minimal pygls": []}
        for _ in range(args.starts):                 # interleaved: same machine load
            starts["ave-lsp"].append(await time_start([sys.executable, "-m", "ave_lsp"], ws))
            starts["minimal pygls"].append(await time_start([sys.executable, str(minimal)], ws))
        med = {k: statistics.median(v) * 1000 for k, v in starts.items()}
        ratio = med["ave-lsp"] / med["minimal pygls"]
        saves = [r for ex in args.examples
                 for r in await save_latency(ex, args.saves, ws, args.jobs)]
    return {"start": {"starts": args.starts, "median_ms": med, "ratio": ratio,
                      "goal_ratio": START_GOAL,
                      "samples_ms": {k: [x * 1000 for x in v] for k, v in starts.items()}},
            "saves": saves, "goal_p95_ms": P95_GOAL_MS,
            "machine": {"cpus": os.cpu_count(), "load": os.getloadavg()},
            "jobs": args.jobs}


def table(res: dict) -> str:
    st = res["start"]
    lines = [f"start to initialize response (median of {st['starts']}):",
             f"  ave-lsp        {st['median_ms']['ave-lsp']:8.1f} ms",
             f"  minimal pygls  {st['median_ms']['minimal pygls']:8.1f} ms",
             f"  ratio          {st['ratio']:8.2f}   (goal <= {st['goal_ratio']})",
             "",
             f"{'didSave -> diagnostics':28} {'jobs':>4} {'saves':>5} {'median ms':>10} "
             f"{'p95 ms':>9} {'max ms':>9} {'diags':>5} {'RSS MiB':>8} {'workers MiB':>16} "
             f"{'check_file':>10} {'overhead':>9}  p95 goal"]
    for s in res["saves"]:
        ok = "ok" if s["p95_ms"] <= res["goal_p95_ms"] else "MISSED"
        jobs = "-" if s["jobs"] is None else str(s["jobs"])
        wm = s["worker_memory"]
        workers = f"{wm['rss_mib']:.0f} ({wm['pss_mib']:.0f} PSS)" if wm["processes"] else "-"
        lines.append(f"{s['example']:28} {jobs:>4} {s['saves']:5d} {s['median_ms']:10.1f} "
                     f"{s['p95_ms']:9.1f} {s['max_ms']:9.1f} {s['diagnostics']:5d} "
                     f"{s['rss_mib']:8.1f} {workers:>16} {s['check_file_median_ms']:10.1f} "
                     f"{s['overhead_ms']:9.1f}  {ok} (<= {res['goal_p95_ms']:.0f})")
    lines.append("check_file: the same saves' texts checked directly, serially (median ms); "
                 "overhead: median didSave -> diagnostics minus it (negative: the "
                 "workers' parallelism)")
    lines.append("jobs: the server's setting (1: serial, in its process; 0: 1.5 workers per "
                 "CPU core); workers MiB: the RSS (PSS) summed over its worker processes "
                 "(and fork server)")
    lines.append(f"machine: {res['machine']['cpus']} CPUs, load average "
                 f"{', '.join(f'{x:.1f}' for x in res['machine']['load'])}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--saves", type=int, default=20)
    p.add_argument("--examples", nargs="+", default=EXAMPLES)
    p.add_argument("--jobs", nargs="+", type=int, default=[1, 0],
                   help="the server's jobs setting(s); each example is measured with each "
                        "in turn (default: 1 0, serial then automatic)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lsp_latency.json"))
    args = p.parse_args()
    res = asyncio.run(main_async(args))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=2)
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
