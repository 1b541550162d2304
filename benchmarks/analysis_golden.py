"""Record or compare the analysis' full output (verdicts, coverage, witnesses, diagnostics).

A regression guard for changes that must not change results (e.g. speed work): run
``--write FILE`` on the old code, ``--compare FILE`` on the new one. Covered: every kernel
specialization of the examples (``examples/``, ``examples/mi300x/``, ``examples/broken/``)
and the source mutants of benchmarks/_mutate.py (gemm and MoE: every specialization; flash
attention: its first one, every ``--fa-every``-th mutant).

(``--compare`` also writes what it got to ``FILE.new``.)

Usage: python benchmarks/analysis_golden.py (--write FILE | --compare FILE) [--fa-every 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _mutate():
    spec = importlib.util.spec_from_file_location("_ave_bench_mutate",
                                                  os.path.join(ROOT, "benchmarks/_mutate.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_ave_bench_mutate"] = mod
    spec.loader.exec_module(mod)
    return mod


def _result(kernel) -> dict:
    from ave_core.analysis import analyze
    a = analyze(kernel)
    return {"constexprs": {k: repr(v) for k, v in kernel.constexprs.items()},
            "variants": a.variants,
            "assertions": [{**r.to_json(), "covered": r.covered, "reason": r.reason,
                            "witness": r.witness} for r in a.assertions],
            "diagnostics": [d.to_json() if hasattr(d, "to_json") else repr(d)
                            for d in a.diagnostics]}


def collect(fa_every: int) -> dict:
    from ave_core.compiler.frontend import compile_source
    out: dict = {}
    for sub in ("examples", "examples/mi300x", "examples/broken"):
        d = os.path.join(ROOT, sub)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".py"):
                continue
            path = os.path.join(sub, f)
            res = compile_source(open(os.path.join(ROOT, path), encoding="utf-8").read(), path)
            out[path] = [_result(k) for k in res.kernels]
            print(path, flush=True)
    mu = _mutate()
    for ex in ("gemm.py", "moe.py", "flash_attention.py"):
        ms = mu.generate(ex)
        if ex == "flash_attention.py":
            ms = ms[::fa_every]
        for m in ms:
            kernels, errs = mu.compile_mutant(m)
            if errs:
                continue
            if ex == "flash_attention.py":
                kernels = kernels[:1]
            out["mutant:" + m.id] = [_result(k) for k in kernels]
        print(ex, len(ms), "mutants", flush=True)
    # paths relative to the checkout, so that two checkouts compare equal
    return json.loads(json.dumps(out, default=repr).replace(ROOT + os.sep, ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--compare")
    ap.add_argument("--fa-every", type=int, default=3)
    args = ap.parse_args(argv)
    got = collect(args.fa_every)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            json.dump(got, f, indent=1, sort_keys=True)
        print(f"wrote {len(got)} entries to {args.write}")
        return 0
    with open(args.compare + ".new", "w", encoding="utf-8") as f:
        json.dump(got, f, indent=1, sort_keys=True)
    want = json.load(open(args.compare, encoding="utf-8"))
    bad = [k for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
    for k in bad[:20]:
        print("DIFFERS:", k)
    print(f"{len(got)} entries, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
