"""The CPU reference interpreter of Ave kernels.

Use :func:`run` on a compiled specialization (:class:`~ave_core.compiler.ir.KernelIR`), or
launch a kernel the way you would on a GPU — ``kernel[grid](*args, **constexprs)`` — with
CPU tensors (numpy arrays or torch CPU tensors) or with ``AVE_INTERPRET=1``.

Arguments: global tensors are numpy arrays or torch CPU tensors of the parameter's dtype
(numpy has no bf16/fp8: pass torch tensors, or numpy ``uint16``/``uint8`` arrays holding
the raw bits); outputs are written in place. Scalars are Python numbers.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ave_core.compiler.ir import KernelIR, ScalarType, TensorType
from ave_core.interp import numerics as NUM
from ave_core.interp.machine import InterpError, Machine, RTensor, RunResult

__all__ = ["run", "launch", "RunResult", "InterpError", "KernelCheckError", "as_storage_array"]


class KernelCheckError(RuntimeError):
    """A launch through the interpreter tripped dynamic checks (``.diagnostics``)."""

    def __init__(self, diagnostics: list) -> None:
        self.diagnostics = diagnostics
        lines = "\n".join(d.format_text() for d in diagnostics[:10])
        super().__init__(f"{len(diagnostics)} dynamic check(s) failed:\n{lines}")


_TORCH_VIEW = {"bf16": "int16", "fp8e4m3": "uint8", "fp8e5m2": "uint8", "f16": None,
               "f32": None, "i32": None, "i8": None, "u8": None, "i16": None, "i1": "uint8"}


def as_storage_array(x: Any, dtype: Any, name: str) -> np.ndarray:
    """A numpy view (sharing memory) of ``x`` in the storage dtype of ``dtype``.

    Raises:
        TypeError: ``x`` is not an array/tensor or has another dtype; ValueError: a torch
            tensor not on the CPU.
    """
    st = NUM.STORAGE[dtype.name]
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch
        if x.device.type != "cpu":
            raise ValueError(f"`{name}` is on {x.device}; the interpreter needs CPU tensors")
        expect = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
                  "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
                  "fp8e4m3": getattr(torch, "float8_e4m3fn", None),
                  "fp8e5m2": getattr(torch, "float8_e5m2", None), "i1": torch.bool}[dtype.name]
        if x.dtype != expect:
            raise TypeError(f"`{name}` is a {x.dtype} tensor but the kernel declares {dtype}")
        v = _TORCH_VIEW[dtype.name]
        if v is not None:
            x = x.view(getattr(torch, v))
        arr = x.numpy()
        return arr.view(st) if arr.dtype != st else arr
    if isinstance(x, np.ndarray):
        if x.dtype != st:
            hint = " (raw bf16 bits as uint16, or a torch tensor)" if dtype.name == "bf16" else ""
            raise TypeError(f"`{name}` is a numpy {x.dtype} array but {dtype} tensors are "
                            f"stored as {st}{hint}")
        return x
    raise TypeError(f"`{name}` must be a numpy array or a torch CPU tensor, got "
                    f"{type(x).__name__}")


def _flat_view(arr: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    if arr.size == 0:
        return arr.reshape(-1), tuple(0 for _ in arr.shape)
    item = arr.itemsize
    strides = tuple(s // item for s in arr.strides)
    if any(s < 0 for s in strides):
        raise ValueError("tensors with negative strides are not supported")
    span = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides))
    flat = np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,))
    return flat, strides


def run(kernel: KernelIR, grid: int | Sequence[int], args: Sequence[Any], *,
        provenance: bool = False, checks: bool = True) -> RunResult:
    """Execute ``kernel`` on the CPU for every program of ``grid``.

    Args:
        kernel: one specialization from the front end.
        grid: programs per axis (int or 1-3 ints).
        args: one per runtime parameter, in order (tensors, then scalars as declared).
        provenance: also carry, for every value, the global element it came from, and record
            every ``mma``'s operand provenance (``RunResult.mma_trace``).
        checks: run the dynamic checks (out-of-bounds, shared bounds, uninitialized reads,
            races).

    Returns:
        A :class:`RunResult` (dynamic-check diagnostics; the MMA trace).

    Raises:
        TypeError / ValueError: wrong number, kinds, dtypes or ranks of arguments.
        InterpError: an op the interpreter does not support.
    """
    grid_t = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(grid_t) <= 3 or any((not isinstance(g, int)) or g < 1 for g in grid_t):
        raise ValueError(f"grid must be 1 to 3 positive ints, got {grid!r}")
    if len(args) != len(kernel.params):
        raise TypeError(f"{kernel.name} takes {len(kernel.params)} runtime arguments "
                        f"({', '.join(p.name for p in kernel.params)}), got {len(args)}")
    tensors: dict = {}
    scalars: dict = {}
    for i, (p, a) in enumerate(zip(kernel.params, args)):
        if isinstance(p.type, TensorType):
            arr = as_storage_array(a, p.type.dtype, p.name)
            if arr.ndim != p.type.rank:
                raise ValueError(f"`{p.name}` has rank {arr.ndim}; the kernel declares "
                                 f"{p.type.rank}")
            flat, strides = _flat_view(arr)
            if arr.size and arr.shape[-1] > 1 and strides[-1] != 1:
                raise ValueError(f"`{p.name}` has innermost stride {strides[-1]}; Ave tensors "
                                 "are contiguous along their last dimension (pass "
                                 ".contiguous() / np.ascontiguousarray)")
            tensors[p.value] = RTensor(len(tensors), p.name, p.type.dtype, flat,
                                       tuple(arr.shape), strides)
        elif isinstance(p.type, ScalarType):
            if not isinstance(a, (int, float, np.integer, np.floating, bool)):
                raise TypeError(f"`{p.name}` is a {p.type.dtype} scalar, got "
                                f"{type(a).__name__}")
            scalars[p.value] = NUM.round_to(p.type.dtype, np.asarray(a))
    return Machine(kernel, grid_t, tensors, scalars, provenance, checks).run()


def launch(kernel_obj: Any, grid: Any, args: Sequence[Any], constexprs: dict) -> RunResult:
    """Compile ``kernel_obj`` (an ``@ave.kernel``) for ``constexprs`` from its source file and
    :func:`run` it. Raises :class:`KernelCheckError` when a dynamic check fails."""
    from ave_core.compiler.frontend import specialize_kernel
    if kernel_obj.source_file is None:
        raise InterpError(f"cannot find the source file of kernel {kernel_obj.name}")
    k = specialize_kernel(kernel_obj, constexprs)
    res = run(k, grid, args)
    errors = [d for d in res.diagnostics if d.severity.label == "error"]
    if errors:
        raise KernelCheckError(errors)
    return res
