"""Static shared-memory race detection (AVE207).

Two different threads touch the same shared byte, at least one of them writing, with no
barrier between them: a data race. Barriers end race epochs (and never clear
tags). The engine enumerates every thread exactly, so the detector follows, per shared
granule (the engine's byte-exact storage unit), the last writer thread and the reader
thread(s) of the current epoch, as the interpreter's dynamic check (AVE304) does at run
time -- but for every program and every trip count ``1..T`` at once:

* a read races with a write of another thread in the same epoch, and with an
  asynchronous copy into the byte still in flight (issued, not retired by a wait_async),
  its own thread's too (the copy's bytes land at the wait);
* a write (a store, a copy; a cp.async when its wait retires it) races with a read by
  another thread in any epoch since the write was issued (an asynchronous copy spans
  every barrier between its issue and its wait), and with a write by another thread of
  different data since then (a different datum: ``Tags.data`` in the engine, the global
  element or the computed value an element is; the tags where it is unknown).

The two accesses of a finding must be able to run on one launch: under branches on runtime
values their threads' path conditions must hold together for some size (``if
ave.thread_id() < M:`` puts a then-arm thread below M and an else-arm thread at or above
it; two arms of a branch every thread takes the same way never run together). The first
element of the access (in access order) whose pair is possible is reported; none: no
finding (:meth:`RaceTracker._first`). The readers of a byte are kept as the lowest and
highest thread with their points: a write after reads meets those two; when neither is
possible but others read the byte between them, the first is reported (sound).

A finding names the two threads (warp, lane), the loop iterations, the shared byte, and the
two program points; its witness carries a fix for the language server: insert
``ave.barrier()`` before the statement of the later access (``{"fix": {"kind":
"insert_barrier", "line": ..., "indent": ...}}``), when that statement is known (the
access itself, or the call of the helper it was inlined from, in the kernel body); for a
read of bytes an asynchronous copy still has in flight, ``{"kind": "insert_wait",
"count": n, "commit": ...}`` instead (the wait that retires the copy's group there, see
``Engine.wait_needed``, and a barrier).

State changes are journaled in the engine's journal (undo closures), so the incremental
per-trip-count variants restore it like the shared-memory tags.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ave_core.analysis.symbolic import rows_put


_MAX = np.iinfo(np.int64).max
#: a reader's point when it read the granule at several points of the epoch
AMBIG = -2


def _reader_at(fresh: np.ndarray, new: np.ndarray, old: np.ndarray, old_at: np.ndarray,
               at: Any, better: np.ndarray) -> np.ndarray:
    """The point of the lowest (highest) reader after reads by ``new`` at ``at`` (``better``:
    the new one is lower (higher) than ``old``): the new point, the old one, or AMBIG
    when the same thread read at two points."""
    return np.where(fresh | better, at,
                    np.where((new == old) & (old_at != at), AMBIG, old_at))


class RaceTracker:
    """Per-granule epoch state (see the module docstring)."""

    #: the per-granule state, one column each (see __init__)
    COLUMNS = ("w_epoch", "w_thread", "w_at", "r_epoch", "r_lo", "r_hi", "r_at", "pending",
               "p_thread", "p_at", "w_other", "w_oat", "r_lo_at", "r_hi_at", "w_lthread",
               "w_lat")
    _COL = {name: i for i, name in enumerate(COLUMNS)}

    def __init__(self, eng: Any, ngran: int) -> None:
        self.eng = eng
        self.epoch = 0
        # One row per granule (a read's fast path gathers and scatters whole rows: one
        # operation instead of a dozen); each column is also an attribute (a view):
        # w_epoch / w_thread / w_at: the last write's epoch, thread and point (an index
        # into self.points); r_epoch / r_lo / r_hi / r_at: the epoch of the last reads, the
        # lowest and highest reader thread, the last read's point; pending / p_thread /
        # p_at: asynchronous copies into the granule in flight, the last one's thread and
        # point; w_other / w_oat: a second writer thread of the last write's epoch and its
        # point, from the other arm of a runtime branch (see :meth:`join`, and ``keep`` of
        # :meth:`write`; -1 none); r_lo_at / r_hi_at: where the lowest (highest) reader
        # read (AMBIG: at several points); w_lthread / w_lat: a writer of those epochs (a
        # thread and its point) the two kept dropped -- a third writer, or one thread's
        # write on another path (AMBIG: several; -1 none): a later access may meet it on a
        # path where it cannot meet the ones kept.
        self.state = np.full((ngran, len(self.COLUMNS)), -1, np.int64)
        for i, name in enumerate(self.COLUMNS):
            setattr(self, name, self.state[:, i])
        self.pending[:] = 0
        self.points: list = []                          # (op, loops)
        self.branched: list = []                        # per point: inside a branch
        #: per point, the enclosing branches on runtime values (Engine.runtime_branches):
        #: a reported pair of accesses must be able to run on one launch (see _first)
        self.paths: list = []
        #: per point, whether it lies under a runtime branch (self.paths[p] non-empty)
        self._cpt = np.zeros(256, bool)
        self._scratch_lo = np.full(ngran, _MAX, np.int64)
        self._scratch_hi = np.full(ngran, -1, np.int64)
        self._summary: dict = {}
        self.findings: list = []

    # ------------------------------------------------------------------ journaling

    def _save(self, names: tuple, g: np.ndarray) -> None:
        j = self.eng.journal
        if j is None:
            return
        old = [(n, getattr(self, n)[g].copy()) for n in names]

        def undo() -> None:
            for n, v in old:
                getattr(self, n)[g] = v
        undo.race_g = g              # (the granules it restores: see Engine.op_scf_if)
        j.append(undo)

    def _push(self, lst: list, item: Any) -> None:
        lst.append(item)
        if self.eng.journal is not None:
            pop = lambda: lst.pop()  # noqa: E731
            pop.keep = True          # a record (kept when a forked arm is rolled back)
            self.eng.journal.append(pop)

    def point(self, op: Any) -> int:
        self._push(self.points, (op, self.eng.loops))
        # (inside a branch: a fix is not offered there -- for an asynchronous copy the
        # point is where it was issued, a finding is reported at its wait)
        self._push(self.branched, getattr(self.eng, "in_branch", 0) > 0)
        path = tuple(self.eng.runtime_branches)
        self._push(self.paths, path)
        n = len(self.points)
        if n > len(self._cpt):
            self._cpt = np.concatenate([self._cpt, np.zeros(len(self._cpt) + 64, bool)])
        self._cpt[n - 1] = bool(path)
        return n - 1

    # ------------------------------------------------------------------ possible pairs

    def _conditional(self, at: int, *points: np.ndarray) -> bool:
        """Some of these points (``at`` and arrays of earlier ones; AMBIG entries are
        none) lies under a branch on a runtime value."""
        cpt = self._cpt
        return bool(cpt[at]) or any(bool(cpt[arr[arr >= 0]].any()) for arr in points)

    #: distinct sets of path conditions put to z3 in one query (a chunk), and in all per
    #: finding (past it the next candidate is reported unasked: sound)
    CHUNK = 512
    MAX_PAIRS = 16384

    def _first(self, cands: list) -> int | None:
        """The first candidate of a finding, in access order, whose two accesses can run
        on one launch: ``cands`` holds ``(other thread, its point, thread, point[, taken
        as possible])`` per conflicting element (and writer). Under branches on runtime
        values that differ across threads (``if ave.thread_id() < M: write else: read``) a
        thread pair is possible only when some size sends each thread its way (thread 1
        in the then-arm and thread 32 in the else-arm need 1 < M <= 32; the reverse pair
        is impossible); for a branch every thread takes the same way whose arms share one
        race state (arms with asynchronous copies), its two arms never run together. z3
        under the sizes' domain (``Solver.race_pair_memo``): the distinct condition sets in
        order, a chunk of :attr:`CHUNK` per query, the first possible one by binary search
        in the first chunk that has one. None: no pair is possible (no race). Where z3
        cannot tell within its budget, or past :attr:`MAX_PAIRS` distinct sets, the pair
        is taken as possible (sound: a race is kept). Callers ask only where some point
        is conditional (:meth:`_conditional`)."""
        paths = self.paths

        def path(p: int) -> tuple:
            return paths[p] if p >= 0 else ()   # (AMBIG: read at several points: none)

        def literals(c: tuple) -> frozenset | None:
            ta, a, tb, b = c[:4]
            if len(c) > 4 and c[4]:
                return None                     # (taken as possible)
            lits = [(br.arm, br.rows[t].tobytes())
                    for pth, t in ((path(a), ta), (path(b), tb))
                    for br in pth if not br.certain[t]]
            return frozenset(lits) if lits else None

        sv = self.eng.solver
        z3 = sv.z3
        memo = sv.race_pair_memo

        def term(key: Any) -> Any:
            parts = []
            for arm, row in sorted(key):
                c = sv.cond(list(self.eng._cond_ids(np.frombuffer(row, np.int32))))
                parts.append(c if arm == 0 else z3.Not(c))
            return z3.And(*parts)

        def possible(keys: list) -> bool:
            """Some of these condition sets holds for some size."""
            mkey = frozenset(keys)
            hit = memo.get(mkey)
            if hit is not None:
                return hit
            with sv.timed():
                sv.queries += 1
                s = z3.Solver(ctx=sv.ctx)
                s.set("timeout", sv.timeout_ms)
                s.add(*sv._domain, z3.Or(*[term(k) for k in keys]))
                out = s.check() != z3.unsat
            memo[mkey] = out
            return out

        seen: set = set()
        chunk: list = []                       # (first candidate index, literals)
        total = 0

        def search() -> int | None:
            """The first possible candidate of the chunk, or None."""
            if not possible([k for _, k in chunk]):
                return None
            lo, hi = 1, len(chunk)           # the first hi hold one; find the least
            while lo < hi:
                mid = (lo + hi) // 2
                if possible([k for _, k in chunk[:mid]]):
                    hi = mid
                else:
                    lo = mid + 1
            return chunk[lo - 1][0]

        for i, c in enumerate(cands):
            key = literals(c)
            if key is None:
                # no condition: possible -- unless an earlier candidate of the chunk is
                j = search() if chunk else None
                return i if j is None else j
            if key in seen:
                continue
            if total >= self.MAX_PAIRS:
                return i                       # (not asked: sound)
            seen.add(key)
            chunk.append((i, key))
            total += 1
            if len(chunk) >= self.CHUNK:
                j = search()
                if j is not None:
                    return j
                chunk = []
        return search() if chunk else None

    # ------------------------------------------------------------------ events

    def barrier(self) -> None:
        self.epoch += 1
        if self.eng.journal is not None:
            def undo() -> None:
                self.epoch -= 1
            undo.race_g = None
            self.eng.journal.append(undo)

    # ------------------------------------------------------------------ runtime branches

    def set_epoch(self, e: int) -> None:
        """Set the epoch (journaled)."""
        old = self.epoch
        self.epoch = e
        if self.eng.journal is not None:
            def undo() -> None:
                self.epoch = old
            undo.race_g = None
            self.eng.journal.append(undo)

    def join(self, g: np.ndarray, sa: np.ndarray, sb: np.ndarray, e0: int, ea: int, eb: int
             ) -> None:
        """The race state after a branch every thread takes the same way, its arms run from
        the same state (epoch ``e0``) to ``a`` and ``b`` (epochs ``ea``, ``eb``): ``g`` the
        granules either arm touched, ``sa``/``sb`` their rows on each path (this tracker
        holds the state before the branch). What either path left open in its last epoch
        stays open (a later access races with it on that path): readers as the lowest and
        highest of both paths', writers as up to two threads with their points
        (``w_thread``, ``w_other``: a later access races iff some writer differs from its
        thread, which two distinct writers decide exactly for any number). Older records
        keep the later epoch of the two (they matter only to asynchronous copies issued
        before the branch: "read or written since the copy was issued"). A granule no arm
        touched keeps its record; if it was open before the branch and a path without a
        barrier keeps it open, it stays open. In-flight copies are the same on both paths
        (arms with asynchronous copies are not forked)."""
        E = max(ea, eb)
        c = self._COL
        out = sb.copy()
        # reads
        ra, rb = sa[:, c["r_epoch"]], sb[:, c["r_epoch"]]
        ca, cb = ra == ea, rb == eb
        both = ca & cb
        lo = np.where(both, np.minimum(sa[:, c["r_lo"]], sb[:, c["r_lo"]]),
                      np.where(ca, sa[:, c["r_lo"]], sb[:, c["r_lo"]]))
        hi = np.where(both, np.maximum(sa[:, c["r_hi"]], sb[:, c["r_hi"]]),
                      np.where(ca, sa[:, c["r_hi"]], sb[:, c["r_hi"]]))
        take_a = (ca & ~cb) | (~ca & ~cb & (ra > rb))
        for name in ("r_lo", "r_hi", "r_at", "r_lo_at", "r_hi_at"):
            out[:, c[name]] = np.where(take_a, sa[:, c[name]], sb[:, c[name]])
        cur = ca | cb
        out[:, c["r_lo"]] = np.where(cur, lo, out[:, c["r_lo"]])
        out[:, c["r_hi"]] = np.where(cur, hi, out[:, c["r_hi"]])
        for name, col, pick_a in (("r_lo", "r_lo_at", sa[:, c["r_lo"]] < sb[:, c["r_lo"]]),
                                  ("r_hi", "r_hi_at", sa[:, c["r_hi"]] > sb[:, c["r_hi"]])):
            # both paths read: the point of the side the reader comes from (the same
            # reader on both at different points: AMBIG)
            xa, xb = sa[:, c[col]], sb[:, c[col]]
            same = sa[:, c[name]] == sb[:, c[name]]
            both_at = np.where(same, np.where(xa == xb, xa, AMBIG),
                               np.where(pick_a, xa, xb))
            out[:, c[col]] = np.where(both, both_at, out[:, c[col]])
        out[:, c["r_epoch"]] = np.where(cur, E, np.maximum(ra, rb))
        # writes
        wa, wb = sa[:, c["w_epoch"]], sb[:, c["w_epoch"]]
        ca = (wa == ea) & (sa[:, c["w_thread"]] >= 0)
        cb = (wb == eb) & (sb[:, c["w_thread"]] >= 0)
        take_a = (ca & ~cb) | (~ca & ~cb & (wa > wb))
        for name in ("w_thread", "w_at", "w_other", "w_oat", "w_lthread", "w_lat"):
            out[:, c[name]] = np.where(take_a, sa[:, c[name]], sb[:, c[name]])
        both = ca & cb
        if both.any():
            # up to four writers (two per path): keep two distinct ones, with their points
            ta, tb = sa[both], sb[both]
            w = np.stack([ta[:, c["w_thread"]], ta[:, c["w_other"]],
                          tb[:, c["w_thread"]], tb[:, c["w_other"]]], axis=1)
            at = np.stack([ta[:, c["w_at"]], ta[:, c["w_oat"]],
                           tb[:, c["w_at"]], tb[:, c["w_oat"]]], axis=1)
            w1, a1, w2, a2 = _two_writers(w, at)
            out[both, c["w_thread"]], out[both, c["w_at"]] = w1, a1
            out[both, c["w_other"]], out[both, c["w_oat"]] = w2, a2
            # writers (thread, point) of either path not kept, and those either path
            # had lost: the one lost (or AMBIG)
            cw = np.concatenate([w, np.stack([ta[:, c["w_lthread"]], tb[:, c["w_lthread"]]],
                                             axis=1)], axis=1)
            cat = np.concatenate([at, np.stack([ta[:, c["w_lat"]], tb[:, c["w_lat"]]],
                                               axis=1)], axis=1)
            lth, lat = _dropped(cw, cat, np.stack([w1, w2], axis=1), np.stack([a1, a2], axis=1))
            out[both, c["w_lthread"]], out[both, c["w_lat"]] = lth, lat
        out[:, c["w_epoch"]] = np.where(ca | cb, E, np.maximum(wa, wb))
        # untouched granules open before the branch: open after it when a path kept them
        if E != e0 and (ea == e0 or eb == e0):
            touched = np.zeros(len(self.state), bool)
            touched[g] = True
            for col in ("w_epoch", "r_epoch"):
                h = np.nonzero((self.state[:, c[col]] == e0) & ~touched)[0]
                if h.size:
                    self._save((col,), h)
                    self.state[h, c[col]] = E
        self._save(self.COLUMNS, g)
        rows_put(self.state, g, out)
        self.set_epoch(E)

    def _readers(self, g: np.ndarray, t: np.ndarray) -> tuple:
        """Per distinct granule of an access: the granules (ascending) and their lowest and
        highest reader thread. Kept per access arrays (the engine passes the same arrays
        for the same layout), so a loop's repeated reads compute it once."""
        key = (id(g), id(t))
        hit = self._summary.get(key)
        if hit is not None and hit[0] is g and hit[1] is t:
            return hit[2]
        # the distinct granules through a mark per granule (``np.unique``'s sort took
        # 5-10x longer for a tile's thousands of granules), their lowest and highest
        # reader through the scratch arrays (kept at (MAX, -1) between accesses)
        mark = np.zeros(len(self._scratch_lo), bool)
        mark[g] = True
        ug = np.flatnonzero(mark)
        slo, shi = self._scratch_lo, self._scratch_hi
        np.minimum.at(slo, g, t)
        np.maximum.at(shi, g, t)
        tmin, tmax = slo[ug], shi[ug]
        slo[ug] = _MAX
        shi[ug] = -1
        out = (ug, tmin, tmax)
        if len(self._summary) >= 256:
            self._summary.pop(next(iter(self._summary)))
        self._summary[key] = (g, t, out)
        return out

    def read(self, g: np.ndarray, t: np.ndarray, op: Any) -> None:
        """Threads ``t`` read granules ``g`` (equal-length arrays)."""
        if g.size == 0:
            return
        at = self.point(op)
        ug, tmin, tmax = self._readers(g, t)
        rows = self.state.take(ug, axis=0)          # (len(ug), columns): one gather
        (w_epoch, w_thread, _, r_epoch, r_lo, r_hi, _, pending, _, _, w_other, _,
         _, _, _, _) = rows.T
        # per distinct granule: a copy still in flight into it (any thread's, the reader's
        # own too), or some reader differs from the last writer's thread (the readers are
        # not all that one thread)
        if not ((pending > 0).any() or
                ((w_epoch == self.epoch) & (w_thread >= 0) &
                 ((w_thread != tmin) | (w_thread != tmax))).any() or
                ((w_other >= 0).any() and ((w_epoch == self.epoch) & (w_other >= 0) &
                                           ((w_other != tmin) | (w_other != tmax))).any())):
            self._record_reads(ug, rows, tmin, tmax, at)
            return
        self._read_elements(g, t, op, at)

    def _record_reads(self, ug: np.ndarray, rows: np.ndarray, tmin: np.ndarray,
                      tmax: np.ndarray, at: int) -> None:
        """Record reads at point ``at`` of distinct granules ``ug`` (their state ``rows``, a
        copy: updated in place) by threads ``tmin..tmax`` (lowest and highest reader per
        granule), journaled."""
        j = self.eng.journal
        if j is not None:
            old = rows.copy()

            def undo() -> None:
                rows_put(self.state, ug, old)
            undo.race_g = ug
            j.append(undo)
        c = self._COL
        r_lo, r_hi = rows[:, c["r_lo"]], rows[:, c["r_hi"]]
        fresh = rows[:, c["r_epoch"]] != self.epoch
        lo_at = _reader_at(fresh, tmin, r_lo, rows[:, c["r_lo_at"]], at, tmin < r_lo)
        hi_at = _reader_at(fresh, tmax, r_hi, rows[:, c["r_hi_at"]], at, tmax > r_hi)
        rows[:, c["r_lo"]] = np.where(fresh, tmin, np.minimum(r_lo, tmin))
        rows[:, c["r_hi"]] = np.where(fresh, tmax, np.maximum(r_hi, tmax))
        rows[:, c["r_lo_at"]] = lo_at
        rows[:, c["r_hi_at"]] = hi_at
        rows[:, c["r_epoch"]] = self.epoch
        rows[:, c["r_at"]] = at
        rows_put(self.state, ug, rows)              # one scatter

    def _read_elements(self, g: np.ndarray, t: np.ndarray, op: Any, at: int) -> None:
        """:meth:`read` element by element (where a finding is reported: its first
        element in access order names the threads)."""
        # an asynchronous copy in flight into the byte: by another thread, or by this one
        # (cp.async's bytes land at its wait: the thread's own read before it sees old
        # or new bytes -- the interpreter's AVE304 reports both)
        infl = self.pending[g] > 0
        if infl.any():
            idx = np.nonzero(infl)[0]
            pt, pat = self.p_thread[g[idx]], self.p_at[g[idx]]
            many = self.pending[g[idx]] > 1       # (only the last issuer is kept)
            j = self._first([(int(a), int(b), int(c), at, bool(f))
                             for a, b, c, f in zip(pt, pat, t[idx], many)]) \
                if self._conditional(at, pat) else 0
            if j is not None:
                self._report(op, "read", g[idx[j]], int(pt[j]), int(t[idx[j]]),
                             int(pat[j]), at, "an asynchronous copy in flight")
        race = self._writer_race(g, t, self.w_epoch[g] == self.epoch, at)
        if race is not None:
            i, w, wat = race
            self._report(op, "read", g[i], w, int(t[i]), wat, at, "a write")
        ug, tmin, tmax = self._readers(g, t)
        self._record_reads(ug, self.state.take(ug, axis=0), tmin, tmax, at)

    def clash(self, g: np.ndarray, t: np.ndarray, data: np.ndarray, op: Any,
              at: int | None = None) -> None:
        """One write whose threads ``t`` put different ``data`` into one granule ``g``: a
        race within the write (the copies of an element that differ across threads; two
        elements a layout maps to the same bytes)."""
        at = self.point(op) if at is None else at
        order = np.lexsort((t, g))
        gs, ts, ds = g[order], t[order], data[order]
        clash = (gs[1:] == gs[:-1]) & (ts[1:] != ts[:-1]) & (ds[1:] != ds[:-1])
        if clash.any():
            later = order[1:][clash]
            j = int(np.argmin(later))
            i = int(later[j])
            self._report(op, "write", g[i], int(ts[:-1][clash][j]), int(t[i]), at, at,
                         "a write of other data")

    def write(self, g: np.ndarray, t: np.ndarray, op: Any, since: int | None = None,
              at: int | None = None, differs: np.ndarray | None = None,
              keep: bool = False, data: np.ndarray | None = None) -> None:
        """Threads ``t`` write granules ``g``; ``since``: the epoch the write was issued in
        (an asynchronous copy), ``differs``: per granule, whether the data differs from
        what is there (write/write races need different data). ``keep``: the write may
        not happen (an arm of a branch whose arms share one state): the writers of this
        epoch stay writers beside it (else the other arm's writer would be lost).
        ``data``: per granule, what this write puts there, when two threads of this one
        write may put different data into one granule (the copies of an element whose
        values differ across threads, ``FragVal.varies``): those race with each other."""
        if g.size == 0:
            return
        since = self.epoch if since is None else since
        at = self.point(op) if at is None else at
        if data is not None and len(g) > 1:
            self.clash(g, t, data, op, at)
        lo, hi = self.r_lo[g], self.r_hi[g]
        rr = (self.r_epoch[g] >= since) & (lo >= 0) & ((lo != t) | (hi != t))
        if rr.any():
            found = self._reader_race(g, t, rr, at)
            if found is not None:
                i, other, oat = found
                self._report(op, "write", g[i], other, int(t[i]), oat, at, "a read")
        ww = self.w_epoch[g] >= since
        if differs is not None:
            ww &= differs
        race = self._writer_race(g, t, ww, at)
        if race is not None:
            i, w, wat = race
            self._report(op, "write", g[i], w, int(t[i]), wat, at, "a write of other data")
        cur = self.w_epoch[g] == self.epoch if keep else None
        if keep and cur.any():
            # this epoch's other writers (the lower of up to two) stay beside this one
            wt, wat = self._other_writer(g, t)
            o, oat = np.where(cur, wt, -1), np.where(cur, wat, -1)
        else:
            o = oat = None
        # writers (thread, point) of the epochs that matter this record drops: a later
        # access may meet them on a path where it cannot meet the ones kept
        pw = (self.w_epoch[g] >= since) & (self.w_thread[g] >= 0)
        lth = lat = -1
        if pw.any():
            # (only a writer on another path than the ones kept can matter: none when no
            # point involved lies under a runtime branch)
            cpt = self._cpt
            w_at, w_oat, w_lat = self.w_at[g], self.w_oat[g], self.w_lat[g]
            if cpt[at] or cpt[w_at[pw]].any() or cpt[w_oat[pw & (w_oat >= 0)]].any() or \
                    (pw & (self.w_lthread[g] >= 0)).any():
                cand_w = np.stack([self.w_thread[g], self.w_other[g], self.w_lthread[g]],
                                  axis=1)
                cand_a = np.stack([w_at, w_oat, w_lat], axis=1)
                kw = np.stack([t, o if o is not None else np.full(len(g), -1)], axis=1)
                ka = np.stack([np.broadcast_to(at, len(g)),
                               oat if oat is not None else np.full(len(g), -1)], axis=1)
                lth, lat = _dropped(np.where(pw[:, None], cand_w, -1), cand_a, kw, ka)
        others = o is not None or bool((self.w_other[g] >= 0).any())
        self._save(("w_epoch", "w_thread", "w_at", "w_other", "w_oat", "w_lthread", "w_lat")
                   if others else ("w_epoch", "w_thread", "w_at", "w_lthread", "w_lat"), g)
        self.w_epoch[g] = self.epoch
        self.w_thread[g] = t
        self.w_at[g] = at
        self.w_lthread[g] = lth
        self.w_lat[g] = lat
        if others:
            self.w_other[g] = -1 if o is None else o
            self.w_oat[g] = -1 if oat is None else oat

    def _reader_race(self, g: np.ndarray, t: np.ndarray, rr: np.ndarray, at: int
                     ) -> tuple | None:
        """The first element of a write by threads ``t`` at ``at`` to granules ``g`` that
        meets a read by another thread where ``rr``, and can run on one launch with it (see
        :meth:`_first`): ``(element, reader thread, reader's point)``, or None. Of a
        granule's readers the lowest and highest are known, with their points (AMBIG:
        several; then the last read's point is named); when neither is possible but some
        granule had readers between them, the first element is reported (one of those
        may be: sound)."""
        lo, hi = self.r_lo[g], self.r_hi[g]
        lat, hat, rat = self.r_lo_at[g], self.r_hi_at[g], self.r_at[g]

        def first() -> tuple:
            i = int(np.nonzero(rr)[0][0])
            if lo[i] != t[i]:
                return i, int(lo[i]), int(lat[i] if lat[i] >= 0 else rat[i])
            return i, int(hi[i]), int(hat[i] if hat[i] >= 0 else rat[i])

        idx = np.nonzero(rr)[0]
        if not self._conditional(at, lat[idx], hat[idx]):
            return first()
        cands, owner = [], []
        for i in idx.tolist():
            seen = None
            for th, p in ((int(lo[i]), int(lat[i])), (int(hi[i]), int(hat[i]))):
                if th != t[i] and (th, p) != seen:
                    cands.append((th, p, int(t[i]), at))
                    owner.append(i)
                    seen = (th, p)
        j = self._first(cands)
        if j is None:
            # no lowest/highest reader's pair is possible: none other exists where each
            # granule had one reader thread
            return None if bool((lo[idx] == hi[idx]).all()) else first()
        i = owner[j]
        return i, cands[j][0], cands[j][1] if cands[j][1] >= 0 else int(rat[i])

    def _writer_race(self, g: np.ndarray, t: np.ndarray, open_: np.ndarray, at: int
                     ) -> tuple | None:
        """The first element (in access order) of an access by threads ``t`` at point
        ``at`` to granules ``g`` that meets a writer of another thread where ``open_``
        (the write is in the epochs that matter) and can run on one launch with it (see
        :meth:`_first`): ``(element, writer thread, writer's point)``, or None. Each
        element's writers (the last one and a second one a branch join left) are tried
        lowest thread first."""
        if not open_.any():
            return None                        # (the usual write: a new epoch's first)
        w, o, lw = self.w_thread[g], self.w_other[g], self.w_lthread[g]
        cw = open_ & (w >= 0) & (w != t)
        co = open_ & (o >= 0) & (o != t)
        cl = open_ & (w >= 0) & (lw >= 0) & (lw != t)      # (a dropped writer)
        if not (cw.any() or co.any() or cl.any()):
            return None
        idx = np.nonzero(cw | co | cl)[0]
        wat, oat, lat = self.w_at[g], self.w_oat[g], self.w_lat[g]
        if not self._conditional(at, wat[idx[cw[idx]]], oat[idx[co[idx]]],
                                 lat[idx[cl[idx]]]):
            # (the usual case: no access under a runtime branch) the first element with a
            # kept writer, its lower one (a dropped writer matters only on some path)
            k = idx[(cw | co)[idx]]
            if not k.size:
                return None
            i = int(k[0])
            wt, wp = self._other_writer(g[i:i + 1], t[i:i + 1])
            return i, int(wt[0]), int(wp[0])
        cands, owner = [], []
        for i in idx.tolist():
            pair = []
            if cw[i]:
                pair.append((int(w[i]), int(wat[i])))
            if co[i]:
                pair.append((int(o[i]), int(oat[i])))
            if cl[i]:
                # a dropped writer (its point AMBIG: one of several, taken as possible)
                pair.append((int(lw[i]), int(lat[i])))
            for th, p in sorted(pair):
                cands.append((th, p, int(t[i]), at))
                owner.append(i)
        j = self._first(cands)
        if j is None:
            return None
        return owner[j], cands[j][0], cands[j][1]

    def _other_writer(self, g: np.ndarray, t: np.ndarray) -> tuple:
        """Per element, a last writer of granule ``g[i]`` other than thread ``t[i]`` (the
        lower of the two a branch join may leave) and its point, or -1."""
        w, o = self.w_thread[g], self.w_other[g]
        w = np.where(w != t, w, -1)
        if not (o >= 0).any():                  # (no second writer: the usual case)
            return w, self.w_at[g]
        o = np.where(o != t, o, -1)
        use_o = (o >= 0) & ((w < 0) | (o < w))
        return np.where(use_o, o, w), np.where(use_o, self.w_oat[g], self.w_at[g])

    def issue_async(self, g: np.ndarray, t: np.ndarray, op: Any) -> tuple:
        at = self.point(op)
        self._save(("pending", "p_thread", "p_at"), g)
        np.add.at(self.pending, g, 1)
        self.p_thread[g] = t
        self.p_at[g] = at
        return (self.epoch, at)

    def retire_async(self, g: np.ndarray, t: np.ndarray, op: Any, issued: tuple,
                     differs: np.ndarray | None, keep: bool = False) -> None:
        since, at = issued
        self._save(("pending",), g)
        np.subtract.at(self.pending, g, 1)
        self.write(g, t, op, since, at, differs, keep)

    # ------------------------------------------------------------------ findings

    def _report(self, op: Any, kind: str, gran: int, other: int, thread: int, other_at: int,
                at: int, what: str) -> None:
        # the later access: the op itself, or for an asynchronous copy retired by a wait,
        # the copy (where it was issued)
        op, loops = self.points[at]
        inflight = what == "an asynchronous copy in flight"
        wait = self.eng.wait_needed(int(gran)) if inflight else None
        self._push(self.findings, {"op": op, "loops": loops, "wait": wait, "byte":
                                   int(gran) * self.eng.G, "threads": (other, thread),
                                   "earlier": self.points[other_at] if other_at >= 0 else None,
                                   "later": self.points[at], "kind": kind, "what": what,
                                   # a barrier helps only if the later access comes later
                                   # in program order and nothing is still in flight (an
                                   # asynchronous copy needs its wait_async first)
                                   "barrier_fixes": other_at < at and not inflight,
                                   "in_branch": self.branched[at]})


