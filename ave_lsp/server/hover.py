"""Hover: what a tensor, tile, fragment or scalar variable of a kernel is.

:func:`build_index` runs the front end (only the front end: no analysis) on the editor's
text and keeps what hover needs; :meth:`HoverIndex.hover` answers for a position. Both run
in a worker thread, never on the event loop; the front end is imported there.

The value shown for an identifier is an IR value with that name whose defining op lies in
the hovered kernel (kernel parameters count, defined at their place in the signature):

1. on an assignment target (the name is left of a defining op on its line): that op's
   result;
2. otherwise the last definition that ends before the name (the definition reaching a
   use, in the text's order);
3. otherwise the first definition.

Each specialization of the kernel is looked at; if they disagree (a constexpr changes a
shape), each distinct answer is shown under the specializations it holds for.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

from ave_core.diagnostics import Position, Range, parse_source, utf16_len, utf16_to_index

_IDENT = re.compile(r"[^\W\d]\w*")

#: Ops whose result views the elements of their first operand at other coordinates:
#: the tag of a tensor's elements follows through them (global memory only).
_VIEW_OPS = frozenset({"ave.global_tile", "ave.subtile", "ave.view", "ave.transpose",
                       "ave.gather", "ave.scatter"})


@dataclass
class _Cand:
    start: Position
    end: Position
    value: Any
    type: Any
    op: Any = None          # defining op (None for a kernel parameter)


@dataclass
class Facts:
    """What is known of one value: hover's rows (markdown) and the parts an inlay hint
    shows (:meth:`label`)."""

    kind: str
    rows: list[tuple[str, str]] = field(default_factory=list)
    dtype: str | None = None
    shape: str | None = None           # "(3, 128, 32)"
    memory: str | None = None          # "shared", "registers", "global"
    layout: str | None = None          # the layout's repr: "Sw<2,3,3> o 0 o (..):(..)"
    short: str | None = None           # what stands in for the layout when there is none

    def label(self) -> str | None:
        """The inlay hint of a tile, fragment or tensor, e.g. ``bf16 (3, 128, 32) shared ·
        Sw<2,3,3> o 0 o (3,128,32):(4096,32,1)`` (dtype, shape, memory space, then the
        layout: the swizzle composed with shape:stride, or a fragment's thread-value
        layout); None for anything else (scalars)."""
        if self.kind not in ("tensor", "fragment") and not self.kind.endswith(" tile"):
            return None
        if self.kind == "tensor":
            return f"{self.dtype} {self.short}, {self.memory}"   # bf16 tensor rank 2, global
        out = " ".join(p for p in (self.dtype, self.shape, self.memory) if p)
        if self.layout is not None:
            out += f" · {self.layout}"
        elif self.short:
            out += f" · {self.short}"
        return out


@dataclass
class _Assign:
    """``name = <value>`` in a kernel: where the hint goes and the value's extent."""

    name: str
    end: Position           # just after the target name (UTF-16)
    value: Range            # the assigned expression
    kernel: tuple[str, int]


#: Longest inlay-hint label (characters); the tooltip has the whole hover.
MAX_LABEL = 120
#: Most distinct answers (and copies per answer) a hover lists for a definition repeated
#: by a helper called several times or a static_range loop.
MAX_COPIES_SHOWN = 8


