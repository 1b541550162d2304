"""Accumulation completeness of MMA chains: every accumulator element receives each index of
its reduction exactly once (AVE206).

An MMA chain is ``acc = mma(a, b, acc)`` repeated (a ``for kt`` main loop, the static
``kk`` steps over a head dimension): it starts at an accumulator that no MMA produced
(``ave.zeros``, or any computed value) and ends where its value is used by anything but the
accumulator operand of the next ``ave.mma`` (a store, a softmax; a sum or a scale continues it). Operand pairing
(AVE201) says the A and B values multiplied together carry the same ``k``; it cannot see
a pipeline that multiplies the right pairs of the *wrong* k-tile (tile ``kt + 1`` loaded
into stage ``kt``), which sums some k twice and another never. This check can.

What is tracked: per MMA of the chain and per warp, the value of the reduction field
(a field both operands carry that varies along the contracted index: ``k`` of a GEMM,
``key`` of P @ V) in each of the atom's k-slots, and the guard under which that slot
contributes (the conjunct of the masks common to all rows of A and all columns of B in that
slot: row- and column-specific masks, such as ``m < M``, only decide which outputs exist).

At the end of a chain, for each warp:

* **at most once**: no two contributions carry the same value under guards that can hold
  together (z3 when guards are symbolic);
* **at least once**: when the reduction field is a coordinate of the tensor it was tagged
  on (``k = k`` of ``A[m, k]``), no ``k0`` in ``[0, A.shape[1])`` is missing; the runtime trip
  counts of the variant are preconditions (``KT = cdiv(K, BK) = n``), and a dimension the
  kernel never masks is taken to be exactly what it reads (``k0 <= the largest k read``: the
  kernel's own precondition, e.g. a constexpr head dimension ``D``).

A violation gives a witness: the warp and its first thread, the accumulator element it
holds, the missing (or repeated) index, the loop iterations of the MMAs involved, and the
sizes (z3's model) for which it happens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ave_core.analysis.symbolic import (ABSENT, TOP, Atom, SymInt, any_last, atoms_in,
                                        code_conc, code_key)



@dataclass
class Contribution:
    """One MMA of a chain: per warp and k-slot, the reduction field's value and guard."""

    op: Any
    loops: tuple
    field: int
    key: np.ndarray            # (W, K) int
    conc: np.ndarray           # (W, K) int
    live: np.ndarray           # (W, K) bool: the slot contributes under some guard
    guard: np.ndarray          # (W, K, 2 * GUARD) atomic condition ids (their conjunction; 0 none)
    domain: Any                # (tensor name, dim) of the field's coordinate, or None
    #: the runtime branches the MMA ran under (``RuntimeBranch.token``)
    branches: tuple = ()
    #: (tensor name, dim) of the field's coordinate on B's side, or None: the sum runs over
    #: the k both operands have (``K = ave.minimum(K, B.shape[0])``, the README's idiom,
    #: was "incomplete" for sizes where B has fewer k than A; a review helper)
    bdomain: Any = None
    #: the arms of every ``scf.if`` the MMA ran in, ``(id(if op), 0 then / 1 else)``:
    #: branches on thread or warp ids too (:func:`join_split_chains`)
    arms: tuple = ()


def contribution(eng: Any, op: Any, A: dict, B: dict) -> list[Contribution] | None:
    """The contributions of one MMA (``A``/``B``: the engine's per-warp dense operands), one
    per reduction field; ``None`` when the chain cannot be followed precisely (a reduction
    field that is ⊤ or missing somewhere: the pairing check reports that)."""
    F = eng.F
    W = A["W"]
    R, K = A["shape"]
    _, C = B["shape"]
    ta, tb = A["tags"], B["tags"]
    ha = A["held"].reshape(W, R, K)
    hb = B["held"].reshape(W, K, C)
    if not ha.any() or not hb.any():
        return []
    code = ta.code.reshape(W, R, K, F)            # packed values (engine.pack)
    pa = (code != ABSENT) & ha[..., None]
    common = A["fields"] & B["fields"]          # the fields some held element carries
    out = []
    ga = ta.cond.reshape(W, R, K, -1)
    gb = tb.cond.reshape(W, K, C, -1)
    src = ta.src.reshape(W, R, K)
    wi, ri = np.arange(W)[:, None], np.arange(R)[None, :]
    for f in np.nonzero(common)[0]:
        # a reduction field varies along k (within a row of A)
        vf = code[..., f]                                           # (W, R, K)
        first = np.argmax(pa[..., f], axis=2)                       # (W, R)
        vary = pa[..., f] & (vf != vf[wi, ri, first][..., None])
        if not vary.any():
            continue
        # one value per (warp, k-slot), vectorized over every slot
        pf = pa[..., f]                                             # (W, R, K)
        has = pf.any(axis=1)                                        # (W, K)
        r0 = np.argmax(pf, axis=1)                                  # (W, K)
        wi, ji = np.arange(W)[:, None], np.arange(K)[None, :]
        vv = vf[wi, r0, ji]                                         # (W, K)
        bad = pf & ((vf != vv[:, None, :]) | (vf == TOP))
        if bad.any():
            return None                          # not one value per slot: pairing reports it
        # guard atoms common to every row of A (and every column of B) of the slot
        candA = ga[wi, r0, ji, :]                                   # (W, K, G)
        keepA = _common_atoms(ga, candA, pf, 1)                     # (W, K, G)
        c0 = np.argmax(hb, axis=2)
        candB = gb[wi, ji, c0, :]
        keepB = _common_atoms(gb, candB, hb, 2)
        gA = np.where(keepA, candA, 0)
        gB = np.where(keepB, candB, 0)
        guard_arr = np.concatenate([gA, gB], axis=2)                # (W, K, 2G)
        dead = any_last(guard_arr == 1)
        live = has & ~dead
        key = np.where(live, code_key(vv), 0).astype(np.int64)
        conc = np.where(live, code_conc(vv), 0).astype(np.int64)
        guard = guard_arr
        domain = None
        sv = src[wi, r0, ji]
        okd = live & (sv >= 0)
        if okd.any():
            w0, j0 = np.argwhere(okd)[0]
            domain = _field_domain(eng, int(sv[w0, j0]), eng.fields[f])
        bdomain = None
        srcb = tb.src.reshape(W, K, C)
        okb = hb & (tb.code.reshape(W, K, C, F)[..., f] != ABSENT) & (srcb >= 0)
        if okb.any():
            w0, j0, c1 = np.argwhere(okb)[0]
            bdomain = _field_domain(eng, int(srcb[w0, j0, c1]), eng.fields[f])
        out.append(Contribution(op, eng.loops, int(f), key, conc, live, guard, domain,
                                bdomain=bdomain))
    return out


def _common_atoms(g: np.ndarray, cand: np.ndarray, held: np.ndarray, axis: int
                  ) -> np.ndarray:
    """Which atomic conditions of ``cand`` (per slot, ``(W, K, G)``) are in the guard row
    ``g`` of every held element along ``axis`` (``g``: the slot's elements' rows, with
    ``axis`` inserted; ``held``: ``g``'s shape without the last axis)."""
    nz = cand != 0
    if not nz.any():
        return nz
    # a quick test against one other held element (the last): an atom missing from its
    # row is not common (rows with per-row masks, such as m < M, end here)
    n = held.shape[axis]
    all_held = bool(held.all())
    if all_held:                # (the usual: every element held; the same, without scans)
        shp = held.shape[:axis] + held.shape[axis + 1:]
        last = np.full(shp, n - 1, np.int64)
        probe = _pick_along(g, last, axis)
        out = nz & any_last(probe[..., None, :] == cand[..., :, None])
    else:
        last = n - 1 - np.argmax(np.flip(held, axis=axis), axis=axis)      # (W, K)
        probe = _pick_along(g, last, axis)                                  # (W, K, G)
        some = np.any(held, axis=axis)[..., None]    # a slot nobody holds keeps them all
        out = nz & (any_last(probe[..., None, :] == cand[..., :, None]) | ~some)
    if not out.any():
        return out
    for j in range(cand.shape[-1]):
        if not out[..., j].any():
            continue
        inrow = any_last(g == np.expand_dims(cand[..., j], axis)[..., None])
        out[..., j] &= np.all(inrow if all_held else inrow | ~held, axis=axis)
    return out


