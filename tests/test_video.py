"""The video job (dmlvk/onnx/video.py, `dmlvk run MODEL VIDEO -o OUTPUT`): short videos made here with
PyAV, upscaled through the command line with a lossless encoder (FFV1), every output frame equal to
the session's output for the same decoded frame (the luma of a one-channel model, its chroma FFmpeg's
scaling of the input's; RGB for a three-channel model), the audio copied; the bad inputs refused with
a clear message and no file written under the output's name."""
import os

import numpy as np
import onnx
import pytest

av = pytest.importorskip("av")

from dmlvk.onnx import InferenceSession, cli, video
from dmlvk_lab import onnx_models as models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def make_video(path, frames=5, w=32, h=24, audio=True, seed=0):
    """A video of random frames (FFV1, lossless, 4:2:0) and, with audio, a mono 16-bit PCM track."""
    rng = np.random.default_rng(seed)
    with av.open(str(path), "w") as out:
        vs = out.add_stream("ffv1", rate=10)
        vs.width, vs.height, vs.pix_fmt = w, h, "yuv420p"
        if audio:
            sound = out.add_stream("pcm_s16le", rate=8000)
            sound.layout = "mono"
        for i in range(frames):
            f = av.VideoFrame.from_ndarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), format="rgb24")
            f = f.reformat(format="yuv420p")
            f.pts = i
            for p in vs.encode(f):
                out.mux(p)
            if audio:
                s = av.AudioFrame.from_ndarray(rng.integers(-3000, 3000, (1, 800)).astype(np.int16), format="s16",
                                               layout="mono")
                s.sample_rate, s.pts = 8000, i * 800
                for p in sound.encode(s):
                    out.mux(p)
        for p in vs.encode():
            out.mux(p)
        if audio:
            for p in sound.encode():
                out.mux(p)


def decoded(path, fmt):
    with av.open(str(path)) as c:
        return [f.to_ndarray(format=fmt) for f in c.decode(video=0)]


