"""depth_to_space and space_to_depth: the numpy-level API of DEPTH_TO_SPACE1 and SPACE_TO_DEPTH1."""
from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple, Optional

import numpy as np

from ...arrays import DeviceArray, as_host_array, empty
from ...enums import DataType, DepthSpaceOrder
from ...errors import ValidationError
from ...runtime.device import Device, default_device
from ...tensor import TensorDesc, packed_strides
from ..base import CompiledOperator, array_bytes, array_layout, check_out, device_for, into_out
from .desc import DepthToSpace1Desc, SpaceToDepth1Desc


class _Call(NamedTuple):
    """A numpy-level call's plan, made once per signature (the arguments' shape, dtype, strides,
    block size and order): its operator and how to bind a host array to it."""
    op: Optional[CompiledOperator]   # None: an empty batch
    wire: np.dtype                   # the dtype the operator moves (x's, or the unsigned one of its width)
    in_desc: Optional[TensorDesc]
    packed: bool                     # x's own bytes are the input binding
    out_nbytes: int                  # bytes of the result's elements
    out_shape: tuple


def _run(desc_cls, x, block_size, order, device, out=None):
    # A host array with the defaults of the common call takes its plan from the device's cache
    # (argument checks and validation ran when the plan was made) and goes straight to execution.
    if (type(x) is np.ndarray and out is None and type(block_size) is int and type(order) is not bool
            and isinstance(order, (str, int))):
        dev = default_device() if device is None else device
        if isinstance(dev, Device):
            call = dev.memo((desc_cls, x.shape, x.dtype, x.strides, block_size, order),
                            lambda: _plan(desc_cls, x, block_size, order, dev))
            return _execute(call, x)
    return _run_checked(desc_cls, x, block_size, order, device, out)


def _execute(call: _Call, x: np.ndarray) -> np.ndarray:
    if call.op is None:
        return np.empty(call.out_shape, x.dtype)
    moved = x if call.wire == x.dtype else x.view(call.wire)
    raw = moved.reshape(-1).view(np.uint8) if call.packed else array_bytes(moved, call.in_desc)
    out_bytes = call.op.fetch(raw)                         # the output is packed: fetched whole
    return out_bytes[:call.out_nbytes].view(x.dtype).reshape(call.out_shape)


# A rule of the description about these tensors or members is about these arguments.
_ARGUMENTS = {"Input": "x", "Output": "out", "BlockSize": "block_size", "Order": "order"}


@functools.lru_cache(maxsize=256)
def _description(desc_cls, sizes: tuple, dtype: np.dtype, block_size: int, order):
    """desc_cls.of for a packed input of these sizes and dtype (moved as _wire's), made once per
    signature (a device array's repeated call builds nothing); where a rule fails, a ValueError
    naming the argument, every time."""
    try:
        return desc_cls.of(TensorDesc(DataType.from_numpy(_wire(dtype)), sizes), block_size, order)
    except ValidationError as e:
        raise e.as_argument_error(_ARGUMENTS) from None


def _checked_arguments(desc_cls, x, block_size, order, device, out=None) -> tuple:
    """(x, the description of the call, on the device, device, result shape) after the argument
    checks; the description's own rules (desc_cls.of) raise ValueErrors naming the argument."""
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"block_size must be an integer, got {block_size!r}")
    order = DepthSpaceOrder.parse(order)
    on_device, device = device_for(x, device, "x")
    if not on_device:
        x = as_host_array(x, "x")
    if x.ndim != 4:
        raise ValueError(f"x must be 4-D (N, C, H, W), got shape {x.shape}")
    if x.size == 0 and x.shape[0] != 0:
        raise ValueError(f"x has an empty dimension: shape {x.shape}")
    # an empty batch is described, and shaped, as a batch of one
    desc = _description(desc_cls, (max(x.shape[0], 1),) + x.shape[1:], x.dtype, int(block_size), order)
    out_shape = (x.shape[0],) + tuple(desc.output_tensor.sizes[1:])
    check_out(out, out_shape, x.dtype, DeviceArray if on_device else np.ndarray)
    return x, desc, on_device, device, out_shape


def _wire(dtype: np.dtype) -> np.dtype:
    """The operator moves bits: a dtype DirectML lacks (bool, bfloat16, float8, complex64...)
    travels as the unsigned integer of its width."""
    if dtype.itemsize in (1, 2, 4, 8) and dtype.kind != "O":
        try:
            DataType.from_numpy(dtype)
        except TypeError:
            return np.dtype(f"u{dtype.itemsize}")
    return dtype


def _plan(desc_cls, x, block_size, order, device) -> _Call:
    x, desc, _, device, out_shape = _checked_arguments(desc_cls, x, block_size, order, device)
    if x.size == 0:        # an empty batch: an empty result, as numpy and torch give
        return _Call(None, x.dtype, None, False, 0, out_shape)
    wire = _wire(x.dtype)
    moved = x if wire == x.dtype else x.view(wire)
    in_desc = array_layout(moved, "x")          # x's own strides where DirectML can read them
    op = device.create_operator(dataclasses.replace(desc, input_tensor=in_desc))
    packed = (moved.flags.c_contiguous and moved.nbytes >= in_desc.total_bytes
              and in_desc.effective_strides == packed_strides(in_desc.sizes))
    return _Call(op, wire, in_desc, packed, op.output_descs[0].element_count * x.itemsize, out_shape)


def _run_checked(desc_cls, x, block_size, order, device, out=None):
    x, desc, on_device, device, out_shape = _checked_arguments(desc_cls, x, block_size, order, device, out)
    b, order = desc.block_size, desc.order
    if not on_device:
        call = device.memo((desc_cls, x.shape, x.dtype, x.strides, b, order),
                           lambda: _plan(desc_cls, x, b, order, device))
        return into_out(out, _execute(call, x))
    if x.size == 0:
        return out if out is not None else empty(out_shape, x.dtype, device)
    # Keyed by the call's signature, so a repeated call compiles nothing.
    op = device.operator(lambda: desc, key=(desc_cls, x.shape, desc.input_tensor.data_type, True, b, order))
    result = out if out is not None else empty(out_shape, x.dtype, device)   # Buffer to Buffer
    op.execute([x.buffer], [result.buffer])
    return result


def depth_to_space(x, block_size: int, order="DCR", *, device: Optional[Device] = None,
                   out: Optional[np.ndarray] = None) -> np.ndarray:
    """DEPTH_TO_SPACE1 of a 4-D NCHW array: (N, C, H, W) -> (N, C/b^2, H*b, W*b).
    order: 'DCR' (DEPTH_COLUMN_ROW, ONNX's default) or 'CRD' (COLUMN_ROW_DEPTH, pixel_shuffle).
    x: anything np.asarray takes, of any 1/2/4/8-byte dtype; out: a preallocated result array."""
    return _run(DepthToSpace1Desc, x, block_size, order, device, out)


def space_to_depth(x, block_size: int, order="DCR", *, device: Optional[Device] = None,
                   out: Optional[np.ndarray] = None) -> np.ndarray:
    """SPACE_TO_DEPTH1 of a 4-D NCHW array: (N, C, H, W) -> (N, C*b^2, H/b, W/b); x and out as for
    depth_to_space."""
    return _run(SpaceToDepth1Desc, x, block_size, order, device, out)
