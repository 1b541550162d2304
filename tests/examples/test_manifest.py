"""The bundled example kernels and the manifest of their broken variants.

* ``examples/broken/manifest.toml`` parses and lists every broken file, each with the
  fields its kind of expectation needs;
* a checker case's ``line`` holds the assertion (or mma) it names; every broken file carries
  its ``# BUG:`` comment and differs from its correct kernel in a line or two of code;
* every example parses, has a module docstring and ``configs``; once the front end is
  importable, every example (correct or broken: the bugs are semantic) compiles for every
  configuration without an error diagnostic;
* each hand-derived witness of a checker case really exhibits the bug: it is recomputed from
  the layouts and the matrix-instruction fragment tables of ``ave_core.lang``.
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
         "AVE203": ("mma", "assert_conform", "assert_disjoint")}
#: codes an analysis may report besides the expected one (204: vacuous, 205: unknown)
ANALYSIS_CODES = set(CODES) | {"AVE204", "AVE205"}
OUTCOMES = {"wrong_result", "oob", "race", "uninit"}
ASSERTION_CALL = {"mma": "ave.mma(", "assert_conform": "ave.assert_conform(",
                  "assert_disjoint": "ave.assert_disjoint("}


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
        assert isinstance(w["loop"], dict) and w["loop"]
        assert {"x", "y"} <= set(w["coordinates"])
        assert len(w["block"]) == 3
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
    assert ASSERTION_CALL[case["assertion"]] in line, line
    for other in case.get("also_lines", []):
        assert any(call in lines[other - 1] for call in ASSERTION_CALL.values()), other


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
