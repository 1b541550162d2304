"""A small SIMT evaluator for the lowering's MLIR text (the non-MMA subset: arith, scf, llvm
loads/stores, cp.async, barriers), so tests can compare generated code with the interpreter
without a GPU. Threads run as generators that meet at every barrier; memory is bytes per
buffer and every access is bounds-checked."""
import re, struct
import numpy as np

def wrap(x, bits=32):
    m = (1 << bits) - 1; x &= m
    return x - (1 << bits) if x >> (bits - 1) else x

TY = {"f32": ("<f", 4), "i32": ("<i", 4), "f16": ("<e", 2), "i8": ("<b", 1), "i64": ("<q", 8), "f64": ("<d", 8), "i1": ("<?", 1)}

def parse(text):
    lines = [l.strip() for l in text.splitlines()]
    i0 = next(i for i, l in enumerate(lines) if l.startswith("gpu.func"))
    sig = lines[i0]
    args = re.findall(r"(%\w+): ([^,{)]+)", sig[sig.index("("):])
    body = lines[i0 + 1:]
    def block(i):
        ops = []
        while i < len(body):
            l = body[i]
            if l.startswith("}") or l.startswith("gpu.return"):
                return ops, i
            if l.endswith("{"):
                # region op
                head = l; regs = []
                sub, i = block(i + 1)
                regs.append(sub)
                if body[i].startswith("} else {"):
                    sub, i = block(i + 1); regs.append(sub)
                ops.append((head, regs)); i += 1
                continue
            ops.append((l, None)); i += 1
        return ops, i
    ops, _ = block(0)
    return [a for a, _ in args], ops

class Mem:
    def __init__(self): self.buf = {}
    def alloc(self, name, data: bytes): self.buf[name] = bytearray(data)

