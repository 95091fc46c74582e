"""DirectML's documented examples and other published vectors (spec 3.5), as data.

The demo, the tests and the report all run these; the expected outputs are transcribed from the
sources the spec names, never computed here."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .enums import DepthSpaceOrder

DCR, CRD = DepthSpaceOrder.DEPTH_COLUMN_ROW, DepthSpaceOrder.COLUMN_ROW_DEPTH

# DirectML docs: depth tensor {1,8,2,3}; channel k holds 9k + [0..5].
_DEPTH = [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 18, 19, 20, 21, 22, 23, 27, 28, 29, 30, 31, 32,
          36, 37, 38, 39, 40, 41, 45, 46, 47, 48, 49, 50, 54, 55, 56, 57, 58, 59, 63, 64, 65, 66, 67, 68]
_SPACE_DCR = [0, 18, 1, 19, 2, 20, 36, 54, 37, 55, 38, 56, 3, 21, 4, 22, 5, 23, 39, 57, 40, 58, 41, 59,
              9, 27, 10, 28, 11, 29, 45, 63, 46, 64, 47, 65, 12, 30, 13, 31, 14, 32, 48, 66, 49, 67, 50, 68]
_SPACE_CRD = [0, 9, 1, 10, 2, 11, 18, 27, 19, 28, 20, 29, 3, 12, 4, 13, 5, 14, 21, 30, 22, 31, 23, 32,
              36, 45, 37, 46, 38, 47, 54, 63, 55, 64, 56, 65, 39, 48, 40, 49, 41, 50, 57, 66, 58, 67, 59, 68]
# Spec 3.5, B = 3 discriminating vector: D2S of iota {1,18,1,2} -> {1,2,3,6}.
_B3_DCR = [0, 4, 8, 1, 5, 9, 12, 16, 20, 13, 17, 21, 24, 28, 32, 25, 29, 33,
           2, 6, 10, 3, 7, 11, 14, 18, 22, 15, 19, 23, 26, 30, 34, 27, 31, 35]
_B3_CRD = [0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11, 12, 14, 16, 13, 15, 17,
           18, 20, 22, 19, 21, 23, 24, 26, 28, 25, 27, 29, 30, 32, 34, 31, 33, 35]
# onnxruntime's space_depth_ops_test.cc: S2D B=3 of iota {2,3,3,6} -> {2,27,1,2}.
_ORT_S2D_B3 = [0, 3, 18, 21, 36, 39, 1, 4, 19, 22, 37, 40, 2, 5, 20, 23, 38, 41, 6, 9, 24, 27, 42, 45,
               7, 10, 25, 28, 43, 46, 8, 11, 26, 29, 44, 47, 12, 15, 30, 33, 48, 51, 13, 16, 31, 34, 49,
               52, 14, 17, 32, 35, 50, 53, 54, 57, 72, 75, 90, 93, 55, 58, 73, 76, 91, 94, 56, 59, 74,
               77, 92, 95, 60, 63, 78, 81, 96, 99, 61, 64, 79, 82, 97, 100, 62, 65, 80, 83, 98, 101,
               66, 69, 84, 87, 102, 105, 67, 70, 85, 88, 103, 106, 68, 71, 86, 89, 104, 107]
_ORT_CRD_IN = [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 18, 19, 20, 21, 22, 23, 27, 28, 29, 30, 31, 32]
_ORT_CRD_OUT = [0, 9, 1, 10, 2, 11, 18, 27, 19, 28, 20, 29, 3, 12, 4, 13, 5, 14, 21, 30, 22, 31, 23, 32]


@dataclass(frozen=True)
class DepthSpaceExample:
    name: str
    source: str
    operator: str          # DEPTH_TO_SPACE, SPACE_TO_DEPTH, DEPTH_TO_SPACE1, SPACE_TO_DEPTH1
    order: DepthSpaceOrder
    block_size: int
    input: np.ndarray
    expected: np.ndarray


def _u32(values, shape):
    return np.array(values, np.uint32).reshape(shape)


def depth_space_examples():
    depth = _u32(_DEPTH, (1, 8, 2, 3))
    dcr, crd = _u32(_SPACE_DCR, (1, 2, 4, 6)), _u32(_SPACE_CRD, (1, 2, 4, 6))
    iota18 = np.arange(36, dtype=np.uint32).reshape(1, 18, 1, 2)
    docs = "DirectML docs"
    return [
        DepthSpaceExample("DEPTH_TO_SPACE doc example", docs, "DEPTH_TO_SPACE", DCR, 2, depth, dcr),
        DepthSpaceExample("SPACE_TO_DEPTH doc example", docs, "SPACE_TO_DEPTH", DCR, 2, dcr, depth),
        DepthSpaceExample("DEPTH_TO_SPACE1 DEPTH_COLUMN_ROW doc example", docs, "DEPTH_TO_SPACE1", DCR, 2, depth, dcr),
        DepthSpaceExample("DEPTH_TO_SPACE1 COLUMN_ROW_DEPTH doc example", docs, "DEPTH_TO_SPACE1", CRD, 2, depth, crd),
        DepthSpaceExample("SPACE_TO_DEPTH1 DEPTH_COLUMN_ROW doc example", docs, "SPACE_TO_DEPTH1", DCR, 2, dcr, depth),
        DepthSpaceExample("SPACE_TO_DEPTH1 COLUMN_ROW_DEPTH doc example", docs, "SPACE_TO_DEPTH1", CRD, 2, crd, depth),
        DepthSpaceExample("DEPTH_TO_SPACE1 DCR, B=3", "spec 3.5", "DEPTH_TO_SPACE1", DCR, 3, iota18, _u32(_B3_DCR, (1, 2, 3, 6))),
        DepthSpaceExample("DEPTH_TO_SPACE1 CRD, B=3", "spec 3.5", "DEPTH_TO_SPACE1", CRD, 3, iota18, _u32(_B3_CRD, (1, 2, 3, 6))),
        DepthSpaceExample("SPACE_TO_DEPTH1 DCR, B=3 round trip", "spec 3.5", "SPACE_TO_DEPTH1", DCR, 3, _u32(_B3_DCR, (1, 2, 3, 6)), iota18),
        DepthSpaceExample("SPACE_TO_DEPTH1 CRD, B=3 round trip", "spec 3.5", "SPACE_TO_DEPTH1", CRD, 3, _u32(_B3_CRD, (1, 2, 3, 6)), iota18),
        DepthSpaceExample("SpaceToDepth B=3, N=2", "onnxruntime tests", "SPACE_TO_DEPTH1", DCR, 3,
                          np.arange(108, dtype=np.uint32).reshape(2, 3, 3, 6), _u32(_ORT_S2D_B3, (2, 27, 1, 2))),
        DepthSpaceExample("DepthToSpace CRD, B=2", "onnxruntime tests", "DEPTH_TO_SPACE1", CRD, 2,
                          _u32(_ORT_CRD_IN, (1, 4, 2, 3)), _u32(_ORT_CRD_OUT, (1, 1, 4, 6))),
    ]
