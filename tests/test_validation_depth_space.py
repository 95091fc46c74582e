"""One negative test per rule of spec 5.1 and 5.2, with the key words of each message."""
import numpy as np
import pytest

import dmlvk
from dmlvk import reference
from dmlvk import (DataType, DepthSpaceOrder, DepthToSpace1Desc, DepthToSpaceDesc, FeatureLevel,
                   SpaceToDepth1Desc, SpaceToDepthDesc, TensorDesc, TensorFlags, ValidationError)

pytestmark = pytest.mark.host      # validation rules

F32 = DataType.FLOAT32
DCR = DepthSpaceOrder.DEPTH_COLUMN_ROW
IN = TensorDesc(F32, (1, 8, 2, 3))
OUT = TensorDesc(F32, (1, 2, 4, 6))


@pytest.fixture(scope="module")
def devices():
    return {fl: dmlvk.Device(feature_level=fl) for fl in
            (FeatureLevel.FL_1_0, FeatureLevel.FL_2_0, FeatureLevel.FL_2_1, FeatureLevel.FL_3_1,
             FeatureLevel.FL_5_0, FeatureLevel.FL_6_4)}


def rejects(device, desc, *words):
    with pytest.raises(ValidationError) as e:
        device.create_operator(desc)
    msg = str(e.value)
    for w in (desc.operator_type.dml_name,) + words:
        assert w in msg, f"{w!r} not in {msg!r}"
    return msg


def test_valid_description_is_accepted(devices):
    for fl, dev in devices.items():
        dev.create_operator(DepthToSpaceDesc(IN, OUT, 2))
        if fl >= FeatureLevel.FL_2_1:
            dev.create_operator(DepthToSpace1Desc(IN, OUT, 2, DCR))


# ---- spec 5.1 ----------------------------------------------------------------------------------

def test_rule_5_1_1_required_tensor_null(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, DepthToSpace1Desc(None, OUT, 2, DCR), "'Input'", "null")
    rejects(d, SpaceToDepthDesc(OUT, None, 2), "'Output'", "null")


def test_rule_5_1_2_unknown_data_type(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, DepthToSpace1Desc(TensorDesc(DataType.UNKNOWN, (1, 8, 2, 3)), OUT, 2, DCR), "'Input'", "invalid DataType")
    rejects(d, DepthToSpace1Desc(TensorDesc(42, (1, 8, 2, 3)), OUT, 2, DCR), "'Input'", "DML_TENSOR_DATA_TYPE(42)")
    rejects(d, DepthToSpace1Desc(TensorDesc(DataType.UINT4, (1, 8, 2, 3)),
                                 TensorDesc(DataType.UINT4, (1, 2, 4, 6)), 2, DCR), "'Input'", "DML_TENSOR_DATA_TYPE_UINT4", "not supported")


def test_rule_5_1_3_and_5_2_1_rank(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, DepthToSpace1Desc(TensorDesc(F32, (8, 2, 3)), OUT, 2, DCR), "'Input'", "DimensionCount 3", "accepts 4")
    rejects(d, DepthToSpace1Desc(IN, TensorDesc(F32, (1, 1, 2, 4, 6)), 2, DCR), "'Output'", "DimensionCount 5")
    rejects(d, DepthToSpace1Desc(IN, TensorDesc(F32, (1,) * 9), 2, DCR), "'Output'", "between 1 and 8")
    rejects(devices[FeatureLevel.FL_2_1], DepthToSpace1Desc(IN, TensorDesc(F32, (1,) * 6), 2, DCR),
            "'Output'", "between 1 and 5", "DML_FEATURE_LEVEL_2_1")


def test_rule_5_1_4_zero_size(devices):
    rejects(devices[FeatureLevel.FL_6_4], DepthToSpace1Desc(TensorDesc(F32, (1, 8, 0, 3)), OUT, 2, DCR),
            "'Input'", "Sizes [1, 8, 0, 3]", "at least 1")


def test_rule_5_1_5_too_many_elements(devices):
    big = TensorDesc(F32, (1, 4, 65536, 65536), (0, 0, 0, 0), total_tensor_size_in_bytes=4)
    rejects(devices[FeatureLevel.FL_6_4], SpaceToDepth1Desc(big, TensorDesc(F32, (1, 16, 32768, 32768)), 2, DCR),
            "'Input'", "2^32-1")


