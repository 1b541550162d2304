"""The editor settings of the language server (``workspace/configuration`` section ``ave``).

A thin layer over :mod:`ave_lsp.config` (the one source of configuration, shared with
``ave-lsp --check``): the editor's values are validated there and override the
``[tool.ave]`` table of the nearest ``pyproject.toml`` of each checked file
(:meth:`Settings.config_for`). A key the editor leaves out or sets to ``null`` is not set:
the pyproject value, else the default, applies.

Only the standard library is imported here; :meth:`Settings.analysis_options` imports the
analysis when a check runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ave_lsp import config as config_mod
from ave_lsp.config import DEFAULT_SOLVER_TIMEOUT_MS, Config

#: The ``workspace/configuration`` section the server asks for.
SECTION = "ave"


#: keys of the ``ave`` section that configure the client, not the server
CLIENT_KEYS = frozenset({"server", "trace"})


@dataclass(frozen=True)
class Settings:
    check_on_change: bool = False
    trip_count_bound: int | None = None
    solver_timeout_ms: int = DEFAULT_SOLVER_TIMEOUT_MS
    max_file_lines: int | None = None
    baseline: str | None = None
    inlay_hints: bool = True
    jobs: int = 0
    #: the Config fields the editor set (they override pyproject.toml)
    explicit: dict = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_json(cls, value: Any) -> tuple["Settings", list[str]]:
        """Settings from the client's ``ave`` section (anything: a client may send
        ``null`` or garbage). Returns the settings and one warning per ignored entry;
        a bad entry keeps its default."""
        if value is not None and not isinstance(value, dict):
            return cls(), [f"the 'ave' settings must be an object, not {type(value).__name__}"]
        raw_baseline = value.get("baseline") if isinstance(value, dict) else None
        # an unknown key is ignored with a warning in the log, as docs/lsp.md says (it
        # was silent: a misspelt setting did nothing and said nothing; a review helper);
        # not the keys a client's own settings of the same section use (VS Code's
        # `ave.server.*` and `ave.trace.server`, when a client sends the whole section)
        if isinstance(value, dict) and any(k in CLIENT_KEYS for k in value):
            value = {k: v for k, v in value.items() if k not in CLIENT_KEYS}
        values, warnings = config_mod.validate(value, "ave", warn_unknown=True)
        if "baseline" in values:
            values["baseline"] = os.path.expanduser(raw_baseline)   # resolved per root
        base = Settings()
        fields = {k: values.get(k, getattr(base, k)) for k in
                  ("check_on_change", "inlay_hints", "trip_count_bound", "solver_timeout_ms",
                   "max_file_lines", "baseline", "jobs")}
        return cls(**fields, explicit=dict(values)), warnings

    def config_for(self, path: str | None, root: str | None = None) -> tuple[Config, list[str]]:
        """The effective configuration of ``path``: pyproject.toml, then these settings.
        A relative editor ``baseline`` is taken relative to the workspace ``root``."""
        overrides = dict(self.explicit)
        b = overrides.get("baseline")
        if b is not None and not os.path.isabs(b):
            overrides["baseline"] = os.path.abspath(os.path.join(root or os.getcwd(), b))
        start = path if path and not path.startswith("<") else root
        return config_mod.resolve(start, overrides)

    def analysis_options(self) -> Any:
        """The :class:`ave_core.analysis.AnalysisOptions` of the editor's values alone
        (imports the analysis: call it in the worker, not on the event loop)."""
        from ave_core.analysis import AnalysisOptions

        return AnalysisOptions(trip_bound=self.trip_count_bound,
                               solver_timeout_ms=self.solver_timeout_ms)
