"""Every operator's variant table, in one list: what the package compiles (dmlvk_lab.spirv_builds),
documents (dmlvk_lab.kernels_doc) and the tests count and check."""
from . import (activations, depth_space, elementwise, join_tile, lookup, quantize, quantized_add, quantized_conv,
               resample)

TABLES = (depth_space.TABLE, quantized_conv.TABLE, quantize.TABLE, quantized_add.TABLE, lookup.TABLE, join_tile.TABLE, activations.TABLE,
          resample.TABLE, elementwise.TABLE)
