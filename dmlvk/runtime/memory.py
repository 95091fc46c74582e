"""Memory accounting, as data: which Vulkan heaps a device's buffers come from (device-local memory
and host-visible staging) and how many bytes dmlvk holds on each, checked before every allocation
against the heap's budget (VK_EXT_memory_budget) or, without one, its size. Knows no Kompute: the
Device passes the heaps' (size, budget, usage, flags) as its driver reports them."""
from __future__ import annotations

from typing import Sequence

HEAP_DEVICE_LOCAL = 1            # VK_MEMORY_HEAP_DEVICE_LOCAL_BIT


class OutOfDeviceMemory(MemoryError):
    """The Vulkan device could not allocate a buffer (or it would exceed the device's memory)."""


class HeapAccount:
    """roles: (the device-local heap, the staging heap), the largest of each kind (one heap when the
    device has only one, as lavapipe and integrated GPUs do: a buffer is device-local memory plus
    host-visible staging of the same size); used: bytes dmlvk holds per heap."""

    def __init__(self, heaps: Sequence[tuple], budgeted: bool, device_name: str):
        local = [i for i, h in enumerate(heaps) if h[3] & HEAP_DEVICE_LOCAL] or list(range(len(heaps)))
        host = [i for i, h in enumerate(heaps) if not h[3] & HEAP_DEVICE_LOCAL] or local
        pick = lambda ids: max(ids, key=lambda i: heaps[i][0])
        self.roles = (pick(local), pick(host))
        self.used = {i: 0 for i in range(len(heaps))}
        self.budgeted = budgeted
        self.device_name = device_name

    def reserve(self, nbytes: int, heap_ids, heaps: Sequence[tuple]) -> list:
        """Counts nbytes on each of heap_ids (a heap named twice, twice), or raises OutOfDeviceMemory
        where that would pass a heap's budget (or size); returns [(heap, bytes)] to release."""
        need = {}
        for i in heap_ids:
            need[i] = need.get(i, 0) + nbytes
        for i, n in need.items():
            size, budget, usage, _ = heaps[i]
            over = (usage + n > budget) if self.budgeted else (self.used[i] + n > size)
            if over:
                raise OutOfDeviceMemory(
                    f"{self.device_name}: allocating {nbytes} bytes would exceed memory heap {i} "
                    f"({self.used[i]} bytes held by dmlvk, heap size {size}, budget {budget})")
        for i, n in need.items():
            self.used[i] += n
        return [(i, nbytes) for i in heap_ids]

    def release(self, held) -> None:
        for i, n in held:
            self.used[i] -= n

    def report(self, heaps: Sequence[tuple]) -> dict:
        """{"heaps": [...]}: each heap dmlvk allocates from, its roles, size, budget, the process's
        usage (where the driver reports a budget) and the bytes dmlvk holds there."""
        out = {}
        for role, i in zip(("device", "staging"), self.roles):
            out.setdefault(i, {"roles": [], "heap": i, "size": heaps[i][0], "budget": heaps[i][1],
                               "process_usage": heaps[i][2] if self.budgeted else None,
                               "dmlvk_bytes": self.used[i]})["roles"].append(role)
        return {"heaps": list(out.values())}
