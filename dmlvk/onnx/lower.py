"""Lowering: each ONNX op dmlvk runs, as one entry of LOWERINGS {op type: Lowering}. A Lowering checks
a node's form when the model is loaded (messages for what dmlvk cannot run) and lowers it, once the
shapes of its inputs are known, to device work (a compiled operator and the Buffers of its constant
inputs), host work (a function of its first input) or a view (the same bytes, another shape). The
ops a model may contain are the registry's keys (and, before fusion, rewrite.FUSED_OPS). Adding an
op is one entry here plus its tests."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

from ..enums import DataType, DepthSpaceOrder
from ..ops.base import CompiledOperator
from ..ops.depth_space import DepthToSpace1Desc, SpaceToDepth1Desc
from ..ops.quantize import QuantizeLinearDesc
from ..ops.quantized_conv import FILTER_CONSTANTS, QuantizedLinearConvolutionDesc, small_tensor_bytes
from ..ops.quantized_conv import layouts as conv_layouts
from ..runtime.device import Device
from ..tensor import TensorDesc
from .graph import Graph, Node, UnsupportedModelError
from .qdq import dequantize_linear, quantize_linear


@dataclass
class Context:
    """What a lowering sees: the graph, the device, the (shape, dtype) of every tensor lowered so
    far (the inputs fed and the constants included), and whether Q/DQ must stay on the host."""
    graph: Graph
    device: Device
    shapes: Dict[str, tuple]
    host_quantization: bool = False
    layouts: Dict[str, tuple] = field(default_factory=dict)   # strides of tensors planned channels-last
    folded: set = field(default_factory=set)   # outputs an earlier node's kernel computes (their nodes: views)

    def input(self, n: Node, k: int = 0) -> tuple:
        return self.shapes[n.inputs[k]]


@dataclass(frozen=True)
class Lowered:
    """A node lowered: its output's shape and dtype and how it is made. kind "device": op runs with
    the node's input 0 and `bindings` (Buffers of the operator's other inputs, None where absent or
    owned); "host": compute(input 0 as an array) gives the output; "view": input 0's bytes."""
    kind: str
    shape: tuple
    dtype: np.dtype
    op: Optional[CompiledOperator] = None
    bindings: tuple = ()
    compute: Optional[Callable] = None


@dataclass(frozen=True)
class Lowering:
    """An op's entry: check(node, graph) -> messages (empty where dmlvk runs the node);
    lower(node, Context) -> Lowered; layout: a permutation or re-view of its input, so per-tensor
    (de)quantization commutes with it (rewrite.commute); runs: what runs it, in a line
    (docs/onnx-ops.md lists the entries)."""
    lower: Callable[[Node, Context], Lowered]
    check: Callable[[Node, Graph], List[str]] = field(default=lambda n, g: [])
    layout: bool = False
    runs: str = ""


def _constant_inputs(ks) -> Callable[[Node, Graph], List[str]]:
    """A check: inputs ks given (where required) and constants (where given)."""
    def check(n: Node, graph: Graph) -> List[str]:
        for k in ks:
            if n.input(k) and n.input(k) not in graph.consts:
                return [f"{n.name}: {n.op} input {k} must be a constant (initializer)"]
        return []
    return check


def _refused(n: Node, why) -> UnsupportedModelError:
    return UnsupportedModelError(f"{n.name}: {why}")


def _eight_bit_4d(n: Node, ctx: Context) -> tuple:
    shape, dt = ctx.input(n)
    if dt not in (np.uint8, np.int8) or len(shape) != 4:
        raise _refused(n, f"{n.op} input of dtype {dt}, shape {shape}")
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


def _described(n: Node, make):
    """make() with a description's ValidationError (or another ValueError: a device limit, an
    unknown mode) as the node's UnsupportedModelError."""
    try:
        return make()
    except ValueError as e:
        raise _refused(n, e) from None


