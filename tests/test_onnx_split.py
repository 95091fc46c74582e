"""Models dmlvk runs in parts (dmlvk/onnx/partition.py): the device runs what it can, ONNX Runtime's
CPU provider the rest. Each model's outputs equal onnxruntime's on the whole model, element for
element; the split (which nodes run where) as designed; IO binding, streaming, the refusal with
fallback=False and without onnxruntime."""
import functools
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from dmlvk import arrays
from dmlvk.onnx import InferenceSession, UnsupportedModelError
from dmlvk_lab import onnx_models as models

# the model's nodes that run on the host and those that run on the device (as fused nodes' names)
SPLITS = {"start": ({"erf"}, {"conv1", "conv2"}, 2),
          "middle": ({"erf"}, {"conv1", "conv2"}, 3),
          "end": ({"sigmoid"}, {"conv1", "conv2"}, 2),
          "fork": ({"erf", "sigmoid"}, {"conv1", "conv_a", "add", "conv_b"}, 5),
          "head": ({"pool", "fc", "softmax"}, {"conv1"}, 2)}


@functools.lru_cache(maxsize=None)
def quantized(kind: str) -> bytes:
    model = models.quantize(models.split_network(kind), models.calibration_frames(), quant_format="QDQ")
    return model.SerializeToString()


def frames(count=2, seed=5):
    return np.concatenate(models.calibration_frames(count, 13, 20, seed=seed))


def run_ort(model: bytes, feeds: dict) -> list:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)


def split_session(model, device, **kw) -> InferenceSession:
    with pytest.warns(UserWarning, match="on the host with ONNX Runtime's CPU provider"):
        return InferenceSession(model, device=device, **kw)


