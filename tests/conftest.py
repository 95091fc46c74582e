import zlib

import numpy as np
import pytest

import dmlvk


@pytest.fixture(scope="session")
def device():
    return dmlvk.Device()


@pytest.fixture(scope="session")
def portable_device():
    """The same device with every optional feature hidden from variant choice (what
    DMLVK_DISABLE_FEATURES=all gives): operators compiled here take the portable shaders."""
    dev = dmlvk.Device()
    dev.capabilities = dev.capabilities.without(["all"])
    return dev


@pytest.fixture
def rng(request):
    # Seeded from the test id, so every failure reproduces.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
