"""Recorded submissions (Program) and DirectML's command recorder (CommandList).

A Program is recorded once and run many times: uploads, then dispatches with a pipeline barrier
wherever a dispatch touches a buffer an earlier one wrote (or writes one an earlier one read), then
downloads; one submission, one fence wait."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, List, Sequence, Tuple

import numpy as np

from .device import Buffer, Device
from . import kompute as kp
from .kernel import Kernel

# Vulkan access and pipeline-stage flag values.
_SHADER_READ, _SHADER_WRITE, _TRANSFER_WRITE, _HOST_READ = 0x20, 0x40, 0x1000, 0x2000
_STAGE_COMPUTE, _STAGE_TRANSFER, _STAGE_HOST = 0x800, 0x1000, 0x4000


def _barrier(src_access: int, src_stage: int):
    """Make earlier writes (src_access at src_stage) visible to compute-shader reads and writes
    (one global memory barrier)."""
    return kp.OpPipelineBarrier(src_access, _SHADER_READ | _SHADER_WRITE, src_stage, _STAGE_COMPUTE)


class Program:
    """One recorded submission over dmlvk Buffers.

    dispatches: (Kernel, Buffers bound to the kernel's bindings) in order; each kernel writes its
    last binding. barriers=False records none (timing back-to-back runs of one operator).
    rebind() points the same kernels at other Buffers: the pipelines stay, the descriptor sets
    are rewritten and the command buffer is recorded again. Programs recorded with timestamps
    (which cannot be rebound) make one pipeline and descriptor set per distinct (kernel, Buffers)
    pair and record it as often as it repeats, as an operator executed again reuses its own."""

    def __init__(self, device: Device, dispatches: Sequence[Tuple[Kernel, tuple]],
                 uploads: Sequence[Buffer] = (), downloads: Sequence[Buffer] = (),
                 barriers: bool = True, timestamps: bool = False):
        self.device = device
        self._barriers = barriers
        self._timestamps = timestamps
        made, shared = [], {}
        for k, bufs in dispatches:
            key = (k, tuple(id(b) for b in bufs))
            if not timestamps or key not in shared:
                shared[key] = device.algorithms(k, [b.tensor for b in bufs])
            made.append(shared[key])
        self._algorithms = [[algo for algo, _ in m] for m in made]
        self._pushes = [[push for _, push in m] for m in made]
        ops = self._ops(dispatches, uploads, downloads)
        with device.lock:
            self._seq = device.manager.sequence(total_timestamps=len(ops) if timestamps else 0)
        device.note_made()
        self._record(ops)
        self._bound = (dispatches, uploads, downloads)

    def _ops(self, dispatches, uploads, downloads) -> list:
        """kp operations: uploads, a barrier, the dispatches with barriers between dependent ones,
        downloads."""
        ops = []
        if uploads:
            ops.append(kp.OpTensorSyncDevice([b.tensor for b in uploads]))
        if self._barriers and dispatches:
            # Writes of earlier submissions or of the uploads above, before this program's shaders
            # read or overwrite them.
            ops.append(_barrier(_TRANSFER_WRITE | _SHADER_WRITE, _STAGE_TRANSFER | _STAGE_COMPUTE))
        written, read = set(), set()        # ids of the Buffers since the last barrier
        for (_, bufs), algos, pushes in zip(dispatches, self._algorithms, self._pushes):
            out, ins = id(bufs[-1]), {id(b) for b in bufs[:-1]}
            if self._barriers and (ins & written or out in written or out in read):
                ops.append(_barrier(_SHADER_WRITE, _STAGE_COMPUTE))
                written, read = set(), set()
            ops += [kp.OpAlgoDispatch(a, p) for a, p in zip(algos, pushes)]
            written.add(out)
            read |= ins
        if downloads:
            ops.append(kp.OpTensorSyncLocal([b.tensor for b in downloads]))
        if any(b.host_visible for _, bufs in dispatches for b in bufs):
            # Shader writes to host-visible buffers, for the host to read after the fence.
            ops.append(kp.OpPipelineBarrier(_SHADER_WRITE, _HOST_READ, _STAGE_COMPUTE, _STAGE_HOST))
        return ops

    def _record(self, ops: list) -> None:
        with self.device.lock:
            self._seq.clear()
            for op in ops:
                self._seq.record(op)
        self._timed = np.array([isinstance(op, kp.OpAlgoDispatch) for op in ops], bool)
        self.barriers = sum(isinstance(op, kp.OpPipelineBarrier) for op in ops)

    def rebind(self, dispatches: Sequence[Tuple[Kernel, tuple]], uploads: Sequence[Buffer] = (),
               downloads: Sequence[Buffer] = ()) -> None:
        """The same kernels over other Buffers (and other staging transfers). Not for programs
        recorded with timestamps (their query pool is sized for the first recording, and their
        repeated dispatches share pipelines)."""
        if self._timestamps:
            raise RuntimeError("a Program recorded with timestamps cannot be rebound")
        with self.device.lock:
            for (_, bufs), algos in zip(dispatches, self._algorithms):
                for algo in algos:
                    algo.set_tensors([b.tensor for b in bufs])
        self._record(self._ops(dispatches, uploads, downloads))
        self._bound = (dispatches, uploads, downloads)   # bound Buffers live as long as the program

    def run(self) -> None:
        self.device.submit(self._seq)

    def start(self) -> None:
        """Submit without waiting: wait() before reading the results or running it again."""
        self.device.submit_async(self._seq)

    def wait(self) -> None:
        self.device.wait_for(self._seq)

    @property
    def sequence(self):
        """The recorded kp.Sequence (what a bare kp-level eval runs: the benchmark's floor)."""
        return self._seq

    def op_seconds(self, with_barriers: bool = False) -> List[float]:
        """GPU seconds of each dispatch of the last run (a program recorded with timestamps);
        with_barriers: each dispatch's time includes the wait at the barriers recorded before it."""
        ticks = np.array(self._seq.get_timestamps(), dtype=np.float64)
        per_op = np.diff(ticks) * self.device.info.timestamp_period * 1e-9
        timed = self._timed[:len(per_op)]
        if not with_barriers:
            return list(per_op[timed])
        out, pending = [], 0.0
        for seconds, is_dispatch in zip(per_op, timed):
            pending += seconds
            if is_dispatch:
                out.append(pending)
                pending = 0.0
        return out


def time_each(device: Device, dispatches, repeats: int, barriers: bool = False) -> np.ndarray:
    """GPU seconds of each dispatch in each of `repeats` back-to-back runs of the dispatches, a list
    of (Kernel, Buffers bound to the kernel's bindings), as a repeats x dispatches array: with no
    barriers between runs, or with the barriers a real sequence of executions has (barriers=True;
    each dispatch's time includes the wait at the barriers before it)."""
    prog = Program(device, list(dispatches) * repeats, barriers=barriers, timestamps=True)
    prog.run()
    per_op = prog.op_seconds(with_barriers=barriers)     # a kernel may be recorded as several dispatches
    ends = np.cumsum([len(algos) for algos in prog._algorithms])
    per_dispatch = [sum(per_op[end - len(algos):end]) for end, algos in zip(ends, prog._algorithms)]
    return np.array(per_dispatch, dtype=np.float64).reshape(repeats, len(dispatches))


def time(device: Device, dispatches, repeats: int, barriers: bool = False) -> List[float]:
    """GPU seconds of each of `repeats` back-to-back runs of the dispatches (time_each's rows summed)."""
    return [float(v) for v in time_each(device, dispatches, repeats, barriers).sum(axis=1)]


@dataclass
class BoundCall:
    """One operator execution over Buffers, as a command list records it."""
    dispatches: List[Tuple[Kernel, tuple]]
    outputs: List[Buffer]
    uploads: List[Buffer] = field(default_factory=list)     # host-side parameters, sent every run
    host_reads: List[Buffer] = field(default_factory=list)  # bindings prepare() reads on the host
    prepare: Callable[[], None] = lambda: None               # refreshes the uploads' host bytes


class CommandList:
    """IDMLCommandRecorder over one device: record(op, inputs, outputs) with dmlvk.Buffers (None for
    absent optional tensors), then execute() runs everything recorded in one submission, in
    order, with barriers between dependent dispatches. Execute again after the Buffers' contents
    change. Recording checks the bindings as CompiledOperator.execute does."""

    def __init__(self, device: Device, barriers: bool = True):
        """barriers=False records no barriers at all (timing back-to-back runs, and the tests that
        show the barriers are needed); results are then undefined where dispatches depend."""
        self.device = device
        self._calls: List[BoundCall] = []
        self._uploads: List[Buffer] = []
        self._downloads: List[Buffer] = []
        self._program = None
        self._in_flight = False
        self._lock = threading.RLock()
        self._barriers = bool(barriers)

    def __len__(self):
        return len(self._calls)

    def __repr__(self):
        return f"<dmlvk.CommandList of {len(self._calls)} operators on {self.device.name}>"

    def record(self, op, inputs: Sequence, outputs: Sequence) -> "CommandList":
        if getattr(op, "device", None) is not self.device:
            raise ValueError("the operator was compiled for another device" if hasattr(op, "bind")
                             else f"not a compiled operator: {type(op).__name__}")
        call = op.bind(inputs, outputs)
        with self._lock:
            # Scale, zero-point and bias values are read on the host before the submission, so no
            # operator in the same list may write them.
            written = {id(b) for c in self._calls + [call] for b in c.outputs}
            read = {id(b) for c in self._calls + [call] for b in c.host_reads}
            if written & read:
                raise ValueError(f"{getattr(op, 'operator_name', 'operator')}: a scale, zero-point or bias "
                                 f"tensor is written by an operator of the same command list; its values "
                                 f"are read on the host before the list runs")
            if self._in_flight:
                raise RuntimeError("this command list is running: wait() before recording more")
            self._calls.append(call)
            self._program = None
        return self

    def transfer(self, uploads: Sequence[Buffer] = (), downloads: Sequence[Buffer] = ()) -> "CommandList":
        """Staging transfers in the same submission: the uploads' host staging (Buffer.host) is sent
        to the device before the recorded operators run, the downloads' device memory read back
        into it after them (for callers that fill and read the staging themselves)."""
        with self._lock:
            if self._in_flight:
                raise RuntimeError("this command list is running: wait() before adding transfers")
            self._uploads += list(uploads)
            self._downloads += list(downloads)
            self._program = None
        return self

    @property
    def dispatches(self) -> list:
        """(Kernel, Buffers) of every recorded operator, in order."""
        return [d for c in self._calls for d in c.dispatches]

    @property
    def program(self) -> "Program":
        """The recorded submission (made at the first execute)."""
        return self._program

    def execute(self) -> None:
        """Run everything recorded, in one submission, and wait for it."""
        with self._lock:
            self.start()
            self.wait()

    def start(self) -> None:
        """execute() without waiting for the GPU: the submission is in flight until wait(), which must
        come before the outputs are read, the inputs rewritten or the list started again. Other
        submissions (another command list's, say) may run meanwhile."""
        with self._lock:
            if not self._calls:
                return
            for c in self._calls:
                c.prepare()
            if self._program is None:
                self._program = Program(self.device, self.dispatches,
                                        uploads=self._uploads + [b for c in self._calls for b in c.uploads],
                                        downloads=self._downloads, barriers=self._barriers)
            if self._in_flight:
                raise RuntimeError("this command list is already running: wait() for it first")
            self._program.start()
            self._in_flight = True

    def wait(self) -> None:
        """Wait for the submission start() made; the outputs are then written."""
        with self._lock:
            if not self._in_flight:
                return
            self._in_flight = False
            self._program.wait()
            for c in self._calls:
                for b in c.outputs:
                    b.version += 1

    @property
    def barriers(self) -> int:
        """Pipeline barriers in the recorded submission (after the first execute)."""
        return self._program.barriers if self._program is not None else 0
