"""ELEMENT_WISE_QUANTIZED_LINEAR_ADD (dmlvk/ops/quantized_add.py): DirectML's validation rules, the
device's results against dmlvk.reference's element-by-element formula (every layout, rank, type and
both kernels), the table of onnxruntime's arithmetic against the installed onnxruntime's QLinearAdd on
every pair of bytes, and QDQ Add in the ONNX runner against onnxruntime on whole models."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import dmlvk
from dmlvk import DataType, FeatureLevel, TensorDesc, ValidationError, packed_strides, reference
from dmlvk.ops.quantized_add import ElementWiseQuantizedLinearAddDesc as AddDesc
from dmlvk.ops.quantized_add import directml_table, onnxruntime_mul_table, onnxruntime_table
from harness import element_mask, padded, strided_view

U8, I8, F32 = DataType.UINT8, DataType.INT8, DataType.FLOAT32


def _desc(rank=4, a=U8, b=U8, out=U8, **changes):
    d = AddDesc.of(TensorDesc(a, (2, 3, 4, 5)[:rank] if rank <= 4 else (2, 1, 3, 1, 2, 1, 2, 1)[:rank]),
                   TensorDesc(b, (2, 3, 4, 5)[:rank] if rank <= 4 else (2, 1, 3, 1, 2, 1, 2, 1)[:rank]),
                   output_data_type=out)
    fields = dict(zip(("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
                       "b_zero_point_tensor", "output_scale_tensor", "output_zero_point_tensor", "output_tensor"),
                      d.tensors()))
    fields.update(changes)
    return AddDesc(**fields)


@pytest.mark.parametrize("changes,match", [
    ({}, None),
    (dict(a_zero_point_tensor=None, b_zero_point_tensor=None, output_zero_point_tensor=None), None),
    (dict(a_scale_tensor=None), "'AScale' is required"),
    (dict(output_scale_tensor=None), "'OutputScale' is required"),
    (dict(a_tensor=TensorDesc(DataType.FLOAT32, (2, 3, 4, 5))), "'A' has DataType DML_TENSOR_DATA_TYPE_FLOAT32"),
    (dict(b_scale_tensor=TensorDesc(DataType.FLOAT16, (1, 1, 1, 1))), "'BScale' has DataType"),
    (dict(a_zero_point_tensor=TensorDesc(I8, (1, 1, 1, 1))), "Mismatched tensor data types"),
    (dict(output_scale_tensor=TensorDesc(F32, (1, 1, 1, 2))), "'OutputScale' has Sizes .* exactly 1 element"),
    (dict(b_zero_point_tensor=TensorDesc(U8, (1, 1, 1))), "'BZeroPoint' has DimensionCount 3"),
    (dict(b_tensor=TensorDesc(U8, (2, 3, 4, 1))), "'B' has Sizes"),
    (dict(output_tensor=TensorDesc(U8, (2, 3, 4, 6))), "'Output' has Sizes"),
    (dict(output_tensor=TensorDesc(U8, (2, 3, 4, 5), (0, 20, 5, 1))), "'Output' has Strides"),
], ids=["valid", "no-zero-points", "no-a-scale", "no-output-scale", "float-a", "half-scale", "zp-type",
        "two-scales", "zp-rank", "b-sizes", "output-sizes", "overlapping-output"])
def test_validation_follows_directml(changes, match):
    d = _desc(**changes)
    if match is None:
        d.validate(FeatureLevel.FL_6_4)
        return
    with pytest.raises(ValidationError, match=match):
        d.validate(FeatureLevel.FL_6_4)


def test_validation_feature_level_and_types():
    with pytest.raises(ValidationError, match="requires DML_FEATURE_LEVEL_4_0"):
        _desc().validate(FeatureLevel.FL_3_1)
    _desc().validate(FeatureLevel.FL_4_0)
    _desc(a=I8, b=U8, out=I8).validate(FeatureLevel.FL_6_4)     # A, B and the output may differ in sign
    _desc(rank=8).validate(FeatureLevel.FL_6_4)
    _desc(rank=1).validate(FeatureLevel.FL_6_4)
    with pytest.raises(TypeError):
        AddDesc.of(np.zeros(3), TensorDesc(U8, (3,)))



def _case(rng, rank, dt_a, dt_b, dt_out, kind):
    """(desc, host bindings, output bytes, the output's logical view, the expected values)."""
    sizes = tuple(int(s) for s in rng.integers(1, 5, rank))
    npt = lambda t: np.dtype(t.numpy_dtype)

    def strides(broadcast: bool, gaps: bool):
        out, acc = [0] * rank, 1
        for k in rng.permutation(rank) if gaps else range(rank - 1, -1, -1):
            out[k] = 0 if broadcast and rng.integers(0, 3) == 0 else acc
            acc *= sizes[k] + int(gaps and rng.integers(0, 2))
        return tuple(out)

    a_st = strides(kind == "broadcast", kind != "packed")
    b_st = strides(kind == "broadcast", kind != "packed")
    o_st = strides(False, kind == "gapped") if kind == "gapped" else None
    a_desc, b_desc, o_desc = TensorDesc(dt_a, sizes, a_st), TensorDesc(dt_b, sizes, b_st), TensorDesc(dt_out, sizes, o_st)
    zps = rng.integers(0, 2) == 1
    full = lambda dt: np.iinfo(npt(dt))
    a_buf = rng.integers(0, 256, a_desc.total_bytes, dtype=np.uint8)
    b_buf = rng.integers(0, 256, b_desc.total_bytes, dtype=np.uint8)
    o_buf = rng.integers(0, 256, o_desc.total_bytes, dtype=np.uint8)
    scales = [np.float32(rng.uniform(0.003, 0.06)) for _ in range(3)]
    zp = [np.array(rng.integers(full(t).min, full(t).max + 1), npt(t)) if zps else None for t in (dt_a, dt_b, dt_out)]
    one = lambda dt: TensorDesc(dt, (1,) * rank)
    desc = AddDesc(a_desc, one(F32), one(dt_a) if zps else None, b_desc, one(F32), one(dt_b) if zps else None,
                   one(F32), one(dt_out) if zps else None, o_desc)
    inputs = [a_buf, padded(scales[0]), None if zp[0] is None else padded(zp[0]), b_buf, padded(scales[1]),
              None if zp[1] is None else padded(zp[1]), padded(scales[2]), None if zp[2] is None else padded(zp[2])]
    a = strided_view(a_buf, npt(dt_a), sizes, a_desc.effective_strides)
    b = strided_view(b_buf, npt(dt_b), sizes, b_desc.effective_strides)
    want = reference.quantized_linear_add(a, scales[0], zp[0], b, scales[1], zp[1], scales[2], zp[2], npt(dt_out))
    return desc, inputs, o_buf, want


@pytest.mark.parametrize("kind", ["packed", "broadcast", "permuted", "gapped"])
@pytest.mark.parametrize("types", [(U8, U8, U8), (I8, I8, I8), (U8, I8, I8), (I8, U8, U8)], ids=lambda t: "-".join(
    x.name.lower() for x in t))
def test_results_are_the_reference(device, rng, kind, types):
    """Ranks 1 to 8, inputs packed, broadcast (0 strides), permuted with gaps; the output packed
    (add.words, and add.elements forced) or gapped (add.elements, the gaps' bytes kept): every element
    equal to dmlvk.reference's formula."""
    for rank in range(1, 9):
        desc, inputs, o_buf, want = _case(rng, rank, *types, kind)
        o = desc.output_tensor
        packed = tuple(o.effective_strides) == tuple(packed_strides(o.sizes))
        forced = ("add.words", "add.elements") if packed else ("add.elements",)
        for force in forced:
            out = o_buf.copy()
            op = device.create_operator(desc, force=force)
            op.execute(inputs, [out])
            o = desc.output_tensor
            got = strided_view(out, np.dtype(o.data_type.numpy_dtype), o.sizes, o.effective_strides)
            assert np.array_equal(got, want), (rank, force)
            gaps = ~element_mask(out.size, 1, o.sizes, o.effective_strides)
            assert np.array_equal(out[gaps], o_buf[gaps]), (rank, force, "the bytes between elements")
        o = desc.output_tensor
        packed = tuple(o.effective_strides) == tuple(packed_strides(o.sizes))
        assert device.create_operator(desc).kernels[0].variant == ("add.words" if packed else "add.elements")


def test_bound_buffers_and_changed_scales(device, rng):
    """Inputs bound as dmlvk.Buffers: the table follows the scale bound at each execution (a Buffer
    written again, or another one), also through a command list."""
    desc = AddDesc.of(TensorDesc(U8, (3, 37)), TensorDesc(U8, (3, 37)))
    op = device.create_operator(desc)
    a, b = rng.integers(0, 256, (2, 3, 37), dtype=np.uint8)
    bufs = [device.upload(padded(v)) for v in (a, np.float32(0.02), np.uint8(7), b, np.float32(0.03), np.uint8(200),
                                             np.float32(0.05), np.uint8(100))]
    out = dmlvk.Buffer(device, 112)
    for scale in (0.05, 0.011):
        bufs[6].write(padded(np.float32(scale)))
        op.execute(bufs, [out])
        want = reference.quantized_linear_add(a, 0.02, 7, b, 0.03, 200, np.float32(scale), 100, np.uint8)
        assert np.array_equal(out.read()[:111].reshape(3, 37), want)
    commands = dmlvk.CommandList(device)
    commands.record(op, bufs, [out])
    bufs[6].write(padded(np.float32(0.07)))
    commands.execute()
    want = reference.quantized_linear_add(a, 0.02, 7, b, 0.03, 200, np.float32(0.07), 100, np.uint8)
    assert np.array_equal(out.read()[:111].reshape(3, 37), want)



@pytest.mark.host
@pytest.mark.parametrize("types", [(U8, U8, U8), (I8, I8, I8), (U8, I8, U8)], ids=["u8", "s8", "mixed"])
def test_directml_table_is_the_reference(rng, types):
    """The table the operator looks up, against dmlvk.reference element by element: every pair of
    bytes, random parameters (scales over four decades), including a zero output scale (NaN and
    infinite quotients: saturation, and NaN as the zero point)."""
    npt = [np.dtype(t.numpy_dtype) for t in types]
    vals = [np.arange(256, dtype=np.uint8).view(t) for t in npt[:2]]
    a, b = np.repeat(vals[0], 256), np.tile(vals[1], 256)
    for trial in range(30):
        scales = [np.float32(10 ** rng.uniform(-4, 0)) for _ in range(3)]
        if trial == 0:
            scales[2] = np.float32(0)
        zps = [int(rng.integers(np.iinfo(t).min, np.iinfo(t).max + 1)) for t in npt]
        table = directml_table(scales[0], zps[0], scales[1], zps[1], scales[2], zps[2], *types).view(npt[2])
        want = reference.quantized_linear_add(a, scales[0], zps[0], b, scales[1], zps[1], scales[2], zps[2], npt[2])
        assert np.array_equal(table, want), trial


def _ort_qlinear_add(dt, a_shape, b_shape, op="QLinearAdd"):
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
    names = ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"]
    shapes = dict(a=a_shape, b=b_shape)
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT if k.startswith("s") else t, shapes.get(k, []))
           for k in names]
    g = helper.make_graph([helper.make_node(op, names, ["y"], domain="com.microsoft")], "g", ins,
                          [helper.make_tensor_value_info("y", t, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def _avx2_fma() -> bool:
    flags = open("/proc/cpuinfo").read().split() if __import__("sys").platform == "linux" else []
    return "avx2" in flags and "fma" in flags


@pytest.mark.host
@pytest.mark.skipif(not _avx2_fma(), reason="onnxruntime's QLinearAdd follows another arithmetic without AVX2 "
                                            "and FMA (SSE2, NEON); dmlvk follows the AVX2 one")
@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_onnxruntime_table_is_onnxruntimes_qlinear_add(rng, dt):
    """The table of onnxruntime's arithmetic against the installed onnxruntime's QLinearAdd on every
    pair of bytes (both inputs spans), and against its scalar loops (B one value; A one value, the
    roles swapped), random parameters; at the spec's tie probes, its answers for single values and for
    spans (which differ: -112 and -113 for the first), where DirectML's formula gives -113, 101, 255."""
    t = DataType.from_numpy(np.dtype(dt))
    vals = np.arange(256, dtype=np.uint8).view(dt)
    span, scalar_b, scalar_a = (_ort_qlinear_add(dt, s, r) for s, r in (([256, 256], [256, 256]),
                                                                         ([256], [1]), ([1], [256])))
    for trial in range(25):
        sa, sb, sc = (np.array(rng.uniform(0.002, 0.08), np.float32) for _ in range(3))
        za, zb, zc = (np.array(rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1), dt) for _ in range(3))
        feeds = dict(sa=sa, za=za, sb=sb, zb=zb, sc=sc, zc=zc)
        table = onnxruntime_table(sa, za, sb, zb, sc, zc, t, t, t).view(dt).reshape(256, 256)
        got = span.run(None, dict(feeds, a=np.repeat(vals, 256).reshape(256, 256), b=np.tile(vals, (256, 1))))[0]
        assert np.array_equal(table, got), trial
        table_b = onnxruntime_table(sa, za, sb, zb, sc, zc, t, t, t, scalar="B").view(dt).reshape(256, 256)
        table_a = onnxruntime_table(sa, za, sb, zb, sc, zc, t, t, t, scalar="A").view(dt).reshape(256, 256)
        for j in range(256) if trial < 3 else [int(rng.integers(0, 256))]:    # every scalar, then one a trial
            assert np.array_equal(table_b[:, j], scalar_b.run(None, dict(feeds, a=vals, b=vals[j:j + 1]))[0])
            assert np.array_equal(table_a[j, :], scalar_a.run(None, dict(feeds, a=vals[j:j + 1], b=vals))[0])
    probes = {np.int8: [(-114, -122, 0.02534690499305725, -106, 0.035809919238090515, -120, 0.0365859717130661, -105,
                         -113)],
              np.uint8: [(245, 28, 0.0076298583298921585, 81, 0.01888086646795273, 103, 0.03661518171429634, 105, 101),
                         (140, 126, 0.024584803730249405, 20, 0.019817184656858444, 42, 0.019595839083194733, 19,
                          255)]}[dt]
    one, many = _ort_qlinear_add(dt, [1], [1]), _ort_qlinear_add(dt, [64], [64])
    for a, b, sa, za, sb, zb, sc, zc, directml_answer in probes:
        ia, ib = (int(np.array(v, dt).view(np.uint8)) for v in (a, b))
        args = (np.float32(sa), za, np.float32(sb), zb, np.float32(sc), zc, t, t, t)
        feeds = dict(sa=np.array(sa, np.float32), za=np.array(za, dt), sb=np.array(sb, np.float32),
                     zb=np.array(zb, dt), sc=np.array(sc, np.float32), zc=np.array(zc, dt))
        # two single values take onnxruntime's scalar-A loop, spans its vector loop: at ties they differ
        got_one = one.run(None, dict(feeds, a=np.array([a], dt), b=np.array([b], dt)))[0][0]
        got_many = many.run(None, dict(feeds, a=np.full(64, a, dt), b=np.full(64, b, dt)))[0][0]
        assert onnxruntime_table(*args, scalar="A").view(dt)[256 * ia + ib] == got_one
        assert onnxruntime_table(*args).view(dt)[256 * ia + ib] == got_many
        assert directml_table(*args).view(dt)[256 * ia + ib] == directml_answer


@pytest.mark.host
@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_onnxruntime_mul_table_is_onnxruntimes_qlinear_mul(rng, dt):
    """The QLinearMul table against the installed onnxruntime on every pair of bytes (both inputs
    spans) and every scalar B, random parameters."""
    t = DataType.from_numpy(np.dtype(dt))
    vals = np.arange(256, dtype=np.uint8).view(dt)
    span, scalar_b = _ort_qlinear_add(dt, [256, 256], [256, 256], "QLinearMul"), _ort_qlinear_add(dt, [256], [1], "QLinearMul")
    for trial in range(25):
        sa, sb, sc = (np.array(rng.uniform(0.002, 0.08), np.float32) for _ in range(3))
        za, zb, zc = (np.array(rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1), dt) for _ in range(3))
        feeds = dict(sa=sa, za=za, sb=sb, zb=zb, sc=sc, zc=zc)
        table = onnxruntime_mul_table(sa, za, sb, zb, sc, zc, t, t, t).view(dt).reshape(256, 256)
        got = span.run(None, dict(feeds, a=np.repeat(vals, 256).reshape(256, 256), b=np.tile(vals, (256, 1))))[0]
        assert np.array_equal(table, got), trial
        for j in range(256) if trial < 2 else [int(rng.integers(0, 256))]:
            assert np.array_equal(table[:, j], scalar_b.run(None, dict(feeds, a=vals, b=vals[j:j + 1]))[0])


# ---- the ONNX runner ---------------------------------------------------------------------------

def _run_both(model, x, device):
    from dmlvk.onnx import InferenceSession
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    session = InferenceSession(model, device=device)
    got = session.run(None, {"x": x})
    return session, got, want


def test_quicksrnet_runs_like_onnxruntime(device):
    """A QuickSRNet-style model (convolutions, the anchor's Add, DepthToSpace) quantized by
    quantize_static in QDQ form: its Add runs as QLinearAdd on the device, every output element
    equal to onnxruntime's."""
    from dmlvk_lab import onnx_models as models
    model = models.quantize(models.quicksrnet(2, 16, 3), models.calibration_frames(), quant_format="QDQ")
    x = np.concatenate(models.calibration_frames(2, 13, 20, seed=5))
    session, got, want = _run_both(model, x, device)
    assert "QLinearAdd" in session.nodes and "Add" not in session.nodes, session.nodes
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


def _add_model(b_value=None, b_first=False, same=False, dt=np.uint8, b_shape=None, op="Add"):
    """x -> QuantizeLinear -> DequantizeLinear -> Add (with a constant's DequantizeLinear, or x itself)
    -> QuantizeLinear -> DequantizeLinear -> y, as quantize_static writes a QDQ Add."""
    c = [numpy_helper.from_array(v, k) for k, v in (
        ("xs", np.float32(0.0173)), ("xz", np.array(100 if dt == np.uint8 else -20, dt)),
        ("cs", np.float32(0.0091)), ("cz", np.array(30 if dt == np.uint8 else 5, dt)),
        ("ys", np.float32(0.0247)), ("yz", np.array(128 if dt == np.uint8 else 0, dt)))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"])]
    other = "xf"
    if not same:
        c.append(numpy_helper.from_array(np.asarray(b_value, dt).reshape(b_shape or np.shape(b_value)), "bq"))
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "cs", "cz"], ["bf"]))
        other = "bf"
    nodes += [helper.make_node(op, [other, "xf"] if b_first else ["xf", other], ["s"], name="the_add"),
              helper.make_node("QuantizeLinear", ["s", "ys", "yz"], ["sq"]),
              helper.make_node("DequantizeLinear", ["sq", "ys", "yz"], ["y"])]
    g = helper.make_graph(nodes, "add", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], c)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("form", ["tensor", "scalar", "scalar-first", "itself", "int8"])
