"""quantized_linear_convolution: QUANTIZED_LINEAR_CONVOLUTION at the numpy level: the arguments
coerced, the description built by QuantizedLinearConvolutionDesc.of, its rules' ValidationErrors
re-raised as ValueErrors naming the argument (prepare_call, used by the benchmark and the tests too;
constant_filter makes a compiled convolution's weights OWNED_BY_DML)."""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence, Union

import numpy as np

from ...arrays import DeviceArray, as_host_array, empty, resolve_device
from ...enums import DataType, TensorFlags
from ...errors import ValidationError
from ...runtime.device import Device
from ...tensor import TensorDesc
from ..base import array_binding, cached_operator, check_out, device_for, into_out
from .desc import QuantizedLinearConvolutionDesc
from .layout import FILTER_CONSTANTS
from .operator import QuantizedLinearConvolutionOperator


def _flat(name, a: np.ndarray, counts) -> np.ndarray:
    if a.size not in counts:
        raise ValueError(f"{name} must hold {' or '.join(map(str, sorted(set(counts))))} elements, got {a.size}")
    return np.ascontiguousarray(a.reshape(-1))


def _scale(name, v, counts) -> np.ndarray:
    if isinstance(v, bool):
        raise TypeError(f"{name} must be a float or a float32 array, got {v!r}")
    if isinstance(v, (float, int)):
        return np.array([v], np.float32)
    if isinstance(v, np.ndarray) or isinstance(v, np.floating):
        a = np.asarray(v)
        if a.dtype != np.float32:
            raise TypeError(f"{name} must be float32, got {a.dtype}")
        return _flat(name, a, counts)
    raise TypeError(f"{name} must be a float or a float32 array, got {type(v).__name__}")


def _zero_point(name, v, dtype, counts) -> Optional[np.ndarray]:
    if v is None:
        return None
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an integer or a numpy value, got {v!r}")
    if isinstance(v, int):
        info = np.iinfo(dtype)
        if not info.min <= v <= info.max:
            raise ValueError(f"{name} {v} does not fit {np.dtype(dtype)}")
        return np.array([v], dtype)
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        if a.dtype != np.dtype(dtype):
            raise TypeError(f"{name} has dtype {a.dtype}; it must be {np.dtype(dtype)}, its tensor's type")
        return _flat(name, a, counts)
    raise TypeError(f"{name} must be an integer or a numpy value, got {type(v).__name__}")


def _pair(name, v):
    is_int = lambda i: isinstance(i, (int, np.integer)) and not isinstance(i, bool)
    if is_int(v):
        v = (v, v)
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__") or not all(is_int(i) for i in v):
        raise TypeError(f"{name} must be an int or a pair of ints, got {v!r}")
    t = tuple(int(i) for i in v)
    if len(t) != 2 or any(not 0 <= i <= 0xFFFFFFFF for i in t):
        raise ValueError(f"{name} must be two integers in 0..2**32-1 (DirectML's UINT), got {v!r}")
    return t


# A rule of the description about these tensors or members is about these arguments.
ARGUMENTS = {"Input": "input", "InputScale": "input_scale", "InputZeroPoint": "input_zero_point", "Filter": "filter",
             "FilterScale": "filter_scale", "FilterZeroPoint": "filter_zero_point", "Bias": "bias",
             "OutputScale": "output_scale", "OutputZeroPoint": "output_zero_point", "Output": "out",
             "Strides": "strides", "Dilations": "dilations", "StartPadding": "start_padding",
             "EndPadding": "end_padding", "GroupCount": "group_count"}

ArrayLike = Union[np.ndarray, Sequence, np.generic, float, int]


