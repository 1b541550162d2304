"""Tests of the matrix-instruction atoms (ave_core.lang.atoms).

The expected fragments are tables TRANSCRIBED BY HAND from the ISA documents, not generated
by the code under test:

* PTX ISA §9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type"
  (Figures "MMA .m16n8k16 fragment layout for matrix A / B / C with .f16/.bf16 type");
  §9.7.14.5.7 "Matrix Fragments for mma.m16n8k8"; §9.7.14.5.10 "Matrix Fragments for
  mma.m16n8k32"; §9.7.14.5.15 "Warp-level matrix load instruction: ldmatrix" (Figure
  "ldmatrix fragment layout for one 8x8 Matrix with 16-bit elements");
  §9.7.15.5.1 "Register Fragments and Shared Memory Matrix Layouts" (Figures "WGMMA .m64nNk16
  register fragment layout for accumulator matrix D / for matrix A").
* AMD CDNA3 ISA §7 (MFMA), rows copied from the AMD Matrix Instruction Calculator output
  (``matrix_calculator.py -a cdna3 -i v_mfma_f32_32x32x8_bf16 -A/-B/-D --matrix-layout``).

Each table entry is ``(row, col)`` of the operand tile (A: (m, k), B: (k, n), C: (m, n)).
"""

from __future__ import annotations

import copy
import itertools
import pickle

import numpy as np
import pytest

from ave_core.lang.atoms import (
    LdMatrixAtom,
    MMAAtom,
    TiledMMA,
    ldmatrix_atom,
    mfma_atom,
    mma_atom,
    tiled_mma,
    wgmma_atom,
)
from ave_core.lang.dtypes import bf16, f16, f32, fp8e4m3, fp8e5m2, i8
from ave_core.lang.layout import TVLayout


def frag(tv: TVLayout, lane: int):
    """[(row, col) for each value] held by ``lane``."""
    return [tuple(int(x) for x in tv.coord(lane, v)) for v in range(tv.num_values)]


# ---------------------------------------------------------------------------------------------
# mma.sync m16n8k16 (PTX ISA §9.7.14.5.8)
# ---------------------------------------------------------------------------------------------

# Figure "MMA .m16n8k16 fragment layout for matrix A with .f16/.bf16 type":
# lane: [a0, a1, a2, a3, a4, a5, a6, a7] as (row, col)
M16N8K16_A = {
    0: [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)],
    1: [(0, 2), (0, 3), (8, 2), (8, 3), (0, 10), (0, 11), (8, 10), (8, 11)],
    4: [(1, 0), (1, 1), (9, 0), (9, 1), (1, 8), (1, 9), (9, 8), (9, 9)],
    5: [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)],
    31: [(7, 6), (7, 7), (15, 6), (15, 7), (7, 14), (7, 15), (15, 14), (15, 15)],
}
# Figure "... for matrix B": lane: [b0, b1, b2, b3] as (row=k, col=n)
M16N8K16_B = {
    0: [(0, 0), (1, 0), (8, 0), (9, 0)],
    1: [(2, 0), (3, 0), (10, 0), (11, 0)],
    4: [(0, 1), (1, 1), (8, 1), (9, 1)],
    5: [(2, 1), (3, 1), (10, 1), (11, 1)],
    31: [(6, 7), (7, 7), (14, 7), (15, 7)],
}
# Figure "... for accumulator matrix C/D": lane: [c0, c1, c2, c3]
M16N8_C = {
    0: [(0, 0), (0, 1), (8, 0), (8, 1)],
    1: [(0, 2), (0, 3), (8, 2), (8, 3)],
    4: [(1, 0), (1, 1), (9, 0), (9, 1)],
    5: [(1, 2), (1, 3), (9, 2), (9, 3)],
    31: [(7, 6), (7, 7), (15, 6), (15, 7)],
}