def _dropped(cw: np.ndarray, ca: np.ndarray, kw: np.ndarray, ka: np.ndarray) -> tuple:
    """Per row, the writers (thread, point) among ``cw``/``ca`` (thread -1: none; point
    AMBIG: one of several) not among the kept ``kw``/``ka``: ``(thread, point)`` of the
    first, with point AMBIG when there are several (the thread is one of them); ``(-1,
    -1)`` for none."""
    kept = ((cw[:, :, None] == kw[:, None, :]) & (ca[:, :, None] == ka[:, None, :])).any(2)
    lost = (cw >= 0) & ~kept
    n = lost.sum(axis=1) + (lost & (ca == AMBIG)).any(axis=1)
    i = lost.argmax(axis=1)
    r = np.arange(len(cw))
    return (np.where(n == 0, -1, cw[r, i]),
            np.where(n == 0, -1, np.where(n == 1, ca[r, i], AMBIG)))


def _two_writers(w: np.ndarray, at: np.ndarray) -> tuple:
    """Per row of up to four writer threads ``w`` (-1 none) with their points ``at``: the
    lowest thread and its point, the next distinct one and its point (-1, -1: none)."""
    ws = np.where(w >= 0, w, _MAX)
    r = np.arange(len(w))
    i1 = ws.argmin(axis=1)
    first = ws[r, i1]
    rest = np.where(ws == first[:, None], _MAX, ws)
    i2 = rest.argmin(axis=1)
    second = rest[r, i2]
    none = second == _MAX
    return (first, at[r, i1], np.where(none, -1, second), np.where(none, -1, at[r, i2]))


