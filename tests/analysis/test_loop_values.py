"""Witnesses name a runtime-start loop's iteration by its variable's value.

A loop whose start is known only at run time (``range(K // 64, K // 32)``, split-K's
``range(s * KPER, ...)``, a reversed ``range(KT - 1, -1, -1)``) is unrolled by iteration
number; witnesses used to name that number ("kt=0" for the third k-tile), which the
interpreter -- naming the variable's value -- never matched. The value comes from the
witness' sizes (completed where the finding did not need them). Each expected value is
derived by hand below and confirmed by the interpreter's own dynamic checks, run with the
witness' sizes.
"""

from __future__ import annotations

import textwrap

import numpy as np

from ave_core.analysis import analyze
from ave_core.compiler.frontend import compile_source
from ave_core.interp import run

RACE = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.f32, 2], C: ave.Tensor[ave.f32, 2]):
    M, K = A.shape
    s = ave.alloc((32, 32), ave.f32, space="shared")
    for kt in ave.range(K // 64, K // 32):
        ave.copy(A[0:32, kt * 32:kt * 32 + 32], s, vector_bytes=16)
        ave.barrier()
        ave.copy(ave.transpose(s), C[0:32, kt * 32:kt * 32 + 32], vector_bytes=4)
'''


def _kernel(src: str):
    res = compile_source(textwrap.dedent(src), "loops.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    return res.kernels[0]


def test_a_race_names_the_iterations_by_value_as_the_interpreter_does():
    # range(K // 64, K // 32) runs twice for K in 96..127 (K // 64 = 1, K // 32 = 3): kt =
    # 1, 2. The second iteration's copy into s overwrites bytes the first iteration's
    # transposed read still reads in other warps (no barrier after the read): later
    # access kt=2, earlier kt=1 (iteration numbers 1 and 0: what it said before).
    k = _kernel(RACE)
    a = analyze(k)
    (d,) = [d for d in a.diagnostics if d.code == "AVE207"]
    w = d.witness
    K = w["model"]["A.shape[1]"]
    assert 96 <= K < 128 and w["trip_counts"] == {"kt": 2}, w
    assert w["loop_indices"] == {"kt": 2} and w["earlier_loop_indices"] == {"kt": 1}
    assert "(kt=2)" in d.message
    assert [r.message for r in d.related] == ["earlier access: ave.copy (kt=1)",
                                              "later access: ave.copy (kt=2)"]
    # the interpreter, with these sizes, finds the race in the same iteration
    rng = np.random.default_rng(5)
    A = rng.standard_normal((32, K)).astype(np.float32)
    C = np.full((32, K + 32), np.nan, np.float32)
    r = run(k, (1,), [A, C])
    races = [x for x in r.diagnostics if x.code == "AVE304"]      # (its race code)
    assert races and {x.witness["loop_indices"]["kt"] for x in races} == {2}, \
        [x.message for x in races]


def test_an_out_of_bounds_access_names_the_iteration_by_value():
    # C is written unmasked at columns kt*32 .. kt*32+31: for one trip (K in 64..95: kt =
    # K // 64 = 1) the lowest column past C's extent is 32 with C.shape[1] = 1 ... 32; the
    # first out-of-bounds access is in the iteration kt = 1 (its number is 0).
    k = _kernel(RACE.replace("ave.transpose(s)", "s").replace("vector_bytes=4", "vector_bytes=16")
                .replace("        ave.copy(s, C", "        ave.barrier()\n        ave.copy(s, C")
                .rstrip() + "\n        ave.barrier()\n")
    a = analyze(k)
    (d,) = [d for d in a.diagnostics if d.code == "AVE208"]
    w = d.witness
    K = w["model"]["A.shape[1]"]
    assert 64 <= K < 96 and w["loop_indices"] == {"kt": 1}, w
    assert w["coordinates"]["C"][1] == 32 * w["loop_indices"]["kt"]
    assert "kt=1" in d.message
    rng = np.random.default_rng(6)
    A = rng.standard_normal((32, K)).astype(np.float32)
    n = w["model"]["C.shape[1]"]
    C = np.full((32, n), np.nan, np.float32)
    r = run(k, (1,), [A, C])
    oob = [x for x in r.diagnostics if x.code == "AVE301"]        # (its bounds code)
    assert oob and oob[0].witness["loop_indices"] == {"kt": 1}, [x.message for x in oob]


def test_a_loop_starting_at_zero_in_block_zero_keeps_its_values():
    # range(2 * z, min(2 * z + 2, K // 32)) in block z = 0 starts at 0: values and
    # iteration numbers agree, and no size is added to the witness for them
    k = _kernel(RACE.replace("range(K // 64, K // 32)",
                             "range(ave.program_id(1) * 2, ave.minimum(ave.program_id(1) * 2 + 2, K // 32))"))
    (d,) = [d for d in analyze(k).diagnostics if d.code == "AVE207"]
    assert d.witness["loop_indices"] == {"kt": 1} and d.witness["block"] == [0, 0, 0]
    assert "model" not in d.witness
