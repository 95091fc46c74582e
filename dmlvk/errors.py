"""Errors raised by dmlvk."""
from typing import Optional


class ValidationError(ValueError):
    """A description DirectML would reject at CreateOperator (its E_INVALIDARG). tensor: the
    DirectML name of the tensor the rule is about ('Input', 'FilterScale', ...), member: the
    description's member otherwise ('BlockSize', 'Strides', ...); either may be None."""

    def __init__(self, message: str, *, tensor: Optional[str] = None, member: Optional[str] = None):
        super().__init__(message)
        self.tensor, self.member = tensor, member

    def as_argument_error(self, arguments: dict) -> ValueError:
        """The same rule as a ValueError naming a numpy-level function's argument: arguments maps
        DirectML's tensor and member names to the function's argument names."""
        name = arguments.get(self.tensor) or arguments.get(self.member)
        return ValueError(f"{name}: {self}" if name else str(self))


class DeviceLimitError(ValueError):
    """A valid description that exceeds a limit of the Vulkan device (e.g. maxStorageBufferRange)."""


class UnsupportedError(RuntimeError):
    """The device cannot provide what was asked (DirectML's DXGI_ERROR_UNSUPPORTED)."""
