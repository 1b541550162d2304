"""Tests of the CuTe layout algebra (ave_core.lang.layout).

Expected values are worked out by hand (in the comments) or taken from the examples of the
CuTe documentation ("CuTe Layouts" 01_layout.md, "CuTe Layout Algebra" 02_layout_algebra.md).
"""

from __future__ import annotations

import copy
import itertools
import pickle

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ave_core.lang.layout import (
    ComposedLayout,
    Layout,
    Swizzle,
    TVLayout,
    XorSwizzle2D,
    coalesce,
    col_major,
    composition,
    crd2idx,
    flatten,
    idx2crd,
    layout,
    make_layout,
    product,
    row_major,
    swizzled,
    tv_layout,
    xor_swizzle,
)

FAST = settings(max_examples=150, deadline=None)


# ---------------------------------------------------------------------------------------------
# IntTuple helpers
# ---------------------------------------------------------------------------------------------


def test_product_and_flatten():
    assert product(8) == 8
    assert product((4, 8)) == 32
    assert product(((2, 4), (3, (1, 5)))) == 120
    assert product(()) == 1
    assert flatten(8) == (8,)
    assert flatten(((2, 4), 8)) == (2, 4, 8)
    assert flatten(((2, (3, 4)), (5,))) == (2, 3, 4, 5)


def test_idx2crd_colex():
    # (4, 8): i -> (i % 4, i // 4)
    assert idx2crd(13, (4, 8)) == (1, 3)
    assert idx2crd(0, (4, 8)) == (0, 0)
    assert idx2crd(31, (4, 8)) == (3, 7)
    # ((2,2),8): 13 % 4 = 1 -> (1 % 2, 1 // 2) = (1, 0); 13 // 4 = 3
    assert idx2crd(13, ((2, 2), 8)) == ((1, 0), 3)
    # (2,(3,4)): 17 % 2 = 1; 17 // 2 = 8 -> (8 % 3, 8 // 3) = (2, 2)
    assert idx2crd(17, (2, (3, 4))) == (1, (2, 2))
    assert idx2crd(5, 8) == 5
    # every index round-trips through a compact column-major layout
    shape = ((2, 3), 4)
    L = col_major(shape)
    for i in range(product(shape)):
        assert L(idx2crd(i, shape)) == i


