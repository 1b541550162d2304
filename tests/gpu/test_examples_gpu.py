"""Every example kernel and config on the GPU against the float64 references of the
interpreter tests (tests/interp/refs.py: fresh random inputs seeded per case, outputs poisoned
with NaN, every element checked), at the interpreter tests' shapes (each off the tile
somewhere) plus larger ones; and the interpreter and the GPU agree on the same inputs."""

import importlib.util
import os
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.interp import refs  # noqa: E402
from tests.interp.test_examples import (ATTN_CONFIGS, ATTN_SHAPES, GEMM_CONFIGS,  # noqa: E402
                                        GEMM_SHAPES, MOE_CONFIGS, MOE_SHAPES)


def _module(rel):
    spec = importlib.util.spec_from_file_location("ex_" + rel.replace("/", "_")[:-3],
                                                  os.path.join(ROOT, "examples", rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_KERNELS = {}


def _kernel(rel, name):
    if rel not in _KERNELS:
        _KERNELS[rel] = _module(rel)
    return getattr(_KERNELS[rel], name)


def _configs(rel):
    from ave_core.compiler.frontend import compile_file
    return {k.config_index: k.constexprs for k in compile_file(
        os.path.join(ROOT, "examples", rel)).kernels}


def _to_gpu(a):
    import torch
    if isinstance(a, np.ndarray):
        if a.dtype == np.uint16:           # bf16 bits
            return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).cuda()
        return torch.from_numpy(a.copy()).cuda()
    return a


def _back(g, a):
    import torch
    if isinstance(a, np.ndarray):
        t = g.cpu()
        if a.dtype == np.uint16:
            a[...] = t.view(torch.int16).numpy().view(np.uint16)
        else:
            a[...] = t.numpy()


def _launch_gpu(kern, case, cx):
    import torch
    gargs = [_to_gpu(a) for a in case.args]
    kern[case.grid](*gargs, **cx)
    torch.cuda.synchronize()
    for g, a in zip(gargs, case.args):
        _back(g, a)


@pytest.mark.parametrize("config", GEMM_CONFIGS)
@pytest.mark.parametrize("M,N,K", GEMM_SHAPES + [(1000, 520, 296), (2048, 1024, 512)])
def test_gemm(config, M, N, K):
    cx = _configs("gemm.py")[config]
    case = refs.gemm_case(cx, M, N, K, np.random.default_rng(refs.seed_of("g", config, M, N, K)))
    _launch_gpu(_kernel("gemm.py", "gemm"), case, cx)
    ok, msg = case.check()
    assert ok, msg


@pytest.mark.parametrize("config", ATTN_CONFIGS)
@pytest.mark.parametrize("B,H_KV,S_Q,S_KV", ATTN_SHAPES + [(2, 2, 1000, 1000), (1, 4, 512, 2048)])
def test_flash_attention(config, B, H_KV, S_Q, S_KV):
    cx = _configs("flash_attention.py")[config]
    rng = np.random.default_rng(refs.seed_of("fa", config, B, H_KV, S_Q, S_KV))
    case = refs.attention_case(cx, B, H_KV * cx["GROUP"], S_Q, S_KV, rng, H_KV=H_KV)
    _launch_gpu(_kernel("flash_attention.py", "flash_attention"), case, cx)
    ok, msg = case.check()
    assert ok, msg


@pytest.mark.parametrize("config", MOE_CONFIGS)
@pytest.mark.parametrize("T,E,K,N,skew", MOE_SHAPES + [(300, 8, 512, 384, True)])
def test_fused_moe(config, T, E, K, N, skew):
    cx = _configs("moe.py")[config]
    rng = np.random.default_rng(refs.seed_of("moe", config, T, E, K, N, skew))
    probs = np.array([0.6] + [0.4 / (E - 2)] * (E - 2) + [0.0]) if skew else None
    case = refs.moe_case(cx, T, E, K, N, rng, probs)
    _launch_gpu(_kernel("moe.py", "fused_moe"), case, cx)
    ok, msg = case.check()
    assert ok, msg


@pytest.mark.parametrize("rel,name,build", [
    ("gemm.py", "gemm", lambda cx, rng: refs.gemm_case(cx, 200, 136, 104, rng)),
    ("flash_attention.py", "flash_attention",
     lambda cx, rng: refs.attention_case(cx, 1, cx["GROUP"], 100, 130, rng, H_KV=1)),
    ("moe.py", "fused_moe", lambda cx, rng: refs.moe_case(cx, 5, 4, 104, 72, rng)),
])
def test_interpreter_and_gpu_agree(rel, name, build):
    from ave_core.interp import run
    from ave_core.compiler.frontend import compile_file
    kern = _kernel(rel, name)
    for k in compile_file(os.path.join(ROOT, "examples", rel)).kernels:
        cx = k.constexprs
        cpu = build(cx, np.random.default_rng(11))
        gpu = build(cx, np.random.default_rng(11))
        res = run(k, cpu.grid, cpu.args)
        assert not res.diagnostics
        _launch_gpu(kern, gpu, cx)
        for a, b in zip(cpu.args, gpu.args):
            if not isinstance(a, np.ndarray):
                continue
            if a.dtype == np.uint16:
                x, y = refs.bf16_value(a), refs.bf16_value(b)
                # bf16 outputs: the f32 values before rounding differ slightly (accumulation
                # order, ex2.approx), so an element may round to a neighbouring bf16 value:
                # at most 2 bf16 ulps of the output's largest magnitude, most elements equal
                d = np.abs(x - y)
                assert d.max() <= 2 * 2.0 ** -8 * np.abs(x).max(), (rel, cx, d.max())
                assert (d == 0).mean() > 0.9, (rel, cx, (d == 0).mean())
            elif a.dtype == np.float32:
                np.testing.assert_allclose(b, a, rtol=2e-6, atol=2e-5)
            else:
                np.testing.assert_array_equal(a, b)
