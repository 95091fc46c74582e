"""Partitions: a model that dmlvk cannot run whole, cut into parts that run in turn, each on the
device (a session of dmlvk's own over the part's graph: one recorded plan per set of input shapes,
Q/DQ on the device) or on the host (an onnxruntime InferenceSession, CPU provider, over the part's
nodes as the model has them), as ONNX Runtime gives each node to the first provider that claims it.

Which nodes the host takes: those dmlvk has no lowering for (ops, other domains, control flow), those
a device part's preparation refuses (a form of an op dmlvk has), and, so that a quantized node goes to
the host with its quantization as ONNX Runtime would fuse it there, the QuantizeLinear nodes reading a
host node's output and the DequantizeLinear nodes that only host nodes read. A DequantizeLinear read
by both sides is copied into each host part that reads it, so that the tensor crossing is the 8-bit
one, and so is one read by a later device part, so that its fusions see the whole group. Parts
are the maximal sets of nodes of one side that no path leaves and re-enters: a node's
level is the number of changes of side on the longest path to it, and a part is the nodes of one
level and one side. Tensors cross only at parts' edges, in the dtype the graph has there."""
from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

import numpy as np

from onnx import TensorProto, helper, numpy_helper, shape_inference
from onnx.helper import np_dtype_to_tensor_dtype

from .graph import ELEMENT_TYPES, Graph, Node, NodeArg, UnsupportedModelError
from .lower import LAYOUT_OPS, MODEL_OPS
from .rewrite import FUSED_OPS

HOST = "host"
DEVICE = "device"


@dataclass(frozen=True)
class Part:
    """Nodes of one side in the model's order (for a host part, with copies of the device's
    DequantizeLinear nodes it reads), the tensors it reads from outside (graph inputs and earlier
    parts' outputs; no constants) and those it gives (to later parts, or as the graph's outputs)."""
    kind: str
    nodes: Tuple[Node, ...]
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]


def outer_names(g) -> Set[str]:
    """The names an ONNX subgraph (GraphProto) reads from the scopes around it."""
    defined = {v.name for v in g.input} | {i.name for i in g.initializer}
    used = set()
    for n in g.node:
        used |= set(n.input)
        for a in n.attribute:
            for sub in ([a.g] if a.type == a.GRAPH else list(a.graphs)):
                used |= outer_names(sub)
        defined |= set(n.output)
    return {k for k in used - defined if k}


def reads(n: Node) -> List[str]:
    """The tensors a node reads: its inputs, and for control flow the outer tensors its branches and
    bodies read."""
    out = [k for k in n.inputs if k]
    for v in n.attrs.values():
        for sub in (v if isinstance(v, list) else [v]):
            if hasattr(sub, "initializer") and hasattr(sub, "node"):       # a GraphProto
                out += sorted(outer_names(sub) - set(out))
    return out


def host_side(graph: Graph, host: Set[str]) -> Set[str]:
    """host, plus the QuantizeLinear nodes reading a host node's output and the DequantizeLinear nodes
    that only host nodes read (and that give no graph output), until nothing changes."""
    host = set(host)
    makers = {k: n.name for n in graph.nodes for k in n.outputs}
    readers: Dict[str, List[str]] = {}
    for n in graph.nodes:
        for k in reads(n):
            readers.setdefault(k, []).append(n.name)
    while True:
        more = set()
        for n in graph.nodes:
            if n.name in host or n.domain:
                continue
            if n.op == "QuantizeLinear" and makers.get(n.inputs[0]) in host:
                more.add(n.name)
            users = readers.get(n.outputs[0], [])
            if (n.op == "DequantizeLinear" and users and all(m in host for m in users)
                    and n.outputs[0] not in graph.output_names):
                more.add(n.name)
        if not more:
            return host
        host |= more


def constant_nodes(graph: Graph) -> Set[str]:
    """The nodes that read constants only (directly, or through other such nodes) and give no graph
    output: a weight's DequantizeLinear, say. They belong to no part; each part that reads one has a
    copy, so that a device part fuses a quantized node with its weights as constants, and a host
    part's ONNX Runtime does too. (One that gives a graph output is a node of a part like any other.)"""
    known, out = set(graph.consts), set()
    for n in graph.nodes:
        if not n.domain and all(k in known for k in reads(n)) and not set(n.outputs) & graph.output_names:
            out.add(n.name)
            known |= set(n.outputs)
    return out


