"""Frames per second of a quantized ESPCN-style super-resolution model (dmlvk_lab.onnx_models:
Conv 5x5 1->64, 3x3 64->32, 3x3 32->4, DepthToSpace 2, quantized by onnxruntime's
quantize_static) run by dmlvk.onnx, next to onnxruntime on the CPU and the float16 PyTorch
network on CUDA, in the same run. `python -m dmlvk_lab bench --only models` writes
benchmarks/models-DEVICE.json and .md.

Five dmlvk figures per case: the device work alone (GPU timestamps of the recorded stretch, its
barriers counted: float frames in device memory quantized there, the float output left there, as
the PyTorch figure has its input and output on the GPU), the stretch as one submission with its
float32 upload and download (wall clock), session.run end to end (float frames in and out as
numpy arrays), session.run with QuantizeLinear and DequantizeLinear on the host
(host_quantization=True, as before they ran on the device), and session.run with a DeviceArray
in and out (IO binding: no transfer, the call's own cost on top of the device work). Every output
element of the batch-1 cases is compared with onnxruntime's. The batch-1 frames are also timed
dispatch by dispatch against the device's floors (dmlvk_lab/bench_layers.py).

Against the host link (host_link, same run): each frame's bound, max(input bytes / host-to-device,
output bytes / device-to-host) at the rates of dmlvk's staged transfers, beside the pipelined
figure; and the same model with uint8 pixel frames in and out (InferenceSession(inputs="pixels",
outputs="pixels")): its device work, end to end, pipelined, against min(device work, its bound),
and run with dmlvk.host_empty arrays in and out (read and written by the device in place).

The zoo's larger models (measure_zoo: QuickSRNet-Large x2 and SRVGGNetCompact x4, QDQ): device work,
end to end and pixels pipelined at the first two sizes, batch 1 and 8; batch 1 at the first size
dispatch by dispatch against the floors, and compared with onnxruntime's CPU on every element.

The PyTorch peers run the same network in float16, channels_last, each in its own process: eager
(cuDNN) and torch.compile(mode="max-autotune") (Triton kernels and CUDA graphs; compiled once per
input shape in each of TORCH_COMPILES processes, each with empty compile caches of its own, the
median compile's figure compared, every compile's reported; the compile time reported and
excluded). They are timed as dmlvk's device column is: many calls back to back between two CUDA
events (the host's launches hidden behind the GPU's work), the median of several such rounds; the
figure of one call at a time on an idle GPU is kept beside it (per_call_s).

A split model (measure_split): the "middle" network of onnx_models.split_network (Conv 3x3 1->32,
Relu, Erf, Conv 3x3 32->1, quantized), which dmlvk runs in three parts (device, ONNX Runtime's CPU,
device): end to end, each part's share, the bytes crossing, and ONNX Runtime's CPU alone."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from dmlvk import arrays
from . import bench_layers
from . import onnx_models as models
from .bench_peers import _median_wall
from dmlvk.runtime.commands import time as time_dispatches
from dmlvk.onnx import InferenceSession
from dmlvk.onnx.pixels import from_pixels, to_pixels

SHAPES = [(540, 960), (1080, 1920), (2160, 3840)]
STREAM_FRAMES = 48           # inputs run_stream is timed over (per figure: their mean; a stream fills and drains once)
BATCHES = [1, 8]
BATCH_1_ONLY = {(2160, 3840)}     # 8 such frames hold 1 GiB of 64-channel activations
# torch.compile(mode="max-autotune") compiled this many times, each in its own process: its autotuned
# choices vary between compiles (540x960 batch 1 ran 2,223 to 3,777 frames/s on the same H200), and
# the comparison takes the median
TORCH_COMPILES = 3
SPLIT_CHANNELS = 32


def device_seconds(timer, dispatches) -> float:
    """A frame's device work: its dispatches back to back with their barriers, GPU timestamps (median)."""
    return timer(lambda k: time_dispatches(timer.device, dispatches, k, barriers=True))["median_s"]


