"""Cases and oracle rules declared once, for the benchmark, the report, the fuzzer and the tests.

The onnxruntime u8 x s8 rule: onnxruntime's CPU kernels for uint8 activations and int8 weights sum
pairs of products in 16 bits on x86 CPUs without VNNI (AVX2: vpmaddubsw), which saturates with
full-range weights (69 of 400 random convolutions differed, by up to 49). With 7-bit weights
([-64, 63]) every pair fits and onnxruntime is exact. DirectML's arithmetic (and dmlvk's) is exact
int32 whatever the weights: comparisons against onnxruntime use 7-bit weights for u8 x s8, and
full-range weights are checked against the exact reference."""
from __future__ import annotations

import sys
from typing import Optional

import numpy as np

ORT_U8S8_WEIGHTS = (-64, 63)


def ort_weight_range(x_dtype, w_dtype) -> Optional[tuple]:
    """The weight range a comparison with onnxruntime draws from: 7 bits for uint8 x int8, else the
    type's whole range (None)."""
    return ORT_U8S8_WEIGHTS if (np.dtype(x_dtype), np.dtype(w_dtype)) == (np.dtype(np.uint8), np.dtype(np.int8)) else None


def cpu_has_vnni() -> bool:
    """Whether this x86 CPU has VNNI (onnxruntime's u8 x s8 kernels are exact there)."""
    flags = open("/proc/cpuinfo").read() if sys.platform == "linux" else ""
    return " avx512_vnni" in flags or " avx_vnni" in flags
