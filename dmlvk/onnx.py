"""Run ONNX models built from dmlvk's operators on any Vulkan device.

    session = dmlvk.onnx.InferenceSession("model.onnx")        # or a ModelProto; device=...
    (y,) = session.run(None, {"x": frame})

Nodes: QLinearConv, ConvInteger, DepthToSpace and SpaceToDepth run on the device
(QUANTIZED_LINEAR_CONVOLUTION, its int32 accumulator for ConvInteger, DEPTH_TO_SPACE1,
SPACE_TO_DEPTH1); QuantizeLinear and DequantizeLinear between float32 and 8 bits run on the
device too (dmlvk/ops/quantize.py; QuantizeLinear where the device has shaderFloat64), else on
the host, with ONNX's arithmetic as ONNX Runtime's CPU kernels compute it (float32 x / scale,
rounded half to even, plus the zero point, saturated, NaN to the lowest value; (x - zero point) *
scale in float32); Identity, Reshape and Flatten only re-view data. QDQ models (quantize_static's
default format) have each DequantizeLinear -> Conv -> QuantizeLinear group fused into QLinearConv
first, as ONNX Runtime does (_fuse_qdq). A model with any other node is refused when it is
loaded, with every such node's name and op type; nothing is half-run.

Before planning, a per-tensor DequantizeLinear is moved after the layout operators (DepthToSpace,
SpaceToDepth, Reshape, Flatten, Identity) that consume it, and a per-tensor QuantizeLinear before
the ones that produce its input: a permutation commutes exactly with an elementwise map. So the
usual quantized model (QuantizeLinear, quantized operators, DequantizeLinear) becomes one
stretch of device work, float frame in to float frame out. Each stretch runs as one submission:
the uploads of its inputs, its operators with barriers between dependent ones, the downloads of
what the host needs. Its intermediate tensors stay on the device, in Buffers made once per input
shape; operators are created once per input shape and kept (for the last 4 input shapes). One
session runs one call at a time (calls from several threads wait for each other)."""
from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence

import numpy as np

from .enums import DataType, DepthSpaceOrder
from .arrays import resolve_device
from .runtime.commands import CommandList
from .runtime.device import Buffer, Device

DEVICE_OPS = {"QLinearConv", "ConvInteger", "DepthToSpace", "SpaceToDepth"}
HOST_OPS = {"QuantizeLinear", "DequantizeLinear"}
VIEW_OPS = {"Identity", "Reshape", "Flatten"}
LAYOUT_OPS = {"DepthToSpace", "SpaceToDepth"} | VIEW_OPS
FUSED_OPS = {"Conv", "Relu", "Clip"}      # only inside a QDQ group (_fuse_qdq)
_PLANS_KEPT = 4           # input shapes whose operators and Buffers a session keeps


class UnsupportedModelError(ValueError):
    """The model has nodes (or forms of them) that dmlvk cannot run."""


def _onnx():
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        raise ImportError("dmlvk.onnx needs the onnx package: pip install onnx") from None
    return onnx, numpy_helper


# ---- host arithmetic (ONNX's definitions) -------------------------------------------------------

def _along_axis(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int) -> tuple:
    """Per-axis scale and zero point shaped to broadcast along x's axis; per-tensor ones as they are."""
    def shaped(a):
        shape = [1] * x.ndim
        shape[axis % x.ndim] = a.size
        return a.reshape(shape)
    if scale.ndim == 1 and scale.size > 1:
        return shaped(scale), shaped(zp) if zp.size > 1 else zp
    return scale, zp


def quantize_linear(x: np.ndarray, scale, zero_point=None, axis: int = 1) -> np.ndarray:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), in float32; the
    result has the zero point's dtype (uint8 without one). Per-tensor or per-axis. NaN gives the
    type's lowest value, as onnxruntime's CPU kernel does."""
    x = np.asarray(x, np.float32)
    scale = np.asarray(scale, np.float32)
    zp = np.zeros((), np.uint8) if zero_point is None else np.asarray(zero_point)
    scale, zp = _along_axis(x, scale, zp, axis)
    info = np.iinfo(zp.dtype)
    with np.errstate(all="ignore"):
        q = np.rint((x / scale).astype(np.float32)) + zp.astype(np.float32)
    return np.clip(np.where(np.isnan(q), info.min, q), info.min, info.max).astype(zp.dtype)


def dequantize_linear(x: np.ndarray, scale, zero_point=None, axis: int = 1) -> np.ndarray:
    """ONNX DequantizeLinear: (x - zero_point) * scale in float32. Per-tensor or per-axis."""
    x = np.asarray(x)
    scale = np.asarray(scale, np.float32)
    zp = np.zeros((), np.int32) if zero_point is None else np.asarray(zero_point)
    scale, zp = _along_axis(x, scale, zp, axis)
    if x.dtype.itemsize <= 2 and zp.dtype.itemsize <= 2:
        # 8/16-bit values and their difference are exact in float32: the same result, one pass fewer
        return (np.subtract(x, zp, dtype=np.float32) * scale).astype(np.float32, copy=False)
    return ((x.astype(np.int32) - zp.astype(np.int32)).astype(np.float32) * scale).astype(np.float32)


# ---- the graph ----------------------------------------------------------------------------------

@dataclass
class _Node:
    op: str
    name: str
    inputs: List[str]
    outputs: List[str]
    attrs: dict


@dataclass(frozen=True)
class NodeArg:
    """A graph input or output, as onnxruntime's InferenceSession.get_inputs() gives them."""
    name: str
    shape: list
    type: str


_ELEM = {1: "tensor(float)", 2: "tensor(uint8)", 3: "tensor(int8)", 6: "tensor(int32)", 7: "tensor(int64)"}
_NUMPY = {"tensor(float)": np.float32, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8,
          "tensor(int32)": np.int32, "tensor(int64)": np.int64}


