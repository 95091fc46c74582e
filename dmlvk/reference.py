"""Independent numpy references, written from the spec's formulas (not from the shaders)."""
from __future__ import annotations

import numpy as np


def _order_name(order) -> str:
    from .enums import DepthSpaceOrder
    return "DCR" if DepthSpaceOrder.parse(order) == DepthSpaceOrder.DEPTH_COLUMN_ROW else "CRD"


def depth_to_space(x: np.ndarray, b: int, order="DCR") -> np.ndarray:
    """Spec 3.3 reshape/transpose forms (ONNX DepthToSpace)."""
    n, c, h, w = x.shape
    cs = c // (b * b)
    if _order_name(order) == "DCR":
        y = x.reshape(n, b, b, cs, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, cs, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(y).reshape(n, cs, h * b, w * b)


def space_to_depth(x: np.ndarray, b: int, order="DCR") -> np.ndarray:
    """Spec 3.3: DCR is ONNX SpaceToDepth; CRD is the inverse of CRD depth-to-space."""
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    if _order_name(order) == "DCR":
        y = y.transpose(0, 3, 5, 1, 2, 4)
    else:
        y = y.transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(y).reshape(n, c * b * b, h // b, w // b)
