"""The video job against decoding and encoding alone, on the same file in the same run:
`python -m dmlvk_lab.bench_video [--size 1080x1920] [--frames 60] [--batch-size 1] [--out DIR]`.

A clip of smooth moving frames (lossless FFV1, 4:2:0) is made with PyAV; the quantized ESPCN x2
(dmlvk_lab.onnx_models) runs over it through `dmlvk run`'s path (video.pixel_session, run_video:
uint8 luma in and out, frames pipelined, libx264 where FFmpeg has it). Three figures, frames per
second: the job; the same file decoded, each frame scaled by FFmpeg's scaler to the job's output
size and encoded with the same encoder (the job without the model: its floor); and the model's
device work alone (GPU timestamps of one frame's recorded dispatches). The job is limited by
decoding and encoding where its figure is near the second."""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from . import onnx_models as models


def make_clip(path: str, frames: int, h: int, w: int) -> None:
    """Smooth moving frames (a camera-like signal the encoder does not find trivial), FFV1 4:2:0."""
    import av
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    with av.open(path, "w") as out:
        vs = out.add_stream("ffv1", rate=30)
        vs.width, vs.height, vs.pix_fmt = w, h, "yuv420p"
        for i in range(frames):
            planes = [127 + 100 * np.sin(xx / (17.0 + c) + i / 5) * np.cos(yy / (23.0 - c) - i / 7) for c in range(3)]
            rgb = np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)
            f = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
            f.pts = i
            for p in vs.encode(f):
                out.mux(p)
        for p in vs.encode():
            out.mux(p)


def decode_encode_alone(src: str, dst: str, width: int, height: int, codec: str, pix_fmt: str = "yuv420p") -> int:
    """The job without the model: src decoded, each frame scaled to width x height by FFmpeg's scaler,
    encoded to dst with the job's encoder. Returns the frames."""
    import av
    frames = 0
    with av.open(src) as source, av.open(dst, "w") as out:
        vin = source.streams.video[0]
        vs = out.add_stream(codec, rate=vin.average_rate)
        vs.width, vs.height, vs.pix_fmt, vs.time_base = width, height, pix_fmt, vin.time_base
        for frame in source.decode(vin):
            made = frame.reformat(width=width, height=height, format=pix_fmt)
            made.pts, made.time_base = frame.pts, frame.time_base
            for p in vs.encode(made):
                out.mux(p)
            frames += 1
        for p in vs.encode():
            out.mux(p)
    return frames


def measure(h: int, w: int, frames: int, batch_size: int = 1, device=None) -> dict:
    from dmlvk.onnx import video
    from dmlvk.runtime.commands import time as time_dispatches
    import av
    model = models.quantize(models.espcn(2), models.calibration_frames())
    session = video.pixel_session(model, device=device)
    codec = video._default_codec(av)
    with tempfile.TemporaryDirectory(prefix="dmlvk-video-") as tmp:
        src = os.path.join(tmp, "clip.mkv")
        make_clip(src, frames, h, w)
        video.run_video(session, src, os.path.join(tmp, "warm.mp4"), batch_size, progress=False)   # plans made
        job = video.run_video(session, src, os.path.join(tmp, "job.mp4"), batch_size, progress=False)
        t0 = time.perf_counter()
        alone = decode_encode_alone(src, os.path.join(tmp, "alone.mp4"), *job["size"], codec)
        alone_s = time.perf_counter() - t0
    name = session.get_inputs()[0].name
    x = np.zeros((batch_size, 1, h, w), np.dtype(video.NUMPY_TYPES[session.get_inputs()[0].type]))
    session.run(None, {name: x})
    _, dispatches, _ = session.device_work({name: x})
    device_s = float(np.median(time_dispatches(session.device, dispatches, 20, barriers=True)))
    return {"device": session.device.name, "input": [h, w], "output": list(job["size"][::-1]), "frames": frames,
            "batch_size": batch_size, "codec": codec, "formats": list(session.formats),
            "job_fps": job["frames"] / job["seconds"], "decode_encode_alone_fps": alone / alone_s,
            "device_work_fps": batch_size / device_s}


def markdown(r: dict) -> list:
    return [f"## The video job, {r['input'][1]}x{r['input'][0]} to {r['output'][1]}x{r['output'][0]}, {r['device']}", "",
            f"{r['frames']} frames, batch {r['batch_size']}, {r['codec']}, session formats {r['formats']}.", "",
            "| figure | frames/s |", "| --- | ---: |",
            f"| the job (`dmlvk run MODEL VIDEO -o OUT`'s path) | {r['job_fps']:.1f} |",
            f"| decoding, scaling and encoding alone (the job without the model) | {r['decode_encode_alone_fps']:.1f} |",
            f"| the model's device work alone | {r['device_work_fps']:.1f} |", ""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dmlvk_lab.bench_video", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1080x1920", help="the clip's HxW (default 1080x1920)")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--out", default=None, help="a folder for video-DEVICE.json and .md (default: print only)")
    a = ap.parse_args(argv)
    h, w = (int(v) for v in a.size.lower().split("x"))
    r = measure(h, w, a.frames, a.batch_size)
    text = "\n".join(markdown(r))
    print(text)
    if a.out:
        stem = Path(a.out) / f"video-{''.join(c if c.isalnum() else '-' for c in r['device'].lower()).strip('-')}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".json").write_text(json.dumps(r, indent=1))
        stem.with_suffix(".md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
