"""Better quick fixes, offered only where checking the fixed text proves them.

The analysis gives every race (AVE207) a fix that is right on its own: a barrier right
before the statement of the later access, or a wait and a barrier there for a copy still
in flight. Some findings also carry a *proposal* (``Diagnostic.proposal``) it cannot
vouch for alone, because it saw one execution of the race (one byte, one pair of
threads, one trip count):

* ``span``: the statements before which one barrier separates this race's accesses. Where
  the spans of several races share a statement, one barrier there may fix them all
  (examples/broken/gemm_missing_barrier.py: the two reads and the two refills of a stage
  all want the barrier before the refill; each race's own fix made three barriers).
* ``set_wait``: lower the count of the ``ave.wait_async`` before a read of bytes still in
  flight (examples/broken/flash_attention_v_wait.py: ``wait_async(2)`` -> ``1``), instead
  of a second wait and barrier after the wrong one.

:func:`improve_fixes` turns proposals into a plan (one statement for the most races,
greedily; the lowest count a wait's readers need), applies it to the text with the same
edits the editor makes (:func:`ave_lsp.server.fixes.edit_for`), checks that text again and
keeps a part of the plan only where the findings it claims to fix are gone and no new
error appeared. A review helper found proposals wrong five ways (a barrier inside a
compile-time branch another specialization lacks, a loop that may run zero times, a read
of bytes two statements wrote, a race between loop iterations, a read another execution
of which passes another wait): checked, not trusted. Costs one more check of a file
whose races carry proposals per part of the plan, each part checked alone (at most
``MAX_PARTS``; the language server stops starting them after a time budget).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from ave_core.analysis import barrier_fix_note, set_wait_note, wait_fix_note

#: How many parts of a plan are checked (each alone: one more check of the file each);
#: the rest are not offered.
MAX_PARTS = 3


def improve_fixes(report: Any, text: str, recheck: Callable[[str], Any],
                  budget_s: float | None = None) -> None:
    """Replace the fixes of ``report``'s diagnostics (in ``report.path``, whose text is
    ``text``) by the proposals that a check of the fixed text proves; ``recheck(text)``
    checks a text of the file as ``report`` was checked (returns a FileReport). Mutates
    the diagnostics' ``fix`` and ``notes``; clears every ``proposal``.

    ``budget_s``: after this many seconds of re-checking no further one starts (the
    language server: a save's diagnostics wait for it); None: no limit (``--check``).
    At most ``MAX_PARTS`` re-checks, one per part of the plan."""
    import time

    deadline = None if budget_s is None else time.monotonic() + budget_s
    try:
        parts = _plan(report)
        if parts:
            good = _verified(parts, report, text, recheck, deadline)
            for part in good:
                _apply(part)
    finally:
        for d in report.diagnostics:
            d.proposal = None


# ----------------------------------------------------------------------------- the plan

def _plan(report: Any) -> list[dict]:
    """Parts of the plan: ``{"kind": "barrier", "fix": insert_barrier fix, "diags":
    [...]}`` (one barrier for several races) and ``{"kind": "wait", "fix":
    set_wait_count fix, "diags": [...]}`` (one wait's new count)."""
    import os

    me = os.path.normcase(os.path.abspath(report.path))
    mine = [d for d in report.diagnostics if d.code == "AVE207" and d.proposal and
            d.fix is not None and os.path.normcase(os.path.abspath(d.file)) == me]
    parts: list[dict] = []
    waits: dict = {}
    for d in mine:
        sw = d.proposal.get("set_wait")
        if sw and d.fix.get("kind") == "insert_wait":
            r = sw["range"]
            key = (r["start"]["line"], r["start"]["character"], r["end"]["line"],
                   r["end"]["character"], sw["old"])
            waits.setdefault(key, []).append((d, sw))
    for key, items in waits.items():
        new = min(int(sw["new"]) for _, sw in items)
        fix = {**items[0][1], "new": str(new)}
        parts.append({"kind": "wait", "fix": fix, "diags": [d for d, _ in items]})
    left = {}
    own = {}
    for d in mine:
        sp = d.proposal.get("span")
        if sp and d.fix.get("kind") == "insert_barrier":
            o = (d.fix["line"], d.fix["indent"])
            own[id(d)] = o
            left[id(d)] = (d, {tuple(x) for x in sp} | {o})
    owners = Counter(own.values())
    while left:
        counts = Counter(c for _, span in left.values() for c in span)
        best = max(counts, key=lambda c: (counts[c], owners.get(c, 0), c[0]))
        if counts[best] < 2:
            break                       # (no statement serves two: each keeps its own)
        covered = [i for i, (_, span) in left.items() if best in span]
        ds = [left[i][0] for i in covered]
        for i in covered:
            del left[i]
        if all(own[id(d)] == best for d in ds):
            continue                    # (their own fixes already are that one barrier)
        parts.append({"kind": "barrier", "diags": ds,
                      "fix": {"kind": "insert_barrier", "line": best[0],
                              "indent": best[1],
                              "reason": "no barrier between the two accesses (one "
                                        f"barrier fixes {len(ds)} races)"}})
    return parts


# ----------------------------------------------------------------------------- checking

def _line_starts(text: str) -> list[int]:
    """Offsets of the lines' starts, lines as LSP counts them (ends ``\\r\\n``, ``\\r``,
    ``\\n`` only: ``str.splitlines`` also breaks at a form feed or U+2028, and the text
    checked was then not the one the editor makes; a review helper)."""
    from ave_lsp.server.fixes import _LINE_END

    return [0] + [m.end() for m in _LINE_END.finditer(text)]


def _edited(text: str, fixes: list[dict]) -> tuple[str, list[int]] | None:
    """``text`` with the edits of ``fixes`` (as the editor makes them) and the 0-based
    lines before which barrier lines were inserted (sorted); None when a fix does not
    apply to the text."""
    from ave_lsp.server.fixes import _lines, _utf16_index, edit_for

    edits = []
    inserted = []
    for fix in fixes:
        got = edit_for(fix, text)
        if got is None:
            return None
        edits.append(got[1])
        if fix["kind"] == "insert_barrier":
            inserted.append(fix["line"])
    starts = _line_starts(text)
    lines = _lines(text)

    def offset(p: Any) -> int:
        # (edit_for's positions lie in the text: UTF-16 columns to code points)
        return starts[p.line] + _utf16_index(lines[p.line], p.character)
    out = text
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        a, b = offset(e.range.start), offset(e.range.end)
        out = out[:a] + e.new_text + out[b:]
    return out, sorted(inserted)


def _keys(report: Any, path: str, old_of_new: dict | None) -> dict:
    """Error diagnostics of ``path`` in ``report`` by ``(code, line, character)``; with
    ``old_of_new`` (``report`` checked the edited text) lines in the original text's
    numbering (an inserted line: None)."""
    import os

    me = os.path.normcase(os.path.abspath(path))
    out: dict = {}
    for d in report.diagnostics:
        if d.severity is None or d.severity.label != "error" or \
                os.path.normcase(os.path.abspath(d.file)) != me:
            continue
        line = d.range.start.line
        if old_of_new is not None:
            line = old_of_new.get(line)
        out.setdefault((d.code, line, d.range.start.character), []).append(d)
    return out


def _holds(parts: list[dict], report: Any, text: str, recheck: Callable) -> bool:
    """Whether the text with every fix of ``parts`` checks without the findings they
    claim to fix and without a new error."""
    got = _edited(text, [p["fix"] for p in parts])
    if got is None:
        return False
    new_text, inserted = got
    after = recheck(new_text)
    # line l of the original is line l + (barriers inserted before lines <= l)
    old_of_new = {}
    k = 0
    for line in range(len(_line_starts(text)) + 1):
        while k < len(inserted) and inserted[k] <= line:
            k += 1
        old_of_new[line + k] = line
    before = _keys(report, report.path, None)
    now = _keys(after, report.path, old_of_new)
    if any(k[1] is None or k not in before for k in now):
        return False                    # a new error (or one on an inserted line)
    for p in parts:
        for d in p["diags"]:
            if (d.code, d.range.start.line, d.range.start.character) in now:
                return False            # a finding it claims to fix is still there
    return True


def _verified(parts: list[dict], report: Any, text: str, recheck: Callable,
              deadline: float | None) -> list[dict]:
    import time

    # each part alone: a user applies one quick fix at a time (checked with the others,
    # a barrier got the credit for a race the wait's new count fixed; a review helper)
    out = []
    for i, p in enumerate(parts[:MAX_PARTS]):
        if i and deadline is not None and time.monotonic() > deadline:
            break
        if _holds([p], report, text, recheck):
            out.append(p)
    return out


# ----------------------------------------------------------------------------- applying

def _apply(part: dict) -> None:
    n = len(part["diags"])
    for d in part["diags"]:
        old = d.fix
        if part["kind"] == "wait":
            old_note = wait_fix_note(old)
            d.fix = dict(part["fix"])
            note = set_wait_note(d.fix)
        else:
            old_note = barrier_fix_note(old)
            d.fix = dict(part["fix"])
            note = (f"insert ave.barrier() before line {d.fix['line'] + 1} (quick fix; "
                    f"one barrier there fixes {n} races)")
        d.notes = [note if x == old_note else x for x in d.notes]
