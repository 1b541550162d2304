"""Tiles, addresses and data movement: global/shared tiles, copies, cp.async, loads, stores.

Every access is lowered per thread: the thread's elements of a tile (from a copy's
distribution or a fragment's TV layout) get coordinates as :class:`~.emit.Sym` expressions
of the thread id, then addresses:

* global: ``ptr + sum(coord_d * stride_d)`` in 64-bit, innermost stride 1 (a property of
  every specialization: the launcher refuses other strides);
* shared: ``base + layout(origin + coord) * element_bytes`` (bytes), where a swizzle is
  applied only to the part of the offset below its highest bit, so the stage offset of a
  multi-stage buffer stays an addition (swizzle(H + L) == H + swizzle(L) when H is a multiple
  of 2**bits_needed) and the per-thread rest is loop-invariant.

Element distribution of ``ave.copy``/``ave.copy_async`` (the same as the interpreter's, so
that the checker's race epochs describe the code that runs): the tile's elements are taken
row-major, cut into vectors of ``vector_bytes``, and vector ``j`` is moved by thread
``j % threads``.

Masks are evaluated per vector at its first and last element; a vector is moved whole when
both hold, not at all when the first does not, and element by element in between — exact for
masks that are intervals along the innermost dimension within a vector (``coord < bound``,
``coord >= bound``; what the examples use). Masked-out ``cp.async`` vectors zero-fill
(``src-size`` 0, PTX ISA 8.x §9.7.9.25.3.1) from the tensor's base address.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ave_core.compiler.lower.emit import LoweringError, Pred, Sym, V, materialize, pred_and

import importlib

# the layout module (``ave_core.lang.layout`` the attribute is the layout() function)
L = importlib.import_module("ave_core.lang.layout")

MLIR_TYPES = {"bf16": "bf16", "f16": "f16", "f32": "f32", "f64": "f64", "i32": "i32",
              "i1": "i1", "i8": "i8", "i16": "i16", "i64": "i64", "u8": "i8",
              "fp8e4m3": "i8", "fp8e5m2": "i8"}


def mlir_type(dt: Any) -> str:
    try:
        return MLIR_TYPES[dt.name]
    except KeyError:
        raise LoweringError(f"dtype {dt.name} is not supported by the code generator yet")


@dataclass
class LTensor:
    """A kernel's tensor parameter: pointer, sizes (Sym) and strides (i64 values)."""

    name: str
    dtype: Any
    ptr: V
    sizes: list
    strides: list          # i64 V per dim except the last (innermost stride is 1)
    gather: Any = None     # (dim, index tile/fragment evaluator) for ave.gather views


@dataclass
class LTile:
    """A tile during lowering (mirrors the interpreter's RTile)."""

    space: str
    dtype: Any
    shape: tuple
    tensor: LTensor | None = None
    origin: list = field(default_factory=list)   # per base dim: Sym | int
    dims: tuple = ()
    base: Any = 0             # shared: byte offset (int or Sym) of the base layout's 0
    layout: Any = None


def apply_layout(layout: Any, coords: list) -> Any:
    """Element offset of ``coords`` (ints/Syms) under a shared tile's layout, with swizzles
    applied to the low part only (see the module docstring)."""
    if isinstance(layout, L.ComposedLayout) and isinstance(layout.outer, L.Swizzle):
        x = layout.offset + layout.inner(tuple(coords))
        sw = layout.outer
        hb = 1 << sw.bits_needed
        if isinstance(x, Sym):
            high_terms = {k: c for k, c in x.terms.items() if c % hb == 0}
            low_terms = {k: c for k, c in x.terms.items() if c % hb != 0}
            high = Sym.make(x.em, high_terms, x.const - x.const % hb)
            d = x.const % hb
            low = Sym.make(x.em, low_terms, 0)
            pm = possible_bits(low)
            if d and pm is not None and not (pm & d):
                # T + d == T ^ d (no common bits) and a swizzle is XOR-linear:
                # swizzle(T ^ d) == swizzle(T) ^ swizzle(d): one base per thread, and the
                # constant is XORed last -- after the (loop-variant) stage offset, whose bits
                # lie above the swizzle's, so the XOR stays in the loop instead of one
                # hoisted register per access
                base = high + sw(low)
                if isinstance(high, Sym):
                    return base ^ sw(d)
                return high + (sw(low) ^ sw(d))
            return high + sw(low + d)
        return sw(x)
    return layout(tuple(coords))


