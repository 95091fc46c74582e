"""Lowering: each ONNX op dmlvk runs, as one entry of LOWERINGS {op type: Lowering}. A Lowering checks
a node's form when the model is loaded (messages for what dmlvk cannot run), infers its output's
shape and dtype from its input's (descriptions only, nothing compiled), and lowers it, once every
tensor's shape and layout is known (passes.prepare), to device work (a compiled operator and the
Buffers of its constant inputs), host work (a function of its first input) or a view (the same bytes,
another shape). The ops a model may contain are the keys of the entries that fuse nothing (MODEL_OPS;
and, before fusion, rewrite.FUSED_OPS); the others are the fused node types the plan-time passes
make. Adding an op is one entry here plus its tests."""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional

import numpy as np

from ..enums import DataType, DepthSpaceOrder, TensorFlags
from ..ops.depth_space import DepthToSpace1Desc, SpaceToDepth1Desc
from ..ops.quantize import QuantizeLinearDesc
from ..ops.quantized_add import ElementWiseQuantizedLinearAddDesc
from ..ops.quantized_conv import FILTER_CONSTANTS, QuantizedLinearConvolutionDesc, small_tensor_bytes
from ..tensor import TensorDesc
from .graph import Graph, Node
from . import moves, pixels
from .lowering import Context, Lowered, Lowering, TensorRef, constant_inputs, described, refused
from .qdq import dequantize_linear, quantize_linear


def _eight_bit_4d(n: Node, ctx: Context) -> tuple:
    shape, dt = ctx.input(n)
    if dt not in (np.uint8, np.int8) or len(shape) != 4:
        raise refused(n, f"{n.op} input of dtype {dt}, shape {shape}")
    return shape, dt


# ---- convolutions --------------------------------------------------------------------------------

def _check_conv(n: Node, graph: Graph) -> List[str]:
    """QLinearConv: inputs 1-7 required, the bias optional; ConvInteger: the filter required, the
    zero points optional. Every one given must be a constant; 2-D kernels, explicit pads."""
    required, weight = (range(1, 8), 3) if n.op == "QLinearConv" else ((1,), 1)
    missing = [k for k in required if not n.input(k)]
    missing += [k for k in range(1, len(n.inputs)) if n.input(k) and n.inputs[k] not in graph.consts]
    if missing:
        return [f"{n.name}: {n.op} input {min(missing)} must be a constant (initializer)"]
    why, w = [], graph.consts[n.inputs[weight]]
    if w.ndim != 4:
        why.append(f"{n.name}: {n.op} with a {w.ndim - 2}-D kernel (2-D only)")
    if n.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        why.append(f"{n.name}: {n.op} auto_pad {n.attrs['auto_pad']!r} (give pads)")
    return why


def _conv_geometry(n: Node) -> dict:
    """A Conv-like node's attributes as the convolution description's keyword arguments."""
    pt, pl, pb, pr = list(n.attrs.get("pads", [0, 0, 0, 0]))
    return dict(strides=tuple(n.attrs.get("strides", [1, 1])), dilations=tuple(n.attrs.get("dilations", [1, 1])),
                start_padding=(pt, pl), end_padding=(pb, pr), group_count=int(n.attrs.get("group", 1)))


