"""AMD (CDNA3, gfx942/gfx950) instructions through MLIR's ``rocdl`` dialect: barriers,
scheduling barriers and MFMA.

Facts used (AMD CDNA3 ISA, "Matrix Arithmetic Instructions"; the lane layouts of
``ave_core.lang.atoms.mfma_atom``): ``v_mfma_f32_32x32x8_bf16`` (LLVM
``llvm.amdgcn.mfma.f32.32x32x8bf16.1k``) takes A and B as 4 bf16 per lane (64 bits) and
C/D as 16 f32 per lane; ``v_mfma_f32_16x16x16_bf16`` takes 4 bf16 and 4 f32. A wavefront
has 64 lanes. There is no ``cp.async`` or ``ldmatrix``: global -> LDS staging is
``ave.load`` + ``ave.store`` (registers), as in examples/mi300x/gemm_mfma.py.
"""

from __future__ import annotations

from ave_core.compiler.lower.emit import LoweringError, V

MFMA = {  # (M, N, K, ab dtype) -> (intrinsic op, values of C per lane)
    (32, 32, 8, "bf16"): ("rocdl.mfma.f32.32x32x8bf16.1k", 16),
    (16, 16, 16, "bf16"): ("rocdl.mfma.f32.16x16x16bf16.1k", 4),
    (32, 32, 8, "f16"): ("rocdl.mfma.f32.32x32x8f16", 16),
    (16, 16, 16, "f16"): ("rocdl.mfma.f32.16x16x16f16", 4),
}


class ROCDLTarget:
    """Instruction selection for AMD GPUs."""

    name = "amd"

    def commit_group(self, em) -> None:
        raise LoweringError("asynchronous copies (cp.async groups) do not exist on AMD GPUs: "
                            "stage through registers with ave.load + ave.store")

    wait_group = commit_group

    def barrier(self, em) -> None:
        em.line("gpu.barrier")

    def sched_barrier(self, em, mask: int) -> None:
        em.line(f"rocdl.sched.barrier {int(mask)}")

    def exp2(self, em, x, t: str):
        if t != "f32":
            raise LoweringError("exp2 on AMD is lowered for f32 only")
        return em.op(f"\"rocdl.exp2\"({x}) : (f32) -> f32", "f32")

    def ldmatrix(self, lw, op, src, tv):
        raise LoweringError("ldmatrix is an NVIDIA instruction; on AMD load fragments with "
                            "ave.load (ds_read)", op)

    def mma(self, lw, op, a, b, c) -> list:
        tiled = op.attrs["tiled"]
        atom = tiled.atom
        if atom.kind != "mfma":
            raise LoweringError(f"{atom.name} cannot be expressed on AMD GPUs (MFMA atoms "
                                "can)", op)
        M, N, K = atom.shape_mnk
        key = (M, N, K, atom.ab_dtype.name)
        if key not in MFMA or atom.acc_dtype.name != "f32":
            raise LoweringError(f"{atom.name} {atom.ab_dtype.name}->{atom.acc_dtype.name} is "
                                "not supported by the code generator yet", op)
        ins, nc = MFMA[key]
        em = lw.em
        RM, RN, RK = tiled.reps
        Va, Vb, Vc = atom.a.num_values, atom.b.num_values, atom.c.num_values
        assert Vc == nc and Va == 4 and Vb == 4
        et = atom.ab_dtype.name
        it = "i16" if et == "bf16" else "f16"
        ot = f"vector<4x{it}>"
        acc = list(c.vals)

        def pack(vals, base) -> V:
            u = em.op(f"llvm.mlir.undef : {ot}", ot)
            for i in range(4):
                x = vals[base + i]
                if it == "i16":
                    x = em.op(f"llvm.bitcast {x} : bf16 to i16", "i16")
                u = em.op(f"llvm.insertelement {x}, {u}[{em.const(i)} : i32] : {ot}", ot)
            return u

        apk = {(rm, rk): pack(a.vals, Va * (rm + RM * rk)) for rk in range(RK) for rm in range(RM)}
        bpk = {(rn, rk): pack(b.vals, Vb * (rn + RN * rk)) for rk in range(RK) for rn in range(RN)}
        ct = f"vector<{Vc}xf32>"
        z = em.const(0)
        for rn in range(RN):
            for rm in range(RM):
                cb = Vc * (rm + RM * rn)
                u = em.op(f"llvm.mlir.undef : {ct}", ct)
                for i in range(Vc):
                    u = em.op(f"llvm.insertelement {acc[cb + i]}, {u}[{em.const(i)} : i32] : {ct}",
                              ct)
                for rk in range(RK):
                    u = em.op(f"{ins} {apk[rm, rk]}, {bpk[rn, rk]}, {u}, {z}, {z}, {z} : "
                              f"({ot}, {ot}, {ct}, i32, i32, i32) -> {ct}", ct, "mfma")
                for i in range(Vc):
                    acc[cb + i] = em.op(f"llvm.extractelement {u}[{em.const(i)} : i32] : {ct}",
                                        "f32")
        return acc