def split(graph: Graph, host: Set[str]) -> List[Part]:
    """The parts of the graph where the nodes named in host run on the host, the others on the device,
    in an order that runs each part after those it reads from."""
    makers = {k: n for n in graph.nodes for k in n.outputs}
    fixed = constant_nodes(graph)
    side = {n.name: HOST if n.name in host else DEVICE for n in graph.nodes}
    level: Dict[str, int] = {}
    groups: Dict[tuple, List[Node]] = {}
    for n in graph.nodes:
        if n.name in fixed:
            continue
        level[n.name] = max([level[makers[k].name] + (side[makers[k].name] != side[n.name])
                             for k in reads(n) if k in makers and makers[k].name not in fixed] or [0])
        groups.setdefault((level[n.name], side[n.name]), []).append(n)
    parts = []
    for (_, kind), nodes in sorted(groups.items()):
        names = {n.name for n in nodes}
        wanted = set()                 # the copies: constant nodes and DequantizeLinear nodes read
        todo = [k for n in nodes for k in reads(n)]
        while todo:
            m = makers.get(todo.pop())
            if m is None or m.name in names or m.name in wanted:
                continue
            if m.name in fixed or m.op == "DequantizeLinear":
                wanted.add(m.name)
                todo += reads(m) if m.name in fixed else []
        parts.append(([n for n in graph.nodes if n.name in wanted] + nodes, kind, names))
    made_in = [{k for n in nodes for k in n.outputs} for nodes, _, _ in parts]
    out = []
    for i, (nodes, kind, own) in enumerate(parts):
        inputs = [k for n in nodes for k in reads(n) if k not in made_in[i] and k not in graph.consts]
        later = {k for j, (other, _, _) in enumerate(parts) if j != i for n in other for k in reads(n)
                 if k not in made_in[j]}
        gives = [k for n in nodes if n.name in own for k in n.outputs if k in later or k in graph.output_names]
        out.append(Part(kind, tuple(nodes), tuple(dict.fromkeys(inputs)), tuple(dict.fromkeys(gives))))
    return out


def value_types(model) -> Dict[str, tuple]:
    """{tensor name: (element type, shape)} of the model's tensors that ONNX's shape inference types
    (nothing where it fails)."""
    try:
        inferred = shape_inference.infer_shapes(model).graph
    except Exception:             # a model shape inference cannot read: types come from the values
        inferred = model.graph
    out = {}
    for v in list(inferred.value_info) + list(inferred.input) + list(inferred.output):
        t = v.type.tensor_type
        if t.elem_type:
            out[v.name] = (t.elem_type, [d.dim_param or d.dim_value for d in t.shape.dim] if t.HasField("shape") else None)
    return out


def part_graph(graph: Graph, part: Part, types: Dict[str, tuple]) -> Graph:
    """A device part as a Graph of its own: the part's nodes, the model's constants, its inputs and
    outputs typed as shape inference types them."""
    def info(name):
        elem, shape = types.get(name, (TensorProto.UNDEFINED, None))
        return helper.make_tensor_value_info(name, elem, shape)

    def arg(name):
        elem, shape = types.get(name, (0, None))
        return NodeArg(name, list(shape or []), ELEMENT_TYPES.get(elem, "tensor(?)"))

    return Graph(part.nodes, graph.consts, tuple(arg(k) for k in part.inputs), tuple(arg(k) for k in part.outputs),
                 tuple(info(k) for k in part.inputs), tuple(info(k) for k in part.outputs),
                 graph.opset, graph.ir_version, graph.opsets)


def partition(graph: Graph, prepare, types: Dict[str, tuple], host: Iterable[str] = ()) -> List[Part]:
    """The graph's parts: the host takes the nodes named in host, what dmlvk has no lowering for, then
    what prepare() refuses in a device part (for a constant node refused, the nodes of the part that
    read it), and the device parts that only quantize or move data (not worth their crossings), until
    every device part prepares and computes. prepare(Graph) raises UnsupportedModelError naming the
    nodes it refuses."""
    moves = LAYOUT_OPS | {"QuantizeLinear", "DequantizeLinear", "Identity"}
    fixed = constant_nodes(graph)
    host = set(host) | {n.name for n in graph.nodes if n.domain or n.op not in MODEL_OPS | FUSED_OPS}
    while True:
        parts = split(graph, host_side(graph, host))
        refused = set()
        for p in parts:
            if p.kind != DEVICE:
                continue
            if any(p2.kind == HOST for p2 in parts) and all(n.op in moves or n.name in fixed for n in p.nodes):
                refused |= {n.name for n in p.nodes if n.name not in fixed}
                continue
            try:
                prepare(part_graph(graph, p, types))
            except UnsupportedModelError as e:
                named = set(e.nodes)
                new = (named - fixed - host) | (readers_through(p, named & fixed, fixed) - host)
                if not new:
                    raise
                refused |= new
        if not refused:
            return parts
        host |= refused


