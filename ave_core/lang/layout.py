"""The CuTe layout algebra of Ave: layouts, swizzles, composed layouts and TV layouts.

Everything here is compile-time data (pure Python + numpy); nothing runs on a GPU.

Conventions (exactly CuTe's, ``include/cute/layout.hpp``, ``include/cute/int_tuple.hpp``,
``include/cute/swizzle.hpp``; "CuTe Layouts" and "CuTe Layout Algebra" in the CUTLASS
documentation, ``media/docs/cpp/cute/01_layout.md`` and ``02_layout_algebra.md``):

* An **IntTuple** is a Python ``int`` or a (possibly nested) ``tuple`` of IntTuples.
* A **layout** ``shape:stride`` is a function from a coordinate to a linear **offset**
  (offsets are in *elements*, never bytes). Shape and stride are congruent IntTuples.
* An integer passed where a multi-dimensional coordinate is expected is decomposed
  **colexicographically** (first mode fastest): for shape ``(4, 8)``, index ``i`` is the
  coordinate ``(i % 4, i // 4)``. Within a tuple, the *last* mode absorbs whatever is left
  (it is not reduced modulo its extent), as in CuTe's ``crd2idx``; this is what extends a
  layout beyond its domain, and what composition relies on.
* Every evaluation function (``crd2idx``, ``idx2crd``, ``Layout.__call__``,
  ``Swizzle.__call__``, ...) works elementwise on numpy integer arrays as well as on Python
  ints: values only ever go through ``+ - * // % ^ & >> <<``, never through an ``if``.

**The layout-like protocol.** Every layout-like object -- :class:`Layout`,
:class:`ComposedLayout`, :class:`XorSwizzle2D` -- has

* ``.shape`` (IntTuple), ``.size`` (number of coordinates, ``product(shape)``),
* ``.cosize`` (largest offset + 1 over the domain),
* ``__call__(*coord)`` (a coordinate -> an offset in elements; one int, one tuple, or one
  argument per top-level mode), and
* ``offsets()`` (a numpy ``int64`` array: the offsets of linear indices ``0 .. size-1``,
  decomposed colexicographically).

:class:`TVLayout` is not an offset layout: it maps ``(thread, value)`` to a coordinate of a
tile (see its docstring).
"""

from __future__ import annotations

import numbers
from typing import Any, Iterable, Sequence, Union

import numpy as np

__all__ = [
    "IntTuple",
    "is_int",
    "is_tuple",
    "product",
    "flatten",
    "idx2crd",
    "crd2idx",
    "Layout",
    "layout",
    "make_layout",
    "row_major",
    "col_major",
    "coalesce",
    "composition",
    "Swizzle",
    "swizzle",
    "ComposedLayout",
    "swizzled",
    "XorSwizzle2D",
    "xor_swizzle",
    "TVLayout",
    "tv_layout",
]

IntTuple = Union[int, tuple]
"""An ``int`` or a (nested) tuple of IntTuples (CuTe ``IntTuple``)."""


# ---------------------------------------------------------------------------------------------
# IntTuple helpers
# ---------------------------------------------------------------------------------------------


def is_int(x: Any) -> bool:
    """True for a scalar integer value: a Python ``int``, a numpy integer, or a numpy array
    (an array stands for many integer values evaluated elementwise). ``bool`` is excluded."""
    if isinstance(x, bool):
        return False
    return isinstance(x, (numbers.Integral, np.integer, np.ndarray))


_TUPLE = (tuple, list)


def is_tuple(x: Any) -> bool:
    """True for a tuple or list (a hierarchical IntTuple node)."""
    return isinstance(x, _TUPLE)


def _norm(t: Any, what: str = "IntTuple") -> IntTuple:
    """Normalize lists to tuples and numpy integers to Python ints, recursively."""
    if type(t) is int:
        return t
    if type(t) is tuple and all(type(e) is int for e in t):
        return t                                    # a flat tuple of ints: already normal
    if isinstance(t, _TUPLE):
        return tuple(_norm(e, what) for e in t)
    if isinstance(t, bool) or not isinstance(t, (numbers.Integral, np.integer)):
        raise ValueError(f"{what} entries must be integers or tuples, got {t!r}")
    return int(t)


def product(shape: IntTuple) -> int:
    """Product of all leaves of ``shape`` (``product(8) == 8``, ``product(((2, 4), 8)) == 64``,
    ``product(()) == 1``). Works on numpy arrays as leaves too (CuTe ``product``)."""
    if isinstance(shape, _TUPLE):
        p = 1
        for s in shape:
            p = p * product(s)
        return p
    return shape


def flatten(t: IntTuple) -> tuple:
    """The leaves of ``t`` as a flat tuple, in order (pycute ``flatten``): ``flatten(8) ==
    (8,)``, ``flatten(((2, 4), 8)) == (2, 4, 8)``."""
    if isinstance(t, _TUPLE):
        out: list = []
        for e in t:
            if isinstance(e, _TUPLE):
                out.extend(flatten(e))
            else:
                out.append(e)
        return tuple(out)
    return (t,)


def _unflatten(flat: Iterable, profile: IntTuple) -> IntTuple:
    """Rebuild a tuple congruent with ``profile`` from the leaves ``flat``."""
    it = iter(flat)

    def rec(p):
        if is_tuple(p):
            return tuple(rec(e) for e in p)
        return next(it)

    return rec(profile)


def _congruent(a: IntTuple, b: IntTuple) -> bool:
    ta = isinstance(a, _TUPLE)
    if ta != isinstance(b, _TUPLE):
        return False
    if ta:
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))
    return True


def _fmt(t: IntTuple) -> str:
    """CuTe-style text: ``(4,8)``, ``((2,4),8)``, a 1-tuple is ``(8)``."""
    if is_tuple(t):
        return "(" + ",".join(_fmt(e) for e in t) + ")"
    return str(t)


