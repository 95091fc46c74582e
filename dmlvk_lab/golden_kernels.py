"""The kernels dmlvk chooses, recorded: every benchmark case, seeded random descriptions (the fuzzer's
and wider ones that reach every variant), under three capability records. Re-record with
`python -m dmlvk_lab.golden_kernels` only where a change of choice is intended and measured.

Each record keeps its description as data, so the check rebuilds it without this file's generators.
`python -m dmlvk_lab.golden_kernels --against-device h200` compares a record with this machine's device."""
from __future__ import annotations

import gzip
import json
import sys

import numpy as np

from dmlvk import (DataType, DepthSpaceOrder, DepthToSpace1Desc, DepthToSpaceDesc, QuantizedLinearConvolutionDesc,
                   SpaceToDepth1Desc, SpaceToDepthDesc, TensorDesc)
from dmlvk.enums import FeatureLevel
from dmlvk.errors import ValidationError
from dmlvk.runtime.capabilities import Capabilities
from dmlvk.runtime.vkinfo import CooperativeMatrixType

from .cases import CONV_LAYERS, ESPCN_LAYERS, nhwc_strides, random_description
from .common import ROOT

GOLDEN = ROOT / "tests" / "golden" / "kernels.json.gz"      # tests/test_golden_kernels.py checks it
MiB = 1 << 20

_COMMON = {"shaderFloat16", "shaderInt64", "shaderInt16", "shaderInt8", "storageBuffer8BitAccess",
           "uniformAndStorageBuffer8BitAccess", "storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess",
           "vulkanMemoryModel", "vulkanMemoryModelDeviceScope", "subgroupSizeControl", "computeFullSubgroups",
           "shaderIntegerDotProduct", "subgroupShuffle"}
CAPABILITIES = {
    "portable": None,
    "lavapipe": Capabilities(features=frozenset(_COMMON | {"shaderFloat64"}), api_version="1.3.0", subgroup_size=8,
                             min_subgroup_size=8, max_subgroup_size=8, device_type="CPU",
                             loop_iteration_limit=65535),
    "h200": Capabilities(features=frozenset(_COMMON | {"shaderFloat64", "cooperativeMatrix"}), api_version="1.3.0",
                         subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32,
                         cooperative_matrix_types=(CooperativeMatrixType(16, 16, 32, "int8", "int8", "int32",
                                                                         "int32", False, "subgroup"),),
                         device_type="DISCRETE_GPU", max_shared_memory=48 * 1024),
}
_DS = {"d2s": DepthToSpaceDesc, "s2d": SpaceToDepthDesc, "d2s1": DepthToSpace1Desc, "s2d1": SpaceToDepth1Desc}
_CONV = ("Input", "InputScale", "InputZeroPoint", "Filter", "FilterScale", "FilterZeroPoint", "Bias",
         "OutputScale", "OutputZeroPoint", "Output")


def tensor(dt, sizes, strides=None) -> dict:
    return {"dt": int(dt), "sizes": [int(s) for s in sizes], "strides": None if strides is None else
            [int(s) for s in strides]}


def description(case: dict):
    """The dmlvk description a case's data names."""
    td = lambda t: None if t is None else TensorDesc(t["dt"], t["sizes"], t["strides"])
    t = {k: td(v) for k, v in case["tensors"].items()}
    if case["family"] == "conv":
        return QuantizedLinearConvolutionDesc(*[t[k] for k in _CONV], case["strides"], case["dilations"],
                                              case["start"], case["end"], case["groups"])
    args = [t["Input"], t["Output"], case["block"]] + ([case["order"]] if case["family"].endswith("1") else [])
    return _DS[case["family"]](*args)


def kernels(desc, caps) -> dict:
    """What a device with these capabilities runs for desc, as plain data."""
    if isinstance(desc, QuantizedLinearConvolutionDesc):
        ks, scratch = desc.plan(caps)
    else:
        ks, scratch = [desc.kernel(caps)], ()
    return {"kernels": [{"shader": k.shader, "spec": list(k.spec), "push": list(k.push), "count": k.count,
                         "slots": list(k.slots), "local_size": k.local_size,
                         "defines": [list(d) for d in k.defines]} for k in ks],
            "scratch": [int(s) for s in scratch]}


# ---- the cases ----------------------------------------------------------------------------------

