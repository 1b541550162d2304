"""A witness depends on the kernel, not on what the process checked before it.

z3's models depend on everything its context has seen; with the shared default context,
the same broken kernel got other sizes and program ids in its witness (``program_id(2) = 10``
alone, ``= 1`` after two other files) -- in a language server that checks many files, the
message of one diagnostic changed from save to save. Each analysis owns a z3 context.
"""

from __future__ import annotations

import os

from ave_core.analysis import AnalysisOptions, analyze
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


def test_same_witnesses_from_several_threads_at_once():
    """Analyses running on several threads at once (each z3 context is made ahead on a
    helper thread) give the witnesses of a serial run, and never fail."""
    import threading

    # a solver budget no load reaches: four analyses at once on a busy machine can take a
    # query past the default 2 s, and an `unknown` is another result (not what this tests)
    opts = AnalysisOptions(solver_timeout_ms=120_000)

    def findings(rel: str) -> list:
        # every diagnostic with its witness (out-of-bounds findings: z3 models)
        return [d.to_json() for d in analyze(_kernels(rel)[0], opts).diagnostics]

    targets = ["examples/broken/flash_attention_q_mask_bound.py",
               "examples/broken/moe_gather_mask_bound.py"]
    serial = {t: findings(t) for t in targets}
    assert all(serial[t] and all(d["witness"] for d in serial[t]) for t in targets)
    got: list = []
    errors: list = []

    def work(t: str) -> None:
        try:
            for _ in range(2):
                got.append((t, findings(t)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(targets[i % 2],)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(got) == 8 and all(w == serial[t] for t, w in got)