def test_idx2crd_vectorized():
    idx = np.arange(32)
    r, c = idx2crd(idx, (4, 8))
    assert np.array_equal(r, idx % 4) and np.array_equal(c, idx // 4)


def test_crd2idx_forms():
    shape, stride = ((2, 4), 8), ((1, 16), 2)
    # full coordinate ((1,2),3) -> 1*1 + 2*16 + 3*2 = 39
    assert crd2idx(((1, 2), 3), shape, stride) == 39
    # int 13 -> mode 0 gets 13 % 8 = 5 = (1, 2) -> 1 + 32 = 33; mode 1 gets 13 // 8 = 1 -> 2
    assert crd2idx(13, shape, stride) == 35
    # partially congruent: 5 for the nested mode is decomposed in (2,4): (1,2)
    assert crd2idx((5, 1), shape, stride) == 35
    # the last mode absorbs indices beyond the size (CuTe's extension): 64 -> (0, 8) -> 16
    assert crd2idx(64, shape, stride) == 16


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------


def test_layout_basics_and_repr():
    L = Layout((4, 8), (8, 1))
    assert repr(L) == "(4,8):(8,1)"
    assert L.shape == (4, 8) and L.stride == (8, 1)
    assert L.rank == 2 and L.size == 32 and L.cosize == 32
    N = Layout(((2, 4), 8), ((1, 16), 2))
    assert repr(N) == "((2,4),8):((1,16),2)"
    assert N.rank == 2 and N.size == 64
    # cosize = 1*1 + 3*16 + 7*2 + 1 = 64
    assert N.cosize == 64
    one = Layout(8, 1)
    assert repr(one) == "8:1" and one.rank == 1 and one[0] == one
    assert repr(Layout((8,), (1,))) == "(8):(1)"
    # lists are normalized to tuples
    assert Layout([4, [2, 2]], [1, [4, 8]]) == Layout((4, (2, 2)), (1, (4, 8)))
    # default stride: compact column-major, as CuTe's make_layout(shape)
    assert Layout((4, 8)) == Layout((4, 8), (1, 4))
    assert layout((2, 3), (3, 1)) == Layout((2, 3), (3, 1))


def test_layout_cosize_doc_example():
    # 01_layout.md: (4,(3,2)):(2,(8,1)) -> max offset 2*3 + 8*2 + 1*1 = 23, cosize 24
    assert Layout((4, (3, 2)), (2, (8, 1))).cosize == 24
    # a 0-stride mode adds nothing
    assert Layout((4, 8), (0, 1)).cosize == 8


def test_layout_getitem_and_call_forms():
    N = Layout(((2, 4), 8), ((1, 16), 2))
    assert N[0] == Layout((2, 4), (1, 16))
    assert N[1] == Layout(8, 2)
    assert N(((1, 2), 3)) == 39
    assert N((1, 2), 3) == 39  # one argument per top-level mode
    assert N(13) == 35
    with pytest.raises(ValueError):
        N(1, 2, 3)
    with pytest.raises(ValueError):
        N((1, 2, 3))


def test_hand_computed_offsets():
    # (2,3):(3,1) is row-major 2x3; colex index i = (i % 2, i // 2):
    # i: 0->(0,0)=0 1->(1,0)=3 2->(0,1)=1 3->(1,1)=4 4->(0,2)=2 5->(1,2)=5
    assert Layout((2, 3), (3, 1)).offsets().tolist() == [0, 3, 1, 4, 2, 5]
    # ((2,2),2):((4,1),2): i -> ((i%2, (i//2)%2), i//4) -> 4*(i%2) + (i//2)%2 + 2*(i//4)
    # 0:0 1:4 2:1 3:5 4:2 5:6 6:3 7:7
    assert Layout(((2, 2), 2), ((4, 1), 2)).offsets().tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    # (3,(2,2)):(1,(6,3)): i -> (i%3, ((i//3)%2, i//6)) -> i%3 + 6*((i//3)%2) + 3*(i//6)
    # 0 1 2 | 6 7 8 | 3 4 5 | 9 10 11
    assert Layout((3, (2, 2)), (1, (6, 3))).offsets().tolist() == [
        0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11,
    ]
    # a 0-stride (broadcast) mode: (2,4):(0,1) -> 0 0 1 1 2 2 3 3
    assert Layout((2, 4), (0, 1)).offsets().tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_row_col_major():
    assert row_major((4, 8)) == Layout((4, 8), (8, 1))
    assert col_major((4, 8)) == Layout((4, 8), (1, 4))
    assert row_major((2, 3, 4)) == Layout((2, 3, 4), (12, 4, 1))
    assert col_major((2, 3, 4)) == Layout((2, 3, 4), (1, 2, 6))
    # hierarchical: strides over all leaves, keeping the structure
    assert row_major(((2, 2), 4)) == Layout(((2, 2), 4), ((8, 4), 1))
    assert col_major(((2, 2), 4)) == Layout(((2, 2), 4), ((1, 2), 4))
    assert row_major((4, 8)).is_compact() and col_major((3, 5)).is_compact()
    # row-major (r, c) -> r*8 + c
    R = row_major((4, 8))
    for r, c in itertools.product(range(4), range(8)):
        assert R(r, c) == r * 8 + c


def test_injective_compact():
    assert Layout((4, 8), (8, 1)).is_injective()
    assert Layout((4, 8), (8, 1)).is_compact()
    assert not Layout((2, 4), (0, 1)).is_injective()
    strided = Layout((4, 2), (1, 8))
    assert strided.is_injective() and not strided.is_compact()


def test_flatten_method():
    N = Layout(((2, 4), 8), ((1, 16), 2))
    assert N.flatten() == Layout((2, 4, 8), (1, 16, 2))
    assert np.array_equal(N.flatten().offsets(), N.offsets())
    assert Layout(8, 2).flatten() == Layout(8, 2)


def test_coalesce_examples():
    # 02_layout_algebra.md: (2,(1,6)):(1,(6,2)) -> 12:1
    assert coalesce(Layout((2, (1, 6)), (1, (6, 2)))) == Layout(12, 1)
    # (4,2,8):(1,4,16): 4*1 == 4 merges -> 8:1, then 8*1 != 16 -> (8,8):(1,16)
    assert coalesce(Layout((4, 2, 8), (1, 4, 16))) == Layout((8, 8), (1, 16))
    # row-major cannot merge
    assert Layout((4, 8), (8, 1)).coalesce() == Layout((4, 8), (8, 1))
    # all size-1 -> 1:0
    assert coalesce(Layout((1, 1), (3, 5))) == Layout(1, 0)
    # 0-stride modes merge with 0-stride modes: (2,3):(0,0) -> 6:0
    assert coalesce(Layout((2, 3), (0, 0))) == Layout(6, 0)


def test_make_layout():
    assert make_layout(Layout(4, 1), Layout(8, 4)) == Layout((4, 8), (1, 4))
    assert make_layout(Layout((2, 2), (1, 2)), Layout(3, 4)) == Layout(((2, 2), 3), ((1, 2), 4))


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


def test_composition_doc_examples():
    # 02_layout_algebra.md, "Computing Composition": (6,2):(8,2) o (4,3):(3,1)
    #   = ((6,2):(8,2) o 4:3, (6,2):(8,2) o 3:1) = ((2,2),3):((24,2),8)
    assert composition(Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))) == Layout(
        ((2, 2), 3), ((24, 2), 8)
    )
    # 20:2 o (5,4):(4,1) = (5,4):(8,2)
    assert composition(Layout(20, 2), Layout((5, 4), (4, 1))) == Layout((5, 4), (8, 2))
    # (10,2):(16,4) o (5,4):(1,5) = (5,(2,2)):(16,(80,4))
    assert composition(Layout((10, 2), (16, 4)), Layout((5, 4), (1, 5))) == Layout(
        (5, (2, 2)), (16, (80, 4))
    )
    # (3,6,2,8):(w,x,y,z) o 16:9 = (1,2,2,4):(9w,3x,y,z) -> size-1 dropped: (2,2,4):(3x,y,z)
    w, x, y, z = 1, 5, 100, 1000  # chosen so that nothing coalesces
    assert composition(Layout((3, 6, 2, 8), (w, x, y, z)), Layout(16, 9)) == Layout(
        (2, 2, 4), (3 * x, y, z)
    )


