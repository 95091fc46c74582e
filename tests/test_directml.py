"""dmlvk against the real DirectML (release DirectML.dll 1.15.4 under Wine + vkd3d on Mesa 25
lavapipe; dmlvk_lab/directml): fuzzed descriptions accepted or rejected alike, and accepted cases'
output buffers equal byte for byte, gaps included. Set up by ci/directml.sh; without it these tests
skip, except in CI (CI=true), where a skip is a failure."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import dmlvk
from dmlvk import DataType, FeatureLevel, TensorDesc, ValidationError
from dmlvk_lab.conformance import DIVERGES, RULES

from dmlvk_lab.directml import compare, oracle
from harness import padded

pytestmark = pytest.mark.directml
VALIDATION_CASES = int(os.environ.get("DMLVK_DIRECTML_VALIDATION_CASES", 2000))
EXECUTION_CASES = 300


@pytest.fixture(scope="module")
def dml():
    why = oracle.missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the DirectML oracle is required in CI: {why}")
        pytest.skip(f"the DirectML oracle is not set up: {why}")
    return oracle.DirectML.find()



def verdicts_differ(device, descs, results, labels=None) -> list:
    """A line for each description that DirectML (its oracle results) and dmlvk's create_operator on
    the device accept or reject differently, named by its label (default: the description)."""
    wrong = []
    for desc, got, label in zip(descs, results, labels or descs):
        try:
            device.create_operator(desc)
            mine = None
        except ValidationError as e:
            mine = str(e)
        if got.accepted != (mine is None):
            wrong.append(f"{label}: DirectML {'accepts' if got.accepted else 'rejects'}; dmlvk: {mine or 'accepts'}")
    return wrong


def dmlvk_output(device, case) -> np.ndarray:
    """dmlvk's output buffer for an oracle case: its inputs' bytes, the output's initial bytes."""
    out = case.buffers[-1].copy()
    device.create_operator(case.desc).execute(list(case.buffers[:-1]), [out])
    return out


def outputs_differ(dml, cases) -> list:
    """A line for each executed case whose output buffer from dmlvk differs from DirectML's (every
    case must be accepted and run by DirectML)."""
    device = dmlvk.Device()
    wrong = []
    for i, (case, got) in enumerate(zip(cases, dml.run(cases))):
        assert got.accepted and got.exec_hr == 0, (i, case.desc, got.create_hr, got.exec_hr)
        mine = dmlvk_output(device, case)
        if not np.array_equal(mine, got.output[:mine.size]):
            wrong.append(f"case {i} {case.desc}: {int((mine != got.output[:mine.size]).sum())} bytes differ")
    return wrong


# ---- tests ----------------------------------------------------------------------------------------

def test_validation_agrees_with_directml(dml):
    descs = compare.fuzzed(VALIDATION_CASES, seed=2026)
    results = dml.run([oracle.Case(d) for d in descs])
    assert dml.device.max_feature_level == int(compare.LEVEL)
    tally, wrong = compare.validation_tally(descs, results)
    print(f"\nvalidation against DirectML: {len(descs)} descriptions, {tally}")
    assert not wrong, f"{len(wrong)} unnamed divergences:\n" + "\n".join(wrong[:int(os.environ.get("DMLVK_SHOW", 5))])
    assert tally["agree"] >= 0.95 * len(descs)


def test_validation_matrix_rules_agree_with_directml(dml):
    """Every rule of the report's validation matrix, at FL 6_4: DirectML's answer is dmlvk's, except
    where a named divergence separates them (and only rules marked as dmlvk's choice against DirectML)."""
    rows = compare.rule_rows(dml, RULES)
    wrong = [r for r in rows if r["agrees"] is False and not (r["divergence"] and r["basis"] == DIVERGES)]
    assert not wrong, "\n".join(f"{r['rule']} {r['what']}: DirectML {r['directml']}, dmlvk {r['dmlvk']}" for r in wrong)
    assert any(r["basis"] == DIVERGES and r["agrees"] is False for r in rows)
    assert sum(r["agrees"] is None for r in rows) == 1          # start padding 2^32 fits no UINT


