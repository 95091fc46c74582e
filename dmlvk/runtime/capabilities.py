"""What a device offers dmlvk's kernels: the optional Vulkan features it was created with, as data.

Kernels choose a variant as a pure function of (operator description, Capabilities); the portable
variant needs nothing from this record. DMLVK_DISABLE_FEATURES (a comma-separated list of Vulkan
feature or extension names, or "all") hides features from that choice, so the portable path can
be run on a device that has the fast one."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import Iterable

from .vkinfo import CooperativeMatrixType, PhysicalDeviceInfo

DISABLE_ENV = "DMLVK_DISABLE_FEATURES"


@dataclass(frozen=True)
class Capabilities:
    features: frozenset                   # Vulkan names of the enabled features and extensions
    api_version: str = "1.1.0"            # the version the device is used at
    subgroup_size: int = 0
    min_subgroup_size: int = 0
    max_subgroup_size: int = 0
    cooperative_matrix_types: tuple = ()  # vkinfo.CooperativeMatrixType, when cooperativeMatrix is on
    disabled: frozenset = field(default=frozenset())   # names hidden by without() / the environment
    device_type: str = ""                 # VkPhysicalDeviceType: "CPU" for lavapipe and other software devices
    loop_iteration_limit: int = 0         # loop iterations an invocation may run in all (0: unlimited)
    # The device's limits that decide whether a kernel can run at all (0: not known, not checked;
    # a record made by hand, as the tests' and the golden-kernel record's are). Tests lower them
    # with dataclasses.replace to run the fallbacks a smaller device takes.
    max_workgroup_invocations: int = 0    # maxComputeWorkGroupInvocations
    max_shared_memory: int = 0            # maxComputeSharedMemorySize, bytes
    max_push_constants: int = 0           # maxPushConstantsSize, bytes

    def has(self, name: str) -> bool:
        return name in self.features

    @property
    def int8_arithmetic(self) -> bool:
        return self.has("shaderInt8")

    @property
    def storage_8bit(self) -> bool:
        return self.has("storageBuffer8BitAccess")

    @property
    def storage_16bit(self) -> bool:
        return self.has("storageBuffer16BitAccess")

    @property
    def integer_dot_product(self) -> bool:
        return self.has("shaderIntegerDotProduct")

    def cooperative_matrix(self, a: str, b: str, result: str) -> tuple:
        """The subgroup-scope (M, N, K) shapes the device multiplies a x b -> result in."""
        if not self.has("cooperativeMatrix"):
            return ()
        return tuple((t.m, t.n, t.k) for t in self.cooperative_matrix_types
                     if (t.a, t.b, t.result, t.scope) == (a, b, result, "subgroup"))

    def offers(self, feature: str) -> bool:
        """Whether a variant that requires this feature may run: has(feature); "shaderInt8" for the
        cooperative-matrix kernels where the matrices are emulated (the emulation reads int8 values
        with bitfieldExtract from 32-bit words: its SPIR-V declares no Int8 capability); the
        pseudo-feature "cpuKernels" on CPU devices (cpu_kernels)."""
        return (self.has(feature) or (feature == "shaderInt8" and self.emulated_cooperative_matrix)
                or (feature == CPU_KERNELS and self.cpu_kernels))

    def fits_workgroup(self, invocations: int) -> bool:
        """Whether a workgroup of this many invocations is within maxComputeWorkGroupInvocations."""
        return not self.max_workgroup_invocations or invocations <= self.max_workgroup_invocations

    def fits_shared(self, nbytes: int) -> bool:
        """Whether this much shared memory is within maxComputeSharedMemorySize."""
        return not self.max_shared_memory or nbytes <= self.max_shared_memory

    @property
    def emulated_cooperative_matrix(self) -> bool:
        """Whether the cooperative matrices are emulated (dmlvk/shaders/coopmat_emulation.glsl)."""
        return self.has(COOPMAT_EMULATED)

    def with_emulated_cooperative_matrix(self) -> "Capabilities":
        """The record with the int8 x int8 -> int32 16 x 16 x 32 subgroup cooperative matrix that the
        cooperative-matrix path needs, emulated in plain GLSL: that path's kernels then run on any
        device (slowly, whatever its subgroup size); the tests force it on lavapipe this way."""
        t = CooperativeMatrixType(16, 16, 32, "int8", "int8", "int32", "int32", False, "subgroup")
        return replace(self, features=self.features | {"cooperativeMatrix", COOPMAT_EMULATED},
                       cooperative_matrix_types=(t,))

    @property
    def cpu_kernels(self) -> bool:
        """Whether kernels written for CPU devices (lavapipe) may be chosen: on a CPU device, unless
        hidden as the pseudo-feature "cpuKernels" (or by "all")."""
        return self.device_type == "CPU" and CPU_KERNELS not in self.disabled

    def without(self, names: Iterable[str]) -> "Capabilities":
        """The same record with the named features (or every feature, for "all") hidden;
        "cpuKernels" hides the CPU-device kernels."""
        names = set(names)
        gone = set(self.features) if "all" in names else names & self.features
        if self.device_type == "CPU" and ("all" in names or CPU_KERNELS in names):
            gone.add(CPU_KERNELS)
        types = () if "cooperativeMatrix" in gone else self.cooperative_matrix_types
        return replace(self, features=self.features - gone, disabled=self.disabled | gone,
                       cooperative_matrix_types=types)

    def lines(self) -> list:
        """Human-readable lines for `dmlvk devices`."""
        f = self.features
        yes = lambda b: "yes" if b else "no"
        out = [f"Vulkan {self.api_version}; subgroup size {self.subgroup_size}"
               + (f" ({self.min_subgroup_size}-{self.max_subgroup_size} with subgroupSizeControl)"
                  if "subgroupSizeControl" in f else "") + f", shuffles {yes(SUBGROUP_SHUFFLE in f)}",
               f"int8 arithmetic {yes(self.int8_arithmetic)}, 8-bit storage {yes(self.storage_8bit)}, "
               f"16-bit storage {yes(self.storage_16bit)}, float16 {yes('shaderFloat16' in f)}, "
               f"integer dot product {yes(self.integer_dot_product)}, "
               f"memory model {yes('vulkanMemoryModel' in f)}"]
        if self.cooperative_matrix_types:
            out.append("cooperative matrices" + (" (emulated)" if self.emulated_cooperative_matrix else "") + ": "
                       + "; ".join(map(str, self.cooperative_matrix_types)))
        else:
            out.append("cooperative matrices: none")
        if self.disabled:
            out.append(f"hidden by {DISABLE_ENV}: {', '.join(sorted(self.disabled))}")
        return out


CPU_KERNELS = "cpuKernels"
COOPMAT_EMULATED = "cooperativeMatrixEmulated"      # a pseudo-feature: with_emulated_cooperative_matrix()
# The subgroup shuffle operations in compute shaders (a property of Vulkan 1.1 devices, not a
# feature to enable), listed with the features so that DMLVK_DISABLE_FEATURES can hide them
SUBGROUP_SHUFFLE = "subgroupShuffle"


def disabled_by_environment() -> set:
    raw = os.environ.get(DISABLE_ENV, "")
    return {n.strip() for n in raw.split(",") if n.strip()}


def device_capabilities(info: PhysicalDeviceInfo, enabled: Iterable[str], api_version: str) -> Capabilities:
    """The record for a device created with the `enabled` features, less those the environment hides."""
    enabled = frozenset(enabled) | ({SUBGROUP_SHUFFLE} if info.subgroup_shuffle else set())
    caps = Capabilities(
        features=enabled, api_version=api_version, subgroup_size=info.subgroup_size,
        min_subgroup_size=info.min_subgroup_size, max_subgroup_size=info.max_subgroup_size,
        cooperative_matrix_types=info.cooperative_matrix_types if "cooperativeMatrix" in enabled else (),
        device_type=info.device_type, loop_iteration_limit=loop_iteration_limit(info),
        max_workgroup_invocations=info.max_compute_work_group_invocations,
        max_shared_memory=info.max_compute_shared_memory_size, max_push_constants=info.max_push_constants_size)
    return caps.without(disabled_by_environment())


# llvmpipe (lavapipe) before Mesa 25 ends every loop of a shader invocation once that invocation has
# run 65,535 loop iterations in all, silently (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, one counter
# shared by every loop). Measured: Debian 12's Mesa 22.3.6 stops there; bookworm-backports' Mesa
# 25.0.7 does not. Mesa 23 and 24 were not measured and are taken to stop there too.
LLVMPIPE_LOOP_LIMIT = 65535
LLVMPIPE_UNLIMITED_FROM = 25


def loop_iteration_limit(info: PhysicalDeviceInfo) -> int:
    """The loop iterations one invocation of a shader may run in all on this device (0: no limit)."""
    if info.driver_name != "llvmpipe":
        return 0
    m = re.search(r"Mesa (\d+)\.", info.driver_info)
    return 0 if m and int(m.group(1)) >= LLVMPIPE_UNLIMITED_FROM else LLVMPIPE_LOOP_LIMIT


# Drivers measured to run every branch of a shader, the ones its specialization constants rule out
# included (masked): SwiftShader executes a kernel's code for all its lanes and paths, so the
# depth/space rows kernel took 0.60-0.85 s there for 4 MiB, against 31-39 ms with its constants
# folded into the SPIR-V first (a copy: 4-5 ms). Vulkan reports no such property; the driver is
# known by its VkPhysicalDeviceDriverProperties name. lavapipe folds them itself: folding them for it
# changed no kernel's speed and made pipeline creation 4x slower (LLVM then unrolls every loop).
DEAD_BRANCH_DRIVERS = ("SwiftShader driver",)


def runs_dead_branches(info: PhysicalDeviceInfo) -> bool:
    """Whether the device's driver runs the branches a kernel's specialization constants rule out
    (so dmlvk folds the constants in first: Device.host_specialization)."""
    return info.driver_name in DEAD_BRANCH_DRIVERS