def idx2crd(idx: Any, shape: IntTuple) -> IntTuple:
    """Decompose a linear index into a coordinate congruent with ``shape``, colexicographically
    (first mode fastest), CuTe ``idx2crd`` with the compact column-major stride.

    ``idx2crd(13, (4, 8)) == (1, 3)``; ``idx2crd(13, ((2, 2), 8)) == ((1, 0), 3)``.
    The last mode of every tuple absorbs the remainder (no modulo), so that
    ``crd2idx(idx2crd(i, s), s, d) == crd2idx(i, s, d)`` for every ``i >= 0``.

    Args:
        idx: an int, or a numpy integer array (evaluated elementwise).
        shape: an IntTuple.
    Returns:
        A coordinate congruent with ``shape`` whose leaves are ints (or arrays).
    """
    if is_tuple(shape):
        if len(shape) == 0:
            return ()
        out = []
        rest = idx
        for s in shape[:-1]:
            p = product(s)
            out.append(idx2crd(rest % p, s))
            rest = rest // p
        out.append(idx2crd(rest, shape[-1]))
        return tuple(out)
    return idx


def crd2idx(coord: Any, shape: IntTuple, stride: IntTuple) -> Any:
    """Map a coordinate to an offset: ``sum(coord_i * stride_i)`` (CuTe ``crd2idx``).

    Args:
        coord: an int (decomposed colexicographically over the whole ``shape``), or a tuple
            congruent or partially congruent with ``shape``: an int given for a nested mode is
            decomposed colexicographically within that mode. Leaves may be numpy arrays.
        shape, stride: congruent IntTuples.
    Returns:
        The offset (int, or numpy array).
    Raises:
        ValueError: the coordinate is not (partially) congruent with the shape.
    """
    if isinstance(coord, _TUPLE):
        if not isinstance(shape, _TUPLE):
            if len(coord) == 1:  # (c,) for a rank-1 int layout
                return crd2idx(coord[0], shape, stride)
            raise ValueError(f"coordinate {_fmt_any(coord)} has more modes than shape {_fmt(shape)}")
        if len(coord) != len(shape):
            raise ValueError(
                f"coordinate {_fmt_any(coord)} has {len(coord)} modes, shape {_fmt(shape)} "
                f"has {len(shape)}"
            )
        total = 0
        for c, s, d in zip(coord, shape, stride):
            total = total + crd2idx(c, s, d)
        return total
    if isinstance(shape, _TUPLE):
        # int coordinate over a tuple shape: colex, last mode absorbs the rest
        if len(shape) == 0:
            return 0
        total = 0
        rest = coord
        for s, d in zip(shape[:-1], stride[:-1]):
            p = product(s)
            total = total + crd2idx(rest % p, s, d)
            rest = rest // p
        return total + crd2idx(rest, shape[-1], stride[-1])
    return coord * stride


def _fmt_any(c: Any) -> str:
    if is_tuple(c):
        return "(" + ",".join(_fmt_any(e) for e in c) + ")"
    if isinstance(c, np.ndarray):
        return f"array{c.shape}"
    return str(c)


def _prefix_products(shape: IntTuple, start: int = 1) -> IntTuple:
    """Compact colexicographic strides of ``shape`` (CuTe ``compact_col_major``)."""
    flat = flatten(shape)
    strides = []
    acc = start
    for s in flat:
        strides.append(acc)
        acc *= s
    return _unflatten(strides, shape)


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------