def measure_models(timer, shapes=SHAPES, batches=BATCHES, ort_batches=(1,)) -> dict:
    import onnxruntime as ort
    device = timer.device
    model = models.quantize(models.espcn(2), models.calibration_frames())
    session = InferenceSession(model, device=device)
    host_qdq = InferenceSession(model, device=device, host_quantization=True)
    ort_session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    pixels = InferenceSession(model, device=device, inputs="pixels", outputs="pixels")
    rows, frames = [], []
    bandwidth, peak = bench_layers.copy_bandwidth(timer), bench_layers.int8_peak(timer)
    link = host_link(device)
    for h, w in shapes:
        for n in ([1] if (h, w) in BATCH_1_ONLY else batches):
            x = np.concatenate(models.calibration_frames(n, h, w, seed=3))
            y = session.run(None, {"x": x})[0]
            row = {"input": [n, 1, h, w], "output": list(y.shape), "frames": n}
            prog, dispatches, steps = session.device_work({"x": x})
            row["device_s"] = device_seconds(timer, dispatches)
            if n == 1:
                frames.append({"input": [n, 1, h, w],
                               "rows": bench_layers.measure_layers(timer, dispatches, bandwidth, peak)})
            row["stretch_s"] = _median_wall(prog.run, 10, warm=1)
            row["end_to_end_s"] = _median_wall(lambda: session.run(None, {"x": x}), 5, warm=1)
            stream = [{"x": x}] * STREAM_FRAMES          # one call's frames, several in flight
            row["pipelined_s"] = _median_wall(lambda: _consume(session.run_stream(None, stream)), 3, warm=1) / STREAM_FRAMES
            row["end_to_end_host_qdq_s"] = _median_wall(lambda: host_qdq.run(None, {"x": x}), 3, warm=1)
            xd, yd = arrays.asarray(x, device=device), arrays.empty(y.shape, y.dtype, device=device)
            row["device_arrays_s"] = _median_wall(lambda: session.run(None, {"x": xd}, outputs={"y": yd}), 10, warm=1)
            row["device_qdq"] = steps == ["device"]
            row["link_bound_s"] = link_bound(link, x.nbytes, y.nbytes)
            px = to_pixels(x)
            want_px = to_pixels(session.run(None, {"x": from_pixels(px, np.float32)})[0])
            row["pixels_differing"] = int(np.count_nonzero(pixels.run(None, {"x": px})[0] != want_px))
            _, px_dispatches, _ = pixels.device_work({"x": px})
            row["pixels_device_s"] = device_seconds(timer, px_dispatches)
            row["pixels_link_bound_s"] = link_bound(link, px.nbytes, y.size)
            row["pixels_end_to_end_s"] = _median_wall(lambda: pixels.run(None, {"x": px}), 5, warm=1)
            hx, hy = arrays.host_empty(px.shape, np.uint8, device), arrays.host_empty(y.shape, np.uint8, device)
            hx.host[...] = px
            row["pixels_host_arrays_s"] = _median_wall(lambda: pixels.run(None, {"x": hx}, outputs={"y": hy}), 5, warm=1)
            row["pixels_differing"] += int(np.count_nonzero(hy.host != want_px))
            px_stream = [{"x": px}] * STREAM_FRAMES
            row["pixels_pipelined_s"] = _median_wall(lambda: _consume(pixels.run_stream(None, px_stream)), 3,
                                                     warm=1) / STREAM_FRAMES
            if n in ort_batches:
                want = ort_session.run(None, {"x": x})[0]
                row["elements_compared"] = int(want.size)
                row["elements_differing"] = int(np.count_nonzero(want != y))
                row["onnxruntime_cpu_s"] = _median_wall(lambda: ort_session.run(None, {"x": x}), 3, warm=1)
            rows.append(row)
    return {"model_bytes": {"float": models.espcn(2).SerializeToString(), "quantized": model.SerializeToString()},
            "model": "ESPCN x2 (Conv 5x5 1->64, 3x3 64->32, 3x3 32->4, DepthToSpace CRD), quantize_static "
                     "QOperator per-channel, u8 activations, 7-bit s8 weights",
            "nodes": session.nodes, "pixel_nodes": pixels.nodes, "rows": rows, "host_link": link,
            "layers": {"copy_bandwidth": bandwidth, "int8_peak_ops": peak,
                       "accumulator_lanes": bench_layers.accumulator_lanes(device), "frames": frames}}


