"""Graph rewrites, each Graph -> Graph, run before lowering (no device, no operator: unit-tested on
graphs alone). Each keeps what the model computes bit for bit, as ONNX Runtime computes it:

- fuse_qdq: DequantizeLinear -> Conv (-> Relu or Clip) -> QuantizeLinear groups become QLinearConv,
  as ONNX Runtime's QDQ transformers do before its CPU kernels run;
- fuse_qdq_add: DequantizeLinear, DequantizeLinear -> Add (Mul) -> QuantizeLinear groups become
  QLinearAdd (QLinearMul: com.microsoft's, as ONNX Runtime's CPU provider fuses them);
- fuse_qdq_lookups: DequantizeLinear(s) -> Concat / LeakyRelu / PRelu -> QuantizeLinear groups become
  QLinearConcat, QLinearLeakyRelu (com.microsoft's) and QLinearPRelu (dmlvk's name for ONNX
  Runtime's float sandwich), each a per-tensor map of 8-bit values;
- commute: per-tensor DequantizeLinear moved after the layout ops that consume it, QuantizeLinear
  before the ones that produce its input (a permutation commutes with an elementwise map);
- fuse_dequantize_clip: a Clip of constant bounds after a DequantizeLinear (once commute moved it
  to the graph's end: the float output clipped) becomes one DequantizeLinear+Clip node;
- drop_requantize_pairs: DequantizeLinear -> QuantizeLinear with the same scale, zero point and type
  becomes an Identity (ONNX Runtime's QDQ clean-up);
- drop_dead: nodes whose outputs nothing reads go."""
from __future__ import annotations

import dataclasses
from typing import List, Optional

import numpy as np

from .graph import Graph, Node, per_tensor, qparams

FUSED_OPS = {"Conv", "Relu", "Clip", "Add", "Mul", "Concat", "LeakyRelu", "PRelu"}       # only inside a QDQ group