def run(text, T, argvals, globals_, smem_bytes=1 << 16):
    """argvals: {argname: value}; pointer args given as (buffername, 0)."""
    names, ops = parse(text)
    smem = bytearray(smem_bytes)
    mem = dict(globals_); mem["smem"] = smem
    def ld(ptr, ty, n=1):
        buf, off = ptr; fmt, sz = TY[ty]
        b = mem[buf]
        assert 0 <= off and off + sz * n <= len(b), ("OOB load", buf, off, len(b))
        vals = [struct.unpack_from(fmt, b, off + k * sz)[0] for k in range(n)]
        return vals
    def st(ptr, ty, vals):
        buf, off = ptr; fmt, sz = TY[ty]
        b = mem[buf]
        assert 0 <= off and off + sz * len(vals) <= len(b), ("OOB store", buf, off, len(b))
        for k, v in enumerate(vals):
            if ty == "i1": v = bool(v)
            struct.pack_into(fmt, b, off + k * sz, v)
    def thread(tid):
        env = dict(argvals)
        def g(n):
            if "#" in n:
                b, k = n.split("#"); return env[b][int(k)]
            return env[n]
        def exec_ops(ops):
            for head, regs in ops:
                r = yield from exec_op(head, regs)
                if r is not None: return r
            return None
        def exec_op(l, regs):
            m = re.match(r"(?:(%\w+(?:, %\w+)*)(?::(\d+))? = )?(.*)$", l); dst, nres, rest = m[1], m[2], m[3]
            multi = dst is not None and "," in dst
            def put(v):
                if multi:
                    for nm, x in zip(dst.split(", "), v): env[nm] = x
                else: env[dst] = v
            if regs is not None:
                if rest.startswith("scf.if"):
                    c = g(re.match(r"scf.if (%\w+)", rest)[1])
                    reg = regs[0] if c else (regs[1] if len(regs) > 1 else [])
                    res = yield from exec_ops(reg)
                    if dst: put(res if (nres or multi) else res[0])
                    return None
                if rest.startswith("scf.for"):
                    mm = re.match(r"scf.for (%\w+) = (%\w+) to (%\w+) step (%\w+)(?: iter_args\((.*?)\) ->)?", rest)
                    iv, lb, ub, stp = mm[1], g(mm[2]), g(mm[3]), g(mm[4])
                    its = re.findall(r"(%\w+) = (%[\w#]+)", mm[5] or "")
                    cur = [g(x) for _, x in its]
                    i = lb
                    while i < ub:
                        env[iv] = i
                        for (a, _), v in zip(its, cur): env[a] = v
                        cur = yield from exec_ops(regs[0])
                        i += stp
                    if dst: put(cur if nres else cur[0])
                    return None
                raise ValueError(l)
            if rest.startswith("scf.yield"):
                vs = re.findall(r"%[\w#]+", rest.split(":")[0]); return [g(v) for v in vs]
            if rest.startswith("gpu.thread_id"): put(tid); return None
            if rest.startswith("gpu.block_id"): put(argvals["__pid"]["xyz".index(rest.split()[1])]); return None
            if rest.startswith("gpu.grid_dim"): put(argvals["__grid"]["xyz".index(rest.split()[1])]); return None
            if rest.startswith("arith.index_cast"): put(g(rest.split()[1])); return None
            if rest.startswith("llvm.mlir.addressof"): put(("smem", 0)); return None
            if rest.startswith("llvm.mlir.undef"): put([0] * int(re.search(r"vector<(\d+)x", rest)[1])); return None
            if rest.startswith("nvvm.barrier"): yield "bar"; return None
            if rest.startswith("nvvm.cp.async.commit") or rest.startswith("nvvm.cp.async.wait"): return None
            mm = re.match(r"arith.constant (\S+)(?: : (\w+))?", rest)
            if mm:
                v = mm[1]
                if v in ("true", "false"): put(v == "true")
                elif mm[2] in ("f32", "f16", "bf16", "f64"):
                    if v.startswith("0x"):
                        bits = int(v, 16)
                        put({"f32": lambda: struct.unpack("<f", struct.pack("<I", bits))[0], "f64": lambda: struct.unpack("<d", struct.pack("<Q", bits))[0], "f16": lambda: float(np.array(bits, np.uint16).view(np.float16))}[mm[2]]())
                    else: put(float(v))
                else: put(int(v))
                return None
            mm = re.match(r"arith\.(\w+) (%[\w#]+), (%[\w#]+)(?:, (%[\w#]+))? : (\S+)", rest)
            if mm and mm[1] == "cmpi":
                pass
            mm = re.match(r"arith\.cmpi (\w+), (%[\w#]+), (%[\w#]+)", rest)
            if mm:
                a, b = g(mm[2]), g(mm[3])
                put({"slt": a < b, "sle": a <= b, "sgt": a > b, "sge": a >= b, "eq": a == b, "ne": a != b,
                     "ult": a % 2**32 < b % 2**32}[mm[1]]); return None
            mm = re.match(r"arith\.cmpf (\w+), (%[\w#]+), (%[\w#]+)", rest)
            if mm:
                a, b = g(mm[2]), g(mm[3])
                put({"olt": a < b, "ole": a <= b, "ogt": a > b, "oge": a >= b, "oeq": a == b, "une": a != b}[mm[1]]); return None
            mm = re.match(r"arith\.select (%[\w#]+), (%[\w#]+), (%[\w#]+)", rest)
            if mm: put(g(mm[2]) if g(mm[1]) else g(mm[3])); return None
            mm = re.match(r"arith\.(extsi|extui|trunci|sitofp|extf|truncf|fptosi) (%[\w#]+) : (\w+) to (\w+)", rest)
            if mm:
                v = g(mm[2])
                if mm[1] == "extui" and mm[3] == "i1": v = int(bool(v))
                elif mm[1] == "sitofp": v = float(v)
                elif mm[1] == "fptosi": v = int(v)
                elif mm[1] == "truncf" and mm[4] == "f16": v = float(np.float16(v))
                elif mm[1] == "truncf" and mm[4] == "f32": v = float(np.float32(v))
                put(v); return None
            mm = re.match(r"arith\.(\w+) (%[\w#]+), (%[\w#]+) : (\w+)", rest)
            if mm:
                op, a, b, ty = mm[1], g(mm[2]), g(mm[3]), mm[4]
                bits = {"i32": 32, "i64": 64, "i1": 1}.get(ty)
                if ty == "i1":
                    r = {"andi": a and b, "ori": a or b, "xori": a != b}[op]; put(bool(r)); return None
                if bits:
                    M = 2 ** bits
                    r = {"addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
                         "shli": lambda: a << b, "shrui": lambda: (a % M) >> b, "shrsi": lambda: a >> b,
                         "andi": lambda: a & b, "ori": lambda: a | b, "xori": lambda: a ^ b,
                         "divui": lambda: (a % M) // (b % M), "remui": lambda: (a % M) % (b % M),
                         "floordivsi": lambda: a // b, "maxsi": lambda: max(a, b), "minsi": lambda: min(a, b),
                         "divsi": lambda: int(a / b), "remsi": lambda: a - int(a / b) * b}[op]()
                    put(wrap(r, bits)); return None
                r = {"addf": a + b, "subf": a - b, "mulf": a * b, "divf": a / b if b else float("inf"),
                     "maximumf": max(a, b), "minimumf": min(a, b), "maxnumf": max(a, b), "minnumf": min(a, b)}[op]
                if ty == "f32": r = float(np.float32(r))
                put(r); return None
            mm = re.match(r"arith\.negf (%[\w#]+)", rest)
            if mm: put(-g(mm[1])); return None
            mm = re.match(r"llvm\.getelementptr (%[\w#]+)\[(%[\w#]+)\] : .*, (\w+)$", rest)
            if mm:
                buf, off = g(mm[1]); sz = TY[mm[3]][1] if mm[3] != "i8" else 1
                put((buf, off + g(mm[2]) * sz)); return None
            mm = re.match(r"llvm\.select (%[\w#]+), (%[\w#]+), (%[\w#]+)", rest)
            if mm: put(g(mm[2]) if g(mm[1]) else g(mm[3])); return None
            mm = re.match(r"llvm\.load (%[\w#]+).* -> (?:vector<(\d+)x(\w+)>|(\w+))", rest)
            if mm:
                p = g(mm[1])
                if mm[2]: put(ld(p, mm[3], int(mm[2])))
                else: put(ld(p, mm[4])[0])
                return None
            mm = re.match(r"llvm\.store (%[\w#]+), (%[\w#]+).* : (?:vector<(\d+)x(\w+)>|(\w+)), ", rest)
            if mm:
                v = g(mm[1]); p = g(mm[2])
                if mm[3]: st(p, mm[4], v)
                else: st(p, mm[5], [v])
                return None
            mm = re.match(r"llvm\.insertelement (%[\w#]+), (%[\w#]+)\[(%[\w#]+) : i32\]", rest)
            if mm:
                vec = list(g(mm[2])); vec[g(mm[3])] = g(mm[1]); put(vec); return None
            mm = re.match(r"llvm\.extractelement (%[\w#]+)\[(%[\w#]+) : i32\]", rest)
            if mm: put(g(mm[1])[g(mm[2])]); return None
            mm = re.match(r"nvvm\.cp\.async\.shared\.global (%[\w#]+), (%[\w#]+), (\d+), cache = \w+(?:, (%[\w#]+))?", rest)
            if mm:
                d, s_, n = g(mm[1]), g(mm[2]), int(mm[3]); valid = g(mm[4]) if mm[4] else n
                data = bytes(mem[s_[0]][s_[1]:s_[1] + valid]) if valid else b""
                if valid: assert s_[1] >= 0 and s_[1] + valid <= len(mem[s_[0]]), "OOB cp.async"
                mem[d[0]][d[1]:d[1] + n] = data + bytes(n - valid)
                return None
            raise ValueError("unsupported: " + l)
        yield from exec_ops(ops)
    ths = [thread(t) for t in range(T)]
    live = list(ths)
    while live:
        nxt = []
        for th in live:
            try:
                next(th); nxt.append(th)
            except StopIteration:
                pass
        assert len(nxt) in (0, len(live)), "divergent barrier"
        live = nxt
    return mem
