"""dmlvk against the real DirectML, as tallies: the validation matrix's rules (dmlvk_lab.conformance) and
fuzzed descriptions accepted or rejected alike, and executions whose whole output buffers (gaps
included) are equal byte for byte, per operator and data type. tests/test_directml.py asserts on
these tallies; `python -m dmlvk_lab report` shows them in its "DirectML itself" section.

The divergences dmlvk keeps on purpose are named here (README, "Semantics choices"): a case that
differs in one of them is counted under its name, never as agreement."""
from __future__ import annotations

from collections import defaultdict
from typing import List, Optional

import numpy as np

import dmlvk
from dmlvk import DataType, FeatureLevel, TensorDesc, ValidationError
from dmlvk_lab import fuzz
from dmlvk_lab.cases import random_layout
from dmlvk.tensor import has_overlap

from . import oracle

LEVEL = FeatureLevel.FL_6_4          # DirectML validates at its device's level: 6_4
U8, I8, F32, I32 = DataType.UINT8, DataType.INT8, DataType.FLOAT32, DataType.INT32
ALL_TYPES = [t for t in DataType if t not in (DataType.UNKNOWN, DataType.UINT4, DataType.INT4)]
DEPTH_SPACE = (dmlvk.DepthToSpaceDesc, dmlvk.SpaceToDepthDesc, dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc)


# ---- the divergences dmlvk keeps on purpose ---------------------------------------------------------

def is_qlc(desc) -> bool:
    return isinstance(desc, dmlvk.QuantizedLinearConvolutionDesc)


def short_dimension_count(desc) -> bool:
    """DimensionCount below the tensors' spatial rank: DirectML accepts it, then reads Strides,
    Dilations and the paddings past their ends (undefined); dmlvk rejects it."""
    return (is_qlc(desc) and desc.input_tensor is not None
            and len(desc.strides) < desc.input_tensor.dimension_count - 2)


def ranks_differ(desc) -> bool:
    """Filter or Output of another rank than Input: DirectML accepts it (what it computes then was
    not established: one of 36 outputs differed from every reading tried); dmlvk rejects it."""
    if not is_qlc(desc) or desc.input_tensor is None:
        return False
    rank = desc.input_tensor.dimension_count
    return any(t is not None and t.dimension_count != rank for t in (desc.filter_tensor, desc.output_tensor))


def wide_taps(desc) -> bool:
    """Input positions o * stride + k * dilation past 2^31 (strides or dilations near 2^32): DirectML's
    shaders compute them in 32 bits and wrap; dmlvk computes them exactly (such taps are padding)."""
    return is_qlc(desc) and desc.wide_taps()


def block_square_wraps(desc) -> bool:
    """A depth/space BlockSize whose square passes 2^32 (2^31 + 1: its 32-bit square is 1): DirectML
    computes BlockSize^2 and the output sizes in 32 bits, accepts the description where the wrapped
    numbers fit, and writes garbage; dmlvk computes them exactly and rejects it."""
    return not is_qlc(desc) and isinstance(getattr(desc, "block_size", None), int) and desc.block_size ** 2 >= 2**32


DIVERGENCES = {"DimensionCount below the spatial rank": short_dimension_count,
               "BlockSize squared past 32 bits": block_square_wraps,
               "Filter or Output rank unlike Input's": ranks_differ}
CRASHED = "DirectML crashed, dmlvk rejects"


def dmlvk_verdict(desc, level: FeatureLevel = LEVEL) -> Optional[str]:
    """None if dmlvk's validation (release rules) accepts the description, else the message."""
    try:
        desc.validate(level)
    except ValidationError as e:
        return str(e)
    return None


def divergence(desc, mine: Optional[str], theirs: bool) -> Optional[str]:
    """The named divergence that explains dmlvk's verdict `mine` against DirectML's `theirs`, if any
    (the kept ones only where dmlvk rejects what DirectML accepts)."""
    for name, applies in DIVERGENCES.items():
        if applies(desc) and mine is not None and theirs:
            return name
    return None


# ---- cases ----------------------------------------------------------------------------------------

