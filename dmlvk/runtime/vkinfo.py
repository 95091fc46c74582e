"""Physical-device properties and limits read straight from the Vulkan loader (ctypes).

Kompute reports only a few limits; dmlvk needs maxStorageBufferRange, maxPushConstantsSize, shared
memory, the subgroup size and the driver's name. Devices are listed in vkEnumeratePhysicalDevices
order, the order Kompute's device index uses."""
from __future__ import annotations

import ctypes
import ctypes.util
from dataclasses import dataclass
from typing import List

from ..errors import UnsupportedError

_ST_APPLICATION_INFO = 0
_ST_INSTANCE_CREATE_INFO = 1
_ST_PROPERTIES_2 = 1000059001
_ST_SUBGROUP_PROPERTIES = 1000094000
_ST_DRIVER_PROPERTIES = 1000196000
_ST_SUBGROUP_SIZE_CONTROL_PROPERTIES = 1000225000
_ST_COOPERATIVE_MATRIX_PROPERTIES = 1000506001
_COOPERATIVE_MATRIX_EXTENSION = b"VK_KHR_cooperative_matrix"
_U32 = ctypes.c_uint32


class _Limits(ctypes.Structure):
    # The head of VkPhysicalDeviceLimits, up to timestampPeriod.
    _fields_ = [(n, _U32) for n in (
        "maxImageDimension1D", "maxImageDimension2D", "maxImageDimension3D", "maxImageDimensionCube",
        "maxImageArrayLayers", "maxTexelBufferElements", "maxUniformBufferRange",
        "maxStorageBufferRange", "maxPushConstantsSize", "maxMemoryAllocationCount",
        "maxSamplerAllocationCount")] + [
        ("bufferImageGranularity", ctypes.c_uint64), ("sparseAddressSpaceSize", ctypes.c_uint64)] + [
        (n, _U32) for n in (
        "maxBoundDescriptorSets", "maxPerStageDescriptorSamplers", "maxPerStageDescriptorUniformBuffers",
        "maxPerStageDescriptorStorageBuffers", "maxPerStageDescriptorSampledImages",
        "maxPerStageDescriptorStorageImages", "maxPerStageDescriptorInputAttachments",
        "maxPerStageResources", "maxDescriptorSetSamplers", "maxDescriptorSetUniformBuffers",
        "maxDescriptorSetUniformBuffersDynamic", "maxDescriptorSetStorageBuffers",
        "maxDescriptorSetStorageBuffersDynamic", "maxDescriptorSetSampledImages",
        "maxDescriptorSetStorageImages", "maxDescriptorSetInputAttachments", "maxVertexInputAttributes",
        "maxVertexInputBindings", "maxVertexInputAttributeOffset", "maxVertexInputBindingStride",
        "maxVertexOutputComponents", "maxTessellationGenerationLevel", "maxTessellationPatchSize",
        "maxTessellationControlPerVertexInputComponents", "maxTessellationControlPerVertexOutputComponents",
        "maxTessellationControlPerPatchOutputComponents", "maxTessellationControlTotalOutputComponents",
        "maxTessellationEvaluationInputComponents", "maxTessellationEvaluationOutputComponents",
        "maxGeometryShaderInvocations", "maxGeometryInputComponents", "maxGeometryOutputComponents",
        "maxGeometryOutputVertices", "maxGeometryTotalOutputComponents", "maxFragmentInputComponents",
        "maxFragmentOutputAttachments", "maxFragmentDualSrcAttachments",
        "maxFragmentCombinedOutputResources", "maxComputeSharedMemorySize")] + [
        ("maxComputeWorkGroupCount", _U32 * 3), ("maxComputeWorkGroupInvocations", _U32),
        ("maxComputeWorkGroupSize", _U32 * 3)] + [(n, _U32) for n in (
        "subPixelPrecisionBits", "subTexelPrecisionBits", "mipmapPrecisionBits",
        "maxDrawIndexedIndexValue", "maxDrawIndirectCount")] + [
        ("maxSamplerLodBias", ctypes.c_float), ("maxSamplerAnisotropy", ctypes.c_float),
        ("maxViewports", _U32), ("maxViewportDimensions", _U32 * 2),
        ("viewportBoundsRange", ctypes.c_float * 2), ("viewportSubPixelBits", _U32),
        ("minMemoryMapAlignment", ctypes.c_size_t), ("minTexelBufferOffsetAlignment", ctypes.c_uint64),
        ("minUniformBufferOffsetAlignment", ctypes.c_uint64),
        ("minStorageBufferOffsetAlignment", ctypes.c_uint64), ("minTexelOffset", ctypes.c_int32),
        ("maxTexelOffset", _U32), ("minTexelGatherOffset", ctypes.c_int32), ("maxTexelGatherOffset", _U32),
        ("minInterpolationOffset", ctypes.c_float), ("maxInterpolationOffset", ctypes.c_float)] + [
        (n, _U32) for n in (
        "subPixelInterpolationOffsetBits", "maxFramebufferWidth", "maxFramebufferHeight",
        "maxFramebufferLayers", "framebufferColorSampleCounts", "framebufferDepthSampleCounts",
        "framebufferStencilSampleCounts", "framebufferNoAttachmentsSampleCounts", "maxColorAttachments",
        "sampledImageColorSampleCounts", "sampledImageIntegerSampleCounts", "sampledImageDepthSampleCounts",
        "sampledImageStencilSampleCounts", "storageImageSampleCounts", "maxSampleMaskWords",
        "timestampComputeAndGraphics")] + [("timestampPeriod", ctypes.c_float)]