def _attrs(onnx, node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _per_tensor(arr: Optional[np.ndarray]) -> bool:
    return arr is None or arr.size == 1


class InferenceSession:
    """An ONNX model loaded for dmlvk: model is a path or an onnx.ModelProto; device a dmlvk.Device
    (None: the default one). QuantizeLinear and DequantizeLinear between float32 and 8 bits run on
    the device, in the same submission as the operators around them (QuantizeLinear where the
    device has shaderFloat64, which its exact division needs); host_quantization=True runs them
    with numpy instead (the same results)."""

    def __init__(self, model, device: Optional[Device] = None, host_quantization: bool = False):
        onnx, numpy_helper = _onnx()
        self.host_quantization = bool(host_quantization)
        if isinstance(model, (str, bytes, os.PathLike)):
            model = onnx.load(os.fspath(model))
        if not isinstance(model, onnx.ModelProto):
            raise TypeError(f"model must be a path or an onnx.ModelProto, got {type(model).__name__}")
        self.device = resolve_device(device)
        g = model.graph
        self._consts: Dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        nodes, bad = [], []
        for i, n in enumerate(g.node):
            name = n.name or f"#{i} ({n.op_type})"
            if n.domain not in ("", "ai.onnx"):
                bad.append(f"{name}: {n.domain}.{n.op_type}")
            elif n.op_type == "Constant":
                a = _attrs(onnx, n)
                if "value" not in a:
                    bad.append(f"{name}: Constant without a tensor value")
                else:
                    self._consts[n.output[0]] = numpy_helper.to_array(a["value"])
            elif n.op_type not in DEVICE_OPS | HOST_OPS | VIEW_OPS | FUSED_OPS:
                bad.append(f"{name}: {n.op_type}")
            else:
                nodes.append(_Node(n.op_type, name, list(n.input), list(n.output), _attrs(onnx, n)))
        graph_outputs = {v.name for v in g.output}
        if not bad:
            nodes, unfused = _fuse_qdq(nodes, self._consts, graph_outputs)
            bad += unfused
        for n in nodes:
            bad += self._check_node(n)
        if bad:
            raise UnsupportedModelError("dmlvk cannot run these nodes of the model: " + "; ".join(bad))
        self._nodes = _drop_dead(_drop_requantize_pairs(_commute(nodes, self._consts), self._consts, graph_outputs),
                                 graph_outputs)
        self._inputs = [NodeArg(v.name, [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim],
                                _ELEM.get(v.type.tensor_type.elem_type, "tensor(?)"))
                        for v in g.input if v.name not in self._consts]
        self._outputs = [NodeArg(v.name, [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim],
                                 _ELEM.get(v.type.tensor_type.elem_type, "tensor(?)")) for v in g.output]
        self._graph_inputs = [v for v in g.input if v.name not in self._consts]
        self._graph_outputs = list(g.output)
        self._opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
        self._ir_version = model.ir_version
        self._plans: "OrderedDict[tuple, _Plan]" = OrderedDict()
        self._stream_plans: Dict[tuple, list] = {}      # run_stream's plans, `depth` per signature
        self._lock = threading.Lock()

    def _check_node(self, n: _Node) -> List[str]:
        """Forms of supported ops dmlvk cannot run, as messages (empty when the node is fine)."""
        why = []
        if n.op in ("QLinearConv", "ConvInteger"):
            # QLinearConv: inputs 1-7 required, the bias optional; ConvInteger: the filter required,
            # the zero points optional. Every one given must be a constant.
            required, weight = (range(1, 8), 3) if n.op == "QLinearConv" else ((1,), 1)
            missing = [k for k in required if k >= len(n.inputs) or not n.inputs[k]]
            missing += [k for k in range(1, len(n.inputs)) if n.inputs[k] and n.inputs[k] not in self._consts]
            if missing:
                why.append(f"{n.name}: {n.op} input {min(missing)} must be a constant (initializer)")
            else:
                w = self._consts[n.inputs[weight]]
                if w.ndim != 4:
                    why.append(f"{n.name}: {n.op} with a {w.ndim - 2}-D kernel (2-D only)")
                if n.attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
                    why.append(f"{n.name}: {n.op} auto_pad {n.attrs['auto_pad']!r} (give pads)")
        elif n.op in ("QuantizeLinear", "DequantizeLinear"):
            for k in (1, 2):
                if k < len(n.inputs) and n.inputs[k] and n.inputs[k] not in self._consts:
                    why.append(f"{n.name}: {n.op} input {k} must be a constant (initializer)")
        elif n.op == "SpaceToDepth" and n.attrs.get("mode", b"DCR") not in (b"DCR", "DCR"):
            why.append(f"{n.name}: SpaceToDepth mode {n.attrs['mode']!r}")
        elif n.op == "Reshape" and (len(n.inputs) < 2 or n.inputs[1] not in self._consts):
            why.append(f"{n.name}: Reshape needs a constant shape")
        return why

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    @property
    def nodes(self) -> List[str]:
        """The op types in the order dmlvk runs them (after fusing QDQ groups and moving
        quantization to the edges)."""
        return [n.op for n in self._nodes]

    def runs_model(self):
        """What dmlvk runs, as an onnx.ModelProto: the nodes after fusing QDQ groups into
        QLinearConv and moving quantization to the edges, with the constants they read (to
        inspect, or to run elsewhere)."""
        onnx, numpy_helper = _onnx()
        helper = onnx.helper
        used = {k for n in self._nodes for k in n.inputs if k in self._consts}
        nodes = [helper.make_node(n.op, n.inputs, n.outputs, name=n.name, **n.attrs) for n in self._nodes]
        graph = helper.make_graph(nodes, "dmlvk", list(self._graph_inputs), list(self._graph_outputs),
                                  [numpy_helper.from_array(np.asarray(self._consts[k]), k) for k in sorted(used)])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(self._opset, 13))],
                                 ir_version=self._ir_version)

    def run(self, output_names: Optional[Sequence[str]], input_feed: dict,
            outputs: Optional[dict] = None) -> list:
        """The outputs named (all when None) for the inputs in input_feed ({name: array}).

        As ONNX Runtime's IO binding: an input may be a dmlvk.DeviceArray on the session's
        device, read in place (no transfer); outputs={name: DeviceArray} has those outputs
        written into the given device arrays, which are returned for them instead of numpy
        arrays. A session records its submission over the device arrays of a call and keeps
        it (for the last 4 combinations of shapes and device arrays): streaming through a few
        device arrays in turn costs no recording."""
        from .arrays import DeviceArray
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed must be a dict of name: array, got {type(input_feed).__name__}")
        names, known = self._output_names(output_names)
        outputs = dict(outputs or {})
        for nm, v in outputs.items():
            if nm not in known:
                raise ValueError(f"outputs names no graph output: {nm!r}; the outputs are {sorted(known)}")
            if not isinstance(v, DeviceArray) or v.device is not self.device:
                raise TypeError(f"output {nm!r} must be a dmlvk.DeviceArray on {self.device.name}")
        feeds = self._checked_feeds(input_feed)
        key = _plan_key(feeds, outputs)
        with self._lock:          # one run at a time: a plan's device Buffers are shared
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = _Plan(self, feeds, outputs)
                while len(self._plans) > _PLANS_KEPT:
                    self._plans.popitem(last=False)
            self._plans.move_to_end(key)
            values = plan.run(feeds)
        return [values[n] for n in names]

    def _output_names(self, output_names: Optional[Sequence[str]]) -> tuple:
        """(the outputs asked for, all the graph's output names) after checking the former."""
        names = [o.name for o in self._outputs] if output_names is None else list(output_names)
        known = {o.name for o in self._outputs}
        for nm in names:
            if nm not in known:
                raise ValueError(f"no graph output named {nm!r}; the outputs are {sorted(known)}")
        return names, known

    def _checked_feeds(self, input_feed: dict) -> dict:
        """{input name: contiguous array or DeviceArray} after the checks of run()."""
        from .arrays import DeviceArray
        feeds = {}
        for arg in self._inputs:
            if arg.name not in input_feed:
                raise ValueError(f"input {arg.name!r} is missing from input_feed")
            a = input_feed[arg.name]
            if isinstance(a, DeviceArray):
                if a.device is not self.device:
                    raise ValueError(f"input {arg.name!r} lives on {a.device.name}, not on {self.device.name}")
            else:
                a = np.ascontiguousarray(np.asarray(a))
            want = _NUMPY.get(arg.type)
            if want is not None and a.dtype != want:
                raise TypeError(f"input {arg.name!r} must be {np.dtype(want)} ({arg.type}), got {a.dtype}")
            feeds[arg.name] = a
        extra = set(input_feed) - {a.name for a in self._inputs}
        if extra:
            raise ValueError(f"input_feed names no graph input: {sorted(extra)}")
        return feeds

    def run_stream(self, output_names: Optional[Sequence[str]], input_feeds: Iterable[dict],
                   depth: int = 2) -> Iterator[list]:
        """run() over a sequence of input feeds (numpy arrays), yielding each one's outputs in order,
        with up to `depth` of them in flight: while the device computes one, the host copies the
        next one's inputs in and the previous one's outputs out. Each frame in flight has a plan
        of its own (its staging and device memory); a plan with steps on the host (QuantizeLinear
        without double-precision division, say) runs its frames one at a time."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, got {depth!r}")
        names, _ = self._output_names(output_names)
        pending: "deque[tuple]" = deque()      # (plan in flight or None, its outputs when done)
        mine: Dict[tuple, list] = {}            # the plans this stream holds, per input signature
        count = 0
        try:
            for input_feed in input_feeds:
                feeds = self._checked_feeds(input_feed)
                key = _plan_key(feeds)
                plans = mine.get(key)
                if plans is None:
                    with self._lock:        # another stream of this signature makes its own
                        plans = self._stream_plans.pop(key, None)
                    if plans is None or len(plans) != depth:
                        plans = [_Plan(self, feeds, None) for _ in range(depth)]
                    mine[key] = plans
                plan = plans[count % depth]
                count += 1
                if plan.started(feeds):
                    pending.append((plan, None))
                else:
                    pending.append((None, plan.run(feeds)))
                # at most depth - 1 frames left in flight, so the next frame's plan is free
                while pending and (len(pending) >= depth or pending[0][0] is None):
                    yield self._finished(pending.popleft(), names)
            while pending:
                yield self._finished(pending.popleft(), names)
        finally:
            for plan, _ in pending:                  # a consumer that stopped early
                if plan is not None:
                    plan.finish()
            with self._lock:
                self._stream_plans.update(mine)
                while len(self._stream_plans) > _PLANS_KEPT:
                    self._stream_plans.pop(next(iter(self._stream_plans)))

    @staticmethod
    def _finished(item: tuple, names: list) -> list:
        plan, values = item
        if plan is not None:
            values = plan.finish()
        return [values[n] for n in names]

    def device_work(self, input_feed: dict) -> tuple:
        """(Program, dispatches, step kinds) of the plan that run() made for inputs like these (run
        them once first): the first device stretch's recorded submission, its (Kernel, Buffers)
        dispatches, and the plan's steps in order ("device", "host", "view"). For benchmarks and
        probes, which time the device's part alone."""
        plan = self._plans.get(_plan_key(input_feed))
        if plan is None:
            raise ValueError("no plan for these inputs: run the session with them first")
        program, dispatches = plan.device_work()
        return program, dispatches, [kind for kind, _ in plan.steps]


