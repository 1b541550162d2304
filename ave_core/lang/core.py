"""The Ave DSL: kernel decorator, parameter annotations and the functions of kernel bodies.

Kernel bodies are **never executed by Python**. The front end reads a kernel's source text,
maps every ``ave.<name>(...)`` call to its own handler and binds the arguments with
``inspect.signature`` of the function of the same name in this module; the signatures here
are therefore the contract of the DSL (parameter names, order and defaults). Calling one of
these functions from ordinary Python raises :class:`RuntimeError`; only :func:`cdiv` and
:func:`swizzle` are real compile-time helpers that also work outside kernels.

Conventions used in the docstrings (see ``docs/dsl.md``):

* *compile-time*: a Python int/tuple/string, a constexpr, a layout, a dtype, or an expression
  of those. A runtime value where a compile-time one is required is error AVE115.
* *tile*: a region of global, shared or register memory with a layout; *global tile*: a slice
  of a kernel's :class:`Tensor` parameter; *fragment*: a register value distributed over the
  threads of the workgroup by a thread-value (TV) layout.
* Offsets are in **elements** of the tile's dtype unless a name says ``bytes``.
* Coordinates and layouts follow CuTe (colexicographic decomposition of integer coordinates).
* Wrong argument count or unknown keyword: AVE104. Wrong kind of operand (a tile where a
  fragment is expected, ...): AVE118. Wrong dtype: AVE105. Shapes that do not agree: AVE116.
"""

from __future__ import annotations

import functools
import inspect
import operator
from dataclasses import dataclass
from typing import Any, Callable

from .dtypes import DType
from .names import KERNEL_FUNCTIONS

__all__ = [
    "constexpr", "Tensor", "TensorSpec", "kernel", "Kernel", "KernelLauncher",
    *KERNEL_FUNCTIONS,
    "cdiv", "swizzle",
    "TARGETS", "DEFAULT_WARP_SIZE", "MAX_THREADS",
]

#: Targets accepted by ``@ave.kernel(target=...)``; ``None`` means the default, ``"nvidia"``.
TARGETS: tuple[str, ...] = ("nvidia", "amd")
#: Warp (wavefront) size per target: 32 lanes on NVIDIA, 64 on AMD CDNA3.
DEFAULT_WARP_SIZE: dict[str, int] = {"nvidia": 32, "amd": 64}
#: Largest workgroup size (threads per block) on both NVIDIA and AMD CDNA3.
MAX_THREADS = 1024



def _on_gpu(x: Any) -> bool:
    dev = getattr(x, "device", None)
    return dev is not None and getattr(dev, "type", "cpu") != "cpu"


def _outside(name: str) -> RuntimeError:
    return RuntimeError(
        f"ave.{name}() can only be used inside an @ave.kernel function; "
        "kernel bodies are compiled, not executed"
    )


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


# --------------------------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------------------------


class constexpr:
    """Annotation of a compile-time kernel parameter (a specialization constant).

    ``BM: ave.constexpr = 128`` makes ``BM`` a compile-time value: the front end substitutes
    it before building the IR, so it may be used for shapes, layouts, static loop bounds
    and branch conditions that are resolved at compile time. Its value comes, by priority,
    from the launch call (``kernel[grid](..., BM=64)``), from the ``configs`` entry being
    checked, or from the default. A constexpr that has none of these is error AVE111.
    """


@dataclass(frozen=True)
class TensorSpec:
    """The annotation ``ave.Tensor[dtype, rank]``: a global tensor of ``rank`` dimensions.

    Attributes:
        dtype: the element type (a :class:`~ave_core.lang.dtypes.DType`).
        rank: the number of dimensions (a positive int).
    """

    dtype: DType
    rank: int

    def __repr__(self) -> str:
        return f"ave.Tensor[{self.dtype!r}, {self.rank}]"


