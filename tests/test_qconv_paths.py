"""QUANTIZED_LINEAR_CONVOLUTION's specialised paths: the depthwise tile kernel (any device) and the
cooperative-matrix path (int8 tensor units): which descriptions and devices take them, and bit for
bit against dmlvk.reference, the portable shaders and onnxruntime. The cooperative-matrix tests
run on a device that lists int8 x int8 -> int32 16x16x32 subgroup matrices."""
import dataclasses

import numpy as np
import pytest

import dmlvk
from dmlvk import DataType, QuantizedLinearConvolutionDesc, TensorDesc, ValidationError, reference
from dmlvk.enums import TensorFlags
from dmlvk.ops.quantized_conv import (TABLE, QuantizedLinearConvolutionOperator, constant_filter, most_taps,
                                      prepare_call)
from dmlvk.ops.base import array_binding
from dmlvk.ops.quantized_conv.routines import READS_CHANNELS_LAST
from dmlvk_lab.bench_layers import accumulator_lanes
from dmlvk_lab.cases import ort_weight_range
from dmlvk_lab.oracles import onnx_qlinearconv_model, random_ints, random_window, run_onnxruntime
from dmlvk.runtime.capabilities import Capabilities
from dmlvk.runtime.commands import Program
from dmlvk.runtime.vkinfo import CooperativeMatrixType

COOPMAT_MIN_CHANNELS = TABLE.tuning["COOPMAT_MIN_CHANNELS"]
C = lambda kernel: TABLE[kernel.variant].constants(kernel)      # its constants by name
COOPMAT_MIN_INPUT_CHANNELS = TABLE.tuning["COOPMAT_MIN_INPUT_CHANNELS"]
FAST = ["qconv_pack_input", "qconv_pack_filter", "qlinear_conv_coopmat"]
U8, I8, F32 = DataType.UINT8, DataType.INT8, DataType.FLOAT32


def coopmat_caps(subgroup=32, k=32):
    t = CooperativeMatrixType(16, 16, k, "int8", "int8", "int32", "int32", False, "subgroup")
    return Capabilities(features=frozenset({"cooperativeMatrix", "shaderInt8", "subgroupShuffle"}), subgroup_size=subgroup,
                        min_subgroup_size=subgroup, max_subgroup_size=subgroup, cooperative_matrix_types=(t,))


