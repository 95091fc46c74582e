"""What QUANTIZED_LINEAR_CONVOLUTION's plan says about the layouts and fusions around it, for a graph
compiler choosing the strides of intermediate tensors and the nodes it fuses (the ONNX runner's
plan-time passes, dmlvk.onnx.passes, as DirectML's graph compiler chooses intermediate strides):
questions answered by running the plan under a device's variant choice, so that no caller reads
kernel or variant names."""
from __future__ import annotations

from ...runtime.device import Device
from .routines import READS_CHANNELS_LAST, float_output, plan
from .variants import TABLE


def _kernels(desc, sel) -> list:
    """The kernels the selection runs for desc (none where no plan can run it)."""
    try:
        return plan(desc, sel)[0]
    except ValueError:
        return []


def gains_from_input_layout(packed, proposed, device: Device) -> bool:
    """Whether a convolution runs better on the device with its input laid out as `proposed` (the same
    description but the input's strides) than packed NCHW (`packed`): its plan reads the proposed input
    in place where it would pack the packed one, or takes conv.dot.nhwc instead of conv.dot where
    DOT_NHWC_PLANNED says that measured faster."""
    sel = TABLE.chosen_by(device.capabilities, device.choice())
    before = tuple(k.variant for k in _kernels(packed, sel))
    after = tuple(k.variant for k in _kernels(proposed, sel))
    return (("conv.coopmat.pack_input" in before and bool(set(READS_CHANNELS_LAST) & set(after)))
            or (after == ("conv.dot.nhwc",) and before == ("conv.dot",) and sel["DOT_NHWC_PLANNED"]))


def writes_layout_alike(packed, proposed, device: Device) -> bool:
    """Whether a convolution writes its output laid out as `proposed` (the same description but the
    output's strides) with the kernel it uses for the packed one, a word at a time or more (not byte by
    byte: conv.dot always; the cooperative-matrix kernels where PACKED_OUT says so)."""
    sel = TABLE.chosen_by(device.capabilities, device.choice())
    before, after = _kernels(packed, sel)[-1:], _kernels(proposed, sel)[-1:]
    if not before or [k.variant for k in before] != [k.variant for k in after]:
        return False
    kernel = after[0]
    return kernel.variant == "conv.dot" or TABLE[kernel.variant].constants(kernel).get("PACKED_OUT", 0) != 0


def folds_dequantized(desc, tail: tuple, device: Device) -> bool:
    """Whether the convolution's kernel on the device also does a following DepthToSpace and per-tensor
    DequantizeLinear, tail = (block (1: none), crd, scale, zero point): then
    QuantizedLinearConvolutionDesc.compile_dequantized compiles them as one operator."""
    return float_output(desc, _kernels(desc, TABLE.chosen_by(device.capabilities, device.choice())), *tail) is not None
