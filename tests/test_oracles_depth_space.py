"""Depth/space against ONNX's node cases, onnx.reference and onnxruntime, bit for bit."""
import numpy as np
import pytest

import dmlvk
from harness import bits
from dmlvk_lab.oracles import attributes, one_node_model, onnx_node_cases, run_onnx_reference, run_onnxruntime

NODE_CASES = ["test_depthtospace_example", "test_depthtospace_crd_mode_example", "test_spacetodepth",
              "test_spacetodepth_example", "test_spacetodepth_dcr_mode_example",
              "test_spacetodepth_crd_mode_example"]


@pytest.mark.parametrize("name", NODE_CASES)
def test_onnx_node_cases(device, name):
    model, ins, outs = onnx_node_cases()[name]
    node = model.graph.node[0]
    attrs = attributes(node)
    mode = attrs.get("mode", b"DCR").decode()
    fn = dmlvk.depth_to_space if node.op_type == "DepthToSpace" else dmlvk.space_to_depth
    got = fn(ins[0], attrs["blocksize"], mode, device=device)
    assert got.dtype == outs[0].dtype and np.array_equal(bits(got), bits(outs[0]))


def test_all_onnx_depth_space_cases_are_covered():
    names = {n for n in onnx_node_cases() if "depth" in n}
    assert names == set(NODE_CASES)


def _random_input(rng, dtype, shape):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _cases(rng, count):
    for _ in range(count):
        b = int(rng.integers(1, 5))
        n, cs, h, w = (int(v) for v in rng.integers(1, 4, 4))
        yield b, n, cs, h, w


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
def test_against_onnxruntime(device, rng, dtype):
    # onnxruntime's CPU kernels: DepthToSpace DCR and CRD, SpaceToDepth (always DCR).
    for b, n, cs, h, w in _cases(rng, 6):
        x = _random_input(rng, dtype, (n, cs * b * b, h, w))
        for mode in ("DCR", "CRD"):
            model = one_node_model("DepthToSpace", [("x", x)], dtype, 13, blocksize=b, mode=mode)
            expected = run_onnxruntime(model, [("x", x)])
            got = dmlvk.depth_to_space(x, b, mode, device=device)
            assert np.array_equal(bits(got), bits(expected)), (b, x.shape, mode)
        y = _random_input(rng, dtype, (n, cs, h * b, w * b))
        model = one_node_model("SpaceToDepth", [("x", y)], dtype, 13, blocksize=b)
        assert np.array_equal(bits(dmlvk.space_to_depth(y, b, device=device)),
                              bits(run_onnxruntime(model, [("x", y)]))), (b, y.shape)


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.int16, np.int32, np.uint16, np.uint32, np.int64, np.uint64])
def test_against_onnx_reference(device, rng, dtype):
    for b, n, cs, h, w in _cases(rng, 4):
        x = _random_input(rng, dtype, (n, cs * b * b, h, w))
        y = _random_input(rng, dtype, (n, cs, h * b, w * b))
        for mode in ("DCR", "CRD"):
            d2s = one_node_model("DepthToSpace", [("x", x)], dtype, 28, blocksize=b, mode=mode)
            s2d = one_node_model("SpaceToDepth", [("x", y)], dtype, 28, blocksize=b, mode=mode)
            assert np.array_equal(bits(dmlvk.depth_to_space(x, b, mode, device=device)),
                                  bits(run_onnx_reference(d2s, [("x", x)]))), (b, x.shape, mode)
            assert np.array_equal(bits(dmlvk.space_to_depth(y, b, mode, device=device)),
                                  bits(run_onnx_reference(s2d, [("x", y)]))), (b, y.shape, mode)
