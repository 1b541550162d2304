"""mma.sync and ldmatrix, one instruction at a time: the hardware and the interpreter agree bit
for bit (inputs chosen so every product and partial sum is exact in f32)."""

import importlib.util
import os

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
HERE = os.path.dirname(os.path.abspath(__file__))


def _mod():
    spec = importlib.util.spec_from_file_location("one_instruction",
                                                  os.path.join(HERE, "one_instruction.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_mma_m16n8k16_bit_exact():
    import torch
    m = _mod()
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 9, size=(16, 16)).astype(np.float32)
    b = rng.integers(-8, 9, size=(16, 8)).astype(np.float32)
    c = rng.integers(-64, 65, size=(16, 8)).astype(np.float32) + 0.5
    ref = a.astype(np.float64) @ b + c                     # exact in f32
    A = torch.from_numpy(a).to(torch.bfloat16)
    B = torch.from_numpy(b).to(torch.bfloat16)
    Cg = torch.from_numpy(c).cuda()
    m.mma_one[1](A.cuda(), B.cuda(), Cg)
    Cc = torch.from_numpy(c.copy())
    m.mma_one[1](A, B, Cc)                                   # the interpreter
    torch.cuda.synchronize()
    g = Cg.cpu().numpy()
    assert np.array_equal(g.view(np.uint32), Cc.numpy().view(np.uint32))
    assert np.array_equal(g.astype(np.float64), ref)


def test_ldmatrix_x4_and_trans_through_a_swizzle_bit_exact():
    import torch
    m = _mod()
    # every element distinct: its own row/column code, exactly representable in bf16
    a = (np.arange(64 * 32).reshape(64, 32) % 251 - 125).astype(np.float32)
    b = (np.arange(32 * 32).reshape(32, 32) % 241 - 120).astype(np.float32) * 2
    A = torch.from_numpy(a).to(torch.bfloat16)
    B = torch.from_numpy(b).to(torch.bfloat16)
    outs = {}
    for dev in ("cuda", "cpu"):
        YA = torch.full((64, 32), float("nan"), dtype=torch.bfloat16, device=dev)
        YB = torch.full((32, 32), float("nan"), dtype=torch.bfloat16, device=dev)
        m.ldmatrix_swizzled[1](A.to(dev), B.to(dev), YA, YB)
        outs[dev] = (YA.cpu(), YB.cpu())
    torch.cuda.synchronize()
    for g, c, want in zip(outs["cuda"], outs["cpu"], (A, B)):
        assert torch.equal(g.view(torch.int16), c.view(torch.int16))
        assert torch.equal(g.view(torch.int16), want.view(torch.int16))
