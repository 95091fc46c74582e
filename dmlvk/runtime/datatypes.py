"""Which tensor data types descriptions may use on a device (CheckFeatureSupport's
TENSOR_DATA_TYPE_SUPPORT): all of them in dmlvk, or what DirectML reports through vkd3d."""
from __future__ import annotations

from ..enums import DataType
from .vkinfo import PhysicalDeviceInfo

# Every tensor data type DirectML 6_4 names. dmlvk's kernels move 16- and 64-bit elements through
# 32-bit words, so they need neither 16-bit storage nor 64-bit integers of the device.
ALL_DATA_TYPES = frozenset(t for t in DataType if t != DataType.UNKNOWN)
_SIXTEEN_BIT = frozenset({DataType.FLOAT16, DataType.UINT16, DataType.INT16})


def directml_data_types(info: PhysicalDeviceInfo) -> frozenset:
    """The tensor data types the release DirectML.dll (1.15.4) reports as supported on this Vulkan
    device when it runs through vkd3d (measured): all, except FLOAT16, UINT16 and INT16 where D3D12's
    TypedUAVLoadAdditionalFormats is false (Mesa 22.3's lavapipe, for one)."""
    return ALL_DATA_TYPES if info.typed_uav_load_additional_formats else ALL_DATA_TYPES - _SIXTEEN_BIT


def supported_data_types(type_support, info: PhysicalDeviceInfo) -> frozenset:
    if isinstance(type_support, str):
        if type_support == "dmlvk":
            return ALL_DATA_TYPES
        if type_support == "directml":
            return directml_data_types(info)
        raise ValueError(f"type_support must be 'dmlvk', 'directml' or a set of DataTypes, got {type_support!r}")
    try:
        chosen = frozenset(DataType(t) for t in type_support)
    except (TypeError, ValueError):
        raise TypeError(f"type_support must be 'dmlvk', 'directml' or a set of DataTypes, "
                        f"got {type_support!r}") from None
    if DataType.UNKNOWN in chosen:
        raise ValueError("type_support cannot include DML_TENSOR_DATA_TYPE_UNKNOWN")
    return chosen