@pytest.mark.parametrize("ab", [bf16, f16])
def test_mma_m16n8k16_fragments(ab):
    atom = mma_atom("m16n8k16", ab, f32)
    assert isinstance(atom, MMAAtom)
    assert atom.kind == "mma.sync" and atom.threads == 32 and atom.shape_mnk == (16, 8, 16)
    assert atom.name == "mma.sync.m16n8k16"
    assert atom.instruction == f"mma.sync.aligned.m16n8k16.row.col.f32.{ab.name}.{ab.name}.f32"
    assert atom.a.tile_shape == (16, 16) and atom.b.tile_shape == (16, 8)
    assert atom.c.tile_shape == (16, 8)
    assert (atom.a.num_values, atom.b.num_values, atom.c.num_values) == (8, 4, 4)
    for lane, want in M16N8K16_A.items():
        assert frag(atom.a, lane) == want, lane
    for lane, want in M16N8K16_B.items():
        assert frag(atom.b, lane) == want, lane
    for lane, want in M16N8_C.items():
        assert frag(atom.c, lane) == want, lane


def test_mma_m16n8k8_fragments():
    # §9.7.14.5.7: A a0..a3: row groupID (+8 for a2,a3), col 2*tig + (i & 1)
    atom = mma_atom("m16n8k8", bf16, f32)
    want_a = {
        0: [(0, 0), (0, 1), (8, 0), (8, 1)],
        5: [(1, 2), (1, 3), (9, 2), (9, 3)],
        31: [(7, 6), (7, 7), (15, 6), (15, 7)],
    }
    # B b0, b1: row 2*tig + i, col groupID
    want_b = {0: [(0, 0), (1, 0)], 5: [(2, 1), (3, 1)], 31: [(6, 7), (7, 7)]}
    for lane, want in want_a.items():
        assert frag(atom.a, lane) == want
    for lane, want in want_b.items():
        assert frag(atom.b, lane) == want
    for lane, want in M16N8_C.items():
        assert frag(atom.c, lane) == want


def test_mma_m16n8k32_fp8_fragments():
    # §9.7.14.5.10 (.e4m3/.e5m2): A a0..a15: row groupID for i in 0-3, 8-11, +8 otherwise;
    # col 4*tig + (i & 3), +16 for i >= 8. B b0..b7: row 4*tig + (i & 3), +16 for i >= 4.
    atom = mma_atom("m16n8k32", fp8e4m3, f32)
    assert atom.a.tile_shape == (16, 32) and atom.b.tile_shape == (32, 8)
    want_a = {
        0: [(0, 0), (0, 1), (0, 2), (0, 3), (8, 0), (8, 1), (8, 2), (8, 3),
            (0, 16), (0, 17), (0, 18), (0, 19), (8, 16), (8, 17), (8, 18), (8, 19)],
        5: [(1, 4), (1, 5), (1, 6), (1, 7), (9, 4), (9, 5), (9, 6), (9, 7),
            (1, 20), (1, 21), (1, 22), (1, 23), (9, 20), (9, 21), (9, 22), (9, 23)],
    }
    want_b = {
        0: [(0, 0), (1, 0), (2, 0), (3, 0), (16, 0), (17, 0), (18, 0), (19, 0)],
        5: [(4, 1), (5, 1), (6, 1), (7, 1), (20, 1), (21, 1), (22, 1), (23, 1)],
        31: [(12, 7), (13, 7), (14, 7), (15, 7), (28, 7), (29, 7), (30, 7), (31, 7)],
    }
    for lane, want in want_a.items():
        assert frag(atom.a, lane) == want
    for lane, want in want_b.items():
        assert frag(atom.b, lane) == want
    for lane, want in M16N8_C.items():
        assert frag(atom.c, lane) == want
    assert mma_atom("m16n8k32", fp8e5m2, f32).instruction.endswith(".f32.e5m2.e5m2.f32")


def test_mma_atom_errors():
    with pytest.raises(ValueError, match="supported"):
        mma_atom("m16n8k16", f32, f32)
    with pytest.raises(ValueError, match="supported"):
        mma_atom("m16n8k16", bf16, f16)
    with pytest.raises(ValueError, match="supported"):
        mma_atom("m8n8k4", f16, f32)
    with pytest.raises(ValueError, match="supported"):
        mma_atom("m16n8k32", i8, f32)
    with pytest.raises(ValueError):
        mma_atom("bogus")
    assert mma_atom((16, 8, 16), "f16", "f16").acc_dtype == f16


