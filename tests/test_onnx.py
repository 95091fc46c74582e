"""dmlvk.onnx: quantized ONNX models (built the way users build them) run on the device, bit for bit
against onnxruntime and against a node-by-node evaluation with dmlvk.reference."""
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from dmlvk_lab import onnx_models as models
from dmlvk_lab.cases import cpu_has_vnni
from dmlvk import asarray, reference
from dmlvk.onnx import InferenceSession, UnsupportedModelError, dequantize_linear, quantize_linear


def run_ort(model, feeds):
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def reference_run(model, feeds):
    """The model evaluated node by node with dmlvk.reference (and the Q/DQ formulas)."""
    vals = dict(feeds)
    vals.update({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    for n in model.graph.node:
        a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
        ins = [vals[k] if k else None for k in n.input]
        if n.op_type == "QuantizeLinear":
            out = quantize_linear(*ins, axis=a.get("axis", 1))
        elif n.op_type == "DequantizeLinear":
            out = dequantize_linear(*ins, axis=a.get("axis", 1))
        elif n.op_type in ("DepthToSpace", "SpaceToDepth"):
            mode = a.get("mode", b"DCR")
            fn = reference.depth_to_space if n.op_type == "DepthToSpace" else reference.space_to_depth
            out = fn(ins[0], a["blocksize"], mode.decode() if isinstance(mode, bytes) else mode)
        elif n.op_type == "QLinearConv":
            x, xs, xzp, w, ws, wzp, ys, yzp = ins[:8]
            bias = ins[8] if len(ins) > 8 else None
            pads = a.get("pads", [0, 0, 0, 0])
            out = reference.quantized_linear_convolution(
                x, np.float32(xs), xzp, w, ws.reshape(-1), wzp.reshape(-1), bias, np.float32(ys), yzp, yzp.dtype,
                strides=tuple(a.get("strides", (1, 1))), dilations=tuple(a.get("dilations", (1, 1))),
                start_padding=(pads[0], pads[1]), end_padding=(pads[2], pads[3]), group_count=a.get("group", 1))
        elif n.op_type in ("Identity", "Flatten", "Reshape"):
            out = run_ort(_one_node(n, ins, vals), {n.input[0]: ins[0]})[0]
        else:
            raise AssertionError(n.op_type)
        vals[n.output[0]] = out
    return [vals[o.name] for o in model.graph.output]


def _one_node(n, ins, vals):
    consts = [numpy_helper.from_array(np.asarray(vals[k]), k) for k in n.input[1:] if k]
    g = helper.make_graph([n], "one", [helper.make_tensor_value_info(n.input[0], helper.np_dtype_to_tensor_dtype(ins[0].dtype), None)],
                          [helper.make_tensor_value_info(n.output[0], helper.np_dtype_to_tensor_dtype(ins[0].dtype), None)], consts)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def one_submission(device) -> list:
    """A quantized model's plan: one device stretch, QuantizeLinear included where the device has
    the double-precision division it needs (else it runs on the host first)."""
    return ["device"] if device.capabilities.has("shaderFloat64") else ["host", "device"]


@pytest.fixture(scope="module")
def espcn_models():
    return {s: models.quantize(models.espcn(s), models.calibration_frames()) for s in (2, 3, 4)}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_axis", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 3, 37, 41)])
def test_quantize_and_dequantize_match_onnxruntime(device, rng, dtype, per_axis, shape):
    # On the host (numpy) and on the device (ops.quantize, inside a session), against onnxruntime:
    # ties, saturation, +-0, +-inf (saturate) and NaN (the type's lowest value, as onnxruntime gives);
    # 210 elements (the last word half full), and 13,653 (3,414 words in 27 workgroups, the last partly
    # idle, the last word 1 element).
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    scale = np.float32(0.05)
    x.reshape(-1)[:40] = (np.arange(40, dtype=np.float32) - 20.5) * scale       # ties: half to even
    x.reshape(-1)[40:44] = [1e6, -1e6, np.float32(127.5) * scale, np.float32(-128.5) * scale]
    x.reshape(-1)[44:49] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    if per_axis:
        scale = rng.uniform(0.01, 0.1, 3).astype(np.float32)
        zp = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, 3).astype(dtype)
    else:
        zp = np.asarray(rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max), dtype)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=1)]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("q", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), x.shape),
                           helper.make_tensor_value_info("d", TensorProto.FLOAT, x.shape)],
                          [numpy_helper.from_array(np.asarray(scale), "s"), numpy_helper.from_array(np.asarray(zp), "z")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    q_ort, d_ort = run_ort(model, {"x": x})
    q = quantize_linear(x, scale, zp, axis=1)
    assert q.dtype == np.dtype(dtype) and np.array_equal(q, q_ort)
    assert np.array_equal(dequantize_linear(q, scale, zp, axis=1), d_ort)
    for host in (False, True):
        session = InferenceSession(model, device=device, host_quantization=host)
        q_dev, d_dev = session.run(None, {"x": x})
        assert np.array_equal(q_dev, q_ort) and np.array_equal(d_dev, d_ort, equal_nan=True), host
        kinds = [kind for kind, _ in next(iter(session._plans.values())).steps]
        assert kinds == (["host", "host"] if host else one_submission(device)), kinds

def test_quantize_near_ties_matches_onnxruntime(device, rng):
    # x / scale rounded to float32 decides each output, so inputs whose quotient lies within a few
    # float32 steps of k + 1/2 (where rounding half to even turns), for scales of every magnitude and
    # significand, against onnxruntime; per tensor (the device kernel's reciprocal path) and per axis.
    for trial in range(12):
        scale = np.float32(2.0 ** rng.uniform(-14, 4)) * np.float32(rng.uniform(1, 2))
        k = rng.integers(-140, 140, 2048).astype(np.float32) + np.float32(0.5)
        x = (k * scale).astype(np.float32)
        steps = rng.integers(-3, 4, x.size).astype(np.int32)
        x = (x.view(np.int32) + steps).view(np.float32).reshape(1, 2, 32, 32)
        per_axis = trial % 3 == 2
        s = np.asarray([scale, np.float32(scale * 1.37)], np.float32) if per_axis else np.asarray(scale)
        zp = np.asarray([3, 250], np.uint8) if per_axis else np.asarray(7, np.uint8)
        g = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1)], "q",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("q", TensorProto.UINT8, x.shape)],
                              [numpy_helper.from_array(s, "s"), numpy_helper.from_array(zp, "z")])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        want = run_ort(model, {"x": x})[0]
        got = InferenceSession(model, device=device).run(None, {"x": x})[0]
        assert np.array_equal(got, want), (trial, scale, int(np.sum(got != want)))