def fuse_qdq(graph: Graph) -> tuple:
    """(graph, messages): each DequantizeLinear -> Conv (-> Relu or Clip) -> QuantizeLinear group made
    a QLinearConv where the input is a per-tensor DequantizeLinear of a tensor, the weight one of an
    8-bit 4-D constant (per-tensor, or per output channel: axis 0), the bias absent or one of an
    int32 constant with zero point 0 and scale x_scale * w_scale (used as the int32 bias, as
    onnxruntime does; it leaves a group with another bias scale in float), the output
    quantized per tensor by one QuantizeLinear that is its only reader (and not a graph output); a
    Relu between them only where that zero point is its type's lowest value, a Clip only where its
    constant range holds the quantized range (then both change nothing). The messages name the
    Conv, Relu and Clip nodes left over, and why. The weights' DequantizeLinear nodes, read by
    nothing once fused, are left for drop_dead."""
    nodes, consts = list(graph.nodes), dict(graph.consts)
    current = lambda: graph.with_nodes(nodes, consts)
    bad, reported = [], set()

    def dq_of(name: Optional[str], constant: bool) -> Optional[Node]:
        d = current().maker(name) if name else None
        if d is None or d.op != "DequantizeLinear" or any(k and k not in consts for k in d.inputs[1:3]):
            return None
        return d if (d.inputs[0] in consts) == constant else None

    for c in [n for n in nodes if n.op == "Conv"]:
        def refuse(why):
            reported.add(c.name)
            bad.append(f"{c.name}: Conv not in a DequantizeLinear -> Conv -> QuantizeLinear group dmlvk runs "
                       f"as QLinearConv ({why})")
        dx, dw = dq_of(c.input(0), False), dq_of(c.input(1), True)
        if dx is None or dw is None:
            refuse("its input and weight must come from DequantizeLinear nodes, the weight's of a constant")
            continue
        g = current()
        w = consts[dw.inputs[0]]
        xs, xzp = qparams(dx, g, np.uint8)
        ws, wzp = qparams(dw, g, w.dtype)
        if xs.size != 1 or xzp.size != 1:
            refuse("the input is quantized per axis")
            continue
        if w.dtype not in (np.int8, np.uint8) or w.ndim != 4:
            refuse(f"a {w.ndim}-D {w.dtype} weight")
            continue
        if ws.size > 1 and (int(dw.attrs.get("axis", 1)) % 4 != 0 or ws.size != w.shape[0]):
            refuse("the weight is quantized along an axis other than its output channels")
            continue
        bias = c.input(2)
        if bias:
            db = dq_of(bias, True)
            if db is None or consts[db.inputs[0]].dtype != np.int32 or np.any(qparams(db, g, np.int32)[1] != 0):
                refuse("the bias must be a DequantizeLinear of an int32 constant with zero point 0")
                continue
            product = (np.float32(xs.reshape(-1)[0]) * ws.astype(np.float32).reshape(-1)).astype(np.float32)
            m = w.shape[0]
            if not np.array_equal(np.broadcast_to(consts[db.inputs[1]].astype(np.float32).reshape(-1), (m,)),
                                  np.broadcast_to(product, (m,))):
                refuse("the bias's scale must be the input's scale times the weight's, in float32, as quantizers "
                       "write it (ONNX Runtime runs the Conv in float otherwise)")
                continue
            bias = db.inputs[0]
        act, users, out_name = None, g.users(c.outputs[0]), c.outputs[0]
        if len(users) == 1 and users[0].op in ("Relu", "Clip") and out_name not in g.output_names:
            act = users[0]
            users, out_name = g.users(act.outputs[0]), act.outputs[0]
        q = users[0] if len(users) == 1 else None
        if q is None or q.op != "QuantizeLinear" or out_name in g.output_names \
                or not all(k in consts for k in q.inputs[1:3] if k):
            refuse("its output must go to one QuantizeLinear alone")
            continue
        ys, yzp = qparams(q, g, np.uint8)
        if ys.size != 1 or yzp.size != 1:
            refuse("the output is quantized per axis")
            continue
        if act is not None and not activation_is_saturation(act, ys, yzp, g):
            reported.add(act.name)
            bad.append(f"{act.name}: {act.op} between a Conv and its QuantizeLinear that the quantization "
                       f"does not already apply (dmlvk fuses it only where the zero point is the "
                       f"type's lowest value (Relu), or the range holds the quantized range (Clip))")
            continue
        for suffix, v in (("x_zero_point", xzp), ("w_zero_point", wzp), ("y_zero_point", yzp)):
            consts[f"{c.name}__{suffix}"] = np.asarray(v)
        ins = (dx.inputs[0], dx.inputs[1], f"{c.name}__x_zero_point", dw.inputs[0], dw.inputs[1],
               f"{c.name}__w_zero_point", q.inputs[1], f"{c.name}__y_zero_point") + ((bias,) if bias else ())
        nodes[nodes.index(c)] = Node("QLinearConv", c.name, ins, (q.outputs[0],),
                                     {k: v for k, v in c.attrs.items() if k != "kernel_shape"})
        for gone in (act, q):
            if gone is not None:
                nodes.remove(gone)
    for n in nodes:
        if n.op in ("Relu", "Clip") and n.name not in reported:
            bad.append(f"{n.name}: {n.op} outside a DequantizeLinear -> Conv -> QuantizeLinear group")
    return current(), bad


def fuse_qdq_add(graph: Graph) -> tuple:
    """(graph, messages): each Add (Mul) whose two inputs come from per-tensor DequantizeLinear nodes
    (of a tensor or a constant) and whose output goes to one per-tensor QuantizeLinear alone (no graph
    output), all three of one 8-bit type with constant parameters, made a QLinearAdd (QLinearMul: A,
    A's scale and zero point, B, B's, the output's), as ONNX Runtime's QDQ selectors fuse it for its
    CPU kernels. The messages name the nodes left over, and why."""
    nodes, consts = list(graph.nodes), dict(graph.consts)
    bad = []
    for add in [n for n in nodes if n.op in ("Add", "Mul")]:
        g = graph.with_nodes(nodes, consts)
        dqs = [g.maker(k) for k in add.inputs[:2]]
        users = g.users(add.outputs[0])
        q = users[0] if len(users) == 1 and add.outputs[0] not in g.output_names else None
        group = dqs + [q]
        if any(d is None for d in group) or [d.op for d in group] != ["DequantizeLinear"] * 2 + ["QuantizeLinear"] \
                or not all(k in consts for d in group for k in d.inputs[1:3] if k):
            bad.append(f"{add.name}: {add.op} not in a DequantizeLinear, DequantizeLinear -> {add.op} -> "
                       f"QuantizeLinear group with constant quantization parameters (dmlvk runs it as "
                       f"QLinear{add.op})")
            continue
        params = [qparams(dqs[0], g, _input_type(dqs[0], g)), qparams(dqs[1], g, _input_type(dqs[1], g)),
                  qparams(q, g, np.uint8)]
        types = {np.dtype(zp.dtype) for _, zp in params}
        if any(s.size != 1 or zp.size != 1 for s, zp in params) or len(types) != 1 \
                or types.pop() not in (np.dtype(np.uint8), np.dtype(np.int8)):
            bad.append(f"{add.name}: {add.op} between DequantizeLinear and QuantizeLinear nodes that are not "
                       f"per tensor, of one 8-bit type (QLinear{add.op}'s form)")
            continue
        ins = []
        for k, (node, (_, zp)) in enumerate(zip(group, params)):
            consts[f"{add.name}__zero_point{k}"] = np.asarray(zp).reshape(())
            ins += ([node.inputs[0]] if k < 2 else []) + [node.inputs[1], f"{add.name}__zero_point{k}"]
        nodes[nodes.index(add)] = Node(f"QLinear{add.op}", add.name, tuple(ins), (q.outputs[0],), {})
        nodes.remove(q)
    return graph.with_nodes(nodes, consts), bad


