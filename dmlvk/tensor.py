"""DML_BUFFER_TENSOR_DESC, DMLCalcBufferTensorSize and the per-tensor rules of spec 5.1."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .enums import DataType, FeatureLevel, TensorFlags
from .errors import ValidationError

DIMENSION_COUNT_MAX = 5       # DML_TENSOR_DIMENSION_COUNT_MAX, before FL 3_0
DIMENSION_COUNT_MAX1 = 8      # DML_TENSOR_DIMENSION_COUNT_MAX1, from FL 3_0
MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16
MAX_ELEMENTS = 2**32 - 1
_U32 = 0xFFFFFFFF
# Outputs whose layout is not nested are checked for aliasing by enumerating their offsets, up to
# this many elements; beyond it such an output is rejected (see README, "Semantics choices").
_OVERLAP_ENUMERATION_LIMIT = 1 << 24


def _as_uint_tuple(name: str, values) -> tuple:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of integers, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must contain integers, got {v!r}")
        v = int(v)
        if v < 0 or v > _U32:
            raise ValueError(f"{name} entries are UINT (0..2**32-1), got {v}")
        out.append(v)
    return tuple(out)


def packed_strides(sizes: Sequence[int]) -> tuple:
    """Row-major strides in elements: what DirectML assumes when Strides is null."""
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def calc_buffer_tensor_size(data_type, sizes: Sequence[int], strides: Optional[Sequence[int]] = None) -> int:
    """DMLCalcBufferTensorSize, including its quirks: bits-based (4-bit types), the last index summed
    in 32-bit unsigned arithmetic when strides are given, and the round-up to 4 bytes."""
    try:
        bits = DataType(data_type).bits
    except ValueError:
        return 0
    if bits == 0:
        return 0
    if strides is None:
        total_bits = math.prod(sizes) * bits
    else:
        last = 0
        for s, st in zip(sizes, strides):
            last = (last + ((s - 1) & _U32) * st) & _U32
        total_bits = (last + 1) * bits
    nbytes = (total_bits + 7) // 8
    return (nbytes + 3) & ~3


@dataclass(frozen=True)
class TensorDesc:
    """DML_BUFFER_TENSOR_DESC. Strides are in elements (None = packed); a total size of None means
    the minimum, DMLCalcBufferTensorSize. Values are checked at operator creation, as DirectML does;
    only malformed Python arguments are refused here."""
    data_type: DataType
    sizes: tuple
    strides: Optional[tuple] = None
    total_tensor_size_in_bytes: Optional[int] = None
    guaranteed_base_offset_alignment: int = 0
    flags: TensorFlags = TensorFlags.NONE
    _total: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if isinstance(self.data_type, bool) or not isinstance(self.data_type, (int, np.integer)):
            raise TypeError(f"data_type must be a DataType, got {self.data_type!r}")
        try:
            dt = DataType(int(self.data_type))
        except ValueError:
            dt = int(self.data_type)   # unknown values are rejected at creation, as DirectML does
        object.__setattr__(self, "data_type", dt)
        object.__setattr__(self, "sizes", _as_uint_tuple("sizes", self.sizes))
        if self.strides is not None:
            strides = _as_uint_tuple("strides", self.strides)
            if len(strides) != len(self.sizes):
                raise ValueError(f"strides has {len(strides)} entries but sizes has {len(self.sizes)}")
            object.__setattr__(self, "strides", strides)
        total = self.total_tensor_size_in_bytes
        if total is None:
            total = calc_buffer_tensor_size(dt, self.sizes, self.strides)
        elif isinstance(total, bool) or not isinstance(total, (int, np.integer)) or total < 0:
            raise TypeError(f"total_tensor_size_in_bytes must be a non-negative integer, got {total!r}")
        object.__setattr__(self, "_total", int(total))
        align = self.guaranteed_base_offset_alignment
        if isinstance(align, bool) or not isinstance(align, (int, np.integer)) or align < 0:
            raise TypeError(f"guaranteed_base_offset_alignment must be a non-negative integer, got {align!r}")
        object.__setattr__(self, "flags", TensorFlags(int(self.flags)))

    @classmethod
    def from_array(cls, a: np.ndarray, **kw) -> "TensorDesc":
        """A description of an ndarray as it lies in memory (strides mapped to elements)."""
        a = np.asarray(a)
        dt = DataType.from_numpy(a.dtype)
        strides = []
        for st in a.strides:
            if st < 0 or st % a.itemsize:
                raise ValueError("array strides must be non-negative multiples of the item size")
            strides.append(st // a.itemsize)
        return cls(dt, a.shape, tuple(strides), **kw)

    @property
    def total_bytes(self) -> int:
        """TotalTensorSizeInBytes (the minimum when it was left as None)."""
        return self._total

    @property
    def dimension_count(self) -> int:
        return len(self.sizes)

    @property
    def element_bytes(self) -> int:
        return DataType(self.data_type).bits // 8

    @property
    def effective_strides(self) -> tuple:
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    def with_sizes(self, sizes, strides=None) -> "TensorDesc":
        return TensorDesc(self.data_type, sizes, strides, None, self.guaranteed_base_offset_alignment, self.flags)


# ---- layout analysis --------------------------------------------------------------------------

def element_extent_bytes(desc: TensorDesc) -> int:
    """Bytes from the tensor's start to the end of its last element, in exact (Python) integers."""
    last = sum((s - 1) * st for s, st in zip(desc.sizes, desc.effective_strides))
    return (last + 1) * desc.element_bytes