class Layout:
    """A CuTe layout ``shape:stride``: a function from coordinates to offsets (in elements).

    ``Layout((4, 8), (8, 1))`` is the row-major 4x8 layout, printed ``(4,8):(8,1)``;
    ``Layout(((2, 4), 8), ((1, 16), 2))`` is hierarchical, printed ``((2,4),8):((1,16),2)``.
    ``Layout(8, 1)`` is rank 1 (``8:1``). Source: CuTe ``cute/layout.hpp``, "CuTe Layouts"
    (``media/docs/cpp/cute/01_layout.md``).

    Args:
        shape: an IntTuple of extents, every leaf >= 1.
        stride: an IntTuple congruent with ``shape`` (integer strides, may be 0 or negative).
            If omitted, the compact column-major (colexicographic) strides, as CuTe.
    Raises:
        ValueError: shape and stride are not congruent, a leaf is not an integer, a shape
            leaf is < 1, or a tuple is empty.

    Attributes:
        shape, stride: the IntTuples (lists normalized to tuples).
        rank: number of top-level modes (1 for an int shape).
        size: ``product(shape)``, the number of coordinates.
        cosize: max offset + 1 over the domain (``sum((s-1)*d)`` over leaves with ``d > 0``,
            plus 1); meaningful for nonnegative strides.
    """

    __slots__ = ("_shape", "_stride", "_hash")

    def __init__(self, shape: IntTuple, stride: IntTuple | None = None):
        if stride is not None and _plain_valid(shape, stride):
            self._shape = shape
            self._stride = stride
            self._hash = None
            return
        shape = _norm(shape, "shape")
        if stride is None:
            stride = _prefix_products(shape)
        stride = _norm(stride, "stride")
        if not _congruent(shape, stride):
            raise ValueError(
                f"layout shape {_fmt(shape)} and stride {_fmt(stride)} are not congruent "
                f"(they must have the same nested tuple structure)"
            )
        for s in flatten(shape):
            if s < 1:
                raise ValueError(f"layout shape {_fmt(shape)} has an extent {s} < 1")
        if _has_empty(shape):
            raise ValueError(f"layout shape {_fmt(shape)} contains an empty tuple")
        self._shape = shape
        self._stride = stride
        self._hash = None

    @classmethod
    def _valid(cls, shape: IntTuple, stride: IntTuple) -> "Layout":
        """A Layout of a shape and stride known to be valid and normal (a mode of a Layout),
        without checking them again."""
        self = cls.__new__(cls)
        self._shape = shape
        self._stride = stride
        self._hash = None
        return self

    # --- accessors ---------------------------------------------------------------------------
    @property
    def shape(self) -> IntTuple:
        """The shape IntTuple."""
        return self._shape

    @property
    def stride(self) -> IntTuple:
        """The stride IntTuple (congruent with ``shape``)."""
        return self._stride

    @property
    def rank(self) -> int:
        """Number of top-level modes (an int-shaped layout has rank 1)."""
        return len(self._shape) if is_tuple(self._shape) else 1

    @property
    def size(self) -> int:
        """Number of coordinates in the domain: ``product(shape)``."""
        return product(self._shape)

    @property
    def cosize(self) -> int:
        """Largest offset over the domain + 1 (for nonnegative strides; 0-strides are fine).
        Negative strides contribute nothing (the minimum offset is then below 0)."""
        top = 0
        for s, d in zip(flatten(self._shape), flatten(self._stride)):
            if d > 0:
                top += (s - 1) * d
        return top + 1

    @property
    def depth(self) -> int:
        """Nesting depth (0 for an int shape, 1 for a flat tuple, ...)."""
        return _depth(self._shape)

    def __len__(self) -> int:
        return self.rank

    def __iter__(self):
        for i in range(self.rank):
            yield self[i]

    def __getitem__(self, i: int) -> "Layout":
        """Mode ``i`` as a Layout (``Layout(((2,4),8), ((1,16),2))[0] == (2,4):(1,16)``).
        For an int-shaped layout only ``i == 0`` is valid (the layout itself)."""
        if is_tuple(self._shape):
            return Layout._valid(self._shape[i], self._stride[i])
        if i in (0, -1):
            return self
        raise IndexError(f"mode {i} of the rank-1 layout {self}")

    # --- evaluation --------------------------------------------------------------------------
    def __call__(self, *coord: Any) -> Any:
        """The offset (in elements) of a coordinate.

        ``L(i)`` with an int ``i`` decomposes ``i`` colexicographically; ``L((c0, c1))`` or
        ``L(c0, c1)`` gives one (int or nested) coordinate per top-level mode. Leaves may be
        numpy integer arrays (elementwise evaluation).

        Raises:
            ValueError: the number of modes does not match.
        """
        if len(coord) == 0:
            raise ValueError(f"layout {self} called without a coordinate")
        if len(coord) == 1:
            return crd2idx(coord[0], self._shape, self._stride)
        if not is_tuple(self._shape) or len(coord) != len(self._shape):
            raise ValueError(
                f"layout {self} of rank {self.rank} called with {len(coord)} coordinates"
            )
        return crd2idx(tuple(coord), self._shape, self._stride)

    def offsets(self) -> np.ndarray:
        """Offsets of the linear indices ``0 .. size-1`` (colexicographic), as ``int64``."""
        # index i = c0 + s0*c1 + s0*s1*c2 + ... over the leaves (first fastest) maps to
        # sum(c_k * d_k): an outer sum of each leaf's arange(s_k) * d_k, the last leaf the
        # slowest axis (what crd2idx gives for every i in range, without div/mod)
        out = np.zeros((), dtype=np.int64)
        for s, d in zip(flatten(self._shape), flatten(self._stride)):
            out = np.add.outer(np.arange(s, dtype=np.int64) * d, out)
        return out.reshape(self.size)

    def is_injective(self) -> bool:
        """True if no two coordinates of the domain share an offset."""
        off = self.offsets()
        return len(np.unique(off)) == len(off)

    def is_compact(self) -> bool:
        """True if the layout is a bijection from its domain onto ``[0, size)``."""
        off = np.sort(self.offsets())
        return bool(np.array_equal(off, np.arange(self.size, dtype=np.int64)))

    is_bijective = is_compact

    # --- transformations ---------------------------------------------------------------------
    def flatten(self) -> "Layout":
        """The same function with every nested mode spliced into the top level (depth <= 1).
        An int-shaped layout is returned unchanged."""
        if not is_tuple(self._shape):
            return self
        return Layout(flatten(self._shape), flatten(self._stride))

    def coalesce(self) -> "Layout":
        """CuTe ``coalesce``: the same function on ``[0, size)`` with the fewest modes
        (size-1 modes dropped, adjacent modes with ``s0*d0 == d1`` merged). See
        :func:`coalesce`."""
        return coalesce(self)

    def compose(self, inner: Any) -> Any:
        """``composition(self, inner)``."""
        return composition(self, inner)

    # --- identity ----------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self._shape == other._shape and self._stride == other._stride

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(("Layout", self._shape, self._stride))
        return self._hash

    def __repr__(self) -> str:
        return f"{_fmt(self._shape)}:{_fmt(self._stride)}"

    __str__ = __repr__


def _plain_valid(shape: Any, stride: Any) -> bool:
    """Whether ``shape:stride`` is already normal and valid (Python ints and tuples only,
    congruent, every extent >= 1, no empty tuple): then :class:`Layout` takes it as it is.
    ``False`` sends it through the full normalization and checks (and their errors)."""
    if type(shape) is int:
        return type(stride) is int and shape >= 1
    if type(shape) is not tuple or type(stride) is not tuple or not shape or \
            len(shape) != len(stride):
        return False
    for a, b in zip(shape, stride):
        if not _plain_valid(a, b):
            return False
    return True


def _has_empty(t: IntTuple) -> bool:
    if isinstance(t, _TUPLE):
        return len(t) == 0 or any(_has_empty(e) for e in t)
    return False


def _depth(t: IntTuple) -> int:
    if is_tuple(t):
        return 1 + max((_depth(e) for e in t), default=0)
    return 0


def layout(shape: IntTuple, stride: IntTuple | None = None) -> Layout:
    """``Layout(shape, stride)`` (the DSL's ``ave.layout``). Without ``stride``: compact
    column-major, as CuTe ``make_layout(shape)``."""
    return Layout(shape, stride)


def make_layout(*layouts: Layout) -> Layout:
    """Concatenate layouts into one layout whose mode ``i`` is ``layouts[i]`` (CuTe
    ``make_layout(L0, L1, ...)``): ``make_layout(4:1, 8:4) == (4,8):(1,4)``."""
    if len(layouts) == 1 and not isinstance(layouts[0], Layout):
        layouts = tuple(layouts[0])
    for L in layouts:
        if not isinstance(L, Layout):
            raise ValueError(f"make_layout expects Layouts, got {L!r}")
    return Layout(tuple(L.shape for L in layouts), tuple(L.stride for L in layouts))


