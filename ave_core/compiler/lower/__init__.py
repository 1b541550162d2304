"""Lowering of Ave IR to MLIR (see :mod:`.kernel`): one module per concern —
:mod:`.emit` (text and symbolic integers), :mod:`.memory` (tiles, addresses, copies, loads,
stores), :mod:`.compute` (scalars, fragments, control flow), :mod:`.nvvm` (NVIDIA
instructions). Importing this package needs no MLIR: it produces text that
:mod:`ave_core.jit.pipeline` parses and compiles with the MLIR Python bindings."""

from ave_core.compiler.lower.emit import LoweringError
from ave_core.compiler.lower.kernel import LoweredKernel, ParamABI, lower_kernel, shared_plan

__all__ = ["LoweringError", "LoweredKernel", "ParamABI", "lower_kernel", "shared_plan"]
