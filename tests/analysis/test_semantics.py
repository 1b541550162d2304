"""Analysis semantics on small kernels, each verdict derived by hand."""

from __future__ import annotations

import textwrap

import pytest

from ave_core.analysis import AnalysisOptions, analyze
from ave_core.compiler.frontend import compile_source

HEAD = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2]):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
'''


def _analyze(body: str, tag: bool = True, **opts):
    tags = ('    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))\n'
            '    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))\n') if tag else ""
    src = HEAD + tags + textwrap.indent(textwrap.dedent(body), "    ")
    res = compile_source(src, "k.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return src, analyze(res.kernels[0], AnalysisOptions(**opts))


def _line(src: str, needle: str) -> int:
    return next(i for i, l in enumerate(src.splitlines()) if needle in l)


def test_direct_operands_proved():
    src, a = _analyze('''
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        acc = ave.mma(ave.load(A[0:64, 0:16], tiled.a), ave.load(B[0:16, 0:64], tiled.b), acc, tiled)
    ''')
    (r,) = a.assertions
    assert (r.kind, r.status, r.coverage) == ("mma", "proved", 1.0)
    # compared pairs: per warp (2x2 grid), 32 rows x 16 k x 32 cols; 4 warps
    assert r.compared == 4 * 32 * 16 * 32


def test_k_offset_mismatch_witness_is_minimal():
    # B starts at k = 16 while A starts at k = 0: every pair disagrees by 16; the lowest
    # thread holding an A element is thread 0 (lane 0: a0 = (row 0, k 0)), B's partner of
    # (k 0) is lane 0's b0 = (k 0, n 0) of warp 0, which holds B[16, 0].
    src, a = _analyze('''
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        acc = ave.mma(ave.load(A[0:64, 0:16], tiled.a), ave.load(B[16:32, 0:64], tiled.b), acc, tiled)
    ''')
    (r,) = a.assertions
    assert r.status == "violated"
    w = r.witness
    assert w["threads"][0] == {"thread": 0, "warp": 0, "lane": 0}
    assert w["field"] == "k"
    assert w["operands"]["x"]["tags"] == {"row": 0, "k": 0}
    assert w["operands"]["y"]["tags"] == {"k": 16, "col": 0}
    (d,) = a.diagnostics
    assert d.code == "AVE201" and d.range.start.line == _line(src, "acc = ave.mma(")


def test_untagged_operands_are_vacuous():
    src, a = _analyze('''
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        acc = ave.mma(ave.load(A[0:64, 0:16], tiled.a), ave.load(B[0:16, 0:64], tiled.b), acc, tiled)
    ''', tag=False)
    (r,) = a.assertions
    assert (r.status, r.coverage) == ("vacuous", 0.0)
    assert [d.code for d in a.diagnostics] == ["AVE204"]


def test_read_of_unwritten_shared_memory_warns():
    src, a = _analyze('''
        s = ave.alloc((2, 64, 16), ave.bf16)
        ave.copy(A[0:64, 0:16], s[0], vector_bytes=16)
        ave.barrier()
        x = ave.load(s[1], tiled.a)
    ''')
    (d,) = [d for d in a.diagnostics if d.code == "AVE203"]
    assert d.range.start.line == _line(src, "x = ave.load(s[1]")
    assert d.witness["byte"] == 64 * 16 * 2          # stage 1 starts after 2048 bytes


def test_async_copy_lands_at_its_wait():
    # the read happens before the wait that retires the copy: the bytes are unwritten
    src, a = _analyze('''
        s = ave.alloc((64, 16), ave.bf16)
        ave.copy_async(A[0:64, 0:16], s, vector_bytes=16)
        ave.commit_async()
        x = ave.load(s, tiled.a)
        ave.wait_async(0)
        y = ave.load(s, tiled.a)
    ''')
    lines = [d.range.start.line for d in a.diagnostics if d.code == "AVE203"]
    assert lines == [_line(src, "x = ave.load(s")]


def test_reset_forgets_tags():
    src, a = _analyze('''
        s = ave.alloc((64, 16), ave.bf16)
        ave.copy(A[0:64, 0:16], s, vector_bytes=16)
        ave.barrier()
        ave.reset(s)
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        acc = ave.mma(ave.load(s, tiled.a), ave.load(B[0:16, 0:64], tiled.b), acc, tiled)
    ''')
    # after the reset the A side is ⊥ (and unwritten): the pairing compares nothing concrete
    (r,) = a.assertions
    assert r.status == "vacuous"


def test_assert_disjoint_overlap_byte():
    src, a = _analyze('''
        s = ave.alloc((3, 64, 16), ave.bf16)
        ave.assert_disjoint(s[1], s[0:2][1])
    ''')
    (r,) = a.assertions
    assert r.status == "violated"
    assert r.witness["byte"] == 64 * 16 * 2
    assert r.witness["overlap_bytes"] == 64 * 16 * 2


def test_runtime_trip_count_reported_bound():
    src, a = _analyze('''
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        M, K = A.shape
        for kt in ave.range(0, K // 16):
            acc = ave.mma(ave.load(A[0:64, kt * 16:kt * 16 + 16], tiled.a),
                          ave.load(B[kt * 16:kt * 16 + 16, 0:64], tiled.b), acc, tiled)
    ''', trip_bound=3)
    (r,) = a.assertions
    assert (r.status, r.trip_bound) == ("proved", 3)
    # 1..3 trips, and 0 (K < 16: K // 16 = 0)
    assert a.variants == 4


STORE = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
    sB = ave.alloc((16, 64), ave.bf16,
                   layout=ave.swizzled(ave.swizzle(3, 3, 3), ave.row_major((16, 64))))
    ave.copy(B[0:16, 0:64], sB, vector_bytes=16)
    ave.barrier()
    b = ave.load(READ, tiled.b)
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    acc = ave.mma(ave.load(A[0:64, 0:16], tiled.a), b, acc, tiled)
    ave.store(C[0:64, 0:64], acc)
'''


def _store_analysis(read: str):
    src = STORE.replace("READ", read)
    res = compile_source(src, "store.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return src, analyze(res.kernels[0])


def test_store_into_tagged_tensor_proved():
    src, a = _store_analysis("sB")
    kinds = {r.kind: r for r in a.assertions}
    assert kinds["store"].status == "proved" and kinds["store"].coverage == 1.0
    assert kinds["mma"].status == "proved"
    assert a.diagnostics == []


def test_store_catches_column_permutation_the_pairing_cannot_see():
    # The reader ignores the writer's Swizzle<3,3,3>: within a 64-element row the swizzle
    # XORs 8-element chunks by (row % 8), so B's k (the row) still pairs correctly with A's
    # k — the MMA check proves — but row k=1 of the operand holds columns of chunk 1 ^ c:
    # C[m, n] receives column n ^ 8 for rows with k % 8 == 1. Hand-derived first witness:
    # thread 0 (lane 0) stores c0 = C[0, 0] whose value is B column ... the store check says
    # col differs.
    src, a = _store_analysis(
        "ave.view(sB, (16, 64), layout=ave.row_major((16, 64)))")
    kinds = {r.kind: r for r in a.assertions}
    assert kinds["mma"].status == "proved"
    assert kinds["store"].status == "violated"
    w = kinds["store"].witness
    assert w["field"] == "col"
    x, y = w["operands"]["x"]["tags"], w["operands"]["y"]["tags"]
    assert x["row"] == y["row"] and x["col"] != y["col"]
    (d,) = [d for d in a.diagnostics if d.code == "AVE201"]
    assert d.range.start.line == next(i for i, l in enumerate(src.splitlines())
                                      if "ave.store(C" in l)


def test_conflicted_column_survives_accumulation():
    # two accumulating MMAs: the ⊤ column of the first product must not be dropped by the
    # second (a value computed from a conflicted one stays conflicted)
    src = STORE.replace("READ", "ave.view(sB, (16, 64), layout=ave.row_major((16, 64)))")
    src = src.replace("    ave.store(C[0:64, 0:64], acc)",
                      "    acc = ave.mma(ave.load(A[0:64, 0:16], tiled.a), b, acc, tiled)\n"
                      "    ave.store(C[0:64, 0:64], acc)")
    res = compile_source(src, "store2.py")
    a = analyze(res.kernels[0])
    kinds = {r.kind: r for r in a.assertions}
    assert kinds["store"].status == "violated"


def test_copy_from_shared_into_tagged_tensor_is_checked():
    # the epilogue stages C through shared memory; staging it transposed puts C[n, m] at
    # C[m, n]: the copy into the tagged C is flagged, the straight one is proved
    base = STORE.replace("READ", "sB").replace(
        "    ave.store(C[0:64, 0:64], acc)",
        "    sC = ave.alloc((64, 64), ave.f32)\n"
        "    ave.store(SC, acc)\n"
        "    ave.barrier()\n"
        "    ave.copy(sC, C[0:64, 0:64], vector_bytes=4)")
    good = compile_source(base.replace("SC", "sC"), "good.py")
    bad = compile_source(base.replace("SC", "sC.T"), "bad.py")
    assert good.diagnostics == [] and bad.diagnostics == []
    ga, ba = analyze(good.kernels[0]), analyze(bad.kernels[0])
    assert [r.status for r in ga.assertions if r.kind == "store"] == ["proved"]
    assert [r.status for r in ba.assertions if r.kind == "store"] == ["violated"]


@pytest.mark.parametrize("pick, at", [
    ("k0 = 0\nif B.shape[1] > 64:\n    k0 = 16\n", "if B.shape[1] > 64"),
    ("k0 = ave.where(B.shape[1] > 64, 16, 0)\n", "k0 = ave.where"),
])
def test_operands_at_an_offset_a_runtime_choice_makes(pick, at):
    # k0 is 0 or 16 depending on a runtime size -- a runtime `if` (which made it "not an
    # integer the analysis can follow") or ave.where (an unconstrained unknown): a select
    # term, shown as k0@<line of the choice>. A and B at the same k0 pair; B at k0 + 16
    # never does, whichever k0 is (no size needed)
    body = textwrap.indent(pick, "        ") + '''
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        acc = ave.mma(ave.load(A[0:64, k0:k0 + 16], tiled.a),
                      ave.load(B[{BK}:{BK} + 16, 0:64], tiled.b), acc, tiled)
    '''
    src, a = _analyze(body.replace("{BK}", "k0"), tag=True)
    assert [(r.kind, r.status) for r in a.assertions] == [("mma", "proved")]
    src, a = _analyze(body.replace("{BK}", "(k0 + 16)"), tag=True)
    (r,) = a.assertions
    assert r.status == "violated" and r.witness["field"] == "k"
    label = f"k0@{_line(src, at) + 1}"
    x, y = r.witness["operands"]["x"]["tags"]["k"], r.witness["operands"]["y"]["tags"]["k"]
    assert (x, y) == (label, f"{label} + 16")
    assert r.witness["threads"][0]["thread"] == 0


_WIDE_TAG = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row={ROW}, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row={ROW}, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
    a = ave.load(A[0:64, 0:16], tiled.a)
    b = ave.load(B[0:16, 0:64], tiled.b)
    acc = ave.mma(a, b, ave.zeros((64, 64), ave.f32, tiled.c), tiled)
    ave.store(C[4:68, 0:64], acc)
'''


@pytest.mark.parametrize("row,code", [
    ("m", "AVE201"), ("(m * 1099511627776) // 1099511627776", "AVE201"),
    # int64 wrapped (m * 2**62) // 2**62 to 0 for m = 4: row 4 "equal" to row 0 and the
    # shifted store proved (a review helper); 10**20 raised OverflowError (AVE900)
    ("(m * 4611686018427387904) // 4611686018427387904", "AVE205"),
    ("(m * 1099511627776 * 1073741824) // 1099511627776 // 1073741824", "AVE205"),
    ("m * 100000000000000000000", "AVE205")])
def test_tag_arithmetic_beyond_int64_is_unknown_not_wrapped(row, code):
    from ave_core.compiler.frontend import compile_source
    res = compile_source(_WIDE_TAG.replace("{ROW}", row), "t.py")
    assert res.diagnostics == []
    a = analyze(res.kernels[0])
    assert {d.code for d in a.diagnostics} == {code}, [d.format_text() for d in a.diagnostics]
    assert not any(r.status == "proved" and r.kind == "store" for r in a.assertions)


@pytest.mark.parametrize("rng,per_thread", [
    ("ave.range(0, ave.warp_id())", True),           # warp 0: no iteration, warp 1: one
    ("ave.range(ave.lane_id() % 2, n)", True),        # the start per thread
    ("ave.range(0, n + ave.thread_id() * 0)", False),  # the same for every thread
    ("ave.range(0, n)", False)])
def test_a_loop_bound_that_differs_across_threads_is_not_unrolled_as_one(rng, per_thread):
    # Each trip-count variant unrolls one count for the whole workgroup: a per-thread
    # bound was analyzed as if every thread ran the same iterations, and the barrier in it
    # (a deadlock; the interpreter's AVE305) went unreported (a review helper). Now AVE205
    # at the bound, as for a per-thread tile offset.
    import numpy as np
    from ave_core.interp import run
    text = ("import ave_core.lang as ave\n\n@ave.kernel(threads=64)\n"
            "def k(X: ave.Tensor[ave.f32, 1]):\n    n = X.shape[0]\n"
            f"    for i in {rng}:\n        ave.barrier()\n")
    res = compile_source(text, "t.py")
    assert res.diagnostics == []
    k = res.kernels[0]
    dyn = [d.code for d in run(k, (1,), [np.zeros(3, np.float32)], provenance=True).diagnostics]
    got = [(d.code, d.range.start.line) for d in analyze(k).diagnostics]
    if per_thread:
        assert dyn == ["AVE305"] and got == [("AVE205", 5)]
    else:
        assert dyn == [] and got == []


#: the head of a kernel multiplying tagged A[m, k] and B[k, n] (C untagged)
_TAGGED_AB = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
'''


_WORD_COPY = _TAGGED_AB + '''    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    sA = ave.alloc((64, 32), ave.bf16)
    sA2 = ave.alloc((64, 32), ave.bf16)
    ave.copy(A[0:64, 0:32], sA, vector_bytes=16)
    ave.barrier()
    vA = ave.view(sA, (64, 16), dtype=ave.{DT})
    vA2 = ave.view(sA2, (64, 16), dtype=ave.{DT})
{COPY}    ave.barrier()
    a = ave.ldmatrix(sA2, tiled.a)
    b = ave.load(B[0:32, 0:64], tiled.b)
    acc = ave.mma(a, b, ave.zeros((64, 64), ave.f32, tiled.c), tiled)
    ave.store(C[0:64, 0:64], acc)
'''


@pytest.mark.parametrize("dt", ["i32", "f32"])
@pytest.mark.parametrize("swap", [False, True])
def test_a_copy_of_bf16_pairs_as_words_moves_each_halfs_tags(dt, swap):
    # A shared -> shared copy through 4-byte views moves bytes: each bf16 half keeps its
    # own tag (the pair was joined, k=⊤, and a byte-exact copy failed the MMA's pairing; a
    # review helper). Swapping the word columns 0..7 and 8..15 moves k 16..31 where k 0..15
    # were: thread 0's first A element (row 0, k 0) then holds A[0, 16]. The interpreter
    # (an independent oracle: C against float64 A @ B, with A's k halves swapped or not)
    # agrees.
    import numpy as np
    from ave_core.interp import run
    from ave_core.interp.numerics import to_storage, from_storage
    from ave_core.lang import bf16
    copy = ("    ave.copy(vA[0:64, 0:8], vA2[0:64, 8:16], vector_bytes=4)\n"
            "    ave.copy(vA[0:64, 8:16], vA2[0:64, 0:8], vector_bytes=4)\n" if swap else
            "    ave.copy(vA, vA2, vector_bytes=4)\n")
    res = compile_source(_WORD_COPY.replace("{DT}", dt).replace("{COPY}", copy), "t.py")
    assert res.diagnostics == []
    k = res.kernels[0]
    got = [(d.code, d.message) for d in analyze(k).diagnostics]
    rng = np.random.default_rng(7)
    A = to_storage(bf16, rng.standard_normal((64, 32)))
    B = to_storage(bf16, rng.standard_normal((32, 64)))
    C = np.full((64, 64), np.nan, np.float32)
    run(k, (1,), [A, B, C])
    a64, b64 = from_storage(bf16, A).astype(np.float64), from_storage(bf16, B).astype(np.float64)
    if swap:
        a64 = np.concatenate([a64[:, 16:], a64[:, :16]], axis=1)
    np.testing.assert_allclose(C, a64 @ b64, rtol=1e-5, atol=1e-5)
    if not swap:
        assert got == []
    else:
        assert got and got[0][0] == "AVE201"
        assert "thread 0 (warp 0, lane 0): A holds k=16 (A[row=0, k=16]) but B holds k=0" \
            in got[0][1], got


@pytest.mark.parametrize("choose", [
    "    k0 = 0\n    if K > 64:\n        k0 = 32\n",
    "    k0 = ave.where(K > 64, 32, 0)\n"])
def test_an_offset_chosen_by_a_runtime_condition_pairs_exactly(choose):
    # The workaround AVE201.md gives for the path-insensitive merge of two operands
    # reloaded in one branch (each ⊤ after it): choose the k offset, load once -- the MMA's
    # pairing is proved on both paths.
    text = (_TAGGED_AB + '''    K = A.shape[1]
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
''' + choose + '''    a = ave.load(A[0:64, k0:k0 + 32], tiled.a)
    b = ave.load(B[k0:k0 + 32, 0:64], tiled.b)
    acc = ave.mma(a, b, ave.zeros((64, 64), ave.f32, tiled.c), tiled)
    ave.store(C[0:64, 0:64], acc)
''')
    a = analyze(compile_source(text, "t.py").kernels[0])
    (mma,) = [r for r in a.assertions if r.kind == "mma"]
    assert mma.status == "proved" and mma.covered == mma.compared > 0
    assert not any(d.code == "AVE201" for d in a.diagnostics)


_ROW_SUMS = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, n: ave.label(row=m, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m))
    L = ave.tv_layout(ave.layout(128, 1), ave.layout(8, 128), (32, 32))
    x = ave.load(A[0:32, 0:32], L)
    s = ave.sum(x, axis=1)
{TAIL}'''


@pytest.mark.parametrize("tail,expect", [
    # a reduction's result converted to a TV layout, stored as one column: it raised
    # AttributeError (ProjectedLayout.coords_table) in the checker and the interpreter
    ("    y = ave.convert(s, ave.tv_layout(ave.layout((32, 4), (1, 0)), ave.layout(1, 0), "
     "(32,)))\n    ave.store(C[0:32, 0], y)\n", "proved"),
    ("    y = ave.convert(s, ave.tv_layout(ave.layout((32, 4), (1, 0)), ave.layout(1, 0), "
     "(32,)))\n    ave.store(C[1:33, 0], y)\n", "AVE201"),
    # an expanded fragment (s[:, None], or a converted one expanded): AVE118 at the front
    # end (a convert raised ValueError and a store IndexError, AVE900)
    ("    ave.store(C[0:32, 0:1], ave.convert(s[:, None], ave.tv_layout(ave.layout((32, 4), "
     "(1, 0)), ave.layout(1, 0), (32, 1))))\n", "AVE118"),
    ("    y = ave.convert(s, ave.tv_layout(ave.layout((32, 4), (1, 0)), ave.layout(1, 0), "
     "(32,)))\n    ave.store(C[0:32, 0:1], y[:, None])\n", "AVE118"),
    ("    ave.store(C[0:32, 0], s)\n", "AVE118")])
def test_a_reduced_fragment_converts_and_stores(tail, expect):
    import numpy as np
    from ave_core.interp import run
    res = compile_source(_ROW_SUMS.replace("{TAIL}", tail), "t.py")
    if expect == "AVE118":
        assert [d.code for d in res.diagnostics] == ["AVE118"]
        assert "not supported" in res.diagnostics[0].message
        return
    k = res.kernels[0]
    got = [d.code for d in analyze(k).diagnostics]
    A = np.random.default_rng(5).random((40, 32)).astype(np.float32)
    C = np.zeros((40, 4), np.float32)
    assert run(k, (1,), [A, C], provenance=True).diagnostics == []
    off = 0 if expect == "proved" else 1
    np.testing.assert_allclose(C[off:off + 32, 0], A[:32].astype(np.float64).sum(1), rtol=1e-5)
    assert got == ([] if expect == "proved" else ["AVE201"])


def test_a_witness_takes_index_tables_to_be_well_formed():
    # Rows gathered through a loaded index table and stored into tagged C: wrong unless
    # I[m] = m. The witness named I[0] = -1 (the checker's z3 domain left loaded
    # values unconstrained, though the bounds check takes tables to be >= 0): replayed,
    # that is an out-of-bounds read, not the reported pairing (a review helper). Now the
    # model's value, replayed in the interpreter, stores A[value] into C[0].
    import re
    import numpy as np
    from ave_core.interp import run
    text = '''import ave_core.lang as ave

@ave.kernel(threads=64)
def k(A: ave.Tensor[ave.f32, 2], I: ave.Tensor[ave.i32, 1], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, n: ave.label(row=m, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    L = ave.tv_layout(ave.layout(64, 1), ave.layout(4, 64), (64, 4))
    R = ave.tv_layout(ave.layout(64, 1), ave.layout(1, 0), (64,))
    ids = ave.load(I[0:64], R)
    x = ave.load(ave.gather(A, ids, 0)[0:64, 0:4], L)
    ave.store(C[0:64, 0:4], x)
'''
    k = compile_source(text, "t.py").kernels[0]
    (d,) = analyze(k).diagnostics
    note = next(n for n in d.notes if n.startswith("for I["))
    v = int(re.search(r"= (-?\d+)", note).group(1))
    assert v >= 0 and v != 0 and f"the value holds row={v}" in d.message, (d.message, note)
    A = np.arange(64 * 4 * 2, dtype=np.float32).reshape(128, 4)
    I = np.arange(64, dtype=np.int32)
    I[0] = v
    C = np.zeros((64, 4), np.float32)
    assert run(k, (1,), [A, I, C], provenance=True).diagnostics == []
    np.testing.assert_array_equal(C[0], A[v])


@pytest.mark.parametrize("mode", [0, 1])
def test_where_on_a_coordinate_condition_picks_per_element(mode):
    # ave.where(coord(row) < 0, y, x) is x everywhere: it was the join of both (row=⊤,
    # a false AVE201); where(coord(col) < 31, x, y) is wrong in column 31 only, and the
    # witness named C[0, 0], which is right (a review helper). L: thread t holds the
    # colex indices t + 128 v of the 32 x 32 tile, so column 31 (indices 992..1023) is
    # held by threads 96..127, row 0 by thread 96 (v = 7).
    import numpy as np
    from ave_core.interp import run
    cond = ("ave.where(ave.coord((32, 32), 0, L) < 0, y, x)" if mode == 0 else
            "ave.where(ave.coord((32, 32), 1, L) < 31, x, y)")
    text = f'''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, n: ave.label(row=m, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    L = ave.tv_layout(ave.layout(128, 1), ave.layout(8, 128), (32, 32))
    x = ave.load(A[0:32, 0:32], L)
    y = ave.load(A[1:33, 0:32], L)
    ave.store(C[0:32, 0:32], {cond})
'''
    k = compile_source(text, "t.py").kernels[0]
    diags = analyze(k).diagnostics
    A = np.random.default_rng(2).random((33, 32)).astype(np.float32)
    C = np.zeros((32, 32), np.float32)
    assert run(k, (1,), [A, C], provenance=True).diagnostics == []
    wrong = np.argwhere(C != A[:32])
    if mode == 0:
        assert diags == [] and wrong.size == 0
        return
    assert sorted(set(wrong[:, 1].tolist())) == [31]
    (d,) = diags
    assert d.code == "AVE201" and "thread 96 (warp 3, lane 0)" in d.message
    assert "holds row=1 (A[row=1, col=31]) but the destination holds row=0 " \
        "(C[row=0, col=31])" in d.message


@pytest.mark.parametrize("outer,inner,reported", [
    ("K == 0", None, False),         # sizes are >= 1: the arm never runs
    ("K > 64", "K < 32", False),     # impossible under the enclosing arm
    ("K > 64", "K < 96", True),      # possible: K = 65
    ("K > 64", None, True)])
@pytest.mark.parametrize("what", ["disjoint", "mma"])
def test_an_arm_no_size_reaches_reports_nothing(outer, inner, reported, what):
    # The arm's assertion (or MMA of misaligned operands) was reported although no launch
    # runs it: impossible arms were pruned only when they touched shared memory, and
    # without the enclosing arms' conditions (a review helper).
    body = ("ave.assert_disjoint(s[0], s[0])" if what == "disjoint" else
            "acc = ave.mma(ave.load(A[0:64, 0:16], tiled.a), "
            "ave.load(B[16:32, 0:64], tiled.b), acc, tiled)")
    arm = f"    if {outer}:\n"
    ind = "        "
    if inner:
        arm += f"        if {inner}:\n"
        ind += "    "
    text = (_TAGGED_AB + '''    K = A.shape[1]
    s = ave.alloc((2, 64, 32), ave.bf16)
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
''' + arm + ind + body + "\n    ave.store(C[0:64, 0:64], acc)\n")
    res = compile_source(text, "t.py")
    assert res.diagnostics == []
    codes = {d.code for d in analyze(res.kernels[0]).diagnostics}
    want = "AVE202" if what == "disjoint" else "AVE201"
    assert (want in codes) == reported, codes


def test_disjoint_violation_notes_its_trip_counts():
    # AVE202 left out the notes every witness diagnostic carries (a review helper)
    text = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2]):
    s = ave.alloc((3, 64, 32), ave.bf16)
    for kt in ave.range(0, A.shape[1] // 32):
        ave.assert_disjoint(s[kt % 3], s[(kt + 1) % 2])
'''
    # stages kt % 3 and (kt + 1) % 2: 0/1, 1/0, 2/1, then 0/0 at kt = 3 (4 trips)
    (d,) = analyze(compile_source(text, "t.py").kernels[0],
                   AnalysisOptions(trip_bound=4)).diagnostics
    assert d.code == "AVE202" and d.message.startswith("assert_disjoint violated: kt=3:")
    assert "found with the kt loop running 4 times" in d.notes, d.notes


@pytest.mark.parametrize("mask,status", [("m < 0", "vacuous"), ("m > 100", "vacuous"),
                                         ("m < 64", "proved")])
def test_an_assertion_that_compares_nothing_is_vacuous(mask, status):
    # A store into tagged C whose mask excludes every element checked nothing, yet was
    # "proved" with coverage 0.0 (a review helper): AVE204, saying why
    text = _TAGGED_AB + f'''    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    acc = ave.mma(ave.load(A[0:64, 0:16], tiled.a), ave.load(B[0:16, 0:64], tiled.b), acc,
                  tiled)
    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: {mask})
'''
    a = analyze(compile_source(text, "t.py").kernels[0])
    (st,) = [r for r in a.assertions if r.kind == "store"]
    assert st.status == status
    if status == "vacuous":
        assert st.compared == 0
        (d,) = [d for d in a.diagnostics if d.code == "AVE204"]
        assert "compares no element" in d.message
    else:
        assert not any(d.code == "AVE204" for d in a.diagnostics)


def test_a_where_decided_on_a_value_that_wraps_is_not_decided():
    # c * 2**31 wraps to -2**31 in i32 for odd columns c (the interpreter, as the GPU):
    # the per-element where condition was computed on the unwrapped value (never < 0),
    # kept x everywhere and proved a store that puts A[m + 1] in the odd columns (a
    # review helper). A value beyond its dtype decides nothing.
    import numpy as np
    from ave_core.interp import run
    text = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, n: ave.label(row=m, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    L = ave.tv_layout(ave.layout(128, 1), ave.layout(8, 128), (32, 32))
    c = ave.coord((32, 32), 1, L)
    x = ave.load(A[0:32, 0:32], L)
    y = ave.load(A[1:33, 0:32], L)
    ave.store(C[0:32, 0:32], ave.where(c * 65536 * 32768 < 0, y, x))
'''
    k = compile_source(text, "t.py").kernels[0]
    A = np.random.default_rng(3).random((33, 32)).astype(np.float32)
    C = np.zeros((32, 32), np.float32)
    run(k, (1,), [A, C])
    assert sorted(set(np.argwhere(C != A[:32])[:, 1].tolist())) == list(range(1, 32, 2))
    assert [d.code for d in analyze(k).diagnostics] == ["AVE201"]


def test_a_scratch_double_buffer_does_not_lower_the_trip_bound():
    # A 3-deep cp.async ring over sB indexed without % (wait_async(2): the bound stays
    # 2 + 2 + 2 = 6) beside a scratch double buffer sX[j % 2]: the scratch buffer set the
    # bound to 4, and the read at j = 4 of sB[4], which nothing writes, went unreported (a
    # review helper; the interpreter's AVE303 at j = 4).
    text = '''import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], N: ave.i32):
    sB = ave.alloc((5, 8, 32), ave.f32, space="shared")
    sX = ave.alloc((2, 8, 32), ave.f32, space="shared")
    for j in ave.static_range(3):
        ave.copy_async(X[j * 8:j * 8 + 8, 0:32], sB[j], vector_bytes=16)
        ave.commit_async()
    for j in ave.range(0, N):
        ave.wait_async(2)
        ave.barrier()
        ave.copy(sB[j - (j // 5) * 5], sX[j % 2], vector_bytes=16)
        ave.barrier()
        ave.copy(sX[j % 2], Y[j * 8:j * 8 + 8, 0:32], vector_bytes=16)
        ave.copy_async(X[(j + 3) * 8:(j + 3) * 8 + 8, 0:32],
                       sB[(j + 3) - ((j + 3) // 4) * 4], vector_bytes=16)
        ave.commit_async()
'''
    k = compile_source(text, "t.py").kernels[0]
    from ave_core.compiler.unroll import default_trip_bound
    assert default_trip_bound(k) == 6
    assert any(d.code == "AVE203" and "j=4" in d.message for d in analyze(k).diagnostics)


@pytest.mark.parametrize("start, bug", [("KT - 1, -1, -1", False), ("KT // 2, KT", False),
                                        ("KT - 1, -1, -1", True)])
def test_pairing_respects_the_variants_trip_count(start, bug):
    # A loop starting at a runtime value: `kb = max(kt, 0) * 32` equals kt * 32 in every
    # iteration that runs. The pairing query lacked the variant's trip-count
    # precondition: for the second trip (kt = KT - 2) z3 chose K = 1, where KT = 1 runs
    # one trip, and reported "A holds k=-32" (a review helper; the interpreter: correct
    # for K = 32, 64, 96, 100). With the bug (B one k-tile ahead), the witness is a
    # size where the loop really runs twice: KT = 2, K in 33..64, kt = 0 (second trip of
    # the reversed loop), A at k = 0, B at k = 32.
    kb = "(ave.maximum(kt, 0) + 1) * 16" if bug else "ave.maximum(kt, 0) * 16"
    src, a = _analyze(f'''
        K = A.shape[1]
        KT = (K + 15) // 16
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        for kt in ave.range({start}):
            kb = {kb}
            a = ave.load(A[0:64, kt * 16:kt * 16 + 16], tiled.a, mask=lambda m, k: k < K)
            b = ave.load(B[kb:kb + 16, 0:64], tiled.b, mask=lambda k, n: k < K)
            acc = ave.mma(a, b, acc, tiled)
    ''')
    (r,) = [r for r in a.assertions if r.kind == "mma"]
    if not bug:
        assert r.status == "proved", r.witness
        return
    assert r.status == "violated"
    w = r.witness
    assert w["operands"]["x"]["tags"]["k"] >= 0
    assert w["operands"]["y"]["tags"]["k"] == w["operands"]["x"]["tags"]["k"] + 16
    K = w["model"]["A.shape[1]"]
    assert w["trip_counts"] == {"kt": 2} and (K + 15) // 16 == 2, (K, w)
    # the second trip of range(KT - 1, -1, -1) with KT = 2: the variable's value kt = 0
    # (it named the 0-based iteration number, kt=1, which is the first trip's value)
    assert w["loop_indices"] == {"kt": 0}
    _replay_with_model(src, r, w, grid=(1,))


def _replay_with_model(src: str, r, w: dict, grid: tuple) -> None:
    """Run the kernel of ``src`` (tensors A (M, K), B (K, N), sizes from the witness'
    model; only the provenance is read) through the interpreter's
    provenance mode and confirm the witness: the iteration it names, by the loop
    variable's value, exists and pairs the data it says."""
    import numpy as np
    from ave_core.analysis.replay import replay_witness
    from ave_core.interp import numerics as NUM
    from ave_core.interp import run
    from ave_core.lang import bf16
    res = compile_source(src, "k.py")
    k = res.kernels[0]
    m = w["model"]
    K = m["A.shape[1]"]
    # (sizes the model leaves free, or makes smaller than a tile the kernel reads in
    # bounds of its mask -- B.shape[0] = 1: the pairing query does not ask that the
    # reads be in bounds -- large enough for every tile)
    M, N = m.get("A.shape[0]", 64), m.get("B.shape[1]", 64)
    KB = max(m.get("B.shape[0]", 0), K + 64)
    rng = np.random.default_rng(7)
    A = NUM.to_storage(bf16, rng.standard_normal((max(M, 64), K)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((KB, max(N, 64))).astype(np.float32))
    args = [A, B] + ([np.zeros((64, 64), np.float32)] if len(k.params) > 2 else [])
    out = run(k, grid, args, provenance=True, checks=False)
    rp = replay_witness(k, out, r.kind, r.loc.range, w)
    assert rp.confirmed, rp
    assert (rp.x_value, rp.y_value) == (w["operands"]["x"]["tags"][rp.field],
                                        w["operands"]["y"]["tags"][rp.field])


def test_a_split_k_loop_names_its_iteration_by_value():
    # split-K: block z runs kt = z*KPER .. z*KPER + KPER - 1, a start known at run time.
    # B is one k-tile ahead from kt = 1 on. The witness named the 0-based iteration
    # ("kt=0: A holds k=32"): kt is 2 there (A's k = 16 * kt). Hand-derived: the first
    # variant (one trip) needs a block whose range holds one tile, kt >= 1: z = 1 with
    # K // 16 = 3 (K = 48), kt = 2, A at k = 32, B at k = 48.
    src, a = _analyze('''
        KPER = 2
        K = A.shape[1]
        s = ave.program_id(2)
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        for kt in ave.range(s * KPER, ave.minimum(s * KPER + KPER, K // 16)):
            kb = kt * 16 + ave.minimum(kt, 1) * 16
            a = ave.load(A[0:64, kt * 16:kt * 16 + 16], tiled.a)
            b = ave.load(B[kb:kb + 16, 0:64], tiled.b)
            acc = ave.mma(a, b, acc, tiled)
    ''')
    (r,) = [r for r in a.assertions if r.kind == "mma"]
    assert r.status == "violated"
    w = r.witness
    z, K = w["model"]["program_id(2)"], w["model"]["A.shape[1]"]
    kt = w["loop_indices"]["kt"]
    assert w["block"][2] == z and 2 * z <= kt < min(2 * z + 2, K // 16), w
    assert w["operands"]["x"]["tags"]["k"] == 16 * kt
    assert w["operands"]["y"]["tags"]["k"] == 16 * kt + 16
    assert (z, K, kt) == (1, 48, 2)
    d = next(d for d in a.diagnostics if d.code == "AVE201")
    assert "kt=2: A holds k=32" in d.message
    assert all("(kt=2)" in r.message for r in d.related if "last moved" in r.message)
    _replay_with_model(src, r, w, grid=(1, 1, z + 1))


def test_pairing_checked_once_stands_for_every_later_trip_count():
    # The MMA at kt = 0 is shared by every trip-count variant (incremental analysis), and
    # B is one k-tile ahead there only when the loop runs twice or more (K > 16). Its
    # pairing query, given the first variant's exact trip count (K <= 16), proved it;
    # the full analysis found it. The query now takes what every variant running that
    # iteration has in common (the loop runs at least once), like the full analysis.
    body = '''
        K = A.shape[1]
        KT = (K + 15) // 16
        acc = ave.zeros((64, 64), ave.f32, tiled.c)
        for kt in ave.range(0, KT):
            kb = kt * 16 + ave.minimum((K - 1) // 16, 1) * 16 * (1 - ave.minimum(kt, 1))
            a = ave.load(A[0:64, kt * 16:kt * 16 + 16], tiled.a, mask=lambda m, k: k < K)
            b = ave.load(B[kb:kb + 16, 0:64], tiled.b, mask=lambda k, n: k < K)
            acc = ave.mma(a, b, acc, tiled)
    '''
    for incremental in (True, False):
        src, a = _analyze(body, incremental=incremental)
        (r,) = [r for r in a.assertions if r.kind == "mma"]
        assert r.status == "violated", incremental
        w = r.witness
        assert w["loop_indices"] == {"kt": 0} and w["model"]["A.shape[1]"] > 16
        assert w["operands"]["y"]["tags"]["k"] == w["operands"]["x"]["tags"]["k"] + 16


def test_a_pairing_witness_names_the_trip_counts_of_its_sizes():
    # B's k offset kt * 128 (for kt * 32): at kt = 1, A holds k = 32 and B k = 128. The
    # pairing check at kt = 1 stands for every trip count >= 2, and z3's sizes (K = 129:
    # B's row 128 exists only there) run the loop 5 times -- the note said "found with
    # ... 2" (the variant that made the check), for which no size shows the pair (a review
    # helper). The interpreter, run with the witness's sizes, confirms the pair.
    import numpy as np
    from ave_core.analysis.replay import replay_witness
    from ave_core.interp import numerics as NUM
    from ave_core.interp import run
    from ave_core.lang import bf16
    src = HEAD.replace("tile=(64, 64, 16)", "tile=(64, 64, 32)").replace(
        "B: ave.Tensor[ave.bf16, 2])", "B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2])") + '''
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    K = A.shape[1]
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in ave.range(0, (K + 31) // 32):
        a = ave.load(A[0:64, kt * 32:kt * 32 + 32], tiled.a, mask=lambda m, k: k < K)
        b = ave.load(B[kt * 128:kt * 128 + 32, 0:64], tiled.b, mask=lambda k, n: k < K)
        acc = ave.mma(a, b, acc, tiled)
    ave.store(C[0:64, 0:64], acc)
'''
    res = compile_source(src, "trips.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    k = res.kernels[0]
    a = analyze(k)
    (r,) = [r for r in a.assertions if r.kind == "mma" and r.status == "violated"]
    w = r.witness
    K = w["model"]["A.shape[1]"]
    assert K > 128 and w["loop_indices"] == {"kt": 1}
    assert w["trip_counts"] == {"kt": -(-K // 32)}
    d = next(d for d in a.diagnostics if d.code == "AVE201")
    assert f"found with the kt loop running {-(-K // 32)} times" in d.notes
    rng = np.random.default_rng(24)
    A = NUM.to_storage(bf16, rng.standard_normal((64, K)).astype(np.float32))
    B = NUM.to_storage(bf16, rng.standard_normal((K, 64)).astype(np.float32))
    res = run(k, (1,), [A, B, np.zeros((64, 64), np.float32)], provenance=True, checks=False)
    rp = replay_witness(k, res, r.kind, r.loc.range, w)
    assert rp.confirmed and (rp.x_value, rp.y_value) == (32, 128)


def test_an_mma_of_a_computed_operand_is_named_computed():
    # O = (Q K^T) V stored into the wrong column block: the value was named after V,
    # "V[row=0, col=0]" -- V has no row; P is mixed from Q and K, and mixed stays mixed
    # (a review helper)
    src = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def pv(Q: ave.Tensor[ave.bf16, 2], K: ave.Tensor[ave.bf16, 2], V: ave.Tensor[ave.bf16, 2],
       O: ave.Tensor[ave.f32, 2]):
    Q = ave.tag(Q, lambda m, d: ave.label(row=m, k=d))
    K = ave.tag(K, lambda n, d: ave.label(key=n, k=d))
    V = ave.tag(V, lambda n, d: ave.label(key=n, col=d))
    O = ave.tag(O, lambda m, d: ave.label(row=m, col=d))
    ave.assume((O.shape[1] >= 32) & (K.shape[0] == 64) & (V.shape[0] == 64))
    tqk = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(4, 1),
                        tile=(64, 64, 16))
    tpv = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(4, 1),
                        tile=(64, 16, 64))
    s = ave.mma(ave.load(Q[0:64, 0:16], tqk.a), ave.load(K[0:64, 0:16].T, tqk.b),
                ave.zeros((64, 64), ave.f32, tqk.c), tqk)
    p = ave.convert(ave.cast(s, ave.bf16), tpv.a)
    o = ave.mma(p, ave.load(V[0:64, 0:16], tpv.b), ave.zeros((64, 16), ave.f32, tpv.c), tpv)
    ave.store(O[0:64, 16:32], o)
'''
    res = compile_source(src, "pv.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    (d,) = analyze(res.kernels[0]).diagnostics
    assert d.code == "AVE201" and "(computed[row=0, col=0])" in d.message, d.message
    assert d.witness["operands"]["x"]["tensor"] is None
