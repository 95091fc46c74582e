"""Plan-time passes: what the ONNX runner decides about a prepared graph once its input shapes and the
device are known, before any node is lowered. Each is a function of the whole graph, not of the order
in which nodes are lowered, and the operators answer their questions (quantized_conv.layouts), so
that no pass reads kernel or variant names:

- infer: every tensor's (shape, dtype), from each op's entry (Lowering.infer: descriptions only);
- plan_layouts: the strides of intermediate tensors, as DirectML's graph compiler chooses the strides
  of a graph's intermediate tensors: a convolution's output channels-last where its one reader, a
  convolution, gains from reading that and it writes that alike;
- fuse: QLinearConv -> [DepthToSpace ->] DequantizeLinear made one fused node (lower.DEQUANTIZED_CONV)
  where the convolution's kernel does the tail in its epilogue.

prepare() runs them in that order and gives the graph to lower and its frozen Context."""
from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Dict, Optional

import numpy as np

from ..ops.quantized_conv import layouts as conv_layouts
from ..runtime.device import Device
from .graph import Graph, Node, UnsupportedModelError
from .lower import LOWERINGS, Context, dequantized_conv_node, output_strided, qlinearconv_desc


def prepare(graph: Graph, device: Device, feeds: Dict[str, tuple], host_quantization: bool = False) -> tuple:
    """(graph, Context) for lowering: feeds {input name: (shape, dtype)}; every tensor's shape and
    dtype inferred, the intermediate tensors' layouts planned, fusions made."""
    shapes = infer(graph, device, feeds, host_quantization)
    ctx = Context(graph, device, MappingProxyType(shapes), host_quantization)
    ctx = dataclasses.replace(ctx, layouts=MappingProxyType(plan_layouts(ctx)))
    fused = fuse(ctx)
    return fused, dataclasses.replace(ctx, graph=fused)


def infer(graph: Graph, device: Device, feeds: Dict[str, tuple], host_quantization: bool = False) -> dict:
    """{tensor name: (shape, dtype)} of the inputs fed, the constants and every node's output, in
    order (an UnsupportedModelError naming the node where its description is refused)."""
    shapes = {k: (tuple(shape), np.dtype(dt)) for k, (shape, dt) in feeds.items()}
    shapes.update({k: (v.shape, v.dtype) for k, v in graph.consts.items()})
    ctx = Context(graph, device, shapes, host_quantization)     # read as it grows
    for n in graph.nodes:
        shapes[n.outputs[0]] = LOWERINGS[n.op].infer(n, ctx)
    return shapes


def channels_last(sizes) -> tuple:
    """The strides of a 4-D tensor of these sizes laid out N, H, W, C."""
    n, c, h, w = sizes
    return (h * w * c, 1, w * c, c)


def plan_layouts(ctx: Context) -> Dict[str, tuple]:
    """{tensor name: strides} of the convolutions' outputs laid out channels-last: where the output's
    one reader is a QLinearConv (and it is no graph output), that reader's plan gains from reading
    it so (layouts.gains_from_input_layout) and the convolution's own plan, its input as planned
    before, writes it alike (layouts.writes_layout_alike). Tensors not named stay packed."""
    graph, layouts = ctx.graph, {}
    if ctx.host_quantization:
        return layouts
    for n in graph.nodes:
        out = n.outputs[0]
        users = graph.users(out)
        if n.op != "QLinearConv" or len(users) != 1 or users[0].op != "QLinearConv" or out in graph.output_names:
            continue
        try:
            shape, dt = ctx.input(n)
            mine = qlinearconv_desc(n, ctx, shape, dt, layouts.get(n.inputs[0]))[0]
            sizes, out_dt = ctx.shapes[out]
            strides = channels_last(sizes)
            user_before = qlinearconv_desc(users[0], ctx, sizes, out_dt)[0]
            user_after = qlinearconv_desc(users[0], ctx, sizes, out_dt, in_strides=strides)[0]
        except (ValueError, UnsupportedModelError, KeyError):
            continue
        if (conv_layouts.gains_from_input_layout(user_before, user_after, ctx.device)
                and conv_layouts.writes_layout_alike(mine, output_strided(mine, strides), ctx.device)):
            layouts[out] = strides
    return layouts


def dequantized_tail(n: Node, graph: Graph) -> Optional[tuple]:
    """(nodes, (block, crd, scale, zero point)) where the node's output goes on, read by nothing else
    and no graph output, through a DepthToSpace (DCR or CRD; or none: block 1) to a per-tensor
    DequantizeLinear of a float32 scale. Else None."""
    def only_user(name: str) -> Optional[Node]:
        users = graph.users(name)
        return users[0] if len(users) == 1 and name not in graph.output_names else None

    nodes, block, crd = [], 1, False
    user = only_user(n.outputs[0])
    if user is not None and user.op == "DepthToSpace" and user.attr("mode", "DCR") in ("DCR", "CRD"):
        nodes, block, crd = [user], int(user.attrs["blocksize"]), user.attr("mode", "DCR") == "CRD"
        user = only_user(user.outputs[0])
    if user is None or user.op != "DequantizeLinear":
        return None
    scale, zp = graph.consts.get(user.inputs[1]), graph.const(user.input(2))
    if scale is None or scale.size != 1 or scale.dtype != np.float32 or (zp is not None and zp.size != 1):
        return None
    return nodes + [user], (block, crd, np.float32(scale.reshape(-1)[0]), 0 if zp is None else int(zp.reshape(-1)[0]))


def fuse(ctx: Context) -> Graph:
    """The graph with each QLinearConv whose dequantized tail (dequantized_tail) its kernel on the
    device does in its epilogue (layouts.folds_dequantized, the convolution laid out as planned) made
    one DEQUANTIZED_CONV node in the convolution's place, the tail's nodes gone. Nothing where Q/DQ
    stays on the host."""
    graph = ctx.graph
    if ctx.host_quantization:
        return graph
    fused, gone = {}, set()
    for n in graph.nodes:
        tail = dequantized_tail(n, graph) if n.op == "QLinearConv" else None
        if tail is None:
            continue
        shape, dt = ctx.input(n)
        try:
            desc = qlinearconv_desc(n, ctx, shape, dt, ctx.layouts.get(n.inputs[0]))[0]
        except UnsupportedModelError:
            continue                           # lowering the convolution alone says why
        if conv_layouts.folds_dequantized(desc, tail[1], ctx.device):
            fused[id(n)] = dequantized_conv_node(n, tail[1], tail[0][-1].outputs[0])
            gone |= {id(t) for t in tail[0]}
    if not fused:
        return graph
    return graph.with_nodes(fused.get(id(n), n) for n in graph.nodes if id(n) not in gone)
