"""8-bit lookups and moves on the device, for dmlvk.onnx (not DirectML operators; dmlvk's API does not
offer them): each output element is a 256-byte table's entry for an input byte
(dmlvk/shaders/lookup.comp). With the identity table it is a move through strides (Tile, nearest
Resize by whole factors, a Concat input into its slice of the output); with a table the host computed
it is any per-tensor map of 8-bit values, exactly as onnxruntime's CPU provider computes it (its
QLinearConcat requantization and QLinearLeakyRelu tables, a DequantizeLinear -> PRelu ->
QuantizeLinear sandwich with a table per channel): onnxruntime_quantize below.

A LookupDesc has one part per input; the parts write one output buffer, one dispatch each. Outputs are
8-bit, or float16 through tables of 256 float16 entries (a DequantizeLinear's values, say)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..enums import DataType
from ..errors import UnsupportedError
from ..runtime.device import Device
from ..tensor import TensorDesc, packed_strides
from .base import CompiledOperator
from .variants import PushBlock, Table, Variant

LOCAL = 128
MAX_DIMS = 8
GEOMETRY_WORDS = 28
IDENTITY = np.arange(256, dtype=np.uint8)

TABLE = Table("Lookup (ONNX)", [
    Variant("lookup.words", "lookup", ("WORDS", "OUT16"),
            "a part whose output elements are contiguous: an invocation writes one output word (4 elements, "
            "or 2 float16 ones, each its input byte's table entry, read through any strides)"),
    Variant("lookup.elements", "lookup", ("WORDS", "OUT16"),
            "any output layout: an invocation per element, written with atomicAnd/atomicOr into its word"),
], push={"lookup": PushBlock([("count", 1), ("geo", 1)])})


def onnxruntime_quantize(v: np.ndarray, scale, zero_point, dtype) -> np.ndarray:
    """onnxruntime's MlasQuantizeLinear of float32 values: v / scale (a true float32 division), clamped
    to the type's range less the zero point, rounded half to even, plus the zero point."""
    info = np.iinfo(dtype)
    zp = int(zero_point)
    with np.errstate(all="ignore"):
        q = (np.asarray(v, np.float32) / np.float32(scale)).astype(np.float32)
        q = np.clip(q, np.float32(info.min - zp), np.float32(info.max - zp))
        q = np.rint(np.nan_to_num(q, nan=np.float32(info.min - zp)))
    return (q.astype(np.int64) + zp).astype(dtype)


def byte_values(dtype) -> np.ndarray:
    """The 256 values of an 8-bit type in byte order (0..255 as that type)."""
    return IDENTITY.view(np.dtype(dtype))


OUT_TYPES = (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.float16))


def dequantized_bytes(dtype, zero_point, scale) -> np.ndarray:
    """The 256 values of an 8-bit type (byte order) dequantized as onnxruntime does: float32(x - zero
    point) * scale, in float32."""
    return ((byte_values(dtype).astype(np.int64) - int(zero_point)).astype(np.float32)
            * np.float32(scale)).astype(np.float32)


def as_table(values: np.ndarray) -> np.ndarray:
    """Tables of 256 entries (8-bit or float16) as their bytes, a row of 256 x entry size each."""
    values = np.asarray(values)
    if values.shape[-1] != 256 or values.dtype not in OUT_TYPES:
        raise ValueError(f"a lookup table is 256 8-bit or float16 entries, got {values.dtype} {values.shape}")
    return np.ascontiguousarray(values).reshape(-1, 256).view(np.uint8)


@dataclass(frozen=True, eq=False)
class Part:
    """One input's work: its logical sizes (at most 8 dimensions), its element strides (0: broadcast),
    the output's element strides and first element for it, its tables (T x 256 entries of the output's type) and the axis
    whose coordinate chooses the table (None: one table)."""
    sizes: tuple
    in_strides: tuple
    out_strides: tuple
    out_offset: int = 0
    tables: np.ndarray = field(default_factory=lambda: IDENTITY)
    table_axis: Optional[int] = None

    @property
    def count(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64))

    def contiguous(self) -> bool:
        return tuple(self.out_strides) == tuple(packed_strides(self.sizes))


