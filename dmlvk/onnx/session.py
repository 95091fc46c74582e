"""InferenceSession: a model loaded (graph.load), checked against the lowerings (each entry's check),
rewritten (rewrite), and run through plans made per set of input shapes (plan.Plan)."""
from __future__ import annotations

import itertools
import threading
import warnings
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Iterable, Iterator, List, Optional, Sequence

import numpy as np

from ..arrays import DeviceArray, resolve_device
from ..runtime.device import Device
from . import graph as graphs, lower, partition, pixels, rewrite
from .graph import NUMPY_TYPES, Graph, NodeArg, UnsupportedModelError
from .plan import Plan, check_given, plan_key

PLANS_KEPT = 4            # input shapes whose operators and Buffers a session keeps


def prepare(model) -> Graph:
    """The graph dmlvk runs for a model (a path, an onnx.ModelProto or a Graph): checked (every node
    dmlvk cannot run named at once, as an UnsupportedModelError), QDQ groups fused (QLinearConv,
    QLinearAdd, QLinearConcat, QLinearLeakyRelu, QLinearPRelu), quantization moved to the edges (a
    Clip after the last DequantizeLinear fused into it), requantizing pairs and dead nodes dropped."""
    return prepared(model)[0]


def prepared(model, inputs: str = "float", outputs: str = "float") -> tuple:
    """(graph, input quantization, output quantization): prepare()'s graph with its float inputs and
    outputs in the formats asked for (pixels.py), and the 8-bit parameters of those in 8 bits."""
    g = model if isinstance(model, Graph) else graphs.load(model)
    known = lower.MODEL_OPS | rewrite.FUSED_OPS
    bad = [(n.name, f"{n.name}: {n.domain}.{n.op}" if n.domain else
            f"{n.name}: Constant without a numeric tensor value" if n.op == "Constant" else f"{n.name}: {n.op}")
           for n in g.nodes if n.domain or n.op not in known]
    why = []                       # the fusions' messages, for the nodes they left over
    for fuse in (rewrite.fuse_qdq, rewrite.fuse_qdq_add, rewrite.fuse_qdq_lookups):
        g, messages = fuse(g)
        why += messages
    g = rewrite.fuse_dequantize_clip(rewrite.commute(g, lower.moves_data))
    left = [n for n in g.nodes if n.op in rewrite.FUSED_OPS and n.op not in lower.LOWERINGS]
    for n in left:
        bad += [(n.name, m) for m in why if m.startswith(f"{n.name}: ")] or [(n.name, f"{n.name}: {n.op}")]
    bad += [(n.name, m) for n in g.nodes if n.op in lower.LOWERINGS and not n.domain
            for m in lower.LOWERINGS[n.op].check(n, g)]
    if bad:
        raise UnsupportedModelError("dmlvk cannot run these nodes of the model: " + "; ".join(m for _, m in bad),
                                    dict.fromkeys(name for name, _ in bad))
    g, in_q = pixels.feed_quantized(g, inputs)
    g, out_q = pixels.give_quantized(g, outputs)
    return rewrite.drop_dead(rewrite.drop_requantize_pairs(g)), in_q, out_q