class Tensor:
    """A global-memory tensor kernel parameter, annotated ``ave.Tensor[dtype, rank]``.

    ``A: ave.Tensor[ave.bf16, 2]`` declares a 2-D bf16 tensor. Inside a kernel,
    ``A.shape[i]`` and ``A.stride(i)`` are runtime ``i32`` scalars (in elements);
    ``M, K = A.shape`` unpacks. The innermost stride is 1 (checked at launch). Slicing with
    compile-time extents gives a global tile: ``A[m0:m0 + BM, k0:k0 + BK]``; an integer
    index drops the dimension.

    ``Tensor[dtype, rank]`` returns a :class:`TensorSpec`; ``dtype`` must be an Ave dtype
    (``ave.bf16``) and ``rank`` a positive int, else :class:`TypeError`. ``Tensor`` itself is
    an annotation and is never instantiated.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "ave.Tensor is an annotation (write `x: ave.Tensor[ave.bf16, 2]`); "
            "it cannot be instantiated"
        )

    def __class_getitem__(cls, params: Any) -> TensorSpec:
        if not isinstance(params, tuple) or len(params) != 2:
            got = ", ".join(map(repr, params)) if isinstance(params, tuple) else repr(params)
            raise TypeError(
                f"ave.Tensor takes a dtype and a rank, e.g. ave.Tensor[ave.bf16, 2]; "
                f"got ave.Tensor[{got}]"
            )
        dtype, rank = params
        if not isinstance(dtype, DType):
            raise TypeError(
                f"ave.Tensor[dtype, rank]: dtype must be an Ave dtype such as ave.bf16, "
                f"got {dtype!r}"
            )
        if not _is_int(rank) or rank <= 0:
            raise TypeError(f"ave.Tensor[dtype, rank]: rank must be a positive int, got {rank!r}")
        return TensorSpec(dtype, rank)

    @property
    def shape(self) -> tuple:
        """The extents of the tensor, a tuple of runtime ``i32`` scalars (in elements).

        ``M, K = A.shape`` unpacks; ``A.shape[1]`` is one extent.
        """
        raise _outside("Tensor.shape")

    def stride(self, dim):
        """The stride of dimension ``dim`` in elements, a runtime ``i32`` scalar.

        ``dim`` is a compile-time int; the innermost stride is always 1.
        """
        raise _outside("Tensor.stride")


# --------------------------------------------------------------------------------------------
# The kernel decorator
# --------------------------------------------------------------------------------------------


def _check_grid(grid: Any) -> tuple[int, ...]:
    items = grid if isinstance(grid, tuple) else (grid,)
    if not 1 <= len(items) <= 3:
        raise ValueError(f"a launch grid has 1 to 3 dimensions, got {len(items)}: {grid!r}")
    out = []
    for g in items:
        if isinstance(g, bool):
            raise TypeError(f"launch grid extents must be ints, got {g!r}")
        try:
            v = operator.index(g)
        except TypeError:
            raise TypeError(
                f"a launch grid is an int or a tuple of 1 to 3 ints, got {grid!r}"
            ) from None
        if v <= 0:
            raise ValueError(f"launch grid extents must be positive, got {grid!r}")
        out.append(v)
    return tuple(out)


class KernelLauncher:
    """``kernel[grid]``: a kernel bound to a launch grid, called with the kernel's arguments.

    Attributes:
        kernel: the :class:`Kernel`.
        grid: the number of programs (workgroups) along each axis, a tuple of 1 to 3
            positive ints; ``ave.program_id(axis)`` runs over ``range(grid[axis])``.
    """

    def __init__(self, kernel: "Kernel", grid: tuple[int, ...]) -> None:
        self.kernel = kernel
        self.grid = grid

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Launch the kernel: ``kernel[grid](*args, **constexprs)``.

        With ``AVE_INTERPRET=1`` in the environment, or when no argument lives on a GPU
        (numpy arrays, torch CPU tensors), the kernel runs in the CPU reference interpreter
        (:mod:`ave_core.interp`): outputs are written in place, and dynamic checks
        (out-of-bounds, races, uninitialized shared memory) raise
        ``ave_core.interp.KernelCheckError``. With torch CUDA tensors it is compiled (and
        cached on disk) and launched on the GPU on torch's current stream
        (:mod:`ave_core.jit`).

        Raises:
            ave_core.jit.KernelCheckFailed: (GPU) a new specialization's invariants are not
                proved (``AVE_CHECK=error``, the default).
            ave_core.compiler.lower.LoweringError, ave_core.jit.pipeline.ToolchainError:
                (GPU) the kernel cannot be compiled here.
            ave_core.compiler.frontend.SpecializationError: the kernel does not compile for
                these constexprs.
            TypeError, ValueError: arguments that do not match the kernel's parameters.
        """
        import os
        if os.environ.get("AVE_INTERPRET", "") not in ("", "0") or not any(
                _on_gpu(a) for a in args):
            from ave_core.interp import launch  # lazy: the interpreter needs numpy only
            return launch(self.kernel, self.grid, args, kwargs)
        from ave_core.jit import launch as gpu_launch  # lazy: torch + cuda-bindings only
        return gpu_launch(self.kernel, self.grid, args, kwargs)

    def __repr__(self) -> str:
        return f"<ave kernel launcher {self.kernel.name}[{self.grid}]>"