# ---------------------------------------------------------------------------------------------
# ldmatrix (PTX ISA §9.7.14.5.15)
# ---------------------------------------------------------------------------------------------

# x1 (Figure "ldmatrix fragment layout for one 8x8 Matrix with 16-bit elements"):
# lane l receives row l//4, cols 2*(l%4), +1.  lane: [(row, col) of v0, v1]
LDM_X1 = {0: [(0, 0), (0, 1)], 1: [(0, 2), (0, 3)], 5: [(1, 2), (1, 3)], 31: [(7, 6), (7, 7)]}
# x2: r0 from matrix 0 (rows 0-7), r1 from matrix 1 (rows 8-15)
LDM_X2 = {5: [(1, 2), (1, 3), (9, 2), (9, 3)], 30: [(7, 4), (7, 5), (15, 4), (15, 5)]}
# x4
LDM_X4 = {
    0: [(0, 0), (0, 1), (8, 0), (8, 1), (16, 0), (16, 1), (24, 0), (24, 1)],
    31: [(7, 6), (7, 7), (15, 6), (15, 7), (23, 6), (23, 7), (31, 6), (31, 7)],
}
# .trans: each 8x8 matrix transposed: lane l receives stored (row 2*(l%4) + j, col l//4)
LDM_X1_T = {0: [(0, 0), (1, 0)], 1: [(2, 0), (3, 0)], 5: [(2, 1), (3, 1)], 31: [(6, 7), (7, 7)]}
LDM_X4_T = {5: [(2, 1), (3, 1), (10, 1), (11, 1), (18, 1), (19, 1), (26, 1), (27, 1)]}


@pytest.mark.parametrize(
    "num,trans,table",
    [(1, False, LDM_X1), (2, False, LDM_X2), (4, False, LDM_X4), (1, True, LDM_X1_T),
     (4, True, LDM_X4_T)],
)
def test_ldmatrix_fragments(num, trans, table):
    atom = ldmatrix_atom(num, trans)
    assert isinstance(atom, LdMatrixAtom)
    assert atom.threads == 32 and atom.tile_shape == (8 * num, 8)
    assert atom.fragment.num_threads == 32 and atom.fragment.num_values == 2 * num
    assert atom.fragment.covers()
    # every stored element goes to exactly one (lane, value)
    assert len(np.unique(atom.fragment.index_table())) == 32 * 2 * num
    for lane, want in table.items():
        assert frag(atom.fragment, lane) == want, lane


def test_ldmatrix_row_provider():
    # "Addresses addr0-addr7 correspond to the rows of the first matrix, addr8-addr15 to the
    # rows of the second matrix, and so on"; .x1 uses threads 0-7, .x2 threads 0-15.
    x4 = ldmatrix_atom(4)
    assert x4.row_provider(0) == (0, 0)
    assert x4.row_provider(13) == (1, 5)
    assert x4.row_provider(31) == (3, 7)
    assert ldmatrix_atom(2).row_provider(15) == (1, 7)
    assert ldmatrix_atom(2).row_provider(16) is None
    assert ldmatrix_atom(1).row_provider(8) is None
    with pytest.raises(ValueError):
        x4.row_provider(32)
    with pytest.raises(ValueError):
        ldmatrix_atom(3)
    assert x4.instruction == "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
    assert ldmatrix_atom(2, True).instruction == "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"


