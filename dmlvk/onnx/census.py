"""dmlvk census MODEL.onnx: what each node of a model becomes and where it runs (a model dmlvk cannot
run whole: how it is split, and what the host runs), or with --no-fallback exactly why the model is
refused. With input shapes (--shape NAME=N,C,H,W, or the model's own where they are fixed)
the plan is made as a run would make it: the plan-time fusions and each node's place (device, host,
view) are shown; without them, the nodes after the load-time rewrites."""
from __future__ import annotations

import argparse
import sys
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..runtime.device import Device
from . import partition
from .graph import NUMPY_TYPES, Graph, UnsupportedModelError
from .lower import LOWERINGS
from .session import InferenceSession


def absorbed(model: Graph, ran: Graph) -> Dict[str, List[str]]:
    """{the name of a node that runs: the model's nodes it stands for}: a node that runs stands for
    the model's node of its own name, and for those of the model's nodes gone from the graph that
    made or read only the tensors around it (its QuantizeLinear and DequantizeLinear, a fused
    activation, a folded tail)."""
    kept = {n.name for n in ran.nodes}
    gone = [n for n in model.nodes if n.name not in kept]
    out = {n.name: [f"{m.name} ({m.op})" for m in model.nodes if m.name == n.name] for n in ran.nodes}
    tensors = {n.name: set(n.inputs) | set(n.outputs) for n in ran.nodes}
    for m in gone:
        touching = [n for n in ran.nodes if (set(m.inputs) | set(m.outputs)) & tensors[n.name]]
        for n in touching[:1]:
            out[n.name].append(f"{m.name} ({m.op})")
    return out


def rows(session, shapes: Optional[Dict[str, tuple]] = None, feeds: Optional[dict] = None) -> List[tuple]:
    """(node name, op type, the model's nodes it stands for, where it runs, what runs it) for each node
    that runs; where is "device", "host" or "view" with shapes (a plan made), else "-". A split model's
    host parts' nodes run on the host (ONNX Runtime); its device parts as a whole model's nodes do."""
    graph, places = session.graph, {}
    if session.parts is not None:
        seen = session.part_inputs(_zeros(graph, shapes)) if shapes is not None else {}
        out = []
        for i, (part, runner) in enumerate(session.parts):
            if part.kind == "device":
                out += rows(runner, None, seen.get(i))
            else:
                out += [(n.name, n.op, f"{n.name} ({n.op})", "host", "ONNX Runtime CPU") for n in part.nodes]
        return out
    if shapes is not None or feeds is not None:
        feeds = _zeros(graph, shapes) if feeds is None else feeds
        graph, places = session.plan(feeds).graph, session.placement(feeds)
    stands = absorbed(session.model_graph, graph)
    out = []
    for n in graph.nodes:
        entry = LOWERINGS[n.op]
        out.append((n.name, n.op, ", ".join(stands.get(n.name, [])), places.get(n.name, "-"),
                    entry.runs.split(" (")[0]))
    return out


def _zeros(graph: Graph, shapes: Dict[str, tuple]) -> dict:
    return {k: np.zeros(v, NUMPY_TYPES.get(_type_of(graph, k), np.float32)) for k, v in shapes.items()}


def _type_of(graph: Graph, name: str) -> str:
    return next(i.type for i in graph.inputs if i.name == name)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="dmlvk census", description="Show what each node of an ONNX model becomes "
                                 "in dmlvk and where it runs, or why the model is refused.")
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                    help="an input's shape, to show the plan a run with it makes (fused kernels, places); "
                         "the model's own shapes where they are all fixed")
    ap.add_argument("--device", type=int, default=None, help="device index (default: $DMLVK_DEVICE or 0)")
    ap.add_argument("--host-quantization", action="store_true", help="QuantizeLinear/DequantizeLinear on the host")
    ap.add_argument("--no-fallback", action="store_true",
                    help="refuse a model dmlvk cannot run whole, naming each node, instead of splitting it")
    a = ap.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                  # the split is printed below
            session = InferenceSession(a.model, device=Device(a.device) if a.device is not None else None,
                                       host_quantization=a.host_quantization, fallback=not a.no_fallback)
    except UnsupportedModelError as e:
        print(f"{a.model}: refused")
        for why in str(e).split(": ", 1)[-1].split("; "):
            print(f"  {why}")
        return 1
    shapes = {}
    for item in a.shape:
        name, sep, dims = item.partition("=")
        try:
            shapes[name] = tuple(int(d) for d in dims.split(","))
        except ValueError:
            ap.error(f"--shape takes NAME=D0,D1,..., got {item!r}")
        if not sep or name not in {i.name for i in session.get_inputs()}:
            ap.error(f"--shape names no input of the model: {item!r}")
    if not shapes and all(isinstance(d, int) and d > 0 for i in session.get_inputs() for d in i.shape):
        shapes = {i.name: tuple(i.shape) for i in session.get_inputs()}
    missing = [i.name for i in session.get_inputs() if i.name not in shapes]
    table = rows(session, shapes if shapes and not missing else None)
    width = [max(len(str(r[k])) for r in table + [("node", "runs as", "model nodes", "where", "")]) for k in range(4)]
    print(f"{a.model}: {len(table)} nodes run" + (f", planned for {shapes}" if shapes and not missing else
                                                 " (give --shape for every input to see the plan)"))
    print(f"  {'node':<{width[0]}}  {'runs as':<{width[1]}}  {'where':<{width[3]}}  model nodes")
    for name, op, stands, where, _ in table:
        print(f"  {name:<{width[0]}}  {op:<{width[1]}}  {where:<{width[3]}}  {stands}")
    if session.parts is not None:
        kinds = ", ".join(p.kind for p, _ in session.parts)
        crossing = (f"; {session.crossing_bytes:,} bytes cross between them per run" if shapes and not missing
                    else "")
        print(f"split into {len(session.parts)} parts ({kinds}): {partition.describe(p for p, _ in session.parts)} "
              f"on the host with ONNX Runtime{crossing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