def fix_anchor(later: Any, earlier: Any) -> Any:
    """Where a barrier (or a wait) between two accesses goes: before the statement of the
    later access at the first level of helper calls where the two accesses' statements
    differ (the kernel's statement; inside a helper that makes both, the helper's own
    statement), as a :class:`Loc` with ``stmt``; None when one statement makes both at
    every level (a copy between overlapping parts of one buffer): a barrier before it
    cannot come between them -- such a fix only moved the finding a line down, and a
    helper that copies and then reads got one before its call (a review helper)."""
    lat = [*(getattr(later.loc, "inlined_from", ()) or ()), later.loc]
    if earlier is None:
        return lat[0]
    ear = [*(getattr(earlier.loc, "inlined_from", ()) or ()), earlier.loc]
    for i, loc in enumerate(lat):
        if i >= len(ear):
            return loc
        e = ear[i]
        if loc.stmt is None or e.stmt is None:
            # (a call that does not start its line, `x = 1; a = f()`: the same call makes
            # both when it is the same expression -- the fix is further in; it gave none)
            if (e.file, e.range, e.stmt) != (loc.file, loc.range, loc.stmt):
                return loc
        elif (e.file, e.stmt) != (loc.file, loc.stmt):
            return loc
    return None


def _commits_before(eng: Any, st: Any, later: Any) -> int:
    """The ``ave.commit_async`` ops the statement ``st`` (an outer call holding ``later``)
    runs before ``later``, in the same loop iteration."""
    lat = [*(getattr(later.loc, "inlined_from", ()) or ()), later.loc]
    level = next(i for i, loc in enumerate(lat) if loc is st)
    loops = later.attrs.get("loop_indices", ())
    n = 0
    for o in eng.k.walk():
        if o is later:
            break
        if o.name != "ave.commit_async" or o.attrs.get("loop_indices", ()) != loops:
            continue
        chain = [*(getattr(o.loc, "inlined_from", ()) or ()), o.loc]
        if len(chain) > level and (chain[level].file, chain[level].stmt) == (st.file, st.stmt):
            n += 1
    return n


