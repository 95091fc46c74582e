"""What every compiled operator shares: binding checks, host staging, recorded programs.

Thread safety: each caller of execute() borrows a staging context of its own (host staging
buffers, the parameter block, recorded programs) from the operator's pool, so any number of
threads may execute one operator at once; Buffers bound by two threads at once are the callers'
race, as in DirectML."""
from __future__ import annotations

from collections import OrderedDict
from typing import List, Optional, Sequence

import numpy as np

from ..enums import DataType, TensorFlags
from ..arrays import DeviceArray, resolve_device
from ..runtime.commands import BoundCall, Program
from ..runtime.commands import time as time_dispatches
from ..runtime.device import Buffer, Device, host_bytes
from ..runtime.kernel import Kernel
from ..tensor import TensorChecker, TensorDesc, nested_order, same_data_type


def dense_span(desc: TensorDesc) -> Optional[int]:
    """Bytes from the first to past the last element if the layout has no gaps, else None."""
    strides = desc.effective_strides
    if nested_order(desc.sizes, strides) is None:
        return None
    span = (sum((s - 1) * st for s, st in zip(desc.sizes, strides)) + 1) * desc.element_bytes
    return span if span == desc.element_count * desc.element_bytes else None


def check_alike(op: str, named: Sequence[tuple], level, strict: bool, ranks, types) -> None:
    """The element-by-element operators' rule: every (name, TensorDesc) present, of the feature level's
    ranks and types, all of the first's DataType and Sizes (the one named "Output" checked as one)."""
    checkers = []
    for name, t in named:
        c = TensorChecker(op, name, t, level, strict).required()
        c.common(is_output=name == "Output", ranks=ranks, types=types)
        checkers.append(c)
    first_name, first = named[0]
    for c in checkers[1:]:
        same_data_type(op, first_name, first, c.name, c.desc)
        c.sizes_equal(first.sizes, f"the {first_name}'s Sizes")


def strided_geometry(sizes: Sequence[int], stride_rows: Sequence[Sequence[int]], words: int) -> np.ndarray:
    """A kernel's parameter block of `words` words: the dimension count, the sizes [8], then each row of
    element strides [8] (the element-by-element kernels' layout; the rest left 0)."""
    geo = np.zeros(words, np.uint32)
    rank = len(sizes)
    geo[0] = rank
    for k, row in enumerate((sizes,) + tuple(stride_rows)):
        geo[1 + 8 * k:1 + 8 * k + rank] = row
    return geo


def read_elements(desc: TensorDesc, binding, dtype) -> np.ndarray:
    """The logical elements of a small tensor (scale, zero point, bias) as a flat array."""
    raw = binding.read() if isinstance(binding, Buffer) else host_bytes(binding, "binding")
    dt = np.dtype(dtype)
    whole = desc.total_bytes // dt.itemsize * dt.itemsize   # the total need not be whole elements
    view = np.lib.stride_tricks.as_strided(raw[:whole].view(dt), shape=desc.sizes,
                                           strides=tuple(s * dt.itemsize for s in desc.effective_strides))
    return np.array(view).reshape(-1)


def _same_start(a: np.ndarray, b: np.ndarray) -> bool:
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


class _Context:
    """One caller's host-side state: staging Buffers per host-array slot, the parameter block
    and its key, and a few programs recorded over the Buffers bound lately (past that, the
    least recently used program is rebound: its pipelines stay)."""
    __slots__ = ("staging", "programs", "params", "params_key", "scratch", "fetch")

    def __init__(self):
        self.fetch = None         # fetch()'s (input staging, its bytes, output staging, its span, Program)
        self.staging = {}
        self.scratch = None       # the operator's device scratch Buffers, made at first use
        self.programs: "OrderedDict[tuple, Program]" = OrderedDict()
        self.params = self.params_key = None


_PROGRAMS_PER_CONTEXT = 4
# An output binding of CompiledOperator.execute_bindings whose bytes are returned (a dense output)
FETCH = np.empty(0, np.uint8)


