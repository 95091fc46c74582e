"""What the driver made of a dmlvk kernel: the statistics VK_KHR_pipeline_executable_properties
reports for a compute pipeline built exactly as dmlvk builds it (the same SPIR-V, specialization
constants and local size), through the Vulkan loader (ctypes). On NVIDIA GPUs they include the
register count per invocation, which with the shared memory decides how many workgroups an SM
runs at once; other drivers report their own sets. With representations, also the internal
representations the driver gives (vkGetPipelineExecutableInternalRepresentationsKHR: whatever
intermediate or machine code it chooses to show, text or bytes). Devices without the extension
(lavapipe lists none) raise RuntimeError. Used by tools/qconv_probe.py and dmlvk_lab/model_probe.py."""
import ctypes

from dmlvk.runtime import vkinfo

_U32, _U64, _PTR, _SIZE = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t
EXTENSION = "VK_KHR_pipeline_executable_properties"
_ST = dict(queue=2, device=3, shader_module=16, stage=18, compute_pipeline=29,
           pipeline_layout=30, set_layout=32, features2=1000059000, vulkan11=49, vulkan12=51,
           vulkan13=53, pipeline_cache=17, coopmat=1000506000, executable_features=1000269000, pipeline_info=1000269001,
           executable_properties=1000269002, executable_info=1000269003, statistic=1000269004,
           representation=1000269005)
_COMPUTE = 0x20
_STORAGE_BUFFER = 7
_CAPTURE_STATISTICS = 0x40
_CAPTURE_REPRESENTATIONS = 0x80


class _Struct(ctypes.Structure):
    def __init__(self, kind, **fields):
        super().__init__(sType=_ST[kind], **fields)


def _struct(name, fields):
    return type(name, (_Struct,), {"_fields_": [("sType", _U32), ("pNext", _PTR)] + fields})


_QueueInfo = _struct("QueueInfo", [("flags", _U32), ("family", _U32), ("count", _U32), ("pPriorities", _PTR)])
_DeviceInfo = _struct("DeviceInfo", [("flags", _U32), ("queues", _U32), ("pQueues", _PTR), ("layers", _U32),
                                     ("ppLayers", _PTR), ("extensions", _U32), ("ppExtensions", _PTR),
                                     ("pFeatures", _PTR)])
_CacheInfo = _struct("CacheInfo", [("flags", _U32), ("initialDataSize", _SIZE), ("pInitialData", _PTR)])
_ModuleInfo = _struct("ModuleInfo", [("flags", _U32), ("codeSize", _SIZE), ("pCode", _PTR)])


class _Binding(ctypes.Structure):
    _fields_ = [("binding", _U32), ("type", _U32), ("count", _U32), ("stages", _U32), ("pSamplers", _PTR)]


class _PushRange(ctypes.Structure):
    _fields_ = [("stages", _U32), ("offset", _U32), ("size", _U32)]


class _MapEntry(ctypes.Structure):
    _fields_ = [("constantID", _U32), ("offset", _U32), ("size", _SIZE)]


class _SpecInfo(ctypes.Structure):
    _fields_ = [("count", _U32), ("pEntries", _PTR), ("dataSize", _SIZE), ("pData", _PTR)]


_SetLayoutInfo = _struct("SetLayoutInfo", [("flags", _U32), ("count", _U32), ("pBindings", _PTR)])
_LayoutInfo = _struct("LayoutInfo", [("flags", _U32), ("sets", _U32), ("pSets", _PTR), ("ranges", _U32),
                                     ("pRanges", _PTR)])
_StageInfo = _struct("StageInfo", [("flags", _U32), ("stage", _U32), ("module", _U64), ("pName", ctypes.c_char_p),
                                   ("pSpec", _PTR)])
_PipelineInfo = _struct("PipelineInfo", [("flags", _U32), ("stage", _StageInfo), ("layout", _U64),
                                         ("base", _U64), ("baseIndex", ctypes.c_int32)])
