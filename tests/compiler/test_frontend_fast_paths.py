"""The front end's fast paths give exactly what the direct computations give.

Each fast path (table lookups for the layout checks, outer sums for layout offsets, the
binder of DSL calls, the statement-only walk for assigned names, sort-based unique) is
compared against the plain computation it replaces, on generated inputs and on the examples.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ave_core.compiler import frontend as F
from ave_core.lang import names

L = importlib.import_module("ave_core.lang.layout")
ROOT = pathlib.Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=200, derandomize=True, deadline=None)


# --- layouts ---------------------------------------------------------------------------


@st.composite
def layouts(draw, max_size: int = 4096):
    """A (possibly nested) Layout with strides that may be 0, negative or overlapping."""
    def tree(depth):
        if depth == 0 or draw(st.booleans()):
            return draw(st.integers(1, 6))
        return tuple(tree(depth - 1) for _ in range(draw(st.integers(1, 3))))

    def strides(t):
        if isinstance(t, tuple):
            return tuple(strides(e) for e in t)
        return draw(st.integers(-3, 40))
    shape = tree(3)
    if L.product(shape) > max_size:
        shape = (4, 8)
    return L.Layout(shape, strides(shape))


@SETTINGS
@given(layouts())
def test_layout_offsets_equal_crd2idx_of_every_index(lay):
    want = np.asarray(L.crd2idx(np.arange(lay.size, dtype=np.int64), lay.shape, lay.stride),
                      dtype=np.int64).reshape(lay.size)
    got = lay.offsets()
    assert got.dtype == np.int64 and np.array_equal(got, want)


@SETTINGS
@given(layouts(), st.sampled_from([(3, 3, 3), (2, 3, 3), (1, 2, 4)]))
def test_composed_layout_offsets_are_kept_but_returned_as_copies(lay, bms):
    c = L.ComposedLayout(L.Swizzle(*bms), 0, lay)
    first = c.offsets()
    want = np.asarray(c(np.arange(c.size, dtype=np.int64)), dtype=np.int64)
    assert np.array_equal(first, want)
    first[:] = -1                         # the caller's array is its own
    assert np.array_equal(c.offsets(), want)


@SETTINGS
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]),
       st.sampled_from([1, 2, 4]), st.permutations(range(4)))
def test_tv_layout_table_equals_evaluating_the_layout(t1, t2, v1, v2, order):
    ext = [t1, t2, v1, v2]
    acc, strides = 1, [0] * 4
    for i in order:                     # a bijection onto the tile, in a random mode order
        strides[i] = acc
        acc *= ext[i]
    lay = L.Layout(((t1, t2), (v1, v2)), ((strides[0], strides[1]), (strides[2], strides[3])))
    tv = L.TVLayout(lay, (acc,))
    want = np.asarray(lay(np.arange(t1 * t2)[:, None], np.arange(v1 * v2)[None, :]))
    assert np.array_equal(tv.index_table(), np.broadcast_to(want, (t1 * t2, v1 * v2)))
    assert not tv.index_table().flags.writeable
    assert tv.covers()


@SETTINGS
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]),
       st.sampled_from([1, 2, 4]), st.permutations(range(4)), st.sampled_from([2, 4, 8]),
       st.sampled_from([(2,), (4,), (8,)]))
def test_thread_vectors_by_tile_index_equal_by_coordinates(t1, t2, v1, v2, order, n, rows):
    ext = [t1, t2, v1, v2]
    acc, strides = 1, [0] * 4
    for i in order:
        strides[i] = acc
        acc *= ext[i]
    lay = L.Layout(((t1, t2), (v1, v2)), ((strides[0], strides[1]), (strides[2], strides[3])))
    shape = (rows[0], acc // rows[0]) if acc % rows[0] == 0 else (acc,)
    tv = L.TVLayout(lay, shape)
    by_coords = types.SimpleNamespace(coords_table=tv.coords_table)   # not a TVLayout
    assert F._thread_vector_violation(tv, n) == F._thread_vector_violation(by_coords, n)


@SETTINGS
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]),
       st.sampled_from([1, 2, 4]), st.permutations(range(4)), st.booleans(),
       st.sampled_from([(2,), (4,), (2, 2), (4, 2)]), st.sampled_from([8, 32]))
def test_reduction_scope_by_tile_index_equals_by_coordinates(t1, t2, v1, v2, order, replicate,
                                                             split, warp):
    ext = [t1, t2, v1, v2]
    acc, strides = 1, [0] * 4
    for i in order:
        strides[i] = acc
        acc *= ext[i]
    if replicate:
        strides[1] = 0                                   # thread groups holding the same data
    lay = L.Layout(((t1, t2), (v1, v2)), ((strides[0], strides[1]), (strides[2], strides[3])))
    shape = (*split, acc // int(np.prod(split))) if acc % int(np.prod(split)) == 0 else (acc,)
    tv = L.TVLayout(lay, shape)
    by_coords = types.SimpleNamespace(coords_table=tv.coords_table)   # not a TVLayout
    for axis in range(len(shape)):
        assert F._reduction_scope(tv, axis, warp) == F._reduction_scope(by_coords, axis, warp)


# --- layout checks: lookup vs. evaluating the layout at every coordinate ----------------


def _builder() -> object:
    """Stands for a KernelBuilder: only its per-compile memo is used."""
    return types.SimpleNamespace(module=types.SimpleNamespace(
        loader=types.SimpleNamespace(memo={})))


@st.composite
def geometries(draw):
    """(layout, base shape, origins per base dim, local->base dims, local shape)."""
    rank = draw(st.integers(1, 3))
    bshape = tuple(draw(st.sampled_from([2, 4, 8, 16, 32])) for _ in range(rank))
    kind = draw(st.sampled_from(["row", "strided", "swizzled", "xor"]))
    if kind == "strided":
        lay = L.Layout(bshape, tuple(draw(st.sampled_from([0, 1, 2, 8, 64, 130]))
                                     for _ in bshape))
    else:
        lay = L.row_major(bshape)
    if kind == "swizzled":
        lay = L.ComposedLayout(L.Swizzle(*draw(st.sampled_from([(3, 3, 3), (2, 2, 3),
                                                                 (1, 3, 3)]))), 0, lay)
    if kind == "xor" and rank == 2 and bshape[1] % 32 == 0:
        lay = L.XorSwizzle2D(bshape, 8, draw(st.sampled_from([1, 2])), 4)
    dims = draw(st.permutations(range(rank)))[:draw(st.integers(1, rank))]
    shape = tuple(draw(st.sampled_from([e for e in (1, 2, 4, 8, 16) if e <= bshape[d]]))
                  for d in dims)
    origins = []
    for d in range(rank):
        ext = shape[dims.index(d)] if d in dims else 1
        hi = bshape[d] - ext + draw(st.sampled_from([0, 0, 0, 2]))   # sometimes outside
        origins.append(sorted(set(draw(st.lists(st.integers(0, hi), min_size=1, max_size=4)))))
    return lay, bshape, origins, list(dims), shape


@SETTINGS
@given(geometries(), st.sampled_from([2, 4, 8]))
def test_vector_check_by_lookup_equals_evaluation(geo5, n):
    lay, bshape, origins, dims, shape = geo5
    if shape[-1] % n:
        n = 1 if shape[-1] % 2 else 2
    geo = (lay, bshape, origins, dims)
    table = F._offset_table(_builder(), lay, bshape)
    fast = F._layout_vector_violation(
        geo, shape, n, table, (lambda bd: F._vectors_ok(table, bshape, bd, n))
        if table is not None else None)
    assert fast == F._layout_vector_violation(geo, shape, n, None)


@SETTINGS
@given(geometries())
def test_contiguity_and_ldmatrix_trans_by_lookup_equal_evaluation(geo5):
    lay, bshape, origins, dims, shape = geo5
    geo = (lay, bshape, origins, dims)
    table = F._offset_table(_builder(), lay, bshape)
    assert F._layout_contiguous(geo, shape, table) == F._layout_contiguous(geo, shape, None)
    if len(shape) == 2 and shape[0] % 8 == 0 and shape[1] % 8 == 0 and table is not None:
        fast = F._layout_ldmatrix_trans_violation(
            geo, shape, table, lambda bd: F._vectors_ok(table, bshape, bd, 8))
        assert fast == F._layout_ldmatrix_trans_violation(geo, shape, None)


def test_vector_violation_reports_the_first_bad_vector_and_why():
    # 8x8 tile with a row stride of 12: (r, c) -> 12r + c. Row 0's 8-vector is 0..7 (fine);
    # row 1's is 12..19: contiguous but 12 is not a multiple of 8
    lay = L.Layout((8, 8), (12, 1))
    geo = (lay, (8, 8), [[0], [0]], [0, 1])
    table = F._offset_table(_builder(), lay, (8, 8))
    got = F._layout_vector_violation(geo, (8, 8), 8, table,
                                     lambda bd: F._vectors_ok(table, (8, 8), bd, 8))
    assert got == ((1, 0), list(range(12, 20)), "not aligned to 8 elements")
    assert F._vectors_ok(table, (8, 8), 1, 8)[1] is False
    assert F._vectors_ok(table, (8, 8), 1, 4)[1] is True       # 12r + c: 4-vectors at 4c
    assert not F._vectors_ok(table, (8, 8), 1, 4)[0][8]         # (0, 1), index 0 + 8 * 1
    lay = L.Layout((8, 8), (1, 8))               # column-major: rows are strided
    table = F._offset_table(_builder(), lay, (8, 8))
    got = F._layout_vector_violation((lay, (8, 8), [[0], [0]], [0, 1]), (8, 8), 4, table,
                                     lambda bd: F._vectors_ok(table, (8, 8), bd, 4))
    assert got == ((0, 0), [0, 8, 16, 24], "not contiguous in the layout")
    assert F._vectors_ok(table, (8, 8), 0, 4)[1] is True        # along the other axis: fine
    sw = L.ComposedLayout(L.Swizzle(3, 3, 3), 0, L.row_major((2, 64, 64)))
    assert F._vectors_ok(F._offset_table(_builder(), sw, (2, 64, 64)), (2, 64, 64), 2, 8)[1]


# --- binding, names, unique --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(names.DSL_FUNCTIONS))
def test_binder_equals_signature_bind(name):
    sig = names.signature_of(name)
    params = list(sig.parameters)
    calls = [((), {}), (tuple(range(len(params))), {}), (tuple(range(len(params) + 1)), {}),
             ((0,), {"nope": 1})]
    for k in range(len(params) + 1):
        calls.append((tuple(range(k)), {p: -1 for p in params[k:]}))
        calls.append((tuple(range(k)), {p: -1 for p in params[k:k + 1]}))
        if k:
            calls.append((tuple(range(k)), {params[0]: -1}))          # given twice
    for args, kwargs in calls:
        try:
            ba = sig.bind(*args, **kwargs)
        except TypeError as e:
            with pytest.raises(TypeError) as got:
                F._binder(name).bind(args, kwargs)
            assert str(got.value) == str(e)
            continue
        ba.apply_defaults()
        assert F._binder(name).bind(args, kwargs) == dict(ba.arguments)


def _assigned_reference(body: list) -> set:
    out: set = set()

    def targets(t):
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    targets(t)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets(n.target)
            elif isinstance(n, ast.FunctionDef):
                out.add(n.name)
    return out


def test_assigned_names_equal_a_full_walk_in_the_same_order():
    sources = sorted((ROOT / "examples").rglob("*.py")) + [pathlib.Path(__file__)]
    extra = ("def f():\n    try:\n        a = 1\n    except E as e:\n        b = 2\n"
             "    finally:\n        c = 3\n    match x:\n        case 1:\n            d = 4\n"
             "    with m as w:\n        for i, (j, k) in z:\n            l += 1\n"
             "    g = lambda: (h := 1)\n")
    checked = 0
    for text in [p.read_text("utf-8") for p in sources] + [extra]:
        for node in ast.walk(ast.parse(text)):
            for field in ("body", "orelse", "finalbody"):
                body = getattr(node, field, None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    got, want = F._assigned_names(body), _assigned_reference(body)
                    assert got == want and list(got) == list(want)
                    checked += 1
    assert checked > 100


@SETTINGS
@given(st.lists(st.integers(-5, 50), max_size=200))
def test_sorted_unique_equals_np_unique(xs):
    a = np.asarray(xs, dtype=np.int64)
    got, want = F._sorted_unique(a), np.unique(a)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_same_kernel_ir_when_configs_share_constructors():
    # two configs with equal tiled MMAs share one object; a third gets its own
    text = (ROOT / "examples" / "flash_attention.py").read_text("utf-8")
    res = F.compile_source(text, "examples/flash_attention.py")
    assert [d.code for d in res.diagnostics if d.severity.label == "error"] == []
    lays = [next(op.attrs["layout"] for op in k.walk() if op.name == "ave.load"
                 and op.attrs.get("ldmatrix")) for k in res.kernels]
    assert lays[0] is lays[1] and lays[0] is not lays[2] and len(lays) == 3