def test_rule_5_1_6_total_size(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), total_tensor_size_in_bytes=188), OUT, 2, DCR),
            "'Input'", "TotalTensorSizeInBytes 188", "192")
    rejects(d, DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), (48, 6, 3, 1), total_tensor_size_in_bytes=100), OUT, 2, DCR),
            "'Input'", "DMLCalcBufferTensorSize", "Strides [48, 6, 3, 1]")
    d.create_operator(DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), total_tensor_size_in_bytes=256), OUT, 2, DCR))
    # Totals past the minimum that are not whole words: the release DirectML takes them (measured),
    # and the bytes past the elements are left alone; the debug rules want whole words.
    odd = DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), total_tensor_size_in_bytes=194),
                            TensorDesc(F32, (1, 2, 4, 6), total_tensor_size_in_bytes=197), 2, DCR)
    x = np.random.default_rng(0).standard_normal(194 // 4 + 1).astype(np.float32).view(np.uint8)[:194]
    out = np.full(197, 0xA5, np.uint8)
    d.create_operator(odd).execute([x], [out])
    want = reference.depth_to_space(x[:192].view(np.float32).reshape(1, 8, 2, 3), 2, "DCR")
    assert np.array_equal(out[:192].view(np.float32).reshape(1, 2, 4, 6), want)
    assert (out[192:] == 0xA5).all()
    rejects(dmlvk.Device(debug=True), odd, "'Input'", "multiple of 4")


def test_rule_5_1_6_total_size_in_32_bit_elements(devices):
    # The release DirectML counts TotalTensorSizeInBytes in elements, in 32 bits (measured on every
    # fuzzed description with a total of 4 GiB or more, docs/directml.md): 2^32 - 1 float32 elements'
    # worth is the most, 2^32 - 1 uint8 ones too, whatever the Sizes.
    d = devices[FeatureLevel.FL_6_4]
    for dt, eb in ((F32, 4), (DataType.UINT8, 1), (DataType.FLOAT64, 8)):
        out = TensorDesc(dt, (1, 2, 4, 6))
        DepthToSpace1Desc(TensorDesc(dt, (1, 8, 2, 3), total_tensor_size_in_bytes=eb * (2**32 - 1)),
                          out, 2, DCR).validate(FeatureLevel.FL_6_4)
        rejects(d, DepthToSpace1Desc(TensorDesc(dt, (1, 8, 2, 3), total_tensor_size_in_bytes=eb * (2**32 - 1) + 1),
                                     out, 2, DCR), "'Input'", f"TotalTensorSizeInBytes {eb * (2**32 - 1) + 1}",
                "2^32-1 elements")


def test_rule_5_1_7_alignment(devices):
    d = devices[FeatureLevel.FL_6_4]
    for bad in (3, 2, 24):
        rejects(d, DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), guaranteed_base_offset_alignment=bad), OUT, 2, DCR),
                "'Input'", f"GuaranteedBaseOffsetAlignment {bad}", "power of two")
    d.create_operator(DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), guaranteed_base_offset_alignment=32), OUT, 2, DCR))


def test_rule_5_1_8_flags(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, DepthToSpace1Desc(IN, TensorDesc(F32, (1, 2, 4, 6), flags=TensorFlags.OWNED_BY_DML), 2, DCR),
            "'Output'", "OWNED_BY_DML")
    rejects(d, DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), flags=4), OUT, 2, DCR), "'Input'", "unknown Flags 0x4")


def test_rule_5_1_9_overlapping_output(devices):
    d = devices[FeatureLevel.FL_6_4]
    strict = dmlvk.Device(debug=True)
    zero = DepthToSpace1Desc(IN, TensorDesc(F32, (1, 2, 4, 6), (0, 0, 6, 1)), 2, DCR)
    overlap = DepthToSpace1Desc(IN, TensorDesc(F32, (1, 2, 4, 6), (48, 24, 6, 2)), 2, DCR)
    crowded = DepthToSpace1Desc(IN, TensorDesc(F32, (1, 2, 4, 6), (24, 12, 3, 1)), 2, DCR)
    rejects(d, zero, "'Output'", "zero stride on a dimension of size 2")
    rejects(d, crowded, "'Output'", "reach 27 positions for 48 elements")
    rejects(strict, zero, "'Output'", "share memory")
    rejects(strict, overlap, "'Output'", "overlap")
    d.create_operator(overlap)   # the release DirectML detects no other aliasing
    d.create_operator(DepthToSpace1Desc(IN, TensorDesc(F32, (1, 2, 4, 6), (0, 24, 6, 1)), 2, DCR))
    # zero strides are fine on inputs (broadcast)
    d.create_operator(DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), (0, 0, 0, 1)), OUT, 2, DCR))