def fuse_qdq_lookups(graph: Graph) -> tuple:
    """(graph, messages): each Concat, LeakyRelu or PRelu whose data inputs come from per-tensor
    DequantizeLinear nodes (a Concat's may be of constants) and whose output goes to one per-tensor
    QuantizeLinear alone (no graph output), of one 8-bit type, made QLinearConcat (each input's x,
    x_scale, x_zero_point, then y_scale, y_zero_point: its first input first, unlike com.microsoft's;
    attribute axis), QLinearLeakyRelu (x,
    x_scale, x_zero_point, y_scale, y_zero_point; alpha) or QLinearPRelu (the same with the slope as
    a float32 constant after x_zero_point: a constant, or a DequantizeLinear of one, computed here as
    onnxruntime dequantizes it). The messages name the nodes left over, and why."""
    nodes, consts = list(graph.nodes), dict(graph.consts)
    bad = []
    for n in [m for m in nodes if m.op in ("Concat", "LeakyRelu", "PRelu")]:
        g = graph.with_nodes(nodes, consts)
        data = list(n.inputs) if n.op == "Concat" else [n.inputs[0]]
        dqs = [g.maker(k) for k in data]
        users = g.users(n.outputs[0])
        q = users[0] if len(users) == 1 and n.outputs[0] not in g.output_names else None
        group = dqs + [q]
        why = None
        if any(d is None for d in group) or [d.op for d in group] != ["DequantizeLinear"] * len(dqs) + ["QuantizeLinear"] \
                or not all(k in consts for d in group for k in d.inputs[1:3] if k) \
                or (n.op != "Concat" and dqs[0].inputs[0] in consts):
            why = "its data inputs must come from DequantizeLinear nodes and its output go to one QuantizeLinear alone"
        if why is None:
            params = [qparams(d, g, _input_type(d, g)) for d in dqs] + [qparams(q, g, np.uint8)]
            types = {np.dtype(zp.dtype) for _, zp in params}
            if any(s.size != 1 or zp.size != 1 for s, zp in params) or len(types) != 1 \
                    or types.pop() not in (np.dtype(np.uint8), np.dtype(np.int8)):
                why = "its DequantizeLinear and QuantizeLinear nodes must be per tensor, of one 8-bit type"
        slope = None
        if why is None and n.op == "PRelu":
            slope = _float_constant(n.input(1), g)
            if slope is None:
                why = "its slope must be a float constant or a DequantizeLinear of one"
        if why is not None:
            bad.append(f"{n.name}: {n.op} not run on the device ({why})")
            continue
        names = []
        for k, (s, zp) in enumerate(params):
            consts[f"{n.name}__scale{k}"] = np.float32(s.reshape(-1)[0])
            consts[f"{n.name}__zero_point{k}"] = np.asarray(zp).reshape(())
            names.append((f"{n.name}__scale{k}", f"{n.name}__zero_point{k}"))
        if n.op == "Concat":
            ins = tuple(x for d, nm in zip(dqs, names) for x in (d.inputs[0],) + nm) + names[-1]
            node = Node("QLinearConcat", n.name, ins, (q.outputs[0],), {"axis": int(n.attrs["axis"])})
        elif n.op == "LeakyRelu":
            node = Node("QLinearLeakyRelu", n.name, (dqs[0].inputs[0],) + names[0] + names[1], (q.outputs[0],),
                        {"alpha": float(n.attrs.get("alpha", 0.01))})
        else:
            consts[f"{n.name}__slope"] = slope
            node = Node("QLinearPRelu", n.name, (dqs[0].inputs[0],) + names[0] + (f"{n.name}__slope",) + names[1],
                        (q.outputs[0],), {})
        nodes[nodes.index(n)] = node
        nodes.remove(q)
    return graph.with_nodes(nodes, consts), bad


