"""Small quantized ONNX models of the kinds dmlvk.onnx runs, built the way users build them: a
float network quantized by onnxruntime's quantize_static (QOperator format, per-channel), or
quantized nodes written with onnx.helper. The weights are seeded random numbers; nobody here
chose the quantized values (onnxruntime's quantizer computes the scales and zero points from
the calibration frames). tools/make_models.py writes them as .onnx files."""
from __future__ import annotations

import os
import tempfile
from typing import Iterable, Optional

import numpy as np

IR_VERSION = 8          # what onnxruntime's quantizer loads
OPSET = 13


def _helpers():
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    return onnx, helper, numpy_helper, TensorProto


def espcn(scale: int = 2, c1: int = 64, c2: int = 32, seed: int = 0):
    """An ESPCN-style super-resolution network in float32 (one luma channel): Conv 5x5 1->c1,
    Relu, Conv 3x3 c1->c2, Relu, Conv 3x3 c2->scale^2, DepthToSpace(scale, CRD) (what
    torch.nn.PixelShuffle exports to)."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)

    def he(shape):
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    r2 = scale * scale
    weights = {"w1": he((c1, 1, 5, 5)), "b1": (rng.standard_normal(c1) * 0.05).astype(np.float32),
               "w2": he((c2, c1, 3, 3)), "b2": (rng.standard_normal(c2) * 0.05).astype(np.float32),
               "w3": he((r2, c2, 3, 3)) * 0.5, "b3": (rng.standard_normal(r2) * 0.05).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[2, 2, 2, 2], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], name="conv3"),
             helper.make_node("DepthToSpace", ["c3"], ["y"], blocksize=scale, mode="CRD", name="shuffle")]
    graph = helper.make_graph(nodes, f"espcn_x{scale}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "H", "W"])],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def quicksrnet(scale: int = 2, channels: int = 64, convs: int = 11, seed: int = 0):
    """A QuickSRNet-style network in float32 (one luma channel; Large: 64 channels, 11 convolutions;
    Small/Medium: 32 channels, 2/5): Conv 3x3 + Relu repeated, a last Conv 3x3 to scale^2 channels,
    plus the anchor (the input repeated to scale^2 channels, a fixed 1x1 Conv of ones), then
    DepthToSpace(scale, CRD)."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    r2 = scale * scale
    weights, nodes, x = {}, [], "x"
    for k in range(convs):
        m = r2 if k == convs - 1 else channels
        c = 1 if k == 0 else channels
        weights[f"w{k}"] = (rng.standard_normal((m, c, 3, 3)) * np.sqrt(2.0 / (9 * c)) * (0.5 if m == r2 else 1))
        weights[f"b{k}"] = rng.standard_normal(m) * 0.05
        nodes.append(helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"], pads=[1, 1, 1, 1], name=f"conv{k}"))
        x = f"c{k}"
        if k < convs - 1:
            nodes.append(helper.make_node("Relu", [x], [f"r{k}"], name=f"relu{k}"))
            x = f"r{k}"
    weights["anchor_w"] = np.ones((r2, 1, 1, 1))
    nodes += [helper.make_node("Conv", ["x", "anchor_w"], ["anchor"], name="anchor"),
              helper.make_node("Add", [x, "anchor"], ["sum"], name="anchor_add"),
              helper.make_node("DepthToSpace", ["sum"], ["y"], blocksize=scale, mode="CRD", name="shuffle")]
    graph = helper.make_graph(nodes, f"quicksrnet_x{scale}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "H", "W"])],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def srvgg(scale: int = 4, channels: int = 64, convs: int = 16, seed: int = 0, leaky: bool = False):
    """A Real-ESRGAN-General-style network (SRVGGNetCompact) in float32, one luma channel: Conv 3x3 +
    PRelu (per channel; LeakyRelu(0.2) where leaky) repeated, a last Conv 3x3 to scale^2 channels,
    DepthToSpace(scale, CRD), plus the input resized by nearest (what PyTorch's interpolate exports:
    asymmetric, floor)."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    r2 = scale * scale
    weights, nodes, x = {}, [], "x"
    for k in range(convs):
        m, c = (r2 if k == convs - 1 else channels), (1 if k == 0 else channels)
        weights[f"w{k}"] = rng.standard_normal((m, c, 3, 3)) * np.sqrt(2.0 / (9 * c)) * (0.5 if m == r2 else 1)
        weights[f"b{k}"] = rng.standard_normal(m) * 0.05
        nodes.append(helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"], pads=[1, 1, 1, 1], name=f"conv{k}"))
        x = f"c{k}"
        if k < convs - 1:
            if leaky:
                nodes.append(helper.make_node("LeakyRelu", [x], [f"a{k}"], alpha=0.2, name=f"act{k}"))
            else:
                weights[f"slope{k}"] = rng.uniform(0.05, 0.3, (m, 1, 1))
                nodes.append(helper.make_node("PRelu", [x, f"slope{k}"], [f"a{k}"], name=f"act{k}"))
            x = f"a{k}"
    weights["scales"] = np.array([1, 1, scale, scale])
    nodes += [helper.make_node("DepthToSpace", [x], ["up"], blocksize=scale, mode="CRD", name="shuffle"),
              helper.make_node("Resize", ["x", "", "scales"], ["base"], mode="nearest",
                               coordinate_transformation_mode="asymmetric", nearest_mode="floor", name="resize"),
              helper.make_node("Add", ["up", "base"], ["y"], name="base_add")]
    graph = helper.make_graph(nodes, f"srvgg_x{scale}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "H", "W"])],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def xlsr(scale: int = 3, channels: int = 16, branches: int = 4, seed: int = 0):
    """An XLSR-style network in float32, one luma channel: a Conv 3x3 stem and `branches` grouped 3x3
    convolutions of the input (groups of 4 channels) joined by Concat on the channels, a 1x1 Conv,
    Relu, a last Conv 3x3 to scale^2 channels, plus the input tiled to scale^2 channels (the anchor),
    DepthToSpace(scale, CRD), Clip(0, 1)."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    r2 = scale * scale
    he = lambda shape: rng.standard_normal(shape) * np.sqrt(2.0 / int(np.prod(shape[1:])))
    weights = {"w_stem": he((channels, 1, 3, 3)), "b_stem": rng.standard_normal(channels) * 0.05,
               "w_mix": he((channels, channels * branches, 1, 1)), "b_mix": rng.standard_normal(channels) * 0.05,
               "w_out": he((r2, channels, 3, 3)) * 0.5, "b_out": rng.standard_normal(r2) * 0.05,
               "repeats": np.array([1, r2, 1, 1])}
    nodes = [helper.make_node("Conv", ["x", "w_stem", "b_stem"], ["stem"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Relu", ["stem"], ["stem_r"], name="stem_relu")]
    for k in range(branches):
        weights[f"w_g{k}"] = he((channels, 4, 3, 3))
        weights[f"b_g{k}"] = rng.standard_normal(channels) * 0.05
        nodes += [helper.make_node("Conv", ["stem_r", f"w_g{k}", f"b_g{k}"], [f"g{k}"], pads=[1, 1, 1, 1],
                                   group=channels // 4, name=f"grouped{k}"),
                  helper.make_node("Relu", [f"g{k}"], [f"gr{k}"], name=f"grouped_relu{k}")]
    nodes += [helper.make_node("Concat", [f"gr{k}" for k in range(branches)], ["cat"], axis=1, name="concat"),
              helper.make_node("Conv", ["cat", "w_mix", "b_mix"], ["mix"], name="mix"),
              helper.make_node("Relu", ["mix"], ["mix_r"], name="mix_relu"),
              helper.make_node("Conv", ["mix_r", "w_out", "b_out"], ["res"], pads=[1, 1, 1, 1], name="out"),
              helper.make_node("Tile", ["x", "repeats"], ["anchor"], name="anchor"),
              helper.make_node("Add", ["res", "anchor"], ["sum"], name="anchor_add"),
              helper.make_node("DepthToSpace", ["sum"], ["up"], blocksize=scale, mode="CRD", name="shuffle"),
              helper.make_node("Clip", ["up", "lo", "hi"], ["y"], name="clip")]
    weights.update(lo=np.float32(0), hi=np.float32(1))
    graph = helper.make_graph(nodes, f"xlsr_x{scale}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "H", "W"])],
                              [numpy_helper.from_array(np.asarray(v, np.int64 if k == "repeats" else np.float32), k)
                               for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def rrdb(channels: int = 16, growth: int = 8, seed: int = 0):
    """A Real-ESRGAN-x4plus-style network in float32 (RRDB), one luma channel, cut to one dense block:
    a Conv 3x3 stem; the dense block (Conv 3x3 + LeakyRelu(0.2) whose output joins the block's input
    by Concat on the channels, twice, then a Conv 3x3 back to `channels`), scaled by Mul 0.2 and added
    to its input; the upsampler (Resize nearest x2 as PyTorch's interpolate exports it, Conv 3x3,
    LeakyRelu(0.2)) and a last Conv 3x3 to one channel."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    he = lambda shape: rng.standard_normal(shape) * np.sqrt(2.0 / int(np.prod(shape[1:])))
    weights = {"w_stem": he((channels, 1, 3, 3)), "beta": np.float32(0.2), "scales": np.array([1, 1, 2, 2])}
    conv = lambda x, w, out: helper.make_node("Conv", [x, w, w + "_b"], [out], pads=[1, 1, 1, 1], name=out)
    leaky = lambda x, out: helper.make_node("LeakyRelu", [x], [out], alpha=0.2, name=out)
    nodes = [conv("x", "w_stem", "stem")]
    feats, c = "stem", channels
    for k in range(2):
        weights[f"w_d{k}"] = he((growth, c, 3, 3))
        nodes += [conv(feats, f"w_d{k}", f"d{k}"), leaky(f"d{k}", f"dl{k}"),
                  helper.make_node("Concat", [feats, f"dl{k}"], [f"cat{k}"], axis=1, name=f"cat{k}")]
        feats, c = f"cat{k}", c + growth
    weights["w_fuse"] = he((channels, c, 3, 3)) * 0.5
    weights["w_up"] = he((channels, channels, 3, 3))
    weights["w_out"] = he((1, channels, 3, 3)) * 0.5
    nodes += [conv(feats, "w_fuse", "fuse"),
              helper.make_node("Mul", ["fuse", "beta"], ["scaled"], name="residual_scale"),
              helper.make_node("Add", ["scaled", "stem"], ["block"], name="residual"),
              helper.make_node("Resize", ["block", "", "scales"], ["up"], mode="nearest",
                               coordinate_transformation_mode="asymmetric", nearest_mode="floor", name="upsample"),
              conv("up", "w_up", "upc"), leaky("upc", "upl"), conv("upl", "w_out", "y")]
    for name in [k for k in weights if k.startswith("w_")]:
        weights[name + "_b"] = rng.standard_normal(weights[name].shape[0]) * 0.05
    graph = helper.make_graph(nodes, "rrdb",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "H", "W"])],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def sesr(scale: int = 2, channels: int = 16, blocks: int = 5, seed: int = 0):
    """A SESR-M5-style network in float32 (its linear blocks collapsed, as exported for inference), one
    luma channel: a Conv 5x5 stem with PRelu; `blocks` times a Conv 3x3 plus its input (a residual
    Add) and PRelu; the long residual Add of the stem's output; a Conv 5x5 to scale^2 channels plus
    the input repeated to them (Tile: the anchor); DepthToSpace(scale, CRD)."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    r2 = scale * scale
    he = lambda shape: rng.standard_normal(shape) * np.sqrt(2.0 / int(np.prod(shape[1:])))
    weights = {"w_stem": he((channels, 1, 5, 5)), "b_stem": rng.standard_normal(channels) * 0.05,
               "a_stem": rng.uniform(0.05, 0.3, (channels, 1, 1)), "w_out": he((r2, channels, 5, 5)) * 0.5,
               "b_out": rng.standard_normal(r2) * 0.05, "repeats": np.array([1, r2, 1, 1])}
    nodes = [helper.make_node("Conv", ["x", "w_stem", "b_stem"], ["stem"], pads=[2, 2, 2, 2], name="stem"),
             helper.make_node("PRelu", ["stem", "a_stem"], ["s0"], name="stem_act")]
    x = "s0"
    for k in range(blocks):
        weights.update({f"w{k}": he((channels, channels, 3, 3)) * 0.5, f"b{k}": rng.standard_normal(channels) * 0.05,
                        f"a{k}": rng.uniform(0.05, 0.3, (channels, 1, 1))})
        nodes += [helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"], pads=[1, 1, 1, 1], name=f"conv{k}"),
                  helper.make_node("Add", [f"c{k}", x], [f"r{k}"], name=f"residual{k}"),
                  helper.make_node("PRelu", [f"r{k}", f"a{k}"], [f"p{k}"], name=f"act{k}")]
        x = f"p{k}"
    nodes += [helper.make_node("Add", [x, "s0"], ["long"], name="long_residual"),
              helper.make_node("Conv", ["long", "w_out", "b_out"], ["res"], pads=[2, 2, 2, 2], name="out"),
              helper.make_node("Tile", ["x", "repeats"], ["anchor"], name="anchor"),
              helper.make_node("Add", ["res", "anchor"], ["sum"], name="anchor_add"),
              helper.make_node("DepthToSpace", ["sum"], ["y"], blocksize=scale, mode="CRD", name="shuffle")]
    graph = helper.make_graph(nodes, f"sesr_x{scale}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "H", "W"])],
                              [numpy_helper.from_array(np.asarray(v, np.int64 if k == "repeats" else np.float32), k)
                               for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def calibration_frames(count: int = 8, h: int = 24, w: int = 32, seed: int = 1, channels: int = 1) -> list:
    """Smooth image-like frames in [0, 1] with some noise (NCHW float32, batch 1)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    frames = []
    for i in range(count):
        planes = [0.5 + 0.4 * np.sin(xx / (2.0 + (i + c) % 3) + i + c) * np.cos(yy / (3.0 + (i + c) % 2))
                  + 0.05 * rng.standard_normal((h, w)) for c in range(channels)]
        frames.append(np.clip(np.stack(planes), 0, 1).astype(np.float32)[None])
    return frames


def space_to_depth_stem_float(c: int = 3, m: int = 16, block: int = 2, seed: int = 0):
    """The float network space_to_depth_stem quantizes: SpaceToDepth, Conv 3x3 (c*block^2 -> m), Relu."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    cb = c * block * block
    weights = {"w": (rng.standard_normal((m, cb, 3, 3)) * np.sqrt(2.0 / (cb * 9))).astype(np.float32),
               "b": (rng.standard_normal(m) * 0.05).astype(np.float32)}
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["xs2d"], blocksize=block, name="s2d"),
             helper.make_node("Conv", ["xs2d", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "s2d_stem_float", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", c, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", m, "H", "W"])],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def depthwise_block_float(c: int = 16, m: int = 24, seed: int = 0):
    """A MobileNet-style block in float32: depthwise Conv 3x3 (group c), Clip(0, 6), pointwise
    Conv 1x1 c -> m."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    weights = {"dw": (rng.standard_normal((c, 1, 3, 3)) * np.sqrt(2.0 / 9)).astype(np.float32),
               "db": (rng.standard_normal(c) * 0.05).astype(np.float32),
               "lo": np.float32(0.0), "hi": np.float32(6.0),
               "pw": (rng.standard_normal((m, c, 1, 1)) * np.sqrt(2.0 / c)).astype(np.float32),
               "pb": (rng.standard_normal(m) * 0.05).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "dw", "db"], ["d"], pads=[1, 1, 1, 1], group=c, name="depthwise"),
             helper.make_node("Clip", ["d", "lo", "hi"], ["r"], name="relu6"),
             helper.make_node("Conv", ["r", "pw", "pb"], ["y"], name="pointwise")]
    graph = helper.make_graph(nodes, "depthwise_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", c, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", m, "h", "w"])],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def quantize(model, frames: Iterable[np.ndarray], input_name: str = "x", per_channel: bool = True,
             reduce_range: bool = True, quant_format: str = "QOperator", activation_type: str = "QUInt8",
             weight_type: str = "QInt8"):
    """model quantized by onnxruntime.quantization.quantize_static: by default in QOperator format
    (uint8 activations, int8 per-channel weights; reduce_range: 7-bit weights, which onnxruntime's
    own u8 x s8 CPU kernel computes exactly on CPUs without VNNI). quant_format "QDQ",
    activation_type / weight_type "QInt8" or "QUInt8" as onnxruntime names them; pass
    per_channel=False, reduce_range=False, quant_format="QDQ", activation_type="QInt8" for
    quantize_static's own defaults."""
    onnx, _, _, _ = _helpers()
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{input_name: f} for f in frames])

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory(prefix="dmlvk-quant-") as tmp:
        src, dst = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "quant.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, Reader(), quant_format=QuantFormat[quant_format], per_channel=per_channel,
                        activation_type=QuantType[activation_type], weight_type=QuantType[weight_type],
                        reduce_range=reduce_range)
        return onnx.load(dst)


SPLIT_KINDS = ("start", "middle", "end", "fork", "head")


def split_network(kind: str, channels: int = 8, seed: int = 0):
    """A float network with ops dmlvk has no kernel for, to quantize and run split between the device
    and ONNX Runtime's CPU: "start" (Erf on the input, then Conv, Relu, Conv), "middle" (Conv, Relu,
    Erf, Conv), "end" (Conv, Relu, Conv, Sigmoid), "fork" (Conv, Erf, whose output two Convs read, one
    of them through a Sigmoid and an Add with the Erf's output again: one host part feeding two device
    parts), "head" (a classifier: Conv, Relu, GlobalAveragePool, Flatten, Gemm, Softmax)."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    c = channels
    w = {}

    def conv(name, x, y, cin, cout, relu=False):
        w[f"{name}.w"] = (rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))).astype(np.float32)
        w[f"{name}.b"] = (rng.standard_normal(cout) * 0.05).astype(np.float32)
        out = [helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [y + "_" if relu else y], pads=[1] * 4, name=name)]
        return out + ([helper.make_node("Relu", [y + "_"], [y], name=name + ".relu")] if relu else [])

    erf = lambda x, y: [helper.make_node("Erf", [x], [y], name="erf")]
    shape = ["n", 1, "h", "w"]
    if kind == "start":
        nodes = erf("x", "e") + conv("conv1", "e", "r", 1, c, relu=True) + conv("conv2", "r", "y", c, 1)
    elif kind == "middle":
        nodes = conv("conv1", "x", "r", 1, c, relu=True) + erf("r", "e") + conv("conv2", "e", "y", c, 1)
    elif kind == "end":
        nodes = (conv("conv1", "x", "r", 1, c, relu=True) + conv("conv2", "r", "z", c, 1)
                 + [helper.make_node("Sigmoid", ["z"], ["y"], name="sigmoid")])
    elif kind == "fork":
        nodes = (conv("conv1", "x", "r", 1, c) + erf("r", "e") + conv("conv_a", "e", "a", c, c)
                 + [helper.make_node("Sigmoid", ["a"], ["s"], name="sigmoid"),
                    helper.make_node("Add", ["s", "e"], ["t"], name="add")] + conv("conv_b", "t", "y", c, 1))
    elif kind == "head":
        classes = 5
        w["fc.w"] = (rng.standard_normal((classes, c)) * 0.5).astype(np.float32)
        w["fc.b"] = (rng.standard_normal(classes) * 0.1).astype(np.float32)
        nodes = conv("conv1", "x", "r", 1, c, relu=True) + [
            helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
            helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
            helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["g"], transB=1, name="fc"),
            helper.make_node("Softmax", ["g"], ["y"], axis=1, name="softmax")]
        shape = ["n", classes]
    else:
        raise ValueError(f"kind must be one of {SPLIT_KINDS}, got {kind!r}")
    graph = helper.make_graph(nodes, f"split_{kind}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              [numpy_helper.from_array(v, k) for k, v in w.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def qconv_depth_to_space_chain(c: int = 8, m: int = 12, block: int = 2, seed: int = 0):
    """QLinearConv 3x3 (uint8 input, int8 per-channel filter, bias) then DepthToSpace (CRD) on the
    uint8 result, written with onnx.helper: a quantized sub-pixel block, uint8 in and out."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    consts = {"xs": np.float32(0.02), "xzp": np.uint8(118), "w": rng.integers(-60, 60, (m, c, 3, 3)).astype(np.int8),
              "ws": rng.uniform(0.002, 0.01, m).astype(np.float32), "wzp": np.zeros(m, np.int8),
              "ys": np.float32(0.05), "yzp": np.uint8(100), "b": rng.integers(-2000, 2000, m).astype(np.int32)}
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"], ["q"],
                              pads=[1, 1, 1, 1], name="qconv"),
             helper.make_node("DepthToSpace", ["q"], ["y"], blocksize=block, mode="CRD", name="d2s")]
    graph = helper.make_graph(nodes, "qconv_d2s", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n", c, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, ["n", m // (block * block), "H", "W"])],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def space_to_depth_stem(c: int = 3, m: int = 16, block: int = 2, seed: int = 0):
    """A detection-network stem: float image, QuantizeLinear, SpaceToDepth, QLinearConv 3x3
    stride 1 (int8 per-channel filter), DequantizeLinear."""
    onnx, helper, numpy_helper, TensorProto = _helpers()
    rng = np.random.default_rng(seed)
    cb = c * block * block
    consts = {"s": np.float32(1 / 255), "zp": np.uint8(0), "w": rng.integers(-63, 64, (m, cb, 3, 3)).astype(np.int8),
              "ws": rng.uniform(0.001, 0.004, m).astype(np.float32), "wzp": np.zeros(m, np.int8),
              "ys": np.float32(0.03), "yzp": np.uint8(128)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], name="quant"),
             helper.make_node("SpaceToDepth", ["xq"], ["xs2d"], blocksize=block, name="s2d"),
             helper.make_node("QLinearConv", ["xs2d", "s", "zp", "w", "ws", "wzp", "ys", "yzp"], ["yq"],
                              pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yzp"], ["y"], name="dequant")]
    graph = helper.make_graph(nodes, "s2d_stem", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", c, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", m, "H", "W"])],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def torch_espcn(scale: int = 2, seed: int = 0) -> Optional[object]:
    """The ESPCN network written in PyTorch (Conv+ReLU x2, Conv, PixelShuffle) and exported with
    torch.onnx.export, in float32; None without torch."""
    try:
        import torch
    except ImportError:
        return None
    onnx, _, _, _ = _helpers()
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 64, 5, padding=2), torch.nn.ReLU(),
                              torch.nn.Conv2d(64, 32, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(32, scale * scale, 3, padding=1), torch.nn.PixelShuffle(scale)).eval()
    with tempfile.TemporaryDirectory(prefix="dmlvk-export-") as tmp:
        path = os.path.join(tmp, "espcn.onnx")
        torch.onnx.export(net, torch.zeros(1, 1, 24, 32), path, input_names=["x"], output_names=["y"],
                          opset_version=OPSET, dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}, "y": {0: "n", 2: "H", 3: "W"}},
                          dynamo=False)
        model = onnx.load(path)
    model.ir_version = IR_VERSION
    return model