def _plan_key(feeds: dict, outputs: Optional[dict] = None) -> tuple:
    """The plan cache's key: the inputs' names, shapes and dtypes, and the device arrays bound."""
    from .arrays import DeviceArray
    bound = lambda v: id(v.buffer) if isinstance(v, DeviceArray) else None
    return (tuple((k, tuple(v.shape), np.dtype(v.dtype).str, bound(v)) for k, v in sorted(feeds.items())),
            tuple((k, bound(v)) for k, v in sorted((outputs or {}).items())))


def _commute(nodes: List[_Node], consts: dict) -> List[_Node]:
    """Move per-tensor DequantizeLinear nodes after the layout ops that consume them, and per-tensor
    QuantizeLinear nodes before the layout ops that produce their input (exact: a permutation
    commutes with an elementwise map), where the tensor in between has no other consumer."""
    nodes = list(nodes)

    def consumers(name):
        return _users(nodes, name)

    def producer(name):
        return _maker(nodes, name)

    def per_tensor(q: _Node) -> bool:
        return all(_per_tensor(consts.get(q.inputs[k])) for k in (1, 2) if k < len(q.inputs) and q.inputs[k])

    def swap(a: _Node, b: _Node, suffix: str) -> None:
        # x -> a -> t -> b -> y   becomes   x -> b -> t' -> a -> y
        x, t, y = a.inputs[0], a.outputs[0], b.outputs[0]
        b.inputs[0], b.outputs[0] = x, t + suffix
        a.inputs[0], a.outputs[0] = t + suffix, y
        i, j = nodes.index(a), nodes.index(b)
        nodes[i], nodes[j] = nodes[j], nodes[i]

    changed = True
    while changed:
        changed = False
        for dq in [n for n in nodes if n.op == "DequantizeLinear" and per_tensor(n)]:
            users = consumers(dq.outputs[0])
            if len(users) == 1 and users[0].op in LAYOUT_OPS:
                swap(dq, users[0], "__quantized")
                changed = True
        for q in [n for n in nodes if n.op == "QuantizeLinear" and per_tensor(n)]:
            lay = producer(q.inputs[0])
            if lay is not None and lay.op in LAYOUT_OPS and len(consumers(q.inputs[0])) == 1:
                swap(lay, q, "__float")
                changed = True
    return nodes


# ---- QDQ models (onnxruntime's quantize_static default format) -----------------------------------

def _users(nodes: List[_Node], name: str) -> List[_Node]:
    return [n for n in nodes if name in n.inputs]


def _maker(nodes: List[_Node], name: str) -> Optional[_Node]:
    return next((n for n in nodes if name in n.outputs), None)


def _qparams(n: _Node, consts: dict, dtype=np.uint8) -> tuple:
    """A QuantizeLinear / DequantizeLinear node's (scale, zero point) constants; the zero point
    defaults to 0 of `dtype` (a DequantizeLinear's input dtype, uint8 for QuantizeLinear)."""
    scale = consts[n.inputs[1]]
    zp = consts[n.inputs[2]] if len(n.inputs) > 2 and n.inputs[2] else np.zeros((), dtype)
    return scale, zp


