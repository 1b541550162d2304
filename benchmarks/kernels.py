"""GPU kernel speed: Ave's examples against the libraries, measured in the same run.

    python benchmarks/kernels.py --precompile        # on a machine with the MLIR bindings
    python benchmarks/kernels.py [--quick] [--json PATH]   # on the GPU machine: only times

* GEMM (examples/gemm.py, bf16 in, f32 out) at 4096^3, 8192^3, 2048x7168x2048, each config,
  against cuBLAS through ``torch.matmul`` (bf16 in and out, cuBLAS's fastest bf16 path).
* Flash attention forward (examples/flash_attention.py, bf16): B4 H32 S4096 D128 causal and
  not, B16 H16 S1024 D64, against ``scaled_dot_product_attention`` with the cuDNN and the
  FlashAttention-2 backends (each where available).
* Fused MoE (examples/moe.py, up-projection config: BM 64, top-2): 4096 tokens, 8 experts,
  K 4096, N 14336, against ``torch._grouped_mm`` on the expert-sorted rows where present,
  else one ``torch.matmul`` per expert (named in the table).

Timing: ``triton.testing.do_bench`` (median, ms) where Triton is installed, else CUDA events
(median of 50 after 10 warm-ups); TFLOP/s from the useful FLOPs (2*M*N*K; 4*B*H*S_Q*S_KV*D for
attention, halved when causal; 2*pairs*N*K for MoE). Prints a table last; writes JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

GEMM_CONFIGS = [dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3),
                dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=4)]
GEMM_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 7168, 2048)]
ATTN_CASES = [  # (B, H, S, D, causal, constexprs)
    (4, 32, 4096, 128, False, dict(BR=128, BC=64, D=128, GROUP=1, CAUSAL=False)),
    (4, 32, 4096, 128, True, dict(BR=128, BC=64, D=128, GROUP=1, CAUSAL=True)),
    (16, 16, 1024, 64, False, dict(BR=128, BC=64, D=64, GROUP=1, CAUSAL=False)),
]
MOE_CASE = dict(T=4096, E=8, K=4096, N=14336,
                cx=dict(BM=64, BN=64, BK=64, STAGES=4, TOPK=2, MUL_ROUTED_WEIGHT=False))


def _module(rel):
    spec = importlib.util.spec_from_file_location("ex_" + rel[:-3], os.path.join(ROOT, "examples",
                                                                              rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def specializations():
    out = [("gemm.py", "gemm", c) for c in GEMM_CONFIGS]
    out += [("flash_attention.py", "flash_attention", c[-1]) for c in ATTN_CASES]
    out += [("moe.py", "fused_moe", MOE_CASE["cx"])]
    return out


def precompile() -> int:
    from ave_core.compiler.frontend import specialize
    from ave_core.jit import compile_cached
    for rel, name, cx in specializations():
        path = os.path.join(ROOT, "examples", rel)
        with open(path, encoding="utf-8") as f:
            k = specialize(f.read(), path, name, cx)
        meta, _, hit = compile_cached(k)
        r = meta["resources"]
        print(f"{name} {cx}: {'cached' if hit else 'compiled'}, {r.get('registers')} registers, "
              f"spills {r.get('spill_store_bytes')} B, analysis {meta['analysis']}")
    return 0


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


def row(kernel, shape, cfg, t, flops, refs, err):
    r = {"kernel": kernel, "shape": shape, "config": cfg, "ms": t, "tflops": flops / t / 1e9,
         "max_rel_err": err, "refs": {}}
    for name, tr in refs.items():
        r["refs"][name] = {"ms": tr, "tflops": flops / tr / 1e9 if tr else None,
                           "ratio": (tr / t) if tr else None}
    return r


def run_gemm(rows, quick):
    import torch
    mod = _module("gemm.py")
    for (M, N, K) in GEMM_SHAPES[:1] if quick else GEMM_SHAPES:
        A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        B = torch.randn(K, N, device="cuda").to(torch.bfloat16)
        flops = 2.0 * M * N * K
        t_ref = bench(lambda: torch.matmul(A, B))
        ref = A.float() @ B.float()
        for i, c in enumerate(GEMM_CONFIGS):
            C = torch.empty(M, N, device="cuda")
            grid = ((M + c["BM"] - 1) // c["BM"], (N + c["BN"] - 1) // c["BN"])
            mod.gemm[grid](A, B, C, **c)
            torch.cuda.synchronize()
            err = ((C - ref).abs().max() / ref.abs().max()).item()
            t = bench(lambda: mod.gemm[grid](A, B, C, **c))
            rows.append(row("gemm", f"{M}x{N}x{K}", i, t, flops, {"cuBLAS": t_ref}, err))


def run_attention(rows, quick):
    import torch
    import torch.nn.functional as F
    mod = _module("flash_attention.py")
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = {"cuDNN": SDPBackend.CUDNN_ATTENTION, "FA2": SDPBackend.FLASH_ATTENTION}
    except ImportError:
        backends = {}
    for (Bn, H, S, D, causal, cx) in ATTN_CASES[:1] if quick else ATTN_CASES:
        q, k, v = (torch.randn(Bn, H, S, D, device="cuda").to(torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        scale = 1.0 / math.sqrt(D)
        flops = 4.0 * Bn * H * S * S * D * (0.5 if causal else 1.0)
        refs = {}
        ref_out = None
        for name, be in backends.items():
            try:
                with sdpa_kernel(be):
                    ref_out = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                             scale=scale)
                    refs[name] = bench(lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal, scale=scale))
            except Exception as e:          # backend not available for this shape
                refs[name] = None
                print(f"SDPA {name} unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        grid = ((S + cx["BR"] - 1) // cx["BR"], Bn, H)
        mod.flash_attention[grid](q, k, v, o, scale, **cx)
        torch.cuda.synchronize()
        if ref_out is None:
            ref_out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                     is_causal=causal, scale=scale)
        err = ((o.float() - ref_out.float()).abs().max() / ref_out.float().abs().max()).item()
        t = bench(lambda: mod.flash_attention[grid](q, k, v, o, scale, **cx))
        rows.append(row("attention" + (" causal" if causal else ""), f"B{Bn} H{H} S{S} D{D}",
                        0, t, flops, refs, err))


def run_moe(rows):
    import numpy as np
    import torch
    from tests.interp.refs import moe_align_block_size, route
    mod = _module("moe.py")
    c = MOE_CASE
    T, E, K, N, cx = c["T"], c["E"], c["K"], c["N"], c["cx"]
    TOPK, BM = cx["TOPK"], cx["BM"]
    rng = np.random.default_rng(0)
    topk_ids = route(rng, T, E, TOPK)
    sorted_ids, expert_ids, _ = moe_align_block_size(topk_ids, E, BM)
    X = torch.randn(T, K, device="cuda").to(torch.bfloat16)
    W = (torch.randn(E, N, K, device="cuda") * 0.05).to(torch.bfloat16)
    Out = torch.empty(T * TOPK, N, device="cuda", dtype=torch.bfloat16)
    sid = torch.from_numpy(sorted_ids.astype(np.int32)).cuda()
    eid = torch.from_numpy(expert_ids.astype(np.int32)).cuda()
    tw = torch.ones(T * TOPK, device="cuda")
    grid = (len(sorted_ids) // BM, (N + cx["BN"] - 1) // cx["BN"])
    flops = 2.0 * T * TOPK * N * K
    # reference: the rows sorted by expert, one grouped GEMM
    pair_e = torch.from_numpy(topk_ids.reshape(-1)).cuda()
    order = torch.argsort(pair_e, stable=True)
    xs = X[order // TOPK].contiguous()
    counts = torch.bincount(pair_e, minlength=E)
    offs = torch.cumsum(counts, 0).to(torch.int32)
    Wt = W.transpose(1, 2)
    if hasattr(torch, "_grouped_mm"):
        ref_name = "torch._grouped_mm"

        def ref_fn():
            return torch._grouped_mm(xs, Wt, offs=offs)
    else:
        ref_name = "per-expert torch.matmul"
        bounds = [0] + offs.tolist()

        def ref_fn():
            return torch.cat([xs[bounds[e]:bounds[e + 1]] @ Wt[e] for e in range(E)])
    try:
        ys = ref_fn()
        t_ref = bench(ref_fn)
    except Exception as e:
        print(f"{ref_name} failed: {type(e).__name__}: {e}", file=sys.stderr)
        ref_name = "per-expert torch.matmul"
        bounds = [0] + offs.tolist()

        def ref_fn():
            return torch.cat([xs[bounds[e]:bounds[e + 1]] @ Wt[e] for e in range(E)])
        ys = ref_fn()
        t_ref = bench(ref_fn)
    mod.fused_moe[grid](X, W, Out, sid, eid, tw, **cx)
    torch.cuda.synchronize()
    ref_out = torch.empty_like(ys)
    ref_out[order] = ys
    err = ((Out.float() - ref_out.float()).abs().max() / ref_out.float().abs().max()).item()
    t = bench(lambda: mod.fused_moe[grid](X, W, Out, sid, eid, tw, **cx))
    rows.append(row("moe", f"T{T} E{E} top{TOPK} K{K} N{N}", 0, t, flops, {ref_name: t_ref},
                    err))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--precompile", action="store_true",
                    help="compile every specialization the run uses into the JIT cache "
                         "(no GPU needed)")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "kernels.json"))
    ap.add_argument("--only", choices=("gemm", "attention", "moe"))
    ns = ap.parse_args()
    if ns.precompile:
        return precompile()
    import torch
    rows: list = []
    t0 = time.time()
    if ns.only in (None, "gemm"):
        run_gemm(rows, ns.quick)
    if ns.only in (None, "attention"):
        run_attention(rows, ns.quick)
    if ns.only in (None, "moe"):
        run_moe(rows)
    os.makedirs(os.path.dirname(ns.json), exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "seconds": time.time() - t0, "rows": rows}, f, indent=1)
    print(f"{'kernel':18} {'shape':>24} {'cfg':>3} {'Ave TFLOP/s':>11} {'max rel err':>11}  "
          "reference: TFLOP/s (Ave/ref)")
    for r in rows:
        refs = "; ".join(f"{n}: {v['tflops']:.0f} ({v['ratio']:.2f}x)" if v["ms"] else
                         f"{n}: n/a" for n, v in r["refs"].items())
        print(f"{r['kernel']:18} {r['shape']:>24} {r['config']:>3} {r['tflops']:11.1f} "
              f"{r['max_rel_err']:11.2e}  {refs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