# the int8 super-resolution zoo's larger architectures at their papers' sizes, QDQ as
# quantize_static writes them
ZOO = {"QuickSRNet-Large x2": lambda: models.quicksrnet(2, 64, 11),
       "SRVGGNetCompact x4 (PRelu)": lambda: models.srvgg(4, 64, 16)}
ZOO_COMPARED = 1 << 20       # input pixels up to which a batch-1 row is compared with onnxruntime's CPU


def measure_zoo(timer, shapes, batches, layers: dict) -> list:
    """Rows of the zoo's models (ZOO): device work (GPU timestamps, as ESPCN's), end to end with float
    frames and pipelined with uint8 pixel frames; batch 1 at the first shape also dispatch by
    dispatch against the floors (appended to layers["frames"]), and compared with onnxruntime's CPU
    on every element where the frame is small enough for the CPU."""
    import onnxruntime as ort
    device = timer.device
    rows = []
    for name, make in ZOO.items():
        model = models.quantize(make(), models.calibration_frames(), quant_format="QDQ")
        session = InferenceSession(model, device=device, fallback=False)
        pixels = InferenceSession(model, device=device, fallback=False, inputs="pixels", outputs="pixels")
        ort_session = None
        for h, w in shapes:
            for n in ([1] if (h, w) in BATCH_1_ONLY else batches):
                x = np.concatenate(models.calibration_frames(n, h, w, seed=3))
                y = session.run(None, {"x": x})[0]
                row = {"model": name, "input": [n, 1, h, w], "output": list(y.shape), "frames": n, "nodes": session.nodes}
                _, dispatches, _ = session.device_work({"x": x})
                row["device_s"] = device_seconds(timer, dispatches)
                if n == 1 and (h, w) == tuple(shapes[0]) and layers is not None:
                    layers["frames"].append({"model": name, "input": [n, 1, h, w], "rows": bench_layers.measure_layers(
                        timer, dispatches, layers["copy_bandwidth"], layers["int8_peak_ops"])})
                row["end_to_end_s"] = _median_wall(lambda: session.run(None, {"x": x}), 3, warm=1)
                px = to_pixels(x)
                stream = [{"x": px}] * STREAM_FRAMES
                row["pixels_pipelined_s"] = _median_wall(lambda: _consume(pixels.run_stream(None, stream)), 3,
                                                         warm=1) / STREAM_FRAMES
                if n == 1 and h * w <= ZOO_COMPARED:
                    ort_session = ort_session or ort.InferenceSession(model.SerializeToString(),
                                                                      providers=["CPUExecutionProvider"])
                    want = ort_session.run(None, {"x": x})[0]
                    row["elements_compared"] = int(want.size)
                    row["elements_differing"] = int(np.count_nonzero(want != y))
                rows.append(row)
    return rows


def zoo_markdown(rows: list) -> list:
    fps = lambda r, k: f"{r['frames'] / r[k]:.1f}" if r.get(k) else ""
    out = ["## The zoo's larger models, frames per second", "",
           "quantize_static QDQ (u8 activations, s8 per-channel weights), run whole on the device. Device: GPU "
           "timestamps of the frame's dispatches (float frames in device memory, quantized there); end to end: "
           "session.run with float frames in and out; pixels pipelined: run_stream of uint8 pixel frames "
           "(inputs=\"pixels\", outputs=\"pixels\"). PyTorch peers for these models are not measured yet.", "",
           "| model | input | batch | dmlvk device | end to end | pixels pipelined | outputs equal to onnxruntime's |",
           "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        eq = (f"{r['elements_compared'] - r['elements_differing']:,} of {r['elements_compared']:,}"
              if "elements_compared" in r else "")
        out.append(f"| {r['model']} | {r['input'][2]}x{r['input'][3]} | {r['frames']} | {fps(r, 'device_s')} | "
                   f"{fps(r, 'end_to_end_s')} | {fps(r, 'pixels_pipelined_s')} | {eq} |")
    return out + [""]