def test_composition_by_mode_tiler():
    # 02_layout_algebra.md "By-mode composition": (12,(4,8)):(59,(13,1)) o <3:4, 8:2>
    #   = (3,(2,4)):(236,(26,1))
    A = Layout((12, (4, 8)), (59, (13, 1)))
    assert composition(A, (Layout(3, 4), Layout(8, 2))) == Layout((3, (2, 4)), (236, (26, 1)))
    # ints in a tiler mean n:1; None keeps the mode
    R = row_major((8, 16))
    assert composition(R, (4, 8)) == Layout((4, 8), (16, 1))
    assert composition(R, (None, 8)) == Layout((8, 8), (16, 1))
    # a shorter tiler keeps the remaining modes
    assert composition(Layout((4, 8, 2), (1, 4, 32)), (2,)) == Layout((2, 8, 2), (1, 4, 32))
    with pytest.raises(ValueError, match="more modes"):
        composition(Layout(8, 1), (2, 2))


def test_composition_zero_stride_and_int():
    A = row_major((4, 8))
    assert composition(A, Layout(4, 0)) == Layout(4, 0)
    # int inner n means n:1: first 8 elements of colex (4,8):(8,1) -> (4,2):(8,1)
    assert composition(A, 8) == Layout((4, 2), (8, 1))


