"""Concrete inputs for running the example kernels (and their broken copies) in the
interpreter at a chosen block and trip count — for replaying witnesses; and
:func:`analysis_summary`, what two analyses of one kernel are compared by."""

from __future__ import annotations

import numpy as np

from ave_core.interp import numerics as NUM
from ave_core.lang import bf16


def _bf16(rng, shape):
    return NUM.to_storage(bf16, rng.standard_normal(shape).astype(np.float32))


def moe_routing(T: int, topk: int, E: int, BM: int, rng) -> tuple:
    """moe_align_block_size: routed pairs p = token * topk + slot grouped by expert, each
    bucket padded to a multiple of BM with the sentinel T * topk."""
    experts = np.stack([rng.choice(E, size=topk, replace=False) for _ in range(T)])
    pairs = np.arange(T * topk)
    ids, blocks = [], []
    for e in range(E):
        mine = pairs[experts.reshape(-1) == e]
        if len(mine) == 0:
            continue
        pad = (-len(mine)) % BM
        ids.extend(mine.tolist() + [T * topk] * pad)
        blocks.extend([e] * ((len(mine) + pad) // BM))
    return (np.array(ids, np.int32), np.array(blocks, np.int32),
            rng.random(T * topk).astype(np.float32))


def inputs_for(kernel, block, trips: int, rng=None):
    """(grid, args) that run ``kernel`` over a grid containing ``block`` with runtime loops of
    ``trips`` iterations."""
    rng = rng or np.random.default_rng(0)
    cx = kernel.constexprs
    block = list(block) + [0] * (3 - len(block))
    name = kernel.name
    if name == "gemm":
        BM, BN, BK = cx["BM"], cx["BN"], cx["BK"]
        M, N, K = BM * (block[0] + 1), BN * (block[1] + 1), BK * trips
        return (block[0] + 1, block[1] + 1), [_bf16(rng, (M, K)), _bf16(rng, (K, N)),
                                              np.zeros((M, N), np.float32)]
    if name == "flash_attention":
        BR, BC, D, G = cx["BR"], cx["BC"], cx["D"], cx["GROUP"]
        B, H = block[1] + 1, max(block[2] + 1, G)
        H = -(-H // G) * G
        S_Q, S_KV = BR * (block[0] + 1), BC * trips
        args = [_bf16(rng, (B, H, S_Q, D)), _bf16(rng, (B, H // G, S_KV, D)),
                _bf16(rng, (B, H // G, S_KV, D)), np.zeros((B, H, S_Q, D), np.uint16), 0.1]
        return (block[0] + 1, B, H), args
    if name == "fused_moe":
        BM, BN, BK, topk = cx["BM"], cx["BN"], cx["BK"], cx["TOPK"]
        T, E = 3, 2
        K, N = BK * trips, BN * (block[1] + 1)
        ids, experts, weights = moe_routing(T, topk, E, BM, rng)
        X = _bf16(rng, (T, K))
        W = _bf16(rng, (E, N, K))
        out = np.zeros((T * topk, N), np.uint16)
        return (len(experts), block[1] + 1), [X, W, out, ids, experts, weights]
    raise KeyError(name)


def analysis_summary(a) -> dict:
    """Everything an analysis reports, as plain data: variants, each assertion (its JSON,
    compared and covered counts, reason, witness), the diagnostics' JSON. Two ways of
    running the analysis that must agree are compared by it."""
    return {"variants": a.variants,
            "assertions": [(r.to_json(), r.compared, r.covered, r.reason, r.witness)
                           for r in a.assertions],
            "diagnostics": [d.to_json() for d in a.diagnostics]}