def test_execution_agrees_with_directml_byte_for_byte(dml):
    cases = compare.execution_cases(EXECUTION_CASES)
    assert len(cases) >= EXECUTION_CASES
    rows = compare.execution_rows(dmlvk.Device(), cases, dml.run(cases))
    compared = sum(r["cases"] for r in rows)
    print(f"\nexecution against DirectML: {compared} cases compared over {len(rows)} operator x type pairs; "
          f"DirectML failed to execute {sum(r['directml_failed'] for r in rows)}; "
          f"{sum(r['named'] for r in rows)} differ where taps pass 2^31 (named divergence)")
    assert compared >= EXECUTION_CASES
    # DirectML's executions that fail remove its D3D12 device (vkd3d on lavapipe): only convolutions
    assert all(r["operator"] == "QUANTIZED_LINEAR_CONVOLUTION" for r in rows if r["directml_failed"])
    wrong = [r["first_difference"] for r in rows if r["differ"]]
    assert not wrong, f"{len(wrong)} operator x type pairs differ:\n" + "\n".join(wrong[:5])
    for op in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE1", "SPACE_TO_DEPTH1"):
        assert {r["data_type"] for r in rows if r["operator"] == op and r["equal"]} == {t.name for t in compare.ALL_TYPES}
    qlc = {r["data_type"] for r in rows if r["operator"] == "QUANTIZED_LINEAR_CONVOLUTION" and r["equal"]}
    assert {t.split(" -> ")[0].split(" x ")[0] for t in qlc} == {"u8", "s8"}


def dmlvk_view(driver_env: dict) -> dict:
    """dmlvk's own reading of the device a driver offers (run in a child process pointed at it)."""
    code = ("import json, dmlvk\nfrom dmlvk.runtime.datatypes import directml_data_types\n"
            "d = dmlvk.devices()[0]\n"
            "print(json.dumps({'driver': d.driver_info, 'types': sorted(int(t) for t in directml_data_types(d))}))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VK_")}
    env.update(driver_env)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def depth_space_of_every_type():
    """A packed 2 x 2 block description of each depth/space operator and each type (4-bit ones too)."""
    out = []
    for cls in (dmlvk.DepthToSpaceDesc, dmlvk.SpaceToDepthDesc, dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc):
        d2s = cls in (dmlvk.DepthToSpaceDesc, dmlvk.DepthToSpace1Desc)
        for dt in DataType:
            if dt != DataType.UNKNOWN:
                i, o = ((1, 8, 2, 2), (1, 2, 4, 4)) if d2s else ((1, 2, 4, 4), (1, 8, 2, 2))
                order = [0] if cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc) else []
                out.append(cls(TensorDesc(dt, i), TensorDesc(dt, o), 2, *order))
    return out


@pytest.mark.parametrize("driver", [None, oracle.SYSTEM_LAVAPIPE], ids=["mesa25", "system-lavapipe"])
def test_type_support_follows_directml_per_device(dml, driver):
    """On each lavapipe (Mesa 25, and Debian 12's Mesa 22.3, which lacks typed UAV loads of 16-bit
    formats), DirectML's CheckFeatureSupport answers what dmlvk's type_support="directml" predicts from
    the Vulkan device, and a Device holding those types accepts and rejects each operator and type as
    DirectML's CreateOperator does."""
    on = oracle.DirectML.find(driver)
    if on is None:
        pytest.fail(f"no Vulkan driver at {driver}") if os.environ.get("CI") == "true" else pytest.skip(f"no {driver}")
    info = on.device_info()
    assert info.create_hr == 0
    assert info.max_feature_level == int(FeatureLevel.FL_6_4)
    view = dmlvk_view(on.vulkan_env())
    assert {int(t) for t in info.supported_types} == set(view["types"]), view["driver"]
    if "Mesa 22." in view["driver"]:
        assert not {DataType.FLOAT16, DataType.UINT16, DataType.INT16} & info.supported_types

    device = dmlvk.Device(type_support=view["types"])
    descs = depth_space_of_every_type()
    wrong = verdicts_differ(device, descs, on.run([oracle.Case(d) for d in descs]),
                            [f"{type(d).__name__} {d.input_tensor.data_type.name}" for d in descs])
    assert not wrong, "\n".join(wrong)