def test_ldmatrix_feeds_mma():
    """ldmatrix.x4 of the four 8x8 quadrants of a row-major 16x16 A tile (matrix i = rows
    8*(i%2), cols 8*(i//2)) gives exactly the m16n8k16 A fragment; ldmatrix.x2.trans of a
    k-major 16x8 B tile (matrix i = k rows 8i..8i+7) gives the B fragment."""
    a = mma_atom("m16n8k16", bf16, f32)
    ldm = ldmatrix_atom(4)
    for lane, v in itertools.product(range(32), range(8)):
        r, c = (int(x) for x in ldm.fragment.coord(lane, v))
        i, rr = divmod(r, 8)
        assert (rr + 8 * (i % 2), c + 8 * (i // 2)) == tuple(int(x) for x in a.a.coord(lane, v))
    ldt = ldmatrix_atom(2, trans=True)
    for lane, v in itertools.product(range(32), range(4)):
        assert tuple(int(x) for x in ldt.fragment.coord(lane, v)) == tuple(
            int(x) for x in a.b.coord(lane, v)
        )


# ---------------------------------------------------------------------------------------------
# wgmma (PTX ISA §9.7.15.5.1)
# ---------------------------------------------------------------------------------------------

# Figure "WGMMA .m64nNk16 register fragment layout for accumulator matrix D", N = 16:
# thread: [d0..d7] as (row, col); warp w = thread // 32 owns rows 16w..16w+15
WGMMA_D_N16 = {
    0: [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)],
    1: [(0, 2), (0, 3), (8, 2), (8, 3), (0, 10), (0, 11), (8, 10), (8, 11)],
    4: [(1, 0), (1, 1), (9, 0), (9, 1), (1, 8), (1, 9), (9, 8), (9, 9)],
    33: [(16, 2), (16, 3), (24, 2), (24, 3), (16, 10), (16, 11), (24, 10), (24, 11)],
    127: [(55, 6), (55, 7), (63, 6), (63, 7), (55, 14), (55, 15), (63, 14), (63, 15)],
}
# Figure "WGMMA .m64nNk16 register fragment layout for matrix A": thread: [a0..a7]
WGMMA_A_K16 = {
    0: [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)],
    33: [(16, 2), (16, 3), (24, 2), (24, 3), (16, 10), (16, 11), (24, 10), (24, 11)],
    127: [(55, 6), (55, 7), (63, 6), (63, 7), (55, 14), (55, 15), (63, 14), (63, 15)],
}


def test_wgmma_fragments():
    atom = wgmma_atom("m64n16k16", bf16, f32)
    assert atom.kind == "wgmma" and atom.threads == 128 and atom.shape_mnk == (64, 16, 16)
    assert atom.b is None and atom.b_in_shared and not atom.a_in_shared
    assert atom.c.tile_shape == (64, 16) and atom.c.num_values == 8
    for t, want in WGMMA_D_N16.items():
        assert frag(atom.c, t) == want, t
    for t, want in WGMMA_A_K16.items():
        assert frag(atom.a, t) == want, t
    # N = 128: 64 values; the last one of thread 0 is d63: col 8*15 + 1 = 121, row 8
    big = wgmma_atom("m64n128k16", bf16, f32)
    assert big.c.num_values == 64
    assert frag(big.c, 0)[63] == (8, 121)
    assert frag(big.c, 0)[4] == (0, 8)
    assert big.instruction == "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
    assert wgmma_atom("m64n64k16", bf16, f32, a_in_shared=True).a is None


def test_wgmma_fp8_a_fragment():
    # Figure "WGMMA .m64nNk32 register fragment layout for matrix A": like m16n8k32 per warp
    atom = wgmma_atom("m64n32k32", fp8e4m3, f32)
    want_33 = [(16, 4), (16, 5), (16, 6), (16, 7), (24, 4), (24, 5), (24, 6), (24, 7),
               (16, 20), (16, 21), (16, 22), (16, 23), (24, 20), (24, 21), (24, 22), (24, 23)]
    assert frag(atom.a, 33) == want_33


def test_wgmma_errors():
    for bad in ("m64n12k16", "m64n264k16", "m32n64k16", "m64n64k8"):
        with pytest.raises(ValueError, match="supported"):
            wgmma_atom(bad, bf16, f32)
    with pytest.raises(ValueError, match="supported"):
        wgmma_atom("m64n64k16", fp8e4m3, f32)
    with pytest.raises(ValueError, match="supported"):
        wgmma_atom("m64n64k32", bf16, f32)


# ---------------------------------------------------------------------------------------------
# MFMA (AMD CDNA3)
# ---------------------------------------------------------------------------------------------