@pytest.mark.parametrize("scale", [2, 3, 4])
def test_quantized_espcn_matches_onnxruntime(device, espcn_models, scale):
    # quantize_static leaves DepthToSpace in float after DequantizeLinear; dmlvk moves the
    # per-tensor DequantizeLinear after it (exact), so the device runs QLinearConv x3 and
    # DepthToSpace on uint8 in one stretch.
    model = espcn_models[scale]
    assert [n.op_type for n in model.graph.node] == ["QuantizeLinear"] + ["QLinearConv"] * 3 + [
        "DequantizeLinear", "DepthToSpace"]
    session = InferenceSession(model, device=device)
    assert session.nodes == ["QuantizeLinear"] + ["QLinearConv"] * 3 + ["DepthToSpace", "DequantizeLinear"]
    for n, h, w in ((1, 20, 28), (2, 17, 9)):
        x = np.concatenate(models.calibration_frames(n, h, w, seed=scale))
        got, = session.run(None, {"x": x})
        want, = run_ort(model, {"x": x})
        assert got.shape == (n, 1, h * scale, w * scale) and got.dtype == np.float32
        assert np.array_equal(got, want)
        assert np.array_equal(got, reference_run(model, {"x": x})[0])
    plan = next(iter(session._plans.values()))
    assert [kind for kind, _ in plan.steps] == one_submission(device)


def test_qconv_depth_to_space_chain(device, rng):
    model = models.qconv_depth_to_space_chain()
    session = InferenceSession(model, device=device)
    x = rng.integers(0, 256, (2, 8, 9, 11), dtype=np.uint8)
    got, = session.run(["y"], {"x": x})
    assert got.dtype == np.uint8 and np.array_equal(got, run_ort(model, {"x": x})[0])
    assert np.array_equal(got, reference_run(model, {"x": x})[0])
    got2, = session.run(None, {"x": x[:1]})              # another shape: another plan
    assert np.array_equal(got2, got[:1])


def test_space_to_depth_stem(device, rng):
    model = models.space_to_depth_stem()
    session = InferenceSession(model, device=device)
    assert session.nodes == ["QuantizeLinear", "SpaceToDepth", "QLinearConv", "DequantizeLinear"]
    x = rng.random((2, 3, 16, 20), dtype=np.float32)
    got, = session.run(None, {"x": x})
    assert np.array_equal(got, run_ort(model, {"x": x})[0])
    assert np.array_equal(got, reference_run(model, {"x": x})[0])


def test_quantize_moves_before_a_float_space_to_depth(device, rng):
    # float x -> SpaceToDepth -> QuantizeLinear -> QLinearConv: the Q moves first (exact), so the
    # layout op runs on uint8 next to the convolution.
    stem = models.space_to_depth_stem()
    nodes = list(stem.graph.node)
    s2d_f = helper.make_node("SpaceToDepth", ["x"], ["xf"], blocksize=2, name="s2d_float")
    q_f = helper.make_node("QuantizeLinear", ["xf", "s", "zp"], ["xs2d"], name="quant_after")
    g = helper.make_graph([s2d_f, q_f] + nodes[2:], "s2d_float", list(stem.graph.input), list(stem.graph.output),
                          list(stem.graph.initializer))
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = InferenceSession(model, device=device)
    assert session.nodes == ["QuantizeLinear", "SpaceToDepth", "QLinearConv", "DequantizeLinear"]
    x = rng.random((1, 3, 8, 12), dtype=np.float32)
    assert np.array_equal(session.run(None, {"x": x})[0], run_ort(model, {"x": x})[0])


