"""dmlvk.DeviceArray: numpy-level calls that stay on the device."""
import numpy as np
import pytest

import dmlvk
from dmlvk import reference


def test_asarray_round_trip(device):
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    xd = dmlvk.asarray(x, device=device)
    assert isinstance(xd, dmlvk.DeviceArray) and xd.shape == x.shape and xd.dtype == x.dtype
    assert xd.strides == x.strides and xd.device is device and xd.nbytes == x.nbytes
    assert np.array_equal(xd.numpy(), x) and np.array_equal(np.asarray(xd), x)
    assert dmlvk.asarray(xd) is xd
    assert np.array_equal(dmlvk.asarray([[1, 2], [3, 4]], device=device).numpy(), [[1, 2], [3, 4]])


def test_chained_calls_stay_on_the_device(device, rng):
    x = rng.integers(0, 256, (2, 8, 6, 6), dtype=np.uint8)
    w = rng.integers(-128, 128, (16, 8, 3, 3), dtype=np.int8)
    q = (np.float32(0.05), np.uint8(3), w, np.float32(0.01), None, None, np.float32(0.3), np.uint8(11))
    xd = dmlvk.asarray(x, device=device)
    yd = dmlvk.quantized_linear_convolution(xd, *q)
    zd = dmlvk.depth_to_space(yd, 2, "CRD")
    assert isinstance(yd, dmlvk.DeviceArray) and isinstance(zd, dmlvk.DeviceArray)
    want = reference.depth_to_space(reference.quantized_linear_convolution(x, *q, np.uint8), 2, "CRD")
    assert zd.shape == want.shape and np.array_equal(zd.numpy(), want)
    back = dmlvk.space_to_depth(zd, 2, "CRD")
    assert np.array_equal(back.numpy(), yd.numpy())
    # host arrays mixed in: the result follows the input
    assert isinstance(dmlvk.quantized_linear_convolution(x, *q, device=device), np.ndarray)


def test_device_array_out_and_dtypes(device):
    x = np.ones((1, 4, 2, 2), bool)
    xd = dmlvk.asarray(x, device=device)
    out = dmlvk.asarray(np.zeros((1, 1, 4, 4), bool), device=device)
    assert dmlvk.depth_to_space(xd, 2, out=out) is out and out.numpy().all()
    with pytest.raises(TypeError, match="DeviceArray"):
        dmlvk.depth_to_space(xd, 2, out=np.zeros((1, 1, 4, 4), bool))
    with pytest.raises(ValueError, match="out has shape"):
        dmlvk.depth_to_space(xd, 2, out=dmlvk.asarray(np.zeros((1, 1, 4, 5), bool), device=device))
    other = dmlvk.Device()
    with pytest.raises(ValueError, match="another device"):
        dmlvk.depth_to_space(xd, 2, device=other)


def test_an_array_must_fit_its_buffer(device):
    buf = device.buffer(64)
    assert dmlvk.DeviceArray(buf, (4, 4), np.float32).nbytes == 64          # exactly fits
    with pytest.raises(ValueError, match="needs 68 bytes; the Buffer holds 64"):
        dmlvk.DeviceArray(buf, (17,), np.float32)                           # one element past the end