class Kernel:
    """An Ave kernel: the object ``@ave.kernel(threads=...)`` returns.

    The decorated function is kept as source: it is never executed. Launch with
    ``kernel[grid](*args, **constexprs)``; ``grid`` is an int or a tuple of 1 to 3 positive
    ints.

    Attributes:
        fn: the decorated Python function (its source is what gets compiled).
        name: the kernel's name (``name=`` or the function's name).
        threads: the workgroup size (threads per block), a compile-time int.
        configs: the list of constexpr specializations to check, or ``None`` (check the
            defaults).
        warp_size: lanes per warp: 32 on NVIDIA, 64 on AMD (the default for
            ``target="amd"``).
        target: ``None`` (default, NVIDIA), ``"nvidia"`` or ``"amd"``.
        source_file: the file defining ``fn`` (``inspect.getsourcefile``), or ``None``.
    """

    def __init__(self, fn: Callable, *, threads: int, configs: Any = None,
                 warp_size: int | None = None, target: str | None = None,
                 name: str | None = None) -> None:
        if not inspect.isfunction(fn):
            raise TypeError(f"@ave.kernel decorates a Python function, got {fn!r}")
        if target is not None:
            if not isinstance(target, str):
                raise TypeError(f"@ave.kernel(target=...) must be a string, got {target!r}")
            if target not in TARGETS:
                raise ValueError(
                    f"@ave.kernel(target={target!r}): unknown target; "
                    f"known: {', '.join(map(repr, TARGETS))}"
                )
        if warp_size is None:
            warp_size = DEFAULT_WARP_SIZE[target or "nvidia"]
        elif not _is_int(warp_size):
            raise TypeError(f"@ave.kernel(warp_size=...) must be an int, got {warp_size!r}")
        elif (target or "nvidia") == "nvidia" and warp_size != 32:
            raise ValueError(f"@ave.kernel(warp_size={warp_size}): NVIDIA warps have 32 lanes")
        elif warp_size not in (32, 64):
            raise ValueError(f"@ave.kernel(warp_size={warp_size}): the warp size is 32 or 64")
        if not _is_int(threads):
            raise TypeError(
                f"@ave.kernel(threads=...) must be an int (the workgroup size), got {threads!r}"
            )
        if threads <= 0:
            raise ValueError(f"@ave.kernel(threads={threads}): the workgroup size must be positive")
        if threads % warp_size:
            raise ValueError(
                f"@ave.kernel(threads={threads}): the workgroup size must be a multiple of the "
                f"warp size {warp_size}"
            )
        if threads > MAX_THREADS:
            raise ValueError(
                f"@ave.kernel(threads={threads}): at most {MAX_THREADS} threads per workgroup"
            )
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"@ave.kernel(name=...) must be a non-empty string, got {name!r}")
        self.fn = fn
        self.name = name if name is not None else fn.__name__
        self.threads = threads
        self.configs = self._check_configs(fn, configs)
        self.warp_size = warp_size
        self.target = target
        try:
            self.source_file = inspect.getsourcefile(fn)
        except TypeError:
            self.source_file = None
        functools.update_wrapper(self, fn)

    @staticmethod
    def _check_configs(fn: Callable, configs: Any) -> list[dict] | None:
        if configs is None:
            return None
        if not isinstance(configs, (list, tuple)):
            raise TypeError(
                f"@ave.kernel(configs=...) must be a list of dicts of constexpr values, "
                f"got {configs!r}"
            )
        if not configs:
            raise ValueError(
                "@ave.kernel(configs=[]) is empty; leave configs out to check the defaults"
            )
        params = inspect.signature(fn).parameters
        out = []
        for i, cfg in enumerate(configs):
            if not isinstance(cfg, dict):
                raise TypeError(f"@ave.kernel: configs[{i}] must be a dict, got {cfg!r}")
            for key in cfg:
                if not isinstance(key, str):
                    raise TypeError(f"@ave.kernel: configs[{i}] has a non-string key {key!r}")
                if key not in params:
                    raise ValueError(
                        f"@ave.kernel: configs[{i}] names {key!r}, which is not a parameter "
                        f"of {fn.__name__}"
                    )
            out.append(dict(cfg))
        return out

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            f"Ave kernel {self.name!r} cannot be called directly; launch it with "
            f"{self.name}[grid](*args, **constexprs), where grid is an int or a tuple of "
            f"1 to 3 ints"
        )

    def __getitem__(self, grid: Any) -> KernelLauncher:
        """``kernel[grid]``: bind a launch grid (an int or a tuple of 1 to 3 positive ints).

        Raises:
            TypeError: ``grid`` is not an int or a tuple of ints.
            ValueError: a grid with 0 or more than 3 dimensions, or a non-positive extent.
        """
        return KernelLauncher(self, _check_grid(grid))

    def __repr__(self) -> str:
        return f"<ave kernel {self.name} threads={self.threads}>"


def kernel(fn=None, *, threads, configs=None, warp_size=None, target=None, name=None):
    """Declare an Ave GPU kernel: ``@ave.kernel(threads=128, configs=[...])``.

    The function's body is compiled from its source text, never executed by Python. Its
    parameters are :class:`Tensor` annotations (global tensors), dtype annotations
    (runtime scalars, ``alpha: ave.f32``) and :class:`constexpr` parameters
    (compile-time values). Launch with ``kernel[grid](*args, **constexprs)``.

    Args:
        fn: the kernel function (given when used as ``kernel(fn, threads=...)``).
        threads: workgroup size (threads per block), a compile-time int (a literal or a
            module-level constant; AVE103 otherwise), positive, a multiple of the warp size
            and at most 1024.
        configs: optional list of dicts of constexpr values: the specializations the kernel
            really runs with. Every one is checked; without ``configs`` the defaults are
            checked. Keys must name parameters of the kernel (AVE117).
        warp_size: lanes per warp; default 32, or 64 with ``target="amd"`` (CDNA3 wave64).
        target: ``None`` (NVIDIA), ``"nvidia"`` or ``"amd"`` (AMD CDNA3, gfx942/gfx950).
        name: the kernel's symbol name; default the function's name.

    Returns:
        A :class:`Kernel` (or, without ``fn``, a decorator returning one).

    Raises:
        TypeError: ``threads``/``warp_size`` not ints, ``target``/``name`` not strings,
            ``configs`` not a list of dicts, or ``fn`` not a function.
        ValueError: ``threads`` not positive, not a multiple of the warp size, or above 1024;
            an unknown target; a warp size other than 32 (NVIDIA) or 32/64 (AMD); a
            ``configs`` key that is not a parameter.
    """
    def wrap(f):
        return Kernel(f, threads=threads, configs=configs, warp_size=warp_size,
                      target=target, name=name)

    if fn is None:
        return wrap
    return wrap(fn)


# --------------------------------------------------------------------------------------------
# Thread and program ids (runtime i32 scalars)
# --------------------------------------------------------------------------------------------