def _ds_case(d2s, dt, b, order, depth, kind="packed", family=None):
    n, c, h, w = depth
    space = (n, c // (b * b), h * b, w * b)
    ins, outs = (depth, space) if d2s else (space, depth)
    if kind == "packed":
        st = lambda s: None
    elif kind == "nhwc":
        st = nhwc_strides
    elif kind == "nhwc_gapped":
        st = lambda s: nhwc_strides(s, True)
    else:
        st = kind                   # a function of the sizes
    fam = family or ("d2s1" if d2s else "s2d1")
    return {"family": fam, "block": b, "order": int(order),
            "tensors": {"Input": tensor(dt, ins, st(ins)), "Output": tensor(dt, outs, st(outs))}}


def bench_cases():
    """The depth/space benchmark's cases (every size it measures) and its convolution layers."""
    types = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.FLOAT64}

    def depth(nbytes, eb, b, n=1, w=1024):
        c = 72 if b == 3 else 64
        return (n, c, max(b, nbytes // (c * eb * w * n) // b * b), w)

    for nbytes in (1 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB):
        for eb, dt in types.items():
            for d2s in (True, False):
                for order in DepthSpaceOrder:
                    for b in (2, 3, 4):
                        yield _ds_case(d2s, dt, b, order, depth(nbytes, eb, b))
                        yield _ds_case(d2s, dt, b, order, depth(nbytes, eb, b), "nhwc")
    for dt in (DataType.FLOAT32, DataType.UINT8, DataType.FLOAT16, DataType.FLOAT64):
        for d2s in (True, False):
            for order in DepthSpaceOrder:
                for b in (2, 3, 4):
                    yield _ds_case(d2s, dt, b, order, depth(64 * MiB, dt.bits // 8, b), "nhwc_gapped")
                yield _ds_case(d2s, dt, 2, order, (1, 64, 540, 960))
                yield _ds_case(d2s, dt, 2, order, (1, 12, 1080, 1920))
                yield _ds_case(d2s, dt, 2, order, depth(64 * MiB, dt.bits // 8, 2, n=8, w=256))
                for mib in (2, 4, 8):
                    yield _ds_case(d2s, dt, 2, order, depth(mib * MiB, dt.bits // 8, 2))
    # the benchmark's layers (C, H = W, M, K, pad, groups), then the ESPCN network's
    layers = [(c, h, m, kh, pad, g) for _, _, c, h, _, m, kh, _, _, pad, g in CONV_LAYERS] + ESPCN_LAYERS
    for c, hw, m, k, pad, g in layers:
        for n in (32, 8, 1):
            for xdt, wdt in ((DataType.UINT8, DataType.INT8), (DataType.INT8, DataType.INT8),
                             (DataType.UINT8, DataType.UINT8)):
                yield _conv_case(n, c, hw, hw, m, k, k, (1, 1), (1, 1), (pad, pad), (pad, pad), g, xdt, wdt, xdt)
    # the ESPCN 3x3 64->32 layer as the ONNX runner lowers it, its input channels-last (as the first layer
    # writes it), and a 32->16 one likewise: the frames of the model benchmark
    for n in (1, 8):
        for h, w in ((540, 960), (1080, 1920)):
            for c, m in ((64, 32), (32, 16)):
                yield _conv_case(n, c, h, w, m, 3, 3, (1, 1), (1, 1), (1, 1), (1, 1), 1, DataType.UINT8, DataType.INT8,
                                 DataType.UINT8, in_strides=nhwc_strides((n, c, h, w)))


def _conv_case(n, c, h, w, m, kh, kw, s, d, pa, pb, g, xdt, wdt, ydt, in_strides=None, out_strides=None,
               per_channel=True):
    oh = (h + pa[0] + pb[0] - ((kh - 1) * d[0] + 1)) // s[0] + 1
    ow = (w + pa[1] + pb[1] - ((kw - 1) * d[1] + 1)) // s[1] + 1
    f32 = DataType.FLOAT32
    one = (1, 1, 1, 1)
    t = {"Input": tensor(xdt, (n, c, h, w), in_strides), "InputScale": tensor(f32, one),
         "InputZeroPoint": tensor(xdt, one), "Filter": tensor(wdt, (m, c // g, kh, kw)),
         "FilterScale": tensor(f32, (1, m, 1, 1) if per_channel else one),
         "FilterZeroPoint": tensor(wdt, (1, m, 1, 1) if per_channel else one),   # its scale's Sizes
         "Bias": tensor(DataType.INT32, (1, m, 1, 1)), "OutputScale": tensor(f32, one),
         "OutputZeroPoint": tensor(ydt, one), "Output": tensor(ydt, (n, m, oh, ow), out_strides)}
    return {"family": "conv", "tensors": t, "strides": list(s), "dilations": list(d), "start": list(pa),
            "end": list(pb), "groups": g}


def fuzz_cases(count: int, seed: int):
    """The fuzzer's generator without its hostile mutations (cases.random_description, dimensions and
    blocks up to 4): small descriptions of every family and layout (packed, gapped, permuted)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield random_description(rng, largest=4)


def wide_cases(count: int, seed: int):
    """Larger random descriptions that reach the channel-last, staged, tiled and lane kernels and the
    convolution's cooperative-matrix, CPU and depthwise plans."""
    rng = np.random.default_rng(seed)
    types = [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64]
    for i in range(count):
        if i % 3 < 2:
            b = int(rng.integers(2, 5))
            dt = types[rng.integers(0, 4)]
            c = int(rng.choice([1, 2, 3, 4, 8, 12, 16, 32])) * b * b
            h, w = int(rng.integers(1, 40)), int(rng.choice([4, 8, 16, 30, 64, 128, 255, 256]))
            n = int(rng.integers(1, 4))
            kind = ["packed", "nhwc", "nhwc_gapped", "nhwc", "nhwc"][rng.integers(0, 5)]
            fam = ["d2s1", "s2d1", "d2s1", "s2d1", "d2s", "s2d"][rng.integers(0, 6)]
            yield _ds_case(fam.startswith("d2s"), dt, b, int(rng.integers(0, 2)) if fam.endswith("1") else 0,
                           (n, c, h, w), kind, fam)
        else:
            g = int(rng.choice([1, 1, 1, 2, 4]))
            depthwise = rng.integers(0, 4) == 0
            cg = 1 if depthwise else int(rng.choice([1, 2, 3, 4, 8, 16, 32, 64, 96, 256]))
            mg = 1 if depthwise else int(rng.choice([1, 2, 4, 8, 16, 32, 64, 80, 128, 256]))
            if depthwise:
                g = int(rng.choice([8, 32, 64, 144]))
            k = [int(rng.integers(1, 6)), int(rng.integers(1, 6))]
            if rng.integers(0, 2):
                k[1] = k[0]
            s = [int(rng.integers(1, 3))] * 2
            d = [1, 1] if rng.integers(0, 3) else [int(rng.integers(1, 3))] * 2
            h, w = int(rng.integers(k[0] * d[0], 70)), int(rng.choice([8, 16, 31, 64, 96]) + k[1] * d[1])
            pad = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))]
            q = lambda: [DataType.UINT8, DataType.INT8][rng.integers(0, 2)]
            n = int(rng.choice([1, 1, 2, 8, 32]))
            yield _conv_case(n, g * cg, h, w, g * mg, k[0], k[1], s, d, pad, pad, g, q(), q(), q(),
                             per_channel=bool(rng.integers(0, 2)))


def all_cases():
    yield from bench_cases()
    yield from fuzz_cases(1500, 7)
    yield from wide_cases(1500, 11)


def record() -> list:
    rows = []
    for case in all_cases():
        # every benchmark layer must be valid: a case the validation refuses records nothing
        desc = description(case)
        try:
            for d in desc if isinstance(desc, tuple) else (desc,):
                d.validate(FeatureLevel.FL_6_4)
        except ValidationError:
            continue
        rows.append({"case": case, "chosen": {name: kernels(desc, caps) for name, caps in CAPABILITIES.items()}})
    return rows


def against_device(record: str) -> int:
    """Compares the record's choices under capability record `record` with what this machine's
    first Vulkan device chooses (its real capabilities): a check of the record's model of it."""
    import dmlvk
    caps = dmlvk.Device().capabilities
    rows = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    wrong = [r for r in rows if kernels(description(r["case"]), caps) != r["chosen"][record]]
    print(f"{dmlvk.Device().name}: {len(rows) - len(wrong)} of {len(rows)} descriptions choose the kernels "
          f"recorded for '{record}'")
    for r in wrong[:5]:
        print("differs:", r["case"])
    return 1 if wrong else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--against-device":
        sys.exit(against_device(sys.argv[2]))
    rows = record()
    GOLDEN.parent.mkdir(exist_ok=True)
    with gzip.open(GOLDEN, "wt") as f:
        json.dump(rows, f, separators=(",", ":"))
    print(f"{len(rows)} descriptions x {len(CAPABILITIES)} capability records -> {GOLDEN} "
          f"({GOLDEN.stat().st_size // 1024} KiB)")
