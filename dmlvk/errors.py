"""Errors raised by dmlvk."""


class ValidationError(ValueError):
    """A description DirectML would reject at CreateOperator (its E_INVALIDARG)."""


class DeviceLimitError(ValueError):
    """A valid description that exceeds a limit of the Vulkan device (e.g. maxStorageBufferRange)."""


class UnsupportedError(RuntimeError):
    """The device cannot provide what was asked (DirectML's DXGI_ERROR_UNSUPPORTED)."""
