"""The real DirectML as an oracle: dmlvk descriptions (and buffers) in, DirectML's answers out.

DirectML.dll 1.15.4 (release, no debug layer) runs under Wine, whose d3d12 is vkd3d 1.6, on Mesa
25.0.7's lavapipe, under Xvfb; ci/directml.sh installs and builds what it needs into
$DMLVK_DIRECTML_HOME (default ~/.cache/dmlvk-directml). dml_oracle.exe runs one batch of cases per
Wine process; a batch that crashes is resumed after the case that crashed (recorded as a crash).

    oracle = DirectML.find()          # None, with DirectML.missing() saying why, when not set up
    results = oracle.run([Case(desc), Case(desc, buffers=[x, out_initial])])

DirectML.find(driver=SYSTEM_LAVAPIPE) runs it on the system's lavapipe instead (Debian 12: Mesa
22.3, where DirectML validates but cannot execute, and reports no 16-bit types).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

import dmlvk
from dmlvk.tensor import TensorDesc

LABEL = ("release DirectML 1.15.4 (onnxruntime-directml 1.24.4), its DXBC shaders through vkd3d 1.6 "
         "(Wine 8.0) on Mesa 25.0.7 lavapipe, no debug layer")
SYSTEM_LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
E_INVALIDARG = -2147024809          # 0x80070057, DirectML's answer to an invalid description
EXEC_FAILED, DEVICE_LOST = 6, 7     # dml_oracle.exe's exit statuses (see dml_oracle.c)


def home() -> Path:
    return Path(os.environ.get("DMLVK_DIRECTML_HOME") or Path.home() / ".cache" / "dmlvk-directml")


@dataclass
class Case:
    """A description, and for execution the bytes of every tensor present, in DirectML's binding
    order: the inputs, then the output buffer's initial bytes (its gaps must come back unchanged)."""
    desc: object
    buffers: Optional[Sequence[Optional[np.ndarray]]] = None


@dataclass
class Result:
    create_hr: Optional[int]            # None: the oracle crashed on this case
    exec_hr: int = 0
    output: Optional[np.ndarray] = None

    @property
    def accepted(self) -> bool:
        return self.create_hr is not None and self.create_hr >= 0

    @property
    def crashed(self) -> bool:
        return self.create_hr is None


@dataclass
class DeviceInfo:
    create_hr: int
    max_feature_level: int
    supported_types: frozenset = field(default_factory=frozenset)


# ---- encoding -------------------------------------------------------------------------------------

def _u32(*values) -> bytes:
    return struct.pack(f"<{len(values)}I", *[v & 0xFFFFFFFF for v in values])


def _tensor(t: Optional[TensorDesc]) -> bytes:
    if t is None:
        return _u32(0)
    out = _u32(1, int(t.data_type), int(t.flags), len(t.sizes), *t.sizes)
    out += _u32(0) if t.strides is None else _u32(1, *t.strides)
    return out + struct.pack("<Q", t.total_bytes) + _u32(t.guaranteed_base_offset_alignment)


def operator_tensors(desc) -> List[Optional[TensorDesc]]:
    """The description's tensors in DirectML's binding order, the output last."""
    if isinstance(desc, (dmlvk.QuantizedLinearConvolutionDesc, dmlvk.ElementWiseQuantizedLinearAddDesc)):
        return list(desc.tensors())
    if isinstance(desc, dmlvk.JoinDesc):
        return list(desc.input_tensors) + [desc.output_tensor]
    if isinstance(desc, dmlvk.ActivationParameterizedReluDesc):
        return [desc.input_tensor, desc.slope_tensor, desc.output_tensor]
    if isinstance(desc, dmlvk.ElementWiseAddDesc):             # MULTIPLY too
        return [desc.a_tensor, desc.b_tensor, desc.output_tensor]
    return [desc.input_tensor, desc.output_tensor]


RESAMPLES = (dmlvk.ResampleDesc, dmlvk.Resample1Desc, dmlvk.Resample2Desc, dmlvk.Resample3Desc)


