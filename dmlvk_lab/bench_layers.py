"""Each dispatch of one frame of the quantized super-resolution model against the device's floors:
bytes moved over the same run's copy bandwidth, and operations over the same run's int8 peak
(dmlvk/shaders/coopmat_peak.comp, where the device has cooperative matrices). A dispatch's floor is
the larger of the two; `x floor` says how far above it the dispatch runs in the frame.

Each dispatch is timed two ways: alone (run back to back over the same buffers, as a layer benchmark
times it) and in the frame (the frame's dispatches run in order, with their barriers, frame after
frame: each dispatch's GPU time including the wait at the barrier before it, the median over the
frames). They differ: alone, a dispatch finds its own input (and last run's output) in the L2 cache;
in the frame it finds what the dispatch before it left there, and its output's lines are written back
while later dispatches run. On the H200 the ESPCN's last layer (8 outputs an invocation) took 28 us
alone and 48 in the frame.

Bytes: the sizes of the buffers the dispatch binds, each counted once (what the floor assumes: every
input read once, the output written once); a filter-packing kernel's input binding, which it does
not read, is left out. Operations: 2 per multiply-add of a convolution's main
kernel (none for packing, layout and (de)quantization kernels)."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from dmlvk.ops.quantized_conv.variants import TABLE as CONV_TABLE
from dmlvk.runtime.commands import Program, time as time_dispatches, time_each
from dmlvk.runtime.kernel import Kernel
from .cases import MiB

PEAK_STEPS, PEAK_SUBGROUPS = 1024, 132 * 64      # enough subgroups to fill any GPU here several times
_PEAK_LOCAL = 256
COPY_LOCAL, COPY_CHUNKS = 256, 1


def copy_kernel(nbytes: int) -> Kernel:
    """The bandwidth yardstick (dmlvk/shaders/copy.comp): nbytes copied as uvec4s."""
    vectors = nbytes // 16
    return Kernel(shader="copy", spec=(COPY_CHUNKS,), push=(vectors,), count=-(-vectors // COPY_CHUNKS),
                  slots=(0, 1), local_size=COPY_LOCAL)


def copy_seconds(timer, nbytes: int, buffers, warm: bool = True) -> dict:
    """The timer's figures for copying nbytes from buffers[0] to buffers[1]."""
    src, dst = buffers
    kernel = copy_kernel(nbytes)
    return timer(lambda n: time_dispatches(timer.device, [(kernel, (src, dst))], n), warm=warm)


def own_int8_matrices(caps) -> bool:
    """Whether the device has 16 x 16 x 32 int8 cooperative matrices of its own (not emulated) on
    subgroups of 32."""
    return ((16, 16, 32) in caps.cooperative_matrix("int8", "int8", "int32") and not caps.emulated_cooperative_matrix
            and caps.subgroup_size == 32)


def int8_peak(timer) -> Optional[float]:
    """Operations a second of the device's int8 cooperative matrices (16 x 16 x 32, register-resident
    operands), or None where it has none (emulated ones do not count) or its subgroups are not 32
    wide."""
    dev = timer.device
    if not own_int8_matrices(dev.capabilities) or not dev.capabilities.int8_arithmetic:
        return None
    kernel = Kernel(shader="coopmat_peak", spec=(PEAK_STEPS,), push=(), count=PEAK_SUBGROUPS * 32, slots=(0, 1),
                    local_size=_PEAK_LOCAL, variant="int8 peak probe")
    operands = dev.upload(np.random.default_rng(0).integers(-128, 128, 1024, dtype=np.int8))
    result = dev.buffer(PEAK_SUBGROUPS * 256 * 4)
    t = timer(lambda n: time_dispatches(dev, [(kernel, (operands, result))], n))["median_s"]
    return PEAK_SUBGROUPS * PEAK_STEPS * 8 * 2 * 16 * 16 * 32 / t


def accumulator_lanes(device) -> Optional[bool]:
    """Whether the device's int32 accumulator matrices keep their elements where
    dmlvk/shaders/coopmat_lanes.glsl says (so that conv.coopmat.halo's LANES epilogue runs there rather
    than its stage), or None where it has no such matrices (emulated ones keep them so by construction)."""
    if not own_int8_matrices(device.capabilities):
        return None
    kernel = Kernel(shader="coopmat_lanes_probe", spec=(), push=(), count=32, slots=(0, 1), local_size=32,
                    variant="accumulator lanes probe")
    index = device.upload(np.arange(256, dtype=np.int32))
    found = device.buffer((32 + 256) * 4)
    Program(device, [(kernel, (index, found))]).run()
    return bool(np.all(found.numpy(np.int32, (32,)) == 1))


def copy_bandwidth(timer) -> float:
    """Bytes a second (read plus written) of the device's 64 MiB uvec4 copy."""
    n = 64 * MiB
    t = copy_seconds(timer, n, (timer.device.buffer(n), timer.device.buffer(n)))["median_s"]
    return 2 * n / t


def dispatch_ops(kernel: Kernel) -> int:
    """2 per multiply-add where the kernel is a convolution's main kernel (any variant but its steps:
    packing, reduction), else 0."""
    variant = CONV_TABLE.variants.get(kernel.variant)
    if variant is None or variant.step_of:
        return 0
    p, c = variant.push_values(kernel), variant.constants(kernel)
    n, m, oh, ow = p["out_sizes"]
    return 2 * n * m * oh * ow * p["cg"] * c["KH"] * c["KW"]


