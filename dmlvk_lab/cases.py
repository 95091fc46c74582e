"""Cases and oracle rules declared once, for the benchmark, the golden-kernel record, the report,
the fuzzer and the tests: the benchmark's depth/space grid and convolution layers (the ESPCN
network's among them), the NHWC layouts, random descriptions (the fuzzer's and the golden record's
one generator), and onnxruntime's u8 x s8 weight rule.

The onnxruntime u8 x s8 rule: onnxruntime's CPU kernels for uint8 activations and int8 weights sum
pairs of products in 16 bits on x86 CPUs without VNNI (AVX2: vpmaddubsw), which saturates with
full-range weights (69 of 400 random convolutions differed, by up to 49). With 7-bit weights
([-64, 63]) every pair fits and onnxruntime is exact. DirectML's arithmetic (and dmlvk's) is exact
int32 whatever the weights: comparisons against onnxruntime use 7-bit weights for u8 x s8, and
full-range weights are checked against the exact reference."""
from __future__ import annotations

import sys
from typing import Optional

import numpy as np

from dmlvk.enums import DataType, DepthSpaceOrder
from dmlvk.ops.depth_space import DepthToSpace1Desc, SpaceToDepth1Desc
from dmlvk.tensor import TensorDesc

MiB = 1 << 20

ORT_U8S8_WEIGHTS = (-64, 63)


def ort_weight_range(x_dtype, w_dtype) -> Optional[tuple]:
    """The weight range a comparison with onnxruntime draws from: 7 bits for uint8 x int8, else the
    type's whole range (None)."""
    return ORT_U8S8_WEIGHTS if (np.dtype(x_dtype), np.dtype(w_dtype)) == (np.dtype(np.uint8), np.dtype(np.int8)) else None


def cpu_has_vnni() -> bool:
    """Whether this x86 CPU has VNNI (onnxruntime's u8 x s8 kernels are exact there)."""
    flags = open("/proc/cpuinfo").read() if sys.platform == "linux" else ""
    return " avx512_vnni" in flags or " avx_vnni" in flags



# ---- random descriptions ------------------------------------------------------------------------

def random_layout(rng, sizes) -> Optional[list]:
    """None (packed), packed with gaps, or permuted with gaps."""
    kind = rng.integers(0, 3)
    if kind == 0:
        return None
    order = list(range(len(sizes)))[::-1] if kind == 1 else list(rng.permutation(len(sizes)))
    strides, acc = [0] * len(sizes), 1
    for d in order:
        strides[d] = acc
        acc *= sizes[d] + int(rng.integers(0, 2))
    return strides


def _random_tensor(rng, dt, sizes) -> dict:
    return {"dt": int(dt), "sizes": [int(s) for s in sizes], "strides": random_layout(rng, sizes), "total": None,
            "flags": 0}


def random_description(rng, largest: int = 3) -> dict:
    """A valid random description of one of the five operators (DEPTH_TO_SPACE, SPACE_TO_DEPTH, their
    1 versions, QUANTIZED_LINEAR_CONVOLUTION) as plain data, at FL 6_4: block sizes and the
    depth/space tensors' dimensions 1 to `largest`; convolutions of 1-2 groups, small windows,
    strides, dilations and pads, any 8-bit types, the filter scale per tensor or per channel, each
    optional tensor absent one time in four; every tensor packed, gapped or permuted. The fuzzer
    mutates it (fuzz.generate); the golden record takes it as it is (those its validation accepts)."""
    family = ["d2s", "s2d", "d2s1", "s2d1", "conv"][rng.integers(0, 5)]
    if family != "conv":
        b = int(rng.integers(1, largest + 1))
        dt = [DataType.UINT8, DataType.INT16, DataType.FLOAT32, DataType.FLOAT64][rng.integers(0, 4)]
        n, c, h, w = (int(v) for v in rng.integers(1, largest + 1, 4))
        space = (n, c, h * b, w * b)
        depth = (n, c * b * b, h, w)
        i, o = (depth, space) if family.startswith("d2s") else (space, depth)
        return {"family": family, "level": 0x6400, "block": b, "order": int(rng.integers(0, 2)),
                "tensors": {"Input": _random_tensor(rng, dt, i), "Output": _random_tensor(rng, dt, o)}}
    g = int(rng.integers(1, 3))
    cg, mg = int(rng.integers(1, 4)), int(rng.integers(1, 10))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    s, d = [int(v) for v in rng.integers(1, 3, 2)], [int(v) for v in rng.integers(1, 3, 2)]
    pa, pb = [int(v) for v in rng.integers(0, 2, 2)], [int(v) for v in rng.integers(0, 2, 2)]
    h = (kh - 1) * d[0] + 1 + int(rng.integers(0, 4))
    w = (kw - 1) * d[1] + 1 + int(rng.integers(0, 4))
    n, m = int(rng.integers(1, 3)), g * mg
    oh = (h + pa[0] + pb[0] - ((kh - 1) * d[0] + 1)) // s[0] + 1
    ow = (w + pa[1] + pb[1] - ((kw - 1) * d[1] + 1)) // s[1] + 1
    q = lambda: int([DataType.UINT8, DataType.INT8][rng.integers(0, 2)])
    xdt, wdt, ydt = q(), q(), q()
    per = lambda: [1, m, 1, 1] if rng.integers(0, 2) else [1, 1, 1, 1]
    f32, one = int(DataType.FLOAT32), (1, 1, 1, 1)
    t = {"Input": _random_tensor(rng, xdt, (n, g * cg, h, w)), "InputScale": _random_tensor(rng, f32, one),
         "InputZeroPoint": _random_tensor(rng, xdt, one), "Filter": _random_tensor(rng, wdt, (m, cg, kh, kw)),
         "FilterScale": _random_tensor(rng, f32, per()), "FilterZeroPoint": _random_tensor(rng, wdt, one),
         "Bias": _random_tensor(rng, int(DataType.INT32), (1, m, 1, 1)), "OutputScale": _random_tensor(rng, f32, one),
         "OutputZeroPoint": _random_tensor(rng, ydt, one), "Output": _random_tensor(rng, ydt, (n, m, oh, ow))}
    for opt in ("InputZeroPoint", "FilterZeroPoint", "Bias", "OutputZeroPoint"):
        if rng.integers(0, 4) == 0:
            t[opt] = None
    return {"family": "conv", "level": 0x6400, "tensors": t, "strides": s, "dilations": d, "start": pa, "end": pb,
            "groups": g}