def test_composition_errors():
    # (3,4):(1,10) o 4:2: indices 0,2,4,6 -> offsets 0,2,11,20 are not affine;
    # stride 2 and extent 3 do not divide one another
    with pytest.raises(ValueError, match="[Ss]tride divisibility"):
        composition(Layout((3, 4), (1, 10)), Layout(4, 2))
    # (4,8):(1,100) o 6:1: 4 elements fit the first mode, 6 % 4 != 0
    with pytest.raises(ValueError, match="[Ss]hape divisibility"):
        composition(Layout((4, 8), (1, 100)), Layout(6, 1))
    # divisibility holds mode by mode, but 3 + 4 = 7 crosses the first mode (extent 6) of
    # the outer layout: outer(7) = 1 + 100 = 101, not 7
    with pytest.raises(ValueError, match="mode boundary"):
        composition(Layout((6, 5), (1, 100)), Layout((2, 3), (3, 2)))
    # ... but when everything lands inside the first mode it is representable
    assert composition(Layout((3, 4), (1, 10)), Layout(2, 2)) == Layout(2, 2)


def _rand_layout_strategy(max_modes, shapes, strides, nested=True):
    leaf = st.tuples(st.sampled_from(shapes), st.sampled_from(strides))
    flat = st.lists(leaf, min_size=1, max_size=max_modes)

    @st.composite
    def strat(draw):
        leaves = draw(flat)
        shapes_ = [s for s, _ in leaves]
        strides_ = [d for _, d in leaves]
        if nested and len(leaves) >= 2 and draw(st.booleans()):
            # group the first two leaves into a nested mode
            shp = ((shapes_[0], shapes_[1]),) + tuple(shapes_[2:])
            std = ((strides_[0], strides_[1]),) + tuple(strides_[2:])
        elif len(leaves) == 1 and draw(st.booleans()):
            shp, std = shapes_[0], strides_[0]
        else:
            shp, std = tuple(shapes_), tuple(strides_)
        return Layout(shp, std)

    return strat()


POW2 = [1, 2, 4, 8]
pow2_layouts = _rand_layout_strategy(4, POW2, [0, 1, 2, 4, 8, 16, 32, 64])
pow2_inner = _rand_layout_strategy(3, POW2, [0, 1, 2, 4, 8, 16])
any_layouts = _rand_layout_strategy(4, [1, 2, 3, 4, 5, 6, 8], [0, 1, 2, 3, 5, 6, 7, 12, 24])
any_inner = _rand_layout_strategy(3, [1, 2, 3, 4, 6], [0, 1, 2, 3, 4, 6])


def _filtered_injective(B):
    """B without its stride-0 modes is injective: the condition under which composition
    distributes over B's modes (CuTe: "left-distributive ... when B is injective")."""
    leaves = [(s, d) for s, d in zip(flatten(B.shape), flatten(B.stride)) if d != 0]
    if not leaves:
        return True
    return Layout(tuple(s for s, _ in leaves), tuple(d for _, d in leaves)).is_injective()


@FAST
@given(pow2_layouts, pow2_inner)
def test_composition_property_pow2(A, B):
    assume(_filtered_injective(B))
    # powers of two always satisfy the divisibility conditions
    R = composition(A, B)
    assert isinstance(R, Layout)
    assert R.size == B.size
    assert np.array_equal(R.offsets(), A(B.offsets()))
    # result is congruent in structure with B's shape (by-mode distribution)
    assert R(idx2crd(B.size - 1, B.shape)) == A(B(B.size - 1))