def qlinearconv_desc(n: Node, ctx: Context, shape: tuple, dt, in_strides=None, out_strides=None):
    """(description, its constants as the operator binds them) of a QLinearConv node with an input of
    this shape and dtype, the input and output laid out with these strides (None: packed NCHW)."""
    xs, xzp, w, ws, wzp, ys, yzp = (ctx.graph.consts[k] for k in n.inputs[1:8])
    bias = ctx.graph.const(n.input(8))
    m = w.shape[0]
    for name, a, counts in (("x_scale", xs, {1}), ("x_zero_point", xzp, {1}), ("w_scale", ws, {1, m}),
                            ("w_zero_point", wzp, {1, m}), ("y_scale", ys, {1}), ("y_zero_point", yzp, {1}),
                            ("B", bias, {m})):
        if a is not None and a.size not in counts:
            raise refused(n, f"QLinearConv {name} of {a.size} values ({' or '.join(map(str, sorted(counts)))})")
    if w.dtype not in (np.int8, np.uint8) or wzp.dtype != w.dtype or yzp.dtype not in (np.int8, np.uint8) \
            or (bias is not None and bias.dtype != np.int32):
        raise refused(n, f"QLinearConv of types w {w.dtype}, w_zero_point {wzp.dtype}, y_zero_point {yzp.dtype}")
    ws, wzp = ws.astype(np.float32).reshape(-1), wzp.reshape(-1)
    if wzp.size != ws.size:       # DirectML wants a zero point of its scale's Sizes
        ws, wzp = np.broadcast_to(ws, (m,)).copy(), np.broadcast_to(wzp, (m,)).copy()
    to_type = DataType.from_numpy
    desc = described(n, lambda: QuantizedLinearConvolutionDesc.of(
        TensorDesc(to_type(dt), shape, in_strides), TensorDesc(to_type(w.dtype), w.shape), filter_scale_count=ws.size,
        input_zero_point=True, filter_zero_point=True, bias=bias is not None, output_data_type=to_type(yzp.dtype),
        output_zero_point=True, owned_constants=True, **_conv_geometry(n)))
    if out_strides is not None:
        desc = output_strided(desc, out_strides)
    raw = [None, np.float32(xs.reshape(-1)[0]), xzp.reshape(-1).astype(dt), w, ws, wzp,
           None if bias is None else bias.reshape(-1), np.float32(ys.reshape(-1)[0]), yzp.reshape(-1)]
    return desc, [None if a is None else small_tensor_bytes(a) for a in raw]


def output_strided(desc, strides):
    """The convolution description with its output laid out with these strides."""
    out = desc.output_tensor
    return dataclasses.replace(desc, output_tensor=TensorDesc(out.data_type, out.sizes, strides))


def _constant_bindings(op, raw: list, ctx: Context, owned=FILTER_CONSTANTS) -> tuple:
    """Initializes op with its owned constants (raw[i] for the slots i in owned) and uploads the rest
    once: the Buffers it binds past its input (None where absent)."""
    op.initialize([a if i in owned else None for i, a in enumerate(raw)])
    return tuple(None if a is None or i in owned else ctx.device.upload(a) for i, a in enumerate(raw))[1:]


def _infer_qlinearconv(n: Node, ctx: Context) -> tuple:
    shape, dt = _eight_bit_4d(n, ctx)
    out = qlinearconv_desc(n, ctx, shape, dt)[0].output_tensor
    return tuple(out.sizes), np.dtype(out.data_type.numpy_dtype)


def _lower_qlinearconv(n: Node, ctx: Context) -> Lowered:
    shape, dt = _eight_bit_4d(n, ctx)
    desc, raw = qlinearconv_desc(n, ctx, shape, dt, ctx.layouts.get(n.inputs[0]), ctx.layouts.get(n.outputs[0]))
    return _conv_lowered(described(n, lambda: ctx.device.create_operator(desc)), raw, ctx)


def _conv_lowered(op, raw: list, ctx: Context) -> Lowered:
    # The weights are constants: OWNED_BY_DML, bound once, here.
    out = op.output_descs[0]
    return Lowered("device", tuple(out.sizes), np.dtype(out.data_type.numpy_dtype), op,
                   _constant_bindings(op, raw, ctx))


DEQUANTIZED_CONV = "QLinearConv+DequantizeLinear"


def dequantized_conv_node(conv: Node, tail: tuple, output: str) -> Node:
    """The fused node of a QLinearConv and the DepthToSpace and per-tensor DequantizeLinear after it,
    tail = (block (1: none), crd, scale, zero point): the convolution's inputs and attributes, the
    tail as the attribute "dequantize", the DequantizeLinear's output."""
    return Node(DEQUANTIZED_CONV, conv.name, tuple(conv.inputs) + ("",) * (9 - len(conv.inputs)), (output,),
                dict(conv.attrs, dequantize=tuple(tail)))


