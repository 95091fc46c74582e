"""dmlvk run: an ONNX model over .npy files, a folder of frames (images or .npy), outputs written as
.npy files or images, or a video file into a video file (video.py)."""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Optional, Sequence

import numpy as np

from ..runtime.device import Device
from . import video
from .graph import NUMPY_TYPES
from .session import InferenceSession

try:
    from PIL import Image
except ImportError:          # optional: only image folders need it
    Image = None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """dmlvk run MODEL.onnx --input NAME=FILE.npy ...: run a model, write its outputs as .npy."""
    ap = argparse.ArgumentParser(prog="dmlvk run", description="Run an ONNX model with dmlvk's operators "
                                 "and write each output as OUT_DIR/NAME.npy.")
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("video", nargs="?", help="a video file to run the model over, frame by frame (an image "
                    "model: one channel takes the luma, three RGB); with -o OUTPUT, the audio copied (PyAV)")
    ap.add_argument("-o", "--output", help="the video file written (with VIDEO)")
    ap.add_argument("--codec", default=None, help="the output video's encoder (default: libx264, else mpeg4)")
    ap.add_argument("--pix-fmt", default=None, help="the output video's pixel format (default: yuv420p)")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                    help="an input (repeat per input); for a one-input model NAME=FOLDER runs each .npy or "
                         "image file in the folder, frames pipelined, and writes OUT_DIR/FILE.npy (an image "
                         "for an image input and a 1- or 3-channel output; FILE-OUTPUT for several outputs)")
    ap.add_argument("--out-dir", default=".", help="where the outputs go (default: the current folder)")
    ap.add_argument("--batch-size", type=int, default=1, help="frames per run along axis 0 (default 1)")
    ap.add_argument("--device", type=int, default=None, help="device index (default: $DMLVK_DEVICE or 0)")
    a = ap.parse_args(argv)
    if a.batch_size < 1:
        ap.error("--batch-size must be at least 1")
    if a.video is not None or a.output is not None:
        if a.video is None or a.output is None or a.input:
            ap.error("a video job takes MODEL VIDEO -o OUTPUT (and no --input)")
        return _run_video(a)
    feeds, folder = {}, None
    for item in a.input:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            ap.error(f"--input takes NAME=FILE.npy, got {item!r}")
        if os.path.isdir(path):
            folder = (name, path)
        else:
            feeds[name] = np.load(path, allow_pickle=False)
    if folder and len(a.input) != 1:
        ap.error("a folder of inputs (NAME=FOLDER) is for one-input models")
    session = InferenceSession(a.model, device=Device(a.device) if a.device is not None else None)
    if folder:
        return _run_folder(session, *folder, a.out_dir)
    missing = [i.name for i in session.get_inputs() if i.name not in feeds]
    if missing:
        ap.error(f"the model's inputs {missing} need --input NAME=FILE.npy")
    frames = {len(v) if v.ndim else 1 for v in feeds.values()}
    if len(frames) != 1 or any(v.ndim == 0 for v in feeds.values()):
        ap.error("every input needs the same number of frames along axis 0")
    total = frames.pop()
    batches = -(-total // a.batch_size)
    results = {o.name: [] for o in session.get_outputs()}
    for b in range(batches):
        part = {k: v[b * a.batch_size:(b + 1) * a.batch_size] for k, v in feeds.items()}
        t0 = time.perf_counter()
        outs = session.run(None, part)
        ms = (time.perf_counter() - t0) * 1e3
        for o, y in zip(session.get_outputs(), outs):
            results[o.name].append(y)
        print(f"batch {b + 1}/{batches}: {len(next(iter(part.values())))} frames, {ms:.1f} ms", file=sys.stderr)
    os.makedirs(a.out_dir, exist_ok=True)
    for name, parts in results.items():
        path = os.path.join(a.out_dir, f"{name.replace('/', '_')}.npy")
        np.save(path, np.concatenate(parts))
        print(path)
    return 0


def _run_video(a) -> int:
    """dmlvk run MODEL VIDEO -o OUTPUT (video.run_video); a clear message and status 2 for a file, a
    model or a frame size it cannot take."""
    if not os.path.isfile(a.video):
        print(f"dmlvk run: no such video file: {a.video}", file=sys.stderr)
        return 2
    try:
        session = video.pixel_session(a.model, device=Device(a.device) if a.device is not None else None)
        done = video.run_video(session, a.video, a.output, a.batch_size, a.codec, a.pix_fmt)
    except video.VideoError as e:
        print(f"dmlvk run: {e}", file=sys.stderr)
        return 2
    print(f"{a.output}: {done['frames']} frames of {done['size'][0]}x{done['size'][1]} in {done['seconds']:.1f} s "
          f"({done['frames'] / max(done['seconds'], 1e-9):.1f} frames/s)", file=sys.stderr)
    return 0


_IMAGES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")


def _run_folder(session: InferenceSession, name: str, folder: str, out_dir: str) -> int:
    """dmlvk run MODEL --input NAME=FOLDER: each .npy or image file of the folder (sorted by name) as
    the model's one input, one output file per input, frames pipelined (run_stream), progress and
    frames per second on stderr. Images (Pillow) become (1, C, H, W) arrays of the input's type,
    C = 1 (grey) or 3 (RGB) as the model's input says, float inputs scaled to [0, 1]; an output of
    1 or 3 channels for an image input is written as an image of the same format, others as .npy."""
    inputs = session.get_inputs()
    if [i.name for i in inputs] != [name]:
        print(f"dmlvk run: the model's inputs are {[i.name for i in inputs]}, not [{name!r}]", file=sys.stderr)
        return 2
    files = sorted(f for f in os.listdir(folder) if f.lower().endswith((".npy",) + _IMAGES))
    if not files:
        print(f"dmlvk run: no .npy or image files in {folder}", file=sys.stderr)
        return 2
    image = any(f.lower().endswith(_IMAGES) for f in files)
    if image and Image is None:
        print("dmlvk run: image inputs need Pillow: pip install pillow", file=sys.stderr)
        return 2
    shape, dtype = inputs[0].shape, NUMPY_TYPES.get(inputs[0].type, np.float32)
    channels = shape[1] if len(shape) == 4 and isinstance(shape[1], int) else 1

    def load(f: str) -> np.ndarray:
        path = os.path.join(folder, f)
        if not f.lower().endswith(_IMAGES):
            return np.load(path, allow_pickle=False)
        with Image.open(path) as im:
            a = np.asarray(im.convert("L" if channels == 1 else "RGB"))
        a = a[None, None] if a.ndim == 2 else a.transpose(2, 0, 1)[None]
        return video.from_pixels(a, dtype)

    def save(f: str, o: str, y: np.ndarray) -> None:
        stem, ext = os.path.splitext(f)
        stem = stem if len(outputs) == 1 else f"{stem}-{o.replace('/', '_')}"
        if ext.lower() in _IMAGES and y.ndim == 4 and y.shape[0] == 1 and y.shape[1] in (1, 3):
            px = video.to_pixels(y[0].transpose(1, 2, 0))
            Image.fromarray(px[..., 0] if px.shape[2] == 1 else px).save(os.path.join(out_dir, stem + ext))
        else:
            np.save(os.path.join(out_dir, stem + ".npy"), y)

    os.makedirs(out_dir, exist_ok=True)
    outputs = [o.name for o in session.get_outputs()]
    sizes, start = [], time.perf_counter()

    def feeds():
        for f in files:
            x = load(f)
            sizes.append(len(x) if x.ndim else 1)
            yield {name: x}

    for i, (f, ys) in enumerate(zip(files, session.run_stream(None, feeds()))):
        for o, y in zip(outputs, ys):
            save(f, o, y)
        rate = sum(sizes[:i + 1]) / (time.perf_counter() - start)
        print(f"\r[{i + 1}/{len(files)}] {f}: {rate:.1f} frames/s", end="", file=sys.stderr, flush=True)
    frames = sum(sizes)
    print(f"\n{len(files)} files, {frames} frames, {frames / (time.perf_counter() - start):.1f} frames/s",
          file=sys.stderr)
    return 0