"""The bundled example kernels and the manifest of their broken variants.

* ``examples/broken/manifest.toml`` parses and lists every broken file, each with the
  fields its kind of expectation needs;
* a checker case's ``line`` holds the assertion (or mma) it names; every broken file carries
  its ``# BUG:`` comment and differs from its correct kernel in a line or two of code;
* every example parses, has a module docstring and ``configs``; once the front end is
  importable, every example (correct or broken: the bugs are semantic) compiles for every
  configuration without an error diagnostic;
* each hand-derived witness of a checker case really exhibits the bug: it is recomputed from
  the layouts and the matrix-instruction fragment tables of ``ave_core.lang`` (and a model of
  cp.async commit groups for the pipeline cases);
* once ``ave_core.analysis`` is importable: the correct examples prove every assertion, each
  checker case is reported with its code, line, block, loop and thread, and the interpreter
  cases pass the checker (they are outside the invariant vocabulary);
* once ``ave_core.interp`` is importable: the correct examples compute the numpy reference
  (ragged shapes, GQA, causal), and each interpreter case shows its outcome.
"""

from __future__ import annotations

import ast
import difflib
import pathlib
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BROKEN = EXAMPLES / "broken"
MANIFEST = BROKEN / "manifest.toml"

CODES = {"AVE201": ("mma", "assert_conform"), "AVE202": ("assert_disjoint",),
         "AVE203": ("read",), "AVE206": ("mma",), "AVE207": ("access",),
         "AVE208": ("access",)}
#: codes an analysis may report besides the expected one (204: vacuous, 205: unknown)
ANALYSIS_CODES = set(CODES) | {"AVE204", "AVE205", "AVE206", "AVE207", "AVE208"}
OUTCOMES = {"wrong_result", "oob", "race", "uninit"}
ASSERTION_CALL = {"mma": ("ave.mma(",), "assert_conform": ("ave.assert_conform(",),
                  "assert_disjoint": ("ave.assert_disjoint(",),
                  "read": ("ave.ldmatrix(", "ave.load("),
                  "access": ("ave.ldmatrix(", "ave.load(", "ave.store(", "ave.copy(",
                             "ave.copy_async(")}


def _manifest() -> dict:
    with MANIFEST.open("rb") as f:
        return tomllib.load(f)


CASES = _manifest()["case"]
CORRECT = sorted(p for p in EXAMPLES.rglob("*.py") if p.parent != BROKEN)
ALL_EXAMPLES = CORRECT + sorted(BROKEN.glob("*.py"))


def _ids(cases):
    return [c["file"] for c in cases]