def _compact_right(shape: IntTuple) -> IntTuple:
    flat = flatten(shape)
    strides = [0] * len(flat)
    acc = 1
    for i in range(len(flat) - 1, -1, -1):
        strides[i] = acc
        acc *= flat[i]
    return _unflatten(strides, shape)


def row_major(shape: IntTuple) -> Layout:
    """Compact row-major layout (CuTe ``LayoutRight``): the last mode has stride 1, strides
    grow right to left over all leaves. ``row_major((4, 8)) == (4,8):(8,1)``.

    Raises:
        ValueError: invalid shape (see :class:`Layout`).
    """
    shape = _norm(shape, "shape")
    return Layout(shape, _compact_right(shape))


def col_major(shape: IntTuple) -> Layout:
    """Compact column-major layout (CuTe ``LayoutLeft``, the default of ``make_layout``): the
    first mode has stride 1. ``col_major((4, 8)) == (4,8):(1,4)``."""
    shape = _norm(shape, "shape")
    return Layout(shape, _prefix_products(shape))


def coalesce(L: Layout) -> Layout:
    """CuTe ``coalesce(layout)``: flatten, drop size-1 modes, merge adjacent modes ``(s0:d0,
    s1:d1)`` with ``s0*d0 == d1`` into ``s0*s1:d0``. The result is the same function on the
    domain ``[0, size)`` (not necessarily outside it); it is an int-shaped layout when one
    mode remains, ``1:0`` when none does. Source: ``cute/layout.hpp`` (``bw_coalesce``).

    Raises:
        ValueError: ``L`` is not a Layout.
    """
    if not isinstance(L, Layout):
        raise ValueError(f"coalesce expects a Layout, got {L!r}")
    shapes: list = []
    strides: list = []
    for s, d in zip(flatten(L.shape), flatten(L.stride)):
        if s == 1:
            continue
        if shapes and shapes[-1] * strides[-1] == d:
            shapes[-1] *= s
        else:
            shapes.append(s)
            strides.append(d)
    if not shapes:
        return Layout(1, 0)
    if len(shapes) == 1:
        return Layout(shapes[0], strides[0])
    return Layout(tuple(shapes), tuple(strides))


def _coalesce_x(L: Layout) -> tuple[list, list]:
    """CuTe ``detail::coalesce_x``: like coalesce, but also preserves the function *outside*
    the domain (the last mode, which absorbs out-of-range indices, keeps its stride).
    Returns flat lists (the last entry's shape is only a placeholder, >= 2 when it was 1)."""
    fs, fd = list(flatten(L.shape)), list(flatten(L.stride))
    new_s = [fs[-1] if fs[-1] != 1 else 2]
    new_d = [fd[-1]]
    for s, d in zip(reversed(fs[:-1]), reversed(fd[:-1])):
        if s == 1:
            continue
        if s * d == new_d[0]:
            new_s[0] = s * new_s[0]
            new_d[0] = d
        else:
            new_s.insert(0, s)
            new_d.insert(0, d)
    return new_s, new_d


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _compose_int(outer: Layout, rs: int, rd: int) -> Layout:
    """``outer o (rs:rd)`` for an integral right-hand side (CuTe ``composition_impl``)."""
    if rd == 0:
        return Layout(rs, 0)
    if rd < 0:
        raise ValueError(
            f"composition({outer}, {rs}:{rd}): negative strides in the inner layout are not "
            f"supported"
        )
    ls, ld = _coalesce_x(outer)
    if len(ls) == 1:
        return Layout(rs, rd * ld[0])
    res_s: list = []
    res_d: list = []
    rest_s, rest_d = rs, rd
    for a, e in zip(ls[:-1], ld[:-1]):
        if rest_s == 1:
            # nothing left to place; only the stride keeps being divided (as CuTe does)
            rest_d = _ceil_div(rest_d, a)
            continue
        if rest_d % a == 0:
            # the whole stride skips this mode
            rest_d = rest_d // a
            continue
        next_s = _ceil_div(a, rest_d)
        if a % rest_d != 0:
            # rest_d < a and does not divide it: representable only if all the remaining
            # elements land inside this mode without wrapping
            if rest_d > a or rest_s > next_s:
                raise ValueError(
                    f"composition({outer}, {rs}:{rd}) is not a layout: stride divisibility "
                    f"condition failed: the inner stride {rest_d} (after dividing out earlier "
                    f"modes) and the outer mode extent {a} must divide one another "
                    f"(CuTe 'Stride Divisibility Condition')"
                )
            res_s.append(rest_s)
            res_d.append(rest_d * e)
            rest_s = 1
            rest_d = _ceil_div(rest_d, a)
            continue
        new_s = min(next_s, rest_s)
        if rest_s % new_s != 0:
            raise ValueError(
                f"composition({outer}, {rs}:{rd}) is not a layout: shape divisibility "
                f"condition failed: the remaining inner extent {rest_s} is not divisible by "
                f"{new_s} = outer mode extent {a} / stride {rest_d} "
                f"(CuTe 'Shape Divisibility Condition')"
            )
        res_s.append(new_s)
        res_d.append(rest_d * e)
        rest_s = rest_s // new_s
        rest_d = _ceil_div(rest_d, a)
    if not res_s:
        return Layout(rest_s, rest_d * ld[-1])
    if rest_s != 1:
        res_s.append(rest_s)
        res_d.append(rest_d * ld[-1])
    if len(res_s) == 1:
        return Layout(res_s[0], res_d[0])
    return Layout(tuple(res_s), tuple(res_d))


def _compose_layout(outer: Layout, shape: IntTuple, stride: IntTuple) -> Layout:
    if is_tuple(shape):
        modes = [_compose_layout(outer, s, d) for s, d in zip(shape, stride)]
        return Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))
    return _compose_int(outer, shape, stride)


