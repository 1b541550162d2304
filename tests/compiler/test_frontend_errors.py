"""Front-end error reporting: for each kind of bad input, the exact diagnostic.

Every expected range below was derived by hand from the source text and is written
literally: ``(line, start_character, end_character)`` for a one-line range, or
``(start_line, start_character, end_line, end_character)``, 0-based lines and UTF-16
columns (LSP). Kernel bodies use the header ``H`` (4 lines), so the first body line is
line 4.

Front-end bugs found while writing these tests (now fixed) are the regression tests at
the end of the file.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

from ave_core.compiler.frontend import compile_file, compile_source
from ave_core.diagnostics import CODES, Diagnostic

# ============================================================================ helpers

#: Header of most kernels: the body starts on line 4.
H = """\
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], n: ave.i32):
"""

#: A tiled MMA for a 64x64x32 tile over 2x2 warps (two body lines: 4 and 5).
MMA = """\
    atom = ave.mma_atom("m16n8k16", ave.bf16, ave.f32)
    t = ave.tiled_mma(atom, warps=(2, 2), tile=(64, 64, 32))
"""

EOLS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


def src(text: str) -> str:
    return textwrap.dedent(text)


def body(text: str) -> str:
    """Kernel body lines: dedented, then indented by 4 spaces."""
    return textwrap.indent(textwrap.dedent(text), "    ")


def utf16_col(line: str, index: int) -> int:
    """Independent reference: the UTF-16 column of code-point ``index`` of ``line``."""
    return len(line[:index].encode("utf-16-le")) // 2


def rng(d: Diagnostic) -> tuple:
    """The range of ``d`` as (line, start, end) when on one line, else a 4-tuple."""
    s, e = d.range.start, d.range.end
    if s.line == e.line:
        return (s.line, s.character, e.character)
    return (s.line, s.character, e.line, e.character)


def loc_rng(r) -> tuple:
    s, e = r.start, r.end
    return (s.line, s.character, e.character) if s.line == e.line else \
        (s.line, s.character, e.line, e.character)


def one(result) -> Diagnostic:
    """The only diagnostic of ``result``."""
    assert result.uses_ave
    assert len(result.diagnostics) == 1, [d.format_text() for d in result.diagnostics]
    return result.diagnostics[0]


def assert_in_document(text: str, d: Diagnostic) -> None:
    """Sanity: a range lies inside the document (LSP lines split on \\n, \\r\\n, \\r)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    s, e = d.range.start, d.range.end
    assert (s.line, s.character) <= (e.line, e.character), d
    for p in (s, e):
        assert 0 <= p.line < len(lines), d
        assert 0 <= p.character <= utf16_col(lines[p.line], len(lines[p.line])), d


# ============================================================================ the cases

@dataclass(frozen=True)
class Case:
    id: str
    text: str
    code: str
    range: tuple
    message: str  # a substring of the message