def _lines(path: pathlib.Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _kernel_def(path: pathlib.Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"{path.name} defines no function {name!r}")


def _kernel_names(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if isinstance(f, ast.Attribute) and f.attr == "kernel":
                    out.append(node.name)
    return out


def _configs(fn: ast.FunctionDef) -> list[dict]:
    """The ``configs=[dict(...), ...]`` of a kernel's decorator, as dicts of constants."""
    for d in fn.decorator_list:
        if isinstance(d, ast.Call):
            for kw in d.keywords:
                if kw.arg == "configs":
                    assert isinstance(kw.value, ast.List), "configs must be a list literal"
                    out = []
                    for e in kw.value.elts:
                        assert isinstance(e, ast.Call) and getattr(e.func, "id", None) == "dict"
                        out.append({k.arg: ast.literal_eval(k.value) for k in e.keywords})
                    return out
    return []


def _code_after_docstring(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    first = tree.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    return _lines(path)[first.end_lineno:]


# ------------------------------------------------------------------------------- manifest

def test_manifest_lists_every_broken_file_once():
    files = [c["file"] for c in CASES]
    assert len(files) == len(set(files)), "a broken file is listed twice"
    on_disk = sorted(p.name for p in BROKEN.glob("*.py"))
    assert sorted(files) == on_disk


def test_each_kernel_has_enough_broken_variants():
    bases = [c["base"] for c in CASES]
    for base in ("gemm.py", "flash_attention.py", "moe.py"):
        assert bases.count(base) >= 3, base


def test_the_required_bug_kinds_are_covered():
    text = " ".join(c["bug"].lower() + " " + c["file"] for c in CASES)
    for needle in ("swizzle", "off by one", "barrier", "transpos", "head", "mask"):
        assert needle in text, needle
    assert {c.get("code") for c in CASES} >= {"AVE201", "AVE202"}
    assert {c.get("assertion") for c in CASES} >= {"mma", "assert_conform", "assert_disjoint"}


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_case_fields(case):
    for key in ("file", "base", "kernel", "bug", "config", "expect"):
        assert key in case, key
    path, base = BROKEN / case["file"], EXAMPLES / case["base"]
    assert path.is_file() and base.is_file()
    assert case["bug"].strip().endswith(".")
    assert case["kernel"] in _kernel_names(path)
    assert case["kernel"] in _kernel_names(base)
    configs = _configs(_kernel_def(path, case["kernel"]))
    assert configs == _configs(_kernel_def(base, case["kernel"]))
    assert 0 <= case["config"] < max(1, len(configs))
    if case["expect"] == "checker":
        assert case["code"] in CODES
        assert case["assertion"] in CODES[case["code"]]
        assert isinstance(case["line"], int) and case["line"] >= 1
        assert set(case.get("may_also", [])) <= ANALYSIS_CODES
        w = case["witness"]
        for key in ("block", "thread", "warp", "lane", "loop", "coordinates"):
            assert key in w, key
        assert w["warp"] == w["thread"] // 32 and w["lane"] == w["thread"] % 32
        # an out-of-bounds access may sit outside every loop (a prologue copy)
        assert isinstance(w["loop"], dict) and (w["loop"] or case["code"] == "AVE208")
        assert "x" in w["coordinates"] and len(w["block"]) == 3
        if case["code"] == "AVE201":
            assert "y" in w["coordinates"]
        elif case["code"] != "AVE208":
            assert "byte" in w["coordinates"]
    elif case["expect"] == "interpreter":
        assert case["outcome"] in OUTCOMES
        assert isinstance(case.get("sizes"), dict) and case["sizes"]
        assert not {"code", "line", "witness"} & set(case)
    else:
        raise AssertionError(f"expect must be 'checker' or 'interpreter', not {case['expect']!r}")


@pytest.mark.parametrize("case", [c for c in CASES if c["expect"] == "checker"],
                         ids=_ids([c for c in CASES if c["expect"] == "checker"]))
def test_checker_lines_hold_the_assertion(case):
    lines = _lines(BROKEN / case["file"])
    line = lines[case["line"] - 1]
    assert any(call in line for call in ASSERTION_CALL[case["assertion"]]), line
    for other in case.get("also_lines", []):
        assert any(call in lines[other - 1] for calls in ASSERTION_CALL.values()
                   for call in calls), other


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_bug_comment_and_small_diff(case):
    path = BROKEN / case["file"]
    assert sum("# BUG:" in line for line in _lines(path)) == 1
    ours = _code_after_docstring(path)
    theirs = _code_after_docstring(EXAMPLES / case["base"])
    diff = [d for d in difflib.unified_diff(theirs, ours, lineterm="", n=0)
            if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    added = [d for d in diff if d.startswith("+")]
    removed = [d for d in diff if d.startswith("-")]
    assert 1 <= len(added) <= 2 and len(removed) <= 2, diff
    assert any("# BUG:" in d for d in added), diff


# ------------------------------------------------------------------------------- the files

@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_parses_and_documents_itself(path):
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    compile(text, str(path), "exec")
    doc = ast.get_docstring(tree)
    assert doc and len(doc.splitlines()) >= 10, "the module docstring explains the kernel"
    names = _kernel_names(path)
    assert names, "no @ave.kernel function"
    for name in names:
        assert _configs(_kernel_def(path, name)), f"{name} has no configs"


def _frontend():
    try:
        from ave_core.compiler.frontend import compile_source
    except ImportError as e:  # pragma: no cover - while the front end is being written
        pytest.skip(f"ave_core.compiler.frontend is not importable yet: {e}")
    return compile_source


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_compiles_in_every_configuration(path):
    compile_source = _frontend()
    result = compile_source(path.read_text(encoding="utf-8"), str(path))
    assert result.uses_ave
    errors = [d for d in result.diagnostics if d.severity.label == "error"]
    assert not errors, "\n".join(d.format_text() for d in errors)
    expected = sum(len(_configs(_kernel_def(path, n))) for n in _kernel_names(path))
    assert len(result.kernels) == expected


# ------------------------------------------------------------------------------- witnesses

def _lang():
    try:
        import importlib
        layout = importlib.import_module("ave_core.lang.layout")
        atoms = importlib.import_module("ave_core.lang.atoms")
        from ave_core.lang.dtypes import bf16, f32
    except ImportError as e:  # pragma: no cover
        pytest.skip(f"ave_core.lang layouts are not importable: {e}")
    return layout, atoms, atoms.mma_atom("m16n8k16", bf16, f32)


def _row_swizzle(L, row_elems):
    """The swizzle examples/*.py pick for a row of ``row_elems`` bf16 (their row_swizzle)."""
    return {32: L.Swizzle(2, 3, 3), 64: L.Swizzle(3, 3, 3), 128: L.Swizzle(3, 3, 4)}[row_elems]


def _holds(tv, thread):
    return [tuple(int(x) for x in tv.coord(thread, v)) for v in range(tv.num_values)]


def _inverse(layout, shape):
    import itertools
    return {int(layout(c)): c for c in itertools.product(*(range(n) for n in shape))}


def _case(name):
    return next(c for c in CASES if c["file"] == name)


def _cfg(case):
    return _configs(_kernel_def(EXAMPLES / case["base"], case["kernel"]))[case["config"]]


def _minimal_violation(tvx, tvy, tag_x, tag_y, fields):
    """The first violating pair of ``assert_conform(x, y, contract=(1, 0))`` in the order
    (thread holding x, thread holding y, x's coordinate, y's coordinate), as the manifest's
    witnesses are minimised: returns (thread_x, thread_y, x_coord, y_coord, x_tags, y_tags)."""
    holders_y: dict[int, list] = {}
    for t in range(tvy.num_threads):
        for c in _holds(tvy, t):
            holders_y.setdefault(c[0], []).append((t, c))
    for tx in range(tvx.num_threads):
        best = None
        for cx in sorted(set(_holds(tvx, tx))):
            gx = tag_x(cx)
            for ty, cy in holders_y[cx[1]]:
                gy = tag_y(cy)
                if any(gx[f] != gy[f] for f in fields):
                    cand = (ty, cx, cy)
                    if best is None or cand < best:
                        best = cand
        if best is not None:
            ty, cx, cy = best
            return tx, ty, cx, cy, tag_x(cx), tag_y(cy)
    return None


def _check_pairing_witness(case, found):
    assert found is not None, "the model finds no violation"
    tx, ty, _, _, gx, gy = found
    w = case["witness"]
    assert (tx, ty) == (w["thread"], w.get("y_thread", w["thread"]))
    for got, want in ((gx, w["coordinates"]["x"]), (gy, w["coordinates"]["y"])):
        assert {k: v for k, v in want.items() if k in got} == got


def test_witness_gemm_swizzle_mismatch():
    L, A, atom = _lang()
    case = _case("gemm_swizzle_mismatch.py")
    c = _cfg(case)
    BM, BN, BK, ST = c["BM"], c["BN"], c["BK"], c["STAGES"]
    tiled = A.tiled_mma(atom, (c["WM"], c["WN"]), (BM, BN, BK))
    writer = _inverse(L.swizzled(_row_swizzle(L, BK), L.row_major((ST, BM, BK))), (ST, BM, BK))
    kt = case["witness"]["loop"]["kt"]
    s, k0 = kt % ST, kt * BK

    def tag_a(c):  # the buggy reader: row-major offsets into the swizzled stage
        _, r, cc = writer[s * BM * BK + c[0] * BK + c[1]]
        return {"row": r, "k": k0 + cc}

    found = _minimal_violation(tiled.a, tiled.b, tag_a,
                               lambda c: {"k": k0 + c[0], "col": c[1]}, ["k"])
    _check_pairing_witness(case, found)


def test_witness_gemm_stage_off_by_one():
    L, A, atom = _lang()
    case = _case("gemm_stage_off_by_one.py")
    c = _cfg(case)
    ST = c["STAGES"]
    kt = case["witness"]["loop"]["kt"]
    buggy, read = (kt + ST) % ST, kt % ST
    assert buggy == read and (kt + ST - 1) % ST != read  # the correct index would be disjoint
    lay = L.swizzled(_row_swizzle(L, c["BK"]), L.row_major((ST, c["BM"], c["BK"])))
    x, y = case["witness"]["coordinates"]["x"], case["witness"]["coordinates"]["y"]
    byte = case["witness"]["coordinates"]["byte"]
    assert int(lay((buggy, *x))) * 2 == int(lay((read, *y))) * 2 == byte


def test_witness_flash_attention_v_not_transposed():
    L, A, atom = _lang()
    case = _case("flash_attention_v_not_transposed.py")
    c = _cfg(case)
    BR, BC, D = c["BR"], c["BC"], 128
    tpv = A.tiled_mma(atom, (4, 1), (BR, D // 2, BC))
    writer = _inverse(L.swizzled(_row_swizzle(L, D), L.row_major((2, BC, D))), (2, BC, D))
    view = L.col_major((BC, D))
    j = case["witness"]["loop"]["j"]
    s, n0 = j % 2, j * BC

    def tag_v(c):  # the buggy reader: V operand (key, d) of the low half through the view
        _, key, d = writer[s * BC * D + int(view(c))]
        return {"key": n0 + key, "col": d}

    found = _minimal_violation(tpv.a, tpv.b, lambda c: {"row": c[0], "key": n0 + c[1]}, tag_v,
                               ["key"])
    _check_pairing_witness(case, found)


def test_witness_flash_attention_wrong_kv_head():
    L, A, atom = _lang()
    case = _case("flash_attention_wrong_kv_head.py")
    c = _cfg(case)
    G = c["GROUP"]
    w = case["witness"]
    import itertools
    blocks = [blk for blk in itertools.product(range(2), range(2), range(4))
              if blk[2] % G != blk[2] // G]
    assert list(blocks[0]) == w["block"]
    _, b, h = w["block"]
    tqk = A.tiled_mma(atom, (4, 1), (c["BR"], c["BC"], 16))
    kk = w["loop"]["kk"]
    found = _minimal_violation(
        tqk.a, tqk.b,
        lambda q: {"batch": b, "head": h // G, "row": q[0], "k": 16 * kk + q[1]},
        lambda k: {"batch": b, "head": h % G, "key": k[1], "k": 16 * kk + k[0]},
        ["batch", "head", "k"])
    _check_pairing_witness(case, found)


def test_witness_moe_weight_not_transposed():
    L, A, atom = _lang()
    case = _case("moe_weight_not_transposed.py")
    c = _cfg(case)
    assert c["BN"] == c["BK"], "the bug only type-checks when BN == BK"
    tiled = A.tiled_mma(atom, (1, 4), (c["BM"], c["BN"], c["BK"]))
    k0 = case["witness"]["loop"]["kt"] * c["BK"]
    # without .T the B operand (k, n) reads sW[s][k, n] = W[e, n0 + k, k0 + n]
    found = _minimal_violation(tiled.a, tiled.b, lambda x: {"k": k0 + x[1]},
                               lambda b: {"col": b[0], "k": k0 + b[1]}, ["k"])
    _check_pairing_witness(case, found)


# ------------------------------------------------------------------------------- pipelines

class _Groups:
    """cp.async commit groups: a copy lands (at the latest) when a wait retires its group."""

    def __init__(self):
        self.open, self.pending, self.mem = [], [], {}

    def copy(self, buf, stage, tile):
        self.open.append((buf, stage, tile))

    def commit(self):
        self.pending.append(self.open)
        self.open = []

    def wait(self, n):
        while len(self.pending) > n:
            for buf, stage, tile in self.pending.pop(0):
                self.mem[(buf, stage)] = tile


def _gemm_reads(stages, trips, prologue=None, fill_offset=None):
    """Which k-tile each stage read of examples/gemm.py (and moe.py) sees, per iteration."""
    g = _Groups()
    prologue = stages - 1 if prologue is None else prologue
    fill_offset = stages - 1 if fill_offset is None else fill_offset
    for kt in range(prologue):
        g.copy("A", kt, kt), g.copy("B", kt, kt), g.commit()
    seen = []
    for kt in range(trips):
        g.wait(stages - 2)
        fill = (kt + fill_offset) % stages
        g.copy("A", fill, kt + stages - 1), g.copy("B", fill, kt + stages - 1), g.commit()
        seen.append((g.mem.get(("A", kt % stages)), g.mem.get(("B", kt % stages))))
    return seen


def _fa_reads(trips, pv_wait=1):
    """(K tile read by S, V tile read by P V) per iteration of examples/flash_attention.py."""
    g = _Groups()
    g.copy("Q", 0, 0), g.commit()
    g.copy("K", 0, 0), g.commit()
    g.copy("V", 0, 0), g.commit()
    seen = []
    for j in range(trips):
        s, sn = j % 2, (j + 1) % 2
        g.wait(1)
        assert g.mem.get(("Q", 0)) == 0
        g.copy("K", sn, j + 1), g.commit()
        k = g.mem.get(("K", s))
        g.wait(pv_wait)
        g.copy("V", sn, j + 1), g.commit()
        seen.append((k, g.mem.get(("V", s))))
    return seen


@pytest.mark.parametrize("path,kernel", [("gemm.py", "gemm"), ("moe.py", "fused_moe")])
def test_correct_gemm_pipelines_read_tile_kt(path, kernel):
    for cfg in _configs(_kernel_def(EXAMPLES / path, kernel)):
        for trips in range(1, cfg["STAGES"] + 3):
            assert _gemm_reads(cfg["STAGES"], trips) == [(kt, kt) for kt in range(trips)]


def test_correct_flash_attention_pipeline_reads_tile_j():
    for trips in range(1, 5):
        assert _fa_reads(trips) == [(j, j) for j in range(trips)]


def test_witness_gemm_prologue_short():
    case = _case("gemm_prologue_short.py")
    st = _cfg(case)["STAGES"]
    seen = _gemm_reads(st, 3, prologue=st - 2)
    kt = case["witness"]["loop"]["kt"]
    assert seen[kt] == (None, None) and all(s is None or s[0] == s[1] for s in seen)
    assert case["witness"]["coordinates"] == {"x": [0, 0], "byte": 0}


def test_witness_flash_attention_v_wait():
    L, A, atom = _lang()
    case = _case("flash_attention_v_wait.py")
    c = _cfg(case)
    seen = _fa_reads(4, pv_wait=2)
    j = case["witness"]["loop"]["j"]
    # never written before j, stale (not V_j) at j: the first pairing violation
    assert all(v is None for _, v in seen[:j]) and seen[j][1] not in (None, j)
    stale = seen[j][1]
    tpv = A.tiled_mma(atom, (4, 1), (c["BR"], 64, c["BC"]))
    found = _minimal_violation(tpv.a, tpv.b,
                               lambda p: {"row": p[0], "key": j * c["BC"] + p[1]},
                               lambda v: {"key": stale * c["BC"] + v[0], "col": v[1]}, ["key"])
    _check_pairing_witness(case, found)


# ------------------------------------------------------------------------------- the checker

def _analysis():
    compile_source = _frontend()
    try:
        from ave_core.analysis import analyze
    except ImportError as e:  # pragma: no cover - while the analysis is being written
        pytest.skip(f"ave_core.analysis is not importable yet: {e}")
    return compile_source, analyze


def _analyze_config(path: pathlib.Path, config: int):
    compile_source, analyze = _analysis()
    result = compile_source(path.read_text(encoding="utf-8"), str(path))
    kernels = [k for k in result.kernels if k.config_index == config]
    assert len(kernels) == 1
    return analyze(kernels[0])


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_correct_example_proves_every_assertion(path):
    compile_source, analyze = _analysis()
    result = compile_source(path.read_text(encoding="utf-8"), str(path))
    assert result.kernels
    for k in result.kernels:
        a = analyze(k)
        assert not a.diagnostics, "\n".join(d.format_text() for d in a.diagnostics)
        assert a.assertions and all(r.status == "proved" for r in a.assertions)


CHECKER_CASES = [c for c in CASES if c["expect"] == "checker"]


@pytest.mark.parametrize("case", CHECKER_CASES, ids=_ids(CHECKER_CASES))
def test_checker_reports_the_case(case):
    a = _analyze_config(BROKEN / case["file"], case["config"])
    mine = sorted((d for d in a.diagnostics if d.code == case["code"]),
                  key=lambda d: d.range.start.line)
    assert mine, f"no {case['code']}: " + "; ".join(d.format_text() for d in a.diagnostics)
    lines = {d.range.start.line + 1 for d in mine}
    assert min(lines) == case["line"]
    assert set(case.get("also_lines", [])) <= lines
    others = {d.code for d in a.diagnostics} - {case["code"]}
    assert others <= set(case.get("may_also", [])), others
    got, want = mine[0].witness or {}, case["witness"]
    assert got.get("block") == want["block"]
    loops = got.get("loop_indices", {})
    assert loops or (case["code"] == "AVE208" and not want["loop"])
    assert {k: v for k, v in want["loop"].items() if k in loops} == loops
    threads = [t["thread"] for t in got.get("threads", [])]
    if threads:
        assert threads[0] == want["thread"]
    if "byte" in want["coordinates"]:
        assert got.get("byte") == want["coordinates"]["byte"]
    if case["code"] == "AVE208":
        assert list(got["coordinates"].values())[0] == want["coordinates"]["x"]


INTERP_CASES = [c for c in CASES if c["expect"] == "interpreter"]


@pytest.mark.parametrize("case", INTERP_CASES, ids=_ids(INTERP_CASES))
def test_interpreter_cases_pass_the_checker(case):
    # outside the invariant vocabulary: the checker must not claim to see them
    a = _analyze_config(BROKEN / case["file"], case["config"])
    assert not a.diagnostics, "\n".join(d.format_text() for d in a.diagnostics)


# ------------------------------------------------------------------------------- the interpreter
# The kernels really compute what they claim (CPU reference interpreter against numpy), and
# each interpreter case shows its outcome: oob -> AVE301, uninit -> AVE303, race -> AVE304,
# wrong_result -> the output differs from the reference.

OUTCOME_CODE = {"oob": "AVE301", "uninit": "AVE303", "race": "AVE304"}


def _interp():
    compile_source = _frontend()
    try:
        import numpy as np
        from ave_core.interp import run
    except ImportError as e:  # pragma: no cover
        pytest.skip(f"the interpreter is not importable: {e}")
    return compile_source, run, np


def _bf16(np, x):
    """float -> bf16 bits (round to nearest even), as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _f32(np, bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _compiled(path: pathlib.Path, config: int):
    compile_source, run, np = _interp()
    result = compile_source(path.read_text(encoding="utf-8"), str(path))
    return [k for k in result.kernels if k.config_index == config][0], run, np


def _run_gemm(path, config, M, N, K, amd=False):
    k, run, np = _compiled(path, config)
    rng = np.random.default_rng(0)
    BM, BN = k.constexprs["BM"], k.constexprs["BN"]
    A = _bf16(np, rng.standard_normal((M, K)))
    B = _bf16(np, rng.standard_normal((N, K) if amd else (K, N)))
    C = np.zeros((M, N), np.float32)
    res = run(k, (-(-M // BM), -(-N // BN)), [A, B, C])
    ref = _f32(np, A) @ (_f32(np, B).T if amd else _f32(np, B))
    return res, float(np.abs(C - ref).max()) / float(np.abs(ref).max())


def _run_flash_attention(path, config, B, H, H_KV, S_Q, S_KV, constexprs=None):
    if constexprs is None:
        k, run, np = _compiled(path, config)
    else:                           # a launch-time specialization outside `configs`
        _, run, np = _interp()
        from ave_core.compiler.frontend import specialize
        k = specialize(path.read_text(encoding="utf-8"), str(path), "flash_attention",
                       constexprs)
    rng = np.random.default_rng(1)
    D, scale = 128, 128 ** -0.5
    Q = _bf16(np, rng.standard_normal((B, H, S_Q, D)))
    K = _bf16(np, rng.standard_normal((B, H_KV, S_KV, D)))
    V = _bf16(np, rng.standard_normal((B, H_KV, S_KV, D)))
    O = np.zeros((B, H, S_Q, D), np.uint16)
    res = run(k, (-(-S_Q // k.constexprs["BR"]), B, H), [Q, K, V, O, scale])
    kk = np.repeat(_f32(np, K), H // H_KV, axis=1)
    vv = np.repeat(_f32(np, V), H // H_KV, axis=1)
    s = _f32(np, Q) @ kk.transpose(0, 1, 3, 2) * scale
    if k.constexprs.get("CAUSAL"):  # bottom-right aligned: row i sees keys n <= i + S_KV - S_Q
        i, n = np.arange(S_Q)[:, None], np.arange(S_KV)[None, :]
        s = np.where(n <= i + S_KV - S_Q, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ vv
    return res, float(np.abs(_f32(np, O) - ref).max()) / float(np.abs(ref).max())


def _run_moe(path, config, T, E, K, N):
    k, run, np = _compiled(path, config)
    rng = np.random.default_rng(2)
    c = k.constexprs
    BM, BN, TOPK = c["BM"], c["BN"], c["TOPK"]
    X = _bf16(np, rng.standard_normal((T, K)))
    W = _bf16(np, rng.standard_normal((E, N, K)) * 0.1)
    topk_ids = np.stack([rng.choice(E, TOPK, replace=False) for _ in range(T)]).reshape(-1)
    num_valid = T * TOPK
    sorted_ids, expert_ids = [], []          # moe_align_block_size
    for e in range(E):
        pairs = [p for p in range(num_valid) if topk_ids[p] == e]
        if pairs:
            pairs += [num_valid] * (-len(pairs) % BM)
            sorted_ids += pairs
            expert_ids += [e] * (len(pairs) // BM)
    weights = rng.random(num_valid).astype(np.float32)
    Out = np.zeros((num_valid, N), np.uint16)
    res = run(k, (len(sorted_ids) // BM, -(-N // BN)),
              [X, W, Out, np.array(sorted_ids, np.int32), np.array(expert_ids, np.int32),
               weights])
    x, w = _f32(np, X), _f32(np, W)
    ref = np.stack([x[p // TOPK] @ w[topk_ids[p]].T for p in range(num_valid)])
    if c["MUL_ROUTED_WEIGHT"]:
        ref = ref * weights[:, None]
    return res, float(np.abs(_f32(np, Out) - ref).max()) / float(np.abs(ref).max())


RUNNERS = {"gemm.py": _run_gemm, "flash_attention.py": _run_flash_attention, "moe.py": _run_moe}

CORRECT_RUNS = [
    ("gemm.py", 0, dict(M=100, N=72, K=64)),
    ("gemm.py", 1, dict(M=130, N=136, K=200)),
    ("flash_attention.py", 0, dict(B=1, H=2, H_KV=2, S_Q=100, S_KV=128)),
    ("flash_attention.py", 1, dict(B=1, H=8, H_KV=1, S_Q=130, S_KV=192)),
    ("flash_attention.py", 2, dict(B=2, H=1, H_KV=1, S_Q=64, S_KV=256)),
    ("moe.py", 0, dict(T=37, E=4, K=136, N=72)),
    ("moe.py", 1, dict(T=21, E=4, K=128, N=128)),
]


@pytest.mark.parametrize("base,config,sizes", CORRECT_RUNS,
                         ids=[f"{b}-cfg{c}" for b, c, _ in CORRECT_RUNS])
def test_correct_example_computes_the_reference(base, config, sizes):
    res, err = RUNNERS[base](EXAMPLES / base, config, **sizes)
    assert not res.diagnostics, "\n".join(d.format_text() for d in res.diagnostics)
    assert err < 1e-2, err          # bf16 inputs (and bf16 P / outputs), f32 accumulation


@pytest.mark.parametrize("config,sizes", [(0, dict(M=130, N=200, K=96)),
                                          (1, dict(M=256, N=128, K=40))])
def test_mi300x_gemm_computes_the_reference(config, sizes):
    res, err = _run_gemm(EXAMPLES / "mi300x" / "gemm_mfma.py", config, amd=True, **sizes)
    assert not res.diagnostics, "\n".join(d.format_text() for d in res.diagnostics)
    assert err < 1e-5, err


@pytest.mark.parametrize("case", INTERP_CASES, ids=_ids(INTERP_CASES))
def test_interpreter_case_shows_its_outcome(case):
    res, err = RUNNERS[case["base"]](BROKEN / case["file"], case["config"], **case["sizes"])
    codes = {d.code for d in res.diagnostics}
    if case["outcome"] == "wrong_result":
        assert not codes and err > 0.1, (codes, err)
    else:
        assert OUTCOME_CODE[case["outcome"]] in codes, (codes, err)


# The causal specialization is a launch argument, not one of `configs`: check it here.
CAUSAL = dict(BR=128, BC=64, GROUP=8, CAUSAL=True)


def test_causal_flash_attention_proves_every_assertion():
    compile_source, analyze = _analysis()
    from ave_core.compiler.frontend import specialize
    path = EXAMPLES / "flash_attention.py"
    k = specialize(path.read_text(encoding="utf-8"), str(path), "flash_attention", CAUSAL)
    a = analyze(k)
    assert not a.diagnostics, "\n".join(d.format_text() for d in a.diagnostics)
    assert a.assertions and all(r.status == "proved" for r in a.assertions)


@pytest.mark.parametrize("sizes", [dict(B=1, H=8, H_KV=1, S_Q=200, S_KV=200),
                                   dict(B=1, H=16, H_KV=2, S_Q=100, S_KV=230)],
                         ids=["square", "S_Q<S_KV"])
def test_causal_flash_attention_computes_the_reference(sizes):
    res, err = _run_flash_attention(EXAMPLES / "flash_attention.py", None, constexprs=CAUSAL,
                                    **sizes)
    assert not res.diagnostics, "\n".join(d.format_text() for d in res.diagnostics)
    assert err < 1e-2, err
