"""DirectML's documented examples and other published vectors (spec 3.5), as data.

The demo, the tests and the report all run these; the expected outputs are transcribed from the
sources the spec names, never computed here."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlvk.enums import DepthSpaceOrder

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


# ---- QUANTIZED_LINEAR_CONVOLUTION (spec 4.7) ----------------------------------------------------

@dataclass(frozen=True)
class QConvExample:
    name: str
    source: str
    args: tuple            # the positional arguments of dmlvk.quantized_linear_convolution
    kwargs: dict
    expected: np.ndarray


def qconv_examples():
    onnx_x = np.array([255, 174, 162, 25, 203, 168, 58, 15, 59, 237, 95, 129, 0, 64, 56, 242, 153, 221, 168,
                       12, 166, 232, 178, 186, 195, 237, 162, 237, 188, 39, 124, 77, 80, 102, 43, 127, 230,
                       21, 83, 41, 40, 134, 255, 154, 92, 141, 42, 148, 247], np.uint8).reshape(1, 1, 7, 7)
    onnx_y = np.array([0, 81, 93, 230, 52, 87, 197, 240, 196, 18, 160, 126, 255, 191, 199, 13, 102, 34, 87,
                       243, 89, 23, 77, 69, 60, 18, 93, 18, 67, 216, 131, 178, 175, 153, 212, 128, 25, 234,
                       172, 214, 215, 121, 0, 101, 163, 114, 213, 107, 8], np.uint8).reshape(1, 1, 7, 7)
    a_x = np.array([178, 58, 201, 81, 52, 204, 164, 173, 253, 100, 214, 85, 145, 153, 54, 47, 58, 172, 157,
                    241, 180, 63, 234, 242, 187, 170, 33, 24, 68, 113, 18, 226, 121, 178, 54, 83, 29, 187,
                    198, 56, 183, 20, 100, 40, 190, 87, 121, 119, 121, 68, 142, 208, 127, 49, 6, 33, 20, 23,
                    31, 153, 206, 218, 167, 154, 84, 238, 163, 185, 187, 220, 179, 237, 138, 139, 64, 240,
                    141, 126, 80, 70, 162, 115, 145, 170, 230, 84, 174, 231, 117, 65, 74, 86, 161, 66, 214,
                    90, 16, 1, 6, 160, 88, 72, 156, 17, 138, 157, 8, 45, 99, 77, 243, 112, 165, 38, 206, 55,
                    196, 121, 104, 121], np.uint8).reshape(1, 4, 5, 6)
    a_w = np.array([9, -63, -97, -52, 125, -57, 42, -62, 86, -5, 17, -74, 27, -2, 54, -65, 27, 86, -9, -82,
                    -110, 92, 1, -83, -53, 64, -34, 28, 79, -75, 92, 66], np.int8).reshape(4, 2, 2, 2)
    a_y = np.array([-15, 13, 19, -43, 41, 38, 2, 29, 15, -31, 55, -11, 8, 88, 38, 52, 40, 21,
                    -9, -1, 12, 44, 84, 26, 28, -1, 0, -18, 45, 66, 33, -52, -92, 23, 55, 11],
                   np.int8).reshape(1, 4, 3, 3)
    d_x = np.array([0, 50, 128, 200, 255], np.uint8).reshape(1, 1, 1, 5)
    d_w = np.array([4], np.int8).reshape(1, 1, 1, 1)
    c_x = np.array([1, 3, 5, 7, -1, -3, -5, -7], np.int8).reshape(1, 1, 1, 8)
    one = np.array([1], np.int8).reshape(1, 1, 1, 1)
    f32 = lambda *v: np.array(v, np.float32)
    return [
        QConvExample("ONNX test_qlinearconv", "ONNX node test",
                     (onnx_x, f32(0.00369204697), np.uint8(132), np.zeros((1, 1, 1, 1), np.uint8),
                      f32(0.00172794575), np.uint8(255), None, f32(0.00162681262), np.uint8(123)), {}, onnx_y),
        QConvExample("Vector A: u8 x s8, per-channel, bias, stride 2, dilation (1,2), pads, 2 groups",
                     "spec 4.7", (a_x, 0.05, np.uint8(128), a_w, f32(0.01, 0.02, 0.015, 0.03),
                                  np.array([0, 1, -2, 3], np.int8), np.array([100, -200, 50, 0], np.int32),
                                  0.25, np.int8(10)),
                     dict(strides=(2, 2), dilations=(1, 2), start_padding=(1, 0), end_padding=(0, 1), group_count=2), a_y),
        QConvExample("Vector D: saturation, int8 output", "spec 4.7",
                     (d_x, 1.0, np.uint8(128), d_w, 1.0, None, None, 1.0, np.int8(0)), {},
                     np.array([-128, -128, 0, 127, 127], np.int8).reshape(1, 1, 1, 5)),
        QConvExample("Vector D: saturation, uint8 output", "spec 4.7",
                     (d_x, 1.0, np.uint8(128), d_w, 1.0, None, None, 1.0, np.uint8(128)), {},
                     np.array([0, 0, 128, 255, 255], np.uint8).reshape(1, 1, 1, 5)),
        QConvExample("Vector D: bias -100, uint8 output", "spec 4.7",
                     (d_x, 1.0, np.uint8(128), d_w, 1.0, None, np.array([-100], np.int32), 1.0, np.uint8(128)), {},
                     np.array([0, 0, 28, 255, 255], np.uint8).reshape(1, 1, 1, 5)),
        # Vector C: every result is a tie; dmlvk rounds half to even, then adds the zero point.
        QConvExample("Vector C: ties, yZP 0 (half-even)", "spec 4.7",
                     (c_x, 0.5, np.int8(0), one, 1.0, None, None, 1.0, np.int8(0)), {},
                     np.array([0, 2, 2, 4, 0, -2, -2, -4], np.int8).reshape(1, 1, 1, 8)),
        QConvExample("Vector C: ties, yZP 11 (half-even, round then add)", "spec 4.7",
                     (c_x, 0.5, np.int8(0), one, 1.0, None, None, 1.0, np.int8(11)), {},
                     np.array([11, 13, 13, 15, 11, 9, 9, 7], np.int8).reshape(1, 1, 1, 8)),
    ]
