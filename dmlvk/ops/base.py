"""What every compiled operator shares: binding checks, host staging, recorded sequences."""
from __future__ import annotations

from collections import OrderedDict
from typing import List, Optional, Sequence

import numpy as np

from ..enums import DataType, TensorFlags
from ..runtime.device import Buffer, Device, Kernel, host_bytes, kp
from ..tensor import TensorDesc, nested_order

_RECORDED_BINDINGS = 8     # recorded sequences kept per operator (LRU)


def dense_span(desc: TensorDesc) -> Optional[int]:
    """Bytes from the first to past the last element if the layout has no gaps, else None."""
    strides = desc.effective_strides
    if nested_order(desc.sizes, strides) is None:
        return None
    span = (sum((s - 1) * st for s, st in zip(desc.sizes, strides)) + 1) * desc.element_bytes
    return span if span == desc.element_count * desc.element_bytes else None


class CompiledOperator:
    """IDMLCompiledOperator: bound to a device, executed with host arrays or dmlvk.Buffers.

    Bindings follow DirectML's order: inputs (optional ones as None), then outputs."""
    operator_name = "DML_OPERATOR"

    def __init__(self, device: Device, desc, inputs: Sequence[Optional[TensorDesc]],
                 outputs: Sequence[TensorDesc], kernels: List[Kernel]):
        self.device, self.desc = device, desc
        self.input_descs, self.output_descs = list(inputs), list(outputs)
        self._kernels = kernels
        self._descs = self.input_descs + self.output_descs
        self._staging = [None] * len(self._descs)
        self._used_slots = {s for k in kernels for s in k.slots}
        self._owned = {}          # slot -> Buffer snapshot of an OWNED_BY_DML input
        self._recorded: "OrderedDict[tuple, tuple]" = OrderedDict()
        for i, d in enumerate(self._descs):
            if d is not None:
                device.check_binding_size(d.total_bytes, f"{self.operator_name} tensor {i}")
        # Host outputs whose layout has gaps are uploaded first so the gaps come back unchanged.
        self._out_span = [dense_span(d) for d in self.output_descs]

    def __repr__(self):
        return f"<{self.operator_name} on {self.device.name}>"

    # ---- binding ------------------------------------------------------------------------------

    def _needs_init(self, slot: int) -> bool:
        d = self.input_descs[slot]
        return d is not None and bool(d.flags & TensorFlags.OWNED_BY_DML)

    def initialize(self, inputs: Sequence) -> None:
        """IDMLOperatorInitializer: bind the OWNED_BY_DML inputs (others None); they are
        snapshotted on the device and must not be bound at execution."""
        if len(inputs) != len(self.input_descs):
            raise ValueError(f"{self.operator_name}: initialize takes {len(self.input_descs)} inputs, got {len(inputs)}")
        for slot, b in enumerate(inputs):
            if not self._needs_init(slot):
                if b is not None:
                    raise ValueError(f"{self.operator_name}: input {slot} is not OWNED_BY_DML; bind it at execution")
                continue
            if b is None:
                raise ValueError(f"{self.operator_name}: input {slot} is OWNED_BY_DML and must be bound at initialization")
            raw = b.read() if isinstance(b, Buffer) else host_bytes(b, f"input {slot}")
            self._check_size(slot, raw.size)
            snap = Buffer(self.device, self._descs[slot].total_bytes)
            snap.write(raw[:snap.nbytes])
            self._owned[slot] = snap
        self._recorded.clear()

    def _check_size(self, slot: int, nbytes: int) -> None:
        need = self._descs[slot].total_bytes
        if nbytes < need:
            raise ValueError(f"{self.operator_name}: binding {slot} holds {nbytes} bytes; its tensor "
                             f"needs TotalTensorSizeInBytes = {need}")

    def execute(self, inputs: Sequence, outputs: Sequence) -> None:
        """Run the operator. Each binding is a numpy array (its bytes are read, or written, per the
        TensorDesc) or a dmlvk.Buffer on this device; optional tensors that are absent are None."""
        self._run(self._checked_bindings(inputs, outputs))

    def _checked_bindings(self, inputs: Sequence, outputs: Sequence) -> list:
        """The operator's bindings after DirectML's binding checks, then its internal buffers."""
        inputs, outputs = list(inputs), list(outputs)
        if len(inputs) != len(self.input_descs) or len(outputs) != len(self.output_descs):
            raise ValueError(f"{self.operator_name} takes {len(self.input_descs)} inputs and "
                             f"{len(self.output_descs)} outputs, got {len(inputs)} and {len(outputs)}")
        bindings = inputs + outputs
        n_in = len(inputs)
        for slot, (d, b) in enumerate(zip(self._descs, bindings)):
            kind = "input" if slot < n_in else "output"
            if d is None or (slot < n_in and self._needs_init(slot)):
                if b is not None:
                    why = "its tensor is null" if d is None else "it is OWNED_BY_DML (bound at initialization)"
                    raise ValueError(f"{self.operator_name}: {kind} {slot} must be None: {why}")
                if d is not None and slot not in self._owned:
                    raise ValueError(f"{self.operator_name}: call initialize() first: input {slot} is OWNED_BY_DML")
                continue
            if b is None:
                raise ValueError(f"{self.operator_name}: {kind} {slot} is required")
            if isinstance(b, Buffer):
                if b.device is not self.device:
                    raise ValueError(f"{self.operator_name}: {kind} {slot} lives on another device")
                self._check_size(slot, b.nbytes)
            else:
                self._check_size(slot, host_bytes(b, f"{kind} {slot}", writable=slot >= n_in).size)
        for o in range(n_in, len(bindings)):   # spec 1.4: these operators never run in place
            for i in range(n_in):
                a, b = bindings[o], bindings[i]
                if a is None or b is None:
                    continue
                same = a is b if isinstance(a, Buffer) or isinstance(b, Buffer) else np.shares_memory(a, b)
                if same:
                    raise ValueError(f"{self.operator_name}: output {o - n_in} overlaps input {i}; "
                                     f"this operator does not run in place")

        return bindings + self._internal_bindings(bindings)

    def time(self, inputs: Sequence, outputs: Sequence, repeats: int = 10) -> List[float]:
        """GPU seconds of each of `repeats` back-to-back executions (timestamps around the
        dispatches; host transfers are not included). Bindings as for execute(); the outputs
        hold the result afterwards if they are dmlvk.Buffers."""
        if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
            raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
        bindings = self._checked_bindings(inputs, outputs)
        self._run(bindings)                    # stages host arrays (and computes the result once)
        return self.device.time(self._kernels, self._tensors(bindings), repeats)

    def _tensors(self, bindings: list) -> list:
        """The kp tensors the kernels read: a binding's Buffer, OWNED_BY_DML snapshot or staging."""
        out = []
        for slot, b in enumerate(bindings):
            if slot not in self._used_slots:
                out.append(None)
            elif b is None:
                out.append(self._owned[slot]._tensor)
            elif isinstance(b, Buffer):
                out.append(b._tensor)
            else:
                out.append(self._staging[slot])
        return out

    def _internal_bindings(self, bindings: list) -> list:
        """Extra buffers the kernels read after the operator's own bindings (none by default)."""
        return []

    def _run(self, bindings: list) -> None:
        n_in = len(self.input_descs)
        uploads, downloads = [], []
        for slot, b in enumerate(bindings):   # host arrays go through this operator's staging tensors
            if slot not in self._used_slots or b is None or isinstance(b, Buffer):
                continue
            d = self._descs[slot]
            t = self._staging[slot]
            if t is None:
                t = self._staging[slot] = self.device._new_tensor(d.total_bytes, f"{self.operator_name} tensor {slot}")
            stage = t.data().view(np.uint8)
            raw = host_bytes(b, "binding")
            if slot < n_in:
                stage[:d.total_bytes] = raw[:d.total_bytes]
                uploads.append(t)
            else:
                span = self._out_span[slot - n_in]
                if span is None:
                    stage[:d.total_bytes] = raw[:d.total_bytes]
                    uploads.append(t)
                    span = d.total_bytes
                downloads.append((t, raw, span))
        tensors = self._tensors(bindings)
        seq = self._sequence(tensors, tuple(uploads), tuple(t for t, _, _ in downloads))
        seq.eval()
        for t, raw, span in downloads:
            raw[:span] = t.data().view(np.uint8)[:span]

    def _sequence(self, tensors: list, uploads: tuple, downloads: tuple):
        key = (tuple(id(t) for t in tensors), tuple(id(t) for t in uploads), tuple(id(t) for t in downloads))
        hit = self._recorded.get(key)
        if hit is not None:
            self._recorded.move_to_end(key)
            return hit[0]
        seq = self.device.sequence()
        if uploads:
            seq.record(kp.OpTensorSyncDevice(list(uploads)))
        keep = []
        for k in self._kernels:
            for algo, push in self.device.algorithms(k, [tensors[s] for s in k.slots]):
                seq.record(kp.OpAlgoDispatch(algo, push))
                keep.append(algo)
        if downloads:
            seq.record(kp.OpTensorSyncLocal(list(downloads)))
        # The entry holds the tensors too, so their ids stay unique while it lives.
        self._recorded[key] = (seq, keep, tensors, uploads, downloads)
        if len(self._recorded) > _RECORDED_BINDINGS:
            self._recorded.popitem(last=False)
        return seq


