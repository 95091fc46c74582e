"""DirectML enums with DirectML's names and numeric values (DirectML.h, DML_TARGET_VERSION 0x6400)."""
from __future__ import annotations

import enum

import numpy as np


class DataType(enum.IntEnum):
    """DML_TENSOR_DATA_TYPE."""
    UNKNOWN = 0
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11
    UINT4 = 12
    INT4 = 13

    @property
    def bits(self) -> int:
        """Element size in bits (0 for UNKNOWN), as in DMLCalcBufferTensorSize."""
        return _BITS[self]

    @property
    def dml_name(self) -> str:
        return "DML_TENSOR_DATA_TYPE_" + self.name

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype of one element; 4-bit and UNKNOWN types have none."""
        if self not in _NUMPY:
            raise TypeError(f"{self.dml_name} has no numpy dtype")
        return np.dtype(_NUMPY[self])

    @classmethod
    def from_numpy(cls, dtype) -> "DataType":
        dt = np.dtype(dtype)
        for k, v in _NUMPY.items():
            if np.dtype(v) == dt:
                return k
        raise TypeError(f"numpy dtype {dt} has no DirectML data type")


_BITS = {
    DataType.UNKNOWN: 0, DataType.FLOAT32: 32, DataType.FLOAT16: 16, DataType.UINT32: 32,
    DataType.UINT16: 16, DataType.UINT8: 8, DataType.INT32: 32, DataType.INT16: 16,
    DataType.INT8: 8, DataType.FLOAT64: 64, DataType.UINT64: 64, DataType.INT64: 64,
    DataType.UINT4: 4, DataType.INT4: 4,
}
_NUMPY = {
    DataType.FLOAT32: np.float32, DataType.FLOAT16: np.float16, DataType.UINT32: np.uint32,
    DataType.UINT16: np.uint16, DataType.UINT8: np.uint8, DataType.INT32: np.int32,
    DataType.INT16: np.int16, DataType.INT8: np.int8, DataType.FLOAT64: np.float64,
    DataType.UINT64: np.uint64, DataType.INT64: np.int64,
}


class FeatureLevel(enum.IntEnum):
    """DML_FEATURE_LEVEL."""
    FL_1_0 = 0x1000
    FL_2_0 = 0x2000
    FL_2_1 = 0x2100
    FL_3_0 = 0x3000
    FL_3_1 = 0x3100
    FL_4_0 = 0x4000
    FL_4_1 = 0x4100
    FL_5_0 = 0x5000
    FL_5_1 = 0x5100
    FL_5_2 = 0x5200
    FL_6_0 = 0x6000
    FL_6_1 = 0x6100
    FL_6_2 = 0x6200
    FL_6_3 = 0x6300
    FL_6_4 = 0x6400

    @property
    def dml_name(self) -> str:
        return "DML_FEATURE_LEVEL_" + self.name[3:]


class DepthSpaceOrder(enum.IntEnum):
    """DML_DEPTH_SPACE_ORDER. DEPTH_COLUMN_ROW is ONNX's DCR, COLUMN_ROW_DEPTH is ONNX's CRD."""
    DEPTH_COLUMN_ROW = 0
    COLUMN_ROW_DEPTH = 1

    @classmethod
    def parse(cls, order) -> "DepthSpaceOrder":
        """Accept a DepthSpaceOrder, its value, or the ONNX names 'DCR'/'CRD'."""
        if isinstance(order, str):
            names = {"DCR": cls.DEPTH_COLUMN_ROW, "CRD": cls.COLUMN_ROW_DEPTH}
            key = order.upper()
            if key in names:
                return names[key]
            if key in cls.__members__:
                return cls[key]
            raise ValueError(f"order must be 'DCR', 'CRD' or a DepthSpaceOrder, got {order!r}")
        if isinstance(order, (int, np.integer)) and not isinstance(order, bool):
            try:
                return cls(int(order))
            except ValueError:
                pass
        raise ValueError(f"order must be 'DCR', 'CRD' or a DepthSpaceOrder, got {order!r}")


class InterpolationMode(enum.IntEnum):
    """DML_INTERPOLATION_MODE."""
    NEAREST_NEIGHBOR = 0
    LINEAR = 1


class AxisDirection(enum.IntEnum):
    """DML_AXIS_DIRECTION: RESAMPLE2/3's RoundingDirection (INCREASING rounds up, DECREASING down)."""
    INCREASING = 0
    DECREASING = 1


class TensorFlags(enum.IntFlag):
    """DML_TENSOR_FLAGS."""
    NONE = 0x0
    OWNED_BY_DML = 0x1


class OperatorType(enum.IntEnum):
    """DML_OPERATOR_TYPE values of the operators dmlvk implements."""
    ELEMENT_WISE_ADD = 4
    ELEMENT_WISE_CLIP = 8
    ELEMENT_WISE_MULTIPLY = 24
    ACTIVATION_LEAKY_RELU = 39
    ACTIVATION_PARAMETERIZED_RELU = 42
    JOIN = 63
    SPACE_TO_DEPTH = 68
    TILE = 70
    DEPTH_TO_SPACE = 69
    RESAMPLE = 96
    DEPTH_TO_SPACE1 = 113
    SPACE_TO_DEPTH1 = 114
    RESAMPLE1 = 116
    QUANTIZED_LINEAR_CONVOLUTION = 120
    ELEMENT_WISE_QUANTIZED_LINEAR_ADD = 147
    RESAMPLE2 = 161
    RESAMPLE3 = 175

    @property
    def dml_name(self) -> str:
        return "DML_OPERATOR_" + self.name
