"""Ave: a tile-based GPU kernel DSL, its compiler, a data-flow invariant checker and tools.

Packages: :mod:`ave_core.lang` (the DSL surface), :mod:`ave_core.compiler` (front end, IR),
:mod:`ave_core.diagnostics` (the one diagnostic model). Heavy dependencies (MLIR, LLVM,
torch, GPU runtimes) are imported lazily by the parts that need them.
"""

__version__ = "0.1.0"