@FAST
@given(any_layouts, any_inner)
def test_composition_property_general(A, B):
    assume(_filtered_injective(B))
    try:
        R = composition(A, B)
    except ValueError as e:
        assert "divisibility" in str(e) or "mode boundary" in str(e)
        return
    assert R.size == B.size
    assert np.array_equal(R.offsets(), A(B.offsets()))


@FAST
@given(any_layouts)
def test_coalesce_preserves_function(L):
    C = coalesce(L)
    assert C.size == L.size
    assert np.array_equal(C.offsets(), L.offsets())
    assert C.depth <= 1


@FAST
@given(any_layouts)
def test_vectorized_equals_scalar(L):
    off = L.offsets()
    assert off.dtype == np.int64
    assert off.tolist() == [L(i) for i in range(L.size)]
    # a coordinate array per mode
    crd = idx2crd(np.arange(L.size), L.shape)
    assert np.array_equal(np.asarray(L(crd)), off)
    # scalar evaluation through natural coordinates agrees too
    for i in range(min(L.size, 16)):
        assert L(idx2crd(i, L.shape)) == off[i]


# ---------------------------------------------------------------------------------------------
# Swizzles and composed layouts
# ---------------------------------------------------------------------------------------------


def test_swizzle_hand():
    sw = Swizzle(3, 3, 3)
    assert repr(sw) == "Sw<3,3,3>"
    assert sw.yyy_mask == 0b111_000_000 and sw.zzz_mask == 0b000_111_000
    assert sw.bits_needed == 9
    # x = row 1 of a 64-element (128 B of b16) row: offset 64 = 0b001_000_000 -> yyy=1 -> xor 8
    assert sw(64) == 72
    # offset 64*5 + 8*2 + 3 = 339: yyy=5, zzz=2 -> zzz 2^5=7 -> 64*5 + 8*7 + 3 = 379
    assert sw(339) == 379
    # the low M bits are never touched
    assert all(sw(x) % 8 == x % 8 for x in range(512))
    # negative shift: Sw<2,0,-2>: yyy bits [0,2), zzz bits [2,4): x ^ ((x & 3) << 2)
    neg = Swizzle(2, 0, -2)
    assert neg.yyy_mask == 0b0011 and neg.zzz_mask == 0b1100
    assert neg(0b0110) == 0b0110 ^ 0b1000
    # vectorized
    xs = np.arange(512)
    assert np.array_equal(sw(xs), [sw(int(x)) for x in xs])


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 4), st.integers(0, 4), st.integers(0, 3), st.booleans())
def test_swizzle_bijection(B, M, extra, negative):
    S = B + extra
    if negative:
        S = -S
    sw = Swizzle(B, M, S)
    dom = np.arange(1 << sw.bits_needed)
    img = sw(dom)
    assert np.array_equal(np.sort(img), dom)
    assert np.array_equal(sw(img), dom)  # an involution


def test_swizzle_errors():
    with pytest.raises(ValueError):
        Swizzle(3, 3, 2)  # |S| < B
    with pytest.raises(ValueError):
        Swizzle(-1, 3, 3)
    with pytest.raises(ValueError):
        Swizzle(2, -1, 3)
    with pytest.raises(ValueError):
        Swizzle(2, 1, -1)