# v_mfma_f32_32x32x8_bf16, calculator rows "lane,v0.[15:0],v0.[31:16],v1.[15:0],v1.[31:16]":
MFMA32_A = {  # A[i][k]
    0: [(0, 0), (0, 1), (0, 2), (0, 3)],
    5: [(5, 0), (5, 1), (5, 2), (5, 3)],
    33: [(1, 4), (1, 5), (1, 6), (1, 7)],
    63: [(31, 4), (31, 5), (31, 6), (31, 7)],
}
MFMA32_B = {  # B[k][j]
    0: [(0, 0), (1, 0), (2, 0), (3, 0)],
    17: [(0, 17), (1, 17), (2, 17), (3, 17)],
    33: [(4, 1), (5, 1), (6, 1), (7, 1)],
    63: [(4, 31), (5, 31), (6, 31), (7, 31)],
}
MFMA32_D = {  # D[i][j], v0..v15
    0: [(0, 0), (1, 0), (2, 0), (3, 0), (8, 0), (9, 0), (10, 0), (11, 0),
        (16, 0), (17, 0), (18, 0), (19, 0), (24, 0), (25, 0), (26, 0), (27, 0)],
    33: [(4, 1), (5, 1), (6, 1), (7, 1), (12, 1), (13, 1), (14, 1), (15, 1),
         (20, 1), (21, 1), (22, 1), (23, 1), (28, 1), (29, 1), (30, 1), (31, 1)],
    47: [(4, 15), (5, 15), (6, 15), (7, 15), (12, 15), (13, 15), (14, 15), (15, 15),
         (20, 15), (21, 15), (22, 15), (23, 15), (28, 15), (29, 15), (30, 15), (31, 15)],
}
# v_mfma_f32_16x16x16_bf16
MFMA16_A = {
    0: [(0, 0), (0, 1), (0, 2), (0, 3)],
    17: [(1, 4), (1, 5), (1, 6), (1, 7)],
    33: [(1, 8), (1, 9), (1, 10), (1, 11)],
    63: [(15, 12), (15, 13), (15, 14), (15, 15)],
}
MFMA16_B = {
    5: [(0, 5), (1, 5), (2, 5), (3, 5)],
    17: [(4, 1), (5, 1), (6, 1), (7, 1)],
    47: [(8, 15), (9, 15), (10, 15), (11, 15)],
    63: [(12, 15), (13, 15), (14, 15), (15, 15)],
}
MFMA16_D = {
    0: [(0, 0), (1, 0), (2, 0), (3, 0)],
    17: [(4, 1), (5, 1), (6, 1), (7, 1)],
    33: [(8, 1), (9, 1), (10, 1), (11, 1)],
    63: [(12, 15), (13, 15), (14, 15), (15, 15)],
}


@pytest.mark.parametrize("ab", [bf16, f16])
def test_mfma_32x32x8(ab):
    atom = mfma_atom("32x32x8", ab, f32)
    assert atom.kind == "mfma" and atom.threads == 64 and atom.shape_mnk == (32, 32, 8)
    assert atom.instruction == f"v_mfma_f32_32x32x8_{ab.name}"
    assert (atom.a.num_values, atom.b.num_values, atom.c.num_values) == (4, 4, 16)
    for lane, want in MFMA32_A.items():
        assert frag(atom.a, lane) == want, lane
    for lane, want in MFMA32_B.items():
        assert frag(atom.b, lane) == want, lane
    for lane, want in MFMA32_D.items():
        assert frag(atom.c, lane) == want, lane


@pytest.mark.parametrize("ab", [bf16, f16])
def test_mfma_16x16x16(ab):
    atom = mfma_atom("16x16x16", ab, f32)
    assert atom.shape_mnk == (16, 16, 16)
    for lane, want in MFMA16_A.items():
        assert frag(atom.a, lane) == want, lane
    for lane, want in MFMA16_B.items():
        assert frag(atom.b, lane) == want, lane
    for lane, want in MFMA16_D.items():
        assert frag(atom.c, lane) == want, lane