def expressible(desc) -> Optional[str]:
    """None if DirectML's C structure can carry the description, else why not."""
    for t in operator_tensors(desc):
        if t is not None and not isinstance(t, TensorDesc):
            return "a tensor is not a TensorDesc"
        if t is not None and (len(t.sizes) > 16 or t.total_bytes >= 2**64):
            return "a tensor's rank or size does not fit the case file"
    if isinstance(desc, dmlvk.ElementWiseQuantizedLinearAddDesc):
        return None if desc.arithmetic == "directml" else "onnxruntime's arithmetic is no DirectML description"
    if isinstance(desc, dmlvk.JoinDesc):
        if not 1 <= len(desc.input_tensors) <= 9 or any(t is None for t in desc.input_tensors):
            return "JOIN's case file holds 1 to 9 inputs, none null"
        return None if isinstance(desc.axis, (int, np.integer)) and 0 <= desc.axis <= 0xFFFFFFFF else "Axis is no UINT"
    if isinstance(desc, (dmlvk.ActivationLeakyReluDesc, dmlvk.ActivationParameterizedReluDesc)):
        return None
    if isinstance(desc, dmlvk.ElementWiseClipDesc):
        ok = all(isinstance(v, (int, float, np.integer, np.floating)) for v in (desc.min, desc.max)) and (
            desc.scale_bias is None or len(desc.scale_bias) == 2)
        return None if ok else "Min, Max or the ScaleBias are not FLOATs"
    if isinstance(desc, dmlvk.ElementWiseAddDesc):
        return None
    if isinstance(desc, RESAMPLES):
        arrays = [desc.scales] + ([desc.input_pixel_offsets, desc.output_pixel_offsets] if desc.version else [])
        if any(a is None or len(a) > 16 or len(a) != len(arrays[0]) for a in arrays):
            return "Scales and offsets are not one DimensionCount of FLOATs (16 at most)"
        members = [desc.interpolation_mode, getattr(desc, "rounding_direction", 0), getattr(desc, "antialiased", 0)]
        ok = all(not isinstance(v, bool) and isinstance(v, (int, np.integer)) and 0 <= v <= 0xFFFFFFFF
                 for v in members[:2]) and isinstance(members[2], (bool, int, np.integer))
        return None if ok else "InterpolationMode or RoundingDirection is not a UINT"
    if isinstance(desc, dmlvk.TileDesc):
        ok = len(desc.repeats) <= 16 and all(isinstance(r, (int, np.integer)) and 0 <= r <= 0xFFFFFFFF
                                             for r in desc.repeats)
        return None if ok else "Repeats are not UINTs (16 at most)"
    if isinstance(desc, dmlvk.QuantizedLinearConvolutionDesc):
        lengths = {len(desc.strides), len(desc.dilations), len(desc.start_padding), len(desc.end_padding)}
        if any(not 0 <= v <= 0xFFFFFFFF for a in (desc.strides, desc.dilations, desc.start_padding,
                                                   desc.end_padding) for v in a):
            return "an entry of Strides, Dilations or the paddings is not a UINT"
        if len(lengths) != 1:
            return "Strides, Dilations and paddings have different lengths (one DimensionCount in DirectML)"
        if len(desc.strides) > 16:
            return "DimensionCount above 16"
        g = desc.group_count
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 0 <= g <= 0xFFFFFFFF:
            return "GroupCount is not a UINT"
    else:
        b = desc.block_size
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 0 <= b <= 0xFFFFFFFF:
            return "BlockSize is not a UINT"
        order = getattr(desc, "order", 0)
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or not -2**31 <= order < 2**31:
            return "Order is not an INT"
    return None