def _fuse_qdq(nodes: List[_Node], consts: dict, graph_outputs: set) -> tuple:
    """Each DequantizeLinear -> Conv (-> Relu or Clip) -> QuantizeLinear group made a QLinearConv,
    as onnxruntime's QDQ transformers do before its CPU kernels run (so dmlvk computes what ONNX
    Runtime computes): the input a per-tensor DequantizeLinear of a tensor, the weight one of an
    8-bit constant (per-tensor, or per output channel: axis 0), the bias absent or one of an int32
    constant with zero point 0 (used as the int32 bias, as onnxruntime does), the output quantized
    per tensor by one QuantizeLinear; a Relu between them only where that zero point is its type's
    lowest value, a Clip only where its range holds the quantized range (then both change nothing).
    Returns (nodes, messages for the Conv/Relu/Clip nodes left over); the weights'
    DequantizeLinear nodes, now read by nothing, are dropped later with the other dead nodes."""
    nodes = list(nodes)
    bad, reported = [], set()

    def dq_of(name, constant):
        d = _maker(nodes, name)
        if d is None or d.op != "DequantizeLinear" or any(k and k not in consts for k in d.inputs[1:3]):
            return None
        return d if (d.inputs[0] in consts) == constant else None

    for c in [n for n in nodes if n.op == "Conv"]:
        def refuse(why):
            reported.add(c.name)
            bad.append(f"{c.name}: Conv not in a DequantizeLinear -> Conv -> QuantizeLinear group dmlvk runs "
                       f"as QLinearConv ({why})")
        dx, dw = dq_of(c.inputs[0], False), dq_of(c.inputs[1], True) if len(c.inputs) > 1 else None
        if dx is None or dw is None:
            refuse("its input and weight must come from DequantizeLinear nodes, the weight's of a constant")
            continue
        w = consts[dw.inputs[0]]
        xs, xzp = _qparams(dx, consts, np.uint8)
        ws, wzp = _qparams(dw, consts, w.dtype)
        if xs.size != 1 or xzp.size != 1:
            refuse("the input is quantized per axis")
            continue
        if w.dtype not in (np.int8, np.uint8) or w.ndim != 4:
            refuse(f"a {w.ndim}-D {w.dtype} weight")
            continue
        if ws.size > 1 and (int(dw.attrs.get("axis", 1)) % 4 != 0 or ws.size != w.shape[0]):
            refuse("the weight is quantized along an axis other than its output channels")
            continue
        bias = None
        if len(c.inputs) > 2 and c.inputs[2]:
            db = dq_of(c.inputs[2], True)
            bq = None if db is None else consts[db.inputs[0]]
            if db is None or bq.dtype != np.int32 or np.any(_qparams(db, consts, np.int32)[1] != 0):
                refuse("the bias must be a DequantizeLinear of an int32 constant with zero point 0")
                continue
            bias = db.inputs[0]
        act, q = None, None
        users = _users(nodes, c.outputs[0])
        if len(users) == 1 and users[0].op in ("Relu", "Clip") and c.outputs[0] not in graph_outputs:
            act, users = users[0], _users(nodes, users[0].outputs[0])
            out_name = act.outputs[0]
        else:
            out_name = c.outputs[0]
        if len(users) == 1 and users[0].op == "QuantizeLinear" and out_name not in graph_outputs \
                and all(k in consts for k in users[0].inputs[1:3] if k):
            q = users[0]
        if q is None:
            refuse("its output must go to one QuantizeLinear alone")
            continue
        ys, yzp = _qparams(q, consts, np.uint8)
        if ys.size != 1 or yzp.size != 1:
            refuse("the output is quantized per axis")
            continue
        if act is not None and not _activation_is_saturation(act, ys, yzp, consts):
            reported.add(act.name)
            bad.append(f"{act.name}: {act.op} between a Conv and its QuantizeLinear that the quantization "
                       f"does not already apply (dmlvk fuses it only where the zero point is the "
                       f"type's lowest value (Relu), or the range holds the quantized range (Clip))")
            continue
        for nm, v in ((f"{c.name}__x_zero_point", xzp), (f"{c.name}__w_zero_point", wzp),
                      (f"{c.name}__y_zero_point", yzp)):
            consts[nm] = np.asarray(v)
        ins = [dx.inputs[0], dx.inputs[1], f"{c.name}__x_zero_point", dw.inputs[0], dw.inputs[1],
               f"{c.name}__w_zero_point", q.inputs[1], f"{c.name}__y_zero_point"] + ([bias] if bias else [])
        fused = _Node("QLinearConv", c.name, ins, [q.outputs[0]],
                      {k: v for k, v in c.attrs.items() if k != "kernel_shape"})
        nodes[nodes.index(c)] = fused
        for gone in (act, q):
            if gone is not None:
                nodes.remove(gone)
    for n in nodes:
        if n.op in ("Relu", "Clip") and n.name not in reported:
            bad.append(f"{n.name}: {n.op} outside a DequantizeLinear -> Conv -> QuantizeLinear group")
    return nodes, bad


def _activation_is_saturation(act: _Node, ys, yzp, consts: dict) -> bool:
    """Whether Relu / Clip before this QuantizeLinear changes no quantized value."""
    info = np.iinfo(yzp.dtype)
    if act.op == "Relu":
        return int(yzp) == info.min
    lo, hi = act.attrs.get("min"), act.attrs.get("max")          # opset 6 attributes, else inputs
    if len(act.inputs) > 1 and act.inputs[1]:
        lo = consts.get(act.inputs[1])
    if len(act.inputs) > 2 and act.inputs[2]:
        hi = consts.get(act.inputs[2])
    if (len(act.inputs) > 1 and act.inputs[1] and lo is None) or (len(act.inputs) > 2 and act.inputs[2] and hi is None):
        return False                                              # a range that is not constant
    qlo = np.float32(info.min - int(yzp)) * np.float32(ys.reshape(-1)[0])
    qhi = np.float32(info.max - int(yzp)) * np.float32(ys.reshape(-1)[0])
    return (lo is None or np.float32(lo) <= qlo) and (hi is None or np.float32(hi) >= qhi)


def _drop_requantize_pairs(nodes: List[_Node], consts: dict, graph_outputs: set) -> List[_Node]:
    """A DequantizeLinear whose only consumer is a QuantizeLinear with the same scale and zero point
    (and type) gives back its input: the pair becomes an Identity (what onnxruntime's QDQ clean-up
    does; left by quantized layout operators once _commute moved them)."""
    nodes = list(nodes)
    for q in [n for n in nodes if n.op == "QuantizeLinear"]:
        d = _maker(nodes, q.inputs[0])
        if d is None or d.op != "DequantizeLinear" or len(_users(nodes, d.outputs[0])) != 1 \
                or d.outputs[0] in graph_outputs or d.inputs[0] in consts:
            continue
        if len(d.inputs) < 3 or len(q.inputs) < 3 or not all(k in consts for k in d.inputs[1:3] + q.inputs[1:3]):
            continue              # zero points given and constant: then their types are known
        d_s, d_zp = _qparams(d, consts, np.uint8)
        q_s, q_zp = _qparams(q, consts, np.uint8)
        if d_s.size == q_s.size == 1 and d_zp.size == q_zp.size == 1 and d_zp.dtype == q_zp.dtype \
                and np.float32(d_s.reshape(-1)[0]) == np.float32(q_s.reshape(-1)[0]) and int(d_zp) == int(q_zp):
            nodes[nodes.index(q)] = _Node("Identity", q.name, [d.inputs[0]], list(q.outputs), {})
            nodes.remove(d)
    return nodes


