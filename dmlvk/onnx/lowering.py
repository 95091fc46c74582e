"""What every lowering shares: the Context it reads (decided before any node is lowered), what it
gives (Lowered; TensorRef for a second input of the graph), a registry entry (Lowering), and the
helpers that turn a description's refusal into the node's UnsupportedModelError."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, List, Mapping, Optional, Tuple, Union

import numpy as np

from ..ops.base import CompiledOperator
from ..runtime.device import Device
from .graph import Graph, Node, UnsupportedModelError


@dataclass(frozen=True)
class Context:
    """What a lowering sees, decided before any node is lowered (passes.prepare): the graph, the
    device, the (shape, dtype) of every tensor (while inferring them: of those inferred so far, the
    inputs fed and the constants included), whether Q/DQ must stay on the host, and the strides of
    the intermediate tensors the layout pass laid out otherwise than packed."""
    graph: Graph
    device: Device
    shapes: Mapping[str, tuple]
    host_quantization: bool = False
    layouts: Mapping[str, tuple] = field(default_factory=lambda: MappingProxyType({}))

    def input(self, n: Node, k: int = 0) -> tuple:
        return self.shapes[n.inputs[k]]


@dataclass(frozen=True)
class TensorRef:
    """A binding of a device operator that is a tensor of the graph (a second input the plan puts on
    the device), named."""
    name: str


@dataclass(frozen=True)
class Lowered:
    """A node lowered: its output's shape and dtype and how it is made. kind "device": op runs with
    the node's input 0 and `bindings` (for the operator's other inputs: Buffers of constants,
    TensorRefs of the graph's tensors, None where absent or owned); "host": compute(input 0 as an
    array) gives the output; "view": input 0's bytes."""
    kind: str
    shape: tuple
    dtype: np.dtype
    op: Optional[CompiledOperator] = None
    bindings: tuple = ()
    compute: Optional[Callable] = None

    def reads(self, n: Node) -> list:
        """The names of the graph's tensors the node's work reads."""
        return [n.inputs[0]] + [b.name for b in self.bindings if isinstance(b, TensorRef)]


@dataclass(frozen=True)
class Lowering:
    """An op's entry: infer(node, Context) -> (shape, dtype) of its output; lower(node, Context) ->
    Lowered; check(node, graph) -> messages (empty where dmlvk runs the node); layout: a permutation,
    repetition or re-view of its input (or a predicate of the node saying where it is one), so
    per-tensor (de)quantization commutes with it (rewrite.commute); runs:
    what runs it, in a line (docs/onnx-ops.md lists the entries); fuses: for a fused node type, which
    no model contains and a rewrite (rewrite.py) or a plan-time pass (passes.py) makes, the ops it
    stands for."""
    infer: Callable[[Node, Context], tuple]
    lower: Callable[[Node, Context], Lowered]
    check: Callable[[Node, Graph], List[str]] = field(default=lambda n, g: [])
    layout: Union[bool, Callable[[Node], bool]] = False
    runs: str = ""
    fuses: Tuple[str, ...] = ()

    def moves_data(self, n: Node) -> bool:
        """Whether the node only moves (or re-views) its input's elements."""
        return bool(self.layout(n) if callable(self.layout) else self.layout)


def constant_inputs(ks) -> Callable[[Node, Graph], List[str]]:
    """A check: inputs ks given (where required) and constants (where given)."""
    def check(n: Node, graph: Graph) -> List[str]:
        for k in ks:
            if n.input(k) and n.input(k) not in graph.consts:
                return [f"{n.name}: {n.op} input {k} must be a constant (initializer)"]
        return []
    return check


def refused(n: Node, why) -> UnsupportedModelError:
    return UnsupportedModelError(f"{n.name}: {why}", (n.name,))


def described(n: Node, make):
    """make() with a description's ValidationError (or another ValueError: a device limit, an
    unknown mode) as the node's UnsupportedModelError."""
    try:
        return make()
    except ValueError as e:
        raise refused(n, e) from None
