"""Each device-limit guard on the side that matters: capability records made by hand (as the golden
record's are) that sit exactly on a Need's or a clamp's boundary, the kernel chosen or refused there;
where the limit can be imposed on the test device (below its own), the kernels chosen then run and
compared with dmlvk.reference; and the shared-memory formulas against the bytes each kernel's SPIR-V
declares (specialized, counted from its Workgroup variables: an oracle apart from the formulas)."""
import dataclasses
import struct

import numpy as np
import pytest

import dmlvk
from dmlvk import DataType, TensorDesc, reference
from dmlvk.ops import depth_space, quantized_conv
from dmlvk.ops.quantized_conv import shared_memory
from dmlvk.ops.variants import whole_subgroups
from dmlvk.runtime import compiler
from dmlvk.runtime.capabilities import CPU_KERNELS, SUBGROUP_SHUFFLE, Capabilities
from dmlvk.runtime.kernel import VariantChoice
from dmlvk.runtime.vkinfo import CooperativeMatrixType
from harness import padded

U8, F32 = DataType.UINT8, DataType.FLOAT32
TYPES = {np.dtype(np.uint8): U8, np.dtype(np.float32): F32, np.dtype(np.int16): DataType.INT16,
         np.dtype(np.float64): DataType.FLOAT64}


def caps(**kw) -> Capabilities:
    return Capabilities(features=frozenset({SUBGROUP_SHUFFLE, "storageBuffer8BitAccess"}), **kw)


def nhwc(n, c, h, w):
    return TensorDesc(U8, (n, c, h, w), (c * h * w, 1, c * w, c))


# uint8 space-to-depth B = 3, channels-last, 8 channels: the lanes kernel where its workgroups are
# whole subgroups
LANES = dmlvk.SpaceToDepth1Desc(nhwc(1, 8, 6, 96), nhwc(1, 72, 2, 32), 3, 1)
# uint8 depth-to-space B = 4 over 64-wide rows: rows.paired where every subgroup has two lanes or more
PAIRS = dmlvk.DepthToSpace1Desc.of(TensorDesc(U8, (1, 16, 8, 64)), 4, 0)


@pytest.mark.parametrize("local, default, largest, whole", [
    (32, 32, 0, True), (32, 32, 32, True), (32, 32, 64, False), (64, 32, 64, True), (64, 64, 128, False),
    (64, 16, 64, True), (32, 16, 64, False)])
def test_whole_subgroups_are_judged_at_the_largest_subgroup_size(local, default, largest, whole):
    """A device with subgroup size control runs a kernel at any size up to its largest: a workgroup of
    32 is no whole number of subgroups of 64 although the default size is 32."""
    c = caps(subgroup_size=default, min_subgroup_size=min(default, largest) if largest else 0,
             max_subgroup_size=largest)
    assert whole_subgroups(local, c) == whole
    assert (LANES.kernel(c, tuning={"LANES_LOCAL": local}).variant == "nhwc.lanes") == whole
    if not whole:
        with pytest.raises(ValueError, match="whole subgroups"):
            LANES.kernel(c, force="nhwc.lanes", tuning={"LANES_LOCAL": local})


@pytest.mark.parametrize("size, least, paired", [
    (2, 0, True), (2, 2, True), (1, 0, False), (32, 1, False), (32, 2, True), (4, 4, True), (64, 64, True)])
def test_lane_pairs_need_two_lanes_in_every_subgroup(size, least, paired):
    """rows.paired exchanges halves between lanes t and t ^ size / 2: a subgroup of exactly 2 does,
    a device that may run subgroups of 1 (its least size) does not."""
    k = PAIRS.kernel(caps(subgroup_size=size, min_subgroup_size=least, max_subgroup_size=max(size, least)))
    assert (k.variant == "rows.paired") == paired
    if not paired:
        with pytest.raises(ValueError, match="rows.paired (cannot run this description|.*subgroups of 2 invocations or more)"):
            PAIRS.kernel(caps(subgroup_size=size, min_subgroup_size=least), force="rows.paired")


LOCALS = [(table, name, value) for table in (depth_space.TABLE, quantized_conv.TABLE)
          for name, value in table.tuning.items() if name.endswith("_LOCAL")]