def test_mfma_fp8():
    # v_mfma_f32_32x32x16_fp8_fp8: calculator row 33: A[1][8] .. A[1][15]
    atom = mfma_atom("32x32x16", fp8e4m3, f32)
    assert frag(atom.a, 33) == [(1, k) for k in range(8, 16)]
    assert atom.instruction == "v_mfma_f32_32x32x16_fp8_fp8"
    assert mfma_atom("16x16x32", fp8e5m2, f32).instruction == "v_mfma_f32_16x16x32_bf8_bf8"


def test_mfma_errors():
    with pytest.raises(ValueError, match="supported"):
        mfma_atom("32x32x4", bf16, f32)
    with pytest.raises(ValueError, match="supported"):
        mfma_atom("32x32x8", fp8e4m3, f32)
    with pytest.raises(ValueError, match="supported"):
        mfma_atom("16x16x16", bf16, f16)


# ---------------------------------------------------------------------------------------------
# every atom: covers its tiles, each element held once
# ---------------------------------------------------------------------------------------------

ALL_ATOMS = [
    mma_atom("m16n8k16", bf16, f32),
    mma_atom("m16n8k8", f16, f32),
    mma_atom("m16n8k32", fp8e4m3, f32),
    wgmma_atom("m64n8k16", bf16, f32),
    wgmma_atom("m64n256k16", f16, f32),
    wgmma_atom("m64n96k32", fp8e5m2, f16),
    mfma_atom("32x32x8", bf16, f32),
    mfma_atom("16x16x16", f16, f32),
    mfma_atom("32x32x16", fp8e4m3, f32),
    mfma_atom("16x16x32", fp8e4m3, f32),
]


@pytest.mark.parametrize("atom", ALL_ATOMS, ids=lambda a: a.name)
def test_atom_layouts_cover_exactly_once(atom):
    M, N, K = atom.shape_mnk
    tiles = {"a": (M, K), "b": (K, N), "c": (M, N)}
    for name, shape in tiles.items():
        tv = getattr(atom, name)
        if tv is None:
            continue
        assert tv.tile_shape == shape
        assert tv.num_threads == atom.threads
        assert tv.covers()
        # no replication inside one atom: threads * values == tile size, all distinct
        assert tv.num_threads * tv.num_values == shape[0] * shape[1]
        assert len(np.unique(tv.index_table())) == tv.index_table().size


def test_atom_equality_and_hash():
    assert mma_atom() == mma_atom("m16n8k16", "bf16", "f32")
    assert hash(mma_atom()) == hash(mma_atom())
    assert mma_atom() != mma_atom("m16n8k16", f16, f32)
    assert "mma.sync.m16n8k16" in repr(mma_atom())


# ---------------------------------------------------------------------------------------------
# TiledMMA
# ---------------------------------------------------------------------------------------------


def _count(tv: TVLayout):
    return np.bincount(tv.index_table().ravel(), minlength=tv.tile_size)