def _float_constant(name, graph: Graph):
    """A float32 constant by name, or the float32 values of a DequantizeLinear of constants (as
    onnxruntime computes them: float32(q - zero point) * scale, per tensor or along its axis)."""
    if name in graph.consts:
        v = graph.consts[name]
        return v.astype(np.float32) if v.dtype == np.float32 else None
    d = graph.maker(name) if name else None
    if d is None or d.op != "DequantizeLinear" or not all(k in graph.consts for k in d.inputs if k):
        return None
    x = graph.consts[d.inputs[0]]
    s, zp = qparams(d, graph, x.dtype)
    axis = int(d.attrs.get("axis", 1)) % max(x.ndim, 1)
    shape = [1] * x.ndim
    if s.size > 1:
        shape[axis] = s.size
    return ((x.astype(np.int64) - zp.astype(np.int64).reshape(shape if zp.size > 1 else ())).astype(np.float32)
            * s.astype(np.float32).reshape(shape if s.size > 1 else ())).astype(np.float32)


def _input_type(dq: Node, graph: Graph):
    """A DequantizeLinear's input type where its zero point or its constant input tells it, else uint8."""
    zp = graph.const(dq.input(2))
    if zp is not None:
        return zp.dtype
    x = graph.const(dq.input(0))
    return np.uint8 if x is None else x.dtype


def activation_is_saturation(act: Node, ys, yzp, graph: Graph) -> bool:
    """Whether Relu / Clip before a QuantizeLinear of scale ys and zero point yzp changes no
    quantized value: Relu where the zero point is the type's lowest value; Clip where its bounds
    (opset 6 attributes, else constant inputs; absent ones unbounded) hold the quantized range."""
    info = np.iinfo(yzp.dtype)
    if act.op == "Relu":
        return int(yzp) == info.min
    lo, hi = act.attrs.get("min"), act.attrs.get("max")
    for k in (1, 2):
        if act.input(k):
            v = graph.const(act.input(k))
            if v is None:
                return False                                      # a range that is not constant
            lo, hi = (v, hi) if k == 1 else (lo, v)
    qlo = np.float32(info.min - int(yzp)) * np.float32(ys.reshape(-1)[0])
    qhi = np.float32(info.max - int(yzp)) * np.float32(ys.reshape(-1)[0])
    return (lo is None or np.float32(lo) <= qlo) and (hi is None or np.float32(hi) >= qhi)


def commute(graph: Graph, layout_ops) -> Graph:
    """Per-tensor DequantizeLinear nodes moved after the layout ops that consume them, and per-tensor
    QuantizeLinear nodes before the layout ops that produce their input, where the tensor in between
    has no other reader and is no graph output. layout_ops: op names, or a predicate of a node (whose attributes decide:
    a nearest Resize moves data, a linear one does not)."""
    is_layout = layout_ops if callable(layout_ops) else (lambda n, ops=frozenset(layout_ops): n.op in ops)
    nodes = list(graph.nodes)

    def swap(a: Node, b: Node, suffix: str) -> None:
        # x -> a -> t -> b -> y   becomes   x -> b -> t' -> a -> y
        x, t, y = a.inputs[0], a.outputs[0], b.outputs[0]
        i, j = nodes.index(a), nodes.index(b)
        nodes[i] = dataclasses.replace(b, inputs=(x,) + b.inputs[1:], outputs=(t + suffix,) + b.outputs[1:])
        nodes[j] = dataclasses.replace(a, inputs=(t + suffix,) + a.inputs[1:], outputs=(y,) + a.outputs[1:])

    changed = True
    while changed:
        changed = False
        for dq in [n for n in nodes if n.op == "DequantizeLinear" and per_tensor(n, graph)]:
            users = graph.with_nodes(nodes).users(dq.outputs[0])
            if dq in nodes and len(users) == 1 and is_layout(users[0]) and dq.outputs[0] not in graph.output_names:
                swap(dq, users[0], "__quantized")
                changed = True
        for q in [n for n in nodes if n.op == "QuantizeLinear" and per_tensor(n, graph)]:
            g = graph.with_nodes(nodes)
            lay = g.maker(q.inputs[0])
            if q in nodes and lay is not None and is_layout(lay) and len(g.users(q.inputs[0])) == 1 \
                    and q.inputs[0] not in g.output_names:
                swap(lay, q, "__float")
                changed = True
    return graph.with_nodes(nodes)