def possible_bits(x: Any) -> int | None:
    """A mask of the bits a non-negative linear form can have set, when its terms occupy
    disjoint bit ranges (so the sum has no carries); None when unknown."""
    if isinstance(x, int):
        return x if x >= 0 else None
    m = 0
    for name, c in x.terms.items():
        lo, hi = x.em.ranges.get(name, (None, None))
        if lo is None or hi is None or lo < 0 or c <= 0 or c & (c - 1):
            return None
        tm = ((1 << int(hi).bit_length()) - 1) * c
        if m & tm:
            return None
        m |= tm
    return m


class MemoryLowering:
    """Mixin of :class:`~.kernel.KernelLowering`: tiles and data movement."""

    # ------------------------------------------------------------------ tiles
    def op_ave_global_tile(self, op):
        ten = self.get(op.operands[0])
        offs = self._offsets(op)
        if not isinstance(ten, LTensor):
            raise LoweringError("ave.global_tile of a non-tensor", op)
        self.set(op.result, LTile("global", ten.dtype, tuple(op.attrs["shape"]), tensor=ten,
                                  origin=list(offs), dims=tuple(op.attrs["keep"])))

    def _offsets(self, op) -> list:
        dyn = [self.get(v) for v in op.operands[1:]]
        return [dyn[o[1]] if isinstance(o, tuple) else o for o in op.attrs["offsets"]]

    def op_ave_subtile(self, op):
        src: LTile = self.get(op.operands[0])
        offs = self._offsets(op)
        origin = list(src.origin)
        for ld, off in enumerate(offs):
            origin[src.dims[ld]] = origin[src.dims[ld]] + off
        dims = tuple(src.dims[ld] for ld in op.attrs["keep"])
        self.set(op.result, LTile(src.space, src.dtype, tuple(op.attrs["shape"]), src.tensor,
                                  origin, dims, src.base, src.layout))

    def op_ave_transpose(self, op):
        src: LTile = self.get(op.operands[0])
        perm = op.attrs["perm"]
        self.set(op.result, LTile(src.space, src.dtype, tuple(src.shape[p] for p in perm),
                                  src.tensor, list(src.origin), tuple(src.dims[p] for p in perm),
                                  src.base, src.layout))

    def op_ave_alloc(self, op):
        if op.attrs["space"] != "shared":
            raise LoweringError("register tiles (ave.alloc(space='register')) are not "
                                "supported by the code generator yet", op)
        lo, _ = self.shared_plan[id(op)]
        shape = tuple(op.attrs["shape"])
        self.set(op.result, LTile("shared", op.attrs["dtype"], shape, origin=[0] * len(shape),
                                  dims=tuple(range(len(shape))), base=lo,
                                  layout=op.attrs["layout"]))

    def op_ave_view(self, op):
        src: LTile = self.get(op.operands[0])
        addr = self.shared_byte(src, [0] * len(src.shape))
        shape = tuple(op.attrs["shape"])
        self.set(op.result, LTile("shared", op.attrs["dtype"], shape, origin=[0] * len(shape),
                                  dims=tuple(range(len(shape))), base=addr,
                                  layout=op.attrs["layout"]))

    # ------------------------------------------------------------------ addresses
    def base_coords(self, t: LTile, coords: list) -> list:
        bc = list(t.origin)
        for ld, bd in enumerate(t.dims):
            bc[bd] = bc[bd] + coords[ld]
        return bc

    def shared_byte(self, t: LTile, coords: list) -> Any:
        off = apply_layout(t.layout, self.base_coords(t, coords))
        return t.base + off * t.dtype.bytes

    def shared_ptr(self, byte: Any) -> V:
        em = self.em
        b = materialize(em, byte)
        return em.op(f"llvm.getelementptr {self.smem_base}[{b}] : (!llvm.ptr<3>, i32) -> "
                     f"!llvm.ptr<3>, i8", "!llvm.ptr<3>", "sp")

    def global_coords(self, t: LTile, coords: list) -> list:
        """Tensor coordinates of tile coordinates; a gathered dimension is looked up in its
        index (``-1`` outside the index, as in the interpreter)."""
        tc = self.base_coords(t, coords)
        ten = t.tensor
        if ten.gather is not None:
            gd, lookup = ten.gather
            ld = t.dims.index(gd) if gd in t.dims else None
            tc[gd] = lookup(tc[gd], self._numeric_dim(t, coords, ld, gd))
        return tc

    @contextlib.contextmanager
    def numeric(self, sym_coords: list, num_coords: list):
        """Within: ``sym_coords`` (tile coordinates, Syms) are known per thread as the numpy
        arrays ``num_coords`` (shape (T,)): what a gather through a fragment needs."""
        saved = getattr(self, "_numctx", None)
        self._numctx = (list(sym_coords), [np.asarray(c) for c in num_coords])
        try:
            yield
        finally:
            self._numctx = saved

    def _numeric_dim(self, t: LTile, coords: list, ld: Any, gd: int) -> Any:
        ctx = getattr(self, "_numctx", None)
        if ctx is None or ld is None:
            return None
        base, num = ctx
        delta = coords[ld] - base[ld]
        origin = t.origin[gd]
        if not isinstance(delta, int) or not isinstance(origin, int):
            return None
        return origin + num[ld] + delta

    def op_ave_gather(self, op):
        em = self.em
        ten: LTensor = self.get(op.operands[0])
        idx = self.get(op.operands[1])
        dim = op.attrs["dim"]
        from ave_core.compiler.lower.compute import LFrag
        if isinstance(idx, LTile):
            n = idx.shape[0]

            def lookup(r, num, idx=idx, n=n):
                lo, hi = r.range() if isinstance(r, Sym) else (r, r)
                inside = lo is not None and hi is not None and lo >= 0 and hi < n
                rr = r
                if not inside:
                    rr = self.select_int(pred_and(em, [r >= 0, r < n]) or True, r, 0) \
                        if isinstance(r, Sym) else min(max(r, 0), n - 1)
                p = self.elem_ptr(idx, [rr])
                pt = self._ptr_type(idx)
                v = em.atom(em.op(f"llvm.load {p} : {pt} -> i32", "i32"))
                if inside:
                    return v
                ok = pred_and(em, [r >= 0, r < n]) if isinstance(r, Sym) else (0 <= r < n)
                return self.select_int(ok, v, -1) if not isinstance(ok, bool) else (
                    v if ok else -1)
        elif isinstance(idx, LFrag):
            tv = op.operands[1].type.layout
            tab = np.asarray(tv.coords_table())[:, :, 0]          # (T, V): element held

            def lookup(r, num, idx=idx, tab=tab):
                if num is None:
                    raise LoweringError("a gather through a register fragment needs each "
                                        "thread's rows at compile time", op)
                T = tab.shape[0]
                num = np.broadcast_to(np.asarray(num), (T,))
                vs = []
                for t in range(T):
                    hit = np.nonzero(tab[t] == num[t])[0]
                    if not len(hit):
                        raise LoweringError(f"thread {t} needs index element {int(num[t])} "
                                            "that it does not hold", op)
                    vs.append(int(hit[0]))
                if len(set(vs)) != 1:
                    raise LoweringError("the index register a thread needs differs between "
                                        "threads (not supported by the code generator)", op)
                return idx.vals[vs[0]]
        else:
            raise LoweringError("a gather index must be a tile or a fragment", op)
        self.set(op.result, LTensor(ten.name, ten.dtype, ten.ptr, ten.sizes, ten.strides,
                                    (dim, lookup)))

    op_ave_scatter = op_ave_gather

    def global_ptr(self, t: LTile, tc: list) -> V:
        """Pointer to the tensor element at tensor coordinates ``tc`` (ints/Syms)."""
        em = self.em
        ten = t.tensor
        acc = None
        for d, c in enumerate(tc):
            cv = materialize(em, c)
            c64 = em.op(f"arith.extsi {cv} : i32 to i64", "i64")
            term = c64 if d == len(tc) - 1 else em.op(
                f"arith.muli {c64}, {ten.strides[d]} : i64", "i64")
            acc = term if acc is None else em.op(f"arith.addi {acc}, {term} : i64", "i64")
        et = mlir_type(ten.dtype)
        return em.op(f"llvm.getelementptr {ten.ptr}[{acc}] : (!llvm.ptr<1>, i64) -> "
                     f"!llvm.ptr<1>, {et}", "!llvm.ptr<1>", "gp")

    def eval_mask(self, op, t: LTile, coords: list) -> Any:
        """The mask region at ``coords`` (tile coordinates): a Pred, or True."""
        if not op.attrs.get("masked"):
            return True
        args = self.global_coords(t, coords) if t.space == "global" else list(coords)
        return self.exec_mask_region(op.regions[0], args)

    # ------------------------------------------------------------------ copies
    def copy_plan(self, op, src: LTile) -> tuple[int, int, list]:
        """(elements per vector, vectors, [(slot, guard)]) of this thread."""
        shape = src.shape
        n_el = int(np.prod(shape))
        vb = op.attrs["vector_bytes"]
        nv = max(1, vb // src.dtype.bytes)
        if n_el % nv:
            raise LoweringError(f"a tile of {n_el} elements is not a whole number of "
                                f"{vb}-byte vectors", op)
        nthreads = self.T
        if op.attrs.get("threads") is not None:
            nthreads = int(op.attrs["threads"].size)
        nvec = n_el // nv
        return nv, nvec, nthreads

    def vector_coords(self, shape: tuple, lin: Any) -> list:
        out = []
        rest = lin
        for d in range(len(shape) - 1, -1, -1):
            out.append(rest % shape[d] if d > 0 else rest)
            rest = rest // shape[d]
        return out[::-1]

    def _copy(self, op, asynchronous: bool) -> None:
        em = self.em
        src: LTile = self.get(op.operands[0])
        dst: LTile = self.get(op.operands[1])
        nv, nvec, nthreads = self.copy_plan(op, src)
        if src.shape[-1] % nv or dst.shape[-1] % nv:
            raise LoweringError("a copy's vectors must not cross the innermost dimension", op)
        eb = src.dtype.bytes
        tid = self.tid
        on_dst = op.attrs.get("mask_side") == "dst"
        for n in range((nvec + nthreads - 1) // nthreads):
            j = tid + n * nthreads
            guards = []
            if nthreads < self.T:
                guards.append(tid < nthreads)
            if (n + 1) * nthreads > nvec:
                guards.append(j < nvec)
            g = pred_and(em, guards)
            jn = np.minimum(np.arange(self.T) + n * nthreads, nvec - 1)
            c0n = self.vector_coords(src.shape, jn * nv)
            with self.guarded(g):
                c0 = self.vector_coords(src.shape, j * nv)
                self._numctx = (list(c0), [np.asarray(c) for c in c0n])   # see numeric()
                c1 = c0[:-1] + [c0[-1] + (nv - 1)]
                mt = dst if on_dst else src
                m0 = self.eval_mask(op, mt, c0)
                m1 = self.eval_mask(op, mt, c1) if nv > 1 else m0
                if asynchronous:
                    self._cp_async(op, src, dst, c0, nv, eb, m0, m1, on_dst)
                else:
                    self._copy_vector(op, src, dst, c0, nv, eb, m0, m1, on_dst)
                self._numctx = None

    def _cp_async(self, op, src, dst, c0, nv, eb, m0, m1, on_dst) -> None:
        em = self.em
        if src.space != "global" or dst.space != "shared":
            raise LoweringError("ave.copy_async moves global memory to shared memory", op)
        if on_dst:
            raise LoweringError("a cp.async mask guards the global side", op)
        vb = nv * eb
        if vb not in (4, 8, 16):
            raise LoweringError(f"cp.async moves 4, 8 or 16 bytes, not {vb}", op)
        dptr = self.shared_ptr(self.shared_byte(dst, c0))
        sptr = self.global_ptr(src, self.global_coords(src, c0))
        cache = "cg" if vb == 16 else "ca"
        if m0 is True and m1 is True:
            size = em.const(vb)
        else:
            size = self._valid_bytes(op, src, c0, nv, eb, m0, m1)
            ok = m0 if m0 is not True else None
            if ok is not None:
                sptr = em.op(f"arith.select {ok.v}, {sptr}, {src.tensor.ptr} : !llvm.ptr<1>",
                             "!llvm.ptr<1>")
        em.line(f"nvvm.cp.async.shared.global {dptr}, {sptr}, {vb}, cache = {cache}, "
                f"{size} : !llvm.ptr<3>, !llvm.ptr<1>, i32")

    def _valid_bytes(self, op, src, c0, nv, eb, m0, m1) -> V:
        """Bytes to read for a masked vector: all, none, or the leading valid elements."""
        em = self.em
        full = em.const(nv * eb)
        zero = em.const(0)
        if nv == 1:
            return em.op(f"arith.select {m0.v}, {full}, {zero} : i32", "i32")
        # whole (first and last valid), none (first invalid), or -- rarely, in a branch --
        # the leading valid elements (an interval starting at element 0)
        whole = em.op(f"arith.select {m1.v if m1 is not True else em.const(True, 'i1')}, "
                      f"{full}, {zero} : i32", "i32") if m1 is not True else full
        if m0 is True:
            first_ok = em.const(True, "i1")
        else:
            first_ok = m0.v
        last_bad = em.op(f"arith.xori {m1.v}, {em.const(True, 'i1')} : i1", "i1") \
            if m1 is not True else em.const(False, "i1")
        partial = em.op(f"arith.andi {first_ok}, {last_bad} : i1", "i1")
        res = em.fresh("vb")
        em.line(f"{res} = scf.if {partial} -> (i32) {{")
        em.push()
        cnt = None
        for e in range(nv):
            ce = c0[:-1] + [c0[-1] + e]
            me = m0 if e == 0 else (m1 if e == nv - 1 else self.eval_mask(op, src, ce))
            if me is True:
                b = em.const(1)
            else:
                b = em.op(f"arith.extui {me.v} : i1 to i32", "i32")
            cnt = b if cnt is None else em.op(f"arith.addi {cnt}, {b} : i32", "i32")
        nb = em.op(f"arith.muli {cnt}, {em.const(eb)} : i32", "i32")
        em.line(f"scf.yield {nb} : i32")
        em.pop()
        em.line("} else {")
        em.push()
        sel = whole if m0 is True else em.op(f"arith.select {m0.v}, {whole}, {zero} : i32", "i32")
        em.line(f"scf.yield {sel} : i32")
        em.pop()
        em.line("}")
        return V(res, "i32")

    def _copy_vector(self, op, src, dst, c0, nv, eb, m0, m1, on_dst) -> None:
        """A synchronous copy of one vector (global or shared to global or shared)."""
        other = op.attrs.get("other", 0)
        vals = self.read_vector(src, c0, nv, m0 if not on_dst else True,
                                m1 if not on_dst else True, other, op)
        self.write_vector(dst, c0, vals, m0 if on_dst else True, m1 if on_dst else True, op)

    # ------------------------------------------------------------------ vectors
    def elem_ptr(self, t: LTile, coords: list) -> V:
        if t.space == "global":
            return self.global_ptr(t, self.global_coords(t, coords))
        return self.shared_ptr(self.shared_byte(t, coords))

    def _ptr_type(self, t: LTile) -> str:
        return "!llvm.ptr<1>" if t.space == "global" else "!llvm.ptr<3>"

    def read_vector(self, t: LTile, c0: list, nv: int, m0: Any, m1: Any, other: Any,
                    op) -> list:
        """Load ``nv`` consecutive elements (innermost dim) at ``c0``; masked-out ones take
        ``other``. Returns a list of scalar values."""
        em = self.em
        et = mlir_type(t.dtype)
        vt = f"vector<{nv}x{et}>"
        pt = self._ptr_type(t)
        align = nv * t.dtype.bytes

        def whole() -> list:
            p = self.elem_ptr(t, c0)
            if nv == 1:
                return [em.op(f"llvm.load {p} {{alignment = {align} : i64}} : {pt} -> {et}", et)]
            v = em.op(f"llvm.load {p} {{alignment = {align} : i64}} : {pt} -> {vt}", vt)
            return [em.op(f"llvm.extractelement {v}[{em.const(i, 'i32')} : i32] : {vt}", et)
                    for i in range(nv)]

        if m0 is True and m1 is True:
            return whole()
        oth = em.const(other, et)
        full = pred_and(em, [m0, m1])
        # scf.if: whole vector when fully valid, else element by element
        res_types = ", ".join([et] * nv)
        names = [em.fresh("ld") for _ in range(nv)]
        em.line(f"{', '.join(names) if nv > 1 else names[0]} = scf.if {full.v} -> ({res_types}) {{"
                if nv > 1 else f"{names[0]} = scf.if {full.v} -> ({et}) {{")
        em.push()
        vals = whole()
        em.line(f"scf.yield {', '.join(str(v) for v in vals)} : {res_types}")
        em.pop()
        em.line("} else {")
        em.push()
        outs = []
        for e in range(nv):
            ce = c0[:-1] + [c0[-1] + e]
            me = self.eval_mask(op, t, ce)
            if me is True:
                p = self.elem_ptr(t, ce)
                outs.append(em.op(f"llvm.load {p} : {pt} -> {et}", et))
                continue
            r = em.fresh("le")
            em.line(f"{r} = scf.if {me.v} -> ({et}) {{")
            em.push()
            p = self.elem_ptr(t, ce)
            x = em.op(f"llvm.load {p} : {pt} -> {et}", et)
            em.line(f"scf.yield {x} : {et}")
            em.pop()
            em.line("} else {")
            em.push()
            em.line(f"scf.yield {oth} : {et}")
            em.pop()
            em.line("}")
            outs.append(V(r, et))
        em.line(f"scf.yield {', '.join(str(v) for v in outs)} : {res_types}")
        em.pop()
        em.line("}")
        return [V(n if nv > 1 else names[0], et) for n in names]

    def write_vector(self, t: LTile, c0: list, vals: list, m0: Any, m1: Any, op) -> None:
        """Store consecutive elements (innermost dim) at ``c0`` under the op's mask."""
        em = self.em
        nv = len(vals)
        et = mlir_type(t.dtype)
        vt = f"vector<{nv}x{et}>"
        pt = self._ptr_type(t)
        align = nv * t.dtype.bytes

        def whole() -> None:
            p = self.elem_ptr(t, c0)
            if nv == 1:
                em.line(f"llvm.store {vals[0]}, {p} {{alignment = {align} : i64}} : {et}, {pt}")
                return
            v = em.op(f"llvm.mlir.undef : {vt}", vt)
            for i, x in enumerate(vals):
                v = em.op(f"llvm.insertelement {x}, {v}[{em.const(i)} : i32] : {vt}", vt)
            em.line(f"llvm.store {v}, {p} {{alignment = {align} : i64}} : {vt}, {pt}")

        if m0 is True and m1 is True:
            whole()
            return
        full = pred_and(em, [m0, m1])
        em.line(f"scf.if {full.v} {{")
        em.push()
        whole()
        em.pop()
        em.line("} else {")
        em.push()
        for e in range(nv):
            ce = c0[:-1] + [c0[-1] + e]
            me = self.eval_mask(op, t, ce)
            if me is True:
                em.line(f"llvm.store {vals[e]}, {self.elem_ptr(t, ce)} : {et}, {pt}")
                continue
            em.line(f"scf.if {me.v} {{")
            em.push()
            em.line(f"llvm.store {vals[e]}, {self.elem_ptr(t, ce)} : {et}, {pt}")
            em.pop()
            em.line("}")
        em.pop()
        em.line("}")

    # ------------------------------------------------------------------ ops
    def op_ave_copy(self, op):
        self._copy(op, asynchronous=False)

    def op_ave_copy_async(self, op):
        self._copy(op, asynchronous=True)

    def op_ave_commit_async(self, op):
        self.target.commit_group(self.em)

    def op_ave_wait_async(self, op):
        self.target.wait_group(self.em, op.attrs["n"])

    def op_ave_barrier(self, op):
        self.target.barrier(self.em)

    def op_ave_sched_barrier(self, op):
        self.target.sched_barrier(self.em, op.attrs.get("mask", 0))

    # ------------------------------------------------------------------ fragments <-> tiles
    def frag_runs(self, tv: Any, tile: LTile, vector_bytes: int | None) -> list:
        """Group a TV layout's values into runs that are consecutive along the tile's
        innermost dimension for every thread: [(first value, length)]."""
        tab = np.asarray(tv.coords_table())          # (T, V, R)
        T, Vn, R = tab.shape
        eb = tile.dtype.bytes
        maxn = max(1, (vector_bytes or eb) // eb)
        runs = []
        v = 0
        while v < Vn:
            n = 1
            while (n < maxn and v + n < Vn
                   and np.all(tab[:, v + n, :R - 1] == tab[:, v, :R - 1])
                   and np.all(tab[:, v + n, R - 1] == tab[:, v, R - 1] + n)):
                n += 1
            # keep runs a power of two and aligned in the innermost coordinate
            while n > 1 and (n & (n - 1) or np.any(tab[:, v, R - 1] % n)):
                n -= 1
            runs.append((v, n))
            v += n
        return runs

    def op_ave_load(self, op):
        src: LTile = self.get(op.operands[0])
        tv = op.attrs["layout"]
        if op.attrs.get("ldmatrix"):
            vals, packed = self.target.ldmatrix(self, op, src, tv)
            fr = self.frag(op.result.type, vals)
            fr.packed = packed
            self.set(op.result, fr)
            return
        em = self.em
        vals: list = [None] * tv.num_values
        other = op.attrs.get("other", 0)
        tabn = np.asarray(tv.coords_table())
        for v0, n in self.frag_runs(tv, src, op.attrs.get("vector_bytes")):
            c0 = list(tv.coord(self.tid, v0))
            with self.numeric(c0, [tabn[:, v0, d] for d in range(tabn.shape[2])]):
                m0 = self.eval_mask(op, src, c0)
                m1 = m0 if n == 1 else self.eval_mask(op, src, c0[:-1] + [c0[-1] + (n - 1)])
                got = self.read_vector(src, c0, n, m0, m1, other, op)
            if src.dtype.name == "i32":         # integers take part in index arithmetic
                got = [em.atom(g) for g in got]
            vals[v0:v0 + n] = got
        self.set(op.result, self.frag(op.result.type, vals))

    def op_ave_store(self, op):
        dst: LTile = self.get(op.operands[0])
        fr = self.get(op.operands[1])
        tv = op.operands[1].type.layout
        em = self.em
        et = mlir_type(dst.dtype)
        # integer and boolean fragments hold folded Syms / ints / Preds: emit them as values
        cvt = [self._as_value(x, et) for x in self.convert_values(fr.vals, fr.dtype, dst.dtype)]
        # a replicated layout writes each element from its first holder only
        tab = np.asarray(tv.coords_table())
        T, Vn, R = tab.shape
        lin = np.ravel_multi_index(tuple(tab[:, :, d].reshape(-1) for d in range(R)),
                                   tv.tile_shape).reshape(T, Vn)
        first = np.full(int(np.prod(tv.tile_shape)), -1, dtype=np.int64)
        order = np.arange(T * Vn)
        first[lin.reshape(-1)[::-1]] = order[::-1]
        owner = (first[lin] == order.reshape(T, Vn))      # (T, V): does (t, v) write?
        for v0, n in self.frag_runs(tv, dst, op.attrs.get("vector_bytes")):
            w = owner[:, v0:v0 + n]
            if not w.any():
                continue
            c0 = list(tv.coord(self.tid, v0))
            with self.numeric(c0, [tab[:, v0, d] for d in range(R)]):
                m0 = self.eval_mask(op, dst, c0)
                m1 = m0 if n == 1 else self.eval_mask(op, dst, c0[:-1] + [c0[-1] + (n - 1)])
                if not w.all():
                    own = self.thread_set_pred(w.all(axis=1))
                    m0 = pred_and(em, [m0, own]) or True
                    m1 = pred_and(em, [m1, own]) or True
                self.write_vector(dst, c0, cvt[v0:v0 + n], m0, m1, op)

    def thread_set_pred(self, mask: np.ndarray) -> Any:
        """A Pred that holds for the threads where ``mask`` (length T) is True."""
        if mask.all():
            return True
        idx = np.nonzero(mask)[0]
        # a contiguous range of threads, or a condition on bits of the thread id
        if idx[-1] - idx[0] + 1 == len(idx):
            ps = []
            if idx[0] > 0:
                ps.append(self.tid >= int(idx[0]))
            if idx[-1] < self.T - 1:
                ps.append(self.tid <= int(idx[-1]))
            return pred_and(self.em, ps)
        T = len(mask)
        t = np.arange(T)
        bits = 0
        for b in range(int(T - 1).bit_length()):
            p = t ^ (1 << b)
            ok = p < T
            if np.any(mask[t[ok]] != mask[p[ok]]):
                bits |= 1 << b
        want = int(idx[0]) & bits
        if np.array_equal(mask, (t & bits) == want):
            em = self.em
            v = em.op(f"arith.andi {self.tid.value()}, {em.const(bits)} : i32", "i32")
            return Pred(em.op(f"arith.cmpi eq, {v}, {em.const(want)} : i32", "i1"))
        raise LoweringError("this fragment's replication pattern is not supported by the "
                            "code generator yet")


__all__ = ["LTensor", "LTile", "MemoryLowering", "apply_layout", "mlir_type", "Pred"]