def rgb_network(seed=0):
    """Conv 3x3 3 -> 12, DepthToSpace 2 (CRD): a three-channel x2 upscaler in float32."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    w = {"w": (rng.standard_normal((12, 3, 3, 3)) * 0.3).astype(np.float32), "b": np.full(12, 0.1, np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("DepthToSpace", ["c"], ["y"], blocksize=2, mode="CRD")]
    g = helper.make_graph(nodes, "rgb", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3, "H", "W"])],
                          [numpy_helper.from_array(v, k) for k, v in w.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", models.OPSET)], ir_version=models.IR_VERSION)


@pytest.fixture(scope="module")
def luma_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "espcn.onnx"
    onnx.save(models.quantize(models.espcn(2, 8, 4), models.calibration_frames(), quant_format="QDQ"), str(path))
    return path


@pytest.mark.parametrize("batch", [1, 2])
def test_a_luma_model_upscales_a_video_through_the_command_line(device, tmp_path, luma_model, batch):
    src, dst = tmp_path / "in.mkv", tmp_path / "out.mkv"
    make_video(src)
    assert cli.main([str(luma_model), str(src), "-o", str(dst), "--codec", "ffv1", "--batch-size", str(batch),
                     "--device", str(device.index)]) == 0
    session = InferenceSession(str(luma_model), device=device)
    ins, outs = decoded(src, "yuv420p"), decoded(dst, "yuv420p")
    assert len(outs) == len(ins) == 5
    with av.open(str(src)) as c:
        sources = list(c.decode(video=0))
    for frame, yuv, got in zip(sources, ins, outs):
        y, = session.run(None, {"x": (yuv[:24][None, None].astype(np.float32) / np.float32(255))})
        want = np.rint(np.clip(y[0, 0], 0, 1) * np.float32(255)).astype(np.uint8)
        assert got.shape == (72, 64)
        assert np.array_equal(got[:48], want)                                     # luma: the model's
        chroma = frame.reformat(width=64, height=48, format="yuv420p").to_ndarray()[48:]
        assert np.array_equal(got[48:], chroma)                                   # chroma: FFmpeg's scaling
    with av.open(str(src)) as a, av.open(str(dst)) as b:
        assert [s.type for s in b.streams] == ["audio", "video"]
        sound = lambda c: np.concatenate([f.to_ndarray() for f in c.decode(audio=0)], axis=1)
        assert np.array_equal(sound(a), sound(b))                                 # the audio copied


def test_an_rgb_model_takes_and_gives_rgb(device, tmp_path):
    model = tmp_path / "rgb.onnx"
    onnx.save(models.quantize(rgb_network(), models.calibration_frames(channels=3), quant_format="QDQ"), str(model))
    src, dst = tmp_path / "in.mkv", tmp_path / "out.mkv"
    make_video(src, frames=3, audio=False)
    assert cli.main([str(model), str(src), "-o", str(dst), "--codec", "ffv1", "--pix-fmt", "bgr0",
                     "--device", str(device.index)]) == 0
    session = InferenceSession(str(model), device=device)
    for rgb, got in zip(decoded(src, "rgb24"), decoded(dst, "rgb24")):
        y, = session.run(None, {"x": rgb.transpose(2, 0, 1)[None].astype(np.float32) / np.float32(255)})
        assert np.array_equal(got, video.to_pixels(y[0]).transpose(1, 2, 0))


def test_bad_inputs_are_refused_by_name(device, tmp_path, luma_model, capsys):
    dst = tmp_path / "out.mkv"
    bad = tmp_path / "not-a-video.mp4"
    bad.write_text("hello")
    run = lambda model, src: cli.main([str(model), str(src), "-o", str(dst), "--device", str(device.index)])
    assert run(luma_model, bad) == 2 and "cannot read" in capsys.readouterr().err
    assert run(luma_model, tmp_path / "missing.mp4") == 2 and "no such video file" in capsys.readouterr().err
    fixed = models.quantize(models.espcn(2, 8, 4), models.calibration_frames(), quant_format="QDQ")
    for d, v in zip(fixed.graph.input[0].type.tensor_type.shape.dim, (1, 1, 24, 32)):
        d.ClearField("dim_param")
        d.dim_value = v
    onnx.save(fixed, str(tmp_path / "fixed.onnx"))
    src = tmp_path / "big.mkv"
    make_video(src, frames=2, w=40, h=30, audio=False)
    assert run(tmp_path / "fixed.onnx", src) == 2 and "frames are 40x30; the model's input 'x' takes 32x24" in \
        capsys.readouterr().err
    head = models.quantize(models.split_network("head"), models.calibration_frames(), quant_format="QDQ")
    onnx.save(head, str(tmp_path / "head.onnx"))
    make_video(src, frames=2, audio=False)
    assert run(tmp_path / "head.onnx", src) == 2 and "not 1-channel images" in capsys.readouterr().err
    flat = models.quantize(models.espcn(2, 8, 4), models.calibration_frames(), quant_format="QDQ")
    flat.graph.input[0].type.tensor_type.shape.ClearField("dim")
    for _ in range(2):
        flat.graph.input[0].type.tensor_type.shape.dim.add().dim_param = "d"
    onnx.save(flat, str(tmp_path / "flat.onnx"))
    assert run(tmp_path / "flat.onnx", src) == 2 and "is not an image" in capsys.readouterr().err
    assert not dst.exists() and not [f for f in os.listdir(tmp_path) if "partial" in f]


def test_an_interrupted_job_leaves_nothing_under_the_outputs_name(device, tmp_path, luma_model, monkeypatch):
    src, dst = tmp_path / "in.mkv", tmp_path / "out.mkv"
    make_video(src)
    dst.write_bytes(b"an earlier file")
    calls = []
    real = video._Pixels.output

    def interrupted(self, y, frame):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, y, frame)
    monkeypatch.setattr(video._Pixels, "output", interrupted)
    with pytest.raises(KeyboardInterrupt):
        video.run_video(InferenceSession(str(luma_model), device=device), str(src), str(dst), codec="ffv1",
                        progress=False)
    assert dst.read_bytes() == b"an earlier file"
    assert sorted(os.listdir(tmp_path)) == ["in.mkv", "out.mkv"]


def test_the_video_benchmark_gives_its_three_figures(device):
    """dmlvk_lab/bench_video.py on a tiny clip: the job (pixels in and out), decoding and encoding
    alone on the same file, and the device work, each a positive frame rate."""
    from dmlvk_lab import bench_video
    r = bench_video.measure(24, 32, 4, device=device)
    assert r["output"] == [48, 64] and r["formats"] == ["pixels", "pixels"]
    assert all(r[k] > 0 for k in ("job_fps", "decode_encode_alone_fps", "device_work_fps"))
    assert "| decoding, scaling and encoding alone (the job without the model) |" in "\n".join(bench_video.markdown(r))


def test_a_pixel_session_refused_at_the_frame_size_runs_the_job_in_float(device, tmp_path):
    """A model whose nearest Resize is refused on the device only once the frame size is known (its
    picks repeat no element a whole number of times): the pixel session cannot split it, so the job
    runs the model's float session (the Resize on the host), every output frame as that session's."""
    from onnx import TensorProto, helper, numpy_helper
    w = np.full((1, 1, 3, 3), 1 / 9, np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["c", "", "scales"], ["y"], mode="nearest", name="rs",
                              coordinate_transformation_mode="asymmetric", nearest_mode="round_prefer_ceil")]
    g = helper.make_graph(nodes, "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "H", "W"])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    model = models.quantize(helper.make_model(g, opset_imports=[helper.make_opsetid("", models.OPSET)],
                                              ir_version=models.IR_VERSION), models.calibration_frames(), quant_format="QDQ")
    src, dst = tmp_path / "in.mkv", tmp_path / "out.mkv"
    make_video(src, frames=2, audio=False)
    session = video.pixel_session(model, device=device)
    assert session.formats == ("pixels", "pixels")          # refused only once the frame size is known
    with pytest.warns(UserWarning, match="dmlvk runs .* on the host"):
        video.run_video(session, str(src), str(dst), codec="ffv1", progress=False)
    floats = InferenceSession(model, device=device)
    with pytest.warns(UserWarning, match="dmlvk runs .* on the host"):     # split at its first frame
        for yuv, got in zip(decoded(src, "yuv420p"), decoded(dst, "yuv420p")):
            y, = floats.run(None, {"x": video.from_pixels(yuv[:24][None, None], np.float32)})
            assert np.array_equal(got[:48], video.to_pixels(y[0, 0]))
    assert floats.parts is not None
    places = floats.placement({"x": np.zeros((1, 1, 24, 32), np.float32)})
    assert places["rs"] == "host" and "device" in places.values(), places        # the refused node's group alone
