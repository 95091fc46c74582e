"""Lowerings of the ops that move 8-bit elements or map them one by one (ops/lookup.py's kernel):
Tile and nearest Resize by whole factors (moves: after rewrite.commute they see the quantized
tensor, as onnxruntime drops their DequantizeLinear/QuantizeLinear pairs), and the fused QDQ nodes
QLinearConcat, QLinearLeakyRelu and QLinearPRelu (rewrite.fuse_qdq_lookups), whose tables follow
onnxruntime's CPU arithmetic (spec zoo 10.4-10.7)."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from ..ops.lookup import IDENTITY, LookupDesc, dequantized_bytes, move, onnxruntime_quantize
from ..ops.quantized_conv import small_tensor_bytes
from ..tensor import packed_strides
from .graph import Graph, Node
from .lowering import Context, Lowered, TensorRef, described, refused

MAX_DIMS = 8


def _eight_bit(n: Node, ctx: Context, k: int = 0) -> tuple:
    shape, dt = ctx.input(n, k)
    if np.dtype(dt) not in (np.uint8, np.int8):
        raise refused(n, f"{n.op} of {np.dtype(dt)} (dmlvk moves 8-bit tensors: the model's DequantizeLinear "
                         f"must come after it)")
    return tuple(shape), np.dtype(dt)


def _lowered(n: Node, ctx: Context, desc: LookupDesc, shape: tuple, dtype, others: List[str]) -> Lowered:
    """The lookup operator over node input 0 and `others` (graph tensors, or constants uploaded once)."""
    op = described(n, lambda: ctx.device.create_operator(desc))
    consts = ctx.graph.consts
    bindings = [TensorRef(k) if k not in consts else ctx.device.upload(small_tensor_bytes(consts[k])) for k in others]
    return Lowered("device", tuple(shape), np.dtype(dtype), op, tuple(bindings))


def _repeat_part(n: Node, shape: tuple, repeats: List[int], out_shape: tuple, inner: List[bool]):
    """The move of a packed tensor of `shape` to out_shape where axis d repeats each element (inner)
    or the whole axis (not inner) repeats[d] times: each such axis split in two, the repeat read with
    stride 0."""
    strides = packed_strides(shape)
    sizes, ins = [], []
    for d, (s, r) in enumerate(zip(shape, repeats)):
        if r == 1:
            sizes.append(s), ins.append(strides[d])
        elif inner[d]:
            sizes += [s, r]
            ins += [strides[d], 0]
        else:
            sizes += [r, s]
            ins += [0, strides[d]]
    if len(sizes) > MAX_DIMS:
        raise refused(n, f"{n.op} of shape {shape} to {out_shape} ({MAX_DIMS} dimensions once split)")
    return move(sizes, ins)


# ---- Tile ---------------------------------------------------------------------------------------

def _repeats(n: Node, ctx: Context, shape: tuple) -> List[int]:
    r = [int(v) for v in ctx.graph.consts[n.inputs[1]].reshape(-1)]
    if len(r) != len(shape) or any(v < 1 for v in r):
        raise refused(n, f"Tile of shape {shape} by repeats {r}")
    return r


def infer_tile(n: Node, ctx: Context) -> tuple:
    shape, dt = ctx.input(n)
    return tuple(s * r for s, r in zip(shape, _repeats(n, ctx, tuple(shape)))), np.dtype(dt)


def lower_tile(n: Node, ctx: Context) -> Lowered:
    shape, dt = _eight_bit(n, ctx)
    repeats = _repeats(n, ctx, shape)
    out = tuple(s * r for s, r in zip(shape, repeats))
    part = _repeat_part(n, shape, repeats, out, [False] * len(shape))
    return _lowered(n, ctx, LookupDesc((part,), (dt,), dt, out), out, dt, [])


def check_tile(n: Node, graph: Graph) -> List[str]:
    return [] if n.input(1) in graph.consts else [f"{n.name}: Tile needs constant repeats"]


# ---- Resize ----------------------------------------------------------------------------------------

def _resize_inputs(n: Node, graph: Graph) -> tuple:
    """(scales, sizes) constants of a Resize (opset 10: scales as input 1)."""
    if len(n.inputs) == 2:
        return graph.const(n.input(1)), None
    return graph.const(n.input(2)), graph.const(n.input(3))


def check_resize(n: Node, graph: Graph) -> List[str]:
    scales, sizes = _resize_inputs(n, graph)
    if n.attr("mode", "nearest") != "nearest":
        return [f"{n.name}: Resize mode {n.attr('mode')!r} (nearest only)"]
    if (scales is None or scales.size == 0) and sizes is None:
        return [f"{n.name}: Resize needs constant scales or sizes"]
    return []


def nearest_sources(in_len: int, out_len: int, scale: np.float32, mode: str, nearest: str) -> np.ndarray:
    """The input index of each output index on one axis, as onnxruntime's nearest Resize computes it
    in float32 (spec zoo 10.7): equal to the installed onnxruntime's wherever the output is a whole
    multiple of the input (tests/test_onnx_zoo.py), the only resizes the device runs. Not every
    other ratio: at coordinates within a rounding of a tie onnxruntime's pick differs. The deprecated
    tf_half_pixel_for_nn is refused (onnxruntime leaves a factor of 1 alone, which its formula does
    not)."""
    f32 = np.float32
    x = np.arange(out_len, dtype=f32)
    with np.errstate(all="ignore"):
        if mode == "asymmetric":
            c = x / scale
        elif mode == "align_corners":
            c = np.zeros(out_len, f32) if out_len == 1 else x * f32(in_len - 1) / f32(out_len - 1)
        elif mode == "pytorch_half_pixel" and out_len == 1:
            c = np.zeros(1, f32)
        elif mode in ("half_pixel", "pytorch_half_pixel"):
            c = (x + f32(0.5)) / scale - f32(0.5)
        else:
            raise ValueError(f"coordinate_transformation_mode {mode!r}")
    c = c.astype(f32)
    whole = np.trunc(c)
    away = whole + np.where(np.abs(c - whole) >= f32(0.5), np.sign(c), f32(0))      # std::round
    if nearest == "round_prefer_floor":
        pick = np.where(c == np.floor(c) + f32(0.5), np.floor(c), away)
    elif nearest == "round_prefer_ceil":
        pick = away
    elif nearest == "floor":
        pick = np.floor(c)
    elif nearest == "ceil":
        pick = np.ceil(c)
    else:
        raise ValueError(f"nearest_mode {nearest!r}")
    return np.clip(pick, 0, in_len - 1).astype(np.int64)


def _resize_plan(n: Node, ctx: Context, shape: tuple) -> tuple:
    """(output shape, per-axis whole factors) of a nearest Resize whose every axis repeats each input
    element a whole number of times (onnxruntime's index choice, checked on every output index)."""
    scales, sizes = _resize_inputs(n, ctx.graph)
    if sizes is not None and sizes.size:
        out = tuple(int(v) for v in sizes.reshape(-1))
        axis_scales = [np.float32(o) / np.float32(i) for o, i in zip(out, shape)]
    else:
        axis_scales = [np.float32(v) for v in scales.reshape(-1)]
        out = tuple(int(np.floor(np.float32(s) * np.float32(i))) for s, i in zip(axis_scales, shape))
    if len(out) != len(shape) or any(o < 1 for o in out):
        raise refused(n, f"Resize of shape {shape} to {out}")
    mode = n.attr("coordinate_transformation_mode", "half_pixel")
    nearest = n.attr("nearest_mode", "round_prefer_floor")
    factors = []
    for i, o, s in zip(shape, out, axis_scales):
        f = o // i
        try:
            src = nearest_sources(i, o, s, mode, nearest)
        except ValueError as e:
            raise refused(n, f"Resize {e}") from None
        if o % i or not np.array_equal(src, np.repeat(np.arange(i), f)):
            raise refused(n, f"Resize of {i} to {o} ({mode}, {nearest}): the device runs nearest resizes that "
                             f"repeat each element a whole number of times")
        factors.append(f)
    return out, factors


def infer_resize(n: Node, ctx: Context) -> tuple:
    shape, dt = ctx.input(n)
    return _resize_plan(n, ctx, tuple(shape))[0], np.dtype(dt)


def lower_resize(n: Node, ctx: Context) -> Lowered:
    shape, dt = _eight_bit(n, ctx)
    out, factors = _resize_plan(n, ctx, shape)
    part = _repeat_part(n, shape, factors, out, [True] * len(shape))
    return _lowered(n, ctx, LookupDesc((part,), (dt,), dt, out), out, dt, [])


def resize_moves_data(n: Node) -> bool:
    return n.attr("mode", "nearest") == "nearest"


# ---- the fused QDQ nodes ----------------------------------------------------------------------

def _scalar(graph: Graph, name: str):
    return graph.consts[name].reshape(-1)[0]


def _requantized(x_scale, x_zp, y_scale, y_zp, dtype, f=None) -> np.ndarray:
    """The table of onnxruntime's 8-bit map: dequantized (float32(x - zero point) * scale), f (float32
    values to float32 values; none: the identity), quantized (MlasQuantizeLinear)."""
    v = dequantized_bytes(dtype, x_zp, x_scale)
    return onnxruntime_quantize(v if f is None else f(v), y_scale, y_zp, dtype)


def infer_concat(n: Node, ctx: Context) -> tuple:
    shapes = [tuple(ctx.input(n, k)[0]) for k in range(0, len(n.inputs) - 2, 3)]
    rank = len(shapes[0])
    axis = int(n.attrs["axis"]) % max(rank, 1)
    if any(len(s) != rank or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for s in shapes):
        raise refused(n, f"Concat of shapes {shapes} on axis {axis}")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return tuple(out), np.dtype(ctx.graph.consts[n.inputs[-1]].dtype)


def lower_concat(n: Node, ctx: Context) -> Lowered:
    """QLinearConcat as onnxruntime computes it: an input of the output's scale and zero point moved
    as it is, another through its requantization table; each into its slice of the output."""
    g = ctx.graph
    out, dt = infer_concat(n, ctx)
    axis = int(n.attrs["axis"]) % len(out)
    out_strides = packed_strides(out)
    ys, yzp = _scalar(g, n.inputs[-2]), _scalar(g, n.inputs[-1])
    parts, names, offset = [], [], 0
    for k in range(0, len(n.inputs) - 2, 3):
        shape, x_dt = _eight_bit(n, ctx, k)
        xs, xzp = _scalar(g, n.inputs[k + 1]), _scalar(g, n.inputs[k + 2])
        same = np.float32(xs) == np.float32(ys) and int(xzp) == int(yzp)
        table = IDENTITY if same else _requantized(xs, xzp, ys, yzp, dt)
        parts.append(move(shape, packed_strides(shape), out_strides, offset * out_strides[axis], table))
        names.append(n.inputs[k])
        offset += shape[axis]
    desc = described(n, lambda: LookupDesc(tuple(parts), (dt,) * len(parts), dt, out))
    return _lowered(n, ctx, desc, out, dt, names[1:])


def infer_elementwise(n: Node, ctx: Context) -> tuple:
    shape, _ = ctx.input(n)
    return tuple(shape), np.dtype(ctx.graph.consts[n.inputs[-1]].dtype)


def lower_leaky_relu(n: Node, ctx: Context) -> Lowered:
    """QLinearLeakyRelu: onnxruntime's table, v >= 0 ? v : alpha * v between its dequantization and
    quantization."""
    g = ctx.graph
    shape, dt = _eight_bit(n, ctx)
    alpha = np.float32(n.attrs.get("alpha", 0.01))
    f = lambda v: np.where(v >= 0, v, (alpha * v).astype(np.float32)).astype(np.float32)
    table = _requantized(_scalar(g, n.inputs[1]), _scalar(g, n.inputs[2]), _scalar(g, n.inputs[3]),
                         _scalar(g, n.inputs[4]), dt, f)
    part = move(shape, packed_strides(shape), tables=table)
    return _lowered(n, ctx, LookupDesc((part,), (dt,), dt, shape), shape, dt, [])


def _slope_axis(n: Node, slope: np.ndarray, shape: tuple) -> Optional[int]:
    """The one axis along which a PRelu slope (broadcast to the input, right-aligned) varies, or None."""
    full = (1,) * (len(shape) - slope.ndim) + slope.shape
    if len(full) != len(shape) or any(s not in (1, d) for s, d in zip(full, shape)):
        raise refused(n, f"PRelu slope of shape {slope.shape} for an input of shape {shape}")
    varying = [d for d, s in enumerate(full) if s > 1]
    if len(varying) > 1:
        raise refused(n, f"PRelu slope of shape {slope.shape} (one value, or one per channel of one axis)")
    return varying[0] if varying else None


def lower_prelu(n: Node, ctx: Context) -> Lowered:
    """QLinearPRelu: onnxruntime's DequantizeLinear -> PRelu -> QuantizeLinear (v < 0 ? slope * v : v,
    in float32), one table per slope value."""
    g = ctx.graph
    shape, dt = _eight_bit(n, ctx)
    slope = np.asarray(g.consts[n.inputs[3]], np.float32)
    axis = _slope_axis(n, slope, shape)
    xs, xzp, ys, yzp = (_scalar(g, n.inputs[k]) for k in (1, 2, 4, 5))
    tables = np.stack([_requantized(xs, xzp, ys, yzp, dt, lambda v, a=np.float32(a): np.where(
        v < 0, (a * v).astype(np.float32), v).astype(np.float32)) for a in slope.reshape(-1)])
    part = move(shape, packed_strides(shape), tables=tables, table_axis=axis)
    return _lowered(n, ctx, LookupDesc((part,), (dt,), dt, shape), shape, dt, [])


# ---- the pixel maps at a model's edges (pixels.py) --------------------------------------------

def infer_table(n: Node, ctx: Context) -> tuple:
    return tuple(ctx.input(n)[0]), np.dtype(ctx.graph.consts[n.inputs[1]].dtype)


def lower_table(n: Node, ctx: Context) -> Lowered:
    """An 8-bit tensor through the node's constant table of 256 entries (input 1, 8-bit or float16),
    into the table's type."""
    shape, dt = _eight_bit(n, ctx)
    table = ctx.graph.consts[n.inputs[1]]
    part = move(shape, packed_strides(shape), tables=table)
    return _lowered(n, ctx, LookupDesc((part,), (dt,), table.dtype, shape), shape, table.dtype, [])