def _infer_dequantized_conv(n: Node, ctx: Context) -> tuple:
    (b, m, h, w), _ = _infer_qlinearconv(n, ctx)
    block = n.attrs["dequantize"][0]
    return (b, m // (block * block), h * block, w * block), np.dtype(np.float32)


def _lower_dequantized_conv(n: Node, ctx: Context) -> Lowered:
    shape, dt = _eight_bit_4d(n, ctx)
    desc, raw = qlinearconv_desc(n, ctx, shape, dt, ctx.layouts.get(n.inputs[0]))
    op = described(n, lambda: desc.compile_dequantized(ctx.device, n.attrs["dequantize"]))
    if op is None:
        raise RuntimeError(f"{n.name}: the convolution's plan does not fold its DequantizeLinear, which "
                           "layouts.folds_dequantized answered it would")
    return _conv_lowered(op, raw, ctx)


def _conv_integer_desc(n: Node, ctx: Context):
    shape, dt = _eight_bit_4d(n, ctx)
    w, wzp = ctx.graph.consts[n.inputs[1]], ctx.graph.const(n.input(3))
    to_type = DataType.from_numpy
    return described(n, lambda: QuantizedLinearConvolutionDesc.of(
        TensorDesc(to_type(dt), shape), TensorDesc(to_type(w.dtype), w.shape),
        filter_scale_count=w.shape[0] if wzp is not None and wzp.size > 1 else 1,
        input_zero_point=n.input(2) is not None, filter_zero_point=wzp is not None, int32_output=True,
        **_conv_geometry(n)))


def _infer_conv_integer(n: Node, ctx: Context) -> tuple:
    return tuple(_conv_integer_desc(n, ctx).output_tensor.sizes), np.dtype(np.int32)


def _lower_conv_integer(n: Node, ctx: Context) -> Lowered:
    desc = _conv_integer_desc(n, ctx)
    w = ctx.graph.consts[n.inputs[1]]
    xzp, wzp = ctx.graph.const(n.input(2)), ctx.graph.const(n.input(3))
    per_channel = wzp is not None and wzp.size > 1
    dev = ctx.device
    op = described(n, lambda: dev.operator(desc))
    upload = lambda a: None if a is None else dev.upload(small_tensor_bytes(a))
    ones = upload(np.float32([1.0]))                 # the scales the layout requires, unused
    filter_ones = upload(np.ones(w.shape[0] if per_channel else 1, np.float32))
    # the filter too is padded: a tensor's TotalTensorSizeInBytes rounds up to 4 bytes (a 3 x 1 x 1 x 2
    # filter of 6 bytes needs a binding of 8)
    bindings = (ones, upload(xzp), upload(w), filter_ones, upload(wzp), None, ones, None)
    return Lowered("device", tuple(desc.output_tensor.sizes), np.dtype(np.int32), op, bindings)


# ---- elementwise ---------------------------------------------------------------------------------

def _add_arithmetic(n: Node, a_shape: tuple, b_shape: tuple) -> str:
    """Which of onnxruntime's QLinearAdd loops computes the node, in the order its broadcaster asks:
    A a single value (its term folded into the offset once, the roles swapped; also where both are
    single values), B a single value, or both spans of one shape. Other broadcasts (a per-channel
    constant, say) walk spans of mixed kinds there: refused."""
    if int(np.prod(a_shape)) == 1:
        return "onnxruntime-scalar-a"
    if int(np.prod(b_shape)) == 1:
        return "onnxruntime-scalar-b"
    if tuple(a_shape) == tuple(b_shape):
        return "onnxruntime"
    raise refused(n, f"QLinearAdd of shapes {tuple(a_shape)} and {tuple(b_shape)} (equal shapes, or one a "
                      f"single value)")


def _broadcast(shape: tuple, out: tuple) -> tuple:
    """Element strides that read a packed tensor of `shape` at the output's sizes (0 on broadcast axes)."""
    shape = (1,) * (len(out) - len(shape)) + tuple(shape)
    strides, acc = [0] * len(out), 1
    for k in range(len(out) - 1, -1, -1):
        strides[k] = acc if shape[k] != 1 else 0
        acc *= shape[k]
    return tuple(strides)


def _qlinear_add_desc(n: Node, ctx: Context):
    (a_shape, a_dt), (b_shape, b_dt) = ctx.input(n, 0), ctx.input(n, 3)
    zps = [ctx.graph.consts[n.inputs[k]] for k in (2, 5, 7)]
    if not (np.dtype(a_dt) == np.dtype(b_dt) == zps[0].dtype == zps[1].dtype == zps[2].dtype) \
            or np.dtype(a_dt) not in (np.uint8, np.int8):
        raise refused(n, f"{n.op} of types {np.dtype(a_dt)} and {np.dtype(b_dt)} (one 8-bit type, as its "
                          f"zero points)")
    arithmetic = "onnxruntime-mul" if n.op == "QLinearMul" else _add_arithmetic(n, a_shape, b_shape)
    try:
        out = tuple(np.broadcast_shapes(tuple(a_shape), tuple(b_shape)))
    except ValueError:
        raise refused(n, f"{n.op} of shapes {tuple(a_shape)} and {tuple(b_shape)}") from None
    if not 1 <= len(out) <= 8:
        raise refused(n, f"{n.op} of rank {len(out)} (1 to 8)")
    t = DataType.from_numpy(np.dtype(a_dt))
    one = lambda dt: TensorDesc(dt, (1,) * len(out), flags=TensorFlags.OWNED_BY_DML)
    return described(n, lambda: ElementWiseQuantizedLinearAddDesc(
        TensorDesc(t, out, _broadcast(a_shape, out)), one(DataType.FLOAT32), one(t),
        TensorDesc(t, out, _broadcast(b_shape, out)), one(DataType.FLOAT32), one(t), one(DataType.FLOAT32), one(t),
        TensorDesc(t, out), arithmetic))


def _check_qlinear_add(n: Node, graph: Graph) -> List[str]:
    missing = [k for k in (1, 2, 4, 5, 6, 7) if not n.input(k) or n.inputs[k] not in graph.consts]
    if missing:
        return [f"{n.name}: {n.op} input {missing[0]} must be a constant (initializer)"]
    if any(graph.consts[n.inputs[k]].size != 1 for k in (1, 2, 4, 5, 6, 7)):
        return [f"{n.name}: {n.op} with scales or zero points of more than one value"]
    return []


def _infer_qlinear_add(n: Node, ctx: Context) -> tuple:
    out = _qlinear_add_desc(n, ctx).output_tensor
    return tuple(out.sizes), np.dtype(out.data_type.numpy_dtype)


def _lower_qlinear_add(n: Node, ctx: Context) -> Lowered:
    """QLinearAdd with onnxruntime's arithmetic: input B a constant (uploaded once) or a tensor of the
    graph; the scales and zero points OWNED_BY_DML."""
    desc = _qlinear_add_desc(n, ctx)
    op = described(n, lambda: ctx.device.create_operator(desc))
    consts = ctx.graph.consts
    raw = [None] + [small_tensor_bytes(np.asarray(consts[n.inputs[k]], np.float32 if k in (1, 4, 6) else None))
                    for k in (1, 2)] + [None] + \
        [small_tensor_bytes(np.asarray(consts[n.inputs[k]], np.float32 if k in (1, 4, 6) else None))
         for k in (4, 5, 6, 7)]
    op.initialize([a if i not in (0, 3) else None for i, a in enumerate(raw)])
    b = consts.get(n.inputs[3])
    b_binding = TensorRef(n.inputs[3]) if b is None else ctx.device.upload(small_tensor_bytes(b))
    out = op.output_descs[0]
    return Lowered("device", tuple(out.sizes), np.dtype(out.data_type.numpy_dtype), op,
                   (None, None, b_binding, None, None, None, None))


# ---- depth and space ----------------------------------------------------------------------------

def _check_space_to_depth(n: Node, graph: Graph) -> List[str]:
    mode = n.attr("mode", "DCR")
    return [] if mode == "DCR" else [f"{n.name}: SpaceToDepth mode {n.attrs['mode']!r}"]


def _depth_space_desc(n: Node, ctx: Context):
    shape, dt = ctx.input(n)
    if n.op == "DepthToSpace":
        desc_cls, order = DepthToSpace1Desc, described(n, lambda: DepthSpaceOrder.parse(n.attr("mode", "DCR")))
    else:
        desc_cls, order = SpaceToDepth1Desc, DepthSpaceOrder.DEPTH_COLUMN_ROW
    return described(n, lambda: desc_cls.of(TensorDesc(DataType.from_numpy(dt), shape), int(n.attrs["blocksize"]),
                                             order))


def _infer_depth_space(n: Node, ctx: Context) -> tuple:
    return tuple(_depth_space_desc(n, ctx).output_tensor.sizes), np.dtype(ctx.input(n)[1])


def _lower_depth_space(n: Node, ctx: Context) -> Lowered:
    desc = _depth_space_desc(n, ctx)
    return Lowered("device", tuple(desc.output_tensor.sizes), np.dtype(ctx.input(n)[1]),
                   described(n, lambda: ctx.device.operator(desc)))


# ---- quantization -------------------------------------------------------------------------------

def _infer_qdq(n: Node, ctx: Context) -> tuple:
    shape, _ = ctx.input(n)
    zp = ctx.graph.const(n.input(2))
    if n.op != "QuantizeLinear":
        return tuple(shape), np.dtype(np.float32)
    return tuple(shape), np.dtype(np.uint8) if zp is None else np.dtype(zp.dtype)


def _lower_qdq(n: Node, ctx: Context) -> Lowered:
    """On the device between float32 and 8 bits (QuantizeLinear where the device has double-precision
    division, ops.quantize), else on the host with ONNX Runtime's arithmetic; DequantizeLinear+Clip
    then clips, min(max(y, lo), hi), as ONNX Runtime's float Clip."""
    quantize = n.op == "QuantizeLinear"
    clip = n.attrs.get("clip")
    shape, x_dt = ctx.input(n)
    scale, zp = ctx.graph.consts[n.inputs[1]], ctx.graph.const(n.input(2))
    out_dt = _infer_qdq(n, ctx)[1]
    q_dt, f_dt = (out_dt, x_dt) if quantize else (x_dt, out_dt)
    axis = int(n.attrs.get("axis", 1))
    on_device = (not ctx.host_quantization and np.dtype(q_dt) in (np.uint8, np.int8) and np.dtype(f_dt) == np.float32
                 and len(shape) > 0 and QuantizeLinearDesc.runs_on(ctx.device.capabilities, quantize)
                 and (scale.size == 1 or shape[axis % len(shape)] == scale.size))
    if not on_device:
        fn = quantize_linear if quantize else dequantize_linear
        if clip is not None:
            lo, hi = np.float32(clip[0]), np.float32(clip[1])
            return Lowered("host", tuple(shape), np.dtype(out_dt), compute=lambda x: np.minimum(
                np.maximum(fn(x, scale, zp, axis=axis), lo), hi))
        return Lowered("host", tuple(shape), np.dtype(out_dt), compute=lambda x: fn(x, scale, zp, axis=axis))
    desc = QuantizeLinearDesc(quantize, tuple(shape), np.dtype(q_dt), axis % len(shape) if scale.size > 1 else None,
                              None if clip is None else tuple(clip))
    return Lowered("device", tuple(shape), np.dtype(out_dt), ctx.device.operator(desc),
                   (ctx.device.upload(desc.params(scale, zp)),))


# ---- views --------------------------------------------------------------------------------------

def _view(shape_of: Callable[[Node, tuple, Graph], tuple], **entry) -> Lowering:
    """The entry of an op that re-views its input: shape_of(node, input shape, graph) -> its output's."""
    def infer(n: Node, ctx: Context) -> tuple:
        shape, dt = ctx.input(n)
        return tuple(shape_of(n, tuple(shape), ctx.graph)), np.dtype(dt)

    return Lowering(infer, lambda n, ctx: Lowered("view", *infer(n, ctx)), layout=True, **entry)


def _reshaped(n: Node, shape: tuple, graph: Graph) -> tuple:
    target = [int(v) for v in graph.consts[n.inputs[1]].reshape(-1)]
    out = [shape[i] if v == 0 and not n.attrs.get("allowzero", 0) else v for i, v in enumerate(target)]
    if -1 in out:
        known = int(np.prod([v for v in out if v != -1]))
        out[out.index(-1)] = int(np.prod(shape)) // max(known, 1)
    if int(np.prod(out)) != int(np.prod(shape)):
        raise refused(n, f"Reshape of {tuple(shape)} to {tuple(target)}")
    return tuple(out)


def _flattened(n: Node, shape: tuple, graph: Graph) -> tuple:
    axis = int(n.attrs.get("axis", 1)) % max(len(shape), 1)
    return (int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))