def _trace_index(eng: Any) -> tuple[list, dict]:
    """The variant's top-level ops (the unrolled kernel, in program order) and, by
    ``id``, the top-level position of every op (nested ones: their branch's)."""
    memo = getattr(eng, "_trace_memo", None)
    if memo is not None and memo[0] is eng.k:
        return memo[1], memo[2]
    ops = list(eng.k.body.ops)
    pos: dict = {}
    for i, top in enumerate(ops):
        for o in top.walk():
            pos[id(o)] = i
    eng._trace_memo = (eng.k, ops, pos)
    return ops, pos


def barrier_span(eng: Any, f: dict, own: Any) -> frozenset:
    """The kernel-level statements (``(file, line, indent)``, 0-based line) before which
    one ``ave.barrier()`` separates the two accesses of race finding ``f`` in this
    variant's trace, and ``own`` (the fix's own statement, a Loc): a barrier there runs
    after the earlier access took effect -- an asynchronous copy at a wait: after the
    last ``ave.wait_async`` before the later access, a conservative bound -- and no later
    than the later access (for an asynchronous copy: where it is issued). Each statement
    counts at the start of one of its executions (its first op in an iteration); those
    inside a runtime branch (ops nested in an ``scf.if``) and a runtime loop's header in
    its own iterations (a barrier before the ``for`` runs once, not per iteration;
    ``eng.loop_headers``: ``(file, stmt) -> iv_name`` of the kernel's runtime loops, set by
    the analysis) are not candidates. Empty when the trace does not hold both accesses (the quick fix then
    stays the finding's own). ``ave_lsp.fixplan`` picks one statement for several
    findings from these spans, and offers it where the text with it checks clean."""
    if f["earlier"] is None:
        return frozenset()
    ops, pos = _trace_index(eng)
    earlier, later = f["earlier"][0], f["later"][0]
    ea, pb = pos.get(id(earlier)), pos.get(id(later))
    if ea is None or pb is None or ea >= pb:
        return frozenset()
    if earlier.name == "ave.copy_async":
        landed = _landing_wait(eng, earlier, later)
        if landed is None:
            return frozenset()
        ea = pos[id(landed)]
    headers = getattr(eng, "loop_headers", None)
    if headers is None:
        return frozenset()          # (not known: no coordination)
    out = set()
    prev_key = None
    for i in range(ea, pb + 1):
        o = ops[i]
        chain = [*(getattr(o.loc, "inlined_from", ()) or ()), o.loc]
        top = chain[0]
        loops = o.attrs.get("loop_indices", ())
        key = (top.file, top.stmt, top.range if top.stmt is None else None, loops)
        start = key != prev_key
        prev_key = key
        if i == ea or not start or top.stmt is None:
            continue
        iv = headers.get((top.file, top.stmt))
        if iv is not None and any(name == iv for name, _ in loops):
            continue                # (the loop header's ops of one iteration)
        out.add((top.file, int(top.stmt[0]), str(top.stmt[1])))
    if own is not None and getattr(own, "stmt", None) is not None:
        out.add((own.file, int(own.stmt[0]), str(own.stmt[1])))
    return frozenset(out)