def encode(case: Case) -> bytes:
    desc = case.desc
    why = expressible(desc)
    if why:
        raise ValueError(f"not a DirectML description: {why}")
    tensors = operator_tensors(desc)
    out = _u32(int(desc.operator_type), int(case.buffers is not None))
    if isinstance(desc, dmlvk.ElementWiseQuantizedLinearAddDesc):
        out += b"".join(_tensor(t) for t in tensors)
    elif isinstance(desc, dmlvk.JoinDesc):
        out += _u32(len(desc.input_tensors)) + b"".join(_tensor(t) for t in tensors) + _u32(desc.axis)
    elif isinstance(desc, dmlvk.TileDesc):
        out += _tensor(desc.input_tensor) + _tensor(desc.output_tensor) + _u32(len(desc.repeats), *desc.repeats)
    elif isinstance(desc, dmlvk.ActivationLeakyReluDesc):
        out += _tensor(desc.input_tensor) + _tensor(desc.output_tensor) + struct.pack("<f", desc.alpha)
    elif isinstance(desc, dmlvk.ActivationParameterizedReluDesc):
        out += b"".join(_tensor(t) for t in tensors)
    elif isinstance(desc, dmlvk.ElementWiseClipDesc):
        scale, bias = desc.scale_bias or (1.0, 0.0)
        out += _tensor(desc.input_tensor) + _tensor(desc.output_tensor)
        out += _u32(int(desc.scale_bias is not None)) + struct.pack("<4f", scale, bias, desc.min, desc.max)
    elif isinstance(desc, dmlvk.ElementWiseAddDesc):
        out += b"".join(_tensor(t) for t in tensors)
    elif isinstance(desc, RESAMPLES):
        n = len(desc.scales)
        ipo = desc.input_pixel_offsets if desc.version else (0.0,) * n
        opo = desc.output_pixel_offsets if desc.version else (0.0,) * n
        out += _tensor(desc.input_tensor) + _tensor(desc.output_tensor)
        out += _u32(int(desc.interpolation_mode), int(getattr(desc, "rounding_direction", 0)),
                    int(bool(getattr(desc, "antialiased", False))), n)
        out += struct.pack(f"<{3 * n}f", *desc.scales, *ipo, *opo)
    elif isinstance(desc, dmlvk.QuantizedLinearConvolutionDesc):
        out += b"".join(_tensor(t) for t in tensors)
        out += _u32(len(desc.strides), *desc.strides, *desc.dilations, *desc.start_padding, *desc.end_padding,
                    desc.group_count)
    else:
        out += _tensor(desc.input_tensor) + _tensor(desc.output_tensor)
        out += _u32(desc.block_size, int(getattr(desc, "order", 0)))
    if case.buffers is not None:
        if len(case.buffers) != len(tensors):
            raise ValueError(f"{len(tensors)} buffers expected, got {len(case.buffers)}")
        for t, b in zip(tensors, case.buffers):
            if t is None:
                continue
            raw = np.ascontiguousarray(b).view(np.uint8).reshape(-1)
            if raw.size < t.total_bytes:
                raise ValueError(f"a buffer holds {raw.size} bytes; its tensor needs {t.total_bytes}")
            out += struct.pack("<Q", raw.size) + raw.tobytes()
    return out


# ---- running --------------------------------------------------------------------------------------

