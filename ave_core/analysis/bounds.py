"""Static out-of-bounds checks of global accesses (AVE208).

Every element a load, copy (cp.async included), gather, store or scatter touches in a global
tensor ``T`` must satisfy ``0 <= c_d < T.shape[d]`` whenever the access's mask admits it,
for every program id and size the unrolled variant stands for (its runtime trip counts are
preconditions: ``KT = cdiv(K, BK) = n``). z3 decides what the fast paths below cannot.

Which dimensions are checked -- the kernel's contract with its launcher is not written in
the DSL, so the check holds the kernel to what it says itself:

* only a dimension whose offset is computed at run time (``m0:m0 + BM``, a k-tile, a
  gathered row) -- a constant slice (``0:D`` of a constexpr head dimension) is the kernel's
  statement of the tensor's extent;
* a dimension whose coordinate depends on a program id or a loaded value is checked when
  the access's mask mentions it, or when the access is masked and the dimension is tiled
  (a slice ``m0:m0 + BM`` of more than one element: its edge is what the mask is for); otherwise (an unmasked read
  of a routing table at ``pid * BM``, a batch or head index) routing tables are trusted to
  be well formed (entries in ``[0, extent)``) and the launch grid to keep the *grid
  contract*: an offset holding one program id once (``c * pid``, ``pid * N``) is checked
  whole, both sides, assuming the block's own tile fits, ``(pid + 1) * |c| <= extent``
  (``pid * BM + i`` is inside, ``X.shape[0] + pid * 16`` and a flat row's last k-tile
  ``pid * N + t * 32 + j`` are not); a masked access whose mask ends the dimension at
  the block's own row end (``i < row0 + N``, ``row0 = pid * N``) states the contract of
  that stride too and is checked, with its mask, under every contract; other program-id
  offsets (two ids, a grid size, an id inside min/max) are trusted above and checked
  below 0; a k-tile or any other loop-driven offset is always checked;
* a mask conjunct ``c_d < E`` whose bound ``E`` is a size of other tensors (``n < S_KV`` for
  V with ``S_KV = K.shape[2]``, ``p < num_valid = X.shape[0] * TOPK`` for a scattered
  output) states the kernel's precondition ``T.shape[d] == E``; it is assumed (for every
  access of the kernel). A bound with a constant offset (``M + 8``) is no size: checked.

A finding's witness: the block and sizes (z3's model), the thread that makes the access,
the loop iterations, the tensor and the out-of-bounds coordinate, and the shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ave_core.analysis.symbolic import (Atom, SymInt, _uniform, _unique_1d, _unique_rows,
                                        any_last, atoms_in, mentions)

_NONNEG = ("pid", "nprog", "dim", "stride", "load")
#: obligations checked under the grid contract: of an access every block makes ("grid",
#: its own contract among them), of one under a runtime branch ("grid_b": the others')
GRID = ("grid", "grid_b")
#: ... and those of a masked access whose mask bounds it by its block's row end ("grid_m",
#: see BoundsChecker.mask_bounds), checked with their guards under every contract
CONTRACTED = GRID + ("grid_m",)


def _lt_conjuncts(region: Any, env: dict) -> list:
    """The ``(lhs, rhs)`` of the mask's conjuncts that say ``lhs < rhs``: ``c < E``, ``E >
    c``, ``c <= E - 1``, ``E - 1 >= c``, or any of them negated an even number of times
    (``not (c >= E)``, ``~(c >= E)``; ``not (a | b)`` as ``not a & not b``), joined by
    ``&`` at the top of the yielded condition -- a comparison under ``|`` states no
    extent. (Only ``c < E`` and ``not (c >= E)`` were: ``M > m`` or ``~(m >= M)`` lost the
    mask's shape precondition, a false AVE208; a review helper.)"""
    y = next((o for o in reversed(region.ops) if o.name in ("ave.yield", "scf.yield")), None)
    if y is None or not y.operands:
        return []

    def owner(v: Any) -> Any:
        d = getattr(v, "owner", None)
        return d if d is not None and hasattr(d, "name") else None

    def negation_of(d: Any) -> Any:
        """``x`` when ``d`` is ``x xor true`` (how ``not x`` is compiled), else None."""
        if d.name != "arith.xor":
            return None
        a, b = d.operands
        for x, t in ((a, b), (b, a)):
            c = owner(t)
            if c is not None and c.name == "arith.constant" and \
                    c.attrs.get("value") in (True, 1, -1):      # (~x is x xor -1)
                return x
        return None

    def minus_one(v: Any) -> Any:
        """``E`` when ``v`` is ``E - 1`` (or ``E + -1``), else None."""
        d = owner(v)
        if d is None or d.name not in ("arith.sub", "arith.add") or len(d.operands) != 2:
            return None
        c = owner(d.operands[1])
        if c is None or c.name != "arith.constant":
            return None
        want = 1 if d.name == "arith.sub" else -1
        return d.operands[0] if c.attrs.get("value") == want else None

    flip = {"lt": "ge", "ge": "lt", "gt": "le", "le": "gt"}

    out, todo = [], [(y.operands[0], False)]
    while todo:
        v, neg = todo.pop()
        d = owner(v)
        if d is None:
            continue
        inner = negation_of(d)
        if inner is not None:
            todo.append((inner, not neg))
        elif d.name == "arith.and" and not neg:
            todo += [(x, False) for x in d.operands]
        elif d.name == "arith.or" and neg:       # not (a | b) is (not a) & (not b)
            todo += [(x, True) for x in d.operands]
        elif d.name == "arith.cmp" and d.attrs.get("pred") in flip:
            pred = flip[d.attrs["pred"]] if neg else d.attrs["pred"]
            a, b = d.operands
            if pred == "lt":                              # a < b
                out.append((a, b))
            elif pred == "gt":                            # a > b: b < a
                out.append((b, a))
            elif pred == "le" and minus_one(b) is not None:   # a <= E - 1: a < E
                out.append((a, minus_one(b)))
            elif pred == "ge" and minus_one(a) is not None:   # E - 1 >= b: b < E
                out.append((b, minus_one(a)))
    return out[::-1]


def _uniform_form(v: Any) -> tuple[int, int] | None:
    """``(key, conc)`` of a scalar the same for every thread, or None."""
    if not isinstance(v, SymInt) or not _uniform(np.asarray(v.key)) or \
            not _uniform(np.asarray(v.conc)):
        return None
    return int(np.asarray(v.key).reshape(-1)[0]), int(np.asarray(v.conc).reshape(-1)[0])


def _min_operands(v: Any) -> tuple:
    """The two operands of ``v`` when it is ``ave.minimum(x, y)`` (``arith.min``), else ()."""
    d = getattr(v, "owner", None)
    if d is not None and getattr(d, "name", None) == "arith.min" and len(d.operands) == 2:
        return tuple(d.operands)
    return ()


class BoundsChecker:
    def __init__(self, eng: Any) -> None:
        self.eng = eng
        self.obligations: list = []
        #: the side(s) the obligation being decided asks about (see :meth:`_check_one`)
        self._lower = self._contract = False
        self.assumptions: list = []          # (tensor, dim, key, conc): shape == LIN + conc
        self._nonneg_memo: dict = {}
        self._grid_memo: dict = {}
        self._grid_fit_memo: dict = {}
        self._possible_memo: dict = {}
        #: the grid contracts of the variant's unmasked program-id accesses: (pid atom,
        #: stride key, stride conc, tensor, dim, the runtime branches' conditions around
        #: the access (condition ids; empty: always)) -- (pid + 1) * |stride| <= extent
        #: where the conditions hold
        self.contracts: list = []
        self._memo: dict = {}
        self._never_memo: dict = {}        # see _never_out
        #: when a list: every assumption a mask states is appended (Engine._xv_mark)
        self.mask_log: list | None = None
        #: ... and the grid contracts it states (Engine._xv_mark)
        self.contract_log: list | None = None
        #: the op whose mask ran last, and its row-end bounds: (tensor, dim) -> (pid atom,
        #: stride key, stride conc) for a conjunct ``c_d < (pid + 1) * stride``
        self._row_ends: tuple = (None, {})

    def _state_contract(self, item: tuple) -> None:
        """State a grid contract (once), and log it for the access's memo entry (see
        Engine._xv_record: a later trip-count variant replaying the access must state it
        too -- it lost the contract of a masked store's row end after the first variant,
        a false AVE208 found with 2 trips; a review helper)."""
        if item not in self.contracts:
            self._push(self.contracts, item)
        if self.contract_log is not None:
            self.contract_log.append(item)

    def _push(self, lst: list, item: Any) -> None:
        lst.append(item)
        if self.eng.journal is not None:
            pop = lambda: lst.pop()  # noqa: E731
            pop.keep = True          # a record (kept when a forked arm is rolled back)
            self.eng.journal.append(pop)

    # ------------------------------------------------------------------ collection

    def mask_bounds(self, op: Any, tile: Any, region: Any, args: list, env: dict) -> None:
        """After a mask region ran: record ``c_d < E`` conjuncts (E not T's own extent)."""
        if tile.space != "global" or tile.tensor is None:
            return
        eng = self.eng
        name = tile.tensor.name
        ends: dict = {}
        self._row_ends = (op, ends)
        uppers: dict = {}           # dim -> how many `c_d < E` conjuncts bound it
        for lhs, rhs in _lt_conjuncts(region, env):
            d = next((i for i, a in enumerate(region.args) if a is lhs), None)
            if d is None:
                continue
            uppers[d] = uppers.get(d, 0) + 1
            if uppers[d] > 1:
                # (a second bound on the dimension -- `(i < row0 + N) & (i < M)`: the kernel
                # expects rows that do not fit, the last one partial -- states no row end:
                # its contract contradicted an else-arm's `row0 + N > M`, and an unmasked
                # read there was proved; a review helper)
                ends.pop((name, d), None)
            e = env.get(rhs)
            if not isinstance(e, SymInt):
                continue
            k = int(np.asarray(e.key).reshape(-1)[0])
            c = int(np.asarray(e.conc).reshape(-1)[0])
            if uppers[d] == 1 and _uniform(np.asarray(e.key)) and \
                    _uniform(np.asarray(e.conc)):
                end = self._row_end(k, c)
                if end is not None:
                    ends[(name, d)] = end
            if not self._states_extent(name, d, k, c):
                # `c < ave.minimum(K, kend)` is `(c < K) & (c < kend)`: K states the extent
                # when it is the minimum's one size (split-K's block end; it was a false
                # AVE208). A minimum of two sizes, `ave.minimum(KA, B.shape[0])`, says they
                # may differ: neither is stated (a review helper)
                parts = [_uniform_form(env.get(x)) for x in _min_operands(rhs)]
                sizes = [f for f in parts if f is not None and self._is_size(*f)]
                if len(parts) != 2 or len(sizes) != 1 or \
                        not self._states_extent(name, d, *sizes[0]):
                    continue
                k, c = sizes[0]
            item = (name, d, k, c)
            if self.mask_log is not None:
                self.mask_log.append(item)
            if item not in self.assumptions:
                self._push(self.assumptions, item)

    def _is_size(self, k: int, c: int) -> bool:
        """``LIN[k] + c`` is a size: tensors' dims (times positive constants), never
        "size + 8"."""
        tab = self.eng.tab
        return c == 0 and k != 0 and all(tab.atoms[a].kind == "dim" and co > 0
                                         for a, co in tab.lins[k])

    def _states_extent(self, name: str, d: int, k: int, c: int) -> bool:
        """A mask conjunct ``c_d < LIN[k] + c`` on tensor ``name`` states its extent
        ``name.shape[d] == LIN[k] + c``: a size (:meth:`_is_size`) not of its own extent."""
        own = self.eng.tab.atom_ids.get(Atom("dim", (name, d)))
        if own is not None and any(a == own for a, _ in self.eng.tab.lins[k]):
            return False
        return self._is_size(k, c)

    def access(self, op: Any, tile: Any, coords: list, guard: np.ndarray,
               threads: np.ndarray) -> None:
        """Record the elements of one global access (checked at the end of the variant)."""
        eng = self.eng
        if tile.tensor is None or len(coords) == 0 or len(coords[0]) == 0:
            return
        dyn = getattr(tile, "dyn", None) or (False,) * len(tile.origin)
        gath = tile.tensor.gather[0] if tile.tensor.gather is not None else None
        used = _mask_args(op)
        try:
            gc = eng.global_coords(tile, coords)
        except Exception:
            return
        n = len(coords[0])
        guard = eng.conds.rows(guard, n)
        branched = np.zeros(n, bool)        # under a runtime branch (see the grid contract)
        bg = None                           # the branches' guard rows (without the mask)
        if eng.runtime_branches:
            # (made only when the enclosing branches are taken)
            bg = eng.branch_guard(np.broadcast_to(np.asarray(threads), (n,)))
            branched = (np.asarray(bg).reshape(n, -1) != 0).any(axis=1)
            guard = eng.conds.conj_arrays(guard, bg)
        live = eng.conds.truth(guard) != 1
        if not live.any():
            return
        masked = bool(op.attrs.get("masked"))
        for d, c in enumerate(gc):
            if not (dyn[d] if d < len(dyn) else False) and d != gath:
                continue
            key = np.broadcast_to(np.asarray(c.key), (n,))
            conc = np.broadcast_to(np.asarray(c.conc), (n,))
            # program ids / loaded values: trusted to the launch unless the mask mentions the
            # dim, or the access is masked and the dim is tiled (a slice: its edge is the
            # mask's business; a gathered dimension's too -- with no bound on it at all,
            # a routing table's padding ids read past the tensor: a mutant dropping `t < T`
            # went unreported while a wrong bound was caught); an integer-indexed dim (a
            # batch, a head) stays trusted
            # (a slice of one element, `X[r:r + 1, 0:BN]` of a row kernel, is the index
            # `X[r, 0:BN]`: trusted as it is -- masked on its columns, the row was checked
            # with no contract, a false AVE208 for a grid of more blocks than rows; a
            # review helper)
            tiled = d in tile.dims and (len(tile.shape) != len(tile.dims) or
                                        tile.shape[tile.dims.index(d)] > 1)
            keys = _distinct_keys(c.key)
            trusted = d not in used and not (masked and tiled)
            # Per element, by its distinct linear form (one table entry in a fragment
            # trusted its constant rows too; review helpers): a form with one program id
            # once is checked whole under the grid contract (:meth:`_grid_terms`; it was
            # trusted above: a tile at `X.shape[0] + pid * 16` was clean; a review helper),
            # another form with a program id is trusted to the grid above, its lower side
            # checked unless >= 0 by its atoms;
            # a form of table entries (or untracked values) is checked whole under the
            # table contract -- each entry lies in [0, extent) -- so `Ids[r] - 1`,
            # `Ids[r] + 100000`, a masked load's If(mask, Ids[r], -1) are checked (they were
            # trusted whole) and a bare entry `Ids[r]` costs nothing (skipped: in bounds by
            # the contract).
            kk = np.asarray(key, np.int64)
            cat = {}            # key -> "table" | "bare" | "grid" | "grid_low"
            for k in (int(k) for k in keys):
                if not trusted or not self._runtime_index(k):
                    continue
                # (a form with a program id keeps the grid trust, tables in it or not: the
                # contract bounds the entries only, and max(Ids[r], pid) was reported past
                # the end for a grid not covering the tensor; a review helper)
                if self._mentions_table(k) and not mentions(self.eng.tab, k, ("pid",)):
                    cat[k] = "bare" if self._bare_entry(k) else "table"
                elif self._grid_terms(k) is not None:
                    cat[k] = "gridc"
                else:
                    cat[k] = "grid" if self._nonneg(k) else "grid_low"

            def isin(kind: str) -> np.ndarray:
                ks = [k for k, v in cat.items() if v == kind]
                return np.isin(kk, np.fromiter(ks, np.int64)) if ks else \
                    np.zeros(len(kk), bool)
            bare, table, grid, grid_low, gridc = (
                isin(x) for x in ("bare", "table", "grid", "grid_low", "gridc"))
            # (its own contract keeps most such tiles inside -- `pid * BM + i`, i < BM:
            # decided here without z3; the others at the end of the variant, under every
            # access's contract (:meth:`check`); a search per guard took 0.2 s per access
            # of a flash attention)
            fits = np.zeros(len(kk), bool)
            own = np.zeros(len(kk), bool)        # checked under a contract of its own
            for k in [k for k, v in cat.items() if v == "gridc"]:
                sel = live & (kk == k)
                if not sel.any():
                    continue
                p, fk, fc = self._grid_terms(k)
                # an access under runtime branches states its contract where they are
                # taken (taken always, an arm never taken lent its stride), and none when
                # the branches rule it out: the contract of `X[m0 - 16:m0]` in the
                # else-arm of `if m0 + 16 <= M:` contradicted the arm's condition, so every
                # search there was unsat (a review helper). Elements under different
                # conditions: none of their own.
                when: tuple | None = ()
                if branched[sel].any():
                    # (threads under different conditions -- a branch on a per-thread
                    # value, no choice of tiles: the contract holds as for an access
                    # every block makes)
                    rows = {tuple(sorted({int(c) for c in r if c != 0}))
                            for r in guard[sel].tolist()}
                    when = next(iter(rows)) if len(rows) == 1 else ()
                    item = (p, fk, fc, tile.tensor.name, d, when)
                    if when and not self._contract_possible(item, op):
                        when = None
                if when is None:
                    continue
                item = (p, fk, fc, tile.tensor.name, d, when)
                self._state_contract(item)
                own |= sel
                if self._grid_fast(tile.tensor.name, d, k, int(conc[sel].min()),
                                   int(conc[sel].max())):
                    fits |= sel
            gridc &= ~fits
            branched = branched & ~own      # ("grid_b": no contract of its own)
            skip = (bare & (conc == 0)) | (grid & (conc >= 0)) | fits
            low = grid_low | (grid & (conc < 0))
            con = table | (bare & (conc != 0))
            full = ~(skip | low | con | gridc)
            # a masked dimension whose mask ends it at the block's own row end (`i < row0
            # + N`, row0 = pid * N: a flat row) states that row's grid contract, as an
            # unmasked tile of that stride does; its elements are checked, with their
            # guards, under every contract (they were checked with none: the witness was
            # a launch with rows past the tensor, a false positive)
            rowc = np.zeros(len(kk), bool)
            end = self._row_ends[1].get((tile.tensor.name, d)) \
                if self._row_ends[0] is op and masked and d in used else None
            if end is not None and full.any():
                when = ()
                if branched[live].any():
                    # (the branches' conditions, not the mask's: its row-end conjunct
                    # differs per element, and no contract was stated under `if flag > 0:`)
                    rows = {tuple(sorted({int(c) for c in r if c != 0}))
                            for r in eng.conds.rows(bg, n)[live].tolist()}
                    when = next(iter(rows)) if len(rows) == 1 else None
                    if when and not self._contract_possible(end + (tile.tensor.name, d,
                                                                   when), op):
                        when = None
                if when is not None:
                    item = end + (tile.tensor.name, d, when)
                    self._state_contract(item)
                    rowc, full = full, np.zeros(len(kk), bool)
            thr = np.asarray(threads)
            for sub, lower, contract in ((live & full, False, False),
                                         (live & rowc, False, "grid_m"),
                                         (live & low, True, False),
                                         (live & con, False, "table"),
                                         (live & gridc & ~branched, False, "grid"),
                                         (live & gridc & branched, False, "grid_b")):
                if not sub.any():
                    continue
                self._push(self.obligations, (op, eng.loops, tile.tensor.name, d,
                                              key[sub].copy(), conc[sub].copy(),
                                              guard[sub].copy(), thr[sub].copy(), gc, sub,
                                              (lower, contract)))

    def _row_end(self, k: int, c: int) -> tuple | None:
        """``(pid_atom, stride key, stride conc)`` when ``LIN[k] + c`` is the end of the
        block's own row, ``(pid + 1) * stride`` (``row0 + N`` with ``row0 = pid * N``: a
        flat row's mask ``i < row0 + N``), else None. The grid contract of that stride
        says exactly that the bound is within the extent."""
        g = self._grid_terms(k)
        if g is None:
            return None
        p, fk, fc = g
        tab = self.eng.tab
        rest = tuple(t for t in tab.lins[k] if not mentions(tab, tab.lin((t[:1] + (1,),)),
                                                              ("pid",)))
        if not rest and c == 0 and len(tab.lins[k]) == 1 and tab.lins[k][0][1] == 1:
            # `(pid + 1) * N` written as one product
            at = tab.atoms[tab.lins[k][0][0]]
            if at.kind == "op" and at.args[0] == "mul":
                for (sk, sc), (ok, oc) in (at.args[1:3], at.args[2:0:-1]):
                    if sc == 1 and tab.lins[sk] == ((p, 1),) and \
                            not mentions(tab, ok, ("pid",)) and ok:
                        return (p, ok, oc)
        if (tab.lin(rest) if rest else 0) != fk or c != fc or (fk == 0 and fc <= 0):
            return None
        return g

    def _mentions_table(self, key: int) -> bool:
        """The form mentions a value loaded from a table (or an index the analysis does
        not follow), directly or inside an opaque term."""
        return mentions(self.eng.tab, key, ("load", "value"))

    def _grid_terms(self, key: int) -> tuple | None:
        """``(pid_atom, coef_key, coef_conc)`` when ``LIN[key]`` is a tile origin of one
        program id: the id appears once, as a term ``c * pid`` or a product of it with
        factors free of program ids (``pid * N`` of a flat row-major matrix, ``pid * S *
        D``), and no grid size nor table entry appears -- the coefficient (``c``, ``N``,
        ``S * D``) is the block's stride along the dimension. None otherwise (the form
        keeps the grid trust: two program ids in one dimension, a grid-stride loop,
        ``max(Ids[r], pid)``)."""
        memo = self._grid_memo.get(key)
        if memo is not None or key in self._grid_memo:
            return memo
        tab = self.eng.tab
        found: list = []
        ok = not mentions(tab, key, ("nprog", "load", "value"))
        for a, m in tab.lins[key] if ok else ():
            if tab.atoms[a].kind != "pid" and not mentions(tab, tab.lin(((a, 1),)), ("pid",)):
                continue
            f = self._pid_factor(a, m)
            if f is None:
                ok = False
                break
            found.append(f)
        out = (found[0] if ok and len(found) == 1 else None)
        self._grid_memo[key] = out
        return out

    def _pid_factor(self, a: int, m: int) -> tuple | None:
        """``(pid_atom, coef_key, coef_conc)`` when the term ``m * atom a`` is a program id
        times factors free of program ids (nested products: ``pid * S * D`` is ``(pid *
        S) * D``; it was trusted while ``pid * (S * D)`` was checked; a review helper),
        else None."""
        tab = self.eng.tab
        at = tab.atoms[a]
        if at.kind == "pid":
            return (a, 0, m)
        if at.kind != "op" or at.args[0] != "mul":
            return None
        sides = at.args[1:3]
        pidk = [i for i, (k, _) in enumerate(sides) if mentions(tab, k, ("pid",))]
        if len(pidk) != 1:
            return None
        # (the pid side's constant adds a pid-free multiple of the other side)
        (pk, _), (fk, fc) = sides[pidk[0]], sides[1 - pidk[0]]
        terms = tab.lins[pk]
        if len(terms) != 1:
            return None
        inner = self._pid_factor(*terms[0])
        if inner is None:
            return None
        p, ik, ic = inner
        # the coefficient: m * (LIN[ik] + ic) * (LIN[fk] + fc)
        if ik == 0:
            return (p, tab.scale(fk, ic * m), fc * ic * m)
        if fk == 0:
            return (p, tab.scale(ik, fc * m), ic * fc * m)
        prod = tab.atom(Atom("op", ("mul", (ik, ic), (fk, fc))))
        return (p, tab.scale(prod, m), 0)

    def _grid_fast(self, name: str, d: int, key: int, lo: int, hi: int) -> bool:
        """``LIN[key] + c`` in ``[0, extent)`` for every ``c`` in ``[lo, hi]`` by the
        access's own contract, decided without z3 for the usual forms: ``c * pid + [lo,
        hi]`` fits for ``0 <= lo``, ``hi < c`` (``(pid + 1) * c <= extent``); ``extent - c
        * pid + [lo, hi]`` (tiles counted from the end) for ``-c <= lo``, ``hi < 0`` (it
        took ``lo <= -c``: a tile starting below its block's was proved; a review
        helper). False: not decided here."""
        tab = self.eng.tab
        terms = tab.lins[key]
        own = tab.atom_ids.get(Atom("dim", (name, d)))
        pids = [(a, c) for a, c in terms if tab.atoms[a].kind == "pid"]
        if len(pids) != 1 or pids[0][1] == 0:
            return False
        rest = [t for t in terms if t != pids[0]]
        c = pids[0][1]
        if not rest and c > 0:
            return 0 <= lo and hi < c
        if rest == [(own, 1)] and c < 0:
            return c <= lo and hi < 0
        return False

    def _contract_possible(self, item: tuple, op: Any = None) -> bool:
        """The branch conditions of contract ``item`` and the contract itself hold together
        for some sizes and block (z3; memoized; its atoms forgotten after). Undecided
        within the solver's budget: False -- the contract is not stated (stated, it could
        contradict its conditions and make every search under it unsat: an out-of-bounds
        read in the else-arm of `if row0 + N <= M:` was proved with a budget of 300 ms; a
        fresh user) -- and ``op``'s bounds are reported unknown (AVE205) unless a search
        finds a violation (an ``"undecided"`` obligation, see :meth:`check`)."""
        r = self._possible_memo.get(item)
        if r is None:
            p, fk, fc, t, dd, when = item
            sv = self.eng.solver
            z3 = sv.z3
            with sv.timed(), sv.scratch():
                s = z3.Solver(ctx=sv.ctx)
                s.set("timeout", sv.timeout_ms)
                sv.queries += 1
                f = sv.lin(fk, fc)
                ext = sv.lin(self.eng.tab.atom(Atom("dim", (t, dd))), 0)
                s.add((sv.atom(p) + 1) * z3.If(f >= 0, f, -f) <= ext)
                s.add(self._when(when))
                for (tt, ddd, bk, bc) in self.assumptions:
                    s.add(sv.lin(self.eng.tab.atom(Atom("dim", (tt, ddd))), 0) ==
                          sv.lin(bk, bc))
                s.add(*sv._domain)
                st = s.check()
                r = self._possible_memo[item] = None if st == z3.unknown else st != z3.unsat
        if r is None:
            if op is not None:
                self._push(self.obligations, (op, self.eng.loops, item[3], item[4],
                                              np.zeros(0, np.int64), np.zeros(0, np.int64),
                                              np.zeros((0, 1), np.int32),
                                              np.zeros(0, np.int64), None, None,
                                              (False, "undecided")))
            return False
        return r

    def _when(self, when: tuple) -> Any:
        """The z3 term of a contract's conditions (a conjunction of condition ids)."""
        return self.eng.solver.cond(list(when))

    def _grid_items(self, ob: tuple) -> list:
        """``(name, d, key, lo, hi)`` per linear form of a grid-contract obligation (its
        offsets' range), those the fast path does not decide."""
        name, d, key, conc = ob[2], ob[3], np.asarray(ob[4]), np.asarray(ob[5])
        own = ob[10][1] == "grid"
        out = []
        for k in _distinct_keys(key).tolist():
            sel = key == k
            lo, hi = int(conc[sel].min()), int(conc[sel].max())
            # (the fast path is the access's own contract: none under a runtime branch)
            if not own or not self._grid_fast(name, d, int(k), lo, hi):
                out.append((name, d, int(k), lo, hi))
        return out

    def _grid_fitting(self, obs: list) -> set:
        """The ``(name, d, key, lo, hi)`` items of the obligations ``obs`` that fit under the
        grid contract (:meth:`_grid_items`; those the fast path decides are left out). One
        query for all, then again without the items its model puts outside (at most 8
        rounds): usually a few queries per variant (one per form and offset range took
        2.7 s for 128 rows of a flat matrix; a review helper)."""
        items = sorted({it for ob in obs for it in self._grid_items(ob)})
        if not items:
            return set()
        mk = (tuple(items), tuple(self.assumptions), tuple(self.contracts))
        r = self._grid_fit_memo.get(mk)
        if r is not None:
            return r
        sv = self.eng.solver
        z3 = sv.z3
        proved: set = set()
        todo = list(items)
        eng = self.eng
        # (its atoms -- the contracts' extents -- are forgotten after: a variant that
        # skipped it would list fewer in a later witness; see Solver.scratch)
        with sv.timed(), sv.scratch():
            contract, self._contract = self._contract, "grid"
            try:
                # (the constraints every item shares: the assumed extents, the contracts)
                _, _, shared = self._terms(*items[0][:3], items[0][3], [], trips=False)
                outs = {}
                for name, d, k, lo, hi in items:
                    size = sv.lin(eng.tab.atom(Atom("dim", (name, d))), 0)
                    outs[(name, d, k, lo, hi)] = z3.Or(sv.lin(k, lo) < 0,
                                                       sv.lin(k, hi) >= size)
            finally:
                self._contract = contract
            for _ in range(8):
                s = z3.Solver(ctx=sv.ctx)
                s.set("timeout", sv.timeout_ms)
                sv.queries += 1
                s.add(*shared)
                s.add(*sv._domain)
                s.add(z3.Or(*[outs[it] for it in todo]))
                res = s.check()
                if res == z3.unsat:
                    proved |= set(todo)
                    break
                if res != z3.sat:
                    break
                m = s.model()
                bad = {it for it in todo
                       if z3.is_true(m.eval(outs[it], model_completion=True))}
                if not bad:
                    break
                todo = [it for it in todo if it not in bad]
                if not todo:
                    break
        self._grid_fit_memo[mk] = proved
        return proved

    def _bare_entry(self, key: int) -> bool:
        """The form is one table entry, ``1 * Ids[r]``."""
        terms = self.eng.tab.lins[key]
        return len(terms) == 1 and terms[0][1] == 1 and \
            self.eng.tab.atoms[terms[0][0]].kind == "load"

    def _runtime_index(self, key: int) -> bool:
        """The linear form mentions a program id or a loaded value -- an index table's
        entry or an index the analysis does not follow (directly or inside an opaque
        term)."""
        return mentions(self.eng.tab, key, ("pid", "load", "value"))

    def _nonneg(self, key: int) -> bool:
        """LIN[key] >= 0 for every admissible value of its atoms (sizes, ids, indices)."""
        r = self._nonneg_memo.get(key)
        if r is not None:
            return r
        tab = self.eng.tab
        ok = True
        for a, coef in tab.lins[key]:
            at = tab.atoms[a]
            if coef < 0:
                ok = False
            elif at.kind in _NONNEG:
                continue
            elif (at.kind == "op" and at.args[0] in ("floordiv", "mod", "mul", "min", "max")
                  or at.kind == "select"):
                (ka, ca), (kb, cb) = at.args[1:3]
                ok = ok and ca >= 0 and cb >= 0 and self._nonneg(ka) and self._nonneg(kb)
            else:
                ok = False
        self._nonneg_memo[key] = ok
        return ok

    # ------------------------------------------------------------------ checking

    def check(self, known: Any = ()) -> list[dict]:
        """Decide the recorded obligations; one finding (the first) per op.

        ``known``: op locations ``(file, range)`` that already have a finding (from an
        earlier trip-count variant: the analysis keeps the first variant's); their
        obligations are not decided again (with the runtime sizes free, that is a z3
        search per obligation and variant: a kernel that reads past K in every variant
        paid it T times) -- when the search would make no new z3 atom (witness models list
        every atom the solver knew: see :meth:`_search_knows`)."""
        found: dict = {}
        # (the grid-contract obligations the contract alone keeps inside, decided
        # together: a few queries per variant, see _grid_fitting)
        fit = self._grid_fitting([ob for ob in self.obligations if ob[10][1] in GRID
                                  and not (ob[0].loc.report_key in known and
                                           self._search_knows(ob))])
        undecided = []
        for ob in self.obligations:
            op = ob[0]
            k_op = op.loc.report_key
            if ob[10][1] == "undecided":
                # (a contract z3 could not decide: unknown unless a violation is found)
                undecided.append(op)
                continue
            if k_op in found or (k_op in known and self._search_knows(ob)):
                continue
            if ob[10][1] in GRID and all(it in fit for it in self._grid_items(ob)):
                continue
            f = self._check_one(*ob)
            if f is not None:
                found[k_op] = dict(f)
        for op in undecided:
            if op.loc.report_key not in found and op.loc.report_key not in known:
                found[op.loc.report_key] = {"op": op, "unknown": True}
        return list(found.values())

    def _search_knows(self, ob: tuple) -> bool:
        """Deciding obligation ``ob`` would make no new z3 atom: its coordinates' linear
        forms, the size, its guards' conditions, the assumed
        extents and the variant's trip counts have their terms already (the same op was
        searched in an earlier variant: usually so)."""
        from ave_core.analysis.accumulation import _trip_forms
        eng = self.eng
        sv = eng.solver
        _, _, name, d, key, _, guard, _, _, _, how = ob
        grid = how[1] in CONTRACTED
        if not all(sv.knows_dim(dim) for dim in
                   [(name, d)] + [(t, dd) for (t, dd, _, _) in self.assumptions]
                   + ([(t, dd) for (_, _, _, t, dd, _) in self.contracts] if grid else [])):
            return False
        keys = set(_distinct_keys(key).tolist())
        keys |= {bk for (_, _, bk, _) in self.assumptions}
        if grid:
            # (the grid contracts' strides, program ids and branch conditions: the search
            # makes them)
            keys |= {fk for (_, fk, _, _, _, _) in self.contracts}
            if not all(p in sv._atoms and all(sv.knows_cond(c) for c in when)
                       for (p, _, _, _, _, when) in self.contracts):
                return False
        keys |= {k for k, _, _, _, _ in _trip_forms(eng)}
        if not all(sv.knows(k) for k in keys):
            return False
        return all(sv.knows_cond(c) for c in np.unique(guard).tolist())

    def _bounds_of(self, name: str, d: int) -> list[tuple[int, int]]:
        tab = self.eng.tab
        out = [(tab.atom(Atom("dim", (name, d))), 0)]
        out += [(k, c) for (t, dd, k, c) in self.assumptions if t == name and dd == d]
        return out

    def _check_one(self, op, loops, name, d, key, conc, guard, threads, gc, live,
                   how=(False, False)):
        # (how: (lower, contract) -- lower: only `index < 0` is asked, a trusted grid
        # dimension's computed index; contract: the table entries in the form lie in
        # [0, extent), a trusted dimension indexed by a table)
        lower, contract = how
        self._lower, self._contract = lower, contract
        try:
            return self._check_one_side(op, loops, name, d, key, conc, guard, threads, gc,
                                        live, how)
        finally:
            self._lower = self._contract = False

    def _check_one_side(self, op, loops, name, d, key, conc, guard, threads, gc, live,
                        how):
        # the fast paths (syntactic guards, nonnegative forms) do not depend on the
        # variant's trip counts: an obligation of the prefix a variant shares with the
        # previous one reuses them under the same assumptions; z3 runs again (the trip-count
        # preconditions differ per variant)
        # (the bounds, the assumed extents included, are part of the key: a variant can
        # assume other ones for the same obligation)
        ob_id = (id(key), id(guard), how)
        bounds = tuple(self._bounds_of(name, d))
        memo = self._memo.get(ob_id)
        if memo is not None and memo[0] is key and memo[1] == bounds:
            todo = memo[2]
        else:
            todo = self._fast(name, d, key, conc, guard, bounds)
            self._memo[ob_id] = (key, bounds, todo)
        if len(todo) == 0:
            return None
        return self._search(op, loops, name, d, key, conc, guard, threads, gc, live, todo)

    def _fast(self, name, d, key, conc, guard, bounds=None) -> np.ndarray:
        """Elements the fast paths cannot prove in bounds.

        Work is per distinct value where values repeat (an access of a tile has one
        linear form per dimension, or a few, and as many offsets as the tile is long along
        it): the linear forms of ``c - E`` per distinct key, the condition lookups per
        distinct ``(key, conc)``."""
        eng = self.eng
        tab = eng.tab
        if bounds is None:
            bounds = self._bounds_of(name, d)
        n = len(key)
        if n == 0:
            return np.zeros(0, np.int64)
        key = np.asarray(key, np.int64)
        conc = np.asarray(conc, np.int64)
        if _uniform(key):                             # the usual: one linear form
            uk, kinv = key[:1], None
        else:
            uk, kinv = _unique_1d(key)
        ok_hi = np.zeros(n, bool)
        guarded = any_last(guard != 0)
        for bk, bc in bounds:
            # c - E = LIN[key] - LIN[bk] + (conc - bc)
            dk_u = np.array([tab.add(int(k), bk, -1) for k in uk], np.int64)
            dk = np.full(n, dk_u[0], np.int64) if kinv is None else dk_u[kinv]
            dc = conc - bc
            conc0 = dk == 0
            ok_hi |= conc0 & (dc < 0)
            # the cond id of `c - E < 0` per element (-1: never built, so not in any guard);
            # looked up only for elements still open that have a guard
            open_ = ~ok_hi & ~conc0 & guarded
            if not open_.any():
                continue
            sel = np.nonzero(open_)[0]
            if kinv is None:                          # one linear form: by offset
                cs, inv = _unique_1d(dc[sel])
                ks = np.full(len(cs), dk_u[0], np.int64)
            else:
                u, inv = _unique_rows(dk[sel], dc[sel])
                ks, cs = u[:, 0], u[:, 1]
            ce = eng.conds.find_atomic_many("lt", ks, cs)
            miss = ce < 0
            if miss.any():
                ce[miss] = eng.conds.find_atomic_many("le", ks[miss], cs[miss] + 1)
            ce = ce[inv]
            ok_hi[sel] |= (ce >= 0) & any_last(guard.take(sel, axis=0) == ce[:, None])
        if self._lower:
            ok_hi[:] = True             # (only the lower side is asked)
        nn = np.array([k == 0 or self._nonneg(int(k)) for k in uk], bool)
        ok_lo = (conc >= 0) & (nn[0] if kinv is None else nn[kinv])
        return np.nonzero(~(ok_hi & ok_lo))[0]

    def _search(self, op, loops, name, d, key, conc, guard, threads, gc, live, todo):
        # Group by (key, guard's conditions in order): the search takes the 64 groups with
        # the lowest elements, each element list ascending. Vectorized: a masked tile has
        # as many groups as guard rows, a gathered one as many as elements (thousands);
        # only the 64 taken are built.
        todo = np.asarray(todo)
        g_rows = guard[todo]
        # the conditions of a row in order, zeros moved last (rows equal but for the
        # zeros' places are one group)
        perm = np.argsort(g_rows == 0, axis=1, kind="stable")
        g_rows = np.take_along_axis(g_rows, perm, axis=1)
        k_todo = np.asarray(key)[todo]
        cols = [k_todo] + [g_rows[:, j] for j in range(g_rows.shape[1])]
        _, inv = _unique_rows(*cols)
        firsts, first_pos = np.unique(inv, return_index=True)
        take = np.argsort(first_pos, kind="stable")[:64]
        ordered = []
        for gi in take:
            members = todo[inv == firsts[gi]]
            p0 = int(first_pos[gi])
            gk = (int(k_todo[p0]), tuple(int(x) for x in g_rows[p0] if x != 0))
            ordered.append((gk, [int(i) for i in members]))
        best = None
        if self._never_out(name, d, ordered, conc):
            return None
        for (k, g), idx in ordered:
            cs = conc[idx]
            for i in (idx[int(np.argmax(cs))], idx[int(np.argmin(cs))]):
                r = self._solve(name, d, k, int(conc[i]), list(g))
                if r is None:
                    continue
                if not r.get("unknown") and r["value"] >= 0:
                    pz = r["pid_zero"]
                    # past the end: the smallest coordinate of the group that can be
                    # (monotone in the coordinate), then its first element (lowest thread)
                    vals = np.unique(cs)
                    lo, hi = 0, int(np.searchsorted(vals, conc[i]))
                    while lo < hi:
                        mid = (lo + hi) // 2
                        rm = self._solve(name, d, k, int(vals[mid]), list(g), pz)
                        if rm is not None and not rm.get("unknown"):
                            hi, r = mid, rm
                        else:
                            lo = mid + 1
                    i = min(j for j in idx if conc[j] == vals[lo])
                w = self._witness(op, loops, name, d, i, threads, gc, live, r)
                if w.get("unknown"):
                    return w
                rank = (w["block"][::-1], w["threads"][0]["thread"])
                if best is None or rank < best[0]:
                    best = (rank, i, r)
                break
            if best is not None and best[0][0] == [0, 0, 0]:
                break                    # the lowest block; groups come in thread order
        if best is None:
            return None
        _, i, r = best
        w = self._witness(op, loops, name, d, i, threads, gc, live, r)
        if not r.get("unknown"):
            # the reported witness gets the canonical model; computed only for the finding
            # the analysis keeps (the first variant that finds it)
            w["__refine"] = lambda: self._witness(op, loops, name, d, i, threads, gc, live,
                                                  self._final(r))
        return w

    def _solve(self, name: str, d: int, k: int, c: int, guard: list,
               pid_zero: bool | None = None) -> dict | None:
        """Can element ``LIN[k] + c`` along ``name``'s dim ``d`` be out of bounds under
        ``guard``? Tried first in block (0, 0, 0) (the minimal witness), then anywhere;
        ``pid_zero`` forces one of the two."""
        with self.eng.solver.timed():
            if pid_zero is None:
                r = self._solve(name, d, k, c, guard, True)
                return r if r is not None else self._solve(name, d, k, c, guard, False)
            return self._solve_in(name, d, k, c, guard, pid_zero)

    def _solve_in(self, name: str, d: int, k: int, c: int, guard: list,
                  pid_zero: bool) -> dict | None:
        eng = self.eng
        sv = eng.solver
        z3 = sv.z3
        s = z3.Optimize(ctx=sv.ctx)
        s.set("timeout", sv.timeout_ms)
        sv.queries += 1
        x, size, cons = self._terms(name, d, k, c, guard)
        s.add(*sv._domain)               # after building: new atoms add their domains
        s.add(*cons)
        for i, a in enumerate(eng.tab.atoms):
            if i in sv._atoms and a.kind == "load":
                s.add(sv._atoms[i] >= 0)
            if i in sv._atoms and a.kind == "pid":
                if pid_zero:
                    s.add(sv._atoms[i] == 0)
                else:
                    s.add_soft(sv._atoms[i] == 0)
        s.add(x < 0 if self._lower else z3.Or(x < 0, x >= size))
        r = s.check()
        if r == z3.unsat:
            return None
        if r != z3.sat:
            return {"unknown": True}
        # z3's own model while searching (a canonical one costs an optimization per
        # query); the witness finally reported gets the canonical model (:meth:`_final`)
        return self._result(s.model(), (s, x, size, list(sv._atoms.items())), pid_zero)

    def _terms(self, name: str, d: int, k: int, c: int, guard: list,
               trips: bool = True) -> tuple:
        """The z3 terms of the query "can ``LIN[k] + c`` be outside ``name``'s dim ``d``
        under ``guard``": (coordinate, size, constraints: the variant's trip counts unless
        ``trips`` is false, the guard, the assumed extents). Made in this order by every
        query of the search, so the atoms they create come in the same order (witness
        models list them)."""
        eng = self.eng
        sv = eng.solver
        z3 = sv.z3
        from ave_core.analysis.accumulation import _trip_constraints
        x = sv.lin(k, c)
        size = sv.lin(eng.tab.atom(Atom("dim", (name, d))), 0)
        cons = list(_trip_constraints(eng, z3)) if trips else []
        cons.append(sv.cond(guard) if guard else z3.BoolVal(True, sv.ctx))
        for (t, dd, bk, bc) in self.assumptions:
            cons.append(sv.lin(eng.tab.atom(Atom("dim", (t, dd))), 0) == sv.lin(bk, bc))
        if self._contract == "table":
            for a in sorted(atoms_in(eng.tab, k, ("load",))):
                cons.append(sv.atom(a) < size)
        elif self._contract in CONTRACTED:
            # the launch grid's contract with the kernel's unmasked program-id accesses:
            # each block's own tile fits, (pid + 1) * |stride| <= extent, for every such
            # access of the variant at once -- one launch (each access's alone made
            # false positives: a halo read `X[m0 + BM:m0 + BM + 2]` with `X.shape[0] ==
            # Y.shape[0] + 2` and the store of Y's tile; and witnesses past another
            # access's contract; a review helper)
            for p, fk, fc, t, dd, when in self.contracts:
                f = sv.lin(fk, fc)
                ext = sv.lin(eng.tab.atom(Atom("dim", (t, dd))), 0)
                fit = (sv.atom(p) + 1) * z3.If(f >= 0, f, -f) <= ext
                cons.append(z3.Implies(self._when(when), fit) if when else fit)
        return x, size, cons

    def _never_out(self, name: str, d: int, ordered: list, conc: np.ndarray) -> bool:
        """No element of the search's groups can be out of bounds whatever the block, the
        program ids and the guards (but for what every guard implies): a query over the
        groups' coordinate range (``LIN[k] + lo < 0 or LIN[k] + hi >= size``), first alone
        (kept for every iteration and variant), then under the conditions every group's
        guard implies (:meth:`_implied_by_every`) and the variant's trip counts. Unsat makes
        every group's queries unsat (they only add constraints), so the search would find
        nothing: an access in bounds for another reason than its mask (a head index below
        the tensor's head count, a tile the trip counts keep inside) took 2 queries per
        group and variant (64 groups: a broken flash attention spent 13 s there). The
        atoms the group queries would make are made first, in their order (see
        :meth:`_terms`). ``sat`` or ``unknown``: False (the search runs as before)."""
        if len(ordered) < 8:
            return False                 # a few groups: the search itself is as cheap
        k = ordered[0][0][0]
        if any(kg[0] != k for kg, _ in ordered):
            # several linear forms: the query would make the later groups' atoms before
            # the search would (witness models list the atoms a query knew)
            return False
        eng = self.eng
        sv = eng.solver
        z3 = sv.z3
        with sv.timed():
            # the first group's terms, as its search query makes them (the same atoms, in
            # the same order); the query below makes no other atom
            (_, g0), idx0 = ordered[0]
            self._terms(name, d, k, int(conc[idx0[0]]), list(g0))
            lo = min(int(conc[idx].min()) for _, idx in ordered)
            hi = max(int(conc[idx].max()) for _, idx in ordered)
            common = self._implied_by_every(g for (_, g), _ in ordered)
            # first the range alone (kept for every iteration and variant), then under
            # what the guards imply and the variant's trip counts
            from ave_core.analysis.accumulation import _trip_forms
            lower = self._lower
            base = (name, d, k, lo, hi, tuple(self.assumptions), lower,
                    self._contract, tuple(self.contracts) if self._contract in CONTRACTED
                    else ())
            for mk in (base, base + (common, tuple(_trip_forms(eng)))):
                r = self._never_memo.get(mk)
                if r is None:
                    s = z3.Solver(ctx=sv.ctx)
                    s.set("timeout", sv.timeout_ms)
                    sv.queries += 1
                    later = mk is not base
                    _, size, cons = self._terms(name, d, k, lo, list(common) if later else [],
                                                trips=later)
                    s.add(*cons)
                    s.add(*sv._domain)
                    for i, a in enumerate(eng.tab.atoms):
                        if i in sv._atoms and a.kind == "load":
                            s.add(sv._atoms[i] >= 0)
                    s.add(sv.lin(k, lo) < 0 if lower else
                          z3.Or(sv.lin(k, lo) < 0, sv.lin(k, hi) >= size))
                    r = self._never_memo[mk] = s.check() == z3.unsat
                if r:
                    break
            else:
                return False
            # the search would have gone through every group: their guards' atoms
            for _, g in (kg for kg, _ in ordered[1:]):
                for c in g:
                    sv.cond(c)
        return True

    def _implied_by_every(self, guards: Any) -> tuple:
        """Atomic conditions each of the ``guards`` (tuples of condition ids) implies: per
        bound on one linear form (``LIN[k] + c < 0``, ``<= 0``, ``> 0``, ``>= 0``) that
        every guard has, the weakest of the guards' strongest ones (a tile's mask gives
        each column its own ``k + c < K``: together, ``K > min c``). Existing ids only, on
        linear forms the first guard has (so no new z3 atom is made for them)."""
        conds = self.eng.conds
        best: dict | None = None
        for g in guards:
            mine: dict = {}
            for cid in g:
                cs = conds.sets[cid] if cid > 1 else None
                if cs is None or len(cs) != 1:
                    continue
                (cd,) = tuple(cs)
                if cd.pred not in ("lt", "le", "gt", "ge"):
                    continue
                upper = cd.pred in ("lt", "le")       # LIN + c < 0: larger c is stronger
                pk = (cd.pred, cd.key)
                cur = mine.get(pk)
                if cur is None or (cd.conc > cur[0] if upper else cd.conc < cur[0]):
                    mine[pk] = (cd.conc, cid)
            if best is None:
                best = mine
                continue
            for pk in list(best):
                o = mine.get(pk)
                if o is None:
                    del best[pk]
                elif (o[0] < best[pk][0]) if pk[0] in ("lt", "le") else (o[0] > best[pk][0]):
                    best[pk] = o
            if not best:
                break
        return tuple(sorted(cid for _, cid in (best or {}).values()))

    def _result(self, m: Any, query: tuple, pid_zero: bool) -> dict:
        """A sat answer read from model ``m`` of ``query`` = (solver, coordinate, size,
        the atoms the query knew)."""
        _, x, size, atoms = query
        return {"model": self.eng.solver.model_dict(m, atoms), "pid_zero": pid_zero,
                "query": query,
                "value": m.eval(x, model_completion=True).as_long(),
                "size": m.eval(size, model_completion=True).as_long()}

    def _final(self, r: dict) -> dict:
        """``r`` with the canonical (reproducible, smallest) model of its query."""
        if r.get("unknown"):
            return r
        q = r["query"]
        with self.eng.solver.timed():
            return self._result(self.eng.solver.canonical_model(q[0]), q, r["pid_zero"])

    def _witness(self, op, loops, name, d, i, threads, gc, live, r) -> dict:
        eng = self.eng
        if r.get("unknown"):
            return {"op": op, "unknown": True}
        model = r["model"]
        li = np.nonzero(live)[0][i]
        coord = []
        for c in gc:
            k = int(np.broadcast_to(np.asarray(c.key), live.shape)[li])
            cc = int(np.broadcast_to(np.asarray(c.conc), live.shape)[li])
            v = eng._concretize(k, cc, dict(model)) if k else cc
            coord.append(v)
        coord[d] = int(r["value"])
        t = int(threads[i])
        block = [int(model.get(f"program_id({a})", 0)) for a in range(3)]
        return {"op": op, "block": block,
                "threads": [{"thread": t, "warp": t // eng.ws, "lane": t % eng.ws}],
                "loop_indices": dict(eng.shown(loops, op, model)), "tensor": name, "dim": d,
                "coordinates": {name: coord}, "index": int(r["value"]),
                "shape_dim": int(r["size"]), "tags": {},
                "program_points": [{"file": op.loc.file, "range": op.loc.range.to_json(),
                                    "label": f"accesses {name}"}],
                "model": {k: v for k, v in model.items() if not k.startswith("__")},
                **eng._iterations_entry(model, loops)}


def _mask_args(op: Any) -> set:
    if not op.attrs.get("masked") or not op.regions:
        return set()
    region = op.regions[0]
    used = set()
    for rop in region.ops:
        for v in rop.operands:
            for i, a in enumerate(region.args):
                if a is v:
                    used.add(i)
    return used


def _distinct_keys(key: Any) -> np.ndarray:
    """The distinct linear-form keys of a coordinate (usually one: a scalar or a uniform
    array, decided without a sort)."""
    key = np.asarray(key)
    if key.size == 0:
        return key.reshape(-1)
    if key.ndim == 0 or _uniform(key):
        return key.reshape(-1)[:1]
    return _unique_1d(key.reshape(-1).astype(np.int64))[0]
