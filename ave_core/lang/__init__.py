"""The Ave DSL surface: ``import ave_core.lang as ave``.

Kernels are Python functions decorated with :func:`kernel`; their bodies are compiled from
source text, never executed by Python (see ``docs/dsl.md``). This package provides:

* dtypes (:data:`f32`, :data:`bf16`, ... and :func:`dtype`),
* parameter annotations (:class:`Tensor`, :class:`constexpr`) and the :func:`kernel`
  decorator,
* layouts (CuTe-style shape:stride layouts, swizzles, TV layouts) and matrix-instruction
  atoms: compile-time values,
* the functions of kernel bodies (:func:`copy`, :func:`load`, :func:`mma`, :func:`tag`,
  ...), which raise ``RuntimeError`` if called outside a kernel.

Importing it loads no compiler backend, solver or GPU runtime.
"""

from . import core
from .dtypes import DType, bf16, dtype, f16, f32, fp8e4m3, fp8e5m2, i1, i8, i16, i32, u8
from .layout import (
    ComposedLayout,
    Layout,
    Swizzle,
    TVLayout,
    XorSwizzle2D,
    col_major,
    composition,
    layout,
    row_major,
    swizzled,
    tv_layout,
    xor_swizzle,
)
from .atoms import (
    LdMatrixAtom,
    MMAAtom,
    TiledMMA,
    ldmatrix_atom,
    mfma_atom,
    mma_atom,
    tiled_mma,
    wgmma_atom,
)
from .core import (
    Kernel,
    KernelLauncher,
    Tensor,
    TensorSpec,
    abs,
    alloc,
    assert_conform,
    assert_disjoint,
    assume,
    barrier,
    cast,
    cdiv,
    commit_async,
    constexpr,
    convert,
    coord,
    copy,
    copy_async,
    exp,
    exp2,
    full,
    gather,
    kernel,
    label,
    lane_id,
    ldmatrix,
    load,
    log,
    log2,
    materialize,
    max,
    maximum,
    min,
    minimum,
    mma,
    num_programs,
    program_id,
    range,
    reduce,
    reset,
    rsqrt,
    scatter,
    sched_barrier,
    sqrt,
    static_range,
    store,
    sum,
    swizzle,
    tag,
    thread_id,
    transpose,
    view,
    wait_async,
    warp_group_id,
    warp_id,
    where,
    zeros,
)

__all__ = [
    # dtypes
    "DType", "dtype", "f32", "f16", "bf16", "fp8e4m3", "fp8e5m2", "i32", "i16", "i8", "u8",
    "i1",
    # layouts
    "Layout", "ComposedLayout", "Swizzle", "XorSwizzle2D", "TVLayout", "layout",
    "row_major", "col_major", "composition", "swizzled", "xor_swizzle", "tv_layout",
    # atoms
    "MMAAtom", "LdMatrixAtom", "TiledMMA", "mma_atom", "wgmma_atom", "mfma_atom",
    "ldmatrix_atom", "tiled_mma",
    # the decorator, annotations, the functions of kernel bodies, compile-time helpers
    *[n for n in core.__all__ if n not in ("TARGETS", "DEFAULT_WARP_SIZE", "MAX_THREADS")],
]