@dataclass
class HoverIndex:
    """What hover needs of one version of a document."""

    text: str
    path: str
    lines: list[str]
    kernels: dict[tuple[str, int], list[Any]] = field(default_factory=dict)  # (name, line)
    spans: list[tuple[int, int, str]] = field(default_factory=list)  # kernel def..end lines
    names: dict[int, list[tuple[int, int]]] | None = None  # line -> NAME token spans
    assigns: list[_Assign] = field(default_factory=list)    # name = value, in kernels
    #: (first, last) lines of the functions defined inside kernels (helpers): the names
    #: bound in one are seen only inside it
    inner_defs: list[tuple[int, int]] = field(default_factory=list)
    #: per specialization (id of its KernelIR, kept alive by ``kernels``): name -> bindings
    _by_name: dict = field(default_factory=dict, repr=False)
    #: (specialization, name, kernel lines) -> the ops' candidates (:meth:`_op_cands`)
    _cands_memo: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ inlay hints

    def inlay_hints(self, first: int, last: int) -> list[tuple[Position, str, str]]:
        """``(position, label, tooltip markdown)`` of the assignments of tiles, fragments
        and tensors on lines ``first..last`` (0-based, inclusive): the layout and dtype
        of the value assigned, from the same facts as hover (:meth:`_facts`), placed
        just after the target name. The label is the first specialization's
        (``configs[0]`` or the defaults); when the specializations (or the copies of an
        unrolled loop or an inlined helper) disagree, `` (+N more)`` follows and the
        tooltip (the hover) lists each."""
        out = []
        for a in self.assigns:
            if not first <= a.end.line <= last:
                continue
            labels: list[str] = []
            for k in self.kernels.get(a.kernel, []):
                for c in self._assigned(k, a):
                    lab = self._facts(c).label()
                    if lab is not None and lab not in labels:
                        labels.append(lab)
            if not labels:
                continue
            label = labels[0]
            if len(label) > MAX_LABEL:
                label = label[:MAX_LABEL - 1] + "…"
            if len(labels) > 1:
                label += f" (+{len(labels) - 1} more)"
            found = self.hover(a.end.line, max(0, a.end.character - 1))
            out.append((a.end, label, found[0] if found else ""))
        out.sort(key=lambda h: h[0])
        return out

    def _bound(self, k: Any, word: str, span: tuple) -> list[_Cand]:
        """The values ``word`` was bound to in this file's kernel ``k`` (KernelIR.bindings:
        a helper's result, an alias, a loop variable), in program order; each candidate's
        range is the name's."""
        by_name = self._by_name.get(id(k))
        if by_name is None:
            # (indexed once per specialization: every hint looked through all of them)
            from ave_core.compiler.ir import Op

            by_name = self._by_name[id(k)] = {}
            for f, r, name, v in getattr(k, "bindings", ()):
                if f == self.path:
                    by_name.setdefault(name, []).append(
                        _Cand(r.start, r.end, v, v.type,
                              v.owner if isinstance(v.owner, Op) else None))
        return [c for c in by_name.get(word, ()) if span[0] <= c.start.line <= span[1]]

    def _def_of(self, line: int) -> tuple[int, int] | None:
        """The innermost function defined inside a kernel that holds ``line``."""
        best = None
        for a, b in self.inner_defs:
            if a <= line <= b and (best is None or a >= best[0]):
                best = (a, b)
        return best

    def _last_binding(self, bound: list[_Cand], wrange: Range) -> _Cand | None:
        """The binding a use at ``wrange`` sees: the last in the text on an earlier line
        (a binding takes effect after its statement), in the use's own helper or outside
        every helper (a nested helper's parameter is not the kernel's name; a review
        helper); among the executions of one statement, the last."""
        here = self._def_of(wrange.start.line)
        best = None
        for c in bound:
            if c.end.line >= wrange.start.line:
                continue
            d = self._def_of(c.start.line)
            if d is not None and d != here:
                continue
            if best is None or c.start >= best.start:
                best = c
        return best

    def _assigned(self, k: Any, a: _Assign) -> list[_Cand]:
        """The values named ``a.name`` defined by ops inside the assigned expression:
        the last such op of each copy of the statement (an unrolled loop, an inlined
        helper repeat it), in program order. Where no op there names its result so (a
        helper's result, an alias ``c = a``), the values the name was bound to there."""
        out = self._assigned_ops(k, a)
        if out:
            return out
        seen: list[Any] = []
        for c in self._bound(k, a.name, (a.end.line, a.end.line)):
            if c.end == a.end and not any(c.value is x for x in seen):
                seen.append(c.value)
                out.append(c)
        return out

    def _assigned_ops(self, k: Any, a: _Assign) -> list[_Cand]:
        out: list[_Cand] = []
        last_start: Position | None = None
        for op in k.walk():
            if op.loc.file != self.path:
                continue
            r = op.loc.range
            if not (a.value.start <= r.start and r.end <= a.value.end):
                continue
            for v in op.results:
                if v.name == a.name:
                    c = _Cand(r.start, r.end, v, v.type, op)
                    if out and last_start is not None and r.start > last_start:
                        out[-1] = c          # a later op of the same copy
                    else:
                        out.append(c)
                    last_start = r.start
        return out

    # ------------------------------------------------------------------ lookup

    def word_at(self, line: int, character: int) -> tuple[str, Range] | None:
        """The identifier under a position (UTF-16 column), if it is a NAME token."""
        if not 0 <= line < len(self.lines):
            return None
        src = self.lines[line]
        col = utf16_to_index(src, character)
        for m in _IDENT.finditer(src):
            if m.start() <= col < m.end():
                if self.names is not None and (m.start(), m.end()) not in \
                        self.names.get(line, []):
                    return None             # a word inside a comment or a string
                rng = Range(Position(line, utf16_len(src[:m.start()])),
                            Position(line, utf16_len(src[:m.end()])))
                return m.group(0), rng
        return None

    def hover(self, line: int, character: int) -> tuple[str, Range] | None:
        """Markdown and the word's range for a position, or None."""
        found = self.word_at(line, character)
        if found is None:
            return None
        word, wrange = found
        span = next(((a, b, n) for a, b, n in self.spans if a <= line <= b), None)
        if span is None:
            return None
        specs = self.kernels.get((span[2], span[0]), [])
        answers: list[tuple[str, list[Any]]] = []
        for k in specs:
            copies = self._pick(k, word, wrange, span)
            if not copies:
                continue
            body = self._describe_copies(word, copies)
            for text, ks in answers:
                if text == body:
                    ks.append(k)
                    break
            else:
                answers.append((body, [k]))
        if not answers:
            return None
        if len(answers) == 1:
            return answers[0][0], wrange
        parts = []
        for body, ks in answers:
            parts.append(f"*{', '.join(_spec_name(k) for k in ks)}*\n\n{body}")
        return "\n\n---\n\n".join(parts), wrange

    def _pick(self, k: Any, word: str, wrange: Range, span: tuple) -> list[_Cand]:
        """The definition the word at ``wrange`` shows (:meth:`_pick_one`), in every copy
        the front end made of its statement: a helper called several times, a
        ``static_range`` loop (one per copy, in program order; [] for none)."""
        c = self._pick_one(k, word, wrange, span)
        if c is None:
            return []
        target = next((a for a in self.assigns if a.end == wrange.end and a.name == word
                       and a.kernel == (span[2], span[0])), None)
        if target is not None:
            assigned = self._assigned(k, target)
            if any(x is c for x in assigned):
                return assigned
        bound = self._bound(k, word, span)
        if c.op is None or any(b is c for b in bound):
            # a bound name (a helper's parameter, its result, a loop variable): the
            # bindings of the same name at the same place, one per copy
            out: list[_Cand] = []
            for b in bound:
                if b.start == c.start and b.end == c.end and \
                        not any(b.value is x.value for x in out):
                    out.append(b)
            return out if any(x.value is c.value for x in out) else [c]
        out = [_Cand(c.start, c.end, x.value, x.type, x.op)
               for x in self._op_cands(k, word, span)
               if x.op.name == c.op.name and x.op.loc.range == c.op.loc.range]
        return out if any(x.value is c.value for x in out) else [c]

    def _op_cands(self, k: Any, word: str, span: tuple) -> list[_Cand]:
        """The results named ``word`` of the ops of this file in the kernel's lines, in
        program order (each a candidate definition, at its op's range)."""
        key = (id(k), word, span)
        hit = self._cands_memo.get(key)
        if hit is not None:
            return hit
        first, last = span[0], span[1]
        out: list[_Cand] = []
        for op in k.walk():
            if op.loc.file != self.path:
                continue
            r = op.loc.range
            if not first <= r.start.line <= last:
                continue
            for v in op.results:
                if v.name == word:
                    out.append(_Cand(r.start, r.end, v, v.type, op))
        if len(self._cands_memo) > 256:
            self._cands_memo.clear()
        self._cands_memo[key] = out       # (a hover walked the kernel twice)
        return out

    def _describe_copies(self, word: str, copies: list[_Cand]) -> str:
        """Hover markdown of a definition's copies: one description when they agree; else
        each distinct one under the copies it holds for (``copy 2 of 2, the call at line
        11``) -- the first alone was shown, while the inlay hint said ``(+1 more)``."""
        groups: list[tuple[str, list[int]]] = []
        for i, c in enumerate(copies):
            body = self._describe(word, c)
            for text, idx in groups:
                if text == body:
                    idx.append(i)
                    break
            else:
                groups.append((body, [i]))
        if len(groups) == 1:
            return groups[0][0]
        n = len(copies)
        # (where the copies' values come from different lines -- a helper's parameter
        # bound to each call's argument -- each copy names its line)
        lines = {c.op.loc.range.start.line for c in copies
                 if c.op is not None and c.op.loc.file == self.path}
        # the level of calls where the copies part (outermost first: a helper called
        # twice through another helper -- the inner call is one line for both; a review
        # helper)
        chains = [tuple(getattr(getattr(c.op, "loc", None), "inlined_from", ()) or ())
                  for c in copies]
        parts_at = [i for i in range(max(map(len, chains), default=0))
                    if len({ch[i] if i < len(ch) else None for ch in chains}) > 1]
        level = (parts_at[0], parts_at[-1]) if parts_at else None
        head = (f"**{word}**: {n} copies of this definition (a helper called {n} times, or "
                f"a `static_range` loop), {len(groups)} different:")
        parts = [head]
        for body, idx in groups[:MAX_COPIES_SHOWN]:
            names = ", ".join(self._copy_name(copies[i], i, n, len(lines) > 1, level)
                              for i in idx[:MAX_COPIES_SHOWN])
            if len(idx) > MAX_COPIES_SHOWN:
                names += f" and {len(idx) - MAX_COPIES_SHOWN} more"
            parts.append(f"*{names}*\n\n{body}")
        if len(groups) > MAX_COPIES_SHOWN:
            # (a static_range of 2048 made a hover of 346,000 characters, sent again as
            # every inlay hint's tooltip; a review helper)
            rest = sum(len(idx) for _, idx in groups[MAX_COPIES_SHOWN:])
            parts.append(f"*… and {len(groups) - MAX_COPIES_SHOWN} more different answers "
                         f"({rest} copies)*")
        return "\n\n---\n\n".join(parts)

    def _copy_name(self, c: _Cand, i: int, n: int, by_line: bool,
                   level: tuple[int, int] | None = None) -> str:
        """``copy i+1 of n`` and, for an op inlined from calls, ``, the call at line L`` --
        the calls of its inlining chain at the levels ``level`` (first, last) where the
        copies part, those in this file (``the calls at lines 15 → 11``); else with
        ``by_line``, ``, the value of line L`` (the op that made the value)."""
        out = f"copy {i + 1} of {n}"
        loc = getattr(c.op, "loc", None)
        chain = getattr(loc, "inlined_from", ()) or ()
        # the calls from there down (a helper called twice by a helper called twice: the
        # outer calls alone did not say which inner call gave the value; a review helper)
        calls = [x for x in chain[level[0]:level[1] + 1] if x.file == self.path] \
            if level is not None else []
        if len(calls) == 1:
            out += f", the call at line {calls[0].range.start.line + 1}"
        elif calls:
            out += ", the calls at lines " + " → ".join(
                str(x.range.start.line + 1) for x in calls)
        elif by_line and loc is not None and loc.file == self.path:
            out += f", the value of line {loc.range.start.line + 1}"
        return out

    def _pick_one(self, k: Any, word: str, wrange: Range, span: tuple) -> _Cand | None:
        cands: list[_Cand] = []
        for p in k.params:
            if p.name == word:
                cands.append(_Cand(p.range.start, p.range.end, p.value, p.type))
        cands += self._op_cands(k, word, span)
        bound = self._bound(k, word, span)
        exact = [c for c in bound if c.start == wrange.start and c.end == wrange.end]
        if not cands:
            return exact[0] if exact else self._last_binding(bound, wrange)
        cands.sort(key=lambda c: c.start)          # stable: program order among equals
        target = next((a for a in self.assigns if a.end == wrange.end and a.name == word
                       and a.kernel == (span[2], span[0])), None)
        if target is not None:                     # the target of an assignment
            assigned = self._assigned(k, target)
            if assigned:
                return assigned[0]
        if exact:                                  # a loop variable, a bound name
            return exact[0]
        here = [c for c in cands if c.op is not None and c.start.line == wrange.start.line
                and c.start >= wrange.end]
        if here:
            return here[0]
        before = [c for c in cands if c.end <= wrange.start]
        # the name's last binding before the word: a helper's result or an alias bound
        # after the last op that named its result so (those showed nothing, or an older
        # value; a review helper) -- unless that op holds the binding: the result of a
        # branch or loop on a runtime value, merged from its arms (the arm's value was
        # shown)
        last = self._last_binding(bound, wrange)
        if last is not None and (not before or (last.start.line > before[-1].start.line and
                                                not (before[-1].start <= last.start and
                                                     last.end <= before[-1].end))):
            return last
        if before:
            return before[-1]
        # (no definition of the name before it here: a value a helper of another file
        # returned -- its ops carry the helper's names -- so a later definition of the same
        # name is not this one: it was shown instead, 64x64 for a 64x32 tile; a review
        # helper. A kernel parameter is defined before everything.)
        return cands[0] if cands[0].op is None else None

    def _describe(self, word: str, c: _Cand) -> str:
        """Hover markdown of a candidate (from :meth:`_facts`)."""
        f = self._facts(c)
        t = c.type
        head = f"**{word}**: {f.kind} — `{t}`" if len(str(t)) <= 80 else f"**{word}**: {f.kind}"
        return head + "\n\n" + "\n".join(f"- {a}: {b}" for a, b in f.rows)

    def _facts(self, c: _Cand) -> "Facts":
        """What hover and inlay hints show of a candidate: one computation for both."""
        from ave_core.compiler.ir import FragmentType, ScalarType, TensorType, TileType

        t = c.type
        f = Facts(kind=type(t).__name__)
        rows = f.rows
        if isinstance(t, TensorType):
            f.kind = "tensor"
            f.dtype, f.memory = str(t.dtype), "global"
            rows.append(("dtype", f"`{t.dtype}`"))
            rows.append(("shape", f"rank {t.rank}, sizes known at run time"))
            rows.append(("memory", "global"))
            f.short = f"tensor rank {t.rank}"
            if t.gathered_dim is not None:
                rows.append(("gathered", f"dimension {t.gathered_dim} (rows picked by an "
                                         f"index tensor)"))
        elif isinstance(t, TileType):
            f.kind = f"{t.space} tile"
            f.dtype, f.shape = str(t.dtype), _shape(t.shape)
            f.memory = t.space + (f" ({t.reg_class})" if t.reg_class else "")
            f.layout = repr(t.layout) if t.layout is not None else None
            sub = _sub_layout(c.value, t) if t.space != "global" else None
            if sub is not None:
                f.layout = sub
            rows.append(("dtype", f"`{t.dtype}`"))
            rows.append(("shape", f"`{f.shape}`"))
            rows.append(("memory", f.memory))
            rows.append(("layout", f"`{f.layout}`" if f.layout is not None else
                         "row-major strides of the tensor" if t.space == "global" else "—"))
        elif isinstance(t, FragmentType):
            f.kind = "fragment"
            f.dtype, f.shape = str(t.dtype), _shape(t.shape)
            f.memory = "registers" + (f" ({t.reg_class})" if t.reg_class else "")
            f.layout = repr(t.layout) if t.layout is not None else None
            rows.append(("dtype", f"`{t.dtype}`"))
            rows.append(("shape", f"`{f.shape}`"))
            rows.append(("memory", f.memory))
            rows.append(("layout", f"`{f.layout}`" if f.layout is not None else
                         "every thread holds every element"))
            if f.layout is None:
                f.short = "replicated"
        elif isinstance(t, ScalarType):
            f.kind = "scalar"
            f.dtype = str(t.dtype)
            rows.append(("dtype", f"`{t.dtype}`"))
        else:
            rows.append(("type", f"`{t}`"))
        tag = self._tag_of(c)
        if tag is not None:
            rows.append(("tag", tag))
        return f

    def _tag_of(self, c: _Cand) -> str | None:
        from ave_core.compiler.ir import Op, TensorType, TileType

        v, op = c.value, c.op
        for _ in range(64):
            t = v.type
            if not (isinstance(t, TensorType) or (isinstance(t, TileType)
                                                  and t.space == "global")):
                return None
            if op is None:
                op = v.owner if isinstance(v.owner, Op) else None
            if op is None:
                return None
            if op.name == "ave.tag":
                fields = ", ".join(f"`{f}`" for f in op.attrs.get("fields", ()))
                src = self._source(op.loc.range) if op.loc.file == self.path else ""
                where = f"line {op.loc.range.start.line + 1}"
                if op.loc.file != self.path:
                    where = f"{op.loc.file}:{op.loc.range.start.line + 1}"
                out = f"fields {fields}" if fields else "tagged"
                if src:
                    out += f" — `{src}`"
                return out + f" ({where})"
            if op.name in _VIEW_OPS and op.operands:
                v, op = op.operands[0], None
                continue
            return None
        return None

    def _source(self, r: Range, limit: int = 160) -> str:
        if r.start.line == r.end.line:
            src = self.lines[r.start.line] if r.start.line < len(self.lines) else ""
            s = src[utf16_to_index(src, r.start.character):
                    utf16_to_index(src, r.end.character)]
        else:
            parts = []
            for ln in range(r.start.line, min(r.end.line, len(self.lines) - 1) + 1):
                src = self.lines[ln]
                a = utf16_to_index(src, r.start.character) if ln == r.start.line else 0
                b = utf16_to_index(src, r.end.character) if ln == r.end.line else len(src)
                parts.append(src[a:b].strip())
            s = " ".join(parts)
        s = " ".join(s.split()).replace("`", "'")
        return s if len(s) <= limit else s[:limit - 1] + "…"


