"""Wall time of the CPU reference interpreter on the bundled examples.

    python benchmarks/interp_speed.py [--out FILE] [--repeat N]

Cases (each: one warm-up run, then ``--repeat`` timed runs, default 3; best and median):

* GEMM (examples/gemm.py, config 0: BM = BN = 128, BK = 32, STAGES = 3), M = N = K = 256,
  grid (2, 2);
* flash attention (examples/flash_attention.py, config 0: BR = 128, BC = 64, D = 128),
  B = 1, H = 2, S = 256 (S_Q = S_KV), grid (2, 1, 2);

each with dynamic checks on (the default), once without and once with ``provenance=True``.
Compilation (front end) is not timed. The warm-up run's output is compared with a float64
reference and its diagnostics must be empty, so a timing is never of a wrong run.

Writes JSON (default ``benchmarks/results/interp_speed.json``) and prints a table last.
Goal: every case under 10 s on the machine it runs on.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ave_core.compiler.frontend import compile_file  # noqa: E402
from ave_core.interp import run  # noqa: E402

GOAL_S = 10.0


def _bf16(rng: np.random.Generator, shape) -> tuple[np.ndarray, np.ndarray]:
    """Random bf16 (bits as uint16, RNE) and its float64 value."""
    f = rng.standard_normal(shape).astype(np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _kernel(rel: str, config: int):
    res = compile_file(str(ROOT / "examples" / rel))
    errs = [d.format_text() for d in res.diagnostics if d.severity.label == "error"]
    if errs:
        raise SystemExit("\n".join(errs))
    (k,) = [k for k in res.kernels if k.config_index == config]
    return k


def gemm_setup(M=256, N=256, K=256, config=0):
    k = _kernel("gemm.py", config)
    rng = np.random.default_rng(0)
    a_bits, a = _bf16(rng, (M, K))
    b_bits, b = _bf16(rng, (K, N))
    c = np.full((M, N), np.nan, dtype=np.float32)
    cx = k.constexprs
    grid = (-(-M // cx["BM"]), -(-N // cx["BN"]))
    ref = a @ b

    def err():
        return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))

    def reset():
        c.fill(np.nan)
    return dict(name=f"gemm {M}x{N}x{K}", kernel=k, grid=grid, args=[a_bits, b_bits, c],
                err=err, tol=1e-5, reset=reset, config=config)


def attention_setup(B=1, H=2, S=256, config=0):
    k = _kernel("flash_attention.py", config)
    cx = k.constexprs
    D, G = cx["D"], cx["GROUP"]
    rng = np.random.default_rng(0)
    q_bits, q = _bf16(rng, (B, H, S, D))
    k_bits, kk = _bf16(rng, (B, H // G, S, D))
    v_bits, v = _bf16(rng, (B, H // G, S, D))
    o = np.full((B, H, S, D), 0x7FC0, dtype=np.uint16)         # bf16 NaN
    sm_scale = float(np.float32(1.0 / np.sqrt(D)))
    heads = np.arange(H) // G
    s = np.einsum("bhqd,bhkd->bhqk", q, kk[:, heads]) * sm_scale
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ref = np.einsum("bhqk,bhkd->bhqd", p, v[:, heads])
    grid = (-(-S // cx["BR"]), B, H)

    def err():
        got = (o.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    def reset():
        o.fill(0x7FC0)
    return dict(name=f"flash attention B={B} H={H} S={S} D={D}", kernel=k, grid=grid,
                args=[q_bits, k_bits, v_bits, o, sm_scale], err=err, tol=1e-2, reset=reset,
                config=config)


def measure(setup: dict, provenance: bool, repeat: int) -> dict:
    k, grid, args = setup["kernel"], setup["grid"], setup["args"]
    setup["reset"]()
    t0 = time.perf_counter()
    res = run(k, grid, args, provenance=provenance)          # warm-up, also validated
    warm = time.perf_counter() - t0
    diags = [d.format_text() for d in res.diagnostics]
    err = setup["err"]()
    correct = bool(np.isfinite(err) and err <= setup["tol"] and not diags)
    times = []
    for _ in range(repeat):
        setup["reset"]()
        t0 = time.perf_counter()
        run(k, grid, args, provenance=provenance)
        times.append(time.perf_counter() - t0)
    best, med = min(times), statistics.median(times)
    return {
        "case": setup["name"], "config": setup["config"], "constexprs": k.constexprs,
        "grid": list(grid), "provenance": provenance, "checks": True,
        "warmup_s": warm, "times_s": times, "best_s": best, "median_s": med,
        "goal_s": GOAL_S, "meets_goal": med < GOAL_S,
        "rel_error": err, "tolerance": setup["tol"], "correct": correct,
        "diagnostics": diags[:5],
        "mma_records": len(res.mma_trace) if provenance else None,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "interp_speed.json"),
                    help="JSON output file (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs after the warm-up")
    a = ap.parse_args(argv)

    rows = []
    for setup in (gemm_setup(), attention_setup()):
        for prov in (False, True):
            r = measure(setup, prov, a.repeat)
            rows.append(r)
            print(f"  {r['case']} provenance={prov}: best {r['best_s']:.3f} s, "
                  f"median {r['median_s']:.3f} s", file=sys.stderr, flush=True)

    import numpy  # noqa: F401  (version)
    report = {
        "benchmark": "interp_speed",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__},
        "repeat": a.repeat, "goal": f"< {GOAL_S:g} s",
        "results": rows,
    }
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    hdr = f"{'case':<36} {'config':>6} {'prov':>5} {'best s':>8} {'median s':>9} " \
          f"{'goal':>7} {'ok':>4} {'correct':>8}"
    print(f"wrote {out}")
    print(f"interpreter wall time ({os.cpu_count()} CPUs, best / median of {a.repeat} after "
          "one warm-up, dynamic checks on)")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['case']:<36} {r['config']:>6} {'yes' if r['provenance'] else 'no':>5} "
              f"{r['best_s']:>8.3f} {r['median_s']:>9.3f} {'< 10 s':>7} "
              f"{'yes' if r['meets_goal'] else 'NO':>4} {'yes' if r['correct'] else 'NO':>8}")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
