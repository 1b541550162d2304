"""Full unrolling of Ave IR loops, with constant folding (the analysis' view of a kernel).

The front end keeps loops structured (``scf.for``) so that code generation can emit real
loops; the checker needs every iteration spelled out, because what goes wrong in a
software pipeline goes wrong in its prologue, its steady state or its epilogue.

* A loop whose bounds are compile-time constants (after folding) is unrolled exactly.
* A loop whose trip count is a runtime value (``for kt in ave.range(0, KT)``) is unrolled
  for one chosen trip count ``n``; :func:`unrolled_variants` produces one kernel per
  ``n`` in ``1..T`` (``T = STAGES + 2`` by default: a pipeline's prologue, steady state and
  epilogue all appear), so results read "proved for trip counts <= T". When the lower
  bound is a constant and the step is 1 (or -1), the loop's upper-bound value itself is
  bound to ``lb + n * step`` everywhere in the kernel (so ``if kt + STAGES - 1 < KT``
  folds); with a longer step it stays a runtime value, constrained to the interval that
  gives ``n`` iterations (``trip_preconditions``).
* ``scf.if`` with a condition that folds to a constant is replaced by the taken branch.

Every op of the result carries ``attrs["loop_indices"]``: the ``(name, value)`` pairs of
the loops it was unrolled from, outermost first (the witness' "kt=2"): the loop variable's
value in that iteration (``ave.range(1, KT + 1)``'s first iteration is ``kt=1``), or the
0-based iteration number when the loop starts at a value known only at run time (then the
iteration's ``start + i * step`` is an ``arith.add`` with ``attrs["loop_iv"]``: the
analysis names the iteration by that value for a witness' sizes, ``Engine.shown``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

from ave_core.compiler.ir import (Block, FragmentType, KernelIR, Op, ScalarType, TileType,
                                  Value)
from ave_core.lang import dtypes as _dt

#: Default cap on the number of unrolled variants of one kernel (product of trip counts).
MAX_VARIANTS = 256
#: Cap on the number of ops of one unrolled kernel. The examples and review kernels unroll
#: to at most ~11,500 ops (trip-count bound 16); the analysis takes ~0.3-1 ms per op, so a
#: kernel past this cap could not be checked on save anyway (cloning up to it takes a few
#: seconds where the loops' sizes are not known before; a correct kernel of 98,400 ops
#: took 37 s to check under a cap of 100,000). (It was 2,000,000: a loop of
#: 10**6 constant trips took 100 s and 4 GB to be refused; a review helper.)
MAX_UNROLLED_OPS = 50_000
#: An op moving data (a copy, load, store, ldmatrix, MMA, an op on register fragments)
#: counts one more op toward :data:`MAX_UNROLLED_OPS` per this many elements of its
#: largest tile or fragment: the analysis' time per op grows with the tile (~0.15 ms for
#: a 32x32 f32 copy, ~0.9 ms for 128x128), and 25,000 copies of 128x128 tiles with as
#: many barriers fit the plain cap and took ~45 s to check. The examples' big ops count 3
#: to 9; they unroll to at most ~4,600 weighted ops (flash attention, trip bound 16).
ELEMENTS_PER_OP = 2048
#: ops that move or compute data (their weight grows with the tile; see ELEMENTS_PER_OP)
_DATA_OPS = frozenset({"ave.copy", "ave.copy_async", "ave.load", "ave.store",
                       "ave.ldmatrix", "ave.mma"})


class UnrollError(Exception):
    """Unrolling exceeded a limit or met a loop it cannot unroll."""


_FOLD = {
    "arith.add": lambda a, b: a + b, "arith.sub": lambda a, b: a - b,
    "arith.mul": lambda a, b: a * b,
    "arith.floordiv": lambda a, b: a // b if b else None,
    "arith.mod": lambda a, b: a % b if b else None,
    "arith.and": lambda a, b: a & b, "arith.or": lambda a, b: a | b,
    "arith.xor": lambda a, b: a ^ b, "arith.shl": lambda a, b: a << b if 0 <= b < 64 else None,
    "arith.shr": lambda a, b: a >> b if 0 <= b < 64 else None,
    "arith.min": min, "arith.max": max,
}
_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def loop_names(kernel: KernelIR) -> dict[int, str]:
    """``id(scf.for)`` -> the name its iterations carry in ``loop_indices`` (witnesses,
    trip counts): the loop variable's, and for a later loop of the kernel with the same
    variable (``for kt in range(2)`` then ``for kt in ave.range(0, KT)``; a helper with a
    loop inlined twice) the name with ``#2``, ``#3``... -- the two were told apart by
    nothing, so a runtime loop's trip constraints could not be used for either (false
    findings at sizes the loop does not run; a review helper)."""
    seen: dict[str, int] = {}
    out: dict[int, str] = {}
    for o in kernel.walk():
        if o.name == "scf.for":
            nm = o.attrs.get("iv_name", "i")
            seen[nm] = seen.get(nm, 0) + 1
            out[id(o)] = nm if seen[nm] == 1 else f"{nm}#{seen[nm]}"
    return out


def runtime_loops(kernel: KernelIR) -> list[Op]:
    """The ``scf.for`` ops whose trip count is not a compile-time constant."""
    consts = _const_values(kernel.body)
    out = []
    for op in kernel.walk():
        if op.name == "scf.for":
            lb, ub, st = op.operands[:3]
            if not all(v in consts for v in (lb, ub, st)):
                out.append(op)
    return out


def trip_count(lo: int, hi: int, step: int) -> int:
    """How many times ``range(lo, hi, step)`` runs (``step != 0``)."""
    return max(0, -(-(hi - lo) // step)) if step > 0 else max(0, -(-(lo - hi) // -step))


def default_trip_bound(kernel: KernelIR) -> int:
    """``T = STAGES + 2``, the pipeline's depth plus its fill and drain: ``STAGES`` is the
    kernel's constexpr of that name; without one, the number of shared-memory buffers a
    runtime loop cycles through (:func:`pipeline_buffers`: ``sK[j % 2]`` -> 2); without
    those either, the deepest ``wait_async(n)`` + 2 (the GEMM idiom ``wait_async(STAGES -
    2)``)."""
    st = kernel.constexprs.get("STAGES")
    if isinstance(st, int) and st > 0:
        return st + 2
    nb = pipeline_buffers(kernel)
    if nb is not None:
        return nb + 2
    waits = [op.attrs.get("n", 0) for op in kernel.ops("ave.wait_async")]
    return (max(waits) + 2 if waits else 1) + 2


def pipeline_buffers(kernel: KernelIR) -> int | None:
    """The buffers of a software pipeline: the largest constant ``m`` of an ``i % m`` that
    selects the shared-memory subtile an ``ave.copy_async`` in a runtime loop writes
    (``sK[j % 2]``, ``sA[(kt + 2) % 3]``), or None when some asynchronous copy of such a
    loop writes a buffer not selected that way (a ring indexed otherwise, one buffer), or
    there is none.

    The deepest ``wait_async(n)`` overstates the depth when a stage commits several groups:
    flash attention commits K and V separately and waits ``wait_async(1)`` on a double
    buffer (``sK[j % 2]``), two stages, not three (every flash-attention mutant of
    benchmarks/_mutate.py gets the same findings for trip counts up to 4 as up to 5). Only
    the copies' own buffers count: a scratch double buffer ``sX[j % 2]`` beside a deeper
    ring indexed without ``%`` lowered the bound below the ring's depth, and a read of a
    stage nothing wrote, at the fifth trip, went unreported (a review helper)."""
    best = None
    top = _const_values(kernel.body)
    for loop in runtime_loops(kernel):
        consts: dict = dict(top)
        mods: dict = {}
        dsts: list = []
        for op in loop.walk():
            if op.name == "arith.constant" and op.results:
                consts[op.results[0]] = op.attrs.get("value")
            elif op.name == "arith.mod" and len(op.operands) == 2:
                m = consts.get(op.operands[1])
                if isinstance(m, int) and not isinstance(m, bool) and m > 1:
                    mods[op.results[0]] = m
            elif op.name == "ave.copy_async" and len(op.operands) > 1:
                dsts.append(op.operands[1])
        for v in dsts:
            m = None
            o = getattr(v, "owner", None)
            while isinstance(o, Op) and o.name in ("ave.subtile", "ave.transpose", "ave.view"):
                if o.name == "ave.subtile" and \
                        getattr(o.operands[0].type, "space", None) == "shared":
                    for x in o.operands[1:]:
                        if x in mods:
                            m = max(m or 0, mods[x])
                v = o.operands[0]
                o = getattr(v, "owner", None)
            if m is None:
                return None
            best = max(best or 0, m)
    return best


def _const_values(block: Block, out: dict | None = None) -> dict[Value, Any]:
    """The constants of ``block`` and of every region nested in it (a loop nested in a
    runtime loop has its bounds' constants in the outer body: it got no trip-count
    precondition, so its zero trips and its iterations' trip constraints were unknown --
    a review helper)."""
    out = {} if out is None else out
    for op in block.ops:
        if op.name == "arith.constant":
            out[op.result] = op.attrs["value"]
        for reg in op.regions:
            _const_values(reg, out)
    return out


@dataclass
class _Ctx:
    vmap: dict
    consts: dict
    bindings: dict
    trip_counts: dict
    loop_stack: tuple
    n_ops: int = 0
    memo: dict | None = None
    preconditions: list = field(default_factory=list)
    body_info: dict = field(default_factory=dict)
    #: id(scf.for) -> its name in loop_indices (see loop_names)
    loop_names: dict = field(default_factory=dict)


def unroll(kernel: KernelIR, trip_counts: dict[Op, int] | None = None,
           memo: dict | None = None, bind: bool = True) -> KernelIR:
    """Return a copy of ``kernel`` with every ``scf.for`` unrolled.

    Args:
        kernel: the front end's kernel.
        trip_counts: for each runtime loop (an op of ``kernel``), the trip count to unroll
            it for. Runtime loops without an entry raise :class:`UnrollError`.

        bind: bind each runtime loop's upper bound to its value for the trip count (step
            +-1, constant start; the default). Without: every bound stays a runtime value
            (the forms of all loops' bounds at once, for :func:`ave_core.analysis`'s
            filter of trip-count combinations: a bound bound to 1 made the forms of the
            loops computed from it hold for one trip only; a review helper).
        memo: shared between the unrollings of one kernel for several trip counts: an op
            whose source op, loop indices and operands are the same is the same object in
            every variant, so that variants share their common prefix (the analysis then
            resumes each variant where it departs from the previous one).

    Raises:
        UnrollError: a runtime loop without a trip count, a non-constant step, or more
            than :data:`MAX_UNROLLED_OPS` ops.
    """
    ctx = _Ctx({}, {}, {}, dict(trip_counts or {}), (), memo=memo)
    names = memo.get("__loop_names__") if memo is not None else None
    if names is None:
        names = loop_names(kernel)
        if memo is not None:
            memo["__loop_names__"] = names
    ctx.loop_names = names
    # bind the upper bounds of runtime loops with constant lb and a step of +-1: the loop
    # runs n >= 1 times exactly when the bound is lb + n * step. With a longer step the
    # bound is only known to lie in (lb + (n-1)*step, lb + n*step] (``range(0, K, BK)``:
    # K need not be a multiple of BK), so it stays a runtime value: binding it to one
    # point of that interval made a mask ``k < K`` disagree with the tensor's real extent
    # (a false AVE208). The variant's preconditions below state the interval.
    consts = _const_values(kernel.body)
    for op, n in ctx.trip_counts.items():
        lb, ub, st = op.operands[:3]
        # (not a bound merged by a runtime branch, `hi = KT - 3 if K > 64 else KT`: the
        # branch was replaced by the constant, with no precondition -- its zero trips and
        # trip constraints were lost; a review helper. It stays a runtime value)
        merged = isinstance(ub.owner, Op) and bool(ub.owner.regions)
        # (nor for zero trips: the loop does not run when ub <= lb, not only at ub = lb --
        # bound there, `ave.assume(KT % 2 == 1)` read KT = 2 and ruled out the variant
        # that KT = 1 runs; a review helper)
        if bind and n != 0 and lb in consts and st in consts and consts[st] in (1, -1) \
                and not merged:
            ctx.bindings[ub] = consts[lb] + n * consts[st]
    body = Block()
    if memo is not None and "__args__" in memo:
        body.args = list(memo["__args__"])
        ctx.vmap.update(zip(kernel.body.args, body.args))
    else:
        for a in kernel.body.args:
            ctx.vmap[a] = body.add_arg(a.type, a.name)
        if memo is not None:
            memo["__args__"] = list(body.args)
    _clone_block(kernel.body, body, ctx)
    params = [replace(p, value=ctx.vmap[p.value]) for p in kernel.params]
    out = replace(kernel, body=body, params=params)
    # Trip-count preconditions of this variant: (value, lb, step, n) per runtime loop with
    # constant lb and step -- the loop runs n times iff lb + (n-1)*step < value <= lb + n*step
    # (step > 0; mirrored for step < 0). ``value`` is an op outside the body computing a
    # bound that was bound to a constant (step +-1: evaluate it after the unrolled values),
    # or the bound's own value in the unrolled kernel (a longer step: computed before the
    # loop), or a kernel argument.
    pres = []
    names = []
    loop_ops = []
    defs = {orig: pre for pre, orig in ctx.preconditions}
    for op, n in ctx.trip_counts.items():
        lb, ub, st = op.operands[:3]
        if st in consts and consts[st] != 0 and (lb in consts or lb in ctx.vmap):
            v = defs.get(ub)
            if v is None and ub in ctx.vmap and (not isinstance(ub.owner, Op)
                                                 or ub not in ctx.bindings):
                v = ctx.vmap[ub]
            if v is not None:
                # (a start known only at run time: its value in the unrolled kernel)
                pres.append((v, consts[lb] if lb in consts else ctx.vmap[lb], consts[st], n))
                names.append(ctx.loop_names[id(op)])
                loop_ops.append(op)
    out.trip_preconditions = pres
    #: the loop variable's name of each precondition (``loop_indices`` of the ops in it)
    out.trip_loop_names = names
    #: the front end's ``scf.for`` of each precondition
    out.trip_loop_ops = loop_ops
    return out


def unrolled_variants(kernel: KernelIR, bound: int | None = None,
                      zero: Sequence[Op] = (),
                      keep: Callable[[dict[Op, int]], bool] | None = None
                      ) -> Iterator[tuple[dict[str, int], KernelIR]]:
    """Yield ``({loop index name: trip count}, unrolled kernel)`` for every combination of
    trip counts ``1..bound`` of the kernel's runtime loops (one variant when it has none).
    With ``zero`` (runtime loops of ``kernel`` the sizes let run zero times): instead,
    every combination in which at least one of those loops runs 0 times (the others
    ``1..bound``, those of ``zero`` ``0..bound``). With ``keep`` (``{loop op: trip
    count} -> bool``): only the combinations it keeps (those some sizes run), decided
    before unrolling.

    Raises:
        UnrollError: more than :data:`MAX_VARIANTS` combinations (kept ones, with
            ``keep``).
    """
    loops = runtime_loops(kernel)
    T = bound if bound is not None else default_trip_bound(kernel)
    memo: dict = {}
    if not loops:
        if not zero:
            yield {}, unroll(kernel, memo=memo)
        return
    zids = {id(z) for z in zero}
    ranges = [range(0 if id(op) in zids else 1, T + 1) for op in loops]
    # (counted before any is built: `tripCountBound = 2**31` built the list -- a hang, or
    # a MemoryError with two loops; a review helper)
    total = math.prod(len(r) for r in ranges)
    if zero:
        total -= math.prod(len(r) - (r.start == 0) for r in ranges)
    cap = MAX_VARIANTS * 16 if keep is not None else MAX_VARIANTS
    if total > cap:
        raise UnrollError(f"{len(loops)} runtime loop{'s' if len(loops) > 1 else ''} with "
                          f"trip counts up to {T} make {total} "
                          f"{'combinations' if keep is not None else 'variants'} "
                          f"(limit {cap})")
    combos = [c for c in itertools.product(*ranges) if not zero or 0 in c]
    if keep is not None:
        combos = [c for c in combos if keep(dict(zip(loops, c)))]
    if len(combos) > MAX_VARIANTS:
        raise UnrollError(f"{len(loops)} runtime loops with trip counts up to {T} make "
                          f"{len(combos)} variants" + (" that some sizes run" if keep else "")
                          + f" (limit {MAX_VARIANTS})")
    display = loop_names(kernel)
    memo["__loop_names__"] = display
    for combo in combos:
        names = {display[id(op)]: n for op, n in zip(loops, combo)}
        yield names, unroll(kernel, dict(zip(loops, combo)), memo)


def _val(ctx: _Ctx, v: Value) -> Value:
    return ctx.vmap.get(v, v)


def _emit_const(out: Block, value: Any, dtype: Any, loc: Any, ctx: _Ctx) -> Value:
    key = ("const", type(value).__name__, value, dtype.name, id(loc), ctx.loop_stack)
    op = ctx.memo.get(key) if ctx.memo is not None else None
    if op is None:
        op = Op("arith.constant", [], [], {"value": value, "dtype": dtype,
                                           "loop_indices": ctx.loop_stack}, [], loc)
        op.results.append(Value(ScalarType(dtype), None, owner=op))
        if ctx.memo is not None:
            ctx.memo[key] = op
    r = op.results[0]
    out.ops.append(op)
    ctx.consts[r] = value
    return r


def op_weight(op: Op) -> int:
    """What ``op`` counts toward :data:`MAX_UNROLLED_OPS`: 1, plus for an op moving data
    one per :data:`ELEMENTS_PER_OP` elements of its largest tile or fragment."""
    n = 0
    if op.name in _DATA_OPS or any(isinstance(r.type, FragmentType) for r in op.results):
        for v in (*op.operands, *op.results):
            t = getattr(v, "type", None)
            if isinstance(t, (TileType, FragmentType)):
                e = 1
                for d in t.shape:
                    e *= d
                n = max(n, e)
    return 1 + n // ELEMENTS_PER_OP


def _limit_error() -> UnrollError:
    return UnrollError(f"the unrolled kernel has more than {MAX_UNROLLED_OPS} ops (an op "
                       f"moving a tile counts one more per {ELEMENTS_PER_OP} elements)")


def _clone_block(src: Block, out: Block, ctx: _Ctx) -> list[Value] | None:
    """Clone ``src``'s ops into ``out``; returns the mapped operands of its terminator."""
    for op in src.ops:
        if op.name in ("scf.yield", "ave.yield"):
            return [_val(ctx, v) for v in op.operands]
        ctx.n_ops += op_weight(op)
        if ctx.n_ops > MAX_UNROLLED_OPS:
            raise _limit_error()
        if op.name == "scf.for":
            _unroll_for(op, out, ctx)
            continue
        if op.name == "scf.if":
            c = _val(ctx, op.operands[0])
            if c in ctx.consts:
                taken = op.regions[0] if ctx.consts[c] else op.regions[1]
                ys = _clone_block(taken, out, ctx) or []
                for r, y in zip(op.results, ys):
                    ctx.vmap[r] = y
                continue
        # binding of a runtime trip count's upper bound
        if len(op.results) == 1 and op.results[0] in ctx.bindings:
            # keep what the bound was computed from (outside the op stream): the analysis
            # states "this variant runs n times" as a precondition over runtime sizes
            if not op.regions:
                pre = Op(op.name, [_val(ctx, v) for v in op.operands], [],
                         {**op.attrs, "loop_indices": ctx.loop_stack}, [], op.loc)
                pre.results.append(Value(op.results[0].type, op.results[0].name, owner=pre))
                ctx.preconditions.append((pre, op.results[0]))
            ctx.vmap[op.results[0]] = _emit_const(out, ctx.bindings[op.results[0]], _dt.i32,
                                                  op.loc, ctx)
            continue
        folded = _try_fold(op, ctx)
        if folded is not None:
            ctx.vmap[op.result] = _emit_const(out, folded[0], folded[1], op.loc, ctx)
            continue
        operands = [_val(ctx, v) for v in op.operands]
        key = ("op", id(op), ctx.loop_stack, tuple(id(v) for v in operands))
        old = ctx.memo.get(key) if ctx.memo is not None else None
        regions = []
        for ri, reg in enumerate(op.regions):
            nb = Block()
            if old is not None:
                nb.args = list(old.regions[ri].args)
                ctx.vmap.update(zip(reg.args, nb.args))
            else:
                for a in reg.args:
                    ctx.vmap[a] = nb.add_arg(a.type, a.name)
            ys = _clone_block(reg, nb, ctx)
            src_term = reg.ops[-1] if reg.ops and reg.ops[-1].name in ("scf.yield", "ave.yield") \
                else None
            term = Op("scf.yield" if op.name.startswith("scf.") else "ave.yield", ys or [], [],
                      {"loop_indices": ctx.loop_stack},
                      [], src_term.loc if src_term is not None else op.loc)
            nb.ops.append(term)
            regions.append(nb)
        if old is not None and (not regions or all(_same_block(a, b)
                                                   for a, b in zip(regions, old.regions))):
            new = old
            for r, nr in zip(op.results, old.results):
                ctx.vmap[r] = nr
        else:
            new = Op(op.name, operands, [], {**op.attrs, "loop_indices": ctx.loop_stack},
                     regions, op.loc)
            # the front end's op this one was cloned from (the same in every variant): the
            # analysis keys what it may reuse between variants by it
            new.source = getattr(op, "source", op)
            for r in op.results:
                nr = Value(r.type, r.name, owner=new)
                nr.affine = None
                new.results.append(nr)
                ctx.vmap[r] = nr
            if ctx.memo is not None:
                ctx.memo[key] = new
        if op.name == "arith.constant":
            ctx.consts[new.result] = op.attrs["value"]
        out.ops.append(new)
    return None