def test_composed_layout():
    base = row_major((8, 64))
    cl = swizzled(Swizzle(3, 3, 3), base)
    assert isinstance(cl, ComposedLayout)
    assert cl.shape == (8, 64) and cl.size == 512 and cl.cosize == 512
    assert cl.inner == base and cl.outer == Swizzle(3, 3, 3) and cl.offset == 0
    # (1, 0) -> row-major 64 -> swizzled 72 (see test_swizzle_hand)
    assert cl(1, 0) == 72
    assert cl((5, 19)) == Swizzle(3, 3, 3)(5 * 64 + 19)
    assert cl.is_compact()
    assert np.array_equal(cl.offsets(), Swizzle(3, 3, 3)(base.offsets()))
    assert repr(cl) == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    assert cl == swizzled(Swizzle(3, 3, 3), row_major((8, 64)))
    assert hash(cl) == hash(swizzled(Swizzle(3, 3, 3), row_major((8, 64))))
    # an offset
    off = ComposedLayout(Swizzle(1, 0, 1), 1, Layout(4, 1))
    # x -> sw(1 + x): 1->1^0=1? 1=0b01: yyy bit1=0 -> 1; 2=0b10 -> 2^1=3; 3 -> 3^1=2; 4 -> 4
    assert off.offsets().tolist() == [1, 3, 2, 4]
    assert off.cosize == 5
    # composition with a swizzle outer gives a ComposedLayout, and composes further by mode
    c2 = composition(Swizzle(3, 3, 3), base)
    assert c2 == cl
    c3 = composition(cl, (Layout(4, 2), Layout(8, 1)))
    assert isinstance(c3, ComposedLayout)
    assert c3.inner == Layout((4, 8), (128, 1))
    for r, c in itertools.product(range(4), range(8)):
        assert c3(r, c) == cl(2 * r, c)
    with pytest.raises(ValueError):
        composition(Swizzle(3, 3, 3), (Layout(2, 1),))


def test_xor_swizzle2d():
    xs = xor_swizzle((16, 64), vec=8, per_phase=2, max_phase=8)
    assert isinstance(xs, XorSwizzle2D)
    assert xs.shape == (16, 64) and xs.size == 1024 and xs.cosize == 1024
    # row 0: phase 0: identity
    assert [xs(0, c) for c in range(64)] == list(range(64))
    # row 3: phase (3 // 2) % 8 = 1: group g -> g ^ 1; c=0 -> group 1 -> 3*64 + 8
    assert xs(3, 0) == 3 * 64 + 8
    assert xs(3, 9) == 3 * 64 + 0 + 1  # group 1 -> 0, lane 1
    # row 15: phase 7: c=61 -> group 7 ^ 7 = 0, lane 5
    assert xs(15, 61) == 15 * 64 + 5
    # int index is colex over (R, C): i = r + 16*c
    assert xs(3 + 16 * 9) == xs(3, 9)
    assert xs.is_compact()
    # vectorized equals scalar
    r, c = np.meshgrid(np.arange(16), np.arange(64), indexing="ij")
    assert np.array_equal(xs(r, c), [[xs(int(a), int(b)) for b in range(64)] for a in range(16)])
    assert xs == xor_swizzle((16, 64), 8, 2, 8) and hash(xs) == hash(xor_swizzle((16, 64), 8, 2, 8))
    # composition: a ComposedLayout whose inner indexes xs's domain (colex)
    cl = composition(xs, col_major((16, 64)))
    assert np.array_equal(cl.offsets(), xs.offsets())


@pytest.mark.parametrize(
    "shape,vec,per_phase,max_phase",
    [((8, 64), 8, 1, 8), ((32, 32), 4, 2, 4), ((4, 16), 1, 1, 16), ((64, 128), 8, 4, 8),
     ((8, 48), 4, 1, 3), ((8, 24), 2, 1, 4), ((5, 8), 8, 1, 1)],
)
def test_xor_swizzle_bijective(shape, vec, per_phase, max_phase):
    xs = XorSwizzle2D(shape, vec, per_phase, max_phase)
    assert np.array_equal(np.sort(xs.offsets()), np.arange(shape[0] * shape[1]))