def _pick_along(g: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """``take_along_axis(g, idx[..., None] with axis inserted, axis)`` squeezed, for ``g``
    of shape ``(W, A, B, G)`` and ``axis`` 1 or 2 (``idx``: ``(W, B)`` or ``(W, A)``), as
    one row take of the flattened array (several times faster)."""
    W, A, B, G = g.shape
    w = np.arange(W)[:, None]
    if axis == 1:
        flat = (w * A + idx) * B + np.arange(B)[None, :]
    else:
        flat = (w * A + np.arange(A)[None, :]) * B + idx
    return g.reshape(-1, G).take(flat.reshape(-1), axis=0).reshape(W, flat.shape[1], G)


def _field_domain(eng: Any, src: int, fname: str) -> tuple | None:
    """(tensor, dim) when the tag sets ``fname`` to a coordinate of the tensor as is."""
    top = eng.tag_ops[src]
    region = top.regions[0]
    y = region.ops[-1]
    if y.name != "ave.yield" or fname not in top.attrs["fields"]:
        return None
    v = y.operands[list(top.attrs["fields"]).index(fname)]
    for i, arg in enumerate(region.args):
        if arg is v:
            return (eng.tag_names[src], i)
    return None


def under_branches(eng: Any, new: list[Contribution] | None) -> list[Contribution] | None:
    """An MMA under branches on runtime values contributes only when they are taken: their
    conditions join each slot's guard (``if kt * BK + BK <= K: acc = mma(...)`` skips the
    last partial tile for some K, and the check finds that K); an else-arm's is the
    negation of its branch's condition when that is one condition. None (the chain cannot
    be followed) under the else-arm of a conjunction (its negation is no conjunction of
    conditions) or a condition that differs across the threads."""
    branches = eng.runtime_branches
    if not branches or new is None:
        return new
    if any(b.guard is None for b in branches):
        return None
    extra = np.concatenate([b.guard for b in branches]).astype(np.int32)
    extra = extra[extra != 0]
    tokens = tuple(b.token for b in branches)
    out = []
    for c in new:
        W, K = c.key.shape
        g = np.concatenate([c.guard, np.broadcast_to(extra, (W, K, len(extra)))], axis=2) \
            if len(extra) else c.guard
        out.append(Contribution(c.op, c.loops, c.field, c.key, c.conc, c.live, g, c.domain,
                                tokens, c.bdomain))
    return out


def join_chains(x: Any, y: Any, token: Any) -> Any:
    """The chain of an accumulator after a branch on a runtime value (``x``: the
    then-region's fragment, ``y``: the else-region's; ``token``: its then-arm's
    ``RuntimeBranch.token``): one region that adds MMAs *inside this branch* to the chain
    the other left as it was (a prefix of it; an untagged accumulator such as
    ``ave.zeros`` is the empty chain) gives the longer chain -- its MMAs carry the branch's
    condition in their guards (:func:`under_branches`); the same chain on both sides
    stays; anything else cannot be followed (False): e.g. an arm that resets the
    accumulator (``acc = ave.zeros(...)``: the other arm's chain is not an extension of
    that one, it was made before the branch)."""
    arms = _arm_chains(x, y)
    if not isinstance(arms, tuple):
        return arms
    a, b = arms
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if all(p is q for p, q in zip(short, long_)) and all(
            token in c.branches for call in long_[len(short):] for c in call):
        return long_
    # both arms extend the chain from before the branch, each under its own arm's guard
    # (full k-tiles in the then-arm, the masked tail tile in the else-arm, an MMA in
    # each: it was AVE205, "cannot be followed"; a review helper): the chain before it,
    # then both arms' MMAs -- the guards make them exclusive
    n = 0
    while n < min(len(a), len(b)) and a[n] is b[n]:
        n += 1
    other = (token[0], 1 - token[1])
    if a[n:] and b[n:] and \
            all(token in c.branches for call in a[n:] for c in call) and \
            all(other in c.branches for call in b[n:] for c in call):
        return a + b[n:]
    return False


def _arm_chains(x: Any, y: Any) -> Any:
    """The two arms' chains as lists (an untagged accumulator, ``ave.zeros``, or one of
    global data alone, a loaded ``C``, is the empty chain), or the join's answer when there
    is nothing to join: None (no chain on either side), False (an arm's chain that cannot
    be followed)."""
    a, b = x.kcov, y.kcov
    if a is None and b is None:
        return None
    if a is None and (not x.tags.code.any() or x.global_data):
        a = []
    if b is None and (not y.tags.code.any() or y.global_data):
        b = []
    if not isinstance(a, list) or not isinstance(b, list):
        return False
    return a, b


def join_split_chains(x: Any, y: Any, if_id: int, whole_warps: bool = True) -> Any:
    """The chain of an accumulator after a branch whose arms run on different threads (a
    condition on thread or warp ids: ``if ave.warp_id() < 2: acc = ave.mma(...)``): the
    chain before the branch (the arms' common prefix) with the MMAs of both arms after it.
    Each arm's MMAs hold only the operands of its own threads' warps (a warp that runs none
    of them contributes nothing there), so their contributions add up per warp; the check
    at the chain's end then finds a warp that accumulates nothing. False when an arm's
    chain is not the one before the branch extended inside that arm (an arm that resets
    the accumulator), or when an arm adds an MMA and some warp has threads in both arms
    (not ``whole_warps``: an MMA is a warp's instruction; a lane-split arm counted its warp
    complete). The chain was dropped here without a word, so AVE206 went unchecked and a
    warp that skipped its MMA was proved (a review helper)."""
    arms = _arm_chains(x, y)
    if not isinstance(arms, tuple):
        return arms
    a, b = arms
    n = 0
    while n < min(len(a), len(b)) and a[n] is b[n]:
        n += 1
    if not whole_warps and (a[n:] or b[n:]):
        return False
    if all((if_id, 0) in c.arms for call in a[n:] for c in call) and \
            all((if_id, 1) in c.arms for call in b[n:] for c in call):
        return a + b[n:]
    return False


def lost_chain(eng: Any, branch: Any, x: Any, y: Any, at: Any = None) -> None:
    """An MMA chain the analysis cannot follow through a branch on a runtime value (an
    MMA in an else-arm, an arm that resets the accumulator, a condition that differs across
    threads): AVE205 (unknown) at the chain's first MMA -- never a silent pass."""
    from ave_core.analysis.engine import PairCheck
    first = at
    if first is None:
        if any(getattr(v, "kcov", None) is False for v in (x, y)):
            return          # an arm's chain was lost already (and reported there)
        for v in (x, y):
            k = getattr(v, "kcov", None)
            if isinstance(k, list) and k and k[0]:
                first = k[0][0].op
                break
        if first is None:
            return
        where = f"the branch at line {branch.loc.range.start.line + 1}"
    else:
        where = "a branch on a runtime value around it"
    chk = PairCheck(first, "accumulate", 0)
    chk.compared = 1
    chk.unknown = (f"the accumulator's MMA chain cannot be followed through {where} (an "
                   "MMA in an else-arm or under a condition that differs across threads, or "
                   "an arm that resets the accumulator)")
    eng.checks.append(chk)


class Call(list):
    """One MMA of a chain: its contributions (one per reduction field; none when it
    contributes nothing the check follows -- operands read from bytes nothing wrote, no
    field of both), and the ``ave.mma`` op itself (``op``): the check's location is the
    chain's first MMA, also when that one contributed nothing (it was the consumer's line,
    a store, unlike every other AVE206)."""

    __slots__ = ("op",)

    def __init__(self, items: list, op: Any) -> None:
        super().__init__(items)
        self.op = op


class Reset(list):
    """A point of an MMA chain where some accumulator elements may restart from a value
    holding no products: ``acc = ave.where(c, acc, 0.0)`` (either side; any constant or
    untagged fragment) whose condition the analysis cannot decide for every element
    (``row < M``). The products summed before it stay in the
    elements that keep the accumulator; the others drop them. The chain goes on through it
    (the products after it are the chain's, per warp, as before); where the chain is used,
    :func:`check_resets` asks whether an element the use reads (a global store: under its
    mask) can have taken the other side. Empty (it contributes no products), so every
    reader of a chain's calls passes over it.

    ``op``: the select; ``keep``: ``(N,)`` guard rows of the select's condition per element
    (``N`` = threads x values of the accumulator's layout); ``negate``: the accumulator is
    the select's false side (an element keeps it where the condition fails); ``loops``:
    the loop indices at the select; ``arms``: ``(condition ids, arm)`` of the runtime
    branches every thread takes alike around it (the reset happens only there)."""

    __slots__ = ("op", "keep", "negate", "loops", "arms")


def _reset(eng: Any, op: Any, c: Any, i: int, V: int) -> "Reset | None":
    """The :class:`Reset` of ``select(c, ...)`` keeping the accumulator on side ``i``, or
    None when the condition has no guard rows per element."""
    from ave_core.analysis.engine import FragVal
    N = eng.T * V
    if type(c) is FragVal:
        rows = c.size_cond
        if rows is None or rows.shape[0] != N:
            return None
    else:
        rows = np.repeat(eng.conds.rows(c, eng.T), V, axis=0)
    r = Reset()
    r.op, r.keep, r.negate, r.loops = op, rows, i == 1, eng.loops
    r.arms = tuple((ids, arm) for ids, arm, _ in eng._uniform_arms())
    return r


def lost_at_select(eng: Any, op: Any, select: Any) -> None:
    """``op`` (an ``ave.mma``) accumulates into the result of ``select``, an ``ave.where``
    that ended an MMA chain (it may take its other side for some element): the chain
    cannot be followed on from there -- AVE205 (unknown) at this MMA, never a silent pass
    (the MMAs after `acc = ave.where(row < M, acc, 0.0)` inside the k loop were checked by
    nothing; a review helper)."""
    from ave_core.analysis.engine import PairCheck
    chk = PairCheck(op, "accumulate", 0)
    chk.compared = 1
    line = select.loc.range.start.line + 1
    chk.unknown = (f"the accumulator's MMA chain cannot be followed through the ave.where at "
                   f"line {line}: some elements may take its other side, dropping the "
                   "products before it (mask the accumulator after the loop, or the store)")
    eng.checks.append(chk)


def lost_at_readback(eng: Any, op: Any) -> None:
    """``op`` (an ``ave.mma``) accumulates into a tile loaded from a global tensor the
    kernel wrote before and reads back, where no chain was stored (FragVal.readback):
    AVE205 (unknown) at this MMA -- it was a fresh chain (untagged C) or no check at all
    (a review helper)."""
    from ave_core.analysis.engine import PairCheck
    chk = PairCheck(op, "accumulate", 0)
    chk.compared = 1
    chk.unknown = ("the accumulator starts from a tile read back from global memory the "
                   "kernel wrote before, where no MMA chain of the same elements was stored: "
                   "it may hold a partial sum, which the check does not follow")
    eng.checks.append(chk)


def chain(prev: Any, new: list[Contribution] | None, op: Any = None) -> Any:
    """The contributions of ``mma(a, b, acc)``'s result (``op``): acc's chain plus this
    MMA (``prev`` None: acc is not an MMA result, a new chain starts; ``False``: a chain
    that cannot be followed)."""
    if new is None or prev is False:
        return False
    call = Call(new, op)
    if prev is None:
        return [call]
    return prev + [call]


def summed_chain(eng: Any, op: Any) -> list | None:
    """The chain an ``arith.add`` of accumulators continues, or None.

    A sum is linear in its terms' products: ``acc + ave.mma(a, b, zeros)`` (a chain of one
    MMA per step), or two accumulators of the same tiled MMA summed at the end (even and
    odd k-tiles), receive the union of their terms' contributions. So when every operand
    of the add is a fragment in the same layout that is either an MMA chain (of the same
    tiled MMA) or untagged with no chain (``ave.zeros``, a bias), and at least one is a
    chain, the result continues their chains (concatenated, operands in order) and the add
    does not end them. A tagged term of global data alone (a bias ``C[m, n]`` loaded:
    ``c + ev + od``; FragVal.global_data) sums no k and is such a term too. Anything else
    (a term computed otherwise, a joined accumulator, a value staged in shared memory) ends
    the chains there as any other use does (a scaled accumulator continues its chain:
    :func:`scaled_chain`)."""
    from ave_core.analysis.engine import FragVal
    if op.name != "arith.add" or len(op.operands) != 2:
        return None
    xs = [eng.env.get(v) for v in op.operands]
    if any(type(x) is not FragVal for x in xs) or not any(x.kcov for x in xs):
        return None
    lays = {getattr(v.type, "layout", None) for v in op.operands}
    if len(lays) != 1 or None in lays or \
            getattr(op.result.type, "layout", None) not in lays:
        return None
    out: list = []
    tiled = None
    for x in xs:
        if x.kcov:
            t = next((c.op.attrs.get("tiled") for step in x.kcov for c in step), None)
            if t is not None:
                if tiled is not None and t is not tiled:
                    return None
                tiled = t
            out += x.kcov
        elif x.kcov is False:
            # an accumulator whose MMAs are not followed (started from a tagged C:
            # split-K's `acc + acc2`): the sum continues the other terms' chains as a
            # part of it (FragVal.partial: "at most once" only; it ended them, and a
            # third term was held to "at least once" alone -- "never accumulates k=0" for
            # a correct `(acc + acc2) + acc3`, a k-tile in acc2 and acc3 misreported so;
            # a review helper)
            continue
        elif x.tags.code.any() and not x.global_data:
            return None
    return out


def _sums_k(x: Any) -> bool:
    """``x`` is a fragment holding an MMA chain (one followed, or one that cannot be)."""
    from ave_core.analysis.engine import FragVal
    return type(x) is FragVal and (x.kcov is False or bool(x.kcov))


def scaled_chain(eng: Any, op: Any) -> tuple | None:
    """The chain an elementwise scale of an accumulator continues, or None.

    ``acc * s`` (or ``acc / s``) multiplies each accumulator element by one factor, which
    changes no element's set of summed products: the chain goes on through it -- the
    online softmax of flash attention rescales ``o = o * alpha[:, None]`` before each
    ``o = ave.mma(p, v, o)``, and a GEMM epilogue scales ``alpha * acc`` before its store.
    The factor (a scalar, or a fragment in the accumulator's layout) must sum no k itself
    (no MMA chain of its own: ``acc * acc`` ends both). ``ave.zeros`` scaled is still a
    chain's start (its value is 0: ``o_lo * alpha`` of the first iteration holds no
    product); another untagged value scaled by tagged data is not (that data may hold a
    partial sum staged in shared memory).

    Returns ``(kcov, partial)`` for the result: its chain (``[]``: a start) and whether it
    is checked "at most once" only (as the scaled value was: :func:`summed_chain`). The
    check is the same as without the scale: a scale by zero, or a kernel whose loop skips
    the blocks that would add nothing by value (a causal mask), is not told apart.
    """
    from ave_core.analysis.engine import FragVal
    if op.name not in ("arith.mul", "arith.div") or len(op.operands) != 2:
        return None
    lay = getattr(op.result.type, "layout", None)
    if lay is None:
        return None
    xs = [eng.env.get(v) for v in op.operands]

    def in_layout(i: int) -> bool:
        return type(xs[i]) is FragVal and getattr(op.operands[i].type, "layout", None) == lay

    # the accumulator: the operand holding a chain (either side of a product, a quotient's
    # dividend); the factor must sum no k (`0.5 * acc` ended the chain: the factor was
    # tried first and taken for the accumulator's other operand; a review helper)
    held = [i for i in (0, 1) if _sums_k(xs[i])]
    if len(held) == 1:
        i = held[0]
        if op.name == "arith.div" and i != 0 or not in_layout(i) or \
                not isinstance(xs[i].kcov, list):
            return None
        return xs[i].kcov, xs[i].partial
    if held:
        return None
    # a start: ave.zeros (its value 0) times anything is 0 still -- `o_lo * alpha` of the
    # first iteration (any untagged operand was taken for a start, and `ones * C` with C
    # a partial sum the kernel staged was held to "at least once"; a review helper)
    for i in ((0,) if op.name == "arith.div" else (0, 1)):
        if in_layout(i) and xs[i].zero:
            return [], False
    return None


def passed_chain(eng: Any, op: Any) -> tuple | None:
    """The chain an accumulator keeps through ``ave.convert`` to its own layout or a select
    that keeps it whole, or None.

    ``ave.convert(acc, tiled.c)`` moves no element: the value is the accumulator's; it
    ended the chain (inside the k loop: "never accumulates k=32" at the first tile of a
    correct kernel). ``ave.where(c, acc, x)`` (either side) whose condition is decided, for
    every element, to take the accumulator (``ave.coord`` against a constant, a loop index
    of the unrolled loop: ``kt >= 0``) is the accumulator too. One that may take the other
    side for some element, when that side is zero (``ave.where(row < M, acc, 0.0)``), is a
    :class:`Reset` of those elements: the chain goes on with it, whole (each element that
    keeps it holds every product), and its use checks the elements it reads
    (:func:`check_resets`). A select to anything else ends the chain and checks it there, as
    any other use: an element that took ``x`` dropped the products before it, which the
    per-warp chain cannot tell (carrying the chain on through it -- at most once only --
    missed a reset that drops a k-tile and reported a "twice" for an element that took
    ``x``; a review helper).

    Returns ``(kcov, partial)`` for the result.
    """
    from ave_core.analysis.engine import FragVal
    lay = getattr(op.result.type, "layout", None) if len(op.results) == 1 else None
    if lay is None:
        return None
    if op.name == "ave.convert":
        x = eng.env.get(op.operands[0])
        # (an empty chain: a start, ave.zeros scaled -- flash attention's first o * alpha)
        if type(x) is FragVal and isinstance(x.kcov, list) and (x.kcov or x.zero) and \
                op.attrs.get("layout") == lay and \
                getattr(op.operands[0].type, "layout", None) == lay:
            return x.kcov, x.partial
        return None
    if op.name != "arith.select" or len(op.operands) != 3:
        return None
    c, a, b = (eng.env.get(v) for v in op.operands)
    xs = (a, b)
    held = [i for i in (0, 1) if _sums_k(xs[i])]
    if len(held) != 1:
        return None
    i = held[0]
    x = xs[i]
    if not isinstance(x.kcov, list) or \
            getattr(op.operands[1 + i].type, "layout", None) != lay:
        return None
    # each element's condition: 0 true (takes a), 1 false (takes b), else undecided
    if type(c) is FragVal:
        if c.cond is not None:
            tr = eng.conds.truth(c.cond)
        elif c.scond is not None:
            tr = np.full(c.scond.shape[0], 2)       # (over sizes: the resets decide it)
        else:
            return None
    elif isinstance(c, np.ndarray):
        # (a scalar condition, one per thread: `kt >= 0` of an unrolled loop index)
        tr = eng.conds.truth(eng.conds.rows(c, eng.T))
    else:
        return None
    if bool((np.asarray(tr) == i).all()):
        return x.kcov, x.partial
    # some element may take the other side: a reset to zero there (`acc = ave.where(row <
    # M, acc, 0.0)` inside the k loop, of rows no store writes) is followed as such -- the
    # chain goes on, and its use asks whether an element it reads was reset (check_resets;
    # ending the chain here was a false "never accumulates k=32" at the first tile of a
    # correct kernel, and a silent pass after the last MMA)
    # (a value holding none of the products: a reset to it -- 0.0, 5.0, ave.zeros, an
    # untagged value; Engine._bare_side)
    if not eng._bare_side(op, 2 - i):
        return None
    r = _reset(eng, op, c, i, x.V)
    if r is None:
        return None
    return x.kcov + [r], x.partial


def on_consume(eng: Any, op: Any) -> None:
    """Called before every op: an MMA chain used by anything but the accumulator operand of
    an ``ave.mma`` (or a term of a sum or a scale that continues it: :func:`summed_chain`,
    :func:`scaled_chain`) ends here and is checked."""
    from ave_core.analysis.engine import FragVal
    if op.name == "arith.add" and summed_chain(eng, op) is not None:
        return
    if op.name in ("arith.mul", "arith.div") and scaled_chain(eng, op) is not None:
        return
    if op.name in ("ave.convert", "arith.select") and passed_chain(eng, op) is not None:
        return
    deferred = op.name == "ave.store" and eng.defers_store(op)
    for i, v in enumerate(op.operands):
        x = eng.env.get(v)
        if type(x) is not FragVal or not x.kcov:
            continue
        if op.name == "ave.mma" and i == 2:
            continue
        if deferred and i == 1:
            continue            # (continued by a load, or checked at the end: defers_store)
        end_chain(eng, x, op)


def end_chain(eng: Any, x: Any, op: Any) -> None:
    """Check the MMA chain of fragment ``x`` (a non-empty ``kcov``), ended at ``op``.

    A value two ops consume (a scaled score tile read by a row max and a subtraction; one
    consumed in an arm of a branch and left as it is in the other) is checked once: at the
    first, while that check stands (a variant resumed from before it has dropped it and
    checks it again), when the threads running it then were all those running it now (a
    first use under ``if ave.warp_id() < 2:`` checked warps 0-1 only; a review helper)."""
    from ave_core.analysis.engine import PairCheck
    ended = eng.chains_ended
    seen = ended.get(id(x))
    active = np.asarray(eng.active, bool)
    # the enclosing arms of branches on sizes the check runs under (its z3 conditions:
    # _solve_in): a check under `if K % 32 == 0:` stands for a later use only under those
    # arms too -- the else-arm's store, or one after the branch, of the same chain was not
    # checked again, and a lost tail was proved there (a review helper)
    arms = frozenset((ids, arm) for ids, arm, _ in eng._uniform_arms())
    if seen is not None and seen[0] is x and seen[1] < len(eng.checks) and \
            eng.checks[seen[1]] is seen[2] and seen[3].shape == active.shape and \
            bool((seen[3] | ~active).all()) and seen[4] <= arms and seen[5] is eng.k:
        return
    if eng.global_chains:
        eng._chain_consumed(x.kcov)
    c0 = x.kcov[0]
    first = getattr(c0, "op", None) or (c0[0].op if c0 else op)
    chk = PairCheck(first, "accumulate", 0)
    if any(type(c) is Reset for c in x.kcov):
        # per class of elements (check_resets); a global store's mask says which elements
        # it reads: its handler computes it, and runs the check
        eng.checks.append(chk)
        if op.name == "ave.store":
            eng.pending_resets.append((x, chk, op))
        else:
            check_resets(eng, x, chk, op)
        return
    # (a chain holding part of a sum -- see summed_chain -- is checked for "at most
    # once" only: the rest of the sum's k is in an accumulator not followed)
    q0 = eng.solver.queries
    r = check_chain(eng, x.kcov, op, known=chk.location in eng.known_violations,
                    at_least=not x.partial, out_keys=_output_keys(x))
    if eng.solver.queries == q0:
        arms = frozenset()      # (decided without z3: under no arm's condition)
    elif arms and r["violation"] is None and r["unknown"] is None and \
            not _path_possible(eng, arms):
        # the use is under arms no size of this variant takes (`if K > 200:` with trip
        # counts <= 3: K <= 127): every query was unsat and the chain "proved" -- a lost
        # tail there unseen (a review helper). Nothing was checked: an assertion no variant
        # reaches is unknown (AnalysisResult), not proved
        at = op.loc.range.start
        chk.compared, chk.covered = 1, 0
        chk.unreached = (f"the accumulator's use at line {at.line + 1} is under a branch "
                         "on sizes that no trip count analysed reaches: nothing was "
                         "checked there; raise tripCountBound (--trip-bound)")
        eng.checks.append(chk)
        return
    chk.compared, chk.covered = r["compared"], r["covered"]
    chk.violation, chk.unknown = r["violation"], r["unknown"]
    if chk.violation is not None:
        eng.known_violations.add(chk.location)
    if chk.compared:
        # (and the variant: a check in the prefix later variants resume after was made
        # under the first one's trip counts -- a use after the loop in a later variant was
        # skipped, `first = acc` kept at kt == 0 and stored at the end; a review helper)
        ended[id(x)] = (x, len(eng.checks), chk, active.copy(), arms, eng.k)
        eng.checks.append(chk)


def flush_resets(eng: Any, op: Any, guard: Any = None) -> None:
    """Run the :func:`check_resets` that the use ``op`` left pending (``guard``: the
    ``(N, GUARD)`` guard rows of the elements a global store writes, its mask; None: every
    element is read)."""
    pending, eng.pending_resets = eng.pending_resets, []
    for x, chk, at in pending:
        check_resets(eng, x, chk, at, guard if at is op else None)
        if chk.violation is not None:
            eng.known_violations.add(chk.location)


def check_resets(eng: Any, x: Any, chk: Any, consumer: Any, guard: Any = None) -> None:
    """Check an ended chain with resets (:class:`Reset`), per class of elements: those
    that kept the accumulator at every reset hold the whole chain; those whose last reset
    taken is the j-th hold the MMAs after it only. Each class some element the use reads
    can be in (``guard``: a global store's mask rows; None: every element of the active
    threads; z3 over the sizes, the conditions of the class's resets and the use's) is
    checked as a chain of its own (:func:`check_chain`, under the sizes that put an element
    in the class); a class whose chain is empty (a reset after the last MMA) holds none of
    the products: "dropped". Sets ``chk``'s counts and verdict. A reset class's violation
    at a use other than a global store is ``unknown`` (the elements reset may be rows no
    store writes: whether they reach the output is not followed).

    An element's keep condition that is among its store mask's conjuncts (the same
    ``row < M``) is decided without z3."""
    kcov = x.kcov
    conds = eng.conds
    N = x.tags.n
    used = np.repeat(np.asarray(eng.active, bool), x.V)
    g = None
    if guard is not None:
        g = conds.rows(guard, N)
        used &= conds.truth(g) != 1
    resets = [(pos, r) for pos, r in enumerate(kcov)
              if type(r) is Reset and any(type(c) is Call for c in kcov[:pos])]
    stored = consumer.name == "ave.store" and guard is not None
    known = chk.location in eng.known_violations
    for cls in [None] + list(range(len(resets))):
        # the class's conditions: keep every later reset (all of them: the class that kept
        # the accumulator throughout), take the j-th
        terms = [(r, cls is None or li > cls) for li, (_, r) in enumerate(resets)
                 if cls is None or li >= cls]
        reset = None if cls is None else resets[cls]
        sub = kcov if reset is None else kcov[reset[0] + 1:]
        empty = not any(type(c) is Call for c in sub)
        if empty and not stored and _computes_with(eng, consumer, x):
            continue            # (below: the masked-score idiom)
        if not empty:
            # the class's chain checked for every size first (the usual answer: complete,
            # for the class too -- the membership of thousands of elements, a z3 term
            # each, made flash attention's check 3x slower); only a violation needs the
            # class's members, to be found for sizes that make one
            chk.compared = max(chk.compared, 1)
            first = check_chain(eng, sub, consumer, known=known, at_least=not x.partial,
                                out_keys=_output_keys(x))
            chk.compared = max(chk.compared, first["compared"])
            chk.covered = max(chk.covered, first["covered"])
            if first["violation"] is None and first["unknown"] is None:
                continue
        member = _class_members(eng, terms, used, g, N)
        if member is None:
            continue
        elems, pairs, sure, _ = member
        if not sure:
            st, _, _ = _solve(eng, lambda z3: ([_class_term(eng, z3, pairs)], None))
            if st == "unsat":
                continue
            if st == "unknown":
                chk.unknown = "accumulation check: solver budget exhausted"
                return
        if empty:
            # (reset after the last MMA: the element holds none of the products.) A use
            # that computes with it reads the value the select gave on purpose -- flash
            # attention's `ave.where(keys < n, x, NEG)` masks scores before the softmax:
            # the class is not checked (the others' chains are). One that passes it on (a
            # store into shared memory, a cast or convert on the way to one) does not say
            # whether those elements reach the output: unknown, below
            if not stored and _computes_with(eng, consumer, x):
                continue
            found = _lowest_member(eng, pairs)
            if found == "unknown":
                chk.unknown = "accumulation check: solver budget exhausted"
                return
            if found is None:
                continue
            e, model_of = found
            if not stored:
                chk.unknown = _not_followed(reset[1], consumer)
                return
            chk.compared, chk.covered = max(chk.compared, 1), max(chk.covered, 1)
            r = reset[1]
            wv = _reset_witness(eng, x, r, reset[0], e, model_of(False), consumer)
            wv["__refine"] = lambda: _reset_witness(eng, x, r, reset[0], e, model_of(True),
                                                    consumer)
            chk.violation = wv
            return
        if reset is None:
            runs = [(None, (lambda z3, pairs=pairs: [_class_term(eng, z3, pairs)])
                     if not sure else None)]
        else:
            # a reset's class, warp by warp: each warp holding a member is checked with
            # sizes that make its lowest member one, which the witness names (the class
            # was checked in every warp, and the witness named thread 0's acc[0, 0], an
            # element that kept the accumulator; a review helper)
            runs = []
            for w, (e, key) in _members_by_warp(eng, x, elems, member).items():
                runs.append(((w, e), lambda z3, key=key: [_member_term(eng, z3, key)]))
        res = {"compared": 0, "covered": 0, "violation": None, "unknown": None}
        for at, term in runs:
            eng.chain_class, eng.chain_member = term, at
            try:
                res = check_chain(eng, sub, consumer, known=known, at_least=not x.partial,
                                  out_keys=_output_keys(x))
            finally:
                eng.chain_class = eng.chain_member = None
            chk.compared = max(chk.compared, res["compared"])
            chk.covered = max(chk.covered, res["covered"])
            if res["unknown"] is not None or res["violation"] is not None:
                break
        if res["unknown"] is not None:
            chk.unknown = res["unknown"]
            return
        v = res["violation"]
        if v is not None:
            if reset is not None and not stored:
                chk.unknown = _not_followed(reset[1], consumer)
                return
            if reset is not None:
                _mark_reset(eng, v, reset[1])
            chk.violation = v
            return


def _computes_with(eng: Any, op: Any, x: Any) -> bool:
    """``op`` combines the accumulator ``x`` with other data -- a reduction (a row max), or an
    elementwise op with a tagged operand besides it (``s - m[:, None]``): the masked-score
    idiom of flash attention, whose reset elements are meant (check_resets). Not a store,
    a cast or a convert, nor an op with constants only (``ave.maximum(acc, 0.0)``, a ReLU
    epilogue: its result is what the store writes -- proved with a stored row reset; a
    review helper)."""
    from ave_core.analysis.engine import FragVal
    if op.name == "ave.reduce":
        return True
    if op.name.startswith(("arith.", "math.")) and op.name != "arith.cast":
        return any(type(y) is FragVal and y is not x and y.tags.code.any()
                   for y in (eng.env.get(v) for v in op.operands))
    return False


def _class_members(eng: Any, terms: list, used: np.ndarray, g: Any, N: int) -> Any:
    """The elements that may be in a class of :func:`check_resets` (``terms``: ``(reset,
    keeps)``, each reset kept or taken): ``(element indices, pairs, sure, key_of)`` -- ``pairs``
    the distinct ``((use atoms), ((atoms, wants them true, kept, arms), ...))`` with their first
    element, in element order; ``sure``: an element is in it for certain (its conditions
    decided) -- or None when no element can be."""
    conds = eng.conds
    cand = used.copy()
    rows = []
    for r, keeps in terms:
        tk = conds.truth(r.keep)
        # an element's keep condition decided: kept (true, or false on the false side)
        kept_sure = tk == (1 if r.negate else 0)
        taken_sure = tk == (0 if r.negate else 1)
        # (under arms of runtime branches, a reset taken for sure happens only there)
        if not (keeps and r.arms):
            cand &= ~(taken_sure if keeps else kept_sure)
        want_true = keeps != r.negate          # the condition itself must hold
        und = (tk == 2) | bool(r.arms)
        if keeps and g is not None and not r.negate:
            # keep's conjuncts all among the mask's: the mask implies it
            implied = np.ones(N, bool)
            for j in range(r.keep.shape[1]):
                kj = r.keep[:, j]
                implied &= (kj == 0) | any_last(g == kj[:, None])
            und &= ~implied
        rows.append((r.keep, want_true, und, keeps, r.arms))
    if not cand.any():
        return None
    idx = np.nonzero(cand)[0]
    gu = conds.truth(g) if g is not None else np.zeros(N, np.int64)
    pairs: dict = {}
    key_of: dict = {}
    sure = False
    for e in idx.tolist():
        use = tuple(a for a in g[e].tolist() if a) if g is not None and gu[e] == 2 else ()
        parts = tuple((tuple(a for a in keep[e].tolist() if a), want, keeps, arms)
                      for keep, want, und, keeps, arms in rows if und[e])
        if not use and not parts:
            sure = True
        pairs.setdefault((use, parts), e)
        key_of[e] = (use, parts)
    return idx, list(pairs.items()), sure, key_of


def _members_by_warp(eng: Any, x: Any, elems: np.ndarray, member: tuple) -> dict:
    """Per warp holding a candidate member of a class (``elems``, element indices in
    order), its lowest: ``{warp: (element, its pair key)}``."""
    key_of = member[3]
    out: dict = {}
    for e in elems.tolist():
        w = (e // x.V) // eng.ws
        if w not in out:
            out[w] = (e, key_of[e])
    return out


def _class_term(eng: Any, z3: Any, pairs: list) -> Any:
    """Some element is in the class (:func:`_class_members`' pairs), as one z3 term."""
    return z3.Or(*[_member_term(eng, z3, key) for key, _ in pairs])


def _member_term(eng: Any, z3: Any, key: tuple) -> Any:
    sv = eng.solver
    use, parts = key
    out = [sv.cond(list(use))] if use else []
    for atoms, want, keeps, arms in parts:
        c = sv.cond(list(atoms))
        t = c if want else z3.Not(c)
        if arms:
            # (a reset under runtime branches happens where they are taken)
            ran = z3.And(*[eng._arm_term(ids, arm) for ids, arm in arms])
            t = z3.Or(t, z3.Not(ran)) if keeps else z3.And(t, ran)
        out.append(t)
    return z3.And(*out) if out else z3.BoolVal(True, sv.ctx)


def _lowest_member(eng: Any, pairs: list) -> Any:
    """The lowest element of a class that some sizes make (``(element, model_of)``;
    ``model_of(canonical)``: the sizes, a dict), "unknown" (the solver's budget) or None:
    one query per pair, in element order."""
    sv = eng.solver
    for key, e in pairs:
        st, m, again = _solve(eng, lambda z3, key=key: ([_member_term(eng, z3, key)], None))
        if st == "unknown":
            return "unknown"
        if st == "sat":
            atoms = list(sv._atoms.items())
            return e, (lambda canonical, m=m, again=again:
                       sv.model_dict(again() if canonical else m, atoms))
    return None


def _not_followed(r: "Reset", consumer: Any) -> str:
    at = consumer.loc.range.start.line + 1
    line = r.op.loc.range.start.line + 1
    return (f"elements of the accumulator may take the other side of the ave.where at line "
            f"{line}, and what they hold after it is incomplete; the use at line {at} "
            "reads them, and whether they reach the output is not followed (reset only "
            "elements a masked store leaves out, or mask the store)")


def _mark_reset(eng: Any, v: dict, r: "Reset") -> None:
    """A violation of the chain after a reset: the witness names the reset."""
    model = v.get("model")
    at = eng.shown(r.loops, r.op, model)
    its = {**eng.loop_iterations(model, r.loops), **v.get("loop_iterations", {})}
    if its:
        v["loop_iterations"] = its
    v["reset"] = dict(at)
    pts = v.setdefault("program_points", [])
    pts.insert(len(pts) - 1 if pts else 0, {
        "file": r.op.loc.file, "range": r.op.loc.range.to_json(),
        "label": "takes its other side here, dropping the products before it"
        + (" (" + ", ".join(f"{k}={x}" for k, x in at) + ")" if at else "")})
    fin = v.get("__refine")
    if fin is not None:
        v["__refine"] = lambda: (lambda w: (_mark_reset(eng, w, r), w)[1])(fin())


def _reset_witness(eng: Any, x: Any, r: "Reset", pos: int, e: int, model: dict,
                   consumer: Any) -> dict:
    """The witness of a reset after the last MMA that leaves element ``e`` none of the
    products (see :func:`check_resets`)."""
    V = x.V
    t0 = e // V
    acc = [int(c) for c in eng.table(r.op.result.type.layout)[t0, e % V]]
    before = [c for c in x.kcov[:pos] if type(c) is Call]
    pts = []

    def pp(op, label):
        pts.append({"file": op.loc.file, "range": op.loc.range.to_json(), "label": label})

    def when(loops) -> str:
        return " (" + ", ".join(f"{k}={v}" for k, v in loops) + ")" if loops else ""

    model = {k: v for k, v in model.items() if not k.startswith("__")}
    its = eng._iterations_entry(model, r.loops,
                                *(c.op.attrs.get("loop_indices", ()) for c in before))
    for c in before:
        pp(c.op, "accumulates" + when(eng.shown(c.op.attrs.get("loop_indices", ()), c.op,
                                                model)))
    at = eng.shown(r.loops, r.op, model)
    pp(r.op, "takes its other side here, dropping the products before it" + when(at))
    pp(consumer, "the accumulator is used here")
    block = [int(model.get(f"program_id({a})", 0)) for a in range(3)]
    chain = [dict(eng.shown(c.op.attrs.get("loop_indices", ()), c.op, model)) for c in before]
    return {
        "block": block,
        "threads": [{"thread": t0, "warp": t0 // eng.ws, "lane": t0 % eng.ws}],
        "loop_indices": dict(at),
        "what": "dropped", "accumulator": acc,
        "coordinates": {"acc": acc},
        "tags": {},
        "program_points": pts,
        "model": model,
        "chain": chain,
        **its,
    }


def _path_possible(eng: Any, arms: frozenset) -> bool:
    """Some sizes satisfy the enclosing uniform branch arms (``arms``) together with this
    variant's trip counts (z3, once per variant and arms; unknown counts as possible)."""
    z3 = eng.solver.z3
    sv = eng.solver
    memo = eng.paths_possible
    key = (id(eng.k), arms)
    if key in memo and memo[key][0] is eng.k:
        return memo[key][1]
    with sv.timed():
        sv.queries += 1
        s = z3.Solver(ctx=sv.ctx)
        s.set("timeout", sv.timeout_ms)
        terms = [eng._arm_term(ids, arm) for ids, arm, _ in eng._uniform_arms()]
        trips = _trip_constraints(eng, z3)
        s.add(*sv._domain, *trips, *terms)
        ok = s.check() != z3.unsat
    memo[key] = (eng.k, ok)
    return ok


def ended_in_one_arm(x: Any, y: Any) -> Any:
    """After a branch: the arm's fragment whose MMA chain the branch leaves as it was while
    the other arm consumed it (``if masked: x = ave.where(keep, x, NEG)``: the other holds a
    computed value, no chain) -- that chain ends at the branch, and the joined value
    starts none; None otherwise."""
    for a, b in ((x, y), (y, x)):
        if isinstance(a.kcov, list) and a.kcov and b.kcov is None and \
                b.tags.code.any() and not b.global_data:
            return a
    return None


# ---------------------------------------------------------------------------- the check

def trip_bound_value(eng: Any, v: Any) -> Any:
    """The value of a runtime loop's bound in a trip-count precondition (``unroll``'s
    ``trip_preconditions``): a value of the unrolled kernel, or an op outside its op
    stream that computed the bound (evaluated here, once); None when it cannot be."""
    if hasattr(v, "name") and hasattr(v, "operands") and hasattr(v, "results"):
        if v.result not in eng.env:
            h = getattr(eng, "op_" + v.name.replace(".", "_"), None)
            if h is None or any(o not in eng.env for o in v.operands):
                return None
            saved = eng.loops
            try:
                h(v)
            except Exception:
                return None
            finally:
                eng.loops = saved
        return eng.env.get(v.result)
    return eng.env.get(v)


def _trip_forms(eng: Any) -> list[tuple[int, int, int, int, int]]:
    """The variant's trip-count preconditions as ``(key, conc, lb, step, n)``: the loop's
    upper bound ``LIN[key] + conc`` satisfies ``(n-1)*step < LIN[key] + conc - lb <= n*step``."""
    return [f[:5] for f in _trip_forms_named(eng)]


def running_trip_constraints(eng: Any, z3: Any) -> list:
    """What every trip-count variant that runs the current op has in common: for each
    runtime loop around it, at iteration ``i`` (``eng.loops``), the loop runs at least
    ``i + 1`` times. Checks made while an op runs (operand pairing) are decided once for
    every variant that shares the op (incremental analysis: a variant resumes after the
    ops it shares with the one before) -- the variant's exact trip counts held for the
    first of them only, and a pairing wrong for more trips was proved (the full analysis
    found it). A loop variable name used by two runtime loops constrains nothing."""
    forms = _trip_forms_named(eng)
    if not forms:
        return []
    at = dict(eng.loops)
    around = [x for x, _ in eng.loops]
    entered = getattr(eng, "entered_loops", frozenset())
    out = []
    for k, c, lb, st, n, name, runtime_lb, lb0, _ in forms:
        d = eng.solver.lin(k, c) - lb
        if n == 0:
            # a loop this variant runs zero times: no other variant shares an op after
            # it (nor one before it: zero-trip variants run on their own engine)
            out += count_constraints(d, st, 0)
            continue
        if name is None or around.count(name) > 1:
            continue                 # (a name two loops of the kernel use: not told apart)
        if name in at:
            i = at[name] if runtime_lb else (at[name] - lb0) // st
            out.append(d > i * st if st > 0 else d < i * st)
        elif name in entered:
            # the loop ran before this op and has finished: the op is in this variant's
            # epilogue, which no other variant shares -- its exact trip count (a peeled
            # last iteration after the loop was "violated" for sizes running more trips)
            out += count_constraints(d, st, n)
    return out


def count_constraints(d: Any, st: int, n: int) -> list:
    """``range(lb, ub, st)`` runs ``n`` times, as z3 constraints on ``d = ub - lb``:
    ``(n-1)*st < d <= n*st`` (``st > 0``; mirrored for ``st < 0``); zero times: ``d <= 0``
    (``d >= 0``)."""
    if n == 0:
        return [d <= 0] if st > 0 else [d >= 0]
    return [d > (n - 1) * st, d <= n * st] if st > 0 else [d < (n - 1) * st, d >= n * st]


def zero_trip_loops(eng: Any) -> list:
    """The runtime loops (the front end's ``scf.for`` ops) of the kernel ``eng`` ran that
    some sizes let run zero times (``range(1, KT)`` for ``K <= BK``; a causal attention
    block with no key before its diagonal) -- z3 under the sizes' domain, from the forms of
    their bounds in ``eng``'s variant. Loops whose bound the analysis does not follow are
    left out (as before: trip counts ``1..T`` only)."""
    sv = eng.solver
    out = []
    for k, c, lb, st, n, name, runtime_lb, lb0, lop in _trip_forms_named(eng):
        if lop is None:
            continue
        if st > 0:
            low = lower_bound(eng.tab, k, c - lb)
            if low is not None and low > 0:
                continue            # (``cdiv(K, BK)`` >= 1 for K >= 1: no z3 query)
        res = sv.satisfiable([], count_constraints(sv.lin(k, c) - lb, st, 0))
        # (undecided within the budget: kept -- it was dropped, and a read of shared bytes
        # only the loop writes was clean with a budget of 1 ms; a review helper)
        if res.status != "unsat":
            out.append(lop)
    return out


def lower_bound(tab: Any, k: int, c: int, depth: int = 0) -> int | None:
    """A lower bound of ``LIN[k] + c`` over the sizes' domain (sizes, grid sizes and
    strides >= 1, program ids >= 0), from the bounds of its atoms -- floor division by a
    positive constant is monotone -- or None where an atom has none (or a negative
    coefficient would need an upper bound). Sound, not tight."""
    lo = c
    for a_idx, coef in tab.lins[k]:
        if coef < 0:
            return None
        at = tab.atoms[a_idx]
        if at.kind in ("dim", "nprog", "stride"):
            b = 1
        elif at.kind in ("pid", "load"):
            b = 0
        elif at.kind == "op" and at.args[0] == "floordiv" and depth < 8:
            (ka, ca), (kb, cb) = at.args[1], at.args[2]
            if kb != 0 or cb <= 0:
                return None
            x = lower_bound(tab, ka, ca, depth + 1)
            if x is None:
                return None
            b = x // cb
        else:
            return None
        lo += coef * b
    return lo


def _trip_forms_named(eng: Any) -> list[tuple]:
    """:func:`_trip_forms` with, per loop, its variable's name, whether its start is a
    runtime value (then ``loop_indices`` hold the 0-based iteration), its constant
    start (else) and its ``scf.for`` in the front end's kernel (None: unknown)."""
    out = []
    names = getattr(eng.k, "trip_loop_names", None)
    pres = getattr(eng.k, "trip_preconditions", ())
    if names is None or len(names) != len(pres):
        names = [None] * len(pres)
    lops = getattr(eng.k, "trip_loop_ops", None)
    if lops is None or len(lops) != len(pres):
        lops = [None] * len(pres)
    for (v, lb, st, n), name, lop in zip(pres, names, lops):
        lb0 = lb
        val = trip_bound_value(eng, v)
        if not isinstance(val, SymInt):
            continue
        if not isinstance(lb, (int, np.integer)):
            # a start known at run time (``range(KT - 1, -1, -1)``): the form of ub - lb
            lv = eng.env.get(lb)
            if not isinstance(lv, SymInt):
                continue
            from ave_core.analysis.symbolic import sym_binop
            val = sym_binop(eng.tab, "sub", SymInt(np.asarray(val.key).reshape(-1)[:1],
                                                   np.asarray(val.conc).reshape(-1)[:1]),
                            SymInt(np.asarray(lv.key).reshape(-1)[:1],
                                   np.asarray(lv.conc).reshape(-1)[:1]))
            lb = 0
        k, c = int(np.asarray(val.key).reshape(-1)[0]), int(np.asarray(val.conc).reshape(-1)[0])
        runtime_lb = not isinstance(lb0, (int, np.integer))
        out.append((k, c, int(lb), int(st), int(n), name, runtime_lb,
                    0 if runtime_lb else int(lb0), lop))
    return out


def _trip_constraints(eng: Any, z3: Any) -> list:
    """The variant's trip counts as z3 constraints on the loops' bounds: ``range(lb, ub,
    st)`` runs ``n`` times iff ``(n-1)*st < ub - lb <= n*st`` (``st > 0``), ``n*st <= ub -
    lb < (n-1)*st`` (``st < 0``)."""
    out = []
    for k, c, lb, st, n in _trip_forms(eng):
        out += count_constraints(eng.solver.lin(k, c) - lb, st, n)
    return out


def _size_upper_bound(eng: Any, atom: int, forms: list) -> int | None:
    """An upper bound on the size atom ``atom`` (a tensor extent) implied by one trip-count
    precondition alone, or None: ``a*S + c - lb <= n*step`` gives ``S <= (n*step + lb - c)
    // a``; ``floordiv(a*S + ca, d) + c - lb <= n*step`` (the usual ``cdiv(S, BK)``, ``d``
    a positive constant) gives ``a*S + ca <= m*d + d - 1`` with ``m = n*step + lb - c``.
    Sound by construction (floor division by a positive constant is monotone), so a bound
    at or below the indices received decides the query without z3; None leaves it to z3."""
    tab = eng.tab
    best = None
    for k, c, lb, st, n in forms:
        if st <= 0:
            continue
        terms = tab.lins[k]
        if len(terms) != 1 or terms[0][1] <= 0:
            continue
        a_idx, coef = terms[0]
        m_num = n * st + lb - c                  # coef * term <= m_num
        bound = None
        if a_idx == atom:
            bound = m_num // coef
        else:
            at = tab.atoms[a_idx]
            if at.kind == "op" and at.args[0] == "floordiv":
                _, (ka, ca), (kb, cb) = at.args
                inner = tab.lins[ka]
                if kb == 0 and cb > 0 and len(inner) == 1 and inner[0][0] == atom and \
                        inner[0][1] > 0:
                    m = m_num // coef            # floordiv(X, cb) <= m  <=>  X <= m*cb + cb - 1
                    bound = (m * cb + cb - 1 - ca) // inner[0][1]
        if bound is not None and (best is None or bound < best):
            best = bound
    return best


def _output_keys(x: Any) -> list:
    """The symbolic forms of the accumulator's own fields (its row and column coordinates:
    ``row = m0 + i`` has the form of ``m0``): two blocks whose forms agree compute the same
    output elements."""
    return [k for k in np.unique(code_key(x.tags.code)).tolist() if k]


def _split_across_blocks(eng: Any, kkeys: list, out_keys: list) -> bool:
    """Two blocks can compute the same accumulator elements (every form of
    :func:`_output_keys` agrees) while summing different k (a form of ``kkeys``, the
    chain's reduction indices, differs): the chain is one block's part of a sum split
    across blocks. z3, with a second block's program ids; undecided: False."""
    tab = eng.tab
    pids: set = set()
    for k in kkeys:
        pids |= atoms_in(tab, k, ("pid",))
    if not pids:
        return False
    sv = eng.solver
    z3 = sv.z3
    with sv.timed(), sv.scratch():
        subs, cons = [], []
        for p in sorted(pids):
            axis = tab.atoms[p].args[0]
            q = z3.Int(f"__other_program_id{axis}", sv.ctx)
            cons.append(q >= 0)
            n = tab.atom_ids.get(Atom("nprog", (axis,)))
            if n is not None:
                cons.append(q < sv.atom(n))
            subs.append((sv.atom(p), q))

        def other(k: int) -> Any:
            return z3.substitute(sv.lin(k, 0), *subs)
        same = [sv.lin(k, 0) == other(k) for k in out_keys]
        differ = z3.Or(*[sv.lin(k, 0) != other(k) for k in kkeys])
        if _split_probe(sv, cons, subs, same, differ):
            return True
        s = z3.Solver(ctx=sv.ctx)
        s.set("timeout", sv.timeout_ms)
        sv.queries += 1
        s.add(*cons, *same, differ, *sv._domain)
        return s.check() == z3.sat


def _split_probe(sv: Any, cons: list, subs: list, same: list, differ: Any) -> bool:
    """A quick sufficient test for :func:`_split_across_blocks`: one model of the sizes
    and of two different blocks (the query without its equations between the two blocks'
    forms), in which those equations hold. z3 decides the whole query by itself only when
    it is linear: ``k0 = ave.program_id(2) * (K // SPLIT)`` with a runtime ``SPLIT`` ran to
    the solver's budget, and the undecided split was taken for a whole sum -- a false
    "never accumulates k=0" on split-K into a workspace (a review note)."""
    z3 = sv.z3
    s = z3.Solver(ctx=sv.ctx)
    s.set("timeout", max(1, min(sv.timeout_ms, 200)))
    sv.queries += 1
    s.add(*cons, *sv._domain, z3.Or(*[p != q for p, q in subs]))
    if s.check() != z3.sat:
        return False
    m = s.model()
    return all(z3.is_true(m.eval(c, model_completion=True)) for c in same) and \
        z3.is_true(m.eval(differ, model_completion=True))


def check_chain(eng: Any, chain_: list, consumer: Any, known: bool = False,
                at_least: bool = True, out_keys: list | None = None) -> dict | None:
    """Check one ended chain; returns the check's outcome as a dict (see PairCheck).

    ``at_least``: False for a chain that holds only part of a sum (the other part an
    accumulator the analysis does not follow): each index at most once, none missing
    is not asked.

    ``out_keys``: the forms of the accumulator's coordinates (see :func:`_output_keys`;
    None: not known). A chain whose reduction indices two blocks computing the same output
    elements can hold differently (:func:`_split_across_blocks`) is one block's part of a
    sum split across blocks (split-K: ``k0 = ave.program_id(2) * KS``; a linearised grid,
    ``m0 = pid // 2 * BM``, ``k0 = pid % 2 * KS``; the partial sums added by atomics or a
    second kernel): "at least once" is not asked of one block (each block missed the other
    blocks' k: a false AVE206), "at most once" is.

    ``known``: the chain's first MMA has a violation already (an earlier execution or
    trip-count variant); the analysis reports the first one, so with one reduction field
    (its counts do not depend on the verdict) the check is not decided again -- when its
    queries would make no new z3 atom (see :func:`_knows_chain`)."""
    res = {"compared": 0, "covered": 0, "violation": None, "unknown": None}
    by_field: dict[int, list[Contribution]] = {}
    for call in chain_:
        for c in call:
            by_field.setdefault(c.field, []).append(c)
    if known and len(by_field) == 1 and _knows_chain(eng, by_field):
        return {"compared": 1, "covered": 1, "violation": None, "unknown": None}
    for f, calls in by_field.items():
        W = calls[0].key.shape[0]
        res["compared"] += 1
        res["covered"] += 1
        done: set = set()
        raw_done: set = set()
        gsets: dict = {}        # a guard row -> its atoms, sorted
        # the largest concrete index any warp receives: an unmasked extent is what the
        # kernel reads, for every warp alike (a warp that runs none of the chain's MMAs --
        # `if ave.warp_id() < 2: acc = ave.mma(...)` -- reads nothing itself, and with
        # its own largest index the check asked for none; a review helper)
        kmax = max((int(c.conc[c.live & (c.key == 0)].max()) for c in calls
                    if (c.live & (c.key == 0)).any()), default=-1)
        # the warps that use the accumulator here (an arm of a branch on warp ids that
        # stores its own chain: the other arm's warps are not consumers -- they were
        # "incomplete"; a review helper)
        act = np.asarray(eng.active)
        per = len(act) // W if W else 0
        using = act[:per * W].reshape(W, per).any(axis=1) if per else np.ones(W, bool)
        if eng.chain_member is not None:
            # (a class of a reset: the warp of the member it is checked for)
            only = np.zeros(W, bool)
            if 0 <= eng.chain_member[0] < W:
                only[eng.chain_member[0]] = True
            using = using & only
        for w in range(W):
            if not using[w]:
                continue
            # a warp whose contribution arrays equal an earlier warp's has the same items
            raw = b"".join(a[w].tobytes() for c in calls
                           for a in (c.live, c.key, c.conc, c.guard))
            if raw in raw_done:
                continue
            raw_done.add(raw)
            items = []          # (key, conc, guard, call index, slot)
            for ci, c in enumerate(calls):
                live = np.nonzero(c.live[w])[0]
                keys, concs = c.key[w, live].tolist(), c.conc[w, live].tolist()
                grows = c.guard[w, live].tolist()
                for n, j in enumerate(live.tolist()):
                    gb = tuple(grows[n])
                    g = gsets.get(gb)
                    if g is None:
                        g = gsets[gb] = tuple(sorted({x for x in gb if x != 0}))
                    items.append((keys[n], concs[n], g, ci, j))
            sig = tuple(items)
            if sig in done:
                continue        # another warp received the same indices: same verdict
            done.add(sig)
            v = _at_most_once(eng, items, calls, w, f)
            if v is None and at_least:
                v = _at_least_once(eng, items, calls, w, f, kmax, out_keys)
            if v is not None:
                if v.get("unknown"):
                    res["unknown"] = v["unknown"]
                else:
                    again = v.pop("__again", None)
                    member = eng.chain_member
                    wv = _witness(eng, v, calls, w, f, consumer, member)
                    if again is not None:
                        # the canonical model, for the witness the analysis keeps
                        wv["__refine"] = (lambda: _witness(eng, again(), calls, w, f,
                                                           consumer, member))
                    res["violation"] = wv
                return res
    return res


def _knows_chain(eng: Any, by_field: dict) -> bool:
    """Deciding the chain would make no new z3 atom: its guards' conditions, the
    reduction fields' domains (tensor extents) and the variant's trip counts have their
    terms (witness models list every atom the solver knew; a skipped query that would
    have made one changes a later witness)."""
    sv = eng.solver
    for calls in by_field.values():
        for c in calls:
            if not all(sv.knows_cond(g) for g in np.unique(c.guard).tolist()):
                return False
            for d in (c.domain, c.bdomain):
                if d is not None and not sv.knows_dim(d):
                    return False
    # the trip counts as the check's own queries would compute them (this evaluates the
    # bound expressions once per variant, as they do; their forms are the earlier
    # variants' forms, which the violation found there made)
    return all(sv.knows(k) for k, _, _, _, _ in _trip_forms(eng)) and \
        all(sv.knows_cond(i) for ids, _, _ in eng._uniform_arms() for i in ids)


def _solve(eng: Any, build) -> tuple[str, Any, Any]:
    """Decide one query: ``(status, model, again)``. For ``sat`` the model is the plain
    solver's, and ``again()`` gives the canonical one (an optimization: the objective
    first, then every atom; see ``Solver.canonical_model``), which only the witness the
    analysis keeps needs (the first variant's): computed lazily, through the witness'
    ``__refine``."""
    with eng.solver.timed():
        return _solve_in(eng, build)


def _solve_in(eng: Any, build) -> tuple[str, Any, Any]:
    z3 = eng.solver.z3
    sv = eng.solver
    sv.queries += 1
    extra, objective = build(z3)
    # the consumer's path: the enclosing arms of branches on runtime values every thread
    # takes alike (a store under `if K % 32 == 0:` uses a chain of K // 32 full tiles,
    # complete there: it was "never accumulates k=32" for K = 33, where the store does
    # not run)
    trips = _trip_constraints(eng, z3) + [eng._arm_term(ids, arm)
                                          for ids, arm, _ in eng._uniform_arms()]
    # (a class of elements check_resets checks: sizes that put an element in it)
    if eng.chain_class is not None:
        trips += eng.chain_class(z3)
    # the size statements the masks make, as the bounds check reads them (B's `k < K`:
    # B.shape[0] == A.shape[1]) -- a witness with B.shape[0] = 33 for K = 65 read B out
    # of bounds, and the interpreter stopped there instead of showing the missing k (a
    # review helper)
    # (only for sizes the analysis has met: a new atom here would be listed, unconstrained,
    # in every later witness's sizes -- V.shape[2] = 1 next to a V element read at key 4)
    trips += [sv.lin(eng.tab.lin(((eng.tab.atom_ids[Atom("dim", (t, d))], 1),)), 0) ==
              sv.lin(k, c) for t, d, k, c in eng.bounds.assumptions
              if sv.knows_dim((t, d)) and sv.knows(k)]
    # the usual answer is unsat (the chain is complete): a plain solver decides it at a
    # fraction of an optimizing one's cost; only a violation needs the canonical witness
    plain = z3.Solver(ctx=sv.ctx)
    plain.set("timeout", sv.timeout_ms)
    plain.add(*sv._domain)       # after building: new atoms add their domains
    plain.add(*trips)
    plain.add(*extra)
    r = plain.check()
    if r == z3.unsat:
        return "unsat", None, None
    # what the optimizing query is made of, as it is now (later queries make more atoms)
    domain = list(sv._domain)
    pids = [z for i, z in sv._atoms.items() if eng.tab.atoms[i].kind == "pid"]

    def optimize() -> tuple:
        s = z3.Optimize(ctx=sv.ctx)
        s.set("timeout", sv.timeout_ms)
        s.add(*domain)
        s.add(*trips)
        s.add(*extra)
        for z in pids:
            s.add_soft(z == 0)
        if objective is not None:
            s.minimize(objective)
        r = s.check()
        if r == z3.sat:
            return "sat", sv.canonical_model(s, (objective,) if objective is not None else ())
        return ("unsat" if r == z3.unsat else "unknown"), None
    if r != z3.sat:
        st, m = optimize()           # the plain solver gave up: the optimizing one decides
        return st, m, (lambda: m)
    first = plain.model()

    def again() -> Any:
        with sv.timed():
            st, m = optimize()
            return m if st == "sat" else first     # budget ran out: the plain model
    return "sat", first, again


def _at_most_once(eng: Any, items: list, calls: list, w: int, f: int) -> dict | None:
    seen: dict = {}
    for it in items:
        seen.setdefault((it[0], it[1]), []).append(it)
    for (k, c), its in sorted(seen.items(), key=lambda kv: kv[1][0][3:]):
        if len(its) < 2:
            continue
        for i in range(len(its)):
            for j in range(i + 1, len(its)):
                a, b = its[i], its[j]
                guard = list(a[2]) + list(b[2])
                if not guard:
                    return {"what": "twice", "key": k, "conc": c, "a": a, "b": b, "model": {}}
                st, m, again = _solve(eng, lambda z3: ([eng.solver.cond(guard)], None))
                if st == "sat":
                    atoms = list(eng.solver._atoms.items())
                    v = {"what": "twice", "key": k, "conc": c, "a": a, "b": b,
                         "model": eng.solver.model_dict(m, atoms)}
                    v["__again"] = (lambda v=v, atoms=atoms, again=again: {
                        **v, "model": eng.solver.model_dict(again(), atoms)})
                    return v
                if st == "unknown":
                    return {"unknown": "accumulation check: solver budget exhausted"}
    return _at_most_once_across(eng, items)


def _runs(values: list) -> list:
    """Sorted distinct integers as maximal runs ``[(lo, hi)]`` of consecutive values."""
    out: list = []
    for v in sorted(set(values)):
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return [tuple(r) for r in out]


def _at_most_once_across(eng: Any, items: list) -> dict | None:
    """"At most once" between indices of different forms (:func:`_at_most_once` compares
    equal forms): a tail tile at ``k0 = K - 32`` after the loop's ``K // 32`` full tiles
    sums ``[K - 32, 32 * (K // 32))`` twice -- its forms ``K - 32 + j`` were never
    compared with the loop's constants (a review helper). Indices are grouped by form and
    guard; two groups meet where the difference of their forms is a difference of their
    constant parts (a few runs of consecutive values each) under both guards: one z3 query,
    a disjunction over the pairs of groups; the earliest pair (by the MMA order) its model
    satisfies is named."""
    if not any(it[0] for it in items):
        return None             # (constant indices only: equal forms, compared already)
    groups: dict = {}
    for it in items:
        groups.setdefault((it[0], it[2]), []).append(it)
    if len(groups) < 2:
        return None
    keys = sorted(groups, key=lambda g: min(it[3:] for it in groups[g]))
    runs = {g: _runs([it[1] for it in groups[g]]) for g in keys}
    pairs = [(g1, g2) for i, g1 in enumerate(keys) for g2 in keys[i + 1:]
             if g1[0] != g2[0]]
    if not pairs:
        return None
    sv = eng.solver
    terms: list = []

    def build(z3):
        del terms[:]
        for (k1, g1), (k2, g2) in pairs:
            d = sv.lin(k1, 0) - sv.lin(k2, 0)           # form1 + x == form2 + y: d == y - x
            ors = [z3.And(d >= lo2 - hi1, d <= hi2 - lo1)
                   for lo1, hi1 in runs[(k1, g1)] for lo2, hi2 in runs[(k2, g2)]]
            t = z3.Or(*ors)
            guard = list(g1) + list(g2)
            terms.append((z3.And(t, sv.cond(guard)) if guard else t, d))
        return [z3.Or(*[t for t, _ in terms])], None

    st, m, again = _solve(eng, build)
    if st == "unsat":
        return None
    if st == "unknown":
        return {"unknown": "accumulation check: solver budget exhausted"}
    atoms = list(sv._atoms.items())
    z3 = sv.z3
    found_terms = list(terms)

    def found(model: Any) -> dict:
        for ((k1, g1), (k2, g2)), (t, d) in zip(pairs, found_terms):
            if not z3.is_true(model.eval(t, model_completion=True)):
                continue
            dv = model.eval(d, model_completion=True).as_long()
            conc2 = {it[1]: it for it in groups[(k2, g2)]}
            for a in sorted(groups[(k1, g1)], key=lambda it: it[3:]):
                b = conc2.get(a[1] + dv)
                if b is None:
                    continue
                value = model.eval(sv.lin(k1, a[1]), model_completion=True).as_long()
                first, second = (a, b) if a[3:] <= b[3:] else (b, a)
                return {"what": "twice", "key": 0, "conc": int(value), "a": first,
                        "b": second, "model": sv.model_dict(model, atoms)}
        return None
    v = found(m)
    if v is None:
        return None
    v["__again"] = lambda: found(again()) or v
    return v


def _at_least_once(eng: Any, items: list, calls: list, w: int, f: int,
                   kmax: int = -1, out_keys: list | None = None) -> dict | None:
    """``kmax``: the largest concrete index the chain's MMAs receive in any warp (the
    extent an unmasked dimension is taken to have). ``out_keys``: see
    :func:`check_chain`."""
    dom = next((c.domain for c in calls if c.domain is not None), None)
    if dom is None:
        return None
    if out_keys is not None:
        kkeys = sorted({it[0] for it in items if it[0] != 0 and
                        atoms_in(eng.tab, it[0], ("pid",))})
        if kkeys and _split_across_blocks(eng, kkeys, out_keys):
            return None     # a block's part of a sum split across blocks (split-K)
    bdom = next((c.bdomain for c in calls if c.bdomain is not None), None)
    if bdom == dom:
        bdom = None
    # symbolic reduction indices (a loop that starts at a runtime value: kt = KT - 1 - j):
    # z3 compares k0 with their forms (they used to be skipped: a missing k-tile was
    # "proved", from a review helper)
    sym = [it for it in items if it[0] != 0]
    items = [it for it in items if it[0] == 0]
    dkey = eng.tab.atom(Atom("dim", dom))
    unguarded = all(not g for _, _, g, _, _ in items + sym)
    maxk = max(max((c for _, c, _, _, _ in items), default=-1), kmax)
    # Indices received under no guard, or under exactly `c < size` (a mask on this very
    # extent): for k0 == c with k0 < size they are received. Their contiguous prefix
    # 0 .. R-1 needs no solver term (k0 >= R is added instead).
    good = set()
    neg = eng.tab.scale(dkey, -1)
    for _, c, g, _, _ in items:
        if not g:
            good.add(c)
        elif len(g) == 1:
            conds = eng.conds.sets[g[0]]
            if conds is not None and len(conds) == 1:
                (cd,) = tuple(conds)
                if cd.key == neg and ((cd.pred == "lt" and cd.conc == c) or
                                      (cd.pred == "le" and cd.conc == c + 1)):
                    good.add(c)
    R = 0
    while R in good:
        R += 1
    rest = [it for it in items if it[1] >= R] + sym
    if unguarded and R > maxk and not sym:
        return None          # k0 >= R and k0 <= maxk < R: every index is received (no solver)
    if not rest:
        # every index below R is received: a missing one needs size > R, which the trip
        # counts may rule out by themselves (K <= n * BK for KT = cdiv(K, BK) = n)
        ub = _size_upper_bound(eng, eng.tab.atom_ids[Atom("dim", dom)], _trip_forms(eng))
        if ub is not None and ub <= R:
            return None

    def build(z3):
        size = eng.solver.lin(dkey, 0)
        k0 = z3.Int("__k0", eng.solver.ctx)
        cons = [k0 >= R, k0 < size]
        if bdom is not None:        # (and an index B has too)
            cons.append(k0 < eng.solver.lin(eng.tab.atom(Atom("dim", bdom)), 0))
        if unguarded:
            # (an unmasked extent is what the kernel reads: k0 at most the largest index)
            cons.append(z3.Or(*[k0 <= eng.solver.lin(k, c) for k, c, _, _, _ in sym],
                              k0 <= maxk) if sym else k0 <= maxk)
        for k, c, g, _, _ in rest:
            hit = k0 == (eng.solver.lin(k, c) if k else c)
            cons.append(z3.Not(z3.And(hit, eng.solver.cond(list(g)))) if g else z3.Not(hit))
        build.k0 = k0
        return cons, k0

    st, m, again = _solve(eng, build)
    if st == "unsat":
        return None
    if st == "unknown":
        return {"unknown": "accumulation check: solver budget exhausted"}
    atoms = list(eng.solver._atoms.items())

    def found(model: Any) -> dict:
        k0 = model.eval(build.k0, model_completion=True).as_long()
        return {"what": "never", "k0": int(k0), "model": eng.solver.model_dict(model, atoms),
                "domain": dom}
    v = found(m)
    v["__again"] = lambda: found(again())
    return v


def _witness(eng: Any, v: dict, calls: list, w: int, f: int, consumer: Any,
             member: Any = None) -> dict:
    at = calls[0].op.attrs["tiled"].atom.threads
    tiled = calls[0].op.attrs["tiled"]
    t0 = w * at
    tc = eng.table(tiled.c)
    acc = [int(x) for x in tc[t0, 0]]
    if member is not None and member[0] == w:
        # (the member of a reset's class the warp was checked for: check_resets)
        e = member[1]
        t0 = e // tc.shape[1]
        acc = [int(x) for x in tc[t0, e % tc.shape[1]]]
    fname = eng.fields[f]
    pts = []

    def pp(op, label):
        pts.append({"file": op.loc.file, "range": op.loc.range.to_json(), "label": label})

    def when(loops) -> str:
        # (" (kt=0)"; nothing for an MMA outside every loop: it read "again ()")
        return " (" + ", ".join(f"{k}={x}" for k, x in loops) + ")" if loops else ""

    loops_of = {}
    model = {k: x for k, x in v.get("model", {}).items() if not k.startswith("__")}
    if v["what"] == "twice":
        a, b = v["a"], v["b"]
        la = eng.shown(calls[a[3]].loops, calls[a[3]].op, model)
        lb = eng.shown(calls[b[3]].loops, calls[b[3]].op, model)
        value = v["conc"]
        pp(calls[a[3]].op, f"{fname}={value} accumulated{when(la)}")
        pp(calls[b[3]].op, f"{fname}={value} accumulated again{when(lb)}")
        loops_of = {"first": dict(la), "again": dict(lb)}
    else:
        value = v["k0"]
        for c in calls:
            pp(c.op, "accumulates" + when(eng.shown(c.loops, c.op, model)))
    pp(consumer, "the accumulator is used here")
    block = [int(model.get(f"program_id({a})", 0)) for a in range(3)]
    loops = dict(eng.shown(calls[-1].loops, calls[-1].op, model))
    return {
        "block": block,
        "threads": [{"thread": t0, "warp": t0 // eng.ws, "lane": t0 % eng.ws}],
        "loop_indices": loops,
        "what": v["what"], "field": fname, "value": int(value),
        "domain": (f"{v['domain'][0]}.shape[{v['domain'][1]}]" if v.get("domain") else None),
        "accumulator": acc, "mma_loops": loops_of,
        "coordinates": {"acc": acc, fname: int(value)},
        "tags": {"acc": {fname: int(value)}},
        "program_points": pts,
        "model": model,
        "chain": [dict(eng.shown(c.loops, c.op, model)) for c in calls],
        **eng._iterations_entry(model, *(c.loops for c in calls)),
    }