def thread_id():
    """The linear index of the calling thread in its workgroup, a runtime ``i32``.

    Ranges over ``0 .. threads-1`` (``threads`` of ``@ave.kernel``). Workgroups are 1-D:
    this is PTX ``%tid.x`` (PTX ISA, "Special Registers: %tid") / AMD workitem id x.
    Branches on it (warp specialization) are guards the analysis understands.
    """
    raise _outside("thread_id")


def warp_id():
    """The index of the calling thread's warp in the workgroup: ``thread_id() // warp_size``.

    A runtime ``i32``, uniform across the warp (32 lanes on NVIDIA, 64 on AMD). This is the
    logical warp index, not PTX ``%warpid`` (which names a physical slot and may change).
    """
    raise _outside("warp_id")


def lane_id():
    """The index of the calling thread within its warp: ``thread_id() % warp_size``.

    A runtime ``i32`` in ``0 .. warp_size-1``; PTX ``%laneid`` (PTX ISA, "Special Registers:
    %laneid"), AMD ``mbcnt`` lane index.
    """
    raise _outside("lane_id")


def warp_group_id():
    """The index of the calling thread's warp group: ``warp_id() // 4``.

    A runtime ``i32``. A warp group is 4 consecutive warps (128 threads on NVIDIA), the unit
    that executes Hopper ``wgmma.mma_async`` (PTX ISA §9.7.15, "Asynchronous Warpgroup Level
    Matrix Multiply-Accumulate Instructions").
    """
    raise _outside("warp_group_id")


def program_id(axis=0):
    """The index of the calling workgroup (program) in the launch grid along ``axis``.

    A runtime ``i32`` in ``0 .. grid[axis]-1``: PTX ``%ctaid.{x,y,z}`` / AMD workgroup id.

    Args:
        axis: 0, 1 or 2, a compile-time int (AVE115 if not constant, AVE119 if out of range).
    """
    raise _outside("program_id")


def num_programs(axis=0):
    """The number of workgroups (programs) in the launch grid along ``axis``.

    A runtime ``i32``: PTX ``%nctaid.{x,y,z}`` / AMD grid size in workgroups.

    Args:
        axis: 0, 1 or 2, a compile-time int (AVE115 if not constant, AVE119 if out of range).
    """
    raise _outside("num_programs")


# --------------------------------------------------------------------------------------------
# Tiles
# --------------------------------------------------------------------------------------------


def alloc(shape, dtype, space="shared", layout=None, reg_class=None):
    """Allocate a shared-memory or register tile.

    ``sA = ave.alloc((STAGES, BM, BK), ave.bf16, layout=ave.swizzled(ave.swizzle(3, 3, 3),
    ave.row_major((STAGES, BM, BK))))``. A shared tile lives for the whole kernel; its byte
    size is ``prod(shape) * dtype.bytes`` (at most 227 KiB per block on H100/H200, 64 KiB of
    LDS on MI300X). Indexing a shared tile by a leading index drops that mode
    (``sA[s]``, ``s`` may be a runtime value); slices work as for tensors.

    Args:
        shape: compile-time tuple of positive ints (elements), AVE115 otherwise.
        dtype: an Ave dtype (``ave.bf16``).
        space: ``"shared"`` (default) or ``"register"``.
        layout: for shared tiles, a layout (or swizzled/composed layout) from the tile's
            coordinates to element offsets in the allocation; default row-major. For
            register tiles, the TV layout distributing the tile over the threads.
            A layout whose domain is not ``shape``, or that maps outside the allocation,
            is AVE107.
        reg_class: register tiles only: ``None`` (the compiler chooses) or a register class
            such as ``"agpr"`` (AMD CDNA accumulation registers, e.g. for MFMA accumulators).

    Returns:
        A tile of ``shape`` and ``dtype``.
    """
    raise _outside("alloc")


def view(tile, shape, dtype=None, layout=None):
    """Reinterpret the bytes of ``tile`` with another shape, dtype and/or layout.

    No data moves: the result names the same bytes. Example: a ``(BM, BK)`` bf16 shared tile
    seen as ``(BM, BK // 2)`` ``i32`` for packed accesses.

    Args:
        tile: a shared, register or global tile.
        shape: the new shape, a compile-time tuple (elements of the new dtype).
        dtype: the new element type; default the tile's dtype.
        layout: the new layout; default row-major over ``shape``.

    Raises:
        AVE106: ``prod(shape) * dtype.bytes`` differs from the byte size of ``tile``.
        AVE107: ``layout`` does not cover ``shape`` or maps outside the tile's bytes.
    """
    raise _outside("view")


def transpose(tile, perm=None):
    """The same bytes seen with permuted modes: result mode ``i`` is ``tile``'s ``perm[i]``.

    ``t.T`` is ``ave.transpose(t)``. No data moves; the layout's modes are permuted (CuTe
    ``select``).

    Args:
        tile: a tile or fragment.
        perm: a compile-time permutation of ``0 .. rank-1``; default reverses the modes.

    Raises:
        AVE115: ``perm`` is not a compile-time tuple.
        AVE119: ``perm`` is not a permutation of the tile's modes.
    """
    raise _outside("transpose")


def gather(tensor, index, dim=0):
    """A global tile whose row ``r`` along ``dim`` is ``tensor[index[r], ...]`` (loads).

    Used for routed tokens (MoE): ``ave.gather(X, token_ids)[:, k0:k0 + BK]``. The result's
    extent along ``dim`` is the number of elements of ``index``; its other modes are those
    of ``tensor``. Copies from it fetch the indexed rows; use ``mask=`` for padded indices.

    Args:
        tensor: a global tensor or global tile.
        index: a 1-D ``i32`` tile (global or shared) or fragment of row indices (AVE105 if
            not ``i32``).
        dim: the gathered dimension, a compile-time int (AVE119 if out of range).
    """
    raise _outside("gather")


