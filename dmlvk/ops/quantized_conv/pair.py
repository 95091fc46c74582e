"""Two QUANTIZED_LINEAR_CONVOLUTIONs, the second reading the first's output (and nothing else reading
it), compiled as one operator whose kernel never stores that output (conv.coopmat.halo.pair): the
ONNX runner's QLinearConv -> QLinearConv where a first layer of one input channel feeds a 3x3 layer.
DirectML's graph compiler fuses operators likewise, behind its graph API.

Bindings: the first convolution's nine inputs (DirectML's order), then the second's eight past its
input (its scales, zero points, filter and bias), then the second's output. The kernel reads both
convolutions' numbers from one parameter block: the second's as its own operator computes them,
then the first's (requantization, its filter's rows shifted to int8 and the corrections that the
shifts need, its input's geometry), which qlinear_conv_coopmat.comp's PAIR section lays out."""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ...enums import DataType, TensorFlags
from ...runtime.device import Device
from ...runtime.kernel import VariantChoice
from ..base import CompiledOperator
from .layout import FILTER, FILTER_CONSTANTS, INPUT, OP, OUTPUT, PARAMS, WP, XP, as_4d
from .operator import QuantizedLinearConvolutionOperator
from .variants import TABLE, pair_plan

FIRST = OUTPUT                      # the first convolution's inputs: slots 0-8
SECOND = FIRST - 1                  # the second's input slot s (1-8) is the pair's slot SECOND + s
PAIR_OUTPUT = FIRST + OUTPUT - 1    # 17


def _wrapped(v: np.ndarray) -> np.ndarray:
    """int64 values as int32 wraps them."""
    return ((v.astype(np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


class ConvolutionPairOperator(CompiledOperator):
    """The pair (see the module). Its two convolutions' own operators compute their parameters and pack
    the second's filter at initialization; this one runs the fused kernel over the bindings above."""

    def __init__(self, device: Device, first, second, kernels: list, scratch: tuple):
        self.first = QuantizedLinearConvolutionOperator(device, first, planned=([], (), first.output_tensor))
        self.second = QuantizedLinearConvolutionOperator(device, second, planned=(kernels, scratch, second.output_tensor))
        descs = list(first.tensors()[:OUTPUT]) + list(second.tensors()[INPUT + 1:OUTPUT])
        self._slot_of = {INPUT: INPUT, OUTPUT: PAIR_OUTPUT, PARAMS: PAIR_OUTPUT + 1,
                         XP: PAIR_OUTPUT + 2, WP: PAIR_OUTPUT + 3}
        # scratch: the packed input's placeholder; the packed filter is the second's own (_scratch)
        super().__init__(device, (first, second), descs, [second.output_tensor], self._fused(),
                         self.second._scratch_bytes[:1], name=f"{OP} pair")
        self._param_slots = tuple(range(1, FIRST)) + tuple(SECOND + s for s in self.second._param_slots)
        m1, _, kh1, kw1 = first.conv_params()["filter"]
        self.m1, self.taps = m1, kh1 * kw1

    @classmethod
    def of(cls, device: Device, first, second, choice: Optional[VariantChoice] = None) -> Optional["ConvolutionPairOperator"]:
        """The pair under the choice, or None where pair_plan cannot run it or a filter or the zero
        points its packing reads are not OWNED_BY_DML (bound once, at initialization)."""
        owned = lambda t: t is None or bool(t.flags & TensorFlags.OWNED_BY_DML)
        if not all(owned(d.tensors()[s]) for d in (first, second) for s in FILTER_CONSTANTS):
            return None
        planned = pair_plan(first, second, TABLE.chosen_by(device.capabilities, choice))
        return None if planned is None else cls(device, first, second, *planned)

    def _fused(self) -> list:
        """The second operator's kernels (the fused one, the filter packing having moved to
        initialization) with their slots renumbered as this operator's."""
        return [dataclasses.replace(k, slots=tuple(self._slot_of[s] for s in k.slots)) for k in self.second.kernels]

    def initialize(self, inputs: Sequence) -> None:
        super().initialize(inputs)
        self.first.initialize(list(inputs[:FIRST]))
        self.second.initialize([None] + list(inputs[FIRST:]))
        self._kernels = self._fused()        # the second's window sums compiled out where its zero points allow

    def _scratch(self, state) -> list:
        return super()._scratch(state) + [self.second._packed_filter]

    def _parameters(self, srcs: dict) -> np.ndarray:
        """The second's parameter block, then the first's numbers (qlinear_conv_coopmat.comp, PAIR):
        xZP, yZP, its window-sum flag, input height and width, strides of an image, row and column,
        top and left padding; per channel its multiplier, its bias plus the correction of its input's
        and filter's int8 shifts (sx = 128 for an unsigned input, s = 128 for an unsigned filter, else
        0: sum (x - xZP)(w - wZP) = sum x'w' + cw sum x' + dx sum w' + K dx cw, with x' = x - sx,
        w' = w - s, cw = s - wZP, dx = sx - xZP), and cw; then its filter rows, 32 int8 taps each."""
        second = self.second._parameters({s: srcs[SECOND + s] for s in self.second._param_slots})
        first = self.first._parameters({s: srcs[s] for s in self.first._param_slots})
        m, k = self.m1, self.taps
        d = self.first.input_descs
        sx = 0 if d[INPUT].data_type == DataType.INT8 else 128
        s = 0 if d[FILTER].data_type == DataType.INT8 else 128
        xzp, yzp = int(first[0]), int(first[1])
        mult, wzp, bias = first[2:2 + m], first[2 + m:2 + 2 * m].astype(np.int64), first[2 + 2 * m:2 + 3 * m]
        shifted = self.first._values(srcs, FILTER, 0).astype(np.int64).reshape(m, k) - s
        cw, dx = s - wzp, sx - xzp
        corrected = _wrapped(bias.astype(np.int64) + dx * shifted.sum(axis=1) + k * dx * cw)
        rows = np.zeros((m, 32), np.int8)
        rows[:, :k] = shifted
        geo = self.first.desc.conv_params()
        _, _, h, w = geo["input"]
        sn, _, sh, sw = as_4d(d[INPUT].effective_strides, 0)
        head = np.array([xzp, yzp, int(np.any(cw != 0)), h, w, sn, sh, sw, *geo["start"]], np.int64)
        return np.concatenate([second, _wrapped(head), mult, corrected, _wrapped(cw), rows.view(np.int32).reshape(-1)])
