"""dmlvk run MODEL.onnx input.mp4 -o output.mp4: a video file through an image model (a super-resolution
network, say), frames decoded, run on the device (pipelined: session.run_stream), encoded, the
audio copied. PyAV (`pip install dmlvk[video]`: its wheels carry FFmpeg) reads and writes the files.

Frames as the model takes them: a one-channel model gets the luma (Y of YUV 4:2:0), and its output's
chroma is the input's, scaled to the output's size by FFmpeg's scaler (as super-resolution tools do);
a three-channel model gets RGB. Float inputs take pixels / 255, 8-bit ones the pixels themselves;
float outputs are clipped to [0, 1], times 255, rounded half to even. The command line's session
takes and gives the pixels themselves where the model allows (pixel_session: the same frames, a
quarter of the bytes). The output file is written
under a temporary name beside the output and renamed at the end: an interrupted or failed job leaves
nothing under the output's name."""
from __future__ import annotations

import importlib
import os
import sys
import time
from collections import deque
from fractions import Fraction
from typing import Optional

import numpy as np

from .graph import NUMPY_TYPES, UnsupportedModelError
from .pixels import from_pixels, to_pixels
from .session import InferenceSession


class VideoError(ValueError):
    """A video job that cannot run: the file, the model or the frame size, named."""


def _av():
    try:        # optional: only video jobs need it
        return importlib.import_module("av")
    except ImportError:
        raise VideoError("video files need PyAV: pip install av (or dmlvk[video])") from None


def image_model(session) -> tuple:
    """(input name, channels, input dtype, output name) of a model that maps an image to an image: one
    input and one output, 4-D (N, C, H, W), C 1 or 3 alike; else a VideoError saying what it is."""
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if len(inputs) != 1 or len(outputs) != 1:
        raise VideoError(f"a video job needs a model of one image input and one image output; this one has "
                         f"inputs {[i.name for i in inputs]} and outputs {[o.name for o in outputs]}")
    x, y = inputs[0], outputs[0]
    channels = x.shape[1] if len(x.shape) == 4 else None
    if channels not in (1, 3):
        raise VideoError(f"the model's input {x.name!r} is not an image of 1 or 3 channels (N, C, H, W): its "
                         f"shape is {x.shape}")
    dtype = NUMPY_TYPES.get(x.type)
    if dtype not in (np.float32, np.uint8):
        raise VideoError(f"the model's input {x.name!r} is {x.type}: a video job takes float32 or uint8 images")
    return x.name, channels, np.dtype(dtype), y.name


def _fits(shape: list, h: int, w: int) -> bool:
    return all(not isinstance(d, int) or d <= 0 or d == v for d, v in zip(shape[2:4], (h, w)))


def pixel_session(model, device=None):
    """An InferenceSession taking and giving uint8 pixels (inputs="pixels", outputs="pixels": a quarter
    of float32's bytes each way, the same frames) where the model has them, else its float one."""
    try:
        return InferenceSession(model, device=device, inputs="pixels", outputs="pixels")
    except ValueError:
        return InferenceSession(model, device=device)


def _planned_or_float(session, name: str, shape: tuple, dtype):
    """The session, where it plans frames of this shape or runs in float; else (a session in 8 bits,
    which needs the whole model on the device, and a node refused at this shape only) the model's
    float session, which runs that node on the host: the same frames."""
    if session.formats == ("float", "float"):
        return session
    try:
        session.plan({name: np.zeros(shape, dtype)})
        return session
    except UnsupportedModelError:
        return InferenceSession(session.model_graph, device=session.device, host_quantization=session.host_quantization)


class _Pixels:
    """Frames to model inputs and model outputs back to frames, for one channel count."""

    def __init__(self, av, channels: int, dtype: np.dtype):
        self.av, self.channels, self.dtype = av, channels, dtype

    def input(self, frame) -> np.ndarray:
        if self.channels == 1:
            yuv = frame.to_ndarray(format="yuv420p")
            px = yuv[:frame.height][None, None]
        else:
            px = frame.to_ndarray(format="rgb24").transpose(2, 0, 1)[None]
        return from_pixels(px, self.dtype)

    def output(self, y: np.ndarray, source):
        """The output frame of one output image (C, H, W) and its source frame."""
        px = to_pixels(y)
        h, w = px.shape[1:]
        if self.channels == 1:
            chroma = source.reformat(width=w, height=h, format="yuv420p").to_ndarray()[h:]
            frame = self.av.VideoFrame.from_ndarray(np.concatenate([px[0], chroma]), format="yuv420p")
        else:
            frame = self.av.VideoFrame.from_ndarray(np.ascontiguousarray(px.transpose(1, 2, 0)), format="rgb24")
        frame.pts, frame.time_base = source.pts, source.time_base
        return frame


