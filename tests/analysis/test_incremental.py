"""Incremental variants give exactly the results of running every variant from the start.

The analysis runs the unrolled variants of a kernel (trip counts 1..T) one after the other,
each resuming where it departs from the previous one; checkpoints are kept only where a
later variant resumes and only what a later variant can undo is journaled (shared memory,
race and bound-check state). Compared here with ``incremental=False`` on kernels that
exercise all of it: pipelined copies, barriers, a race, bounds, MMA chains, a gather.
"""

from __future__ import annotations

import os

import pytest

from ave_core.analysis import AnalysisOptions, analyze
from ave_core.compiler.frontend import compile_source

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _summary(a) -> dict:
    return {"variants": a.variants,
            "assertions": [(r.to_json(), r.covered, r.reason, r.witness) for r in a.assertions],
            "diagnostics": [d.to_json() for d in a.diagnostics]}


@pytest.mark.parametrize("rel, which", [
    ("examples/gemm.py", None),
    ("examples/broken/gemm_missing_barrier.py", None),
    ("examples/broken/gemm_stage_off_by_one.py", None),
    ("examples/broken/moe_gather_mask_bound.py", [0]),
    ("examples/broken/flash_attention_v_wait.py", [0]),
])
def test_incremental_equals_from_scratch(rel, which):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        kernels = compile_source(f.read(), rel).kernels
    for i, k in enumerate(kernels):
        if which is not None and i not in which:
            continue
        inc = analyze(k, AnalysisOptions(incremental=True))
        full = analyze(k, AnalysisOptions(incremental=False))
        assert inc.variants == full.variants > 1
        assert _summary(inc) == _summary(full)
