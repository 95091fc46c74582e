import os

import numpy as np
import pytest

import dmlvk


@pytest.fixture(scope="session")
def device():
    return dmlvk.Device()


@pytest.fixture
def rng(request):
    # Seeded per test so that a failure reproduces; the seed is in the test id's hash.
    return np.random.default_rng(abs(hash(request.node.nodeid)) % (2**32))