def _drop_dead(nodes: List[_Node], graph_outputs: set) -> List[_Node]:
    """Without the nodes whose outputs nothing reads (the weights' DequantizeLinear nodes once fused)."""
    nodes = list(nodes)
    while True:
        read = {k for n in nodes for k in n.inputs} | graph_outputs
        dead = [n for n in nodes if not any(o in read for o in n.outputs)]
        if not dead:
            return nodes
        nodes = [n for n in nodes if n not in dead]


# ---- planning and running -----------------------------------------------------------------------

@dataclass
class _Dev:
    """A tensor on the device: a Buffer, read as a packed array of shape and dtype. staged: its
    bytes are in the Buffer's host staging too (downloaded by the submission that made it)."""
    buffer: Buffer
    shape: tuple
    dtype: np.dtype
    staged: bool = True


def _conv_kwargs(n: _Node) -> dict:
    """A Conv-like node's attributes as the convolution descriptions' keyword arguments."""
    pt, pl, pb, pr = list(n.attrs.get("pads", [0, 0, 0, 0]))
    return dict(strides=tuple(n.attrs.get("strides", [1, 1])), dilations=tuple(n.attrs.get("dilations", [1, 1])),
                start_padding=(pt, pl), end_padding=(pb, pr), group_count=int(n.attrs.get("group", 1)))