def nested_order(sizes: Sequence[int], strides: Sequence[int]) -> Optional[tuple]:
    """Dimensions from outermost to innermost if the layout is nested: sorted by stride, each
    dimension's stride at least the extent of the next (so no two elements share memory and an
    offset decomposes greedily into coordinates). Size-1 dimensions may be anywhere. None if not."""
    dims = [d for d in range(len(sizes)) if sizes[d] > 1]
    dims.sort(key=lambda d: strides[d], reverse=True)
    extent = 1
    for d in reversed(dims):
        if strides[d] < extent:
            return None
        extent = strides[d] * sizes[d]
    rest = [d for d in range(len(sizes)) if sizes[d] <= 1]
    return tuple(rest + dims)


def has_overlap(sizes: Sequence[int], strides: Sequence[int]) -> Optional[bool]:
    """True if two elements share memory, False if none do, None if it was too costly to decide."""
    if nested_order(sizes, strides) is not None:
        return False
    if any(st == 0 and s > 1 for s, st in zip(sizes, strides)):
        return True
    if math.prod(sizes) > _OVERLAP_ENUMERATION_LIMIT:
        return None
    off = np.zeros(1, np.int64)
    for s, st in zip(sizes, strides):
        off = (off[:, None] + np.arange(s, dtype=np.int64)[None, :] * st).ravel()
    return bool(np.unique(off).size != off.size)


# ---- spec 5.1: rules for every tensor description ----------------------------------------------

def _fmt_type(dt) -> str:
    try:
        return DataType(dt).dml_name
    except ValueError:
        return f"DML_TENSOR_DATA_TYPE({int(dt)})"


