"""Scalars, fragments, MMA and structured control flow.

Scalars: ``i32`` values are :class:`~.emit.Sym` (or Python ints when constant), predicates
:class:`~.emit.Pred` (or bools), floats :class:`~.emit.V`. Fragments (:class:`LFrag`) hold one
scalar SSA value per value index of their TV layout; elementwise ops apply per value, a
runtime scalar operand is broadcast. Integer ``//`` and ``%`` round toward negative infinity,
as in Python and the interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ave_core.compiler.ir import FragmentType
from ave_core.compiler.lower.emit import LoweringError, Pred, Sym, V, materialize

FLOATS = ("f32", "f16", "bf16", "f64")


@dataclass
class LFrag:
    """A fragment: ``vals[v]`` is this thread's value ``v`` (an SSA value of ``dtype``)."""

    dtype: Any
    layout: Any
    vals: list
    packed: dict | None = None    # value 2j -> one b32 register holding values 2j, 2j+1


def _mt(dt: Any) -> str:
    from ave_core.compiler.lower.memory import mlir_type
    return mlir_type(dt)


_REPLICAS: dict = {}


def replica_groups(layout: Any, n: int) -> tuple[list, list]:
    """Values of a fragment that are replicas of one logical element in every thread (a
    reduction's result holds each row once per reduced column): ``(representative value
    indices, index of each value's representative)``. Replicas hold equal values by
    definition, so loops and branches carry one register per group."""
    if layout is None or getattr(layout, "num_values", None) != n:
        return list(range(n)), list(range(n))
    key = id(layout)
    hit = _REPLICAS.get(key)
    if hit is not None and hit[0] is layout:
        return hit[1], hit[2]
    import numpy as np
    parent = getattr(layout, "parent", None)
    if parent is not None and hasattr(parent, "coords_table"):
        tab = np.asarray(parent.coords_table())
        keep = list(getattr(layout, "keep", range(tab.shape[2])))
        if hasattr(layout, "tile_shape") and len(layout.tile_shape) != len(keep):
            keep = list(keep)      # broadcast layout: the kept axes decide the element
        tab = tab[:, :, keep]
    elif hasattr(layout, "coords_table"):
        tab = np.asarray(layout.coords_table())
    else:
        return list(range(n)), list(range(n))
    T, V, R = tab.shape
    cols = tab.transpose(1, 0, 2).reshape(V, T * R)
    seen: dict = {}
    reps: list = []
    index_of: list = []
    for v in range(V):
        k = cols[v].tobytes()
        if k not in seen:
            seen[k] = len(reps)
            reps.append(v)
        index_of.append(seen[k])
    _REPLICAS[key] = (layout, reps, index_of)
    return reps, index_of


