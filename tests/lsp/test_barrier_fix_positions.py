"""Where the missing-barrier quick fix goes, on layouts of the racing statement.

The analysis reports a race (AVE207) at the later access; its fix inserts
``<indent>ave.barrier()`` as a new line before ``fix["line"]``. That must be the first line
of the statement holding the access, with that line's own indentation (tabs stay tabs),
and the text must still parse once the fix is applied. Where no single new line can go
before the statement alone (it shares its line: ``x = 1; a = ...``, ``if c: a = ...``),
no fix is offered. Variants of examples/broken/gemm_missing_barrier.py (one config, one
race left: see _only_the_race_at_a).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ave_core.check import check_paths

ROOT = Path(__file__).resolve().parents[2]
SRC = (ROOT / "examples" / "broken" / "gemm_missing_barrier.py").read_text("utf-8")
A = "        a = ave.ldmatrix(sA[s], tiled.a)\n"


def _one_config(src: str) -> str:
    # keep configs[0] only (the race is in every configuration)
    out = re.sub(r"(configs=\[\n\s*dict\([^\n]*\),\n)(\s*dict\([^\n]*\),\n)+", r"\1", src)
    assert out != src and A in out
    return out


def _tabs(src: str) -> str:
    out = []
    for line in src.split("\n"):
        m = re.match(r"^( +)", line)
        if m and len(m.group(1)) % 4 == 0:
            line = "\t" * (len(m.group(1)) // 4) + line[len(m.group(1)):]
        out.append(line)
    return "\n".join(out)


def _only_the_race_at_a(src: str) -> str:
    """The barrier the broken example lacks put back, and a synchronous copy of the
    stage just before ``a = ...``: the one race left is the read of ``a`` after other
    threads' writes of that copy. (With the example's four races the analysis offers all
    of them one barrier, before the refill -- tests/analysis/test_barrier_coordination.py
    -- and the fix of ``a`` would not be its own statement's.)"""
    bug = ("        # BUG: no ave.barrier(): other threads' tile kt unseen, refill races "
           "with readers\n")
    assert bug in src
    out = src.replace(bug, "        ave.barrier()\n")
    return out.replace(A, "        ave.copy(A[m0:m0 + BM, kt * BK:kt * BK + BK], sA[s], "
                          "vector_bytes=16,\n"
                          "                 mask=lambda m, k: (m < M) & (k < K))\n" + A)


BASE = _only_the_race_at_a(_one_config(SRC))
VARIANTS = {
    # name: (text, whether the ldmatrix race of `a` gets a fix)
    "plain": (BASE, True),
    "multi_line": (BASE.replace(A, "        a = (\n            ave.ldmatrix(sA[s],\n"
                                   "                         tiled.a))\n"), True),
    "tabs": (_tabs(BASE), True),
    "nested_static_loop": (BASE.replace(A, "        for j in ave.static_range(1):\n"
                                           "            a = ave.ldmatrix(sA[s], tiled.a)\n"),
                           True),
    "helper_call": (BASE.replace("def row_swizzle(", "def lda(x, t):\n    return ave.ldmatrix"
                                 "(x, t)\n\n\ndef row_swizzle(")
                    .replace(A, "        a = lda(sA[s], tiled.a)\n"), True),
    "semicolon": (BASE.replace(A, "        s2 = s; a = ave.ldmatrix(sA[s2], tiled.a)\n"), False),
    "one_line_if": (BASE.replace(A, "        if STAGES > 1: a = ave.ldmatrix(sA[s], tiled.a)\n"
                                    "        else: a = ave.ldmatrix(sA[s], tiled.a)\n"), False),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_barrier_fix_goes_before_the_statement(name, tmp_path):
    text, has_fix = VARIANTS[name]
    path = tmp_path / "gemm_race.py"
    path.write_text(text, "utf-8")
    ast.parse(text)
    report = check_paths([str(path)])
    races = [d for d in report["diagnostics"] if d["code"] == "AVE207"]
    assert races, "the race is found"
    lines = text.split("\n")
    starts = {(n.lineno - 1, n.col_offset) for n in ast.walk(ast.parse(text))
              if isinstance(n, ast.stmt)}
    fixes = [d["fix"] for d in races if d.get("fix")]
    for fix in fixes:
        line, indent = fix["line"], fix["indent"]
        lead = lines[line][:len(lines[line]) - len(lines[line].lstrip(" \t"))]
        assert indent == lead                              # the line's own indentation
        assert (line, len(indent)) in starts               # a statement starts the line
        fixed = lines[:line] + [indent + "ave.barrier()"] + lines[line:]
        ast.parse("\n".join(fixed))                        # still valid Python
    # the race whose later access is the ldmatrix of `a` (a read after the synchronous
    # copy of the stage by other threads; in the helper variant, inside `lda`) has a fix exactly when the statement `a = ...`
    # starts its line, and the fix goes before that statement
    reads = {i for i, ln in enumerate(lines) if "ave.ldmatrix(sA" in ln or
             "ave.ldmatrix(x, t)" in ln}
    stmt = next(i for i, ln in enumerate(lines) if ln.strip().startswith("a = ") or
                re.match(r"\s*s2 = s; a = |\s*if STAGES > 1: a = ", ln))
    at_a = [d for d in races if d["range"]["start"]["line"] in reads]
    assert at_a
    assert all(bool(d.get("fix")) == has_fix for d in at_a)
    if has_fix:
        assert all(d["fix"]["line"] == stmt for d in at_a)