LINK_BYTES = 32 << 20


def host_link(device) -> dict:
    """Bytes per second across the host link with dmlvk's own transfers, in the same run: "staged",
    a CommandList's upload (download) between a Buffer's mapped host staging and its device memory
    alone (what a frame already in staging costs: the link's bound); "numpy", Buffer.write (read) of a
    numpy array, the copy into (out of) the staging included; "numpy_first_type", the same with the
    staging from the first host-visible memory type (DMLVK_HOST_CACHED=0's, Kompute's own choice)
    instead of a HOST_CACHED one. Medians of LINK_BYTES transfers; the staging's memory flags."""
    import os
    from dmlvk.runtime import kompute
    from dmlvk.runtime.commands import CommandList
    from dmlvk.runtime.device import Buffer
    buf = Buffer(device, LINK_BYTES)
    kompute.set_host_cached(False)
    try:
        first = Buffer(device, LINK_BYTES)
    finally:
        kompute.set_host_cached(os.environ.get("DMLVK_HOST_CACHED", "1") != "0")
    a = np.ones(LINK_BYTES, np.uint8)
    up = CommandList(device).transfer(uploads=[buf])
    down = CommandList(device).transfer(downloads=[buf])
    rate = lambda fn, k=5: LINK_BYTES / _median_wall(fn, k)
    return {"bytes": LINK_BYTES, "h2d_staged": rate(up.execute, 10), "d2h_staged": rate(down.execute, 10),
            "h2d_numpy": rate(lambda: buf.write(a)), "d2h_numpy": rate(buf.read),
            "h2d_numpy_first_type": rate(lambda: first.write(a)), "d2h_numpy_first_type": rate(first.read),
            "staging_flags": buf.host_memory_flags, "first_type_flags": first.host_memory_flags}


def link_bound(link: dict, in_bytes: int, out_bytes: int) -> float:
    """Seconds a frame takes at least on the link: its input up and its output down, the two directions
    at once (each at its staged rate)."""
    return max(in_bytes / link["h2d_staged"], out_bytes / link["d2h_staged"])


def measure_split(timer, shape=(540, 960)) -> dict:
    """The split model (module docstring) at batch 1: its parts, end to end, each part's share (its
    runner timed alone on the inputs a run hands it), the bytes crossing, onnxruntime's CPU alone on
    the whole model, and whether every output element equals onnxruntime's."""
    import warnings
    import onnxruntime as ort
    model = models.quantize(models.split_network("middle", channels=SPLIT_CHANNELS), models.calibration_frames(),
                            quant_format="QDQ")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = InferenceSession(model, device=timer.device)
    x = np.concatenate(models.calibration_frames(1, *shape, seed=3))
    y = session.run(None, {"x": x})[0]
    ort_session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = ort_session.run(None, {"x": x})[0]
    values, parts = {"x": x}, []
    for part, runner in session.parts:
        ins = {k: values[k] for k in part.inputs}
        if part.kind == "device":
            run = lambda: runner.run(list(part.outputs), ins)
            values.update(zip(part.outputs, run()))
        else:
            run = lambda: runner.run(ins)
            values.update(run())
        parts.append({"kind": part.kind, "ops": [n.op for n in part.nodes], "s": _median_wall(run, 5, warm=1),
                      "bytes_in": int(sum(v.nbytes for v in ins.values()))})
    return {"model": f"Conv 3x3 1->{SPLIT_CHANNELS}, Relu, Erf, Conv 3x3 {SPLIT_CHANNELS}->1, quantize_static QDQ "
                     "(u8 activations, s8 per-channel weights)",
            "input": [1, 1, *shape], "parts": parts,
            "end_to_end_s": _median_wall(lambda: session.run(None, {"x": x}), 5, warm=1),
            "crossing_bytes": session.crossing_bytes,
            "onnxruntime_cpu_s": _median_wall(lambda: ort_session.run(None, {"x": x}), 5, warm=1),
            "elements_compared": int(want.size), "elements_differing": int(np.count_nonzero(want != y))}


