"""QUANTIZED_LINEAR_CONVOLUTION's binding slots and names, shared by its description, plans,
operator and API."""
from ...enums import DataType, OperatorType
from ..variants import PushBlock

OP = OperatorType.QUANTIZED_LINEAR_CONVOLUTION.dml_name
Q8 = {DataType.INT8, DataType.UINT8}
# Binding slots, DirectML's order (spec 4.1), then the output.
(INPUT, INPUT_SCALE, INPUT_ZP, FILTER, FILTER_SCALE, FILTER_ZP, BIAS, OUTPUT_SCALE, OUTPUT_ZP,
 OUTPUT) = range(10)
PARAMS = 10      # the operator's own buffer of host-computed requantization parameters
CPU_FILTER = 11   # the CPU path's scratch: the filter packed by qconv_pack_filter_cpu.comp
XP, WP, PART = 11, 12, 13     # the cooperative-matrix path's scratch: the repacked input and filter,
                              # and split-K partials
WP_SCRATCH = WP - XP          # the repacked filter's place among the scratch Buffers
# The inputs the filter's packing reads: OWNED_BY_DML where they are a model's constants, bound once
FILTER_CONSTANTS = (FILTER, INPUT_ZP, FILTER_ZP)
NAMES = ("Input", "InputScale", "InputZeroPoint", "Filter", "FilterScale", "FilterZeroPoint",
         "Bias", "OutputScale", "OutputZeroPoint", "Output")


def as_4d(values, fill) -> tuple:
    """A rank-3 {N,C,W} tuple as {N,C,fill,W} (spec 4.2 recommendation); rank 4 unchanged."""
    values = tuple(values)
    return values if len(values) == 4 else (values[0], values[1], fill, values[2])


# The push constants every convolution kernel reads (qconv_common.glsl's Push block), in order, with
# their sizes in 32-bit words; the dispatcher appends `items` and `first` (Device.push_constants).
PUSH = PushBlock([("in_sizes", 4), ("in_strides", 4), ("w_strides", 4), ("out_sizes", 4), ("out_strides", 4),
                  ("conv_stride", 2), ("dilation", 2), ("start_pad", 2), ("cg", 1), ("mg", 1)])