def test_totals_of_four_gib_or_more_agree_with_directml(dml):
    """The release DirectML counts TotalTensorSizeInBytes in 32-bit elements (docs/directml.md): on
    fuzzed descriptions whose totals are 4 GiB or more, given or computed from huge strides, dmlvk's
    verdict is DirectML's (once an open bucket)."""
    descs, seed = [], 31000
    while len(descs) < 300:
        descs += [d for d in compare.fuzzed(2000, seed=seed)
                  if any(t is not None and t.total_bytes >= 2**32 for t in oracle.operator_tensors(d))]
        seed += 1
    tally, wrong = compare.validation_tally(descs, dml.run([oracle.Case(d) for d in descs]))
    assert not wrong, "\n".join(wrong[:5])
    assert tally["agree"] >= 0.98 * len(descs), tally


def _add_cases(rng):
    """ELEMENT_WISE_QUANTIZED_LINEAR_ADD cases with their buffers: every pair of bytes (A and B of
    256 x 256) under random parameters and zero, NaN, infinite and negative output scales, then
    random layouts (ranks 1 to 8, broadcast and permuted inputs, gapped outputs) and mixed types."""
    from dmlvk.ops.quantized_add import ElementWiseQuantizedLinearAddDesc as AddDesc
    f32 = np.float32
    vals = np.arange(256, dtype=np.uint8)
    cases = []
    for k, out_scale in enumerate([None] * 10 + [0.0, np.nan, np.inf, -0.02]):
        t = (DataType.UINT8, DataType.INT8)[k % 2]
        npt = np.dtype(t.numpy_dtype)
        scales = [f32(10 ** rng.uniform(-3, -1)) for _ in range(3)]
        if out_scale is not None:
            scales[2] = f32(out_scale)
        zps = [np.array(rng.integers(np.iinfo(npt).min, np.iinfo(npt).max + 1), npt) for _ in range(3)]
        desc = AddDesc.of(TensorDesc(t, (256, 256)), TensorDesc(t, (256, 256)))
        cases.append(oracle.Case(desc, [np.repeat(vals, 256), padded(scales[0]), padded(zps[0]), np.tile(vals, 256),
                                        padded(scales[1]), padded(zps[1]), padded(scales[2]), padded(zps[2]),
                                        np.zeros(65536, np.uint8)]))
    for k in range(40):
        rank = 1 + k % 8
        sizes = tuple(int(s) for s in rng.integers(1, 5, rank))
        types = [(DataType.UINT8, DataType.INT8)[int(rng.integers(0, 2))] for _ in range(3)]

        def strides(broadcast, gaps):
            out, acc = [0] * rank, 1
            for d in rng.permutation(rank) if gaps else range(rank - 1, -1, -1):
                out[d] = 0 if broadcast and rng.integers(0, 3) == 0 else acc
                acc *= sizes[d] + int(gaps and rng.integers(0, 2))
            return tuple(out)

        a, b = TensorDesc(types[0], sizes, strides(True, True)), TensorDesc(types[1], sizes, strides(True, True))
        o = TensorDesc(types[2], sizes, strides(False, k % 2 == 1))
        one = lambda dt: TensorDesc(dt, (1,) * rank)
        zp = k % 3 != 0
        desc = AddDesc(a, one(DataType.FLOAT32), one(types[0]) if zp else None, b, one(DataType.FLOAT32),
                       one(types[1]) if zp else None, one(DataType.FLOAT32), one(types[2]) if zp else None, o)
        small = lambda dt: padded(np.array(rng.integers(-100, 100)).astype(np.dtype(dt.numpy_dtype)))
        buffers = [rng.integers(0, 256, a.total_bytes, dtype=np.uint8), padded(f32(rng.uniform(0.005, 0.05))),
                   small(types[0]) if zp else None, rng.integers(0, 256, b.total_bytes, dtype=np.uint8),
                   padded(f32(rng.uniform(0.005, 0.05))), small(types[1]) if zp else None,
                   padded(f32(rng.uniform(0.005, 0.05))), small(types[2]) if zp else None,
                   rng.integers(0, 256, o.total_bytes, dtype=np.uint8)]
        cases.append(oracle.Case(desc, buffers))
    return cases


