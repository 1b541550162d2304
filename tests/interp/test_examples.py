"""Every bundled example kernel, every specialization in its ``configs``, through the CPU
reference interpreter against an independent float64 reference (tests/interp/refs.py).

For each case: fresh random inputs from an rng seeded by the case's identity (a failure
reproduces), outputs poisoned with NaN, EVERY output element checked (none left unwritten,
each within ``tol * |scale|`` and the relative Frobenius error within ``tol``: 1e-2 for bf16
outputs, 1e-5 for f32), and no dynamic-check diagnostic (AVE301..AVE305).

Shapes are small (the point is correctness, edges included: every kernel runs at least one
shape that is not a multiple of its tile, plus degenerate ones such as a single k-tile
shorter than the pipeline prologue); the file stays well under a minute on two cores.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from ave_core.compiler.frontend import compile_file
from ave_core.interp import run

from . import refs
from .refs import EXAMPLES


@functools.lru_cache(maxsize=None)
def _kernels(rel: str):
    res = compile_file(str(EXAMPLES / rel))
    errors = [d.format_text() for d in res.diagnostics if d.severity.label == "error"]
    assert not errors, errors
    return tuple(res.kernels)


def _n_configs(rel: str) -> int:
    return len(_kernels(rel))


def _kernel(rel: str, config: int):
    ks = [k for k in _kernels(rel) if k.config_index == config]
    assert len(ks) == 1, f"{rel}: no single specialization with config_index {config}"
    return ks[0]


def _run_and_check(rel: str, config: int, case: refs.Case) -> None:
    k = _kernel(rel, config)
    res = run(k, case.grid, case.args)
    diags = [d.format_text() for d in res.diagnostics]
    assert not diags, f"{rel} config {config} ({k.constexprs}): dynamic checks fired:\n" + \
        "\n".join(diags)
    ok, msg = case.check()
    assert ok, f"{rel} config {config} ({k.constexprs}) grid {case.grid}: {msg}"


# ----------------------------------------------------------------------------- the parameters
# (config indices are listed explicitly so that each case has a readable id; the test below
# checks that the lists cover every entry of each kernel's `configs`.)

GEMM_CONFIGS = (0, 1)
GEMM_SHAPES = [
    (200, 136, 104),   # no dimension a multiple of the tile: M, N and K edges masked
    (128, 128, 64),    # exact tiles; KT = 2 <= STAGES - 1: every refill is past the end
    (72, 264, 328),    # several N tiles, K tail in the steady state (KT = 11 > STAGES)
    (1, 8, 8),         # one row, one 8-wide column vector, a single partial k-tile
    (40, 16, 0),       # K = 0: no k-tile at all (KT = 0), C = 0
]

MFMA_CONFIGS = (0, 1)
MFMA_SHAPES = [
    (200, 136, 104),
    (256, 128, 64),
    (3, 24, 40),
]

ATTN_CONFIGS = (0, 1, 2)
# (B, H_KV, S_Q, S_KV); H = H_KV * GROUP
ATTN_SHAPES = [
    (1, 1, 100, 100),  # S not a multiple of BR or BC: row tail and key tail masked
    (2, 1, 130, 64),   # two batches; a second (almost empty) row block; one exact key block
    (1, 2, 40, 200),   # two K/V heads (GQA maps h // GROUP); short S_Q, four key blocks
    (1, 1, 17, 1),     # a single key: one block of 63 masked keys, O = V[0] for every row
]

MOE_CONFIGS = (0, 1)
# (T, E, K, N, skew): skew routes most pairs to expert 0 (buckets of several blocks) and
# none to the last expert (an empty bucket); trailing blocks hold only sentinels.
MOE_SHAPES = [
    (5, 4, 104, 72, False),    # few tokens: every bucket padded; K and N not tile multiples
    (80, 4, 64, 136, True),    # a bucket spanning several BM blocks, an empty expert
    (1, 2, 8, 8, False),       # a single token, a single partial k-tile
    (3, 2, 0, 16, False),      # K = 0: no k-tile (config 1: only the weights' barrier)
]


def test_parameters_cover_every_config():
    assert _n_configs("gemm.py") == len(GEMM_CONFIGS)
    assert _n_configs("mi300x/gemm_mfma.py") == len(MFMA_CONFIGS)
    assert _n_configs("flash_attention.py") == len(ATTN_CONFIGS)
    assert _n_configs("moe.py") == len(MOE_CONFIGS)
    for rel in ("gemm.py", "mi300x/gemm_mfma.py", "flash_attention.py", "moe.py"):
        assert sorted(k.config_index for k in _kernels(rel)) == list(range(_n_configs(rel)))


def _tile_edge(shape, tile):
    return any(s % t for s, t in zip(shape, tile))


def test_every_kernel_has_a_shape_off_the_tile():
    for cfg in GEMM_CONFIGS:
        cx = _kernel("gemm.py", cfg).constexprs
        assert any(_tile_edge((m, n, k), (cx["BM"], cx["BN"], cx["BK"]))
                   for m, n, k in GEMM_SHAPES)
    for cfg in MFMA_CONFIGS:
        cx = _kernel("mi300x/gemm_mfma.py", cfg).constexprs
        assert any(_tile_edge((m, n, k), (cx["BM"], cx["BN"], cx["BK"]))
                   for m, n, k in MFMA_SHAPES)
    for cfg in ATTN_CONFIGS:
        cx = _kernel("flash_attention.py", cfg).constexprs
        assert any(_tile_edge((sq, skv), (cx["BR"], cx["BC"])) for _, _, sq, skv in ATTN_SHAPES)
    for cfg in MOE_CONFIGS:
        cx = _kernel("moe.py", cfg).constexprs
        assert any((t * cx["TOPK"]) % cx["BM"] for t, *_ in MOE_SHAPES)   # padded buckets


# ----------------------------------------------------------------------------- the tests

@pytest.mark.parametrize("config", GEMM_CONFIGS)
@pytest.mark.parametrize("M,N,K", GEMM_SHAPES)
def test_gemm(config, M, N, K):
    rng = np.random.default_rng(refs.seed_of("gemm", config, M, N, K))
    cx = _kernel("gemm.py", config).constexprs
    _run_and_check("gemm.py", config, refs.gemm_case(cx, M, N, K, rng))


@pytest.mark.parametrize("config", MFMA_CONFIGS)
@pytest.mark.parametrize("M,N,K", MFMA_SHAPES)
def test_gemm_mfma(config, M, N, K):
    rng = np.random.default_rng(refs.seed_of("gemm_mfma", config, M, N, K))
    cx = _kernel("mi300x/gemm_mfma.py", config).constexprs
    _run_and_check("mi300x/gemm_mfma.py", config, refs.gemm_mfma_case(cx, M, N, K, rng))


@pytest.mark.parametrize("config", ATTN_CONFIGS)
@pytest.mark.parametrize("B,H_KV,S_Q,S_KV", ATTN_SHAPES)
def test_flash_attention(config, B, H_KV, S_Q, S_KV):
    rng = np.random.default_rng(refs.seed_of("flash_attention", config, B, H_KV, S_Q, S_KV))
    cx = _kernel("flash_attention.py", config).constexprs
    H = H_KV * cx["GROUP"]
    _run_and_check("flash_attention.py", config,
                   refs.attention_case(cx, B, H, S_Q, S_KV, rng, H_KV=H_KV))


@pytest.mark.parametrize("config", MOE_CONFIGS)
@pytest.mark.parametrize("T,E,K,N,skew", MOE_SHAPES)
def test_fused_moe(config, T, E, K, N, skew):
    rng = np.random.default_rng(refs.seed_of("fused_moe", config, T, E, K, N, skew))
    cx = _kernel("moe.py", config).constexprs
    probs = None
    if skew:
        probs = np.array([0.6] + [0.4 / (E - 2)] * (E - 2) + [0.0])
    case = refs.moe_case(cx, T, E, K, N, rng, probs)
    BM = cx["BM"]
    counts = np.bincount(case.info["topk_ids"].reshape(-1), minlength=E)
    # the routing really exercises the edges it is meant to
    assert (counts % BM).any(), "no padded bucket"
    if skew:
        assert counts[0] > BM and counts[-1] == 0, counts
        assert case.info["num_tokens_post_padded"] < len(case.info["sorted_token_ids"]), \
            "no trailing sentinel-only block"
    _run_and_check("moe.py", config, case)


# ----------------------------------------------------------------------------- the routing pass

def test_moe_align_block_size_hand_example():
    # T = 3 tokens, TOPK = 2, E = 3, BM = 4: pairs p = 2 t + slot.
    # experts: token 0 -> (2, 0), token 1 -> (0, 1), token 2 -> (2, 1)
    # pair:     0 1 2 3 4 5     expert: 2 0 0 1 2 1
    # expert 0: pairs 1, 2 -> bucket [1, 2, 6, 6]; expert 1: 3, 5 -> [3, 5, 6, 6];
    # expert 2: 0, 4 -> [0, 4, 6, 6]; post-padded 12; worst case 6 + 3 * 3 = 15 -> 16.
    ids, eids, post = refs.moe_align_block_size(np.array([[2, 0], [0, 1], [2, 1]]), 3, 4)
    assert post == 12
    assert ids.tolist() == [1, 2, 6, 6, 3, 5, 6, 6, 0, 4, 6, 6, 6, 6, 6, 6]
    assert eids.tolist() == [0, 1, 2, 0]


def test_poisoned_output_is_detected():
    # The comparison itself can fail: an output the kernel did not write stays NaN.
    rng = np.random.default_rng(0)
    cx = _kernel("gemm.py", 0).constexprs
    case = refs.gemm_case(cx, 40, 16, 16, rng)
    ok, msg = case.check()
    assert not ok and "not written" in msg
    case.info["C"][...] = case.info["ref"]
    assert case.check()[0]
    case.info["C"][3, 5] += 1e-3 * (1 + abs(case.info["ref"][3, 5]))
    ok, msg = case.check()
    assert not ok and "(3, 5)" in msg