def _progress(total: Optional[int]):
    """A tqdm bar (frames, frames/s, time left) on stderr, or a plain counter without tqdm."""
    try:
        tqdm = importlib.import_module("tqdm").tqdm
        return tqdm(total=total or None, unit="frame", file=sys.stderr, dynamic_ncols=True)
    except ImportError:
        class Plain:
            n = 0

            def update(self, k):
                self.n += k
                print(f"\r{self.n} frames", end="", file=sys.stderr, flush=True)

            def close(self):
                print(file=sys.stderr)
        return Plain()


def run_video(session, src: str, dst: str, batch_size: int = 1, codec: Optional[str] = None,
              pix_fmt: Optional[str] = None, progress: bool = True) -> dict:
    """Upscale (or otherwise map) the video file src through the session's image model into dst: the
    first video stream's frames, batch_size of them a run, pipelined; the encoder codec (default:
    libx264 where FFmpeg has it, else mpeg4) at pix_fmt (default yuv420p); every audio stream copied.
    Returns {"frames", "seconds", "size"}. A VideoError names an unreadable file, a model that is no
    image model, or a frame size the model cannot take."""
    av = _av()
    name, channels, dtype, out_name = image_model(session)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    try:
        source = av.open(src)
    except (av.error.FFmpegError, OSError) as e:
        raise VideoError(f"cannot read {src} as a video file: {e}") from None
    with source:
        if not source.streams.video:
            raise VideoError(f"{src} has no video stream")
        vin = source.streams.video[0]
        w, h = vin.codec_context.width, vin.codec_context.height
        shape = session.get_inputs()[0].shape
        if not _fits(shape, h, w):
            raise VideoError(f"{src}'s frames are {w}x{h}; the model's input {name!r} takes {shape[3]}x{shape[2]}")
        if channels == 1 and (w % 2 or h % 2):
            raise VideoError(f"{src}'s frames are {w}x{h}: a one-channel model's luma job needs even sizes (4:2:0)")
        session = _planned_or_float(session, name, (batch_size, channels, h, w), dtype)
        name, channels, dtype, out_name = image_model(session)
        folder, base = os.path.split(os.path.abspath(dst))
        stem, ext = os.path.splitext(base)
        partial = os.path.join(folder, f".{stem}.dmlvk-partial{ext}")
        pixels = _Pixels(av, channels, dtype)
        started = time.perf_counter()
        frames = 0
        try:
            with av.open(partial, mode="w") as out:
                audio = {s.index: out.add_stream_from_template(s) for s in source.streams.audio}
                video = None
                pending: deque = deque()            # source frames whose outputs are due, in order
                held: list = []                     # audio packets read before the video stream exists
                bar = _progress(vin.frames) if progress else None

                def batches():
                    batch = []
                    for packet in source.demux(vin, *source.streams.audio):
                        if packet.stream.index in audio:
                            if packet.dts is not None:
                                packet.stream = audio[packet.stream.index]
                                # the container's header is written with its first packet: every stream
                                # (the video's, added once the first output's size is known) before it
                                if video is None:
                                    held.append(packet)
                                else:
                                    out.mux(packet)
                            continue
                        for frame in packet.decode():
                            batch.append(frame)
                            if len(batch) == batch_size:
                                yield batch
                                batch = []
                    if batch:
                        yield batch

                def feeds():
                    for batch in batches():
                        pending.append(batch)
                        yield {name: np.concatenate([pixels.input(f) for f in batch])}

                try:
                    for (y,) in session.run_stream([out_name], feeds()):
                        batch = pending.popleft()
                        if video is None:
                            if y.ndim != 4 or y.shape[1] != channels:
                                raise VideoError(f"the model's output is {y.shape}, not {channels}-channel images")
                            video = out.add_stream(codec or _default_codec(av), rate=vin.average_rate or Fraction(30))
                            video.width, video.height = y.shape[3], y.shape[2]
                            video.pix_fmt = pix_fmt or "yuv420p"
                            video.time_base = vin.time_base
                            for packet in held:
                                out.mux(packet)
                            held.clear()
                        for k, frame in enumerate(batch):
                            made = pixels.output(y[k], frame)
                            for packet in video.encode(made.reformat(format=video.pix_fmt)):
                                out.mux(packet)
                        frames += len(batch)
                        if bar is not None:
                            bar.update(len(batch))
                except UnsupportedModelError as e:
                    raise VideoError(f"the model cannot take {src}'s {w}x{h} frames: {e}") from None
                finally:
                    if bar is not None:
                        bar.close()
                if video is None:
                    raise VideoError(f"{src} has no frames to decode")
                for packet in video.encode():
                    out.mux(packet)
            os.replace(partial, dst)
        except BaseException:
            if os.path.exists(partial):
                os.remove(partial)
            raise
    seconds = time.perf_counter() - started
    return {"frames": frames, "seconds": seconds, "size": (video.width, video.height)}


def _default_codec(av) -> str:
    return "libx264" if "libx264" in av.codecs_available else "mpeg4"
