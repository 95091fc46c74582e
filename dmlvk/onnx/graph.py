"""An ONNX model as dmlvk reads it: a Graph record (nodes, constants, inputs and outputs) with public
fields, loaded from a path or an onnx.ModelProto. Imports no operator and no runtime."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:                    # dmlvk itself does not need onnx; this package does
    raise ImportError("dmlvk.onnx needs the onnx package: pip install onnx") from None


class UnsupportedModelError(ValueError):
    """The model has nodes (or forms of them) that dmlvk cannot run; nodes: their names, where known."""

    def __init__(self, message: str, nodes=()):
        super().__init__(message)
        self.nodes = tuple(nodes)


@dataclass(frozen=True)
class Node:
    """One node: its op type, name (made up from its position where the model gives none), the
    names of its inputs ("" for an optional one left out) and outputs, its attributes, its domain
    ("" for ONNX's own)."""
    op: str
    name: str
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]
    attrs: dict = field(default_factory=dict)
    domain: str = ""

    def input(self, k: int) -> Optional[str]:
        """The name of input k, or None where it is absent or left out."""
        return self.inputs[k] if k < len(self.inputs) and self.inputs[k] else None

    def attr(self, name: str, default=None):
        """An attribute's value, strings decoded."""
        v = self.attrs.get(name, default)
        return v.decode() if isinstance(v, bytes) else v


@dataclass(frozen=True)
class NodeArg:
    """A graph input or output, as onnxruntime's InferenceSession.get_inputs() gives them."""
    name: str
    shape: list
    type: str


ELEMENT_TYPES = {1: "tensor(float)", 2: "tensor(uint8)", 3: "tensor(int8)", 6: "tensor(int32)", 7: "tensor(int64)",
                 10: "tensor(float16)"}
NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8,
               "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(float16)": np.float16}


@dataclass(frozen=True)
class Graph:
    """A model's graph: nodes in order, constants (initializers and Constant nodes) by name, the
    inputs fed at run time and the outputs, as NodeArgs and as the model's ValueInfoProtos (for
    writing the graph back out), its default-domain opset, IR version and every domain's opset.
    Nodes of other domains and Constant nodes that dmlvk cannot read as a tensor stay nodes (which
    dmlvk refuses, or leaves to the host)."""
    nodes: Tuple[Node, ...]
    consts: Dict[str, np.ndarray]
    inputs: Tuple[NodeArg, ...]
    outputs: Tuple[NodeArg, ...]
    input_infos: tuple = ()
    output_infos: tuple = ()
    opset: int = 13
    ir_version: int = 8
    opsets: Tuple[Tuple[str, int], ...] = ()

    @property
    def output_names(self) -> set:
        return {o.name for o in self.outputs}

    def users(self, name: str) -> List[Node]:
        """The nodes that read tensor `name`."""
        return [n for n in self.nodes if name in n.inputs]

    def maker(self, name: str) -> Optional[Node]:
        """The node that writes tensor `name`, or None (a graph input or a constant)."""
        return next((n for n in self.nodes if name in n.outputs), None)

    def const(self, name: Optional[str]) -> Optional[np.ndarray]:
        """The constant of that name, or None (no name, or not a constant)."""
        return self.consts.get(name) if name else None

    def with_nodes(self, nodes, consts: Optional[dict] = None) -> "Graph":
        return dataclasses.replace(self, nodes=tuple(nodes), consts=self.consts if consts is None else consts)

    def to_model(self):
        """The graph as an onnx.ModelProto, with the constants its nodes read."""
        used = {k for n in self.nodes for k in n.inputs if k in self.consts}
        nodes = [helper.make_node(n.op, list(n.inputs), list(n.outputs), name=n.name, domain=n.domain or None,
                                  **n.attrs) for n in self.nodes]
        graph = helper.make_graph(nodes, "dmlvk", list(self.input_infos), list(self.output_infos),
                                  [numpy_helper.from_array(np.asarray(self.consts[k]), k) for k in sorted(used)])
        opsets = dict(self.opsets)
        opsets[""] = max(self.opset, 13)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
                                 ir_version=self.ir_version)


def _arg(v) -> NodeArg:
    t = v.type.tensor_type
    return NodeArg(v.name, [d.dim_param or d.dim_value for d in t.shape.dim], ELEMENT_TYPES.get(t.elem_type, "tensor(?)"))


def load(model) -> Graph:
    """A Graph from a path or an onnx.ModelProto."""
    if isinstance(model, (str, bytes, os.PathLike)):
        model = onnx.load(os.fspath(model))
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"model must be a path or an onnx.ModelProto, got {type(model).__name__}")
    g = model.graph
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    nodes = []
    for i, n in enumerate(g.node):
        name = n.name or f"#{i} ({n.op_type})"
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        domain = "" if n.domain == "ai.onnx" else n.domain
        value = _constant(attrs) if n.op_type == "Constant" and not domain else None
        if value is not None:
            consts[n.output[0]] = value
        else:
            nodes.append(Node(n.op_type, name, tuple(n.input), tuple(n.output), attrs, domain))
    inputs = [v for v in g.input if v.name not in consts]
    opsets = tuple(("" if o.domain == "ai.onnx" else o.domain, o.version) for o in model.opset_import)
    return Graph(tuple(nodes), consts, tuple(_arg(v) for v in inputs), tuple(_arg(v) for v in g.output),
                 tuple(inputs), tuple(g.output), dict(opsets).get("", 13), model.ir_version, opsets)


CONSTANT_VALUES = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
                   "value_ints": np.int64}


def _constant(attrs: dict) -> Optional[np.ndarray]:
    """A Constant node's value as an array, or None where it is no numeric tensor (a sparse or string
    one)."""
    if isinstance(attrs.get("value"), onnx.TensorProto):
        return numpy_helper.to_array(attrs["value"])
    for k, dt in CONSTANT_VALUES.items():
        if k in attrs:
            return np.array(attrs[k], dt)
    return None


def qparams(n: Node, graph: Graph, dtype=np.uint8) -> tuple:
    """A QuantizeLinear / DequantizeLinear node's (scale, zero point) constants; the zero point
    defaults to 0 of `dtype` (a DequantizeLinear's input dtype, uint8 for QuantizeLinear)."""
    zp = graph.const(n.input(2))
    return graph.consts[n.inputs[1]], np.zeros((), dtype) if zp is None else zp


def per_tensor(n: Node, graph: Graph) -> bool:
    """Whether a QuantizeLinear / DequantizeLinear node's scale and zero point are one value each."""
    return all(graph.const(n.input(k)) is None or graph.consts[n.inputs[k]].size == 1 for k in (1, 2))