_PipelineKey = _struct("PipelineKey", [("pipeline", _U64)])
_ExecutableProps = _struct("ExecutableProps", [("stages", _U32), ("name", ctypes.c_char * 256),
                                               ("description", ctypes.c_char * 256), ("subgroupSize", _U32)])
_ExecutableKey = _struct("ExecutableKey", [("pipeline", _U64), ("index", _U32)])


class _Value(ctypes.Union):
    _fields_ = [("b32", _U32), ("i64", ctypes.c_int64), ("u64", _U64), ("f64", ctypes.c_double)]


_Statistic = _struct("Statistic", [("name", ctypes.c_char * 256), ("description", ctypes.c_char * 256),
                                   ("format", _U32), ("value", _Value)])
_Representation = _struct("Representation", [("name", ctypes.c_char * 256), ("description", ctypes.c_char * 256),
                                             ("isText", _U32), ("dataSize", _SIZE), ("pData", _PTR)])


class _Chain:
    """Feature structs queried from the device and handed back unchanged at device creation, so
    that every feature the device has is on (as dmlvk's patched Kompute turns on the ones it uses).
    Each is an oversized zeroed buffer with its sType and pNext set: the driver writes only the
    members it knows."""

    def __init__(self, kinds):
        self.bufs = [ctypes.create_string_buffer(1024) for _ in kinds]
        for i, kind in enumerate(kinds):
            _U32.from_buffer(self.bufs[i], 0).value = _ST[kind]
            nxt = ctypes.addressof(self.bufs[i + 1]) if i + 1 < len(kinds) else 0
            _U64.from_buffer(self.bufs[i], 8).value = nxt

    @property
    def head(self):
        return ctypes.addressof(self.bufs[0])