@pytest.mark.parametrize("table, name, value", LOCALS, ids=[name for _, name, _ in LOCALS])
def test_a_tables_workgroup_size_is_clamped_just_below_it(table, name, value):
    """A device whose maxComputeWorkGroupInvocations is one below a table's workgroup size gets exactly
    that many; one at the size gets the size; a tuning above the limit is an error."""
    assert table.selection(None)[name] == value                  # no device: the table's own
    assert table.selection(caps(max_workgroup_invocations=value - 1))[name] == value - 1
    assert table.selection(caps(max_workgroup_invocations=value))[name] == value
    assert table.selection(caps(max_workgroup_invocations=value + 1))[name] == value
    with pytest.raises(ValueError, match=f"{name}={value}.*maxComputeWorkGroupInvocations {value - 1}"):
        table.selection(caps(max_workgroup_invocations=value - 1), tuning={name: value})


def test_a_device_wide_choice_keeps_the_numbers_it_names_for_each_table():
    """A device-wide or environment choice (not strict) may name other operators' numbers and variants:
    those are ignored, this table's are kept (a tuning, a variant left out, a workgroup size within
    the limit); a strict choice with the same names is an error."""
    c = caps(max_workgroup_invocations=1024)
    for table, name, value in LOCALS:
        other = next(n for t, n, _ in LOCALS if t is not table)
        left_out = next(v.name for v in table if table.owns(v.name) and not v.requires)
        choice = VariantChoice(None, {name: value // 2, other: 16, left_out: False, "no.such.variant": False})
        sel = table.chosen_by(c, choice)
        assert sel[name] == value // 2 and left_out in sel.off and not sel.may(left_out), (table.operator, name)
        assert all(sel[n] == v for n, v in table.tuning.items() if n != name)
        with pytest.raises(ValueError, match="no tuning number"):
            table.chosen_by(c, dataclasses.replace(choice, strict=True))
        forced = table.chosen_by(c, VariantChoice(left_out, {name: value // 2}))
        assert forced.force == left_out and forced[name] == value // 2
        assert table.chosen_by(c, VariantChoice("no.such.variant")).force is None


def limited(device, **limits) -> dmlvk.Device:
    """The test device with smaller limits imposed (a device of its own: kernels chosen afresh)."""
    dev = dmlvk.Device(device.index)
    dev.capabilities = dataclasses.replace(dev.capabilities, **limits)
    return dev


@pytest.mark.parametrize("most", [255, 128, 127, 63])
def test_every_operator_runs_exactly_just_below_the_workgroup_sizes(device, rng, most):
    """Workgroup limits one below the tables' sizes (256, 128, 64), imposed on the test device: every
    kernel chosen keeps them, and depth/space, the convolution, the quantized add, JOIN, TILE and the
    activations give dmlvk.reference's bytes. Below Vulkan's least maxComputeWorkGroupInvocations
    (128), which no device has, an operator may instead be refused, by a ValueError that says so."""
    dev = limited(device, max_workgroup_invocations=most)
    try:
        _run_everything(dev, rng, most)
    except ValueError as e:
        assert most < 128 and ("maxComputeWorkGroupInvocations" in str(e) or "within this device's limits" in str(e)), e


def _run_everything(dev, rng, most):
    for i, (d2s, order) in enumerate([(True, "DCR"), (True, "CRD"), (False, "DCR"), (False, "CRD")]):
        dt = [np.uint8, np.float32, np.int16, np.float64][i]
        b = 2 + i % 3
        x = rng.integers(0, 100, (1, 4 * b * b, 5, 24) if d2s else (2, 4, 5 * b, 8 * b)).astype(dt)
        if d2s:
            got, want = dmlvk.depth_to_space(x, b, order, device=dev), reference.depth_to_space(x, b, order)
        else:
            got, want = dmlvk.space_to_depth(x, b, order, device=dev), reference.space_to_depth(x, b, order)
        assert np.array_equal(got, want), (d2s, order, dt)
        desc = (dmlvk.DepthToSpace1Desc if d2s else dmlvk.SpaceToDepth1Desc).of(
            TensorDesc(TYPES[np.dtype(dt)], x.shape), b, order == "CRD")
        assert desc.kernel(dev.capabilities).local_size <= most
    x = rng.integers(0, 256, (1, 16, 9, 11), dtype=np.uint8)
    w = rng.integers(-60, 60, (24, 16, 3, 3), dtype=np.int8)
    args = (x, np.float32(0.02), np.uint8(7), w, rng.uniform(0.001, 0.01, 24).astype(np.float32), np.zeros(24, np.int8),
            rng.integers(-2000, 2000, 24).astype(np.int32), np.float32(0.3), np.uint8(100))
    conv = dmlvk.QuantizedLinearConvolutionDesc.of(TensorDesc(U8, x.shape), TensorDesc(DataType.INT8, w.shape),
                                                   start_padding=(1, 1), end_padding=(1, 1))
    assert all(k.local_size <= most for k in conv.plan(dev.capabilities)[0])
    got = dmlvk.quantized_linear_convolution(*args, start_padding=(1, 1), end_padding=(1, 1), output_dtype=np.uint8, device=dev)
    assert np.array_equal(got, reference.quantized_linear_convolution(*args, np.uint8, start_padding=(1, 1), end_padding=(1, 1)))
    _run_new_ops(dev, rng)


def _run_new_ops(dev, rng):
    """The quantized add, JOIN, TILE, LEAKY_RELU on a device, against dmlvk.reference and numpy."""
    a, b = rng.integers(0, 256, (2, 3, 37), dtype=np.uint8)
    op = dev.create_operator(dmlvk.ElementWiseQuantizedLinearAddDesc.of(TensorDesc(U8, (3, 37)), TensorDesc(U8, (3, 37))))
    assert all(k.local_size <= dev.capabilities.max_workgroup_invocations for k in op.kernels)
    out = np.zeros(112, np.uint8)
    op.execute([padded(v) for v in (a, np.float32(0.02), np.uint8(7), b, np.float32(0.03), np.uint8(200),
                                     np.float32(0.05), np.uint8(100))], [out])
    want = reference.quantized_linear_add(a, 0.02, 7, b, 0.03, 200, np.float32(0.05), 100, np.uint8)
    assert np.array_equal(out[:111].reshape(3, 37), want)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    for desc, inputs, want in [
            (dmlvk.JoinDesc.of([TensorDesc(F32, x.shape), TensorDesc(F32, (2, 2, 5, 7))], 1), [x, x[:, :2]],
             np.concatenate([x, x[:, :2]], 1)),
            (dmlvk.TileDesc.of(TensorDesc(F32, x.shape), [1, 2, 1, 3]), [x], np.tile(x, (1, 2, 1, 3))),
            (dmlvk.ActivationLeakyReluDesc.of(TensorDesc(F32, x.shape), 0.1), [x],
             reference.parameterized_relu(x, np.float32(0.1)))]:
        y = np.zeros(desc.output_tensor.total_bytes, np.uint8)
        op = dev.create_operator(desc)
        assert all(k.local_size <= dev.capabilities.max_workgroup_invocations for k in op.kernels), type(desc).__name__
        op.execute([padded(v) for v in inputs], [y])
        assert np.array_equal(y.view(np.float32).reshape(want.shape), want), type(desc).__name__


# ---- shared memory: the formulas against the SPIR-V, the Needs at their byte boundary --------------

WORKGROUP = 4            # SPIR-V's Workgroup storage class


def workgroup_bytes(spirv: bytes) -> int:
    """The bytes of a (specialized) SPIR-V module's Workgroup variables, their types packed tightly
    (scalars by width, vectors by count, arrays by their constant length, structs by member)."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    types, consts, variables, i = {}, {}, [], 5
    while i < len(words):
        count, op = words[i] >> 16, words[i] & 0xFFFF
        w = words[i + 1:i + count]
        if op in (21, 22):                          # OpTypeInt, OpTypeFloat
            types[w[0]] = ("scalar", w[1] // 8)
        elif op == 23:                              # OpTypeVector
            types[w[0]] = ("vector", w[1], w[2])
        elif op == 28:                              # OpTypeArray
            types[w[0]] = ("array", w[1], w[2])
        elif op == 30:                              # OpTypeStruct
            types[w[0]] = ("struct", w[1:])
        elif op == 32:                              # OpTypePointer
            types[w[0]] = ("pointer", w[1], w[2])
        elif op == 43:                              # OpConstant
            consts[w[1]] = w[2]
        elif op == 59 and w[2] == WORKGROUP:        # OpVariable
            variables.append(w[0])
        i += count

    def size(t) -> int:
        kind = types[t]
        if kind[0] == "scalar":
            return kind[1]
        if kind[0] == "vector":
            return size(kind[1]) * kind[2]
        if kind[0] == "array":
            return size(kind[1]) * consts[kind[2]]
        return sum(size(m) for m in kind[1])

    return sum(size(types[p][2]) for p in variables)


def need_bytes(kernel) -> int:
    """The shared memory shared_memory.py's formula gives the kernel."""
    c = quantized_conv.TABLE[kernel.variant].constants(kernel)
    if kernel.shader.startswith("qlinear_conv_coopmat"):
        return shared_memory.coopmat_shared_bytes(c, kernel.defines, halo=kernel.shader == "qlinear_conv_coopmat_halo")
    if kernel.shader == "qlinear_conv_dot":
        return shared_memory.dot_shared_bytes(c)
    return 4 * c["TILE"]


SHARED_VARIANTS = [v.name for v in quantized_conv.TABLE if v.needs and quantized_conv.TABLE.owns(v.name)]
CONV_SHAPES = [((1, 32, 9, 13), (32, 32, 3, 3), 1), ((1, 64, 10, 12), (64, 64, 3, 3), 1), ((1, 1, 12, 16), (64, 1, 5, 5), 1),
               ((1, 16, 8, 12), (16, 1, 3, 3), 16), ((1, 32, 6, 9), (4, 32, 3, 3), 1), ((1, 8, 7, 9), (8, 8, 1, 1), 1),
               ((1, 8, 12, 14), (16, 8, 7, 7), 1), ((1, 4, 10, 10), (32, 4, 2, 6), 1),
               # conv.dot over channels-first input with windows 7 and 8 wide (ceil(KW / 4) words a row)
               ((1, 1, 12, 16), (32, 1, 7, 7), 1), ((1, 3, 10, 12), (16, 3, 5, 8), 1)]


def _shared_kernels(capabilities):
    """(variant, description, kernel) for each variant with a shared-memory Need and each of
    CONV_SHAPES it runs (forced; channels-last inputs for the variants that read them; packed and
    channels-last outputs)."""
    out = []
    for name in SHARED_VARIANTS:
        for x, w, groups in CONV_SHAPES:
            xd = nhwc(*x) if name in quantized_conv.routines.READS_CHANNELS_LAST else TensorDesc(U8, x)
            desc = dmlvk.QuantizedLinearConvolutionDesc.of(xd, TensorDesc(DataType.INT8, w), group_count=groups,
                                                           start_padding=(w[2] // 2, w[3] // 2),
                                                           end_padding=(w[2] // 2, w[3] // 2))
            sizes = desc.output_tensor.sizes
            for d in (desc, dataclasses.replace(desc, output_tensor=nhwc(*sizes))):
                try:
                    kernels = d.plan(capabilities, force=name)[0]
                except ValueError:
                    continue
                out += [(name, d, k) for k in kernels if k.variant == name]
    return out


def coopmat_record(device) -> list:
    """The test device's record with cooperative matrices emulated, and a GPU's with real ones (int8 16 x
    16 x 32 at subgroups of 32, as NVIDIA's): the kernels of both build here."""
    t = CooperativeMatrixType(16, 16, 32, "int8", "int8", "int32", "int32", False, "subgroup")
    gpu = Capabilities(features=frozenset({"cooperativeMatrix", "shaderInt8", SUBGROUP_SHUFFLE, "shaderIntegerDotProduct",
                                           "storageBuffer8BitAccess"}),
                       subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32, cooperative_matrix_types=(t,),
                       device_type="DISCRETE_GPU", max_workgroup_invocations=1024, max_shared_memory=49152)
    return [device.capabilities.with_emulated_cooperative_matrix(), gpu]


@pytest.mark.skipif(not compiler.can_specialize(), reason="spirv-opt absent: the SPIR-V's arrays stay unsized")
def test_shared_memory_formulas_are_the_bytes_the_shaders_declare(device):
    """Each kernel with a shared-memory Need (the cooperative-matrix ones emulated, so that every one
    builds here): its formula's bytes equal the bytes of the Workgroup variables its SPIR-V declares,
    their sizes folded from its specialization constants (nothing removed: a driver may count a
    variable the kernel's constants leave unused)."""
    found = [f for c in coopmat_record(device) for f in _shared_kernels(c)]
    assert {name for name, _, _ in found} == set(SHARED_VARIANTS)
    emulated = {("COOPMAT_EMULATED", 1) in k.defines for _, _, k in found if k.shader.startswith("qlinear_conv_coopmat")}
    assert emulated == {True, False}                                          # real and emulated matrices
    assert any(quantized_conv.TABLE[k.variant].constants(k).get("BLOCKS", 1) > 1 for _, _, k in found)
    for name, desc, k in found:
        spirv = compiler.specialize(compiler.compile_shader(k.shader, k.defines), (k.local_size,) + k.spec,
                                    fold_only=True)
        assert need_bytes(k) == workgroup_bytes(spirv), (name, desc.input_tensor.sizes, desc.filter_tensor.sizes)


def test_shared_memory_needs_hold_at_their_byte_boundary(device):
    """A device with exactly a kernel's shared memory runs it; one with a byte less does not (its Need
    named), forced or chosen."""
    c = device.capabilities.with_emulated_cooperative_matrix()
    found = _shared_kernels(c)
    assert found
    for name, desc, k in found:
        n = need_bytes(k)
        table = quantized_conv.TABLE
        assert table.selection(dataclasses.replace(c, max_shared_memory=n)).unmet(k) is None, name
        short = dataclasses.replace(c, max_shared_memory=n - 1)
        assert "maxComputeSharedMemorySize" in table.selection(short).unmet(k), name
        try:
            kernels = desc.plan(short)[0]
        except ValueError:
            continue                         # no kernel runs it in a byte less: refused, not run outside
        assert all(table.selection(short).unmet(other) is None for other in kernels), name


def test_convolutions_run_exactly_a_byte_below_their_shared_memory(device, rng):
    """On the test device (its CPU-device kernels hidden, so that a kernel with a shared-memory Need is
    chosen, the cooperative matrices emulated) with its shared memory exactly what the chosen kernel
    needs, and a byte below: it runs, then another kernel does; both give dmlvk.reference's bytes."""
    base = device.capabilities.without([CPU_KERNELS]).with_emulated_cooperative_matrix()
    tried = []
    for x_shape, w_shape, groups in CONV_SHAPES:
        x = rng.integers(0, 256, x_shape, dtype=np.uint8)
        w = rng.integers(-60, 60, w_shape, dtype=np.int8)
        m = w_shape[0]
        args = (x, np.float32(0.02), np.uint8(7), w, rng.uniform(0.001, 0.01, m).astype(np.float32),
                np.zeros(m, np.int8), rng.integers(-2000, 2000, m).astype(np.int32), np.float32(0.3), np.uint8(100))
        kw = dict(start_padding=(w_shape[2] // 2, w_shape[3] // 2), end_padding=(w_shape[2] // 2, w_shape[3] // 2),
                  group_count=groups)
        desc = dmlvk.QuantizedLinearConvolutionDesc.of(TensorDesc(U8, x_shape), TensorDesc(DataType.INT8, w_shape), **kw)
        chosen = [k for k in desc.plan(base)[0] if quantized_conv.TABLE[k.variant].needs]
        if not chosen:
            continue                  # a kernel without a shared-memory Need (the depthwise rows kernel)
        tried.append(chosen[0].variant)
        n = need_bytes(chosen[0])
        want = reference.quantized_linear_convolution(*args, np.uint8, **kw)
        for limit in (n, n - 1):
            dev = limited(device, features=base.features, disabled=base.disabled,
                          cooperative_matrix_types=base.cooperative_matrix_types, max_shared_memory=limit)
            kernels = desc.plan(dev.capabilities)[0]
            assert (chosen[0] in kernels) == (limit == n), (x_shape, w_shape, limit)
            got = dmlvk.quantized_linear_convolution(*args, **kw, output_dtype=np.uint8, device=dev)
            assert np.array_equal(got, want), (x_shape, w_shape, limit)
    assert len(set(tried)) >= 2, tried


def test_push_constants_at_their_byte_boundary(device):
    """A kernel's push constants (its block and the dispatcher's two words) within maxPushConstantsSize:
    usable at exactly their bytes, not a word below, the limit named."""
    desc = dmlvk.QuantizedLinearConvolutionDesc.of(TensorDesc(U8, (1, 8, 6, 6)), TensorDesc(DataType.INT8, (8, 8, 3, 3)))
    for k in desc.plan(device.capabilities)[0]:
        n = 4 * (len(k.push) + 2)
        table = quantized_conv.TABLE
        assert table.selection(dataclasses.replace(device.capabilities, max_push_constants=n)).unmet(k) is None
        why = table.selection(dataclasses.replace(device.capabilities, max_push_constants=n - 4)).unmet(k)
        assert why == f"{n} bytes of push constants (the device's maxPushConstantsSize is {n - 4})"


def test_the_cpu_rules_hold_on_cpu_devices_alone():
    """Selection.on_cpu: a CPU device's record (lavapipe, SwiftShader) only; a GPU's, or none, not."""
    for kind, cpu in (("CPU", True), ("DISCRETE_GPU", False), ("INTEGRATED_GPU", False)):
        assert quantized_conv.TABLE.selection(caps(device_type=kind)).on_cpu == cpu
    assert not quantized_conv.TABLE.selection(None).on_cpu
