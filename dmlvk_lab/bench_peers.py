"""Peer measurements for dmlvk_lab.bench, one peer per process (importing torch next to Kompute has
crashed): python -m dmlvk_lab.bench_peers PEER JSON-SPEC. Prints one JSON line; exits non-zero with a
reason on stderr when the peer is not installed or has no device."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

TORCH_DTYPES = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}


def _median_wall(fn, repeats: int, warm: int = 2) -> float:
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def _out_hw(shape):
    n, c, h, w, m, kh, kw, s, pad, g = shape
    return (h + 2 * pad - kh) // s + 1, (w + 2 * pad - kw) // s + 1


# ---- PyTorch on CUDA ----------------------------------------------------------------------------

def fresh_compile_caches() -> str:
    """A new empty directory for torch.compile's on-disk caches (Inductor's compiled graphs and its
    autotuning results, Triton's kernels), set through TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR
    before torch is imported: a compile in this process autotunes afresh, instead of taking an
    earlier process's choices from the default per-user directory."""
    root = tempfile.mkdtemp(prefix="dmlvk-torch-compile-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "triton")
    return root


def torch_peer(spec: dict) -> dict:
    # spec["fresh_caches"]: torch.compile's caches in a new directory (removed at the end)
    caches = fresh_compile_caches() if spec.get("fresh_caches") else None
    try:
        return _torch_peer(spec)
    finally:
        if caches is not None:
            shutil.rmtree(caches, ignore_errors=True)


def _torch_peer(spec: dict) -> dict:
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device")
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True

    def cuda_time(fn, repeats=10, warm_s=0.3) -> float:
        # the same protocol as dmlvk's Timer: clocks up first, then a window of 20 ms or more
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < warm_s:
            fn()
            torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        repeats = int(min(1000, max(repeats, 0.02 / max(a.elapsed_time(b) * 1e-3, 1e-7))))
        ts = []
        for _ in range(repeats):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e-3)
        return float(np.median(ts))

    def back_to_back(fn, calls=50, rounds=5, warm_s=0.3) -> float:
        # dmlvk's device column's protocol: `calls` calls queued between two CUDA events (the host's
        # launches overlap the GPU's work, as a recorded submission's dispatches do); the median over
        # `rounds` of the mean per call
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < warm_s:
            fn()
            torch.cuda.synchronize()
        ts = []
        for _ in range(rounds):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(calls):
                fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e-3 / calls)
        return float(np.median(ts))

    ds = []
    for c in spec.get("depth_space", []):
        n, ch, h, w = c["input_sizes"]
        b = c["block"]
        dt = getattr(torch, TORCH_DTYPES[c["eb"]])
        x = torch.zeros((n, ch, h, w), dtype=dt, device=dev)
        if c["op"] == "DEPTH_TO_SPACE1":
            if c["order"] == "COLUMN_ROW_DEPTH":
                fn = lambda: F.pixel_shuffle(x, b)
            else:
                fn = lambda: x.view(n, b, b, ch // (b * b), h, w).permute(0, 3, 4, 1, 5, 2).reshape(
                    n, ch // (b * b), h * b, w * b)
        else:
            if c["order"] == "COLUMN_ROW_DEPTH":
                fn = lambda: F.pixel_unshuffle(x, b)
            else:
                fn = lambda: x.view(n, ch, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4).reshape(
                    n, ch * b * b, h // b, w // b)
        ds.append(cuda_time(fn))
        del x
        torch.cuda.empty_cache()

    conv = []
    for c in spec.get("conv", []):
        n, ch, h, w, m, kh, kw, s, pad, g = c["shape"]
        row = {}
        x = torch.randn((n, ch, h, w), dtype=torch.float16, device=dev).to(memory_format=torch.channels_last)
        wt = torch.randn((m, ch // g, kh, kw), dtype=torch.float16, device=dev).to(memory_format=torch.channels_last)
        row["cuDNN fp16"] = cuda_time(lambda: F.conv2d(x, wt, stride=s, padding=pad, groups=g))
        oh, ow = _out_hw(c["shape"])
        mm, kk = n * oh * ow, ch * kh * kw
        if g == 1 and mm > 16 and kk % 8 == 0 and m % 8 == 0:
            a = torch.randint(-128, 127, (mm, kk), dtype=torch.int8, device=dev)
            bm = torch.randint(-128, 127, (m, kk), dtype=torch.int8, device=dev).t()
            row["int8 GEMM (torch._int_mm)"] = cuda_time(lambda: torch._int_mm(a, bm))
        conv.append(row)
        torch.cuda.empty_cache()
    espcn = []
    mode = spec.get("compile")       # None: eager (cuDNN); else torch.compile's mode
    for e in spec.get("espcn", []):
        # the same network as dmlvk_lab.onnx_models.espcn, float16, channels_last
        r = e["scale"]
        net = torch.nn.Sequential(torch.nn.Conv2d(1, 64, 5, padding=2), torch.nn.ReLU(),
                                  torch.nn.Conv2d(64, 32, 3, padding=1), torch.nn.ReLU(),
                                  torch.nn.Conv2d(32, r * r, 3, padding=1), torch.nn.PixelShuffle(r))
        net = net.to(dev).half().to(memory_format=torch.channels_last).eval()
        x = torch.rand((e["n"], 1, e["h"], e["w"]), device=dev, dtype=torch.float16).to(memory_format=torch.channels_last)
        with torch.inference_mode():
            if mode is None:
                espcn.append({"s": back_to_back(lambda: net(x)), "per_call_s": cuda_time(lambda: net(x))})
            else:
                # compiled for this shape alone (no dynamic shapes), the compile timed on its own
                torch._dynamo.reset()
                fn = torch.compile(net, mode=mode, dynamic=False)
                t0 = time.perf_counter()
                for _ in range(3):          # CUDA graphs are recorded on a later call than the first
                    fn(x)
                torch.cuda.synchronize()
                compile_s = time.perf_counter() - t0
                espcn.append({"s": back_to_back(lambda: fn(x)), "per_call_s": cuda_time(lambda: fn(x)),
                              "compile_s": compile_s})
        del net, x
        torch.cuda.empty_cache()
    out = {"peer": "torch " + torch.__version__ + (f" torch.compile(mode={mode!r})" if mode else ""), "device": torch.cuda.get_device_name(),
           "depth_space": ds, "conv": conv, "espcn": espcn}
    if spec.get("roundtrip"):
        # dmlvk's runtime benchmark protocol: best of 7 rounds of the median per call
        x = torch.zeros(16, device=dev)

        def step():
            x.add_(1)
            torch.cuda.synchronize()
        rounds = []
        for _ in range(7):
            for _ in range(20):
                step()
            t0 = time.perf_counter()
            for _ in range(200):
                step()
            rounds.append((time.perf_counter() - t0) / 200 * 1e6)
        out["roundtrip_us"] = float(min(rounds))
    return out


# ---- ONNX Runtime CPU QLinearConv ----------------------------------------------------------------

def onnxruntime_peer(spec: dict) -> dict:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    conv = []
    rng = np.random.default_rng(0)
    for c in spec.get("conv", []):
        n, ch, h, w, m, kh, kw, s, pad, g = c["shape"]
        oh, ow = _out_hw(c["shape"])
        wt = rng.integers(-64, 64, (m, ch // g, kh, kw), dtype=np.int8)
        inits = [numpy_helper.from_array(a, name) for a, name in (
            (np.array(0.02, np.float32), "xs"), (np.array(128, np.uint8), "xz"), (wt, "w"),
            (rng.uniform(0.001, 0.01, m).astype(np.float32), "ws"), (np.zeros(m, np.int8), "wz"),
            (np.array(0.5, np.float32), "ys"), (np.array(100, np.uint8), "yz"),
            (rng.integers(-1000, 1000, m, dtype=np.int32), "b"))]
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                                strides=[s, s], pads=[pad] * 4, group=g)
        graph = helper.make_graph([node], "qconv", [helper.make_tensor_value_info("x", TensorProto.UINT8, [n, ch, h, w])],
                                  [helper.make_tensor_value_info("y", TensorProto.UINT8, [n, m, oh, ow])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        x = rng.integers(0, 256, (n, ch, h, w), dtype=np.uint8)
        run = lambda: sess.run(None, {"x": x})
        t0 = time.perf_counter()
        run()
        once = time.perf_counter() - t0
        conv.append({"onnxruntime CPU": _median_wall(run, max(3, min(20, int(2.0 / max(once, 1e-4)))), warm=1)})
    return {"peer": f"onnxruntime {ort.__version__} CPU", "conv": conv}


# ---- ncnn Vulkan ------------------------------------------------------------------------------------

def ncnn_peer(spec: dict) -> dict:
    """ncnn's Vulkan PixelShuffle (depth-to-space) and Reorg (space-to-depth), float32. Its Python
    API moves data host to host, so these are wall-clock times including the transfers."""
    import ncnn
    if ncnn.get_gpu_count() == 0:
        raise RuntimeError("ncnn sees no Vulkan device")
    out = []
    for c in spec.get("depth_space", []):
        if c["eb"] != 4 or c["bytes"] > (64 << 20):
            out.append(None)
            continue
        n, ch, h, w = c["input_sizes"]
        b = c["block"]
        if c["op"] == "DEPTH_TO_SPACE1":
            mode = 0 if c["order"] == "COLUMN_ROW_DEPTH" else 1
            layer = f"PixelShuffle op 1 1 in0 out0 0={b} 1={mode}"
        else:
            if c["order"] != "DEPTH_COLUMN_ROW":
                out.append(None)
                continue
            layer = f"Reorg op 1 1 in0 out0 0={b} 1=1"
        net = ncnn.Net()
        net.opt.use_vulkan_compute = True
        net.load_param_mem(f"7767517\n2 2\nInput in0 0 1 in0\n{layer}\n")
        net.load_model_mem(b"")
        x = ncnn.Mat(np.zeros((ch, h, w), np.float32))

        def run():
            ex = net.create_extractor()
            ex.input("in0", x)
            ret, y = ex.extract("out0")
            if ret != 0:
                raise RuntimeError(f"ncnn extract failed ({ret})")
            np.array(y)
        out.append(_median_wall(run, 5))
    return {"peer": "ncnn Vulkan (wall clock, host to host)", "depth_space": out}


# ---- ONNX Runtime's WebGPU execution provider (Dawn over Vulkan on Linux) ---------------------------

def webgpu_peer(spec: dict) -> dict:
    """End to end (float32 numpy in and out) session.run of each model file on the WebGPU plugin EP
    (onnxruntime-ep-webgpu); nodes it does not take fall back to ONNX Runtime's CPU EP, as a user's
    session would. A session per input shape (one whose run failed is not used again), and a shape
    it fails on (a None time, the reason in "failed") leaves the others' figures. spec: {"models": {label: path}, "inputs": [[n, c, h, w], ...]}."""
    import onnxruntime as ort
    import onnxruntime_ep_webgpu as webgpu
    ort.register_execution_provider_library("webgpu", webgpu.get_library_path())
    ep = next((d for d in ort.get_ep_devices() if d.ep_name == webgpu.get_ep_name()), None)
    if ep is None:
        raise RuntimeError("the WebGPU EP found no adapter")
    out = {"peer": f"onnxruntime {ort.__version__} WebGPU EP", "models": {}, "failed": {}}
    for label, path in spec["models"].items():
        times, failed = [], []
        for shape in spec["inputs"]:
            try:
                options = ort.SessionOptions()
                options.add_provider_for_devices([ep], {})
                session = ort.InferenceSession(path, sess_options=options)
                x = np.random.default_rng(3).random(shape, dtype=np.float32)
                times.append(_median_wall(lambda: session.run(None, {"x": x}), 3, warm=1))
                del session
            except Exception as e:   # this shape's reason; the other shapes and models still run
                times.append(None)
                failed.append(f"{list(shape)}: {type(e).__name__}: {e}")
        out["models"][label] = times
        if failed:
            out["failed"][label] = "; ".join(failed)
    return out


PEERS = {"torch": torch_peer, "onnxruntime": onnxruntime_peer, "ncnn": ncnn_peer, "webgpu": webgpu_peer}


def main(argv) -> int:
    if len(argv) != 2 or argv[0] not in PEERS:
        print(f"usage: python -m dmlvk_lab.bench_peers {{{'|'.join(PEERS)}}} JSON", file=sys.stderr)
        return 2
    try:
        res = PEERS[argv[0]](json.loads(argv[1]))
    except ImportError as e:
        print(f"{argv[0]} is not installed ({e})", file=sys.stderr)
        return 3
    except Exception as e:   # a peer's own failure is reported, not raised into the harness
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 4
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