def _qlinearconv_desc(n: Node, ctx: Context, shape: tuple, dt, in_strides=None, out_strides=None):
    """(description, its constants as the operator binds them) of a QLinearConv node with an input of
    this shape and dtype, the input and output laid out with these strides (None: packed NCHW)."""
    xs, xzp, w, ws, wzp, ys, yzp = (ctx.graph.consts[k] for k in n.inputs[1:8])
    bias = ctx.graph.const(n.input(8))
    m = w.shape[0]
    for name, a, counts in (("x_scale", xs, {1}), ("x_zero_point", xzp, {1}), ("w_scale", ws, {1, m}),
                            ("w_zero_point", wzp, {1, m}), ("y_scale", ys, {1}), ("y_zero_point", yzp, {1}),
                            ("B", bias, {m})):
        if a is not None and a.size not in counts:
            raise _refused(n, f"QLinearConv {name} of {a.size} values ({' or '.join(map(str, sorted(counts)))})")
    if w.dtype not in (np.int8, np.uint8) or wzp.dtype != w.dtype or yzp.dtype not in (np.int8, np.uint8) \
            or (bias is not None and bias.dtype != np.int32):
        raise _refused(n, f"QLinearConv of types w {w.dtype}, w_zero_point {wzp.dtype}, y_zero_point {yzp.dtype}")
    ws, wzp = ws.astype(np.float32).reshape(-1), wzp.reshape(-1)
    if wzp.size != ws.size:       # DirectML wants a zero point of its scale's Sizes
        ws, wzp = np.broadcast_to(ws, (m,)).copy(), np.broadcast_to(wzp, (m,)).copy()
    to_type = DataType.from_numpy
    desc = _described(n, lambda: QuantizedLinearConvolutionDesc.of(
        TensorDesc(to_type(dt), shape, in_strides), TensorDesc(to_type(w.dtype), w.shape), filter_scale_count=ws.size,
        input_zero_point=True, filter_zero_point=True, bias=bias is not None, output_data_type=to_type(yzp.dtype),
        output_zero_point=True, owned_constants=True, **_conv_geometry(n)))
    if out_strides is not None:
        desc = _output_strided(desc, out_strides)
    raw = [None, np.float32(xs.reshape(-1)[0]), xzp.reshape(-1).astype(dt), w, ws, wzp,
           None if bias is None else bias.reshape(-1), np.float32(ys.reshape(-1)[0]), yzp.reshape(-1)]
    return desc, [None if a is None else small_tensor_bytes(a) for a in raw]


def _output_strided(desc, strides):
    """The convolution description with its output laid out with these strides."""
    out = desc.output_tensor
    return dataclasses.replace(desc, output_tensor=TensorDesc(out.data_type, out.sizes, strides))


def _channels_last(sizes) -> tuple:
    n, c, h, w = sizes
    return (h * w * c, 1, w * c, c)


def _plan_channels_last(n: Node, ctx: Context, shape: tuple, dt) -> Optional[tuple]:
    """Channels-last strides for the node's output where that layout serves its one user, a QLinearConv
    (the layout planning DirectML's graph compiler does with intermediate tensors' strides): the user's
    plan gains from reading it (layouts.gains_from_input_layout) and the node's own plan writes it
    alike (layouts.writes_layout_alike). Else None."""
    out = n.outputs[0]
    users = ctx.graph.users(out)
    if len(users) != 1 or users[0].op != "QLinearConv" or out in ctx.graph.output_names or ctx.host_quantization:
        return None
    try:
        mine = _qlinearconv_desc(n, ctx, shape, dt, ctx.layouts.get(n.inputs[0]))[0]   # its input as planned
        sizes = tuple(mine.output_tensor.sizes)
        strides = _channels_last(sizes)
        out_dt = np.dtype(mine.output_tensor.data_type.numpy_dtype)
        user_before = _qlinearconv_desc(users[0], ctx, sizes, out_dt)[0]
        user_after = _qlinearconv_desc(users[0], ctx, sizes, out_dt, in_strides=strides)[0]
    except (ValueError, UnsupportedModelError, KeyError):
        return None
    if (conv_layouts.gains_from_input_layout(user_before, user_after, ctx.device)
            and conv_layouts.writes_layout_alike(mine, _output_strided(mine, strides), ctx.device)):
        return strides
    return None