CASES = [
    # ---------------------------------------------------------------- AVE100
    Case("AVE100-invalid-syntax", H + "    x = 1 +* 2\n",
         "AVE100", (4, 11, 12), "invalid syntax"),
    Case("AVE100-never-closed", H + "    x = (1,\n",
         "AVE100", (4, 8, 9), "'(' was never closed"),
    Case("AVE100-non-ascii-before", H + "    s = 'é😀'; x = 1 +* 2\n",
         # `*` is code point 21, UTF-8 byte 25, UTF-16 unit 22
         "AVE100", (4, 22, 23), "invalid syntax"),
    # ---------------------------------------------------------------- AVE101
    Case("AVE101-while", H + "    while n:\n        pass\n",
         "AVE101", (4, 4, 5, 12), "`while`"),
    Case("AVE101-try", H + "    try:\n        pass\n    except Exception:\n        pass\n",
         "AVE101", (4, 4, 7, 12), "`try`"),
    Case("AVE101-with", H + "    with n:\n        pass\n",
         "AVE101", (4, 4, 5, 12), "`with`"),
    Case("AVE101-class", H + "    class C:\n        pass\n",
         "AVE101", (4, 4, 5, 12), "a class definition"),
    Case("AVE101-listcomp", H + "    x = [i for i in (1, 2)]\n",
         "AVE101", (4, 8, 27), "list comprehension"),
    Case("AVE101-fstring", H + "    x = f'{n}'\n",
         "AVE101", (4, 8, 14), "f-string"),
    Case("AVE101-break", H + "    for i in ave.range(0, n):\n        break\n",
         "AVE101", (5, 8, 13), "`break`"),
    # a DSL call inside a mask (the interpreter rejected it when it ran; by hand: the
    # lambda's body `m < ave.thread_id()` spans columns 49..68 of line 5)
    Case("AVE101-dsl-call-in-mask", H + "    s = ave.alloc((64, 64), ave.bf16)\n"
         + "    ave.copy(A[0:64, 0:64], s, mask=lambda m, k: m < ave.thread_id())\n",
         "AVE101", (5, 49, 68), "ave.thread_id inside a mask"),
    # ---------------------------------------------------------------- AVE102
    Case("AVE102-dsl-typo", H + "    ave.copyy(A, A)\n",
         "AVE102", (4, 4, 13), "`ave.copyy` is not part of the DSL; did you mean `ave.copy`?"),
    Case("AVE102-plain-name", H + "    x = foo + 1\n",
         "AVE102", (4, 8, 11), "unknown name `foo`"),
    # ---------------------------------------------------------------- AVE103
    Case("AVE103-runtime-param", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=n)
        def k(A: ave.Tensor[ave.bf16, 2], n: ave.i32):
            ave.barrier()
        """), "AVE103", (2, 20, 21), "compile-time integer"),
    Case("AVE103-bare-decorator", src("""\
        import ave_core.lang as ave

        @ave.kernel
        def k(A: ave.Tensor[ave.bf16, 2]):
            ave.barrier()
        """), "AVE103", (2, 1, 11), "threads=128"),
    Case("AVE103-not-multiple-of-32", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=100)
        def k(A: ave.Tensor[ave.bf16, 2]):
            ave.barrier()
        """), "AVE103", (2, 20, 23), "threads=100 is not a multiple of the warp size 32"),
    Case("AVE103-module-constant-not-multiple", src("""\
        import ave_core.lang as ave
        THREADS = 100

        @ave.kernel(threads=THREADS)
        def k(A: ave.Tensor[ave.bf16, 2]):
            ave.barrier()
        """), "AVE103", (3, 20, 27), "threads=100"),
    Case("AVE103-too-many", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=2048)
        def k(A: ave.Tensor[ave.bf16, 2]):
            ave.barrier()
        """), "AVE103", (2, 20, 24), "1024"),
    # ---------------------------------------------------------------- AVE104
    Case("AVE104-barrier", H + "    ave.barrier(1)\n",
         "AVE104", (4, 4, 18), "ave.barrier(): too many positional arguments"),
    Case("AVE104-copy-one-arg", H + "    ave.copy(A[0:64, 0:32])\n",
         "AVE104", (4, 4, 27), "missing a required argument: 'dst'"),
    Case("AVE104-helper-too-many", src("""\
        import ave_core.lang as ave

        def helper(x):
            return x + 1

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.bf16, 2], n: ave.i32):
            y = helper(n, 2)
        """), "AVE104", (7, 8, 20), "`helper` takes 1 arguments but 2 were given"),
    Case("AVE104-unpack", H + "    a, b = (1, 2, 3)\n",
         "AVE104", (4, 4, 8), "cannot unpack 3 values into 2 names"),
    # ---------------------------------------------------------------- AVE105
    Case("AVE105-mma-f16-for-bf16-atom", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.f16, 2], B: ave.Tensor[ave.f16, 2]):
        """) + MMA + body("""\
            a = ave.load(A[0:64, 0:32], t.a)
            b = ave.load(B[0:32, 0:64], t.b)
            c = ave.zeros((64, 64), ave.f32, t.c)
            c = ave.mma(a, b, c, t)
        """), "AVE105", (9, 16, 17), "the A operand is f16 but mma.sync.m16n8k16 takes bf16"),
    Case("AVE105-bf16-plus-f32", H + MMA + body("""\
            x = ave.load(A[0:64, 0:64], t.c)
            c = ave.zeros((64, 64), ave.f32, t.c)
            y = x + c
        """), "AVE105", (8, 8, 13), "different dtypes (bf16 and f32)"),
    # ---------------------------------------------------------------- AVE106
    Case("AVE106-view", H + body("""\
            s = ave.alloc((64, 32), ave.bf16)
            v = ave.view(s, (64, 32), ave.f32)
        """), "AVE106", (5, 8, 38), "4096 bytes"),
    # ---------------------------------------------------------------- AVE107
    Case("AVE107-alloc-layout-shape", H +
         "    s = ave.alloc((64, 32), ave.bf16, layout=ave.row_major((32, 64)))\n",
         "AVE107", (4, 45, 68), "mode sizes (32, 64) but the tile's shape is (64, 32)"),
    Case("AVE107-tv-layout-other-tile", H + MMA +
         "    a = ave.load(A[0:64, 0:64], t.a)\n",
         "AVE107", (6, 32, 35), "distributes a 64x32 tile but the tile is 64x64"),
    # ---------------------------------------------------------------- AVE108
    Case("AVE108-20-bf16-row", H + body("""\
            s = ave.alloc((16, 20), ave.bf16)
            ave.copy(A[0:16, 0:20], s, vector_bytes=16)
        """), "AVE108", (5, 44, 46), "rows of 20 x bf16 = 40 bytes"),
    # ---------------------------------------------------------------- AVE109
    Case("AVE109-col-major-shared", H + body("""\
            s = ave.alloc((64, 32), ave.bf16, layout=ave.col_major((64, 32)))
            ave.copy(A[0:64, 0:32], s, vector_bytes=16)
        """), "AVE109", (5, 4, 47), "ave.copy destination"),
    Case("AVE109-global-offset-plus-3", H + body("""\
            s = ave.alloc((64, 32), ave.bf16)
            k0 = ave.program_id(0) * 32
            ave.copy(A[0:64, k0 + 3:k0 + 35], s)
        """), "AVE109", (6, 4, 40), "ave.copy source"),
    # ---------------------------------------------------------------- AVE110
    Case("AVE110-b-as-a-shape", H + MMA + body("""\
            a = ave.load(A[0:64, 0:32], t.a)
            b = ave.load(A[0:32, 0:64], t.b)
            c = ave.zeros((64, 64), ave.f32, t.c)
            c = ave.mma(b, a, c, t)
        """), "AVE110", (9, 16, 17), "the A operand has shape 32x64"),
    Case("AVE110-b-as-a-layout", H + body("""\
            atom = ave.mma_atom("m16n8k16", ave.bf16, ave.f32)
            t = ave.tiled_mma(atom, warps=(2, 2), tile=(64, 64, 64))
            a = ave.load(A[0:64, 0:64], t.a)
            b = ave.load(A[0:64, 0:64], t.b)
            c = ave.zeros((64, 64), ave.f32, t.c)
            c = ave.mma(b, a, c, t)
        """), "AVE110", (9, 16, 17), "the A operand is not distributed"),
    Case("AVE110-wrong-tile-shape", H + MMA + body("""\
            t16 = ave.tiled_mma(atom, warps=(2, 2), tile=(64, 64, 16))
            a = ave.load(A[0:64, 0:16], t16.a)
            b = ave.load(A[0:32, 0:64], t.b)
            c = ave.zeros((64, 64), ave.f32, t.c)
            c = ave.mma(a, b, c, t)
        """), "AVE110", (10, 16, 17), "the A operand has shape 64x16"),
    # ---------------------------------------------------------------- AVE111
    Case("AVE111-no-default", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.bf16, 2], BK: ave.constexpr):
            ave.barrier()
        """), "AVE111", (3, 34, 51), "constexpr `BK` has no value"),
    # ---------------------------------------------------------------- AVE112
    Case("AVE112-runtime-value", H +
         "    A = ave.tag(A, lambda m, j: ave.label(row=m + n))\n",
         "AVE112", (4, 50, 51), "`n` is a runtime i32 scalar"),
    Case("AVE112-function-call", H +
         "    A = ave.tag(A, lambda m, j: ave.label(row=min(m, j)))\n",
         "AVE112", (4, 46, 55), "`min(m, j)` is not allowed"),
    Case("AVE112-float", H +
         "    A = ave.tag(A, lambda m, j: ave.label(row=m * 0.5))\n",
         "AVE112", (4, 50, 53), "`0.5` is not allowed"),
    Case("AVE112-power", H +
         "    A = ave.tag(A, lambda m, j: ave.label(row=m ** 2))\n",
         "AVE112", (4, 46, 52), "`m ** 2` is not allowed"),
    # ---------------------------------------------------------------- AVE114
    Case("AVE114-self-recursive", src("""\
        import ave_core.lang as ave

        def f(x):
            return f(x - 1)

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.bf16, 2]):
            y = f(3)
        """), "AVE114", (3, 11, 19), "`f` calls itself"),
    Case("AVE114-mutual", src("""\
        import ave_core.lang as ave

        def f(x):
            return g(x)

        def g(x):
            return f(x)

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.bf16, 2]):
            y = f(3)
        """), "AVE114", (6, 11, 15), "`f` calls itself"),
    # ---------------------------------------------------------------- AVE115
    Case("AVE115-static-range-runtime-bound", H +
         "    for i in ave.static_range(n):\n        ave.barrier()\n",
         "AVE115", (4, 13, 32), "`stop` is a runtime value"),
    # ---------------------------------------------------------------- AVE116
    Case("AVE116-copy-shapes", H + body("""\
            s = ave.alloc((64, 16), ave.bf16)
            ave.copy(A[0:64, 0:32], s)
        """), "AVE116", (5, 4, 30), "source shape (64, 32) and destination shape (64, 16)"),
    # ---------------------------------------------------------------- AVE117
    Case("AVE117-config-key", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128, configs=[dict(BX=1)])
        def k(A: ave.Tensor[ave.bf16, 2], BK: ave.constexpr = 4):
            ave.barrier()
        """), "AVE117", (2, 33, 45), "configs[0] sets 'BX', which is not a constexpr of `k`"),
    # ---------------------------------------------------------------- AVE118
    # a compile-time fill an integer dtype cannot hold (it was taken and wrapped: 300 as
    # an i8 is 44); the range is the value's: `300` at columns 62..65 of line 5
    Case("AVE118-fill-out-of-range", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128)
        def k(X: ave.Tensor[ave.i8, 2], n: ave.i32):
            s = ave.alloc((64, 32), ave.i8)
            ave.copy(X[0:64, 0:32], s, mask=lambda m, c: m < n, other=300)
        """), "AVE118", (5, 62, 65),
         "the fill value `other` 300 does not fit i8 (-128..127); a store would wrap it to 44"),
    # `-1` (columns 27..29) for u8 elements: 255 is what was meant, or it is a bug
    Case("AVE118-full-negative-unsigned", H + body("""\
            tv = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
            x = ave.full((16, 32), -1, ave.u8, tv)
        """), "AVE118", (5, 27, 29), "the fill value -1 does not fit u8 (0..255)"),
    Case("AVE118-full-fraction-integer", H + body("""\
            tv = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
            x = ave.full((16, 32), 2.5, ave.i32, tv)
        """), "AVE118", (5, 27, 30), "the fill value 2.5 is not an integer, but the elements are i32"),
    # ---------------------------------------------------------------- AVE119
    Case("AVE119-shared-slice", H + body("""\
            s = ave.alloc((64, 32), ave.bf16)
            u = s[0:64, 16:48]
        """), "AVE119", (5, 16, 21), "slice 16:48 outside dimension 1 of extent 32"),
    # ---------------------------------------------------------------- AVE120
    Case("AVE120-swizzle", H + "    sw = ave.swizzle(3, 3, 2)\n",
         "AVE120", (4, 9, 29), "Swizzle<3,3,2>"),
    # ---------------------------------------------------------------- AVE121
    Case("AVE121-huge-static-range", H +
         "    for i in ave.static_range(10 ** 12):\n        ave.barrier()\n",
         "AVE121", (4, 13, 39), "static loop of 1000000000000 iterations"),
    # ---------------------------------------------------------------- UTF-16 columns
    # line 4 is `    x = 'é😀'; ave.barrier(1)`: the call starts at code point 14,
    # UTF-8 byte 18, UTF-16 unit 15, and ends at code point 28 / byte 32 / unit 29.
    Case("utf16-call-after-emoji", H + "    x = 'é😀'; ave.barrier(1)\n",
         "AVE104", (4, 15, 29), "too many positional arguments"),
    # the range spans the non-ASCII characters: `ave.barrier('é😀')` is 17 code points,
    # 21 UTF-8 bytes, 18 UTF-16 units
    Case("utf16-range-over-emoji", H + "    ave.barrier('é😀')\n",
         "AVE104", (4, 4, 22), "too many positional arguments"),
    # a `# é 😀` comment line before does not shift anything
    Case("utf16-comment-line-before", H + "    # é 😀 é 😀\n    ave.barrier(1)\n",
         "AVE104", (5, 4, 18), "too many positional arguments"),
    # ---------------------------------------------------------------- robustness
    # Python's parser stops at nesting level 200: the 201st `(` is at column 8 + 200
    Case("robust-deep-parentheses", H + "    x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
         "AVE100", (4, 208, 209), "too many nested parentheses"),
    Case("robust-pow-tower-constexpr-default", src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.bf16, 2], N: ave.constexpr = 2 ** 10 ** 10):
            ave.barrier()
        """), "AVE121", (3, 53, 66), "too large"),
    Case("robust-kernel-calls-itself", H + "    k(A, n)\n",
         "AVE101", (4, 4, 11), "a kernel cannot call a kernel"),
    Case("robust-deep-unary-minus", H + "    x = " + "-" * 900 + "1\n",
         "AVE121", (3, 0, 46), "nested too deeply"),
]


