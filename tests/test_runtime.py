"""The runtime: capabilities, command lists and their barriers, threads, memory, fork."""
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import dmlvk
from dmlvk import DataType, DepthSpaceOrder, TensorDesc, ValidationError, reference
from dmlvk.runtime.capabilities import SUBGROUP_SHUFFLE, Capabilities
from harness import element_mask

ROOT = Path(__file__).resolve().parents[1]
F32, U8, I8 = DataType.FLOAT32, DataType.UINT8, DataType.INT8
DCR = DepthSpaceOrder.DEPTH_COLUMN_ROW


def run_python(code: str, env_extra=None, drop=("VK_INSTANCE_LAYERS", "VK_LAYER_ENABLES"), timeout=120):
    """Run code in a fresh interpreter (with dmlvk importable); returns the CompletedProcess."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def d2s_op(device, c=16, h=8, w=8, b=2):
    return device.create_operator(dmlvk.DepthToSpace1Desc(
        TensorDesc(F32, (1, c, h, w)), TensorDesc(F32, (1, c // (b * b), h * b, w * b)), b, DCR))


def s2d_op(device, c=4, h=16, w=16, b=2):
    return device.create_operator(dmlvk.SpaceToDepth1Desc(
        TensorDesc(F32, (1, c, h, w)), TensorDesc(F32, (1, c * b * b, h // b, w // b)), b, DCR))


# ---- capabilities ----------------------------------------------------------------------------

def test_capabilities_are_what_the_device_enabled(device):
    caps = device.capabilities
    assert isinstance(caps, Capabilities)
    enabled = set(device.manager.enabled_features())
    # the subgroup shuffles are a device property, listed with the features where it has them
    if device.info.subgroup_shuffle:
        enabled.add(SUBGROUP_SHUFFLE)
    assert caps.features == enabled - caps.disabled
    assert "robustBufferAccess" not in enabled
    assert caps.subgroup_size == device.info.subgroup_size
    assert caps.int8_arithmetic == ("shaderInt8" in caps.features)
    masked = caps.without(["all"])
    assert not masked.features and not masked.storage_8bit and masked.disabled >= caps.features
    assert caps.without(["shaderInt8"]).features == caps.features - {"shaderInt8"}


def test_capabilities_hidden_by_the_environment():
    p = run_python("""
        import dmlvk
        d = dmlvk.Device()
        print(sorted(d.capabilities.features), sorted(d.manager.enabled_features()) != [])
    """, {"DMLVK_DISABLE_FEATURES": "all"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[] True"


def test_devices_command_prints_capabilities():
    p = subprocess.run([sys.executable, "-m", "dmlvk", "devices"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "int8 arithmetic" in p.stdout and "cooperative matrices" in p.stdout


# ---- command lists ---------------------------------------------------------------------------

def test_command_list_runs_dependent_operators_repeatedly(device, rng):
    d2s, s2d = d2s_op(device), s2d_op(device)
    a, b, c = device.buffer(4096), device.buffer(4096), device.buffer(4096)
    d = device.buffer(4096)
    cl = dmlvk.CommandList(device)
    cl.record(d2s, [a], [b]).record(s2d, [b], [c]).record(d2s, [c], [d])
    assert cl.barriers == 0                     # nothing recorded into a submission yet
    for _ in range(5):
        x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
        a.write(x)
        cl.execute()
        y = reference.depth_to_space(x, 2, "DCR")
        assert np.array_equal(b.numpy(np.float32, y.shape), y)
        assert np.array_equal(c.numpy(np.float32, x.shape), x)
        assert np.array_equal(d.numpy(np.float32, y.shape), y)
    assert len(cl) == 3 and cl.barriers == 3    # the leading one, then one per dependency


def test_command_list_started_then_waited(device, rng):
    """start() submits without waiting and wait() completes it: two lists in flight at once give
    their own results; recording into, or starting, a list in flight is refused."""
    dcr = DepthSpaceOrder.DEPTH_COLUMN_ROW
    small, big = TensorDesc(DataType.FLOAT32, (1, 4, 8, 8)), TensorDesc(DataType.FLOAT32, (1, 1, 16, 16))
    d2s = device.create_operator(dmlvk.DepthToSpace1Desc(small, big, 2, dcr))
    xs = [rng.standard_normal((1, 4, 8, 8)).astype(np.float32) for _ in range(2)]
    ins, outs = [device.upload(x) for x in xs], [device.buffer(1024) for _ in xs]
    lists = [dmlvk.CommandList(device).record(d2s, [i], [o]) for i, o in zip(ins, outs)]
    for cl in lists:
        cl.start()
    with pytest.raises(RuntimeError, match="running"):
        lists[0].record(d2s, [ins[0]], [outs[0]])
    with pytest.raises(RuntimeError, match="already running"):
        lists[0].start()
    versions = [o.version for o in outs]
    for cl in lists:
        cl.wait()
    for x, o, v in zip(xs, outs, versions):
        assert np.array_equal(o.numpy(np.float32, (1, 1, 16, 16)), reference.depth_to_space(x, 2, "DCR"))
        assert o.version == v + 1
    lists[0].wait()                                   # nothing in flight: nothing happens
    assert outs[0].version == versions[0] + 1


def test_command_list_independent_operators_share_a_barrier_free_stretch(device):
    d2s = d2s_op(device)
    bufs = [device.buffer(4096) for _ in range(4)]
    cl = dmlvk.CommandList(device).record(d2s, [bufs[0]], [bufs[1]]).record(d2s, [bufs[2]], [bufs[3]])
    cl.execute()
    assert cl.barriers == 1
    cl = dmlvk.CommandList(device, barriers=False)      # as timing's back-to-back runs: none at all
    cl.record(d2s, [bufs[0]], [bufs[1]]).record(d2s, [bufs[2]], [bufs[3]])
    cl.execute()
    assert cl.barriers == 0


def test_command_list_quantized_convolution_follows_its_scale_buffers(device, rng):
    x = rng.integers(0, 256, (1, 8, 6, 6), dtype=np.uint8)
    w = rng.integers(-128, 128, (16, 8, 3, 3), dtype=np.int8)
    bias = rng.integers(-500, 500, 16, dtype=np.int32)
    s = lambda v: TensorDesc(F32, (1, 1, 1, 1))
    desc = dmlvk.QuantizedLinearConvolutionDesc(
        TensorDesc(U8, x.shape), s(0), TensorDesc(U8, (1, 1, 1, 1)), TensorDesc(I8, w.shape), s(0), None,
        TensorDesc(DataType.INT32, (1, 16, 1, 1)), s(0), TensorDesc(U8, (1, 1, 1, 1)),
        TensorDesc(U8, (1, 16, 4, 4)))
    op = device.create_operator(desc)
    up = device.upload
    xb, xs, xz, wb, ws, bb, ys, yz = (up(x), up(np.float32([0.05])), up(np.uint8([120, 0, 0, 0])), up(w),
                                      up(np.float32([0.01])), up(bias), up(np.float32([0.3])),
                                      up(np.uint8([7, 0, 0, 0])))
    out = device.buffer(256)
    cl = dmlvk.CommandList(device).record(op, [xb, xs, xz, wb, ws, None, bb, ys, yz], [out])
    for y_scale in (0.3, 0.6, 0.07):
        x = rng.integers(0, 256, x.shape, dtype=np.uint8)
        xb.write(x)
        ys.write(np.float32([y_scale]))
        cl.execute()
        want = reference.quantized_linear_convolution(x, np.float32(0.05), np.uint8(120), w, np.float32(0.01),
                                                       None, bias, np.float32(y_scale), np.uint8(7), np.uint8)
        assert np.array_equal(out.numpy(np.uint8, want.shape), want), y_scale


def test_a_command_list_output_read_later_as_a_scale_is_read_anew(device, rng):
    # A Buffer a command list writes, then used as a convolution's output scale by a direct
    # execution: its new value must be read (the list marks what it wrote as changed).
    x = rng.integers(0, 256, (1, 4, 3, 3), dtype=np.uint8)
    w = rng.integers(-128, 128, (4, 4, 1, 1), dtype=np.int8)
    args = [x, np.float32(0.05), np.uint8(100), w, np.float32(0.02), None, None, np.float32(0.3), np.uint8(7)]
    y_scale = device.upload(np.float32([0.3]))
    conv = dmlvk.ops.quantized_conv.prepare_call(*args, strides=(1, 1), dilations=(1, 1), start_padding=(0, 0),
                                                 end_padding=(0, 0), group_count=1, output_dtype=None,
                                                 device=device)[0]
    copy = device.create_operator(dmlvk.DepthToSpace1Desc(TensorDesc(F32, (1, 1, 1, 1)), TensorDesc(F32, (1, 1, 1, 1)), 1, DCR))
    new_scale = device.upload(np.float32([0.07]))
    cl = dmlvk.CommandList(device).record(copy, [new_scale], [y_scale])
    scalar = lambda v: np.frombuffer(np.asarray(v).tobytes().ljust(4, b"\0"), np.uint8)
    inputs = [x, scalar(args[1]), scalar(args[2]), w, scalar(args[4]), None, None, y_scale, scalar(args[8])]
    out = np.zeros((1, 4, 3, 3), np.uint8)
    for want_scale in (0.3, 0.07):
        if want_scale == 0.07:
            cl.execute()
        conv.execute(inputs, [out])
        args[7] = np.float32(want_scale)
        assert np.array_equal(out, reference.quantized_linear_convolution(*args, np.uint8)), want_scale


def test_timing_gives_each_run_its_own_seconds(device):
    import time
    d2s = d2s_op(device, c=64, h=64, w=64)
    a, b = device.buffer(64 * 64 * 64 * 4), device.buffer(64 * 64 * 64 * 4)
    for barriers in (False, True):
        start = time.perf_counter()
        runs = d2s.time([a], [b], 4, barriers=barriers)
        wall = time.perf_counter() - start
        assert len(runs) == 4 and all(0 < t < wall for t in runs), (runs, wall)
        assert sum(runs) < wall


def test_command_list_checks_bindings(device):
    d2s = d2s_op(device)
    a, b = device.buffer(4096), device.buffer(4096)
    cl = dmlvk.CommandList(device)
    with pytest.raises(TypeError, match="dmlvk.Buffer"):
        cl.record(d2s, [np.zeros(1024, np.float32)], [b])
    with pytest.raises(ValueError, match="takes 1 inputs and 1 outputs"):
        cl.record(d2s, [a, a], [b])
    with pytest.raises(ValueError, match="holds 16 bytes"):
        cl.record(d2s, [device.buffer(16)], [b])
    with pytest.raises(ValueError, match="does not run in place"):
        cl.record(d2s, [a], [a])
    other = dmlvk.Device()
    with pytest.raises(ValueError, match="another device"):
        cl.record(d2s_op(other), [a], [b])
    with pytest.raises(ValueError, match="not a compiled operator"):
        cl.record("d2s", [a], [b])
    assert len(cl) == 0
    cl.execute()      # an empty list runs nothing


def test_command_list_refuses_scales_written_in_the_same_list(device):
    s = TensorDesc(F32, (1, 1, 1, 1))
    conv = device.create_operator(dmlvk.QuantizedLinearConvolutionDesc(
        TensorDesc(U8, (1, 1, 2, 2)), s, None, TensorDesc(U8, (1, 1, 1, 1)), s, None, None, s, None,
        TensorDesc(U8, (1, 1, 2, 2))))
    one = device.upload(np.float32([1]))
    copy = device.create_operator(dmlvk.DepthToSpace1Desc(TensorDesc(F32, (1, 1, 1, 1)), TensorDesc(F32, (1, 1, 1, 1)), 1, DCR))
    cl = dmlvk.CommandList(device).record(copy, [device.upload(np.float32([2]))], [one])
    with pytest.raises(ValueError, match="read on the host"):
        cl.record(conv, [device.buffer(4), one, None, device.buffer(4), one, None, None, one, None], [device.buffer(4)])


VALIDATION_LAYER = Path("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json")


@pytest.mark.skipif(not VALIDATION_LAYER.exists(), reason="Khronos validation layer not installed (ci/setup.sh installs it)")
@pytest.mark.parametrize("barriers", [True, False], ids=["with-barriers", "without-barriers"])
def test_barriers_are_needed_and_sufficient(barriers):
    """Synchronization validation reports a read-after-write hazard between dependent dispatches
    of one submission when the barriers are left out, and nothing when they are recorded."""
    p = run_python(f"""
        import numpy as np, dmlvk
        from dmlvk import DataType as DT, TensorDesc as TD, DepthSpaceOrder as O
        dev = dmlvk.Device()
        d2s = dev.create_operator(dmlvk.DepthToSpace1Desc(TD(DT.FLOAT32, (1, 16, 8, 8)), TD(DT.FLOAT32, (1, 4, 16, 16)), 2, O.DEPTH_COLUMN_ROW))
        s2d = dev.create_operator(dmlvk.SpaceToDepth1Desc(TD(DT.FLOAT32, (1, 4, 16, 16)), TD(DT.FLOAT32, (1, 16, 8, 8)), 2, O.DEPTH_COLUMN_ROW))
        x = np.arange(1024, dtype=np.float32)
        a, b, c = dev.upload(x), dev.buffer(4096), dev.buffer(4096)
        cl = dmlvk.CommandList(dev, barriers={barriers})
        cl.record(d2s, [a], [b]).record(s2d, [b], [c])
        for i in range(3):
            a.write(x + i)
            cl.execute()
        # Write after read: the second operator overwrites what the first one reads.
        d = dev.buffer(4096)
        war = dmlvk.CommandList(dev, barriers={barriers})
        war.record(d2s, [a], [b]).record(s2d, [d], [a]).execute()
        # Dependent dispatches inside one operator (the convolution's filter packing, then the
        # convolution) and inside a whole ONNX model's submission keep their barriers regardless.
        rng = np.random.default_rng(0)
        q = (np.float32(0.05), np.uint8(3), rng.integers(-128, 128, (16, 8, 3, 3), dtype=np.int8),
             np.float32(0.01), None, None, np.float32(0.3), np.uint8(11))
        for i in range(2):
            dmlvk.quantized_linear_convolution(rng.integers(0, 256, (1, 8, 6, 6), dtype=np.uint8), *q, device=dev)
        from dmlvk import onnx as dml_onnx
        from dmlvk_lab import onnx_models
        s = dml_onnx.InferenceSession(onnx_models.qconv_depth_to_space_chain(), device=dev)
        for i in range(2):
            s.run(None, {{"x": rng.integers(0, 256, (1, 8, 6, 6), dtype=np.uint8)}})
        print("ran", cl.barriers)
    """, {"VK_INSTANCE_LAYERS": "VK_LAYER_KHRONOS_validation",
          "VK_LAYER_ENABLES": "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"}, drop=())
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    assert "ran" in out
    if barriers:
        assert "Validation" not in out and "HAZARD" not in out, out[:2000]
    else:
        assert "SYNC-HAZARD-READ-AFTER-WRITE" in out, out[:2000]


# ---- staging ---------------------------------------------------------------------------------

@pytest.mark.parametrize("direct", [True, False], ids=["direct-staging", "staging-copies"])
def test_host_arrays_through_both_staging_kinds(rng, direct):
    """Host arrays are staged in host-visible buffers the shaders use directly, or in device
    memory with copies in the submission; outputs with gaps keep their gap bytes either way."""
    dev = dmlvk.Device()
    dev.direct_staging_bytes = 1 << 40 if direct else 0
    x = rng.standard_normal((1, 16, 3, 4)).astype(np.float32)
    strides = (4 * 61 + 3, 61, 10, 1)                        # gaps after every row and plane
    out_desc = TensorDesc(F32, (1, 4, 6, 8), strides)
    op = dev.create_operator(dmlvk.DepthToSpace1Desc(TensorDesc(F32, x.shape), out_desc, 2, DCR))
    for _ in range(3):
        buf = rng.integers(0, 256, out_desc.total_bytes, dtype=np.uint8)
        before = buf.copy()
        op.execute([x], [buf])
        got = np.lib.stride_tricks.as_strided(buf.view(np.float32), (1, 4, 6, 8), tuple(4 * s for s in strides))
        assert np.array_equal(got, reference.depth_to_space(x, 2, "DCR"))
        gaps = ~element_mask(buf.size, 4, out_desc.sizes, strides)
        assert gaps.sum() > 100 and np.array_equal(buf[gaps], before[gaps])
        x = rng.standard_normal(x.shape).astype(np.float32)
    staged = [b for ctx in op._contexts for b in ctx.staging.values()]
    assert staged and all(b.host_visible == direct for b in staged)
    args = (rng.integers(0, 256, (1, 3, 5, 5), dtype=np.uint8), np.float32(0.05), np.uint8(100),
            rng.integers(-128, 128, (8, 3, 3, 3), dtype=np.int8), np.float32(0.01), None,
            rng.integers(-99, 99, 8, dtype=np.int32), np.float32(0.2), np.uint8(3))
    got = dmlvk.quantized_linear_convolution(*args, device=dev)
    assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.uint8))


# ---- threads ---------------------------------------------------------------------------------

def hammer(fn, threads=8, iterations=150):
    """Run fn(thread, iteration) from many threads at once; returns the exceptions raised."""
    errors, start = [], threading.Barrier(threads)

    def body(t):
        start.wait()
        for i in range(iterations):
            try:
                fn(t, i)
            except Exception as e:  # noqa: BLE001 - collected and reported below
                errors.append(e)
                return

    ts = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def test_threads_numpy_level_depth_to_space():
    def fn(t, i):
        x = np.random.default_rng(1000 * t + i).standard_normal((1, 16, 4, 4)).astype(np.float32)
        order = "CRD" if (t + i) % 2 else "DCR"
        got = dmlvk.depth_to_space(x, 2, order)
        assert np.array_equal(got, reference.depth_to_space(x, 2, order)), (t, i)
    assert hammer(fn, threads=8, iterations=200) == []


def test_threads_share_one_compiled_operator(device):
    op = d2s_op(device, c=16, h=4, w=4)
    bufs = [(device.buffer(1024), device.buffer(1024)) for _ in range(8)]

    def fn(t, i):
        x = np.random.default_rng(1000 * t + i).standard_normal((1, 16, 4, 4)).astype(np.float32)
        want = reference.depth_to_space(x, 2, "DCR")
        if i % 2:
            y = np.empty((1, 4, 8, 8), np.float32)
            op.execute([x], [y])
        else:
            src, dst = bufs[t]
            src.write(x)
            op.execute([src], [dst])
            y = dst.numpy(np.float32, want.shape)
        assert np.array_equal(y, want), (t, i)
    assert hammer(fn) == []


def test_threads_quantized_convolution():
    def fn(t, i):
        rng = np.random.default_rng(1000 * t + i)
        x = rng.integers(0, 256, (1, 4, 5, 5), dtype=np.uint8)
        w = rng.integers(-128, 128, (12, 4, 3, 3), dtype=np.int8)
        ws = rng.uniform(0.001, 0.01, 12).astype(np.float32)
        args = (x, np.float32(0.02), np.uint8(rng.integers(0, 256)), w, ws, np.int8(0),
                rng.integers(-1000, 1000, 12, dtype=np.int32), np.float32(rng.uniform(0.1, 0.5)), np.uint8(100))
        got = dmlvk.quantized_linear_convolution(*args, start_padding=(1, 1), end_padding=(1, 1))
        want = reference.quantized_linear_convolution(*args, np.uint8, start_padding=(1, 1), end_padding=(1, 1))
        assert np.array_equal(got, want), (t, i)
    assert hammer(fn, iterations=60) == []


def test_threads_share_a_command_list(device):
    d2s, s2d = d2s_op(device), s2d_op(device)
    a, b, c = device.buffer(4096), device.buffer(4096), device.buffer(4096)
    a.write(np.arange(1024, dtype=np.float32))
    cl = dmlvk.CommandList(device).record(d2s, [a], [b]).record(s2d, [b], [c])

    def fn(t, i):
        cl.execute()
        assert np.array_equal(c.numpy(np.float32, (1024,)), np.arange(1024, dtype=np.float32))
    assert hammer(fn, iterations=40) == []


# ---- memory ----------------------------------------------------------------------------------

def test_memory_stays_flat_with_fresh_buffers():
    p = run_python("""
        import numpy as np, dmlvk, resource
        from dmlvk import DataType as DT, TensorDesc as TD, DepthSpaceOrder as O
        dev = dmlvk.Device()
        op = dev.create_operator(dmlvk.DepthToSpace1Desc(TD(DT.FLOAT32, (1, 4, 2, 2)), TD(DT.FLOAT32, (1, 1, 4, 4)), 2, O.DEPTH_COLUMN_ROW))
        x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * resource.getpagesize()
        def loop(n):
            for _ in range(n):
                src, dst = dev.upload(x), dev.buffer(64)
                op.execute([src], [dst])
        loop(3000)
        before = rss()
        loop(15000)
        print((rss() - before) / 15000)
    """, timeout=600)
    assert p.returncode == 0, p.stderr
    per_call = float(p.stdout.strip())
    assert per_call < 64, f"{per_call:.0f} bytes per execution"   # was ~1,100 before pruning


@pytest.mark.skipif(dmlvk.devices()[0].device_type != "CPU",
                    reason="fills the device's whole heap: run on CPU devices (lavapipe in CI) only")
def test_out_of_memory_raises_and_recovers():
    """Under an address-space limit lavapipe's allocator used to crash; dmlvk counts its
    allocations against the heaps the device reports and raises OutOfDeviceMemory first."""
    p = run_python("""
        import resource, numpy as np, dmlvk, dmlvk.reference
        dev = dmlvk.Device()
        heap = max(h["size"] for h in dev.memory()["heaps"])
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + 3 * heap + (1 << 30), hard))
        bufs, size = [], 64 << 20
        try:
            while True:
                bufs.append(dev.buffer(size))
        except dmlvk.OutOfDeviceMemory as e:
            print("raised after", len(bufs), "buffers:", e)
        held = len(bufs)
        assert held * size >= heap // 4, held
        bufs.clear()
        again = [dev.buffer(size) for _ in range(held)]       # the memory came back
        del again
        x = np.arange(64, dtype=np.float32).reshape(1, 16, 2, 2)
        assert np.array_equal(dmlvk.depth_to_space(x, 2, device=dev), dmlvk.reference.depth_to_space(x, 2))
        print("recovered")
    """, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "raised after" in p.stdout and "recovered" in p.stdout


def test_fork_child_gets_a_clear_error_never_a_hang():
    p = run_python("""
        import os, numpy as np, dmlvk, dmlvk.reference
        x = np.arange(64, dtype=np.float32).reshape(1, 16, 2, 2)
        want = dmlvk.reference.depth_to_space(x, 2)
        dev = dmlvk.default_device()
        assert np.array_equal(dmlvk.depth_to_space(x, 2), want)
        pid = os.fork()
        if pid == 0:
            code = 0
            for i, call in enumerate([lambda: dev.buffer(16), lambda: dmlvk.depth_to_space(x, 2), dmlvk.Device]):
                try:
                    call()
                    code = 10 + i
                except dmlvk.UnsupportedError as e:
                    if "fork" not in str(e):
                        code = 20 + i
                except BaseException:
                    code = 30 + i
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print("child status", os.waitstatus_to_exitcode(status))
        assert np.array_equal(dmlvk.depth_to_space(x, 2), want)      # the parent goes on
    """, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "child status 0" in p.stdout, p.stdout + p.stderr


def test_fork_before_any_device_leaves_the_child_free():
    p = run_python("""
        import os, numpy as np, dmlvk, dmlvk.reference
        pid = os.fork()
        if pid == 0:
            x = np.arange(64, dtype=np.float32).reshape(1, 16, 2, 2)
            ok = np.array_equal(dmlvk.depth_to_space(x, 2), dmlvk.reference.depth_to_space(x, 2))
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print("child status", os.waitstatus_to_exitcode(status))
    """, timeout=120)
    assert "child status 0" in p.stdout, p.stdout + p.stderr


# ---- command line ------------------------------------------------------------------------------

@pytest.mark.parametrize("args, env, words", [
    (["demo", "--device", "7"], {}, "device index 7 out of range"),
    (["demo"], {"DMLVK_DEVICE": "x"}, "DMLVK_DEVICE must be a device index"),
])
def test_command_line_environment_errors_are_one_line_with_status_2(args, env, words):
    p = subprocess.run([sys.executable, "-m", "dmlvk", *args], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, **env}, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert words in p.stderr and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_command_line_version():
    p = subprocess.run([sys.executable, "-m", "dmlvk", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.strip() == f"dmlvk {dmlvk.__version__}"


def test_timing_repeats_share_one_pipeline_per_dispatch(device, rng, monkeypatch):
    """Device.time records the dispatches `repeats` times over one pipeline and descriptor set per
    distinct (kernel, Buffers) pair, as an operator executed again reuses its own; the timed
    executions still compute the result, and such a program cannot be rebound."""
    from dmlvk.runtime.commands import Program
    x = rng.random((1, 8, 6, 6), dtype=np.float32)
    desc = dmlvk.DepthToSpace1Desc(TensorDesc(DataType.FLOAT32, x.shape), TensorDesc(DataType.FLOAT32, (1, 2, 12, 12)),
                                   2, DepthSpaceOrder.COLUMN_ROW_DEPTH)
    op = device.create_operator(desc)
    src, dst = device.upload(x), device.buffer(2 * 12 * 12 * 4)
    made = []
    real = type(device).algorithms
    monkeypatch.setattr(type(device), "algorithms", lambda self, k, t: made.append(k) or real(self, k, t))
    seconds = op.time([src], [dst], 50)
    assert len(seconds) == 50 and all(s > 0 for s in seconds)
    assert len(made) == 2 * len(op.kernels)     # one execution first (it stages), then the timed program
    assert np.array_equal(dst.numpy(np.float32, (1, 2, 12, 12)), reference.depth_to_space(x, 2, "CRD"))
    prog = Program(device, [(op.kernels[0], (src, dst))] * 3, timestamps=True)
    with pytest.raises(RuntimeError, match="cannot be rebound"):
        prog.rebind([(op.kernels[0], (src, dst))] * 3)


def test_type_support_query(device):
    """CheckFeatureSupport's type query, and validation following it (tests/test_directml.py compares
    type_support="directml" with DirectML itself on two lavapipes)."""
    assert all(device.check_feature_support(t) for t in DataType if t != DataType.UNKNOWN)
    assert not device.check_feature_support(DataType.UNKNOWN)
    with pytest.raises(ValueError):
        device.check_feature_support(99)
    like = dmlvk.Device(type_support="directml")
    sixteen = {DataType.FLOAT16, DataType.UINT16, DataType.INT16}
    assert like.supported_data_types >= set(DataType) - sixteen - {DataType.UNKNOWN}
    assert (sixteen <= like.supported_data_types) == device.info.typed_uav_load_additional_formats
    narrow = dmlvk.Device(type_support={DataType.FLOAT32, DataType.UINT8})
    assert narrow.check_feature_support(DataType.FLOAT32) and not narrow.check_feature_support(DataType.FLOAT16)
    half = TensorDesc(DataType.FLOAT16, (1, 8, 2, 2)), TensorDesc(DataType.FLOAT16, (1, 2, 4, 4))
    with pytest.raises(ValidationError, match="Input's DML_TENSOR_DATA_TYPE_FLOAT16 is not supported"):
        narrow.create_operator(dmlvk.DepthToSpace1Desc(*half, 2, 0))
    narrow.create_operator(dmlvk.DepthToSpace1Desc(TensorDesc(DataType.UINT8, (1, 8, 2, 4)),
                                                   TensorDesc(DataType.UINT8, (1, 2, 4, 8)), 2, 0))
    for bad in ("directml16", 3, [DataType.UNKNOWN], ["x"]):
        with pytest.raises((TypeError, ValueError)):
            dmlvk.Device(type_support=bad)


def test_a_missing_vulkan_loader_is_named_at_the_first_device_call(monkeypatch):
    """`import dmlvk` needs no Vulkan loader; where the native library cannot load it, the first
    device call says what to install (the installed wheel's no-driver case: tests/test_package.py)."""
    import ctypes
    from dmlvk.runtime import kompute
    real_cdll = ctypes.CDLL

    def no_loader(path, *args, **kwargs):
        raise OSError("libvulkan.so.1: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(kompute, "_lib", None)
    monkeypatch.setattr(ctypes, "CDLL", no_loader)
    with pytest.raises(dmlvk.UnsupportedError, match="libvulkan1"):
        kompute.load()
    monkeypatch.setattr(ctypes, "CDLL", real_cdll)
    assert kompute.load().dmlvk_kp_abi_version() == kompute.ABI_VERSION     # loads once the loader is there


def test_native_library_errors_become_python_exceptions(device):
    """A failing Kompute call raises with Kompute's message, and a wrong rebinding is refused
    before it reaches the library; the operations a sequence records do what they say."""
    from dmlvk.runtime import kompute
    from dmlvk.runtime.compiler import compile_shader
    a, b = device.manager.tensor(16), device.manager.tensor(16)
    assert a.data().dtype == np.uint8 and a.data().size == 64
    seq = device.manager.sequence()
    with pytest.raises(RuntimeError, match="[Tt]imestamp"):
        seq.get_timestamps()                     # a sequence made without timestamps
    with pytest.raises(TypeError, match="not an operation"):
        seq.record("dispatch")
    push = [4, 64, 0]                            # copy.comp: 4 uvec4s, 64 invocations, from 0
    algo = device.manager.algorithm([a, b], compile_shader("copy"), (1, 1, 1), [64], push)
    with pytest.raises(ValueError, match="binds 2 tensors, not 1"):
        algo.set_tensors([a])
    with pytest.raises(ValueError, match=r"workgroups must be 3 counts, got \(1, 1\)"):
        device.manager.algorithm([a, b], compile_shader("copy"), (1, 1), [64], push)
    a.data()[:] = np.arange(64, dtype=np.uint8)
    ops = [kompute.OpTensorSyncDevice([a]), kompute.OpPipelineBarrier(0x1000, 0x60, 0x1000, 0x800),
           kompute.OpAlgoDispatch(algo, push)]
    for op in ops:
        seq.record(op)
    seq.eval()
    # a tensor is device memory by default: what the shader wrote reaches its host copy by a sync alone
    assert not b.data().any()
    seq.clear()
    for op in ops + [kompute.OpTensorSyncLocal([b])]:
        seq.record(op)
    seq.eval()
    assert np.array_equal(b.data(), np.arange(64, dtype=np.uint8))
    # a host tensor is the memory the shader writes
    h = device.manager.tensor(16, host=True)
    direct = device.manager.algorithm([a, h], compile_shader("copy"), (1, 1, 1), [64], push)
    seq.clear()
    seq.record(kompute.OpAlgoDispatch(direct, push))
    seq.eval()
    assert np.array_equal(h.data(), np.arange(64, dtype=np.uint8))


# ---- argument checks and small contracts ---------------------------------------------------

def test_device_index_and_buffer_size_arguments(device):
    with pytest.raises(TypeError, match="index must be an int"):
        dmlvk.Device(True)
    with pytest.raises(TypeError, match="index must be an int"):
        dmlvk.Device("0")
    for bad in (0, -4, True, 2.0):
        with pytest.raises(ValueError, match="nbytes must be a positive integer"):
            device.buffer(bad)
    assert device.buffer(1).nbytes >= 1                   # the smallest buffer there is


def test_buffer_writes_stay_inside_the_buffer(device):
    for host_visible in (False, True):
        b = device.staging_buffer(64) if host_visible else device.buffer(64)
        if host_visible:
            assert b.host_visible                         # small staging buffers are host memory
        b.write(np.arange(64, dtype=np.uint8))
        b.write(np.full(8, 255, np.uint8), offset=20)     # a partial write keeps the bytes around it
        want = np.arange(64, dtype=np.uint8)
        want[20:28] = 255
        assert np.array_equal(b.read()[:64], want), host_visible
        for data, offset in ((np.zeros(8, np.uint8), -1), (np.zeros(8, np.uint8), 57), (np.zeros(65, np.uint8), 0)):
            with pytest.raises(ValueError, match="overruns"):
                b.write(data, offset=offset)
        assert np.array_equal(b.read()[:64], want)


def test_the_operator_cache_keeps_the_most_recently_used(device):
    from dmlvk.runtime import device as device_module
    dev = dmlvk.Device(device.index)
    d2s = lambda h, w: lambda: dmlvk.DepthToSpace1Desc(TensorDesc(F32, (1, 4, h, w)), TensorDesc(F32, (1, 1, 2 * h, 2 * w)), 2, DCR)
    first = dev.operator(d2s(1, 1), key="first")
    for i in range(device_module._OPERATOR_CACHE - 1):
        dev.operator(d2s(1, 2 + i), key=i)
        assert dev.operator(None, key="first") is first   # used again: kept as the newest
    for i in range(device_module._OPERATOR_CACHE):       # now unused while the cache turns over
        dev.operator(d2s(2, 1 + i), key=("later", i))
    assert dev.operator(d2s(1, 1), key="first") is not first


def test_binding_messages_name_inputs_and_outputs(device):
    op = d2s_op(device)
    x = np.zeros((1, 16, 8, 8), np.float32)
    with pytest.raises(ValueError, match="output 1 is required"):
        op.execute([x], [None])
    with pytest.raises(ValueError, match="input 0 is required"):
        op.execute([None], [np.zeros((1, 4, 16, 16), np.float32)])


def test_timing_repeats_must_be_a_positive_integer(device):
    op = d2s_op(device)
    a, b = device.buffer(4096), device.buffer(4096)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="repeats must be a positive integer"):
            op.time([a], [b], bad)
    assert len(op.time([a], [b], 1)) == 1


def test_host_specialization_folds_the_constants():
    # spirv-opt's folding (CPU devices): no specialization constant left, the dead branches gone, the
    # same results as the driver's own specialization
    from dmlvk.runtime.compiler import can_specialize, compile_shader, specialize
    if not can_specialize():
        pytest.skip("spirv-opt is not installed (extra [cpu], or Debian's spirv-tools)")
    spirv = compile_shader("depth_space_rows")
    words = np.frombuffer(spirv, np.uint32)
    folded = specialize(spirv, (64, 4, 2, 1, 0, 2, 1, 0, 0, 0, 0))
    out = np.frombuffer(folded, np.uint32)
    spec_ops = {48, 49, 50, 51, 52}        # OpSpecConstantTrue/False, OpSpecConstant, Composite, Op

    def opcodes(w):
        i, ops = 5, []
        while i < len(w):
            ops.append(w[i] & 0xFFFF)
            i += w[i] >> 16
        return ops
    assert spec_ops & set(opcodes(words)) and not spec_ops & set(opcodes(out))
    assert len(folded) < len(spirv) and specialize(spirv, (64, 4, 2, 1, 0, 2, 1, 0, 0, 0, 0)) == folded
    x = np.random.default_rng(0).integers(0, 255, (2, 36, 5, 8), dtype=np.uint8)
    results = []
    for on in (False, True):
        dev = dmlvk.Device()
        dev.host_specialization = on
        results.append([dmlvk.depth_to_space(x, 3, order, device=dev) for order in ("DCR", "CRD")]
                       + [dmlvk.space_to_depth(x[:, :4, :4], 2, device=dev)])
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    assert np.array_equal(results[1][0], dmlvk.reference.depth_to_space(x, 3, "DCR"))


def test_the_c_librarys_statuses_become_their_exceptions(device, monkeypatch):
    """The C interface's statuses: 0 nothing, its out-of-memory status MemoryError (never a plain
    RuntimeError), any other RuntimeError; an allocation's MemoryError, or a RuntimeError naming
    Vulkan's out-of-memory result, surfaces as dmlvk.OutOfDeviceMemory, the heaps' reservation given
    back; another RuntimeError stays itself."""
    from dmlvk.runtime import kompute
    kompute.load()
    kompute._check(0)
    with pytest.raises(MemoryError) as e:
        kompute._check(kompute._NO_MEMORY)
    assert not isinstance(e.value, RuntimeError)
    with pytest.raises(RuntimeError):
        kompute._check(kompute._NO_MEMORY + 1)
    dev = dmlvk.Device(device.index)
    before = dict(dev.heaps.used)
    for raised, want in [(MemoryError("no memory"), dmlvk.OutOfDeviceMemory),
                         (RuntimeError("vk::Device::allocateMemory: ErrorOutOfDeviceMemory"), dmlvk.OutOfDeviceMemory),
                         (RuntimeError("something else"), RuntimeError)]:
        def failing(*args, **kwargs):
            raise raised
        monkeypatch.setattr(dev.manager, "tensor", failing)
        with pytest.raises(want) as e:
            dev.buffer(4096)
        assert isinstance(e.value, MemoryError) == (want is not RuntimeError)
        assert dict(dev.heaps.used) == before


def test_a_native_library_of_another_interface_is_refused(monkeypatch):
    """A libdmlvk_kompute.so whose interface version is not this dmlvk's (newer or older) is refused by
    name before any call, not used."""
    import ctypes
    from dmlvk.runtime import kompute

    class Function:
        def __init__(self, value):
            self.value = value

        def __call__(self, *args):
            return self.value

    class Library:
        def __init__(self, version):
            self.version = version

        def __getattr__(self, name):
            fn = Function(self.version if name == "dmlvk_kp_abi_version" else 0)
            setattr(self, name, fn)
            return fn
    for version in (kompute.ABI_VERSION + 1, kompute.ABI_VERSION - 1):
        monkeypatch.setattr(kompute, "_lib", None)
        monkeypatch.setattr(ctypes, "CDLL", lambda path, *a, _v=version, **k: Library(_v))
        with pytest.raises(dmlvk.UnsupportedError, match=f"has interface {version}, this dmlvk expects {kompute.ABI_VERSION}"):
            kompute.load()
        assert kompute._lib is None


def test_host_specialization_only_where_the_driver_runs_dead_branches(device, monkeypatch):
    """SwiftShader's driver runs the branches a kernel's constants rule out: dmlvk folds them first
    there; lavapipe and GPU drivers fold them themselves (folding for lavapipe made its pipelines
    about 4x slower to create): not there, unless DMLVK_HOST_SPECIALIZATION=1."""
    import dataclasses
    from dmlvk.runtime.capabilities import runs_dead_branches
    from dmlvk.runtime.compiler import can_specialize
    assert runs_dead_branches(dataclasses.replace(device.info, driver_name="SwiftShader driver"))
    for other in ("llvmpipe", "NVIDIA", "radv", "Intel open-source Mesa driver"):
        assert not runs_dead_branches(dataclasses.replace(device.info, driver_name=other))
    monkeypatch.delenv("DMLVK_HOST_SPECIALIZATION", raising=False)
    dev = dmlvk.Device(device.index)
    assert dev.host_specialization == (device.info.driver_name == "SwiftShader driver" and can_specialize())
    if device.info.driver_name == "llvmpipe":
        assert not dev.host_specialization
    monkeypatch.setenv("DMLVK_HOST_SPECIALIZATION", "1")
    assert dmlvk.Device(device.index).host_specialization == can_specialize()
    monkeypatch.setenv("DMLVK_HOST_SPECIALIZATION", "0")
    assert not dmlvk.Device(device.index).host_specialization


def test_host_memory_is_cached_where_the_device_has_such_memory(device):
    """Buffers' staging and host-visible Buffers come from a HOST_CACHED memory type wherever either
    choice (cached preferred, or Kompute's first fitting type) finds one; always host-visible and
    coherent."""
    import os
    from dmlvk.runtime import kompute
    visible_coherent, cached = 0x2 | 0x4, 0x8
    made = lambda: (device.buffer(4096).host_memory_flags, device.staging_buffer(64).host_memory_flags)
    on = made()
    try:
        kompute.set_host_cached(False)
        off = made()
    finally:
        kompute.set_host_cached(os.environ.get("DMLVK_HOST_CACHED", "1") != "0")
    for flags in on + off:
        assert flags & visible_coherent == visible_coherent, hex(flags)
    if os.environ.get("DMLVK_HOST_CACHED", "1") != "0":
        assert [f & cached for f in on] == [(a | b) & cached for a, b in zip(on, off)], (on, off)
