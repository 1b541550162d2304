"""A pairing violation only some warps see, and opaque tag values in witnesses.

The per-warp dense operands of an MMA hold one tile per warp; a witness in warp 1 or later
used to index past the first tile (an AVE900 internal error instead of the violation).
The tag here is wrong only in rows 64..127 of each 128-row block: k + (m % 128) // 64.
Hand-derived for config 0 (BM = BN = 128, warps (2, 2), m16n8k16): warp 2 = threads
64..95 owns tile rows 64..127 and columns 0..63; its lane 0 (thread 64) holds A at tile
row 64, k = 0 in its first k-step, whose tag says k = 0 + 64 // 64 = 1, while B's k-slot
0 says k = 0. Warps 0 and 1 (rows 0..63) are fine, so thread 64 is the lowest witness.
"""

from __future__ import annotations

import os

from ave_core.check import check_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OLD = "A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))"
NEW = "A = ave.tag(A, lambda m, k: ave.label(row=m, k=k + (m % 128) // 64))"


def test_violation_in_a_later_warp(tmp_path):
    with open(os.path.join(ROOT, "examples", "gemm.py"), encoding="utf-8") as f:
        text = f.read()
    assert OLD in text
    path = tmp_path / "gemm_half_wrong.py"
    path.write_text(text.replace(OLD, NEW), encoding="utf-8")
    report = check_file(str(path))
    codes = [d.code for d in report.diagnostics]
    assert "AVE900" not in codes, [d.message for d in report.diagnostics]
    mma = [d for d in report.diagnostics
           if d.code == "AVE201" and d.message.startswith("MMA operand pairing")]
    assert len(mma) == 1
    w = mma[0].witness
    assert w["threads"][0] == {"thread": 64, "warp": 2, "lane": 0}
    assert w["loop_indices"] == {"kt": 0}
    x = w["operands"]["x"]
    assert x["slot"] == [64, 0] and x["thread"] == 64
    # the opaque term (m % 128) // 64 is evaluated under the witness' model
    assert x["tags"]["k"] == 1 and x["tags"]["row"] == 64
    assert w["operands"]["y"]["tags"] == {"k": 0, "col": 0}
    assert "A holds k=1 (A[row=64, k=1]) but B holds k=0" in mma[0].message


def test_tag_value_past_the_packed_range_is_unknown_at_the_tag(tmp_path):
    """Tag values are packed in 40 bits (|value| < 2**39): a larger one is no tensor
    coordinate; the analysis says so at the ``ave.tag`` (AVE205), it does not wrap."""
    with open(os.path.join(ROOT, "examples", "gemm.py"), encoding="utf-8") as f:
        text = f.read()
    big = "A = ave.tag(A, lambda m, k: ave.label(row=m * 1099511627776 + 5, k=k))"
    path = tmp_path / "gemm_big_tag.py"
    path.write_text(text.replace(OLD, big), encoding="utf-8")
    report = check_file(str(path))
    (d,) = [d for d in report.diagnostics if d.code == "AVE205"]
    assert "the tag of `A`, field `row`" in d.message and "2**39" in d.message
    line = text.splitlines().index(next(ln for ln in text.splitlines() if OLD in ln))
    assert d.range.start.line == line