def test_quantized_add_agrees_with_directml_byte_for_byte(dml):
    """ELEMENT_WISE_QUANTIZED_LINEAR_ADD executed by DirectML and by dmlvk on the same buffers: every
    output byte equal up to the last element's, gaps included (_add_cases: every pair of bytes under
    14 parameter sets, 40 random layouts). Past the last element, in the 4-byte word it ends in,
    DirectML writes bytes of its own (named: dmlvk leaves an output's bytes outside its elements as
    they were); that is seen and left out."""
    cases = _add_cases(np.random.default_rng(147))
    device = dmlvk.Device()
    wrong, tails = [], 0
    for i, (case, got) in enumerate(zip(cases, dml.run(cases))):
        assert got.accepted and got.exec_hr == 0, (i, got.create_hr, got.exec_hr)
        out = dmlvk_output(device, case)
        o = case.desc.output_tensor
        end = sum((n - 1) * s for n, s in zip(o.sizes, o.effective_strides)) + 1
        if not np.array_equal(out[:end], got.output[:end]):
            wrong.append(f"case {i}: {int((out[:end] != got.output[:end]).sum())} bytes differ")
        tails += not np.array_equal(out[end:], got.output[end:out.size])
    assert not wrong, "\n".join(wrong)
    assert tails > 0            # the named divergence is seen (else its exclusion would hide nothing)


def test_quantized_add_validation_agrees_with_directml(dml):
    """Each of the operator's rules, and descriptions that keep them, accepted or rejected by DirectML
    as by dmlvk (at FL 6_4)."""
    from dmlvk.ops.quantized_add import ElementWiseQuantizedLinearAddDesc as AddDesc
    u8, i8, f32 = DataType.UINT8, DataType.INT8, DataType.FLOAT32
    base = AddDesc.of(TensorDesc(u8, (2, 3, 4, 5)), TensorDesc(u8, (2, 3, 4, 5)))
    names = ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
             "b_zero_point_tensor", "output_scale_tensor", "output_zero_point_tensor", "output_tensor")
    fields = dict(zip(names, base.tensors()))
    changes = [{}, dict(a_zero_point_tensor=None, b_zero_point_tensor=None, output_zero_point_tensor=None),
               dict(a_scale_tensor=None), dict(output_scale_tensor=None), dict(a_tensor=TensorDesc(f32, (2, 3, 4, 5))),
               dict(output_tensor=TensorDesc(DataType.UINT16, (2, 3, 4, 5))),
               dict(b_scale_tensor=TensorDesc(DataType.FLOAT16, (1, 1, 1, 1))),
               dict(a_zero_point_tensor=TensorDesc(i8, (1, 1, 1, 1))),
               dict(output_scale_tensor=TensorDesc(f32, (1, 1, 1, 2))), dict(b_zero_point_tensor=TensorDesc(u8, (1, 1, 1))),
               dict(b_tensor=TensorDesc(u8, (2, 3, 4, 1))), dict(output_tensor=TensorDesc(u8, (2, 3, 4, 6))),
               dict(output_tensor=TensorDesc(u8, (2, 3, 4, 5), (0, 20, 5, 1))),
               dict(a_tensor=TensorDesc(i8, (2, 3, 4, 5)), a_zero_point_tensor=TensorDesc(i8, (1, 1, 1, 1))),
               dict(b_tensor=TensorDesc(u8, (2, 3, 4, 5), (0, 0, 0, 0))),
               dict(a_scale_tensor=TensorDesc(f32, (1, 1, 1, 1), (0, 0, 0, 0)))]
    descs = [AddDesc(**dict(fields, **c)) for c in changes]
    device = dmlvk.Device()
    wrong = verdicts_differ(device, descs, dml.run([oracle.Case(d) for d in descs]),
                            changes)
    assert not wrong, "\n".join(wrong)


