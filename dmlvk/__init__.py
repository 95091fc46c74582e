"""dmlvk: DirectML's operators, semantics and validation as Vulkan compute shaders."""
from .enums import AxisDirection, DataType, DepthSpaceOrder, FeatureLevel, InterpolationMode, OperatorType, TensorFlags
from .errors import DeviceLimitError, UnsupportedError, ValidationError
from .runtime.compiler import ShaderCompileError
from .tensor import TensorDesc, calc_buffer_tensor_size, packed_strides
from .runtime.capabilities import Capabilities
from .runtime.commands import CommandList
from .runtime.device import Buffer, Device, OutOfDeviceMemory, default_device, devices
from .arrays import DeviceArray, asarray, host_empty
from .ops.base import CompiledOperator
from .ops.depth_space import (DepthToSpace1Desc, DepthToSpaceDesc, SpaceToDepth1Desc,
                              SpaceToDepthDesc, depth_to_space, space_to_depth)
from .ops.quantized_conv import QuantizedLinearConvolutionDesc, quantized_linear_convolution
from .ops.quantized_add import ElementWiseQuantizedLinearAddDesc
from .ops.join_tile import JoinDesc, TileDesc
from .ops.activations import ActivationLeakyReluDesc, ActivationParameterizedReluDesc
from .ops.resample import Resample1Desc, Resample2Desc, Resample3Desc, ResampleDesc
from .ops.elementwise import ElementWiseAddDesc, ElementWiseClipDesc, ElementWiseMultiplyDesc

__version__ = "0.1.0"
__all__ = [
    "DataType", "DepthSpaceOrder", "FeatureLevel", "OperatorType", "TensorFlags", "InterpolationMode",
    "AxisDirection",
    "ValidationError", "DeviceLimitError", "UnsupportedError", "OutOfDeviceMemory", "ShaderCompileError",
    "TensorDesc", "calc_buffer_tensor_size", "packed_strides",
    "Device", "Buffer", "devices", "default_device", "CompiledOperator", "CommandList", "Capabilities",
    "DeviceArray", "asarray", "host_empty",
    "DepthToSpaceDesc", "SpaceToDepthDesc", "DepthToSpace1Desc", "SpaceToDepth1Desc",
    "depth_to_space", "space_to_depth",
    "QuantizedLinearConvolutionDesc", "quantized_linear_convolution",
    "ElementWiseQuantizedLinearAddDesc", "JoinDesc", "TileDesc", "ActivationLeakyReluDesc",
    "ActivationParameterizedReluDesc", "ResampleDesc", "Resample1Desc", "Resample2Desc", "Resample3Desc",
    "ElementWiseAddDesc", "ElementWiseMultiplyDesc", "ElementWiseClipDesc",
]


def __getattr__(name):
    # dmlvk.onnx (InferenceSession) needs the onnx package: imported at its first use
    if name == "onnx":
        import importlib
        return importlib.import_module(".onnx", __name__)
    raise AttributeError(f"module 'dmlvk' has no attribute {name!r}")
