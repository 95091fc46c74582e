"""Independent numpy references, written from the spec's formulas (not from the shaders)."""
from __future__ import annotations

import numpy as np


def _order_name(order) -> str:
    from .enums import DepthSpaceOrder
    return "DCR" if DepthSpaceOrder.parse(order) == DepthSpaceOrder.DEPTH_COLUMN_ROW else "CRD"


def depth_to_space(x: np.ndarray, b: int, order="DCR") -> np.ndarray:
    """Spec 3.3 reshape/transpose forms (ONNX DepthToSpace)."""
    n, c, h, w = x.shape
    cs = c // (b * b)
    if _order_name(order) == "DCR":
        y = x.reshape(n, b, b, cs, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, cs, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(y).reshape(n, cs, h * b, w * b)


def space_to_depth(x: np.ndarray, b: int, order="DCR") -> np.ndarray:
    """Spec 3.3: DCR is ONNX SpaceToDepth; CRD is the inverse of CRD depth-to-space."""
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    if _order_name(order) == "DCR":
        y = y.transpose(0, 3, 5, 1, 2, 4)
    else:
        y = y.transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(y).reshape(n, c * b * b, h // b, w // b)


def requantize(acc: np.ndarray, multiplier: np.ndarray, output_zero_point: int, output_dtype) -> np.ndarray:
    """y = clamp(roundEven(float32(acc) * multiplier[m]) + yZP): ONNX Runtime's float32 arithmetic.
    acc is (N, M, ...) int32; multiplier has M float32 entries."""
    info = np.iinfo(output_dtype)
    shape = (1, -1) + (1,) * (acc.ndim - 2)
    with np.errstate(all="ignore"):
        real = acc.astype(np.float32) * np.asarray(multiplier, np.float32).reshape(shape)
        q = np.rint(real).astype(np.float64) + int(output_zero_point)
    return np.clip(q, info.min, info.max).astype(output_dtype)


def conv_integer_accumulators(x, x_zp, w, w_zp, bias=None, strides=(1, 1), dilations=(1, 1),
                              start_padding=(0, 0), end_padding=(0, 0), group_count=1,
                              output_size=None) -> np.ndarray:
    """Spec 4.3's accumulator, a direct loop over the kernel taps, int32 with wraparound:
    acc[n,m,oh,ow] = bias[m] + sum_{c,kh,kw} (X[n, g*Cg+c, ih, iw] - xZP) * (W[m,c,kh,kw] - wZP[m]),
    taps outside the input contributing 0. x is (N,C,H,W), w is (M,Cg,KH,KW). output_size (OH, OW)
    asks for another output grid than the formula's (DirectML computes over the grid it is given)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    (ph0, pw0), (ph1, pw1) = start_padding, end_padding
    if output_size is not None:
        oh, ow = output_size
    else:
        oh = (h + ph0 + ph1 - ((kh - 1) * dh + 1)) // sh + 1
        ow = (wd + pw0 + pw1 - ((kw - 1) * dw + 1)) // sw + 1
    xs = x.astype(np.int64) - int(x_zp)

    def taps(size, outs, k, s, d, pad):
        """Per kernel tap: the input index of every output position (exact integers, so UINT
        members up to 2^32-1 are fine) and whether it lies inside the input (else padding: 0)."""
        out = []
        for t in range(k):
            pos = [o * s + t * d - pad for o in range(outs)]
            inside = np.array([0 <= q < size for q in pos], bool)
            out.append((np.array([q if 0 <= q < size else 0 for q in pos], np.int64), inside))
        return out

    rows, cols = taps(h, oh, kh, sh, dh, ph0), taps(wd, ow, kw, sw, dw, pw0)
    ws = w.astype(np.int64) - np.broadcast_to(np.asarray(w_zp, np.int64).reshape(-1), (m,)).reshape(m, 1, 1, 1)
    acc = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group_count
    for grp in range(group_count):
        xg = xs[:, grp * cg:(grp + 1) * cg]
        wg = ws[grp * mg:(grp + 1) * mg]
        for i, (ri, rin) in enumerate(rows):
            for j, (ci, cin) in enumerate(cols):
                patch = xg[:, :, ri][:, :, :, ci] * (rin[:, None] & cin[None, :])   # real-domain zero outside
                acc[:, grp * mg:(grp + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, wg[:, :, i, j])
    if bias is not None:
        acc += np.asarray(bias, np.int64).reshape(1, m, 1, 1)
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)        # int32 wraparound


def quantized_linear_convolution(x, x_scale, x_zp, w, w_scale, w_zp, bias, y_scale, y_zp, output_dtype,
                                 **conv) -> np.ndarray:
    """Spec 4.3 with the project's requantization (see README): NCHW in, NCHW out."""
    m = w.shape[0]
    acc = conv_integer_accumulators(x, 0 if x_zp is None else x_zp, w, 0 if w_zp is None else w_zp, bias, **conv)
    ws = np.broadcast_to(np.asarray(w_scale, np.float32).reshape(-1), (m,))
    mult = ((np.float32(x_scale) * ws).astype(np.float32) / np.float32(y_scale)).astype(np.float32)
    return requantize(acc, mult, 0 if y_zp is None else y_zp, output_dtype)


def quantized_linear_add(a, a_scale, a_zp, b, b_scale, b_zp, out_scale, out_zp, output_dtype) -> np.ndarray:
    """ELEMENT_WISE_QUANTIZED_LINEAR_ADD by its documented formula (spec zoo 2.2), element by element
    in float32: round_half_even(((a - aZP) * aScale + (b - bZP) * bScale) / outScale) + outZP,
    saturated (a NaN quotient as the type's lowest value, as DirectML gives). a and b are broadcast
    to one shape."""
    f32 = np.float32
    info = np.iinfo(output_dtype)
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    zp = lambda v: 0 if v is None else int(np.asarray(v).reshape(-1)[0])
    with np.errstate(all="ignore"):
        total = (a.astype(np.int64) - zp(a_zp)).astype(f32) * f32(a_scale) \
            + (b.astype(np.int64) - zp(b_zp)).astype(f32) * f32(b_scale)
        q = np.rint((total.astype(f32) / f32(out_scale)).astype(f32)).astype(np.float64)
    q = np.where(np.isnan(q), info.min, q + zp(out_zp))
    return np.clip(q, info.min, info.max).astype(output_dtype)


def parameterized_relu(x: np.ndarray, slope) -> np.ndarray:
    """ACTIVATION_PARAMETERIZED_RELU (spec zoo 4.2): x where x >= 0, else slope * x, in x's type; float16
    computed in float32 and rounded toward zero to float16, as DirectML's results are (measured:
    docs/directml.md); integers as their two's-complement product. slope broadcasts to x
    (ACTIVATION_LEAKY_RELU: a FLOAT Alpha, applied in float32)."""
    x = np.asarray(x)
    slope = np.broadcast_to(np.asarray(slope), x.shape)
    if x.dtype.kind == "f":
        with np.errstate(all="ignore"):
            v = x.astype(np.float32)
            r = np.where(v >= 0, v, (slope.astype(np.float32) * v).astype(np.float32)).astype(np.float32)
            return r if x.dtype == np.float32 else _to_float16_toward_zero(r)
    product = (x.astype(np.int64) * slope.astype(np.int64)).astype(x.dtype)
    return np.where(x >= 0, x, product)


def _to_float16_toward_zero(r: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = r.astype(np.float16)                                           # to nearest, then toward zero
    past = np.isfinite(r) & (np.abs(h.astype(np.float32)) > np.abs(r))
    return np.where(past, np.nextafter(h, np.float16(0)), h).astype(np.float16)


def resample(x: np.ndarray, out_shape, scales, input_offsets=None, output_offsets=None, linear: bool = False,
             version: int = 2, round_up: bool = False) -> np.ndarray:
    """RESAMPLE (version 0) to RESAMPLE3 (spec zoo 6.2) with DirectML's measured arithmetic: per
    dimension the input coordinate x = (o - output offset) * float32(1 / scale) - input offset in
    float32 (offsets 0.5 and -0.5 for version 0); nearest floor(x + 0.5) (versions 0 and 1; floor(x)
    for their 8-bit types), ceil(x) (round_up) or floor(x), clamped to the input; linear: x
    clamped to [0, size - 1], the neighbours floor(x) and the next (clamped) blended as
    v0 + (v1 - v0) * (x - floor(x)) in float32, dimension after dimension from the first (a dimension
    of one input element is taken, not blended: measured with infinities); float16
    results rounded toward zero, 8-bit ones truncated toward zero."""
    x = np.asarray(x)
    f32 = np.float32
    rank = x.ndim
    ipo = [0.5] * rank if input_offsets is None or version == 0 else list(input_offsets)
    opo = [-0.5] * rank if output_offsets is None or version == 0 else list(output_offsets)
    eight = x.dtype.itemsize == 1
    picks = []
    for d in range(rank):
        o = np.arange(out_shape[d]).astype(f32)
        with np.errstate(all="ignore"):
            c = ((o - f32(opo[d])) * (f32(1) / f32(scales[d])) - f32(ipo[d])).astype(f32)
        n = x.shape[d]
        if not linear:
            with np.errstate(all="ignore"):
                if version <= 1 and not eight:
                    p = np.floor((c + f32(0.5)).astype(f32))
                else:
                    p = np.ceil(c) if round_up and version >= 2 else np.floor(c)
            picks.append(np.clip(np.nan_to_num(p, nan=0.0), 0, n - 1).astype(np.int64))
        else:
            c = np.clip(np.nan_to_num(c, nan=0.0), 0, n - 1).astype(f32)
            lo = np.floor(c)
            picks.append((lo.astype(np.int64), np.minimum(lo.astype(np.int64) + 1, n - 1), (c - lo).astype(f32)))
    if not linear:
        return x[np.ix_(*picks)]
    v = x.astype(f32)
    for d, (i0, i1, w) in enumerate(picks):                    # blended along the first dimension first
        if x.shape[d] == 1:                                   # (not along a dimension of one element)
            v = np.take(v, i0, axis=d)
            continue
        shape = [1] * rank
        shape[d] = len(w)
        a, b = np.take(v, i0, axis=d), np.take(v, i1, axis=d)
        with np.errstate(all="ignore"):
            v = (a + ((b - a) * w.reshape(shape)).astype(f32)).astype(f32)
    if x.dtype == np.float32:
        return v
    if x.dtype == np.float16:
        return _to_float16_toward_zero(v)
    info = np.iinfo(x.dtype)
    return np.trunc(np.clip(v, info.min, info.max)).astype(x.dtype)


def _float16_toward_zero_or_infinite(v: np.ndarray) -> np.ndarray:
    """float32 values to float16 toward zero, a magnitude past 65504 an infinity (DirectML's ADD,
    MULTIPLY and CLIP results, measured)."""
    h = _to_float16_toward_zero(v)
    with np.errstate(all="ignore"):
        past = np.isfinite(v) & (np.abs(v) > np.float32(65504))
    return np.where(past, np.copysign(np.float16(np.inf), v), h).astype(np.float16)


def element_wise(op: str, a: np.ndarray, b: np.ndarray = None, scale_bias=None, lo: float = 0.0,
                 hi: float = 0.0) -> np.ndarray:
    """ELEMENT_WISE_ADD ("add"), MULTIPLY ("multiply") and CLIP ("clip") by their formulas (spec zoo
    5.2) with DirectML's measured arithmetic: float16 computed in float32 and rounded toward zero (past
    65504: infinity); integers wrapping; CLIP as max(Min, min(Max, x * Scale + Bias)) (a NaN becomes
    Max), Min and Max truncated toward zero and saturated for integers, rounded to nearest float16 for
    float16, integers under a ScaleBias other than (1, 0) computed in float32 and truncated."""
    a = np.asarray(a)
    f32 = np.float32
    if op in ("add", "multiply"):
        if a.dtype.kind == "f":
            with np.errstate(all="ignore"):
                x, y = a.astype(f32), np.asarray(b).astype(f32)
                v = (x + y if op == "add" else x * y).astype(f32)
            return v if a.dtype == np.float32 else _float16_toward_zero_or_infinite(v)
        wide = np.uint64 if a.dtype.kind == "u" else np.int64
        with np.errstate(all="ignore"):
            x, y = a.astype(wide), np.asarray(b).astype(wide)
            return (x + y if op == "add" else x * y).astype(a.dtype)
    sb = scale_bias
    if sb is not None and a.dtype.kind != "f" and (f32(sb[0]), f32(sb[1])) == (f32(1), f32(0)):
        sb = None
    clip = lambda v, low, high: np.where(np.where(v < high, v, high) > low, np.where(v < high, v, high), low)
    if a.dtype.kind == "f":
        with np.errstate(all="ignore"):
            v = a.astype(f32)
            if sb is not None:
                v = ((v * f32(sb[0])).astype(f32) + f32(sb[1])).astype(f32)
            if a.dtype == np.float16:
                low, high = f32(np.float16(lo)), f32(np.float16(hi))
                return _float16_toward_zero_or_infinite(clip(v, low, high).astype(f32))
            return clip(v, f32(lo), f32(hi)).astype(f32)
    info = np.iinfo(a.dtype)
    if sb is not None:
        with np.errstate(all="ignore"):
            v = ((a.astype(f32) * f32(sb[0])).astype(f32) + f32(sb[1])).astype(f32)
            v = np.trunc(clip(v, f32(lo), f32(hi)).astype(np.float64))
        return np.clip(np.nan_to_num(v, nan=0.0), info.min, info.max).astype(a.dtype)

    def bound(value):
        v = float(f32(value))
        if np.isnan(v):
            return info.min
        return int(np.clip(np.trunc(v), info.min, info.max)) if np.isfinite(v) else (info.max if v > 0 else info.min)
    low, high = bound(lo), bound(hi)
    x = a.astype(object) if a.dtype.itemsize == 8 else a.astype(np.int64)
    return np.array(np.where(np.where(x < high, x, high) > low, np.where(x < high, x, high), low), dtype=a.dtype)
