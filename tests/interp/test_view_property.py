"""``ave.view`` reinterprets the same bytes: a property test through the front end and the
interpreter (shared memory is bytes), and its byte-size rule."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from ave_core.compiler.frontend import compile_source
from ave_core.interp import numerics as NUM
from ave_core.interp import run
from ave_core.lang import dtype as ave_dtype

KERNEL = '''
import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.{da}, 2], Y: ave.Tensor[ave.{db}, 2]):
    s = ave.alloc(({r1}, {c1}), ave.{da})
    ave.copy(X[0:{r1}, 0:{c1}], s, vector_bytes={va})
    ave.barrier()
    v = ave.view(s, ({r2}, {c2}), dtype=ave.{db})
    ave.copy(v, Y[0:{r2}, 0:{c2}], vector_bytes={vb})
'''

DTYPES = ["u8", "bf16", "f16", "i32", "f32"]


@st.composite
def views(draw):
    da, db = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    ea, eb = ave_dtype(da).bytes, ave_dtype(db).bytes
    total = draw(st.sampled_from([64, 128, 256, 512]))            # bytes
    c1 = draw(st.sampled_from([c for c in (1, 2, 4, 8, 16, 32) if total // ea % c == 0]))
    c2 = draw(st.sampled_from([c for c in (1, 2, 4, 8, 16, 32) if total // eb % c == 0]))
    return da, db, total // ea // c1, c1, total // eb // c2, c2


@settings(max_examples=40, deadline=None, derandomize=True)
@given(views())
def test_view_preserves_bytes(v):
    da, db, r1, c1, r2, c2 = v
    ea, eb = ave_dtype(da).bytes, ave_dtype(db).bytes
    src = KERNEL.format(da=da, db=db, r1=r1, c1=c1, r2=r2, c2=c2, va=ea, vb=eb)
    res = compile_source(src, "view.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    rng = np.random.default_rng(r1 * 1000 + c1)
    raw = rng.integers(0, 256, size=r1 * c1 * ea, dtype=np.uint8)
    if da in ("bf16", "f16", "f32"):          # keep the source free of NaN bit patterns
        vals = rng.standard_normal(r1 * c1).astype(np.float32)
        raw = NUM.to_storage(ave_dtype(da), vals).view(np.uint8)
    X = raw.view(NUM.STORAGE[da]).reshape(r1, c1).copy()
    Y = np.zeros((r2, c2), NUM.STORAGE[db])
    out = run(res.kernels[0], 1, [X, Y])
    assert out.diagnostics == []
    assert Y.view(np.uint8).tobytes() == X.view(np.uint8).tobytes()


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.integers(1, 8),
       st.integers(1, 8), st.integers(1, 8), st.integers(1, 8))
def test_view_byte_rule(da, db, r1, c1, r2, c2):
    ea, eb = ave_dtype(da).bytes, ave_dtype(db).bytes
    src = KERNEL.format(da=da, db=db, r1=r1, c1=c1, r2=r2, c2=c2, va=ea, vb=eb)
    codes = [d.code for d in compile_source(src, "view.py").diagnostics]
    if r1 * c1 * ea == r2 * c2 * eb:
        assert "AVE106" not in codes
    else:
        assert codes[:1] == ["AVE106"]