def _case_params():
    for c in CASES:
        for eol_id in EOLS:
            yield pytest.param(c, EOLS[eol_id], id=f"{c.id}-{eol_id}")


@pytest.mark.parametrize("case,eol", list(_case_params()))
def test_exact_diagnostic(case: Case, eol: str) -> None:
    """One diagnostic, with the exact code and range, whatever the line ends."""
    text = case.text.replace("\n", eol)
    res = compile_source(text, "kernel.py")
    d = one(res)
    assert (d.code, rng(d)) == (case.code, case.range), d.format_text()
    assert case.message in d.message
    assert d.file == "kernel.py"
    assert d.severity == CODES[case.code].severity
    assert_in_document(text, d)
    assert res.kernels == []


def test_case_table_covers_every_front_end_code() -> None:
    codes = {c.code for c in CASES}
    assert {f"AVE1{i:02d}" for i in range(0, 22)} - {"AVE113"} <= codes


def test_utf16_columns_differ_from_code_points_and_utf8() -> None:
    """The literal columns of the UTF-16 cases are not code-point nor UTF-8 columns."""
    line = "    x = 'é😀'; ave.barrier(1)"
    i = line.index("ave.barrier")
    assert (i, len(line[:i].encode("utf-8")), utf16_col(line, i)) == (14, 18, 15)
    j = len(line)
    assert (j, len(line.encode("utf-8")), utf16_col(line, j)) == (28, 32, 29)
    line = "    s = 'é😀'; x = 1 +* 2"
    i = line.index("*")
    assert (i, len(line[:i].encode("utf-8")), utf16_col(line, i)) == (21, 25, 22)