def _axes(n: Node, graph: Graph) -> Optional[list]:
    """Squeeze / Unsqueeze axes: the attribute (before opset 13) or the constant input 1."""
    if n.input(1):
        return [int(a) for a in graph.consts[n.inputs[1]].reshape(-1)]
    return None if "axes" not in n.attrs else [int(a) for a in n.attrs["axes"]]


def _squeezed(n: Node, shape: tuple, graph: Graph) -> tuple:
    axes = _axes(n, graph)
    if axes is None:
        return tuple(s for s in shape if s != 1)
    given, rank = axes, len(shape)
    axes = {a % rank for a in given if -rank <= a < rank}
    if any(shape[a] != 1 for a in axes) or len(axes) != len(given):
        raise refused(n, f"Squeeze of axes {_axes(n, graph)} of a tensor of shape {shape}")
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _unsqueezed(n: Node, shape: tuple, graph: Graph) -> tuple:
    axes, rank = _axes(n, graph), len(shape) + len(_axes(n, graph) or [])
    if not axes or len({a % rank for a in axes}) != len(axes) or any(not -rank <= a < rank for a in axes):
        raise refused(n, f"Unsqueeze of axes {axes} of a tensor of shape {shape}")
    out, rest = [], iter(shape)
    wanted = {a % rank for a in axes}
    for i in range(rank):
        out.append(1 if i in wanted else next(rest))
    return tuple(out)