class _Properties(ctypes.Structure):
    _fields_ = [("apiVersion", _U32), ("driverVersion", _U32), ("vendorID", _U32), ("deviceID", _U32),
                ("deviceType", ctypes.c_int32), ("deviceName", ctypes.c_char * 256),
                ("pipelineCacheUUID", ctypes.c_uint8 * 16), ("limits", _Limits),
                ("_rest", ctypes.c_uint8 * 1024)]   # the rest of the limits and sparse properties


class _Properties2(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("properties", _Properties)]


class _SubgroupProperties(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("subgroupSize", _U32),
                ("supportedStages", _U32), ("supportedOperations", _U32),
                ("quadOperationsInAllStages", _U32)]


class _DriverProperties(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("driverID", _U32),
                ("driverName", ctypes.c_char * 256), ("driverInfo", ctypes.c_char * 256),
                ("conformanceVersion", ctypes.c_uint8 * 4)]


class _SubgroupSizeControlProperties(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("minSubgroupSize", _U32),
                ("maxSubgroupSize", _U32), ("maxComputeWorkgroupSubgroups", _U32),
                ("requiredSubgroupSizeStages", _U32)]


class _CooperativeMatrixProperties(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("MSize", _U32), ("NSize", _U32),
                ("KSize", _U32), ("AType", ctypes.c_int32), ("BType", ctypes.c_int32),
                ("CType", ctypes.c_int32), ("ResultType", ctypes.c_int32),
                ("saturatingAccumulation", _U32), ("scope", ctypes.c_int32)]


class _ExtensionProperties(ctypes.Structure):
    _fields_ = [("extensionName", ctypes.c_char * 256), ("specVersion", _U32)]


class _AppInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("pApplicationName", ctypes.c_char_p),
                ("applicationVersion", _U32), ("pEngineName", ctypes.c_char_p), ("engineVersion", _U32),
                ("apiVersion", _U32)]


class _InstanceInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("flags", _U32),
                ("pApplicationInfo", ctypes.POINTER(_AppInfo)), ("enabledLayerCount", _U32),
                ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", _U32),
                ("ppEnabledExtensionNames", ctypes.c_void_p)]


_STAGE_COMPUTE = 0x20           # VK_SHADER_STAGE_COMPUTE_BIT
_SUBGROUP_SHUFFLE = 0x10        # VK_SUBGROUP_FEATURE_SHUFFLE_BIT
_TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
# VkComponentTypeKHR and VkScopeKHR values, by the names dmlvk reports.
_COMPONENTS = {0: "float16", 1: "float32", 2: "float64", 3: "int8", 4: "int16", 5: "int32", 6: "int64",
               7: "uint8", 8: "uint16", 9: "uint32", 10: "uint64", 1000141000: "bfloat16"}
_SCOPES = {1: "device", 2: "workgroup", 3: "subgroup", 5: "queue family"}


@dataclass(frozen=True)
class CooperativeMatrixType:
    """One VkCooperativeMatrixPropertiesKHR entry: (M x K) A times (K x N) B plus C -> result."""
    m: int
    n: int
    k: int
    a: str
    b: str
    c: str
    result: str
    saturating: bool
    scope: str

    def __str__(self):
        sat = ", saturating" if self.saturating else ""
        return f"{self.a}x{self.b}->{self.result} {self.m}x{self.n}x{self.k} ({self.scope}{sat})"