@pytest.mark.parametrize("kind", sorted(SPLITS))
def test_split_models_run_like_onnxruntime(device, kind):
    """Each model, quantized by quantize_static (QDQ), with an op dmlvk has no kernel for at the start,
    in the middle, at the end, between two branches (one host part feeding two device parts), or a
    classifier's head: outputs equal to onnxruntime's on every element, the nodes where designed,
    the parts as many as designed."""
    model = onnx.load_from_string(quantized(kind))
    x = frames()
    want = run_ort(quantized(kind), {"x": x})
    session = split_session(model, device)
    got = session.run(None, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    host, on_device, count = SPLITS[kind]
    places = session.placement({"x": x})
    assert {n for n, where in places.items() if where == "host"} >= host, places
    assert all(places[n] == "device" for n in on_device), places
    assert len(session.parts) == count
    assert session.crossing_bytes > 0
    again = session.run(None, {"x": frames(1, seed=9)})         # a second shape: plans of its own
    np.testing.assert_array_equal(again[0], run_ort(quantized(kind), {"x": frames(1, seed=9)})[0])


def test_an_op_in_the_middle_crosses_in_eight_bits(device):
    """The tensors handed between the parts are the quantized ones: the Erf's part reads the first
    convolution's uint8 output and gives its own uint8 output (DequantizeLinear and QuantizeLinear go
    with it), so a run hands over two uint8 tensors of the activation's size."""
    session = split_session(onnx.load_from_string(quantized("middle")), device)
    x = frames()
    session.run(None, {"x": x})
    kinds = [p.kind for p, _ in session.parts]
    assert kinds == ["device", "host", "device"]
    host = session.parts[1][0]
    assert [n.op for n in host.nodes] == ["DequantizeLinear", "Erf", "QuantizeLinear"]
    assert session.crossing_bytes == 2 * x.shape[0] * 8 * x.shape[2] * x.shape[3]


def if_model(nested=False):
    """A quantized convolution network whose float output an If node negates or not by a boolean
    input (the branches read the outer tensor), beside an Erf of the float input: two inputs, three
    outputs, the input x read on both sides. nested: the else branch an If of its own, whose
    branches read the network's output and a constant that nothing else reads."""
    model = models.quantize(models.quicksrnet(2, 8, 2),
                            models.calibration_frames(), quant_format="QDQ")
    g = model.graph
    out = g.output[0]
    then = helper.make_graph([helper.make_node("Identity", [out.name], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Neg", [out.name], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    if nested:
        inner = [helper.make_graph([helper.make_node(op, [out.name, "k"], [f"i{j}"])], f"inner{j}", [],
                                   [helper.make_tensor_value_info(f"i{j}", TensorProto.FLOAT, None)])
                 for j, op in enumerate(("Mul", "Sub"))]
        other = helper.make_graph([helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
                                   helper.make_node("Greater", ["m", "half"], ["c"]),
                                   helper.make_node("If", ["c"], ["e"], then_branch=inner[0], else_branch=inner[1])],
                                  "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
        g.initializer.extend([numpy_helper.from_array(np.float32(0.5), "half"),
                              numpy_helper.from_array(np.float32(3.0), "k")])      # read in the inner If alone
    g.node.extend([helper.make_node("If", ["flag"], ["z"], then_branch=then, else_branch=other, name="if"),
                   helper.make_node("Erf", ["x"], ["w"], name="erf")])
    g.input.append(helper.make_tensor_value_info("flag", TensorProto.BOOL, []))
    g.output.extend([helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
                     helper.make_tensor_value_info("w", TensorProto.FLOAT, None)])
    return model


@pytest.mark.parametrize("nested", [False, True], ids=["if", "if-in-if"])
@pytest.mark.parametrize("flag", [True, False])
def test_control_flow_runs_on_the_host_with_the_tensors_its_branches_read(device, flag, nested):
    model = if_model(nested)
    x = frames()
    feeds = {"x": x, "flag": np.array(flag)}
    want = run_ort(model.SerializeToString(), feeds)
    session = split_session(model, device)
    got = session.run(None, feeds)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    places = session.placement(feeds)
    assert places["if"] == "host" and places["erf"] == "host"
    assert [p.kind for p, _ in session.parts].count("device") == 1
    assert session.run(["z"], feeds)[0].shape == want[1].shape


def test_fallback_false_refuses_naming_every_node(device):
    with pytest.raises(UnsupportedModelError, match="erf: Erf.*sigmoid: Sigmoid"):
        InferenceSession(onnx.load_from_string(quantized("fork")), device=device, fallback=False)


def test_without_onnxruntime_a_split_model_is_refused_saying_what_to_install(device, monkeypatch):
    model = onnx.load_from_string(quantized("middle"))               # made with onnxruntime, before
    monkeypatch.setitem(sys.modules, "onnxruntime", None)        # import onnxruntime: ImportError
    with pytest.raises(UnsupportedModelError, match=r"Erf.*pip install onnxruntime"):
        InferenceSession(model, device=device)


def test_a_model_the_device_runs_whole_is_not_split(device):
    """No warning, no parts: the session is the one it was before partitioning existed."""
    model = models.quantize(models.quicksrnet(2, 8, 2), models.calibration_frames(), quant_format="QDQ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session = InferenceSession(model, device=device)
    assert session.parts is None
    session.run(None, {"x": frames()})
    places = session.placement({"x": frames()})
    ops = {n.name: n.op for n in session.graph.nodes}
    # on the host only QuantizeLinear, where the device has no shaderFloat64 (SwiftShader)
    assert all(where in ("device", "view") or ops[name] == "QuantizeLinear" for name, where in places.items()), places


def test_io_binding_across_parts(device):
    """A DeviceArray input read first by a host part, and an output made by a host part written into
    the caller's DeviceArray."""
    model = quantized("start")
    x = frames()
    want = run_ort(model, {"x": x})[0]
    session = split_session(onnx.load_from_string(model), device)
    y = arrays.empty(want.shape, np.float32, device)
    (got,) = session.run(None, {"x": arrays.asarray(x, device)}, outputs={"y": y})
    assert got is y
    np.testing.assert_array_equal(y.numpy(), want)
    session = split_session(onnx.load_from_string(quantized("end")), device)
    want = run_ort(quantized("end"), {"x": x})[0]
    (got,) = session.run(None, {"x": x}, outputs={"y": arrays.empty(want.shape, np.float32, device)})
    np.testing.assert_array_equal(got.numpy(), want)


def test_run_stream_across_parts(device):
    """run_stream over a split model: each frame's outputs equal run()'s, in order, at several depths;
    a consumer that stops early leaves the session usable."""
    session = split_session(onnx.load_from_string(quantized("fork")), device)
    feeds = [{"x": frames(1, seed=s)} for s in range(5)]
    want = [session.run(None, f)[0] for f in feeds]
    for depth in (1, 3):
        got = [out[0] for out in session.run_stream(None, iter(feeds), depth=depth)]
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    stream = session.run_stream(None, iter(feeds), depth=2)
    next(stream)
    stream.close()
    np.testing.assert_array_equal(session.run(None, feeds[0])[0], want[0])


def test_census_shows_the_split(device, tmp_path, capsys):
    """`dmlvk census` of a split model: each node with its place (the host's by ONNX Runtime), the
    parts in order, and with shapes the bytes crossing per run; --no-fallback refuses it by name."""
    from dmlvk.onnx import census
    path = tmp_path / "middle.onnx"
    path.write_bytes(quantized("middle"))
    assert census.main([str(path), "--shape", "x=1,1,12,16"]) == 0
    out = capsys.readouterr().out
    erf = next(s for s in out.splitlines() if s.split()[:1] == ["erf"])
    assert erf.split()[1:3] == ["Erf", "host"]
    conv = next(s for s in out.splitlines() if s.split()[:1] == ["conv2"])
    assert conv.split()[1].startswith("QLinearConv") and conv.split()[2] == "device"   # +DequantizeLinear on GPUs
    assert f"split into 3 parts (device, host, device)" in out and f"{2 * 8 * 12 * 16:,} bytes cross" in out
    assert census.main([str(path), "--no-fallback"]) == 1
    assert "  erf: Erf" in capsys.readouterr().out.splitlines()


def test_a_node_of_another_domain_runs_on_the_host(device):
    """com.microsoft's Gelu in place of the Erf: its domain and opset carried into the host part."""
    model = onnx.load_from_string(quantized("middle"))
    erf = next(n for n in model.graph.node if n.op_type == "Erf")
    erf.op_type, erf.domain = "Gelu", "com.microsoft"
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    x = frames()
    want = run_ort(model.SerializeToString(), {"x": x})
    session = split_session(model, device)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], want[0])
    assert session.placement({"x": x})["erf"] == "host"
    assert [p.kind for p, _ in session.parts] == ["device", "host", "device"]


def test_a_node_refused_once_the_shapes_are_known_goes_to_the_host(device):
    """A QDQ Add whose second input broadcasts per channel (dmlvk's QLinearAdd refuses that shape when
    it is planned): the model loads whole, and its first run splits it, the Add's group on the host,
    every element equal to onnxruntime's; with fallback=False the run is refused, naming the node."""
    from test_quantized_add import _add_model
    rng = np.random.default_rng(3)
    model = _add_model(rng.integers(0, 256, (1, 3, 1, 1)), b_shape=(1, 3, 1, 1))
    x = rng.uniform(-1, 3, (2, 3, 4, 4)).astype(np.float32)
    want = run_ort(model.SerializeToString(), {"x": x})
    with pytest.raises(UnsupportedModelError, match="the_add: QLinearAdd of shapes"):
        InferenceSession(model, device=device, fallback=False).run(None, {"x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session = InferenceSession(model, device=device)            # loads whole: nothing said yet
    assert session.parts is None
    with pytest.warns(UserWarning, match="on the host"):
        got = session.run(None, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    assert session.placement({"x": x})["the_add"] == "host"
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], want[0])
    stream = InferenceSession(model, device=device)
    with pytest.warns(UserWarning, match="on the host"):
        got = [out[0] for out in stream.run_stream(None, [{"x": x}] * 3)]
    for y in got:
        np.testing.assert_array_equal(y, want[0])


def test_a_host_part_runs_unoptimized_where_onnxruntimes_optimizer_fails(device, monkeypatch):
    """Some onnxruntime versions' optimizers fail on valid models (a QDQ group with a per-axis output
    fused into a QLinear op that refuses it): the host part then runs unoptimized, with a warning,
    equal to onnxruntime's unoptimized session. Simulated: the optimized session raises."""
    real = ort.InferenceSession

    def failing(model, options=None, **kw):
        if options is None or options.graph_optimization_level != ort.GraphOptimizationLevel.ORT_DISABLE_ALL:
            raise ort.capi.onnxruntime_pybind11_state.Fail("[ONNXRuntimeError] : 1 : FAIL : the optimizer failed")
        return real(model, options, **kw)
    model = quantized("end")
    x = frames()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = real(model, options, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    session = split_session(onnx.load_from_string(model), device)
    monkeypatch.setattr(ort, "InferenceSession", failing)
    with pytest.warns(UserWarning, match="unoptimized: its optimized session failed"):
        got = session.run(None, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    assert session.parts[1][1].unoptimized


def test_a_weight_made_by_an_op_dmlvk_lacks_sends_its_reader_to_the_host(device):
    """The second convolution's int8 weight made from an int32 constant by a Cast (an op dmlvk has no
    kernel for, on constants alone): the convolution that reads it through its DequantizeLinear goes
    to the host with its Q/DQ group, and the model equals onnxruntime (which folds the Cast)."""
    from onnx import numpy_helper as nh
    model = onnx.load_from_string(quantized("middle"))
    g = model.graph
    dq = next(n for n in g.node if n.op_type == "DequantizeLinear" and n.input[0].startswith("conv2.w"))
    init = next(i for i in g.initializer if i.name == dq.input[0])
    w = nh.to_array(init)
    g.initializer.remove(init)
    g.initializer.append(nh.from_array(w.astype(np.int32), "w32"))
    g.node.insert(0, helper.make_node("Cast", ["w32"], [dq.input[0]], to=TensorProto.INT8, name="cast"))
    x = frames()
    want = run_ort(model.SerializeToString(), {"x": x})
    with pytest.raises(UnsupportedModelError, match="cast: Cast"):
        InferenceSession(model, device=device, fallback=False)
    session = split_session(model, device)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], want[0])
    places = session.placement({"x": x})
    assert places["conv2"] == "host" and places["conv1"] == "device", places


def test_a_graph_output_made_from_constants_alone(device):
    """A weight's dequantized values as a graph output too (a node that reads constants alone): given
    by its part, equal to onnxruntime's, the model's other output too."""
    model = onnx.load_from_string(quantized("end"))
    dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0].startswith("conv1.w"))
    model.graph.output.append(helper.make_tensor_value_info(dq.output[0], TensorProto.FLOAT, None))
    x = frames()
    want = run_ort(model.SerializeToString(), {"x": x})
    got = split_session(model, device).run(None, {"x": x})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