class TensorChecker:
    """Checks one tensor of one operator; every failure names both, the rule and the values."""

    def __init__(self, op_name: str, tensor_name: str, desc: Optional[TensorDesc], level: FeatureLevel,
                 strict: bool = False):
        """strict: the documented rules the release DirectML.dll skips (Device(debug=True))."""
        self.op, self.name, self.desc, self.level = op_name, tensor_name, desc, level
        self.strict = strict

    def fail(self, rule: str) -> None:
        raise ValidationError(f"{self.op}: tensor '{self.name}' {rule}", tensor=self.name)

    def required(self) -> "TensorChecker":
        if self.desc is None:                                                  # 5.1 rule 1
            raise ValidationError(f"{self.op}: tensor '{self.name}' is required but is null.", tensor=self.name)
        if not isinstance(self.desc, TensorDesc):
            raise TypeError(f"{self.op}: '{self.name}' must be a TensorDesc, got {type(self.desc).__name__}")
        return self

    def common(self, *, is_output: bool, ranks, types) -> "TensorChecker":
        """Spec 5.1 rules 2-8 plus the operator's rank and type tables."""
        d = self.desc
        if d.data_type not in set(DataType) or d.data_type == DataType.UNKNOWN:    # rule 2
            self.fail(f"has an invalid DataType {_fmt_type(d.data_type)}.")
        if d.data_type not in types:
            allowed = ", ".join(DataType(t).dml_name for t in sorted(types))
            self.fail(f"has DataType {_fmt_type(d.data_type)}, which is not supported at "
                      f"{self.level.dml_name}; supported: {allowed}.")
        n = d.dimension_count
        limit = DIMENSION_COUNT_MAX1 if self.level >= FeatureLevel.FL_3_0 else DIMENSION_COUNT_MAX
        if not 1 <= n <= limit:                                                 # rule 3
            self.fail(f"has DimensionCount {n}; it must be between 1 and {limit} at {self.level.dml_name}.")
        if n not in ranks:
            allowed = ", ".join(str(r) for r in sorted(ranks))
            self.fail(f"has DimensionCount {n}; {self.op} accepts {allowed} at {self.level.dml_name}.")
        if any(s == 0 for s in d.sizes):                                        # rule 4
            self.fail(f"has Sizes {list(d.sizes)}; every size must be at least 1.")
        if d.element_count > MAX_ELEMENTS:                                      # rule 5
            self.fail(f"has {d.element_count} elements; a buffer tensor may hold at most 2^32-1.")
        need = calc_buffer_tensor_size(d.data_type, d.sizes, d.strides)
        if d.total_bytes < need:                                                # rule 6
            self.fail(f"has TotalTensorSizeInBytes {d.total_bytes}, less than the {need} bytes "
                      f"DMLCalcBufferTensorSize requires for Sizes {list(d.sizes)}"
                      + (f" and Strides {list(d.strides)}." if d.strides is not None else "."))
        # The release DLL counts TotalTensorSizeInBytes in elements, in 32 bits: a total past 2^32-1
        # elements' worth is rejected, whatever the Sizes (measured: 540 of 540 fuzzed descriptions
        # with a total of 4 GiB or more, accepted or rejected alike with this rule).
        bits = DataType(d.data_type).bits
        if -(-d.total_bytes * 8 // bits) > MAX_ELEMENTS:                        # rule 6, measured
            self.fail(f"has TotalTensorSizeInBytes {d.total_bytes}, more than 2^32-1 elements of "
                      f"{bits // 8} bytes; DirectML counts a tensor's bytes in 32-bit elements.")
        # The release DLL takes any total from DMLCalcBufferTensorSize's (a multiple of 4) up
        # (measured); bound buffers must be whole words, so the debug rules ask it of the total too.
        if d.total_bytes % 4 and self.strict:                                   # rule 6, dmlvk's choice
            self.fail(f"has TotalTensorSizeInBytes {d.total_bytes}, which is not a multiple of 4 "
                      f"(bound buffers must be whole 4-byte words).")
        extent = element_extent_bytes(d)                                        # dmlvk's choice
        if extent > d.total_bytes:
            self.fail(f"has elements reaching byte {extent} (Sizes {list(d.sizes)}, Strides "
                      f"{list(d.effective_strides)}), past its TotalTensorSizeInBytes {d.total_bytes} "
                      f"(DMLCalcBufferTensorSize sums offsets in 32 bits and wraps); every element "
                      f"must lie inside the tensor's bytes.")
        a = d.guaranteed_base_offset_alignment                                  # rule 7
        if a and (a & (a - 1) or a < d.element_bytes):
            self.fail(f"has GuaranteedBaseOffsetAlignment {a}; it must be 0 or a power of two of "
                      f"at least the element size ({d.element_bytes} bytes).")
        if int(d.flags) & ~int(TensorFlags.OWNED_BY_DML):                       # rule 8
            self.fail(f"has unknown Flags 0x{int(d.flags):x}.")
        if is_output and d.flags & TensorFlags.OWNED_BY_DML:
            self.fail("is an output and cannot carry DML_TENSOR_FLAG_OWNED_BY_DML.")
        if is_output and not self.strict:                                       # rule 9, release DLL
            for s, st in zip(d.sizes, d.effective_strides):
                if st == 0 and s > 1:
                    self.fail(f"has Strides {list(d.effective_strides)}: a zero stride on a dimension of "
                              f"size {s}; output tensors must not overlap.")
            # The release DirectML detects overlap only where two dimensions share a stride, or the
            # elements outnumber the positions their strides reach (measured; other aliasing goes
            # undetected).
            live = [st for s, st in zip(d.sizes, d.effective_strides) if s > 1]
            if len(set(live)) < len(live):
                self.fail(f"has Strides {list(d.effective_strides)}: two dimensions larger than 1 share "
                          f"a stride; output tensors must not overlap.")
            span = sum((s - 1) * st for s, st in zip(d.sizes, d.effective_strides)) + 1
            if span < d.element_count:
                self.fail(f"has Strides {list(d.effective_strides)} that reach {span} positions for "
                          f"{d.element_count} elements; output tensors must not overlap.")
        if is_output and self.strict:                                           # rule 9, documented
            overlap = has_overlap(d.sizes, d.effective_strides)
            if overlap:
                self.fail(f"has Strides {list(d.effective_strides)} under which two elements share "
                          f"memory; output tensors must not overlap.")
            if overlap is None:
                self.fail(f"has Strides {list(d.effective_strides)} that are not nested and too many "
                          f"elements to prove they do not overlap; output tensors must not overlap.")
        return self

    def sizes_equal(self, expected: Sequence[int], why: str) -> "TensorChecker":
        if tuple(self.desc.sizes) != tuple(expected):
            self.fail(f"has Sizes {list(self.desc.sizes)}; expected {list(expected)} ({why}).")
        return self


def same_data_type(op: str, a_name: str, a: TensorDesc, b_name: str, b: TensorDesc) -> None:
    """DirectML's 'Mismatched tensor data types' rule."""
    if a.data_type != b.data_type:
        raise ValidationError(
            f"{op}: Mismatched tensor data types. Tensor '{b_name}' has DataType of "
            f"{_fmt_type(b.data_type)}, while tensor '{a_name}' has DataType of {_fmt_type(a.data_type)}. "
            f"Both tensors are expected to have the same DataType.", tensor=b_name)