def _join_tile_cases(rng):
    """JOIN (1-3 inputs, a random axis) and TILE (random repeats) of every type each supports, ranks
    1-8, inputs and outputs packed or permuted with gaps (TILE's inputs broadcast too), with random
    bytes in every buffer."""
    from dmlvk.ops.join_tile import join_types, tile_types

    def permuted_strides(rng, sizes, gaps):
        out, acc = [0] * len(sizes), 1
        for d in (rng.permutation(len(sizes)) if gaps else range(len(sizes) - 1, -1, -1)):
            out[d] = acc
            acc *= sizes[d] + int(gaps and rng.integers(0, 2))
        return tuple(out)

    cases = []
    for k in range(48):
        rank = 1 + k % 8
        types = sorted(join_types(FeatureLevel.FL_6_4) if k % 2 == 0 else tile_types(FeatureLevel.FL_6_4))
        dt = types[int(rng.integers(0, len(types)))]
        base = [int(s) for s in rng.integers(1, 4, rank)]
        if k % 2 == 0:
            axis = int(rng.integers(0, rank))
            shapes = []
            for _ in range(int(rng.integers(1, 4))):
                s = list(base)
                s[axis] = int(rng.integers(1, 4))
                shapes.append(s)
            ins = [TensorDesc(dt, s, permuted_strides(rng, s, k % 4 == 0)) for s in shapes]
            out_sizes = list(base)
            out_sizes[axis] = sum(s[axis] for s in shapes)
            out = TensorDesc(dt, out_sizes, permuted_strides(rng, out_sizes, k % 4 == 2))
            desc = dmlvk.JoinDesc(ins, out, axis)
        else:
            repeats = [int(r) for r in rng.integers(1, 3, rank)]
            ins = [TensorDesc(dt, base, permuted_strides(rng, base, k % 4 == 1))]
            tiled = [s * r for s, r in zip(base, repeats)]
            out = TensorDesc(dt, tiled, permuted_strides(rng, tiled, k % 4 == 3))
            desc = dmlvk.TileDesc(ins[0], out, repeats)
        buffers = [rng.integers(0, 256, max(t.total_bytes, 4), dtype=np.uint8) for t in ins + [out]]
        cases.append(oracle.Case(desc, buffers))
    return cases


def test_join_and_tile_agree_with_directml_byte_for_byte(dml):
    """JOIN and TILE executed by DirectML and by dmlvk on the same buffers (_join_tile_cases): every
    output byte equal, gaps included."""
    cases = _join_tile_cases(np.random.default_rng(63))
    device = dmlvk.Device()
    wrong = []
    for i, (case, got) in enumerate(zip(cases, dml.run(cases))):
        assert got.accepted and got.exec_hr == 0, (i, type(case.desc).__name__, got.create_hr, got.exec_hr)
        out = dmlvk_output(device, case)
        if not np.array_equal(out, got.output[:out.size]):
            wrong.append(f"case {i} ({type(case.desc).__name__}): {int((out != got.output[:out.size]).sum())} "
                         f"bytes differ")
    assert not wrong, "\n".join(wrong)