def test_qdq_add_forms_run_like_onnxruntime(device, rng, form):
    """A QDQ Add of the input and a constant of its shape, a one-value constant (after it and before
    it: onnxruntime's two scalar loops), the input added to itself, and int8: equal to onnxruntime on
    every element, over a range that reaches saturation on both sides."""
    shape = (2, 3, 7, 9)
    dt = np.int8 if form == "int8" else np.uint8
    info = np.iinfo(dt)
    value = {"scalar": [[[[77]]]], "scalar-first": [[[[200]]]]}.get(form, rng.integers(info.min, info.max + 1, shape))
    model = _add_model(value, b_first=form == "scalar-first", same=form == "itself", dt=dt)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    session, got, want = _run_both(model, x, device)
    assert "QLinearAdd" in session.nodes
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("form", ["tensor", "scalar", "per-channel", "itself"])
def test_qdq_mul_forms_run_like_onnxruntime(device, rng, form):
    """A QDQ Mul (RRDB's residual scale, a per-channel constant, the input squared) runs as QLinearMul
    over its table, equal to onnxruntime on every element."""
    shape = (2, 3, 7, 9)
    value = {"scalar": [[[[51]]]], "per-channel": rng.integers(0, 256, (1, 3, 1, 1))}.get(
        form, rng.integers(0, 256, shape))
    model = _add_model(value, same=form == "itself", op="Mul")
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    session, got, want = _run_both(model, x, device)
    assert "QLinearMul" in session.nodes
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_qdq_add_left_unfused_is_named(device, rng):
    """An Add whose output is read in float (no QuantizeLinear after it) is refused at load, named
    with why; a per-channel constant (onnxruntime's mixed broadcast loops) is refused when the shapes
    are known, naming the shapes."""
    from dmlvk.onnx import InferenceSession, UnsupportedModelError
    model = _add_model(rng.integers(0, 256, (1, 3, 1, 1)), b_shape=(1, 3, 1, 1))
    session = InferenceSession(model, device=device, fallback=False)
    with pytest.raises(UnsupportedModelError, match=r"the_add: QLinearAdd of shapes \(2, 3, 4, 4\) and \(1, 3, 1, 1\)"):
        session.run(None, {"x": np.zeros((2, 3, 4, 4), np.float32)})
    bare = _add_model(rng.integers(0, 256, (2, 3)))
    del bare.graph.node[-2:]
    bare.graph.output[0].name = "s"
    with pytest.raises(UnsupportedModelError, match="the_add: Add not in a DequantizeLinear, DequantizeLinear -> Add"):
        InferenceSession(bare, device=device, fallback=False)