def scatter(tensor, index, dim=0):
    """A global tile whose row ``r`` along ``dim`` is ``tensor[index[r], ...]`` (stores).

    The store counterpart of :func:`gather`: ``ave.store(ave.scatter(Y, token_ids), out)``
    writes row ``r`` of ``out`` to row ``index[r]`` of ``Y``. If two rows share an index the
    last write wins in no defined order.

    Args:
        tensor: a global tensor or global tile.
        index: a 1-D ``i32`` tile (global or shared) or fragment (AVE105 if not ``i32``).
        dim: the scattered dimension, a compile-time int (AVE119 if out of range).
    """
    raise _outside("scatter")


# --------------------------------------------------------------------------------------------
# Data movement (collective: every thread of the workgroup executes it)
# --------------------------------------------------------------------------------------------


def copy(src, dst, vector_bytes=16, threads=None, mask=None, other=0):
    """Copy tile ``src`` to tile ``dst`` (collective; synchronous).

    The tile is split into vectors of ``vector_bytes`` bytes along its innermost dimension;
    vector ``i`` (row-major order of vectors) is moved by thread ``i % threads``, in
    repetition ``i // threads``. Global <-> shared, shared <-> shared, global -> global.

    Args:
        src, dst: tiles of the same shape (AVE116) and dtype (AVE105).
        vector_bytes: bytes per vector access, a compile-time 1, 2, 4, 8 or 16; must divide
            the bytes of the innermost dimension (AVE108); each vector must be contiguous
            and aligned in both the source and destination layouts (AVE109).
        threads: ``None`` (all threads of the workgroup), an int (the number of threads
            sharing the copy), or a thread layout giving which thread moves which vector.
        mask: ``lambda *coords: cond`` over the coordinates of the underlying tensor (global
            tiles) or of the tile (shared tiles); masked-out elements read ``other`` and are
            not written.
        other: fill value of masked-out elements (a scalar).
    """
    raise _outside("copy")


def copy_async(src, dst, vector_bytes=16, threads=None, mask=None, other=0):
    """Asynchronously copy a global tile into a shared tile (collective).

    NVIDIA: ``cp.async`` (PTX ISA, "Data Movement and Conversion Instructions: cp.async",
    cp-size 4, 8 or 16 bytes; masked-out elements use the zero-filling ``src-size`` form).
    AMD CDNA3: buffer loads straight to LDS (CDNA3 ISA, MUBUF instructions with ``lds=1``;
    4-byte vectors on gfx942). The data is visible only after the matching
    :func:`commit_async` / :func:`wait_async` and, for data other threads copied, a
    :func:`barrier`. Vector assignment, ``threads``, ``mask`` and ``other`` are as in
    :func:`copy`.

    Args:
        src: a global tile. dst: a shared tile of the same shape (AVE116) and dtype (AVE105).
        vector_bytes: 4, 8 or 16 on NVIDIA; divides the row (AVE108), aligned (AVE109).
        threads, mask, other: as in :func:`copy`.
    """
    raise _outside("copy_async")


def commit_async():
    """Close the current group of asynchronous copies issued by this thread.

    NVIDIA ``cp.async.commit_group`` (PTX ISA, "cp.async.commit_group"); on AMD groups are
    counted by the compiler for ``s_waitcnt vmcnt``. :func:`wait_async` counts groups.
    """
    raise _outside("commit_async")


def wait_async(n=0):
    """Wait until at most ``n`` committed groups of this thread's async copies are in flight.

    NVIDIA ``cp.async.wait_group n`` (PTX ISA, "cp.async.wait_group"); AMD
    ``s_waitcnt vmcnt(...)``. It only covers the calling thread's own copies: follow it with
    :func:`barrier` before reading shared bytes other threads copied.

    Args:
        n: a compile-time non-negative int (AVE115 if not constant).
    """
    raise _outside("wait_async")


def load(src, layout, vector_bytes=None, mask=None, other=0):
    """Load a tile into a register fragment distributed by the TV layout ``layout``.

    Thread ``t`` gets, as its value ``v``, the element at coordinate ``layout(t, v)``.

    Args:
        src: a global or shared tile.
        layout: a TV layout whose tile shape is ``src``'s shape (AVE107 otherwise), e.g.
            ``tiled.a`` of a :func:`tiled_mma`.
        vector_bytes: ``None`` (the widest access the layouts allow) or a compile-time
            width in bytes (AVE108 if it does not divide the row, AVE109 if misaligned).
        mask, other: as in :func:`copy`.

    Returns:
        A fragment of ``src``'s shape and dtype with layout ``layout``.
    """
    raise _outside("load")


def ldmatrix(src, layout):
    """Load a shared tile into a fragment with the ``ldmatrix`` instruction (NVIDIA).

    The same as :func:`load`, but ``ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16``
    is required (PTX ISA, "Warp-level matrix load instruction: ldmatrix"): every 8x8 matrix
    row must be 16 contiguous, 16-byte aligned bytes of shared memory.

    Args:
        src: a shared tile of 16-bit elements (AVE105 otherwise).
        layout: a TV layout the instruction can produce, e.g. ``tiled.a`` (AVE107 if it
            does not cover the tile, AVE109 if its rows are not contiguous and aligned).

    Returns:
        A fragment of ``src``'s shape and dtype with layout ``layout``.
    """
    raise _outside("ldmatrix")


