"""QUANTIZED_LINEAR_CONVOLUTION: binding slots (layout), the description and validation (desc), the
variant table and plans (variants), the compiled operator (operator), the numpy-level API (api).
Shaders: dmlvk/shaders/qlinear_conv*.comp, qconv_*.comp and .glsl."""
from .api import constant_filter, prepare_call, quantized_linear_convolution, small_tensor_bytes
from .desc import ConvIntegerDesc, QuantizedLinearConvolutionDesc, most_taps
from .operator import QuantizedLinearConvolutionOperator, requantization_multipliers
from .variants import TABLE

__all__ = ["QuantizedLinearConvolutionDesc", "ConvIntegerDesc", "QuantizedLinearConvolutionOperator",
           "quantized_linear_convolution", "prepare_call", "constant_filter", "small_tensor_bytes",
           "requantization_multipliers", "most_taps", "TABLE"]