def _check_axes(n: Node, graph: Graph) -> List[str]:
    if n.input(1) and n.inputs[1] not in graph.consts:
        return [f"{n.name}: {n.op} needs constant axes"]
    if n.op == "Unsqueeze" and not _axes(n, graph):
        return [f"{n.name}: Unsqueeze without axes"]
    return []


def _check_reshape(n: Node, graph: Graph) -> List[str]:
    return [] if n.input(1) in graph.consts else [f"{n.name}: Reshape needs a constant shape"]


_VIEW = "a view: the same bytes in another shape"
LOWERINGS: Dict[str, Lowering] = {
    "QLinearConv": Lowering(_infer_qlinearconv, _lower_qlinearconv, _check_conv,
                            runs="QUANTIZED_LINEAR_CONVOLUTION on the device (2-D, 8-bit, per-tensor or per-channel "
                                 "filter parameters)"),
    "QLinearAdd": Lowering(_infer_qlinear_add, _lower_qlinear_add, _check_qlinear_add,
                           runs="ELEMENT_WISE_QUANTIZED_LINEAR_ADD's kernel on the device with onnxruntime's "
                                "arithmetic (x86 with AVX2 and FMA): per-tensor parameters, equal shapes or one "
                                "input a single value (a DequantizeLinear pair -> Add -> QuantizeLinear group "
                                "fused into it first)"),
    "QLinearMul": Lowering(_infer_qlinear_add, _lower_qlinear_add, _check_qlinear_add,
                           runs="ELEMENT_WISE_QUANTIZED_LINEAR_ADD's kernel on the device over a table of "
                                "onnxruntime's QLinearMul arithmetic (x86): per-tensor parameters, any "
                                "broadcast (a DequantizeLinear pair -> Mul -> QuantizeLinear group fused into "
                                "it first)"),
    "QLinearConcat": Lowering(moves.infer_concat, moves.lower_concat,
                              runs="a move of each input into its slice of the output on the device, through "
                                   "onnxruntime's requantization table where its scale or zero point differs "
                                   "from the output's (a DequantizeLinear per input -> Concat -> QuantizeLinear "
                                   "group fused into it first)"),
    "QLinearLeakyRelu": Lowering(moves.infer_elementwise, moves.lower_leaky_relu,
                                 runs="onnxruntime's 256-entry table on the device (a DequantizeLinear -> "
                                      "LeakyRelu -> QuantizeLinear group fused into it first)"),
    "QLinearPRelu": Lowering(moves.infer_elementwise, moves.lower_prelu,
                             runs="a 256-entry table per slope value on the device, onnxruntime's DequantizeLinear "
                                  "-> PRelu -> QuantizeLinear in float32 (such a group fused into it first; one "
                                  "slope, or one per channel of an axis)"),
    "Tile": Lowering(moves.infer_tile, moves.lower_tile, moves.check_tile, layout=True,
                     runs="a move of 8-bit elements on the device (constant repeats; a DequantizeLinear before it "
                          "moved after it)"),
    "Resize": Lowering(moves.infer_resize, moves.lower_resize, moves.check_resize, layout=moves.resize_moves_data,
                       runs="a move of 8-bit elements on the device: nearest, each element repeated a whole number "
                            "of times on each axis as onnxruntime picks them (any coordinate transformation and "
                            "nearest mode; constant scales or sizes)"),
    "ConvInteger": Lowering(_infer_conv_integer, _lower_conv_integer, _check_conv,
                            runs="QUANTIZED_LINEAR_CONVOLUTION's int32 accumulator on the device"),
    "DepthToSpace": Lowering(_infer_depth_space, _lower_depth_space, layout=True,
                             runs="DEPTH_TO_SPACE1 on the device (DCR, CRD)"),
    "SpaceToDepth": Lowering(_infer_depth_space, _lower_depth_space, _check_space_to_depth, layout=True,
                             runs="SPACE_TO_DEPTH1 on the device (DCR)"),
    "QuantizeLinear": Lowering(_infer_qdq, _lower_qdq, constant_inputs((1, 2)),
                               runs="float32 to 8 bits on the device where it has shaderFloat64, else on the host "
                                    "(constant parameters, per tensor or per axis)"),
    "DequantizeLinear": Lowering(_infer_qdq, _lower_qdq, constant_inputs((1, 2)),
                                 runs="8 bits to float32 on the device (constant parameters, per tensor or per axis)"),
    "Identity": _view(lambda n, shape, g: shape, runs=_VIEW),
    "Reshape": _view(_reshaped, check=_check_reshape, runs=_VIEW + " (a constant shape)"),
    "Flatten": _view(_flattened, runs=_VIEW),
    "Squeeze": _view(_squeezed, check=_check_axes, runs=_VIEW + " (constant axes)"),
    "Unsqueeze": _view(_unsqueezed, check=_check_axes, runs=_VIEW + " (constant axes)"),
    "DequantizeLinear+Clip": Lowering(_infer_qdq, _lower_qdq, fuses=("DequantizeLinear", "Clip"),
                                      runs="DequantizeLinear's kernel on the device with the Clip's "
                                           "min(max(y, lo), hi) after it (constant bounds; a Clip of the "
                                           "float output, read by nothing else)"),
    pixels.TO_QUANTIZED: Lowering(moves.infer_table, moves.lower_table, fuses=("QuantizeLinear",),
                                  runs="a 256-entry table on the device: uint8 pixels p to the model's "
                                       "QuantizeLinear of p / 255 (InferenceSession(inputs='pixels'), where that "
                                       "is not the identity)"),
    pixels.TO_PIXELS: Lowering(moves.infer_table, moves.lower_table, fuses=("DequantizeLinear", "Clip"),
                               runs="a 256-entry table on the device: the model's DequantizeLinear (and Clip) "
                                    "of an 8-bit output as uint8 pixels (InferenceSession(outputs='pixels'), "
                                    "where that is not the identity)"),
    pixels.TO_FLOAT16: Lowering(moves.infer_table, moves.lower_table, fuses=("DequantizeLinear", "Clip"),
                                runs="a table of 256 float16 values on the device: the model's DequantizeLinear "
                                     "(and Clip) of an 8-bit output rounded to float16 "
                                     "(InferenceSession(outputs='float16'))"),
    DEQUANTIZED_CONV: Lowering(_infer_dequantized_conv, _lower_dequantized_conv,
                               fuses=("QLinearConv", "DepthToSpace", "DequantizeLinear"),
                               runs="one QUANTIZED_LINEAR_CONVOLUTION kernel whose epilogue also does the "
                                    "DepthToSpace (DCR or CRD, or none) and the per-tensor DequantizeLinear to "
                                    "float32 after it, where the convolution's kernel allows (the convolution's "
                                    "output read by nothing else)"),
}
MODEL_OPS = frozenset(op for op, entry in LOWERINGS.items() if not entry.fuses)
LAYOUT_OPS = frozenset(op for op, entry in LOWERINGS.items() if entry.layout)


def moves_data(n: Node) -> bool:
    """Whether the node only moves or re-views its input's elements (rewrite.commute's question)."""
    entry = LOWERINGS.get(n.op)
    return entry is not None and entry.moves_data(n)


def lower(n: Node, ctx: Context) -> Lowered:
    """The node lowered by its op's entry."""
    return LOWERINGS[n.op].lower(n, ctx)

