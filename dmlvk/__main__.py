"""Command line: dmlvk {devices,run,census,report,bench,demo}. `devices`, `run` and `census` are the library's; report,
bench and demo are the tools of the source tree's dmlvk_lab package (python -m dmlvk_lab)."""
from __future__ import annotations

import argparse
import sys


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
              f"subgroup {d.subgroup_size}, maxComputeWorkGroupCount {d.max_compute_work_group_count}, "
              f"maxComputeWorkGroupInvocations {d.max_compute_work_group_invocations}")
        print(f"   DirectML feature level: {dmlvk.FeatureLevel.FL_6_4.dml_name} (highest emulated)")
        theirs = "all" if d.typed_uav_load_additional_formats else "all but FLOAT16, UINT16, INT16"
        print(f"   tensor data types: all; DirectML through vkd3d reports {theirs} "
              f"(Device(type_support=\"directml\") follows it)")
        for line in dmlvk.Device(d.index).capabilities.lines():
            print(f"   {line}")
    return 0


# Subcommands with their own argument parsers (python -m dmlvk NAME --help).
_DELEGATED = {"run": ("dmlvk.onnx.cli", "run a quantized ONNX model (the ops of docs/onnx-ops.md) on a device"),
              "census": ("dmlvk.onnx.census", "show what each node of an ONNX model becomes and where it runs"),
              "report": ("dmlvk_lab.report", "portability report against DirectML on each Vulkan device"),
              "bench": ("dmlvk_lab.bench", "benchmark the operators against copy bandwidth and peers"),
              "demo": ("dmlvk_lab.demo", "run DirectML's documented examples on a device")}
LAB_MISSING = ("`{cmd}` is one of the tools of dmlvk's source tree (the dmlvk_lab package), which an installed "
               "wheel does not carry: run it from a checkout of dmlvk, as python -m dmlvk_lab {cmd}")


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
        module = _DELEGATED[argv[0]][0]
        try:
            tool = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != "dmlvk_lab":
                raise
            print(f"{_prog()}: error: " + LAB_MISSING.format(cmd=argv[0]), file=sys.stderr)
            return 2
        return tool.main(argv[1:])
    ap = argparse.ArgumentParser(prog=_prog(), description=__doc__)
    from . import __version__
    ap.add_argument("--version", action="version", version=f"dmlvk {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, (_, help_text) in _DELEGATED.items():
        sub.add_parser(name, help=help_text, add_help=False)
    sub.add_parser("devices", help="list Vulkan devices and their limits").set_defaults(fn=cmd_devices)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
