"""DEPTH_TO_SPACE, SPACE_TO_DEPTH and their "1" forms: descriptions and validation (desc), the
variant table and kernel selection (variants), the numpy-level API (api). Shaders:
dmlvk/shaders/depth_space*.comp."""
from .api import depth_to_space, space_to_depth
from .desc import (DepthToSpace1Desc, DepthToSpaceDesc, SpaceToDepth1Desc, SpaceToDepthDesc,
                   supported_types)
from .variants import TABLE

__all__ = ["DepthToSpaceDesc", "SpaceToDepthDesc", "DepthToSpace1Desc", "SpaceToDepth1Desc", "depth_to_space",
           "space_to_depth", "supported_types", "TABLE"]