def test_xor_swizzle_errors():
    with pytest.raises(ValueError, match="divide"):
        XorSwizzle2D((8, 60), 8, 1, 8)
    with pytest.raises(ValueError, match="multiple"):
        XorSwizzle2D((8, 24), 8, 1, 4)  # 3 groups, max_phase 4
    with pytest.raises(ValueError, match="multiple"):
        XorSwizzle2D((8, 16), 8, 1, 4)  # 2 groups < max_phase
    with pytest.raises(ValueError):
        XorSwizzle2D((8, 16), 0, 1, 1)
    with pytest.raises(ValueError):
        XorSwizzle2D((8, 16, 2), 8, 1, 1)


# ---------------------------------------------------------------------------------------------
# TV layouts
# ---------------------------------------------------------------------------------------------


def test_tv_layout_basic():
    # 4 threads x 2 values over a (4, 2) tile: thread t holds row t, value v column v
    # index = r + 4*c -> thread stride 1, value stride 4
    tv = tv_layout(Layout(4, 1), Layout(2, 4), (4, 2))
    assert tv.num_threads == 4 and tv.num_values == 2 and tv.tile_shape == (4, 2)
    assert tv.coord(3, 1) == (3, 1)
    assert tv.index(3, 1) == 7
    tab = tv.coords_table()
    assert tab.shape == (4, 2, 2)
    assert tab[2].tolist() == [[2, 0], [2, 1]]
    assert tv.covers()
    assert tv.holders((1, 1)) == [(1, 1)]
    t = np.arange(4)[:, None]
    v = np.arange(2)[None, :]
    r, c = tv.coord(t, v)
    assert np.array_equal(r, np.broadcast_to(t, (4, 2))) and np.array_equal(c, np.broadcast_to(v, (4, 2)))


def test_tv_layout_replication_and_equality():
    # 8 threads, threads 4..7 replicate 0..3 (stride 0 on the second thread mode)
    tv = TVLayout(Layout(((4, 2), 2), ((1, 0), 4)), (4, 2))
    assert tv.num_threads == 8
    assert tv.covers()
    assert tv.holders((2, 1)) == [(2, 1), (6, 1)]
    # functional equality: a different representation of the same map
    same = TVLayout(Layout(((2, 2, 2), 2), ((1, 2, 0), 4)), (4, 2))
    assert tv == same and hash(tv) == hash(same)
    assert tv != TVLayout(Layout(((4, 2), 2), ((1, 0), 4)), (8, 1))
    partial = tv_layout(Layout(4, 1), 1, (4, 2))
    assert not partial.covers()


def test_tv_layout_errors():
    with pytest.raises(ValueError):
        TVLayout(Layout(8, 1), (8,))  # rank 1
    with pytest.raises(ValueError, match="outside"):
        tv_layout(Layout(4, 1), Layout(2, 4), (4, 1))
    with pytest.raises(ValueError):
        tv_layout(Layout(4, 1), Layout(2, 4), ((4, 2),))


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_layout_errors():
    with pytest.raises(ValueError, match="congruent"):
        Layout((2, 3), (1,))
    with pytest.raises(ValueError, match="congruent"):
        Layout(((2, 2), 3), (1, 2, 3))
    with pytest.raises(ValueError, match="< 1"):
        Layout((0, 2), (1, 1))
    with pytest.raises(ValueError):
        Layout((2, 2.5), (1, 2))
    with pytest.raises(ValueError):
        Layout((), ())
    with pytest.raises(ValueError):
        Layout(4, 1)((1, 2))


def test_values_pickle_and_copy():
    objs = [
        Layout(((2, 4), 8), ((1, 16), 2)),
        Swizzle(3, 3, 3),
        swizzled(Swizzle(2, 3, 3), row_major((8, 32))),
        xor_swizzle((8, 64), 8, 1, 8),
        tv_layout(Layout((4, 8), (32, 1)), Layout((2, 2), (16, 8)), (16, 8)),
    ]
    for o in objs:
        for clone in (pickle.loads(pickle.dumps(o)), copy.deepcopy(o), copy.copy(o)):
            assert clone == o and hash(clone) == hash(o)
