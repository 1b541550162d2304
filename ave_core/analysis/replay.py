"""Replaying a witness through the interpreter's provenance mode (the independent oracle).

The checker says, e.g., "thread 8, kt=0: A holds k=8 but B holds k=0". The interpreter,
which shares nothing with z3 or the tag engine, runs the same kernel on concrete inputs
with provenance on: every register knows which global element it came from. Replaying a
witness looks up the execution of the same op (same source range, loop indices and
occurrence, block), reads the provenance of the witness' two elements (thread, register),
decodes them to tensor coordinates, evaluates the tensors' tag functions on those
coordinates (concretely, from the IR), and reports the two values of the field in
question. The witness is confirmed when they differ.

For values computed by an MMA (attention's P), the interpreter keeps two sources — the A
element of the row and the B element of the column the value was computed from — and a
field is read from whichever source's tag has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ave_core.compiler.ir import KernelIR


@dataclass
class Replay:
    """The oracle's view of one witness."""

    confirmed: bool
    field: str
    x_value: Any
    y_value: Any
    x_fields: dict
    y_fields: dict
    detail: str = ""


def tag_fields(kernel: KernelIR, tensor: str, coords: Sequence[int]) -> dict:
    """Evaluate the ``ave.tag`` function of parameter ``tensor`` at concrete coordinates."""
    for op in kernel.walk():
        if op.name != "ave.tag":
            continue
        src = op.operands[0]
        if src.name != tensor and not any(p.name == tensor and p.value is src
                                          for p in kernel.params):
            continue
        out = eval_tag_region(op.attrs["fields"], op.regions[0], [int(c) for c in coords])
        return {f: int(v) for f, v in out.items()}
    return {}


def eval_tag_region(fields: Sequence[str], region: Any, coords: Sequence[Any]) -> dict:
    """Evaluate an ``ave.tag`` region (arithmetic on coordinates) on concrete coordinates:
    Python ints or numpy integer arrays (elementwise). Returns field -> value(s)."""
    env: dict = dict(zip(region.args, coords))
    for rop in region.ops:
        if rop.name == "ave.yield":
            return {f: env[v] for f, v in zip(fields, rop.operands)}
        if rop.name == "arith.constant":
            env[rop.result] = int(rop.attrs["value"])
            continue
        a = [env[v] for v in rop.operands]
        name = rop.name.split(".", 1)[1]
        env[rop.result] = {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1],
                           "mul": lambda: a[0] * a[1], "floordiv": lambda: a[0] // a[1],
                           "mod": lambda: a[0] % a[1], "neg": lambda: -a[0]}[name]()
    return {}


def _fields_of(result: Any, kernel: KernelIR, pids: Sequence[int]) -> dict:
    out: dict = {}
    for pid in pids:
        if pid is None or pid < 0:
            continue
        dec = result.decode(int(pid))
        if dec is None:
            continue
        name, coords = dec
        for k, v in tag_fields(kernel, name, coords).items():
            out.setdefault(k, v)
    return out


def operand_sources(rec: Any, side: str, t: int, v: int) -> list:
    """Provenance ids (primary, secondary) of register ``v`` of thread ``t`` of an
    operand (``"x"``/``"y"``: A/B of an MMA record, x/y of an assert_conform record)."""
    if hasattr(rec, "a_prov"):
        p, p2 = (rec.a_prov, rec.a_prov2) if side == "x" else (rec.b_prov, rec.b_prov2)
    else:
        fr = rec.x if side == "x" else rec.y
        p, p2 = fr.prov, fr.prov2
    out = [p[t, v] if p is not None else None]
    if p2 is not None:
        out.append(p2[t, v])
    return out


def find_records(result: Any, kind: str, loc_range: Any, loops: tuple, block: tuple) -> list:
    trace = result.mma_trace if kind == "mma" else result.conform_trace
    block = tuple(block) + (0,) * (3 - len(block))
    return [r for r in trace if r.op.loc.range == loc_range and tuple(r.loop_indices) == loops
            and tuple(r.block) == block]


def confirm_pair(kernel: KernelIR, result: Any, rec: Any, thread: int, a: dict, b: dict
                 ) -> Replay | None:
    """A hand-derived witness: in record ``rec``, find a register of ``thread`` (first
    operand) whose element's tags include ``a``, paired (same contracted index, same warp
    for an MMA) with a register of the second operand whose tags include ``b``; confirmed
    when the two disagree on a field both carry. ``None`` when no such pair exists."""
    lx = rec.op.operands[0].type.layout
    ly = rec.op.operands[1].type.layout
    tx, ty = lx.coords_table(), ly.coords_table()
    ws = kernel.warp_size
    for v in range(tx.shape[1]):
        xf = _fields_of(result, kernel, operand_sources(rec, "x", thread, v))
        if not all(xf.get(k) == val for k, val in a.items()):
            continue
        kx = tx[thread, v, 1]
        lanes = range((thread // ws) * ws, (thread // ws + 1) * ws) if hasattr(rec, "a_prov") \
            else range(ty.shape[0])
        for t2 in lanes:
            for v2 in range(ty.shape[1]):
                if ty[t2, v2, 0] != kx:
                    continue
                yf = _fields_of(result, kernel, operand_sources(rec, "y", t2, v2))
                if not all(yf.get(k) == val for k, val in b.items()):
                    continue
                common = [f for f in xf if f in yf and xf[f] != yf[f]]
                if common:
                    f = common[0]
                    return Replay(True, f, xf[f], yf[f], xf, yf, f"y at thread {t2}")
    return None


def replay_witness(kernel: KernelIR, result: Any, kind: str, loc_range: Any, witness: dict
                   ) -> Replay:
    """Confirm ``witness`` (an AVE201 witness of ``kind`` "mma" or "assert_conform" at
    ``loc_range``) against ``result``, a provenance run (``ave_core.interp.run(...,
    provenance=True)``) of the same kernel whose grid covers the witness' block and whose
    sizes give the witness' trip counts.

    Raises:
        LookupError: the run has no execution matching the witness (wrong sizes or grid).
    """
    loops = tuple(witness.get("loop_indices", {}).items())
    occ = int(witness.get("occurrence", 0))
    block = tuple(witness.get("block", [0, 0, 0]))
    recs = find_records(result, kind, loc_range, loops, block)
    if len(recs) <= occ:
        raise LookupError(f"no execution of the {kind} at {loops} occurrence {occ} in block "
                          f"{block} ({len(recs)} found)")
    rec = recs[occ]
    ops = witness["operands"]
    x, y = ops["x"], ops["y"]
    xp = operand_sources(rec, "x", x["thread"], x["register"])
    yp = operand_sources(rec, "y", y["thread"], y["register"])
    xf = _fields_of(result, kernel, xp)
    yf = _fields_of(result, kernel, yp)
    f = witness["field"]
    xv, yv = xf.get(f), yf.get(f)
    return Replay(xv is not None and yv is not None and xv != yv, f, xv, yv, xf, yf)


__all__ = ["replay_witness", "confirm_pair", "find_records", "tag_fields", "eval_tag_region",
           "Replay"]
