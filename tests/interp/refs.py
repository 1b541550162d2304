"""Independent float64 references and input builders for the example kernels.

Nothing here uses the interpreter's own number formats: bf16 is encoded/decoded with the
few lines below (round-to-nearest-even on the float32 bits), references are float64 numpy,
and the MoE routing pass (vLLM's ``moe_align_block_size``) is written out from the kernel's
docstring. Only numpy is needed (torch is optional in the dev install).

Each ``*_case`` builder returns a :class:`Case`: the runtime arguments in the kernel's
parameter order (outputs poisoned with NaN), the launch grid, and a ``check`` that decodes
the outputs and compares EVERY element with the float64 reference.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

#: relative (Frobenius) tolerance by output dtype
TOL = {"bf16": 1e-2, "f32": 1e-5}

BF16_NAN = np.uint16(0x7FC0)


# ============================================================================ bf16 (independent)

def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float -> bf16 bits (uint16), round-to-nearest-even."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), BF16_NAN, r).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """bf16 bits (uint16) -> float64."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def rand_bf16(rng: np.random.Generator, shape, scale: float = 1.0):
    """Random bf16 tensor: (bits as uint16, exact float64 values)."""
    bits = bf16_bits(rng.standard_normal(shape) * scale)
    return bits, bf16_value(bits)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ============================================================================ comparison

def compare(name: str, out: np.ndarray, ref: np.ndarray, scale: np.ndarray,
            tol: float) -> tuple[bool, str]:
    """Compare EVERY element of ``out`` (float64, decoded) with ``ref``.

    Passes when no element is NaN/inf, the relative Frobenius error is <= ``tol``, and every
    element satisfies ``|out - ref| <= tol * scale`` where ``scale`` (>= |ref|, e.g.
    ``|A| @ |B|``) is the magnitude the error of that element is measured against.
    Returns (ok, a one-line explanation).
    """
    assert out.shape == ref.shape == scale.shape, (out.shape, ref.shape, scale.shape)
    bad = ~np.isfinite(out)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return False, (f"{name}: {int(bad.sum())} of {out.size} elements not written or not "
                       f"finite (first at {idx}: {out[idx]})")
    err = np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-300)
    excess = np.abs(out - ref) - tol * np.maximum(scale, 1e-300)
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), out.shape))
    msg = (f"{name}: relative Frobenius error {err:.3g} (tol {tol:g}); worst element {worst}: "
           f"got {out[worst]!r}, want {ref[worst]!r} (|err| {abs(out[worst] - ref[worst]):.3g},"
           f" allowed {tol * scale[worst]:.3g}); {int((excess > 0).sum())} elements beyond")
    return bool(err <= tol and (excess <= 0).all()), msg


@dataclass
class Case:
    """One launch: arguments (outputs poisoned), grid, and the reference check."""

    args: list
    grid: tuple[int, ...]
    check: Callable[[], tuple[bool, str]]
    info: dict = field(default_factory=dict)


# ============================================================================ GEMM

def gemm_case(cx: dict, M: int, N: int, K: int, rng: np.random.Generator) -> Case:
    """examples/gemm.py: C(f32, M x N) = A(bf16, M x K) @ B(bf16, K x N);
    grid = (cdiv(M, BM), cdiv(N, BN))."""
    a_bits, a = rand_bf16(rng, (M, K))
    b_bits, b = rand_bf16(rng, (K, N))
    c = np.full((M, N), np.nan, dtype=np.float32)
    ref = a @ b
    scale = np.abs(a) @ np.abs(b)

    def check():
        return compare("C", c.astype(np.float64), ref, scale, TOL["f32"])
    return Case([a_bits, b_bits, c], (cdiv(M, cx["BM"]), cdiv(N, cx["BN"])), check,
                {"C": c, "ref": ref})


def gemm_mfma_case(cx: dict, M: int, N: int, K: int, rng: np.random.Generator) -> Case:
    """examples/mi300x/gemm_mfma.py: C(f32) = A(bf16, M x K) @ W(bf16, N x K)^T."""
    a_bits, a = rand_bf16(rng, (M, K))
    w_bits, w = rand_bf16(rng, (N, K))
    c = np.full((M, N), np.nan, dtype=np.float32)
    ref = a @ w.T
    scale = np.abs(a) @ np.abs(w).T

    def check():
        return compare("C", c.astype(np.float64), ref, scale, TOL["f32"])
    return Case([a_bits, w_bits, c], (cdiv(M, cx["BM"]), cdiv(N, cx["BN"])), check,
                {"C": c, "ref": ref})


# ============================================================================ attention

def attention_case(cx: dict, B: int, H: int, S_Q: int, S_KV: int, rng: np.random.Generator,
                   H_KV: int | None = None, sm_scale: float | None = None) -> Case:
    """examples/flash_attention.py: O = softmax(Q K^T * sm_scale) V per (batch, head), query
    head h reading K/V head h // GROUP; bf16 in and out; grid = (cdiv(S_Q, BR), B, H)."""
    D, G = cx["D"], cx["GROUP"]
    if H_KV is None:
        H_KV = H // G
    assert H == H_KV * G, "H must be H_KV * GROUP"
    q_bits, q = rand_bf16(rng, (B, H, S_Q, D))
    k_bits, k = rand_bf16(rng, (B, H_KV, S_KV, D))
    v_bits, v = rand_bf16(rng, (B, H_KV, S_KV, D))
    o = np.full((B, H, S_Q, D), BF16_NAN, dtype=np.uint16)
    if sm_scale is None:
        sm_scale = float(rng.uniform(0.5, 2.0) / np.sqrt(D))
    kv_head = np.arange(H) // G
    kr, vr = k[:, kv_head], v[:, kv_head]                    # (B, H, S_KV, D)
    s = np.einsum("bhqd,bhkd->bhqk", q, kr) * np.float64(np.float32(sm_scale))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    ref = np.einsum("bhqk,bhkd->bhqd", p, vr)
    scale = np.einsum("bhqk,bhkd->bhqd", p, np.abs(vr))

    def check():
        return compare("O", bf16_value(o), ref, scale, TOL["bf16"])
    return Case([q_bits, k_bits, v_bits, o, float(np.float32(sm_scale))],
                (cdiv(S_Q, cx["BR"]), B, H), check, {"O": o, "ref": ref})


