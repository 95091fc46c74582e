"""Oracles nobody in this project wrote: ONNX's node cases, onnx.reference, onnxruntime."""
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