def _shape(shape: tuple) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _sub_layout(value: Any, t: Any) -> str | None:
    """The layout of a slice or transpose of a shared tile, as its own: the allocation's
    swizzle composed with the element offset of the slice and the kept dimensions'
    shape:stride (``sA[1]`` of ``Sw<2,3,3> o 0 o (3,128,32):(4096,32,1)`` is ``Sw<2,3,3> o
    4096 o (128,32):(32,1)``; its type carries the allocation's layout, which hover
    showed as the slice's; a review helper). An offset chosen at run time (a stage
    index) reads ``o ? o``. None when the value is no slice of an affine layout."""
    from ave_core.compiler.frontend import _tile_geometry
    from ave_core.compiler.ir import Op
    from ave_core.lang.layout import ComposedLayout, Layout

    owner = getattr(value, "owner", None)
    if not (isinstance(owner, Op) and owner.name in ("ave.subtile", "ave.transpose")):
        return None
    try:
        geo = _tile_geometry(value)
    except Exception:  # noqa: BLE001 - hover shows the type's layout then
        return None
    if geo is None:
        return None
    base, _, origins, dims = geo
    swz, off0, inner = (base.outer, base.offset, base.inner) \
        if isinstance(base, ComposedLayout) else (None, 0, base)
    if not isinstance(inner, Layout) or not all(isinstance(x, int) for x in inner.shape) \
            or not all(isinstance(x, int) for x in inner.stride) or len(dims) != len(t.shape):
        return None
    stride = inner.stride
    if all(len(o) == 1 for o in origins):
        off: Any = off0 + sum(o[0] * stride[d] for d, o in enumerate(origins))
    else:
        off = "?"
    lay = repr(Layout(tuple(t.shape), tuple(stride[d] for d in dims)))
    return f"{swz!r} o {off} o {lay}" if swz is not None else \
        (lay if off == 0 else f"{off} + {lay}")


