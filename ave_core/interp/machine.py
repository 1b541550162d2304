"""The reference interpreter: executes Ave IR for a launch grid on the CPU.

One workgroup at a time, vectorized over its threads with numpy (a scalar is an array of
one value per thread; a register fragment is a ``(threads, values)`` array laid out by its
TV layout). Semantics follow the GPU:

* shared memory is an array of **bytes** (views, swizzles and packed types behave as on
  hardware); global memory is the caller's arrays, written in place;
* registers round to their dtype (RNE); ``mma`` multiplies each warp's own operand
  registers as the instruction does (per warp, through the atom's lane layouts) and
  accumulates in f32;
* ``copy_async`` reads global memory when issued and writes shared memory only when a
  ``wait_async`` retires its group;
* branches on per-thread values run both sides with the threads masked (SIMT).

Dynamic checks (each a diagnostic with block, thread(s), program point, loop indices,
address and coordinates): global out-of-bounds (AVE301), shared memory outside its
allocation (AVE302), read of shared bytes never written (AVE303), shared-memory data race
between two barriers (AVE304), divergence the DSL forbids (AVE305).

Provenance mode: alongside every value, an ``int64`` id of the global tensor element it
came from (``-1``: a constant / computed value, ``-2``: mixed), carried through registers
and shared memory bytes; every ``mma`` execution is recorded with its operands' ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ave_core.compiler.ir import (Block, FragmentType, KernelIR, Op, ScalarType, TensorType,
                                  TileType, Value, shown_loops)
from ave_core.compiler.fragments import broadcast_index
from ave_core.diagnostics import Diagnostic, Related
from ave_core.interp import numerics as NUM
from ave_core.lang import dtypes as D

BOTTOM = -1
MIXED = -2
_TID_SHIFT = 40


class InterpError(Exception):
    """The interpreter cannot continue (unsupported op, a fatal divergence, bad args)."""


# ============================================================================ runtime objects

@dataclass
class RTensor:
    """A global tensor: a flat storage view, shape and strides in elements."""

    index: int
    name: str
    dtype: Any
    flat: np.ndarray           # storage dtype, 1-D, starting at element (0, ..., 0)
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    gather: tuple[int, np.ndarray] | None = None  # (dim, index values)


@dataclass
class RTile:
    space: str
    dtype: Any
    shape: tuple[int, ...]
    # global
    tensor: RTensor | None = None
    origin: tuple[int, ...] = ()          # per tensor dim
    dims: tuple[int, ...] = ()            # tensor/base dim of each local dim
    # shared
    base: int = 0                         # byte address of the base layout's offset 0
    layout: Any = None
    base_shape: tuple[int, ...] = ()
    alloc_lo: int = 0
    alloc_hi: int = 0
    alloc_name: str = ""


@dataclass
class RFrag:
    vals: np.ndarray                      # (T, V) compute dtype
    prov: np.ndarray | None = None        # (T, V) int64
    # For MMA results and what is computed from them: ``prov`` is the source of the A
    # element (m, k=0) and ``prov2`` of the B element (k=0, n) an element was computed from.
    prov2: np.ndarray | None = None


@dataclass
class MMARecord:
    """One execution of an ``ave.mma``: operand provenance as each thread held it."""

    op: Op
    block: tuple[int, ...]
    loop_indices: tuple
    a_prov: np.ndarray        # (T, Va)
    b_prov: np.ndarray        # (T, Vb)
    tiled: Any
    a_prov2: np.ndarray | None = None
    b_prov2: np.ndarray | None = None


@dataclass
class ConformRecord:
    """One execution of an ``ave.assert_conform`` (provenance mode)."""

    op: Op
    block: tuple[int, ...]
    loop_indices: tuple
    x: "RFrag"
    y: "RFrag"


@dataclass
class RunResult:
    """What :func:`run` returns.

    Attributes:
        diagnostics: dynamic-check findings (first few per code and program point).
        mma_trace: in provenance mode, one record per ``ave.mma`` execution.
        tensors: the runtime tensors (for decoding provenance ids).
    """

    diagnostics: list[Diagnostic] = field(default_factory=list)
    mma_trace: list[MMARecord] = field(default_factory=list)
    tensors: list[RTensor] = field(default_factory=list)
    conform_trace: list[ConformRecord] = field(default_factory=list)

    def decode(self, pid: int) -> tuple[str, tuple[int, ...]] | None:
        """A provenance id -> (tensor name, logical coordinates), or None for ⊥/mixed."""
        if pid < 0:
            return None
        t = self.tensors[(pid >> _TID_SHIFT) - 1]
        lin = pid & ((1 << _TID_SHIFT) - 1)
        return t.name, tuple(int(c) for c in np.unravel_index(lin, t.shape))


def _prov_ids(t: RTensor, coords: Sequence[np.ndarray]) -> np.ndarray:
    lin = np.ravel_multi_index(tuple(np.asarray(c, dtype=np.int64) for c in coords), t.shape,
                               mode="clip")
    return ((t.index + 1) << _TID_SHIFT) | lin.astype(np.int64)


def _merge_prov(*ps: np.ndarray | None) -> np.ndarray | None:
    ps2 = [p for p in ps if p is not None]
    if not ps2:
        return None
    out = ps2[0].copy()
    for p in ps2[1:]:
        p = np.broadcast_to(p, out.shape) if p.shape != out.shape else p
        out = np.broadcast_to(out, np.broadcast_shapes(out.shape, p.shape)).copy()
        both = (out >= 0) & (p >= 0) & (out != p)
        take = (out == BOTTOM) & (p != BOTTOM)
        out = np.where(take, p, out)
        out = np.where(both | (p == MIXED), MIXED, out)
    return out


# ============================================================================ the machine

class Machine:
    """Executes one kernel specialization; see the module docstring."""

    MAX_REPORTS_PER_SITE = 3

    def __init__(self, kernel: KernelIR, grid: tuple[int, ...], tensors: dict[Value, RTensor],
                 scalars: dict[Value, Any], provenance: bool, checks: bool) -> None:
        self.k = kernel
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.T = kernel.threads
        self.ws = kernel.warp_size
        self.params_t = tensors
        self.params_s = scalars
        self.prov_on = provenance
        self.checks = checks
        self.result = RunResult(tensors=sorted(tensors.values(), key=lambda t: t.index))
        self.reported: dict[tuple, int] = {}
        self._layout_tables: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ reporting

    def report(self, code: str, op: Op, message: str, threads: Sequence[int] = (),
               extra: dict | None = None, related: Sequence[Related] = ()) -> None:
        key = (code, id(op))
        n = self.reported.get(key, 0)
        if n >= self.MAX_REPORTS_PER_SITE:
            return
        self.reported[key] = n + 1
        loops = dict(shown_loops(self.loop_stack, op))
        ts = [int(t) for t in threads][:2]
        witness = {
            "block": list(self.block_id),
            "threads": [{"thread": t, "warp": t // self.ws, "lane": t % self.ws} for t in ts],
            "loop_indices": loops,
            "program_points": [{"file": op.loc.file, "range": op.loc.range.to_json(),
                                "label": op.name}],
        }
        if extra:
            witness.update(extra)
        where = ", ".join(f"{k}={v}" for k, v in loops.items())
        thr = " and ".join(f"thread {t} (warp {t // self.ws}, lane {t % self.ws})" for t in ts)
        ctx = f"block {tuple(self.block_id)}" + (f", {thr}" if thr else "") + \
            (f", {where}" if where else "")
        self.result.diagnostics.append(Diagnostic(code, f"{message} ({ctx})", op.loc.file,
                                                  op.loc.range, related=list(related),
                                                  witness=witness))

    # ------------------------------------------------------------------ driver

    def run(self) -> RunResult:
        gx, gy, gz = self.grid
        for bz in range(gz):
            for by in range(gy):
                for bx in range(gx):
                    self.run_block((bx, by, bz))
        return self.result

    def run_block(self, bid: tuple[int, int, int]) -> None:
        self.block_id = bid
        T = self.T
        self.env: dict[Value, Any] = {}
        for v, t in self.params_t.items():
            self.env[v] = t
        for v, s in self.params_s.items():
            self.env[v] = np.full(T, s)
        self.active = np.ones(T, dtype=bool)
        self.loop_stack: list[tuple[str, int]] = []
        # shared memory
        from ave_core.compiler.ir import shared_plan
        self.allocs, size = shared_plan(self.k)
        self.smem = np.zeros(max(size, 1), dtype=np.uint8)
        self.smem_written = np.zeros(max(size, 1), dtype=bool)
        self.smem_prov = np.full(max(size, 1), BOTTOM, dtype=np.int64) if self.prov_on else None
        self.epoch = 0
        self.w_epoch = np.full(max(size, 1), -1, dtype=np.int64)
        self.w_thread = np.full(max(size, 1), -1, dtype=np.int64)
        self.r_epoch = np.full(max(size, 1), -1, dtype=np.int64)
        self.r_thread = np.full(max(size, 1), -1, dtype=np.int64)
        self.pending = np.zeros(max(size, 1), dtype=np.int32)
        # asynchronous copies per thread (PTX cp.async: commit_group and wait_group act on
        # the executing thread's own copies): the copies no commit has grouped yet, and
        # those committed, each row with its thread's group number; commits[t]: how many
        # groups thread t has committed
        self.open_group: list = []
        self.inflight: list = []
        self.commits = np.zeros(self.T, np.int64)
        self.exec_block(self.k.body)
        # retire everything still in flight at exit
        self.retire(0, None)

    # ------------------------------------------------------------------ blocks

    def exec_block(self, blk: Block) -> list | None:
        for op in blk.ops:
            if op.name in ("scf.yield", "ave.yield"):
                return [self.env[v] if v in self.env else self.outer(v) for v in op.operands]
            h = getattr(self, "op_" + op.name.replace(".", "_"), None)
            if h is None:
                raise InterpError(f"the interpreter does not support {op.name} ({op.loc})")
            h(op)
        return None

    def outer(self, v: Value) -> Any:
        raise InterpError(f"value {v!r} used before its definition")

    def val(self, v: Value) -> Any:
        return self.env[v]

    def uniform(self, v: Value, op: Op, what: str) -> int:
        a = self.val(v)
        if isinstance(a, np.ndarray) and a.ndim == 1:
            act = a[self.active] if self.active.any() else a
            if act.size and np.any(act != act[0]):
                t = np.nonzero(self.active & (a != act[0]))[0]
                self.report("AVE305", op, f"{what} differs across the threads of the workgroup "
                            "(a collective operation needs one value)",
                            [int(np.argmax(self.active)), int(t[0]) if t.size else 0])
            return int(act[0]) if act.size else int(a[0])
        return int(a)

    # ------------------------------------------------------------------ arith

    def _bin(self, op: Op, f) -> None:
        a, b = (self.val(v) for v in op.operands)
        av, ap = self._unpack(a)
        bv, bp = self._unpack(b)
        av, bv = self._align(av, bv)
        with np.errstate(all="ignore"):
            r = f(av, bv)
        rt = op.result.type
        r = NUM.round_to(rt.dtype, r) if rt.dtype != D.i1 else r.astype(bool)
        if isinstance(rt, FragmentType):
            prov = prov2 = None
            if self.prov_on:
                prov = _merge_prov(*self._align_prov(ap, bp, r.shape))
                a2 = a.prov2 if isinstance(a, RFrag) else None
                b2 = b.prov2 if isinstance(b, RFrag) else None
                if a2 is not None or b2 is not None:
                    prov2 = _merge_prov(*self._align_prov(a2, b2, r.shape))
            self.env[op.result] = RFrag(np.broadcast_to(r, self._frag_shape(rt)).copy(), prov,
                                        prov2)
        else:
            self.env[op.result] = r

    def _frag_shape(self, t: FragmentType) -> tuple[int, int]:
        return (self.T, t.layout.num_values) if t.layout is not None else (self.T, 1)

    def _unpack(self, x: Any) -> tuple[np.ndarray, np.ndarray | None]:
        if isinstance(x, RFrag):
            return x.vals, x.prov
        return np.asarray(x), None

    def _align(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if a.ndim == 1 and b.ndim == 2:
            a = a[:, None]
        if b.ndim == 1 and a.ndim == 2:
            b = b[:, None]
        return a, b

    def _align_prov(self, ap, bp, shape):
        out = []
        for p in (ap, bp):
            if p is None:
                p = np.full(shape, BOTTOM, dtype=np.int64)
            out.append(np.broadcast_to(p, shape))
        return out

    def op_arith_constant(self, op: Op) -> None:
        dt = op.attrs["dtype"]
        self.env[op.result] = np.full(self.T, op.attrs["value"], dtype=NUM.compute_dtype(dt))

    def op_arith_add(self, op): self._bin(op, lambda a, b: a + b)
    def op_arith_sub(self, op): self._bin(op, lambda a, b: a - b)
    def op_arith_mul(self, op): self._bin(op, lambda a, b: a * b)
    def op_arith_div(self, op): self._bin(op, lambda a, b: a / b)
    def op_arith_pow(self, op): self._bin(op, lambda a, b: np.power(a, b))
    def op_arith_and(self, op): self._bin(op, lambda a, b: a & b)
    def op_arith_or(self, op): self._bin(op, lambda a, b: a | b)
    def op_arith_xor(self, op): self._bin(op, lambda a, b: a ^ b)
    def op_arith_shl(self, op): self._bin(op, lambda a, b: a << b)
    def op_arith_shr(self, op): self._bin(op, lambda a, b: a >> b)
    def op_arith_min(self, op): self._bin(op, np.minimum)
    def op_arith_max(self, op): self._bin(op, np.maximum)

    def op_arith_floordiv(self, op):
        self._bin(op, lambda a, b: np.floor_divide(a, np.where(b == 0, 1, b)))

    def op_arith_mod(self, op):
        self._bin(op, lambda a, b: np.mod(a, np.where(b == 0, 1, b)))

    def op_arith_cmp(self, op):
        f = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
             "eq": np.equal, "ne": np.not_equal}[op.attrs["pred"]]
        self._bin(op, f)

    def _un(self, op: Op, f) -> None:
        x = self.val(op.operands[0])
        xv, xp = self._unpack(x)
        with np.errstate(all="ignore"):
            r = f(xv.astype(np.float32) if op.name.startswith("math.") and xv.dtype.kind != "f"
                  else xv)
        rt = op.result.type
        r = NUM.round_to(rt.dtype, r)
        self.env[op.result] = RFrag(r, xp, x.prov2 if isinstance(x, RFrag) else None) \
            if isinstance(rt, FragmentType) else r

    def op_arith_neg(self, op): self._un(op, lambda a: -a)
    def op_math_exp(self, op): self._un(op, np.exp)
    def op_math_exp2(self, op): self._un(op, np.exp2)
    def op_math_log(self, op): self._un(op, np.log)
    def op_math_log2(self, op): self._un(op, np.log2)
    def op_math_sqrt(self, op): self._un(op, np.sqrt)
    def op_math_rsqrt(self, op): self._un(op, lambda a: 1.0 / np.sqrt(a))
    def op_math_abs(self, op): self._un(op, np.abs)

    def op_arith_cast(self, op):
        self._un(op, lambda a: a)

    def op_arith_select(self, op):
        c, a, b = (self.val(v) for v in op.operands)
        cv, _ = self._unpack(c)
        av, ap = self._unpack(a)
        bv, bp = self._unpack(b)
        rt = op.result.type
        if isinstance(rt, FragmentType):
            shape = self._frag_shape(rt)
            cv, av, bv = (np.broadcast_to(x[:, None] if x.ndim == 1 else x, shape)
                          for x in (cv, av, bv))
            r = np.where(cv, av, bv)
            prov = prov2 = None
            if self.prov_on:
                pa, pb = self._align_prov(ap, bp, shape)
                prov = np.where(cv, pa, pb)
                a2 = a.prov2 if isinstance(a, RFrag) else None
                b2 = b.prov2 if isinstance(b, RFrag) else None
                if a2 is not None or b2 is not None:
                    pa2, pb2 = self._align_prov(a2, b2, shape)
                    prov2 = np.where(cv, pa2, pb2)
            self.env[op.result] = RFrag(NUM.round_to(rt.dtype, r), prov, prov2)
        else:
            self.env[op.result] = np.where(cv, av, bv)

    # ------------------------------------------------------------------ ids and shapes

    def op_ave_thread_id(self, op):
        self.env[op.result] = np.arange(self.T, dtype=np.int32)

    def op_ave_warp_id(self, op):
        self.env[op.result] = (np.arange(self.T) // self.ws).astype(np.int32)

    def op_ave_lane_id(self, op):
        self.env[op.result] = (np.arange(self.T) % self.ws).astype(np.int32)

    def op_ave_warp_group_id(self, op):
        self.env[op.result] = (np.arange(self.T) // 128).astype(np.int32)

    def op_ave_program_id(self, op):
        self.env[op.result] = np.full(self.T, self.block_id[op.attrs["axis"]], dtype=np.int32)

    def op_ave_num_programs(self, op):
        self.env[op.result] = np.full(self.T, self.grid[op.attrs["axis"]], dtype=np.int32)

    def op_ave_dim(self, op):
        t = self.val(op.operands[0])
        self.env[op.result] = np.full(self.T, t.shape[op.attrs["axis"]], dtype=np.int32)

    def op_ave_stride(self, op):
        t = self.val(op.operands[0])
        self.env[op.result] = np.full(self.T, t.strides[op.attrs["axis"]], dtype=np.int32)

    def op_ave_tag(self, op):
        self.env[op.result] = self.val(op.operands[0])

    def op_ave_assert_conform(self, op):
        # checked statically by the analysis; in provenance mode, recorded for replay
        if self.prov_on:
            x, y = (self.val(v) for v in op.operands)
            if isinstance(x, RFrag) and isinstance(y, RFrag):
                self.result.conform_trace.append(ConformRecord(
                    op, tuple(self.block_id), shown_loops(self.loop_stack, op), x, y))

    def op_ave_assert_disjoint(self, op):
        pass

    def op_ave_sched_barrier(self, op):
        pass

    def op_ave_reset(self, op):
        pass  # no code: only the analysis forgets tags

    def op_ave_assume(self, op):
        c = np.asarray(self.val(op.operands[0])).reshape(-1)
        bad = np.nonzero(c == 0)[0]
        if bad.size:
            self.report("AVE306", op, f"kernel precondition violated: "
                        f"`{op.attrs.get('message', 'ave.assume')}` is false here",
                        threads=bad[:1].tolist())

    def op_ave_materialize(self, op):
        self.env[op.result] = self.val(op.operands[0])

    def op_ave_expand_dims(self, op):
        self.env[op.result] = self.val(op.operands[0])

    def op_ave_broadcast(self, op):
        x = self.val(op.operands[0])
        src_t = op.operands[0].type
        lay = src_t.layout
        dst_lay = op.result.type.layout
        if getattr(lay, "parent", None) is dst_lay or getattr(lay, "parent", None) == dst_lay:
            self.env[op.result] = x           # same distribution: registers already in place
            return
        idx = broadcast_index(lay.parent, dst_lay, op.attrs["keep"], op.result.type.shape)
        T, V2 = idx.shape
        flat = idx.reshape(-1)
        vals = x.vals.reshape(-1)[flat].reshape(T, V2)
        prov = x.prov.reshape(-1)[flat].reshape(T, V2) if x.prov is not None else None
        prov2 = x.prov2.reshape(-1)[flat].reshape(T, V2) if x.prov2 is not None else None
        self.env[op.result] = RFrag(vals, prov, prov2)

    # ------------------------------------------------------------------ tiles

    def op_ave_global_tile(self, op):
        src = self.val(op.operands[0])
        dyn = [self.uniform(v, op, "a tile offset") for v in op.operands[1:]]
        offs = [dyn[o[1]] if isinstance(o, tuple) else o for o in op.attrs["offsets"]]
        if isinstance(src, RTensor):
            self.env[op.result] = RTile("global", src.dtype, op.attrs["shape"], tensor=src,
                                        origin=tuple(offs), dims=tuple(op.attrs["keep"]))
        else:
            raise InterpError("ave.global_tile of a non-tensor")

    def op_ave_subtile(self, op):
        src: RTile = self.val(op.operands[0])
        dyn = [self.uniform(v, op, "a tile offset") for v in op.operands[1:]]
        offs = [dyn[o[1]] if isinstance(o, tuple) else o for o in op.attrs["offsets"]]
        keep = op.attrs["keep"]
        origin = list(src.origin)
        for ld, off in enumerate(offs):
            origin[src.dims[ld]] += off
        dims = tuple(src.dims[ld] for ld in keep)
        t = RTile(src.space, src.dtype, op.attrs["shape"], src.tensor, tuple(origin), dims,
                  src.base, src.layout, src.base_shape, src.alloc_lo, src.alloc_hi,
                  src.alloc_name)
        self.env[op.result] = t

    def op_ave_transpose(self, op):
        src: RTile = self.val(op.operands[0])
        perm = op.attrs["perm"]
        t = RTile(src.space, src.dtype, tuple(src.shape[p] for p in perm), src.tensor,
                  src.origin, tuple(src.dims[p] for p in perm), src.base, src.layout,
                  src.base_shape, src.alloc_lo, src.alloc_hi, src.alloc_name)
        self.env[op.result] = t

    def op_ave_alloc(self, op):
        if op.attrs["space"] != "shared":
            raise InterpError("register tiles (ave.alloc(space='register')) are not supported "
                              "by the interpreter yet")
        lo, hi = self.allocs[id(op)]
        shape = op.attrs["shape"]
        self.env[op.result] = RTile("shared", op.attrs["dtype"], shape, origin=(0,) * len(shape),
                                    dims=tuple(range(len(shape))), base=lo,
                                    layout=op.attrs["layout"], base_shape=shape, alloc_lo=lo,
                                    alloc_hi=hi, alloc_name=op.results[0].name or "smem")

    def op_ave_view(self, op):
        src: RTile = self.val(op.operands[0])
        # byte address of the source's element (0, ..., 0)
        zero = tuple(np.zeros(1, dtype=np.int64) for _ in src.shape)
        addr = int(self.shared_addresses(src, zero)[0])
        shape = op.attrs["shape"]
        self.env[op.result] = RTile("shared", op.attrs["dtype"], shape, origin=(0,) * len(shape),
                                    dims=tuple(range(len(shape))), base=addr,
                                    layout=op.attrs["layout"], base_shape=shape,
                                    alloc_lo=src.alloc_lo, alloc_hi=src.alloc_hi,
                                    alloc_name=src.alloc_name)

    def op_ave_gather(self, op):
        t: RTensor = self.val(op.operands[0])
        idx = self.val(op.operands[1])
        vals = self.index_values(idx, op)
        self.env[op.result] = RTensor(t.index, t.name, t.dtype, t.flat, t.shape, t.strides,
                                      (op.attrs["dim"], vals))

    op_ave_scatter = op_ave_gather

    def index_values(self, idx: Any, op: Op) -> np.ndarray:
        if isinstance(idx, RFrag):
            lay = op.operands[1].type.layout
            tab = self.table(lay)          # (T, V, 1)
            n = op.operands[1].type.shape[0]
            out = np.zeros(n, dtype=np.int64)
            out[tab[:, :, 0].reshape(-1)] = idx.vals.reshape(-1)
            return out
        if isinstance(idx, RTile):
            coords = (np.arange(idx.shape[0]),)
            vals, _ = self.read_tile(idx, coords, np.zeros(idx.shape[0], dtype=np.int64), op)
            return vals.astype(np.int64)
        raise InterpError("gather index must be a tile or fragment")

    # ------------------------------------------------------------------ addressing

    def table(self, layout: Any) -> np.ndarray:
        key = id(layout)
        if key not in self._layout_tables:
            self._layout_tables[key] = np.asarray(layout.coords_table(), dtype=np.int64)
        return self._layout_tables[key]

    def shared_addresses(self, t: RTile, coords: Sequence[np.ndarray]) -> np.ndarray:
        base_coords = [np.full(np.shape(coords[0]), o, dtype=np.int64) for o in t.origin]
        for ld, bd in enumerate(t.dims):
            base_coords[bd] = base_coords[bd] + coords[ld]
        off = np.asarray(t.layout(tuple(base_coords)), dtype=np.int64)
        return t.base + off * t.dtype.bytes

    def global_coords(self, t: RTile, coords: Sequence[np.ndarray]) -> list[np.ndarray]:
        tc = [np.full(np.shape(coords[0]), o, dtype=np.int64) for o in t.origin]
        for ld, bd in enumerate(t.dims):
            tc[bd] = tc[bd] + coords[ld]
        if t.tensor.gather is not None:
            gd, vals = t.tensor.gather
            r = tc[gd]
            ok = (r >= 0) & (r < len(vals))
            tc[gd] = np.where(ok, vals[np.clip(r, 0, len(vals) - 1)], -1)
        return tc

    def global_access(self, t: RTile, coords: Sequence[np.ndarray], m: np.ndarray,
                      threads: np.ndarray, op: Op, what: str
                      ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """(accessed mask, flat element indices, tensor coordinates) of a global access;
        reports AVE301 for an unmasked element outside the tensor's shape."""
        ten = t.tensor
        n = len(m)
        tc = self.global_coords(t, coords)
        inb = np.ones(n, dtype=bool)
        for d, c in enumerate(tc):
            inb &= (c >= 0) & (c < ten.shape[d])
        bad = m & ~inb
        if bad.any() and self.checks:
            i = int(np.nonzero(bad)[0][0])
            coord = [int(c[i]) for c in tc]
            self.report("AVE301", op, f"out-of-bounds {what} of {ten.name}{coord} "
                        f"(shape {list(ten.shape)})", [int(threads[i])],
                        {"coordinates": {ten.name: coord}})
        ok = m & inb
        flat = np.zeros(n, dtype=np.int64)
        for d, c in enumerate(tc):
            flat += np.where(ok, c, 0) * ten.strides[d]
        return ok, flat, tc

    def shared_access(self, t: RTile, coords: Sequence[np.ndarray], m: np.ndarray,
                      threads: np.ndarray, op: Op, what: str) -> tuple[np.ndarray, np.ndarray]:
        """(accessed mask, byte addresses) of a shared access; reports AVE302 for an unmasked
        element outside the tile's allocation."""
        addr = self.shared_addresses(t, coords)
        eb = t.dtype.bytes
        inb = (addr >= t.alloc_lo) & (addr + eb <= t.alloc_hi)
        bad = m & ~inb
        if bad.any() and self.checks:
            i = int(np.nonzero(bad)[0][0])
            self.report("AVE302", op, f"shared-memory {what} outside `{t.alloc_name}` at byte "
                        f"{int(addr[i])} (allocation bytes {t.alloc_lo}..{t.alloc_hi - 1})",
                        [int(threads[i])], {"address": int(addr[i])})
        return m & inb, addr

    def read_tile(self, t: RTile, coords: Sequence[np.ndarray], threads: np.ndarray, op: Op,
                  mask: np.ndarray | None = None, other: Any = 0, raw: bool = False
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        """Compute values (and provenance) of tile elements at ``coords`` read by ``threads``;
        ``raw``: their storage bits instead (``other`` converted to them), for a copy that
        moves bytes unchanged (NaN payloads, fp8 -0)."""
        n = np.shape(coords[0])[0] if len(coords) else 0
        if raw:
            vals = np.full(n, NUM.to_storage(t.dtype, np.asarray(other)),
                           dtype=NUM.STORAGE[t.dtype.name])
            conv = lambda x: x  # noqa: E731
        else:
            # the `other` value as a register of the dtype holds it (rounded: it was kept
            # as given, a bf16 register holding 1.001)
            with np.errstate(all="ignore"):
                fill = NUM.round_to(t.dtype, np.asarray(other))
            vals = np.full(n, fill, dtype=NUM.compute_dtype(t.dtype))
            conv = lambda x: NUM.from_storage(t.dtype, x)  # noqa: E731
        prov = np.full(n, BOTTOM, dtype=np.int64) if self.prov_on else None
        m = np.ones(n, dtype=bool) if mask is None else mask.copy()
        if t.space == "global":
            ok, flat, tc = self.global_access(t, coords, m, threads, op, "read")
            vals[ok] = conv(t.tensor.flat[flat[ok]])
            if prov is not None:
                prov[ok] = _prov_ids(t.tensor, [c[ok] for c in tc])
            return vals, prov
        ok, addr = self.shared_access(t, coords, m, threads, op, "read")
        eb = t.dtype.bytes
        a = addr[ok]
        th = threads[ok]
        if a.size:
            byts = a[:, None] + np.arange(eb)
            bits = np.ascontiguousarray(self.smem[byts]).view(NUM.STORAGE[t.dtype.name]).reshape(-1)
            vals[ok] = conv(bits)
            if prov is not None:
                p = self.smem_prov[byts]
                prov[ok] = np.where(np.all(p == p[:, :1], axis=1), p[:, 0], MIXED)
            if self.checks:
                self.check_shared_read(byts, np.repeat(th, eb).reshape(byts.shape), op)
        return vals, prov

    def write_tile(self, t: RTile, coords: Sequence[np.ndarray], vals: np.ndarray,
                   prov: np.ndarray | None, threads: np.ndarray, op: Op,
                   mask: np.ndarray | None = None, deferred: bool = False,
                   raw: bool = False) -> Any:
        """Write compute values ``vals`` (``raw``: storage bits, see :meth:`read_tile`)."""
        n = np.shape(coords[0])[0]
        m = np.ones(n, dtype=bool) if mask is None else mask
        st = np.asarray(vals, NUM.STORAGE[t.dtype.name]) if raw else NUM.to_storage(t.dtype, vals)
        if t.space == "global":
            ok, flat, _ = self.global_access(t, coords, m, threads, op, "write")
            t.tensor.flat[flat[ok]] = st[ok]
            return None
        ok, addr = self.shared_access(t, coords, m, threads, op, "write")
        eb = t.dtype.bytes
        a = addr[ok]
        byts = a[:, None] + np.arange(eb)
        raw = np.ascontiguousarray(st[ok]).view(np.uint8).reshape(-1, eb)
        th = np.repeat(threads[ok], eb).reshape(byts.shape)
        bprov = None
        if prov is not None:
            bprov = np.repeat(prov[ok], eb).reshape(byts.shape)
        if deferred:
            return (byts.reshape(-1), raw.reshape(-1), th.reshape(-1),
                    None if bprov is None else bprov.reshape(-1))
        self.commit_bytes(byts.reshape(-1), raw.reshape(-1), th.reshape(-1),
                          None if bprov is None else bprov.reshape(-1), op, self.epoch)
        return None

    # ------------------------------------------------------------------ race / init checks

    def check_shared_read(self, byts: np.ndarray, th: np.ndarray, op: Op) -> None:
        b = byts.reshape(-1)
        t = th.reshape(-1)
        un = ~self.smem_written[b]
        if un.any():
            i = int(np.nonzero(un)[0][0])
            self.report("AVE303", op, f"read of shared byte {int(b[i])} that nothing wrote",
                        [int(t[i])], {"address": int(b[i])})
        inflight = self.pending[b] > 0
        if inflight.any():
            i = int(np.nonzero(inflight)[0][0])
            self.report("AVE304", op, f"data race: shared byte {int(b[i])} is read while an "
                        "asynchronous copy into it is still in flight (missing wait_async?)",
                        [int(t[i])], {"address": int(b[i])})
        race = (self.w_epoch[b] == self.epoch) & (self.w_thread[b] != t) & (self.w_thread[b] >= 0)
        if race.any():
            i = int(np.nonzero(race)[0][0])
            self.report("AVE304", op, f"data race on shared byte {int(b[i])}: written by thread "
                        f"{int(self.w_thread[b[i]])} and read by thread {int(t[i])} with no "
                        "barrier between", [int(self.w_thread[b[i]]), int(t[i])],
                        {"address": int(b[i])})
        # record readers (one reader per byte; a second distinct reader marks -2)
        same = self.r_epoch[b] == self.epoch
        prev = self.r_thread[b]
        newr = np.where(same & (prev != t) & (prev != -1), -2, t)
        self.r_epoch[b] = self.epoch
        self.r_thread[b] = newr

    def _repeats(self, b: np.ndarray) -> bool:
        """Some byte occurs twice in ``b`` (a scatter of positions: no sort)."""
        scratch = getattr(self, "_scratch", None)
        if scratch is None or len(scratch) < len(self.smem):
            scratch = self._scratch = np.zeros(len(self.smem), np.int64)
        pos = np.arange(len(b))
        scratch[b] = pos
        return bool((scratch[b] != pos).any())

    def commit_bytes(self, b: np.ndarray, raw: np.ndarray, th: np.ndarray,
                     prov: np.ndarray | None, op: Op, since_epoch: int) -> None:
        if self.checks and b.size > 1 and self._repeats(b):
            # one write, several threads, one byte, different values (the copies of an
            # element that differ across threads): a race within the write
            order = np.lexsort((th, b))
            bs, ts, rs = b[order], th[order], raw[order]
            clash = (bs[1:] == bs[:-1]) & (ts[1:] != ts[:-1]) & (rs[1:] != rs[:-1])
            if clash.any():
                i = int(np.argmax(clash))
                self.report("AVE304", op, f"data race on shared byte {int(bs[i])}: written by "
                            f"threads {int(ts[i])} and {int(ts[i + 1])} with different values "
                            "in one write", [int(ts[i]), int(ts[i + 1])],
                            {"address": int(bs[i])})
        if self.checks and b.size:
            # write/read: another thread read these bytes in an epoch the write spans
            rr = (self.r_epoch[b] >= since_epoch) & (self.r_thread[b] != th) & \
                 (self.r_thread[b] != -1)
            if rr.any():
                i = int(np.nonzero(rr)[0][0])
                other = int(self.r_thread[b[i]])
                who = f"thread {other}" if other >= 0 else "other threads"
                self.report("AVE304", op, f"data race on shared byte {int(b[i])}: read by {who} "
                            f"and overwritten by thread {int(th[i])} with no barrier between",
                            [int(th[i])] + ([other] if other >= 0 else []),
                            {"address": int(b[i])})
            ww = (self.w_epoch[b] >= since_epoch) & (self.w_thread[b] != th) & \
                 (self.w_thread[b] >= 0) & (self.smem[b] != raw)
            if ww.any():
                i = int(np.nonzero(ww)[0][0])
                self.report("AVE304", op, f"data race on shared byte {int(b[i])}: written by "
                            f"threads {int(self.w_thread[b[i]])} and {int(th[i])} with "
                            "different values and no barrier between",
                            [int(self.w_thread[b[i]]), int(th[i])], {"address": int(b[i])})
        self.smem[b] = raw
        self.smem_written[b] = True
        self.w_epoch[b] = self.epoch
        self.w_thread[b] = th
        if prov is not None and self.smem_prov is not None:
            self.smem_prov[b] = prov

    # ------------------------------------------------------------------ masks

    def eval_mask(self, op: Op, coords: list[np.ndarray], threads: np.ndarray,
                  tile: RTile) -> np.ndarray | None:
        if not op.attrs.get("masked"):
            return None
        region = op.regions[0]
        if tile.space == "global":
            args = self.global_coords_unclipped(tile, coords)
        else:
            args = list(coords)
        saved_env = self.env
        env = _RegionEnv(saved_env, threads)
        for a, c in zip(region.args, args):
            env.local[a] = np.asarray(c, dtype=np.int32)
        self.env = env
        saved_T = self.T
        try:
            res = self.exec_region(region)
        finally:
            self.env = saved_env
            self.T = saved_T
        return np.broadcast_to(np.asarray(res[0]), threads.shape).astype(bool)

    def global_coords_unclipped(self, t: RTile, coords):
        tc = [np.full(np.shape(coords[0]), o, dtype=np.int64) for o in t.origin]
        for ld, bd in enumerate(t.dims):
            tc[bd] = tc[bd] + coords[ld]
        if t.tensor.gather is not None:
            gd, vals = t.tensor.gather
            r = tc[gd]
            ok = (r >= 0) & (r < len(vals))
            tc[gd] = np.where(ok, vals[np.clip(r, 0, len(vals) - 1)], -1)
        return tc

    def exec_region(self, blk: Block) -> list:
        """Evaluate a mask region elementwise (values of outer scalars per element thread)."""
        env = self.env
        for op in blk.ops:
            if op.name == "ave.yield":
                return [env[v] for v in op.operands]
            if op.name == "arith.constant":
                env.local[op.result] = np.asarray(op.attrs["value"],
                                                  dtype=NUM.compute_dtype(op.attrs["dtype"]))
                continue
            h = getattr(self, "op_" + op.name.replace(".", "_"), None)
            if h is None or not op.name.startswith(("arith.", "math.")):
                raise InterpError(f"{op.name} is not allowed in a mask")
            h(op)
        raise InterpError("mask region without a yield")

    # ------------------------------------------------------------------ data movement

    def _copy_plan(self, op: Op, src: RTile) -> tuple[list[np.ndarray], np.ndarray]:
        """Element coordinates (row-major) and the thread that moves each element."""
        shape = src.shape
        vb = op.attrs["vector_bytes"]
        n_vec_elems = max(1, vb // src.dtype.bytes)
        idx = np.indices(shape).reshape(len(shape), -1)
        lin = np.arange(idx.shape[1])
        vec = lin // n_vec_elems
        nthreads = self.T
        if op.attrs.get("threads") is not None:
            nthreads = int(op.attrs["threads"].size)
        thread = (vec % nthreads).astype(np.int64)
        return [idx[d] for d in range(len(shape))], thread

    def _copy_common(self, op: Op, deferred: bool) -> None:
        src: RTile = self.val(op.operands[0])
        dst: RTile = self.val(op.operands[1])
        coords, thread = self._copy_plan(op, src)
        act = self.active[thread]
        coords = [c[act] for c in coords]
        thread = thread[act]
        if thread.size == 0:
            return
        on_dst = op.attrs.get("mask_side") == "dst"
        mask = self.eval_mask(op, coords, thread, dst if on_dst else src)
        rmask, wmask = (None, mask) if on_dst else (mask, None)
        # a copy moves bytes: storage bits end to end when the dtypes agree
        raw = src.dtype == dst.dtype
        vals, prov = self.read_tile(src, coords, thread, op, rmask, op.attrs.get("other", 0),
                                    raw=raw)
        if deferred:
            plan = self.write_tile(dst, coords, vals, prov, thread, op, None, deferred=True,
                                   raw=raw)
            b, raw, th, bp = plan
            self.pending[b] += 1
            self.open_group.append((b, raw, th, bp, op, self.epoch, tuple(self.loop_stack)))
        else:
            self.write_tile(dst, coords, vals, prov, thread, op, wmask, raw=raw)

    def op_ave_copy(self, op):
        self._copy_common(op, deferred=False)

    def op_ave_copy_async(self, op):
        self._copy_common(op, deferred=True)

    def op_ave_commit_async(self, op):
        self._commit_group(self.active)

    def _commit_group(self, act: np.ndarray) -> None:
        """Threads ``act`` commit their uncommitted copies as their next group (a thread
        outside a branch on thread or warp ids keeps its own copies uncommitted)."""
        keep = []
        for e in self.open_group:
            th = e[2]
            sel = act[th]
            if not sel.all():
                keep.append(_rows(e, ~sel))
                if not sel.any():
                    continue
                e = _rows(e, sel)
            self.inflight.append((*e, self.commits[e[2]]))
        self.open_group = keep
        self.commits[act] += 1

    def op_ave_wait_async(self, op):
        self.retire(op.attrs["n"], op)

    def retire(self, n: int, op: Op | None) -> None:
        """The active threads wait until at most ``n`` of their own groups are in flight
        (``op`` None: the kernel's end, every copy lands); the copies of other threads stay
        in flight (a producer warp that never waits races with the readers)."""
        if op is None:
            act = np.ones(self.T, bool)
            if self.open_group:
                self._commit_group(act)
            n = 0
        else:
            act = self.active
        keep = []
        for e in self.inflight:
            b, raw, th, bp, cop, ep, loops, seq = e
            sel = act[th] & (seq < self.commits[th] - n)
            if not sel.all():
                keep.append(_rows(e, ~sel))
                if not sel.any():
                    continue
                b, raw, th, bp, cop, ep, loops, seq = _rows(e, sel)
            self.pending[b] -= 1
            saved = self.loop_stack
            self.loop_stack = list(loops)
            self.commit_bytes(b, raw, th, bp, cop, ep)
            self.loop_stack = saved
        self.inflight = keep

    def op_ave_barrier(self, op):
        if not self.active.all():
            t = np.nonzero(~self.active)[0]
            self.report("AVE305", op, "barrier reached by only some threads of the workgroup "
                        "(a deadlock on the GPU)", [int(t[0])])
        self.epoch += 1

    def op_ave_load(self, op):
        src: RTile = self.val(op.operands[0])
        lay = op.attrs["layout"]
        tab = self.table(lay)                       # (T, V, R)
        T, V, R = tab.shape
        coords = [tab[:, :, d].reshape(-1) for d in range(R)]
        threads = np.repeat(np.arange(T), V)
        act = self.active[threads]
        mask = self.eval_mask(op, coords, threads, src)
        m = act if mask is None else (act & mask)
        vals, prov = self.read_tile(src, coords, threads, op, m, op.attrs.get("other", 0))
        vals = vals.reshape(T, V)
        prov = prov.reshape(T, V) if prov is not None else None
        self.env[op.result] = RFrag(vals, prov)

    def op_ave_store(self, op):
        dst: RTile = self.val(op.operands[0])
        fr: RFrag = self.val(op.operands[1])
        lay = op.operands[1].type.layout
        tab = self.table(lay)
        T, V, R = tab.shape
        coords = [tab[:, :, d].reshape(-1) for d in range(R)]
        threads = np.repeat(np.arange(T), V)
        act = self.active[threads]
        mask = self.eval_mask(op, coords, threads, dst)
        m = act if mask is None else (act & mask)
        prov = fr.prov.reshape(-1) if fr.prov is not None else (
            np.full(T * V, BOTTOM, dtype=np.int64) if self.prov_on else None)
        self.write_tile(dst, coords, fr.vals.reshape(-1), prov, threads, op, m)

    # ------------------------------------------------------------------ fragments

    def op_ave_full(self, op):
        t = op.result.type
        shape = self._frag_shape(t)
        if op.operands:
            v = np.asarray(self.val(op.operands[0]))[:, None]
        else:
            v = op.attrs["value"]
        vals = NUM.round_to(t.dtype, np.broadcast_to(np.asarray(v, dtype=np.float64
                                                                  if t.dtype.is_float
                                                                  else np.int64), shape))
        prov = np.full(shape, BOTTOM, dtype=np.int64) if self.prov_on else None
        self.env[op.result] = RFrag(np.array(vals), prov)

    def op_ave_coord(self, op):
        tab = self.table(op.attrs["layout"])
        vals = tab[:, :, op.attrs["axis"]].astype(np.int32)
        prov = np.full(vals.shape, BOTTOM, dtype=np.int64) if self.prov_on else None
        self.env[op.result] = RFrag(vals, prov)

    def op_ave_convert(self, op):
        """A layout conversion: each destination register takes the element from a
        register of its own thread when the thread holds it, else from the element's first
        holder (:func:`ave_core.compiler.fragments.convert_index`, the analysis' rule; it
        took every element from its first holder, so the copies of a replicated element
        that differ across threads became equal)."""
        from ave_core.compiler.fragments import convert_index
        fr: RFrag = self.val(op.operands[0])
        src_t = op.operands[0].type
        shape = src_t.shape
        src_tab = self.table(src_t.layout)
        tab = self.table(op.attrs["layout"])
        T, V, R = tab.shape

        def lin(t):
            return np.ravel_multi_index(tuple(t[:, :, d].reshape(-1) for d in range(R)), shape)
        idx = convert_index(lin(src_tab), lin(tab), T, int(np.prod(shape)))

        held = idx >= 0               # (an element no source thread holds: 0, no provenance)

        def take(x, none):
            if x is None:
                return None
            return np.where(held, x.reshape(-1)[np.maximum(idx, 0)], none).astype(
                x.dtype).reshape(T, V)
        self.env[op.result] = RFrag(take(fr.vals, 0), take(fr.prov, BOTTOM),
                                    take(fr.prov2, BOTTOM))

    def op_ave_reduce(self, op):
        fr: RFrag = self.val(op.operands[0])
        src_t = op.operands[0].type
        axis = op.attrs["axis"]
        tab = self.table(src_t.layout)
        T, V, R = tab.shape
        keep = [d for d in range(R) if d != axis]
        kshape = tuple(src_t.shape[d] for d in keep)
        key = np.ravel_multi_index(tuple(tab[:, :, d].reshape(-1) for d in keep), kshape) \
            if keep else np.zeros(T * V, dtype=np.int64)
        # each logical element once: dedupe replicated holders
        full_lin = np.ravel_multi_index(tuple(tab[:, :, d].reshape(-1) for d in range(R)),
                                        src_t.shape)
        _, first = np.unique(full_lin, return_index=True)
        vals = fr.vals.reshape(-1).astype(np.float64 if src_t.dtype.is_float else np.int64)
        n = int(np.prod(kshape)) if kshape else 1
        kind = op.attrs["op"]
        if kind == "sum":
            out = np.zeros(n)
            np.add.at(out, key[first], vals[first])
        elif kind == "max":
            out = np.full(n, -np.inf)
            np.maximum.at(out, key[first], vals[first])
        else:
            out = np.full(n, np.inf)
            np.minimum.at(out, key[first], vals[first])
        res = NUM.round_to(op.result.type.dtype, out[key]).reshape(T, V)
        prov = None
        if fr.prov is not None:
            p = fr.prov.reshape(-1)
            agg = np.full(n, BOTTOM, dtype=np.int64)
            for k, pv in zip(key[first], p[first]):
                a = agg[k]
                agg[k] = pv if a == BOTTOM else (a if a == pv else MIXED)
            prov = agg[key].reshape(T, V)
        self.env[op.result] = RFrag(res, prov)

    def op_ave_mma(self, op):
        a: RFrag = self.val(op.operands[0])
        b: RFrag = self.val(op.operands[1])
        c: RFrag = self.val(op.operands[2])
        tiled = op.attrs["tiled"]
        BM, BN, BK = tiled.tile
        ta, tb, tc = self.table(tiled.a), self.table(tiled.b), self.table(tiled.c)
        atom_threads = tiled.atom.threads
        out = c.vals.astype(np.float64).copy()
        rowp = np.full(c.vals.shape, BOTTOM, dtype=np.int64)
        colp = np.full(c.vals.shape, BOTTOM, dtype=np.int64)
        nwarps = self.T // atom_threads
        for w in range(nwarps):
            ts = slice(w * atom_threads, (w + 1) * atom_threads)
            if not self.active[ts].any():
                continue
            A = np.zeros((BM, BK))
            B = np.zeros((BK, BN))
            ca = ta[ts].reshape(-1, 2)
            cb = tb[ts].reshape(-1, 2)
            A[ca[::-1, 0], ca[::-1, 1]] = a.vals[ts].reshape(-1)[::-1]
            B[cb[::-1, 0], cb[::-1, 1]] = b.vals[ts].reshape(-1)[::-1]
            cc = tc[ts]                                      # (32, Vc, 2)
            prod = A @ B
            out[ts] += prod[cc[:, :, 0], cc[:, :, 1]]
            if self.prov_on and a.prov is not None and b.prov is not None:
                Ap = np.full((BM, BK), BOTTOM, dtype=np.int64)
                Bp = np.full((BK, BN), BOTTOM, dtype=np.int64)
                Ap[ca[::-1, 0], ca[::-1, 1]] = a.prov[ts].reshape(-1)[::-1]
                Bp[cb[::-1, 0], cb[::-1, 1]] = b.prov[ts].reshape(-1)[::-1]
                rowp[ts] = Ap[cc[:, :, 0], 0]
                colp[ts] = Bp[0, cc[:, :, 1]]
        res = NUM.round_to(op.result.type.dtype, out)
        prov = prov2 = None
        if self.prov_on:
            # an accumulator keeps the sources of its first product (later k steps read
            # other columns of the same A row and rows of the same B column)
            prov = np.where(c.prov >= 0, c.prov, rowp) if c.prov is not None else rowp
            prov2 = np.where(c.prov2 >= 0, c.prov2, colp) if c.prov2 is not None else colp
        self.env[op.result] = RFrag(res, prov, prov2)
        if self.prov_on:
            self.result.mma_trace.append(MMARecord(
                op, tuple(self.block_id), shown_loops(self.loop_stack, op),
                a.prov.copy() if a.prov is not None else np.full(a.vals.shape, BOTTOM),
                b.prov.copy() if b.prov is not None else np.full(b.vals.shape, BOTTOM), tiled,
                a.prov2.copy() if a.prov2 is not None else None,
                b.prov2.copy() if b.prov2 is not None else None))

    # ------------------------------------------------------------------ control flow

    def op_scf_for(self, op):
        lb = self.uniform(op.operands[0], op, "a loop bound")
        ub = self.uniform(op.operands[1], op, "a loop bound")
        st = self.uniform(op.operands[2], op, "a loop step")
        cur = [self.val(v) for v in op.operands[3:]]
        body = op.regions[0]
        names = getattr(self, "_loop_names", None)
        if names is None:
            # (the checker's names: a second loop with the same variable is `kt#2`)
            from ave_core.compiler.unroll import loop_names
            names = self._loop_names = loop_names(self.k)
        name = names.get(id(op)) or op.attrs.get("iv_name", "i")
        for i in range(lb, ub, st):
            # the loop variable's value (as the analysis' witnesses name iterations)
            self.loop_stack.append((name, i))
            self.env[body.args[0]] = np.full(self.T, i, dtype=np.int32)
            for arg, v in zip(body.args[1:], cur):
                self.env[arg] = v
            cur = self.exec_block(body) or []
            self.loop_stack.pop()
        for r, v in zip(op.results, cur):
            self.env[r] = v

    def op_scf_if(self, op):
        c = np.asarray(self.val(op.operands[0])).astype(bool)
        c = np.broadcast_to(c, (self.T,))
        act = self.active
        take_then = act & c
        take_else = act & ~c
        results = []
        saved = self.active
        outs = []
        for mask, region in ((take_then, op.regions[0]), (take_else, op.regions[1])):
            if not mask.any():
                outs.append(None)
                continue
            self.active = mask
            try:
                outs.append(self.exec_block(region) or [])
            finally:
                self.active = saved
        for i, r in enumerate(op.results):
            tv = outs[0][i] if outs[0] is not None else None
            ev = outs[1][i] if outs[1] is not None else None
            if tv is None:
                results.append(ev)
            elif ev is None:
                results.append(tv)
            else:
                results.append(_select_threads(take_then, tv, ev))
        for r, v in zip(op.results, results):
            self.env[r] = v


def _select_threads(mask: np.ndarray, a: Any, b: Any) -> Any:
    if isinstance(a, RFrag):
        vals = np.where(mask[:, None], a.vals, b.vals)
        prov = prov2 = None
        if a.prov is not None and b.prov is not None:
            prov = np.where(mask[:, None], a.prov, b.prov)
        if a.prov2 is not None and b.prov2 is not None:
            prov2 = np.where(mask[:, None], a.prov2, b.prov2)
        return RFrag(vals, prov, prov2)
    if isinstance(a, np.ndarray):
        return np.where(mask, a, b)
    return a


class _RegionEnv(dict):
    """Env for a mask region evaluated per element: outer per-thread scalars are indexed by
    the thread that handles each element."""

    def __init__(self, outer: dict, threads: np.ndarray) -> None:
        super().__init__()
        self.outer = outer
        self.threads = threads
        self.local: dict = {}

    def __getitem__(self, k: Value) -> Any:
        if k in self.local:
            return self.local[k]
        v = self.outer[k]
        if isinstance(v, np.ndarray) and v.ndim == 1:
            return v[self.threads]
        return v

    def __setitem__(self, k: Value, v: Any) -> None:
        self.local[k] = v

    def __contains__(self, k: object) -> bool:
        return k in self.local or k in self.outer


def _rows(e: tuple, sel: np.ndarray) -> tuple:
    """An asynchronous copy's record (bytes, raw values, threads, provenance or None, op,
    epoch, loops[, group numbers]) for the rows ``sel`` only."""
    b, raw, th, bp = e[:4]
    out = (b[sel], raw[sel], th[sel], bp[sel] if bp is not None else None, *e[4:7])
    return out + ((e[7][sel],) if len(e) > 7 else ())
