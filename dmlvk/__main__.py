"""Command line: python -m dmlvk {devices,demo,report,bench}."""
from __future__ import annotations

import argparse
import sys

import numpy as np


def _short(a: np.ndarray, n: int = 8) -> str:
    flat = a.ravel()
    head = ",".join(str(v) for v in flat[:n])
    return f"[{head}{',...' if flat.size > n else ''}]"


def cmd_devices(args) -> int:
    import dmlvk
    infos = dmlvk.devices()
    if not infos:
        print("no Vulkan device found")
        return 1
    for d in infos:
        print(f"{d.index}: {d.name} ({d.device_type})")
        print(f"   driver: {d.driver_name}, {d.driver_info}; Vulkan {d.api_version}")
        print(f"   maxStorageBufferRange {d.max_storage_buffer_range} B, maxPushConstantsSize "
              f"{d.max_push_constants_size} B, shared memory {d.max_compute_shared_memory_size} B, "
              f"subgroup {d.subgroup_size}, maxComputeWorkGroupCount {d.max_compute_work_group_count}")
        print(f"   DirectML feature level: {dmlvk.FeatureLevel.FL_6_4.dml_name} (highest emulated)")
        theirs = "all" if d.typed_uav_load_additional_formats else "all but FLOAT16, UINT16, INT16"
        print(f"   tensor data types: all; DirectML through vkd3d reports {theirs} "
              f"(Device(type_support=\"directml\") follows it)")
        for line in dmlvk.Device(d.index).capabilities.lines():
            print(f"   {line}")
    return 0


def run_depth_space_example(device, ex):
    """Run one documented example through the DirectML-shaped API; returns the output array."""
    import dmlvk
    descs = {"DEPTH_TO_SPACE": dmlvk.DepthToSpaceDesc, "SPACE_TO_DEPTH": dmlvk.SpaceToDepthDesc,
             "DEPTH_TO_SPACE1": dmlvk.DepthToSpace1Desc, "SPACE_TO_DEPTH1": dmlvk.SpaceToDepth1Desc}
    dt = dmlvk.DataType.from_numpy(ex.input.dtype)
    args = [dmlvk.TensorDesc(dt, ex.input.shape), dmlvk.TensorDesc(dt, ex.expected.shape), ex.block_size]
    if ex.operator.endswith("1"):
        args.append(ex.order)
    op = device.create_operator(descs[ex.operator](*args))
    out = np.zeros_like(ex.expected)
    op.execute(inputs=[ex.input], outputs=[out])
    return out


def cmd_demo(args) -> int:
    import dmlvk
    from dmlvk.examples import depth_space_examples, qconv_examples
    device = dmlvk.Device(args.device)
    print(f"device {device.index}: {device.name} ({device.info.driver_info}), {device.feature_level.dml_name}")
    rows, failures = [], 0
    runs = [(ex, lambda ex=ex: run_depth_space_example(device, ex)) for ex in depth_space_examples()]
    runs += [(ex, lambda ex=ex: dmlvk.quantized_linear_convolution(*ex.args, **ex.kwargs, device=device))
             for ex in qconv_examples()]
    for ex, run in runs:
        got = run()
        ok = np.array_equal(got, ex.expected)
        failures += not ok
        rows.append((ex.name, ex.source, _short(ex.expected), _short(got), "yes" if ok else "NO"))
    head = ("example", "source", "expected", "got", "match")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths))
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    print(f"{len(rows) - failures} of {len(rows)} examples match")
    return 1 if failures else 0


# Subcommands with their own argument parsers (python -m dmlvk NAME --help).
_DELEGATED = {"report": ("dmlvk.report", "portability report against DirectML on each Vulkan device"),
              "bench": ("dmlvk.bench", "benchmark the operators against copy bandwidth and peers"),
              "run": ("dmlvk.onnx", "run an ONNX model (QLinearConv, DepthToSpace, SpaceToDepth, Q/DQ) on a device")}


def _prog() -> str:
    """How the user called us: the console script or python -m dmlvk."""
    return "dmlvk" if sys.argv and sys.argv[0].rstrip("/").endswith("dmlvk") and "__main__" not in sys.argv[0] \
        else "python -m dmlvk"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except (ImportError, OSError, ValueError, RuntimeError) as e:
        # no driver, a bad device index or DMLVK_DEVICE, a missing module: one line, status 2
        from .errors import UnsupportedError
        if isinstance(e, RuntimeError) and not isinstance(e, UnsupportedError):
            raise
        if isinstance(e, ModuleNotFoundError) and e.name in ("onnx", "onnxruntime", "matplotlib"):
            e = "this command needs onnx, onnxruntime and matplotlib: pip install onnx onnxruntime matplotlib"
        print(f"{_prog()}: error: {e}", file=sys.stderr)
        return 2


def _main(argv) -> int:
    if argv and argv[0] in _DELEGATED:
        import importlib
        return importlib.import_module(_DELEGATED[argv[0]][0]).main(argv[1:])
    ap = argparse.ArgumentParser(prog=_prog(), description=__doc__)
    from . import __version__
    ap.add_argument("--version", action="version", version=f"dmlvk {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, (_, help_text) in _DELEGATED.items():
        sub.add_parser(name, help=help_text, add_help=False)
    sub.add_parser("devices", help="list Vulkan devices and their limits").set_defaults(fn=cmd_devices)
    p = sub.add_parser("demo", help="run DirectML's documented examples on a device")
    p.add_argument("--device", type=int, default=None, help="device index (default: $DMLVK_DEVICE or 0)")
    p.set_defaults(fn=cmd_demo)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
