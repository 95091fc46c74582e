"""The validation matrix of the portability report: one violating (or boundary) description per
rule of spec section 5, with what DirectML does at each feature level."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, List

from dmlvk.enums import DataType, DepthSpaceOrder, FeatureLevel, TensorFlags
from dmlvk.errors import ValidationError
from dmlvk.ops.depth_space import DepthToSpace1Desc, DepthToSpaceDesc, SpaceToDepth1Desc
from dmlvk.ops.quantized_conv import QuantizedLinearConvolutionDesc
from dmlvk.tensor import TensorDesc

LEVELS = [FeatureLevel.FL_1_0, FeatureLevel.FL_2_0, FeatureLevel.FL_2_1, FeatureLevel.FL_3_0,
          FeatureLevel.FL_4_0, FeatureLevel.FL_5_0, FeatureLevel.FL_5_2, FeatureLevel.FL_6_4]

F32, F16, U8, I8, I32 = DataType.FLOAT32, DataType.FLOAT16, DataType.UINT8, DataType.INT8, DataType.INT32
DCR = DepthSpaceOrder.DEPTH_COLUMN_ROW
_IN, _OUT = TensorDesc(F32, (1, 8, 2, 3)), TensorDesc(F32, (1, 2, 4, 6))
_S = lambda dt, rank=4: TensorDesc(dt, (1,) * rank)
_QC = QuantizedLinearConvolutionDesc(
    TensorDesc(U8, (1, 4, 5, 6)), _S(F32), _S(U8), TensorDesc(I8, (4, 2, 2, 2)), TensorDesc(F32, (1, 4, 1, 1)),
    TensorDesc(I8, (1, 4, 1, 1)), TensorDesc(I32, (1, 4, 1, 1)), _S(F32), _S(I8), TensorDesc(I8, (1, 4, 3, 3)),
    strides=(2, 2), dilations=(1, 2), start_padding=(1, 0), end_padding=(0, 1), group_count=2)


def _d2s1(inp=_IN, out=_OUT, b=2, order=DCR):
    return DepthToSpace1Desc(inp, out, b, order)


def _qc(**kw):
    return dataclasses.replace(_QC, **kw)


@dataclass(frozen=True)
class Rule:
    rule: str                 # spec section
    what: str                 # the description's defect (or "valid ...")
    desc: Callable[[], object]
    accepted_from: object     # lowest FeatureLevel at which DirectML accepts it; None: never
    basis: str                # "documented" or "dmlvk's choice (spec 9)"

    def expected_accept(self, level: FeatureLevel) -> bool:
        return self.accepted_from is not None and level >= self.accepted_from


DOC, CHOICE = "documented", "dmlvk's choice (spec 9)"
# What the release DirectML.dll 1.15.4 answered at FL 6_4 where it differs from, or settles, the
# documentation; DIVERGES: dmlvk keeps another answer on purpose (README, "Semantics choices").
MEASURED, DIVERGES = "measured on DirectML", "dmlvk's choice against DirectML"
FL = FeatureLevel

RULES: List[Rule] = [
    Rule("3.1", "valid DEPTH_TO_SPACE, FLOAT32", lambda: DepthToSpaceDesc(_IN, _OUT, 2), FL.FL_1_0, DOC),
    Rule("5.2.8", "valid DEPTH_TO_SPACE1 (needs FL 2_1)", lambda: _d2s1(), FL.FL_2_1, DOC),
    Rule("5.3.1", "valid QUANTIZED_LINEAR_CONVOLUTION (needs FL 2_1)", lambda: _QC, FL.FL_2_1, DOC),
    Rule("5.1.1", "required Input is null", lambda: _d2s1(inp=None), None, DOC),
    Rule("5.1.2", "DataType UNKNOWN", lambda: _d2s1(inp=TensorDesc(DataType.UNKNOWN, (1, 8, 2, 3))), None, DOC),
    Rule("5.1.4", "a size of 0", lambda: _d2s1(inp=TensorDesc(F32, (1, 8, 0, 3))), None, DOC),
    Rule("5.1.5", "more than 2^32-1 elements",
         lambda: SpaceToDepth1Desc(TensorDesc(F32, (1, 4, 65536, 65536), (0, 0, 0, 0), total_tensor_size_in_bytes=4),
                                   TensorDesc(F32, (1, 16, 32768, 32768)), 2, DCR), None, DOC),
    Rule("5.1.6", "TotalTensorSizeInBytes below DMLCalcBufferTensorSize",
         lambda: _d2s1(inp=TensorDesc(F32, (1, 8, 2, 3), total_tensor_size_in_bytes=188)), None, DOC),
    Rule("5.1.6", "TotalTensorSizeInBytes past the minimum, not a multiple of 4 (Device(debug=True) rejects it)",
         lambda: _d2s1(inp=TensorDesc(F32, (1, 8, 2, 3), total_tensor_size_in_bytes=194)), FL.FL_2_1, MEASURED),
    Rule("5.1.6", "elements past TotalTensorSizeInBytes (the size formula's 32-bit sum wrapped)",
         lambda: _d2s1(out=TensorDesc(F32, (1, 2, 4, 6), (1, 2**32 - 1, 6, 1))), None, CHOICE),
    Rule("5.1.7", "GuaranteedBaseOffsetAlignment 3",
         lambda: _d2s1(inp=TensorDesc(F32, (1, 8, 2, 3), guaranteed_base_offset_alignment=3)), None, DOC),
    Rule("5.1.8", "OWNED_BY_DML on an output",
         lambda: _d2s1(out=TensorDesc(F32, (1, 2, 4, 6), flags=TensorFlags.OWNED_BY_DML)), None, DOC),
    Rule("5.1.9", "output with a zero stride on a dimension larger than 1",
         lambda: _d2s1(out=TensorDesc(F32, (1, 2, 4, 6), (0, 0, 6, 1))), None, MEASURED),
    Rule("5.1.9", "output with overlapping non-zero strides (documented as invalid, accepted by the release DLL)",
         lambda: _d2s1(out=TensorDesc(F32, (1, 2, 4, 6), (48, 24, 6, 2))), FL.FL_2_1, MEASURED),
    Rule("5.1.9", "output whose strides reach fewer positions than it has elements",
         lambda: _d2s1(out=TensorDesc(F32, (1, 2, 4, 6), (24, 12, 3, 1))), None, MEASURED),
    Rule("5.1.9", "input with zero strides (broadcast) is fine",
         lambda: _d2s1(inp=TensorDesc(F32, (1, 8, 2, 3), (0, 0, 0, 1))), FL.FL_2_1, CHOICE),
    Rule("5.2.1", "input of DimensionCount 3", lambda: _d2s1(inp=TensorDesc(F32, (8, 2, 3))), None, DOC),
    Rule("5.2.2", "Input FLOAT32, Output FLOAT16", lambda: _d2s1(out=TensorDesc(F16, (1, 2, 4, 6))), None, DOC),
    Rule("5.2.3", "INT8 in DEPTH_TO_SPACE (FL 2_1)",
         lambda: DepthToSpaceDesc(TensorDesc(I8, (1, 8, 2, 3)), TensorDesc(I8, (1, 2, 4, 6)), 2), FL.FL_2_1, DOC),
    Rule("5.2.3", "INT64 in DEPTH_TO_SPACE1 (FL 5_0)",
         lambda: _d2s1(TensorDesc(DataType.INT64, (1, 8, 2, 3)), TensorDesc(DataType.INT64, (1, 2, 4, 6))),
         FL.FL_5_0, DOC),
    Rule("5.2.4", "BlockSize 0", lambda: _d2s1(b=0), None, CHOICE),
    Rule("5.2.4", "BlockSize 2^31 + 1 (DirectML squares it in 32 bits, gets 1, accepts and writes garbage)",
         lambda: _d2s1(inp=TensorDesc(F32, (1, 8, 2, 2)), out=TensorDesc(F32, (1, 8, 2, 2)), b=2**31 + 1),
         None, DIVERGES),
    Rule("5.2.5", "Order 2", lambda: _d2s1(order=2), None, CHOICE),
    Rule("5.2.6", "channels not divisible by BlockSize^2",
         lambda: _d2s1(inp=TensorDesc(F32, (1, 6, 2, 3)), out=TensorDesc(F32, (1, 1, 4, 6))), None, CHOICE),
    Rule("5.2.6", "wrong output sizes", lambda: _d2s1(out=TensorDesc(F32, (1, 2, 6, 4))), None, CHOICE),
    Rule("5.2.7", "SPACE_TO_DEPTH1 height not divisible by BlockSize",
         lambda: SpaceToDepth1Desc(TensorDesc(F32, (1, 2, 3, 6)), TensorDesc(F32, (1, 8, 1, 3)), 2, DCR), None, CHOICE),
    Rule("5.3.2", "required FilterScale is null", lambda: _qc(filter_scale_tensor=None), None, DOC),
    Rule("5.3.2", "optional zero points and bias null",
         lambda: _qc(input_zero_point_tensor=None, filter_zero_point_tensor=None, bias_tensor=None,
                     output_zero_point_tensor=None), FL.FL_2_1, DOC),
    Rule("5.3.3", "INT16 input", lambda: _qc(input_tensor=TensorDesc(DataType.INT16, (1, 4, 5, 6))), None, DOC),
    Rule("5.3.3", "INT8 bias", lambda: _qc(bias_tensor=TensorDesc(I8, (1, 4, 1, 1))), None, DOC),
    Rule("5.3.3", "InputZeroPoint type unlike Input", lambda: _qc(input_zero_point_tensor=_S(I8)), None, DOC),
    Rule("5.3.4", "rank-3 Input, Filter, Bias, Output (FL 4_0)",
         lambda: _qc(input_tensor=TensorDesc(U8, (1, 4, 6)), filter_tensor=TensorDesc(I8, (4, 2, 3)),
                     bias_tensor=TensorDesc(I32, (1, 4, 1)), output_tensor=TensorDesc(I8, (1, 4, 4)),
                     strides=(1,), dilations=(1,), start_padding=(0,), end_padding=(0,)), FL.FL_4_0, DOC),
    Rule("5.3.4", "rank-1 InputScale and InputZeroPoint (FL 4_0)",
         lambda: _qc(input_scale_tensor=_S(F32, 1), input_zero_point_tensor=_S(U8, 1)), FL.FL_4_0, DOC),
    Rule("5.3.4", "rank-1 InputScale with a rank-4 InputZeroPoint", lambda: _qc(input_scale_tensor=_S(F32, 1)),
         None, MEASURED),
    Rule("5.3.4", "rank-1 per-channel FilterScale {M}",
         lambda: _qc(filter_scale_tensor=TensorDesc(F32, (4,)), filter_zero_point_tensor=TensorDesc(I8, (4,))),
         None, MEASURED),
    Rule("5.3.8", "per-channel FilterScale with a per-tensor FilterZeroPoint",
         lambda: _qc(filter_zero_point_tensor=_S(I8)), None, MEASURED),
    Rule("5.3.4", "rank-3 Bias with rank-4 tensors", lambda: _qc(bias_tensor=TensorDesc(I32, (1, 4, 1))),
         FL.FL_4_0, MEASURED),
    Rule("5.3.4", "Output rank unlike Input's (DirectML accepts it; what it computes was not established)",
         lambda: _qc(output_tensor=TensorDesc(I8, (1, 4, 9))), None, DIVERGES),
    Rule("5.3.5", "DimensionCount 3 with rank-4 tensors (the first two entries are used)",
         lambda: _qc(strides=(2, 2, 1), dilations=(1, 2, 1), start_padding=(1, 0, 0), end_padding=(0, 1, 0)),
         FL.FL_2_1, MEASURED),
    Rule("5.3.5", "DimensionCount 1 with rank-4 tensors (DirectML accepts it and reads past the arrays)",
         lambda: _qc(strides=(2,), dilations=(1,), start_padding=(0,), end_padding=(0,)), None, DIVERGES),
    Rule("5.3.6", "stride 0", lambda: _qc(strides=(0, 2)), FL.FL_2_1, MEASURED),
    Rule("5.3.6", "dilation 0", lambda: _qc(dilations=(1, 0)), FL.FL_2_1, MEASURED),
    Rule("5.3.6", "start padding 2^32 (past the UINT member's range)", lambda: _qc(start_padding=(2**32, 0)), None, DOC),
    Rule("5.3.7", "GroupCount 3 with 4 input channels", lambda: _qc(group_count=3), None, DOC),
    Rule("5.3.7", "Filter channels not Input channels / GroupCount",
         lambda: _qc(filter_tensor=TensorDesc(I8, (4, 4, 2, 2))), None, DOC),
    Rule("5.3.8", "InputScale with 4 elements", lambda: _qc(input_scale_tensor=TensorDesc(F32, (1, 4, 1, 1))),
         None, DOC),
    Rule("5.3.8", "FilterScale with 3 of 4 channels", lambda: _qc(filter_scale_tensor=TensorDesc(F32, (1, 3, 1, 1))),
         None, DOC),
    Rule("5.3.8", "Bias with one element", lambda: _qc(bias_tensor=TensorDesc(I32, (1, 1, 1, 1))), None, DOC),
    Rule("5.3.9", "output grid other than the formula's (computed over the grid given)",
         lambda: _qc(output_tensor=TensorDesc(I8, (1, 4, 3, 4))), FL.FL_2_1, MEASURED),
    Rule("5.3.9", "output channels other than Filter's", lambda: _qc(output_tensor=TensorDesc(I8, (1, 2, 3, 3))),
         None, MEASURED),
    Rule("5.3.9", "kernel wider than the padded input",
         lambda: _qc(input_tensor=TensorDesc(U8, (1, 4, 5, 1)), output_tensor=TensorDesc(I8, (1, 4, 3, 1))),
         FL.FL_2_1, MEASURED),
]


def evaluate(rule: Rule) -> dict:
    """dmlvk's outcome at every level of LEVELS against DirectML's."""
    cells = []
    for level in LEVELS:
        try:
            rule.desc().validate(level)
            accepted, message = True, ""
        except ValidationError as e:
            accepted, message = False, str(e)
        cells.append({"level": level.dml_name, "accepted": accepted, "expected_accepted": rule.expected_accept(level),
                      "agrees": accepted == rule.expected_accept(level), "message": message})
    return {"rule": rule.rule, "what": rule.what, "basis": rule.basis, "cells": cells,
            "agrees": all(c["agrees"] for c in cells)}