def missing() -> Optional[str]:
    """Why the oracle cannot run here (None if it can)."""
    h = home()
    for f in ("DirectML.dll", "dml_oracle.exe", "mesa/lvp_icd.json", "prefix/system.reg"):
        if not (h / f).exists():
            return f"{h / f} is missing: run `bash ci/directml.sh` (Wine, mingw-w64, Xvfb, Mesa 25 lavapipe, DirectML.dll)"
    for tool in ("wine", "xvfb-run"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: run `bash ci/directml.sh`"
    return None


class DirectML:
    """driver: a Vulkan ICD file for vkd3d to run on; None takes the private Mesa 25 lavapipe."""

    def __init__(self, path: Path, driver: Optional[str] = None):
        self.home = path
        self.driver = driver
        self.device: Optional[DeviceInfo] = None

    @classmethod
    def find(cls, driver: Optional[str] = None) -> Optional["DirectML"]:
        return None if missing() or (driver and not Path(driver).exists()) else cls(home(), driver)

    def vulkan_env(self) -> dict:
        """The variables that point a process (Wine's vkd3d, or dmlvk) at this oracle's driver."""
        if self.driver:
            return dict(VK_ICD_FILENAMES=self.driver, VK_DRIVER_FILES=self.driver)
        icd = str(self.home / "mesa" / "lvp_icd.json")
        lib = str(self.home / "mesa" / "root" / "usr" / "lib" / "x86_64-linux-gnu")
        old = os.environ.get("LD_LIBRARY_PATH")
        return dict(VK_ICD_FILENAMES=icd, VK_DRIVER_FILES=icd, LD_LIBRARY_PATH=lib + (":" + old if old else ""))

    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VK_", "WINE"))}
        env.update(WINEPREFIX=str(self.home / "prefix"), WINEARCH="win64", WINEDEBUG="-all",
                   WINEDLLOVERRIDES="mscoree,mshtml,winedbg.exe=", **self.vulkan_env())
        return env

    def _batch(self, blobs: List[bytes], stall: float) -> tuple:
        """One Wine process over these cases; it is killed when its results stop growing for
        `stall` seconds (a hang), and what it wrote until then is returned. One batch at a time in the
        prefix, across processes (a lock file in it): each batch ends by ending the prefix's
        wineserver, which would end another process's batch with it."""
        with open(self.home / "prefix.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._batch_alone(blobs, stall)

    def _batch_alone(self, blobs: List[bytes], stall: float) -> tuple:
        with tempfile.TemporaryDirectory(prefix="dmlvk-oracle-") as tmp:
            cases, results, log = Path(tmp) / "cases.bin", Path(tmp) / "results.bin", Path(tmp) / "log.txt"
            cases.write_bytes(b"DMLC" + _u32(1, len(blobs)) + b"".join(blobs))
            win = lambda p: "Z:" + str(p).replace("/", "\\")
            with open(log, "wb") as logf:
                proc = subprocess.Popen(["xvfb-run", "-a", "wine", str(self.home / "dml_oracle.exe"), win(cases),
                                         win(results)], cwd=self.home, env=self._env(), stdin=subprocess.DEVNULL,
                                        stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
                size, since = -1, time.monotonic()
                while proc.poll() is None:
                    time.sleep(0.2)
                    now = results.stat().st_size if results.exists() else 0
                    if now != size:
                        size, since = now, time.monotonic()
                    elif time.monotonic() - since > stall:
                        break
                self._stop(proc)
            data = results.read_bytes() if results.exists() else b""
            output = log.read_bytes().decode(errors="replace")
        if data[:4] != b"DMLR" or len(data) < 20:
            raise RuntimeError(f"the DirectML oracle did not start (exit {proc.returncode}): {output[-2000:]}")
        hr, level, types = struct.unpack_from("<iII", data, 8)
        info = DeviceInfo(hr, level, frozenset(dt for dt in dmlvk.DataType if types >> int(dt) & 1))
        if hr < 0:
            raise RuntimeError(f"DMLCreateDevice1 failed: 0x{hr & 0xFFFFFFFF:08x}")
        out, pos = [], 20
        while pos + 16 <= len(data) and len(out) < len(blobs):
            create_hr, exec_hr, n = struct.unpack_from("<iiQ", data, pos)
            if pos + 16 + n > len(data):
                break
            raw = np.frombuffer(data, np.uint8, n, pos + 16).copy() if exec_hr >= 0 and n else None
            out.append(Result(create_hr, exec_hr, raw))
            pos += 16 + n
        return info, out, proc.returncode

    def _stop(self, proc) -> None:
        """End the batch's process group and the prefix's wineserver (a crashed or hung Wine leaves
        processes behind)."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        # -k asks the server to end and returns; -w waits until it has: a next batch's Wine that found
        # the old server still ending exited 1 without a word (seen under load, two test processes)
        for flag in ("-k", "-w"):
            try:
                subprocess.run(["wineserver", flag], env=self._env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False, timeout=60)
            except subprocess.TimeoutExpired:      # a server that will not end: the next batch says so
                break

    def device_info(self, stall: float = 120.0) -> DeviceInfo:
        """DMLCreateDevice1's result and CheckFeatureSupport's answers (a batch of no cases)."""
        self.device = self._batch([], stall)[0]
        return self.device

    def run(self, cases: Sequence[Case], stall: float = 120.0) -> List[Result]:
        """DirectML's answer for every case, in order (a case on which the oracle crashed or hung
        gets a Result whose create_hr is None; the batch goes on after it)."""
        blobs = [encode(c) for c in cases]
        results: List[Result] = []
        while len(results) < len(blobs):
            info, got, status = self._batch(blobs[len(results):], stall)
            self.device = info
            results += got
            if status == EXEC_FAILED or (status == DEVICE_LOST and got):
                continue          # a new process goes on with the next case (or this one again)
            if len(results) < len(blobs):
                results.append(Result(None))
        return results
