"""Ave IR -> MLIR (``gpu``, ``arith``, ``scf``, ``llvm``, ``nvvm``) for one kernel
specialization.

Code is SIMT: every thread runs the same code; fragments are lists of per-thread scalar SSA
values (one per value index of the TV layout), loops stay ``scf.for`` loops with the
fragments as iteration arguments, and per-thread coordinates are :class:`~.emit.Sym`
expressions of the thread id. The kernel's ABI (what the launcher passes, in order):

* per tensor parameter: the data pointer (``!llvm.ptr<1>``), its sizes (``i32`` each), its
  strides in elements for every dimension but the last (``i64`` each; the innermost stride is
  1 in every specialization);
* per scalar parameter: the value (``f32`` / ``i32``);

with dynamic shared memory (``extern .shared``) of :attr:`LoweredKernel.shared_bytes`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ave_core.compiler.ir import (FragmentType, KernelIR, ScalarType, TensorType,  # noqa: F401
                                  shared_plan)
from ave_core.compiler.lower.emit import Emitter, LoweringError, Pred, Sym, V, materialize
from ave_core.compiler.lower.memory import LTensor, LTile, MemoryLowering, mlir_type
from ave_core.compiler.lower.compute import ComputeLowering, FragmentLowering, LFrag


@dataclass
class ParamABI:
    """One kernel parameter as the launcher passes it."""

    name: str
    kind: str                 # "tensor" or "scalar"
    dtype: str                # element dtype name (tensor) or scalar dtype name
    rank: int = 0

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "dtype": self.dtype, "rank": self.rank}


@dataclass
class LoweredKernel:
    """The MLIR text of one specialization and what launching it needs."""

    name: str                   # symbol name in the module
    mlir: str
    threads: int
    shared_bytes: int
    params: list[ParamABI] = field(default_factory=list)
    target: str = "sm_90"


class KernelLowering(MemoryLowering, ComputeLowering, FragmentLowering):
    """Walks one :class:`KernelIR` and emits the body of its ``gpu.func``."""

    def __init__(self, kernel: KernelIR, target: Any, chip: str) -> None:
        self.k = kernel
        self.target = target
        self.chip = chip
        self.T = kernel.threads
        self.em = Emitter()
        self.env: dict = {}
        self.shared_plan, self.shared_bytes = shared_plan(kernel)

    # ------------------------------------------------------------------ env
    def get(self, v) -> Any:
        try:
            return self.env[v]
        except KeyError:
            raise LoweringError(f"value {v!r} used before its definition") from None

    def set(self, v, x) -> None:
        self.env[v] = x

    def frag(self, t: FragmentType, vals: list) -> LFrag:
        return LFrag(t.dtype, t.layout, list(vals))

    # ------------------------------------------------------------------ helpers
    def select_int(self, cond: Any, a: Any, b: Any) -> Any:
        """``cond ? a : b`` for ints/Syms; ``cond`` an int/Sym (nonzero = true) or Pred."""
        em = self.em
        if isinstance(cond, int):
            return a if cond else b
        if isinstance(a, int) and isinstance(b, int) and a == b:
            return a
        if isinstance(cond, Sym):
            cond = Pred(em.op(f"arith.cmpi ne, {cond.value()}, {em.const(0)} : i32", "i1"))
        av, bv = materialize(em, a), materialize(em, b)
        r = em.op(f"arith.select {cond.v}, {av}, {bv} : i32", "i32")
        lo = []
        for x in (a, b):
            lo.append(x.range() if isinstance(x, Sym) else (x, x))
        rng = (None if None in (lo[0][0], lo[1][0]) else min(lo[0][0], lo[1][0]),
               None if None in (lo[0][1], lo[1][1]) else max(lo[0][1], lo[1][1]))
        return em.atom(r, *rng)

    def select_int_eq(self, x: Any, k: int, a: Any, b: Any) -> Any:
        """``x == k ? a : b``."""
        if isinstance(x, int):
            return a if x == k else b
        p = Pred(self.em.op(f"arith.cmpi eq, {x.value()}, {self.em.const(k)} : i32", "i1"))
        return self.select_int(p, a, b)

    def select_index(self, g: Any, cands: list) -> Any:
        """``cands[g]`` for a runtime index ``g``: the terms common to every candidate (say a
        loop's stage offset) are added after the selection, so the selected rest stays
        loop-invariant (and is hoisted out of the loop by LLVM)."""
        em = self.em
        syms = [c if isinstance(c, Sym) else Sym(em, {}, int(c)) for c in cands]
        first = syms[0]
        common = {k: c for k, c in first.terms.items()
                  if all(x.terms.get(k) == c for x in syms[1:])}
        csym = Sym.make(em, common, 0)
        rests = [x - csym for x in syms]
        a = rests[0]
        for j in range(1, len(rests)):
            a = self.select_int_eq(g, j, rests[j], a)
        return a + csym

    def address_table(self, t: LTile, tv: Any) -> np.ndarray:
        """Byte addresses ``(T, V)`` of a fragment's elements in a shared tile, with every
        runtime origin at 0 (a numeric check of access patterns)."""
        tab = np.asarray(tv.coords_table())
        T, Vn, R = tab.shape
        origin = [o if isinstance(o, int) else 0 for o in t.origin]
        bc = [np.full((T, Vn), o, dtype=np.int64) for o in origin]
        for ld, bd in enumerate(t.dims):
            bc[bd] = bc[bd] + tab[:, :, ld]
        off = np.asarray(t.layout(tuple(bc)), dtype=np.int64)
        base = t.base if isinstance(t.base, int) else 0
        return base + off * t.dtype.bytes

    @contextlib.contextmanager
    def guarded(self, g: Any):
        """Emit the body under ``scf.if g`` (no branch for True)."""
        if g is True or g is None:
            yield
            return
        if g is False:
            raise LoweringError("a statically dead access")
        self.em.line(f"scf.if {g.v} {{")
        self.em.push()
        try:
            yield
        finally:
            self.em.pop()
            self.em.line("}")

    # ------------------------------------------------------------------ driver
    def lower(self) -> LoweredKernel:
        em = self.em
        k = self.k
        args = []
        abi = []
        for p in k.params:
            if isinstance(p.type, TensorType):
                i = len(abi)
                ptr = V(f"%arg{i}_ptr", "!llvm.ptr<1>")
                args.append(f"{ptr}: !llvm.ptr<1> {{llvm.noalias}}")
                sizes = []
                for d in range(p.type.rank):
                    nm = f"%arg{i}_size{d}"
                    args.append(f"{nm}: i32")
                    sizes.append(em.atom(V(nm, "i32"), 0, 2 ** 31 - 1))
                strides = []
                for d in range(p.type.rank - 1):
                    nm = f"%arg{i}_stride{d}"
                    args.append(f"{nm}: i64")
                    strides.append(V(nm, "i64"))
                self.set(p.value, LTensor(p.name, p.type.dtype, ptr, sizes, strides))
                abi.append(ParamABI(p.name, "tensor", p.type.dtype.name, p.type.rank))
            elif isinstance(p.type, ScalarType):
                i = len(abi)
                t = mlir_type(p.type.dtype)
                nm = f"%arg{i}_{p.type.dtype.name}"
                args.append(f"{nm}: {t}")
                if t == "i32":
                    self.set(p.value, em.atom(V(nm, "i32")))
                else:
                    self.set(p.value, V(nm, t))
                abi.append(ParamABI(p.name, "scalar", p.type.dtype.name))
            else:
                raise LoweringError(f"parameter {p.name}: {p.type} is not supported by the "
                                    "code generator")
        tid_raw = em.op("gpu.thread_id x", "index", "tid")
        tid = em.op(f"arith.index_cast {tid_raw} : index to i32", "i32", "tid")
        self.tid = em.atom(tid, 0, self.T - 1)
        self.smem_base = em.op("llvm.mlir.addressof @ave_smem : !llvm.ptr<3>", "!llvm.ptr<3>",
                               "smem")
        self.exec_block(k.body)
        fname = f"ave_{k.name}"
        body = "\n".join(em.lines)
        chip = self.chip
        if self.target.name == "amd":
            target_attr = f'#rocdl.target<chip = "{chip}", O = 3>'
            smem = (f"    llvm.mlir.global internal @ave_smem() {{addr_space = 3 : i32, "
                    f"alignment = 128 : i64}} : !llvm.array<{max(self.shared_bytes, 1)} x i8>\n")
        else:
            target_attr = f'#nvvm.target<chip = "{chip}", features = "+ptx80", O = 3>'
            smem = ("    llvm.mlir.global external @ave_smem() {addr_space = 3 : i32, alignment = "
                    "128 : i64} : !llvm.array<0 x i8>\n")
        mlir = (
            "module attributes {gpu.container_module} {\n"
            f"  gpu.module @ave_module [{target_attr}] {{\n"
            f"{smem}"
            f"    gpu.func @{fname}({', '.join(args)}) kernel attributes "
            f"{{known_block_size = array<i32: {self.T}, 1, 1>}} {{\n"
            f"{body}\n"
            "      gpu.return\n"
            "    }\n"
            "  }\n"
            "}\n")
        return LoweredKernel(fname, mlir, self.T, self.shared_bytes, abi, chip)

    def exec_block(self, blk) -> list | None:
        for op in blk.ops:
            if op.name in ("scf.yield", "ave.yield"):
                return [self.get(v) for v in op.operands]
            h = getattr(self, "op_" + op.name.replace(".", "_"), None)
            if h is None:
                raise LoweringError(f"{op.name} is not supported by the code generator yet", op)
            try:
                h(op)
            except LoweringError as e:
                if e.op is None:
                    e.op = op
                raise
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
                raise LoweringError(f"{op.name} could not be lowered ({type(e).__name__}: {e}); "
                                    "this construct is not supported by the code generator "
                                    "yet", op) from e
        return None

    def exec_mask_region(self, region, args: list) -> Any:
        """Evaluate a mask region at ``args``. Its values are defined only inside it, so
        each evaluation simply rebinds them (no copy of the environment)."""
        for a, c in zip(region.args, args):
            self.env[a] = c
        res = self.exec_block(region)
        m = res[0]
        if isinstance(m, bool):
            return m
        if isinstance(m, (int, np.integer)):
            return bool(m)
        return m


def lower_kernel(kernel: KernelIR, chip: str = "sm_90") -> LoweredKernel:
    """Lower one specialization to an MLIR module (text) for ``chip`` (``sm_80``/``sm_90``:
    NVIDIA; ``gfx942``/``gfx950``: AMD CDNA3).

    Raises:
        LoweringError: an op or layout the code generator cannot express on that target (its
            ``op`` carries the source range), or a kernel written for the other vendor.
    """
    from ave_core.compiler.ir import Loc
    where = Loc(kernel.file, kernel.range)
    if chip.startswith("sm_"):
        if kernel.target != "nvidia" or kernel.warp_size != 32:
            raise LoweringError(f"kernel {kernel.name} is written for AMD GPUs "
                                f"(target={kernel.target!r}, {kernel.warp_size}-lane "
                                f"wavefronts, MFMA); it cannot be compiled for {chip}",
                                loc=where)
        from ave_core.compiler.lower.nvvm import NVVMTarget
        return KernelLowering(kernel, NVVMTarget(), chip).lower()
    if chip.startswith("gfx"):
        if kernel.target != "amd" or kernel.warp_size != 64:
            raise LoweringError(f"kernel {kernel.name} is written for NVIDIA GPUs "
                                f"(target={kernel.target!r}, {kernel.warp_size}-lane warps, "
                                f"mma.sync); it cannot be compiled for {chip}", loc=where)
        from ave_core.compiler.lower.rocdl import ROCDLTarget
        return KernelLowering(kernel, ROCDLTarget(), chip).lower()
    raise LoweringError(f"unknown target {chip!r} (sm_80, sm_90, gfx942, gfx950)", loc=where)
