"""The interpreter on a pipelined bf16 GEMM: numerics, provenance, dynamic checks."""

import numpy as np
import pytest

from ave_core.compiler.frontend import compile_source
from ave_core.interp import numerics as NUM
from ave_core.interp import run

from .kernels import GEMM


def _bf16(rng, shape):
    """Random bf16 values (as uint16 bits) and their float64 values."""
    bits = NUM.to_storage(__import__("ave_core.lang", fromlist=["bf16"]).bf16,
                          rng.standard_normal(shape).astype(np.float32))
    return bits, NUM.from_storage(__import__("ave_core.lang", fromlist=["bf16"]).bf16,
                                  bits).astype(np.float64)


def _kernel(src=GEMM, **cx):
    res = compile_source(src, "gemm_test.py")
    assert not res.diagnostics, [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


@pytest.mark.parametrize("M,N,K", [(64, 64, 32), (128, 64, 96), (100, 70, 50), (1, 9, 7)])
def test_gemm_matches_float64(M, N, K):
    rng = np.random.default_rng(M * 1000 + N * 10 + K)
    a_bits, a = _bf16(rng, (M, K))
    b_bits, b = _bf16(rng, (K, N))
    c = np.full((M, N), np.nan, dtype=np.float32)          # poisoned
    k = _kernel()
    res = run(k, (-(-M // 64), -(-N // 64)), [a_bits, b_bits, c])
    assert res.diagnostics == []
    ref = a @ b
    assert not np.isnan(c).any()
    err = np.linalg.norm(c - ref) / max(np.linalg.norm(ref), 1e-30)
    assert err <= 1e-5


def test_provenance_hand_derived():
    # Thread 37 = warp 1, lane 5. Warps sit at (w // 2, w % 2), so warp 1 owns rows 0..31
    # and columns 32..63 of the 64x64 C tile. Lane 5: groupID g = 5 // 4 = 1,
    # threadID_in_group t4 = 5 % 4 = 1 (PTX ISA, mma.m16n8k16 fragments).
    # A register a0 (first value): row g = 1, col 2*t4 = 2 of the first 16x16 atom block;
    # B register b0: k = 2*t4 = 2, n = g = 1 of the first 16x8 block of the warp, i.e.
    # column 32 + 1 = 33. In k step kt=1 the tile starts at k = 32.
    M = N = 64
    K = 64
    rng = np.random.default_rng(0)
    a_bits, _ = _bf16(rng, (M, K))
    b_bits, _ = _bf16(rng, (K, N))
    c = np.zeros((M, N), dtype=np.float32)
    res = run(_kernel(), (1, 1), [a_bits, b_bits, c], provenance=True)
    recs = [r for r in res.mma_trace if r.loop_indices == (("kt", 1),)]
    assert len(recs) == 1
    rec = recs[0]
    assert res.decode(int(rec.a_prov[37, 0])) == ("A", (1, 34))
    assert res.decode(int(rec.b_prov[37, 0])) == ("B", (34, 33))
    # a1 is the next column, b1 the next k
    assert res.decode(int(rec.a_prov[37, 1])) == ("A", (1, 35))
    assert res.decode(int(rec.b_prov[37, 1])) == ("B", (35, 33))


def test_missing_commit_in_epilogue_reads_unlanded_stage():
    # Committing only when a stage is issued leaves the last stage in flight: the
    # interpreter reports the read of bytes whose cp.async has not been waited for.
    src = GEMM.replace("""            issue(kt + STAGES - 1)
        ave.commit_async()""", """            issue(kt + STAGES - 1)
            ave.commit_async()""").replace("STAGES: ave.constexpr = 2", "STAGES: ave.constexpr = 3")
    k = _kernel(src)
    rng = np.random.default_rng(1)
    a_bits, _ = _bf16(rng, (64, 64))
    b_bits, _ = _bf16(rng, (64, 64))
    c = np.zeros((64, 64), dtype=np.float32)
    res = run(k, (1, 1), [a_bits, b_bits, c])
    codes = {d.code for d in res.diagnostics}
    assert "AVE304" in codes
    d = next(d for d in res.diagnostics if d.code == "AVE304")
    assert d.witness["loop_indices"] == {"kt": 1}
    assert d.range.start.line == src.splitlines().index(
        "        a = ave.ldmatrix(sA[kt % STAGES], tiled.a)")


def test_missing_barrier_after_wait_is_a_race():
    # wait_async only covers the calling thread's copies: without the barrier after it,
    # a thread reads bytes another thread's cp.async wrote in the same epoch.
    src = GEMM.replace("""        ave.wait_async(STAGES - 2)
        ave.barrier()""", """        ave.wait_async(STAGES - 2)""")
    k = _kernel(src)
    rng = np.random.default_rng(2)
    a_bits, _ = _bf16(rng, (64, 128))
    b_bits, _ = _bf16(rng, (128, 64))
    c = np.zeros((64, 64), dtype=np.float32)
    res = run(k, (1, 1), [a_bits, b_bits, c])
    races = [d for d in res.diagnostics if d.code == "AVE304"]
    assert races, [d.format_text() for d in res.diagnostics]
    assert len(races[0].witness["threads"]) == 2


def test_unmasked_edge_is_out_of_bounds():
    src = GEMM.replace("mask=lambda m, k: (m < M) & (k < K)", "mask=None")
    k = _kernel(src)
    rng = np.random.default_rng(3)
    a_bits, _ = _bf16(rng, (50, 32))
    b_bits, _ = _bf16(rng, (32, 64))
    c = np.zeros((50, 64), dtype=np.float32)
    res = run(k, (1, 1), [a_bits, b_bits, c])
    oob = [d for d in res.diagnostics if d.code == "AVE301"]
    assert oob and oob[0].witness["coordinates"] == {"A": [50, 0]}


def test_launch_form_runs_in_interpreter(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    path = tmp_path / "g.py"
    path.write_text(GEMM)
    import importlib.util
    spec = importlib.util.spec_from_file_location("g_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)           # the test's own file: defining the kernel
    A = torch.randn(70, 40).to(torch.bfloat16)
    B = torch.randn(40, 90).to(torch.bfloat16)
    C = torch.full((70, 90), float("nan"))
    mod.gemm[(2, 2)](A, B, C)
    ref = A.double() @ B.double()
    assert float((C.double() - ref).norm() / ref.norm()) <= 1e-5
    C2 = torch.full((70, 90), float("nan"))
    mod.gemm[(3, 2)](A, B, C2, BM=32)
    assert float((C2.double() - ref).norm() / ref.norm()) <= 1e-5