@dataclass(frozen=True)
class PhysicalDeviceInfo:
    index: int
    name: str
    device_type: str
    vendor_id: int
    api_version: str
    driver_name: str
    driver_info: str
    max_storage_buffer_range: int
    max_push_constants_size: int
    max_compute_shared_memory_size: int
    max_compute_work_group_count: tuple
    max_compute_work_group_invocations: int
    subgroup_size: int
    timestamp_period: float      # nanoseconds per GPU timestamp tick
    min_subgroup_size: int = 0   # subgroup size control's range (0 where the device lacks it)
    max_subgroup_size: int = 0
    subgroup_shuffle: bool = False   # compute shaders have the subgroup shuffle operations
    extensions: frozenset = frozenset()
    cooperative_matrix_types: tuple = ()   # CooperativeMatrixType, where VK_KHR_cooperative_matrix is listed
    # D3D12's TypedUAVLoadAdditionalFormats as vkd3d derives it from this device (storage images
    # read without a format, and 15 formats usable as storage images); DirectML's 16-bit tensor
    # types depend on it
    typed_uav_load_additional_formats: bool = False


def _version(v: int) -> str:
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def loader():
    for name in ("libvulkan.so.1", ctypes.util.find_library("vulkan")):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    raise UnsupportedError("the Vulkan loader (libvulkan.so.1) is not installed: install it with a driver "
                           "(Debian/Ubuntu: apt install libvulkan1 mesa-vulkan-drivers, or your GPU vendor's driver)")


def _device_extensions(vk, handle) -> frozenset:
    vk.vkEnumerateDeviceExtensionProperties.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                         ctypes.POINTER(_U32), ctypes.c_void_p]
    count = _U32(0)
    vk.vkEnumerateDeviceExtensionProperties(handle, None, ctypes.byref(count), None)
    props = (_ExtensionProperties * count.value)()
    vk.vkEnumerateDeviceExtensionProperties(handle, None, ctypes.byref(count), props)
    return frozenset(e.extensionName.decode(errors="replace") for e in props[:count.value])


def _cooperative_matrix_types(vk, instance, handle) -> tuple:
    """vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR (an instance-level extension command)."""
    vk.vkGetInstanceProcAddr.restype = ctypes.c_void_p
    vk.vkGetInstanceProcAddr.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    addr = vk.vkGetInstanceProcAddr(instance, b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
    if not addr:
        return ()
    fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(_U32),
                          ctypes.POINTER(_CooperativeMatrixProperties))(addr)
    count = _U32(0)
    if fn(handle, ctypes.byref(count), None) != 0:
        return ()
    props = (_CooperativeMatrixProperties * count.value)()
    for p in props:
        p.sType = _ST_COOPERATIVE_MATRIX_PROPERTIES
    if fn(handle, ctypes.byref(count), props) != 0:
        return ()
    name = lambda t: _COMPONENTS.get(t, str(t))
    return tuple(CooperativeMatrixType(p.MSize, p.NSize, p.KSize, name(p.AType), name(p.BType), name(p.CType),
                                       name(p.ResultType), bool(p.saturatingAccumulation),
                                       _SCOPES.get(p.scope, str(p.scope)))
                 for p in props[:count.value])


_FEATURE_COUNT = 55                 # the VkBool32 members of VkPhysicalDeviceFeatures
_SHADER_STORAGE_IMAGE_READ_WITHOUT_FORMAT = 31
_FORMAT_FEATURE_STORAGE_IMAGE = 0x2
# The VkFormats of D3D12's "typed UAV load additional formats": R32G32B32A32, R16G16B16A16 and
# R8G8B8A8 / R16 / R8 in their float (UNORM for 8 bits), UINT and SINT forms.
_ADDITIONAL_UAV_FORMATS = (109, 107, 108, 97, 95, 96, 37, 41, 42, 76, 74, 75, 9, 13, 14)


def _typed_uav_load_additional_formats(vk, handle) -> bool:
    """What vkd3d reports as D3D12_FEATURE_DATA_D3D12_OPTIONS.TypedUAVLoadAdditionalFormats:
    shaderStorageImageReadWithoutFormat, and every additional format a storage image format."""
    features = (_U32 * _FEATURE_COUNT)()
    vk.vkGetPhysicalDeviceFeatures.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    vk.vkGetPhysicalDeviceFeatures(handle, features)
    if not features[_SHADER_STORAGE_IMAGE_READ_WITHOUT_FORMAT]:
        return False
    props = (_U32 * 3)()        # VkFormatProperties: linear, optimal, buffer features
    vk.vkGetPhysicalDeviceFormatProperties.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p]
    for fmt in _ADDITIONAL_UAV_FORMATS:
        vk.vkGetPhysicalDeviceFormatProperties(handle, fmt, props)
        if not (props[0] | props[1]) & _FORMAT_FEATURE_STORAGE_IMAGE:
            return False
    return True


