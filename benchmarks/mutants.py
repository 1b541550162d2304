"""Mutation benchmark of the tag checker on the bundled examples.

    python benchmarks/mutants.py [--out FILE] [--classes a,b,...] [--examples gemm.py,...]
                                 [--limit N] [--sample K --seed S] [--jobs J]
                                 [--oracle none|missed|all] [--input-seed N] [--timeout S]
    python benchmarks/mutants.py --report FILE      # re-print (and re-derive) a run's JSON
    python benchmarks/mutants.py --emit ID          # the source of one mutant (a reproducer)

Generates source-text mutants of examples/gemm.py, flash_attention.py and moe.py
(``benchmarks/_mutate.py`` lists the classes and rules), drops those the front end rejects
(counted separately), and for every other one:

* classifies it with the CPU interpreter against the original on the same fresh random
  inputs (three or four shapes with edges per specialization, every specialization):
  ``output_changing`` (an output element beyond tolerance, NaN, or a dynamic check
  AVE301..AVE305) or ``equivalent``;
* runs the checker (``analyze``) on EVERY specialization: ``flagged`` = any AVE201 / AVE202 /
  AVE203 / AVE206 / AVE207 / AVE208 diagnostic or an assertion violated / unknown (AVE205);
* replays every output-changing mutant and every flagged equivalent one in the
  interpreter's provenance mode (``--oracle all``, the default; ``missed``: only the
  disagreements): whether some mma really paired elements whose tags disagree. An
  unflagged mutant where it did is a checker miss; one where it did not (and no
  uninitialized read happened) is a bug outside the tag vocabulary.

Reports the kill rate = flagged / output-changing (the issue's bar, >= 90 %, is over ALL
output-changing mutants), the same over the mutants the interpreter catches through wrong
outputs or an uninitialized read (AVE303; i.e. leaving out those seen only as a race
AVE304 or an out-of-bounds access AVE301/AVE302 -- hazards outside the tag vocabulary), and
over the in-vocabulary ones (runtime pairing violation or AVE303), the
flagged equivalent mutants (false positives; bar: 0), per-class counts and the unflagged
output-changing mutants with the reason. Writes JSON (default
benchmarks/results/mutants.json) and prints a table last.

``--limit N`` keeps the first N generated mutants, ``--sample K --seed S`` a fixed random
sample of K (after ``--classes`` / ``--examples``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import random
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _mutate as MU  # noqa: E402

DEFAULT_OUT = MU.ROOT / "benchmarks" / "results" / "mutants.json"
_COST = {"flash_attention.py": 0, "moe.py": 1, "gemm.py": 2}


def _work(args):
    m, seed, oracle, timeout = args
    try:
        return MU.evaluate(m, seed, oracle, timeout)
    except Exception as e:                      # never lose the whole run to one mutant
        import traceback
        r = m.to_json()
        r["status"] = "harness_error"
        r["error"] = f"{type(e).__name__}: {e}"
        r["traceback"] = traceback.format_exc()[-2000:]
        return r


def select(args) -> list:
    classes = MU.CLASSES if not args.classes else tuple(args.classes.split(","))
    bad = [c for c in classes if c not in MU.CLASSES]
    if bad:
        raise SystemExit(f"unknown classes {bad}; known: {', '.join(MU.CLASSES)}")
    exs = MU.EXAMPLE_FILES if not args.examples else tuple(args.examples.split(","))
    ms = [m for ex in exs for m in MU.generate(ex, classes)]
    if args.sample is not None:
        rng = random.Random(args.seed)
        keep = set(id(m) for m in rng.sample(ms, min(args.sample, len(ms))))
        ms = [m for m in ms if id(m) in keep]
    if args.limit is not None:
        ms = ms[:args.limit]
    return ms


def summarize(results: list[dict]) -> dict:
    rows = {}
    for c in MU.CLASSES:
        rs = [r for r in results if r["class"] == c]
        if not rs:
            continue
        comp = [r for r in rs if r["status"] == "compiled"]
        oc = [r for r in comp if r["interp"]["verdict"] == "output_changing"]
        eq = [r for r in comp if r["interp"]["verdict"] == "equivalent"]
        err = [r for r in comp if r["interp"]["verdict"] == "error"]
        voc = [r for r in oc if _vocab_evidence(r)]
        iv = [r for r in oc if _in_vocab(r)]
        rows[c] = {
            "generated": len(rs),
            "frontend_rejected": sum(r["status"] == "frontend_rejected" for r in rs),
            "harness_errors": sum(r["status"] == "harness_error" for r in rs),
            "compiled": len(comp),
            "interp_errors": len(err),
            "equivalent": len(eq),
            "output_changing": len(oc),
            "flagged_output_changing": sum(r["checker"]["flagged"] for r in oc),
            "wrong_or_uninit": len(voc),
            "flagged_wrong_or_uninit": sum(r["checker"]["flagged"] for r in voc),
            "false_positives": sum(r["checker"]["flagged"] for r in eq),
            "in_vocab": len(iv),
            "flagged_in_vocab": sum(r["checker"]["flagged"] for r in iv),
            "checker_misses": sum(bool((r.get("oracle") or {}).get("violated"))
                                  and not r["checker"]["flagged"] for r in oc),
        }
    tot = {k: sum(row[k] for row in rows.values()) for k in next(iter(rows.values()))} \
        if rows else {}
    mut = {k: sum(row[k] for c, row in rows.items() if c not in MU.CONTROL)
           for k in tot}
    return {"by_class": rows, "total": tot, "total_without_controls": mut}


def _vocab_evidence(r: dict) -> bool:
    ev = r["interp"]["evidence"]
    return bool(ev["wrong_output"]) or "AVE303" in ev["dynamic"]


def _in_vocab(r: dict) -> bool:
    """Output-changing through a bug the tag vocabulary describes, as the interpreter sees
    it (needs the oracle): some mma paired elements whose tags disagree, or a read of
    never-written shared memory."""
    return bool((r.get("oracle") or {}).get("violated")) or \
        "AVE303" in r["interp"]["evidence"]["dynamic"]


def _rate(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def _pct(x: float | None) -> str:
    return "   -" if x is None else f"{100 * x:5.1f}%"


def build_doc(results: list[dict], options: dict, wall: float, when: str | None = None,
              machine: dict | None = None) -> dict:
    """The JSON document: per-mutant records plus everything derived from them."""
    summ = summarize(results)
    tot = summ["total_without_controls"]
    comp = [r for r in results if r["status"] == "compiled"]
    oc = [r for r in comp if r["interp"]["verdict"] == "output_changing"
          and r["class"] not in MU.CONTROL]
    fps = [r for r in comp if r["interp"]["verdict"] == "equivalent" and r["checker"]["flagged"]]
    missed = [r for r in oc if not r["checker"]["flagged"]]
    for r in results:
        r.pop("why_not_flagged", None)
    for r in missed:
        r["why_not_flagged"] = MU.explain_miss(r)
    fe = Counter(c for r in results if r["status"] == "frontend_rejected"
                 for c in r["frontend"][:1])
    rates = {
        "kill_rate_all_output_changing": _rate(tot.get("flagged_output_changing", 0),
                                               tot.get("output_changing", 0)),
        "kill_rate_wrong_output_or_uninit": _rate(tot.get("flagged_wrong_or_uninit", 0),
                                                  tot.get("wrong_or_uninit", 0)),
        "kill_rate_in_vocabulary": _rate(tot.get("flagged_in_vocab", 0),
                                         tot.get("in_vocab", 0))
        if options.get("oracle") == "all" else None,
        "bar": ">= 0.90 over ALL output-changing mutants (controls excluded); 0 false "
               "positives",
        "false_positives": len(fps),
        "checker_misses_confirmed_by_oracle": sum(bool((r.get("oracle") or {}).get("violated"))
                                                  for r in missed),
    }
    rates["meets_kill_bar"] = (rates["kill_rate_all_output_changing"] or 0) >= 0.9
    rates["meets_fp_bar"] = not fps
    return {
        "benchmark": "mutants",
        "time": when or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine or {"platform": platform.platform(), "cpus": os.cpu_count(),
                               "python": platform.python_version()},
        "options": options,
        "judging": {
            "interpreter": "every specialization x 3-4 shapes (see _mutate.shapes), outputs vs "
                           "the original's beyond |d| > rtol |ref| + atol max|ref| (f32: 1e-6, "
                           "1e-7; bf16: 2**-7, 1e-3) or NaN, or a dynamic check AVE301..AVE305",
            "checker": "analyze() on EVERY specialization; flagged = AVE201/AVE202/AVE203/"
                       "AVE205/AVE206/AVE207/AVE208 or an assertion violated/unknown",
            "oracle": options.get("oracle"),
        },
        "wall_s": round(wall, 1),
        "rates": rates,
        "summary": summ,
        "frontend_rejected_by_code": dict(sorted(fe.items())),
        "false_positives": [{"id": r["id"], "mutation": _mdesc(r),
                             "diagnostic": r["checker"]["first"],
                             "oracle": r.get("oracle")} for r in fps],
        "not_flagged_output_changing": [
            {"id": r["id"], "class": r["class"], "mutation": _mdesc(r),
             "evidence": r["interp"]["evidence"], "why": r["why_not_flagged"]}
            for r in missed],
        "harness_errors": [{"id": r["id"], "error": r["error"]} for r in results
                           if r["status"] == "harness_error"],
        "mutants": results,
    }


def report(doc: dict) -> None:
    """Print the findings, then the table (last)."""
    results = doc["mutants"]
    rates = doc["rates"]
    summ = doc["summary"]
    fps = doc["false_positives"]
    print()
    if fps:
        print("FALSE POSITIVES (equivalent mutants the checker flags):")
        for f in fps:
            print(f"  {f['id']}: {f['mutation']}\n      {f['diagnostic']}")
            if f.get("oracle"):
                print(f"      oracle: {_odesc(f['oracle'])}")
    else:
        print("False positives: none (no equivalent mutant is flagged).")
    print()
    missed = doc["not_flagged_output_changing"]
    print(f"Output-changing mutants NOT flagged ({len(missed)}):")
    for x in missed:
        print(f"  {x['id']}: {x['mutation']}\n      {x['why']}")
    errs = [r for r in results if r["status"] == "harness_error"
            or (r["status"] == "compiled" and r["interp"]["verdict"] == "error")]
    if errs:
        print("\nErrors:")
        for r in errs:
            print(f"  {r['id']}: {r.get('error') or r['interp']['evidence']['errors']}")
    fe = doc["frontend_rejected_by_code"]
    print()
    print(f"front end rejected: {sum(fe.values())} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(fe.items()))})")
    print(f"wall time {doc['wall_s']:.0f} s, {doc['options'].get('jobs')} worker(s)")
    print()
    print("gen/rej/ok: generated, rejected by the front end, compiled; equiv: equivalent "
          "(FP: of them flagged);\nchg: output-changing, flag: of them flagged, kill = "
          "flag/chg (THE BAR: >= 90% over all output-changing, controls excluded);\nw/u: "
          "output-changing through a wrong output or an uninitialized read (AVE303), i.e. "
          "without\nthe race-only / out-of-bounds-only ones; voc: output-changing through a "
          "bug of the tag vocabulary\nas the interpreter sees it (provenance oracle: an mma "
          "paired elements whose tags disagree; or AVE303);\nmiss*: not flagged although the "
          "provenance oracle saw a tag-pairing violation (checker bugs).")
    print()
    hdr = (f"{'class':18s} {'gen':>4s} {'rej':>4s} {'ok':>4s} {'equiv':>5s} {'FP':>3s} "
           f"{'chg':>4s} {'flag':>4s} {'kill':>6s} {'w/u':>4s} {'flag':>4s} {'kill':>6s} "
           f"{'voc':>4s} {'flag':>4s} {'kill':>6s} {'miss*':>5s}")
    print(hdr)
    print("-" * len(hdr))

    def line(name, row):
        print(f"{name:18s} {row['generated']:4d} {row['frontend_rejected']:4d} "
              f"{row['compiled']:4d} {row['equivalent']:5d} {row['false_positives']:3d} "
              f"{row['output_changing']:4d} {row['flagged_output_changing']:4d} "
              f"{_pct(_rate(row['flagged_output_changing'], row['output_changing'])):>6s} "
              f"{row['wrong_or_uninit']:4d} {row['flagged_wrong_or_uninit']:4d} "
              f"{_pct(_rate(row['flagged_wrong_or_uninit'], row['wrong_or_uninit'])):>6s} "
              f"{row['in_vocab']:4d} {row['flagged_in_vocab']:4d} "
              f"{_pct(_rate(row['flagged_in_vocab'], row['in_vocab'])):>6s} "
              f"{row['checker_misses']:5d}")
    for c, row in summ["by_class"].items():
        line(c + (" (ctl)" if c in MU.CONTROL else ""), row)
    print("-" * len(hdr))
    if summ["total"]:
        line("total (no ctl)", summ["total_without_controls"])
        line("total", summ["total"])
    print("-" * len(hdr))
    print(f"KILL RATE all output-changing {_pct(rates['kill_rate_all_output_changing'])} "
          f"(bar 90%: {'met' if rates['meets_kill_bar'] else 'NOT met'}) | wrong output or "
          f"uninit {_pct(rates['kill_rate_wrong_output_or_uninit'])} | in vocabulary "
          f"{_pct(rates['kill_rate_in_vocabulary'])} | FALSE POSITIVES {rates['false_positives']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--classes", default=None, help="comma-separated: " + ",".join(MU.CLASSES))
    ap.add_argument("--examples", default=None, help="comma-separated example files")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--sample", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0, help="seed of --sample")
    ap.add_argument("--input-seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--oracle", choices=("none", "missed", "all"), default="all",
                    help="provenance oracle for: no mutant, the disagreements only, or "
                         "every output-changing mutant too (default; gives the in-vocabulary "
                         "kill rate)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per interpreter run")
    ap.add_argument("--report", default=None, metavar="JSON",
                    help="re-derive the summary from an earlier run's JSON and print it "
                         "(no mutant is run; with --out, also rewrite the JSON there)")
    ap.add_argument("--emit", default=None, metavar="ID",
                    help="print the source of mutant ID (e.g. gemm.swizzle_one_side.007) and "
                         "exit: a reproducer for `ave-lsp --check` or the interpreter")
    args = ap.parse_args(argv)

    if args.emit:
        ex = {MU.EXAMPLE_FILES[i].rsplit(".", 1)[0]: MU.EXAMPLE_FILES[i]
              for i in range(len(MU.EXAMPLE_FILES))}.get(args.emit.split(".", 1)[0])
        hit = [m for m in MU.generate(ex)] if ex else []
        hit = [m for m in hit if m.id == args.emit]
        if not hit:
            raise SystemExit(f"no mutant {args.emit}")
        print(f"# {hit[0].describe()}", file=sys.stderr)
        sys.stdout.write(hit[0].source)
        return 0

    if args.report:
        with open(args.report, encoding="utf-8") as f:
            old = json.load(f)
        doc = build_doc(old["mutants"], old["options"], old["wall_s"], old.get("time"),
                        old.get("machine"))
        if args.out != str(DEFAULT_OUT) or os.path.abspath(args.report) == \
                os.path.abspath(args.out):
            _write(doc, args.out)
        report(doc)
        return 0

    t0 = time.perf_counter()
    ms = select(args)
    print(f"{len(ms)} mutants; {args.jobs} worker(s)", file=sys.stderr)
    order = sorted(ms, key=lambda m: _COST.get(m.example, 9))
    tasks = [(m, args.input_seed, args.oracle, args.timeout) for m in order]
    results = []
    if args.jobs > 1:
        ctx = mp.get_context("fork")
        with ctx.Pool(args.jobs, maxtasksperchild=40) as pool:
            for i, r in enumerate(pool.imap_unordered(_work, tasks), 1):
                results.append(r)
                _progress(i, len(tasks), r, t0)
    else:
        for i, t in enumerate(tasks, 1):
            r = _work(t)
            results.append(r)
            _progress(i, len(tasks), r, t0)
    rank = {m.id: i for i, m in enumerate(ms)}
    results.sort(key=lambda r: rank[r["id"]])
    options = {k: v for k, v in vars(args).items() if k not in ("out", "report")}
    doc = build_doc(results, options, time.perf_counter() - t0)
    _write(doc, args.out)
    print(f"JSON: {args.out}")
    report(doc)
    return 0


def _write(doc: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")


def _mdesc(r: dict) -> str:
    return f"{r['example']}:{r['line']} [{r['kind']}] `{r['before']}` -> `{r['after']}`"


def _odesc(o: dict) -> str:
    if o.get("violated"):
        return (f"runtime pairing violated: {o['field']} {o['A_values']} vs {o['B_values']} "
                f"(line {o['op_line']}, config {o['config']}, block {o['block']}, "
                f"loops {o['loops']})")
    if o.get("violated") is None:
        return f"oracle error: {o.get('error')}"
    return f"every mma pairing holds at run time ({o['runs']} runs)"


def _progress(i: int, n: int, r: dict, t0: float) -> None:
    if r["status"] == "compiled":
        s = f"{r['interp']['verdict']:15s} {'FLAGGED' if r['checker']['flagged'] else '-':7s}"
    else:
        s = r["status"]
    print(f"[{i:3d}/{n}] {time.perf_counter() - t0:6.0f}s {r['id']:40s} {s} "
          f"({r.get('seconds', 0):.1f}s)", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
