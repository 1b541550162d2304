"""Number formats of the interpreter: storage bits <-> compute values, with GPU rounding.

Registers hold *compute* values: ``float32`` for every floating dtype (a bf16 register
holds a float32 that is exactly representable in bf16), ``int32`` for integers, ``bool``
for ``i1``. Memory holds *storage* values: the dtype's own bits (``uint16`` for bf16,
``uint8`` for fp8, ``float16`` for f16 ...), little-endian, as on the GPU.

Rounding to a narrower float is round-to-nearest-even (PTX ``cvt.rn``); conversion to fp8
saturates to the largest finite value (PTX ``cvt.rn.satfinite.e4m3x2.f32``; OCP 8-bit
floating point specification, E4M3 max 448, E5M2 max 57344); NaN stays NaN.
"""

from __future__ import annotations

import numpy as np

from ave_core.lang import dtypes as D
from ave_core.lang.dtypes import DType

STORAGE: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16),
    "fp8e4m3": np.dtype(np.uint8), "fp8e5m2": np.dtype(np.uint8), "i32": np.dtype(np.int32),
    "i16": np.dtype(np.int16), "i8": np.dtype(np.int8), "u8": np.dtype(np.uint8),
    "i1": np.dtype(np.uint8),
}


def compute_dtype(dt: DType) -> np.dtype:
    """numpy dtype of register values of ``dt``."""
    if dt.is_float:
        return np.dtype(np.float32)
    if dt == D.i1:
        return np.dtype(np.bool_)
    return np.dtype(np.int32)


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    f = np.asarray(x, dtype=np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    nan = np.isnan(f)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    r = np.where(nan, ((b >> 16) | 0x40).astype(np.uint16), r)
    return r


def _fp8_table(dt: DType) -> np.ndarray:
    codes = np.arange(256, dtype=np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    if dt == D.fp8e4m3:
        e, m, bias = (codes >> 3) & 0xF, codes & 0x7, 7
        val = np.where(e == 0, m / 8.0 * 2.0 ** (1 - bias), (1 + m / 8.0) * 2.0 ** (e - bias))
        val = np.where((e == 15) & (m == 7), np.nan, val)
    else:
        e, m, bias = (codes >> 2) & 0x1F, codes & 0x3, 15
        val = np.where(e == 0, m / 4.0 * 2.0 ** (1 - bias), (1 + m / 4.0) * 2.0 ** (e - bias))
        val = np.where(e == 31, np.where(m == 0, np.inf, np.nan), val)
    # (a NaN keeps its sign: 0xff is fp8e4m3's negative NaN, it comes back as 0xff)
    return np.copysign(val, sign).astype(np.float64)


_FP8_TABLES = {D.fp8e4m3.name: _fp8_table(D.fp8e4m3), D.fp8e5m2.name: _fp8_table(D.fp8e5m2)}
_FP8_MAX = {D.fp8e4m3.name: 448.0, D.fp8e5m2.name: 57344.0}


def _fp8_bits(x: np.ndarray, dt: DType) -> np.ndarray:
    table = _FP8_TABLES[dt.name]
    x = np.asarray(x, dtype=np.float64)
    mx = _FP8_MAX[dt.name]
    pos_codes = np.array([c for c in range(128) if np.isfinite(table[c])], dtype=np.int64)
    pos_vals = table[pos_codes]
    order = np.argsort(pos_vals, kind="stable")
    pos_codes, pos_vals = pos_codes[order], pos_vals[order]
    a = np.clip(np.abs(np.nan_to_num(x, nan=0.0, posinf=mx, neginf=-mx)), 0, mx)
    hi = np.clip(np.searchsorted(pos_vals, a, side="left"), 0, len(pos_vals) - 1)
    lo = np.clip(hi - 1, 0, len(pos_vals) - 1)
    dlo, dhi = a - pos_vals[lo], pos_vals[hi] - a
    pick_hi = (dhi < dlo) | ((dhi == dlo) & ((pos_codes[hi] & 1) == 0))
    code = np.where(pick_hi, pos_codes[hi], pos_codes[lo])
    # the sign is kept for zero too: -0.0 is 0x80 (the OCP 8-bit floating point formats
    # have a signed zero; it was stored as +0)
    code = np.where(np.signbit(x), code | 0x80, code)
    nan_code = 0x7F if dt == D.fp8e4m3 else 0x7E
    nan_code = np.where(np.signbit(x), nan_code | 0x80, nan_code)
    return np.where(np.isnan(x), nan_code, code).astype(np.uint8)


def round_to(dt: DType, x: np.ndarray) -> np.ndarray:
    """Round compute values to what a register of ``dt`` can hold (returns compute dtype)."""
    x = np.asarray(x)
    if dt == D.f32:
        return x.astype(np.float32)
    if dt.is_float:
        return from_storage(dt, to_storage(dt, x))
    if dt == D.i1:
        return x.astype(bool)
    if dt == D.i32:
        if x.dtype.kind == "f":
            x = np.trunc(np.nan_to_num(x))
        return x.astype(np.int64).astype(np.int32)
    st = STORAGE[dt.name]
    if x.dtype.kind == "f":
        x = np.trunc(np.nan_to_num(x))
    return x.astype(np.int64).astype(st).astype(np.int32)


def to_storage(dt: DType, x: np.ndarray) -> np.ndarray:
    """Compute values -> storage bits (round-to-nearest-even for narrower floats)."""
    x = np.asarray(x)
    if dt == D.bf16:
        return _bf16_bits(x.astype(np.float32))
    if dt == D.f16:
        return x.astype(np.float32).astype(np.float16)
    if dt in (D.fp8e4m3, D.fp8e5m2):
        return _fp8_bits(x, dt)
    if dt == D.f32:
        return x.astype(np.float32)
    if dt == D.i1:
        return x.astype(bool).astype(np.uint8)
    return x.astype(np.int64).astype(STORAGE[dt.name])


def from_storage(dt: DType, s: np.ndarray) -> np.ndarray:
    """Storage bits -> compute values."""
    s = np.asarray(s)
    if dt == D.bf16:
        return (s.astype(np.uint32) << 16).view(np.float32)
    if dt in (D.fp8e4m3, D.fp8e5m2):
        return _FP8_TABLES[dt.name][s.astype(np.int64)].astype(np.float32)
    if dt.is_float:
        return s.astype(np.float32)
    if dt == D.i1:
        return s.astype(bool)
    return s.astype(np.int32)