def test_views_inside_device_work(device, rng):
    # QLinearConv -> Reshape (a re-view on the device) -> DepthToSpace -> Flatten -> output.
    chain = models.qconv_depth_to_space_chain(c=8, m=12)
    conv, d2s = chain.graph.node
    d2s_in = helper.make_node("DepthToSpace", ["r"], ["d"], blocksize=2, mode="CRD", name="d2s")
    nodes = [conv, helper.make_node("Reshape", ["q", "shape"], ["r"], name="reshape"), d2s_in,
             helper.make_node("Flatten", ["d"], ["y"], axis=1, name="flatten")]
    inits = list(chain.graph.initializer) + [numpy_helper.from_array(np.array([0, 12, -1, 11], np.int64), "shape")]
    g = helper.make_graph(nodes, "views", list(chain.graph.input),
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = InferenceSession(model, device=device)
    x = rng.integers(0, 256, (2, 8, 9, 11), dtype=np.uint8)
    got, = session.run(None, {"x": x})
    assert got.shape == (2, 3 * 18 * 22) and np.array_equal(got, run_ort(model, {"x": x})[0])
    plan = next(iter(session._plans.values()))
    assert [kind for kind, _ in plan.steps] == ["device"]                  # views ride along


def test_unsupported_models_are_refused_at_load(device):
    chain = models.qconv_depth_to_space_chain()
    extra = [helper.make_node("Add", ["y", "y"], ["z"], name="adder"), helper.make_node("Softmax", ["z"], ["s"])]
    g = helper.make_graph(list(chain.graph.node) + extra, "bad", list(chain.graph.input),
                          [helper.make_tensor_value_info("s", TensorProto.UINT8, None)], list(chain.graph.initializer))
    with pytest.raises(UnsupportedModelError, match=r"#3 \(Softmax\): Softmax; adder: Add not in a DequantizeLinear"):
        InferenceSession(helper.make_model(g, ir_version=8), device=device, fallback=False)
    # A filter that is a graph input cannot be prepared ahead.
    nodes = list(chain.graph.node)
    g = helper.make_graph(nodes, "w_input", list(chain.graph.input) + [helper.make_tensor_value_info("w", TensorProto.INT8, None)],
                          list(chain.graph.output), [i for i in chain.graph.initializer if i.name != "w"])
    with pytest.raises(UnsupportedModelError, match="qconv: QLinearConv input 3 must be a constant"):
        InferenceSession(helper.make_model(g, ir_version=8), device=device, fallback=False)
    with pytest.raises(TypeError):
        InferenceSession(42, device=device)


def test_run_argument_errors(device, rng):
    session = InferenceSession(models.qconv_depth_to_space_chain(), device=device)
    x = rng.integers(0, 256, (1, 8, 5, 5), dtype=np.uint8)
    with pytest.raises(ValueError, match="missing"):
        session.run(None, {})
    with pytest.raises(ValueError, match="no graph input"):
        session.run(None, {"x": x, "other": x})
    with pytest.raises(ValueError, match="no graph output"):
        session.run(["nope"], {"x": x})
    with pytest.raises(TypeError):
        session.run(None, [x])
    with pytest.raises(TypeError, match="uint8"):
        session.run(None, {"x": x.astype(np.float32)})
    assert [i.name for i in session.get_inputs()] == ["x"] and session.get_outputs()[0].type == "tensor(uint8)"


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_run_stream_gives_each_frame_its_own_outputs(device, espcn_models, depth):
    """run_stream over frames (with up to `depth` in flight, a plan each) yields what run() gives for
    each frame, in order; a change of frame shape mid-stream, a consumer that stops early, device
    arrays (run frame by frame) and a plan with host steps (host quantization) all give the same."""
    session = InferenceSession(espcn_models[2], device=device)
    frames = [np.concatenate(models.calibration_frames(1, 12, 20, seed=i)) for i in range(6)]
    frames.insert(3, np.concatenate(models.calibration_frames(1, 8, 8, seed=9)))
    want = [session.run(None, {"x": f})[0] for f in frames]
    got = [o[0] for o in session.run_stream(None, ({"x": f} for f in frames), depth=depth)]
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))
    again = [o[0] for o in session.run_stream(["y"], [{"x": f} for f in frames[::-1]], depth=depth)]
    assert all(np.array_equal(a, b) for a, b in zip(again, want[::-1]))
    views = [o[0][:, :, ::2] for o in session.run_stream(None, ({"x": f} for f in frames), depth=depth)]
    assert all(np.array_equal(v, w[:, :, ::2]) for v, w in zip(views, want))      # a view keeps its array
    for o, w in zip(session.run_stream(None, ({"x": f} for f in frames), depth=depth), want):
        assert np.array_equal(o[0], w)                   # let go at once: the arrays are reused
    stream = session.run_stream(None, ({"x": f} for f in frames), depth=depth)
    assert np.array_equal(next(stream)[0], want[0])
    stream.close()                                      # frames in flight are waited for
    xd = [asarray(f, device) for f in frames[:3]]
    assert all(np.array_equal(o[0], w) for o, w in zip(session.run_stream(None, ({"x": x} for x in xd)), want))
    host = InferenceSession(espcn_models[2], device=device, host_quantization=True)
    assert all(np.array_equal(o[0], w) for o, w in zip(host.run_stream(None, ({"x": f} for f in frames)), want))


def test_run_stream_argument_errors(device, espcn_models):
    session = InferenceSession(espcn_models[2], device=device)
    with pytest.raises(ValueError, match="depth"):
        next(session.run_stream(None, [], depth=0))
    with pytest.raises(ValueError, match="no graph output"):
        next(session.run_stream(["nope"], []))
    with pytest.raises(ValueError, match="missing"):
        next(session.run_stream(None, [{}]))


