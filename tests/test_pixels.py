"""InferenceSession(inputs=..., outputs=...): frames in and out in 8 bits (dmlvk/onnx/pixels.py). Each
format equals, on every element and for every byte value, the float path's result converted the
same way (from_pixels / to_pixels, the model's own scale and zero point), and onnxruntime's where the
float path is; inputs and outputs that have no 8-bit form are refused by name."""
import itertools
import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import dmlvk
from dmlvk.onnx import InferenceSession, UnsupportedModelError
from dmlvk.onnx import graph as graphs, pixels, video
from dmlvk.onnx.pixels import FORMATS, OUTPUT_FORMATS, TO_FLOAT16, TO_PIXELS, TO_QUANTIZED, from_pixels, to_pixels
from dmlvk.ops.lookup import onnxruntime_quantize
from dmlvk_lab import onnx_models as models


def _narrow(frames):
    """Calibration frames in [0.1, 0.9]: an input scale other than 1/255 (a table for pixels)."""
    return [(0.1 + 0.8 * f).astype(np.float32) for f in frames]


CASES = {     # name: (model, input table?, output Clip?)
    "espcn": (lambda: models.quantize(models.espcn(2, 16, 8), models.calibration_frames(), quant_format="QDQ"),
              False, False),
    "espcn-narrow-input": (lambda: models.quantize(models.espcn(2, 16, 8), _narrow(models.calibration_frames()),
                                                   quant_format="QDQ"), True, False),
    "xlsr-clip": (lambda: models.quantize(models.xlsr(3, 8, 2), models.calibration_frames(), quant_format="QDQ"),
                  False, True),
    "quicksrnet-int8": (lambda: models.quantize(models.quicksrnet(2, 8, 3), models.calibration_frames(),
                                                quant_format="QDQ", activation_type="QInt8"), True, False),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    make, table_in, clipped = CASES[request.param]
    return request.param, make(), table_in, clipped


def every_byte(shape, seed=0) -> np.ndarray:
    """uint8 frames of `shape` holding each of the 256 values (shuffled)."""
    n = int(np.prod(shape))
    values = np.resize(np.arange(256, dtype=np.uint8), n)
    return np.random.default_rng(seed).permutation(values).reshape(shape)


def run_ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_every_format_equals_the_float_path(device, case):
    """Every (inputs, outputs) pair against the float session on frames holding every byte value: 8-bit
    inputs carry the QuantizeLinear of p / 255 (nothing runs at scale 1/255, zero point 0; a table
    otherwise), quantized outputs dequantize to the float output exactly, pixel outputs are its
    to_pixels, float16 outputs it rounded to float16 (bit for bit); the float path itself equals
    onnxruntime's (uint8 activations)."""
    name, model, table_in, clipped = case
    px = every_byte((2, 1, 16, 24))
    x = from_pixels(px, np.float32)
    base = InferenceSession(model, device=device)
    want = base.run(None, {"x": x})[0]
    if "int8" not in name:
        assert np.array_equal(want, run_ort(model, {"x": x})[0])
    for inputs, outputs in itertools.product(FORMATS, OUTPUT_FORMATS):
        if outputs == "quantized" and clipped:
            with pytest.raises(ValueError, match="outputs='quantized': the model's output 'y' is clipped"):
                InferenceSession(model, device=device, inputs=inputs, outputs=outputs)
            continue
        s = InferenceSession(model, device=device, inputs=inputs, outputs=outputs)
        assert s.formats == (inputs, outputs)
        feed = x
        if inputs != "float":
            scale, zp = s.input_quantization["x"]
            dt = np.uint8 if "int8" not in name else np.int8
            feed = px if inputs == "pixels" else onnxruntime_quantize(x, scale, zp, dt)
            assert s.get_inputs()[0].type == f"tensor({np.dtype(feed.dtype).name})"
            assert "QuantizeLinear" not in s.nodes
            assert (TO_QUANTIZED in s.nodes) == (inputs == "pixels" and table_in), s.nodes
        got = s.run(None, {"x": feed})[0]
        if outputs == "float":
            assert np.array_equal(got, want), (inputs, outputs)
            continue
        scale, zp = s.output_quantization["y"]
        assert s.get_outputs()[0].type == f"tensor({got.dtype.name})"
        assert "DequantizeLinear" not in s.nodes and "DequantizeLinear+Clip" not in s.nodes
        if outputs == "quantized":
            assert np.array_equal((got.astype(np.int64) - zp).astype(np.float32) * scale, want), (inputs, outputs)
        elif outputs == "float16":
            assert got.dtype == np.float16 and TO_FLOAT16 in s.nodes
            assert np.array_equal(got.view(np.uint16), want.astype(np.float16).view(np.uint16)), (inputs, outputs)
        else:
            assert got.dtype == np.uint8 and np.array_equal(got, to_pixels(want)), (inputs, outputs)
            # the output is the identity where the quantization is pixels' own and no Clip cuts a pixel
            identity = scale == np.float32(1 / 255) and zp == 0 and got.dtype == np.uint8 and not clipped
            assert (TO_PIXELS not in s.nodes) == identity


def test_the_pixel_tables_hold_for_every_byte():
    """At scale 1/255 and zero point 0 (uint8), pixels are the quantized input and the quantized
    output's pixels (the identity: no kernel); the tables the rewrite computes are the float path's
    own functions of the 256 values."""
    p = np.arange(256, dtype=np.uint8)
    scale = np.float32(1 / 255)
    assert np.array_equal(onnxruntime_quantize(from_pixels(p, np.float32), scale, 0, np.uint8), p)
    assert np.array_equal(to_pixels(p.astype(np.float32) * scale), p)
    assert not np.array_equal(onnxruntime_quantize(from_pixels(p, np.float32), np.float32(1 / 250), 0, np.uint8), p)


def test_pixels_stream_and_bind_like_run(device):
    """run_stream over pixel frames and IO binding (a uint8 DeviceArray in, one out) give run()'s bytes."""
    model = CASES["espcn-narrow-input"][0]()
    s = InferenceSession(model, device=device, inputs="pixels", outputs="pixels")
    frames = [every_byte((1, 1, 12, 20), seed=k) for k in range(4)]
    want = [s.run(None, {"x": f})[0] for f in frames]
    got = [y for (y,) in s.run_stream(None, [{"x": f} for f in frames], depth=2)]
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    out = dmlvk.arrays.empty(want[0].shape, np.uint8, s.device)
    (y,) = s.run(None, {"x": dmlvk.asarray(frames[1], device=s.device)}, outputs={"y": out})
    assert y is out and np.array_equal(out.numpy(), want[1])
    with pytest.raises(TypeError, match="input 'x' must be uint8"):
        s.run(None, {"x": from_pixels(frames[0], np.float32)})
    for given in (np.zeros(want[0].shape, np.uint8), [0]):
        with pytest.raises(TypeError, match="output 'y' must be a dmlvk.DeviceArray"):
            s.run(None, {"x": frames[0]}, outputs={"y": given})
    assert s.device_work({"x": frames[0]})[2] == ["device"]            # one device stretch, nothing on the host
    # a stream's plans (depth of them) are kept for the next stream of the same frames
    kept = {id(p) for plans in s._stream_plans.values() for p in plans}
    assert len(kept) == 2
    list(s.run_stream(None, [{"x": f} for f in frames], depth=2))
    assert {id(p) for plans in s._stream_plans.values() for p in plans} == kept


def test_inputs_and_outputs_without_an_eight_bit_form_are_refused(device):
    """A format name that is none; an input read in float by another node; an output made by no
    DequantizeLinear; a model that runs partly on the host (its refusal kept)."""
    model = CASES["espcn"][0]()
    with pytest.raises(ValueError, match="inputs must be one of 'float', 'quantized', 'pixels', got 'uint8'"):
        InferenceSession(model, device=device, inputs="uint8")
    with pytest.raises(ValueError, match="outputs must be one of 'float', 'quantized', 'pixels', 'float16', got None"):
        InferenceSession(model, device=device, outputs=None)
    read = model.__class__()
    read.CopyFrom(model)
    read.graph.node.append(helper.make_node("Identity", ["x"], ["x_again"], name="again"))
    read.graph.output.append(helper.make_tensor_value_info("x_again", TensorProto.FLOAT, None))
    with pytest.raises(ValueError, match="inputs='pixels': the model's input 'x' is read in float by Identity 'again'"):
        InferenceSession(read, device=device, inputs="pixels")
    with pytest.raises(ValueError, match="outputs='pixels': the model's output 'x_again' is made by Identity"):
        InferenceSession(read, device=device, outputs="pixels")
    assert InferenceSession(read, device=device, outputs="float").formats == ("float", "float")
    split = models.quantize(models.split_network("end"), models.calibration_frames(), quant_format="QDQ")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(UnsupportedModelError, match="outputs='pixels' need the model to run whole on the device"):
            InferenceSession(split, device=device, inputs="pixels", outputs="pixels")
        with pytest.raises(UnsupportedModelError, match="dmlvk cannot run these nodes"):
            InferenceSession(split, device=device, inputs="pixels", fallback=False)
        assert video.pixel_session(split, device=device).formats == ("float", "float")
    assert video.pixel_session(model, device=device).formats == ("pixels", "pixels")


def _edge_model(q_inputs=("x", "s", "z"), consts=None, outputs=("y",), dq_inputs=("q", "s", "z"), inputs=("x",)):
    """x -> QuantizeLinear -> q -> DequantizeLinear -> y, the parameters as given (None: no constant)."""
    consts = {"s": np.float32(0.02), "z": np.uint8(3), **(consts or {})}
    nodes = [helper.make_node("QuantizeLinear", list(q_inputs), ["q"], name="quant"),
             helper.make_node("DequantizeLinear", list(dq_inputs), ["y"], name="dequant")]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(k, TensorProto.FLOAT, [1, 3, 2, 2]) for k in inputs],
                          [helper.make_tensor_value_info(k, TensorProto.FLOAT, [1, 3, 2, 2]) for k in outputs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items() if v is not None])
    return graphs.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))