def test_join_and_tile_validation_agrees_with_directml(dml):
    """Each of JOIN's and TILE's rules broken once, and descriptions that keep them, accepted or
    rejected by DirectML as by dmlvk (at FL 6_4)."""
    f32, u8, f64 = DataType.FLOAT32, DataType.UINT8, DataType.FLOAT64
    t = lambda sizes, dt=f32, strides=None: TensorDesc(dt, sizes, strides)
    descs = [dmlvk.JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3, 4))], t((1, 7, 3, 4)), 1),
             dmlvk.JoinDesc([t((1, 2, 3, 4), u8), t((1, 5, 3, 4))], t((1, 7, 3, 4)), 1),
             dmlvk.JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3))], t((1, 7, 3, 4)), 1),
             dmlvk.JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3, 4))], t((1, 7, 3, 4)), 4),
             dmlvk.JoinDesc([t((1, 2, 3, 4)), t((1, 5, 2, 4))], t((1, 7, 3, 4)), 1),
             dmlvk.JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3, 4))], t((1, 8, 3, 4)), 1),
             dmlvk.JoinDesc([t((2, 3), f64)], t((2, 3), f64), 0),
             dmlvk.JoinDesc([t((5,))], t((5,)), 0),
             dmlvk.JoinDesc([t((1, 2, 3, 4))], t((1, 2, 3, 4), strides=(0, 12, 4, 1)), 1),
             dmlvk.TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 9)), (1, 1, 3, 3)),
             dmlvk.TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 9), u8), (1, 1, 3, 3)),
             dmlvk.TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 9)), (1, 3, 3)),
             dmlvk.TileDesc(t((1, 1, 2, 3)), t((1, 1, 2, 9)), (1, 1, 0, 3)),
             dmlvk.TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 6)), (1, 1, 3, 3)),
             dmlvk.TileDesc(t((2, 3), f64), t((2, 3), f64), (1, 1)),
             dmlvk.TileDesc(t((2, 3), DataType.INT64), t((4, 3), DataType.INT64), (2, 1)),
             dmlvk.TileDesc(t((2, 3)), t((2, 6)), (1, 2))]
    device = dmlvk.Device()
    wrong = verdicts_differ(device, descs, dml.run([oracle.Case(d) for d in descs]))
    assert not wrong, "\n".join(wrong)


def test_activations_agree_with_directml(dml):
    """ACTIVATION_LEAKY_RELU over every float16 bit pattern (five alphas: rounding, overflow, underflow,
    negative) and random float32 values, ACTIVATION_PARAMETERIZED_RELU over every float16 pattern with
    random slopes and on INT8/INT16/INT32 extremes: every output byte DirectML's (its float16 results
    round toward zero, NaN payloads included); and one rule of each broken, rejected alike."""
    L, P = dmlvk.ActivationLeakyReluDesc, dmlvk.ActivationParameterizedReluDesc
    rng = np.random.default_rng(42)
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    f16, f32 = DataType.FLOAT16, DataType.FLOAT32
    cases = [oracle.Case(L.of(TensorDesc(f16, h.shape), a), [padded(h), np.zeros(131072, np.uint8)])
             for a in (0.01, 0.2, 1e-5, 3.7, -1.5)]
    x = (rng.standard_normal(4096) * 1e3).astype(np.float32)
    cases.append(oracle.Case(L.of(TensorDesc(f32, x.shape), 0.2), [padded(x), np.zeros(x.nbytes, np.uint8)]))
    slope = rng.standard_normal(65536).astype(np.float16)
    cases.append(oracle.Case(P.of(TensorDesc(f16, h.shape), TensorDesc(f16, h.shape)),
                             [padded(h), padded(slope), np.zeros(131072, np.uint8)]))
    for dt in (np.int8, np.int16, np.int32):
        info = np.iinfo(dt)
        xi, si = (rng.integers(info.min, info.max, 4096).astype(dt) for _ in range(2))
        t = DataType.from_numpy(np.dtype(dt))
        cases.append(oracle.Case(P.of(TensorDesc(t, (4096,)), TensorDesc(t, (4096,))),
                                 [padded(xi), padded(si), np.zeros(xi.nbytes, np.uint8)]))
    device = dmlvk.Device()
    for i, (case, got) in enumerate(zip(cases, dml.run(cases))):
        assert got.accepted and got.exec_hr == 0, i
        out = dmlvk_output(device, case)
        assert np.array_equal(out, got.output[:out.size]), i
    t = lambda sizes, dt=f32: TensorDesc(dt, sizes)
    bad = [L(t((1, 2, 3, 4)), t((1, 2, 3, 4), f16), 0.1), L(t((1, 2, 3, 4)), t((1, 2, 3, 5)), 0.1),
           L(t((1, 2, 3, 4), DataType.INT8), t((1, 2, 3, 4), DataType.INT8), 0.1),
           P(t((1, 2, 3, 4)), t((1, 2, 1, 1)), t((1, 2, 3, 4))), P(t((2, 3), DataType.UINT8), t((2, 3), DataType.UINT8),
                                                                  t((2, 3), DataType.UINT8)),
           L(t((5,)), t((5,)), 0.1), P(t((2, 3), DataType.INT16), t((2, 3), DataType.INT16), t((2, 3), DataType.INT16))]
    wrong = verdicts_differ(device, bad, dml.run([oracle.Case(d) for d in bad]))
    assert not wrong, "\n".join(wrong)


