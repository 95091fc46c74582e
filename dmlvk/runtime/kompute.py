"""The one place dmlvk loads Kompute: dmlvk._kp (Kompute 0.9.0 with dmlvk's patches, built with the
package), at the first device call."""
from __future__ import annotations

from ..errors import UnsupportedError

LOADER_MISSING = ("the Vulkan loader (libvulkan.so.1) is not installed: install it with a driver "
                  "(Debian/Ubuntu: apt install libvulkan1 mesa-vulkan-drivers, or your GPU vendor's driver)")


class Kompute:
    """dmlvk's private Kompute (the extension dmlvk._kp, Kompute 0.9.0 with dmlvk's patches, built with
    the package), loaded at the first device call: `import dmlvk` works on a machine without a Vulkan
    loader, and that call then says what is missing."""
    _module = None

    def load(self):
        if Kompute._module is None:
            try:
                from .. import _kp
            except ImportError as e:
                if "libvulkan" in str(e):
                    raise UnsupportedError(LOADER_MISSING) from e
                raise UnsupportedError(f"dmlvk's Kompute extension (dmlvk._kp) cannot be loaded ({e}): install "
                                       f"dmlvk from its wheel, or build it with `pip install .` from its source") from e
            Kompute._module = _kp
        return Kompute._module

    def __getattr__(self, name):
        return getattr(self.load(), name)


kp = Kompute()
