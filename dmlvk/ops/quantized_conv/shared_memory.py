"""QUANTIZED_LINEAR_CONVOLUTION's shared-memory formulas: the bytes each kernel's workgroup holds, as
its shader declares them, and the Needs (variants.py's rows) that keep them within the device's
maxComputeSharedMemorySize."""
from __future__ import annotations

from ..variants import Need


def coopmat_shared_bytes(constants: dict, defines, halo: bool = False) -> int:
    """Shared memory of a cooperative-matrix kernel: the window and filter rows (the halo kernel,
    qlinear_conv_coopmat_halo.comp: 8 + KH - 1 rows of 32 + KW - 1 positions, 32 filter rows (none with AREG 2 and real matrices: one vector),
    each with 16 bytes of padding, and their channels' three numbers) or the A and B tiles (32 x WM
    channels and 128 pixels, BK = 64 bytes of K and 16 of padding a row; qlinear_conv_coopmat.comp),
    and its epilogue's 8 KiB stage, which with real matrices is the B tile's memory (the halo kernel's
    always the window's)."""
    defines = tuple(defines)
    if halo:
        kh, kw, cq = constants["KH"], constants["KW"], constants["CQ"]
        cqw = cq // constants["KSPLIT"]                       # a slice's vectors (KSPLIT)
        window, rows, channels = (8 + kh - 1) * (32 + kw - 1), 32 * (kh * kw * cqw + 1), 32 * 3 * 4
        emulated = ("COOPMAT_EMULATED", 1) in defines
        lanes = 1024 if emulated else 0                               # the emulation's lane exchanges
        if constants.get("AREG") == 2 and not emulated:               # the filter rows in registers alone
            rows = 1
        return 16 * (window * (cqw + 1) + rows) + channels + lanes
    stage = 8192 if ("COOPMAT_EMULATED", 1) in defines else 0
    return stage + (32 * constants["WM_SPEC"] + 128) * 5 * 16


def dot_channel_words(c) -> int:
    """Filter words of an output channel in conv.dot's shared memory (its constants c): CG x KH rows of
    ceil(KW / 4) words (with KW % 4 == 1, CG x (KH rows of KW // 4 words and ceil(KH / 4) words of the
    last column)), or with CL_IN KH x KW taps of CG / 4 words."""
    kh, kw, cg = c["KH"], c["KW"], c["CG"]
    if c["CL_IN"]:
        return kh * kw * (cg // 4)
    return cg * (kh * (kw // 4) + -(-kh // 4)) if kw % 4 == 1 else cg * kh * -(-kw // 4)


COOPMAT_SHARED = Need("its tiles within maxComputeSharedMemorySize (12,800 bytes with 32-channel tiles, 15,360 with 64, "
                      "20,480 with 128, 8,192 more emulated; the halo kernel 16 x ((7 + KH) x (31 + KW) x (C + 1) + "
                      "32 x (KH x KW x C + 1)) + 384, C = Cg / 16 / KSPLIT, with AREG 2 and real matrices 16 in place "
                      "of the filter rows' 32 x (KH x KW x C + 1))",
                      lambda c, k, caps: caps.fits_shared(coopmat_shared_bytes(
                          c, k.defines, halo=k.shader == "qlinear_conv_coopmat_halo")))
def dot_shared_bytes(c) -> int:
    """Shared memory of conv.dot (qlinear_conv_dot.comp, its constants c): BLOCKS blocks of MB channels'
    filter words (a block's count made odd with several blocks: BWORDS = MB x words | 1) and each
    channel's correction word."""
    block = c["MB"] * dot_channel_words(c) | (1 if c["BLOCKS"] > 1 else 0)
    return 4 * (c["BLOCKS"] * block + c["BLOCKS"] * c["MB"])


DOT_SHARED = Need("its channels' filter words and corrections (BLOCKS x ((MB x its words a channel) | 1, the 1 "
                  "with several blocks) + BLOCKS x MB words) within maxComputeSharedMemorySize",
                  lambda c, k, caps: caps.fits_shared(dot_shared_bytes(c)))
DEPTHWISE_SHARED = Need("its tile of TILE words within maxComputeSharedMemorySize",
                        lambda c, k, caps: caps.fits_shared(4 * c["TILE"]))