_ERROR_INCOMPATIBLE_DRIVER = -9       # vkCreateInstance's answer when no driver (ICD) is installed


class _NoDriver(UnsupportedError):
    pass


def create_instance(vk) -> ctypes.c_void_p:
    """A Vulkan 1.3 instance of the loader `vk` (no layers, no extensions); vkDestroyInstance it."""
    app = _AppInfo(_ST_APPLICATION_INFO, None, b"dmlvk", 1, b"dmlvk", 1, (1 << 22) | (3 << 12))
    info = _InstanceInfo(_ST_INSTANCE_CREATE_INFO, None, 0, ctypes.pointer(app), 0, None, 0, None)
    instance = ctypes.c_void_p()
    vk.vkCreateInstance.argtypes = [ctypes.POINTER(_InstanceInfo), ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    rc = vk.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance))
    if rc == _ERROR_INCOMPATIBLE_DRIVER:
        raise _NoDriver("vkCreateInstance: no Vulkan driver is installed")
    if rc != 0:
        raise RuntimeError(f"vkCreateInstance failed (VkResult {rc}); is a Vulkan driver installed?")
    return instance


def physical_device_handles(vk, instance) -> list:
    """The instance's VkPhysicalDevice handles, in vkEnumeratePhysicalDevices order."""
    count = _U32(0)
    vk.vkEnumeratePhysicalDevices.argtypes = [ctypes.c_void_p, ctypes.POINTER(_U32), ctypes.c_void_p]
    vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
    handles = (ctypes.c_void_p * count.value)()
    vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), handles)
    return list(handles[:count.value])


def physical_devices() -> List[PhysicalDeviceInfo]:
    """Every Vulkan physical device the loader reports, with the limits dmlvk uses (none where the
    loader finds no driver)."""
    vk = loader()
    try:
        instance = create_instance(vk)
    except _NoDriver:
        return []
    try:
        vk.vkGetPhysicalDeviceProperties2.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Properties2)]
        out = []
        for i, h in enumerate(physical_device_handles(vk, instance)):
            extensions = _device_extensions(vk, h)
            driver = _DriverProperties(_ST_DRIVER_PROPERTIES, None)
            sizes = _SubgroupSizeControlProperties(_ST_SUBGROUP_SIZE_CONTROL_PROPERTIES,
                                                   ctypes.cast(ctypes.pointer(driver), ctypes.c_void_p))
            subgroup = _SubgroupProperties(_ST_SUBGROUP_PROPERTIES, ctypes.cast(ctypes.pointer(sizes), ctypes.c_void_p))
            props2 = _Properties2(_ST_PROPERTIES_2, ctypes.cast(ctypes.pointer(subgroup), ctypes.c_void_p))
            vk.vkGetPhysicalDeviceProperties2(h, ctypes.byref(props2))
            p, lim = props2.properties, props2.properties.limits
            coop = ()
            if _COOPERATIVE_MATRIX_EXTENSION.decode() in extensions:
                coop = _cooperative_matrix_types(vk, instance, h)
            out.append(PhysicalDeviceInfo(
                index=i, name=p.deviceName.decode(errors="replace"),
                device_type=_TYPES.get(p.deviceType, str(p.deviceType)), vendor_id=p.vendorID,
                api_version=_version(p.apiVersion), driver_name=driver.driverName.decode(errors="replace"),
                driver_info=driver.driverInfo.decode(errors="replace"),
                max_storage_buffer_range=lim.maxStorageBufferRange,
                max_push_constants_size=lim.maxPushConstantsSize,
                max_compute_shared_memory_size=lim.maxComputeSharedMemorySize,
                max_compute_work_group_count=tuple(lim.maxComputeWorkGroupCount),
                max_compute_work_group_invocations=lim.maxComputeWorkGroupInvocations,
                subgroup_size=subgroup.subgroupSize, timestamp_period=float(lim.timestampPeriod),
                min_subgroup_size=sizes.minSubgroupSize, max_subgroup_size=sizes.maxSubgroupSize,
                subgroup_shuffle=bool(subgroup.supportedStages & _STAGE_COMPUTE
                                      and subgroup.supportedOperations & _SUBGROUP_SHUFFLE),
                extensions=extensions, cooperative_matrix_types=coop,
                typed_uav_load_additional_formats=_typed_uav_load_additional_formats(vk, h)))
        return out
    finally:
        vk.vkDestroyInstance.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        vk.vkDestroyInstance(instance, None)
