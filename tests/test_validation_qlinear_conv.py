"""One negative test per rule of spec 5.3."""
import dataclasses

import pytest

import dmlvk
from dmlvk import DataType, FeatureLevel, QuantizedLinearConvolutionDesc, TensorDesc, ValidationError

pytestmark = pytest.mark.host      # validation rules

U8, I8, F32, I32 = DataType.UINT8, DataType.INT8, DataType.FLOAT32, DataType.INT32
S = lambda dt, rank=4: TensorDesc(dt, (1,) * rank)
GOOD = QuantizedLinearConvolutionDesc(
    TensorDesc(U8, (1, 4, 5, 6)), S(F32), S(U8), TensorDesc(I8, (4, 2, 2, 2)), TensorDesc(F32, (1, 4, 1, 1)),
    TensorDesc(I8, (1, 4, 1, 1)), TensorDesc(I32, (1, 4, 1, 1)), S(F32), S(I8), TensorDesc(I8, (1, 4, 3, 3)),
    strides=(2, 2), dilations=(1, 2), start_padding=(1, 0), end_padding=(0, 1), group_count=2)
OP = "DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION"


@pytest.fixture(scope="module")
def dev():
    return {fl: dmlvk.Device(feature_level=fl) for fl in
            (FeatureLevel.FL_2_0, FeatureLevel.FL_2_1, FeatureLevel.FL_4_0, FeatureLevel.FL_5_2, FeatureLevel.FL_6_4)}


@pytest.fixture(scope="module")
def strict():
    """The debug layer's rules (Device(debug=True)): the documented checks the release DLL skips."""
    return dmlvk.Device(debug=True)


def rejects(device, desc, *words):
    with pytest.raises(ValidationError) as e:
        device.create_operator(desc)
    for w in (OP,) + words:
        assert w in str(e.value), f"{w!r} not in {str(e.value)!r}"


def with_(**kw):
    return dataclasses.replace(GOOD, **kw)


def test_good_description_is_accepted_from_2_1(dev):
    for fl in (FeatureLevel.FL_2_1, FeatureLevel.FL_4_0, FeatureLevel.FL_6_4):
        dev[fl].create_operator(GOOD)


def test_rule_1_feature_level(dev):
    rejects(dev[FeatureLevel.FL_2_0], GOOD, "requires DML_FEATURE_LEVEL_2_1")


@pytest.mark.parametrize("field,name", [("input_tensor", "Input"), ("input_scale_tensor", "InputScale"),
                                        ("filter_tensor", "Filter"), ("filter_scale_tensor", "FilterScale"),
                                        ("output_scale_tensor", "OutputScale"), ("output_tensor", "Output")])
def test_rule_2_required_tensors(dev, field, name):
    rejects(dev[FeatureLevel.FL_6_4], with_(**{field: None}), f"'{name}'", "required")


def test_rule_2_optional_tensors_may_be_null(dev):
    dev[FeatureLevel.FL_6_4].create_operator(with_(input_zero_point_tensor=None, filter_zero_point_tensor=None,
                                                   bias_tensor=None, output_zero_point_tensor=None))


def test_rule_3_types(dev):
    d = dev[FeatureLevel.FL_6_4]
    rejects(d, with_(input_tensor=TensorDesc(DataType.INT16, (1, 4, 5, 6))), "'Input'", "INT16", "not supported")
    rejects(d, with_(output_tensor=TensorDesc(I32, (1, 4, 3, 3))), "'Output'", "INT32")
    rejects(d, with_(input_scale_tensor=S(DataType.FLOAT16)), "'InputScale'", "FLOAT16")
    rejects(d, with_(bias_tensor=TensorDesc(DataType.INT8, (1, 4, 1, 1))), "'Bias'", "INT8")
    rejects(d, with_(input_zero_point_tensor=S(I8)), "Mismatched tensor data types", "'InputZeroPoint'")
    rejects(d, with_(filter_zero_point_tensor=TensorDesc(U8, (1, 4, 1, 1))), "'FilterZeroPoint'", "'Filter'")
    rejects(d, with_(output_zero_point_tensor=S(U8)), "'OutputZeroPoint'", "same DataType")