def _same_block(a: Block, b: Block) -> bool:
    """Same ops (identity) and the same terminator operands."""
    if len(a.ops) != len(b.ops):
        return False
    for x, y in zip(a.ops[:-1], b.ops[:-1]):
        if x is not y:
            return False
    ta, tb = a.ops[-1], b.ops[-1]
    return len(ta.operands) == len(tb.operands) and all(
        u is v for u, v in zip(ta.operands, tb.operands))


def _try_fold(op: Op, ctx: _Ctx) -> tuple[Any, Any] | None:
    if not op.name.startswith("arith.") or op.name == "arith.constant" or len(op.results) != 1:
        return None
    if not isinstance(op.result.type, ScalarType):
        return None
    vals = [ctx.consts.get(_val(ctx, v), _MISSING) for v in op.operands]
    if any(v is _MISSING for v in vals):
        return None
    dt = op.result.type.dtype
    if op.name == "arith.cmp":
        return bool(_CMP[op.attrs["pred"]](*vals)), dt
    if op.name == "arith.neg":
        return -vals[0], dt
    if op.name == "arith.select":
        return (vals[1] if vals[0] else vals[2]), dt
    if op.name == "arith.cast":
        return (float(vals[0]) if dt.is_float else int(vals[0])), dt
    f = _FOLD.get(op.name)
    if f is None or not all(isinstance(v, (int, bool)) for v in vals):
        return None
    r = f(*vals)
    if r is None:
        return None
    if dt == _dt.i32:
        r = ((int(r) + 2**31) % 2**32) - 2**31
    return r, dt