def composition(outer: Any, inner: Any) -> Any:
    """Functional composition ``outer o inner``: ``(outer o inner)(c) = outer(inner(c))``, where
    ``inner``'s output is a linear index into ``outer``'s domain (decomposed colex). CuTe
    ``composition`` (``cute/layout.hpp``; "Composition" in ``02_layout_algebra.md``).

    Args:
        outer: a :class:`Layout`, :class:`Swizzle`, :class:`ComposedLayout` or
            :class:`XorSwizzle2D`.
        inner: a :class:`Layout` (the result has ``inner``'s shape); an ``int`` ``n`` (means
            ``n:1``); ``None`` (no-op); or a tuple "tiler" of those, applied by mode:
            mode ``i`` of the result is ``composition(outer[i], inner[i])``; the modes of
            ``outer`` beyond ``len(inner)`` are kept unchanged (as pycute; C++ CuTe drops
            them).
    Returns:
        A :class:`Layout` when ``outer`` is a Layout; a :class:`ComposedLayout` when ``outer``
        is a Swizzle, XorSwizzle2D or ComposedLayout.
    Raises:
        ValueError: the result is not representable as a layout (CuTe's stride or shape
            divisibility condition fails, the message says which; or the modes of ``inner``
            combine across a mode boundary of ``outer``, which CuTe does not detect: every
            result is checked against ``outer(inner(i))``, up to 4M elements), the tiler has
            more modes than ``outer``, or the operands are of unsupported kinds.
    """
    if inner is None:
        return outer
    if isinstance(outer, (Swizzle, XorSwizzle2D)):
        if is_tuple(inner):
            raise ValueError(
                f"composition({outer}, tiler): a swizzle has a 1-D domain; compose it with a "
                f"Layout, not a tuple of layouts"
            )
        return ComposedLayout(outer, 0, _as_layout(inner))
    if isinstance(outer, ComposedLayout):
        return ComposedLayout(outer.outer, outer.offset, composition(outer.inner, inner))
    if not isinstance(outer, Layout):
        raise ValueError(f"composition: unsupported outer operand {outer!r}")
    if is_tuple(inner):
        if len(inner) > outer.rank:
            raise ValueError(
                f"composition({outer}, tiler of {len(inner)} modes): the tiler has more modes "
                f"than the layout (rank {outer.rank})"
            )
        modes = [composition(outer[i], inner[i]) for i in range(len(inner))]
        modes += [outer[i] for i in range(len(inner), outer.rank)]
        return make_layout(*modes)
    inner = _as_layout(inner)
    result = _compose_layout(outer, inner.shape, inner.stride)
    _verify_composition(outer, inner, result)
    return result


_VERIFY_LIMIT = 1 << 22


def _verify_composition(outer: Layout, inner: Layout, result: Layout) -> None:
    """CuTe computes ``outer o inner`` mode by mode of ``inner``, which is only right when
    ``outer`` is additive over the offsets that ``inner``'s modes combine (e.g. it fails for
    ``(6,5):(1,100) o (2,3):(3,2)``: ``3 + 4`` crosses ``outer``'s first mode). Check the
    result against ``outer(inner(i))`` for every ``i`` (vectorized; skipped above 4M
    elements) and refuse a wrong answer."""
    n = inner.size
    if n > _VERIFY_LIMIT:
        return
    got = result.offsets()
    idx = inner.offsets()
    if idx.size and 0 <= idx.min() and idx.max() < outer.size:
        want = outer.offsets()[idx]         # outer(i) == outer.offsets()[i] inside its domain
    else:
        want = np.asarray(outer(idx), dtype=np.int64).reshape(n)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"composition({outer}, {inner}) is not representable as a layout: the modes of "
            f"the inner layout combine across a mode boundary of the outer one (CuTe's "
            f"mode-by-mode result {result} gives {int(got[i])} at index {i}, but "
            f"outer(inner({i})) = outer({int(inner(i))}) = {int(want[i])}); the divisibility "
            f"conditions hold mode by mode but not for the sum"
        )


def _as_layout(x: Any) -> Layout:
    if isinstance(x, Layout):
        return x
    if is_int(x) and not isinstance(x, np.ndarray):
        return Layout(int(x), 1)
    raise ValueError(f"expected a Layout or an int, got {x!r}")


# ---------------------------------------------------------------------------------------------
# Swizzles and composed layouts
# ---------------------------------------------------------------------------------------------


class Swizzle:
    """CuTe ``Swizzle<B, M, S>`` (``cute/swizzle.hpp``): an XOR permutation of offsets.

    ``yyy_mask = ((1 << B) - 1) << (M + max(0, S))``,
    ``zzz_mask = ((1 << B) - 1) << (M - min(0, S))``,
    ``f(x) = x ^ shift_right(x & yyy_mask, S)`` (shift right by ``S`` if ``S > 0``, left by
    ``-S`` if ``S < 0``). The ``B`` bits at ``yyy_mask`` are XORed into the ``B`` bits at
    ``zzz_mask``; the lowest ``M`` bits (a vector of ``2**M`` elements) are kept.
    ``Sw<3,3,3>`` on 16-bit elements is the usual 128-byte shared-memory swizzle.

    Offsets are in elements. ``f`` is an involution and a bijection of every range
    ``[0, 2**k)`` with ``k >= bits_needed``.

    Raises:
        ValueError: ``B < 0``, ``M < 0`` or ``|S| < B``.
    """

    __slots__ = ("B", "M", "S")

    def __init__(self, B: int, M: int, S: int):
        for name, v in (("B", B), ("M", M), ("S", S)):
            if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
                raise ValueError(f"Swizzle {name} must be an integer, got {v!r}")
        B, M, S = int(B), int(M), int(S)
        if B < 0:
            raise ValueError(f"Swizzle<{B},{M},{S}>: B (number of bits) must be >= 0")
        if M < 0:
            raise ValueError(f"Swizzle<{B},{M},{S}>: M (number of base bits) must be >= 0")
        if abs(S) < B:
            raise ValueError(f"Swizzle<{B},{M},{S}>: |S| (the shift) must be >= B")
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "M", M)
        object.__setattr__(self, "S", S)

    def __setattr__(self, name, value):
        raise AttributeError("Swizzle is immutable")

    def __reduce__(self):
        return (Swizzle, (self.B, self.M, self.S))

    @property
    def yyy_mask(self) -> int:
        """Mask of the source bits (moved by ``S``)."""
        return ((1 << self.B) - 1) << (self.M + max(0, self.S))

    @property
    def zzz_mask(self) -> int:
        """Mask of the destination bits."""
        return ((1 << self.B) - 1) << (self.M - min(0, self.S))

    @property
    def bits_needed(self) -> int:
        """``B + M + |S|``: the swizzle only reads and writes bits below this one, so it is a
        bijection of ``[0, 2**bits_needed)`` (and of every larger power-of-two range)."""
        return self.B + self.M + abs(self.S)

    def __call__(self, offset: Any) -> Any:
        """Swizzle an offset (int or numpy integer array, elementwise)."""
        y = offset & self.yyy_mask
        if self.S >= 0:
            return offset ^ (y >> self.S)
        return offset ^ (y << (-self.S))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Swizzle):
            return NotImplemented
        return (self.B, self.M, self.S) == (other.B, other.M, other.S)

    def __hash__(self) -> int:
        return hash(("Swizzle", self.B, self.M, self.S))

    def __repr__(self) -> str:
        return f"Sw<{self.B},{self.M},{self.S}>"

    __str__ = __repr__


