"""QUANTIZED_LINEAR_CONVOLUTION: binding slots (layout), the description and validation (desc), the
variant table (variants), its plan (routines), the shared-memory formulas
(shared_memory), the compiled operator (operator), the numpy-level API (api), and what its plan
says about the layouts and fusions around it (layouts: the ONNX runner's plan-time passes ask it).
Shaders: dmlvk/shaders/qlinear_conv*.comp, qconv_*.comp and .glsl."""
from . import layouts
from .api import constant_filter, prepare_call, quantized_linear_convolution, small_tensor_bytes
from .desc import ConvIntegerDesc, QuantizedLinearConvolutionDesc, most_taps
from .layout import FILTER_CONSTANTS
from .operator import QuantizedLinearConvolutionOperator, requantization_multipliers
from .variants import TABLE

__all__ = ["QuantizedLinearConvolutionDesc", "ConvIntegerDesc", "QuantizedLinearConvolutionOperator",
           "quantized_linear_convolution", "prepare_call", "constant_filter", "small_tensor_bytes",
           "requantization_multipliers", "most_taps", "TABLE", "FILTER_CONSTANTS", "layouts"]