_MISSING = object()


def _free_values(body: Block) -> list[Value]:
    """The values ``body`` (nested regions included) uses and does not define, in order
    of first use."""
    inner: set = set()
    out: list = []
    seen: set = set()

    def walk(blk: Block) -> None:
        inner.update(blk.args)
        for o in blk.ops:
            for v in o.operands:
                if v not in inner and v not in seen:
                    seen.add(v)
                    out.append(v)
            for r in o.regions:
                walk(r)
            inner.update(o.results)

    walk(body)
    return [v for v in out if v not in inner]


def _iteration_key(op: Op, body: Block, iv: Value, cur: list, ctx: _Ctx
                   ) -> tuple[tuple, list] | None:
    """The key of one iteration of ``op`` in the unroll memo -- everything its ops depend on
    (the loop indices, the induction value, the carried values, what the body's free values
    map to; the mapped values' constants are fixed when they are made) -- and the objects
    whose identities it holds (the memo entry keeps them alive). None (no reuse) without a
    memo, and for a body holding a runtime loop or the bound of one (their unrolling
    depends on the variant's trip counts, not only on these)."""
    if ctx.memo is None:
        return None
    info = ctx.body_info.get(id(body))
    if info is None:
        ok = True
        for o in body.ops:
            for x in o.walk():
                if (x.name == "scf.for" and x in ctx.trip_counts) or \
                        any(r in ctx.bindings for r in x.results):
                    ok = False
        info = ctx.body_info[id(body)] = (body, _free_values(body) if ok else None)
    free = info[1]
    if free is None:
        return None
    mapped = [_val(ctx, v) for v in free]
    return ("iter", id(op), ctx.loop_stack, id(iv), tuple(id(v) for v in cur),
            tuple(id(v) for v in mapped)), [iv, *cur, *mapped]