def _dequantized_tail(n: Node, ctx: Context) -> Optional[tuple]:
    """(nodes, (block, crd, scale, zero point)) where the node's output goes on, read by nothing else
    and no graph output, through a DepthToSpace (DCR or CRD; or none: block 1) to a per-tensor
    DequantizeLinear to float32 on the device: what conv.dot.float folds into the convolution's
    epilogue (QuantizedLinearConvolutionDesc.compile_dequantized). Else None."""
    graph = ctx.graph

    def only_user(name: str) -> Optional[Node]:
        users = graph.users(name)
        return users[0] if len(users) == 1 and name not in graph.output_names else None

    nodes, block, crd = [], 1, False
    user = only_user(n.outputs[0])
    if user is not None and user.op == "DepthToSpace" and user.attr("mode", "DCR") in ("DCR", "CRD"):
        nodes, block, crd = [user], int(user.attrs["blocksize"]), user.attr("mode", "DCR") == "CRD"
        user = only_user(user.outputs[0])
    if user is None or user.op != "DequantizeLinear" or ctx.host_quantization:
        return None
    scale, zp = graph.consts.get(user.inputs[1]), graph.const(user.input(2))
    if scale is None or scale.size != 1 or scale.dtype != np.float32 or (zp is not None and zp.size != 1):
        return None
    return nodes + [user], (block, crd, np.float32(scale.reshape(-1)[0]), 0 if zp is None else int(zp.reshape(-1)[0]))


def _constant_bindings(op, raw: list, ctx: Context, owned=FILTER_CONSTANTS) -> tuple:
    """Initializes op with its owned constants (raw[i] for the slots i in owned) and uploads the rest
    once: the Buffers it binds past its input (None where absent)."""
    op.initialize([a if i in owned else None for i, a in enumerate(raw)])
    return tuple(None if a is None or i in owned else ctx.device.upload(a) for i, a in enumerate(raw))[1:]


def _lower_qlinearconv(n: Node, ctx: Context) -> Lowered:
    shape, dt = _eight_bit_4d(n, ctx)
    out_strides = _plan_channels_last(n, ctx, shape, dt)
    desc, raw = _qlinearconv_desc(n, ctx, shape, dt, ctx.layouts.get(n.inputs[0]), out_strides)
    if out_strides is not None:
        ctx.layouts[n.outputs[0]] = out_strides
    tail = _dequantized_tail(n, ctx)
    op = None if tail is None else _described(n, lambda: desc.compile_dequantized(ctx.device, tail[1]))
    if op is not None:               # the DepthToSpace and DequantizeLinear nodes: views of its output
        ctx.folded.update(t.outputs[0] for t in tail[0])
    else:
        op = _described(n, lambda: ctx.device.create_operator(desc))
    # The weights are constants: OWNED_BY_DML, bound once, here.
    out = op.output_descs[0]
    return Lowered("device", tuple(out.sizes), np.dtype(out.data_type.numpy_dtype), op,
                   _constant_bindings(op, raw, ctx))