def fuse_dequantize_clip(graph: Graph) -> Graph:
    """Each Clip whose input is a DequantizeLinear's output read by nothing else (and no graph
    output), the DequantizeLinear's parameters and the Clip's bounds constant (attributes before
    opset 11, inputs since; absent ones unbounded), made one DequantizeLinear+Clip node: the
    DequantizeLinear's inputs and attributes, the bounds as the attribute "clip" (float32 lo, hi)."""
    nodes = list(graph.nodes)
    for c in [n for n in nodes if n.op == "Clip"]:
        g = graph.with_nodes(nodes)
        d = g.maker(c.inputs[0])
        if d is None or d.op != "DequantizeLinear" or len(g.users(d.outputs[0])) != 1 \
                or d.outputs[0] in g.output_names or not all(k in g.consts for k in d.inputs[1:3] if k):
            continue
        lo, hi = c.attrs.get("min", -np.inf), c.attrs.get("max", np.inf)
        if any(c.input(k) and c.input(k) not in g.consts for k in (1, 2)):
            continue
        if c.input(1):
            lo = g.consts[c.inputs[1]].reshape(-1)[0]
        if c.input(2):
            hi = g.consts[c.inputs[2]].reshape(-1)[0]
        nodes[nodes.index(c)] = Node("DequantizeLinear+Clip", c.name, d.inputs, c.outputs,
                                     dict(d.attrs, clip=(float(np.float32(lo)), float(np.float32(hi)))))
        nodes.remove(d)
    return graph.with_nodes(nodes)


def drop_requantize_pairs(graph: Graph) -> Graph:
    """A DequantizeLinear whose only reader is a QuantizeLinear with the same per-tensor scale (as
    float32), zero point and type, both given as constants, gives back its input: the pair becomes
    an Identity (left by quantized layout operators once commute moved them)."""
    nodes = list(graph.nodes)
    for q in [n for n in nodes if n.op == "QuantizeLinear"]:
        g = graph.with_nodes(nodes)
        d = g.maker(q.inputs[0])
        if d is None or d.op != "DequantizeLinear" or len(g.users(d.outputs[0])) != 1 \
                or d.outputs[0] in g.output_names or d.inputs[0] in g.consts:
            continue
        if not (d.input(1) and d.input(2) and q.input(1) and q.input(2)) \
                or not all(k in g.consts for k in d.inputs[1:3] + q.inputs[1:3]):
            continue              # zero points given and constant: then their types are known
        d_s, d_zp = qparams(d, g)
        q_s, q_zp = qparams(q, g)
        if d_s.size == q_s.size == 1 and d_zp.size == q_zp.size == 1 and d_zp.dtype == q_zp.dtype \
                and np.float32(d_s.reshape(-1)[0]) == np.float32(q_s.reshape(-1)[0]) and int(d_zp) == int(q_zp):
            nodes[nodes.index(q)] = Node("Identity", q.name, (d.inputs[0],), q.outputs, {})
            nodes.remove(d)
    return graph.with_nodes(nodes)


def drop_dead(graph: Graph) -> Graph:
    """The graph without the nodes whose outputs nothing reads (the weights' DequantizeLinear nodes
    once fused)."""
    nodes: List[Node] = list(graph.nodes)
    while True:
        read = {k for n in nodes for k in n.inputs} | graph.output_names
        live = [n for n in nodes if any(o in read for o in n.outputs)]
        if len(live) == len(nodes):
            return graph.with_nodes(nodes)
        nodes = live
