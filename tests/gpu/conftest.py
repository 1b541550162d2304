"""GPU tests: skipped cleanly where torch has no CUDA device. On a machine without the MLIR
bindings they launch from a warm JIT cache ($AVE_CACHE_DIR) filled beforehand with
``python -m ave_core.jit compile examples/gemm.py``."""

import pytest


def pytest_collection_modifyitems(config, items):
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any failed import: no launches here
        reason = f"needs torch with an NVIDIA GPU (torch cannot be imported: {e})"
    else:
        if torch.cuda.is_available():
            return
        reason = "needs an NVIDIA GPU (torch.cuda.is_available() is False)"
    skip = pytest.mark.skip(reason=reason)
    for it in items:
        if "gpu" in it.keywords:
            it.add_marker(skip)
