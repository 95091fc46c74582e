import zlib

import numpy as np
import pytest

import dmlvk


@pytest.fixture(scope="session")
def device():
    return dmlvk.Device()


@pytest.fixture
def rng(request):
    # Seeded from the test id, so every failure reproduces.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
