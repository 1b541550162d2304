"""The machine-readable settings schema (:func:`ave_lsp.config.settings_schema`) agrees
with what the configuration layer really accepts (:func:`ave_lsp.config.validate`) and
with the :class:`~ave_lsp.config.Config` defaults."""

from __future__ import annotations

import dataclasses

import jsonschema
import pytest

from ave_lsp import config as cfg
from ave_lsp.server.settings import Settings

SCHEMA = cfg.settings_schema()

# values of every JSON kind, and the edges of the integer bounds
PROBES = [None, True, False, 0, 1, 2, 2000, -1, 1.5, "", "x.json", "~/b.json", [], {}, [1]]


def test_schema_is_a_valid_json_schema_naming_every_key():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert tuple(SCHEMA["properties"]) == cfg.KEYS
    for key, prop in SCHEMA["properties"].items():
        assert prop["description"].strip(), key
        assert "x-ave-flag" in prop, key


def test_defaults_are_the_config_defaults():
    fields = {f.name: f.default for f in dataclasses.fields(cfg.Config)}
    expected = {"solverTimeoutMs": fields["solver_timeout_ms"],
                "tripCountBound": fields["trip_count_bound"],
                "checkOnChange": fields["check_on_change"],
                "maxFileLines": fields["max_file_lines"],
                "baseline": fields["baseline"],
                "inlayHints": fields["inlay_hints"],
                "jobs": fields["jobs"]}
    assert fields["inlay_hints"] is True
    assert fields["jobs"] == 0                     # automatic: 1.5 workers per CPU core
    assert {k: p["default"] for k, p in SCHEMA["properties"].items()} == expected
    assert expected["solverTimeoutMs"] == cfg.DEFAULT_SOLVER_TIMEOUT_MS == 2000
    # and the server's Settings start from the same values
    s = Settings()
    assert (s.check_on_change, s.trip_count_bound, s.solver_timeout_ms, s.max_file_lines,
            s.baseline) == (False, None, 2000, None, None)
    # every default is itself valid
    jsonschema.validate({k: p["default"] for k, p in SCHEMA["properties"].items()}, SCHEMA)


@pytest.mark.parametrize("key", cfg.KEYS)
def test_validate_accepts_exactly_what_the_schema_accepts(key, tmp_path):
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for v in PROBES:
        values, warnings = cfg.validate({key: v}, "t", str(tmp_path))
        if v is None:
            # the editor's section: null (like an absent key) means "not set"
            assert values == {} and warnings == [], (key, values, warnings)
            continue
        schema_ok = validator.is_valid({key: v})
        got_ok = cfg._FIELDS[key] in values
        assert got_ok == schema_ok, (key, v, values, warnings)
        assert bool(warnings) == (not schema_ok), (key, v, warnings)
    # a value TOML can express is judged the same in [tool.ave] (TOML has no null)
    for v in [x for x in PROBES if x is not None]:
        values, _ = cfg.validate({key: v}, "t", str(tmp_path), null_is_unset=False)
        assert (cfg._FIELDS[key] in values) == validator.is_valid({key: v}), (key, v)


def test_unknown_keys_are_outside_the_schema():
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid({"solverTimeout": 5})
    _, warnings = cfg.validate({"solverTimeout": 5}, "t")
    assert warnings and "unknown key" in warnings[0]


def test_flags_exist_on_the_command_line():
    from ave_lsp.cli import build_parser

    options = {o for a in build_parser()._actions for o in a.option_strings}
    for key, prop in SCHEMA["properties"].items():
        if prop["x-ave-flag"] is not None:
            assert prop["x-ave-flag"] in options, key


def test_each_call_returns_a_fresh_schema():
    a = cfg.settings_schema()
    a["properties"]["checkOnChange"]["default"] = True
    assert cfg.settings_schema()["properties"]["checkOnChange"]["default"] is False
