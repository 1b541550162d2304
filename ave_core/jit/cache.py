"""The on-disk cache of compiled kernels (no MLIR, LLVM or z3 needed to read it).

An entry is a folder ``$AVE_CACHE_DIR/<key>/`` (default ``$XDG_CACHE_HOME/ave`` or
``~/.cache/ave``) holding ``meta.json`` (ABI, threads, shared memory, resources, toolchain
versions, the analysis verdict), ``kernel.cubin`` and ``kernel.ptx``. The key (SHA-256) covers
Ave's version, the canonical IR of the specialization (value names renumbered, source
locations dropped: moving a kernel in its file does not recompile it), the target and the
launch specialization (pointer alignment); toolchain versions are in the metadata only, so a
machine without MLIR finds the entry (DESIGN.md §4).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile

from ave_core.compiler.ir import KernelIR, format_kernel

FORMAT = 1


def ave_version() -> str:
    """Ave's own version (``ave_core.__version__``: the same with or without pip metadata)."""
    from ave_core import __version__
    return __version__


def cache_dir() -> str:
    d = os.environ.get("AVE_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "ave")
    return d


_LOC = re.compile(r"  // [^\n]*")
_VAL = re.compile(r"%[A-Za-z_0-9]+")


def canonical_ir(kernel: KernelIR) -> str:
    """The IR text with source locations removed and SSA names renumbered by first use."""
    text = _LOC.sub("", format_kernel(kernel))
    # the header's constexprs in a fixed order (configs and call sites may order them apart)
    head, _, rest = text.partition("\n")
    head = re.sub(r"constexprs=\{.*\}", "constexprs=" + repr(sorted(kernel.constexprs.items())),
                  head)
    text = head + "\n" + rest
    names: dict[str, str] = {}

    def ren(m: re.Match) -> str:
        return names.setdefault(m.group(0), f"%v{len(names)}")
    return _VAL.sub(ren, text)


def cache_key(kernel: KernelIR, target: str, spec: dict) -> str:
    """SHA-256 hex key of one specialization (see the module docstring)."""
    payload = json.dumps({"format": FORMAT, "ave": ave_version(), "ir": canonical_ir(kernel),
                          "target": target, "spec": spec}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def entry_path(key: str) -> str:
    return os.path.join(cache_dir(), key)


def binary_name(target: str) -> tuple[str, str]:
    """File names of an entry's binary and its text (cubin + PTX, or HSACO + AMDGCN)."""
    return ("kernel.hsaco", "kernel.s") if target.startswith("gfx") else ("kernel.cubin",
                                                                         "kernel.ptx")


def load(key: str) -> tuple[dict, bytes] | None:
    """(metadata, binary) of an entry, or None."""
    d = entry_path(key)
    try:
        with open(os.path.join(d, "meta.json"), encoding="utf-8") as f:
            meta = json.load(f)
        with open(os.path.join(d, binary_name(meta.get("target", "sm_90"))[0]), "rb") as f:
            cubin = f.read()
    except (OSError, ValueError):
        return None
    if meta.get("format") != FORMAT:
        return None
    return meta, cubin


def store(key: str, meta: dict, cubin: bytes, ptx: str) -> str:
    """Write an entry atomically (a rename of a complete folder); returns its path."""
    root = cache_dir()
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=root)
    with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as f:
        json.dump({**meta, "format": FORMAT, "key": key}, f, indent=1, sort_keys=True)
    bname, tname = binary_name(meta.get("target", "sm_90"))
    with open(os.path.join(tmp, bname), "wb") as f:
        f.write(cubin)
    with open(os.path.join(tmp, tname), "w", encoding="utf-8") as f:
        f.write(ptx)
    dst = entry_path(key)
    try:
        os.replace(tmp, dst)
    except OSError:          # another process stored it first
        shutil.rmtree(tmp, ignore_errors=True)
    return dst


def entries() -> list[dict]:
    """Metadata of every entry."""
    root = cache_dir()
    out = []
    if not os.path.isdir(root):
        return out
    for name in sorted(os.listdir(root)):
        if name.startswith("."):
            continue
        got = load(name)
        if got is not None:
            out.append(got[0])
    return out


def clear() -> int:
    """Remove every entry; returns how many."""
    root = cache_dir()
    n = 0
    if os.path.isdir(root):
        for name in os.listdir(root):
            p = os.path.join(root, name)
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
                n += 1
    return n