@dataclass(frozen=True, eq=False)
class LookupDesc:
    """parts: one per input; in_dtypes / out_dtype: their 8-bit types; out_sizes: the output tensor's
    (its bytes: TotalTensorSizeInBytes of a packed tensor of them)."""
    parts: tuple
    in_dtypes: tuple
    out_dtype: type
    out_sizes: tuple

    def __post_init__(self):
        for dt in tuple(self.in_dtypes):
            if np.dtype(dt) not in (np.uint8, np.int8):
                raise TypeError(f"lookups read 8-bit elements, got {np.dtype(dt)}")
        if np.dtype(self.out_dtype) not in OUT_TYPES:
            raise TypeError(f"lookups write 8-bit or float16 elements, got {np.dtype(self.out_dtype)}")
        for part in self.parts:
            if np.asarray(part.tables).dtype.itemsize != np.dtype(self.out_dtype).itemsize:
                raise TypeError(f"a {np.dtype(self.out_dtype)} lookup needs tables of {np.dtype(self.out_dtype)} "
                                f"entries, got {np.asarray(part.tables).dtype}")
        for part in self.parts:
            if not 1 <= len(part.sizes) <= MAX_DIMS or part.count == 0:
                raise UnsupportedError(f"a lookup of sizes {part.sizes}: 1 to {MAX_DIMS} dimensions, no size 0")

    def params(self) -> np.ndarray:
        """The parameter Buffer's words: every part's tables, then every part's geometry."""
        tables = [as_table(p.tables) for p in self.parts]
        first, words = [], 0
        for t in tables:
            first.append(words)
            words += t.size // 4
        out = [np.concatenate(tables).view(np.uint32).reshape(-1)]
        for part, start in zip(self.parts, first):
            geo = np.zeros(GEOMETRY_WORDS, np.uint32)
            rank = len(part.sizes)
            geo[0] = rank
            geo[1:1 + rank], geo[9:9 + rank], geo[17:17 + rank] = part.sizes, part.in_strides, part.out_strides
            geo[25] = part.out_offset
            geo[26] = 0xFFFFFFFF if part.table_axis is None else part.table_axis % rank
            geo[27] = start
            out.append(geo)
        return np.concatenate(out)

    def kernels(self, words_ok: bool = True) -> list:
        table_words = sum(as_table(p.tables).size // 4 for p in self.parts)
        per_word = 4 // np.dtype(self.out_dtype).itemsize
        out = []
        for k, part in enumerate(self.parts):
            words = words_ok and part.contiguous()
            name = "lookup.words" if words else "lookup.elements"
            items = (part.out_offset % per_word + part.count + per_word - 1) // per_word if words else part.count
            out.append(TABLE[name].kernel(spec=dict(WORDS=int(words), OUT16=int(per_word == 2)),
                                          push=dict(count=part.count, geo=table_words + k * GEOMETRY_WORDS),
                                          count=items, slots=(k, len(self.parts) + 1, len(self.parts)),
                                          local_size=LOCAL))
        return out

    def compile(self, device: Device, choice=None) -> "LookupOperator":
        if choice is not None and choice.strict and choice.force not in (None, "lookup.elements"):
            raise ValueError(f"lookups have the variants lookup.words and lookup.elements, not {choice.force!r}")
        return LookupOperator(device, self, words_ok=choice is None or choice.force != "lookup.elements")


class LookupOperator(CompiledOperator):
    """Bindings: the parts' inputs, then the output; LookupDesc.params() a constant parameter block."""
    operator_name = "Lookup"

    def __init__(self, device: Device, desc: LookupDesc, words_ok: bool = True):
        def whole(sizes, strides, dt) -> TensorDesc:
            extent = sum((s - 1) * st for s, st in zip(sizes, strides)) + 1
            return TensorDesc(DataType.from_numpy(np.dtype(dt)), (extent,))

        self._constant_params = desc.params()
        inputs = [whole(p.sizes, p.in_strides, dt) for p, dt in zip(desc.parts, desc.in_dtypes)]
        out = TensorDesc(DataType.from_numpy(np.dtype(desc.out_dtype)), desc.out_sizes)
        super().__init__(device, desc, inputs, [out], desc.kernels(words_ok))


def move(sizes: Sequence[int], in_strides: Sequence[int], out_strides: Optional[Sequence[int]] = None,
         out_offset: int = 0, tables=IDENTITY, table_axis: Optional[int] = None) -> Part:
    """A Part, the output packed where out_strides is None."""
    sizes = tuple(int(s) for s in sizes)
    return Part(sizes, tuple(int(s) for s in in_strides),
                tuple(packed_strides(sizes)) if out_strides is None else tuple(int(s) for s in out_strides),
                int(out_offset), np.asarray(tables), table_axis)
