"""``python -m ave_core.jit``: precompile kernels into the cache, list it, clear it.

    python -m ave_core.jit compile FILE [--kernel NAME] [--target sm_90] [--dump DIR]
                                        [--check error|warn|off]
    python -m ave_core.jit list
    python -m ave_core.jit clear

``compile`` builds every specialization in the kernel's ``configs`` (or its defaults) and
prints, per specialization, registers, spills, shared memory and occupancy from
``ptxas -v``; ``--dump DIR`` writes every stage (Ave IR, MLIR before and after lowering, LLVM
IR, PTX) under ``DIR/<kernel>-<config>/``. Exit status: 0 done, 1 a kernel failed to check or
compile (message with file:line:col), 2 usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys


def _cmd_compile(ns) -> int:
    from ave_core.compiler.frontend import compile_file
    from ave_core.compiler.lower import LoweringError
    from ave_core.jit import KernelCheckFailed, SPEC, compile_cached
    from ave_core.jit import cache
    from ave_core.jit.pipeline import ToolchainError, compile_kernel
    if not ns.target.startswith(("sm_", "gfx")):
        print(f"unknown target {ns.target} (sm_80, sm_90, gfx942, gfx950)", file=sys.stderr)
        return 2
    res = compile_file(ns.file)
    errs = [d for d in res.diagnostics if d.severity.label == "error"]
    for d in errs:
        print(f"{ns.file}:{d.range.start.line + 1}:{d.range.start.character + 1}: {d.code} "
              f"{d.message}", file=sys.stderr)
    if errs:
        return 1
    kernels = [k for k in res.kernels if ns.kernel in (None, k.name)]
    if not kernels:
        print(f"no kernel {ns.kernel!r} in {ns.file}", file=sys.stderr)
        return 2
    status = 0
    for k in kernels:
        label = f"{k.name}[config {k.config_index if k.config_index is not None else 'default'}]"
        try:
            meta, _, hit = compile_cached(k, ns.target, dict(SPEC), ns.check)
            if ns.dump:
                c = compile_kernel(k, ns.target, keep_stages=True, assemble=False)
                d = os.path.join(ns.dump, f"{k.name}-{k.config_index if k.config_index is not None else 'default'}")
                os.makedirs(d, exist_ok=True)
                for name, text in c.stages.items():
                    with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                        f.write(text)
        except LoweringError as e:
            d = e.to_diagnostic()
            p = d.range.start
            print(f"{d.file}:{p.line + 1}:{p.character + 1}: {label}: {d.code} "
                  f"{Exception.__str__(e)}", file=sys.stderr)
            status = 1
            continue
        except (KernelCheckFailed, ToolchainError) as e:
            print(f"{ns.file}: {label}: {e}", file=sys.stderr)
            status = 1
            continue
        r = meta["resources"]
        key = cache.cache_key(k, ns.target, dict(SPEC))[:12]
        if ns.target.startswith("gfx"):
            print(f"{label}: {'cached' if hit else 'compiled'}  VGPRs {r.get('vgprs')}  AGPRs "
                  f"{r.get('agprs')}  SGPRs {r.get('sgprs')}  VGPR spills {r.get('vgpr_spills')}  "
                  f"LDS {meta['shared_bytes']} B  analysis {meta['analysis']}  key {key}")
        else:
            print(f"{label}: {'cached' if hit else 'compiled'}  registers {r.get('registers')}  "
                  f"spills {r.get('spill_store_bytes', 0)}+{r.get('spill_load_bytes', 0)} B  "
                  f"shared {meta['shared_bytes']} B  occupancy {r.get('blocks_per_sm')} "
                  f"blocks/SM ({r.get('limited_by')})  analysis {meta['analysis']}  key {key}")
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ave_core.jit",
                                 description="Precompile Ave kernels into the JIT cache.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile", help="compile every specialization of a file's kernels")
    c.add_argument("file")
    c.add_argument("--kernel")
    c.add_argument("--target", default="sm_90")
    c.add_argument("--dump", metavar="DIR")
    c.add_argument("--check", choices=("error", "warn", "off"), default=None,
                   help="run the analysis first (default: $AVE_CHECK or error)")
    sub.add_parser("list", help="list the cache's entries")
    sub.add_parser("clear", help="remove every cache entry")
    ns = ap.parse_args(argv)
    from ave_core.jit import cache
    if ns.cmd == "compile":
        return _cmd_compile(ns)
    if ns.cmd == "list":
        for m in cache.entries():
            r = m.get("resources", {})
            print(f"{m['key'][:12]}  {m['kernel']} {m['constexprs']}  {m['target']}  "
                  f"registers {r.get('registers')}  analysis {m.get('analysis')}")
        print(f"cache: {cache.cache_dir()}")
        return 0
    n = cache.clear()
    print(f"removed {n} entries from {cache.cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