FRAMES_IN_ORDER = 40      # frames run in order to time each dispatch in the frame, at most
IN_ORDER_S = 2.0          # and fewer where they would take longer than this (8 at least)


def in_frame_seconds(timer, dispatches, frame_s: float) -> List[float]:
    """Each dispatch's GPU seconds in the frame: frames of `dispatches` (about frame_s seconds each)
    run in order in one submission with their barriers, after the timer's warm-up; per dispatch the
    median over the frames but the first quarter (at most 4) of its time since the previous
    dispatch's end (its barrier's wait in)."""
    frames = int(max(8, min(FRAMES_IN_ORDER, IN_ORDER_S / max(frame_s, 1e-9))))
    timer.warm()
    per = time_each(timer.device, dispatches, frames, barriers=True)
    return [float(v) for v in np.median(per[min(4, frames // 4):], axis=0)]


def measure_layers(timer, dispatches, bandwidth: float, peak: Optional[float]) -> List[dict]:
    """One row per dispatch of `dispatches` ((Kernel, Buffers), a frame's device work): its time
    alone ("s") and in the frame ("frame_s", in_frame_seconds), bytes, operations and floors."""
    rows = []
    alone = [timer(lambda n: time_dispatches(timer.device, [(kernel, bufs)], n))["median_s"]
             for kernel, bufs in dispatches]
    in_frame = in_frame_seconds(timer, dispatches, sum(alone))
    for (kernel, bufs), t, frame_s in zip(dispatches, alone, in_frame):
        read = bufs[1:] if kernel.variant.endswith(".pack_filter") else bufs   # binds the input, reads it not
        nbytes = sum({id(b): b.nbytes for b in read if b is not None}.values())
        ops = dispatch_ops(kernel)
        memory_s, ops_s = nbytes / bandwidth, (ops / peak if peak else 0.0)
        rows.append({"variant": kernel.variant or kernel.shader, "shader": kernel.shader, "items": kernel.count,
                     "bytes": int(nbytes), "ops": int(ops), "s": t, "frame_s": frame_s,
                     "memory_floor_s": memory_s, "ops_floor_s": ops_s,
                     "floor_s": max(memory_s, ops_s)})
    return rows


def markdown(section: dict) -> List[str]:
    peak = section.get("int8_peak_ops")
    out = ["## One frame, dispatch by dispatch, against the floors", "",
           f"Same run: copy bandwidth {section['copy_bandwidth'] / 1e9:,.0f} GB/s (64 MiB uvec4 copy, read + written); "
           + (f"int8 cooperative-matrix peak {peak / 1e12:,.0f} TOPS (register-resident 16x16x32)." if peak
              else "no int8 cooperative matrices (memory floor only).")
           + {True: " Accumulator elements where dmlvk/shaders/coopmat_lanes.glsl says (LANES epilogues run).",
              False: " Accumulator elements elsewhere than dmlvk/shaders/coopmat_lanes.glsl says (LANES epilogues "
                     "fall back to the stage).", None: ""}[section.get("accumulator_lanes")],
           "Bytes: the buffers a dispatch binds, each once; operations: 2 a multiply-add of a convolution's main "
           "kernel. Floor: the larger of bytes / bandwidth and operations / peak. us alone: the dispatch run "
           "back to back over the same buffers; us in the frame: the frame's dispatches run in order, frame after "
           "frame, with their barriers (each dispatch's time including its barrier's wait; the median over the "
           "frames); x floor and the percentages are of the time in the frame.", ""]
    for frame in section["frames"]:
        rows = frame["rows"]
        # (results from before the in-frame column: the ratios of the time alone)
        framed = all("frame_s" in r for r in rows)
        key = "frame_s" if framed else "s"
        total, alone = sum(r[key] for r in rows), sum(r["s"] for r in rows)
        floor = sum(r["floor_s"] for r in rows)
        out += [f"### {frame['model'] + ', ' if frame.get('model') else ''}{frame['input'][2]}x{frame['input'][3]}, "
                f"batch {frame['input'][0]}: "
                + (f"{total * 1e6:,.1f} us of dispatches in the frame ({alone * 1e6:,.1f} alone)" if framed
                   else f"{total * 1e6:,.1f} us of dispatches alone (not timed in the frame)")
                + f", floor {floor * 1e6:,.1f} us ({total / floor:.1f}x)", "",
                "| dispatch | MB | GOP | us alone | us in the frame | floor us | x floor | % of memory floor | % of int8 peak |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in rows:
            t = r[key]
            pk = f"{100 * r['ops_floor_s'] / t:.1f}" if r["ops_floor_s"] else ""
            framed_us = f"{t * 1e6:,.1f}" if framed else ""
            out.append(f"| {r['variant']} | {r['bytes'] / 1e6:,.1f} | {r['ops'] / 1e9:,.2f} | {r['s'] * 1e6:,.1f} | "
                       f"{framed_us} | {r['floor_s'] * 1e6:,.1f} | {t / r['floor_s']:.1f} | "
                       f"{100 * r['memory_floor_s'] / t:.1f} | {pk} |")
        out.append("")
    return out
