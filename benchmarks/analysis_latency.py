"""Latency of the checker: front end, unrolling + propagation, solving, total.

For each example (every specialization of config 0 by default): a cold process (a fresh
interpreter imports Ave and checks the file once) and warm runs in this process (median
and p95 over ``--runs`` runs, no caches kept between runs: each run recompiles from text
and re-analyses). Then how time grows with the workgroup size (128 -> 256 -> 512 threads,
a synthetic pipelined GEMM with the same per-thread work) and with the trip-count bound
(2 -> 16). Prints a table last; writes JSON (``--out``).

Targets (issue "Tag analysis", this 2-core machine): flash attention <= 40 ms median warm,
GEMM <= 20 ms.

Usage: python benchmarks/analysis_latency.py [--runs 20] [--out FILE]
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
sys.path.insert(0, ROOT)

EXAMPLES = ["examples/gemm.py", "examples/flash_attention.py", "examples/moe.py"]
TARGETS = {"examples/gemm.py": 20.0, "examples/flash_attention.py": 40.0}

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


def one_run(text: str, path: str, options=None) -> dict:
    from ave_core.analysis import analyze
    from ave_core.compiler.frontend import compile_source
    t0 = time.perf_counter()
    res = compile_source(text, path)
    t1 = time.perf_counter()
    k = res.kernels[0]
    a = analyze(k, options)
    t2 = time.perf_counter()
    assert all(r.status == "proved" for r in a.assertions), [r.status for r in a.assertions]
    return {"frontend_ms": (t1 - t0) * 1e3,
            "propagate_ms": (a.timings["unroll_s"] + a.timings["propagate_s"]) * 1e3,
            "solve_ms": max(0.0, (t2 - t1) * 1e3 - (a.timings["unroll_s"]
                                                    + a.timings["propagate_s"]) * 1e3),
            "total_ms": (t2 - t0) * 1e3, "variants": a.variants,
            "queries": a.timings["solver_queries"]}


def stats(runs: list[dict], key: str) -> dict:
    xs = sorted(r[key] for r in runs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    return {"median": statistics.median(xs), "p95": p95}


def cold(path: str) -> float:
    code = ("import time; t=time.perf_counter(); from ave_core.check import check_file; "
            f"check_file({path!r}); print((time.perf_counter()-t)*1e3)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks/results/analysis_latency.json"))
    args = ap.parse_args(argv)
    from ave_core.analysis import AnalysisOptions
    result: dict = {"examples": {}, "threads": {}, "trip_bound": {}}
    for ex in EXAMPLES:
        text = open(os.path.join(ROOT, ex), encoding="utf-8").read()
        one_run(text, ex)                                  # warm-up
        runs = [one_run(text, ex) for _ in range(args.runs)]
        result["examples"][ex] = {k: stats(runs, k) for k in
                                  ("frontend_ms", "propagate_ms", "solve_ms", "total_ms")}
        result["examples"][ex]["cold_ms"] = cold(ex)
        result["examples"][ex]["variants"] = runs[0]["variants"]
        result["examples"][ex]["target_ms"] = TARGETS.get(ex)
    for threads, bm, wm in ((128, 64, 2), (256, 128, 4), (512, 256, 8)):
        text = SCALING.format(threads=threads, bm=bm, wm=wm)
        one_run(text, "scaling.py")
        runs = [one_run(text, "scaling.py") for _ in range(max(3, args.runs // 4))]
        result["threads"][threads] = stats(runs, "total_ms")
    text = SCALING.format(threads=128, bm=64, wm=2)
    for T in (2, 4, 8, 16):
        opts = AnalysisOptions(trip_bound=T)
        one_run(text, "scaling.py", opts)
        runs = [one_run(text, "scaling.py", opts) for _ in range(max(3, args.runs // 4))]
        result["trip_bound"][T] = stats(runs, "total_ms")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {args.out}\n")
    print(f"{'example':32s} {'front end':>10s} {'propagate':>10s} {'solve':>8s} "
          f"{'total med':>10s} {'total p95':>10s} {'cold':>8s} {'target':>8s}")
    for ex, r in result["examples"].items():
        tgt = f"{r['target_ms']:.0f}" if r["target_ms"] else "-"
        print(f"{ex:32s} {r['frontend_ms']['median']:10.1f} {r['propagate_ms']['median']:10.1f} "
              f"{r['solve_ms']['median']:8.1f} {r['total_ms']['median']:10.1f} "
              f"{r['total_ms']['p95']:10.1f} {r['cold_ms']:8.1f} {tgt:>8s}")
    print("\nthreads   total median ms (synthetic pipelined GEMM, T = STAGES + 2)")
    for t, r in result["threads"].items():
        print(f"{t:7d}   {r['median']:10.1f}")
    print("\ntrip bound   total median ms (the same GEMM, 128 threads)")
    for t, r in result["trip_bound"].items():
        print(f"{t:10d}   {r['median']:10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
