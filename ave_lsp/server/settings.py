"""The editor settings of the language server (``workspace/configuration`` section ``ave``).

=================  ===========  ==========================================================
setting            type         meaning
=================  ===========  ==========================================================
``checkOnChange``  bool         also check while typing (debounced), not only on open/save
``tripCountBound`` int | null   unroll runtime loops for trip counts ``1..T``
                                (``null``: the kernel's ``STAGES + 2``)
``solverTimeoutMs`` int         budget of one SMT query; past it an assertion is unknown
=================  ===========  ==========================================================

Only the standard library is imported here; :meth:`Settings.analysis_options` imports the
analysis when a check runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The ``workspace/configuration`` section the server asks for.
SECTION = "ave"

DEFAULT_SOLVER_TIMEOUT_MS = 2000


@dataclass(frozen=True)
class Settings:
    check_on_change: bool = False
    trip_count_bound: int | None = None
    solver_timeout_ms: int = DEFAULT_SOLVER_TIMEOUT_MS

    @classmethod
    def from_json(cls, value: Any) -> tuple["Settings", list[str]]:
        """Settings from the client's ``ave`` section (anything: a client may send
        ``null`` or garbage). Returns the settings and one warning per ignored entry;
        a bad entry keeps its default."""
        warnings: list[str] = []
        if value is None:
            return cls(), warnings
        if not isinstance(value, dict):
            return cls(), [f"the 'ave' settings must be an object, not {type(value).__name__}"]
        check_on_change = value.get("checkOnChange", False)
        if not isinstance(check_on_change, bool):
            warnings.append(f"ave.checkOnChange must be true or false, not {check_on_change!r}")
            check_on_change = False
        bound = value.get("tripCountBound")
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)
                                  or bound < 1):
            warnings.append(f"ave.tripCountBound must be an integer >= 1 or null, "
                            f"not {bound!r}")
            bound = None
        timeout = value.get("solverTimeoutMs", DEFAULT_SOLVER_TIMEOUT_MS)
        if timeout is None:
            timeout = DEFAULT_SOLVER_TIMEOUT_MS
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
            warnings.append(f"ave.solverTimeoutMs must be an integer >= 1, not {timeout!r}")
            timeout = DEFAULT_SOLVER_TIMEOUT_MS
        return cls(check_on_change, bound, timeout), warnings

    def analysis_options(self) -> Any:
        """The :class:`ave_core.analysis.AnalysisOptions` these settings map onto
        (imports the analysis: call it in the worker, not on the event loop)."""
        from ave_core.analysis import AnalysisOptions

        return AnalysisOptions(trip_bound=self.trip_count_bound,
                               solver_timeout_ms=self.solver_timeout_ms)
