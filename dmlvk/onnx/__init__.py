"""Run ONNX models built from dmlvk's operators on any Vulkan device.

    session = dmlvk.onnx.InferenceSession("model.onnx")        # or a ModelProto; device=...
    (y,) = session.run(None, {"x": frame})

Nodes: the ops of lower.LOWERINGS, each entry saying what runs it (docs/onnx-ops.md lists them).
QuantizeLinear and DequantizeLinear between float32 and 8 bits run on the device
(dmlvk/ops/quantize.py; QuantizeLinear where the device has shaderFloat64), else on the host, with ONNX's arithmetic as ONNX Runtime's CPU kernels compute it (float32 x / scale,
rounded half to even, plus the zero point, saturated, NaN to the lowest value; (x - zero point) *
scale in float32). QDQ
models (quantize_static's default format) have each DequantizeLinear -> Conv -> QuantizeLinear group fused into QLinearConv
first, as ONNX Runtime does (rewrite.fuse_qdq). A model with any other node is split (partition): the
device runs what it can, ONNX Runtime's CPU provider the rest; with fallback=False it is refused
when it is loaded, with every such node's name and op type; nothing is half-run.

Before planning, a per-tensor DequantizeLinear is moved after the layout operators (DepthToSpace,
SpaceToDepth and the views) that consume it, and a per-tensor QuantizeLinear before
the ones that produce its input: a permutation commutes exactly with an elementwise map. So the
usual quantized model (QuantizeLinear, quantized operators, DequantizeLinear) becomes one
stretch of device work, float frame in to float frame out. Each stretch runs as one submission:
the uploads of its inputs, its operators with barriers between dependent ones, the downloads of
what the host needs. Its intermediate tensors stay on the device, in Buffers made once per input
shape; operators are created once per input shape and kept (for the last 4 input shapes). One
session runs one call at a time (calls from several threads wait for each other).

The package, one job a module: graph (loading, the Graph record), qdq (host arithmetic), rewrite
(Graph -> Graph rewrites), lower (the registry {op type: Lowering}), plan (plans, recording,
streaming), partition (device and host parts), hostcopy (the copy threads), session (InferenceSession), cli (`dmlvk run`)."""
from .graph import Graph, Node, NodeArg, UnsupportedModelError, load
from .lower import LOWERINGS, Lowering
from .qdq import dequantize_linear, quantize_linear
from .session import InferenceSession, prepare

__all__ = ["InferenceSession", "NodeArg", "UnsupportedModelError", "quantize_linear", "dequantize_linear",
           "Graph", "Node", "load", "prepare", "LOWERINGS", "Lowering"]
