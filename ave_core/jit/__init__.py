"""The JIT: compile on first use, cache on disk, launch on the GPU.

``kernel[grid](*args, **constexprs)`` with torch CUDA tensors lands in :func:`launch`:

1. the front end specializes the kernel for ``constexprs`` (pure Python);
2. the cache key (:mod:`.cache`) is looked up; on a miss the specialization is first checked
   by the analysis (``AVE_CHECK=error`` (default): a violated or unknown assertion or an
   uninitialized shared-memory read raises :class:`KernelCheckFailed` and nothing is
   compiled (a vacuous assertion only warns); ``warn``: a warning; ``off``), then
   compiled (:mod:`.pipeline`: MLIR, ptxas) and stored — so what runs is what was proved;
3. arguments are checked against the specialization (dtype, rank, device, innermost stride
   1, 16-byte aligned pointers and row pitches: a clear ``ValueError``/``TypeError``, never a
   silent wrong launch), and the binary is launched on torch's current stream with the CUDA
   driver API (``cuda-bindings``: cubin) or HIP (``hip-python``: HSACO) (:mod:`.driver`).

From a warm cache only the standard library, numpy, torch and cuda-bindings are imported
(not z3, pygls, MLIR or LLVM).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Sequence

from ave_core.jit import cache as _cache


class KernelCheckFailed(RuntimeError):
    """The analysis did not prove a specialization that was about to be compiled."""

    def __init__(self, diagnostics: list) -> None:
        self.diagnostics = diagnostics
        lines = [f"{d.code} {d.message}" for d in diagnostics[:5]]
        super().__init__("the kernel's invariants are not proved (AVE_CHECK=error; set "
                         "AVE_CHECK=warn or off to run it anyway):\n  " + "\n  ".join(lines))


DEFAULT_TARGET = "sm_90"
SPEC = {"pointer_align": 16, "innermost_stride": 1}


def check_mode() -> str:
    m = os.environ.get("AVE_CHECK", "error").lower()
    if m not in ("error", "warn", "off"):
        raise ValueError(f"AVE_CHECK must be error, warn or off, not {m!r}")
    return m


def run_analysis(kernel: Any, mode: str) -> str:
    """Check one specialization before compiling it; returns the verdict recorded in the
    cache entry (``proved``/``findings``/``skipped``)."""
    if mode == "off":
        return "skipped"
    from ave_core.analysis import analyze
    res = analyze(kernel)
    # violated / unknown assertions (errors) and uninitialized shared reads (AVE203) block;
    # a vacuous assertion (AVE204: nothing tagged to compare) only warns
    bad = [d for d in res.diagnostics if d.severity.label == "error" or d.code == "AVE203"]
    notes = [d for d in res.diagnostics if d not in bad and d.severity.label == "warning"]
    if notes and mode != "off":
        warnings.warn("; ".join(f"{d.code} {d.message}" for d in notes), stacklevel=3)
    if not bad:
        return "proved" if not notes else "proved (with warnings)"
    if mode == "error":
        raise KernelCheckFailed(bad)
    warnings.warn(str(KernelCheckFailed(bad)), stacklevel=3)
    return "findings"


def compile_cached(kernel: Any, target: str = DEFAULT_TARGET, spec: dict | None = None,
                   mode: str | None = None) -> tuple[dict, bytes, bool]:
    """(metadata, cubin, was_cached) of one specialization, compiling on a miss."""
    spec = dict(SPEC if spec is None else spec)
    key = _cache.cache_key(kernel, target, spec)
    hit = _cache.load(key)
    if hit is not None:
        return hit[0], hit[1], True
    verdict = run_analysis(kernel, check_mode() if mode is None else mode)
    from ave_core.jit.pipeline import compile_kernel
    c = compile_kernel(kernel, target)
    meta = {
        "kernel": kernel.name, "file": kernel.file, "constexprs": kernel.constexprs,
        "symbol": c.lowered.name, "threads": c.lowered.threads,
        "shared_bytes": c.lowered.shared_bytes, "target": target, "spec": spec,
        "params": [p.to_json() for p in c.lowered.params], "resources": c.resources,
        "toolchain": c.toolchain, "ave": _cache.ave_version(), "analysis": verdict,
    }
    _cache.store(key, meta, c.cubin, c.ptx)
    return meta, c.cubin, False


_memo: dict = {}


def launch(kernel_obj: Any, grid: Any, args: Sequence[Any], constexprs: dict) -> None:
    """Launch ``kernel_obj`` (an ``@ave.kernel``) on the GPU; see the module docstring.

    Raises:
        KernelCheckFailed, ValueError, TypeError, ave_core.compiler.lower.LoweringError,
        ave_core.jit.pipeline.ToolchainError, RuntimeError (CUDA driver errors).
    """
    from ave_core.jit.driver import device_target, make_launcher
    grid_t = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(grid_t) <= 3 or any(not isinstance(g, int) or g < 1 for g in grid_t):
        raise ValueError(f"grid must be 1 to 3 positive ints, got {grid!r}")
    mkey = (id(kernel_obj), tuple(sorted(constexprs.items())))
    ent = _memo.get(mkey)
    if ent is None:
        from ave_core.compiler.frontend import specialize_kernel
        k = specialize_kernel(kernel_obj, constexprs)
        meta, binary, _ = compile_cached(k, device_target())
        ent = _memo[mkey] = make_launcher(meta, binary)
    ent(grid_t, args)


__all__ = ["KernelCheckFailed", "compile_cached", "launch", "run_analysis"]