def split_markdown(split: dict) -> list:
    n, h, w = split["input"][0], split["input"][2], split["input"][3]
    ms = lambda s: f"{s * 1e3:.2f}"
    out = ["## A model split between the device and ONNX Runtime's CPU", "",
           f"{split['model']}, {h}x{w} batch {n}: dmlvk runs it in {len(split['parts'])} parts; each part "
           "timed alone on the inputs a run hands it (wall clock, milliseconds), the crossing bytes are those "
           "handed between parts per frame.", "",
           "| part | runs | ms | bytes in |", "| --- | --- | ---: | ---: |"]
    for i, p in enumerate(split["parts"]):
        out.append(f"| {i + 1} {p['kind']} | {', '.join(dict.fromkeys(p['ops']))} | {ms(p['s'])} | {p['bytes_in']:,} |")
    eq = f"{split['elements_compared'] - split['elements_differing']:,} of {split['elements_compared']:,}"
    out += ["", f"End to end {ms(split['end_to_end_s'])} ms a frame ({split['crossing_bytes']:,} bytes crossing); "
            f"ONNX Runtime's CPU alone on the whole model {ms(split['onnxruntime_cpu_s'])} ms; outputs equal to "
            f"ONNX Runtime's: {eq} elements.", ""]
    return out


def _consume(outputs) -> None:
    """A stream's consumer that lets each frame's outputs go once it has them (as one that writes
    or shows them does): the session then reuses their arrays."""
    for _ in outputs:
        pass