# ============================================================================ no Ave, no diagnostics

@pytest.mark.parametrize("text", [
    "x = (1,\n",
    "import numpy as np\n\ndef f(:\n    pass\n",
    "import os\n\ndef f():\n    while True:\n        ave.copyy(1)\n",
    "import numpy as np\n\ndef kernel(**kw):\n    return lambda f: f\n\n"
    "@kernel(threads=n)\ndef k(A):\n    ave.copyy(A)\n    ave.barrier(1)\n",
    "",
    "\n\n\n",
    "x = 1\x00\n",
    "import ave\n\n@ave.kernel(threads=100)\ndef k(A):\n    ave.barrier(1)\n",
], ids=["syntax-error", "syntax-error-def", "while", "kernel-like-decorator", "empty",
        "blank-lines", "nul", "other-module-called-ave"])
def test_file_without_ave_gets_nothing(text: str) -> None:
    res = compile_source(text, "plain.py")
    assert res.uses_ave is False
    assert res.diagnostics == []
    assert res.kernels == []


def test_syntax_error_only_reported_for_ave_files() -> None:
    bad = "def f(:\n    pass\n"
    assert compile_source(bad, "plain.py").diagnostics == []
    d = one(compile_source("import ave_core.lang as ave\n" + bad, "k.py"))
    # `def f(:` is line 1; Python points at the `:` (column 6)
    assert (d.code, rng(d)) == ("AVE100", (1, 6, 7))


# ============================================================================ import forms

def test_from_import_style() -> None:
    text = src("""\
        from ave_core.lang import kernel, copy, alloc, barrier, bf16, Tensor

        @kernel(threads=128)
        def k(A: Tensor[bf16, 2]):
            s = alloc((64, 32), bf16)
            copy(A[0:64, 0:32], s)
            barrier()
        """)
    res = compile_source(text, "k.py")
    assert res.uses_ave and res.diagnostics == []
    assert [k.name for k in res.kernels] == ["k"]
    assert [op.name for op in res.kernels[0].walk() if op.name.startswith("ave.")] == \
        ["ave.alloc", "ave.global_tile", "ave.copy", "ave.barrier"]
    # errors in this style: `copy(A[0:64, 0:32])` on line 5
    d = one(compile_source(text.replace("copy(A[0:64, 0:32], s)", "copy(A[0:64, 0:32])"), "k.py"))
    assert (d.code, rng(d)) == ("AVE104", (5, 4, 23))


def test_plain_import_without_alias() -> None:
    text = src("""\
        import ave_core.lang

        @ave_core.lang.kernel(threads=128)
        def k(A: ave_core.lang.Tensor[ave_core.lang.bf16, 2]):
            s = ave_core.lang.alloc((64, 32), ave_core.lang.bf16)
            ave_core.lang.copy(A[0:64, 0:32], s)
        """)
    res = compile_source(text, "k.py")
    assert res.uses_ave and res.diagnostics == []
    assert [op.name for op in res.kernels[0].walk()] == \
        ["ave.alloc", "ave.global_tile", "ave.copy"]
    d = one(compile_source(text.replace("ave_core.lang.copy(A[0:64, 0:32], s)",
                                        "ave_core.lang.barier()"), "k.py"))
    # `ave_core.lang.barier` is 20 characters at column 4 of line 5
    assert (d.code, rng(d)) == ("AVE102", (5, 4, 24))
    assert "did you mean `ave.barrier`?" in d.message


def test_from_ave_core_import_lang_as_ave() -> None:
    text = "from ave_core import lang as ave\n\n" + H.split("\n", 2)[2] + "    ave.barrier(1)\n"
    d = one(compile_source(text, "k.py"))
    assert (d.code, rng(d)) == ("AVE104", (4, 4, 18))


# ============================================================================ line ends