def _lower_conv_integer(n: Node, ctx: Context) -> Lowered:
    shape, dt = _eight_bit_4d(n, ctx)
    w = ctx.graph.consts[n.inputs[1]]
    xzp, wzp = ctx.graph.const(n.input(2)), ctx.graph.const(n.input(3))
    per_channel = wzp is not None and wzp.size > 1
    to_type = DataType.from_numpy
    desc = _described(n, lambda: QuantizedLinearConvolutionDesc.of(
        TensorDesc(to_type(dt), shape), TensorDesc(to_type(w.dtype), w.shape),
        filter_scale_count=w.shape[0] if per_channel else 1, input_zero_point=xzp is not None,
        filter_zero_point=wzp is not None, int32_output=True, **_conv_geometry(n)))
    dev = ctx.device
    op = _described(n, lambda: dev.operator(desc))
    upload = lambda a: None if a is None else dev.upload(small_tensor_bytes(a))
    ones = upload(np.float32([1.0]))                 # the scales the layout requires, unused
    filter_ones = upload(np.ones(w.shape[0] if per_channel else 1, np.float32))
    # the filter too is padded: a tensor's TotalTensorSizeInBytes rounds up to 4 bytes (a 3 x 1 x 1 x 2
    # filter of 6 bytes needs a binding of 8)
    bindings = (ones, upload(xzp), upload(w), filter_ones, upload(wzp), None, ones, None)
    return Lowered("device", tuple(desc.output_tensor.sizes), np.dtype(np.int32), op, bindings)


# ---- depth and space ----------------------------------------------------------------------------

def _check_space_to_depth(n: Node, graph: Graph) -> List[str]:
    mode = n.attr("mode", "DCR")
    return [] if mode == "DCR" else [f"{n.name}: SpaceToDepth mode {n.attrs['mode']!r}"]


def _lower_depth_space(n: Node, ctx: Context) -> Lowered:
    shape, dt = ctx.input(n)
    if n.op == "DepthToSpace":
        desc_cls, order = DepthToSpace1Desc, _described(n, lambda: DepthSpaceOrder.parse(n.attr("mode", "DCR")))
    else:
        desc_cls, order = SpaceToDepth1Desc, DepthSpaceOrder.DEPTH_COLUMN_ROW
    desc = _described(n, lambda: desc_cls.of(TensorDesc(DataType.from_numpy(dt), shape), int(n.attrs["blocksize"]),
                                             order))
    return Lowered("device", tuple(desc.output_tensor.sizes), np.dtype(dt), _described(n, lambda: ctx.device.operator(desc)))


# ---- quantization -------------------------------------------------------------------------------

def _lower_qdq(n: Node, ctx: Context) -> Lowered:
    """On the device between float32 and 8 bits (QuantizeLinear where the device has double-precision
    division, ops.quantize), else on the host with ONNX Runtime's arithmetic."""
    quantize = n.op == "QuantizeLinear"
    shape, x_dt = ctx.input(n)
    scale, zp = ctx.graph.consts[n.inputs[1]], ctx.graph.const(n.input(2))
    out_dt = (np.dtype(np.uint8) if zp is None else zp.dtype) if quantize else np.dtype(np.float32)
    q_dt, f_dt = (out_dt, x_dt) if quantize else (x_dt, out_dt)
    axis = int(n.attrs.get("axis", 1))
    on_device = (not ctx.host_quantization and np.dtype(q_dt) in (np.uint8, np.int8) and np.dtype(f_dt) == np.float32
                 and len(shape) > 0 and QuantizeLinearDesc.runs_on(ctx.device.capabilities, quantize)
                 and (scale.size == 1 or shape[axis % len(shape)] == scale.size))
    if not on_device:
        fn = quantize_linear if quantize else dequantize_linear
        return Lowered("host", tuple(shape), np.dtype(out_dt), compute=lambda x: fn(x, scale, zp, axis=axis))
    desc = QuantizeLinearDesc(quantize, tuple(shape), np.dtype(q_dt), axis % len(shape) if scale.size > 1 else None)
    return Lowered("device", tuple(shape), np.dtype(out_dt), ctx.device.operator(desc),
                   (ctx.device.upload(desc.params(scale, zp)),))


# ---- views --------------------------------------------------------------------------------------

def _view(shape_of: Callable[[Node, tuple, Graph], tuple]) -> Callable[[Node, Context], Lowered]:
    def lower(n: Node, ctx: Context) -> Lowered:
        shape, dt = ctx.input(n)
        return Lowered("view", tuple(shape_of(n, tuple(shape), ctx.graph)), np.dtype(dt))
    return lower


