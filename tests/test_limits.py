"""Device limits: dispatch tiling past maxComputeWorkGroupCount, one storage binding's size."""
import numpy as np
import pytest

import dmlvk
from dmlvk import DataType, DepthSpaceOrder, TensorDesc, reference


def test_plan_respects_workgroup_count_limit(device):
    dev = dmlvk.Device(device.index)
    dev.max_workgroup_count = (5, 3, 1)
    plans = list(dev.plan(10_000, 128))
    assert sum(items for _, items, _ in plans) == 10_000
    assert all(g[0] <= 5 and g[1] <= 3 and g[0] * g[1] * 128 >= items for _, items, g in plans)
    assert [first for first, _, _ in plans] == [i * 5 * 3 * 128 for i in range(len(plans))]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64])
def test_many_dispatches_give_the_same_result(device, rng, dtype):
    dev = dmlvk.Device(device.index)
    dev.max_workgroup_count = (2, 2, 1)     # forces several dispatches of at most 4 groups
    x = rng.integers(0, 100, (2, 12, 9, 17)).astype(dtype)
    for order in ("DCR", "CRD"):
        assert np.array_equal(dmlvk.depth_to_space(x, 2, order, device=dev), reference.depth_to_space(x, 2, order))


def test_more_than_65535_workgroups_in_x(device, rng):
    # An input with W stride 2 takes the element shader, one invocation per output element:
    # 8,392,014 of them at 128 per workgroup need 65,563 workgroups, past 65535 in x (a 2-D grid
    # on lavapipe).
    wide = rng.integers(0, 2**31, (1, 9, 991, 2 * 941), dtype=np.int32)
    x = wide[..., ::2]
    desc = dmlvk.DepthToSpace1Desc(TensorDesc(DataType.INT32, x.shape, (9 * 991 * 1882, 991 * 1882, 1882, 2)),
                                   TensorDesc(DataType.INT32, (1, 1, 2973, 2823)), 3, DepthSpaceOrder.COLUMN_ROW_DEPTH)
    op = device.create_operator(desc)
    k = op.kernels[0]
    assert k.shader == "depth_space" and -(-k.count // k.local_size) > 65535
    y = np.empty((1, 1, 2973, 2823), np.int32)
    op.execute([wide.reshape(-1)[:desc.input_tensor.total_bytes // 4]], [y])
    assert np.array_equal(y, reference.depth_to_space(x, 3, "CRD"))


def test_tensor_larger_than_one_storage_binding(device):
    limit = device.info.max_storage_buffer_range
    w = -(-(limit // 4 + 1024) // 8)           # input float32 bytes: 32 * w, just past the limit
    big_in = TensorDesc(DataType.FLOAT32, (1, 4, 2, w))
    big_out = TensorDesc(DataType.FLOAT32, (1, 1, 4, 2 * w))
    if big_in.total_bytes <= limit:
        pytest.fail("test tensor does not exceed the binding limit")
    desc = dmlvk.DepthToSpace1Desc(big_in, big_out, 2, DepthSpaceOrder.DEPTH_COLUMN_ROW)
    with pytest.raises(dmlvk.DeviceLimitError, match="maxStorageBufferRange") as e:
        device.create_operator(desc)
    assert str(limit) in str(e.value)
    with pytest.raises(dmlvk.DeviceLimitError, match="maxStorageBufferRange"):
        device.buffer(limit + 4)