class _Plan:
    """The nodes for one set of input shapes, cut into stretches of host and device work; each
    device stretch a recorded Program with its Buffers."""

    def __init__(self, session: InferenceSession, feeds: dict, outputs: Optional[dict] = None):
        from .ops.depth_space import DepthToSpace1Desc, SpaceToDepth1Desc
        from .ops.quantized_conv import constant_filter, prepare_call
        from .tensor import TensorDesc
        self.session, self.device = session, session.device
        self.device_outputs = dict(outputs or {})     # graph output name -> the caller's DeviceArray
        dev, consts = self.device, session._consts
        shapes = {k: (v.shape, v.dtype) for k, v in feeds.items()}
        shapes.update({k: (v.shape, v.dtype) for k, v in consts.items()})
        self.steps = []           # ("host", node), ("view", node) or ("device", [(op, bindings, node)])
        on_device = set()         # names produced by device work
        for n in session._nodes:
            if n.op in HOST_OPS:
                x_shape, x_dt = shapes[n.inputs[0]]
                zp = consts.get(n.inputs[2]) if len(n.inputs) > 2 and n.inputs[2] else None
                if n.op == "QuantizeLinear":
                    out = (x_shape, np.dtype(np.uint8) if zp is None else zp.dtype)
                else:
                    out = (x_shape, np.dtype(np.float32))
                shapes[n.outputs[0]] = out
                desc = None if session.host_quantization else _device_qdq(n, x_shape, x_dt, out[1], consts, dev)
                if desc is None:
                    self.steps.append(("host", n))
                    continue
                op = dev.operator(desc)
                bind = [None, dev.upload(desc.params(consts[n.inputs[1]], zp))]
                on_device.add(n.outputs[0])
                if not self.steps or self.steps[-1][0] != "device":
                    self.steps.append(("device", []))
                self.steps[-1][1].append((op, bind, n))
                continue
            if n.op in VIEW_OPS:
                x_shape, dt = shapes[n.inputs[0]]
                shapes[n.outputs[0]] = (_view_shape(n, x_shape, consts), dt)
                if self.steps and self.steps[-1][0] == "device" and n.inputs[0] in on_device:
                    self.steps[-1][1].append((None, None, n))      # a re-view inside device work
                    on_device.add(n.outputs[0])
                else:
                    self.steps.append(("view", n))
                continue
            x_shape, dt = shapes[n.inputs[0]]
            if n.op == "QLinearConv":
                if dt not in (np.uint8, np.int8) or len(x_shape) != 4:
                    raise UnsupportedModelError(f"{n.name}: QLinearConv input of dtype {dt}, shape {x_shape}")
                c = [consts[k] for k in n.inputs[1:8]]
                bias = consts[n.inputs[8]] if len(n.inputs) > 8 and n.inputs[8] else None
                xs, xzp, w, ws, wzp, ys, yzp = c
                op, host_inputs, _, _ = prepare_call(
                    np.zeros(x_shape, dt), np.float32(xs.reshape(-1)[0]), xzp.reshape(()).astype(dt),
                    w, ws.astype(np.float32).reshape(-1) if ws.size > 1 else np.float32(ws.reshape(-1)[0]),
                    wzp.reshape(-1) if wzp.size > 1 else wzp.reshape(()), None if bias is None else bias.astype(np.int32),
                    np.float32(ys.reshape(-1)[0]), yzp.reshape(()), **_conv_kwargs(n), output_dtype=None, device=dev)
                # The weights are constants: bound once, at initialization.
                op, host_inputs = constant_filter(op, host_inputs)
                bind = [None] + [None if a is None else dev.upload(a) for a in host_inputs[1:]]
                out_desc = op.output_descs[0]
                out_shape, out_dt = tuple(out_desc.sizes), out_desc.data_type.numpy_dtype
            elif n.op == "ConvInteger":
                if dt not in (np.uint8, np.int8) or len(x_shape) != 4:
                    raise UnsupportedModelError(f"{n.name}: ConvInteger input of dtype {dt}, shape {x_shape}")
                op, bind = _conv_integer(n, x_shape, dt, consts, dev)
                out_shape, out_dt = tuple(op.output_descs[0].sizes), np.int32
            else:
                b = int(n.attrs["blocksize"])
                nn, cc, hh, ww = x_shape
                if n.op == "DepthToSpace":
                    out_shape = (nn, cc // (b * b), hh * b, ww * b)
                    mode = n.attrs.get("mode", b"DCR")
                    order = DepthSpaceOrder.parse(mode.decode() if isinstance(mode, bytes) else mode)
                    desc_cls = DepthToSpace1Desc
                else:
                    out_shape = (nn, cc * b * b, hh // b, ww // b)
                    order, desc_cls = DepthSpaceOrder.DEPTH_COLUMN_ROW, SpaceToDepth1Desc
                dtype = DataType.from_numpy(dt)
                op = dev.operator(desc_cls(TensorDesc(dtype, x_shape), TensorDesc(dtype, out_shape), b, order))
                bind, out_dt = [None], dt
            shapes[n.outputs[0]] = (out_shape, np.dtype(out_dt))
            on_device.add(n.outputs[0])
            if not self.steps or self.steps[-1][0] != "device":
                self.steps.append(("device", []))
            self.steps[-1][1].append((op, bind, n))
        self._programs = {}
        self._in_flight = None
        self._returned: Dict[str, list] = {}      # finish()'s output arrays, to reuse once let go

    def run(self, feeds: dict) -> dict:
        from .arrays import DeviceArray
        values: dict = {k: _Dev(v.buffer, v.shape, v.dtype, staged=False) if isinstance(v, DeviceArray) else v
                        for k, v in feeds.items()}
        values.update(self.session._consts)
        for i, (kind, what) in enumerate(self.steps):
            if kind == "host":
                n = what
                x = self._host(values, n.inputs[0])
                args = [values[k] if k else None for k in n.inputs[1:]]
                axis = int(n.attrs.get("axis", 1))
                fn = quantize_linear if n.op == "QuantizeLinear" else dequantize_linear
                values[n.outputs[0]] = fn(x, *args, axis=axis)
            elif kind == "view":
                n = what
                v = values[n.inputs[0]]
                shape = _view_shape(n, v.shape, self.session._consts)
                values[n.outputs[0]] = dataclasses.replace(v, shape=shape) if isinstance(v, _Dev) else v.reshape(shape)
            else:
                self._run_device(i, what, values)
        out = {}
        for k in [o.name for o in self.session._outputs]:
            da = self.device_outputs.get(k)
            if da is None:
                out[k] = self._host(values, k)
                continue
            v = values[k]
            if not (isinstance(v, _Dev) and v.buffer is da.buffer):      # made elsewhere: put it there
                v = self._host(values, k)
                _check_given(k, v.shape, v.dtype, da)
                da.buffer.write(np.ascontiguousarray(v))
            out[k] = da
        return out

    def started(self, feeds: dict) -> bool:
        """Starts a frame without waiting for the device, where the plan is one device stretch from
        host inputs to host outputs that has run once (recorded): its inputs copied into staging,
        its submission made; finish() completes it. False where it cannot (run() the frame)."""
        from .arrays import DeviceArray
        if (len(self.steps) != 1 or self.steps[0][0] != "device" or self.device_outputs or 0 not in self._programs
                or any(isinstance(v, DeviceArray) for v in feeds.values())):
            return False
        commands, uploads, produced = self._programs[0]
        values = dict(feeds)
        values.update(self.session._consts)
        _upload(uploads, values)
        commands.start()
        self._in_flight = values
        return True

    def finish(self) -> dict:
        """The outputs of the frame started(), once the device has finished it."""
        values, self._in_flight = self._in_flight, None
        commands, _, produced = self._programs[0]
        commands.wait()
        values.update(produced)
        return {o.name: self._host(values, o.name, recycle=True) for o in self.session._outputs}

    def device_work(self) -> tuple:
        """(Program, dispatches) of the first device stretch, recorded by the plan's first run:
        what the benchmark and tools/model_probe.py time."""
        index = next(i for i, (kind, _) in enumerate(self.steps) if kind == "device")
        commands = self._programs[index][0]
        return commands.program, commands.dispatches

    def _host(self, values: dict, name: str, recycle: bool = False) -> np.ndarray:
        """The value as a numpy array (copied out of staging); recycle: into an array this plan
        returned before that nobody else holds any more (no page faults of fresh memory)."""
        v = values[name]
        if isinstance(v, _Dev):
            nbytes = int(np.prod(v.shape)) * v.dtype.itemsize
            if not v.staged:                      # Buffer.read copies it out of staging itself
                v = values[name] = v.buffer.read()[:nbytes].view(v.dtype).reshape(v.shape)
                return v
            staged = v.buffer.host[:nbytes].view(v.dtype).reshape(v.shape)
            v = self._free_array(name, staged) if recycle else None
            if v is None:
                v = np.empty_like(staged)
                if recycle:
                    self._returned.setdefault(name, []).append(v)
            values[name] = v
            _copy(v, staged)
        return v

    def _free_array(self, name: str, like: np.ndarray) -> Optional[np.ndarray]:
        """An array returned for output `name` earlier, of like's shape and dtype, that only this
        plan still refers to (no views of it either: a view holds its base), or None. At most
        _RECYCLED arrays an output are kept for this."""
        kept = self._returned.setdefault(name, [])
        for a in kept:
            # the list's reference, the loop variable's and getrefcount's argument: nobody else's
            if sys.getrefcount(a) <= 3 and a.shape == like.shape and a.dtype == like.dtype:
                return a
        if len(kept) >= _RECYCLED:
            kept.pop(0)
        return None

    def _run_device(self, index: int, calls: list, values: dict) -> None:
        """One device stretch: its inputs uploaded, its operators run, what later host steps and
        the graph's outputs need downloaded, in one submission."""
        made = self._programs.get(index)
        if made is None:
            made = self._programs[index] = self._record(index, calls, values)
        commands, uploads, produced = made
        _upload(uploads, values)
        commands.execute()
        values.update(produced)

    def _record(self, index: int, calls: list, values: dict):
        dev = self.device
        bufs: Dict[str, _Dev] = {}
        uploads = []
        commands = CommandList(dev)
        for op, bind, n in calls:
            src = bufs[n.inputs[0]] if n.inputs[0] in bufs else values[n.inputs[0]]
            if op is None:        # a re-view: the same Buffer
                bufs[n.outputs[0]] = _Dev(src.buffer, _view_shape(n, src.shape, self.session._consts), src.dtype)
                continue
            if isinstance(src, _Dev):
                x = src
            else:
                a = np.asarray(src)
                x = bufs[n.inputs[0]] = _Dev(Buffer(dev, max(-(-a.nbytes // 4) * 4, 4)), a.shape, a.dtype)
                uploads.append((n.inputs[0], x.buffer))
            od = op.output_descs[0]
            shape, dtype = tuple(od.sizes), np.dtype(od.data_type.numpy_dtype)
            given = self.device_outputs.get(n.outputs[0])
            if given is not None:
                _check_given(n.outputs[0], shape, dtype, given)
            y = bufs[n.outputs[0]] = _Dev(Buffer(dev, od.total_bytes) if given is None else given.buffer, shape, dtype)
            commands.record(op, [x.buffer] + bind[1:], [y.buffer])
        produced = {n.outputs[0]: bufs[n.outputs[0]] for _, _, n in calls}
        for name, d in produced.items():
            values[name] = d
        later = self._needed_after(index)
        downloads = list({id(d.buffer): d.buffer for name, d in produced.items() if name in later}.values())
        for name, d in produced.items():           # left on the device: not in staging
            if d.buffer not in downloads:
                produced[name] = dataclasses.replace(d, staged=False)
                values[name] = produced[name]
        commands.transfer(uploads=[b for _, b in uploads], downloads=downloads)
        return commands, uploads, produced

    def _needed_after(self, index: int) -> set:
        """Names read by host steps after step `index`, and the graph's outputs not bound to the
        caller's device arrays, following views."""
        need = {o.name for o in self.session._outputs if o.name not in self.device_outputs}
        alias = {}
        for kind, what in self.steps[index + 1:]:
            if kind == "view":
                alias[what.outputs[0]] = what.inputs[0]
            elif kind == "host":
                need.add(what.inputs[0])
            else:
                need |= {n.inputs[0] for op, _, n in what if op is not None}
        out = set()
        for name in need:
            while name in alias:
                out.add(name)
                name = alias[name]
            out.add(name)
        return out


def _upload(uploads: list, values: dict) -> None:
    """Each (name, Buffer) of a stretch's host inputs: the value's bytes into the Buffer's staging."""
    for name, buf in uploads:
        raw = np.ascontiguousarray(values[name]).reshape(-1).view(np.uint8)
        _copy(buf.host[:raw.size], raw)


def _check_given(name: str, shape: tuple, dtype, given) -> None:
    """An output DeviceArray the caller gave must have the output's shape and dtype."""
    if tuple(shape) != given.shape or np.dtype(dtype) != given.dtype:
        raise ValueError(f"output {name!r} is {np.dtype(dtype)} {tuple(shape)}; the DeviceArray given is "
                         f"{given.dtype} {given.shape}")


def _device_qdq(n: _Node, x_shape: tuple, x_dt, out_dt, consts: dict, dev: Device):
    """The QuantizeLinearDesc that runs this QuantizeLinear / DequantizeLinear node on the device,
    or None where the host runs it: other types than float32 <-> 8 bits, or QuantizeLinear on a
    device without double-precision division (ops.quantize)."""
    from .ops.quantize import QuantizeLinearDesc
    quantize = n.op == "QuantizeLinear"
    q_dt = np.dtype(out_dt if quantize else x_dt)
    if q_dt not in (np.uint8, np.int8) or np.dtype(x_dt if quantize else out_dt) != np.float32 or not x_shape:
        return None
    if not QuantizeLinearDesc.runs_on(dev.capabilities, quantize):
        return None
    scale = consts[n.inputs[1]]
    axis = None
    if scale.size > 1:
        axis = int(n.attrs.get("axis", 1)) % len(x_shape)
        if x_shape[axis] != scale.size:
            return None
    return QuantizeLinearDesc(quantize, x_shape, q_dt, axis)


# Host copies of frames into and out of staging from this size on run in pieces on a pool of threads
# (numpy copies without the GIL), pieces of at least _COPY_PIECE bytes.
_PARALLEL_COPY_BYTES = 1 << 20
_RECYCLED = 4                # output arrays a stream's plan keeps to reuse, per output
_COPY_PIECE = 256 << 10
_POOL: list = []
_POOL_LOCK = threading.Lock()


def _copy_pool():
    """The copy threads (min(8, CPUs)), made at first use and kept."""
    with _POOL_LOCK:
        if not _POOL:
            from concurrent.futures import ThreadPoolExecutor
            _POOL.append(ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="dmlvk-copy"))
        return _POOL[0]


def _copy(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src for C-contiguous arrays of one size; from _PARALLEL_COPY_BYTES on, in pieces on
    several threads, so that the page faults of a fresh output array and the copy itself (a frame's
    float32 staging is memory the device maps) use several cores."""
    threads = min(8, os.cpu_count() or 1, src.nbytes // _COPY_PIECE)
    if src.nbytes < _PARALLEL_COPY_BYTES or threads < 2:
        np.copyto(dst, src)
        return
    d, s = dst.reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8)
    bounds = [len(s) * i // threads // 4096 * 4096 for i in range(threads)] + [len(s)]
    pool = _copy_pool()
    done = [pool.submit(np.copyto, d[a:b], s[a:b]) for a, b in zip(bounds[1:-1], bounds[2:])]
    np.copyto(d[:bounds[1]], s[:bounds[1]])          # the first piece on this thread
    for f in done:
        f.result()


def _conv_integer(n: _Node, x_shape: tuple, dt, consts: dict, dev: Device):
    """The operator and constant bindings of a ConvInteger node (ops.quantized_conv.ConvIntegerDesc)."""
    from .ops.quantized_conv import ConvIntegerDesc, small_tensor_bytes
    from .tensor import TensorDesc
    w = consts[n.inputs[1]]
    xzp = consts[n.inputs[2]] if len(n.inputs) > 2 and n.inputs[2] else None
    wzp = consts[n.inputs[3]] if len(n.inputs) > 3 and n.inputs[3] else None
    x_type, w_type = DataType.from_numpy(dt), DataType.from_numpy(w.dtype)
    one = TensorDesc(DataType.FLOAT32, (1, 1, 1, 1))
    wzp_shape = (1, w.shape[0], 1, 1) if wzp is not None and wzp.size > 1 else (1, 1, 1, 1)
    desc = ConvIntegerDesc(
        TensorDesc(x_type, x_shape), one, None if xzp is None else TensorDesc(x_type, (1, 1, 1, 1)),
        TensorDesc(w_type, w.shape), TensorDesc(DataType.FLOAT32, wzp_shape),   # unused; a zero point's
        None if wzp is None else TensorDesc(w_type, wzp_shape), None, one, None,  # scale has its Sizes
        None, **_conv_kwargs(n))                       # the output, once its sizes are known
    desc = dataclasses.replace(desc, output_tensor=TensorDesc(DataType.INT32, desc.output_sizes()))
    op = dev.operator(desc)
    upload = lambda a: None if a is None else dev.upload(small_tensor_bytes(a))
    ones = upload(np.float32([1.0]))
    filter_ones = upload(np.ones(int(np.prod(wzp_shape)), np.float32))
    bind = [None, ones, upload(xzp), dev.upload(np.ascontiguousarray(w)), filter_ones, upload(wzp), None, ones, None]
    return op, bind


def _view_shape(n: _Node, x_shape: tuple, consts: dict) -> tuple:
    if n.op == "Identity":
        return tuple(x_shape)
    if n.op == "Flatten":
        axis = int(n.attrs.get("axis", 1)) % max(len(x_shape), 1)
        return (int(np.prod(x_shape[:axis])), int(np.prod(x_shape[axis:])))
    target = [int(v) for v in consts[n.inputs[1]].reshape(-1)]
    shape = [x_shape[i] if v == 0 and not n.attrs.get("allowzero", 0) else v for i, v in enumerate(target)]
    if -1 in shape:
        known = int(np.prod([v for v in shape if v != -1]))
        shape[shape.index(-1)] = int(np.prod(x_shape)) // max(known, 1)
    if int(np.prod(shape)) != int(np.prod(x_shape)):
        raise UnsupportedModelError(f"{n.name}: Reshape of {tuple(x_shape)} to {tuple(target)}")
    return tuple(shape)


# ---- command line -------------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    """dmlvk run MODEL.onnx --input NAME=FILE.npy ...: run a model, write its outputs as .npy."""
    import argparse
    import sys
    import time
    from .runtime.device import Device as _Device
    ap = argparse.ArgumentParser(prog="dmlvk run", description="Run an ONNX model with dmlvk's operators "
                                 "and write each output as OUT_DIR/NAME.npy.")
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                    help="an input (repeat per input); for a one-input model NAME=FOLDER runs each .npy or "
                         "image file in the folder, frames pipelined, and writes OUT_DIR/FILE.npy (an image "
                         "for an image input and a 1- or 3-channel output; FILE-OUTPUT for several outputs)")
    ap.add_argument("--out-dir", default=".", help="where the outputs go (default: the current folder)")
    ap.add_argument("--batch-size", type=int, default=1, help="frames per run along axis 0 (default 1)")
    ap.add_argument("--device", type=int, default=None, help="device index (default: $DMLVK_DEVICE or 0)")
    a = ap.parse_args(argv)
    if a.batch_size < 1:
        ap.error("--batch-size must be at least 1")
    feeds, folder = {}, None
    for item in a.input:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            ap.error(f"--input takes NAME=FILE.npy, got {item!r}")
        if os.path.isdir(path):
            folder = (name, path)
        else:
            feeds[name] = np.load(path, allow_pickle=False)
    if folder and len(a.input) != 1:
        ap.error("a folder of inputs (NAME=FOLDER) is for one-input models")
    session = InferenceSession(a.model, device=_Device(a.device) if a.device is not None else None)
    if folder:
        return _run_folder(session, *folder, a.out_dir)
    missing = [i.name for i in session.get_inputs() if i.name not in feeds]
    if missing:
        ap.error(f"the model's inputs {missing} need --input NAME=FILE.npy")
    frames = {len(v) if v.ndim else 1 for v in feeds.values()}
    if len(frames) != 1 or any(v.ndim == 0 for v in feeds.values()):
        ap.error("every input needs the same number of frames along axis 0")
    total = frames.pop()
    batches = -(-total // a.batch_size)
    results = {o.name: [] for o in session.get_outputs()}
    for b in range(batches):
        part = {k: v[b * a.batch_size:(b + 1) * a.batch_size] for k, v in feeds.items()}
        t0 = time.perf_counter()
        outs = session.run(None, part)
        ms = (time.perf_counter() - t0) * 1e3
        for o, y in zip(session.get_outputs(), outs):
            results[o.name].append(y)
        print(f"batch {b + 1}/{batches}: {len(next(iter(part.values())))} frames, {ms:.1f} ms", file=sys.stderr)
    os.makedirs(a.out_dir, exist_ok=True)
    for name, parts in results.items():
        path = os.path.join(a.out_dir, f"{name.replace('/', '_')}.npy")
        np.save(path, np.concatenate(parts))
        print(path)
    return 0


_IMAGES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")


def _run_folder(session: InferenceSession, name: str, folder: str, out_dir: str) -> int:
    """dmlvk run MODEL --input NAME=FOLDER: each .npy or image file of the folder (sorted by name) as
    the model's one input, one output file per input, frames pipelined (run_stream), progress and
    frames per second on stderr. Images (Pillow) become (1, C, H, W) arrays of the input's type,
    C = 1 (grey) or 3 (RGB) as the model's input says, float inputs scaled to [0, 1]; an output of
    1 or 3 channels for an image input is written as an image of the same format, others as .npy."""
    import sys
    import time
    inputs = session.get_inputs()
    if [i.name for i in inputs] != [name]:
        print(f"dmlvk run: the model's inputs are {[i.name for i in inputs]}, not [{name!r}]", file=sys.stderr)
        return 2
    files = sorted(f for f in os.listdir(folder) if f.lower().endswith((".npy",) + _IMAGES))
    if not files:
        print(f"dmlvk run: no .npy or image files in {folder}", file=sys.stderr)
        return 2
    image = any(f.lower().endswith(_IMAGES) for f in files)
    if image:
        try:
            from PIL import Image
        except ImportError:
            print("dmlvk run: image inputs need Pillow: pip install pillow", file=sys.stderr)
            return 2
    shape, dtype = inputs[0].shape, _NUMPY.get(inputs[0].type, np.float32)
    channels = shape[1] if len(shape) == 4 and isinstance(shape[1], int) else 1

    def load(f: str) -> np.ndarray:
        path = os.path.join(folder, f)
        if not f.lower().endswith(_IMAGES):
            return np.load(path, allow_pickle=False)
        with Image.open(path) as im:
            a = np.asarray(im.convert("L" if channels == 1 else "RGB"))
        a = a[None, None] if a.ndim == 2 else a.transpose(2, 0, 1)[None]
        return (a.astype(np.float32) / 255).astype(dtype) if np.dtype(dtype).kind == "f" else a.astype(dtype)

    def save(f: str, o: str, y: np.ndarray) -> None:
        stem, ext = os.path.splitext(f)
        stem = stem if len(outputs) == 1 else f"{stem}-{o.replace('/', '_')}"
        if ext.lower() in _IMAGES and y.ndim == 4 and y.shape[0] == 1 and y.shape[1] in (1, 3):
            px = y[0].transpose(1, 2, 0)
            if px.dtype.kind == "f":
                px = np.rint(np.clip(np.nan_to_num(px), 0, 1) * 255)
            px = px.astype(np.uint8)
            Image.fromarray(px[..., 0] if px.shape[2] == 1 else px).save(os.path.join(out_dir, stem + ext))
        else:
            np.save(os.path.join(out_dir, stem + ".npy"), y)

    os.makedirs(out_dir, exist_ok=True)
    outputs = [o.name for o in session.get_outputs()]
    sizes, start = [], time.perf_counter()

    def feeds():
        for f in files:
            x = load(f)
            sizes.append(len(x) if x.ndim else 1)
            yield {name: x}

    for i, (f, ys) in enumerate(zip(files, session.run_stream(None, feeds()))):
        for o, y in zip(outputs, ys):
            save(f, o, y)
        rate = sum(sizes[:i + 1]) / (time.perf_counter() - start)
        print(f"\r[{i + 1}/{len(files)}] {f}: {rate:.1f} frames/s", end="", file=sys.stderr, flush=True)
    frames = sum(sizes)
    print(f"\n{len(files)} files, {frames} frames, {frames / (time.perf_counter() - start):.1f} frames/s",
          file=sys.stderr)
    return 0