def fuzzed(count: int, seed: int) -> list:
    """The fuzzer's descriptions (valid ones and hostile mutations) that DirectML's C structures can
    carry, at FL 6_4."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        case = fuzz.generate(rng)
        case["level"] = int(LEVEL)
        try:
            desc = fuzz.description(case)
        except (TypeError, ValueError):      # not a DirectML description: a Python argument error
            continue
        if oracle.expressible(desc) is None:
            out.append(desc)
    return out


def depth_space_case(rng, kind: int):
    """A valid depth/space description of any type, order and block size, packed, gapped or permuted."""
    cls = DEPTH_SPACE[kind % 4]
    dt = ALL_TYPES[(kind // 4) % len(ALL_TYPES)]
    b = int(rng.integers(1, 5))
    n, c, h, w = (int(v) for v in rng.integers(1, 4, 4))
    space, depth = (n, c, h * b, w * b), (n, c * b * b, h, w)
    i, o = (depth, space) if cls in (dmlvk.DepthToSpaceDesc, dmlvk.DepthToSpace1Desc) else (space, depth)
    t = lambda sizes: TensorDesc(dt, sizes, random_layout(rng, sizes))
    args = [t(i), t(o), b] + ([int(rng.integers(0, 2))] if cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc) else [])
    return cls(*args)


def off_formula_cases() -> list:
    """Convolutions the release DirectML accepts beyond the documented rules: it computes over the
    output grid it is given, with zero strides or dilations, and the first two entries of longer arrays."""
    s = lambda dt, rank=4: TensorDesc(dt, (1,) * rank)

    def qlc(y=(1, 4, 3, 3), st=(1, 1), di=(1, 1), ps=(0, 0), pe=(0, 0), x=(1, 2, 5, 5), b=(1, 4, 1, 1), g=1, wc=2):
        return dmlvk.QuantizedLinearConvolutionDesc(
            TensorDesc(U8, x), s(F32), s(U8), TensorDesc(I8, (4, wc, 3, 3)), TensorDesc(F32, (1, 4, 1, 1)),
            TensorDesc(I8, (1, 4, 1, 1)), TensorDesc(I32, b), s(F32), s(U8), TensorDesc(U8, y), st, di, ps, pe, g)
    return [qlc(y=(1, 4, 2, 2)), qlc(y=(1, 4, 4, 5)), qlc(y=(1, 4, 1, 7), ps=(1, 2)), qlc(st=(0, 1)),
            qlc(st=(0, 0), y=(1, 4, 2, 3)), qlc(di=(0, 1)), qlc(di=(2, 0), y=(1, 4, 1, 2)),
            qlc(st=(2, 1, 7), di=(1, 2, 0), ps=(1, 0, 5), pe=(0, 1, 9), y=(1, 4, 3, 1)),
            qlc(x=(1, 2, 2, 2), y=(1, 4, 1, 1)), qlc(x=(1, 2, 2, 2), y=(1, 4, 3, 3), ps=(2, 1), pe=(1, 2)),
            qlc(b=(1, 4, 1)), qlc(x=(1, 4, 6, 6), g=2, y=(1, 4, 5, 2), st=(1, 3))]


def buffers(rng, desc) -> list:
    """Random bytes for every tensor present (the output's are its initial bytes); QLC scales
    finite and positive, bias moderate."""
    out = []
    for i, t in enumerate(oracle.operator_tensors(desc)):
        if t is None:
            out.append(None)
            continue
        b = rng.integers(0, 256, t.total_bytes, dtype=np.uint8)
        words = b[:t.total_bytes // 4 * 4]
        if is_qlc(desc) and i in (1, 4, 7):
            words.view(np.float32)[:] = rng.uniform(0.002, 0.05, words.size // 4).astype(np.float32)
        if is_qlc(desc) and i == 6:
            words.view(np.int32)[:] = rng.integers(-5000, 5000, words.size // 4)
        out.append(b)
    return out


def execution_cases(count: int, seed: int = 7) -> List[oracle.Case]:
    """Up to `count` + 40 executable cases: the off-formula convolutions, then depth/space cases
    (every operator, then every type, order and layout) alternating with valid fuzzed convolutions (outputs without overlap,
    buffers of at most 64 KiB, no OWNED_BY_DML tensor: the oracle binds none)."""
    rng = np.random.default_rng(seed)
    ds = [depth_space_case(rng, k) for k in range(4 * len(ALL_TYPES) * 4)]
    conv = [d for d in fuzzed(8 * count, seed=11) if is_qlc(d) and dmlvk_verdict(d) is None]
    descs = off_formula_cases() + [d for pair in zip(ds, conv) for d in pair] + ds[len(conv):] + conv[len(ds):]
    cases = []
    for d in descs:
        tensors = oracle.operator_tensors(d)
        out = tensors[-1]
        if (dmlvk_verdict(d) is not None or has_overlap(out.sizes, out.effective_strides) is not False
                or sum(t.total_bytes for t in tensors if t is not None) > 1 << 16
                or any(t is not None and t.flags for t in tensors)):
            continue
        cases.append(oracle.Case(d, buffers(rng, d)))
        if len(cases) >= count + 40:
            break
    return cases


# ---- tallies --------------------------------------------------------------------------------------

def validation_tally(descs: list, results: list) -> tuple:
    """({outcome: count}, [unexplained differences]) of dmlvk's validation against DirectML's."""
    tally = {"agree": 0, CRASHED: 0, **{k: 0 for k in DIVERGENCES}}
    wrong = []
    for d, r in zip(descs, results):
        mine = dmlvk_verdict(d)
        if r.crashed:       # e.g. a BlockSize of 2^31 or more (its square overflows in DirectML)
            if mine is None:
                wrong.append(f"DirectML crashed and dmlvk accepts: {d}")
            tally[CRASHED] += 1
        elif (mine is None) == r.accepted:
            tally["agree"] += 1
        elif divergence(d, mine, r.accepted):
            tally[divergence(d, mine, r.accepted)] += 1
        else:
            wrong.append(f"dmlvk {'accepts' if mine is None else 'rejects (' + mine + ')'}, DirectML "
                         f"{'accepts' if r.accepted else 'rejects'}: {d}")
    return tally, wrong


def rule_rows(dml, rules) -> list:
    """Each validation-matrix rule at FL 6_4: DirectML's answer, dmlvk's, and whether they agree
    (or which named divergence separates them). A rule DirectML's C structures cannot carry (a
    UINT member of 2^32) is marked so and not counted."""
    descs = [r.desc() for r in rules]
    sent = [d for d in descs if oracle.expressible(d) is None]
    answers = dict(zip(map(id, sent), dml.run([oracle.Case(d) for d in sent])))
    rows = []
    for rule, desc in zip(rules, descs):
        mine = dmlvk_verdict(desc)
        r = answers.get(id(desc))
        theirs = ("not expressible" if r is None else "crashes" if r.crashed
                  else "accepts" if r.accepted else "rejects")
        agrees = (None if r is None else (mine is not None) if r.crashed else (mine is None) == r.accepted)
        rows.append({"rule": rule.rule, "what": rule.what, "basis": rule.basis, "directml": theirs,
                     "dmlvk": "accepts" if mine is None else "rejects", "agrees": agrees,
                     "divergence": divergence(desc, mine, r.accepted) if agrees is False and not r.crashed else None})
    return rows


def type_label(desc) -> str:
    t = oracle.operator_tensors(desc)
    if is_qlc(desc):
        short = {U8: "u8", I8: "s8"}
        return f"{short[t[0].data_type]} x {short[t[3].data_type]} -> {short[t[-1].data_type]}"
    return t[-1].data_type.name


def execution_rows(device, cases: list, results: list) -> list:
    """Per operator and data type: cases DirectML executed, how many of dmlvk's output buffers on
    `device` equal its byte for byte, how many differ in a named divergence, how many differ."""
    rows = defaultdict(lambda: {"cases": 0, "equal": 0, "named": 0, "differ": 0, "directml_failed": 0,
                                "first_difference": None})
    for c, r in zip(cases, results):
        row = rows[(c.desc.operator_type.dml_name.replace("DML_OPERATOR_", ""), type_label(c.desc))]
        if not r.accepted:              # dmlvk accepts every case; DirectML rejected (or crashed on) this one
            row["differ"] += 1
            row["first_difference"] = row["first_difference"] or f"DirectML rejects {c.desc}"
            continue
        if r.exec_hr != 0 or r.output is None:   # vkd3d on lavapipe lost the device executing it
            row["directml_failed"] += 1
            continue
        got = c.buffers[-1].copy()
        device.create_operator(c.desc).execute(list(c.buffers[:-1]), [got])
        row["cases"] += 1
        if np.array_equal(got, r.output[:got.size]):
            row["equal"] += 1
        elif wide_taps(c.desc):
            row["named"] += 1
        else:
            row["differ"] += 1
            row["first_difference"] = row["first_difference"] or (
                f"{int((got != r.output[:got.size]).sum())} of {got.size} bytes differ: {c.desc}")
    return [{"operator": op, "data_type": dt, **v} for (op, dt), v in sorted(rows.items())]
