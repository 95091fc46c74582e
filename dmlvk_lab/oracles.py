"""Oracles nobody in this project wrote (ONNX's node cases, onnx.reference, onnxruntime), and the
random QUANTIZED_LINEAR_CONVOLUTION cases the tests and the report feed them."""
from __future__ import annotations

import functools
import warnings

import numpy as np


@functools.lru_cache(maxsize=1)
def onnx_node_cases() -> dict:
    """name -> (model, inputs, outputs) for ONNX's backend node cases dmlvk implements."""
    from onnx.backend.test.loader import load_model_tests
    keep = ("test_depthtospace", "test_spacetodepth", "test_qlinearconv", "test_convinteger")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    out = {}
    for c in cases:
        if c.name.startswith(keep) and not c.name.endswith("_expanded"):
            ins, outs = c.data_sets[0]
            out[c.name] = (c.model, list(ins), list(outs))
    return out


def attributes(node) -> dict:
    import onnx
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def one_node_model(op_type: str, inputs: list, output_dtype, opset: int, **attrs):
    """A single-node ONNX model; inputs are (name, ndarray) pairs (None for absent optional ones)."""
    import onnx
    from onnx import helper
    names = [n if a is not None else "" for n, a in inputs]
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs if a is not None]
    out = helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(np.dtype(output_dtype)), None)
    node = helper.make_node(op_type, names, ["y"], **attrs)
    model = helper.make_model(helper.make_graph([node], "g", graph_inputs, [out]),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_onnxruntime(model, inputs: list) -> np.ndarray:
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a for n, a in inputs if a is not None})[0]


def run_onnx_reference(model, inputs: list) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(model).run(None, {n: a for n, a in inputs if a is not None})[0]


def random_ints(rng, dtype, shape, lo=None, hi=None):
    """Integers of an integer dtype over [lo, hi], by default its whole range."""
    info = np.iinfo(dtype)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, shape).astype(dtype)


def random_window(rng, size_below: int):
    """A random 2-D convolution window: ((KH, KW), dilations, start pads, end pads, H, W), the input
    height and width below size_below and at least what the dilated kernel needs after padding."""
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    dil = tuple(int(v) for v in rng.integers(1, 3, 2))
    pads0 = tuple(int(v) for v in rng.integers(0, 3, 2))
    pads1 = tuple(int(v) for v in rng.integers(0, 3, 2))
    h = int(rng.integers(max(1, (kh - 1) * dil[0] + 1 - pads0[0] - pads1[0]), size_below))
    w = int(rng.integers(max(1, (kw - 1) * dil[1] + 1 - pads0[1] - pads1[1]), size_below))
    return (kh, kw), dil, pads0, pads1, h, w


def random_case(rng, x_dtype, w_dtype, y_dtype, *, per_channel=True, equal_w_zp=True, zero_points=True,
                bias=True, w_range=None):
    """(args, kwargs) for dmlvk.quantized_linear_convolution and the reference."""
    groups = int(rng.choice([1, 1, 2, 3]))
    kind = rng.random()
    depthwise, wide = kind < 0.2, kind > 0.6      # wide: the implicit-GEMM shader, K past 256
    cg = 1 if depthwise else int(rng.integers(20, 48)) if wide else int(rng.integers(1, 4))
    c = cg * groups
    mg = int(rng.integers(1, 3)) if depthwise else int(rng.integers(8, 72)) if wide else int(rng.integers(1, 4))
    m = mg * groups
    (kh, kw), dil, pads0, pads1, h, w = random_window(rng, 9)
    n = int(rng.integers(1, 3))
    lo, hi = w_range if w_range else (None, None)
    x = random_ints(rng, x_dtype, (n, c, h, w))
    wt = random_ints(rng, w_dtype, (m, cg, kh, kw), lo, hi)
    xs = float(np.float32(rng.uniform(0.001, 0.05)))
    ws = rng.uniform(0.001, 0.05, m if per_channel else 1).astype(np.float32)
    ys = float(np.float32(rng.uniform(0.05, 2.0)))
    xzp = random_ints(rng, x_dtype, ()) if zero_points else None
    if zero_points:
        wzp = (np.full(m, random_ints(rng, w_dtype, (), lo, hi), w_dtype) if equal_w_zp else random_ints(rng, w_dtype, (m,), lo, hi))
        if not per_channel and equal_w_zp:
            wzp = wzp[:1]
    else:
        wzp = None
    yzp = random_ints(rng, y_dtype, ()) if zero_points else None
    b = rng.integers(-5000, 5000, m).astype(np.int32) if bias else None
    kwargs = dict(strides=tuple(int(v) for v in rng.integers(1, 3, 2)), dilations=dil,
                  start_padding=pads0, end_padding=pads1, group_count=groups)
    return (x, xs, xzp, wt, ws, wzp, b, ys, yzp), kwargs, np.dtype(y_dtype)


def onnx_qlinearconv_model(args, kwargs, y_dtype):
    """A one-node QLinearConv model and its feeds (ONNX puts the bias last)."""

    x, xs, xzp, w, ws, wzp, b, ys, yzp = args
    m = w.shape[0]
    feeds = [("x", x), ("x_scale", np.array(xs, np.float32)), ("x_zero_point", np.asarray(xzp)),
             ("w", w), ("w_scale", ws if ws.size > 1 else ws.reshape(())),
             ("w_zero_point", wzp if wzp.size > 1 else wzp.reshape(())),
             ("y_scale", np.array(ys, np.float32)), ("y_zero_point", np.asarray(yzp).astype(y_dtype)),
             ("B", b)]
    pads = list(kwargs["start_padding"]) + list(kwargs["end_padding"])
    model = one_node_model("QLinearConv", feeds, y_dtype, 10, strides=list(kwargs["strides"]),
                           dilations=list(kwargs["dilations"]), pads=pads, group=kwargs["group_count"])
    return model, feeds