class CompiledOperator:
    """IDMLCompiledOperator: bound to a device, executed with host arrays or dmlvk.Buffers.

    Bindings follow DirectML's order: inputs (optional ones as None), then outputs. A kernel's
    slots index the bindings, then the parameter block (None if the operator has none), then the
    scratch Buffers (device memory of the given sizes, one set per staging context, that one
    execution's kernels pass data through)."""
    operator_name = "DML_OPERATOR"
    # Input slots whose values the host reads to build the parameter block (see _parameters).
    _param_slots: tuple = ()
    # Or a parameter block fixed at compile time (words), the same for every execution.
    _constant_params: Optional[np.ndarray] = None
    # Whether the output may be bound to an input's own memory (laid out alike): DirectML's in-place.
    _in_place = False

    def __init__(self, device: Device, desc, inputs: Sequence[Optional[TensorDesc]],
                 outputs: Sequence[TensorDesc], kernels: List[Kernel], scratch: Sequence[int] = (),
                 name: Optional[str] = None):
        self.device, self.desc = device, desc
        if name is not None:
            self.operator_name = name
        self._scratch_bytes = tuple(int(n) for n in scratch)
        self.input_descs, self.output_descs = list(inputs), list(outputs)
        self._kernels = kernels
        self._descs = self.input_descs + self.output_descs
        self._used_slots = {s for k in kernels for s in k.slots}
        self._owned = {}          # slot -> Buffer snapshot of an OWNED_BY_DML input
        self._contexts: List[_Context] = []     # free staging contexts (list ops are atomic)
        for i, d in enumerate(self._descs):
            if d is not None:
                device.check_binding_size(d.total_bytes, f"{self.operator_name} tensor {i}")
        # Host outputs whose layout has gaps are uploaded first so the gaps come back unchanged.
        self._out_span = [dense_span(d) for d in self.output_descs]
        # Per binding: (used by a kernel, TotalTensorSizeInBytes, an input, the dense output span)
        n_in = len(self.input_descs)
        self._slot_plan = [(s in self._used_slots, 0 if d is None else d.total_bytes, s < n_in,
                            None if s < n_in else self._out_span[s - n_in]) for s, d in enumerate(self._descs)]

    def __repr__(self):
        return f"<{self.operator_name} on {self.device.name}>"

    @property
    def kernels(self) -> List[Kernel]:
        """The dispatches one execution runs (the variant chosen for this device)."""
        return list(self._kernels)

    # ---- binding ------------------------------------------------------------------------------

    def _needs_init(self, slot: int) -> bool:
        d = self.input_descs[slot]
        return d is not None and bool(d.flags & TensorFlags.OWNED_BY_DML)

    def initialize(self, inputs: Sequence) -> None:
        """IDMLOperatorInitializer: bind the OWNED_BY_DML inputs (others None); they are
        snapshotted on the device and must not be bound at execution."""
        if len(inputs) != len(self.input_descs):
            raise ValueError(f"{self.operator_name}: initialize takes {len(self.input_descs)} inputs, got {len(inputs)}")
        owned = {}
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
            owned[slot] = snap
        self._owned = owned
        self._contexts = []

    def _check_size(self, slot: int, nbytes: int) -> None:
        need = self._descs[slot].total_bytes
        if nbytes < need:
            raise ValueError(f"{self.operator_name}: binding {slot} holds {nbytes} bytes; its tensor "
                             f"needs TotalTensorSizeInBytes = {need}")

    def _checked_bindings(self, inputs: Sequence, outputs: Sequence, buffers_only: bool = False) -> list:
        """The bindings after DirectML's binding checks: Buffers, host arrays as flat uint8 views
        of their bytes, OWNED_BY_DML inputs as their snapshots, None where nothing is bound."""
        for name, v in (("inputs", inputs), ("outputs", outputs)):
            if isinstance(v, (str, bytes, np.ndarray, Buffer)) or not hasattr(v, "__iter__"):
                raise TypeError(f"{self.operator_name}: {name} must be a list of bindings (numpy arrays, "
                                f"dmlvk.Buffers or None), got {type(v).__name__}")
        inputs, outputs = list(inputs), list(outputs)
        if len(inputs) != len(self.input_descs) or len(outputs) != len(self.output_descs):
            raise ValueError(f"{self.operator_name} takes {len(self.input_descs)} inputs and "
                             f"{len(self.output_descs)} outputs, got {len(inputs)} and {len(outputs)}")
        bindings = inputs + outputs
        n_in = len(inputs)
        checked = []
        for slot, (d, b) in enumerate(zip(self._descs, bindings)):
            kind = "input" if slot < n_in else "output"
            if d is None or (slot < n_in and self._needs_init(slot)):
                if b is not None:
                    why = "its tensor is null" if d is None else "it is OWNED_BY_DML (bound at initialization)"
                    raise ValueError(f"{self.operator_name}: {kind} {slot} must be None: {why}")
                if d is not None and slot not in self._owned:
                    raise ValueError(f"{self.operator_name}: call initialize() first: input {slot} is OWNED_BY_DML")
                checked.append(self._owned.get(slot))
                continue
            if b is None:
                raise ValueError(f"{self.operator_name}: {kind} {slot} is required")
            if isinstance(b, Buffer):
                if b.device is not self.device:
                    raise ValueError(f"{self.operator_name}: {kind} {slot} lives on another device")
                self._check_size(slot, b.nbytes)
                checked.append(b)
            elif buffers_only:
                raise TypeError(f"{self.operator_name}: {kind} {slot} must be a dmlvk.Buffer (command lists "
                                f"record device memory), got {type(b).__name__}")
            else:
                raw = host_bytes(b, f"{kind} {slot}", writable=slot >= n_in)
                self._check_size(slot, raw.size)
                checked.append(raw)
        for o in range(n_in, len(bindings)):   # spec 1.4: these operators never run in place
            for i in range(n_in):
                a, b = checked[o], checked[i]
                if a is None or b is None or isinstance(a, Buffer) != isinstance(b, Buffer):
                    continue
                if (a is b) if isinstance(a, Buffer) else np.shares_memory(a, b):
                    if self._in_place and self._alike(o, i) and (a is b or _same_start(a, b)):
                        continue
                    raise ValueError(f"{self.operator_name}: output {o - n_in} overlaps input {i}; "
                                     f"this operator does not run in place")
        return checked

    def _alike(self, o: int, i: int) -> bool:
        """Whether bindings o and i are laid out alike (the same Sizes, strides, element size and
        TotalTensorSizeInBytes: the same byte range, as DirectML asks of an alias): the only in-place
        binding an in-place operator takes."""
        a, b = self._descs[o], self._descs[i]
        return (tuple(a.sizes) == tuple(b.sizes) and tuple(a.effective_strides) == tuple(b.effective_strides)
                and a.element_bytes == b.element_bytes and a.total_bytes == b.total_bytes)

    # ---- host-side parameters -----------------------------------------------------------------

    def _parameters(self, values: dict) -> Optional[np.ndarray]:
        """The parameter block the kernels read after the operator's own bindings, computed from
        the values of the _param_slots bindings ({slot: Buffer, host bytes or None}); None if the
        operator has none."""
        return None

    def _refresh_parameters(self, state: _Context, bindings: list) -> Optional[Buffer]:
        """The state's parameter Buffer with host bytes for these bindings (recomputed only when
        a source changed: a Buffer's version, a host array's bytes)."""
        if self._constant_params is not None:
            if state.params is None:
                data = np.ascontiguousarray(self._constant_params).view(np.uint8)
                state.params = self.device.staging_buffer(data.size)
                state.params.host[:data.size] = data
            return state.params
        if not self._param_slots:
            return None
        srcs = {s: bindings[s] for s in self._param_slots}
        key = tuple((b, b.version) if isinstance(b, Buffer) else (None if b is None else b.tobytes())
                    for b in srcs.values())
        if state.params is None or key != state.params_key:
            data = self._parameters(srcs).view(np.uint8)
            if state.params is None:
                state.params = self.device.staging_buffer(data.size)
            state.params.host[:data.size] = data
            state.params_key = key
        return state.params

    # ---- execution ----------------------------------------------------------------------------

    def _dispatches(self, slots: list) -> list:
        return [(k, tuple(slots[s] for s in k.slots)) for k in self._kernels]

    def execute(self, inputs: Sequence, outputs: Sequence) -> None:
        """Run the operator. Each binding is a numpy array (its bytes are read, or written, per the
        TensorDesc) or a dmlvk.Buffer on this device; optional tensors that are absent are None."""
        self.execute_bindings(self._checked_bindings(inputs, outputs))

    def execute_bindings(self, bindings: list) -> Optional[np.ndarray]:
        """Run over bindings in _checked_bindings' form (the numpy-level functions build them so
        and skip the checks). An output bound to FETCH (a dense one) is not copied into a caller's
        array: a copy of its bytes (TotalTensorSizeInBytes) is returned instead."""
        try:
            state = self._contexts.pop()
        except IndexError:
            state = _Context()
        try:
            return self._run(state, bindings)
        finally:
            self._contexts.append(state)

    def fetch(self, raw: np.ndarray) -> np.ndarray:
        """The numpy-level calls' path for an operator of one input and one dense output: raw (host
        bytes, at least the input's TotalTensorSizeInBytes) in, a copy of the output's bytes out;
        after the first call of a staging context, only the copies and the submission."""
        try:
            state = self._contexts.pop()
        except IndexError:
            state = _Context()
        try:
            if state.fetch is None:
                return self._run(state, [raw, FETCH])
            stage, n, out, span, prog = state.fetch
            stage.host[:n] = raw[:n]
            prog.run()
            return out.host[:span].copy()
        finally:
            self._contexts.append(state)

    def _stage(self, state: _Context, bindings: list):
        """(Buffers per slot, uploads, downloads) with host arrays copied into the state's staging."""
        slots, uploads, downloads = [], [], []
        staging = state.staging
        for slot, (b, (used, nbytes, is_input, span)) in enumerate(zip(bindings, self._slot_plan)):
            if not used or b is None or type(b) is Buffer:
                slots.append(b if used else None)
                continue
            stage = staging.get(slot)
            if stage is None:
                stage = staging[slot] = self.device.staging_buffer(nbytes)
            copy = not stage.host_visible       # else the shaders use the staging memory itself
            if is_input:
                stage.host[:nbytes] = b[:nbytes]
                uploads += [stage] * copy
            else:
                if span is None:                 # gaps: uploaded first, so they come back unchanged
                    stage.host[:nbytes] = b[:nbytes]
                    uploads += [stage] * copy
                    span = nbytes
                downloads.append((stage, b, span))
            slots.append(stage)
        if self._param_slots or self._constant_params is not None:
            params = self._refresh_parameters(state, bindings)
            slots.append(params)
            if params is not None:
                uploads += [params] * (not params.host_visible)
        else:
            slots.append(None)
        if self._scratch_bytes:
            slots += self._scratch(state)
        return slots, uploads, downloads

    def _scratch(self, state: _Context) -> list:
        if state.scratch is None:
            state.scratch = [Buffer(self.device, max(n, 4)) for n in self._scratch_bytes]
        return state.scratch

    def _run(self, state: _Context, bindings: list) -> Optional[np.ndarray]:
        slots, uploads, downloads = self._stage(state, bindings)
        key = tuple(map(id, slots))
        prog = state.programs.get(key)
        if prog is not None:
            state.programs.move_to_end(key)
        else:
            downs = [t for t, _, _ in downloads if not t.host_visible]
            if len(state.programs) < _PROGRAMS_PER_CONTEXT:
                prog = Program(self.device, self._dispatches(slots), uploads, downs)
            else:
                prog = state.programs.popitem(last=False)[1]
                prog.rebind(self._dispatches(slots), uploads, downs)
                state.fetch = None            # it may have been fetch()'s program
            state.programs[key] = prog
        prog.run()
        fetched = None
        for stage, raw, span in downloads:
            if raw is FETCH:
                fetched = stage.host[:span].copy()
                if len(bindings) == 2 and not self._param_slots and self._constant_params is None:
                    state.fetch = (slots[0], self._slot_plan[0][1], stage, span, prog)
            else:
                raw[:span] = stage.host[:span]
        for b in bindings[len(self.input_descs):]:
            if type(b) is Buffer:
                b.version += 1
        return fetched

    def bind(self, inputs: Sequence, outputs: Sequence) -> BoundCall:
        """This operator over dmlvk.Buffers, for a command list (CommandList.record)."""
        bindings = self._checked_bindings(inputs, outputs, buffers_only=True)
        state = _Context()
        params = self._refresh_parameters(state, bindings)
        slots = list(bindings) + [params] + self._scratch(state)
        return BoundCall(
            dispatches=self._dispatches(slots),
            outputs=[b for b in bindings[len(self.input_descs):] if b is not None],
            uploads=[params] if params is not None and not params.host_visible else [],
            host_reads=[bindings[s] for s in self._param_slots if isinstance(bindings[s], Buffer)],
            prepare=lambda: self._refresh_parameters(state, bindings))

    def staged_dispatches(self, inputs: Sequence, outputs: Sequence) -> list:
        """(Kernel, Buffers) of each dispatch one execution over these bindings runs, after one
        execution that stages host arrays into Buffers (and computes the result): what time() and
        the probes time, kernel by kernel. Bindings as for execute()."""
        bindings = self._checked_bindings(inputs, outputs)
        state = _Context()
        self._run(state, bindings)
        slots, _, _ = self._stage(state, bindings)
        return self._dispatches(slots)

    def time(self, inputs: Sequence, outputs: Sequence, repeats: int = 10, barriers: bool = False) -> List[float]:
        """GPU seconds of each of `repeats` back-to-back executions (timestamps around the
        dispatches; host transfers are not included). Bindings as for execute(); the outputs
        hold the result afterwards if they are dmlvk.Buffers. barriers: record the barriers
        between dependent dispatches (and executions) that a real sequence of executions has,
        and count their waits; without them consecutive executions may overlap on the GPU."""
        if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
            raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
        return time_dispatches(self.device, self.staged_dispatches(inputs, outputs), repeats, barriers=barriers)