def quantized_linear_convolution(input: ArrayLike, input_scale: ArrayLike, input_zero_point: Optional[ArrayLike],
                                 filter: ArrayLike, filter_scale: ArrayLike, filter_zero_point: Optional[ArrayLike],
                                 bias: Optional[np.ndarray], output_scale: ArrayLike,
                                 output_zero_point: Optional[ArrayLike], *,
                                 strides=(1, 1), dilations=(1, 1), start_padding=(0, 0),
                                 end_padding=(0, 0), group_count=1, output_dtype=None,
                                 device: Optional[Device] = None, out: Optional[np.ndarray] = None) -> np.ndarray:
    """QUANTIZED_LINEAR_CONVOLUTION of an NCHW int8/uint8 array with an (M, C/groups, KH, KW)
    int8/uint8 filter. Scales: floats or float32 arrays (filter: 1 or M elements); zero points:
    numpy values of their tensor's dtype (a Python int takes the input's or filter's dtype), or
    None; bias: None or M int32 values. The output dtype is output_zero_point's when that is a
    numpy value, else output_dtype. input and filter: anything np.asarray takes; an empty batch
    gives an empty result; out: a preallocated result array. Returns the NCHW output."""
    on_device, device = device_for(input, device, "input")
    if not on_device:
        input = as_host_array(input, "input")
    if not isinstance(filter, DeviceArray):
        filter = as_host_array(filter, "filter")
    empty_batch = not on_device and input.ndim == 4 and input.shape[0] == 0 and 0 not in input.shape[1:]
    if empty_batch:       # checked and shaped through a batch of one; the result is empty
        input = np.zeros((1,) + input.shape[1:], input.dtype)
    op, inputs, result, finish = prepare_call(
        input, input_scale, input_zero_point, filter, filter_scale, filter_zero_point, bias,
        output_scale, output_zero_point, strides=strides, dilations=dilations,
        start_padding=start_padding, end_padding=end_padding, group_count=group_count,
        output_dtype=output_dtype, device=device)
    shape, dtype = op.output_descs[0].sizes, op.output_descs[0].data_type.numpy_dtype
    shape = ((0,) + tuple(shape[1:])) if empty_batch else tuple(shape)
    check_out(out, shape, dtype, DeviceArray if on_device else np.ndarray)
    if on_device:         # Buffer to Buffer: the result stays on the device
        y = out if out is not None else empty(shape, dtype, device)
        op.execute(inputs=inputs, outputs=[y.buffer])
        return y
    if empty_batch:
        return into_out(out, np.empty(shape, dtype))
    op.execute(inputs=inputs, outputs=[result])
    return into_out(out, finish())


def small_tensor_bytes(a) -> Optional[np.ndarray]:
    """A scale, zero-point or bias array's bytes, padded past the 4 bytes a tensor's total size
    rounds up to (None stays None)."""
    if a is None:
        return None
    return np.concatenate([np.ascontiguousarray(a).reshape(-1).view(np.uint8), np.zeros(4, np.uint8)])


def _binding(a, name: str):
    """(TensorDesc, binding) of the input or filter: a DeviceArray's Buffer, or host bytes."""
    if isinstance(a, DeviceArray):
        return TensorDesc(DataType.from_numpy(a.dtype), a.shape), a.buffer
    return array_binding(a, name)


def constant_filter(op: QuantizedLinearConvolutionOperator, inputs: list) -> tuple:
    """A new operator like `op` whose filter and zero points (where present) are OWNED_BY_DML,
    initialized with those of `inputs` (a model's constant weights: the cooperative-matrix path
    then packs the filter once, here, instead of at every execution), and the inputs to execute it
    with (those slots None)."""
    d = op.desc
    owned = lambda t: None if t is None else dataclasses.replace(t, flags=t.flags | TensorFlags.OWNED_BY_DML)
    desc = dataclasses.replace(d, filter_tensor=owned(d.filter_tensor),
                               input_zero_point_tensor=owned(d.input_zero_point_tensor),
                               filter_zero_point_tensor=owned(d.filter_zero_point_tensor))
    new = op.device.create_operator(desc)
    slots = [s for s in FILTER_CONSTANTS if new.input_descs[s] is not None]
    new.initialize([b if i in slots else None for i, b in enumerate(inputs)])
    return new, [None if i in slots else b for i, b in enumerate(inputs)]