def store(dst, value, vector_bytes=None, mask=None):
    """Store a register fragment into a tile (collective).

    Args:
        dst: a global or shared tile.
        value: a fragment of ``dst``'s shape (AVE116) and dtype (AVE105; use :func:`cast`).
        vector_bytes: ``None`` (the widest access the layouts allow) or a compile-time width
            in bytes (AVE108, AVE109).
        mask: as in :func:`copy`; masked-out elements are not written.
    """
    raise _outside("store")


def barrier():
    """Workgroup barrier: every thread waits, and shared memory writes become visible.

    NVIDIA ``bar.sync 0`` (PTX ISA, "Parallel Synchronization and Communication
    Instructions: bar, barrier"); AMD ``s_barrier`` (CDNA3 ISA, SOPP instructions). Every
    thread must reach it. For the analysis a barrier ends a race epoch; it does not clear
    tags (see :func:`reset`).
    """
    raise _outside("barrier")


def reset(tile):
    """Stage reset: the analysis forgets the tags of the bytes of ``tile`` (they become ⊥).

    Marks storage reused across pipeline stages. No code is generated.

    Args:
        tile: a shared or register tile.
    """
    raise _outside("reset")


# --------------------------------------------------------------------------------------------
# Fragments and compute
# --------------------------------------------------------------------------------------------


def zeros(shape, dtype, layout):
    """A register fragment of zeros distributed by the TV layout ``layout``.

    Args:
        shape: compile-time tuple (elements). dtype: an Ave dtype.
        layout: a TV layout over ``shape`` (AVE107 otherwise), e.g. ``tiled.c``.
    """
    raise _outside("zeros")


def full(shape, value, dtype, layout):
    """A register fragment filled with ``value`` (converted to ``dtype``).

    Args:
        shape: compile-time tuple (elements).
        value: a scalar, compile-time or runtime (e.g. ``-float("inf")``).
        dtype: an Ave dtype.
        layout: a TV layout over ``shape`` (AVE107 otherwise).
    """
    raise _outside("full")


def coord(shape, axis, layout):
    """An ``i32`` fragment whose element at coordinate ``c`` holds ``c[axis]``.

    The fragment is distributed by the TV layout ``layout`` (so it combines elementwise
    with fragments of that layout). Use it for masks computed in registers, e.g. padding
    keys or causal masking in attention::

        keys = n0 + ave.coord((BM, BN), 1, tiled.c)
        s = ave.where(keys < S, s, -float("inf"))

    Args:
        shape: compile-time tuple (elements). axis: which coordinate (0 <= axis < rank).
        layout: a TV layout over ``shape`` (AVE107 otherwise).
    Constants carry no tag (⊥).
    """
    raise _outside("coord")


def exp(x):
    """Elementwise ``e ** x`` of a float fragment or scalar (AVE105 for integer dtypes).

    The result has ``x``'s shape, dtype and layout; elementwise ops keep the tag fields on
    which their inputs agree.
    """
    raise _outside("exp")


def exp2(x):
    """Elementwise ``2 ** x`` of a float fragment or scalar (AVE105 for integer dtypes).

    NVIDIA ``ex2`` (PTX ISA, "Floating Point Instructions: ex2"); AMD ``v_exp_f32``.
    """
    raise _outside("exp2")


def log(x):
    """Elementwise natural logarithm of a float fragment or scalar (AVE105 for integers).

    The result has ``x``'s shape, dtype and layout.
    """
    raise _outside("log")


def log2(x):
    """Elementwise base-2 logarithm of a float fragment or scalar (AVE105 for integers).

    NVIDIA ``lg2`` (PTX ISA, "Floating Point Instructions: lg2"); AMD ``v_log_f32``.
    """
    raise _outside("log2")


def sqrt(x):
    """Elementwise square root of a float fragment or scalar (AVE105 for integers).

    The result has ``x``'s shape, dtype and layout.
    """
    raise _outside("sqrt")


def rsqrt(x):
    """Elementwise ``1 / sqrt(x)`` of a float fragment or scalar (AVE105 for integers).

    NVIDIA ``rsqrt`` (PTX ISA, "Floating Point Instructions: rsqrt"); AMD ``v_rsq_f32``.
    """
    raise _outside("rsqrt")


def abs(x):
    """Elementwise absolute value of a float or signed integer fragment or scalar.

    The result has ``x``'s shape, dtype and layout (AVE105 for ``u8``/``i1``).
    """
    raise _outside("abs")


def maximum(a, b):
    """Elementwise maximum of two fragments/scalars, broadcast as in numpy.

    Operands have the same dtype (AVE105; Python numbers take the other operand's dtype)
    and broadcastable shapes (AVE116).
    """
    raise _outside("maximum")


def minimum(a, b):
    """Elementwise minimum of two fragments/scalars, broadcast as in numpy.

    Operands have the same dtype (AVE105; Python numbers take the other operand's dtype)
    and broadcastable shapes (AVE116).
    """
    raise _outside("minimum")


