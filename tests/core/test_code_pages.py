"""Every docs/codes/AVEnnn.md page's example really triggers its code.

Each page's "## Example" section holds one fenced code block. When it is a complete kernel
file (it starts with ``import ave_core.lang``), it is written to a temporary file and checked
with :func:`ave_core.check.check_file` (front end and analysis):

* front-end codes (AVE1xx): the page's code is the FIRST code reported;
* analysis codes (AVE2xx): the front end accepts the file and the code is among those reported;
* interpreter codes (AVE3xx): the front end accepts the file, and running the kernel in the
  interpreter (:func:`ave_core.interp.run`) on the small inputs of :data:`LAUNCHES` reports the
  code among its dynamic-check diagnostics;
* code-generation codes (AVE4xx): the front end accepts the file and lowering it for its
  target raises the error, whose diagnostic carries the code and a range in the file.

Pages whose example cannot be a complete kernel are listed in :data:`EXEMPT` with the reason;
a page whose example is a fragment but is not listed there fails, and so does a listed page
whose example has become a complete file (the list stays exact).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from ave_core.check import check_file
from ave_core.compiler.frontend import compile_source
from ave_core.compiler.ir import KernelIR
from ave_core.interp import run

ROOT = Path(__file__).resolve().parents[2]
CODE_DOCS = ROOT / "docs" / "codes"
PAGES = sorted(p.stem for p in CODE_DOCS.glob("AVE*.md"))

#: Pages with no runnable example, and why.
EXEMPT = {
    "AVE900": "internal error: by definition no valid kernel triggers it (the page says so)",
    "AVE902": "depends on the maxFileLines setting, not on the file (tests/lsp/test_server.py)",
}

#: Helper files an example imports, written next to it: page -> {file name: text}.
HELPERS = {
    "AVE113": {
        "tile_helpers.py": (
            "import ave_core.lang as ave\n"
            "\n"
            "\n"
            "def swizzled_smem():\n"
            "    return ave.alloc((64, 32), ave.bf16,\n"
            "                     layout=ave.swizzled(ave.swizzle(2, 3, 3), "
            "ave.row_major((64, 32))))\n"
        ),
    },
}

#: Examples about the file's encoding, not a kernel: saved in that encoding and read from
#: disk by the checker (``text=None``).
SAVED_AS = {
    "AVE901": "latin-1",
}


def _f32(rows: int, cols: int) -> np.ndarray:
    return np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)


#: Interpreter pages: page -> (grid, a function making the kernel's runtime arguments).
#: All examples are an f32 tiled transpose X (M x N) -> Y (N x M), tiles of 32 x 32.
LAUNCHES: dict[str, tuple[tuple[int, ...], Callable[[], list]]] = {
    # M = 40 is not a multiple of 32: block (1, *) reads rows 40..63 of X.
    "AVE301": ((2, 2), lambda: [_f32(40, 64), np.zeros((64, 40), np.float32)]),
    # three tiles along N: iteration j = 2 uses stage 2 of 2.
    "AVE302": ((1,), lambda: [_f32(32, 96), np.zeros((96, 32), np.float32)]),
    # j = 0 reads stage 1, never written.
    "AVE303": ((1,), lambda: [_f32(32, 96), np.zeros((96, 32), np.float32)]),
    "AVE304": ((1, 1), lambda: [_f32(32, 32), np.zeros((32, 32), np.float32)]),
    "AVE305": ((1, 1), lambda: [_f32(32, 32), np.zeros((32, 32), np.float32)]),
    # a 32 x 16 X breaks `X.shape[1] >= 32` (the copy would read past it too: AVE301)
    "AVE306": ((1,), lambda: [_f32(32, 16), np.zeros((32, 32), np.float32)]),
}

_FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)


def example_block(code: str) -> tuple[str, str] | None:
    """(language, text) of the first fenced block of the page's Example section, or None."""
    text = (CODE_DOCS / f"{code}.md").read_text("utf-8")
    start = text.index("## Example\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    m = _FENCE.search(section)
    return (m.group(1), m.group(2)) if m else None


def is_kernel_file(block: tuple[str, str] | None) -> bool:
    return block is not None and block[0] == "python" and \
        block[1].lstrip().startswith("import ave_core.lang")


def _write_example(code: str, text: str, tmp_path: Path) -> Path:
    for name, helper in HELPERS.get(code, {}).items():
        (tmp_path / name).write_text(helper, "utf-8")
    path = tmp_path / f"example_{code.lower()}.py"
    path.write_text(text, "utf-8")
    return path


def _fmt(diags) -> list[str]:
    return [d.format_text() for d in diags]


def test_pages_found():
    assert len(PAGES) >= 30 and "AVE100" in PAGES and "AVE901" in PAGES


def test_exemptions_are_exact():
    for code in EXEMPT:
        assert code in PAGES, f"EXEMPT lists {code}, which has no page"
        assert not is_kernel_file(example_block(code)), \
            f"{code}'s example is a complete kernel file now: drop it from EXEMPT"
    for table in (HELPERS, SAVED_AS, LAUNCHES):
        for code in table:
            assert code in PAGES and code not in EXEMPT, code


@pytest.mark.parametrize("code", [c for c in PAGES if c not in EXEMPT and c not in SAVED_AS])
def test_example_triggers_its_code(code, tmp_path):
    block = example_block(code)
    assert is_kernel_file(block), (
        f"docs/codes/{code}.md: the Example is not a complete kernel file (a ```python block "
        "starting with `import ave_core.lang`); make it one, or list the page in EXEMPT "
        "with the reason")
    text = block[1]
    path = _write_example(code, text, tmp_path)
    report = check_file(str(path), text, analyze=True)
    codes = [d.code for d in report.diagnostics]
    layer = code[3]
    if layer == "1":
        assert codes and codes[0] == code, \
            f"{code}'s example reports {codes} first:\n" + "\n".join(_fmt(report.diagnostics))
        return
    front = [c for c in codes if c.startswith("AVE1") or c == "AVE900"]
    assert not front, f"{code}'s example does not compile:\n" + "\n".join(_fmt(report.diagnostics))
    if layer == "2":
        assert code in codes, \
            f"{code}'s example reports {codes}:\n" + "\n".join(_fmt(report.diagnostics))
        return
    if layer == "4":          # code generation: lowering (text only, no MLIR needed) refuses it
        from ave_core.compiler.lower import LoweringError, lower_kernel
        res = compile_source(text, str(path))
        kernels = [k for k in res.kernels if isinstance(k, KernelIR)]
        assert kernels, f"{code}: the example has no kernel"
        with pytest.raises(LoweringError) as info:
            lower_kernel(kernels[0], "sm_90" if kernels[0].target == "nvidia" else "gfx942")
        d = info.value.to_diagnostic()
        assert d.code == code and d.file == str(path) and d.range.start.line > 0
        return
    assert layer == "3", f"no rule for the layer of {code}"
    assert code in LAUNCHES, f"{code}: give the interpreter's inputs in LAUNCHES"
    grid, make_args = LAUNCHES[code]
    res = compile_source(text, str(path))
    kernels = [k for k in res.kernels if isinstance(k, KernelIR)]
    assert len(kernels) == 1, f"{code}: expected one kernel specialization, got {len(kernels)}"
    out = run(kernels[0], grid, make_args())
    found = [d.code for d in out.diagnostics]
    assert code in found, \
        f"{code}'s example, run, reports {found}:\n" + "\n".join(_fmt(out.diagnostics))


@pytest.mark.parametrize("code", sorted(SAVED_AS))
def test_encoding_example_is_unreadable(code, tmp_path):
    block = example_block(code)
    assert block is not None, f"docs/codes/{code}.md has no example block"
    path = tmp_path / "legacy.py"
    path.write_bytes(block[1].encode(SAVED_AS[code]))
    report = check_file(str(path), analyze=True)
    codes = [d.code for d in report.diagnostics]
    assert codes and codes[0] == code, _fmt(report.diagnostics)


def test_import_example_alone_still_reports_its_code(tmp_path):
    # A reader who copies the AVE113 example without the helper file has no such module at
    # all: a missing workspace module is AVE113 as well.
    _, text = example_block("AVE113")
    path = tmp_path / "example_ave113.py"
    path.write_text(text, "utf-8")
    report = check_file(str(path), text, analyze=True)
    codes = [d.code for d in report.diagnostics]
    assert codes and codes[0] == "AVE113", _fmt(report.diagnostics)
