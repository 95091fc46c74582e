"""A session's inputs and outputs in 8 bits (InferenceSession(inputs=..., outputs=...)): graph rewrites
at the model's edges, each exact against the float path by construction (a map of 256 values).

inputs="quantized": a float input read only by per-tensor QuantizeLinear nodes of one scale, zero point
    and type is fed their 8-bit output (input_quantization[name] = (scale, zero point)); they do not run.
inputs="pixels": such an input is fed uint8 pixels p standing for the float p / 255 (from_pixels): the
    QuantizeLinear of those 256 floats is a table, the identity at scale 1/255 and zero point 0 (uint8),
    where the pixels are the quantized input and nothing runs; else one 8-bit lookup on the device.
outputs="quantized": a float output made by a per-tensor DequantizeLinear (once rewrite.commute moved it
    past the layout ops before the output) is given as that node's 8-bit input
    (output_quantization[name]); the DequantizeLinear does not run.
outputs="pixels": such an output, or its Clip, is given as uint8 pixels: to_pixels of the float output
    (clipped to [0, 1], times 255, rounded half to even), a table of the 256 quantized values; the
    identity (nothing runs) at scale 1/255 and zero point 0 (uint8) where a Clip changes no pixel.
outputs="float16": such an output, or its Clip, is given as float16: the float output rounded to
    float16 (to nearest, ties to even), a table of 256 float16 values (one lookup on the device)."""
from __future__ import annotations

import dataclasses
from typing import Dict, Tuple

import numpy as np
from onnx import helper

from ..ops.lookup import IDENTITY, dequantized_bytes, onnxruntime_quantize
from .graph import ELEMENT_TYPES, Graph, Node, per_tensor, qparams

FORMATS = ("float", "quantized", "pixels")
OUTPUT_FORMATS = FORMATS + ("float16",)
TO_QUANTIZED = "Pixels+QuantizeLinear"        # 8-bit input 0 through the constant table input 1
TO_PIXELS = "DequantizeLinear+Pixels"
TO_FLOAT16 = "DequantizeLinear+Float16"
ONNX_TYPES = {np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.float16): 10}
EIGHT_BIT = (np.dtype(np.uint8), np.dtype(np.int8))


def from_pixels(px: np.ndarray, dtype) -> np.ndarray:
    """8-bit pixels as a model's input of this dtype: float ones pixels / 255, others the pixels."""
    if np.dtype(dtype).kind == "f":
        return (px.astype(np.float32) / np.float32(255)).astype(dtype)
    return px.astype(dtype)


def to_pixels(y: np.ndarray) -> np.ndarray:
    """A model's output as 8-bit pixels: float ones clipped to [0, 1] (NaN as 0), times 255, rounded
    half to even."""
    if y.dtype.kind == "f":
        y = np.rint(np.clip(np.nan_to_num(y), 0, 1) * np.float32(255))
    return y.astype(np.uint8)


def check_format(what: str, form) -> str:
    known = OUTPUT_FORMATS if what == "outputs" else FORMATS
    if form not in known:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, known))}, got {form!r}")
    return form


def _refused(what: str, form: str, name: str, why: str) -> ValueError:
    return ValueError(f"{what}={form!r}: the model's {what[:-1]} {name!r} {why}")


def _eight_bit_params(n: Node, graph: Graph):
    """(scale, zero point as int, 8-bit dtype) of a per-tensor QuantizeLinear or DequantizeLinear with
    constant parameters (a float32 scale), or None."""
    if not n.input(1) or any(n.input(k) and n.input(k) not in graph.consts for k in (1, 2)) \
            or not per_tensor(n, graph):
        return None
    if n.op != "QuantizeLinear" and not n.input(2):
        return None                  # a DequantizeLinear's input type is its zero point's
    scale, zp = qparams(n, graph)
    if np.dtype(zp.dtype) not in EIGHT_BIT or scale.dtype != np.float32:
        return None
    return np.float32(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]), np.dtype(zp.dtype)


def _typed(info, dtype):
    """A graph input's or output's ValueInfoProto with another element type."""
    t = info.type.tensor_type
    return helper.make_tensor_value_info(info.name, ONNX_TYPES[np.dtype(dtype)],
                                         [d.dim_param or d.dim_value for d in t.shape.dim] if t.HasField("shape") else None)


def _retyped(args: tuple, infos: tuple, name: str, dtype) -> tuple:
    args = tuple(dataclasses.replace(a, type=ELEMENT_TYPES[ONNX_TYPES[np.dtype(dtype)]]) if a.name == name else a
                 for a in args)
    infos = tuple(_typed(i, dtype) if i.name == name else i for i in infos)
    return args, infos


def _mapped(op: str, n: Node, source: str, source_dtype, outputs: tuple, table: np.ndarray, consts: dict) -> Node:
    """Node n made the map of its 8-bit input `source` through `table`: an Identity where the table
    takes every uint8 byte to itself, else an `op` node reading the table as a constant."""
    if np.dtype(source_dtype) == table.dtype == np.uint8 and np.array_equal(table, IDENTITY):
        return Node("Identity", n.name, (source,), outputs)
    name = f"{n.name}__table"
    consts[name] = table
    return Node(op, n.name, (source, name), outputs)