def _landing_wait(eng: Any, copy: Any, later: Any) -> Any:
    """The ``ave.wait_async`` after which an asynchronous copy's bytes are there for
    ``later`` (a read or write of them after the copy retired): the last top-level wait
    between the two in the variant's trace -- at or after the one that retired it, so a
    barrier after it comes after the landing. None when the trace does not hold both, or
    no wait is between them outside a branch."""
    ops, pos = _trace_index(eng)
    ea, pb = pos.get(id(copy)), pos.get(id(later))
    if ea is None or pb is None or ea >= pb:
        return None
    for i in range(pb - 1, ea, -1):
        if ops[i].name == "ave.wait_async":
            return ops[i]
    return None


def wait_to_tighten(eng: Any, later: Any) -> tuple | None:
    """For a read of bytes an asynchronous copy still has in flight (``later``, a
    top-level op of the variant's trace): the ``ave.wait_async`` to tighten instead of
    inserting another one -- the last wait before the read, with a barrier between them
    (other threads' copies become visible there), its count written as an integer
    literal in the read's file -- and the commits between it and the read: ``(wait op,
    commits)``. A wait that retires ``n - commits`` groups (``n``: what the read needs,
    Engine.wait_needed) retires the copy's group; a lower count only waits longer, in
    every execution of the wait. None when there is no such wait, or a runtime branch
    between them issues, commits, waits or synchronizes."""
    ops, pos = _trace_index(eng)
    pb = pos.get(id(later))
    if pb is None or ops[pb] is not later:
        return None
    commits, barrier = 0, False
    for i in range(pb - 1, -1, -1):
        o = ops[i]
        if o.name == "ave.wait_async":
            if not barrier or o.attrs.get("n_literal") is None or \
                    o.loc.file != later.loc.file:
                return None
            return o, commits
        if o.name == "ave.commit_async":
            commits += 1
        elif o.name == "ave.barrier":
            barrier = True
        elif o.name == "scf.if" and any(x.name in ("ave.wait_async", "ave.commit_async",
                                                   "ave.barrier", "ave.copy_async")
                                        for x in o.walk()):
            return None
    return None