def _reshaped(n: Node, shape: tuple, graph: Graph) -> tuple:
    target = [int(v) for v in graph.consts[n.inputs[1]].reshape(-1)]
    out = [shape[i] if v == 0 and not n.attrs.get("allowzero", 0) else v for i, v in enumerate(target)]
    if -1 in out:
        known = int(np.prod([v for v in out if v != -1]))
        out[out.index(-1)] = int(np.prod(shape)) // max(known, 1)
    if int(np.prod(out)) != int(np.prod(shape)):
        raise _refused(n, f"Reshape of {tuple(shape)} to {tuple(target)}")
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
    axes = {a % len(shape) for a in axes} if shape else set()
    if any(shape[a] != 1 for a in axes) or len(axes) != len(_axes(n, graph)):
        raise _refused(n, f"Squeeze of axes {_axes(n, graph)} of a tensor of shape {shape}")
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _unsqueezed(n: Node, shape: tuple, graph: Graph) -> tuple:
    axes, rank = _axes(n, graph), len(shape) + len(_axes(n, graph) or [])
    if not axes or len({a % rank for a in axes}) != len(axes) or any(not -rank <= a < rank for a in axes):
        raise _refused(n, f"Unsqueeze of axes {axes} of a tensor of shape {shape}")
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
    "QLinearConv": Lowering(_lower_qlinearconv, _check_conv,
                            runs="QUANTIZED_LINEAR_CONVOLUTION on the device (2-D, 8-bit, per-tensor or per-channel "
                                 "filter parameters; a following DepthToSpace and DequantizeLinear folded into it "
                                 "where its kernel allows)"),
    "ConvInteger": Lowering(_lower_conv_integer, _check_conv,
                            runs="QUANTIZED_LINEAR_CONVOLUTION's int32 accumulator on the device"),
    "DepthToSpace": Lowering(_lower_depth_space, layout=True, runs="DEPTH_TO_SPACE1 on the device (DCR, CRD)"),
    "SpaceToDepth": Lowering(_lower_depth_space, _check_space_to_depth, layout=True,
                             runs="SPACE_TO_DEPTH1 on the device (DCR)"),
    "QuantizeLinear": Lowering(_lower_qdq, _constant_inputs((1, 2)),
                               runs="float32 to 8 bits on the device where it has shaderFloat64, else on the host "
                                    "(constant parameters, per tensor or per axis)"),
    "DequantizeLinear": Lowering(_lower_qdq, _constant_inputs((1, 2)),
                                 runs="8 bits to float32 on the device (constant parameters, per tensor or per axis)"),
    "Identity": Lowering(_view(lambda n, shape, g: shape), layout=True, runs=_VIEW),
    "Reshape": Lowering(_view(_reshaped), _check_reshape, layout=True, runs=_VIEW + " (a constant shape)"),
    "Flatten": Lowering(_view(_flattened), layout=True, runs=_VIEW),
    "Squeeze": Lowering(_view(_squeezed), _check_axes, layout=True, runs=_VIEW + " (constant axes)"),
    "Unsqueeze": Lowering(_view(_unsqueezed), _check_axes, layout=True, runs=_VIEW + " (constant axes)"),
}
LAYOUT_OPS = frozenset(op for op, entry in LOWERINGS.items() if entry.layout)


def lower(n: Node, ctx: Context) -> Lowered:
    """The node lowered by its op's entry, or, where an earlier node's kernel computed its output too
    (Context.folded), as a view of its input (which that kernel made in the output's shape and type)."""
    if n.outputs[0] in ctx.folded:
        shape, dt = ctx.input(n)
        return Lowered("view", tuple(shape), np.dtype(dt))
    return LOWERINGS[n.op].lower(n, ctx)


def check(graph: Graph) -> List[str]:
    """The forms of the nodes that their lowerings refuse, as messages (nodes of other op types are
    left to the caller)."""
    return [m for n in graph.nodes if n.op in LOWERINGS for m in LOWERINGS[n.op].check(n, graph)]
