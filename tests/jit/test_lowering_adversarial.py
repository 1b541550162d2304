"""Adversarial tests of the code generator: symbolic index arithmetic against brute force,
odd-but-valid kernels whose generated code is evaluated (``simt_eval``) and compared with the
interpreter, and the launcher's scalar argument packing. Each test failed before its fix."""

import ctypes
import importlib.util
import itertools
import os
import re
import struct
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ave_core import interp
from ave_core.compiler.frontend import compile_source
from ave_core.compiler.lower import lower_kernel
from ave_core.compiler.lower.emit import Emitter, Sym, V

_spec = importlib.util.spec_from_file_location(
    "simt_eval", os.path.join(os.path.dirname(os.path.abspath(__file__)), "simt_eval.py"))
simt_eval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(simt_eval)

L32 = "ave.tv_layout(ave.layout(32, 1), ave.layout(1, 0), (32,))"


# ---------------------------------------------------------------- Sym vs Python integers
def _eval_lines(lines, env):
    """Evaluate emitted i32 arith lines (two's complement, 32 bits)."""
    env = dict(env)
    m32 = 2 ** 32
    for ln in lines:
        ln = ln.strip()
        m = re.match(r"(%\w+) = arith\.constant (-?\d+) : i32", ln)
        if m:
            env[m[1]] = int(m[2])
            continue
        m = re.match(r"(%\w+) = arith\.(\w+) (%\w+), (%\w+) : i32", ln)
        assert m, ln
        a, b = env[m[3]], env[m[4]]
        r = {"addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
             "shli": lambda: a << b, "shrui": lambda: (a % m32) >> b, "shrsi": lambda: a >> b,
             "andi": lambda: a & b, "ori": lambda: a | b, "xori": lambda: a ^ b,
             "divui": lambda: (a % m32) // (b % m32), "remui": lambda: (a % m32) % (b % m32),
             "floordivsi": lambda: a // b}[m[2]]()
        r %= m32
        env[m[1]] = r - m32 if r >= 2 ** 31 else r
    return env


def _check(build, pyfn, ranges):
    """``build(em, atoms)`` on Syms equals ``pyfn(*values)`` for every value in ``ranges``,
    and the value lies in the range the Sym claims."""
    em = Emitter()
    atoms = [em.atom(V(f"%a{i}", "i32"), lo, hi) for i, (lo, hi) in enumerate(ranges)]
    s = build(*atoms)
    name = s.value().name if isinstance(s, Sym) else None
    lo, hi = s.range() if isinstance(s, Sym) else (s, s)
    for vals in itertools.product(*[range(a, b + 1) for a, b in ranges]):
        want = pyfn(*vals)
        got = s if name is None else _eval_lines(em.lines, {f"%a{i}": x for i, x in
                                                            enumerate(vals)})[name]
        assert got == want, (vals, got, want)
        assert (lo is None or lo <= want) and (hi is None or want <= hi), (vals, want, lo, hi)


def test_int_divided_by_a_runtime_value():
    # `8 // b`, `7 % b`, `1 << b`, `-64 >> b`: an int on the left of a Sym
    _check(lambda b: 8 // b, lambda b: 8 // b, [(1, 9)])
    _check(lambda b: -7 // (b - 10), lambda b: -7 // (b - 10), [(0, 9)])
    _check(lambda b: 7 % (b + 1), lambda b: 7 % (b + 1), [(0, 9)])
    _check(lambda b: -7 % (b - 10), lambda b: -7 % (b - 10), [(0, 9)])
    _check(lambda b: 1 << b, lambda b: 1 << b, [(0, 9)])
    _check(lambda b: -64 >> b, lambda b: -64 >> b, [(0, 9)])


_CONSTS = st.sampled_from([1, 2, 3, 4, 5, 8, 12, 16, 32, 64, 128])
_OPS = st.lists(st.tuples(st.sampled_from(["+", "-", "*", "//", "%", "//-", "%-", "&", ">>",
                                           "^", "|", "+x", "+y*"]), _CONSTS),
                min_size=1, max_size=5)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ops=_OPS, lo=st.sampled_from([0, 0, 1, -5, -64]),
       span=st.sampled_from([1, 7, 31, 63, 127]), ylo=st.sampled_from([0, 3, -8]))
def test_sym_folding_matches_python_integers(ops, lo, span, ylo):
    def apply(x, y, int_side):
        acc = x
        for op, c in ops:
            if op == "+": acc = acc + c
            elif op == "-": acc = acc - c
            elif op == "*": acc = acc * c
            elif op == "//": acc = acc // c
            elif op == "%": acc = acc % c
            elif op == "//-": acc = acc // -c
            elif op == "%-": acc = acc % -c
            elif op == "&": acc = acc & (c - 1)
            elif op == ">>": acc = acc >> (c.bit_length() % 5)
            elif op == "^": acc = acc ^ c
            elif op == "|": acc = acc | c
            elif op == "+x": acc = acc + x
            elif op == "+y*": acc = acc + y * c
        return acc
    _check(lambda x, y: apply(x, y, False), lambda x, y: apply(x, y, True),
           [(lo, lo + span), (ylo, ylo + 5)])


# ---------------------------------------------------------------- generated code vs interp
def _diff(src, args, grid=(1,)):
    """Run the kernel in the interpreter and its generated MLIR in ``simt_eval``; every tensor
    argument must come out bit-identical."""
    res = compile_source("import ave_core.lang as ave\n" + textwrap.dedent(src), "adv.py")
    assert not [d for d in res.diagnostics if d.severity.label == "error"], res.diagnostics
    k = res.kernels[0]
    lk = lower_kernel(k)
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    r = interp.run(k, grid, ref)
    assert not [d for d in r.diagnostics if d.severity.label == "error"]
    mem, argv = {}, {}
    for i, (p, a) in enumerate(zip(lk.params, args)):
        if p.kind == "tensor":
            mem[f"t{i}"] = bytearray(np.ascontiguousarray(a).tobytes())
            argv[f"%arg{i}_ptr"] = (f"t{i}", 0)
            for d in range(a.ndim):
                argv[f"%arg{i}_size{d}"] = a.shape[d]
            for d in range(a.ndim - 1):
                argv[f"%arg{i}_stride{d}"] = a.strides[d] // a.itemsize
        else:
            argv[f"%arg{i}_{p.dtype}"] = a
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    for pid in itertools.product(*[range(x) for x in g3]):
        argv["__pid"], argv["__grid"] = pid, g3
        mem = simt_eval.run(lk.mlir, lk.threads, argv, mem)
    for i, (p, a, want) in enumerate(zip(lk.params, args, ref)):
        if p.kind == "tensor":
            got = np.frombuffer(bytes(mem[f"t{i}"]), dtype=a.dtype).reshape(a.shape)
            np.testing.assert_array_equal(got, want, err_msg=p.name)
    return lk


def _verifies(lk):
    pytest.importorskip("mlir.ir", reason="the MLIR bindings (pip install 'ave[gpu]')")
    from ave_core.jit.pipeline import mlir_to_ptx
    ptx, _ = mlir_to_ptx(lk.mlir)
    assert ".entry" in ptx


def test_an_i32_fragment_of_index_math_is_stored():
    # the stored values are folded Syms (thread-id arithmetic, negative operands, runtime
    # division): they used to be printed as `Sym(...)` into the MLIR text
    lk = _diff(f"""
    @ave.kernel(threads=32)
    def k(X: ave.Tensor[ave.i32, 1], a: ave.i32, b: ave.i32):
        t = ave.thread_id()
        q = (t - 16) // b + (a - t) % 7 + (t - 20) // 4 + (t - 5) % 8 + 8 // b + 7 % (b + 1)
        c = ave.coord((32,), 0, {L32})
        f = ave.full((32,), 0, ave.i32, {L32})
        ave.store(X[0:32], f + q + (c - 7) // 3 + (c * b) % 5 + (c ^ 5) - (c << 2) + (t - 7) % -3)
    """, [np.zeros(32, np.int32), 5, -3])
    assert "Sym(" not in lk.mlir
    _verifies(lk)


def test_a_loop_with_a_negative_step():
    # Python's range(5, -3, -1) runs 8 times; scf.for needs a positive step (it ran 0 times)
    # and the induction variable was assumed >= its start (so `i // 4` became unsigned)
    lk = _diff(f"""
    @ave.kernel(threads=32)
    def k(X: ave.Tensor[ave.i32, 1], n: ave.i32):
        acc = 0
        for i in ave.range(5, -3, -1):
            acc = acc + i // 4 + i % 3
        for i in ave.range(n, 0, -3):
            acc = acc * 3 + i
        f = ave.full((32,), 0, ave.i32, {L32})
        ave.store(X[0:32], f + acc)
    """, [np.zeros(32, np.int32), 7])
    assert "divui" not in lk.mlir
    _verifies(lk)


@pytest.mark.parametrize("vb", [4, 8, 16])
def test_masked_copies_through_a_swizzled_stage_agree_with_the_interpreter(vb):
    # partial rows (cp.async zero-fill by byte count), a swizzled second stage, and a copy
    # out whose mask guards the destination side at an offset
    _diff(f"""
    @ave.kernel(threads=96)
    def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
        M, N = X.shape
        P, Q = Y.shape
        s = ave.alloc((2, 6, 12), ave.f32, space="shared",
                      layout=ave.swizzled(ave.swizzle(1, 2, 3), ave.row_major((2, 6, 12))))
        ave.copy_async(X[1:7, 0:12], s[1], vector_bytes={vb},
                       mask=lambda m, n: (m < M) & (n < N))
        ave.commit_async()
        ave.wait_async(0)
        ave.barrier()
        ave.copy(s[1], Y[1:7, 2:14], vector_bytes=4, mask=lambda m, n: (m < P) & (n < Q))
    """, [np.arange(60, dtype=np.float32).reshape(6, 10) + 1, np.zeros((6, 11), np.float32)])


# ---------------------------------------------------------------- launcher argument packing
class _FakeLaunch:
    def __init__(self, params):
        self.params = params
        self.meta = {"kernel": "k"}
        self.align = 16


def test_scalar_arguments_are_packed_in_the_kernels_widths():
    pytest.importorskip("torch")
    from ave_core.jit.driver import _pack
    fl = _FakeLaunch([{"name": "h", "kind": "scalar", "dtype": "f16"},
                      {"name": "b", "kind": "scalar", "dtype": "bf16"},
                      {"name": "n", "kind": "scalar", "dtype": "i32"},
                      {"name": "s", "kind": "scalar", "dtype": "f32"},
                      {"name": "q", "kind": "scalar", "dtype": "i8"},
                      {"name": "p", "kind": "scalar", "dtype": "i1"}])
    vals, types = _pack(fl, [1.5, -2.0, 7, 0.25, -5, True])
    # the PTX parameters of f16/bf16 are 2 bytes: the bits of the value, not an f32
    assert types[0] is ctypes.c_uint16 and vals[0] == 0x3E00           # f16 1.5
    assert types[1] is ctypes.c_uint16 and vals[1] == 0xC000           # bf16 -2.0
    assert (vals[2], types[2]) == (7, ctypes.c_int32)
    assert types[3] is ctypes.c_float and vals[3] == 0.25
    assert (vals[4], types[4]) == (-5, ctypes.c_int8)
    assert (vals[5], types[5]) == (1, ctypes.c_uint8)
    bits = struct.unpack("<I", struct.pack("<f", 1.0 + 2 ** -8 + 2 ** -9))[0]
    assert _pack(fl, [0.0, 1.0 + 2 ** -8 + 2 ** -9, 0, 0.0, 0, False])[0][1] == (
        (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)                      # round to nearest


@pytest.mark.parametrize("bad, err", [(2 ** 31, ValueError), (-2 ** 31 - 1, ValueError),
                                      (3.7, TypeError), ("3", TypeError)])
def test_an_i32_scalar_that_does_not_fit_is_refused(bad, err):
    pytest.importorskip("torch")
    from ave_core.jit.driver import _pack
    fl = _FakeLaunch([{"name": "n", "kind": "scalar", "dtype": "i32"}])
    with pytest.raises(err, match="`n`"):
        _pack(fl, [bad])


def test_integer_and_boolean_fragments_carried_by_loops_and_branches():
    # loop-carried / branch-merged i32 and i1 fragments came back as plain MLIR values, and
    # the next `+ Sym` or `&` on them was refused ("unsupported operand type(s)")
    lk = _diff(f"""
    @ave.kernel(threads=32)
    def k(X: ave.Tensor[ave.i32, 1], n: ave.i32):
        c = ave.coord((32,), 0, {L32})
        acc = c
        ok = c < 40
        for i in ave.range(n, 0, -2):
            acc = acc + i // 3 - c
            ok = ok & (acc > i)
        if n > 3:
            acc = acc * 2
            ok = ok | (c < 4)
        else:
            acc = acc - 1
        ave.store(X[0:32], ave.where(ok, acc + c, -acc))
    """, [np.zeros(32, np.int32), 9])
    _verifies(lk)
