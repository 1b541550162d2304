"""The checker on the bundled examples and their broken copies.

* correct kernels: every assertion proved, coverage 100%, no warnings, every config;
* every manifest case the checker must catch: the manifest's code at the manifest's line;
* every operand-pairing witness, the checker's own and the hand-derived one from the
  manifest, replayed through the interpreter's provenance mode (an oracle that shares
  nothing with z3 or the tag engine): the paired elements really disagree.
"""

from __future__ import annotations

import pathlib
import tomllib

import pytest

from ave_core.analysis import analyze
from ave_core.analysis.replay import confirm_pair, find_records, replay_witness
from ave_core.compiler.frontend import compile_file
from ave_core.interp import run

from .inputs import inputs_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ["gemm.py", "flash_attention.py", "moe.py"]
MANIFEST = tomllib.loads((ROOT / "examples/broken/manifest.toml").read_text("utf-8"))
CHECKER = [c for c in MANIFEST["case"] if c["expect"] == "checker"]

_cache: dict = {}


def _analysis(path: pathlib.Path, config: int | None):
    key = (str(path), config)
    if key not in _cache:
        res = compile_file(str(path))
        assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
        ks = res.kernels
        k = ks[config or 0] if config is not None else ks
        _cache[key] = (k, analyze(k) if config is not None else [analyze(x) for x in k])
    return _cache[key]


@pytest.mark.parametrize("name", EXAMPLES)
def test_correct_examples_proved_full_coverage_no_warnings(name):
    kernels, analyses = _analysis(ROOT / "examples" / name, None)
    assert len(analyses) == len(kernels) >= 1
    for a in analyses:
        assert a.diagnostics == [], [d.format_text() for d in a.diagnostics]
        assert a.assertions, "every example has assertions (at least its mma)"
        for r in a.assertions:
            assert r.status == "proved", (a.kernel.constexprs, r.kind, r.loc, r.reason)
            assert r.coverage == 1.0, (r.kind, r.loc, r.coverage)
        assert any(r.kind == "mma" for r in a.assertions)


@pytest.mark.parametrize("case", CHECKER, ids=[c["file"] for c in CHECKER])
def test_broken_case_reported_at_manifest_line(case):
    _, a = _analysis(ROOT / "examples/broken" / case["file"], case.get("config", 0))
    hits = [d for d in a.diagnostics if d.code == case["code"]
            and d.range.start.line == case["line"] - 1]
    assert hits, (case["code"], case["line"], [d.format_text() for d in a.diagnostics])
    if case["code"] in ("AVE201", "AVE202"):
        assert any(r.status == "violated" and r.loc.range.start.line == case["line"] - 1
                   for r in a.assertions)
        w = hits[0].witness
        for key in ("block", "threads", "loop_indices", "coordinates", "tags",
                    "program_points"):
            assert key in w


PAIRING = [c for c in CHECKER if c["code"] == "AVE201"]


def _trips(loops: dict) -> int:
    return max([v for k, v in loops.items() if k != "kk"] + [0]) + 1


@pytest.mark.parametrize("case", PAIRING, ids=[c["file"] for c in PAIRING])
def test_reported_witness_replays_in_the_interpreter(case):
    k, a = _analysis(ROOT / "examples/broken" / case["file"], case.get("config", 0))
    checked = 0
    for r in a.assertions:
        if r.status != "violated" or r.kind not in ("mma", "assert_conform"):
            continue
        w = r.witness
        trips = max(w["trip_counts"].values()) if w["trip_counts"] else 1
        grid, args = inputs_for(k, w["block"], trips)
        res = run(k, grid, args, provenance=True, checks=False)
        rp = replay_witness(k, res, r.kind, r.loc.range, w)
        assert rp.confirmed, (r.kind, r.loc, rp)
        # and the interpreter sees exactly the values the checker printed
        assert rp.x_value == w["operands"]["x"]["tags"][rp.field]
        assert rp.y_value == w["operands"]["y"]["tags"][rp.field]
        checked += 1
    assert checked >= 1


@pytest.mark.parametrize("case", PAIRING, ids=[c["file"] for c in PAIRING])
def test_hand_witness_replays_in_the_interpreter(case):
    k, a = _analysis(ROOT / "examples/broken" / case["file"], case.get("config", 0))
    hw = case["witness"]
    # (the loop indices name compile-time loops too -- `kk` of a static k-step loop --
    # as the interpreter's records do: one record per iteration of every loop)
    loops = dict(hw.get("loop", {}))
    occurrence = 0
    trips = _trips(dict(hw.get("loop", {})))
    grid, args = inputs_for(k, hw["block"], max(trips, 1))
    res = run(k, grid, args, provenance=True, checks=False)
    kind = case["assertion"]
    # the op on the manifest's line
    op = next(o for o in k.walk() if o.name == f"ave.{kind}"
              and o.loc.range.start.line == case["line"] - 1)
    recs = find_records(res, kind, op.loc.range, tuple(loops.items()), tuple(hw["block"]))
    assert len(recs) > occurrence, (kind, loops, len(recs))
    coords = hw["coordinates"]
    rp = confirm_pair(k, res, recs[occurrence], hw["thread"], dict(coords["x"]),
                      dict(coords["y"]))
    assert rp is not None and rp.confirmed, (case["file"], hw)


def test_pairing_notes_name_the_operands_as_the_message_does():
    # an MMA's message says A/B, an assert_conform's x/y: the note listing both elements
    # used x/y for both (a fresh-user run); the elements as in the message, not dicts
    _, a = _analysis(ROOT / "examples/broken/flash_attention_v_not_transposed.py", 0)
    got = {}
    for d in a.diagnostics:
        if d.code == "AVE201":
            kind = "mma" if d.message.startswith("MMA operand pairing") else "conform"
            got.setdefault(kind, d.notes[0])
    assert got["mma"].startswith("A = computed[batch=0, head=0, row=0, key=0] (slot [0, 0], "
                                 "thread 0), B = V[batch=0, head=0, key=4, col=32] (slot")
    assert got["conform"].startswith("x = computed[batch=0, head=0, row=0, key=0] (slot "
                                     "[0, 0], thread 0), y = V[batch=0, head=0, key=4, col=32]")


def test_mma_finding_names_its_related_steps_a_and_b():
    # the message says "A holds ... B holds", the related steps said "x: ..." / "y: ..."
    # (a new user's report); the witness keeps its operand keys x and y
    from ave_core.compiler.frontend import compile_file
    k = compile_file(str(ROOT / "examples" / "broken" / "gemm_swizzle_mismatch.py")).kernels[0]
    (d,) = [d for d in analyze(k).diagnostics if "MMA operand pairing" in d.message]
    labels = [r.message for r in d.related]
    assert labels[0] == "A: tag introduced (A)" and any(x.startswith("B: ") for x in labels)
    assert all(p["label"][:3] in ("x: ", "y: ") for p in d.witness["program_points"])