def array_layout(x: np.ndarray, name: str) -> TensorDesc:
    """The TensorDesc for an ndarray: its own strides where they are DirectML strides
    (non-negative, element multiples, not mostly gaps), else packed (array_bytes then copies)."""
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
        return TensorDesc(dt, x.shape)
    return TensorDesc(dt, x.shape, tuple(s // item for s in x.strides))


def array_bytes(x: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """The host bytes of x laid out as desc (made by array_layout for x's shape, dtype and
    strides), at least TotalTensorSizeInBytes long."""
    item = x.itemsize
    strides = desc.effective_strides
    if tuple(s * item for s in strides) != x.strides:
        x = np.ascontiguousarray(x)           # array_layout chose packed strides
    if x.flags.c_contiguous:
        raw = x.reshape(-1).view(np.uint8)
    else:
        span = (sum((n - 1) * s for n, s in zip(desc.sizes, strides)) + 1) * item
        raw = np.lib.stride_tricks.as_strided(x, shape=(span // item,), strides=(item,)).view(np.uint8)
    if raw.size < desc.total_bytes:       # the total size is rounded up to whole words
        padded = np.zeros(desc.total_bytes, np.uint8)
        padded[:raw.size] = raw
        raw = padded
    return raw


def array_binding(x: np.ndarray, name: str):
    """(TensorDesc, host bytes) for an ndarray (array_layout, array_bytes)."""
    desc = array_layout(x, name)
    return desc, array_bytes(x, desc)


def check_out(out, shape: tuple, dtype, kind=np.ndarray) -> None:
    """The out= argument of a numpy-level function: None, or an array of the result's shape and
    dtype (a numpy array for host inputs, a dmlvk.DeviceArray for device ones)."""
    if out is None:
        return
    if not isinstance(out, kind):
        want = "a numpy array" if kind is np.ndarray else "a dmlvk.DeviceArray (the input is one)"
        raise TypeError(f"out must be {want}, got {type(out).__name__}")
    if out.shape != tuple(shape) or out.dtype != np.dtype(dtype):
        raise ValueError(f"out has shape {out.shape} and dtype {out.dtype}; the result has shape "
                         f"{tuple(shape)} and dtype {np.dtype(dtype)}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("out is read-only")


def into_out(out, result):
    """The result of a numpy-level function, written into out= when one was given."""
    if out is None:
        return result
    out[...] = result
    return out


def device_for(x, device, name: str):
    """(x is a DeviceArray, the device to run on): a DeviceArray's own device (device= may only
    repeat it), else device= or the default."""
    if isinstance(x, DeviceArray):
        if device is not None and device is not x.device:
            raise ValueError(f"{name} is a DeviceArray on another device than device=")
        return True, x.device
    return False, resolve_device(device)


def cached_operator(device: Device, desc) -> CompiledOperator:
    """The compiled operator for a description, created once per device (the numpy-level API)."""
    return device.operator(desc)