# ============================================================================ MoE

def moe_align_block_size(topk_ids: np.ndarray, num_experts: int, block_m: int,
                         pad_to_max: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """vLLM's routing pass, as the fused_moe kernel's docstring states it.

    ``topk_ids`` (T, TOPK): the experts of each token. Routed pair p = token * TOPK + slot.
    Returns ``sorted_token_ids`` (EM,) i32 -- pairs grouped by expert (ascending expert, pairs
    in ascending order within a bucket), each bucket padded to a multiple of ``block_m`` with
    the sentinel T * TOPK; ``expert_ids`` (EM / block_m,) i32 -- the expert of each block;
    and ``num_tokens_post_padded``. With ``pad_to_max`` the arrays have vLLM's worst-case
    length (numel + E * (block_m - 1), rounded up to block_m): the trailing blocks hold only
    sentinels and get the valid expert id 0 (the kernel has no early return).
    """
    flat = topk_ids.reshape(-1).astype(np.int64)
    numel = flat.size
    counts = np.bincount(flat, minlength=num_experts)
    padded = (counts + block_m - 1) // block_m * block_m
    starts = np.concatenate([[0], np.cumsum(padded)])
    post = int(starts[-1])
    em = cdiv(numel + num_experts * (block_m - 1), block_m) * block_m if pad_to_max else post
    em = max(em, post)
    sorted_ids = np.full(em, numel, dtype=np.int32)
    expert_ids = np.zeros(em // block_m, dtype=np.int32)
    fill = starts[:-1].copy()
    for p, e in enumerate(flat):
        sorted_ids[fill[e]] = p
        fill[e] += 1
    for e in range(num_experts):
        expert_ids[starts[e] // block_m:starts[e + 1] // block_m] = e
    return sorted_ids, expert_ids, post


def route(rng: np.random.Generator, T: int, E: int, topk: int,
          probs: np.ndarray | None = None) -> np.ndarray:
    """Random top-k routing: TOPK distinct experts per token (optionally skewed)."""
    return np.stack([rng.choice(E, size=topk, replace=False, p=probs) for _ in range(T)]) \
        .astype(np.int32).reshape(T, topk)


def moe_case(cx: dict, T: int, E: int, K: int, N: int, rng: np.random.Generator,
             probs: np.ndarray | None = None) -> Case:
    """examples/moe.py: Out[p] = X[p // TOPK] @ W[e(p)]^T (* topk_weights[p] when
    MUL_ROUTED_WEIGHT), bf16; grid = (EM / BM, cdiv(N, BN))."""
    BM, TOPK = cx["BM"], cx["TOPK"]
    x_bits, x = rand_bf16(rng, (T, K))
    w_bits, w = rand_bf16(rng, (E, N, K), scale=0.5)
    topk_ids = route(rng, T, E, TOPK, probs)
    topk_w = rng.uniform(0.1, 1.0, size=T * TOPK).astype(np.float32)
    sorted_ids, expert_ids, post = moe_align_block_size(topk_ids, E, BM)
    out = np.full((T * TOPK, N), BF16_NAN, dtype=np.uint16)
    pair_expert = topk_ids.reshape(-1)
    xr = x[np.arange(T * TOPK) // TOPK]                           # (P, K)
    we = w[pair_expert]                                           # (P, N, K)
    ref = np.einsum("pk,pnk->pn", xr, we)
    scale = np.einsum("pk,pnk->pn", np.abs(xr), np.abs(we))
    if cx["MUL_ROUTED_WEIGHT"]:
        wt = topk_w.astype(np.float64)[:, None]
        ref, scale = ref * wt, scale * wt

    def check():
        return compare("Out", bf16_value(out), ref, scale, TOL["bf16"])
    info = {"Out": out, "ref": ref, "sorted_token_ids": sorted_ids, "expert_ids": expert_ids,
            "num_tokens_post_padded": post, "topk_ids": topk_ids}
    return Case([x_bits, w_bits, out, sorted_ids, expert_ids, topk_w],
                (len(sorted_ids) // BM, cdiv(N, cx["BN"])), check, info)


# ============================================================================ dispatch

def build_case(kernel_name: str, cx: dict, sizes: dict, rng: np.random.Generator) -> Case:
    """A case for ``kernel_name`` at ``sizes`` (dimension names as in its docstring)."""
    if kernel_name == "gemm":
        return gemm_case(cx, sizes["M"], sizes["N"], sizes["K"], rng)
    if kernel_name == "gemm_mfma":
        return gemm_mfma_case(cx, sizes["M"], sizes["N"], sizes["K"], rng)
    if kernel_name == "flash_attention":
        return attention_case(cx, sizes["B"], sizes["H"], sizes["S_Q"], sizes["S_KV"], rng,
                              H_KV=sizes.get("H_KV"))
    if kernel_name == "fused_moe":
        return moe_case(cx, sizes["T"], sizes["E"], sizes["K"], sizes["N"], rng)
    raise KeyError(kernel_name)


def seed_of(*parts: Any) -> int:
    """A stable seed from a case's identity (no Python hash randomisation)."""
    import zlib
    return zlib.crc32(repr(parts).encode())