class ComputeLowering:
    """Mixin of :class:`~.kernel.KernelLowering`: scalars, fragments, MMA, control flow."""

    # ------------------------------------------------------------------ ids, shapes, no-ops
    def op_ave_thread_id(self, op):
        self.set(op.result, self.tid)

    def op_ave_warp_id(self, op):
        self.set(op.result, self.tid // self.k.warp_size)

    def op_ave_lane_id(self, op):
        self.set(op.result, self.tid % self.k.warp_size)

    def op_ave_warp_group_id(self, op):
        self.set(op.result, self.tid // 128)

    def op_ave_program_id(self, op):
        ax = "xyz"[op.attrs["axis"]]
        key = ("program_id", ax)
        s = self.em.cached(key)
        if s is None:
            raw = self.em.op(f"gpu.block_id {ax}", "index", "bid")
            v = self.em.op(f"arith.index_cast {raw} : index to i32", "i32", "bid")
            s = self.em.cache(key, self.em.atom(v, 0, 2 ** 31 - 1))
        self.set(op.result, s)

    def op_ave_num_programs(self, op):
        ax = "xyz"[op.attrs["axis"]]
        raw = self.em.op(f"gpu.grid_dim {ax}", "index")
        v = self.em.op(f"arith.index_cast {raw} : index to i32", "i32")
        self.set(op.result, self.em.atom(v, 1, 2 ** 31 - 1))

    def op_ave_dim(self, op):
        self.set(op.result, self.get(op.operands[0]).sizes[op.attrs["axis"]])

    def op_ave_stride(self, op):
        ten = self.get(op.operands[0])
        ax = op.attrs["axis"]
        if ax == len(ten.sizes) - 1:
            self.set(op.result, 1)
            return
        v = self.em.op(f"arith.trunci {ten.strides[ax]} : i64 to i32", "i32")
        self.set(op.result, self.em.atom(v, 0, 2 ** 31 - 1))

    def op_ave_tag(self, op):
        self.set(op.result, self.get(op.operands[0]))

    def op_ave_assert_conform(self, op):
        pass        # proved by the analysis at compile time; no code

    def op_ave_assert_disjoint(self, op):
        pass

    def op_ave_reset(self, op):
        pass        # only the analysis forgets tags

    def op_ave_assume(self, op):
        pass        # a precondition for the checker (the interpreter checks it); no code

    def op_ave_materialize(self, op):
        self.set(op.result, self.get(op.operands[0]))

    # ------------------------------------------------------------------ constants
    def op_arith_constant(self, op):
        v = op.attrs["value"]
        dt = op.attrs["dtype"]
        t = _mt(dt)
        if t == "i1":
            self.set(op.result, bool(v))
        elif t in FLOATS:
            self.set(op.result, self.em.const(float(v), t))
        else:
            self.set(op.result, int(v))

    # ------------------------------------------------------------------ elementwise
    def _scalar_float(self, x: Any, t: str) -> V:
        if isinstance(x, V) and x.type == t:
            return x
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return self.em.const(float(x), t)
        if isinstance(x, V) and x.type in FLOATS:
            return self.fconvert(x, t)
        if isinstance(x, (Sym, int)):
            iv = materialize(self.em, x)
            return self.em.op(f"arith.sitofp {iv} : i32 to {t}", t)
        raise LoweringError(f"cannot use {x!r} as {t}")

    def _elementwise(self, op, fn) -> None:
        xs = [self.get(v) for v in op.operands]
        rt = op.result.type
        if isinstance(rt, FragmentType):
            n = rt.layout.num_values if rt.layout is not None else 1
            cols = []
            for x in xs:
                if isinstance(x, LFrag):
                    cols.append(x.vals if len(x.vals) == n else x.vals * n)
                else:
                    cols.append([x] * n)
            vals = [fn(*[c[i] for c in cols]) for i in range(n)]
            self.set(op.result, LFrag(rt.dtype, rt.layout, vals))
        else:
            self.set(op.result, fn(*xs))

    def _binop(self, op, iop, fop) -> None:
        t = _mt(op.result.type.dtype)
        is_cmp = op.name == "arith.cmp"
        operand_t = _mt(op.operands[0].type.dtype) if is_cmp else t

        def f(a, b):
            if operand_t in FLOATS:
                if fop is None:
                    raise LoweringError(f"{op.name} on floats is not supported")
                av, bv = self._scalar_float(a, operand_t), self._scalar_float(b, operand_t)
                return fop(av, bv, operand_t)
            if operand_t == "i1":
                return self._bool_op(op.name, a, b)
            return iop(a, b)
        self._elementwise(op, f)

    def _bool_op(self, name: str, a: Any, b: Any) -> Any:
        em = self.em
        if isinstance(a, bool) and isinstance(b, bool):
            return {"arith.and": a and b, "arith.or": a or b, "arith.xor": a != b}[name]
        if name == "arith.and":
            if a is True:
                return b
            if b is True:
                return a
            if a is False or b is False:
                return False
        if name == "arith.or":
            if a is False:
                return b
            if b is False:
                return a
        ins = {"arith.and": "andi", "arith.or": "ori", "arith.xor": "xori"}.get(name)
        if ins is None:
            raise LoweringError(f"{name} on predicates is not supported")
        av = a.v if isinstance(a, Pred) else em.const(bool(a), "i1")
        bv = b.v if isinstance(b, Pred) else em.const(bool(b), "i1")
        return Pred(em.op(f"arith.{ins} {av}, {bv} : i1", "i1"))

    def _fbin(self, ins: str):
        def f(a, b, t):
            return self.em.op(f"arith.{ins} {a}, {b} : {t}", t)
        return f

    def op_arith_add(self, op): self._binop(op, lambda a, b: a + b, self._fbin("addf"))
    def op_arith_sub(self, op): self._binop(op, lambda a, b: a - b, self._fbin("subf"))
    def op_arith_mul(self, op): self._binop(op, lambda a, b: a * b, self._fbin("mulf"))
    def op_arith_div(self, op): self._binop(op, None, self._fbin("divf"))
    def op_arith_floordiv(self, op): self._binop(op, lambda a, b: a // b, None)
    def op_arith_mod(self, op): self._binop(op, lambda a, b: a % b, None)
    def op_arith_and(self, op): self._binop(op, lambda a, b: a & b, None)
    def op_arith_or(self, op): self._binop(op, lambda a, b: a | b, None)
    def op_arith_xor(self, op): self._binop(op, lambda a, b: a ^ b, None)
    def op_arith_shl(self, op): self._binop(op, lambda a, b: a << b, None)
    def op_arith_shr(self, op): self._binop(op, lambda a, b: a >> b, None)

    def op_arith_max(self, op):
        self._binop(op, lambda a, b: self._iminmax(a, b, "maxsi", max),
                    self._fbin("maximumf"))

    def op_arith_min(self, op):
        self._binop(op, lambda a, b: self._iminmax(a, b, "minsi", min),
                    self._fbin("minimumf"))

    def _iminmax(self, a, b, ins, pyf):
        if isinstance(a, int) and isinstance(b, int):
            return pyf(a, b)
        em = self.em
        v = em.op(f"arith.{ins} {materialize(em, a)}, {materialize(em, b)} : i32", "i32")
        return em.atom(v)

    def op_arith_cmp(self, op):
        pred = op.attrs["pred"]
        ipred = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}[pred]
        fpred = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq",
                 "ne": "une"}[pred]
        em = self.em

        def icmp(a, b):
            if isinstance(a, int) and isinstance(b, int):
                return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b,
                        "ne": a != b}[pred]
            d = a - b
            if isinstance(d, int):
                return icmp(d, 0)
            lo, hi = d.range()
            if lo is not None and hi is not None:      # decided by the ranges
                if pred == "lt" and (hi < 0 or lo >= 0):
                    return hi < 0
                if pred == "ge" and (hi < 0 or lo >= 0):
                    return lo >= 0
            return Pred(em.op(f"arith.cmpi {ipred}, {materialize(em, a)}, "
                              f"{materialize(em, b)} : i32", "i1"))

        def fcmp(a, b, t):
            return Pred(em.op(f"arith.cmpf {fpred}, {a}, {b} : {t}", "i1"))
        self._binop(op, icmp, fcmp)

    def op_arith_select(self, op):
        em = self.em
        t = _mt(op.result.type.dtype)

        def f(c, a, b):
            if isinstance(c, bool):
                return a if c else b
            if t in FLOATS:
                av, bv = self._scalar_float(a, t), self._scalar_float(b, t)
                return em.op(f"arith.select {c.v}, {av}, {bv} : {t}", t)
            return self.select_int(c, a, b)
        self._elementwise(op, f)

    def _unary(self, op, fn) -> None:
        t = _mt(op.result.type.dtype)
        self._elementwise(op, lambda x: fn(self._scalar_float(x, t) if t in FLOATS else x, t))

    def op_arith_neg(self, op):
        self._unary(op, lambda x, t: self.em.op(f"arith.negf {x} : {t}", t)
                    if t in FLOATS else -x)

    def op_math_abs(self, op):
        self._unary(op, lambda x, t: self.em.op(f"math.absf {x} : {t}", t))

    def op_math_sqrt(self, op):
        self._unary(op, lambda x, t: self.em.op(f"math.sqrt {x} : {t}", t))

    def op_math_rsqrt(self, op):
        self._unary(op, lambda x, t: self.em.op(f"math.rsqrt {x} : {t}", t))

    def op_math_exp2(self, op):
        self._unary(op, lambda x, t: self.target.exp2(self.em, x, t))

    def op_math_exp(self, op):
        self._unary(op, lambda x, t: self.em.op(f"math.exp {x} : {t}", t))

    def op_math_log(self, op):
        self._unary(op, lambda x, t: self.em.op(f"math.log {x} : {t}", t))

    def op_math_log2(self, op):
        self._unary(op, lambda x, t: self.em.op(f"math.log2 {x} : {t}", t))

    # ------------------------------------------------------------------ conversions
    def fconvert(self, x: V, t: str) -> V:
        """Float conversion with round-to-nearest-even (``arith.truncf``/``extf``)."""
        if x.type == t:
            return x
        width = {"bf16": 16, "f16": 16, "f32": 32, "f64": 64}
        ins = "arith.truncf" if width[t] < width[x.type] else "arith.extf"
        return self.em.op(f"{ins} {x} : {x.type} to {t}", t)

    def convert_values(self, vals: list, src_dt: Any, dst_dt: Any) -> list:
        st, dt = _mt(src_dt), _mt(dst_dt)
        if st == dt:
            return list(vals)
        if st in FLOATS and dt in FLOATS:
            return [self.fconvert(v, dt) for v in vals]
        raise LoweringError(f"conversion {src_dt.name} -> {dst_dt.name} is not supported by "
                            "the code generator yet")

    def op_arith_cast(self, op):
        dt = op.attrs["dtype"]
        t = _mt(dt)
        em = self.em

        def f(x):
            if t in FLOATS:
                return self._scalar_float(x, t)
            if isinstance(x, V) and x.type in FLOATS:
                v = em.op(f"arith.fptosi {x} : {x.type} to i32", "i32")
                return em.atom(v)
            return x
        self._elementwise(op, f)

    # ------------------------------------------------------------------ fragments
    def op_ave_full(self, op):
        t = op.result.type
        et = _mt(t.dtype)
        n = t.layout.num_values if t.layout is not None else 1
        if op.operands:
            x = self.get(op.operands[0])
            v = self._scalar_float(x, et) if et in FLOATS else x
        else:
            v = self.em.const(op.attrs["value"], et) if et in FLOATS else int(op.attrs["value"])
        self.set(op.result, LFrag(t.dtype, t.layout, [v] * n))

    def op_ave_expand_dims(self, op):
        x = self.get(op.operands[0])
        self.set(op.result, LFrag(op.result.type.dtype, op.result.type.layout, list(x.vals)))

    def op_ave_coord(self, op):
        tv = op.attrs["layout"]
        ax = op.attrs["axis"]
        vals = [tv.coord(self.tid, v)[ax] for v in range(tv.num_values)]
        self.set(op.result, LFrag(op.result.type.dtype, tv, vals))

    def op_ave_mma(self, op):
        a, b, c = (self.get(v) for v in op.operands)
        vals = self.target.mma(self, op, a, b, c)
        t = op.result.type
        self.set(op.result, LFrag(t.dtype, t.layout, vals))

    # ------------------------------------------------------------------ control flow
    def _flatten(self, x: Any) -> list:
        if isinstance(x, LFrag):
            reps, _ = replica_groups(x.layout, len(x.vals))
            return [x.vals[r] for r in reps]
        return [x]

    def _as_value(self, x: Any, like_type: str | None = None) -> V:
        em = self.em
        if isinstance(x, V):
            return x
        if isinstance(x, Pred):
            return x.v
        if isinstance(x, bool):
            return em.const(x, "i1")
        if isinstance(x, (Sym, int)):
            if like_type in FLOATS:
                return self._scalar_float(x, like_type)
            return materialize(em, x)
        raise LoweringError(f"cannot carry {x!r} through a loop")

    def _types_of(self, ir_val: Any, x: Any) -> list[str]:
        t = ir_val.type
        et = _mt(t.dtype)
        if isinstance(t, FragmentType):
            n = len(x.vals) if isinstance(x, LFrag) else (
                t.layout.num_values if t.layout is not None else 1)
            reps, _ = replica_groups(t.layout, n)
            return [et] * len(reps)
        return [et]

    def _rebuild(self, ir_val: Any, vals: list) -> Any:
        t = ir_val.type
        et = _mt(t.dtype)
        if isinstance(t, FragmentType):
            n = t.layout.num_values if t.layout is not None else 1
            reps, index_of = replica_groups(t.layout, n)
            # integer and boolean elements are Syms and Preds everywhere else
            if et == "i32":
                vals = [self.em.atom(v) for v in vals]
            elif et == "i1":
                vals = [Pred(v) for v in vals]
            if len(vals) != len(reps):
                return LFrag(t.dtype, t.layout, vals)
            return LFrag(t.dtype, t.layout, [vals[i] for i in index_of])
        v = vals[0]
        if et == "i32":
            return self.em.atom(v)
        if et == "i1":
            return Pred(v)
        return v

    def _bind_results(self, results: list, res: list, types: list) -> None:
        """Bind an scf op's IR results to its flat MLIR results (``%r:N`` -> ``%r#i``)."""
        k = 0
        for r, ts in zip(results, types):
            if len(res) > 1:
                vals = [V(f"{res[0]}#{k + i}", ts[i]) for i in range(len(ts))]
            else:
                vals = [V(res[0], ts[0])]
            k += len(ts)
            self.env[r] = self._rebuild(r, vals)

    def op_scf_for(self, op):
        em = self.em
        lb, ub, st = (self.get(v) for v in op.operands[:3])
        inits = [self.get(v) for v in op.operands[3:]]
        body = op.regions[0]
        types: list[list[str]] = [self._types_of(v, x) for v, x in zip(op.operands[3:], inits)]
        flat_init = []
        for x, ts in zip(inits, types):
            for e, t in zip(self._flatten(x), ts):
                flat_init.append(self._as_value(e, t))
        ftypes = [t for ts in types for t in ts]
        iv = em.fresh("iv")
        args = [em.fresh("it") for _ in flat_init]
        res = [em.fresh("r") for _ in flat_init]
        if not isinstance(st, int):
            raise LoweringError("the step of a loop must be a compile-time integer", op)
        if st == 0:
            raise LoweringError("a loop step of 0 never terminates", op)
        # scf.for counts up (a positive step); Python's range(lb, ub, st) with st < 0 runs
        # i = lb, lb + st, ... while i > ub: the loop over k = -i from -lb to -ub, step -st
        down = st < 0
        if down:
            lb, ub, st = -lb, -ub, -st
        lbv, ubv, stv = (materialize(em, x) for x in (lb, ub, st))
        head = f"scf.for {iv} = {lbv} to {ubv} step {stv}"
        if flat_init:
            its = ", ".join(f"{a} = {x}" for a, x in zip(args, flat_init))
            head = (f"{res[0]}:{len(res)} = " if len(res) > 1 else f"{res[0]} = ") + head
            head += f" iter_args({its}) -> ({', '.join(ftypes)})"
        em.line(head + " : i32 {")
        em.push()
        lo = lb if isinstance(lb, int) else None
        ivs = em.atom(V(iv, "i32"), lo, None)       # lb <= iv (< ub)
        self.env[body.args[0]] = -ivs if down else ivs
        k = 0
        for a, ts in zip(body.args[1:], types):
            vals = [V(args[k + i], ts[i]) for i in range(len(ts))]
            k += len(ts)
            self.env[a] = self._rebuild(a, vals)
        outs = self.exec_block(body) or []
        flat_out = []
        for x, ts in zip(outs, types):
            for e, t in zip(self._flatten(x), ts):
                flat_out.append(self._as_value(e, t))
        if flat_out:
            em.line(f"scf.yield {', '.join(str(x) for x in flat_out)} : {', '.join(ftypes)}")
        em.pop()
        em.line("}")
        self._bind_results(op.results, res, types)

    def op_scf_if(self, op):
        em = self.em
        c = self.get(op.operands[0])
        if isinstance(c, bool):
            outs = self.exec_block(op.regions[0 if c else 1]) or []
            for r, x in zip(op.results, outs):
                self.env[r] = x
            return
        if isinstance(c, (Sym, int)):
            raise LoweringError("an scf.if condition must be a predicate", op)
        types = [self._types_of(r, None) for r in op.results]
        ftypes = [t for ts in types for t in ts]
        res = [em.fresh("if") for _ in ftypes]
        head = f"scf.if {c.v}"
        if ftypes:
            head = (f"{res[0]}:{len(res)} = " if len(res) > 1 else f"{res[0]} = ") + head
            head += f" -> ({', '.join(ftypes)})"
        em.line(head + " {")
        for i, region in enumerate(op.regions):
            if i == 1:
                em.line("} else {")
            em.push()
            outs = self.exec_block(region) or []
            if ftypes:
                flat = []
                for x, ts in zip(outs, types):
                    for e, t in zip(self._flatten(x), ts):
                        flat.append(self._as_value(e, t))
                em.line(f"scf.yield {', '.join(str(x) for x in flat)} : {', '.join(ftypes)}")
            em.pop()
        em.line("}")
        self._bind_results(op.results, res, types)