def test_crlf_whole_file_same_as_lf() -> None:
    """A file with several kernels and several errors: identical diagnostics."""
    text = src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128)
        def k1(A: ave.Tensor[ave.bf16, 2], n: ave.i32):
            x = 'é😀'; ave.barrier(1)

        @ave.kernel(threads=128)
        def k2(A: ave.Tensor[ave.bf16, 2], n: ave.i32):
            while n:
                pass

        @ave.kernel(threads=96)
        def k3(A: ave.Tensor[ave.bf16, 2]):
            s = ave.alloc((64, 32), ave.bf16)
            ave.copy(A[0:64, 0:32], s)
        """)
    results = {name: compile_source(text.replace("\n", eol), "k.py") for name, eol in EOLS.items()}
    got = {name: [(d.code, rng(d), d.message) for d in r.diagnostics]
           for name, r in results.items()}
    assert [(c, r) for c, r, _ in got["lf"]] == [
        ("AVE104", (4, 15, 29)),
        ("AVE101", (8, 4, 9, 12)),
    ]
    assert got["crlf"] == got["lf"] and got["cr"] == got["lf"]
    assert [k.name for k in results["crlf"].kernels] == ["k3"]
    op_ranges = {name: [loc_rng(op.loc.range) for op in r.kernels[0].walk()]
                 for name, r in results.items()}
    # alloc at line 13 columns 8..37; the slice line 14 columns 13..26; the copy 4..30
    assert op_ranges["lf"] == [(13, 8, 37), (14, 13, 26), (14, 4, 30)]
    assert op_ranges["crlf"] == op_ranges["lf"] == op_ranges["cr"]


def test_crlf_syntax_error_position() -> None:
    text = (H + "    s = 'é😀'; x = (1 +\n    y = 2\n").replace("\n", "\r\n")
    d = one(compile_source(text, "k.py"))
    # the `(` is code point 18, UTF-16 unit 19 of line 4
    assert (d.code, rng(d)) == ("AVE100", (4, 19, 20))


# ============================================================================ helpers in other files

HELPERS = """\
import ave_core.lang as ave


def issue(src, dst):
    ave.copy(src, dst)
    ave.barrier()


def bad(src):
    s = 'é😀'; v = ave.view(src, (64, 64), ave.f32)
    return v


def outer(src):
    return bad(src)
"""


def _kernel_using(call: str) -> str:
    return src("""\
        import ave_core.lang as ave
        from helpers import issue, bad, outer

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.bf16, 2]):
            s = ave.alloc((64, 32), ave.bf16)
        """) + f"    {call}\n"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")
    return tmp_path


def test_helper_from_other_file_is_inlined(workspace) -> None:
    kpath = str(workspace / "kernel.py")
    hpath = str(workspace / "helpers.py")
    res = compile_source(_kernel_using("issue(A[0:64, 0:32], s)"), kpath,
                         workspace=str(workspace))
    assert res.diagnostics == []
    (k,) = res.kernels
    ops = {op.name: op for op in k.walk()}
    assert list(ops) == ["ave.alloc", "ave.global_tile", "ave.copy", "ave.barrier"]
    # the helper's ops carry the helper file and their range in it
    assert ops["ave.copy"].loc.file == hpath
    assert loc_rng(ops["ave.copy"].loc.range) == (4, 4, 22)
    assert ops["ave.barrier"].loc.file == hpath
    assert loc_rng(ops["ave.barrier"].loc.range) == (5, 4, 17)
    # ... and the call site they were inlined from: `issue(A[0:64, 0:32], s)`, line 6
    (site,) = ops["ave.copy"].loc.inlined_from
    assert site.file == kpath and loc_rng(site.range) == (6, 4, 27)
    # the kernel's own ops are in the kernel file
    assert ops["ave.alloc"].loc.file == kpath and ops["ave.alloc"].loc.inlined_from == ()
    assert hpath in k.files and kpath in k.files
    assert hpath in res.files


@pytest.mark.parametrize("call,call_range", [
    ("v = bad(s)", (6, 8, 14)),
    ("v = outer(s)", (6, 8, 16)),       # two levels of helpers
])
def test_error_in_helper_reported_at_call_site(workspace, call, call_range) -> None:
    kpath = str(workspace / "kernel.py")
    hpath = str(workspace / "helpers.py")
    res = compile_source(_kernel_using(call), kpath, workspace=str(workspace))
    d = one(res)
    assert (d.code, d.file, rng(d)) == ("AVE106", kpath, call_range)
    assert d.related, "the error inside the helper must be a related location"
    rel = d.related[0]
    assert rel.location.file == hpath
    # line 9 of helpers.py: `    s = 'é😀'; v = ave.view(src, (64, 64), ave.f32)`:
    # ave.view starts at code point 18 = UTF-16 unit 19 and is 32 characters long
    assert loc_rng(rel.location.range) == (9, 19, 51)
    assert "AVE106" in rel.message


def test_helper_file_crlf_same_ranges(tmp_path) -> None:
    (tmp_path / "helpers.py").write_bytes(HELPERS.replace("\n", "\r\n").encode("utf-8"))
    res = compile_source(_kernel_using("v = bad(s)"), str(tmp_path / "kernel.py"),
                         workspace=str(tmp_path))
    d = one(res)
    assert rng(d) == (6, 8, 14)
    assert loc_rng(d.related[0].location.range) == (9, 19, 51)


def test_helper_import_not_found(tmp_path) -> None:
    text = _kernel_using("issue(A[0:64, 0:32], s)")
    d = one(compile_source(text, str(tmp_path / "kernel.py"), workspace=str(tmp_path)))
    # the use of the imported name, `issue`, line 6 columns 4..9
    assert (d.code, rng(d)) == ("AVE113", (6, 4, 9))
    assert "cannot find the module `helpers`" in d.message


def test_helper_name_not_in_helper_file(tmp_path) -> None:
    (tmp_path / "helpers.py").write_text("def other():\n    pass\n", encoding="utf-8")
    text = _kernel_using("issue(A[0:64, 0:32], s)")
    d = one(compile_source(text, str(tmp_path / "kernel.py"), workspace=str(tmp_path)))
    assert (d.code, rng(d)) == ("AVE113", (6, 4, 9))
    assert "`issue` is not defined in" in d.message


def test_helper_file_with_syntax_error(tmp_path) -> None:
    (tmp_path / "helpers.py").write_text("def issue(:\n    pass\n", encoding="utf-8")
    text = _kernel_using("issue(A[0:64, 0:32], s)")
    d = one(compile_source(text, str(tmp_path / "kernel.py"), workspace=str(tmp_path)))
    assert (d.code, rng(d)) == ("AVE113", (6, 4, 9))
    assert "cannot read or parse" in d.message


def test_overlay_replaces_helper_file_text(workspace) -> None:
    """An unsaved editor buffer of the helper file wins over the file on disk."""
    hpath = str(workspace / "helpers.py")
    overlay = {hpath: "import ave_core.lang as ave\n\ndef issue(a, b):\n    ave.barrier()\n"}
    res = compile_source(_kernel_using("issue(A[0:64, 0:32], s)"), str(workspace / "kernel.py"),
                         workspace=str(workspace), overlay=overlay)
    assert res.diagnostics == []
    (k,) = res.kernels
    assert [op.name for op in k.walk()] == ["ave.alloc", "ave.global_tile", "ave.barrier"]
    (bar,) = k.ops("ave.barrier")
    assert bar.loc.file == hpath and loc_rng(bar.loc.range) == (3, 4, 17)


# ============================================================================ module level never runs

def test_module_level_code_never_runs(tmp_path, monkeypatch) -> None:
    calls: list = []
    monkeypatch.setattr(socket.socket, "connect", lambda self, *a: calls.append(("connect", a)))
    monkeypatch.setattr(os, "system", lambda *a: calls.append(("system", a)) or 0)
    sentinel = tmp_path / "sentinel"
    sentinel2 = tmp_path / "sentinel2"
    sentinel_h = tmp_path / "sentinel_helpers"
    (tmp_path / "helpers.py").write_text(
        f"open({str(sentinel_h)!r}, 'w').write('ran')\n\n"
        "def helper(x):\n    return x + 1\n", encoding="utf-8")
    text = src(f"""\
        import os
        import socket
        import ave_core.lang as ave
        from helpers import helper

        open({str(sentinel)!r}, "w").write("ran")
        socket.socket().connect(("127.0.0.1", 9))
        os.system("echo ran > " + {str(sentinel2)!r})
        THREADS = 64 * 2
        BAD = os.system("echo ran > " + {str(sentinel2)!r})

        @ave.kernel(threads=THREADS)
        def k(A: ave.Tensor[ave.bf16, 2]):
            x = helper(3)
            ave.barrier()

        @ave.kernel(threads=THREADS)
        def k2(A: ave.Tensor[ave.bf16, 2]):
            x = BAD
        """)
    res = compile_source(text, str(tmp_path / "kernel.py"), workspace=str(tmp_path))
    assert not sentinel.exists() and not sentinel2.exists() and not sentinel_h.exists()
    assert calls == []
    # k compiles; k2 uses a module-level value that is not a compile-time value
    assert [k.name for k in res.kernels] == ["k"]
    assert res.kernels[0].threads == 128
    d = one(res)
    # `os.system` in `BAD = os.system(...)`, line 9 columns 6..15
    assert (d.code, rng(d)) == ("AVE101", (9, 6, 15))


# ============================================================================ specializations

def test_one_broken_config_gives_one_diagnostic_with_a_note() -> None:
    text = src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128, configs=[dict(BK=32), dict(BK=48), dict(BK=64)])
        def k(A: ave.Tensor[ave.bf16, 2], BK: ave.constexpr = 32):
            s = ave.alloc((64, BK), ave.bf16)
            v = ave.view(s, (BK // 32 * 64, 32))
        """)
    res = compile_source(text, "k.py")
    d = one(res)
    assert (d.code, rng(d)) == ("AVE106", (5, 8, 40))
    assert "6144 bytes" in d.message
    # (no fix: the specializations that compile would break; the note says so)
    assert d.notes == ["in the specialization configs[1] = dict(BK=48)",
                       "no quick fix: the specializations configs[0], configs[2] compile "
                       "with this text"] and d.fix is None
    assert [(k.config_index, k.constexprs) for k in res.kernels] == \
        [(0, {"BK": 32}), (2, {"BK": 64})]