def _min_ops(block: Block, ctx: _Ctx, depth: int = 0) -> int:
    """A lower bound of the ops unrolling ``block`` once counts (:attr:`_Ctx.n_ops`): one
    per op, plus per nested loop whose bounds are constants (in ``ctx`` or in the block)
    its trip count times its body's, plus per branch the smaller arm's."""
    consts = ctx.body_info.get(("consts", id(block)))
    if consts is None:
        consts = ctx.body_info[("consts", id(block))] = _const_values(block)
    total = 0
    for o in block.ops:
        if o.name in ("scf.yield", "ave.yield"):
            continue
        total += op_weight(o)
        if depth >= 8 or not o.regions:
            continue
        if o.name == "scf.for":
            lb, ub, st = o.operands[:3]
            c = [ctx.consts.get(v, consts.get(v)) for v in (lb, ub, st)]
            if all(isinstance(x, int) for x in c) and c[2] != 0:
                lo, hi, step = c
                k = max(0, -(-(hi - lo) // step)) if step > 0 else \
                    max(0, -(-(lo - hi) // -step))
                total += k * _min_ops(o.regions[0], ctx, depth + 1)
        else:
            total += min(_min_ops(r, ctx, depth + 1) for r in o.regions)
        if total > MAX_UNROLLED_OPS:
            break
    return total


def _unroll_for(op: Op, out: Block, ctx: _Ctx) -> None:
    lb, ub, st = (_val(ctx, v) for v in op.operands[:3])
    inits = [_val(ctx, v) for v in op.operands[3:]]
    name = ctx.loop_names.get(id(op)) or op.attrs.get("iv_name", "i")
    if st not in ctx.consts:
        raise UnrollError(f"loop `{name}` has a runtime step")
    step = ctx.consts[st]
    if lb in ctx.consts and ub in ctx.consts:
        lo, hi = ctx.consts[lb], ctx.consts[ub]
        n = trip_count(lo, hi, step)
    elif op in ctx.trip_counts:
        n = ctx.trip_counts[op]
    else:
        raise UnrollError(f"loop `{name}` has a runtime trip count and none was given")
    body = op.regions[0]
    # every iteration clones at least the body's ops (each counts, folded or not), nested
    # loops of constant trip counts times theirs: refused before the first iteration when
    # they cannot fit (the loop ran until the cap was hit: 100 s for range(10**6); then
    # 11 s for a nest of two range(1000); review helpers)
    per = _min_ops(body, ctx)
    if ctx.n_ops + n * max(per, 1) > MAX_UNROLLED_OPS:
        raise UnrollError(f"loop `{name}` runs {n} times over at least {per} ops each: the "
                          f"unrolled kernel would have more than {MAX_UNROLLED_OPS} ops "
                          f"(an op moving a tile counts one more per {ELEMENTS_PER_OP} "
                          "elements)")
    cur = inits
    for i in range(n):
        saved = ctx.loop_stack
        # the witness' "kt=2": the loop variable's value in this iteration (the 0-based
        # iteration number when the loop starts at a runtime value)
        ctx.loop_stack = saved + ((name, ctx.consts[lb] + i * step if lb in ctx.consts
                                   else i),)
        if lb in ctx.consts:
            iv = _emit_const(out, ctx.consts[lb] + i * step, _dt.i32, op.loc, ctx)
        else:
            off = _emit_const(out, i * step, _dt.i32, op.loc, ctx)
            # ("loop_iv": the analysis names this iteration by the value, see
            # Engine.shown)
            add = Op("arith.add", [lb, off], [], {"loop_indices": ctx.loop_stack,
                                                   "loop_iv": True}, [], op.loc)
            iv = Value(ScalarType(_dt.i32), name, owner=add)
            add.results.append(iv)
            out.ops.append(add)
        ctx.vmap[body.args[0]] = iv
        for a, v in zip(body.args[1:], cur):
            ctx.vmap[a] = v
        keyed = _iteration_key(op, body, iv, cur, ctx)
        key = keyed[0] if keyed is not None else None
        hit = ctx.memo.get(key) if key is not None else None
        if hit is not None:
            # this iteration was unrolled before (an earlier variant: the same inputs):
            # its ops are the same objects, in the same order
            ops, ys, consts, n_ops, _ = hit
            ctx.n_ops += n_ops
            if ctx.n_ops > MAX_UNROLLED_OPS:
                raise _limit_error()
            out.ops.extend(ops)
            ctx.consts.update(consts)
            cur = list(ys)
            ctx.loop_stack = saved
            continue
        start, n0 = len(out.ops), ctx.n_ops
        ys = _clone_block(body, out, ctx) or []
        if key is not None:
            ctx.memo[key] = (out.ops[start:], list(ys),
                             {y: ctx.consts[y] for y in ys if y in ctx.consts},
                             ctx.n_ops - n0, keyed[1])   # the objects the key names
        cur = ys
        ctx.loop_stack = saved
    for r, v in zip(op.results, cur):
        ctx.vmap[r] = v