def _spec_name(k: Any) -> str:
    cfg = "defaults" if k.config_index is None else f"configs[{k.config_index}]"
    vals = ", ".join(f"{n}={v!r}" for n, v in (k.constexprs or {}).items())
    return f"{cfg} ({vals})" if vals else cfg


def _name_tokens(text: str, nlines: int) -> dict[int, list[tuple[int, int]]] | None:
    lines = re.split(r"\r\n|\r|\n", text)
    norm = "".join(line + "\n" for line in lines)
    out: dict[int, list[tuple[int, int]]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(norm).readline):
            if tok.type == tokenize.NAME:
                out.setdefault(tok.start[0] - 1, []).append((tok.start[1], tok.end[1]))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return out


def build_index(text: str, path: str, workspace: str | None) -> HoverIndex:
    """Run the front end on ``text`` and index what hover needs (worker thread)."""
    from ave_core.compiler.frontend import compile_source

    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split(r"\r\n|\r|\n", text)
    index = HoverIndex(text, path, lines)
    if "ave_core" not in text:
        return index
    result = compile_source(text, path, workspace=workspace)
    if not result.uses_ave or not result.kernels:
        return index
    for k in result.kernels:
        index.kernels.setdefault((str(k.name), int(k.line)), []).append(k)
    for specs in index.kernels.values():
        specs.sort(key=lambda k: -1 if k.config_index is None else k.config_index)
    try:
        tree = parse_source(text.replace("\r\n", "\n").replace("\r", "\n"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return index
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                (node.name, node.lineno - 1) in index.kernels:
            index.spans.append((node.lineno - 1, (node.end_lineno or node.lineno) - 1,
                                node.name))
    index.names = _name_tokens(text, len(lines))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                (node.name, node.lineno - 1) in index.kernels:
            for sub in ast.walk(node):
                if sub is not node and isinstance(sub, (ast.FunctionDef, ast.Lambda)):
                    index.inner_defs.append((sub.lineno - 1,
                                             (sub.end_lineno or sub.lineno) - 1))
    from ave_core.diagnostics import SourceText

    source = SourceText(text, path)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                (node.name, node.lineno - 1) in index.kernels:
            key = (node.name, node.lineno - 1)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
                    target, value = sub.targets[0], sub.value
                elif isinstance(sub, ast.AnnAssign) and sub.value is not None:
                    target, value = sub.target, sub.value
                else:
                    continue
                if not isinstance(target, ast.Name):
                    continue
                index.assigns.append(_Assign(
                    target.id, source.position(target.end_lineno, target.end_col_offset),
                    source.range_of(value), key))
    return index
