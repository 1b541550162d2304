"""Code generation without a GPU: PTX inspection, ptxas resources, the cache key, the warm-cache
launch path, and clear diagnostics for what the code generator does not support yet."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from ave_core.compiler.frontend import compile_file, compile_source
from ave_core.compiler.lower import LoweringError, lower_kernel
from ave_core.jit import cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMM = os.path.join(ROOT, "examples", "gemm.py")

mlir = pytest.importorskip("mlir.ir", reason="the MLIR bindings (pip install 'ave[gpu]')")


def _gemm_kernels():
    res = compile_file(GEMM)
    assert not [d for d in res.diagnostics if d.severity.label == "error"]
    return res.kernels


@pytest.fixture(scope="module")
def gemm_ptx():
    from ave_core.jit.pipeline import mlir_to_ptx
    out = []
    for k in _gemm_kernels():
        ptx, _ = mlir_to_ptx(lower_kernel(k).mlir)
        out.append((k, ptx))
    return out


def test_mma_count_per_k_step(gemm_ptx):
    for k, ptx in gemm_ptx:
        c = k.constexprs
        per_kstep = c["BM"] * c["BN"] * c["BK"] // (16 * 8 * 16) // (c["WM"] * c["WN"])
        n = len(re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32", ptx))
        # the main loop is one k-tile per iteration and is not unrolled: its body holds all
        assert n == per_kstep, (c, n, per_kstep)


def test_cp_async_moves_16_bytes_and_ldmatrix_is_used(gemm_ptx):
    for k, ptx in gemm_ptx:
        cps = re.findall(r"cp\.async\.(c[ag])\.shared\.global[^;]*\], (\d+)", ptx)
        assert cps and all(size == "16" and kind == "cg" for kind, size in cps)
        c = k.constexprs
        # per k-tile: (BM*BK + BK*BN) bf16 / 8 per vector / 128 threads; STAGES-1 in the prologue
        per_tile = (c["BM"] * c["BK"] + c["BK"] * c["BN"]) // 8 // 128
        assert len(cps) == per_tile * c["STAGES"]
        lds = re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4(\.trans)?\.shared\.b16", ptx)
        # A: BM/WM x BK per warp = (BM/WM/16)*(BK/16) x4 loads; B (.trans): (BN/WN/16)*(BK/16)
        na = (c["BM"] // c["WM"] // 16) * (c["BK"] // 16)
        nb = (c["BN"] // c["WN"] // 16) * (c["BK"] // 16)
        assert sum(1 for t in lds if not t) == na and sum(1 for t in lds if t) == nb
        assert re.search(rf"cp\.async\.wait_group\s+{c['STAGES'] - 2};", ptx)
        assert "bar.sync" in ptx


@pytest.mark.skipif(not __import__("shutil").which("ptxas"), reason="ptxas is not on PATH")
def test_ptxas_reports_no_spills(gemm_ptx):
    from ave_core.jit.pipeline import ptx_to_cubin
    for k, ptx in gemm_ptx:
        cubin, res, ver = ptx_to_cubin(ptx, "sm_90")
        assert cubin[:4] == b"\x7fELF"
        assert res["spill_store_bytes"] == 0 and res["spill_load_bytes"] == 0
        assert 0 < res["registers"] <= 255


def test_every_key_input_changes_the_cache_key(monkeypatch):
    k0, k1 = _gemm_kernels()
    base = cache.cache_key(k0, "sm_90", {"pointer_align": 16})
    assert cache.cache_key(k0, "sm_90", {"pointer_align": 16}) == base      # deterministic
    assert cache.cache_key(k1, "sm_90", {"pointer_align": 16}) != base      # constexprs / IR
    assert cache.cache_key(k0, "sm_80", {"pointer_align": 16}) != base      # target
    assert cache.cache_key(k0, "sm_90", {"pointer_align": 8}) != base       # specialization
    monkeypatch.setattr(cache, "ave_version", lambda: "9.9.9")
    assert cache.cache_key(k0, "sm_90", {"pointer_align": 16}) != base      # Ave's version


def test_moving_the_kernel_in_its_file_keeps_the_key():
    text = open(GEMM, encoding="utf-8").read()
    a = compile_source(text, GEMM).kernels[0]
    b = compile_source("\n\n# a comment\n" + text, GEMM).kernels[0]
    assert cache.cache_key(a, "sm_90", {}) == cache.cache_key(b, "sm_90", {})


def test_a_changed_kernel_changes_the_key():
    text = open(GEMM, encoding="utf-8").read()
    a = compile_source(text, GEMM).kernels[0]
    b = compile_source(text.replace("vector_bytes=8,", "vector_bytes=4,"), GEMM).kernels[0]
    assert cache.cache_key(a, "sm_90", {}) != cache.cache_key(b, "sm_90", {})


@pytest.mark.skipif(not __import__("shutil").which("ptxas"), reason="ptxas is not on PATH")
def test_warm_cache_launch_needs_no_mlir_llvm_z3_or_pygls(tmp_path):
    env = dict(os.environ, AVE_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-m", "ave_core.jit", "compile", GEMM], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "registers" in p.stdout and "analysis proved" in p.stdout
    script = textwrap.dedent(f"""
        import sys, importlib.abc, json
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split('.')[0] in ('mlir', 'llvmlite', 'z3', 'pygls', 'lsprotocol'):
                    raise ImportError('blocked: ' + name)
        sys.meta_path.insert(0, Block())
        import ave_core.jit as jit, ave_core.jit.driver as drv
        seen = []
        class Fake:
            def __init__(self, meta, cubin): seen.append((meta, cubin))
            def __call__(self, grid, args): seen.append(('launch', grid, len(args)))
        drv.CudaLauncher = Fake
        drv.device_target = lambda: 'sm_90'
        import importlib.util
        spec = importlib.util.spec_from_file_location('g', {GEMM!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        jit.launch(m.gemm, (2, 3), [object(), object(), object()], dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=4))
        meta, cubin = seen[0]
        assert cubin[:4] == b'\\x7fELF' and meta['symbol'] == 'ave_gemm'
        assert seen[1] == ('launch', (2, 3), 3)
        bad = [n for n in ('mlir', 'llvmlite', 'z3', 'pygls') if n in sys.modules]
        print(json.dumps({{'bad': bad, 'shared': meta['shared_bytes']}}))
    """)
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"bad": [], "shared": 2 * (4 * 64 * 32 + 4 * 32 * 128)}


def test_cli_list_and_clear(tmp_path):
    env = dict(os.environ, AVE_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    (tmp_path / "abc").mkdir()
    p = subprocess.run([sys.executable, "-m", "ave_core.jit", "clear"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "removed 1" in p.stdout
    p = subprocess.run([sys.executable, "-m", "ave_core.jit", "list"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and str(tmp_path) in p.stdout


BLOCK_REDUCE = """import ave_core.lang as ave


@ave.kernel(threads=128)
def colmax(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(4, 1),
                          tile=(64, 8, 16))
    x = ave.load(X[0:64, 0:8], tiled.c)
    m = ave.max(x, axis=0)
    ave.store(Y[0:64, 0:8], x - m[None, :])
"""


def test_unsupported_construct_is_an_error_with_its_range():
    # a column maximum over 4 warps needs shared memory: not lowered yet -> a clear error
    res = compile_source(BLOCK_REDUCE, "colmax.py")
    assert not res.diagnostics
    with pytest.raises(LoweringError) as info:
        lower_kernel(res.kernels[0])
    e = info.value
    assert "across warps" in str(e) and "not supported by the code generator yet" in str(e)
    assert e.op.loc.file == "colmax.py" and e.op.loc.range.start.line == 8
    assert e.op.loc.range.start.character == 8


def test_every_example_lowers_for_sm_90():
    for rel in ("gemm.py", "flash_attention.py", "moe.py"):
        for k in compile_file(os.path.join(ROOT, "examples", rel)).kernels:
            text = lower_kernel(k).mlir
            assert "gpu.func @ave_" in text and "nvvm.mma.sync" in text, (rel, k.constexprs)


def test_assume_emits_no_code():
    # the causal specialization states `ave.assume(S_Q <= S_KV)`: it lowers, and the MLIR
    # is the non-causal one's plus the mask only (no trap, no comparison of the two sizes
    # beyond what the kernel computes)
    from ave_core.compiler.frontend import specialize
    path = os.path.join(ROOT, "examples", "flash_attention.py")
    text = open(path, encoding="utf-8").read()
    k = specialize(text, path, "flash_attention", dict(BR=128, BC=64, GROUP=8, CAUSAL=True))
    assert any(op.name == "ave.assume" for op in k.walk())
    mlir_text = lower_kernel(k).mlir
    assert "gpu.func @ave_" in mlir_text and "assume" not in mlir_text
    assert "llvm.trap" not in mlir_text and "cf.assert" not in mlir_text


MFMA = os.path.join(ROOT, "examples", "mi300x", "gemm_mfma.py")


def test_cross_vendor_kernels_are_refused_with_the_kernels_range():
    k = compile_file(MFMA).kernels[0]
    with pytest.raises(LoweringError, match="written for AMD GPUs.*cannot be compiled for sm_90"):
        lower_kernel(k, "sm_90")
    g = _gemm_kernels()[0]
    with pytest.raises(LoweringError) as info:
        lower_kernel(g, "gfx942")
    assert "written for NVIDIA GPUs" in str(info.value)
    loc = info.value.location
    assert loc.file.endswith("gemm.py") and loc.range == g.range


@pytest.fixture(scope="module")
def amd_compiled():
    pytest.importorskip("llvmlite", reason="AMD code generation needs llvmlite ('ave[amd]')")
    pytest.importorskip("ziglang", reason="linking HSACO needs ziglang's ld.lld ('ave[amd]')")
    from ave_core.jit.pipeline import compile_kernel
    return [(k, compile_kernel(k, "gfx942")) for k in compile_file(MFMA).kernels]


def test_amdgcn_has_the_mfma_per_k_step_and_an_hsaco(amd_compiled):
    for k, c in amd_compiled:
        cx = k.constexprs
        # per wave (BM/2 x BN/2 of C with 32x32 atoms) and k-tile (BK / 8 k-steps)
        per_kstep = (cx["BM"] // 2 // 32) * (cx["BN"] // 2 // 32) * (cx["BK"] // 8)
        n = len(re.findall(r"v_mfma_f32_32x32x8_?bf16", c.ptx))
        assert n == per_kstep, (cx, n)
        assert "ds_read" in c.ptx and "ds_write" in c.ptx and "s_barrier" in c.ptx
        assert c.cubin[:4] == b"\x7fELF" and c.cubin[18] == 0xE0       # EM_AMDGPU
        assert c.resources["vgpr_spills"] == 0
        assert c.resources["lds_bytes"] == 2 * 2 * (cx["BM"] + cx["BN"]) * cx["BK"]


def test_hip_launch_without_rocm_is_a_clear_error():
    from ave_core.jit.driver import HipLauncher
    pytest.importorskip("hip", reason="hip-python is not installed")
    with pytest.raises(RuntimeError, match="ROCm runtime|hip-python"):
        HipLauncher({"params": [], "threads": 256, "symbol": "ave_x"}, b"")


def test_dump_writes_every_stage(tmp_path):
    env = dict(os.environ, AVE_CACHE_DIR=str(tmp_path / "c"), PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-m", "ave_core.jit", "compile", GEMM, "--check", "off",
                        "--dump", str(tmp_path / "d")], env=env, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0 and "ptxas" in p.stderr:
        pytest.skip("ptxas is not on PATH")
    assert p.returncode == 0, p.stderr
    d = tmp_path / "d" / "gemm-0"
    names = sorted(os.listdir(d))
    assert names == ["ave.ir", "input.mlir", "kernel.ll", "kernel.ptx", "lowered.mlir"]
    assert "nvvm.mma.sync" in (d / "input.mlir").read_text()
    assert "llvm.nvvm" in (d / "kernel.ll").read_text()
    assert ".target sm_90" in (d / "kernel.ptx").read_text()


def test_a_violated_specialization_is_not_compiled(tmp_path, monkeypatch):
    from ave_core.jit import KernelCheckFailed, compile_cached
    monkeypatch.setenv("AVE_CACHE_DIR", str(tmp_path))
    broken = os.path.join(ROOT, "examples", "broken", "gemm_swizzle_mismatch.py")
    k = compile_file(broken).kernels[0]
    with pytest.raises(KernelCheckFailed) as info:
        compile_cached(k, "sm_90", mode="error")
    assert any(d.code == "AVE201" for d in info.value.diagnostics)
    assert os.listdir(tmp_path) == []                  # nothing compiled, nothing cached