ELEMENT_TYPES = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.FLOAT64}

# Quantized convolution layers: name, N, C, H, W, M, KH, KW, stride, pad, groups.
CONV_LAYERS = [
    ("ResNet-50 3x3 256->256 14x14", 32, 256, 14, 14, 256, 3, 3, 1, 1, 1),
    ("ResNet-50 1x1 1024->256 14x14", 32, 1024, 14, 14, 256, 1, 1, 1, 0, 1),
    ("ResNet-50 3x3 64->64 56x56", 32, 64, 56, 56, 64, 3, 3, 1, 1, 1),
    ("MobileNetV2 dw 3x3 144 56x56", 32, 144, 56, 56, 144, 3, 3, 1, 1, 144),
    ("ResNeXt-50 grouped 3x3 128->128 g32 56x56", 32, 128, 56, 56, 128, 3, 3, 1, 1, 32),
]


# The ESPCN x2 network's layers (dmlvk_lab.onnx_models.espcn at 540x960) and two of its kin: C, H = W,
# M, K, pad, groups (the golden-kernel record's rows after the benchmark's).
ESPCN_LAYERS = [(1, 540, 64, 5, 2, 1), (64, 540, 32, 3, 1, 1), (32, 540, 4, 3, 1, 1), (3, 540, 32, 3, 1, 1),
                (32, 270, 32, 3, 1, 32)]


def conv_layers(batches=(32, 1)):
    for name, n, *rest in CONV_LAYERS:
        for b in batches:
            yield (f"{name} batch {b}", b, *rest)


def depth_space_cases(sizes_bytes, extra=True):
    """(label, d2s, data type, block, order, depth-side sizes, strides kind) per case: every size,
    element size, operator, order and B = 2, 3, 4 packed; with `extra` (runs with a 64 MiB size) also NHWC at 64 MiB,
    video frames, batch 8 and 2-8 MiB tensors."""
    def depth(nbytes, eb, b, n=1, w=1024):
        c = 72 if b == 3 else 64            # channels divisible by B^2
        return (n, c, max(b, nbytes // (c * eb * w * n) // b * b), w)

    for nbytes in sizes_bytes:
        for eb, dt in ELEMENT_TYPES.items():
            for d2s in (True, False):
                for order in DepthSpaceOrder:
                    for b in (2, 3, 4):
                        yield (f"{nbytes // MiB} MiB", d2s, dt, b, order, depth(nbytes, eb, b), "packed")
    if not extra:
        return
    for eb, dt in ELEMENT_TYPES.items():
        for d2s in (True, False):
            for order in DepthSpaceOrder:
                for b in (2, 3, 4):
                    yield ("NHWC 64 MiB", d2s, dt, b, order, depth(64 * MiB, eb, b), "nhwc")
    for dt in (DataType.FLOAT32, DataType.UINT8):
        for d2s in (True, False):
            for order in DepthSpaceOrder:
                yield ("NHWC with gaps 64 MiB", d2s, dt, 2, order, depth(64 * MiB, dt.bits // 8, 2), "nhwc_gapped")
    for dt in (DataType.FLOAT32, DataType.FLOAT16, DataType.UINT8):
        for d2s in (True, False):
            for order in DepthSpaceOrder:
                yield ("1x64x540x960", d2s, dt, 2, order, (1, 64, 540, 960), "packed")
                yield ("1x12x1080x1920", d2s, dt, 2, order, (1, 12, 1080, 1920), "packed")
    for dt in (DataType.FLOAT32, DataType.UINT8):
        for d2s in (True, False):
            yield ("batch 8, 64 MiB", d2s, dt, 2, DepthSpaceOrder.COLUMN_ROW_DEPTH,
                   depth(64 * MiB, dt.bits // 8, 2, n=8, w=256), "packed")
            for mib in (2, 4, 8):
                yield (f"{mib} MiB", d2s, dt, 2, DepthSpaceOrder.DEPTH_COLUMN_ROW, depth(mib * MiB, dt.bits // 8, 2), "packed")


def nhwc_strides(sizes, gaps=False):
    """NHWC element strides; with gaps, 16 spare elements after every pixel and 64 after every row."""
    n, c, h, w = sizes
    px = c + 16 * gaps
    row = w * px + 64 * gaps
    return (h * row, 1, row, px)


def depth_space_desc(case):
    """The description of a depth_space_cases case."""
    _, d2s, dt, b, order, depth, kind = case
    n, c, h, w = depth
    space = (n, c // (b * b), h * b, w * b)
    ins, outs = (depth, space) if d2s else (space, depth)
    st = (lambda s: nhwc_strides(s, kind == "nhwc_gapped")) if kind.startswith("nhwc") else (lambda s: None)
    cls = DepthToSpace1Desc if d2s else SpaceToDepth1Desc
    return cls(TensorDesc(dt, ins, st(ins)), TensorDesc(dt, outs, st(outs)), b, order)
