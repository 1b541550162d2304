"""Worker targets for tests/lsp/test_parallel.py: they stand in for
:func:`ave_core.pool.run_unit` in an :class:`~ave_core.pool.AnalysisPool` to make a worker
die on chosen specializations. Imported by name in the worker processes (this directory
is on ``sys.path`` under pytest)."""

from __future__ import annotations

import os
import pickle
import signal

from ave_core.pool import run_unit


def _config_index(unit: dict):
    if unit.get("kind") == "ir":
        return pickle.loads(unit["ir"]).config_index
    if unit.get("kind") == "source":
        return unit["identity"][2]
    return "warm"


def kill_on_config(config_index: int, unit: dict) -> dict:
    """SIGKILL the worker whenever it gets the specialization ``configs[config_index]``."""
    if _config_index(unit) == config_index:
        os.kill(os.getpid(), signal.SIGKILL)
    return run_unit(unit)


def kill_once_on_config(config_index: int, marker: str, unit: dict) -> dict:
    """SIGKILL the worker the first time it gets ``configs[config_index]`` (the file
    ``marker`` records that it happened): the retry succeeds."""
    if _config_index(unit) == config_index:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return run_unit(unit)
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)
    return run_unit(unit)


def raise_on_config(config_index: int, unit: dict) -> dict:
    """Raise (outside the analysis) on ``configs[config_index]``."""
    if _config_index(unit) == config_index:
        raise RuntimeError("injected failure")
    return run_unit(unit)


def wait_for_file(path: str, unit: dict) -> dict:
    """Block until ``path`` exists (a unit that runs as long as the test wants)."""
    import time

    if unit.get("kind") != "warm":
        while not os.path.exists(path):
            time.sleep(0.01)
    return run_unit(unit)