def feed_quantized(graph: Graph, form: str) -> Tuple[Graph, Dict[str, tuple]]:
    """(graph, {input: (scale, zero point)}) with every float input fed in 8 bits (form "quantized" or
    "pixels"); a ValueError names an input that has no such form."""
    if check_format("inputs", form) == "float":
        return graph, {}
    nodes, consts = list(graph.nodes), dict(graph.consts)
    args, infos, quantization = graph.inputs, graph.input_infos, {}
    for arg in graph.inputs:
        if arg.type != "tensor(float)":
            continue
        readers = graph.users(arg.name)
        bad = sorted({f"{r.op} {r.name!r}" for r in readers if r.op != "QuantizeLinear" or r.inputs[0] != arg.name})
        if bad or not readers or arg.name in graph.output_names:
            why = (f"is read in float by {', '.join(bad)}" if bad else "is a graph output" if readers
                   else "is read by no node")
            raise _refused("inputs", form, arg.name, why + ": only an input that per-tensor QuantizeLinear "
                           "nodes alone read has an 8-bit form")
        params = {_eight_bit_params(r, graph) for r in readers}
        if None in params or len(params) != 1:
            raise _refused("inputs", form, arg.name, "is quantized per axis, with parameters that are not "
                           "constants or not 8-bit, or differently by its readers: it has no one 8-bit form")
        scale, zp, dtype = params.pop()
        quantization[arg.name] = (scale, zp)
        if form == "quantized":
            table, fed = None, dtype
        else:
            table = onnxruntime_quantize(from_pixels(IDENTITY, np.float32), scale, zp, dtype)
            fed = np.dtype(np.uint8)
        for r in readers:
            i = nodes.index(r)
            nodes[i] = (Node("Identity", r.name, (arg.name,), r.outputs[:1]) if table is None
                        else _mapped(TO_QUANTIZED, r, arg.name, np.uint8, r.outputs[:1], table, consts))
        args, infos = _retyped(args, infos, arg.name, fed)
    return dataclasses.replace(graph, nodes=tuple(nodes), consts=consts, inputs=args, input_infos=infos), quantization


def give_quantized(graph: Graph, form: str) -> Tuple[Graph, Dict[str, tuple]]:
    """(graph, {output: (scale, zero point)}) with every float output given in 8 bits (form
    "quantized" or "pixels") or as float16, the graph's DequantizeLinear nodes already moved to its end
    (rewrite.commute) and a Clip after one fused with it (rewrite.fuse_dequantize_clip); a ValueError
    names an output that has no such form."""
    if check_format("outputs", form) == "float":
        return graph, {}
    nodes, consts = list(graph.nodes), dict(graph.consts)
    args, infos, quantization = graph.outputs, graph.output_infos, {}
    for arg in graph.outputs:
        if arg.type not in ("tensor(float)", "tensor(?)"):
            continue
        d = graph.maker(arg.name)
        params = _eight_bit_params(d, graph) if d is not None and d.op.startswith("DequantizeLinear") else None
        if params is None:
            made = f"made by {d.op} {d.name!r}" if d is not None else "a graph input or constant"
            raise _refused("outputs", form, arg.name, f"is {made}: only an output of a per-tensor DequantizeLinear "
                           "(with a zero point and 8-bit constant parameters; layout ops and a Clip may follow it) "
                           "has an 8-bit form")
        readers = sorted({f"{r.op} {r.name!r}" for r in graph.users(arg.name)})
        if readers:
            raise _refused("outputs", form, arg.name, f"is also read by {', '.join(readers)}, which takes the floats")
        scale, zp, dtype = params
        clip = d.attrs.get("clip")
        if form == "quantized" and clip is not None:
            raise _refused("outputs", form, arg.name, "is clipped after its DequantizeLinear: the clipped floats "
                           "have no 8-bit form (outputs='pixels' gives them as pixels)")
        quantization[arg.name] = (scale, zp)
        i = nodes.index(d)
        if form == "quantized":
            nodes[i] = Node("Identity", d.name, d.inputs[:1], d.outputs)
            args, infos = _retyped(args, infos, arg.name, dtype)
            continue
        v = dequantized_bytes(dtype, zp, scale)
        if clip is not None:
            v = np.minimum(np.maximum(v, np.float32(clip[0])), np.float32(clip[1]))
        if form == "float16":
            nodes[i] = _mapped(TO_FLOAT16, d, d.inputs[0], dtype, d.outputs, v.astype(np.float16), consts)
        else:
            nodes[i] = _mapped(TO_PIXELS, d, d.inputs[0], dtype, d.outputs, to_pixels(v), consts)
        args, infos = _retyped(args, infos, arg.name, np.float16 if form == "float16" else np.uint8)
    return dataclasses.replace(graph, nodes=tuple(nodes), consts=consts, outputs=args, output_infos=infos), quantization
