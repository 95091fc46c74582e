"""depth_to_space and space_to_depth: the numpy-level API of DEPTH_TO_SPACE1 and SPACE_TO_DEPTH1."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...arrays import DeviceArray, as_host_array, empty
from ...enums import DataType, DepthSpaceOrder
from ...runtime.device import Device
from ...tensor import TensorDesc
from ..base import array_bytes, array_layout, check_out, device_for, into_out
from .desc import DepthToSpace1Desc, SpaceToDepth1Desc

def _run(desc_cls, x, block_size, order, device, d2s: bool, out=None):
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"block_size must be an integer, got {block_size!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    order = DepthSpaceOrder.parse(order)
    on_device, device = device_for(x, device, "x")
    if not on_device:
        x = as_host_array(x, "x")
    if x.ndim != 4:
        raise ValueError(f"x must be 4-D (N, C, H, W), got shape {x.shape}")
    n, c, h, w = x.shape
    b = int(block_size)
    if d2s and c % (b * b):
        raise ValueError(f"x has {c} channels, not divisible by block_size**2 = {b * b}")
    if not d2s and (h % b or w % b):
        raise ValueError(f"x's height {h} and width {w} must be divisible by block_size {b}")
    out_shape = (n, c // (b * b), h * b, w * b) if d2s else (n, c * b * b, h // b, w // b)
    check_out(out, out_shape, x.dtype, DeviceArray if on_device else np.ndarray)
    if x.size == 0:
        if n == 0:        # an empty batch: an empty result, as numpy and torch give
            return out if out is not None else (empty(out_shape, x.dtype, device) if on_device
                                                else np.empty(out_shape, x.dtype))
        raise ValueError(f"x has an empty dimension: shape {x.shape}")
    # The operator moves bits: a dtype DirectML lacks (bool, bfloat16, float8, complex64...) travels
    # as the unsigned integer of its width.
    wire = x.dtype
    if x.dtype.itemsize in (1, 2, 4, 8) and x.dtype.kind != "O":
        try:
            DataType.from_numpy(x.dtype)
        except TypeError:
            wire = np.dtype(f"u{x.itemsize}")
    moved = x if on_device or wire == x.dtype else x.view(wire)

    def describe():
        in_desc = TensorDesc(DataType.from_numpy(wire), x.shape) if on_device else array_layout(moved, "x")
        return desc_cls(in_desc, TensorDesc(in_desc.data_type, out_shape), b, order)

    # Keyed by the call's signature, so a repeated call builds and validates nothing.
    op = device.operator(describe, key=(desc_cls, x.shape, wire, on_device or moved.strides, b, order))
    if on_device:         # Buffer to Buffer: no host round trip
        result = out if out is not None else empty(out_shape, x.dtype, device)
        op.execute([x.buffer], [result.buffer])
        return result
    in_desc, out_desc = op.input_descs[0], op.output_descs[0]
    out_bytes = np.empty(out_desc.total_bytes, np.uint8)     # whole words, as the binding needs
    op.execute_bindings([array_bytes(moved, in_desc), out_bytes])
    return into_out(out, out_bytes[:out_desc.element_count * x.itemsize].view(x.dtype).reshape(out_shape))


def depth_to_space(x, block_size: int, order="DCR", *, device: Optional[Device] = None,
                   out: Optional[np.ndarray] = None) -> np.ndarray:
    """DEPTH_TO_SPACE1 of a 4-D NCHW array: (N, C, H, W) -> (N, C/b^2, H*b, W*b).
    order: 'DCR' (DEPTH_COLUMN_ROW, ONNX's default) or 'CRD' (COLUMN_ROW_DEPTH, pixel_shuffle).
    x: anything np.asarray takes, of any 1/2/4/8-byte dtype; out: a preallocated result array."""
    return _run(DepthToSpace1Desc, x, block_size, order, device, True, out)


def space_to_depth(x, block_size: int, order="DCR", *, device: Optional[Device] = None,
                   out: Optional[np.ndarray] = None) -> np.ndarray:
    """SPACE_TO_DEPTH1 of a 4-D NCHW array: (N, C, H, W) -> (N, C*b^2, H/b, W/b); x and out as for
    depth_to_space."""
    return _run(SpaceToDepth1Desc, x, block_size, order, device, False, out)
