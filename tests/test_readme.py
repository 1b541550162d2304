"""The README's tour kernel is real: it compiles without diagnostics."""

import pathlib
import re

from ave_core.compiler.frontend import compile_source

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_kernel_compiles():
    code = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[0]
    res = compile_source(code, "README.md")
    assert res.uses_ave
    assert res.diagnostics == []
    (k,) = res.kernels
    assert k.name == "gemm" and k.threads == 128
    assert len(k.ops("ave.mma")) == 1 and len(k.ops("ave.assert_conform")) == 1


def test_readme_kernel_checks_clean():
    # "ave-lsp --check proves every assertion of this kernel": and reports nothing else (a
    # fresh-user run copied it verbatim and got an AVE208 -- B's rows were not tied to K)
    from ave_core.analysis import analyze
    code = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[0]
    (k,) = compile_source(code, "README.md").kernels
    a = analyze(k)
    assert a.diagnostics == [], [d.format_text() for d in a.diagnostics]
    assert [r.status for r in a.assertions] == ["proved"] * 3


def test_readme_has_exactly_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", setup, re.S)
    assert len(blocks) == 2
    assert "ave-lsp --check examples/" in blocks[0]
    assert "pytest" in blocks[1]


def test_readme_witness_output_is_current():
    import subprocess
    import sys
    text = README.read_text(encoding="utf-8")
    part = text.split("This is real output (`ave-lsp --check examples/broken/gemm_swizzle_mismatch.py`", 1)[1]
    shown = re.findall(r"```\n(.*?)```", part, re.S)[0].strip().splitlines()
    out = subprocess.run([sys.executable, "-m", "ave_lsp", "--check",
                          "examples/broken/gemm_swizzle_mismatch.py"], capture_output=True,
                         text=True, cwd=README.parent, timeout=300)
    assert out.returncode == 1
    real = out.stdout.splitlines()
    assert real[:len(shown)] == shown


def test_readme_example_check_summaries_are_current():
    """The set-up section's figures for the two example checks are what they print."""
    import glob
    import subprocess
    import sys
    text = README.read_text(encoding="utf-8")
    line = " ".join(re.search(r"Its\s+last line reads `(checked .*?)`", text, re.S)
                    .group(1).split())
    out = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "examples/",
                          "--jobs", "0"], capture_output=True, text=True,
                         cwd=README.parent, timeout=900)
    assert out.returncode == 1
    assert out.stdout.strip().splitlines()[-1] == line
    files, kernels, specs, proved = re.search(
        r"exits 0 \(`(\d+) files, (\d+) kernels\s+\((\d+) specializations\)`, "
        r"(\d+) proved\)", text).groups()
    paths = sorted(glob.glob("examples/*.py", root_dir=README.parent)) + ["examples/mi300x/"]
    out = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", *paths],
                         capture_output=True, text=True, cwd=README.parent, timeout=900)
    assert out.returncode == 0
    last = out.stdout.strip().splitlines()[-1]
    assert f"checked {files} files, {kernels} kernels ({specs} specializations)" in last
    assert f"{proved} proved, 0 violated" in last


def test_readme_front_end_error_sample_is_current(tmp_path):
    """The front-end error sample: a `bad.py` as the README describes it (an ave.view of a
    64x64 bf16 tile as 64x64 fp8, on line 12) prints the README's two lines (a rejected
    kernel counts no specializations; a fresh-user run found "(1 specialization)")."""
    import subprocess
    import sys
    text = README.read_text(encoding="utf-8")
    part = text.split("Front-end errors look like this", 1)[1]
    shown = re.findall(r"```\n\$ ave-lsp --check bad.py\n(.*?)```", part, re.S)[0]
    bad = ("import ave_core.lang as ave\n\n\n@ave.kernel(threads=128)\n"
           "def k(X: ave.Tensor[ave.bf16, 2]):\n"
           "    # a 64x64 bf16 tile in shared memory (8192 bytes) ...\n"
           "    s = ave.alloc((64, 64), ave.bf16, space=\"shared\")\n"
           "    ave.copy(X[0:64, 0:64], s, vector_bytes=16)\n    ave.barrier()\n"
           "    # ... read as 64x64 fp8 (4096 bytes): the view does not cover the same bytes\n"
           "    # (the next line is line 12)\n"
           "    ave.view(s, (64, 64), dtype=ave.fp8e4m3)\n")
    (tmp_path / "bad.py").write_text(bad)
    out = subprocess.run([sys.executable, "-m", "ave_lsp", "--check", "bad.py"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**__import__("os").environ,
                              "PYTHONPATH": str(README.parent)})
    assert out.returncode == 1
    assert out.stdout == shown


def _tour_findings(edit):
    from ave_core.analysis import analyze
    code = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[0]
    old, new = edit
    assert old in code
    (k,) = compile_source(code.replace(old, new, 1), "tour.py").kernels
    return [d for d in analyze(k).diagnostics]


def test_tour_without_its_loop_barrier_offers_only_fixes_that_work():
    # A fresh-user run removed the loop's barrier: the reads after the wait race with the
    # copies (fixes before the reads: inserting the first one gives back the tour), and
    # the refills with the reads (reported at the wait that retires them, the refill's
    # statement inside `if kt + STAGES - 1 < K // BK:`). Those offered a barrier inside
    # the `if` -- which the checker then still reported (a barrier in an arm with async
    # copies does not end the epoch), and again one line further down. No fix inside a
    # branch now.
    ds = _tour_findings(("        ave.barrier()\n", ""))
    assert [d.code for d in ds] == ["AVE207"] * 4
    fixed = [d for d in ds if d.fix is not None]
    assert len(fixed) == 2 and all("reads shared byte" in d.message for d in fixed)
    for d in ds:
        if d.fix is None:
            assert "after a read by" in d.message
            assert not any("quick fix" in n for n in d.notes)


def test_tour_waiting_for_one_group_too_few_gets_the_wait_fix():
    ds = _tour_findings(("ave.wait_async(STAGES - 2)", "ave.wait_async(STAGES - 1)"))
    fixes = {(d.fix["kind"], d.fix["count"]) for d in ds if d.fix is not None}
    assert fixes == {("insert_wait", 1)}


def test_readme_command_line_synopsis_lists_every_option():
    """The README's "Command line" synopsis names every option of `ave-lsp --help`."""
    from ave_lsp.cli import build_parser
    text = README.read_text(encoding="utf-8")
    synopsis = re.search(r"## Command line\n\n```\n(.*?)```", text, re.S).group(1)
    options = {o for a in build_parser()._actions for o in a.option_strings
               if o.startswith("--") and o != "--help"}
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"\b", synopsis))
    assert not missing, f"README's synopsis lacks {missing}"
