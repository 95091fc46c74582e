"""Kernels as data, with no device: a Kernel (one shader dispatch of an operator: shader,
specialization and push constants, work items, bindings), how an operator is asked to choose its
kernels (VariantChoice), and how a dispatch of many work items is tiled into grids the device's
maxComputeWorkGroupCount allows (dispatch_plan). The Device (device.py) runs them through Kompute."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import numpy as np

VARIANT_ENV = "DMLVK_VARIANT"      # a variant forced for every operator that has it


@dataclass(frozen=True)
class Kernel:
    """One shader dispatch of an operator: `count` work items, `local_size` per workgroup.
    `push` holds the operator's push constants; the dispatcher appends (items, first item).
    The shader writes its last binding and only reads the others."""
    shader: str
    spec: tuple           # specialization constants 1..n (constant 0 is the local size)
    push: tuple
    count: int
    slots: tuple          # which of the operator's bindings the shader's bindings 0..k are
    local_size: int = 128
    defines: tuple = ()
    variant: str = field(default="", compare=False)   # the operator's name for this way of running

    def __post_init__(self):
        # Python ints throughout (numpy integers reaching kp as workgroup counts crashed lavapipe's
        # pipeline creation).
        for name in ("spec", "push"):
            object.__setattr__(self, name, tuple(int(v) for v in getattr(self, name)))
        for name in ("count", "local_size"):
            object.__setattr__(self, name, int(getattr(self, name)))


@dataclass(frozen=True)
class VariantChoice:
    """How an operator chooses its kernels (see dmlvk/ops/variants.py): a forced variant's name, tuning
    numbers instead of its table's, and whether names the operator lacks are an error (strict) or
    ignored (a device-wide or environment choice, which may name other operators' variants)."""
    force: Optional[str] = None
    tuning: dict = field(default_factory=dict)
    strict: bool = False


def dispatch_plan(count: int, local_size: int, max_workgroup_count: Sequence[int]) -> Iterator[tuple]:
    """Split `count` work items into dispatches no larger than maxComputeWorkGroupCount: a 2-D grid
    per dispatch, at most 2**31 items each. Yields (first item, items, grid)."""
    max_x, max_y = max_workgroup_count[0], max_workgroup_count[1]
    per_dispatch = min(max_x * max_y * local_size, 1 << 31)
    per_dispatch -= per_dispatch % local_size
    first = 0
    while first < count:
        items = min(per_dispatch, count - first)
        groups = -(-items // local_size)
        gx = min(groups, max_x)
        gy = -(-groups // gx)
        yield first, items, (gx, gy, 1)
        first += items


def kernel_dispatches(kernel: Kernel, max_workgroup_count: Sequence[int]) -> list:
    """(push constants with the dispatch's items and first item appended, workgroup grid) of each
    dispatch of the kernel's plan."""
    return [(np.array(tuple(kernel.push) + (items, first), dtype=np.uint32), grid)
            for first, items, grid in dispatch_plan(kernel.count, kernel.local_size, max_workgroup_count)]