def readers_through(part: Part, refused: Set[str], fixed: Set[str]) -> Set[str]:
    """The names of the part's nodes, other than constant nodes, that read the outputs of the refused
    constant nodes, directly or through other constant nodes (a weight's DequantizeLinear of a Cast
    dmlvk has no kernel for: the convolution that reads it)."""
    tainted = {k for n in part.nodes if n.name in refused for k in n.outputs}
    out = set()
    for n in part.nodes:                          # in the model's order: a constant node before its readers
        if not tainted & set(reads(n)):
            continue
        if n.name in fixed:
            tainted |= set(n.outputs)
        else:
            out.add(n.name)
    return out


def host_model(graph: Graph, part: Part, dtypes: Dict[str, np.dtype], types: Dict[str, tuple]):
    """A host part as an onnx.ModelProto: its nodes as the model has them, the constants they read as
    initializers, its inputs of the dtypes given, its outputs typed by shape inference (of the model,
    else of the part)."""
    nodes = [helper.make_node(n.op, list(n.inputs), list(n.outputs), name=n.name, domain=n.domain or None, **n.attrs)
             for n in part.nodes]
    consts = sorted({k for n in part.nodes for k in reads(n) if k in graph.consts})
    inputs = [helper.make_tensor_value_info(k, np_dtype_to_tensor_dtype(np.dtype(dtypes[k])), None)
              for k in part.inputs]

    def model(outputs):
        g = helper.make_graph(nodes, "host part", inputs, outputs,
                              [numpy_helper.from_array(np.asarray(graph.consts[k]), k) for k in consts])
        opsets = dict(graph.opsets)
        opsets.setdefault("", graph.opset)
        return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
                                 ir_version=graph.ir_version)

    if any(k not in types for k in part.outputs):
        types = {**value_types(model([helper.make_tensor_value_info(k, TensorProto.UNDEFINED, None)
                                      for k in part.outputs])), **types}
    return model([helper.make_tensor_value_info(k, types.get(k, (TensorProto.UNDEFINED, None))[0], None)
                  for k in part.outputs])


def onnxruntime(parts: List[Part]):
    """The onnxruntime module, or an UnsupportedModelError naming what the host would run and saying
    to install it."""
    try:        # optional, and heavy to import: loaded only for a model that needs the host
        return importlib.import_module("onnxruntime")
    except ImportError:
        raise UnsupportedModelError(f"dmlvk runs {describe(parts)} of this model on the host with ONNX Runtime, "
                                    "which is not installed: pip install onnxruntime (or dmlvk[onnx])") from None


class HostPart:
    """A host part run by onnxruntime (CPU provider, its default optimizations): the session made
    once, at the first run, for the dtypes its inputs have then (again if they change). Where
    onnxruntime's optimizer fails on the part (some versions fuse a QDQ group with a per-axis output
    into a QLinear op that then refuses its scale), the part runs unoptimized, each node by its own
    kernel (the model's meaning), with a warning; unoptimized says so."""

    def __init__(self, graph: Graph, part: Part, types: Dict[str, tuple]):
        self.graph, self.part, self.types = graph, part, types
        self._sessions: Dict[tuple, object] = {}
        self.unoptimized = False

    def run(self, values: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        feeds = {k: np.asarray(values[k]) for k in self.part.inputs}
        key = tuple(v.dtype.str for v in feeds.values())
        session = self._sessions.get(key)
        if session is None:
            ort = onnxruntime([self.part])
            model = host_model(self.graph, self.part, {k: v.dtype for k, v in feeds.items()}, self.types)
            try:
                session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            except Exception as e:          # onnxruntime's own error types: its optimizer's failure
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
                self.unoptimized = True
                warnings.warn(f"dmlvk runs {describe([self.part])} on the host with ONNX Runtime unoptimized: its "
                              f"optimized session failed ({str(e).splitlines()[0][:200]})", stacklevel=2)
            self._sessions[key] = session
        return dict(zip(self.part.outputs, session.run(list(self.part.outputs), feeds)))


def describe(parts: Iterable[Part]) -> str:
    """The host's share in a line: how many of the nodes and which op types."""
    host = list({n.name: n for p in parts if p.kind == HOST for n in p.nodes}.values())
    ops = sorted({f"{n.domain}.{n.op}" if n.domain else n.op for n in host})
    return f"{len(host)} nodes ({', '.join(ops)})"
