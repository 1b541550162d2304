"""The user-facing surface of ``ave_core.lang``: names, signatures, docstrings, stubs,
``Tensor[...]``, the ``kernel`` decorator and the import weight."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap

import pytest

import ave_core.lang as ave
from ave_core.diagnostics import CODES
from ave_core.lang import core, names

# The contract: the front end binds calls with these signatures (names, order, defaults).
CONTRACT = """
thread_id()
warp_id()
lane_id()
warp_group_id()
program_id(axis=0)
num_programs(axis=0)
alloc(shape, dtype, space="shared", layout=None, reg_class=None)
view(tile, shape, dtype=None, layout=None)
transpose(tile, perm=None)
gather(tensor, index, dim=0)
scatter(tensor, index, dim=0)
copy(src, dst, vector_bytes=16, threads=None, mask=None, other=0)
copy_async(src, dst, vector_bytes=16, threads=None, mask=None, other=0)
commit_async()
wait_async(n=0)
load(src, layout, vector_bytes=None, mask=None, other=0)
ldmatrix(src, layout)
store(dst, value, vector_bytes=None, mask=None)
barrier()
reset(tile)
zeros(shape, dtype, layout)
full(shape, value, dtype, layout)
coord(shape, axis, layout)
exp(x)
exp2(x)
log(x)
log2(x)
sqrt(x)
rsqrt(x)
abs(x)
maximum(a, b)
minimum(a, b)
where(cond, a, b)
cast(x, dtype)
reduce(x, op, axis, scope=None)
sum(x, axis, scope=None)
max(x, axis, scope=None)
min(x, axis, scope=None)
convert(x, layout)
materialize(x)
mma(a, b, c, tiled)
range(start, stop=None, step=1, unroll=None)
static_range(start, stop=None, step=1)
sched_barrier(mask=0)
assume(cond, message=None)
tag(x, fn)
label(**fields)
assert_conform(x, y, fields=None, contract=None)
assert_disjoint(x, y)
"""

OTHER_SIGNATURES = """
kernel(fn=None, *, threads, configs=None, warp_size=None, target=None, name=None)
cdiv(a, b)
swizzle(B, M, S)
"""


def _parse(text: str) -> dict[str, str]:
    out = {}
    for line in text.strip().splitlines():
        name, _, rest = line.partition("(")
        out[name] = "(" + rest.replace('"', "'")
    return out


CONTRACT_SIGS = _parse(CONTRACT)
OTHER_SIGS = _parse(OTHER_SIGNATURES)

# A valid call of each stub (by position), to check that the stub raises.
def _dummy_args(name: str) -> list:
    sig = inspect.signature(getattr(ave, name))
    return [0 for p in sig.parameters.values()
            if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def test_dsl_functions_are_the_contract():
    assert names.DSL_FUNCTIONS == frozenset(CONTRACT_SIGS)


@pytest.mark.parametrize("name", sorted(CONTRACT_SIGS))
def test_signature(name):
    assert str(inspect.signature(getattr(ave, name))) == CONTRACT_SIGS[name]
    assert names.signature_of(name) == inspect.signature(getattr(ave, name))


@pytest.mark.parametrize("name", sorted(OTHER_SIGS))
def test_other_signatures(name):
    assert str(inspect.signature(getattr(ave, name))) == OTHER_SIGS[name]


@pytest.mark.parametrize("name", sorted(names.DSL_FUNCTIONS))
def test_exists_documented_and_raises_outside_kernels(name):
    fn = getattr(ave, name)
    assert getattr(core, name) is fn
    doc = inspect.getdoc(fn)
    assert doc and len(doc.strip().splitlines()) >= 2, f"ave.{name} needs a longer docstring"
    with pytest.raises(RuntimeError) as info:
        fn(*_dummy_args(name))
    assert str(info.value) == (
        f"ave.{name}() can only be used inside an @ave.kernel function; "
        "kernel bodies are compiled, not executed"
    )


def test_label_raises_with_keywords():
    with pytest.raises(RuntimeError, match=r"ave\.label\(\)"):
        ave.label(row=1, k=2)


def test_range_does_not_shadow_iteration_outside_kernels():
    with pytest.raises(RuntimeError):
        for _ in ave.range(3):
            pass


def test_all_public_names_documented():
    for name in ave.__all__:
        obj = getattr(ave, name)
        if isinstance(obj, ave.DType):
            continue
        assert inspect.getdoc(obj), f"ave.{name} has no docstring"


def test_all_is_complete_and_exports_exist():
    assert len(set(ave.__all__)) == len(ave.__all__)
    for name in ave.__all__:
        assert hasattr(ave, name), name
    expected = (
        names.DSL_FUNCTIONS | names.LAYOUT_FUNCTIONS | names.ATOM_FUNCTIONS | names.DTYPE_NAMES
        | names.TYPE_NAMES | names.DECORATORS | {"cdiv", "swizzle", "dtype", "DType"}
        | {"Layout", "ComposedLayout", "Swizzle", "XorSwizzle2D", "TVLayout",
           "MMAAtom", "LdMatrixAtom", "TiledMMA"}
    )
    assert expected <= set(ave.__all__)


def test_compile_time_functions_exist():
    for name in names.COMPILE_TIME_FUNCTIONS:
        assert hasattr(ave, name), name
    assert {"cdiv", "swizzle", "label", "dtype", "bf16", "layout", "tiled_mma"} <= (
        names.COMPILE_TIME_FUNCTIONS)


def test_signature_of_errors():
    assert str(names.signature_of("cdiv")) == "(a, b)"
    assert "threads" in names.signature_of("kernel").parameters
    with pytest.raises(ValueError):
        names.signature_of("no_such_thing")
    with pytest.raises(TypeError):
        names.signature_of("bf16")


def test_docstrings_cite_registered_codes():
    import re

    for name in names.DSL_FUNCTIONS:
        for code in re.findall(r"AVE\d{3}", inspect.getdoc(getattr(ave, name))):
            assert code in CODES, f"ave.{name} cites unknown code {code}"


# ---------------------------------------------------------------------------- compile-time helpers

def test_cdiv():
    assert ave.cdiv(10, 3) == 4
    assert ave.cdiv(9, 3) == 3
    assert ave.cdiv(0, 8) == 0
    assert ave.cdiv(1, 128) == 1
    with pytest.raises(TypeError):
        ave.cdiv(1.5, 2)
    with pytest.raises(TypeError):
        ave.cdiv(True, 2)
    with pytest.raises(ZeroDivisionError):
        ave.cdiv(1, 0)


def test_swizzle_returns_layout_swizzle():
    s = ave.swizzle(3, 3, 3)
    assert isinstance(s, ave.Swizzle)
    assert s == ave.Swizzle(3, 3, 3)
    with pytest.raises(ValueError):
        ave.swizzle(3, 3, 1)  # |S| < B


def test_dtypes_exported():
    assert ave.bf16.bytes == 2 and ave.f32.bits == 32 and ave.fp8e4m3.name == "fp8e4m3"
    assert ave.dtype("i32") is ave.i32


# ---------------------------------------------------------------------------- Tensor, constexpr

def test_tensor_spec():
    spec = ave.Tensor[ave.bf16, 2]
    assert isinstance(spec, ave.TensorSpec)
    assert spec.dtype is ave.bf16 and spec.rank == 2
    assert spec == ave.Tensor[ave.bf16, 2]
    assert hash(spec) == hash(ave.Tensor[ave.bf16, 2])
    assert repr(spec) == "ave.Tensor[ave.bf16, 2]"
    with pytest.raises(Exception):
        spec.rank = 3  # frozen


@pytest.mark.parametrize("params", [
    ("bf16", 2), (ave.bf16, 0), (ave.bf16, -1), (ave.bf16, 2.0), (ave.bf16, True),
    (ave.bf16,), (ave.bf16, 2, 3), int,
])
def test_tensor_spec_errors(params):
    with pytest.raises(TypeError):
        ave.Tensor[params]


def test_tensor_single_dtype_is_an_error():
    with pytest.raises(TypeError, match="dtype and a rank"):
        ave.Tensor[ave.bf16]


def test_tensor_not_instantiable():
    with pytest.raises(TypeError):
        ave.Tensor()


def test_constexpr_documented():
    assert "compile-time" in inspect.getdoc(ave.constexpr)


# ---------------------------------------------------------------------------- kernel decorator

def _gemm(A: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2], alpha: ave.f32,
          BM: ave.constexpr = 128, BK: ave.constexpr = 32):
    """A GEMM."""
    ave.barrier()


def test_kernel_object():
    k = ave.kernel(threads=128, configs=[dict(BM=64), dict(BM=128, BK=64)])(_gemm)
    assert isinstance(k, ave.Kernel)
    assert k.fn is _gemm and k.__wrapped__ is _gemm
    assert k.name == "_gemm" and k.__name__ == "_gemm"
    assert k.threads == 128 and k.warp_size == 32 and k.target is None
    assert k.configs == [{"BM": 64}, {"BM": 128, "BK": 64}]
    assert k.__doc__ == "A GEMM."
    assert k.source_file == inspect.getsourcefile(test_kernel_object)


def test_kernel_direct_form_and_options():
    k = ave.kernel(_gemm, threads=256, target="amd", name="gemm_amd")
    assert k.name == "gemm_amd" and k.warp_size == 64 and k.target == "amd"
    assert k.configs is None
    assert ave.kernel(_gemm, threads=64, target="amd", warp_size=32).warp_size == 32
    assert ave.kernel(_gemm, threads=32, target="nvidia").warp_size == 32


def test_kernel_as_decorator_in_source():
    ns: dict = {}
    exec(textwrap.dedent("""
        import ave_core.lang as ave

        @ave.kernel(threads=128)
        def k(X: ave.Tensor[ave.f32, 1], N: ave.constexpr = 4):
            ave.barrier()
    """), ns)
    assert ns["k"].threads == 128 and ns["k"].name == "k"


@pytest.mark.parametrize("kwargs, exc", [
    (dict(threads=128.0), TypeError),
    (dict(threads="128"), TypeError),
    (dict(threads=True), TypeError),
    (dict(threads=0), ValueError),
    (dict(threads=-32), ValueError),
    (dict(threads=100), ValueError),            # not a multiple of 32
    (dict(threads=96, target="amd"), ValueError),  # not a multiple of 64
    (dict(threads=2048), ValueError),           # above 1024
    (dict(threads=128, warp_size=64), ValueError),  # NVIDIA warps are 32 lanes
    (dict(threads=128, warp_size=16, target="amd"), ValueError),
    (dict(threads=128, warp_size="32"), TypeError),
    (dict(threads=128, target="cuda"), ValueError),
    (dict(threads=128, target=1), TypeError),
    (dict(threads=128, configs=dict(BM=64)), TypeError),
    (dict(threads=128, configs=[]), ValueError),
    (dict(threads=128, configs=[(("BM", 64),)]), TypeError),
    (dict(threads=128, configs=[dict(BN=64)]), ValueError),  # not a parameter
    (dict(threads=128, name=""), TypeError),
])
def test_kernel_validation(kwargs, exc):
    with pytest.raises(exc):
        ave.kernel(**kwargs)(_gemm)


def test_kernel_requires_threads_and_a_function():
    with pytest.raises(TypeError):
        ave.kernel(_gemm)
    with pytest.raises(TypeError):
        ave.kernel(threads=128)(42)


def test_kernel_not_callable_directly():
    k = ave.kernel(threads=128)(_gemm)
    with pytest.raises(TypeError, match=r"_gemm\[grid\]"):
        k(1, 2, 3)


@pytest.mark.parametrize("grid, expected", [
    (4, (4,)), ((4,), (4,)), ((2, 3), (2, 3)), ((2, 3, 4), (2, 3, 4)),
])
def test_launcher(grid, expected):
    k = ave.kernel(threads=128)(_gemm)
    launcher = k[grid]
    assert launcher.grid == expected and launcher.kernel is k

    class _CudaTensor:  # anything whose .device is not the CPU
        class device:
            type = "cuda"

    # GPU tensors go to the JIT (ave_core.jit.launch), never to the interpreter
    import ave_core.jit as jit
    seen = []
    orig = jit.launch
    jit.launch = lambda kern, grid, args, kw: seen.append((kern, grid, args, kw))
    try:
        t = _CudaTensor()
        launcher(t, None, 1.0, BM=64)
    finally:
        jit.launch = orig
    assert seen == [(k, expected, (t, None, 1.0), {"BM": 64})]


@pytest.mark.parametrize("grid, exc", [
    ((), ValueError), ((1, 2, 3, 4), ValueError), (0, ValueError), ((2, -1), ValueError),
    (1.0, TypeError), ("4", TypeError), ((2, None), TypeError), (True, TypeError),
    ([2, 3], TypeError),
])
def test_launcher_grid_validation(grid, exc):
    k = ave.kernel(threads=128)(_gemm)
    with pytest.raises(exc):
        k[grid]


# ---------------------------------------------------------------------------- import weight

HEAVY = ["z3", "torch", "mlir", "llvmlite", "triton", "cuda", "hip", "jax", "pygls",
         "lsprotocol", "ave_lsp", "ave_agent"]


def test_import_is_light():
    code = (
        "import sys, json\n"
        "import ave_core.lang\n"
        "import ave_core.lang.names\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    assert "ave_core" in loaded
    assert not loaded & set(HEAVY), f"ave_core.lang imports {sorted(loaded & set(HEAVY))}"