def array_binding(x: np.ndarray, name: str):
    """(TensorDesc, host bytes) for an ndarray, keeping its strides where they are DirectML
    strides (non-negative, element multiples, not mostly gaps) and copying otherwise."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(x).__name__}")
    try:
        dt = DataType.from_numpy(x.dtype)
    except TypeError:
        raise TypeError(f"{name} has dtype {x.dtype}, which no DirectML data type matches") from None
    item = x.itemsize
    ok = all(s >= 0 and s % item == 0 for s in x.strides) and x.size > 0
    span = (sum((n - 1) * s for n, s in zip(x.shape, x.strides)) + item) if ok else 0
    if not ok or span > 4 * x.nbytes + 4096:
        x = np.ascontiguousarray(x)
        span = x.nbytes
    desc = TensorDesc(dt, x.shape, tuple(s // item for s in x.strides))
    raw = np.lib.stride_tricks.as_strided(x, shape=(span // item,), strides=(item,)).view(np.uint8)
    if raw.size < desc.total_bytes:       # the total size is rounded up to whole words
        padded = np.zeros(desc.total_bytes, np.uint8)
        padded[:raw.size] = raw
        raw = padded
    return desc, raw


def cached_operator(device: Device, desc) -> CompiledOperator:
    """The compiled operator for a description, created once per device (the numpy-level API)."""
    cache = device.__dict__.setdefault("_operator_cache", {})
    op = cache.get(desc)
    if op is None:
        if len(cache) >= 64:
            cache.pop(next(iter(cache)))
        op = cache[desc] = device.create_operator(desc)
    return op