def swizzle(B: int, M: int, S: int) -> Swizzle:
    """``Swizzle(B, M, S)`` (the DSL's ``ave.swizzle``)."""
    return Swizzle(B, M, S)


class ComposedLayout:
    """``c -> outer(offset + inner(c))`` (CuTe ``ComposedLayout``, ``cute/layout_composed.hpp``).

    Typically ``outer`` is a :class:`Swizzle` and ``inner`` a :class:`Layout`: the layout of a
    swizzled shared-memory tile (``swizzled(Sw<3,3,3>, row_major((64, 64)))``).

    Args:
        outer: a Swizzle, Layout or XorSwizzle2D (anything callable on a linear int).
        offset: an int added to ``inner``'s output before ``outer``.
        inner: a Layout (the domain: ``shape``, ``size``).
    Raises:
        ValueError: unsupported operand kinds.

    Follows the layout-like protocol (``shape``, ``size``, ``cosize``, ``__call__``,
    ``offsets()``); ``cosize`` is computed by evaluating every coordinate.
    """

    __slots__ = ("_outer", "_offset", "_inner", "_cosize", "_offsets")

    def __init__(self, outer: Any, offset: int, inner: Any):
        if not isinstance(outer, (Swizzle, Layout, XorSwizzle2D, ComposedLayout)):
            raise ValueError(f"ComposedLayout: unsupported outer {outer!r}")
        if not isinstance(inner, (Layout, ComposedLayout)):
            raise ValueError(f"ComposedLayout: inner must be a Layout, got {inner!r}")
        if isinstance(offset, bool) or not isinstance(offset, (numbers.Integral, np.integer)):
            raise ValueError(f"ComposedLayout: offset must be an int, got {offset!r}")
        self._outer = outer
        self._offset = int(offset)
        self._inner = inner
        self._cosize = None
        self._offsets = None      # offsets(), computed once (the object is immutable)

    @property
    def outer(self) -> Any:
        """The function applied last."""
        return self._outer

    @property
    def offset(self) -> int:
        """The offset added between ``inner`` and ``outer``."""
        return self._offset

    @property
    def inner(self) -> Any:
        """The layout applied first (it defines the domain)."""
        return self._inner

    @property
    def shape(self) -> IntTuple:
        """``inner.shape``."""
        return self._inner.shape

    @property
    def rank(self) -> int:
        """``inner.rank``."""
        return self._inner.rank

    @property
    def size(self) -> int:
        """``inner.size``."""
        return self._inner.size

    @property
    def cosize(self) -> int:
        """Largest offset over the domain + 1 (evaluated)."""
        if self._cosize is None:
            off = self.offsets()
            self._cosize = int(off.max()) + 1 if len(off) else 0
        return self._cosize

    def __call__(self, *coord: Any) -> Any:
        """``outer(offset + inner(*coord))`` (ints or numpy arrays)."""
        return self._outer(self._offset + self._inner(*coord))

    def offsets(self) -> np.ndarray:
        """Offsets of the linear indices ``0 .. size-1`` (colex), ``int64`` (a new array)."""
        if self._offsets is None:
            self._offsets = np.asarray(
                self._outer(self._offset + self._inner.offsets()), dtype=np.int64
            ).reshape(self.size)
        return self._offsets.copy()

    def is_injective(self) -> bool:
        """True if no two coordinates share an offset."""
        off = self.offsets()
        return len(np.unique(off)) == len(off)

    def is_compact(self) -> bool:
        """True if a bijection onto ``[0, size)``."""
        return bool(np.array_equal(np.sort(self.offsets()), np.arange(self.size)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposedLayout):
            return NotImplemented
        return (self._outer, self._offset, self._inner) == (
            other._outer,
            other._offset,
            other._inner,
        )

    def __hash__(self) -> int:
        return hash(("ComposedLayout", self._outer, self._offset, self._inner))

    def __repr__(self) -> str:
        return f"{self._outer!r} o {self._offset} o {self._inner!r}"

    __str__ = __repr__


def swizzled(swizzle: Swizzle, layout: Layout) -> ComposedLayout:
    """``ComposedLayout(swizzle, 0, layout)``: ``swizzle o layout`` (the DSL's
    ``ave.swizzled``), e.g. ``swizzled(Swizzle(3, 3, 3), row_major((64, 64)))``."""
    return ComposedLayout(swizzle, 0, layout)


def _next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


class XorSwizzle2D:
    """The 2-D XOR swizzle of a row-major ``(R, C)`` tile used by Triton and AMD kernels for
    shared memory (Triton ``SwizzledSharedEncoding``: ``vec``, ``perPhase``, ``maxPhase``):

    ``(r, c) -> r*C + (((c // vec) ^ ((r // per_phase) % max_phase)) * vec) + c % vec``.

    Column groups of ``vec`` elements are permuted within each row by XOR with the row's
    phase. Offsets are in elements. An int argument is a linear index decomposed
    colexicographically over ``(R, C)`` (``r = i % R``, ``c = i // R``), as for every layout.

    Args:
        shape: ``(R, C)``, both >= 1.
        vec: elements per vector (>= 1), must divide ``C``.
        per_phase: consecutive rows sharing a phase (>= 1).
        max_phase: number of distinct phases (>= 1).
    Raises:
        ValueError: ``C % vec != 0``, or the number of column groups ``C // vec`` is not a
            multiple of ``max_phase`` rounded up to a power of two (then the XOR would leave
            the row and the map would not be a bijection of the tile), or bad arguments.
    """

    __slots__ = ("_shape", "vec", "per_phase", "max_phase")

    def __init__(self, shape: Sequence[int], vec: int, per_phase: int, max_phase: int):
        try:
            shape = _norm(shape, "shape")
        except ValueError:
            raise ValueError(f"XorSwizzle2D shape must be (rows, cols), got {shape!r}") from None
        if not is_tuple(shape) or len(shape) != 2 or any(is_tuple(s) for s in shape):
            raise ValueError(f"XorSwizzle2D shape must be (rows, cols), got {shape!r}")
        R, C = shape
        if R < 1 or C < 1:
            raise ValueError(f"XorSwizzle2D shape {shape} must have extents >= 1")
        for name, v in (("vec", vec), ("per_phase", per_phase), ("max_phase", max_phase)):
            if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)) or v < 1:
                raise ValueError(f"XorSwizzle2D {name} must be an integer >= 1, got {v!r}")
        vec, per_phase, max_phase = int(vec), int(per_phase), int(max_phase)
        if C % vec != 0:
            raise ValueError(
                f"XorSwizzle2D: vec={vec} does not divide the row length C={C}"
            )
        groups = C // vec
        need = _next_pow2(max_phase)
        if groups % need != 0:
            raise ValueError(
                f"XorSwizzle2D: the row has C/vec={groups} column groups, which must be a "
                f"multiple of {need} (max_phase={max_phase} rounded up to a power of two) so "
                f"that XOR with a phase < max_phase stays inside the row (bijection)"
            )
        object.__setattr__(self, "_shape", (R, C))
        object.__setattr__(self, "vec", vec)
        object.__setattr__(self, "per_phase", per_phase)
        object.__setattr__(self, "max_phase", max_phase)

    def __setattr__(self, name, value):
        raise AttributeError("XorSwizzle2D is immutable")

    def __reduce__(self):
        return (XorSwizzle2D, (self._shape, self.vec, self.per_phase, self.max_phase))

    @property
    def shape(self) -> tuple:
        """``(R, C)``."""
        return self._shape

    @property
    def rank(self) -> int:
        """2."""
        return 2

    @property
    def size(self) -> int:
        """``R * C``."""
        return self._shape[0] * self._shape[1]

    @property
    def cosize(self) -> int:
        """``R * C`` (the map is a bijection of the tile)."""
        return self.size

    def __call__(self, *coord: Any) -> Any:
        """Offset of ``(r, c)`` (two args, one 2-tuple, or one colex linear index)."""
        R, C = self._shape
        if len(coord) == 1:
            c0 = coord[0]
            if is_tuple(c0):
                if len(c0) != 2:
                    raise ValueError(f"XorSwizzle2D expects (r, c), got {c0!r}")
                r, c = c0
            else:
                r, c = c0 % R, c0 // R
        elif len(coord) == 2:
            r, c = coord
        else:
            raise ValueError(f"XorSwizzle2D expects (r, c), got {len(coord)} coordinates")
        phase = (r // self.per_phase) % self.max_phase
        return r * C + (((c // self.vec) ^ phase) * self.vec) + c % self.vec

    def offsets(self) -> np.ndarray:
        """Offsets of the linear indices ``0 .. size-1`` (colex over ``(R, C)``), ``int64``."""
        return np.asarray(self(np.arange(self.size, dtype=np.int64)), dtype=np.int64)

    def is_injective(self) -> bool:
        """Always True (validated at construction); computed."""
        off = self.offsets()
        return len(np.unique(off)) == len(off)

    def is_compact(self) -> bool:
        """True if a bijection onto ``[0, R*C)``."""
        return bool(np.array_equal(np.sort(self.offsets()), np.arange(self.size)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, XorSwizzle2D):
            return NotImplemented
        return self._key() == other._key()

    def _key(self):
        return (self._shape, self.vec, self.per_phase, self.max_phase)

    def __hash__(self) -> int:
        return hash(("XorSwizzle2D",) + self._key())

    def __repr__(self) -> str:
        R, C = self._shape
        return (
            f"XorSwizzle2D(({R},{C}), vec={self.vec}, per_phase={self.per_phase}, "
            f"max_phase={self.max_phase})"
        )

    __str__ = __repr__


def xor_swizzle(shape: Sequence[int], vec: int, per_phase: int, max_phase: int) -> XorSwizzle2D:
    """``XorSwizzle2D(shape, vec, per_phase, max_phase)`` (the DSL's ``ave.xor_swizzle``)."""
    return XorSwizzle2D(shape, vec, per_phase, max_phase)


# ---------------------------------------------------------------------------------------------
# Thread-value layouts
# ---------------------------------------------------------------------------------------------


class TVLayout:
    """A thread-value layout: which element of a tile each (thread, value) holds.

    ``layout`` is a rank-2 :class:`Layout` whose modes are (thread, value) and whose output is
    a linear index into the tile, decomposed colexicographically over ``tile_shape`` -- exactly
    CuTe's TV-layout convention (``(T, V) -> idx``, as ``MMA_Traits::ALayout`` in
    ``cute/atom/mma_traits_sm80.hpp``). For a tile ``(M, K)``, index ``m + M*k`` is
    coordinate ``(m, k)``.

    ``thread`` is the linear thread index ``0 .. num_threads-1`` (decomposed colex within the
    thread mode), ``value`` the index of the element in that thread's registers
    ``0 .. num_values-1``. Several (t, v) may hold the same element (replication: a 0 stride).

    Args:
        layout: a Layout of rank 2.
        tile_shape: an int or a flat tuple of ints, the tile's extents.
    Raises:
        ValueError: ``layout`` is not a rank-2 Layout, ``tile_shape`` is not a flat tuple of
            positive ints, or an index falls outside ``[0, product(tile_shape))``.

    Equality is *functional*: two TV layouts are equal when they have the same tile shape,
    thread and value counts, and the same index for every (t, v) (whatever their
    shape:stride representation). The hash agrees with it.
    """

    __slots__ = ("_layout", "_tile_shape", "_table", "_hash")

    def __init__(self, layout: Layout, tile_shape: IntTuple):
        if not isinstance(layout, Layout):
            raise ValueError(f"TVLayout expects a Layout, got {layout!r}")
        if layout.rank != 2 or not is_tuple(layout.shape):
            raise ValueError(
                f"TVLayout needs a layout with two top-level modes (thread, value), got "
                f"{layout} of rank {layout.rank}"
            )
        ts = _norm(tile_shape, "tile_shape")
        if not is_tuple(ts):
            ts = (ts,)
        if len(ts) == 0 or any(is_tuple(s) or s < 1 for s in ts):
            raise ValueError(f"TVLayout tile_shape must be a flat tuple of ints >= 1, got {ts}")
        self._layout = layout
        self._tile_shape = ts
        self._hash = None
        # layout(t, v) = mode0(t) + mode1(v) (crd2idx of a per-mode coordinate)
        table = np.add.outer(layout[0].offsets(), layout[1].offsets())
        n = product(ts)
        if table.size and (table.min() < 0 or table.max() >= n):
            raise ValueError(
                f"TVLayout {layout} produces indices in [{table.min()}, {table.max()}], "
                f"outside the tile {_fmt(ts)} of {n} elements"
            )
        table.setflags(write=False)
        self._table = table

    @property
    def layout(self) -> Layout:
        """The (thread, value) -> tile index Layout."""
        return self._layout

    @property
    def thread_layout(self) -> Layout:
        """Mode 0 of ``layout``."""
        return self._layout[0]

    @property
    def value_layout(self) -> Layout:
        """Mode 1 of ``layout``."""
        return self._layout[1]

    @property
    def tile_shape(self) -> tuple:
        """The tile's extents (flat tuple of ints)."""
        return self._tile_shape

    @property
    def tile_size(self) -> int:
        """``product(tile_shape)``."""
        return product(self._tile_shape)

    @property
    def num_threads(self) -> int:
        """Size of the thread mode."""
        return self._layout[0].size

    @property
    def num_values(self) -> int:
        """Size of the value mode (elements per thread)."""
        return self._layout[1].size

    def index(self, t: Any, v: Any) -> Any:
        """Linear (colex) tile index held by thread ``t`` as value ``v`` (ints or numpy
        arrays, broadcast)."""
        return self._layout(t, v)

    def coord(self, t: Any, v: Any) -> tuple:
        """Tile coordinate ``(x0, x1, ...)`` (one entry per tile dimension) held by thread
        ``t`` as value ``v``; ints or numpy arrays (broadcast)."""
        return idx2crd(self.index(t, v), self._tile_shape)

    def index_table(self) -> np.ndarray:
        """``int64`` array ``(num_threads, num_values)`` of tile indices (read-only)."""
        return self._table

    def coords_table(self) -> np.ndarray:
        """``int64`` array ``(num_threads, num_values, len(tile_shape))``: the coordinate of
        every (t, v)."""
        parts = idx2crd(self._table, self._tile_shape)
        return np.stack([np.broadcast_to(p, self._table.shape) for p in parts], axis=-1)

    def covers(self) -> bool:
        """True if every element of the tile is held by at least one (t, v)."""
        held = np.zeros(self.tile_size, dtype=bool)
        held[self._table.reshape(-1)] = True   # indices are in [0, tile_size) (checked)
        return bool(held.all())

    def holders(self, coord: Any) -> list:
        """All ``(t, v)`` holding the element at ``coord`` (a tuple of per-dimension ints, or a
        linear colex index), sorted by thread then value."""
        if is_tuple(coord):
            if len(coord) != len(self._tile_shape):
                raise ValueError(
                    f"coordinate {coord} does not match the tile shape {self._tile_shape}"
                )
            idx = crd2idx(tuple(coord), self._tile_shape, _prefix_products(self._tile_shape))
        else:
            idx = coord
        ts, vs = np.nonzero(self._table == idx)
        return [(int(t), int(v)) for t, v in zip(ts, vs)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TVLayout):
            return NotImplemented
        return (
            self._tile_shape == other._tile_shape
            and self._table.shape == other._table.shape
            and bool(np.array_equal(self._table, other._table))
        )

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(
                ("TVLayout", self._tile_shape, self._table.shape, self._table.tobytes())
            )
        return self._hash

    def __repr__(self) -> str:
        return f"TV({self._layout!r} -> tile {_fmt(self._tile_shape)})"

    __str__ = __repr__


def tv_layout(thread_layout: Any, value_layout: Any, tile_shape: IntTuple) -> TVLayout:
    """Build ``TVLayout(Layout((thr.shape, val.shape), (thr.stride, val.stride)), tile_shape)``
    (the DSL's ``ave.tv_layout``). An int ``n`` given for either layout means ``n:1``.

    Raises:
        ValueError: see :class:`TVLayout`.
    """
    thr = _as_layout(thread_layout)
    val = _as_layout(value_layout)
    return TVLayout(Layout((thr.shape, val.shape), (thr.stride, val.stride)), tile_shape)