def test_rule_4_ranks_per_feature_level(dev):
    rank3 = with_(input_tensor=TensorDesc(U8, (1, 4, 6)), filter_tensor=TensorDesc(I8, (4, 2, 3)),
                  bias_tensor=TensorDesc(I32, (1, 4, 1)), output_tensor=TensorDesc(I8, (1, 4, 4)),
                  strides=(1,), dilations=(1,), start_padding=(0,), end_padding=(0,))
    rejects(dev[FeatureLevel.FL_2_1], rank3, "'Input'", "DimensionCount 3")
    dev[FeatureLevel.FL_4_0].create_operator(rank3)
    rejects(dev[FeatureLevel.FL_6_4], with_(output_tensor=TensorDesc(I8, (1, 4, 9))), "'Output'", "share one DimensionCount")
    rejects(dev[FeatureLevel.FL_6_4], with_(input_tensor=TensorDesc(U8, (1, 1, 4, 5, 6))), "'Input'", "DimensionCount 5")
    small = with_(input_scale_tensor=S(F32, 1), input_zero_point_tensor=S(U8, 1), output_scale_tensor=S(F32, 2),
                  output_zero_point_tensor=S(I8, 2))
    rejects(dev[FeatureLevel.FL_2_1], small, "'InputScale'", "DimensionCount 1")
    dev[FeatureLevel.FL_4_0].create_operator(small)
    fs1 = with_(filter_scale_tensor=S(F32, 1), filter_zero_point_tensor=S(I8, 1))    # per-tensor
    rejects(dev[FeatureLevel.FL_4_0], fs1, "'FilterScale'", "DimensionCount 1")
    dev[FeatureLevel.FL_5_2].create_operator(fs1)


def test_rule_5_dimension_count(dev, strict):
    three = with_(strides=(2, 2, 1), dilations=(1, 2, 1), start_padding=(1, 0, 0), end_padding=(0, 1, 0))
    rejects(strict, three, "DimensionCount is 3")
    # The release DirectML accepts it and uses the first two entries: so does dmlvk by default.
    dev[FeatureLevel.FL_6_4].create_operator(three)
    one = with_(strides=(1,), dilations=(1,), start_padding=(0,), end_padding=(0,))
    rejects(strict, one, "DimensionCount is 1")
    # DirectML accepts this too, then reads past the arrays: dmlvk's choice is to reject it.
    rejects(dev[FeatureLevel.FL_6_4], one, "DimensionCount is 1", "each of the 2 spatial dimensions")


def test_rule_6_strides_and_dilations(dev, strict):
    rejects(strict, with_(strides=(0, 2)), "Strides [0, 2]", "at least 1")
    rejects(strict, with_(dilations=(1, 0)), "Dilations [1, 0]", "at least 1")
    dev[FeatureLevel.FL_6_4].create_operator(with_(strides=(0, 2)))     # the release DirectML's answer
    dev[FeatureLevel.FL_6_4].create_operator(with_(dilations=(1, 0)))
    rejects(dev[FeatureLevel.FL_6_4], with_(end_padding=(0,)), "EndPadding has 1 entries")


def test_rule_7_groups(dev):
    d = dev[FeatureLevel.FL_6_4]
    rejects(d, with_(group_count=0), "GroupCount is 0")
    rejects(d, with_(group_count=3), "not divisible by GroupCount 3")
    rejects(d, with_(filter_tensor=TensorDesc(I8, (4, 4, 2, 2))), "'Filter'", "expected Input channels / GroupCount = 2")
    rejects(d, with_(group_count=4, filter_tensor=TensorDesc(I8, (4, 1, 2, 2)),
                     input_tensor=TensorDesc(U8, (1, 4, 5, 6)), filter_scale_tensor=S(F32),
                     filter_zero_point_tensor=S(I8), bias_tensor=TensorDesc(I32, (1, 4, 1, 1)),
                     output_tensor=TensorDesc(I8, (1, 6, 3, 3))), "'Output'", "expected [1, 4, 3, 3]")
    rejects(d, with_(filter_tensor=TensorDesc(I8, (3, 2, 2, 2))), "'Filter'", "3 output channels", "GroupCount 2")