# ---- spec 5.2 ----------------------------------------------------------------------------------

def test_rule_5_2_2_mismatched_types(devices):
    msg = rejects(devices[FeatureLevel.FL_6_4], DepthToSpace1Desc(IN, TensorDesc(DataType.FLOAT16, (1, 2, 4, 6)), 2, DCR),
                  "Mismatched tensor data types")
    assert ("Tensor 'Output' has DataType of DML_TENSOR_DATA_TYPE_FLOAT16, while tensor 'Input' has DataType of "
            "DML_TENSOR_DATA_TYPE_FLOAT32. Both tensors are expected to have the same DataType.") in msg


@pytest.mark.parametrize("desc_cls", [DepthToSpaceDesc, SpaceToDepthDesc, DepthToSpace1Desc, SpaceToDepth1Desc])
def test_rule_5_2_3_types_per_feature_level(devices, desc_cls):
    def desc(dt):
        shapes = ((1, 8, 2, 3), (1, 2, 4, 6))
        i, o = shapes if desc_cls in (DepthToSpaceDesc, DepthToSpace1Desc) else shapes[::-1]
        args = [TensorDesc(dt, i), TensorDesc(dt, o), 2] + ([DCR] if desc_cls.min_level == FeatureLevel.FL_2_1 else [])
        return desc_cls(*args)
    for fl, dev in devices.items():
        if fl < desc_cls.min_level:
            continue
        for dt in DataType:
            if dt in (DataType.UNKNOWN,):
                continue
            allowed = ({DataType.FLOAT32, DataType.FLOAT16}
                       | ({DataType.INT32, DataType.INT16, DataType.INT8, DataType.UINT32, DataType.UINT16,
                           DataType.UINT8} if fl >= FeatureLevel.FL_2_1 else set())
                       | ({DataType.FLOAT64, DataType.INT64, DataType.UINT64} if fl >= FeatureLevel.FL_5_0 else set()))
            if dt in allowed:
                dev.create_operator(desc(dt))
            else:
                rejects(dev, desc(dt), "'Input'", dt.dml_name, "not supported", fl.dml_name)


def test_float64_rejected_at_3_1_for_space_to_depth1(devices):
    desc = SpaceToDepth1Desc(TensorDesc(DataType.FLOAT64, (1, 2, 4, 6)), TensorDesc(DataType.FLOAT64, (1, 8, 2, 3)), 2, DCR)
    rejects(devices[FeatureLevel.FL_3_1], desc, "DML_TENSOR_DATA_TYPE_FLOAT64", "DML_FEATURE_LEVEL_3_1")
    devices[FeatureLevel.FL_5_0].create_operator(desc)


def test_rule_5_2_4_block_size_zero(devices):
    rejects(devices[FeatureLevel.FL_6_4], DepthToSpace1Desc(IN, OUT, 0, DCR), "BlockSize is 0")
    with pytest.raises(TypeError):
        devices[FeatureLevel.FL_6_4].create_operator(DepthToSpace1Desc(IN, OUT, 2.0, DCR))


def test_rule_5_2_5_unknown_order(devices):
    rejects(devices[FeatureLevel.FL_6_4], DepthToSpace1Desc(IN, OUT, 2, 2), "Order is 2")
    rejects(devices[FeatureLevel.FL_6_4], SpaceToDepth1Desc(OUT, IN, 2, "DCR"), "Order is 'DCR'")


def test_rule_5_2_6_depth_to_space_shapes(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, DepthToSpace1Desc(TensorDesc(F32, (1, 6, 2, 3)), OUT, 2, DCR), "'Input'", "6 channels", "BlockSize^2 = 4")
    rejects(d, DepthToSpace1Desc(IN, TensorDesc(F32, (1, 2, 6, 4)), 2, DCR), "'Output'", "Sizes [1, 2, 6, 4]",
            "expected [1, 2, 4, 6]")
    rejects(d, DepthToSpaceDesc(IN, TensorDesc(F32, (2, 2, 4, 6)), 2), "'Output'", "expected [1, 2, 4, 6]")


def test_rule_5_2_7_space_to_depth_shapes(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, SpaceToDepth1Desc(TensorDesc(F32, (1, 2, 5, 6)), IN, 2, DCR), "'Input'", "height 5", "divisible by BlockSize 2")
    rejects(d, SpaceToDepthDesc(OUT, TensorDesc(F32, (1, 8, 3, 2)), 2), "'Output'", "expected [1, 8, 2, 3]")


