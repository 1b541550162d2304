"""Full unrolling: exact trip counts, runtime trip-count specialization, folding."""

import textwrap

import pytest

from ave_core.compiler.frontend import compile_source
from ave_core.compiler.unroll import (UnrollError, default_trip_bound, pipeline_buffers,
                                      runtime_loops, unroll,
                                      unrolled_variants)

PIPE = textwrap.dedent('''
    import ave_core.lang as ave

    @ave.kernel(threads=128)
    def k(A: ave.Tensor[ave.bf16, 2], STAGES: ave.constexpr = 3, BK: ave.constexpr = 32):
        M, K = A.shape
        KT = K // BK
        s_a = ave.alloc((STAGES, 64, BK), ave.bf16)

        def issue(kt):
            ave.copy_async(A[0:64, kt * BK:kt * BK + BK], s_a[kt % STAGES], vector_bytes=16)
            ave.commit_async()

        for kt in ave.static_range(STAGES - 1):
            issue(kt)
        for kt in ave.range(0, KT):
            ave.wait_async(STAGES - 2)
            ave.barrier()
            if kt + STAGES - 1 < KT:
                issue(kt + STAGES - 1)
''')


def _kernel(src=PIPE):
    res = compile_source(src, "pipe.py")
    assert not res.diagnostics, [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def test_runtime_loop_found_and_bound_is_stages_plus_two():
    k = _kernel()
    loops = runtime_loops(k)
    assert len(loops) == 1 and loops[0].attrs["iv_name"] == "kt"
    assert default_trip_bound(k) == 5


@pytest.mark.parametrize("trips", [1, 2, 3, 4, 5])
def test_copies_per_trip_count(trips):
    # prologue issues STAGES-1 = 2 stages; iteration kt issues when kt + 2 < trips.
    k = _kernel()
    u = unroll(k, {runtime_loops(k)[0]: trips})
    names = [op.name for op in u.walk()]
    expected_issues = 2 + sum(1 for kt in range(trips) if kt + 2 < trips)
    assert names.count("ave.copy_async") == expected_issues
    assert names.count("ave.wait_async") == trips
    assert "scf.for" not in names and "scf.if" not in names


def test_loop_indices_recorded_on_ops():
    k = _kernel()
    u = unroll(k, {runtime_loops(k)[0]: 4})
    waits = [op for op in u.walk() if op.name == "ave.wait_async"]
    assert [op.attrs["loop_indices"] for op in waits] == [(("kt", i),) for i in range(4)]
    # the copy issued in iteration kt=1 (stage for kt+2=3) is tagged kt=1
    copies = [op for op in u.walk() if op.name == "ave.copy_async"]
    assert copies[-1].attrs["loop_indices"] == (("kt", 1),)


def test_variants_cover_one_to_bound():
    k = _kernel()
    got = [names for names, _ in unrolled_variants(k)]
    assert got == [{"kt": n} for n in range(1, 6)]
    assert [n for n, _ in unrolled_variants(k, bound=2)] == [{"kt": 1}, {"kt": 2}]


@pytest.mark.parametrize("bound", [2 ** 31, 10 ** 12])
def test_a_huge_trip_bound_is_refused_before_any_variant_is_built(bound):
    # the combinations were listed before the variant limit was checked: a bound of 2**31
    # (tripCountBound in pyproject.toml) ran for minutes, two loops ran out of memory (a
    # review helper). Counted first: refused at once, with the count.
    k = _kernel()
    with pytest.raises(UnrollError, match=f"trip counts up to {bound} make {bound} variants "
                                          r"\(limit 256\)"):
        next(unrolled_variants(k, bound=bound))


def test_runtime_loop_without_trip_count_is_an_error():
    with pytest.raises(UnrollError, match="runtime trip count"):
        unroll(_kernel())


def test_constant_loop_unrolled_exactly_with_carried_value():
    src = textwrap.dedent('''
        import ave_core.lang as ave
        @ave.kernel(threads=32)
        def k(X: ave.Tensor[ave.i32, 1]):
            x = 0
            for i in ave.range(0, 4):
                x = x + i
            y = x * 2
    ''')
    k = _kernel(src)
    assert len(k.ops("scf.for")) == 1          # the front end keeps the loop
    u = unroll(k)
    consts = [op.attrs["value"] for op in u.walk() if op.name == "arith.constant"]
    assert 12 in consts                         # (0+1+2+3)*2 folded
    assert not any(op.name == "scf.for" for op in u.walk())


def _canon(variants) -> list:
    """The unrolled variants as plain data: per op its name, loop indices, other attributes
    (repr), operands numbered by first appearance, regions; and which ops are the same
    object as an op of an earlier variant (the analysis resumes where variants depart)."""
    values: dict = {}
    objects: dict = {}

    def num(v):
        return values.setdefault(id(v), len(values))

    def block(b):
        out = [("args", [num(a) for a in b.args])]
        for o in b.ops:
            attrs = sorted((k, repr(v)) for k, v in o.attrs.items() if k != "loop_indices")
            out.append((objects.setdefault(id(o), len(objects)), o.name,
                        o.attrs.get("loop_indices"), attrs, [num(v) for v in o.operands],
                        [num(r) for r in o.results], [block(r) for r in o.regions]))
        return out

    return [(trips, block(k.body)) for trips, k in variants]


@pytest.mark.parametrize("src", ["PIPE", "examples/gemm.py", "examples/flash_attention.py",
                                 "examples/moe.py"])
def test_iteration_reuse_gives_the_same_variants(src, monkeypatch):
    """Variants unrolled with earlier variants' iterations reused (the unroll memo) are
    the variants unrolled op by op: the same ops, constants, loop indices and sharing of op
    objects between variants. PIPE's body reads the trip bound (``kt + 2 < KT``): its
    iterations differ per variant and must not be reused."""
    import os

    import ave_core.compiler.unroll as U

    if src == "PIPE":
        k = _kernel()
    else:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with open(os.path.join(root, src), encoding="utf-8") as f:
            k = compile_source(f.read(), src).kernels[0]
    calls = {"hit": 0}
    key_of = U._iteration_key

    def counting(op, body, iv, cur, ctx):
        keyed = key_of(op, body, iv, cur, ctx)
        calls["hit"] += keyed is not None and keyed[0] in ctx.memo
        return keyed

    monkeypatch.setattr(U, "_iteration_key", counting)
    reused = _canon(list(unrolled_variants(k)))
    monkeypatch.setattr(U, "_iteration_key", lambda *a: None)
    fresh = _canon(list(unrolled_variants(k)))
    assert reused == fresh
    T = default_trip_bound(k)
    # iterations 0..n-2 of variant n were unrolled by variant n - 1
    assert calls["hit"] == (0 if src == "PIPE" else T * (T - 1) // 2)


# A double buffer whose stage commits two groups (K, then V, as in flash attention):
# wait_async(1) is not a third stage. Without a STAGES constexpr the pipeline's depth is
# the buffers the loop cycles through (sK[j % 2]: 2), so T = 2 + 2; without such buffers
# the deepest wait + 2 (+ 2); with STAGES, STAGES + 2 whatever the buffers.
DOUBLE = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(K: ave.Tensor[ave.bf16, 2], V: ave.Tensor[ave.bf16, 2], NJ: ave.i32):
    sK = ave.alloc((2, 64, 64), ave.bf16)
    sV = ave.alloc((2, 64, 64), ave.bf16)
    for j in ave.range(0, NJ):
        ave.copy_async(K[j * 64:j * 64 + 64, 0:64], sK[(j + 1) % 2], vector_bytes=16)
        ave.commit_async()
        ave.copy_async(V[j * 64:j * 64 + 64, 0:64], sV[(j + 1) % 2], vector_bytes=16)
        ave.commit_async()
        ave.wait_async(1)
        ave.barrier()
'''


def test_trip_bound_from_the_buffers_a_loop_cycles_through():
    k = _kernel(DOUBLE)
    assert pipeline_buffers(k) == 2 and default_trip_bound(k) == 4
    # no buffer selected by a modulus: the deepest wait, 1 + 2 stages, + 2
    single = _kernel(DOUBLE.replace("[(j + 1) % 2]", "[0]"))
    assert pipeline_buffers(single) is None and default_trip_bound(single) == 5
    # a modulus that selects no shared buffer (a global offset) does not count
    glob = _kernel(DOUBLE.replace("    for j", "    r = 0\n    for j")
                   .replace("ave.commit_async()\n        ave.copy_async(V",
                            "ave.commit_async()\n        r = (j + r) % 3\n"
                            "        ave.copy_async(V")
                   .replace("[(j + 1) % 2]", "[0]"))
    assert pipeline_buffers(glob) is None
    # three buffers
    assert default_trip_bound(_kernel(DOUBLE.replace("(2, 64, 64)", "(3, 64, 64)")
                                      .replace("% 2]", "% 3]"))) == 5
    # STAGES wins
    staged = _kernel(DOUBLE.replace("NJ: ave.i32)", "NJ: ave.i32, STAGES: ave.constexpr = 4)"))
    assert default_trip_bound(staged) == 6
    # only the asynchronous copies' buffers count: a scratch double buffer selected with
    # % beside a copy into a buffer not selected that way leaves the deepest-wait rule
    # (it lowered the bound below the ring's depth; a review helper)
    scratch = _kernel(DOUBLE.replace("sV[(j + 1) % 2]", "sV[0]").replace(
        "        ave.barrier()\n",
        "        ave.barrier()\n        ave.copy(sK[j % 2], sV[1])\n"))
    assert pipeline_buffers(scratch) is None and default_trip_bound(scratch) == 5


def test_a_loop_too_long_to_unroll_is_refused_before_it_is_unrolled(monkeypatch):
    # `for i in range(10**6)` in a kernel: 2,000,000 ops were cloned (100 s, 4 GB) before
    # the cap refused it (a review helper). The trip count times the body's ops is
    # compared with the cap first: not one iteration is cloned.
    from ave_core.compiler import unroll as unroll_mod

    src = textwrap.dedent('''
        import ave_core.lang as ave
        @ave.kernel(threads=32)
        def k(X: ave.Tensor[ave.i32, 1]):
            n = 0
            for i in range(10**6):
                n += 1
    ''')
    k = compile_source(src, "k.py").kernels[0]
    cloned = []
    real = unroll_mod._clone_block

    def counting(src_block, out, ctx):
        cloned.append(src_block)
        return real(src_block, out, ctx)

    monkeypatch.setattr(unroll_mod, "_clone_block", counting)
    with pytest.raises(UnrollError, match=r"loop `i` runs 1000000 times over at least 2 "
                                          r"ops each: the unrolled kernel would have more "
                                          r"than 50000 ops"):
        unroll(k)
    assert len(cloned) == 1                  # the kernel's body only, no iteration
    # a nest of two loops of 1000 (the inner one fits alone): refused at the outer loop,
    # before its first iteration (it cloned ~100,000 ops first, 11 s)
    nest = src.replace("for i in range(10**6):\n        n += 1",
                       "for i in range(1000):\n        for j in range(1000):\n"
                       "            n += 1")
    assert nest != src
    k = compile_source(nest, "k.py").kernels[0]
    del cloned[:]
    with pytest.raises(UnrollError, match=r"loop `i` runs 1000 times over at least "):
        unroll(k)
    assert len(cloned) == 1


def test_an_op_moving_a_big_tile_counts_more_toward_the_cap():
    # 6 ops per iteration: two copies of 128 x 128 f32 tiles (16,384 elements: 1 + 8
    # each), two barriers and the two views of X and Y (1 each; a view moves nothing): 22
    # per iteration. 3,000 iterations (66,000) are refused before the first one; under
    # the plain op count (18,000) they took ~60 s to check
    from ave_core.compiler.unroll import ELEMENTS_PER_OP, op_weight
    src = textwrap.dedent('''
        import ave_core.lang as ave
        @ave.kernel(threads=128)
        def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
            s = ave.alloc((128, 128), ave.f32, space="shared")
            for i in range(3000):
                ave.copy(X[0:128, 0:128], s, vector_bytes=16)
                ave.barrier()
                ave.copy(s, Y[0:128, 0:128], vector_bytes=16)
                ave.barrier()
    ''')
    k = compile_source(src, "k.py").kernels[0]
    copies = [o for o in k.walk() if o.name == "ave.copy"]
    assert [op_weight(o) for o in copies] == [1 + 128 * 128 // ELEMENTS_PER_OP] * 2 == [9, 9]
    assert all(op_weight(o) == 1 for o in k.walk() if o.name == "ave.barrier")
    with pytest.raises(UnrollError, match=r"loop `i` runs 3000 times over at least 22 ops "
                                          r"each: .* counts one more per 2048 elements"):
        unroll(k)
    k = compile_source(src.replace("range(3000)", "range(2000)"), "k.py").kernels[0]
    assert sum(1 for o in unroll(k).walk() if o.name == "ave.copy") == 4000


def test_nested_compile_time_loops_have_a_budget_in_all():
    # two nested static_range(4096), each within its own limit: 16.7 million iterations,
    # 81 s in the front end (a review helper); now AVE121 past 65,536 in all
    src = textwrap.dedent('''
        import ave_core.lang as ave
        @ave.kernel(threads=32)
        def k(X: ave.Tensor[ave.i32, 1]):
            n = 0
            for i in ave.static_range(4096):
                for j in ave.static_range(4096):
                    n = n + 1
    ''')
    (d,) = compile_source(src, "k.py").diagnostics
    assert d.code == "AVE121" and "more than 65536 iterations in all" in d.message
    ok = src.replace("4096):\n        for j in ave.static_range(4096)",
                     "200):\n        for j in ave.static_range(200)")
    assert ok != src and compile_source(ok, "k.py").diagnostics == []
