"""Latency of the checker: front end, unrolling + propagation, solving, total.

For each example, every specialization in its ``configs`` (what ``ave-lsp --check`` does;
the figure for the first specialization alone is reported too): a cold process (a fresh
interpreter imports Ave and checks the file once; median of ``--cold`` processes) and warm
runs (median and p95 over ``--runs`` runs, no caches kept between runs: each run recompiles
from text and re-analyses). Then how time grows with the workgroup size (128 -> 256 -> 512
threads, a synthetic pipelined GEMM with the same per-thread work) and with the trip-count
bound (2 -> 16). Then the broken examples (examples/broken/: what the checker meets while
a kernel is being edited -- findings, witnesses, the solver at work), every specialization,
``--runs // 4`` warm runs each. Phases: ``frontend`` (parse + build + checks of every
specialization), ``propagate`` (unrolling and the tag engine, z3 time excluded), ``solve``
(time in z3: the engine's queries, the bounds search, accumulation checks, the canonical
witness models).

``--reference DIR``: a checkout of other Ave code (e.g. ``git worktree add /tmp/ref main``),
measured in the same run, interleaved block by block with this one (each tree in its own
worker processes), so that a machine shared with other work affects both alike; the
table then shows the ratio reference / this.

Targets (issue "Tag analysis", a 2-core machine): flash attention <= 40 ms median warm,
GEMM <= 20 ms.

Usage: python benchmarks/analysis_latency.py [--runs 20] [--cold 3] [--reference DIR]
       [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXAMPLES = ["examples/gemm.py", "examples/flash_attention.py", "examples/moe.py"]
#: the broken examples: what the checker meets while a kernel is being edited (findings,
#: witnesses: the solver at work), every specialization, ``--runs // 4`` runs each
BROKEN = sorted(os.path.join("examples", "broken", f) for f in os.listdir(
    os.path.join(ROOT, "examples", "broken")) if f.endswith(".py"))
TARGETS = {"examples/gemm.py": 20.0, "examples/flash_attention.py": 40.0}
THREADS = ((128, 64, 2), (256, 128, 4), (512, 256, 8))
TRIP_BOUNDS = (2, 4, 8, 16)
PHASES = ("frontend_ms", "propagate_ms", "solve_ms", "total_ms", "first_config_ms")

SCALING = '''
import ave_core.lang as ave

@ave.kernel(threads={threads})
def gemm(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
         BK: ave.constexpr = 32, STAGES: ave.constexpr = 3):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    BM = {bm}
    BN = 128
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=({wm}, 2),
                          tile=(BM, BN, BK))
    sA = ave.alloc((STAGES, BM, BK), ave.bf16,
                   layout=ave.swizzled(ave.swizzle(2, 3, 3), ave.row_major((STAGES, BM, BK))))
    sB = ave.alloc((STAGES, BK, BN), ave.bf16,
                   layout=ave.swizzled(ave.swizzle(3, 3, 4), ave.row_major((STAGES, BK, BN))))
    acc = ave.zeros((BM, BN), ave.f32, tiled.c)
    m0 = ave.program_id(0) * BM
    n0 = ave.program_id(1) * BN
    for kt in ave.static_range(STAGES - 1):
        ave.copy_async(A[m0:m0 + BM, kt * BK:kt * BK + BK], sA[kt], vector_bytes=16)
        ave.copy_async(B[kt * BK:kt * BK + BK, n0:n0 + BN], sB[kt], vector_bytes=16)
        ave.commit_async()
    for kt in ave.range(0, K // BK):
        ave.wait_async(STAGES - 2)
        ave.barrier()
        f = (kt + STAGES - 1) % STAGES
        ave.copy_async(A[m0:m0 + BM, (kt + STAGES - 1) * BK:(kt + STAGES) * BK], sA[f],
                       vector_bytes=16)
        ave.copy_async(B[(kt + STAGES - 1) * BK:(kt + STAGES) * BK, n0:n0 + BN], sB[f],
                       vector_bytes=16)
        ave.commit_async()
        a = ave.ldmatrix(sA[kt % STAGES], tiled.a)
        b = ave.ldmatrix(sB[kt % STAGES], tiled.b)
        acc = ave.mma(a, b, acc, tiled)
    ave.store(C[m0:m0 + BM, n0:n0 + BN], acc)
'''



def one_run(text: str, path: str, options=None, first_only: bool = False,
            broken: bool = False) -> dict:
    """Check one file's text from scratch: front end, then every specialization (a
    correct example must prove every assertion; a ``broken`` one is timed as it is)."""
    from ave_core.analysis import analyze
    from ave_core.compiler.frontend import compile_source
    t0 = time.perf_counter()
    res = compile_source(text, path)
    t1 = time.perf_counter()
    prop = solve = 0.0
    first = None
    for i, k in enumerate(res.kernels[:1] if first_only else res.kernels):
        ta = time.perf_counter()
        a = analyze(k, options)
        if i == 0:
            first = time.perf_counter() - ta
        bad = [r.status for r in a.assertions if r.status != "proved"]
        assert broken or not bad, (path, k.constexprs, bad)
        prop += a.timings["unroll_s"] + a.timings["propagate_s"]
        solve += a.timings.get("solve_s", 0.0)          # older trees: inside propagate
    t2 = time.perf_counter()
    return {"frontend_ms": (t1 - t0) * 1e3, "propagate_ms": prop * 1e3,
            "solve_ms": solve * 1e3, "total_ms": (t2 - t0) * 1e3,
            "first_config_ms": ((t1 - t0) + first) * 1e3, "configs": len(res.kernels)}


def stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    return {"median": statistics.median(xs), "p95": p95, "runs": len(xs)}


def worker(spec: dict) -> dict:
    """Runs in a child process whose sys.path starts with the measured tree."""
    from ave_core.analysis import AnalysisOptions
    out: dict = {}
    for job in spec["jobs"]:
        kind, name = job["kind"], job["name"]
        broken = kind == "broken"
        if kind in ("example", "broken"):
            text = open(os.path.join(spec["root"], name), encoding="utf-8").read()
            path, opts, first_only = name, None, False
        else:
            text = SCALING.format(threads=job["threads"], bm=job["bm"], wm=job["wm"])
            path, first_only = "scaling.py", True
            opts = AnalysisOptions(trip_bound=job.get("trip_bound"))
        one_run(text, path, opts, first_only, broken)           # warm-up
        out[job["id"]] = [one_run(text, path, opts, first_only, broken)
                          for _ in range(job["runs"])]
    return out


def _spawn(tree: str, spec: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]);"
            "import analysis_latency as b; print(json.dumps(b.worker(json.loads(sys.argv[3]))))")
    r = subprocess.run([sys.executable, "-c", code, tree, os.path.join(ROOT, "benchmarks"),
                        json.dumps({**spec, "root": tree})], capture_output=True, text=True,
                       cwd=tree, env=env)
    if r.returncode:
        raise RuntimeError(f"worker in {tree} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def cold(tree: str, path: str) -> dict:
    """A fresh interpreter: import Ave, check the file (all specializations) once."""
    code = ("import time; t=time.perf_counter(); from ave_core.check import check_file; "
            "import ave_core.compiler.frontend, ave_core.analysis, ave_core.analysis.engine, z3; "
            "t1=time.perf_counter(); "
            f"check_file({path!r}); t2=time.perf_counter(); print((t1-t)*1e3, (t2-t)*1e3)")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tree, env=dict(os.environ, PYTHONPATH=tree), check=True)
    wall = (time.perf_counter() - t0) * 1e3
    imp, tot = (float(x) for x in out.stdout.strip().splitlines()[-1].split())
    return {"process_ms": wall, "import_ms": imp, "in_process_ms": tot}


def measure(trees: dict[str, str], runs: int, n_cold: int, blocks: int) -> dict:
    jobs = [{"kind": "example", "name": ex, "id": ex} for ex in EXAMPLES]
    jobs += [{"kind": "scaling", "name": f"threads={t}", "id": f"threads={t}", "threads": t,
              "bm": bm, "wm": wm} for t, bm, wm in THREADS]
    jobs += [{"kind": "scaling", "name": f"trip_bound={T}", "id": f"trip_bound={T}",
              "threads": 128, "bm": 64, "wm": 2, "trip_bound": T} for T in TRIP_BOUNDS]
    jobs += [{"kind": "broken", "name": b, "id": b} for b in BROKEN]
    per_block = max(1, -(-runs // blocks))
    raw: dict = {name: {j["id"]: [] for j in jobs} for name in trees}
    for b in range(blocks):
        for name, tree in (trees.items() if b % 2 == 0 else reversed(trees.items())):
            spec = {"jobs": [{**j, "runs": per_block if j["kind"] == "example"
                              else max(1, per_block // 4)} for j in jobs]}
            got = _spawn(tree, spec)
            for k, v in got.items():
                raw[name][k] += v
            print(f"block {b + 1}/{blocks}: {name} done", file=sys.stderr, flush=True)
    result: dict = {}
    for name, tree in trees.items():
        r: dict = {"tree": tree, "examples": {}, "threads": {}, "trip_bound": {}}
        for ex in EXAMPLES:
            e = {k: stats([x[k] for x in raw[name][ex]]) for k in PHASES}
            e["configs"] = raw[name][ex][0]["configs"]
            e["target_ms"] = TARGETS.get(ex)
            r["examples"][ex] = e
        for t, _, _ in THREADS:
            r["threads"][t] = stats([x["total_ms"] for x in raw[name][f"threads={t}"]])
        for T in TRIP_BOUNDS:
            r["trip_bound"][T] = stats([x["total_ms"] for x in raw[name][f"trip_bound={T}"]])
        r["broken"] = {}
        for b in BROKEN:
            r["broken"][b] = {k: stats([x[k] for x in raw[name][b]]) for k in PHASES}
        result[name] = r
    for i in range(n_cold):
        for name, tree in trees.items():
            for ex in EXAMPLES:
                result[name]["examples"][ex].setdefault("cold_runs", []).append(cold(tree, ex))
    for name in trees:
        for ex in EXAMPLES:
            e = result[name]["examples"][ex]
            e["cold_ms"] = stats([c["process_ms"] for c in e["cold_runs"]])
            e["cold_import_ms"] = stats([c["import_ms"] for c in e["cold_runs"]])
    return result


def _ratio(ref: float | None, cur: float) -> str:
    return f"{ref / cur:5.1f}x" if ref else ""


def report(res: dict) -> None:
    cur = res["this"]
    ref = res.get("reference")
    print(f"{'example (all configs)':30s} {'front':>7s} {'prop':>7s} {'solve':>6s} "
          f"{'median':>8s} {'p95':>8s} {'1st cfg':>8s} {'cold':>8s} {'target':>7s}"
          + ("  ref median  speed-up" if ref else ""))
    for ex, r in cur["examples"].items():
        tgt = f"{r['target_ms']:.0f}" if r["target_ms"] else "-"
        line = (f"{ex:30s} {r['frontend_ms']['median']:7.1f} {r['propagate_ms']['median']:7.1f} "
                f"{r['solve_ms']['median']:6.1f} {r['total_ms']['median']:8.1f} "
                f"{r['total_ms']['p95']:8.1f} {r['first_config_ms']['median']:8.1f} "
                f"{r['cold_ms']['median']:8.1f} {tgt:>7s}")
        if ref:
            rr = ref["examples"][ex]
            line += (f"  {rr['total_ms']['median']:10.1f}  "
                     f"{_ratio(rr['total_ms']['median'], r['total_ms']['median'])}"
                     f" (1st cfg {_ratio(rr['first_config_ms']['median'], r['first_config_ms']['median'])},"
                     f" cold {_ratio(rr['cold_ms']['median'], r['cold_ms']['median'])})")
        print(line)
    print("\nbroken example (all configs)" + " " * 27 + f"{'front':>7s} {'prop':>7s} {'solve':>7s}"
          f" {'median':>8s} {'p95':>8s}" + ("   reference  speed-up" if ref else ""))
    for b, r in cur.get("broken", {}).items():
        extra = ""
        if ref and b in ref.get("broken", {}):
            rm = ref["broken"][b]["total_ms"]["median"]
            extra = f"   {rm:9.1f}  {_ratio(rm, r['total_ms']['median'])}"
        print(f"{b:55s} {r['frontend_ms']['median']:7.1f} {r['propagate_ms']['median']:7.1f} "
              f"{r['solve_ms']['median']:7.1f} {r['total_ms']['median']:8.1f} "
              f"{r['total_ms']['p95']:8.1f}{extra}")
    for key, title, width in (
            ("threads", "threads   total median ms (synthetic pipelined GEMM, T = STAGES + 2)",
             7),
            ("trip_bound", "trip bound   total median ms (the same GEMM, 128 threads)", 10)):
        print("\n" + title + ("   reference  speed-up" if ref else ""))
        for t, r in cur[key].items():
            extra = (f"   {ref[key][t]['median']:9.1f}  "
                     f"{_ratio(ref[key][t]['median'], r['median'])}") if ref else ""
            print(f"{str(t):>{width}}   {r['median']:10.1f}{extra}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="warm runs per example (>= 20)")
    ap.add_argument("--cold", type=int, default=3, help="cold processes per example")
    ap.add_argument("--blocks", type=int, default=4,
                    help="interleaved blocks (with --reference)")
    ap.add_argument("--reference", help="a checkout of the reference code")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks/results/analysis_latency.json"))
    args = ap.parse_args(argv)
    trees = {"this": ROOT}
    if args.reference:
        trees["reference"] = os.path.abspath(args.reference)
    res = measure(trees, args.runs, args.cold, args.blocks if args.reference else 1)
    res["machine"] = {"cpus": os.cpu_count(), "loadavg": os.getloadavg(),
                      "python": sys.version.split()[0]}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=2)
    print(f"\nwrote {args.out}\n")
    report(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
