"""NVIDIA (sm_80+/sm_90) instructions through MLIR's ``nvvm`` dialect: cp.async groups,
barriers, ``ldmatrix`` and ``mma.sync``.

Facts used (PTX ISA 8.x): ``ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16`` — lane ``l``
gives the address of row ``l % 8`` of matrix ``l // 8``; without ``.trans`` thread ``t``
receives, for matrix ``j``, elements ``(t // 4, 2*(t % 4) + {0, 1})`` as its register ``j``;
with ``.trans`` it receives ``(2*(t % 4) + {0, 1}, t // 4)`` of the stored matrix. Each row
is 16 contiguous bytes at a 16-byte aligned address (§9.7.14.5.15).
``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``: A is 4 x b32 (8 bf16), B 2 x b32,
C/D 4 x f32, in the register order of the atom's TV layouts (``ave_core.lang.atoms``).
"""

from __future__ import annotations

import numpy as np

from ave_core.compiler.lower.emit import LoweringError, V


class NVVMTarget:
    """Instruction selection for NVIDIA GPUs."""

    name = "nvidia"

    def commit_group(self, em) -> None:
        em.line("nvvm.cp.async.commit.group")

    def wait_group(self, em, n: int) -> None:
        em.line(f"nvvm.cp.async.wait.group {int(n)}")

    def barrier(self, em) -> None:
        em.line("nvvm.barrier0")

    def sched_barrier(self, em, mask: int) -> None:
        pass  # an AMD scheduling hint; nothing to do on NVIDIA

    def exp2(self, em, x, t: str):
        return em.op(f"math.exp2 {x} : {t}", t)      # ex2.approx.f32 on NVPTX

    def mfma_error(self, op):
        raise LoweringError("MFMA is an AMD instruction: it cannot be expressed on NVIDIA "
                            "GPUs", op)

    # ------------------------------------------------------------------ ldmatrix
    def ldmatrix(self, lw, op, src, tv) -> list:
        """Lower ``ave.ldmatrix`` (an ``ave.load`` with ``ldmatrix=True``) of a shared tile.

        The fragment's values are taken two at a time (one b32 register of two b16) and four
        registers at a time (one ``.x4``); each register must be an 8x8 b16 matrix in the
        instruction's pattern for every warp and every possible origin of the source tile —
        checked here on the concrete address tables, else a LoweringError.
        """
        em = lw.em
        if src.space != "shared" or src.dtype.bytes != 2:
            raise LoweringError("ldmatrix reads 16-bit elements from shared memory", op)
        nvals = tv.num_values
        if nvals % 2:
            raise LoweringError("ldmatrix needs an even number of values per thread", op)
        nregs = nvals // 2
        addr = lw.address_table(src, tv)              # (T, V) byte addresses, origin 0
        T = addr.shape[0]
        lane = np.arange(T) % 32
        trans = None
        for cand in (False, True):
            if all(_is_matrix(addr, r, cand, lane) for r in range(nregs)):
                trans = cand
                break
        if trans is None:
            raise LoweringError("this fragment layout cannot be loaded with ldmatrix (a "
                                "register is not an 8x8 matrix with 16-byte rows)", op)
        et = "bf16" if src.dtype.name == "bf16" else "f16"
        tid = lw.tid
        warp_base = (tid // 32) * 32
        ln = tid % 32
        g = (ln // 8) % 4
        r8 = ln % 8
        out: list = [None] * nvals
        packed: dict = {}
        for r0 in range(0, nregs, 4):
            cnt = min(4, nregs - r0)
            num = 4 if cnt == 4 else (2 if cnt >= 2 else 1)
            cnt = num
            # the address lane l provides: row (l % 8) of matrix (l // 8) % num
            a = self._lane_address(lw, src, tv, r0, cnt, trans, warp_base, r8, g)
            ptr = lw.shared_ptr(a)
            st = "!llvm.struct<(" + ", ".join(["i32"] * cnt) + ")>"
            lay = "col" if trans else "row"
            res = em.op(f"nvvm.ldmatrix {ptr} {{num = {cnt} : i32, layout = "
                        f"#nvvm.mma_layout<{lay}>, shape = #nvvm.ld_st_matrix_shape<m = 8, "
                        f"n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>}} : "
                        f"(!llvm.ptr<3>) -> {st}", st, "lm")
            for j in range(cnt):
                reg = r0 + j
                w = em.op(f"llvm.extractvalue {res}[{j}] : {st}", "i32")
                packed[2 * reg] = w
                pair = em.op(f"llvm.bitcast {w} : i32 to vector<2x{et}>", f"vector<2x{et}>")
                for h in range(2):
                    out[2 * reg + h] = em.op(
                        f"llvm.extractelement {pair}[{em.const(h)} : i32] : vector<2x{et}>", et)
        return out, packed

    def _lane_address(self, lw, src, tv, r0, cnt, trans, warp_base, r8, g):
        """The shared byte address lane ``l`` gives to one ldmatrix of registers
        ``r0 .. r0+cnt-1``. When the coordinates of those registers (and, with ``.trans``, of
        a register's two halves) differ by thread-independent steps that are linear in the
        bits of the matrix index, the coordinate is one linear form of lane bits (no
        selects: the swizzle then splits into a per-thread base and constants); otherwise
        the candidates are selected at run time."""
        tab = np.asarray(tv.coords_table())          # (T, V, R)

        def step(v_from, v_to):
            d = tab[:, v_to, :] - tab[:, v_from, :]
            return d[0].tolist() if np.all(d == d[0]) else None

        steps = [step(2 * r0, 2 * (r0 + j)) for j in range(cnt)]
        bits = [steps[1] if cnt > 1 else None, steps[2] if cnt > 2 else None]
        linear = all(x is not None for x in steps) and all(
            steps[j] == [(j & 1) * (bits[0][i] if bits[0] else 0)
                         + (j >> 1) * (bits[1][i] if bits[1] else 0)
                         for i in range(tab.shape[2])] for j in range(cnt))
        par_step = step(2 * r0, 2 * r0 + 1) if trans else None
        if trans:
            linear = linear and par_step is not None and all(
                step(2 * (r0 + j), 2 * (r0 + j) + 1) == par_step for j in range(cnt))
        if linear:
            if not trans:
                base = list(tv.coord(warp_base + 4 * r8, 2 * r0))
            else:
                base = list(tv.coord(warp_base + (r8 // 2), 2 * r0))
                par = r8 % 2
                base = [b + par * d for b, d in zip(base, par_step)]
            g0 = g % 2
            g1 = g // 2
            coords = []
            for i, b in enumerate(base):
                c = b
                if cnt > 1 and bits[0][i]:
                    c = c + g0 * bits[0][i]
                if cnt > 2 and bits[1][i]:
                    c = c + g1 * bits[1][i]
                coords.append(c)
            return lw.shared_byte(src, coords)
        cands = []
        for j in range(cnt):
            reg = r0 + j
            if not trans:
                coords = list(tv.coord(warp_base + 4 * r8, 2 * reg))
                cands.append(lw.shared_byte(src, coords))
            else:
                t_even = warp_base + (r8 // 2)
                be = lw.shared_byte(src, list(tv.coord(t_even, 2 * reg)))
                bo = lw.shared_byte(src, list(tv.coord(t_even, 2 * reg + 1)))
                cands.append(lw.select_index(r8 % 2, [be, bo]))
        return lw.select_index(g % cnt if cnt < 4 else g, cands)

    # ------------------------------------------------------------------ mma
    def mma(self, lw, op, a, b, c) -> list:
        tiled = op.attrs["tiled"]
        atom = tiled.atom
        if atom.kind == "mfma":
            self.mfma_error(op)
        if atom.kind != "mma.sync":
            raise LoweringError(f"{atom.name} is not supported on NVIDIA by the code generator "
                                "yet (mma.sync atoms are)", op)
        M, N, K = atom.shape_mnk
        if (M, N, K) != (16, 8, 16) or atom.ab_dtype.name not in ("bf16", "f16") \
                or atom.acc_dtype.name != "f32":
            raise LoweringError(f"{atom.name} {atom.ab_dtype.name}->{atom.acc_dtype.name} is "
                                "not supported by the code generator yet (m16n8k16 bf16/f16 "
                                "-> f32 is)", op)
        em = lw.em
        RM, RN, RK = tiled.reps
        Va, Vb, Vc = atom.a.num_values, atom.b.num_values, atom.c.num_values
        et = atom.ab_dtype.name
        acc = list(c.vals)

        def pack(fr, i: int) -> V:
            if fr.packed and i in fr.packed:      # straight from ldmatrix: no repacking
                return fr.packed[i]
            vals = fr.vals
            vt = f"vector<2x{et}>"
            u = em.op(f"llvm.mlir.undef : {vt}", vt)
            u = em.op(f"llvm.insertelement {vals[i]}, {u}[{em.const(0)} : i32] : {vt}", vt)
            u = em.op(f"llvm.insertelement {vals[i + 1]}, {u}[{em.const(1)} : i32] : {vt}", vt)
            return em.op(f"llvm.bitcast {u} : {vt} to i32", "i32")

        apk = {}
        bpk = {}
        for rk in range(RK):
            for rm in range(RM):
                base = Va * (rm + RM * rk)
                apk[rm, rk] = [pack(a, base + 2 * i) for i in range(Va // 2)]
            for rn in range(RN):
                base = Vb * (rn + RN * rk)
                bpk[rn, rk] = [pack(b, base + 2 * i) for i in range(Vb // 2)]
        st = "!llvm.struct<(f32, f32, f32, f32)>"
        for rk in range(RK):
            for rn in range(RN):
                for rm in range(RM):
                    cb = Vc * (rm + RM * rn)
                    A = ", ".join(str(x) for x in apk[rm, rk])
                    B = ", ".join(str(x) for x in bpk[rn, rk])
                    C = ", ".join(str(acc[cb + i]) for i in range(Vc))
                    res = em.op(
                        f"nvvm.mma.sync A[{A}] B[{B}] C[{C}] {{layoutA = #nvvm.mma_layout<row>, "
                        f"layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, "
                        f"k = 16>, multiplicandAPtxType = #nvvm.mma_type<{et}>, "
                        f"multiplicandBPtxType = #nvvm.mma_type<{et}>}} : (i32, i32, f32) -> "
                        f"{st}", st, "mma")
                    for i in range(Vc):
                        acc[cb + i] = em.op(f"llvm.extractvalue {res}[{i}] : {st}", "f32")
        return acc


def _is_matrix(addr: np.ndarray, reg: int, trans: bool, lane: np.ndarray) -> bool:
    """Does register ``reg`` (values 2reg, 2reg+1) of every warp form an ldmatrix 8x8?"""
    lo = addr[:, 2 * reg]
    hi = addr[:, 2 * reg + 1]
    T = addr.shape[0]
    for w in range(T // 32):
        ls = slice(32 * w, 32 * w + 32)
        l_lo, l_hi = lo[ls], hi[ls]
        ln = lane[ls]
        if not trans:
            if np.any(l_hi != l_lo + 2):
                return False
            rows = l_lo[ln % 4 == 0]                 # thread 4i holds row i, cols 0,1
            rowaddr = rows[ln[ln % 4 == 0] // 4]
            if np.any(rowaddr % 16):
                return False
            want = rowaddr[ln // 4] + 4 * (ln % 4)
            if np.any(l_lo != want):
                return False
        else:
            # thread t holds stored elements (2*(t%4)+i, t//4): row r = 2*(t%4)+i
            rowaddr = np.empty(8, dtype=np.int64)
            for r in range(8):
                t0 = r // 2
                rowaddr[r] = (l_lo if r % 2 == 0 else l_hi)[t0]
            if np.any(rowaddr % 16):
                return False
            want_lo = rowaddr[2 * (ln % 4)] + 2 * (ln // 4)
            want_hi = rowaddr[2 * (ln % 4) + 1] + 2 * (ln // 4)
            if np.any(l_lo != want_lo) or np.any(l_hi != want_hi):
                return False
    return True