def prepare_call(input, input_scale, input_zero_point, filter, filter_scale, filter_zero_point,
                 bias, output_scale, output_zero_point, *, strides, dilations, start_padding,
                 end_padding, group_count, output_dtype, device):
    """quantized_linear_convolution's arguments as (operator, input bindings, output binding,
    a function returning the output array once the operator has run)."""
    for name, a in (("input", input), ("filter", filter)):
        if not isinstance(a, (np.ndarray, DeviceArray)):
            raise TypeError(f"{name} must be a numpy array or a dmlvk.DeviceArray, got {type(a).__name__}")
        if a.dtype not in (np.int8, np.uint8):
            raise TypeError(f"{name} must be int8 or uint8, got {a.dtype}")
        if a.ndim != 4:
            raise ValueError(f"{name} must be 4-D, got shape {a.shape}")
        if a.size == 0:
            raise ValueError(f"{name} has an empty dimension: shape {a.shape}")
    m = filter.shape[0]
    xs = _scale("input_scale", input_scale, {1})
    ws = _scale("filter_scale", filter_scale, {1, m})
    ys = _scale("output_scale", output_scale, {1})
    xzp = _zero_point("input_zero_point", input_zero_point, input.dtype, {1})
    wzp = _zero_point("filter_zero_point", filter_zero_point, filter.dtype, {1, m})
    if wzp is not None and wzp.size != ws.size:   # DirectML wants a zero point of its scale's Sizes
        ws, wzp = np.broadcast_to(ws, (m,)).copy(), np.broadcast_to(wzp, (m,)).copy()
    if isinstance(output_zero_point, (np.ndarray, np.generic)):
        zp_dtype = np.asarray(output_zero_point).dtype
        if output_dtype is not None and np.dtype(output_dtype) != zp_dtype:
            raise ValueError(f"output_dtype {np.dtype(output_dtype)} conflicts with output_zero_point's dtype {zp_dtype}")
        out_dtype = zp_dtype
    elif output_dtype is None:
        raise ValueError("output_dtype is required when output_zero_point is not a numpy value")
    else:
        out_dtype = np.dtype(output_dtype)
    if out_dtype not in (np.int8, np.uint8):
        raise TypeError(f"the output dtype must be int8 or uint8, got {out_dtype}")
    yzp = _zero_point("output_zero_point", output_zero_point, out_dtype, {1})
    if bias is not None:
        if not isinstance(bias, np.ndarray) or bias.dtype != np.int32:
            raise TypeError("bias must be an int32 numpy array")
        if bias.size != m:
            raise ValueError(f"bias must hold {m} elements (one per output channel), got {bias.size}")
        bias = np.ascontiguousarray(bias.reshape(-1))
    strides, dilations = _pair("strides", strides), _pair("dilations", dilations)
    start_padding, end_padding = _pair("start_padding", start_padding), _pair("end_padding", end_padding)
    if isinstance(group_count, bool) or not isinstance(group_count, (int, np.integer)):
        raise TypeError(f"group_count must be an integer, got {group_count!r}")
    in_desc, x_raw = _binding(input, "input")
    f_desc, w_raw = _binding(filter, "filter")
    qdt = DataType.from_numpy
    try:
        desc = QuantizedLinearConvolutionDesc.of(
            in_desc, f_desc, filter_scale_count=ws.size, input_zero_point=xzp is not None,
            filter_zero_point=wzp is not None, bias=bias is not None, output_data_type=qdt(out_dtype),
            output_zero_point=yzp is not None, strides=strides, dilations=dilations, start_padding=start_padding,
            end_padding=end_padding, group_count=int(group_count))
        op = cached_operator(resolve_device(device), desc)
    except ValidationError as e:
        raise e.as_argument_error(ARGUMENTS) from None
    out_desc = desc.output_tensor
    out_sizes = tuple(out_desc.sizes)
    out = np.empty(out_desc.total_bytes, np.uint8)
    pad4 = small_tensor_bytes
    inputs = [x_raw, pad4(xs), pad4(xzp), w_raw, pad4(ws), pad4(wzp), pad4(bias), pad4(ys), pad4(yzp)]
    return op, inputs, out, lambda: out[:out_desc.element_count].view(out_dtype).reshape(out_sizes)