def test_only_per_tensor_constant_eight_bit_parameters_have_an_eight_bit_form():
    """The edge rewrites on graphs alone: a per-tensor QuantizeLinear / DequantizeLinear of constant
    float32 scale and 8-bit zero point is taken; per axis, a scale fed at run time, a float16 scale,
    a 16-bit zero point, a DequantizeLinear without a zero point, an input that is also an output,
    an output that is an input are refused by name."""
    g = _edge_model()
    fed, q = pixels.feed_quantized(g, "quantized")
    assert q == {"x": (np.float32(0.02), 3)} and fed.inputs[0].type == "tensor(uint8)"
    given, q = pixels.give_quantized(g, "pixels")
    assert q == {"y": (np.float32(0.02), 3)} and [n.op for n in given.nodes] == ["QuantizeLinear", TO_PIXELS]
    refused = [_edge_model(consts={"s": np.float32([0.02, 0.01, 0.03]), "z": np.uint8([3, 3, 3])}),   # per axis
               _edge_model(consts={"s": np.float16(0.02)}), _edge_model(consts={"z": np.int16(3)}),
               _edge_model(inputs=("x", "s"), consts={"s": None})]                                       # fed
    for graph in refused:
        with pytest.raises(ValueError, match="inputs='pixels': the model's input 'x' is quantized per axis, with "
                                             "parameters that are not constants or not 8-bit"):
            pixels.feed_quantized(graph, "pixels")
    for graph in refused[:3] + [_edge_model(dq_inputs=("q", "s"))]:
        with pytest.raises(ValueError, match="outputs='quantized': the model's output 'y' is made by DequantizeLinear 'dequant'"):
            pixels.give_quantized(graph, "quantized")
    with pytest.raises(ValueError, match="input 'x' is a graph output"):
        pixels.feed_quantized(_edge_model(outputs=("y", "x")), "quantized")
    with pytest.raises(ValueError, match="output 'x' is a graph input or constant"):
        pixels.give_quantized(_edge_model(outputs=("y", "x")), "quantized")
    again = _edge_model(outputs=("y", "y8"))
    again = again.with_nodes(again.nodes + (graphs.Node("QuantizeLinear", "requant", ("y", "s", "z"), ("y8",)),))
    with pytest.raises(ValueError, match="output 'y' is also read by QuantizeLinear 'requant', which takes the floats"):
        pixels.give_quantized(again, "pixels")


