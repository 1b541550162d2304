"""Matrix-instruction atoms: the lane layouts of ``mma.sync``, ``wgmma``, ``ldmatrix`` and MFMA.

An **atom** is one hardware matrix instruction executed by one warp (32 lanes), one warp
group (128 threads) or one wavefront (64 lanes). Its operand and accumulator fragments are
:class:`~ave_core.lang.layout.TVLayout` s over the instruction's tiles: A over ``(M, K)``,
B over ``(K, N)``, C/D over ``(M, N)``; the thread is the lane (or the thread index within
the warp group), the value is the element index in that thread's registers **in ISA order**
(``a0, a1, ...`` for ``mma.sync``; register then low/high half for MFMA).

Sources (tables transcribed from them, and checked against hand-written tables in
``tests/lang/test_atoms.py``):

* PTX ISA (NVIDIA, "Parallel Thread Execution ISA", 8.x/9.x):
  §9.7.14.5.7 "Matrix Fragments for mma.m16n8k8",
  §9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type",
  §9.7.14.5.10 "Matrix Fragments for mma.m16n8k32",
  §9.7.14.5.15 "Warp-level matrix load instruction: ldmatrix",
  §9.7.15.5.1 "Register Fragments and Shared Memory Matrix Layouts" (wgmma; figures
  "WGMMA .m64nNk16 register fragment layout for matrix A / accumulator matrix D",
  ".m64nNk32" likewise). Section numbers drift between ISA versions; the titles do not.
  The wgmma register layouts are only given as figures in the ISA; they agree with CuTe's
  ``GMMA::CLayout_64xN`` / ``ALayout_64x16`` / ``ALayout_64x32``
  (``cute/atom/mma_traits_sm90_gmma.hpp``).
* AMD "CDNA3 Instruction Set Architecture" (MI300), §7 "Matrix Arithmetic Instructions",
  and the AMD Matrix Instruction Calculator (``ROCm/amd_matrix_instruction_calculator``,
  ``--architecture cdna3 --detail-instruction``), whose register-to-element formulas are
  quoted in each MFMA docstring.

Nothing here runs on a GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Optional

from .dtypes import DType, bf16, dtype, f16, f32, fp8e4m3, fp8e5m2
from .layout import Layout, TVLayout, composition

__all__ = [
    "MMAAtom",
    "mma_atom",
    "wgmma_atom",
    "mfma_atom",
    "LdMatrixAtom",
    "ldmatrix_atom",
    "TiledMMA",
    "tiled_mma",
]


def _tv(thr_shape, thr_stride, val_shape, val_stride, tile) -> TVLayout:
    return TVLayout(Layout((thr_shape, val_shape), (thr_stride, val_stride)), tile)


# ---------------------------------------------------------------------------------------------
# MMA atoms
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class MMAAtom:
    """One matrix multiply-accumulate instruction, ``D = A @ B + C``, with its fragments.

    Attributes:
        name: short name, ``"mma.sync.m16n8k16"``, ``"wgmma.m64n128k16"``, ``"mfma.32x32x8"``.
        kind: ``"mma.sync"`` (a warp, 32 lanes), ``"wgmma"`` (a warp group, 128 threads) or
            ``"mfma"`` (an AMD wavefront, 64 lanes).
        shape_mnk: ``(M, N, K)``.
        ab_dtype: element type of A and B (:class:`~ave_core.lang.dtypes.DType`).
        acc_dtype: element type of C and D.
        threads: 32, 128 or 64.
        a: TVLayout over the A tile ``(M, K)``, or ``None`` when A is read from shared memory
            through a matrix descriptor (``a_in_shared``).
        b: TVLayout over the B tile ``(K, N)``, or ``None`` when B is read from shared memory
            through a matrix descriptor (always for ``wgmma``: the instruction takes B as a
            64-bit shared-memory descriptor, PTX ISA "Matrix Descriptor Format"; the whole warp
            group reads the whole tile).
        c: TVLayout over the accumulator tile ``(M, N)`` (C and D share it).
        a_in_shared: A comes from a shared-memory descriptor (``wgmma`` "SS" form).
        b_in_shared: B comes from a shared-memory descriptor (``wgmma``).
        instruction: the full ISA mnemonic, e.g.
            ``"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"``,
            ``"v_mfma_f32_32x32x8_bf16"``.
        source: the ISA section the fragment tables come from.

    In every TV layout the thread is the lane (or thread of the warp group) and the value is
    the element's index in the thread's registers in ISA order.
    """

    name: str
    kind: str
    shape_mnk: tuple
    ab_dtype: DType
    acc_dtype: DType
    threads: int
    a: Optional[TVLayout]
    b: Optional[TVLayout]
    c: TVLayout
    a_in_shared: bool = False
    b_in_shared: bool = False
    instruction: str = ""
    source: str = field(default="", compare=False)

    @property
    def M(self) -> int:
        """Rows of A and C."""
        return self.shape_mnk[0]

    @property
    def N(self) -> int:
        """Columns of B and C."""
        return self.shape_mnk[1]

    @property
    def K(self) -> int:
        """The reduction extent."""
        return self.shape_mnk[2]

    def __repr__(self) -> str:
        return f"MMAAtom({self.name}, {self.ab_dtype} x {self.ab_dtype} -> {self.acc_dtype})"


def _parse_mnk(shape: Any, pattern: str, what: str) -> tuple:
    if isinstance(shape, (tuple, list)) and len(shape) == 3:
        return tuple(int(x) for x in shape)
    if isinstance(shape, str):
        m = re.fullmatch(pattern, shape.strip())
        if m:
            return tuple(int(g) for g in m.groups())
    raise ValueError(f"{what}: cannot parse the shape {shape!r}")


_PTX_MMA_SRC = {
    8: "PTX ISA §9.7.14.5.7 'Matrix Fragments for mma.m16n8k8'",
    16: "PTX ISA §9.7.14.5.8 'Matrix Fragments for mma.m16n8k16 with floating point type'",
    32: "PTX ISA §9.7.14.5.10 'Matrix Fragments for mma.m16n8k32'",
}

_PTX_TYPE = {"f32": "f32", "f16": "f16", "bf16": "bf16", "fp8e4m3": "e4m3", "fp8e5m2": "e5m2"}


def _mma_c_16x8() -> TVLayout:
    # PTX: groupID = lane >> 2, threadID_in_group = lane % 4
    #   c_i: row = groupID + 8*(i >= 2), col = threadID_in_group*2 + (i & 1)
    # tile (16, 8), index m + 16*n; lane = (tig, gid) colex (4, 8)
    return _tv((4, 8), (32, 1), (2, 2), (16, 8), (16, 8))


def mma_atom(shape: Any = "m16n8k16", ab_dtype: Any = bf16, acc_dtype: Any = f32) -> MMAAtom:
    """A warp-level ``mma.sync.aligned.<shape>.row.col`` atom (32 lanes).

    Supported combinations (A row-major "row", B column-major "col"):

    * ``"m16n8k16"``: ``f16 -> f32``, ``f16 -> f16``, ``bf16 -> f32``. PTX ISA §9.7.14.5.8:
      with ``groupID = lane >> 2``, ``tig = lane % 4``:
      A (16x16) ``a0..a7``: row ``groupID + 8*((i >> 1) & 1)``, col ``2*tig + (i & 1) +
      8*(i >= 4)``; B (16x8) ``b0..b3``: row ``2*tig + (i & 1) + 8*(i >= 2)``, col
      ``groupID``; C (16x8) ``c0..c3``: row ``groupID + 8*(i >= 2)``, col ``2*tig + (i & 1)``.
    * ``"m16n8k8"``: ``f16 -> f32``, ``f16 -> f16``, ``bf16 -> f32``. §9.7.14.5.7:
      A (16x8) ``a0..a3``: row ``groupID + 8*(i >= 2)``, col ``2*tig + (i & 1)``;
      B (8x8) ``b0, b1``: row ``2*tig + i``, col ``groupID``; C as above.
    * ``"m16n8k32"``: ``fp8e4m3 -> f32``, ``fp8e5m2 -> f32``. §9.7.14.5.10:
      A (16x32) ``a0..a15``: row ``groupID + 8*((i >> 2) & 1)``, col ``4*tig + (i & 3) +
      16*(i >= 8)``; B (32x8) ``b0..b7``: row ``4*tig + (i & 3) + 16*(i >= 4)``, col
      ``groupID``; C as above.

    Args:
        shape: ``"m16n8k16"``, ``"m16n8k8"``, ``"m16n8k32"`` or an ``(M, N, K)`` tuple.
        ab_dtype, acc_dtype: DTypes or their names.
    Raises:
        ValueError: an unsupported shape or dtype combination (the message lists them).
    """
    ab = dtype(ab_dtype)
    acc = dtype(acc_dtype)
    supported = {
        (16, 8, 16): {(f16, f32), (f16, f16), (bf16, f32)},
        (16, 8, 8): {(f16, f32), (f16, f16), (bf16, f32)},
        (16, 8, 32): {(fp8e4m3, f32), (fp8e5m2, f32)},
    }
    listing = (
        "m16n8k16 and m16n8k8 with f16->f32, f16->f16, bf16->f32; "
        "m16n8k32 with fp8e4m3->f32, fp8e5m2->f32"
    )
    try:
        mnk = _parse_mnk(shape, r"m(\d+)n(\d+)k(\d+)", "mma_atom")
    except ValueError:
        raise ValueError(f"mma_atom: unsupported shape {shape!r}; supported: {listing}") from None
    if mnk not in supported or (ab, acc) not in supported[mnk]:
        raise ValueError(
            f"mma_atom: unsupported combination shape={shape!r}, ab_dtype={ab}, "
            f"acc_dtype={acc}; supported: {listing}"
        )
    M, N, K = mnk
    if K == 16:
        # A tile (16,16), index m + 16*k. lane -> (tig: col 2*tig -> 32, gid: row -> 1)
        # value i: bit0 col+1 (16), bit1 row+8 (8), bit2 col+8 (128)
        a = _tv((4, 8), (32, 1), (2, 2, 2), (16, 8, 128), (16, 16))
        # B tile (16,8), index k + 16*n. tig: k 2*tig -> 2, gid: n -> 16
        # value i: bit0 k+1 (1), bit1 k+8 (8)
        b = _tv((4, 8), (2, 16), (2, 2), (1, 8), (16, 8))
    elif K == 8:
        # A tile (16,8), index m + 16*k; value i: bit0 col+1 (16), bit1 row+8 (8)
        a = _tv((4, 8), (32, 1), (2, 2), (16, 8), (16, 8))
        # B tile (8,8), index k + 8*n; value i: k+i
        b = _tv((4, 8), (2, 8), 2, 1, (8, 8))
    else:  # K == 32, fp8
        # A tile (16,32), index m + 16*k. tig: col 4*tig -> 64; gid: row -> 1
        # value i: bits0-1 col+(i&3) (16), bit2 row+8 (8), bit3 col+16 (256)
        a = _tv((4, 8), (64, 1), (4, 2, 2), (16, 8, 256), (16, 32))
        # B tile (32,8), index k + 32*n. tig: k 4*tig -> 4; gid: n -> 32
        # value i: bits0-1 k+(i&3) (1), bit2 k+16 (16)
        b = _tv((4, 8), (4, 32), (4, 2), (1, 16), (32, 8))
    c = _mma_c_16x8()
    t = _PTX_TYPE
    instr = f"mma.sync.aligned.m{M}n{N}k{K}.row.col.{t[acc.name]}.{t[ab.name]}.{t[ab.name]}.{t[acc.name]}"
    return MMAAtom(
        name=f"mma.sync.m{M}n{N}k{K}",
        kind="mma.sync",
        shape_mnk=mnk,
        ab_dtype=ab,
        acc_dtype=acc,
        threads=32,
        a=a,
        b=b,
        c=c,
        instruction=instr,
        source=_PTX_MMA_SRC[K],
    )


def wgmma_atom(
    shape: Any = "m64n128k16",
    ab_dtype: Any = bf16,
    acc_dtype: Any = f32,
    a_in_shared: bool = False,
) -> MMAAtom:
    """A Hopper warp-group ``wgmma.mma_async.sync.aligned.m64nNkK`` atom (128 threads).

    Thread ``t`` of the warp group is lane ``t % 32`` of warp ``w = t // 32``; with
    ``groupID = lane >> 2``, ``tig = lane % 4`` (PTX ISA §9.7.15.5.1.1, figures "WGMMA
    .m64nNk16 register fragment layout for accumulator matrix D / for matrix A", and the
    ``.m64nNk32`` ones):

    * D (64xN, ``N/2`` values ``d0..``): row ``16*w + groupID + 8*((i >> 1) & 1)``, col
      ``8*(i >> 2) + 2*tig + (i & 1)`` (warp ``w`` owns rows ``16w .. 16w+15``).
    * A from registers, k16 (f16/bf16, ``a0..a7``): row ``16*w + groupID + 8*((i >> 1) & 1)``,
      col ``2*tig + (i & 1) + 8*(i >> 2)`` (each warp: the m16n8k16 A layout).
    * A from registers, k32 (fp8, ``a0..a15``): row ``16*w + groupID + 8*((i >> 2) & 1)``, col
      ``4*tig + (i & 3) + 16*(i >> 3)``.
    * B is always read from shared memory through a matrix descriptor: ``b`` is ``None``,
      ``b_in_shared`` is True. With ``a_in_shared=True`` A is too (``a`` is ``None``).

    Supported: M = 64; N a multiple of 8 in ``[8, 256]``; ``k16`` with ``f16 -> f32``,
    ``f16 -> f16``, ``bf16 -> f32``; ``k32`` with ``fp8e4m3``/``fp8e5m2 -> f32`` or ``f16``.

    Args:
        shape: ``"m64n<N>k16"``, ``"m64n<N>k32"`` or ``(64, N, K)``.
        ab_dtype, acc_dtype: DTypes or names.
        a_in_shared: A from a shared-memory descriptor instead of registers.
    Raises:
        ValueError: unsupported shape or dtypes (the message lists what is supported).
    """
    ab = dtype(ab_dtype)
    acc = dtype(acc_dtype)
    listing = (
        "M=64, N in {8, 16, ..., 256}; k16 with f16->f32, f16->f16, bf16->f32; "
        "k32 with fp8e4m3/fp8e5m2 -> f32 or f16"
    )
    try:
        M, N, K = _parse_mnk(shape, r"m(\d+)n(\d+)k(\d+)", "wgmma_atom")
    except ValueError:
        raise ValueError(f"wgmma_atom: unsupported shape {shape!r}; supported: {listing}") from None
    ok_types = {16: {(f16, f32), (f16, f16), (bf16, f32)},
                32: {(fp8e4m3, f32), (fp8e4m3, f16), (fp8e5m2, f32), (fp8e5m2, f16)}}
    if M != 64 or N % 8 != 0 or not (8 <= N <= 256) or K not in ok_types:
        raise ValueError(f"wgmma_atom: unsupported shape {shape!r}; supported: {listing}")
    if (ab, acc) not in ok_types[K]:
        raise ValueError(
            f"wgmma_atom: unsupported dtypes ab_dtype={ab}, acc_dtype={acc} for k{K}; "
            f"supported: {listing}"
        )
    thr = (4, 8, 4)  # (tig, groupID, warp)
    # D tile (64, N), index m + 64*n: tig -> col 2*tig (128), gid -> row (1), warp -> row 16w
    # value i: bit0 col+1 (64), bit1 row+8 (8), i>>2 col+8 (512)
    c = _tv(thr, (128, 1, 16), (2, 2, N // 8), (64, 8, 512), (64, N))
    if a_in_shared:
        a = None
    elif K == 16:
        # A tile (64,16), index m + 64*k: value bit0 col+1 (64), bit1 row+8 (8), bit2 col+8
        a = _tv(thr, (128, 1, 16), (2, 2, 2), (64, 8, 512), (64, 16))
    else:
        # A tile (64,32): tig -> col 4*tig (256); value (i&3) col (64), bit2 row+8, bit3 col+16
        a = _tv(thr, (256, 1, 16), (4, 2, 2), (64, 8, 1024), (64, 32))
    t = _PTX_TYPE
    return MMAAtom(
        name=f"wgmma.m{M}n{N}k{K}",
        kind="wgmma",
        shape_mnk=(M, N, K),
        ab_dtype=ab,
        acc_dtype=acc,
        threads=128,
        a=a,
        b=None,
        c=c,
        a_in_shared=bool(a_in_shared),
        b_in_shared=True,
        instruction=(
            f"wgmma.mma_async.sync.aligned.m{M}n{N}k{K}.{t[acc.name]}.{t[ab.name]}.{t[ab.name]}"
        ),
        source=(
            "PTX ISA §9.7.15.5.1 'Register Fragments and Shared Memory Matrix Layouts' "
            f"(WGMMA .m64nNk{K} register fragment layouts)"
        ),
    )


_CDNA3_SRC = (
    "AMD CDNA3 ISA §7 'Matrix Arithmetic Instructions'; AMD Matrix Instruction Calculator "
    "(cdna3, {instr})"
)


def mfma_atom(shape: Any = "32x32x8", ab_dtype: Any = bf16, acc_dtype: Any = f32) -> MMAAtom:
    """An AMD CDNA3 (MI300, gfx942) wave64 MFMA atom (64 lanes), one block (no broadcast).

    Supported (the register-to-element formulas are those of the AMD Matrix Instruction
    Calculator, ``--architecture cdna3 --detail-instruction``; ``GPR_num`` is the register,
    ``GPR_bits`` the bit offset inside it; the value index is ``2*GPR_num + GPR_bits/16`` for
    16-bit inputs, ``4*GPR_num + GPR_bits/8`` for fp8, ``GPR_num`` for the f32 accumulator):

    * ``"32x32x8"``, ``bf16``/``f16 -> f32``: ``v_mfma_f32_32x32x8_bf16`` (the 4-bf16-per-lane
      instruction, ``v_mfma_f32_32x32x8bf16_1k`` on CDNA2) / ``v_mfma_f32_32x32x8_f16``.
      A (32x8): ``i = lane % 32``, ``k = 4*(lane // 32) + v`` (v = 0..3);
      B (8x32): ``j = lane % 32``, ``k = 4*(lane // 32) + v``;
      D (32x32, 16 values): ``i = 8*(v // 4) + 4*(lane // 32) + v % 4``, ``j = lane % 32``.
    * ``"16x16x16"``, ``bf16``/``f16 -> f32``: ``v_mfma_f32_16x16x16_bf16`` / ``_f16``.
      A (16x16): ``i = lane % 16``, ``k = 4*(lane // 16) + v``; B likewise with ``j``;
      D (16x16, 4 values): ``i = 4*(lane // 16) + v``, ``j = lane % 16``.
    * ``"32x32x16"`` / ``"16x16x32"``, ``fp8e4m3``/``fp8e5m2 -> f32``:
      ``v_mfma_f32_32x32x16_fp8_fp8`` / ``_bf8_bf8`` and ``v_mfma_f32_16x16x32_*``: as the
      16-bit ones with 8 values per lane, ``k = 8*(lane // 32) + v`` (resp. ``lane // 16``).
      Note: CDNA3's ``fp8``/``bf8`` are the FNUZ variants (E4M3FNUZ/E5M2FNUZ); the lane
      layout does not depend on the encoding.

    Args:
        shape: ``"32x32x8"``, ``"16x16x16"``, ``"32x32x16"``, ``"16x16x32"`` or ``(M, N, K)``.
        ab_dtype, acc_dtype: DTypes or names.
    Raises:
        ValueError: unsupported shape or dtypes (the message lists what is supported).
    """
    ab = dtype(ab_dtype)
    acc = dtype(acc_dtype)
    listing = (
        "32x32x8 and 16x16x16 with bf16->f32, f16->f32; "
        "32x32x16 and 16x16x32 with fp8e4m3->f32, fp8e5m2->f32"
    )
    try:
        mnk = _parse_mnk(shape, r"(\d+)x(\d+)x(\d+)", "mfma_atom")
    except ValueError:
        raise ValueError(f"mfma_atom: unsupported shape {shape!r}; supported: {listing}") from None
    sixteen = {(bf16, f32), (f16, f32)}
    eight = {(fp8e4m3, f32), (fp8e5m2, f32)}
    supported = {(32, 32, 8): sixteen, (16, 16, 16): sixteen,
                 (32, 32, 16): eight, (16, 16, 32): eight}
    if mnk not in supported or (ab, acc) not in supported[mnk]:
        raise ValueError(
            f"mfma_atom: unsupported combination shape={shape!r}, ab_dtype={ab}, "
            f"acc_dtype={acc}; supported: {listing}"
        )
    M, N, K = mnk
    kv = K // (64 // M)  # values per lane: 4 for 16-bit, 8 for fp8
    groups = 64 // M  # lane groups along k: 2 (32x32) or 4 (16x16)
    # A tile (M, K), index i + M*k: lane%M -> i (1); lane//M -> k += kv (kv*M); v -> k (M)
    a = _tv((M, groups), (1, kv * M), kv, M, (M, K))
    # B tile (K, N), index k + K*j: lane%N -> j (K); lane//N -> k += kv (kv); v -> k (1)
    b = _tv((N, groups), (K, kv), kv, 1, (K, N))
    if M == 32:
        # D tile (32,32), index i + 32*j: lane%32 -> j (32); lane//32 -> i += 4 (4);
        # v%4 -> i (1); v//4 -> i += 8 (8)
        c = _tv((32, 2), (32, 4), (4, 4), (1, 8), (32, 32))
    else:
        # D tile (16,16), index i + 16*j: lane%16 -> j (16); lane//16 -> i += 4 (4); v -> i (1)
        c = _tv((16, 4), (16, 4), 4, 1, (16, 16))
    if ab in (bf16, f16):
        suffix = ab.name
    else:
        suffix = "fp8_fp8" if ab == fp8e4m3 else "bf8_bf8"
    instr = f"v_mfma_f32_{M}x{N}x{K}_{suffix}"
    return MMAAtom(
        name=f"mfma.{M}x{N}x{K}",
        kind="mfma",
        shape_mnk=mnk,
        ab_dtype=ab,
        acc_dtype=acc,
        threads=64,
        a=a,
        b=b,
        c=c,
        instruction=instr,
        source=_CDNA3_SRC.format(instr=instr),
    )


# ---------------------------------------------------------------------------------------------
# ldmatrix
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LdMatrixAtom:
    """``ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16`` (PTX ISA §9.7.14.5.15,
    "Warp-level matrix load instruction: ldmatrix"): a warp loads ``num`` 8x8 matrices of
    16-bit elements from shared memory.

    The tile is the ``num`` matrices **as stored in shared memory**, stacked along rows:
    ``tile_shape = (8*num, 8)`` in b16 elements; matrix ``i`` is rows ``8i .. 8i+7``. Each
    row of 8 elements (16 bytes) is addressed by one lane: lanes ``8i .. 8i+7`` supply the
    row addresses of matrix ``i`` (``row_provider``); for ``.x1`` only lanes 0-7 and for
    ``.x2`` lanes 0-15 are used.

    ``fragment`` is the TVLayout of what each lane receives: register ``r_i`` holds matrix
    ``i``, value ``v = 2*i + j`` (``j`` = low/high half of the 32-bit register). Without
    ``.trans`` lane ``l`` receives row ``l // 4``, columns ``2*(l % 4) + j`` of each matrix
    (PTX Figure "ldmatrix fragment layout for one 8x8 Matrix with 16-bit elements"); with
    ``.trans`` each matrix is transposed on the way: lane ``l`` receives stored row
    ``2*(l % 4) + j``, column ``l // 4``.

    Attributes:
        num: 1, 2 or 4 matrices.
        trans: the ``.trans`` qualifier.
    Raises:
        ValueError: ``num`` not in {1, 2, 4}.
    """

    num: int = 4
    trans: bool = False

    def __post_init__(self):
        if self.num not in (1, 2, 4) or isinstance(self.num, bool):
            raise ValueError(f"ldmatrix num must be 1, 2 or 4, got {self.num!r}")
        object.__setattr__(self, "trans", bool(self.trans))

    @property
    def threads(self) -> int:
        """32 (one warp)."""
        return 32

    @property
    def elem_bits(self) -> int:
        """16 (``.b16``)."""
        return 16

    @property
    def tile_shape(self) -> tuple:
        """``(8*num, 8)`` b16 elements."""
        return (8 * self.num, 8)

    @property
    def instruction(self) -> str:
        """The PTX mnemonic."""
        return f"ldmatrix.sync.aligned.m8n8.x{self.num}{'.trans' if self.trans else ''}.shared.b16"

    def row_provider(self, lane: int) -> Optional[tuple]:
        """``(matrix index, row)`` whose start address ``lane`` supplies, or ``None`` when the
        lane's address is ignored (lanes >= ``8*num``).

        Raises:
            ValueError: ``lane`` not in ``[0, 32)``.
        """
        if not 0 <= lane < 32:
            raise ValueError(f"lane {lane} is not in [0, 32)")
        if lane >= 8 * self.num:
            return None
        return (lane // 8, lane % 8)

    @cached_property
    def fragment(self) -> TVLayout:
        """TVLayout lane -> elements received, over ``tile_shape`` (index ``row + 8*num*col``)."""
        R = 8 * self.num
        if not self.trans:
            # lane = (l%4: col 2*(l%4) -> 2R, l//4: row -> 1); value (j: col+1 -> R, i: row+8i)
            return _tv((4, 8), (2 * R, 1), (2, self.num), (R, 8), (R, 8))
        # lane = (l%4: row 2*(l%4) -> 2, l//4: col -> R); value (j: row+1 -> 1, i: row+8i)
        return _tv((4, 8), (2, R), (2, self.num), (1, 8), (R, 8))

    def __repr__(self) -> str:
        return f"LdMatrixAtom(x{self.num}{', trans' if self.trans else ''})"


def ldmatrix_atom(num: int = 4, trans: bool = False) -> LdMatrixAtom:
    """``LdMatrixAtom(num, trans)`` (the DSL's ``ave.ldmatrix_atom``)."""
    return LdMatrixAtom(num, trans)


# ---------------------------------------------------------------------------------------------
# Tiled MMA
# ---------------------------------------------------------------------------------------------


class TiledMMA:
    """An atom repeated over a grid of warps and over a workgroup tile.

    The workgroup computes a ``(BM, BN)`` tile of C from ``(BM, BK)`` of A and ``(BK, BN)`` of
    B with ``WM * WN`` copies of the atom's execution unit ("warp": a warp for ``mma.sync``,
    a warp group for ``wgmma``, a wavefront for MFMA).

    * Thread ``t = warp * atom.threads + lane``; warp ``w`` sits at ``(w // WN, w % WN)`` of
      the row-major ``(WM, WN)`` warp grid.
    * Warp ``(wm, wn)`` owns the contiguous C block rows ``wm*BM/WM ..``, columns
      ``wn*BN/WN ..``, covered by ``RM x RN`` repetitions of the atom
      (``RM = BM/WM/M``, ``RN = BN/WN/N``); the reduction is ``RK = BK/K`` k-steps.
    * A is replicated across the ``WN`` warps of a warp row (they hold the same data), B
      across the ``WM`` warps of a warp column.
    * **Value order** (CuTe's ``(V, MMA_M, MMA_N)`` fragment order): the atom's value index
      is fastest, then the repetitions, colexicographically:
      C ``v + Vc*(rm + RM*rn)``; A ``v + Va*(rm + RM*rk)``; B ``v + Vb*(rn + RN*rk)``.
      Repetition ``(rm, rn)`` of warp ``(wm, wn)`` covers C rows
      ``wm*BM/WM + rm*M + [0, M)`` and columns ``wn*BN/WN + rn*N + [0, N)``.

    Attributes:
        atom, warps ``(WM, WN)``, tile ``(BM, BN, BK)``, threads ``WM*WN*atom.threads``,
        a / b / c: TVLayouts over ``(BM, BK)``, ``(BK, BN)``, ``(BM, BN)`` (``None`` where
        the atom's operand comes from shared memory), k_steps ``BK // K``,
        mma_per_warp_per_kstep ``RM * RN``.
    Raises:
        ValueError: ``BM % (WM*M)``, ``BN % (WN*N)`` or ``BK % K`` is not 0, or non-positive
            arguments.
    """

    def __init__(self, atom: MMAAtom, warps: tuple = (1, 1), tile: tuple | None = None):
        if not isinstance(atom, MMAAtom):
            raise ValueError(f"TiledMMA expects an MMAAtom, got {atom!r}")
        try:
            WM, WN = (int(w) for w in warps)
        except (TypeError, ValueError):
            raise ValueError(f"TiledMMA warps must be (WM, WN), got {warps!r}") from None
        M, N, K = atom.shape_mnk
        if tile is None:
            tile = (WM * M, WN * N, K)
        try:
            BM, BN, BK = (int(x) for x in tile)
        except (TypeError, ValueError):
            raise ValueError(f"TiledMMA tile must be (BM, BN, BK), got {tile!r}") from None
        if min(WM, WN) < 1 or min(BM, BN, BK) < 1:
            raise ValueError(f"TiledMMA: warps {warps} and tile {tile} must be positive")
        if BM % (WM * M):
            raise ValueError(
                f"TiledMMA: BM={BM} is not a multiple of WM*M = {WM}*{M} = {WM * M}"
            )
        if BN % (WN * N):
            raise ValueError(
                f"TiledMMA: BN={BN} is not a multiple of WN*N = {WN}*{N} = {WN * N}"
            )
        if BK % K:
            raise ValueError(f"TiledMMA: BK={BK} is not a multiple of the atom's K={K}")
        self._atom = atom
        self._warps = (WM, WN)
        self._tile = (BM, BN, BK)
        RM, RN, RK = BM // (WM * M), BN // (WN * N), BK // K
        self._reps = (RM, RN, RK)
        wbm, wbn = BM // WM, BN // WN  # the C block of one warp

        def embed(tv: TVLayout, ld: int) -> Layout:
            # atom tile index p + P*q  ->  workgroup tile index p + ld*q
            P, Q = tv.tile_shape
            return composition(Layout((P, Q), (1, ld)), tv.layout)

        def build(tv, ld, w_strides, r_shape, r_strides, tile_shape):
            e = embed(tv, ld)
            thr, val = e[0], e[1]
            lay = Layout(
                ((thr.shape, WN, WM), (val.shape,) + r_shape),
                ((thr.stride,) + w_strides, (val.stride,) + r_strides),
            )
            return TVLayout(lay, tile_shape)

        # C (BM, BN), index m + BM*n
        self._c = build(atom.c, BM, (wbn * BM, wbm), (RM, RN), (M, N * BM), (BM, BN))
        # A (BM, BK), index m + BM*k; replicated over wn (stride 0)
        self._a = (
            None
            if atom.a is None
            else build(atom.a, BM, (0, wbm), (RM, RK), (M, K * BM), (BM, BK))
        )
        # B (BK, BN), index k + BK*n; replicated over wm (stride 0)
        self._b = (
            None
            if atom.b is None
            else build(atom.b, BK, (wbn * BK, 0), (RN, RK), (N * BK, K), (BK, BN))
        )

    @property
    def atom(self) -> MMAAtom:
        """The repeated atom."""
        return self._atom

    @property
    def warps(self) -> tuple:
        """``(WM, WN)``: the grid of atom execution units (warps, warp groups, wavefronts)."""
        return self._warps

    @property
    def tile(self) -> tuple:
        """``(BM, BN, BK)``."""
        return self._tile

    @property
    def threads(self) -> int:
        """``WM * WN * atom.threads``."""
        return self._warps[0] * self._warps[1] * self._atom.threads

    @property
    def reps(self) -> tuple:
        """``(RM, RN, RK)``: atom repetitions per warp along M and N, and k-steps."""
        return self._reps

    @property
    def k_steps(self) -> int:
        """``BK // K``."""
        return self._reps[2]

    @property
    def mma_per_warp_per_kstep(self) -> int:
        """``(BM/WM/M) * (BN/WN/N)``: atom instructions each warp issues per k-step."""
        return self._reps[0] * self._reps[1]

    @property
    def a(self) -> Optional[TVLayout]:
        """TVLayout of the A fragment over ``(BM, BK)`` (None if A comes from shared)."""
        return self._a

    @property
    def b(self) -> Optional[TVLayout]:
        """TVLayout of the B fragment over ``(BK, BN)`` (None if B comes from shared)."""
        return self._b

    @property
    def c(self) -> TVLayout:
        """TVLayout of the accumulator over ``(BM, BN)``."""
        return self._c

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TiledMMA):
            return NotImplemented
        return (self._atom, self._warps, self._tile) == (other._atom, other._warps, other._tile)

    def __hash__(self) -> int:
        return hash(("TiledMMA", self._atom, self._warps, self._tile))

    def __repr__(self) -> str:
        return (
            f"TiledMMA({self._atom.name} {self._atom.ab_dtype}->{self._atom.acc_dtype}, "
            f"warps={self._warps}, tile={self._tile})"
        )


def tiled_mma(atom: MMAAtom, warps: tuple = (1, 1), tile: tuple | None = None) -> TiledMMA:
    """``TiledMMA(atom, warps, tile)`` (the DSL's ``ave.tiled_mma``). ``tile`` defaults to one
    atom per warp: ``(WM*M, WN*N, K)``."""
    return TiledMMA(atom, warps, tile)
