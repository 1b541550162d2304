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
    "row_major", "col_major", "swizzle", "composition", "swizzled", "xor_swizzle",
    "tv_layout",
    # atoms
    "MMAAtom", "LdMatrixAtom", "TiledMMA", "mma_atom", "wgmma_atom", "mfma_atom",
    "ldmatrix_atom", "tiled_mma",
    # kernel, annotations
    "kernel", "Kernel", "KernelLauncher", "Tensor", "TensorSpec", "constexpr",
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
    "range", "static_range", "sched_barrier",
    # tags and assertions
    "tag", "label", "assert_conform", "assert_disjoint",
    # compile-time helpers
    "cdiv",
]