class StatisticsDevice:
    """A Vulkan device with VK_KHR_pipeline_executable_properties on, for one physical device."""

    def __init__(self, index: int = 0):
        infos = vkinfo.physical_devices()
        if not 0 <= index < len(infos):
            raise ValueError(f"no Vulkan device {index}: {len(infos)} present")
        self.info = info = infos[index]
        if EXTENSION not in info.extensions:
            raise RuntimeError(f"{info.name} does not list {EXTENSION}: its driver reports no pipeline statistics")
        vk = self.vk = vkinfo.loader()
        vk.vkGetInstanceProcAddr.restype = _PTR
        vk.vkGetDeviceProcAddr.restype = _PTR
        self.instance = vkinfo.create_instance(vk)
        phys = _PTR(vkinfo.physical_device_handles(vk, self.instance)[index])
        major, minor = (int(v) for v in info.api_version.split(".")[:2])
        kinds = ["features2", "executable_features"]
        kinds += [k for k, need in (("vulkan11", (1, 2)), ("vulkan12", (1, 2)), ("vulkan13", (1, 3)))
                  if (major, minor) >= need]
        extensions = [EXTENSION.encode()]
        if "VK_KHR_cooperative_matrix" in info.extensions:
            kinds.append("coopmat")
            extensions.append(b"VK_KHR_cooperative_matrix")
        self._features = _Chain(kinds)
        vk.vkGetPhysicalDeviceFeatures2(phys, _PTR(self._features.head))
        prio = ctypes.c_float(1.0)
        queue = _QueueInfo("queue", family=0, count=1, pPriorities=ctypes.addressof(prio))
        names = (ctypes.c_char_p * len(extensions))(*extensions)
        dinfo = _DeviceInfo("device", pNext=self._features.head, queues=1, pQueues=ctypes.addressof(queue),
                            extensions=len(extensions), ppExtensions=ctypes.addressof(names))
        self.device = _PTR()
        self._check(vk.vkCreateDevice(phys, ctypes.byref(dinfo), None, ctypes.byref(self.device)), "vkCreateDevice")
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, _PTR, _PTR, ctypes.POINTER(_U32), _PTR)
        self._properties = proto(vk.vkGetDeviceProcAddr(self.device, b"vkGetPipelineExecutablePropertiesKHR"))
        self._statistics = proto(vk.vkGetDeviceProcAddr(self.device, b"vkGetPipelineExecutableStatisticsKHR"))
        self._representations = proto(vk.vkGetDeviceProcAddr(
            self.device, b"vkGetPipelineExecutableInternalRepresentationsKHR"))

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} failed (VkResult {rc})")

    def statistics(self, spirv: bytes, spec: tuple, bindings: int, push_bytes: int,
                   representations: bool = False, cache: list = None) -> list:
        """[{'name', 'subgroup_size', 'statistics': {name: value}}] per executable of a compute
        pipeline of this SPIR-V with uint32 specialization constants 0..len(spec)-1, `bindings`
        storage buffers and `push_bytes` of push constants; with representations each also has
        'representations': [(name, description, str or bytes)]. With cache (a list) the pipeline is
        made in a pipeline cache of its own, whose data (vkGetPipelineCacheData: on NVIDIA's driver
        the compiled machine code among the rest; dmlvk_lab/sass.py) is appended to the list."""
        vk, dev = self.vk, self.device
        code = ctypes.create_string_buffer(spirv, len(spirv))
        module = _U64()
        self._check(vk.vkCreateShaderModule(dev, ctypes.byref(_ModuleInfo("shader_module", codeSize=len(spirv),
                                                                           pCode=ctypes.addressof(code))),
                                            None, ctypes.byref(module)), "vkCreateShaderModule")
        binds = (_Binding * bindings)(*[_Binding(i, _STORAGE_BUFFER, 1, _COMPUTE, None) for i in range(bindings)])
        set_layout = _U64()
        self._check(vk.vkCreateDescriptorSetLayout(dev, ctypes.byref(_SetLayoutInfo(
            "set_layout", count=bindings, pBindings=ctypes.addressof(binds))), None, ctypes.byref(set_layout)),
            "vkCreateDescriptorSetLayout")
        push = _PushRange(_COMPUTE, 0, push_bytes)
        layout = _U64()
        self._check(vk.vkCreatePipelineLayout(dev, ctypes.byref(_LayoutInfo(
            "pipeline_layout", sets=1, pSets=ctypes.addressof(set_layout), ranges=1,
            pRanges=ctypes.addressof(push))), None, ctypes.byref(layout)), "vkCreatePipelineLayout")
        entries = (_MapEntry * len(spec))(*[_MapEntry(i, 4 * i, 4) for i in range(len(spec))])
        data = (_U32 * len(spec))(*spec)
        sinfo = _SpecInfo(len(spec), ctypes.addressof(entries), 4 * len(spec), ctypes.addressof(data))
        stage = _StageInfo("stage", stage=_COMPUTE, module=module.value, pName=b"main",
                           pSpec=ctypes.addressof(sinfo))
        flags = _CAPTURE_STATISTICS | (_CAPTURE_REPRESENTATIONS if representations else 0)
        pinfo = _PipelineInfo("compute_pipeline", flags=flags, stage=stage, layout=layout.value, baseIndex=-1)
        pipeline, pcache = _U64(), _U64()
        try:
            if cache is not None:
                self._check(vk.vkCreatePipelineCache(dev, ctypes.byref(_CacheInfo("pipeline_cache")), None,
                                                     ctypes.byref(pcache)), "vkCreatePipelineCache")
            self._check(vk.vkCreateComputePipelines(dev, pcache, 1, ctypes.byref(pinfo), None,
                                                    ctypes.byref(pipeline)), "vkCreateComputePipelines")
            if cache is not None:
                cache.append(self._cache_data(pcache))
            return self._executables(pipeline.value, representations)
        finally:
            if pcache.value:
                vk.vkDestroyPipelineCache(dev, pcache, None)
            vk.vkDestroyPipeline(dev, pipeline, None)
            vk.vkDestroyPipelineLayout(dev, layout, None)
            vk.vkDestroyDescriptorSetLayout(dev, set_layout, None)
            vk.vkDestroyShaderModule(dev, module, None)

    def _cache_data(self, pcache) -> bytes:
        size = _SIZE(0)
        self._check(self.vk.vkGetPipelineCacheData(self.device, pcache, ctypes.byref(size), None),
                    "vkGetPipelineCacheData")
        buf = ctypes.create_string_buffer(size.value)
        self._check(self.vk.vkGetPipelineCacheData(self.device, pcache, ctypes.byref(size), buf),
                    "vkGetPipelineCacheData")
        return buf.raw[:size.value]

    def _executables(self, pipeline: int, representations: bool) -> list:
        key = _PipelineKey("pipeline_info", pipeline=pipeline)
        count = _U32(0)
        self._check(self._properties(self.device, ctypes.addressof(key), ctypes.byref(count), None),
                    "vkGetPipelineExecutablePropertiesKHR")
        props = (_ExecutableProps * count.value)(*[_ExecutableProps("executable_properties")
                                                   for _ in range(count.value)])
        self._check(self._properties(self.device, ctypes.addressof(key), ctypes.byref(count),
                                     ctypes.addressof(props)), "vkGetPipelineExecutablePropertiesKHR")
        out = []
        for i, prop in enumerate(props[:count.value]):
            ekey = _ExecutableKey("executable_info", pipeline=pipeline, index=i)
            n = _U32(0)
            self._check(self._statistics(self.device, ctypes.addressof(ekey), ctypes.byref(n), None),
                        "vkGetPipelineExecutableStatisticsKHR")
            stats = (_Statistic * n.value)(*[_Statistic("statistic") for _ in range(n.value)])
            self._check(self._statistics(self.device, ctypes.addressof(ekey), ctypes.byref(n),
                                         ctypes.addressof(stats)), "vkGetPipelineExecutableStatisticsKHR")
            values = {}
            for s in stats[:n.value]:
                values[s.name.decode(errors="replace")] = (bool(s.value.b32), s.value.i64, s.value.u64,
                                                           s.value.f64)[s.format]
            out.append({"name": prop.name.decode(errors="replace"), "subgroup_size": prop.subgroupSize,
                        "statistics": values})
            if representations:
                out[-1]["representations"] = self._internal(ekey)
        return out

    def _internal(self, ekey) -> list:
        """[(name, description, str or bytes)] of one executable's internal representations: their
        count, then their sizes, then their data."""
        n = _U32(0)
        call = "vkGetPipelineExecutableInternalRepresentationsKHR"
        self._check(self._representations(self.device, ctypes.addressof(ekey), ctypes.byref(n), None), call)
        reps = (_Representation * n.value)(*[_Representation("representation") for _ in range(n.value)])
        self._check(self._representations(self.device, ctypes.addressof(ekey), ctypes.byref(n),
                                          ctypes.addressof(reps)), call)
        data = [ctypes.create_string_buffer(r.dataSize) for r in reps[:n.value]]
        for r, buf in zip(reps[:n.value], data):
            r.pData = ctypes.addressof(buf)
        self._check(self._representations(self.device, ctypes.addressof(ekey), ctypes.byref(n),
                                          ctypes.addressof(reps)), call)
        out = []
        for r, buf in zip(reps[:n.value], data):
            raw = buf.raw[:r.dataSize]
            body = raw.rstrip(b"\0").decode(errors="replace") if r.isText else raw
            out.append((r.name.decode(errors="replace"), r.description.decode(errors="replace"), body))
        return out

    def close(self) -> None:
        if self.device:
            self.vk.vkDestroyDevice(self.device, None)
            self.device = None
        if self.instance:
            self.vk.vkDestroyInstance(self.instance, None)
            self.instance = None


def kernel_statistics(stats_device: StatisticsDevice, kernel, representations: bool = False,
                      cache: list = None) -> list:
    """statistics() of a dmlvk Kernel, built as dmlvk's runtime builds it."""
    from dmlvk.runtime.compiler import compile_shader
    spirv = compile_shader(kernel.shader, kernel.defines)
    spec = (kernel.local_size,) + tuple(int(v) for v in kernel.spec)
    push_bytes = 4 * (len(kernel.push) + 2)          # the dispatcher appends (items, first item)
    return stats_device.statistics(spirv, spec, len(kernel.slots), push_bytes, representations, cache)