def witness(eng: Any, f: dict, model: dict | None = None) -> dict:
    """The witness of race finding ``f``; ``model``: the sizes and program ids of its
    block, when block 0 does not run it (the witness' ``"model"`` then). The values of the
    runtime-start loops it names come from its block's program ids alone
    (:meth:`Engine.block_sizes`: a race is found without a query, and ``model``'s other
    sizes only run the trip counts -- not the branch a read sits under; a review
    helper)."""
    ws = eng.ws
    model = dict(model or {})
    block = [int(model.get(f"program_id({a})", 0)) for a in range(3)]
    pids = eng.block_sizes(block)
    other, thread = f["threads"]
    # the thread of the reported (later) access first, then the other one
    threads = [{"thread": thread, "warp": thread // ws, "lane": thread % ws}]
    if other >= 0 and other != thread:      # (its own asynchronous copy: one thread)
        threads.append({"thread": other, "warp": other // ws, "lane": other % ws})
    pts = []
    for (op, loops), label in ((f["earlier"] or (None, ()), "earlier access"),
                               (f["later"], "later access")):
        if op is None:
            continue
        loops = eng.shown(loops, op, pids)
        name = "ave.ldmatrix" if op.attrs.get("ldmatrix") else op.name
        pts.append({"file": op.loc.file, "range": op.loc.range.to_json(),
                    "label": f"{label}: {name}" + (" (" + ", ".join(
                        f"{k}={v}" for k, v in loops) + ")" if loops else "")})
    later_op = f["later"][0]
    earlier_op = f["earlier"][0] if f["earlier"] is not None else None
    if earlier_op is not None and earlier_op.name == "ave.copy_async" and \
            f["barrier_fixes"]:
        # an asynchronous copy's bytes land at a wait: the barrier goes after that wait
        # -- a helper that waits and then reads got a barrier before its call, before the
        # wait, which fixed nothing (and was offered again one line down; a review helper)
        earlier_op = _landing_wait(eng, earlier_op, later_op) or earlier_op
    st = fix_anchor(later_op, earlier_op)
    w = {"block": block,
         "threads": threads,
         "loop_indices": dict(eng.shown(f["loops"], later_op, pids)),
         "byte": f["byte"], "coordinates": {}, "tags": {}, "program_points": pts,
         "race": f["kind"] + " after " + f["what"],
         "earlier_loop_indices": dict(eng.shown(f["earlier"][1], f["earlier"][0], pids))
         if f["earlier"]
         else {}}
    if model:
        w["model"] = model
    w.update(eng._iterations_entry(pids, f["loops"], f["earlier"][1] if f["earlier"] else ()))
    anchor = getattr(st, "stmt", None) if st is not None else None
    if anchor is not None and not f["in_branch"] and f["barrier_fixes"]:
        # before the statement (not the op's expression: `a = ave.ldmatrix(...)`), at
        # its line's own indentation; none when the statement does not start its line
        line, indent = anchor
        w["fix"] = {"kind": "insert_barrier", "line": int(line), "indent": str(indent),
                    "file": st.file}
        w["__span"] = barrier_span(eng, f, st)
    elif anchor is not None and not f["in_branch"] and f.get("wait") is not None and \
            f["earlier"] is not None:
        # (not when the copy is issued by the same statement -- a helper that copies and
        # then reads: a wait before its call comes before the copy)
        # a copy still in flight: wait for its group (and a barrier: other threads' copies
        # become visible to this one only after it), before the read's statement
        n, commit = f["wait"]
        if st is not later_op.loc:
            # before an outer statement (a helper's call) the groups the helper commits
            # before its read are not there yet: the count at the read retired nothing
            # there (a review helper) -- fewer by those commits
            n = max(n - _commits_before(eng, st, later_op), 0)
        line, indent = anchor
        w["fix"] = {"kind": "insert_wait", "line": int(line), "indent": str(indent),
                    "count": int(n), "commit": bool(commit), "file": st.file}
        tight = None if commit or st is not later_op.loc else wait_to_tighten(eng, later_op)
        if tight is not None:
            # (the analysis turns it into a set_wait_count fix once it knows the fewest
            # groups any execution of the read needs: analysis.__init__)
            w["__tighten"] = tight
    return w
