"""Structural checks of the IR the front end builds for the bundled example kernels.

Every expected number below is derived by hand from the kernel's source and its constexprs
(the arithmetic is written out next to it), never read back from the tool: kernel header,
runtime parameters, tags, shared allocations (cosize and bytes), the software pipeline
(prologue copies, commit groups, wait counts, the one runtime ``scf.for`` and what it
carries), the matrix instructions (the ``TiledMMA`` and its fragments), the assertions and
the source locations of all of it. Source lines are found by searching the file text for the
call (the files are edited, so no line number is written down here). After
:func:`~ave_core.compiler.unroll.unroll` for a trip count of 3 the counts scale as the
pipeline says they must, and the stages read and refilled in each iteration are the ones
``kt % STAGES`` and ``(kt + STAGES - 1) % STAGES`` give.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import numpy as np
import pytest

import ave_core.lang as ave
from ave_core.compiler.frontend import compile_file
from ave_core.compiler.ir import FragmentType, ScalarType, TensorType, TileType
from ave_core.compiler.unroll import runtime_loops, unroll

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GEMM = EXAMPLES / "gemm.py"
FLASH = EXAMPLES / "flash_attention.py"
MOE = EXAMPLES / "moe.py"
MFMA = EXAMPLES / "mi300x" / "gemm_mfma.py"

TRIPS = 3  # the runtime trip count the unrolling tests use

# The ``configs=`` of each kernel's decorator, copied by hand from the example.
GEMM_CONFIGS = [dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3),
                dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=4)]
FLASH_CONFIGS = [dict(BR=128, BC=64, GROUP=1), dict(BR=128, BC=64, GROUP=8),
                 dict(BR=64, BC=64, GROUP=1)]
MOE_CONFIGS = [dict(BM=64, BN=64, BK=64, STAGES=4, TOPK=2, MUL_ROUTED_WEIGHT=False),
               dict(BM=16, BN=64, BK=64, STAGES=4, TOPK=1, MUL_ROUTED_WEIGHT=True)]
MFMA_CONFIGS = [dict(BM=128, BN=128, BK=32), dict(BM=256, BN=128, BK=32)]

# Short names for the ops whose order makes up a pipeline.
SHORT = {
    "ave.wait_async": "W", "ave.barrier": "B", "ave.assert_disjoint": "D",
    "ave.copy_async": "CA", "ave.commit_async": "CM", "ave.load": "L",
    "ave.assert_conform": "C", "ave.mma": "M", "ave.convert": "CV", "ave.store": "ST",
    "ave.copy": "CP", "ave.sched_barrier": "SB",
}


# ----------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=None)
def _compiled(path: Path):
    return compile_file(str(path))


def _kernels(path: Path, n_configs: int):
    res = _compiled(path)
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    assert len(res.kernels) == n_configs
    return res.kernels


@functools.lru_cache(maxsize=None)
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def _code_start(path: Path) -> int:
    """0-based line after the module docstring (searches never match the prose)."""
    tree = ast.parse(_text(path))
    first = tree.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return first.end_lineno
    return 0


def lines_of(path: Path, needle: str) -> list[int]:
    """0-based lines of code (no docstring, no comment line) containing ``needle``."""
    lines = _text(path).splitlines()
    return [i for i in range(_code_start(path), len(lines))
            if needle in lines[i] and not lines[i].lstrip().startswith("#")]


def line_of(path: Path, needle: str) -> int:
    found = lines_of(path, needle)
    assert len(found) == 1, f"{needle!r} occurs on lines {found} of {path.name}"
    return found[0]


def col_of(path: Path, line: int, needle: str) -> int:
    return _text(path).splitlines()[line].index(needle)


def walk(ops):
    for op in ops:
        yield from op.walk()


def count(ops, name: str) -> int:
    return sum(1 for op in walk(ops) if op.name == name)


def seq(ops) -> list[str]:
    """The pipeline-relevant ops, in program order, by their short names."""
    return [SHORT[op.name] for op in walk(ops) if op.name in SHORT]


def split_at_loop(k):
    """(ops before the runtime loop, the loop, ops after it) of the kernel body."""
    idx = [i for i, op in enumerate(k.body.ops) if op.name == "scf.for"]
    assert len(idx) == 1, "expected exactly one top-level scf.for"
    i = idx[0]
    return k.body.ops[:i], k.body.ops[i], k.body.ops[i + 1:]


def defs(k) -> dict:
    return {r: op for op in k.walk() for r in op.results}


def const(k, v):
    d = defs(k)[v]
    assert d.name == "arith.constant", d.name
    return d.attrs["value"]


def check_header(k, path: Path, name: str, ci: int, cfg: dict, *, threads: int,
                 warp_size: int, target: str, constexprs: dict):
    assert k.name == name
    assert k.threads == threads and k.warp_size == warp_size and k.target == target
    assert k.config_index == ci
    assert k.constexprs == constexprs
    for key, val in cfg.items():
        assert k.constexprs[key] == val
    assert k.file == str(path)
    assert str(path) in k.files
    assert k.line == line_of(path, f"def {name}(")
    assert k.range.start.line == k.line
    line = _text(path).splitlines()[k.line]
    assert line[k.range.start.character:k.range.end.character] == name


def check_params(k, path: Path, expected: list[tuple]):
    """``expected``: (name, "tensor", dtype, rank) or (name, "scalar", dtype)."""
    assert [p.name for p in k.params] == [e[0] for e in expected]
    assert [a for a in k.body.args] == [p.value for p in k.params]
    lines = _text(path).splitlines()
    for p, e in zip(k.params, expected):
        if e[1] == "tensor":
            assert isinstance(p.type, TensorType), p
            assert (p.type.dtype, p.type.rank, p.type.gathered_dim) == (e[2], e[3], None)
        else:
            assert isinstance(p.type, ScalarType) and p.type.dtype == e[2], p
        # the parameter's range starts at its name, inside the def's signature
        r = p.range
        assert lines[r.start.line][r.start.character:].startswith(p.name + ":")
        assert k.line <= r.start.line <= r.end.line


def check_tags(k, expected: list[tuple]):
    """``expected``: (param name, fields, coords) per ave.tag, in order."""
    tags = k.ops("ave.tag")
    assert len(tags) == len(expected)
    by_name = {p.name: p.value for p in k.params}
    for op, (pname, fields, coords) in zip(tags, expected):
        assert op.operands[0] is by_name[pname]
        assert op.attrs["fields"] == fields and op.attrs["coords"] == coords
        (region,) = op.regions
        assert [a.name for a in region.args] == list(coords)
        assert all(isinstance(a.type, ScalarType) and a.type.dtype == ave.i32
                   for a in region.args)
        assert region.ops[-1].name == "ave.yield"
        assert len(region.ops[-1].operands) == len(fields)
        assert op.result.type == op.operands[0].type


def check_allocs(k, expected: list[tuple]):
    """``expected``: (shape, dtype, cosize, bytes) per shared ave.alloc, in order."""
    allocs = k.ops("ave.alloc")
    assert len(allocs) == len(expected)
    for op, (shape, dtype, cosize, nbytes) in zip(allocs, expected):
        a = op.attrs
        assert (a["shape"], a["dtype"], a["space"]) == (shape, dtype, "shared")
        assert a["cosize"] == cosize and a["bytes"] == nbytes
        assert a["layout"].cosize == cosize
        t = op.result.type
        assert isinstance(t, TileType)
        assert (t.shape, t.dtype, t.space) == (shape, dtype, "shared")
        assert t.layout == a["layout"]
    return allocs


def swizzle(B, M, S):
    """CuTe Swizzle<B, M, S> (S > 0), written out: the B bits at M + S are XORed into the B
    bits at M."""
    return lambda x: x ^ ((x >> S) & (((1 << B) - 1) << M))


def check_swizzled_rows(layout, shape, sw):
    """``layout(c) == sw(row-major index of c)`` for every coordinate of ``shape``."""
    grids = np.meshgrid(*[np.arange(n, dtype=np.int64) for n in shape], indexing="ij")
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    lin = sum(g * s for g, s in zip(grids, strides))
    got = np.asarray(layout(*grids), dtype=np.int64)
    np.testing.assert_array_equal(got, sw(lin))
    # a bijection onto [0, size): the swizzle only permutes whole 16-byte chunks in a row
    assert sorted(got.ravel().tolist()) == list(range(int(np.prod(shape))))


def check_loop(k, iv: str, carried: set):
    pre, loop, post = split_at_loop(k)
    assert len(k.ops("scf.for")) == 1
    assert runtime_loops(k) == [loop]
    assert loop.attrs["iv_name"] == iv
    assert set(loop.attrs["carried"]) == carried
    assert len(loop.attrs["carried"]) == len(carried)
    assert len(loop.results) == len(carried)
    lb, ub, step = loop.operands[:3]
    assert const(k, lb) == 0 and const(k, step) == 1
    assert defs(k)[ub].name != "arith.constant"        # a runtime trip count
    assert len(loop.operands) == 3 + len(carried)
    (body,) = loop.regions
    assert [a.name for a in body.args] == [iv] + list(loop.attrs["carried"])
    assert body.ops[-1].name == "scf.yield"
    assert len(body.ops[-1].operands) == len(carried)
    # the carried values keep their types around the loop
    for init, arg, res in zip(loop.operands[3:], body.args[1:], loop.results):
        assert init.type == arg.type == res.type
    return pre, loop, post


def check_mma(op, *, atom_name, atom_kind, mnk, warps, tile, per_warp_per_kstep, k_steps,
              threads, a_values, b_values, c_values):
    t = op.attrs["tiled"]
    assert (t.atom.name, t.atom.kind, t.atom.shape_mnk) == (atom_name, atom_kind, mnk)
    assert t.warps == warps and t.tile == tile
    assert t.threads == threads
    assert t.mma_per_warp_per_kstep == per_warp_per_kstep
    assert t.k_steps == k_steps
    BM, BN, BK = tile
    a, b, c = (v.type for v in op.operands)
    for frag, shape, dtype, lay, nvals in ((a, (BM, BK), ave.bf16, t.a, a_values),
                                           (b, (BK, BN), ave.bf16, t.b, b_values),
                                           (c, (BM, BN), ave.f32, t.c, c_values)):
        assert isinstance(frag, FragmentType)
        assert (frag.shape, frag.dtype) == (shape, dtype)
        assert frag.layout == lay
        assert frag.layout.tile_shape == shape
        assert frag.layout.num_threads == threads
        assert frag.layout.num_values == nvals
    r = op.result.type
    assert isinstance(r, FragmentType)
    assert (r.shape, r.dtype, r.layout) == ((BM, BN), ave.f32, t.c)


def check_at(path: Path, ops, needle: str):
    """Every op of ``ops`` starts at the (unique) call ``needle`` of the file."""
    line = line_of(path, needle)
    col = col_of(path, line, needle)
    for op in ops:
        assert op.loc.file == str(path)
        assert (op.loc.range.start.line, op.loc.range.start.character) == (line, col), \
            (op.name, str(op.loc), needle)


def check_at_each(path: Path, ops, needle: str):
    """``needle`` occurs once per op, and op i starts at occurrence i (program order)."""
    found = lines_of(path, needle)
    assert len(found) == len(ops), (needle, found)
    for op, line in zip(ops, found):
        assert (op.loc.range.start.line, op.loc.range.start.character) == \
            (line, col_of(path, line, needle)), (op.name, str(op.loc), needle)


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def _range_inside(path: Path, r):
    lines = _text(path).splitlines()
    assert (r.start.line, r.start.character) <= (r.end.line, r.end.character), r
    assert 0 <= r.start.line and r.end.line < len(lines), r
    assert 0 <= r.start.character <= _utf16_len(lines[r.start.line]), r
    assert 0 <= r.end.character <= _utf16_len(lines[r.end.line]), r


def _helpers(path: Path, kernel: str) -> dict[str, tuple[int, int, set]]:
    """Functions defined inside the kernel body: name -> (first line, last line, 0-based
    lines calling it)."""
    tree = ast.parse(_text(path))
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel]
    out = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.FunctionDef) and node is not fn:
            calls = {c.lineno - 1 for c in ast.walk(fn)
                     if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                     and c.func.id == node.name}
            out[node.name] = (node.lineno - 1, node.end_lineno - 1, calls)
    return out


def check_locations(k, path: Path, helpers: set[str]):
    """Every op lies inside the file; ops from the kernel's helper functions (and only
    those) carry ``inlined_from``, the call site of that helper."""
    found = _helpers(path, k.name)
    assert set(found) == helpers
    inlined = 0
    for op in k.walk():
        assert op.loc.file == str(path), (op.name, op.loc)
        _range_inside(path, op.loc.range)
        for site in op.loc.inlined_from:
            assert site.file == str(path)
            _range_inside(path, site.range)
        line = op.loc.range.start.line
        owner = [h for h, (first, last, _) in found.items() if first <= line <= last]
        if owner:
            (h,) = owner
            assert len(op.loc.inlined_from) == 1, (op.name, str(op.loc))
            assert op.loc.inlined_from[0].range.start.line in found[h][2], (op.name, str(op.loc))
            inlined += 1
        else:
            assert op.loc.inlined_from == (), (op.name, str(op.loc))
    assert inlined > 0 or not helpers


def unrolled(k):
    return unroll(k, {runtime_loops(k)[0]: TRIPS})


def stage_of(u, tile_value) -> int:
    """The (folded) stage index ``s`` of ``sX[s]`` (possibly sliced or transposed further)
    after unrolling."""
    d = defs(u)
    op = d[tile_value]
    while True:
        if op.name == "ave.transpose":
            op = d[op.operands[0]]
            continue
        assert op.name == "ave.subtile", op.name
        src = d[op.operands[0]]
        if src.name == "ave.alloc":
            off = op.attrs["offsets"][0]
            return const(u, op.operands[1 + off[1]]) if isinstance(off, tuple) else off
        op = src


def check_unrolled_common(u, iv: str):
    assert "scf.for" not in [op.name for op in u.walk()]
    assert runtime_loops(u) == []
    for op in u.walk():
        # (region terminators are rebuilt without attributes: see
        # test_unrolled_region_terminators_carry_loop_indices)
        if op.name not in ("ave.yield", "scf.yield"):
            assert "loop_indices" in op.attrs, op.name
    for name in ("ave.mma", "ave.assert_disjoint", "ave.barrier"):
        for op in u.ops(name):
            li = op.attrs["loop_indices"]
            assert li == () or (len(li) == 1 and li[0][0] == iv and 0 <= li[0][1] < TRIPS)


def check_acc_chain(u, mmas):
    """Each mma accumulates onto the result of the previous one (the carried acc)."""
    for prev, cur in zip(mmas, mmas[1:]):
        assert cur.operands[2] is prev.result


# ----------------------------------------------------------------------------- GEMM


@pytest.mark.parametrize("ci", range(len(GEMM_CONFIGS)))
def test_gemm(ci):
    cfg = GEMM_CONFIGS[ci]
    BM, BN, BK, WM, WN, STAGES = (cfg[x] for x in ("BM", "BN", "BK", "WM", "WN", "STAGES"))
    k = _kernels(GEMM, len(GEMM_CONFIGS))[ci]
    check_header(k, GEMM, "gemm", ci, cfg, threads=128, warp_size=32, target="nvidia",
                 constexprs=cfg)
    check_params(k, GEMM, [("A", "tensor", ave.bf16, 2), ("B", "tensor", ave.bf16, 2),
                           ("C", "tensor", ave.f32, 2)])
    check_tags(k, [("A", ("row", "k"), ("m", "k")), ("B", ("k", "col"), ("k", "n")),
                   ("C", ("row", "col"), ("m", "n"))])

    # sA (STAGES, BM, BK), sB (STAGES, BK, BN) bf16; cosize = the element count (a swizzle
    # of a compact layout is a permutation), bytes = 2 * cosize. The docstring's 48 KB:
    #   config 0: 3*128*32 = 12288 -> 24576 B; 3*32*128 = 12288 -> 24576 B; 49152 = 48 KB
    #   config 1: 4*64*32  =  8192 -> 16384 B; 4*32*128 = 16384 -> 32768 B; 49152 = 48 KB
    expected = {0: [((3, 128, 32), ave.bf16, 12288, 24576), ((3, 32, 128), ave.bf16, 12288, 24576)],
                1: [((4, 64, 32), ave.bf16, 8192, 16384), ((4, 32, 128), ave.bf16, 16384, 32768)]}
    sA, sB = check_allocs(k, expected[ci])
    assert sum(op.attrs["bytes"] for op in (sA, sB)) == 48 * 1024
    check_at(GEMM, [sA], "ave.alloc((STAGES, BM, BK)")
    check_at(GEMM, [sB], "ave.alloc((STAGES, BK, BN)")
    # rows of 32 elements: Swizzle<2,3,3>; rows of 128: Swizzle<3,3,4> (row_swizzle)
    check_swizzled_rows(sA.attrs["layout"], (STAGES, BM, BK), swizzle(2, 3, 3))
    check_swizzled_rows(sB.attrs["layout"], (STAGES, BK, BN), swizzle(3, 3, 4))

    pre, loop, post = check_loop(k, "kt", {"acc"})
    # prologue: static_range(STAGES - 1) -> STAGES - 1 issues of (copy A, copy B, commit)
    assert seq(pre) == ["CA", "CA", "CM"] * (STAGES - 1)
    d = defs(k)
    copies = [op for op in walk(pre) if op.name == "ave.copy_async"]
    for i in range(STAGES - 1):               # k-tile i -> stage i, k offset i * BK
        a_cp, b_cp = copies[2 * i], copies[2 * i + 1]
        assert d[a_cp.operands[1]].attrs["offsets"] == (i, 0, 0)
        assert d[b_cp.operands[1]].attrs["offsets"] == (i, 0, 0)
        assert d[a_cp.operands[0]].attrs["offsets"] == (("dyn", 0), i * BK)
        assert d[b_cp.operands[0]].attrs["offsets"] == (i * BK, ("dyn", 0))
        assert d[a_cp.operands[1]].result.type.shape == (BM, BK)
        assert d[b_cp.operands[1]].result.type.shape == (BK, BN)
    for op in copies:
        assert op.attrs["vector_bytes"] == 16 and op.attrs["masked"] is True

    # steady state: wait, barrier, 2 disjointness checks, refill (2 copies + commit),
    # ldmatrix A and B, the pairing assertion, one tiled mma
    assert seq(loop.regions[0].ops) == ["W", "B", "D", "D", "CA", "CA", "CM", "L", "L", "C", "M"]
    (wait,) = [op for op in walk([loop]) if op.name == "ave.wait_async"]
    assert wait.attrs["n"] == STAGES - 2
    loads = [op for op in walk([loop]) if op.name == "ave.load"]
    assert all(op.attrs["ldmatrix"] is True for op in loads)
    # epilogue: wait_async(0), the masked 8-byte store of C
    assert seq(post) == ["W", "ST"]
    assert post[0].attrs["n"] == 0
    (store,) = [op for op in walk(post) if op.name == "ave.store"]
    assert store.attrs["vector_bytes"] == 8 and store.attrs["masked"] is True
    assert count(pre + post, "ave.mma") == 0

    (mma,) = k.ops("ave.mma")
    # m16n8k16 over a WM x WN warp grid: per warp (BM/WM/16) x (BN/WN/8) atoms per k-step,
    # BK/16 k-steps. Values per thread: A 8 * RM * RK, B 4 * RN * RK, C 4 * RM * RN.
    #   config 0: RM = 128/2/16 = 4, RN = 128/2/8 = 8, RK = 32/16 = 2: 32 atoms per k-step
    #             (the docstring's 4 x 8), A 64, B 64, C 128 (128 accumulator registers)
    #   config 1: RM = 64/2/16 = 2, RN = 8, RK = 2: 16 atoms per k-step, A 32, B 64, C 64
    RM, RN, RK = BM // WM // 16, BN // WN // 8, BK // 16
    assert (RM, RN, RK) == {0: (4, 8, 2), 1: (2, 8, 2)}[ci]
    check_mma(mma, atom_name="mma.sync.m16n8k16", atom_kind="mma.sync", mnk=(16, 8, 16),
              warps=(WM, WN), tile=(BM, BN, BK), per_warp_per_kstep=RM * RN, k_steps=RK,
              threads=128, a_values=8 * RM * RK, b_values=4 * RN * RK, c_values=4 * RM * RN)
    assert mma.operands[0] is loads[0].result and mma.operands[1] is loads[1].result
    assert mma.operands[2] is loop.regions[0].args[1]          # the carried acc
    assert loop.regions[0].ops[-1].operands[0] is mma.result   # ... yielded back

    # assertions and their source lines
    dis = k.ops("ave.assert_disjoint")
    assert len(dis) == 2
    check_at(GEMM, dis[:1], "ave.assert_disjoint(sA[s_fill], sA[s])")
    check_at(GEMM, dis[1:], "ave.assert_disjoint(sB[s_fill], sB[s])")
    (conf,) = k.ops("ave.assert_conform")
    assert conf.attrs["contract"] == (1, 0) and conf.attrs.get("fields") is None
    check_at(GEMM, [conf], "ave.assert_conform(a, b, contract=(1, 0))")
    check_at(GEMM, [mma], "ave.mma(a, b, acc, tiled)")
    check_at(GEMM, [wait], "ave.wait_async(STAGES - 2)")
    check_at(GEMM, loads[:1], "ave.ldmatrix(sA[s], tiled.a)")
    check_at(GEMM, loads[1:], "ave.ldmatrix(sB[s], tiled.b)")

    # the copies and commits come from issue(): prologue call site, then the loop's
    check_locations(k, GEMM, {"issue"})
    all_copies = k.ops("ave.copy_async")
    assert len(all_copies) == 2 * (STAGES - 1) + 2
    check_at(GEMM, all_copies[0::2], "ave.copy_async(A[m0:m0 + BM, k0:k0 + BK]")
    check_at(GEMM, all_copies[1::2], "ave.copy_async(B[k0:k0 + BK, n0:n0 + BN]")
    check_at(GEMM, k.ops("ave.commit_async"), "ave.commit_async()")
    pro_site, loop_site = line_of(GEMM, "issue(kt, kt)"), line_of(GEMM, "issue(kt + STAGES - 1")
    sites = [op.loc.inlined_from[0].range.start.line for op in all_copies]
    assert sites == [pro_site] * (2 * (STAGES - 1)) + [loop_site] * 2


@pytest.mark.parametrize("ci", range(len(GEMM_CONFIGS)))
def test_gemm_unrolled(ci):
    cfg = GEMM_CONFIGS[ci]
    STAGES = cfg["STAGES"]
    u = unrolled(_kernels(GEMM, len(GEMM_CONFIGS))[ci])
    check_unrolled_common(u, "kt")
    # prologue + 3 iterations + epilogue
    assert seq(u.body.ops) == (["CA", "CA", "CM"] * (STAGES - 1)
                               + ["W", "B", "D", "D", "CA", "CA", "CM", "L", "L", "C", "M"] * TRIPS
                               + ["W", "ST"])
    mmas = u.ops("ave.mma")
    assert len(mmas) == 3 * 1                        # one tiled mma per iteration
    assert len(u.ops("ave.copy_async")) == 2 * (STAGES - 1) + 2 * 3
    assert len(u.ops("ave.commit_async")) == (STAGES - 1) + 3
    assert [op.attrs["n"] for op in u.ops("ave.wait_async")] == [STAGES - 2] * 3 + [0]
    assert len(u.ops("ave.assert_disjoint")) == 2 * 3
    assert len(u.ops("ave.assert_conform")) == 3
    assert [op.attrs["loop_indices"] for op in mmas] == [(("kt", 0),), (("kt", 1),), (("kt", 2),)]
    check_acc_chain(u, mmas)
    # iteration kt reads stage kt % STAGES and refills (kt + STAGES - 1) % STAGES:
    #   STAGES = 3: reads 0, 1, 2; refills 2, 0, 1.   STAGES = 4: reads 0, 1, 2; refills 3, 0, 1
    reads = [stage_of(u, op.operands[0]) for op in u.ops("ave.load")]
    assert reads == [0, 0, 1, 1, 2, 2]
    fills = [stage_of(u, op.operands[1]) for op in u.ops("ave.copy_async")[2 * (STAGES - 1):]]
    assert fills == {3: [2, 2, 0, 0, 1, 1], 4: [3, 3, 0, 0, 1, 1]}[STAGES]
    for op in u.ops("ave.assert_disjoint"):          # (fill stage, read stage) differ
        assert stage_of(u, op.operands[0]) != stage_of(u, op.operands[1])


# ----------------------------------------------------------------------------- flash attention


@pytest.mark.parametrize("ci", range(len(FLASH_CONFIGS)))
def test_flash_attention(ci):
    cfg = FLASH_CONFIGS[ci]
    BR, BC, GROUP = cfg["BR"], cfg["BC"], cfg["GROUP"]
    D = 128                                            # the constexpr's default
    DH = D // 2
    k = _kernels(FLASH, len(FLASH_CONFIGS))[ci]
    # D and CAUSAL keep their defaults (CAUSAL is a launch-time specialisation)
    check_header(k, FLASH, "flash_attention", ci, cfg, threads=128, warp_size=32,
                 target="nvidia", constexprs={**cfg, "D": 128, "CAUSAL": False})
    check_params(k, FLASH, [("Q", "tensor", ave.bf16, 4), ("K", "tensor", ave.bf16, 4),
                            ("V", "tensor", ave.bf16, 4), ("O", "tensor", ave.bf16, 4),
                            ("sm_scale", "scalar", ave.f32)])
    check_tags(k, [("Q", ("batch", "head", "row", "k"), ("b", "h", "m", "d")),
                   ("K", ("batch", "head", "key", "k"), ("b", "h", "n", "d")),
                   ("V", ("batch", "head", "key", "col"), ("b", "h", "n", "d")),
                   ("O", ("batch", "head", "row", "col"), ("b", "h", "m", "d"))])
    # Q's head field is h // GROUP
    qtag = k.ops("ave.tag")[0]
    (fdiv,) = [op for op in qtag.regions[0].ops if op.name == "arith.floordiv"]
    assert fdiv.operands[0] is qtag.regions[0].args[1]
    assert const(k, fdiv.operands[1]) == GROUP
    # ... and so is O's (the output row of query head h holds K/V head h // GROUP's keys)
    otag = k.ops("ave.tag")[3]
    (fdiv,) = [op for op in otag.regions[0].ops if op.name == "arith.floordiv"]
    assert fdiv.operands[0] is otag.regions[0].args[1]
    assert const(k, fdiv.operands[1]) == GROUP

    # sQ (BR, D), sK and sV (2, BC, D), bf16, rows of 128 elements (Swizzle<3,3,4>):
    #   BR = 128: sQ 128*128 = 16384 -> 32768 B; sK = sV = 2*64*128 = 16384 -> 32768 B: 96 KB
    #   BR = 64:  sQ 64*128  =  8192 -> 16384 B; sK, sV as above: 80 KB
    sq = {128: ((128, 128), ave.bf16, 16384, 32768), 64: ((64, 128), ave.bf16, 8192, 16384)}[BR]
    skv = ((2, 64, 128), ave.bf16, 16384, 32768)
    sQ, sK, sV = check_allocs(k, [sq, skv, skv])
    assert sum(op.attrs["bytes"] for op in (sQ, sK, sV)) == {128: 96, 64: 80}[BR] * 1024
    for op, shape in ((sQ, (BR, D)), (sK, (2, BC, D)), (sV, (2, BC, D))):
        check_swizzled_rows(op.attrs["layout"], shape, swizzle(3, 3, 4))

    pre, loop, post = check_loop(k, "j", {"m_i", "l_i", "o_lo", "o_hi"})
    # prologue: Q, K_0, V_0, one group each
    assert seq(pre) == ["CA", "CM", "CA", "CM", "CA", "CM"]
    d = defs(k)
    q_cp, k_cp, v_cp = [op for op in walk(pre) if op.name == "ave.copy_async"]
    assert q_cp.operands[1] is sQ.result
    assert d[k_cp.operands[1]].attrs["offsets"] == (0, 0, 0)
    assert d[k_cp.operands[1]].operands[0] is sK.result
    assert d[v_cp.operands[1]].attrs["offsets"] == (0, 0, 0)
    assert d[v_cp.operands[1]].operands[0] is sV.result
    for cp in (q_cp, k_cp, v_cp):
        assert cp.attrs["vector_bytes"] == 16 and cp.attrs["masked"] is True
    assert d[q_cp.operands[0]].result.type.shape == (BR, D)
    assert d[k_cp.operands[0]].result.type.shape == (BC, D)
    # the row statistics start as reductions along the key axis (within a warp: a row of
    # S lives in the 4 lanes of one quad of one warp, warps (4, 1))
    assert [(op.attrs["op"], op.attrs["axis"], op.attrs["scope"])
            for op in walk(pre) if op.name == "ave.reduce"] == [("max", 1, "warp"),
                                                                 ("sum", 1, "warp")]

    # iteration j: wait(1) + barrier, disjoint K stages, issue K_{j+1}; D/16 = 8 k-steps of
    # (ldmatrix Q, ldmatrix K^T, assert_conform, mma); P -> A layout; wait(1) + barrier,
    # disjoint V stages, issue V_{j+1}; ldmatrix V_lo, assert_conform, mma, ldmatrix V_hi, mma
    body = loop.regions[0].ops
    assert seq(body) == (["W", "B", "D", "CA", "CM"] + ["L", "L", "C", "M"] * (D // 16)
                         + ["CV", "W", "B", "D", "CA", "CM", "L", "C", "M", "L", "M"])
    assert [op.attrs["n"] for op in walk(body) if op.name == "ave.wait_async"] == [1, 1]
    loads = [op for op in walk(body) if op.name == "ave.load"]
    assert len(loads) == 2 * 8 + 2 and all(op.attrs["ldmatrix"] is True for op in loads)
    # k-step kk reads columns kk*16 .. kk*16+15 of sQ
    assert [d[op.operands[0]].attrs["offsets"] for op in loads[0:16:2]] == \
        [(0, 16 * kk) for kk in range(8)]
    assert [d[op.operands[0]].attrs["offsets"] for op in loads[16:]] == [(0, 0), (0, DH)]
    (cv,) = [op for op in walk(body) if op.name == "ave.convert"]
    assert cv.attrs["register_only"] is True
    # the key mask is a runtime branch (only blocks reaching past n_free = S_KV take it):
    # it rebuilds x from the key index (ave.coord along axis 1) -- no causal term
    (mask_if,) = [op for op in walk(body) if op.name == "scf.if"]
    assert k.ops("scf.if") == [mask_if]
    assert mask_if.attrs["merged"] == ("x",) and len(mask_if.results) == 1
    then, other = mask_if.regions
    assert [op.attrs["axis"] for op in walk(then.ops) if op.name == "ave.coord"] == [1]
    assert count(then.ops, "arith.select") == 1
    assert [op.name for op in other.ops] == ["scf.yield"]
    check_at(FLASH, [mask_if], "if (j + 1) * BC > n_free:")
    assert [(op.attrs["op"], op.attrs["axis"], op.attrs["scope"])
            for op in walk(body) if op.name == "ave.reduce"] == [("max", 1, "warp"),
                                                                 ("sum", 1, "warp")]
    # epilogue: wait(0), O halves into sQ, barrier, one coalesced masked copy to O
    assert seq(post) == ["W", "ST", "ST", "B", "CP"]
    assert post[0].attrs["n"] == 0
    (out,) = [op for op in walk(post) if op.name == "ave.copy"]
    assert out.operands[0] is sQ.result
    assert out.attrs["vector_bytes"] == 16 and out.attrs["masked"] is True

    mmas = [op for op in walk(body) if op.name == "ave.mma"]
    assert len(mmas) == D // 16 + 2 == 10 and k.ops("ave.mma") == mmas
    # S = Q K^T: tile (BR, BC, 16), warps (4, 1): RM = BR/4/16, RN = BC/8 = 8, RK = 1
    #   BR = 128: 2 x 8 = 16 atoms per k-step; Q 8*2 = 16 values (8 regs), K 4*8 = 32
    #             (16 regs), S 4*2*8 = 64 -- the docstring's "S (64) + 8 + 16"
    #   BR = 64:  1 x 8 = 8 atoms; Q 8, K 32, S 32
    RM = BR // 4 // 16
    assert RM == {128: 2, 64: 1}[BR]
    for op in mmas[:8]:
        check_mma(op, atom_name="mma.sync.m16n8k16", atom_kind="mma.sync", mnk=(16, 8, 16),
                  warps=(4, 1), tile=(BR, BC, 16), per_warp_per_kstep=RM * 8, k_steps=1,
                  threads=128, a_values=8 * RM, b_values=4 * 8, c_values=4 * RM * 8)
    check_acc_chain(k, mmas[:8])
    # O_half += P V_half: tile (BR, DH = 64, BC = 64): RN = 64/8 = 8, RK = 64/16 = 4
    #   BR = 128: 16 atoms per k-step; P 8*2*4 = 64 values (32 regs of bf16 pairs), V
    #             4*8*4 = 128 (64 regs), O half 4*2*8 = 64 (both halves: 128 registers)
    for op in mmas[8:]:
        check_mma(op, atom_name="mma.sync.m16n8k16", atom_kind="mma.sync", mnk=(16, 8, 16),
                  warps=(4, 1), tile=(BR, DH, BC), per_warp_per_kstep=RM * 8, k_steps=BC // 16,
                  threads=128, a_values=8 * RM * 4, b_values=4 * 8 * 4, c_values=4 * RM * 8)
    assert mmas[8].operands[0] is mmas[9].operands[0] is cv.result   # P, converted once

    # assertions and their source lines
    dis = k.ops("ave.assert_disjoint")
    assert len(dis) == 2
    check_at(FLASH, dis[:1], "ave.assert_disjoint(sK[sn], sK[s])")
    check_at(FLASH, dis[1:], "ave.assert_disjoint(sV[sn], sV[s])")
    confs = k.ops("ave.assert_conform")
    assert len(confs) == 8 + 1
    for op in confs[:8]:
        assert op.attrs["fields"] == ("batch", "head", "k") and op.attrs["contract"] == (1, 0)
    assert confs[8].attrs["fields"] == ("batch", "head", "key")
    assert confs[8].attrs["contract"] == (1, 0)
    check_at(FLASH, confs[:8], "ave.assert_conform(q, k, ")
    check_at(FLASH, confs[8:], "ave.assert_conform(pa, v_lo, ")
    check_at(FLASH, mmas[:8], "ave.mma(q, k, acc, tqk)")
    check_at(FLASH, mmas[8:9], "ave.mma(pa, v_lo, o_lo, tpv)")
    check_at(FLASH, mmas[9:], "ave.mma(pa, v_hi, o_hi, tpv)")
    check_at_each(FLASH, [op for op in walk(body) if op.name == "ave.wait_async"],
                  "ave.wait_async(1)")
    check_at(FLASH, post[:1], "ave.wait_async(0)")

    # K and V copies come from load_k / load_v: prologue calls, then the loop's
    check_locations(k, FLASH, {"load_k", "load_v"})
    copies = k.ops("ave.copy_async")
    assert len(copies) == 3 + 2
    check_at(FLASH, copies[:1], "ave.copy_async(Q[b, h, m0:m0 + BR, 0:D]")
    check_at(FLASH, [copies[1], copies[3]], "ave.copy_async(K[b, hk, n0:n0 + BC, 0:D]")
    check_at(FLASH, [copies[2], copies[4]], "ave.copy_async(V[b, hk, n0:n0 + BC, 0:D]")
    assert copies[0].loc.inlined_from == ()
    assert [op.loc.inlined_from[0].range.start.line for op in copies[1:]] == [
        line_of(FLASH, "load_k(0, 0)"), line_of(FLASH, "load_v(0, 0)"),
        line_of(FLASH, "load_k(j + 1, sn)"), line_of(FLASH, "load_v(j + 1, sn)")]


@pytest.mark.parametrize("ci", range(len(FLASH_CONFIGS)))
def test_flash_attention_unrolled(ci):
    u = unrolled(_kernels(FLASH, len(FLASH_CONFIGS))[ci])
    check_unrolled_common(u, "j")
    per_iter = (["W", "B", "D", "CA", "CM"] + ["L", "L", "C", "M"] * 8
                + ["CV", "W", "B", "D", "CA", "CM", "L", "C", "M", "L", "M"])
    assert seq(u.body.ops) == (["CA", "CM"] * 3 + per_iter * TRIPS
                               + ["W", "ST", "ST", "B", "CP"])
    mmas = u.ops("ave.mma")
    assert len(mmas) == 3 * (8 + 2)
    assert len(u.ops("ave.assert_conform")) == 3 * (8 + 1)
    assert len(u.ops("ave.assert_disjoint")) == 3 * 2
    assert len(u.ops("ave.copy_async")) == 3 + 3 * 2
    assert len(u.ops("ave.commit_async")) == 3 + 3 * 2
    assert [op.attrs["n"] for op in u.ops("ave.wait_async")] == [1, 1] * 3 + [0]
    assert len(u.ops("ave.barrier")) == 2 * 3 + 1
    assert [op.attrs["loop_indices"] for op in mmas] == \
        [(("j", j),) for j in range(3) for _ in range(10)]
    # the masking branch depends on S_KV, which the trip count does not fix: one per trip
    assert [op.attrs["loop_indices"] for op in u.ops("scf.if")] == [(("j", j),) for j in range(3)]
    # S restarts from zero each iteration; O_lo / O_hi are carried across iterations
    for j in range(3):
        check_acc_chain(u, mmas[10 * j:10 * j + 8])
    # stage j % 2 is read, (j + 1) % 2 refilled: K reads 0, 1, 0; refills 1, 0, 1
    kv_copies = u.ops("ave.copy_async")[3:]
    assert [stage_of(u, op.operands[1]) for op in kv_copies] == [1, 1, 0, 0, 1, 1]
    for op in u.ops("ave.assert_disjoint"):
        assert {stage_of(u, op.operands[0]), stage_of(u, op.operands[1])} == {0, 1}


# ----------------------------------------------------------------------------- fused MoE


@pytest.mark.parametrize("ci", range(len(MOE_CONFIGS)))
def test_moe(ci):
    cfg = MOE_CONFIGS[ci]
    BM, BN, BK, STAGES = (cfg[x] for x in ("BM", "BN", "BK", "STAGES"))
    MRW = cfg["MUL_ROUTED_WEIGHT"]
    k = _kernels(MOE, len(MOE_CONFIGS))[ci]
    check_header(k, MOE, "fused_moe", ci, cfg, threads=128, warp_size=32, target="nvidia",
                 constexprs=cfg)
    check_params(k, MOE, [("X", "tensor", ave.bf16, 2), ("W", "tensor", ave.bf16, 3),
                          ("Out", "tensor", ave.bf16, 2),
                          ("sorted_token_ids", "tensor", ave.i32, 1),
                          ("expert_ids", "tensor", ave.i32, 1),
                          ("topk_weights", "tensor", ave.f32, 1)])
    check_tags(k, [("X", ("token", "k"), ("t", "k")),
                   ("W", ("expert", "col", "k"), ("e", "n", "k")),
                   ("Out", ("token", "col"), ("p", "n"))])

    # sX (STAGES, BM, BK), sW (STAGES, BN, BK) bf16 with rows of 64 (Swizzle<3,3,3>):
    #   config 0: sX 4*64*64 = 16384 -> 32768 B, sW 4*64*64 = 16384 -> 32768 B
    #   config 1: sX 4*16*64 =  4096 ->  8192 B, sW as above; plus sWt (BM, BN) f32 with
    #             layout (16, 64):(1, 0): cosize = 15*1 + 63*0 + 1 = 16 -> 64 B
    expected = {0: [((4, 64, 64), ave.bf16, 16384, 32768), ((4, 64, 64), ave.bf16, 16384, 32768)],
                1: [((4, 16, 64), ave.bf16, 4096, 8192), ((4, 64, 64), ave.bf16, 16384, 32768),
                    ((16, 64), ave.f32, 16, 64)]}
    allocs = check_allocs(k, expected[ci])
    sX, sW = allocs[:2]
    check_swizzled_rows(sX.attrs["layout"], (STAGES, BM, BK), swizzle(3, 3, 3))
    check_swizzled_rows(sW.attrs["layout"], (STAGES, BN, BK), swizzle(3, 3, 3))
    if MRW:
        lay = allocs[2].attrs["layout"]
        assert [lay(r, c) for r in (0, 5, 15) for c in (0, 1, 63)] == [0] * 3 + [5] * 3 + [15] * 3

    # the row ids: thread t holds rows t // (BK/8) + (128 / (BK/8)) * v = t // 8 + 16 v
    ids = k.ops("ave.load")[0]
    lay = ids.attrs["layout"]
    assert ids.result.type.shape == (BM,) and ids.result.type.dtype == ave.i32
    assert (lay.num_threads, lay.num_values) == (128, BM // 16)
    for t in range(128):
        for v in range(BM // 16):
            assert tuple(int(x) for x in lay.coord(t, v)) == (t // 8 + 16 * v,)
    gathers = k.ops("ave.gather")
    # X rows (BM of them), the block's expert (1 row), and with MUL_ROUTED_WEIGHT the weights
    assert [(g.attrs["dim"], g.attrs["rows"]) for g in gathers] == \
        [(0, BM), (0, 1)] + ([(0, BM)] if MRW else [])
    assert [g.result.type for g in gathers] == [
        TensorType(ave.bf16, 2, 0), TensorType(ave.bf16, 3, 0)] + (
        [TensorType(ave.f32, 1, 0)] if MRW else [])
    (scatter,) = k.ops("ave.scatter")
    assert (scatter.attrs["dim"], scatter.attrs["rows"]) == (0, BM)

    pre, loop, post = check_loop(k, "kt", {"acc"})
    # prologue: the id load, [the weights copy, riding in the first group], then
    # STAGES - 1 = 3 issues of (copy X, copy W, commit)
    assert seq(pre) == ["L"] + (["CA"] if MRW else []) + ["CA", "CA", "CM"] * (STAGES - 1)
    copies = [op for op in walk(pre) if op.name == "ave.copy_async"]
    assert len(copies) == 2 * (STAGES - 1) + (1 if MRW else 0)
    if MRW:
        assert copies[0].attrs["vector_bytes"] == 4 and copies[0].loc.inlined_from == ()
        check_at(MOE, copies[:1], "ave.copy_async(ave.gather(topk_weights")
        copies = copies[1:]
    d = defs(k)
    for i in range(STAGES - 1):
        assert d[copies[2 * i].operands[1]].attrs["offsets"] == (i, 0, 0)
        assert d[copies[2 * i + 1].operands[1]].attrs["offsets"] == (i, 0, 0)
        assert d[copies[2 * i].operands[0]].attrs["offsets"] == (0, i * BK)
        assert copies[2 * i].attrs["vector_bytes"] == 16

    assert seq(loop.regions[0].ops) == ["W", "B", "D", "D", "CA", "CA", "CM", "L", "L", "M"]
    (wait,) = [op for op in walk([loop]) if op.name == "ave.wait_async"]
    assert wait.attrs["n"] == STAGES - 2 == 2
    # epilogue: wait(0); with the routing weight: barrier and a load of sWt in tiled.c
    assert seq(post) == ["W"] + (["B", "L"] if MRW else []) + ["ST"]
    (store,) = [op for op in walk(post) if op.name == "ave.store"]
    assert store.attrs["vector_bytes"] == 4 and store.attrs["masked"] is True

    (mma,) = k.ops("ave.mma")
    # warps (1, 4), tile (BM, BN, BK): RM = BM/16, RN = 64/4/8 = 2, RK = 64/16 = 4
    #   config 0: 4 x 2 = 8 atoms per k-step (the docstring's), A 8*4*4 = 128 values (64
    #             registers), B 4*2*4 = 32, C 4*4*2 = 32 accumulators
    #   config 1: 1 x 2 = 2 atoms per k-step, A 32, B 32, C 8
    RM, RN, RK = BM // 16, BN // 4 // 8, BK // 16
    assert (RM, RN, RK) == {0: (4, 2, 4), 1: (1, 2, 4)}[ci]
    check_mma(mma, atom_name="mma.sync.m16n8k16", atom_kind="mma.sync", mnk=(16, 8, 16),
              warps=(1, 4), tile=(BM, BN, BK), per_warp_per_kstep=RM * RN, k_steps=RK,
              threads=128, a_values=8 * RM * RK, b_values=4 * RN * RK, c_values=4 * RM * RN)
    if MRW:
        wload = [op for op in walk(post) if op.name == "ave.load"][0]
        assert wload.operands[0] is allocs[2].result
        assert wload.attrs["layout"] == mma.attrs["tiled"].c

    dis = k.ops("ave.assert_disjoint")
    assert len(dis) == 2 and k.ops("ave.assert_conform") == []
    check_at(MOE, dis[:1], "ave.assert_disjoint(sX[s_fill], sX[s])")
    check_at(MOE, dis[1:], "ave.assert_disjoint(sW[s_fill], sW[s])")
    check_at(MOE, [mma], "ave.mma(a, b, acc, tiled)")
    check_at(MOE, [wait], "ave.wait_async(STAGES - 2)")

    check_locations(k, MOE, {"issue"})
    issued = [op for op in k.ops("ave.copy_async") if op.loc.inlined_from]
    assert len(issued) == 2 * (STAGES - 1) + 2
    check_at(MOE, issued[0::2], "ave.copy_async(Xg[0:BM, k0:k0 + BK]")
    check_at(MOE, issued[1::2], "ave.copy_async(We[0, n0:n0 + BN, k0:k0 + BK]")
    assert [op.loc.inlined_from[0].range.start.line for op in issued] == \
        [line_of(MOE, "issue(kt, kt)")] * 6 + [line_of(MOE, "issue(kt + STAGES - 1")] * 2


@pytest.mark.parametrize("ci", range(len(MOE_CONFIGS)))
def test_moe_unrolled(ci):
    cfg = MOE_CONFIGS[ci]
    MRW = cfg["MUL_ROUTED_WEIGHT"]
    u = unrolled(_kernels(MOE, len(MOE_CONFIGS))[ci])
    check_unrolled_common(u, "kt")
    assert seq(u.body.ops) == (["L"] + (["CA"] if MRW else []) + ["CA", "CA", "CM"] * 3
                               + ["W", "B", "D", "D", "CA", "CA", "CM", "L", "L", "M"] * TRIPS
                               + ["W"] + (["B", "L"] if MRW else []) + ["ST"])
    mmas = u.ops("ave.mma")
    assert len(mmas) == 3
    check_acc_chain(u, mmas)
    assert [op.attrs["n"] for op in u.ops("ave.wait_async")] == [2, 2, 2, 0]
    assert len(u.ops("ave.copy_async")) == (1 if MRW else 0) + 2 * 3 + 2 * 3
    # STAGES = 4: iteration kt reads stage kt % 4 (0, 1, 2), refills (kt + 3) % 4 (3, 0, 1)
    loop_copies = [op for op in u.ops("ave.copy_async") if op.attrs["loop_indices"]]
    assert [stage_of(u, op.operands[1]) for op in loop_copies] == [3, 3, 0, 0, 1, 1]
    loop_loads = [op for op in u.ops("ave.load") if op.attrs["loop_indices"]]
    assert [stage_of(u, op.operands[0]) for op in loop_loads] == [0, 0, 1, 1, 2, 2]


# ----------------------------------------------------------------------------- MI300X MFMA GEMM


@pytest.mark.parametrize("ci", range(len(MFMA_CONFIGS)))
def test_gemm_mfma(ci):
    cfg = MFMA_CONFIGS[ci]
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    k = _kernels(MFMA, len(MFMA_CONFIGS))[ci]
    check_header(k, MFMA, "gemm_mfma", ci, cfg, threads=256, warp_size=64, target="amd",
                 constexprs=cfg)
    check_params(k, MFMA, [("A", "tensor", ave.bf16, 2), ("W", "tensor", ave.bf16, 2),
                           ("C", "tensor", ave.f32, 2)])
    check_tags(k, [("A", ("row", "k"), ("m", "k")), ("W", ("col", "k"), ("n", "k")),
                   ("C", ("row", "col"), ("m", "n"))])

    # sA (2, BM, BK), sW (2, BN, BK) bf16, the XOR swizzle over the (2*rows, 32) buffer:
    #   BM = 128: 2*128*32 = 8192 -> 16384 B each;  BM = 256: sA 2*256*32 = 16384 -> 32768 B
    expected = {0: [((2, 128, 32), ave.bf16, 8192, 16384), ((2, 128, 32), ave.bf16, 8192, 16384)],
                1: [((2, 256, 32), ave.bf16, 16384, 32768), ((2, 128, 32), ave.bf16, 8192, 16384)]}
    sA, sW = check_allocs(k, expected[ci])
    # (s, r, c) -> row R = s*rows + r of 32 elements; 4-element group c // 4 XORed with
    # (R // 2) % 8 (vec 4, per_phase 2, max_phase 8)
    for op, rows in ((sA, BM), (sW, BN)):
        lay = op.attrs["layout"]
        for s in range(2):
            for r in range(0, rows, 3):
                for c in range(32):
                    R = s * rows + r
                    assert lay(s, r, c) == R * 32 + (((c // 4) ^ ((R // 2) % 8)) * 4) + c % 4

    pre, loop, post = check_loop(k, "kt", {"acc", "ga", "gw"})
    assert k.ops("ave.copy_async") == [] and k.ops("ave.commit_async") == []
    assert k.ops("ave.wait_async") == []
    # register-staged: tile 0 -> registers -> stage 0, barrier
    assert seq(pre) == ["L", "L", "ST", "ST", "B"]
    # global loads of tile kt+1, sched_barrier, LDS reads + MFMA, sched_barrier, LDS writes
    # of the next stage, barrier
    assert seq(loop.regions[0].ops) == ["L", "L", "SB", "L", "L", "C", "M", "SB", "D", "D",
                                        "ST", "ST", "B"]
    assert [op.attrs["mask"] for op in k.ops("ave.sched_barrier")] == [0, 0]
    assert seq(post) == ["ST"]
    # the global loads: TV layout of 16-byte vectors, thread t moves vector t % 4 of row
    # t // 4, then 256 / 4 = 64 rows further down: (t, v) -> (t//4 + 64*(v//8), 8*(t%4) + v%8)
    gl = [op for op in walk(pre) if op.name == "ave.load"]
    for op, rows in zip(gl, (BM, BN)):
        assert op.attrs["vector_bytes"] == 16 and op.attrs["masked"] is True
        lay = op.attrs["layout"]
        assert (lay.num_threads, lay.num_values) == (256, rows * BK // 256)
        for t in range(0, 256, 5):
            for v in range(lay.num_values):
                assert tuple(int(x) for x in lay.coord(t, v)) == \
                    (t // 4 + 64 * (v // 8), 8 * (t % 4) + v % 8)

    (mma,) = k.ops("ave.mma")
    # 32x32x8 MFMA, wavefronts (2, 2): RM = BM/2/32, RN = 128/2/32 = 2, RK = 32/8 = 4
    #   BM = 128: 2 x 2 = 4 atoms per k-step, C 16*2*2 = 64 accumulators (VGPRs), A 4*2*4 = 32
    #             bf16 (16 VGPRs), B 32
    #   BM = 256: 4 x 2 = 8 atoms per k-step, C 128, A 64, B 32
    RM, RN, RK = BM // 2 // 32, BN // 2 // 32, BK // 8
    assert (RM, RN, RK) == {0: (2, 2, 4), 1: (4, 2, 4)}[ci]
    check_mma(mma, atom_name="mfma.32x32x8", atom_kind="mfma", mnk=(32, 32, 8),
              warps=(2, 2), tile=(BM, BN, BK), per_warp_per_kstep=RM * RN, k_steps=RK,
              threads=256, a_values=4 * RM * RK, b_values=4 * RN * RK, c_values=16 * RM * RN)
    assert mma.attrs["tiled"].atom.threads == 64

    (conf,) = k.ops("ave.assert_conform")
    assert conf.attrs["contract"] == (1, 0)
    check_at(MFMA, [conf], "ave.assert_conform(a, b, contract=(1, 0))")
    dis = k.ops("ave.assert_disjoint")
    assert len(dis) == 2
    check_at(MFMA, dis[:1], "ave.assert_disjoint(sA[sn], sA[s])")
    check_at(MFMA, dis[1:], "ave.assert_disjoint(sW[sn], sW[s])")
    check_at(MFMA, [mma], "ave.mma(a, b, acc, tiled)")
    check_locations(k, MFMA, set())

    u = unrolled(k)
    check_unrolled_common(u, "kt")
    assert len(u.ops("ave.mma")) == 3
    check_acc_chain(u, u.ops("ave.mma"))
    assert len(u.ops("ave.sched_barrier")) == 2 * 3
    assert len(u.ops("ave.barrier")) == 1 + 3
    assert len(u.ops("ave.store")) == 2 + 2 * 3 + 1
    assert len(u.ops("ave.load")) == 2 + 4 * 3
    # iteration kt reads stage kt % 2 (0, 1, 0) and writes (kt + 1) % 2 (1, 0, 1)
    lds_reads = [op for op in u.ops("ave.load") if op.attrs["loop_indices"]
                 and defs(u)[op.operands[0]].name in ("ave.subtile", "ave.transpose")]
    assert [stage_of(u, op.operands[0]) for op in lds_reads] == [0, 0, 1, 1, 0, 0]
    lds_writes = [op for op in u.ops("ave.store") if op.attrs["loop_indices"]]
    assert [stage_of(u, op.operands[0]) for op in lds_writes] == [1, 1, 0, 0, 1, 1]


# ----------------------------------------------------------------------------- unroll contract


def test_unrolled_region_terminators_carry_loop_indices():
    k = _kernels(GEMM, len(GEMM_CONFIGS))[0]
    u = unrolled(k)
    missing = [op.name for op in u.walk() if "loop_indices" not in op.attrs]
    assert missing == []


def test_unrolled_region_terminators_keep_their_loc():
    k = _kernels(GEMM, len(GEMM_CONFIGS))[0]
    u = unrolled(k)
    before = [op.loc for op in k.walk() if op.name == "ave.yield"][:2]   # the two tag lambdas
    after = [op.loc for op in u.walk() if op.name == "ave.yield"][:2]
    assert after == before


def test_the_ir_printer_command_runs_on_every_example():
    # `python -m ave_core.compiler.frontend FILE` (README, docs/ir.md) crashed with
    # AVE900 NameError on any kernel with a helper: a class the front end uses was defined
    # after the module's `__main__` block (a fresh user's trial)
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    for name in ("examples/gemm.py", "examples/flash_attention.py", "examples/moe.py"):
        p = subprocess.run([sys.executable, "-m", "ave_core.compiler.frontend", name],
                           capture_output=True, text=True, cwd=root, timeout=300)
        assert p.returncode == 0 and p.stdout.startswith("kernel @"), (name, p.stderr[-500:])