def conv_desc(n, c, h, w, m, kh, kw, groups=1, out_strides=None, pads=(0, 0), strides=(1, 1), dil=(1, 1),
              x_dt=U8, w_dt=I8):
    d = QuantizedLinearConvolutionDesc(
        TensorDesc(x_dt, (n, c, h, w)), TensorDesc(F32, (1, 1, 1, 1)), None,
        TensorDesc(w_dt, (m, c // groups, kh, kw)), TensorDesc(F32, (1, 1, 1, 1)), None, None,
        TensorDesc(F32, (1, 1, 1, 1)), None, None, strides=strides, dilations=dil, start_padding=pads,
        end_padding=pads, group_count=groups)
    return dataclasses.replace(d, output_tensor=TensorDesc(U8, d.output_sizes(), out_strides))


def test_plan_takes_the_fast_path_only_where_it_fits():
    caps = coopmat_caps()
    d = conv_desc(2, 40, 9, 7, 48, 3, 3, pads=(1, 1), strides=(2, 1), dil=(1, 2))
    kernels, scratch = d.plan(caps)
    assert [k.shader for k in kernels] == FAST + ["qlinear_conv_splitk"]     # 1 output tile: split-K
    assert C(kernels[2])["SPLIT"] == 9 // 2                        # 9 K steps of 64: slices of 2 steps
    n, oh, ow = 2, 5, 5
    hp, wp = (oh - 1) * 2 + 2 + 1, (ow - 1) * 1 + 2 * 2 + 1
    assert scratch[0] == n * hp * wp * 64                      # channels padded to 64 (multiple of 32)
    assert scratch[1] == ((2 * 48 + 3) & ~3) * 4 + 64 * (-(-9 * 64 // 64) * 64)
    assert scratch[2] == 4 * (64 + 16) * 128 * 4                # partial tiles and window sums
    assert C(kernels[-1])["PACKED_OUT"] == 0                          # OH * OW = 25: per-byte stores
    big = conv_desc(32, 64, 28, 28, 64, 3, 3, pads=(1, 1))      # 196 tiles: no split
    assert [k.shader for k in big.plan(caps)[0]] == FAST and C(big.plan(caps)[0][-1])["SPLIT"] == 1
    assert [k.shader for k in d.plan(None)[0]] == ["qlinear_conv_gemm"]
    assert d.plan(None)[1] == ()
    for other in (caps.without(["cooperativeMatrix"]), caps.without(["shaderInt8"]), coopmat_caps(subgroup=64),
                  coopmat_caps(k=16)):
        assert len(d.plan(other)[0]) == 1, other
    narrow = conv_desc(1, 40, 8, 8, COOPMAT_MIN_CHANNELS - 1, 3, 3)
    shallow = conv_desc(1, COOPMAT_MIN_INPUT_CHANNELS - 1, 8, 8, 32, 3, 3)
    depthwise = conv_desc(1, 64, 8, 8, 128, 3, 3, groups=64)       # two output channels per group
    for desc in (narrow, shallow, depthwise):
        assert len(desc.plan(caps)[0]) == 1, desc
    packed = conv_desc(1, 16, 4, 4, 16, 1, 1)
    assert C(packed.plan(caps)[0][-1])["PACKED_OUT"] == 2               # packed NCHW, OH * OW = 16: 16 bytes
    assert C(conv_desc(1, 16, 2, 6, 16, 1, 1).plan(caps)[0][-1])["PACKED_OUT"] == 1    # OH * OW = 12: words
    nhwc = conv_desc(1, 16, 4, 4, 16, 1, 1, out_strides=(256, 1, 64, 16))
    assert C(nhwc.plan(caps)[0][-1])["PACKED_OUT"] == 0
    small = conv_desc(1, 16, 8, 8, TABLE.tuning["COOPMAT_SMALL_TILE_CHANNELS"], 1, 1)
    assert C(small.plan(caps)[0][-1])["WM_SPEC"] == 1 and ("WM_FIXED", 1) in small.plan(caps)[0][-1].defines
    assert small.plan(caps)[1][1] == ((2 * 32 + 3) & ~3) * 4 + 32 * 64               # 32-channel tiles
    assert C(small.plan(caps, tuning={"COOPMAT_SMALL_TILE_CHANNELS": 0})[0][-1])["WM_SPEC"] == 2
    assert C(conv_desc(1, 16, 8, 8, 33, 1, 1).plan(caps)[0][-1])["WM_SPEC"] == 2
    assert C(conv_desc(1, 16, 8, 8, 64, 1, 1).plan(caps)[0][-1])["WM_SPEC"] == 2     # 64-channel tiles
    assert C(conv_desc(1, 16, 8, 8, 65, 1, 1).plan(caps)[0][-1])["WM_SPEC"] == 4     # 128-channel tiles


@pytest.mark.parametrize("w_dt,zps,flag", [(I8, [0, 0], 0), (I8, [0, 3], 1), (U8, [128, 128], 0),
                                          (U8, [128, 100], 1)])
def test_window_sum_flag(device, w_dt, zps, flag):
    # The fast path adds cw[m] * (window sum) only when some cw = (128 or 0) - wZP[m] is nonzero.
    d = QuantizedLinearConvolutionDesc(
        TensorDesc(U8, (1, 2, 3, 3)), TensorDesc(F32, (1, 1, 1, 1)), None, TensorDesc(w_dt, (2, 2, 1, 1)),
        TensorDesc(F32, (1, 1, 1, 1)), TensorDesc(w_dt, (1, 2, 1, 1)), None, TensorDesc(F32, (1, 1, 1, 1)),
        None, TensorDesc(U8, (1, 2, 3, 3)))
    op = QuantizedLinearConvolutionOperator(device, d)
    one = np.ones(1, np.float32).view(np.uint8)
    srcs = {1: one, 2: None, 4: one, 5: np.array(zps, w_dt.numpy_dtype).view(np.uint8), 6: None, 7: one, 8: None}
    params = op._parameters(srcs)
    assert params.size == 3 + 3 * 2 and params[-1] == flag


# ---- depthwise ----------------------------------------------------------------------------------

def test_depthwise_plan():
    caps = coopmat_caps()
    d = conv_desc(2, 24, 30, 70, 24, 3, 3, groups=24, pads=(1, 1))
    for c in (None, caps):
        k, = d.plan(c)[0]
        assert k.shader == "qlinear_conv_depthwise" and C(k)["PACKED_OUT"] == 0      # OW = 70: bytes
        assert C(k)["TILE"] == 18 * 66 + 9 and C(k)["WORD_ROWS"] == 0               # the window and the taps;
                                                                            # rows of 70: not words
    rows, = conv_desc(1, 8, 8, 8, 8, 3, 3, groups=8, pads=(1, 2), dil=(1, 2)).plan(None)[0]  # word rows
    assert rows.shader == "qlinear_conv_depthwise_rows" and (C(rows)["SX"], C(rows)["DX"], C(rows)["SHIFT"]) == (1, 2, 2)    # SX DX SHIFT
    assert rows.count == 8 * 8 and [C(rows)[n] for n in ("OPT", "INT32_OUT", "CG", "ROWS")] == [8, 0, 1, 1]   # C * OH rows of OW = 8: one invocation each
    # a batch of MobileNetV2's: 8 outputs of 14 rows an invocation (32 * 144 * 7 * 4 >= 96K invocations)
    walk, = conv_desc(32, 144, 56, 56, 144, 3, 3, groups=144, pads=(1, 1)).plan(None)[0]
    assert [C(walk)[n] for n in ("OPT", "INT32_OUT", "CG", "ROWS")] == [8, 0, 1, 14] and walk.count == 32 * 144 * 7 * 4
    wide = conv_desc(1, 8, 8, 80, 8, 3, 5, groups=8, pads=(0, 2), strides=(2, 2))   # 16 outputs: 3 rows of 10 words
    assert wide.plan(None)[0][0].shader == "qlinear_conv_depthwise_rows" and [C(wide.plan(None)[0][0])[n] for n in ("SX", "DX", "SHIFT", "OPT")] == [2, 1, 2, 16]
    wider = conv_desc(1, 8, 8, 80, 8, 5, 5, groups=8, strides=(1, 4), dil=(1, 8))  # 5 rows of 12 words > 48
    assert wider.plan(None)[0][0].shader == "qlinear_conv_depthwise"
    nhwc = conv_desc(1, 8, 8, 8, 8, 3, 3, groups=8, pads=(1, 1), out_strides=(512, 1, 64, 8))
    assert nhwc.plan(None)[0][0].shader == "qlinear_conv_depthwise" and [C(nhwc.plan(None)[0][0])[n] for n in ("PACKED_OUT", "TILE", "WORD_ROWS")] == [0, 18 * 72 + 9, 1]
    huge_window = conv_desc(1, 4, 64, 300, 4, 3, 3, groups=4, strides=(4, 4))
    assert huge_window.plan(None)[0][0].shader == "qlinear_conv"


# type combinations onnxruntime's CPU QLinearConv takes (input, filter, output)
ORT_TYPES = ((np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8), (np.uint8, np.int8, np.uint8))


def depthwise_case(device, rng, types, n, c, h, w, kernel, strides, dilations, pads, shared_wzp, ort, cg=1, mg=1):
    """One random depthwise layer (c groups; or narrow groups of cg input and mg output channels)
    through dmlvk, against the reference and (ort, where onnxruntime takes the types)
    onnxruntime; returns the kernel that ran it."""
    x_dt, w_dt, y_dt = types
    m = c * mg
    compare = ort and tuple(types) in ORT_TYPES
    w_lo, w_hi = (compare and ort_weight_range(x_dt, w_dt)) or (None, None)
    x, wt = random_ints(rng, x_dt, (n, c * cg, h, w)), random_ints(rng, w_dt, (m, cg) + tuple(kernel), w_lo, w_hi)
    wzp = np.full(m, random_ints(rng, w_dt, ()), w_dt) if shared_wzp else random_ints(rng, w_dt, (m,))
    args = (x, 0.02, random_ints(rng, x_dt, ()), wt, rng.uniform(0.001, 0.05, m).astype(np.float32), wzp,
            rng.integers(-3000, 3000, m).astype(np.int32), 0.7 * cg, random_ints(rng, y_dt, ()))
    kwargs = dict(strides=strides, dilations=dilations, start_padding=pads[0], end_padding=pads[1], group_count=c)
    op_desc = dmlvk.ops.quantized_conv.prepare_call(*args, **kwargs, output_dtype=None, device=device)[0].desc
    k = planned(device, op_desc)[0]
    got = dmlvk.quantized_linear_convolution(*args, **kwargs, device=device)
    assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)), kwargs
    if compare:
        model, feeds = onnx_qlinearconv_model(args, kwargs, np.dtype(y_dt))
        assert np.array_equal(got, run_onnxruntime(model, feeds)), kwargs
    return k


@pytest.mark.parametrize("types", [(np.uint8, np.uint8, np.uint8), (np.uint8, np.int8, np.int8),
                                   (np.int8, np.int8, np.int8), (np.int8, np.uint8, np.uint8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_depthwise_kernel_is_exact(device, rng, types):
    for i in range(8):
        c = int(rng.integers(1, 20))
        kh, kw = (int(v) for v in rng.integers(1, 6, 2))
        dil = tuple(int(v) for v in rng.integers(1, 3, 2))
        st = tuple(int(v) for v in rng.integers(1, 3, 2))
        p0, p1 = (tuple(int(v) for v in rng.integers(0, 3, 2)) for _ in range(2))
        h = int(rng.integers(max(1, (kh - 1) * dil[0] + 1 - p0[0] - p1[0]), 40))
        w = int(rng.integers(max(1, (kw - 1) * dil[1] + 1 - p0[1] - p1[1]), 150))
        w += (-w % 4) * (i % 2)           # odd cases: rows of whole words (read a word at a time)
        n = int(rng.integers(1, 3))
        k = depthwise_case(device, rng, types, n, c, h, w, (kh, kw), st, dil, (p0, p1), i % 2, i % 2)
        assert k.shader.startswith("qlinear_conv_depthwise")


# The rows kernel's two ways to multiply, as tuning: float32 products (the dot-product variant left
# out), or packed 4 x 8-bit dot products wherever they apply (lavapipe has them but does not choose
# them: DEPTHWISE_DOT_ON_CPU).
PRODUCTS = {"float32": {"conv.depthwise.dot": False}, "dot": {"DEPTHWISE_DOT_ON_CPU": True}}


@pytest.fixture(params=sorted(PRODUCTS))
def products(request, device):
    """The rows kernel's two ways to multiply, on any device that has both (the device's operators
    within choose so)."""
    if request.param == "dot" and not device.capabilities.integer_dot_product:
        pytest.skip("the device has no packed integer dot products")
    with device.variants(tuning=PRODUCTS[request.param]):
        yield request.param


def planned(device, desc):
    """The kernels the device's create_operator chooses for desc (within its variants() choice)."""
    return device.create_operator(desc).kernels


def multiplied_as(k, products, kw, dil_w):
    """Whether rows kernel k multiplies as `products` asks: dot products wherever they apply
    (filters at most 4 taps wide, horizontal dilation 1), float32 products otherwise."""
    return (("DOT", 1) in k.defines) == (products == "dot" and kw <= 4 and dil_w == 1)


def word_row_window(rng, kernel, pad_hi, size_hi):
    """Random dilations, strides, pads and an input size of whole-word rows for a kernel of
    `kernel` taps, or None where the output width is not a positive multiple of 4."""
    (kh, kw) = kernel
    dil = tuple(int(v) for v in rng.integers(1, 3, 2))
    st = tuple(int(v) for v in rng.integers(1, 3, 2))
    p0, p1 = (tuple(int(v) for v in rng.integers(0, pad_hi, 2)) for _ in range(2))
    h, w = int(rng.integers(1, size_hi)), 4 * int(rng.integers(1, size_hi))
    oh = (h + p0[0] + p1[0] - (kh - 1) * dil[0] - 1) // st[0] + 1
    ow = (w + p0[1] + p1[1] - (kw - 1) * dil[1] - 1) // st[1] + 1
    if oh < 1 or ow < 1 or ow % 4:
        return None
    return dil, st, (p0, p1), h, w


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                   (np.uint8, np.uint8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_depthwise_rows_kernel_is_exact(device, rng, types, products):
    """qlinear_conv_depthwise_rows.comp (word-aligned rows, OW a multiple of 4) on random layers:
    filter sizes, strides, dilations and paddings (every window shift), per-channel and shared
    zero points, batches; rows of several invocations with a partial last one; against the
    reference and onnxruntime."""
    shifts, done = set(), 0
    while done < 10:
        kernel = tuple(int(v) for v in rng.integers(1, 6, 2))
        window = word_row_window(rng, kernel, 4, 20)
        if window is None:
            continue
        dil, st, pads, h, w = window
        c, n = int(rng.integers(1, 12)), int(rng.integers(1, 3))
        k = depthwise_case(device, rng, types, n, c, h, w, kernel, st, dil, pads, done % 2, done % 3 == 0)
        assert k.shader == "qlinear_conv_depthwise_rows" and multiplied_as(k, products, kernel[1], dil[1]), k
        shifts.add(C(k)["SHIFT"])
        done += 1
    assert len(shifts) >= 3


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                   (np.uint8, np.uint8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_depthwise_rows_kernel_walks(device, rng, types, products):
    """With vertical stride and dilation 1 the rows kernel's invocations walk down several output
    rows (KH rows of sums rotating in registers): random depthwise and narrow-group layers, walking
    down every output row or down strips with a shorter last one, any horizontal stride, dilation
    and padding; against the reference and onnxruntime."""
    whole = ragged = done = 0
    while done < 8:
        cg, mg = (1, 1) if done % 2 == 0 else (int(rng.integers(2, 5)), int(rng.integers(1, 3)))
        kernel = tuple(int(v) for v in rng.integers(1, 6, 2))
        window = word_row_window(rng, kernel, 4, 24)
        if cg * kernel[0] * kernel[1] > 64 or window is None:
            continue
        dil, st, pads, h, w = window
        dil, st = (1, dil[1]), (1, st[1])
        oh = h + pads[0][0] + pads[1][0] - kernel[0] + 1
        if oh < 4:
            continue
        groups, n = int(rng.integers(1, 6)), int(rng.integers(1, 3))
        ow = (w + pads[0][1] + pads[1][1] - (kernel[1] - 1) * dil[1] - 1) // st[1] + 1
        strips = 1 if done % 3 == 0 else 3
        walking = dict(PRODUCTS[products], DEPTHWISE_WALK_INVOCATIONS=n * groups * mg * -(-ow // 8) * strips,
                       DEPTHWISE_WALK_ON_CPU=True)        # lavapipe walks too
        with device.variants(tuning=walking):
            k = depthwise_case(device, rng, types, n, groups, h, w, kernel, st, dil, pads, done % 2,
                               done % 3 == 0, cg=cg, mg=mg)
        rows = -(-oh // strips)
        assert k.shader == "qlinear_conv_depthwise_rows" and C(k)["OPT"] == 8 and C(k)["ROWS"] == rows, k
        assert multiplied_as(k, products, kernel[1], dil[1]), k
        whole += strips == 1
        ragged += oh % rows != 0
        done += 1
    assert whole and ragged, (whole, ragged)


def test_kernel_numbers_from_numpy(device, rng):
    """A kernel whose counts come out of numpy arithmetic (here from a tuning constant set to a numpy
    integer) runs like one of Python ints: numpy integers that reached Kompute as workgroup counts
    crashed lavapipe's pipeline creation."""
    with device.variants(tuning=dict(DEPTHWISE_WALK_INVOCATIONS=np.int64(90), DEPTHWISE_WALK_ON_CPU=True)):
        k = depthwise_case(device, rng, (np.uint8, np.int8, np.uint8), 2, 5, 8, 72, (3, 4), (1, 1), (1, 2),
                           ((1, 0), (2, 2)), 0, False)
    assert C(k)["ROWS"] > 1 and all(type(v) is int for v in k.spec + k.push + (k.count,)), k


@pytest.mark.parametrize("walk", [False, True], ids=["one-row", "walking"])
def test_depthwise_rows_kernel_extremes(device, walk, products):
    """The rows kernel's sums at their limit, one output row an invocation and walking down the
    rows, with either way to multiply: 64 taps of (255 - 0) * (-128 - 127) each (-4,161,600, just
    inside 2^22; 8 x 8 taps, too wide for the dot products: 8 x 4 taps take them, and
    test_narrow_groups_rows_kernel_limits has 64 products of 4 taps' width); biases that bring the
    full windows' sums near 0 under a multiplier of 1; biases that make the int32 sum wrap (a
    multiplier of 1e-7 keeps the wrapped sums in range); and 65 taps (the tile kernel)."""
    walking = dict(DEPTHWISE_WALK_INVOCATIONS=1, DEPTHWISE_WALK_ON_CPU=True) if walk else {}  # every row in one walk
    with device.variants(tuning={**PRODUCTS[products], **walking}):
        extremes(device, walk, products)


def extremes(device, walk, products):
    for kh, kw, shader in ((8, 8, "qlinear_conv_depthwise_rows"), (8, 4, "qlinear_conv_depthwise_rows"),
                           (5, 13, "qlinear_conv_depthwise")):
        c = 3
        x = np.full((2, c, 12, 24), 255, np.uint8)
        wt = np.full((c, 1, kh, kw), -128, np.int8)
        wt[1, 0, 0, 0] = 5                 # channel 1's window sums: 255 * (127 - 5) = 33,915 less
        cases = ((np.array([0, 17, -9], np.int32), 1e-6, 128),
                 (255 * 255 * kh * kw + np.array([37, -33_915 - 50, 0], np.int32), 0.5, 128),
                 (np.array([-(2**31), -(2**31) + 3_000_000, 2**31 - 1 - 3_000_000], np.int32), 5e-8, 0))
        for bias, w_scale, y_zp in cases:
            args = (x, 0.5, np.uint8(0), wt, np.float32(w_scale), np.int8(127), bias, 0.25, np.uint8(y_zp))
            kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 2),
                          end_padding=(2, {8: 1, 4: 1, 13: 2}[kw]), group_count=c)      # OW = 20, 24 or 16
            op_desc = dmlvk.ops.quantized_conv.prepare_call(*args, **kwargs, output_dtype=None, device=device)[0].desc
            k = planned(device, op_desc)[0]
            assert k.shader == shader and (shader != "qlinear_conv_depthwise_rows" or (C(k)["ROWS"] > 1) == walk), k
            assert shader != "qlinear_conv_depthwise_rows" or multiplied_as(k, products, kw, 1), k
            got = dmlvk.quantized_linear_convolution(*args, **kwargs, device=device)
            want = reference.quantized_linear_convolution(*args, np.uint8, **kwargs)
            assert np.array_equal(got, want), (kh, kw, bias)
            inner = want[(want > 0) & (want < 255)]
            assert len(np.unique(inner)) >= 2, "a case that saturates everywhere tells nothing"


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                   (np.uint8, np.uint8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_narrow_groups_rows_kernel_is_exact(device, rng, types, products):
    """Groups of 2-7 input channels (and 1-5 output channels) take the rows kernel too, looping over
    the group's input channels, up to 64 products an output: random layers as for depthwise ones,
    against the reference and onnxruntime."""
    done = 0
    while done < 8:
        cg, mg = int(rng.integers(2, 8)), int(rng.integers(1, 6))
        kernel = tuple(int(v) for v in rng.integers(1, 5, 2))
        if cg * kernel[0] * kernel[1] > 64:
            continue
        window = word_row_window(rng, kernel, 3, 16)
        if window is None:
            continue
        dil, st, pads, h, w = window
        groups, n = int(rng.integers(1, 6)), int(rng.integers(1, 3))
        k = depthwise_case(device, rng, types, n, groups, h, w, kernel, st, dil, pads, done % 2,
                           done % 3 == 0, cg=cg, mg=mg)
        assert k.shader == "qlinear_conv_depthwise_rows" and multiplied_as(k, products, kernel[1], dil[1]), k
        done += 1


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                   (np.uint8, np.uint8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_single_input_channel_rows_kernel_is_exact(device, rng, types):
    """One input channel to many output channels (a super-resolution network's first layer, 5 x 5
    1 -> 64 there) through the rows kernel, as GPUs run it (forced here: CPU devices take their own
    kernel from 8 output channels): random windows, 2 to 64 output channels, one group or several,
    with both ways to multiply where the device has dot products; against the reference."""
    ways = ["conv.depthwise.rows"] + (["conv.depthwise.dot"] if device.capabilities.integer_dot_product else [])
    done = 0
    while done < 6:
        kernel = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        window = word_row_window(rng, kernel, 3, 16)
        if window is None:
            continue
        dil, st, pads, h, w = window
        way = ways[done % len(ways)]
        if way == "conv.depthwise.dot" and (kernel[1] > 4 or dil[1] != 1):
            way = "conv.depthwise.rows"
        groups, mg = int(rng.choice([1, 1, 2])), int(rng.choice([2, 8, 16, 64]))
        with device.variants(force=way):
            k = depthwise_case(device, rng, types, int(rng.integers(1, 3)), groups, h, w, kernel, st, dil, pads,
                               done % 2, False, cg=1, mg=mg)
        assert k.variant == way, k
        done += 1


def test_narrow_groups_rows_kernel_limits(device, products):
    """Narrow groups at the rows kernel's limit: 4 input channels x 4 x 4 taps = 64 products of
    (255 - 0) * (-128 - 127) each, exact; 4 x 17 = 68 products take another kernel; groups of
    8 input channels are not narrow."""
    for cg, (kh, kw), rows in ((4, (4, 4), True), (4, (1, 17), False), (8, (2, 2), False)):
        end_w = (-(24 + 8 - kw + 1)) % 4 + 4      # OW a multiple of 4
        groups, mg = 3, 2
        x = np.full((2, groups * cg, 12, 24), 255, np.uint8)
        wt = np.full((groups * mg, cg, kh, kw), -128, np.int8)
        wt[1, 0, 0, 0] = 5
        args = (x, 0.5, np.uint8(0), wt, np.float32(1e-6), np.int8(127), np.array([0, 17, -9, 5, 0, 1], np.int32),
                0.25, np.uint8(128))
        kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 8), end_padding=(2, end_w),
                      group_count=groups)
        op_desc = dmlvk.ops.quantized_conv.prepare_call(*args, **kwargs, output_dtype=None, device=device)[0].desc
        k = planned(device, op_desc)[-1]
        assert (k.shader == "qlinear_conv_depthwise_rows") == rows, (cg, kh, kw, k.shader)
        assert not rows or multiplied_as(k, products, kw, 1), k
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, device=device)
        want = reference.quantized_linear_convolution(*args, np.uint8, **kwargs)
        assert np.array_equal(got, want), (cg, kh, kw)
        inner = want[(want > 0) & (want < 255)]
        assert len(np.unique(inner)) >= 2, "a case that saturates everywhere tells nothing"


@pytest.mark.parametrize("walk", [False, True], ids=["one-row", "walking"])
def test_depthwise_rows_zero_points_and_biases(device, walk, products):
    """Every input/filter type pair, with filter zero points that the dot products' int8 shift
    removes (0 for int8 filters, 128 for uint8 ones: no window sums) and others (window sums), input
    zero points at 0 and at the extremes, biases below 2^22 (the exact float sum) and beyond
    (float(a) of the wrapping int32 sum), signed and unsigned outputs, filters 1 to 4 taps wide and
    strides 1 and 2, and two groups of 3 input channels: against the reference."""
    walking = dict(DEPTHWISE_WALK_INVOCATIONS=1, DEPTHWISE_WALK_ON_CPU=True) if walk else {}
    with device.variants(tuning={**PRODUCTS[products], **walking}):
        zero_points_and_biases(device, walk, products)


def zero_points_and_biases(device, walk, products):
    rng = np.random.default_rng(5)
    cases = 0
    for x_dt, w_dt in ((np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8), (np.int8, np.uint8)):
        xi, wi = np.iinfo(x_dt), np.iinfo(w_dt)
        shift = 0 if w_dt == np.int8 else 128
        # (filter zero points, input zero point, |bias| range, output type and scale, taps, stride,
        # input channels a group)
        for wzps, xzp, (b_lo, b_hi), (y_dt, y_scale), (kh, kw), sw, cg in (
                ([shift] * 4, xi.min, (0, 3000), (np.uint8, 0.4), (3, 3), 1, 1),
                ([shift, shift + 1, wi.max, wi.min], xi.max, (0, 3000), (np.int8, 0.4), (2, 4), 1, 1),
                ([wi.min, shift, shift, wi.max], 0, (2**22, 2**22 + 2**20), (np.uint8, 100.0), (3, 1), 2, 1),
                ([shift] * 2, xi.max // 2, (2**22, 2**23), (np.int8, 100.0), (1, 2), 1, 3)):
            groups = len(wzps)                     # one output channel a group
            x = rng.integers(xi.min, xi.max + 1, (2, groups * cg, 9, 16), dtype=x_dt)
            wt = rng.integers(wi.min, wi.max + 1, (groups, cg, kh, kw), dtype=w_dt)
            bias = (rng.integers(b_lo, b_hi, groups) * np.resize([1, -1], groups)).astype(np.int32)
            end_w = next(e for e in range(8) if ((16 + 1 + e - kw) // sw + 1) % 4 == 0)    # OW of whole words
            kwargs = dict(strides=(1, sw), dilations=(1, 1), start_padding=(1, 1), end_padding=(1, end_w),
                          group_count=groups)
            args = (x, np.float32(0.03), x_dt(xzp), wt, rng.uniform(0.001, 0.05, groups).astype(np.float32),
                    np.array(wzps, w_dt), bias, np.float32(y_scale), y_dt(0 if y_dt == np.int8 else 128))
            op_desc = prepare_call(*args, **kwargs, output_dtype=None, device=device)[0].desc
            k = planned(device, op_desc)[0]
            assert k.shader == "qlinear_conv_depthwise_rows" and (C(k)["ROWS"] > 1) == walk, k
            assert multiplied_as(k, products, kw, 1), k
            got = dmlvk.quantized_linear_convolution(*args, **kwargs, device=device)
            want = reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)
            assert np.array_equal(got, want), (x_dt, w_dt, wzps, xzp, b_lo, kh, kw, sw, cg)
            inner = want[(want > np.iinfo(y_dt).min) & (want < np.iinfo(y_dt).max)]
            assert len(np.unique(inner)) >= 3, "a case that saturates everywhere tells nothing"
            cases += 1
    assert cases == 16


@pytest.mark.parametrize("out_kind", ["nhwc", "rows"])
def test_depthwise_padded_input_rows(device, rng, out_kind):
    # An input with rows of 13 padded to 16 (read a word at a time, the last word's tail left
    # out, whatever it holds), end padding 4 (OW = 16), into an output whose gaps stay untouched:
    # NHWC with a fifth channel slot (byte stores of the tile kernel) or NCHW rows of 16 pitched
    # at 20 (word stores of the rows kernel).
    n, c, h, w = 2, 4, 9, 13
    x_mem = rng.integers(0, 256, (n, c, h, w + 3), dtype=np.uint8)
    wt = rng.integers(-128, 128, (c, 1, 3, 3), dtype=np.int8)
    s = lambda dt: TensorDesc(dt, (1, 1, 1, 1))
    oh, ow = 9, 16
    out_strides, slot_shape, nchw = {
        "nhwc": ((oh * ow * 5, 1, ow * 5, 5), (n, oh, ow, 5), lambda o: o[..., :4].transpose(0, 3, 1, 2)),
        "rows": ((c * oh * 20, oh * 20, 20, 1), (n, c, oh, 20), lambda o: o[..., :16])}[out_kind]
    desc = QuantizedLinearConvolutionDesc(
        TensorDesc(U8, (n, c, h, w), (c * h * (w + 3), h * (w + 3), w + 3, 1)), s(F32), s(U8),
        TensorDesc(I8, (c, 1, 3, 3)), s(F32), None, None, s(F32), s(U8),
        TensorDesc(U8, (n, c, oh, ow), out_strides),
        start_padding=(1, 1), end_padding=(1, 4), group_count=c)
    op = device.create_operator(desc)
    shader = "qlinear_conv_depthwise" if out_kind == "nhwc" else "qlinear_conv_depthwise_rows"
    assert [k.shader for k in op.kernels] == [shader]
    f32 = lambda v: np.array([v], np.float32)
    u8 = lambda v: np.array([v, 0, 0, 0], np.uint8)
    size = int(np.prod(slot_shape))
    flat = np.full(max(size, desc.output_tensor.total_bytes), 0xA5, np.uint8)
    op.execute([x_mem, f32(0.05), u8(77), wt, f32(0.01), None, None, f32(0.2), u8(9)], [flat])
    out = flat[:size].reshape(slot_shape)
    expected = reference.quantized_linear_convolution(x_mem[..., :w], 0.05, 77, wt, 0.01, None, None, 0.2, 9,
                                                      np.uint8, start_padding=(1, 1), end_padding=(1, 4), group_count=c)
    assert np.array_equal(nchw(out), expected)
    gaps = out[..., 4] if out_kind == "nhwc" else out[..., 16:]
    assert (gaps == 0xA5).all() and (flat[size:] == 0xA5).all()


# ---- on a device with the fast path ---------------------------------------------------------------

def packed_input(x, x_zp, pads, hp, wp, groups):
    """Xp of qconv_packed.glsl from its description: [N][HP][WP][G][CP] bytes, the input shifted to
    int8 (uint8 x - 128), padding as the shifted zero point, channels past Cg zero."""
    n, c, h, w = x.shape
    cg = c // groups
    cp = -(-cg // 32) * 32
    shift = 128 if x.dtype == np.uint8 else 0
    xs = ((x.astype(np.int32) - shift) & 0xFF).astype(np.uint8)
    out = np.zeros((n, hp, wp, groups, cp), np.uint8)
    out[..., :cg] = (int(x_zp) - shift) & 0xFF
    body = xs.reshape(n, groups, cg, h, w).transpose(0, 3, 4, 1, 2)      # n, h, w, g, cg
    ys, xs_ = slice(pads[0], min(hp, pads[0] + h)), slice(pads[1], min(wp, pads[1] + w))
    out[:, ys, xs_, :, :cg] = body[:, :ys.stop - pads[0], :xs_.stop - pads[1]]
    return out


@pytest.mark.parametrize("case", [
    # n, c, h, w, groups, kernel, pads, strides, dilations, input dtype, row gap
    (2, 40, 9, 7, 1, (3, 3), (1, 1), (2, 1), (1, 2), U8, 0),
    (1, 48, 5, 13, 2, (3, 3), (3, 2), (1, 1), (1, 1), I8, 0),     # whole quads of padding
    (3, 20, 6, 14, 1, (1, 1), (0, 0), (1, 1), (1, 1), U8, 0),     # Cg < 32: zero channels
    (1, 64, 8, 10, 1, (3, 3), (1, 1), (2, 2), (1, 1), U8, 0),     # the last padded row and column unused
    (2, 33, 5, 9, 1, (3, 5), (1, 2), (1, 1), (2, 1), U8, 3),      # rows 12 bytes apart: unaligned rows
    (1, 16, 4, 5, 2, (3, 3), (2, 2), (1, 1), (1, 1), I8, 1),
], ids=lambda c: "n{}c{}h{}w{}g{}".format(*c[:5]) + f"-gap{c[-1]}-{c[-2].name.lower()}")
def test_input_packing(device, rng, case):
    # qconv_pack_input on its own (any device runs it: the cooperative-matrix path that follows it
    # needs tensor units), both ways: whole words of 4 columns where columns are contiguous (for
    # these small cases too), one byte at a time otherwise.
    n, c, h, w, groups, (kh, kw), pads, strides, dil, x_dt, gap = case
    row = w + gap
    x_desc = TensorDesc(x_dt, (n, c, h, w), (c * h * row, h * row, row, 1))
    desc = dataclasses.replace(conv_desc(n, c, h, w, 32 * groups, kh, kw, groups=groups, pads=pads, strides=strides,
                                         dil=dil, x_dt=x_dt), input_tensor=x_desc)
    kernels, scratch = desc.plan(coopmat_caps(), tuning={"PACK_INPUT_QUADS_FROM": 0})
    pack = kernels[0]
    assert pack.shader == "qconv_pack_input" and C(pack)["QUAD"] == 1
    x = random_ints(rng, x_dt.numpy_dtype, (n, c, h, w))
    storage = np.zeros((n, c, h, row), x_dt.numpy_dtype)
    storage[..., :w] = x
    x_zp = random_ints(rng, x_dt.numpy_dtype, ())
    params = np.zeros(8, np.int32)
    params[0] = int(x_zp)
    _, _, oh, ow = desc.output_sizes()
    hp, wp = (oh - 1) * strides[0] + (kh - 1) * dil[0] + 1, (ow - 1) * strides[1] + (kw - 1) * dil[1] + 1
    expected = packed_input(x, x_zp, pads, hp, wp, groups)
    assert expected.nbytes == scratch[0]
    inputs = (device.upload(storage.view(np.uint8).ravel()), device.upload(np.zeros(16, np.uint8)),
              device.upload(params.view(np.uint8)))
    variant = TABLE[pack.variant]
    for kernel in (pack, dataclasses.replace(variant.with_constants(pack, QUAD=0), count=scratch[0] // 32)):
        out = device.upload(np.full(scratch[0], 0x5A, np.uint8))
        Program(device, [(kernel, inputs + (out,))]).run()
        assert np.array_equal(out.numpy(np.uint8, expected.shape), expected), variant.constants(kernel)["QUAD"]


@pytest.fixture(scope="session")
def fast_device():
    """The device, with the cooperative matrices emulated (dmlvk/shaders/coopmat_emulation.glsl)
    where it lists none (lavapipe): the cooperative-matrix path's own kernels run everywhere. conv.dot
    is left out (GPUs choose it for groups of few output channels), so that the cooperative-matrix
    path runs those too."""
    dev = dmlvk.Device()
    if (16, 16, 32) not in dev.capabilities.cooperative_matrix("int8", "int8", "int32"):
        dev.capabilities = dev.capabilities.with_emulated_cooperative_matrix()
    with dev.variants(tuning=NO_DOT):
        yield dev


NO_DOT = {"conv.dot": False, "conv.dot.nhwc": False}


def uses_fast_path(op) -> bool:
    return any(k.shader.startswith("qlinear_conv_coopmat") for k in op.kernels)      # packed or halo


def call_uses_fast_path(device, args, **kwargs) -> bool:
    """Whether quantized_linear_convolution(*args, **kwargs, device=device) takes the fast path."""
    kw = dict(strides=(1, 1), dilations=(1, 1), start_padding=(0, 0), end_padding=(0, 0), group_count=1,
              output_dtype=None) | kwargs
    return uses_fast_path(prepare_call(*args, **kw, device=device)[0])


def fast_case(rng, x_dt, w_dt, y_dt, zp_kind, w_range=None):
    groups = int(rng.choice([1, 1, 2, 3]))
    cg = int(rng.integers(COOPMAT_MIN_INPUT_CHANNELS, 80))
    mg = int(rng.integers(COOPMAT_MIN_CHANNELS, 150))
    (kh, kw), dil, p0, p1, h, w = random_window(rng, 14)
    n, m = int(rng.integers(1, 4)), mg * groups
    lo, hi = w_range or (None, None)
    x, wt = random_ints(rng, x_dt, (n, cg * groups, h, w)), random_ints(rng, w_dt, (m, cg, kh, kw), lo, hi)
    xzp = None if zp_kind == "none" else random_ints(rng, x_dt, ())
    wzp = {"none": None, "equal": np.full(m, random_ints(rng, w_dt, (), lo, hi), w_dt),
           "distinct": random_ints(rng, w_dt, (m,), lo, hi), "shift": np.full(m, 0 if w_dt == np.int8 else 128, w_dt)}[zp_kind]
    yzp = None if zp_kind == "none" else random_ints(rng, y_dt, ())
    args = (x, float(np.float32(rng.uniform(0.001, 0.05))), xzp, wt, rng.uniform(0.0005, 0.01, m).astype(np.float32),
            wzp, rng.integers(-5000, 5000, m).astype(np.int32), float(np.float32(rng.uniform(0.05, 2.0))), yzp)
    kwargs = dict(strides=tuple(int(v) for v in rng.integers(1, 3, 2)), dilations=dil, start_padding=p0,
                  end_padding=p1, group_count=groups)
    return args, kwargs


ALL_TYPES = [(x, w, y) for x in (np.uint8, np.int8) for w in (np.uint8, np.int8) for y in (np.uint8, np.int8)]


@pytest.fixture(params=["split-k", "whole-k"])
def split_k(request, fast_device):
    """Small test cases take split-K; "whole-k" leaves it out (the fast device's operators within)."""
    with fast_device.variants(tuning={**NO_DOT, "conv.coopmat.splitk": request.param == "split-k"}):
        yield request.param


@pytest.mark.parametrize("types", ALL_TYPES, ids=lambda t: "x".join(np.dtype(d).name for d in t))
@pytest.mark.parametrize("zp_kind", ["none", "equal", "distinct", "shift"])
def test_fast_path_is_exact(fast_device, portable_device, rng, types, zp_kind, split_k):
    # two random layers for each of the 64 combinations (each layer's kernels compiled anew: the cost)
    x_dt, w_dt, y_dt = types
    for _ in range(2):
        args, kwargs = fast_case(rng, x_dt, w_dt, y_dt, zp_kind)
        assert call_uses_fast_path(fast_device, args, **kwargs, output_dtype=y_dt)
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=fast_device)
        expected = reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)
        assert np.array_equal(got, expected), kwargs
        portable = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=portable_device)
        assert np.array_equal(portable, expected)


@pytest.mark.parametrize("mg", [4, 17, 32])
def test_fast_path_small_tiles_are_exact(fast_device, rng, mg, split_k):
    """32-channel tiles (WM 1: groups of up to COOPMAT_SMALL_TILE_CHANNELS output channels), whose
    A tile is loaded by half the workgroup's loader rows, on random layers and zero points."""
    for zp_kind in ("none", "distinct"):
        while True:
            args, kwargs = fast_case(rng, np.uint8, np.int8, np.uint8, zp_kind)
            if args[3].shape[0] // kwargs["group_count"] >= mg:
                break
        groups = kwargs["group_count"]
        wt = args[3].reshape(groups, -1, *args[3].shape[1:])[:, :mg].reshape(groups * mg, *args[3].shape[1:])
        per_m = lambda a: None if a is None else a.reshape(groups, -1)[:, :mg].reshape(-1)
        args = (args[0], args[1], args[2], wt, per_m(args[4]), per_m(args[5]), per_m(args[6])) + args[7:]
        op = prepare_call(*args, **kwargs, output_dtype=np.uint8, device=fast_device)[0]
        coopmat = [k for k in op.kernels if k.shader == "qlinear_conv_coopmat"]
        assert coopmat and ("WM_FIXED", 1) in coopmat[0].defines, op.kernels
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=np.uint8, device=fast_device)
        assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.dtype(np.uint8), **kwargs)), kwargs


@pytest.mark.parametrize("types", [(np.uint8, np.uint8, np.uint8), (np.uint8, np.int8, np.uint8),
                                   (np.int8, np.int8, np.int8)], ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_fast_path_against_onnxruntime(fast_device, rng, types):
    x_dt, w_dt, y_dt = types
    w_range = ort_weight_range(x_dt, w_dt)
    for _ in range(6):
        args, kwargs = fast_case(rng, x_dt, w_dt, y_dt, "equal", w_range)
        model, feeds = onnx_qlinearconv_model(args, kwargs, np.dtype(y_dt))
        assert call_uses_fast_path(fast_device, args, **kwargs, output_dtype=y_dt)
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=fast_device)
        assert np.array_equal(got, run_onnxruntime(model, feeds)), kwargs


def test_fast_path_extremes(fast_device, portable_device, split_k):
    # All-255 inputs against all -128 filters over K = 64 * 9 * 9 = 5184 taps (past 4608), padding
    # taps standing for the zero point, and biases that make the int32 accumulator wrap.
    x = np.full((2, 64, 12, 12), 255, np.uint8)
    for w_dt, w_val, w_zp in ((np.int8, -128, 127), (np.uint8, 0, 255), (np.int8, -128, 0)):
        w = np.full((32, 64, 9, 9), w_val, w_dt)
        bias = np.resize(np.array([2**31 - 1, -(2**31), 12345], np.int32), 32)
        for x_zp in (0, 255, 7):
            args = (x, 1.0, np.uint8(x_zp), w, np.resize(np.float32([1.0, 1e-9, 3e-7]), 32), w_dt(w_zp), bias,
                    1.0, np.uint8(3))
            kw = dict(start_padding=(4, 4), end_padding=(4, 4))
            assert call_uses_fast_path(fast_device, args, **kw)
            got = dmlvk.quantized_linear_convolution(*args, **kw, device=fast_device)
            assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.uint8, **kw)), (w_dt, x_zp)
            assert np.array_equal(got, dmlvk.quantized_linear_convolution(*args, **kw, device=portable_device))


@pytest.mark.parametrize("zp_kind", ["none", "distinct"])
def test_constant_filter(fast_device, rng, zp_kind):
    # Filter and zero points OWNED_BY_DML (a model's constant weights): on the cooperative-matrix
    # path the filter is packed once, at initialization, and every execution uses that packing.
    args, kwargs = fast_case(rng, np.uint8, np.int8, np.uint8, zp_kind)
    op, inputs, out, finish = prepare_call(*args, **kwargs, output_dtype=np.uint8, device=fast_device)
    owned, exec_inputs = constant_filter(op, inputs)
    assert owned is not op and all(exec_inputs[s] is None for s in (3, 2, 5))
    assert uses_fast_path(op) and uses_fast_path(owned)
    assert "qconv_pack_filter" in [k.shader for k in op.kernels]
    assert "qconv_pack_filter" not in [k.shader for k in owned.kernels]
    for _ in range(2):                      # new inputs each time; the packed filter stays
        x = random_ints(rng, args[0].dtype, args[0].shape)
        owned.execute([array_binding(x, "input")[1]] + exec_inputs[1:], [out])
        expected = reference.quantized_linear_convolution(x, *args[1:], np.uint8, **kwargs)
        assert np.array_equal(finish(), expected), kwargs
    with pytest.raises(ValueError, match="OWNED_BY_DML"):
        owned.execute(inputs, [out])


def test_fast_path_strided_tensors_and_buffers(fast_device, rng, split_k):
    # NHWC input and output (per-byte stores), a padded filter, groups, as host arrays and Buffers.
    device = fast_device
    n, c, h, w, m, g = 2, 48, 7, 9, 64, 2
    x = rng.integers(0, 256, (n, h, w, c), dtype=np.uint8)
    wt = rng.integers(-128, 128, (m, c // g, 3, 3), dtype=np.int8)
    w_padded = np.zeros((m, c // g, 3, 4), np.int8)
    w_padded[..., :3] = wt
    scale_ws = rng.uniform(0.0005, 0.002, m).astype(np.float32)
    bias = rng.integers(-3000, 3000, m).astype(np.int32)
    oh, ow = 7, 4
    scalar = lambda dt: TensorDesc(dt, (1, 1, 1, 1), (0, 0, 0, 0))
    desc = QuantizedLinearConvolutionDesc(
        TensorDesc(U8, (n, c, h, w), (h * w * c, 1, w * c, c)), scalar(F32), scalar(U8),
        TensorDesc(I8, (m, c // g, 3, 3), (c // g * 12, 12, 4, 1)), TensorDesc(F32, (1, m, 1, 1)),
        TensorDesc(I8, (1, m, 1, 1), (0, 0, 0, 0)), TensorDesc(DataType.INT32, (1, m, 1, 1)),
        scalar(F32), scalar(I8), TensorDesc(I8, (n, m, oh, ow), (oh * ow * m, 1, ow * m, m)),
        strides=(1, 2), start_padding=(1, 1), end_padding=(1, 0), group_count=g)
    op = device.create_operator(desc)
    assert [k.shader for k in op.kernels] == FAST + ["qlinear_conv_splitk"] * (split_k == "split-k")
    f32 = lambda v: np.array([v], np.float32)
    bind = [x, f32(0.04), np.array([120, 0, 0, 0], np.uint8), w_padded, scale_ws,
            np.array([5, 0, 0, 0], np.int8), bias, f32(0.3), np.array([-5, 0, 0, 0], np.int8)]
    out = np.zeros((n, oh, ow, m), np.int8)
    op.execute(inputs=bind, outputs=[out])
    expected = reference.quantized_linear_convolution(
        x.transpose(0, 3, 1, 2), 0.04, 120, wt, scale_ws, 5, bias, 0.3, -5, np.int8,
        strides=(1, 2), start_padding=(1, 1), end_padding=(1, 0), group_count=g)
    assert np.array_equal(out.transpose(0, 3, 1, 2), expected)
    out_buf = device.buffer(out.nbytes)
    op.execute(inputs=[device.upload(b) for b in bind], outputs=[out_buf])
    assert np.array_equal(out_buf.numpy(np.int8, out.shape), out)


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_channels_last_input_is_read_in_place(fast_device, rng, split_k, types):
    """conv.coopmat.nhwc (or conv.coopmat.halo, where it is chosen): a channels-last input (Cg a multiple
    of 32) is read by the cooperative-matrix kernel itself, no packing kernel, on random windows,
    strides, paddings, groups and zero points (distinct filter zero points: the window sums), against
    the reference."""
    x_dt, w_dt, y_dt = types
    dts = {np.dtype(np.uint8): U8, np.dtype(np.int8): I8}
    for _ in range(3):
        g, cg, mg = int(rng.choice([1, 2])), int(rng.choice([32, 64])), int(rng.integers(4, 40))
        (kh, kw), dil, p0, p1, h, w = random_window(rng, 9)
        strides = tuple(int(v) for v in rng.integers(1, 3, 2))
        n, c, m = int(rng.integers(1, 3)), cg * g, mg * g
        x = random_ints(rng, x_dt, (n, h, w, c))
        wt = random_ints(rng, w_dt, (m, cg, kh, kw))
        xzp, wzp, yzp = random_ints(rng, x_dt, ()), random_ints(rng, w_dt, (m,)), random_ints(rng, y_dt, ())
        scale_ws = rng.uniform(0.0005, 0.01, m).astype(np.float32)
        bias = rng.integers(-3000, 3000, m).astype(np.int32)
        kwargs = dict(strides=strides, dilations=dil, start_padding=p0, end_padding=p1, group_count=g)
        expected = reference.quantized_linear_convolution(x.transpose(0, 3, 1, 2), 0.02, xzp, wt, scale_ws, wzp, bias,
                                                          0.5, yzp, np.dtype(y_dt), **kwargs)
        scalar = lambda dt: TensorDesc(dt, (1, 1, 1, 1), (0, 0, 0, 0))
        desc = QuantizedLinearConvolutionDesc(
            TensorDesc(dts[np.dtype(x_dt)], (n, c, h, w), (h * w * c, 1, w * c, c)), scalar(F32),
            scalar(dts[np.dtype(x_dt)]), TensorDesc(dts[np.dtype(w_dt)], (m, cg, kh, kw)), TensorDesc(F32, (1, m, 1, 1)),
            TensorDesc(dts[np.dtype(w_dt)], (1, m, 1, 1)), TensorDesc(DataType.INT32, (1, m, 1, 1)), scalar(F32),
            scalar(dts[np.dtype(y_dt)]), TensorDesc(dts[np.dtype(y_dt)], expected.shape), **kwargs)
        op = fast_device.create_operator(desc)
        shaders = [k.shader for k in op.kernels]
        main = next(k for k in op.kernels if k.shader.startswith("qlinear_conv_coopmat"))       # packed or halo
        assert "qconv_pack_input" not in shaders and main.variant in READS_CHANNELS_LAST, op.kernels
        f32 = lambda v: np.array([v], np.float32)
        words = lambda a, dt: np.concatenate([np.ravel(np.asarray(a, dt)), np.zeros(3, dt)])   # whole words
        out = np.zeros(expected.size + 3, y_dt)
        op.execute(inputs=[x, f32(0.02), words(xzp, x_dt), wt, scale_ws, words(wzp, w_dt), bias, f32(0.5),
                           words(yzp, y_dt)], outputs=[out])
        assert np.array_equal(out[:expected.size].reshape(expected.shape), expected), kwargs
    with fast_device.variants(force="conv.coopmat"):                  # the packed path is still there
        assert "qconv_pack_input" in [k.shader for k in fast_device.create_operator(desc).kernels]


# Windows of the most taps a driver that ends loops early runs (Capabilities.loop_iteration_limit):
# (output channels, input channels, groups, KH, KW), one per kind of kernel.
TAPS_1, TAPS_K = most_taps(65535, 1, 1), most_taps(65535, 3, 3)
LOOP_LIMIT_CASES = {
    "portable 1x1": (1, TAPS_1, 1, 1, 1),
    "wide 1x1": (16, TAPS_1, 1, 1, 1),
    "wide 3x3": (16, TAPS_K // 9, 1, 3, 3),
    "wide 5x7": (32, TAPS_K // 35, 1, 5, 7),
    "depthwise 161x161": (2, 2, 2, 161, 161),
    "fast 3x3": (64, TAPS_K // 9 // 32 * 32, 1, 3, 3),
}


@pytest.mark.parametrize("case", LOOP_LIMIT_CASES, ids=str)
def test_most_taps_under_a_loop_limit_are_exact(request, rng, case):
    # Debian 12's lavapipe ends an invocation's loops after 65,535 iterations in all; the taps that
    # dmlvk still runs there must be computed whole by every kernel (summing every tap: no saturation).
    m, c, g, kh, kw = LOOP_LIMIT_CASES[case]
    fast = case.startswith("fast")
    device = request.getfixturevalue("fast_device" if fast else "device")
    x = random_ints(rng, np.uint8, (1, c, kh + 1, kw))
    w = random_ints(rng, np.int8, (m, c // g, kh, kw))
    args = (x, 1.0, np.uint8(128), w, np.full(m, 2.0**-15, np.float32), np.int8(0),
            rng.integers(-5000, 5000, m).astype(np.int32), 1.0, np.uint8(128))
    kw_ = dict(group_count=g)
    shaders = [k.shader for k in prepare_call(*args, strides=(1, 1), dilations=(1, 1), start_padding=(0, 0),
                                              end_padding=(0, 0), output_dtype=None, device=device,
                                              **kw_)[0].kernels]
    assert not fast or any(s.startswith("qlinear_conv_coopmat") for s in shaders), shaders
    got = dmlvk.quantized_linear_convolution(*args, **kw_, device=device)
    expected = reference.quantized_linear_convolution(*args, np.uint8, **kw_)
    assert 0 < expected.min() and expected.max() < 255                  # nothing saturated
    assert np.array_equal(got, expected), shaders


def test_more_taps_than_a_loop_limit_are_refused(rng):
    dev = dmlvk.Device()
    dev.capabilities = dataclasses.replace(dev.capabilities, loop_iteration_limit=65535)
    for c, k in ((TAPS_1 + 1, 1), (TAPS_K // 9 + 1, 3)):
        x = random_ints(rng, np.uint8, (1, c, k, k))
        w = random_ints(rng, np.int8, (16, c, k, k))
        args = (x, 1.0, None, w, np.float32(1e-6), None, None, 1.0, np.uint8(0))
        with pytest.raises(dmlvk.UnsupportedError, match=rf"{c * k * k} taps per output .* 65535 iterations"):
            dmlvk.quantized_linear_convolution(*args, device=dev)
    dev.capabilities = dataclasses.replace(dev.capabilities, loop_iteration_limit=0)
    assert dmlvk.quantized_linear_convolution(*args, device=dev).shape == (1, 16, 1, 1)


@pytest.mark.parametrize("name, info, limit", [
    ("llvmpipe", "Mesa 22.3.6 (LLVM 15.0.6)", 65535), ("llvmpipe", "Mesa 24.2.8-1 (LLVM 19.1.4)", 65535),
    ("llvmpipe", "Mesa 25.0.7-2~bpo12+1 (LLVM 19.1.7)", 0), ("NVIDIA", "580.159.04", 0),
    ("radv", "Mesa 22.3.6", 0)])
def test_loop_iteration_limit_by_driver(name, info, limit):
    from dmlvk.runtime.capabilities import loop_iteration_limit
    assert loop_iteration_limit(dataclasses.replace(dmlvk.devices()[0], driver_name=name, driver_info=info)) == limit


@pytest.mark.parametrize("split", ["split-k", "whole-k"])
def test_fast_path_in_a_command_list_with_a_dependent_operator(fast_device, rng, split):
    # The cooperative-matrix convolution's dependent dispatches (input and filter packing, the
    # multiply, split-K's sum), then a depth-to-space of its output, recorded once, run three times
    # on new inputs (the validation-layer run checks their barriers).
    with fast_device.variants(tuning={**NO_DOT, "conv.coopmat.splitk": split == "split-k"}):
        command_list_with_a_dependent_operator(fast_device, rng, split)


def command_list_with_a_dependent_operator(fast_device, rng, split):
    n, c, m, h, w = 1, 32, 64, 6, 10
    args = [random_ints(rng, np.uint8, (n, c, h, w)), np.float32(0.02), np.uint8(120),
            random_ints(rng, np.int8, (m, c, 3, 3)), np.float32(0.005), None,
            rng.integers(-3000, 3000, m).astype(np.int32), np.float32(0.4), np.uint8(9)]
    kw = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 1), end_padding=(1, 1), group_count=1,
              output_dtype=np.uint8)
    op = prepare_call(*args, **kw, device=fast_device)[0]
    shaders = [k.shader for k in op.kernels]
    assert "qlinear_conv_coopmat" in shaders and ("qlinear_conv_splitk" in shaders) == (split == "split-k")
    d2s = fast_device.create_operator(dmlvk.DepthToSpace1Desc(
        TensorDesc(U8, (n, m, h, w)), TensorDesc(U8, (n, m // 4, h * 2, w * 2)), 2, dmlvk.DepthSpaceOrder.DEPTH_COLUMN_ROW))
    words = lambda a: np.frombuffer(np.asarray(a).tobytes().ljust(4, b"\0"), np.uint8)   # scalars: a whole word
    bufs = [None if a is None else fast_device.upload(words(a)) for a in args]
    mid, out = fast_device.buffer(n * m * h * w), fast_device.buffer(n * m * h * w)
    cl = dmlvk.CommandList(fast_device).record(op, bufs, [mid]).record(d2s, [mid], [out])
    for _ in range(3):
        args[0] = random_ints(rng, np.uint8, (n, c, h, w))
        bufs[0].write(args[0])
        cl.execute()
        conv = reference.quantized_linear_convolution(*args, np.uint8, start_padding=(1, 1), end_padding=(1, 1))
        want = reference.depth_to_space(conv, 2, "DCR")
        assert np.array_equal(out.numpy(np.uint8, want.shape), want)


def _forced_tile_case(device, rng, types, force, x_shape, cg, mg, g, kh, kw, pads, channels_last, out_kind,
                      constant="PACKED_OUT", tuning=None, tail=None):
    """A stride-1 convolution of random operands (distinct filter zero points: the window sums) through
    the variant `force`, its input of x_shape (N, C, H, W) channels-last or NCHW, its output packed
    NCHW, NHWC (its pixels m or m + 4 bytes apart) or with gapped rows, under these tuning numbers: (the
    kernel's specialization constant `constant`, whether the output equals the reference's). With tail
    = (block, crd, scale, zero point), the convolution compiled with the ONNX runner's float tail
    (compile_dequantized: then a DepthToSpace and a DequantizeLinear), against the reference's three."""
    x_dt, w_dt, y_dt = types
    dts = {np.dtype(np.uint8): U8, np.dtype(np.int8): I8}
    n, c, h, w = x_shape
    m = mg * g
    x = random_ints(rng, x_dt, x_shape)
    wt = random_ints(rng, w_dt, (m, cg, kh, kw))
    xzp, wzp, yzp = random_ints(rng, x_dt, ()), random_ints(rng, w_dt, (m,)), random_ints(rng, y_dt, ())
    scale_ws = rng.uniform(0.002, 0.05, m).astype(np.float32)
    bias = rng.integers(-3000, 3000, m).astype(np.int32)
    kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=pads[:2], end_padding=pads[2:], group_count=g)
    want = reference.quantized_linear_convolution(x, 0.02, xzp, wt, scale_ws, wzp, bias, 0.5, yzp,
                                                  np.dtype(y_dt), **kwargs)
    _, _, oh, ow = want.shape
    out_strides = {"packed": None, "nhwc": (oh * ow * m, 1, ow * m, m),
                   "nhwc_words": (oh * ow * (m + 4), 1, ow * (m + 4), m + 4),      # pixels 4 bytes apart
                   "gapped": (m * oh * (ow + 4), oh * (ow + 4), ow + 4, 1)}[out_kind]
    scalar = lambda dt: TensorDesc(dt, (1, 1, 1, 1), (0, 0, 0, 0))
    desc = QuantizedLinearConvolutionDesc(
        TensorDesc(dts[np.dtype(x_dt)], x_shape, (h * w * c, 1, w * c, c) if channels_last else None), scalar(F32),
        scalar(dts[np.dtype(x_dt)]), TensorDesc(dts[np.dtype(w_dt)], (m, cg, kh, kw)), TensorDesc(F32, (1, m, 1, 1)),
        TensorDesc(dts[np.dtype(w_dt)], (1, m, 1, 1)), TensorDesc(DataType.INT32, (1, m, 1, 1)), scalar(F32),
        scalar(dts[np.dtype(y_dt)]), TensorDesc(dts[np.dtype(y_dt)], want.shape, out_strides), **kwargs)
    if tail is not None:
        block, crd, dq_scale, dq_zp = tail
        with device.variants(force=force, tuning=tuning):
            op = desc.compile_dequantized(device, tail)
        force += ".float"
        want = reference.depth_to_space(want, block, "CRD" if crd else "DCR")
        want = (want.astype(np.float32) - np.float32(dq_zp)) * np.float32(dq_scale)
    else:
        op = device.create_operator(desc, force=force, tuning=tuning)
    assert [k.variant for k in op.kernels] == ["conv.coopmat.pack_filter", force], op.kernels
    f32 = lambda v: np.array([v], np.float32)
    words = lambda a, dt: np.concatenate([np.ravel(np.asarray(a, dt)), np.zeros(3, dt)])   # whole words
    x_bytes = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if channels_last else x
    x_bytes = np.concatenate([x_bytes.ravel(), np.zeros(desc.input_tensor.total_bytes - x.size, x_dt)])
    out = (np.zeros(want.size, np.float32) if tail is not None
           else np.zeros(-(-desc.output_tensor.total_bytes // 4) * 4, y_dt))
    op.execute(inputs=[x_bytes, f32(0.02), words(xzp, x_dt), words(wt, w_dt), scale_ws, words(wzp, w_dt), bias,
                       f32(0.5), words(yzp, y_dt)], outputs=[out])
    got = (out.reshape(want.shape) if tail is not None
           else np.lib.stride_tricks.as_strided(out, want.shape, desc.output_tensor.effective_strides))
    return C(op.kernels[-1])[constant], np.array_equal(got, want)


@pytest.mark.parametrize("lanes", [True, False], ids=["lanes", "stage"])
@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_halo_tiles_exact(fast_device, rng, types, lanes):
    """conv.coopmat.halo (forced) on channels-last inputs: tiles cut by the image's last rows and columns
    (heights and widths off 8 and 32), two images, padding of 0-2, groups of 32 channels with 9-40 output
    channels (tiles holding rows past them, two channel tiles), distinct filter zero points (the window
    sums), and outputs packed NCHW (16-byte and whole-word stores), NHWC (16 channels a store where a
    group's channels come in sixteens and the strides in 16 bytes; four channels a word where they come
    in fours: groups of 20 leave the words past them alone; else byte stores) and with gapped rows (byte
    stores); against the reference. Channels-last outputs requantized in the accumulators' lanes (LANES,
    the default: each 4 x 4 byte block transposed across lanes, 16 channels a store from two lanes' words)
    and through the stage (HALO_LANES off)."""
    # (kh, kw), h, w, groups, mg, output kind, padding, PACKED_OUT
    cases = [((3, 3), 11, 48, 1, 20, "packed", (1, 1, 1, 1), 2), ((3, 3), 9, 36, 2, 40, "packed", (0, 1, 1, 1), 1),
             ((1, 1), 8, 33, 1, 16, "nhwc", (2, 0, 1, 1), 4), ((2, 3), 17, 20, 1, 9, "gapped", (0, 1, 2, 1), 0),
             ((3, 3), 10, 40, 2, 32, "nhwc", (1, 1, 1, 1), 4), ((3, 3), 9, 35, 1, 32, "nhwc_words", (1, 1, 1, 1), 3),
             ((3, 1), 5, 64, 2, 32, "packed", (2, 0, 0, 0), 2), ((3, 3), 9, 33, 1, 24, "packed", (1, 0, 1, 0), 0),
             ((3, 3), 11, 40, 2, 20, "nhwc", (1, 1, 1, 1), 3), ((3, 3), 9, 36, 1, 9, "nhwc", (1, 1, 1, 1), 0)]
    for (kh, kw), h, w, g, mg, out_kind, pads, packed in cases:
        got = _forced_tile_case(fast_device, rng, types, "conv.coopmat.halo", (2, 32 * g, h, w), 32, mg, g, kh, kw,
                                pads, True, out_kind, tuning=dict(HALO_LANES=lanes))
        assert got == (packed, True), (kh, kw, h, w, g, mg, out_kind, pads)


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_halo_channel_slices_exact(fast_device, rng, types):
    """conv.coopmat.halo with the input channels in KSPLIT slices (HALO_KSPLIT), the window and filter
    rows in shared memory a slice's at a time: the ESPCN's 3x3 64->32 in two, 128 channels in two and
    four, one tile a workgroup and several (TILES: the last workgroups' last tiles past the output),
    padding, window sums, outputs channels-last 16 channels a store (the lanes), four channels a word
    and packed NCHW; and none where a slice would hold an odd number of 16-channel vectors (32 channels
    in two). Against the reference."""
    # (kh, kw), h, w, input channels, mg, output kind, padding, HALO_KSPLIT, HALO_WORKGROUPS (0: as
    # tuned), the KSPLIT expected
    cases = [((3, 3), 11, 40, 64, 32, "nhwc", (1, 1, 1, 1), 2, 0, 2),
             ((3, 3), 9, 36, 64, 20, "packed", (0, 1, 1, 1), 2, 3, 2),
             ((1, 2), 8, 33, 128, 16, "nhwc", (1, 0, 1, 1), 4, 2, 4),
             ((2, 2), 7, 40, 128, 24, "nhwc_words", (0, 0, 1, 1), 4, 0, 4),
             ((1, 1), 9, 36, 128, 32, "nhwc", (0, 0, 0, 0), 2, 2, 2),
             ((3, 3), 9, 36, 32, 32, "nhwc", (1, 1, 1, 1), 2, 0, 1)]
    for (kh, kw), h, w, c, mg, out_kind, pads, ksplit, workgroups, expected in cases:
        tuning = dict(HALO_KSPLIT=ksplit, **({"HALO_WORKGROUPS": workgroups} if workgroups else {}))
        got = _forced_tile_case(fast_device, rng, types, "conv.coopmat.halo", (2, c, h, w), c, mg, 1, kh, kw,
                                pads, True, out_kind, constant="KSPLIT", tuning=tuning)
        assert got == (expected, True), (kh, kw, h, w, c, mg, out_kind, pads, ksplit)


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_halo_several_tiles_exact(fast_device, rng, types):
    """conv.coopmat.halo with each workgroup computing several tiles one after the other (TILES: the
    output's tiles over HALO_WORKGROUPS, which the test lowers; its filter rows loaded once, each next
    tile's window loaded while the tile before multiplies): tiles that do not divide among the
    workgroups (the last workgroups' last tiles past the output), tiles cut by the image's last rows
    and columns, the next tile in the other image, padding, window sums, every output kind; and one
    workgroup a tile where two groups or two filter tiles would need other filter rows. Against the
    reference."""
    # (kh, kw), h, w, groups, mg, output kind, padding, HALO_WORKGROUPS, TILES
    cases = [((1, 1), 17, 70, 1, 32, "nhwc", (0, 0, 0, 0), 4, 5), ((1, 2), 25, 70, 1, 20, "packed", (1, 1, 0, 0), 5, 5),
             ((1, 1), 12, 64, 1, 16, "nhwc_words", (0, 0, 0, 0), 3, 3), ((1, 2), 8, 33, 1, 9, "gapped", (1, 0, 1, 1), 3, 3),
             ((1, 1), 9, 36, 2, 32, "nhwc", (0, 0, 0, 0), 2, 1), ((1, 1), 9, 36, 1, 40, "packed", (0, 0, 0, 0), 2, 1)]
    if fast_device.capabilities.fits_shared(48 * 1024):                  # a 3x3 layer's window (GPUs)
        cases += [((3, 3), 19, 100, 1, 32, "nhwc", (1, 1, 1, 1), 5, 5), ((3, 3), 11, 40, 1, 24, "packed", (1, 1, 1, 1), 3, 3)]
    for (kh, kw), h, w, g, mg, out_kind, pads, workgroups, tiles in cases:
        got = _forced_tile_case(fast_device, rng, types, "conv.coopmat.halo", (2, 32 * g, h, w), 32, mg, g, kh, kw,
                                pads, True, out_kind, constant="TILES", tuning=dict(HALO_WORKGROUPS=workgroups))
        assert got == (tiles, True), (kh, kw, h, w, g, mg, out_kind, pads, workgroups)


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_halo_filter_in_registers_exact(fast_device, rng, types):
    """conv.coopmat.halo with its filter's fragments in registers (HALO_AREG: each subgroup two rows of
    the tile for 16 channels, a B fragment serving both rows' taps): tiles cut by the image's last rows
    (a subgroup's second row past them) and columns, two images, padding on every side, window sums
    (each of a subgroup's rows its own), 12 to 32 output channels a group (subgroups whose 16 channels
    lie past them, fragments holding rows past them), one tile a workgroup and several, channels-last
    outputs 16 channels a store and four a word; none where the output is not channels-last or a
    subgroup would hold more than HALO_AREG_FRAGMENTS fragments; the fragments from the filter rows
    staged in shared memory (AREG 1) and, with HALO_AREG_STAGE off, straight from the packed filter
    (AREG 2). Against the reference."""
    # (kh, kw), h, w, input channels, mg, output kind, padding, HALO_WORKGROUPS (0: as tuned),
    # HALO_AREG_FRAGMENTS (0: as tuned), AREG
    cases = [((3, 3), 11, 40, 32, 32, "nhwc", (1, 1, 1, 1), 0, 0, 1), ((3, 3), 9, 35, 32, 32, "nhwc_words", (1, 1, 1, 1), 2, 0, 1),
             ((3, 3), 13, 70, 32, 16, "nhwc", (1, 1, 1, 1), 3, 0, 1), ((2, 3), 9, 36, 32, 20, "nhwc", (0, 1, 2, 1), 0, 0, 1),
             ((1, 1), 17, 64, 64, 12, "nhwc_words", (0, 0, 0, 0), 3, 0, 1), ((1, 2), 10, 33, 32, 24, "nhwc", (1, 0, 1, 1), 2, 0, 1),
             ((3, 3), 9, 36, 32, 32, "packed", (1, 1, 1, 1), 0, 0, 0), ((3, 3), 9, 36, 32, 24, "gapped", (1, 1, 1, 1), 0, 0, 0),
             ((3, 3), 9, 36, 32, 32, "nhwc", (1, 1, 1, 1), 0, 8, 0)]
    if fast_device.capabilities.fits_shared(48 * 1024):                  # a 3x3 layer's window of 64 channels (GPUs)
        cases += [((3, 3), 19, 100, 64, 32, "nhwc", (1, 1, 1, 1), 5, 0, 1), ((3, 3), 11, 40, 64, 32, "nhwc", (1, 1, 1, 1), 0, 0, 1)]
    cases += [((3, 3), 11, 40, 32, 32, "nhwc", (1, 1, 1, 1), 0, 0, 2), ((1, 2), 10, 33, 32, 24, "nhwc", (1, 0, 1, 1), 2, 0, 2)]
    for (kh, kw), h, w, c, mg, out_kind, pads, workgroups, most, areg in cases:
        tuning = dict(HALO_AREG=True, **({"HALO_WORKGROUPS": workgroups} if workgroups else {}),
                      **({"HALO_AREG_FRAGMENTS": most} if most else {}), HALO_AREG_STAGE=areg != 2)
        got = _forced_tile_case(fast_device, rng, types, "conv.coopmat.halo", (2, c, h, w), c, mg, 1, kh, kw,
                                pads, True, out_kind, constant="AREG", tuning=tuning)
        assert got == (areg, True), (kh, kw, h, w, c, mg, out_kind, pads, workgroups, most)


@pytest.mark.parametrize("variant", ["conv.coopmat.halo", "conv.dot"])
def test_window_sums_compiled_out(request, rng, variant):
    """conv.coopmat.halo (a channels-last input) and conv.dot compile the input's window sums out
    (WSUM 0) where the filter zero points are known before execution and need none: no zero-point
    tensor with an int8 filter, or zero points OWNED_BY_DML equal to the filter's int8 shift (0 for
    int8, 128 for uint8), decided again at each initialization; elsewhere WSUM 1 and params[2 + 3M]
    decide. Exact against the reference either way."""
    device = request.getfixturevalue("fast_device" if variant == "conv.coopmat.halo" else "dot_device")
    channels_last = variant == "conv.coopmat.halo"
    n, h, w, cg, m = 1, 10, 40, 32, 24
    owned = TensorFlags.OWNED_BY_DML
    scalar = lambda dt, flags=TensorFlags.NONE: TensorDesc(dt, (1, 1, 1, 1), (0, 0, 0, 0), flags=flags)
    f32 = lambda v: np.array([v], np.float32)
    words = lambda a, dt: np.concatenate([np.ravel(np.asarray(a, dt)), np.zeros(3, dt)])
    cases = [(np.int8, "none", None, 0), (np.int8, "owned", 0, 0), (np.int8, "owned", 3, 1),
             (np.uint8, "owned", 128, 0), (np.uint8, "owned", 127, 1), (np.uint8, "none", None, 1),
             (np.int8, "bound", 0, 1)]
    for w_dt, zp_kind, zp, wsum in cases:
        wdt = U8 if w_dt == np.uint8 else I8
        x = random_ints(rng, np.uint8, (n, h, w, cg) if channels_last else (n, cg, h, w))
        wt = random_ints(rng, w_dt, (m, cg, 3, 3))
        wzp = None if zp is None else np.full(m, zp, w_dt)
        scale_ws = rng.uniform(0.0005, 0.01, m).astype(np.float32)
        kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 1), end_padding=(1, 1), group_count=1)
        want = reference.quantized_linear_convolution(x.transpose(0, 3, 1, 2) if channels_last else x, 0.02, np.uint8(9), wt, scale_ws,
                                                      0 if wzp is None else wzp, None, 0.5, np.uint8(7),
                                                      np.dtype(np.uint8), **kwargs)
        flags = owned if zp_kind == "owned" else TensorFlags.NONE
        desc = QuantizedLinearConvolutionDesc(
            TensorDesc(U8, (n, cg, h, w), (h * w * cg, 1, w * cg, cg) if channels_last else None), scalar(F32),
            scalar(U8, flags),
            TensorDesc(wdt, (m, cg, 3, 3), flags=flags), TensorDesc(F32, (1, m, 1, 1)),
            None if zp_kind == "none" else TensorDesc(wdt, (1, m, 1, 1), flags=flags), None, scalar(F32),
            scalar(U8), TensorDesc(U8, want.shape), **kwargs)
        op = device.create_operator(desc, force=variant)
        consts = [words(9, np.uint8), wt, None if wzp is None else words(wzp, w_dt)]
        if zp_kind == "owned":
            op.initialize([None, None, consts[0], consts[1], None, consts[2], None, None, None])
            consts = [None, None, None]
        assert C(op.kernels[-1])["WSUM"] == wsum, (w_dt, zp_kind, zp)
        out = np.zeros(want.size, np.uint8)
        op.execute(inputs=[x, f32(0.02), consts[0], consts[1], scale_ws, consts[2], None, f32(0.5),
                           words(7, np.uint8)], outputs=[out])
        assert np.array_equal(out.reshape(want.shape), want), (w_dt, zp_kind, zp)
        if zp_kind == "owned":                  # initialized again with other zero points: decided again
            op.initialize([None, None, words(9, np.uint8), wt, None, words(np.full(m, 1 - wsum, w_dt), w_dt),
                           None, None, None])
            assert C(op.kernels[-1])["WSUM"] == int(1 - wsum != (0 if w_dt == np.int8 else 128))


def test_halo_tiles_choice():
    """Where conv.coopmat.halo is chosen: stride and dilation 1, a channels-last input conv.coopmat.nhwc
    could read, HALO_MIN_CHANNELS to HALO_MAX_CHANNELS output channels a group, its window and filter rows
    within the device's shared memory (48 KiB here, as on NVIDIA GPUs); elsewhere the kernel before it."""
    gpu = dataclasses.replace(coopmat_caps(), max_shared_memory=48 * 1024)
    nhwc = lambda sizes: (sizes[1] * sizes[2] * sizes[3], 1, sizes[3] * sizes[1], sizes[1])
    main = lambda d: [k.variant for k in d.plan(gpu)[0]][-1]

    def layer(c=64, m=32, k=3, strides=(1, 1), dil=(1, 1), channels_last=True):
        d = conv_desc(1, c, 540, 960, m, k, k, pads=(k // 2, k // 2), strides=strides, dil=dil)
        if not channels_last:
            return d
        return dataclasses.replace(d, input_tensor=TensorDesc(d.input_tensor.data_type, d.input_tensor.sizes,
                                                              nhwc(d.input_tensor.sizes)))
    assert main(layer()) == "conv.coopmat.halo"                      # the ESPCN 3x3 64->32 layer
    assert main(layer(m=TABLE.tuning["HALO_MIN_CHANNELS"])) == "conv.coopmat.halo"
    assert main(layer(m=TABLE.tuning["HALO_MAX_CHANNELS"] + 1)) == "conv.coopmat.nhwc"
    assert main(layer(m=TABLE.tuning["HALO_MIN_CHANNELS"] - 1)) == "conv.coopmat.nhwc"
    assert main(layer(strides=(2, 2))) == "conv.coopmat.nhwc"
    assert main(layer(dil=(1, 2))) == "conv.coopmat.nhwc"
    assert main(layer(k=5)) == "conv.coopmat.nhwc"                   # 5x5 x 64 channels: past 48 KiB
    assert main(layer(c=32, k=5)) == "conv.coopmat.halo"             # 5x5 x 32 channels: 46.1 KiB
    assert main(layer(channels_last=False)) != "conv.coopmat.halo"
    lanes = lambda d, tuning=None: C(d.plan(gpu, tuning=tuning)[0][-1])["LANES"]
    assert (lanes(layer()), lanes(layer(), {"HALO_LANES": False})) == (1, 0)   # the channels-last epilogue's
    # the filter's fragments in registers (a channels-last output): staged through shared memory where
    # the filter rows fit beside the window (46 KiB for 64 channels), else straight from the filter
    out_cl = lambda d: dataclasses.replace(d, output_tensor=TensorDesc(U8, d.output_tensor.sizes, nhwc(d.output_tensor.sizes)))
    areg = lambda caps, tuning=None: C(out_cl(layer()).plan(caps, tuning=tuning)[0][-1])["AREG"]
    assert (areg(gpu), areg(gpu, {"HALO_AREG_STAGE": False}), areg(gpu, {"HALO_AREG": False})) == (1, 2, 0)
    assert areg(dataclasses.replace(gpu, max_shared_memory=32 * 1024)) == 2       # 28 KiB, the window's alone


def test_accumulator_lanes_on_nvidia(fast_device):
    """NVIDIA's int32 accumulator matrices keep their elements where dmlvk/shaders/coopmat_lanes.glsl
    says, so that conv.coopmat.halo's LANES epilogue runs there (where they do not, its subgroups find
    so and take the stage); the probe answers on any device with cooperative matrices of its own."""
    found = accumulator_lanes(fast_device)
    if found is None:
        pytest.skip("no cooperative matrices of its own (the emulation keeps its elements so by construction)")
    if "NVIDIA" in fast_device.name:
        assert found, "NVIDIA's accumulators no longer where coopmat_lanes.glsl says: LANES never runs there"
    else:
        assert isinstance(found, bool)


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_fast_path_sixteen_byte_stores(fast_device, rng, types):
    """The cooperative-matrix kernel's 16-byte stores (packed NCHW output, OH * OW a multiple of 16):
    images of 64 and 80 pixels, so that a 128-pixel tile spans images; 36 and 100 output channels,
    so that tiles hold rows past the channels; against the reference."""
    x_dt, w_dt, y_dt = types
    for (n, h, w, mg) in ((3, 8, 8, 36), (2, 8, 10, 100)):
        args, kwargs = fast_case(rng, x_dt, w_dt, y_dt, "distinct")
        cg = args[0].shape[1]
        x, wt = random_ints(rng, x_dt, (n, cg, h, w)), random_ints(rng, w_dt, (mg, cg, 3, 3))
        args = (x, args[1], args[2], wt, np.resize(args[4], mg), random_ints(rng, w_dt, (mg,)),
                np.resize(args[6], mg)) + args[7:]
        kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 1), end_padding=(1, 1), group_count=1)
        with fast_device.variants(tuning={**NO_DOT, "conv.coopmat.splitk": False}):     # the kernel's own epilogue
            op = prepare_call(*args, **kwargs, output_dtype=y_dt, device=fast_device)[0]
            assert op.kernels[-1].variant == "conv.coopmat" and C(op.kernels[-1])["PACKED_OUT"] == 2
            got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=fast_device)
        assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs))


@pytest.mark.parametrize("w_dt", [U8, I8], ids=lambda t: t.name.lower())
def test_filter_packing_header_at_any_subgroup_size(device, rng, w_dt):
    # qconv_pack_filter on its own: each output channel's correction header (spec 4.3's integer
    # identity, see the shader) sums the row's taps through one partial sum per subgroup. A row of
    # 864 taps is 216 words: 54 subgroups of 4 invocations (SwiftShader, lavapipe at 128-bit
    # vectors), which once overflowed a 32-entry array.
    m, cg, kh, kw = 8, 96, 3, 3
    desc = conv_desc(1, cg, 6, 6, m, kh, kw, w_dt=w_dt)
    kernels, scratch = desc.plan(coopmat_caps())
    pack = kernels[1]
    assert pack.shader == "qconv_pack_filter"
    w = random_ints(rng, w_dt.numpy_dtype, (m, cg, kh, kw))
    x_zp, w_zp = 37, random_ints(rng, w_dt.numpy_dtype, (m,))
    params = np.zeros(2 + 4 * m + 16, np.int32)
    params[0], params[2 + m:2 + 2 * m] = x_zp, w_zp
    out = device.upload(np.full(scratch[1], 0x5A, np.uint8))
    inputs = (device.upload(np.zeros(16, np.uint8)), device.upload(w.view(np.uint8).ravel()),
              device.upload(params.view(np.uint8)))
    Program(device, [(pack, inputs + (out,))]).run()
    header = out.numpy(np.int32, (scratch[1] // 4,))[:2 * m]
    ws = w.astype(np.int64) - (0 if w_dt == I8 else 128)          # the shader's signed taps
    cx, cw = 128 - x_zp, (0 if w_dt == I8 else 128) - w_zp.astype(np.int64)
    expected = cx * ws.reshape(m, -1).sum(axis=1) + cg * kh * kw * cx * cw
    assert np.array_equal(header[:m], expected.astype(np.int32)), (header[:m], expected)
    assert np.array_equal(header[m:], cw.astype(np.int32))


def test_emulated_matrices_take_64_channel_tiles_and_the_loop_form_the_device_allows():
    # An emulated fragment is 8 ints of each invocation: with 128-channel tiles (WM 4) SwiftShader's
    # compiler stopped the process ("Local variable exceeds stack size limit"), so the emulation
    # takes 64-channel tiles whatever the channels; its multiply-add loops are unrolled only where
    # the device has a loop-iteration limit (lavapipe before Mesa 25), which rolled loops would reach.
    wide = conv_desc(1, 32, 6, 6, 150, 3, 3)
    assert C(wide.plan(coopmat_caps())[0][-1])["WM_SPEC"] == 4
    emulated = Capabilities(features=frozenset(), subgroup_size=4).with_emulated_cooperative_matrix()
    kernels = wide.plan(emulated)[0]
    coopmat = next(k for k in kernels if k.shader == "qlinear_conv_coopmat")
    assert C(coopmat)["WM_SPEC"] == 2 and ("WM_FIXED", 2) in coopmat.defines
    assert ("COOPMAT_EMU_ROLLED", 1) in coopmat.defines
    limited = dataclasses.replace(emulated, loop_iteration_limit=65535)
    coopmat = next(k for k in wide.plan(limited)[0] if k.shader == "qlinear_conv_coopmat")
    assert ("COOPMAT_EMULATED", 1) in coopmat.defines and ("COOPMAT_EMU_ROLLED", 1) not in coopmat.defines


@pytest.fixture(scope="module")
def dot_device():
    dev = dmlvk.Device()
    if not dev.capabilities.integer_dot_product:
        pytest.skip(f"{dev.name} offers no shaderIntegerDotProduct (conv.dot's requirement)")
    return dev


def dot_case(rng, x_dt, w_dt, y_dt, zp_kind):
    """A random layer conv.dot runs: word-aligned rows (OW a multiple of 4), horizontal dilation 1,
    1 to 40 input and output channels a group (channel blocks that end inside a group), windows up
    to 5 x 8 (two filter words a row), strides, vertical dilations and paddings, 1 or 2 groups."""
    while True:
        cg, mg = int(rng.choice([1, 2, 3, 8, 32, 40])), int(rng.choice([1, 3, 4, 9, 16, 20]))
        kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 9))
        (sh, sw), dh = (int(rng.integers(1, 3)), int(rng.choice([1, 2, 4]))), int(rng.integers(1, 3))
        h, w = int(rng.integers(3, 12)), int(rng.choice([8, 12, 16, 24, 40]))
        p0, p1 = tuple(int(v) for v in rng.integers(0, (kh, kw))), tuple(int(v) for v in rng.integers(0, (kh, kw)))
        ow = (w + p0[1] + p1[1] - kw) // sw + 1
        if ow > 0 and ow % 4 == 0 and h + p0[0] + p1[0] >= (kh - 1) * dh + 1:
            break
    groups, n = int(rng.choice([1, 2])), int(rng.integers(1, 3))
    m = mg * groups
    x, wt = random_ints(rng, x_dt, (n, cg * groups, h, w)), random_ints(rng, w_dt, (m, cg, kh, kw))
    zp = {"none": lambda dt, shape: np.zeros(shape, dt), "equal": lambda dt, shape: np.full(shape, random_ints(rng, dt, ()), dt),
          "distinct": lambda dt, shape: random_ints(rng, dt, shape)}[zp_kind]
    args = (x, np.float32(0.02), zp(x_dt, ()), wt, rng.uniform(0.001, 0.05, m).astype(np.float32), zp(w_dt, (m,)),
            rng.integers(-5000, 5000, m).astype(np.int32), np.float32(0.7), random_ints(rng, y_dt, ()))
    return args, dict(strides=(sh, sw), dilations=(dh, 1), start_padding=p0, end_padding=p1, group_count=groups)


@pytest.mark.parametrize("types", ALL_TYPES, ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_dot_kernel_is_exact(dot_device, rng, types):
    """conv.dot (forced: CPU devices do not choose it) on random layers and zero points (distinct
    filter zero points: the window sums) against the reference; with DOT_FEW_OUTPUTS outputs an
    invocation (these small layers have few invocations) and, DOT_FEW_INVOCATIONS 0, with DOT_OUTPUTS."""
    x_dt, w_dt, y_dt = types
    for zp_kind, few in (("none", None), ("equal", 0), ("distinct", None), ("distinct", 0)):
        with dot_device.variants(force="conv.dot", tuning={} if few is None else {"DOT_FEW_INVOCATIONS": few}):
            args, kwargs = dot_case(rng, x_dt, w_dt, y_dt, zp_kind)
            op = prepare_call(*args, **kwargs, output_dtype=y_dt, device=dot_device)[0]
            assert [k.variant for k in op.kernels] == ["conv.dot"], op.kernels
            assert C(op.kernels[0])["OPT"] == TABLE.tuning["DOT_OUTPUTS" if few == 0 else "DOT_FEW_OUTPUTS"]
            got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=dot_device)
            assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)), kwargs


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_dot_kernel_last_column_words(dot_device, rng, types):
    """conv.dot with filters KW % 4 == 1 wide, whose last column's taps it multiplies four rows a word:
    1 to 9 rows (a column word partly filled, exactly filled, two of them), 1, 5 and 9 columns, several
    input channels (the column words start again for each), strides 1 and 2, padding, vertical
    dilation, distinct filter zero points (the window sums) and none; against the reference."""
    x_dt, w_dt, y_dt = types
    # kh, kw, cg, groups, (sh, sw), dh, h, w, start padding, end padding, zero points
    cases = [(5, 5, 1, 1, (1, 1), 1, 9, 24, (2, 2), (2, 2), "distinct"), (4, 1, 3, 1, (1, 1), 1, 7, 16, (0, 0), (0, 0), "none"),
             (8, 5, 2, 2, (2, 2), 1, 13, 24, (3, 1), (1, 2), "distinct"), (3, 9, 1, 1, (1, 1), 2, 9, 40, (1, 4), (1, 4), "distinct"),
             (9, 1, 8, 1, (1, 1), 1, 12, 8, (4, 0), (4, 0), "none"), (1, 5, 2, 1, (1, 1), 1, 4, 20, (0, 2), (0, 2), "distinct")]
    for kh, kw, cg, g, (sh, sw), dh, h, w, p0, p1, zp_kind in cases:
        m = 4 * g
        x, wt = random_ints(rng, x_dt, (2, cg * g, h, w)), random_ints(rng, w_dt, (m, cg, kh, kw))
        wzp = random_ints(rng, w_dt, (m,)) if zp_kind == "distinct" else np.zeros(m, w_dt)
        args = (x, np.float32(0.02), random_ints(rng, x_dt, ()), wt, rng.uniform(0.001, 0.05, m).astype(np.float32), wzp,
                rng.integers(-5000, 5000, m).astype(np.int32), np.float32(0.7), random_ints(rng, y_dt, ()))
        kwargs = dict(strides=(sh, sw), dilations=(dh, 1), start_padding=p0, end_padding=p1, group_count=g)
        with dot_device.variants(force="conv.dot"):
            op = prepare_call(*args, **kwargs, output_dtype=y_dt, device=dot_device)[0]
            assert [k.variant for k in op.kernels] == ["conv.dot"], op.kernels
            got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=dot_device)
        want = reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)
        assert got.shape[3] % 4 == 0 and np.array_equal(got, want), (kh, kw, cg, sw)


@pytest.mark.parametrize("y_dt", [np.uint8, np.int8])
def test_dot_kernel_extremes(dot_device, y_dt):
    """Sums far past 2^22 (255 x -128 over 288 taps: the float requantization's saturating range),
    biases that make the int32 sum wrap (a tiny multiplier keeps the wrapped sums in range), and sums
    near 0, at both output signednesses."""
    x = np.full((1, 32, 6, 16), 255, np.uint8)
    x[0, :, 2, 3] = 0
    wt = np.full((4, 32, 3, 3), -128, np.int8)
    wt[1, 5, 1, 1] = 7
    full = 255 * 128 * 288
    for bias, w_scale in ((np.array([0, 17, -9, 3], np.int32), 1.0),
                          (np.array([full + 37, full - 50, full, full - 255 * 128], np.int32), 0.5),
                          (np.array([2**31 - 1, -(2**31), 2**31 - 1 - full, 5], np.int32), 5e-8)):
        args = (x, 1.0, np.uint8(0), wt, np.float32(w_scale), np.int8(0), bias, 1.0, np.dtype(y_dt).type(3))
        kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 1), end_padding=(1, 1), group_count=1)
        with dot_device.variants(force="conv.dot"):
            got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=dot_device)
        assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)), bias


@pytest.mark.parametrize("layer", ["5x5 1->64", "3x3 32->4"])
def test_dot_kernel_against_onnxruntime(dot_device, rng, layer):
    """The super-resolution model's first and last layers' forms, u8 x s8 with 7-bit weights,
    through conv.dot against onnxruntime."""
    c, m, k = {"5x5 1->64": (1, 64, 5), "3x3 32->4": (32, 4, 3)}[layer]
    x = random_ints(rng, np.uint8, (2, c, 19, 24))
    wt = random_ints(rng, np.int8, (m, c, k, k), -64, 63)
    args = (x, 0.02, np.uint8(3), wt, rng.uniform(0.001, 0.01, m).astype(np.float32), np.zeros(m, np.int8),
            rng.integers(-500, 500, m).astype(np.int32), 0.05, np.uint8(7))
    kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=(k // 2,) * 2, end_padding=(k // 2,) * 2,
                  group_count=1)
    model, feeds = onnx_qlinearconv_model(args, kwargs, np.dtype(np.uint8))
    with dot_device.variants(force="conv.dot"):
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=np.uint8, device=dot_device)
    assert np.array_equal(got, run_onnxruntime(model, feeds))


def test_dot_kernel_choice():
    """Where conv.dot is chosen: on a GPU with packed dot products, groups of at most DOT_FEW_CHANNELS
    output channels over COOPMAT_MIN_INPUT_CHANNELS input channels or more (the super-resolution last
    layer), and narrow groups of DOT_NARROW_MIN_CHANNELS output channels or more (its first layer);
    not its middle layer, depthwise layers, CPU devices, horizontal dilations, rows that are not
    whole words. Forced where it cannot run, it says so."""
    gpu = dataclasses.replace(coopmat_caps(), features=coopmat_caps().features | {"shaderIntegerDotProduct"})
    few, least = TABLE.tuning["DOT_FEW_CHANNELS"], TABLE.tuning["DOT_NARROW_MIN_CHANNELS"]
    chosen = lambda d, caps=gpu: [k.variant for k in d.plan(caps)[0]]
    assert chosen(conv_desc(1, 32, 54, 96, 4, 3, 3, pads=(1, 1))) == ["conv.dot"]
    assert chosen(conv_desc(1, COOPMAT_MIN_INPUT_CHANNELS, 54, 96, few, 3, 3, pads=(1, 1))) == ["conv.dot"]
    assert chosen(conv_desc(1, 1, 54, 96, 64, 5, 5, pads=(2, 2))) == ["conv.dot"]
    assert chosen(conv_desc(1, 3, 54, 96, least, 3, 3, pads=(1, 1))) == ["conv.dot"]
    cl = conv_desc(1, 1, 54, 96, 64, 5, 5, pads=(2, 2), out_strides=(54 * 96 * 64, 1, 96 * 64, 64)).plan(gpu)[0]
    # a pixel's 64 channels together, DOT_VEC_CHANNELS (16) an invocation, each invocation's a store
    assert [k.variant for k in cl] == ["conv.dot"] and (C(cl[0])["CL_OUT"], C(cl[0])["BLOCKS"], C(cl[0])["MB"],
                                                        C(cl[0])["CL_VEC"]) == (1, 4, 16, 1)
    # DOT_OUTPUTS outputs an invocation, DOT_FEW_OUTPUTS where that leaves fewer than DOT_FEW_INVOCATIONS
    # invocations: 8 blocks of 8 channels by ceil(H x ceil(W / 8) / 128) tiles of 128 at 540 x 960 and 1080 x 1920
    opt = lambda h, w: C(conv_desc(1, 1, h, w, 64, 5, 5, pads=(2, 2)).plan(gpu)[0][0])["OPT"]
    assert TABLE.tuning["DOT_FEW_INVOCATIONS"] == 1 << 20 and 8 * -(-540 * 120 // 128) * 128 < 1 << 20 <= 8 * -(-1080 * 240 // 128) * 128
    assert (opt(540, 960), opt(1080, 1920)) == (TABLE.tuning["DOT_FEW_OUTPUTS"], TABLE.tuning["DOT_OUTPUTS"]) == (4, 8)
    # the boundary: its 8 * 507 * 128 = 519,168 invocations with 8 at 540 x 960 are not fewer than
    # 519,168, but fewer than 519,169
    first = conv_desc(1, 1, 540, 960, 64, 5, 5, pads=(2, 2))
    at = lambda few: C(first.plan(gpu, tuning={"DOT_FEW_INVOCATIONS": few})[0][0])
    assert (at(519_168)["OPT"], at(519_169)["OPT"]) == (8, 4)
    assert "conv.dot" not in chosen(conv_desc(1, 64, 54, 96, 32, 3, 3, pads=(1, 1)))
    assert "conv.dot" not in chosen(conv_desc(1, 32, 54, 96, few + 1, 3, 3, pads=(1, 1)))
    assert chosen(conv_desc(1, 1, 54, 96, least - 1, 5, 5, pads=(2, 2))) != ["conv.dot"]
    assert chosen(conv_desc(1, 8, 54, 96, 8, 3, 3, groups=8, pads=(1, 1))) != ["conv.dot"]     # depthwise
    assert chosen(conv_desc(1, 32, 54, 96, 4, 3, 3, pads=(1, 1)), dataclasses.replace(gpu, device_type="CPU")) != ["conv.dot"]
    assert chosen(conv_desc(1, 32, 54, 96, 4, 3, 3, pads=(2, 2), dil=(1, 2))) != ["conv.dot"]
    odd = conv_desc(1, 32, 54, 95, 4, 3, 3, pads=(1, 1))                                   # OW 95
    assert chosen(odd) != ["conv.dot"]
    with pytest.raises(ValueError, match="conv.dot cannot run"):
        odd.plan(gpu, force="conv.dot")
    assert chosen(conv_desc(1, 32, 54, 96, 4, 3, 3, pads=(1, 1)), dataclasses.replace(gpu, features=coopmat_caps().features)) != ["conv.dot"]


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_dot_kernel_channels_last_output(dot_device, rng, types):
    """conv.dot writing a channels-last output (four channels of a pixel a word; blocks of 4 or 8
    channels that divide the group), on random layers, against the reference."""
    x_dt, w_dt, y_dt = types
    with dot_device.variants(force="conv.dot"):
        for zp_kind in ("none", "distinct", "distinct"):
            args, kwargs = dot_case(rng, x_dt, w_dt, y_dt, zp_kind)
            mg = int(rng.choice([4, 8, 12, 16, 64]))
            groups = kwargs["group_count"]
            x, wt = args[0], args[3]
            wt = random_ints(rng, w_dt, (mg * groups,) + wt.shape[1:])
            m = mg * groups
            args = (x, args[1], args[2], wt, rng.uniform(0.001, 0.05, m).astype(np.float32),
                    random_ints(rng, w_dt, (m,)) if zp_kind == "distinct" else np.zeros(m, w_dt),
                    rng.integers(-5000, 5000, m).astype(np.int32)) + args[7:]
            got, expected, op = _channels_last_call(dot_device, args, kwargs, y_dt)
            assert [k.variant for k in op.kernels] == ["conv.dot"] and C(op.kernels[0])["CL_OUT"] == 1, op.kernels
            assert np.array_equal(got, expected), kwargs


def _channels_last_call(device, args, kwargs, y_dt, output=True, input=False, force=None, tuning=None, pixel=None):
    """(output, the reference's, the operator) of the numpy-level call's arguments, its output
    tensor channels-last (channel stride 1; its pixels `pixel` bytes apart where given, the bytes past
    its channels checked untouched) where output, its input tensor where input; the operator's variant
    forced where force names one, its tuning numbers where tuning gives some."""
    x, wt = args[0], args[3]
    expected = reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)
    n, m, oh, ow = expected.shape
    _, c, h, w = x.shape
    pixel = pixel or m
    dt = {np.dtype(np.uint8): U8, np.dtype(np.int8): I8}
    desc = prepare_call(*args, **kwargs, output_dtype=y_dt, device=device)[0].desc
    if output:
        desc = dataclasses.replace(desc, output_tensor=TensorDesc(dt[np.dtype(y_dt)], expected.shape,
                                                                  (oh * ow * pixel, 1, ow * pixel, pixel)))
    if input:
        desc = dataclasses.replace(desc, input_tensor=TensorDesc(dt[x.dtype], x.shape, (h * w * c, 1, w * c, c)))
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    op = device.create_operator(desc, force=force, tuning=tuning)
    words = lambda a, dt_: np.concatenate([np.ravel(np.asarray(a, dt_)), np.zeros(3, dt_)])
    xzp = args[2] if args[2] is not None else 0
    size = n * oh * ow * pixel if output else expected.size
    out = np.full(size + 3, 0x5A, y_dt)
    op.execute(inputs=[x, np.float32([args[1]]), words(xzp, x.dtype), wt, args[4], words(args[5], wt.dtype), args[6],
                       np.float32([args[7]]), words(args[8], y_dt)], outputs=[out])
    if not output:
        return out[:size].reshape(n, m, oh, ow), expected, op
    got = out[:size].reshape(n, oh, ow, pixel)
    assert (got[..., m:] == 0x5A).all(), "bytes past the channels written"
    return got[..., :m].transpose(0, 3, 1, 2), expected, op


@pytest.mark.parametrize("types", ALL_TYPES, ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_dot_kernel_channels_last_input(dot_device, rng, types):
    """conv.dot.nhwc (forced) on random layers with a channels-last input (16 to 48 input channels a
    group, 16 a load; horizontal stride 1, windows of DOT_NHWC_MOST_TAPS taps or fewer), rows or
    channels-last outputs, and zero points that need the window sums or not, against the reference.
    A larger window, or another stride, is refused."""
    x_dt, w_dt, y_dt = types
    for i, (zp_kind, out_cl) in enumerate((("none", False), ("distinct", False), ("equal", True), ("distinct", True))):
        args, kwargs = dot_case(rng, x_dt, w_dt, y_dt, zp_kind)
        while args[3].shape[2] * args[3].shape[3] > TABLE.tuning["DOT_NHWC_MOST_TAPS"] or kwargs["strides"][1] != 1:
            args, kwargs = dot_case(rng, x_dt, w_dt, y_dt, zp_kind)
        cg, mg = int(rng.choice([16, 32, 48])), int(rng.choice([4, 8, 12])) if out_cl else int(rng.choice([1, 3, 4, 9]))
        groups = kwargs["group_count"]
        n, _, h, w = args[0].shape
        m = mg * groups
        kh, kw = args[3].shape[2:]
        args = (random_ints(rng, x_dt, (n, cg * groups, h, w)), args[1], args[2],
                random_ints(rng, w_dt, (m, cg, kh, kw)), rng.uniform(0.001, 0.05, m).astype(np.float32),
                random_ints(rng, w_dt, (m,)) if zp_kind == "distinct" else np.zeros(m, w_dt),
                rng.integers(-5000, 5000, m).astype(np.int32)) + args[7:]
        # DOT_FEW_OUTPUTS outputs an invocation (few invocations), and every other case DOT_OUTPUTS
        got, expected, op = _channels_last_call(dot_device, args, kwargs, y_dt, output=out_cl, input=True,
                                                force="conv.dot.nhwc", tuning={"DOT_FEW_INVOCATIONS": 0} if i % 2 else None)
        assert [k.variant for k in op.kernels] == ["conv.dot.nhwc"], op.kernels
        assert (C(op.kernels[0])["CL_IN"], C(op.kernels[0])["CL_OUT"]) == (1, int(out_cl))
        assert C(op.kernels[0])["OPT"] == TABLE.tuning["DOT_OUTPUTS" if i % 2 else "DOT_FEW_OUTPUTS"]
        assert np.array_equal(got, expected), (kwargs, cg, mg)
    for refused in (conv_desc(1, 32, 12, 16, 8, 3, 5, pads=(1, 2)), conv_desc(1, 32, 12, 16, 8, 3, 3, strides=(1, 2))):
        refused = dataclasses.replace(refused, input_tensor=TensorDesc(U8, (1, 32, 12, 16), (12 * 16 * 32, 1, 16 * 32, 32)))
        with pytest.raises(ValueError, match="conv.dot.nhwc cannot run"):
            dot_device.create_operator(refused, force="conv.dot.nhwc")


@pytest.mark.parametrize("types", ALL_TYPES, ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_dot_walk_exact(dot_device, rng, types):
    """conv.dot.nhwc's WALK (each subgroup walking DOT_WALK output rows, a lane an output column, the
    window's next positions from the next lanes): 8-bit rows (each word gathered from four lanes) and
    channels-last outputs, windows of 3 x 3, 1 x 5, 1 x 3 and 2 x 1 with paddings up to 4, widths that end inside a subgroup
    and heights inside a band (DOT_WALK 1, 3, 8), one or two groups and images, window sums or none;
    against the reference and against the same layer without WALK. Where a stride or dilation is not 1,
    or the channels take several blocks, WALK stays 0."""
    x_dt, w_dt, y_dt = types
    cases = [  # n, groups, cg, mg, h, w, kh, kw, start padding, end padding, channels-last output, zero points
        (1, 1, 32, 4, 7, 20, 3, 3, (1, 1), (1, 1), False, "distinct"),
        (2, 2, 16, 8, 5, 12, 1, 5, (0, 4), (2, 0), True, "none"),
        (1, 1, 48, 3, 9, 34, 1, 3, (0, 2), (0, 2), False, "equal"),
        (1, 1, 16, 4, 4, 8, 2, 1, (1, 0), (0, 0), True, "distinct"),
    ]
    for i, (n, groups, cg, mg, h, w, kh, kw, p0, p1, out_cl, zp_kind) in enumerate(cases):
        m = mg * groups
        zp = {"none": lambda dt, shape: np.zeros(shape, dt), "equal": lambda dt, shape: np.full(shape, random_ints(rng, dt, ()), dt),
              "distinct": lambda dt, shape: random_ints(rng, dt, shape)}[zp_kind]
        args = (random_ints(rng, x_dt, (n, cg * groups, h, w)), np.float32(0.02), zp(x_dt, ()),
                random_ints(rng, w_dt, (m, cg, kh, kw)), rng.uniform(0.001, 0.05, m).astype(np.float32),
                zp(w_dt, (m,)), rng.integers(-5000, 5000, m).astype(np.int32), np.float32(0.7), random_ints(rng, y_dt, ()))
        kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=p0, end_padding=p1, group_count=groups)
        outs = []
        for walk in (0, (1, 3, 8, 8)[i]):
            got, expected, op = _channels_last_call(dot_device, args, kwargs, y_dt, output=out_cl, input=True,
                                                    force="conv.dot.nhwc", tuning={"DOT_WALK": walk})
            assert C(op.kernels[0])["WALK"] == walk, (C(op.kernels[0]), walk)
            assert np.array_equal(got, expected), (i, walk)
            outs.append(got)
        assert np.array_equal(outs[0], outs[1])
    # a stride of 2, a dilation of 2, and 16 channels in two blocks of 8: no WALK
    for kwargs, mg, cl in ((dict(strides=(2, 1), dilations=(1, 1)), 4, False), (dict(strides=(1, 1), dilations=(2, 1)), 4, False),
                           (dict(strides=(1, 1), dilations=(1, 1)), 16, True)):
        args = (random_ints(rng, x_dt, (1, 16, 8, 8)), np.float32(0.02), random_ints(rng, x_dt, ()), random_ints(rng, w_dt, (mg, 16, 3, 3)),
                np.full(mg, 0.01, np.float32), np.zeros(mg, w_dt), np.zeros(mg, np.int32), np.float32(0.5), random_ints(rng, y_dt, ()))
        kwargs = dict(kwargs, start_padding=(1, 1), end_padding=(1, 1), group_count=1)
        got, expected, op = _channels_last_call(dot_device, args, kwargs, y_dt, output=cl, input=True,
                                                force="conv.dot.nhwc", tuning={"DOT_CHANNELS": 8})
        assert C(op.kernels[0])["WALK"] == 0 and np.array_equal(got, expected), kwargs


def test_dot_walk_rule():
    """Which rows conv.dot.nhwc walks (planning only): the ESPCN's last layer (3x3 32->4, channels-last
    input) walks DOT_WALK rows at 1080x1920 on a GPU of 32-lane subgroups (4,080 subgroups), DOT_FEW_WALK
    at 540x960 (1,020 with DOT_WALK), and none where the subgroups' size may vary, where they do not
    shuffle, or where they are narrower than four lanes."""
    def plan(h, w, **caps):
        base = dict(features=frozenset({"shaderIntegerDotProduct", "subgroupShuffle"}), subgroup_size=32,
                    min_subgroup_size=32, max_subgroup_size=32, device_type="DISCRETE_GPU")
        d = conv_desc(1, 32, h, w, 4, 3, 3, pads=(1, 1))
        d = dataclasses.replace(d, input_tensor=TensorDesc(U8, (1, 32, h, w), (h * w * 32, 1, w * 32, 32)))
        kernels, _ = d.plan(Capabilities(**dict(base, **caps)))
        assert [k.variant for k in kernels] == ["conv.dot.nhwc"], kernels
        return C(kernels[0])["WALK"]
    assert plan(1080, 1920) == TABLE.tuning["DOT_WALK"] == 16
    assert plan(540, 960) == TABLE.tuning["DOT_FEW_WALK"] == 8
    assert plan(1080, 1920, min_subgroup_size=16, max_subgroup_size=64) == 0
    assert plan(1080, 1920, features=frozenset({"shaderIntegerDotProduct"})) == 0
    assert plan(1080, 1920, subgroup_size=2, min_subgroup_size=2, max_subgroup_size=2) == 0
    assert plan(1080, 1920, subgroup_size=4, min_subgroup_size=0, max_subgroup_size=0) == TABLE.tuning["DOT_WALK"]


@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_dot_vector_stores(dot_device, rng, types):
    """conv.dot's channels-last output a block's 8 or 16 channels a store (CL_VEC: strides in as many
    bytes) against the reference and against the same layer stored four channels a word
    (DOT_VEC_STORES off): 8 to 64 channels a group, 1 and 2 groups, 4 and 8 outputs an invocation, rows that end
    inside an invocation's outputs (OW 9, 10, 13), zero points that need the window sums; and pixels
    8 bytes wider than their channels, whose last bytes it leaves as they were."""
    x_dt, w_dt, y_dt = types
    for mg, groups, cg, (h, w), (kh, kw), pads, outputs, channels in (
            (64, 1, 1, (11, 16), (5, 5), ((2, 2), (2, 2)), 8, 8),
            (16, 2, 3, (7, 12), (3, 4), ((1, 0), (1, 0)), 8, 8),    # OW 9
            (8, 2, 2, (6, 12), (2, 3), ((0, 1), (1, 0)), 4, 8),     # OW 10
            (32, 2, 1, (6, 12), (2, 3), ((0, 1), (1, 0)), 4, 16),
            (48, 1, 2, (7, 12), (3, 4), ((1, 0), (1, 0)), 8, 16),   # OW 9
            (24, 1, 1, (9, 16), (5, 5), ((2, 1), (2, 1)), 8, 8)):   # OW 13
        m = mg * groups
        args = (random_ints(rng, x_dt, (2, cg * groups, h, w)), np.float32(0.02), random_ints(rng, x_dt, ()),
                random_ints(rng, w_dt, (m, cg, kh, kw)), rng.uniform(0.001, 0.05, m).astype(np.float32),
                random_ints(rng, w_dt, (m,)), rng.integers(-5000, 5000, m).astype(np.int32), np.float32(0.7),
                random_ints(rng, y_dt, ()))
        kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=pads[0], end_padding=pads[1],
                      group_count=groups)
        results = []
        for vec in (True, False):
            tuning = {"DOT_VEC_STORES": vec, "DOT_OUTPUTS": outputs, "DOT_FEW_INVOCATIONS": 0, "DOT_CHANNELS": channels,
                      "DOT_VEC_CHANNELS": channels}
            got, expected, op = _channels_last_call(dot_device, args, kwargs, y_dt, force="conv.dot", tuning=tuning)
            constants = C(op.kernels[0])
            assert ((constants["CL_OUT"], constants["MB"], constants["OPT"], constants["CL_VEC"])
                    == (1, channels, outputs, int(vec)))
            assert np.array_equal(got, expected), (mg, groups, h, w, vec)
            results.append(got)
        assert np.array_equal(*results)
    # the last layer's pixels 8 bytes wider than its channels: the bytes past them left as they were
    got, expected, op = _channels_last_call(dot_device, args, kwargs, y_dt, force="conv.dot", pixel=8 * -(-m // 8) + 8)
    assert C(op.kernels[0])["CL_VEC"] == 1 and np.array_equal(got, expected)


def test_dot_vector_stores_rule():
    """Where conv.dot stores a channels-last output a block's channels at a time (planning only):
    blocks of DOT_VEC_CHANNELS (16) where the group's channels and the strides come in sixteens, else
    of DOT_CHANNELS (8; 8 and 24 channels forced, as DOT_NARROW_MIN_CHANNELS is 16) with 8-byte
    strides; not with blocks of 4 (12 channels), pixels 68 bytes apart (72 with blocks of 16), or
    DOT_VEC_STORES off (blocks of DOT_CHANNELS then)."""
    gpu = Capabilities(features=frozenset({"shaderIntegerDotProduct"}), subgroup_size=32, device_type="DISCRETE_GPU")

    def vec(m, pixel=None, **tuning):
        pixel = pixel or m
        d = conv_desc(1, 1, 54, 96, m, 5, 5, pads=(2, 2), out_strides=(54 * 96 * pixel, 1, 96 * pixel, pixel))
        kernels = d.plan(gpu, force="conv.dot", tuning=tuning)[0]
        assert [k.variant for k in kernels] == ["conv.dot"] and C(kernels[0])["CL_OUT"] == 1, kernels
        return C(kernels[0])["MB"], C(kernels[0])["CL_VEC"]
    assert [vec(m) for m in (16, 48, 64)] == [(16, 1)] * 3                   # DOT_VEC_CHANNELS
    assert [vec(m) for m in (8, 24)] == [(8, 1)] * 2                         # DOT_CHANNELS: not in sixteens
    assert (vec(64, pixel=72), vec(64, DOT_VEC_CHANNELS=8), vec(64, DOT_CHANNELS=16, pixel=72)) == ((8, 1), (8, 1), (16, 0))
    assert (vec(12), vec(64, pixel=68), vec(64, DOT_VEC_STORES=False)) == ((4, 0), (8, 0), (8, 0))


@pytest.mark.parametrize("channels_last", [False, True], ids=["rows", "channels-last"])
def test_dot_kernel_tiles(dot_device, rng, channels_last):
    """Several tiles a workgroup (DOT_TILES, DOT_TILES_BLOCKS: its filter staged once for them): 3 tiles of rows (128
    invocations of 8 outputs a tile) or 5 channels-last ones (two blocks of 8 channels a pixel, DOT_VEC_CHANNELS 8: 64
    invocations a tile) in workgroups of 2, the last with one tile, in each of 2 groups; against the
    reference, as with one tile a workgroup."""
    x_dt, w_dt, y_dt = np.uint8, np.int8, np.uint8
    mg = 16 if channels_last else 8
    x = random_ints(rng, x_dt, (2, 6, 30, 40))
    wt = random_ints(rng, w_dt, (2 * mg, 3, 3, 5))
    args = (x, np.float32(0.02), np.uint8(5), wt, rng.uniform(0.001, 0.05, 2 * mg).astype(np.float32),
            random_ints(rng, w_dt, (2 * mg,)), rng.integers(-5000, 5000, 2 * mg).astype(np.int32), np.float32(0.7),
            np.uint8(9))
    kwargs = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 2), end_padding=(1, 2), group_count=2)
    for tiles in (2, 1):
        with dot_device.variants(force="conv.dot", tuning={"DOT_TILES": tiles, "DOT_TILES_BLOCKS": tiles,
                                                                "DOT_MIN_WORKGROUPS": 1, "DOT_FEW_INVOCATIONS": 0,
                                                                "DOT_VEC_CHANNELS": 8}):
            if channels_last:
                got, expected, op = _channels_last_call(dot_device, args, kwargs, y_dt)
            else:
                op = prepare_call(*args, **kwargs, output_dtype=y_dt, device=dot_device)[0]
                got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=dot_device)
                expected = reference.quantized_linear_convolution(*args, np.dtype(y_dt), **kwargs)
        (kernel,) = op.kernels
        constants = C(kernel)
        assert (constants["TILES"], constants["CL_OUT"], constants["BLOCKS"]) == (tiles, int(channels_last),
                                                                                 2 if channels_last else 1)
        assert kernel.count == 2 * -(-(3 if not channels_last else 5) // tiles) * 128
        assert np.array_equal(got, expected), tiles


def test_dequantized_output_only_where_conv_dot_runs(device):
    """QuantizedLinearConvolutionDesc.compile_dequantized (the ONNX runner's folded DepthToSpace and
    DequantizeLinear): conv.dot.float with the packed float32 image as its output where the plan is
    conv.dot writing rows; None where the plan is another kernel, or the channels are not a multiple
    of block^2; validated as compile() validates; conv.dot.float cannot be forced (it extends conv.dot,
    reached only through compile_dequantized)."""
    desc = conv_desc(1, 16, 4, 8, 4, 3, 3, pads=(1, 1))
    with device.variants(tuning={"conv.dot": False}):
        assert desc.compile_dequantized(device, (2, False, 0.5, 3)) is None
    bad = dataclasses.replace(desc, group_count=3)                    # 16 channels: not 3 groups
    with pytest.raises(ValidationError):
        bad.compile_dequantized(device, (2, False, 0.5, 3))
    if not device.capabilities.integer_dot_product:
        return
    with device.variants(tuning={"DOT_ON_CPU": True}):
        fused = desc.compile_dequantized(device, (2, True, np.float32(0.5), -3))
        assert desc.compile_dequantized(device, (3, False, 0.5, 3)) is None     # 4 channels: not 9 a block
    assert [k.variant for k in fused.kernels] == ["conv.dot.float"]
    assert C(fused.kernels[0])["D2S"] == 2 and C(fused.kernels[0])["DQ_ZP_BITS"] == 2**32 - 3
    out = fused.output_descs[0]
    assert (out.data_type, tuple(out.sizes)) == (F32, (1, 1, 8, 16))
    with pytest.raises(ValueError, match="has no variant"):
        device.create_operator(desc, force="conv.dot.float")
