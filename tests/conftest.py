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


# ---- the kernel variants the run exercised (printed at the end: per implementation in CI) ---------

_EXERCISED = set()


def pytest_configure(config):
    from dmlvk.runtime.device import Device
    record = Device.algorithms

    def algorithms(self, kernel, tensors):
        _EXERCISED.add(kernel.variant or kernel.shader)
        return record(self, kernel, tensors)
    Device.algorithms = algorithms


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):             # a pytest-xdist worker: to the controller
        session.config.workeroutput["exercised"] = sorted(_EXERCISED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):                      # pytest-xdist's controller: a worker's variants
    _EXERCISED.update(getattr(node, "workeroutput", {}).get("exercised", ()))


def pytest_terminal_summary(terminalreporter):
    if not _EXERCISED:
        return
    from dmlvk.ops.registry import TABLES
    names = [v.name for t in TABLES for v in t]
    try:
        where = dmlvk.devices()[0].name
    except Exception:       # no device: nothing ran
        where = "no device"
    missing = [n for n in names if n not in _EXERCISED]
    terminalreporter.write_line(f"kernel variants run on {where}: {len(names) - len(missing)} of {len(names)}"
                                + (f"; not run: {', '.join(missing)}" if missing else ""))
