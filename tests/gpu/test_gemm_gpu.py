"""examples/gemm.py on the GPU: fresh random inputs, NaN-poisoned output, float64 reference,
every element checked; and the CPU interpreter agrees with the GPU on the same inputs."""

import importlib.util
import os

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = [dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3),
           dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=4)]


def _gemm():
    spec = importlib.util.spec_from_file_location("ex_gemm", os.path.join(ROOT, "examples",
                                                                          "gemm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.gemm


@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
@pytest.mark.parametrize("M, N, K", [(256, 256, 256), (1000, 520, 296), (64, 8, 8),
                                     (2048, 1024, 512), (129, 136, 1000)])
def test_gemm_matches_float64(cfg, M, N, K):
    import torch
    c = CONFIGS[cfg]
    g = torch.Generator(device="cuda").manual_seed(1000 * M + 10 * N + K + cfg)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    B = torch.randn(K, N, device="cuda", generator=g).to(torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
    gemm = _gemm()
    grid = ((M + c["BM"] - 1) // c["BM"], (N + c["BN"] - 1) // c["BN"])
    gemm[grid](A, B, C, **c)
    torch.cuda.synchronize()
    ref = A.double() @ B.double()
    assert not torch.isnan(C).any(), "elements left unwritten (NaN poison survived)"
    # f32 accumulation of exact bf16 products: error <= K * 2**-23 * sum|a||b| (loose bound)
    bound = (A.double().abs() @ B.double().abs()) * (K * 2.0 ** -23) + 1e-6
    err = (C.double() - ref).abs()
    assert bool((err <= bound).all()), f"max error {err.max().item()}"


def test_gemm_gpu_agrees_with_interpreter():
    import torch
    M, N, K = 130, 136, 200
    g = torch.Generator(device="cuda").manual_seed(7)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    B = torch.randn(K, N, device="cuda", generator=g).to(torch.bfloat16)
    gemm = _gemm()
    c = CONFIGS[0]
    grid = ((M + 127) // 128, (N + 127) // 128)
    Cg = torch.full((M, N), float("nan"), device="cuda")
    gemm[grid](A, B, Cg, **c)
    Cc = torch.full((M, N), float("nan"))
    gemm[grid](A.cpu(), B.cpu(), Cc, **c)          # CPU tensors: the interpreter
    torch.cuda.synchronize()
    np.testing.assert_allclose(Cg.cpu().numpy(), Cc.numpy(), rtol=2e-6, atol=2e-5)


def test_bad_arguments_are_refused_before_launch():
    import torch
    gemm = _gemm()
    A = torch.randn(64, 64, device="cuda").to(torch.bfloat16)
    B = torch.randn(64, 64, device="cuda").to(torch.bfloat16)
    C = torch.empty(64, 64, device="cuda")
    with pytest.raises(TypeError, match="dtype"):
        gemm[(1, 1)](A.float(), B, C, **CONFIGS[0])
    with pytest.raises(ValueError, match="innermost stride"):
        gemm[(1, 1)](A.t(), B, C, **CONFIGS[0])
    with pytest.raises(ValueError, match="aligned|pitch"):
        gemm[(1, 1)](A[:, 1:], B, C, **CONFIGS[0])