class InferenceSession:
    """An ONNX model loaded for dmlvk: model is a path or an onnx.ModelProto; device a dmlvk.Device
    (None: the default one). QuantizeLinear and DequantizeLinear between float32 and 8 bits run on
    the device, in the same submission as the operators around them (QuantizeLinear where the
    device has shaderFloat64, which its exact division needs); host_quantization=True runs them
    with numpy instead (the same results). One session runs one call at a time (calls from
    several threads wait for each other).

    A model with nodes dmlvk cannot run is split (partition.py): the device runs what it can, ONNX
    Runtime's CPU provider the rest, with a warning at load naming what goes to the host; parts
    lists the parts in order as (Part, runner). fallback=False refuses such a model instead, naming
    every node dmlvk cannot run (UnsupportedModelError).

    inputs / outputs: "float" (the model's own types), "quantized" (float inputs fed as the 8-bit
    values of the QuantizeLinear that reads them, float outputs given as the 8-bit input of the
    DequantizeLinear that makes them: input_quantization / output_quantization give each one's
    (scale, zero point)) or "pixels" (uint8 pixels p in for the float p / 255; uint8 pixels out,
    the float output clipped to [0, 1], times 255, rounded half to even); outputs also "float16"
    (the float output rounded to float16). Each equals the float path's result on every element,
    converted so; the bytes that cross the host link are a quarter (a half) of float32's.
    They need a model that runs whole on the device (pixels.py says which models have them)."""

    def __init__(self, model, device: Optional[Device] = None, host_quantization: bool = False,
                 fallback: bool = True, inputs: str = "float", outputs: str = "float"):
        self.formats = (pixels.check_format("inputs", inputs), pixels.check_format("outputs", outputs))
        self.input_quantization: Dict[str, tuple] = {}
        self.output_quantization: Dict[str, tuple] = {}
        self.host_quantization = bool(host_quantization)
        self.model_graph = model if isinstance(model, Graph) else graphs.load(model)    # as the model has it
        self.device = resolve_device(device)
        self.parts: Optional[tuple] = None
        self.crossing_bytes = 0           # bytes handed between parts in the last run
        self.fallback = bool(fallback)
        self._host_nodes: frozenset = frozenset()   # nodes sent to the host once their shapes were refused
        try:
            self.graph, self.input_quantization, self.output_quantization = prepared(self.model_graph, inputs, outputs)
        except UnsupportedModelError as e:
            if not fallback:
                raise
            if self.formats != ("float", "float"):
                raise self._formats_refused(e) from None
            self.graph = self._split()
        self._plans: "OrderedDict[tuple, Plan]" = OrderedDict()
        self._stream_plans: Dict[tuple, list] = {}      # run_stream's plans, `depth` per signature
        self._lock = threading.Lock()

    def _split(self) -> Graph:
        """Makes self.parts; the graph of what runs (device parts as prepared, host parts as the
        model has them)."""
        model = self.model_graph
        types = partition.value_types(model.to_model())
        parts = partition.partition(model, prepare, types, self._host_nodes)
        partition.onnxruntime(parts)
        runners = []
        for p in parts:
            if p.kind == partition.DEVICE:
                runners.append(InferenceSession(partition.part_graph(model, p, types), self.device,
                                                self.host_quantization, fallback=False))
            else:
                runners.append(partition.HostPart(model, p, types))
        self.parts = tuple(zip(parts, runners))
        warnings.warn(f"dmlvk runs {partition.describe(parts)} of this model on the host with ONNX Runtime's "
                      f"CPU provider, in {len(parts)} part{'s' if len(parts) > 1 else ''}; fallback=False refuses such a model",
                      stacklevel=4 if self._host_nodes else 3)
        nodes = [n for p, r in self.parts for n in (r.graph.nodes if p.kind == partition.DEVICE else p.nodes)]
        return model.with_nodes(list({id(n): n for n in nodes}.values()))

    def _refit(self, refused: UnsupportedModelError) -> bool:
        """Where a node is refused only once the input shapes are known (a Resize to a size that is
        no whole multiple, say) and fallback is on: the model split again with those nodes on the
        host, for every shape from then on (True); False where nothing changes (the error stands)."""
        named = set(refused.nodes) & {n.name for n in self.model_graph.nodes}
        if not self.fallback or not named or named <= self._host_nodes:
            return False
        if self.formats != ("float", "float"):
            raise self._formats_refused(refused) from None
        self._host_nodes = self._host_nodes | named
        self.graph = self._split()
        self._plans.clear()
        self._stream_plans.clear()
        return True

    def _formats_refused(self, refused: UnsupportedModelError) -> UnsupportedModelError:
        return UnsupportedModelError(f"inputs={self.formats[0]!r}, outputs={self.formats[1]!r} need the model to run "
                                     f"whole on the device (no part of it on the host): {refused}", refused.nodes)

    def get_inputs(self) -> List[NodeArg]:
        return list(self.graph.inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self.graph.outputs)

    @property
    def nodes(self) -> List[str]:
        """The op types in the order dmlvk runs them (after fusing QDQ groups and moving
        quantization to the edges)."""
        return [n.op for n in self.graph.nodes]

    def runs_model(self):
        """What dmlvk runs, as an onnx.ModelProto: the nodes after fusing QDQ groups into
        QLinearConv and moving quantization to the edges, with the constants they read (to
        inspect, or to run elsewhere)."""
        return self.graph.to_model()

    def _plan(self, feeds: dict, outputs: Optional[dict] = None) -> Plan:
        return Plan(self.graph, self.device, feeds, outputs, self.host_quantization)

    def plan(self, input_feed: dict) -> Plan:
        """The plan run() makes (and keeps) for inputs like these (arrays, or any objects with their
        shape and dtype): the graph after the plan-time passes, and its steps. A split model has a
        plan per device part: ask those parts' sessions (parts)."""
        if self.parts is None:
            feeds = self._checked_feeds(input_feed)
            with self._lock:
                try:
                    return self._planned(feeds, {})
                except UnsupportedModelError as e:
                    if not self._refit(e):
                        raise
        raise ValueError(f"this model runs in {len(self.parts)} parts, each device part with plans "
                         "of its own: ask the sessions in parts")

    def placement(self, input_feed: dict) -> Dict[str, str]:
        """{node name: "device", "host" or "view"} for each node of the plan for inputs like these, in
        the order they run (fused nodes by their own names). A split model is run once on zeros of
        these shapes to learn its device parts' shapes; its host parts' nodes are "host"."""
        if self.parts is None:
            try:
                steps = self.plan(input_feed).steps
            except ValueError:
                if self.parts is None:            # refused, not split: the error stands
                    raise
            else:
                out = {}
                for kind, what in steps:
                    for n, low in (what.calls if kind == "device" else [what]):
                        out[n.name] = "view" if low.kind == "view" else kind
                return out
        seen = self.part_inputs(input_feed)
        out: Dict[str, str] = {}
        for i, (p, runner) in enumerate(self.parts):
            if p.kind == partition.DEVICE:
                out.update(runner.placement(seen[i]))
            else:
                out.update({n.name: "host" for n in p.nodes if n.name not in out})
        return out

    def part_inputs(self, input_feed: dict) -> Dict[int, dict]:
        """{part index: {name: value}}: what each part of a split model reads in a run on zeros of the
        inputs' shapes and dtypes (which sets crossing_bytes), for placement and census."""
        if self.parts is None:
            raise ValueError("this model is not split: it runs whole on the device")
        feeds = {k: np.zeros(v.shape, v.dtype) for k, v in self._checked_feeds(input_feed).items()}
        seen: Dict[int, dict] = {}
        self._refitting(lambda: self._run_parts(None, feeds, {}, seen))
        return seen

    def _refitting(self, call):
        """call() under the session's lock (one run at a time: a plan's device Buffers are shared),
        again after the model is split anew where a node is refused once the shapes are known."""
        with self._lock:
            while True:
                try:
                    return call()
                except UnsupportedModelError as e:
                    if not self._refit(e):
                        raise

    def run(self, output_names: Optional[Sequence[str]], input_feed: dict,
            outputs: Optional[dict] = None) -> list:
        """The outputs named (all when None) for the inputs in input_feed ({name: array}).

        As ONNX Runtime's IO binding: an input may be a dmlvk.DeviceArray on the session's
        device, read in place (no transfer); outputs={name: DeviceArray} has those outputs
        written into the given device arrays, which are returned for them instead of numpy
        arrays. A session records its submission over the device arrays of a call and keeps
        it (for the last 4 combinations of shapes and device arrays): streaming through a few
        device arrays in turn costs no recording."""
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

        def call():
            if self.parts is not None:
                return self._run_parts(names, feeds, outputs)
            values = self._planned(feeds, outputs).run(feeds)
            return [values[n] for n in names]
        return self._refitting(call)

    def _planned(self, feeds: dict, outputs: dict) -> Plan:
        """The kept plan for these feeds and bound outputs, made where there is none."""
        key = plan_key(feeds, outputs)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(feeds, outputs)
            while len(self._plans) > PLANS_KEPT:
                self._plans.popitem(last=False)
        self._plans.move_to_end(key)
        return plan

    def _run_parts(self, names: Optional[list], feeds: dict, outputs: dict, seen: Optional[dict] = None) -> list:
        """run() of a split model: each part in turn on what earlier parts gave (the device parts'
        outputs bound to the caller's device arrays where they are graph outputs given so); the
        outputs named (all where None). seen: {part index: its feeds}, filled where given."""
        values = dict(feeds)
        crossing = 0
        for i, (p, runner) in enumerate(self.parts):
            ins = {k: values[k] for k in p.inputs}
            crossing += sum(v.nbytes for k, v in ins.items() if k not in feeds)
            if seen is not None:
                seen[i] = ins
            if p.kind == partition.DEVICE:
                bound = {k: outputs[k] for k in p.outputs if k in outputs}
                values.update(zip(p.outputs, runner.run(list(p.outputs), ins, bound)))
            else:
                values.update(runner.run({k: v.numpy() if isinstance(v, DeviceArray) else v for k, v in ins.items()}))
        self.crossing_bytes = crossing
        for k, given in outputs.items():
            v = values[k]
            if v is not given:                  # made on the host: into the caller's device array
                v = v.numpy() if isinstance(v, DeviceArray) else np.ascontiguousarray(v)
                check_given(k, v.shape, v.dtype, given)
                given.buffer.write(v)
                values[k] = given
        return [values[n] for n in (names if names is not None else [o.name for o in self.graph.outputs])]

    def _output_names(self, output_names: Optional[Sequence[str]]) -> tuple:
        """(the outputs asked for, all the graph's output names) after checking the former."""
        known = self.graph.output_names
        names = [o.name for o in self.graph.outputs] if output_names is None else list(output_names)
        for nm in names:
            if nm not in known:
                raise ValueError(f"no graph output named {nm!r}; the outputs are {sorted(known)}")
        return names, known

    def _checked_feeds(self, input_feed: dict) -> dict:
        """{input name: contiguous array or DeviceArray} after the checks of run()."""
        feeds = {}
        for arg in self.graph.inputs:
            if arg.name not in input_feed:
                raise ValueError(f"input {arg.name!r} is missing from input_feed")
            a = input_feed[arg.name]
            if isinstance(a, DeviceArray):
                if a.device is not self.device:
                    raise ValueError(f"input {arg.name!r} lives on {a.device.name}, not on {self.device.name}")
            else:
                a = np.ascontiguousarray(np.asarray(a))
            want = NUMPY_TYPES.get(arg.type)
            if want is not None and a.dtype != want:
                raise TypeError(f"input {arg.name!r} must be {np.dtype(want)} ({arg.type}), got {a.dtype}")
            feeds[arg.name] = a
        extra = set(input_feed) - {a.name for a in self.graph.inputs}
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
        if self.parts is not None:
            yield from self._stream_parts(names, input_feeds, depth)
            return
        pending: "deque[tuple]" = deque()      # (plan in flight or None, its outputs when done)
        mine: Dict[tuple, list] = {}            # the plans this stream holds, per input signature
        count = 0
        frames = iter(input_feeds)
        try:
            for input_feed in frames:
                feeds = self._checked_feeds(input_feed)
                key = plan_key(feeds)
                plans = mine.get(key)
                if plans is None:
                    with self._lock:        # another stream of this signature makes its own
                        plans = self._stream_plans.pop(key, None)
                    if plans is None or len(plans) != depth:
                        try:
                            plans = [self._plan(feeds) for _ in range(depth)]
                        except UnsupportedModelError as e:
                            with self._lock:
                                if not self._refit(e):        # refused once the shapes are known
                                    raise
                            while pending:                    # split: the rest of the stream in parts
                                yield _finished(pending.popleft(), names)
                            mine.clear()
                            yield from self._stream_parts(names, itertools.chain([input_feed], frames), depth)
                            return
                    mine[key] = plans
                plan = plans[count % depth]
                count += 1
                if plan.started(feeds):
                    pending.append((plan, None))
                else:
                    pending.append((None, plan.run(feeds)))
                # at most depth - 1 frames left in flight, so the next frame's plan is free
                while pending and (len(pending) >= depth or pending[0][0] is None):
                    yield _finished(pending.popleft(), names)
            while pending:
                yield _finished(pending.popleft(), names)
        finally:
            for plan, _ in pending:                  # a consumer that stopped early
                if plan is not None:
                    plan.finish()
            with self._lock:
                self._stream_plans.update(mine)
                while len(self._stream_plans) > PLANS_KEPT:
                    self._stream_plans.pop(next(iter(self._stream_plans)))

    def _stream_parts(self, names: list, input_feeds: Iterable[dict], depth: int) -> Iterator[list]:
        """run_stream() of a split model: up to `depth` frames in flight on as many threads, each
        going through the parts in turn, so that one frame's host part runs while another's device
        part does (each device part runs one frame at a time; onnxruntime's sessions run several)."""
        pending: deque = deque()
        with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="dmlvk-part") as pool:
            try:
                for input_feed in input_feeds:
                    feeds = self._checked_feeds(input_feed)
                    pending.append(pool.submit(self._run_parts, names, feeds, {}))
                    while len(pending) >= depth:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for f in pending:                       # a consumer that stopped early
                    f.cancel()

    def device_work(self, input_feed: dict) -> tuple:
        """(Program, dispatches, step kinds) of the plan that run() made for inputs like these (run
        them once first): the first device stretch's recorded submission, its (Kernel, Buffers)
        dispatches, and the plan's steps in order ("device", "host", "view"). For benchmarks and
        probes, which time the device's part alone."""
        if self.parts is not None:
            raise ValueError("this model runs in parts: time the device parts' sessions (parts)")
        plan = self._plans.get(plan_key(input_feed))
        if plan is None:
            raise ValueError("no plan for these inputs: run the session with them first")
        program, dispatches = plan.device_work()
        return program, dispatches, [step[0] for step in plan.steps]


def _finished(item: tuple, names: list) -> list:
    plan, values = item
    if plan is not None:
        values = plan.finish()
    return [values[n] for n in names]