@pytest.mark.parametrize(
    "atom,warps,tile",
    [
        (mma_atom("m16n8k16", bf16, f32), (2, 2), (64, 64, 32)),
        (mma_atom("m16n8k16", bf16, f32), (4, 1), (64, 32, 16)),
        (mma_atom("m16n8k8", f16, f32), (1, 2), (32, 32, 16)),
        (mfma_atom("32x32x8", bf16, f32), (2, 2), (128, 64, 16)),
        (mfma_atom("16x16x16", bf16, f32), (1, 4), (32, 128, 32)),
        (wgmma_atom("m64n64k16", bf16, f32), (2, 1), (128, 64, 32)),
    ],
)
def test_tiled_mma_ownership(atom, warps, tile):
    t = tiled_mma(atom, warps, tile)
    assert isinstance(t, TiledMMA)
    WM, WN = warps
    BM, BN, BK = tile
    M, N, K = atom.shape_mnk
    assert t.threads == WM * WN * atom.threads
    assert t.k_steps == BK // K
    assert t.mma_per_warp_per_kstep == (BM // WM // M) * (BN // WN // N)
    assert t.c.tile_shape == (BM, BN) and t.c.num_threads == t.threads
    # each C element is held by exactly one thread
    assert np.all(_count(t.c) == 1)
    if t.a is not None:
        assert t.a.tile_shape == (BM, BK)
        # A replicated across the WN warps of a warp row
        assert np.all(_count(t.a) == WN)
    if t.b is not None:
        assert t.b.tile_shape == (BK, BN)
        assert np.all(_count(t.b) == WM)
    else:
        assert atom.kind == "wgmma"


def test_tiled_mma_placement():
    atom = mma_atom("m16n8k16", bf16, f32)
    t = tiled_mma(atom, (2, 2), (64, 64, 32))
    # warp w = 3 sits at (1, 1): C block rows 32..63, cols 32..63.
    # thread 3*32 + 5 (lane 5), value 0 = atom value 0 at repetition (0, 0): atom C (1, 2)
    assert tuple(int(x) for x in t.c.coord(3 * 32 + 5, 0)) == (32 + 1, 32 + 2)
    # value order: atom value fastest (4), then rm (RM = 2), then rn (RN = 4):
    # value 4 + 4*2*1 = 12 -> rm = 1, rn = 1: rows +16, cols +8
    assert tuple(int(x) for x in t.c.coord(3 * 32 + 5, 12)) == (32 + 16 + 1, 32 + 8 + 2)
    # A: warp (1, 0) = warp 2 and warp (1, 1) = warp 3 hold the same A data
    assert np.array_equal(t.a.index_table()[2 * 32:3 * 32], t.a.index_table()[3 * 32:4 * 32])
    # A value order: atom value (8), rm (2), rk (2): value 8*2*1 = 16 -> k-step 1: cols +16
    assert tuple(int(x) for x in t.a.coord(0, 16)) == (0, 16)
    # B: warps 0 and 2 (same warp column) hold the same B data
    assert np.array_equal(t.b.index_table()[0:32], t.b.index_table()[64:96])
    # B value order: atom value (4), rn (4), rk (2): value 4 -> rn = 1: cols +8
    assert tuple(int(x) for x in t.b.coord(0, 4)) == (0, 8)
    # each warp's C fragments are the atom's, translated
    for w in range(4):
        wm, wn = divmod(w, 2)
        for lane in (0, 7, 31):
            for v in range(4):
                r, c = (int(x) for x in t.c.coord(w * 32 + lane, v))
                ar, ac = (int(x) for x in atom.c.coord(lane, v))
                assert (r, c) == (32 * wm + ar, 32 * wn + ac)


def test_tiled_mma_errors_and_identity():
    atom = mma_atom("m16n8k16", bf16, f32)
    with pytest.raises(ValueError, match="BM"):
        tiled_mma(atom, (2, 2), (48, 64, 32))
    with pytest.raises(ValueError, match="BN"):
        tiled_mma(atom, (2, 2), (64, 40, 32))
    with pytest.raises(ValueError, match="BK"):
        tiled_mma(atom, (2, 2), (64, 64, 24))
    a = tiled_mma(atom, (2, 2), (64, 64, 32))
    b = TiledMMA(mma_atom(), warps=(2, 2), tile=(64, 64, 32))
    assert a == b and hash(a) == hash(b)
    assert a != tiled_mma(atom, (1, 4), (64, 64, 32))
    assert "warps=(2, 2)" in repr(a)
    # default tile: one atom per warp
    assert tiled_mma(atom, (2, 1)).tile == (32, 8, 16)


def test_atoms_pickle_and_copy():
    objs = [mma_atom(), wgmma_atom("m64n64k16"), mfma_atom(), ldmatrix_atom(2, True),
            tiled_mma(mma_atom(), (2, 2), (64, 64, 32))]
    for o in objs:
        for clone in (pickle.loads(pickle.dumps(o)), copy.deepcopy(o)):
            assert clone == o and hash(clone) == hash(o)
    assert pickle.loads(pickle.dumps(ldmatrix_atom(2, True))).fragment == ldmatrix_atom(2, True).fragment