def add_torch(result: dict, run_peer) -> None:
    """PyTorch eager, then torch.compile TORCH_COMPILES times, each in its own process: each compile's
    figures per row (torch_compiled_runs_s back to back, torch_compiled_per_call_runs_s one call at a
    time, torch_compile_runs_s), the median (the lower middle of an even count) as torch_compiled_s
    with its compile time."""
    spec = [{"scale": 2, "n": r["input"][0], "h": r["input"][2], "w": r["input"][3]} for r in result["models"]["rows"]]
    res = run_peer("torch", {"espcn": spec})
    if "skipped" in res:
        result["peers_skipped"].append(res["skipped"])
        return
    for r, s in zip(result["models"]["rows"], res["espcn"]):
        r["torch_fp16_cuda_s"], r["torch_fp16_cuda_per_call_s"] = s["s"], s["per_call_s"]
    result["models"]["torch"] = res.get("peer")
    for _ in range(TORCH_COMPILES):
        # each compile with caches of its own (else the second takes the first's autotuned choices)
        res = run_peer("torch", {"espcn": spec, "compile": "max-autotune", "fresh_caches": True}, timeout=1800)
        if "skipped" in res:
            result["peers_skipped"].append(res["skipped"])
            break
        for r, c in zip(result["models"]["rows"], res["espcn"]):
            r.setdefault("torch_compiled_runs_s", []).append(c["s"])
            r.setdefault("torch_compiled_per_call_runs_s", []).append(c["per_call_s"])
            r.setdefault("torch_compile_runs_s", []).append(c["compile_s"])
    for r in result["models"]["rows"]:
        if r.get("torch_compiled_runs_s"):
            runs, compiles = r["torch_compiled_runs_s"], r["torch_compile_runs_s"]
            middle = sorted(range(len(runs)), key=runs.__getitem__)[(len(runs) - 1) // 2]
            r["torch_compiled_s"], r["torch_compile_s"] = runs[middle], compiles[middle]
            r["torch_compiled_per_call_s"] = r["torch_compiled_per_call_runs_s"][middle]


def add_webgpu(result: dict, run_peer) -> None:
    """ONNX Runtime's WebGPU EP on the float model and on the quantized one, end to end."""
    m = result["models"]
    with tempfile.TemporaryDirectory(prefix="dmlvk-models-") as tmp:
        paths = {}
        for label, blob in m.pop("model_bytes").items():
            paths[label] = str(Path(tmp) / f"espcn-{label}.onnx")
            Path(paths[label]).write_bytes(blob)
        res = run_peer("webgpu", {"models": paths, "inputs": [r["input"] for r in m["rows"]]}, timeout=1800)
    if "skipped" in res:
        result["peers_skipped"].append(res["skipped"])
        return
    for label, times in res["models"].items():
        for r, s in zip(m["rows"], times):
            r[f"webgpu_{label}_s"] = s
    for label, why in res.get("failed", {}).items():
        result["peers_skipped"].append(f"webgpu {label} model failed: {why}")
    m["webgpu"] = res["peer"]


def markdown(result: dict) -> list:
    m = result["models"]
    fps = lambda r, k: f"{r['frames'] / r[k]:.1f}" if r.get(k) else ""
    out = ["## Quantized super-resolution model, frames per second", "",
           f"{m['model']}; nodes as run: {', '.join(m['nodes'])}.", "",
           "dmlvk device: GPU timestamps of the device work (float frames quantized on the device, the float "
           "output left there, as PyTorch's input and output are on the GPU); + transfers: the same as one "
           "submission with the float32 upload and download (wall); end to end: session.run with float frames in "
           "and out; pipelined: session.run_stream over a stream of such inputs (two in flight: the host copies one's "
           "input in and another's output out while the device computes), consumed frame by frame; host Q/DQ: the same as end to end with "
           "QuantizeLinear and DequantizeLinear in numpy; device arrays: "
           "session.run with a DeviceArray in and out (IO binding). PyTorch: fp16 CUDA, channels_last, eager and "
           "torch.compile(mode=\"max-autotune\"), timed as dmlvk's device column is: 50 calls back to back "
           "between two CUDA events, the median of 5 such rounds (compile time per shape in the last column, "
           "excluded from its figure; compiled in several processes, its autotuned choices varying between "
           "compiles: the median compile's figure, every compile's in the column after the ratio). onnxruntime: CPU, end to end; "
           "WebGPU EP: onnxruntime's WebGPU plugin execution provider, end to end, on the float32 model and on the "
           "same quantized model (nodes it does not take run on its CPU EP).", "",
           "| input | batch | dmlvk device | dmlvk + transfers | dmlvk end to end | end to end / device | "
           "pipelined | pipelined / device | "
           "host Q/DQ end to end | device arrays in and out | PyTorch fp16 eager | dmlvk device / eager | "
           "PyTorch fp16 torch.compile | dmlvk device / torch.compile | torch.compile, each compile | "
           "torch.compile, one call at a time | "
           "onnxruntime CPU | WebGPU EP float32 | WebGPU EP quantized | outputs equal to onnxruntime's | "
           "torch.compile's compile s |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
           "| ---: | ---: | ---: | ---: | --- | ---: |"]
    ratio_to = lambda r, k: f"{r[k] / r['device_s']:.2f}" if r.get(k) else ""
    for r in m["rows"]:
        compile_s = f"{r['torch_compile_s']:.1f}" if r.get("torch_compile_s") is not None else ""
        each = " / ".join(f"{r['frames'] / s:.1f}" for s in r.get("torch_compiled_runs_s", []))
        eq = (f"{r['elements_compared'] - r['elements_differing']:,} of {r['elements_compared']:,}"
              if "elements_compared" in r else "")
        e2e = f"{r['device_s'] / r['end_to_end_s']:.2f}" if r.get("end_to_end_s") else ""
        pipe = f"{r['device_s'] / r['pipelined_s']:.2f}" if r.get("pipelined_s") else ""
        out.append(f"| {r['input'][2]}x{r['input'][3]} | {r['frames']} | {fps(r, 'device_s')} | {fps(r, 'stretch_s')} | "
                   f"{fps(r, 'end_to_end_s')} | {e2e} | {fps(r, 'pipelined_s')} | {pipe} | {fps(r, 'end_to_end_host_qdq_s')} | {fps(r, 'device_arrays_s')} | "
                   f"{fps(r, 'torch_fp16_cuda_s')} | {ratio_to(r, 'torch_fp16_cuda_s')} | "
                   f"{fps(r, 'torch_compiled_s')} | {ratio_to(r, 'torch_compiled_s')} | {each} | "
                   f"{fps(r, 'torch_compiled_per_call_s')} | "
                   f"{fps(r, 'onnxruntime_cpu_s')} | {fps(r, 'webgpu_float_s')} | {fps(r, 'webgpu_quantized_s')} | "
                   f"{eq} | {compile_s} |")
    out.append("")
    if m.get("host_link"):
        out += link_markdown(m)
    if m.get("zoo"):
        out += zoo_markdown(m["zoo"])
    if m.get("split"):
        out += split_markdown(m["split"])
    if m.get("layers"):
        out += bench_layers.markdown(m["layers"])
    if result.get("peers_skipped"):
        out += ["## Peers not measured", ""] + [f"- {s}" for s in result["peers_skipped"]] + [""]
    return out


def link_markdown(m: dict) -> list:
    """The end-to-end figures against the host link's bound, float32 and uint8 pixel frames."""
    link = m["host_link"]
    gbs = lambda k: f"{link[k] / 1e9:.1f}"
    fps = lambda r, k: f"{r['frames'] / r[k]:.1f}" if r.get(k) else ""
    of = lambda r, k, bound: f"{r[bound] / r[k]:.2f}" if r.get(k) and r.get(bound) else ""
    out = ["## Frames through the host link", "",
           f"Same run: host to device {gbs('h2d_staged')} GB/s, device to host {gbs('d2h_staged')} GB/s between a "
           f"Buffer's mapped staging and its device memory (a CommandList's transfer of {link['bytes'] >> 20} MiB); "
           f"with the numpy copy into or out of the staging {gbs('h2d_numpy')} and {gbs('d2h_numpy')} GB/s (staging "
           f"memory flags {link.get('staging_flags', 0):#x}; from the first host-visible type, flags "
           f"{link.get('first_type_flags', 0):#x}: {gbs('h2d_numpy_first_type')} and {gbs('d2h_numpy_first_type')} GB/s). Link bound "
           "of a frame: max(input bytes / host-to-device, output bytes / device-to-host). Pixels: "
           "InferenceSession(inputs=\"pixels\", outputs=\"pixels\"), uint8 frames in and out (nodes as run: "
           f"{', '.join(m.get('pixel_nodes', []))}), every output element compared with the pixels of the float "
           "output for the same frame as floats (p / 255); host arrays: session.run with dmlvk.host_empty arrays in "
           "and out, which the device reads and writes in place (no copy on the host).", "",
           "| input | batch | float32 link bound | float32 pipelined | / bound | pixels device | pixels link bound | "
           "pixels end to end | pixels pipelined | / min(device, bound) | pixels, host arrays in and out | pixels differing |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in m["rows"]:
        if "link_bound_s" not in r:
            continue
        best = max(r["pixels_device_s"], r["pixels_link_bound_s"])
        out.append(f"| {r['input'][2]}x{r['input'][3]} | {r['frames']} | {fps(r, 'link_bound_s')} | "
                   f"{fps(r, 'pipelined_s')} | {of(r, 'pipelined_s', 'link_bound_s')} | {fps(r, 'pixels_device_s')} | "
                   f"{fps(r, 'pixels_link_bound_s')} | {fps(r, 'pixels_end_to_end_s')} | {fps(r, 'pixels_pipelined_s')} | "
                   f"{best / r['pixels_pipelined_s']:.2f} | {fps(r, 'pixels_host_arrays_s')} | {r['pixels_differing']} |")
    return out + [""]
