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
element of the batch-1 cases is compared with onnxruntime's."""
from __future__ import annotations

import numpy as np

from dmlvk import arrays
from . import onnx_models as models
from .bench_peers import _median_wall
from dmlvk.runtime.commands import time as time_dispatches
from dmlvk.onnx import InferenceSession

SHAPES = [(540, 960), (1080, 1920)]
STREAM_FRAMES = 48           # inputs run_stream is timed over (per figure: their mean; a stream fills and drains once)
BATCHES = [1, 8]


def measure_models(timer, shapes=SHAPES, batches=BATCHES, ort_batches=(1,)) -> dict:
    import onnxruntime as ort
    device = timer.device
    model = models.quantize(models.espcn(2), models.calibration_frames())
    session = InferenceSession(model, device=device)
    host_qdq = InferenceSession(model, device=device, host_quantization=True)
    ort_session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rows = []
    for h, w in shapes:
        for n in batches:
            x = np.concatenate(models.calibration_frames(n, h, w, seed=3))
            y = session.run(None, {"x": x})[0]
            row = {"input": [n, 1, h, w], "output": list(y.shape), "frames": n}
            prog, dispatches, steps = session.device_work({"x": x})
            t = timer(lambda k: time_dispatches(device, dispatches, k, barriers=True))
            row["device_s"] = t["median_s"]
            row["stretch_s"] = _median_wall(prog.run, 10, warm=1)
            row["end_to_end_s"] = _median_wall(lambda: session.run(None, {"x": x}), 5, warm=1)
            stream = [{"x": x}] * STREAM_FRAMES          # one call's frames, several in flight
            row["pipelined_s"] = _median_wall(lambda: _consume(session.run_stream(None, stream)), 3, warm=1) / STREAM_FRAMES
            row["end_to_end_host_qdq_s"] = _median_wall(lambda: host_qdq.run(None, {"x": x}), 3, warm=1)
            xd, yd = arrays.asarray(x, device=device), arrays.empty(y.shape, y.dtype, device=device)
            row["device_arrays_s"] = _median_wall(lambda: session.run(None, {"x": xd}, outputs={"y": yd}), 10, warm=1)
            row["device_qdq"] = steps == ["device"]
            if n in ort_batches:
                want = ort_session.run(None, {"x": x})[0]
                row["elements_compared"] = int(want.size)
                row["elements_differing"] = int(np.count_nonzero(want != y))
                row["onnxruntime_cpu_s"] = _median_wall(lambda: ort_session.run(None, {"x": x}), 3, warm=1)
            rows.append(row)
    return {"model": "ESPCN x2 (Conv 5x5 1->64, 3x3 64->32, 3x3 32->4, DepthToSpace CRD), quantize_static "
                     "QOperator per-channel, u8 activations, 7-bit s8 weights",
            "nodes": session.nodes, "rows": rows}


def _consume(outputs) -> None:
    """A stream's consumer that lets each frame's outputs go once it has them (as one that writes
    or shows them does): the session then reuses their arrays."""
    for _ in outputs:
        pass


def add_torch(result: dict, run_peer) -> None:
    spec = [{"scale": 2, "n": r["input"][0], "h": r["input"][2], "w": r["input"][3]} for r in result["models"]["rows"]]
    res = run_peer("torch", {"espcn": spec})
    if "skipped" in res:
        result["peers_skipped"].append(res["skipped"])
        return
    for r, s in zip(result["models"]["rows"], res["espcn"]):
        r["torch_fp16_cuda_s"] = s
    result["models"]["torch"] = res.get("peer")


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
           "session.run with a DeviceArray in and out (IO binding). onnxruntime: CPU, end to end.", "",
           "| input | batch | dmlvk device | dmlvk + transfers | dmlvk end to end | end to end / device | "
           "pipelined | pipelined / device | "
           "host Q/DQ end to end | device arrays in and out | PyTorch fp16 CUDA | dmlvk device / PyTorch | "
           "onnxruntime CPU | outputs equal to onnxruntime's |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in m["rows"]:
        ratio = f"{r['torch_fp16_cuda_s'] / r['device_s']:.2f}" if r.get("torch_fp16_cuda_s") else ""
        eq = (f"{r['elements_compared'] - r['elements_differing']:,} of {r['elements_compared']:,}"
              if "elements_compared" in r else "")
        e2e = f"{r['device_s'] / r['end_to_end_s']:.2f}" if r.get("end_to_end_s") else ""
        pipe = f"{r['device_s'] / r['pipelined_s']:.2f}" if r.get("pipelined_s") else ""
        out.append(f"| {r['input'][2]}x{r['input'][3]} | {r['frames']} | {fps(r, 'device_s')} | {fps(r, 'stretch_s')} | "
                   f"{fps(r, 'end_to_end_s')} | {e2e} | {fps(r, 'pipelined_s')} | {pipe} | {fps(r, 'end_to_end_host_qdq_s')} | {fps(r, 'device_arrays_s')} | "
                   f"{fps(r, 'torch_fp16_cuda_s')} | "
                   f"{ratio} | {fps(r, 'onnxruntime_cpu_s')} | {eq} |")
    out.append("")
    return out
