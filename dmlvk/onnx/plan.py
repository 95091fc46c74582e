"""Plans: a graph prepared for one set of input shapes (passes.prepare: shapes, layouts, fusions),
lowered, and cut into stretches of host work, views and device work; each device stretch recorded
once as a CommandList (its uploads, its operators with barriers between dependent ones, the
downloads of what the host needs) and run as one submission.
Its intermediate tensors stay on the device, in Buffers the plan owns: a tensor nothing reads any more
gives its Buffer to a later one of its size in the same stretch, so a deep network holds a few
activations, not one Buffer per layer."""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from ..arrays import DeviceArray
from ..runtime.commands import CommandList
from ..runtime.device import Buffer, Device
from .graph import Graph
from .hostcopy import POOL
from . import passes
from .lower import TensorRef, lower

RECYCLED = 4                 # output arrays a stream's plan keeps to reuse, per output


@dataclass
class OnDevice:
    """A tensor on the device: a Buffer, read as a packed array of shape and dtype. staged: its
    bytes are in the Buffer's host staging too (downloaded by the submission that made it)."""
    buffer: Buffer
    shape: tuple
    dtype: np.dtype
    staged: bool = True


@dataclass
class Stretch:
    """Device work: (node, Lowered) in order, device operators and views of their outputs; once
    recorded, its CommandList, its uploads [(name, Buffer)] and what it produced {name: OnDevice}."""
    calls: list
    commands: Optional[CommandList] = None
    uploads: Optional[list] = None
    produced: Optional[dict] = None


def plan_key(feeds: dict, outputs: Optional[dict] = None) -> tuple:
    """A plan cache's key: the inputs' names, shapes and dtypes, and the device arrays bound."""
    bound = lambda v: id(v.buffer) if isinstance(v, DeviceArray) else None
    return (tuple((k, tuple(v.shape), np.dtype(v.dtype).str, bound(v)) for k, v in sorted(feeds.items())),
            tuple((k, bound(v)) for k, v in sorted((outputs or {}).items())))


def check_given(name: str, shape: tuple, dtype, given: DeviceArray) -> None:
    """An output DeviceArray the caller gave must have the output's shape and dtype."""
    if tuple(shape) != given.shape or np.dtype(dtype) != given.dtype:
        raise ValueError(f"output {name!r} is {np.dtype(dtype)} {tuple(shape)}; the DeviceArray given is "
                         f"{given.dtype} {given.shape}")


