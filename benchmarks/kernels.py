"""GPU kernel speed: Ave's examples against the libraries, measured in the same run.

    python benchmarks/kernels.py [--quick] [--json PATH]

GEMM (examples/gemm.py, bf16 in, f32 out) at 4096^3, 8192^3 and 2048x7168x2048 against
cuBLAS through ``torch.matmul`` (bf16 in, bf16 out — cuBLAS's fastest bf16 path; writing f32
as Ave does moves 2x the output bytes, under 1% of the time at these sizes), each Ave config.
Timing: ``triton.testing.do_bench`` (median, ms) where Triton is installed, else CUDA events
(median of 50 after 10 warm-ups). TFLOP/s = 2*M*N*K / time. Prints a table last; writes JSON.
Kernels come from the warm JIT cache (compile beforehand with
``python -m ave_core.jit compile examples/gemm.py``): the GPU run only times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def bench(fn) -> float:
    import torch
    try:
        from triton.testing import do_bench
        return float(do_bench(fn, warmup=25, rep=200))
    except ImportError:
        pass
    for _ in range(10):
        fn()
    ts = []
    for _ in range(50):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def main() -> int:
    import importlib.util
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "kernels.json"))
    ns = ap.parse_args()
    spec = importlib.util.spec_from_file_location("ex_gemm", os.path.join(ROOT, "examples",
                                                                          "gemm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    configs = [dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3),
               dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=4)]
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 7168, 2048)]
    if ns.quick:
        shapes = shapes[:1]
    rows = []
    for (M, N, K) in shapes:
        A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        B = torch.randn(K, N, device="cuda").to(torch.bfloat16)
        flops = 2.0 * M * N * K
        t_ref = bench(lambda: torch.matmul(A, B))
        ref = A.float() @ B.float()
        for i, c in enumerate(configs):
            C = torch.empty(M, N, device="cuda")
            grid = ((M + c["BM"] - 1) // c["BM"], (N + c["BN"] - 1) // c["BN"])
            t0 = time.perf_counter()
            mod.gemm[grid](A, B, C, **c)
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            err = ((C - ref).abs().max() / ref.abs().max()).item()
            t = bench(lambda: mod.gemm[grid](A, B, C, **c))
            rows.append({"kernel": "gemm", "shape": f"{M}x{N}x{K}", "config": i,
                         "ms": t, "tflops": flops / t / 1e9, "ref": "cuBLAS (torch.matmul)",
                         "ref_ms": t_ref, "ref_tflops": flops / t_ref / 1e9,
                         "ratio": t_ref / t, "max_rel_err": err, "first_launch_s": first})
        del A, B
    os.makedirs(os.path.dirname(ns.json), exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "rows": rows}, f, indent=1)
    print(f"{'kernel':8} {'shape':>16} {'cfg':>3} {'Ave TFLOP/s':>12} {'ref TFLOP/s':>12} "
          f"{'ratio':>6}  reference")
    for r in rows:
        print(f"{r['kernel']:8} {r['shape']:>16} {r['config']:>3} {r['tflops']:12.1f} "
              f"{r['ref_tflops']:12.1f} {r['ratio']:6.2f}  {r['ref']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
