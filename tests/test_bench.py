"""python -m dmlvk_lab bench --only depth-space on the test device at small sizes: its files, its
summary by size class, and the union of two runs of different sizes (--rerender)."""
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from dmlvk_lab.bench import merge_results, nominal_mib

pytestmark = pytest.mark.host      # the benchmark harness and probes

ROOT = Path(__file__).resolve().parent.parent


def _bench(out: Path, *args) -> Path:
    proc = subprocess.run([sys.executable, "-m", "dmlvk_lab", "bench", "--out", str(out), "--no-peers", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return next(out.glob("depth-space-*.json"))


def test_depth_space_runs_and_their_union(tmp_path):
    a = _bench(tmp_path / "a", "--only", "depth-space", "--sizes", "1", "--repeats", "1")
    b = _bench(tmp_path / "b", "--only", "depth-space", "--sizes", "4", "--repeats", "1")
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert "conv" in ra and not ra["conv"] and "runtime" not in ra
    assert len(ra["depth_space"]) == 48 and all(r["shader"] for r in ra["depth_space"])
    assert all(0 < r["pct_of_copy"] < 1000 for r in ra["depth_space"])
    merged = _bench(tmp_path / "m", "--rerender", str(a), str(b))
    rm = json.loads(merged.read_text())
    assert len(rm["depth_space"]) == 96 and rm["merged_dates"] == [ra["date"], rb["date"]]
    md = merged.with_suffix(".md").read_text()
    assert "## Summary" in md and "| 1-8 MiB | 96 |" in md and "| all | 96 |" in md
    again = merge_results([ra, ra])            # a run measured again: every case replaced
    assert len(again["depth_space"]) == 48 and all(r["rerun"] == ra["date"] for r in again["depth_space"])
    with pytest.raises(ValueError, match="different devices"):
        merge_results([ra, {**rb, "device": {**rb["device"], "name": "another"}}])


def test_size_class_comes_from_the_label():
    assert nominal_mib({"case": "NHWC with gaps 64 MiB", "bytes": 60 << 20}) == 64
    assert nominal_mib({"case": "1x64x540x960", "bytes": 33177600}) == pytest.approx(31.64, abs=0.01)


def test_a_later_run_replaces_the_cases_it_measured_again():
    row = lambda case, gbps, nbytes: {"case": case, "op": "DEPTH_TO_SPACE1", "data_type": "DML_TENSOR_DATA_TYPE_UINT8",
                                      "block": 3, "order": "DEPTH_COLUMN_ROW", "layout": "packed", "bytes": nbytes,
                                      "gbps": gbps, "copy_gbps": 100.0}
    dev = {"name": "gpu"}
    base = {"date": "d1", "device": dev, "depth_space": [row("64 MiB", 70.0, 64), row("1 MiB", 80.0, 1)]}
    again = {"date": "d2", "device": dev, "depth_space": [row("64 MiB", 90.0, 64)]}
    merged = merge_results([base, again])
    assert [(r["case"], r["gbps"], r.get("rerun")) for r in merged["depth_space"]] == [("64 MiB", 90.0, "d2"),
                                                                                       ("1 MiB", 80.0, None)]
    assert base["depth_space"][0]["gbps"] == 70.0          # the inputs are left as they were
    later = {"date": "d4", "device": dev, "depth_space": [row("64 MiB", 95.0, 64)]}
    assert merge_results([merged, later])["merged_dates"] == ["d1", "d2", "d4"]
    assert merged["merged_dates"] == ["d1", "d2"] and "merged_dates" not in base   # a merged run, too
    clash = {"date": "d3", "device": dev, "depth_space": [{**row("64 MiB", 90.0, 64), "block": 2}]}
    with pytest.raises(ValueError, match="share tensor sizes"):
        merge_results([base, clash])


def test_pipeline_statistics(device):
    # dmlvk_lab/pipeline_stats.py: the driver's statistics of a kernel built as dmlvk builds it, or a
    # clear error where the driver offers none (lavapipe).
    from dmlvk_lab import pipeline_stats
    from dmlvk import TensorDesc, DataType, DepthSpaceOrder
    from dmlvk.ops.depth_space import DepthToSpace1Desc
    op = device.create_operator(DepthToSpace1Desc(TensorDesc(DataType.FLOAT32, (1, 8, 4, 4)),
                                                  TensorDesc(DataType.FLOAT32, (1, 2, 8, 8)), 2,
                                                  DepthSpaceOrder.DEPTH_COLUMN_ROW))
    if pipeline_stats.EXTENSION not in device.info.extensions:
        with pytest.raises(RuntimeError, match=pipeline_stats.EXTENSION):
            pipeline_stats.StatisticsDevice(device.index)
        return
    stats = pipeline_stats.StatisticsDevice(device.index)
    try:
        executables = pipeline_stats.kernel_statistics(stats, op.kernels[0])
    finally:
        stats.close()
    assert executables and all(ex["statistics"] for ex in executables)


def test_timer_resolves_below_the_timestamp_tick():
    # Runs of 1.3 us timed with a 1 us tick read 1 or 2 us each (their median: 1 us); the timer's
    # batches of runs carry the tick once a batch, and their median comes out at 1.3 us.
    from dmlvk_lab.bench import Timer
    ticks = lambda i: int((i + 1) * 1.3) - int(i * 1.3)
    timer = Timer(device=None, repeats=10, warm_s=0, window_s=1e-3, batch_s=50e-6)
    t = timer(lambda n: [ticks(i) * 1e-6 for i in range(n)])
    assert t["batch"] >= 50 and t["runs"] == t["batch"] * (t["runs"] // t["batch"]) >= 10 * t["batch"]
    assert t["median_s"] == pytest.approx(1.3e-6, rel=0.02)
    single = Timer(device=None, repeats=10, warm_s=0, window_s=1e-3, batch_s=0)(lambda n: [ticks(i) * 1e-6 for i in range(n)])
    assert single["batch"] == 1 and single["median_s"] == 1e-6


def test_runs_timed_differently_are_not_merged():
    dev = {"name": "gpu"}
    row = {"case": "64 MiB", "op": "DEPTH_TO_SPACE1", "data_type": "DML_TENSOR_DATA_TYPE_UINT8", "block": 2,
           "order": "DEPTH_COLUMN_ROW", "layout": "packed", "bytes": 64, "gbps": 1.0, "copy_gbps": 1.0}
    batched = {"date": "d2", "device": dev, "batch_s": 250e-6, "depth_space": [{**row, "bytes": 1}]}
    with pytest.raises(ValueError, match="timed differently"):
        merge_results([{"date": "d1", "device": dev, "depth_space": [row]}, batched])


def test_shader_ablation_copies_and_table(tmp_path):
    # dmlvk_lab/shader_ablation.py: a copy of the shaders with each edit made once, a clear error for
    # an edit whose text is not there exactly once, every committed recipe applying to today's
    # shaders (dmlvk_lab/ablations/), a variant's edits and tuning, and the table of a finished run and
    # a failed one.
    from dmlvk_lab import shader_ablation
    folder, edited = shader_ablation.make_copy("v", [("copy.comp", "void main() {", "void main() { // cut")], tmp_path)
    assert edited == ["copy.comp"] and "void main() { // cut" in (folder / "copy.comp").read_text()
    assert (folder / "qconv_common.glsl").read_text() == (ROOT / "dmlvk/shaders/qconv_common.glsl").read_text()
    with pytest.raises(ValueError, match="holds 0 copies"):
        shader_ablation.make_copy("w", [("copy.comp", "no such text", "")], tmp_path)
    with pytest.raises(ValueError, match="no shader"):
        shader_ablation.make_copy("w", [("none.comp", "a", "b")], tmp_path)
    import runpy
    for recipe in (ROOT / "dmlvk_lab/ablations").glob("*.py"):
        for name, v in runpy.run_path(str(recipe), init_globals={"NEVER": shader_ablation.NEVER})["VARIANTS"].items():
            shader_ablation.make_copy("r", shader_ablation.parts(v)[0], tmp_path)
    assert shader_ablation.parts({"tuning": {"DOT_OUTPUTS": 4}}) == ([], {"DOT_OUTPUTS": 4})
    with pytest.raises(ValueError, match="not \\['tune'\\]"):
        shader_ablation.parts({"tune": {}})
    rows = shader_ablation.table({"as is": {"device": "d", "equal": True, "dispatches": [["conv.dot", 57.2e-6], ["halo", 77e-6]],
                                            "registers": [127, None]},
                                  "cut": {"error": ["qlinear_conv_coopmat {}:", "ERROR: x"]}})
    assert rows[2] == "| as is | 57.2 (127) | 77.0 | 134.2 | yes |"
    assert rows[3].startswith("| cut | failed: qlinear_conv_coopmat")


def test_layers_alone_and_in_the_frame(device):
    # dmlvk_lab/bench_layers.py: each dispatch of a frame (here a copy a -> b, then b -> c, which
    # depends on it) timed alone and in the frame; the table's ratios are of the time in the frame,
    # or of the time alone for results from before that column (said so, its cells empty).
    from dmlvk_lab import bench_layers
    from dmlvk_lab.bench import Timer
    n = 1 << 16
    a, b, c = device.buffer(n), device.buffer(n), device.buffer(n)
    copy = bench_layers.copy_kernel(n)
    rows = bench_layers.measure_layers(Timer(device, 2, 0.0), [(copy, (a, b)), (copy, (b, c))], 1e9, None)
    assert [r["bytes"] for r in rows] == [2 * n, 2 * n] and all(r["s"] > 0 and r["frame_s"] > 0 for r in rows)
    section = {"copy_bandwidth": 1e9, "int8_peak_ops": None, "frames": [{"input": [1, 1, 8, 8], "rows": rows}]}
    table = bench_layers.markdown(section)
    head = next(line for line in table if line.startswith("### 8x8"))
    assert f"{sum(r['frame_s'] for r in rows) * 1e6:,.1f} us of dispatches in the frame" in head
    first = next(line for line in table if line.startswith("| copy"))
    assert first.split(" | ")[3:5] == [f"{rows[0]['s'] * 1e6:,.1f}", f"{rows[0]['frame_s'] * 1e6:,.1f}"]
    old = [{k: v for k, v in r.items() if k != "frame_s"} for r in rows]
    table = bench_layers.markdown({**section, "frames": [{"input": [1, 1, 8, 8], "rows": old}]})
    assert any("us of dispatches alone (not timed in the frame)" in line for line in table)
    first = next(line for line in table if line.startswith("| copy"))
    assert first.split(" | ")[4] == "" and first.split(" | ")[6] == f"{rows[0]['s'] / rows[0]['floor_s']:.1f}"


def test_torch_compile_peer_takes_its_median_compile():
    # dmlvk_lab/bench_models.py: torch.compile compiled TORCH_COMPILES times, each in its own process;
    # each compile's figure per row (back to back, and one call at a time), the median one's (and its
    # compile time) as the row's figure; a compile that is skipped keeps the ones before it.
    from dmlvk_lab import bench_models
    assert bench_models.TORCH_COMPILES == 3
    calls = []

    def run_peer(peer, spec, timeout=900):
        calls.append(spec.get("compile"))
        assert spec.get("fresh_caches", False) == ("compile" in spec)      # each compile autotunes afresh
        if "compile" not in spec:
            return {"espcn": [{"s": 1e-3, "per_call_s": 1.5e-3}, {"s": 2e-3, "per_call_s": 2.5e-3}], "peer": "torch"}
        k = calls.count("max-autotune")
        return {"espcn": [{"s": [4e-4, 3e-4, 5e-4][k - 1], "per_call_s": [6e-4, 5e-4, 7e-4][k - 1], "compile_s": 10.0 * k},
                          {"s": [1e-3, 2e-3, 3e-3][k - 1], "per_call_s": 4e-3, "compile_s": 5.0 * k}]}
    rows = [{"input": [1, 1, 540, 960], "frames": 1, "device_s": 2e-4},
            {"input": [8, 1, 540, 960], "frames": 8, "device_s": 1e-3}]
    result = {"models": {"rows": rows}, "peers_skipped": []}
    bench_models.add_torch(result, run_peer)
    assert calls == [None, "max-autotune", "max-autotune", "max-autotune"]
    assert [(r["torch_compiled_s"], r["torch_compile_s"]) for r in rows] == [(4e-4, 10.0), (2e-3, 10.0)]
    assert rows[0]["torch_compiled_runs_s"] == [4e-4, 3e-4, 5e-4] and rows[0]["torch_compiled_per_call_s"] == 6e-4
    assert rows[0]["torch_fp16_cuda_s"] == 1e-3 and rows[0]["torch_fp16_cuda_per_call_s"] == 1.5e-3
    line = next(x for x in bench_models.markdown({"models": {**result["models"], "model": "m", "nodes": []}})
                if x.startswith("| 540x960 | 1 |"))
    assert "| 2500.0 | 2.00 | 2500.0 / 3333.3 / 2000.0 | 1666.7 |" in line
    rows = [{"input": [1, 1, 540, 960], "frames": 1, "device_s": 2e-4}]
    calls.clear()
    result = {"models": {"rows": rows}, "peers_skipped": []}
    bench_models.add_torch(result, lambda peer, spec, timeout=900: run_peer(peer, spec) if len(calls) < 2
                           else {"skipped": "torch.compile failed"})
    assert rows[0]["torch_compiled_runs_s"] == [4e-4] and result["peers_skipped"] == ["torch.compile failed"]


def test_torch_compile_caches_are_fresh(monkeypatch, tmp_path):
    # dmlvk_lab/bench_peers.py: a torch peer process given fresh_caches points torch.compile's caches
    # (Inductor's, autotuning included, and Triton's) at a new empty directory, removed at the end.
    from dmlvk_lab import bench_peers
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    seen = {}

    def peer(spec):
        seen.update({k: os.environ[k] for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")})
        Path(seen["TORCHINDUCTOR_CACHE_DIR"]).mkdir(parents=True)
        return {"espcn": []}
    monkeypatch.setattr(bench_peers, "_torch_peer", peer)
    assert bench_peers.torch_peer({"fresh_caches": True}) == {"espcn": []}
    root = Path(seen["TORCHINDUCTOR_CACHE_DIR"]).parent
    assert root.parent == tmp_path and Path(seen["TRITON_CACHE_DIR"]).parent == root and not root.exists()


def test_sm_probe_compiles():
    # tools/sm_probe.py --prepare: its two probes (tools/probes/) compile beside dmlvk's shaders, in a
    # copy of them (the tree untouched).
    before = sorted(p.name for p in (ROOT / "dmlvk/shaders").iterdir())
    proc = subprocess.run([sys.executable, str(ROOT / "tools/sm_probe.py"), "--prepare"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "sm_resident: " in proc.stdout and "halo_taps: " in proc.stdout
    assert sorted(p.name for p in (ROOT / "dmlvk/shaders").iterdir()) == before


def _sass_tool():
    from dmlvk_lab import sass
    return sass


# Two instructions as NVIDIA's Vulkan driver 580.159.04 compiled them for an H200 (conv.dot's and
# conv.coopmat.halo's), with nvdisasm's reading of them.
_IDP = bytes.fromhex("2672252e38000000ff02000000e21f00")
_IMMA = bytes.fromhex("3772002804000000ff5c400000e62f04")


def _nvidia_cache_data(code: bytes) -> bytes:
    # cache data laid out as dmlvk_lab/sass.py reads it: 100 bytes of header, then a zstd frame of
    # "NVDANVVMNVuc" data whose code section (size and offset at 0x4c and 0x50) starts 8 bytes in
    assert shutil.which("zstd"), "ci/setup.sh installs zstd"
    offset = 0x60
    raw = bytearray(b"NVDANVVMNVuc" + bytes(offset - 12))
    struct.pack_into("<II", raw, 0x4C, 8 + len(code) + 4, offset)
    raw += bytes(8) + code + bytes(4)
    frame = subprocess.run(["zstd", "-q", "-c"], input=bytes(raw), capture_output=True, check=True).stdout
    return bytes(100) + frame


def test_sass_takes_the_code_out_of_nvidia_cache_data(tmp_path):
    # dmlvk_lab/sass.py: the instructions found in the layout it documents, whole 16-byte ones only; data
    # in any other layout refused with an error, not guessed at.
    sass = _sass_tool()
    assert sass.code_of(_nvidia_cache_data(_IDP + _IMMA)) == _IDP + _IMMA
    with pytest.raises(ValueError, match="no zstd frame"):
        sass.code_of(b"\x00" * 200)
    other = subprocess.run(["zstd", "-q", "-c"], input=b"ELF?" * 40, capture_output=True, check=True).stdout
    with pytest.raises(ValueError, match="NVDANVVMNVuc"):
        sass.code_of(bytes(100) + other)
    assert sass.mix("        /*0000*/                   IDP.4A.S8.U8 R37, R46, R56, RZ ;\n"
                    "        /*0010*/              @!P0 IADD3 R1, R2, R3, RZ ;\n"
                    "        /*0020*/                   IADD3 R4, R2, R3, RZ ;\n") == {"IDP.4A.S8.U8": 1, "IADD3": 2}


def test_sass_disassembles_with_nvdisasm(tmp_path):
    # The code disassembled by CUDA's nvdisasm (the nvidia-cuda-nvdisasm wheel, ci/setup.sh): an
    # oracle for the layout dmlvk_lab/sass.py reads, on any machine.
    sass = _sass_tool()
    nvdisasm = sass.find_nvdisasm()
    assert nvdisasm, "ci/setup.sh installs the nvidia-cuda-nvdisasm wheel"
    text = sass.disassemble(sass.code_of(_nvidia_cache_data(_IDP + _IMMA)), nvdisasm, "SM90", tmp_path / "code.bin")
    lines = [" ".join(x.split()[1:]) for x in text.splitlines() if x.strip()]
    assert lines == ["IDP.4A.S8.U8 R37, R46, R56, RZ ;", "IMMA.16832.S8.S8 R0, R40.reuse.ROW, R4.COL, RZ ;"]


def test_link_bound_takes_the_slower_direction_and_pixels_against_the_lesser_bound():
    # dmlvk_lab/bench_models.py: a frame's link bound is its input up or its output down, whichever
    # takes longer (the two directions at once); the pixel row compares its pipelined figure with
    # min(device work, link bound) in frames/s
    from dmlvk_lab import bench_models
    link = {"bytes": 1 << 25, "h2d_staged": 20e9, "d2h_staged": 40e9, "h2d_numpy": 5e9, "d2h_numpy": 4e9,
            "h2d_numpy_first_type": 5e9, "d2h_numpy_first_type": 1e9, "staging_flags": 14, "first_type_flags": 6}
    assert bench_models.link_bound(link, 4_000_000, 16_000_000) == 4e-4          # out: 16 MB at 40 GB/s
    assert bench_models.link_bound(link, 16_000_000, 4_000_000) == 8e-4          # in: 16 MB at 20 GB/s
    rows = [{"input": [1, 1, 540, 960], "frames": 1, "device_s": 2e-4, "link_bound_s": 4e-4, "pipelined_s": 8e-4,
             "pixels_device_s": 2e-4, "pixels_link_bound_s": 1e-4, "pixels_end_to_end_s": 5e-4,
             "pixels_pipelined_s": 2.5e-4, "pixels_host_arrays_s": 4e-4, "pixels_differing": 0}]
    text = bench_models.link_markdown({"host_link": link, "rows": rows, "pixel_nodes": ["Identity"]})
    assert "host to device 20.0 GB/s, device to host 40.0 GB/s" in "\n".join(text)
    assert "| 540x960 | 1 | 2500.0 | 1250.0 | 0.50 | 5000.0 | 10000.0 | 2000.0 | 4000.0 | 0.80 | 2500.0 | 0 |" in text


def test_zoo_rows_render():
    # dmlvk_lab/bench_models.py: a zoo row's frames per second and its comparison with onnxruntime
    from dmlvk_lab import bench_models
    rows = [{"model": "QuickSRNet-Large x2", "input": [8, 1, 540, 960], "frames": 8, "device_s": 4e-3,
             "end_to_end_s": 0.1, "pixels_pipelined_s": 1e-2},
            {"model": "SRVGGNetCompact x4 (PRelu)", "input": [1, 1, 540, 960], "frames": 1, "device_s": 1e-3,
             "end_to_end_s": 2e-2, "pixels_pipelined_s": 2e-3, "elements_compared": 100, "elements_differing": 0}]
    text = bench_models.zoo_markdown(rows)
    assert "| QuickSRNet-Large x2 | 540x960 | 8 | 2000.0 | 80.0 | 800.0 |  |" in text
    assert "| SRVGGNetCompact x4 (PRelu) | 540x960 | 1 | 1000.0 | 50.0 | 500.0 | 100 of 100 |" in text