def test_rule_5_2_8_feature_level_of_the_1_forms(devices):
    rejects(devices[FeatureLevel.FL_2_0], DepthToSpace1Desc(IN, OUT, 2, DCR), "requires DML_FEATURE_LEVEL_2_1",
            "DML_FEATURE_LEVEL_2_0")
    rejects(devices[FeatureLevel.FL_1_0], SpaceToDepth1Desc(OUT, IN, 2, DCR), "requires DML_FEATURE_LEVEL_2_1")
    devices[FeatureLevel.FL_1_0].create_operator(SpaceToDepthDesc(OUT, IN, 2))


def test_unknown_feature_level_is_unsupported():
    with pytest.raises(dmlvk.UnsupportedError, match="DXGI_ERROR_UNSUPPORTED"):
        dmlvk.Device(feature_level=0x7000)


# ---- each rule at its boundary, both sides ---------------------------------------------------------

def test_rank_limit_switches_exactly_at_3_0():
    for fl, limit in ((FeatureLevel.FL_2_1, 5), (FeatureLevel.FL_3_0, 8)):
        d = dmlvk.Device(feature_level=fl)
        rejects(d, DepthToSpace1Desc(IN, TensorDesc(F32, (1,) * (limit + 1)), 2, DCR), "'Output'",
                f"between 1 and {limit}", fl.dml_name)
        # one dimension fewer passes the limit and meets the operator's own rank rule instead
        msg = rejects(d, DepthToSpace1Desc(IN, TensorDesc(F32, (1,) * limit), 2, DCR), "'Output'",
                      f"DimensionCount {limit}")
        assert "between 1 and" not in msg


def test_element_count_limit_is_inclusive():
    from dmlvk.tensor import TensorChecker
    ok = TensorDesc(DataType.FLOAT32, (1, 1, 1, 2**32 - 1))
    TensorChecker("OP", "Input", ok, FeatureLevel.FL_6_4).common(is_output=False, ranks={4}, types={DataType.FLOAT32})
    # 2^32 - 1 bytes round up to a total of 2^32: 2^32 uint8 elements' worth, which the release
    # DirectML rejects (measured), as it accepts 2^32 - 4 of them
    TensorChecker("OP", "Input", TensorDesc(DataType.UINT8, (1, 1, 1, 2**32 - 4)), FeatureLevel.FL_6_4).common(
        is_output=False, ranks={4}, types={DataType.UINT8})
    with pytest.raises(ValidationError, match="TotalTensorSizeInBytes 4294967296"):
        TensorChecker("OP", "Input", TensorDesc(DataType.UINT8, (1, 1, 1, 2**32 - 1)), FeatureLevel.FL_6_4).common(
            is_output=False, ranks={4}, types={DataType.UINT8})
    over = TensorDesc(DataType.UINT8, (1, 1, 2, 2**31), (0, 0, 0, 0), total_tensor_size_in_bytes=4)
    with pytest.raises(ValidationError, match="2\\^32-1"):
        TensorChecker("OP", "Input", over, FeatureLevel.FL_6_4).common(is_output=False, ranks={4}, types={DataType.UINT8})


def test_alignment_equal_to_the_element_size_is_accepted(devices):
    d = devices[FeatureLevel.FL_6_4]
    d.create_operator(DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), guaranteed_base_offset_alignment=4), OUT, 2, DCR))
    rejects(d, DepthToSpace1Desc(TensorDesc(F32, (1, 8, 2, 3), guaranteed_base_offset_alignment=2), OUT, 2, DCR),
            "'Input'", "GuaranteedBaseOffsetAlignment 2")
    d.create_operator(DepthToSpace1Desc(TensorDesc(DataType.FLOAT64, (1, 8, 2, 3), guaranteed_base_offset_alignment=8),
                                        TensorDesc(DataType.FLOAT64, (1, 2, 4, 6)), 2, DCR))


def test_space_to_depth_width_must_divide(devices):
    d = devices[FeatureLevel.FL_6_4]
    rejects(d, SpaceToDepth1Desc(TensorDesc(F32, (1, 2, 4, 5)), TensorDesc(F32, (1, 8, 2, 2)), 2, DCR),
            "'Input'", "width 5", "divisible by BlockSize 2")
    d.create_operator(SpaceToDepth1Desc(TensorDesc(F32, (1, 2, 4, 6)), TensorDesc(F32, (1, 8, 2, 3)), 2, DCR))