def test_host_arrays_are_bound_in_place(device):
    """dmlvk.host_empty arrays as a session's input and output: the frame written into .host is read
    by the device in place, the output read from .host after the call, both run()'s bytes; arrays
    taken in turn; a DeviceArray in device memory has no .host."""
    model = CASES["espcn"][0]()
    s = InferenceSession(model, device=device, inputs="pixels", outputs="pixels")
    frames = [every_byte((1, 1, 12, 20), seed=k) for k in range(3)]
    want = [s.run(None, {"x": f})[0] for f in frames]
    ins = [dmlvk.host_empty(f.shape, np.uint8, device=s.device) for f in frames[:2]]
    outs = [dmlvk.host_empty(want[0].shape, np.uint8, device=s.device) for _ in range(2)]
    for k, f in enumerate(frames):
        x, y = ins[k % 2], outs[k % 2]
        x.host[...] = f
        (got,) = s.run(None, {"x": x}, outputs={"y": y})
        assert got is y and np.array_equal(y.host, want[k]) and np.array_equal(y.numpy(), want[k]), k
    assert not ins[0].host.flags.owndata and ins[0].host.base is not None          # a view, not a copy
    with pytest.raises(ValueError, match="in device memory"):
        dmlvk.asarray(frames[0], device=s.device).host
    with pytest.raises(ValueError, match="shape must be sizes of 0 or more"):
        dmlvk.host_empty((2, -1), np.uint8)