def test_command_line_run(tmp_path, rng):
    model = models.qconv_depth_to_space_chain()
    onnx.save(model, tmp_path / "m.onnx")
    x = rng.integers(0, 256, (3, 8, 6, 7), dtype=np.uint8)
    np.save(tmp_path / "x.npy", x)
    r = subprocess.run([sys.executable, "-m", "dmlvk", "run", str(tmp_path / "m.onnx"), "--input", f"x={tmp_path / 'x.npy'}",
                        "--out-dir", str(tmp_path / "out"), "--batch-size", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "batch 1/2" in r.stderr and "batch 2/2" in r.stderr
    assert np.array_equal(np.load(tmp_path / "out" / "y.npy"), run_ort(model, {"x": x})[0])
    bad = subprocess.run([sys.executable, "-m", "dmlvk", "run", str(tmp_path / "m.onnx")], capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 2 and "need --input" in bad.stderr
    # A folder of frames: one output file per input file, progress with frames/s.
    (tmp_path / "frames").mkdir()
    for i in range(3):
        np.save(tmp_path / "frames" / f"f{i}.npy", x[i:i + 1])
    r = subprocess.run([sys.executable, "-m", "dmlvk", "run", str(tmp_path / "m.onnx"), "--input",
                        f"x={tmp_path / 'frames'}", "--out-dir", str(tmp_path / "out2")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[3/3] f2.npy" in r.stderr and "3 files, 3 frames" in r.stderr and "frames/s" in r.stderr
    want = run_ort(model, {"x": x})[0]
    for i in range(3):
        assert np.array_equal(np.load(tmp_path / "out2" / f"f{i}.npy"), want[i:i + 1])
    r = subprocess.run([sys.executable, "-m", "dmlvk", "run", str(tmp_path / "m.onnx"), "--input",
                        f"y={tmp_path / 'frames'}"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "the model's inputs are ['x']" in r.stderr


def test_command_line_run_over_images(tmp_path, device, espcn_models):
    """dmlvk run with a folder of images (Pillow): grey frames in (float inputs scaled to [0, 1]),
    images of the super-resolved frames out (clipped, x 255, rounded), .npy files beside them."""
    from PIL import Image
    onnx.save(espcn_models[2], tmp_path / "m.onnx")
    (tmp_path / "images").mkdir()
    rng = np.random.default_rng(4)
    pixels = [rng.integers(0, 256, (10, 14), dtype=np.uint8) for _ in range(3)]
    for i, p in enumerate(pixels):
        Image.fromarray(p).save(tmp_path / "images" / f"frame{i}.png")
    np.save(tmp_path / "images" / "raw.npy", pixels[0][None, None].astype(np.float32) / 255)
    r = subprocess.run([sys.executable, "-m", "dmlvk", "run", str(tmp_path / "m.onnx"), "--input",
                        f"x={tmp_path / 'images'}", "--out-dir", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "4 files, 4 frames" in r.stderr
    session = InferenceSession(espcn_models[2], device=device)
    for i, p in enumerate(pixels):
        y = session.run(None, {"x": p[None, None].astype(np.float32) / 255})[0]
        want = np.rint(np.clip(y[0, 0], 0, 1) * 255).astype(np.uint8)
        with Image.open(tmp_path / "out" / f"frame{i}.png") as im:
            assert im.size == (28, 20) and np.array_equal(np.asarray(im), want)
    assert np.array_equal(np.load(tmp_path / "out" / "raw.npy"),
                          session.run(None, {"x": pixels[0][None, None].astype(np.float32) / 255})[0])


def test_torch_exported_espcn(device):
    # torch.nn.PixelShuffle exported by torch.onnx.export, then quantize_static (runs where torch is).
    torch_model = models.torch_espcn(2)
    if torch_model is None:
        pytest.skip("torch is not installed here (the GPU machine runs this test)")
    model = models.quantize(torch_model, models.calibration_frames())
    session = InferenceSession(model, device=device)
    x = np.concatenate(models.calibration_frames(2, 24, 40, seed=5))
    got, = session.run(None, {"x": x})
    assert np.array_equal(got, run_ort(model, {"x": x})[0])


def test_threads_share_a_session_and_plans_are_bounded(device, rng):
    import threading
    model = models.qconv_depth_to_space_chain()
    session = InferenceSession(model, device=device)
    frames = [rng.integers(0, 256, (1, 8, 6 + i % 3, 7), dtype=np.uint8) for i in range(12)]
    want = [run_ort(model, {"x": f})[0] for f in frames]
    got = [None] * len(frames)

    def work(k):
        for i in range(k, len(frames), 3):
            got[i] = session.run(None, {"x": frames[i]})[0]
    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    for h in range(5, 11):                       # six shapes: the four latest are kept
        session.run(None, {"x": rng.integers(0, 256, (1, 8, h, 5), dtype=np.uint8)})
    assert len(session._plans) == 4


@pytest.mark.parametrize("types", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_conv_integer(device, rng, types):
    # ConvInteger: the int32 accumulator of the quantized convolution (groups, pads, strides).
    x_dt, w_dt = types
    info_x, info_w = np.iinfo(x_dt), np.iinfo(w_dt)
    w = rng.integers(info_w.min, info_w.max + 1, (6, 4, 3, 3)).astype(w_dt)
    xzp, wzp = np.asarray(rng.integers(0, 100), x_dt), np.asarray(7, w_dt)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 0, 1, 2], strides=[1, 2], group=2,
                            name="ci")
    g = helper.make_graph([node], "ci", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(np.dtype(x_dt)), None)],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(xzp, "xz"), numpy_helper.from_array(wzp, "wz")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = rng.integers(info_x.min, info_x.max + 1, (2, 8, 7, 9)).astype(x_dt)
    got, = InferenceSession(model, device=device).run(None, {"x": x})
    assert got.dtype == np.int32 and np.array_equal(got, run_ort(model, {"x": x})[0])
    # per-channel filter zero points (onnxruntime's CPU kernel takes only one): against the reference
    wzp_m = rng.integers(0, 50, 6).astype(w_dt)
    model.graph.initializer[2].CopyFrom(numpy_helper.from_array(wzp_m, "wz"))
    got, = InferenceSession(model, device=device).run(None, {"x": x})
    want = reference.conv_integer_accumulators(x, int(xzp), w, wzp_m.astype(np.int64), None, strides=(1, 2),
                                               start_padding=(1, 0), end_padding=(1, 2), group_count=2)
    assert np.array_equal(got, want)
    # The zero points are optional inputs: without them, 0.
    bare = helper.make_node("ConvInteger", ["x", "w"], ["y"], pads=[1, 0, 1, 2], strides=[1, 2], group=2, name="ci")
    g = helper.make_graph([bare], "ci", list(model.graph.input), list(model.graph.output), [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    got, = InferenceSession(model, device=device).run(None, {"x": x})
    assert np.array_equal(got, run_ort(model, {"x": x})[0])


# ---- QDQ models, as onnxruntime's quantize_static writes them by default ----------------------

FLOAT_MODELS = {
    "espcn": (lambda: models.espcn(2), 1, ["QuantizeLinear"] + ["QLinearConv"] * 3 + ["DepthToSpace", "DequantizeLinear"]),
    "s2d-stem": (models.space_to_depth_stem_float, 3,
                 ["QuantizeLinear", "SpaceToDepth", "QLinearConv", "DequantizeLinear"]),
    "depthwise": (models.depthwise_block_float, 16, ["QuantizeLinear", "QLinearConv", "QLinearConv", "DequantizeLinear"]),
}
SETTINGS = {                     # quantize_static's defaults first, then the common options
    "qdq-default": dict(quant_format="QDQ", activation_type="QInt8", per_channel=False, reduce_range=False),
    "qdq-u8": dict(quant_format="QDQ", activation_type="QUInt8", per_channel=False, reduce_range=False),
    "qdq-per-channel": dict(quant_format="QDQ", activation_type="QInt8", per_channel=True, reduce_range=False),
    "qdq-u8-per-channel-reduce-range": dict(quant_format="QDQ", activation_type="QUInt8", per_channel=True,
                                            reduce_range=True),
    "qdq-u8-u8": dict(quant_format="QDQ", activation_type="QUInt8", weight_type="QUInt8", per_channel=False,
                      reduce_range=False),
    "qoperator-s8-per-channel": dict(quant_format="QOperator", activation_type="QInt8", per_channel=True,
                                     reduce_range=False),
    "qoperator-u8": dict(quant_format="QOperator", activation_type="QUInt8", per_channel=False, reduce_range=False),
}


@pytest.fixture(scope="module")
def quantized(request):
    cache = {}

    def get(model, setting):
        if (model, setting) not in cache:
            make, channels, _ = FLOAT_MODELS[model]
            frames = models.calibration_frames(6, 16, 20, seed=2, channels=channels)
            cache[model, setting] = models.quantize(make(), frames, **SETTINGS[setting])
        return cache[model, setting]
    return get


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("model_name", FLOAT_MODELS)
def test_quantize_static_models_match_onnxruntime(device, quantized, model_name, setting):
    # Float models quantized the way users do; QDQ groups are fused into QLinearConv as
    # onnxruntime's CPU provider fuses them, so its result is the one to equal, bit for bit.
    model = quantized(model_name, setting)
    _, channels, runs = FLOAT_MODELS[model_name]
    session = InferenceSession(model, device=device)
    assert session.nodes == runs
    # Without VNNI, onnxruntime's u8 x s8 kernel saturates its 16-bit pair sums (u8 activations with
    # full-range s8 weights); and its optimized QDQ graph of s8 activations with per-channel weights
    # (measured on an AVX2 EPYC, onnxruntime 1.31 and 1.32) differs from its own QLinearConv on the
    # fused graph (runs_model), which dmlvk equals, as it equals the exact reference.
    opts = SETTINGS[setting]
    inexact_ort = not cpu_has_vnni() and (
        (opts.get("activation_type") == "QUInt8" and opts.get("weight_type") != "QUInt8" and not opts["reduce_range"])
        or (opts["quant_format"] == "QDQ" and opts.get("activation_type") == "QInt8" and opts["per_channel"]))
    for n, h, w in ((1, 16, 20), (2, 10, 14)):
        x = np.concatenate(models.calibration_frames(n, h, w, seed=7, channels=channels))
        got, = session.run(None, {"x": x})
        exact, = reference_run(session.runs_model(), {"x": x})
        assert got.dtype == np.float32 and np.array_equal(got, exact)
        if not inexact_ort:
            want, = run_ort(model, {"x": x})
            assert np.array_equal(got, want)
        elif opts.get("activation_type") == "QInt8":       # s8 x s8: onnxruntime's QLinearConv is exact
            want, = run_ort(session.runs_model(), {"x": x})
            assert np.array_equal(got, want)
    plan = next(iter(session._plans.values()))
    assert [kind for kind, _ in plan.steps] == one_submission(device)


def test_qdq_groups_that_cannot_be_fused_are_refused_by_name(device):
    model = models.quantize(models.depthwise_block_float(), models.calibration_frames(2, 8, 8, channels=16),
                            **SETTINGS["qdq-default"])
    # A float bias instead of the int32 one onnxruntime's quantizer writes: onnxruntime would run
    # that Conv in float; dmlvk refuses it by name.
    g = model.graph
    conv = next(n for n in g.node if n.op_type == "Conv" and n.name == "pointwise")
    dq_bias = next(n for n in g.node if n.output[0] == conv.input[2])
    nodes = [n for n in g.node if n is not dq_bias]
    bias = numpy_helper.from_array(np.zeros(24, np.float32), conv.input[2])
    bad = helper.make_model(helper.make_graph(nodes, "bad", list(g.input), list(g.output), list(g.initializer) + [bias]),
                            opset_imports=list(model.opset_import), ir_version=model.ir_version)
    with pytest.raises(UnsupportedModelError, match=r"pointwise: Conv not in a DequantizeLinear -> Conv -> "
                                                    r"QuantizeLinear group .*the bias must be"):
        InferenceSession(bad, device=device, fallback=False)
    # A Relu whose QuantizeLinear's zero point is not the lowest value changes values: refused.
    relu_model = models.quantize(models.space_to_depth_stem_float(), models.calibration_frames(2, 8, 8, channels=3),
                                 **SETTINGS["qdq-u8"])
    g = relu_model.graph
    q = next(n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] not in ("x",) and "xs2d" not in n.input[0])
    conv = next(n for n in g.node if n.op_type == "Conv")
    relu = helper.make_node("Relu", [conv.output[0]], ["relu_out"], name="kept_relu")
    q.input[0] = "relu_out"
    zp = next(i for i in g.initializer if i.name == q.input[2])
    zp.CopyFrom(numpy_helper.from_array(np.uint8(10), zp.name))
    nodes = list(g.node)
    nodes.insert(nodes.index(conv) + 1, relu)
    m = helper.make_model(helper.make_graph(nodes, "relu", list(g.input), list(g.output), list(g.initializer)),
                          opset_imports=list(relu_model.opset_import), ir_version=relu_model.ir_version)
    with pytest.raises(UnsupportedModelError, match="kept_relu: Relu between a Conv and its QuantizeLinear"):
        InferenceSession(m, device=device, fallback=False)
    # A bare float Conv (not quantized at all).
    f = models.depthwise_block_float()
    with pytest.raises(UnsupportedModelError, match="depthwise: Conv not in a .*; relu6: Clip outside"):
        InferenceSession(f, device=device, fallback=False)


def test_large_frames_in_and_out(device, rng):
    # From 1 MB on the session copies frames into and out of staging memory in pieces on several
    # threads: every byte must arrive (a size that is no multiple of the pieces' alignment).
    shape = (1, 5, 1021, 1031)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"])]
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("d", TensorProto.FLOAT, shape)],
                          [numpy_helper.from_array(np.float32(0.02), "s"), numpy_helper.from_array(np.uint8(128), "z")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    assert x.nbytes > 16 << 20
    got, = InferenceSession(model, device=device).run(None, {"x": x})
    assert np.array_equal(got, run_ort(model, {"x": x})[0])
    small = x[:, :1, :301, :1031]                   # 1.2 MB: a few pieces, the last a partial one
    small = np.ascontiguousarray(small)
    mid = helper.make_model(helper.make_graph(nodes, "mid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, small.shape)],
                                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, small.shape)],
                                              list(g.initializer)), opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    got, = InferenceSession(mid, device=device).run(None, {"x": small})
    assert np.array_equal(got, run_ort(mid, {"x": small})[0])


def test_quantize_without_a_zero_point_input(device, rng):
    # The zero point is optional: uint8 and 0 without it (QuantizeLinear), 0 of the input's type
    # (DequantizeLinear); both on the device and on the host.
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"]), helper.make_node("DequantizeLinear", ["q", "s"], ["d"])]
    g = helper.make_graph(nodes, "no_zp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 3, 5))],
                          [helper.make_tensor_value_info("q", TensorProto.UINT8, None),
                           helper.make_tensor_value_info("d", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.float32(0.1), "s")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = (rng.standard_normal((1, 2, 3, 5)) * 10).astype(np.float32)
    want = run_ort(model, {"x": x})
    for host in (False, True):
        got = InferenceSession(model, device=device, host_quantization=host).run(None, {"x": x})
        assert got[0].dtype == np.uint8 and all(np.array_equal(a, b) for a, b in zip(got, want)), host


@pytest.mark.parametrize("case", ["same", "other-scale", "no-zero-points"])
def test_dequantize_quantize_pairs(device, rng, case):
    # DequantizeLinear -> QuantizeLinear gives back its input only with one scale and zero point
    # of one type; then the pair is dropped. Without zero points the types differ (int8 in, uint8
    # out): the pair stays and requantizes.
    s2 = np.float32(0.05) if case == "same" else np.float32(0.07)
    zp_in = [] if case == "no-zero-points" else ["z"]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s"] + zp_in, ["f"]),
             helper.make_node("QuantizeLinear", ["f", "s2"] + zp_in, ["y"])]
    y_type = TensorProto.UINT8 if case == "no-zero-points" else TensorProto.INT8
    g = helper.make_graph(nodes, "pair", [helper.make_tensor_value_info("x", TensorProto.INT8, (1, 3, 4, 5))],
                          [helper.make_tensor_value_info("y", y_type, None)],
                          [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(s2, "s2"),
                           numpy_helper.from_array(np.int8(-3), "z")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = rng.integers(-128, 128, (1, 3, 4, 5), dtype=np.int8)
    session = InferenceSession(model, device=device)
    assert session.nodes == (["Identity"] if case == "same" else ["DequantizeLinear", "QuantizeLinear"])
    got, = session.run(None, {"x": x})
    assert np.array_equal(got, run_ort(model, {"x": x})[0]) and got.dtype == run_ort(model, {"x": x})[0].dtype


@pytest.mark.parametrize("host", [False, True], ids=["device-qdq", "host-qdq"])
def test_device_arrays_in_and_out(device, host):
    # IO binding: DeviceArray inputs read in place, outputs written into the caller's DeviceArrays;
    # a few device arrays in turn keep one recorded plan each.
    import dmlvk.arrays
    model = models.quantize(models.espcn(2), models.calibration_frames())
    session = InferenceSession(model, device=device, host_quantization=host)
    frames = [np.concatenate(models.calibration_frames(1, 12, 16, seed=s)) for s in range(4)]
    want = [session.run(None, {"x": f})[0] for f in frames]
    ins = [dmlvk.asarray(frames[0], device=device), dmlvk.asarray(frames[1], device=device)]
    outs = [dmlvk.arrays.empty((1, 1, 24, 32), np.float32, device=device) for _ in range(2)]
    plans = len(session._plans)
    for i, f in enumerate(frames):
        ins[i % 2].buffer.write(f)                  # the next frame into the input array in turn
        y, = session.run(None, {"x": ins[i % 2]}, outputs={"y": outs[i % 2]})
        assert y is outs[i % 2] and np.array_equal(y.numpy(), want[i])
        got, = session.run(None, {"x": ins[i % 2]})  # device in, numpy out
        assert isinstance(got, np.ndarray) and np.array_equal(got, want[i])
    assert len(session._plans) == min(plans + 4, 4)     # two inputs x (device out, host out)
    with pytest.raises(ValueError, match="the DeviceArray given is float32"):
        session.run(None, {"x": frames[0]}, outputs={"y": dmlvk.arrays.empty((1, 1, 24, 31), np.float32, device=device)})
    with pytest.raises(ValueError, match="outputs names no graph output"):
        session.run(None, {"x": frames[0]}, outputs={"z": outs[0]})
    with pytest.raises(TypeError, match="must be a dmlvk.DeviceArray"):
        session.run(None, {"x": frames[0]}, outputs={"y": np.zeros((1, 1, 24, 32), np.float32)})
    with pytest.raises(TypeError, match="must be float32"):
        session.run(None, {"x": dmlvk.asarray(frames[0].astype(np.float16), device=device)})


@pytest.mark.parametrize("case", ["per-channel-dequantize", "host-quantization"])
def test_dequantized_tail_not_folded(case, rng):
    """The fold's other conditions, just outside them: a DequantizeLinear with a scale and zero point
    per channel, and a session that quantizes on the host, run the convolution and the
    DequantizeLinear apart (no conv.dot.float), equal to onnxruntime's outputs."""
    import dmlvk
    model = conv_tail_model(rng, np.uint8, None, None, 4)
    if case == "per-channel-dequantize":
        inits = {i.name: i for i in model.graph.initializer}
        for name, value in (("ds", rng.uniform(0.01, 0.05, 4).astype(np.float32)),
                            ("dzp", rng.integers(0, 256, 4).astype(np.uint8))):
            inits[name].CopyFrom(numpy_helper.from_array(value, name))
    x = rng.integers(0, 256, (2, 16, 5, 12)).astype(np.uint8)
    want = run_ort(model, {"x": x})
    dev = dmlvk.Device()
    with dev.variants(tuning=dict(DOT_ON_CPU=True)):
        session = InferenceSession(model, device=dev, host_quantization=case == "host-quantization")
        got = session.run(None, {"x": x})
        _, dispatches, _ = session.device_work({"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    variants = [k.variant for k, _ in dispatches]
    assert "conv.dot.float" not in variants, variants
    if dev.capabilities.integer_dot_product:
        assert "conv.dot" in variants, variants


def test_folded_output_is_written_into_the_callers_array(device):
    """A graph output that is a view of a kernel's output (the DepthToSpace and DequantizeLinear folded
    into conv.dot.float, on CPU devices where DOT_ON_CPU) and bound to a DeviceArray: that kernel
    writes it there, no copy after the run."""
    import dmlvk.arrays
    if not device.capabilities.integer_dot_product:
        pytest.skip("conv.dot needs packed dot products")
    model = models.quantize(models.espcn(2), models.calibration_frames())
    x = np.concatenate(models.calibration_frames(1, 12, 16, seed=3))
    with device.variants(tuning={"DOT_ON_CPU": True}):
        session = InferenceSession(model, device=device)
        want, = session.run(None, {"x": x})
        out = dmlvk.arrays.empty(want.shape, np.float32, device=device)
        y, = session.run(None, {"x": x}, outputs={"y": out})
    assert y is out and np.array_equal(out.numpy(), want)
    plan = next(p for p in session._plans.values() if p.device_outputs)
    kernel, bufs = plan.device_work()[1][-1]
    assert kernel.variant == "conv.dot.float" and bufs[-1] is out.buffer


def test_quantize_linear_descriptions(device):
    # The device QuantizeLinear/DequantizeLinear operators' own checks and contracts.
    from dmlvk.errors import UnsupportedError
    from dmlvk.ops.quantize import QuantizeLinearDesc
    with pytest.raises(TypeError, match="take uint8 or int8"):
        QuantizeLinearDesc(True, (1, 4), np.int16)
    d = QuantizeLinearDesc(False, (2, 3, 5), np.int8, axis=-2)
    assert (d.channels, d.inner) == (3, 5)
    assert np.array_equal(d.params(np.float32([0.5, 1, 2]), np.int8([1, -2, 3])).view(np.int32)[3:], [1, -2, 3])
    for scale, zp in ((np.ones(2, np.float32), None), (np.ones(3, np.float32), np.zeros(2, np.int8))):
        with pytest.raises(ValueError, match="channel"):
            d.params(scale, zp)
    with pytest.raises(UnsupportedError, match="2\\^32"):
        QuantizeLinearDesc(True, (2**32,), np.uint8).kernel()
    # DequantizeLinear writes the elements there are and nothing past them.
    five = QuantizeLinearDesc(False, (1, 5), np.uint8)
    op = device.create_operator(five)
    out = device.buffer(32)
    out.write(np.full(8, -7.0, np.float32))
    op.execute([np.arange(8, dtype=np.uint8), five.params(np.float32(0.5), None)], [out])
    assert np.array_equal(out.numpy(np.float32, (8,)), [0, 0.5, 1, 1.5, 2, -7, -7, -7])


def test_quantize_on_the_host_without_double_precision(rng):
    # Without shaderFloat64 the exact quotient is not available on the device: QuantizeLinear runs
    # on the host, DequantizeLinear still on the device; the results are the same.
    import dmlvk
    dev = dmlvk.Device()
    dev.capabilities = dev.capabilities.without(["shaderFloat64"])
    model = models.quantize(models.espcn(2), models.calibration_frames())
    session = InferenceSession(model, device=dev)
    x = np.concatenate(models.calibration_frames(1, 10, 12, seed=4))
    got, = session.run(None, {"x": x})
    assert [kind for kind, _ in next(iter(session._plans.values())).steps] == ["host", "device"]
    assert np.array_equal(got, run_ort(model, {"x": x})[0])


def test_layers_write_the_layout_the_next_one_reads(device, espcn_models):
    """Layout planning, with the kernels a GPU chooses for the model (the cooperative matrices emulated
    on devices without them, conv.dot on CPU devices too): the first layer (conv.dot) writes its output
    channels-last, which the 3x3 64->32 layer reads in place (conv.coopmat.halo where its tiles fit the
    device's shared memory, else conv.coopmat.nhwc), so no input-packing kernel runs; the last layer
    reads the channels-last output conv.coopmat.halo writes (conv.dot.nhwc), or the packed NCHW
    conv.coopmat.nhwc writes (conv.dot). Outputs bit-exact against
    onnxruntime either way. Without those two variants the layers keep NCHW and the 64->32 layer packs
    its input."""
    from dmlvk.ops.quantized_conv.routines import READS_CHANNELS_LAST
    from dmlvk.ops.quantized_conv.variants import TABLE as CONV_TABLE
    from dmlvk.runtime.capabilities import SUBGROUP_SHUFFLE
    import dmlvk
    model = espcn_models[2]
    dev = dmlvk.Device()
    if (16, 16, 32) not in dev.capabilities.cooperative_matrix("int8", "int8", "int32"):
        dev.capabilities = dev.capabilities.with_emulated_cooperative_matrix()
    x = np.concatenate(models.calibration_frames(2, 13, 20, seed=5))
    want, = run_ort(model, {"x": x})
    variants = {}
    # (sliced: the halo kernel's input channels in two slices, which fit the CPU drivers' shared memory)
    for name, tuning in (("planned", {}), ("sliced", {"HALO_KSPLIT": 2}),
                         ("packed", dict.fromkeys(READS_CHANNELS_LAST, False))):
        with dev.variants(tuning=dict(tuning, DOT_ON_CPU=True)):
            session = InferenceSession(model, device=dev)
            got, = session.run(None, {"x": x})
            assert np.array_equal(got, want), name
            _, dispatches, _ = session.device_work({"x": x})
            variants[name] = [k.variant for k, _ in dispatches if k.variant.startswith("conv.")]
            kernels = [k for k, _ in dispatches if k.variant.startswith("conv.")]
            if name != "packed" and "conv.coopmat.halo" in variants[name]:
                # the halo kernel writes the last layer's input channels-last, which it reads in place
                # (conv.dot.nhwc walking rows down, a lane a column, where the device shuffles)
                last = kernels[-1]
                constants = CONV_TABLE[last.variant].constants(last)
                assert constants["CL_IN"] == 1 and (constants["WALK"] > 0) == dev.capabilities.has(SUBGROUP_SHUFFLE), \
                    (variants, constants)
    if not dev.capabilities.integer_dot_product:       # the first layer stores bytes: nothing planned
        assert variants["planned"] == variants["packed"]
        return
    # (the filters are packed once, at initialization; small frames take split K and its reduction)
    main = lambda vs: [v for v in vs if v != "conv.coopmat.splitk.reduce"]
    assert main(variants["planned"]) in ([["conv.dot", v, "conv.dot.float"] for v in READS_CHANNELS_LAST]), variants
    assert main(variants["packed"]) in (["conv.dot", "conv.coopmat.pack_input", v, "conv.dot.float"]
                                        for v in ("conv.coopmat", "conv.coopmat.splitk")), variants


def test_passes_decide_layouts_and_fusions_before_lowering(device, espcn_models):
    """The plan-time passes (dmlvk.onnx.passes) decide every tensor's shape, the intermediate layouts
    and the fusions from the whole graph before any node is lowered, into a Context lowering cannot
    change: the ESPCN's last QLinearConv, DepthToSpace and DequantizeLinear become one fused node where
    the device runs conv.dot (on CPU devices where DOT_ON_CPU), and the graph is left whole with host
    quantization; the shapes inferred are those the lowered nodes give."""
    import dataclasses
    import dmlvk
    from dmlvk.onnx import lower, passes, prepare
    graph = prepare(espcn_models[2])
    feeds = {"x": ((1, 1, 13, 20), np.dtype(np.float32))}
    dev = dmlvk.Device()
    for tuning, host_q in (({"DOT_ON_CPU": True}, False), ({"DOT_ON_CPU": True}, True), ({}, False)):
        with dev.variants(tuning=tuning):
            fused, ctx = passes.prepare(graph, dev, feeds, host_quantization=host_q)
            lowered = [(n, lower.lower(n, ctx)) for n in fused.nodes]
        with pytest.raises(dataclasses.FrozenInstanceError):
            ctx.layouts = {}
        with pytest.raises(TypeError):
            ctx.shapes["x"] = None
        for n, low in lowered:
            assert ctx.shapes[n.outputs[0]] == (low.shape, low.dtype), n
        ops = [n.op for n in fused.nodes]
        if host_q:
            assert ops == [n.op for n in graph.nodes] and not ctx.layouts
        elif dev.capabilities.integer_dot_product and tuning:
            assert ops[-1] == lower.DEQUANTIZED_CONV and "DepthToSpace" not in ops, ops
            assert fused.nodes[-1].outputs == graph.nodes[-1].outputs
        if lower.DEQUANTIZED_CONV in ops:        # what runs: the fused node's one kernel
            assert lowered[-1][1].op.kernels[-1].variant == "conv.dot.float"


def test_fused_node_types_are_not_model_ops(rng):
    """A model naming a fused node type as its op is refused at load like any op dmlvk does not know."""
    node = helper.make_node("QLinearConv+DequantizeLinear", ["x"], ["y"], name="odd")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedModelError, match=r"odd: QLinearConv\+DequantizeLinear"):
        InferenceSession(model, fallback=False)


def conv_tail_model(rng, y_dt, block, mode, m, extra_output=False, dzp=None):
    """x (y_dt, 16 channels) -> QLinearConv 3x3 (m output channels of y_dt, random constants, 7-bit
    weights: onnxruntime's u8s8 kernels without VNNI saturate 8-bit ones) -> DepthToSpace (block, mode;
    none where block is None) -> DequantizeLinear (zero point dzp, else random) -> the float32 output;
    extra_output: the convolution's output a graph output too."""
    w = rng.integers(-64, 64, (m, 16, 3, 3)).astype(np.int8)
    info = np.iinfo(y_dt)
    consts = [numpy_helper.from_array(a, k) for k, a in (
        ("xs", np.float32(0.02)), ("xzp", np.array(rng.integers(info.min, info.max + 1), y_dt)), ("w", w),
        ("ws", rng.uniform(0.001, 0.01, m).astype(np.float32)), ("wzp", np.zeros(m, np.int8)),
        ("ys", np.float32(0.4)), ("yzp", np.array(rng.integers(info.min, info.max + 1), y_dt)),
        ("b", rng.integers(-3000, 3000, m).astype(np.int32)), ("ds", np.float32(0.0371)),
        ("dzp", np.array(rng.integers(info.min, info.max + 1) if dzp is None else dzp, y_dt)))]
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"], ["q"],
                              pads=[1, 1, 1, 1])]
    last = "q"
    if block is not None:
        nodes.append(helper.make_node("DepthToSpace", ["q"], ["s"], blocksize=block, mode=mode))
        last = "s"
    nodes.append(helper.make_node("DequantizeLinear", [last, "ds", "dzp"], ["y"]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_output:
        outputs.append(helper.make_tensor_value_info("q", helper.np_dtype_to_tensor_dtype(np.dtype(y_dt)), None))
    x_type = helper.np_dtype_to_tensor_dtype(np.dtype(y_dt))
    graph = helper.make_graph(nodes, "tail", [helper.make_tensor_value_info("x", x_type, None)],
                              outputs, consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("y_dt,block,mode,m,extra,dzp", [(np.uint8, 2, "DCR", 4, False, None),
                                                         (np.int8, 2, "CRD", 8, False, None),
                                                         (np.uint8, 3, "CRD", 9, False, None),
                                                         (np.int8, None, None, 4, False, None),
                                                         (np.uint8, None, None, 1, False, None),
                                                         (np.uint8, 2, "DCR", 4, True, None),
                                                         (np.int8, 2, "DCR", 4, False, -50)],
                         ids=["dcr2", "crd2-int8", "crd3", "no-d2s", "no-d2s-1", "graph-output", "negative-zp"])
def test_dequantized_tail_folds_into_the_last_convolution(device, rng, y_dt, block, mode, m, extra, dzp):
    """QLinearConv -> [DepthToSpace ->] DequantizeLinear runs as one kernel (conv.dot.float: the
    convolution's epilogue dequantizes and stores each value where the DepthToSpace puts it) where
    conv.dot runs the convolution (on CPU devices where DOT_ON_CPU), and as three operators where the
    convolution's output is read elsewhere (a graph output); equal to onnxruntime's and the reference's
    outputs on every element either way. One image channel (dcr2, crd3, no-d2s-1: an invocation holds
    every channel) takes the 16-byte stores of whole rows, more (crd2-int8, no-d2s) one float a store;
    negative-zp: a negative dequantization zero point (a specialization constant SwiftShader read as 0
    when it was declared a signed int)."""
    import dmlvk
    model = conv_tail_model(rng, y_dt, block, mode, m, extra, dzp)
    info = np.iinfo(y_dt)
    x = rng.integers(info.min, info.max + 1, (2, 16, 5, 12)).astype(y_dt)
    want = reference_run(model, {"x": x})
    want_ort = run_ort(model, {"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(want_ort, want))
    dev = dmlvk.Device()
    with dev.variants(tuning=dict(DOT_ON_CPU=True, DOT_FEW_CHANNELS=16, DOT_CHANNELS=16)):
        session = InferenceSession(model, device=dev)
        got = session.run(None, {"x": x})
        _, dispatches, _ = session.device_work({"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    variants = [k.variant for k, _ in dispatches]
    if not dev.capabilities.integer_dot_product:
        assert "conv.dot.float" not in variants
    elif extra:
        assert "conv.dot" in variants and "conv.dot.float" not in variants, variants
    else:
        assert variants == ["conv.dot.float"], variants
