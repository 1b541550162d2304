"""A witness depends on the kernel, not on what the process checked before it.

z3's models depend on everything its context has seen; with the shared default context,
the same broken kernel got other sizes and program ids in its witness (``program_id(2) = 10``
alone, ``= 1`` after two other files) -- in a language server that checks many files, the
message of one diagnostic changed from save to save. Each analysis owns a z3 context.
"""

from __future__ import annotations

import os

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_source

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _kernels(rel: str):
    path = os.path.join(ROOT, rel)
    with open(path, encoding="utf-8") as f:
        return compile_source(f.read(), rel).kernels


def _witnesses(rel: str, i: int) -> list:
    a = analyze(_kernels(rel)[i])
    return [(r.status, r.witness) for r in a.assertions if r.witness]


def test_same_witness_before_and_after_other_checks():
    target = "examples/broken/flash_attention_wrong_kv_head.py"
    first = _witnesses(target, 1)
    assert first and all(s == "violated" for s, _ in first)
    for other in ("examples/broken/moe_gather_mask_bound.py",
                  "examples/broken/gemm_mask_bound.py"):
        for k in _kernels(other):
            analyze(k)
    assert _witnesses(target, 1) == first