def test_constexpr_missing_in_one_config() -> None:
    text = src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128, configs=[dict(BK=32), dict(BM=64)])
        def k(A: ave.Tensor[ave.bf16, 2], BK: ave.constexpr, BM: ave.constexpr = 16):
            ave.barrier()
        """)
    res = compile_source(text, "k.py")
    d = one(res)
    assert (d.code, rng(d)) == ("AVE111", (3, 34, 51))
    assert d.notes == ["in the specialization configs[1] = dict(BM=64)"]
    assert [k.config_index for k in res.kernels] == [0]


# ============================================================================ robustness

ADVERSARIAL = {
    "huge-static-range-2**200": H + "    for i in ave.static_range(0, 2 ** 200, 1):\n        pass\n",
    "deep-parens-199": H + "    x = " + "(" * 199 + "1" + ")" * 199 + "\n",
    "deep-unary-5000": H + "    x = " + "-" * 5000 + "1\n",
    "long-sum-20000": H + "    x = " + "1 + " * 20000 + "1\n",
    "pow-tower": H + "    x = 2 ** 10 ** 10\n",
    "shift-huge": H + "    x = 1 << 10 ** 10\n",
    "int-growth": H + "    x = 10 ** 200\n" + "    x = x * x\n" * 12,
    "module-constant-chain": "import ave_core.lang as ave\nA0 = 1\n" +
    "".join(f"A{i} = A{i - 1} + 1\n" for i in range(1, 3000)) +
    "\n@ave.kernel(threads=128)\ndef k(A: ave.Tensor[ave.bf16, 2]):\n    x = A2999\n",
    "module-constant-cycle": "import ave_core.lang as ave\nX = Y\nY = X\n\n"
    "@ave.kernel(threads=X)\ndef k(A: ave.Tensor[ave.bf16, 2]):\n    pass\n",
    "helpers-nested-40": "import ave_core.lang as ave\n\n" +
    "".join(f"def h{i}(x):\n    return h{i + 1}(x)\n\n" for i in range(40)) +
    "def h40(x):\n    return x\n\n@ave.kernel(threads=128)\n"
    "def k(A: ave.Tensor[ave.bf16, 2]):\n    y = h0(1)\n",
    "kernel-calls-itself": H + "    k(A, n)\n",
    "empty": "",
    "only-import": "import ave_core.lang as ave\n",
    "nul-byte": H + "    ave.barrier()\x00\n",
    "lone-surrogate": H + "    x = '\ud800'\n",
    "async-kernel": "import ave_core.lang as ave\n\n@ave.kernel(threads=128)\n"
    "async def k(A: ave.Tensor[ave.bf16, 2]):\n    pass\n",
    "kernel-star-args": "import ave_core.lang as ave\n\n@ave.kernel(threads=128)\n"
    "def k(*A):\n    pass\n",
    "decorator-positional": "import ave_core.lang as ave\n\n@ave.kernel(128)\n"
    "def k(A: ave.Tensor[ave.bf16, 2]):\n    pass\n",
    "configs-not-list": "import ave_core.lang as ave\n\n@ave.kernel(threads=128, configs=3)\n"
    "def k(A: ave.Tensor[ave.bf16, 2]):\n    pass\n",
    "string-repeat-small": H + "    x = 'a' * 1000\n",
}


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_adversarial_inputs_never_raise(text: str) -> None:
    res = compile_source(text, "k.py")
    for d in res.diagnostics:
        assert d.code in CODES
        assert d.code != "AVE900", d.format_text()
        assert_in_document(text, d)


def test_adversarial_expected_codes() -> None:
    def codes(name: str) -> list[str]:
        return [d.code for d in compile_source(ADVERSARIAL[name], "k.py").diagnostics]

    assert codes("huge-static-range-2**200") == ["AVE121"]
    assert codes("deep-parens-199") == []
    assert codes("deep-unary-5000") == ["AVE100"]     # the parser's recursion limit
    assert codes("pow-tower") == ["AVE121"]
    assert codes("shift-huge") == ["AVE121"]
    assert codes("int-growth") == ["AVE121"]
    assert codes("module-constant-chain") == ["AVE121"]
    assert codes("helpers-nested-40") == ["AVE121"]
    assert codes("empty") == [] and codes("only-import") == []
    assert codes("nul-byte") == ["AVE100"]
    assert codes("async-kernel") == ["AVE101"]
    assert codes("kernel-star-args") == ["AVE101"]
    assert codes("decorator-positional") == ["AVE104"]
    assert codes("configs-not-list") == ["AVE117"]


def test_empty_file() -> None:
    res = compile_source("", "k.py")
    assert (res.uses_ave, res.diagnostics, res.kernels, res.kernel_names) == (False, [], [], [])


def test_nul_byte_in_ave_file_is_a_syntax_error() -> None:
    d = one(compile_source(H + "    ave.barrier()\x00\n", "k.py"))
    assert d.code == "AVE100"
    assert "null bytes" in d.message


# ============================================================================ regressions (front-end bugs found by these tests, fixed)

@pytest.mark.parametrize("deco", ["@ave.kernel()", "@ave.kernel(configs=[dict(BK=32)])"])
def test_bug_missing_threads_is_ave103(deco: str) -> None:
    text = f"import ave_core.lang as ave\n\n{deco}\n" \
           "def k(A: ave.Tensor[ave.bf16, 2], BK: ave.constexpr = 32):\n    ave.barrier()\n"
    d = one(compile_source(text, "k.py"))
    # the decorator call, after the `@`
    assert (d.code, rng(d)) == ("AVE103", (2, 1, len(deco)))


def test_bug_range_step_index_is_aligned() -> None:
    text = H + body("""\
            s = ave.alloc((64, 32), ave.bf16)
            for k0 in ave.range(0, n, 32):
                ave.copy(A[0:64, k0:k0 + 32], s)
        """)
    res = compile_source(text, "k.py")
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]


def test_bug_scalar_parameter_offset() -> None:
    text = src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128)
        def k(A: ave.Tensor[ave.bf16, 2], k0: ave.i32):
            s = ave.alloc((64, 32), ave.bf16)
            ave.copy(A[0:64, k0 + 3:k0 + 35], s)
        """)
    d = one(compile_source(text, "k.py"))
    assert (d.code, rng(d)) == ("AVE109", (5, 4, 40))


