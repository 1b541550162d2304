"""The names of the Ave DSL, for the front end and the language server.

* :data:`DSL_FUNCTIONS`: the functions of kernel bodies (stubs in :mod:`ave_core.lang.core`
  that the front end handles; calling them from Python raises ``RuntimeError``).
* :data:`COMPILE_TIME_FUNCTIONS`: names the front end evaluates at compile time: layout and
  atom constructors, :func:`~ave_core.lang.cdiv`, :func:`~ave_core.lang.swizzle`,
  :func:`~ave_core.lang.label`, :func:`~ave_core.lang.dtype` and the dtype names.
* :func:`signature_of`: the ``inspect.Signature`` the front end binds a call against.
"""

from __future__ import annotations

import functools
import importlib
import inspect

from .dtypes import ALL_DTYPES

__all__ = [
    "KERNEL_FUNCTIONS", "DSL_FUNCTIONS", "COMPILE_TIME_FUNCTIONS", "LAYOUT_FUNCTIONS", "ATOM_FUNCTIONS",
    "DTYPE_NAMES", "TYPE_NAMES", "DECORATORS", "signature_of",
]

#: Functions of kernel bodies, in documentation order (the one list: ``core.__all__`` and
#: the package's ``__all__`` are built from it).
KERNEL_FUNCTIONS: tuple[str, ...] = (
    # thread and program ids
    "thread_id", "warp_id", "lane_id", "warp_group_id", "program_id", "num_programs",
    # tiles
    "alloc", "view", "transpose", "gather", "scatter",
    # data movement
    "copy", "copy_async", "commit_async", "wait_async", "load", "ldmatrix", "store",
    "barrier", "reset",
    # fragments and compute
    "zeros", "full", "coord", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "maximum",
    "minimum", "where", "cast", "reduce", "sum", "max", "min", "convert", "materialize",
    # matrix instructions
    "mma",
    # control
    "range", "static_range", "sched_barrier", "assume",
    # tags and assertions
    "tag", "label", "assert_conform", "assert_disjoint",
)

#: Functions of kernel bodies, handled by the front end (stubs at Python runtime).
DSL_FUNCTIONS: frozenset[str] = frozenset(KERNEL_FUNCTIONS)

#: Layout constructors (``ave_core.lang.layout``), evaluated at compile time.
LAYOUT_FUNCTIONS: frozenset[str] = frozenset({
    "layout", "row_major", "col_major", "swizzle", "composition", "swizzled",
    "xor_swizzle", "tv_layout",
})

#: Matrix-instruction atom constructors (``ave_core.lang.atoms``), evaluated at compile time.
ATOM_FUNCTIONS: frozenset[str] = frozenset({
    "mma_atom", "wgmma_atom", "mfma_atom", "ldmatrix_atom", "tiled_mma",
})

#: The dtype names (``f32``, ``bf16``, ...): compile-time values, not functions.
DTYPE_NAMES: frozenset[str] = frozenset(ALL_DTYPES)

#: Names used as parameter annotations.
TYPE_NAMES: frozenset[str] = frozenset({"Tensor", "constexpr"})

#: Decorators.
DECORATORS: frozenset[str] = frozenset({"kernel"})

#: Everything the front end evaluates at compile time (``label`` is also in
#: :data:`DSL_FUNCTIONS`: it is only valid inside a ``tag`` lambda).
COMPILE_TIME_FUNCTIONS: frozenset[str] = (
    LAYOUT_FUNCTIONS | ATOM_FUNCTIONS | DTYPE_NAMES | frozenset({"cdiv", "swizzle", "label", "dtype"})
)


@functools.lru_cache(maxsize=None)
def signature_of(name: str) -> inspect.Signature:
    """The signature of the DSL callable ``ave.<name>`` (``"copy"`` -> ``(src, dst, ...)``).

    Covers :data:`DSL_FUNCTIONS`, the callables of :data:`COMPILE_TIME_FUNCTIONS` and
    ``kernel``. The front end binds calls against it (``signature_of("copy").bind(...)``,
    a ``TypeError`` there being error AVE104).

    Raises:
        ValueError: ``name`` is not an Ave DSL callable.
        TypeError: ``name`` is a value, not a callable (a dtype name such as ``"bf16"``).
    """
    if name in DTYPE_NAMES:
        raise TypeError(f"ave.{name} is a dtype, not a function")
    if name not in DSL_FUNCTIONS and name not in COMPILE_TIME_FUNCTIONS and name not in DECORATORS:
        raise ValueError(f"ave.{name} is not an Ave DSL function")
    lang = importlib.import_module("ave_core.lang")
    obj = getattr(lang, name)
    return inspect.signature(obj)