class Plan:
    """The graph's nodes for one set of input shapes: steps ("host", (node, Lowered)), ("view", (node,
    Lowered)) and ("device", Stretch). device_outputs: graph output name -> the caller's DeviceArray."""

    def __init__(self, graph: Graph, device: Device, feeds: dict, device_outputs: Optional[dict] = None,
                 host_quantization: bool = False):
        self.device = device
        self.device_outputs = dict(device_outputs or {})
        self.graph, ctx = passes.prepare(graph, device, {k: (v.shape, v.dtype) for k, v in feeds.items()},
                                         host_quantization)
        self.steps: list = []
        on_device = set()         # names produced by device work
        for n in self.graph.nodes:
            low = lower(n, ctx)
            stretch = self.steps[-1][1] if self.steps and self.steps[-1][0] == "device" else None
            if low.kind == "device" or (low.kind == "view" and stretch is not None and n.inputs[0] in on_device):
                if stretch is None:
                    stretch = Stretch([])
                    self.steps.append(("device", stretch))
                stretch.calls.append((n, low))          # a view inside device work re-views its Buffer
                on_device.add(n.outputs[0])
            else:
                self.steps.append((low.kind, (n, low)))
        self._in_flight = None
        self._returned: Dict[str, list] = {}      # finish()'s output arrays, to reuse once let go

    @property
    def output_names(self) -> List[str]:
        return [o.name for o in self.graph.outputs]

    def run(self, feeds: dict) -> dict:
        """The graph's outputs for these inputs (numpy arrays or DeviceArrays), by name."""
        values: dict = {k: OnDevice(v.buffer, v.shape, v.dtype, staged=False) if isinstance(v, DeviceArray) else v
                        for k, v in feeds.items()}
        values.update(self.graph.consts)
        for i, (kind, what) in enumerate(self.steps):
            if kind == "host":
                n, low = what
                values[n.outputs[0]] = low.compute(self._host(values, n.inputs[0]))
            elif kind == "view":
                n, low = what
                v = values[n.inputs[0]]
                values[n.outputs[0]] = (dataclasses.replace(v, shape=low.shape) if isinstance(v, OnDevice)
                                        else v.reshape(low.shape))
            else:
                self._run_device(i, what, values)
        out = {}
        for k in self.output_names:
            da = self.device_outputs.get(k)
            if da is None:
                out[k] = self._host(values, k)
                continue
            v = values[k]
            if not (isinstance(v, OnDevice) and v.buffer is da.buffer):      # made elsewhere: put it there
                v = self._host(values, k)
                check_given(k, v.shape, v.dtype, da)
                da.buffer.write(np.ascontiguousarray(v))
            out[k] = da
        return out

    def started(self, feeds: dict) -> bool:
        """Starts a frame without waiting for the device, where the plan is one device stretch from
        host inputs to host outputs that has run once (recorded): its inputs copied into staging,
        its submission made; finish() completes it. False where it cannot (run() the frame)."""
        if (len(self.steps) != 1 or self.steps[0][0] != "device" or self.device_outputs
                or self.steps[0][1].commands is None or any(isinstance(v, DeviceArray) for v in feeds.values())):
            return False
        stretch = self.steps[0][1]
        values = dict(feeds)
        values.update(self.graph.consts)
        _upload(stretch.uploads, values)
        stretch.commands.start()
        self._in_flight = values
        return True

    def finish(self) -> dict:
        """The outputs of the frame started(), once the device has finished it."""
        values, self._in_flight = self._in_flight, None
        stretch = self.steps[0][1]
        stretch.commands.wait()
        values.update(stretch.produced)
        return {name: self._host(values, name, recycle=True) for name in self.output_names}

    def device_work(self) -> tuple:
        """(Program, dispatches) of the first device stretch, recorded by the plan's first run:
        what the model benchmark and its per-dispatch probe time."""
        stretch = next(step[1] for step in self.steps if step[0] == "device")
        return stretch.commands.program, stretch.commands.dispatches

    def _host(self, values: dict, name: str, recycle: bool = False) -> np.ndarray:
        """The value as a numpy array (copied out of staging); recycle: into an array this plan
        returned before that nobody else holds any more (no page faults of fresh memory)."""
        v = values[name]
        if isinstance(v, OnDevice):
            nbytes = int(np.prod(v.shape)) * v.dtype.itemsize
            if not v.staged:                      # Buffer.read copies it out of staging itself
                v = values[name] = v.buffer.read()[:nbytes].view(v.dtype).reshape(v.shape)
                return v
            staged = v.buffer.host[:nbytes].view(v.dtype).reshape(v.shape)
            v = self._free_array(name, staged) if recycle else None
            if v is None:
                v = np.empty_like(staged)
                if recycle:
                    self._returned.setdefault(name, []).append(v)
            values[name] = v
            POOL.copy(v, staged)
        return v

    def _free_array(self, name: str, like: np.ndarray) -> Optional[np.ndarray]:
        """An array returned for output `name` earlier, of like's shape and dtype, that only this
        plan still refers to (no views of it either: a view holds its base), or None. At most
        RECYCLED arrays an output are kept for this."""
        kept = self._returned.setdefault(name, [])
        for a in kept:
            # the list's reference, the loop variable's and getrefcount's argument: nobody else's
            if sys.getrefcount(a) <= 3 and a.shape == like.shape and a.dtype == like.dtype:
                return a
        if len(kept) >= RECYCLED:
            kept.pop(0)
        return None

    def _run_device(self, index: int, stretch: Stretch, values: dict) -> None:
        """One device stretch: its inputs uploaded, its operators run, what later host steps and
        the graph's outputs need downloaded, in one submission."""
        if stretch.commands is None:
            self._record(index, stretch, values)
        _upload(stretch.uploads, values)
        stretch.commands.execute()
        values.update(stretch.produced)

    def _record(self, index: int, stretch: Stretch, values: dict) -> None:
        dev = self.device
        bufs: Dict[str, OnDevice] = {}
        uploads = []
        commands = CommandList(dev)
        # The caller's output arrays by the name of the operator output whose bytes they are: a graph
        # output's own, or where it is a view (a folded node's, a reshape's) that of the view's source.
        given_for = {}
        for n, low in reversed(stretch.calls):
            name = n.outputs[0]
            target = ((name, low.shape, low.dtype, self.device_outputs[name]) if name in self.device_outputs
                      else given_for.get(name))
            if target is not None:
                given_for[name] = target
                if low.kind == "view":
                    given_for.setdefault(n.inputs[0], target)

        def on_device(name: str) -> OnDevice:
            """The tensor on the device: made by this stretch or an earlier one, else uploaded."""
            src = bufs[name] if name in bufs else values[name]
            if isinstance(src, OnDevice):
                return src
            a = np.asarray(src)
            x = bufs[name] = OnDevice(Buffer(dev, max(-(-a.nbytes // 4) * 4, 4)), a.shape, a.dtype)
            uploads.append((name, x.buffer))
            return x

        later = self._needed_after(index)
        last_read, pinned = _lifetimes(stretch.calls, later)
        free: Dict[int, list] = {}            # Buffers of this stretch's tensors no longer read, by size
        owned = {}                            # tensor (its root name) -> (Buffer, size) made for it here
        for j, (n, low) in enumerate(stretch.calls):
            if low.kind == "view":        # a re-view: the same Buffer
                src = bufs[n.inputs[0]] if n.inputs[0] in bufs else values[n.inputs[0]]
                bufs[n.outputs[0]] = OnDevice(src.buffer, low.shape, src.dtype)
                continue
            x = on_device(n.inputs[0])
            bindings = [on_device(b.name).buffer if isinstance(b, TensorRef) else b for b in low.bindings]
            target = given_for.get(n.outputs[0])
            given = None if target is None else target[3]
            if given is not None:
                check_given(*target[:3], given)
                if given.buffer.nbytes < low.op.output_descs[0].total_bytes:
                    given = None              # a view of fewer bytes: written there after the run
            out_bytes = low.op.output_descs[0].total_bytes
            if given is None:
                spare = free.get(out_bytes)
                buf = spare.pop() if spare else Buffer(dev, out_bytes)
                owned[n.outputs[0]] = (buf, out_bytes)
            y = bufs[n.outputs[0]] = OnDevice(buf if given is None else given.buffer, low.shape, low.dtype)
            commands.record(low.op, [x.buffer] + bindings, [y.buffer])
            # a tensor whose last reader this was gives its Buffer to a later output of its size (the
            # CommandList's barrier keeps the reads before the new writes); so does one nobody reads
            for name in [t for t in owned if last_read.get(t, j) <= j and t not in pinned]:
                buf, size = owned.pop(name)
                free.setdefault(size, []).append(buf)
        produced = {n.outputs[0]: bufs[n.outputs[0]] for n, _ in stretch.calls}
        downloads = list({id(d.buffer): d.buffer for name, d in produced.items() if name in later}.values())
        for name, d in produced.items():           # left on the device: not in staging
            if d.buffer not in downloads:
                produced[name] = dataclasses.replace(d, staged=False)
        commands.transfer(uploads=[b for _, b in uploads], downloads=downloads)
        stretch.commands, stretch.uploads, stretch.produced = commands, uploads, produced

    def _needed_after(self, index: int) -> set:
        """Names read by host steps after step `index`, and the graph's outputs not bound to the
        caller's device arrays, following views."""
        need = {name for name in self.output_names if name not in self.device_outputs}
        alias = {}
        for kind, what in self.steps[index + 1:]:
            if kind == "view":
                alias[what[0].outputs[0]] = what[0].inputs[0]
            elif kind == "host":
                need.add(what[0].inputs[0])
            else:
                need |= {name for n, low in what.calls if low.kind != "view" for name in low.reads(n)}
        out = set()
        for name in need:
            while name in alias:
                out.add(name)
                name = alias[name]
            out.add(name)
        return out


def _lifetimes(calls: list, later: set) -> tuple:
    """For a stretch's calls: ({tensor: index of the last call that reads it}, the tensors whose
    Buffers must outlive the stretch), a view's reads and needs counted as its source's."""
    root: Dict[str, str] = {}
    for n, low in calls:
        if low.kind == "view":
            root[n.outputs[0]] = root.get(n.inputs[0], n.inputs[0])
    last = {}
    for j, (n, low) in enumerate(calls):
        if low.kind != "view":
            for name in low.reads(n):
                last[root.get(name, name)] = j
    return last, {root.get(name, name) for name in later}


def _upload(uploads: list, values: dict) -> None:
    """Each (name, Buffer) of a stretch's host inputs: the value's bytes into the Buffer's staging."""
    for name, buf in uploads:
        raw = np.ascontiguousarray(values[name]).reshape(-1).view(np.uint8)
        POOL.copy(buf.host[:raw.size], raw)