class FragmentLowering:
    """Mixin: moving fragment values between layouts (registers and warp shuffles)."""

    def _same_thread_map(self, idx: Any, v1: int, what: str, op) -> list:
        """``idx`` (T, V2) flat source indices ``t*V1 + v``: the per-value map when every
        thread reads its own registers in the same pattern."""
        import numpy as np
        T = idx.shape[0]
        own = idx - (np.arange(T)[:, None] * v1)
        if np.any(own < 0) or np.any(own >= v1) or np.any(own != own[0]):
            raise LoweringError(f"{what}: threads would exchange data in a pattern the code "
                                "generator does not support yet", op)
        return own[0].tolist()

    def op_ave_broadcast(self, op):
        from ave_core.compiler.fragments import broadcast_index
        x = self.get(op.operands[0])
        lay = op.operands[0].type.layout
        dst = op.result.type.layout
        t = op.result.type
        parent = getattr(lay, "parent", None)
        if parent is dst or parent == dst:
            self.set(op.result, LFrag(t.dtype, dst, list(x.vals)))
            return
        idx = broadcast_index(parent, dst, op.attrs["keep"], t.shape)
        m = self._same_thread_map(idx, len(x.vals), "this broadcast", op)
        self.set(op.result, LFrag(t.dtype, dst, [x.vals[i] for i in m]))

    def op_ave_convert(self, op):
        import numpy as np
        x = self.get(op.operands[0])
        src = op.operands[0].type.layout
        dst = op.attrs["layout"]
        shape = op.operands[0].type.shape
        ts = np.asarray(src.coords_table())
        td = np.asarray(dst.coords_table())
        T, V1, R = ts.shape
        V2 = td.shape[1]
        sl = np.ravel_multi_index(tuple(ts[:, :, d] for d in range(R)), shape)
        dl = np.ravel_multi_index(tuple(td[:, :, d] for d in range(R)), shape)
        idx = np.empty((T, V2), dtype=np.int64)
        for t in range(T):
            lookup: dict = {}
            for v, k in enumerate(sl[t].tolist()):
                lookup.setdefault(k, v)
            got = [lookup.get(k, -1) for k in dl[t].tolist()]
            if -1 in got:
                raise LoweringError("a layout conversion that moves data between threads is "
                                    "not supported by the code generator yet (only "
                                    "register-only conversions are)", op)
            idx[t] = np.asarray(got) + t * V1
        m = self._same_thread_map(idx, V1, "this conversion", op)
        t = op.result.type
        self.set(op.result, LFrag(t.dtype, dst, [x.vals[i] for i in m]))

    def op_ave_reduce(self, op):
        """Reduction along one axis: within each thread, then a butterfly of warp shuffles
        over the lane bits whose partners hold other elements of the same row (checked on
        the layout's tables: disjoint elements, complete rows). Block-scope reductions
        (across warps) are not lowered yet."""
        import numpy as np
        em = self.em
        x = self.get(op.operands[0])
        src_t = op.operands[0].type
        lay = src_t.layout
        axis = op.attrs["axis"]
        kind = op.attrs["op"]
        tab = np.asarray(lay.coords_table())
        T, NV, R = tab.shape
        keep = [d for d in range(R) if d != axis]
        kshape = tuple(src_t.shape[d] for d in keep)
        key = np.ravel_multi_index(tuple(tab[:, :, d] for d in keep), kshape) if keep \
            else np.zeros((T, NV), dtype=np.int64)
        full = np.ravel_multi_index(tuple(tab[:, :, d] for d in range(R)), src_t.shape)
        # groups of values with the same kept coordinate: the same partition in every thread
        groups: dict = {}
        for v, k in enumerate(key[0].tolist()):
            groups.setdefault(k, []).append(v)
        glist = list(groups.values())
        for t in range(T):
            for g in glist:
                if len(set(key[t, g].tolist())) != 1:
                    raise LoweringError("this reduction's layout groups values differently "
                                        "per thread (not supported by the code generator)", op)
        et = _mt(src_t.dtype)
        fl = et in FLOATS

        def comb(a, b):
            if kind == "sum":
                return em.op(f"arith.{'addf' if fl else 'addi'} {a}, {b} : {et}", et)
            if kind == "max":
                return em.op(f"arith.{'maximumf' if fl else 'maxsi'} {a}, {b} : {et}", et)
            return em.op(f"arith.{'minimumf' if fl else 'minsi'} {a}, {b} : {et}", et)

        vals = [self._as_value(v, et) for v in x.vals]
        red = []
        for g in glist:
            seen = set()
            acc = None
            for v in g:          # replicated copies of one element count once
                if full[0, v] in seen:
                    continue
                seen.add(full[0, v])
                acc = vals[v] if acc is None else comb(acc, vals[v])
            red.append(acc)
        # cross-thread: lane bits whose partner holds other elements of the same rows
        bits = []
        nb = int(T - 1).bit_length()
        for b in range(nb):
            p = np.arange(T) ^ (1 << b)
            if np.any(p >= T):
                continue
            same_key = all(np.array_equal(key[:, g[0]], key[p, g[0]]) for g in glist)
            if not same_key:
                continue
            sets_t = [set(full[t, glist[0]].tolist()) for t in range(T)]
            sets_p = [sets_t[q] for q in p]
            if all(a == c for a, c in zip(sets_t, sets_p)):
                continue                      # a replica of the same elements
            if any(a & c for a, c in zip(sets_t, sets_p)):
                raise LoweringError("this reduction's holders overlap partially (not "
                                    "supported by the code generator)", op)
            bits.append(b)
        ws = self.k.warp_size
        if any((1 << b) >= ws for b in bits):
            raise LoweringError("a reduction across warps (block scope) is not supported by "
                                "the code generator yet", op)
        # completeness: the orbit of each row holds the whole row
        n_axis = src_t.shape[axis]
        orbit = [0]
        for b in bits:
            orbit = orbit + [o ^ (1 << b) for o in orbit]
        for g in glist:
            els = set()
            for o in orbit:
                els |= set(full[o, g].tolist())
            if len(els) != n_axis:
                raise LoweringError(f"this reduction sees {len(els)} of {n_axis} elements of "
                                    "a row in one warp (not supported by the code generator)",
                                    op)
        width = em.const(ws)
        for b in bits:
            off = em.const(1 << b)
            new = []
            for a in red:
                s = em.fresh("sh")
                em.line(f"{s}, {em.fresh('ok')} = gpu.shuffle xor {a}, {off}, {width} : {et}")
                new.append(comb(a, V(s, et)))
            red = new
        out: list = [None] * NV
        for g, r in zip(glist, red):
            for v in g:
                out[v] = r
        t = op.result.type
        self.set(op.result, LFrag(t.dtype, t.layout, out))