def test_resample_agrees_with_directml_byte_for_byte(dml):
    """RESAMPLE to RESAMPLE3 executed by DirectML and by dmlvk on the same buffers: every version and
    type (float32, float16, int8, uint8), ranks 1-4, packed and permuted layouts with gaps, random
    scales; nearest with any offsets, linear with the offsets onnxruntime gives it (input 0 or 0.5,
    output 0 or -0.5; docs/directml.md names what differs elsewhere): every output byte equal, gaps
    included."""
    from test_resample import NUMPY, _values, random_case
    rng = np.random.default_rng(96)
    cases = []
    for k in range(160):
        dt = [DataType.FLOAT32, DataType.FLOAT16, DataType.UINT8, DataType.INT8][k % 4]
        linear = k % 2 == 1
        desc = random_case(rng, dt, k // 4 % 4, int(linear), offsets=(0.5, 0.0) if linear else (0.5, 0.0, 1.0, -0.5, None))
        if linear:
            n = len(desc.scales)
            desc = type(desc)(*[(tuple(rng.choice([-0.5, 0.0], n)) if f == "output_pixel_offsets" else getattr(desc, f))
                                for f in desc.__dataclass_fields__])
        inp, out = desc.input_tensor, desc.output_tensor
        x = rng.integers(0, 256, max(inp.total_bytes, 4), dtype=np.uint8)
        if dt in (DataType.FLOAT32, DataType.FLOAT16):          # finite values (NaN payloads aside)
            span = inp.total_bytes // inp.element_bytes
            x[:span * inp.element_bytes] = _values(rng, dt, span).view(np.uint8)
        cases.append(oracle.Case(desc, [x, rng.integers(0, 256, max(out.total_bytes, 4), dtype=np.uint8)]))
    wrong = outputs_differ(dml, cases)
    assert not wrong, "\n".join(wrong[:5])


def test_resample_validation_agrees_with_directml(dml):
    """Each of RESAMPLE's rules broken once (at FL 6_4), and descriptions that keep them: accepted or
    rejected by DirectML as by dmlvk; scales of 0, below 0 and NaN rejected, an infinite one taken."""
    f32, i32 = DataType.FLOAT32, DataType.INT32
    t = lambda sizes, dt=f32: TensorDesc(dt, sizes)
    R, R1, R2, R3 = dmlvk.ResampleDesc, dmlvk.Resample1Desc, dmlvk.Resample2Desc, dmlvk.Resample3Desc
    half, corner = (0.5, 0.5), (-0.5, -0.5)
    descs = [R(t((1, 1, 2, 3)), t((1, 1, 4, 6)), 0, (1, 1, 2, 2)), R(t((2, 3)), t((4, 6)), 1, (2, 2)),
             R(t((2, 3)), t((4, 6)), 0, (2,)), R(t((2, 3)), t((4, 6), DataType.FLOAT16), 0, (2, 2)),
             R(t((2, 3), i32), t((4, 6), i32), 0, (2, 2)), R(t((1, 1, 1, 2, 3)), t((1, 1, 1, 4, 6)), 0, (1, 1, 1, 2, 2)),
             R1(t((2, 3)), t((4, 6)), 0, (2, 2), half, corner), R1(t((2, 3)), t((4, 6)), 2, (2, 2), half, corner),
             R1(t((2, 3)), t((4, 6, 1)), 0, (2, 2), half, corner),
             R2(t((2, 3)), t((4, 6)), 0, 1, (2, 2), half, corner), R2(t((2, 3)), t((4, 6)), 0, 2, (2, 2), half, corner),
             R2(t((2, 3), DataType.UINT8), t((9, 1), DataType.UINT8), 1, 0, (2, 2), half, corner),
             R3(t((2, 3)), t((4, 6)), 1, 0, (2, 2), half, corner, True)]
    descs += [R2(t((2, 3)), t((4, 6)), 0, 0, (2, s), half, corner) for s in (0.0, -1.0, float("nan"), float("inf"))]
    device = dmlvk.Device()
    wrong = verdicts_differ(device, descs, dml.run([oracle.Case(d) for d in descs]))
    assert not wrong, "\n".join(wrong)


def test_elementwise_agrees_with_directml_byte_for_byte(dml):
    """ELEMENT_WISE_ADD, MULTIPLY and CLIP executed by DirectML and by dmlvk on the same buffers: every
    type DirectML runs under Wine (float16, the 8- to 32-bit integers, 64-bit ADD and CLIP; its float32
    ADD and MULTIPLY and 64-bit MULTIPLY fail to execute there, E_INVALIDARG after a successful
    CreateOperator), ranks 1-8, B broadcast by strides of 0, permuted outputs with gaps, CLIP with and
    without a ScaleBias: every output byte equal, gaps included."""
    from test_elementwise import TYPES, _fill, case
    rng = np.random.default_rng(24)
    cases = []
    for k in range(150):
        dt = TYPES[k % len(TYPES)]
        kind = ["add", "multiply", "clip"][k // len(TYPES) % 3]
        if (dt == DataType.FLOAT32 and kind != "clip") or (dt in (DataType.INT64, DataType.UINT64) and kind == "multiply"):
            continue
        desc = case(rng, dt, kind)
        ins = [t for t in (getattr(desc, n, None) for n in ("a_tensor", "b_tensor", "input_tensor")) if t is not None]
        out = desc.output_tensor
        cases.append(oracle.Case(desc, [_fill(rng, dt, t) for t in ins]
                                 + [rng.integers(0, 256, max(out.total_bytes, 4), dtype=np.uint8)]))
    wrong = outputs_differ(dml, cases)
    assert len(cases) > 100 and not wrong, "\n".join(wrong[:5])


def test_elementwise_validation_agrees_with_directml(dml):
    """ADD, MULTIPLY and CLIP with each rule broken once, and keepers (at FL 6_4): accepted or rejected
    by DirectML as by dmlvk; a ScaleBias other than (1, 0) on 64-bit integers rejected."""
    f32, f16 = DataType.FLOAT32, DataType.FLOAT16
    t = lambda sizes, dt=f32, strides=None: TensorDesc(dt, sizes, strides)
    A, M, C = dmlvk.ElementWiseAddDesc, dmlvk.ElementWiseMultiplyDesc, dmlvk.ElementWiseClipDesc
    descs = [A(t((1, 2, 3)), t((1, 2, 3)), t((1, 2, 3))), A(t((1, 2, 3)), t((1, 2, 3), f16), t((1, 2, 3))),
             A(t((1, 2, 3)), t((1, 1, 3), strides=(0, 0, 1)), t((1, 2, 3))),
             A(t((1, 2, 3)), t((1, 2, 3), strides=(0, 0, 1)), t((1, 2, 3))),
             M(t((2, 3), DataType.INT64), t((2, 3), DataType.INT64), t((2, 3), DataType.INT64)),
             M(t((2, 3), DataType.FLOAT64), t((2, 3), DataType.FLOAT64), t((2, 3), DataType.FLOAT64)),
             M(t((2, 3)), t((2, 3)), t((3, 2))), C(t((2, 3)), t((2, 3)), None, 5.0, 1.0),
             C(t((2, 3), DataType.INT8), t((2, 3), DataType.INT8), (2.0, 1.0), 0.0, 5.0)]
    descs += [C(t((2, 3), dt), t((2, 3), dt), sb, 0.0, 5.0) for dt in (DataType.INT64, DataType.UINT64)
              for sb in (None, (1.0, 0.0), (2.0, 1.0))]
    device = dmlvk.Device()
    wrong = verdicts_differ(device, descs, dml.run([oracle.Case(d) for d in descs]))
    assert not wrong, "\n".join(wrong)
