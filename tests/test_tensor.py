"""TensorDesc and DMLCalcBufferTensorSize (spec 1.3)."""
import numpy as np
import pytest

from dmlvk import DataType, TensorDesc, calc_buffer_tensor_size, packed_strides
from dmlvk.tensor import has_overlap, nested_order

pytestmark = pytest.mark.host      # DirectML's tensor rules


@pytest.mark.parametrize("data_type,sizes,strides,expected", [
    (DataType.FLOAT32, (1, 2, 4, 6), None, 192),
    (DataType.FLOAT64, (1, 8, 2, 3), None, 384),
    (DataType.FLOAT32, (1, 1, 1, 1), (0, 0, 0, 0), 4),
    (DataType.UINT8, (3,), None, 4),
    (DataType.UINT8, (2, 3), (5, 1), 8),
    (DataType.FLOAT16, (1, 1, 3, 5), (15, 1, 5, 1), 32),
    (DataType.UINT8, (1, 8, 1, 1), (0, 1, 0, 0), 8),
    (DataType.UINT4, (5,), None, 4),
])
def test_calc_buffer_tensor_size_spec_table(data_type, sizes, strides, expected):
    assert calc_buffer_tensor_size(data_type, sizes, strides) == expected


def test_calc_buffer_tensor_size_quirks():
    assert calc_buffer_tensor_size(DataType.UNKNOWN, (4,)) == 0
    assert calc_buffer_tensor_size(99, (4,)) == 0
    # the last index is summed in 32-bit unsigned arithmetic, as in Microsoft's helper
    assert calc_buffer_tensor_size(DataType.UINT8, (3,), (2**31,)) == 4     # 2 * 2^31 wraps to 0
    assert calc_buffer_tensor_size(DataType.INT4, (3,), (1,)) == 4


def test_tensor_desc_defaults_and_errors():
    d = TensorDesc(DataType.FLOAT16, (1, 2, 3, 3))
    assert d.total_bytes == 36 and d.effective_strides == packed_strides((1, 2, 3, 3)) == (18, 9, 3, 1)
    assert TensorDesc(DataType.UINT8, (3,)).total_bytes == 4
    assert TensorDesc(5, (2,)).data_type is DataType.UINT8
    with pytest.raises(ValueError, match="strides has 2 entries"):
        TensorDesc(DataType.FLOAT32, (1, 2, 3), (1, 2))
    with pytest.raises(TypeError):
        TensorDesc(DataType.FLOAT32, (1, 2.5))
    with pytest.raises(ValueError):
        TensorDesc(DataType.FLOAT32, (1, -2))
    with pytest.raises(TypeError):
        TensorDesc("FLOAT32", (1,))
    for align in (-4, True, 1.5):
        with pytest.raises(TypeError, match="guaranteed_base_offset_alignment"):
            TensorDesc(DataType.FLOAT32, (1, 4), guaranteed_base_offset_alignment=align)
    assert TensorDesc(DataType.FLOAT32, (1, 4), guaranteed_base_offset_alignment=0).guaranteed_base_offset_alignment == 0


def test_from_array_maps_strides():
    a = np.zeros((2, 3, 4, 5), np.int16).transpose(0, 2, 3, 1)
    d = TensorDesc.from_array(a)
    assert d.sizes == (2, 4, 5, 3) and d.strides == (60, 5, 1, 20)
    # A broadcast array's zero strides are DirectML strides too; negative ones are not.
    b = np.broadcast_to(np.arange(5, dtype=np.float32), (3, 5))
    assert TensorDesc.from_array(b).strides == (0, 1)
    with pytest.raises(ValueError, match="non-negative multiples"):
        TensorDesc.from_array(np.arange(6, dtype=np.float32)[::-1])


def test_layout_analysis():
    assert nested_order((2, 3, 4, 5), (60, 20, 5, 1)) == (0, 1, 2, 3)
    assert nested_order((1, 3, 4, 5), (0, 1, 15, 3)) == (0, 2, 3, 1)
    assert nested_order((1, 1, 2, 3), (0, 0, 5, 2)) is None     # rows interleave: no nesting order
    assert has_overlap((1, 1, 2, 3), (0, 0, 5, 2)) is False      # ... yet no element aliases
    assert has_overlap((1, 1, 2, 3), (0, 0, 2, 1)) is True       # offsets 0,1,2,2,3,4
    assert has_overlap((2, 2), (0, 1)) is True
    assert has_overlap((4, 4), (1, 1)) is True