def where(cond, a, b):
    """Elementwise select: ``a`` where ``cond`` is true, else ``b`` (numpy broadcasting).

    Args:
        cond: an ``i1`` fragment or scalar (a comparison; AVE105 otherwise).
        a, b: fragments or scalars of one dtype (AVE105); shapes broadcast (AVE116).
    """
    raise _outside("where")


def cast(x, dtype):
    """Convert a fragment or scalar to ``dtype``, elementwise.

    Float results round to nearest even; float to integer rounds toward zero; conversions
    to fp8 saturate to the largest finite value (448 for ``fp8e4m3``, 57344 for
    ``fp8e5m2``). The shape and layout are kept.

    Args:
        x: a fragment or scalar.
        dtype: an Ave dtype, compile-time (AVE115).
    """
    raise _outside("cast")


def reduce(x, op, axis, scope=None):
    """Reduce a fragment along ``axis`` with ``op``; the axis is removed from the shape.

    ``m = ave.reduce(s, "max", 1)`` is a row max; ``s - m[:, None]`` broadcasts it back.
    The result keeps the tag fields on which all reduced elements agree.

    Args:
        x: a fragment.
        op: ``"sum"``, ``"max"`` or ``"min"``, compile-time (AVE115).
        axis: the reduced mode, a compile-time int (AVE119 if out of range).
        scope: ``None`` (inferred from ``x``'s layout) or ``"thread"`` (within each
            thread's registers), ``"warp"`` (across lanes: ``shfl.sync`` / DPP) or
            ``"block"`` (through shared memory and a barrier). If given it is checked
            against the layout.
    """
    raise _outside("reduce")


def sum(x, axis, scope=None):
    """Sum of a fragment along ``axis``: ``ave.reduce(x, "sum", axis, scope)``.

    The axis is removed from the shape; see :func:`reduce` for ``scope``.
    """
    raise _outside("sum")


def max(x, axis, scope=None):
    """Maximum of a fragment along ``axis``: ``ave.reduce(x, "max", axis, scope)``.

    The axis is removed from the shape; see :func:`reduce` for ``scope``.
    """
    raise _outside("max")


def min(x, axis, scope=None):
    """Minimum of a fragment along ``axis``: ``ave.reduce(x, "min", axis, scope)``.

    The axis is removed from the shape; see :func:`reduce` for ``scope``.
    """
    raise _outside("min")


def convert(x, layout):
    """The same logical fragment redistributed with another TV layout.

    Moves data between threads (shuffles or shared memory) as needed.

    Args:
        x: a fragment.
        layout: a TV layout over ``x``'s shape (AVE107 otherwise).
    """
    raise _outside("convert")


def materialize(x):
    """Eager materialization: compute ``x`` now and keep it in registers.

    Without it the compiler may recompute or sink elementwise expressions to their uses.
    Returns ``x`` (same shape, dtype, layout and tags).
    """
    raise _outside("materialize")


# --------------------------------------------------------------------------------------------
# Matrix instructions
# --------------------------------------------------------------------------------------------


def mma(a, b, c, tiled):
    """Matrix multiply-accumulate ``c + a @ b`` with the tiled MMA ``tiled``; returns it.

    ``a`` is ``(BM, BK)`` with layout ``tiled.a``, ``b`` is ``(BK, BN)`` with ``tiled.b``,
    ``c`` is ``(BM, BN)`` with ``tiled.c``; dtypes are the atom's. Instructions:
    ``mma.sync.aligned.m16n8k16.row.col`` (PTX ISA §9.7.14.5.8), ``wgmma.mma_async`` (PTX
    ISA §9.7.15.5), ``v_mfma_f32_*`` (AMD CDNA3 ISA §7.1). With tagged operands it checks
    ``ave.assert_conform(a, b, contract=(1, 0))`` automatically; the result takes ``a``'s row
    fields and ``b``'s column fields.

    Raises:
        AVE110: an operand's shape or TV layout is not the one ``tiled`` expects.
        AVE105: operand dtypes differ from the atom's.
    """
    raise _outside("mma")


# --------------------------------------------------------------------------------------------
# Control
# --------------------------------------------------------------------------------------------


def range(start, stop=None, step=1, unroll=None):
    """A runtime loop: ``for i in ave.range(start, stop, step, unroll=None)``.

    Same values as Python's ``range`` (``ave.range(n)`` is ``0 .. n-1``); ``start`` and
    ``stop`` may be runtime ``i32`` values. Variables assigned in the body that existed
    before the loop are loop-carried. Plain ``range(...)`` in a kernel means ``ave.range``.
    The analysis unrolls runtime trip counts up to a bound ("proved for trip counts <= T").

    Args:
        step: a non-zero compile-time int (AVE115 if not constant).
        unroll: ``None`` (the compiler decides) or a compile-time positive unroll factor.
    """
    raise _outside("range")


def static_range(start, stop=None, step=1):
    """A loop unrolled by the front end: ``for i in ave.static_range(STAGES - 1)``.

    ``i`` is a compile-time int in each copy of the body. Same values as Python's ``range``.

    Args:
        start, stop, step: compile-time ints (AVE115 otherwise); ``step`` non-zero.
    """
    raise _outside("static_range")


