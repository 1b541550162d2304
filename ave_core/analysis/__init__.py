"""The tag analysis: propagation over unrolled kernels, assertion checks, witnesses.

:func:`analyze` takes one kernel specialization from the front end, unrolls it for every
runtime trip count ``1..T`` (``T = STAGES + 2`` by default), propagates tags through each
variant (:mod:`~ave_core.analysis.engine`), and returns one :class:`AssertionResult` per
assertion of the source (every ``ave.mma`` is an implicit operand-pairing assertion):
``proved``, ``violated`` (with a witness), ``unknown`` (with the reason) or ``vacuous``,
and its coverage — the fraction of compared element pairs whose tags are concrete.

Documented limits (as in the paper, §5): global-memory writes are not tracked; a value
read from global memory (a gather's index) is an opaque unknown; branches on runtime values
other than thread/warp ids are merged path-insensitively (each arm runs from the state
before the branch when the condition is one for all threads; see the engine); results hold
for trip counts
``<= T``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ave_core.compiler.ir import KernelIR, Loc, shown_loops
from ave_core.compiler.unroll import UnrollError, default_trip_bound, unrolled_variants
from ave_core.diagnostics import CALL_SITE, THROUGH_CALL, Diagnostic, Location, Related

__all__ = ["analyze", "AssertionResult", "KernelAnalysis", "AnalysisOptions"]


@dataclass
class AnalysisOptions:
    """Knobs of the analysis (``[tool.ave]`` / editor settings map onto these).

    Attributes:
        trip_bound: runtime loops are unrolled for trip counts 1..trip_bound
            (default: the kernel's ``STAGES`` + 2), and 0 where the sizes allow it.
        solver_timeout_ms: budget of one SMT query (ms); past it the assertion is unknown.
        incremental: each unrolled variant resumes from the state after the prefix it
            shares with the previous one (same results as running every variant from the
            start -- tested -- at a fraction of the time).
        zero_trips: also the trip count 0 of each runtime loop that some sizes in the
            domain (every size >= 1) let run zero times -- ``range(1, KT)`` after a peeled
            first k-tile, a causal attention block with no key before its diagonal; found
            with z3 from the bound's form after the other variants ran.
    """

    trip_bound: int | None = None
    solver_timeout_ms: int = 2000
    incremental: bool = True
    zero_trips: bool = True


@dataclass
class AssertionResult:
    """The verdict on one assertion of the source, over every unrolled variant."""

    kind: str        # "mma" | "assert_conform" | "assert_disjoint" | "store" | "accumulate"
    loc: Loc
    status: str                       # proved | violated | unknown | vacuous
    compared: int = 0
    covered: int = 0
    witness: dict | None = None
    reason: str = ""
    trip_bound: int | None = None
    #: every execution was under branch arms its variant's sizes rule out (the reason):
    #: unknown, not vacuous, when nothing was covered (PairCheck.unreached)
    unreached: str | None = None

    @property
    def coverage(self) -> float:
        return self.covered / self.compared if self.compared else 0.0

    def to_json(self, kernel_file: str | None = None) -> dict:
        """The report's entry (schema ``assertion``); ``kernel_file``: the kernel's file,
        for ``file`` and ``call`` of an assertion in a helper from another file."""
        out = {"kind": self.kind, "line": self.loc.range.start.line,
               "range": self.loc.range.to_json(), "status": self.status,
               "coverage": round(self.coverage, 4), "compared": self.compared,
               "trip_bound": self.trip_bound}
        if kernel_file is not None and self.loc.file != kernel_file:
            out["file"] = self.loc.file
            call = self.loc.report_key[2]
            if call is not None:
                out["call"] = {"file": call[0], "range": call[1].to_json()}
        return out


@dataclass
class KernelAnalysis:
    kernel: KernelIR
    assertions: list[AssertionResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    variants: int = 0
    #: runtime loops were unrolled for trip counts 1..trip_bound (0: not analysed)
    trip_bound: int = 0


def _refined(w: dict) -> dict:
    """A witness as reported: with its canonical model when it carries a way to get it
    (the engine searches with z3's first model; see ``Solver.canonical_model``)."""
    fin = w.pop("__refine", None)
    return fin() if fin is not None else w


def analyze(kernel: KernelIR, options: AnalysisOptions | None = None) -> KernelAnalysis:
    """Check every assertion of one kernel specialization; never raises on user input."""
    from ave_core.analysis.accumulation import zero_trip_loops
    from ave_core.analysis.engine import AnalysisLimit, Engine, VariantRuledOut
    from ave_core.analysis.smt import Solver
    from ave_core.analysis.symbolic import CondTable, SymOverflow, SymTable

    opts = options or AnalysisOptions()
    out = KernelAnalysis(kernel)
    t0 = time.perf_counter()
    fields: list[str] = []
    for op in kernel.walk():
        if op.name == "ave.tag":
            for f in op.attrs["fields"]:
                if f not in fields:
                    fields.append(f)
    bound = opts.trip_bound if opts.trip_bound is not None else default_trip_bound(kernel)
    out.trip_bound = bound
    results: dict[tuple, AssertionResult] = {}
    uninit: dict[tuple, tuple] = {}
    divergent: dict[tuple, tuple] = {}
    races: dict[tuple, tuple] = {}
    waits: dict[tuple, tuple] = {}
    oob: dict[tuple, dict] = {}
    tab, conds = SymTable(), CondTable()
    solver = Solver(tab, conds, opts.solver_timeout_ms)
    #: the runtime loops' header statements (races.barrier_span)
    loop_headers = {(o.loc.file, o.loc.stmt): o.attrs.get("iv_name") for o in kernel.walk()
                    if o.name == "scf.for" and o.loc.stmt is not None}
    t_unroll = t_prop = 0.0

    ruled_out: list[dict] = []
    contradictions: list = []
    collected = 0
    keep = None          # the combination filter (several runtime loops)

    def run_variants(variants: list, incremental: bool, joint: bool = False) -> Any:
        """Run the unrolled ``variants`` (resuming each from the one before when
        ``incremental``) and collect their findings; returns the last engine (None after
        an analysis limit). The findings of a variant whose trip counts no sizes run
        (the kernel's preconditions rule them out; with ``joint`` or several runtime
        loops, counts that cannot go together: ``range(1, KT)`` zero times and ``range(0,
        KT - 1)`` once) are not collected."""
        nonlocal t_prop, collected
        eng = None
        # where each variant will resume from its predecessor (incremental mode): the
        # engine keeps checkpoints there only, and journals only what can be undone
        resume = [Engine.shared_prefix(variants[i][1].body.ops, variants[i + 1][1].body.ops)[0]
                  for i in range(len(variants) - 1)]
        for vi, (trips, uk) in enumerate(variants):
            tb = time.perf_counter()
            sb = solver.time_s
            out.variants += 1
            if eng is None or not incremental:
                eng = Engine(uk, tab, conds, solver, fields)
            # the first witness of each assertion is kept: later variants do not search
            # those that have one again (Engine._violated_before)
            known = {key for key, r in results.items() if r.witness is not None}
            eng.known_violations = set(known)
            try:
                if incremental:
                    if not eng.run_variant(uk, resume[vi:]):
                        eng = Engine(uk, tab, conds, solver, fields)
                        eng.known_violations = set(known)
                        eng.run_variant(uk, resume[vi:])
                else:
                    eng.run()
                eng.check_uniform_trips()
            except VariantRuledOut as e:
                # (the preconditions hold for no sizes running these trip counts)
                eng = None
                ruled_out.append(trips)
                if e.op is not None and "no sizes" in str(e):
                    contradictions.append(e.op)
                t_prop += time.perf_counter() - tb - (solver.time_s - sb)
                continue
            except (AnalysisLimit, SymOverflow) as e:
                eng = None
                eop = getattr(e, "op", None)
                loc = eop.loc if eop is not None else Loc(kernel.file, kernel.range)
                key = ("limit", loc.file, loc.range)
                results.setdefault(key, AssertionResult("analysis", loc, "unknown",
                                                        reason=str(e), trip_bound=bound))
            t_prop += time.perf_counter() - tb - (solver.time_s - sb)
            if eng is None:
                continue
            # (several loops' combinations were decided before unrolling, when the
            # filter could run: only a variant's own preconditions are asked again)
            if trips and (solver.assumed or (joint or len(trips) > 1) and keep is None) \
                    and not _trips_possible(eng):
                ruled_out.append(trips)
                continue
            collected += 1
            collect(eng, trips)
        return eng

    def collect(eng: Any, trips: dict) -> None:
        vm: list = []

        def block_model() -> dict | None:
            # (computed once, for a variant with concrete findings: its sizes where block
            # 0 does not run its trip counts -- `range(program_id(0), 4)` zero times: the
            # witness named block 0; a review helper)
            if not vm:
                m = _variant_model(eng) if trips else None
                # (its block alone: the other sizes of that model only run the trip
                # counts, not the branch or mask a finding made without a query needs --
                # "for A.shape[1] = 96" named sizes where the race does not happen; a
                # review helper)
                vm.append({k: v for k, v in m.items()
                           if k.startswith(("program_id(", "num_programs("))} if m else None)
            return vm[0]
        # (first: an undecided divergence query adds an unknown check, Engine._undecided)
        div = list(eng.divergent) + eng.check_divergence(set(divergent))
        for chk in eng.checks:
            key = chk.location
            r = results.get(key)
            if r is None:
                r = results[key] = AssertionResult(chk.kind, chk.op.loc, "proved",
                                                   trip_bound=bound)
            r.compared += chk.compared
            r.covered += chk.covered
            if chk.unreached is not None and r.unreached is None:
                r.unreached = chk.unreached
            if chk.violation is not None and r.witness is None:
                r.status = "violated"
                r.reason = ""     # (an earlier variant's unknown: this one decided it)
                # (the copy that fails: a helper called twice reported the first call,
                # whose comment hid it; a review helper)
                r.loc = chk.op.loc
                w = _refined(chk.violation)
                raw = w.pop("__loops", None)
                if raw is not None:
                    # (a check made without a query, assert_disjoint: in the block that
                    # runs the variant's trip counts, its loops named by value where that
                    # block's program ids fix them)
                    bm = block_model()
                    if bm:
                        w["block"] = [int(bm.get(f"program_id({a})", 0)) for a in range(3)]
                        w["model"] = bm
                    pids = eng.block_sizes(w["block"])
                    w["loop_indices"] = dict(eng.shown(raw[0], raw[1], pids))
                    w.update(eng._iterations_entry(pids, raw[0]))
                w["trip_counts"] = _model_trips(eng, w.get("model"), trips)
                w["occurrence"] = chk.occurrence
                r.witness = w
            elif chk.unknown is not None and r.status == "proved":
                r.status = "unknown"
                r.reason = chk.unknown
                r.loc = chk.op.loc
        for op, loops, thread, byte, inflight, landing in list(eng.uninit):
            key = op.loc.report_key
            if landing is not None:
                landing = dict(landing, text=_landing_text(eng, landing["when"]))
            if key not in uninit:
                # (a runtime-start loop's iteration named by its value under the sizes of
                # the witness: Engine.loop_values)
                if landing is None:
                    # (found without a query: the program ids of its block alone)
                    bm = block_model()
                    sizes = eng.block_sizes([int((bm or {}).get(f"program_id({a})", 0))
                                             for a in range(3)])
                    its = eng.loop_iterations(sizes, loops)
                else:
                    cl = tuple(landing.get("copy_loops", {}).items())
                    sizes = landing["model"]
                    its = eng.loop_iterations(sizes, loops, cl)
                    landing = dict(landing, copy_loops=dict(eng.loop_values(cl, sizes)))
                uninit[key] = (op, eng.loop_values(loops, sizes), thread, byte, trips,
                               inflight, landing, bm if landing is None else None, its)
        for op, loops, reach, miss, branch, model in div:
            key = op.loc.report_key
            if key not in divergent:
                # (``model`` None: for any sizes; the witness' block then the one that
                # runs the variant's trip counts, its program ids the loops' values')
                bm = block_model() if model is None else None
                sizes = model if model is not None else eng.block_sizes(
                    [int((bm or {}).get(f"program_id({a})", 0)) for a in range(3)])
                divergent[key] = (op, eng.loop_values(loops, sizes), reach, miss, branch,
                                  model, trips, sizes, eng.loop_iterations(sizes, loops))
        for f in eng.bounds.check(known=oob):
            key = f["op"].loc.report_key
            if key not in oob:
                f = _refined(f)
                f["trip_counts"] = _model_trips(eng, f.get("model"), trips)
                oob[key] = f
        for f in list(eng.races.findings):
            key = f["op"].loc.report_key
            if key not in races:
                eng.loop_headers = loop_headers
                races[key] = (f, _race_witness(eng, f, trips, block_model()))
            if f.get("wait") is not None:
                # the wait fix must hold for every execution of the read (every loop
                # iteration, every trip count): the fewest groups left in flight
                n, commit = f["wait"]
                n0, c0 = waits.get(key, (n, False))
                waits[key] = (min(n, n0), commit or c0)
    try:
        ta = time.perf_counter()
        keep = _combination_filter(kernel, tab, conds, solver, fields)
        variants = list(unrolled_variants(kernel, bound, keep=keep))
        t_unroll += time.perf_counter() - ta
        eng = run_variants(variants, opts.incremental)
        if (eng is None and ruled_out) or any(o.name == "ave.assume" for o in kernel.walk()):
            # the loops' bounds from the kernel's prefix with no bound fixed: the last
            # variant's preconditions read its own trip counts (and with every variant
            # ruled out there is none; `ave.assume(E <= 0)` leaves only zero trips)
            eng = _prefix_engine(kernel, tab, conds, solver, fields) if opts.zero_trips \
                else None
        if eng is not None and opts.zero_trips:
            # the runtime loops some sizes let run zero times (``range(1, KT)`` for K <=
            # BK): those variants too, each on its own engine (they share no op after
            # the loop with the others, and little before it)
            zero = zero_trip_loops(eng)
            if zero:
                ta = time.perf_counter()
                zv = list(unrolled_variants(kernel, bound, zero=zero, keep=keep))
                t_unroll += time.perf_counter() - ta
                run_variants(zv, False, joint=True)
        if ruled_out and not collected and not any(
                r.kind == "analysis" for r in results.values()):
            # (every variant ruled out: nothing was checked, and it said "0 errors"; a
            # review helper: `ave.assume(K >= 1024)` with T = 5)
            loc = contradictions[0].loc if contradictions else Loc(kernel.file, kernel.range)
            results[("limit", "trips")] = AssertionResult(
                "analysis", loc, "unknown", trip_bound=bound,
                reason=("`ave.assume`: no sizes satisfy the kernel's preconditions: they "
                        "contradict each other or the sizes' domain (every size >= 1)"
                        + (" (with the trip counts analysed), or need more trips than "
                           f"{bound} (raise tripCountBound, --trip-bound)"
                           if any(ruled_out) else "")
                        if contradictions and len(contradictions) == len(ruled_out) else
                        "the kernel's preconditions (ave.assume) rule out every trip "
                        f"count analysed (1..{bound}"
                        + (", and 0" if any(0 in t.values() for t in ruled_out) else "")
                        + "): nothing was checked; raise tripCountBound (--trip-bound) "
                        "to counts they allow"))
    except UnrollError as e:
        loc = Loc(kernel.file, kernel.range)
        results[("limit",)] = AssertionResult("analysis", loc, "unknown", reason=str(e),
                                              trip_bound=bound)
    for r in results.values():
        # (compared == 0: a store whose mask excludes every element was "proved",
        # coverage 0.0, having checked nothing; a review helper)
        if r.status == "proved" and r.covered == 0 and r.kind != "analysis":
            r.status = "vacuous"
            if r.unreached is not None:
                r.status, r.reason = "unknown", r.unreached
    out.assertions = sorted(results.values(), key=lambda r: (r.loc.range.start, r.kind))
    out.diagnostics = []
    #: per diagnostic (by id), the location of the op copy it reports (_add_call_sites)
    sites: dict = {}

    def emit(d: Diagnostic, loc: Loc) -> None:
        out.diagnostics.append(d)
        sites[id(d)] = loc
    for r in out.assertions:
        for d in _diagnose(kernel, r):
            emit(d, r.loc)
    for (f, rng, _), (op, loops, thread, byte, trips, inflight, landing, bm, its) in sorted(
            uninit.items(), key=_report_order):
        loops = shown_loops(loops, op)
        if landing is not None:
            if landing.get("copy") is not None:
                landing = dict(landing, copy_loops=dict(shown_loops(
                    tuple(landing.get("copy_loops", {}).items()), landing["copy"])))
            d = _landing_diagnostic(kernel, op, loops, thread, byte, trips, landing)
            _mark_iterations(d, its)
            emit(d, op.loc)
            continue
        where = ", ".join(f"{k}={v}" for k, v in loops)
        what = ("that nothing wrote yet: an asynchronous copy into it is still in flight"
                if inflight else "that nothing wrote")
        d = Diagnostic(
            "AVE203", f"reads shared byte {byte} {what} (thread {thread}"
            + (f", {where}" if where else "") + ")", f, rng,
            witness={"block": [int((bm or {}).get(f"program_id({a})", 0)) for a in range(3)],
                     "threads": [_thr(thread, kernel.warp_size)],
                     "loop_indices": dict(loops), "byte": byte, "trip_counts": trips,
                     "program_points": [], **({"model": bm} if bm else {})})
        _mark_iterations(d, its)
        emit(d, op.loc)
    for _, (op, loops, reach, miss, branch, model, trips, sizes, its) in sorted(
            divergent.items(), key=_report_order):
        d = _divergent_diagnostic(kernel, op, loops, reach, miss, branch, trips, model)
        if model is None and any(sizes.values()):
            # (block 0 does not run the variant's trip counts: the block that does)
            d.witness["block"] = [int(sizes.get(f"program_id({a})", 0)) for a in range(3)]
            d.notes.append("in block (" + ", ".join(map(str, d.witness["block"])) + ")")
        _mark_iterations(d, its)
        emit(d, op.loc)
    for key, (rf, w) in sorted(races.items(), key=_report_order):
        fix = w.get("fix")
        if fix is not None and fix["kind"] == "insert_wait" and key in waits:
            n, commit = waits[key]
            # (fewer where the fix goes before an outer call: races.witness)
            fix["count"], fix["commit"] = min(n, fix["count"]), commit
        proposal = {}
        tight = w.pop("__tighten", None)
        if tight is not None and fix is not None and fix["kind"] == "insert_wait" and \
                not fix["commit"]:
            # the wait before the read leaves the copy in flight: tighten it (the count
            # the read needs, less the commits between the two), rather than insert a
            # second wait and barrier after it -- the fix left the wrong wait_async(2) of
            # a pipeline as it was. Measured on the witness' execution only (another
            # execution of the read may pass another wait): a proposal, which
            # ave_lsp.fixplan offers only once the text with it checks clean
            wop, commits = tight
            need = fix["count"] - commits
            if 0 <= need < wop.attrs["n"]:
                l0, c0, l1, c1, old = wop.attrs["n_literal"]
                proposal["set_wait"] = {
                    "kind": "set_wait_count",
                    "range": {"start": {"line": l0, "character": c0},
                              "end": {"line": l1, "character": c1}},
                    "old": old, "new": str(need), "line": l0,
                    "reason": "the wait leaves the asynchronous copy in flight"}
        span = w.pop("__span", None)
        if span and fix is not None and fix["kind"] == "insert_barrier" and \
                fix.get("file") == rf["op"].loc.file:
            proposal["span"] = sorted([ln, ind] for f_, ln, ind in span
                                      if f_ == fix["file"])
        d = _race_diagnostic(rf, w)
        d.proposal = proposal or None
        emit(d, rf["op"].loc)
    for _, w in sorted(oob.items(), key=_report_order):
        op = w["op"]
        emit(_oob_diagnostic(w, kernel), op.loc)
    _add_call_sites(kernel, out.diagnostics, sites)
    solver.close()
    # propagate_s: the engine (tag propagation and checks) without the time in z3;
    # solve_s: every z3 query (the engine's, the bounds search's, the canonical witnesses')
    out.timings = {"unroll_s": t_unroll, "propagate_s": t_prop,
                   "solve_s": solver.time_s, "total_s": time.perf_counter() - t0,
                   "solver_queries": solver.queries}
    return out



def _report_order(item: tuple) -> tuple:
    """Sort key of a ``(Loc.report_key, finding)`` item: the op's position, then its
    call's (an imported helper called twice: the first call's finding first)."""
    (_, rng, call), _ = item
    return (rng.start, () if call is None else (call[1].start,))


def _add_call_sites(kernel: KernelIR, diags: list[Diagnostic], sites: dict) -> None:
    """A finding inside a helper inlined from another file gets, as its first related
    location, the call in the kernel's file (the outermost call of the chain): the editor
    shows it there and a ``# ave: ignore`` there suppresses it (docs/lsp.md). Without it
    the editor showed the finding at its first related location in the file -- the
    ``ave.tag`` line, or the top of the file -- and the call site's comment did nothing
    (a review helper). ``sites``: per diagnostic (by id), the location of the op copy it
    reports -- the call of that copy (a helper called twice: the finding in the second
    copy was shown, and suppressed, at the first call; a review helper)."""
    for d in diags:
        loc = sites.get(id(d))
        if d.file == kernel.file or loc is None:
            continue
        chain = getattr(loc, "inlined_from", ()) or ()
        site = chain[0] if chain else None
        if site is None or site.file == d.file:
            continue
        if not any(r.location.file == site.file and r.location.range == site.range
                   for r in d.related):
            d.related.insert(0, Related(Location(site.file, site.range),
                                        CALL_SITE))
        # the calls in between (kernel -> stage -> stage_inner: stage's call of
        # stage_inner), where a `# ave: ignore` suppresses it too (docs/lsp.md)
        at = 1
        for inner in chain[1:]:
            if not any(r.location.file == inner.file and r.location.range == inner.range
                       for r in d.related):
                d.related.insert(at, Related(Location(inner.file, inner.range),
                                             THROUGH_CALL))
                at += 1


def _iterations_note(its: dict) -> str:
    """The note of a witness naming iteration numbers of runtime-start loops (see
    ``Engine.loop_iterations``)."""
    return "; ".join(f"{name} is named by its iteration number, from 0 (the loop starts at "
                     f"{_strip_parens(start)}, a value this finding does not fix)"
                     for name, start in its.items())


def _strip_parens(t: str) -> str:
    """``t`` without one pair of parentheses around all of it."""
    if t.startswith("(") and t.endswith(")"):
        depth = 0
        for i, ch in enumerate(t):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and i < len(t) - 1:
                return t
        return t[1:-1]
    return t


def _mark_iterations(d: Diagnostic, its: dict) -> None:
    """Add to ``d`` (a witness diagnostic) the runtime-start loops its witness names by
    iteration number: ``loop_iterations`` and a note."""
    if its and d.witness is not None:
        d.witness["loop_iterations"] = dict(its)
        d.notes.append(_iterations_note(its))


def _witness_notes(w: dict) -> list[str]:
    """The notes every witness diagnostic carries: the solver's model (program ids, sizes)
    and the runtime trip counts of the variant that found it."""
    notes = []
    if w.get("model"):
        notes.append("for " + ", ".join(f"{k} = {v}" for k, v in w["model"].items()))
    if w.get("trip_counts"):
        notes.append(trip_note(w["trip_counts"]))
    if w.get("loop_iterations"):
        notes.append(_iterations_note(w["loop_iterations"]))
    return notes


def trip_note(trips: dict) -> str:
    """The note naming the runtime trip counts of the unrolled variant that found a
    finding: "found with the kt loop running 1 time" (``kt=1`` there read like the loop
    variable's value; a fresh user's report)."""
    return "found with " + " and ".join(
        f"the {k} loop running {v} time{'' if v == 1 else 's'}" for k, v in trips.items())

def _prefix_engine(kernel: KernelIR, tab: Any, conds: Any, solver: Any,
                   fields: list) -> Any:
    """An engine that ran the kernel's ops up to its first runtime loop, unrolled with no
    loop bound fixed (the forms of every loop's bound; its preconditions over sizes, not
    over one variant's trip counts), or None when that cannot run. Nothing it finds is
    collected."""
    from ave_core.analysis.engine import Engine
    from ave_core.compiler.unroll import loop_names, runtime_loops, unroll
    loops = runtime_loops(kernel)
    if not loops:
        return None
    names = loop_names(kernel)
    inside = {names[id(op)] for op in loops}
    try:
        uk = unroll(kernel, {op: 1 for op in loops}, bind=False)
        eng = Engine(uk, tab, conds, solver, fields)
        eng.run(stop=lambda op: any(nm in inside for nm, _ in op.attrs.get("loop_indices",
                                                                          ())))
        return eng
    except Exception:                       # (AnalysisLimit, an unroll limit, ...: none)
        return None


def _combination_filter(kernel: KernelIR, tab: Any, conds: Any, solver: Any,
                        fields: list) -> Any:
    """For a kernel with several runtime loops: a predicate over trip-count combinations
    (``{loop op: count}``) keeping those some sizes run, decided with z3 before any is
    unrolled -- loops sharing a bound (a pipelined helper inlined twice) ran every one of
    T ** loops combinations, the impossible ones dropped only after they ran (4 loops: past
    the variant limit, a correct kernel "unknown"; a review helper). The loops' bounds are
    evaluated by running the kernel's ops up to its first runtime loop (its prefix, on an
    engine of its own: nothing is collected). None (keep all) with fewer than two runtime
    loops or when the prefix cannot be run."""
    from ave_core.analysis.accumulation import _trip_forms_named, count_constraints
    from ave_core.compiler.unroll import runtime_loops
    if len(runtime_loops(kernel)) < 2:
        return None
    eng = _prefix_engine(kernel, tab, conds, solver, fields)
    if eng is None:
        return None
    try:
        forms = {id(f[8]): f for f in _trip_forms_named(eng) if f[8] is not None}
    except Exception:                       # (an optimization: never the analysis' end)
        return None
    if len(forms) < 2:
        return None
    z3 = solver.z3
    diffs = {i: solver.lin(f[0], f[1]) - f[2] for i, f in forms.items()}
    s = z3.Solver(ctx=solver.ctx)
    s.set("timeout", solver.timeout_ms)
    s.add(*solver._domain)
    memo: dict = {}

    def keep(combo: dict) -> bool:
        key = tuple(sorted((i, n) for i, n in ((id(op), n) for op, n in combo.items())
                           if i in forms))
        r = memo.get(key)
        if r is None:
            s.push()
            for i, n in key:
                s.add(*count_constraints(diffs[i], forms[i][3], n))
            with solver.timed():
                solver.queries += 1
                r = memo[key] = s.check() != z3.unsat
            s.pop()
        return r
    return keep


def _variant_model(eng: Any) -> dict | None:
    """The smallest sizes and program ids running the variant's trip counts (z3's
    canonical model), when block 0 cannot (then a concrete finding's witness names this
    block and these sizes); None when it can, or unknown."""
    from ave_core.analysis.accumulation import _trip_constraints, _trip_forms
    from ave_core.analysis.symbolic import mentions
    if not any(mentions(eng.tab, k, ("pid",)) for k, *_ in _trip_forms(eng)):
        return None                      # (no z3 query: block 0 runs what any block does)
    sv = eng.solver
    cons = _trip_constraints(eng, sv.z3)
    if not cons:
        return None
    res = sv.satisfiable([], cons)
    if res.status != "sat":
        return None
    m = res.refine() if res.refine is not None else res.model
    if not any(v for k, v in m.items() if k.startswith("program_id(")):
        return None
    return {k: v for k, v in m.items() if not k.startswith("__")}


def _trips_possible(eng: Any) -> bool:
    """Some sizes satisfying the kernel's preconditions (``ave.assume``) run the
    variant's trip counts (unknown: yes)."""
    from ave_core.analysis.accumulation import _trip_constraints
    cons = _trip_constraints(eng, eng.solver.z3)
    return not cons or eng.solver.satisfiable([], cons).status != "unsat"


def _landing_text(eng: Any, clauses: list) -> list[list[tuple[str, Any]]]:
    """The conditions under which a copy ran (clauses of branch arms, see
    :meth:`Engine._landing_marks`) as source text with each branch op: per clause,
    ``[(text, op), ...]``."""
    from ave_core.analysis.smt import cond_text
    out = []
    for when in clauses:
        conj = []
        for ids, arm, bid in when:
            br = eng._branch_ops.get(bid)
            src = br.attrs.get("cond_src") if br is not None else None
            txt = src or " and ".join(cond_text(eng.tab, eng.conds, c) for c in ids)
            if arm == 1:
                txt = _negate_text(txt)
            conj.append((txt, br))
        out.append(conj)
    return out


def _negate_text(txt: str) -> str:
    for a, b in ((" <= ", " > "), (" >= ", " < "), (" < ", " >= "), (" > ", " <= "),
                 (" == ", " != "), (" != ", " == ")):
        if txt.count(a) == 1 and not any(o in txt for o in (" and ", " or ")):
            return txt.replace(a, b)
    return f"not ({txt})"


def _landing_diagnostic(kernel: KernelIR, op: Any, loops: tuple, thread: int, byte: int,
                        trips: dict, landing: dict) -> Diagnostic:
    """AVE203 for a read of bytes an asynchronous copy under a branch wrote on one path
    only: for the sizes of ``landing["model"]`` the branch goes the other way, the copy
    never runs, and the bytes hold what they held before it."""
    where = ", ".join(f"{k}={v}" for k, v in loops)
    model = landing["model"]
    clauses = landing["text"]
    copy = landing.get("copy")
    conds = [c for conj in clauses for c in conj]
    cond = " or ".join((f"({' and '.join(t for t, _ in conj)})" if len(conj) > 1 and
                        len(clauses) > 1 else " and ".join(t for t, _ in conj))
                       for conj in clauses) or "a branch condition"
    sizes = ", ".join(f"{k} = {v}" for k, v in model.items())
    at = ", ".join(f"{k}={v}" for k, v in landing.get("copy_loops", {}).items())
    line = (f" at line {copy.loc.range.start.line + 1}" + (f" ({at})" if at else "")
            if copy is not None else "")
    one = len(clauses) == 1
    msg = (f"reads shared byte {byte} that "
           + (f"the asynchronous copy{line} writes" if one else
              f"asynchronous copies under branches (the last{line}) write")
           + f" only when `{cond}`; " + (f"for {sizes} " if sizes else "for some sizes ")
           + ("it does not run" if one else "none runs")
           + f", and the byte holds what it held before (thread {thread}"
           + (f", {where}" if where else "") + ")")
    pts, related = [], []
    if copy is not None:
        pts.append({"file": copy.loc.file, "range": copy.loc.range.to_json(),
                    "label": "the copy that does not run"})
        related.append(Related(Location(copy.loc.file, copy.loc.range),
                               f"runs only when `{cond}`"))
    seen: set = set()
    for txt, br in conds:
        if br is not None and id(br) not in seen:
            seen.add(id(br))
            pts.append({"file": br.loc.file, "range": br.loc.range.to_json(),
                        "label": f"the branch: `{txt}` is false here" if one else
                        f"a branch around a copy (`{txt}`)"})
            related.append(Related(Location(br.loc.file, br.loc.range),
                                   f"the branch around the copy (`{txt}`)"))
    pts.append({"file": op.loc.file, "range": op.loc.range.to_json(), "label": "the read"})
    return Diagnostic(
        "AVE203", msg, op.loc.file, op.loc.range,
        notes=[trip_note(trips)] if trips else [],
        related=related,
        witness={"block": [int(model.get(f"program_id({a})", 0)) for a in range(3)],
                 "threads": [_thr(thread, kernel.warp_size)], "loop_indices": dict(loops),
                 "byte": byte, "trip_counts": trips, "program_points": pts,
                 "model": dict(model), "copy_loop_indices": landing.get("copy_loops", {}),
                 "coordinates": {}, "tags": {}})


def _divergent_diagnostic(kernel: KernelIR, op: Any, loops: tuple, reach: int, miss: int,
                          branch: Any, trips: dict, model: dict | None = None
                          ) -> Diagnostic:
    """AVE209: a barrier some threads reach and others skip: for certain (the lowest of
    each: ``reach`` and ``miss``; a branch on the thread or warp id), or for the sizes of
    ``model`` (a runtime condition that differs across threads)."""
    ws = kernel.warp_size
    loops = shown_loops(loops, op)
    where = ", ".join(f"{k}={v}" for k, v in loops)
    t0, t1 = _thr(reach, ws), _thr(miss, ws)
    pts = [{"file": op.loc.file, "range": op.loc.range.to_json(), "label": "the barrier"}]
    related = []
    if branch is not None:
        pts.append({"file": branch.loc.file, "range": branch.loc.range.to_json(),
                    "label": "the branch that only some threads take"})
        related.append(Related(Location(branch.loc.file, branch.loc.range),
                               "the branch that only some threads take"))
    msg = (f"barrier reached by only some threads: thread {reach} (warp {t0['warp']}, lane "
           f"{t0['lane']}) reaches it, thread {miss} (warp {t1['warp']}, lane {t1['lane']}) "
           "does not" + (f" ({where})" if where else "")
           + ((", for some values" if any(",thread=" in a for a in model) else
               ", for some sizes") if model is not None else ""))
    return Diagnostic(
        "AVE209", msg, op.loc.file, op.loc.range,
        notes=["a barrier must be reached by every thread of the workgroup (bar.sync / "
               "s_barrier count arrivals: the threads that reach it wait for the others)"]
        + ([("for " + ", ".join(f"{k} = {v}" for k, v in model.items())) if model else
            "for any sizes"] if model is not None else [])
        + ([trip_note(trips)] if trips else []),
        related=related,
        witness={"block": [int((model or {}).get(f"program_id({a})", 0)) for a in range(3)],
                 "threads": [t0, t1], "loop_indices": dict(loops),
                 "trip_counts": dict(trips), "coordinates": {}, "tags": {},
                 "program_points": pts, "model": dict(model or {})})


def _model_trips(eng: Any, model: dict | None, trips: dict) -> dict:
    """The trip counts of a witness's execution: each runtime loop's count for the sizes
    of the witness's ``model``, where they decide it (else the variant's, ``trips``).
    A check made while an op of a loop runs stands for every variant that shares the op
    (its query asks only that the loop reaches the op's iteration): its model may run the
    loop more times than the variant that found it -- the note said "running 2 times" for
    sizes that run it 5 times (a review helper)."""
    out = dict(trips)
    if not model or not trips:
        return out
    from ave_core.analysis.accumulation import _trip_forms_named
    from ave_core.analysis.smt import constant_terms
    from ave_core.compiler.unroll import trip_count
    sv = eng.solver
    z3 = sv.z3
    forms = _trip_forms_named(eng)
    names = [f[5] for f in forms]
    with sv.scratch():
        for k, c, lb, st, n, name, _, _, _ in forms:
            if name is None or name not in out or names.count(name) > 1 or st == 0:
                continue
            expr = sv.lin(k, c)                 # the loop runs range(lb, expr, st)
            free = {e.decl().name(): e for e in constant_terms(z3, [expr]).values()}
            if any(not isinstance(model.get(v), int) for v in free):
                continue
            val = z3.simplify(z3.substitute(expr, *[(e, z3.IntVal(model[v], sv.ctx))
                                                    for v, e in free.items()]))
            if z3.is_int_value(val):
                out[name] = trip_count(lb, val.as_long(), st)
    return out


def _race_witness(eng: Any, f: dict, trips: dict, model: dict | None = None) -> dict:
    from ave_core.analysis.races import witness
    w = witness(eng, f, model)
    w["trip_counts"] = dict(trips)
    return w


def wait_fix_note(fix: dict) -> str:
    """The text output's note of an ``insert_wait`` fix (see ave_lsp/server/fixes.py)."""
    calls = (["ave.commit_async()"] if fix["commit"] else []) + \
        [f"ave.wait_async({fix['count']})", "ave.barrier()"]
    return f"insert {', '.join(calls)} before line {fix['line'] + 1} (quick fix)"


def barrier_fix_note(fix: dict) -> str:
    """The text output's note of an ``insert_barrier`` fix."""
    return f"insert ave.barrier() before line {fix['line'] + 1} (quick fix)"


def set_wait_note(fix: dict) -> str:
    """The text output's note of a ``set_wait_count`` fix (see ave_lsp/server/fixes.py)."""
    return (f"change ave.wait_async({fix['old']}) at line {fix['line'] + 1} to "
            f"ave.wait_async({fix['new']}) (quick fix)")


def _advice_note(fix: dict) -> str:
    """The note of a fix that goes into another file than the diagnostic's (before the
    call of the helper the access is in): advice, not a quick fix."""
    text = (wait_fix_note(fix).removesuffix(" (quick fix)") if fix["kind"] == "insert_wait"
            else f"insert ave.barrier() before line {fix['line'] + 1}")
    return f"{text} of {fix['file']} (the helper's call)"


def merge_wait_fixes(d: Any, other: Any) -> None:
    """Diagnostic ``d`` is also reported by another specialization as ``other``: an
    ``insert_wait`` fix at the same line must hold for both -- the fewer groups left in
    flight, a commit if either needs one (it kept the first specialization's count). The
    same for the advice of a finding in a helper from another file (the witness'
    ``advice``; it kept the first specialization's count, a review helper). The
    proposals (``Diagnostic.proposal``) must hold for both too: a barrier span keeps the
    statements both share, a ``set_wait_count`` of the same wait the lower count; one the
    other specialization lacks is dropped (a review helper: a barrier inside `if F == 0:`
    proposed by configs[0] was offered for configs[1], where that branch is gone)."""
    def merge(a: Any, b: Any) -> Any:
        if not (a and b and a.get("kind") == b.get("kind") == "insert_wait" and
                a.get("line") == b.get("line") and a.get("file") == b.get("file")):
            return None
        m = {**a, "count": min(a["count"], b["count"]), "commit": a["commit"] or b["commit"]}
        return None if m == a else m
    merged = merge(d.fix, other.fix)
    if merged is not None:
        d.notes = [wait_fix_note(merged) if n == wait_fix_note(d.fix) else n for n in d.notes]
        d.fix = merged
    wa, wb = (x.witness if isinstance(x.witness, dict) else {} for x in (d, other))
    merged = merge(wa.get("advice"), wb.get("advice"))
    if merged is not None:
        old = _advice_note(wa["advice"])
        d.notes = [_advice_note(merged) if n == old else n for n in d.notes]
        wa["advice"] = merged
    pa, pb = d.proposal or {}, getattr(other, "proposal", None) or {}
    out = {}
    if "span" in pa and "span" in pb:
        both = [x for x in pa["span"] if x in pb["span"]]
        if both:
            out["span"] = both
    sa, sb = pa.get("set_wait"), pb.get("set_wait")
    if sa and sb and (sa["range"], sa["old"]) == (sb["range"], sb["old"]):
        out["set_wait"] = {**sa, "new": str(min(int(sa["new"]), int(sb["new"])))}
    d.proposal = out or None

def _race_diagnostic(f: dict, w: dict) -> Diagnostic:
    op = f["op"]
    ts = w["threads"]
    later = ts[0]
    loops = ", ".join(f"{k}={v}" for k, v in w["loop_indices"].items())
    if len(ts) > 1:
        other = ts[1]
        who = f"thread {other['thread']} (warp {other['warp']}, lane {other['lane']})"
    else:
        who = "another thread"
    kind = {"read": "reads", "write": "writes"}[f["kind"]]
    msg = (f"shared-memory race: thread {later['thread']} (warp {later['warp']}, lane "
           f"{later['lane']}) {kind} shared byte {w['byte']}" + (f" ({loops})" if loops else ""))
    if f["what"] == "an asynchronous copy in flight":
        # (a barrier does not help: the copy's wait_async does)
        own = f["threads"][0] == f["threads"][1]
        msg += (" while " + ("its own asynchronous copy" if own else
                             f"an asynchronous copy by {who}")
                + " into it is still in flight (no ave.wait_async has retired it)")
    elif f["earlier"] is not None and f["earlier"] == f["later"]:
        # (one write: two elements in the same bytes, or an element's copies that differ)
        msg += (f" that {who} writes with other data in the same write (the layout maps "
                "two elements to these bytes, or the copies of an element differ)")
    elif f["what"] == "a read" and not f["barrier_fixes"] and f["earlier"] is not None \
            and f["later"][0].name == "ave.copy_async":
        # (the read came after the copy was issued: the copy was still in flight when it
        # read -- "with no barrier between" sent a fresh user looking for a barrier where
        # one was, while the wait count was wrong; the in-flight read is reported too)
        msg += (f" as an asynchronous copy lands after a read by {who} that came while "
                "the copy was in flight (no ave.wait_async retired it before the read)")
    else:
        msg += f" after {f['what']} by {who} with no barrier between"
    related = [Related(Location(p["file"], _range(p["range"])), p["label"])
               for p in w["program_points"]]
    notes = _witness_notes(w)
    fix = w.pop("fix", None)
    fix_file = fix.pop("file", op.loc.file) if fix is not None else None
    if fix is not None and fix_file != op.loc.file:
        # the access is in a helper of another file: the statement to insert before is
        # the helper's call, in the kernel's file -- a fix's lines are in the diagnostic's
        # file (the JSON schema), so this is advice, not a quick fix (a review helper: the
        # SARIF fix edited the helper's file at the call's line)
        # (kept in the witness as "advice": specializations merge it as they merge fixes)
        w["advice"] = {**fix, "file": fix_file}
        notes.append(_advice_note(w["advice"]))
        fix = None
    if fix is not None and fix["kind"] == "insert_wait":
        notes.append(wait_fix_note(fix))
        fix = {**fix, "reason": "the asynchronous copy is still in flight"}
    elif fix is not None:
        notes.append(barrier_fix_note(fix))
        fix = {**fix, "reason": "no barrier between the two accesses"}
    return Diagnostic("AVE207", msg, op.loc.file, op.loc.range, notes=notes, related=related,
                      witness=w, fix=fix)


def _oob_diagnostic(w: dict, kernel: KernelIR) -> Diagnostic:
    op = w.pop("op")
    if w.get("unknown"):
        return Diagnostic("AVE205", "global access bounds could not be decided (solver budget)",
                          op.loc.file, op.loc.range)
    t = w["threads"][0]
    loops = ", ".join(f"{k}={v}" for k, v in w["loop_indices"].items())
    coord = ", ".join(str(c) for c in w["coordinates"][w["tensor"]])
    side = "below 0" if w["index"] < 0 else f"past {w['tensor']}.shape[{w['dim']}] = {w['shape_dim']}"
    msg = (f"out-of-bounds access of {w['tensor']}[{coord}] ({side}): block "
           f"{tuple(w['block'])}, thread {t['thread']} (warp {t['warp']}, lane {t['lane']})"
           + (f", {loops}" if loops else "") + "; the mask does not exclude it")
    notes = _witness_notes(w)
    return Diagnostic("AVE208", msg, op.loc.file, op.loc.range, notes=notes, witness=w)


def _thr(t: int, ws: int) -> dict:
    return {"thread": t, "warp": t // ws, "lane": t % ws}


def _fmt_threads(w: dict) -> str:
    ts = w.get("threads") or []
    if not ts:
        return ""
    t = ts[0]
    return f"thread {t['thread']} (warp {t['warp']}, lane {t['lane']})"


def _diagnose(kernel: KernelIR, r: AssertionResult) -> list[Diagnostic]:
    if r.status == "violated":
        w = r.witness or {}
        if r.kind == "assert_disjoint":
            loops = ", ".join(f"{k}={v}" for k, v in w.get("loop_indices", {}).items())
            msg = (f"assert_disjoint violated{': ' + loops if loops else ''}: both tiles cover "
                   f"shared byte {w.get('byte')} ({w.get('overlap_bytes')} bytes overlap; "
                   f"x{w['coordinates']['x']} and y{w['coordinates']['y']})")
            # (the sizes and trip counts it was found with, as every witness diagnostic:
            # AVE202 had neither; a review helper)
            return [Diagnostic("AVE202", msg, r.loc.file, r.loc.range, notes=_witness_notes(w),
                               witness=_schema_witness(w))]
        if r.kind == "accumulate":
            return [_diagnose_accumulate(r, w)]
        ops = w.get("operands", {})
        x, y = ops.get("x", {}), ops.get("y", {})
        f = w.get("field")
        xn = x.get("tensor") or "computed"
        yn = y.get("tensor") or "computed"
        xv = x.get("tags", {}).get(f, "nothing")
        yv = y.get("tags", {}).get(f, "nothing")
        loops = ", ".join(f"{k}={v}" for k, v in w.get("loop_indices", {}).items())
        what = {"mma": "MMA operand pairing violated",
                "store": "stored value does not conform to its destination"}.get(
                    r.kind, "assert_conform violated")
        la, lb = {"mma": ("A", "B"), "store": ("the value", "the destination")}.get(
            r.kind, ("x", "y"))

        def desc(label: str, name: str, tags: dict) -> str:
            inner = ", ".join(f"{k}={v}" for k, v in tags.items())
            return f"{name}[{inner}]" if inner else name

        msg = f"{what}: {_fmt_threads(w)}{', ' + loops if loops else ''}: " \
              f"{la} holds {f}={xv} ({desc(la, xn, x.get('tags', {}))}) but " \
              f"{lb} holds {f}={yv} ({desc(lb, yn, y.get('tags', {}))})"
        def named(label: str) -> str:
            # the related steps name the operands as the message does (an MMA's A and B:
            # they read "x: ..." and "y: ..."; a new user's report). The witness keeps
            # its operand keys (x, y: SARIF's thread flows follow them)
            for old_l, new_l in (("x: ", f"{la}: "), ("y: ", f"{lb}: ")):
                if label.startswith(old_l):
                    return new_l + label[len(old_l):]
            return label
        related = [Related(Location(p["file"], _range(p["range"])), named(p["label"]))
                   for p in w.get("program_points", [])]
        # the elements compared, named as in the message (A/B for an MMA)
        notes = [f"{la} = {desc(la, xn, x.get('tags', {}))} (slot {x.get('slot')}, thread "
                 f"{x.get('thread')}), {lb} = {desc(lb, yn, y.get('tags', {}))} (slot "
                 f"{y.get('slot')}, thread {y.get('thread')})"]
        notes += _witness_notes(w)
        return [Diagnostic("AVE201", msg, r.loc.file, r.loc.range, notes=notes,
                           related=related, witness=_schema_witness(w))]
    if r.status == "unknown":
        return [Diagnostic("AVE205", f"{r.kind} could not be decided: {r.reason}", r.loc.file,
                           r.loc.range)]
    if r.status == "vacuous":
        if not r.compared:
            return [Diagnostic("AVE204", f"{r.kind} compares no element: it proves nothing "
                               "(its mask excludes every element, or it never runs)",
                               r.loc.file, r.loc.range)]
        # (not only untagged tensors: a computation keeps the fields its inputs agree on --
        # a reduction over the wrong axis dropped `row`, and "tag the tensors" misled a
        # fresh user whose tensors were tagged)
        return [Diagnostic("AVE204", f"{r.kind} compares only elements with no tag on the "
                           "compared fields (⊥): it proves nothing (tag the tensors its "
                           "operands come from; a computation keeps only the fields its "
                           "inputs agree on -- a reduction drops the reduced axis's field)",
                           r.loc.file, r.loc.range)]
    return []


def _diagnose_accumulate(r: AssertionResult, w: dict) -> Diagnostic:
    f, v = w.get("field"), w.get("value")
    acc = w.get("accumulator")
    chain = w.get("chain") or []
    loops = sorted({k for c in chain for k in c})
    # the values the loop variables took over the chain (in execution order: a loop with a
    # negative step counts down)
    span = ", ".join(
        (f"{k}={vals[0]}" if vals[0] == vals[-1] else f"{k}={vals[0]}..{vals[-1]}")
        for k in loops for vals in [[c[k] for c in chain if k in c]])
    if w.get("what") == "twice":
        a, b = w["mma_loops"].get("first", {}), w["mma_loops"].get("again", {})
        def at(loops: dict, i: int) -> str:
            # the loop iteration, or an MMA outside every loop ("at once and again at
            # again" named neither; a review helper). No line number: the related
            # locations give it, and a message that names a line changes when lines are
            # added above (--watch called the finding new and fixed; another review)
            if loops:
                return "at " + ", ".join(f"{k}={x}" for k, x in loops.items())
            return "by an MMA outside every loop"
        msg = (f"accumulation repeats {f}={v}: {_fmt_threads(w)} accumulates it into acc{acc} "
               f"{at(a, 0)} and again {at(b, 1)}")
    elif w.get("what") == "dropped":
        at = ", ".join(f"{k}={x}" for k, x in w.get("loop_indices", {}).items())
        msg = (f"accumulation incomplete: {_fmt_threads(w)} resets acc{acc} at the "
               f"ave.where{' at ' + at if at else ''}, dropping the products summed into it "
               f"before" + (f" ({span})" if span else "") + ", and the store writes it")
    else:
        # ("never accumulates k=0 into acc[0, 0] (A.shape[1] > 0) over kt=2..2" was hard
        # to read; a new user's report)
        msg = (f"accumulation incomplete: {_fmt_threads(w)} never accumulates {f}={v} into "
               f"acc{acc}" + (f", though {w['domain']} > {v} puts it in the sum"
                              if w.get("domain") else "")
               + (f" (the MMAs summed into it ran at {span})" if span else ""))
    if "reset" in w:
        # (the chain after an ave.where that reset the element: check_resets)
        at = ", ".join(f"{k}={x}" for k, x in w["reset"].items())
        msg += f", after the ave.where{' at ' + at if at else ''} reset it"
    notes = _witness_notes(w)
    related = [Related(Location(p["file"], _range(p["range"])), p["label"])
               for p in w.get("program_points", [])]
    return Diagnostic("AVE206", msg, r.loc.file, r.loc.range, notes=notes, related=related,
                      witness=_schema_witness(w))


def _range(j: dict):
    from ave_core.diagnostics import Range
    return Range.of(j["start"]["line"], j["start"]["character"], j["end"]["line"],
                    j["end"]["character"])


def _schema_witness(w: dict) -> dict:
    """The witness as the JSON schema describes it (extra keys kept)."""
    ops = w.get("operands", {})
    coords = {k: v.get("tags") for k, v in ops.items()} if ops else w.get("coordinates", {})
    tags = {k: v.get("tags") for k, v in ops.items()} if ops else {}
    out = {"block": w.get("block", [0, 0, 0]), "threads": w.get("threads", []),
           "loop_indices": w.get("loop_indices", {}), "coordinates": coords, "tags": tags,
           "program_points": w.get("program_points", [])}
    for k, v in w.items():
        if k not in out:
            out[k] = v
    return out
