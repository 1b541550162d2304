"""Element types of Ave tiles and tensors.

Each dtype is a singleton :class:`DType` with its width in bits and bytes. The fp8 formats
follow the OCP 8-bit floating point specification (E4M3 "fn" variant: no infinities,
max 448; E5M2: IEEE-like, max 57344), as used by PTX ``.e4m3``/``.e5m2`` and CDNA3
``fp8``/``bf8``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    """An element type.

    Attributes:
        name: the DSL name (``"bf16"``).
        bits: width in bits.
        kind: ``"float"``, ``"int"``, ``"uint"`` or ``"bool"``.
    """

    name: str
    bits: int
    kind: str

    @property
    def bytes(self) -> int:
        """Width in bytes (1 for ``i1``, stored as one byte)."""
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    @property
    def int_range(self) -> tuple[int, int] | None:
        """``(lo, hi)``, the integers an ``int``/``uint`` dtype holds (``i8``: -128..127,
        ``u8``: 0..255); None for floats and ``i1`` (a predicate: any number, nonzero is
        true)."""
        if self.kind == "uint":
            return 0, (1 << self.bits) - 1
        if self.kind == "int":
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return None

    def __repr__(self) -> str:
        return f"ave.{self.name}"

    def __str__(self) -> str:
        return self.name


f32 = DType("f32", 32, "float")
f16 = DType("f16", 16, "float")
bf16 = DType("bf16", 16, "float")
fp8e4m3 = DType("fp8e4m3", 8, "float")
fp8e5m2 = DType("fp8e5m2", 8, "float")
i32 = DType("i32", 32, "int")
i16 = DType("i16", 16, "int")
i8 = DType("i8", 8, "int")
u8 = DType("u8", 8, "uint")
i1 = DType("i1", 1, "bool")

ALL_DTYPES: dict[str, DType] = {
    d.name: d for d in (f32, f16, bf16, fp8e4m3, fp8e5m2, i32, i16, i8, u8, i1)
}


def dtype(name: str | DType) -> DType:
    """Return the dtype called ``name`` (``"bf16"``), or ``name`` itself if it is a DType.

    Raises:
        ValueError: unknown name.
    """
    if isinstance(name, DType):
        return name
    try:
        return ALL_DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(ALL_DTYPES)}") from None