def test_bug_syntax_error_byte_offset_after_non_ascii() -> None:
    text = H + "    s = 'é😀'; x = 09\n"
    d = one(compile_source(text, "k.py"))
    # `09` is at code point 18, UTF-16 unit 19; the line is 21 UTF-16 units long
    assert d.code == "AVE100"
    assert (d.range.start.line, d.range.start.character) == (4, 19)
    assert d.range.end.line == 4 and 19 < d.range.end.character <= 21


def test_bug_utf8_bom(tmp_path) -> None:
    p = tmp_path / "k.py"
    p.write_bytes(b"\xef\xbb\xbf" + (H + "    ave.barrier()\n").encode("utf-8"))
    res = compile_file(str(p))
    assert res.diagnostics == [] and len(res.kernels) == 1


@pytest.mark.parametrize("expr", ["1 << -1", "1 >> -1", "2.0 ** 2000", "(1, 2)[::0]"])
def test_bug_compile_time_errors_are_not_internal(expr: str) -> None:
    d = one(compile_source(H + f"    x = {expr}\n", "k.py"))
    assert d.code != "AVE900"
    assert rng(d)[0] == 4


_REPEAT_SCRIPT = r"""
import resource, sys
import ave_core.compiler.frontend as fe
kb = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1])
lim = kb * 1024 + 512 * 2 ** 20          # 512 MiB more than now: a 1e9 tuple cannot fit
resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
src = sys.stdin.read()
print(' '.join(d.code for d in fe.compile_source(src, 'k.py').diagnostics))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and RLIMIT_AS")
def test_bug_unbounded_sequence_repetition() -> None:
    text = H + "    x = (0,) * 10 ** 9\n"
    out = subprocess.run([sys.executable, "-c", _REPEAT_SCRIPT], input=text, text=True,
                         capture_output=True, timeout=60,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert out.stdout.split() == ["AVE121"], out.stdout + out.stderr


def test_bug_note_names_every_failing_config() -> None:
    text = src("""\
        import ave_core.lang as ave

        @ave.kernel(threads=128, configs=[dict(BK=32), dict(BK=64)])
        def k(A: ave.Tensor[ave.bf16, 2], BK: ave.constexpr = 32):
            ave.barrier(1)
        """)
    d = one(compile_source(text, "k.py"))
    assert (d.code, rng(d)) == ("AVE104", (4, 4, 18))
    assert any("configs[1]" in n for n in d.notes), d.notes


def test_bug_nul_byte_position() -> None:
    d = one(compile_source(H + "    ave.barrier()\x00\n", "k.py"))
    # the NUL is after `    ave.barrier()`: line 4, column 17
    assert (d.code, rng(d)) == ("AVE100", (4, 17, 18))


def test_bug_overlay_only_helper_file(tmp_path) -> None:
    hpath = str(tmp_path / "helpers.py")
    overlay = {hpath: "import ave_core.lang as ave\n\ndef issue(a, b):\n    ave.copy(a, b)\n"}
    res = compile_source(_kernel_using("issue(A[0:64, 0:32], s)"), str(tmp_path / "kernel.py"),
                         workspace=str(tmp_path), overlay=overlay)
    assert res.diagnostics == [], [d.format_text() for d in res.diagnostics]
    assert [op.name for op in res.kernels[0].walk()] == \
        ["ave.alloc", "ave.global_tile", "ave.copy"]


@pytest.mark.parametrize("value, dtype", [("127", "i8"), ("-128", "i8"), ("255", "u8"),
                                          ("2.0", "i8"), ("True", "i8"), ("False", "i1"),
                                          ("1", "i1"), ("256", "i1"), ("-2**31", "i32"),
                                          ("1e30", "bf16"), ("-448.0", "fp8e4m3")])
def test_fill_values_a_dtype_holds_are_accepted(value: str, dtype: str) -> None:
    """The other side of AVE118's fill check: the dtype's extreme integers, an integral
    float, a bool, any number for an i1 (a predicate) and any float for a float dtype are
    fills, not errors."""
    text = H + body(f"""\
        tv = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
        x = ave.full((16, 32), {value}, ave.{dtype}, tv)
        y = ave.load(A[0:16, 0:32], tv, mask=lambda m, c: m < n, other=0)
    """)
    r = compile_source(text, "fill.py")
    assert r.diagnostics == [], [d.format_text() for d in r.diagnostics]


# ============================================================ suppression comments (AVE122)

def test_a_suppression_comment_that_suppresses_nothing_is_reported():
    # each range derived by hand (0-based lines, UTF-16 columns): the comment's `#` or the
    # bad code to the end of the directive; the 𝒳 in line 10's string is two UTF-16 units,
    # so the comment after it starts at column 14 (13 code points)
    text = H + "".join("    " + line + "\n" for line in [
        's = ave.alloc((128,), ave.f32, space="shared")  # ave: ignore(AVE203)',
        "x = 1  # ave: ignore[AVE2O3, AVE203]",
        "y = 2  # ave: ignore[]",
        'z = "# ave: ignore(x)"  # ave: ignore  # why',
        "w = 3  # note  # AVE: Ignore AVE203",
        "v = 4  # ave: IGNORE[ave203 AVE207]",
        'u = "\U0001d4b3"  # ave: ignre'])
    res = compile_source(text, "supp.py")
    got = [(d.code, d.severity.name, d.range.start.line, d.range.start.character,
            d.range.end.character, d.message) for d in res.diagnostics]
    assert got == [
        ("AVE122", "WARNING", 4, 52, 73, "`# ave: ignore(AVE203)` is not understood and "
         "suppresses nothing: write `# ave: ignore` (every code on the line) or `# ave: "
         "ignore[CODE, ...]`"),
        ("AVE122", "WARNING", 5, 25, 31, "`AVE2O3` in `# ave: ignore[AVE2O3, AVE203]` is no "
         "Ave code and suppresses nothing (codes: AVE100 to AVE902; see docs/codes)"),
        ("AVE122", "WARNING", 6, 11, 26, "`# ave: ignore[]` names no code and suppresses "
         "nothing: write `# ave: ignore[CODE, ...]` or `# ave: ignore`"),
        ("AVE122", "WARNING", 8, 19, 39, "`# AVE: Ignore AVE203` is not understood and "
         "suppresses nothing: write `# ave: ignore` (every code on the line) or `# ave: "
         "ignore[CODE, ...]`"),
        ("AVE122", "WARNING", 10, 14, 26, "`# ave: ignre` is not understood and suppresses "
         "nothing: write `# ave: ignore` (every code on the line) or `# ave: ignore[CODE, "
         "...]`"),
    ], "\n".join(d.format_text() for d in res.diagnostics)


def test_no_suppression_check_in_files_without_ave():
    res = compile_source("x = 1  # ave: ignore(AVE203)\n", "plain.py")
    assert not res.uses_ave and res.diagnostics == []


def test_a_parser_failure_without_a_message_still_says_why():
    # 100,000 unary minus signs: CPython's parser raises MemoryError('') -- the message
    # ended at "cannot parse the file: " (a review helper)
    res = compile_source("import ave_core.lang as ave\nx = " + "-" * 100_000 + "1\n", "deep.py")
    (d,) = res.diagnostics
    assert d.code == "AVE100" and d.message.startswith("cannot parse the file: ")
    assert d.message.rstrip() != "cannot parse the file:"


def test_a_syntax_error_column_comes_from_the_checked_text(tmp_path):
    # CPython reads a SyntaxError's line from the file named in ast.parse when it exists:
    # an unsaved buffer whose disk copy has non-ASCII text on that line got the disk
    # line's column (9 for the "(" at 14), and a file saved with a BOM was 2 columns off
    # on line 1 (a review helper)
    p = tmp_path / "k.py"
    p.write_text('import ave_core.lang as ave\ns = "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"; y = 2\n',
                 encoding="utf-8")
    buf = 'import ave_core.lang as ave\ns = "ab"; y = (1 +\n'
    (d,) = compile_source(buf, str(p)).diagnostics
    assert d.code == "AVE100" and (d.range.start.line, d.range.start.character) == (1, 14)
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfimport ave_core.lang as ave; x = (1 +\n")
    (d,) = compile_file(str(bom)).diagnostics
    assert (d.range.start.line, d.range.start.character) == (0, 33)