def test_rule_8_per_tensor_and_per_channel_shapes(dev):
    d = dev[FeatureLevel.FL_6_4]
    rejects(d, with_(input_scale_tensor=TensorDesc(F32, (1, 4, 1, 1)), input_zero_point_tensor=None),
            "'InputScale'", "exactly one element")
    rejects(d, with_(input_scale_tensor=S(F32, 1)), "'InputZeroPoint'", "its scale's Sizes")
    rejects(d, with_(filter_zero_point_tensor=S(I8)), "'FilterZeroPoint'", "its scale's Sizes")
    rejects(d, with_(filter_scale_tensor=TensorDesc(F32, (4,)), filter_zero_point_tensor=TensorDesc(I8, (4,))),
            "'FilterScale'", "in dimension 1")
    rejects(d, with_(output_scale_tensor=TensorDesc(F32, (1, 1, 1, 2)), output_zero_point_tensor=TensorDesc(I8, (1, 1, 1, 2))),
            "'OutputScale'", "exactly one")
    rejects(d, with_(filter_scale_tensor=TensorDesc(F32, (1, 3, 1, 1)), filter_zero_point_tensor=None),
            "'FilterScale'", "[1, 4, 1, 1]")
    rejects(d, with_(filter_scale_tensor=TensorDesc(F32, (4, 1, 1, 1)),
                     filter_zero_point_tensor=TensorDesc(I8, (4, 1, 1, 1))), "'FilterScale'", "in dimension 1")
    d.create_operator(with_(bias_tensor=TensorDesc(I32, (1, 4, 1))))     # rank 3: the release DLL accepts it
    rejects(d, with_(bias_tensor=TensorDesc(I32, (1, 1, 1, 1))), "'Bias'", "expected [1, 4, 1, 1]")
    d.create_operator(with_(filter_scale_tensor=TensorDesc(F32, (1, 4, 1, 1), (0, 0, 0, 0)),
                            filter_zero_point_tensor=TensorDesc(I8, (1, 4, 1, 1), (0, 0, 0, 0))))


def test_rule_9_output_size_and_kernel_extent(dev, strict):
    d = dev[FeatureLevel.FL_6_4]
    grid = with_(output_tensor=TensorDesc(I8, (1, 4, 3, 4)))
    wide = with_(input_tensor=TensorDesc(U8, (1, 4, 5, 1)), output_tensor=TensorDesc(I8, (1, 4, 3, 1)))
    rejects(strict, grid, "'Output'", "Sizes [1, 4, 3, 4]", "expected [1, 4, 3, 3]")
    rejects(strict, wide, "'Filter'", "effective kernel width of 3", "padded input width 2")
    d.create_operator(grid)      # the release DirectML computes over the grid it is given
    d.create_operator(wide)
    rejects(d, with_(output_tensor=TensorDesc(I8, (1, 2, 3, 3))), "'Output'", "expected [1, 4, 3, 3]")


def test_5_1_rules_apply_to_every_tensor(dev):
    d = dev[FeatureLevel.FL_6_4]
    rejects(d, with_(output_tensor=TensorDesc(I8, (1, 4, 3, 3), (36, 0, 3, 1))), "'Output'", "overlap")
    rejects(d, with_(bias_tensor=TensorDesc(I32, (1, 4, 1, 1), total_tensor_size_in_bytes=8)), "'Bias'", "TotalTensorSizeInBytes 8")