def sched_barrier(mask=0):
    """A scheduling barrier: instructions may not be moved across it except those in ``mask``.

    AMD ``llvm.amdgcn.sched.barrier(mask)`` (LLVM AMDGPU intrinsics): 0 lets nothing
    cross; bits 0x1 non-memory ALU, 0x2 VALU, 0x4 SALU, 0x8 MFMA, 0x10 all VMEM,
    0x20 VMEM read, 0x40 VMEM write, 0x80 all DS, 0x100 DS read, 0x200 DS write,
    0x400 transcendental. On NVIDIA it is a compiler fence (no instruction).

    Args:
        mask: a compile-time int (AVE115 otherwise).
    """
    raise _outside("sched_barrier")


# --------------------------------------------------------------------------------------------
# Tags and assertions
# --------------------------------------------------------------------------------------------


def tag(x, fn):
    """Attach to every element of ``x`` a label computed from its coordinates; returns ``x``.

    ``Q = ave.tag(Q, lambda b, h, m, k: ave.label(head=h, row=m, k=k))``. The lambda takes
    one coordinate per mode of ``x`` (tensor coordinates for tensors; AVE104 if the count
    differs) and returns :func:`label`. Tags flow with the data through registers and
    shared memory; they cost nothing at run time.

    Raises:
        AVE112: the lambda's body uses something other than its coordinates, integer
            constants, constexprs and ``+ - * // %``.
    """
    raise _outside("tag")


def label(**fields):
    """A tag: named integer fields, built inside a :func:`tag` lambda.

    ``ave.label(head=h, row=m, k=k)``. Each field is an integer expression of the
    coordinates (``+ - * // %``, constants, constexprs; AVE112 otherwise).
    """
    raise _outside("label")


def assert_conform(x, y, fields=None, contract=None):
    """Assert that paired elements of ``x`` and ``y`` carry matching tags on ``fields``.

    Without ``contract``, ``x`` and ``y`` have the same shape (AVE116) and element ``c``
    pairs with element ``c``. With ``contract=(i, j)``, element ``x[..., c_i, ...]`` pairs
    with every element of ``y`` whose coordinate ``j`` equals ``c_i`` (MMA A and B:
    ``contract=(1, 0)``). Checked at compile time by the analysis (AVE2xx results: proved,
    violated with a witness, or unknown); an assertion whose operands carry no tags is a
    vacuous warning, not a proof.

    Args:
        fields: a compile-time tuple of field names; default the fields both carry.
        contract: ``None`` or a compile-time pair of mode indices ``(i, j)``.
    """
    raise _outside("assert_conform")


def assume(cond, message=None):
    """State a precondition of the kernel: ``cond`` holds on every launch.

    ``cond`` is a runtime condition over sizes (``Q.shape[2] <= K.shape[2]``), scalar
    arguments and program ids -- the same for every thread of the workgroup -- or a
    compile-time one (false: AVE120 for that specialization). The checker only considers
    sizes, program ids and values for which it holds (its witnesses satisfy it; a loop it
    keeps from running zero times gets no zero-trip variant); the interpreter checks it
    where it stands (AVE306); compiled code does not (no instruction is emitted). State it
    at the top of the kernel, before its first memory access and outside loops and
    branches on runtime values: the checker rejects it elsewhere, and one that differs
    across threads or that no sizes satisfy (``unknown``).

    Args:
        cond: a condition (``i1``) or a compile-time bool.
        message: a compile-time string naming the contract (default: the condition's
            source text), shown by AVE306.
    """
    raise _outside("assume")


def assert_disjoint(x, y):
    """Assert that the bytes of tiles ``x`` and ``y`` never overlap.

    E.g. two pipeline stages, or the buffers of two producer warps. Checked at compile time
    by the analysis (AVE2xx results), for every thread and unrolled iteration.
    """
    raise _outside("assert_disjoint")


# --------------------------------------------------------------------------------------------
# Compile-time helpers (real functions)
# --------------------------------------------------------------------------------------------


def cdiv(a, b):
    """Ceiling division of integers: the smallest int ``q`` with ``q * b >= a`` (``b > 0``).

    ``ave.cdiv(M, BM)`` is the number of ``BM``-row blocks covering ``M`` rows. Works in
    Python (grids: ``gemm[ave.cdiv(M, 128), ave.cdiv(N, 128)]``) and inside kernels, where
    runtime ``i32`` operands are allowed.

    Raises:
        TypeError: an operand is not an int. ZeroDivisionError: ``b == 0``.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        raise TypeError(f"ave.cdiv takes ints, got {a!r} and {b!r}")
    try:
        a, b = operator.index(a), operator.index(b)
    except TypeError:
        raise TypeError(f"ave.cdiv takes ints, got {a!r} and {b!r}") from None
    return -(-a // b)


def swizzle(B, M, S):
    """The CuTe swizzle functor ``Swizzle<B, M, S>`` on offsets (a compile-time value).

    For ``S > 0``: ``offset ^ ((offset >> S) & (((1 << B) - 1) << M))``: the ``B`` bits
    starting at bit ``M + S`` are XORed into the ``B`` bits starting at bit ``M``; the lowest
    ``M`` bits (a contiguous vector of ``2**M`` elements) are kept. Offsets are in elements.
    ``ave.swizzle(3, 3, 3)`` on a bf16 tile with 64-element rows is the usual
    conflict-free 128-byte shared-memory swizzle. Use it with :func:`swizzled`. See CuTe
    ``include/cute/swizzle.hpp``.

    Returns:
        ``ave.Swizzle(B, M, S)``.

    Raises:
        ValueError: a non-integer argument, ``B < 0``, ``M < 0`` or ``|S| < B``.
    """
    from .layout import Swizzle

    return Swizzle(B, M, S)
