"""GPU tests: skipped cleanly where torch has no CUDA device. On a machine without the MLIR
bindings they launch from a warm JIT cache ($AVE_CACHE_DIR) filled beforehand with
``python -m ave_core.jit compile examples/gemm.py``."""

import pytest


def pytest_collection_modifyitems(config, items):
    try:
        import torch
        ok = torch.cuda.is_available()
    except Exception:
        ok = False
    if ok:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    for it in items:
        if "gpu" in it.keywords:
            it.add_marker(skip)
