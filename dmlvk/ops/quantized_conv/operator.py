"""QUANTIZED_LINEAR_CONVOLUTION compiled: its plan's kernels, the requantization parameters the host
computes from the bound scales, zero points and bias, and the filter packed once where it is
OWNED_BY_DML."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ...enums import DataType, TensorFlags
from ...runtime.commands import Program
from ...runtime.device import Buffer, Device
from ...runtime.kernel import VariantChoice
from ..base import CompiledOperator, read_elements
from .layout import (BIAS, FILTER, FILTER_SCALE, FILTER_ZP, INPUT_SCALE, INPUT_ZP, OP, OUTPUT, OUTPUT_SCALE,
                     OUTPUT_ZP, FILTER_CONSTANTS, WP_SCRATCH)
from .routines import float_output, plan
from .variants import TABLE


def requantization_multipliers(input_scale, filter_scale, output_scale) -> np.ndarray:
    """ONNX Runtime's float32 arithmetic: float32(float32(x_scale * w_scale[m]) / y_scale)."""
    xs = np.float32(input_scale)
    ws = np.asarray(filter_scale, np.float32).reshape(-1)
    ys = np.float32(output_scale)
    with np.errstate(all="ignore"):       # a zero or NaN scale is undefined behaviour (spec 4.4)
        return ((xs * ws).astype(np.float32) / ys).astype(np.float32)



class QuantizedLinearConvolutionOperator(CompiledOperator):
    operator_name = OP
    _param_slots = (INPUT_SCALE, INPUT_ZP, FILTER_SCALE, FILTER_ZP, BIAS, OUTPUT_SCALE, OUTPUT_ZP)

    def __init__(self, device: Device, desc, choice: Optional[VariantChoice] = None, planned: Optional[tuple] = None):
        """planned: (kernels, scratch, output TensorDesc) where the caller planned them (dequantizing()),
        else the description's plan under the choice, with its own output."""
        if planned is None:
            kernels, scratch = plan(desc, TABLE.chosen_by(device.capabilities, choice))
            output = desc.output_tensor
        else:
            kernels, scratch, output = planned
        # The cooperative-matrix path packs the filter at initialization instead of at every
        # execution where the filter, and the zero points its packing reads, are OWNED_BY_DML
        # (bound once, at initialization: "DML may reformat it"; see constant_filter).
        owned = lambda t: t is None or bool(t.flags & TensorFlags.OWNED_BY_DML)
        t = desc.tensors()
        self._filter_packing = None
        packing = next((k for k in kernels if k.variant == "conv.coopmat.pack_filter"), None)
        if packing is not None and t[FILTER] is not None and all(owned(t[s]) for s in FILTER_CONSTANTS):
            w = WP_SCRATCH         # its scratch Buffer, made at initialize instead
            self._filter_packing, self._packed_filter_bytes = packing, scratch[w]
            kernels = [k for k in kernels if k is not packing]
            scratch = tuple(scratch[:w]) + (4,) + tuple(scratch[w + 1:])
        self._packed_filter = None
        super().__init__(device, desc, t[:OUTPUT], [output], kernels, scratch)
        self.m = desc.conv_params()["filter"][0]
        if t[FILTER_ZP] is None:
            self._known_filter_zero_points(np.zeros(1, np.int32))

    @classmethod
    def dequantizing(cls, device: Device, desc, tail: tuple,
                     choice: Optional[VariantChoice] = None) -> Optional["QuantizedLinearConvolutionOperator"]:
        """The convolution, then a DepthToSpace and a per-tensor DequantizeLinear, tail = (block (1:
        none), crd (the column-row-depth order), scale, zero point), as one kernel (conv.dot.float)
        whose output binding is the packed float32 image float32(q - zero_point) * scale; for the ONNX
        runner. None where the description's plan under the choice cannot (variants.float_output):
        nothing is compiled then."""
        kernels, scratch = plan(desc, TABLE.chosen_by(device.capabilities, choice))
        fused = float_output(desc, kernels, *tail)
        return None if fused is None else cls(device, desc, choice, (fused[0], scratch, fused[1]))

    def _known_filter_zero_points(self, wzp: np.ndarray) -> None:
        """The filter zero points, known before any execution (none bound, or OWNED_BY_DML): kernels
        that can compile the input's window sums out (WSUM) do where these need none (no zero point
        differs from the value the filter's int8 shift removes, as _parameters decides per execution)."""
        wsum = self._window_sums_needed(wzp)
        self._kernels = [TABLE[k.variant].with_constants(k, WSUM=wsum) if "WSUM" in TABLE[k.variant].spec else k
                         for k in self._kernels]

    def initialize(self, inputs: Sequence) -> None:
        super().initialize(inputs)
        if self._needs_init(FILTER_ZP):
            self._known_filter_zero_points(self._values(self._owned, FILTER_ZP, 0))
        if self._filter_packing is None:
            return
        m = self.m
        params = np.zeros(3 + 3 * m, np.int32)      # what qconv_pack_filter.comp reads: the zero points
        params[0] = self._values(self._owned, INPUT_ZP, 0)[0]
        params[2 + m:2 + 2 * m] = self._per_m(self._values(self._owned, FILTER_ZP, 0))
        if self._packed_filter is None:
            self._packed_filter = Buffer(self.device, self._packed_filter_bytes)
        unused = Buffer(self.device, 4)          # the input binding, which the filter packing does not read
        Program(self.device, [(self._filter_packing, (unused, self._owned[FILTER], self.device.upload(params),
                                                       self._packed_filter))]).run()

    def _scratch(self, state) -> list:
        bufs = super()._scratch(state)
        if self._filter_packing is None:
            return bufs
        return bufs[:WP_SCRATCH] + [self._packed_filter] + bufs[WP_SCRATCH + 1:]

    def _values(self, srcs: dict, slot: int, default) -> np.ndarray:
        d = self.input_descs[slot]
        if d is None:
            return np.array([default])
        return read_elements(d, srcs[slot], d.data_type.numpy_dtype)

    def _per_m(self, v: np.ndarray) -> np.ndarray:
        return np.broadcast_to(v, (self.m,)) if v.size == 1 else v

    def _parameters(self, srcs: dict) -> np.ndarray:
        """Requantization parameters (binding PARAMS), computed on the host from the bound scale,
        zero-point and bias tensors (spec 4.3; the multiplier as ONNX Runtime computes it, in
        float32)."""
        values = lambda slot, default: self._values(srcs, slot, default)
        m, per_m = self.m, self._per_m
        mult = requantization_multipliers(values(INPUT_SCALE, 1)[0], per_m(values(FILTER_SCALE, 1)),
                                          values(OUTPUT_SCALE, 1)[0])
        params = np.empty(3 + 3 * m, np.int32)
        params[0] = values(INPUT_ZP, 0)[0]
        params[1] = values(OUTPUT_ZP, 0)[0]
        params[2:2 + m] = mult.view(np.int32)
        params[2 + m:2 + 2 * m] = wzp = per_m(values(FILTER_ZP, 0))
        params[2 + 2 * m:2 + 3 * m] = per_m(values(BIAS, 0))
        params[2 + 3 * m] = self._window_sums_needed(wzp)
        return params

    def _window_sums_needed(self, wzp: np.ndarray) -> int:
        """1 where the cooperative-matrix path needs the input's window sums: some filter zero point
        differs from the value its int8 shift removes (qconv_pack_filter.comp: cw != 0), else 0."""
        shift = 0 if self.input_descs[FILTER].data_type == DataType.INT8 else 128
        return int(np.any(np.asarray(wzp).astype(np.int64) != shift))
